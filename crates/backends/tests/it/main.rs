//! Integration tests of claij-backends: adapters against local HTTP servers (wiremock) and the
//! provider specs and example bodies of `fixtures/providers`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

#[path = "../../../../fixtures/fixture.rs"]
mod fixtures;

mod anthropic;
#[cfg(feature = "cassette")]
mod cassette;
mod gemini;
mod http;
mod http2;
mod http2_direct;
mod models;
mod openai;
mod openai_fallback;
mod openrouter_catalog;
mod prices;
mod refusals;
mod retryable;
mod spans;
mod tools;
