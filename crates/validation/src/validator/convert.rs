//! Converting boon's borrowed error trees into owned, flat, deduplicable [`Violation`]s.

use boon::{ErrorKind, ValidationError};
use serde_json::Value;

use crate::violation::Violation;

/// At most this many allowed values are listed in a message.
const MAX_LISTED: usize = 40;
/// Values quoted in messages are cut past this many characters.
const MAX_VALUE_CHARS: usize = 80;

/// Appends the violations of `e` (an error tree rooted at an instance located at `prefix`) to `out`.
pub(super) fn collect(e: &ValidationError<'_, '_>, prefix: &str, out: &mut Vec<Violation>) {
    let at = || format!("{prefix}{}", e.instance_location);
    let location = schema_pointer(e.schema_url);
    let mut push = |instance_pointer: String, keyword: &str, message: String| {
        let schema_pointer = match keyword {
            "" | "false" => location.clone(),
            k => format!("{location}/{k}"),
        };
        out.push(Violation {
            instance_pointer,
            schema_pointer,
            keyword: keyword.to_owned(),
            message,
        });
    };
    match &e.kind {
        ErrorKind::Group
        | ErrorKind::Schema { .. }
        | ErrorKind::Reference { .. }
        | ErrorKind::AllOf
        | ErrorKind::ContentSchema => {
            for cause in &e.causes {
                collect(cause, prefix, out);
            }
        }
        ErrorKind::AnyOf | ErrorKind::OneOf(None) => {
            let keyword = if matches!(e.kind, ErrorKind::AnyOf) {
                "anyOf"
            } else {
                "oneOf"
            };
            push(
                at(),
                keyword,
                format!(
                    "matches none of the {} allowed alternatives",
                    e.causes.len()
                ),
            );
            // The alternative that came closest is the one worth fixing.
            let best = e.causes.iter().min_by_key(|c| leaf_count(c));
            if let Some(best) = best {
                collect(best, prefix, out);
            }
        }
        ErrorKind::OneOf(Some((i, j))) => push(
            at(),
            "oneOf",
            format!("matches alternatives {i} and {j}; it must match exactly one"),
        ),
        ErrorKind::Required { want } => {
            for name in want {
                push(
                    at(),
                    "required",
                    format!("missing required property `{name}`"),
                );
            }
        }
        ErrorKind::AdditionalProperties { got } => {
            for name in got {
                let mut pointer = at();
                pointer.push('/');
                pointer.push_str(&claij_schema::pointer::escape(name));
                push(
                    pointer,
                    "additionalProperties",
                    format!("property `{name}` is not allowed"),
                );
            }
        }
        ErrorKind::Dependency { prop, missing }
        | ErrorKind::DependentRequired { prop, missing } => {
            for name in missing {
                push(
                    at(),
                    "dependentRequired",
                    format!("missing property `{name}`, required when `{prop}` is present"),
                );
            }
        }
        kind => {
            let (keyword, message) = describe(kind);
            push(at(), keyword, message);
        }
    }
}

fn leaf_count(e: &ValidationError<'_, '_>) -> usize {
    if e.causes.is_empty() {
        1
    } else {
        e.causes.iter().map(leaf_count).sum()
    }
}

/// The keyword and an LLM-readable message for a leaf error.
fn describe(kind: &ErrorKind<'_, '_>) -> (&'static str, String) {
    match kind {
        ErrorKind::Type { got, want } => {
            let want: Vec<String> = want.iter().map(|t| t.to_string()).collect();
            ("type", format!("expected {}, got {got}", want.join(" or ")))
        }
        ErrorKind::Enum { want } => ("enum", format!("expected one of {}", list(want.iter()))),
        ErrorKind::Const { want } => ("const", format!("expected {}", short(want))),
        ErrorKind::Format { got, want, .. } => {
            ("format", format!("{} is not a valid {want}", short(got)))
        }
        ErrorKind::MinProperties { got, want } => (
            "minProperties",
            format!("expected at least {want} properties, got {got}"),
        ),
        ErrorKind::MaxProperties { got, want } => (
            "maxProperties",
            format!("expected at most {want} properties, got {got}"),
        ),
        ErrorKind::MinItems { got, want } => (
            "minItems",
            format!("expected at least {want} items, got {got}"),
        ),
        ErrorKind::MaxItems { got, want } => (
            "maxItems",
            format!("expected at most {want} items, got {got}"),
        ),
        ErrorKind::UniqueItems { got: [i, j] } => (
            "uniqueItems",
            format!("items {i} and {j} are equal; items must be unique"),
        ),
        ErrorKind::MinLength { got, want } => (
            "minLength",
            format!("expected at least {want} characters, got {got}"),
        ),
        ErrorKind::MaxLength { got, want } => (
            "maxLength",
            format!("expected at most {want} characters, got {got}"),
        ),
        ErrorKind::Pattern { got, want } => (
            "pattern",
            format!(
                "{} does not match the pattern {want}",
                short(&Value::String(got.to_string()))
            ),
        ),
        ErrorKind::Minimum { got, want } => ("minimum", format!("must be >= {want}, got {got}")),
        ErrorKind::Maximum { got, want } => ("maximum", format!("must be <= {want}, got {got}")),
        ErrorKind::ExclusiveMinimum { got, want } => {
            ("exclusiveMinimum", format!("must be > {want}, got {got}"))
        }
        ErrorKind::ExclusiveMaximum { got, want } => {
            ("exclusiveMaximum", format!("must be < {want}, got {got}"))
        }
        ErrorKind::MultipleOf { got, want } => (
            "multipleOf",
            format!("must be a multiple of {want}, got {got}"),
        ),
        ErrorKind::FalseSchema => ("false", "no value is allowed here".to_owned()),
        ErrorKind::Not => ("not", "matches a schema it must not match".to_owned()),
        ErrorKind::Contains => (
            "contains",
            "no item matches the `contains` schema".to_owned(),
        ),
        ErrorKind::MinContains { .. } => ("minContains", kind.to_string()),
        ErrorKind::MaxContains { .. } => ("maxContains", kind.to_string()),
        ErrorKind::AdditionalItems { got } => ("additionalItems", format!("{got} items too many")),
        ErrorKind::PropertyName { prop } => (
            "propertyNames",
            format!("property name `{prop}` is not allowed"),
        ),
        ErrorKind::ContentEncoding { .. } => ("contentEncoding", kind.to_string()),
        ErrorKind::ContentMediaType { .. } => ("contentMediaType", kind.to_string()),
        ErrorKind::RefCycle { .. } => ("$ref", kind.to_string()),
        other => ("", other.to_string()),
    }
}

/// The pointer part of boon's absolute schema location, with the validator's renamed keywords undone.
fn schema_pointer(url: &str) -> String {
    let fragment = url.split_once('#').map_or("", |(_, f)| f);
    let decoded = if fragment.contains('%') {
        percent_decode(fragment)
    } else {
        fragment.to_owned()
    };
    decoded
        .replace("/x-claij-oneOf/", "/oneOf/")
        .replace("/x-claij-anyOf/", "/anyOf/")
}

fn percent_decode(s: &str) -> String {
    let mut out = Vec::with_capacity(s.len());
    let bytes = s.as_bytes();
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (b, hex) {
            (b'%', Some(decoded)) => {
                out.push(decoded);
                i += 3;
            }
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Values listed for a message: `"a", "b" or "c"`, cut past [`MAX_LISTED`].
pub(super) fn list<'v>(values: impl Iterator<Item = &'v Value>) -> String {
    let all: Vec<String> = values.map(short).collect();
    let mut shown: Vec<String> = all.iter().take(MAX_LISTED).cloned().collect();
    if all.len() > MAX_LISTED {
        shown.push(format!("... ({} more)", all.len() - MAX_LISTED));
    }
    shown.join(", ")
}

/// A value as compact JSON, cut past [`MAX_VALUE_CHARS`] characters.
pub(super) fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= MAX_VALUE_CHARS {
        return text;
    }
    let cut: String = text.chars().take(MAX_VALUE_CHARS).collect();
    format!("{cut}...")
}

/// The JSON type of a value, as JSON Schema names it.
pub(super) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}
