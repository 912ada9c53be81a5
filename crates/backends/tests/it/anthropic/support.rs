//! Helpers of the Anthropic and Gemini tests: OpenAPI documents as JSON Schema (one component,
//! compiled with `claij_validation::Validator`, to check the request bodies the adapters build), error
//! kinds, hand-written event streams, and captured logs.

use std::sync::{Arc, Mutex, PoisonError};

use claij_backends::Error;
use claij_validation::Validator;
use serde_json::{Map, Value, json};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::util::SubscriberInitExt as _;

/// A JSON file of the repository's provider fixtures (`fixtures/providers`).
pub(crate) fn load(name: &str) -> Value {
    crate::fixtures::json(&format!("fixtures/providers/{name}"))
}

/// The example bodies of `fixtures/providers/examples` whose file names start with `prefix`, as
/// (file name, example), sorted.
pub(crate) fn examples(prefix: &str) -> Vec<(String, Value)> {
    crate::fixtures::files("fixtures/providers/examples", prefix)
        .into_iter()
        .map(|file| {
            let name = file.rsplit('/').next().unwrap_or(&file).to_owned();
            let example = crate::fixtures::json(&file);
            (name, example)
        })
        .collect()
}

/// How to read an OpenAPI document as JSON Schema.
#[derive(Default)]
pub(crate) struct Options<'a> {
    /// Give every object schema that lists `properties` and says nothing about others
    /// `additionalProperties: false`, except these components. For documents generated from
    /// protobuf (Gemini), whose servers reject unknown fields but whose schemas do not say so.
    pub close_objects_except: Option<&'a [&'a str]>,
    /// A change to the converted components (`$defs`) before compiling.
    pub patch: Option<fn(&mut Map<String, Value>)>,
}

/// A validator for `component` of the OpenAPI document `spec`: the components become `$defs` (refs
/// rewritten), OpenAPI-only keywords go (`discriminator`, `example`, `x-*`, `type: null`), 3.0's
/// `nullable` becomes a `"null"` type, and protobuf int64 strings also accept integers (as the proto3
/// JSON parser does).
pub(crate) fn validator(spec: &Value, component: &str, options: &Options<'_>) -> Validator {
    let schemas = spec["components"]["schemas"].as_object().unwrap();
    let mut defs: Map<String, Value> = schemas
        .iter()
        .map(|(name, schema)| {
            let close = options
                .close_objects_except
                .is_some_and(|except| !except.contains(&name.as_str()));
            (name.clone(), convert(schema, close))
        })
        .collect();
    assert!(defs.contains_key(component), "no component {component}");
    if let Some(patch) = options.patch {
        patch(&mut defs);
    }
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$ref": format!("#/$defs/{component}"),
        "$defs": defs,
    });
    Validator::new(&schema).unwrap()
}

/// Every violation of `body`, as `pointer: message` lines.
pub(crate) fn violations(validator: &Validator, body: &Value) -> Vec<String> {
    match validator.validate(body) {
        Ok(()) => Vec::new(),
        Err(violations) => violations.iter().map(ToString::to_string).collect(),
    }
}

/// One schema node, converted.
fn convert(schema: &Value, close: bool) -> Value {
    let Value::Object(map) = schema else {
        return schema.clone();
    };
    let mut out = Map::new();
    for (key, value) in map {
        match key.as_str() {
            "discriminator" | "example" | "nullable" => {}
            k if k.starts_with("x-") => {}
            "type" if value.is_null() => {}
            "$ref" => {
                let target = value
                    .as_str()
                    .unwrap()
                    .replace("#/components/schemas/", "#/$defs/");
                out.insert(key.clone(), Value::String(target));
            }
            "properties" | "patternProperties" => {
                let props = value
                    .as_object()
                    .unwrap()
                    .iter()
                    .map(|(name, s)| (name.clone(), convert(s, close)))
                    .collect();
                out.insert(key.clone(), Value::Object(props));
            }
            "items" | "additionalProperties" | "not" => {
                out.insert(key.clone(), convert(value, close));
            }
            "allOf" | "anyOf" | "oneOf" => {
                let branches = value
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|s| convert(s, close))
                    .collect();
                out.insert(key.clone(), Value::Array(branches));
            }
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    let int64_string = out.get("type") == Some(&json!("string"))
        && matches!(
            out.get("format").and_then(Value::as_str),
            Some("int64" | "uint64")
        );
    if int64_string {
        out.insert("type".into(), json!(["string", "integer"]));
    }
    if map.get("nullable") == Some(&Value::Bool(true))
        && let Some(Value::String(t)) = out.get("type").cloned()
    {
        out.insert("type".into(), json!([t, "null"]));
    }
    if close && out.contains_key("properties") && !out.contains_key("additionalProperties") {
        out.insert("additionalProperties".into(), Value::Bool(false));
    }
    Value::Object(out)
}

/// The variant of an error, by name.
pub(crate) fn kind(error: &Error) -> &'static str {
    match error {
        Error::Authentication { .. } => "Authentication",
        Error::RateLimited { .. } => "RateLimited",
        Error::ContextLengthExceeded { .. } => "ContextLengthExceeded",
        Error::ModelNotFound { .. } => "ModelNotFound",
        Error::Refused { .. } => "Refused",
        Error::Overloaded { .. } => "Overloaded",
        Error::Server { .. } => "Server",
        Error::BadRequest { .. } => "BadRequest",
        Error::Timeout { .. } => "Timeout",
        Error::Network { .. } => "Network",
        Error::Cancelled { .. } => "Cancelled",
        Error::MalformedResponse { .. } => "MalformedResponse",
        Error::QuotaExhausted { .. } => "QuotaExhausted",
        Error::BodyTooLarge { .. } => "BodyTooLarge",
        _ => "other",
    }
}

/// The `event:`/`data:` blocks of a hand-written event stream, in order.
pub(crate) fn sse_blocks(text: &str) -> Vec<(Option<String>, String)> {
    text.split("\n\n")
        .filter(|b| !b.trim().is_empty())
        .map(|block| {
            let mut event = None;
            let mut data = Vec::new();
            for line in block.lines() {
                if let Some(e) = line.strip_prefix("event: ") {
                    event = Some(e.to_owned());
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data.push(d);
                }
            }
            (event, data.join("\n"))
        })
        .collect()
}

/// Everything logged on this thread (at every level) while the guard lives.
#[derive(Clone, Default)]
pub(crate) struct Logs(Arc<Mutex<Vec<u8>>>);

impl Logs {
    /// Starts capturing; keep the guard for as long as logs should be captured (a current-thread
    /// runtime runs the HTTP client on this thread too).
    pub(crate) fn capture() -> (Self, tracing::subscriber::DefaultGuard) {
        let logs = Self::default();
        let guard = tracing_subscriber::fmt()
            .with_writer(logs.clone())
            .with_max_level(tracing_subscriber::filter::LevelFilter::TRACE)
            .finish()
            .set_default();
        (logs, guard)
    }

    /// What was logged so far.
    pub(crate) fn text(&self) -> String {
        let bytes = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

impl std::io::Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut bytes = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Logs {
    type Writer = Logs;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}
