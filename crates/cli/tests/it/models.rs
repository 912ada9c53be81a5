//! `claij models` and the matrix's effect on `claij ask`.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer};

use super::{Files, assert_one_line_error, claij_env};

use super::openrouter::fixtures;

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

    // Without a matrix: the prices, and on stderr how to measure a model.
    let none = claij_env(&["models"], "", &[]);
    assert_one_line_error(&none, 0, "no compatibility matrix");
    assert!(
        none.stdout.contains("openai:gpt-4o-mini: input 0.15"),
        "{}",
        none.stdout
    );
    let f = Files::new(&[("m.json", "{\"cells\": []}")]);
    let bad = claij_env(&["models", "--matrix", &f.path("m.json")], "", &[]);
    assert_one_line_error(&bad, 2, "not a compatibility matrix");
}

/// On a machine where nothing was measured yet, `claij models` shows the prices and names a command
/// that works as it is printed, and where it writes the matrix.
#[test]
fn without_a_matrix_models_prints_a_command_that_works() {
    let data = Files::new(&[]);
    let root = data.path("");
    let run = claij_env(&["models"], "", &[("XDG_DATA_HOME", Some(root.as_str()))]);
    assert_one_line_error(&run, 0, "no compatibility matrix yet");
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

/// `cargo xtask integration ARGS` through cargo, the real xtask running the `claij-suite` built
/// beside this claij (a workspace build makes both), the provider configured by `config`, the
/// user's data directory `data`.
fn xtask_integration(args: &[&str], config: &str, data: &str) -> Output {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    Command::new(cargo)
        .current_dir(root)
        .args(["run", "--quiet", "--package", "xtask", "--", "integration"])
        .args(args)
        .env("CLAIJ_SUITE_BIN", suite_binary())
        .env("CLAIJ_CONFIG", config)
        .env("OPENROUTER_API_KEY", "sk-test-merge")
        .env("XDG_DATA_HOME", data)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The `claij-suite` binary of this build, beside `claij` (crates/suite; `cargo build --workspace`,
/// `cargo nextest run --workspace` and `cargo xtask test` build it).
fn suite_binary() -> std::path::PathBuf {
    let suite = Path::new(env!("CARGO_BIN_EXE_claij"))
        .with_file_name(format!("claij-suite{}", std::env::consts::EXE_SUFFIX));
    assert!(
        suite.is_file(),
        "no {}: build it with `cargo build -p claij-suite`",
        suite.display()
    );
    suite
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
    let lines: Vec<&str> = models
        .stdout
        .lines()
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(lines.len(), 2, "{}", models.stdout);
    assert!(
        lines[0].starts_with(
            "gemini-flash: mode native, 1 retry (3/3 passed, 3 valid first try, schema up to "
        ),
        "{}",
        models.stdout
    );
    assert!(
        lines[1].starts_with(
            "qwen-7b: mode native, 1 retry (3/3 passed, 3 valid first try, schema up to "
        ),
        "{}",
        models.stdout
    );
    // The schema's o200k_base tokens the suite recorded per run (claij::tokens::schema_tokens).
    let tokens: u64 = lines[0]
        .split(", schema up to ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{}", lines[0]));
    assert!(tokens > 10, "{}", lines[0]);

    // gemini-flash again, now never valid: its results replaced, qwen-7b's kept.
    let (_bad, bad) = provider("no JSON at all").await;
    let out = xtask_integration(
        &["--llm", "gemini-flash", "--suite", "retry", "--yes"],
        &bad.path("config.toml"),
        &root,
    );
    assert_eq!(out.status.code(), Some(1), "a failed test exits 1");
    let models = claij_env(&["models"], "", &env);
    let lines: Vec<&str> = models
        .stdout
        .lines()
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(lines.len(), 2, "{}", models.stdout);
    assert!(
        lines[0].starts_with(
            "gemini-flash: UNSUPPORTED for structured output: its retry suite never passed (0/3 in native, tool, prompted modes, measured 20"
        ),
        "{}",
        models.stdout
    );
    assert!(
        lines[0].contains(
            "if used anyway: mode native, 3 retries (0/3 passed, 0 valid first try, schema up to "
        ),
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
    assert_eq!(run.status.code(), Some(0));
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

/// `claij models` shows each model's prices with their date and source, each layer over the one
/// below; `claij models prices --import` reads genai-prices' and LiteLLM's lists into the data
/// directory, which `ask` then prices with.
#[test]
fn models_shows_prices_and_imports_both_formats() {
    let data = Files::new(&[]);
    let root = data.path("");
    let f = Files::new(&[(
        "config.toml",
        "[aliases]\nmini = \"openai:gpt-4o-mini\"\n\n[models.mini]\nprice = { input = 0.2, output = 0.8, checked = \"2026-12-01\", source = \"our contract\" }\n",
    )]);
    let cfg = f.path("config.toml");
    let env = [
        ("XDG_DATA_HOME", Some(root.as_str())),
        ("CLAIJ_CONFIG", Some(cfg.as_str())),
    ];
    let run = claij_env(&["models"], "", &env);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // The configuration's price first, then the built-in one it replaces, each dated and sourced.
    assert!(
        run.stdout.contains(
            "openai:gpt-4o-mini: input 0.2, output 0.8; checked 2026-12-01; our contract"
        ),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("openai:gpt-4o-mini: input 0.15, cached input 0.075, output 0.6; checked 2025-07-04 [GP] [replaced by the configuration's]"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("gemini:gemini-2.5-pro: input 1.25, cached input 0.125, output 10; above 200000 input tokens: input 2.5"), "{}", run.stdout);
    assert!(
        run.stdout.contains("built-in (the list of "),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("[GP] pydantic/genai-prices"),
        "{}",
        run.stdout
    );

    let fixture = |name: &str| {
        fixtures::path(&format!("fixtures/prices/{name}"))
            .display()
            .to_string()
    };
    let genai = fixture("genai-prices.json");
    let run = claij_env(&["models", "prices", "--import", &genai], "", &env);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .starts_with("imported 8 prices (genai-prices format) from "),
        "{}",
        run.stdout
    );
    let stored = Path::new(&root).join("claij").join("prices.json");
    assert!(stored.is_file());
    let shown = claij_env(&["models", "prices"], "", &env);
    assert!(
        shown
            .stdout
            .contains("gemini:text-embedding-004: input 0.15, output 0; checked "),
        "{}",
        shown.stdout
    );
    assert!(
        shown.stdout.contains("(genai-prices format), imported "),
        "{}",
        shown.stdout
    );
    // The import replaced the built-in price of gemini-2.5-pro (same figures, its own source).
    assert!(
        shown.stdout.contains("gemini:gemini-2.5-pro: input 1.25, cached input 0.125, output 10; above 200000 input tokens: input 2.5, cached input 0.25, output 15; checked 2025-10-31 [GP] [replaced by the imported's]"),
        "{}",
        shown.stdout
    );

    // A second import replaces the first; LiteLLM's format is recognised.
    let litellm = fixture("litellm.json");
    let run = claij_env(
        &["models", "prices", "--import", &litellm, "--json"],
        "",
        &env,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let done: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        (done["imported"].as_u64(), done["skipped"].as_u64()),
        (Some(6), Some(2))
    );
    assert_eq!(done["format"], "litellm");
    let listed = claij_env(&["models", "--json"], "", &env);
    let listed: Value = serde_json::from_str(&listed.stdout).unwrap();
    let layers = listed["prices"]["layers"].as_array().unwrap();
    let names: Vec<&str> = layers
        .iter()
        .map(|l| l["layer"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["configuration", "imported", "built-in"]);
    assert!(
        layers[1]["models"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["provider"] != "deepseek")
    );
}

#[test]
fn a_bad_price_file_is_refused_saying_where() {
    let data = Files::new(&[]);
    let root = data.path("");
    let env = [("XDG_DATA_HOME", Some(root.as_str()))];
    let f = Files::new(&[
        ("torn.json", "[{\"id\": \"openai\", \"models\": ["),
        (
            "bad.json",
            r#"[{"id": "openai", "models": [{"id": "m", "prices": {"input_mtok": "cheap"}}]}]"#,
        ),
        ("other.json", r#""prices""#),
    ]);
    let torn = claij_env(
        &["models", "prices", "--import", &f.path("torn.json")],
        "",
        &env,
    );
    assert_one_line_error(&torn, 2, "torn.json:1:");
    assert!(torn.stderr.contains("not JSON"), "{}", torn.stderr);
    let bad = claij_env(
        &["models", "prices", "--import", &f.path("bad.json")],
        "",
        &env,
    );
    assert_one_line_error(
        &bad,
        2,
        "bad.json: at /0/models/0/prices/input_mtok: expected a number",
    );
    assert!(
        bad.stderr
            .contains("(read as genai-prices; --format says another)"),
        "{}",
        bad.stderr
    );
    let other = claij_env(
        &["models", "prices", "--import", &f.path("other.json")],
        "",
        &env,
    );
    assert_one_line_error(&other, 2, "not a price list");
    // Read as another format than its shape, named.
    let forced = claij_env(
        &[
            "models",
            "prices",
            "--import",
            &f.path("bad.json"),
            "--format",
            "litellm",
        ],
        "",
        &env,
    );
    assert_one_line_error(&forced, 2, "read as litellm");
    // Nothing was written by a failed import.
    assert!(!Path::new(&root).join("claij").join("prices.json").exists());
    // A torn imported file is an error naming it, for models and ask alike.
    let dir = Path::new(&root).join("claij");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("prices.json"),
        "{\"date\": \"2026-12-06\", \"models\": [",
    )
    .unwrap();
    let run = claij_env(&["models"], "", &env);
    assert_one_line_error(&run, 2, "prices.json:1:");
    let run = claij_env(
        &["ask", "hi", "--llm", "openai:gpt-4o-mini"],
        "",
        &[
            ("XDG_DATA_HOME", Some(root.as_str())),
            ("OPENAI_API_KEY", Some("sk-x")),
        ],
    );
    assert_one_line_error(&run, 2, "the imported prices");
    assert!(run.stderr.contains("prices.json:1:"), "{}", run.stderr);
}

/// `claij models --refresh` fetches OpenRouter's model list (the documented-shape fixture, served
/// by a mock) into the cache; then the list decides: `--mode tool` on the model it lists without
/// tools is refused before any request, and a model that takes no temperature is sent none.
#[tokio::test]
async fn refreshed_model_list_decides_what_is_sent() {
    let server = MockServer::start().await;
    let listed =
        fixtures::json("fixtures/providers/examples/openrouter-models.json")["body"].take();
    Mock::given(method("GET"))
        .and(path("/api/v1/models"))
        .respond_with(wiremock::ResponseTemplate::new(200).set_body_json(listed))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(super::openrouter::CHAT))
        .respond_with(super::openrouter::reply(
            r#"{"answer": "Paris", "state": "done"}"#,
        ))
        .mount(&server)
        .await;
    let files = Files::new(&[
        ("config.toml", &super::openrouter::config(&server)),
        ("schema.json", super::BASE),
    ]);
    let config = files.path("config.toml");
    let schema = files.path("schema.json");
    let cache = files.path("cache");
    let env = [
        ("CLAIJ_CONFIG", Some(config.as_str())),
        ("OPENROUTER_API_KEY", Some("sk-or-test")),
        ("XDG_CACHE_HOME", Some(cache.as_str())),
    ];
    let run = claij_env(&["models", "--refresh", "--json"], "", &env);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let done: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(done["models"], 4, "{done}");
    let file = Path::new(&cache).join("claij/openrouter-models.json");
    assert_eq!(done["file"], file.to_string_lossy().as_ref());
    assert!(file.exists());

    let run = claij_env(
        &[
            "ask",
            "hi",
            "--llm",
            "openrouter:acme/no-tools-chat",
            "--mode",
            "tool",
        ],
        "",
        &env,
    );
    assert_one_line_error(
        &run,
        2,
        "--mode tool: openrouter:acme/no-tools-chat has no tools",
    );

    let run = claij_env(
        &[
            "ask",
            "hi",
            "--llm",
            "openrouter:openai/o3-mini",
            "--temperature",
            "0.5",
            "--mode",
            "prompted",
            "--schema",
            &schema,
        ],
        "",
        &env,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("temperature not sent"),
        "{}",
        run.stderr
    );
    let chats: Vec<Value> = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .filter(|r| r.method.as_str() == "POST")
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect();
    assert_eq!(chats.len(), 1, "only the o3-mini call was sent");
    assert_eq!(chats[0]["model"], "openai/o3-mini");
    assert!(chats[0].get("temperature").is_none(), "{}", chats[0]);
}

/// A mock OpenRouter answering `GET /models` with `list` (`expected` times) and every chat call
/// with a call of the answer tool.
async fn openrouter_listing(list: wiremock::ResponseTemplate, expected: u64) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/v1/models"))
        .respond_with(list)
        .expect(expected)
        .mount(&server)
        .await;
    let mut body = fixtures::json("fixtures/providers/examples/openai-2.json")["body"].take();
    let call = &mut body["choices"][0]["message"]["tool_calls"][0]["function"];
    call["name"] = json!("response");
    call["arguments"] = json!(r#"{"answer": "Paris", "state": "done"}"#);
    Mock::given(method("POST"))
        .and(path(super::openrouter::CHAT))
        .respond_with(wiremock::ResponseTemplate::new(200).set_body_json(body))
        .mount(&server)
        .await;
    server
}

/// `claij ask hi --llm openrouter:qwen/qwen-2.5-7b-instruct --mode tool` with OpenRouter at
/// `server` (`extra` in its section), the cache in `files`.
fn ask_qwen(server: &MockServer, files: &Files, extra: &str) -> super::Run {
    let config = format!(
        "[providers.openrouter]\nbase_url = \"{}/api/v1\"\n{extra}",
        server.uri()
    );
    std::fs::write(files.path("config.toml"), config).unwrap();
    let (config, schema, cache) = (
        files.path("config.toml"),
        files.path("schema.json"),
        files.path("cache"),
    );
    let args = [
        "ask",
        "hi",
        "--llm",
        "openrouter:qwen/qwen-2.5-7b-instruct",
        "--mode",
        "tool",
        "--schema",
        &schema,
    ];
    let env = [
        ("CLAIJ_CONFIG", Some(config.as_str())),
        ("OPENROUTER_API_KEY", Some("sk-or-test")),
        ("XDG_CACHE_HOME", Some(cache.as_str())),
    ];
    claij_env(&args, "", &env)
}

/// The mock's requests, in order: each GET's path, each POST's answer tool marked strict or not.
async fn requests(server: &MockServer) -> Vec<String> {
    let requests = server.received_requests().await.unwrap();
    requests
        .iter()
        .map(|r| match r.method.as_str() {
            "POST" => {
                let body: Value = serde_json::from_slice(&r.body).unwrap();
                let strict = body["tools"][0]["function"]["strict"] == json!(true);
                format!("POST strict={strict}")
            }
            other => format!("{other} {}", r.url.path()),
        })
        .collect()
}

/// Without a cached list, the first OpenRouter model opened fetches OpenRouter's model list (the
/// documented-shape fixture, served by a mock) once and caches it: qwen, listed with tools but no
/// structured outputs, gets its answer tool non-strict (the guess would make it strict); the
/// second run reads the cache and makes no GET.
#[tokio::test]
async fn the_model_list_is_fetched_on_first_use() {
    let listed =
        fixtures::json("fixtures/providers/examples/openrouter-models.json")["body"].take();
    let server = openrouter_listing(
        wiremock::ResponseTemplate::new(200).set_body_json(listed),
        1,
    )
    .await;
    let files = Files::new(&[("schema.json", super::BASE)]);
    for _ in 0..2 {
        let run = ask_qwen(&server, &files, "");
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(!run.stderr.contains("WARN"), "{}", run.stderr);
    }
    let cached = Path::new(&files.path("cache")).join("claij/openrouter-models.json");
    assert!(cached.exists());
    assert_eq!(
        requests(&server).await,
        [
            "GET /api/v1/models",
            "POST strict=false",
            "POST strict=false"
        ]
    );
}

/// A failed fetch (a 404, a torn body) is one warning line naming `model_list`; the run answers
/// with the capabilities guessed (a strict tool) and caches nothing, so the next run tries again.
/// `model_list = "off"` makes no GET and no warning.
#[tokio::test]
async fn a_failed_model_list_fetch_warns_once_and_off_fetches_nothing() {
    for failing in [
        wiremock::ResponseTemplate::new(404),
        wiremock::ResponseTemplate::new(200).set_body_string(r#"{"data": [{"id": "qwen"#),
    ] {
        let server = openrouter_listing(failing, 2).await;
        let files = Files::new(&[("schema.json", super::BASE)]);
        for _ in 0..2 {
            let run = ask_qwen(&server, &files, "");
            assert_eq!(run.code, 0, "{}", run.stderr);
            let warnings: Vec<&str> = run.stderr.lines().filter(|l| l.contains("WARN")).collect();
            assert_eq!(warnings.len(), 1, "{}", run.stderr);
            assert!(
                warnings[0].contains("cannot fetch OpenRouter's model list")
                    && warnings[0].contains("capabilities guessed")
                    && warnings[0].contains("[providers.openrouter] model_list = \"off\""),
                "{}",
                run.stderr
            );
        }
        let cached = Path::new(&files.path("cache")).join("claij/openrouter-models.json");
        assert!(!cached.exists());
        let seen = requests(&server).await;
        assert_eq!(
            seen,
            [
                "GET /api/v1/models",
                "POST strict=true",
                "GET /api/v1/models",
                "POST strict=true"
            ]
        );
    }
    let listed =
        fixtures::json("fixtures/providers/examples/openrouter-models.json")["body"].take();
    let server = openrouter_listing(
        wiremock::ResponseTemplate::new(200).set_body_json(listed),
        0,
    )
    .await;
    let files = Files::new(&[("schema.json", super::BASE)]);
    let run = ask_qwen(&server, &files, "model_list = \"off\"\n");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stderr.contains("WARN"), "{}", run.stderr);
    assert_eq!(requests(&server).await, ["POST strict=true"]);
}
