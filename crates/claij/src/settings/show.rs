//! The settings as a program may show them ([`Settings::redacted`]), with every secret left out:
//! keys are named by their variable (set or not, never the value), URLs lose their query string,
//! fragment and user info ([`redact_url`]), MCP `env` and `headers` values are replaced by the one
//! marker (`***`), and so are a provider's secret `headers` and `query` values (those naming a
//! variable, whose names are listed with whether they are set, or named like a credential).

use std::fmt;

use claij_backends::http::HttpVersion;
#[cfg(feature = "mcp")]
use claij_backends::redact::MARKER;
use claij_backends::redact::redact_url;
use claij_interceptors::StructuredMode;
#[cfg(feature = "mcp")]
use claij_mcp::{McpConfig, ServerConfig};
use serde_json::{Map, Value, json};

use super::memory::{MemorySettings, Store, Strategy};
use super::{
    COMPATIBLE_KIND, DEFAULT_REMOTE_ALIAS, Gateway, ModelList, Origin, Settings, gateway::Setting,
};
use crate::model::Provider;

/// The settings without their secrets, as lines for people ([`fmt::Display`], [`Redacted::lines`])
/// or one JSON document ([`Redacted::to_json`]): what `claij config show` prints.
pub struct Redacted<'a> {
    settings: &'a Settings,
    is_set: &'a dyn Fn(&str) -> bool,
}

impl fmt::Debug for Redacted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redacted").finish_non_exhaustive()
    }
}

impl Settings {
    /// The settings without their secrets; `is_set` says whether a variable is set (a program
    /// passes its environment's answer; the value itself is never asked for).
    ///
    /// ```
    /// use claij::settings::Settings;
    ///
    /// let text = "[providers.openai]\nbase_url = \"https://me:secret@proxy.example/v1?key=secret\"\n";
    /// let settings = Settings::parse(text, std::path::Path::new("config.toml"))?;
    /// let is_set = |var: &str| var == "OPENAI_API_KEY";
    /// let shown = settings.redacted(&is_set).to_string();
    /// assert!(shown.contains("openai      key OPENAI_API_KEY (set), base_url https://***@proxy.example/v1?***"));
    /// assert!(!shown.contains("secret"));
    /// # Ok::<(), claij::Error>(())
    /// ```
    pub fn redacted<'a>(&'a self, is_set: &'a dyn Fn(&str) -> bool) -> Redacted<'a> {
        Redacted {
            settings: self,
            is_set,
        }
    }
}

impl Redacted<'_> {
    /// The settings as one JSON document.
    #[must_use]
    pub fn to_json(&self) -> Value {
        to_json(self.settings, self.is_set)
    }

    /// The settings for people, a line per setting.
    #[must_use]
    pub fn lines(&self) -> Vec<String> {
        to_lines(self.settings, self.is_set)
    }
}

/// The lines of [`Redacted::lines`], each ended by a newline but the last.
impl fmt::Display for Redacted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.lines().join("\n"))
    }
}

/// The configuration as JSON; `is_set` says whether a variable is set (its value is never read).
fn to_json(config: &Settings, is_set: &dyn Fn(&str) -> bool) -> Value {
    let mut providers: Map<String, Value> = config
        .providers()
        .iter()
        .map(|p| {
            let mut value = json!({
                "api_key_env": p.api_key_env,
                "api_key_set": is_set(&p.api_key_env),
                "base_url": p.base_url.as_deref().map(redact_url),
            });
            // The limits show only when the file sets them (the defaults are the library's).
            if let Some(limit) = p.max_body_bytes {
                value["max_body_bytes"] = limit.into();
            }
            if let Some(budget) = p.retry_budget {
                value["retry_budget_secs"] = budget.as_secs().into();
            }
            add_http_json(&mut value, p.http_version, p.streams_per_connection);
            if p.model_list != ModelList::Auto {
                value["model_list"] = p.model_list.name().into();
            }
            if let Some(age) = p.models_max_age {
                value["models_max_age_secs"] = age.as_secs().into();
            }
            add_gateway_json(&mut value, &p.gateway, is_set);
            (p.provider.name().to_owned(), value)
        })
        .collect();
    for (name, p) in config.compatible_providers() {
        let mut value = json!({
            "kind": COMPATIBLE_KIND,
            "api_key_env": p.api_key_env,
            "api_key_set": p.api_key_env.as_deref().is_some_and(is_set),
            "base_url": redact_url(&p.base_url),
            "structured_output": p.structured_output.map(|d| d.name()),
        });
        add_http_json(&mut value, p.http_version, p.streams_per_connection);
        add_gateway_json(&mut value, &p.gateway, is_set);
        providers.insert(name.clone(), value);
    }
    let aliases: Map<String, Value> = config
        .aliases()
        .iter()
        .map(|(name, alias)| {
            let value = json!({"target": alias.llm.to_string(), "origin": origin(alias.origin)});
            (name.clone(), value)
        })
        .collect();
    let defaults = &config.defaults;
    #[cfg_attr(not(feature = "mcp"), allow(unused_mut))]
    let mut value = json!({
        "path": config.path.as_ref().map(|p| p.display().to_string()),
        "providers": providers,
        "aliases": aliases,
        "defaults": {
            "llm": defaults.llm,
            "max_retries": defaults.max_retries,
            "max_reply_bytes": defaults.max_reply_bytes,
            "mode": defaults.mode.map(mode),
        },
        "proposals": {
            "voters": config.voters,
            "compact_budget": config.compact_budget.map(|b| b.to_string()),
        },
        "memory": memory_json(&config.memory),
        "restate": {"identity_keys": config.restate.identity_keys},
        "mcp_path": config.mcp_path.as_ref().map(|p| p.display().to_string()),
    });
    #[cfg(feature = "mcp")]
    {
        value["mcpServers"] = config.mcp.as_ref().map(servers_json).unwrap_or_default();
        value["projects"] = config.mcp.as_ref().map(projects_json).unwrap_or_default();
    }
    value
}

/// The configuration for people, a line per setting.
fn to_lines(config: &Settings, is_set: &dyn Fn(&str) -> bool) -> Vec<String> {
    let mut lines = vec![match &config.path {
        Some(path) => format!("file: {}", path.display()),
        None => "file: (defaults)".to_owned(),
    }];
    lines.push("providers:".to_owned());
    for p in config.providers() {
        let set = if is_set(&p.api_key_env) {
            "set"
        } else {
            "not set"
        };
        let mut line = format!("  {:<11} key {} ({set})", p.provider.name(), p.api_key_env);
        if let Some(url) = &p.base_url {
            line.push_str(&format!(", base_url {}", redact_url(url)));
        }
        if let Some(limit) = p.max_body_bytes {
            line.push_str(&format!(", max_body_bytes {limit}"));
        }
        if let Some(budget) = p.retry_budget {
            line.push_str(&format!(", retry_budget_secs {}", budget.as_secs()));
        }
        line.push_str(&http_text(p.http_version, p.streams_per_connection));
        if p.model_list != ModelList::Auto {
            line.push_str(&format!(", model_list {}", p.model_list.name()));
        }
        if let Some(age) = p.models_max_age {
            line.push_str(&format!(", models_max_age_secs {}", age.as_secs()));
        }
        line.push_str(&gateway_text(&p.gateway, is_set));
        lines.push(line);
    }
    for (name, p) in config.compatible_providers() {
        let key = match &p.api_key_env {
            Some(var) if is_set(var) => format!("key {var} (set)"),
            Some(var) => format!("key {var} (not set: no key sent)"),
            None => "no key".to_owned(),
        };
        let structured = p.structured_output.map_or("detected", |d| d.name());
        lines.push(format!(
            "  {name:<11} {}, base_url {}, {key}, structured_output {structured}{}{}",
            COMPATIBLE_KIND,
            redact_url(&p.base_url),
            http_text(p.http_version, p.streams_per_connection),
            gateway_text(&p.gateway, is_set)
        ));
    }
    lines.push("aliases:".to_owned());
    let width = config.aliases().keys().map(String::len).max().unwrap_or(0);
    for (name, alias) in config.aliases() {
        let from = match alias.origin {
            Origin::BuiltIn => "built-in",
            Origin::File { overrides: false } => "file",
            Origin::File { overrides: true } => "file, overrides built-in",
        };
        lines.push(format!("  {name:<width$}  {}  ({from})", alias.llm));
    }
    let defaults = &config.defaults;
    lines.push("defaults:".to_owned());
    lines.push(format!(
        "  llm              {}",
        defaults.llm.clone().unwrap_or_else(|| format!(
            "(none: {DEFAULT_REMOTE_ALIAS} when {} is set, else local)",
            config.provider(Provider::OpenRouter).api_key_env
        ))
    ));
    lines.push(format!(
        "  max_retries      {}",
        defaults
            .max_retries
            .map_or_else(|| "(none: 3)".to_owned(), |n| n.to_string())
    ));
    lines.push(format!(
        "  max_reply_bytes  {}",
        defaults.max_reply_bytes.map_or_else(
            || format!("(none: {})", claij_interceptors::DEFAULT_MAX_REPLY_BYTES),
            |n| n.to_string()
        )
    ));
    lines.push(format!(
        "  mode             {}",
        defaults.mode.map_or("(none: auto)", mode)
    ));
    lines.push(format!(
        "proposals:\n  voters           {}",
        none_or_list(&config.voters, "(none: --voters)")
    ));
    lines.push(format!(
        "  compact_budget   {}",
        config.compact_budget.map_or_else(
            || match cfg!(feature = "tokens") {
                true => format!("(none: {})", crate::settings::CompactBudget::DEFAULT),
                false => "(none: off, no feature `tokens` in this build)".to_owned(),
            },
            |b| b.to_string()
        )
    ));
    lines.extend(memory_lines(&config.memory));
    lines.push(format!(
        "restate:\n  identity_keys    {}",
        none_or_list(&config.restate.identity_keys, "(none: loopback only)")
    ));
    #[cfg(feature = "mcp")]
    lines.extend(mcp_lines(config));
    lines
}

/// `[memory]` as JSON: every value in effect (the defaults where the file says nothing).
fn memory_json(memory: &MemorySettings) -> Value {
    let recall = &memory.recall;
    json!({
        "strategy": memory.strategy.name(),
        "bounded": {"max_chars": memory.bounded_max_chars, "max_summaries": memory.bounded_max_summaries},
        "window": {"size": memory.window_size},
        "hierarchical": {"every": memory.hierarchical_every},
        "recall": {
            "k": recall.k,
            "min_similarity": recall.min_similarity,
            "max_chars": recall.max_chars,
            "store_exchange": recall.store_exchange,
            "store": recall.store.to_string(),
            "collection": recall.collection,
            "user": recall.user,
        },
    })
}

/// `[memory]` for people: the strategy and the values it uses.
fn memory_lines(memory: &MemorySettings) -> Vec<String> {
    let mut lines = vec![format!("memory:\n  strategy         {}", memory.strategy)];
    let recall = &memory.recall;
    match memory.strategy {
        Strategy::Bounded => lines.push(format!(
            "  bounded          max_chars {}, max_summaries {}",
            memory.bounded_max_chars, memory.bounded_max_summaries
        )),
        Strategy::Window => lines.push(format!("  window           size {}", memory.window_size)),
        Strategy::Hierarchical => lines.push(format!(
            "  hierarchical     every {}",
            memory.hierarchical_every
        )),
        Strategy::Recall => {
            lines.push(format!(
                "  recall           k {}, min_similarity {}, max_chars {}, store_exchange {}",
                recall.k, recall.min_similarity, recall.max_chars, recall.store_exchange
            ));
            lines.push(format!("  store            {}", recall.store));
            match &recall.store {
                Store::Embedded => lines.push(format!(
                    "  user             {}",
                    recall
                        .user
                        .as_deref()
                        .unwrap_or("(none: $USER, else default)")
                )),
                Store::Server(_) => {
                    lines.push(format!("  collection       {}", recall.collection));
                }
            }
        }
    }
    lines
}

/// `items` comma-separated, or `none` when there are none.
fn none_or_list(items: &[String], none: &str) -> String {
    if items.is_empty() {
        none.to_owned()
    } else {
        items.join(", ")
    }
}

/// `headers`, `query`, `auth_header` and the variables they name (set or not) into a provider's
/// JSON, when the entry has any; secret values are `***`.
/// `http_version` and `streams_per_connection`, when the file sets them (the defaults are the
/// library's).
fn add_http_json(value: &mut Value, version: Option<HttpVersion>, streams: Option<u32>) {
    if let Some(version) = version {
        value["http_version"] = version.name().into();
    }
    if let Some(streams) = streams {
        value["streams_per_connection"] = streams.into();
    }
}

/// `, http_version V, streams_per_connection N` for what the file sets.
fn http_text(version: Option<HttpVersion>, streams: Option<u32>) -> String {
    let mut text = String::new();
    if let Some(version) = version {
        text.push_str(&format!(", http_version {version}"));
    }
    if let Some(streams) = streams {
        text.push_str(&format!(", streams_per_connection {streams}"));
    }
    text
}

fn add_gateway_json(value: &mut Value, gateway: &Gateway, is_set: &dyn Fn(&str) -> bool) {
    if gateway.is_empty() {
        return;
    }
    let shown = |settings: &[Setting]| -> Map<String, Value> {
        settings
            .iter()
            .map(|s| (s.name.clone(), Value::String(s.shown())))
            .collect()
    };
    let variables: Map<String, Value> = gateway
        .headers
        .iter()
        .chain(&gateway.query)
        .flat_map(Setting::vars)
        .map(|var| (var.to_owned(), Value::Bool(is_set(var))))
        .collect();
    value["headers"] = Value::Object(shown(&gateway.headers));
    value["query"] = Value::Object(shown(&gateway.query));
    value["auth_header"] = gateway.auth_header.clone().into();
    value["variables"] = Value::Object(variables);
}

/// `, headers NAME=VALUE ..., query NAME=VALUE ..., auth_header NAME` for a provider's line (empty
/// without any); secret values are `***`, followed by the variables they name and whether each is
/// set.
fn gateway_text(gateway: &Gateway, is_set: &dyn Fn(&str) -> bool) -> String {
    let list = |settings: &[Setting]| -> String {
        let shown: Vec<String> = settings
            .iter()
            .map(|s| {
                let vars: Vec<String> = s
                    .vars()
                    .map(|var| {
                        let set = if is_set(var) { "set" } else { "not set" };
                        format!("{var} {set}")
                    })
                    .collect();
                let from = if vars.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", vars.join(", "))
                };
                format!("{}={}{from}", s.name, s.shown())
            })
            .collect();
        shown.join(" ")
    };
    let mut text = String::new();
    if !gateway.headers.is_empty() {
        text.push_str(&format!(", headers {}", list(&gateway.headers)));
    }
    if !gateway.query.is_empty() {
        text.push_str(&format!(", query {}", list(&gateway.query)));
    }
    if let Some(name) = &gateway.auth_header {
        text.push_str(&format!(", auth_header {name}"));
    }
    text
}

#[cfg(feature = "mcp")]
/// `mcpServers (from FILE):` and a line per server, then the projects; without servers, why.
fn mcp_lines(config: &Settings) -> Vec<String> {
    let mut lines = vec![match &config.mcp_path {
        Some(path) => format!("mcpServers (from {}):", path.display()),
        None => "mcpServers:".to_owned(),
    }];
    let Some(mcp) = config.mcp.as_ref().filter(|m| !m.servers.is_empty()) else {
        lines.push(format!("  (none: {})", config.no_servers()));
        return lines;
    };
    for (name, server) in &mcp.servers {
        let line = match server {
            ServerConfig::Stdio(s) => {
                let mut line = format!("  {name}: stdio `{}", s.command);
                for arg in &s.args {
                    line.push(' ');
                    line.push_str(arg);
                }
                line.push('`');
                if !s.env.is_empty() {
                    line.push_str(&format!(", env {}", redacted_keys(s.env.keys())));
                }
                line
            }
            ServerConfig::Http(s) => {
                let mut line = format!("  {name}: http {}", redact_url(&s.url));
                if !s.headers.is_empty() {
                    line.push_str(&format!(", headers {}", redacted_keys(s.headers.keys())));
                }
                line
            }
            _ => format!("  {name}: (unknown transport)"),
        };
        lines.push(line);
    }
    if !mcp.projects.is_empty() {
        lines.push("projects:".to_owned());
        for (name, project) in &mcp.projects {
            let tools = project
                .tools
                .as_ref()
                .map_or_else(|| "every tool".to_owned(), |t| t.join(", "));
            lines.push(format!(
                "  {name}: services {}; tools {tools}",
                project.services.join(", ")
            ));
        }
    }
    lines
}

#[cfg(feature = "mcp")]
fn redacted_keys<'a>(keys: impl Iterator<Item = &'a String>) -> String {
    keys.map(|k| format!("{k}={MARKER}"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(feature = "mcp")]
fn servers_json(mcp: &McpConfig) -> Value {
    let redacted = |map: &std::collections::BTreeMap<String, String>| -> Map<String, Value> {
        map.keys()
            .map(|k| (k.clone(), Value::String(MARKER.to_owned())))
            .collect()
    };
    let servers: Map<String, Value> = mcp
        .servers
        .iter()
        .map(|(name, server)| {
            let value = match server {
                ServerConfig::Stdio(s) => json!({
                    "type": "stdio",
                    "command": s.command,
                    "args": s.args,
                    "env": redacted(&s.env),
                    "cwd": s.cwd.as_ref().map(|p| p.display().to_string()),
                }),
                ServerConfig::Http(s) => json!({
                    "type": "http",
                    "url": redact_url(&s.url),
                    "headers": redacted(&s.headers),
                }),
                _ => json!({"type": "unknown"}),
            };
            (name.clone(), value)
        })
        .collect();
    Value::Object(servers)
}

#[cfg(feature = "mcp")]
fn projects_json(mcp: &McpConfig) -> Value {
    let projects: Map<String, Value> = mcp
        .projects
        .iter()
        .map(|(name, p)| {
            let value = json!({"services": p.services, "tools": p.tools});
            (name.clone(), value)
        })
        .collect();
    Value::Object(projects)
}

fn origin(origin: Origin) -> &'static str {
    match origin {
        Origin::BuiltIn => "built-in",
        Origin::File { overrides: false } => "file",
        Origin::File { overrides: true } => "file (overrides built-in)",
    }
}

fn mode(mode: StructuredMode) -> &'static str {
    match mode {
        StructuredMode::Auto => "auto",
        StructuredMode::Native => "native",
        StructuredMode::Tool => "tool",
        StructuredMode::Prompted => "prompted",
    }
}

#[cfg(test)]
mod tests;
