//! The runner's spans: `fsm.run` for a run, `fsm.state` for each visit to a state, named and filled
//! as an OpenTelemetry layer reads them (`otel.name`, `otel.kind`, `otel.status_code`), so a run is
//! one trace: run > state > the model calls, service calls and sub-FSM runs of that state.

use tracing::Span;
use tracing::field::Empty;

use crate::definition::{Action, State};

/// The longest status description recorded: an error chain can quote a long list of violations.
const MAX_DESCRIPTION: usize = 1000;

/// The span of a run, a child of the current span (a sub-FSM's run is so a child of the calling
/// state's visit). `resumed` marks a run picked up from its journal: the same `claij.fsm.run_id`
/// in a new trace.
pub(super) fn run_span(fsm: &str, run_id: &str, resumed: bool) -> Span {
    tracing::info_span!(
        "fsm.run",
        "otel.name" = format!("fsm {fsm}"),
        "otel.kind" = "internal",
        "claij.fsm.id" = fsm,
        "claij.fsm.run_id" = run_id,
        "claij.fsm.resumed" = resumed,
        "claij.fsm.outcome" = Empty,
        "otel.status_code" = Empty,
        "otel.status_description" = Empty,
    )
}

/// The span of one visit to `state`, a child of `run`.
pub(super) fn state_span(run: &Span, state: &State) -> Span {
    tracing::info_span!(
        parent: run,
        "fsm.state",
        "otel.name" = format!("state {}", state.id),
        "otel.kind" = "internal",
        "claij.fsm.state" = state.id.as_str(),
        "claij.fsm.action" = action_name(&state.action),
        "claij.fsm.transition" = Empty,
        "claij.fsm.bail_out" = Empty,
        "otel.status_code" = Empty,
        "otel.status_description" = Empty,
    )
}

/// Records the transition a visit took: `from -> to`.
pub(super) fn transition(span: &Span, from: &str, to: &str, bail_out: bool) {
    span.record("claij.fsm.transition", format!("{from} -> {to}"));
    if bail_out {
        span.record("claij.fsm.bail_out", true);
    }
}

/// Marks `span` failed with `description` (the code first: an OpenTelemetry layer reads a
/// description as an error status of its own, and a later bare code would clear it).
pub(super) fn fail(span: &Span, description: &str) {
    span.record("otel.status_code", "ERROR");
    span.record("otel.status_description", bounded(description));
}

/// The name of an action as the span records it: `llm`, `service`, `fsm`, `human`, `end` or a
/// custom action's name.
fn action_name(action: &Action) -> &str {
    match action {
        Action::Llm => "llm",
        Action::Service => "service",
        Action::Fsm => "fsm",
        Action::Human => "human",
        Action::End => "end",
        Action::Custom(name) => name,
    }
}

fn bounded(text: &str) -> &str {
    match text.char_indices().nth(MAX_DESCRIPTION) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}
