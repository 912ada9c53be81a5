//! What each schema extension costs in the prompt (feature `tokens`): the tokens of the composed
//! schema's compact rendering ([`claij_schema::to_compact`], the schema section claij sends the
//! model) with every active delta, less its tokens with all but one: the tokens that delta adds.

use std::fmt;
use std::path::{Path, PathBuf};

use claij_interceptors::builtin::proposals::EXTENSION as PROPOSALS_EXTENSION;
use claij_schema::SchemaDelta;
use serde_json::{Value, json};

use super::{Audit, Error, Kind};
use crate::Claij;
use crate::tokens::{Counter, Tokenizer};

/// One delta's cost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeltaCost {
    /// The extension.
    pub extension_id: String,
    /// Who added it (an interceptor, or who proposed it).
    pub added_by: String,
    /// Tokens of the rendering with every delta, less those without this one (negative when the
    /// rendering is shorter with it, e.g. a delta that drops a field's long description by
    /// narrowing it to a `const`).
    pub tokens: i64,
}

/// The cost of one composed schema: its base, its deltas (most expensive first) and the whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cost {
    /// The `llm` state of a run's journal whose requests these deltas shaped (`None`: a
    /// conversation, or a bare schema).
    pub state: Option<String>,
    /// Tokens of the base schema's rendering alone.
    pub base: usize,
    /// Tokens of the rendering with every delta.
    pub total: usize,
    /// Each active delta's cost, the most expensive first (ties by extension id).
    pub deltas: Vec<DeltaCost>,
}

/// What each of `deltas` costs composed onto `base`, counted with `counter`: each delta's figure
/// is `tokens(all) - tokens(all but it)` of the compact rendering, so a delta that repeats what
/// another already says costs nothing, and the figures need not add up to `total - base`.
///
/// ```
/// use claij::extensions::cost;
/// use claij::schema::SchemaDelta;
/// use claij::tokens::Tokenizer;
/// use serde_json::json;
///
/// let confidence = SchemaDelta::new("confidence-v1", "proposals", json!({
///     "properties": {"confidence": {"type": "number", "description": "How sure, 0 to 1"}},
/// }));
/// let cost = cost(&claij::schema::base(), &[confidence], &Tokenizer::O200kBase.open()?)?;
/// assert_eq!(cost.deltas[0].extension_id, "confidence-v1");
/// assert_eq!(cost.deltas[0].tokens, (cost.total - cost.base) as i64);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// [`Error::Uncomposable`]: the deltas do not compose onto `base`; [`Error::Tokens`]: the
/// tokenizer fails.
pub fn cost(base: &Value, deltas: &[SchemaDelta], counter: &Counter) -> Result<Cost, Error> {
    let tokens = |deltas: &[SchemaDelta]| -> Result<usize, Error> {
        let schema =
            claij_schema::compose(base, deltas).map_err(|e| Error::Uncomposable(Box::new(e)))?;
        Ok(counter.count(&claij_schema::to_compact(&schema))?)
    };
    let total = tokens(deltas)?;
    let mut costs = Vec::with_capacity(deltas.len());
    for (i, delta) in deltas.iter().enumerate() {
        let mut others = deltas.to_vec();
        others.remove(i);
        let without = tokens(&others)?;
        costs.push(DeltaCost {
            extension_id: delta.extension_id.clone(),
            added_by: delta.added_by.clone(),
            tokens: signed(total) - signed(without),
        });
    }
    costs.sort_by(|a, b| {
        b.tokens
            .cmp(&a.tokens)
            .then_with(|| a.extension_id.cmp(&b.extension_id))
    });
    Ok(Cost {
        state: None,
        base: tokens(&[])?,
        total,
        deltas: costs,
    })
}

fn signed(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The context window a cost is measured against.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Window {
    /// The model (as given, or the configuration's default).
    pub model: Option<String>,
    /// Its context window in tokens, when known.
    pub tokens: Option<u32>,
}

impl Window {
    /// `part` as a percentage of the window, when it is known.
    #[must_use]
    pub fn share(&self, part: usize) -> Option<f64> {
        self.tokens
            .filter(|&w| w > 0)
            .map(|w| 100.0 * part as f64 / f64::from(w))
    }
}

/// The costs of a file's schemas: a conversation's (one), a journal's (one per `llm` state whose
/// requests had deltas), or a bare schema's; printed ([`fmt::Display`]) or as JSON
/// ([`Costs::to_json`]).
#[derive(Debug, Clone)]
pub struct Costs {
    /// The file read.
    pub file: PathBuf,
    /// The tokenizer counted with.
    pub tokenizer: &'static str,
    /// The context window the totals are a share of.
    pub window: Window,
    /// Whether the file is a bare schema (no deltas: its total alone).
    pub bare: bool,
    /// One per composed schema.
    pub costs: Vec<Cost>,
}

impl Costs {
    /// The costs of the active deltas of `file`, a conversation or (feature `fsm`) a run's journal:
    /// the deltas the next request composes (per `llm` state of a journal): the last request's,
    /// with the registry's part as the file has it now (after a compaction or a rollback since,
    /// the approved extensions in force, not those the last request carried), composed onto `base` (default: a journal's own base, else
    /// [`claij_schema::base`], the response schema `claij ask` uses without `--schema`).
    ///
    /// # Errors
    ///
    /// The file cannot be read or is no conversation or journal; the deltas do not compose onto
    /// the base; the tokenizer fails.
    pub fn of_file(file: &Path, base: Option<Value>, counter: &Counter) -> Result<Self, Error> {
        let audit = Audit::read(file)?;
        let base = match base {
            Some(base) => base,
            None if Kind::of(file)? == Kind::Journal && !audit.proposed.base.is_null() => {
                audit.proposed.base.clone()
            }
            None => claij_schema::base(),
        };
        let mut costs = Vec::new();
        for (state, log) in &audit.applied {
            let mut cost = cost(&base, &active(log.active(), &audit), counter)?;
            cost.state.clone_from(state);
            costs.push(cost);
        }
        if costs.is_empty() {
            costs.push(cost(&base, &audit.proposed.extensions, counter)?);
        }
        Ok(Self {
            file: file.to_owned(),
            tokenizer: counter.name(),
            window: Window::default(),
            bare: false,
            costs,
        })
    }

    /// The tokens of the bare schema `schema` (read from `file`).
    ///
    /// # Errors
    ///
    /// The tokenizer fails.
    pub fn of_schema(file: &Path, schema: &Value, counter: &Counter) -> Result<Self, Error> {
        let tokens = counter.count(&claij_schema::to_compact(schema))?;
        Ok(Self {
            file: file.to_owned(),
            tokenizer: counter.name(),
            window: Window::default(),
            bare: true,
            costs: vec![Cost {
                state: None,
                base: tokens,
                total: tokens,
                deltas: Vec::new(),
            }],
        })
    }

    /// The same costs as shares of `window`.
    #[must_use]
    pub fn with_window(mut self, window: Window) -> Self {
        self.window = window;
        self
    }

    /// `{"file", "tokenizer", "model", "context_window", "schemas": [{"state", "base", "total",
    /// "share", "deltas": [{"extension_id", "added_by", "tokens"}]}]}` (`share` a percentage, null
    /// when the window is unknown).
    #[must_use]
    pub fn to_json(&self) -> Value {
        let schemas: Vec<Value> = self
            .costs
            .iter()
            .map(|c| {
                let deltas: Vec<Value> = c
                    .deltas
                    .iter()
                    .map(|d| json!({"extension_id": d.extension_id, "added_by": d.added_by, "tokens": d.tokens}))
                    .collect();
                json!({"state": c.state, "base": c.base, "total": c.total, "share": self.window.share(c.total), "deltas": deltas})
            })
            .collect();
        json!({
            "file": self.file.display().to_string(),
            "tokenizer": self.tokenizer,
            "model": self.window.model,
            "context_window": self.window.tokens,
            "schemas": schemas,
        })
    }

    fn write_share(&self, out: &mut fmt::Formatter<'_>, total: usize) -> fmt::Result {
        match (
            &self.window.model,
            self.window.tokens,
            self.window.share(total),
        ) {
            (Some(model), Some(window), Some(share)) => write!(
                out,
                "{share:.2}% of {model}'s context window ({} tokens)",
                thousands(u64::from(window))
            ),
            (Some(model), ..) => write!(out, "{model}'s context window unknown"),
            (None, ..) => write!(
                out,
                "no model (--model or defaults.llm): context window unknown"
            ),
        }
    }
}

/// What [`Costs::measure`] counts.
#[derive(Debug, Clone, Copy)]
pub enum Source<'a> {
    /// A bare schema file: its total.
    Schema {
        /// The file.
        file: &'a Path,
    },
    /// The active deltas of a conversation or a run's journal ([`Costs::of_file`]).
    Session {
        /// The file.
        file: &'a Path,
        /// The response schema they compose onto (default as [`Costs::of_file`] says).
        base: Option<&'a Value>,
    },
}

impl<'a> Source<'a> {
    /// What `claij schema cost [FILE] [--session FILE] [--schema BASE]` counts: the deltas of
    /// `session` onto `base`, or the bare schema `file`.
    ///
    /// # Errors
    ///
    /// The one-line refusal when both files or neither are given, or a base without a session.
    pub fn of(
        session: Option<&'a Path>,
        file: Option<&'a Path>,
        base: Option<&'a Value>,
    ) -> Result<Self, &'static str> {
        match (session, file, base) {
            (Some(_), Some(_), _) => Err(
                "--session FILE counts a conversation's deltas, a FILE alone a bare schema: give one",
            ),
            (None, _, Some(_)) => Err(
                "--schema is the base of --session's deltas (a FILE alone is the whole schema): drop it",
            ),
            (Some(file), None, base) => Ok(Source::Session { file, base }),
            (None, Some(file), None) => Ok(Source::Schema { file }),
            (None, None, None) => Err("give a schema FILE or --session FILE"),
        }
    }
}

impl Costs {
    /// What `claij schema cost` prints: `source`'s costs counted with the tokenizer `tokenizer`
    /// ([`crate::tokens::NAMES`]; `local` is the embedded model's file in `claij`'s model cache),
    /// as shares of the context window of `model` (an alias or `provider:model`; default the
    /// configuration's `defaults.llm`, else none: the share is unknown).
    ///
    /// # Errors
    ///
    /// [`Error::Tokens`]: an unknown tokenizer (naming the choices), a missing model file (naming
    /// its path and `cargo xtask model`); the model does not resolve; as [`Costs::of_file`].
    pub fn measure(
        claij: &Claij,
        source: Source<'_>,
        tokenizer: &str,
        model: Option<&str>,
    ) -> Result<Self, Error> {
        let counter = Tokenizer::named(tokenizer, |name| claij.var(name))?.open()?;
        let costs = match source {
            Source::Schema { file } => Self::of_schema(file, &read_schema(file)?, &counter)?,
            Source::Session { file, base } => Self::of_file(file, base.cloned(), &counter)?,
        };
        let model = model
            .map(str::to_owned)
            .or_else(|| claij.settings().defaults.llm.clone());
        let tokens = match &model {
            Some(model) => crate::tokens::context_window(claij, model)?,
            None => None,
        };
        Ok(costs.with_window(Window { model, tokens }))
    }
}

/// The JSON schema in `file`, checked.
fn read_schema(file: &Path) -> Result<Value, Error> {
    let text = crate::fs::read_file_capped(file, crate::fs::MAX_INPUT_BYTES, "a schema").map_err(
        |source| Error::Read {
            file: file.to_owned(),
            source,
        },
    )?;
    let invalid = |source: Box<dyn std::error::Error + Send + Sync>| Error::InvalidSchema {
        file: file.to_owned(),
        source,
    };
    let schema: Value = serde_json::from_str(&text).map_err(|e| invalid(Box::new(e)))?;
    claij_schema::check(&schema).map_err(|e| invalid(Box::new(e)))?;
    Ok(schema)
}

/// The deltas the next request composes: the last request's, with those the proposals interceptor
/// took from the registry (any extension its audit log, active list or compactions name, which a
/// compaction or a rollback since may have replaced) swapped for the registry's active extensions,
/// where that interceptor puts them (after its own `proposals-v1`, else where they were, else last).
fn active(applied: &[SchemaDelta], audit: &Audit) -> Vec<SchemaDelta> {
    let saved = &audit.proposed;
    let managed = |id: &str| {
        saved.extensions.iter().any(|e| e.extension_id == id)
            || saved.audit.entries().iter().any(|e| e.extension_id == id)
            || saved
                .compactions
                .iter()
                .any(|c| c.extension_id == id || c.replaced.iter().any(|d| d.extension_id == id))
    };
    let mut all = Vec::with_capacity(applied.len() + saved.extensions.len());
    let mut at = None;
    for delta in applied {
        if managed(&delta.extension_id) {
            at.get_or_insert(all.len());
            continue;
        }
        all.push(delta.clone());
        if delta.extension_id == PROPOSALS_EXTENSION {
            at.get_or_insert(all.len());
        }
    }
    let at = at.unwrap_or(all.len());
    all.splice(at..at, saved.extensions.iter().cloned());
    all
}

impl fmt::Display for Costs {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = self.file.display();
        if self.bare {
            let total = self.costs.first().map_or(0, |c| c.total);
            write!(
                out,
                "{file}: {} tokens ({}), ",
                thousands(total as u64),
                self.tokenizer
            )?;
            return self.write_share(out, total);
        }
        for (i, cost) in self.costs.iter().enumerate() {
            if i > 0 {
                writeln!(out)?;
            }
            let of = cost
                .state
                .as_ref()
                .map_or_else(String::new, |s| format!(" of state `{s}`"));
            writeln!(
                out,
                "{file}{of}: {} active schema delta(s); the {} tokens each adds to the schema's compact rendering",
                cost.deltas.len(),
                self.tokenizer
            )?;
            let width = cost
                .deltas
                .iter()
                .map(|d| d.extension_id.len())
                .max()
                .unwrap_or(0)
                .max("extension".len());
            if !cost.deltas.is_empty() {
                writeln!(out, "  {:>7}  {:<width$}  added by", "tokens", "extension")?;
            }
            for d in &cost.deltas {
                writeln!(
                    out,
                    "  {:>+7}  {:<width$}  {}",
                    d.tokens, d.extension_id, d.added_by
                )?;
            }
            writeln!(out, "  base schema: {} tokens", thousands(cost.base as u64))?;
            write!(out, "  total: {} tokens, ", thousands(cost.total as u64))?;
            self.write_share(out, cost.total)?;
        }
        Ok(())
    }
}

/// `12,345`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests;
