//! `claij ask --max-steps N` / `--budget-usd X`: an agent run, against a mock OpenRouter (the
//! OpenAI wire, native tool calls): the model calls `now`, sees its result within the run and
//! answers; a budget that runs out ends the run with exit 1, naming the bound.

use serde_json::{Value, json};
use wiremock::matchers::{body_partial_json, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::openrouter::{CHAT, completion, config, reply};
use super::{Files, Run, claij_env};

const KEY: &str = "sk-or-v1-agent-secret-0123456789";

/// A completion calling `now` natively, costing `cost` US dollars.
fn calls_now(cost: f64) -> ResponseTemplate {
    let mut body = completion("");
    body["choices"][0]["message"] = json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "now", "arguments": "{}"}}]});
    body["choices"][0]["finish_reason"] = json!("tool_calls");
    body["usage"]["cost"] = json!(cost);
    ResponseTemplate::new(200).set_body_json(body)
}

fn ask(server: &MockServer, args: &[&str]) -> Run {
    let files = Files::new(&[("config.toml", &config(server))]);
    let config = files.path("config.toml");
    let mut all = vec![
        "ask",
        "What time is it?",
        "--llm",
        "gemini-flash",
        "--interceptors",
        "tools",
    ];
    all.extend_from_slice(args);
    let run = claij_env(
        &all,
        "",
        &[
            ("CLAIJ_CONFIG", Some(config.as_str())),
            ("OPENROUTER_API_KEY", Some(KEY)),
        ],
    );
    assert!(!run.stdout.contains(KEY) && !run.stderr.contains(KEY));
    run
}

#[tokio::test]
async fn the_model_sees_the_result_within_the_run() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(calls_now(0.0))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(
            &json!({"answer": "It is past two.", "state": "answered"}).to_string(),
        ))
        .expect(1)
        .mount(&server)
        .await;
    let run = ask(&server, &["--max-steps", "3", "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["value"]["answer"], "It is past two.");
    let ran = report["tool_results"].as_array().unwrap();
    assert_eq!(ran.len(), 1, "{report}");
    assert_eq!(ran[0]["name"], "now");
    let time = ran[0]["output"].as_str().unwrap();
    // The second step carried the call and its result, as a tool message.
    let requests = server.received_requests().await.unwrap();
    let second: Value = serde_json::from_slice(&requests[1].body).unwrap();
    let messages = second["messages"].as_array().unwrap();
    let result = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap_or_else(|| panic!("a tool message: {second}"));
    assert_eq!(result["tool_call_id"], "call_1");
    assert!(
        result["content"].as_str().unwrap().contains(time),
        "{second}"
    );
    // The tools went natively.
    let first: Value = serde_json::from_slice(&requests[0].body).unwrap();
    assert_eq!(first["tools"][0]["function"]["name"], "now", "{first}");
}

#[track_caller]
fn check_over(run: &Run, says: &str) {
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    assert_eq!(run.stderr.lines().last(), Some(says), "{}", run.stderr);
}

#[tokio::test]
async fn a_budget_that_runs_out_is_named() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(calls_now(0.01))
        .expect(4)
        .mount(&server)
        .await;
    let steps = ask(&server, &["--max-steps", "1"]);
    check_over(
        &steps,
        "no answer within the agent run's max_steps budget (1 of 1 used)",
    );
    let cost = ask(&server, &["--budget-usd", "0.015"]);
    check_over(
        &cost,
        "no answer within the agent run's max_cost_usd budget (0.02 of 0.015 used)",
    );
    let json = ask(&server, &["--max-steps", "1", "--json"]);
    assert_eq!(json.code, 1, "{}", json.stderr);
    let report: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(report["value"], Value::Null);
    assert_eq!(
        report["budget_exceeded"],
        json!({"budget": "max_steps", "limit": 1.0, "used": 1.0})
    );
}

#[test]
fn budgets_are_checked_when_parsed_and_not_with_consensus() {
    let server_less =
        "[providers.mylocal]\nkind = \"openai-compatible\"\nbase_url = \"http://127.0.0.1:9/v1\"\n";
    let files = Files::new(&[("config.toml", server_less)]);
    let config = files.path("config.toml");
    for (args, says) in [
        (
            vec!["--max-steps", "0"],
            "invalid value '0' for '--max-steps <N>': expected a whole number from 1 to 1000",
        ),
        (
            vec!["--budget-usd", "0"],
            "expected US dollars, above 0 and at most 1000000",
        ),
        (
            vec![
                "--llm",
                "mylocal:a,mylocal:b",
                "--consensus",
                "majority",
                "--max-steps",
                "2",
            ],
            "error: --max-steps and --budget-usd bound one model's agent run, --consensus asks several models once each: drop one",
        ),
    ] {
        let mut all = vec!["ask", "Hi"];
        all.extend_from_slice(&args);
        let run = claij_env(&all, "", &[("CLAIJ_CONFIG", Some(config.as_str()))]);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(says), "{args:?}: {}", run.stderr);
    }
}

/// `chat` goes on after a turn whose budget ran out, and says which.
#[tokio::test]
async fn chat_says_when_a_turn_ran_out_of_budget() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(calls_now(0.0))
        .expect(2)
        .mount(&server)
        .await;
    let files = Files::new(&[("config.toml", &config(&server))]);
    let config = files.path("config.toml");
    let run = claij_env(
        &[
            "chat",
            "--llm",
            "gemini-flash",
            "--interceptors",
            "tools",
            "--max-steps",
            "1",
        ],
        "What time is it?\nAnd now?\n",
        &[
            ("CLAIJ_CONFIG", Some(config.as_str())),
            ("OPENROUTER_API_KEY", Some(KEY)),
        ],
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    let says = "  (no answer within the agent run's max_steps budget (1 of 1 used); ask again, or allow more)";
    assert_eq!(
        run.stderr.lines().filter(|l| *l == says).count(),
        2,
        "{}",
        run.stderr
    );
}

/// Server-sent events (the OpenAI wire): `deltas` one chunk each, then the finish reason and
/// `[DONE]`.
fn sse(deltas: &[Value], finish: &str) -> ResponseTemplate {
    let mut body = String::new();
    for delta in deltas {
        let chunk = json!({"id": "c1", "model": "google/gemini-2.5-flash", "choices": [
            {"index": 0, "delta": delta, "finish_reason": null}]});
        body.push_str(&format!("data: {chunk}\n\n"));
    }
    let done = json!({"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
                      "usage": {"prompt_tokens": 12, "completion_tokens": 9}});
    body.push_str(&format!("data: {done}\n\ndata: [DONE]\n\n"));
    ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

/// `--max-steps N --stream`: each step streams; the answer's partial values come before the final
/// value, and the `now` call's arguments are none of them.
#[tokio::test]
async fn an_agent_run_streams_its_steps() {
    let server = MockServer::start().await;
    let call = json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
        "function": {"name": "now", "arguments": "{}"}}]});
    Mock::given(method("POST"))
        .and(path(CHAT))
        .and(body_partial_json(json!({"stream": true})))
        .respond_with(sse(&[call], "tool_calls"))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    let answer = r#"{"answer": "It is past two o'clock.", "state": "answered"}"#;
    // The first piece has some of the answer: a partial `{}` could only be the call's arguments.
    let (head, rest) = answer.split_at(16);
    let pieces: Vec<Value> = std::iter::once(head.as_bytes())
        .chain(rest.as_bytes().chunks(8))
        .map(|piece| json!({"content": String::from_utf8_lossy(piece)}))
        .collect();
    Mock::given(method("POST"))
        .and(path(CHAT))
        .and(body_partial_json(json!({"stream": true})))
        .respond_with(sse(&pieces, "stop"))
        .expect(1)
        .mount(&server)
        .await;
    let run = ask(&server, &["--max-steps", "3", "--stream"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mut lines: Vec<Value> = run
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(
        lines.pop(),
        Some(json!({"value": {"answer": "It is past two o'clock.", "state": "answered"}})),
        "ends with the final value: {}",
        run.stdout
    );
    let values: Vec<Value> = lines.iter().map(|line| line["partial"].clone()).collect();
    assert!(values.len() >= 2, "{}", run.stdout);
    assert!(
        values
            .iter()
            .all(|v| v["answer"].as_str().is_some_and(|a| !a.is_empty())),
        "{}",
        run.stdout
    );
    assert!(run.stderr.contains("tool now {}: ok: "), "{}", run.stderr);
}

/// `--tool-results-budget` bounds what the model sees of a result within the run, and the result
/// says it was cut.
#[tokio::test]
async fn the_results_budget_cuts_results_within_the_run() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(calls_now(0.0))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(
            &json!({"answer": "It is past two.", "state": "answered"}).to_string(),
        ))
        .expect(1)
        .mount(&server)
        .await;
    let run = ask(
        &server,
        &["--max-steps", "3", "--tool-results-budget", "10", "--json"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let requests = server.received_requests().await.unwrap();
    let second: Value = serde_json::from_slice(&requests[1].body).unwrap();
    let result = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap_or_else(|| panic!("a tool message: {second}"));
    let content = result["content"].as_str().unwrap();
    assert!(
        content.contains("… [cut: the tool-results budget shows 10 of its "),
        "{content}"
    );
    assert_eq!(
        content.split('…').next().unwrap().chars().count(),
        10,
        "{content}"
    );
}
