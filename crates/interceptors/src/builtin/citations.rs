//! The `citations` interceptor: the standard response, an answer plus `metadata` saying which notes
//! and external sources it relies on, with the notes supplied in the prompt and citations checked.
//!
//! [`Citations`] asks every reply for a `metadata` object (the answer is the base schema's `answer`),
//! shows the model the [`Document`]s of the turn with their ids so it can cite them, and its
//! [`check`](Interceptor::check) hook sends a reply citing an unknown note back for a retry (see
//! [`unknown_citations`]). [`render_for_people`] writes a reply for
//! a terminal. The documents are those given to [`Citations::new`] followed by those of the turn's
//! [`Documents`] in the context.
//!
//! Custom schemas remain the escape hatch: a caller who needs another shape leaves this interceptor
//! out and adds its own delta (or asks for a typed answer with `Pipeline::ask_as`).
//!
//! # Schema delta
//!
//! Extension `citations-v1` ([`EXTENSION`], [`delta`]): `metadata` is required and so is
//! `metadata.hasSources`; a citation needs `noteId` and `noteTitle`, an external source `title`,
//! `source` and `url`; everything else is optional.
//!
//! ```
//! # use claij_interceptors::builtin::citations::delta;
//! # use serde_json::json;
//! assert_eq!(delta(), json!({
//!     "properties": {"metadata": {
//!         "type": "object",
//!         "description": "Where the answer comes from",
//!         "required": ["hasSources"],
//!         "properties": {
//!             "hasSources": {"type": "boolean", "description": "Whether the answer uses any notes, external sources or profile information"},
//!             "sourceTypes": {
//!                 "type": "array",
//!                 "description": "The kinds of sources used",
//!                 "items": {"type": "string", "enum": ["notes", "external", "profile"]}
//!             },
//!             "citations": {
//!                 "type": "array",
//!                 "description": "The supplied notes the answer uses",
//!                 "items": {
//!                     "type": "object",
//!                     "required": ["noteId", "noteTitle"],
//!                     "properties": {
//!                         "noteId": {"type": "string", "description": "The note's id, exactly as supplied"},
//!                         "noteTitle": {"type": "string", "description": "The note's title, exactly as supplied"},
//!                         "excerpt": {"type": "string", "description": "The passage relied on, quoted from the note"}
//!                     }
//!                 }
//!             },
//!             "externalSources": {
//!                 "type": "array",
//!                 "description": "Sources other than the supplied notes that the answer uses",
//!                 "items": {
//!                     "type": "object",
//!                     "required": ["title", "source", "url"],
//!                     "properties": {
//!                         "title": {"type": "string", "description": "The title of the page or document"},
//!                         "source": {"type": "string", "description": "Who publishes it, e.g. Wikipedia"},
//!                         "url": {"type": "string", "format": "uri", "description": "Its URL"},
//!                         "excerpt": {"type": "string", "description": "The passage relied on"}
//!                     }
//!                 }
//!             },
//!             "usedProfile": {"type": "boolean", "description": "Whether the answer uses what is known about the user"},
//!             "sourceExplanation": {"type": "string", "description": "One sentence on how the sources shaped the answer"}
//!         }
//!     }},
//!     "required": ["metadata"]
//! }));
//! ```
//!
//! # Prompt
//!
//! [`prompt`] writes the instructions, then the notes (or says there are none):
//!
//! ```
//! # use claij_interceptors::builtin::citations::{Document, prompt};
//! let notes = [Document::new("note-1", "Trip", "We land in Lisbon on 3 May.")];
//! assert_eq!(prompt(notes.iter()),
//! r#"Say where your answer comes from in `metadata`:
//! - `hasSources`: true if you used a supplied note, an external source or the user's profile; false otherwise.
//! - `sourceTypes`: the kinds you used: "notes", "external", "profile".
//! - `citations`: one entry per supplied note you used, with its `noteId` and `noteTitle` exactly as given and an `excerpt` quoted from it.
//! - `externalSources`: the sources other than the notes you used, each with its title, who publishes it and its URL.
//! - `usedProfile`: true if you used what you know about the user.
//! - `sourceExplanation`: one sentence on how the sources shaped your answer.
//! Cite only the notes below; never make up a note id.
//!
//! Notes:
//!
//! <note id="note-1" title="Trip">
//! We land in Lisbon on 3 May.
//! </note>"#);
//! ```
//!
//! Without notes, the line after the list is the last: ``No notes are supplied for this turn: leave out `citations`.``
//!
//! # Check
//!
//! ```
//! use std::sync::Arc;
//! use claij_test_support::Scripted;
//! use claij_interceptors::builtin::citations::{Citations, Document};
//! use claij_interceptors::{Chain, Config, Context, Pipeline};
//!
//! let citations = Citations::new(vec![Document::new("note-1", "Trip", "We land in Lisbon on 3 May.")]);
//! let backend = Arc::new(Scripted::replies([
//!     r#"{"answer": "3 May", "state": "done", "metadata": {"hasSources": true,
//!         "citations": [{"noteId": "note-9", "noteTitle": "Trip"}]}}"#,
//!     r#"{"answer": "3 May", "state": "done", "metadata": {"hasSources": true,
//!         "citations": [{"noteId": "note-1", "noteTitle": "Trip"}]}}"#,
//! ]));
//! let pipeline = Pipeline::new(backend.clone(), Config::new("m"), Chain::new().with(citations));
//! let answer = futures_executor::block_on(pipeline.ask(&mut Context::default(), "When do we land?"))?;
//! assert_eq!(answer.retries(), 1);
//! let correction = &backend.requests()[1].messages[2]; // after the question and the reply
//! assert!(correction.content.contains("unknown noteId `note-9`"));
//! # Ok::<(), claij_interceptors::Error>(())
//! ```

use std::fmt::Write as _;
use std::sync::Arc;

use claij_validation::Violation;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::context::Context;
use crate::interceptor::{BoxError, Interceptor};
use crate::prompts::Prompts;
use crate::schema::Schema;

/// The extension id of the `metadata` field.
pub const EXTENSION: &str = "citations-v1";

/// The citations interceptor. Its name is `citations`.
#[derive(Debug, Clone, Default)]
pub struct Citations {
    documents: Arc<[Document]>,
}

/// A note the model may cite: shown in the prompt with its id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Document {
    /// The id the model cites (`noteId`).
    pub id: String,
    /// The title (`noteTitle`).
    pub title: String,
    /// The text shown to the model.
    pub content: String,
}

/// The documents of one turn, put in the context by whoever retrieved them; shown after the
/// interceptor's own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Documents(pub Vec<Document>);

/// The `metadata` of a standard response, for callers that want it typed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Metadata {
    /// Whether any source was used.
    pub has_sources: bool,
    /// The kinds of sources used.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub source_types: Vec<SourceType>,
    /// The notes used.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub citations: Vec<Citation>,
    /// The external sources used.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub external_sources: Vec<ExternalSource>,
    /// Whether what is known about the user was used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_profile: Option<bool>,
    /// How the sources shaped the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_explanation: Option<String>,
}

/// A kind of source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceType {
    /// Supplied notes.
    Notes,
    /// Sources outside the notes.
    External,
    /// What is known about the user.
    Profile,
}

/// A citation of a supplied note.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Citation {
    /// The note's id.
    pub note_id: String,
    /// The note's title.
    pub note_title: String,
    /// The passage relied on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excerpt: Option<String>,
}

/// A source other than the supplied notes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExternalSource {
    /// The title of the page or document.
    pub title: String,
    /// Who publishes it.
    pub source: String,
    /// Its URL.
    pub url: String,
    /// The passage relied on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excerpt: Option<String>,
}

impl Document {
    /// A document.
    pub fn new(
        id: impl Into<String>,
        title: impl Into<String>,
        content: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            title: title.into(),
            content: content.into(),
        }
    }
}

impl Citations {
    /// A citations interceptor that shows `documents` on every turn (plus the turn's [`Documents`]).
    pub fn new(documents: Vec<Document>) -> Self {
        Self {
            documents: documents.into(),
        }
    }

    /// The documents shown on every turn.
    pub fn documents(&self) -> &[Document] {
        &self.documents
    }

    /// The documents of a turn: this interceptor's, then the context's.
    pub fn documents_for<'a>(&'a self, ctx: &'a Context) -> impl Iterator<Item = &'a Document> {
        let turn = ctx.get::<Documents>().map_or(&[][..], |d| d.0.as_slice());
        self.documents.iter().chain(turn)
    }
}

impl Interceptor for Citations {
    fn name(&self) -> &str {
        "citations"
    }

    fn pre_schema(&self, schema: &mut Schema, _ctx: &Context) -> Result<(), BoxError> {
        schema.extend(EXTENSION, delta());
        Ok(())
    }

    fn pre_prompt(&self, prompts: &mut Prompts, ctx: &Context) -> Result<(), BoxError> {
        prompts.system_push(&prompt(self.documents_for(ctx)));
        Ok(())
    }

    /// Every cited `noteId` must be among the turn's documents ([`unknown_citations`]).
    fn check(&self, value: &Value, ctx: &Context) -> Vec<Violation> {
        let known: Vec<&str> = self.documents_for(ctx).map(|d| d.id.as_str()).collect();
        unknown_citations(value, &known)
    }
}

/// The delta that requires `metadata` ([`EXTENSION`]).
pub fn delta() -> Value {
    let text = |description: &str| json!({"type": "string", "description": description});
    json!({
        "properties": {"metadata": {
            "type": "object",
            "description": "Where the answer comes from",
            "required": ["hasSources"],
            "properties": {
                "hasSources": {
                    "type": "boolean",
                    "description": "Whether the answer uses any notes, external sources or profile information"
                },
                "sourceTypes": {
                    "type": "array",
                    "description": "The kinds of sources used",
                    "items": {"type": "string", "enum": ["notes", "external", "profile"]}
                },
                "citations": {
                    "type": "array",
                    "description": "The supplied notes the answer uses",
                    "items": {
                        "type": "object",
                        "required": ["noteId", "noteTitle"],
                        "properties": {
                            "noteId": text("The note's id, exactly as supplied"),
                            "noteTitle": text("The note's title, exactly as supplied"),
                            "excerpt": text("The passage relied on, quoted from the note")
                        }
                    }
                },
                "externalSources": {
                    "type": "array",
                    "description": "Sources other than the supplied notes that the answer uses",
                    "items": {
                        "type": "object",
                        "required": ["title", "source", "url"],
                        "properties": {
                            "title": text("The title of the page or document"),
                            "source": text("Who publishes it, e.g. Wikipedia"),
                            "url": {"type": "string", "format": "uri", "description": "Its URL"},
                            "excerpt": text("The passage relied on")
                        }
                    }
                },
                "usedProfile": {
                    "type": "boolean",
                    "description": "Whether the answer uses what is known about the user"
                },
                "sourceExplanation": text("One sentence on how the sources shaped the answer")
            }
        }},
        "required": ["metadata"]
    })
}

/// The system-prompt section: how to fill in `metadata`, then the notes with their ids.
pub fn prompt<'a>(documents: impl IntoIterator<Item = &'a Document>) -> String {
    let mut out = String::from(
        "Say where your answer comes from in `metadata`:\n\
         - `hasSources`: true if you used a supplied note, an external source or the user's \
         profile; false otherwise.\n\
         - `sourceTypes`: the kinds you used: \"notes\", \"external\", \"profile\".\n\
         - `citations`: one entry per supplied note you used, with its `noteId` and `noteTitle` \
         exactly as given and an `excerpt` quoted from it.\n\
         - `externalSources`: the sources other than the notes you used, each with its title, who \
         publishes it and its URL.\n\
         - `usedProfile`: true if you used what you know about the user.\n\
         - `sourceExplanation`: one sentence on how the sources shaped your answer.\n",
    );
    let mut documents = documents.into_iter().peekable();
    if documents.peek().is_none() {
        out.push_str("No notes are supplied for this turn: leave out `citations`.");
        return out;
    }
    out.push_str("Cite only the notes below; never make up a note id.\n\nNotes:");
    for d in documents {
        let _ = write!(
            out,
            "\n\n<note id=\"{}\" title=\"{}\">\n{}\n</note>",
            escape_attribute(&d.id),
            escape_attribute(&d.title),
            d.content.trim()
        );
    }
    out
}

/// The violations of a reply citing notes not in `known`: one per unknown `noteId`, at its pointer.
///
/// ```
/// use claij_interceptors::builtin::citations::unknown_citations;
/// use serde_json::json;
///
/// let reply = json!({"metadata": {"citations": [{"noteId": "a"}, {"noteId": "z"}]}});
/// let violations = unknown_citations(&reply, &["a", "b"]);
/// assert_eq!(violations.len(), 1);
/// assert_eq!(violations[0].instance_pointer, "/metadata/citations/1/noteId");
/// assert_eq!(violations[0].message, "unknown noteId `z`; the supplied notes are `a`, `b`");
/// ```
pub fn unknown_citations(value: &Value, known: &[&str]) -> Vec<Violation> {
    let Some(citations) = value
        .pointer("/metadata/citations")
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    let supplied = if known.is_empty() {
        "no notes were supplied, so `citations` must be left out".to_owned()
    } else {
        let ids: Vec<String> = known.iter().map(|id| format!("`{id}`")).collect();
        format!("the supplied notes are {}", ids.join(", "))
    };
    citations
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let id = c.get("noteId").and_then(Value::as_str)?;
            (!known.contains(&id)).then(|| Violation {
                instance_pointer: format!("/metadata/citations/{i}/noteId"),
                schema_pointer: String::new(),
                keyword: "citations".to_owned(),
                message: format!("unknown noteId `{id}`; {supplied}"),
            })
        })
        .collect()
}

/// A standard response written for people: the answer, then (when sources were used) a line saying
/// which, the explanation, the numbered citations with their excerpts and the external sources with
/// their URLs. A reply whose `metadata` does not parse is shown as its answer alone.
///
/// ```
/// use claij_interceptors::builtin::citations::render_for_people;
/// use serde_json::json;
///
/// let reply = json!({"answer": "Lisbon, on 3 May.", "metadata": {"hasSources": true,
///     "sourceTypes": ["notes"], "citations": [{"noteId": "n1", "noteTitle": "Trip"}]}});
/// assert_eq!(render_for_people(&reply), "Answer\n\nLisbon, on 3 May.\n\nSources used: 1 note\n\nCitations\n\n1. Trip (n1)\n");
/// ```
pub fn render_for_people(value: &Value) -> String {
    let answer = value.get("answer").and_then(Value::as_str).unwrap_or("");
    let mut out = format!("Answer\n\n{}\n", answer.trim());
    let metadata = value
        .get("metadata")
        .and_then(|m| Metadata::deserialize(m).ok())
        .unwrap_or_default();
    let shown = metadata.has_sources
        || !metadata.citations.is_empty()
        || !metadata.external_sources.is_empty();
    if !shown {
        return out;
    }
    if let Some(line) = sources_line(&metadata) {
        let _ = write!(out, "\nSources used: {line}\n");
    }
    if let Some(explanation) = metadata
        .source_explanation
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        let _ = writeln!(out, "{explanation}");
    }
    if !metadata.citations.is_empty() {
        out.push_str("\nCitations\n");
        for (i, c) in metadata.citations.iter().enumerate() {
            let _ = write!(out, "\n{}. {} ({})\n", i + 1, c.note_title, c.note_id);
            push_excerpt(&mut out, c.excerpt.as_deref());
        }
    }
    if !metadata.external_sources.is_empty() {
        out.push_str("\nExternal sources\n");
        for (i, s) in metadata.external_sources.iter().enumerate() {
            let _ = write!(
                out,
                "\n{}. {} ({})\n   URL: {}\n",
                i + 1,
                s.title,
                s.source,
                s.url
            );
            push_excerpt(&mut out, s.excerpt.as_deref());
        }
    }
    out
}

/// "2 notes, 1 external source, profile information", or `None` when no kind of source applies.
fn sources_line(metadata: &Metadata) -> Option<String> {
    let has = |t: SourceType| metadata.source_types.contains(&t);
    let mut parts = Vec::new();
    let notes = metadata.citations.len();
    if notes > 0 || has(SourceType::Notes) {
        parts.push(plural(notes, "note", "notes"));
    }
    let external = metadata.external_sources.len();
    if external > 0 || has(SourceType::External) {
        parts.push(plural(external, "external source", "external sources"));
    }
    if metadata.used_profile == Some(true) || has(SourceType::Profile) {
        parts.push("profile information".to_owned());
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Writes `   "excerpt"`, continuation lines indented to match.
fn push_excerpt(out: &mut String, excerpt: Option<&str>) {
    let Some(excerpt) = excerpt.map(str::trim).filter(|s| !s.is_empty()) else {
        return;
    };
    let _ = writeln!(out, "   \"{}\"", excerpt.replace('\n', "\n    "));
}

fn escape_attribute(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
}

#[cfg(test)]
mod tests;
