//! Integration tests of the `claij` crate through its public API, offline.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod recall_at_k;
