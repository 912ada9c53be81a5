//! One cassette line: the scrubbed request, its hash, and the response or error it got; plus the
//! canonical JSON the hash is taken over and a serializable mirror of [`Error`].

use std::fmt::Write as _;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::redact::redact_value;
use crate::{BodyLimit, Capabilities, ChatRequest, ChatResponse, Error, ErrorContext};

/// A cassette line as read back.
#[derive(Debug, Deserialize)]
pub(super) struct Entry {
    /// The backend that answered.
    #[serde(default)]
    pub provider: String,
    /// What that backend offered for the request's model.
    #[serde(default)]
    pub capabilities: Capabilities,
    /// The scrubbed request.
    pub request: Value,
    /// What it got.
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// What a recorded request got.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Outcome {
    /// An answer.
    Response(ChatResponse),
    /// A failure, replayed as the same [`Error`].
    Error(RecordedError),
}

/// The cassette line for one call, scrubbed, with its trailing newline.
pub(super) fn line(
    provider: &str,
    capabilities: Capabilities,
    request: &ChatRequest,
    outcome: Result<&ChatResponse, &Error>,
) -> Result<String, serde_json::Error> {
    let request = scrubbed_request(request)?;
    let hash = hash(&request);
    let (key, mut outcome) = match outcome {
        Ok(response) => ("response", serde_json::to_value(response)?),
        Err(error) => ("error", serde_json::to_value(RecordedError::from(error))?),
    };
    redact_value(&mut outcome);
    let mut entry = Map::new();
    entry.insert("hash".into(), Value::String(hash));
    entry.insert("provider".into(), Value::String(provider.to_owned()));
    entry.insert("capabilities".into(), serde_json::to_value(capabilities)?);
    entry.insert("request".into(), request);
    entry.insert(key.into(), outcome);
    let mut line = serde_json::to_string(&Value::Object(entry))?;
    line.push('\n');
    Ok(line)
}

/// The request as it is written to (and looked up in) a cassette: its JSON with secrets scrubbed.
pub(super) fn scrubbed_request(request: &ChatRequest) -> Result<Value, serde_json::Error> {
    let mut value = serde_json::to_value(request)?;
    redact_value(&mut value);
    Ok(value)
}

/// The hash of a scrubbed request: 128-bit FNV-1a of its canonical JSON, as 32 hex digits.
pub(super) fn hash(request: &Value) -> String {
    hash_canonical(&canonical(request))
}

/// 128-bit FNV-1a of `text`, as 32 hex digits.
pub(super) fn hash_canonical(text: &str) -> String {
    const OFFSET: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    const PRIME: u128 = 0x0000_0000_0100_0000_0000_0000_0000_013b;
    let hash = text
        .bytes()
        .fold(OFFSET, |h, b| (h ^ u128::from(b)).wrapping_mul(PRIME));
    format!("{hash:032x}")
}

/// Canonical JSON: object keys sorted, no whitespace, strings and numbers as serde_json writes them.
pub(super) fn canonical(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(key, out);
                out.push(':');
                if let Some(v) = map.get(key) {
                    write_canonical(v, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::String(s) => write_string(s, out),
        Value::Number(n) => {
            let _ = write!(out, "{n}");
        }
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Null => out.push_str("null"),
    }
}

fn write_string(s: &str, out: &mut String) {
    // Serializing a string cannot fail.
    out.push_str(&serde_json::to_string(s).unwrap_or_default());
}

/// [`Error`] in a form that serializes: the same variants and fields, durations as `{secs, nanos}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(super) enum RecordedError {
    Authentication {
        context: ErrorContext,
        message: String,
    },
    RateLimited {
        context: ErrorContext,
        retry_after: Option<Duration>,
        message: String,
    },
    ContextLengthExceeded {
        context: ErrorContext,
        message: String,
    },
    ModelNotFound {
        context: ErrorContext,
        model: String,
    },
    Refused {
        context: ErrorContext,
        message: String,
    },
    Overloaded {
        context: ErrorContext,
        retry_after: Option<Duration>,
        message: String,
    },
    Server {
        context: ErrorContext,
        message: String,
    },
    BadRequest {
        context: ErrorContext,
        message: String,
    },
    Timeout {
        context: ErrorContext,
        after: Duration,
    },
    Network {
        context: ErrorContext,
        message: String,
    },
    Cancelled {
        context: ErrorContext,
    },
    MalformedResponse {
        context: ErrorContext,
        reason: String,
        excerpt: String,
    },
    Other {
        context: ErrorContext,
        message: String,
    },
    QuotaExhausted {
        context: ErrorContext,
        message: String,
    },
    BodyTooLarge {
        context: ErrorContext,
        which: BodyLimit,
        limit: u64,
    },
    ToolArguments {
        context: ErrorContext,
        id: String,
        name: String,
        reason: Box<str>,
    },
}

impl From<&Error> for RecordedError {
    fn from(error: &Error) -> Self {
        // Exhaustive on purpose: a new `Error` variant must be mirrored here.
        match error.clone() {
            Error::Authentication { context, message } => Self::Authentication { context, message },
            Error::RateLimited {
                context,
                retry_after,
                message,
            } => Self::RateLimited {
                context,
                retry_after,
                message,
            },
            Error::ContextLengthExceeded { context, message } => {
                Self::ContextLengthExceeded { context, message }
            }
            Error::ModelNotFound { context, model } => Self::ModelNotFound { context, model },
            Error::Refused { context, message } => Self::Refused { context, message },
            Error::Overloaded {
                context,
                retry_after,
                message,
            } => Self::Overloaded {
                context,
                retry_after,
                message,
            },
            Error::Server { context, message } => Self::Server { context, message },
            Error::BadRequest { context, message } => Self::BadRequest { context, message },
            Error::Timeout { context, after } => Self::Timeout { context, after },
            Error::Network { context, message } => Self::Network { context, message },
            Error::Cancelled { context } => Self::Cancelled { context },
            Error::MalformedResponse {
                context,
                reason,
                excerpt,
            } => Self::MalformedResponse {
                context,
                reason,
                excerpt,
            },
            Error::Other { context, message } => Self::Other { context, message },
            Error::QuotaExhausted { context, message } => Self::QuotaExhausted { context, message },
            Error::BodyTooLarge {
                context,
                which,
                limit,
            } => Self::BodyTooLarge {
                context,
                which,
                limit,
            },
            Error::ToolArguments {
                context,
                id,
                name,
                reason,
            } => Self::ToolArguments {
                context,
                id,
                name,
                reason,
            },
        }
    }
}

impl From<RecordedError> for Error {
    fn from(error: RecordedError) -> Self {
        use RecordedError as R;
        match error {
            R::Authentication { context, message } => Error::Authentication { context, message },
            R::RateLimited {
                context,
                retry_after,
                message,
            } => Error::RateLimited {
                context,
                retry_after,
                message,
            },
            R::ContextLengthExceeded { context, message } => {
                Error::ContextLengthExceeded { context, message }
            }
            R::ModelNotFound { context, model } => Error::ModelNotFound { context, model },
            R::Refused { context, message } => Error::Refused { context, message },
            R::Overloaded {
                context,
                retry_after,
                message,
            } => Error::Overloaded {
                context,
                retry_after,
                message,
            },
            R::Server { context, message } => Error::Server { context, message },
            R::BadRequest { context, message } => Error::BadRequest { context, message },
            R::Timeout { context, after } => Error::Timeout { context, after },
            R::Network { context, message } => Error::Network { context, message },
            R::Cancelled { context } => Error::Cancelled { context },
            R::MalformedResponse {
                context,
                reason,
                excerpt,
            } => Error::MalformedResponse {
                context,
                reason,
                excerpt,
            },
            R::Other { context, message } => Error::Other { context, message },
            R::QuotaExhausted { context, message } => Error::QuotaExhausted { context, message },
            R::BodyTooLarge {
                context,
                which,
                limit,
            } => Error::BodyTooLarge {
                context,
                which,
                limit,
            },
            R::ToolArguments {
                context,
                id,
                name,
                reason,
            } => Error::ToolArguments {
                context,
                id,
                name,
                reason,
            },
        }
    }
}
