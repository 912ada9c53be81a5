//! `claij fsm run` and `claij fsm resume`: run a machine, printing each transition as it happens and
//! the trail at the end.

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::Path;

use anyhow::{Context as _, Result, anyhow};
use claij_fsm::journal::SubDefinition;
use claij_fsm::{Entry, ExistingJournal, Fsm, Interrupt, Journal, Outcome, Run, Runner};
use claij_interceptors::ErrorChain;
use serde_json::{Value, json};

use super::models;
use super::services::{self, Connected};
use super::subfsm;
use crate::Status;
use crate::ask::ModelOptions;

/// Options shared by `run` and `resume` (and `claij serve restate`).
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Options {
    /// The model for `llm` states and how it is called, as `claij ask` (the configuration's
    /// `[defaults]` and the compatibility matrix fill in what the flags leave out).
    #[command(flatten)]
    model: ModelOptions,
    #[command(flatten)]
    services: super::services::Flags,
    #[command(flatten)]
    meta_debug: super::meta_debug::MetaDebugFlags,
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
    front: Option<std::sync::Arc<crate::front::Front>>,
}

impl Options {
    /// These options with the process's front door, where the run opens its models.
    pub(crate) fn with_front(&self, front: &std::sync::Arc<crate::front::Front>) -> Self {
        let mut options = self.clone();
        options.front = Some(std::sync::Arc::clone(front));
        options
    }

    /// The process's [`claij::Claij`] (settings read once, models opened once).
    ///
    /// # Errors
    ///
    /// The configuration cannot be read or is invalid.
    pub(crate) fn claij(&self) -> Result<&claij::Claij> {
        match &self.front {
            Some(front) => front.claij(),
            None => Err(anyhow!("no configuration was handed to the run")),
        }
    }

    /// `--threads`: set in the environment before any thread starts.
    pub(crate) fn threads(&self) -> Option<std::num::NonZeroUsize> {
        self.model.threads
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
    fsm: Fsm,
    subs: &[SubDefinition],
    input: &str,
    journal: Option<NewJournal<'_>>,
    options: &Options,
) -> Result<Status> {
    let input: Value = serde_json::from_str(input).context("--input is not JSON")?;
    let runtime = runtime()?;
    let shared = proposals(None, subfsm::runs_vote(fsm.definition(), subs), options)?;
    let (runner, connected) = runner_with_subs(fsm, subs, options, &runtime, shared.as_ref())?;
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
                    let path = path.display();
                    return Err(anyhow!(
                        "journal {path} already holds a run: use `claij fsm resume {path}` to go \
                         on with it, or --force to start a new run over it"
                    ));
                }
                Err(e) => return Err(e.into()),
            };
            (run, Some(journal))
        }
        None => (runner.start(input)?, None),
    };
    let status = drive(&runner, &mut run, journal, options, &runtime);
    runtime.block_on(connected.close());
    status
}

/// `claij fsm resume JOURNAL`: the machine comes from the journal's header.
pub(super) fn resume(path: &Path, options: &Options) -> Result<Status> {
    let (header, _) = claij_fsm::journal::read(path)?;
    let definition = header.definition.ok_or_else(|| {
        anyhow!(
            "{}: the journal does not carry its FSM definition",
            path.display()
        )
    })?;
    let runtime = runtime()?;
    let votes = subfsm::runs_vote(&definition, &header.sub_fsms);
    let shared = proposals(claij_fsm::journal::read_extensions(path)?, votes, options)?;
    let (runner, connected) = runner_with_subs(
        Fsm::new(definition)?,
        &header.sub_fsms,
        options,
        &runtime,
        shared.as_ref(),
    )?;
    let (mut run, journal) = runner.resume(path)?;
    writeln!(
        std::io::stderr(),
        "resuming run {} in state `{}` after {}",
        run.id,
        run.state,
        super::count(run.trail.entries.len(), "recorded transition")
    )?;
    let status = drive(&runner, &mut run, Some(journal), options, &runtime);
    runtime.block_on(connected.close());
    status
}

/// The run's one registry of schema extensions (with `--interceptors proposals`, the proposals
/// interceptor over it), when the run proposes, votes (`votes`) or resumes with extensions.
fn proposals(
    saved: Option<claij_schema::SavedRegistry>,
    votes: bool,
    options: &Options,
) -> Result<Option<crate::ask::approve::RunProposals>> {
    let claij = options.claij()?;
    options
        .proposals
        .open(saved, votes, claij, &options.model, options.json)
}

/// A runner of `fsm` with its sub-FSMs for a Restate worker, on the worker's runtime, as `claij
/// fsm run` wires it (the proposals of a machine that votes are its own, shared by its runs on
/// this worker). The services it started: close them when the worker stops.
#[cfg(feature = "restate")]
pub(super) async fn worker_runner(
    fsm: Fsm,
    subs: &[SubDefinition],
    options: &Options,
) -> Result<(Runner, Connected)> {
    let shared = proposals(None, subfsm::runs_vote(fsm.definition(), subs), options)?;
    wired(fsm, subs, options, shared.as_ref()).await
}

#[cfg(feature = "restate")]
impl Options {
    /// `--max-transitions`.
    pub(super) fn max_transitions(&self) -> usize {
        self.max_transitions
    }

    /// `--max-repeated-calls`.
    pub(super) fn max_repeated_calls(&self) -> usize {
        self.max_repeated_calls
    }

    /// `--json`.
    pub(super) fn json(&self) -> bool {
        self.json
    }

    /// The model options.
    pub(super) fn model(&self) -> &ModelOptions {
        &self.model
    }
}

/// The one runtime of a run: the MCP servers it starts live on it.
fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// [`runner`] for `fsm` and for each of its sub-FSMs ([`subfsm::build`]), all with the run's one
/// set of services (started here, once: close them when the run ends) and models (each opened
/// once). The services every machine of the tree names are checked first, so nothing starts when
/// one of them cannot run here.
fn runner_with_subs(
    fsm: Fsm,
    subs: &[SubDefinition],
    options: &Options,
    runtime: &tokio::runtime::Runtime,
    shared: Option<&crate::ask::approve::RunProposals>,
) -> Result<(Runner, Connected)> {
    runtime.block_on(wired(fsm, subs, options, shared))
}

/// [`runner_with_subs`] on the caller's runtime: the services start on it (and live on it).
pub(super) async fn wired(
    fsm: Fsm,
    subs: &[SubDefinition],
    options: &Options,
    shared: Option<&crate::ask::approve::RunProposals>,
) -> Result<(Runner, Connected)> {
    let claij = options.claij()?;
    let settings = claij.settings();
    let problems = services::check(fsm.definition(), subs, settings, &options.services)?;
    if !problems.is_empty() {
        let each: Vec<String> = problems
            .iter()
            .map(|p| format!("{}: {}", p.pointer, p.message))
            .collect();
        return Err(anyhow!(
            "FSM `{}` cannot run here: {}",
            fsm.definition().id,
            each.join("; ")
        ));
    }
    let mut definitions = vec![fsm.definition()];
    let mut pending: Vec<&SubDefinition> = subs.iter().collect();
    while let Some(sub) = pending.pop() {
        definitions.push(&sub.definition);
        pending.extend(&sub.sub_fsms);
    }
    let connected = services::connect(&definitions, settings, &options.services).await?;
    let mut models = models::Models::new(&options.model, claij);
    let registry = shared.map(|s| std::sync::Arc::clone(s.registry()));
    let built = subfsm::build(
        fsm,
        subs,
        &options.meta_debug,
        &options.model,
        registry,
        claij,
        &mut |fsm| {
            let mut runner = runner(fsm, options, &connected, &mut models)?;
            if let Some(shared) = shared {
                runner = runner
                    .with_interceptors(shared.chain())
                    .with_journal_hook(shared.journal_hook());
                if let Some(approver) = shared.remedy_approver() {
                    runner = runner.with_remedy_approver(approver);
                }
            }
            Ok(runner)
        },
    );
    match built {
        Ok(runner) => Ok((runner, connected)),
        Err(e) => {
            connected.close().await;
            Err(e)
        }
    }
}

/// The runner of `fsm`: the run's services (`connected`; its MCP calls narrowed to their tools),
/// the run's model and each state's own (`models`).
fn runner(
    fsm: Fsm,
    options: &Options,
    connected: &Connected,
    models: &mut models::Models<'_>,
) -> Result<Runner> {
    let mut definition = fsm.definition().clone();
    connected.narrow(&mut definition);
    // Narrowed MCP calls change the definition (and what the journal records).
    let fsm = if &definition == fsm.definition() {
        fsm
    } else {
        Fsm::new(definition)?
    };
    let definition = fsm.definition().clone();
    let runner = Runner::new(fsm)
        .with_max_transitions(options.max_transitions)
        .with_max_repeated_calls(options.max_repeated_calls)
        .with_observer(|entry| {
            let _ = print_transition(entry);
        });
    models.wire(connected.register(runner), &definition)
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
                    crate::one_line(&ErrorChain(&e).to_string())
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
                    crate::one_line(&ErrorChain(&e).to_string())
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

/// What stopped a run at a limit (`e`, [`claij_fsm::Error::limit`]): where, the counts and the flag
/// that sets the limit; `None` for any other error. `fsm run|resume` and `mcp chat` say it.
pub(crate) fn limit_reached(e: &claij_fsm::Error) -> Option<String> {
    use super::count;
    let what = match e {
        claij_fsm::Error::TooManyTransitions {
            state,
            limit,
            recorded,
        } => format!(
            "stopped in state `{state}` after {} without reaching an end (--max-transitions \
             {limit}; the trail holds {recorded})",
            count(*limit, "transition")
        ),
        claij_fsm::Error::RepeatedCall {
            state,
            call,
            repeats,
            limit,
        } => format!(
            "state `{state}` repeats itself: {call} got the same result {} since the last input \
             (--max-repeated-calls {limit} allows {})",
            count(repeats + 1, "time"),
            count(*limit, "repeat")
        ),
        _ => return None,
    };
    Some(crate::one_line(&what))
}

/// The line for a run stopped at a limit (`e`): where, the counts, the flag that sets the limit,
/// and how the run goes on (from `journal`, or how to keep one).
fn stopped(e: &claij_fsm::Error, journal: Option<&Path>) -> String {
    let Some(what) = limit_reached(e) else {
        return crate::one_line(&ErrorChain(e).to_string());
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

/// `from -> to (n attempts): event` on stderr, the event cut at 160 characters; a service's
/// transition that repeats earlier calls says so: `servicing -> llm (repeats an earlier call): ...`.
pub(crate) fn print_transition(entry: &Entry) -> Result<()> {
    let mut event = entry.event.to_string();
    if event.chars().count() > 160 {
        event = format!("{}...", event.chars().take(160).collect::<String>());
    }
    let attempts = match entry.attempts.len() {
        0 => String::new(),
        1 => " (1 attempt)".to_owned(),
        n => format!(" ({n} attempts)"),
    };
    let repeats = match entry.repeats {
        0 => String::new(),
        1 => " (repeats an earlier call)".to_owned(),
        n => format!(" (repeats {n} earlier calls)"),
    };
    writeln!(
        std::io::stderr(),
        "{} -> {}{attempts}{repeats}: {event}",
        entry.from,
        entry.to
    )?;
    Ok(())
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
            super::count(trail.entries.len(), "transition"),
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
    let mut text = super::count(calls, "model call");
    if first < calls || retries > 0 {
        let noun = if retries == 1 { "retry" } else { "retries" };
        text.push_str(&format!(
            " ({first} valid on the first try, {retries} {noun})"
        ));
    }
    text
}
