//! `claij ask` on the embedded model, end to end: two turns of one conversation through a memory file.
//!
//! These tests run alone, on one thread (the nextest `local-model` group; `cargo xtask test` sets
//! `CANDLE_NUM_THREADS=1`). They assert the mechanics, never what the 135M model says.

use std::path::PathBuf;

use serde_json::Value;

use super::{Files, claij_env};

/// The model file in the cache `cargo xtask model` fills; `None` (skip) when it is missing, except
/// under CI. Every model test of this binary finds the model here.
pub(crate) fn model(test: &str) -> Option<PathBuf> {
    let env = |name: &str| std::env::var_os(name);
    let path = claij::local::model_dir(env).join(claij::local::DEFAULT_MODEL_FILE);
    claij_test_support::local_model_or_skip(test, path, env)
}

/// `--threads` reaches candle's pools: the binary sets their variables before anything starts (the
/// test's environment says 1; the model, loading, says what it computes with).
#[test]
fn threads_size_the_local_model_s_pools() {
    let Some(model) = model("threads_size_the_local_model_s_pools") else {
        return;
    };
    let model = model.to_string_lossy().into_owned();
    let run = claij_env(
        &[
            "ask",
            "Say hi.",
            "--llm",
            "local",
            "--model-path",
            &model,
            "--threads",
            "2",
            "--max-tokens",
            "16",
            "--max-retries",
            "0",
            "-v",
        ],
        "",
        &[
            ("CANDLE_NUM_THREADS", Some("1")),
            ("RAYON_NUM_THREADS", Some("1")),
        ],
    );
    assert!(
        run.stderr
            .lines()
            .any(|l| l.contains("loading the local model") && l.ends_with(" threads=2")),
        "{}",
        run.stderr
    );
}

#[test]
fn two_turns_through_a_memory_file() {
    let Some(model) = model("two_turns_through_a_memory_file") else {
        return;
    };
    let model = model.to_string_lossy().into_owned();
    let files = Files::new(&[]);
    let memory = files.path("memory.json");
    let ask = |prompt: &str, extra: &[&str]| {
        let mut args = vec![
            "ask",
            prompt,
            "--llm",
            "local",
            "--model-path",
            &model,
            "--interceptors",
            "memory",
            "--memory",
            &memory,
            "--threads",
            "1",
        ];
        args.extend_from_slice(extra);
        claij_env(&args, "", &[])
    };

    let first = ask("Remember: my favourite colour is blue.", &[]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    let value: Value = serde_json::from_str(&first.stdout).unwrap();
    for key in ["answer", "state", "summary"] {
        assert!(value[key].is_string(), "{key} in {value}");
    }
    let lines: Vec<&str> = first.stderr.lines().collect();
    assert!(lines[0].starts_with("attempt 1: "), "{}", first.stderr);
    assert!(
        lines
            .iter()
            .any(|l| l.contains(" tokens, ") && l.ends_with("cost $0")),
        "{}",
        first.stderr
    );
    let session: Value = serde_json::from_str(&std::fs::read_to_string(&memory).unwrap()).unwrap();
    assert_eq!(session["turn"], 1, "{session}");
    assert_eq!(
        session["interceptors"]["memory"]["state"]["summaries"]
            .as_array()
            .unwrap()
            .len(),
        1
    );

    let second = ask("What is my favourite colour?", &["--json"]);
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert!(second.stderr.is_empty(), "{}", second.stderr);
    let report: Value = serde_json::from_str(&second.stdout).unwrap();
    for key in ["answer", "state", "summary"] {
        assert!(report["value"][key].is_string(), "{key} in {report}");
    }
    let attempts = report["attempts"].as_array().unwrap();
    assert!(!attempts.is_empty(), "{report}");
    assert_eq!(attempts.last().unwrap()["verdict"], "valid", "{report}");
    assert!(report["usage"]["output_tokens"].as_u64().unwrap() > 0);
    assert!(report["elapsed_ms"].is_u64(), "{report}");
    let session: Value = serde_json::from_str(&std::fs::read_to_string(&memory).unwrap()).unwrap();
    assert_eq!(session["turn"], 2, "{session}");
    assert_eq!(
        session["interceptors"]["memory"]["state"]["summaries"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

/// A server's sampling request answered by the embedded model: server-everything's
/// `trigger-sampling-request` asks the client for a completion and returns it in its result.
#[test]
fn mcp_sampling_is_answered_by_the_local_model() {
    let Some(model) = model("mcp_sampling_is_answered_by_the_local_model") else {
        return;
    };
    let Some(dir) = super::mcp::servers("mcp_sampling_is_answered_by_the_local_model") else {
        return;
    };
    let files = Files::new(&[("mcp.json", &super::mcp::config(&dir))]);
    let model_dir = model.parent().unwrap().to_string_lossy().into_owned();
    let run = claij_env(
        &[
            "mcp",
            "call",
            "everything.trigger-sampling-request",
            "--args",
            r#"{"prompt": "Say hello.", "maxTokens": 12}"#,
            "--sampling-llm",
            "local",
            "--config",
            &files.path("mcp.json"),
        ],
        "",
        &[("CLAIJ_MODEL_DIR", Some(&model_dir))],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    // The server's result quotes the completion it got back, with the model that wrote it.
    assert!(run.stdout.contains("SmolLM2"), "{}", run.stdout);

    // Without a sampler the capability is not declared, and the server does not offer the tool.
    let without = claij_env(
        &[
            "mcp",
            "call",
            "everything.trigger-sampling-request",
            "--args",
            r#"{"prompt": "Say hello."}"#,
            "--config",
            &files.path("mcp.json"),
        ],
        "",
        &[],
    );
    assert_eq!(without.code, 1, "{}", without.stderr);
    assert!(
        without.stdout.contains("unknown tool"),
        "{}",
        without.stdout
    );
}

/// On a terminal (a pseudo-terminal from util-linux `script`), the local model's progress line is
/// drawn on stderr while it works (the prompt's size while it is read, then the tokens and the
/// reply so far) and cleared before the answer; the attempt line reports the rate. With `--stream`
/// into a pipe the line shows as well
/// (the pipe gets JSON lines only). With `--json`, on the same terminal, none of it. (Piped, every
/// other test here sees no progress either.)
#[test]
fn progress_shows_on_a_terminal_and_not_with_json() {
    let Some(model) = model("progress_shows_on_a_terminal_and_not_with_json") else {
        return;
    };
    if !super::script_or_skip("progress_shows_on_a_terminal_and_not_with_json") {
        return;
    }
    let quote = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    let on_terminal = |extra: &str| {
        let command = format!(
            "{} ask 'Capital of France?' --llm local --model-path {} --threads 1 --max-tokens 24{extra}",
            quote(env!("CARGO_BIN_EXE_claij")),
            quote(&model.to_string_lossy()),
        );
        let output = std::process::Command::new("script")
            .args(["-qec", &command, "/dev/null"])
            .env(
                "XDG_CONFIG_HOME",
                std::env::temp_dir().join("claij-tests-no-config"),
            )
            .env_remove("CLAIJ_CONFIG")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    };

    let shown = on_terminal("");
    let frames: Vec<&str> = shown.split("\r\x1b[2K").collect();
    let first = |part: &str| {
        frames
            .iter()
            .position(|f| f.contains(part))
            .unwrap_or_else(|| panic!("no {part:?} in {shown:?}"))
    };
    let reading = first("attempt 1: reading the prompt, ");
    let writing = first("attempt 1: 1 token, ");
    assert!(reading < writing, "{shown:?}");
    let attempt_line = shown
        .lines()
        .find(|l| l.starts_with("attempt 1: "))
        .unwrap_or_else(|| panic!("no attempt line in {shown:?}"));
    assert!(attempt_line.contains(" tok/s"), "{attempt_line}");

    // Into a pipe with --stream: the line on the terminal, JSON lines in the pipe.
    let files = super::Files::new(&[]);
    let piped = files.path("piped.jsonl");
    let shown = on_terminal(&format!(" --stream > {}", quote(&piped)));
    assert!(
        shown.contains("attempt 1: reading the prompt, "),
        "{shown:?}"
    );
    let written = std::fs::read_to_string(&piped).unwrap();
    let lines: Vec<Value> = written
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect();
    let (last, partials) = lines.split_last().unwrap();
    assert!(last["value"].is_object(), "{written}");
    assert!(
        partials.iter().all(|l| l["partial"].is_object()),
        "{written}"
    );

    let json = on_terminal(" --json");
    assert!(!json.contains("\x1b[2K"), "{json:?}");
    assert!(!json.contains("reading the prompt"), "{json:?}");
}

/// On the base schema the model's `state` is one of the declared states: the grammar leaves it no
/// other choice (it once wrote `France` or `IT,` there).
#[test]
fn ask_answers_with_a_declared_state() {
    let Some(model) = model("ask_answers_with_a_declared_state") else {
        return;
    };
    let model = model.to_string_lossy().into_owned();
    let run = claij_env(
        &[
            "ask",
            "What is the capital of France?",
            "--llm",
            "local",
            "--model-path",
            &model,
            "--threads",
            "1",
            "--json",
        ],
        "",
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    let state = report["value"]["state"].as_str().unwrap_or_default();
    assert!(
        ["answered", "needs_clarification", "cannot_answer"].contains(&state),
        "{report}"
    );
}

/// The constrained model proposes a schema extension (the schema requires a proposal, so the
/// grammar makes it write one), `--approve auto` activates it in the conversation file, and the
/// next request, to another model, carries it. One short call on the model.
#[tokio::test]
async fn a_proposal_of_the_model_is_accepted_and_carried_by_the_next_request() {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer};

    let Some(model) = model("a_proposal_of_the_model_is_accepted_and_carried_by_the_next_request")
    else {
        return;
    };
    let model = model.to_string_lossy().into_owned();
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(super::openrouter::reply(r#"{"answer": "Rome"}"#))
        .expect(1)
        .mount(&server)
        .await;
    let config = format!(
        "[providers.mylocal]\nkind = \"openai-compatible\"\nbase_url = \"{}/v1\"\n",
        server.uri()
    );
    let schema = r#"{"type": "object", "required": ["answer", "proposed_extension"],
        "properties": {"answer": {"type": "string", "maxLength": 40}}}"#;
    let files = Files::new(&[("config.toml", &config), ("schema.json", schema)]);
    let (memory, schema, config) = (
        files.path("memory.json"),
        files.path("schema.json"),
        files.path("config.toml"),
    );
    let ask = |llm: &[&str], extra: &[&str]| {
        let mut args = vec!["ask", "How sure are you that Paris is in France?"];
        args.extend_from_slice(llm);
        args.extend_from_slice(&[
            "--schema",
            &schema,
            "--interceptors",
            "proposals",
            "--memory",
            &memory,
        ]);
        args.extend_from_slice(extra);
        claij_env(&args, "", &[("CLAIJ_CONFIG", Some(config.as_str()))])
    };

    let first = ask(
        &["--llm", "local", "--model-path", &model],
        &["--approve", "auto", "--threads", "1", "--max-tokens", "120"],
    );
    assert_eq!(first.code, 0, "{}", first.stderr);
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&memory).unwrap()).unwrap();
    let active = &saved["extensions"]["active"][0];
    assert_eq!(
        saved["extensions"]["audit"][0]["action"], "added",
        "{saved}"
    );
    assert_eq!(active["added_by"], "local:SmolLM2-135M-Instruct");

    // The next request (another model; its proposal is not required) carries the extension.
    let relaxed = r#"{"type": "object", "required": ["answer"],
        "properties": {"answer": {"type": "string"}}}"#;
    std::fs::write(&schema, relaxed).unwrap();
    let second = ask(&["--llm", "mylocal:smol"], &["--approve", "never"]);
    assert_eq!(second.code, 0, "{}", second.stderr);
    let received = server.received_requests().await.unwrap();
    let body: Value = serde_json::from_slice(&received[0].body).unwrap();
    let properties = &body["response_format"]["json_schema"]["schema"]["properties"];
    for name in active["delta"]["properties"].as_object().unwrap().keys() {
        assert!(properties.get(name).is_some(), "{name} in {body}");
    }
}
