//! Driving a run step by step (`next_action`, `act_step`, `apply_step`): records that went through
//! JSON rebuild the same run without calling a model again, and the steps give the trail
//! `Runner::run` gives.

use std::sync::Arc;

use claij_fsm::{
    Definition, Error, Fsm, Interrupt, NextAction, Outcome, Run, Runner, StepRecord, service_fn,
};
use claij_interceptors::Config;
use claij_test_support::Scripted;
use serde_json::{Value, json};

fn object(required: &[&str]) -> Value {
    let properties: serde_json::Map<String, Value> = required
        .iter()
        .map(|k| ((*k).to_owned(), json!({"type": "string"})))
        .collect();
    json!({"type": "object", "properties": properties, "required": required})
}

/// start -> draft (llm) -> stamp (service) -> review (llm) -> end | draft.
fn machine() -> Fsm {
    let definition: Definition = serde_json::from_value(json!({
        "id": "writing",
        "states": [
            {"id": "draft", "action": "llm"},
            {"id": "stamp", "action": "service"},
            {"id": "review", "action": "llm"},
            {"id": "end", "action": "end"}
        ],
        "transitions": [
            {"id": ["start", "draft"], "schema": object(&["topic"])},
            {"id": ["draft", "stamp"], "schema": object(&["text"])},
            {"id": ["stamp", "review"], "schema": object(&["text", "stamp"])},
            {"id": ["review", "draft"], "schema": object(&["feedback"])},
            {"id": ["review", "end"], "schema": object(&["verdict"])}
        ]
    }))
    .unwrap();
    Fsm::new(definition).unwrap()
}

const REPLIES: [&str; 5] = [
    r#"{"id": ["draft", "stamp"], "text": "v1"}"#,
    r#"{"id": ["review", "draft"], "feedback": "shorter"}"#,
    r#"not json"#,
    r#"{"id": ["draft", "stamp"], "text": "v2"}"#,
    r#"{"id": ["review", "end"], "verdict": "good"}"#,
];

fn runner() -> (Runner, Scripted) {
    let backend = Scripted::replies(REPLIES.iter().map(|s| (*s).to_owned()));
    let mut config = Config::new("scripted");
    config.max_retries = 1;
    let runner = Runner::new(machine())
        .with_llm(Arc::new(backend.clone()), config)
        .with_service(
            "stamp",
            service_fn(|call| {
                let text = call.event["text"].clone();
                Ok(json!({"text": text, "stamp": "ok"}))
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

/// Drives `run` with the step API, each record through JSON, until it stops.
fn drive(runner: &Runner, run: &mut Run) -> (Outcome, Vec<Value>) {
    let mut records = Vec::new();
    loop {
        match runner.next_action(run) {
            NextAction::Act { .. } => {
                let record = block(runner.act_step(run, &Interrupt::new())).unwrap();
                let record = serde_json::to_value(&record).unwrap();
                records.push(record.clone());
                let record: StepRecord = serde_json::from_value(record).unwrap();
                if let Some(outcome) = runner.apply_step(run, record).unwrap() {
                    return (outcome, records);
                }
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}

/// The trail's content: states, events, attempts' verdicts and models, no times.
fn content(run: &Run) -> Vec<Value> {
    run.trail
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

#[test]
fn steps_give_the_trail_run_gives() {
    let (embedded, _) = runner();
    let mut whole = embedded.start(json!({"topic": "rust"})).unwrap();
    let outcome = block(embedded.run(&mut whole, &Interrupt::new(), None)).unwrap();

    let (stepped, backend) = runner();
    let mut run = stepped.start(json!({"topic": "rust"})).unwrap();
    let (step_outcome, _) = drive(&stepped, &mut run);
    assert_eq!(step_outcome, outcome);
    assert_eq!(content(&run), content(&whole));
    assert_eq!(backend.requests().len(), REPLIES.len());
    // The retry is in the trail: draft's second visit took two attempts.
    assert_eq!(run.trail.entries[4].attempts.len(), 2);
}

#[test]
fn re_applied_records_rebuild_the_same_run_without_calling_the_model() {
    let (runner_a, _) = runner();
    let mut run = runner_a
        .start_with_id("run-1", json!({"topic": "rust"}))
        .unwrap();
    let (outcome, records) = drive(&runner_a, &mut run);

    // A fresh process: the same start, then only the journaled records.
    let backend = Scripted::replies(Vec::<String>::new());
    let replay_runner =
        Runner::new(machine()).with_llm(Arc::new(backend.clone()), Config::new("scripted"));
    let mut replay = replay_runner
        .start_with_id("run-1", json!({"topic": "rust"}))
        .unwrap();
    replay.trail.entries[0].at = run.trail.entries[0].at;
    let mut last = None;
    for record in records {
        let record: StepRecord = serde_json::from_value(record).unwrap();
        last = replay_runner.apply_step(&mut replay, record).unwrap();
    }
    assert_eq!(last, Some(outcome));
    assert!(backend.requests().is_empty(), "no model call on replay");
    assert_eq!(replay.trail, run.trail, "times included");
    assert_eq!(
        (&replay.state, &replay.event, replay.status),
        (&run.state, &run.event, run.status)
    );
    // The interceptor context (turns, the conversation) is rebuilt too.
    assert_eq!(replay.context.turn, run.context.turn);
    assert!(run.context.turn > 0);
    assert_eq!(replay.context.history, run.context.history);
    assert_eq!(replay.id, "run-1");
}

#[test]
fn a_record_of_another_state_is_refused_by_name() {
    let (runner, _) = runner();
    let mut run = runner.start(json!({"topic": "rust"})).unwrap();
    let record = block(runner.act_step(&mut run, &Interrupt::new())).unwrap();
    runner.apply_step(&mut run, record.clone()).unwrap();
    let error = runner.apply_step(&mut run, record).unwrap_err();
    assert!(
        matches!(&error, Error::Unsupported { state, reason } if state == "stamp" && reason.contains("`draft`")),
        "{error}"
    );
}

#[test]
fn a_sub_fsm_waiting_for_a_person_is_no_step_record() {
    let approval = Fsm::new(
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
    .unwrap();
    let parent = Fsm::new(
        serde_json::from_value(json!({
            "id": "parent",
            "states": [
                {"id": "ask", "action": "fsm", "config": {"fsm": "approval"}},
                {"id": "end", "action": "end"}
            ],
            "transitions": [
                {"id": ["start", "ask"], "schema": object(&["plan"])},
                {"id": ["ask", "end"], "schema": object(&["decision"])}
            ]
        }))
        .unwrap(),
    )
    .unwrap();
    let runner = Runner::new(parent).with_sub_fsm(Runner::new(approval));
    let mut run = runner.start(json!({"plan": "p"})).unwrap();
    assert_eq!(
        runner.next_action(&run),
        NextAction::SubFsm {
            state: "ask".into(),
            name: "approval".into(),
            input: json!({"plan": "p"})
        }
    );
    let error = block(runner.act_step(&mut run, &Interrupt::new())).unwrap_err();
    assert!(
        matches!(&error, Error::Unsupported { state, .. } if state == "ask"),
        "{error}"
    );

    // Run on its own (a child workflow, say), the sub-FSM's end goes back as a step.
    let child = runner.sub_fsm("approval").unwrap();
    let mut sub = child.start(json!({"plan": "p"})).unwrap();
    child
        .provide(&mut sub, json!({"decision": "yes"}), None)
        .unwrap();
    let record = runner
        .sub_fsm_step(
            "ask",
            sub.event.clone(),
            &sub.trail,
            std::time::SystemTime::now(),
        )
        .unwrap();
    let outcome = runner.apply_step(&mut run, record).unwrap();
    assert_eq!(
        outcome,
        Some(Outcome::Finished {
            state: "end".into(),
            event: json!({"id": ["ask", "end"], "decision": "yes"})
        })
    );
}

#[test]
fn a_recorded_failure_fails_the_replay_by_state() {
    let (runner, _) = runner();
    let mut run = runner.start(json!({"topic": "rust"})).unwrap();
    let mut record = block(runner.act_step(&mut run, &Interrupt::new())).unwrap();
    record.failure = Some("retries exhausted".into());
    let error = runner.apply_step(&mut run, record).unwrap_err();
    assert!(
        matches!(&error, Error::StepFailed { state, message } if state == "draft" && message == "retries exhausted"),
        "{error}"
    );
    assert_eq!(run.state, "draft");
}
