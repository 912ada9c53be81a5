//! Driving a run to its end and saying what it did: [`drive`] runs it, giving a waiting `human`
//! state the events an [`Input`] has, and tells how it [`Ended`]; [`Line`] says a transition in one
//! line, [`Report`] the run at its end (outcome, trail, usage, a summary).

use std::fmt;
use std::path::Path;

use claij_fsm::{Entry, Interrupt, Journal, Outcome, Run, Runner, Status, Trail};
use serde_json::{Value, json};

/// `1 state`, `3 states`: `n` and `noun`, plural unless `n` is 1.
#[must_use]
pub fn count(n: usize, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

/// What stopped a run at a limit (`e`, [`claij_fsm::Error::limit`]): where, the counts and the
/// flag that sets the limit, in one line; `None` for any other error. `fsm run|resume` and `mcp
/// chat` say it.
#[must_use]
pub fn limit_reached(e: &claij_fsm::Error) -> Option<String> {
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
    Some(crate::one_line(&what))
}

/// The flag that sets the runner's limit `limit` ([`claij_fsm::Error::limit`]:
/// `max_transitions`, `max_repeated_calls`), as `fsm run|resume` names it; `None` for another.
#[must_use]
pub fn limit_flag(limit: &str) -> Option<&'static str> {
    match limit {
        "max_transitions" => Some("--max-transitions"),
        "max_repeated_calls" => Some("--max-repeated-calls"),
        _ => None,
    }
}

/// The line for a run stopped by `e`: at a limit, [`limit_reached`] and how the run goes on (from
/// its `journal`, resumed with `claij fsm resume`, or how to keep one); any other error, its chain
/// in one line.
#[must_use]
pub fn stopped(e: &claij_fsm::Error, journal: Option<&Path>) -> String {
    let Some(what) = limit_reached(e) else {
        return crate::one_line(&claij_interceptors::ErrorChain(e).to_string());
    };
    let go_on = match (journal, e) {
        (Some(path), claij_fsm::Error::RepeatedCall { .. }) => format!(
            "the run can go on, the model told of the repeats: `claij fsm resume {}` (with a \
             higher --max-repeated-calls to allow more)",
            path.display()
        ),
        (Some(path), _) => format!(
            "the run can go on: `claij fsm resume {}` (its --max-transitions counts anew)",
            path.display()
        ),
        (None, _) => "to be able to go on after a stop, run with --journal FILE, then `claij \
                      fsm resume FILE`"
            .to_owned(),
    };
    format!("{what}; {go_on}")
}

/// A transition in one line: `from -> to (n attempts): event`, the event cut at 160 characters; a
/// service's transition that repeats earlier calls says so (`(repeats an earlier call)`).
#[derive(Debug, Clone, Copy)]
pub struct Line<'a>(pub &'a Entry);

impl fmt::Display for Line<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let entry = self.0;
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
        write!(
            f,
            "{} -> {}{attempts}{repeats}: {event}",
            entry.from, entry.to
        )
    }
}

/// A run at its end, embedded or on a Restate server: its id, outcome, status and trail.
#[derive(Debug, Clone)]
pub struct Report {
    /// The run's id.
    pub run_id: String,
    /// How it ended: `{"finished": state, "event": ...}`, `{"waiting": state}`,
    /// `{"interrupted": state}` or `{"failed": state}`.
    pub outcome: Value,
    /// Where the run is.
    pub status: Status,
    /// Every recorded transition.
    pub trail: Trail,
}

impl Report {
    /// `run` as it ended with `outcome` (`None`: it failed in its current state).
    #[must_use]
    pub fn new(run: &Run, outcome: Option<&Outcome>) -> Self {
        Report {
            run_id: run.id.clone(),
            outcome: outcome_json(outcome, &run.state),
            status: run.status,
            trail: run.trail.clone(),
        }
    }

    /// `{"run_id", "outcome", "status", "trail", "usage"}`.
    #[must_use]
    pub fn to_json(&self) -> Value {
        json!({
            "run_id": self.run_id,
            "outcome": self.outcome,
            "status": self.status,
            "trail": self.trail,
            "usage": self.trail.usage(),
        })
    }

    /// `5 transitions, 2 model calls, 120+40 tokens`; the calls are each an `llm` state's (a
    /// retry is an attempt of its call), with `(1 valid on the first try, 1 retry)` after them
    /// when not every call was valid at once.
    #[must_use]
    pub fn summary(&self) -> String {
        let trail = &self.trail;
        let usage = trail.usage();
        let calls = trail.calls();
        let first = trail.first_try();
        let retries = trail.attempts().saturating_sub(calls);
        let mut text = count(calls, "model call");
        if first < calls || retries > 0 {
            let noun = if retries == 1 { "retry" } else { "retries" };
            text.push_str(&format!(
                " ({first} valid on the first try, {retries} {noun})"
            ));
        }
        format!(
            "{}, {text}, {}+{} tokens",
            count(trail.entries.len(), "transition"),
            usage.input_tokens,
            usage.output_tokens
        )
    }
}

/// The outcome as [`Report::outcome`] says it (`None`: failed in `state`).
fn outcome_json(outcome: Option<&Outcome>, state: &str) -> Value {
    match outcome {
        Some(Outcome::Finished { state, event }) => json!({"finished": state, "event": event}),
        Some(Outcome::Waiting { state }) => json!({"waiting": state}),
        Some(Outcome::Interrupted { from }) => json!({"interrupted": from}),
        Some(_) | None => json!({"failed": state}),
    }
}

impl Ended {
    /// The run's outcome when it has one (not when it stopped or failed).
    #[must_use]
    pub fn outcome(&self) -> Option<&Outcome> {
        match self {
            Ended::Outcome(outcome) | Ended::Refused(outcome) => Some(outcome),
            Ended::Stopped(_) | Ended::Failed(_) => None,
        }
    }
}

/// Where a run waiting in a `human` state gets its events.
pub trait Input<E> {
    /// The next event for the waiting `state`; `None`: there are no more (the run stays waiting).
    ///
    /// # Errors
    ///
    /// The caller's: the run stops and [`drive`] returns it.
    fn event(&mut self, state: &str) -> Result<Option<Value>, E>;

    /// The state refused the last event, saying `why` (an embedded run's
    /// [`claij_fsm::Error::InvalidEvent`] with its causes, a Restate server's refusal): `true`
    /// asks again, `false` ends the drive ([`Ended::Refused`]; a run on a server waits on and is
    /// asked again).
    fn refused(&mut self, why: &str) -> bool;
}

/// How a driven run ended.
#[derive(Debug)]
#[non_exhaustive]
pub enum Ended {
    /// It finished, waits for input the [`Input`] did not have, or was interrupted.
    Outcome(Outcome),
    /// It stopped at one of the runner's limits, or a model's replies stayed invalid
    /// ([`claij_fsm::Error::is_limit`], [`claij_fsm::Error::is_invalid_reply`]); a limit's stop
    /// can go on from its journal.
    Stopped(claij_fsm::Error),
    /// A model failed ([`claij_fsm::Error::Llm`]); the trail so far is the run's.
    Failed(claij_fsm::Error),
    /// The waiting state refused an event and the [`Input`] gave up ([`Input::refused`]).
    Refused(Outcome),
}

/// Runs `run` to its end (recording to `journal` when given; `interrupt` stops it), giving each
/// `human` state it waits in the next event of `input`.
///
/// # Errors
///
/// Any other error of the runner, and the errors of `input`.
pub async fn drive<E: From<claij_fsm::Error>>(
    runner: &Runner,
    run: &mut Run,
    mut journal: Option<&mut Journal>,
    interrupt: &Interrupt,
    input: &mut dyn Input<E>,
) -> Result<Ended, E> {
    loop {
        let outcome = match runner.run(run, interrupt, journal.as_deref_mut()).await {
            Ok(outcome) => outcome,
            Err(e) if e.is_limit() || e.is_invalid_reply() => return Ok(Ended::Stopped(e)),
            Err(e @ claij_fsm::Error::Llm { .. }) => return Ok(Ended::Failed(e)),
            Err(e) => return Err(e.into()),
        };
        let Outcome::Waiting { state } = &outcome else {
            return Ok(Ended::Outcome(outcome));
        };
        let Some(event) = input.event(state)? else {
            return Ok(Ended::Outcome(outcome));
        };
        match runner.provide(run, event, journal.as_deref_mut()) {
            Ok(()) => {}
            Err(e @ claij_fsm::Error::InvalidEvent { .. }) => {
                if !input.refused(&claij_interceptors::ErrorChain(&e).to_string()) {
                    return Ok(Ended::Refused(outcome));
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests;
