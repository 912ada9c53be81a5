//! Integration tests of claij-local: the embedded model end to end, from the cache `cargo xtask
//! model` fills.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod local_model;
