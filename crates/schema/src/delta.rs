//! Schema deltas: what an interceptor adds to the response schema, with who added it and when.

use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A schema delta: a partial schema that an extension merges into the response schema.
///
/// ```
/// use claij_schema::SchemaDelta;
/// use serde_json::json;
///
/// let delta = SchemaDelta::new(
///     "summary-v1",
///     "memory-interceptor",
///     json!({"properties": {"summary": {"type": "string"}}, "required": ["summary"]}),
/// );
/// assert_eq!(delta.extension_id, "summary-v1");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SchemaDelta {
    /// Unique id of the extension (`summary-v1`).
    pub extension_id: String,
    /// Who added it (an interceptor name, a model, a person).
    pub added_by: String,
    /// When it was added (RFC 3339 in JSON).
    #[serde(with = "rfc3339")]
    pub added_at: SystemTime,
    /// The partial schema: `properties`, `required`, `$defs`, or any other keyword.
    pub delta: Value,
}

impl SchemaDelta {
    /// A delta added now.
    pub fn new(extension_id: impl Into<String>, added_by: impl Into<String>, delta: Value) -> Self {
        Self {
            extension_id: extension_id.into(),
            added_by: added_by.into(),
            added_at: SystemTime::now(),
            delta,
        }
    }

    /// The same delta with another timestamp.
    #[must_use]
    pub fn at(mut self, added_at: SystemTime) -> Self {
        self.added_at = added_at;
        self
    }
}

/// Serde for [`SystemTime`] as an RFC 3339 string (`2026-01-01T00:00:00Z`).
pub mod rfc3339 {
    use std::time::SystemTime;

    use serde::{Deserialize, Deserializer, Serializer};

    /// Serializes as RFC 3339 with the precision the time has (seconds to nanoseconds).
    pub fn serialize<S: Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&humantime::format_rfc3339(*t))
    }

    /// Deserializes RFC 3339 (`Z` or no offset).
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<SystemTime, D::Error> {
        let s = String::deserialize(d)?;
        humantime::parse_rfc3339_weak(&s).map_err(serde::de::Error::custom)
    }
}
