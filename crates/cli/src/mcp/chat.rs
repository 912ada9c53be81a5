//! `claij mcp chat`: the MCP FSM (`llm` ⇄ `servicing` → `end`) over the configured servers, a
//! request a line. Each transition goes to stderr as it happens, each answer to stdout.
//!
//! On a terminal a server's question (an MCP elicitation) is put to the person, who answers with a
//! JSON object (an empty line declines, `cancel` cancels) while the tool call waits; without a
//! terminal the clients offer no elicitation, so servers decline on their own (and hide the tools
//! that need it).

use std::io::{BufRead as _, IsTerminal as _, Write as _};

use anyhow::{Result, anyhow};
use claij_fsm::{Interrupt, Outcome, Run, Runner};
use claij_interceptors::ErrorChain;
use claij_mcp::mcp_fsm::{self, McpService};
use claij_mcp::{ElicitationQueue, Services};
use serde_json::{Value, json};

use super::{Common, Signals};
use crate::Status;
use crate::ask::ModelOptions;

/// Questions a server may have pending at once.
const QUESTIONS: usize = 4;

/// Arguments of `claij mcp chat`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    common: Common,
    /// The model that decides, and how it is called, as `claij ask` takes it.
    #[command(flatten)]
    model: ModelOptions,
    /// Stop a request after this many transitions (models can loop).
    #[arg(long, default_value_t = claij_fsm::DEFAULT_MAX_TRANSITIONS, value_name = "N", value_parser = crate::args::transitions)]
    max_transitions: usize,
}

impl Args {
    /// `--threads`, which `main` applies before any thread starts.
    pub(crate) fn threads(&self) -> Option<std::num::NonZeroUsize> {
        self.model.threads
    }
}

/// Runs the chat until the end of input or a signal.
pub(super) async fn run(args: &Args, signals: &mut Signals) -> Result<Status> {
    let terminal = std::io::stdin().is_terminal();
    let (queue, questions) = ElicitationQueue::new(QUESTIONS);
    let elicitor = terminal.then_some(queue);
    let connected = tokio::select! {
        connected = super::connect(&args.common, None, None, elicitor) => connected?,
        status = signals.recv() => return Ok(status),
    };
    let (_, services) = connected;
    let mut lines = Lines::spawn();
    let chatted = chat(args, &services, questions, &mut lines, signals).await;
    services.close().await;
    chatted
}

async fn chat(
    args: &Args,
    services: &Services,
    questions: tokio::sync::mpsc::Receiver<claij_mcp::PendingElicitation>,
    lines: &mut Lines,
    signals: &mut Signals,
) -> Result<Status> {
    let terminal = lines.terminal;
    let settings = crate::config::Settings::load()?;
    let opened = crate::fsm::models::open(args.model.llm.as_deref(), &args.model, &settings)?;
    let service = McpService::new(services.clone()).with_questions(questions);
    let runner = mcp_fsm::runner_with(service, opened.backend, opened.config)?
        .with_max_transitions(args.max_transitions)
        .with_observer(|entry| {
            let _ = crate::fsm::print_transition(entry);
        });
    let mut status = Status::Ok;
    loop {
        if terminal {
            write!(std::io::stderr(), "> ")?;
            std::io::stderr().flush()?;
        }
        let line = tokio::select! {
            line = lines.next() => line,
            signalled = signals.recv() => return Ok(signalled),
        };
        let Some(line) = line else {
            break;
        };
        let request = line.trim();
        if request.is_empty() {
            continue;
        }
        let answered = tokio::select! {
            answered = answer(&runner, request, lines) => answered?,
            signalled = signals.recv() => return Ok(signalled),
        };
        if !answered {
            status = Status::Invalid;
        }
    }
    Ok(status)
}

/// Runs one request to its answer, printed on stdout; a person answers the servers' questions on
/// the way. `false` when no valid answer came (said on stderr).
async fn answer(runner: &Runner, request: &str, lines: &mut Lines) -> Result<bool> {
    let mut run = runner.start(json!({"request": request}))?;
    let interrupt = Interrupt::new();
    loop {
        let outcome = match runner.run(&mut run, &interrupt, None).await {
            Ok(outcome) => outcome,
            Err(e) => {
                let line = crate::one_line(&ErrorChain(&e).to_string());
                writeln!(std::io::stderr(), "error: {line}")?;
                return Ok(false);
            }
        };
        match outcome {
            Outcome::Finished { event, .. } => {
                writeln!(std::io::stdout(), "{}", text_of(&event))?;
                return Ok(event.pointer("/result/isError") != Some(&Value::Bool(true)));
            }
            Outcome::Waiting { state } if state == mcp_fsm::ASKING && lines.terminal => {
                let reply = ask_person(&run, lines).await?;
                runner.provide(&mut run, json!({ "answer": reply }), None)?;
            }
            Outcome::Waiting { state } => {
                // Only a terminal gets questions; nothing else waits.
                return Err(anyhow!("the run waits in `{state}` with no one to answer"));
            }
            Outcome::Interrupted { from } => {
                writeln!(std::io::stderr(), "interrupted in state `{from}`")?;
                return Ok(false);
            }
            _ => return Ok(false),
        }
    }
}

/// The answer's text blocks, one per line.
fn text_of(event: &Value) -> String {
    let blocks = event
        .pointer("/result/content")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    blocks
        .iter()
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The person's answer to the question the run waits on: `{"action": "accept", "content": {...}}`
/// for a JSON object, `decline` for an empty line (or the end of input), `cancel` for `cancel`.
async fn ask_person(run: &Run, lines: &mut Lines) -> Result<Value> {
    let question = &run.event["elicitation"];
    let server = question["server"].as_str().unwrap_or("a server");
    let message = question["message"].as_str().unwrap_or_default();
    let schema = claij_schema::to_compact(&question["schema"]);
    let mut err = std::io::stderr();
    writeln!(err, "{server} asks: {}", crate::one_line(message))?;
    writeln!(err, "answer with a JSON object like {}", schema.trim_end())?;
    loop {
        write!(
            err,
            "answer (JSON; empty line declines, `cancel` cancels): "
        )?;
        err.flush()?;
        let Some(line) = lines.next().await else {
            return Ok(json!({"action": "decline"}));
        };
        match line.trim() {
            "" => return Ok(json!({"action": "decline"})),
            "cancel" => return Ok(json!({"action": "cancel"})),
            text => match serde_json::from_str::<Value>(text) {
                Ok(content @ Value::Object(_)) => {
                    return Ok(json!({"action": "accept", "content": content}));
                }
                _ => writeln!(err, "not a JSON object; try again")?,
            },
        }
    }
}

/// The lines of stdin, read on a thread of their own: a signal is heard while a line is awaited,
/// and the process can end without that read finishing.
struct Lines {
    receiver: tokio::sync::mpsc::UnboundedReceiver<String>,
    terminal: bool,
}

impl Lines {
    fn spawn() -> Self {
        let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in std::io::stdin().lock().lines() {
                let Ok(line) = line else {
                    break;
                };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            receiver,
            terminal: std::io::stdin().is_terminal(),
        }
    }

    /// The next line, `None` at the end of input.
    async fn next(&mut self) -> Option<String> {
        self.receiver.recv().await
    }
}
