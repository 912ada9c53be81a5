//! Repair of malformed JSON.
