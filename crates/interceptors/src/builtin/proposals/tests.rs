//! Tests of proposal vetting, the ledger and the declined-proposals prompt.

use futures_executor::block_on;

use super::*;

fn proposal(id: &str, delta: Value) -> Proposal {
    Proposal {
        extension_id: id.to_owned(),
        reason: "because".to_owned(),
        delta,
    }
}

/// Checks what [`check_delta`] says about a proposal (`Ok(())` or the reason).
#[track_caller]
fn check(id: &str, delta: Value, expected: Result<(), &str>) {
    assert_eq!(
        check_delta(&proposal(id, delta)),
        expected.map_err(str::to_owned)
    );
}

#[test]
fn vetting() {
    let confidence = json!({"properties": {"confidence": {"type": "number"}}});
    check("confidence-v1", confidence.clone(), Ok(()));
    check(
        "c.v2_x",
        json!({"properties": {"c": {}}, "required": ["c"]}),
        Ok(()),
    );
    check(
        "Confidence",
        confidence.clone(),
        Err("extension id `Confidence` is not a short lowercase id like confidence-v1"),
    );
    check(
        "",
        confidence.clone(),
        Err("extension id `` is not a short lowercase id like confidence-v1"),
    );
    check(
        &"a".repeat(65),
        confidence.clone(),
        Err(&format!(
            "extension id `{}` is not a short lowercase id like confidence-v1",
            "a".repeat(65)
        )),
    );
    check(
        "proposals-v1",
        confidence,
        Err("extension id `proposals-v1` is reserved"),
    );
    check("x", json!([]), Err("the delta is not an object"));
    check(
        "x",
        json!({"properties": {"x": {}}, "type": "array"}),
        Err("the delta may only add `properties` and `required`, not `type`"),
    );
    check(
        "x",
        json!({"properties": {}}),
        Err("the delta's `properties` must map new field names to schemas"),
    );
    check(
        "x",
        json!({"properties": {"x": true}}),
        Err("the delta's `properties` must map new field names to schemas"),
    );
    check(
        "x",
        json!({"properties": {"": {"type": "string"}}}),
        Err("a proposed field needs a name: `\"\"` is not one"),
    );
    check(
        "x",
        json!({"properties": {"x": {}}, "required": ["y"]}),
        Err("`y` is required but not among the proposed properties"),
    );
    check(
        "x",
        json!({"properties": {"x": {}}, "required": [1]}),
        Err("the delta's `required` must be a list of field names"),
    );
    check(
        "x",
        json!({"properties": {"x": {}}, "required": "x"}),
        Err("the delta's `required` must be a list of field names"),
    );
}

fn reply(id: &str, delta: Value) -> Value {
    json!({"answer": "a", "state": "s", "proposed_extension": {"extension_id": id, "reason": "r", "delta": delta}})
}

fn field(name: &str) -> Value {
    json!({"properties": {name: {"type": "string"}}})
}

#[test]
fn repeated_and_conflicting_proposals() {
    let proposals = Proposals::new(|p: &Proposal, _: &Context| {
        if p.extension_id.starts_with("ok") {
            Decision::Approve
        } else {
            Decision::reject("no")
        }
    });
    let mut ctx = Context::default();
    for value in [
        reply("ok-v1", field("a")),
        reply("ok-v1", field("a")), // the same again: ignored
        reply("ok-v1", field("b")), // the same id, another delta: taken
        reply("no-v1", field("c")),
        reply("no-v1", field("c")), // rejected before: ignored
        json!({"answer": "no proposal"}),
        json!({"proposed_extension": null}),
    ] {
        block_on(proposals.consider(&value, &mut ctx));
    }
    let decisions: Vec<(String, Decision)> = proposals
        .log()
        .into_iter()
        .map(|r| (r.proposal.extension_id, r.decision))
        .collect();
    assert_eq!(
        decisions,
        [
            ("ok-v1".to_owned(), Decision::Approve),
            (
                "ok-v1".to_owned(),
                Decision::reject("extension id `ok-v1` is already taken; propose a new id")
            ),
            ("no-v1".to_owned(), Decision::reject("no")),
        ]
    );
    assert_eq!(ctx.get::<ProposalLog>().map(|l| l.0.len()), Some(3));
    assert_eq!(proposals.approved().len(), 1);
    assert_eq!(proposals.rejected().len(), 2);
}

#[test]
fn a_proposal_made_outside_a_reply_goes_to_the_approver_under_its_proposer() {
    let registry = Arc::new(Mutex::new(
        Registry::new(json!({"type": "object"})).unwrap(),
    ));
    let proposals = Proposals::with_registry(
        |p: &Proposal, _: &Context| {
            if p.extension_id.starts_with("ok") {
                Decision::Approve
            } else {
                Decision::reject("no")
            }
        },
        Arc::clone(&registry),
    );
    proposals.set_proposer("smol");
    let mut ctx = Context::default();
    let record = block_on(proposals.propose(proposal("ok-v1", field("a")), "meta-debug", &mut ctx));
    assert_eq!(record.map(|r| r.decision), Some(Decision::Approve));
    // The same again is not asked again.
    let again = block_on(proposals.propose(proposal("ok-v1", field("a")), "x", &mut ctx));
    assert_eq!(again, None);
    let record = block_on(proposals.propose(proposal("no-v1", field("b")), "meta-debug", &mut ctx));
    assert_eq!(record.map(|r| r.decision), Some(Decision::reject("no")));
    // A reply's proposal is still the conversation's model's.
    block_on(proposals.consider(&reply("ok-v2", field("c")), &mut ctx));
    let registry = registry.lock().unwrap();
    let by: Vec<(&str, &str)> = registry
        .audit()
        .entries()
        .iter()
        .map(|e| (e.extension_id.as_str(), e.by.as_str()))
        .collect();
    assert_eq!(
        by,
        [
            ("ok-v1", "meta-debug"),
            ("no-v1", "meta-debug"),
            ("ok-v2", "smol")
        ]
    );
    assert_eq!(ctx.get::<ProposalLog>().map(|l| l.0.len()), Some(3));
    // The empty field name is refused without asking.
    drop(registry);
    let record = block_on(proposals.propose(
        proposal("ok-v3", json!({"properties": {"": {}}})),
        "meta-debug",
        &mut ctx,
    ));
    assert!(
        matches!(record.map(|r| r.decision), Some(Decision::Reject { reason }) if reason.contains("needs a name"))
    );
}

#[test]
fn malformed_proposals_are_rejected_without_asking() {
    let proposals = Proposals::new(|_: &Proposal, _: &Context| -> Decision {
        panic!("the approver must not be asked")
    });
    let mut ctx = Context::default();
    block_on(proposals.consider(&json!({"proposed_extension": "confidence"}), &mut ctx));
    block_on(proposals.consider(&reply("x", json!({"type": "array"})), &mut ctx));
    let rejected = proposals.rejected();
    assert_eq!(rejected.len(), 2);
    assert!(
        matches!(&rejected[0].decision, Decision::Reject { reason } if reason.starts_with("malformed proposal"))
    );
}

#[test]
fn deferred_proposals_wait_for_resolve() {
    let proposals = Proposals::new(|_: &Proposal, _: &Context| Decision::Defer);
    let mut ctx = Context::default();
    ctx.turn = 4;
    block_on(proposals.consider(&reply("a-v1", field("a")), &mut ctx));
    block_on(proposals.consider(&reply("b-v1", field("b")), &mut ctx));
    block_on(proposals.consider(&reply("a-v1", field("a")), &mut ctx)); // still pending: ignored
    assert_eq!(proposals.pending().len(), 2);
    assert!(proposals.approved().is_empty());

    assert_eq!(proposals.resolve("a-v1", Decision::Defer), None);
    assert_eq!(proposals.resolve("zzz", Decision::Approve), None);
    let record = proposals.resolve("a-v1", Decision::Approve).unwrap();
    assert_eq!(record.turn, 4);
    assert_eq!(proposals.approved()[0].extension_id, "a-v1");
    proposals.resolve("b-v1", Decision::reject("later"));
    assert!(proposals.pending().is_empty());
    assert_eq!(proposals.log().len(), 4); // two deferrals, then their resolutions

    assert_eq!(
        proposals.withdraw("a-v1").map(|p| p.extension_id),
        Some("a-v1".into())
    );
    assert_eq!(proposals.withdraw("a-v1"), None);
    assert!(proposals.approved().is_empty());
}

#[test]
fn the_prompt_lists_the_last_ten_rejections() {
    let mut ledger = Ledger::default();
    assert_eq!(ledger.declined_section(), None);
    ledger.decide(
        0,
        proposal("", json!(1)),
        Decision::reject("malformed").into(),
    );
    assert_eq!(ledger.declined_section(), None, "no id to name");
    for i in 0..12 {
        ledger.decide(
            0,
            proposal(&format!("p{i}"), json!({})),
            Decision::reject(format!("r{i}")).into(),
        );
    }
    ledger.decide(0, proposal("ok", json!({})), Decision::Approve.into());
    let section = ledger.declined_section().unwrap();
    assert!(section.starts_with(
        "Schema extensions you proposed that were declined; do not propose them again:\n- `p2`: r2\n"
    ));
    assert!(section.ends_with("- `p11`: r11"));
    assert_eq!(section.lines().count(), 11);
}
