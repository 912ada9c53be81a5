//! `claij-suite`: claij's test harnesses, kept out of the shipped `claij` binary (a `publish =
//! false` crate). `claij-suite run` runs the live integration suites `cargo xtask integration`
//! drives, one JSON line per test on stdout; `claij-suite list` names them; `claij-suite
//! mcp-conformance URL` is the client the official MCP conformance suite drives ([`conformance`]).
//!
//! Each line is `{model, suite, test, passed, valid_first_try, attempts, retries, tokens_in,
//! tokens_out, cost, elapsed_ms, detail, mode}` (`mode`: how the schema reached the model; the retry
//! suite runs once per mode so `claij models` can choose one), [`claij::matrix::Record`], the one
//! definition `claij models` reads. A test that fails (wrong content, no valid reply, a backend
//! error) is a line with `passed: false` and the reason in `detail`, never an early exit: the matrix
//! needs every cell. These suites call real models, so nothing but xtask runs them.
//!
//! The design's test settings are the defaults: one retry ([`MAX_RETRIES`]) and 30 seconds per
//! test, whatever the configuration's `[defaults]` say, so every measurement is comparable;
//! `--max-retries` and `--timeout` override them.
//!
//! Exit codes: 0 every test passed, 1 one failed, 2 usage, configuration or backend error (one line
//! on stderr).

mod args;
mod chat;
mod conformance;
mod machines;
mod memory;
mod seen;
#[cfg(test)]
mod tests;

use std::io::Write as _;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use claij_backends::{Backend, Usage};
use claij_interceptors::{
    Answer, Attempt, Config, Context, Error, Pipeline, StructuredMode, Verdict,
};
use clap::{Parser, Subcommand};

use self::args::ModelFlags;
use self::memory::Carrier;
pub(crate) use claij::matrix::Record;

/// claij's test harnesses: the live integration suites (`cargo xtask integration` runs them: they
/// call real models).
#[derive(Debug, Parser)]
#[command(name = "claij-suite", version, about, long_about = None)]
struct Cli {
    /// The configuration file instead of $CLAIJ_CONFIG, ./.mcp.json and
    /// ~/.config/claij/config.toml.
    #[arg(long, value_name = "FILE", global = true)]
    config: Option<std::path::PathBuf>,
    /// More log lines on stderr: -v debug, -vv trace, for claij's crates (default: warnings and
    /// errors). RUST_LOG, when set, is the filter instead.
    #[arg(short, long, action = clap::ArgAction::Count, global = true, conflicts_with = "quiet")]
    verbose: u8,
    /// Errors only on stderr: no warnings.
    #[arg(short, long, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

/// `claij-suite ...`.
#[derive(Debug, Subcommand)]
enum Command {
    /// Run suites against one model, printing a JSON line per test.
    Run(Args),
    /// List the suites and their tests, one `suite test` per line.
    List,
    /// The client the official MCP conformance suite drives: connect to URL (loopback only), list
    /// its tools, call each one.
    McpConformance(conformance::Args),
}

/// How a command ended, when it did not fail outright.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Ok,
    /// A test failed, or a conformance call reported an error (exit 1).
    Invalid,
    /// Stopped by a signal, after cleaning up (exit `code`: 128 + the signal's number).
    Signalled {
        name: &'static str,
        code: u8,
    },
}

/// Arguments of `claij-suite run`.
#[derive(Debug, clap::Args)]
struct Args {
    /// The suites to run, in order (repeat or comma-separate); default all.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "SUITE")]
    suite: Vec<Suite>,
    /// The model and how it is called, as `claij ask`, except that the compatibility matrix (which
    /// these suites measure) is never consulted, a test that pins a mode keeps it, and the retries
    /// are 1 unless `--max-retries` says otherwise. `--llm` names the model in the records
    /// (default: the model the configuration chooses).
    #[command(flatten)]
    model: ModelFlags,
    /// Seconds a test may take before it is stopped and failed.
    #[arg(long, default_value = "30", value_name = "SECS", value_parser = args::seconds)]
    timeout: Duration,
    /// Accepted for clarity: the output is always JSON lines.
    #[arg(long)]
    json_lines: bool,
}

/// The suites, in the order `all` runs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Suite {
    /// The memory interceptor alone carries facts to later turns: no earlier turn is sent.
    Memory,
    /// The message history alone carries a fact to the next turn: no memory interceptor.
    History,
    /// The tools interceptor calls a tool whose result the model must report.
    Tools,
    /// The MCP FSM and the MCP interceptor (`mcp_calls`) read a file through the real
    /// filesystem server.
    Mcp,
    /// A strict schema that provokes retries.
    Retry,
    /// A small code-review state machine.
    Fsm,
    /// The citations interceptor's standard response.
    Citations,
    /// Memory, tools and citations at once.
    Combined,
    /// The eval interceptor computes in its sandbox.
    Eval,
}

/// Retries per model call unless `--max-retries` says otherwise: the design's test setting.
pub(crate) const MAX_RETRIES: usize = 1;

/// What a test measured across its model calls.
#[derive(Debug, Clone)]
pub(crate) struct Tally {
    /// Every call's first reply was valid.
    pub valid_first_try: bool,
    pub attempts: usize,
    pub retries: usize,
    /// The calls' usage; its cost counts only the calls whose cost is known.
    pub usage: Usage,
    /// Some call's cost is unknown (a model without a price): the test's cost is then unknown.
    pub unpriced: bool,
    /// The most o200k_base tokens a request's schema took (`claij::tokens::schema_tokens`).
    pub schema_tokens: Option<u64>,
}

/// A test's verdict on the content.
pub(crate) struct Judged {
    pub passed: bool,
    pub detail: String,
}

/// What the tests share: the backend and the pipeline's knobs.
pub(crate) struct Env {
    pub backend: Arc<dyn Backend>,
    /// The pipeline's knobs (model, retries, mode, limits, sampling) every test starts from.
    pub config: Config,
}

impl Suite {
    pub(crate) const ALL: [Suite; 9] = [
        Suite::Memory,
        Suite::History,
        Suite::Tools,
        Suite::Mcp,
        Suite::Retry,
        Suite::Fsm,
        Suite::Citations,
        Suite::Combined,
        Suite::Eval,
    ];

    /// The name on the command line and in the records.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Suite::Memory => "memory",
            Suite::History => "history",
            Suite::Tools => "tools",
            Suite::Mcp => "mcp",
            Suite::Retry => "retry",
            Suite::Fsm => "fsm",
            Suite::Citations => "citations",
            Suite::Combined => "combined",
            Suite::Eval => "eval",
        }
    }

    /// The suite's tests (the name says what each checks; keep in step with xtask's plan).
    pub(crate) fn tests(self) -> &'static [&'static str] {
        match self {
            Suite::Memory => &[NEXT_TURN_TEST, "recall-after-distractions"],
            Suite::History => &[NEXT_TURN_TEST],
            Suite::Tools => &["report-nonce"],
            Suite::Mcp => &[MCP_FSM_TEST, "mcp-calls-token-file"],
            // Once per way of delivering the schema, so the matrix can choose one per model.
            Suite::Retry => &[
                "strict-word/native",
                "strict-word/tool",
                "strict-word/prompted",
            ],
            Suite::Fsm => &["code-review"],
            Suite::Citations => &["cite-note"],
            Suite::Combined => &["memory-tools-citations"],
            Suite::Eval => &["compute-sum"],
        }
    }
}

/// The MCP suite's test through the MCP FSM (its other goes through the interceptor).
const MCP_FSM_TEST: &str = "read-token-file";

/// The memory and history suites' two-turn test (memory's other is a longer conversation).
const NEXT_TURN_TEST: &str = "recall-next-turn";

impl Default for Tally {
    fn default() -> Self {
        Self {
            valid_first_try: true,
            attempts: 0,
            retries: 0,
            usage: Usage::default(),
            unpriced: false,
            schema_tokens: None,
        }
    }
}

impl Tally {
    /// What the test's calls cost: `None` when some call's cost is unknown, never counted as 0;
    /// `Some(0.0)` when it made no call.
    pub(crate) fn cost(&self) -> Option<f64> {
        if self.unpriced {
            None
        } else {
            Some(self.usage.cost_usd.unwrap_or(0.0))
        }
    }

    /// Counts one pipeline call's attempts.
    pub(crate) fn add(&mut self, attempts: &[Attempt]) {
        self.count(attempts.iter().map(|a| (&a.verdict, &a.usage)));
        let sent = attempts
            .iter()
            .filter_map(|a| claij::tokens::schema_tokens(&a.request))
            .map(|n| n as u64);
        self.schema_tokens = self.schema_tokens.into_iter().chain(sent).max();
    }

    /// Counts one model call from its attempts' verdicts and usage, in order (none: no call).
    pub(crate) fn count<'a>(
        &mut self,
        attempts: impl IntoIterator<Item = (&'a Verdict, &'a Usage)>,
    ) {
        let mut n = 0;
        for (verdict, usage) in attempts {
            if n == 0 {
                self.valid_first_try &= *verdict == Verdict::Valid;
            }
            n += 1;
            self.unpriced |= usage.cost_usd.is_none();
            self.usage += *usage;
        }
        self.attempts += n;
        self.retries += n.saturating_sub(1);
    }
}

impl Env {
    /// The pipeline configuration for a test.
    pub(crate) fn config(&self) -> Config {
        self.config.clone()
    }

    /// Asks once, counting the attempts: `Some` with a valid answer, `None` when retries ran out.
    ///
    /// # Errors
    ///
    /// Anything else the pipeline returns (a backend or hook failure), after counting its attempts.
    pub(crate) async fn ask(
        &self,
        pipeline: &Pipeline,
        ctx: &mut Context,
        prompt: &str,
        tally: &mut Tally,
    ) -> Result<Option<Answer>> {
        match pipeline.ask(ctx, prompt).await {
            Ok(answer) => {
                tally.add(&answer.attempts);
                Ok(Some(answer))
            }
            Err(Error::RetriesExhausted(exhausted)) => {
                tally.add(&exhausted.attempts);
                Ok(None)
            }
            Err(err) => {
                tally.add(err.attempts());
                Err(err.into())
            }
        }
    }
}

fn main() -> ExitCode {
    // A bug must still end in one line, not a backtrace.
    std::panic::set_hook(Box::new(|info| {
        let _ = writeln!(std::io::stderr(), "error: internal error: {info}");
    }));
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // `--help` and `--version` print to stdout and exit 0.
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            let rendered = e.to_string();
            let first = rendered.split("\n\n").next().unwrap_or(&rendered);
            let _ = writeln!(std::io::stderr(), "{}", one_line(first));
            return ExitCode::from(2);
        }
    };
    // Before any thread starts (see `set_compute_threads`).
    if let Command::Run(args) = &cli.command
        && let Some(threads) = args.model.threads
    {
        set_compute_threads(threads);
    }
    if let Err(e) = install_logging(&cli) {
        let _ = writeln!(std::io::stderr(), "error: {}", one_line(&format!("{e:#}")));
        return ExitCode::from(2);
    }
    let result = match &cli.command {
        Command::List => list(),
        Command::Run(args) => run_suites(args, cli.config.as_deref()),
        Command::McpConformance(args) => conformance::run(args),
    };
    match result {
        Ok(Status::Ok) => ExitCode::SUCCESS,
        Ok(Status::Invalid) => ExitCode::from(1),
        Ok(Status::Signalled { name, code }) => {
            let _ = writeln!(std::io::stderr(), "error: stopped by {name}");
            ExitCode::from(code)
        }
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "error: {}", one_line(&format!("{e:#}")));
            ExitCode::from(2)
        }
    }
}

/// Log lines on stderr: `RUST_LOG` if set, else warnings (`-q`: errors; `-v` debug and `-vv` trace
/// for claij's crates); prompts, replies and metrics never.
fn install_logging(cli: &Cli) -> Result<()> {
    use tracing_subscriber::EnvFilter;
    let directives = match std::env::var("RUST_LOG") {
        Ok(rust_log) if !rust_log.trim().is_empty() => rust_log,
        _ => {
            let claij = match (cli.quiet, cli.verbose) {
                (true, _) => "error",
                (false, 0) => "warn",
                (false, 1) => "debug",
                (false, _) => "trace",
            };
            let all = if cli.quiet { "error" } else { "warn" };
            format!("{all},claij={claij},claij::content=off,claij::metrics=off")
        }
    };
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_new(&directives).context("RUST_LOG")?)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init()
        .map_err(|e| anyhow::anyhow!("cannot install the log subscriber: {e}"))
}

/// Sets the thread count of the local model's compute pools, which candle and rayon read from the
/// environment once, at their first use.
#[allow(unsafe_code)]
fn set_compute_threads(threads: std::num::NonZeroUsize) {
    let threads = threads.to_string();
    // SAFETY: `set_var` is unsound only while another thread may read or write the environment. This
    // runs at the start of `main`, right after argument parsing: the process has a single thread
    // (the runtime and the model's threads start later).
    unsafe {
        std::env::set_var("CANDLE_NUM_THREADS", &threads);
        std::env::set_var("RAYON_NUM_THREADS", &threads);
    }
}

/// `claij-suite list`.
fn list() -> Result<Status> {
    let mut out = std::io::stdout().lock();
    for suite in Suite::ALL {
        for test in suite.tests() {
            writeln!(out, "{} {test}", suite.name())?;
        }
    }
    Ok(Status::Ok)
}

/// Runs the suites; exit 0 when every test passed, 1 when any failed.
fn run_suites(args: &Args, config: Option<&std::path::Path>) -> Result<Status> {
    let settings = claij::settings::Settings::from_env_with(config)?;
    // The notices `claij ask` prints: a lesson of the fallback, the local model's load on a
    // terminal.
    let claij = claij::Claij::new(settings).with_env().on_notice(|notice| {
        let mut err = std::io::stderr();
        let show = match notice {
            claij::Notice::LoadingLocal { .. } => std::io::IsTerminal::is_terminal(&err),
            _ => true,
        };
        if show {
            let _ = writeln!(err, "{notice}");
        }
    });
    let settings = claij.settings();
    let opened = claij::model::open(
        args.model.llm.as_deref(),
        args.model.model_path.as_deref(),
        &claij,
    )?;
    let label = args
        .model
        .llm
        .clone()
        .unwrap_or_else(|| opened.model.clone());
    let mut config = args.model.config(opened.model, &settings.defaults);
    config.max_retries = args.model.max_retries.unwrap_or(MAX_RETRIES);
    if let Some(fallback) = &opened.fallback {
        fallback.set_mode_fallback(config.structured == StructuredMode::Auto);
    }
    let env = Env {
        backend: opened.backend,
        config,
    };
    let suites = if args.suite.is_empty() {
        Suite::ALL.to_vec()
    } else {
        args.suite.clone()
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let mut all_passed = true;
    for suite in suites {
        for &test in suite.tests() {
            let limit = args.timeout;
            let record = runtime.block_on(run_test(&env, &label, suite, test, limit));
            all_passed &= record.passed;
            let mut out = std::io::stdout().lock();
            writeln!(out, "{}", serde_json::to_string(&record)?)?;
            out.flush()?;
        }
    }
    Ok(if all_passed {
        Status::Ok
    } else {
        Status::Invalid
    })
}

/// Runs one test and measures it; an error is a failed test with the error as its detail.
async fn run_test(
    env: &Env,
    label: &str,
    suite: Suite,
    test: &'static str,
    limit: Duration,
) -> Record {
    let started = Instant::now();
    let mut tally = Tally::default();
    let mode = mode_of(test).unwrap_or(env.config.structured);
    let mut config = env.config();
    config.structured = mode;
    let pinned = Env {
        backend: env.backend.clone(),
        config,
    };
    let env = &pinned;
    let run = async {
        match suite {
            Suite::Memory if test == NEXT_TURN_TEST => {
                memory::conversation(env, &mut tally, Carrier::Memory, &memory::NEXT_TURN).await
            }
            Suite::Memory => {
                memory::conversation(env, &mut tally, Carrier::Memory, &memory::LATER).await
            }
            Suite::History => {
                memory::conversation(env, &mut tally, Carrier::History, &memory::NEXT_TURN).await
            }
            Suite::Tools => chat::tools(env, &mut tally).await,
            Suite::Retry => chat::retry(env, &mut tally).await,
            Suite::Citations => chat::citations(env, &mut tally).await,
            Suite::Combined => chat::combined(env, &mut tally).await,
            Suite::Eval => chat::eval(env, &mut tally).await,
            Suite::Fsm => machines::code_review(env, &mut tally).await,
            Suite::Mcp if test == MCP_FSM_TEST => {
                machines::mcp(env, &mut tally, machines::McpRoute::Fsm).await
            }
            Suite::Mcp => machines::mcp(env, &mut tally, machines::McpRoute::Interceptor).await,
        }
    };
    // Dropping the test stops the model call in flight; what it counted so far stays in `tally`.
    let result = match tokio::time::timeout(limit, run).await {
        Ok(result) => result,
        Err(_) => Err(anyhow::anyhow!("timed out after {}s", limit.as_secs())),
    };
    let (passed, detail) = match result {
        Ok(verdict) => (verdict.passed, verdict.detail),
        Err(err) => (false, one_line(&format!("error: {err:#}"))),
    };
    Record {
        model: label.to_owned(),
        suite: suite.name().to_owned(),
        test: test.to_owned(),
        passed,
        valid_first_try: tally.valid_first_try && tally.attempts > 0,
        attempts: tally.attempts as u64,
        retries: tally.retries as u64,
        tokens_in: tally.usage.input_tokens,
        tokens_out: tally.usage.output_tokens,
        cost: tally.cost(),
        elapsed_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        detail,
        mode: claij::matrix::mode_name(Some(mode)).to_owned(),
        schema_tokens: tally.schema_tokens,
        at: None,
    }
}

/// The mode a test pins by its name's suffix (`strict-word/tool`), if any.
fn mode_of(test: &str) -> Option<StructuredMode> {
    match test.rsplit_once('/').map(|(_, mode)| mode) {
        Some("native") => Some(StructuredMode::Native),
        Some("tool") => Some(StructuredMode::Tool),
        Some("prompted") => Some(StructuredMode::Prompted),
        _ => None,
    }
}

/// A random hex token a model cannot guess, so it cannot fake a tool or file read.
pub(crate) fn nonce() -> String {
    use std::hash::{BuildHasher as _, Hasher as _};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    hasher.write_u32(std::process::id());
    format!("{:012x}", hasher.finish() & 0xffff_ffff_ffff)
}

/// Whether `text` mentions `needle`, ignoring case.
pub(crate) fn mentions(text: &str, needle: &str) -> bool {
    text.to_lowercase().contains(&needle.to_lowercase())
}

/// Errors are one line: newlines inside (from a library's message) are folded.
pub(crate) fn one_line(s: &str) -> String {
    s.split('\n')
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}
