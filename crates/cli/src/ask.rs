//! `claij ask`: one turn with a model, answered as a JSON document valid against a schema.
//!
//! The flags become a [`claij::conversation::Builder`] (the library opens the model, loads the
//! session, builds the pipeline and runs the turn); this module runs it on a current-thread runtime
//! and prints the value and what each attempt cost ([`report`]), the progress line ([`progress`])
//! and the partial values ([`stream`]).

pub(crate) mod approve;
mod consensus;
mod progress;
mod report;
mod stream;

use std::io::{IsTerminal as _, stdin};
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use anyhow::{Context as _, Result};
use claij::conversation::{Builder, Named, Opening, StartServices};
use claij::interceptors::{Answer, Error, ShowExample};
use claij::mcp::offer::{Elicitation, Offer};
use claij::report::Over;
use claij::settings::memory::{self, MAX_MEMORY_CHARS, MAX_RECALL_K, Store, Strategy};
use clap::builder::{PossibleValuesParser, TypedValueParser as _};

use crate::exit::Status;
use crate::front::Front;
use crate::input;

pub(crate) use crate::options::ModelOptions;

/// Arguments of `claij ask`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// What to ask (an empty question, or one of spaces only, is refused).
    #[arg(value_parser = crate::args::question)]
    prompt: String,
    #[command(flatten)]
    options: Options,
}

/// What `claij ask` and `claij chat` share: the model, the schema, the interceptors, the knobs.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Options {
    /// The response schema (a JSON Schema file); default the base response schema (`answer`, `state`).
    #[arg(long, short, value_name = "FILE")]
    schema: Option<String>,
    #[command(flatten)]
    pub(crate) model: ModelOptions,
    #[command(flatten)]
    consensus: consensus::ConsensusOptions,
    /// Interceptors to run, comma-separated, in order.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "NAME[,NAME...]")]
    interceptors: Vec<Interceptor>,
    #[command(flatten)]
    approve: approve::ApproveOptions,
    /// With `--interceptors proposals`: propose compacting the approved schema extensions to the
    /// approver once their schema renders past N tokens (o200k_base), or never (`off`); default
    /// `[proposals] compact_budget`, else 120.
    #[arg(long, value_name = "N|off")]
    compact_budget: Option<claij::settings::CompactBudget>,
    /// Carry the conversation in this JSON file: the turn counter, the memory, the message history,
    /// the tool and MCP results the model has yet to see, the project and the approved schema
    /// extensions. Read before the turn if it exists, written after a valid answer. Locked from
    /// the read to the write (through FILE.lock, removed when the run ends): a concurrent run on
    /// the same file waits its turn. `--memory` is another name for it.
    #[arg(long = "session", visible_alias = "memory", value_name = "FILE")]
    memory: Option<PathBuf>,
    /// How the memory interceptor remembers: bounded (summaries within a budget), window (the last
    /// summaries), hierarchical (insights rewritten every few turns) or recall (memory by meaning:
    /// each turn's summary embedded and kept in a store, the most similar recalled; needs the
    /// embedding model, `cargo xtask embed-model`). Default `[memory] strategy`, else bounded.
    #[arg(long, value_name = "STRATEGY", value_parser = PossibleValuesParser::new(Strategy::ALL.map(Strategy::name)).try_map(|s| s.parse::<Strategy>()))]
    memory_strategy: Option<Strategy>,
    /// With --memory-strategy recall: the most memories recalled per turn (default
    /// `[memory.recall] k`, else 5).
    #[arg(long, value_name = "N", value_parser = |t: &str| crate::args::whole(t, 1, MAX_RECALL_K))]
    recall_k: Option<usize>,
    /// With --memory-strategy recall: the lowest cosine similarity recalled, -1 to 1 (default
    /// `[memory.recall] min_similarity`, else 0.2).
    #[arg(long, value_name = "X", value_parser = |t: &str| memory::similarity(t.trim().parse().ok()))]
    recall_min_similarity: Option<f32>,
    /// With --memory-strategy recall: the most characters of recalled memories in the prompt;
    /// past it the least similar are left out, saying so (default `[memory.recall] max_chars`,
    /// else 1500).
    #[arg(long, value_name = "CHARS", value_parser = |t: &str| crate::args::whole(t, 1, MAX_MEMORY_CHARS))]
    recall_max_chars: Option<usize>,
    /// With --memory-strategy recall: where memories are kept: `embedded` (the user's SQLite file
    /// under the data directory) or a vector database server's URL (default `[memory.recall]
    /// store`, else embedded).
    #[arg(long, value_name = "embedded|URL", value_parser = |s: &str| s.parse::<Store>())]
    memory_store: Option<Store>,
    /// The most messages of the conversation sent before each turn (and kept in the session file);
    /// 0: none.
    #[arg(long, value_name = "N", default_value_t = claij::interceptors::DEFAULT_HISTORY_MESSAGES, value_parser = crate::args::history_messages)]
    history_messages: usize,
    /// The most tokens (estimated, about four bytes each) those messages may take; 0: none.
    #[arg(long, value_name = "N", default_value_t = claij::interceptors::DEFAULT_HISTORY_TOKENS, value_parser = crate::args::history_tokens)]
    history_tokens: usize,
    /// Let the model call tools and see their results within the turn, until it answers: an agent
    /// run of at most N steps (model calls that end in tool calls or in the answer). Without it
    /// (or --budget-usd), tool and MCP results reach the model on the next turn.
    #[arg(long, value_name = "N", value_parser = crate::args::steps)]
    max_steps: Option<usize>,
    /// An agent run (as --max-steps; 8 steps unless it says) that stops before a model call that
    /// would take the turn past this many US dollars: what it spent plus the call's estimate (its
    /// prompt, and --max-tokens or the most an earlier call wrote). Needs the model's price
    /// (`claij models` lists them): without one, nothing is sent.
    #[arg(long, value_name = "USD", value_parser = crate::args::dollars)]
    budget_usd: Option<f64>,
    /// Characters of one reply's tool (and, apart, MCP) results shown to the model, shared by
    /// them: on the next turn, or in an agent run's next step (--max-steps, --budget-usd). A
    /// longer one is cut, saying so.
    #[arg(long, value_name = "CHARS", default_value_t = crate::args::DEFAULT_RESULT_BUDGET, value_parser = crate::args::result_budget)]
    tool_results_budget: usize,
    /// Ask for the standard response (the `citations` interceptor: the answer plus `metadata` on its
    /// sources); on a terminal it is rendered for people, `--json` keeps the raw value.
    #[arg(long)]
    standard: bool,
    /// A note the model may cite (with `--standard` or `--interceptors citations`), repeatable: its
    /// id is `note-N` in order, its title the file name.
    #[arg(long, value_name = "FILE")]
    note: Vec<PathBuf>,
    /// With `--interceptors mcp`: the project whose services and tools the model may use.
    #[arg(long, value_name = "NAME")]
    project: Option<String>,
    /// With `--interceptors mcp`: the model that answers the servers' sampling requests, as `claij
    /// mcp --sampling-llm` (default: the configuration's `samplingLlm`, else none offered).
    #[arg(long, value_name = "ALIAS|PROVIDER:MODEL")]
    sampling_llm: Option<String>,
    /// With `--interceptors mcp`: how the servers' questions are answered, as `claij mcp
    /// --elicitation` (default: the configuration's `elicitation`, else `decline`).
    #[arg(long, value_name = "POLICY", value_parser = crate::mcp::elicitation::policy())]
    elicitation: Option<Elicitation>,
    /// Whether the system prompt shows an example of a valid reply, built from the schema (its
    /// `examples`, `enum`s and `const`s; never its descriptions). Default: auto, where the schema is
    /// in the prompt (`--mode prompted`, the local model).
    #[arg(long, value_enum, value_name = "WHEN")]
    example: Option<ExampleWhen>,
    /// Print `{"value", "attempts", "usage", "elapsed_ms", "tool_results", "truncated"}` on stdout
    /// (`truncated`: the valid reply was cut at a bound, --max-tokens or a string's length, and may
    /// be incomplete); stderr only for errors and log lines (warnings unless `-q`; `--log-format
    /// json` for machines). No partial values.
    #[arg(long)]
    json: bool,
    /// Show the value while the model writes it (on by default when stdout is a terminal): on a
    /// terminal one line redrawn in place, then the final value as without it; else JSON lines,
    /// `{"partial": VALUE}` per partial value and last `{"value": VALUE}`, the final one (none when
    /// no reply is valid); `chat` writes the answer as it grows (the local model's progress line on
    /// a terminal shows the reply instead); an agent run (--max-steps) shows each step's value,
    /// tool calls included. Partial values are not validated.
    #[arg(long, overrides_with = "no_stream")]
    stream: bool,
    /// Do not stream.
    #[arg(long, overrides_with = "stream")]
    no_stream: bool,
    /// After the answer, a table on stderr of what the calls did: time per stage, fixes by kind,
    /// violations by keyword, retries, first-try validity, tokens and cost (the `metrics`
    /// interceptor; `chat`: at the end, and `/metrics` at any time).
    #[arg(long)]
    metrics: bool,
}

/// The interceptors `--interceptors` can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Interceptor {
    /// Every reply carries a `summary`; later turns are reminded of them.
    Memory,
    /// The standard response: the answer with `metadata` on the notes and sources it uses.
    Citations,
    /// Every reply may carry `eval`: Rhai expressions run in a sandbox, results on the next turn.
    Eval,
    /// Every reply may call tools (`now`: the UTC time; `random_int`: a random integer in a range);
    /// their results come back on the next turn.
    Tools,
    /// The tools of the configuration's MCP servers (`mcpServers`), called through `mcp_calls`.
    Mcp,
    /// Every reply may propose a schema extension; `--approve` decides, and an approved one joins
    /// the schema of every later request (saved with `--memory`).
    Proposals,
    /// Counts what every call did (as `--metrics`, which prints the table).
    Metrics,
}

/// `--example`: when the system prompt shows an example reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ExampleWhen {
    /// Where the schema is in the prompt: prompted delivery and the local model.
    Auto,
    /// Always, hosted structured output included.
    Always,
    /// Never.
    Never,
}

impl Args {
    /// `--threads`: the process sets it in the environment before any thread starts.
    pub(crate) fn threads(&self) -> Option<NonZeroUsize> {
        self.options.threads()
    }
}

impl Options {
    /// `--threads`.
    pub(crate) fn threads(&self) -> Option<NonZeroUsize> {
        self.model.threads
    }

    /// Whether `--max-steps` or `--budget-usd` makes turns agent runs.
    fn agent(&self) -> bool {
        self.max_steps.is_some() || self.budget_usd.is_some()
    }
}

impl From<Interceptor> for Named {
    fn from(name: Interceptor) -> Self {
        match name {
            Interceptor::Memory => Named::Memory,
            Interceptor::Citations => Named::Citations,
            Interceptor::Eval => Named::Eval,
            Interceptor::Tools => Named::Tools,
            Interceptor::Mcp => Named::Mcp,
            Interceptor::Proposals => Named::Proposals,
            Interceptor::Metrics => Named::Metrics,
        }
    }
}

impl From<ExampleWhen> for ShowExample {
    fn from(when: ExampleWhen) -> Self {
        match when {
            ExampleWhen::Auto => ShowExample::Auto,
            ExampleWhen::Always => ShowExample::Always,
            ExampleWhen::Never => ShowExample::Never,
        }
    }
}

/// Asks once (or, with `--consensus`, several models at once); exit 0 with a valid answer, 1 when
/// every attempt was invalid, the model refused (one line, sent once) or the models did not agree.
pub(crate) fn run(args: &Args, front: &Front) -> Result<Status> {
    if let Some(models) = consensus::models(&args.options)? {
        if args.options.metrics || args.options.interceptors.contains(&Interceptor::Metrics) {
            anyhow::bail!("--metrics counts one model's calls, --consensus asks several: drop one");
        }
        if args.options.agent() {
            anyhow::bail!(
                "--max-steps and --budget-usd bound one model's agent run, --consensus asks several models once each: drop one"
            );
        }
        return consensus::run(args, &models, front);
    }
    let mut conversation = Conversation::open(&args.options, front)?;
    let (result, elapsed) = conversation.turn(&args.prompt);
    let status = match result {
        Ok(answer) => {
            conversation.save()?;
            conversation.print_answer(&answer, elapsed)?;
            Ok(Status::Ok)
        }
        Err(e) => match e.pipeline() {
            Some(Error::RetriesExhausted(exhausted)) => {
                report::exhausted(exhausted, elapsed, args.options.json)?;
                Ok(Status::Invalid)
            }
            Some(stopped) if let Some(over) = Over::of(stopped) => {
                report::over_budget(&over, stopped.attempts(), elapsed, args.options.json)?;
                Ok(Status::Invalid)
            }
            _ if let Some(line) = claij::report::refusal(&e) => {
                std::io::Write::write_all(&mut std::io::stderr(), format!("{line}\n").as_bytes())?;
                Ok(Status::Invalid)
            }
            _ => Err(e.into()),
        },
    };
    if let Some(table) = conversation.metrics_table() {
        // After the answer: a failed write to stderr leaves nothing else to tell.
        let _ = std::io::Write::write_all(&mut std::io::stderr(), table.as_bytes());
    }
    conversation.close();
    status
}

/// An open conversation on the terminal: the library's [`claij::conversation::Conversation`], the
/// runtime it runs on, and what is shown while it runs.
pub(crate) struct Conversation<'a> {
    options: &'a Options,
    runtime: tokio::runtime::Runtime,
    inner: claij::conversation::Conversation,
    /// The progress line's attempt counter, when the backend draws one.
    turns: Option<claij::progress::Turns>,
    /// Whether replies are standard responses (rendered for people on a terminal).
    standard: bool,
    /// Where partial values go, when the turn streams.
    partials: Option<Arc<stream::Partials>>,
    /// The answer text the last turn's partial values wrote (`chat`).
    streamed: String,
}

impl<'a> Conversation<'a> {
    /// Reads the schema, the notes, the conversation file and the configuration, opens the
    /// backend and starts the MCP servers `--interceptors mcp` needs.
    pub(crate) fn open(options: &'a Options, front: &Front) -> Result<Self> {
        Self::open_with(options, &[], false, front)
    }

    /// [`Conversation::open`] for `claij chat`: the memory interceptor unless `--interceptors` says
    /// otherwise.
    pub(crate) fn open_chat(options: &'a Options, front: &Front) -> Result<Self> {
        consensus::refuse_in_chat(options)?;
        Self::open_with(options, &[Interceptor::Memory], true, front)
    }

    fn open_with(
        options: &'a Options,
        defaults: &[Interceptor],
        chat: bool,
        front: &Front,
    ) -> Result<Self> {
        let base = base_schema(options)?;
        let claij = front.claij()?;
        front.set_quiet(options.json);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the async runtime")?;
        let mut builder = configure(claij.conversation(), options, defaults, base, claij)?;
        let standard = builder.named().contains(&Named::Citations);
        let display = display(options, chat, standard);
        let partials = display
            .map(|display| Arc::new(stream::Partials::new(display, Box::new(std::io::stdout()))));
        let watched: Arc<Mutex<Option<claij::progress::Turns>>> = Arc::default();
        if chat || options.metrics {
            builder = builder.metrics(true);
        }
        if let Some(partials) = &partials {
            let partials = Arc::clone(partials);
            let watched = Arc::clone(&watched);
            let terminal = std::io::stdout().is_terminal();
            builder = builder.on_partial(move |value| {
                // The progress line shows the reply as it grows: on the same screen, partial
                // values would only fight it for the line.
                let drawn = watched
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .is_some();
                if !(drawn && terminal) {
                    partials.show(value);
                }
            });
        }
        let json = options.json;
        builder = builder.on_opening(move |opening| notice(opening, json));
        // The local model takes seconds to minutes on a CPU: on a terminal, show it working.
        let shown = Arc::clone(&watched);
        builder = builder.map_backend(move |backend| {
            if backend.provider() == "local" && !json && std::io::stderr().is_terminal() {
                let (watched, turns) = progress::stderr(backend);
                *shown.lock().unwrap_or_else(PoisonError::into_inner) = Some(turns);
                Arc::new(watched)
            } else {
                backend
            }
        });
        if builder.named().contains(&Named::Mcp) {
            builder = builder.services(start_services(claij, options)?);
        }
        let inner = runtime.block_on(builder.open())?;
        let turns = watched
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        Ok(Self {
            options,
            runtime,
            inner,
            turns,
            standard,
            partials,
            streamed: String::new(),
        })
    }

    /// One turn: the answer or why there is none, and how long it took.
    pub(crate) fn turn(&mut self, prompt: &str) -> (claij::Result<Answer>, std::time::Duration) {
        if let Some(turns) = &self.turns {
            turns.start();
        }
        let started = Instant::now();
        self.streamed.clear();
        let result = self.runtime.block_on(self.inner.turn(prompt));
        if let Some(partials) = &self.partials {
            self.streamed = partials.finish();
        }
        (result, started.elapsed())
    }

    /// The answer text the last turn's partial values wrote on stdout (empty when none did).
    pub(crate) fn streamed(&self) -> &str {
        &self.streamed
    }

    /// Prints a valid answer: the standard response rendered for people on a terminal, else the
    /// value (or the `--json` report).
    pub(crate) fn print_answer(&self, answer: &Answer, elapsed: std::time::Duration) -> Result<()> {
        let ran = report::Ran {
            calls: self.ran(),
            eval: self
                .named()
                .contains(&Named::Eval)
                .then_some(self.evaluated()),
        };
        if self.standard && !self.options.json && std::io::stdout().is_terminal() {
            return report::rendered(answer, &ran, elapsed);
        }
        let form = if self.options.json {
            report::Form::Report
        } else if self
            .partials
            .as_ref()
            .is_some_and(|p| p.display() == stream::Display::Lines)
        {
            report::Form::Final
        } else {
            report::Form::Pretty
        };
        report::answer(answer, &ran, elapsed, form)
    }

    /// The metrics table, when it is printed after the answer (`--metrics`, `--interceptors
    /// metrics`).
    pub(crate) fn metrics_table(&self) -> Option<String> {
        let shown = self.options.metrics || self.named().contains(&Named::Metrics);
        shown.then(|| self.metrics()).flatten().map(|m| m.render())
    }

    /// Whether `--json` was given.
    pub(crate) fn json(&self) -> bool {
        self.options.json
    }

    /// Stops the MCP servers it started.
    pub(crate) fn close(self) {
        self.runtime.block_on(self.inner.close());
    }
}

/// The library's conversation underneath: its session, context, results and metrics.
impl std::ops::Deref for Conversation<'_> {
    type Target = claij::conversation::Conversation;

    fn deref(&self) -> &Self::Target {
        &self.inner
    }
}

impl std::ops::DerefMut for Conversation<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.inner
    }
}

/// The builder with what `options` say: the model and its knobs, the schema, the interceptors
/// (`--interceptors`, else `defaults`; then `citations` for `--standard`), the session, the
/// bounds, the notes, the project, the approver (for `claij ask` and each model of `--consensus`).
fn configure<'c>(
    builder: Builder<'c>,
    options: &Options,
    defaults: &[Interceptor],
    base: Option<serde_json::Value>,
    claij: &claij::Claij,
) -> Result<Builder<'c>> {
    let given = if options.interceptors.is_empty() {
        defaults
    } else {
        &options.interceptors
    };
    let mut builder = builder
        .options(options.model.to_options())
        .interceptors(given.iter().map(|&n| Named::from(n)))
        .history(claij::interceptors::HistoryPolicy {
            max_messages: options.history_messages,
            max_tokens: options.history_tokens,
        })
        .result_budget(options.tool_results_budget)
        .example(options.example.map_or(ShowExample::Auto, ShowExample::from));
    if let Some(base) = base {
        builder = builder.schema(base);
    }
    if let Some(path) = &options.memory {
        builder = builder.session(path);
    }
    let memory = builder.memory_settings().clone();
    builder = builder.memory(memory.overridden(&memory::MemoryOverrides {
        strategy: options.memory_strategy,
        k: options.recall_k,
        min_similarity: options.recall_min_similarity,
        max_chars: options.recall_max_chars,
        store: options.memory_store.clone(),
    }));
    if let Some(steps) = options.max_steps {
        builder = builder.max_steps(steps);
    }
    if let Some(usd) = options.budget_usd {
        builder = builder.budget_usd(usd);
    }
    if let Some(project) = &options.project {
        builder = builder.project(project);
    }
    for note in claij::conversation::notes(&options.note)? {
        builder = builder.note(note);
    }
    if options.standard {
        builder = builder.interceptor(Named::Citations);
    }
    if builder.named().contains(&Named::Proposals) {
        builder = approve::for_conversation(builder, &options.approve, claij, options.json)?;
        if let Some(budget) = options.compact_budget {
            builder = builder.compact_budget(budget);
        }
    }
    Ok(builder)
}

/// A notice of the conversation's opening, on stderr: the lock it waits for, the model chosen
/// and the matrix's choice (not with `--json`), the matrix's warnings.
fn notice(opening: &Opening, json: bool) {
    if !json || matches!(opening, Opening::Warning(_)) {
        // A closed stderr is no reason to stop.
        let _ = report::notice(&opening.to_string());
    }
}

/// How the MCP servers of `--interceptors mcp` start ([`claij::mcp::offer::starter`]; `ask` is
/// the terminal's form).
fn start_services(claij: &claij::Claij, options: &Options) -> Result<StartServices> {
    let offer = Offer::new(options.sampling_llm.clone(), options.elicitation);
    let (asker, terminal) = (crate::mcp::elicitation::Terminal, stdin().is_terminal());
    let started = claij::mcp::offer::starter(claij, offer, Some(Arc::new(asker)), terminal);
    started.map_err(|e| anyhow::anyhow!(claij::mcp::Error::from(e).said(None)))
}

/// How partial values are shown, if the turn streams ([`stream::Display::choose`]): never with
/// `--json`; with `--stream`, or by default when stdout is a terminal.
fn display(options: &Options, chat: bool, standard: bool) -> Option<stream::Display> {
    let terminal = std::io::stdout().is_terminal();
    let on = !options.json && (options.stream || (!options.no_stream && terminal));
    let width = terminal.then(progress::terminal_width);
    stream::Display::choose(on, chat, standard, width)
}

/// `--schema`, read and checked (`None`: the default base schema).
fn base_schema(options: &Options) -> Result<Option<serde_json::Value>> {
    let Some(path) = &options.schema else {
        return Ok(None);
    };
    let schema = input::read_json(path)?;
    claij::schema::check(&schema).with_context(|| input::name(path).to_owned())?;
    Ok(Some(schema))
}
