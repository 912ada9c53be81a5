//! The MCP FSM: its definition checked and drawn, what the model sees for a fixed view of real
//! servers, and whole runs with a scripted model against the filesystem and everything servers.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use std::path::Path;
use std::sync::Arc;

use claij_backends::{ChatRequest, ChatResponse, Role};
use claij_fsm::{Fsm, Interrupt, Outcome, Run, Status, render};
use claij_interceptors::Config;
use claij_mcp::{ClientOptions, McpClient, Project, Services, mcp_fsm};
use claij_test_support::Scripted;
use serde_json::{Value, json};

use crate::servers;

fn path(run: &Run) -> Vec<String> {
    run.trail
        .entries
        .iter()
        .map(|e| format!("{}->{}", e.from, e.to))
        .collect()
}

fn config() -> Config {
    let mut config = Config::new("scripted");
    config.max_retries = 1;
    config
}

/// A token no model could guess: the clock's nanoseconds and the process id, in hex.
fn random_token() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("tok-{nanos:x}-{:x}", std::process::id())
}

/// The events in a request's messages, oldest first (messages that are not JSON skipped).
fn events(request: &ChatRequest) -> Vec<(Role, Value)> {
    request
        .messages
        .iter()
        .filter_map(|m| Some((m.role, serde_json::from_str(&m.content).ok()?)))
        .collect()
}

/// What the user asked: the `request` of the start event.
fn user_request(request: &ChatRequest) -> String {
    events(request)
        .into_iter()
        .find(|(_, e)| e["id"] == json!(["start", "llm"]))
        .and_then(|(_, e)| e["request"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// The last tool response the model was shown, if any: the `message` of a servicing -> llm event.
fn last_response(request: &ChatRequest) -> Option<Value> {
    events(request)
        .into_iter()
        .rev()
        .find(|(role, e)| *role == Role::User && e["id"] == json!(["servicing", "llm"]))
        .map(|(_, e)| e["message"].clone())
}

/// The first absolute path in `text`.
fn path_in(text: &str) -> String {
    text.split_whitespace()
        .find(|w| w.starts_with('/'))
        .map(|w| w.trim_end_matches(['?', '.', ',']).to_owned())
        .unwrap_or_default()
}

fn call(id: u64, tool: &str, arguments: Value) -> String {
    json!({"id": ["llm", "servicing"], "message": {
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments}
    }})
    .to_string()
}

fn answer(text: &str, is_error: bool) -> String {
    json!({"id": ["llm", "end"], "result": {"content": [{"type": "text", "text": text}], "isError": is_error}})
        .to_string()
}

/// A model that reads the file the user names through `fs.read_text_file`, then answers with what
/// the tool returned: only the tool's response in its history tells it the file's content.
fn reading_model() -> Scripted {
    Scripted::from_fn(|request, _| {
        let reply = match last_response(request) {
            None => call(
                1,
                "fs.read_text_file",
                json!({"path": path_in(&user_request(request))}),
            ),
            Some(response) => {
                let result = &response["result"];
                let text = result["content"][0]["text"].as_str().unwrap_or_default();
                let failed = result["isError"] == json!(true);
                answer(
                    &if failed {
                        format!("I could not read the file: {text}")
                    } else {
                        text.to_owned()
                    },
                    failed,
                )
            }
        };
        Ok(ChatResponse::text(reply))
    })
}

fn filesystem(dir: &Path, root: &Path) -> claij_mcp::StdioServer {
    servers::node(dir, "server-filesystem", &[&root.display().to_string()])
}

#[test]
fn the_definition_checks_and_renders() {
    let definition = mcp_fsm::definition();
    claij_fsm::check(&definition).unwrap();
    let fsm = Fsm::new(definition.clone()).unwrap();
    assert_eq!(fsm.id(), mcp_fsm::ID);
    let servicing = definition.state(mcp_fsm::SERVICING).unwrap();
    assert_eq!(servicing.config_str("service"), Some(mcp_fsm::SERVICE));
    let dot = render::to_dot(&definition);
    assert!(dot.contains(r#""servicing" -> "llm""#), "{dot}");
    // The module docs carry the diagram: keep them in step with the file.
    let mermaid = render::to_mermaid(&definition);
    let docs: String = include_str!("../../src/mcp_fsm.rs")
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .map(|l| format!("{}\n", l.strip_prefix(' ').unwrap_or(l)))
        .collect();
    assert!(
        docs.contains(&mermaid),
        "the diagram in src/mcp_fsm.rs is out of date; it is now:\n{mermaid}"
    );
}

#[test]
fn the_prompts_say_how_to_call_and_to_answer_only_from_results() {
    let fsm = Fsm::new(mcp_fsm::definition()).unwrap();
    let prompt = fsm.prompt(mcp_fsm::LLM).unwrap();
    for expected in [
        r#"["llm", "servicing"]"#,
        r#"["llm", "end"]"#,
        "Never invent a tool's result",
        "tools/call",
    ] {
        assert!(prompt.contains(expected), "{expected:?} not in:\n{prompt}");
    }
    // The final answer is MCP content: a bare string, or content without text, is refused.
    let ok = json!({"id": ["llm", "end"], "result": {"content": [{"type": "text", "text": "x"}]}});
    assert!(fsm.route("llm", &ok).is_ok());
    for bad in [
        json!({"id": ["llm", "end"], "result": "x"}),
        json!({"id": ["llm", "end"], "result": {"content": [{"type": "text"}]}}),
        json!({"id": ["llm", "end"], "result": {"content": []}}),
        json!({"id": ["llm", "end"], "result": {"content": [{"type": "video", "text": "x"}]}}),
    ] {
        assert!(fsm.route("llm", &bad).is_err(), "{bad}");
    }
}

#[test]
fn without_tools_the_model_can_only_answer() {
    let services = Services::from_clients(Vec::<McpClient>::new());
    let definition = mcp_fsm::definition_for(&services);
    assert!(definition.state(mcp_fsm::SERVICING).is_none());
    let fsm = Fsm::new(definition).unwrap();
    let prompt = fsm.prompt(mcp_fsm::LLM).unwrap();
    assert!(prompt.contains("No tools are available"), "{prompt}");
    assert!(!prompt.contains(r#"["llm","servicing"]"#), "{prompt}");
}

/// Requests that cannot run answer the model with an error result, never an error of the run.
#[tokio::test]
async fn a_request_that_cannot_run_is_an_error_result() {
    let service = mcp_fsm::McpService::new(Services::from_clients(Vec::<McpClient>::new()));
    let message = |name: &str| {
        json!({"message": {"jsonrpc": "2.0", "id": "a", "method": "tools/call",
            "params": {"name": name, "arguments": {}}}})
    };
    for (event, id, text) in [
        (
            message("fs.read_text_file"),
            json!("a"),
            "no mcp server `fs`",
        ),
        (
            message("read_text_file"),
            json!("a"),
            "not a qualified tool name",
        ),
        (
            json!({"message": "read it"}),
            Value::Null,
            "JSON-RPC 2.0 tools/call",
        ),
    ] {
        let response = service.respond(&event).await;
        let message = &response["message"];
        assert_eq!(message["id"], id, "{response}");
        assert_eq!(message["result"]["isError"], json!(true), "{response}");
        let said = message["result"]["content"][0]["text"].as_str().unwrap();
        assert!(said.contains(text), "{said}");
    }
}

#[tokio::test]
async fn unfakeable_a_random_token_is_read_through_the_filesystem_server() {
    let Some(dir) =
        servers::require("unfakeable_a_random_token_is_read_through_the_filesystem_server")
    else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let token = random_token();
    let file = root.path().join("token.txt");
    std::fs::write(&file, &token).unwrap();
    let fs = servers::connect("fs", filesystem(&dir, root.path())).await;
    let services = Services::from_clients([fs]);
    let model = reading_model();
    let runner = mcp_fsm::runner(&services, Arc::new(model.clone()), config()).unwrap();

    let request = format!(
        "What is the token in the file {}? Answer with the token only.",
        file.display()
    );
    let mut run = runner.start(json!({"request": request})).unwrap();
    let outcome = runner.run(&mut run, &Interrupt::new(), None).await.unwrap();
    services.close().await;

    let Outcome::Finished { state, event } = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(state, "end");
    assert_eq!(event["result"]["content"][0]["text"], json!(token));
    assert_eq!(event["result"]["isError"], json!(false));
    assert_eq!(
        path(&run),
        ["start->llm", "llm->servicing", "servicing->llm", "llm->end"]
    );
    let response = &run.trail.entries[2].event["message"];
    assert_eq!(response["jsonrpc"], json!("2.0"));
    assert_eq!(response["id"], json!(1), "the request's id is echoed");
    assert_eq!(response["result"]["isError"], json!(false));
    assert_eq!(model.calls(), 2, "no retries: every reply was valid");
    let second = &model.requests()[1];
    assert_eq!(
        second.messages.iter().map(|m| m.role).collect::<Vec<_>>(),
        [Role::User, Role::Assistant, Role::User],
        "the request, the model's call, the tool's result"
    );
}

#[tokio::test]
async fn a_tool_error_comes_back_as_is_error_and_the_model_can_end() {
    let Some(dir) = servers::require("a_tool_error_comes_back_as_is_error_and_the_model_can_end")
    else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let secret = elsewhere.path().join("secret.txt");
    let content = random_token();
    std::fs::write(&secret, &content).unwrap();
    let fs = servers::connect("fs", filesystem(&dir, root.path())).await;
    let services = Services::from_clients([fs]);
    let runner = mcp_fsm::runner(&services, Arc::new(reading_model()), config()).unwrap();

    let request = format!("What is in {}?", secret.display());
    let mut run = runner.start(json!({"request": request})).unwrap();
    let outcome = runner.run(&mut run, &Interrupt::new(), None).await.unwrap();
    services.close().await;

    assert_eq!(
        path(&run),
        ["start->llm", "llm->servicing", "servicing->llm", "llm->end"]
    );
    let result = &run.trail.entries[2].event["message"]["result"];
    assert_eq!(result["isError"], json!(true), "{result}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("outside allowed directories"), "{text}");
    let Outcome::Finished { state, event } = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(state, "end");
    assert_eq!(event["result"]["isError"], json!(true));
    let trail = serde_json::to_string(&run.trail.entries).unwrap();
    assert!(
        !trail.contains(&content),
        "nothing outside the root was read"
    );
}

#[tokio::test]
async fn an_interrupt_cancels_a_long_call_and_the_client_stays_usable() {
    let Some(dir) =
        servers::require("an_interrupt_cancels_a_long_call_and_the_client_stays_usable")
    else {
        return;
    };
    let (options, progressed) = servers::signalling_progress(ClientOptions::default());
    let everything = servers::connect_with("everything", servers::everything(&dir), options).await;
    let services = Services::from_clients([everything]);
    // Longer than the guard, with progress every 0.1 s: the interrupt comes once the call is under
    // way, and only the interrupt can end the run.
    let model = Scripted::replies([call(
        7,
        "everything.trigger-long-running-operation",
        json!({"duration": 600, "steps": 6000}),
    )]);
    let runner = mcp_fsm::runner(&services, Arc::new(model), config()).unwrap();
    let mut run = runner
        .start(json!({"request": "Run the long operation."}))
        .unwrap();
    let interrupt = Interrupt::new();
    let stopper = interrupt.clone();
    let stop = async move {
        progressed.notified().await;
        stopper.interrupt();
    };
    let both = async { tokio::join!(runner.run(&mut run, &interrupt, None), stop).0 };
    let outcome = tokio::time::timeout(crate::servers::HANG_GUARD, both)
        .await
        .expect("the interrupted run never returned");
    assert_eq!(
        outcome.unwrap(),
        Outcome::Interrupted {
            from: "servicing".into()
        }
    );
    assert_eq!(
        path(&run),
        ["start->llm", "llm->servicing", "servicing->interrupted"]
    );
    assert_eq!(run.status, Status::Interrupted);

    let echo = services
        .call_qualified("everything.echo", json!({"message": "still here"}))
        .await
        .unwrap();
    assert_eq!(echo.text(), "Echo: still here");
    services.close().await;
}

/// What the model sees in the `llm` state for a fixed view: the filesystem server (three tools
/// allowed by the project) and the everything server's echo.
#[tokio::test]
async fn snapshot_the_llm_state_for_a_fixed_view() {
    let Some(dir) = servers::require("snapshot_the_llm_state_for_a_fixed_view") else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let fs = servers::connect("fs", filesystem(&dir, root.path())).await;
    let everything = servers::connect("everything", servers::everything(&dir)).await;
    let project = Project::new("notes", ["fs", "everything"])
        .with_tools([
            "fs.read_text_file",
            "fs.list_directory",
            "fs.write_file",
            "everything.echo",
        ])
        .with_description("Keep answers short.");
    let services = Services::from_clients([fs, everything]).with_project(project);
    let fsm = Fsm::new(mcp_fsm::definition_for(&services)).unwrap();
    services.close().await;

    let redact = |text: &str| text.replace(&root.path().display().to_string(), "[root]");
    insta::assert_snapshot!(
        "mcp_fsm_llm_prompt",
        redact(fsm.prompt(mcp_fsm::LLM).unwrap())
    );
    let schema = fsm.output_schema(mcp_fsm::LLM).unwrap();
    let schema: Value = serde_json::from_str(&redact(&schema.to_string())).unwrap();
    insta::assert_json_snapshot!("mcp_fsm_llm_output_schema", schema);

    // The branches are the allowed tools, and a call to another one is refused by the schema.
    let names: Vec<&Value> =
        schema["oneOf"][0]["properties"]["message"]["properties"]["params"]["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| &b["properties"]["name"]["const"])
            .collect();
    assert_eq!(
        names,
        [
            "everything.echo",
            "fs.read_text_file",
            "fs.write_file",
            "fs.list_directory"
        ]
    );
    let other = json!({"id": ["llm", "servicing"], "message": {"jsonrpc": "2.0", "id": 1,
        "method": "tools/call", "params": {"name": "fs.move_file", "arguments": {}}}});
    assert!(fsm.route("llm", &other).is_err());
    let bad_args = json!({"id": ["llm", "servicing"], "message": {"jsonrpc": "2.0", "id": 1,
        "method": "tools/call", "params": {"name": "fs.read_text_file", "arguments": {"path": 3}}}});
    assert!(fsm.route("llm", &bad_args).is_err());
}

/// A server's question in the middle of a call (everything's `trigger-elicitation-request`) takes
/// the run to the `asking` state; the person's answer, given with `provide`, goes back to the server
/// and the same call finishes with it. Declining works the same way.
#[tokio::test]
async fn a_servers_question_waits_in_the_asking_state_for_a_person() {
    let Some(dir) = servers::require("a_servers_question_waits_in_the_asking_state_for_a_person")
    else {
        return;
    };
    let (queue, questions) = claij_mcp::ElicitationQueue::new(1);
    let options = claij_mcp::ClientOptions::default()
        .with_hooks(claij_mcp::Hooks::default().with_elicitor(queue));
    let everything = servers::connect_with("everything", servers::everything(&dir), options).await;
    let services = Services::from_clients([everything]);
    // Calls the tool, then answers with the text blocks of the tool's result.
    let model = Scripted::from_fn(|request, _| {
        Ok(ChatResponse::text(match last_response(request) {
            None => call(3, "everything.trigger-elicitation-request", json!({})),
            Some(response) => answer(
                &response["result"]["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|block| block["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n"),
                false,
            ),
        }))
    });
    let service = mcp_fsm::McpService::new(services.clone()).with_questions(questions);
    let runner = mcp_fsm::runner_with(service, Arc::new(model), config()).unwrap();

    for (answer_event, expected) in [
        (
            json!({"answer": {"action": "accept", "content": {"name": "Ada Lovelace", "check": true, "integer": 7}}}),
            "- Name: Ada Lovelace",
        ),
        (json!({"answer": {"action": "decline"}}), "User declined"),
    ] {
        let mut run = runner
            .start(json!({"request": "Ask me for my details."}))
            .unwrap();
        let waiting = runner.run(&mut run, &Interrupt::new(), None).await.unwrap();
        assert_eq!(
            waiting,
            Outcome::Waiting {
                state: mcp_fsm::ASKING.into()
            }
        );
        assert_eq!(run.event["elicitation"]["server"], "everything");
        assert_eq!(
            run.event["elicitation"]["message"],
            "Please provide inputs for the following fields:"
        );
        assert_eq!(
            run.event["elicitation"]["schema"]["properties"]["name"]["type"],
            "string"
        );
        runner.provide(&mut run, answer_event, None).unwrap();
        let outcome = runner.run(&mut run, &Interrupt::new(), None).await.unwrap();
        let Outcome::Finished { state, event } = outcome else {
            panic!("not finished: {outcome:?}")
        };
        assert_eq!(state, "end");
        let text = event["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains(expected), "{text}");
        assert_eq!(
            path(&run),
            [
                "start->llm",
                "llm->servicing",
                "servicing->asking",
                "asking->servicing",
                "servicing->llm",
                "llm->end"
            ]
        );
    }

    services.close().await;
}

/// The `tools/call` route keeps to the executor's limits as the native and `oneOf` routes do
/// (claij_interceptors::tool): at most `max_calls` of one event's calls run (a JSON-RPC batch of
/// three, the third not run, naming the limit), each under `timeout`, the model shown
/// `result_chars` of the result; raw text arguments are repaired, then checked against the
/// tool's schema.
#[tokio::test]
async fn a_tools_call_keeps_to_the_executors_limits() {
    let Some(dir) = servers::require("a_tools_call_keeps_to_the_executors_limits") else {
        return;
    };
    let everything = servers::connect("everything", servers::everything(&dir)).await;
    let services = Services::from_clients([everything]);
    let limits = claij_interceptors::Limits {
        max_calls: 2,
        timeout: Some(std::time::Duration::from_secs(2)),
        ..claij_mcp::default_limits()
    };
    let service = mcp_fsm::McpService::new(services.clone()).with_limits(limits.clone());
    let narrow =
        mcp_fsm::McpService::new(services.clone()).with_limits(claij_interceptors::Limits {
            result_chars: 40,
            ..limits
        });
    let request = |id: u64, tool: &str, arguments: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": tool, "arguments": arguments}})
    };
    let echo = |id: u64, arguments: Value| request(id, "everything.echo", arguments);
    let text = |answer: &Value| -> String {
        answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };

    // max_calls: a batch of three calls, the third not run.
    let answer = service
        .respond(&json!({"message": [
            echo(1, json!({"message": "a"})),
            echo(2, json!({"message": "b"})),
            echo(3, json!({"message": "c"})),
        ]}))
        .await;
    let responses = answer["message"].as_array().expect("a batch response");
    assert_eq!(responses.len(), 3, "{answer}");
    assert_eq!(text(&responses[1]), "Echo: b");
    assert_eq!(responses[2]["id"], 3);
    assert_eq!(responses[2]["result"]["isError"], true);
    assert_eq!(
        text(&responses[2]),
        "not run: at most 2 calls per reply (max_calls)"
    );

    // result_chars: a 106-character result shown in 40, saying so.
    let answer = narrow
        .respond(&json!({"message": echo(4, json!({"message": "x".repeat(100)}))}))
        .await;
    assert_eq!(
        text(&answer["message"]),
        format!(
            "Echo: {}… [cut: the tool-results budget shows 40 of its 106 characters]",
            "x".repeat(34)
        )
    );

    // The argument check: text repaired into an object, then checked against the schema.
    let answer = service
        .respond(&json!({"message": echo(5, json!("{message: 'fixed',}"))}))
        .await;
    assert_eq!(text(&answer["message"]), "Echo: fixed", "{answer}");
    let answer = service
        .respond(&json!({"message": echo(6, json!({"message": 5}))}))
        .await;
    assert_eq!(answer["message"]["result"]["isError"], true);
    assert_eq!(
        text(&answer["message"]),
        "invalid arguments, not run: /message: expected string, got number"
    );

    // timeout: an operation of 600 s dropped at 2 s, saying so.
    let answer = service
        .respond(&json!({"message": request(
            7,
            "everything.trigger-long-running-operation",
            json!({"duration": 600, "steps": 1})
        )}))
        .await;
    assert_eq!(text(&answer["message"]), "timed out after 2s (timeout)");
    services.close().await;
}
