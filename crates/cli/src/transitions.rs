//! What `fsm run|resume`, `fsm run --on restate` and `mcp chat` say of a run as it goes: each
//! transition on stderr ([`claij::fsm::limit_reached`] is the line for a run stopped at a limit). A leaf module: it names no command.

use std::io::Write as _;

use anyhow::Result;
use claij::fsm::{Entry, Line};

/// `from -> to (n attempts): event` on stderr ([`Line`]).
pub(crate) fn print_transition(entry: &Entry) -> Result<()> {
    writeln!(std::io::stderr(), "{}", Line(entry))?;
    Ok(())
}
