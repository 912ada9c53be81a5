//! `--elicitation ask|defaults|decline`: what claij answers when a server asks the user something
//! (MCP elicitation), as the library decides ([`claij::mcp::offer`]); `ask` puts the question to
//! the person at the terminal ([`Terminal`]).

use claij::backends::BoxFuture;
use claij::mcp::offer::Elicitation;
use claij::mcp::protocol::{ElicitationReply, ElicitationRequest, Elicitor};
use clap::builder::TypedValueParser;

/// `--elicitation`: `ask`, `defaults` or `decline` (clap lists them).
pub(crate) fn policy() -> impl TypedValueParser<Value = Elicitation> {
    let names = clap::builder::PossibleValuesParser::new(["ask", "defaults", "decline"]);
    names.map(|name| name.parse().unwrap_or_default())
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
