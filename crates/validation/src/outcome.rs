//! The one entry point: from an LLM reply to a valid value, an invalid one with its violations, or
//! the reason no JSON was found.

use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

use crate::fix::Fix;
use crate::validator::Validator;
use crate::violation::Violation;
use crate::{coerce, extract, repair};

/// What became of a reply.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
#[must_use]
pub enum Outcome {
    /// The reply holds a value that satisfies the schema, after the fixes listed.
    Valid {
        /// The value.
        value: Value,
        /// What extraction, repair and coercion changed, in order.
        fixes: Vec<Fix>,
    },
    /// The reply holds JSON, but it does not satisfy the schema even after coercion.
    Invalid {
        /// The best value found (the first complete one).
        value: Value,
        /// What is still wrong with it.
        violations: Vec<Violation>,
        /// What extraction, repair and coercion changed, in order.
        fixes: Vec<Fix>,
    },
    /// Nothing in the reply could be read as JSON.
    NoJson {
        /// Why, briefly.
        reason: String,
    },
}

impl Outcome {
    /// Whether the outcome is [`Outcome::Valid`].
    pub fn is_valid(&self) -> bool {
        matches!(self, Outcome::Valid { .. })
    }

    /// The value, valid or not.
    pub fn value(&self) -> Option<&Value> {
        match self {
            Outcome::Valid { value, .. } | Outcome::Invalid { value, .. } => Some(value),
            Outcome::NoJson { .. } => None,
        }
    }

    /// The fixes made.
    pub fn fixes(&self) -> &[Fix] {
        match self {
            Outcome::Valid { fixes, .. } | Outcome::Invalid { fixes, .. } => fixes,
            Outcome::NoJson { .. } => &[],
        }
    }

    /// The violations left (empty unless invalid).
    pub fn violations(&self) -> &[Violation] {
        match self {
            Outcome::Invalid { violations, .. } => violations,
            _ => &[],
        }
    }
}

/// Why a candidate could not be read as JSON (the last one decides [`Outcome::NoJson`]'s reason).
enum Unread {
    /// It is prose that merely looked like a candidate.
    Prose,
    /// Repair gave up on it.
    Repair(crate::repair::RepairError),
}

/// Extracts, repairs, coerces and validates a reply.
///
/// Every JSON value found in the reply is tried in order of preference, and the first that validates
/// as it is wins. Otherwise [`coerce::align`] decides: of the values that validate once coerced, the
/// one that needed the fewest coercions (two equally good with different values: neither); else, for
/// a scalar schema, the reply itself read as that value; else the value with the fewest violations.
///
/// ```
/// use claij_validation::{Outcome, Validator, process};
///
/// let validator = Validator::new(&claij_schema::base())?;
/// let reply = "Sure! ```json\n{'answer': 'Paris', 'state': 'done',}\n```";
/// match process(reply, &validator) {
///     Outcome::Valid { value, fixes } => {
///         assert_eq!(value["answer"], "Paris");
///         assert!(!fixes.is_empty());
///     }
///     other => panic!("{other:?}"),
/// }
/// # Ok::<(), claij_validation::Error>(())
/// ```
pub fn process(reply: &str, validator: &Validator) -> Outcome {
    process_timed(reply, validator).0
}

/// Time spent in each stage of [`process`], for metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct StageTimes {
    /// Finding the JSON candidates in the reply.
    pub extraction: Duration,
    /// Parsing and repairing candidates.
    pub repair: Duration,
    /// Coercing values that failed validation.
    pub coercion: Duration,
    /// Validating.
    pub validation: Duration,
}

/// [`process`], also returning how long each stage took.
pub fn process_timed(reply: &str, validator: &Validator) -> (Outcome, StageTimes) {
    let mut times = StageTimes::default();
    let mut clock = Instant::now();
    let mut lap = |slot: &mut Duration| {
        let now = Instant::now();
        *slot += now - clock;
        clock = now;
    };
    // The common case, a reply that is the JSON value and valid: parsed once, validated once. A
    // reply with anything around the value (or an invalid value) goes the whole way below.
    // An invalid one is the first candidate below (the whole reply, trimmed): it is not read or
    // validated again.
    let mut whole_invalid = None;
    if let Ok(value) = serde_json::from_str::<Value>(reply) {
        lap(&mut times.repair);
        let valid = validator.is_valid(&value);
        lap(&mut times.validation);
        if valid {
            return (
                Outcome::Valid {
                    value,
                    fixes: Vec::new(),
                },
                times,
            );
        }
        whole_invalid = Some(value);
    }
    let candidates = extract::candidates(reply);
    lap(&mut times.extraction);
    let mut recovered = Vec::new();
    let mut last_error: Option<Unread> = None;
    for (index, candidate) in candidates.into_iter().enumerate() {
        if index == 0
            && let Some(value) = whole_invalid.take()
        {
            recovered.push((value, candidate.fixes));
            continue;
        }
        if extract::is_prose(&candidate.text) {
            last_error.get_or_insert(Unread::Prose);
            lap(&mut times.extraction);
            continue;
        }
        let repaired = repair::repair(&candidate.text);
        lap(&mut times.repair);
        let repaired = match repaired {
            Ok(r) => r,
            Err(e) => {
                last_error = Some(Unread::Repair(e));
                continue;
            }
        };
        let mut fixes = candidate.fixes;
        fixes.extend(repaired.fixes);
        let value = repaired.value;
        let valid = validator.is_valid(&value);
        lap(&mut times.validation);
        if valid {
            return (Outcome::Valid { value, fixes }, times);
        }
        recovered.push((value, fixes));
    }
    // No value validates as it is: coercion decides among them (and the reply itself, for a
    // scalar schema), each value validated once more at most.
    let aligned = coerce::align(reply, recovered, validator);
    lap(&mut times.coercion);
    let outcome = aligned.unwrap_or_else(|| Outcome::NoJson {
        reason: match last_error {
            Some(Unread::Prose) => "the reply is prose without a JSON value".to_owned(),
            Some(Unread::Repair(e)) => format!("no JSON value could be recovered: {e}"),
            None if reply.trim().is_empty() => "the reply is empty".to_owned(),
            None => "the reply contains no JSON value".to_owned(),
        },
    });
    (outcome, times)
}
