//! `--elicitation ask|defaults|decline`: what claij answers when a server asks the user something
//! (MCP elicitation). `defaults` and `decline` are the library's ([`claij::mcp::elicitation`]);
//! `ask` puts the question to the person at the terminal.

use std::io::{BufRead, Write};

use claij_backends::BoxFuture;
use claij_mcp::{ElicitationReply, ElicitationRequest, Elicitor};
use claij_validation::Validator;
use serde_json::{Map, Value, json};

pub(crate) use claij::mcp::elicitation::Defaults;

/// How many times a form is filled in before an answer that breaks the schema is declined.
const FORM_ATTEMPTS: usize = 3;

/// How a server's question is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Policy {
    /// Ask the person at the terminal (a form built from the requested schema).
    Ask,
    /// Accept with the requested schema's defaults; decline when a required field has none.
    Defaults,
    /// Decline every question.
    Decline,
}

/// An [`Elicitor`] that puts each question to the person at the terminal ([`ask`]: stdin, prompts
/// on stderr), one at a time.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Terminal;

impl Elicitor for Terminal {
    fn elicit<'a>(&'a self, request: &'a ElicitationRequest) -> BoxFuture<'a, ElicitationReply> {
        let request = request.clone();
        Box::pin(async move {
            // Reading the terminal blocks: off the runtime, so the connection keeps being served.
            let asked = tokio::task::spawn_blocking(move || {
                let stdin = std::io::stdin();
                ask(&request, &mut stdin.lock(), &mut std::io::stderr())
            });
            match asked.await {
                Ok(Ok(reply)) => reply,
                _ => ElicitationReply::Cancel,
            }
        })
    }
}

/// Puts `request` to a person: `answer? [y]es, [n]o, [c]ancel`, then a form with a line per field of
/// the requested schema (an empty line takes the default, or leaves the field out), the answer checked
/// against the schema and the form shown again (at most [`FORM_ATTEMPTS`] times) with what is
/// wrong. The end of input cancels; a schema that is not a form (no object of properties, or one
/// claij cannot compile) is declined.
pub(crate) fn ask(
    request: &ElicitationRequest,
    input: &mut impl BufRead,
    output: &mut impl Write,
) -> std::io::Result<ElicitationReply> {
    writeln!(
        output,
        "{} asks: {}",
        request.server,
        crate::exit::one_line(&request.message)
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
        .map(|label| format!("{}; ", crate::exit::one_line(label)))
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

    /// What a person typing `typed` answers to a question with `schema`, and what they saw.
    #[track_caller]
    fn asked(schema: Value, typed: &str) -> (ElicitationReply, String) {
        let request = ElicitationRequest::new("srv", "Who are you?", schema);
        let mut output = Vec::new();
        let reply = ask(&request, &mut typed.as_bytes(), &mut output).unwrap();
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
