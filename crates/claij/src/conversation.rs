//! [`Conversation`]: turns with one model, each answer a JSON document valid against the schema,
//! carried from turn to turn (the history, what the interceptors remember, the tool results the model
//! has yet to see) and, with a session file, from run to run.
//!
//! Built from a [`Claij`] with [`Claij::conversation`]: the model by name, the schema, interceptors
//! by name ([`Named`], the names the `claij` command line's `--interceptors` takes) and by value,
//! a session file, the history's bounds, an agent budget (steps, US dollars), the notes a model may
//! cite, the approver of schema extensions. It runs on the caller's async runtime.
//!
//! A session with memory and tools over two turns, each in a run of its own: the first reply calls
//! the `random_int` tool and notes a summary; the session file carries both, so the second turn's
//! request shows the model what it noted and what the tool returned (and, with no history kept,
//! nothing else of the first turn).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # use wiremock::{Mock, MockServer, ResponseTemplate, matchers::method};
//! # let server = MockServer::start().await;
//! # let completion = |content: &str| ResponseTemplate::new(200).set_body_json(serde_json::json!({
//! #     "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-mini",
//! #     "choices": [{"index": 0, "finish_reason": "stop",
//! #                  "message": {"role": "assistant", "content": content}}],
//! #     "usage": {"prompt_tokens": 80, "completion_tokens": 30, "total_tokens": 110}
//! # }));
//! # Mock::given(method("POST"))
//! #     .respond_with(completion(r#"{"answer": "Let me draw one.", "state": "waiting_for_tools",
//! #         "summary": "The user wants a lucky number.",
//! #         "tools": [{"name": "random_int", "args": {"min": 4242, "max": 4242}}]}"#))
//! #     .up_to_n_times(1)
//! #     .mount(&server)
//! #     .await;
//! # Mock::given(method("POST"))
//! #     .respond_with(completion(r#"{"answer": "Your lucky number is 4242.", "state": "answered",
//! #         "summary": "Gave the lucky number 4242."}"#))
//! #     .mount(&server)
//! #     .await;
//! use claij::conversation::Named;
//! use claij::{Claij, settings::Settings};
//! use claij::conversation::HistoryPolicy;
//!
//! let settings = Settings::builder().base_url("openai", &server.uri()).build()?;
//! let claij = Claij::new(settings).with_var("OPENAI_API_KEY", "sk-test");
//! let file = std::env::temp_dir().join(format!("claij-doc-session-{}.json", std::process::id()));
//! let open = || {
//!     claij
//!         .conversation()
//!         .model("openai:gpt-4o-mini")
//!         .interceptors([Named::Memory, Named::Tools])
//!         .history(HistoryPolicy { max_messages: 0, max_tokens: 0 })
//!         .session(&file)
//!         .open()
//! };
//!
//! let mut first = open().await?;
//! let answer = first.turn("Draw me a lucky number.").await?;
//! assert_eq!(answer.value["state"], "waiting_for_tools");
//! assert_eq!(first.ran()[0].output, Ok(serde_json::json!(4242)));
//! first.save()?;
//! first.close().await;
//!
//! let mut second = open().await?;
//! let answer = second.turn("So, which number?").await?;
//! assert_eq!(answer.value["answer"], "Your lucky number is 4242.");
//! second.save()?;
//! second.close().await;
//!
//! let requests = server.received_requests().await.unwrap_or_default();
//! let (turn_one, turn_two) = (String::from_utf8_lossy(&requests[0].body), String::from_utf8_lossy(&requests[1].body));
//! // The memory: what the first reply noted.
//! assert!(turn_two.contains("The user wants a lucky number."), "{turn_two}");
//! assert!(!turn_one.contains("The user wants a lucky number."));
//! // The tool's result, from the first run to the second.
//! assert!(turn_two.contains("4242"), "{turn_two}");
//! assert!(!turn_one.contains("4242"));
//! # std::fs::remove_file(&file)?;
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, Mutex};

use claij_backends::Backend;
use claij_interceptors::builtin::citations::Citations;
#[cfg(feature = "eval")]
use claij_interceptors::builtin::eval::{Eval, EvalResult};
use claij_interceptors::builtin::metrics::{Metrics, MetricsCollector, MetricsSnapshot};
use claij_interceptors::builtin::proposals::{Approver, Proposals};
use claij_interceptors::builtin::states::States;
use claij_interceptors::{
    Budget, Chain, Interceptor, OnError, Pipeline, StructuredMode, ToolOrigin,
};
use claij_schema::Registry;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

pub use claij_interceptors::builtin::citations::Document;
pub use claij_interceptors::{Answer, Context, HistoryPolicy, ShowExample, ToolResult};

use crate::approve::Approval;
use crate::error::ErrorKind;
use crate::options::ModelOptions;
use crate::session::{Session, SessionLock};
use crate::settings::memory::{MemorySettings, Strategy};
use crate::{Claij, Error, Result};

/// An interceptor by name: what `Builder::interceptor` adds, in the order given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Named {
    /// Every reply carries a `summary`; later turns are reminded of them.
    Memory,
    /// The standard response: the answer with `metadata` on the notes and sources it uses.
    Citations,
    /// Every reply may carry `eval`: Rhai expressions run in a sandbox, results on the next turn
    /// (feature `eval`).
    Eval,
    /// Every reply may call the built-in tools ([`crate::tools`]); their results come back on
    /// the next turn (or within the turn in an agent run).
    Tools,
    /// The tools of MCP servers, called through `mcp_calls` (feature `mcp`; the servers are given
    /// with `Builder::services`).
    Mcp,
    /// Every reply may propose a schema extension; the approver decides, and an approved one
    /// joins the schema of every later request (saved with the session).
    Proposals,
    /// Counts what every call did ([`Conversation::metrics`]).
    Metrics,
}

impl Named {
    /// Every name, in the order [`Named::name`] lists them.
    pub const ALL: [Named; 7] = [
        Named::Memory,
        Named::Citations,
        Named::Eval,
        Named::Tools,
        Named::Mcp,
        Named::Proposals,
        Named::Metrics,
    ];

    /// The name (`memory`, `citations`, ...).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Named::Memory => "memory",
            Named::Citations => "citations",
            Named::Eval => "eval",
            Named::Tools => "tools",
            Named::Mcp => "mcp",
            Named::Proposals => "proposals",
            Named::Metrics => "metrics",
        }
    }
}

impl fmt::Display for Named {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not an interceptor's; it lists the known ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownInterceptor {
    /// The name given.
    pub name: String,
}

impl fmt::Display for UnknownInterceptor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let known: Vec<&str> = Named::ALL.iter().map(|n| n.name()).collect();
        write!(
            f,
            "no interceptor is named `{}` (known: {})",
            self.name,
            known.join(", ")
        )
    }
}

impl std::error::Error for UnknownInterceptor {}

impl FromStr for Named {
    type Err = UnknownInterceptor;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Named::ALL
            .into_iter()
            .find(|n| n.name() == text.trim())
            .ok_or_else(|| UnknownInterceptor {
                name: text.to_owned(),
            })
    }
}

/// Something worth telling the user while a conversation opens.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Opening {
    /// Another process holds the session file's lock: the conversation waits its turn (told
    /// once).
    Waiting {
        /// The lock file.
        lock: PathBuf,
    },
    /// Which model was chosen when none was named (and why).
    Model(String),
    /// What the compatibility matrix chose for the model.
    Matrix(String),
    /// A compatibility matrix that could not be used, or advice that does not fit.
    Warning(String),
    /// The session was kept with another memory strategy: what this one starts from.
    Memory(String),
}

impl fmt::Display for Opening {
    /// `waiting for LOCK: another claij is on this conversation`, or the text told.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Opening::Waiting { lock } => write!(
                f,
                "waiting for {}: another claij is on this conversation",
                lock.display()
            ),
            Opening::Model(text)
            | Opening::Matrix(text)
            | Opening::Warning(text)
            | Opening::Memory(text) => f.write_str(text),
        }
    }
}

impl SessionLock {
    /// [`SessionLock::acquire`], telling `waiting` ([`Opening::Waiting`]) when another process
    /// holds the lock, once however long the wait.
    ///
    /// # Errors
    ///
    /// As [`SessionLock::acquire`].
    pub fn acquire_telling(path: &Path, mut waiting: impl FnMut(&Opening)) -> Result<Self> {
        let mut told = false;
        Self::acquire_with(path, &mut |lock| {
            if !std::mem::replace(&mut told, true) {
                waiting(&Opening::Waiting {
                    lock: lock.to_owned(),
                });
            }
            Ok(())
        })
    }
}

/// Notes read from `paths`, in order, for [`Builder::note`]: `note-1`, `note-2`... each titled by
/// its file name, each at most [`crate::fs::MAX_INPUT_BYTES`].
///
/// # Errors
///
/// A file that cannot be read (`cannot read PATH`), is larger than the bound, or is not UTF-8.
pub fn notes(paths: &[PathBuf]) -> Result<Vec<Document>> {
    paths
        .iter()
        .enumerate()
        .map(|(i, path)| {
            let content = crate::fs::read_file_capped(path, crate::fs::MAX_INPUT_BYTES, "a note")
                .map_err(|e| Error::io(format!("cannot read {}", path.display()), e))?;
            let title = path.file_name().map_or_else(
                || path.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            );
            Ok(Document::new(format!("note-{}", i + 1), title, content))
        })
        .collect()
}

/// Told what happens as the conversation opens.
type OnOpening = Box<dyn FnMut(&Opening) + Send>;
/// Given each partial value as a reply streams in.
type OnPartial = Arc<dyn Fn(&Value) + Send + Sync>;
/// Wraps the opened backend (a progress display, a recorder).
type MapBackend = Box<dyn FnOnce(Arc<dyn Backend>) -> Arc<dyn Backend> + Send>;
/// Starts the MCP services for a project (`None`: every configured server).
#[cfg(feature = "mcp")]
pub type StartServices = Box<
    dyn FnOnce(
            Option<String>,
        ) -> claij_backends::BoxFuture<
            'static,
            std::result::Result<claij_mcp::Services, Box<dyn std::error::Error + Send + Sync>>,
        > + Send,
>;

/// Told the outcome of each vote ([`Builder::vote`]).
#[cfg(feature = "fsm")]
pub use crate::approve::OnVote;

/// Builds a [`Conversation`] ([`Claij::conversation`]); every option has a default.
#[must_use = "a builder does nothing until `open`"]
pub struct Builder<'c> {
    claij: &'c Claij,
    options: ModelOptions,
    schema: Option<Value>,
    named: Vec<Named>,
    given: Vec<Arc<dyn Interceptor>>,
    memory: Option<MemorySettings>,
    session: Option<PathBuf>,
    history: HistoryPolicy,
    max_steps: Option<usize>,
    budget_usd: Option<f64>,
    result_budget: usize,
    notes: Vec<Document>,
    project: Option<String>,
    example: ShowExample,
    approval: Approval,
    compact_budget: Option<crate::settings::CompactBudget>,
    metrics: bool,
    on_partial: Option<OnPartial>,
    on_opening: Option<OnOpening>,
    map_backend: Option<MapBackend>,
    #[cfg(feature = "mcp")]
    services: Option<Mcp>,
}

/// Where the MCP services of [`Named::Mcp`] come from.
#[cfg(feature = "mcp")]
enum Mcp {
    /// Started for the conversation's project when it opens, stopped when it closes.
    Start(StartServices),
    /// Started by the caller, who stops them.
    Shared(claij_mcp::Services),
}

impl Claij {
    /// A conversation with a model, to configure and [`Builder::open`].
    ///
    /// ```
    /// # async fn run(claij: &claij::Claij) -> claij::Result<()> {
    /// let mut chat = claij.conversation().model("openai:gpt-4o").open().await?;
    /// let answer = chat.turn("What is the capital of France?").await?;
    /// println!("{}", answer.value["answer"]);
    /// # Ok(()) }
    /// ```
    pub fn conversation(&self) -> Builder<'_> {
        Builder {
            claij: self,
            options: ModelOptions::default(),
            schema: None,
            named: Vec::new(),
            given: Vec::new(),
            memory: None,
            session: None,
            history: HistoryPolicy::default(),
            max_steps: None,
            budget_usd: None,
            result_budget: crate::tools::DEFAULT_RESULT_BUDGET,
            notes: Vec::new(),
            project: None,
            example: ShowExample::Auto,
            approval: Approval::Decline,
            compact_budget: None,
            metrics: false,
            on_partial: None,
            on_opening: None,
            map_backend: None,
            #[cfg(feature = "mcp")]
            services: None,
        }
    }

    /// Asks `model` (an alias, `local` or `provider:model`) once for a `T`: the schema is derived
    /// from `T`, the validated answer deserialized.
    ///
    /// # Errors
    ///
    /// As [`Builder::open`] and [`Conversation::ask`].
    pub async fn ask<T>(&self, model: &str, prompt: &str) -> Result<T>
    where
        T: DeserializeOwned + JsonSchema + 'static,
    {
        let mut conversation = self
            .conversation()
            .model(model)
            .schema_of::<T>()
            .open()
            .await?;
        let answer = conversation.ask::<T>(prompt).await;
        conversation.close().await;
        answer
    }
}

impl<'c> Builder<'c> {
    /// The model: an alias, `local` or `provider:model` (default: the settings' `defaults.llm`,
    /// else OpenRouter's default model when its key is set, else the local model).
    pub fn model(mut self, name: impl Into<String>) -> Self {
        self.options.llm = Some(name.into());
        self
    }

    /// How the model is called: the mode, retries, token limit, temperature, seed, matrix
    /// (its `llm`, when set, names the model as [`Builder::model`] does).
    pub fn options(mut self, options: ModelOptions) -> Self {
        self.options = options;
        self
    }

    /// The response schema (default: the base response schema, `answer` and `state`).
    pub fn schema(mut self, schema: Value) -> Self {
        self.schema = Some(schema);
        self
    }

    /// The response schema derived from `T`.
    pub fn schema_of<T: JsonSchema + 'static>(self) -> Self {
        let schema = (*claij_interceptors::schema_of::<T>()).clone();
        self.schema(schema)
    }

    /// Adds the interceptor `name` (once: a name given again keeps its first place).
    pub fn interceptor(mut self, name: Named) -> Self {
        if !self.named.contains(&name) {
            self.named.push(name);
        }
        self
    }

    /// Adds the interceptors `names`, in order ([`Builder::interceptor`]).
    pub fn interceptors(self, names: impl IntoIterator<Item = Named>) -> Self {
        names.into_iter().fold(self, Builder::interceptor)
    }

    /// Adds an interceptor of the caller's, after the named ones.
    pub fn with(mut self, interceptor: impl Interceptor + 'static) -> Self {
        self.given.push(Arc::new(interceptor));
        self
    }

    /// How [`Named::Memory`] remembers: the strategy and its sizes, recall's store (default the
    /// configuration's `[memory]`, [`crate::settings::memory`]). `recall` needs the features
    /// `recall` and `local`; its memories are kept under a session id of their own, new for a new
    /// conversation and carried by the session file.
    ///
    /// ```no_run
    /// # async fn run() -> claij::Result<()> {
    /// use claij::conversation::Named;
    /// use claij::settings::memory::{MemorySettings, Strategy};
    ///
    /// let claij = claij::Claij::from_env()?;
    /// let mut memory = MemorySettings { strategy: Strategy::Recall, ..MemorySettings::default() };
    /// memory.recall.k = 3;
    /// let mut chat = claij.conversation().model("openai:gpt-4o").interceptors([Named::Memory])
    ///     .memory(memory).session("s.json").open().await?;
    /// let answer = chat.turn("My cat is called Miso.").await?;
    /// # let _ = answer; Ok(()) }
    /// ```
    pub fn memory(mut self, memory: MemorySettings) -> Self {
        self.memory = Some(memory);
        self
    }

    /// The memory settings in effect: [`Builder::memory`]'s, else the configuration's.
    #[must_use]
    pub fn memory_settings(&self) -> &MemorySettings {
        self.memory
            .as_ref()
            .unwrap_or(&self.claij.settings().memory)
    }

    /// Carries the conversation in this JSON file: read before the first turn if it exists,
    /// written by [`Conversation::save`]; locked while the conversation is open (a second one on
    /// the same file waits its turn).
    pub fn session(mut self, path: impl Into<PathBuf>) -> Self {
        self.session = Some(path.into());
        self
    }

    /// The most messages (and estimated tokens) of the conversation sent before each turn.
    pub fn history(mut self, history: HistoryPolicy) -> Self {
        self.history = history;
        self
    }

    /// Turns are agent runs of at most `steps` model calls: the model calls tools and sees their
    /// results within the turn, until it answers.
    pub fn max_steps(mut self, steps: usize) -> Self {
        self.max_steps = Some(steps);
        self
    }

    /// Turns are agent runs that stop before a call that would take the turn past `usd` US
    /// dollars (needs the model's price in the settings).
    pub fn budget_usd(mut self, usd: f64) -> Self {
        self.budget_usd = Some(usd);
        self
    }

    /// Characters of tool and MCP results shown to the model (default
    /// [`crate::tools::DEFAULT_RESULT_BUDGET`]).
    pub fn result_budget(mut self, chars: usize) -> Self {
        self.result_budget = chars;
        self
    }

    /// A note the model may cite (with [`Named::Citations`]).
    pub fn note(mut self, note: Document) -> Self {
        self.notes.push(note);
        self
    }

    /// The project whose MCP services and tools the model may use (kept in the session).
    pub fn project(mut self, name: impl Into<String>) -> Self {
        self.project = Some(name.into());
        self
    }

    /// Whether the system prompt shows an example of a valid reply (default: where the schema is
    /// in the prompt).
    pub fn example(mut self, example: ShowExample) -> Self {
        self.example = example;
        self
    }

    /// Who decides on the schema extensions a model proposes ([`Named::Proposals`]); without
    /// one, every proposal is declined.
    pub fn approver(self, approver: impl Approver + 'static) -> Self {
        self.approval(Approval::given(approver))
    }

    /// Who decides on the schema extensions a model proposes, as [`Approval`] says (a vote's
    /// models asked with this conversation's options).
    pub fn approval(mut self, approval: Approval) -> Self {
        self.approval = approval;
        self
    }

    /// When the approved schema extensions are proposed for compaction, to the same approver
    /// ([`crate::extensions::propose_compaction`]): once the schema they compose renders past the
    /// budget's tokens (o200k_base), checked before each turn. Default the configuration's
    /// `[proposals] compact_budget`, else
    /// [`CompactBudget::DEFAULT`](crate::settings::CompactBudget::DEFAULT). Counting needs the
    /// feature `tokens`: without it a budget in tokens (this one or the configuration's) makes
    /// [`Builder::open`] fail ([`ErrorKind::Unavailable`]), and no default budget applies.
    pub fn compact_budget(mut self, budget: crate::settings::CompactBudget) -> Self {
        self.compact_budget = Some(budget);
        self
    }

    /// A vote of these models decides on proposed extensions ([`crate::approve::Vote`]), each
    /// asked with this conversation's options; `on_report` is told each vote's outcome.
    #[cfg(feature = "fsm")]
    pub fn vote(mut self, voters: Vec<String>, on_report: Option<OnVote>) -> Self {
        self.approval = Approval::Vote { voters, on_report };
        self
    }

    /// Counts what every call does ([`Conversation::metrics`]), as [`Named::Metrics`] does.
    pub fn metrics(mut self, on: bool) -> Self {
        self.metrics = on;
        self
    }

    /// Streams: `on_partial` gets each partial value (not validated) as a reply grows.
    pub fn on_partial(mut self, on_partial: impl Fn(&Value) + Send + Sync + 'static) -> Self {
        self.on_partial = Some(Arc::new(on_partial));
        self
    }

    /// Tells `on_opening` what happens while the conversation opens ([`Opening`]).
    pub fn on_opening(mut self, on_opening: impl FnMut(&Opening) + Send + 'static) -> Self {
        self.on_opening = Some(Box::new(on_opening));
        self
    }

    /// Wraps the opened backend (a progress display, a recorder) before the pipeline takes it.
    pub fn map_backend(
        mut self,
        map: impl FnOnce(Arc<dyn Backend>) -> Arc<dyn Backend> + Send + 'static,
    ) -> Self {
        self.map_backend = Some(Box::new(map));
        self
    }

    /// How the MCP services of [`Named::Mcp`] start, given the conversation's project.
    #[cfg(feature = "mcp")]
    pub fn services(mut self, start: StartServices) -> Self {
        self.services = Some(Mcp::Start(start));
        self
    }

    /// The MCP services of [`Named::Mcp`], started by the caller (who stops them: the
    /// conversation's [`Conversation::close`] leaves them running), for sharing between
    /// conversations.
    #[cfg(feature = "mcp")]
    pub fn shared_services(mut self, services: claij_mcp::Services) -> Self {
        self.services = Some(Mcp::Shared(services));
        self
    }

    /// The interceptors named, in order.
    #[must_use]
    pub fn named(&self) -> &[Named] {
        &self.named
    }

    /// The agent run's budget, when turns are agent runs.
    fn budget(&self) -> Option<Budget> {
        if self.max_steps.is_none() && self.budget_usd.is_none() {
            return None;
        }
        let mut budget = Budget::default();
        if let Some(steps) = self.max_steps {
            budget.max_steps = steps;
        }
        budget.max_cost_usd = self.budget_usd;
        Some(budget)
    }

    fn tell(&mut self, opening: Opening) {
        if let Some(on_opening) = &mut self.on_opening {
            on_opening(&opening);
        }
    }

    /// Opens the conversation: locks and reads the session file, opens the model, starts the MCP
    /// services, builds the pipeline.
    ///
    /// # Errors
    ///
    /// The session file cannot be locked or read (or its turn counter is at its maximum); the model
    /// does not open; a cost budget without the model's price; the MCP services do not start; an
    /// interceptor not in this build, or a compaction budget in tokens without the feature
    /// `tokens` ([`Builder::compact_budget`]); saved schema extensions that no longer compose.
    pub async fn open(mut self) -> Result<Conversation> {
        let given = self.compact_budget.map(|b| (b, "Builder::compact_budget"));
        let configured = self.claij.settings().compact_budget;
        honoured(
            given.or(configured.map(|b| (b, "[proposals] compact_budget"))),
            cfg!(feature = "tokens"),
        )?;
        // Locked and checked before anything is asked, so no paid turn is lost to another process
        // or to a file that cannot be written.
        let (session, lock) = match self.session.clone() {
            Some(path) => {
                let on_opening = &mut self.on_opening;
                let lock = SessionLock::acquire_telling(&path, |waiting| {
                    if let Some(on_opening) = on_opening.as_mut() {
                        on_opening(waiting);
                    }
                })?;
                let session = Session::load(&path)?;
                Session::check_turn(session.turn, Some(&path))?;
                (session, Some(lock))
            }
            None => (Session::default(), None),
        };
        let claij = self.claij;
        let settings = claij.settings();
        let opened = claij.open_with(
            self.options.llm.as_deref(),
            self.options.model_path.as_deref(),
        )?;
        if let Some(notice) = opened.notice.clone() {
            self.tell(Opening::Model(notice));
        }
        // A conversation keeps its project: a later turn without one goes on in it.
        let session = session.with_project(self.project.as_deref());
        #[cfg(feature = "mcp")]
        let (services, owned) = match (self.named.contains(&Named::Mcp), self.services.take()) {
            (true, Some(Mcp::Start(start))) => {
                let started = start(session.project.clone()).await.map_err(|e| {
                    Error::with_kind(ErrorKind::Config, crate::error_chain(e.as_ref()))
                })?;
                (Some(started), true)
            }
            (true, Some(Mcp::Shared(services))) => (Some(services), false),
            (true, None) => {
                return Err(Error::config(
                    "the mcp interceptor needs MCP services: give them with `services`",
                ));
            }
            (false, _) => (None, false),
        };
        #[cfg(not(feature = "mcp"))]
        if self.named.contains(&Named::Mcp) {
            return Err(Error::unavailable(
                "the mcp interceptor is not in this build of claij (its feature `mcp` is off)",
            ));
        }
        self.options
            .check_mode(&settings.defaults, opened.backend.as_ref(), &opened.model)?;
        let advice = self.options.matrix_choice(&opened.model, settings);
        for warning in advice.warnings {
            self.tell(Opening::Warning(warning));
        }
        let measured = advice.choice;
        if let Some(choice) = &measured {
            self.tell(Opening::Matrix(crate::options::matrix_notice(choice)));
        }
        let provider = opened.backend.provider().to_owned();
        let mut knobs = knobs(
            &self.options,
            (opened.model, &provider),
            &settings.defaults,
            measured.as_ref(),
        );
        knobs.history = self.history;
        knobs.example = self.example;
        let budget =
            crate::prices::priced_budget(self.budget(), settings, &provider, &knobs.model)?;
        if let Some(fallback) = &opened.fallback {
            // An explicit native mode keeps to native output (other native dialects only).
            fallback.set_mode_fallback(knobs.structured == StructuredMode::Auto);
        }
        let proposer = format!("{provider}:{}", knobs.model);
        let registry = if self.named.contains(&Named::Proposals) {
            let base = self.schema.clone().unwrap_or_else(claij_schema::base);
            let saved = session.extensions.as_ref();
            let registry = crate::approve::registry(base, saved).map_err(|e| {
                let file = self.session.as_ref().map_or_else(
                    || "the conversation".to_owned(),
                    |f| f.display().to_string(),
                );
                Error::session(format!(
                    "{file}: the saved schema extensions do not compose with this schema \
                     (`claij schema rollback FILE EXTENSION_ID` removes one): {}",
                    crate::error_chain(&e)
                ))
            })?;
            Some(registry)
        } else {
            None
        };
        let (proposals, compactor) = match &registry {
            Some(registry) => {
                let (proposals, approver) = self.proposals(registry, proposer)?;
                (Some(proposals), self.compactor(approver))
            }
            None => (None, None),
        };
        let names = self.named.clone();
        #[cfg(not(feature = "mcp"))]
        let services: Option<()> = None;
        let memory = match names.contains(&Named::Memory) {
            true => {
                self.tell_memory(&session);
                Some(memory_interceptor(self.memory_settings(), settings).await?)
            }
            false => None,
        };
        let (mut chain, tools) = chain(
            &names,
            services.as_ref(),
            self.notes.clone(),
            self.result_budget,
            memory,
        )?;
        for interceptor in &self.given {
            chain.push_shared(Arc::clone(interceptor), OnError::Fail);
        }
        if let Some(proposals) = &proposals {
            // Skip: a delta the pipeline's registry refuses leaves the previous schema in use.
            chain.push_shared(Arc::new(proposals.clone()), OnError::Skip);
        }
        if self.schema.is_none() {
            // The base schema's free-text `state` means nothing without a state machine.
            chain.push(states(&names));
        }
        let backend = match self.map_backend.take() {
            Some(map) => map(opened.backend),
            None => opened.backend,
        };
        // Last in the chain, so its post hook runs first: no other hook can fail a call unrecorded.
        let metrics = (self.metrics || names.contains(&Named::Metrics)).then(Metrics::new);
        if let Some(metrics) = &metrics {
            chain.push(metrics.clone());
        }
        let mut pipeline = Pipeline::new(backend, knobs, chain);
        // An agent run calls the tools and MCP tools within the turn.
        for executor in tools {
            pipeline = pipeline.with_tools(executor);
        }
        if let Some(schema) = self.schema.clone() {
            pipeline = pipeline.with_base_schema(schema);
        }
        let ctx = session.to_context(pipeline.chain(), self.session.as_deref())?;
        Ok(Conversation {
            pipeline,
            ctx,
            session,
            path: self.session,
            _lock: lock,
            #[cfg(feature = "mcp")]
            services: services.filter(|_| owned),
            registry,
            compactor,
            names,
            budget,
            on_partial: self.on_partial,
            calls: Vec::new(),
            #[cfg(feature = "eval")]
            evaluated: None,
            metrics: metrics.map(|m| m.collector().clone()),
        })
    }

    /// Tells ([`Opening::Memory`]) when the session file was kept with the other kind of memory
    /// (summaries, or recall's store) than the strategy in effect: what stays, and what starts
    /// empty.
    fn tell_memory(&mut self, session: &Session) {
        let Some(path) = self.session.clone() else {
            return;
        };
        let strategy = self.memory_settings().strategy;
        let (summaries, recall) = (
            session.carried.contains_key("memory"),
            session.carried.contains_key("recall"),
        );
        let file = path.display();
        let told = match strategy {
            Strategy::Recall if summaries && !recall => format!(
                "{file} keeps its memory as summaries (memory strategy bounded, window or \
                 hierarchical): recall starts this conversation's memories empty, and the \
                 summaries stay in the file for those strategies"
            ),
            Strategy::Bounded | Strategy::Window | Strategy::Hierarchical
                if recall && !summaries =>
            {
                format!(
                    "{file} keeps its memories in the recall store (memory strategy recall): \
                     {strategy} starts with no summaries, and the recalled memories stay in the \
                     store for the recall strategy"
                )
            }
            _ => return,
        };
        self.tell(Opening::Memory(told));
    }

    /// The proposals interceptor over `registry`, and its approver as given.
    fn proposals(
        &mut self,
        registry: &Arc<Mutex<Registry>>,
        proposer: String,
    ) -> Result<(Proposals, Arc<dyn Approver>)> {
        let approver =
            std::mem::take(&mut self.approval).approver(self.claij, &self.options, registry)?;
        let proposals = crate::approve::proposals_with(Arc::clone(&approver), registry, proposer);
        Ok((proposals, approver))
    }

    /// What proposes compactions past the budget to `approver` (feature `tokens`).
    fn compactor(&self, approver: Arc<dyn Approver>) -> Option<compaction::Compactor> {
        let budget = self
            .compact_budget
            .or(self.claij.settings().compact_budget)
            .unwrap_or(crate::settings::CompactBudget::DEFAULT);
        compaction::Compactor::new(budget, approver, Arc::clone(&self.claij.notices))
    }
}

/// A compaction budget set (`budget`, and where: the builder's or the configuration's) refused
/// when this build cannot count tokens (`tokens` false), naming where it was set and the feature.
fn honoured(budget: Option<(crate::settings::CompactBudget, &str)>, tokens: bool) -> Result<()> {
    match budget {
        Some((budget, key)) => budget
            .honoured(tokens)
            .map(drop)
            .map_err(|e| Error::unavailable(format!("{key} = {budget}: {e}"))),
        None => Ok(()),
    }
}

/// The pipeline's knobs from `options` for `model` of `provider`: the request carries the embedded
/// model's own token limit, so a cut reply names it.
fn knobs(
    options: &ModelOptions,
    (model, provider): (String, &str),
    defaults: &crate::settings::Defaults,
    measured: Option<&crate::matrix::Choice>,
) -> claij_interceptors::Config {
    let mut config = options.config(model, defaults, measured);
    config.max_tokens = config
        .max_tokens
        .or(crate::options::default_max_tokens(provider));
    config
}

/// The MCP services a chain may hold (none without the `mcp` feature).
#[cfg(feature = "mcp")]
type Services = claij_mcp::Services;
#[cfg(not(feature = "mcp"))]
type Services = ();

/// The interceptor of [`Named::Memory`] for `memory`: a summary strategy, or recall (features
/// `recall` and `local`) on the store `[memory.recall]` names.
async fn memory_interceptor(
    memory: &MemorySettings,
    settings: &crate::settings::Settings,
) -> Result<Arc<dyn Interceptor>> {
    if let Some(summaries) = memory.summaries() {
        return Ok(Arc::new(summaries));
    }
    #[cfg(all(feature = "recall", feature = "local"))]
    {
        let recall = crate::recall::interceptor(&memory.recall, settings).await?;
        Ok(Arc::new(recall))
    }
    #[cfg(not(all(feature = "recall", feature = "local")))]
    {
        let _ = settings;
        Err(Error::unavailable(
            "memory strategy recall is not in this build of claij (its features `recall` and `local` are off)",
        ))
    }
}

/// The chain of the interceptors `names` (proposals and metrics apart: they are shared, and
/// added last), tool and MCP results shown to the model in `result_budget` characters per reply,
/// `memory` as [`Named::Memory`] (the bounded summaries when `None`); with the executors of its
/// tools, for an agent run.
fn chain(
    names: &[Named],
    services: Option<&Services>,
    notes: Vec<Document>,
    result_budget: usize,
    mut memory: Option<Arc<dyn Interceptor>>,
) -> Result<(Chain, Vec<claij_interceptors::Executor>)> {
    let mut chain = Chain::new();
    let mut executors = Vec::new();
    for name in names {
        match name {
            Named::Memory => match memory.take() {
                Some(memory) => chain.push_shared(memory, OnError::Fail),
                None => chain.push(claij_interceptors::builtin::memory::Memory::default()),
            },
            Named::Citations => chain.push(Citations::new(notes.clone())),
            #[cfg(feature = "eval")]
            Named::Eval => chain.push(Eval::new()),
            #[cfg(not(feature = "eval"))]
            Named::Eval => {
                return Err(Error::unavailable(
                    "the eval interceptor is not in this build of claij (its feature `eval` is off)",
                ));
            }
            Named::Tools => {
                let tools = crate::tools::with_budget(result_budget)
                    .map_err(|e| Error::with_kind(ErrorKind::Config, e.to_string()))?;
                executors.push(tools.executor());
                chain.push(tools);
            }
            Named::Mcp => {
                #[cfg(feature = "mcp")]
                if let Some(services) = services {
                    let limits = claij_interceptors::Limits {
                        result_chars: result_budget,
                        ..claij_mcp::default_limits()
                    };
                    let mcp = claij_mcp::McpInterceptor::new(services.clone()).with_limits(limits);
                    executors.push(mcp.executor());
                    chain.push(mcp);
                }
                #[cfg(not(feature = "mcp"))]
                let _ = services;
            }
            // Shared with its registry, and last in the chain: `Builder::open` adds them.
            Named::Proposals | Named::Metrics => {}
        }
    }
    Ok((chain, executors))
}

/// What `state` may be in a conversation on the base schema: how the turn ended, plus
/// `waiting_for_tools` when the model can call tools or run code whose results come next turn.
fn states(names: &[Named]) -> States {
    let states = States::conversation();
    if names
        .iter()
        .any(|n| matches!(n, Named::Tools | Named::Mcp | Named::Eval))
    {
        states.with_state(
            "waiting_for_tools",
            "you called tools or ran code, and will answer from their results on the next turn",
        )
    } else {
        states
    }
}

/// An open conversation: the model's pipeline, what the model is told and remembers, the session
/// file and its lock, the MCP services it started.
pub struct Conversation {
    pipeline: Pipeline,
    ctx: Context,
    /// The session file as read, and its lock (held until the conversation is dropped).
    session: Session,
    path: Option<PathBuf>,
    _lock: Option<SessionLock>,
    #[cfg(feature = "mcp")]
    services: Option<claij_mcp::Services>,
    /// The schema extensions approved, saved with the conversation.
    registry: Option<Arc<Mutex<Registry>>>,
    /// Proposes compacting them past the budget.
    compactor: Option<compaction::Compactor>,
    names: Vec<Named>,
    budget: Option<Budget>,
    on_partial: Option<OnPartial>,
    /// The tool and MCP calls the last turn ran, with their results.
    calls: Vec<ToolResult>,
    /// The result of the `eval` code of the last turn's reply, if it had any.
    #[cfg(feature = "eval")]
    evaluated: Option<EvalResult>,
    metrics: Option<MetricsCollector>,
}

impl fmt::Debug for Conversation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Conversation")
            .field("model", &self.pipeline.config().model)
            .field("names", &self.names)
            .field("session", &self.path)
            .finish_non_exhaustive()
    }
}

impl Conversation {
    /// One turn: the answer (a value valid against the schema), or the pipeline's error (no valid
    /// reply within the retries, a budget reached, a backend error).
    ///
    /// # Errors
    ///
    /// An [`Error`] of kind [`ErrorKind::Pipeline`], the pipeline's
    /// underneath ([`Error::pipeline`]): [`Error::is_invalid_reply`], [`Error::is_budget`], or a
    /// backend's ([`Error::is_timeout`], [`Error::is_retryable`], ...).
    pub async fn turn(&mut self, prompt: &str) -> Result<Answer> {
        if let (Some(registry), Some(compactor)) = (&self.registry, &mut self.compactor) {
            compactor.check(registry, self.path.as_deref()).await;
        }
        self.calls.clear();
        #[cfg(feature = "eval")]
        {
            self.evaluated = None;
        }
        let on_partial = self.on_partial.clone();
        let show = move |value: &Value| {
            if let Some(on_partial) = &on_partial {
                on_partial(value);
            }
        };
        let streams = self.on_partial.is_some();
        let pipeline = &self.pipeline;
        let ctx = &mut self.ctx;
        let result = match (&self.budget, streams) {
            (Some(budget), true) => pipeline
                .run_agent_streaming(ctx, prompt, budget, &show)
                .await
                .map(|run| (run.answer, Some(run.calls))),
            (Some(budget), false) => pipeline
                .run_agent(ctx, prompt, budget)
                .await
                .map(|run| (run.answer, Some(run.calls))),
            (None, true) => pipeline
                .ask_streaming(ctx, prompt, &show)
                .await
                .map(|answer| (answer, None)),
            (None, false) => pipeline.ask(ctx, prompt).await.map(|answer| (answer, None)),
        };
        if let (Some(metrics), Err(e)) = (&self.metrics, &result) {
            metrics.record_error(e);
        }
        let (answer, calls) = result?;
        // An agent run's calls are its own; an ask's ran after the reply, for the next turn.
        self.calls = calls.unwrap_or_else(|| self.ran_now());
        // The reply's code ran after it, for the next turn: its result is this turn's.
        #[cfg(feature = "eval")]
        if self.names.contains(&Named::Eval) {
            self.evaluated = self.ctx.get::<EvalResult>().cloned();
        }
        Ok(answer)
    }

    /// One turn, its answer deserialized as a `T` (the schema of this turn derived from `T`).
    ///
    /// # Errors
    ///
    /// As [`Conversation::turn`]; a valid value that does not deserialize as a `T`.
    pub async fn ask<T>(&mut self, prompt: &str) -> Result<T>
    where
        T: DeserializeOwned + JsonSchema + 'static,
    {
        self.calls.clear();
        let answer = self.pipeline.ask_as::<T>(&mut self.ctx, prompt).await;
        if let (Some(metrics), Err(e)) = (&self.metrics, &answer) {
            metrics.record_error(e);
        }
        let answer = answer?;
        self.calls = self.ran_now();
        Ok(answer.value)
    }

    /// Writes the session file, if there is one: the turn, the history, what each interceptor
    /// carries to the next turn, the approved extensions, and the deltas the turn's requests were
    /// composed of.
    ///
    /// # Errors
    ///
    /// The file cannot be written (the previous one is left whole).
    pub fn save(&mut self) -> Result<()> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let applied = self.pipeline.applied();
        let session = self.session.continued(
            &self.ctx,
            self.pipeline.chain(),
            &applied,
            std::time::SystemTime::now(),
        )?;
        let session = {
            let registry = self.registry.as_deref().map(crate::approve::lock);
            session.with_extensions(registry.as_deref())
        };
        session.save(path)?;
        self.session = session;
        Ok(())
    }

    /// Starts the conversation over: no turn, history, memory, tool results or `eval` result; the
    /// next save writes it so.
    pub fn reset(&mut self) {
        self.ctx = Context::default();
        self.session = std::mem::take(&mut self.session).reset();
    }

    /// Whether one more turn can be counted (a counter at its maximum is an error, not a wrap).
    ///
    /// # Errors
    ///
    /// The turn counter is at its maximum.
    pub fn check_turn(&self) -> Result<()> {
        Session::check_turn(self.ctx.turn, self.path.as_deref())
    }

    /// What the model is told and remembers, carried from turn to turn.
    #[must_use]
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// The pipeline (the backend, the knobs, the chain).
    #[must_use]
    pub fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }

    /// The session file, if there is one.
    #[must_use]
    pub fn session_path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The interceptors named, in order.
    #[must_use]
    pub fn named(&self) -> &[Named] {
        &self.names
    }

    /// The tool and MCP calls the last turn ran, with their results.
    #[must_use]
    pub fn ran(&self) -> &[ToolResult] {
        &self.calls
    }

    /// The result of the last turn's `eval` code, if its reply had any.
    #[cfg(feature = "eval")]
    #[must_use]
    pub fn evaluated(&self) -> Option<&EvalResult> {
        self.evaluated.as_ref()
    }

    /// What the calls so far did, when metrics are counted.
    #[must_use]
    pub fn metrics(&self) -> Option<MetricsSnapshot> {
        self.metrics.as_ref().map(MetricsCollector::snapshot)
    }

    /// The results a turn that was not an agent run left for the next: those of the named tools
    /// and MCP interceptors (each replaces its own after every reply; another origin's are from an
    /// earlier run, kept for the model).
    fn ran_now(&self) -> Vec<ToolResult> {
        self.ctx
            .tool_results
            .iter()
            .filter(|r| match &r.origin {
                ToolOrigin::Rust => self.names.contains(&Named::Tools),
                ToolOrigin::Mcp { .. } => self.names.contains(&Named::Mcp),
                _ => false,
            })
            .cloned()
            .collect()
    }

    /// Stops the MCP services it started.
    pub async fn close(self) {
        #[cfg(feature = "mcp")]
        if let Some(services) = &self.services {
            services.close().await;
        }
    }
}

mod compaction;
#[cfg(test)]
mod tests;
