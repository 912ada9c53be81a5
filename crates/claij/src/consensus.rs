//! [`Consensus`]: one question to several models at once, each on its own backend and pipeline,
//! answered with the value more than half of them agree on ([`Rule::Majority`], compared as
//! canonical JSON, whole or at JSON pointers) or with the first valid answer in the order given
//! ([`Rule::FirstValid`]). The counting is [`claij_interceptors::several`]'s.
//!
//! Three models (here three OpenAI-compatible mock servers of the settings' own), two of which
//! agree on the answer:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # use wiremock::{Mock, MockServer, ResponseTemplate, matchers::method};
//! # async fn server(answer: &str) -> MockServer {
//! #     let server = MockServer::start().await;
//! #     let content = serde_json::json!({"answer": answer, "state": "answered"}).to_string();
//! #     Mock::given(method("POST"))
//! #         .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!({
//! #             "id": "chatcmpl-1", "object": "chat.completion", "model": "m",
//! #             "choices": [{"index": 0, "finish_reason": "stop",
//! #                          "message": {"role": "assistant", "content": content}}],
//! #             "usage": {"prompt_tokens": 40, "completion_tokens": 9, "total_tokens": 49}
//! #         })))
//! #         .mount(&server)
//! #         .await;
//! #     server
//! # }
//! # let (a, b, c) = (server("Paris").await, server("Lyon").await, server("Paris").await);
//! use claij::consensus::{Consensus, Rule};
//! use claij::{Claij, settings::Settings};
//!
//! let settings = Settings::builder()
//!     .compatible("one", &a.uri())
//!     .compatible("two", &b.uri())
//!     .compatible("three", &c.uri())
//!     .build()?;
//! let claij = Claij::new(settings);
//! let models = ["one:m", "two:m", "three:m"];
//! let consensus = Consensus::open(&claij, &models, Rule::Majority, |_, model| model)
//!     .await?
//!     .on(vec!["/answer".to_owned()]);
//! let outcome = consensus.ask("The capital of France?").await;
//! assert_eq!(outcome.value().map(|v| &v["answer"]), Some(&serde_json::json!("Paris")));
//! assert_eq!(outcome.winner_name(), Some("one:m"));
//! let votes = outcome.tally.majority().map(|v| v.names.clone());
//! assert_eq!(votes, Some(vec!["one:m".to_owned(), "three:m".to_owned()]));
//! consensus.close().await;
//! # Ok(())
//! # }
//! ```

use std::time::Duration;

use claij_backends::Usage;
use claij_interceptors::several::{self, Reply, Tally};
use claij_interceptors::{Answer, Context, Pipeline};
use serde_json::{Value, json};

use crate::conversation::{Builder, Conversation};
use crate::report::{Report, millis, one_line, plural};
use crate::{Claij, Result};

/// How the answer is chosen among several models'.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Rule {
    /// The value more than half of the models asked agree on.
    #[default]
    Majority,
    /// The first valid answer, in the order the models are given.
    FirstValid,
}

impl Rule {
    /// `majority` or `first-valid`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Rule::Majority => "majority",
            Rule::FirstValid => "first-valid",
        }
    }
}

/// Several models, each in a conversation of its own, asked the same question.
#[derive(Debug)]
pub struct Consensus {
    rule: Rule,
    on: Vec<String>,
    members: Vec<(String, Conversation)>,
}

/// What the models answered, the tally, and the chosen answer.
#[derive(Debug)]
pub struct Outcome {
    /// The rule that chose.
    pub rule: Rule,
    /// Each model's answer or error, in the order the models were given.
    pub replies: Vec<Reply>,
    /// The votes per distinct value (at the pointers compared, with [`Rule::Majority`]).
    pub tally: Tally,
    /// The chosen reply's index in `replies`: the first of the majority, or the first valid.
    pub winner: Option<usize>,
}

impl Outcome {
    /// The chosen answer, if the models agreed (or one answered, with [`Rule::FirstValid`]).
    #[must_use]
    pub fn answer(&self) -> Option<&Answer> {
        self.winner
            .and_then(|i| self.replies.get(i))
            .and_then(|reply| reply.result.as_ref().ok())
    }

    /// The chosen answer's value.
    #[must_use]
    pub fn value(&self) -> Option<&Value> {
        self.answer().map(|answer| &answer.value)
    }

    /// The model whose answer was chosen.
    #[must_use]
    pub fn winner_name(&self) -> Option<&str> {
        self.winner
            .and_then(|i| self.replies.get(i))
            .map(|reply| reply.name.as_str())
    }

    /// A line per model, `NAME: 1 attempt, 15+5 tokens, 0.01s, cost unknown` or `NAME: no valid
    /// answer: why`, then the tally: `tally on /answer, 5 models asked: "Paris": 2 votes (a, c);
    /// "Lyon": 1 vote (b); no valid answer: d; without /answer: e` (a compared value cut at 60
    /// characters).
    #[must_use]
    pub fn lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self.replies.iter().map(model_line).collect();
        lines.push(tally_line(&self.tally));
        lines
    }

    /// The verdict: `majority: 2 of 3 models agree (a, c); the answer is a's` or `first valid: b`
    /// with an answer; without, why (`no majority: the most models agreeing on one value is 1 of 3
    /// (a majority is 2); ...`).
    #[must_use]
    pub fn verdict(&self) -> String {
        let tally = &self.tally;
        if let (Some(winner), Some(_)) = (self.winner_name(), self.value()) {
            return match (self.rule, tally.majority()) {
                (Rule::Majority, Some(votes)) => format!(
                    "majority: {} of {} models agree ({}); the answer is {winner}'s",
                    votes.count,
                    tally.asked,
                    votes.names.join(", ")
                ),
                _ => format!("first valid: {winner}"),
            };
        }
        let valid = tally.valid();
        // First-valid finds nothing only when there is no valid answer.
        if valid == 0 || self.rule == Rule::FirstValid {
            return format!("no valid answer from any of the {} models", tally.asked);
        }
        let most = tally.votes.first().map_or(0, |v| v.count);
        format!(
            "no majority: the most models agreeing on one value is {most} of {} (a majority is {}); {valid} valid {}, {} distinct {}",
            tally.asked,
            tally.asked / 2 + 1,
            plural(valid, "answer"),
            tally.votes.len(),
            plural(tally.votes.len(), "value")
        )
    }

    /// The JSON report: the chosen `value`, `consensus` (the rule, the winner, the majority's
    /// size, the tally), every model's report ([`Report::to_json`] with its `name` and `error`),
    /// the `usage` of them all and `elapsed_ms`.
    #[must_use]
    pub fn to_json(&self, elapsed: Duration) -> Value {
        let mut spending = Vec::new();
        let models: Vec<Value> = self
            .replies
            .iter()
            .map(|reply| {
                let (value, attempts, error) = match &reply.result {
                    Ok(answer) => (Some(&answer.value), answer.attempts.as_slice(), None),
                    Err(e) => {
                        let attempts = match e {
                            claij_interceptors::Error::RetriesExhausted(exhausted) => {
                                exhausted.attempts.as_slice()
                            }
                            _ => &[],
                        };
                        (None, attempts, Some(one_line(&e.to_string())))
                    }
                };
                let spent: Usage = attempts.iter().map(|a| a.usage).sum();
                spending.push(spent);
                let latency = attempts.iter().map(|a| a.latency).sum();
                let mut one = Report::new(attempts, spent, latency).to_json(value);
                if let Value::Object(map) = &mut one {
                    map.insert("name".to_owned(), json!(reply.name));
                    map.insert("error".to_owned(), json!(error));
                }
                one
            })
            .collect();
        let usage: Usage = spending.into_iter().sum();
        json!({
            "value": self.value(),
            "consensus": {
                "rule": self.rule.name(),
                "winner": self.winner_name(),
                "majority": self.tally.majority().map(|v| v.count),
                "tally": self.tally,
            },
            "models": models,
            "usage": usage,
            "elapsed_ms": millis(elapsed),
        })
    }
}

/// `NAME: 1 attempt, 15+5 tokens, 0.01s, cost unknown` or `NAME: no valid answer: why`.
fn model_line(reply: &Reply) -> String {
    let name = &reply.name;
    match &reply.result {
        Ok(answer) => {
            let spent = answer.attempts.iter().map(|a| a.latency).sum();
            let total = Report::new(&answer.attempts, answer.usage, spent).total();
            format!("{name}: {total}")
        }
        Err(e) => format!("{name}: no valid answer: {}", one_line(&e.to_string())),
    }
}

/// `tally on /answer, 5 models asked: "Paris": 2 votes (a, c); "Lyon": 1 vote (b); no valid answer:
/// d; without /answer: e`.
fn tally_line(tally: &Tally) -> String {
    let on = if tally.on.is_empty() {
        "the whole value".to_owned()
    } else {
        tally.on.join(" and ")
    };
    let mut parts: Vec<String> = tally
        .votes
        .iter()
        .map(|v| {
            let votes = plural(v.count, "vote");
            format!(
                "{}: {} {votes} ({})",
                shown(&v.value),
                v.count,
                v.names.join(", ")
            )
        })
        .collect();
    if !tally.failed.is_empty() {
        parts.push(format!("no valid answer: {}", tally.failed.join(", ")));
    }
    // Grouped by what they lack, in the order first seen.
    let mut lacking: Vec<(&[String], Vec<&str>)> = Vec::new();
    for missing in &tally.missing {
        match lacking
            .iter_mut()
            .find(|(p, _)| *p == missing.pointers.as_slice())
        {
            Some((_, names)) => names.push(&missing.name),
            None => lacking.push((&missing.pointers, vec![&missing.name])),
        }
    }
    for (pointers, names) in lacking {
        parts.push(format!(
            "without {}: {}",
            pointers.join(" and "),
            names.join(", ")
        ));
    }
    format!(
        "tally on {on}, {} {} asked: {}",
        tally.asked,
        plural(tally.asked, "model"),
        parts.join("; ")
    )
}

/// The longest compared value a tally line shows, in characters (the whole value is in the JSON
/// report).
const SHOWN_CHARS: usize = 60;

/// A compared value as one short line of JSON.
fn shown(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(SHOWN_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

impl Consensus {
    /// `members` (a name and a conversation each), asked by `rule`.
    #[must_use]
    pub fn new(members: Vec<(String, Conversation)>, rule: Rule) -> Self {
        Self {
            rule,
            on: Vec::new(),
            members,
        }
    }

    /// Opens a conversation with each of `models` (each as [`Builder::model`] takes it), each
    /// configured by `configure` (given the model's name), asked by `rule`.
    ///
    /// # Errors
    ///
    /// The first model whose conversation does not open: its error, naming the model.
    pub async fn open<'c, F>(
        claij: &'c Claij,
        models: &[&str],
        rule: Rule,
        configure: F,
    ) -> Result<Self>
    where
        F: Fn(&str, Builder<'c>) -> Builder<'c>,
    {
        let mut members = Vec::with_capacity(models.len());
        for &name in models {
            let builder = configure(name, claij.conversation().model(name));
            let conversation = builder
                .open()
                .await
                .map_err(|e| e.context(name.to_owned()))?;
            members.push((name.to_owned(), conversation));
        }
        Ok(Self::new(members, rule))
    }

    /// Compares the answers at these JSON pointers (`/answer`) instead of the whole value (with
    /// [`Rule::Majority`]; the answers must agree at every one).
    #[must_use]
    pub fn on(mut self, pointers: Vec<String>) -> Self {
        self.on = pointers;
        self
    }

    /// Asks every model `prompt` at once, each from a fresh context; the tally and the chosen
    /// answer.
    pub async fn ask(&self, prompt: &str) -> Outcome {
        let named: Vec<(&str, &Pipeline)> = self
            .members
            .iter()
            .map(|(name, conversation)| (name.as_str(), conversation.pipeline()))
            .collect();
        let replies = several::ask_all(&named, Context::default, prompt).await;
        decide(self.rule, replies, &self.on)
    }

    /// Ends every model's conversation (stopping the MCP services each started).
    pub async fn close(self) {
        for (_, conversation) in self.members {
            conversation.close().await;
        }
    }
}

/// The tally of `replies` and the answer `rule` chooses (`on`: the pointers compared, with
/// [`Rule::Majority`]).
#[must_use]
pub fn decide(rule: Rule, replies: Vec<Reply>, on: &[String]) -> Outcome {
    let on = match rule {
        Rule::Majority => on,
        Rule::FirstValid => &[],
    };
    let tally = several::tally(&replies, on);
    let winner = match rule {
        Rule::Majority => tally.majority().and_then(|v| v.replies.first().copied()),
        Rule::FirstValid => replies.iter().position(|r| r.result.is_ok()),
    };
    Outcome {
        rule,
        replies,
        tally,
        winner,
    }
}

/// The models `llm` (`--llm a,b,c`) names for a consensus under `rule` (`--consensus`; `None`:
/// none asked for), checked against the flags beside it: `on` (whether `--on` pointers are given),
/// `memory` (`--memory`) and `proposals` (`--interceptors proposals`). `Ok(None)` without a
/// consensus; each mistake is one line naming the flags (a usage error, found before any model is
/// asked).
///
/// # Errors
///
/// `--on` without `--consensus majority`, several models without `--consensus`, `--memory` or
/// `--interceptors proposals` with one, an empty model, fewer than two models.
pub fn models(
    llm: &str,
    rule: Option<Rule>,
    on: bool,
    memory: bool,
    proposals: bool,
) -> std::result::Result<Option<Vec<String>>, String> {
    let Some(rule) = rule else {
        if on {
            return Err(
                "--on chooses what --consensus majority compares: add --consensus majority"
                    .to_owned(),
            );
        }
        if llm.contains(',') {
            return Err(format!(
                "--llm {llm} names several models: add --consensus majority or --consensus first-valid"
            ));
        }
        return Ok(None);
    };
    if rule != Rule::Majority && on {
        return Err(format!(
            "--on is for --consensus majority (--consensus {} takes the first valid answer whole)",
            rule.name()
        ));
    }
    if memory {
        return Err("--memory carries one conversation, --consensus asks several models once each: drop one".to_owned());
    }
    if proposals {
        return Err("--interceptors proposals keeps approved schema extensions in a conversation (--memory), which --consensus does not keep: drop one".to_owned());
    }
    let models: Vec<String> = llm.split(',').map(|m| m.trim().to_owned()).collect();
    if models.iter().any(String::is_empty) && models.len() > 1 {
        return Err(format!("--llm {llm} has an empty model: write --llm a,b,c"));
    }
    if models.len() < 2 {
        let got = if llm.is_empty() { "none" } else { llm };
        return Err(format!(
            "--consensus needs several models to compare: --llm a,b,c (got {got})"
        ));
    }
    Ok(Some(models))
}

/// `claij chat` talks with one model: `rule` (`--consensus`), `on` (`--on` pointers) and several
/// models in `llm` are for one question asked of several ([`models`]).
///
/// # Errors
///
/// Any of them, in one line naming the flags.
pub fn refuse_in_chat(llm: Option<&str>, rule: bool, on: bool) -> std::result::Result<(), String> {
    let several = llm.is_some_and(|llm| llm.contains(','));
    if rule || on || several {
        return Err("claij chat talks with one model: --consensus and several --llm models are for claij ask (one question, several answers compared)".to_owned());
    }
    Ok(())
}

/// A pointer the answers are compared at (`--on`): a JSON pointer (RFC 6901: empty, or starting
/// with `/`).
///
/// # Errors
///
/// Text that does not start with `/`, suggesting the pointer that does.
pub fn pointer(text: &str) -> std::result::Result<String, String> {
    if text.is_empty() || text.starts_with('/') {
        Ok(text.to_owned())
    } else {
        Err(format!(
            "a JSON pointer starts with `/`: did you mean /{text}?"
        ))
    }
}

#[cfg(test)]
mod tests;
