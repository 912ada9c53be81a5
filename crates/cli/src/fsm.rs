//! `claij fsm validate|render|run|resume`: check a state machine definition, draw it, run it.

use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context as _, Result, anyhow};
use claij::fsm::engine::DefinitionError;
use claij::fsm::engine::render::{self, RenderError};
use claij::fsm::{Error, ExistingJournal, Machine, Wiring, count};
use serde_json::Value;

use crate::exit::Status;
use crate::input;

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
        } => {
            let value = input::read_json(file)?;
            if *on == On::Restate && journal.is_some() {
                return Err(anyhow!(
                    "--journal is for an embedded run: on Restate the server journals the run"
                ));
            }
            if *on == On::Embedded
                && (ingress.is_some() || id.is_some() || follow_timeout.is_some())
            {
                return Err(anyhow!(
                    "--ingress, --id and --follow-timeout are for a run on Restate: add --on restate"
                ));
            }
            let machine = match load(file, value, true)? {
                Ok(machine) => machine,
                Err(invalid) => return Ok(invalid),
            };
            if *on == On::Restate {
                #[cfg(not(feature = "restate"))]
                return Err(anyhow!(NO_RESTATE));
                #[cfg(feature = "restate")]
                {
                    let follow = follow_timeout.unwrap_or(std::time::Duration::from_secs(3600));
                    let (id, ingress) = (id.as_deref(), ingress.as_deref());
                    return restate::run(&machine, input, id, ingress, follow, options);
                }
            }
            let existing = match force {
                true => ExistingJournal::Overwrite,
                false => ExistingJournal::Refuse,
            };
            let journal = journal.as_deref().map(|path| (path, existing));
            run::run(&machine, input, journal, options, front)
        }
        Command::Resume { journal, options } => run::resume(journal, options, front),
        #[cfg(feature = "restate")]
        Command::Provide {
            run_id,
            event,
            on: On::Restate,
            ingress,
        } => restate::provide(run_id, event, ingress.as_deref()),
        #[cfg(not(feature = "restate"))]
        Command::Provide {
            on: On::Restate, ..
        } => Err(anyhow!(NO_RESTATE)),
        Command::Provide { .. } => Err(anyhow!(
            "an embedded run takes its input on the stdin of `claij fsm run` or `claij fsm resume`"
        )),
    }
}

/// `--on restate` in a claij built without the `restate` feature.
#[cfg(not(feature = "restate"))]
const NO_RESTATE: &str = "--on restate: this claij was built without the `restate` feature";

fn validate(file: &str, flags: &Flags, front: &crate::front::Front) -> Result<Status> {
    let machine = match load(file, input::read_json(file)?, true)? {
        Ok(machine) => machine,
        Err(invalid) => return Ok(invalid),
    };
    let definition = machine.definition();
    // The configuration `fsm run` would read, checked as it checks it.
    let options = claij::fsm::Options {
        project: flags.project.clone(),
        ..claij::fsm::Options::default()
    };
    let wiring = Wiring::new(front.shared()?, options);
    let wiring = wiring.with_builtin_tools().context("the built-in tools")?;
    let problems = wiring.check(&machine)?;
    if !problems.is_empty() {
        let fsm = definition.id.clone();
        return report(file, &DefinitionError { fsm, problems });
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
    let machine = match load(file, input::read_json(file)?, false)? {
        Ok(machine) => machine,
        Err(invalid) => return Ok(invalid),
    };
    let definition = machine.definition();
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

/// The definition `value` read from `file`, checked, with (`subs`) the sub-FSM files it names,
/// relative to `file` (`-`: the current directory). A definition that is wrongly shaped or has
/// problems (a cycle of files, a file that is no valid definition) is reported: `Ok(Err(exit 1))`;
/// a sub-FSM file that cannot be read is an error (exit 2).
fn load(file: &str, value: Value, subs: bool) -> Result<Result<Machine, Status>> {
    let name = input::name(file);
    let loaded = match claij::fsm::parse(value, name) {
        Ok(fsm) if subs => Machine::from_fsm(fsm, (file != "-").then(|| Path::new(file))),
        Ok(fsm) => Ok(Machine::new(fsm)),
        Err(Error::NotADefinition { error, .. }) => {
            writeln!(std::io::stderr(), "{name}: not an FSM definition: {error}")?;
            return Ok(Err(Status::Invalid));
        }
        Err(e @ Error::Definition(_)) => Err(e),
        Err(e) => return Err(anyhow::Error::new(e).context(name.to_string())),
    };
    match loaded {
        Ok(machine) => Ok(Ok(machine)),
        Err(Error::Definition(e)) => report(file, &e).map(Err),
        Err(e) => Err(e.into()),
    }
}

/// Prints the problems on stdout, one per line, and a summary on stderr.
fn report(file: &str, e: &DefinitionError) -> Result<Status> {
    let mut out = std::io::stdout().lock();
    for p in &e.problems {
        writeln!(out, "{}: {}", p.pointer, crate::exit::one_line(&p.message))?;
    }
    writeln!(
        std::io::stderr(),
        "{}: invalid: FSM `{}` has {}",
        input::name(file),
        e.fsm,
        count(e.problems.len(), "problem")
    )?;
    Ok(Status::Invalid)
}
