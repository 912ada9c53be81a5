//! The compatibility matrix: the records `claij-suite run` prints, merged with those of earlier runs
//! ([`merge`]), gathered into models x suites cells, written as Markdown and JSON, plus the history
//! line. Pure functions.

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::plan::money;

/// One test's result, one JSON line of `claij-suite run`: a mirror of claij's
/// `matrix::Record` (xtask depends on no claij crate). Both sides are tested against
/// `crates/claij/src/matrix/record/sample.json`.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Record {
    pub model: String,
    pub suite: String,
    pub test: String,
    pub passed: bool,
    pub valid_first_try: bool,
    pub attempts: u64,
    pub retries: u64,
    pub tokens_in: u64,
    pub tokens_out: u64,
    /// `None` when some call's cost is unknown (a model without a price): never counted as 0.
    pub cost: Option<f64>,
    pub elapsed_ms: u64,
    pub detail: String,
    /// How the schema reached the model: `auto`, `native`, `tool` or `prompted`.
    pub mode: String,
    /// The most o200k_base tokens a request's schema rendering took (`None`: unknown, or a record
    /// older than the field).
    pub schema_tokens: Option<u64>,
    /// When the run that measured it was merged (`None` in `claij-suite run`'s lines).
    pub at: Option<String>,
}

/// One model against one suite.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Cell {
    pub model: String,
    pub suite: String,
    pub tests: u64,
    pub passed: u64,
    /// Tests whose every model call was valid on its first reply.
    pub valid_first_try: u64,
    pub attempts: u64,
    pub retries: u64,
    pub tokens_in: u64,
    pub tokens_out: u64,
    /// What the priced tests cost.
    pub cost: f64,
    /// Tests whose cost is unknown: the cell's cost is then unknown.
    pub unpriced: u64,
    pub elapsed_ms: u64,
}

/// Models x suites, in the order first seen.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Matrix {
    pub models: Vec<String>,
    pub suites: Vec<String>,
    pub cells: Vec<Cell>,
    /// Every record, for the failures' details.
    pub records: Vec<Record>,
}

impl Record {
    /// Parses one line; the error says which field is missing or of the wrong type.
    pub(super) fn parse(line: &str) -> Result<Record, String> {
        let value: Value =
            serde_json::from_str(line).map_err(|e| format!("not a JSON record: {e}"))?;
        Record::from_value(&value)
    }

    /// A record from its JSON object (a line, or an entry of the matrix's `records`).
    pub(super) fn from_value(value: &Value) -> Result<Record, String> {
        let text = |key: &str| {
            value[key]
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| format!("record without a string `{key}`"))
        };
        let flag = |key: &str| {
            value[key]
                .as_bool()
                .ok_or_else(|| format!("record without a boolean `{key}`"))
        };
        let count = |key: &str| {
            value[key]
                .as_u64()
                .ok_or_else(|| format!("record without a count `{key}`"))
        };
        Ok(Record {
            model: text("model")?,
            suite: text("suite")?,
            test: text("test")?,
            passed: flag("passed")?,
            valid_first_try: flag("valid_first_try")?,
            attempts: count("attempts")?,
            retries: count("retries")?,
            tokens_in: count("tokens_in")?,
            tokens_out: count("tokens_out")?,
            cost: match &value["cost"] {
                Value::Null if value.get("cost").is_some() => None,
                cost => Some(
                    cost.as_f64()
                        .ok_or("record without a number (or null, unknown) `cost`")?,
                ),
            },
            elapsed_ms: count("elapsed_ms")?,
            detail: text("detail")?,
            // Older records (and suites that pin none) ran in auto mode.
            mode: value["mode"].as_str().unwrap_or("auto").to_owned(),
            // Older records have none.
            schema_tokens: match value.get("schema_tokens") {
                None | Some(Value::Null) => None,
                Some(n) => Some(
                    n.as_u64()
                        .ok_or("record with a non-count `schema_tokens`")?,
                ),
            },
            at: value["at"].as_str().map(str::to_owned),
        })
    }

    /// A test that produced no record (claij failed before it): failed, with why.
    pub(super) fn missing(model: &str, suite: &str, test: &str, why: &str) -> Record {
        Record {
            model: model.to_owned(),
            suite: suite.to_owned(),
            test: test.to_owned(),
            passed: false,
            valid_first_try: false,
            attempts: 0,
            retries: 0,
            tokens_in: 0,
            tokens_out: 0,
            cost: Some(0.0),
            elapsed_ms: 0,
            detail: why.to_owned(),
            mode: "auto".to_owned(),
            schema_tokens: None,
            at: None,
        }
    }

    /// What a newer measurement replaces: the same model, suite and mode.
    fn key(&self) -> (&str, &str, &str) {
        (&self.model, &self.suite, &self.mode)
    }
}

/// The matrix after a run: `old`'s records, except that each (model, suite, mode) the run measured
/// has the run's records instead (in the place the old ones had, so rows and columns keep their
/// order); what the run did not measure stays, and what is new goes last.
pub(super) fn merge(old: &[Record], new: &[Record]) -> Vec<Record> {
    let measured = |key: (&str, &str, &str)| new.iter().any(|n| n.key() == key);
    let mut merged: Vec<Record> = Vec::with_capacity(old.len() + new.len());
    let mut placed: Vec<(&str, &str, &str)> = Vec::new();
    for record in old {
        let key = record.key();
        if !measured(key) {
            merged.push(record.clone());
        } else if !placed.contains(&key) {
            placed.push(key);
            merged.extend(new.iter().filter(|n| n.key() == key).cloned());
        }
    }
    for record in new {
        if !placed.contains(&record.key()) {
            merged.push(record.clone());
        }
    }
    merged
}

impl Cell {
    /// One record as a cell of one test (its model and suite left empty).
    fn of(r: &Record) -> Cell {
        Cell {
            tests: 1,
            passed: u64::from(r.passed),
            valid_first_try: u64::from(r.valid_first_try),
            attempts: r.attempts,
            retries: r.retries,
            tokens_in: r.tokens_in,
            tokens_out: r.tokens_out,
            cost: r.cost.unwrap_or(0.0),
            unpriced: u64::from(r.cost.is_none()),
            elapsed_ms: r.elapsed_ms,
            ..Cell::default()
        }
    }

    /// What the cell cost; `None` when some test's cost is unknown.
    pub(super) fn known_cost(&self) -> Option<f64> {
        (self.unpriced == 0).then_some(self.cost)
    }

    /// Adds `other`'s counts to this cell's.
    fn add(&mut self, other: &Cell) {
        self.tests += other.tests;
        self.passed += other.passed;
        self.valid_first_try += other.valid_first_try;
        self.attempts += other.attempts;
        self.retries += other.retries;
        self.tokens_in += other.tokens_in;
        self.tokens_out += other.tokens_out;
        self.cost += other.cost;
        self.unpriced += other.unpriced;
        self.elapsed_ms += other.elapsed_ms;
    }
}

impl Matrix {
    /// Gathers records into cells.
    pub(super) fn from_records(records: &[Record]) -> Matrix {
        let mut matrix = Matrix {
            records: records.to_vec(),
            ..Matrix::default()
        };
        for r in records {
            if !matrix.models.contains(&r.model) {
                matrix.models.push(r.model.clone());
            }
            if !matrix.suites.contains(&r.suite) {
                matrix.suites.push(r.suite.clone());
            }
            let index = match matrix
                .cells
                .iter()
                .position(|c| c.model == r.model && c.suite == r.suite)
            {
                Some(index) => index,
                None => {
                    matrix.cells.push(Cell {
                        model: r.model.clone(),
                        suite: r.suite.clone(),
                        ..Cell::default()
                    });
                    matrix.cells.len() - 1
                }
            };
            matrix.cells[index].add(&Cell::of(r));
        }
        matrix
    }

    pub(super) fn cell(&self, model: &str, suite: &str) -> Option<&Cell> {
        self.cells
            .iter()
            .find(|c| c.model == model && c.suite == suite)
    }

    /// Tests that failed.
    pub(super) fn failed(&self) -> usize {
        self.records.iter().filter(|r| !r.passed).count()
    }

    /// Everything summed.
    pub(super) fn total(&self) -> Cell {
        let mut total = Cell::default();
        for c in &self.cells {
            total.add(c);
        }
        total
    }

    /// `compat-matrix.md`.
    /// `command` is how to measure it again, for the header.
    pub(super) fn to_markdown(&self, at: &str, command: &str) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "# claij compatibility matrix\n");
        let _ = writeln!(
            out,
            "Written {at} by `cargo xtask integration`; measure again with `{command}` (a run \
             replaces the results of the models, suites and modes it measures and keeps the rest). \
             Each cell: tests passed/run, the share of tests whose every reply was valid on the first \
             try, retries, tokens (in+out), cost.\n"
        );
        let _ = writeln!(out, "| model | {} |", self.suites.join(" | "));
        let _ = writeln!(out, "|---|{}", "---|".repeat(self.suites.len()));
        for model in &self.models {
            let cells: Vec<String> = self
                .suites
                .iter()
                .map(|suite| self.cell(model, suite).map_or("-".to_owned(), cell_text))
                .collect();
            let _ = writeln!(out, "| {model} | {} |", cells.join(" | "));
        }
        let measured: Vec<String> = self
            .models
            .iter()
            .filter_map(|model| {
                let last = self
                    .records
                    .iter()
                    .filter(|r| &r.model == model)
                    .filter_map(|r| r.at.as_deref())
                    .max()?;
                Some(format!("{model} {last}"))
            })
            .collect();
        if !measured.is_empty() {
            let _ = writeln!(out, "\nLast measured: {}.", measured.join(", "));
        }
        let total = self.total();
        let _ = writeln!(
            out,
            "\nTotal: {}/{} passed, {} retries, {}+{} tokens, {}, {:.1}s.",
            total.passed,
            total.tests,
            total.retries,
            total.tokens_in,
            total.tokens_out,
            money(total.known_cost()),
            total.elapsed_ms as f64 / 1000.0
        );
        let failures: Vec<&Record> = self.records.iter().filter(|r| !r.passed).collect();
        if !failures.is_empty() {
            let _ = writeln!(out, "\n## Failures\n");
            for r in failures {
                let _ = writeln!(
                    out,
                    "- {} {}/{}: {}",
                    r.model,
                    r.suite,
                    r.test,
                    r.detail.replace('\n', " ").replace('|', "\\|")
                );
            }
        }
        out
    }

    /// `compat-matrix.json`.
    pub(super) fn to_json(&self, at: &str) -> Value {
        let cells: Vec<Value> = self.cells.iter().map(cell_json).collect();
        let records: Vec<Value> = self.records.iter().map(record_json).collect();
        json!({
            "at": at,
            "models": self.models,
            "suites": self.suites,
            "cells": cells,
            "total": total_json(&self.total()),
            "records": records,
        })
    }

    /// One line of `compat-history.jsonl`, for the matrix of one run: when, the totals, each cell
    /// and each record.
    pub(super) fn history_line(&self, at: &str) -> String {
        let cells: Vec<Value> = self.cells.iter().map(cell_json).collect();
        let records: Vec<Value> = self.records.iter().map(record_json).collect();
        json!({"at": at, "total": total_json(&self.total()), "cells": cells, "records": records})
            .to_string()
    }
}

/// `1/1 pass · 100% first try · 0 retries · 812+97 tok · $0`.
fn cell_text(c: &Cell) -> String {
    let status = if c.passed == c.tests { "pass" } else { "FAIL" };
    format!(
        "{}/{} {status} · {:.0}% first try · {} retries · {}+{} tok · {}",
        c.passed,
        c.tests,
        first_try_rate(c) * 100.0,
        c.retries,
        c.tokens_in,
        c.tokens_out,
        money(c.known_cost())
    )
}

/// The share of tests valid on the first try.
pub(super) fn first_try_rate(c: &Cell) -> f64 {
    if c.tests == 0 {
        0.0
    } else {
        c.valid_first_try as f64 / c.tests as f64
    }
}

fn cell_json(c: &Cell) -> Value {
    json!({
        "model": c.model,
        "suite": c.suite,
        "tests": c.tests,
        "passed": c.passed,
        "failed": c.tests - c.passed,
        "first_try_valid_rate": first_try_rate(c),
        "attempts": c.attempts,
        "retries": c.retries,
        "tokens_in": c.tokens_in,
        "tokens_out": c.tokens_out,
        "cost": c.known_cost(),
        "elapsed_ms": c.elapsed_ms,
    })
}

/// A cell summing everything has no model or suite.
fn total_json(c: &Cell) -> Value {
    let mut value = cell_json(c);
    if let Some(object) = value.as_object_mut() {
        object.remove("model");
        object.remove("suite");
    }
    value
}

fn record_json(r: &Record) -> Value {
    let mut value = json!({
        "model": r.model,
        "suite": r.suite,
        "test": r.test,
        "passed": r.passed,
        "valid_first_try": r.valid_first_try,
        "attempts": r.attempts,
        "retries": r.retries,
        "tokens_in": r.tokens_in,
        "tokens_out": r.tokens_out,
        "cost": r.cost,
        "elapsed_ms": r.elapsed_ms,
        "detail": r.detail,
        "mode": r.mode,
    });
    if let (Some(tokens), Some(object)) = (r.schema_tokens, value.as_object_mut()) {
        object.insert("schema_tokens".to_owned(), json!(tokens));
    }
    if let (Some(at), Some(object)) = (&r.at, value.as_object_mut()) {
        object.insert("at".to_owned(), json!(at));
    }
    value
}

/// `2026-11-26T05:12:09Z` for seconds since the epoch (UTC, proleptic Gregorian).
pub(super) fn utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60
    )
}
