//! `claij mcp chat`: the MCP FSM (`llm` ⇄ `servicing` → `end`) over the configured servers, a
//! request a line. Each transition goes to stderr as it happens, each answer to stdout. A line's
//! run sees the chat so far: the last `--history` requests and their answers go with the request
//! (`{"request", "history": [{"request", "answer"}, ...]}`, oldest first). A request whose tool call
//! repeats an earlier one (the same arguments and result) is told so, and stopped past
//! `--max-repeated-calls`, as `fsm run` does; the chat goes on with the next line.
//!
//! On a terminal a server's question (an MCP elicitation) is put to the person, who answers with a
//! JSON object (an empty line declines, `cancel` cancels) while the tool call waits; without a
//! terminal the clients offer no elicitation, so servers decline on their own (and hide the tools
//! that need it).

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::sync::Arc;

use anyhow::{Result, anyhow};
use claij::mcp::chat::{DEFAULT_HISTORY, History, MAX_HISTORY, answer_text};
use claij_fsm::{Interrupt, Outcome, Run, Runner};
use claij_interceptors::ErrorChain;
use claij_mcp::mcp_fsm::{self, McpService};
use claij_mcp::{ElicitationQueue, Services};
use serde_json::{Value, json};

use super::{Common, Signals};
use crate::exit::Status;
use crate::options::ModelOptions;

/// Questions a server may have pending at once.
const QUESTIONS: usize = 4;

/// Arguments of `claij mcp chat`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    pub(super) common: Common,
    /// The model that decides, and how it is called, as `claij ask` takes it.
    #[command(flatten)]
    model: ModelOptions,
    /// Stop a request after this many transitions (models can loop).
    #[arg(long, default_value_t = claij_fsm::DEFAULT_MAX_TRANSITIONS, value_name = "N", value_parser = crate::args::transitions)]
    max_transitions: usize,
    /// Loops, as `fsm run`'s: a tool call that repeats an earlier one of the same request (the
    /// same tool, arguments and result) is told to the model; a repeat beyond the first N ends the
    /// request (0: the first repeat does; `off`: none, nor is the model told, for a tool that
    /// polls). The chat goes on with the next line.
    #[arg(long, default_value_t = claij_fsm::DEFAULT_MAX_REPEATED_CALLS, value_name = "N", value_parser = crate::args::repeated_calls)]
    max_repeated_calls: usize,
    /// How many earlier requests of this chat, each with its answer, go with a request so the model
    /// knows what was said (0: none, every line on its own).
    #[arg(long, default_value_t = DEFAULT_HISTORY, value_name = "N", value_parser = history)]
    history: usize,
}

impl Args {
    /// `--threads`, which `main` applies before any thread starts.
    pub(crate) fn threads(&self) -> Option<std::num::NonZeroUsize> {
        self.model.threads
    }
}

/// `--history`: 0 to [`MAX_HISTORY`].
fn history(text: &str) -> Result<usize, String> {
    text.trim()
        .parse::<usize>()
        .ok()
        .filter(|n| *n <= MAX_HISTORY)
        .ok_or_else(|| format!("expected a whole number from 0 to {MAX_HISTORY}"))
}

/// Runs the chat until the end of input or a signal.
pub(super) async fn run(
    args: &Args,
    front: &crate::front::Front,
    signals: &mut Signals,
) -> Result<Status> {
    let terminal = std::io::stdin().is_terminal();
    let (queue, questions) = ElicitationQueue::new(QUESTIONS);
    let elicitor: Option<Arc<dyn claij_mcp::Elicitor>> = match args.common.elicitation {
        None => terminal.then(|| Arc::new(queue) as _),
        Some(super::elicitation::Policy::Ask) if terminal => Some(Arc::new(queue)),
        Some(super::elicitation::Policy::Ask) => {
            return Err(anyhow!(
                "--elicitation ask needs a terminal on stdin: use defaults or decline"
            ));
        }
        Some(super::elicitation::Policy::Defaults) => Some(Arc::new(super::elicitation::Defaults)),
        Some(super::elicitation::Policy::Decline) => None,
    };
    let connected = tokio::select! {
        connected = super::connect(&args.common, None, None, elicitor, front) => connected?,
        status = signals.recv() => return Ok(status),
    };
    let services = connected;
    let mut lines = Lines::spawn();
    let chatted = chat(args, front, &services, questions, &mut lines, signals).await;
    services.close().await;
    chatted
}

async fn chat(
    args: &Args,
    front: &crate::front::Front,
    services: &Services,
    questions: tokio::sync::mpsc::Receiver<claij_mcp::PendingElicitation>,
    lines: &mut Lines,
    signals: &mut Signals,
) -> Result<Status> {
    let terminal = lines.terminal;
    let claij = front.claij()?;
    let notice = |text: &str| {
        let _ = writeln!(std::io::stderr().lock(), "{text}");
    };
    let options = args.model.to_options();
    let opened = claij::fsm::models::open(options.llm.as_deref(), &options, claij, &notice)?;
    let service = McpService::new(services.clone()).with_questions(questions);
    let runner = claij::mcp::chat::runner(service, opened.backend, opened.config)?
        .with_max_transitions(args.max_transitions)
        .with_max_repeated_calls(args.max_repeated_calls)
        .with_observer(|entry| {
            let _ = crate::transitions::print_transition(entry);
        });
    let mut status = Status::Ok;
    let mut history = History::new(args.history);
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
        let input = history.input(request);
        let answered = tokio::select! {
            answered = answer(&runner, input, lines) => answered?,
            signalled = signals.recv() => return Ok(signalled),
        };
        match answered {
            Answered::Valid(text) => history.push(request, text),
            Answered::Failed(text) => {
                status = Status::Invalid;
                if let Some(text) = text {
                    history.push(request, text);
                }
            }
        }
    }
    Ok(status)
}

/// How a request ended.
enum Answered {
    /// The answer's text, printed on stdout.
    Valid(String),
    /// No valid answer (said on stderr); the answer's text when the model answered with an error.
    Failed(Option<String>),
}

/// Runs one request (`input`, [`History::input`]) to its answer, printed on stdout; a person
/// answers the servers' questions on the way.
async fn answer(runner: &Runner, input: Value, lines: &mut Lines) -> Result<Answered> {
    let mut run = runner.start(input)?;
    let interrupt = Interrupt::new();
    loop {
        let outcome = match runner.run(&mut run, &interrupt, None).await {
            Ok(outcome) => outcome,
            Err(e) => {
                // A limit is said with its flag (`--max-repeated-calls 1 allows 1 repeat`).
                let line = crate::transitions::limit_reached(&e)
                    .unwrap_or_else(|| crate::exit::one_line(&ErrorChain(&e).to_string()));
                writeln!(std::io::stderr(), "error: {line}")?;
                return Ok(Answered::Failed(None));
            }
        };
        match outcome {
            Outcome::Finished { event, .. } => {
                let text = answer_text(&event);
                writeln!(std::io::stdout(), "{text}")?;
                return Ok(if claij::mcp::chat::is_error(&event) {
                    Answered::Failed(Some(text))
                } else {
                    Answered::Valid(text)
                });
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
                return Ok(Answered::Failed(None));
            }
            _ => return Ok(Answered::Failed(None)),
        }
    }
}

/// The person's answer to the question the run waits on: `{"action": "accept", "content": {...}}`
/// for a JSON object, `decline` for an empty line (or the end of input), `cancel` for `cancel`.
async fn ask_person(run: &Run, lines: &mut Lines) -> Result<Value> {
    let question = &run.event["elicitation"];
    let server = question["server"].as_str().unwrap_or("a server");
    let message = question["message"].as_str().unwrap_or_default();
    let schema = claij_schema::to_compact(&question["schema"]);
    let mut err = std::io::stderr();
    writeln!(err, "{server} asks: {}", crate::exit::one_line(message))?;
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
