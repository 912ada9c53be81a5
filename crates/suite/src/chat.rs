//! The suites that talk to one pipeline: tools, retry, citations, eval, and several interceptors at
//! once (the memory and history suites are in `memory`).

use anyhow::Result;
use claij_interceptors::builtin::citations::{Citations, Document};
use claij_interceptors::builtin::eval::{Eval, EvalResult};
use claij_interceptors::builtin::memory::Memory;
use claij_interceptors::builtin::tools::Tools;
use claij_interceptors::{Chain, Context, HistoryPolicy, Pipeline};
use serde_json::{Value, json};

use super::{Env, Judged, Tally, mentions, nonce};

/// A tool returning a random nonce: turn 1 must call it, turn 2 must report its result.
pub(super) async fn tools(env: &Env, tally: &mut Tally) -> Result<Judged> {
    let (tools, secret) = nonce_tool()?;
    let pipeline = Pipeline::new(env.backend.clone(), env.config(), Chain::new().with(tools));
    let mut ctx = Context::default();
    let Some(_) = env
        .ask(
            &pipeline,
            &mut ctx,
            "Call the `nonce` tool now by adding it to `tools` in your reply; you will see its result on \
             the next turn.",
            tally,
        )
        .await?
    else {
        return Ok(Judged::fail("turn 1: no valid reply within the retries"));
    };
    let called = ctx.tool_results.iter().any(|r| r.name == "nonce");
    let Some(second) = env
        .ask(
            &pipeline,
            &mut ctx,
            "What exactly did the `nonce` tool return? Put the code in `answer`.",
            tally,
        )
        .await?
    else {
        return Ok(Judged::fail(&format!(
            "tool called: {called}; turn 2: no valid reply within the retries"
        )));
    };
    let answer = text(&second.value, "answer").unwrap_or_default();
    let reported = answer.contains(&secret);
    Ok(Judged {
        passed: called && reported,
        detail: format!(
            "tool called: {called}; nonce reported: {reported}; answer: {}",
            clip(answer)
        ),
    })
}

/// A schema strict enough to provoke invalid replies: passes when a valid reply comes within the
/// retries and its letters spell its word.
pub(super) async fn retry(env: &Env, tally: &mut Tally) -> Result<Judged> {
    let pipeline = Pipeline::new(env.backend.clone(), env.config(), Chain::new())
        .with_base_schema(strict_schema());
    let mut ctx = Context::default();
    let Some(answer) = env
        .ask(
            &pipeline,
            &mut ctx,
            "Give a five-letter English word in lowercase as `answer`, its letters in order as `letters`, \
             `length` 5 and `state` \"done\".",
            tally,
        )
        .await?
    else {
        return Ok(Judged::fail(&format!(
            "no valid reply after {} attempt{}",
            tally.attempts,
            if tally.attempts == 1 { "" } else { "s" }
        )));
    };
    let word = text(&answer.value, "answer").unwrap_or_default();
    let spelled: String = answer.value["letters"]
        .as_array()
        .map(|letters| letters.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let consistent = spelled == word;
    Ok(Judged {
        passed: consistent,
        detail: format!(
            "valid after {} {}; word {word:?}, letters spell {spelled:?}",
            tally.retries,
            if tally.retries == 1 {
                "retry"
            } else {
                "retries"
            }
        ),
    })
}

/// The schema of the retry suite.
pub(super) fn strict_schema() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "answer": {"type": "string", "pattern": "^[a-z]{5}$", "description": "A five-letter English word in lowercase"},
            "letters": {
                "type": "array",
                "items": {"type": "string", "pattern": "^[a-z]$"},
                "minItems": 5,
                "maxItems": 5,
                "description": "The word's letters, in order"
            },
            "length": {"const": 5},
            "state": {"const": "done"}
        },
        "required": ["answer", "letters", "length", "state"],
        "additionalProperties": false
    })
}

/// The standard response: the answer from a supplied note, citing it by id.
pub(super) async fn citations(env: &Env, tally: &mut Tally) -> Result<Judged> {
    let pipeline = Pipeline::new(
        env.backend.clone(),
        env.config(),
        Chain::new().with(notes()),
    );
    let mut ctx = Context::default();
    let Some(answer) = env
        .ask(
            &pipeline,
            &mut ctx,
            "What is the office wifi password? Cite the note you used.",
            tally,
        )
        .await?
    else {
        return Ok(Judged::fail("no valid reply within the retries"));
    };
    let text_answer = text(&answer.value, "answer").unwrap_or_default();
    let correct = text_answer.contains(WIFI_PASSWORD);
    let cited = cites_wifi_note(&answer.value);
    Ok(Judged {
        passed: correct && cited,
        detail: format!(
            "answer has the password: {correct}; cites note-17: {cited}; answer: {}",
            clip(text_answer)
        ),
    })
}

/// Memory, a tool and citations in one chain: a fact and a tool call on turn 1; on turn 2 one
/// answer must hold the fact, the tool's result and a note's content, citing the note.
pub(super) async fn combined(env: &Env, tally: &mut Tally) -> Result<Judged> {
    let (tools, secret) = nonce_tool()?;
    let chain = Chain::new()
        .with(Memory::default())
        .with(tools)
        .with(notes());
    // No earlier turn is sent: the colour can reach turn 2 only through the memory summary.
    let mut config = env.config();
    config.history = HistoryPolicy::NONE;
    let pipeline = Pipeline::new(env.backend.clone(), config, chain);
    let mut ctx = Context::default();
    let Some(first) = env
        .ask(
            &pipeline,
            &mut ctx,
            "Remember: my favourite colour is blue. Also call the `nonce` tool now by adding it to \
             `tools` in your reply; you will see its result on the next turn.",
            tally,
        )
        .await?
    else {
        return Ok(Judged::fail("turn 1: no valid reply within the retries"));
    };
    let called = ctx.tool_results.iter().any(|r| r.name == "nonce");
    let Some(second) = env
        .ask(
            &pipeline,
            &mut ctx,
            "In `answer`, give my favourite colour, the exact code the `nonce` tool returned and the \
             office wifi password from the notes, and cite the note you used.",
            tally,
        )
        .await?
    else {
        return Ok(Judged::fail(&format!(
            "tool called: {called}; turn 2: no valid reply within the retries"
        )));
    };
    let summaries = [&first.value, &second.value]
        .iter()
        .all(|value| text(value, "summary").is_some_and(|s| !s.trim().is_empty()));
    let answer = text(&second.value, "answer").unwrap_or_default();
    let blue = mentions(answer, "blue");
    let reported = answer.contains(&secret);
    let password = answer.contains(WIFI_PASSWORD);
    let cited = cites_wifi_note(&second.value);
    Ok(Judged {
        passed: summaries && called && blue && reported && password && cited,
        detail: format!(
            "summaries: {summaries}; tool called: {called}; recalls blue: {blue}; nonce reported: \
             {reported}; password: {password}; cites note-17: {cited}; answer: {}",
            clip(answer)
        ),
    })
}

/// The eval interceptor: turn 1 computes a sum in the sandbox, turn 2 reports what it computed.
pub(super) async fn eval(env: &Env, tally: &mut Tally) -> Result<Judged> {
    // The sum of the squares of 1..=987, too long a sum to do in one's head.
    let expected: i64 = (1..=987_i64).map(|i| i * i).sum();
    let pipeline = Pipeline::new(
        env.backend.clone(),
        env.config(),
        Chain::new().with(Eval::new()),
    );
    let mut ctx = Context::default();
    let Some(_) = env
        .ask(
            &pipeline,
            &mut ctx,
            "Write code in the `eval` field that computes the sum of the squares of the integers \
             from 1 to 987; you will see its result on the next turn.",
            tally,
        )
        .await?
    else {
        return Ok(Judged::fail("turn 1: no valid reply within the retries"));
    };
    let computed = ctx.get::<EvalResult>().map(|r| r.outcome.clone());
    let right = matches!(&computed, Some(Ok(value)) if value.as_i64() == Some(expected));
    let ran = match &computed {
        None => "no code".to_owned(),
        Some(Ok(value)) => format!("computed {value}"),
        Some(Err(e)) => crate::one_line(&format!("failed: {e}")),
    };
    let Some(second) = env
        .ask(
            &pipeline,
            &mut ctx,
            "What number did your code compute? Put just the number in `answer`.",
            tally,
        )
        .await?
    else {
        return Ok(Judged::fail(&format!(
            "turn 1 {ran}; turn 2: no valid reply within the retries"
        )));
    };
    let answer = text(&second.value, "answer").unwrap_or_default();
    let digits: String = answer.chars().filter(char::is_ascii_digit).collect();
    let reported = digits.contains(&expected.to_string());
    Ok(Judged {
        passed: right && reported,
        detail: format!(
            "turn 1 {ran} (right: {right}); {expected} reported: {reported}; answer: {}",
            clip(answer)
        ),
    })
}

/// The wifi note's secret.
const WIFI_PASSWORD: &str = "heliotrope-42";

/// Whether the reply cites the wifi note.
fn cites_wifi_note(value: &Value) -> bool {
    value["metadata"]["citations"]
        .as_array()
        .is_some_and(|all| all.iter().any(|c| c["noteId"] == "note-17"))
}

/// The `tools` interceptor with one tool returning a random code, and the code.
fn nonce_tool() -> Result<(Tools, String)> {
    let secret = nonce();
    let returned = secret.clone();
    let tools = Tools::new().register(
        "nonce",
        "Returns a secret one-time code that only this tool knows.",
        json!({"type": "object", "properties": {}}),
        move |_| {
            let code = returned.clone();
            async move { Ok(json!(code)) }
        },
    )?;
    Ok((tools, secret))
}

/// The citations interceptor with two notes, one holding the wifi password.
fn notes() -> Citations {
    Citations::new(vec![
        Document::new(
            "note-17",
            "Office wifi",
            "The office wifi password is heliotrope-42.",
        ),
        Document::new("note-3", "Lunch", "Lunch is served at noon in the atrium."),
    ])
}

impl Judged {
    /// A failed test.
    pub(crate) fn fail(detail: &str) -> Self {
        Self {
            passed: false,
            detail: detail.to_owned(),
        }
    }
}

/// `value[key]` as a string.
pub(super) fn text<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

/// At most 120 characters of `s`, for details.
pub(super) fn clip(s: &str) -> String {
    let mut out: String = s.chars().take(120).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    format!("{out:?}")
}
