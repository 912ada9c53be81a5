//! Loop detection: a service call that repeats an earlier one (same state, same request, same
//! result) since the run's last input, decided from the trail alone, and what the model the result
//! goes to is told about it.

use serde_json::Value;

use crate::definition::{Action, START};
use crate::trail::Entry;

/// Calls longer than this are cut in messages.
const SHOWN: usize = 200;

/// Whether a state of `action` calls something whose repeats are counted: a service or a custom
/// action (not the implicit `start`).
pub(super) fn is_call(action: &Action) -> bool {
    match action {
        Action::Service => true,
        Action::Custom(name) => name != START,
        _ => false,
    }
}

/// How many earlier calls of `state` in `entries` since the last input (the run's start or a
/// person's, inclusive: an input may be a call) were given `call` and gave `result`. A call is an
/// entry into `state` followed by the entry out of it (a visit whose entry is `omit` is not
/// seen). `action_of` says what a state does.
pub(super) fn count(
    state: &str,
    entries: &[Entry],
    call: &Value,
    result: &Value,
    action_of: impl Fn(&str) -> Action,
) -> usize {
    let since = entries
        .iter()
        .rposition(|e| e.from == START || action_of(&e.from) == Action::Human)
        .unwrap_or(0);
    entries[since..]
        .windows(2)
        .filter(|pair| {
            pair[0].to == state
                && pair[1].from == state
                && same(&pair[0].event, call)
                && same(&pair[1].event, result)
        })
        .count()
}

/// Whether two events say the same, their `id` (the transition) and a JSON-RPC `message.id` left
/// out.
fn same(a: &Value, b: &Value) -> bool {
    comparable(a) == comparable(b)
}

fn comparable(event: &Value) -> Value {
    let mut event = event.clone();
    if let Value::Object(map) = &mut event {
        map.remove("id");
        if let Some(Value::Object(message)) = map.get_mut("message")
            && message.contains_key("jsonrpc")
        {
            message.remove("id");
        }
    }
    event
}

/// The call, short, for a message: a JSON-RPC `tools/call`'s tool and arguments
/// (`fs.read_text_file {"path":"notes.txt"}`), else the request without its `id`.
pub(super) fn describe(call: &Value) -> String {
    let params = call
        .pointer("/message/params")
        .filter(|_| call.pointer("/message/method") == Some(&Value::from("tools/call")));
    let text = match params.and_then(|p| Some((p.get("name")?.as_str()?, p.get("arguments")))) {
        Some((name, Some(arguments))) => format!("`{name}` with {arguments}"),
        Some((name, None)) => format!("`{name}`"),
        None => comparable(call).to_string(),
    };
    if text.chars().count() > SHOWN {
        format!("{}...", text.chars().take(SHOWN).collect::<String>())
    } else {
        text
    }
}

/// What the model whose state the repeated result entered is told after the result: the call was
/// made before with this result, the ways on (`exits`: the ids of its other transitions), and
/// whether one more ends the run (`last`).
pub(super) fn note(service: &str, repeats: usize, exits: &[String], last: bool) -> String {
    let times = match repeats {
        1 => "once".to_owned(),
        n => format!("{n} times"),
    };
    let mut note = format!(
        "Note: `{service}` was given this same request {times} before and gave this same result: \
         calling it again will not change it. Use the result you have"
    );
    match exits {
        [] => note.push_str(", or make a different call."),
        [one] => note.push_str(&format!(": take {one}, or make a different call.")),
        many => note.push_str(&format!(
            ": take one of {}, or make a different call.",
            many.join(", ")
        )),
    }
    if last {
        note.push_str(" The same call once more ends the run.");
    }
    note
}
