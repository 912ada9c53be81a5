//! What a client does when a server asks *it* something: sampling (a completion from claij's
//! model), roots (the directories it may work in), elicitation (a question for a person), and what
//! it does with progress notifications and log messages.

use std::fmt;
use std::sync::Arc;

use claij_backends::{Backend, BoxFuture, ChatRequest, Message};
use claij_interceptors::BoxError;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::logging::LogMessage;

/// A progress callback.
pub type ProgressFn = dyn Fn(&Progress) + Send + Sync;

/// A callback for servers' log messages.
pub type LogFn = dyn Fn(&LogMessage) + Send + Sync;

/// The client's answers to server-initiated requests, and its progress and log callbacks.
///
/// The default declares no sampling and no roots, declines every elicitation, and sends progress
/// and servers' log messages only to tracing.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct Hooks {
    /// Answers `sampling/createMessage`; the capability is declared only when set.
    pub sampler: Option<Arc<dyn Sampler>>,
    /// Returned by `roots/list`; the capability is declared only when not empty.
    pub roots: Vec<Root>,
    /// Answers `elicitation/create`; without one, every elicitation is declined.
    pub elicitor: Option<Arc<dyn Elicitor>>,
    /// Called for every progress notification (after it is traced).
    pub on_progress: Option<Arc<ProgressFn>>,
    /// Called for every log message a server sends (after it is traced); which ones a server
    /// sends is set by [`crate::ClientOptions::log_level`].
    pub on_log: Option<Arc<LogFn>>,
}

impl Hooks {
    /// Answers sampling requests with `sampler`.
    #[must_use]
    pub fn with_sampler(mut self, sampler: impl Sampler + 'static) -> Self {
        self.sampler = Some(Arc::new(sampler));
        self
    }

    /// Offers `roots`.
    #[must_use]
    pub fn with_roots(mut self, roots: impl IntoIterator<Item = Root>) -> Self {
        self.roots = roots.into_iter().collect();
        self
    }

    /// Answers elicitations with `elicitor`.
    #[must_use]
    pub fn with_elicitor(mut self, elicitor: impl Elicitor + 'static) -> Self {
        self.elicitor = Some(Arc::new(elicitor));
        self
    }

    /// Calls `f` for every progress notification.
    #[must_use]
    pub fn on_progress(mut self, f: impl Fn(&Progress) + Send + Sync + 'static) -> Self {
        self.on_progress = Some(Arc::new(f));
        self
    }

    /// Calls `f` for every log message a server sends (`notifications/message`), named by the
    /// server's configured name.
    ///
    /// ```
    /// use claij_mcp::{ClientOptions, Hooks, LogLevel};
    /// let hooks = Hooks::default().on_log(|message| eprintln!("{message}"));
    /// let options = ClientOptions::default().with_hooks(hooks).with_log_level(LogLevel::Warning);
    /// assert_eq!(options.log_level, Some(LogLevel::Warning));
    /// ```
    #[must_use]
    pub fn on_log(mut self, f: impl Fn(&LogMessage) + Send + Sync + 'static) -> Self {
        self.on_log = Some(Arc::new(f));
        self
    }
}

impl fmt::Debug for Hooks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hooks")
            .field("sampler", &self.sampler.is_some())
            .field("roots", &self.roots)
            .field("elicitor", &self.elicitor.is_some())
            .field("on_progress", &self.on_progress.is_some())
            .field("on_log", &self.on_log.is_some())
            .finish()
    }
}

/// A root: a directory (a `file://` URI) the server may work in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Root {
    /// The URI (`file:///srv/project`).
    pub uri: String,
    /// A name for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl Root {
    /// The root for a local directory.
    pub fn dir(path: impl AsRef<std::path::Path>) -> Self {
        Root {
            uri: format!("file://{}", path.as_ref().display()),
            name: None,
        }
    }
}

/// A progress notification of a request in flight.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Progress {
    /// The server.
    pub server: String,
    /// Progress so far.
    pub progress: f64,
    /// The total, when known.
    pub total: Option<f64>,
    /// What is happening.
    pub message: Option<String>,
}

/// A server's request for a completion.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SamplingRequest {
    /// The server asking.
    pub server: String,
    /// The conversation: `(role, text)`, role `user` or `assistant`; non-text blocks are described.
    pub messages: Vec<(String, String)>,
    /// The system prompt it asks for.
    pub system_prompt: Option<String>,
    /// The most tokens to generate.
    pub max_tokens: u32,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Stop sequences.
    pub stop_sequences: Vec<String>,
    /// Model names the server hints at (a hint, not a requirement).
    pub model_hints: Vec<String>,
}

/// The completion returned to the server.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SamplingReply {
    /// The assistant's text.
    pub text: String,
    /// The model that wrote it.
    pub model: String,
    /// Why it stopped (`endTurn`, `maxTokens`, `stopSequence`).
    pub stop_reason: Option<String>,
}

impl SamplingReply {
    /// A reply.
    pub fn new(text: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            model: model.into(),
            stop_reason: Some("endTurn".to_owned()),
        }
    }
}

/// Answers sampling requests.
pub trait Sampler: Send + Sync {
    /// A completion for `request`.
    fn sample<'a>(
        &'a self,
        request: &'a SamplingRequest,
    ) -> BoxFuture<'a, Result<SamplingReply, BoxError>>;
}

/// A [`Sampler`] that asks a claij backend (free text: sampling has no schema).
pub struct BackendSampler {
    backend: Arc<dyn Backend>,
    model: String,
}

impl BackendSampler {
    /// Samples from `model` on `backend`.
    pub fn new(backend: Arc<dyn Backend>, model: impl Into<String>) -> Self {
        Self {
            backend,
            model: model.into(),
        }
    }
}

impl Sampler for BackendSampler {
    fn sample<'a>(
        &'a self,
        request: &'a SamplingRequest,
    ) -> BoxFuture<'a, Result<SamplingReply, BoxError>> {
        Box::pin(async move {
            let mut chat =
                ChatRequest::new(self.model.clone()).max_tokens(request.max_tokens.max(1));
            if let Some(system) = &request.system_prompt {
                chat = chat.system(system.clone());
            }
            if let Some(temperature) = request.temperature {
                chat = chat.temperature(temperature);
            }
            for stop in &request.stop_sequences {
                chat = chat.stop(stop.clone());
            }
            for (role, text) in &request.messages {
                chat = chat.message(if role == "assistant" {
                    Message::assistant(text.clone())
                } else {
                    Message::user(text.clone())
                });
            }
            let response = self.backend.complete(&chat).await?;
            let stop_reason = match response.finish_reason {
                claij_backends::FinishReason::Length => "maxTokens",
                _ => "endTurn",
            };
            Ok(SamplingReply {
                text: response.content,
                model: response.model.unwrap_or_else(|| self.model.clone()),
                stop_reason: Some(stop_reason.to_owned()),
            })
        })
    }
}

/// A server's question for a person.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ElicitationRequest {
    /// The server asking.
    pub server: String,
    /// The question.
    pub message: String,
    /// The JSON Schema of the answer (a flat object of primitive fields), or a URL to open for
    /// URL-mode elicitations.
    pub schema: Value,
}

/// A person's answer to an elicitation.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ElicitationReply {
    /// The answer, fitting the request's schema.
    Accept(Value),
    /// The person said no.
    Decline,
    /// The person dismissed the question.
    Cancel,
}

/// Answers elicitations.
pub trait Elicitor: Send + Sync {
    /// The answer to `request`.
    fn elicit<'a>(&'a self, request: &'a ElicitationRequest) -> BoxFuture<'a, ElicitationReply>;
}

/// An [`Elicitor`] that hands each question to whoever holds the receiving end (a human state of an
/// FSM, a terminal prompt), and waits for the answer. A question nobody answers (the receiver dropped,
/// or the answer dropped) is declined.
///
/// ```
/// use claij_mcp::{ElicitationQueue, ElicitationReply, ElicitationRequest, Elicitor};
/// # let rt = tokio::runtime::Builder::new_current_thread().build()?;
/// # rt.block_on(async {
/// let (queue, mut questions) = ElicitationQueue::new(4);
/// tokio::spawn(async move {
///     let pending = questions.recv().await.unwrap();
///     assert_eq!(pending.request.message, "Your name?");
///     pending.answer(ElicitationReply::Accept(serde_json::json!({"name": "Ada"})));
/// });
/// let request = ElicitationRequest::new("demo", "Your name?", serde_json::json!({"type": "object"}));
/// let reply = queue.elicit(&request).await;
/// assert_eq!(reply, ElicitationReply::Accept(serde_json::json!({"name": "Ada"})));
/// # });
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct ElicitationQueue {
    sender: mpsc::Sender<PendingElicitation>,
}

/// A question waiting for its answer.
#[non_exhaustive]
pub struct PendingElicitation {
    /// The question.
    pub request: ElicitationRequest,
    reply: oneshot::Sender<ElicitationReply>,
}

impl PendingElicitation {
    /// Sends the answer back to the server.
    pub fn answer(self, reply: ElicitationReply) {
        let _ = self.reply.send(reply);
    }
}

impl ElicitationRequest {
    /// A question.
    pub fn new(server: impl Into<String>, message: impl Into<String>, schema: Value) -> Self {
        Self {
            server: server.into(),
            message: message.into(),
            schema,
        }
    }
}

impl ElicitationQueue {
    /// A queue holding up to `capacity` unanswered questions, and the receiving end.
    pub fn new(capacity: usize) -> (Self, mpsc::Receiver<PendingElicitation>) {
        let (sender, receiver) = mpsc::channel(capacity.max(1));
        (Self { sender }, receiver)
    }
}

impl Elicitor for ElicitationQueue {
    fn elicit<'a>(&'a self, request: &'a ElicitationRequest) -> BoxFuture<'a, ElicitationReply> {
        Box::pin(async move {
            let (reply, answer) = oneshot::channel();
            let pending = PendingElicitation {
                request: request.clone(),
                reply,
            };
            if self.sender.send(pending).await.is_err() {
                return ElicitationReply::Decline;
            }
            answer.await.unwrap_or(ElicitationReply::Decline)
        })
    }
}
