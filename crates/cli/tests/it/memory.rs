//! `claij ask --memory FILE` under concurrency and bad paths, against a mock OpenRouter: concurrent
//! runs on one file lose no turn, unknown keys survive, a full turn counter and an unwritable path
//! are refused before any request is sent.

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use super::openrouter::{CHAT, config, reply};
use super::{Files, Run, assert_one_line_error, claij_env};

const KEY: &str = "sk-or-v1-memory-secret-0123456789";

/// Replies with a valid answer whose summary is numbered in the order the mock answered:
/// `fact-N-zq`.
struct Numbered(AtomicUsize);

impl Respond for Numbered {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        let n = self.0.fetch_add(1, Ordering::SeqCst);
        reply(
            &json!({"answer": "ok", "state": "answered", "summary": format!("fact-{n}-zq")})
                .to_string(),
        )
    }
}

/// `claij ask PROMPT --interceptors memory --memory MEMORY` against the mock.
fn ask(files: &Files, memory: &str) -> Run {
    let config = files.path("config.toml");
    claij_env(
        &[
            "ask",
            "Remember this.",
            "--llm",
            "gemini-flash",
            "--interceptors",
            "memory",
            "--memory",
            memory,
        ],
        "",
        &[
            ("CLAIJ_CONFIG", Some(config.as_str())),
            ("OPENROUTER_API_KEY", Some(KEY)),
        ],
    )
}

/// Runs at once on one memory file: each waits for the one before, so the counter counts every
/// run, every summary is kept, and each model call was told every earlier turn's summary.
#[tokio::test]
async fn concurrent_runs_on_one_memory_file_lose_no_turn() {
    const RUNS: usize = 6;
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(Numbered(AtomicUsize::new(0)))
        .expect(RUNS as u64)
        .mount(&server)
        .await;
    let files = Files::new(&[("config.toml", &config(&server))]);
    let memory = files.path("same.json");
    let config = files.path("config.toml");
    let children: Vec<_> = (0..RUNS)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_claij"))
                .args([
                    "ask",
                    "Remember this.",
                    "--llm",
                    "gemini-flash",
                    "--interceptors",
                    "memory",
                    "--memory",
                    &memory,
                ])
                .env("CLAIJ_CONFIG", &config)
                .env("OPENROUTER_API_KEY", KEY)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let session: Value = serde_json::from_str(&std::fs::read_to_string(&memory).unwrap()).unwrap();
    assert_eq!(session["turn"], RUNS);
    let mut summaries: Vec<String> = session["interceptors"]["memory"]["state"]["summaries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect();
    summaries.sort();
    let expected: Vec<String> = (0..RUNS).map(|n| format!("fact-{n}-zq")).collect();
    assert_eq!(summaries, expected);
    // Serialised, not merged: the k-th call saw the k summaries before it (each in the memory and
    // in the history's answers: counted once).
    let mut seen: Vec<usize> = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| {
            let body = String::from_utf8_lossy(&r.body);
            (0..RUNS)
                .filter(|n| body.contains(&format!("fact-{n}-zq")))
                .count()
        })
        .collect();
    seen.sort_unstable();
    assert_eq!(seen, (0..RUNS).collect::<Vec<_>>());
}

#[tokio::test]
async fn a_rewrite_keeps_keys_it_does_not_know() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(Numbered(AtomicUsize::new(0)))
        .expect(1)
        .mount(&server)
        .await;
    let files = Files::new(&[
        ("config.toml", &config(&server)),
        (
            "m.json",
            r#"{"turn": 2, "owner": "ada", "memory": {"summaries": ["old"]}}"#,
        ),
    ]);
    let run = ask(&files, &files.path("m.json"));
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mut session: Value =
        serde_json::from_str(&std::fs::read_to_string(files.path("m.json")).unwrap()).unwrap();
    // The audit of the deltas that shaped the request (its times are the run's).
    assert!(session.as_object_mut().unwrap().remove("applied").is_some());
    assert_eq!(
        session,
        json!({"version": 3, "turn": 3, "owner": "ada",
               "interceptors": {"memory": {"version": 1, "state": {"summaries": ["old", "fact-0-zq"]}}},
               "history": {"messages": [
                   {"role": "user", "content": "Remember this."},
                   {"role": "assistant", "content": r#"{"answer":"ok","state":"answered","summary":"fact-0-zq"}"#}]}})
    );
}

/// Refused before any request (the mock expects none), naming the file, leaving nothing behind.
#[tokio::test]
async fn unusable_memory_files_are_refused_before_any_request() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(ResponseTemplate::new(500))
        .expect(0)
        .mount(&server)
        .await;
    let full = format!(
        "{{\"turn\": {}, \"memory\": {{\"summaries\": []}}}}",
        u64::MAX
    );
    let files = Files::new(&[("config.toml", &config(&server)), ("full.json", &full)]);
    std::fs::create_dir(files.path("dir.json")).unwrap();
    let listing = || {
        let mut names: Vec<String> = std::fs::read_dir(files.path(""))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let before = listing();
    for (memory, says) in [
        (files.path("missing/m.json"), "No such file or directory"),
        (
            format!("{}/m.json", files.path("config.toml")),
            "Not a directory",
        ),
        (files.path("dir.json"), "is a directory"),
        (
            files.path("full.json"),
            "the turn counter is at its maximum (18446744073709551615)",
        ),
    ] {
        let run = ask(&files, &memory);
        assert_one_line_error(&run, 2, says);
        assert!(run.stderr.contains(&memory), "{}", run.stderr);
        assert!(run.stdout.is_empty(), "{}", run.stdout);
    }
    let mut after = listing();
    // The full file's lock sidecar is the one thing a run on a writable directory keeps.
    after.retain(|name| name != "full.json.lock");
    assert_eq!(after, before, "no junk left");
    assert_eq!(
        std::fs::read_to_string(files.path("full.json")).unwrap(),
        full
    );
}
