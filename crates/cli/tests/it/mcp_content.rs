//! `claij mcp resources|read|prompts|prompt` against the real everything and time servers of
//! `cargo xtask mcp-servers` (under `CI=true` a missing install fails each test).

use serde_json::Value;

use super::mcp::{config, servers};
use super::{Files, assert_one_line_error, claij};

/// The features document the everything server serves, as it is on disk.
const FEATURES: &str = "demo://resource/static/document/features.md";

#[test]
fn resources_lists_each_servers_resources_and_templates() {
    let Some(dir) = servers("mcp resources") else {
        return;
    };
    let f = Files::new(&[("mcp.json", &config(&dir))]);
    let cfg = f.path("mcp.json");
    let run = claij(&["mcp", "resources", "--config", &cfg], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("everything: 7 resources, 2 templates\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains(&format!("  {FEATURES}  features.md (text/markdown)  ")),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(
            "  demo://resource/dynamic/blob/{resourceId}  Dynamic Blob Resource (application/octet-stream)"
        ) && run.stdout.contains(" [template]\n"),
        "{}",
        run.stdout
    );
    // A server without resources (it answers "method not found") has none, and is no error.
    assert!(
        run.stdout.contains("time: 0 resources, 0 templates\n"),
        "{}",
        run.stdout
    );

    // One server, as JSON: the MCP objects as the server sent them.
    let json = claij(
        &["mcp", "resources", "everything", "--json", "--config", &cfg],
        "",
    );
    assert_eq!(json.code, 0, "{}", json.stderr);
    let listed: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 1, "only the server named");
    assert_eq!(listed[0]["server"], "everything");
    let resources = listed[0]["resources"].as_array().unwrap();
    assert!(resources.iter().any(|r| r["uri"] == FEATURES), "{listed}");
    let templates = listed[0]["resourceTemplates"].as_array().unwrap();
    assert!(
        templates
            .iter()
            .any(|t| t["uriTemplate"] == "demo://resource/dynamic/text/{resourceId}"),
        "{listed}"
    );

    let unknown = claij(&["mcp", "resources", "nowhere", "--config", &cfg], "");
    assert_one_line_error(&unknown, 2, "no mcp server `nowhere`");
}

#[test]
fn read_prints_text_as_is_binary_as_base64_or_to_a_file_within_its_limit() {
    let Some(dir) = servers("mcp read") else {
        return;
    };
    let f = Files::new(&[("mcp.json", &config(&dir))]);
    let cfg = f.path("mcp.json");
    let on_disk = std::fs::read_to_string(
        dir.join("npm/node_modules/@modelcontextprotocol/server-everything/dist/docs/features.md"),
    )
    .unwrap();
    let text = claij(
        &["mcp", "read", "everything", FEATURES, "--config", &cfg],
        "",
    );
    assert_eq!(text.code, 0, "{}", text.stderr);
    let ended = if on_disk.ends_with('\n') {
        on_disk.clone()
    } else {
        format!("{on_disk}\n")
    };
    assert_eq!(text.stdout, ended);

    // A binary resource: base64 on stdout, its bytes with --out.
    let blob = "demo://resource/dynamic/blob/3";
    let b64 = claij(&["mcp", "read", "everything", blob, "--config", &cfg], "");
    assert_eq!(b64.code, 0, "{}", b64.stderr);
    // The base64 of the first 45 bytes (a multiple of 3: the start of the whole text's base64),
    // "Resource 3: This is a base64 blob created at ".
    assert!(
        b64.stdout
            .starts_with("UmVzb3VyY2UgMzogVGhpcyBpcyBhIGJhc2U2NCBibG9iIGNyZWF0ZWQgYXQg"),
        "{}",
        b64.stdout
    );
    assert_eq!(b64.stdout.lines().count(), 1, "{}", b64.stdout);
    let out = f.path("blob.bin");
    let file = claij(
        &[
            "mcp",
            "read",
            "everything",
            blob,
            "--out",
            &out,
            "--config",
            &cfg,
        ],
        "",
    );
    assert_eq!(file.code, 0, "{}", file.stderr);
    assert!(file.stdout.is_empty(), "{}", file.stdout);
    let written = std::fs::read(&out).unwrap();
    assert!(
        written.starts_with(b"Resource 3: This is a base64 blob created at "),
        "{written:?}"
    );

    // --json: the server's result.
    let json = claij(
        &[
            "mcp",
            "read",
            "everything",
            FEATURES,
            "--json",
            "--config",
            &cfg,
        ],
        "",
    );
    let read: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(read["contents"][0]["text"], on_disk.as_str());

    // The limit: the exact size passes, one byte less is an error naming it.
    let size = on_disk.len().to_string();
    let exact = claij(
        &[
            "mcp",
            "read",
            "everything",
            FEATURES,
            "--max-resource-bytes",
            &size,
            "--config",
            &cfg,
        ],
        "",
    );
    assert_eq!(exact.code, 0, "{}", exact.stderr);
    let less = (on_disk.len() - 1).to_string();
    let over = claij(
        &[
            "mcp",
            "read",
            "everything",
            FEATURES,
            "--max-resource-bytes",
            &less,
            "--config",
            &cfg,
        ],
        "",
    );
    assert_one_line_error(
        &over,
        2,
        &format!(
            "`{FEATURES}` of mcp server `everything` is {} bytes, over the limit of {less} bytes (max_resource_bytes)",
            on_disk.len()
        ),
    );
    assert!(over.stdout.is_empty(), "{}", over.stdout);

    // An unknown URI is the server's error, in one line.
    let missing = claij(
        &[
            "mcp",
            "read",
            "everything",
            "demo://nowhere",
            "--config",
            &cfg,
        ],
        "",
    );
    assert_eq!(missing.code, 2, "{}", missing.stderr);
    assert!(
        missing.stderr.contains("`resources/read` failed") && missing.stderr.lines().count() == 1,
        "{}",
        missing.stderr
    );
}

#[test]
fn prompts_are_listed_and_one_is_filled_in_with_its_arguments() {
    let Some(dir) = servers("mcp prompts") else {
        return;
    };
    let f = Files::new(&[("mcp.json", &config(&dir))]);
    let cfg = f.path("mcp.json");
    let run = claij(&["mcp", "prompts", "--config", &cfg], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("everything: 4 prompts\n")
            && run.stdout.contains(
                "  everything.args-prompt  A prompt with two arguments, one required and one optional  (arguments: city, [state])\n"
            )
            && run.stdout.contains("time: 0 prompts\n"),
        "{}",
        run.stdout
    );
    let json = claij(&["mcp", "prompts", "--json", "--config", &cfg], "");
    let listed: Value = serde_json::from_str(&json.stdout).unwrap();
    let everything = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["server"] == "everything");
    assert!(
        everything.unwrap()["prompts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "simple-prompt"),
        "{listed}"
    );

    let prompt = "everything.args-prompt";
    let lisbon = claij(
        &[
            "mcp",
            "prompt",
            prompt,
            "--arg",
            "city=Lisbon",
            "--arg",
            "state=Estremadura",
            "--config",
            &cfg,
        ],
        "",
    );
    assert_eq!(lisbon.code, 0, "{}", lisbon.stderr);
    assert_eq!(
        lisbon.stdout,
        "user: What's weather in Lisbon, Estremadura?\n"
    );
    let json = claij(
        &[
            "mcp",
            "prompt",
            prompt,
            "--arg",
            "city=Porto",
            "--json",
            "--config",
            &cfg,
        ],
        "",
    );
    let got: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(
        got["messages"][0]["content"]["text"],
        "What's weather in Porto?"
    );

    // Refused before the request, in one line: a required argument missing, one not taken, a
    // prompt the server does not have, an argument that is not NAME=VALUE.
    let missing = claij(
        &[
            "mcp",
            "prompt",
            prompt,
            "--arg",
            "state=Estremadura",
            "--config",
            &cfg,
        ],
        "",
    );
    assert_one_line_error(
        &missing,
        2,
        "prompt `everything.args-prompt` needs the argument `city` (it takes: city, [state])",
    );
    let extra = claij(
        &[
            "mcp", "prompt", prompt, "--arg", "city=L", "--arg", "zip=1", "--config", &cfg,
        ],
        "",
    );
    assert_one_line_error(&extra, 2, "takes no argument `zip`");
    let unknown = claij(&["mcp", "prompt", "everything.nope", "--config", &cfg], "");
    assert_one_line_error(
        &unknown,
        2,
        "mcp server `everything` has no prompt `nope`; it has: ",
    );
    let malformed = claij(
        &["mcp", "prompt", prompt, "--arg", "city", "--config", &cfg],
        "",
    );
    assert_one_line_error(&malformed, 2, "`city` is not NAME=VALUE");
    let unqualified = claij(&["mcp", "prompt", "args-prompt", "--config", &cfg], "");
    assert_one_line_error(&unqualified, 2, "`args-prompt` is not `server.prompt`");
}
