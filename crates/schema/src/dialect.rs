//! Provider dialects: compile a full JSON Schema into the subset one provider's structured-output mode accepts.
//!
//! Providers constrain decoding with a *subset* of JSON Schema, and each subset is different:
//!
//! | dialect | where it goes | what it needs |
//! |---|---|---|
//! | [`Dialect::OpenAiStrict`] | OpenAI `response_format.json_schema` with `strict: true` (and OpenAI-compatible servers) | root is an object (any other root is sent in an [envelope](ENVELOPE_PROPERTY)); every object has `additionalProperties: false` and lists all its properties in `required` (optional ones become nullable); `$ref` has no sibling keywords; no `allOf`, `oneOf`, string lengths, `default` |
//! | [`Dialect::Gemini`] | Gemini `generationConfig.responseSchema` (OpenAPI 3.0 subset) | no `$ref`/`$defs` (inlined), no `const` (one-value `enum`), no `oneOf`, `nullable: true` instead of `"null"` types, string-only `enum`, `propertyOrdering` |
//! | [`Dialect::Anthropic`] | Anthropic `output_config.format` json_schema (and strict tools) | root is an object, as a tool's `input_schema` must be (any other root is sent in an [envelope](ENVELOPE_PROPERTY)); every object has `additionalProperties: false`; no recursion, numeric bounds, string lengths, `maxItems`, `minItems` above 1, `oneOf`, complex regexes |
//! | [`Dialect::Llguidance`] | llguidance 1.9.1, the grammar engine of the embedded local model (claij-backends `local` feature) | `$ref`s inlined, recursive ones as plain `#/$defs/<name>` pointers; `anyOf` for `oneOf`; no `not`, `if`/`then`/`else`, `uniqueItems`, `contains`, dependencies, `propertyNames`, `unevaluated*`, formats it has no grammar for, patterns with lookaround, backreferences or `\b`; `minProperties`/`maxProperties` only when every property is required; `x-guidance` options at the root |
//!
//! Hosted providers cap what they generate; llguidance runs in-process and follows a string without
//! `maxLength` for as long as the model keeps writing. So [`Dialect::Llguidance`] also bounds every string,
//! array and object that sets no bound ([`LlguidanceBounds`]; an object that declares properties is closed
//! instead unless it admits other keys explicitly, and one with optional properties always is, since
//! llguidance counts properties only when all are required), each reported as
//! [`LossKind::Tightened`]. It rejects bounds no value meets ([`DialectError::Unsatisfiable`]): for a grammar
//! they are schema errors that no retry can fix. [`compile_llguidance`] takes other bounds.
//!
//! [`compile`] returns the provider schema together with a [`Loss`] for every keyword it dropped, relaxed or
//! rewrote, each pointing into the *original* schema. Compilation never fails because a keyword is
//! unsupported; it fails only when the schema cannot be expressed at all, or (Llguidance) cannot be
//! satisfied ([`DialectError`]).
//!
//! **The rule**: the provider schema is only a decoding hint. The local validator always checks a response
//! against the *full* schema, so whatever a dialect drops is still enforced, at the cost of a retry. Two
//! consequences for whoever consumes [`Compiled::losses`]:
//!
//! - [`LossKind::Nullable`] (OpenAI strict): an optional property was made required and nullable, so the
//!   provider sends `"key": null` where the original schema expects the key to be absent. Remove such nulls
//!   before validating.
//! - [`LossKind::Tightened`]: the provider schema is stricter than the original; such responses still pass
//!   local validation.
//! - Objects that declared no `additionalProperties` get `additionalProperties: false` (OpenAI strict,
//!   Anthropic). That too is stricter than the original, but it is what schema authors mean, so it is not
//!   reported, except for objects without `properties`, which lose every key. Apart from extra keys, an instance valid against the
//!   original is valid against a compiled schema with no losses.
//!
//! Output is deterministic: keys keep the order of the input (Gemini: a fixed keyword order), losses come in
//! walk order with duplicates removed (a definition inlined twice reports its losses once).
//!
//! Provider limits that are not keywords (OpenAI: 5000 properties, 10 levels of nesting, 1000 enum values;
//! Anthropic: schema complexity, optional-parameter counts) are not checked here.
//!
//! ```
//! use claij_schema::dialect::{Dialect, LossKind};
//! use serde_json::json;
//!
//! let schema = json!({
//!     "type": "object",
//!     "properties": {"code": {"type": "string", "minLength": 2}},
//! });
//! let compiled = Dialect::OpenAiStrict.compile(&schema)?;
//! assert_eq!(compiled.schema["additionalProperties"], json!(false));
//! assert_eq!(compiled.schema["properties"]["code"]["type"], json!(["string", "null"]));
//! assert_eq!(compiled.losses[0].keyword, "minLength");
//! assert_eq!(compiled.losses[1].change, LossKind::Nullable);
//! # Ok::<(), claij_schema::dialect::DialectError>(())
//! ```

mod anthropic;
mod gemini;
mod llguidance;
mod openai;
mod patterns;
#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fmt;

use serde::Serialize;
use serde_json::{Map, Value};

pub use llguidance::{DEFAULT_MAX_STRING_CHARS, LlguidanceBounds, compile_llguidance};
use patterns::regex_features;

/// A provider's structured-output schema dialect.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Dialect {
    /// OpenAI structured outputs with `strict: true`; also OpenRouter and OpenAI-compatible local servers.
    OpenAiStrict,
    /// Gemini `responseSchema`, an OpenAPI 3.0 schema subset.
    Gemini,
    /// Anthropic structured outputs (`output_config.format`, strict tool `input_schema`).
    Anthropic,
    /// llguidance 1.9.1, which compiles the schema to a token grammar for the embedded local model, with
    /// runaway bounds added ([`LlguidanceBounds::default`]).
    Llguidance,
}

/// A schema compiled for one dialect, with what the compilation gave up.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Compiled {
    /// The schema to send to the provider.
    pub schema: Value,
    /// Every keyword that was dropped, relaxed or rewritten, in walk order.
    pub losses: Vec<Loss>,
}

/// One keyword the provider schema does not carry as written.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Loss {
    /// JSON pointer into the *original* schema, to the subschema that held the keyword (`""` is the root).
    pub pointer: String,
    /// The keyword, e.g. `pattern`, `oneOf`, `$ref`.
    pub keyword: String,
    /// The keyword's original value (for [`LossKind::Nullable`]: the property name).
    pub value: Value,
    /// What happened to it.
    pub change: LossKind,
}

/// What a dialect did to a keyword.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LossKind {
    /// Removed: the provider does not enforce it (the local validator still does).
    Dropped,
    /// Replaced by a weaker form the provider supports (`oneOf` → `anyOf`, `minItems: 3` → `1`).
    Relaxed,
    /// Replaced by an equivalent form (`const` → one-value `enum`, `$ref` inlined, `allOf` merged).
    Rewritten,
    /// An optional property made required and nullable: the provider sends `null` where the original omits
    /// the key.
    Nullable,
    /// Made stricter: the provider schema rejects some instances the original accepts, e.g. an optional
    /// property that already allowed `null` made required (the provider always sends the key).
    Tightened,
    /// The root (keyword: what it is, e.g. `anyOf`) sent inside an object envelope whose one property
    /// (the value) holds it, for a dialect that takes only an object root: the reply is unwrapped.
    Wrapped,
}

/// Why a schema cannot be compiled for a dialect.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DialectError {
    /// A `$ref` that is not a local JSON pointer into the schema, or points at nothing.
    #[error("unresolvable $ref {reference:?} at {pointer:?}")]
    UnresolvableRef {
        /// Where the `$ref` is.
        pointer: String,
        /// The reference as written.
        reference: String,
    },
    /// A `$ref` cycle, for a dialect that cannot express recursion.
    #[error(
        "recursive $ref {reference:?} at {pointer:?}: {dialect} does not support recursive schemas"
    )]
    RecursiveRef {
        /// Where the `$ref` that closes the cycle is.
        pointer: String,
        /// The reference as written.
        reference: String,
        /// The dialect that was asked for.
        dialect: Dialect,
    },
    /// The root schema is not an object schema, for a dialect that requires one.
    #[error("root schema must be an object for {dialect}, found {found}")]
    RootNotObject {
        /// The dialect that was asked for.
        dialect: Dialect,
        /// What the root is instead, e.g. `anyOf`, `type "array"`.
        found: String,
    },
    /// A subschema that is neither a JSON object nor a boolean.
    #[error("schema at {pointer:?} is {found}, not an object or a boolean")]
    NotASchema {
        /// Where it is.
        pointer: String,
        /// The JSON type found, e.g. `a number`.
        found: &'static str,
    },
    /// Nesting (or, for Gemini, nesting after inlining `$ref`) beyond [`MAX_DEPTH`].
    #[error("schema nested deeper than {limit} levels at {pointer:?}")]
    TooDeep {
        /// Where the limit was hit.
        pointer: String,
        /// The limit.
        limit: usize,
    },
    /// Bounds no value can meet (`minLength` above `maxLength`, `minimum` above `maximum`, ...), for a dialect
    /// that turns the schema into a grammar: the schema is wrong, and no retry can fix it.
    #[error("unsatisfiable schema at {pointer:?}: {reason}")]
    Unsatisfiable {
        /// The subschema holding the bounds.
        pointer: String,
        /// Which bounds conflict, e.g. `minLength 5 is greater than maxLength 2`.
        reason: String,
    },
    /// Inlining `$ref`s (Gemini, Llguidance) would produce more than [`MAX_INLINED_NODES`] nodes.
    #[error("inlining $ref {reference:?} at {pointer:?} grows the schema past {limit} nodes")]
    TooLarge {
        /// Where the limit was hit.
        pointer: String,
        /// The reference being inlined.
        reference: String,
        /// The limit.
        limit: usize,
    },
}

/// Deepest subschema nesting [`compile`] accepts (it recurses, and schemas are untrusted input).
pub const MAX_DEPTH: usize = 200;

/// Most JSON nodes that inlining `$ref`s may add to a Gemini or Llguidance schema.
pub const MAX_INLINED_NODES: usize = 500_000;

impl Dialect {
    /// Every dialect, in declaration order.
    pub const ALL: [Dialect; 4] = [
        Dialect::OpenAiStrict,
        Dialect::Gemini,
        Dialect::Anthropic,
        Dialect::Llguidance,
    ];

    /// Stable lowercase name: `openai-strict`, `gemini`, `anthropic`, `llguidance`.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::OpenAiStrict => "openai-strict",
            Dialect::Gemini => "gemini",
            Dialect::Anthropic => "anthropic",
            Dialect::Llguidance => "llguidance",
        }
    }

    /// Whether the provider takes only an object schema at the root: OpenAI strict (`response_format` and
    /// strict function parameters) and Anthropic (a tool's `input_schema` is `"type": "object"`).
    /// [`Dialect::compile`] wraps any other root in an [envelope](ENVELOPE_PROPERTY) for these.
    pub fn needs_object_root(self) -> bool {
        matches!(self, Dialect::OpenAiStrict | Dialect::Anthropic)
    }

    /// Compiles `schema` for this dialect; see the [module docs](self).
    ///
    /// For a dialect that [needs an object root](Dialect::needs_object_root), a root that is not an
    /// object (a `oneOf` of an FSM state's transitions, an array, a string) is compiled inside an
    /// object envelope whose one required property is [`ENVELOPE_PROPERTY`], reported as a
    /// [`LossKind::Wrapped`] loss at the root ([`Compiled::envelope`]); the reply's value is that
    /// property's.
    pub fn compile(self, schema: &Value) -> Result<Compiled, DialectError> {
        if self.needs_object_root() {
            self.compile_object_root(schema)
        } else {
            self.compile_plain(schema)
        }
    }

    /// [`Dialect::compile`], with a root that is not an object wrapped in the envelope whatever the
    /// dialect: for a place that takes only objects in every dialect, such as a tool's parameters
    /// (Gemini's `functionDeclarations[].parameters` name the function's parameters).
    pub fn compile_object_root(self, schema: &Value) -> Result<Compiled, DialectError> {
        let plain = self.compile_plain(schema);
        if !matches!(schema, Value::Object(_) | Value::Bool(_)) {
            return plain;
        }
        let found = match &plain {
            Err(DialectError::RootNotObject { found, .. }) => found.clone(),
            Ok(compiled) => match root_not_object(&compiled.schema) {
                Some(found) => found,
                None => return plain,
            },
            Err(_) => return plain,
        };
        // Name the root as the schema's author wrote it (`oneOf`, not the compiled `anyOf`).
        let found = match schema {
            Value::Object(map) => ["oneOf", "anyOf"]
                .into_iter()
                .find(|k| map.contains_key(*k))
                .map_or(found, ToOwned::to_owned),
            _ => found,
        };
        let mut compiled = self.compile_plain(&envelope(schema))?;
        // What the dialect does to the envelope's own keywords (Gemini drops its
        // `additionalProperties`) is no loss of the original.
        compiled.losses.retain(|l| {
            !(l.pointer.is_empty()
                && ["type", "properties", "required", "additionalProperties"]
                    .contains(&l.keyword.as_str()))
        });
        compiled.losses.insert(0, wrapped_loss(found));
        for loss in compiled.losses.iter_mut().skip(1) {
            if let Some(rest) = loss.pointer.strip_prefix(ENVELOPE_POINTER) {
                loss.pointer = rest.to_owned();
            }
        }
        Ok(compiled)
    }

    fn compile_plain(self, schema: &Value) -> Result<Compiled, DialectError> {
        let mut cx = Cx::new(schema, self);
        let schema = match self {
            Dialect::OpenAiStrict => openai::compile(&mut cx)?,
            Dialect::Gemini => gemini::compile(&mut cx)?,
            Dialect::Anthropic => anthropic::compile(&mut cx)?,
            Dialect::Llguidance => llguidance::compile(&mut cx, LlguidanceBounds::default())?,
        };
        Ok(Compiled {
            schema,
            losses: cx.losses,
        })
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Compiles `schema` for `dialect`; the same as [`Dialect::compile`].
pub fn compile(schema: &Value, dialect: Dialect) -> Result<Compiled, DialectError> {
    dialect.compile(schema)
}

impl Compiled {
    /// True when the provider schema carries every keyword of the original as written.
    pub fn is_lossless(&self) -> bool {
        self.losses.is_empty()
    }

    /// The envelope's property when the root was wrapped ([`LossKind::Wrapped`]): the provider's reply
    /// is `{"<property>": <value>}`, and the value is what the original schema describes.
    pub fn envelope(&self) -> Option<&'static str> {
        self.losses
            .iter()
            .any(|l| l.change == LossKind::Wrapped && l.pointer.is_empty())
            .then_some(ENVELOPE_PROPERTY)
    }
}

/// The one property of the object envelope a root that is not an object is sent in, for a dialect that
/// [needs an object root](Dialect::needs_object_root).
pub const ENVELOPE_PROPERTY: &str = "value";

/// Where the original root is inside the envelope.
const ENVELOPE_POINTER: &str = "/properties/value";

/// `schema` inside an object envelope: `{"type": "object", "properties": {"value": schema}, "required":
/// ["value"], "additionalProperties": false}`. Definitions (`$defs`, `definitions`) and `$schema` move to
/// the envelope's root, so `#/$defs/...` references still resolve; every other local reference (`#`,
/// `#/properties/...`) is moved under [`ENVELOPE_PROPERTY`].
pub fn envelope(schema: &Value) -> Value {
    let mut inner = schema.clone();
    let mut root = Map::new();
    root.insert("type".to_owned(), "object".into());
    if let Value::Object(map) = &mut inner {
        for key in ["$schema", "$defs", "definitions"] {
            if let Some(value) = map.shift_remove(key) {
                root.insert(key.to_owned(), value);
            }
        }
    }
    root.insert(
        "properties".to_owned(),
        Value::Object(Map::from_iter([(ENVELOPE_PROPERTY.to_owned(), inner)])),
    );
    root.insert("required".to_owned(), Value::from(vec![ENVELOPE_PROPERTY]));
    root.insert("additionalProperties".to_owned(), Value::Bool(false));
    let mut out = Value::Object(root);
    // An explicit stack: no recursion on untrusted input.
    let mut stack = vec![&mut out];
    while let Some(value) = stack.pop() {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(reference)) = map.get_mut("$ref")
                    && let Some(fragment) = reference.strip_prefix('#')
                    && !fragment.starts_with("/$defs")
                    && !fragment.starts_with("/definitions")
                {
                    *reference = format!("#{ENVELOPE_POINTER}{fragment}");
                }
                stack.extend(map.values_mut());
            }
            Value::Array(items) => stack.extend(items.iter_mut()),
            _ => {}
        }
    }
    out
}

/// The loss that says the root (`found`: `oneOf`, `type "array"`) went in the envelope.
fn wrapped_loss(found: String) -> Loss {
    Loss {
        pointer: String::new(),
        keyword: found,
        value: Value::from(ENVELOPE_PROPERTY),
        change: LossKind::Wrapped,
    }
}

/// A schema sent as written (full JSON Schema, no dialect) where only an object root is taken (a
/// tool's parameters): as it is when its root is an object, else in the [envelope] with a
/// [`LossKind::Wrapped`] loss.
pub fn object_root(schema: &Value) -> Compiled {
    let found = match schema {
        Value::Object(map) => ["oneOf", "anyOf"]
            .into_iter()
            .find(|k| map.contains_key(*k))
            .map(ToOwned::to_owned)
            .or_else(|| root_not_object(schema)),
        Value::Bool(_) => Some("a boolean".to_owned()),
        _ => None,
    };
    match found {
        Some(found) => Compiled {
            schema: envelope(schema),
            losses: vec![wrapped_loss(found)],
        },
        None => Compiled {
            schema: schema.clone(),
            losses: Vec::new(),
        },
    }
}

/// What a compiled root is when it is not a plain object schema (`anyOf`, `type "array"`), for a
/// dialect that needs one.
fn root_not_object(compiled: &Value) -> Option<String> {
    let Value::Object(map) = compiled else {
        return Some(json_type(compiled).to_owned());
    };
    for key in ["anyOf", "oneOf", "enum", "const"] {
        if map.contains_key(key) {
            return Some(key.to_owned());
        }
    }
    match map.get("type") {
        Some(Value::String(t)) if t == "object" => None,
        Some(t) => Some(format!("type {t}")),
        None => Some("a schema without type".to_owned()),
    }
}

impl fmt::Display for Loss {
    /// One line: `#/$defs/Address/properties/zip: pattern dropped "^[0-9]{5}$"`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "#{}: {} {} {}",
            self.pointer, self.keyword, self.change, self.value
        )
    }
}

impl fmt::Display for LossKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LossKind::Dropped => "dropped",
            LossKind::Relaxed => "relaxed",
            LossKind::Rewritten => "rewritten",
            LossKind::Nullable => "made required and nullable",
            LossKind::Tightened => "tightened",
            LossKind::Wrapped => "wrapped in an object envelope as property",
        })
    }
}

// ---------------------------------------------------------------------------------------------------------
// Shared machinery for the dialect walkers.

type Result<T, E = DialectError> = std::result::Result<T, E>;

/// Compilation state: the original root, the losses so far, and the guards against hostile input.
struct Cx<'a> {
    root: &'a Value,
    dialect: Dialect,
    losses: Vec<Loss>,
    seen: HashSet<(String, String, LossKind)>,
    depth: usize,
    /// Targets of the `$ref`s being expanded right now (JSON pointers), to detect cycles.
    ref_stack: Vec<String>,
    /// Compiled definitions by target pointer, with their node counts (Gemini inlining).
    cache: HashMap<String, (Value, usize)>,
    inlined_nodes: usize,
}

impl<'a> Cx<'a> {
    fn new(root: &'a Value, dialect: Dialect) -> Self {
        Cx {
            root,
            dialect,
            losses: Vec::new(),
            seen: HashSet::new(),
            depth: 0,
            ref_stack: Vec::new(),
            cache: HashMap::new(),
            inlined_nodes: 0,
        }
    }

    /// Records a loss once per (pointer, keyword, change).
    fn loss(&mut self, pointer: &str, keyword: &str, value: &Value, change: LossKind) {
        if self
            .seen
            .insert((pointer.to_owned(), keyword.to_owned(), change))
        {
            self.losses.push(Loss {
                pointer: pointer.to_owned(),
                keyword: keyword.to_owned(),
                value: value.clone(),
                change,
            });
        }
    }

    fn enter(&mut self, pointer: &str) -> Result<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(DialectError::TooDeep {
                pointer: pointer.to_owned(),
                limit: MAX_DEPTH,
            });
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// Resolves a local `$ref` (`#`, `#/$defs/X`, any `#/json/pointer`) to its target and the target's pointer.
    fn resolve(&self, reference: &str, at: &str) -> Result<(&'a Value, String)> {
        let unresolvable = || DialectError::UnresolvableRef {
            pointer: at.to_owned(),
            reference: reference.to_owned(),
        };
        let fragment = reference.strip_prefix('#').ok_or_else(unresolvable)?;
        let pointer = percent_decode(fragment).ok_or_else(unresolvable)?;
        if !pointer.is_empty() && !pointer.starts_with('/') {
            return Err(unresolvable());
        }
        match self.root.pointer(&pointer) {
            Some(target @ (Value::Object(_) | Value::Bool(_))) => Ok((target, pointer)),
            _ => Err(unresolvable()),
        }
    }

    fn recursive(&self, reference: &str, at: &str) -> DialectError {
        DialectError::RecursiveRef {
            pointer: at.to_owned(),
            reference: reference.to_owned(),
            dialect: self.dialect,
        }
    }

    /// Merges `allOf` branches into their parent (following `$ref`s in them), so walkers never see `allOf`.
    ///
    /// Conflicting keywords keep the first value and report the others as dropped; losses for keywords that
    /// came from a branch point at the schema holding the `allOf`.
    fn flatten<'m>(
        &mut self,
        map: &'m Map<String, Value>,
        pointer: &str,
    ) -> Result<Cow<'m, Map<String, Value>>> {
        let Some(all_of) = map.get("allOf") else {
            return Ok(Cow::Borrowed(map));
        };
        let mut merged = map.clone();
        merged.shift_remove("allOf");
        let Value::Array(branches) = all_of else {
            self.loss(pointer, "allOf", all_of, LossKind::Dropped);
            return Ok(Cow::Owned(merged));
        };
        self.loss(pointer, "allOf", all_of, LossKind::Rewritten);
        for (i, branch) in branches.iter().enumerate() {
            let branch_pointer = child(&child(pointer, "allOf"), &i.to_string());
            let branch = self.raw(branch, &branch_pointer)?;
            self.merge_into(&mut merged, branch, &branch_pointer);
        }
        Ok(Cow::Owned(merged))
    }

    /// A subschema as a map with its `$ref` chain followed and its `allOf` flattened (siblings win over the
    /// referenced schema).
    fn raw(&mut self, schema: &Value, pointer: &str) -> Result<Map<String, Value>> {
        self.enter(pointer)?;
        let result = self.raw_inner(schema, pointer);
        self.leave();
        result
    }

    fn raw_inner(&mut self, schema: &Value, pointer: &str) -> Result<Map<String, Value>> {
        let map = match schema {
            Value::Object(map) => map,
            Value::Bool(true) => return Ok(Map::new()),
            Value::Bool(false) => {
                return Ok(Map::from_iter([(
                    "not".to_owned(),
                    Value::Object(Map::new()),
                )]));
            }
            other => {
                return Err(DialectError::NotASchema {
                    pointer: pointer.to_owned(),
                    found: json_type(other),
                });
            }
        };
        let Some(Value::String(reference)) = map.get("$ref") else {
            return Ok(self.flatten(map, pointer)?.into_owned());
        };
        let (target, target_pointer) = self.resolve(reference, pointer)?;
        if self.ref_stack.contains(&target_pointer) {
            return Err(self.recursive(reference, pointer));
        }
        self.ref_stack.push(target_pointer.clone());
        let resolved = self.raw(target, &target_pointer);
        self.ref_stack.pop();
        let mut resolved = resolved?;
        for (key, value) in map {
            if key != "$ref" {
                resolved.insert(key.clone(), value.clone());
            }
        }
        Ok(self.flatten(&resolved, pointer)?.into_owned())
    }

    fn merge_into(
        &mut self,
        merged: &mut Map<String, Value>,
        branch: Map<String, Value>,
        pointer: &str,
    ) {
        for (key, value) in branch {
            match (key.as_str(), merged.get_mut(&key), value) {
                (_, None, value) => {
                    merged.insert(key, value);
                }
                ("properties", Some(Value::Object(have)), Value::Object(props)) => {
                    for (name, prop) in props {
                        match have.get(&name) {
                            None => {
                                have.insert(name, prop);
                            }
                            Some(existing) if *existing == prop => {}
                            Some(_) => {
                                let at = child(&child(pointer, "properties"), &name);
                                self.loss(&at, &name, &prop, LossKind::Dropped);
                            }
                        }
                    }
                }
                ("required", Some(Value::Array(have)), Value::Array(names)) => {
                    for name in names {
                        if !have.contains(&name) {
                            have.push(name);
                        }
                    }
                }
                (_, Some(existing), value) => {
                    if *existing != value {
                        self.loss(pointer, &key, &value, LossKind::Dropped);
                    }
                }
            }
        }
    }

    /// Counts an inlined definition against [`MAX_INLINED_NODES`].
    fn charge(&mut self, nodes: usize, reference: &str, pointer: &str) -> Result<()> {
        self.inlined_nodes = self.inlined_nodes.saturating_add(nodes);
        if self.inlined_nodes > MAX_INLINED_NODES {
            return Err(DialectError::TooLarge {
                pointer: pointer.to_owned(),
                reference: reference.to_owned(),
                limit: MAX_INLINED_NODES,
            });
        }
        Ok(())
    }
}

/// `pointer` extended by one reference token, escaped per RFC 6901.
fn child(pointer: &str, token: &str) -> String {
    let mut out = String::with_capacity(pointer.len() + token.len() + 1);
    out.push_str(pointer);
    out.push('/');
    for c in token.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            c => out.push(c),
        }
    }
    out
}

pub(crate) use crate::pointer::percent_decode;

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The `type` keyword as a list of type names (empty when absent or malformed).
fn types_of(map: &Map<String, Value>) -> Vec<&str> {
    match map.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// Whether a schema describes objects: `type` says so, or it has `properties` and no `type`.
fn is_object_schema(map: &Map<String, Value>) -> bool {
    let types = types_of(map);
    types.contains(&"object")
        || (types.is_empty() && !map.contains_key("$ref") && map.contains_key("properties"))
}

fn is_primitive(value: &Value) -> bool {
    !matches!(value, Value::Array(_) | Value::Object(_))
}

/// Whether a (compiled) schema certainly accepts `null`; false when unsure.
fn accepts_null(schema: &Value) -> bool {
    let map = match schema {
        Value::Bool(b) => return *b,
        Value::Object(map) => map,
        _ => return false,
    };
    if let Some(Value::Array(values)) = map.get("enum")
        && !values.contains(&Value::Null)
    {
        return false;
    }
    if let Some(value) = map.get("const") {
        return value.is_null();
    }
    if map.contains_key("type") {
        return types_of(map).contains(&"null");
    }
    if map.get("nullable") == Some(&Value::Bool(true)) {
        return true;
    }
    if map.contains_key("$ref") {
        return false;
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = map.get(key) {
            return branches.iter().any(accepts_null);
        }
    }
    !map.keys().any(|k| k == "not" || k == "if" || k == "allOf")
}

const ANNOTATIONS: [&str; 2] = ["description", "title"];

/// Makes a compiled strict-dialect schema also accept `null`: `"type": [T, "null"]` when there is a plain
/// `type`, a `{"type": "null"}` branch otherwise.
fn make_nullable(schema: Value) -> Value {
    let mut map = match schema {
        Value::Object(map) => map,
        Value::Bool(false) => {
            return Value::Object(Map::from_iter([("type".to_owned(), "null".into())]));
        }
        other => return other,
    };
    let null_branch = || Value::Object(Map::from_iter([("type".to_owned(), Value::from("null"))]));
    let has_type = matches!(map.get("type"), Some(Value::String(_) | Value::Array(_)));
    if has_type && !map.contains_key("const") && !map.contains_key("anyOf") {
        let mut types: Vec<Value> = match map.get("type") {
            Some(Value::Array(ts)) => ts.clone(),
            Some(t) => vec![t.clone()],
            None => Vec::new(),
        };
        types.push("null".into());
        map.insert("type".to_owned(), Value::Array(types));
        if let Some(Value::Array(values)) = map.get_mut("enum") {
            values.push(Value::Null);
        }
        return Value::Object(map);
    }
    let only_any_of = map
        .keys()
        .all(|k| k == "anyOf" || ANNOTATIONS.contains(&k.as_str()));
    if let (true, Some(Value::Array(branches))) = (only_any_of, map.get_mut("anyOf")) {
        branches.push(null_branch());
        return Value::Object(map);
    }
    // Keep the annotations where the property is; the rest becomes one branch of a union with null.
    let mut wrapper = Map::new();
    for key in ANNOTATIONS {
        if let Some(value) = map.shift_remove(key) {
            wrapper.insert(key.to_owned(), value);
        }
    }
    wrapper.insert(
        "anyOf".to_owned(),
        Value::Array(vec![Value::Object(map), null_branch()]),
    );
    Value::Object(wrapper)
}

/// Keywords whose values are subschemas (or maps/arrays of them), for walking the raw schema.
fn subschemas<'v>(map: &'v Map<String, Value>, pointer: &str) -> Vec<(String, &'v Value)> {
    let mut out = Vec::new();
    for (key, value) in map {
        match (key.as_str(), value) {
            ("$defs" | "definitions", _) => {} // reached through $ref only
            ("properties" | "patternProperties" | "dependentSchemas", Value::Object(children)) => {
                let base = child(pointer, key);
                out.extend(children.iter().map(|(name, v)| (child(&base, name), v)));
            }
            ("allOf" | "anyOf" | "oneOf" | "prefixItems" | "items", Value::Array(children)) => {
                let base = child(pointer, key);
                out.extend(
                    children
                        .iter()
                        .enumerate()
                        .map(|(i, v)| (child(&base, &i.to_string()), v)),
                );
            }
            (
                "items"
                | "additionalItems"
                | "additionalProperties"
                | "contains"
                | "propertyNames"
                | "not"
                | "if"
                | "then"
                | "else"
                | "unevaluatedItems"
                | "unevaluatedProperties",
                Value::Object(_),
            ) => out.push((child(pointer, key), value)),
            _ => {}
        }
    }
    out
}

/// What [`reachable_refs`] finds: every `$ref` target reached (pointers), and the first `$ref` that closes a
/// cycle (its location and text), if any.
type Reached = (HashSet<String>, Option<(String, String)>);

/// Walks the schema from the root through `$ref`s.
fn reachable_refs(cx: &Cx<'_>) -> Result<Reached> {
    // An explicit stack of frames, one per `$ref` target being walked: no recursion on untrusted input.
    struct Frame<'v> {
        pending: Vec<(String, &'v Value)>,
        target: String,
    }
    let mut done: HashMap<String, bool> = HashMap::from([(String::new(), false)]);
    let mut work = vec![Frame {
        pending: vec![(String::new(), cx.root)],
        target: String::new(),
    }];
    let mut cycle = None;
    while let Some(frame) = work.last_mut() {
        let Some((pointer, schema)) = frame.pending.pop() else {
            let target = std::mem::take(&mut frame.target);
            done.insert(target, true);
            work.pop();
            continue;
        };
        let Value::Object(map) = schema else { continue };
        let mut children = subschemas(map, &pointer);
        children.reverse();
        frame.pending.extend(children);
        if let Some(Value::String(reference)) = map.get("$ref") {
            let (target, target_pointer) = cx.resolve(reference, &pointer)?;
            match done.get(&target_pointer) {
                Some(false) => {
                    cycle.get_or_insert((pointer, reference.clone()));
                }
                Some(true) => {}
                None => {
                    done.insert(target_pointer.clone(), false);
                    work.push(Frame {
                        pending: vec![(target_pointer.clone(), target)],
                        target: target_pointer,
                    });
                }
            }
        }
    }
    done.remove("");
    Ok((done.into_keys().collect(), cycle))
}

/// Whether the definition at `pointer` (e.g. `/$defs/Address`) or anything inside it is a `$ref` target.
fn is_reached(reached: &HashSet<String>, pointer: &str) -> bool {
    reached.iter().any(|t| {
        t == pointer
            || t.strip_prefix(pointer)
                .is_some_and(|rest| rest.starts_with('/'))
    })
}

/// JSON nodes in a value (for [`Cx::charge`]).
fn count_nodes(value: &Value) -> usize {
    let mut count = 0;
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        count += 1;
        match value {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.values()),
            _ => {}
        }
    }
    count
}
