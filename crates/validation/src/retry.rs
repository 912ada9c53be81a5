//! The retry prompt: what a model is told after a reply failed, so it can fix exactly that.

use std::fmt::Write as _;

use crate::violation::Violation;

/// Why the previous reply failed.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Failure<'a> {
    /// It held JSON that violates the schema.
    Invalid(&'a [Violation]),
    /// It held no JSON (the reason, as [`crate::Outcome::NoJson`] gives it).
    NoJson(&'a str),
    /// It was cut off at the token limit and what was recovered is still invalid.
    Truncated(&'a [Violation]),
    /// It was longer than the caller reads (a pipeline's `max_reply_bytes`), so it was not read.
    TooLarge {
        /// Its length in bytes.
        bytes: usize,
        /// The limit it went over, in bytes.
        limit: usize,
    },
}

/// Renders retry prompts, with bounds so a huge request or reply cannot blow up the next request.
///
/// ```
/// use claij_validation::{Validator, retry::{Failure, RetryPrompt}};
/// use serde_json::json;
///
/// let validator = Validator::new(&claij_schema::base())?;
/// let violations = validator.validate(&json!({"answer": 1})).unwrap_err();
/// let prompt = RetryPrompt::default().render("What is 2+2?", r#"{"answer": 1}"#, Failure::Invalid(&violations));
/// assert!(prompt.contains("- (root): missing required property `state`"));
/// assert!(prompt.contains("Focus specifically on fixing:"));
/// # Ok::<(), claij_validation::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPrompt {
    /// The original request is quoted up to this many characters.
    pub max_request_chars: usize,
    /// The invalid response is quoted up to this many characters.
    pub max_response_chars: usize,
    /// At most this many violations are listed.
    pub max_violations: usize,
}

impl Default for RetryPrompt {
    fn default() -> Self {
        Self {
            max_request_chars: 4000,
            max_response_chars: 2000,
            max_violations: 20,
        }
    }
}

impl RetryPrompt {
    /// The prompt for a retry of `request` after `response` failed as `failure` says: a message that
    /// stands on its own, quoting both.
    pub fn render(&self, request: &str, response: &str, failure: Failure<'_>) -> String {
        let mut out = Self::headline(failure).to_owned();
        out.push_str("\n\nORIGINAL REQUEST:\n");
        out.push_str(&truncate(request.trim(), self.max_request_chars));
        out.push_str("\n\nYOUR RESPONSE:\n");
        out.push_str(&truncate(response.trim(), self.max_response_chars));
        out.push_str("\n\n");
        self.problem_and_fix(&mut out, failure);
        out
    }

    /// The correction after a reply that failed as `failure` says, for a conversation that already
    /// holds the request and, as the model's own turn, the reply: what was wrong and what to fix,
    /// quoting neither.
    ///
    /// ```
    /// use claij_validation::{Validator, retry::{Failure, RetryPrompt}};
    /// use serde_json::json;
    ///
    /// let validator = Validator::new(&claij_schema::base())?;
    /// let violations = validator.validate(&json!({"answer": 1})).unwrap_err();
    /// let correction = RetryPrompt::default().correction(Failure::Invalid(&violations));
    /// assert!(correction.starts_with("Your previous response failed schema validation."));
    /// assert!(!correction.contains("YOUR RESPONSE"));
    /// # Ok::<(), claij_validation::Error>(())
    /// ```
    pub fn correction(&self, failure: Failure<'_>) -> String {
        let mut out = Self::headline(failure).to_owned();
        out.push_str("\n\n");
        self.problem_and_fix(&mut out, failure);
        out
    }

    fn headline(failure: Failure<'_>) -> &'static str {
        match failure {
            Failure::Invalid(_) => "Your previous response failed schema validation.",
            Failure::NoJson(_) => "Your previous response did not contain a JSON document.",
            Failure::Truncated(_) => {
                "Your previous response was cut off at the output token limit and is incomplete."
            }
            Failure::TooLarge { .. } => "Your previous response was too long to be read.",
        }
    }

    /// What was wrong, then what to do about it.
    fn problem_and_fix(&self, out: &mut String, failure: Failure<'_>) {
        match failure {
            Failure::Invalid(violations) | Failure::Truncated(violations) => {
                self.violations(out, violations);
            }
            Failure::NoJson(reason) => {
                let _ = writeln!(out, "PROBLEM: {reason}");
            }
            Failure::TooLarge { bytes, limit } => {
                let _ = writeln!(
                    out,
                    "PROBLEM: your reply was {bytes} bytes, over the limit of {limit} bytes"
                );
            }
        }
        out.push('\n');
        match failure {
            Failure::Invalid(violations) => {
                out.push_str("Please provide a corrected response that conforms to the schema.\n");
                let _ = write!(
                    out,
                    "Focus specifically on fixing: {}.",
                    self.focus(violations)
                );
            }
            Failure::Truncated(violations) => {
                out.push_str(
                    "Please provide a complete response that conforms to the schema, and keep it \
                     shorter: brief string values, fewer array items.\n",
                );
                let _ = write!(
                    out,
                    "Focus specifically on fixing: {}.",
                    self.focus(violations)
                );
            }
            Failure::NoJson(_) => out.push_str(
                "Reply with a single JSON value that conforms to the schema, and nothing else: \
                 no prose, no code fences.",
            ),
            Failure::TooLarge { .. } => out.push_str(
                "Reply with a single, much shorter JSON value that conforms to the schema, and \
                 nothing else: brief string values, fewer array items, no prose.",
            ),
        }
    }

    fn violations(&self, out: &mut String, violations: &[Violation]) {
        out.push_str("VALIDATION ERRORS:\n");
        for v in violations.iter().take(self.max_violations) {
            let _ = writeln!(out, "- {v}");
        }
        if violations.len() > self.max_violations {
            let _ = writeln!(
                out,
                "- ... and {} more",
                violations.len() - self.max_violations
            );
        }
    }

    /// The short list of what to fix: one phrase per distinct problem, bounded like the violations.
    fn focus(&self, violations: &[Violation]) -> String {
        let phrases = focus_phrases(violations);
        if phrases.is_empty() {
            return "the response as a whole".to_owned();
        }
        let mut out = phrases
            .iter()
            .take(self.max_violations)
            .cloned()
            .collect::<Vec<_>>()
            .join("; ");
        if phrases.len() > self.max_violations {
            let _ = write!(out, "; and {} more", phrases.len() - self.max_violations);
        }
        out
    }
}

fn focus_phrases(violations: &[Violation]) -> Vec<String> {
    let mut phrases: Vec<String> = Vec::new();
    for v in violations {
        let at = if v.instance_pointer.is_empty() {
            "the top-level object".to_owned()
        } else {
            format!("`{}`", v.instance_pointer)
        };
        let phrase = match v.keyword.as_str() {
            "required" => match v.message.split('`').nth(1) {
                Some(name) => format!("add the missing property `{name}` to {at}"),
                None => format!("add the missing properties to {at}"),
            },
            "additionalProperties" => format!("remove {at}"),
            "type" => format!("the type of {at}"),
            "enum" | "const" | "oneOf" | "anyOf" => format!("use an allowed value at {at}"),
            _ => format!("the value at {at} ({})", v.keyword),
        };
        if !phrases.contains(&phrase) {
            phrases.push(phrase);
        }
    }
    phrases
}

/// `text`, cut past `max` characters with a marker saying how much was left out.
fn truncate(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_owned();
    }
    let kept: String = text.chars().take(max).collect();
    format!(
        "{kept}\n[... truncated: {} more characters ...]",
        count - max
    )
}

#[cfg(test)]
mod tests;
