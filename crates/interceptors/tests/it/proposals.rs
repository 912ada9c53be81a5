//! Tests of the `proposals` interceptor: approved, rejected and rolled-back extensions, through the
//! pipeline's schema registry and audit log.

use std::sync::Arc;

use claij_backends::testing::Scripted;
use claij_backends::{BoxFuture, ChatRequest};
use claij_interceptors::builtin::proposals::{
    Approver, Decision, Proposal, ProposalLog, Proposals,
};
use claij_interceptors::{Chain, Config, Context, Interceptor, OnError, Pipeline, Schema};
use claij_schema::AuditAction;
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
    fn decide<'a>(&'a self, proposal: &'a Proposal, _ctx: &'a Context) -> BoxFuture<'a, Decision> {
        Box::pin(async move {
            tokio::task::yield_now().await;
            if self.yes * 2 > self.voters {
                Decision::Approve
            } else {
                Decision::reject(format!(
                    "{} of {} voted for `{}`",
                    self.yes, self.voters, proposal.extension_id
                ))
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
