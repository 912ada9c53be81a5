//! `claij fsm run` and `claij fsm resume`: run a machine, printing each transition as it happens and
//! the trail at the end.

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context as _, Result, anyhow};
use claij::fsm::engine::Error as RunError;
use claij::fsm::{Ended, ExistingJournal, Interrupt, Journal, Machine, Outcome, Report, Run};
use claij::fsm::{Runner, Wired, Wiring, count};
use serde_json::Value;
use tokio::runtime::Runtime;

use crate::exit::{Status, one_line};
use crate::front::Front;
use crate::options::ModelOptions;
use crate::transitions::print_transition;

/// Options shared by `run` and `resume` (and `claij serve restate`).
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Options {
    /// The model for `llm` states and how it is called, as `claij ask` (the configuration's
    /// `[defaults]` and the compatibility matrix fill in what the flags leave out).
    #[command(flatten)]
    model: ModelOptions,
    #[command(flatten)]
    services: super::Flags,
    /// The model that answers MCP servers' sampling requests, as `claij mcp --sampling-llm`.
    #[arg(long, value_name = "ALIAS|PROVIDER:MODEL")]
    sampling_llm: Option<String>,
    /// How MCP servers' questions are answered: `defaults` or `decline`, as `claij mcp`'s.
    #[arg(long, value_name = "POLICY", value_parser = crate::mcp::elicitation::policy())]
    elicitation: Option<claij::mcp::offer::Elicitation>,
    #[command(flatten)]
    meta_debug: MetaDebugFlags,
    #[command(flatten)]
    proposals: crate::ask::approve::FsmFlags,
    /// Stop after N transitions of this command without reaching an end (models can loop); a
    /// journaled run goes on with `claij fsm resume`.
    #[arg(long, default_value_t = claij::fsm::engine::DEFAULT_MAX_TRANSITIONS, value_name = "N", value_parser = crate::args::transitions)]
    max_transitions: usize,
    /// Loops: a service call that repeats an earlier one (the same state, request and result since
    /// the last input) is told to the model; a repeat beyond the first N ends the run (0: the first
    /// repeat does; `off`: none, nor is the model told, for a state that polls).
    #[arg(long, default_value_t = claij::fsm::engine::DEFAULT_MAX_REPEATED_CALLS, value_name = "N", value_parser = crate::args::repeated_calls)]
    max_repeated_calls: usize,
    /// Print `{"outcome", "trail", "usage"}` on stdout instead of the trail alone.
    #[arg(long)]
    pub(super) json: bool,
}

/// `--meta-debug`.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct MetaDebugFlags {
    /// Diagnose every `llm` state that runs out of retries, or whose validation failure repeats
    /// across turns, with another model (a prompt remedy is tried at once and kept for the rest of
    /// the run, and the journal; a schema remedy goes to `--approve` with `--interceptors
    /// proposals` and, approved, is tried at once too): the models listed (aliases or
    /// `provider:model`, as `--llm`), else those the compatibility matrix measured passing every
    /// test. A state's `config.meta_debug: true` enables it for that state alone.
    #[arg(long = "meta-debug", value_name = "LLM,...", num_args = 0..=1, require_equals = true, value_delimiter = ',')]
    meta_debug: Option<Vec<String>>,
}

impl Options {
    /// `--threads`: set in the environment before any thread starts.
    pub(crate) fn threads(&self) -> Option<std::num::NonZeroUsize> {
        self.model.threads
    }

    /// The library's options these flags give.
    pub(crate) fn to_library(&self) -> claij::fsm::Options {
        claij::fsm::Options {
            model: self.model.to_options(),
            project: self.services.project.clone(),
            meta_debug: self.meta_debug.meta_debug.clone(),
            measured: None,
            max_transitions: self.max_transitions,
            max_repeated_calls: self.max_repeated_calls,
            offer: claij::mcp::offer::Offer::new(self.sampling_llm.clone(), self.elicitation),
        }
    }

    /// How `claij fsm run` wires a machine with `claij`: these options, the built-in tools, MCP
    /// servers started with the tokens `claij mcp login` stored, each transition and notice on
    /// stderr.
    pub(crate) fn wiring(&self, claij: Arc<claij::Claij>) -> Result<Wiring> {
        let wiring = Wiring::new(Arc::clone(&claij), self.to_library())
            .with_observer(|entry| {
                let _ = print_transition(entry);
            })
            .on_notice(|text| {
                let _ = writeln!(std::io::stderr().lock(), "{text}");
            });
        wiring.with_builtin_tools().context("the built-in tools")
    }

    /// The run's proposals over `saved` (a resumed journal's), when it proposes, votes (`votes`)
    /// or resumes with extensions.
    pub(crate) fn proposals(
        &self,
        claij: &claij::Claij,
        saved: Option<claij::schema::SavedRegistry>,
        votes: bool,
    ) -> Result<Option<claij::fsm::Proposals>> {
        let shared = self
            .proposals
            .open(saved, votes, claij, &self.model, self.json)?;
        Ok(shared.map(claij::fsm::Proposals::from))
    }
}

/// A wiring error as `claij fsm run` says it: a server that needs authorization says how to give
/// it; an unset secret of a configuration without a file says so.
pub(crate) fn wire_error(error: claij::fsm::Error) -> anyhow::Error {
    use claij::fsm::Error::Mcp;
    match error {
        Mcp(error) => anyhow!(error.said(None)),
        claij::fsm::Error::NoDiagnosticModels => anyhow!(
            "meta-debugging needs diagnostic models: name them with --meta-debug=LLM,... (or measure \
             some with `cargo xtask integration`, whose compatibility matrix lists those that work)"
        ),
        other => other.into(),
    }
}

/// `claij fsm run FILE --input JSON`, with `--journal FILE` when `journal` is given (`--force`:
/// overwrite a journal that holds a run).
pub(super) fn run(
    machine: &Machine,
    input: &str,
    journal: Option<(&Path, ExistingJournal)>,
    options: &Options,
    front: &Front,
) -> Result<Status> {
    let input: Value = serde_json::from_str(input).context("--input is not JSON")?;
    go(machine, None, options, front, |wired| {
        wired.start(input, journal).map_err(|e| match e {
            RunError::JournalExists { path } => anyhow!(
                "journal {0} already holds a run: use `claij fsm resume {0}` to go on with it, \
                 or --force to start a new run over it",
                path.display()
            ),
            e => e.into(),
        })
    })
}

/// `claij fsm resume JOURNAL`: the machine comes from the journal's header.
pub(super) fn resume(path: &Path, options: &Options, front: &Front) -> Result<Status> {
    let (machine, saved) = Machine::from_journal(path)?;
    go(&machine, saved, options, front, |wired| {
        let (run, journal) = wired.runner.resume(path)?;
        writeln!(
            std::io::stderr(),
            "resuming run {} in state `{}` after {}",
            run.id,
            run.state,
            count(run.trail.entries.len(), "recorded transition")
        )?;
        Ok((run, Some(journal)))
    })
}

/// `machine` wired (with the process's `front` door, its proposals over `saved`) on the one
/// runtime of its run (the MCP servers it starts live on it), its run started by `start` and
/// driven to its end, its services closed.
fn go(
    machine: &Machine,
    saved: Option<claij::schema::SavedRegistry>,
    options: &Options,
    front: &Front,
    start: impl FnOnce(&Wired) -> Result<(Run, Option<Journal>)>,
) -> Result<Status> {
    let runtime = runtime()?;
    let claij = front.shared()?;
    let proposals = options.proposals(&claij, saved, machine.votes())?;
    let wiring = options.wiring(claij)?;
    let wired = runtime
        .block_on(wiring.wire_proposing(machine, proposals.as_ref()))
        .map_err(wire_error)?;
    let status = start(&wired)
        .and_then(|(mut run, journal)| drive(&wired.runner, &mut run, journal, options, &runtime));
    runtime.block_on(wired.close());
    status
}

/// The one runtime of a command.
pub(super) fn runtime() -> Result<Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// Runs to the end ([`claij::fsm::drive`]); at a `human` state reads one JSON event per line from
/// stdin ([`Stdin`]); Ctrl-C interrupts the run, which records it. (The run's extensions are
/// journaled by the runner's journal hook, after the line whose step changed them.)
fn drive(
    runner: &Runner,
    run: &mut Run,
    mut journal: Option<Journal>,
    options: &Options,
    runtime: &Runtime,
) -> Result<Status> {
    let interrupt = Interrupt::new();
    let ended = runtime.block_on(async {
        let stopper = interrupt.clone();
        let watcher = tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                stopper.interrupt();
            }
        });
        let ended = claij::fsm::drive(runner, run, journal.as_mut(), &interrupt, &mut Stdin).await;
        watcher.abort();
        ended
    })?;
    // As `claij ask`: replies that stay invalid are exit 1; a backend that fails is 2, after the
    // trail.
    print_end(&Report::new(run, ended.outcome()), options.json)?;
    let path = journal.as_ref().map(Journal::path);
    match ended {
        Ended::Stopped(e) => {
            writeln!(
                std::io::stderr(),
                "error: {}",
                claij::fsm::stopped(&e, path)
            )?;
            Ok(Status::Invalid)
        }
        Ended::Failed(e) => Err(e.into()),
        Ended::Outcome(Outcome::Waiting { state }) => {
            let hint = path.map_or_else(String::new, |path| {
                format!("; resume with `claij fsm resume {}`", path.display())
            });
            writeln!(
                std::io::stderr(),
                "waiting for input in state `{state}`{hint}"
            )?;
            Ok(Status::Ok)
        }
        Ended::Outcome(Outcome::Interrupted { from }) => {
            writeln!(std::io::stderr(), "interrupted in state `{from}`")?;
            Ok(Status::Invalid)
        }
        Ended::Refused(_) => Ok(Status::Invalid),
        _ => Ok(Status::Ok),
    }
}

/// A waiting state's events: one JSON event per line of stdin; a refused one is said, and a
/// person at a terminal tries again (piped input does not get better).
pub(super) struct Stdin;

impl claij::fsm::Input<anyhow::Error> for Stdin {
    fn event(&mut self, state: &str) -> Result<Option<Value>> {
        read_input(state)
    }

    fn refused(&mut self, why: &str) -> bool {
        let _ = writeln!(std::io::stderr(), "error: {}", one_line(why));
        std::io::stdin().is_terminal()
    }
}

/// One JSON event from stdin for the waiting `state` (a terminal gets a prompt), or `None` at end
/// of input.
fn read_input(state: &str) -> Result<Option<Value>> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        write!(std::io::stderr(), "input for `{state}` (a JSON event): ")?;
        std::io::stderr().flush()?;
    }
    let mut line = String::new();
    loop {
        line.clear();
        if stdin.lock().read_line(&mut line)? == 0 {
            return Ok(None);
        }
        if !line.trim().is_empty() {
            break;
        }
    }
    serde_json::from_str(line.trim())
        .map(Some)
        .with_context(|| format!("input for state `{state}` is not JSON"))
}

/// What `claij fsm run` prints at its end, embedded or on Restate: the trail on stdout and a
/// summary on stderr, or with `json` the whole report on stdout.
pub(super) fn print_end(report: &Report, json: bool) -> Result<()> {
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&report.to_json())?)?;
    } else {
        writeln!(out, "{}", serde_json::to_string_pretty(&report.trail)?)?;
        let _ = writeln!(std::io::stderr(), "{}", report.summary());
    }
    Ok(())
}
