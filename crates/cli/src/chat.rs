//! `claij chat`: an interactive conversation, every reply a validated JSON document.
//!
//! Each line is a turn through the same pipeline as `claij ask` (the memory interceptor on by
//! default, so the model is reminded of earlier turns). After each reply: the answer (the standard
//! response rendered with `--standard`), then on stderr the state, the remembered summary and the
//! turn's tokens, cost and time, with a line per tool or MCP call and for the `eval` code the reply
//! ran (the model sees their results on the next turn). On a terminal the line editor keeps a
//! history (`~/.claij_history` unless `--no-history`); from a pipe, each line of stdin is a turn.
//! `/memory` shows what is remembered, `/reset` forgets it (with the message history, pending tool
//! results and the `eval` result; with `--session`, the file is written so at the next turn), `/metrics`
//! shows what the calls so far did (the table of `ask --metrics`; with `--metrics`, also at the end),
//! `/quit` (or end of input) ends the conversation. With `--session FILE` the conversation starts from the file
//! and is saved to it after every valid reply.

use std::io::{BufRead as _, IsTerminal as _, Write as _};

use anyhow::{Context as _, Result};
use claij::report;

use crate::ask::{Conversation, Options};
use crate::exit::Status;

/// Arguments of `claij chat`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    options: Options,
    /// Keep no line history on disk.
    #[arg(long)]
    no_history: bool,
}

impl Args {
    /// `--threads`.
    pub(crate) fn threads(&self) -> Option<std::num::NonZeroUsize> {
        self.options.threads()
    }
}

/// Where a line comes from: the line editor on a terminal, stdin otherwise.
enum Lines {
    Editor(Box<rustyline::DefaultEditor>, Option<std::path::PathBuf>),
    Piped(std::io::StdinLock<'static>),
}

impl Lines {
    fn open(history: bool) -> Result<Self> {
        if !std::io::stdin().is_terminal() {
            return Ok(Lines::Piped(std::io::stdin().lock()));
        }
        let mut editor = rustyline::DefaultEditor::new().context("cannot start the line editor")?;
        let path = history
            .then(|| {
                std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".claij_history"))
            })
            .flatten();
        if let Some(path) = &path {
            // A missing history file is a first run.
            let _ = editor.load_history(path);
        }
        Ok(Lines::Editor(Box::new(editor), path))
    }

    /// The next line, `None` at the end of input (Ctrl-D) or on Ctrl-C.
    fn next(&mut self) -> Result<Option<String>> {
        match self {
            Lines::Piped(stdin) => {
                let mut line = String::new();
                Ok((stdin.read_line(&mut line)? > 0).then_some(line))
            }
            Lines::Editor(editor, _) => match editor.readline("you> ") {
                Ok(line) => {
                    let _ = editor.add_history_entry(line.as_str());
                    Ok(Some(line))
                }
                Err(
                    rustyline::error::ReadlineError::Eof
                    | rustyline::error::ReadlineError::Interrupted,
                ) => Ok(None),
                Err(err) => Err(err).context("cannot read the line"),
            },
        }
    }

    fn save_history(&mut self) {
        if let Lines::Editor(editor, Some(path)) = self {
            let _ = editor.save_history(path);
        }
    }
}

/// Runs the conversation until `/quit` or the end of input. Exit 0, or 1 when the last turn got no
/// valid reply (the model refused, no valid reply within the retries, a budget ran out).
pub(crate) fn run(args: &Args, front: &crate::front::Front) -> Result<Status> {
    let mut conversation = Conversation::open_chat(&args.options, front)?;
    let mut lines = Lines::open(!args.no_history)?;
    let mut status = Status::Ok;
    let mut err = std::io::stderr();
    while let Some(line) = lines.next()? {
        let prompt = line.trim();
        match prompt {
            "" => continue,
            "/quit" | "/exit" => break,
            "/memory" => {
                let ctx = conversation.context();
                let kept = report::recalled(ctx).unwrap_or_else(|| report::remembered(&ctx.memory));
                writeln!(err, "{kept}")?;
                continue;
            }
            "/metrics" => {
                if let Some(table) = conversation.metrics().map(|m| m.render()) {
                    write!(err, "{table}")?;
                }
                continue;
            }
            "/reset" => {
                conversation.reset();
                writeln!(err, "(memory cleared)")?;
                continue;
            }
            _ => {}
        }
        if let Err(e) = conversation.check_turn() {
            lines.save_history();
            conversation.close();
            return Err(e.into());
        }
        let (result, elapsed) = conversation.turn(prompt);
        match result {
            Ok(answer) => {
                status = Status::Ok;
                conversation.save()?;
                if conversation.json() {
                    conversation.print_answer(&answer, elapsed)?;
                } else {
                    let (calls, eval) = (conversation.ran(), conversation.evaluated());
                    let turn = conversation.context().turn;
                    let shown = report::chat_turn(
                        &answer,
                        conversation.streamed(),
                        calls,
                        eval,
                        turn,
                        elapsed,
                    );
                    let mut out = std::io::stdout().lock();
                    out.write_all(shown.out.as_bytes())?;
                    out.flush()?;
                    for line in shown.err {
                        writeln!(err, "{line}")?;
                    }
                }
            }
            // A refusal, no valid reply, a budget: the turn ends in one line, the chat goes on.
            Err(ref e) if let Some(line) = report::turn_failure(e) => {
                status = Status::Invalid;
                end_streamed_line(conversation.streamed())?;
                writeln!(err, "{line}")?;
            }
            Err(e) => {
                end_streamed_line(conversation.streamed())?;
                lines.save_history();
                conversation.close();
                return Err(e.into());
            }
        }
    }
    lines.save_history();
    if let Some(table) = conversation.metrics_table() {
        write!(err, "{table}")?;
    }
    conversation.close();
    Ok(status)
}

/// Ends the line of answer text the partial values wrote, if they wrote any.
fn end_streamed_line(streamed: &str) -> Result<()> {
    if !streamed.is_empty() {
        writeln!(std::io::stdout())?;
    }
    Ok(())
}
