//! `claij models` and the matrix's effect on `claij ask`.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer};

use super::{Files, assert_one_line_error, claij_env};

fn record(model: &str, mode: &str, first: bool, retries: u64) -> Value {
    json!({"model": model, "suite": "retry", "test": format!("{mode}-{retries}"), "passed": true,
           "valid_first_try": first, "attempts": retries + 1, "retries": retries, "tokens_in": 10,
           "tokens_out": 5, "cost": 0.0, "elapsed_ms": 10, "detail": "", "mode": mode})
}

/// A data directory holding `claij/compat-matrix.json` where the tool mode did best for the model.
fn data_dir() -> Files {
    let matrix = json!({"records": [
        record("google/gemini-2.5-flash", "native", false, 2),
        record("google/gemini-2.5-flash", "tool", true, 0),
        record("google/gemini-2.5-flash", "prompted", false, 1),
    ]});
    let files = Files::new(&[]);
    let dir = Path::new(&files.path("claij")).to_path_buf();
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("compat-matrix.json"), matrix.to_string()).unwrap();
    files
}

#[test]
fn models_prints_each_choice_and_why() {
    let data = data_dir();
    let root = data.path("");
    let run = claij_env(&["models"], "", &[("XDG_DATA_HOME", Some(root.as_str()))]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("google/gemini-2.5-flash: mode tool, 3 retries (3/3 passed, 1 valid first try): tool was valid first try most often (1/1)"),
        "{}",
        run.stdout
    );
    let json_run = claij_env(
        &["models", "--json"],
        "",
        &[("XDG_DATA_HOME", Some(root.as_str()))],
    );
    let listed: Value = serde_json::from_str(&json_run.stdout).unwrap();
    assert_eq!(listed["models"][0]["mode"], "tool");
    assert_eq!(listed["models"][0]["max_retries"], 3);

    let none = claij_env(&["models"], "", &[]);
    assert_one_line_error(&none, 2, "no compatibility matrix");
    let f = Files::new(&[("m.json", "{\"cells\": []}")]);
    let bad = claij_env(&["models", "--matrix", &f.path("m.json")], "", &[]);
    assert_one_line_error(&bad, 2, "not a compatibility matrix");
}

/// On a machine where nothing was measured yet, `claij models` names a command that works as it is
/// printed, and where it writes the matrix.
#[test]
fn without_a_matrix_models_prints_a_command_that_works() {
    let data = Files::new(&[]);
    let root = data.path("");
    let run = claij_env(&["models"], "", &[("XDG_DATA_HOME", Some(root.as_str()))]);
    assert_one_line_error(&run, 2, "no compatibility matrix yet");
    let written = Path::new(&root).join("claij").join("compat-matrix.json");
    assert!(
        run.stderr.contains(&written.display().to_string()),
        "{}",
        run.stderr
    );
    let command = run
        .stderr
        .split('`')
        .nth(1)
        .unwrap_or_else(|| panic!("no command in {}", run.stderr));
    let args: Vec<&str> = command
        .strip_prefix("cargo xtask integration")
        .unwrap_or_else(|| panic!("not an integration run: {command}"))
        .split_whitespace()
        .chain(["--dry-run"])
        .collect();
    let planned = xtask_integration(&args, "/nonexistent/config.toml", &root);
    assert!(
        planned.status.success(),
        "`{command} --dry-run`: {}{}",
        String::from_utf8_lossy(&planned.stdout),
        String::from_utf8_lossy(&planned.stderr)
    );
    assert!(!written.exists(), "a dry run writes nothing");
}

#[tokio::test]
async fn ask_takes_mode_and_retries_from_the_matrix_unless_told() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(super::openrouter::CHAT))
        .respond_with(super::openrouter::reply(
            r#"{"answer": "Paris", "state": "answered"}"#,
        ))
        .expect(2)
        .mount(&server)
        .await;
    let data = data_dir();
    let root = data.path("");
    let config = super::openrouter::config(&server);
    let f = Files::new(&[("config.toml", &config)]);
    let cfg = f.path("config.toml");
    let env = [
        ("CLAIJ_CONFIG", Some(cfg.as_str())),
        ("OPENROUTER_API_KEY", Some("sk-test-models")),
        ("XDG_DATA_HOME", Some(root.as_str())),
    ];
    let chosen = claij_env(
        &["ask", "Capital of France?", "--llm", "gemini-flash"],
        "",
        &env,
    );
    assert_eq!(chosen.code, 0, "{}", chosen.stderr);
    assert!(
        chosen.stderr.contains(
            "compatibility matrix: a forced tool with 3 retries for google/gemini-2.5-flash"
        ),
        "{}",
        chosen.stderr
    );
    // Told otherwise, the options win and the matrix is not consulted.
    let told = claij_env(
        &[
            "ask",
            "Capital of France?",
            "--llm",
            "gemini-flash",
            "--mode",
            "prompted",
            "--max-retries",
            "0",
        ],
        "",
        &env,
    );
    assert_eq!(told.code, 0, "{}", told.stderr);
    assert!(
        !told.stderr.contains("compatibility matrix"),
        "{}",
        told.stderr
    );
    let requests = server.received_requests().await.unwrap();
    let first: Value = serde_json::from_slice(&requests[0].body).unwrap();
    let second: Value = serde_json::from_slice(&requests[1].body).unwrap();
    assert!(
        first.get("tools").is_some(),
        "tool mode sends the schema as a tool: {first}"
    );
    assert!(
        second.get("tools").is_none() && second.get("response_format").is_none(),
        "{second}"
    );
}

#[tokio::test]
async fn fsm_run_takes_mode_and_retries_from_the_matrix_as_ask_does() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(super::openrouter::CHAT))
        .respond_with(super::openrouter::reply(r#"{"answer": "4"}"#))
        .expect(1)
        .mount(&server)
        .await;
    let data = data_dir();
    let root = data.path("");
    let definition = r#"{"id": "one", "states": [{"id": "ask", "action": "llm"}, {"id": "end", "action": "end"}],
      "transitions": [{"id": ["start", "ask"], "schema": {"type": "object"}},
                      {"id": ["ask", "end"], "schema": {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}}]}"#;
    let f = Files::new(&[
        ("config.toml", &super::openrouter::config(&server)),
        ("one.json", definition),
    ]);
    let cfg = f.path("config.toml");
    let run = claij_env(
        &[
            "fsm",
            "run",
            &f.path("one.json"),
            "--input",
            "{}",
            "--llm",
            "gemini-flash",
        ],
        "",
        &[
            ("CLAIJ_CONFIG", Some(cfg.as_str())),
            ("OPENROUTER_API_KEY", Some("sk-test-models")),
            ("XDG_DATA_HOME", Some(root.as_str())),
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "compatibility matrix: a forced tool with 3 retries for google/gemini-2.5-flash"
        ),
        "{}",
        run.stderr
    );
    let requests = server.received_requests().await.unwrap();
    let body: Value = serde_json::from_slice(&requests[0].body).unwrap();
    assert!(
        body.get("tools").is_some(),
        "tool mode, as measured: {body}"
    );
}

/// `cargo xtask integration ARGS` through cargo, the real xtask with this claij as its `claij suite
/// run`, the provider configured by `config`, the user's data directory `data`.
fn xtask_integration(args: &[&str], config: &str, data: &str) -> Output {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    Command::new(cargo)
        .current_dir(root)
        .args(["run", "--quiet", "--package", "xtask", "--", "integration"])
        .args(args)
        .env("CLAIJ_BIN", env!("CARGO_BIN_EXE_claij"))
        .env("CLAIJ_CONFIG", config)
        .env("OPENROUTER_API_KEY", "sk-test-merge")
        .env("XDG_DATA_HOME", data)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// A provider answering every request with `content`, and a configuration naming it.
async fn provider(content: &str) -> (MockServer, Files) {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(super::openrouter::CHAT))
        .respond_with(super::openrouter::reply(content))
        .mount(&server)
        .await;
    let files = Files::new(&[("config.toml", &super::openrouter::config(&server))]);
    (server, files)
}

#[tokio::test]
async fn models_reads_the_matrix_two_integration_runs_merged_and_a_rerun_replaced() {
    let valid = r#"{"answer": "apple", "letters": ["a", "p", "p", "l", "e"], "length": 5, "state": "done"}"#;
    let (_good, good) = provider(valid).await;
    let data = Files::new(&[]);
    let root = data.path("");
    for llm in ["gemini-flash", "qwen-7b"] {
        let out = xtask_integration(
            &["--llm", llm, "--suite", "retry", "--yes"],
            &good.path("config.toml"),
            &root,
        );
        assert!(
            out.status.success(),
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // From any directory: the user's matrix, nothing under the current directory.
    let env = [("XDG_DATA_HOME", Some(root.as_str()))];
    let models = claij_env(&["models"], "", &env);
    assert_eq!(models.code, 0, "{}", models.stderr);
    let lines: Vec<&str> = models.stdout.lines().skip(1).collect();
    assert_eq!(lines.len(), 2, "{}", models.stdout);
    assert!(
        lines[0].starts_with("gemini-flash: mode native, 1 retry (3/3 passed, 3 valid first try)"),
        "{}",
        models.stdout
    );
    assert!(
        lines[1].starts_with("qwen-7b: mode native, 1 retry (3/3 passed, 3 valid first try)"),
        "{}",
        models.stdout
    );

    // gemini-flash again, now never valid: its results replaced, qwen-7b's kept.
    let (_bad, bad) = provider("no JSON at all").await;
    let out = xtask_integration(
        &["--llm", "gemini-flash", "--suite", "retry", "--yes"],
        &bad.path("config.toml"),
        &root,
    );
    assert_eq!(out.status.code(), Some(1), "a failed test exits 1");
    let models = claij_env(&["models"], "", &env);
    let lines: Vec<&str> = models.stdout.lines().skip(1).collect();
    assert_eq!(lines.len(), 2, "{}", models.stdout);
    assert!(
        lines[0].starts_with(
            "gemini-flash: UNSUPPORTED for structured output: its retry suite never passed (0/3 in native, tool, prompted modes, measured 20"
        ),
        "{}",
        models.stdout
    );
    assert!(
        lines[0].contains("if used anyway: mode native, 3 retries (0/3 passed, 0 valid first try)"),
        "{}",
        models.stdout
    );
    assert!(
        lines[1].starts_with("qwen-7b: mode native, 1 retry (3/3 passed"),
        "{}",
        models.stdout
    );
    let listed: Value =
        serde_json::from_str(&claij_env(&["models", "--json"], "", &env).stdout).unwrap();
    assert_eq!(listed["models"][0]["supported"], false);
    assert!(
        listed["models"][0]["unsupported"]
            .as_str()
            .unwrap()
            .starts_with("its retry suite never passed"),
        "{listed}"
    );
    assert_eq!(listed["models"][1]["supported"], true);
    assert_eq!(listed["models"][1]["unsupported"], Value::Null);
    // Every run is in the history.
    let history = std::fs::read_to_string(data.path("claij/compat-history.jsonl")).unwrap();
    assert_eq!(history.lines().count(), 3, "{history}");
}

#[test]
fn a_matrix_under_the_current_directory_is_not_consulted() {
    let data = data_dir();
    // Only `target/claij/compat-matrix.json` under the current directory, no user matrix.
    let files = Files::new(&[]);
    let target = Path::new(&files.path("target/claij")).to_path_buf();
    std::fs::create_dir_all(&target).unwrap();
    std::fs::copy(
        data.path("claij/compat-matrix.json"),
        target.join("compat-matrix.json"),
    )
    .unwrap();
    let empty = Files::new(&[]);
    let run = Command::new(env!("CARGO_BIN_EXE_claij"))
        .arg("models")
        .current_dir(files.path(""))
        .env("XDG_DATA_HOME", empty.path(""))
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&run.stderr).contains("no compatibility matrix"),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    // --matrix still names one.
    let named = claij_env(
        &[
            "models",
            "--matrix",
            &format!("{}/compat-matrix.json", target.display()),
        ],
        "",
        &[],
    );
    assert_eq!(named.code, 0, "{}", named.stderr);
    assert!(
        named.stdout.contains("google/gemini-2.5-flash: mode tool"),
        "{}",
        named.stdout
    );
}

/// A data directory whose matrix has gemini-flash's retry suite failing in every mode.
fn unsupported_data_dir() -> Files {
    let failed = |mode: &str| {
        let mut r = record("gemini-flash", mode, false, 1);
        r["passed"] = json!(false);
        r["detail"] = json!("no valid reply after 2 attempts");
        r
    };
    let matrix = json!({"records": [failed("native"), failed("tool"), failed("prompted")]});
    let files = Files::new(&[]);
    std::fs::create_dir_all(files.path("claij")).unwrap();
    std::fs::write(files.path("claij/compat-matrix.json"), matrix.to_string()).unwrap();
    files
}

#[tokio::test]
async fn ask_warns_once_before_using_a_model_marked_unsupported() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(super::openrouter::CHAT))
        .respond_with(super::openrouter::reply(
            r#"{"answer": "Paris", "state": "answered"}"#,
        ))
        .expect(3)
        .mount(&server)
        .await;
    let data = unsupported_data_dir();
    let root = data.path("");
    let f = Files::new(&[("config.toml", &super::openrouter::config(&server))]);
    let cfg = f.path("config.toml");
    let env = [
        ("CLAIJ_CONFIG", Some(cfg.as_str())),
        ("OPENROUTER_API_KEY", Some("sk-test-models")),
        ("XDG_DATA_HOME", Some(root.as_str())),
    ];
    let warning = "warning: the compatibility matrix marks gemini-flash unsupported for structured output: its retry suite never passed (0/3 in native, tool, prompted modes; no valid reply after 2 attempts); replies may never validate";
    for args in [
        &["ask", "Capital of France?", "--llm", "gemini-flash"][..],
        // Even when the flags leave the matrix nothing to choose, and with --json.
        &[
            "ask",
            "Capital of France?",
            "--llm",
            "gemini-flash",
            "--mode",
            "prompted",
            "--max-retries",
            "0",
            "--json",
        ][..],
    ] {
        let run = claij_env(args, "", &env);
        assert_eq!(run.code, 0, "{}", run.stderr);
        let warnings: Vec<&str> = run
            .stderr
            .lines()
            .filter(|l| l.contains("unsupported"))
            .collect();
        assert_eq!(warnings, [warning], "{}", run.stderr);
    }
    // --matrix names a matrix outside the data directory; without one, no warning.
    let elsewhere = Files::new(&[]);
    let named = claij_env(
        &[
            "ask",
            "Capital of France?",
            "--llm",
            "gemini-flash",
            "--matrix",
            &data.path("claij/compat-matrix.json"),
        ],
        "",
        &[
            ("CLAIJ_CONFIG", Some(cfg.as_str())),
            ("OPENROUTER_API_KEY", Some("sk-test-models")),
            ("XDG_DATA_HOME", Some(elsewhere.path("").as_str())),
        ],
    );
    assert_eq!(named.code, 0, "{}", named.stderr);
    assert!(named.stderr.contains(warning), "{}", named.stderr);
    let bad = claij_env(
        &[
            "ask",
            "Capital of France?",
            "--llm",
            "gemini-flash",
            "--matrix",
            &elsewhere.path("missing.json"),
        ],
        "",
        &[
            ("CLAIJ_CONFIG", Some(cfg.as_str())),
            ("OPENROUTER_API_KEY", Some("sk-test-models")),
        ],
    );
    assert_eq!(bad.code, 2, "a matrix named but unreadable: {}", bad.stderr);
    assert_one_line_error(&bad, 2, "missing.json");
}
