//! Checks on load: every problem of a definition at once, each with the JSON pointer to it.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::fmt;

use serde::Serialize;
use serde_json::{Value, json};

use crate::definition::{Action, Definition, END, INTERRUPTED, START};

/// Everything wrong with a definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
pub struct DefinitionError {
    /// The machine's id.
    pub fsm: String,
    /// The problems, in definition order.
    pub problems: Vec<Problem>,
}

/// One problem, and where it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// JSON pointer into the definition.
    pub pointer: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for DefinitionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.problems.len();
        write!(
            f,
            "FSM `{}` has {n} problem{}",
            self.fsm,
            if n == 1 { "" } else { "s" }
        )?;
        for (i, p) in self.problems.iter().enumerate() {
            write!(
                f,
                "{} {}: {}",
                if i == 0 { ":" } else { ";" },
                p.pointer,
                p.message
            )?;
        }
        Ok(())
    }
}

/// Checks `definition`: duplicate ids, transitions naming unknown states, a missing entry, unreachable
/// states, non-terminal states without an exit, sub-FSM states naming no machine, schemas that do not
/// compile.
///
/// # Errors
///
/// One [`DefinitionError`] listing every problem.
pub fn check(definition: &Definition) -> Result<(), DefinitionError> {
    let mut problems = Vec::new();
    let mut problem =
        |pointer: String, message: String| problems.push(Problem { pointer, message });

    // `transitons` for a missing `transitions`: that key is the problem; what a machine without
    // its states or transitions lacks would only bury it.
    let missing = |field: &str, empty: bool| {
        empty
            && definition
                .unknown
                .keys()
                .any(|key| misspelling_of(key) == Some(field))
    };
    if missing("states", definition.states.is_empty())
        || missing("transitions", definition.transitions.is_empty())
    {
        unknown_fields("", &definition.unknown, DEFINITION_FIELDS, &mut problem);
        return Err(DefinitionError {
            fsm: definition.id.clone(),
            problems,
        });
    }

    let mut declared: HashMap<&str, usize> = HashMap::new();
    for (i, state) in definition.states.iter().enumerate() {
        if state.id.trim().is_empty() {
            problem(format!("/states/{i}/id"), "a state needs an id".into());
        }
        if let Some(first) = declared.insert(state.id.as_str(), i) {
            problem(
                format!("/states/{i}/id"),
                format!("duplicate state `{}` (first at /states/{first})", state.id),
            );
        }
        if state.id == START && state.action != Action::Custom(START.into()) {
            problem(
                format!("/states/{i}"),
                "`start` is the entry and runs no action; declare the first working state after it"
                    .into(),
            );
        }
        if state.action == Action::Fsm && state.config_str("fsm").is_none() {
            problem(
                format!("/states/{i}/config"),
                "an `fsm` state names its sub-FSM: {\"fsm\": \"<id>\"}".into(),
            );
        }
        for (action, key, values) in CONFIG_VALUES {
            if state.action != action {
                continue;
            }
            let Some(value) = state.config.get(key) else {
                continue;
            };
            let known = value.as_str().is_some_and(|v| values.contains(&v));
            if !known {
                let hint = match value.as_str().and_then(|v| closest(v, values)) {
                    Some(meant) => format!("; did you mean `{meant}`?"),
                    None => String::new(),
                };
                problem(
                    format!("/states/{i}/config/{key}"),
                    format!(
                        "unknown {key} {value}{hint} (one of: {})",
                        values.join(", ")
                    ),
                );
            }
        }
    }
    let known = |id: &str| declared.contains_key(id) || [START, END, INTERRUPTED].contains(&id);

    let mut seen = HashMap::new();
    for (i, t) in definition.transitions.iter().enumerate() {
        if let Some(first) = seen.insert(&t.id, i) {
            problem(
                format!("/transitions/{i}/id"),
                format!(
                    "duplicate transition {} (first at /transitions/{first})",
                    t.id
                ),
            );
        }
        for (end, name) in [(0, &t.id.from), (1, &t.id.to)] {
            if !known(name) {
                problem(
                    format!("/transitions/{i}/id/{end}"),
                    format!("unknown state `{name}`"),
                );
            }
        }
        if t.id.to == START {
            problem(
                format!("/transitions/{i}/id/1"),
                "no transition may enter `start`".into(),
            );
        }
        if let Some(state) = definition.state(&t.id.from)
            && state.is_terminal()
        {
            problem(
                format!("/transitions/{i}/id/0"),
                format!("`{}` is terminal: nothing may leave it", t.id.from),
            );
        }
    }
    // Shared schemas first, each with the others around it for references; a broken one is reported
    // once, here, and stands as `true` when the transitions are checked.
    let mut defs = definition.schemas.clone();
    for name in definition.schemas.keys() {
        let at = format!("/schemas/{}", claij_schema::pointer::escape(name));
        let reference = format!("#/$defs/{}", claij_schema::pointer::escape(name));
        let wrapped = json!({"$defs": definition.schemas, "$ref": reference});
        if let Err(e) = claij_schema::check(&wrapped) {
            let inside = format!("/$defs/{}", claij_schema::pointer::escape(name));
            let found = schema_problem(&e, &inside, &at);
            problem(found.pointer, found.message);
            defs.insert(name.clone(), Value::Bool(true));
        }
    }
    // Each transition's schema as written, so a pointer in the message is a pointer in the file.
    for (i, t) in definition.transitions.iter().enumerate() {
        let mut schema = t.schema.clone();
        if let Value::Object(map) = &mut schema
            && !defs.is_empty()
        {
            map.insert("$defs".into(), Value::Object(defs.clone()));
        }
        if let Err(e) = claij_schema::check(&schema) {
            let at = format!("/transitions/{i}/schema");
            let found = schema_problem(&e, "", &at);
            problem(found.pointer, found.message);
        }
    }

    if definition.outgoing(START).next().is_none() {
        problem("/transitions".into(), "no transition leaves `start`".into());
    }
    let reachable = reachable(definition);
    for (i, state) in definition.states.iter().enumerate() {
        if state.id == START {
            continue;
        }
        if !reachable.contains(state.id.as_str()) {
            problem(
                format!("/states/{i}"),
                format!("`{}` cannot be reached from `start`", state.id),
            );
        }
        if !state.is_terminal() && definition.outgoing(&state.id).next().is_none() {
            problem(
                format!("/states/{i}"),
                format!("`{}` is not terminal and no transition leaves it", state.id),
            );
        }
    }
    unknown_fields("", &definition.unknown, DEFINITION_FIELDS, &mut problem);
    for (i, state) in definition.states.iter().enumerate() {
        unknown_fields(
            &format!("/states/{i}"),
            &state.unknown,
            STATE_FIELDS,
            &mut problem,
        );
    }
    for (i, t) in definition.transitions.iter().enumerate() {
        unknown_fields(
            &format!("/transitions/{i}"),
            &t.unknown,
            TRANSITION_FIELDS,
            &mut problem,
        );
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(DefinitionError {
            fsm: definition.id.clone(),
            problems,
        })
    }
}

/// The settings of a state's `config` the runner reads whose values are a closed set: the action,
/// the key, the values.
const CONFIG_VALUES: [(Action, &str, &[&str]); 3] = [
    (Action::Fsm, "trail", &["omit", "summary", "full"]),
    (Action::Llm, "history", &["full", "none"]),
    (Action::Llm, "input", &["entered", "start"]),
];

/// The key of a definition `key` is probably a misspelling of (`transitons`: `transitions`), if
/// it is not one itself.
pub(crate) fn misspelling_of(key: &str) -> Option<&'static str> {
    if DEFINITION_FIELDS.contains(&key) || key.starts_with('$') || key.starts_with("x-") {
        return None;
    }
    closest(key, DEFINITION_FIELDS)
}

/// The keys of a definition, a state and a transition.
const DEFINITION_FIELDS: &[&str] = &[
    "id",
    "description",
    "prompts",
    "schemas",
    "states",
    "transitions",
];
const STATE_FIELDS: &[&str] = &["id", "action", "description", "prompts", "config"];
const TRANSITION_FIELDS: &[&str] = &["id", "schema", "prompts", "omit", "description"];

/// A problem for each key of `unknown` (the object at `at`) that is not an annotation (`$...`,
/// `x-...`), naming the known key it was probably meant to be.
fn unknown_fields(
    at: &str,
    unknown: &serde_json::Map<String, Value>,
    known: &[&str],
    problem: &mut impl FnMut(String, String),
) {
    for key in unknown.keys() {
        if key.starts_with('$') || key.starts_with("x-") {
            continue;
        }
        let hint = match closest(key, known) {
            Some(meant) => format!("; did you mean `{meant}`?"),
            None => format!(" (known: {})", known.join(", ")),
        };
        problem(
            claij_schema::pointer::push(at, key),
            format!("unknown field `{key}`{hint} (annotations may start with `$` or `x-`)"),
        );
    }
}

/// The known key nearest `key` (case-insensitive edit distance at most 2, or one a prefix of the
/// other), if any.
pub(crate) fn closest<'k>(key: &str, known: &[&'k str]) -> Option<&'k str> {
    let key = key.to_lowercase();
    known
        .iter()
        .map(|k| {
            let distance = if k.starts_with(&key) || key.starts_with(k) {
                1
            } else {
                edit_distance(&key, k)
            };
            (distance, *k)
        })
        .filter(|(distance, _)| *distance <= 2)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, k)| k)
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

fn reachable(definition: &Definition) -> BTreeSet<&str> {
    let mut seen: HashSet<&str> = HashSet::from([START]);
    let mut queue = VecDeque::from([START]);
    while let Some(state) = queue.pop_front() {
        for t in definition.outgoing(state) {
            if seen.insert(t.id.to.as_str()) {
                queue.push_back(t.id.to.as_str());
            }
        }
    }
    seen.into_iter().collect()
}

/// Where in the definition the compiler's error is (its pointer starts with `inside`, where the
/// checked part sits in what was compiled, which is `at` in the file), and what it says.
fn schema_problem(e: &claij_schema::Error, inside: &str, at: &str) -> Problem {
    let (pointer, message) = match e {
        claij_schema::Error::InvalidSchema {
            pointer, message, ..
        } => match pointer.strip_prefix(inside) {
            Some(rest) => (format!("{at}{rest}"), format!("invalid schema: {message}")),
            None => (at.to_owned(), format!("invalid schema: {message}")),
        },
        other => (at.to_owned(), other.to_string()),
    };
    Problem { pointer, message }
}
