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

use claij_interceptors::several::{self, Reply, Tally};
use claij_interceptors::{Answer, Context, Pipeline};
use serde_json::Value;

use crate::conversation::{Builder, Conversation};
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
