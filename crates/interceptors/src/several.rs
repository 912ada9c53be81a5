//! Several models at once: one request on several pipelines concurrently, and consensus helpers.
//!
//! Answers are compared in canonical form ([`canonical`]: object keys sorted, numbers normalised, so
//! `{"b": 2.0, "a": 1}` and `{"a": 1, "b": 2}` agree), on the whole value or on chosen JSON pointers.
//! [`tally`] counts the votes; [`Tally::majority`] is the value more than half of the pipelines asked
//! agree on (a failed pipeline counts as asked: it voted for nothing).

use serde::Serialize;
use serde_json::{Map, Number, Value};

use futures_util::future::join_all;

use crate::context::Context;
use crate::error::Error;
use crate::pipeline::{Answer, Pipeline};

#[cfg(test)]
mod tests;

/// One pipeline's result in a fan-out.
#[derive(Debug)]
pub struct Reply {
    /// The name it was given.
    pub name: String,
    /// Its answer or error.
    pub result: Result<Answer, Error>,
    /// Its context after the call (each pipeline works on its own copy).
    pub context: Context,
}

/// The votes of a fan-out: who gave which value (compared in canonical form), who gave none.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tally {
    /// What was compared: the JSON pointers, or none for the whole value.
    pub on: Vec<String>,
    /// How many pipelines were asked.
    pub asked: usize,
    /// Each distinct value and who gave it, most votes first (ties in the order first seen).
    pub votes: Vec<Votes>,
    /// The pipelines without a valid answer, in the order given (their errors are in the replies).
    pub failed: Vec<String>,
    /// The pipelines whose valid answer lacks some pointers of `on`: they vote for nothing.
    pub missing: Vec<Missing>,
}

/// One value of a [`Tally`] and the pipelines that gave it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Votes {
    /// The compared value, canonical: the whole value, the value at the one pointer, or for several
    /// pointers an object from each pointer to its value.
    pub value: Value,
    /// How many pipelines gave it.
    pub count: usize,
    /// Their names, in the order given.
    pub names: Vec<String>,
    /// Their positions in the replies, in the order given.
    #[serde(skip)]
    pub replies: Vec<usize>,
}

/// A valid answer that lacks pointers a [`Tally`] compares on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Missing {
    /// The pipeline's name.
    pub name: String,
    /// The pointers its answer lacks.
    pub pointers: Vec<String>,
}

impl Tally {
    /// The value more than half of the pipelines asked agree on; `None` when there is none (a tie,
    /// a split, or too many failures).
    pub fn majority(&self) -> Option<&Votes> {
        self.votes.first().filter(|v| v.count * 2 > self.asked)
    }

    /// How many valid answers there are (voting or not).
    pub fn valid(&self) -> usize {
        self.votes.iter().map(|v| v.count).sum::<usize>() + self.missing.len()
    }

    /// The pointers of `on` that no valid answer has, when there is at least one valid answer: most
    /// likely a mistyped pointer rather than a disagreement.
    pub fn absent_pointers(&self) -> Vec<&str> {
        if !self.votes.is_empty() || self.missing.is_empty() {
            return Vec::new();
        }
        self.on
            .iter()
            .filter(|p| self.missing.iter().all(|m| m.pointers.contains(p)))
            .map(String::as_str)
            .collect()
    }
}

/// Asks `input` on every pipeline concurrently, each with its own interceptor stack and a fresh context
/// made by `context`; returns every answer or error, in the order given.
///
/// ```
/// use std::sync::Arc;
/// use claij_backends::Error as BackendError;
/// use claij_test_support::Scripted;
/// use claij_interceptors::{Chain, Config, Context, Pipeline, several::{ask_all, majority}};
///
/// let ok = |a: &str| Pipeline::new(
///     Arc::new(Scripted::replies([format!(r#"{{"answer": "{a}", "state": "done"}}"#)])),
///     Config::new("m"),
///     Chain::new(),
/// );
/// let down = Pipeline::new(
///     Arc::new(Scripted::new([Err(BackendError::other("down", "unreachable"))])),
///     Config::new("m"),
///     Chain::new(),
/// );
/// let (a, b, c) = (ok("Paris"), ok("Paris"), down);
/// let replies = futures_executor::block_on(ask_all(
///     &[("a", &a), ("b", &b), ("c", &c)],
///     Context::default,
///     "Capital of France?",
/// ));
/// assert!(replies[2].result.is_err());
/// assert_eq!(majority(&replies, &["/answer"]), Some(serde_json::json!("Paris")));
/// ```
pub async fn ask_all(
    pipelines: &[(&str, &Pipeline)],
    context: impl Fn() -> Context,
    input: &str,
) -> Vec<Reply> {
    let calls = pipelines.iter().map(|(name, pipeline)| {
        let mut ctx = context();
        async move {
            let result = pipeline.ask(&mut ctx, input).await;
            Reply {
                name: (*name).to_owned(),
                result,
                context: ctx,
            }
        }
    });
    join_all(calls).await
}

/// Counts the valid answers' values on `on` (JSON pointers; none: the whole value), compared in
/// canonical form.
pub fn tally<S: AsRef<str>>(replies: &[Reply], on: &[S]) -> Tally {
    let on: Vec<String> = on.iter().map(|p| p.as_ref().to_owned()).collect();
    let mut votes: Vec<Votes> = Vec::new();
    let mut failed = Vec::new();
    let mut missing = Vec::new();
    for (i, reply) in replies.iter().enumerate() {
        let Ok(answer) = &reply.result else {
            failed.push(reply.name.clone());
            continue;
        };
        let value = match compared(&answer.value, &on) {
            Ok(value) => value,
            Err(pointers) => {
                missing.push(Missing {
                    name: reply.name.clone(),
                    pointers,
                });
                continue;
            }
        };
        match votes.iter_mut().find(|v| v.value == value) {
            Some(v) => {
                v.count += 1;
                v.names.push(reply.name.clone());
                v.replies.push(i);
            }
            None => votes.push(Votes {
                value,
                count: 1,
                names: vec![reply.name.clone()],
                replies: vec![i],
            }),
        }
    }
    // Stable: ties stay in the order first seen.
    votes.sort_by_key(|v| std::cmp::Reverse(v.count));
    Tally {
        on,
        asked: replies.len(),
        votes,
        failed,
        missing,
    }
}

/// The value on `on` (JSON pointers; none: the whole value) that more than half of the pipelines
/// agree on, canonical; `None` when no value has a majority.
pub fn majority<S: AsRef<str>>(replies: &[Reply], on: &[S]) -> Option<Value> {
    tally(replies, on).majority().map(|v| v.value.clone())
}

/// The first valid answer, in the order the pipelines were given.
pub fn first_valid(replies: &[Reply]) -> Option<&Answer> {
    replies.iter().find_map(|r| r.result.as_ref().ok())
}

/// `value` in canonical form, for comparing answers: object keys sorted; a float with an integral
/// value that an `f64` holds exactly (up to 2^53) written as an integer, `-0.0` as `0`. Arrays keep
/// their order.
pub fn canonical(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k.clone(), canonical(v)))
                    .collect::<Map<String, Value>>(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        Value::Number(n) => Value::Number(canonical_number(n)),
        other => other.clone(),
    }
}

/// The largest integer up to which every integer is an exact `f64`.
const EXACT_F64_INT: f64 = 9_007_199_254_740_992.0;

fn canonical_number(n: &Number) -> Number {
    match n.as_f64() {
        Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() <= EXACT_F64_INT => {
            // In range and integral: the cast is exact.
            let i = f as i64;
            Number::from(i)
        }
        _ => n.clone(),
    }
}

/// The canonical value compared on `on`, or the pointers the value lacks.
fn compared(value: &Value, on: &[String]) -> Result<Value, Vec<String>> {
    match on {
        [] => Ok(canonical(value)),
        [pointer] => value
            .pointer(pointer)
            .map(canonical)
            .ok_or_else(|| vec![pointer.clone()]),
        pointers => {
            let mut out = Map::new();
            let mut lacking = Vec::new();
            for pointer in pointers {
                match value.pointer(pointer) {
                    Some(v) => {
                        out.insert(pointer.clone(), canonical(v));
                    }
                    None => lacking.push(pointer.clone()),
                }
            }
            if lacking.is_empty() {
                Ok(Value::Object(out))
            } else {
                Err(lacking)
            }
        }
    }
}
