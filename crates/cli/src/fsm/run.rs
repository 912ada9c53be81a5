//! `claij fsm run` and `claij fsm resume`: run a machine, printing each transition as it happens and
//! the trail at the end.

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context as _, Result, anyhow};
use claij::fsm::{Machine, Wired, Wiring};
use claij_fsm::{ExistingJournal, Interrupt, Journal, Outcome, Run, Runner};
use claij_interceptors::ErrorChain;
use serde_json::{Value, json};

use crate::exit::Status;
use crate::options::ModelOptions;
use crate::transitions::{count, limit_reached, print_transition};

/// Options shared by `run` and `resume` (and `claij serve restate`).
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Options {
    /// The model for `llm` states and how it is called, as `claij ask` (the configuration's
    /// `[defaults]` and the compatibility matrix fill in what the flags leave out).
    #[command(flatten)]
    model: ModelOptions,
    #[command(flatten)]
    services: super::Flags,
    #[command(flatten)]
    meta_debug: MetaDebugFlags,
    #[command(flatten)]
    proposals: crate::ask::approve::FsmFlags,
    /// Stop after N transitions of this command without reaching an end (models can loop); a
    /// journaled run goes on with `claij fsm resume`.
    #[arg(long, default_value_t = claij_fsm::DEFAULT_MAX_TRANSITIONS, value_name = "N", value_parser = crate::args::transitions)]
    max_transitions: usize,
    /// Loops: a service call that repeats an earlier one (the same state, request and result since
    /// the last input) is told to the model; a repeat beyond the first N ends the run (0: the first
    /// repeat does; `off`: none, nor is the model told, for a state that polls).
    #[arg(long, default_value_t = claij_fsm::DEFAULT_MAX_REPEATED_CALLS, value_name = "N", value_parser = crate::args::repeated_calls)]
    max_repeated_calls: usize,
    /// Print `{"outcome", "trail", "usage"}` on stdout instead of the trail alone.
    #[arg(long)]
    json: bool,
    /// The process's front door, handed down by `main` ([`Options::with_front`]); not a flag.
    #[arg(skip)]
    front: Option<Arc<crate::front::Front>>,
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
    /// These options with the process's front door, where the run opens its models.
    pub(crate) fn with_front(&self, front: &Arc<crate::front::Front>) -> Self {
        let mut options = self.clone();
        options.front = Some(Arc::clone(front));
        options
    }

    /// The process's [`claij::Claij`] (settings read once, models opened once).
    ///
    /// # Errors
    ///
    /// The configuration cannot be read or is invalid.
    pub(crate) fn claij(&self) -> Result<Arc<claij::Claij>> {
        match &self.front {
            Some(front) => front.shared(),
            None => Err(anyhow!("no configuration was handed to the run")),
        }
    }

    /// `--threads`: set in the environment before any thread starts.
    pub(crate) fn threads(&self) -> Option<std::num::NonZeroUsize> {
        self.model.threads
    }

    /// `--json`.
    #[cfg(feature = "restate")]
    pub(super) fn json(&self) -> bool {
        self.json
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
        with_tools(wiring)
    }

    /// The run's proposals over `saved` (a resumed journal's), when it proposes, votes (`votes`)
    /// or resumes with extensions.
    pub(crate) fn proposals(
        &self,
        claij: &claij::Claij,
        saved: Option<claij_schema::SavedRegistry>,
        votes: bool,
    ) -> Result<Option<claij::fsm::Proposals>> {
        let shared = self
            .proposals
            .open(saved, votes, claij, &self.model, self.json)?;
        Ok(shared.map(claij::fsm::Proposals::from))
    }
}

/// `wiring` with the built-in tools (`now`, `random_int`) as its `tools` service.
pub(super) fn with_tools(wiring: Wiring) -> Result<Wiring> {
    let tools = claij::tools::builtin().context("the built-in tools")?;
    Ok(wiring.with_tools(tools))
}

/// A wiring error as `claij fsm run` says it: a server that needs authorization says how to give
/// it; an unset secret of a configuration without a file says so.
pub(crate) fn wire_error(error: claij::fsm::Error) -> anyhow::Error {
    use claij::fsm::Error::Mcp;
    match error {
        Mcp(error) => crate::mcp::start_error(error, ""),
        claij::fsm::Error::NoDiagnosticModels => anyhow!(
            "meta-debugging needs diagnostic models: name them with --meta-debug=LLM,... (or measure \
             some with `cargo xtask integration`, whose compatibility matrix lists those that work)"
        ),
        other => other.into(),
    }
}

/// `--journal FILE` of `claij fsm run`.
pub(super) struct NewJournal<'a> {
    /// The journal file.
    pub path: &'a Path,
    /// `--force`: start over a journal that holds a run.
    pub force: bool,
}

/// `claij fsm run FILE --input JSON`.
pub(super) fn run(
    machine: &Machine,
    input: &str,
    journal: Option<NewJournal<'_>>,
    options: &Options,
) -> Result<Status> {
    let input: Value = serde_json::from_str(input).context("--input is not JSON")?;
    let runtime = runtime()?;
    let claij = options.claij()?;
    let proposals = options.proposals(&claij, None, machine.votes())?;
    let wiring = options.wiring(claij)?;
    let wired = runtime
        .block_on(wiring.wire_proposing(machine, proposals.as_ref()))
        .map_err(wire_error)?;
    let runner = &wired.runner;
    let (mut run, journal) = match journal {
        Some(NewJournal { path, force }) => {
            let existing = if force {
                ExistingJournal::Overwrite
            } else {
                ExistingJournal::Refuse
            };
            let (run, journal) = match runner.start_journaled(input, path, existing) {
                Ok(started) => started,
                Err(claij_fsm::Error::JournalExists { path }) => {
                    runtime.block_on(wired.close());
                    let path = path.display();
                    return Err(anyhow!(
                        "journal {path} already holds a run: use `claij fsm resume {path}` to go \
                         on with it, or --force to start a new run over it"
                    ));
                }
                Err(e) => {
                    runtime.block_on(wired.close());
                    return Err(e.into());
                }
            };
            (run, Some(journal))
        }
        None => match runner.start(input) {
            Ok(run) => (run, None),
            Err(e) => {
                runtime.block_on(wired.close());
                return Err(e.into());
            }
        },
    };
    let status = drive(runner, &mut run, journal, options, &runtime);
    runtime.block_on(wired.close());
    status
}

/// `claij fsm resume JOURNAL`: the machine comes from the journal's header.
pub(super) fn resume(path: &Path, options: &Options) -> Result<Status> {
    let (machine, saved) = Machine::from_journal(path)?;
    let runtime = runtime()?;
    let claij = options.claij()?;
    let proposals = options.proposals(&claij, saved, machine.votes())?;
    let wiring = options.wiring(claij)?;
    let Wired { runner, services } = runtime
        .block_on(wiring.wire_proposing(&machine, proposals.as_ref()))
        .map_err(wire_error)?;
    let resumed = runner.resume(path);
    let (mut run, journal) = match resumed {
        Ok(resumed) => resumed,
        Err(e) => {
            runtime.block_on(services.close());
            return Err(e.into());
        }
    };
    writeln!(
        std::io::stderr(),
        "resuming run {} in state `{}` after {}",
        run.id,
        run.state,
        count(run.trail.entries.len(), "recorded transition")
    )?;
    let status = drive(&runner, &mut run, Some(journal), options, &runtime);
    runtime.block_on(services.close());
    status
}

/// The one runtime of a run: the MCP servers it starts live on it.
fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// Runs to the end; at a `human` state reads one JSON event per line from stdin (a terminal gets a
/// prompt); Ctrl-C interrupts the run, which records it. (The run's extensions are journaled by the
/// runner's journal hook, after the line whose step changed them.)
fn drive(
    runner: &Runner,
    run: &mut Run,
    mut journal: Option<Journal>,
    options: &Options,
    runtime: &tokio::runtime::Runtime,
) -> Result<Status> {
    let interrupt = Interrupt::new();
    let outcome = loop {
        let outcome = runtime.block_on(async {
            let stopper = interrupt.clone();
            let watcher = tokio::spawn(async move {
                if tokio::signal::ctrl_c().await.is_ok() {
                    stopper.interrupt();
                }
            });
            let outcome = runner.run(run, &interrupt, journal.as_mut()).await;
            watcher.abort();
            outcome
        });
        let outcome = match outcome {
            Ok(outcome) => outcome,
            Err(e) if e.is_limit() => {
                finish(run, None, options)?;
                let journal = journal.as_ref().map(Journal::path);
                writeln!(std::io::stderr(), "error: {}", stopped(&e, journal))?;
                return Ok(Status::Invalid);
            }
            // As `claij ask`: replies that stay invalid are exit 1; a backend that fails is 2,
            // after the trail.
            Err(e) if e.is_invalid_reply() => {
                finish(run, None, options)?;
                writeln!(
                    std::io::stderr(),
                    "error: {}",
                    crate::exit::one_line(&ErrorChain(&e).to_string())
                )?;
                return Ok(Status::Invalid);
            }
            Err(e @ claij_fsm::Error::Llm { .. }) => {
                finish(run, None, options)?;
                return Err(e.into());
            }
            Err(e) => return Err(e.into()),
        };
        let Outcome::Waiting { state } = &outcome else {
            break outcome;
        };
        let Some(input) = read_input(state)? else {
            break outcome;
        };
        match runner.provide(run, input, journal.as_mut()) {
            Ok(()) => {}
            Err(e @ claij_fsm::Error::InvalidEvent { .. }) => {
                writeln!(
                    std::io::stderr(),
                    "error: {}",
                    crate::exit::one_line(&ErrorChain(&e).to_string())
                )?;
                // A person at a terminal tries again; piped input does not get better.
                if !std::io::stdin().is_terminal() {
                    finish(run, Some(&outcome), options)?;
                    return Ok(Status::Invalid);
                }
            }
            Err(e) => return Err(e.into()),
        }
    };
    finish(run, Some(&outcome), options)?;
    match outcome {
        Outcome::Waiting { state } => {
            let hint = journal.as_ref().map_or_else(String::new, |j| {
                format!("; resume with `claij fsm resume {}`", j.path().display())
            });
            writeln!(
                std::io::stderr(),
                "waiting for input in state `{state}`{hint}"
            )?;
            Ok(Status::Ok)
        }
        Outcome::Interrupted { from } => {
            writeln!(std::io::stderr(), "interrupted in state `{from}`")?;
            Ok(Status::Invalid)
        }
        _ => Ok(Status::Ok),
    }
}

/// The flag that sets the runner's limit `limit` (`claij_fsm::Error::limit`).
#[cfg(feature = "restate")]
pub(super) fn flag_of(limit: &str) -> Option<&'static str> {
    match limit {
        "max_transitions" => Some("--max-transitions"),
        "max_repeated_calls" => Some("--max-repeated-calls"),
        _ => None,
    }
}

/// The line for a run stopped at a limit (`e`): where, the counts, the flag that sets the limit,
/// and how the run goes on (from `journal`, or how to keep one).
fn stopped(e: &claij_fsm::Error, journal: Option<&Path>) -> String {
    let Some(what) = limit_reached(e) else {
        return crate::exit::one_line(&ErrorChain(e).to_string());
    };
    let go_on = match (journal, e) {
        (Some(path), claij_fsm::Error::RepeatedCall { .. }) => format!(
            "the run can go on, the model told of the repeats: `claij fsm resume {}` (with a \
             higher --max-repeated-calls to allow more)",
            path.display()
        ),
        (Some(path), _) => format!(
            "the run can go on: `claij fsm resume {}` (its --max-transitions counts anew)",
            path.display()
        ),
        (None, _) => "to be able to go on after a stop, run with --journal FILE, then `claij \
                      fsm resume FILE`"
            .to_owned(),
    };
    format!("{what}; {go_on}")
}

/// One JSON event from stdin for the waiting `state`, or `None` at end of input.
pub(super) fn read_input(state: &str) -> Result<Option<Value>> {
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

/// The trail on stdout (with `--json`: the outcome and usage too).
fn finish(run: &Run, outcome: Option<&Outcome>, options: &Options) -> Result<()> {
    let outcome = match outcome {
        Some(Outcome::Finished { state, event }) => json!({"finished": state, "event": event}),
        Some(Outcome::Waiting { state }) => json!({"waiting": state}),
        Some(Outcome::Interrupted { from }) => json!({"interrupted": from}),
        Some(_) | None => json!({"failed": run.state}),
    };
    print_end(&run.id, run.status, &run.trail, &outcome, options.json)
}

/// The trail on stdout, with `json` the run id, `outcome`, status and usage too: what `claij fsm
/// run` prints at the end, embedded or on Restate.
pub(super) fn print_end(
    run_id: &str,
    status: claij_fsm::Status,
    trail: &claij_fsm::Trail,
    outcome: &Value,
    json: bool,
) -> Result<()> {
    let usage = trail.usage();
    let mut out = std::io::stdout().lock();
    if json {
        let report = json!({
            "run_id": run_id,
            "outcome": outcome,
            "status": status,
            "trail": trail,
            "usage": usage,
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        writeln!(out, "{}", serde_json::to_string_pretty(trail)?)?;
        let _ = writeln!(
            std::io::stderr(),
            "{}, {}, {}+{} tokens",
            count(trail.entries.len(), "transition"),
            model_calls(trail),
            usage.input_tokens,
            usage.output_tokens
        );
    }
    Ok(())
}

/// `3 model calls`, each an `llm` state's (a retry is an attempt of its call, not a call), with
/// `(2 valid on the first try, 1 retry)` after it when not every call was valid at once.
fn model_calls(trail: &claij_fsm::Trail) -> String {
    let calls = trail.calls();
    let first = trail.first_try();
    let retries = trail.attempts().saturating_sub(calls);
    let mut text = count(calls, "model call");
    if first < calls || retries > 0 {
        let noun = if retries == 1 { "retry" } else { "retries" };
        text.push_str(&format!(
            " ({first} valid on the first try, {retries} {noun})"
        ));
    }
    text
}
