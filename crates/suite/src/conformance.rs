//! `claij-suite mcp-conformance URL`: the client the official MCP conformance suite drives
//! (`conformance client --command "claij-suite mcp-conformance" --scenario NAME`). It connects to
//! the suite's test server over streamable HTTP, lists its tools and calls each one with arguments
//! made from its input schema, answering the server's questions by `--elicitation`. The suite checks
//! what the server saw; this exits 0 when every call returned a result, 1 when one reported an
//! error, 2 when it could not connect, 130 or 143 on SIGINT or SIGTERM.
//!
//! What the calls are follows the scenario, as the suite's reference clients do ([`Plan`]): the
//! calls its context (`MCP_CONFORMANCE_CONTEXT`) lists under `toolCalls`, with their arguments;
//! for `json-schema-2020-12-preservation`, the focal tool's input schema, as claij holds it, sent
//! back to the echo tool; for `json-schema-ref-no-deref`, none (the scenario lists tools only);
//! otherwise each tool.
//!
//! The URL must be on loopback: this mode exists for the suite's local test servers only.

use std::io::Write as _;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use claij_mcp::{ClientOptions, Headless, Hooks, McpConfig, OAuth, Services};
use serde_json::{Map, Value, json};

use claij::mcp::elicitation::Defaults;
use claij::mcp::signal::{Signal, Signals};

use crate::{Status, one_line};

/// The name the suite's server gets in claij's configuration.
const SERVER: &str = "conformance";

/// Where the suite's authorization server redirects (never visited: [`Headless`] reads the redirect).
const REDIRECT_URI: &str = "http://localhost:3000/callback";

/// The client ID metadata document claij offers the suite (which does not fetch it).
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// How the server's questions are answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Policy {
    /// Refused here: the suite has no person to ask.
    Ask,
    /// Accept with the requested schema's defaults; decline when a required field has none.
    Defaults,
    /// Decline every question.
    Decline,
}

/// Arguments of `claij-suite mcp-conformance`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The test server's URL (loopback only: `localhost`, `127.0.0.1`, `[::1]`).
    url: String,
    /// How the server's questions are answered (`ask` is not offered here: the suite has no person).
    #[arg(long, value_enum, default_value_t = Policy::Defaults)]
    elicitation: Policy,
    /// Longest wait for each call, in seconds (default 30).
    #[arg(long, value_name = "SECS", value_parser = crate::args::seconds)]
    timeout: Option<Duration>,
}

/// Connects, lists the tools and calls each one, in name order, on a current-thread runtime.
pub(crate) fn run(args: &Args) -> Result<Status> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    // Dropping the runtime on the way out drops every task, and with them a server still
    // starting.
    runtime.block_on(async {
        let mut signals = Signals::new()?;
        connect_and_call(args, &mut signals).await
    })
}

async fn connect_and_call(args: &Args, signals: &mut Signals) -> Result<Status> {
    if !is_loopback(&args.url) {
        bail!(
            "`{}` is not a loopback URL: the conformance client only talks to local test servers",
            claij_backends::redact::redact_url(&args.url)
        );
    }
    let hooks = match args.elicitation {
        Policy::Defaults => Hooks::default().with_elicitor(Defaults),
        Policy::Decline => Hooks::default(),
        Policy::Ask => bail!("--elicitation ask needs a person: use defaults or decline"),
    };
    let config =
        McpConfig::from_json(&json!({"mcpServers": {SERVER: {"url": args.url}}}).to_string())
            .context("the conformance server's URL")?;
    let options = ClientOptions::default().with_hooks(hooks).with_oauth(oauth(
        std::env::var("MCP_CONFORMANCE_CONTEXT").ok().as_deref(),
    ));
    let connecting = Services::connect(&config, options);
    let services = tokio::select! {
        connected = connecting => connected?,
        signal = signals.recv() => return Ok(stopped(signal)),
    };
    let plan = Plan::of(
        std::env::var("MCP_CONFORMANCE_SCENARIO").ok().as_deref(),
        std::env::var("MCP_CONFORMANCE_CONTEXT").ok().as_deref(),
    );
    let calls = call_each(&services, &plan, args.timeout);
    let result = signals.or_stop(&services, calls).await;
    services.close().await;
    result.unwrap_or_else(|signal| Ok(stopped(signal)))
}

/// The status of a run `signal` stopped.
fn stopped(signal: Signal) -> Status {
    Status::Signalled {
        name: signal.name(),
        code: signal.exit_code(),
    }
}

/// The suite's authorization server approves at once: [`Headless`] follows its redirect. A
/// scenario's `MCP_CONFORMANCE_CONTEXT` may name a pre-registered client (`client_id`,
/// `client_secret`); otherwise claij offers a client ID metadata document or registers itself.
fn oauth(context: Option<&str>) -> OAuth {
    let context: Value = context
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or_default();
    let text = |key: &str| context.get(key).and_then(Value::as_str).map(str::to_owned);
    let oauth = OAuth::new(REDIRECT_URI, Headless).with_client_metadata_url(CLIENT_METADATA_URL);
    match text("client_id") {
        Some(client_id) => oauth.with_client(client_id, text("client_secret")),
        None => oauth,
    }
}

/// The scenario whose focal tool's input schema goes back to the echo tool.
const PRESERVATION: &str = "json-schema-2020-12-preservation";
/// That scenario's focal tool and its echo tool (argument `schema`).
const FOCAL_TOOL: &str = "json_schema_2020_12_tool";
const ECHO_TOOL: &str = "json_schema_echo";
/// The scenario whose server answers `tools/list` only.
const LIST_ONLY: &str = "json-schema-ref-no-deref";

/// Which tools are called, with what.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Plan {
    /// Each tool, with arguments made from its input schema ([`example_args`]).
    EachTool,
    /// These calls, in order: the scenario's `toolCalls`.
    Calls(Vec<(String, Value)>),
    /// `tool`'s input schema, as listed, sent as the argument `schema` of `echo`.
    EchoSchema { tool: String, echo: String },
    /// No call: listing the tools is the scenario.
    ListOnly,
}

impl Plan {
    /// The plan for the suite's `scenario` (`MCP_CONFORMANCE_SCENARIO`) and `context`
    /// (`MCP_CONFORMANCE_CONTEXT`, JSON).
    pub(crate) fn of(scenario: Option<&str>, context: Option<&str>) -> Plan {
        let context: Value = context
            .and_then(|text| serde_json::from_str(text).ok())
            .unwrap_or_default();
        if let Some(calls) = context.get("toolCalls").and_then(Value::as_array) {
            return Plan::Calls(
                calls
                    .iter()
                    .filter_map(|call| {
                        let name = call.get("name")?.as_str()?.to_owned();
                        let args = call.get("arguments").cloned().unwrap_or_else(|| json!({}));
                        Some((name, args))
                    })
                    .collect(),
            );
        }
        match scenario {
            Some(PRESERVATION) => Plan::EchoSchema {
                tool: FOCAL_TOOL.to_owned(),
                echo: ECHO_TOOL.to_owned(),
            },
            Some(LIST_ONLY) => Plan::ListOnly,
            _ => Plan::EachTool,
        }
    }
}

/// Makes the calls of `plan`, a line on stdout for each.
async fn call_each(services: &Services, plan: &Plan, timeout: Option<Duration>) -> Result<Status> {
    let Some(client) = services.client(SERVER) else {
        bail!("the conformance server did not start");
    };
    let mut tools = services.tools();
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    let calls: Vec<(String, Value)> = match plan {
        Plan::EachTool => tools
            .iter()
            .map(|tool| (tool.name.clone(), example_args(&tool.input_schema)))
            .collect(),
        Plan::Calls(calls) => calls.clone(),
        Plan::EchoSchema { tool, echo } => {
            let Some(focal) = tools.iter().find(|listed| listed.name == *tool) else {
                bail!("the server lists no tool `{tool}`");
            };
            vec![(echo.clone(), json!({"schema": focal.input_schema}))]
        }
        Plan::ListOnly => Vec::new(),
    };
    let mut status = Status::Ok;
    for (name, args) in calls {
        let outcome = client.call_with_timeout(&name, args, timeout).await?;
        let text: Vec<String> = outcome
            .content
            .iter()
            .map(claij_mcp::Content::describe)
            .collect();
        let verdict = if outcome.is_error {
            status = Status::Invalid;
            "error"
        } else {
            "ok"
        };
        writeln!(
            std::io::stdout(),
            "{name}: {verdict}: {}",
            one_line(&text.join(" "))
        )?;
    }
    Ok(status)
}

/// Arguments a tool's input schema accepts: each required property (and each with a default) as its
/// default, else its first `enum` value, else a plain value of its type.
pub(crate) fn example_args(schema: &Value) -> Value {
    let empty = Map::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut args = Map::new();
    for (name, property) in properties {
        let value = if let Some(default) = property.get("default") {
            default.clone()
        } else if !required.contains(&name.as_str()) {
            continue;
        } else if let Some(first) = property
            .get("enum")
            .and_then(Value::as_array)
            .and_then(|values| values.first())
        {
            first.clone()
        } else {
            match property.get("type").and_then(Value::as_str) {
                Some("integer" | "number") => json!(1),
                Some("boolean") => json!(true),
                Some("array") => json!([]),
                Some("object") => json!({}),
                Some("null") => Value::Null,
                _ => json!("test"),
            }
        };
        args.insert(name.clone(), value);
    }
    Value::Object(args)
}

/// Whether `url` is `http(s)://` on `localhost`, `127.0.0.0/8` or `[::1]`.
pub(crate) fn is_loopback(url: &str) -> bool {
    let Some(rest) = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
    else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return false;
    }
    let host = match authority.strip_prefix('[') {
        Some(v6) => match v6.split_once(']') {
            Some((host, _)) => host,
            None => return false,
        },
        None => authority.split(':').next().unwrap_or_default(),
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_urls_are_taken() {
        for url in [
            "http://localhost:4000/mcp",
            "http://127.0.0.1:1",
            "http://127.3.2.1/",
            "http://[::1]:8080/mcp",
            "https://LOCALHOST",
        ] {
            assert!(is_loopback(url), "{url}");
        }
        for url in [
            "http://example.com/mcp",
            "http://localhost.example.com:80",
            "http://10.0.0.1:80",
            "http://user@evil.com@localhost/",
            "http://[::2]:1",
            "ftp://localhost",
            "localhost:80",
            "http://[::1",
        ] {
            assert!(!is_loopback(url), "{url}");
        }
    }

    #[test]
    fn the_plan_follows_the_scenario() {
        let context = json!({"name": "http-custom-headers", "toolCalls": [
            {"name": "a", "arguments": {"x": "Hello, 世界"}}, {"name": "b"}
        ]})
        .to_string();
        assert_eq!(
            Plan::of(Some("http-custom-headers"), Some(&context)),
            Plan::Calls(vec![
                ("a".to_owned(), json!({"x": "Hello, 世界"})),
                ("b".to_owned(), json!({}))
            ])
        );
        assert_eq!(
            Plan::of(Some(PRESERVATION), None),
            Plan::EchoSchema {
                tool: FOCAL_TOOL.to_owned(),
                echo: ECHO_TOOL.to_owned()
            }
        );
        assert_eq!(Plan::of(Some(LIST_ONLY), Some("{}")), Plan::ListOnly);
        assert_eq!(
            Plan::of(Some("tools_call"), Some("not json")),
            Plan::EachTool
        );
        assert_eq!(Plan::of(None, None), Plan::EachTool);
    }

    #[test]
    fn example_args_fill_required_properties_and_defaults() {
        let schema = json!({"type": "object", "properties": {
            "a": {"type": "number"}, "b": {"type": "integer"}, "s": {"type": "string"},
            "e": {"enum": ["x", "y"]}, "d": {"type": "string", "default": "dd"}, "o": {"type": "string"}
        }, "required": ["a", "b", "s", "e"]});
        assert_eq!(
            example_args(&schema),
            json!({"a": 1, "b": 1, "s": "test", "e": "x", "d": "dd"})
        );
        assert_eq!(example_args(&json!({"type": "object"})), json!({}));
    }
}
