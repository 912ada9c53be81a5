//! Tests: gemini.
