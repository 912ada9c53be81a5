//! Prompt rendering: a schema as text for a model to read, minified JSON or a compact TypeScript-like form.
//!
//! [`to_compact`] writes what a model needs to produce valid JSON in far fewer tokens than the schema itself
//! (on the 40-tool benchmark schema `fixtures/bench/big.json`, under a quarter of the minified JSON's o200k
//! tokens):
//!
//! ```text
//! // A postal address.
//! type Address = {
//!   street: string // Street and house number
//!   country_code: string // ISO 3166-1 alpha-2 country code; pattern ^[A-Z]{2}$
//!   postal_code?: string | null // Postal or ZIP code
//! }
//! ```
//!
//! - Descriptions become `//` comments; constraints follow them (`1..=50 chars`, `pattern …`, `0..=1`,
//!   `≤10 items`, `format date-time`, `default 10`).
//! - `?` marks optional keys; keys that are not identifiers are quoted.
//! - `enum` and `const` become JSON literals joined by `|`; `anyOf`/`oneOf` become unions, `allOf` an
//!   intersection (`&`); arrays are `T[]`, tuples `[A, B]`; `integer` stays `integer`.
//! - Definitions (`$defs`, draft-07 `definitions`) used more than once, recursively, or as union branches are
//!   declared once as `type Name = …` after the main type; a definition used once is written in place.
//! - An object with `additionalProperties: false` ends with a `// no other keys` line; other objects admit
//!   more keys.
//! - A description made only of names the rendering already shows (its property key, its definition's
//!   name, sibling keys and their `const` values, around filler words like `the`, `of`, `name`) is left out:
//!   `Call the search_flights tool` on `SearchFlightsCall` whose `tool` is `"search_flights"`, `Tool name`
//!   on `tool`. Every other description is kept.
//! - Keywords without a compact form are shown as inline JSON in the comment (`not {"const":"x"}`), so
//!   nothing the schema requires is silently left out. `title` is omitted.
//!
//! Rendering never fails and never panics, whatever the schema: unresolvable references render as `any`
//! with the reference in a comment.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use crate::dialect::percent_decode;

/// The schema as minified JSON.
pub fn to_json(schema: &Value) -> String {
    schema.to_string()
}

/// The schema in the compact TypeScript-like form described in the [module docs](self).
///
/// ```
/// use serde_json::json;
///
/// let schema = json!({
///     "type": "object",
///     "properties": {
///         "answer": {"type": "string", "description": "Answer to the user"},
///         "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 3},
///     },
///     "required": ["answer"],
/// });
/// assert_eq!(
///     claij_schema::render::to_compact(&schema),
///     "{\n  answer: string // Answer to the user\n  tags?: (\"a\" | \"b\")[] // ≤3 items\n}\n",
/// );
/// ```
pub fn to_compact(schema: &Value) -> String {
    Renderer::new(schema).render_document()
}

/// Deepest nesting rendered; deeper subschemas render as `any` (schemas are untrusted input).
const MAX_DEPTH: usize = 64;

/// Keywords that shape the type expression or are deliberately left out; everything else becomes a note.
const STRUCTURAL: [&str; 24] = [
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "prefixItems",
    "enum",
    "const",
    "anyOf",
    "oneOf",
    "allOf",
    "nullable",
    "$ref",
    "$defs",
    "definitions",
    "$schema",
    "$id",
    "$comment",
    "title",
    "description",
    "propertyOrdering",
    "patternProperties",
    "exclusiveMinimum",
    "exclusiveMaximum",
];

/// A rendered subschema: the type expression (multi-line for object literals) and what goes in its comment.
#[derive(Default)]
struct Out {
    text: String,
    description: Option<String>,
    notes: Vec<String>,
    /// The text joins alternatives (`A | B`, `A & B`), so `[]` or another operator needs parentheses.
    compound: bool,
}

impl Out {
    fn plain(text: impl Into<String>) -> Self {
        Out {
            text: text.into(),
            ..Out::default()
        }
    }

    /// Description and notes as one comment, newlines flattened.
    fn comment(&self) -> Option<String> {
        let mut parts: Vec<String> = Vec::new();
        if let Some(description) = &self.description {
            parts.push(one_line(description));
        }
        parts.extend(self.notes.iter().cloned());
        (!parts.is_empty()).then(|| parts.join("; "))
    }

    fn is_multiline(&self) -> bool {
        self.text.contains('\n')
    }
}

/// How a definition is written: in place (used once, not recursive) or declared under a name.
struct Definition {
    name: String,
    uses: usize,
}

/// A property schema written identically in several places (say `retries` in every tool's arguments),
/// declared once under a name made from the property's.
struct Shared {
    name: String,
    /// The first property seen with this schema, which names it.
    property: String,
    schema: Value,
    uses: usize,
    first_seen: usize,
}

/// A declaration waiting to be written: a definition (by pointer) or a shared property schema (by its JSON).
#[derive(Clone, PartialEq, Eq, Hash)]
enum Pending {
    Definition(String),
    Shared(String),
}

/// Shortest property schema (as JSON) worth sharing; shorter ones cost more as a name than written out.
const MIN_SHARED_LEN: usize = 30;

struct Renderer<'a> {
    root: &'a Value,
    /// Root definitions by pointer (`/$defs/Address`).
    definitions: HashMap<String, Definition>,
    /// Shared property schemas by their JSON.
    shared: HashMap<String, Shared>,
    /// Declarations in first-use order, and the ones already queued.
    queue: Vec<Pending>,
    queued: HashSet<Pending>,
    /// Definitions being written in place right now (to stop inlining a cycle).
    inlining: Vec<String>,
    /// Whether some `$ref` points at the root (`#`), which then needs the name `Root`.
    root_referenced: bool,
    depth: usize,
    /// Names around the subschema being rendered (definition names, property keys, sibling keys and
    /// their `const` values): a description made only of these says nothing the rendering does not.
    scope: Vec<String>,
}

impl<'a> Renderer<'a> {
    fn new(root: &'a Value) -> Self {
        let mut renderer = Renderer {
            root,
            definitions: HashMap::new(),
            shared: HashMap::new(),
            queue: Vec::new(),
            queued: HashSet::new(),
            inlining: Vec::new(),
            root_referenced: false,
            depth: 0,
            scope: Vec::new(),
        };
        renderer.collect_definitions();
        renderer
    }

    /// Names every root definition and counts the `$ref`s to it.
    fn collect_definitions(&mut self) {
        let mut taken: HashSet<String> = [
            "string", "number", "integer", "boolean", "null", "any", "never", "object", "Root",
        ]
        .into_iter()
        .map(str::to_owned)
        .collect();
        if let Value::Object(root) = self.root {
            for key in ["$defs", "definitions"] {
                let Some(Value::Object(defs)) = root.get(key) else {
                    continue;
                };
                for name in defs.keys() {
                    let mut unique = identifier(name);
                    let mut n = 2;
                    while taken.contains(&unique) {
                        unique = format!("{}{n}", identifier(name));
                        n += 1;
                    }
                    taken.insert(unique.clone());
                    let pointer = format!("/{key}/{}", escape_token(name));
                    self.definitions.insert(
                        pointer,
                        Definition {
                            name: unique,
                            uses: 0,
                        },
                    );
                }
            }
        }
        let mut stack = vec![self.root];
        while let Some(value) = stack.pop() {
            match value {
                Value::Object(map) => {
                    if let Some(Value::String(reference)) = map.get("$ref")
                        && let Some(pointer) = ref_pointer(reference)
                        && let Some(definition) = self.definitions.get_mut(&pointer)
                    {
                        definition.uses += 1;
                    }
                    if let Some(Value::Object(properties)) = map.get("properties") {
                        for (name, schema) in properties {
                            count_shared(&mut self.shared, name, schema);
                        }
                    }
                    // `enum`, `const`, `default` and `examples` hold data, not schemas.
                    stack.extend(
                        map.iter()
                            .filter(|(k, _)| {
                                !matches!(k.as_str(), "enum" | "const" | "default" | "examples")
                            })
                            .map(|(_, v)| v),
                    );
                }
                Value::Array(items) => stack.extend(items),
                _ => {}
            }
        }
        self.shared.retain(|_, shared| shared.uses > 1);
        let mut shared: Vec<&mut Shared> = self.shared.values_mut().collect();
        shared.sort_by_key(|s| s.first_seen);
        for entry in shared {
            let base = pascal_case(&entry.property);
            let mut name = base.clone();
            let mut n = 2;
            while taken.contains(&name) {
                name = format!("{base}{n}");
                n += 1;
            }
            taken.insert(name.clone());
            entry.name = name;
        }
    }

    fn render_document(&mut self) -> String {
        self.inlining.push(String::new());
        let main = self.render(self.root, 0);
        self.inlining.pop();
        let mut out = String::new();
        let name = self.root_referenced.then_some("Root");
        push_declaration(&mut out, name, main);
        let mut i = 0;
        while let Some(pending) = self.queue.get(i).cloned() {
            i += 1;
            match pending {
                Pending::Definition(pointer) => {
                    let Some(target) = self.root.pointer(&pointer) else {
                        continue;
                    };
                    let name = self
                        .definitions
                        .get(&pointer)
                        .map(|d| d.name.clone())
                        .unwrap_or_default();
                    self.inlining.push(pointer.clone());
                    self.scope.push(pointer_name(&pointer));
                    let body = self.render(target, 0);
                    self.scope.pop();
                    self.inlining.pop();
                    push_declaration(&mut out, Some(&name), body);
                }
                Pending::Shared(key) => {
                    let Some(shared) = self.shared.get(&key) else {
                        continue;
                    };
                    let (name, schema) = (shared.name.clone(), shared.schema.clone());
                    self.scope.push(shared.property.clone());
                    let body = self.render(&schema, 0);
                    self.scope.pop();
                    push_declaration(&mut out, Some(&name), body);
                }
            }
        }
        out
    }

    fn render(&mut self, schema: &Value, indent: usize) -> Out {
        if self.depth >= MAX_DEPTH {
            return Out {
                text: "any".to_owned(),
                notes: vec!["nested too deeply to show".to_owned()],
                ..Out::default()
            };
        }
        self.depth += 1;
        let out = match schema {
            Value::Bool(true) => Out::plain("any"),
            Value::Bool(false) => Out::plain("never"),
            Value::Object(map) => self.render_map(map, indent),
            other => Out {
                text: "any".to_owned(),
                notes: vec![format!("invalid schema {}", other)],
                ..Out::default()
            },
        };
        self.depth -= 1;
        out
    }

    fn render_map(&mut self, map: &Map<String, Value>, indent: usize) -> Out {
        let mut out = match map.get("$ref") {
            Some(Value::String(reference)) => self.reference(reference, indent, false),
            _ => self.core(map, indent),
        };
        let description = map
            .get("description")
            .and_then(Value::as_str)
            .filter(|d| !self.restates_names(d, map))
            .map(str::to_owned);
        out.description = match (description, out.description.take()) {
            (Some(site), Some(inner)) if site != inner => Some(format!("{site}; {inner}")),
            (Some(site), _) => Some(site),
            (None, inner) => inner,
        };
        if map.get("nullable") == Some(&Value::Bool(true)) && !out.text.ends_with(" | null") {
            out.text = format!("{} | null", out.text);
        }
        out.notes.extend(notes(map));
        out
    }

    /// The type expression of a schema without `$ref`.
    fn core(&mut self, map: &Map<String, Value>, indent: usize) -> Out {
        if let Some(value) = map.get("const") {
            return Out::plain(value.to_string());
        }
        if let Some(Value::Array(values)) = map.get("enum") {
            let literals: Vec<String> = values.iter().map(Value::to_string).collect();
            let mut out = Out::plain(if literals.is_empty() {
                "never".to_owned()
            } else {
                literals.join(" | ")
            });
            out.compound = literals.len() > 1;
            return out;
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(branches)) = map.get(key) {
                return self.union(branches, indent);
            }
        }
        if let Some(Value::Array(branches)) = map.get("allOf") {
            // `string & ("a" | "b")` says no more than `"a" | "b"`: a branch that only names a type
            // (and describes it) is dropped beside one whose literals all have that type; its
            // description leads the comment.
            let literals = branches.iter().find_map(literal_types);
            let subsumed = |branch: &Value| {
                let (Some(types), Value::Object(b)) = (&literals, branch) else {
                    return false;
                };
                b.keys()
                    .all(|k| matches!(k.as_str(), "type" | "description" | "title"))
                    && b.get("type").and_then(Value::as_str).is_some_and(|t| {
                        types
                            .iter()
                            .all(|lit| *lit == t || (t == "number" && *lit == "integer"))
                    })
            };
            let kept: Vec<Value> = branches.iter().filter(|b| !subsumed(b)).cloned().collect();
            if kept.len() < branches.len() {
                let lead: Vec<&str> = branches
                    .iter()
                    .filter(|b| subsumed(b))
                    .filter_map(|b| b.get("description").and_then(Value::as_str))
                    .collect();
                let mut rest = map.clone();
                rest.insert("allOf".to_owned(), Value::Array(kept));
                let mut out = self.core(&rest, indent);
                if !lead.is_empty() {
                    out.notes.insert(0, lead.join("; "));
                }
                return out;
            }
            let mut out = self.combine(branches, indent, " & ");
            if map.contains_key("type") || map.contains_key("properties") {
                let mut rest = map.clone();
                rest.shift_remove("allOf");
                let base = self.core(&rest, indent);
                out.text = format!("{} & {}", base.text, out.text);
                out.notes.extend(base.notes);
            }
            return out;
        }
        let types: Vec<&str> = match map.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ if map.contains_key("properties") || map.contains_key("additionalProperties") => {
                vec!["object"]
            }
            _ if map.contains_key("items") || map.contains_key("prefixItems") => vec!["array"],
            _ => Vec::new(),
        };
        if types.is_empty() {
            return Out::plain("any");
        }
        let mut out = Out::default();
        let mut parts = Vec::new();
        for t in types {
            let part = match t {
                "object" => self.object(map, indent),
                "array" => self.array(map, indent),
                other => Out::plain(other),
            };
            parts.push(part.text);
            out.notes.extend(part.notes);
            if part.description.is_some() {
                out.description = part.description;
            }
        }
        out.compound = parts.len() > 1;
        out.text = parts.join(" | ");
        out
    }

    fn union(&mut self, branches: &[Value], indent: usize) -> Out {
        self.combine(branches, indent, " | ")
    }

    /// Branches joined by `separator`; single-line branches' comments move to the combined comment.
    fn combine(&mut self, branches: &[Value], indent: usize, separator: &str) -> Out {
        let non_null = branches
            .iter()
            .filter(|b| !matches!(b, Value::Object(m) if m.get("type") == Some(&Value::from("null")) && m.len() == 1))
            .count();
        let outs: Vec<Out> = branches
            .iter()
            .map(|branch| match branch {
                Value::Object(map) if non_null > 1 => match map.get("$ref") {
                    // A definition that is one of several alternatives keeps its name.
                    Some(Value::String(reference)) => {
                        let mut out = self.reference(reference, indent, true);
                        out.notes.extend(notes(map));
                        if let Some(d) = map.get("description").and_then(Value::as_str)
                            && !self.restates_names(d, map)
                        {
                            out.description = Some(d.to_owned());
                        }
                        out
                    }
                    _ => self.render(branch, indent),
                },
                _ => self.render(branch, indent),
            })
            .collect();
        let commented = outs
            .iter()
            .filter(|o| !o.is_multiline() && o.comment().is_some())
            .count();
        let many = outs.len() > 1;
        let mut out = Out::default();
        let mut parts = Vec::new();
        for branch in outs {
            if branch.is_multiline() {
                parts.push(attach(&branch.text, branch.comment().as_deref()));
                continue;
            }
            if let Some(comment) = branch.comment() {
                out.notes.push(if commented > 1 {
                    format!("{}: {comment}", branch.text)
                } else {
                    comment
                });
            }
            // `string & ("a" | "b")`: a compound branch among others keeps its own grouping.
            if branch.compound && many {
                parts.push(format!("({})", branch.text));
            } else {
                parts.push(branch.text);
            }
        }
        out.compound = parts.len() > 1;
        out.text = if parts.is_empty() {
            "never".to_owned()
        } else {
            parts.join(separator)
        };
        out
    }

    fn object(&mut self, map: &Map<String, Value>, indent: usize) -> Out {
        let required: Vec<&str> = match map.get("required") {
            Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let pad = " ".repeat(indent + 2);
        let mut lines = Vec::new();
        let outer = self.scope.len();
        self.scope.extend(own_names(map));
        if let Some(Value::Object(properties)) = map.get("properties") {
            for (name, schema) in properties {
                self.scope.push(name.clone());
                let property = self.property(schema, indent + 2);
                self.scope.pop();
                let optional = if required.contains(&name.as_str()) {
                    ""
                } else {
                    "?"
                };
                let key = format!("{}{optional}", quote_key(name));
                lines.push(member(&pad, &key, property));
            }
        }
        self.scope.truncate(outer);
        if let Some(Value::Object(patterns)) = map.get("patternProperties") {
            for (pattern, schema) in patterns {
                let property = self.render(schema, indent + 2);
                lines.push(member(
                    &pad,
                    &format!("[key matching {}]", Value::from(pattern.as_str())),
                    property,
                ));
            }
        }
        match map.get("additionalProperties") {
            Some(Value::Bool(false)) | None => {}
            Some(schema) => {
                let property = self.render(schema, indent + 2);
                lines.push(member(&pad, "[key: string]", property));
            }
        }
        let open = !matches!(map.get("additionalProperties"), Some(Value::Bool(false)));
        if lines.is_empty() {
            return Out::plain(if open { "object" } else { "{}" });
        }
        if !open {
            // Inside the braces, so no outer comment attached to the first line can be read as its own.
            lines.push(format!("{pad}// no other keys"));
        }
        Out::plain(format!(
            "{{\n{}\n{}}}",
            lines.join("\n"),
            " ".repeat(indent)
        ))
    }

    fn array(&mut self, map: &Map<String, Value>, indent: usize) -> Out {
        let mut out = Out::default();
        if let Some(Value::Array(prefix)) = map
            .get("prefixItems")
            .or_else(|| map.get("items").filter(|i| i.is_array()))
        {
            let items: Vec<String> = prefix
                .iter()
                .map(|item| {
                    let item = self.render(item, indent);
                    attach(&item.text, item.comment().as_deref())
                })
                .collect();
            out.text = format!("[{}]", items.join(", "));
            return out;
        }
        let item = match map.get("items") {
            Some(items) => self.render(items, indent),
            None => Out::plain("any"),
        };
        let bare = item.text.starts_with('{') && item.text.ends_with('}');
        let text = if item.compound
            || (!bare && (item.text.contains(" | ") || item.text.contains(" & ")))
        {
            format!("({})[]", item.text)
        } else {
            format!("{}[]", item.text)
        };
        if item.is_multiline() {
            let comment = item.comment().map(|c| format!("each: {c}"));
            out.text = attach(&text, comment.as_deref());
        } else {
            out.text = text;
            if let Some(comment) = item.comment() {
                out.notes.push(format!("each: {comment}"));
            }
        }
        out
    }

    fn enqueue(&mut self, pending: Pending) {
        if self.queued.insert(pending.clone()) {
            self.queue.push(pending);
        }
    }

    /// A property's type: the shared name when the same schema appears as a property elsewhere too.
    fn property(&mut self, schema: &Value, indent: usize) -> Out {
        let key = schema.to_string();
        match self.shared.get(&key) {
            Some(shared) => {
                let name = shared.name.clone();
                self.enqueue(Pending::Shared(key));
                Out::plain(name)
            }
            _ => self.render(schema, indent),
        }
    }

    /// A `$ref`: the definition's name, or the target written in place when it is used once (and
    /// `keep_name` is false), or any other local target written in place.
    fn reference(&mut self, reference: &str, indent: usize, keep_name: bool) -> Out {
        let unresolved = || Out {
            text: "any".to_owned(),
            notes: vec![format!("unresolved $ref {reference}")],
            ..Out::default()
        };
        let Some(pointer) = ref_pointer(reference) else {
            return unresolved();
        };
        let Some(target) = self.root.pointer(&pointer) else {
            return unresolved();
        };
        let recursive = self.inlining.contains(&pointer);
        if let Some(definition) = self.definitions.get(&pointer) {
            if keep_name || definition.uses > 1 || recursive {
                let name = definition.name.clone();
                self.enqueue(Pending::Definition(pointer));
                return Out::plain(name);
            }
        } else if pointer.is_empty() {
            self.root_referenced = true;
            return Out::plain("Root");
        } else if recursive {
            return unresolved();
        }
        self.scope.push(pointer_name(&pointer));
        self.inlining.push(pointer);
        let out = self.render(target, indent);
        self.inlining.pop();
        self.scope.pop();
        out
    }

    /// Whether every word of `description` that is not a filler word names something in scope, or in
    /// `map`'s own keys and constants (`Call the search_flights tool` on `SearchFlightsCall`, whose
    /// `tool` is `"search_flights"`): such a description repeats names the rendering already shows.
    fn restates_names(&self, description: &str, map: &Map<String, Value>) -> bool {
        let names: Vec<String> = self
            .scope
            .iter()
            .cloned()
            .chain(own_names(map))
            .flat_map(|name| words(&name))
            .collect();
        words(description)
            .iter()
            .filter(|word| !FILLER.contains(&word.as_str()))
            .all(|word| names.iter().any(|name| same_word(word, name)))
    }
}

/// Words a description uses around names without adding meaning of their own.
const FILLER: [&str; 20] = [
    "a", "an", "the", "of", "for", "to", "this", "that", "its", "it", "is", "in", "on", "at", "by",
    "with", "and", "or", "from", "name",
];

/// An object's property keys and its properties' string `const` values.
fn own_names(map: &Map<String, Value>) -> Vec<String> {
    let Some(Value::Object(properties)) = map.get("properties") else {
        return Vec::new();
    };
    properties
        .iter()
        .flat_map(|(key, schema)| {
            let constant = schema
                .get("const")
                .and_then(Value::as_str)
                .map(str::to_owned);
            std::iter::once(key.clone()).chain(constant)
        })
        .collect()
}

/// The last token of a definition's pointer (`/$defs/SearchFlightsCall` → `SearchFlightsCall`).
fn pointer_name(pointer: &str) -> String {
    pointer
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .replace("~1", "/")
        .replace("~0", "~")
}

/// Lower-case words of a text or name, split at non-alphanumerics and camel-case humps
/// (`SearchFlightsCall` → `search`, `flights`, `call`).
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for part in text.split(|c: char| !c.is_alphanumeric()) {
        let mut word = String::new();
        let mut previous_lower = false;
        for c in part.chars() {
            if c.is_uppercase() && previous_lower && !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            previous_lower = c.is_lowercase() || c.is_ascii_digit();
            word.extend(c.to_lowercase());
        }
        if !word.is_empty() {
            out.push(word);
        }
    }
    out
}

/// The same word, up to a plural `s` or an abbreviation of at least 3 letters (`args`, `arguments`).
fn same_word(a: &str, b: &str) -> bool {
    let (a, b) = (a.trim_end_matches('s'), b.trim_end_matches('s'));
    a == b || (a.len().min(b.len()) >= 3 && (a.starts_with(b) || b.starts_with(a)))
}

/// `name: type // comment`, with a multi-line description on its own comment lines above.
fn member(pad: &str, key: &str, mut property: Out) -> String {
    let mut lines = String::new();
    if let Some(description) = property.description.take_if(|d| d.contains('\n')) {
        for line in description.lines() {
            lines.push_str(&format!("{pad}// {}\n", line.trim_end()));
        }
    }
    let comment = property.comment();
    lines.push_str(&format!(
        "{pad}{key}: {}",
        attach(&property.text, comment.as_deref())
    ));
    lines
}

/// Adds `// comment` to the first line of `text`, before any comment already there (an outer comment,
/// say a property's, comes before an inner one, say its items').
fn attach(text: &str, comment: Option<&str>) -> String {
    let Some(comment) = comment else {
        return text.to_owned();
    };
    let (first, rest) = match text.split_once('\n') {
        Some((first, rest)) => (first, Some(rest)),
        None => (text, None),
    };
    let first = match first.split_once(" // ") {
        Some((code, existing)) => format!("{code} // {comment}; {existing}"),
        None => format!("{first} // {comment}"),
    };
    match rest {
        Some(rest) => format!("{first}\n{rest}"),
        None => first,
    }
}

/// The main type (no name) or a declaration. A description goes on comment lines above an object type and
/// in the line's comment otherwise.
fn push_declaration(out: &mut String, name: Option<&str>, mut body: Out) {
    let inline = name.is_some()
        && !body.is_multiline()
        && !body.description.as_ref().is_some_and(|d| d.contains('\n'));
    if let Some(description) = body.description.take_if(|_| !inline) {
        for line in description.lines() {
            out.push_str(&format!("// {}\n", line.trim_end()));
        }
    }
    let text = attach(&body.text, body.comment().as_deref());
    match name {
        Some(name) => out.push_str(&format!("type {name} = {text}\n")),
        None => out.push_str(&format!("{text}\n")),
    }
}

/// Constraint and annotation keywords as short notes, in a fixed order.
fn notes(map: &Map<String, Value>) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(range) = range(map, "minLength", "maxLength", " chars") {
        notes.push(range);
    }
    if let Some(Value::String(pattern)) = map.get("pattern") {
        notes.push(format!("pattern {pattern}"));
    }
    if let Some(Value::String(format)) = map.get("format") {
        notes.push(format!("format {format}"));
    }
    if let Some(bounds) = numeric_bounds(map) {
        notes.push(bounds);
    }
    if let Some(Value::Number(n)) = map.get("multipleOf") {
        notes.push(format!("multiple of {n}"));
    }
    if let Some(range) = range(map, "minItems", "maxItems", " items") {
        notes.push(range);
    }
    if map.get("uniqueItems") == Some(&Value::Bool(true)) {
        notes.push("unique items".to_owned());
    }
    if let Some(range) = range(map, "minProperties", "maxProperties", " keys") {
        notes.push(range);
    }
    if let Some(Value::Object(discriminator)) = map.get("discriminator")
        && let Some(Value::String(property)) = discriminator.get("propertyName")
    {
        notes.push(format!("discriminated by {property:?}"));
    }
    match map.get("default") {
        None | Some(Value::Null) => {}
        Some(value) => notes.push(format!("default {value}")),
    }
    for flag in ["deprecated", "readOnly", "writeOnly"] {
        if map.get(flag) == Some(&Value::Bool(true)) {
            notes.push(flag.to_owned());
        }
    }
    if let Some(Value::Array(examples)) = map.get("examples") {
        let examples: Vec<String> = examples.iter().map(Value::to_string).collect();
        notes.push(format!("e.g. {}", examples.join(", ")));
    }
    // Anything else is shown as written, so no requirement is silently lost.
    for (key, value) in map {
        let known = STRUCTURAL.contains(&key.as_str())
            || matches!(
                key.as_str(),
                "minLength"
                    | "maxLength"
                    | "pattern"
                    | "format"
                    | "minimum"
                    | "maximum"
                    | "multipleOf"
                    | "minItems"
                    | "maxItems"
                    | "uniqueItems"
                    | "minProperties"
                    | "maxProperties"
                    | "discriminator"
                    | "default"
                    | "deprecated"
                    | "readOnly"
                    | "writeOnly"
                    | "examples"
            );
        if !known {
            notes.push(format!("{key} {value}"));
        }
    }
    notes
}

/// `1..=50 chars`, `≤50 chars`, `≥1 chars`.
fn range(map: &Map<String, Value>, min: &str, max: &str, unit: &str) -> Option<String> {
    match (
        map.get(min).filter(|v| v.is_number()),
        map.get(max).filter(|v| v.is_number()),
    ) {
        (Some(min), Some(max)) if min == max => Some(format!("exactly {min}{unit}")),
        (Some(min), Some(max)) => Some(format!("{min}..={max}{unit}")),
        (Some(min), None) => Some(format!("≥{min}{unit}")),
        (None, Some(max)) => Some(format!("≤{max}{unit}")),
        (None, None) => None,
    }
}

/// `0..=1`, `>0`, `≤100`, `>0, <1`; understands draft-04 boolean `exclusiveMinimum`/`exclusiveMaximum`.
fn numeric_bounds(map: &Map<String, Value>) -> Option<String> {
    let number = |key: &str| map.get(key).filter(|v| v.is_number());
    let flag = |key: &str| map.get(key) == Some(&Value::Bool(true));
    let low = match (number("exclusiveMinimum"), number("minimum")) {
        (Some(n), _) => Some((n, true)),
        (None, Some(n)) => Some((n, flag("exclusiveMinimum"))),
        (None, None) => None,
    };
    let high = match (number("exclusiveMaximum"), number("maximum")) {
        (Some(n), _) => Some((n, true)),
        (None, Some(n)) => Some((n, flag("exclusiveMaximum"))),
        (None, None) => None,
    };
    match (low, high) {
        (Some((lo, false)), Some((hi, false))) => Some(format!("{lo}..={hi}")),
        (low, high) => {
            let mut parts = Vec::new();
            if let Some((lo, exclusive)) = low {
                parts.push(format!("{}{lo}", if exclusive { ">" } else { "≥" }));
            }
            if let Some((hi, exclusive)) = high {
                parts.push(format!("{}{hi}", if exclusive { "<" } else { "≤" }));
            }
            (!parts.is_empty()).then(|| parts.join(", "))
        }
    }
}

/// The JSON pointer a local `$ref` names (`#/$defs/A` → `/$defs/A`), or `None` for other references.
fn ref_pointer(reference: &str) -> Option<String> {
    let pointer = percent_decode(reference.strip_prefix('#')?)?;
    (pointer.is_empty() || pointer.starts_with('/')).then_some(pointer)
}

fn escape_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// A property key as written in an object type: bare when it is an identifier, a JSON string otherwise.
fn quote_key(name: &str) -> String {
    if is_identifier(name) {
        name.to_owned()
    } else {
        Value::from(name).to_string()
    }
}

/// Counts a property schema towards sharing.
fn count_shared(shared: &mut HashMap<String, Shared>, property: &str, schema: &Value) {
    let Value::Object(map) = schema else { return };
    if map.contains_key("$ref") {
        return; // already a name
    }
    let key = schema.to_string();
    if key.len() < MIN_SHARED_LEN {
        return;
    }
    let first_seen = shared.len();
    let entry = shared.entry(key).or_insert_with(|| Shared {
        name: String::new(),
        property: property.to_owned(),
        schema: schema.clone(),
        uses: 0,
        first_seen,
    });
    entry.uses += 1;
}

/// `call_id` → `CallId`, `dry-run` → `DryRun`.
fn pascal_case(name: &str) -> String {
    let mut out = String::new();
    for part in name.split(|c: char| !c.is_ascii_alphanumeric()) {
        let mut chars = part.chars();
        if let Some(first) = chars.next() {
            out.push(first.to_ascii_uppercase());
            out.extend(chars);
        }
    }
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, 'T');
    }
    out
}

/// A definition name usable as a type name.
fn identifier(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests;

/// The JSON types of a schema's literals (`const`, or every `enum` value): `Some` only for a schema
/// that admits nothing else.
fn literal_types(schema: &Value) -> Option<Vec<&'static str>> {
    let map = schema.as_object()?;
    let values: Vec<&Value> = match (map.get("const"), map.get("enum")) {
        (Some(value), _) => vec![value],
        (None, Some(Value::Array(values))) if !values.is_empty() => values.iter().collect(),
        _ => return None,
    };
    Some(
        values
            .into_iter()
            .map(|v| match v {
                Value::Null => "null",
                Value::Bool(_) => "boolean",
                Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
                Value::Number(_) => "number",
                Value::String(_) => "string",
                Value::Array(_) => "array",
                Value::Object(_) => "object",
            })
            .collect(),
    )
}
