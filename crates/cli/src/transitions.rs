//! What `fsm run|resume`, `fsm run --on restate` and `mcp chat` say of a run as it goes: each
//! transition on stderr, the line for a run stopped at a limit. A leaf module: it names no command.

use std::io::Write as _;

use anyhow::Result;
use claij_fsm::Entry;

/// `1 state`, `3 states`.
pub(crate) fn count(n: usize, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

/// What stopped a run at a limit (`e`, [`claij_fsm::Error::limit`]): where, the counts and the flag
/// that sets the limit; `None` for any other error. `fsm run|resume` and `mcp chat` say it.
pub(crate) fn limit_reached(e: &claij_fsm::Error) -> Option<String> {
    let what = match e {
        claij_fsm::Error::TooManyTransitions {
            state,
            limit,
            recorded,
        } => format!(
            "stopped in state `{state}` after {} without reaching an end (--max-transitions \
             {limit}; the trail holds {recorded})",
            count(*limit, "transition")
        ),
        claij_fsm::Error::RepeatedCall {
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

/// `from -> to (n attempts): event` on stderr, the event cut at 160 characters; a service's
/// transition that repeats earlier calls says so: `servicing -> llm (repeats an earlier call): ...`.
pub(crate) fn print_transition(entry: &Entry) -> Result<()> {
    let mut event = entry.event.to_string();
    if event.chars().count() > 160 {
        event = format!("{}...", event.chars().take(160).collect::<String>());
    }
    let attempts = match entry.attempts.len() {
        0 => String::new(),
        1 => " (1 attempt)".to_owned(),
        n => format!(" ({n} attempts)"),
    };
    let repeats = match entry.repeats {
        0 => String::new(),
        1 => " (repeats an earlier call)".to_owned(),
        n => format!(" (repeats {n} earlier calls)"),
    };
    writeln!(
        std::io::stderr(),
        "{} -> {}{attempts}{repeats}: {event}",
        entry.from,
        entry.to
    )?;
    Ok(())
}
