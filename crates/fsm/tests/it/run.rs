//! The runner with `Scripted` models and Rust services: routing, retries, bail-out, omit, roles,
//! sub-FSMs, interrupts, human input, and kill-and-resume from the journal.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use claij_backends::Message;
use claij_fsm::{
    Definition, Error, ExistingJournal, Fsm, Interrupt, Outcome, Runner, Service, ServiceCall,
    Status, service_fn,
};
use claij_interceptors::Config;
use claij_test_support::Scripted;
use serde_json::{Value, json};

/// Long enough that only a hang reaches it: a guard, not a speed claim.
const HANG: Duration = Duration::from_secs(60);

fn object(required: &[&str]) -> Value {
    let properties: serde_json::Map<String, Value> = required
        .iter()
        .map(|k| ((*k).to_owned(), json!({"type": "string"})))
        .collect();
    json!({"type": "object", "properties": properties, "required": required})
}

/// start -> draft (llm) -> review (llm) -> end, review may send back to draft; draft may bail out.
fn review_fsm() -> Fsm {
    let definition: Definition = serde_json::from_value(json!({
        "id": "writing",
        "prompts": ["You write and review short texts."],
        "states": [
            {"id": "draft", "action": "llm"},
            {"id": "review", "action": "llm"},
            {"id": "end", "action": "end"}
        ],
        "transitions": [
            {"id": ["start", "draft"], "schema": object(&["topic"])},
            {"id": ["draft", "review"], "schema": object(&["text"]), "description": "a draft to review"},
            {"id": ["draft", "end"], "schema": {"type": "object", "properties": {"error": {"type": "string"}, "bail_out": {"type": "boolean"}}, "required": ["error", "bail_out"]}, "description": "give up"},
            {"id": ["review", "draft"], "schema": object(&["feedback"]), "description": "ask for changes"},
            {"id": ["review", "end"], "schema": object(&["verdict"]), "description": "accept"}
        ]
    }))
    .unwrap();
    Fsm::new(definition).unwrap()
}

fn runner(fsm: Fsm, replies: &[&str]) -> (Runner, Scripted) {
    let backend = Scripted::replies(replies.iter().map(|s| (*s).to_owned()));
    let mut config = Config::new("scripted");
    config.max_retries = 1;
    let runner = Runner::new(fsm).with_llm(Arc::new(backend.clone()), config);
    (runner, backend)
}

fn block<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

fn path(run: &claij_fsm::Run) -> Vec<String> {
    run.trail
        .entries
        .iter()
        .map(|e| format!("{}->{}", e.from, e.to))
        .collect()
}

#[test]
fn happy_path_through_three_states() {
    let (runner, backend) = runner(
        review_fsm(),
        &[
            r#"{"id": ["draft", "review"], "text": "Rust is fast."}"#,
            r#"{"id": ["review", "end"], "verdict": "good"}"#,
        ],
    );
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let runner =
        runner.with_observer(move |e| log.lock().unwrap().push(format!("{}->{}", e.from, e.to)));
    let mut run = runner.start(json!({"topic": "Rust"})).unwrap();
    let outcome = block(runner.run(&mut run, &Interrupt::new(), None)).unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        path(&run),
        "the observer saw every transition as it happened"
    );
    assert_eq!(
        outcome,
        Outcome::Finished {
            state: "end".into(),
            event: json!({"id": ["review", "end"], "verdict": "good"})
        }
    );
    assert_eq!(path(&run), ["start->draft", "draft->review", "review->end"]);
    assert_eq!(run.status, Status::Finished);
    assert_eq!(
        run.trail.entries[0].event,
        json!({"id": ["start", "draft"], "topic": "Rust"}),
        "the id was filled in"
    );
    assert_eq!(run.trail.attempts(), 2);
    // The review model saw the draft as its own earlier turn? No: the draft came from another llm
    // state, so it is the assistant's; the start input is the user's.
    let requests = backend.requests();
    let second = &requests[1];
    assert_eq!(second.messages.len(), 2, "{:?}", second.messages);
    assert_eq!(
        second.messages[0],
        Message::user(r#"{"id":["start","draft"],"topic":"Rust"}"#)
    );
    assert!(
        second
            .system
            .as_deref()
            .unwrap()
            .contains("You are in state `review`.")
    );
}

#[test]
fn an_invalid_transition_id_is_retried_then_accepted() {
    let (runner, backend) = runner(
        review_fsm(),
        &[
            r#"{"id": ["draft", "publish"], "text": "x"}"#,
            r#"{"id": ["draft", "review"], "text": "x"}"#,
            r#"{"id": ["review", "end"], "verdict": "ok"}"#,
        ],
    );
    let mut run = runner.start(json!({"topic": "t"})).unwrap();
    block(runner.run(&mut run, &Interrupt::new(), None)).unwrap();
    let drafted = &run.trail.entries[1];
    assert_eq!(drafted.attempts.len(), 2);
    // Two model calls (one a state), the draft's valid on its second attempt, the review's on its
    // first.
    let trail = &run.trail;
    assert_eq!(
        (trail.calls(), trail.attempts(), trail.first_try()),
        (2, 3, 1)
    );
    let violation = &drafted.attempts[0].violations[0];
    assert!(violation.message.contains("draft"), "{violation:?}");
    let retry = &backend.requests()[1];
    let text = &retry.messages.last().unwrap().content;
    assert!(
        text.contains("publish"),
        "the retry prompt names the bad id: {text}"
    );
}

#[test]
fn exhausted_retries_take_the_bail_out_transition() {
    let (runner, _) = runner(review_fsm(), &["not json", "still not json"]);
    let mut run = runner.start(json!({"topic": "t"})).unwrap();
    let outcome = block(runner.run(&mut run, &Interrupt::new(), None)).unwrap();
    let Outcome::Finished { state, event } = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(state, "end");
    assert_eq!(event["bail_out"], json!(true));
    assert!(
        event["error"].as_str().unwrap().contains("2 attempts")
            || !event["error"].as_str().unwrap().is_empty()
    );
    assert_eq!(
        run.trail.last().unwrap().attempts.len(),
        2,
        "the failed attempts are kept"
    );
}

#[test]
fn a_backend_failure_bails_out_with_every_cause_said_once() {
    let backend = Scripted::new([Err(claij_backends::Error::other(
        "scripted",
        "connection reset",
    ))]);
    let runner = Runner::new(review_fsm()).with_llm(Arc::new(backend), Config::new("scripted"));
    let mut run = runner.start(json!({"topic": "t"})).unwrap();
    let outcome = block(runner.run(&mut run, &Interrupt::new(), None)).unwrap();
    let Outcome::Finished { event, .. } = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(event["bail_out"], json!(true));
    assert_eq!(event["error"], "attempt 1: scripted: connection reset");
}

#[test]
fn without_a_bail_out_exhausted_retries_are_a_typed_error() {
    let (runner, _) = runner(
        review_fsm(),
        &[
            r#"{"id": ["draft", "review"], "text": "x"}"#,
            "nope",
            "nope",
        ],
    );
    let mut run = runner.start(json!({"topic": "t"})).unwrap();
    let err = block(runner.run(&mut run, &Interrupt::new(), None)).unwrap_err();
    let Error::Llm { state, source } = &err else {
        panic!("{err}")
    };
    assert_eq!(state, "review");
    assert!(matches!(
        **source,
        claij_interceptors::Error::RetriesExhausted(_)
    ));
    assert_eq!(run.state, "review", "the run stays where it failed");
}

#[test]
fn the_input_is_validated_against_the_start_transitions() {
    let (runner, _) = runner(review_fsm(), &[]);
    let err = runner.start(json!({"subject": "t"})).unwrap_err();
    assert!(
        matches!(err, Error::InvalidEvent { ref state, .. } if state == "start"),
        "{err}"
    );
    assert!(err.to_string().contains("topic"), "{err}");
}

fn pipeline_fsm(omit_middle: bool) -> Fsm {
    Fsm::new(
        serde_json::from_value(json!({
            "id": "pipeline",
            "states": [
                {"id": "fetch", "action": "service"},
                {"id": "summarise", "action": "llm"},
                {"id": "end", "action": "end"}
            ],
            "transitions": [
                {"id": ["start", "fetch"], "schema": object(&["url"])},
                {"id": ["fetch", "summarise"], "schema": object(&["body"]), "omit": omit_middle},
                {"id": ["summarise", "end"], "schema": object(&["summary"])}
            ]
        }))
        .unwrap(),
    )
    .unwrap()
}

#[test]
fn omitted_transitions_are_not_recorded() {
    let (runner, _) = runner(pipeline_fsm(true), &[r#"{"summary": "short"}"#]);
    let runner = runner.with_service("fetch", service_fn(|_| Ok(json!({"body": "a long page"}))));
    let mut run = runner.start(json!({"url": "u"})).unwrap();
    block(runner.run(&mut run, &Interrupt::new(), None)).unwrap();
    assert_eq!(path(&run), ["start->fetch", "summarise->end"]);
}

#[test]
fn roles_come_from_what_produced_each_event() {
    let (runner, _) = runner(pipeline_fsm(false), &[r#"{"summary": "short"}"#]);
    let runner = runner.with_service("fetch", service_fn(|_| Ok(json!({"body": "a long page"}))));
    let mut run = runner.start(json!({"url": "u"})).unwrap();
    block(runner.run(&mut run, &Interrupt::new(), None)).unwrap();
    let messages = run.trail.to_messages(runner.fsm().definition());
    insta::assert_json_snapshot!("roles", messages);
}

#[test]
fn a_service_event_that_fits_no_transition_is_an_error() {
    let (runner, _) = runner(pipeline_fsm(false), &[]);
    let runner = runner.with_service("fetch", service_fn(|_| Ok(json!({"page": 1}))));
    let mut run = runner.start(json!({"url": "u"})).unwrap();
    let err = block(runner.run(&mut run, &Interrupt::new(), None)).unwrap_err();
    assert!(
        matches!(err, Error::InvalidEvent { ref state, .. } if state == "fetch"),
        "{err}"
    );
}

fn parent_fsm(mode: &str) -> Fsm {
    Fsm::new(
        serde_json::from_value(json!({
            "id": "parent",
            "states": [
                {"id": "delegate", "action": "fsm", "config": {"fsm": "pipeline", "trail": mode}},
                {"id": "end", "action": "end"}
            ],
            "transitions": [
                {"id": ["start", "delegate"], "schema": object(&["url"])},
                {"id": ["delegate", "end"], "schema": object(&["summary"])}
            ]
        }))
        .unwrap(),
    )
    .unwrap()
}

#[test]
fn sub_fsm_trail_modes() {
    for (mode, expected, attempts) in [
        ("omit", vec!["start->delegate", "delegate->end"], 0),
        ("summary", vec!["start->delegate", "delegate->end"], 1),
        (
            "full",
            vec![
                "start->delegate",
                "delegate/start->delegate/fetch",
                "delegate/fetch->delegate/summarise",
                "delegate/summarise->delegate/end",
                "delegate->end",
            ],
            1,
        ),
    ] {
        let (child, _) = runner(pipeline_fsm(false), &[r#"{"summary": "short"}"#]);
        let child = child.with_service("fetch", service_fn(|_| Ok(json!({"body": "page"}))));
        let parent = Runner::new(parent_fsm(mode)).with_sub_fsm(child);
        let mut run = parent.start(json!({"url": "u"})).unwrap();
        let outcome = block(parent.run(&mut run, &Interrupt::new(), None)).unwrap();
        assert_eq!(
            outcome,
            Outcome::Finished {
                state: "end".into(),
                event: json!({"id": ["delegate", "end"], "summary": "short"})
            },
            "{mode}"
        );
        assert_eq!(path(&run), expected, "{mode}");
        assert_eq!(run.trail.attempts(), attempts, "{mode}");
    }
}

/// What an observer saw, as `from->to`.
type Seen = Arc<std::sync::Mutex<Vec<String>>>;

fn observing(runner: Runner, seen: &Seen) -> Runner {
    let seen = Arc::clone(seen);
    runner.with_observer(move |e| seen.lock().unwrap().push(format!("{}->{}", e.from, e.to)))
}

/// A sub-FSM's transitions reach its observer with its states prefixed by the `fsm` state it runs
/// in, whatever the parent's trail keeps of them; also when a resumed run gives a suspended sub-FSM
/// its input.
#[test]
fn a_sub_fsm_s_transitions_reach_the_observer_prefixed() {
    let seen = Seen::default();
    let (child, _) = runner(pipeline_fsm(false), &[r#"{"summary": "short"}"#]);
    let child = child.with_service("fetch", service_fn(|_| Ok(json!({"body": "page"}))));
    let parent =
        observing(Runner::new(parent_fsm("omit")), &seen).with_sub_fsm(observing(child, &seen));
    let mut run = parent.start(json!({"url": "u"})).unwrap();
    block(parent.run(&mut run, &Interrupt::new(), None)).unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "start->delegate",
            "delegate/start->delegate/fetch",
            "delegate/fetch->delegate/summarise",
            "delegate/summarise->delegate/end",
            "delegate->end",
        ]
    );

    let seen = Seen::default();
    let parent = || {
        let definition: Definition = serde_json::from_value(json!({
            "id": "shipping",
            "states": [
                {"id": "review", "action": "fsm", "config": {"fsm": "approval", "trail": "omit"}},
                {"id": "end", "action": "end"}
            ],
            "transitions": [
                {"id": ["start", "review"], "schema": object(&["plan"])},
                {"id": ["review", "end"], "schema": object(&["decision"])}
            ]
        }))
        .unwrap();
        observing(Runner::new(Fsm::new(definition).unwrap()), &seen)
            .with_sub_fsm(observing(Runner::new(approval_fsm()), &seen))
    };
    let dir = tempfile::tempdir().unwrap();
    let journal_path = dir.path().join("run.jsonl");
    let runner = parent();
    let (mut run, mut journal) = runner
        .start_journaled(json!({"plan": "p"}), &journal_path, ExistingJournal::Refuse)
        .unwrap();
    block(runner.run(&mut run, &Interrupt::new(), Some(&mut journal))).unwrap();
    drop(journal);
    let runner = parent();
    let (mut run, mut journal) = runner.resume(&journal_path).unwrap();
    runner
        .provide(&mut run, json!({"decision": "yes"}), Some(&mut journal))
        .unwrap();
    block(runner.run(&mut run, &Interrupt::new(), Some(&mut journal))).unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "start->review",
            "review/start->review/approve",
            "review/approve->review/end",
            "review->end",
        ]
    );
}

/// start -> approve (human) -> end: a sub-FSM that needs a person.
fn approval_fsm() -> Fsm {
    Fsm::new(
        serde_json::from_value(json!({
            "id": "approval",
            "states": [{"id": "approve", "action": "human"}, {"id": "end", "action": "end"}],
            "transitions": [
                {"id": ["start", "approve"], "schema": object(&["plan"])},
                {"id": ["approve", "end"], "schema": object(&["decision"])}
            ]
        }))
        .unwrap(),
    )
    .unwrap()
}

/// A sub-FSM's `human` state suspends the parent; the journal keeps the sub-FSM's run, so the
/// parent resumed from it gives the sub-FSM its input and finishes.
#[test]
fn a_sub_fsm_waiting_for_a_person_suspends_the_parent_until_resumed() {
    let parent = || {
        let definition: Definition = serde_json::from_value(json!({
            "id": "shipping",
            "states": [
                {"id": "review", "action": "fsm", "config": {"fsm": "approval.json", "trail": "full"}},
                {"id": "end", "action": "end"}
            ],
            "transitions": [
                {"id": ["start", "review"], "schema": object(&["plan"])},
                {"id": ["review", "end"], "schema": object(&["decision"])}
            ]
        }))
        .unwrap();
        Runner::new(Fsm::new(definition).unwrap())
            .with_sub_fsm_named("approval.json", Runner::new(approval_fsm()))
    };
    let dir = tempfile::tempdir().unwrap();
    let journal_path = dir.path().join("run.jsonl");
    let runner = parent();
    let (mut run, mut journal) = runner
        .start_journaled(
            json!({"plan": "ship it"}),
            &journal_path,
            ExistingJournal::Refuse,
        )
        .unwrap();
    let outcome = block(runner.run(&mut run, &Interrupt::new(), Some(&mut journal))).unwrap();
    assert_eq!(
        outcome,
        Outcome::Waiting {
            state: "review/approve".into()
        }
    );
    assert_eq!(run.status, Status::Waiting);
    drop(journal);

    let (header, _) = claij_fsm::journal::read(&journal_path).unwrap();
    let subs: Vec<&str> = header.sub_fsms.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(subs, ["approval.json"]);

    // A new process: the runner rebuilt, the run read back from the journal.
    let runner = parent();
    let (mut run, mut journal) = runner.resume(&journal_path).unwrap();
    assert_eq!(run.status, Status::Waiting);
    assert_eq!(run.waiting_in(), "review/approve");
    let refused = runner.provide(&mut run, json!({"verdict": "yes"}), Some(&mut journal));
    assert!(
        matches!(refused, Err(Error::InvalidEvent { ref state, .. }) if state == "approve"),
        "{refused:?}"
    );
    runner
        .provide(&mut run, json!({"decision": "yes"}), Some(&mut journal))
        .unwrap();
    // Killed between the input and the sub-FSM's next step: the journal has the input.
    drop(journal);
    let runner = parent();
    let (mut run, mut journal) = runner.resume(&journal_path).unwrap();
    assert_eq!(run.status, Status::Running);
    assert_eq!(run.suspended().map(|s| s.state.as_str()), Some("end"));
    let outcome = block(runner.run(&mut run, &Interrupt::new(), Some(&mut journal))).unwrap();
    assert_eq!(
        outcome,
        Outcome::Finished {
            state: "end".into(),
            event: json!({"id": ["review", "end"], "decision": "yes"})
        }
    );
    assert_eq!(
        path(&run),
        [
            "start->review",
            "review/start->review/approve",
            "review/approve->review/end",
            "review->end"
        ]
    );
    drop(journal);
    // The journal holds the same run: resuming once more finds it finished.
    let (run, _journal) = parent().resume(&journal_path).unwrap();
    assert_eq!(run.status, Status::Finished);
    assert!(run.suspended().is_none());
}

/// A service that never finishes on its own: it says when it has started and records whether its
/// cleanup ran.
struct Endless {
    cleaned: Arc<AtomicUsize>,
    started: Arc<tokio::sync::Notify>,
}

impl Service for Endless {
    fn call<'a>(
        &'a self,
        call: ServiceCall<'a>,
    ) -> claij_backends::BoxFuture<'a, Result<Value, claij_interceptors::BoxError>> {
        let cleaned = Arc::clone(&self.cleaned);
        call.interrupt.on_interrupt(move || {
            cleaned.fetch_add(1, Ordering::SeqCst);
        });
        let started = Arc::clone(&self.started);
        Box::pin(async move {
            started.notify_one();
            std::future::pending::<()>().await;
            Ok(json!({"body": "never"}))
        })
    }
}

/// The interrupt comes once the action is running; the action never ends by itself, so the run
/// returns only because the interrupt stopped it (the timeout only turns a hang into a failure).
#[test]
fn an_interrupt_stops_a_running_action() {
    let cleaned = Arc::new(AtomicUsize::new(0));
    let started = Arc::new(tokio::sync::Notify::new());
    let (runner, _) = runner(pipeline_fsm(false), &[]);
    let runner = runner.with_service(
        "fetch",
        Endless {
            cleaned: Arc::clone(&cleaned),
            started: Arc::clone(&started),
        },
    );
    let mut run = runner.start(json!({"url": "u"})).unwrap();
    let interrupt = Interrupt::new();
    let outcome = block(async {
        let stopper = interrupt.clone();
        let stop = async move {
            started.notified().await;
            stopper.interrupt();
        };
        let both = async { tokio::join!(runner.run(&mut run, &interrupt, None), stop).0 };
        tokio::time::timeout(HANG, both).await
    });
    let outcome = outcome.expect("the interrupted run never returned");
    assert_eq!(
        outcome.unwrap(),
        Outcome::Interrupted {
            from: "fetch".into()
        }
    );
    assert_eq!(
        cleaned.load(Ordering::SeqCst),
        1,
        "the action's cleanup ran once"
    );
    assert_eq!(path(&run), ["start->fetch", "fetch->interrupted"]);
    assert_eq!(run.status, Status::Interrupted);
}

#[test]
fn a_human_state_waits_for_input() {
    let fsm = Fsm::new(
        serde_json::from_value(json!({
            "id": "approval",
            "states": [
                {"id": "propose", "action": "llm"},
                {"id": "approve", "action": "human"},
                {"id": "end", "action": "end"}
            ],
            "transitions": [
                {"id": ["start", "propose"], "schema": object(&["task"])},
                {"id": ["propose", "approve"], "schema": object(&["plan"])},
                {"id": ["approve", "end"], "schema": object(&["decision"])}
            ]
        }))
        .unwrap(),
    )
    .unwrap();
    let (runner, _) = runner(fsm, &[r#"{"plan": "do it"}"#]);
    let mut run = runner.start(json!({"task": "t"})).unwrap();
    let outcome = block(runner.run(&mut run, &Interrupt::new(), None)).unwrap();
    assert_eq!(
        outcome,
        Outcome::Waiting {
            state: "approve".into()
        }
    );
    assert_eq!(run.status, Status::Waiting);
    let bad = runner
        .provide(&mut run, json!({"nod": true}), None)
        .unwrap_err();
    assert!(matches!(bad, Error::InvalidEvent { .. }), "{bad}");
    runner
        .provide(&mut run, json!({"decision": "yes"}), None)
        .unwrap();
    let outcome = block(runner.run(&mut run, &Interrupt::new(), None)).unwrap();
    assert!(matches!(outcome, Outcome::Finished { .. }));
    assert_eq!(
        path(&run),
        ["start->propose", "propose->approve", "approve->end"]
    );
}

/// Three services in a row, each appending its name to a side-effect file.
fn chain_fsm() -> Fsm {
    Fsm::new(
        serde_json::from_value(json!({
            "id": "chain",
            "states": [
                {"id": "a", "action": "service", "config": {"service": "step"}},
                {"id": "b", "action": "service", "config": {"service": "step"}},
                {"id": "c", "action": "service", "config": {"service": "step"}},
                {"id": "end", "action": "end"}
            ],
            "transitions": [
                {"id": ["start", "a"], "schema": object(&["n"])},
                {"id": ["a", "b"], "schema": object(&["n"])},
                {"id": ["b", "c"], "schema": object(&["n"])},
                {"id": ["c", "end"], "schema": object(&["n"])}
            ]
        }))
        .unwrap(),
    )
    .unwrap()
}

/// Each action appends its state to `effects`; with `die_in`, the process aborts on entering that
/// state's action, after the transitions before it were journaled (a kill -9, as far as the journal
/// can tell).
fn step_service(effects: std::path::PathBuf, die_in: Option<String>) -> impl Service {
    service_fn(move |call| {
        if die_in.as_deref() == Some(call.state.id.as_str()) {
            std::process::abort();
        }
        use std::io::Write as _;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&effects)?;
        writeln!(file, "{}", call.state.id)?;
        file.sync_all()?;
        Ok(json!({"n": call.state.id.clone()}))
    })
}

/// Run as a child process by `kill_and_resume`: runs `chain` with a journal and dies in state `c`.
#[test]
fn kill_child() {
    let (Ok(journal), Ok(effects)) = (
        std::env::var("CLAIJ_FSM_KILL_JOURNAL"),
        std::env::var("CLAIJ_FSM_KILL_EFFECTS"),
    ) else {
        return; // only meaningful as kill_and_resume's child
    };
    let runner = Runner::new(chain_fsm())
        .with_service("step", step_service(effects.into(), Some("c".into())));
    let (mut run, mut journal) = runner
        .start_journaled(
            json!({"n": "0"}),
            std::path::Path::new(&journal),
            ExistingJournal::Refuse,
        )
        .unwrap();
    let _ = block(runner.run(&mut run, &Interrupt::new(), Some(&mut journal)));
    unreachable!("the child aborts in state c");
}

#[test]
fn kill_and_resume_runs_no_action_twice() {
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("run.jsonl");
    let effects = dir.path().join("effects.txt");
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "run::kill_child",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("CLAIJ_FSM_KILL_JOURNAL", &journal)
        .env("CLAIJ_FSM_KILL_EFFECTS", &effects)
        .stderr(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(!status.success(), "the child was killed");
    assert_eq!(
        std::fs::read_to_string(&effects).unwrap(),
        "a\nb\n",
        "a and b ran before the kill"
    );

    let runner = Runner::new(chain_fsm()).with_service("step", step_service(effects.clone(), None));
    let (mut run, mut journal) = runner.resume(&journal).unwrap();
    assert_eq!(
        run.state, "c",
        "resumed where the last recorded transition led"
    );
    let outcome = block(runner.run(&mut run, &Interrupt::new(), Some(&mut journal))).unwrap();
    assert!(matches!(outcome, Outcome::Finished { .. }));
    assert_eq!(
        std::fs::read_to_string(&effects).unwrap(),
        "a\nb\nc\n",
        "each action exactly once"
    );
    let (header, entries) = claij_fsm::journal::read(journal.path()).unwrap();
    assert_eq!(
        header.definition.as_ref().map(|d| d.id.as_str()),
        Some("chain"),
        "the journal carries the machine, so it alone resumes the run"
    );
    let steps: Vec<String> = entries
        .iter()
        .map(|e| format!("{}->{}", e.from, e.to))
        .collect();
    assert_eq!(steps, ["start->a", "a->b", "b->c", "c->end"]);
    // A finished run resumes as finished and does nothing (once the first handle lets go of it).
    let path = journal.path().to_owned();
    drop(journal);
    let (mut again, mut journal) = runner.resume(&path).unwrap();
    assert_eq!(again.status, Status::Finished);
    block(runner.run(&mut again, &Interrupt::new(), Some(&mut journal))).unwrap();
    assert_eq!(std::fs::read_to_string(&effects).unwrap(), "a\nb\nc\n");
}

#[test]
fn a_looping_machine_stops_at_the_transition_limit() {
    let fsm = Fsm::new(
        serde_json::from_value(json!({
            "id": "ping-pong",
            "states": [
                {"id": "ping", "action": "service", "config": {"service": "bounce"}},
                {"id": "pong", "action": "service", "config": {"service": "bounce"}},
                {"id": "end", "action": "end"}
            ],
            "transitions": [
                {"id": ["start", "ping"], "schema": object(&[])},
                {"id": ["ping", "pong"], "schema": object(&[])},
                {"id": ["pong", "ping"], "schema": object(&[])},
                {"id": ["pong", "end"], "schema": object(&["done"])}
            ]
        }))
        .unwrap(),
    )
    .unwrap();
    // The services answer alike each time, which the loop check would stop first: off here.
    let runner = Runner::new(fsm)
        .with_max_transitions(5)
        .with_max_repeated_calls(usize::MAX)
        .with_service(
            "bounce",
            service_fn(|call| {
                let next = if call.state.id == "ping" {
                    "pong"
                } else {
                    "ping"
                };
                Ok(json!({"id": [call.state.id.clone(), next]}))
            }),
        );
    let mut run = runner.start(json!({})).unwrap();
    let err = block(runner.run(&mut run, &Interrupt::new(), None)).unwrap_err();
    assert!(
        matches!(
            err,
            Error::TooManyTransitions {
                limit: 5,
                recorded: 6,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        run.trail.entries.len(),
        6,
        "the start transition and five more"
    );
    // The counts agree with the trail and name the limit.
    assert_eq!(
        err.to_string(),
        "stopped in state `pong` after 5 transitions of this call without reaching an end \
         (the limit max_transitions; the trail holds 6)"
    );
    assert_eq!(err.limit(), Some("max_transitions"));
    // The run can go on with another call (and stops again).
    let again = block(runner.run(&mut run, &Interrupt::new(), None)).unwrap_err();
    assert!(matches!(
        again,
        Error::TooManyTransitions { recorded: 11, .. }
    ));
    assert_eq!(run.trail.entries.len(), 11);

    // Singular where singular.
    let runner = runner.with_max_transitions(1);
    let mut run = runner.start(json!({})).unwrap();
    let one = block(runner.run(&mut run, &Interrupt::new(), None)).unwrap_err();
    assert_eq!(
        one.to_string(),
        "stopped in state `pong` after 1 transition of this call without reaching an end \
         (the limit max_transitions; the trail holds 2)"
    );
}

/// Two services that answer each other alike forever: the loop check stops them at the second
/// repeat, long before the transition limit.
#[test]
fn services_that_answer_each_other_alike_are_a_loop() {
    let fsm = Fsm::new(
        serde_json::from_value(json!({
            "id": "ping-pong",
            "states": [
                {"id": "ping", "action": "service", "config": {"service": "bounce"}},
                {"id": "pong", "action": "service", "config": {"service": "bounce"}},
                {"id": "end", "action": "end"}
            ],
            "transitions": [
                {"id": ["start", "ping"], "schema": object(&[])},
                {"id": ["ping", "pong"], "schema": object(&[])},
                {"id": ["pong", "ping"], "schema": object(&[])},
                {"id": ["pong", "end"], "schema": object(&["done"])}
            ]
        }))
        .unwrap(),
    )
    .unwrap();
    let runner = Runner::new(fsm).with_service(
        "bounce",
        service_fn(|call| {
            let next = if call.state.id == "ping" {
                "pong"
            } else {
                "ping"
            };
            Ok(json!({"id": [call.state.id.clone(), next]}))
        }),
    );
    let mut run = runner.start(json!({})).unwrap();
    let err = block(runner.run(&mut run, &Interrupt::new(), None)).unwrap_err();
    assert!(
        matches!(err, Error::RepeatedCall { ref state, repeats: 2, limit: 1, .. } if state == "ping"),
        "{err}"
    );
    assert_eq!(run.trail.entries.len(), 6, "{:?}", run.trail);
}

fn example(name: &str) -> Fsm {
    let path = format!(
        "{}/../../examples/fsm/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    Fsm::from_json(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn the_code_review_example_runs() {
    let (runner, _) = runner(
        example("code-review"),
        &[
            r#"{"id": ["chairman", "correctness-reviewer"], "focus": "the arithmetic"}"#,
            r#"{"id": ["correctness-reviewer", "chairman"], "comments": [{"where": "add", "severity": "blocker", "comment": "subtracts"}], "summary": "wrong operator", "approve": false}"#,
            r#"{"id": ["chairman", "design-reviewer"], "focus": "naming"}"#,
            r#"{"id": ["design-reviewer", "chairman"], "comments": [], "summary": "fine", "approve": true}"#,
            r#"{"id": ["chairman", "end"], "decision": "request-changes", "summary": "fix the operator", "required_changes": ["use +"]}"#,
        ],
    );
    let mut run = runner
        .start(json!({"code": "fn add(a: i32, b: i32) -> i32 { a - b }"}))
        .unwrap();
    let outcome = block(runner.run(&mut run, &Interrupt::new(), None)).unwrap();
    let Outcome::Finished { event, .. } = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(event["decision"], "request-changes");
    assert_eq!(run.trail.entries.len(), 6);
}

#[test]
fn the_tool_loop_example_runs() {
    let (runner, backend) = runner(
        example("tool-loop"),
        &[
            r#"{"id": ["llm", "servicing"], "message": {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "hostname", "arguments": {}}}}"#,
            r#"{"id": ["llm", "end"], "result": {"content": [{"type": "text", "text": "the host is box-7"}], "isError": false}}"#,
        ],
    );
    // A stand-in for the MCP service: answers the JSON-RPC call.
    let runner = runner.with_service(
        "mcp",
        service_fn(|call| {
            let id = call.event["message"]["id"].clone();
            Ok(json!({"message": {"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "box-7"}]}}}))
        }),
    );
    let mut run = runner
        .start(json!({"request": "What is the hostname?"}))
        .unwrap();
    let outcome = block(runner.run(&mut run, &Interrupt::new(), None)).unwrap();
    assert!(matches!(outcome, Outcome::Finished { .. }), "{outcome:?}");
    assert_eq!(
        path(&run),
        ["start->llm", "llm->servicing", "servicing->llm", "llm->end"]
    );
    // The second model call saw the tool's answer as the user's turn.
    let second = &backend.requests()[1];
    assert!(second.messages.last().unwrap().content.contains("box-7"));
}

#[test]
fn a_journaled_start_into_a_human_state_is_waiting() {
    let fsm = Fsm::new(
        serde_json::from_value(json!({
            "id": "ask-first",
            "states": [{"id": "approve", "action": "human"}, {"id": "end", "action": "end"}],
            "transitions": [
                {"id": ["start", "approve"], "schema": object(&["plan"])},
                {"id": ["approve", "end"], "schema": object(&["decision"])}
            ]
        }))
        .unwrap(),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (run, _journal) = Runner::new(fsm)
        .start_journaled(
            json!({"plan": "p"}),
            &dir.path().join("run.jsonl"),
            ExistingJournal::Refuse,
        )
        .unwrap();
    assert_eq!(run.status, Status::Waiting);
}
