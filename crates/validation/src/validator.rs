//! The [`Validator`]: boon underneath, owned [`Violation`]s on top, discriminated unions dispatched.

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use claij_schema::{CompiledSchema, Draft, Memo, boon};
use serde_json::Value;

use crate::Error;
use crate::violation::Violation;

mod convert;
mod fast;
mod plan;

use fast::Fast;
use plan::{By, Plan, Walk};

/// A compiled schema that validates instances and reports every violation with its JSON pointer.
///
/// ```
/// use claij_validation::Validator;
/// use serde_json::json;
///
/// let validator = Validator::new(&claij_schema::base())?;
/// assert!(validator.is_valid(&json!({"answer": "hi", "state": "done"})));
///
/// let violations = validator.validate(&json!({"answer": 42})).unwrap_err();
/// let found: Vec<String> = violations.iter().map(ToString::to_string).collect();
/// assert_eq!(found, [
///     "(root): missing required property `state`",
///     "/answer: expected string, got number",
/// ]);
/// # Ok::<(), claij_validation::Error>(())
/// ```
///
/// A `oneOf`/`anyOf` whose branches require one property with distinct constant values (`"tool":
/// "search"`, an FSM transition `id`) is a *discriminated union*: the validator dispatches on that value
/// and reports only the chosen branch's violations, or the unknown value and the values allowed.
///
/// Speed: the valid case, the common one, is decided by a compiled check that builds nothing (see
/// [`FastPath`]); boon runs only when something fails, to say what. A tagged union costs its chosen
/// branch, and `anyOf: [T, {"type": "null"}]` a type test.
pub struct Validator {
    schema: Arc<Value>,
    compiled: CompiledSchema,
    root: boon::SchemaIndex,
    branches: Vec<boon::SchemaIndex>,
    walk: Option<Arc<Walk>>,
    fast: Option<Fast>,
}

/// How much of a schema [`Validator::is_valid`] decides with its compiled check rather than boon.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FastPath {
    /// Every subschema.
    Full,
    /// All but `deferred` subschemas (with `format`, `unevaluated*`, `content*`, a `$ref` to
    /// another document, ...), which boon validates on their own.
    Partial {
        /// How many subschemas boon validates.
        deferred: usize,
    },
    /// None: the schema has dynamic references, anchors or embedded resources, or is of a draft other
    /// than 07 and 2020-12; boon validates it all.
    Off,
}

impl Validator {
    /// Compiles `schema` (draft 2020-12 unless it declares draft-07 or another draft).
    ///
    /// # Errors
    ///
    /// [`Error::Schema`] when the schema is not valid, saying where.
    pub fn new(schema: &Value) -> Result<Self, Error> {
        let legacy_ref = matches!(
            Draft::of(schema),
            Some(Draft::Draft4 | Draft::Draft6 | Draft::Draft7)
        );
        let plan = Plan::new(schema, legacy_ref);
        let fast = Draft::of(schema).and_then(|draft| Fast::compile(schema, draft));
        let deferred: Vec<String> = fast.as_ref().map_or_else(Vec::new, |(_, d)| d.clone());
        // Without a rewrite, boon compiles the schema as written and the subschemas the fast check
        // defers along with it.
        let plain = |deferred: &[String]| {
            claij_schema::compile_at(schema, deferred)
                .or_else(|_| claij_schema::compile_at(schema, &[]))
        };
        let ((compiled, mut branches), walk) = if plan.root.is_none() {
            (plain(&deferred)?, None)
        } else {
            // Check the schema as written first, so errors point into it rather than into the rewrite.
            claij_schema::check(schema)?;
            match claij_schema::compile_at(&plan.rewritten, &plan.branch_pointers) {
                Ok(done) => (done, plan.root),
                // The rewrite is an optimisation: should boon refuse it, validate the plain way.
                Err(_) => (plain(&deferred)?, None),
            }
        };
        let fast = match fast {
            None => None,
            Some((fast, _)) if deferred.is_empty() => Some(fast),
            Some((mut fast, _)) if walk.is_none() => {
                (branches.len() == deferred.len()).then(|| {
                    fast.set_deferred(std::mem::take(&mut branches), None);
                    fast
                })
            }
            // The rewrite renames the planned unions, which boon then skips: the deferred subschemas
            // are compiled from the schema as written, on their own.
            Some((mut fast, _)) => {
                claij_schema::compile_at(schema, &deferred)
                    .ok()
                    .map(|(own, indexes)| {
                        fast.set_deferred(indexes, Some(own));
                        fast
                    })
            }
        };
        let (_, root) = compiled.as_boon();
        Ok(Self {
            schema: Arc::new(schema.clone()),
            root,
            compiled,
            branches,
            walk,
            fast,
        })
    }

    /// How much of the schema [`Validator::is_valid`] decides without boon.
    pub fn fast_path(&self) -> FastPath {
        match &self.fast {
            None => FastPath::Off,
            Some(fast) => match fast.deferred() {
                0 => FastPath::Full,
                deferred => FastPath::Partial { deferred },
            },
        }
    }

    /// The validator for `schema` from `memo`, compiling it only the first time that content is seen.
    ///
    /// # Errors
    ///
    /// As [`Validator::new`].
    pub fn memoized(memo: &Memo<Validator>, schema: &Value) -> Result<Arc<Validator>, Error> {
        memo.get_or_try_insert(schema, Validator::new)
    }

    /// The schema this validator enforces, as given.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// Whether the instance is valid: the compiled check, which builds nothing, where it applies
    /// (see [`Validator::fast_path`]); boon otherwise. Always the verdict [`Validator::validate`] gives.
    pub fn is_valid(&self, instance: &Value) -> bool {
        if let Some(fast) = &self.fast {
            let (schemas, _) = self.compiled.as_boon();
            if let Some(valid) = fast.is_valid(instance, schemas) {
                return valid;
            }
        }
        self.explain(instance).is_ok()
    }

    /// Validates an instance: `Ok` or every violation, deduplicated, in document order of discovery.
    ///
    /// A valid instance costs [`Validator::is_valid`]; boon's error tree is built only for an invalid one.
    ///
    /// # Errors
    ///
    /// The violations, never empty.
    pub fn validate(&self, instance: &Value) -> Result<(), Vec<Violation>> {
        if self.is_valid(instance) {
            return Ok(());
        }
        self.explain(instance)
    }

    /// Validates with boon and the union walk, for the violations: [`Validator::validate`] without the
    /// compiled check first, for an instance already known to fail it.
    pub(crate) fn explain(&self, instance: &Value) -> Result<(), Vec<Violation>> {
        let mut out = Vec::new();
        let (schemas, _) = self.compiled.as_boon();
        if let Err(e) = schemas.validate(instance, self.root) {
            convert::collect(&e, "", &mut out);
        }
        if let Some(walk) = &self.walk {
            let mut pointer = String::new();
            self.walk(walk, instance, &mut pointer, &mut out);
        }
        if out.is_empty() {
            return Ok(());
        }
        let mut seen = HashSet::with_capacity(out.len());
        out.retain(|v| {
            seen.insert((
                v.instance_pointer.clone(),
                v.keyword.clone(),
                v.message.clone(),
            ))
        });
        Err(out)
    }

    /// Validates what the walk reaches below `value`: planned unions, dispatched on their discriminator.
    fn walk(&self, walk: &Walk, value: &Value, pointer: &mut String, out: &mut Vec<Violation>) {
        match value {
            Value::Object(map) => {
                for (name, sub) in &walk.props {
                    if let Some(v) = map.get(name) {
                        let len = pointer.len();
                        push_token(pointer, name);
                        self.walk(sub, v, pointer, out);
                        pointer.truncate(len);
                    }
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    let prefix = walk.prefix.iter().filter(|(at, _)| *at == i);
                    let rest = walk.items.iter().filter(|(from, _)| i >= *from);
                    for (_, sub) in prefix.chain(rest) {
                        let len = pointer.len();
                        pointer.push('/');
                        pointer.push_str(&i.to_string());
                        self.walk(sub, item, pointer, out);
                        pointer.truncate(len);
                    }
                }
            }
            _ => {}
        }
        for union in &walk.unions {
            self.dispatch(union, value, pointer, out);
        }
    }

    fn dispatch(
        &self,
        union: &plan::Union,
        value: &Value,
        pointer: &mut String,
        out: &mut Vec<Violation>,
    ) {
        let violation = |instance_pointer: String, message: String| Violation {
            instance_pointer,
            schema_pointer: union.schema_pointer.clone(),
            keyword: union.keyword.to_owned(),
            message,
        };
        let branch = match &union.by {
            By::Prop(prop) => match self.by_prop(union, prop, value, pointer) {
                Ok(branch) => branch,
                Err((at, message)) => return out.push(violation(at, message)),
            },
            By::Type => {
                let found = union.branches.iter().find(|b| {
                    b.value.as_array().is_some_and(|ts| {
                        ts.iter()
                            .any(|t| t.as_str().is_some_and(|t| admits(t, value)))
                    })
                });
                match found {
                    Some(branch) => branch,
                    None => {
                        let types: Vec<&Value> = union
                            .branches
                            .iter()
                            .filter_map(|b| b.value.as_array())
                            .flatten()
                            .collect();
                        let message = format!(
                            "expected {}, got {}",
                            convert::list(types.into_iter()).replace('"', ""),
                            convert::type_name(value)
                        );
                        return out.push(violation(pointer.clone(), message));
                    }
                }
            }
        };
        let (schemas, _) = self.compiled.as_boon();
        if let Some(index) = self.branches.get(branch.index)
            && let Err(e) = schemas.validate(value, *index)
        {
            convert::collect(&e, pointer, out);
        }
        if let Some(walk) = &branch.walk {
            self.walk(walk, value, pointer, out);
        }
    }

    /// The branch a discriminating property selects, or where and why none does.
    fn by_prop<'u>(
        &self,
        union: &'u plan::Union,
        prop: &str,
        value: &Value,
        pointer: &str,
    ) -> Result<&'u plan::Branch, (String, String)> {
        let expected = || convert::list(union.branches.iter().map(|b| &b.value));
        let Value::Object(map) = value else {
            return Err((
                pointer.to_owned(),
                format!(
                    "expected an object whose `{prop}` is one of {}, got {}",
                    expected(),
                    convert::type_name(value)
                ),
            ));
        };
        let Some(tag) = map.get(prop) else {
            return Err((
                pointer.to_owned(),
                format!(
                    "missing required property `{prop}`; expected one of {}",
                    expected()
                ),
            ));
        };
        union
            .branches
            .iter()
            .find(|b| b.value == *tag)
            .ok_or_else(|| {
                let mut at = pointer.to_owned();
                push_token(&mut at, prop);
                (
                    at,
                    format!(
                        "unknown value {}; expected one of {}",
                        convert::short(tag),
                        expected()
                    ),
                )
            })
    }
}

/// Whether a JSON Schema type name admits a value (`integer` admits `1.0`).
fn admits(t: &str, value: &Value) -> bool {
    match (t, value) {
        ("null", Value::Null)
        | ("boolean", Value::Bool(_))
        | ("number", Value::Number(_))
        | ("string", Value::String(_))
        | ("array", Value::Array(_))
        | ("object", Value::Object(_)) => true,
        ("integer", Value::Number(n)) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

impl fmt::Debug for Validator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Validator")
            .field("draft", &self.compiled.draft())
            .field("dispatched_branches", &self.branches.len())
            .finish_non_exhaustive()
    }
}

fn push_token(pointer: &mut String, token: &str) {
    pointer.push('/');
    pointer.push_str(&claij_schema::pointer::escape(token));
}

#[cfg(test)]
mod tests;
