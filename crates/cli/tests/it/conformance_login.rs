//! `claij mcp login` as a person would use it, against the authorization servers of the official MCP
//! conformance suite (installed by `cargo xtask mcp-servers`; claij-suite's `conformance` tests run
//! its client scenarios).
//!
//! For each scenario the suite runs a small shell script (written here into a temp dir) with its
//! server's URL. The script writes an `mcpServers` file naming that URL, runs `claij mcp login` with
//! `BROWSER` set to a script that plays the browser (a GET of the authorization URL that follows the
//! redirects, made by the suite's own Node: the suite's authorization endpoint approves at once and
//! redirects to claij's loopback port), then `claij mcp list` and `claij mcp call` with the stored
//! tokens only. The suite must pass the scenario; the test also checks that only login authorized,
//! that the token file is private and that no token reached the output.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use claij_test_support::mcp::ConformanceSuite as Suite;

use super::Files;

/// The client ID metadata document the configuration offers (the suite does not fetch it).
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// The suite's shell client: `client.sh URL`, then the steps. `@DIR@`, `@NODE@` and `@CLAIJ@` are
/// replaced with single-quoted paths.
const CLIENT_SCRIPT: &str = r#"#!/bin/sh
# The conformance suite runs this with its server's URL as the last argument.
set -eu
unset BROWSER CLAIJ_CONFIG
export XDG_CONFIG_HOME=@DIR@/no-config XDG_DATA_HOME=@DIR@/data
CLAIJ_SUITE_CLIENT_SECRET=$(@NODE@ @DIR@/config.js "$1" @DIR@/entry.json @DIR@/mcp.json)
export CLAIJ_SUITE_CLIENT_SECRET
"#;

/// A step of the script: `claij mcp login`, the browser played by `browser.sh`.
const LOGIN: &str =
    "BROWSER=@DIR@/browser.sh @CLAIJ@ mcp login suite --config @DIR@/mcp.json --timeout 60\n";

/// A step of the script: `claij mcp list` and `claij mcp call`, with the stored tokens only.
const LIST_AND_CALL: &str = "@CLAIJ@ mcp list --config @DIR@/mcp.json
@CLAIJ@ mcp call suite.test-tool --config @DIR@/mcp.json
";

/// Writes `mcp.json`: the entry of `entry.json` with the server's URL and, when the scenario's
/// `MCP_CONFORMANCE_CONTEXT` names a pre-registered client, its ID and a secret read from the
/// environment; prints that secret for the shell to export.
const CONFIG_SCRIPT: &str = r#"// Writes the claij configuration for the suite's server.
const fs = require("fs");
const [url, template, file] = process.argv.slice(2);
const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT || "{}");
const entry = JSON.parse(fs.readFileSync(template, "utf8"));
entry.url = url;
if (context.client_id) {
  entry.oauth = {...entry.oauth, clientId: context.client_id};
  if (context.client_secret) entry.oauth.clientSecret = "${CLAIJ_SUITE_CLIENT_SECRET}";
}
fs.writeFileSync(file, JSON.stringify({mcpServers: {suite: entry}}));
process.stdout.write(context.client_secret || "");
"#;

/// The browser: a GET of the URL that follows redirects, successful when the last answer is.
const BROWSER_SCRIPT: &str = r#"#!/bin/sh
exec @NODE@ -e 'fetch(process.argv[1]).then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))' "$1"
"#;

/// `path` quoted for the shell.
fn quoted(path: &Path) -> String {
    let text = path.to_str().unwrap();
    assert!(!text.contains('\''), "a quote in {text}");
    format!("'{text}'")
}

fn write_script(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// The first `checks.json` under `dir` (the suite writes `DIR/auth/NAME-TIME/checks.json`).
fn find_checks(dir: &Path) -> Option<PathBuf> {
    for entry in std::fs::read_dir(dir).ok()? {
        let path = entry.ok()?.path();
        if path.is_dir() {
            if let Some(found) = find_checks(&path) {
                return Some(found);
            }
        } else if path.file_name().is_some_and(|name| name == "checks.json") {
            return Some(path);
        }
    }
    None
}

/// Runs `scenario` with the script that logs in, lists and calls; see [`run`].
#[track_caller]
fn check(scenario: &str, entry: &str) {
    run(scenario, entry, &[LOGIN, LIST_AND_CALL], 1);
}

/// Runs `scenario` with the script of `steps`, the server's entry starting as `entry` (its `oauth`
/// settings), and checks the suite passes it, the logins authorized `authorizations` times (the
/// other commands never), the token file is private and no token was printed: what the script
/// wrote on stderr (`None`: skipped).
#[track_caller]
fn run(scenario: &str, entry: &str, steps: &[&str], authorizations: usize) -> Option<String> {
    let suite = Suite::find(scenario)?;
    let files = Files::new(&[("entry.json", entry), ("config.js", CONFIG_SCRIPT)]);
    let dir = files.0.clone();
    let fill = |text: &str| {
        text.replace("@DIR@", &quoted(&dir))
            .replace("@NODE@", &quoted(&suite.node))
            .replace("@CLAIJ@", &quoted(Path::new(env!("CARGO_BIN_EXE_claij"))))
    };
    let client = dir.join("client.sh");
    write_script(
        &client,
        &fill(&format!("{CLIENT_SCRIPT}{}", steps.concat())),
    );
    write_script(&dir.join("browser.sh"), &fill(BROWSER_SCRIPT));
    let command = client.to_str().unwrap();
    // The suite splits --command on spaces, appends the URL and runs the words with `sh -c`
    // (Node's spawn with `shell: true`): a space or a shell character would break the path.
    assert!(
        command
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-".contains(c)),
        "the suite cannot run {command}"
    );
    let results = dir.join("results");
    let output = Command::new(&suite.node)
        .arg(&suite.script)
        .args(["client", "--command", command, "--scenario", scenario])
        // Room for a loaded machine (the suite's default is 30 s for the whole script).
        .args(["--timeout", "180000"])
        .arg("--output-dir")
        .arg(&results)
        .current_dir(&dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(output.status.code(), Some(0), "{scenario} failed:\n{text}");

    // Next to checks.json, the suite saves what the script printed.
    let checks_file = find_checks(&results).unwrap_or_else(|| panic!("no checks.json:\n{text}"));
    let saved = |name: &str| std::fs::read_to_string(checks_file.with_file_name(name)).unwrap();
    let checks: Vec<Value> = serde_json::from_str(&saved("checks.json")).unwrap();
    let authorized = checks
        .iter()
        .filter(|check| check["id"] == "authorization-request")
        .count();
    assert_eq!(
        authorized, authorizations,
        "{scenario}: authorized {authorized} times:\n{text}"
    );
    let run = saved("stdout.txt");
    assert!(run.contains("suite.test-tool"), "{scenario}: {run}");
    let errors = saved("stderr.txt");
    assert!(
        errors.contains("logged in to suite"),
        "{scenario}: {errors}"
    );
    for secret in ["test-token", "pre-registered-secret"] {
        assert!(
            !errors.contains(secret),
            "{scenario} printed {secret}: {errors}"
        );
        assert!(!run.contains(secret), "{scenario} printed {secret}: {run}");
    }

    let tokens = dir.join("data/claij/mcp-tokens/suite.json");
    assert!(tokens.is_file(), "{scenario}: no {}", tokens.display());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&tokens).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{scenario}");
    }
    Some(errors)
}

#[test]
fn login_with_dynamic_registration() {
    check("auth/metadata-default", "{}");
}

#[test]
fn login_at_a_tenant_openid_server_with_custom_resource_metadata() {
    check("auth/metadata-var3", "{}");
}

#[test]
fn login_with_a_client_id_metadata_document() {
    let entry = serde_json::json!({"oauth": {"clientMetadataUrl": CLIENT_METADATA_URL}});
    check("auth/basic-cimd", &entry.to_string());
}

#[test]
fn login_with_a_pre_registered_client_and_its_secret_from_the_environment() {
    check("auth/pre-registration", "{}");
}

#[test]
fn login_with_a_registered_secret_posted_to_the_token_endpoint() {
    check("auth/token-endpoint-auth-post", "{}");
}

#[test]
fn login_asks_for_the_scope_from_www_authenticate() {
    check("auth/scope-from-www-authenticate", "{}");
}

#[test]
fn login_at_a_2025_03_26_server_without_metadata() {
    check("auth/2025-03-26-oauth-endpoint-fallback", "{}");
}

#[test]
fn login_at_a_2025_03_26_server_whose_metadata_names_another_issuer() {
    // The stored token's later uses discover the same metadata again.
    check("auth/2025-03-26-oauth-metadata-backcompat", "{}");
}

#[test]
fn a_second_login_says_the_stored_tokens_are_enough() {
    let Some(errors) = run(
        "auth/metadata-default",
        "{}",
        &[LOGIN, LOGIN, LIST_AND_CALL],
        1,
    ) else {
        return;
    };
    let said = |start: &str| {
        errors
            .lines()
            .filter(|line| line.starts_with(start))
            .count()
    };
    assert_eq!(said("logged in to suite"), 1, "{errors}");
    assert_eq!(said("already logged in to suite"), 1, "{errors}");
    assert!(
        errors.contains("to authorize again, run `claij mcp logout suite` first"),
        "{errors}"
    );
}

/// A step of the script: the call the first token's scope does not cover fails (and says so).
const CALL_REFUSED: &str = "if @CLAIJ@ mcp call suite.test-tool --config @DIR@/mcp.json 2>@DIR@/refused.txt; then exit 1; fi
grep -q insufficient_scope @DIR@/refused.txt
";

/// A step of the script: `claij mcp login --scope` asks for the scope the call needs.
const LOGIN_WIDER: &str = "BROWSER=@DIR@/browser.sh @CLAIJ@ mcp login suite --config @DIR@/mcp.json --timeout 60 --scope mcp:write\n";

#[test]
fn login_with_scope_widens_the_stored_tokens_for_a_call_that_needs_more() {
    // The server wants `mcp:basic` to connect and `mcp:basic mcp:write` for tools/call; the CLI's
    // commands never open a browser, so step-up cannot help them: `login --scope` does, asking for
    // the stored tokens' scope and the new one (the suite checks the second authorization asks
    // for both).
    let Some(errors) = run(
        "auth/scope-step-up",
        "{}",
        &[LOGIN, CALL_REFUSED, LOGIN_WIDER, LIST_AND_CALL],
        2,
    ) else {
        return;
    };
    assert_eq!(errors.matches("logged in to suite").count(), 2, "{errors}");
}
