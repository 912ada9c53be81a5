//! The MCP interceptor against real servers (`everything` and `time`): its schema delta and prompt
//! (snapshots, whole and through a project), two turns through the `Pipeline`, a tool outside the
//! project caught by the schema and refused at run time, and calls that time out or meet a dead server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use claij_backends::{ChatRequest, ChatResponse};
use claij_interceptors::{Chain, Config, Context, Interceptor, Pipeline, ToolOrigin, ToolResult};
use claij_mcp::{ClientOptions, EXTENSION, Hooks, McpInterceptor, Project, Services};
use claij_test_support::Scripted;
use claij_validation::Validator;
use serde_json::{Value, json};

use crate::servers;

/// `everything` and `time`, connected.
async fn services(dir: &Path) -> Services {
    let everything = servers::connect("everything", servers::everything(dir)).await;
    let time = servers::connect("time", servers::time(dir)).await;
    Services::from_clients([everything, time])
}

/// A project that may use `everything.echo` and `time.get_current_time`, nothing else.
fn clock() -> Project {
    Project::new("clock", ["everything", "time"])
        .with_tools(["everything.echo", "time.get_current_time"])
        .with_description("Answer questions about the time.")
}

/// The response schema with the interceptor's delta, compiled.
fn composed(mcp: &McpInterceptor) -> (Value, Validator) {
    let delta = claij_schema::SchemaDelta::new(
        EXTENSION,
        "mcp",
        mcp.schema_delta().expect("tools are allowed"),
    );
    let schema = claij_schema::compose(&claij_schema::base(), &[delta]).expect("composes");
    let validator = Validator::new(&schema).unwrap_or_else(|err| panic!("compiles: {err}"));
    (schema, validator)
}

/// Text with the install directory and the temporary directory replaced, so snapshots hold no
/// machine's paths.
fn redact(text: &str, dir: &Path) -> String {
    let temp = std::env::temp_dir();
    text.replace(&dir.display().to_string(), "[servers]")
        .replace(temp.display().to_string().trim_end_matches('/'), "[tmp]")
}

/// [`redact`] on a JSON value.
fn redact_json(value: &Value, dir: &Path) -> Value {
    serde_json::from_str(&redact(&value.to_string(), dir)).expect("still JSON")
}

/// The values of `"key":"…"` in `text` replaced by `[key]` (the time of day, in a rendered result).
fn redact_field(text: &str, key: &str) -> String {
    let marker = format!("\"{key}\":\"");
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find(&marker) {
        let value_start = start + marker.len();
        let Some(len) = rest[value_start..].find('"') else {
            break;
        };
        out.push_str(&rest[..value_start]);
        out.push_str(&format!("[{key}]"));
        rest = &rest[value_start + len..];
    }
    out.push_str(rest);
    out
}

fn system(request: &ChatRequest) -> &str {
    request.system.as_deref().unwrap_or_default()
}

fn reply(value: Value) -> ChatResponse {
    ChatResponse::text(value.to_string())
}

#[tokio::test]
async fn schema_delta_and_prompt_for_everything_and_time() {
    let Some(dir) = servers::require("interceptor schema_delta_and_prompt") else {
        return;
    };
    let services = services(&dir).await;
    let mcp = McpInterceptor::new(services.clone());
    let (schema, validator) = composed(&mcp);
    let delta = mcp.schema_delta().expect("tools");
    let branches = delta["properties"]["mcp_calls"]["items"]["oneOf"]
        .as_array()
        .expect("branches");
    assert_eq!(branches.len(), services.tools().len());
    assert!(branches.len() > 5, "{}", branches.len());
    insta::assert_json_snapshot!("everything_time_delta", redact_json(&delta, &dir));
    let section = mcp.prompt_section().expect("a section");
    insta::assert_snapshot!("everything_time_prompt", redact(&section, &dir));
    // Token economy: every tool's line is one short sentence.
    for line in section.lines().filter(|l| l.starts_with("- ")) {
        assert!(line.chars().count() <= 240, "{line}");
    }

    // Every tool's arguments are checked where they sit in the reply.
    let reply = |calls: Value| json!({"answer": "", "state": "s", "mcp_calls": calls});
    assert!(validator.is_valid(&reply(json!([
        {"service": "everything", "tool": "echo", "args": {"message": "hi"}},
        {"service": "time", "tool": "get_current_time", "args": {"timezone": "UTC"}},
    ]))));
    let violations = validator
        .validate(&reply(json!([
            {"service": "time", "tool": "get_current_time", "args": {"timezone": 5}},
        ])))
        .unwrap_err();
    assert!(
        violations
            .iter()
            .any(|v| v.instance_pointer == "/mcp_calls/0/args/timezone"),
        "{violations:?}"
    );
    assert!(claij_schema::check(&schema).is_ok());
    services.close().await;
}

#[tokio::test]
async fn project_view_offers_and_documents_only_its_tools() {
    let Some(dir) = servers::require("interceptor project_view") else {
        return;
    };
    let services = services(&dir).await.with_project(clock());
    let mcp = McpInterceptor::new(services.clone());
    insta::assert_json_snapshot!(
        "project_delta",
        redact_json(&mcp.schema_delta().expect("tools"), &dir)
    );
    let mut prompts = claij_interceptors::Prompts::default();
    mcp.pre_prompt(&mut prompts, &Context::default())
        .expect("pre_prompt");
    insta::assert_snapshot!("project_prompt", redact(&prompts.system, &dir));
    assert!(
        prompts
            .system
            .starts_with("You are working on project `clock`")
    );
    assert!(!prompts.system.contains("convert_time"));
    services.close().await;
}

/// Turn 1: the model calls `echo` (with a token it makes up) and `get_current_time`; the calls run
/// after the reply, and turn 2's prompt shows both results.
#[tokio::test]
async fn two_turns_through_the_pipeline() {
    let Some(dir) = servers::require("interceptor two_turns") else {
        return;
    };
    let services = services(&dir).await;
    let backend = Scripted::from_fn(|_, call| {
        Ok(match call {
            0 => reply(json!({
                "answer": "Let me look.", "state": "calling",
                "mcp_calls": [
                    {"service": "everything", "tool": "echo", "args": {"message": "token-7f3a"}},
                    {"service": "time", "tool": "get_current_time", "args": {"timezone": "UTC"}},
                ]
            })),
            _ => reply(json!({"answer": "Done.", "state": "done"})),
        })
    });
    let pipeline = Pipeline::new(
        Arc::new(backend.clone()),
        Config::new("test-model"),
        Chain::new().with(McpInterceptor::new(services.clone())),
    );
    let mut ctx = Context::default();
    pipeline
        .ask(&mut ctx, "What time is it?")
        .await
        .expect("turn 1");
    let names: Vec<&str> = ctx.tool_results.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["everything.echo", "time.get_current_time"]);
    assert_eq!(
        ctx.tool_results[0].output,
        Ok(json!({"content": [{"type": "text", "text": "Echo: token-7f3a"}], "isError": false}))
    );
    let time = ctx.tool_results[1].output.as_ref().expect("a time");
    assert_eq!(time["isError"], false);
    assert_eq!(time["structuredContent"]["timezone"], "UTC");

    pipeline.ask(&mut ctx, "So?").await.expect("turn 2");
    assert!(ctx.tool_results.is_empty(), "no calls, no results");
    let requests = backend.requests();
    assert!(!system(&requests[0]).contains("Results of the tool calls"));
    let second = system(&requests[1]);
    assert!(
        second.contains(
            "1. everything.echo {\"message\":\"token-7f3a\"}\n   ok: \"Echo: token-7f3a\""
        ),
        "{second}"
    );
    assert!(
        second.contains("2. time.get_current_time {\"timezone\":\"UTC\"}\n   ok: {"),
        "{second}"
    );
    let results = &second[second.find("Results of the tool calls").expect("results")..];
    let results = &results[..results.find("\n\n").unwrap_or(results.len())];
    let results = redact_field(&redact_field(results, "datetime"), "day_of_week");
    insta::assert_snapshot!("results_on_the_next_turn", results);
    services.close().await;
}

/// The model cannot call a tool outside the project: the composed schema rejects the reply (the
/// pipeline retries), and a reply that bypasses the schema is refused when it runs, and recorded.
#[tokio::test]
async fn tools_outside_the_project_are_rejected_and_refused() {
    let Some(dir) = servers::require("interceptor outside_the_project") else {
        return;
    };
    let services = services(&dir).await.with_project(clock());
    let mcp = McpInterceptor::new(services.clone());
    let outside = json!({
        "answer": "", "state": "s",
        "mcp_calls": [{"service": "time", "tool": "convert_time", "args": {
            "source_timezone": "UTC", "time": "12:00", "target_timezone": "Europe/Paris"
        }}]
    });
    let (_, validator) = composed(&mcp);
    let violations = validator.validate(&outside).unwrap_err();
    assert!(
        violations
            .iter()
            .all(|v| v.instance_pointer.starts_with("/mcp_calls/0")),
        "{violations:?}"
    );

    // Through the pipeline: a violation, then the retry calls an allowed tool.
    let echo = json!({"answer": "", "state": "s", "mcp_calls": [
        {"service": "everything", "tool": "echo", "args": {"message": "ok"}}
    ]});
    let backend = Scripted::replies([outside.to_string(), echo.to_string()]);
    let pipeline = Pipeline::new(
        Arc::new(backend),
        Config::new("test-model"),
        Chain::new().with(McpInterceptor::new(services.clone())),
    );
    let mut ctx = Context::default();
    let answer = pipeline.ask(&mut ctx, "Convert noon").await.expect("valid");
    assert_eq!(answer.retries(), 1);
    assert!(!answer.attempts[0].violations.is_empty());
    assert_eq!(ctx.tool_results.len(), 1);
    assert_eq!(ctx.tool_results[0].name, "everything.echo");
    assert!(services.refusals().is_empty());

    // Bypassing the schema: refused by `Services::call`, reported to the model, recorded.
    let mut ctx = Context::default();
    mcp.post_response(&outside, &mut ctx)
        .await
        .expect("never a pipeline failure");
    let [refused] = ctx.tool_results.as_slice() else {
        panic!("one result: {:?}", ctx.tool_results)
    };
    assert_eq!(refused.name, "time.convert_time");
    let output = refused.output.as_ref().expect("an error outcome");
    assert_eq!(output["isError"], true);
    assert_eq!(
        output["content"][0]["text"],
        "`time.convert_time` is not available in project `clock`; allowed services: everything, time"
    );
    let refusals = services.refusals();
    assert_eq!(refusals.len(), 1);
    assert_eq!(
        (
            refusals[0].project.as_str(),
            refusals[0].server.as_str(),
            refusals[0].tool.as_str()
        ),
        ("clock", "time", "convert_time")
    );
    services.close().await;
}

/// A call that outlives the timeout and a call to a dead server become error results; the others
/// complete, and results keep the order of the calls (the slow call finishes last).
#[tokio::test]
async fn timeouts_and_dead_servers_are_error_results() {
    let Some(dir) = servers::require("interceptor timeouts_and_dead_servers") else {
        return;
    };
    let services = services(&dir).await;
    let limits = claij_interceptors::Limits {
        // Long enough for the short calls on a loaded machine (a 0.2 s operation, an echo), far
        // shorter than the long one (600 s), which only the timeout ends.
        timeout: Some(Duration::from_secs(10)),
        ..claij_mcp::default_limits()
    };
    let mcp = McpInterceptor::new(services.clone()).with_limits(limits);
    services.client("time").expect("time").close().await;
    let long = |duration: f64| {
        json!({"service": "everything", "tool": "trigger-long-running-operation",
               "args": {"duration": duration, "steps": 1}})
    };
    let reply = json!({"answer": "", "state": "s", "mcp_calls": [
        long(600.0),
        long(0.2),
        {"service": "time", "tool": "get_current_time", "args": {"timezone": "UTC"}},
        {"service": "everything", "tool": "echo", "args": {"message": "still here"}},
    ]});
    let mut ctx = Context::default();
    ctx.tool_results.push(ToolResult {
        name: "local_tool".into(),
        args: json!({}),
        output: Ok(json!(1)),
        origin: ToolOrigin::Rust,
    });
    mcp.post_response(&reply, &mut ctx)
        .await
        .expect("never a pipeline failure");
    let outputs: Vec<(&str, Result<bool, &str>)> = ctx
        .tool_results
        .iter()
        .map(|r| {
            let output = match &r.output {
                Ok(mcp) => Ok(mcp["isError"] == false),
                Err(text) => Err(text.as_str()),
            };
            (r.name.as_str(), output)
        })
        .collect();
    assert_eq!(
        outputs,
        [
            ("local_tool", Ok(false)),
            (
                "everything.trigger-long-running-operation",
                Err("timed out after 10s (timeout)")
            ),
            ("everything.trigger-long-running-operation", Ok(true)),
            (
                "time.get_current_time",
                Err("mcp server `time` is gone: closed by the client")
            ),
            ("everything.echo", Ok(true)),
        ]
    );
    services.close().await;
}

/// With a concurrency of 2, four long operations run two at a time. Each is told apart by its number
/// of steps (the `total` of its progress notifications) and counts as running from its first
/// progress to its last, which the server sends before the result that frees a slot: the most seen
/// running at once would be four if all ran together (their windows overlap for most of a second).
#[tokio::test]
async fn at_most_concurrency_calls_run_at_once() {
    let Some(dir) = servers::require("interceptor at_most_concurrency") else {
        return;
    };
    let running = Arc::new(Mutex::new((BTreeSet::new(), 0)));
    let seen = Arc::clone(&running);
    let options = ClientOptions::default().with_hooks(Hooks::default().on_progress(move |p| {
        let Some(total) = p.total else {
            return;
        };
        let mut guard = seen.lock().unwrap();
        let (now, most) = &mut *guard;
        let call = total.to_string();
        if p.progress < total {
            now.insert(call);
        } else {
            now.remove(&call);
        }
        *most = now.len().max(*most);
    }));
    let everything = servers::connect_with("everything", servers::everything(&dir), options).await;
    let services = Services::from_clients([everything]);
    let limits = claij_interceptors::Limits {
        concurrency: 2,
        ..claij_mcp::default_limits()
    };
    let mcp = McpInterceptor::new(services.clone()).with_limits(limits);
    let calls = (10..14)
        .map(|steps| {
            json!({"service": "everything", "tool": "trigger-long-running-operation",
                   "args": {"duration": 1, "steps": steps}})
        })
        .collect();
    let results = mcp.run(&Value::Array(calls)).await;
    assert_eq!(results.len(), 4);
    assert!(
        results
            .iter()
            .all(|r| r.output.as_ref().is_ok_and(|o| o["isError"] == false)),
        "{results:?}"
    );
    let (now, most) = running.lock().unwrap().clone();
    assert!(now.is_empty(), "calls without their last progress: {now:?}");
    assert!(most <= 2, "{most} calls ran at once");
    assert!(most >= 1, "no progress seen");
    services.close().await;
}

/// An agent run calls MCP tools within one turn, natively (`<service>__<tool>`, results as tool
/// messages) and through `mcp_calls`.
#[tokio::test]
async fn an_agent_run_calls_mcp_tools_within_the_turn() {
    let Some(dir) = servers::require("interceptor agent_run") else {
        return;
    };
    let services = services(&dir).await;
    let echo = |call: usize| match call {
        0 => ChatResponse::text("").tool_calls(vec![claij_backends::ToolCall::new(
            "c0",
            "everything__echo",
            json!({"message": "token-7f3a"}),
        )]),
        _ => reply(json!({"answer": "Echoed.", "state": "done"})),
    };
    let backend = Scripted::from_fn(move |_, call| Ok(echo(call)))
        .with_capabilities(claij_backends::Capabilities::prompted().with_tools(true));
    let mcp = McpInterceptor::new(services.clone());
    let executor = mcp.executor();
    let pipeline = Pipeline::new(
        Arc::new(backend.clone()),
        Config::new("test-model"),
        Chain::new().with(mcp),
    )
    .with_tools(executor);
    let budget = claij_interceptors::Budget::default();
    let run = pipeline
        .run_agent(&mut Context::default(), "Echo a token.", &budget)
        .await
        .expect("native run");
    assert_eq!(run.steps, 2);
    assert_eq!(
        run.calls[0].origin,
        ToolOrigin::Mcp {
            server: "everything".into()
        }
    );
    let requests = backend.requests();
    let names: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert!(names.contains(&"everything__echo"), "{names:?}");
    assert!(!system(&requests[0]).contains("mcp_calls"));
    let result = &requests[1].messages[2];
    assert_eq!(result.tool_call_id.as_deref(), Some("c0"));
    assert!(
        result.content.contains("Echo: token-7f3a"),
        "{}",
        result.content
    );

    // The oneOf route: the calls in the reply's `mcp_calls`, the results as a user turn.
    let backend = Scripted::from_fn(|_, call| {
        Ok(match call {
            0 => reply(json!({"answer": "", "state": "calling", "mcp_calls": [
                {"service": "everything", "tool": "echo", "args": {"message": "token-9b"}}]})),
            _ => reply(json!({"answer": "Echoed.", "state": "done"})),
        })
    });
    let mcp = McpInterceptor::new(services.clone());
    let executor = mcp.executor();
    let pipeline = Pipeline::new(
        Arc::new(backend.clone()),
        Config::new("test-model"),
        Chain::new().with(mcp),
    )
    .with_tools(executor);
    let run = pipeline
        .run_agent(&mut Context::default(), "Echo a token.", &budget)
        .await
        .expect("oneOf run");
    assert_eq!(run.steps, 2);
    assert!(
        backend.requests()[1].messages[2]
            .content
            .contains("Echo: token-9b")
    );
    services.close().await;
}
