//! Compaction: each rewrite on its own, and a property test in both directions (what was valid stays
//! valid, what was invalid stays invalid) over generated schemas with duplicated fields and
//! sub-schemas, and over the bench schemas.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::{SchemaDelta, base, compose, example};

#[track_caller]
fn check(schema: Value, expected: Value, kinds: &[RewriteKind]) {
    let compacted = compact(&schema);
    assert_eq!(
        compacted.schema, expected,
        "rewrites: {:?}",
        compacted.rewrites
    );
    let found: Vec<RewriteKind> = compacted.rewrites.iter().map(|r| r.kind).collect();
    assert_eq!(found, kinds);
}

fn valid(schema: &Value, instance: &Value) -> bool {
    let compiled = crate::compile(schema).expect("the schema compiles");
    let (schemas, index) = compiled.as_boon();
    schemas.validate(instance, index).is_ok()
}

#[test]
fn duplicated_fields_merge_into_one() {
    // Two deltas each adding a `notes` string, one with a description.
    check(
        json!({"properties": {"notes": {"allOf": [
            {"type": "string"}, {"type": "string", "description": "Follow-ups for the user"},
        ]}}}),
        json!({"properties": {"notes": {"type": "string", "description": "Follow-ups for the user"}}}),
        &[RewriteKind::Merged],
    );
    // A proposal re-adding a field with a new description: both descriptions kept.
    check(
        json!({"properties": {"mood": {"allOf": [
            {"type": "string", "enum": ["calm", "tense"], "description": "How the user sounds"},
            {"type": "string", "enum": ["calm", "tense"], "description": "Used to pick the tone"},
        ]}}}),
        json!({"properties": {"mood": {"type": "string", "enum": ["calm", "tense"],
            "description": "How the user sounds; Used to pick the tone"}}}),
        &[RewriteKind::Merged],
    );
    // One description inside the other: the longer kept.
    check(
        json!({"properties": {"x": {"allOf": [
            {"type": "integer", "description": "Retries"},
            {"type": "integer", "description": "Retries left"},
        ]}}}),
        json!({"properties": {"x": {"type": "integer", "description": "Retries left"}}}),
        &[RewriteKind::Merged],
    );
}

#[test]
fn independent_constraints_merge_to_their_conjunction() {
    check(
        json!({"properties": {"n": {"allOf": [
            {"type": "integer", "minimum": 0, "maximum": 10},
            {"minimum": 2, "maximum": 20},
        ]}, "e": {"allOf": [{"enum": ["a", "b", "c"]}, {"enum": ["c", "b", "d"]}]},
            "o": {"allOf": [
                {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                {"properties": {"b": {"type": "string"}}, "required": ["b"]},
            ]}}}),
        json!({"properties": {
            "n": {"type": "integer", "minimum": 2, "maximum": 10},
            "e": {"enum": ["b", "c"]},
            "o": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                "required": ["a", "b"]},
        }}),
        &[
            RewriteKind::Merged,
            RewriteKind::Merged,
            RewriteKind::Merged,
        ],
    );
}

#[test]
fn what_reads_its_siblings_keeps_its_all_of() {
    // additionalProperties sees only its own schema's properties: merging would refuse `b`.
    let closed = json!({"properties": {"o": {"allOf": [
        {"type": "object", "properties": {"a": {}}, "additionalProperties": false},
        {"type": "object", "properties": {"b": {}}},
    ]}}});
    check(closed.clone(), closed, &[]);
    // Types that do not meet, enums that do not meet, different patterns: left to say so.
    let apart = json!({"properties": {
        "t": {"allOf": [{"type": "string"}, {"type": "integer"}]},
        "e": {"allOf": [{"enum": ["a"]}, {"enum": ["b"]}]},
        "p": {"allOf": [{"pattern": "^a"}, {"pattern": "b$"}]},
        "f": {"allOf": [{"enum": [1.0]}, {"enum": [1]}]},
    }});
    check(apart.clone(), apart, &[]);
}

#[test]
fn descriptions_that_repeat_the_name_go_and_the_rest_stay() {
    check(
        json!({"properties": {
            "notes": {"type": "string", "description": "The notes."},
            "user_id": {"type": "string", "description": "User ID", "title": "User Id"},
            "userName": {"type": "string", "description": "the user name"},
            "summary": {"type": "string", "description": "the summary of the user's notes"},
            "tags": {"type": "array", "description": "Tags to file it under"},
        }}),
        json!({"properties": {
            "notes": {"type": "string"},
            "user_id": {"type": "string"},
            "userName": {"type": "string"},
            "summary": {"type": "string", "description": "the summary of the user's notes"},
            "tags": {"type": "array", "description": "Tags to file it under"},
        }}),
        &[RewriteKind::Shortened; 4],
    );
}

#[test]
fn a_repeated_sub_schema_is_shared_when_that_is_shorter() {
    let address = json!({"type": "object", "required": ["street", "city"],
        "properties": {"street": {"type": "string"}, "city": {"type": "string"},
            "country": {"type": "string", "pattern": "^[A-Z]{2}$"}}});
    let schema = json!({"type": "object", "properties": {
        "home": address.clone(), "work": address.clone(),
        "other": {"type": "array", "items": address.clone()},
    }});
    let compacted = compact(&schema);
    assert_eq!(
        compacted.schema,
        json!({"type": "object", "properties": {
            "home": {"$ref": "#/$defs/home"}, "work": {"$ref": "#/$defs/home"},
            "other": {"type": "array", "items": {"$ref": "#/$defs/home"}},
        }, "$defs": {"home": address}})
    );
    assert_eq!(compacted.rewrites.len(), 1);
    assert_eq!(compacted.rewrites[0].kind, RewriteKind::Shared);
    assert_eq!(
        compacted.rewrites[0].to_string(),
        "shared at `/properties/home`: the same sub-schema at /properties/home, \
         /properties/work, /properties/other/items moved to `/$defs/home`"
    );
    // Twice a short schema: a reference would be no shorter, so nothing moves.
    let short = json!({"properties": {"a": {"type": "string", "maxLength": 9}},
        "items": {"type": "string", "maxLength": 9}});
    check(short.clone(), short, &[]);
    // A reference through a sub-schema's path could break: nothing moves at all.
    let through = json!({"properties": {"home": address.clone(), "work": address.clone(),
        "city": {"$ref": "#/properties/home/properties/city"}}});
    check(through.clone(), through, &[]);
}

#[test]
fn compacted_deltas_compose_onto_the_base_and_keep_its_definition_names() {
    let base = json!({"$schema": crate::DRAFT_2020_12, "type": "object",
        "$defs": {"home": {"type": "string"}}, "properties": {"a": {"$ref": "#/$defs/home"}}});
    let address = json!({"type": "object", "required": ["street", "city"],
        "properties": {"street": {"type": "string"}, "city": {"type": "string"},
            "country": {"type": "string", "pattern": "^[A-Z]{2}$"}}});
    let deltas = [
        SchemaDelta::new("one", "x", json!({"properties": {"home": address.clone()}})),
        SchemaDelta::new("two", "y", json!({"properties": {"work": address.clone()}})),
    ];
    let (delta, rewrites) = compact_deltas(&base, &deltas).expect("compacts");
    assert_eq!(delta["$defs"]["home2"], address);
    assert_eq!(rewrites.len(), 1);
    let composed = compose(&base, &[SchemaDelta::new("c", "claij", delta)]).expect("composes");
    crate::check(&composed).expect("a valid schema");
    assert_eq!(composed["$defs"]["home"], json!({"type": "string"}));
}

#[test]
fn big_nesting_is_left_alone_past_the_depth_limit() {
    let mut deep = json!({"type": "string"});
    for _ in 0..200 {
        deep = json!({"allOf": [deep.clone(), deep]});
        if deep.to_string().len() > 100_000 {
            break;
        }
    }
    let mut nested = json!({"type": "string"});
    for _ in 0..500 {
        nested = json!({"items": nested});
    }
    let _ = compact(&deep);
    assert_eq!(compact(&nested).schema, nested);
}

#[test]
fn words_split_names_and_sentences() {
    assert_eq!(words("userId"), ["user", "id"]);
    assert_eq!(words("user_id"), ["user", "id"]);
    assert_eq!(words("The user ID."), ["user", "id"]);
    assert_eq!(words("HTTPStatus"), ["httpstatus"]);
}

/// Instances near `valid`: each pooled value at each pooled name (wrong types, enum outsiders,
/// objects with an extra property), each required name left out, an extra property at the root.
fn near_misses(valid: &Value, schema: &Value) -> Vec<Value> {
    let values = [
        json!("a"),
        json!("b"),
        json!("c"),
        json!("zz"),
        json!(""),
        json!(3),
        json!(-5),
        json!(1000),
        json!(2.5),
        json!(true),
        Value::Null,
        json!({"street": "s"}),
        json!({"street": "s", "city": "c"}),
        json!({"street": "s", "city": "c", "zip": "1"}),
        json!({"city": 4}),
        json!(["a", "b"]),
        json!([{"street": "s", "city": "c"}]),
        json!([{"city": "c"}]),
        json!([]),
    ];
    let mut out = vec![valid.clone()];
    for name in NAMES {
        for value in &values {
            let mut near = valid.clone();
            near[name] = value.clone();
            out.push(near);
        }
    }
    if let Some(required) = schema["required"].as_array() {
        for name in required.iter().filter_map(Value::as_str) {
            let mut near = valid.clone();
            if let Some(map) = near.as_object_mut() {
                map.remove(name);
            }
            out.push(near);
        }
    }
    let mut extra = valid.clone();
    extra["unheard_of"] = json!(1);
    out.push(extra);
    out
}

const NAMES: [&str; 6] = ["notes", "status", "score", "home", "work", "tags"];

fn address(required: &[&str], closed: bool, description: &str) -> Value {
    let mut schema = json!({"type": "object", "description": description,
        "properties": {"street": {"type": "string"}, "city": {"type": "string", "minLength": 1}},
        "required": required});
    if closed {
        schema["additionalProperties"] = json!(false);
    }
    schema
}

/// A schema for the property `name`: each name has its family (strings, enums, numbers, addresses,
/// lists), so that deltas defining one name twice mostly compose, and often merge.
fn property(name: &'static str) -> BoxedStrategy<Value> {
    let description = prop::sample::select(vec!["", "notes", "The status.", "What to recall"]);
    match name {
        "notes" => prop_oneof![
            description.prop_map(|d| json!({"type": "string", "description": d})),
            (0..3usize, 1..4usize).prop_map(|(min, len)| json!({"type": "string",
                "minLength": min, "maxLength": min + len})),
        ]
        .boxed(),
        "status" => prop_oneof![
            prop::sample::subsequence(vec!["a", "b", "c", "d"], 1..5)
                .prop_map(|values| json!({"type": "string", "enum": values})),
            prop::sample::subsequence(vec!["a", "b", "c"], 1..4)
                .prop_map(|values| json!({"enum": values})),
            description.prop_map(|d| json!({"type": "string", "description": d})),
        ]
        .boxed(),
        "score" => prop_oneof![
            (-10i64..10, 0i64..2000).prop_map(|(min, span)| json!({"type": "integer",
                "minimum": min, "maximum": min + span})),
            Just(json!({"type": "number", "exclusiveMinimum": 0})),
            Just(json!({"type": "integer", "description": "score"})),
        ]
        .boxed(),
        "tags" => prop_oneof![
            (
                prop::sample::subsequence(vec!["street", "city"], 0..3),
                any::<bool>()
            )
                .prop_map(|(required, closed)| json!({"type": "array",
                    "items": address(&required, closed, "A postal address")})),
            Just(json!({"type": "array", "uniqueItems": true})),
            (0..2usize).prop_map(|min| json!({"type": "array", "minItems": min})),
        ]
        .boxed(),
        _ => (
            prop::sample::subsequence(vec!["street", "city"], 0..3),
            any::<bool>(),
            description,
        )
            .prop_map(|(required, closed, d)| address(&required, closed, d))
            .boxed(),
    }
}

fn delta() -> impl Strategy<Value = Value> {
    (
        prop::collection::vec(prop::sample::select(NAMES.to_vec()), 1..4).prop_flat_map(|names| {
            names
                .into_iter()
                .map(|name| property(name).prop_map(move |schema| (name, schema)))
                .collect::<Vec<_>>()
        }),
        prop::collection::vec(prop::sample::select(NAMES.to_vec()), 0..3),
    )
        .prop_map(|(properties, required)| {
            let properties: serde_json::Map<String, Value> = properties
                .into_iter()
                .map(|(name, schema)| (name.to_owned(), schema))
                .collect();
            let required: Vec<&str> = required
                .into_iter()
                .filter(|n| properties.contains_key(*n))
                .collect();
            json!({"properties": properties, "required": required})
        })
}

/// Deltas that often say the same thing again: each drawn delta is repeated, renamed, with
/// probability a half, so identical sub-schemas and fields defined twice are common.
fn deltas() -> impl Strategy<Value = Vec<SchemaDelta>> {
    prop::collection::vec((delta(), any::<bool>()), 1..6).prop_map(|drawn| {
        let mut out = Vec::new();
        for (i, (delta, twice)) in drawn.into_iter().enumerate() {
            if twice {
                out.push(SchemaDelta::new(format!("again-{i}"), "y", delta.clone()));
            }
            out.push(SchemaDelta::new(format!("ext-{i}"), "x", delta));
        }
        out
    })
}

/// The same verdict from `before` and `after` on every instance; the instances checked.
#[track_caller]
fn same_verdicts(before: &Value, after: &Value, instances: &[Value]) -> usize {
    let (b, a) = (
        crate::compile(before).expect("compiles"),
        crate::compile(after).expect("the compacted schema compiles"),
    );
    let ((bs, bi), (as_, ai)) = (b.as_boon(), a.as_boon());
    for instance in instances {
        let was = bs.validate(instance, bi).is_ok();
        let is = as_.validate(instance, ai).is_ok();
        assert_eq!(
            was, is,
            "valid before: {was}, after: {is}\ninstance {instance}\nbefore {before}\nafter {after}"
        );
    }
    instances.len()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Valid before ⇔ valid after, for the composed schema compacted and for the compacted delta
    /// composed onto the base.
    #[test]
    fn compaction_accepts_exactly_the_same_instances(deltas in deltas()) {
        let base = base();
        let Ok(before) = compose(&base, &deltas) else { return Ok(()) };
        prop_assume!(crate::check(&before).is_ok());
        let compacted = compact(&before).schema;
        let (delta, _) = compact_deltas(&base, &deltas).expect("what composes compacts");
        let onto_base = compose(&base, &[SchemaDelta::new("c", "claij", delta)])
            .expect("the compacted delta composes onto the base");
        let mut instances = Vec::new();
        if let Ok(valid) = example(&before) {
            prop_assert!(self::valid(&before, &valid));
            instances = near_misses(&valid, &before);
        }
        for name in NAMES {
            let mut lone = json!({"answer": "x", "state": "y"});
            lone[name] = json!("a");
            instances.push(lone);
        }
        same_verdicts(&before, &compacted, &instances);
        same_verdicts(&before, &onto_base, &instances);
    }
}

fn fixture(name: &str) -> Value {
    let path = format!("{}/../../fixtures/bench/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("JSON")
}

#[test]
fn the_bench_schemas_accept_exactly_the_same_instances() {
    for (schema, valid, invalid) in [
        ("small.json", "small.valid.json", "small.invalid.json"),
        ("big.json", "big.valid.json", "big.invalid.json"),
    ] {
        let before = fixture(schema);
        let after = compact(&before);
        let (valid, invalid) = (fixture(valid), fixture(invalid));
        assert!(self::valid(&after.schema, &valid), "{schema}");
        assert!(!self::valid(&after.schema, &invalid), "{schema}");
        let mut instances = vec![valid.clone(), invalid];
        let mut calls = valid.clone();
        if let Some(items) = calls.get_mut("calls").and_then(Value::as_array_mut) {
            // Each call with its tool name swapped, an argument dropped, an extra one.
            for i in 0..items.len() {
                let mut near = valid.clone();
                near["calls"][i]["tool"] = json!("no_such_tool");
                instances.push(near);
                if let Some(arguments) = valid["calls"][i]["args"].as_object() {
                    for key in arguments.keys() {
                        let mut near = valid.clone();
                        if let Some(map) = near["calls"][i]["args"].as_object_mut() {
                            map.remove(key);
                        }
                        instances.push(near);
                        let mut near = valid.clone();
                        near["calls"][i]["args"][key] = json!({"wrong": true});
                        instances.push(near);
                    }
                }
            }
            items.clear();
        }
        instances.push(calls);
        instances.extend(near_misses(&valid, &before));
        assert!(same_verdicts(&before, &after.schema, &instances) > 10);
    }
}

#[test]
fn sharing_is_bounded_on_a_schema_with_many_repeats() {
    let mut properties = serde_json::Map::new();
    for i in 0..100 {
        let sub = json!({"type": "object", "properties": {"field": {"type": "string",
            "pattern": format!("^x{i}$")}}, "required": ["field"]});
        properties.insert(format!("a{i}"), sub.clone());
        properties.insert(format!("b{i}"), sub);
    }
    let schema = json!({"type": "object", "properties": properties});
    let compacted = compact(&schema);
    let shared = compacted
        .rewrites
        .iter()
        .filter(|r| r.kind == RewriteKind::Shared)
        .count();
    assert!(shared > 0 && shared <= MAX_SHARE_TRIES, "{shared}");
    let instance = json!({"a7": {"field": "x7"}, "b7": {"field": "x8"}});
    same_verdicts(
        &schema,
        &compacted.schema,
        &[instance, json!({"a1": {"field": "x1"}})],
    );
}
