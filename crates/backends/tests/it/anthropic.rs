//! Tests: anthropic.
