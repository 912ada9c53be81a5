//! Tests of the memory and history suites' verdicts on requests built by hand, and of their scripts.

use claij_backends::{ChatRequest, Message};
use claij_interceptors::MemoryState;

use super::*;

const FACT_TURN: &str = "Note: my locker number is 47.";
const QUESTION: &str = "What is my locker number?";

/// The memory section recalling `summaries`.
fn section(summaries: &[&str]) -> Option<String> {
    recall(&MemoryState {
        summaries: summaries.iter().map(|s| (*s).to_owned()).collect(),
        insights: None,
    })
}

/// A request with `system` and `messages` (alternating user, assistant; the last is this turn's).
fn request(system: &str, messages: &[&str]) -> ChatRequest {
    let mut request = ChatRequest::new("m").system(system);
    for (i, content) in messages.iter().enumerate() {
        request = request.message(if i % 2 == 0 {
            Message::user(*content)
        } else {
            Message::assistant(*content)
        });
    }
    request
}

/// Judges the question of the two-turn script and checks (isolated, carried, answered).
#[track_caller]
fn check(
    carrier: Carrier,
    request: &ChatRequest,
    section: Option<&str>,
    answer: &str,
    expected: (bool, bool, bool),
) {
    let recall = judge(carrier, request, section, &[FACT_TURN], (2, "47"), answer);
    assert_eq!(
        (recall.isolated, recall.carried, recall.answered),
        expected,
        "{recall:?}"
    );
}

const SCHEMA_TEXT: &str = "Respond with only a JSON value.";

#[test]
fn memory_passes_when_only_the_memory_section_holds_the_fact() {
    let memory = section(&["The locker number is 47."]).unwrap();
    let system = format!("{memory}\n\n{SCHEMA_TEXT}");
    check(
        Carrier::Memory,
        &request(&system, &[QUESTION]),
        Some(&memory),
        "It is 47.",
        (true, true, true),
    );
    // A right section, a wrong answer.
    check(
        Carrier::Memory,
        &request(&system, &[QUESTION]),
        Some(&memory),
        "I don't know.",
        (true, true, false),
    );
}

#[test]
fn memory_fails_when_an_earlier_turn_was_sent() {
    let memory = section(&["The locker number is 47."]).unwrap();
    let system = format!("{memory}\n\n{SCHEMA_TEXT}");
    let history = [FACT_TURN, r#"{"answer": "Noted."}"#, QUESTION];
    check(
        Carrier::Memory,
        &request(&system, &history),
        Some(&memory),
        "It is 47.",
        (false, true, true),
    );
    // Turn 1's words elsewhere in the system prompt count as well.
    let system = format!("{memory}\n\nEarlier: {FACT_TURN}\n\n{SCHEMA_TEXT}");
    check(
        Carrier::Memory,
        &request(&system, &[QUESTION]),
        Some(&memory),
        "It is 47.",
        (false, true, true),
    );
    // So does the fact outside the section, even without turn 1's words.
    let system = format!("{memory}\n\nThe number 47.\n\n{SCHEMA_TEXT}");
    check(
        Carrier::Memory,
        &request(&system, &[QUESTION]),
        Some(&memory),
        "It is 47.",
        (false, true, true),
    );
}

#[test]
fn memory_fails_when_the_section_lacks_the_fact_or_was_not_sent() {
    // The model's summary missed the fact: the answer cannot count, however right.
    let vague = section(&["The user said something."]).unwrap();
    let system = format!("{vague}\n\n{SCHEMA_TEXT}");
    check(
        Carrier::Memory,
        &request(&system, &[QUESTION]),
        Some(&vague),
        "It is 47.",
        (true, false, true),
    );
    // Memory kept nothing: no section.
    check(
        Carrier::Memory,
        &request(SCHEMA_TEXT, &[QUESTION]),
        None,
        "It is 47.",
        (true, false, true),
    );
    // Remembered, but the section never reached the request.
    let memory = section(&["The locker number is 47."]).unwrap();
    check(
        Carrier::Memory,
        &request(SCHEMA_TEXT, &[QUESTION]),
        Some(&memory),
        "It is 47.",
        (true, false, true),
    );
}

#[test]
fn history_passes_when_only_the_earlier_messages_hold_the_fact() {
    let history = [FACT_TURN, r#"{"answer": "Noted."}"#, QUESTION];
    check(
        Carrier::History,
        &request(SCHEMA_TEXT, &history),
        None,
        "It is 47.",
        (true, true, true),
    );
    // No earlier message sent: not carried.
    check(
        Carrier::History,
        &request(SCHEMA_TEXT, &[QUESTION]),
        None,
        "It is 47.",
        (true, false, true),
    );
    // A memory section, or the fact in the system prompt: not history alone.
    let memory = section(&["The locker number is 47."]).unwrap();
    let system = format!("{memory}\n\n{SCHEMA_TEXT}");
    check(
        Carrier::History,
        &request(&system, &history),
        Some(&memory),
        "It is 47.",
        (false, true, true),
    );
}

#[test]
fn the_scripts_ask_each_fact_after_telling_it_and_never_give_it_away() {
    for script in [&NEXT_TURN[..], &LATER[..]] {
        let facts: Vec<&str> = script.iter().filter_map(|t| t.fact).collect();
        assert!(!facts.is_empty());
        for (i, turn) in script.iter().enumerate() {
            for fact in &facts {
                if turn.fact.is_some() {
                    assert!(!mentions(turn.say, fact), "{turn:?} gives {fact:?} away");
                }
            }
            if let Some(fact) = turn.fact {
                let told = script[..i]
                    .iter()
                    .position(|t| t.fact.is_none() && mentions(t.say, fact));
                assert!(told.is_some(), "{fact:?} is asked before it is told");
            }
        }
    }
    // At least five exchanges, with turns about something else between the facts and the questions.
    assert!(LATER.len() >= 5);
    let last_told = LATER.iter().rposition(|t| t.fact.is_none()).unwrap();
    let first_asked = LATER.iter().position(|t| t.fact.is_some()).unwrap();
    let distractions = LATER[..first_asked]
        .iter()
        .filter(|t| {
            !LATER
                .iter()
                .filter_map(|q| q.fact)
                .any(|f| mentions(t.say, f))
        })
        .count();
    assert!(last_told < first_asked && distractions >= 2, "{LATER:?}");
}

#[test]
fn the_detail_says_which_mechanism_and_what_it_showed() {
    let recall = Recall {
        turn: 2,
        fact: "47",
        isolated: true,
        carried: false,
        answered: false,
        answer: "I don't know.".to_owned(),
    };
    assert_eq!(
        describe(Carrier::Memory, std::slice::from_ref(&recall)),
        "turn 2 asks for \"47\": no earlier turn in the request: true; in the memory section: false; \
         in the answer: false (\"I don't know.\")"
    );
    assert_eq!(
        describe(Carrier::History, &[recall]),
        "turn 2 asks for \"47\": no memory in the request: true; in the history sent: false; in the \
         answer: false (\"I don't know.\")"
    );
}

#[test]
fn a_fact_is_said_as_a_whole_word() {
    assert!(says("It is 47.", "47"));
    assert!(says("47", "47"));
    assert!(says("My cat Pepper's bowl", "pepper"));
    assert!(!says("The number is 1470", "47"));
    assert!(!says("291048", "29"));
    assert!(!says("peppermint", "pepper"));
    assert!(!says("anything", ""));
}
