//! `--elicitation ask|defaults|decline`: what claij answers when a server asks the user something
//! (MCP elicitation). `defaults` and `decline` are the library's ([`claij::mcp::elicitation`]);
//! `ask` puts the question to the person at the terminal.

use claij::backends::BoxFuture;
use claij::mcp::protocol::{ElicitationReply, ElicitationRequest, Elicitor};

pub(crate) use claij::mcp::elicitation::Defaults;

/// How a server's question is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Policy {
    /// Ask the person at the terminal (a form built from the requested schema).
    Ask,
    /// Accept with the requested schema's defaults; decline when a required field has none.
    Defaults,
    /// Decline every question.
    Decline,
}

/// An [`Elicitor`] that puts each question to the person at the terminal
/// ([`claij::mcp::elicitation::form`] on stdin, prompts on stderr), one at a time.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Terminal;

impl Elicitor for Terminal {
    fn elicit<'a>(&'a self, request: &'a ElicitationRequest) -> BoxFuture<'a, ElicitationReply> {
        let request = request.clone();
        Box::pin(async move {
            // Reading the terminal blocks: off the runtime, so the connection keeps being served.
            let asked = tokio::task::spawn_blocking(move || {
                let stdin = std::io::stdin();
                claij::mcp::elicitation::form(&request, &mut stdin.lock(), &mut std::io::stderr())
            });
            match asked.await {
                Ok(Ok(reply)) => reply,
                _ => ElicitationReply::Cancel,
            }
        })
    }
}
