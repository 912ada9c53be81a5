//! What `fsm run|resume`, `fsm run --on restate` and `mcp chat` say of a run as it goes: each
//! transition on stderr, the line for a run stopped at a limit. A leaf module: it names no command.

use std::io::Write as _;

use anyhow::Result;
use claij::fsm::engine::Error;
use claij::fsm::{Entry, Line, count};

/// What stopped a run at a limit (`e`, [`Error::limit`]): where, the counts and the flag that sets
/// the limit; `None` for any other error. `fsm run|resume` and `mcp chat` say it.
pub(crate) fn limit_reached(e: &Error) -> Option<String> {
    let what = match e {
        Error::TooManyTransitions {
            state,
            limit,
            recorded,
        } => format!(
            "stopped in state `{state}` after {} without reaching an end (--max-transitions \
             {limit}; the trail holds {recorded})",
            count(*limit, "transition")
        ),
        Error::RepeatedCall {
            state,
            call,
            repeats,
            limit,
        } => format!(
            "state `{state}` repeats itself: {call} got the same result {} since the last input \
             (--max-repeated-calls {limit} allows {})",
            count(repeats + 1, "time"),
            count(*limit, "repeat")
        ),
        _ => return None,
    };
    Some(crate::exit::one_line(&what))
}

/// `from -> to (n attempts): event` on stderr ([`Line`]).
pub(crate) fn print_transition(entry: &Entry) -> Result<()> {
    writeln!(std::io::stderr(), "{}", Line(entry))?;
    Ok(())
}
