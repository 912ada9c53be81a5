//! Tests of the compiled check: what it plans (tags, type masks, deferrals) and that its verdicts are
//! boon's on the cases its shortcuts take.

use serde_json::{Value, json};

use super::*;
use crate::Validator;

/// The compiled check for `schema`, with its deferred subschemas compiled by boon.
fn compile(schema: &Value) -> (Fast, claij_schema::CompiledSchema) {
    let draft = Draft::of(schema).unwrap();
    let (mut fast, deferred) = Fast::compile(schema, draft).unwrap();
    let (compiled, indexes) = claij_schema::compile_at(schema, &deferred).unwrap();
    fast.set_deferred(indexes, None);
    (fast, compiled)
}

/// The check and boon agree on each instance, and the check decides (it does not give up).
#[track_caller]
fn agrees(schema: &Value, instances: &[Value]) {
    let (fast, compiled) = compile(schema);
    let (schemas, root) = compiled.as_boon();
    for instance in instances {
        let boon = schemas.validate(instance, root).is_ok();
        assert_eq!(
            fast.is_valid(instance, schemas),
            Some(boon),
            "{instance} against {schema}"
        );
    }
}

fn unions(fast: &Fast) -> Vec<&Union> {
    let mut out = Vec::new();
    for node in &fast.nodes {
        if let Node::Checks(checks) | Node::Typed(_, checks) = node {
            for c in checks {
                if let Check::AnyOf(u) | Check::OneOf(u) = c {
                    out.push(&**u);
                }
            }
        }
    }
    out
}

fn tagged(keyword: &str, typed: bool) -> Value {
    let object = |tag: &str, field: &str, ty: &str| {
        let mut branch = json!({"required": ["tool", field],
            "properties": {"tool": {"const": tag}, field: {"type": ty}}});
        if typed {
            branch["type"] = json!("object");
        }
        branch
    };
    json!({
        "$defs": {"Search": object("search", "query", "string"), "Add": object("add", "a", "integer")},
        keyword: [{"$ref": "#/$defs/Search"}, {"$ref": "#/$defs/Add"}, {"allOf": [{"required": ["tool"]},
            {"properties": {"tool": {"enum": ["stop"]}}}]}]
    })
}

#[test]
fn a_tagged_union_is_dispatched_on_its_tag() {
    let (fast, _) = compile(&tagged("oneOf", true));
    let tag = unions(&fast)[0].tag.as_ref().unwrap();
    assert_eq!(tag.0, "tool");
    let mut values: Vec<(&str, usize)> = tag.1.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    values.sort_unstable();
    assert_eq!(values, [("add", 1), ("search", 0), ("stop", 2)]);
    let instances = [
        json!({"tool": "search", "query": "x"}),
        json!({"tool": "search", "query": 1}),
        json!({"tool": "add", "a": 1}),
        json!({"tool": "add", "a": 1.0}),
        json!({"tool": "add", "a": 1.5}),
        json!({"tool": "stop"}),
        json!({"tool": "nope"}),
        json!({"tool": 1}),
        json!({"query": "x"}),
        json!(5),
        json!(null),
    ];
    // Without `type: object`, a non-object satisfies every branch: anyOf holds, oneOf does not.
    for keyword in ["oneOf", "anyOf"] {
        for typed in [true, false] {
            agrees(&tagged(keyword, typed), &instances);
        }
    }
}

#[test]
fn tag_values_that_share_a_print_are_told_apart() {
    // Same length and first four bytes: one print, three values.
    let branch = |tag: &str, ty: &str| {
        json!({"type": "object", "required": ["k"],
               "properties": {"k": {"const": tag}, "v": {"type": ty}}})
    };
    let schema = json!({"oneOf": [branch("call_a", "string"), branch("call_b", "integer"),
        branch("call_c", "null"), branch("other", "boolean")]});
    let (fast, _) = compile(&schema);
    let union = unions(&fast)[0];
    assert_eq!(union.tag_sorted.len(), 4);
    agrees(
        &schema,
        &[
            json!({"k": "call_a", "v": "s"}),
            json!({"k": "call_a", "v": 1}),
            json!({"k": "call_b", "v": 1}),
            json!({"k": "call_b", "v": "s"}),
            json!({"k": "call_c", "v": null}),
            json!({"k": "call_c", "v": 1}),
            json!({"k": "call_d", "v": null}),
            json!({"k": "other", "v": true}),
            json!({"k": "othe", "v": true}),
        ],
    );
}

#[test]
fn branches_that_share_a_tag_value_are_not_dispatched() {
    let schema = json!({"oneOf": [
        {"required": ["k"], "properties": {"k": {"const": "a"}, "x": {"type": "string"}}},
        {"required": ["k"], "properties": {"k": {"const": "a"}, "x": {"type": "integer"}}}
    ]});
    let (fast, _) = compile(&schema);
    assert!(unions(&fast)[0].tag.is_none());
    agrees(
        &schema,
        &[
            json!({"k": "a", "x": "s"}),
            json!({"k": "a"}),
            json!({"k": "b"}),
        ],
    );
}

#[test]
fn a_nullable_union_is_decided_by_type() {
    let schema = json!({
        "$defs": {"Address": {"type": "object", "required": ["city"]}},
        "properties": {
            "address": {"anyOf": [{"$ref": "#/$defs/Address"}, {"type": "null"}]},
            "count": {"oneOf": [{"type": "integer"}, {"type": ["null", "string"]}]}
        }
    });
    let (fast, _) = compile(&schema);
    let masks: Vec<&[u8]> = unions(&fast).iter().map(|u| u.masks.as_slice()).collect();
    // By kind (null, boolean, number, string, array, object): the one branch to try, or none.
    let picks: Vec<[u32; 6]> = unions(&fast).iter().map(|u| u.pick).collect();
    assert!(picks.contains(&[1, NONE, NONE, NONE, NONE, 0]), "{picks:?}");
    assert!(picks.contains(&[1, NONE, 0, 1, NONE, NONE]), "{picks:?}");
    assert!(masks.contains(&&[OBJECT, NULL][..]), "{masks:?}");
    assert!(
        masks.contains(&&[INTEGER | NUMBER, NULL | STRING][..]),
        "{masks:?}"
    );
    agrees(
        &schema,
        &[
            json!({"address": null, "count": null}),
            json!({"address": {"city": "x"}, "count": 3}),
            json!({"address": {}}),
            json!({"address": "x"}),
            json!({"count": 3.0}),
            json!({"count": 3.5}),
            json!({"count": "3"}),
        ],
    );
}

#[test]
fn what_it_does_not_implement_goes_to_boon() {
    let schema = json!({"properties": {
        "to": {"type": "string", "format": "email"},
        "when": {"type": "string", "format": "date-time"},
        "rest": {"type": "object", "unevaluatedProperties": false, "properties": {"a": true}}
    }});
    let (fast, _) = compile(&schema);
    // `date-time` is checked here, `email` by boon.
    assert_eq!(fast.deferred(), 2);
    agrees(
        &schema,
        &[
            json!({"to": "ada@example.org"}),
            json!({"to": "ada"}),
            json!({"when": "2024-01-01T00:00:00Z"}),
            json!({"when": "2024-02-30T00:00:00Z"}),
            json!({"when": 7}),
            json!({"when": "yesterday"}),
            json!({"rest": {"a": 1}}),
            json!({"rest": {"a": 1, "b": 2}}),
        ],
    );
    let dynamic = json!({"$dynamicAnchor": "x", "properties": {"a": {"$dynamicRef": "#x"}}});
    assert!(Fast::compile(&dynamic, Draft::Draft2020_12).is_none());
    let embedded = json!({"$defs": {"a": {"$id": "http://example.com/a"}}});
    assert!(Fast::compile(&embedded, Draft::Draft2020_12).is_none());
    assert!(Fast::compile(&json!({}), Draft::Draft4).is_none());
}

#[test]
fn keywords_mean_what_boon_makes_them_mean() {
    // Draft-07: `$ref` hides its siblings.
    let draft7 = json!({"$schema": "http://json-schema.org/draft-07/schema#",
        "definitions": {"a": {"type": "integer"}},
        "properties": {"x": {"$ref": "#/definitions/a", "type": "string"}}});
    agrees(&draft7, &[json!({"x": 1}), json!({"x": "s"})]);
    // ECMA 262 classes: `\d` and `\w` are ASCII, `\s` is boon's set.
    let patterns = json!({"properties": {
        "d": {"pattern": "^\\d+$"}, "w": {"pattern": "^\\w+$"}, "s": {"pattern": "^\\s$"},
        "S": {"pattern": "^[\\S]+$"}}});
    agrees(
        &patterns,
        &[
            json!({"d": "123"}),
            json!({"d": "١٢٣"}),
            json!({"w": "abc_1"}),
            json!({"w": "é"}),
            json!({"s": "\u{2003}"}),
            json!({"s": "\u{2002}"}),
            json!({"S": "a\u{2002}"}),
        ],
    );
    // Numbers compare by value; lengths count code points; integers may be written `1.0`.
    let values = json!({"properties": {
        "e": {"enum": [1, [2], {"a": 3}]}, "c": {"const": 1.0}, "u": {"uniqueItems": true},
        "l": {"minLength": 2, "maxLength": 2}, "i": {"type": "integer", "multipleOf": 0.5,
        "minimum": 0, "exclusiveMaximum": 10}}});
    agrees(
        &values,
        &[
            json!({"e": 1.0, "c": 1}),
            json!({"e": [2.0], "c": 2}),
            json!({"e": {"a": 3.0}}),
            json!({"u": [1, 1.0]}),
            json!({"u": [{"a": 1, "b": 2}, {"b": 2, "a": 1}]}),
            json!({"u": [1, "1"]}),
            json!({"l": "éé"}),
            json!({"l": "ééé"}),
            json!({"l": "é"}),
            json!({"i": 9.0}),
            json!({"i": 10}),
            json!({"i": 4.5}),
            json!({"i": -1}),
        ],
    );
}

#[test]
fn string_enums_and_required_properties_are_decided_as_boon_does() {
    // Names that share their length and first four bytes (one print) still differ.
    let schema = json!({"type": "object", "required": ["abcd1", "x"],
        "properties": {"abcd1": {"enum": ["abcd1", "abcd2", 1]}, "abcd2": {"enum": ["abcd1", "abcd2"]}}});
    agrees(
        &schema,
        &[
            json!({"abcd1": "abcd1", "x": 0}),
            json!({"abcd1": "abcd3", "x": 0}),
            json!({"abcd1": 1.0, "x": 0}),
            json!({"abcd1": "abcd2", "abcd2": "abcd3", "x": 0}),
            json!({"abcd1": "abcd2", "abcd2": 1, "x": 0}),
            json!({"abcd2": "abcd1", "x": 0}),
            json!({"abcd1": "abcd1"}),
            json!({"abcd3": "abcd1", "x": 0}),
            // Out of the schema's order, and with a property the schema does not name between.
            json!({"x": 0, "abcd2": "abcd2", "abcd1": "abcd1"}),
            json!({"abcd2": "abcd2", "y": 1, "abcd1": "abcd4", "x": 0}),
        ],
    );
}

#[test]
fn a_bare_ref_is_skipped() {
    let schema = json!({
        "$defs": {"Name": {"type": "string", "minLength": 1}, "Alias": {"$ref": "#/$defs/Name"}},
        "properties": {"a": {"$ref": "#/$defs/Alias", "description": "annotations only"}}
    });
    let (fast, _) = compile(&schema);
    let Some(Node::Checks(root)) = fast.nodes.get(fast.root) else {
        panic!("{:?}", fast.nodes)
    };
    let [Check::Properties(props)] = root.as_slice() else {
        panic!("{root:?}")
    };
    // `a` points at `Name`'s checks, not at a `$ref` to a `$ref`.
    let a = props.get("a").unwrap();
    assert!(
        matches!(&fast.nodes[a], Node::Typed(STRING, c) if matches!(c.as_slice(), [Check::MinLength(1)])),
        "{:?}",
        fast.nodes[a]
    );
    agrees(
        &schema,
        &[
            json!({"a": "x"}),
            json!({"a": ""}),
            json!({"a": 1}),
            json!({}),
        ],
    );
}

#[test]
fn too_deep_an_instance_is_left_to_boon() {
    // Debug builds of boon's recursion need more than a test thread's stack at this depth.
    let run = || {
        let schema = json!({"$defs": {"n": {"type": "array", "items": {"$ref": "#/$defs/n"}}},
            "$ref": "#/$defs/n"});
        let (fast, compiled) = compile(&schema);
        let (schemas, _) = compiled.as_boon();
        let mut deep = json!([]);
        // One node a level (`items` is a bare `$ref`, skipped), past MAX_DEPTH.
        for _ in 0..300 {
            deep = json!([deep]);
        }
        assert_eq!(fast.is_valid(&deep, schemas), None);
        assert_eq!(fast.is_valid(&json!([[[]]]), schemas), Some(true));
        // The validator then asks boon.
        let validator = Validator::new(&schema).unwrap();
        assert!(validator.is_valid(&deep));
        *deep.pointer_mut(&"/0".repeat(300)).unwrap() = json!(1);
        assert!(!validator.is_valid(&deep));
    };
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(run)
        .unwrap()
        .join()
        .unwrap();
}

/// A small JSON value of any type: numbers with and without a fraction, objects over a few names.
fn arb_instance() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-3i64..4).prop_map(Value::from),
        prop_oneof![Just(1.5), Just(2.0), Just(-0.5)].prop_map(Value::from),
        prop_oneof![
            Just(""),
            Just("a"),
            Just("AB"),
            Just("abc"),
            Just("x1"),
            // Fewer characters than bytes.
            Just("é"),
            Just("éé"),
            Just("日本"),
        ]
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::vec(
                (
                    prop_oneof![Just("a"), Just("b"), Just("c"), Just("d")],
                    inner
                ),
                0..4
            )
            .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())),
        ]
    })
}

/// The node shapes [`Fast::shape`] makes (a lone `type`, a `type` with other checks, `type` lists,
/// `required` counted by the properties pass or tested on its own, two `type`s through `allOf`),
/// with the shape each must get.
fn shaped_schemas() -> Vec<Value> {
    vec![
        json!({"type": "string"}),
        json!({"type": "integer"}),
        json!({"type": "number"}),
        json!({"type": ["integer", "null"]}),
        json!({"type": ["number", "string"]}),
        json!({"type": "object"}),
        json!({"type": "array"}),
        json!({"type": "boolean"}),
        json!({"type": "string", "minLength": 2}),
        json!({"type": "string", "minLength": 3, "maxLength": 4}),
        json!({"enum": ["a", "AB", 1, 2.0]}),
        json!({"properties": {"a": {"const": "abc"}, "b": {"const": 2}, "c": {"const": ["a"]}}}),
        json!({"type": "string", "enum": ["abc", "AB", "日本"]}),
        json!({"type": "string", "pattern": "^[a-z]+$"}),
        json!({"type": "integer", "minimum": 0}),
        json!({"type": "array", "items": {"type": "integer"}}),
        json!({"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": ["null", "boolean"]}}),
        json!({"items": {}}),
        json!({"type": "object", "required": ["a", "b"],
               "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}}),
        json!({"type": "object", "required": ["a", "c"],
               "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}}),
        json!({"required": ["a"], "properties": {"a": {}}}),
        json!({"required": [], "properties": {"b": {"type": "null"}}}),
        json!({"type": "object", "required": ["a"], "properties": {"a": {"type": "integer"}},
               "additionalProperties": {"type": "boolean"}}),
        json!({"allOf": [{"type": "integer"}, {"type": "number"}]}),
        json!({"type": "number", "allOf": [{"type": "integer"}]}),
        json!({"anyOf": [{"type": "string", "minLength": 1}, {"type": "null"}]}),
        // Unions settled by the instance's type (one branch admits it, none, or several).
        json!({"oneOf": [{"type": "integer"}, {"type": "string", "minLength": 2}, {"type": "null"}]}),
        json!({"oneOf": [{"type": "number"}, {"type": "integer"}, {"type": "object", "required": ["a"]}]}),
        json!({"anyOf": [false, {"type": ["null", "boolean"]}, {"type": "array", "maxItems": 1}]}),
        json!({"oneOf": [{"type": "array"}, {"maxItems": 2}]}),
        // A tagged union on `a` (the values generated instances hold), with `enum` and `const` tags.
        json!({"oneOf": [
            {"type": "object", "required": ["a"], "properties": {"a": {"const": "abc"}, "b": {"type": "integer"}}},
            {"type": "object", "required": ["a", "c"], "properties": {"a": {"enum": ["AB"]}}},
            {"required": ["a"], "properties": {"a": {"const": "x1"}, "b": {"type": "string"}}}
        ]}),
        json!({"$defs": {"S": {"type": "string"}},
               "type": "object", "properties": {"a": {"$ref": "#/$defs/S"}}, "required": ["a"]}),
        // Leaves of the properties pass (a lone type, `true`) beside nodes that are not.
        json!({"$defs": {"N": {"type": "number"}}, "required": ["b"],
               "properties": {"a": true, "b": {"type": ["integer", "null"]}, "c": false,
                              "d": {"$ref": "#/$defs/N"}}}),
        json!({"properties": {"a": {"type": "boolean"}, "b": {"type": "integer", "minimum": 0}},
               "additionalProperties": {"type": "string"}}),
    ]
}

#[test]
fn the_shapes_are_made() {
    let shape = |schema: Value| {
        let (fast, _) = compile(&schema);
        format!("{:?}", fast.nodes[fast.root])
    };
    assert_eq!(shape(json!({"type": "string"})), "Typed(16, [])");
    assert_eq!(
        shape(json!({"type": "string", "minLength": 2})),
        "Typed(16, [MinLength(2)])"
    );
    // Every required name has a subschema: the properties pass counts them, no `required` check.
    let all = shape(json!({"type": "object", "required": ["a"], "properties": {"a": {}}}));
    assert!(
        all.starts_with("Typed(64, [Properties(") && !all.contains("Required"),
        "{all}"
    );
    // Properties whose subschema is a lone type (or `true`) are leaves, tested in the pass.
    let (fast, _) = compile(&json!({"properties": {"a": {"type": "integer"}, "b": {},
        "c": {"type": "integer", "minimum": 0}}}));
    let Some(Node::Checks(root)) = fast.nodes.get(fast.root) else {
        panic!("{:?}", fast.nodes)
    };
    let [Check::Properties(props)] = root.as_slice() else {
        panic!("{root:?}")
    };
    let leaves: Vec<u8> = props.entries.iter().map(|e| e.leaf).collect();
    assert_eq!(leaves, [INTEGER, ANY, 0]);
    // So are an array's items, when all share one such subschema.
    let items = shape(json!({"type": "array", "items": {"type": "string"}}));
    assert!(items.contains("rest_leaf: 16"), "{items}");
    let items = shape(json!({"type": "array", "items": {"type": "string", "minLength": 1}}));
    assert!(items.contains("rest_leaf: 0"), "{items}");
    let some = shape(json!({"required": ["a", "c"], "properties": {"a": {}}}));
    assert!(some.contains("Required"), "{some}");
    assert_eq!(shape(json!({"required": [], "properties": {}})), "True");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

    /// The integer test without `trunc` is `fract() == 0.0` on every float.
    #[test]
    fn integral_is_fract_zero(f in proptest::num::f64::ANY) {
        proptest::prop_assert_eq!(integral(f), f.fract() == 0.0, "{}", f);
    }

    /// A tagged union (tag values that share a print among them) decides as boon does on objects
    /// built around its tag.
    #[test]
    fn tagged_unions_decide_as_boon_does(
        tag in proptest::prop_oneof![
            proptest::strategy::Just(json!("call_a")),
            proptest::strategy::Just(json!("call_b")),
            proptest::strategy::Just(json!("call_c")),
            proptest::strategy::Just(json!("call_d")),
            proptest::strategy::Just(json!("other")),
            proptest::strategy::Just(json!(1)),
        ],
        v in arb_instance(),
        with_v in proptest::bool::ANY,
    ) {
        let branch = |tag: &str, ty: &str| {
            json!({"type": "object", "required": ["k"],
                   "properties": {"k": {"const": tag}, "v": {"type": ty}}})
        };
        let schema = json!({"oneOf": [branch("call_a", "string"), branch("call_b", "integer"),
            branch("call_c", "null"), branch("other", "boolean")]});
        let mut instance = json!({"k": tag});
        if with_v {
            instance["v"] = v;
        }
        agrees(&schema, std::slice::from_ref(&instance));
    }

    /// Each shape's verdict is boon's on generated instances.
    #[test]
    fn each_shape_decides_as_boon_does(instance in arb_instance()) {
        for schema in shaped_schemas() {
            agrees(&schema, std::slice::from_ref(&instance));
        }
    }
}
