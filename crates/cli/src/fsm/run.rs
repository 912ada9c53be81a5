//! `claij fsm run` and `claij fsm resume`: run a machine, printing each transition as it happens and
//! the trail at the end.

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::Path;

use anyhow::{Context as _, Result, anyhow};
use claij_fsm::{Action, Entry, ExistingJournal, Fsm, Interrupt, Journal, Outcome, Run, Runner};
use claij_interceptors::{ErrorChain, StructuredMode};
use serde_json::{Value, json};

use crate::Status;
use crate::ask::{ModelOptions, llm, model};

/// Options shared by `run` and `resume`.
#[derive(Debug, clap::Args)]
pub(crate) struct Options {
    /// The model for `llm` states and how it is called, as `claij ask` (the configuration's
    /// `[defaults]` and the compatibility matrix fill in what the flags leave out).
    #[command(flatten)]
    model: ModelOptions,
    /// Stop after this many transitions (models can loop).
    #[arg(long, default_value_t = claij_fsm::DEFAULT_MAX_TRANSITIONS, value_name = "N", value_parser = crate::args::transitions)]
    max_transitions: usize,
    /// Print `{"outcome", "trail", "usage"}` on stdout instead of the trail alone.
    #[arg(long)]
    json: bool,
}

impl Options {
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
    input: &str,
    journal: Option<NewJournal<'_>>,
    options: &Options,
) -> Result<Status> {
    let input: Value = serde_json::from_str(input).context("--input is not JSON")?;
    let runner = runner(fsm, options)?;
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
    drive(&runner, &mut run, journal, options)
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
    let runner = runner(Fsm::new(definition)?, options)?;
    let (mut run, journal) = runner.resume(path)?;
    writeln!(
        std::io::stderr(),
        "resuming run {} in state `{}` after {} recorded transitions",
        run.id,
        run.state,
        run.trail.entries.len()
    )?;
    drive(&runner, &mut run, Some(journal), options)
}

fn runner(fsm: Fsm, options: &Options) -> Result<Runner> {
    let needs_model = fsm
        .definition()
        .states
        .iter()
        .any(|s| s.action == Action::Llm);
    let mut runner = Runner::new(fsm)
        .with_max_transitions(options.max_transitions)
        .with_observer(|entry| {
            let _ = print_transition(entry);
        });
    if needs_model {
        let settings = crate::config::Settings::load()?;
        let opened = llm::open(
            options.model.llm.as_deref(),
            options.model.model_path.as_deref(),
            &settings,
        )?;
        let mut err = std::io::stderr();
        if let Some(notice) = &opened.notice {
            writeln!(err, "{notice}")?;
        }
        let measured = options
            .model
            .matrix_choice(&opened.model, &settings.defaults);
        if let Some(choice) = &measured {
            writeln!(err, "{}", model::matrix_notice(choice))?;
        }
        let config = options
            .model
            .config(opened.model, &settings.defaults, measured.as_ref());
        if let Some(fallback) = &opened.fallback {
            // As `claij ask`: an explicit --mode native keeps to native output.
            fallback.set_mode_fallback(config.structured == StructuredMode::Auto);
        }
        runner = runner.with_llm(opened.backend, config);
    }
    Ok(runner)
}

/// Runs to the end; at a `human` state reads one JSON event per line from stdin (a terminal gets a
/// prompt); Ctrl-C interrupts the run, which records it.
fn drive(
    runner: &Runner,
    run: &mut Run,
    mut journal: Option<Journal>,
    options: &Options,
) -> Result<Status> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
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
            Err(
                e @ (claij_fsm::Error::Llm { .. }
                | claij_fsm::Error::InvalidEvent { .. }
                | claij_fsm::Error::TooManyTransitions { .. }),
            ) => {
                finish(run, None, options)?;
                // As `claij ask`: a backend that fails is exit 2; replies that stay invalid are 1.
                if let claij_fsm::Error::Llm { source, .. } = &e
                    && !matches!(**source, claij_interceptors::Error::RetriesExhausted(_))
                {
                    return Err(e.into());
                }
                writeln!(
                    std::io::stderr(),
                    "error: {}",
                    crate::one_line(&ErrorChain(&e).to_string())
                )?;
                return Ok(Status::Invalid);
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

/// One JSON event from stdin for the waiting `state`, or `None` at end of input.
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

fn print_transition(entry: &Entry) -> Result<()> {
    let mut event = entry.event.to_string();
    if event.chars().count() > 160 {
        event = format!("{}...", event.chars().take(160).collect::<String>());
    }
    let attempts = match entry.attempts.len() {
        0 => String::new(),
        1 => " (1 attempt)".to_owned(),
        n => format!(" ({n} attempts)"),
    };
    writeln!(
        std::io::stderr(),
        "{} -> {}{attempts}: {event}",
        entry.from,
        entry.to
    )?;
    Ok(())
}

/// The trail on stdout (with `--json`: the outcome and usage too).
fn finish(run: &Run, outcome: Option<&Outcome>, options: &Options) -> Result<()> {
    let usage = run.trail.usage();
    let mut out = std::io::stdout().lock();
    if options.json {
        let outcome = match outcome {
            Some(Outcome::Finished { state, event }) => json!({"finished": state, "event": event}),
            Some(Outcome::Waiting { state }) => json!({"waiting": state}),
            Some(Outcome::Interrupted { from }) => json!({"interrupted": from}),
            Some(_) | None => json!({"failed": run.state}),
        };
        let report = json!({
            "run_id": run.id,
            "outcome": outcome,
            "status": run.status,
            "trail": run.trail,
            "usage": usage,
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        writeln!(out, "{}", serde_json::to_string_pretty(&run.trail)?)?;
        let _ = writeln!(
            std::io::stderr(),
            "{} transitions, {} model calls, {}+{} tokens",
            run.trail.entries.len(),
            run.trail.attempts(),
            usage.input_tokens,
            usage.output_tokens
        );
    }
    Ok(())
}
