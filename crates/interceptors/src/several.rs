//! Several models at once: one request on several pipelines concurrently, and consensus helpers.

use std::collections::HashMap;

use futures_util::future::join_all;
use serde_json::Value;

use crate::context::Context;
use crate::error::Error;
use crate::pipeline::{Answer, Pipeline};

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

/// Asks `input` on every pipeline concurrently, each with its own interceptor stack and a fresh context
/// made by `context`; returns every answer or error, in the order given.
///
/// ```
/// use std::sync::Arc;
/// use claij_backends::{Error as BackendError, testing::Scripted};
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
/// assert_eq!(majority(&replies, "/answer"), Some(serde_json::json!("Paris")));
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

/// The value at `pointer` that most valid answers agree on (ties go to the first seen); `None` when no
/// answer has it.
pub fn majority(replies: &[Reply], pointer: &str) -> Option<Value> {
    let mut counts: Vec<(Value, usize)> = Vec::new();
    for reply in replies {
        if let Ok(answer) = &reply.result
            && let Some(v) = answer.value.pointer(pointer)
        {
            match counts.iter_mut().find(|(seen, _)| seen == v) {
                Some((_, n)) => *n += 1,
                None => counts.push((v.clone(), 1)),
            }
        }
    }
    let best = counts.iter().map(|(_, n)| *n).max()?;
    counts.into_iter().find(|(_, n)| *n == best).map(|(v, _)| v)
}

/// The first valid answer, in the order the pipelines were given.
pub fn first_valid(replies: &[Reply]) -> Option<&Answer> {
    replies.iter().find_map(|r| r.result.as_ref().ok())
}

/// How many answers there are for each value at `pointer`.
pub fn tally(replies: &[Reply], pointer: &str) -> HashMap<String, usize> {
    let mut out = HashMap::new();
    for reply in replies {
        if let Some(v) = reply
            .result
            .as_ref()
            .ok()
            .and_then(|a| a.value.pointer(pointer))
        {
            *out.entry(v.to_string()).or_insert(0) += 1;
        }
    }
    out
}
