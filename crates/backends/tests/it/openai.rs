//! Tests: openai.
