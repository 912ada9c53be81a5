//! Unit tests of `claij ask`'s pure parts: `--llm`, the model cache, the report's formatting, the
//! memory file.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::llm::{self, Llm, Provider};
use super::report;
use super::session::Session;

#[track_caller]
fn check_llm(text: &str, expected: Result<Llm, &str>) {
    match (llm::parse(text), expected) {
        (Ok(got), Ok(want)) => assert_eq!(got, want, "{text}"),
        (Err(got), Err(part)) => assert!(got.contains(part), "{text}: {got}"),
        (got, want) => panic!("{text}: got {got:?}, expected {want:?}"),
    }
}

fn remote(provider: Provider, model: &str) -> Llm {
    Llm::Remote {
        provider,
        model: model.to_owned(),
    }
}

#[test]
fn llm_values() {
    check_llm("local", Ok(Llm::Local));
    check_llm(
        "openrouter:google/gemini-2.5-flash",
        Ok(remote(Provider::OpenRouter, "google/gemini-2.5-flash")),
    );
    check_llm("openai:gpt-5", Ok(remote(Provider::OpenAi, "gpt-5")));
    check_llm(
        "anthropic:claude-sonnet-4-5",
        Ok(remote(Provider::Anthropic, "claude-sonnet-4-5")),
    );
    check_llm(
        "gemini:gemini-2.5-flash",
        Ok(remote(Provider::Gemini, "gemini-2.5-flash")),
    );
    // A model id may itself hold a colon (OpenRouter's `:free` variants).
    check_llm(
        "openrouter:meta-llama/llama-3.3-70b-instruct:free",
        Ok(remote(
            Provider::OpenRouter,
            "meta-llama/llama-3.3-70b-instruct:free",
        )),
    );
    check_llm("gpt-5", Err("expected `local` or PROVIDER:MODEL"));
    check_llm("mistral:large", Err("unknown provider `mistral`"));
    check_llm("openai:", Err("no model after `openai:`"));
    check_llm("Local", Err("expected `local`"));
}

#[track_caller]
fn check_model_dir(vars: &[(&str, &str)], expected: &Path) {
    let var = |name: &str| {
        vars.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| OsString::from(v))
    };
    assert_eq!(llm::model_dir(var), expected, "{vars:?}");
}

#[test]
fn model_dir_follows_xtask() {
    check_model_dir(
        &[
            ("CLAIJ_MODEL_DIR", "/models"),
            ("XDG_CACHE_HOME", "/xdg"),
            ("HOME", "/home/u"),
        ],
        Path::new("/models"),
    );
    check_model_dir(
        &[
            ("CLAIJ_MODEL_DIR", ""),
            ("XDG_CACHE_HOME", "/xdg"),
            ("HOME", "/home/u"),
        ],
        Path::new("/xdg/claij/models"),
    );
    check_model_dir(
        &[("XDG_CACHE_HOME", "relative"), ("HOME", "/home/u")],
        Path::new("/home/u/.cache/claij/models"),
    );
    check_model_dir(&[], &std::env::temp_dir().join("claij").join("models"));
}

#[test]
fn model_names() {
    let name = |p: &str| llm::model_name(Path::new(p));
    assert_eq!(
        name("/cache/SmolLM2-135M-Instruct.Q4_1.gguf"),
        "SmolLM2-135M-Instruct"
    );
    assert_eq!(name("model.gguf"), "model");
    assert_eq!(name(".gguf"), "local");
}

#[test]
fn dollars() {
    let cases = [
        (0.0, "$0"),
        (0.5, "$0.5"),
        (0.000123, "$0.000123"),
        (1.25, "$1.25"),
        (0.0000002, "$2.0e-7"),
    ];
    for (cost, expected) in cases {
        assert_eq!(report::dollars(cost), expected, "{cost}");
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "claij-cli-unit-{name}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn session_round_trip() {
    let dir = scratch("session");
    let path = dir.join("memory.json");
    assert_eq!(Session::load(&path).unwrap(), Session::default());
    std::fs::write(&path, "  \n").unwrap();
    assert_eq!(Session::load(&path).unwrap(), Session::default());

    let mut ctx = Session::default().to_context();
    ctx.turn = 2;
    ctx.memory.summaries = vec!["The user likes blue.".into(), "They asked why.".into()];
    Session::default().continued(&ctx).save(&path).unwrap();
    let loaded = Session::load(&path).unwrap();
    assert_eq!((loaded.turn, &loaded.memory), (2, &ctx.memory));
    let ctx = loaded.to_context();
    assert_eq!((ctx.turn, ctx.memory.summaries.len()), (2, 2));
    // Nothing but the file is left behind.
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);

    std::fs::write(&path, "[1, 2]").unwrap();
    let err = format!("{:#}", Session::load(&path).unwrap_err());
    assert!(err.contains("not a claij session file"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn session_keeps_the_keys_it_does_not_know() {
    let dir = scratch("session-keys");
    let path = dir.join("memory.json");
    std::fs::write(
        &path,
        r#"{"turn": 3, "owner": {"name": "ada"}, "memory": {"summaries": ["a"], "insights": "old", "pinned": [1]}}"#,
    )
    .unwrap();
    let loaded = Session::load(&path).unwrap();
    let mut ctx = loaded.to_context();
    ctx.turn += 1;
    ctx.memory.summaries.push("b".into());
    // Known keys are the new values, even where that removes them (`insights` is gone).
    ctx.memory.insights = None;
    loaded.continued(&ctx).save(&path).unwrap();
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(
        saved,
        serde_json::json!({"version": 2, "turn": 4, "owner": {"name": "ada"}, "memory": {"summaries": ["a", "b"], "pinned": [1]}})
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_turn_counter_at_its_maximum_is_an_error_not_a_wrap() {
    let path = Path::new("m.json");
    Session::check_turn(u64::MAX - 1, Some(path)).unwrap();
    let err = Session::check_turn(u64::MAX, Some(path))
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "m.json: the turn counter is at its maximum (18446744073709551615): start a new conversation"
    );
}

#[track_caller]
fn check_stats(latency_ms: u64, input: u64, output: u64, expected: &str) {
    let usage = claij_backends::Usage {
        input_tokens: input,
        output_tokens: output,
        ..claij_backends::Usage::default()
    };
    let latency = std::time::Duration::from_millis(latency_ms);
    assert_eq!(report::attempt_stats(latency, usage), expected);
}

#[test]
fn attempt_and_total_lines_show_cached_tokens() {
    let usage = claij_backends::Usage {
        input_tokens: 412,
        output_tokens: 87,
        cached_tokens: 300,
        ..claij_backends::Usage::default()
    };
    let latency = std::time::Duration::from_millis(2310);
    assert_eq!(
        report::attempt_stats(latency, usage),
        "in 2.31s, 412+87 tokens (300 cached), 38 tok/s"
    );
    let lines = report::attempt_lines(&[], usage, latency);
    assert_eq!(
        lines,
        ["0 attempts, 412+87 tokens (300 cached), 2.31s, cost unknown"]
    );
    // The --json report's usage says it too, per attempt and in all.
    let report = report::to_json(None, &[], usage, latency);
    assert_eq!(report["usage"]["cached_tokens"], 300);
}

#[test]
fn attempt_lines_report_the_generation_rate() {
    check_stats(2310, 412, 87, "in 2.31s, 412+87 tokens, 38 tok/s");
    check_stats(4000, 412, 18, "in 4.00s, 412+18 tokens, 4.5 tok/s");
    // No output, or too quick to be a rate (a mock server): no rate.
    check_stats(2310, 412, 0, "in 2.31s, 412+0 tokens");
    check_stats(5, 12, 3, "in 0.01s, 12+3 tokens");
}

/// A backend that answers each request with the next of its replies.
struct Replies(std::sync::Mutex<Vec<String>>);

impl claij_backends::Backend for Replies {
    fn provider(&self) -> &str {
        "replies"
    }

    fn capabilities(&self, _model: &str) -> claij_backends::Capabilities {
        claij_backends::Capabilities::prompted()
    }

    fn complete<'a>(
        &'a self,
        _request: &'a claij_backends::ChatRequest,
    ) -> claij_backends::BoxFuture<'a, Result<claij_backends::ChatResponse, claij_backends::Error>>
    {
        let reply = self.0.lock().unwrap().remove(0);
        Box::pin(std::future::ready(Ok(claij_backends::ChatResponse::text(
            reply,
        ))))
    }
}

#[test]
fn the_citations_chain_checks_an_unknown_note_once_per_attempt() {
    use claij_interceptors::builtin::citations::Document;
    let notes = vec![Document::new("note-1", "Trip", "We land on 3 May.")];
    let chain = super::chain(&[super::Interceptor::Citations], None, notes).unwrap();
    let cite = |id: &str| {
        serde_json::json!({"answer": "3 May", "state": "answered", "metadata": {
            "hasSources": true, "citations": [{"noteId": id, "noteTitle": "Trip"}]}})
        .to_string()
    };
    let backend = Replies(std::sync::Mutex::new(vec![cite("note-9"), cite("note-1")]));
    let pipeline = claij_interceptors::Pipeline::new(
        std::sync::Arc::new(backend),
        claij_interceptors::Config::new("m"),
        chain,
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let answer = runtime
        .block_on(pipeline.ask(&mut claij_interceptors::Context::default(), "When?"))
        .unwrap();
    assert_eq!(answer.retries(), 1);
    let first = &answer.attempts[0].violations;
    assert_eq!(first.len(), 1, "{first:?}");
    assert_eq!(first[0].keyword, "citations");
}

#[test]
fn session_keeps_the_schema_extensions_with_or_without_the_registry() {
    let dir = scratch("session-extensions");
    let path = dir.join("memory.json");
    let mut registry = claij_schema::Registry::new(claij_schema::base()).unwrap();
    let delta = serde_json::json!({"properties": {"confidence": {"type": "number"}}});
    registry
        .add(claij_schema::SchemaDelta::new("confidence-v1", "m", delta))
        .unwrap();
    let ctx = Session::default().to_context();
    Session::default()
        .continued(&ctx)
        .with_extensions(Some(&registry))
        .save(&path)
        .unwrap();
    let loaded = Session::load(&path).unwrap();
    let saved = loaded.extensions.clone().unwrap();
    assert_eq!(saved.extensions, registry.extensions());
    assert_eq!(&saved.audit, registry.audit());

    // A turn without `--interceptors proposals` leaves them as they were.
    loaded
        .continued(&ctx)
        .with_extensions(None)
        .save(&path)
        .unwrap();
    let again = Session::load(&path).unwrap();
    assert_eq!(again.extensions, loaded.extensions);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("\"active\""), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn session_versions() {
    use super::session::{SessionError, VERSION};
    let dir = scratch("session-versions");
    let path = dir.join("s.json");
    let load = |text: &str| {
        std::fs::write(&path, text).unwrap();
        Session::load(&path)
    };
    // Version 1 (none written) and version 2 read alike.
    let v1 = load(r#"{"turn": 1, "memory": {"summaries": ["a"]}}"#).unwrap();
    let v2 = load(r#"{"version": 2, "turn": 1, "memory": {"summaries": ["a"]}}"#).unwrap();
    assert_eq!((v1.turn, &v1.memory), (v2.turn, &v2.memory));
    assert_eq!(v1.to_value().unwrap()["version"], VERSION);
    let newer = load(r#"{"version": 3}"#).unwrap_err();
    assert_eq!(
        newer.downcast_ref::<SessionError>(),
        Some(&SessionError::Newer {
            path: path.clone(),
            version: 3
        })
    );
    for bad in ["0", "-1", "2.5", "\"2\"", "null"] {
        let err = load(&format!("{{\"version\": {bad}}}")).unwrap_err();
        assert!(
            matches!(
                err.downcast_ref::<SessionError>(),
                Some(SessionError::BadVersion { .. })
            ),
            "{bad}: {err:#}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn session_keeps_tool_results_and_the_project() {
    use claij_interceptors::{ToolOrigin, ToolResult};
    let dir = scratch("session-tools");
    let path = dir.join("s.json");
    let mut ctx = Session::default().to_context();
    ctx.tool_results = vec![
        ToolResult {
            name: "now".into(),
            args: serde_json::json!({}),
            output: Ok(serde_json::json!("2026-01-01T00:00:00Z")),
            origin: ToolOrigin::Rust,
        },
        ToolResult {
            name: "time.get_current_time".into(),
            args: serde_json::json!({"timezone": "UTC"}),
            output: Err("timed out after 30s".into()),
            origin: ToolOrigin::Mcp {
                server: "time".into(),
            },
        },
    ];
    let session = Session::default()
        .with_project(Some("atlas"))
        .continued(&ctx);
    session.save(&path).unwrap();
    let loaded = Session::load(&path).unwrap();
    assert_eq!(loaded.tool_results, ctx.tool_results);
    assert_eq!(loaded.project.as_deref(), Some("atlas"));
    assert_eq!(loaded.to_context().tool_results, ctx.tool_results);
    // Shown on the next turn, they are gone from the file.
    ctx.tool_results.clear();
    loaded
        .with_project(None)
        .continued(&ctx)
        .save(&path)
        .unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains("tool_results"), "{text}");
    assert!(text.contains("\"project\": \"atlas\""), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn tool_result_lines_are_one_line_and_cut() {
    use claij_interceptors::{ToolOrigin, ToolResult};
    let result = |name: &str, output: Result<serde_json::Value, String>, origin| ToolResult {
        name: name.into(),
        args: serde_json::json!({"a": 1}),
        output,
        origin,
    };
    assert_eq!(
        report::tool_result_line(&result("add", Ok(serde_json::json!(2)), ToolOrigin::Rust)),
        "tool add {\"a\":1}: ok: 2"
    );
    let mcp = ToolOrigin::Mcp {
        server: "fs".into(),
    };
    assert_eq!(
        report::tool_result_line(&result("fs.read", Err("no\nsuch file".into()), mcp.clone())),
        "mcp fs.read {\"a\":1}: error: no such file"
    );
    let long = report::tool_result_line(&result("fs.read", Ok("x".repeat(500).into()), mcp));
    assert_eq!(long.chars().count(), 200, "{long}");
    assert!(long.ends_with("xx…"), "{long}");
}

/// Whether another process could take the lock at `path` now (the file there is unlocked).
fn lockable(path: &Path) -> bool {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .unwrap();
    let free = file.try_lock().is_ok();
    drop(file);
    free
}

/// The lock file is gone once the lock is; a process that waited on the removed file locks the
/// one at the path now, so two holders never hold two files (a waiter that kept the removed one
/// would leave the path's lock free for a third process).
#[cfg(unix)]
#[test]
fn the_session_lock_removes_its_file_and_a_waiter_locks_the_file_at_the_path() {
    use super::session::SessionLock;

    let dir = scratch("lock");
    let session = dir.join("chat.json");
    let lock_file = dir.join("chat.json.lock");
    let first = SessionLock::acquire(&session, true).unwrap();
    assert!(lock_file.is_file());
    assert!(!lockable(&lock_file));
    drop(first);
    assert!(!lock_file.exists(), "the lock file is removed");

    let first = SessionLock::acquire(&session, true).unwrap();
    let (waits, waiting) = std::sync::mpsc::channel();
    let second = std::thread::spawn({
        let session = session.clone();
        move || {
            let mut waited = 0;
            let lock = SessionLock::acquire_with(&session, &mut |_| {
                waited += 1;
                let _ = waits.send(());
                Ok(())
            })
            .unwrap();
            (lock, waited)
        }
    });
    // The second has opened the first's lock file and is about to wait on it: the first lets go
    // and removes that file.
    waiting.recv().unwrap();
    drop(first);
    let (second, waited) = second.join().unwrap();
    assert!(waited >= 1);
    assert!(lock_file.is_file(), "the second holds a file at the path");
    assert!(!lockable(&lock_file), "and that file is the one it locked");
    drop(second);
    assert!(!lock_file.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The embedded model's requests carry its token limit (so a reply it cuts names the limit and
/// its flag); a hosted model's carry none unless `--max-tokens` says; the flag wins.
#[test]
fn the_local_model_s_requests_carry_its_token_limit() {
    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        args: super::Args,
    }
    let parse = |extra: &[&str]| {
        <Cli as clap::Parser>::try_parse_from(["claij", "Capital?"].iter().chain(extra))
            .unwrap()
            .args
    };
    let defaults = crate::config::Defaults::default();
    let limit = |args: &super::Args, provider: &str| {
        super::config(&args.options, ("m".to_owned(), provider), &defaults, None).max_tokens
    };
    let plain = parse(&[]);
    assert_eq!(limit(&plain, "local"), Some(512));
    assert_eq!(limit(&plain, "openrouter"), None);
    let told = parse(&["--max-tokens", "24"]);
    assert_eq!(limit(&told, "local"), Some(24));
    assert_eq!(limit(&told, "openrouter"), Some(24));
}
