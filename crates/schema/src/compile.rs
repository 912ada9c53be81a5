//! Compiling a schema with boon: meta-validation against the schema's draft, reference and regex checks,
//! and the compiled form the validator runs.
//!
//! Compilation never touches the filesystem or the network: only the schema itself and the standard
//! meta-schemas (which boon embeds) can be referenced.

mod cycle;

use std::error::Error as StdError;
use std::fmt;

use serde_json::Value;

use crate::base::Draft;
use crate::error::{Error, Result};

/// The location boon knows the schema under; `$ref`s resolve against it.
const ROOT_URL: &str = "urn:claij:schema";

/// A schema compiled by boon, ready to validate instances.
///
/// Build one with [`compile`]; claij-validation wraps it in its `Validator`.
pub struct CompiledSchema {
    schemas: boon::Schemas,
    index: boon::SchemaIndex,
    draft: Draft,
}

impl CompiledSchema {
    /// The boon schema set and the index of the root schema in it.
    pub fn as_boon(&self) -> (&boon::Schemas, boon::SchemaIndex) {
        (&self.schemas, self.index)
    }

    /// The draft the schema was compiled under.
    pub fn draft(&self) -> Draft {
        self.draft
    }
}

impl fmt::Debug for CompiledSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompiledSchema")
            .field("draft", &self.draft)
            .field("schemas", &self.schemas.size())
            .finish()
    }
}

/// Compiles a schema: checks it against its draft's meta-schema (2020-12 when it declares none), resolves
/// every `$ref` and compiles every `pattern`. Format assertions are on, so `"format": "date-time"` is
/// enforced whatever the draft.
///
/// # Errors
///
/// [`Error::InvalidSchema`] with the JSON pointer of the offending keyword and boon's message; also
/// for a `pattern` too large to compile (naming it) and for a `$ref` cycle that never moves into the
/// instance (`{"$ref": "#"}`, or `a` referring to `b` referring to `a`), which would loop on any value.
pub fn compile(schema: &Value) -> Result<CompiledSchema> {
    compile_at(schema, &[]).map(|(compiled, _)| compiled)
}

/// Compiles a schema and, in the same schema set, the subschemas at `pointers` (JSON pointers into
/// `schema`), returning the index of each. claij-validation uses this to validate the branches of a
/// discriminated union on their own.
///
/// # Errors
///
/// [`Error::InvalidSchema`] saying where the schema is wrong, or naming a pointer that resolves to nothing.
pub fn compile_at(
    schema: &Value,
    pointers: &[String],
) -> Result<(CompiledSchema, Vec<boon::SchemaIndex>)> {
    let draft = Draft::of(schema).ok_or_else(|| Error::InvalidSchema {
        extension: None,
        pointer: "/$schema".into(),
        message: format!(
            "unknown `$schema` {}; use draft-07 or draft 2020-12",
            schema.get("$schema").unwrap_or(&Value::Null)
        ),
    })?;
    // Before boon, which reports a pattern too large for the regex engine as a bug of its own,
    // without saying where.
    check_patterns(schema)?;
    let mut compiler = boon::Compiler::new();
    compiler.set_default_draft(draft.to_boon());
    compiler.enable_format_assertions();
    compiler.use_loader(Box::new(NoLoader));
    let mut schemas = boon::Schemas::new();
    let err = |e: boon::CompileError| to_error(schema, &e);
    compiler
        .add_resource(ROOT_URL, schema.clone())
        .map_err(err)?;
    let index = compiler.compile(ROOT_URL, &mut schemas).map_err(err)?;
    if let Some(found) = cycle::find(schema) {
        let path: Vec<String> = found.path.iter().map(|at| format!("#{at}")).collect();
        return Err(Error::InvalidSchema {
            extension: None,
            pointer: found.at,
            message: format!(
                "`$ref` cycle that never reaches a value: {}",
                path.join(" -> ")
            ),
        });
    }
    let mut indexes = Vec::with_capacity(pointers.len());
    for pointer in pointers {
        let loc = format!("{ROOT_URL}#{}", encode_fragment(pointer));
        indexes.push(compiler.compile(&loc, &mut schemas).map_err(err)?);
    }
    let compiled = CompiledSchema {
        schemas,
        index,
        draft,
    };
    Ok((compiled, indexes))
}

/// Percent-encodes what a URI fragment cannot hold as is.
pub(crate) fn encode_fragment(pointer: &str) -> String {
    let mut out = String::with_capacity(pointer.len());
    for b in pointer.bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~!$&'()*+,;=:@".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Checks a schema without keeping the compiled form (see [`compile`]).
///
/// # Errors
///
/// [`Error::InvalidSchema`] saying where the schema is wrong.
pub fn check(schema: &Value) -> Result<()> {
    compile(schema).map(drop)
}

/// Every `pattern` must compile within the regex engine's size limit (as boon compiles it: `\d` and
/// `\w` are ASCII classes).
fn check_patterns(schema: &Value) -> Result<()> {
    for at in cycle::subschemas(schema) {
        let Some(Value::String(pattern)) = schema.pointer(&at).and_then(|s| s.get("pattern"))
        else {
            continue;
        };
        if let Err(regex::Error::CompiledTooBig(limit)) = regex::Regex::new(&ascii_classes(pattern))
        {
            let shown: String = pattern.chars().take(60).collect();
            let more = if shown.len() < pattern.len() {
                "…"
            } else {
                ""
            };
            return Err(Error::InvalidSchema {
                extension: None,
                pointer: crate::pointer::push(&at, "pattern"),
                message: format!(
                    "regular expression {shown:?}{more} ({} bytes) is too large: compiled, it \
                     exceeds the regex engine's limit of {limit} bytes",
                    pattern.len()
                ),
            });
        }
    }
    Ok(())
}

/// `pattern` with `\d`, `\D`, `\w` and `\W` as the ASCII classes ECMA 262 means (and boon compiles).
fn ascii_classes(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('d') => out.push_str("[0-9]"),
            Some('D') => out.push_str("[^0-9]"),
            Some('w') => out.push_str("[a-zA-Z0-9_]"),
            Some('W') => out.push_str("[^a-zA-Z0-9_]"),
            Some(next) => {
                out.push('\\');
                out.push(next);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// Refuses every external document: schemas from LLMs and MCP servers must not read files or URLs.
struct NoLoader;

impl boon::UrlLoader for NoLoader {
    fn load(&self, url: &str) -> std::result::Result<Value, Box<dyn StdError>> {
        Err(format!("external reference {url} is not allowed").into())
    }
}

fn to_error(schema: &Value, e: &boon::CompileError) -> Error {
    use boon::CompileError as C;
    let (pointer, message) = match e {
        C::ValidationError { src, .. } => {
            let leaf = deepest(src);
            (
                leaf.instance_location.to_string(),
                format!("not valid against the meta-schema: {}", leaf.kind),
            )
        }
        C::JsonPointerNotFound(url) | C::LoadUrlError { url, .. } => {
            let target = fragment(url).unwrap_or(url);
            let at = find_ref(schema, url, "").unwrap_or_default();
            (at, format!("`$ref` target {target} does not exist"))
        }
        C::UnsupportedUrlScheme { url } | C::ParseUrlError { url, .. } => {
            let at = find_ref(schema, url, "").unwrap_or_default();
            (at, format!("cannot resolve `$ref` {url}"))
        }
        C::InvalidRegex { url, regex, .. } => (
            fragment(url).unwrap_or_default().to_owned(),
            format!("invalid regular expression {regex:?}"),
        ),
        C::Bug(src) => (
            String::new(),
            format!("the schema cannot be compiled: {src}").replace(ROOT_URL, "schema"),
        ),
        other => {
            let text = format!("{other:#}");
            (String::new(), text.replace(ROOT_URL, "schema"))
        }
    };
    Error::InvalidSchema {
        extension: None,
        pointer,
        message,
    }
}

/// The most specific cause of a meta-schema failure: the one a person needs to see.
fn deepest<'a, 's, 'v>(e: &'a boon::ValidationError<'s, 'v>) -> &'a boon::ValidationError<'s, 'v> {
    let mut current = e;
    let mut best = e;
    loop {
        if current.instance_location.tokens.len() >= best.instance_location.tokens.len() {
            best = current;
        }
        match current.causes.first() {
            Some(next) => current = next,
            None => return best,
        }
    }
}

fn fragment(url: &str) -> Option<&str> {
    url.split_once('#').map(|(_, f)| f)
}

/// Finds the pointer of the first `$ref` whose value names `url` (absolute, or as the bare fragment).
fn find_ref(value: &Value, url: &str, at: &str) -> Option<String> {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get("$ref") {
                let frag = fragment(url).map(|f| format!("#{f}"));
                if r == url || frag.as_deref() == Some(r.as_str()) || url.ends_with(r.as_str()) {
                    return Some(crate::pointer::push(at, "$ref"));
                }
            }
            map.iter()
                .find_map(|(k, v)| find_ref(v, url, &crate::pointer::push(at, k)))
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, v)| find_ref(v, url, &crate::pointer::push(at, &i.to_string()))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[track_caller]
    fn check_err(schema: Value, pointer: &str, message_part: &str) {
        match check(&schema) {
            Err(Error::InvalidSchema {
                pointer: p,
                message,
                ..
            }) => {
                assert_eq!(p, pointer, "{message}");
                assert!(message.contains(message_part), "{message}");
            }
            other => panic!("expected an invalid schema, got {other:?}"),
        }
    }

    #[test]
    fn valid_schemas_compile() {
        check(&crate::base()).unwrap();
        check(
            &json!({"$schema": crate::DRAFT_07, "definitions": {"a": {"type": "string"}},
            "properties": {"x": {"$ref": "#/definitions/a"}}}),
        )
        .unwrap();
        check(&json!(true)).unwrap();
    }

    #[test]
    fn errors_say_where() {
        check_err(
            json!({"properties": {"a": {"type": "strin"}}}),
            "/properties/a/type",
            "meta-schema",
        );
        check_err(
            json!({"properties": {"a": {"$ref": "#/$defs/Missing"}}}),
            "/properties/a/$ref",
            "does not exist",
        );
        check_err(
            json!({"properties": {"a": {"type": "string", "pattern": "(unclosed"}}}),
            "/properties/a/pattern",
            "not valid regex",
        );
        check_err(
            json!({"$schema": "http://example.com/nope"}),
            "/$schema",
            "unknown",
        );
        check_err(
            json!({"properties": {"a": {"$ref": "other.json"}}}),
            "/properties/a/$ref",
            "",
        );
        check_err(
            json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}),
            "/$defs/b/$ref",
            "`$ref` cycle that never reaches a value: #/$defs/a -> #/$defs/b -> #/$defs/a",
        );
        check_err(
            json!({"$ref": "#"}),
            "/$ref",
            "`$ref` cycle that never reaches a value: # -> #",
        );
        check_err(
            json!({"properties": {"code": {"type": "string", "pattern": "a{1000}{1000}"}}}),
            "/properties/code/pattern",
            "regular expression \"a{1000}{1000}\" (13 bytes) is too large",
        );
        let huge = "(ab|cd)".repeat(150_000);
        check_err(
            json!({"$defs": {"x": {"pattern": huge}}}),
            "/$defs/x/pattern",
            "…",
        );
    }

    #[test]
    fn recursion_through_the_instance_compiles_and_validates() {
        let tree = json!({
            "$defs": {"node": {"type": "object", "required": ["name"], "properties": {
                "name": {"type": "string", "pattern": "^\\w+$"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}},
            "$ref": "#/$defs/node"
        });
        let compiled = compile(&tree).unwrap();
        let (schemas, root) = compiled.as_boon();
        let good = json!({"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}]});
        assert!(schemas.validate(&good, root).is_ok());
        let bad = json!({"name": "a", "children": [{"name": "b", "children": [{"name": 1}]}]});
        assert!(schemas.validate(&bad, root).is_err());
    }
}
