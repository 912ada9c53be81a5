//! One test's result, the record `claij-suite run` prints as a JSON line and the compatibility
//! matrix (`compat-matrix.json`, written by `cargo xtask integration`) keeps under `records`: one
//! serde type for the writer and every reader. xtask depends on no claij crate, so it keeps a
//! mirror (`xtask/src/integration/matrix.rs`); `record/sample.json` is the line both sides are
//! tested against.

use serde::{Deserialize, Serialize};

/// One test's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The model as `--llm` named it.
    pub model: String,
    /// The suite (`memory`, `retry`, ...).
    pub suite: String,
    /// The test (`strict-word/tool`, ...).
    pub test: String,
    /// Whether the content was right.
    pub passed: bool,
    /// Whether every model call's first reply was valid.
    pub valid_first_try: bool,
    /// Model calls, retries included.
    pub attempts: u64,
    /// Retries after invalid replies.
    pub retries: u64,
    /// Tokens sent, over every model call.
    pub tokens_in: u64,
    /// Tokens received, over every model call.
    pub tokens_out: u64,
    /// In US dollars: the providers' reported costs, else the usage at the model's price; `null`
    /// when some call's cost is unknown (a model without a price), never counted as 0.
    pub cost: Option<f64>,
    /// The test's wall time, in milliseconds.
    pub elapsed_ms: u64,
    /// Why it passed or failed, one line.
    pub detail: String,
    /// How the schema reached the model (`auto`, or the mode a test pins): `claij models` compares
    /// first-try validity across modes to choose one per model. Older records have none: auto.
    #[serde(default = "auto")]
    pub mode: String,
    /// The most o200k_base tokens the schema's rendering took in any of the test's requests
    /// (`claij::tokens::schema_tokens`); `None` when unknown: no request carried a schema, the
    /// suite does not see the requests (a state machine's), or the record is older than the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_tokens: Option<u64>,
    /// When `cargo xtask integration` merged it into the matrix (`claij-suite run` writes none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
}

/// The part of a compatibility matrix file the binary reads.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct Matrix {
    /// Every test's record.
    pub records: Vec<Record>,
}

fn auto() -> String {
    "auto".to_owned()
}

#[cfg(test)]
mod tests;
