//! The built-in machines with `Scripted` models: the vote on a schema delta (alone and as a sub-FSM)
//! and meta-debugging, down each of their ways out.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use claij_backends::ChatResponse;
use claij_fsm::builtin::meta_debug::{self, Remedy, Symptom};
use claij_fsm::builtin::vote::{self, Votes};
use claij_fsm::{Definition, Fsm, Interrupt, Outcome, Run, Runner, Trail};
use claij_interceptors::{Chain, Config, Context, Pipeline};
use claij_schema::{AuditAction, Registry};
use claij_test_support::Scripted;
use serde_json::{Value, json};

fn block<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

fn path(run: &Run) -> Vec<String> {
    run.trail
        .entries
        .iter()
        .map(|e| format!("{}->{}", e.from, e.to))
        .collect()
}

fn finished(outcome: Outcome) -> (String, Value) {
    match outcome {
        Outcome::Finished { state, event } => (state, event),
        other => panic!("not finished: {other:?}"),
    }
}

fn ballot(approve: bool) -> String {
    json!({"approve": approve, "reason": if approve { "useful and safe" } else { "not worth it" }})
        .to_string()
}

fn confidence() -> Value {
    json!({"properties": {"confidence": {"type": "number", "minimum": 0, "maximum": 1}}})
}

const VOTERS: [&str; 3] = ["model-a", "model-b", "model-c"];

struct Vote {
    state: String,
    event: Value,
    registry: Registry,
    backend: Scripted,
}

/// Runs the vote on `delta` with one voter per ballot.
fn vote_on(delta: Value, ballots: &[bool]) -> Vote {
    let registry = Arc::new(Mutex::new(Registry::new(claij_schema::base()).unwrap()));
    let backend = Scripted::replies(ballots.iter().map(|b| ballot(*b)));
    let voters = &VOTERS[..ballots.len()];
    let runner = vote::runner(
        Arc::new(backend.clone()),
        Config::new("default"),
        voters,
        Arc::clone(&registry),
    )
    .unwrap();
    let mut run = runner
        .start(json!({"extension_id": "confidence-v1", "delta": delta, "reason": "I could say how sure I am"}))
        .unwrap();
    let (state, event) = finished(block(runner.run(&mut run, &Interrupt::new(), None)).unwrap());
    let registry = registry.lock().unwrap().clone();
    Vote {
        state,
        event,
        registry,
        backend,
    }
}

#[test]
fn two_of_three_approve_and_the_delta_is_active() {
    let vote = vote_on(confidence(), &[true, false, true]);
    assert_eq!(vote.state, "activated");
    assert_eq!(
        vote.event,
        json!({"id": ["activate", "activated"], "approved": true, "activated": true,
               "votes": {"approve": 2, "reject": 1}, "extension_id": "confidence-v1"})
    );
    assert_eq!(
        vote.registry.active()["properties"]["confidence"],
        confidence()["properties"]["confidence"]
    );
    let audit = vote.registry.audit().entries();
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].action, AuditAction::Added);
    assert_eq!(audit[0].extension_id, "confidence-v1");
    assert_eq!(audit[0].by, vote::ADDED_BY);
    let models: Vec<String> = vote
        .backend
        .requests()
        .iter()
        .map(|r| r.model.clone())
        .collect();
    assert_eq!(models, VOTERS, "each voter asked its own model");
}

#[test]
fn each_voter_sees_only_the_proposal() {
    let vote = vote_on(confidence(), &[true, false, true]);
    for (n, request) in vote.backend.requests().iter().enumerate() {
        let messages: Vec<&str> = request
            .messages
            .iter()
            .map(|m| m.content.as_str())
            .collect();
        assert_eq!(messages.len(), 1, "voter {}: {messages:?}", n + 1);
        assert!(messages[0].contains("confidence-v1"), "{}", messages[0]);
        assert!(
            !messages[0].contains("approve"),
            "no ballot leaks: {}",
            messages[0]
        );
        let system = request.system.as_deref().unwrap();
        assert!(
            system.contains(&format!("You are voter {} of 3.", n + 1)),
            "{system}"
        );
    }
}

#[test]
fn without_a_majority_the_delta_is_rejected_and_the_registry_unchanged() {
    for ballots in [
        &[false, true, false][..],
        &[true, false][..],
        &[false][..],
        &[][..],
    ] {
        let vote = vote_on(confidence(), ballots);
        let approve = ballots.iter().filter(|b| **b).count();
        assert_eq!(vote.state, "rejected", "{ballots:?}");
        assert_eq!(
            vote.event,
            json!({"id": ["tally", "rejected"], "approved": false, "activated": false,
                   "votes": {"approve": approve, "reject": ballots.len() - approve},
                   "extension_id": "confidence-v1"}),
            "{ballots:?}"
        );
        assert_eq!(vote.registry.active(), &claij_schema::base(), "{ballots:?}");
        // Declined, not added: the audit log keeps the vote, the schema is unchanged.
        let audit = vote.registry.audit().entries();
        assert_eq!(audit.len(), 1, "{ballots:?}");
        assert_eq!(audit[0].action, AuditAction::Declined, "{ballots:?}");
    }
}

#[test]
fn an_approved_delta_the_registry_refuses_is_not_activated() {
    let vote = vote_on(
        json!({"properties": {"x": {"type": 12}}}),
        &[true, true, true],
    );
    assert_eq!(vote.state, "rejected");
    assert_eq!(vote.event["approved"], json!(true));
    assert_eq!(vote.event["activated"], json!(false));
    assert_eq!(vote.event["votes"], json!({"approve": 3, "reject": 0}));
    let error = vote.event["error"].as_str().unwrap();
    assert!(
        error.contains("confidence-v1") && error.contains("/properties/x/type"),
        "{error}"
    );
    assert!(vote.registry.active()["properties"].get("x").is_none());
    let audit = vote.registry.audit().entries();
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].action, AuditAction::Rejected);
    assert_eq!(audit[0].reason.as_deref(), Some(error));
}

#[test]
fn votes_count_only_ballots_out_of_voter_states() {
    let trail: Trail = serde_json::from_value(json!([
        {"from": "start", "to": "voter-1", "event": {"approve": true}, "at": "2026-01-01T00:00:00Z"},
        {"from": "voter-1", "to": "voter-2", "event": {"approve": true, "reason": "r"}, "at": "2026-01-01T00:00:00Z"},
        {"from": "voter-2", "to": "tally", "event": {"approve": false, "reason": "r"}, "at": "2026-01-01T00:00:00Z"},
        {"from": "voter-3", "to": "tally", "event": {"approve": "yes"}, "at": "2026-01-01T00:00:00Z"},
    ]))
    .unwrap();
    let votes = Votes::count(&trail);
    assert_eq!((votes.approve, votes.reject), (1, 1));
    assert!(!votes.is_majority(), "a tie rejects");
}

#[test]
fn the_vote_runs_as_a_sub_fsm() {
    let parent: Definition = serde_json::from_value(json!({
        "id": "chat",
        "states": [
            {"id": "chat", "action": "llm"},
            {"id": "vote", "action": "fsm", "config": {"fsm": vote::ID, "trail": "full"}},
            {"id": "adopted", "action": "end"},
            {"id": "end", "action": "end"}
        ],
        "transitions": [
            {"id": ["start", "chat"], "schema": {"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]}},
            {"id": ["chat", "end"], "schema": {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}},
            {"id": ["chat", "vote"], "description": "propose an extension of the reply schema", "schema": {"type": "object",
                "properties": {"extension_id": {"type": "string"}, "delta": {"type": "object"}, "reason": {"type": "string"}},
                "required": ["extension_id", "delta", "reason"]}},
            {"id": ["vote", "adopted"], "schema": {"type": "object", "properties": {"activated": {"const": true}}, "required": ["activated"]}},
            {"id": ["vote", "end"]}
        ]
    }))
    .unwrap();
    let proposal = json!({"id": ["chat", "vote"], "extension_id": "confidence-v1", "delta": confidence(),
                          "reason": "I think it would help if I could indicate my confidence"});
    let mut replies = vec![proposal.to_string()];
    replies.extend([true, true, false].map(ballot));
    let backend = Arc::new(Scripted::replies(replies));
    let registry = Arc::new(Mutex::new(Registry::new(claij_schema::base()).unwrap()));
    let child = vote::runner(
        backend.clone(),
        Config::new("default"),
        &VOTERS,
        Arc::clone(&registry),
    )
    .unwrap();
    let runner = Runner::new(Fsm::new(parent).unwrap())
        .with_llm(backend, Config::new("default"))
        .with_sub_fsm(child);
    let mut run = runner
        .start(json!({"question": "How sure are you?"}))
        .unwrap();
    let (state, event) = finished(block(runner.run(&mut run, &Interrupt::new(), None)).unwrap());
    assert_eq!(state, "adopted");
    assert_eq!(
        event,
        json!({"id": ["vote", "adopted"], "approved": true, "activated": true,
               "votes": {"approve": 2, "reject": 1}, "extension_id": "confidence-v1"})
    );
    assert_eq!(
        path(&run),
        [
            "start->chat",
            "chat->vote",
            "vote/start->vote/voter-1",
            "vote/voter-1->vote/voter-2",
            "vote/voter-2->vote/voter-3",
            "vote/voter-3->vote/tally",
            "vote/tally->vote/activate",
            "vote/activate->vote/activated",
            "vote->adopted",
        ]
    );
    let registry = registry.lock().unwrap();
    assert!(registry.active()["properties"].get("confidence").is_some());
}

#[test]
fn what_a_voter_is_told() {
    let fsm = Fsm::new(vote::definition(&VOTERS)).unwrap();
    insta::assert_snapshot!("vote_voter_prompt", fsm.prompt("voter-2").unwrap());
}

/// The failing model: it calls its field `reply` unless told the field is `answer`.
fn failing_model() -> Scripted {
    Scripted::from_fn(|request, _| {
        let told = request
            .system
            .as_deref()
            .is_some_and(|s| s.contains("its field is `answer`"));
        Ok(ChatResponse::text(if told {
            r#"{"answer": "4", "state": "done"}"#
        } else {
            r#"{"reply": "4"}"#
        }))
    })
}

fn failing_pipeline(system: &str) -> Pipeline {
    let mut config = Config::new("small-model");
    config.system = system.to_owned();
    config.max_retries = 2;
    Pipeline::new(Arc::new(failing_model()), config, Chain::new())
        .with_base_schema(claij_schema::base())
}

/// The failure as the pipeline reports it, after three invalid replies.
fn real_failure() -> Symptom {
    let err = block(
        failing_pipeline("Answer the question.").ask(&mut Context::default(), "What is 2 + 2?"),
    )
    .unwrap_err();
    let claij_interceptors::Error::RetriesExhausted(exhausted) = err else {
        panic!("{err}")
    };
    Symptom::from_exhausted("small-model", &exhausted)
}

struct Debug {
    run: Run,
    state: String,
    event: Value,
    diagnostician: Scripted,
    verified: usize,
}

/// Runs meta-debugging on `failure` with `models` as diagnostic models (replying `replies`); the
/// verifier asks the failing model again with the fix through the pipeline.
fn debug(failure: Value, models: &[&str], replies: &[Value]) -> Debug {
    let diagnostician = Scripted::replies(replies.iter().map(Value::to_string));
    let verified = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&verified);
    let verify = move |fix: Remedy| {
        counter.fetch_add(1, Ordering::SeqCst);
        async move {
            let answer = failing_pipeline(&fix.system)
                .ask(&mut Context::default(), &fix.request)
                .await;
            Ok(answer.is_ok())
        }
    };
    let runner = meta_debug::runner(
        Arc::new(diagnostician.clone()),
        Config::new("default"),
        models,
        verify,
    )
    .unwrap();
    let mut run = runner.start(failure).unwrap();
    let (state, event) = finished(block(runner.run(&mut run, &Interrupt::new(), None)).unwrap());
    let verified = verified.load(Ordering::SeqCst);
    Debug {
        run,
        state,
        event,
        diagnostician,
        verified,
    }
}

fn diagnosis(kind: &str, suggestion: &str) -> [Value; 2] {
    [
        json!({"analysis": "it names the field `reply`; the prompt never says the field is `answer`"}),
        json!({"fix_kind": kind, "suggestion": suggestion}),
    ]
}

#[test]
fn a_prompt_fix_is_applied_and_verified() {
    let failure = real_failure();
    assert_eq!(failure.attempts, 3);
    assert_eq!(failure.request, "What is 2 + 2?");
    assert!(failure.system.contains("Answer the question."));
    assert!(!failure.violations.is_empty());
    let debug = debug(
        failure.to_value(),
        &["small-model", "big-model"],
        &diagnosis("prompt", "Reply with JSON; its field is `answer`."),
    );
    assert_eq!(debug.state, "fixed");
    assert_eq!(debug.event["fixed"], json!(true));
    assert_eq!(debug.event["applied"], json!(true));
    let system = debug.event["system"].as_str().unwrap();
    assert!(
        system.starts_with(&failure.system) && system.ends_with("its field is `answer`."),
        "{system}"
    );
    assert_eq!(
        path(&debug.run),
        [
            "start->detect",
            "analyze-2->suggest-2",
            "suggest-2->apply",
            "apply->verify",
            "verify->fixed",
        ],
        "select skipped the failing model; the pass-through transitions are omitted"
    );
    let requests = debug.diagnostician.requests();
    assert!(requests.iter().all(|r| r.model == "big-model"));
    assert_eq!(
        requests[0].messages.len(),
        1,
        "the analysis sees the failure once"
    );
    assert!(
        requests[0].messages[0]
            .content
            .contains(r#"{\"reply\": \"4\"}"#),
        "{}",
        requests[0].messages[0].content
    );
    assert_eq!(
        requests[1].messages.len(),
        2,
        "the failure, then the analysis"
    );
    assert_eq!(debug.verified, 1);
}

#[test]
fn a_failure_written_by_hand_needs_only_messages_as_violations() {
    let failure = json!({
        "model": "small-model",
        "request": "What is 2 + 2?",
        "response": "{\"reply\": \"4\"}",
        "violations": [{"message": "missing property `answer`"}],
        "attempts": 2,
    });
    let debug = debug(
        failure,
        &["big-model"],
        &diagnosis("prompt", "Reply with JSON; its field is `answer`."),
    );
    assert_eq!(debug.state, "fixed");
    assert_eq!(
        debug.event["system"],
        json!("Reply with JSON; its field is `answer`."),
        "no system prompt before: the suggestion is the whole of it"
    );
}

#[test]
fn a_fix_that_does_not_work_ends_unfixed() {
    let debug = debug(
        real_failure().to_value(),
        &["big-model"],
        &diagnosis("prompt", "Be careful."),
    );
    assert_eq!(debug.state, "unfixed");
    assert_eq!(
        (&debug.event["fixed"], &debug.event["applied"]),
        (&json!(false), &json!(true))
    );
    assert_eq!(debug.verified, 1);
}

#[test]
fn a_schema_fix_is_recorded_not_applied() {
    let debug = debug(
        real_failure().to_value(),
        &["big-model"],
        &diagnosis("schema", "Rename `answer` to `reply`."),
    );
    assert_eq!(debug.state, "unfixed");
    assert_eq!(
        debug.event,
        json!({"id": ["apply", "unfixed"], "diagnosed": true, "fixed": false, "applied": false,
               "fix_kind": "schema", "suggestion": "Rename `answer` to `reply`."})
    );
    assert_eq!(debug.verified, 0, "nothing to verify");
}

#[test]
fn what_is_not_a_repeated_failure_is_not_diagnosed() {
    let mut once = real_failure();
    once.attempts = 1;
    let mut clean = real_failure();
    clean.violations.clear();
    for (failure, models, reason) in [
        (
            once,
            &["big-model"][..],
            "1 failed attempt; a repeated failure has at least 2",
        ),
        (
            clean,
            &["big-model"][..],
            "no violations: nothing to diagnose",
        ),
        (
            real_failure(),
            &["small-model"][..],
            "no diagnostic model other than `small-model`",
        ),
    ] {
        let debug = debug(failure.to_value(), models, &[]);
        assert_eq!(debug.state, "undiagnosed");
        assert_eq!(debug.event["diagnosed"], json!(false));
        assert_eq!(debug.event["reason"], json!(reason));
        assert_eq!(debug.diagnostician.calls(), 0, "{reason}");
    }
}

#[test]
fn what_the_diagnostic_model_is_told() {
    let fsm = Fsm::new(meta_debug::definition(&["big-model"])).unwrap();
    insta::assert_snapshot!(
        "meta_debug_analyze_prompt",
        fsm.prompt("analyze-1").unwrap()
    );
    insta::assert_snapshot!(
        "meta_debug_suggest_prompt",
        fsm.prompt("suggest-1").unwrap()
    );
}

/// start -> ask (llm, meta-debugged) -> again (service) -> ask once more -> again -> end.
fn twice_asked() -> Fsm {
    let object = |key: &str| json!({"type": "object", "properties": {key: {"type": "string"}}, "required": [key]});
    Fsm::new(
        serde_json::from_value(json!({
            "id": "twice",
            "states": [
                {"id": "ask", "action": "llm", "config": {"meta_debug": true}},
                {"id": "again", "action": "service"},
                {"id": "end", "action": "end"}
            ],
            "transitions": [
                {"id": ["start", "ask"], "schema": object("topic")},
                {"id": ["ask", "again"], "schema": object("answer")},
                {"id": ["again", "ask"], "schema": object("topic")},
                {"id": ["again", "end"], "schema": object("answer")}
            ]
        }))
        .unwrap(),
    )
    .unwrap()
}

/// The first visit to `ask` fails every attempt: meta-debugging diagnoses it with another model, the
/// prompt remedy is tried at once (and the state's valid event goes on), and the second visit is
/// asked with the remedied prompt; the journal keeps the remedy for a resumed run.
#[test]
fn meta_debugging_applies_a_prompt_remedy_for_the_rest_of_the_run() {
    let remedy = "Reply with the bare JSON object; its field is `answer`.";
    let failing = Scripted::replies([
        r#"{"reply": "four"}"#,
        r#"{"reply": "4"}"#,
        r#"{"answer": "4"}"#,
        r#"{"answer": "5"}"#,
    ]);
    let diagnostic = Scripted::replies([
        json!({"analysis": "it answers in prose"}).to_string(),
        json!({"fix_kind": "prompt", "suggestion": remedy}).to_string(),
    ]);
    let mut config = Config::new("small-model");
    config.max_retries = 1;
    let runner = Runner::new(twice_asked())
        .with_llm(Arc::new(failing.clone()), config)
        .with_meta_debug(meta_debug::Diagnostics::new(
            Arc::new(diagnostic.clone()),
            Config::new("unused"),
            ["small-model", "big-model"],
        ))
        .with_service(
            "again",
            claij_fsm::service_fn(|call| {
                let asked = call
                    .trail
                    .entries
                    .iter()
                    .filter(|e| e.from == "ask")
                    .count();
                Ok(if asked < 2 {
                    json!({"id": ["again", "ask"], "topic": "more"})
                } else {
                    json!({"id": ["again", "end"], "answer": call.event["answer"]})
                })
            }),
        );
    let dir = tempfile::tempdir().unwrap();
    let journal_path = dir.path().join("run.jsonl");
    let (mut run, mut journal) = runner
        .start_journaled(
            json!({"topic": "2 + 2"}),
            &journal_path,
            claij_fsm::ExistingJournal::Refuse,
        )
        .unwrap();
    let outcome = block(runner.run(&mut run, &Interrupt::new(), Some(&mut journal))).unwrap();
    assert_eq!(finished(outcome).0, "end");
    assert_eq!(
        path(&run),
        [
            "start->ask",
            "ask/meta-debug/start->ask/meta-debug/detect",
            "ask/meta-debug/analyze-2->ask/meta-debug/suggest-2",
            "ask/meta-debug/suggest-2->ask/meta-debug/apply",
            "ask/meta-debug/apply->ask/meta-debug/verify",
            "ask/meta-debug/verify->ask/meta-debug/fixed",
            "ask->again",
            "again->ask",
            "ask->again",
            "again->end",
        ]
    );
    // The two failed attempts and the one with the remedy produced the first answer.
    let first = run.trail.entries.iter().find(|e| e.from == "ask").unwrap();
    assert_eq!(first.attempts.len(), 3);
    assert_eq!(first.event["answer"], "4");
    // The diagnosis came from the other model, never the failing one.
    let diagnosed_by: Vec<String> = diagnostic
        .requests()
        .iter()
        .map(|r| r.model.clone())
        .collect();
    assert_eq!(diagnosed_by, ["big-model", "big-model"]);
    // Asked with the remedy once it was found, on the next visit too; not before.
    let systems: Vec<String> = failing
        .requests()
        .iter()
        .map(|r| r.system.clone().unwrap_or_default())
        .collect();
    assert_eq!(systems.len(), 4);
    assert!(!systems[0].contains(remedy) && !systems[1].contains(remedy));
    assert!(systems[2].ends_with(remedy), "{}", systems[2]);
    assert!(systems[3].ends_with(remedy), "{}", systems[3]);
    assert_eq!(run.remedies()["ask"].suggestion, remedy);
    drop(journal);

    let (resumed, _journal) = runner.resume(&journal_path).unwrap();
    assert_eq!(resumed.remedies(), run.remedies());
}

/// A model that never replies with JSON has no schema violations: the symptom says why its reply
/// failed instead, so the failure is still diagnosed (`detect` needs violations to show).
#[test]
fn a_reply_without_json_is_a_symptom_with_a_root_violation() {
    let prose = Scripted::replies(["four", "it is four"]);
    let mut config = Config::new("small-model");
    config.max_retries = 1;
    let pipeline =
        Pipeline::new(Arc::new(prose), config, Chain::new()).with_base_schema(claij_schema::base());
    let err = block(pipeline.ask(&mut Context::default(), "What is 2 + 2?")).unwrap_err();
    let claij_interceptors::Error::RetriesExhausted(exhausted) = err else {
        panic!("{err}")
    };
    let symptom = Symptom::from_exhausted("small-model", &exhausted);
    assert_eq!(symptom.attempts, 2);
    assert_eq!(symptom.violations.len(), 1);
    assert_eq!(symptom.violations[0].instance_pointer, "");
    assert!(
        symptom.violations[0].message.starts_with("no JSON: "),
        "{:?}",
        symptom.violations
    );
    let fsm = Fsm::new(meta_debug::definition(&["big-model"])).unwrap();
    assert!(
        fsm.route(
            "start",
            &json!({"id": ["start", "detect"], "model": "small-model",
        "request": symptom.request, "response": symptom.response,
        "violations": symptom.to_value()["violations"], "attempts": 2})
        )
        .is_ok()
    );
}

/// A schema remedy is not tried: it is recorded for the state with the delta the diagnostic model
/// proposes (for the proposals' approver), and the state bails out as it would have.
#[test]
fn a_schema_remedy_is_recorded_with_its_proposed_delta() {
    let object = |key: &str| json!({"type": "object", "properties": {key: {"type": "string"}}, "required": [key]});
    let fsm = Fsm::new(
        serde_json::from_value(json!({
            "id": "once",
            "states": [
                {"id": "ask", "action": "llm", "config": {"meta_debug": true}},
                {"id": "end", "action": "end"},
                {"id": "failed", "action": "end"}
            ],
            "transitions": [
                {"id": ["start", "ask"], "schema": object("topic")},
                {"id": ["ask", "end"], "schema": object("answer")},
                {"id": ["ask", "failed"], "schema": {"type": "object", "properties": {
                    "error": {"type": "string"}, "bail_out": {"const": true}}, "required": ["error", "bail_out"]}}
            ]
        }))
        .unwrap(),
    )
    .unwrap();
    let delta = json!({"properties": {"reply": {"type": "string"}}});
    let failing = Scripted::replies([r#"{"reply": "4"}"#, r#"{"reply": "4"}"#]);
    let diagnostic = Scripted::replies([
        json!({"analysis": "it insists on `reply`"}).to_string(),
        json!({"fix_kind": "schema", "suggestion": "accept `reply`", "delta": delta}).to_string(),
    ]);
    let mut config = Config::new("small-model");
    config.max_retries = 1;
    let runner = Runner::new(fsm)
        .with_llm(Arc::new(failing.clone()), config)
        .with_meta_debug(meta_debug::Diagnostics::new(
            Arc::new(diagnostic),
            Config::new("unused"),
            ["big-model"],
        ));
    let mut run = runner.start(json!({"topic": "2 + 2"})).unwrap();
    let (state, event) = finished(block(runner.run(&mut run, &Interrupt::new(), None)).unwrap());
    assert_eq!(
        (state.as_str(), &event["bail_out"]),
        ("failed", &json!(true))
    );
    assert_eq!(failing.calls(), 2, "a schema remedy is not tried");
    let remedy = &run.remedies()["ask"];
    assert_eq!(remedy.kind, meta_debug::RemedyKind::Schema);
    assert_eq!(remedy.delta.as_ref(), Some(&delta));
    let unfixed = run
        .trail
        .entries
        .iter()
        .find(|e| e.to == "ask/meta-debug/unfixed")
        .unwrap();
    assert_eq!(unfixed.event["delta"], delta);
}

/// Every visit to `ask` fails its first attempt the same way and passes on the retry: no visit runs
/// out of retries, but the failure repeats across turns, so the second visit is meta-debugged; the
/// remedy's effect (the first attempt with it validates) is recorded, and the third visit is asked
/// with it and passes at once.
#[test]
fn a_validation_failure_repeating_across_turns_is_meta_debugged() {
    let remedy = "Name the field `answer`.";
    let failing = Scripted::replies([
        r#"{"reply": "1"}"#,
        r#"{"answer": "1"}"#,
        r#"{"reply": "2"}"#,
        r#"{"answer": "2"}"#,
        r#"{"answer": "verified"}"#,
        r#"{"answer": "3"}"#,
    ]);
    let diagnostic = Scripted::replies([
        json!({"analysis": "it starts with `reply` every time"}).to_string(),
        json!({"fix_kind": "prompt", "suggestion": remedy}).to_string(),
    ]);
    let mut config = Config::new("small-model");
    config.max_retries = 1;
    let runner = Runner::new(twice_asked())
        .with_llm(Arc::new(failing.clone()), config)
        .with_meta_debug(meta_debug::Diagnostics::new(
            Arc::new(diagnostic),
            Config::new("unused"),
            ["big-model"],
        ))
        .with_service(
            "again",
            claij_fsm::service_fn(|call| {
                let asked = call
                    .trail
                    .entries
                    .iter()
                    .filter(|e| e.from == "ask")
                    .count();
                Ok(if asked < 3 {
                    json!({"id": ["again", "ask"], "topic": "more"})
                } else {
                    json!({"id": ["again", "end"], "answer": call.event["answer"]})
                })
            }),
        );
    let mut run = runner.start(json!({"topic": "count"})).unwrap();
    let (state, event) = finished(block(runner.run(&mut run, &Interrupt::new(), None)).unwrap());
    assert_eq!((state.as_str(), &event["answer"]), ("end", &json!("3")));
    let answers: Vec<&Value> = run
        .trail
        .entries
        .iter()
        .filter(|e| e.from == "ask")
        .map(|e| &e.event["answer"])
        .collect();
    assert_eq!(answers, [&json!("1"), &json!("2"), &json!("3")]);
    let fixed = run
        .trail
        .entries
        .iter()
        .position(|e| e.to == "ask/meta-debug/fixed")
        .expect("the verification validated");
    let second = run
        .trail
        .entries
        .iter()
        .enumerate()
        .filter(|(_, e)| e.from == "ask")
        .map(|(i, _)| i)
        .nth(1)
        .unwrap();
    assert_eq!(fixed + 1, second, "diagnosed on the second visit");
    let systems: Vec<String> = failing
        .requests()
        .iter()
        .map(|r| r.system.clone().unwrap_or_default())
        .collect();
    assert_eq!(systems.len(), 6);
    assert!(systems[..4].iter().all(|s| !s.contains(remedy)));
    assert!(systems[4].ends_with(remedy) && systems[5].ends_with(remedy));
    let third = run.trail.entries.iter().rfind(|e| e.from == "ask").unwrap();
    assert_eq!(third.attempts.len(), 1, "valid at once with the remedy");
}

/// The registry's audit log says who voted what: an approval is added with its ballots, a proposal
/// voted down is declined with them and the count.
#[test]
fn the_audit_log_keeps_the_ballots_of_the_vote() {
    let approved = vote_on(confidence(), &[true, false, true]);
    let audit = approved.registry.audit().entries();
    let voters: Vec<(&str, bool)> = audit[0]
        .ballots
        .iter()
        .map(|b| (b.voter.as_str(), b.approve))
        .collect();
    assert_eq!(
        voters,
        [("model-a", true), ("model-b", false), ("model-c", true)]
    );
    assert_eq!(audit[0].ballots[1].reason, "not worth it");

    let declined = vote_on(confidence(), &[false, true, false]);
    assert_eq!(declined.state, "rejected");
    let audit = declined.registry.audit().entries();
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].action, AuditAction::Declined);
    assert_eq!(audit[0].ballots.len(), 3);
    assert!(
        audit[0]
            .reason
            .as_deref()
            .is_some_and(|r| r.contains("1 for, 2 against")),
        "{:?}",
        audit[0].reason
    );
}
