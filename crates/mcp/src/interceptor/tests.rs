//! Unit tests of the MCP interceptor without servers: descriptions, condensed results, the delta for
//! awkward tool schemas and names, and call planning.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use claij_interceptors::{Context, Interceptor as _, Prompts, ToolOrigin, ToolResult};
use serde_json::{Value, json};

use super::render::{condense, summary};
use super::{McpInterceptor, delta};
use crate::services::Services;
use crate::tool::ToolInfo;

#[track_caller]
fn check_summary(description: &str, expected: &str) {
    assert_eq!(summary(description), expected);
}

#[test]
fn descriptions_are_cut_to_a_sentence_and_a_budget() {
    check_summary(
        "Echoes back the input string",
        "Echoes back the input string",
    );
    check_summary(
        "  Adds two numbers. Returns their sum.\nMore here.",
        "Adds two numbers.",
    );
    check_summary("First line\nsecond line", "First line");
    check_summary(
        "Use e.g. this or v1.2 of it. Then more.",
        "Use e.g. this or v1.2 of it.",
    );
    check_summary("", "");
    let long = "word ".repeat(100);
    let cut = summary(&long);
    assert!(cut.ends_with("word…"), "{cut}");
    assert!(cut.chars().count() <= 200, "{}", cut.chars().count());
    let unbroken = "x".repeat(300);
    assert_eq!(summary(&unbroken), format!("{}…", "x".repeat(199)));
    let accents = "é".repeat(300);
    assert_eq!(summary(&accents).chars().count(), 200);
}

#[track_caller]
fn check_condense(output: Result<Value, String>, expected: Result<Value, String>) {
    let result = ToolResult {
        name: "s.t".into(),
        args: json!({}),
        output,
        origin: ToolOrigin::Mcp { server: "s".into() },
    };
    assert_eq!(condense(&result).output, expected);
}

#[test]
fn results_are_condensed_for_the_prompt() {
    check_condense(
        Ok(json!({"content": [{"type": "text", "text": "Echo: hi"}], "isError": false})),
        Ok(json!("Echo: hi")),
    );
    check_condense(
        Ok(json!({
            "content": [{"type": "text", "text": "{\"hour\": 12}"}],
            "structuredContent": {"hour": 12},
            "isError": false,
        })),
        Ok(json!({"hour": 12})),
    );
    check_condense(
        Ok(json!({
            "content": [{"type": "text", "text": "no such city"}, {"type": "image", "mimeType": "image/png", "data": "AAAA"}],
            "isError": true,
        })),
        Err("no such city\n[image image/png, 4 bytes of base64]".into()),
    );
    check_condense(
        Err("mcp server `s` is gone: exited".into()),
        Err("mcp server `s` is gone: exited".into()),
    );
    check_condense(Ok(json!(3)), Ok(json!(3)));
}

fn tool(server: &str, name: &str, input: Value) -> Arc<ToolInfo> {
    Arc::new(ToolInfo::new(
        server,
        name,
        Some("A tool.".into()),
        input,
        None,
    ))
}

/// Tools with draft-07 definitions, awkward names and colliding definitions compose into a schema
/// that compiles and validates each tool's arguments where they belong.
#[test]
fn awkward_tool_schemas_compose() {
    let point = json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"at": {"$ref": "#/definitions/b"}},
        "required": ["at"],
        "definitions": {"b": {"type": "array", "items": [{"type": "number"}], "additionalItems": false}},
    });
    let recursive = json!({
        "type": "object",
        "properties": {"next": {"$ref": "#"}, "n": {"type": "integer"}},
        "additionalProperties": false,
    });
    let tools = [
        tool("srv", "a", point.clone()),
        tool("srv", "a.b", recursive),
        tool("git/hub", "pr~list", point),
        tool(
            "srv",
            "remote",
            json!({"properties": {"x": {"$ref": "https://example.invalid/x.json"}}}),
        ),
    ];
    let delta = delta::schema_delta(&tools, 3).unwrap();
    let mut defs: Vec<&String> = delta["$defs"].as_object().unwrap().keys().collect();
    defs.sort();
    assert_eq!(
        defs,
        [
            "git/hub.pr~list",
            "git/hub.pr~list.b",
            "srv.a",
            "srv.a.b",
            "srv.a.b#2"
        ]
    );
    let args: Vec<&Value> = (0..4)
        .map(|i| &delta["properties"]["mcp_calls"]["items"]["oneOf"][i]["properties"]["args"])
        .collect();
    assert_eq!(
        args,
        [
            &json!({"$ref": "#/$defs/srv.a"}),
            &json!({"$ref": "#/$defs/srv.a.b%232"}),
            &json!({"$ref": "#/$defs/git~1hub.pr~0list"}),
            &json!({"type": "object"}),
        ]
    );

    let delta = claij_schema::SchemaDelta::new(super::EXTENSION, "mcp", delta);
    let schema = claij_schema::compose(&claij_schema::base(), &[delta]).unwrap();
    let validator = claij_validation::Validator::new(&schema).unwrap();
    let reply = |calls: Value| json!({"answer": "", "state": "s", "mcp_calls": calls});
    assert!(validator.is_valid(&reply(json!([
        {"service": "srv", "tool": "a", "args": {"at": [1]}},
        {"service": "srv", "tool": "a.b", "args": {"n": 1, "next": {"n": 2}}},
        {"service": "git/hub", "tool": "pr~list", "args": {"at": [2.5]}},
    ]))));
    for bad in [
        json!([{"service": "srv", "tool": "a", "args": {"at": [1, 2]}}]),
        json!([{"service": "srv", "tool": "a.b", "args": {"next": {"n": "two"}}}]),
        json!([{"service": "git/hub", "tool": "pr~list", "args": {}}]),
        json!([{"service": "srv", "tool": "nope", "args": {}}]),
        json!([{"service": "srv", "tool": "a", "args": {"at": []}}, {"service": "srv", "tool": "a", "args": {"at": []}}, {"service": "srv", "tool": "a", "args": {"at": []}}, {"service": "srv", "tool": "a", "args": {"at": []}}]),
    ] {
        assert!(!validator.is_valid(&reply(bad.clone())), "{bad}");
    }
}

#[test]
fn no_tools_no_delta() {
    assert_eq!(delta::schema_delta(&[], 8), None);
}

/// Without servers: malformed calls, calls past the limit and unknown servers are error results, in
/// call order.
#[tokio::test]
async fn calls_that_cannot_run_are_error_results() {
    let limits = claij_interceptors::Limits {
        max_calls: 3,
        ..crate::default_limits()
    };
    let mcp = McpInterceptor::new(Services::from_clients([])).with_limits(limits);
    assert_eq!(mcp.schema_delta(), None);
    assert_eq!(mcp.prompt_section(), None);
    assert!(mcp.run(&Value::Null).await.is_empty());
    let results = mcp
        .run(&json!([
            {"service": "ghost", "tool": "boo", "args": {"a": 1}},
            {"tool": "boo"},
            {"service": "ghost", "tool": 3},
            {"service": "ghost", "tool": "late"},
        ]))
        .await;
    let found: Vec<(&str, &Value, &Result<Value, String>)> = results
        .iter()
        .map(|r| (r.name.as_str(), &r.args, &r.output))
        .collect();
    assert_eq!(
        found,
        [
            (
                "ghost.boo",
                &json!({"a": 1}),
                &Err("no mcp server `ghost`; configured: none".to_owned())
            ),
            (
                "?.boo",
                &json!({}),
                &Err("a call names its `service` and its `tool` as strings".to_owned())
            ),
            (
                "ghost.?",
                &json!({}),
                &Err("a call names its `service` and its `tool` as strings".to_owned())
            ),
            (
                "ghost.late",
                &json!({}),
                &Err("not run: at most 3 calls per reply (max_calls)".to_owned())
            ),
        ]
    );
    let results = mcp.run(&json!({"service": "ghost"})).await;
    assert_eq!(results.len(), 1);
    assert!(
        results[0]
            .output
            .as_ref()
            .unwrap_err()
            .contains("must be a list")
    );
}

/// The interceptor's results carry their server as origin; it replaces and shows only those, and
/// leaves another interceptor's results alone even when they are named `server.tool` too.
#[tokio::test]
async fn results_are_told_apart_by_origin_not_by_name() {
    let mcp = McpInterceptor::new(Services::from_clients([]));
    let result = |name: &str, output: &str, origin| ToolResult {
        name: name.into(),
        args: json!({}),
        output: Ok(json!(output)),
        origin,
    };
    let rust = result("ghost.boo", "from rust", ToolOrigin::Rust);
    let other = result(
        "notes.today",
        "from notes",
        ToolOrigin::Other {
            interceptor: "notes".into(),
        },
    );
    let old = result(
        "ghost.boo",
        "old mcp",
        ToolOrigin::Mcp {
            server: "ghost".into(),
        },
    );
    let mut ctx = Context::default();
    ctx.tool_results = vec![rust.clone(), old, other.clone()];

    let mut prompts = Prompts::new("system", "user");
    mcp.pre_prompt(&mut prompts, &ctx).unwrap();
    assert!(prompts.system.contains("old mcp"), "{}", prompts.system);
    assert!(!prompts.system.contains("from rust"), "{}", prompts.system);
    assert!(!prompts.system.contains("from notes"), "{}", prompts.system);

    let reply = json!({"mcp_calls": [{"service": "ghost", "tool": "boo", "args": {}}]});
    mcp.post_response(&reply, &mut ctx).await.unwrap();
    let [kept_rust, kept_other, new] = ctx.tool_results.as_slice() else {
        panic!("three results: {:?}", ctx.tool_results)
    };
    assert_eq!((kept_rust, kept_other), (&rust, &other));
    assert_eq!(new.name, "ghost.boo");
    assert_eq!(
        new.origin,
        ToolOrigin::Mcp {
            server: "ghost".into()
        }
    );
    assert_eq!(
        new.output,
        Err("no mcp server `ghost`; configured: none".to_owned())
    );
}
