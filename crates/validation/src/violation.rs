//! Violations: what is wrong with an instance, where, and which schema keyword says so.

use std::fmt;

use serde::{Deserialize, Serialize};

/// One way an instance fails its schema. Owned, so it outlives the instance and the validator.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Violation {
    /// JSON pointer of the offending value in the instance (`""` for the root). It always resolves:
    /// a missing property is reported at the object that lacks it.
    pub instance_pointer: String,
    /// JSON pointer of the failing keyword in the schema (`/properties/age/minimum`).
    pub schema_pointer: String,
    /// The failing keyword (`required`, `type`, `enum`, `oneOf`, ...).
    pub keyword: String,
    /// What is wrong, in words a model can act on.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.instance_pointer.is_empty() {
            "(root)"
        } else {
            &self.instance_pointer
        };
        write!(f, "{at}: {}", self.message)
    }
}
