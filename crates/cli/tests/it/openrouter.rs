//! A mock OpenRouter for the binary's tests: the documented example chat completion
//! (`fixtures/providers/examples/openai-1.json`) with the assistant's content replaced, and the
//! configuration that points the binary at the mock.

use serde_json::Value;
use wiremock::{MockServer, ResponseTemplate};

/// The chat completions path under the configured base URL.
pub(crate) const CHAT: &str = "/api/v1/chat/completions";

#[path = "../../../../fixtures/fixture.rs"]
pub(crate) mod fixtures;

/// The documented example chat completion (19 prompt and 10 completion tokens) with `content` as
/// the assistant's reply.
pub(crate) fn completion(content: &str) -> Value {
    let mut example = fixtures::json("fixtures/providers/examples/openai-1.json");
    let mut body = example["body"].take();
    body["choices"][0]["message"]["content"] = content.into();
    body
}

/// A 200 response carrying [`completion`].
pub(crate) fn reply(content: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(completion(content))
}

/// A `config.toml` pointing OpenRouter at `server`, its model list not fetched on opening
/// (`model_list = "off"`): these tests are about the calls, and read the mock's requests as the
/// calls alone, with the capabilities the built-in guess gives; `models.rs` tests the list.
pub(crate) fn config(server: &MockServer) -> String {
    format!(
        "[providers.openrouter]\nbase_url = \"{}/api/v1\"\nmodel_list = \"off\"\n",
        server.uri()
    )
}
