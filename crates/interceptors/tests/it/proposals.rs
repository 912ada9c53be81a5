//! Tests of the `proposals` interceptor: approved, rejected and rolled-back extensions, through the
//! pipeline's schema registry and audit log.

use std::sync::Arc;

use claij_backends::{BoxFuture, ChatRequest};
use claij_interceptors::builtin::proposals::{
    Approver, Decision, Proposal, ProposalLog, Proposals, Ruling,
};
use claij_interceptors::{Chain, Config, Context, Interceptor, OnError, Pipeline, Schema};
use claij_schema::AuditAction;
use claij_test_support::Scripted;
use futures_executor::block_on;
use serde_json::{Value, json};

fn system(request: &ChatRequest) -> &str {
    request.system.as_deref().unwrap_or_default()
}

/// The schema section of a request's system prompt (from the line the pipeline starts it with).
fn schema_section(request: &ChatRequest) -> &str {
    let system = system(request);
    system
        .find("Respond with only a JSON value")
        .map_or(system, |at| &system[at..])
}

fn propose(id: &str, delta: Value) -> String {
    json!({
        "answer": "Paris",
        "state": "chat",
        "proposed_extension": {"extension_id": id, "reason": "to say how sure I am", "delta": delta}
    })
    .to_string()
}

fn plain(extra: Value) -> String {
    let mut value = json!({"answer": "Rome", "state": "chat"});
    if let (Some(value), Some(extra)) = (value.as_object_mut(), extra.as_object()) {
        value.extend(extra.clone());
    }
    value.to_string()
}

fn confidence() -> Value {
    json!({
        "properties": {"confidence": {"type": "number", "minimum": 0, "maximum": 1,
            "description": "How sure you are of the answer"}},
        "required": ["confidence"]
    })
}

fn pipeline(backend: &Scripted, proposals: &Proposals) -> Pipeline {
    let chain = Chain::new().with_policy(proposals.clone(), OnError::Skip);
    Pipeline::new(Arc::new(backend.clone()), Config::new("test-model"), chain)
}

fn actions(pipeline: &Pipeline, extension_id: &str) -> Vec<AuditAction> {
    pipeline
        .audit()
        .entries()
        .iter()
        .filter(|e| e.extension_id == extension_id)
        .map(|e| e.action)
        .collect()
}

#[test]
fn approved_extension_joins_the_next_requests_schema() {
    let backend = Scripted::replies([
        propose("confidence-v1", confidence()),
        plain(json!({})), // lacks the now-required confidence: retried
        plain(json!({"confidence": 0.8})),
    ]);
    let proposals = Proposals::new(|_: &Proposal, _: &Context| Decision::Approve);
    let pipeline = pipeline(&backend, &proposals);
    let mut ctx = Context::default();
    block_on(pipeline.ask(&mut ctx, "Capital of France?")).unwrap();
    let second = block_on(pipeline.ask(&mut ctx, "Capital of Italy?")).unwrap();

    let requests = backend.requests();
    assert!(!system(&requests[0]).contains("confidence: number"));
    assert!(system(&requests[1]).contains("confidence: number // How sure you are of the answer"));
    assert_eq!(second.retries(), 1);
    assert_eq!(second.value["confidence"], 0.8);
    assert!(second.skipped.is_empty());

    let audit = pipeline.audit();
    let added = audit
        .entries()
        .iter()
        .find(|e| e.extension_id == "confidence-v1")
        .unwrap();
    assert_eq!(added.action, AuditAction::Added);
    assert_eq!(added.by, "proposals");
    assert_eq!(added.delta, confidence());

    assert_eq!(proposals.approved()[0].extension_id, "confidence-v1");
    let log = ctx.get::<ProposalLog>().unwrap();
    assert_eq!(log.0.len(), 1);
    assert_eq!((log.0[0].turn, &log.0[0].decision), (0, &Decision::Approve));
    insta::assert_snapshot!("approved_schema_section", schema_section(&requests[1]));
}

#[test]
fn rejected_extension_is_recorded_and_not_added() {
    let backend = Scripted::replies([propose("confidence-v1", confidence()), plain(json!({}))]);
    let proposals = Proposals::new(|p: &Proposal, ctx: &Context| {
        assert_eq!(ctx.turn, 0, "the approver sees the conversation");
        assert_eq!(p.extension_id, "confidence-v1");
        Decision::reject("not needed for this assistant")
    });
    let pipeline = pipeline(&backend, &proposals);
    let mut ctx = Context::default();
    block_on(pipeline.ask(&mut ctx, "Capital of France?")).unwrap();
    let second = block_on(pipeline.ask(&mut ctx, "Capital of Italy?")).unwrap();

    assert_eq!(second.retries(), 0);
    let requests = backend.requests();
    assert_eq!(schema_section(&requests[0]), schema_section(&requests[1]));
    assert!(actions(&pipeline, "confidence-v1").is_empty());
    assert!(proposals.approved().is_empty());

    let rejected = proposals.rejected();
    assert_eq!(rejected.len(), 1);
    assert_eq!(rejected[0].proposal.extension_id, "confidence-v1");
    assert_eq!(ctx.get::<ProposalLog>().unwrap().0, rejected);
    insta::assert_snapshot!("rejected_prompt", system(&requests[1]));
}

#[test]
fn approved_extension_that_breaks_the_schema_is_rolled_back() {
    let broken = json!({"properties": {"x": {"type": "strin"}}});
    let backend = Scripted::replies([
        propose("x-v1", broken.clone()),
        plain(json!({})),
        plain(json!({})),
        plain(json!({})),
    ]);
    let proposals = Proposals::new(|_: &Proposal, _: &Context| Decision::Approve);
    let pipeline = pipeline(&backend, &proposals);
    let mut ctx = Context::default();
    block_on(pipeline.ask(&mut ctx, "one")).unwrap();
    let second = block_on(pipeline.ask(&mut ctx, "two")).unwrap();
    let third = block_on(pipeline.ask(&mut ctx, "three")).unwrap();

    // The request still succeeds, with the schema as it was.
    let requests = backend.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(schema_section(&requests[0]), schema_section(&requests[1]));
    assert_eq!(schema_section(&requests[1]), schema_section(&requests[2]));
    assert_eq!(actions(&pipeline, "x-v1"), [AuditAction::Rejected]);
    let rejected = pipeline
        .audit()
        .entries()
        .iter()
        .find(|e| e.extension_id == "x-v1")
        .and_then(|e| e.reason.clone())
        .unwrap();
    assert!(rejected.contains("/properties/x/type"), "{rejected}");
    assert_eq!(second.skipped.len(), 1);
    assert!(second.skipped[0].starts_with("proposals/pre_schema: "));
    assert!(second.skipped[0].contains("x-v1"));
    assert_eq!(
        third.skipped,
        ["proposals/pre_schema: delta `x-v1` rejected"]
    );

    // Withdrawn, it is no longer offered.
    assert_eq!(proposals.withdraw("x-v1").map(|p| p.delta), Some(broken));
    let fourth = block_on(pipeline.ask(&mut ctx, "four")).unwrap();
    assert!(fourth.skipped.is_empty());
    assert_eq!(actions(&pipeline, "x-v1"), [AuditAction::Rejected]);
}

#[test]
fn withdrawing_an_approved_extension_removes_it() {
    let backend = Scripted::replies([
        propose("confidence-v1", confidence()),
        plain(json!({"confidence": 0.5})),
        plain(json!({})),
    ]);
    let proposals = Proposals::new(|_: &Proposal, _: &Context| Decision::Approve);
    let pipeline = pipeline(&backend, &proposals);
    let mut ctx = Context::default();
    for input in ["one", "two"] {
        block_on(pipeline.ask(&mut ctx, input)).unwrap();
    }
    proposals.withdraw("confidence-v1").unwrap();
    let third = block_on(pipeline.ask(&mut ctx, "three")).unwrap();
    assert_eq!(third.retries(), 0, "confidence is no longer required");
    assert_eq!(
        actions(&pipeline, "confidence-v1"),
        [AuditAction::Added, AuditAction::Removed]
    );
}

/// An approver that waits: the shape a vote sub-FSM takes.
struct Vote {
    yes: usize,
    voters: usize,
}

impl Approver for Vote {
    fn decide<'a>(&'a self, proposal: &'a Proposal, _ctx: &'a Context) -> BoxFuture<'a, Ruling> {
        Box::pin(async move {
            tokio::task::yield_now().await;
            if self.yes * 2 > self.voters {
                Decision::Approve.into()
            } else {
                Decision::reject(format!(
                    "{} of {} voted for `{}`",
                    self.yes, self.voters, proposal.extension_id
                ))
                .into()
            }
        })
    }
}

#[tokio::test]
async fn an_async_approver_decides() {
    let backend = Scripted::replies([propose("confidence-v1", confidence())]);
    let proposals = Proposals::new(Vote { yes: 1, voters: 3 });
    let pipeline = pipeline(&backend, &proposals);
    pipeline
        .ask(&mut Context::default(), "Capital of France?")
        .await
        .unwrap();
    assert_eq!(
        proposals.rejected()[0].decision,
        Decision::reject("1 of 3 voted for `confidence-v1`")
    );
}

#[test]
fn deferred_proposal_activates_once_resolved() {
    let backend = Scripted::replies([
        propose("confidence-v1", confidence()),
        plain(json!({})),
        plain(json!({"confidence": 1})),
    ]);
    let proposals = Proposals::new(|_: &Proposal, _: &Context| Decision::Defer);
    let pipeline = pipeline(&backend, &proposals);
    let mut ctx = Context::default();
    block_on(pipeline.ask(&mut ctx, "one")).unwrap();
    block_on(pipeline.ask(&mut ctx, "two")).unwrap();
    assert_eq!(proposals.pending().len(), 1);
    assert!(!system(&backend.requests()[1]).contains("confidence: number"));

    proposals
        .resolve("confidence-v1", Decision::Approve)
        .unwrap();
    block_on(pipeline.ask(&mut ctx, "three")).unwrap();
    assert!(system(&backend.requests()[2]).contains("confidence: number"));
}

#[test]
fn schema_delta() {
    let mut schema = Schema::default();
    Proposals::new(|_: &Proposal, _: &Context| Decision::Approve)
        .pre_schema(&mut schema, &Context::default())
        .unwrap();
    let deltas: Value = schema
        .deltas()
        .iter()
        .map(|d| (d.extension_id.clone(), d.delta.clone()))
        .collect();
    insta::assert_json_snapshot!("delta", deltas);
}

fn shared_registry() -> Arc<std::sync::Mutex<claij_schema::Registry>> {
    Arc::new(std::sync::Mutex::new(
        claij_schema::Registry::new(claij_schema::base()).unwrap(),
    ))
}

/// An approver that says what three voters cast.
struct Ballots(bool);

impl Approver for Ballots {
    fn decide<'a>(&'a self, _: &'a Proposal, _: &'a Context) -> BoxFuture<'a, Ruling> {
        let ballot = |voter: &str, approve| claij_schema::Ballot {
            voter: voter.to_owned(),
            approve,
            reason: format!("{voter}'s reason"),
        };
        let ballots = vec![ballot("a", true), ballot("b", self.0), ballot("c", self.0)];
        let decision = if self.0 {
            Decision::Approve
        } else {
            Decision::reject("2 of 3 voted against")
        };
        Box::pin(std::future::ready(Ruling::voted(decision, ballots)))
    }
}

#[test]
fn a_shared_registry_carries_an_approval_to_every_pipeline_with_its_ballots() {
    let registry = shared_registry();
    let proposals = Proposals::with_registry(Ballots(true), Arc::clone(&registry));
    proposals.set_proposer("proposer-model");
    let first = Scripted::replies([propose("confidence-v1", confidence())]);
    block_on(pipeline(&first, &proposals).ask(&mut Context::default(), "one")).unwrap();

    // Another pipeline (another model, another conversation) holding a clone asks with it at once.
    let other = Scripted::replies([plain(json!({"confidence": 0.5}))]);
    let answer =
        block_on(pipeline(&other, &proposals.clone()).ask(&mut Context::default(), "two")).unwrap();
    assert_eq!(answer.value["confidence"], 0.5);
    assert!(system(&other.requests()[0]).contains("confidence: number"));

    let registry = registry.lock().unwrap();
    let entry = &registry.audit().entries()[0];
    assert_eq!(
        (entry.action, entry.by.as_str(), entry.ballots.len()),
        (AuditAction::Added, "proposer-model", 3)
    );
    assert_eq!(proposals.log()[0].ballots, entry.ballots);
}

#[test]
fn a_vote_against_is_audited_as_declined_with_its_ballots() {
    let registry = shared_registry();
    let proposals = Proposals::with_registry(Ballots(false), Arc::clone(&registry));
    let backend = Scripted::replies([propose("confidence-v1", confidence()), plain(json!({}))]);
    let pipeline = pipeline(&backend, &proposals);
    let mut ctx = Context::default();
    block_on(pipeline.ask(&mut ctx, "one")).unwrap();
    block_on(pipeline.ask(&mut ctx, "two")).unwrap();
    assert!(system(&backend.requests()[1]).contains("`confidence-v1`: 2 of 3 voted against"));
    let registry = registry.lock().unwrap();
    assert!(registry.extensions().is_empty());
    let entry = &registry.audit().entries()[0];
    assert_eq!(entry.action, AuditAction::Declined);
    assert_eq!(entry.ballots.iter().filter(|b| b.approve).count(), 1);
}

#[test]
fn an_approved_delta_the_registry_refuses_is_shown_to_the_proposer() {
    let registry = shared_registry();
    let proposals = Proposals::with_registry(
        |_: &Proposal, _: &Context| Decision::Approve,
        registry.clone(),
    );
    // `answer` is a string in the base schema: a number contradicts it.
    let retyped = json!({"properties": {"answer": {"type": "number"}}});
    let backend = Scripted::replies([propose("answer-v2", retyped), plain(json!({}))]);
    let pipeline = pipeline(&backend, &proposals);
    let mut ctx = Context::default();
    block_on(pipeline.ask(&mut ctx, "one")).unwrap();
    block_on(pipeline.ask(&mut ctx, "two")).unwrap();
    let Decision::Reject { reason } = &proposals.log()[0].decision else {
        panic!("{:?}", proposals.log());
    };
    assert!(
        reason.starts_with("the schema registry refused it"),
        "{reason}"
    );
    assert!(system(&backend.requests()[1]).contains("`answer-v2`: the schema registry refused it"));
    assert!(proposals.approved().is_empty());
    let actions: Vec<AuditAction> = registry
        .lock()
        .unwrap()
        .audit()
        .entries()
        .iter()
        .map(|e| e.action)
        .collect();
    assert_eq!(actions, [AuditAction::Rejected]);
}

#[test]
fn extensions_restored_into_the_registry_are_asked_with_and_can_be_withdrawn() {
    let registry = shared_registry();
    registry
        .lock()
        .unwrap()
        .add(claij_schema::SchemaDelta::new(
            "confidence-v1",
            "earlier-run",
            confidence(),
        ))
        .unwrap();
    let proposals = Proposals::with_registry(
        |_: &Proposal, _: &Context| Decision::Approve,
        registry.clone(),
    );
    let backend = Scripted::replies([plain(json!({"confidence": 1})), plain(json!({}))]);
    let pipeline = pipeline(&backend, &proposals);
    let mut ctx = Context::default();
    block_on(pipeline.ask(&mut ctx, "one")).unwrap();
    assert!(system(&backend.requests()[0]).contains("confidence: number"));
    assert_eq!(proposals.approved()[0].extension_id, "confidence-v1");

    assert!(proposals.withdraw("confidence-v1").is_some());
    assert!(registry.lock().unwrap().extensions().is_empty());
    block_on(pipeline.ask(&mut ctx, "two")).unwrap();
    assert!(!system(&backend.requests()[1]).contains("confidence: number"));
}

#[test]
fn declines_saved_in_the_registry_are_shown_and_not_asked_again() {
    let registry = shared_registry();
    registry.lock().unwrap().decline(
        &claij_schema::SchemaDelta::new("confidence-v1", "earlier-run", confidence()),
        "voted down",
        Vec::new(),
    );
    let proposals = Proposals::with_registry(
        |_: &Proposal, _: &Context| -> Decision { panic!("asked again") },
        registry,
    );
    let backend = Scripted::replies([propose("confidence-v1", confidence())]);
    block_on(pipeline(&backend, &proposals).ask(&mut Context::default(), "one")).unwrap();
    assert!(system(&backend.requests()[0]).contains("- `confidence-v1`: voted down"));
    assert!(proposals.log().is_empty(), "seen before: ignored");
}
