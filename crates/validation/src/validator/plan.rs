//! The validation plan: which discriminated unions the validator dispatches itself, and the rewritten
//! schema boon runs for everything else.
//!
//! A `oneOf`/`anyOf` whose branches all require the same property with a distinct `const` (or one-value
//! `enum`) can match at most the branch that the value of that property names; so can a union whose
//! branches have disjoint `type`s (`anyOf: [X, {"type": "null"}]`), by the instance's type. Dispatching
//! gives the same verdict as trying every branch, in a fraction of the time, and lets a violation name
//! the branch the model chose. Such a union is *planned* when every path from the root to it goes
//! through keywords the walker follows (`properties`, `items`, `prefixItems`, `allOf`, `$ref` and the
//! branches of other planned unions); its keyword is renamed in the rewritten schema so boon skips it,
//! and each branch is compiled on its own. Anything the walker cannot follow exactly (a union under
//! `not`, `if`, `patternProperties`, a plain `anyOf`...) stays with boon, untouched.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use claij_schema::pointer::push;
use serde_json::{Map, Value};

/// Keywords whose values are subschemas the walker does not follow.
const OPAQUE_SCHEMA: &[&str] = &[
    "additionalProperties",
    "additionalItems",
    "contains",
    "propertyNames",
    "if",
    "then",
    "else",
    "not",
    "unevaluatedProperties",
    "unevaluatedItems",
    "contentSchema",
];
/// Keywords whose values are maps of subschemas the walker does not follow.
const OPAQUE_MAP: &[&str] = &["patternProperties", "dependentSchemas", "dependencies"];
/// Keywords that make exact dispatch unsound or that the walker cannot resolve.
const DISABLING: &[&str] = &[
    "$dynamicRef",
    "$recursiveRef",
    "unevaluatedProperties",
    "unevaluatedItems",
];

/// What the validator runs.
#[derive(Debug)]
pub(crate) struct Plan {
    /// The schema with planned unions renamed (`oneOf` to `x-claij-oneOf`), so boon skips them.
    pub rewritten: Value,
    /// Pointers (into `rewritten`) of every planned branch, compiled alongside the root.
    pub branch_pointers: Vec<String>,
    /// How to reach planned unions from the root; `None` when there are none.
    pub root: Option<Arc<Walk>>,
    /// The planned unions: node pointer (in the schema as written) and keyword.
    pub planned: HashSet<UnionKey>,
}

/// The part of a schema that leads to planned unions.
#[derive(Debug, Default)]
pub(crate) struct Walk {
    pub props: Vec<(String, Arc<Walk>)>,
    /// Applies to array items from the given index on.
    pub items: Vec<(usize, Arc<Walk>)>,
    pub prefix: Vec<(usize, Arc<Walk>)>,
    pub unions: Vec<Arc<Union>>,
}

/// A planned discriminated union.
#[derive(Debug)]
pub(crate) struct Union {
    /// Pointer of the union keyword in the original schema (`/$defs/Call/oneOf`).
    pub schema_pointer: String,
    pub keyword: &'static str,
    /// What tells the branches apart.
    pub by: By,
    pub branches: Vec<Branch>,
}

/// How a planned union is discriminated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum By {
    /// The value of this required property (a `const` per branch).
    Prop(String),
    /// The JSON type of the instance (branches with disjoint `type`s, like `anyOf: [X, {"type": "null"}]`);
    /// each branch's value is the array of its type names.
    Type,
}

/// One branch of a planned union.
#[derive(Debug)]
pub(crate) struct Branch {
    pub value: Value,
    /// Index into [`Plan::branch_pointers`].
    pub index: usize,
    pub walk: Option<Arc<Walk>>,
}

/// A union found in the schema: node pointer and keyword.
pub(crate) type UnionKey = (String, &'static str);

struct Candidate {
    by: By,
    values: Vec<Value>,
}

impl Plan {
    /// The plan for `schema`: no planned unions (and the schema unchanged) whenever exact dispatch
    /// cannot be guaranteed.
    pub(super) fn new(schema: &Value, legacy_ref: bool) -> Plan {
        Self::build(schema, legacy_ref).unwrap_or_else(|| Plan {
            rewritten: schema.clone(),
            branch_pointers: Vec::new(),
            root: None,
            planned: HashSet::new(),
        })
    }

    /// Where the subschema at `pointer` (in the schema as written) is in [`Plan::rewritten`].
    pub(super) fn rewritten_pointer(&self, pointer: &str) -> String {
        if self.planned.is_empty() {
            return pointer.to_owned();
        }
        let mut original = String::new();
        let mut out = String::with_capacity(pointer.len() + 8);
        for token in pointer.split('/').skip(1) {
            let renamed = match token {
                "oneOf" | "anyOf" => {
                    let keyword = if token == "oneOf" { "oneOf" } else { "anyOf" };
                    self.planned
                        .contains(&(original.clone(), keyword))
                        .then(|| renamed(keyword))
                }
                _ => None,
            };
            out.push('/');
            out.push_str(renamed.unwrap_or(token));
            original.push('/');
            original.push_str(token);
        }
        out
    }

    fn build(schema: &Value, legacy_ref: bool) -> Option<Plan> {
        if !schema.is_object() || !optimizable(schema, true) {
            return None;
        }
        let mut candidates = HashMap::new();
        find_candidates(schema, schema, "", &mut candidates)?;
        if candidates.is_empty() {
            return None;
        }
        // Drop unions reachable through a path the walker does not follow, until none is.
        loop {
            let mut tainted = None;
            let mut seen = HashSet::new();
            taint(
                schema,
                "",
                false,
                &candidates,
                legacy_ref,
                &mut seen,
                &mut tainted,
            )?;
            match tainted {
                Some(key) => {
                    candidates.remove(&key);
                }
                None => break,
            }
            if candidates.is_empty() {
                return None;
            }
        }
        let mut builder = Builder {
            schema,
            candidates: &candidates,
            legacy_ref,
            memo: HashMap::new(),
            stack: Vec::new(),
            branch_pointers: Vec::new(),
            branch_index: HashMap::new(),
            planned: HashSet::new(),
        };
        let root = builder.walk("")?;
        let mut rewritten = schema.clone();
        // Deepest first, so renaming an outer union does not move the path to an inner one.
        let mut planned: Vec<&UnionKey> = builder.planned.iter().collect();
        planned.sort_by_key(|(node, _)| std::cmp::Reverse(node.len()));
        for (node, keyword) in planned {
            let target = rewritten.pointer_mut(node)?.as_object_mut()?;
            let branches = target.remove(*keyword)?;
            target.insert(renamed(keyword).to_owned(), branches);
        }
        let mut plan = Plan {
            rewritten,
            branch_pointers: Vec::new(),
            root,
            planned: builder.planned,
        };
        plan.branch_pointers = builder
            .branch_pointers
            .iter()
            .map(|p| plan.rewritten_pointer(p))
            .collect();
        Some(plan)
    }
}

fn renamed(keyword: &str) -> &'static str {
    if keyword == "oneOf" {
        "x-claij-oneOf"
    } else {
        "x-claij-anyOf"
    }
}

/// No keyword that defeats static dispatch, and no nested `$id` (it would change how `$ref`s resolve).
fn optimizable(value: &Value, root: bool) -> bool {
    match value {
        Value::Object(map) => {
            if DISABLING.iter().any(|k| map.contains_key(*k)) || (!root && map.contains_key("$id"))
            {
                return false;
            }
            map.values().all(|v| optimizable(v, false))
        }
        Value::Array(items) => items.iter().all(|v| optimizable(v, false)),
        _ => true,
    }
}

/// Resolves a local `$ref` to its pointer; `None` for anything else (then nothing is planned).
fn ref_target<'s>(root: &'s Value, reference: &str) -> Option<(String, &'s Value)> {
    let fragment = reference.strip_prefix('#')?;
    let pointer = if fragment.contains('%') {
        return None;
    } else {
        fragment.to_owned()
    };
    let target = root.pointer(&pointer)?;
    Some((pointer, target))
}

/// Every `oneOf`/`anyOf` in the schema whose branches are discriminated; `None` if a `$ref` cannot be
/// resolved locally.
fn find_candidates(
    root: &Value,
    value: &Value,
    at: &str,
    out: &mut HashMap<UnionKey, Candidate>,
) -> Option<()> {
    match value {
        Value::Object(map) => {
            if let Some(r) = map.get("$ref") {
                ref_target(root, r.as_str()?)?;
            }
            for keyword in ["oneOf", "anyOf"] {
                if let Some(Value::Array(branches)) = map.get(keyword) {
                    let found = discriminate(root, branches)
                        .or_else(|| discriminate_by_type(root, branches));
                    if let Some(c) = found {
                        out.insert((at.to_owned(), keyword), c);
                    }
                }
            }
            for (k, v) in map {
                find_candidates(root, v, &push(at, k), out)?;
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                find_candidates(root, v, &push(at, &i.to_string()), out)?;
            }
        }
        _ => {}
    }
    Some(())
}

/// The property (and its values, one per branch) that tells the branches apart, if there is one.
fn discriminate(root: &Value, branches: &[Value]) -> Option<Candidate> {
    let consts: Vec<Vec<(String, Value)>> = branches
        .iter()
        .map(|b| branch_consts(root, b, 0))
        .collect::<Option<_>>()?;
    let first = consts.first()?;
    'props: for (prop, _) in first {
        let mut values = Vec::with_capacity(consts.len());
        for branch in &consts {
            let value = branch.iter().find(|(p, _)| p == prop).map(|(_, v)| v)?;
            if values.contains(value) {
                continue 'props;
            }
            values.push(value.clone());
        }
        return Some(Candidate {
            by: By::Prop(prop.clone()),
            values,
        });
    }
    None
}

/// Branches whose `type`s do not overlap (`integer` overlaps `number`): the instance's type picks one.
fn discriminate_by_type(root: &Value, branches: &[Value]) -> Option<Candidate> {
    let mut values = Vec::with_capacity(branches.len());
    let mut all: Vec<&str> = Vec::new();
    for branch in branches {
        let mut target = branch;
        for _ in 0..16 {
            match target.get("$ref").and_then(Value::as_str) {
                Some(r) if target.get("type").is_none() => target = ref_target(root, r)?.1,
                _ => break,
            }
        }
        let types: Vec<&str> = match target.get("type")? {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().map(Value::as_str).collect::<Option<_>>()?,
            _ => return None,
        };
        for t in &types {
            let overlaps = |u: &&str| {
                u == t || matches!((*u, *t), ("integer", "number") | ("number", "integer"))
            };
            if all.iter().any(overlaps) {
                return None;
            }
        }
        all.extend(types.iter().copied());
        values.push(Value::Array(
            types
                .iter()
                .map(|t| Value::String((*t).to_owned()))
                .collect(),
        ));
    }
    Some(Candidate {
        by: By::Type,
        values,
    })
}

/// The required properties of a branch that carry a single allowed value, following `$ref`s.
fn branch_consts(root: &Value, branch: &Value, depth: u8) -> Option<Vec<(String, Value)>> {
    let map = branch.as_object()?;
    if depth > 16 {
        return None;
    }
    let mut out = Vec::new();
    let required: Vec<&str> = map
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if let Some(Value::Object(props)) = map.get("properties") {
        for (name, schema) in props {
            if !required.contains(&name.as_str()) {
                continue;
            }
            let single = schema.get("const").cloned().or_else(|| {
                match schema
                    .get("enum")
                    .and_then(Value::as_array)
                    .map(Vec::as_slice)
                {
                    Some([only]) => Some(only.clone()),
                    _ => None,
                }
            });
            if let Some(v) = single {
                out.push((name.clone(), v));
            }
        }
    }
    if let Some(Value::String(r)) = map.get("$ref") {
        let (_, target) = ref_target(root, r)?;
        out.extend(branch_consts(root, target, depth + 1)?);
    }
    Some(out)
}

/// Walks every subschema; records the first candidate reached through a path the walker does not follow.
fn taint(
    root: &Value,
    at: &str,
    tainted: bool,
    candidates: &HashMap<UnionKey, Candidate>,
    legacy_ref: bool,
    seen: &mut HashSet<(String, bool)>,
    found: &mut Option<UnionKey>,
) -> Option<()> {
    if found.is_some() || !seen.insert((at.to_owned(), tainted)) {
        return Some(());
    }
    let Some(Value::Object(map)) = root.pointer(at) else {
        return Some(());
    };
    let mut visit =
        |pointer: String, t: bool| taint(root, &pointer, t, candidates, legacy_ref, seen, found);
    if let Some(Value::String(r)) = map.get("$ref") {
        let (target, _) = ref_target(root, r)?;
        visit(target, tainted)?;
        if legacy_ref {
            return Some(());
        }
    }
    for keyword in ["oneOf", "anyOf"] {
        if let Some(Value::Array(branches)) = map.get(keyword) {
            let key = (at.to_owned(), keyword);
            let planned = candidates.contains_key(&key);
            if planned && tainted {
                *found = Some(key);
                return Some(());
            }
            let kw_at = push(at, keyword);
            for i in 0..branches.len() {
                visit(push(&kw_at, &i.to_string()), tainted || !planned)?;
            }
        }
    }
    for (k, v) in map {
        let k_at = push(at, k);
        match (k.as_str(), v) {
            ("properties", Value::Object(props)) => {
                for name in props.keys() {
                    visit(push(&k_at, name), tainted)?;
                }
            }
            ("items" | "prefixItems" | "allOf", Value::Array(items)) => {
                for i in 0..items.len() {
                    visit(push(&k_at, &i.to_string()), tainted)?;
                }
            }
            ("items", _) => visit(k_at, tainted)?,
            (k, Value::Object(m)) if OPAQUE_MAP.contains(&k) => {
                for name in m.keys() {
                    visit(push(&k_at, name), true)?;
                }
            }
            (k, _) if OPAQUE_SCHEMA.contains(&k) => visit(k_at, true)?,
            _ => {}
        }
    }
    Some(())
}

struct Builder<'s> {
    schema: &'s Value,
    candidates: &'s HashMap<UnionKey, Candidate>,
    legacy_ref: bool,
    memo: HashMap<String, Option<Arc<Walk>>>,
    stack: Vec<String>,
    branch_pointers: Vec<String>,
    branch_index: HashMap<String, usize>,
    planned: HashSet<UnionKey>,
}

impl Builder<'_> {
    /// The walk for the subschema at `at`; `None` inside `Some` when nothing below it is planned, and
    /// `None` outright on a `$ref` cycle (then nothing is planned at all).
    fn walk(&mut self, at: &str) -> Option<Option<Arc<Walk>>> {
        if let Some(done) = self.memo.get(at) {
            return Some(done.clone());
        }
        if self.stack.iter().any(|p| p == at) {
            return None;
        }
        self.stack.push(at.to_owned());
        let built = self.build(at);
        self.stack.pop();
        let built = built?;
        self.memo.insert(at.to_owned(), built.clone());
        Some(built)
    }

    fn build(&mut self, at: &str) -> Option<Option<Arc<Walk>>> {
        let schema = self.schema;
        let Some(Value::Object(map)) = schema.pointer(at) else {
            return Some(None);
        };
        let mut walk = Walk::default();
        if let Some(Value::String(r)) = map.get("$ref") {
            let (target, _) = ref_target(schema, r)?;
            let inner = self.walk(&target)?;
            if self.legacy_ref {
                return Some(inner);
            }
            merge(&mut walk, inner);
        }
        self.build_keywords(at, map, &mut walk)?;
        let empty = walk.props.is_empty()
            && walk.items.is_empty()
            && walk.prefix.is_empty()
            && walk.unions.is_empty();
        Some((!empty).then(|| Arc::new(walk)))
    }

    fn build_keywords(
        &mut self,
        at: &str,
        map: &Map<String, Value>,
        walk: &mut Walk,
    ) -> Option<()> {
        if let Some(Value::Object(props)) = map.get("properties") {
            for name in props.keys() {
                if let Some(w) = self.walk(&push(&push(at, "properties"), name))? {
                    walk.props.push((name.clone(), w));
                }
            }
        }
        let prefix_len = match map.get("prefixItems") {
            Some(Value::Array(items)) => {
                for i in 0..items.len() {
                    if let Some(w) = self.walk(&push(&push(at, "prefixItems"), &i.to_string()))? {
                        walk.prefix.push((i, w));
                    }
                }
                items.len()
            }
            _ => 0,
        };
        match map.get("items") {
            Some(Value::Array(items)) => {
                for i in 0..items.len() {
                    if let Some(w) = self.walk(&push(&push(at, "items"), &i.to_string()))? {
                        walk.prefix.push((i, w));
                    }
                }
            }
            Some(_) => {
                if let Some(w) = self.walk(&push(at, "items"))? {
                    walk.items.push((prefix_len, w));
                }
            }
            None => {}
        }
        if let Some(Value::Array(all)) = map.get("allOf") {
            for i in 0..all.len() {
                let inner = self.walk(&push(&push(at, "allOf"), &i.to_string()))?;
                merge(walk, inner);
            }
        }
        for keyword in ["oneOf", "anyOf"] {
            let key = (at.to_owned(), keyword);
            if let Some(c) = self.candidates.get(&key) {
                let union = self.union(at, keyword, c)?;
                self.planned.insert(key);
                walk.unions.push(Arc::new(union));
            }
        }
        Some(())
    }

    fn union(&mut self, at: &str, keyword: &'static str, c: &Candidate) -> Option<Union> {
        let mut branches = Vec::with_capacity(c.values.len());
        for (i, value) in c.values.iter().enumerate() {
            // Stored as written; `Plan::build` maps them into the rewritten schema at the end.
            let original = push(&push(at, keyword), &i.to_string());
            let next = self.branch_pointers.len();
            let index = *self.branch_index.entry(original.clone()).or_insert(next);
            if index == next {
                self.branch_pointers.push(original.clone());
            }
            let walk = self.walk(&original)?;
            branches.push(Branch {
                value: value.clone(),
                index,
                walk,
            });
        }
        Some(Union {
            schema_pointer: push(at, keyword),
            keyword,
            by: c.by.clone(),
            branches,
        })
    }
}

fn merge(walk: &mut Walk, inner: Option<Arc<Walk>>) {
    let Some(inner) = inner else { return };
    walk.props.extend(inner.props.iter().cloned());
    walk.items.extend(inner.items.iter().cloned());
    walk.prefix.extend(inner.prefix.iter().cloned());
    walk.unions.extend(inner.unions.iter().cloned());
}
