//! The memory and history suites: a fact told early in a conversation and asked about later, with
//! one mechanism at a time able to carry it, checked on the requests the model was sent.
//!
//! - **memory** sends no earlier turn ([`HistoryPolicy::NONE`]): the fact can reach the model only
//!   through the memory interceptor's summaries in the system prompt. Each question's request must
//!   hold no earlier turn's words and the fact nowhere but in that section, the section must hold the
//!   fact, and the answer must say it. A memory that keeps nothing fails.
//! - **history** runs no memory interceptor and sends the default window of messages: the fact must
//!   be in the earlier messages sent, nowhere in the system prompt, and in the answer. A history that
//!   sends nothing fails.
//!
//! The fact is a word no model guesses (a favourite colour is guessed: asked with nothing to go on,
//! the embedded model says blue), never in a question, matched as a whole word (`47`, not `1470`);
//! the requests are recorded by [`Seen`], so what the model saw is checked rather than assumed from
//! what it said. The chain is `claij ask --interceptors memory`'s, `state` one of the conversation's
//! states as there.

use std::sync::Arc;

use anyhow::Result;
use claij_backends::ChatRequest;
use claij_interceptors::builtin::memory::{Memory, recall};
use claij_interceptors::builtin::states::States;
use claij_interceptors::{Chain, Context, HistoryPolicy, Pipeline};

use super::chat::{clip, text};
use super::seen::Seen;
use super::{Env, Judged, Tally, mentions};

/// Which mechanism may carry earlier turns to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Carrier {
    /// The memory interceptor's summaries; no message history is sent.
    Memory,
    /// The conversation's messages (the default window); no memory interceptor.
    History,
}

/// One turn of a scripted conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Turn {
    /// What the user says.
    pub say: &'static str,
    /// For a question, the word of an earlier turn its answer must hold.
    pub fact: Option<&'static str>,
}

/// A fact, then the question about it: a number the embedded model's summary keeps with what it
/// numbers.
pub(super) const NEXT_TURN: [Turn; 2] = [
    tell("Note: my locker number is 47."),
    ask("What is my locker number?", "47"),
];

/// A fact, four turns about something else, then the question: six exchanges. One fact: told a
/// second one once the memory holds a summary, the embedded 135M model's next summary repeats or
/// garbles the first (eight two-fact scripts tried), so a second fact would measure the model's
/// summaries, not whether memory persists.
pub(super) const LATER: [Turn; 6] = [
    tell("Note: my locker number is 47."),
    tell("What is the capital of France?"),
    tell("How many legs does a spider have?"),
    tell("What is the largest planet?"),
    tell("Name a colour of the rainbow."),
    ask("What is my locker number?", "47"),
];

const fn tell(say: &'static str) -> Turn {
    Turn { say, fact: None }
}

const fn ask(say: &'static str, fact: &'static str) -> Turn {
    Turn {
        say,
        fact: Some(fact),
    }
}

/// What one question's request and answer showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Recall {
    /// The turn (1 for the first).
    pub turn: usize,
    pub fact: &'static str,
    /// Nothing but the carrier could have told the model: for memory, the request held no earlier
    /// turn's words and the fact nowhere outside the memory section; for history, no memory section
    /// and the fact nowhere in the system prompt.
    pub isolated: bool,
    /// The carrier held the fact: the memory section, or the earlier messages sent.
    pub carried: bool,
    /// The answer says the fact.
    pub answered: bool,
    pub answer: String,
}

/// Runs `script` with only `carrier` able to carry earlier turns, judging each question.
pub(super) async fn conversation(
    env: &Env,
    tally: &mut Tally,
    carrier: Carrier,
    script: &[Turn],
) -> Result<Judged> {
    let seen = Arc::new(Seen::new(env.backend.clone()));
    let mut config = env.config();
    // The chain `claij ask --interceptors memory` runs (or, for history, no memory).
    let chain = match carrier {
        Carrier::Memory => {
            config.history = HistoryPolicy::NONE;
            Chain::new().with(Memory::default())
        }
        Carrier::History => {
            config.history = HistoryPolicy::default();
            Chain::new()
        }
    }
    .with(States::conversation());
    let pipeline = Pipeline::new(seen.clone(), config, chain);
    let mut ctx = Context::default();
    let mut recalls = Vec::new();
    let mut summaries = 0;
    for (i, turn) in script.iter().enumerate() {
        // What the memory interceptor puts in this turn's system prompt (`system_push` trims it).
        let section = recall(&ctx.memory).map(|s| s.trim().to_owned());
        let from = seen.len();
        let Some(answer) = env.ask(&pipeline, &mut ctx, turn.say, tally).await? else {
            return Ok(Judged::fail(&format!(
                "{}turn {}: no valid reply within the retries",
                so_far(carrier, &recalls),
                i + 1
            )));
        };
        if text(&answer.value, "summary").is_some_and(|s| !s.trim().is_empty()) {
            summaries += 1;
        }
        let Some(fact) = turn.fact else {
            continue;
        };
        // The first attempt's request: a retry's adds only this turn's reply and feedback.
        let Some(request) = seen.since(from).into_iter().next() else {
            return Ok(Judged::fail(&format!(
                "turn {}: no request was sent",
                i + 1
            )));
        };
        let earlier: Vec<&str> = script[..i].iter().map(|t| t.say).collect();
        let said = text(&answer.value, "answer").unwrap_or_default();
        recalls.push(judge(
            carrier,
            &request,
            section.as_deref(),
            &earlier,
            (i + 1, fact),
            said,
        ));
    }
    let passed = recalls
        .iter()
        .all(|r| r.isolated && r.carried && r.answered);
    let mut detail = describe(carrier, &recalls);
    if carrier == Carrier::Memory {
        detail.push_str(&format!(
            "; replies with a summary: {summaries} of {}",
            script.len()
        ));
    }
    Ok(Judged { passed, detail })
}

/// Judges one question from the first request of its turn, the memory section that turn's prompt
/// was given (`None`: nothing remembered), the earlier turns' words and the answer.
pub(super) fn judge(
    carrier: Carrier,
    request: &ChatRequest,
    section: Option<&str>,
    earlier: &[&str],
    (turn, fact): (usize, &'static str),
    answer: &str,
) -> Recall {
    let system = request.system.as_deref().unwrap_or_default();
    let (isolated, carried) = match carrier {
        Carrier::Memory => {
            let outside = outside_memory(request, section);
            let leaked =
                earlier.iter().any(|words| outside.contains(words)) || mentions(&outside, fact);
            let carried = section.is_some_and(|s| system.contains(s) && says(s, fact));
            (!leaked, carried)
        }
        Carrier::History => {
            // The messages before this turn's own (the last).
            let before = request.messages.split_last().map_or(&[][..], |(_, b)| b);
            let sent = before.iter().any(|m| says(&m.content, fact));
            (section.is_none() && !mentions(system, fact), sent)
        }
    };
    Recall {
        turn,
        fact,
        isolated,
        carried,
        answered: says(answer, fact),
        answer: answer.to_owned(),
    }
}

/// Whether `text` holds `word` as a whole word, ignoring case: `47` is not in `1470`.
pub(super) fn says(text: &str, word: &str) -> bool {
    let (text, word) = (text.to_lowercase(), word.to_lowercase());
    let alnum = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    !word.is_empty()
        && text.match_indices(&word).any(|(at, _)| {
            !alnum(text[..at].chars().next_back()) && !alnum(text[at + word.len()..].chars().next())
        })
}

/// Every text of `request` but the memory `section` of its system prompt: the rest of the system
/// prompt, then each message's content and tool calls.
fn outside_memory(request: &ChatRequest, section: Option<&str>) -> String {
    let system = request.system.as_deref().unwrap_or_default();
    let mut out = match section {
        Some(section) => system.replacen(section, "", 1),
        None => system.to_owned(),
    };
    for message in &request.messages {
        out.push('\n');
        out.push_str(&message.content);
        for call in &message.tool_calls {
            out.push('\n');
            out.push_str(&call.arguments.to_string());
        }
    }
    out
}

/// The questions' verdicts, one clause each.
pub(super) fn describe(carrier: Carrier, recalls: &[Recall]) -> String {
    let (isolated, carried) = match carrier {
        Carrier::Memory => ("no earlier turn in the request", "in the memory section"),
        Carrier::History => ("no memory in the request", "in the history sent"),
    };
    recalls
        .iter()
        .map(|r| {
            format!(
                "turn {} asks for {:?}: {isolated}: {}; {carried}: {}; in the answer: {} ({})",
                r.turn,
                r.fact,
                r.isolated,
                r.carried,
                r.answered,
                clip(&r.answer)
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The verdicts so far, as a prefix for a failure's detail.
fn so_far(carrier: Carrier, recalls: &[Recall]) -> String {
    if recalls.is_empty() {
        String::new()
    } else {
        format!("{}; ", describe(carrier, recalls))
    }
}

#[cfg(test)]
mod tests;
