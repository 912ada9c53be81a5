//! Tests of coercion, one case per line.

use serde_json::{Value, json};

use super::*;

#[track_caller]
fn check(schema: Value, input: Value, expected: Value, kinds: &[FixKind]) {
    let (got, fixes) = coerce(input, &schema);
    assert_eq!(got, expected);
    let got_kinds: Vec<FixKind> = fixes.iter().map(|f| f.kind).collect();
    assert_eq!(got_kinds, kinds);
}

#[test]
fn scalars() {
    use FixKind::*;
    let int = json!({"type": "integer"});
    let num = json!({"type": "number"});
    check(int.clone(), json!("5"), json!(5), &[StringToNumber]);
    check(int.clone(), json!(" -12 "), json!(-12), &[StringToNumber]);
    check(int.clone(), json!(5.0), json!(5.0), &[]); // 5.0 is an integer to JSON Schema
    check(int.clone(), json!("5.5"), json!("5.5"), &[]);
    check(int.clone(), json!("five"), json!("five"), &[]);
    check(
        num.clone(),
        json!("1,234.5"),
        json!(1234.5),
        &[StringToNumber],
    );
    check(num.clone(), json!("1,23"), json!("1,23"), &[]);
    check(num.clone(), json!("inf"), json!("inf"), &[]);
    check(num, json!("1e3"), json!(1000), &[StringToNumber]);
    let boolean = json!({"type": "boolean"});
    check(
        boolean.clone(),
        json!("Yes"),
        json!(true),
        &[StringToBoolean],
    );
    check(
        boolean.clone(),
        json!("off"),
        json!(false),
        &[StringToBoolean],
    );
    check(boolean.clone(), json!(1), json!(true), &[StringToBoolean]);
    check(boolean, json!("maybe"), json!("maybe"), &[]);
    let string = json!({"type": "string"});
    check(string.clone(), json!(42), json!("42"), &[ToString]);
    check(string.clone(), json!(true), json!("true"), &[ToString]);
    check(string, json!(null), json!(null), &[]);
    check(
        json!({"type": "null"}),
        json!("NULL"),
        json!(null),
        &[ToNull],
    );
    check(
        json!({"type": ["integer", "null"]}),
        json!("7"),
        json!(7),
        &[StringToNumber],
    );
}

#[test]
fn enums() {
    use FixKind::*;
    let e = json!({"enum": ["Red", "Dark Green"]});
    check(e.clone(), json!(" red"), json!("Red"), &[EnumCase]);
    check(
        e.clone(),
        json!("dark   GREEN"),
        json!("Dark Green"),
        &[EnumCase],
    );
    check(e, json!("blue"), json!("blue"), &[]);
    // Ambiguous: two options normalise alike, so nothing is chosen.
    check(json!({"enum": ["a", "A"]}), json!("a "), json!("a "), &[]);
    check(
        json!({"const": "yes"}),
        json!("YES"),
        json!("yes"),
        &[EnumCase],
    );
    check(
        json!({"enum": [1, 2]}),
        json!("2"),
        json!(2),
        &[StringToNumber],
    );
}

#[test]
fn containers() {
    use FixKind::*;
    let schema = json!({
        "type": "object", "additionalProperties": false, "required": ["xs"],
        "properties": {"xs": {"type": "array", "items": {"type": "integer"}}, "o": {"type": "object"}}
    });
    check(
        schema.clone(),
        json!({"xs": "3"}),
        json!({"xs": [3]}),
        &[WrapInArray, StringToNumber],
    );
    check(
        schema.clone(),
        json!({"xs": ["1", 2], "junk": 1}),
        json!({"xs": [1, 2]}),
        &[DroppedProperty, StringToNumber],
    );
    check(
        schema.clone(),
        json!({"o": "{\"a\": 1}"}),
        json!({"o": {"a": 1}}),
        &[Unescaped],
    );
    // Never invents the missing required `xs`.
    check(schema, json!({}), json!({}), &[]);
    let (_, fixes) = coerce(
        json!({"xs": ["1"]}),
        &json!({"properties": {"xs": {"items": {"type": "integer"}}}}),
    );
    assert_eq!(fixes[0].pointer, "/xs/0");
    assert_eq!(
        (fixes[0].before.as_str(), fixes[0].after.as_str()),
        ("\"1\"", "1")
    );
}

#[test]
fn refs_and_unions() {
    use FixKind::*;
    let schema = json!({
        "$defs": {"N": {"type": "integer"}},
        "properties": {
            "n": {"$ref": "#/$defs/N"},
            "maybe": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "call": {"oneOf": [
                {"properties": {"tool": {"const": "add"}, "a": {"type": "integer"}}},
                {"properties": {"tool": {"const": "say"}, "a": {"type": "string"}}}
            ]}
        }
    });
    check(
        schema,
        json!({"n": "1", "maybe": "2", "call": {"tool": "say", "a": 3}}),
        json!({"n": 1, "maybe": 2, "call": {"tool": "say", "a": "3"}}),
        &[StringToNumber, StringToNumber, ToString],
    );
    // A recursive schema terminates.
    let rec = json!({"$ref": "#"});
    check(rec, json!({"a": 1}), json!({"a": 1}), &[]);
}

#[test]
fn pattern_properties_and_embedded_json() {
    use FixKind::*;
    let schema = json!({
        "type": "object", "additionalProperties": false,
        "properties": {"s": {"type": "object", "properties": {"v": {"type": "string"}}}},
        "patternProperties": {"^x": {"type": "integer"}}
    });
    check(
        schema.clone(),
        json!({"x1": "2", "other": true, "s": "{v: 'bad', }"}),
        json!({"x1": 2, "s": {"v": "bad"}}),
        &[DroppedProperty, StringToNumber, Unescaped],
    );
    // Prose is not parsed into a value, even when the schema wants an object.
    check(
        schema,
        json!({"s": "see {v} above"}),
        json!({"s": "see {v} above"}),
        &[],
    );
    // A pattern Rust cannot compile (look-ahead): nothing is dropped.
    let odd = json!({"additionalProperties": false, "patternProperties": {"^(?!y)": {}}});
    check(odd, json!({"a": 1}), json!({"a": 1}), &[]);
}

#[test]
fn nulls_for_optional_fields_are_dropped() {
    use FixKind::*;
    let schema = json!({
        "type": "object", "required": ["a"],
        "properties": {"a": {"type": "string"}, "b": {"type": "string"}, "c": {"type": ["string", "null"]}, "d": {}}
    });
    // `b` is optional and not nullable: null means "left out". `a` is required: never dropped.
    check(
        schema,
        json!({"a": null, "b": null, "c": null, "d": null}),
        json!({"a": null, "c": null, "d": null}),
        &[DroppedNull],
    );
}
