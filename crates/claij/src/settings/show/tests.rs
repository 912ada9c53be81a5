//! [`Settings::redacted`] (`claij config show`): every secret left out, in lines and in JSON.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use crate::settings::Settings;
use crate::settings::gateway::tests::GATEWAYS;
use serde_json::json;

const PATH: &str = "/etc/claij.toml";

fn parse(text: &str) -> Settings {
    Settings::parse(text, Path::new(PATH)).unwrap()
}

mod show {
    use crate::settings::Settings;

    pub(super) fn to_lines(config: &Settings, is_set: &dyn Fn(&str) -> bool) -> Vec<String> {
        config.redacted(is_set).lines()
    }

    pub(super) fn to_json(config: &Settings, is_set: &dyn Fn(&str) -> bool) -> serde_json::Value {
        config.redacted(is_set).to_json()
    }
}

// The MCP servers' part is shown with the `mcp` feature only.
#[cfg(feature = "mcp")]
#[test]
fn show_never_prints_a_secret() {
    let config = parse(
        r#"
[providers.openrouter]
base_url = "https://me:secret-1@proxy.invalid/v1?key=secret-2"
[mcpServers.time]
command = "mcp-server-time"
env = { TOKEN = "secret-3" }
[mcpServers.web]
url = "http://127.0.0.1:3001/mcp?auth=secret-4"
headers = { Authorization = "Bearer secret-5" }
"#,
    );
    let is_set = |var: &str| var == "OPENROUTER_API_KEY";
    let text = show::to_lines(&config, &is_set).join("\n");
    let json = show::to_json(&config, &is_set).to_string();
    for out in [&text, &json] {
        assert!(!out.contains("secret"), "{out}");
        assert!(out.contains("TOKEN"), "{out}");
        assert!(out.contains("Authorization"), "{out}");
    }
    assert!(
        text.contains(
            "openrouter  key OPENROUTER_API_KEY (set), base_url https://***@proxy.invalid/v1?***"
        ),
        "{text}"
    );
    assert!(
        text.contains("openai      key OPENAI_API_KEY (not set)"),
        "{text}"
    );
}

#[test]
fn show_lists_providers_of_your_own_without_secrets() {
    let config = parse(
        r#"
[providers.mylocal]
kind = "openai-compatible"
base_url = "http://me:secret-1@127.0.0.1:8080/v1?key=secret-2"
api_key_env = "MYLOCAL_KEY"
structured_output = "tools"
[providers.plain]
kind = "openai-compatible"
base_url = "http://127.0.0.1:11434/v1"
"#,
    );
    let is_set = |var: &str| var == "MYLOCAL_KEY";
    let text = show::to_lines(&config, &is_set).join("\n");
    let json = show::to_json(&config, &is_set);
    assert!(
        !text.contains("secret") && !json.to_string().contains("secret"),
        "{text}"
    );
    assert!(
        text.contains("  mylocal     openai-compatible, base_url http://***@127.0.0.1:8080/v1?***, key MYLOCAL_KEY (set), structured_output tools"),
        "{text}"
    );
    assert!(
        text.contains("  plain       openai-compatible, base_url http://127.0.0.1:11434/v1, no key, structured_output detected"),
        "{text}"
    );
    assert_eq!(json["providers"]["mylocal"]["kind"], "openai-compatible");
    assert_eq!(json["providers"]["mylocal"]["api_key_set"], true);
    assert_eq!(
        json["providers"]["plain"]["structured_output"],
        serde_json::Value::Null
    );
}

/// A TOML basic string holding `text` (JSON's escapes are TOML's, but for U+007F, which TOML
/// refuses raw: such a file fails to parse).
fn toml_string(text: &str) -> String {
    serde_json::Value::String(text.to_owned()).to_string()
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// `config show`, as lines and as JSON, prints no form of a secret a URL may carry, nor any MCP
    /// `env` or `headers` value, nor a provider's header or query value named like a credential;
    /// any `base_url` at all is shown without a panic.
    #[test]
    fn show_never_prints_a_secret_in_any_form(
        secret in "[A-Za-z0-9]{16,40}",
        any_url in proptest::prelude::any::<String>(),
    ) {
        let is_set = |_: &str| true;
        for url in claij_test_support::secrets::secret_urls(&secret) {
            let url = toml_string(&url);
            let bearer = toml_string(&format!("Bearer {secret}"));
            let config = parse(&format!(
                "[providers.openrouter]\nbase_url = {url}\n\
                 headers = {{ \"Helicone-Auth\" = {bearer}, x-api-key = \"{secret}\" }}\n\
                 query = {{ token = \"{secret}\" }}\n\
                 [providers.mine]\nkind = \"openai-compatible\"\nbase_url = {url}\n\
                 headers = {{ x-portkey-api-key = \"{secret}\" }}\n\
                 [mcpServers.time]\ncommand = \"t\"\nenv = {{ TOKEN = \"{secret}\" }}\n\
                 [mcpServers.web]\nurl = {url}\nheaders = {{ Authorization = {bearer} }}\n"
            ));
            let text = show::to_lines(&config, &is_set).join("\n");
            let json = show::to_json(&config, &is_set).to_string();
            for out in [&text, &json] {
                proptest::prop_assert!(!out.contains(&secret), "{out}");
            }
        }
        let text = format!("[providers.openrouter]\nbase_url = {}\n", toml_string(&any_url));
        if let Ok(config) = Settings::parse(&text, Path::new(PATH)) {
            let _ = show::to_lines(&config, &is_set);
            let _ = show::to_json(&config, &is_set);
        }
    }
}

#[test]
fn show_says_the_body_and_retry_limits_the_file_set() {
    let config = parse(
        "[providers.gemini]\nmax_body_bytes = 1048576\nretry_budget_secs = 300\n\n\
         [providers.openai]\nretry_budget_secs = 0\n",
    );
    // `config show` says what the file set, and only that.
    let is_set = |_: &str| false;
    let text = show::to_lines(&config, &is_set).join("\n");
    assert!(
        text.contains("gemini      key GEMINI_API_KEY (not set), max_body_bytes 1048576, retry_budget_secs 300"),
        "{text}"
    );
    let json = show::to_json(&config, &is_set);
    assert_eq!(json["providers"]["gemini"]["max_body_bytes"], 1_048_576);
    assert_eq!(json["providers"]["openai"]["retry_budget_secs"], 0);
    assert!(json["providers"]["openai"].get("max_body_bytes").is_none());
}

#[test]
fn show_says_the_http_version_and_streams_the_file_set() {
    let config = parse(
        "[providers.openai]\nhttp_version = \"http1\"\n\n\
         [providers.mine]\nkind = \"openai-compatible\"\nbase_url = \"http://127.0.0.1:8080/v1\"\n\
         http_version = \"http2\"\nstreams_per_connection = 32\n",
    );
    let is_set = |_: &str| false;
    let text = show::to_lines(&config, &is_set).join("\n");
    assert!(
        text.contains("openai      key OPENAI_API_KEY (not set), http_version http1\n"),
        "{text}"
    );
    assert!(
        text.contains("structured_output detected, http_version http2, streams_per_connection 32"),
        "{text}"
    );
    let json = show::to_json(&config, &is_set);
    assert_eq!(json["providers"]["openai"]["http_version"], "http1");
    assert!(
        json["providers"]["openai"]
            .get("streams_per_connection")
            .is_none()
    );
    assert_eq!(json["providers"]["mine"]["http_version"], "http2");
    assert_eq!(json["providers"]["mine"]["streams_per_connection"], 32);
    assert!(json["providers"]["gemini"].get("http_version").is_none());
}

#[test]
fn show_redacts_gateway_secrets() {
    let config = parse(GATEWAYS);
    let is_set = |var: &str| var == "HELICONE_API_KEY";
    let text = show::to_lines(&config, &is_set).join("\n");
    let json = show::to_json(&config, &is_set);
    for out in [&text, &json.to_string()] {
        assert!(!out.contains("pk-literal"), "{out}");
    }
    assert!(
        text.contains(
            "openrouter  key OPENROUTER_API_KEY (not set), headers Helicone-Auth=*** \
             (HELICONE_API_KEY set) Helicone-Cache-Enabled=true"
        ),
        "{text}"
    );
    assert!(
        text.contains("headers x-portkey-api-key=*** x-portkey-provider=openai"),
        "{text}"
    );
    assert!(
        text.contains(", query api-version=2024-10-21, auth_header api-key"),
        "{text}"
    );
    let openrouter = &json["providers"]["openrouter"];
    assert_eq!(
        openrouter["headers"],
        json!({"Helicone-Auth": "***", "Helicone-Cache-Enabled": "true"})
    );
    assert_eq!(openrouter["variables"], json!({"HELICONE_API_KEY": true}));
    let azure = &json["providers"]["azure"];
    assert_eq!(azure["query"], json!({"api-version": "2024-10-21"}));
    assert_eq!(azure["auth_header"], "api-key");
    assert_eq!(json["providers"]["openai"].get("headers"), None);
}

#[test]
fn the_redacted_settings_display_as_their_lines() {
    let config = parse(GATEWAYS);
    let is_set = |_: &str| false;
    let redacted = config.redacted(&is_set);
    assert_eq!(redacted.to_string(), redacted.lines().join("\n"));
    assert!(
        redacted
            .to_string()
            .starts_with("file: /etc/claij.toml\nproviders:\n")
    );
}
