//! The repair corpora of `tests/corpora` (jsonrepair's and json_repair's test vectors) run through
//! `extract::recover`, compared by value, with claij's deliberate policy differences listed.
//!
//! Measure with `cargo test -p claij-validation --test it corpus -- --nocapture`.

use std::collections::BTreeMap;

use claij_validation::Validator;
use claij_validation::coerce::coerce;
use claij_validation::extract::recover;
use serde_json::Value;

/// Passing cases of `jsonrepair.jsonl` last measured; the test fails below it.
const JSONREPAIR_FLOOR: usize = 407;
/// Passing cases of `json_repair_py.jsonl` last measured; the test fails below it.
const JSON_REPAIR_PY_FLOOR: usize = 303;

/// Cases where claij deliberately decides otherwise than the source project (see REPAIR_POLICY.md).
const POLICY: &[(&str, &str)] = &[
    // jsonrepair
    (
        "jsonrepair/should_add_remove_escape_characters/6",
        "an unknown escape keeps its backslash (`\\d` in a regular expression), jsonrepair drops it",
    ),
    (
        "jsonrepair/should_strip_jsonp_notation/14",
        "`callback {}`: extraction takes the object out of the prose",
    ),
    (
        "jsonrepair/should_throw_an_exception_in_case_of_non_repairable_issues/4",
        "`{\"a\":2}{}`: values back to back are all kept, empty ones dropped",
    ),
    (
        "jsonrepair/should_throw_an_exception_in_case_of_non_repairable_issues/6",
        "`{\"a\":2}foo`: prose after the value is cut off by extraction",
    ),
    (
        "jsonrepair/should_throw_an_exception_in_case_of_non_repairable_issues/7",
        "`foo [`: extraction takes the truncated array out of the prose",
    ),
    (
        "jsonrepair/should_throw_an_exception_in_case_of_non_repairable_issues/11",
        "a raw control character in a string is escaped, not rejected",
    ),
    (
        "jsonrepair/should_throw_an_exception_in_case_of_non_repairable_issues/12",
        "a raw control character in a string is escaped, not rejected",
    ),
    (
        "jsonrepair/should_repair_truncated_json/9",
        "`{\"foo\"`: a key cut off before its colon is dropped, not kept with null",
    ),
    (
        "jsonrepair/should_repair_truncated_json/10",
        "`{\"foo`: a key cut off before its colon is dropped, not kept with null",
    ),
    (
        "jsonrepair/should_repair_truncated_json/23",
        "`{\"s \\ud`: a key cut off before its colon is dropped, not kept with null",
    ),
    // json_repair
    (
        "json_repair_py/json_repair/multiple_jsons/5",
        "the first json fence is the value; json_repair gathers all fences",
    ),
    (
        "json_repair_py/json_repair/multiple_jsons/6",
        "values back to back become an array; json_repair keeps the last of same-shaped values",
    ),
    (
        "json_repair_py/json_repair/repair_json_skip_json_loads/2",
        "a missing value is null (jsonrepair), not \"\"",
    ),
    (
        "json_repair_py/parse_object/parse_object_edge_cases/31",
        "a missing value is null (jsonrepair), not \"\"",
    ),
    (
        "json_repair_py/parse_object/parse_object_merge_at_the_end/2",
        "a missing value is null (jsonrepair), not \"\"",
    ),
    (
        "json_repair_py/parse_string/parse_string/4",
        "a bare word is a string (jsonrepair), not nothing",
    ),
    (
        "json_repair_py/parse_string/escaping/1",
        "`'\"'` is the string `\"`, not nothing",
    ),
    (
        "json_repair_py/parse_string/parse_string_logs_invalid_code_fences/1",
        "valid JSON passes through unchanged",
    ),
    (
        "json_repair_py/parse_string/parse_boolean_or_null/1",
        "a bare `True` is true (jsonrepair), not \"\"",
    ),
    (
        "json_repair_py/parse_string/parse_boolean_or_null/2",
        "a bare `False` is false (jsonrepair), not \"\"",
    ),
    (
        "json_repair_py/parse_string/parse_boolean_or_null/3",
        "a bare `Null` is null (jsonrepair), not \"\"",
    ),
    (
        "json_repair_py/schema_repairer/repair_json_valid_empty_string_returns_empty/1",
        "`\"\"` is valid JSON: the empty string",
    ),
    // json_repair, schema-guided (claij: repair, then coercion towards the schema, then validation)
    (
        "json_repair_py/schema_guided_parse/schema_guides_missing_value_type_defaults/1",
        "missing values stay null: coercion never invents a type's default",
    ),
    (
        "json_repair_py/schema_guided_parse/schema_optional_default_is_inserted/1",
        "`default`s are not inserted: coercion never invents a value",
    ),
    (
        "json_repair_py/schema_guided_parse/schema_missing_required_property_raises/1",
        "a required property left out whose schema gives a `default` is set to it (a `default` fix): the schema's value, not an invented one",
    ),
    (
        "json_repair_py/schema_guided_parse/schema_salvage_mode_fills_required_with_safe_inference_sources/1",
        "missing required values are reported for a retry, never filled in",
    ),
    (
        "json_repair_py/schema_guided_parse/schema_salvage_mode_unwraps_root_single_item_array_and_fills_required_array/2",
        "missing required values are reported for a retry, never filled in",
    ),
    (
        "json_repair_py/schema_guided_parse/schema_salvage_mode_drops_invalid_array_items/2",
        "invalid items are reported for a retry, not dropped: no silent data loss",
    ),
    (
        "json_repair_py/schema_guided_parse/schema_salvage_mode_maps_list_to_object_when_unambiguous/2",
        "a list is not mapped onto object keys by position: a guess, reported for a retry instead",
    ),
    (
        "json_repair_py/schema_guided_parse/schema_salvage_mode_maps_set_like_object_members_to_null_valued_keys/2",
        "a list is not turned into keys with null values: a guess, reported for a retry instead",
    ),
    (
        "json_repair_py/schema_guided_parse/schema_salvage_repairs_malformed_double_serialized_object_string/1",
        "JSON held in a string is always salvaged where the schema wants an object (json_repair: only in salvage mode)",
    ),
    (
        "json_repair_py/schema_guided_parse/schema_salvage_repairs_malformed_double_serialized_array_string/1",
        "JSON held in a string is always salvaged where the schema wants an array (json_repair: only in salvage mode)",
    ),
    (
        "json_repair_py/schema_guided_parse/schema_applies_to_valid_json_without_skip_json_loads/3",
        "`true` where a string is expected is coerced to \"true\", not emptied",
    ),
    (
        "json_repair_py/schema_guided_parse/schema_skip_json_loads_keeps_parser_path_for_scalars/1",
        "`True` where a string is expected is coerced to \"true\", not emptied",
    ),
    (
        "json_repair_py/schema_guided_parse/schema_skip_json_loads_keeps_parser_path_for_scalars/2",
        "`\"1\"` where an integer is expected is coerced to 1",
    ),
    (
        "json_repair_py/schema_guided_parse/schema_applies_to_valid_empty_string/1",
        "`\"\"` is valid JSON and a valid string",
    ),
];

#[test]
fn jsonrepair_corpus() {
    let report = run("jsonrepair.jsonl");
    report.print("jsonrepair.jsonl");
    assert!(
        report.agreed_rate() >= 95.0,
        "jsonrepair.jsonl: {:.1}%",
        report.agreed_rate()
    );
    assert!(
        report.passed >= JSONREPAIR_FLOOR,
        "jsonrepair.jsonl: {} passed, floor {JSONREPAIR_FLOOR}",
        report.passed
    );
    assert!(
        report.stale_policy.is_empty(),
        "policy entries that now pass: {:?}",
        report.stale_policy
    );
}

#[test]
fn json_repair_py_corpus() {
    let report = run("json_repair_py.jsonl");
    report.print("json_repair_py.jsonl");
    assert!(
        report.agreed_rate() >= 95.0,
        "json_repair_py.jsonl: {:.1}%",
        report.agreed_rate()
    );
    assert!(
        report.passed >= JSON_REPAIR_PY_FLOOR,
        "json_repair_py.jsonl: {} passed, floor {JSON_REPAIR_PY_FLOOR}",
        report.passed
    );
    assert!(
        report.stale_policy.is_empty(),
        "policy entries that now pass: {:?}",
        report.stale_policy
    );
}

/// One line of a corpus.
struct Case {
    id: String,
    input: String,
    expected: Value,
    expects_error: bool,
    /// For json_repair's schema-guided cases: the schema, applied by coercion and validation.
    schema: Option<Value>,
    skip: Option<&'static str>,
}

#[derive(Default)]
struct Report {
    total: usize,
    passed: usize,
    /// Cases not run, by reason.
    skipped: BTreeMap<&'static str, usize>,
    /// Documented policy differences.
    policy: Vec<String>,
    /// Policy entries whose case passes (the list needs updating).
    stale_policy: Vec<String>,
    /// Failing ids with what we got.
    failed: Vec<(String, String)>,
}

impl Report {
    fn considered(&self) -> usize {
        self.total - self.skipped.values().sum::<usize>()
    }

    /// The pass rate over the cases where claij has no deliberate policy difference (the target: 95%).
    fn agreed_rate(&self) -> f64 {
        let agreed = self.considered() - self.policy.len();
        100.0 * self.passed as f64 / agreed.max(1) as f64
    }

    #[allow(clippy::print_stderr, reason = "the report is the output")]
    fn print(&self, name: &str) {
        let considered = self.considered();
        let rate = |n: usize| 100.0 * n as f64 / considered.max(1) as f64;
        eprintln!(
            "{name}: {}/{considered} passed ({:.1}%), {} policy differences, {:.1}% of the cases without one, {} failed, {} skipped {:?}",
            self.passed,
            rate(self.passed),
            self.policy.len(),
            self.agreed_rate(),
            self.failed.len(),
            self.total - considered,
            self.skipped,
        );
        for (id, got) in &self.failed {
            let got: String = got.chars().take(300).collect();
            eprintln!("  FAILED {id}: {got}");
        }
    }
}

fn run(file: &str) -> Report {
    let mut report = Report::default();
    for case in load(file) {
        report.total += 1;
        if let Some(reason) = case.skip {
            *report.skipped.entry(reason).or_default() += 1;
            continue;
        }
        let result = match &case.schema {
            None => recover(&case.input)
                .map(|r| r.value)
                .map_err(|e| e.to_string()),
            Some(schema) => guided(&case.input, schema),
        };
        let pass = match &result {
            Ok(value) => !case.expects_error && same(value, &case.expected),
            Err(_) => case.expects_error,
        };
        let policy = POLICY.iter().any(|(id, _)| *id == case.id);
        match (pass, policy) {
            (true, false) => report.passed += 1,
            (true, true) => report.stale_policy.push(case.id),
            (false, true) => report.policy.push(case.id),
            (false, false) => {
                let got = match result {
                    Ok(value) => format!("got {value} expected {}", show_expected(&case)),
                    Err(error) => format!("error {error}, expected {}", show_expected(&case)),
                };
                report.failed.push((case.id, got));
            }
        }
    }
    report
}

/// Schema-guided recovery as claij does it: extract and repair, coerce towards the schema, then the
/// value must validate (an invalid schema or value is the error json_repair raises).
fn guided(input: &str, schema: &Value) -> Result<Value, String> {
    let validator = Validator::new(schema).map_err(|e| e.to_string())?;
    let value = recover(input).map_err(|e| e.to_string())?.value;
    let (value, _) = coerce(value, schema);
    match validator.validate(&value) {
        Ok(()) => Ok(value),
        Err(violations) => Err(format!(
            "{} violations, first: {}",
            violations.len(),
            violations[0]
        )),
    }
}

fn show_expected(case: &Case) -> String {
    if case.expects_error {
        "an error".to_owned()
    } else {
        case.expected.to_string()
    }
}

fn load(file: &str) -> Vec<Case> {
    let text = crate::fixtures::text(&format!("crates/validation/tests/corpora/{file}"));
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let row: Value = serde_json::from_str(line).unwrap();
            let options = row.get("options").cloned().unwrap_or(Value::Null);
            let schema = row.get("schema").cloned();
            let skip = if options.get("strict") == Some(&Value::Bool(true)) {
                Some("strict mode (claij has none)")
            } else if schema.is_none() && options.get("schema_repair_mode").is_some() {
                Some("schema_repair_mode without a schema (API misuse)")
            } else {
                None
            };
            Case {
                id: row["id"].as_str().unwrap().to_owned(),
                input: row["input"].as_str().unwrap().to_owned(),
                expected: row["expected"].clone(),
                expects_error: row["expects_error"].as_bool().unwrap(),
                schema,
                skip,
            }
        })
        .collect()
}

/// Equality of values, numbers compared by value (`1` equals `1.0`: the corpora went through parsers
/// that do not keep the distinction).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(xs), Value::Array(ys)) => {
            xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| same(x, y))
        }
        (Value::Object(xs), Value::Object(ys)) => {
            xs.len() == ys.len()
                && xs
                    .iter()
                    .all(|(k, x)| ys.get(k).is_some_and(|y| same(x, y)))
        }
        _ => a == b,
    }
}
