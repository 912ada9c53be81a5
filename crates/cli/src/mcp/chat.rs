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

use std::io::{IsTerminal as _, Write as _};
use std::sync::Arc;

use anyhow::{Result, anyhow};
use claij::interceptors::ErrorChain;
use claij::mcp::chat::{Answer, Chat, DEFAULT_HISTORY, MAX_HISTORY, Question};
use claij::mcp::protocol::mcp_fsm::McpService;
use claij::mcp::protocol::{ElicitationQueue, PendingElicitation, Services};
use claij::mcp::signal::Signals;
use serde_json::Value;

use super::Common;
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
    #[arg(long, default_value_t = claij::fsm::engine::DEFAULT_MAX_TRANSITIONS, value_name = "N", value_parser = crate::args::transitions)]
    max_transitions: usize,
    /// Loops, as `fsm run`'s: a tool call that repeats an earlier one of the same request (the
    /// same tool, arguments and result) is told to the model; a repeat beyond the first N ends the
    /// request (0: the first repeat does; `off`: none, nor is the model told, for a tool that
    /// polls). The chat goes on with the next line.
    #[arg(long, default_value_t = claij::fsm::engine::DEFAULT_MAX_REPEATED_CALLS, value_name = "N", value_parser = crate::args::repeated_calls)]
    max_repeated_calls: usize,
    /// How many earlier requests of this chat, each with its answer, go with a request so the model
    /// knows what was said (0: none, every line on its own).
    #[arg(long, default_value_t = DEFAULT_HISTORY, value_name = "N", value_parser = |text: &str| claij::options::parse::whole(text, 0, MAX_HISTORY))]
    history: usize,
}

impl Args {
    /// `--threads`, which `main` applies before any thread starts.
    pub(crate) fn threads(&self) -> Option<std::num::NonZeroUsize> {
        self.model.threads
    }
}

/// Runs the chat until the end of input or a signal.
pub(super) async fn run(
    args: &Args,
    front: &crate::front::Front,
    signals: &mut Signals,
) -> Result<Status> {
    let (queue, questions) = ElicitationQueue::new(QUESTIONS);
    let services = tokio::select! {
        connected = super::connect(&args.common, None, Some(Arc::new(queue)), front) => connected?,
        signal = signals.recv() => return Ok(Status::Signalled(signal)),
    };
    let mut lines = Lines::spawn();
    let chatted = chat(args, front, &services, questions, &mut lines, signals).await;
    services.close().await;
    chatted
}

async fn chat(
    args: &Args,
    front: &crate::front::Front,
    services: &Services,
    questions: tokio::sync::mpsc::Receiver<PendingElicitation>,
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
    let mut chat = Chat::new(runner, args.history);
    let mut status = Status::Ok;
    loop {
        if terminal {
            write!(std::io::stderr(), "> ")?;
            std::io::stderr().flush()?;
        }
        let line = tokio::select! {
            line = lines.next() => line,
            signal = signals.recv() => return Ok(Status::Signalled(signal)),
        };
        let Some(line) = line else {
            break;
        };
        let request = line.trim();
        if request.is_empty() {
            continue;
        }
        // A person answers the servers' questions on the way (only on a terminal).
        let ask = async |question: &Question| match terminal {
            true => ask_person(question, lines).await.map(Some),
            false => Ok(None),
        };
        let answered = tokio::select! {
            answered = chat.answer(request, ask) => answered?,
            signal = signals.recv() => return Ok(Status::Signalled(signal)),
        };
        if !matches!(answered, Answer::Valid(_)) {
            status = Status::Invalid;
        }
        let mut err = std::io::stderr();
        match answered {
            Answer::Valid(text) | Answer::Error(text) => writeln!(std::io::stdout(), "{text}")?,
            Answer::Failed(e) => {
                // A limit is said with its flag (`--max-repeated-calls 1 allows 1 repeat`).
                let line = claij::fsm::limit_reached(&e)
                    .unwrap_or_else(|| crate::exit::one_line(&ErrorChain(&e).to_string()));
                writeln!(err, "error: {line}")?;
            }
            Answer::Unanswered { state } => {
                // Only a terminal gets questions; nothing else waits.
                return Err(anyhow!("the run waits in `{state}` with no one to answer"));
            }
            Answer::Interrupted { from } => writeln!(err, "interrupted in state `{from}`")?,
            _ => {}
        }
    }
    Ok(status)
}

/// The person's answer to a server's question ([`claij::mcp::chat::reply`]).
async fn ask_person(question: &Question, lines: &mut Lines) -> Result<Value> {
    let mut err = std::io::stderr();
    write!(err, "{question}")?;
    loop {
        write!(
            err,
            "answer (JSON; empty line declines, `cancel` cancels): "
        )?;
        err.flush()?;
        let line = lines.next().await;
        match claij::mcp::chat::reply(line.as_deref()) {
            Some(reply) => return Ok(reply),
            None => writeln!(err, "not a JSON object; try again")?,
        }
    }
}

/// The lines of stdin ([`claij::mcp::chat::lines`]), and whether it is a terminal.
struct Lines {
    receiver: tokio::sync::mpsc::UnboundedReceiver<String>,
    terminal: bool,
}

impl Lines {
    fn spawn() -> Self {
        let receiver = claij::mcp::chat::lines(std::io::BufReader::new(std::io::stdin()));
        let terminal = std::io::stdin().is_terminal();
        Self { receiver, terminal }
    }

    /// The next line, `None` at the end of input.
    async fn next(&mut self) -> Option<String> {
        self.receiver.recv().await
    }
}
