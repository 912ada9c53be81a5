//! Loop detection: a service call repeated with the same request and the same result is recorded
//! and told to the model, and a repeat beyond the limit ends the run naming the state, the call
//! and the limit; the step API decides the same, and a resumed run goes on from where it stopped.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use claij_fsm::{
    DEFAULT_MAX_REPEATED_CALLS, Error, ExistingJournal, Fsm, Interrupt, NextAction, Outcome, Run,
    Runner, StepRecord, service_fn,
};
use claij_interceptors::Config;
use claij_test_support::Scripted;
use serde_json::{Value, json};

use super::definitions::example;

/// The model's call of `fs.read_text_file` on `notes.txt`, its JSON-RPC id `id`.
fn call(id: u64) -> String {
    json!({"id": ["llm", "servicing"], "message": {"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "fs.read_text_file", "arguments": {"path": "notes.txt"}}}})
    .to_string()
}

fn call_of(path: &str) -> String {
    json!({"id": ["llm", "servicing"], "message": {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "fs.read_text_file", "arguments": {"path": path}}}})
    .to_string()
}

const ANSWER: &str =
    r#"{"id": ["llm", "end"], "result": {"content": [{"type": "text", "text": "it says hello"}]}}"#;

/// The tool loop with a model scripted with `replies` and a stand-in for the MCP service that reads
/// `notes.txt` as `hello` (another file as `other`), answering with the request's JSON-RPC id.
fn tool_loop(replies: &[String]) -> (Runner, Scripted) {
    let backend = Scripted::replies(replies.iter().cloned());
    let mut config = Config::new("scripted");
    config.max_retries = 0;
    let fsm = Fsm::from_json(&example("tool-loop")).unwrap();
    let runner = Runner::new(fsm)
        .with_llm(Arc::new(backend.clone()), config)
        .with_service(
            "mcp",
            service_fn(|call| {
                let id = call.event["message"]["id"].clone();
                let path = &call.event["message"]["params"]["arguments"]["path"];
                let text = if path == "notes.txt" {
                    "hello"
                } else {
                    "other"
                };
                Ok(json!({"message": {"jsonrpc": "2.0", "id": id,
                    "result": {"content": [{"type": "text", "text": text}]}}}))
            }),
        );
    (runner, backend)
}

fn block<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

fn start(runner: &Runner) -> Run {
    runner
        .start(json!({"request": "Read the file \"notes.txt\" and tell me what it says"}))
        .unwrap()
}

/// `from->to` and the repeats of each transition.
fn path(run: &Run) -> Vec<String> {
    run.trail
        .entries
        .iter()
        .map(|e| match e.repeats {
            0 => format!("{}->{}", e.from, e.to),
            n => format!("{}->{} (repeats {n})", e.from, e.to),
        })
        .collect()
}

/// The last user message of the `n`th model call (0-based): what the model was told last.
fn told(backend: &Scripted, n: usize) -> String {
    backend.requests()[n]
        .messages
        .last()
        .unwrap()
        .content
        .clone()
}

/// The model repeats its call (with another JSON-RPC id: still the same call): the second result is
/// recorded as a repeat and the model is told so; the third ends the run, naming the state, the
/// call and the limit, its transition recorded.
#[test]
fn a_repeated_call_is_told_to_the_model_then_ends_the_run() {
    assert_eq!(DEFAULT_MAX_REPEATED_CALLS, 1);
    let (runner, backend) = tool_loop(&[call(1), call(2), call(3), ANSWER.to_owned()]);
    let mut run = start(&runner);
    let err = block(runner.run(&mut run, &Interrupt::new(), None)).unwrap_err();
    assert_eq!(
        path(&run),
        [
            "start->llm",
            "llm->servicing",
            "servicing->llm",
            "llm->servicing",
            "servicing->llm (repeats 1)",
            "llm->servicing",
            "servicing->llm (repeats 2)",
        ]
    );
    let Error::RepeatedCall {
        state,
        call,
        repeats,
        limit,
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!(
        (state.as_str(), repeats, limit),
        ("servicing", &2, &1),
        "{err}"
    );
    assert_eq!(call, r#"`fs.read_text_file` with {"path":"notes.txt"}"#);
    assert_eq!(err.limit(), Some("max_repeated_calls"));
    assert_eq!(
        err.to_string(),
        "state `servicing` repeats itself: `fs.read_text_file` with {\"path\":\"notes.txt\"} got \
         the same result 3 times since the last input (the limit max_repeated_calls allows 1 repeat)"
    );
    // Three model calls: the answer was never asked for.
    assert_eq!(backend.calls(), 3);
    // The first result is plain; after the repeated one the model is told.
    assert!(
        !told(&backend, 1).contains("Note:"),
        "{}",
        told(&backend, 1)
    );
    insta::assert_snapshot!("repeated_call_note", told(&backend, 2));
}

/// Told of the repeat, the model answers: the run finishes, the repeat in its trail.
#[test]
fn a_model_told_of_a_repeat_can_answer() {
    let (runner, backend) = tool_loop(&[call(1), call(1), ANSWER.to_owned()]);
    let mut run = start(&runner);
    let outcome = block(runner.run(&mut run, &Interrupt::new(), None)).unwrap();
    assert!(matches!(outcome, Outcome::Finished { .. }), "{outcome:?}");
    assert_eq!(run.trail.entries[4].repeats, 1);
    assert_eq!(backend.calls(), 3);
    // In the journal's (and `--json`'s) form, the count is there; 0 is left out.
    let entries = serde_json::to_value(&run.trail).unwrap();
    assert_eq!(entries[4]["repeats"], 1);
    assert!(entries[2].get("repeats").is_none(), "{}", entries[2]);
}

/// Another file, or the same call with another result, is no repeat.
#[test]
fn other_arguments_or_another_result_are_no_repeat() {
    let (runner, _) = tool_loop(&[
        call_of("notes.txt"),
        call_of("todo.txt"),
        call_of("notes.txt"),
        ANSWER.to_owned(),
    ]);
    let mut run = start(&runner);
    // notes, todo, notes again: the third repeats the first (same call, same result).
    let outcome = block(runner.run(&mut run, &Interrupt::new(), None)).unwrap();
    assert!(matches!(outcome, Outcome::Finished { .. }));
    let repeats: Vec<usize> = run.trail.entries.iter().map(|e| e.repeats).collect();
    assert_eq!(repeats, [0, 0, 0, 0, 0, 0, 1, 0]);

    // A service whose result changes each time (a clock, a counter) does not loop.
    let counter = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&counter);
    let backend = Scripted::replies([call(1), call(1), call(1), call(1), ANSWER.to_owned()]);
    let runner = Runner::new(Fsm::from_json(&example("tool-loop")).unwrap())
        .with_llm(Arc::new(backend), Config::new("scripted"))
        .with_service(
            "mcp",
            service_fn(move |call| {
                let n = seen.fetch_add(1, Ordering::SeqCst);
                Ok(
                    json!({"message": {"jsonrpc": "2.0", "id": call.event["message"]["id"],
                    "result": {"content": [{"type": "text", "text": format!("tick {n}")}]}}}),
                )
            }),
        );
    let mut run = start(&runner);
    let outcome = block(runner.run(&mut run, &Interrupt::new(), None)).unwrap();
    assert!(matches!(outcome, Outcome::Finished { .. }));
    assert!(run.trail.entries.iter().all(|e| e.repeats == 0));
    assert_eq!(counter.load(Ordering::SeqCst), 4);
}

/// The limit is the runner's (0: the first repeat ends the run; `usize::MAX`: never, and the model
/// is not told), or a run's own.
#[test]
fn the_limit_is_the_runner_s_or_the_run_s() {
    let replies = [call(1), call(1), call(1), call(1), ANSWER.to_owned()];
    let (runner, backend) = tool_loop(&replies);
    let runner = runner.with_max_repeated_calls(0);
    assert_eq!(runner.max_repeated_calls(), 0);
    let mut run = start(&runner);
    let err = block(runner.run(&mut run, &Interrupt::new(), None)).unwrap_err();
    assert!(
        matches!(
            err,
            Error::RepeatedCall {
                repeats: 1,
                limit: 0,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(backend.calls(), 2);

    let (runner, backend) = tool_loop(&replies);
    let runner = runner.with_max_repeated_calls(usize::MAX);
    let mut run = start(&runner);
    let outcome = block(runner.run(&mut run, &Interrupt::new(), None)).unwrap();
    assert!(matches!(outcome, Outcome::Finished { .. }));
    assert_eq!(run.trail.entries[8].repeats, 3);
    assert!(
        (0..5).all(|n| !told(&backend, n).contains("Note:")),
        "{:?}",
        backend.requests()
    );

    let (runner, _) = tool_loop(&replies);
    let mut run = start(&runner);
    run.set_max_repeated_calls(2);
    let err = block(runner.run(&mut run, &Interrupt::new(), None)).unwrap_err();
    assert!(
        matches!(
            err,
            Error::RepeatedCall {
                repeats: 3,
                limit: 2,
                ..
            }
        ),
        "{err}"
    );
}

/// A person's input starts a new count: the same question asked again by a person is no loop.
#[test]
fn a_person_s_input_starts_a_new_count() {
    let definition = json!({
        "id": "desk",
        "states": [
            {"id": "person", "action": "human"},
            {"id": "lookup", "action": "service"},
            {"id": "end", "action": "end"}
        ],
        "transitions": [
            {"id": ["start", "person"]},
            {"id": ["person", "lookup"], "schema": {"type": "object", "required": ["q"]}},
            {"id": ["person", "end"], "schema": {"type": "object", "required": ["bye"]}},
            {"id": ["lookup", "person"], "schema": {"type": "object", "required": ["a"]}}
        ]
    });
    let runner = Runner::new(Fsm::new(serde_json::from_value(definition).unwrap()).unwrap())
        .with_max_repeated_calls(0)
        .with_service("lookup", service_fn(|_| Ok(json!({"a": 42}))));
    let mut run = runner.start(json!({})).unwrap();
    for _ in 0..3 {
        let question = json!({"id": ["person", "lookup"], "q": "same"});
        runner.provide(&mut run, question, None).unwrap();
        let outcome = block(runner.run(&mut run, &Interrupt::new(), None)).unwrap();
        assert!(matches!(outcome, Outcome::Waiting { .. }), "{outcome:?}");
    }
    assert!(run.trail.entries.iter().all(|e| e.repeats == 0));
}

/// Driven step by step, each record through JSON (as Restate does), the run stops at the same
/// transition with the same error.
#[test]
fn the_step_api_stops_where_run_stops() {
    let replies = [call(1), call(2), call(3), ANSWER.to_owned()];
    let (embedded, _) = tool_loop(&replies);
    let mut whole = start(&embedded);
    let expected = block(embedded.run(&mut whole, &Interrupt::new(), None)).unwrap_err();

    let (stepped, backend) = tool_loop(&replies);
    let mut run = start(&stepped);
    let err = loop {
        let NextAction::Act { .. } = stepped.next_action(&run) else {
            panic!("the run should loop, not stop: {:?}", path(&run));
        };
        let record = block(stepped.act_step(&mut run, &Interrupt::new())).unwrap();
        let record: StepRecord =
            serde_json::from_value(serde_json::to_value(&record).unwrap()).unwrap();
        if let Err(err) = stepped.apply_step(&mut run, record) {
            break err;
        }
    };
    assert_eq!(err.to_string(), expected.to_string());
    assert_eq!(path(&run), path(&whole));
    // The model was told the same.
    insta::assert_snapshot!("repeated_call_note", told(&backend, 2));
}

/// A run stopped for a loop is journaled with its repeats; resumed, the model is told again (the
/// next repeat ends it at once), and with a higher limit it can answer.
#[test]
fn a_run_stopped_for_a_loop_resumes_with_the_model_told() {
    let dir = tempfile::tempdir().unwrap();
    let journal_path = dir.path().join("run.jsonl");
    let (runner, _) = tool_loop(&[call(1), call(1), call(1)]);
    let (mut run, mut journal) = runner
        .start_journaled(
            json!({"request": "Read the file \"notes.txt\" and tell me what it says"}),
            &journal_path,
            ExistingJournal::Refuse,
        )
        .unwrap();
    let err = block(runner.run(&mut run, &Interrupt::new(), Some(&mut journal))).unwrap_err();
    assert!(matches!(err, Error::RepeatedCall { .. }), "{err}");
    drop(journal);
    let text = std::fs::read_to_string(&journal_path).unwrap();
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(
        (&last["from"], &last["repeats"]),
        (&json!("servicing"), &json!(2))
    );

    // Resumed as it was: in `llm`, told of the repeats; one more repeat ends it again.
    let (runner, backend) = tool_loop(&[call(1)]);
    let (mut run, mut journal) = runner.resume(&journal_path).unwrap();
    assert_eq!(run.state, "llm");
    let err = block(runner.run(&mut run, &Interrupt::new(), Some(&mut journal))).unwrap_err();
    assert!(
        matches!(err, Error::RepeatedCall { repeats: 3, .. }),
        "{err}"
    );
    let note = told(&backend, 0);
    assert!(
        note.contains("was given this same request 2 times before"),
        "{note}"
    );
    assert!(
        note.contains("The same call once more ends the run."),
        "{note}"
    );
    drop(journal);

    // With a higher limit, told, the model answers.
    let (runner, _) = tool_loop(&[ANSWER.to_owned()]);
    let runner = runner.with_max_repeated_calls(5);
    let (mut run, mut journal) = runner.resume(&journal_path).unwrap();
    let outcome = block(runner.run(&mut run, &Interrupt::new(), Some(&mut journal))).unwrap();
    assert!(matches!(outcome, Outcome::Finished { .. }), "{outcome:?}");
}
