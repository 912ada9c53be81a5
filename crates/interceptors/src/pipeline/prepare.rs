//! The composed schema of a request, checked, compiled and rendered once per distinct set of deltas.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::SystemTime;

use claij_backends::{SchemaDialect, SharedJson};
use claij_schema::dialect::{Compiled, Dialect, DialectError};
use claij_schema::{Memo, Registry, SchemaDelta, SchemaHash};
use claij_validation::Validator;
use serde_json::Value;

use super::SchemaFormat;
use crate::chain::Chain;
use crate::error::Error;
use crate::interceptor::OnError;

/// A composed schema ready for requests: its validator, its prompt section, and its provider dialects
/// (compiled on first use).
#[derive(Debug)]
pub struct Prepared {
    schema: Arc<Value>,
    validator: Validator,
    section: String,
    /// Each dialect's compilation, with its schema shared and serialized once for requests.
    /// Keyed by the dialect and whether the place takes only an object root (a tool's parameters).
    dialects: Mutex<HashMap<(SchemaDialect, bool), Dialected>>,
    /// An example reply as minified JSON, built on first use (`None`: the schema has none).
    example: OnceLock<Option<String>>,
    /// The composed schema's content hash, for spans (`claij.schema.hash`).
    hash: SchemaHash,
    /// The extension ids of the deltas composed, comma-separated, for spans (`claij.extensions`).
    extensions: String,
}

impl Prepared {
    fn new(
        schema: &Value,
        format: SchemaFormat,
        extensions: String,
    ) -> Result<Self, claij_validation::Error> {
        let validator = Validator::new(schema)?;
        let section = match format {
            SchemaFormat::Compact => format!(
                "Respond with only a JSON value that conforms to this schema, written in TypeScript-like \
                 notation (`?` marks an optional field; `//` comments describe fields and their \
                 constraints). No prose, no code fences.\n\n{}",
                claij_schema::to_compact(schema)
            ),
            SchemaFormat::Described => String::new(),
            SchemaFormat::Json => format!(
                "Respond with only a JSON value that conforms to this JSON Schema. No prose, no code \
                 fences.\n\n{}",
                claij_schema::to_json(schema)
            ),
        };
        Ok(Self {
            schema: Arc::new(schema.clone()),
            validator,
            section,
            dialects: Mutex::new(HashMap::new()),
            example: OnceLock::new(),
            hash: SchemaHash::of(schema),
            extensions,
        })
    }

    /// The schema compiled for a provider's dialect, with what it loses (compiled once per dialect).
    ///
    /// # Errors
    ///
    /// When the dialect cannot express the schema at all (a recursive schema for Gemini).
    pub fn dialect(&self, dialect: SchemaDialect) -> Result<Arc<Compiled>, DialectError> {
        self.dialect_shared(dialect, false).map(|d| d.compiled)
    }

    /// [`Prepared::dialect`], with the compiled schema as requests carry it: shared and
    /// serialized once, so no attempt copies or serializes the schema again. With `object_root` (a
    /// tool's parameters), a root that is not an object goes in the envelope in every dialect.
    pub(super) fn dialect_shared(
        &self,
        dialect: SchemaDialect,
        object_root: bool,
    ) -> Result<Dialected, DialectError> {
        let mut cache = self.dialects.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(done) = cache.get(&(dialect, object_root)) {
            return Ok(done.clone());
        }
        let compiled = compile_for(dialect, &self.schema, object_root)?;
        let done = Dialected {
            schema: SharedJson::new(compiled.schema.clone()),
            loss_lines: Arc::new(super::request::LossLines::new(&compiled.losses)),
            losses: Arc::new(compiled.losses.clone()),
            compiled: Arc::new(compiled),
        };
        cache.insert((dialect, object_root), done.clone());
        Ok(done)
    }

    /// The composed schema.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// Its validator.
    pub fn validator(&self) -> &Validator {
        &self.validator
    }

    /// An example of a valid reply, as minified JSON ([`claij_schema::example()`], built once);
    /// `None` when the schema has none (the reason is logged at debug level).
    pub fn example(&self) -> Option<&str> {
        self.example
            .get_or_init(|| match claij_schema::example(&self.schema) {
                Ok(value) => Some(value.to_string()),
                Err(error) => {
                    tracing::debug!(%error, "no example reply for the schema");
                    None
                }
            })
            .as_deref()
    }

    /// The system-prompt section that shows the model the schema.
    pub fn prompt_section(&self) -> &str {
        &self.section
    }

    /// The composed schema's content hash.
    pub(super) fn hash(&self) -> SchemaHash {
        self.hash
    }

    /// The extension ids of the deltas composed (of the first composition to give this schema),
    /// comma-separated; empty for the base alone.
    pub(super) fn extensions(&self) -> &str {
        &self.extensions
    }
}

/// A dialect's compilation as calls use it, each part shared: the compiled schema, its text for
/// requests, and what it loses (every attempt's report points at the one list).
#[derive(Debug, Clone)]
pub(super) struct Dialected {
    pub(super) compiled: Arc<Compiled>,
    pub(super) schema: SharedJson,
    pub(super) losses: Arc<Vec<claij_schema::dialect::Loss>>,
    /// The losses as each call logs them, listed once.
    pub(super) loss_lines: Arc<super::request::LossLines>,
}

/// Registries (one per base schema) and compiled schemas, shared by every call of a pipeline.
///
/// What each cache keys and why it pays:
/// - `bases`: the base schema's address (an `Arc` the pipeline or [`crate::schema_of`] keeps alive)
///   → its [`Registry`] (so the audit log records each change once), the deltas it refused, and
///   `last`: the previous call's deltas and [`SchemaFormat`] → its [`Prepared`]. Most turns offer the
///   same deltas, so comparing them skips syncing the registry and hashing the composed schema.
/// - `compact`, `json`, `described`: the composed schema's content hash ([`Memo`]) → its
///   [`Prepared`], one memo per format since the prompt section differs: compiling a validator is
///   the expensive step, and deltas that come back (memory on, off, on) find it again.
/// - Inside a [`Prepared`]: `dialects`, per [`SchemaDialect`] → the compiled dialect and its losses
///   (a dialect compile walks the whole schema), and `example`, built once.
/// - Outside the pipeline, [`crate::schema_of`] keeps each Rust type's derived schema for the life
///   of the process, so a typed call finds its base (keyed by address above) again.
#[derive(Default)]
pub(super) struct Schemas {
    bases: HashMap<usize, BaseState>,
    compact: Memo<Prepared>,
    json: Memo<Prepared>,
    described: Memo<Prepared>,
}

struct BaseState {
    /// Keeps the base alive, so its address stays a valid key.
    _base: Arc<Value>,
    registry: Registry,
    /// Deltas the registry refused, not offered again (their interceptor's policy is `Skip`).
    rejected: HashSet<(String, String)>,
    last: Option<(Vec<SchemaDelta>, SchemaFormat, Arc<Prepared>)>,
}

impl Schemas {
    pub(super) fn audit(&self, base: &Arc<Value>) -> Option<claij_schema::AuditLog> {
        let key = Arc::as_ptr(base) as usize;
        self.bases.get(&key).map(|b| b.registry.audit().clone())
    }

    /// The deltas the registry of `base` has active: those the last request on it was composed of.
    pub(super) fn applied(&self, base: &Arc<Value>) -> Vec<SchemaDelta> {
        let key = Arc::as_ptr(base) as usize;
        self.bases
            .get(&key)
            .map(|b| b.registry.extensions().to_vec())
            .unwrap_or_default()
    }

    /// The prepared schema for `base` grown by `deltas`: the last one again when nothing changed.
    pub(super) fn prepare(
        &mut self,
        base: &Arc<Value>,
        deltas: Vec<SchemaDelta>,
        chain: &Chain,
        format: SchemaFormat,
        skipped: &mut Vec<String>,
    ) -> Result<Arc<Prepared>, Error> {
        let key = Arc::as_ptr(base) as usize;
        let state = match self.bases.entry(key) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                let registry = Registry::new((**base).clone()).map_err(|source| Error::Schema {
                    interceptor: None,
                    source: Box::new(source),
                })?;
                e.insert(BaseState {
                    _base: Arc::clone(base),
                    registry,
                    rejected: HashSet::new(),
                    last: None,
                })
            }
        };
        if let Some((last, last_format, prepared)) = &state.last
            && *last_format == format
            && same_deltas(last, &deltas)
        {
            for d in deltas
                .iter()
                .filter(|d| state.rejected.contains(&key_of(d)))
            {
                skipped.push(format!(
                    "{}/pre_schema: delta `{}` rejected",
                    d.added_by, d.extension_id
                ));
            }
            return Ok(Arc::clone(prepared));
        }
        sync(state, &deltas, chain, skipped)?;
        let memo = match format {
            SchemaFormat::Compact => &self.compact,
            SchemaFormat::Json => &self.json,
            SchemaFormat::Described => &self.described,
        };
        let composed = state.registry.active_shared();
        let extensions: Vec<&str> = state
            .registry
            .extensions()
            .iter()
            .map(|d| d.extension_id.as_str())
            .collect();
        let extensions = extensions.join(",");
        let prepared = memo
            .get_or_try_insert(&composed, |s| Prepared::new(s, format, extensions))
            .map_err(|e| match e {
                claij_validation::Error::Schema(source) => Error::Schema {
                    interceptor: None,
                    source: Box::new(source),
                },
                other => Error::Validator {
                    source: Box::new(other),
                },
            })?;
        state.last = Some((deltas, format, Arc::clone(&prepared)));
        Ok(prepared)
    }
}

/// Brings the registry's extensions in line with `deltas`: what differs after the common prefix is
/// removed and the rest added in order, so the audit log records each change once.
fn sync(
    state: &mut BaseState,
    deltas: &[SchemaDelta],
    chain: &Chain,
    skipped: &mut Vec<String>,
) -> Result<(), Error> {
    let wanted: Vec<&SchemaDelta> = deltas
        .iter()
        .filter(|d| !state.rejected.contains(&key_of(d)))
        .collect();
    let active = state.registry.extensions();
    let common = active
        .iter()
        .zip(&wanted)
        .take_while(|(a, w)| a.extension_id == w.extension_id && a.delta == w.delta)
        .count();
    let stale: Vec<String> = active[common..]
        .iter()
        .map(|d| d.extension_id.clone())
        .collect();
    for id in stale.iter().rev() {
        // Removing what composed before cannot fail to compose; if it ever does, keep going.
        let _ = state.registry.remove(id, "pipeline");
    }
    for delta in &wanted[common..] {
        let mut delta = (*delta).clone();
        delta.added_at = SystemTime::now();
        let by = delta.added_by.clone();
        let id = delta.extension_id.clone();
        if let Err(source) = state.registry.add(delta.clone()) {
            let policy = chain
                .links()
                .iter()
                .find(|l| l.interceptor.name() == by)
                .map_or(OnError::Fail, |l| l.on_error);
            match policy {
                OnError::Fail => {
                    return Err(Error::Schema {
                        interceptor: Some(by),
                        source: Box::new(source),
                    });
                }
                OnError::Skip => {
                    tracing::warn!(interceptor = %by, extension = %id, error = %source, "schema delta rejected; skipped");
                    skipped.push(format!("{by}/pre_schema: {source}"));
                    state.rejected.insert(key_of(&delta));
                }
            }
        }
    }
    for d in deltas
        .iter()
        .filter(|d| state.rejected.contains(&key_of(d)))
    {
        if !wanted.iter().any(|w| w.extension_id == d.extension_id) {
            skipped.push(format!(
                "{}/pre_schema: delta `{}` rejected",
                d.added_by, d.extension_id
            ));
        }
    }
    Ok(())
}

fn key_of(d: &SchemaDelta) -> (String, String) {
    (d.extension_id.clone(), d.delta.to_string())
}

fn same_deltas(a: &[SchemaDelta], b: &[SchemaDelta]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.extension_id == y.extension_id && x.added_by == y.added_by && x.delta == y.delta
        })
}

/// `schema` compiled for a backend's dialect; as it is for full JSON Schema or a dialect this
/// version does not know. With `object_root`, a root that is not an object goes in the envelope
/// ([`claij_schema::dialect::envelope`]) whatever the dialect.
pub(super) fn compile_for(
    dialect: SchemaDialect,
    schema: &Value,
    object_root: bool,
) -> Result<Compiled, DialectError> {
    let known = match dialect {
        SchemaDialect::OpenAiStrict => Dialect::OpenAiStrict,
        SchemaDialect::Gemini => Dialect::Gemini,
        SchemaDialect::Anthropic => Dialect::Anthropic,
        SchemaDialect::Llguidance => Dialect::Llguidance,
        _ if object_root => return Ok(claij_schema::dialect::object_root(schema)),
        _ => {
            return Ok(Compiled {
                schema: schema.clone(),
                losses: Vec::new(),
            });
        }
    };
    if object_root {
        known.compile_object_root(schema)
    } else {
        known.compile(schema)
    }
}
