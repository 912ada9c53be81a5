//! The compiled is-valid check: the common, valid case at a fraction of boon's cost.
//!
//! The schema is compiled once into a graph of [`Node`]s, each a list of [`Check`]s that answer yes or
//! no and build nothing: no error tree, no instance locations, no annotations. It follows boon's
//! semantics keyword by keyword (number equality for `enum`/`const`, code points for string lengths,
//! ECMA 262 `\d`/`\w`/`\s` in patterns, draft-07's `$ref` hiding its siblings, ...) and the
//! equivalence is tested against boon on the official JSON-Schema-Test-Suite and on generated
//! instances.
//!
//! Unions are cheap: each branch carries the JSON types it can admit, so `anyOf: [T, {"type":
//! "null"}]` costs a type test, and a `oneOf`/`anyOf` whose branches all require one property with
//! distinct string constants (a tagged union) is dispatched on the value of that property, touching
//! only the chosen branch.
//!
//! What it does not implement it leaves to boon, never guessing: a subschema with `format`,
//! `unevaluated*`, `content*` or a `$ref` it cannot resolve locally becomes a [`Node::Defer`], validated
//! by boon on its own; a schema with dynamic references, anchors or embedded resources (`$id` below
//! the root), or of a draft other than 07 and 2020-12, is not compiled at all.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use claij_schema::{Draft, boon};
use regex::Regex;
use serde_json::{Map, Number, Value};

mod format;
mod pattern;

use pattern::Matcher;

/// Index of a node in [`Fast::nodes`].
type NodeId = usize;

/// Instance type bits; a number has [`NUMBER`], and [`INTEGER`] too when it has no fraction.
const NULL: u8 = 1;
const BOOLEAN: u8 = 2;
const INTEGER: u8 = 4;
const NUMBER: u8 = 8;
const STRING: u8 = 16;
const ARRAY: u8 = 32;
const OBJECT: u8 = 64;
const ANY: u8 = 127;

/// Recursion deeper than this (instance nesting plus `$ref`/applicator hops) is left to boon.
const MAX_DEPTH: u32 = 256;

/// Keywords that make the check leave the whole schema to boon: they change how references resolve
/// or depend on the dynamic path, which a subschema validated on its own would not see.
const GLOBAL: &[&str] = &[
    "$dynamicRef",
    "$dynamicAnchor",
    "$recursiveRef",
    "$recursiveAnchor",
    "$anchor",
];

/// Keywords the check does not implement: a subschema holding one is validated by boon.
const DEFER_2020: &[&str] = &[
    "format",
    "unevaluatedProperties",
    "unevaluatedItems",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
    "dependencies",
];
const DEFER_7: &[&str] = &["format", "contentEncoding", "contentMediaType"];

/// The compiled check of one schema.
#[derive(Debug)]
pub(crate) struct Fast {
    nodes: Vec<Node>,
    root: NodeId,
    /// boon's index of each deferred subschema, by [`Node::Defer`]'s number.
    deferred: Vec<boon::SchemaIndex>,
    /// The boon compilation those indexes are in, when it is not the validator's own.
    own: Option<claij_schema::CompiledSchema>,
}

/// A subschema. `repr(u8)`: an explicit one-byte tag, which the walk tests with one compare, where
/// a tag hidden in a `Vec`'s capacity (Rust's niche) takes several.
#[derive(Debug)]
#[repr(u8)]
enum Node {
    True,
    False,
    Checks(Vec<Check>),
    /// What [`Fast::shape`] makes of a `Checks` with one `type`: the instance's type is tested
    /// first, in the node walk, and the other checks only when it passes (none for a lone `type`).
    Typed(u8, Vec<Check>),
    /// Validated by boon: the index into [`Fast::deferred`].
    Defer(usize),
}

#[derive(Debug)]
enum Check {
    Type(u8),
    Const(Box<Value>),
    /// `enum`, with each value's [`print`] when all are strings (the common case, compared without
    /// [`equals`]).
    Enum {
        values: Vec<Value>,
        prints: Option<Vec<u64>>,
    },
    Ref(NodeId),
    MinProperties(usize),
    MaxProperties(usize),
    /// `required`: all `names` (what the schema says), and the `rest` this check tests itself, those
    /// without a subschema in the same schema's `properties` (the [`Props`] pass counts the others).
    Required {
        names: Vec<String>,
        rest: Vec<String>,
    },
    /// `properties` alone: only the named properties are looked at.
    Properties(Box<Props>),
    /// `properties` with `patternProperties` and/or `additionalProperties`: every property is.
    Object {
        properties: Box<Props>,
        patterns: Vec<(Matcher, NodeId)>,
        additional: Option<NodeId>,
    },
    PropertyNames(NodeId),
    /// `dependencies`, `dependentRequired`, `dependentSchemas`: when the property is present.
    Dependent(Vec<(String, Dependency)>),
    MinItems(usize),
    MaxItems(usize),
    UniqueItems,
    /// `prefixItems`/`items` (or draft-07 `items`/`additionalItems`): the first schemas by position,
    /// then `rest` for the others.
    Items {
        prefix: Vec<NodeId>,
        rest: Option<NodeId>,
        /// When `rest` is a lone `type` (or `true`): its types, tested without entering the node
        /// ([`Fast::leaves`]); 0 otherwise.
        rest_leaf: u8,
    },
    Contains {
        node: NodeId,
        min: Option<usize>,
        max: Option<usize>,
    },
    MinLength(usize),
    MaxLength(usize),
    /// Boxed: a `Check` stays small, with a one-byte tag the walk dispatches on.
    Pattern(Box<Matcher>),
    Minimum(f64),
    Maximum(f64),
    ExclusiveMinimum(f64),
    ExclusiveMaximum(f64),
    MultipleOf(f64),
    /// A `format` the check asserts itself ([`format::lookup`]).
    Format(fn(&str) -> bool),
    AllOf(Vec<NodeId>),
    AnyOf(Box<Union>),
    OneOf(Box<Union>),
    Not(NodeId),
    If {
        cond: NodeId,
        then: Option<NodeId>,
        otherwise: Option<NodeId>,
    },
}

/// The subschemas of `properties`, found by a scan when they are few (no hashing), else by a map;
/// with which of them the same schema's `required` names, so that the pass over the instance's
/// properties also counts the required ones present.
#[derive(Debug)]
struct Props {
    entries: Vec<Prop>,
    /// How many entries are required: the count a valid object reaches.
    required_count: usize,
    /// Name to position in `entries`, when there are too many to scan.
    map: Option<Table<usize>>,
}

/// One property of [`Props`], all a lookup and a test read, side by side.
#[derive(Debug)]
struct Prop {
    /// The name's [`print`], scanned before any name is compared.
    print: u64,
    name: String,
    node: NodeId,
    /// Whether `required` names it.
    required: bool,
    /// When `node` is a lone `type` (or `true`, [`ANY`]): its types, tested in the properties pass
    /// without entering the node ([`Fast::leaves`]); 0 otherwise.
    leaf: u8,
}

/// A name's length and first bytes in one word: unequal prints mean unequal names.
#[inline]
fn print(name: &str) -> u64 {
    let bytes = name.as_bytes();
    let head = match bytes {
        [a, b, c, d, ..] => [*a, *b, *c, *d],
        [a, b, c] => [*a, *b, *c, 0],
        [a, b] => [*a, *b, 0, 0],
        [a] => [*a, 0, 0, 0],
        [] => [0; 4],
    };
    ((bytes.len() as u64) << 32) | u64::from(u32::from_le_bytes(head))
}

impl Props {
    fn new(list: Vec<(String, NodeId)>, required: &[String]) -> Props {
        let map = (list.len() > SCAN).then(|| {
            list.iter()
                .enumerate()
                .map(|(i, (name, _))| (name.clone(), i))
                .collect()
        });
        let entries: Vec<Prop> = list
            .into_iter()
            .map(|(name, node)| Prop {
                print: print(&name),
                required: required.contains(&name),
                name,
                node,
                leaf: 0,
            })
            .collect();
        let required_count = entries.iter().filter(|e| e.required).count();
        Props {
            entries,
            required_count,
            map,
        }
    }

    fn each_node(&mut self, mut f: impl FnMut(&mut NodeId)) {
        for entry in &mut self.entries {
            f(&mut entry.node);
        }
    }

    /// The entry named `name`.
    #[inline]
    fn find(&self, name: &str) -> Option<(usize, &Prop)> {
        match &self.map {
            Some(map) => map
                .get(name)
                .and_then(|i| Some((*i, self.entries.get(*i)?))),
            None => {
                let key = print(name);
                self.entries
                    .iter()
                    .enumerate()
                    .find(|(_, e)| e.print == key && same(&e.name, name))
            }
        }
    }

    /// [`Props::find`], trying position `hint` first.
    #[inline]
    fn after(&self, hint: usize, name: &str) -> Option<(usize, &Prop)> {
        match self.entries.get(hint) {
            Some(e) if same(&e.name, name) => Some((hint, e)),
            _ => self.find(name),
        }
    }

    fn get(&self, name: &str) -> Option<NodeId> {
        self.find(name).map(|(_, e)| e.node)
    }

    /// Whether every property of `o` that has a subschema is valid against it, and every required
    /// one is present.
    #[inline]
    fn valid(&self, fast: &Fast, o: &Map<String, Value>, ctx: &mut Ctx<'_>) -> bool {
        let mut required = 0;
        // Objects mostly list their properties in the schema's order: the entry after the last one
        // found is tried first.
        let mut next = 0;
        o.iter().all(|(name, pv)| match self.after(next, name) {
            Some((i, e)) => {
                next = i + 1;
                required += usize::from(e.required);
                e.valid(fast, pv, ctx)
            }
            None => true,
        }) && required == self.required_count
    }
}

impl Prop {
    /// Whether `v` is valid against this property's subschema: a type test for a leaf.
    #[inline(always)]
    fn valid(&self, fast: &Fast, v: &Value, ctx: &mut Ctx<'_>) -> bool {
        if self.leaf != 0 {
            has_type(v, self.leaf)
        } else {
            fast.valid(self.node, v, ctx)
        }
    }
}

/// Up to this many entries, a linear scan comparing keys beats hashing them.
const SCAN: usize = 16;

/// The value of `key` in an object: a scan when it is small, a lookup otherwise.
#[inline]
fn lookup<'v>(o: &'v Map<String, Value>, key: &str) -> Option<&'v Value> {
    if o.len() <= SCAN {
        o.iter().find(|(k, _)| same(k, key)).map(|(_, v)| v)
    } else {
        o.get(key)
    }
}

/// Whether an object has `key`: a scan when it is small, a lookup otherwise.
fn has(o: &Map<String, Value>, key: &str) -> bool {
    if o.len() <= SCAN {
        o.keys().any(|k| same(k, key))
    } else {
        o.contains_key(key)
    }
}

/// String equality without a call to `memcmp` for the short strings keys and enum values are: a
/// length test, then two overlapping words.
#[inline]
fn same(a: &str, b: &str) -> bool {
    same_bytes(a.as_bytes(), b.as_bytes())
}

/// [`same`] on bytes.
#[inline]
fn same_bytes(x: &[u8], y: &[u8]) -> bool {
    let n = x.len();
    if n != y.len() {
        return false;
    }
    match n {
        0 => true,
        1..4 => x.iter().zip(y).all(|(a, b)| a == b),
        4..8 => word::<4>(x, 0) == word::<4>(y, 0) && word::<4>(x, n - 4) == word::<4>(y, n - 4),
        8..=16 => word::<8>(x, 0) == word::<8>(y, 0) && word::<8>(x, n - 8) == word::<8>(y, n - 8),
        _ => x == y,
    }
}

/// The `N` bytes of `bytes` at `at` (zeros past the end, which callers never reach).
#[inline]
fn word<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    bytes
        .get(at..at + N)
        .and_then(|w| <[u8; N]>::try_from(w).ok())
        .unwrap_or([0; N])
}

/// A map from the schema's names (property names, tag values): FNV-1a, which short keys hash
/// faster with than SipHash, and whose keys come from the schema, not from the instance.
type Table<V> = HashMap<String, V, BuildHasherDefault<Fnv>>;

/// FNV-1a, 64 bits.
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

impl Check {
    /// Calls `f` on every node this check refers to.
    fn each_node(&mut self, mut f: impl FnMut(&mut NodeId)) {
        match self {
            Check::Ref(id)
            | Check::PropertyNames(id)
            | Check::Not(id)
            | Check::Contains { node: id, .. } => f(id),
            Check::Properties(props) => props.each_node(f),
            Check::Object {
                properties,
                patterns,
                additional,
            } => {
                properties.each_node(&mut f);
                patterns.iter_mut().for_each(|(_, id)| f(id));
                additional.iter_mut().for_each(f);
            }
            Check::Dependent(deps) => {
                for (_, dep) in deps {
                    if let Dependency::Schema(id) = dep {
                        f(id);
                    }
                }
            }
            Check::Items { prefix, rest, .. } => {
                prefix.iter_mut().for_each(&mut f);
                rest.iter_mut().for_each(f);
            }
            Check::AllOf(all) => all.iter_mut().for_each(f),
            Check::AnyOf(union) | Check::OneOf(union) => union.branches.iter_mut().for_each(f),
            Check::If {
                cond,
                then,
                otherwise,
            } => {
                f(cond);
                then.iter_mut().for_each(&mut f);
                otherwise.iter_mut().for_each(f);
            }
            Check::Type(_)
            | Check::Const(_)
            | Check::Enum { .. }
            | Check::MinProperties(_)
            | Check::MaxProperties(_)
            | Check::Required { .. }
            | Check::MinItems(_)
            | Check::MaxItems(_)
            | Check::UniqueItems
            | Check::MinLength(_)
            | Check::MaxLength(_)
            | Check::Pattern(_)
            | Check::Minimum(_)
            | Check::Maximum(_)
            | Check::ExclusiveMinimum(_)
            | Check::ExclusiveMaximum(_)
            | Check::MultipleOf(_)
            | Check::Format(_) => {}
        }
    }
}

#[derive(Debug)]
enum Dependency {
    Required(Vec<String>),
    Schema(NodeId),
}

/// The branches of an `anyOf`/`oneOf`, with what lets most of them be skipped.
#[derive(Debug)]
struct Union {
    branches: Vec<NodeId>,
    /// The types each branch can admit (a branch whose mask misses the instance's type fails).
    masks: Vec<u8>,
    /// For a tagged union: the property every branch requires and the branch each value selects.
    tag: Option<(String, Table<usize>)>,
    /// The tag's values with their [`print`]s and branches, sorted by print: an instance's tag is
    /// found by a binary search on its print and a comparison of the names that share it.
    tag_sorted: Vec<(u64, String, usize)>,
    /// By instance [`kind`]: the one branch whose mask admits it, [`NONE`] or [`MANY`] ([`pick`]).
    pick: [u32; 6],
}

/// [`Union::pick`]: no branch admits the kind (the union fails), or more than one may.
const NONE: u32 = u32::MAX - 1;
const MANY: u32 = u32::MAX;

/// The type bits of each instance [`kind`] (a number is an integer or not: both bits).
const KINDS: [u8; 6] = [NULL, BOOLEAN, NUMBER | INTEGER, STRING, ARRAY, OBJECT];

/// The position of `v`'s JSON type in [`KINDS`].
#[inline]
fn kind(v: &Value) -> usize {
    match v {
        Value::Null => 0,
        Value::Bool(_) => 1,
        Value::Number(_) => 2,
        Value::String(_) => 3,
        Value::Array(_) => 4,
        Value::Object(_) => 5,
    }
}

/// For each instance kind, the only branch whose mask admits it, else [`NONE`] or [`MANY`]. A
/// mask admits a number if it has either number bit ([`has_type`] admits every number under
/// `NUMBER`, and the masks are widened so that `INTEGER` comes with it).
fn pick(masks: &[u8]) -> [u32; 6] {
    KINDS.map(|bits| {
        let mut admitting = masks.iter().enumerate().filter(|(_, m)| **m & bits != 0);
        match (admitting.next(), admitting.next()) {
            (None, _) => NONE,
            (Some((i, _)), None) => u32::try_from(i).unwrap_or(MANY),
            (Some(_), Some(_)) => MANY,
        }
    })
}

/// State of one check: the depth reached, and whether it gave up.
struct Ctx<'a> {
    schemas: &'a boon::Schemas,
    depth: u32,
    unsure: bool,
}

impl Fast {
    /// Compiles `schema`; `None` when it must be left to boon entirely. The second value lists the
    /// JSON pointers of the subschemas left to boon, whose boon indexes [`Fast::set_deferred`] takes.
    pub(crate) fn compile(schema: &Value, draft: Draft) -> Option<(Fast, Vec<String>)> {
        let defer = match draft {
            Draft::Draft2020_12 => DEFER_2020,
            Draft::Draft7 => DEFER_7,
            _ => return None,
        };
        if has_global(schema, true) {
            return None;
        }
        let mut compiler = Compiler {
            schema,
            legacy: draft == Draft::Draft7,
            defer,
            nodes: Vec::new(),
            ids: HashMap::new(),
            queue: Vec::new(),
            deferred: Vec::new(),
        };
        let root = compiler.node("");
        while let Some((id, at)) = compiler.queue.pop() {
            let node = compiler.compile(&at);
            compiler.nodes[id] = node;
        }
        let mut fast = Fast {
            nodes: compiler.nodes,
            root,
            deferred: Vec::new(),
            own: None,
        };
        fast.skip_bare_refs();
        fast.plan_unions();
        fast.shape();
        fast.leaves();
        Some((fast, compiler.deferred))
    }

    /// boon's indexes of the deferred subschemas, in the order [`Fast::compile`] listed them, in
    /// `own` when given, else in the schemas [`Fast::is_valid`] is passed. They must be compiled from
    /// the schema as written (not a rewrite that hides some keywords from boon).
    pub(crate) fn set_deferred(
        &mut self,
        indexes: Vec<boon::SchemaIndex>,
        own: Option<claij_schema::CompiledSchema>,
    ) {
        self.deferred = indexes;
        self.own = own;
    }

    /// How many subschemas boon validates.
    pub(crate) fn deferred(&self) -> usize {
        self.nodes
            .iter()
            .filter(|n| matches!(n, Node::Defer(_)))
            .count()
    }

    /// Whether `value` is valid; `None` when the check gave up (too deep) and boon must decide.
    pub(crate) fn is_valid(&self, value: &Value, schemas: &boon::Schemas) -> Option<bool> {
        let schemas = self.own.as_ref().map_or(schemas, |own| own.as_boon().0);
        let mut ctx = Ctx {
            schemas,
            depth: 0,
            unsure: false,
        };
        let valid = self.valid(self.root, value, &mut ctx);
        (!ctx.unsure).then_some(valid)
    }

    fn valid(&self, id: NodeId, v: &Value, ctx: &mut Ctx<'_>) -> bool {
        let Some(node) = self.nodes.get(id) else {
            ctx.unsure = true;
            return false;
        };
        match node {
            Node::True => true,
            Node::False => false,
            Node::Defer(k) => self.defer(*k, v, ctx),
            Node::Typed(types, checks) => {
                has_type(v, *types) && (checks.is_empty() || self.checks(checks, v, ctx))
            }
            Node::Checks(checks) => self.checks(checks, v, ctx),
        }
    }

    /// Whether boon finds `v` valid against deferred subschema `k` (out of line: the node walk
    /// stays small).
    #[cold]
    #[inline(never)]
    fn defer(&self, k: usize, v: &Value, ctx: &mut Ctx<'_>) -> bool {
        match self.deferred.get(k) {
            Some(index) => ctx.schemas.validate(v, *index).is_ok(),
            None => {
                ctx.unsure = true;
                false
            }
        }
    }

    /// Whether `v` passes every one of a node's `checks`.
    #[inline]
    fn checks(&self, checks: &[Check], v: &Value, ctx: &mut Ctx<'_>) -> bool {
        if ctx.depth >= MAX_DEPTH || ctx.unsure {
            ctx.unsure = true;
            return false;
        }
        ctx.depth += 1;
        let ok = checks.iter().all(|c| self.check(c, v, ctx));
        ctx.depth -= 1;
        ok
    }

    /// The run-time form of the nodes, once unions are planned (the planning reads `Check::Type`
    /// and `Check::Required`): a node with one `type` becomes [`Node::Typed`], and a `required`
    /// whose names all have a subschema (counted by the pass over the properties) is dropped.
    fn shape(&mut self) {
        for node in &mut self.nodes {
            let Node::Checks(checks) = node else { continue };
            checks.retain(|c| !matches!(c, Check::Required { rest, .. } if rest.is_empty()));
            let types: Vec<u8> = checks
                .iter()
                .filter_map(|c| match c {
                    Check::Type(t) => Some(*t),
                    _ => None,
                })
                .collect();
            if let [types] = types.as_slice() {
                let types = *types;
                let mut rest = std::mem::take(checks);
                rest.retain(|c| !matches!(c, Check::Type(_)));
                *node = Node::Typed(types, rest);
            } else if checks.is_empty() {
                *node = Node::True;
            }
        }
    }

    /// Marks each property, and each array's items, whose subschema is a lone `type` (or `true`) a
    /// leaf ([`Prop::leaf`], `rest_leaf`), once the nodes have their run-time form.
    fn leaves(&mut self) {
        let lone: Vec<u8> = self
            .nodes
            .iter()
            .map(|node| match node {
                Node::Typed(types, checks) if checks.is_empty() => *types,
                Node::True => ANY,
                _ => 0,
            })
            .collect();
        for node in &mut self.nodes {
            let (Node::Checks(checks) | Node::Typed(_, checks)) = node else {
                continue;
            };
            for check in checks {
                match check {
                    Check::Properties(props)
                    | Check::Object {
                        properties: props, ..
                    } => {
                        for entry in &mut props.entries {
                            entry.leaf = lone.get(entry.node).copied().unwrap_or(0);
                        }
                    }
                    Check::Items {
                        rest: Some(rest),
                        rest_leaf,
                        ..
                    } => *rest_leaf = lone.get(*rest).copied().unwrap_or(0),
                    _ => {}
                }
            }
        }
    }

    #[inline(always)]
    fn check(&self, check: &Check, v: &Value, ctx: &mut Ctx<'_>) -> bool {
        match (check, v) {
            (Check::Type(mask), _) => has_type(v, *mask),
            (Check::Const(c), _) => match (&**c, v) {
                // A tag's `const`: two strings, compared without the call.
                (Value::String(c), Value::String(s)) => same(c, s),
                (c, v) => equals(v, c),
            },
            (
                Check::Enum {
                    values,
                    prints: Some(prints),
                },
                _,
            ) => match v {
                Value::String(s) => string_enum(prints, values, s),
                _ => false,
            },
            (Check::Enum { values, .. }, _) => values.iter().any(|e| equals(e, v)),
            (Check::Ref(id), _) => self.valid(*id, v, ctx),
            (Check::AllOf(all), _) => all.iter().all(|id| self.valid(*id, v, ctx)),
            (Check::AnyOf(union), _) => self.any_of(union, v, ctx),
            (Check::OneOf(union), _) => self.one_of(union, v, ctx),
            (Check::Not(id), _) => !self.valid(*id, v, ctx),
            (
                Check::If {
                    cond,
                    then,
                    otherwise,
                },
                _,
            ) => {
                let next = if self.valid(*cond, v, ctx) {
                    then
                } else {
                    otherwise
                };
                next.is_none_or(|id| self.valid(id, v, ctx))
            }
            (Check::MinProperties(min), Value::Object(o)) => o.len() >= *min,
            (Check::MaxProperties(max), Value::Object(o)) => o.len() <= *max,
            (Check::Required { rest, .. }, Value::Object(o)) => rest.iter().all(|n| has(o, n)),
            (Check::Properties(props), Value::Object(o)) => props.valid(self, o, ctx),
            (
                Check::Object {
                    properties,
                    patterns,
                    additional,
                },
                Value::Object(o),
            ) => {
                let mut required = 0;
                o.iter().all(|(name, pv)| {
                    let mut evaluated = false;
                    if let Some((_, e)) = properties.find(name) {
                        evaluated = true;
                        required += usize::from(e.required);
                        if !e.valid(self, pv, ctx) {
                            return false;
                        }
                    }
                    for (regex, id) in patterns {
                        if regex.is_match(name) {
                            evaluated = true;
                            if !self.valid(*id, pv, ctx) {
                                return false;
                            }
                        }
                    }
                    evaluated || additional.is_none_or(|id| self.valid(id, pv, ctx))
                }) && required == properties.required_count
            }
            (Check::PropertyNames(id), Value::Object(o)) => o
                .keys()
                .all(|k| self.valid(*id, &Value::String(k.clone()), ctx)),
            (Check::Dependent(deps), Value::Object(o)) => deps.iter().all(|(prop, dep)| {
                !o.contains_key(prop)
                    || match dep {
                        Dependency::Required(names) => names.iter().all(|n| has(o, n)),
                        Dependency::Schema(id) => self.valid(*id, v, ctx),
                    }
            }),
            (Check::MinItems(min), Value::Array(a)) => a.len() >= *min,
            (Check::MaxItems(max), Value::Array(a)) => a.len() <= *max,
            (Check::UniqueItems, Value::Array(a)) => {
                !(0..a.len()).any(|i| a[i + 1..].iter().any(|b| equals(&a[i], b)))
            }
            (
                Check::Items {
                    prefix,
                    rest,
                    rest_leaf,
                },
                Value::Array(a),
            ) => a.iter().enumerate().all(|(i, item)| match prefix.get(i) {
                Some(id) => self.valid(*id, item, ctx),
                None if *rest_leaf != 0 => has_type(item, *rest_leaf),
                None => rest.is_none_or(|id| self.valid(id, item, ctx)),
            }),
            (Check::Contains { node, min, max }, Value::Array(a)) => {
                let mut matched = 0;
                for item in a {
                    if self.valid(*node, item, ctx) {
                        matched += 1;
                    }
                }
                matched >= min.unwrap_or(1) && max.is_none_or(|max| matched <= max)
            }
            // A character takes at most four bytes: a string of `4 * min` bytes has `min` of them.
            (Check::MinLength(min), Value::String(s)) => {
                s.len() >= *min && (s.len() >= min.saturating_mul(4) || s.chars().count() >= *min)
            }
            (Check::MaxLength(max), Value::String(s)) => {
                s.len() <= *max || s.chars().count() <= *max
            }
            (Check::Pattern(regex), Value::String(s)) => regex.is_match(s),
            (Check::Format(check), Value::String(s)) => check(s),
            (Check::Minimum(min), Value::Number(n)) => as_f64(n) >= *min,
            (Check::Maximum(max), Value::Number(n)) => as_f64(n) <= *max,
            (Check::ExclusiveMinimum(min), Value::Number(n)) => as_f64(n) > *min,
            (Check::ExclusiveMaximum(max), Value::Number(n)) => as_f64(n) < *max,
            (Check::MultipleOf(m), Value::Number(n)) => (as_f64(n) / m).fract() == 0.0,
            _ => true,
        }
    }

    fn candidates<'u>(
        &self,
        union: &'u Union,
        v: &'u Value,
    ) -> Result<Option<usize>, impl Iterator<Item = NodeId> + 'u> {
        if let (Some((prop, table)), Value::Object(o)) = (&union.tag, v) {
            // Every branch requires `prop` to hold its own string: at most one can match.
            return Ok(match lookup(o, prop) {
                Some(Value::String(tag)) if union.tag_sorted.len() == table.len() => {
                    let key = print(tag);
                    let sorted = &union.tag_sorted;
                    let first = sorted.partition_point(|(p, _, _)| *p < key);
                    sorted
                        .get(first..)
                        .unwrap_or_default()
                        .iter()
                        .take_while(|(p, _, _)| *p == key)
                        .find(|(_, value, _)| same(value, tag))
                        .map(|(_, _, branch)| *branch)
                }
                Some(Value::String(tag)) => table.get(tag.as_str()).copied(),
                _ => None,
            });
        }
        Err(union
            .branches
            .iter()
            .zip(&union.masks)
            .filter(move |(_, mask)| has_type(v, **mask))
            .map(|(id, _)| *id))
    }

    /// The branch [`Union::pick`] settles the union on: `Some(None)` when no branch admits `v`'s
    /// type, `None` when it takes more than a type test (or the union is tagged).
    #[inline]
    fn picked(union: &Union, v: &Value) -> Option<Option<NodeId>> {
        if union.tag.is_some() {
            return None;
        }
        match union.pick.get(kind(v)).copied().unwrap_or(MANY) {
            MANY => None,
            NONE => Some(None),
            i => Some(union.branches.get(i as usize).copied()),
        }
    }

    fn any_of(&self, union: &Union, v: &Value, ctx: &mut Ctx<'_>) -> bool {
        if let Some(branch) = Self::picked(union, v) {
            return branch.is_some_and(|id| self.valid(id, v, ctx));
        }
        match self.candidates(union, v) {
            Ok(branch) => branch.is_some_and(|i| self.valid(union.branches[i], v, ctx)),
            Err(mut branches) => branches.any(|id| self.valid(id, v, ctx)),
        }
    }

    fn one_of(&self, union: &Union, v: &Value, ctx: &mut Ctx<'_>) -> bool {
        // The other branches cannot admit `v`: exactly one holds when the picked one does.
        if let Some(branch) = Self::picked(union, v) {
            return branch.is_some_and(|id| self.valid(id, v, ctx));
        }
        match self.candidates(union, v) {
            Ok(branch) => branch.is_some_and(|i| self.valid(union.branches[i], v, ctx)),
            Err(branches) => {
                let mut matched = 0;
                for id in branches {
                    if self.valid(id, v, ctx) {
                        matched += 1;
                        if matched > 1 {
                            return false;
                        }
                    }
                }
                matched == 1
            }
        }
    }

    /// Points every reference to a node that is nothing but a `$ref` (a property's `{"$ref": ...,
    /// "description": ...}`) at what that `$ref` names, saving a hop per value; a cycle of bare
    /// references is left as it is (the depth limit ends it).
    fn skip_bare_refs(&mut self) {
        let target = |id: NodeId| match self.nodes.get(id) {
            Some(Node::Checks(checks)) => match checks.as_slice() {
                [Check::Ref(next)] => Some(*next),
                _ => None,
            },
            _ => None,
        };
        let resolved: Vec<NodeId> = (0..self.nodes.len())
            .map(|start| {
                let mut id = start;
                for _ in 0..32 {
                    match target(id) {
                        Some(next) => id = next,
                        None => return id,
                    }
                }
                start
            })
            .collect();
        let map = |id: &mut NodeId| {
            if let Some(to) = resolved.get(*id) {
                *id = *to;
            }
        };
        self.root = resolved.get(self.root).copied().unwrap_or(self.root);
        for node in &mut self.nodes {
            let Node::Checks(checks) = node else { continue };
            for check in checks {
                check.each_node(map);
            }
        }
    }

    /// Fills in each union's branch masks and tag.
    fn plan_unions(&mut self) {
        let mut plans = Vec::new();
        for (id, node) in self.nodes.iter().enumerate() {
            let Node::Checks(checks) = node else { continue };
            for (at, check) in checks.iter().enumerate() {
                if let Check::AnyOf(u) | Check::OneOf(u) = check {
                    let masks: Vec<u8> = u.branches.iter().map(|b| self.mask(*b, 0)).collect();
                    let tag = self.tag(&u.branches);
                    plans.push((id, at, masks, tag));
                }
            }
        }
        for (id, at, masks, tag) in plans {
            if let Some(Node::Checks(checks)) = self.nodes.get_mut(id)
                && let Some(Check::AnyOf(u) | Check::OneOf(u)) = checks.get_mut(at)
            {
                u.pick = pick(&masks);
                u.masks = masks;
                let mut sorted: Vec<(u64, String, usize)> =
                    tag.as_ref().map_or_else(Vec::new, |(_, table)| {
                        table
                            .iter()
                            .map(|(value, branch)| (print(value), value.clone(), *branch))
                            .collect()
                    });
                sorted.sort_unstable();
                u.tag_sorted = sorted;
                u.tag = tag;
            }
        }
    }

    /// The checks that hold for every instance `id` accepts: its own, and those of the schemas it
    /// refers to and the `allOf` it holds, transitively.
    fn facts<'s>(&'s self, id: NodeId, depth: u32, out: &mut Vec<&'s Check>) {
        if depth > 16 {
            return;
        }
        if let Some(Node::Checks(checks) | Node::Typed(_, checks)) = self.nodes.get(id) {
            for c in checks {
                out.push(c);
                match c {
                    Check::Ref(target) => self.facts(*target, depth + 1, out),
                    Check::AllOf(all) => {
                        for a in all {
                            self.facts(*a, depth + 1, out);
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    /// The types a node can admit (a superset).
    fn mask(&self, id: NodeId, depth: u32) -> u8 {
        match self.nodes.get(id) {
            Some(Node::False) => 0,
            Some(node @ (Node::Checks(_) | Node::Typed(..))) => {
                let mut facts = Vec::new();
                self.facts(id, depth, &mut facts);
                let own = match node {
                    Node::Typed(t, _) => widen(*t),
                    _ => ANY,
                };
                facts.iter().fold(own, |mask, c| match c {
                    Check::Type(t) => mask & widen(*t),
                    Check::Const(v) => mask & type_bits(v),
                    Check::Enum { values, .. } => {
                        mask & values.iter().fold(0, |m, v| m | type_bits(v))
                    }
                    _ => mask,
                })
            }
            _ => ANY,
        }
    }

    /// The property that tells the branches apart, and the branch each of its values selects.
    fn tag(&self, branches: &[NodeId]) -> Option<(String, Table<usize>)> {
        let facts: Vec<Vec<&Check>> = branches
            .iter()
            .map(|b| {
                let mut out = Vec::new();
                self.facts(*b, 0, &mut out);
                out
            })
            .collect();
        let first = facts.first()?;
        let names = first.iter().filter_map(|c| match c {
            Check::Required { names, .. } => Some(names),
            _ => None,
        });
        for name in names.flatten() {
            let mut table = Table::with_capacity_and_hasher(branches.len(), Default::default());
            let all = facts.iter().enumerate().all(|(i, f)| {
                self.tag_value(f, name)
                    .is_some_and(|value| table.insert(value.to_owned(), i).is_none())
            });
            if all {
                return Some((name.clone(), table));
            }
        }
        None
    }

    /// The one string a branch requires `name` to hold, if it requires one.
    fn tag_value<'s>(&'s self, facts: &[&'s Check], name: &str) -> Option<&'s str> {
        let required = facts
            .iter()
            .any(|c| matches!(c, Check::Required { names, .. } if names.iter().any(|n| n == name)));
        if !required {
            return None;
        }
        facts.iter().find_map(|c| {
            let id = match c {
                Check::Properties(props)
                | Check::Object {
                    properties: props, ..
                } => props.get(name),
                _ => None,
            }?;
            let mut inner = Vec::new();
            self.facts(id, 0, &mut inner);
            inner.iter().find_map(|c| match c {
                Check::Const(c) => c.as_str(),
                Check::Enum { values, .. } => match values.as_slice() {
                    [Value::String(s)] => Some(s.as_str()),
                    _ => None,
                },
                _ => None,
            })
        })
    }
}

/// `integer` in a `type` admits numbers too (without a fraction, but the mask is a superset).
fn widen(mask: u8) -> u8 {
    if mask & INTEGER != 0 {
        mask | NUMBER
    } else {
        mask
    }
}

/// Whether `v` is of one of the types of `mask`, without testing a number for a fraction when the
/// mask admits any number.
#[inline]
fn has_type(v: &Value, mask: u8) -> bool {
    match v {
        Value::Number(n) => mask & NUMBER != 0 || (mask & INTEGER != 0 && is_integer(n)),
        other => type_bits(other) & mask != 0,
    }
}

fn type_bits(v: &Value) -> u8 {
    match v {
        Value::Null => NULL,
        Value::Bool(_) => BOOLEAN,
        Value::Number(n) if is_integer(n) => NUMBER | INTEGER,
        Value::Number(_) => NUMBER,
        Value::String(_) => STRING,
        Value::Array(_) => ARRAY,
        Value::Object(_) => OBJECT,
    }
}

/// Whether `s` is one of a string `enum`'s `values`, whose [`print`]s are `prints`.
#[inline(always)]
fn string_enum(prints: &[u64], values: &[Value], s: &str) -> bool {
    let key = print(s);
    for (p, e) in prints.iter().zip(values) {
        if *p == key && matches!(e, Value::String(e) if same(e, s)) {
            return true;
        }
    }
    false
}

fn is_integer(n: &Number) -> bool {
    n.is_i64() || n.is_u64() || n.as_f64().is_some_and(integral)
}

/// `f.fract() == 0.0` without `trunc` (a library call on the baseline x86-64 this builds for): a
/// float of magnitude 2^52 or more has no fraction bits, a smaller one round-trips through `i64`.
#[inline]
fn integral(f: f64) -> bool {
    if f.abs() < 4_503_599_627_370_496.0 {
        (f as i64) as f64 == f
    } else {
        f.is_finite()
    }
}

fn as_f64(n: &Number) -> f64 {
    n.as_f64().unwrap_or(f64::NAN)
}

/// JSON Schema equality, as boon has it: numbers by value (`1` equals `1.0`), objects regardless of
/// key order.
fn equals(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => {
            if let (Some(x), Some(y)) = (x.as_u64(), y.as_u64()) {
                return x == y;
            }
            if let (Some(x), Some(y)) = (x.as_i64(), y.as_i64()) {
                return x == y;
            }
            if let (Some(x), Some(y)) = (x.as_f64(), y.as_f64()) {
                return x == y;
            }
            false
        }
        (Value::String(x), Value::String(y)) => same(x, y),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| equals(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, xv)| y.get(k).is_some_and(|yv| equals(xv, yv)))
        }
        _ => false,
    }
}

/// Whether a keyword of [`GLOBAL`], or an `$id` below the root, appears anywhere.
fn has_global(value: &Value, root: bool) -> bool {
    match value {
        Value::Object(map) => {
            GLOBAL.iter().any(|k| map.contains_key(*k))
                || (!root && map.get("$id").is_some_and(Value::is_string))
                || (root
                    && map
                        .get("$id")
                        .and_then(Value::as_str)
                        .is_some_and(|id| id.starts_with('#')))
                || map.values().any(|v| has_global(v, false))
        }
        Value::Array(items) => items.iter().any(|v| has_global(v, false)),
        _ => false,
    }
}

struct Compiler<'s> {
    schema: &'s Value,
    legacy: bool,
    defer: &'static [&'static str],
    nodes: Vec<Node>,
    ids: HashMap<String, NodeId>,
    queue: Vec<(NodeId, String)>,
    /// Pointers of the deferred subschemas.
    deferred: Vec<String>,
}

impl Compiler<'_> {
    /// The node for the subschema at `at`, compiled later if new.
    fn node(&mut self, at: &str) -> NodeId {
        if let Some(id) = self.ids.get(at) {
            return *id;
        }
        let id = self.nodes.len();
        self.nodes.push(Node::True);
        self.ids.insert(at.to_owned(), id);
        self.queue.push((id, at.to_owned()));
        id
    }

    fn child(&mut self, at: &str, keyword: &str) -> NodeId {
        self.node(&claij_schema::pointer::push(at, keyword))
    }

    fn defer(&mut self, at: &str) -> Node {
        self.deferred.push(at.to_owned());
        Node::Defer(self.deferred.len() - 1)
    }

    fn compile(&mut self, at: &str) -> Node {
        let map = match self.schema.pointer(at) {
            Some(Value::Bool(true)) => return Node::True,
            Some(Value::Bool(false)) => return Node::False,
            Some(Value::Object(map)) => map,
            _ => return self.defer(at),
        };
        if map.is_empty() {
            return Node::True;
        }
        // A `format` of [`format::lookup`]'s is checked here; any other keyword of `defer`, or
        // another format, leaves the subschema to boon.
        let format = match map.get("format") {
            Some(Value::String(name)) => format::lookup(name),
            _ => None,
        };
        if self
            .defer
            .iter()
            .any(|k| map.contains_key(*k) && !(*k == "format" && format.is_some()))
        {
            return self.defer(at);
        }
        let mut checks = Vec::new();
        if let Some(r) = map.get("$ref") {
            let Some(target) = r.as_str().and_then(local_pointer) else {
                return self.defer(at);
            };
            if self.schema.pointer(&target).is_none() {
                return self.defer(at);
            }
            checks.push(Check::Ref(self.node(&target)));
            if self.legacy {
                // Draft-07: every other keyword beside `$ref` is ignored.
                return Node::Checks(checks);
            }
        }
        match self.keywords(at, map, &mut checks) {
            Some(()) if checks.is_empty() => Node::True,
            Some(()) => Node::Checks(checks),
            None => self.defer(at),
        }
    }

    /// The checks of a schema object, in boon's order; `None` when boon must take it.
    fn keywords(
        &mut self,
        at: &str,
        map: &Map<String, Value>,
        checks: &mut Vec<Check>,
    ) -> Option<()> {
        let push = claij_schema::pointer::push;
        if let Some(t) = map.get("type") {
            let names: Vec<&Value> = match t {
                Value::Array(names) => names.iter().collect(),
                one => vec![one],
            };
            let mask = names.iter().fold(0, |mask, name| {
                mask | match name.as_str() {
                    Some("null") => NULL,
                    Some("boolean") => BOOLEAN,
                    Some("integer") => INTEGER,
                    Some("number") => NUMBER,
                    Some("string") => STRING,
                    Some("array") => ARRAY,
                    Some("object") => OBJECT,
                    _ => 0,
                }
            });
            if mask != 0 {
                checks.push(Check::Type(mask));
            }
        }
        if let Some(c) = map.get("const") {
            checks.push(Check::Const(Box::new(c.clone())));
        }
        if let Some(Value::Array(values)) = map.get("enum") {
            let prints = values
                .iter()
                .map(|v| v.as_str().map(print))
                .collect::<Option<Vec<u64>>>();
            checks.push(Check::Enum {
                values: values.clone(),
                prints,
            });
        }
        // Objects.
        if let Some(n) = usize_of(map.get("minProperties")) {
            checks.push(Check::MinProperties(n));
        }
        if let Some(n) = usize_of(map.get("maxProperties")) {
            checks.push(Check::MaxProperties(n));
        }
        let required: Vec<String> = match map.get("required") {
            Some(Value::Array(names)) => names
                .iter()
                .filter_map(|n| n.as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        };
        let mut properties = Vec::new();
        if let Some(Value::Object(props)) = map.get("properties") {
            let base = push(at, "properties");
            for name in props.keys() {
                properties.push((name.clone(), self.child(&base, name)));
            }
        }
        let mut patterns = Vec::new();
        if let Some(Value::Object(props)) = map.get("patternProperties") {
            let base = push(at, "patternProperties");
            for name in props.keys() {
                patterns.push((ecma_matcher(name)?, self.child(&base, name)));
            }
        }
        let additional = map
            .get("additionalProperties")
            .map(|_| self.child(at, "additionalProperties"));
        if !required.is_empty() {
            // The required names with a subschema are counted by the pass over the properties.
            let rest = required
                .iter()
                .filter(|n| !properties.iter().any(|(p, _)| p == *n))
                .cloned()
                .collect();
            checks.push(Check::Required {
                names: required.clone(),
                rest,
            });
        }
        if patterns.is_empty() && additional.is_none() {
            if !properties.is_empty() {
                checks.push(Check::Properties(Box::new(Props::new(
                    properties, &required,
                ))));
            }
        } else {
            checks.push(Check::Object {
                properties: Box::new(Props::new(properties, &required)),
                patterns,
                additional,
            });
        }
        if map.contains_key("propertyNames") {
            checks.push(Check::PropertyNames(self.child(at, "propertyNames")));
        }
        let mut dependent = Vec::new();
        let dependency_keywords: &[&str] = if self.legacy {
            &["dependencies"]
        } else {
            &["dependentSchemas", "dependentRequired"]
        };
        for keyword in dependency_keywords {
            if let Some(Value::Object(deps)) = map.get(*keyword) {
                let base = push(at, keyword);
                for (prop, dep) in deps {
                    let dep = match dep {
                        Value::Array(names) if *keyword != "dependentSchemas" => {
                            Dependency::Required(
                                names
                                    .iter()
                                    .filter_map(|n| n.as_str().map(str::to_owned))
                                    .collect(),
                            )
                        }
                        _ if *keyword == "dependentRequired" => continue,
                        _ => Dependency::Schema(self.child(&base, prop)),
                    };
                    dependent.push((prop.clone(), dep));
                }
            }
        }
        if !dependent.is_empty() {
            checks.push(Check::Dependent(dependent));
        }
        // Arrays.
        if let Some(n) = usize_of(map.get("minItems")) {
            checks.push(Check::MinItems(n));
        }
        if let Some(n) = usize_of(map.get("maxItems")) {
            checks.push(Check::MaxItems(n));
        }
        if map.get("uniqueItems") == Some(&Value::Bool(true)) {
            checks.push(Check::UniqueItems);
        }
        let items = if self.legacy {
            match map.get("items") {
                Some(Value::Array(list)) => {
                    let base = push(at, "items");
                    let prefix = (0..list.len())
                        .map(|i| self.child(&base, &i.to_string()))
                        .collect();
                    let rest = map
                        .get("additionalItems")
                        .map(|_| self.child(at, "additionalItems"));
                    Some((prefix, rest))
                }
                Some(_) => Some((Vec::new(), Some(self.child(at, "items")))),
                None => None,
            }
        } else {
            let prefix: Vec<NodeId> = match map.get("prefixItems") {
                Some(Value::Array(list)) => {
                    let base = push(at, "prefixItems");
                    (0..list.len())
                        .map(|i| self.child(&base, &i.to_string()))
                        .collect()
                }
                _ => Vec::new(),
            };
            let rest = map.get("items").map(|_| self.child(at, "items"));
            (!prefix.is_empty() || rest.is_some()).then_some((prefix, rest))
        };
        if let Some((prefix, rest)) = items {
            checks.push(Check::Items {
                prefix,
                rest,
                rest_leaf: 0,
            });
        }
        if map.contains_key("contains") {
            let (min, max) = if self.legacy {
                (None, None)
            } else {
                (
                    usize_of(map.get("minContains")),
                    usize_of(map.get("maxContains")),
                )
            };
            checks.push(Check::Contains {
                node: self.child(at, "contains"),
                min,
                max,
            });
        }
        // Strings.
        if let Some(n) = usize_of(map.get("minLength")) {
            checks.push(Check::MinLength(n));
        }
        if let Some(n) = usize_of(map.get("maxLength")) {
            checks.push(Check::MaxLength(n));
        }
        if let Some(Value::String(name)) = map.get("format")
            && let Some(check) = format::lookup(name)
        {
            checks.push(Check::Format(check));
        }
        if let Some(Value::String(p)) = map.get("pattern") {
            checks.push(Check::Pattern(Box::new(ecma_matcher(p)?)));
        }
        // Numbers, with draft-04's boolean `exclusiveMinimum`/`exclusiveMaximum` as boon reads them.
        let num = |k: &str| match map.get(k) {
            Some(Value::Number(n)) => Some(as_f64(n)),
            _ => None,
        };
        let (mut minimum, mut maximum) = (num("minimum"), num("maximum"));
        let exclusive_min = match map.get("exclusiveMinimum") {
            Some(Value::Bool(true)) => minimum.take(),
            Some(Value::Bool(false)) => None,
            _ => num("exclusiveMinimum"),
        };
        let exclusive_max = match map.get("exclusiveMaximum") {
            Some(Value::Bool(true)) => maximum.take(),
            Some(Value::Bool(false)) => None,
            _ => num("exclusiveMaximum"),
        };
        checks.extend(minimum.map(Check::Minimum));
        checks.extend(maximum.map(Check::Maximum));
        checks.extend(exclusive_min.map(Check::ExclusiveMinimum));
        checks.extend(exclusive_max.map(Check::ExclusiveMaximum));
        checks.extend(num("multipleOf").map(Check::MultipleOf));
        // Applicators.
        let list = |this: &mut Self, keyword: &str| -> Option<Vec<NodeId>> {
            match map.get(keyword) {
                Some(Value::Array(list)) => {
                    let base = push(at, keyword);
                    Some(
                        (0..list.len())
                            .map(|i| this.child(&base, &i.to_string()))
                            .collect(),
                    )
                }
                _ => None,
            }
        };
        if let Some(all) = list(self, "allOf") {
            checks.push(Check::AllOf(all));
        }
        let union = |branches: Vec<NodeId>| Union {
            masks: vec![ANY; branches.len()],
            pick: [MANY; 6],
            branches,
            tag: None,
            tag_sorted: Vec::new(),
        };
        if let Some(any) = list(self, "anyOf") {
            checks.push(Check::AnyOf(Box::new(union(any))));
        }
        if let Some(one) = list(self, "oneOf") {
            checks.push(Check::OneOf(Box::new(union(one))));
        }
        if map.contains_key("not") {
            checks.push(Check::Not(self.child(at, "not")));
        }
        if map.contains_key("if") {
            let then = map.get("then").map(|_| self.child(at, "then"));
            let otherwise = map.get("else").map(|_| self.child(at, "else"));
            checks.push(Check::If {
                cond: self.child(at, "if"),
                then,
                otherwise,
            });
        }
        Some(())
    }
}

/// A non-negative integer keyword value, as boon reads it (`2.0` counts as 2).
fn usize_of(value: Option<&Value>) -> Option<usize> {
    let Some(Value::Number(n)) = value else {
        return None;
    };
    match n.as_u64() {
        Some(n) => usize::try_from(n).ok(),
        None => n
            .as_f64()
            .filter(|f| f.is_sign_positive() && f.fract() == 0.0 && *f < 1e18)
            .and_then(|f| format!("{f:.0}").parse().ok()),
    }
}

/// The JSON pointer a local `$ref` (`#`, `#/$defs/a%20b`) names; `None` for anything else.
fn local_pointer(reference: &str) -> Option<String> {
    let fragment = reference.strip_prefix('#')?;
    if !fragment.is_empty() && !fragment.starts_with('/') {
        return None;
    }
    claij_schema::pointer::percent_decode(fragment)
}

/// The matcher of an ECMA 262 pattern: as [`ecma_regex`] reads it, without the regex engine when the
/// pattern is a plain sequence; `None` when boon must take it.
fn ecma_matcher(pattern: &str) -> Option<Matcher> {
    ecma_regex(pattern).map(|regex| Matcher::new(pattern, regex))
}

/// ECMA 262's `\s`, as boon reads it.
const SPACE: &str = " \t\n\r\u{000b}\u{000c}\u{00a0}\u{feff}\u{2003}\u{2029}";

/// A regular expression as boon compiles an ECMA 262 one: `\d`, `\w`, `\s` and their negations as
/// ECMA's classes; `None` (leave it to boon) for `\c` and `\a`, which boon rewrites or refuses.
fn ecma_regex(pattern: &str) -> Option<Regex> {
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next()? {
            'd' => out.push_str("[0-9]"),
            'D' => out.push_str("[^0-9]"),
            'w' => out.push_str("[A-Za-z0-9_]"),
            'W' => out.push_str("[^A-Za-z0-9_]"),
            's' => {
                out.push('[');
                out.push_str(SPACE);
                out.push(']');
            }
            'S' => {
                out.push_str("[^");
                out.push_str(SPACE);
                out.push(']');
            }
            'c' | 'a' => return None,
            next => {
                out.push('\\');
                out.push(next);
            }
        }
    }
    Regex::new(&out).ok()
}

#[cfg(test)]
mod tests;
