//! `claij fsm validate|render|run|resume`: check a state machine definition, draw it, run it.

use std::io::Write as _;

use std::path::Path;
use std::sync::Arc;

use anyhow::{Result, anyhow};
use claij::fsm::{Machine, Wiring};
use claij_fsm::render::{self, RenderError};
use claij_fsm::{DefinitionError, Fsm};

use crate::exit::Status;
use crate::input;
use crate::transitions::count;

#[cfg(feature = "restate")]
pub(crate) mod restate;
mod run;

pub(crate) use run::Options;

/// `--project` of `claij fsm validate`, `run` and `resume`.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct Flags {
    /// MCP services: only the servers and tools this project of the configuration allows (its hat
    /// is shown to the states that call them).
    #[arg(long, value_name = "NAME")]
    pub project: Option<String>,
}

/// `claij fsm` subcommands.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum Command {
    /// Check a definition as `fsm run` would before running it: prints a summary, or every problem
    /// as `pointer: message`, one per line (exit 0 valid, 1 invalid, 2 unreadable file, invalid
    /// JSON, an invalid configuration or an unknown --project). The services `service` states name
    /// (its own and its sub-FSM files') are checked against the configuration `fsm run` reads
    /// (--config, else $CLAIJ_CONFIG, ./.mcp.json, ~/.config/claij/config.toml) and --project, the
    /// models states name against its aliases and providers; `custom` states are problems (a
    /// program provides them).
    Validate {
        /// The definition file (`-` for stdin).
        file: String,
        #[command(flatten)]
        services: Flags,
    },
    /// Draw a definition: Graphviz DOT, Mermaid, or SVG (needs Graphviz's `dot`), on stdout.
    Render {
        /// The definition file (`-` for stdin).
        file: String,
        /// The output format.
        #[arg(long, value_enum, default_value_t = Format::Dot)]
        format: Format,
    },
    /// Run a machine from an input event: each transition on stderr as it happens (a sub-FSM's
    /// prefixed by its state, `review/approve`), the trail on stdout at the end (exit 0 finished or
    /// waiting for input, 1 no valid event, interrupted, or stopped at --max-transitions or
    /// --max-repeated-calls, 2 a backend failure, an unreadable file or a journal in use or
    /// already holding a run). `service` states
    /// run the configuration's services: each `mcpServers` entry as `mcp` (all servers, tools
    /// `server.tool`) and by its name, `tools` (`now`, `random_int`) and `eval` (sandboxed Rhai),
    /// each taking a JSON-RPC `tools/call` in `message`; an `llm` state's `config.model` is its own
    /// model, named as `--llm` names one (exit 2 before anything runs when one of these is missing).
    Run {
        /// The definition file (`-` for stdin).
        file: String,
        /// The first event, as JSON (its `id` may be left out when one transition leaves `start`).
        #[arg(long, value_name = "JSON")]
        input: String,
        /// Write every transition to this new JSONL journal (fsynced, locked while the run lasts), so
        /// `claij fsm resume` can go on. A file that already holds a run is refused (see `--force`).
        #[arg(long, value_name = "FILE")]
        journal: Option<std::path::PathBuf>,
        /// With `--journal`: start a new journal over a file that already holds a run (its run is lost).
        #[arg(long, requires = "journal")]
        force: bool,
        /// Where the run runs: `embedded` in this process (default), or `restate`: as a durable
        /// workflow on a Restate server (`--ingress`), run by the workers registered there (`claij
        /// serve restate`), its transitions followed here.
        #[arg(long, value_enum, default_value_t = On::Embedded)]
        on: On,
        /// With `--on restate`: the server's ingress URL (default http://127.0.0.1:8080).
        #[arg(long, value_name = "URL")]
        ingress: Option<String>,
        /// With `--on restate`: the run's id, the workflow's key (default: a new one). Starting an
        /// id that was started before starts nothing: that run is followed.
        #[arg(long, value_name = "RUN_ID")]
        id: Option<String>,
        /// With `--on restate`: how long to follow the run before giving up here (default 3600;
        /// the run goes on on the server, and the same command with its `--id` follows it again).
        #[arg(long, value_name = "SECONDS", value_parser = crate::args::seconds)]
        follow_timeout: Option<std::time::Duration>,
        #[command(flatten)]
        options: run::Options,
    },
    /// Give a run on Restate that waits in a `human` state its input (an event out of the state;
    /// its `id` may be left out when the state has one exit). The event is checked first: a wrong
    /// one is refused (exit 1) and the run waits on. Exit 2 when the run does not wait.
    Provide {
        /// The run's id.
        run_id: String,
        /// The event, as JSON.
        event: String,
        /// Where the run runs: only `restate` takes input this way (an embedded run reads it on
        /// the stdin of `claij fsm run` or `resume`).
        #[arg(long, value_enum, default_value_t = On::Restate)]
        on: On,
        /// The server's ingress URL (default http://127.0.0.1:8080).
        #[arg(long, value_name = "URL")]
        ingress: Option<String>,
    },
    /// Go on with a journaled run after its last recorded transition: one that waits for input,
    /// was interrupted or killed, or stopped at --max-transitions or --max-repeated-calls (the
    /// journal holds the machine; a line a crash tore is cut away first; exit 2 when another
    /// process holds the journal).
    Resume {
        /// The journal written by `claij fsm run --journal`.
        journal: std::path::PathBuf,
        #[command(flatten)]
        options: run::Options,
    },
}

/// Where `claij fsm run` runs a machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum On {
    /// In this process.
    Embedded,
    /// As a durable workflow on a Restate server.
    Restate,
}

/// Output forms of `claij fsm render`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum Format {
    /// Graphviz DOT text.
    Dot,
    /// A Mermaid flowchart.
    Mermaid,
    /// SVG laid out by Graphviz's `dot`.
    Svg,
}

impl Command {
    /// The command's name when it reads no configuration file (`main` refuses `--config`).
    pub(crate) fn reads_no_configuration(&self) -> Option<&'static str> {
        match self {
            Command::Render { .. } => Some("fsm render"),
            Command::Provide { .. } => Some("fsm provide"),
            Command::Validate { .. } | Command::Run { .. } | Command::Resume { .. } => None,
        }
    }

    /// `--threads` of `run` and `resume`, which `main` applies before any thread starts.
    pub(crate) fn threads(&self) -> Option<std::num::NonZeroUsize> {
        match self {
            Command::Run { options, .. } | Command::Resume { options, .. } => options.threads(),
            _ => None,
        }
    }
}

/// Runs a `claij fsm` subcommand.
pub(crate) fn run(cmd: &Command, front: &Arc<crate::front::Front>) -> Result<Status> {
    match cmd {
        Command::Validate { file, services } => validate(file, services, front),
        Command::Render { file, format } => draw(file, *format),
        Command::Run {
            file,
            input,
            journal,
            force,
            on,
            ingress,
            id,
            follow_timeout,
            options,
        } => match load(file)? {
            _ if *on == On::Restate && journal.is_some() => Err(anyhow!(
                "--journal is for an embedded run: on Restate the server journals the run"
            )),
            _ if *on == On::Embedded
                && (ingress.is_some() || id.is_some() || follow_timeout.is_some()) =>
            {
                Err(anyhow!(
                    "--ingress, --id and --follow-timeout are for a run on Restate: add --on restate"
                ))
            }
            Ok(fsm) => match subs(file, fsm)? {
                Ok(machine) if *on == On::Restate => on_restate(
                    &machine,
                    input,
                    id.as_deref(),
                    ingress.as_deref(),
                    follow_timeout.unwrap_or(std::time::Duration::from_secs(3600)),
                    &options.with_front(front),
                ),
                Ok(machine) => {
                    let journal = journal.as_deref().map(|path| run::NewJournal {
                        path,
                        force: *force,
                    });
                    run::run(&machine, input, journal, &options.with_front(front))
                }
                Err(invalid) => report(file, &invalid),
            },
            Err(invalid) => report(file, &invalid),
        },
        Command::Resume { journal, options } => run::resume(journal, &options.with_front(front)),
        Command::Provide {
            run_id,
            event,
            on,
            ingress,
        } => provide(run_id, event, *on, ingress.as_deref()),
    }
}

#[cfg(feature = "restate")]
fn on_restate(
    machine: &Machine,
    input: &str,
    id: Option<&str>,
    ingress: Option<&str>,
    follow_timeout: std::time::Duration,
    options: &run::Options,
) -> Result<Status> {
    restate::run(machine, input, id, ingress, follow_timeout, options)
}

#[cfg(not(feature = "restate"))]
fn on_restate(
    _: &Machine,
    _: &str,
    _: Option<&str>,
    _: Option<&str>,
    _: std::time::Duration,
    _: &run::Options,
) -> Result<Status> {
    Err(anyhow!(
        "--on restate: this claij was built without the `restate` feature"
    ))
}

fn provide(run_id: &str, event: &str, on: On, ingress: Option<&str>) -> Result<Status> {
    if on == On::Embedded {
        return Err(anyhow!(
            "an embedded run takes its input on the stdin of `claij fsm run` or `claij fsm resume`"
        ));
    }
    #[cfg(feature = "restate")]
    return restate::provide(run_id, event, ingress);
    #[cfg(not(feature = "restate"))]
    {
        let _ = (run_id, event, ingress);
        Err(anyhow!(
            "--on restate: this claij was built without the `restate` feature"
        ))
    }
}

/// A definition that was read but cannot be loaded.
enum Invalid {
    /// JSON, but not shaped like a definition.
    Shape(serde_json::Error),
    /// A definition with problems.
    Problems(DefinitionError),
}

fn validate(file: &str, flags: &Flags, front: &crate::front::Front) -> Result<Status> {
    let fsm = match load(file)? {
        Ok(fsm) => fsm,
        Err(invalid) => return report(file, &invalid),
    };
    let machine = match subs(file, fsm)? {
        Ok(machine) => machine,
        Err(invalid) => return report(file, &invalid),
    };
    let definition = machine.definition();
    // The configuration `fsm run` would read, checked as it checks it.
    let options = claij::fsm::Options {
        project: flags.project.clone(),
        ..claij::fsm::Options::default()
    };
    let wiring = run::with_tools(Wiring::new(front.shared()?, options))?;
    let problems = wiring.check(&machine)?;
    if !problems.is_empty() {
        let invalid = Invalid::Problems(DefinitionError {
            fsm: definition.id.clone(),
            problems,
        });
        return report(file, &invalid);
    }
    writeln!(
        std::io::stdout(),
        "FSM `{}`: {}, {}",
        definition.id,
        count(definition.states.len(), "state"),
        count(definition.transitions.len(), "transition")
    )?;
    Ok(Status::Ok)
}

fn draw(file: &str, format: Format) -> Result<Status> {
    let fsm = match load(file)? {
        Ok(fsm) => fsm,
        Err(invalid) => return report(file, &invalid),
    };
    let definition = fsm.definition();
    let text = match format {
        Format::Dot => render::to_dot(definition),
        Format::Mermaid => render::to_mermaid(definition),
        Format::Svg => render::to_svg(definition).map_err(|e| match e {
            RenderError::DotNotInstalled => anyhow!(
                "graphviz's `dot` is not installed (or not on PATH): install graphviz, or get the \
                 DOT text with `claij fsm render {file} --format dot`"
            ),
            other => anyhow!(other),
        })?,
    };
    std::io::stdout().write_all(text.as_bytes())?;
    Ok(Status::Ok)
}

/// Reads and checks a definition. An unreadable file or invalid JSON is an error (exit 2); a
/// definition that is wrongly shaped or has problems is [`Invalid`] (exit 1).
fn load(file: &str) -> Result<Result<Fsm, Invalid>> {
    let value = input::read_json(file)?;
    match claij::fsm::parse(value, input::name(file)) {
        Ok(fsm) => Ok(Ok(fsm)),
        Err(claij::fsm::Error::NotADefinition { error, .. }) => Ok(Err(Invalid::Shape(error))),
        Err(claij::fsm::Error::Definition(e)) => Ok(Err(Invalid::Problems(e))),
        Err(e) => Err(anyhow::Error::new(e).context(input::name(file).to_string())),
    }
}

/// `fsm` with the sub-FSM files it names, relative to `file` (`-`: the current directory). A
/// file that cannot be read is an error (exit 2); a cycle, or a file that is no valid
/// definition, [`Invalid`] (exit 1).
fn subs(file: &str, fsm: Fsm) -> Result<Result<Machine, Invalid>> {
    let path = (file != "-").then(|| Path::new(file));
    match Machine::from_fsm(fsm, path) {
        Ok(machine) => Ok(Ok(machine)),
        Err(claij::fsm::Error::Definition(e)) => Ok(Err(Invalid::Problems(e))),
        Err(e) => Err(e.into()),
    }
}

/// Prints the problems on stdout, one per line, and a summary on stderr.
fn report(file: &str, invalid: &Invalid) -> Result<Status> {
    let name = input::name(file);
    match invalid {
        Invalid::Shape(e) => {
            writeln!(std::io::stderr(), "{name}: not an FSM definition: {e}")?;
        }
        Invalid::Problems(e) => {
            let mut out = std::io::stdout().lock();
            for p in &e.problems {
                writeln!(out, "{}: {}", p.pointer, crate::exit::one_line(&p.message))?;
            }
            writeln!(
                std::io::stderr(),
                "{name}: invalid: FSM `{}` has {}",
                e.fsm,
                count(e.problems.len(), "problem")
            )?;
        }
    }
    Ok(Status::Invalid)
}
