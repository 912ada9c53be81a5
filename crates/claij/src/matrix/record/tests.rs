//! The record's JSON form: what xtask's mirror is tested against.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::{Matrix, Record};

/// The line xtask's tests parse (`xtask/src/integration/tests.rs` reads the same file).
const SAMPLE: &str = include_str!("sample.json");

fn sample() -> Record {
    Record {
        model: "local".to_owned(),
        suite: "retry".to_owned(),
        test: "strict-word/tool".to_owned(),
        passed: true,
        valid_first_try: false,
        attempts: 3,
        retries: 2,
        tokens_in: 812,
        tokens_out: 97,
        cost: Some(0.0125),
        elapsed_ms: 4120,
        detail: "valid after 2 retries".to_owned(),
        mode: "tool".to_owned(),
        schema_tokens: Some(57),
        at: None,
    }
}

#[test]
fn the_written_line_is_the_sample_xtask_reads() {
    assert_eq!(serde_json::to_string(&sample()).unwrap(), SAMPLE.trim_end());
    assert_eq!(serde_json::from_str::<Record>(SAMPLE).unwrap(), sample());
}

#[test]
fn an_unknown_cost_is_written_as_null_not_0() {
    let record = Record {
        cost: None,
        ..sample()
    };
    let line = serde_json::to_string(&record).unwrap();
    assert!(line.contains(r#""cost":null"#), "{line}");
    assert_eq!(serde_json::from_str::<Record>(&line).unwrap(), record);
}

#[test]
fn a_record_without_a_mode_ran_in_auto_mode() {
    let mut value: serde_json::Value = serde_json::from_str(SAMPLE).unwrap();
    value.as_object_mut().unwrap().remove("mode");
    let record: Record = serde_json::from_value(value).unwrap();
    assert_eq!(record.mode, "auto");
}

#[test]
fn a_record_older_than_schema_tokens_reads_without_them() {
    let mut value: serde_json::Value = serde_json::from_str(SAMPLE).unwrap();
    value.as_object_mut().unwrap().remove("schema_tokens");
    let record: Record = serde_json::from_value(value).unwrap();
    assert_eq!(record.schema_tokens, None);
    let line = serde_json::to_string(&record).unwrap();
    assert!(!line.contains("schema_tokens"), "{line}");
}

#[test]
fn a_record_missing_a_field_is_refused_naming_it() {
    let mut value: serde_json::Value = serde_json::from_str(SAMPLE).unwrap();
    value.as_object_mut().unwrap().remove("retries");
    let e = serde_json::from_value::<Record>(value).unwrap_err();
    assert!(e.to_string().contains("missing field `retries`"), "{e}");
}

#[test]
fn a_matrix_reads_its_records_and_ignores_the_rest() {
    let text = format!(
        r#"{{"at": "now", "cells": [], "records": [{}]}}"#,
        SAMPLE.trim_end()
    );
    let matrix: Matrix = serde_json::from_str(&text).unwrap();
    assert_eq!(matrix.records, [sample()]);
}
