//! What claij answers when an MCP server asks the user something (MCP elicitation), without a
//! person: [`Defaults`] accepts with the requested schema's defaults filled in (SEP-1034),
//! [`Decline`] declines every question; and with a person: [`form`] asks on a reader and a writer
//! (the `claij` command line's [`claij_mcp::Elicitor`] runs it on the terminal), each field of the
//! requested schema in turn, and checks the answer against the schema.
//!
//! ```
//! use claij::mcp::elicitation::defaults;
//! use serde_json::json;
//!
//! let schema = json!({"type": "object", "properties": {
//!     "name": {"type": "string", "default": "Ada"},
//!     "age": {"type": "integer"}
//! }, "required": ["name"]});
//! assert_eq!(defaults(&schema), Some(json!({"name": "Ada"})));
//! // A required field without a default: nothing truthful to answer, so the question is declined.
//! assert_eq!(defaults(&json!({"type": "object", "required": ["age"]})), None);
//! ```

use std::io::{BufRead, Write};

use claij_backends::BoxFuture;
use claij_mcp::{ElicitationReply, ElicitationRequest, Elicitor};
use claij_validation::Validator;
use serde_json::{Map, Value, json};

/// How many times [`form`] is filled in before an answer that breaks the schema is declined.
pub const FORM_ATTEMPTS: usize = 3;

/// An [`Elicitor`] that accepts every question with its schema's defaults ([`defaults`]), and
/// declines one whose required fields are not all defaulted.
#[derive(Debug, Clone, Copy, Default)]
pub struct Defaults;

impl Elicitor for Defaults {
    fn elicit<'a>(&'a self, request: &'a ElicitationRequest) -> BoxFuture<'a, ElicitationReply> {
        Box::pin(async move {
            match defaults(&request.schema) {
                Some(answer) => ElicitationReply::Accept(answer),
                None => ElicitationReply::Decline,
            }
        })
    }
}

/// The answer the requested schema's defaults make: an object with each property that has a
/// `default`; `None` when the schema is not an object schema or a required property has no default
/// (there is nothing claij could truthfully answer for it).
pub fn defaults(schema: &Value) -> Option<Value> {
    let properties = match schema.get("properties") {
        None => Map::new(),
        Some(properties) => properties.as_object()?.clone(),
    };
    let mut answer = Map::new();
    for (name, property) in &properties {
        if let Some(default) = property.get("default") {
            answer.insert(name.clone(), default.clone());
        }
    }
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let all_there = required
        .iter()
        .all(|name| name.as_str().is_some_and(|name| answer.contains_key(name)));
    all_there.then_some(Value::Object(answer))
}

/// An [`Elicitor`] that declines every question (as a client that offers no elicitor does).
#[derive(Debug, Clone, Copy, Default)]
pub struct Decline;

impl Elicitor for Decline {
    fn elicit<'a>(&'a self, _request: &'a ElicitationRequest) -> BoxFuture<'a, ElicitationReply> {
        Box::pin(async { ElicitationReply::Decline })
    }
}

/// Puts `request` to a person reading `output` and typing on `input` (a terminal's stderr and
/// stdin): `answer? [y]es, [n]o, [c]ancel`, then a form with a line per field of
/// the requested schema (an empty line takes the default, or leaves the field out), the answer checked
/// against the schema and the form shown again (at most [`FORM_ATTEMPTS`] times) with what is
/// wrong. The end of input cancels; a schema that is not a form (no object of properties, or one
/// claij cannot compile) is declined.
///
/// # Errors
///
/// Reading `input` or writing `output` failed.
pub fn form(
    request: &ElicitationRequest,
    input: &mut impl BufRead,
    output: &mut impl Write,
) -> std::io::Result<ElicitationReply> {
    writeln!(
        output,
        "{} asks: {}",
        request.server,
        crate::one_line(&request.message)
    )?;
    let empty = Map::new();
    let properties = match request.schema.get("properties") {
        None => &empty,
        Some(Value::Object(properties)) => properties,
        Some(_) => return declined(output, "the requested schema is not a form"),
    };
    let validator = match Validator::new(&request.schema) {
        Ok(validator) => validator,
        Err(err) => return declined(output, &format!("cannot check answers: {err}")),
    };
    loop {
        write!(output, "answer? [y]es, [n]o (decline), [c]ancel: ")?;
        output.flush()?;
        let Some(line) = read_line(input)? else {
            return Ok(ElicitationReply::Cancel);
        };
        match line.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => break,
            "" | "n" | "no" => return Ok(ElicitationReply::Decline),
            "c" | "cancel" => return Ok(ElicitationReply::Cancel),
            _ => {}
        }
    }
    let required = required(&request.schema);
    for attempt in 1..=FORM_ATTEMPTS {
        let mut answer = Map::new();
        for (name, property) in properties {
            write!(output, "  {}: ", field_prompt(name, property, &required))?;
            output.flush()?;
            let Some(line) = read_line(input)? else {
                return Ok(ElicitationReply::Cancel);
            };
            let text = line.trim();
            if text.is_empty() {
                if let Some(default) = property.get("default") {
                    answer.insert(name.clone(), default.clone());
                }
                continue;
            }
            answer.insert(name.clone(), parse_field(text, property));
        }
        let answer = Value::Object(answer);
        match validator.validate(&answer) {
            Ok(()) => return Ok(ElicitationReply::Accept(answer)),
            Err(violations) => {
                for violation in &violations {
                    writeln!(output, "  {violation}")?;
                }
                if attempt < FORM_ATTEMPTS {
                    writeln!(output, "again:")?;
                }
            }
        }
    }
    declined(
        output,
        &format!("{FORM_ATTEMPTS} answers broke the requested schema"),
    )
}

/// Says why the question is declined, and declines it.
fn declined(output: &mut impl Write, why: &str) -> std::io::Result<ElicitationReply> {
    writeln!(output, "declined: {why}")?;
    Ok(ElicitationReply::Decline)
}

/// One line, without its line ending; `None` at the end of input.
fn read_line(input: &mut impl BufRead) -> std::io::Result<Option<String>> {
    let mut line = String::new();
    if input.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    Ok(Some(line.trim_end_matches(['\n', '\r']).to_owned()))
}

/// The names in the schema's `required`.
fn required(schema: &Value) -> Vec<String> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| {
            names
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// `name (title; type, one of a|b, default x, required)`.
fn field_prompt(name: &str, property: &Value, required: &[String]) -> String {
    let mut notes = Vec::new();
    if let Some(kind) = property.get("type").and_then(Value::as_str) {
        notes.push(kind.to_owned());
    }
    if let Some(values) = property.get("enum").and_then(Value::as_array) {
        let values: Vec<String> = values.iter().map(show).collect();
        notes.push(format!("one of {}", values.join("|")));
    }
    if let Some(default) = property.get("default") {
        notes.push(format!("default {}", show(default)));
    }
    if required.iter().any(|r| r == name) {
        notes.push("required".to_owned());
    }
    let label = property
        .get("title")
        .or_else(|| property.get("description"))
        .and_then(Value::as_str)
        .map(|label| format!("{}; ", crate::one_line(label)))
        .unwrap_or_default();
    format!("{name} ({label}{})", notes.join(", "))
}

/// A string as itself, anything else as JSON.
fn show(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// A field's text as its schema's type asks: a number, a boolean (`y`/`yes`/`true`,
/// `n`/`no`/`false`), else the text itself (which the schema check then reports if it is wrong).
fn parse_field(text: &str, property: &Value) -> Value {
    let as_text = || Value::String(text.to_owned());
    match property.get("type").and_then(Value::as_str) {
        Some("integer") => text.parse::<i64>().map_or_else(|_| as_text(), |n| json!(n)),
        Some("number") => text
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map_or_else(as_text, Value::Number),
        Some("boolean") => match text.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Value::Bool(true),
            "n" | "no" | "false" => Value::Bool(false),
            _ => as_text(),
        },
        _ => as_text(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    #[track_caller]
    fn check(schema: Value, expected: Option<Value>) {
        assert_eq!(defaults(&schema), expected);
    }

    #[test]
    fn each_default_is_filled_in_whatever_its_type() {
        check(
            json!({"type": "object", "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "score": {"type": "number", "default": 95.5},
                "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
                "verified": {"type": "boolean", "default": true},
                "note": {"type": "string"}
            }, "required": []}),
            Some(
                json!({"name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": true}),
            ),
        );
    }

    #[test]
    fn a_required_field_without_a_default_declines() {
        check(
            json!({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer", "default": 3}}, "required": ["name"]}),
            None,
        );
        check(
            json!({"type": "object", "properties": {"name": {"type": "string", "default": "x"}}, "required": ["name"]}),
            Some(json!({"name": "x"})),
        );
    }

    #[test]
    fn a_schema_without_properties_is_an_empty_answer_and_a_malformed_one_declines() {
        check(json!({"type": "object"}), Some(json!({})));
        check(json!({"type": "object", "properties": []}), None);
        check(json!({"type": "object", "required": ["a"]}), None);
    }

    #[test]
    fn the_elicitor_accepts_with_defaults_or_declines() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let accepted = ElicitationRequest::new(
            "s",
            "q",
            json!({"type": "object", "properties": {"a": {"type": "integer", "default": 1}}}),
        );
        let declined =
            ElicitationRequest::new("s", "q", json!({"type": "object", "required": ["a"]}));
        assert_eq!(
            runtime.block_on(Defaults.elicit(&accepted)),
            ElicitationReply::Accept(json!({"a": 1}))
        );
        assert_eq!(
            runtime.block_on(Defaults.elicit(&declined)),
            ElicitationReply::Decline
        );
        assert_eq!(
            runtime.block_on(Decline.elicit(&accepted)),
            ElicitationReply::Decline
        );
    }

    /// What a person typing `typed` answers to a question with `schema`, and what they saw.
    #[track_caller]
    fn asked(schema: Value, typed: &str) -> (ElicitationReply, String) {
        let request = ElicitationRequest::new("srv", "Who are you?", schema);
        let mut output = Vec::new();
        let reply = form(&request, &mut typed.as_bytes(), &mut output).unwrap();
        (reply, String::from_utf8(output).unwrap())
    }

    fn person() -> Value {
        json!({"type": "object", "properties": {
            "age": {"type": "integer", "minimum": 0},
            "name": {"type": "string", "title": "Your name"},
            "role": {"type": "string", "enum": ["dev", "ops"], "default": "dev"},
            "verified": {"type": "boolean"}
        }, "required": ["name", "age"]})
    }

    #[test]
    fn the_form_asks_each_field_and_accepts_a_valid_answer() {
        let (reply, shown) = asked(person(), "y\n30\nAda\n\nyes\n");
        assert_eq!(
            reply,
            ElicitationReply::Accept(
                json!({"age": 30, "name": "Ada", "role": "dev", "verified": true})
            )
        );
        assert!(shown.starts_with("srv asks: Who are you?\n"), "{shown}");
        assert!(shown.contains("  age (integer, required): "), "{shown}");
        assert!(
            shown.contains("  name (Your name; string, required): "),
            "{shown}"
        );
        assert!(
            shown.contains("  role (string, one of dev|ops, default dev): "),
            "{shown}"
        );
    }

    #[test]
    fn an_answer_that_breaks_the_schema_is_asked_again_with_what_is_wrong() {
        // First: age negative, name left out; then a valid answer.
        let (reply, shown) = asked(person(), "y\n-1\n\nops\nno\n7\nBo\nops\n\n");
        assert_eq!(
            reply,
            ElicitationReply::Accept(json!({"age": 7, "name": "Bo", "role": "ops"}))
        );
        assert!(shown.contains("again:"), "{shown}");
        assert!(shown.contains("name"), "{shown}");
    }

    #[test]
    fn three_wrong_answers_decline_and_the_end_of_input_cancels() {
        let wrong = "x\nAda\n\n\n";
        let (reply, shown) = asked(person(), &format!("y\n{wrong}{wrong}{wrong}"));
        assert_eq!(reply, ElicitationReply::Decline);
        assert!(
            shown.ends_with("declined: 3 answers broke the requested schema\n"),
            "{shown}"
        );
        assert_eq!(asked(person(), "y\n30\n").0, ElicitationReply::Cancel);
        assert_eq!(asked(person(), "").0, ElicitationReply::Cancel);
    }

    #[test]
    fn the_first_question_declines_cancels_or_asks_again() {
        assert_eq!(asked(person(), "\n").0, ElicitationReply::Decline);
        assert_eq!(asked(person(), "no\n").0, ElicitationReply::Decline);
        assert_eq!(asked(person(), "c\n").0, ElicitationReply::Cancel);
        assert_eq!(asked(person(), "what\nn\n").0, ElicitationReply::Decline);
    }

    #[test]
    fn a_schema_that_is_not_a_form_is_declined() {
        let (reply, shown) = asked(json!({"type": "object", "properties": [1]}), "y\n");
        assert_eq!(reply, ElicitationReply::Decline);
        assert!(
            shown.contains("declined: the requested schema is not a form"),
            "{shown}"
        );
        let (reply, shown) = asked(json!({"type": 5}), "y\n");
        assert_eq!(reply, ElicitationReply::Decline);
        assert!(shown.contains("declined: cannot check answers"), "{shown}");
    }
}
