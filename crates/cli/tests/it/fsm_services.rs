//! `claij fsm run|validate` with services from the configuration (`tools`, `eval`, MCP servers as
//! `mcp` and by name), `custom` states, and per-state models across providers; scripted models over
//! the OpenAI wire (wiremock), the real filesystem MCP server, and the local model.

use serde_json::{Value, json};
use wiremock::matchers::{body_partial_json, method, path};
use wiremock::{Mock, MockServer};

use super::{Files, assert_one_line_error, claij_env};

fn example(name: &str) -> String {
    format!(
        "{}/../../examples/fsm/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// A `tools/call` request event for `to`.
fn call(to: &str, id: u32, name: &str, arguments: Value) -> String {
    json!({"id": ["llm", to], "message": {"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": arguments}}})
    .to_string()
}

/// Mounts `replies` on `server`'s OpenRouter path, one request each, in order.
async fn script(server: &MockServer, replies: &[String]) {
    for reply in replies {
        Mock::given(method("POST"))
            .and(path(super::openrouter::CHAT))
            .respond_with(super::openrouter::reply(reply))
            .up_to_n_times(1)
            .expect(1)
            .mount(server)
            .await;
    }
}

/// The trail `claij fsm run` printed.
fn trail(stdout: &str) -> Vec<Value> {
    serde_json::from_str::<Value>(stdout)
        .unwrap_or_else(|e| panic!("{e}: {stdout}"))
        .as_array()
        .unwrap()
        .clone()
}

/// The text of the first content block of the response on entry `entry`.
fn result_text(entry: &Value) -> &str {
    entry["event"]["message"]["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{entry}"))
}

/// `llm` asks `clock` (the `tools` service) and `calc` (the `eval` service), then answers.
const HELPERS: &str = r#"{
  "id": "helpers",
  "states": [
    {"id": "llm", "action": "llm"},
    {"id": "clock", "action": "service", "config": {"service": "tools"}},
    {"id": "calc", "action": "service", "config": {"service": "eval"}},
    {"id": "end", "action": "end"}
  ],
  "transitions": [
    {"id": ["start", "llm"], "schema": {"type": "object", "properties": {"request": {"type": "string"}}, "required": ["request"]}},
    {"id": ["llm", "clock"], "schema": {"type": "object", "properties": {"message": {"type": "object"}}, "required": ["message"]}},
    {"id": ["clock", "llm"], "schema": {"type": "object", "properties": {"message": {"type": "object"}}, "required": ["message"]}},
    {"id": ["llm", "calc"], "schema": {"type": "object", "properties": {"message": {"type": "object"}}, "required": ["message"]}},
    {"id": ["calc", "llm"], "schema": {"type": "object", "properties": {"message": {"type": "object"}}, "required": ["message"]}},
    {"id": ["llm", "end"], "schema": {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}}
  ]
}"#;

#[tokio::test]
async fn run_serves_the_builtin_tools_and_eval_and_records_the_model() {
    let server = MockServer::start().await;
    script(
        &server,
        &[
            call("clock", 1, "random_int", json!({"min": 3, "max": 1})),
            call("clock", 2, "tools.random_int", json!({"min": 7, "max": 7})),
            call("calc", 3, "eval", json!({"code": "print(\"hi\"); 6 * 7"})),
            json!({"id": ["llm", "end"], "answer": "42"}).to_string(),
        ],
    )
    .await;
    let files = Files::new(&[
        ("helpers.json", HELPERS),
        ("config.toml", &super::openrouter::config(&server)),
    ]);
    let config = files.path("config.toml");
    let run = claij_env(
        &[
            "fsm",
            "run",
            &files.path("helpers.json"),
            "--input",
            r#"{"request": "a number"}"#,
            "--llm",
            "openrouter:test/model",
            "--mode",
            "prompted",
        ],
        "",
        &[
            ("CLAIJ_CONFIG", Some(config.as_str())),
            ("OPENROUTER_API_KEY", Some("sk-or-v1-services")),
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let trail = trail(&run.stdout);
    let steps: Vec<String> = trail
        .iter()
        .map(|e| {
            format!(
                "{}->{}",
                e["from"].as_str().unwrap(),
                e["to"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        steps,
        [
            "start->llm",
            "llm->clock",
            "clock->llm",
            "llm->clock",
            "clock->llm",
            "llm->calc",
            "calc->llm",
            "llm->end"
        ]
    );
    assert_eq!(
        (
            result_text(&trail[2]),
            &trail[2]["event"]["message"]["result"]["isError"]
        ),
        ("min (3) is above max (1)", &json!(true)),
        "a failing function is an error result for the model"
    );
    assert_eq!(trail[2]["event"]["message"]["id"], 1);
    assert_eq!(result_text(&trail[4]), "7");
    let eval = &trail[6]["event"]["message"]["result"];
    assert_eq!(
        eval["content"],
        json!([{"type": "text", "text": "42"}, {"type": "text", "text": "printed:\nhi"}])
    );
    let models: Vec<&Value> = trail.iter().map(|e| &e["model"]).collect();
    assert_eq!(models[1], "openrouter:test/model");
    assert_eq!(models[7], "openrouter:test/model");
    assert_eq!(
        models[2],
        &Value::Null,
        "a service's transition names no model"
    );
    // The model saw each result.
    let requests = server.received_requests().await.unwrap();
    let last: Value = serde_json::from_slice(&requests[3].body).unwrap();
    assert!(last.to_string().contains("printed:\\\\nhi"), "{last}");
}

/// `plan` hands a request to `work`, the sub-FSM `clock.json` ([`CLOCK`]).
const PARENT: &str = r#"{
  "id": "parent",
  "states": [
    {"id": "plan", "action": "llm"},
    {"id": "work", "action": "fsm", "config": {"fsm": "clock.json", "trail": "full"}},
    {"id": "end", "action": "end"}
  ],
  "transitions": [
    {"id": ["start", "plan"], "schema": {"type": "object", "properties": {"request": {"type": "string"}}, "required": ["request"]}},
    {"id": ["plan", "work"], "schema": {"type": "object", "properties": {"request": {"type": "string"}}, "required": ["request"]}},
    {"id": ["work", "end"], "schema": {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}}
  ]
}"#;

/// A sub-FSM whose `llm` asks the `tools` service for a number.
const CLOCK: &str = r#"{
  "id": "clock",
  "states": [
    {"id": "llm", "action": "llm"},
    {"id": "clock", "action": "service", "config": {"service": "tools"}},
    {"id": "end", "action": "end"}
  ],
  "transitions": [
    {"id": ["start", "llm"], "schema": {"type": "object", "properties": {"request": {"type": "string"}}, "required": ["request"]}},
    {"id": ["llm", "clock"], "schema": {"type": "object", "properties": {"message": {"type": "object"}}, "required": ["message"]}},
    {"id": ["clock", "llm"], "schema": {"type": "object", "properties": {"message": {"type": "object"}}, "required": ["message"]}},
    {"id": ["llm", "end"], "schema": {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}}
  ]
}"#;

#[tokio::test]
async fn a_sub_fsm_file_runs_the_run_s_services_and_model_opened_once() {
    let server = MockServer::start().await;
    script(
        &server,
        &[
            json!({"id": ["plan", "work"], "request": "a number"}).to_string(),
            call("clock", 1, "random_int", json!({"min": 7, "max": 7})),
            json!({"id": ["llm", "end"], "answer": "7"}).to_string(),
        ],
    )
    .await;
    // No --llm: the configuration's default, said once on stderr when it is opened.
    let config = format!(
        "{}\n[defaults]\nllm = \"openrouter:test/model\"\n",
        super::openrouter::config(&server)
    );
    let files = Files::new(&[
        ("parent.json", PARENT),
        ("clock.json", CLOCK),
        ("config.toml", &config),
    ]);
    let config = files.path("config.toml");
    let env = [
        ("CLAIJ_CONFIG", Some(config.as_str())),
        ("OPENROUTER_API_KEY", Some("sk-or-v1-sub-services")),
    ];
    let run = claij_env(
        &[
            "fsm",
            "run",
            &files.path("parent.json"),
            "--input",
            r#"{"request": "a number"}"#,
            "--mode",
            "prompted",
        ],
        "",
        &env,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let trail = trail(&run.stdout);
    let last = trail.last().unwrap();
    assert_eq!(
        (&last["from"], &last["to"], &last["event"]["answer"]),
        (&json!("work"), &json!("end"), &json!("7")),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(r#""text": "7""#),
        "the tools service answered in the sub-FSM: {}",
        run.stdout
    );
    assert_eq!(
        run.stderr
            .matches("using openrouter:test/model (defaults.llm in the configuration)")
            .count(),
        1,
        "the parent and the sub-FSM share the run's one model: {}",
        run.stderr
    );

    // A service the sub-FSM names that the configuration lacks: validate and run name it at the
    // state naming the file.
    std::fs::write(
        files.0.join("clock.json"),
        CLOCK.replace(r#""service": "tools""#, r#""service": "nope""#),
    )
    .unwrap();
    let validate = claij_env(
        &[
            "fsm",
            "validate",
            &files.path("parent.json"),
            "--config",
            &config,
        ],
        "",
        &[],
    );
    assert_eq!(validate.code, 1, "{}", validate.stderr);
    insta::assert_snapshot!(validate.stdout.replace(&config, "CONFIG"), @"/states/1/config/fsm: `clock.json`: /states/1/config/service: unknown service `nope`: no mcpServers in CONFIG (`claij mcp servers > .mcp.json` writes one for the servers `cargo xtask mcp-servers` installs); the built-in services are eval, tools");
    let run = claij_env(
        &[
            "fsm",
            "run",
            &files.path("parent.json"),
            "--input",
            r#"{"request": "a number"}"#,
        ],
        "",
        &env,
    );
    assert_one_line_error(
        &run,
        2,
        "/states/1/config/fsm: `clock.json`: /states/1/config/service: unknown service `nope`",
    );
}

/// A configuration with OpenRouter at `server` and the filesystem MCP server in `root`, its
/// project `reader` allowing only `read_text_file`.
fn fs_config(server: &MockServer, servers: &std::path::Path, root: &std::path::Path) -> String {
    let fs = servers.join("npm/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    format!(
        "{}\n[mcpServers.fs]\ncommand = \"node\"\nargs = [{:?}, {:?}]\n\n[projects.reader]\nservices = [\"fs\"]\ntools = [\"fs.read_text_file\"]\n",
        super::openrouter::config(server),
        fs.display().to_string(),
        root.display().to_string()
    )
}

#[tokio::test]
async fn the_tool_loop_reads_a_file_through_the_real_filesystem_server() {
    let Some(servers) =
        super::mcp::servers("the_tool_loop_reads_a_file_through_the_real_filesystem_server")
    else {
        return;
    };
    let files = Files::new(&[("note.txt", "the launch code is 7-4-1")]);
    let root = std::fs::canonicalize(&files.0).unwrap();
    let note = root.join("note.txt").display().to_string();
    let server = MockServer::start().await;
    script(
        &server,
        &[
            call("servicing", 1, "fs.read_text_file", json!({"path": note})),
            json!({"id": ["llm", "end"], "result": {"content": [{"type": "text", "text": "7-4-1"}]}})
                .to_string(),
        ],
    )
    .await;
    std::fs::write(
        root.join("config.toml"),
        fs_config(&server, &servers, &root),
    )
    .unwrap();
    let config = files.path("config.toml");
    let run = claij_env(
        &[
            "fsm",
            "run",
            &example("tool-loop"),
            "--input",
            r#"{"request": "What does note.txt say?"}"#,
            "--llm",
            "openrouter:test/model",
            "--mode",
            "prompted",
            "--project",
            "reader",
        ],
        "",
        &[
            ("CLAIJ_CONFIG", Some(config.as_str())),
            ("OPENROUTER_API_KEY", Some("sk-or-v1-tool-loop")),
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let trail = trail(&run.stdout);
    let last = trail.last().unwrap();
    assert_eq!((&last["from"], &last["to"]), (&json!("llm"), &json!("end")));
    assert_eq!(result_text(&trail[2]), "the launch code is 7-4-1");
    // The model was shown the project's one tool, narrowed in the call's schema and listed.
    let requests = server.received_requests().await.unwrap();
    let first = String::from_utf8_lossy(&requests[0].body).into_owned();
    assert!(first.contains("fs.read_text_file"), "{first}");
    assert!(
        !first.contains("fs.write_file"),
        "only the project's tools: {first}"
    );
}

#[test]
fn a_machine_and_its_sub_fsm_share_one_process_of_an_mcp_server() {
    let test = "a_machine_and_its_sub_fsm_share_one_process_of_an_mcp_server";
    let Some(servers) = super::mcp::servers(test) else {
        return;
    };
    // Both machines read through `fs`; each start of the server adds a line to `starts`.
    let parent = r#"{"id": "parent",
      "states": [{"id": "read", "action": "service", "config": {"service": "fs"}},
                 {"id": "again", "action": "fsm", "config": {"fsm": "again.json"}},
                 {"id": "end", "action": "end"}],
      "transitions": [{"id": ["start", "read"]}, {"id": ["read", "again"]}, {"id": ["again", "end"]}]}"#;
    let sub = r#"{"id": "again",
      "states": [{"id": "read", "action": "service", "config": {"service": "fs"}},
                 {"id": "end", "action": "end"}],
      "transitions": [{"id": ["start", "read"]}, {"id": ["read", "end"]}]}"#;
    let files = Files::new(&[
        ("parent.json", parent),
        ("again.json", sub),
        ("note.txt", "the launch code is 7-4-1"),
    ]);
    let root = std::fs::canonicalize(&files.0).unwrap();
    let fs = servers.join("npm/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    let script = format!(
        "echo started >> {:?}; exec node {:?} {:?}",
        root.join("starts").display().to_string(),
        fs.display().to_string(),
        root.display().to_string()
    );
    std::fs::write(
        root.join("config.toml"),
        format!("[mcpServers.fs]\ncommand = \"sh\"\nargs = [\"-c\", {script:?}]\n"),
    )
    .unwrap();
    let config = files.path("config.toml");
    let note = root.join("note.txt").display().to_string();
    let input = json!({"message": {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "fs.read_text_file", "arguments": {"path": note}}}});
    let run = claij_env(
        &[
            "fsm",
            "run",
            &files.path("parent.json"),
            "--input",
            &input.to_string(),
        ],
        "",
        &[("CLAIJ_CONFIG", Some(config.as_str()))],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let trail = trail(&run.stdout);
    assert_eq!(result_text(&trail[1]), "the launch code is 7-4-1");
    let last = trail.last().unwrap();
    assert_eq!(
        (&last["from"], &last["to"]),
        (&json!("again"), &json!("end"))
    );
    let starts = std::fs::read_to_string(root.join("starts")).unwrap();
    assert_eq!(
        starts.lines().count(),
        1,
        "one server for the run: {starts}"
    );
}

#[test]
fn a_service_the_configuration_lacks_is_a_problem_at_its_pointer() {
    let definition = r#"{
      "id": "many",
      "states": [
        {"id": "ask", "action": "llm"},
        {"id": "t", "action": "service", "config": {"service": "tools"}},
        {"id": "fs", "action": "service"},
        {"id": "m", "action": "service", "config": {"service": "mcp"}},
        {"id": "x", "action": "service", "config": {"service": "nope"}},
        {"id": "sh", "action": "shell"},
        {"id": "end", "action": "end"}
      ],
      "transitions": [
        {"id": ["start", "ask"]}, {"id": ["ask", "t"]}, {"id": ["t", "fs"]}, {"id": ["fs", "m"]},
        {"id": ["m", "x"]}, {"id": ["x", "sh"]}, {"id": ["sh", "end"]}
      ]
    }"#;
    let files = Files::new(&[
        ("many.json", definition),
        (
            "config.toml",
            "[mcpServers.fs]\ncommand = \"mcp-server-filesystem\"\n",
        ),
        ("bare.toml", "[defaults]\nmax_retries = 1\n"),
    ]);
    let file = files.path("many.json");
    let with = |config: Option<&str>| {
        let mut args = vec!["fsm", "validate", file.as_str()];
        if let Some(config) = config {
            args.extend(["--config", config]);
        }
        claij_env(&args, "", &[])
    };
    let config = files.path("config.toml");
    let run = with(Some(&config));
    assert_eq!(run.code, 1, "{}", run.stderr);
    insta::assert_snapshot!(run.stdout.replace(&config, "CONFIG"), @r#"
    /states/4/config/service: unknown service `nope`: the services of CONFIG are eval, fs, mcp, tools
    /states/5/action: custom action `shell`: claij runs only llm, service, fsm, human and end states; a program provides `shell` with claij_fsm::Runner::with_service("shell", ...)
    "#);
    let bare = with(Some(&files.path("bare.toml")));
    assert_eq!(bare.code, 1, "{}", bare.stderr);
    let expected = format!(
        "/states/2/id: unknown service `fs`: no mcpServers in {} (`claij mcp servers > \
         .mcp.json` writes one for the servers `cargo xtask mcp-servers` installs); the built-in \
         services are eval, tools\n",
        files.path("bare.toml")
    );
    assert!(bare.stdout.starts_with(&expected), "{}", bare.stdout);
    // A server named like a built-in service makes the name ambiguous.
    std::fs::write(
        files.0.join("clash.toml"),
        "[mcpServers.tools]\ncommand = \"x\"\n[mcpServers.fs]\ncommand = \"y\"\n",
    )
    .unwrap();
    let clash = with(Some(&files.path("clash.toml")));
    let expected = format!(
        "/states/1/config/service: ambiguous service `tools`: a built-in service and an MCP \
         server of {} are both called so; rename the server\n",
        files.path("clash.toml")
    );
    assert!(clash.stdout.starts_with(&expected), "{}", clash.stdout);
    // CLAIJ_CONFIG is the configuration when --config is not given.
    let found = claij_env(
        &["fsm", "validate", &file],
        "",
        &[("CLAIJ_CONFIG", Some(config.as_str()))],
    );
    assert_eq!((found.code, &found.stdout), (1, &run.stdout));
    // With no configuration at all, validate refuses what `fsm run` would: the MCP services too,
    // naming the files looked for.
    let none = with(None);
    assert_eq!(none.code, 1, "{}", none.stderr);
    let cwd = std::env::current_dir().unwrap();
    let looked = format!(
        "no mcpServers: neither {} nor {} exists",
        cwd.join(".mcp.json").display(),
        std::env::temp_dir()
            .join("claij-tests-no-config/claij/config.toml")
            .display()
    );
    let lines: Vec<&str> = none.stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{}", none.stdout);
    for (line, pointer) in lines.iter().zip([
        "/states/2/id: unknown service `fs`: ",
        "/states/3/config/service: unknown service `mcp`: ",
        "/states/4/config/service: unknown service `nope`: ",
    ]) {
        assert!(line.starts_with(&format!("{pointer}{looked}")), "{line}");
    }
    assert!(lines[3].starts_with("/states/5/action: custom action `shell`"));
}

#[test]
fn run_refuses_custom_states_and_unknown_services_before_anything_runs() {
    let custom = r#"{"id": "c", "states": [{"id": "x", "action": "shell"}, {"id": "end", "action": "end"}],
      "transitions": [{"id": ["start", "x"]}, {"id": ["x", "end"]}]}"#;
    let files = Files::new(&[("c.json", custom)]);
    let run = claij_env(
        &["fsm", "run", &files.path("c.json"), "--input", "{}"],
        "",
        &[],
    );
    assert_one_line_error(&run, 2, "claij_fsm::Runner::with_service(\"shell\", ...)");
    assert!(run.stderr.contains("/states/0/action"), "{}", run.stderr);
    // tool-loop.json needs `mcp`: without MCP servers it cannot start.
    let run = claij_env(
        &[
            "fsm",
            "run",
            &example("tool-loop"),
            "--input",
            r#"{"request": "hi"}"#,
        ],
        "",
        &[],
    );
    assert_one_line_error(&run, 2, "/states/1/config/service: unknown service `mcp`");
}

#[test]
fn a_server_outside_the_project_is_refused_before_any_server_starts() {
    let definition = r#"{"id": "one", "states": [{"id": "fs", "action": "service"}, {"id": "end", "action": "end"}],
      "transitions": [{"id": ["start", "fs"]}, {"id": ["fs", "end"]}]}"#;
    let config = "[mcpServers.fs]\ncommand = \"does-not-exist\"\n\n[mcpServers.other]\ncommand = \"does-not-exist\"\n\n[projects.p]\nservices = [\"other\"]\n";
    let files = Files::new(&[("one.json", definition), ("config.toml", config)]);
    let config = files.path("config.toml");
    let one = files.path("one.json");
    let env = [("CLAIJ_CONFIG", Some(config.as_str()))];
    let outside = format!(
        "/states/0/id: server `fs` is not in project `p` of {config} (its services: other)"
    );
    let run = claij_env(
        &["fsm", "run", &one, "--input", "{}", "--project", "p"],
        "",
        &env,
    );
    assert_one_line_error(&run, 2, &format!("FSM `one` cannot run here: {outside}"));
    // `fsm validate` runs the same check: the same problem, exit 1.
    let validate = claij_env(&["fsm", "validate", &one, "--project", "p"], "", &env);
    assert_eq!(validate.code, 1, "{}", validate.stderr);
    assert_eq!(validate.stdout, format!("{outside}\n"));
    // An unknown project: the same one-line error from both, naming the file, exit 2.
    let unknown = format!("no project `q` in {config} (its projects: p)");
    let run = claij_env(
        &["fsm", "run", &one, "--input", "{}", "--project", "q"],
        "",
        &env,
    );
    assert_one_line_error(&run, 2, &unknown);
    let validate = claij_env(&["fsm", "validate", &one, "--project", "q"], "", &env);
    assert_one_line_error(&validate, 2, &unknown);
    // Without --project both accept the definition (the run then fails to start the server).
    let validate = claij_env(&["fsm", "validate", &one], "", &env);
    assert_eq!(validate.code, 0, "{}", validate.stdout);
    let run = claij_env(&["fsm", "run", &one, "--input", "{}"], "", &env);
    assert_one_line_error(&run, 2, "mcp server `fs`: cannot start `does-not-exist`");
}

#[test]
fn validate_refuses_the_models_fsm_run_cannot_resolve() {
    let definition = r#"{"id": "models", "states": [
        {"id": "draft", "action": "llm", "config": {"model": "nobody:x"}},
        {"id": "decide", "action": "fsm", "config": {"fsm": "vote", "voters": ["local", "no-such-alias"]}},
        {"id": "end", "action": "end"}],
      "transitions": [{"id": ["start", "draft"]}, {"id": ["draft", "decide"]}, {"id": ["decide", "end"]}]}"#;
    let files = Files::new(&[("models.json", definition)]);
    let file = files.path("models.json");
    let validate = claij_env(&["fsm", "validate", &file], "", &[]);
    assert_eq!(validate.code, 1, "{}", validate.stderr);
    let lines: Vec<&str> = validate.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", validate.stdout);
    assert!(
        lines[0].starts_with("/states/0/config/model: unknown provider `nobody`"),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].starts_with("/states/1/config/voters/1: unknown model `no-such-alias`"),
        "{}",
        lines[1]
    );
    // `fsm run` refuses the same, before any model is opened.
    let run = claij_env(&["fsm", "run", &file, "--input", "{}"], "", &[]);
    assert_one_line_error(
        &run,
        2,
        "FSM `models` cannot run here: /states/0/config/model: ",
    );
    assert!(run.stderr.contains(lines[1]), "{}", run.stderr);
}

/// `draft` names the alias `writer` (OpenRouter), `review` a model of the configuration's own
/// OpenAI-compatible provider.
const TWO_MODELS: &str = r#"{
  "id": "two-models",
  "states": [
    {"id": "draft", "action": "llm", "config": {"model": "writer"}},
    {"id": "review", "action": "llm", "config": {"model": "mine:judge"}},
    {"id": "end", "action": "end"}
  ],
  "transitions": [
    {"id": ["start", "draft"], "schema": {"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]}},
    {"id": ["draft", "review"], "schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
    {"id": ["review", "end"], "schema": {"type": "object", "properties": {"verdict": {"type": "string"}}, "required": ["verdict"]}}
  ]
}"#;

#[tokio::test]
async fn each_state_asks_the_model_its_config_names_through_the_aliases_and_providers() {
    let openrouter = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(super::openrouter::CHAT))
        .and(body_partial_json(json!({"model": "w/model"})))
        .respond_with(super::openrouter::reply(r#"{"text": "Rust is fast."}"#))
        .expect(1)
        .mount(&openrouter)
        .await;
    let mine = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(body_partial_json(json!({"model": "judge"})))
        .respond_with(super::openrouter::reply(r#"{"verdict": "good"}"#))
        .expect(1)
        .mount(&mine)
        .await;
    let config = format!(
        "{}\n[providers.mine]\nkind = \"openai-compatible\"\nbase_url = \"{}/v1\"\nstructured_output = \"prompted\"\n\n[aliases]\nwriter = \"openrouter:w/model\"\n",
        super::openrouter::config(&openrouter),
        mine.uri()
    );
    let files = Files::new(&[("two.json", TWO_MODELS), ("config.toml", &config)]);
    let config = files.path("config.toml");
    let env = [
        ("CLAIJ_CONFIG", Some(config.as_str())),
        ("OPENROUTER_API_KEY", Some("sk-or-v1-two-models")),
        ("XDG_CACHE_HOME", Some(files.0.to_str().unwrap())),
    ];
    let run = claij_env(
        &[
            "fsm",
            "run",
            &files.path("two.json"),
            "--input",
            r#"{"topic": "rust"}"#,
            "--json",
        ],
        "",
        &env,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    let models: Vec<&Value> = report["trail"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["model"])
        .collect();
    assert_eq!(
        models,
        [
            &Value::Null,
            &json!("openrouter:w/model"),
            &json!("mine:judge")
        ]
    );

    // A model that does not resolve is named with its state's pointer.
    let broken = TWO_MODELS.replace("mine:judge", "nobody");
    std::fs::write(files.0.join("broken.json"), broken).unwrap();
    let run = claij_env(
        &[
            "fsm",
            "run",
            &files.path("broken.json"),
            "--input",
            r#"{"topic": "rust"}"#,
        ],
        "",
        &env,
    );
    assert_one_line_error(&run, 2, "/states/1/config/model: ");
}

mod local_model {
    //! The tool loop with the embedded model: the mechanics, on the real filesystem server.

    use serde_json::{Value, json};

    use super::{Files, claij_env, example, result_text, trail};

    /// A run whose own model is the local one (`--model-path`, no `--llm`), with a state naming
    /// `local` in `config.model` and a built-in vote whose voters are `local` twice, loads the
    /// model file once: on a terminal (util-linux `script`) claij says each time it loads it.
    /// The input matches no transition out of `start`, so the run stops before any model is asked.
    #[test]
    fn the_local_model_is_loaded_once_whatever_names_it() {
        let test = "the_local_model_is_loaded_once_whatever_names_it";
        let Some(model) = crate::local_model::model(test) else {
            return;
        };
        if !super::super::script_or_skip(test) {
            return;
        }
        let definition = r#"{
          "id": "loads",
          "states": [
            {"id": "draft", "action": "llm"},
            {"id": "review", "action": "llm", "config": {"model": "local"}},
            {"id": "decide", "action": "fsm", "config": {"fsm": "vote", "voters": ["local", "local"]}},
            {"id": "end", "action": "end"}
          ],
          "transitions": [
            {"id": ["start", "draft"], "schema": {"type": "object", "required": ["request"]}},
            {"id": ["draft", "review"], "schema": {"type": "object"}},
            {"id": ["review", "decide"], "schema": {"type": "object"}},
            {"id": ["decide", "end"], "schema": {"type": "object"}}
          ]
        }"#;
        let files = Files::new(&[("loads.json", definition), ("config.toml", "")]);
        let quote = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
        let command = format!(
            "{} fsm run {} --input '{{}}' --model-path {} --threads 1",
            quote(env!("CARGO_BIN_EXE_claij")),
            quote(&files.path("loads.json")),
            quote(&model.to_string_lossy()),
        );
        let output = std::process::Command::new("script")
            .args(["-qec", &command, "/dev/null"])
            .env("CLAIJ_CONFIG", files.path("config.toml"))
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let screen = String::from_utf8_lossy(&output.stdout).into_owned();
        let loads = screen.matches("loading the local model from ").count();
        assert_eq!(loads, 1, "{screen}");
        assert!(
            screen.contains("invalid event from state `start`"),
            "{screen}"
        );
    }

    /// `claij fsm run examples/fsm/tool-loop.json --llm local`: the grammar lets the 135M model
    /// write only a call to the project's one tool with arguments of its schema; it takes the file's
    /// name from the request, the real server reads the file (a name relative to its allowed
    /// directory) and the model answers with its content. The name is quoted in the request: unquoted
    /// (`Read the file notes.txt ...`), or as a quoted absolute path, the small model writes the
    /// example reply's `"..."` placeholder instead (measured: greedy decoding, so each run is the
    /// same).
    #[test]
    fn the_local_model_calls_the_filesystem_server_and_ends_with_the_file_s_content() {
        let test = "the_local_model_calls_the_filesystem_server_and_ends_with_the_file_s_content";
        let Some(model) = crate::local_model::model(test) else {
            return;
        };
        let Some(servers) = super::super::mcp::servers(test) else {
            return;
        };
        let files = Files::new(&[("notes.txt", "the launch code is 7-4-1")]);
        let root = std::fs::canonicalize(&files.0).unwrap();
        let fs =
            servers.join("npm/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
        let config = format!(
            "[mcpServers.fs]\ncommand = \"node\"\nargs = [{:?}, {:?}]\n\n[projects.reader]\nservices = [\"fs\"]\ntools = [\"fs.read_text_file\"]\n",
            fs.display().to_string(),
            root.display().to_string()
        );
        std::fs::write(root.join("config.toml"), config).unwrap();
        let config = files.path("config.toml");
        let model = model.to_string_lossy().into_owned();
        let run = claij_env(
            &[
                "fsm",
                "run",
                &example("tool-loop"),
                "--input",
                r#"{"request": "Read the file \"notes.txt\" and tell me what it says"}"#,
                "--llm",
                "local",
                "--model-path",
                &model,
                "--project",
                "reader",
                "--max-tokens",
                "120",
                "--max-transitions",
                "6",
                "--threads",
                "1",
            ],
            "",
            &[("CLAIJ_CONFIG", Some(config.as_str()))],
        );
        assert_eq!(run.code, 0, "{}", run.stderr);
        let trail = trail(&run.stdout);
        let call = &trail[1];
        // The tool and the file are what matters; optional arguments (`head`, `tail`) are the
        // model's own choice.
        let params = &call["event"]["message"]["params"];
        assert_eq!(
            (&params["name"], &params["arguments"]["path"]),
            (&json!("fs.read_text_file"), &json!("notes.txt")),
            "{call}"
        );
        assert!(
            call["model"]
                .as_str()
                .is_some_and(|m| m.starts_with("local:")),
            "{call}"
        );
        let read = trail
            .iter()
            .find(|e| e["from"] == "servicing")
            .unwrap_or_else(|| panic!("no tool result: {}", run.stdout));
        assert_eq!(result_text(read), "the launch code is 7-4-1");
        let last: &Value = trail.last().unwrap();
        assert_eq!(
            (&last["from"], &last["to"]),
            (&json!("llm"), &json!("end")),
            "{}",
            run.stderr
        );
        let answer = last["event"]["result"]["content"][0]["text"].as_str();
        assert!(answer.is_some_and(|a| a.contains("7-4-1")), "{last}");
    }
}

#[test]
fn resume_gets_the_services_again() {
    // A person starts a calculation; the run is journaled while it waits for them.
    let definition = r#"{
      "id": "calc",
      "states": [
        {"id": "person", "action": "human"},
        {"id": "calc", "action": "service", "config": {"service": "eval"}},
        {"id": "end", "action": "end"}
      ],
      "transitions": [
        {"id": ["start", "person"]},
        {"id": ["person", "calc"], "schema": {"type": "object", "required": ["message"]}},
        {"id": ["calc", "end"], "schema": {"type": "object", "required": ["message"]}}
      ]
    }"#;
    let files = Files::new(&[("calc.json", definition), ("config.toml", "")]);
    let config = files.path("config.toml");
    let env = [("CLAIJ_CONFIG", Some(config.as_str()))];
    let journal = files.path("run.jsonl");
    let run = claij_env(
        &[
            "fsm",
            "run",
            &files.path("calc.json"),
            "--input",
            "{}",
            "--journal",
            &journal,
        ],
        "",
        &env,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("waiting for input in state `person`"),
        "{}",
        run.stderr
    );
    let input = json!({"message": {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "eval", "arguments": {"code": "40 + 2"}}}});
    let resumed = claij_env(&["fsm", "resume", &journal], &format!("{input}\n"), &env);
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    let trail = trail(&resumed.stdout);
    let last = trail.last().unwrap();
    assert_eq!(
        (&last["from"], &last["to"]),
        (&json!("calc"), &json!("end"))
    );
    assert_eq!(result_text(last), "42");
}

#[test]
fn resume_gets_the_services_again_for_a_sub_fsm_file() {
    // The sub-FSM waits for a person, then calculates: the run suspends inside it.
    let sub = r#"{"id": "calc",
      "states": [{"id": "person", "action": "human"},
                 {"id": "calc", "action": "service", "config": {"service": "eval"}},
                 {"id": "end", "action": "end"}],
      "transitions": [{"id": ["start", "person"]},
                      {"id": ["person", "calc"], "schema": {"type": "object", "required": ["message"]}},
                      {"id": ["calc", "end"], "schema": {"type": "object", "required": ["message"]}}]}"#;
    let parent = r#"{"id": "parent",
      "states": [{"id": "work", "action": "fsm", "config": {"fsm": "calc.json", "trail": "full"}},
                 {"id": "end", "action": "end"}],
      "transitions": [{"id": ["start", "work"]}, {"id": ["work", "end"]}]}"#;
    let files = Files::new(&[
        ("parent.json", parent),
        ("calc.json", sub),
        ("config.toml", ""),
    ]);
    let config = files.path("config.toml");
    let env = [("CLAIJ_CONFIG", Some(config.as_str()))];
    let journal = files.path("run.jsonl");
    let run = claij_env(
        &[
            "fsm",
            "run",
            &files.path("parent.json"),
            "--input",
            "{}",
            "--journal",
            &journal,
        ],
        "",
        &env,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("waiting for input"), "{}", run.stderr);
    // The file is gone: resume runs the journal's copy, with the services it names.
    std::fs::remove_file(files.0.join("calc.json")).unwrap();
    let input = json!({"message": {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "eval", "arguments": {"code": "40 + 2"}}}});
    let resumed = claij_env(&["fsm", "resume", &journal], &format!("{input}\n"), &env);
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    let trail = trail(&resumed.stdout);
    let last = trail.last().unwrap();
    assert_eq!(
        (&last["from"], &last["to"]),
        (&json!("work"), &json!("end")),
        "{}",
        resumed.stdout
    );
    assert_eq!(result_text(last), "42");
}
