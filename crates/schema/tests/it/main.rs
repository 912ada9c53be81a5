//! Integration tests of claij-schema through its public API.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

#[path = "../../../../fixtures/fixture.rs"]
mod fixture;

mod compose;
mod dialect;
mod example;
mod grammar;
mod render;
mod roundtrip;
