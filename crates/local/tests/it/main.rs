//! Integration tests of claij-local: the embedded model end to end, from the cache `cargo xtask
//! model` fills, and the sentence-embedding model from the one `cargo xtask embed-model` fills.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

#[path = "../../../../fixtures/fixture.rs"]
mod fixtures;

mod embed;
mod local_model;
