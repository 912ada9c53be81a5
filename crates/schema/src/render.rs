//! Prompt rendering.
