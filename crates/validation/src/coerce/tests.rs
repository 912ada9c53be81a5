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

#[test]
fn enum_members_in_prose_and_by_alias() {
    use FixKind::*;
    let e = json!({"enum": ["Positive", "Negative", "Neutral"]});
    check(
        e.clone(),
        json!("Mostly positive, I think."),
        json!("Positive"),
        &[EnumFromProse],
    );
    // Two members named, or none: left alone.
    check(
        e.clone(),
        json!("positive or negative"),
        json!("positive or negative"),
        &[],
    );
    check(e, json!("positivity"), json!("positivity"), &[]);
    let aliased = json!({"oneOf": [
        {"const": "Refund", "description": "Money back. Aliases: reimbursement, chargeback"},
        {"const": "TechnicalSupport", "title": "Tech support"}
    ]});
    check(
        aliased.clone(),
        json!("wants a REIMBURSEMENT"),
        json!("Refund"),
        &[EnumAlias],
    );
    check(
        aliased.clone(),
        json!("technical support"),
        json!("TechnicalSupport"),
        &[EnumFromProse],
    );
    check(
        aliased.clone(),
        json!("tech-support"),
        json!("TechnicalSupport"),
        &[EnumAlias],
    );
    check(
        aliased.clone(),
        json!("refund"),
        json!("Refund"),
        &[EnumCase],
    );
    check(
        aliased,
        json!("a chargeback, or tech support"),
        json!("a chargeback, or tech support"),
        &[],
    );
}

#[test]
fn enum_lists_from_prose() {
    use FixKind::*;
    let list = json!({"type": "array", "items": {"enum": ["Red", "Green", "Blue"]}});
    check(
        list.clone(),
        json!("blue, then red (and blue again)"),
        json!(["Blue", "Red"]),
        &[EnumList],
    );
    check(list.clone(), json!("green"), json!(["Green"]), &[EnumList]);
    // A JSON array in a string is that array; a string naming no member is wrapped as it is.
    check(
        list.clone(),
        json!("[\"red\"]"),
        json!(["Red"]),
        &[Unescaped, EnumCase],
    );
    check(list, json!("purple"), json!(["purple"]), &[WrapInArray]);
}

#[test]
fn numbers_as_written() {
    use FixKind::*;
    let num = json!({"type": "number"});
    let int = json!({"type": "integer"});
    check(num.clone(), json!("$12"), json!(12), &[Currency]);
    check(
        num.clone(),
        json!("-€1,234.50"),
        json!(-1234.5),
        &[Currency],
    );
    check(num.clone(), json!("12%"), json!(12), &[Percent]);
    check(num.clone(), json!("1/2"), json!(0.5), &[Fraction]);
    check(
        num.clone(),
        json!("about 3.5 hours"),
        json!(3.5),
        &[NumberFromProse],
    );
    check(int.clone(), json!("4/2"), json!(2), &[Fraction]);
    check(
        int.clone(),
        json!("42 people"),
        json!(42),
        &[NumberFromProse],
    );
    // Not integral, two numbers, glued to letters: left alone.
    check(int.clone(), json!("1/2"), json!("1/2"), &[]);
    check(num.clone(), json!("3 or 4"), json!("3 or 4"), &[]);
    check(num.clone(), json!("GPT-4o"), json!("GPT-4o"), &[]);
    check(num, json!("1/0"), json!("1/0"), &[]);
    check(int, json!("$1.50"), json!("$1.50"), &[]);
}

#[test]
fn booleans_and_nulls_in_prose() {
    use FixKind::*;
    let boolean = json!({"type": "boolean"});
    check(
        boolean.clone(),
        json!("Yes, it compiles."),
        json!(true),
        &[BooleanFromProse],
    );
    check(
        boolean.clone(),
        json!("That is false."),
        json!(false),
        &[BooleanFromProse],
    );
    check(boolean.clone(), json!("not true"), json!("not true"), &[]);
    check(boolean, json!("yes and no"), json!("yes and no"), &[]);
    let nullable = json!({"type": ["integer", "null"]});
    for word in ["N/A", "None", "null", "nil"] {
        check(nullable.clone(), json!(word), json!(null), &[ToNull]);
    }
    check(
        json!({"anyOf": [{"type": "number"}, {"type": "null"}]}),
        json!("n/a"),
        json!(null),
        &[ToNull],
    );
    // Not nullable, or a string allowed as it is: left alone.
    check(json!({"type": "integer"}), json!("N/A"), json!("N/A"), &[]);
    check(
        json!({"type": ["string", "null"]}),
        json!("None"),
        json!("None"),
        &[],
    );
}

#[test]
fn keys_by_case_and_alias() {
    use FixKind::*;
    let schema = json!({
        "type": "object", "additionalProperties": false, "required": ["first_name", "zip"],
        "properties": {
            "first_name": {"type": "string"},
            "zip": {"type": "string", "description": "Aliases: postal code, postcode"}
        }
    });
    check(
        schema.clone(),
        json!({"First-Name": "Ann", "Postal Code": 12345}),
        json!({"first_name": "Ann", "zip": "12345"}),
        &[KeyCase, KeyAlias, ToString],
    );
    let (_, fixes) = coerce(json!({"FIRSTNAME": "Ann"}), &schema);
    assert_eq!(
        (
            fixes[0].pointer.as_str(),
            fixes[0].before.as_str(),
            fixes[0].after.as_str()
        ),
        ("/first_name", "FIRSTNAME", "first_name")
    );
    // Two keys for one property, or a property already there: no rename (the unknown keys are dropped).
    check(
        schema.clone(),
        json!({"firstName": "Ann", "first-name": "Bo"}),
        json!({}),
        &[DroppedProperty, DroppedProperty],
    );
    check(
        schema,
        json!({"first_name": "Ann", "FirstName": "Bo"}),
        json!({"first_name": "Ann"}),
        &[DroppedProperty],
    );
}

#[test]
fn unions_take_the_branch_needing_fewest_coercions() {
    use FixKind::*;
    let scalar = json!({"anyOf": [{"type": "integer"}, {"type": "boolean"}]});
    check(
        scalar.clone(),
        json!("yes"),
        json!(true),
        &[StringToBoolean],
    );
    check(scalar.clone(), json!("12"), json!(12), &[StringToNumber]);
    // "1" is 1 or true with one coercion each: ambiguous, left alone.
    check(scalar, json!("1"), json!("1"), &[]);
    let objects = json!({"anyOf": [
        {"type": "object", "required": ["a"], "properties": {"a": {"type": "integer"}}},
        {"type": "object", "required": ["b"], "properties": {"b": {"type": "string"}, "c": {"type": "integer"}}}
    ]});
    check(
        objects.clone(),
        json!({"a": "5"}),
        json!({"a": 5}),
        &[StringToNumber],
    );
    check(
        objects.clone(),
        json!({"b": "x", "c": "5"}),
        json!({"b": "x", "c": 5}),
        &[StringToNumber],
    );
    // A value that fits one branch as it is is not coerced into another.
    check(
        json!({"anyOf": [{"type": "string"}, {"enum": ["Positive"]}]}),
        json!("positive vibes"),
        json!("positive vibes"),
        &[],
    );
    // Fewer coercions win: branch 2 needs one, branch 1 two.
    let fewer = json!({"oneOf": [
        {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}}},
        {"type": "object", "properties": {"x": {"type": "string"}, "y": {"type": "integer"}}}
    ]});
    check(
        fewer,
        json!({"x": "a1", "y": "2"}),
        json!({"x": "a1", "y": 2}),
        &[StringToNumber],
    );
}

#[test]
fn defaults_fill_required_properties_only() {
    use FixKind::*;
    let schema = json!({"type": "object", "required": ["name", "role"], "properties": {
        "name": {"type": "string"}, "role": {"type": "string", "default": "user"},
        "team": {"type": "string", "default": "core"}
    }});
    check(
        schema.clone(),
        json!({"name": "Ada"}),
        json!({"name": "Ada", "role": "user"}),
        &[Default],
    );
    // Present, or optional: left as it is.
    check(
        schema.clone(),
        json!({"name": "Ada", "role": "admin"}),
        json!({"name": "Ada", "role": "admin"}),
        &[],
    );
    // No default: nothing invented.
    check(schema, json!({"role": "x"}), json!({"role": "x"}), &[]);
    let by_ref = json!({"$defs": {"L": {"enum": ["en", "fr"], "default": "en"}},
        "type": "object", "required": ["lang"], "properties": {"lang": {"$ref": "#/$defs/L"}}});
    check(by_ref, json!({}), json!({"lang": "en"}), &[Default]);
}

#[test]
fn one_element_arrays_and_json_as_string() {
    use FixKind::*;
    let object =
        json!({"type": "object", "required": ["a"], "properties": {"a": {"type": "integer"}}});
    check(
        object.clone(),
        json!([{"a": 1}]),
        json!({"a": 1}),
        &[Unwrapped],
    );
    check(
        object,
        json!([{"a": 1}, {"a": 2}]),
        json!([{"a": 1}, {"a": 2}]),
        &[],
    );
    check(
        json!({"type": "integer"}),
        json!([3]),
        json!(3),
        &[Unwrapped],
    );
    let text = json!({"type": "object", "properties": {"v": {"type": "string"}}});
    check(
        text.clone(),
        json!({"v": {"a": 1}}),
        json!({"v": "{\"a\":1}"}),
        &[JsonAsString],
    );
    check(
        text.clone(),
        json!({"v": [1, 2]}),
        json!({"v": "[1,2]"}),
        &[JsonAsString],
    );
    // Empty: nothing to write; at the root: the reply's own text is `align`'s to take.
    check(text, json!({"v": []}), json!({"v": []}), &[]);
    check(
        json!({"type": "string"}),
        json!({"a": 1}),
        json!({"a": 1}),
        &[],
    );
    // In a union, a branch is not chosen by writing JSON as text.
    let union = json!({"type": "object", "properties": {"v": {"anyOf": [
        {"type": "string"}, {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}
    ]}}});
    check(
        union,
        json!({"v": {"n": "2"}}),
        json!({"v": {"n": 2}}),
        &[StringToNumber],
    );
}
