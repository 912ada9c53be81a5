//! Tests of [`AppliedLog`]: each change once, rebuilt from its entries.

use std::time::{Duration, SystemTime};

use serde_json::json;

use super::*;

fn at(s: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000 + s)
}

fn delta(id: &str, by: &str, field: &str, t: u64) -> SchemaDelta {
    SchemaDelta::new(id, by, json!({"properties": {field: {"type": "string"}}})).at(at(t))
}

/// `(action, extension, by, at)` of each entry.
fn lines(entries: &[AuditEntry]) -> Vec<(AuditAction, String, String, SystemTime)> {
    entries
        .iter()
        .map(|e| (e.action, e.extension_id.clone(), e.by.clone(), e.at))
        .collect()
}

#[test]
fn each_change_is_recorded_once() {
    let summary = delta("summary-v1", "memory", "summary", 0);
    let eval = delta("eval-v1", "eval", "eval", 0);
    let mut log = AppliedLog::new();
    for turn in 0..5 {
        // Later turns offer the same deltas, stamped later: nothing new.
        let now = [
            delta("summary-v1", "memory", "summary", turn),
            delta("eval-v1", "eval", "eval", turn),
        ];
        let new = log.record(&now, at(turn));
        assert_eq!(new.len(), if turn == 0 { 2 } else { 0 }, "turn {turn}");
    }
    assert_eq!(log.active(), [summary.clone(), eval.clone()]);
    // eval changes, summary goes.
    let eval2 = delta("eval-v1", "eval", "code", 10);
    let new = log.record(std::slice::from_ref(&eval2), at(10));
    assert_eq!(
        lines(&new),
        [
            (
                AuditAction::Removed,
                "summary-v1".into(),
                "memory".into(),
                at(10)
            ),
            (
                AuditAction::Removed,
                "eval-v1".into(),
                "eval".into(),
                at(10)
            ),
            (AuditAction::Added, "eval-v1".into(), "eval".into(), at(10)),
        ]
    );
    assert_eq!(log.audit().len(), 5);
    // The log rebuilt from its entries has the same active set.
    let rebuilt = AppliedLog::from_entries(log.audit().entries().to_vec());
    assert_eq!(rebuilt, log);
    let text = serde_json::to_value(&log).unwrap();
    assert_eq!(serde_json::from_value::<AppliedLog>(text).unwrap(), log);
}

#[test]
fn another_author_is_a_change() {
    let mut log = AppliedLog::new();
    log.record(&[delta("x-v1", "proposals", "x", 0)], at(0));
    let new = log.record(&[delta("x-v1", "model", "x", 1)], at(1));
    assert_eq!(
        lines(&new),
        [
            (
                AuditAction::Removed,
                "x-v1".into(),
                "proposals".into(),
                at(1)
            ),
            (AuditAction::Added, "x-v1".into(), "model".into(), at(1)),
        ]
    );
}
