//! Runs on a real Restate server: a run ends with the trail the embedded runner gives (sub-FSMs as
//! child workflows too), a start is idempotent by run id, a worker killed with SIGKILL mid-run is
//! replaced without a model call answered twice, a person's turn waits across a worker restart,
//! an interrupt ends a waiting run, two workers share 200 runs.

use std::path::{Path, PathBuf};
use std::time::Duration;

use claij_fsm::journal::SubDefinition;
use claij_fsm::{Definition, Interrupt, Status, Trail};
use claij_restate::{Client, Ended, Error, Followed, Limits, Machine, RunRequest, Started};
use serde_json::{Value, json};

use crate::support::{RestateServer, Worker};
use crate::worker::{Counting, command, count, object, runner};

/// How long a client follows a run: long enough that only a hang reaches it on a loaded machine (a
/// guard, not a speed claim), the limit's error naming `run_timeout`.
const HANG: Duration = Duration::from_secs(600);

/// A directory for a worker's count files, removed when dropped.
pub(crate) struct Counts(PathBuf);

impl Counts {
    pub(crate) fn new() -> Counts {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "claij-restate-it-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Counts(dir)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Counts {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A worker process counting into `counts`, registered with `server`.
fn worker(server: &RestateServer, counts: &Counts, hold: Option<usize>) -> Worker {
    let dir = counts.path().to_owned();
    let worker = Worker::spawn(move |port| command(port, &dir, hold));
    server.register(&worker.uri());
    worker
}

pub(crate) fn client(server: &RestateServer) -> Client {
    Client::new(&server.ingress_url()).unwrap().with_limits(
        Limits::default()
            .with_run_timeout(HANG)
            .with_poll_interval(Duration::from_millis(50)),
    )
}

fn block<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

fn definition(value: Value) -> Definition {
    serde_json::from_value(value).unwrap()
}

/// start -> a -> b -> c -> end, each an `llm` state with one exit.
pub(crate) fn chain() -> Definition {
    definition(json!({
        "id": "chain",
        "states": [
            {"id": "a", "action": "llm"}, {"id": "b", "action": "llm"},
            {"id": "c", "action": "llm"}, {"id": "end", "action": "end"}
        ],
        "transitions": [
            {"id": ["start", "a"], "schema": object(&["topic"])},
            {"id": ["a", "b"], "schema": object(&["text"])},
            {"id": ["b", "c"], "schema": object(&["text"])},
            {"id": ["c", "end"], "schema": object(&["text"])}
        ]
    }))
}

/// start -> a (llm) -> approve (human) -> end.
fn approval() -> Definition {
    definition(json!({
        "id": "approval",
        "states": [
            {"id": "a", "action": "llm"}, {"id": "approve", "action": "human"},
            {"id": "end", "action": "end"}
        ],
        "transitions": [
            {"id": ["start", "a"], "schema": object(&["topic"])},
            {"id": ["a", "approve"], "schema": object(&["text"])},
            {"id": ["approve", "end"], "schema": object(&["decision"])}
        ]
    }))
}

/// start -> x -> end: the sub-FSM of [`parent`].
fn inner() -> Definition {
    definition(json!({
        "id": "inner",
        "states": [{"id": "x", "action": "llm"}, {"id": "end", "action": "end"}],
        "transitions": [
            {"id": ["start", "x"], "schema": object(&["text"])},
            {"id": ["x", "end"], "schema": object(&["text"])}
        ]
    }))
}

/// start -> first (llm) -> delegate (a sub-FSM, trail `full`) -> end.
fn parent() -> Machine {
    let definition = definition(json!({
        "id": "parent",
        "states": [
            {"id": "first", "action": "llm"},
            {"id": "delegate", "action": "fsm", "config": {"fsm": "inner", "trail": "full"}},
            {"id": "end", "action": "end"}
        ],
        "transitions": [
            {"id": ["start", "first"], "schema": object(&["topic"])},
            {"id": ["first", "delegate"], "schema": object(&["text"])},
            {"id": ["delegate", "end"], "schema": object(&["text"])}
        ]
    }));
    Machine::inline(
        definition,
        vec![SubDefinition::new("inner", inner(), vec![])],
    )
}

/// The trail's content: states, events, attempts' verdicts, models; no times.
fn content(trail: &Trail) -> Vec<Value> {
    trail
        .entries
        .iter()
        .map(|e| {
            let verdicts: Vec<Value> = e
                .attempts
                .iter()
                .map(|a| serde_json::to_value(&a.verdict).unwrap())
                .collect();
            json!([e.from, e.to, e.event, verdicts, e.model])
        })
        .collect()
}

/// The trail the embedded runner gives `machine` from `input`, with the same scripted model.
fn embedded(machine: &Machine, input: &Value) -> Trail {
    let counts = Counts::new();
    let runner = runner(machine, &Counting::new(counts.path().to_owned(), None)).unwrap();
    let mut run = runner.start(input.clone()).unwrap();
    block(runner.run(&mut run, &Interrupt::new(), None)).unwrap();
    run.trail
}

#[test]
fn a_run_ends_with_the_embedded_runners_trail_and_a_second_start_starts_nothing() {
    let Some(server) = RestateServer::start() else {
        return;
    };
    let counts = Counts::new();
    let _worker = worker(&server, &counts, None);
    let client = client(&server);
    let input = json!({"topic": "rust"});
    for (id, machine) in [
        ("chain-1", Machine::inline(chain(), vec![])),
        ("parent-1", parent()),
    ] {
        let request = RunRequest::new(machine.clone(), input.clone());
        let started = block(client.start(id, &request)).unwrap();
        assert!(!started.already, "{id}");
        let result = block(client.attach(id)).unwrap();
        assert!(
            matches!(&result.ended, Ended::Finished { state, .. } if state == "end"),
            "{id}: {:?}",
            result.ended
        );
        assert_eq!(
            content(&result.trail),
            content(&embedded(&machine, &input)),
            "{id}"
        );
        // The status handler holds the same trail.
        let status = block(client.status(id)).unwrap().unwrap();
        assert_eq!(status.status, Status::Finished, "{id}");
        assert_eq!(status.trail, result.trail, "{id}");
    }
    // The chain asked 3 times, the parent 1 + its sub-FSM's 1.
    assert_eq!(count(counts.path(), "answered"), 5);

    // The same run id again: the same run, nothing asked.
    let request = RunRequest::new(Machine::inline(chain(), vec![]), json!({"topic": "other"}));
    let again = block(client.start("chain-1", &request)).unwrap();
    assert!(again.already);
    let result = block(client.attach("chain-1")).unwrap();
    assert_eq!(result.trail.entries[0].event["topic"], "rust");
    assert_eq!(count(counts.path(), "answered"), 5);
}

#[test]
fn a_worker_killed_mid_run_is_replaced_and_no_model_call_is_answered_twice() {
    let Some(server) = RestateServer::start() else {
        return;
    };
    let counts = Counts::new();
    // The second model call waits for the file `release`.
    let mut worker = worker(&server, &counts, Some(2));
    let client = client(&server);
    let request = RunRequest::new(Machine::inline(chain(), vec![]), json!({"topic": "rust"}));
    block(client.start("killed-1", &request)).unwrap();
    // The first call is journaled (its transition is in the workflow's state) and the second is
    // under way.
    let what = "killed-1's first transition journaled and its second model call asked";
    block(server.wait_for(what, || async {
        let status = client.status("killed-1").await.unwrap();
        (status.is_some_and(|s| s.trail.entries.len() >= 2) && count(counts.path(), "asked") >= 2)
            .then_some(())
    }));
    assert_eq!(count(counts.path(), "answered"), 1);
    worker.kill();
    std::fs::write(counts.path().join("release"), b"").unwrap();
    worker.restart();
    let result = block(client.attach("killed-1")).unwrap();
    assert!(
        matches!(&result.ended, Ended::Finished { state, .. } if state == "end"),
        "{:?}",
        result.ended
    );
    assert_eq!(
        content(&result.trail),
        content(&embedded(
            &Machine::inline(chain(), vec![]),
            &json!({"topic": "rust"})
        ))
    );
    // Three calls answered, each once: the first was read back from the journal, not asked again;
    // the second was asked twice (the killed worker never answered it).
    assert_eq!(count(counts.path(), "answered"), 3, "{}", worker.log());
    assert_eq!(count(counts.path(), "asked"), 4, "{}", worker.log());
}

#[test]
fn a_persons_turn_waits_across_a_worker_restart_and_a_wrong_event_is_refused() {
    let Some(server) = RestateServer::start() else {
        return;
    };
    let counts = Counts::new();
    let mut worker = worker(&server, &counts, None);
    let client = client(&server);
    let request = RunRequest::new(
        Machine::inline(approval(), vec![]),
        json!({"topic": "rust"}),
    );
    block(client.start("human-1", &request)).unwrap();
    let mut seen = Vec::new();
    let followed =
        block(client.follow("human-1", |e| seen.push(format!("{}->{}", e.from, e.to)))).unwrap();
    let Followed::Waiting(status) = followed else {
        panic!("not waiting: {followed:?}");
    };
    assert_eq!(status.waiting_in.as_deref(), Some("approve"));
    assert_eq!(seen, ["start->a", "a->approve"]);

    worker.restart();
    let wrong = block(client.provide("human-1", &json!({"nope": 1}))).unwrap_err();
    assert!(
        matches!(wrong, Error::Status { status: 400, .. }),
        "{wrong}"
    );
    block(client.provide("human-1", &json!({"decision": "yes"}))).unwrap();
    let result = block(client.attach("human-1")).unwrap();
    assert_eq!(
        result.ended,
        Ended::Finished {
            state: "end".into(),
            event: json!({"id": ["approve", "end"], "decision": "yes"})
        }
    );
    assert_eq!(count(counts.path(), "answered"), 1);
    let not_waiting = block(client.provide("human-1", &json!({"decision": "again"}))).unwrap_err();
    assert!(
        matches!(not_waiting, Error::NotWaiting { .. }),
        "{not_waiting}"
    );
}

#[test]
fn an_interrupt_ends_a_waiting_run_in_interrupted() {
    let Some(server) = RestateServer::start() else {
        return;
    };
    let counts = Counts::new();
    let _worker = worker(&server, &counts, None);
    let client = client(&server);
    let request = RunRequest::new(
        Machine::inline(approval(), vec![]),
        json!({"topic": "rust"}),
    );
    block(client.start("stop-1", &request)).unwrap();
    let followed = block(client.follow("stop-1", |_| {})).unwrap();
    assert!(matches!(followed, Followed::Waiting(_)), "{followed:?}");
    block(client.interrupt("stop-1")).unwrap();
    let result = block(client.attach("stop-1")).unwrap();
    assert_eq!(
        result.ended,
        Ended::Interrupted {
            from: "approve".into()
        }
    );
    let last = result.trail.entries.last().unwrap();
    assert_eq!(
        (last.from.as_str(), last.to.as_str()),
        ("approve", "interrupted")
    );
}

/// An interrupt, or Restate's cancel of the run's invocation, that comes while a model call is
/// under way ends the run when the call returns, as the embedded runner does: the action in flight
/// is dropped and `[state, "interrupted"]` recorded; no later state asks the model.
#[test]
fn an_interrupt_during_a_model_call_ends_the_run_after_it() {
    interrupted_during_a_call(|_, client, _| {
        block(client.interrupt("held-1")).unwrap();
    });
}

#[test]
fn a_restate_cancel_during_a_model_call_ends_the_run_after_it_as_interrupted() {
    interrupted_during_a_call(|server, _, started| {
        let cancel = format!("/invocations/{}/cancel", started.invocation_id);
        let answer = server.admin("PATCH", &cancel, None).unwrap();
        assert!(matches!(answer.status, 200 | 202), "{answer:?}");
    });
}

/// Starts a `chain` run whose first model call waits, stops it with `stop` while the call waits,
/// lets the call answer, and checks the end.
fn interrupted_during_a_call(stop: impl FnOnce(&RestateServer, &Client, &Started)) {
    let Some(server) = RestateServer::start() else {
        return;
    };
    let counts = Counts::new();
    let _worker = worker(&server, &counts, Some(1));
    let client = client(&server);
    let request = RunRequest::new(Machine::inline(chain(), vec![]), json!({"topic": "rust"}));
    let started = block(client.start("held-1", &request)).unwrap();
    block(
        server.wait_for("held-1's first model call asked", || async {
            (count(counts.path(), "asked") >= 1).then_some(())
        }),
    );
    stop(&server, &client, &started);
    std::fs::write(counts.path().join("release"), b"").unwrap();
    let result = block(client.attach("held-1")).unwrap();
    assert_eq!(result.ended, Ended::Interrupted { from: "a".into() });
    let hops: Vec<(&str, &str)> = result
        .trail
        .entries
        .iter()
        .map(|e| (e.from.as_str(), e.to.as_str()))
        .collect();
    assert_eq!(
        hops,
        [("start", "a"), ("a", "interrupted")],
        "{:?}",
        result.trail
    );
    assert_eq!(count(counts.path(), "asked"), 1);
    let status = block(client.status("held-1")).unwrap().unwrap();
    assert_eq!(status.status, Status::Interrupted, "{status:?}");
}

/// A client that stops waiting says which limit ran out; the run is not harmed and ends later.
#[test]
fn a_client_that_stops_waiting_names_run_timeout_and_the_run_goes_on() {
    let Some(server) = RestateServer::start() else {
        return;
    };
    let counts = Counts::new();
    let _worker = worker(&server, &counts, Some(1));
    let impatient = Client::new(&server.ingress_url())
        .unwrap()
        .with_limits(Limits::default().with_run_timeout(Duration::from_millis(300)));
    let request = RunRequest::new(Machine::inline(chain(), vec![]), json!({"topic": "rust"}));
    block(impatient.start("slow-1", &request)).unwrap();
    let error = block(impatient.attach("slow-1")).unwrap_err();
    assert!(matches!(error, Error::Timeout { .. }), "{error}");
    assert!(
        error.to_string().contains("the limit run_timeout"),
        "{error}"
    );
    std::fs::write(counts.path().join("release"), b"").unwrap();
    let result = block(client(&server).attach("slow-1")).unwrap();
    assert!(matches!(result.ended, Ended::Finished { .. }), "{result:?}");
}

#[test]
fn two_workers_share_two_hundred_runs_and_all_finish() {
    let Some(server) = RestateServer::start() else {
        return;
    };
    let (counts_a, counts_b) = (Counts::new(), Counts::new());
    let client = client(&server);
    let request = RunRequest::new(Machine::inline(chain(), vec![]), json!({"topic": "rust"}));
    let ids: Vec<String> = (0..200).map(|i| format!("many-{i}")).collect();
    // Restate sends new invocations to the latest deployment and keeps each running one on its
    // own: half the runs start on the first worker, half after the second registers.
    let _a = worker(&server, &counts_a, None);
    block(async {
        for id in &ids[..100] {
            client.start(id, &request).await.unwrap();
        }
    });
    let _b = worker(&server, &counts_b, None);
    block(async {
        for id in &ids[100..] {
            client.start(id, &request).await.unwrap();
        }
    });
    let results = block(async {
        let mut results = Vec::new();
        for id in &ids {
            results.push(client.attach(id).await.unwrap());
        }
        results
    });
    for result in &results {
        assert!(
            matches!(&result.ended, Ended::Finished { state, .. } if state == "end"),
            "{}: {:?}",
            result.run_id,
            result.ended
        );
        assert_eq!(result.trail.entries.len(), 4, "{}", result.run_id);
    }
    let (a, b) = (
        count(counts_a.path(), "answered"),
        count(counts_b.path(), "answered"),
    );
    assert_eq!(a + b, 600, "each run's three calls answered once");
    assert!(a > 0 && b > 0, "both workers served runs: {a} and {b}");
}

#[test]
fn a_conversations_turns_run_one_at_a_time_and_keep_its_history() {
    let Some(server) = RestateServer::start() else {
        return;
    };
    let counts = Counts::new();
    let _worker = worker(&server, &counts, None);
    let client = client(&server);
    // Five turns of one session at once, and one of another.
    let (answers, other) = block(async {
        let questions: Vec<String> = (0..5).map(|i| format!("question {i}")).collect();
        let turns = questions.iter().map(|q| client.turn("session-1", q));
        let answers = futures_util::future::join_all(turns).await;
        let other = client.turn("session-2", "hello").await;
        (answers, other)
    });
    let mut turns: Vec<u64> = answers
        .into_iter()
        .map(|a| {
            let a = a.unwrap();
            assert_eq!(a.value["answer"], "hi");
            a.turn
        })
        .collect();
    turns.sort_unstable();
    // Serialised: each turn saw the one before it.
    assert_eq!(turns, [1, 2, 3, 4, 5]);
    assert_eq!(other.unwrap().turn, 1);
    let history = block(client.history("session-1")).unwrap();
    assert_eq!(history.len(), 10, "{history:?}");
    let roles: Vec<String> = history
        .iter()
        .map(|m| {
            serde_json::to_value(m.role)
                .unwrap()
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(roles, ["user", "assistant"].repeat(5));
    assert_eq!(count(counts.path(), "chat-answered"), 6);
}

#[test]
fn a_persons_turn_inside_a_sub_fsm_is_answered_through_the_parent() {
    let Some(server) = RestateServer::start() else {
        return;
    };
    let counts = Counts::new();
    let _worker = worker(&server, &counts, None);
    let client = client(&server);
    let parent = definition(json!({
        "id": "parent",
        "states": [
            {"id": "delegate", "action": "fsm", "config": {"fsm": "approval"}},
            {"id": "end", "action": "end"}
        ],
        "transitions": [
            {"id": ["start", "delegate"], "schema": object(&["topic"])},
            {"id": ["delegate", "end"], "schema": object(&["decision"])}
        ]
    }));
    let machine = Machine::inline(
        parent,
        vec![SubDefinition::new("approval", approval(), vec![])],
    );
    let request = RunRequest::new(machine, json!({"topic": "rust"}));
    block(client.start("nested-1", &request)).unwrap();
    let followed = block(client.follow("nested-1", |_| {})).unwrap();
    let Followed::Waiting(status) = followed else {
        panic!("not waiting: {followed:?}");
    };
    assert_eq!(status.waiting_in.as_deref(), Some("delegate/approve"));
    assert_eq!(status.run_id, "nested-1");
    block(client.provide("nested-1", &json!({"decision": "yes"}))).unwrap();
    let result = block(client.attach("nested-1")).unwrap();
    assert_eq!(
        result.ended,
        Ended::Finished {
            state: "end".into(),
            event: json!({"id": ["delegate", "end"], "decision": "yes"})
        }
    );
    // The sub-FSM's one model call, in the summary of the parent's transition.
    assert_eq!(result.trail.entries[1].attempts.len(), 1);
    assert_eq!(count(counts.path(), "answered"), 1);
}

#[test]
fn a_failing_state_and_a_looping_machine_end_failed_by_name() {
    let Some(server) = RestateServer::start() else {
        return;
    };
    let counts = Counts::new();
    let _worker = worker(&server, &counts, None);
    let client = client(&server);
    // The model's `text` never has the `verdict` the state needs, and there is no bail-out.
    let strict = definition(json!({
        "id": "strict",
        "states": [{"id": "judge", "action": "llm"}, {"id": "end", "action": "end"}],
        "transitions": [
            {"id": ["start", "judge"], "schema": object(&["topic"])},
            {"id": ["judge", "end"], "schema": object(&["verdict"])}
        ]
    }));
    let request = RunRequest::new(Machine::inline(strict, vec![]), json!({"topic": "rust"}));
    block(client.start("strict-1", &request)).unwrap();
    let result = block(client.attach("strict-1")).unwrap();
    let Ended::Failed(failure) = &result.ended else {
        panic!("not failed: {:?}", result.ended);
    };
    assert_eq!(
        (failure.state.as_str(), failure.kind),
        ("judge", claij_restate::FailureKind::Invalid)
    );
    assert!(failure.error.contains("state `judge`"), "{}", failure.error);
    let status = block(client.status("strict-1")).unwrap().unwrap();
    assert_eq!(status.failure.as_ref(), Some(failure));

    // a -> a forever, stopped at the run's limit.
    let looping = definition(json!({
        "id": "looping",
        "states": [{"id": "a", "action": "llm"}],
        "transitions": [
            {"id": ["start", "a"], "schema": object(&["topic"])},
            {"id": ["a", "a"], "schema": object(&["text"])}
        ]
    }));
    let mut request = RunRequest::new(Machine::inline(looping, vec![]), json!({"topic": "rust"}));
    request.options.max_transitions = Some(5);
    block(client.start("loop-1", &request)).unwrap();
    let result = block(client.attach("loop-1")).unwrap();
    let Ended::Failed(failure) = &result.ended else {
        panic!("not failed: {:?}", result.ended);
    };
    assert_eq!(failure.kind, claij_restate::FailureKind::Invalid);
    assert!(
        failure.error.contains("after 5 transitions"),
        "{}",
        failure.error
    );
    assert_eq!(failure.limit.as_deref(), Some("max_transitions"));
    // The start, then the five the limit allows (as `Runner::run` counts).
    assert_eq!(result.trail.entries.len(), 6);
}

/// a (llm) -> echo (a service answering with its request) -> a, forever: the model sends the same
/// each time.
fn echoing() -> Machine {
    let definition = definition(json!({
        "id": "echoing",
        "states": [{"id": "a", "action": "llm"}, {"id": "echo", "action": "service"}],
        "transitions": [
            {"id": ["start", "a"], "schema": object(&["topic"])},
            {"id": ["a", "echo"], "schema": object(&["text"])},
            {"id": ["echo", "a"], "schema": object(&["text"])}
        ]
    }));
    Machine::inline(definition, vec![])
}

/// A service call repeated with the same request and result ends the run on Restate where the
/// embedded runner ends it, with the same trail (the repeats in it) and the limit named; a run
/// request's own limit is the run's.
#[test]
fn a_repeated_service_call_ends_the_run_as_embedded() {
    let Some(server) = RestateServer::start() else {
        return;
    };
    let counts = Counts::new();
    let _worker = worker(&server, &counts, None);
    let client = client(&server);
    let input = json!({"topic": "rust"});

    let embedded_counts = Counts::new();
    let runner = runner(
        &echoing(),
        &Counting::new(embedded_counts.path().to_owned(), None),
    )
    .unwrap();
    let mut run = runner.start(input.clone()).unwrap();
    let error = block(runner.run(&mut run, &Interrupt::new(), None)).unwrap_err();

    let request = RunRequest::new(echoing(), input.clone());
    block(client.start("echo-1", &request)).unwrap();
    let result = block(client.attach("echo-1")).unwrap();
    let Ended::Failed(failure) = &result.ended else {
        panic!("not failed: {:?}", result.ended);
    };
    assert_eq!(
        (failure.state.as_str(), failure.kind),
        ("echo", claij_restate::FailureKind::Invalid),
        "{failure:?}"
    );
    assert_eq!(failure.limit.as_deref(), Some("max_repeated_calls"));
    assert_eq!(
        failure.error,
        claij_interceptors::ErrorChain(&error).to_string()
    );
    assert_eq!(content(&result.trail), content(&run.trail));
    let repeats: Vec<usize> = result.trail.entries.iter().map(|e| e.repeats).collect();
    assert_eq!(repeats, [0, 0, 0, 0, 1, 0, 2]);

    let mut request = RunRequest::new(echoing(), input);
    request.options.max_repeated_calls = Some(3);
    block(client.start("echo-2", &request)).unwrap();
    let result = block(client.attach("echo-2")).unwrap();
    let Ended::Failed(failure) = &result.ended else {
        panic!("not failed: {:?}", result.ended);
    };
    assert!(
        failure.error.contains("got the same result 5 times"),
        "{}",
        failure.error
    );
    assert_eq!(result.trail.entries.last().unwrap().repeats, 4);
}
