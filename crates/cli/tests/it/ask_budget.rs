//! `claij ask --budget-usd` on OpenAI, Anthropic and Gemini: agent runs against a mock of each
//! provider whose replies call the `now` tool natively with the usage the provider's example body
//! recorded (`fixtures/providers/examples`). Each call is priced from the built-in table (the
//! providers report no cost), the run stops before the call that would cross the budget, and the
//! `--json` report carries each call's cost and the total; a model without a price is refused
//! before any request, naming the key that sets one.

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::{Files, Run, claij_env};

use super::openrouter::fixtures;

const OPENAI_KEY: &str = "sk-budget-openai-0123456789";
const ANTHROPIC_KEY: &str = "sk-ant-budget-0123456789";
const GEMINI_KEY: &str = "AIza-budget-0123456789";

/// A provider's example body from `fixtures/providers/examples`.
fn example(name: &str) -> Value {
    fixtures::json(&format!("fixtures/providers/examples/{name}.json"))["body"].clone()
}

/// OpenAI's `Functions` example (82 prompt, 17 completion tokens), its call made `now`.
fn openai_calls_now() -> Value {
    let mut body = example("openai-2");
    let call = &mut body["choices"][0]["message"]["tool_calls"][0]["function"];
    call["name"] = json!("now");
    call["arguments"] = json!("{}");
    body
}

/// Anthropic's full Message example (2,095 input tokens, 2,051 written to the cache, 2,051 read
/// from it, 503 output), its content the `tool_use` block of the `tools` example, calling `now`.
fn anthropic_calls_now() -> Value {
    let mut body = example("anthropic-1");
    let mut call = example("anthropic-3")[0].clone();
    call["name"] = json!("now");
    call["input"] = json!({});
    body["content"] = json!([call]);
    body["stop_reason"] = json!("tool_use");
    body["stop_details"] = Value::Null;
    body
}

/// A recorded Gemini response (405 prompt, 14 candidates tokens), its part a call of `now`.
fn gemini_calls_now() -> Value {
    let mut body = example("gemini-1");
    body["candidates"][0]["content"]["parts"] =
        json!([{"functionCall": {"name": "now", "args": {}}}]);
    body
}

/// A provider the test runs against: its `--llm`, where its mock answers, what it answers, and
/// the variable of its key.
struct Provider {
    llm: &'static str,
    route: &'static str,
    body: fn() -> Value,
    key: (&'static str, &'static str),
}

const OPENAI: Provider = Provider {
    llm: "openai:gpt-4o-mini",
    route: "/v1/chat/completions",
    body: openai_calls_now,
    key: ("OPENAI_API_KEY", OPENAI_KEY),
};

const ANTHROPIC: Provider = Provider {
    llm: "anthropic:claude-opus-4-6",
    route: "/v1/messages",
    body: anthropic_calls_now,
    key: ("ANTHROPIC_API_KEY", ANTHROPIC_KEY),
};

const GEMINI: Provider = Provider {
    llm: "gemini:gemini-2.0-flash",
    route: "/v1beta/models/gemini-2.0-flash:generateContent",
    body: gemini_calls_now,
    key: ("GEMINI_API_KEY", GEMINI_KEY),
};

/// A configuration pointing the three providers at `server`, with `extra` after.
fn config(server: &MockServer, extra: &str) -> String {
    let uri = server.uri();
    format!(
        "[providers.openai]\nbase_url = \"{uri}/v1\"\n\n[providers.anthropic]\nbase_url = \"{uri}/v1\"\n\n\
         [providers.gemini]\nbase_url = \"{uri}/v1beta\"\n\n{extra}"
    )
}

/// A mock answering every call at `provider.route` with the provider's tool call.
async fn mock(provider: &Provider) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(provider.route))
        .respond_with(ResponseTemplate::new(200).set_body_json((provider.body)()))
        .mount(&server)
        .await;
    server
}

/// `claij ask --llm LLM --interceptors tools ARGS --json`, the configuration `config`.
fn ask(provider: &Provider, config: &str, args: &[&str]) -> Run {
    let files = Files::new(&[("config.toml", config)]);
    let path = files.path("config.toml");
    let mut all = vec![
        "ask",
        "What time is it?",
        "--llm",
        provider.llm,
        "--interceptors",
        "tools",
    ];
    all.extend_from_slice(args);
    let run = claij_env(
        &all,
        "",
        &[
            ("CLAIJ_CONFIG", Some(path.as_str())),
            (provider.key.0, Some(provider.key.1)),
        ],
    );
    assert!(!run.stdout.contains(provider.key.1) && !run.stderr.contains(provider.key.1));
    run
}

/// The `--json` report of a run the budget stopped (exit 1).
#[track_caller]
fn stopped(run: &Run) -> Value {
    assert_eq!(run.code, 1, "{}", run.stderr);
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stdout))
}

/// Each attempt's `cost_usd` in the report.
fn costs(report: &Value) -> Vec<f64> {
    report["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            a["cost_usd"]
                .as_f64()
                .unwrap_or_else(|| panic!("no cost: {a}"))
        })
        .collect()
}

#[track_caller]
fn close(got: f64, want: f64) {
    assert!((got - want).abs() < 1e-12, "{got} != {want}");
}

/// What the report says about the bound: the limit, what was spent, the refused call's estimate;
/// and that the refused call would have crossed the bound while what was spent did not.
#[track_caller]
fn over_the_cost_bound(report: &Value, limit: f64) -> (f64, f64) {
    let over = &report["budget_exceeded"];
    assert_eq!(over["budget"], "max_cost_usd", "{report}");
    assert_eq!(over["limit"], limit);
    let used = over["used"].as_f64().unwrap();
    let estimate = over["next_call_estimate"].as_f64().unwrap();
    assert!(used <= limit && used + estimate > limit, "{over}");
    (used, estimate)
}

#[tokio::test]
async fn openai_stops_before_the_call_that_would_cross_the_budget() {
    let server = mock(&OPENAI).await;
    // gpt-4o-mini, the example's model: the first call's prompt alone, at $0.15 per million
    // input tokens, would cross $0.0001: nothing is sent.
    let run = ask(
        &OPENAI,
        &config(&server, ""),
        &["--budget-usd", "0.0001", "--json"],
    );
    let report = stopped(&run);
    assert_eq!(costs(&report), Vec::<f64>::new());
    assert_eq!(report["cost_usd"], 0.0);
    let (used, estimate) = over_the_cost_bound(&report, 0.0001);
    assert_eq!(used, 0.0);
    assert!(estimate > 0.0001, "{report}");
    assert!(server.received_requests().await.unwrap().is_empty());

    // gpt-5-nano: calls are made while what they cost (82 x $0.05 + 17 x $0.40 per million
    // each) and the next one's estimate (its prompt, and the 17 tokens the earlier calls wrote)
    // fit; the one that would cross is not sent.
    let nano = Provider {
        llm: "openai:gpt-5-nano",
        ..OPENAI
    };
    let run = ask(
        &nano,
        &config(&server, ""),
        &["--budget-usd", "0.0001", "--json"],
    );
    let report = stopped(&run);
    let one = (82.0 * 0.05 + 17.0 * 0.40) / 1e6;
    let paid = costs(&report);
    assert!(paid.len() > 1, "{report}");
    for cost in &paid {
        close(*cost, one);
    }
    let total: f64 = paid.iter().sum();
    close(report["cost_usd"].as_f64().unwrap(), total);
    let (used, _) = over_the_cost_bound(&report, 0.0001);
    close(used, total);
    assert_eq!(server.received_requests().await.unwrap().len(), paid.len());
}

#[tokio::test]
async fn gemini_stops_before_the_call_that_would_cross_the_budget() {
    let server = mock(&GEMINI).await;
    let run = ask(
        &GEMINI,
        &config(&server, ""),
        &["--budget-usd", "0.0001", "--json"],
    );
    let report = stopped(&run);
    // 405 x $0.10 + 14 x $0.40 per million a call.
    let one = (405.0 * 0.10 + 14.0 * 0.40) / 1e6;
    let paid = costs(&report);
    assert!(!paid.is_empty(), "{report}");
    for cost in &paid {
        close(*cost, one);
    }
    let total = one * paid.len() as f64;
    close(report["cost_usd"].as_f64().unwrap(), total);
    let (used, _) = over_the_cost_bound(&report, 0.0001);
    close(used, total);
    assert_eq!(server.received_requests().await.unwrap().len(), paid.len());
}

#[tokio::test]
async fn anthropic_stops_before_the_call_that_would_cross_the_budget() {
    let server = mock(&ANTHROPIC).await;
    // At $5 per million input tokens, the first call's prompt alone would cross $0.0001:
    // nothing is sent.
    let run = ask(
        &ANTHROPIC,
        &config(&server, ""),
        &["--budget-usd", "0.0001", "--json"],
    );
    let report = stopped(&run);
    assert_eq!(costs(&report), Vec::<f64>::new());
    let (used, estimate) = over_the_cost_bound(&report, 0.0001);
    assert_eq!(used, 0.0);
    assert!(estimate > 0.0001, "{report}");
    assert!(server.received_requests().await.unwrap().is_empty());

    // With room for one call: it is priced with its cache writes and reads apart, and the second,
    // whose estimate counts the 503 tokens the first wrote, is not sent.
    let run = ask(
        &ANTHROPIC,
        &config(&server, ""),
        &["--budget-usd", "0.04", "--json"],
    );
    let report = stopped(&run);
    let one = (2_095.0 * 5.0 + 2_051.0 * 6.25 + 2_051.0 * 0.50 + 503.0 * 25.0) / 1e6;
    let paid = costs(&report);
    assert_eq!(paid.len(), 1, "{report}");
    close(paid[0], one);
    assert_eq!(report["attempts"][0]["usage"]["cache_write_tokens"], 2_051);
    let (used, _) = over_the_cost_bound(&report, 0.04);
    close(used, one);
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn the_line_says_the_bound_and_the_estimate() {
    let server = mock(&GEMINI).await;
    let run = ask(&GEMINI, &config(&server, ""), &["--budget-usd", "0.0001"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let last = run.stderr.lines().last().unwrap();
    assert!(
        last.starts_with("no answer within the agent run's max_cost_usd budget ($0.0000")
            && last.contains(" of $0.0001 used; the next call, estimated at $")
            && last.ends_with(", would cross it)"),
        "{}",
        run.stderr
    );
    // Each attempt's line carries its cost.
    assert!(run.stderr.contains("attempt 1: valid"), "{}", run.stderr);
    assert!(run.stderr.contains(", $0.000046"), "{}", run.stderr);
}

#[tokio::test]
async fn a_model_without_a_price_is_refused_naming_the_key() {
    let server = MockServer::start().await;
    let run = ask(
        &Provider {
            llm: "openai:gpt-9",
            ..OPENAI
        },
        &config(&server, ""),
        &["--budget-usd", "0.0001"],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("--budget-usd: no price is known for openai:gpt-9")
            && run
                .stderr
                .contains(r#"set [models."openai:gpt-9"] price = { input = USD, output = USD }"#)
            && run.stderr.contains("claij models prices --import FILE"),
        "{}",
        run.stderr
    );
    assert!(server.received_requests().await.unwrap().is_empty());
    // Without a budget the same model runs (its cost unknown, said so).
    let answer = json!({"choices": [{"index": 0, "message": {"role": "assistant",
        "content": "{\"answer\": \"noon\", \"state\": \"answered\"}"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 5}});
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(answer))
        .mount(&server)
        .await;
    let files = Files::new(&[("config.toml", &config(&server, ""))]);
    let cfg = files.path("config.toml");
    let run = claij_env(
        &["ask", "What time is it?", "--llm", "openai:gpt-9", "--json"],
        "",
        &[
            ("CLAIJ_CONFIG", Some(cfg.as_str())),
            ("OPENAI_API_KEY", Some(OPENAI_KEY)),
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["cost_usd"], Value::Null, "{report}");
    assert_eq!(report["attempts"][0]["cost_usd"], Value::Null, "{report}");
}

#[tokio::test]
async fn the_configurations_price_sets_the_cost_and_the_budget() {
    let server = mock(&OPENAI).await;
    // A price for the unknown model: $100 per million input tokens, no output price given is an
    // error; with one, the first call's prompt alone crosses $0.0001.
    let bad = config(
        &server,
        "[models.\"openai:gpt-9\"]\nprice = { input = 100 }\n",
    );
    let run = ask(
        &Provider {
            llm: "openai:gpt-9",
            ..OPENAI
        },
        &bad,
        &["--budget-usd", "1"],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains(r#"models.openai:gpt-9.price: a price needs input and output"#),
        "{}",
        run.stderr
    );
    // The configuration over the built-in price: gpt-4o-mini at $1 and $2 per million.
    let set = config(
        &server,
        "[models.\"openai:gpt-4o-mini\"]\nprice = { input = 1, output = 2 }\n",
    );
    let run = ask(&OPENAI, &set, &["--budget-usd", "0.002", "--json"]);
    let report = stopped(&run);
    let paid = costs(&report);
    assert!(!paid.is_empty(), "{report}");
    close(paid[0], (82.0 * 1.0 + 17.0 * 2.0) / 1e6);
}
