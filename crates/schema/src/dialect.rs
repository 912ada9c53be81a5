//! Provider dialects.
