//! Tests of the configuration parser: each case is a file's text and what it parses to, one line per
//! server (its `Debug`, then the values `Debug` hides) and per project, or the error with its pointer.

use std::fmt::Write as _;

use super::{McpConfig, ServerConfig};
use crate::error::Error;

/// Stands for every secret in the cases: it must never show in `Debug` output or an error.
const SECRET: &str = "s3cr3t";

#[track_caller]
fn check(input: &str, expected: &str) {
    let actual = match McpConfig::from_json(input) {
        Ok(config) => {
            let debug = format!("{config:?}");
            assert!(!debug.contains(SECRET), "a secret in `Debug`: {debug}");
            render(&config)
        }
        Err(err @ Error::Config { .. }) => {
            let shown = format!("{err} / {err:?}");
            assert!(!shown.contains(SECRET), "a secret in the error: {shown}");
            let Error::Config { pointer, message } = err else {
                unreachable!()
            };
            format!("error at {pointer:?}: {message}")
        }
        Err(other) => panic!("not a configuration error: {other:?}"),
    };
    assert_eq!(actual, expected, "\ninput: {input}");
}

fn render(config: &McpConfig) -> String {
    let mut out = String::new();
    for (name, server) in &config.servers {
        let hidden: Vec<String> = match server {
            ServerConfig::Stdio(stdio) => {
                stdio.env.iter().map(|(k, v)| format!("{k}={v}")).collect()
            }
            ServerConfig::Http(http) => std::iter::once(format!("url={}", http.url))
                .chain(http.headers.iter().map(|(k, v)| format!("{k}={v}")))
                .collect(),
        };
        let _ = write!(out, "{name}: {server:?}");
        if !hidden.is_empty() {
            let _ = write!(out, " | {}", hidden.join(", "));
        }
        out.push('\n');
    }
    for (name, project) in &config.projects {
        let _ = writeln!(out, "project {name}: {project:?}");
    }
    for root in &config.roots {
        let _ = writeln!(out, "root {}", root.uri);
    }
    out.trim_end().to_owned()
}

#[test]
fn stdio_servers() {
    check(
        r#"{"mcpServers": {"time": {"command": "mcp-server-time"}}}"#,
        r#"time: StdioServer { command: "mcp-server-time", args: [], env: {}, cwd: None, timeout: None, max_message_bytes: None }"#,
    );
    check(
        r#"{"mcpServers": {"fs": {"command": "node", "args": ["fs.js", "/srv/docs"], "cwd": "/srv",
            "env": {"NODE_ENV": "production", "API_KEY": "s3cr3t"}, "timeout": 2.5}}}"#,
        r#"fs: StdioServer { command: "node", args: ["fs.js", "/srv/docs"], env: {"API_KEY": "***", "NODE_ENV": "***"}, cwd: Some("/srv"), timeout: Some(2.5s), max_message_bytes: None } | API_KEY=s3cr3t, NODE_ENV=production"#,
    );
    check(
        r#"{"mcpServers": {"big": {"command": "big", "timeout": 86400, "maxMessageBytes": 1048576}}}"#,
        r#"big: StdioServer { command: "big", args: [], env: {}, cwd: None, timeout: Some(86400s), max_message_bytes: Some(1048576) }"#,
    );
    // `type` may say so; other clients' keys are ignored.
    check(
        r#"{"mcpServers": {"t": {"type": "stdio", "command": "t", "autoApprove": ["x"], "alwaysAllow": []}},
            "inputs": [], "globalShortcut": "Ctrl+M"}"#,
        r#"t: StdioServer { command: "t", args: [], env: {}, cwd: None, timeout: None, max_message_bytes: None }"#,
    );
    // In name order; `servers` is accepted for `mcpServers`.
    check(
        r#"{"servers": {"zed": {"command": "z", "timeout": 30}, "alpha": {"command": "a"}}}"#,
        "alpha: StdioServer { command: \"a\", args: [], env: {}, cwd: None, timeout: None, max_message_bytes: None }\n\
         zed: StdioServer { command: \"z\", args: [], env: {}, cwd: None, timeout: Some(30s), max_message_bytes: None }",
    );
    check(r#"{"mcpServers": {}}"#, "");
}

#[test]
fn http_servers() {
    check(
        r#"{"mcpServers": {"web": {"url": "http://127.0.0.1:3001/mcp"}}}"#,
        r#"web: HttpServer { url: "http://127.0.0.1:3001/mcp", headers: {}, timeout: None, max_message_bytes: None } | url=http://127.0.0.1:3001/mcp"#,
    );
    check(
        r#"{"mcpServers": {"web": {"url": "https://127.0.0.1/mcp", "timeout": 0.5,
            "headers": {"Authorization": "Bearer s3cr3t", "X-Team": "core"}}}}"#,
        r#"web: HttpServer { url: "https://127.0.0.1/mcp", headers: {"Authorization": "***", "X-Team": "***"}, timeout: Some(500ms), max_message_bytes: None } | url=https://127.0.0.1/mcp, Authorization=Bearer s3cr3t, X-Team=core"#,
    );
    for kind in ["http", "streamable-http", "streamableHttp", "HTTP"] {
        check(
            &format!(
                r#"{{"mcpServers": {{"web": {{"type": "{kind}", "url": "http://127.0.0.1/mcp"}}}}}}"#
            ),
            r#"web: HttpServer { url: "http://127.0.0.1/mcp", headers: {}, timeout: None, max_message_bytes: None } | url=http://127.0.0.1/mcp"#,
        );
    }
}

#[test]
fn urls_lose_their_user_info_query_and_fragment_in_debug() {
    check(
        r#"{"mcpServers": {"web": {"url": "http://admin:s3cr3t@127.0.0.1:3001/mcp?token=s3cr3t#s3cr3t"}}}"#,
        r#"web: HttpServer { url: "http://***@127.0.0.1:3001/mcp?***#***", headers: {}, timeout: None, max_message_bytes: None } | url=http://admin:s3cr3t@127.0.0.1:3001/mcp?token=s3cr3t#s3cr3t"#,
    );
    check(
        r#"{"mcpServers": {"web": {"url": "https://s3cr3t@127.0.0.1?key=s3cr3t"}}}"#,
        r#"web: HttpServer { url: "https://***@127.0.0.1?***", headers: {}, timeout: None, max_message_bytes: None } | url=https://s3cr3t@127.0.0.1?key=s3cr3t"#,
    );
    check(
        r#"{"mcpServers": {"web": {"url": "http://127.0.0.1/mcp/a@b?k=s3cr3t"}}}"#,
        r#"web: HttpServer { url: "http://127.0.0.1/mcp/a@b?***", headers: {}, timeout: None, max_message_bytes: None } | url=http://127.0.0.1/mcp/a@b?k=s3cr3t"#,
    );
}

#[test]
fn disabled_servers_are_left_out() {
    check(
        r#"{"mcpServers": {"a": {"command": "a", "disabled": true}, "b": {"command": "b", "disabled": false}}}"#,
        r#"b: StdioServer { command: "b", args: [], env: {}, cwd: None, timeout: None, max_message_bytes: None }"#,
    );
    // Left out before its transport is checked.
    check(
        r#"{"mcpServers": {"a": {"command": "a", "url": "http://127.0.0.1/mcp", "disabled": true}}}"#,
        "",
    );
}

#[test]
fn malformed_files_are_errors_at_the_root() {
    check(
        r#"{"mcpServers": "#,
        r#"error at "": not JSON: EOF while parsing a value at line 1 column 15"#,
    );
    check("[]", r#"error at "": expected an object"#);
    check("{}", r#"error at "": no `mcpServers` object"#);
    check(
        r#"{"mcpServers": []}"#,
        r#"error at "/mcpServers": expected an object"#,
    );
}

#[test]
fn bad_servers_are_errors_at_their_pointer() {
    check(
        r#"{"mcpServers": {"x": {}}}"#,
        r#"error at "/mcpServers/x": neither `command` nor `url`"#,
    );
    check(
        r#"{"mcpServers": {"x": {"command": "x", "url": "http://127.0.0.1/mcp"}}}"#,
        r#"error at "/mcpServers/x": both `command` and `url`; give one"#,
    );
    check(
        r#"{"mcpServers": {"x": {"url": "ws://127.0.0.1/mcp"}}}"#,
        r#"error at "/mcpServers/x/url": expected an http(s) URL"#,
    );
    check(
        r#"{"mcpServers": {"x": {"command": "  "}}}"#,
        r#"error at "/mcpServers/x/command": empty command"#,
    );
    check(
        r#"{"mcpServers": {"x": {"type": "sse", "url": "http://127.0.0.1/sse"}}}"#,
        r#"error at "/mcpServers/x/type": the SSE transport of 2024-11-05 is not supported; use streamable HTTP"#,
    );
    check(
        r#"{"mcpServers": {"x": {"type": "stdio", "url": "http://127.0.0.1/mcp"}}}"#,
        r#"error at "/mcpServers/x/type": `stdio` does not match the server's `command`/`url`"#,
    );
    check(
        r#"{"mcpServers": {"x": {"type": "pigeon", "command": "x"}}}"#,
        r#"error at "/mcpServers/x/type": `pigeon` does not match the server's `command`/`url`"#,
    );
    // Never a panic converting to a `Duration`, however large, small or negative the number.
    for timeout in ["0", "-0", "-1", "86400.5", "1e308", "-1e308", "1e-320"] {
        check(
            &format!(r#"{{"mcpServers": {{"x": {{"command": "x", "timeout": {timeout}}}}}}}"#),
            r#"error at "/mcpServers/x/timeout": a timeout is a number of seconds, above 0 and at most 86400 (a day)"#,
        );
    }
    for bytes in ["1023", "1073741825", "-1", "1e308", "65536.5", "\"64MiB\""] {
        check(
            &format!(
                r#"{{"mcpServers": {{"x": {{"command": "x", "maxMessageBytes": {bytes}}}}}}}"#
            ),
            r#"error at "/mcpServers/x/maxMessageBytes": a message size limit is a whole number of bytes from 1024 to 1073741824"#,
        );
    }
    check(
        r#"{"mcpServers": {"x": {"command": "x", "args": "-v"}}}"#,
        r#"error at "/mcpServers/x": invalid type: string "-v", expected a sequence"#,
    );
    check(
        r#"{"mcpServers": {"x": {"command": "x", "timeout": "10"}}}"#,
        r#"error at "/mcpServers/x": invalid type: string "10", expected f64"#,
    );
}

#[test]
fn server_names_are_checked_and_escaped_in_pointers() {
    check(
        r#"{"mcpServers": {"": {"command": "x"}}}"#,
        r#"error at "/mcpServers/": a server name is non-empty and has no `.` (tools are named `server.tool`)"#,
    );
    check(
        r#"{"mcpServers": {"a.b": {"command": "x"}}}"#,
        r#"error at "/mcpServers/a.b": a server name is non-empty and has no `.` (tools are named `server.tool`)"#,
    );
    check(
        r#"{"mcpServers": {"a/b~c": {}}}"#,
        r#"error at "/mcpServers/a~1b~0c": neither `command` nor `url`"#,
    );
}

#[test]
fn secrets_stay_out_of_errors() {
    check(
        r#"{"mcpServers": {"x": {"command": "x", "env": "API_KEY=s3cr3t"}}}"#,
        r#"error at "/mcpServers/x/env": expected an object of strings"#,
    );
    check(
        r#"{"mcpServers": {"x": {"command": "x", "env": {"API_KEY": ["s3cr3t"]}}}}"#,
        r#"error at "/mcpServers/x/env/API_KEY": expected a string"#,
    );
    check(
        r#"{"mcpServers": {"x": {"url": "http://127.0.0.1/mcp", "headers": "Authorization: Bearer s3cr3t"}}}"#,
        r#"error at "/mcpServers/x/headers": expected an object of strings"#,
    );
    check(
        r#"{"mcpServers": {"x": {"url": "http://127.0.0.1/mcp", "headers": {"Authorization": 5}}}}"#,
        r#"error at "/mcpServers/x/headers/Authorization": expected a string"#,
    );
    check(
        r#"{"mcpServers": {"x": "--token=s3cr3t"}}"#,
        r#"error at "/mcpServers/x": expected an object"#,
    );
    check(
        r#"{"mcpServers": {"x": {"url": "ftp://user:s3cr3t@127.0.0.1/mcp"}}}"#,
        r#"error at "/mcpServers/x/url": expected an http(s) URL"#,
    );
    check(
        r#"{"mcpServers": {"x": {"command": "x", "url": "http://127.0.0.1/mcp?key=s3cr3t", "env": {"K": "s3cr3t"}}}}"#,
        r#"error at "/mcpServers/x": both `command` and `url`; give one"#,
    );
}

#[test]
fn projects() {
    let servers = r#""mcpServers": {"fs": {"command": "fs"}, "git": {"command": "git"}, "old": {"command": "old", "disabled": true}}"#;
    let fs = r#"fs: StdioServer { command: "fs", args: [], env: {}, cwd: None, timeout: None, max_message_bytes: None }"#;
    let git = r#"git: StdioServer { command: "git", args: [], env: {}, cwd: None, timeout: None, max_message_bytes: None }"#;
    check(
        &format!(
            r#"{{{servers}, "projects": {{
                "docs": {{"services": ["fs"], "tools": ["fs.read_text_file", "fs.list_directory"], "hat": "You maintain the docs."}},
                "all": {{"services": ["fs", "git"], "tools": ["git.*", "fs.read_text_file"], "description": "Everything."}},
                "bare": {{"services": []}}}}}}"#
        ),
        &format!(
            "{fs}\n{git}\n\
             project all: Project {{ name: \"all\", services: [\"fs\", \"git\"], tools: Some([\"git.*\", \"fs.read_text_file\"]), description: Some(\"Everything.\") }}\n\
             project bare: Project {{ name: \"bare\", services: [], tools: None, description: None }}\n\
             project docs: Project {{ name: \"docs\", services: [\"fs\"], tools: Some([\"fs.read_text_file\", \"fs.list_directory\"]), description: Some(\"You maintain the docs.\") }}"
        ),
    );
    let errors = [
        (r#"[]"#, r#"error at "/projects": expected an object"#),
        (
            r#"{"docs": "fs"}"#,
            r#"error at "/projects/docs": expected an object"#,
        ),
        (
            r#"{"docs": {}}"#,
            r#"error at "/projects/docs": no `services`"#,
        ),
        (
            r#"{"docs": {"services": "fs"}}"#,
            r#"error at "/projects/docs": `services` is an array of strings"#,
        ),
        (
            r#"{"docs": {"services": ["fs", 1]}}"#,
            r#"error at "/projects/docs": `services` lists strings"#,
        ),
        (
            r#"{"docs": {"services": ["fs", "web"]}}"#,
            r#"error at "/projects/docs/services/1": no enabled server `web`"#,
        ),
        (
            r#"{"docs": {"services": ["old"]}}"#,
            r#"error at "/projects/docs/services/0": no enabled server `old`"#,
        ),
        (
            r#"{"a/b": {"services": ["web"]}}"#,
            r#"error at "/projects/a~1b/services/0": no enabled server `web`"#,
        ),
        (
            r#"{"docs": {"services": ["fs"], "tools": ["git.git_status"]}}"#,
            r#"error at "/projects/docs": tool `git.git_status` is on `git`, not one of `services`"#,
        ),
        (
            r#"{"docs": {"services": ["fs"], "tools": ["read_text_file"]}}"#,
            r#"error at "/projects/docs": tool `read_text_file` is not `server.tool`"#,
        ),
        (
            r#"{"docs": {"services": ["fs"], "hat": 5}}"#,
            r#"error at "/projects/docs": `hat` is a string"#,
        ),
    ];
    for (projects, expected) in errors {
        check(
            &format!(r#"{{{servers}, "projects": {projects}}}"#),
            expected,
        );
    }
}

#[test]
fn roots() {
    check(
        r#"{"mcpServers": {}, "roots": ["/srv/docs", "file:///home/ada/notes"]}"#,
        "root file:///srv/docs\nroot file:///home/ada/notes",
    );
    check(
        r#"{"mcpServers": {}, "roots": "/srv"}"#,
        r#"error at "/roots": expected an array of paths or file:// URIs"#,
    );
    check(
        r#"{"mcpServers": {}, "roots": ["/srv", 3]}"#,
        r#"error at "/roots/1": expected a path or a file:// URI"#,
    );
    let config = McpConfig::from_json(r#"{"mcpServers": {}, "roots": ["/srv"]}"#).unwrap();
    let hooks = config.hooks(crate::hooks::Hooks::default());
    assert_eq!(hooks.roots, [crate::hooks::Root::dir("/srv")]);
}

proptest::proptest! {
    /// Every URL form of a secret, and any header or env value, stays out of a configuration's
    /// `Debug`; any URL at all is shown without a panic.
    #[test]
    fn debug_never_shows_a_secret(
        secret in "[A-Za-z0-9]{16,40}",
        url in proptest::prelude::any::<String>(),
    ) {
        for secret_url in claij_test_support::secrets::secret_urls(&secret) {
            let config = serde_json::json!({"mcpServers": {
                "web": {"url": secret_url, "headers": {"Authorization": format!("Bearer {secret}")}},
                "fs": {"command": "node", "env": {"TOKEN": secret}},
            }});
            let config = McpConfig::from_value(&config).unwrap();
            let shown = format!("{config:?}");
            proptest::prop_assert!(!shown.contains(&secret), "{shown}");
        }
        let config = serde_json::json!({"mcpServers": {"web": {"url": url}}});
        if let Ok(config) = McpConfig::from_value(&config) {
            let _ = format!("{config:?}");
        }
    }
}

#[test]
fn oauth_settings() {
    check(
        r#"{"mcpServers": {"gh": {"url": "https://127.0.0.1/mcp", "oauth": {"clientId": "id-1",
            "clientSecret": "s3cr3t", "scopes": ["repo", "read:org"],
            "clientMetadataUrl": "https://claij.example/client.json"}}}}"#,
        r#"gh: HttpServer { url: "https://127.0.0.1/mcp", headers: {}, timeout: None, max_message_bytes: None, oauth: OAuthSettings { client_id: Some("id-1"), client_secret: Some("***"), scopes: ["repo", "read:org"], client_metadata_url: Some("https://claij.example/client.json") } } | url=https://127.0.0.1/mcp"#,
    );
    check(
        r#"{"mcpServers": {"gh": {"url": "https://127.0.0.1/mcp", "oauth": {}}}}"#,
        r#"gh: HttpServer { url: "https://127.0.0.1/mcp", headers: {}, timeout: None, max_message_bytes: None, oauth: OAuthSettings { client_id: None, client_secret: None, scopes: [], client_metadata_url: None } } | url=https://127.0.0.1/mcp"#,
    );
    let bad = |oauth: &str, expected: &str| {
        check(
            &format!(
                r#"{{"mcpServers": {{"gh": {{"url": "https://127.0.0.1/mcp", "oauth": {oauth}}}}}}}"#
            ),
            expected,
        );
    };
    bad(
        r#"["id"]"#,
        r#"error at "/mcpServers/gh/oauth": expected an object"#,
    );
    bad(
        r#"{"clientId": "id", "clientSecret": ["s3cr3t"]}"#,
        r#"error at "/mcpServers/gh/oauth/clientSecret": expected a non-empty string"#,
    );
    bad(
        r#"{"clientSecret": "s3cr3t"}"#,
        r#"error at "/mcpServers/gh/oauth/clientSecret": a client secret needs its `clientId`"#,
    );
    bad(
        r#"{"scopes": ["repo", "two words"]}"#,
        r#"error at "/mcpServers/gh/oauth/scopes/1": a scope is a non-empty string without spaces"#,
    );
    bad(
        r#"{"scopes": "repo"}"#,
        r#"error at "/mcpServers/gh/oauth/scopes": expected an array of strings"#,
    );
    bad(
        r#"{"clientMetadataUrl": "http://claij.example/c.json"}"#,
        r#"error at "/mcpServers/gh/oauth/clientMetadataUrl": expected an https URL"#,
    );
    check(
        r#"{"mcpServers": {"t": {"command": "t", "oauth": {"clientId": "id"}}}}"#,
        r#"error at "/mcpServers/t/oauth": OAuth applies to `url` servers only"#,
    );
}
