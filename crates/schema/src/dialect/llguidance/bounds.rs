//! Runaway bounds: `maxLength`, `maxItems` and `maxProperties` (or a closed object) where a schema sets
//! none, computed over everything that applies at one level so that no bound contradicts another keyword.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::{Walker, admits_additional, count};
use crate::dialect::{Cx, LossKind, types_of};

/// The kinds of value a bound limits.
#[derive(Clone, Copy)]
enum Kind {
    String,
    Array,
    Object,
}

impl Kind {
    fn type_name(self) -> &'static str {
        match self {
            Kind::String => "string",
            Kind::Array => "array",
            Kind::Object => "object",
        }
    }

    /// Keywords that make an untyped schema about this kind.
    fn keywords(self) -> &'static [&'static str] {
        match self {
            Kind::String => &["minLength", "pattern", "format"],
            Kind::Array => &["items", "prefixItems", "minItems"],
            Kind::Object => &[
                "properties",
                "patternProperties",
                "additionalProperties",
                "required",
                "minProperties",
            ],
        }
    }

    /// Keywords that already bound this kind.
    fn limits(self) -> &'static [&'static str] {
        match self {
            Kind::String => &["maxLength", "enum", "const"],
            Kind::Array => &["maxItems", "enum", "const"],
            Kind::Object => &["maxProperties", "enum", "const"],
        }
    }
}

/// A compiled schema read with everything that applies at its level: the maps intersected with it (itself
/// and its `allOf` branches, recursively) and the `anyOf` alternatives that were not bounded on their own.
struct View<'m> {
    sides: Vec<&'m Map<String, Value>>,
    alternatives: Vec<&'m Map<String, Value>>,
    /// An alternative is `true`: it takes anything, unbounded.
    open_alternative: bool,
}

impl<'m> View<'m> {
    fn of(map: &'m Map<String, Value>, alternatives: bool) -> Self {
        let mut view = View {
            sides: vec![map],
            alternatives: Vec::new(),
            open_alternative: false,
        };
        let mut i = 0;
        while let Some(&side) = view.sides.get(i) {
            i += 1;
            view.sides.extend(objects(side, "allOf"));
            if alternatives || i > 1 {
                view.add_alternatives(side);
            }
        }
        view
    }

    /// The `anyOf` branches of a side, and everything they are built from (an over-approximation: the
    /// `allOf` parts of a branch count as alternatives of their own).
    fn add_alternatives(&mut self, side: &'m Map<String, Value>) {
        let start = self.alternatives.len();
        self.open_alternative |= has_true(side, "anyOf");
        self.alternatives.extend(objects(side, "anyOf"));
        let mut i = start;
        while let Some(&alternative) = self.alternatives.get(i) {
            i += 1;
            self.open_alternative |= has_true(alternative, "anyOf");
            self.alternatives.extend(objects(alternative, "anyOf"));
            self.alternatives.extend(objects(alternative, "allOf"));
        }
    }

    fn all(&self) -> impl Iterator<Item = &'m Map<String, Value>> + '_ {
        self.sides.iter().chain(&self.alternatives).copied()
    }

    /// Whether the level is about `kind`: the sides' types allow it, or, when no side declares a type, some
    /// part of the level has a keyword of the kind.
    fn is_about(&self, kind: Kind) -> bool {
        let mut agreed: Option<Vec<&str>> = None;
        for &side in &self.sides {
            if side.contains_key("type") {
                let types = types_of(side);
                agreed = Some(match agreed {
                    None => types,
                    Some(agreed) => agreed.into_iter().filter(|t| types.contains(t)).collect(),
                });
            }
        }
        match agreed {
            Some(types) => types.contains(&kind.type_name()),
            None => self.all().any(|m| is_about(m, kind)),
        }
    }

    /// Whether values of `kind` can get through without a bound: nothing at this level limits them, neither
    /// a side nor every alternative.
    fn unbounded(&self, kind: Kind) -> bool {
        let limited = |m: &Map<String, Value>| {
            has_any(m, kind.limits())
                || (matches!(kind, Kind::Object) && is_about(m, kind) && !admits_additional(m))
        };
        let excluded = |m: &Map<String, Value>| m.contains_key("type") && !is_about(m, kind);
        let alternatives_limited = !self.open_alternative
            && !self.alternatives.is_empty()
            && self.alternatives.iter().all(|a| limited(a) || excluded(a));
        self.is_about(kind) && !self.sides.iter().any(|s| limited(s)) && !alternatives_limited
    }

    /// The largest value of a count keyword anywhere at this level.
    fn largest(&self, keyword: &str) -> u64 {
        self.all()
            .filter_map(|m| m.get(keyword).and_then(count))
            .max()
            .unwrap_or(0)
    }
}

/// Whether a schema is about `kind`: it declares the type, or it has no type and a keyword of the kind.
fn is_about(map: &Map<String, Value>, kind: Kind) -> bool {
    if map.contains_key("type") {
        types_of(map).contains(&kind.type_name())
    } else {
        has_any(map, kind.keywords())
    }
}

fn has_any(map: &Map<String, Value>, keys: &[&str]) -> bool {
    keys.iter().any(|k| map.contains_key(*k))
}

/// Whether an array keyword has a `true` entry.
fn has_true(map: &Map<String, Value>, key: &str) -> bool {
    map.get(key)
        .and_then(Value::as_array)
        .is_some_and(|entries| entries.contains(&Value::Bool(true)))
}

/// The object entries of an array keyword (`allOf`, `anyOf`).
fn objects<'m>(
    map: &'m Map<String, Value>,
    key: &str,
) -> impl Iterator<Item = &'m Map<String, Value>> {
    map.get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
}

impl Walker {
    /// Adds the runaway bounds a compiled schema lacks, reporting each. `alternatives`: its `anyOf` branches
    /// were compiled without bounds of their own, so they count as part of it.
    pub(super) fn bound(
        &self,
        cx: &mut Cx<'_>,
        out: &mut Map<String, Value>,
        pointer: &str,
        alternatives: bool,
    ) {
        let view = View::of(out, alternatives);
        // What a recursive `$ref` holds is not known here (its definition is bounded on its own).
        if view.all().any(|m| m.contains_key("$ref")) {
            return;
        }
        let mut added = Vec::new();
        if view.unbounded(Kind::String) {
            let floor = view.largest("minLength");
            added.push(("maxLength", self.bounds.max_string_chars.max(floor)));
        }
        if view.unbounded(Kind::Array) {
            let floor = view.largest("minItems");
            added.push(("maxItems", self.bounds.max_items.max(floor)));
        }
        for (keyword, bound) in added {
            let bound = Value::from(bound);
            cx.loss(pointer, keyword, &bound, LossKind::Tightened);
            out.insert(keyword.to_owned(), bound);
        }
        self.bound_object(cx, out, pointer, alternatives);
    }

    /// An object that declares properties and says nothing of others is closed: `additionalProperties:
    /// false`, with every property named anywhere at this level declared, so that closing forbids nothing
    /// another branch allows. llguidance counts properties only when every declared property is required
    /// (it applies `minProperties`/`maxProperties` to the keys beyond those), so an open object with
    /// optional properties is closed too, even when it admits other keys explicitly. Maps (no declared
    /// properties), and objects without optional properties that admit other keys explicitly or need more
    /// keys than they name (`minProperties`), get `maxProperties`.
    fn bound_object(
        &self,
        cx: &mut Cx<'_>,
        out: &mut Map<String, Value>,
        pointer: &str,
        alternatives: bool,
    ) {
        let view = View::of(out, alternatives);
        if !view.is_about(Kind::Object) {
            return;
        }
        let mut names: Vec<String> = Vec::new();
        for map in view.all() {
            let declared = map.get("properties").and_then(Value::as_object);
            let required = map.get("required").and_then(Value::as_array);
            let declared = declared.into_iter().flat_map(|p| p.keys().cloned());
            let required = required
                .into_iter()
                .flatten()
                .filter_map(|n| n.as_str().map(str::to_owned));
            for name in declared.chain(required) {
                if !names.contains(&name) {
                    names.push(name);
                }
            }
        }
        let required: HashSet<&str> = view
            .sides
            .iter()
            .filter_map(|s| s.get("required").and_then(Value::as_array))
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let optional = names.iter().any(|n| !required.contains(n.as_str()));
        let n_required = required.len() as u64;
        let single = view.sides.len() == 1 && view.alternatives.is_empty();
        let counted = view
            .all()
            .any(|m| has_any(m, &["minProperties", "maxProperties"]));
        let min_properties = view.largest("minProperties");
        if optional && counted && !(single && one_of_the_properties(out, n_required)) {
            let mut removed = Vec::new();
            strip_counts(out, alternatives, &mut removed);
            for (keyword, value) in removed {
                cx.loss(pointer, keyword, &value, LossKind::Dropped);
            }
        }
        if !View::of(out, alternatives).unbounded(Kind::Object) {
            return;
        }
        // Declared properties with nothing said about others mean that shape: close it, as the strict
        // dialects do (a small model otherwise invents keys). Maps, objects that explicitly admit other
        // keys and objects that need more keys than they name are only counted.
        let view = View::of(out, alternatives);
        let declared = view
            .all()
            .any(|m| matches!(m.get("properties"), Some(Value::Object(p)) if !p.is_empty()));
        let shape = declared
            && !view.all().any(admits_others_explicitly)
            && min_properties <= names.len() as u64;
        if !optional && !shape {
            let floor = min_properties.max(n_required);
            let bound = Value::from(self.bounds.max_properties.max(floor));
            cx.loss(pointer, "maxProperties", &bound, LossKind::Tightened);
            out.insert("maxProperties".to_owned(), bound);
            return;
        }
        if let Some(declared) = out
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()))
            .as_object_mut()
        {
            for name in names {
                declared
                    .entry(name)
                    .or_insert_with(|| Value::Object(Map::new()));
            }
        }
        let closed = Value::Bool(false);
        cx.loss(
            pointer,
            "additionalProperties",
            &closed,
            LossKind::Tightened,
        );
        out.insert("additionalProperties".to_owned(), closed);
        if let Some(patterns) = out.shift_remove("patternProperties") {
            cx.loss(pointer, "patternProperties", &patterns, LossKind::Dropped);
        }
    }
}

/// Whether a schema admits keys beyond its properties in so many words: an `additionalProperties` schema
/// (`true` and `{}` say nothing) or `patternProperties`.
fn admits_others_explicitly(map: &Map<String, Value>) -> bool {
    let additional = match map.get("additionalProperties") {
        Some(Value::Object(schema)) => !schema.is_empty(),
        _ => false,
    };
    let patterns = matches!(map.get("patternProperties"), Some(Value::Object(p)) if !p.is_empty());
    additional || patterns
}

/// What llguidance accepts next to optional properties: "exactly one", "at most one" or "at least one" of
/// them, in a closed object.
fn one_of_the_properties(map: &Map<String, Value>, n_required: u64) -> bool {
    let min = map.get("minProperties").and_then(count).unwrap_or(0);
    let max = map.get("maxProperties").and_then(count);
    let extra_min = min.saturating_sub(n_required);
    let extra_max = max.map(|m| m.saturating_sub(n_required));
    extra_min <= 1 && extra_max.unwrap_or(1) == 1 && !admits_additional(map)
}

/// Removes `minProperties` and `maxProperties` from a schema and from what is intersected with it.
fn strip_counts(
    map: &mut Map<String, Value>,
    alternatives: bool,
    removed: &mut Vec<(&'static str, Value)>,
) {
    for keyword in ["minProperties", "maxProperties"] {
        if let Some(value) = map.shift_remove(keyword) {
            removed.push((keyword, value));
        }
    }
    let keys: &[&str] = if alternatives {
        &["allOf", "anyOf"]
    } else {
        &["allOf"]
    };
    for key in keys {
        if let Some(Value::Array(branches)) = map.get_mut(*key) {
            for branch in branches.iter_mut().filter_map(Value::as_object_mut) {
                strip_counts(branch, true, removed);
            }
        }
    }
}
