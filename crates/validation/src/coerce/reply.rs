//! Schema-aligned reading of a whole reply that did not validate as it was: of the JSON values found in
//! it, the one that fits with the fewest coercions; else the reply itself as the value, when the schema
//! asks for a scalar (a string, a number, a boolean, an enum, a list of enum members).

use serde_json::Value;

use super::{Coercer, coerce, types};
use crate::fix::{Fix, FixKind};
use crate::outcome::Outcome;
use crate::validator::Validator;

/// What a reply becomes when none of the JSON values found in it (`recovered`: each value as extracted
/// and repaired, with those fixes, most preferred first) validates as it is.
///
/// - Each value is [`coerce`]d and validated; of those that validate, the one that needed the fewest
///   coercions wins ([`FixKind::BestCandidate`] when it is not the first). Two that need as few with
///   different values are ambiguous: neither is taken.
/// - Else, when the schema asks for a scalar, the reply itself (see [`from_reply`]), if it validates
///   (or, when no JSON value was found, as [`Outcome::Invalid`] with what is wrong with it).
/// - Else the value with the fewest violations (the first of equals), as [`Outcome::Invalid`]; `None`
///   when there was no value at all (the caller says why).
///
/// Only the failure path pays for this: a value that validates as it is never comes here.
///
/// ```
/// use claij_validation::{FixKind, Outcome, Validator, coerce::align};
/// use serde_json::json;
///
/// let validator = Validator::new(&json!({"enum": ["Positive", "Negative", "Neutral"]}))?;
/// let Some(Outcome::Valid { value, fixes }) = align("I'd say it's mostly positive.", Vec::new(), &validator)
/// else { panic!() };
/// assert_eq!(value, "Positive");
/// assert_eq!(fixes.last().map(|f| f.kind), Some(FixKind::EnumFromProse));
/// # Ok::<(), claij_validation::Error>(())
/// ```
pub fn align(
    reply: &str,
    recovered: Vec<(Value, Vec<Fix>)>,
    validator: &Validator,
) -> Option<Outcome> {
    let schema = validator.schema();
    let total = recovered.len();
    // (index, coercions, value, fixes) of the values that validate after coercion.
    let mut fits: Vec<(usize, usize, Value, Vec<Fix>)> = Vec::new();
    let mut misfits = Vec::new();
    let mut first: Option<(Value, Vec<Fix>)> = None;
    for (index, (value, mut fixes)) in recovered.into_iter().enumerate() {
        if first.is_none() {
            first = Some((value.clone(), fixes.clone()));
        }
        let (coerced, coercions) = coerce(value, schema);
        let count = coercions.iter().filter(|f| f.kind.is_coercion()).count();
        // A value coercion left as it was has failed the compiled check already (in `process`): only
        // boon's account of why is left to get.
        let checked = if coercions.is_empty() {
            validator.explain(&coerced)
        } else {
            validator.validate(&coerced)
        };
        fixes.extend(coercions);
        match checked {
            Ok(()) => fits.push((index, count, coerced, fixes)),
            Err(violations) => misfits.push((coerced, violations, fixes)),
        }
    }
    let fewest = fits.iter().map(|(_, count, _, _)| *count).min();
    let mut best = fits
        .into_iter()
        .filter(|(_, count, _, _)| Some(*count) == fewest);
    if let Some((index, count, value, mut fixes)) = best.next() {
        // Two values that fit as well only after coercion, differently: which one the model meant is
        // not in the reply, so neither is coerced and the first keeps its violations.
        if count > 0
            && best.any(|(_, _, other, _)| other != value)
            && let Some((value, fixes)) = first
            && let Err(violations) = validator.validate(&value)
        {
            return Some(Outcome::Invalid {
                value,
                violations,
                fixes,
            });
        }
        if index > 0 {
            fixes.push(Fix {
                pointer: String::new(),
                kind: FixKind::BestCandidate,
                before: format!("value {} of {total}", index + 1),
                after: String::new(),
            });
        }
        return Some(Outcome::Valid { value, fixes });
    }
    let read = from_reply(reply, schema);
    if let Some((value, fixes)) = read {
        match validator.validate(&value) {
            Ok(()) => return Some(Outcome::Valid { value, fixes }),
            // Prose where a scalar is asked: what is wrong with it says more than "no JSON".
            Err(violations) if misfits.is_empty() => {
                return Some(Outcome::Invalid {
                    value,
                    violations,
                    fixes,
                });
            }
            Err(_) => {}
        }
    }
    let fewest = misfits
        .iter()
        .map(|(_, violations, _)| violations.len())
        .min();
    let (value, violations, fixes) = misfits
        .into_iter()
        .find(|(_, violations, _)| Some(violations.len()) == fewest)?;
    Some(Outcome::Invalid {
        value,
        violations,
        fixes,
    })
}

/// The reply itself as the value, when `schema` asks for a scalar (a string, number, integer, boolean,
/// enum member, or an array of enum members): the reply without reasoning blocks, fence and one pair of
/// surrounding quotes, as a string ([`FixKind::ReplyAsValue`]), then [`coerce`]d to the schema.
/// `None` when the schema asks for something else or nothing is left of the reply. The value is not
/// validated here.
///
/// ```
/// use claij_validation::{FixKind, coerce::from_reply};
/// use serde_json::json;
///
/// let (value, fixes) = from_reply("```\nParis\n```", &json!({"type": "string"})).unwrap();
/// assert_eq!(value, "Paris");
/// assert_eq!(fixes.last().map(|f| f.kind), Some(FixKind::ReplyAsValue));
///
/// let (value, _) = from_reply("It costs $1,234.50.", &json!({"type": "number"})).unwrap();
/// assert_eq!(value, 1234.5);
/// assert!(from_reply("Paris", &json!({"type": "object"})).is_none());
/// ```
pub fn from_reply(reply: &str, schema: &Value) -> Option<(Value, Vec<Fix>)> {
    let probe = Coercer {
        root: schema,
        fixes: &mut Vec::new(),
    };
    if !asks_scalar(&probe, schema, 0) {
        return None;
    }
    let (text, mut fixes) = crate::extract::bare_text(reply)?;
    fixes.push(Fix {
        pointer: String::new(),
        kind: FixKind::ReplyAsValue,
        before: crate::repair::excerpt(reply),
        after: crate::repair::excerpt(&text),
    });
    let (value, coercions) = coerce(Value::String(text), schema);
    fixes.extend(coercions);
    Some((value, fixes))
}

/// Whether a schema asks for a scalar, an enum member or a list of enum members (through `$ref` and
/// unions).
fn asks_scalar<'s>(probe: &Coercer<'s, '_>, schema: &'s Value, depth: usize) -> bool {
    if depth > super::MAX_DEPTH {
        return false;
    }
    let Some(node) = probe.deref(schema).as_object() else {
        return false;
    };
    if let Some(ts) = types(node) {
        let scalar = ts
            .iter()
            .any(|t| matches!(*t, "string" | "number" | "integer" | "boolean"));
        if scalar || (ts.contains(&"array") && probe.item_members(node).is_some()) {
            return true;
        }
    }
    ["oneOf", "anyOf"]
        .iter()
        .any(|keyword| match node.get(*keyword) {
            Some(Value::Array(branches)) => {
                probe.const_members(branches).is_some()
                    || branches.iter().any(|b| asks_scalar(probe, b, depth + 1))
            }
            _ => false,
        })
}
