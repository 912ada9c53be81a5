//! What the servers are offered when they ask for elicitation, decided in one place
//! (`claij::mcp::offer`): the configuration's `elicitation` holds for `claij mcp`, `ask
//! --interceptors mcp` and an FSM's service state alike, against the real everything server and a
//! scripted model over the OpenAI wire.

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer};

use super::mcp::{config, servers};
use super::{Files, Run, assert_one_line_error, claij, claij_env};

/// The everything server's tool that asks the client a question (a form whose `name` is required
/// and has no default); the server lists it only to a client that offers elicitation.
const ELICIT: &str = "trigger-elicitation-request";

/// What the server answers when its question was declined.
const DECLINED: &str = "User declined to provide the requested information";

/// The everything and time servers, with `elicitation` in the configuration.
fn offering(dir: &std::path::Path, elicitation: &str) -> String {
    let mut config: Value = serde_json::from_str(&config(dir)).unwrap();
    config["elicitation"] = elicitation.into();
    config.to_string()
}

/// Mounts one scripted reply a request, in order.
async fn script(server: &MockServer, replies: &[Value]) {
    for reply in replies {
        Mock::given(method("POST"))
            .and(path(super::openrouter::CHAT))
            .respond_with(super::openrouter::reply(&reply.to_string()))
            .up_to_n_times(1)
            .expect(1)
            .mount(server)
            .await;
    }
}

/// Runs claij with the mock provider's configuration and the MCP configuration `mcp`.
fn run(f: &Files, args: &[&str]) -> Run {
    let mut all = args.to_vec();
    let mcp = f.path("mcp.json");
    all.extend(["--config", &mcp]);
    let settings = f.path("config.toml");
    claij_env(
        &all,
        "",
        &[
            ("CLAIJ_CONFIG", Some(settings.as_str())),
            ("OPENROUTER_API_KEY", Some("sk-or-v1-mcp-offer")),
        ],
    )
}

#[tokio::test]
async fn the_interceptor_and_fsm_services_offer_the_servers_what_claij_mcp_offers() {
    let Some(dir) = servers("mcp offer") else {
        return;
    };
    let server = MockServer::start().await;
    let f = Files::new(&[
        ("mcp.json", &offering(&dir, "defaults")),
        ("config.toml", &super::openrouter::config(&server)),
    ]);
    let llm = ["--llm", "openrouter:test/model", "--mode", "prompted"];

    // `claij mcp call`, no flag: the configuration's `defaults` offers elicitation (the server
    // lists the tool) and declines the question whose required field has no default.
    let called = run(&f, &["mcp", "call", &format!("everything.{ELICIT}")]);
    assert_eq!(called.code, 0, "{}{}", called.stdout, called.stderr);
    assert!(called.stdout.contains(DECLINED), "{}", called.stdout);

    // `ask --interceptors mcp`: the same offer, the same answer to the same question.
    let call = json!({"answer": "Let me ask.", "state": "waiting_for_tools", "mcp_calls": [
        {"service": "everything", "tool": ELICIT, "args": {}}]});
    script(&server, &[call]).await;
    let mut ask = vec!["ask", "Ask me something", "--interceptors", "mcp"];
    ask.extend(llm);
    let asked = run(&f, &ask);
    assert_eq!(asked.code, 0, "{}", asked.stderr);
    assert!(
        asked
            .stderr
            .contains(&format!("mcp everything.{ELICIT} {{}}: ok: ")),
        "{}",
        asked.stderr
    );
    assert!(asked.stderr.contains(DECLINED), "{}", asked.stderr);
    server.reset().await;

    // An FSM's service state (the tool loop's `servicing`): the same again.
    let loop_call = json!({"id": ["llm", "servicing"], "message": {"jsonrpc": "2.0", "id": 1,
        "method": "tools/call", "params": {"name": format!("everything.{ELICIT}"), "arguments": {}}}});
    let loop_end = json!({"id": ["llm", "end"], "result": {"content": [{"type": "text", "text": "declined"}]}});
    script(&server, &[loop_call, loop_end]).await;
    let tool_loop = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/fsm/tool-loop.json"
    );
    let mut fsm = vec![
        "fsm",
        "run",
        tool_loop,
        "--input",
        r#"{"request": "ask me"}"#,
    ];
    fsm.extend(llm);
    let ran = run(&f, &fsm);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let requests = server.received_requests().await.unwrap();
    let second = String::from_utf8_lossy(&requests[1].body).into_owned();
    assert!(second.contains(DECLINED), "the model saw it: {second}");
}

/// `elicitation: "ask"` in the configuration needs a person at a terminal, for the interceptor as
/// for `claij mcp`: without one, each refuses in one line before any request.
#[tokio::test]
async fn ask_in_the_configuration_without_a_terminal_is_refused_everywhere() {
    let Some(dir) = servers("mcp offer ask") else {
        return;
    };
    let server = MockServer::start().await;
    let f = Files::new(&[
        ("mcp.json", &offering(&dir, "ask")),
        ("config.toml", &super::openrouter::config(&server)),
    ]);
    let line = "elicitation `ask` needs a terminal on stdin: use defaults or decline";
    assert_one_line_error(&run(&f, &["mcp", "list"]), 2, line);
    let ask = [
        "ask",
        "hi",
        "--interceptors",
        "mcp",
        "--llm",
        "openrouter:test/model",
    ];
    assert_one_line_error(&run(&f, &ask), 2, line);
    assert!(server.received_requests().await.unwrap().is_empty());
    // A value that is none of the three is the configuration's error, at its pointer.
    let bad = Files::new(&[("mcp.json", &offering(&dir, "sometimes"))]);
    let listed = claij(&["mcp", "list", "--config", &bad.path("mcp.json")], "");
    assert_one_line_error(
        &listed,
        2,
        "/elicitation: expected ask, defaults or decline",
    );
}

/// In `config.toml` the same keys are top-level (before the tables): `elicitation = "defaults"`
/// offers elicitation as `.mcp.json`'s does.
#[test]
fn config_toml_takes_the_same_keys() {
    let Some(dir) = servers("mcp offer toml") else {
        return;
    };
    let everything =
        dir.join("npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let toml = format!(
        "elicitation = \"defaults\"\n\n[mcpServers.everything]\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\n",
        everything.display().to_string()
    );
    let f = Files::new(&[("config.toml", &toml)]);
    let tool = format!("everything.{ELICIT}");
    let called = claij(
        &["mcp", "call", &tool, "--config", &f.path("config.toml")],
        "",
    );
    assert_eq!(called.code, 0, "{}{}", called.stdout, called.stderr);
    assert!(called.stdout.contains(DECLINED), "{}", called.stdout);
}

/// `ask --elicitation` and `--sampling-llm` are `claij mcp`'s flags for the interceptor's servers:
/// over a configuration that says nothing, `--elicitation defaults` offers elicitation; without
/// `--interceptors mcp` each is refused in one line naming it.
#[tokio::test]
async fn ask_takes_claij_mcps_flags_for_the_interceptors_servers() {
    let Some(dir) = servers("mcp offer flags") else {
        return;
    };
    let server = MockServer::start().await;
    let f = Files::new(&[
        ("mcp.json", &config(&dir)),
        ("config.toml", &super::openrouter::config(&server)),
    ]);
    let call = json!({"answer": "Let me ask.", "state": "waiting_for_tools", "mcp_calls": [
        {"service": "everything", "tool": ELICIT, "args": {}}]});
    script(&server, &[call]).await;
    let llm = ["--llm", "openrouter:test/model", "--mode", "prompted"];
    let mut ask = vec![
        "ask",
        "Ask me",
        "--interceptors",
        "mcp",
        "--elicitation",
        "defaults",
    ];
    ask.extend(llm);
    let asked = run(&f, &ask);
    assert_eq!(asked.code, 0, "{}", asked.stderr);
    assert!(asked.stderr.contains(DECLINED), "{}", asked.stderr);

    for (flag, value) in [("--elicitation", "defaults"), ("--sampling-llm", "local")] {
        let mut alone = vec!["ask", "hi", flag, value];
        alone.extend(llm);
        let refused = run(&f, &alone);
        assert_one_line_error(&refused, 2, &format!("{flag} answers the MCP servers'"));
        assert_one_line_error(&refused, 2, "add --interceptors mcp");
    }
}

/// `fsm run --elicitation` offers an FSM's service states' servers what `claij mcp --elicitation`
/// does, over a configuration that says nothing.
#[tokio::test]
async fn fsm_run_takes_claij_mcps_flags_for_its_service_states() {
    let Some(dir) = servers("mcp offer fsm flags") else {
        return;
    };
    let server = MockServer::start().await;
    let f = Files::new(&[
        ("mcp.json", &config(&dir)),
        ("config.toml", &super::openrouter::config(&server)),
    ]);
    let loop_call = json!({"id": ["llm", "servicing"], "message": {"jsonrpc": "2.0", "id": 1,
        "method": "tools/call", "params": {"name": format!("everything.{ELICIT}"), "arguments": {}}}});
    let loop_end = json!({"id": ["llm", "end"], "result": {"content": [{"type": "text", "text": "declined"}]}});
    script(&server, &[loop_call, loop_end]).await;
    let tool_loop = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/fsm/tool-loop.json"
    );
    let ran = run(
        &f,
        &[
            "fsm",
            "run",
            tool_loop,
            "--input",
            r#"{"request": "ask me"}"#,
            "--llm",
            "openrouter:test/model",
            "--mode",
            "prompted",
            "--elicitation",
            "defaults",
        ],
    );
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let requests = server.received_requests().await.unwrap();
    let second = String::from_utf8_lossy(&requests[1].body).into_owned();
    assert!(second.contains(DECLINED), "the model saw it: {second}");
}

/// The configuration's `samplingLlm` (here the scripted model itself) answers the everything
/// server's sampling request during a tool call alike from `claij mcp call`, the interceptor and an
/// FSM's service state: the server's result quotes the completion each time.
#[tokio::test]
async fn sampling_from_the_configuration_answers_alike_everywhere() {
    let Some(dir) = servers("mcp offer sampling") else {
        return;
    };
    let server = MockServer::start().await;
    let mut mcp: Value = serde_json::from_str(&config(&dir)).unwrap();
    mcp["samplingLlm"] = "openrouter:test/sampler".into();
    let f = Files::new(&[
        ("mcp.json", &mcp.to_string()),
        ("config.toml", &super::openrouter::config(&server)),
    ]);
    let sampled = |n: u32| json!(format!("sampled completion {n}"));
    let tool = "trigger-sampling-request";
    let args = json!({"prompt": "Say hello.", "maxTokens": 12});

    script(&server, &[sampled(1)]).await;
    let called = run(
        &f,
        &[
            "mcp",
            "call",
            &format!("everything.{tool}"),
            "--args",
            &args.to_string(),
        ],
    );
    assert_eq!(called.code, 0, "{}{}", called.stdout, called.stderr);
    assert!(
        called.stdout.contains("sampled completion 1"),
        "{}",
        called.stdout
    );
    server.reset().await;

    let call = json!({"answer": "Let me sample.", "state": "waiting_for_tools", "mcp_calls": [
        {"service": "everything", "tool": tool, "args": args}]});
    script(&server, &[call, sampled(2)]).await;
    let llm = ["--llm", "openrouter:test/model", "--mode", "prompted"];
    let mut ask = vec!["ask", "Sample", "--interceptors", "mcp"];
    ask.extend(llm);
    let asked = run(&f, &ask);
    assert_eq!(asked.code, 0, "{}", asked.stderr);
    // The tool line is cut at 200 characters: the server's result begins, and the second request
    // the scripted model got was the server's sampling request.
    let result = r#"ok: {"content":[{"type":"text","text":"LLM sampling result"#;
    assert!(asked.stderr.contains(result), "{}", asked.stderr);
    let requests = server.received_requests().await.unwrap();
    let sampling = String::from_utf8_lossy(&requests[1].body).into_owned();
    assert!(
        sampling.contains("You are a helpful test server."),
        "{sampling}"
    );
    server.reset().await;

    let loop_call = json!({"id": ["llm", "servicing"], "message": {"jsonrpc": "2.0", "id": 1,
        "method": "tools/call", "params": {"name": format!("everything.{tool}"), "arguments": args}}});
    let loop_end =
        json!({"id": ["llm", "end"], "result": {"content": [{"type": "text", "text": "done"}]}});
    script(&server, &[loop_call, sampled(3), loop_end]).await;
    let tool_loop = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/fsm/tool-loop.json"
    );
    let mut fsm = vec![
        "fsm",
        "run",
        tool_loop,
        "--input",
        r#"{"request": "sample"}"#,
    ];
    fsm.extend(llm);
    let ran = run(&f, &fsm);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let requests = server.received_requests().await.unwrap();
    let third = String::from_utf8_lossy(&requests[2].body).into_owned();
    assert!(
        third.contains("sampled completion 3"),
        "the model saw it: {third}"
    );
}
