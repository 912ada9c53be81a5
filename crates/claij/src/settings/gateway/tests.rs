//! Tests: a provider entry's `headers`, `query` and `auth_header`: reading, load errors with
//! locations, variables read when opened, `config show`, and what reaches the wire (wiremock).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::OsString;
use std::path::Path;

use claij_backends::openai::OpenAiCompatible;
use claij_backends::{ApiKey, Backend, ChatRequest, HttpConfig, Message, OpenRouter, RetryPolicy};
use serde_json::json;
use wiremock::matchers::{header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::{Part, parse_value};
use crate::model::Provider;
use crate::settings::Settings;

const PATH: &str = "/etc/claij.toml";

fn parse(text: &str) -> Settings {
    Settings::parse(text, Path::new(PATH)).unwrap()
}

#[track_caller]
fn check_error(text: &str, expected: &str) {
    let err = format!("{:#}", Settings::parse(text, Path::new(PATH)).unwrap_err());
    assert_eq!(err, expected, "{text}");
}

/// A variable lookup over `vars`.
fn env(vars: &[(&'static str, &'static str)]) -> impl Fn(&str) -> Option<OsString> {
    move |name| {
        vars.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| OsString::from(v))
    }
}

#[test]
fn values_name_variables() {
    let text = |t: &str| Part::Text(t.to_owned());
    let var = |v: &str| Part::Var(v.to_owned());
    assert_eq!(parse_value("plain"), Ok(vec![text("plain")]));
    assert_eq!(parse_value(""), Ok(vec![text("")]));
    assert_eq!(parse_value("${A}"), Ok(vec![var("A")]));
    assert_eq!(
        parse_value("Bearer ${HELICONE_API_KEY}"),
        Ok(vec![text("Bearer "), var("HELICONE_API_KEY")])
    );
    assert_eq!(
        parse_value("${a_1}:${_B}!"),
        Ok(vec![var("a_1"), text(":"), var("_B"), text("!")])
    );
    // `$$` is one `$`; a `$` before anything but `{` stays.
    assert_eq!(parse_value("$${A} $5 a$"), Ok(vec![text("${A} $5 a$")]));
    for bad in ["${A", "${}", "${1A}", "${A-B}", "x ${ A }"] {
        assert!(parse_value(bad).is_err(), "{bad}");
    }
}

/// Three gateways: headers with a variable and a literal secret, a key header and a query
/// (`Settings::redacted`'s tests show them too).
pub(in crate::settings) const GATEWAYS: &str = r#"
[providers.openrouter]
headers = { "Helicone-Auth" = "Bearer ${HELICONE_API_KEY}", "Helicone-Cache-Enabled" = "true" }

[providers.portkey]
kind = "openai-compatible"
base_url = "https://api.portkey.ai/v1"
api_key_env = "PROVIDER_KEY"
headers = { "x-portkey-api-key" = "pk-literal-0123456789", "x-portkey-provider" = "openai" }

[providers.azure]
kind = "openai-compatible"
base_url = "https://res.openai.azure.com/openai/deployments/gpt-4o"
api_key_env = "AZURE_OPENAI_API_KEY"
auth_header = "api-key"
query = { "api-version" = "2024-10-21" }
"#;

#[test]
fn gateway_settings_are_read() {
    let config = parse(GATEWAYS);
    let openrouter = &config.provider(Provider::OpenRouter).gateway;
    let shown: Vec<(String, String)> = openrouter
        .headers
        .iter()
        .map(|s| (s.name.clone(), s.shown()))
        .collect();
    assert_eq!(
        shown,
        [
            ("Helicone-Auth".to_owned(), "***".to_owned()),
            ("Helicone-Cache-Enabled".to_owned(), "true".to_owned())
        ]
    );
    assert_eq!(
        openrouter.headers[0].vars().collect::<Vec<_>>(),
        ["HELICONE_API_KEY"]
    );
    let azure = &config.compatible("azure").unwrap().gateway;
    assert_eq!(azure.auth_header.as_deref(), Some("api-key"));
    assert_eq!(azure.query[0].shown(), "2024-10-21");
    assert!(config.provider(Provider::OpenAi).gateway.is_empty());
}

#[test]
fn gateway_errors_name_file_line_and_key() {
    check_error(
        "[providers.openai]\nheaders = { \"Content-Type\" = \"text/plain\" }\n",
        "/etc/claij.toml:2: providers.openai.headers.Content-Type: claij sets this header itself",
    );
    check_error(
        "[providers.openai]\nheaders = { \"user-agent\" = \"me\" }\n",
        "/etc/claij.toml:2: providers.openai.headers.user-agent: claij sets this header itself",
    );
    check_error(
        "[providers.openai.headers]\n\"two words\" = \"x\"\n",
        "/etc/claij.toml:2: providers.openai.headers.two words: not a valid HTTP header name",
    );
    check_error(
        "[providers.openai]\nheaders = { x-a = \"line\\nbreak\" }\n",
        "/etc/claij.toml:2: providers.openai.headers.x-a: the value has characters HTTP forbids in a header",
    );
    check_error(
        "[providers.openai]\nheaders = { x-a = \"${UNCLOSED\" }\n",
        "/etc/claij.toml:2: providers.openai.headers.x-a: `${` without its `}` (write `$$` for a `$`)",
    );
    check_error(
        "[providers.openai]\nquery = { v = \"${9}\" }\n",
        "/etc/claij.toml:2: providers.openai.query.v: `${9}`: a variable's name has letters, digits and `_`, and does not start with a digit",
    );
    check_error(
        "[providers.openai]\nheaders = { x-a = 1 }\n",
        "/etc/claij.toml:2: providers.openai.headers.x-a: expected a string, found an integer",
    );
    check_error(
        "[providers.openai]\nheaders = \"x-a: 1\"\n",
        "/etc/claij.toml:2: providers.openai.headers: expected a table, found a string",
    );
    check_error(
        "[providers.openai]\nheaders = { X-A = \"1\", x-a = \"2\" }\n",
        "/etc/claij.toml:2: providers.openai.headers.x-a: the header is given twice (names ignore case)",
    );
    check_error(
        "[providers.openai]\nquery = { \"\" = \"1\" }\n",
        "/etc/claij.toml:2: providers.openai.query.: a query parameter needs a name",
    );
    check_error(
        "[providers.az]\nkind = \"openai-compatible\"\nbase_url = \"http://h/v1\"\nauth_header = \"api key\"\n",
        "/etc/claij.toml:4: providers.az.auth_header: not a valid HTTP header name",
    );
    check_error(
        "[providers.az]\nkind = \"openai-compatible\"\nbase_url = \"http://h/v1\"\n\
         auth_header = \"api-key\"\nheaders = { Api-Key = \"x\" }\n",
        "/etc/claij.toml:5: providers.az.headers.Api-Key: auth_header puts the key in `api-key`: drop this header",
    );
    check_error(
        "[providers.openai]\nheader = {}\n",
        "/etc/claij.toml:2: providers.openai.header: unknown key (expected api_key_env, base_url, \
         max_body_bytes, retry_budget_secs, http_version, streams_per_connection, headers, query \
         or auth_header)",
    );
}

#[test]
fn variables_are_read_when_opened() {
    let config = parse(GATEWAYS);
    let gateway = &config.provider(Provider::OpenRouter).gateway;
    let base = HttpConfig::new("http://h/v1");
    let err = gateway
        .apply("openrouter", base.clone(), &env(&[]))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "providers.openrouter.headers.Helicone-Auth: HELICONE_API_KEY is not set: export it or \
         change the configuration"
    );
    // Empty counts as unset, as for keys.
    let err = gateway
        .apply(
            "openrouter",
            base.clone(),
            &env(&[("HELICONE_API_KEY", "")]),
        )
        .unwrap_err();
    assert!(
        err.to_string().contains("HELICONE_API_KEY is not set"),
        "{err}"
    );
    let err = gateway
        .apply(
            "openrouter",
            base.clone(),
            &env(&[("HELICONE_API_KEY", "hel-secret\r\nX-Evil: 1")]),
        )
        .unwrap_err();
    let shown = err.to_string();
    assert_eq!(
        shown,
        "providers.openrouter.headers.Helicone-Auth: HELICONE_API_KEY has characters HTTP forbids \
         in a header (a line break?)"
    );
    let config = gateway
        .apply(
            "openrouter",
            base,
            &env(&[("HELICONE_API_KEY", "hel-secret-0123456789")]),
        )
        .unwrap();
    assert_eq!(config.headers.len(), 2);
    assert_eq!(config.headers[0].expose(), "Bearer hel-secret-0123456789");
    assert!(config.headers[0].is_secret());
    assert!(!config.headers[1].is_secret());
    assert!(!format!("{config:?}").contains("hel-secret"), "{config:?}");
}

fn request() -> ChatRequest {
    ChatRequest::new("gpt-4o").message(Message::user("2+2?"))
}

fn completion() -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "c", "object": "chat.completion", "created": 1, "model": "gpt-4o",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "{\"a\":4}"},
                     "finish_reason": "stop"}],
    }))
}

/// The entry `name` of `text` opened as `--llm name:MODEL` opens a provider of the user's own,
/// with `key` and the variables `vars`.
fn open_compatible(
    text: &str,
    name: &str,
    key: &str,
    vars: &[(&'static str, &'static str)],
) -> OpenAiCompatible {
    let config = parse(text);
    let settings = config.compatible(name).unwrap();
    let backend = OpenAiCompatible::new(settings.base_url.clone())
        .with_provider(name)
        .with_key(ApiKey::new(key));
    let http = backend.config().clone().with_retry(RetryPolicy::none());
    let http = settings.gateway.apply(name, http, &env(vars)).unwrap();
    backend.with_config(http)
}

#[tokio::test]
async fn an_openai_compatible_entry_sends_its_headers_and_query() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("authorization", "Bearer sk-provider-0123456789"))
        .and(header("x-portkey-api-key", "pk-from-env-0123456789"))
        .and(header("x-portkey-provider", "openai"))
        .and(query_param("trace", "a b"))
        .respond_with(completion())
        .expect(1)
        .mount(&server)
        .await;
    let text = format!(
        "[providers.portkey]\nkind = \"openai-compatible\"\nbase_url = \"{}/v1\"\n\
         headers = {{ \"x-portkey-api-key\" = \"${{PORTKEY_API_KEY}}\", \
         \"x-portkey-provider\" = \"openai\" }}\nquery = {{ trace = \"a b\" }}\n",
        server.uri()
    );
    let backend = open_compatible(
        &text,
        "portkey",
        "sk-provider-0123456789",
        &[("PORTKEY_API_KEY", "pk-from-env-0123456789")],
    );
    let response = backend.complete(&request()).await;
    assert!(response.is_ok(), "{response:?}");
}

#[tokio::test]
async fn an_azure_style_entry_sends_the_key_in_api_key_with_the_api_version() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/openai/deployments/gpt-4o/chat/completions"))
        .and(header("api-key", "azure-key-0123456789"))
        .and(query_param("api-version", "2024-10-21"))
        .respond_with(completion())
        .expect(1)
        .mount(&server)
        .await;
    let text = format!(
        "[providers.azure]\nkind = \"openai-compatible\"\n\
         base_url = \"{}/openai/deployments/gpt-4o\"\napi_key_env = \"AZURE_OPENAI_API_KEY\"\n\
         auth_header = \"api-key\"\nquery = {{ \"api-version\" = \"2024-10-21\" }}\n",
        server.uri()
    );
    let backend = open_compatible(&text, "azure", "azure-key-0123456789", &[]);
    let response = backend.complete(&request()).await;
    assert!(response.is_ok(), "{response:?}");
    let received = server.received_requests().await.unwrap();
    assert!(!received[0].headers.contains_key("authorization"));
}

#[tokio::test]
async fn a_built_in_provider_through_a_gateway() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/api/v1/chat/completions"))
        .and(header("authorization", "Bearer sk-or-0123456789"))
        .and(header("helicone-auth", "Bearer hel-0123456789"))
        .respond_with(completion())
        .expect(1)
        .mount(&server)
        .await;
    let text = format!(
        "[providers.openrouter]\nbase_url = \"{}/api/v1\"\n\
         headers = {{ \"Helicone-Auth\" = \"Bearer ${{HELICONE_API_KEY}}\" }}\n",
        server.uri()
    );
    let config = parse(&text);
    let settings = config.provider(Provider::OpenRouter);
    let backend = OpenRouter::new(ApiKey::new("sk-or-0123456789")).without_preflight();
    let http = backend
        .config()
        .clone()
        .with_base_url(settings.base_url.clone().unwrap())
        .with_retry(RetryPolicy::none());
    let http = settings
        .gateway
        .apply(
            "openrouter",
            http,
            &env(&[("HELICONE_API_KEY", "hel-0123456789")]),
        )
        .unwrap();
    let response = backend.with_config(http).complete(&request()).await;
    assert!(response.is_ok(), "{response:?}");
}
