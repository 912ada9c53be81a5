//! `claij ask`: one turn with a model, answered as a JSON document valid against a schema.
//!
//! The flow: choose and open the backend ([`llm`]), load the conversation ([`session`]), run the
//! pipeline (schema deltas from the interceptors, the validation-retry loop) on a current-thread
//! runtime, save the conversation, print the value and what each attempt cost ([`report`]).

pub(crate) mod approve;
mod consensus;
/// Models by name, opened ([`claij::model`]).
pub(crate) use claij::model as llm;
/// The model options' rule ([`claij::options`]).
pub(crate) use claij::options as model;
mod options;
mod progress;
mod report;
mod stream;
#[cfg(test)]
mod tests;

use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context as _, Result};
use std::io::IsTerminal as _;

use claij_interceptors::builtin::citations::{Citations, Document};
use claij_interceptors::builtin::eval::{Eval, EvalResult};
use claij_interceptors::builtin::memory::Memory;
use claij_interceptors::builtin::metrics::{Metrics, MetricsCollector};
use claij_interceptors::builtin::states::States;
use claij_interceptors::{
    Budget, Chain, Config, Error, Pipeline, ShowExample, StructuredMode, ToolResult,
};
use claij_mcp::{McpInterceptor, Services};

use crate::Status;
use crate::front::Front;
use crate::input;

pub(crate) use self::options::ModelOptions;
pub(crate) use self::report::{Over, cut_warning, over_line, truncation, truncation_of};
use claij::session::{Session, SessionLock};

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
    /// Carry the conversation in this JSON file: the turn counter, the memory, the message history,
    /// the tool and MCP results the model has yet to see, the project and the approved schema
    /// extensions. Read before the turn if it exists, written after a valid answer. Locked from
    /// the read to the write (through FILE.lock, removed when the run ends): a concurrent run on
    /// the same file waits its turn. `--memory` is another name for it.
    #[arg(long = "session", visible_alias = "memory", value_name = "FILE")]
    memory: Option<PathBuf>,
    /// The most messages of the conversation sent before each turn (and kept in the session file);
    /// 0: none.
    #[arg(long, value_name = "N", default_value_t = claij_interceptors::DEFAULT_HISTORY_MESSAGES, value_parser = crate::args::history_messages)]
    history_messages: usize,
    /// The most tokens (estimated, about four bytes each) those messages may take; 0: none.
    #[arg(long, value_name = "N", default_value_t = claij_interceptors::DEFAULT_HISTORY_TOKENS, value_parser = crate::args::history_tokens)]
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

    /// The agent run's budget, when `--max-steps` or `--budget-usd` asks for one.
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
}

/// Asks once (or, with `--consensus`, several models at once); exit 0 with a valid answer, 1 when
/// every attempt was invalid (or the models did not agree).
pub(crate) fn run(args: &Args, front: &Front) -> Result<Status> {
    if let Some(models) = consensus::models(&args.options)? {
        if args.options.metrics || args.options.interceptors.contains(&Interceptor::Metrics) {
            anyhow::bail!("--metrics counts one model's calls, --consensus asks several: drop one");
        }
        if args.options.budget().is_some() {
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
        Err(Error::RetriesExhausted(exhausted)) => {
            report::exhausted(&exhausted, elapsed, args.options.json)?;
            Ok(Status::Invalid)
        }
        Err(
            e @ Error::BudgetExceeded {
                budget,
                limit,
                used,
                estimate,
                ..
            },
        ) => {
            let attempts = e.attempts();
            let over = report::Over {
                budget: budget.to_string(),
                limit,
                used,
                estimate,
            };
            report::over_budget(&over, attempts, elapsed, args.options.json)?;
            Ok(Status::Invalid)
        }
        Err(e) => Err(e.into()),
    };
    if conversation.shows_metrics()
        && let Some(table) = conversation.metrics_table()
    {
        // After the answer: a failed write to stderr leaves nothing else to tell.
        let _ = std::io::Write::write_all(&mut std::io::stderr(), table.as_bytes());
    }
    conversation.close();
    status
}

/// An open conversation: the backend, the pipeline, its context, the MCP services it started.
pub(crate) struct Conversation<'a> {
    options: &'a Options,
    runtime: tokio::runtime::Runtime,
    pipeline: Pipeline,
    /// What the model is told and remembers, carried from turn to turn.
    pub ctx: claij_interceptors::Context,
    /// The conversation file as read, and its lock (held until the conversation is dropped).
    session: Session,
    _lock: Option<SessionLock>,
    services: Option<Services>,
    /// The progress line's attempt counter, when the backend draws one.
    turns: Option<progress::Turns>,
    /// The schema extensions approved with `--interceptors proposals`, saved with the conversation.
    registry: Option<Arc<std::sync::Mutex<claij_schema::Registry>>>,
    /// Whether replies are standard responses (rendered for people on a terminal).
    standard: bool,
    /// The interceptors in the chain.
    names: Vec<Interceptor>,
    /// Where partial values go, when the turn streams.
    partials: Option<stream::Partials>,
    /// The agent run's budget, when turns are agent runs (`--max-steps`, `--budget-usd`).
    budget: Option<Budget>,
    /// The tool and MCP calls the last turn ran, with their results.
    calls: Vec<ToolResult>,
    /// The result of the `eval` code of the last turn's reply, if it had any.
    evaluated: Option<EvalResult>,
    /// The answer text the last turn's partial values wrote (`chat`).
    streamed: String,
    /// The metrics interceptor's tally (`--metrics`, `--interceptors metrics`, always in `chat`).
    metrics: Option<MetricsCollector>,
}

impl<'a> Conversation<'a> {
    /// Reads the schema, the conversation file and the configuration, opens the backend and starts
    /// the MCP servers `--interceptors mcp` needs.
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
        default_interceptors: &[Interceptor],
        chat: bool,
        front: &Front,
    ) -> Result<Self> {
        let base = base_schema(options)?;
        // Locked and checked before anything is asked, so no paid turn is lost to another process
        // or to a file that cannot be written.
        let (session, lock) = match &options.memory {
            Some(path) => {
                let lock = lock_session(path, options.json)?;
                let session = Session::load(path)?;
                Session::check_turn(session.turn, Some(path))?;
                (session, Some(lock))
            }
            None => (Session::default(), None),
        };
        let claij = front.claij()?;
        let settings = claij.settings();
        let opened = llm::open(
            options.model.llm.as_deref(),
            options.model.model_path.as_deref(),
            claij,
        )?;
        if let Some(notice) = &opened.notice
            && !options.json
        {
            report::notice(notice)?;
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the async runtime")?;
        let names = interceptors(options, default_interceptors);
        // A conversation keeps its project: a later turn without --project goes on in it.
        let session = session.with_project(options.project.as_deref());
        let services = if names.contains(&Interceptor::Mcp) {
            Some(runtime.block_on(project_services(session.project.as_deref(), settings))?)
        } else {
            None
        };
        let notes = notes(&options.note)?;
        let measured = options.model.matrix_choice(&opened.model, settings);
        if let Some(choice) = &measured
            && !options.json
        {
            report::notice(&model::matrix_notice(choice))?;
        }
        let provider = opened.backend.provider().to_owned();
        let knobs = config(
            options,
            (opened.model, &provider),
            &settings.defaults,
            measured.as_ref(),
        );
        let budget =
            claij::prices::priced_budget(options.budget(), settings, &provider, &knobs.model)?;
        if let Some(fallback) = &opened.fallback {
            // An explicit --mode native keeps to native output (other native dialects only).
            fallback.set_mode_fallback(knobs.structured == StructuredMode::Auto);
            front.set_quiet(options.json);
        }
        let proposals = if names.contains(&Interceptor::Proposals) {
            let saved = session.extensions.as_ref();
            let proposer = format!("{}:{}", opened.backend.provider(), knobs.model);
            let opened =
                approve::for_conversation(options, base.as_ref(), saved, claij, &proposer)?;
            Some(opened)
        } else {
            None
        };
        let (mut chain, tools) = chain_with(
            &names,
            services.as_ref(),
            notes,
            options.tool_results_budget,
        )?;
        if let Some((proposals, _)) = &proposals {
            // Skip: a delta the pipeline's registry refuses leaves the previous schema in use.
            chain.push_shared(
                Arc::new(proposals.clone()),
                claij_interceptors::OnError::Skip,
            );
        }
        if base.is_none() {
            // The base schema's free-text `state` means nothing without a state machine.
            chain.push(states(&names));
        }
        // The local model takes seconds to minutes on a CPU: on a terminal, show it working.
        let watched = opened.backend.provider() == "local"
            && !options.json
            && std::io::stderr().is_terminal();
        let standard = names.contains(&Interceptor::Citations);
        // The progress line shows the reply as it grows: on the same screen, partial values
        // would only fight it for the line.
        let display = display(options, chat, standard)
            .filter(|_| !(watched && std::io::stdout().is_terminal()));
        let (backend, turns) = if watched {
            let (watched, turns) = progress::Watched::stderr(opened.backend);
            (
                Arc::new(watched) as Arc<dyn claij_backends::Backend>,
                Some(turns),
            )
        } else {
            (opened.backend, None)
        };
        // Last in the chain, so its post hook runs first: no other hook can fail a call unrecorded.
        let metrics =
            (chat || options.metrics || names.contains(&Interceptor::Metrics)).then(Metrics::new);
        if let Some(metrics) = &metrics {
            chain.push(metrics.clone());
        }
        let mut pipeline = Pipeline::new(backend, knobs, chain);
        // An agent run (--max-steps) calls the tools and MCP tools within the turn.
        for executor in tools {
            pipeline = pipeline.with_tools(executor);
        }
        if let Some(base) = base {
            pipeline = pipeline.with_base_schema(base);
        }
        let ctx = session.to_context(pipeline.chain(), options.memory.as_deref())?;
        Ok(Self {
            options,
            runtime,
            pipeline,
            ctx,
            session,
            _lock: lock,
            services,
            turns,
            registry: proposals.map(|(_, registry)| registry),
            standard,
            names,
            partials: display
                .map(|display| stream::Partials::new(display, Box::new(std::io::stdout()))),
            streamed: String::new(),
            budget,
            calls: Vec::new(),
            evaluated: None,
            metrics: metrics.map(|metrics| metrics.collector().clone()),
        })
    }

    /// One turn: the answer or why there is none, and how long it took.
    pub(crate) fn turn(
        &mut self,
        prompt: &str,
    ) -> (
        Result<claij_interceptors::Answer, Error>,
        std::time::Duration,
    ) {
        if let Some(turns) = &self.turns {
            turns.start();
        }
        let started = Instant::now();
        self.calls.clear();
        self.evaluated = None;
        self.streamed.clear();
        let show = |value: &serde_json::Value| {
            if let Some(partials) = &self.partials {
                partials.show(value);
            }
        };
        let on_partial: Option<&(dyn Fn(&serde_json::Value) + Send + Sync)> =
            self.partials.as_ref().map(|_| &show as _);
        let pipeline = &self.pipeline;
        let ctx = &mut self.ctx;
        let result = match (&self.budget, on_partial) {
            (Some(budget), Some(show)) => self
                .runtime
                .block_on(pipeline.run_agent_streaming(ctx, prompt, budget, show))
                .map(|run| (run.answer, Some(run.calls))),
            (Some(budget), None) => self
                .runtime
                .block_on(pipeline.run_agent(ctx, prompt, budget))
                .map(|run| (run.answer, Some(run.calls))),
            (None, Some(show)) => self
                .runtime
                .block_on(pipeline.ask_streaming(ctx, prompt, show))
                .map(|answer| (answer, None)),
            (None, None) => self
                .runtime
                .block_on(pipeline.ask(ctx, prompt))
                .map(|answer| (answer, None)),
        };
        if let Some(partials) = &self.partials {
            self.streamed = partials.finish();
        }
        if let (Some(metrics), Err(e)) = (&self.metrics, &result) {
            metrics.record_error(e);
        }
        let result = result.map(|(answer, calls)| {
            // An agent run's calls are its own; an ask's ran after the reply, for the next turn.
            self.calls = calls.unwrap_or_else(|| self.ran_now());
            // The reply's code ran after it, for the next turn: its result is this turn's.
            if self.names.contains(&Interceptor::Eval) {
                self.evaluated = self.ctx.get::<EvalResult>().cloned();
            }
            answer
        });
        (result, started.elapsed())
    }

    /// The answer text the last turn's partial values wrote on stdout (empty when none did).
    pub(crate) fn streamed(&self) -> &str {
        &self.streamed
    }

    /// Writes the conversation file, if there is one: the turn, the history, what each
    /// interceptor carries to the next turn, the approved extensions, and the deltas the turn's
    /// requests were composed of (their audit log records a change once).
    pub(crate) fn save(&mut self) -> Result<()> {
        let Some(path) = &self.options.memory else {
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
            let registry = self.registry.as_deref().map(approve::lock);
            session.with_extensions(registry.as_deref())
        };
        session.save(path)?;
        self.session = session;
        Ok(())
    }

    /// Starts the conversation over (`chat`'s `/reset`): no turn, history, memory, tool results
    /// or `eval` result; the next save writes it so.
    pub(crate) fn reset(&mut self) {
        self.ctx = claij_interceptors::Context::default();
        self.session = std::mem::take(&mut self.session).reset();
    }

    /// Whether one more turn can be counted (a counter at its maximum is an error, not a wrap).
    pub(crate) fn check_turn(&self) -> Result<()> {
        Ok(Session::check_turn(
            self.ctx.turn,
            self.options.memory.as_deref(),
        )?)
    }

    /// Prints a valid answer: the standard response rendered for people on a terminal, else the
    /// value (or the `--json` report).
    pub(crate) fn print_answer(
        &self,
        answer: &claij_interceptors::Answer,
        elapsed: std::time::Duration,
    ) -> Result<()> {
        let ran = report::Ran {
            calls: self.calls.iter().collect(),
            eval: self
                .names
                .contains(&Interceptor::Eval)
                .then_some(self.evaluated.as_ref()),
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

    /// The tool and MCP calls the last turn ran, with their results.
    pub(crate) fn ran(&self) -> &[ToolResult] {
        &self.calls
    }

    /// The result of the last turn's `eval` code, if its reply had any.
    pub(crate) fn evaluated(&self) -> Option<&EvalResult> {
        self.evaluated.as_ref()
    }

    /// The results a turn that was not an agent run left for the next: those of the interceptors
    /// in the chain (each replaces its own after every reply; another origin's are from an earlier
    /// run, kept for the model).
    fn ran_now(&self) -> Vec<ToolResult> {
        self.ctx
            .tool_results
            .iter()
            .filter(|r| match &r.origin {
                claij_interceptors::ToolOrigin::Rust => self.names.contains(&Interceptor::Tools),
                claij_interceptors::ToolOrigin::Mcp { .. } => {
                    self.names.contains(&Interceptor::Mcp)
                }
                _ => false,
            })
            .cloned()
            .collect()
    }

    /// The metrics table, when the metrics interceptor runs.
    pub(crate) fn metrics_table(&self) -> Option<String> {
        self.metrics
            .as_ref()
            .map(|metrics| metrics.snapshot().render())
    }

    /// Whether the metrics table is printed after the answer (`--metrics`, `--interceptors
    /// metrics`).
    pub(crate) fn shows_metrics(&self) -> bool {
        self.options.metrics || self.names.contains(&Interceptor::Metrics)
    }

    /// Whether `--json` was given.
    pub(crate) fn json(&self) -> bool {
        self.options.json
    }

    /// Stops the MCP servers it started.
    pub(crate) fn close(self) {
        if let Some(services) = &self.services {
            self.runtime.block_on(services.close());
        }
    }
}

/// How partial values are shown, if the turn streams: never with `--json`; with `--stream`, or by
/// default when stdout is a terminal; `chat` writes the answer as it grows (not for the standard
/// response, which is rendered whole).
fn display(options: &Options, chat: bool, standard: bool) -> Option<stream::Display> {
    let terminal = std::io::stdout().is_terminal();
    let on = options.stream || (!options.no_stream && terminal);
    if options.json || !on {
        return None;
    }
    match (chat, terminal) {
        (true, _) if standard => None,
        (true, _) => Some(stream::Display::Answer),
        (false, true) => Some(stream::Display::Line(progress::terminal_width())),
        (false, false) => Some(stream::Display::Lines),
    }
}

/// One line for a tool or MCP result a turn ran.
pub(crate) fn tool_result_line(result: &claij_interceptors::ToolResult) -> String {
    report::tool_result_line(result)
}

/// One line for the result of a reply's `eval` code.
pub(crate) fn eval_line(result: &EvalResult) -> String {
    report::eval_line(result)
}

/// One line for a turn: attempts, tokens, time and cost.
pub(crate) fn summary_line(
    answer: &claij_interceptors::Answer,
    elapsed: std::time::Duration,
) -> String {
    report::total_line(&answer.attempts, answer.usage, elapsed)
}

/// The pipeline's knobs from the options, for `model` of `provider`.
fn config(
    options: &Options,
    (model, provider): (String, &str),
    defaults: &claij::settings::Defaults,
    measured: Option<&claij::matrix::Choice>,
) -> Config {
    let mut config = options.model.config(model, defaults, measured);
    // The request carries the embedded model's own limit, so a cut reply names it (and its flag).
    config.max_tokens = config.max_tokens.or(model::default_max_tokens(provider));
    config.history = claij_interceptors::HistoryPolicy {
        max_messages: options.history_messages,
        max_tokens: options.history_tokens,
    };
    config.example = match options.example {
        None | Some(ExampleWhen::Auto) => ShowExample::Auto,
        Some(ExampleWhen::Always) => ShowExample::Always,
        Some(ExampleWhen::Never) => ShowExample::Never,
    };
    config
}

/// The interceptors to run, in order, each once: `--interceptors` (or `defaults` without it), then
/// `citations` for `--standard`.
fn interceptors(options: &Options, defaults: &[Interceptor]) -> Vec<Interceptor> {
    let given = if options.interceptors.is_empty() {
        defaults
    } else {
        &options.interceptors
    };
    let mut names: Vec<Interceptor> = Vec::new();
    for &name in given {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    if options.standard && !names.contains(&Interceptor::Citations) {
        names.push(Interceptor::Citations);
    }
    names
}

/// The chain for `names` (the citations interceptor checks its citations itself).
fn chain(
    names: &[Interceptor],
    services: Option<&Services>,
    notes: Vec<Document>,
) -> Result<Chain> {
    chain_with(names, services, notes, crate::args::DEFAULT_RESULT_BUDGET).map(|(chain, _)| chain)
}

/// [`chain`], tool and MCP results shown to the model in `result_budget` characters per reply;
/// with the executors of its tools, for an agent run.
fn chain_with(
    names: &[Interceptor],
    services: Option<&Services>,
    notes: Vec<Document>,
    result_budget: usize,
) -> Result<(Chain, Vec<claij_interceptors::Executor>)> {
    let mut chain = Chain::new();
    let mut executors = Vec::new();
    for name in names {
        match name {
            Interceptor::Memory => chain.push(Memory::default()),
            Interceptor::Citations => chain.push(Citations::new(notes.clone())),
            Interceptor::Eval => chain.push(Eval::new()),
            Interceptor::Tools => {
                let tools = claij::tools::with_budget(result_budget)?;
                executors.push(tools.executor());
                chain.push(tools);
            }
            Interceptor::Mcp => {
                if let Some(services) = services {
                    let limits = claij_interceptors::Limits {
                        result_chars: result_budget,
                        ..claij_mcp::default_limits()
                    };
                    let mcp = McpInterceptor::new(services.clone()).with_limits(limits);
                    executors.push(mcp.executor());
                    chain.push(mcp);
                }
            }
            // Shared with its registry, and last in the chain: `Conversation::open_with` adds them.
            Interceptor::Proposals | Interceptor::Metrics => {}
        }
    }
    Ok((chain, executors))
}

/// What `state` may be in a conversation on the base schema: how the turn ended, plus
/// `waiting_for_tools` when the model can call tools or run code whose results come next turn.
fn states(names: &[Interceptor]) -> States {
    let states = States::conversation();
    if names
        .iter()
        .any(|n| matches!(n, Interceptor::Tools | Interceptor::Mcp | Interceptor::Eval))
    {
        states.with_state(
            "waiting_for_tools",
            "you called tools or ran code, and will answer from their results on the next turn",
        )
    } else {
        states
    }
}

/// `--schema`, read and checked (`None`: the default base schema).
fn base_schema(options: &Options) -> Result<Option<serde_json::Value>> {
    let Some(path) = &options.schema else {
        return Ok(None);
    };
    let schema = input::read_json(path)?;
    claij_schema::check(&schema).with_context(|| input::name(path).to_owned())?;
    Ok(Some(schema))
}

/// `--note` files as documents: `note-1`, `note-2`... titled by their file names.
fn notes(paths: &[PathBuf]) -> Result<Vec<Document>> {
    paths
        .iter()
        .enumerate()
        .map(|(i, path)| {
            let content = input::read_file_capped(path, input::MAX_INPUT_BYTES, "a note")
                .with_context(|| format!("cannot read {}", path.display()))?;
            let title = path.file_name().map_or_else(
                || path.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            );
            Ok(Document::new(format!("note-{}", i + 1), title, content))
        })
        .collect()
}

/// The configuration's MCP servers, started, seen through `--project`.
async fn mcp_services(options: &Options, settings: &claij::settings::Settings) -> Result<Services> {
    project_services(options.project.as_deref(), settings).await
}

/// The configuration's MCP servers, started, seen through `project`.
async fn project_services(
    project: Option<&str>,
    settings: &claij::settings::Settings,
) -> Result<Services> {
    crate::mcp::start_configured(settings, project, "--interceptors mcp").await
}

/// Locks the session file `path` ([`SessionLock::acquire_with`]), saying on stderr (unless
/// `quiet`) that it waits for another process that holds it.
pub(crate) fn lock_session(path: &std::path::Path, quiet: bool) -> Result<SessionLock> {
    let mut told = quiet;
    let lock = SessionLock::acquire_with(path, &mut |lock_path| {
        if !told {
            report::notice(&format!(
                "waiting for {}: another claij is on this conversation",
                lock_path.display()
            ))
            .map_err(std::io::Error::other)?;
            told = true;
        }
        Ok(())
    })?;
    Ok(lock)
}
