//! Tests of an agent run's cost budget: every model call (a retry's too) is estimated before it is
//! sent, the run stops before the call that would cross the bound, what was spent is the backend's
//! cost or the usage at the budget's price, and a cost bound without a price sends nothing; and the
//! same on the wire, through the OpenAI, Anthropic and Gemini backends with their example usage.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use claij_backends::models::{Tier, estimate_tokens};
use claij_backends::{ChatResponse, Price, Usage};
use claij_interceptors::builtin::tools::Tools;
use claij_interceptors::{Budget, BudgetKind, Chain, Config, Context, Error, Pipeline};
use claij_test_support::Scripted;
use serde_json::json;

const CALL: &str =
    r#"{"answer": "", "state": "s", "tools": [{"name": "weather", "args": {"city": "Oslo"}}]}"#;
const ANSWER: &str = r#"{"answer": "It is sunny in Oslo.", "state": "done"}"#;

fn weather(runs: &Arc<AtomicUsize>) -> Tools {
    let runs = Arc::clone(runs);
    Tools::new()
        .register(
            "weather",
            "Today's weather in a city.",
            json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
            move |_| {
                runs.fetch_add(1, Ordering::SeqCst);
                async move { Ok(json!("sunny")) }
            },
        )
        .unwrap()
}

/// A reply with this usage and no reported cost (as every provider but OpenRouter).
fn used(text: &str, input: u64, output: u64) -> Result<ChatResponse, claij_backends::Error> {
    Ok(ChatResponse::text(text).usage(Usage {
        input_tokens: input,
        output_tokens: output,
        ..Usage::default()
    }))
}

fn pipeline(backend: &Scripted, config: Config, runs: &Arc<AtomicUsize>) -> Pipeline {
    let tools = weather(runs);
    Pipeline::new(
        Arc::new(backend.clone()),
        config,
        Chain::new().with(tools.clone()),
    )
    .with_tools(tools.executor())
}

/// $1 per million tokens in, $4 out: a call of 1,000 in and 100 out costs $0.0014.
fn price() -> Price {
    Price::new(1.0, 4.0)
}

fn budget(usd: f64) -> Budget {
    Budget::default()
        .with_max_cost_usd(usd)
        .with_price(Some(price()))
}

#[tokio::test]
async fn the_run_stops_before_the_call_that_would_cross_the_bound() {
    let backend = Scripted::new([
        used(CALL, 1_000, 100),
        used(CALL, 1_000, 100),
        used(CALL, 1_000, 100),
        used(ANSWER, 1_000, 100),
    ]);
    let runs = Arc::new(AtomicUsize::new(0));
    let p = pipeline(&backend, Config::new("m"), &runs);
    // Two calls cost $0.0028; the first call's estimate (its prompt, no output known yet) fits
    // well within $0.0035, the third's (the prompt plus the 100 tokens the earlier calls wrote)
    // would cross it.
    let err = p
        .run_agent(&mut Context::default(), "Weather?", &budget(0.0035))
        .await
        .unwrap_err();
    let Error::BudgetExceeded {
        budget: BudgetKind::CostUsd,
        limit,
        used: spent,
        estimate: Some(estimate),
        ref attempts,
    } = err
    else {
        panic!("{err}")
    };
    assert_eq!(backend.calls(), 2, "the third call was not sent");
    assert_eq!(attempts.len(), 2);
    assert_eq!(runs.load(Ordering::SeqCst), 2, "both steps' tools ran");
    assert_eq!(limit, 0.0035);
    // What was spent: the usage at the budget's price (the backend reported no cost).
    assert!((spent - 0.0028).abs() < 1e-12, "{spent}");
    assert!(
        spent + estimate > limit && spent < limit,
        "{spent} + {estimate}"
    );
    // The estimate: the prompt as estimate_tokens counts it (at least the second request's, which
    // the third one extends) and the earlier calls' 100 output tokens.
    let second = &backend.requests()[1];
    let floor = price()
        .estimate(u64::from(estimate_tokens(second)), 100)
        .unwrap();
    assert!(estimate > floor, "{estimate} <= {floor}");
    assert!(
        err.to_string().contains("next call was estimated at"),
        "{err}"
    );
}

#[tokio::test]
async fn a_retry_is_estimated_before_it_is_sent() {
    // The first reply is invalid (no `state`): the retry would cost more than is left.
    let backend = Scripted::new([
        used(r#"{"answer": "x"}"#, 1_000, 500),
        used(ANSWER, 1_000, 500),
    ]);
    let runs = Arc::new(AtomicUsize::new(0));
    let p = pipeline(&backend, Config::new("m"), &runs);
    // Spent after the first attempt: $0.003; the retry's estimate is over $0.003 (its prompt and
    // 500 output tokens).
    let err = p
        .run_agent(&mut Context::default(), "Weather?", &budget(0.005))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::BudgetExceeded { budget: BudgetKind::CostUsd, attempts, .. } if attempts.len() == 1),
        "{err}"
    );
    assert_eq!(backend.calls(), 1, "the retry was not sent");
}

#[tokio::test]
async fn max_tokens_is_the_output_estimate() {
    let backend = Scripted::new([used(ANSWER, 10, 10)]);
    let runs = Arc::new(AtomicUsize::new(0));
    let mut config = Config::new("m");
    config.max_tokens = Some(10_000);
    // 10,000 output tokens at $4 a million: $0.04, over the bound before anything is sent.
    let err = pipeline(&backend, config, &runs)
        .run_agent(&mut Context::default(), "Weather?", &budget(0.03))
        .await
        .unwrap_err();
    let Error::BudgetExceeded {
        used: 0.0,
        estimate: Some(estimate),
        ..
    } = err
    else {
        panic!("{err}")
    };
    assert!(estimate > 0.04, "{estimate}");
    assert_eq!(backend.calls(), 0);

    // Without max_tokens the first call is estimated at its prompt alone, and goes.
    let p = pipeline(&backend, Config::new("m"), &runs);
    let run = p
        .run_agent(&mut Context::default(), "Weather?", &budget(0.03))
        .await
        .unwrap();
    assert_eq!(run.answer.value["state"], "done");
}

#[tokio::test]
async fn a_reported_cost_counts_over_the_price() {
    // The backend reports $0.01 a call; at the budget's price the usage would cost $0.000004.
    let reported = |text: &str| {
        Ok(ChatResponse::text(text).usage(Usage {
            input_tokens: 1,
            output_tokens: 1,
            cost_usd: Some(0.01),
            ..Usage::default()
        }))
    };
    let backend = Scripted::new([reported(CALL), reported(CALL), reported(ANSWER)]);
    let runs = Arc::new(AtomicUsize::new(0));
    let err = pipeline(&backend, Config::new("m"), &runs)
        .run_agent(&mut Context::default(), "Weather?", &budget(0.015))
        .await
        .unwrap_err();
    let Error::BudgetExceeded { used: spent, .. } = err else {
        panic!("{err}")
    };
    assert!((spent - 0.02).abs() < 1e-12, "{spent}");
    assert_eq!(backend.calls(), 2);
}

#[tokio::test]
async fn a_cost_bound_without_a_price_sends_nothing() {
    let backend = Scripted::new([used(ANSWER, 1, 1)]).with_provider("openai");
    let runs = Arc::new(AtomicUsize::new(0));
    let p = pipeline(&backend, Config::new("gpt-9"), &runs);
    for price in [None, Some(Price::default())] {
        let budget = Budget::default().with_max_cost_usd(1.0).with_price(price);
        let err = p
            .run_agent(&mut Context::default(), "Weather?", &budget)
            .await
            .unwrap_err();
        assert!(
            matches!(&err, Error::Unpriced { provider, model } if provider == "openai" && model == "gpt-9"),
            "{err}"
        );
        assert!(
            err.to_string().contains("no price for openai:gpt-9"),
            "{err}"
        );
    }
    assert_eq!(backend.calls(), 0);
    // Without a cost bound no price is needed.
    let run = p
        .run_agent(&mut Context::default(), "Weather?", &Budget::default())
        .await
        .unwrap();
    assert_eq!(run.steps, 1);
}

#[tokio::test]
async fn the_estimate_prices_a_long_prompt_at_its_tier() {
    // Above 100 input tokens everything costs 1,000 times more: the prompt crosses it.
    let tiered = Price::new(1.0, 4.0).with_tier(Tier::above(100, 1_000.0, 4_000.0));
    let backend = Scripted::new([used(ANSWER, 10, 10)]);
    let runs = Arc::new(AtomicUsize::new(0));
    let p = pipeline(&backend, Config::new("m"), &runs);
    let long = Budget::default()
        .with_max_cost_usd(0.01)
        .with_price(Some(tiered));
    let err = p
        .run_agent(&mut Context::default(), "Weather?", &long)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::BudgetExceeded { .. }), "{err}");
    assert_eq!(backend.calls(), 0);
    // At the base price the same prompt fits.
    let run = p
        .run_agent(&mut Context::default(), "Weather?", &budget(0.01))
        .await
        .unwrap();
    assert_eq!(run.steps, 1);
}

// On the wire: agent runs through each provider's HTTP backend against a mock answering with the
// provider's example body (`fixtures/providers/examples`), its recorded usage, calling a tool on
// every step. The backend prices each call from the built-in table (no provider here reports a
// cost), the budget takes the same table's price, and the run stops before the call that would
// cross $0.0001.

#[path = "../../../../fixtures/fixture.rs"]
mod fixtures;

mod on_the_wire {
    use std::sync::Arc;
    use std::time::Duration;

    use claij_backends::{
        Anthropic, ApiKey, Backend, Gemini, HttpConfig, ModelTable, OpenAi, RetryPolicy,
    };
    use claij_interceptors::builtin::tools::Tools;
    use claij_interceptors::{Budget, BudgetKind, Chain, Config, Context, Error, Pipeline};
    use serde_json::{Value, json};
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    use super::fixtures;

    fn example(name: &str) -> Value {
        fixtures::json(&format!("fixtures/providers/examples/{name}.json"))["body"].clone()
    }

    fn now() -> Tools {
        Tools::new()
            .register(
                "now",
                "The time now.",
                json!({"type": "object", "properties": {}}),
                |_| async { Ok(json!("12:00")) },
            )
            .unwrap()
    }

    async fn served(route: &str, body: Value) -> MockServer {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path(route))
            .respond_with(ResponseTemplate::new(200).set_body_json(body))
            .mount(&server)
            .await;
        server
    }

    fn config(server: &MockServer, suffix: &str) -> HttpConfig {
        HttpConfig::new(format!("{}{suffix}", server.uri()))
            .with_retry(RetryPolicy::none())
            .with_request_timeout(Duration::from_secs(10))
    }

    /// Runs the agent on `backend` under `limit` at the built-in price of `provider:model`; checks
    /// each call cost `one` (the backend's figure, in each attempt), the run stopped before the
    /// call that would cross the bound, and nothing was sent after; returns the calls made.
    async fn run(
        backend: Arc<dyn Backend>,
        server: &MockServer,
        provider: &str,
        model: &str,
        limit: f64,
        one: f64,
    ) -> usize {
        let price = ModelTable::builtin().price_for(provider, model).cloned();
        assert!(price.is_some(), "{provider}:{model} has a built-in price");
        let budget = Budget::default().with_max_cost_usd(limit).with_price(price);
        let now = now();
        let pipeline = Pipeline::new(backend, Config::new(model), Chain::new().with(now.clone()))
            .with_tools(now.executor());
        let err = pipeline
            .run_agent(&mut Context::default(), "What time is it?", &budget)
            .await
            .unwrap_err();
        let Error::BudgetExceeded {
            budget: BudgetKind::CostUsd,
            limit: bound,
            used,
            estimate: Some(estimate),
            ref attempts,
        } = err
        else {
            panic!("{err}")
        };
        assert_eq!(bound, limit);
        for attempt in attempts {
            let cost = attempt.usage.cost_usd.expect("the backend priced the call");
            assert!((cost - one).abs() < 1e-12, "{cost} != {one}");
        }
        let spent = one * attempts.len() as f64;
        assert!((used - spent).abs() < 1e-12, "{used} != {spent}");
        assert!(
            used <= limit && used + estimate > limit,
            "{used} + {estimate}"
        );
        let sent = server.received_requests().await.unwrap().len();
        assert_eq!(sent, attempts.len(), "no call sent after the stop");
        sent
    }

    #[tokio::test]
    async fn openai() {
        // openai-2 (82 prompt, 17 completion tokens), its call made `now`; gpt-5-nano at $0.05
        // and $0.40 per million.
        let mut body = example("openai-2");
        let call = &mut body["choices"][0]["message"]["tool_calls"][0]["function"];
        call["name"] = json!("now");
        call["arguments"] = json!("{}");
        let server = served("/v1/chat/completions", body).await;
        let backend = OpenAi::new(ApiKey::new("sk-test")).with_config(config(&server, "/v1"));
        let one = (82.0 * 0.05 + 17.0 * 0.40) / 1e6;
        let calls = run(
            Arc::new(backend),
            &server,
            "openai",
            "gpt-5-nano",
            0.0001,
            one,
        )
        .await;
        assert!(calls > 1, "{calls}");
    }

    #[tokio::test]
    async fn anthropic() {
        // anthropic-1's usage (2,095 input, 2,051 written to the cache, 2,051 read, 503 output),
        // its content the tools example's `tool_use` block calling `now`; claude-3-haiku at $0.25
        // input, $0.30 cache writes, $0.03 cache reads, $1.25 output per million.
        let mut body = example("anthropic-1");
        let mut call = example("anthropic-3")[0].clone();
        call["name"] = json!("now");
        call["input"] = json!({});
        body["content"] = json!([call]);
        body["stop_reason"] = json!("tool_use");
        body["stop_details"] = Value::Null;
        let server = served("/v1/messages", body).await;
        let backend =
            Anthropic::new(ApiKey::new("sk-ant-test")).with_config(config(&server, "/v1"));
        let one = (2_095.0 * 0.25 + 2_051.0 * 0.30 + 2_051.0 * 0.03 + 503.0 * 1.25) / 1e6;
        // Under $0.004 two calls fit ($0.00183 each, the second's estimate counting the 503
        // tokens the first wrote); the third would cross it.
        let calls = run(
            Arc::new(backend),
            &server,
            "anthropic",
            "claude-3-haiku",
            0.004,
            one,
        )
        .await;
        assert_eq!(calls, 2);
    }

    #[tokio::test]
    async fn gemini() {
        // gemini-1 (405 prompt, 14 candidates tokens), its part a call of `now`; gemini-2.0-flash
        // at $0.10 and $0.40 per million.
        let mut body = example("gemini-1");
        body["candidates"][0]["content"]["parts"] =
            json!([{"functionCall": {"name": "now", "args": {}}}]);
        let server = served("/v1beta/models/gemini-2.0-flash:generateContent", body).await;
        let backend = Gemini::new(ApiKey::new("AIza-test")).with_config(config(&server, "/v1beta"));
        let one = (405.0 * 0.10 + 14.0 * 0.40) / 1e6;
        let calls = run(
            Arc::new(backend),
            &server,
            "gemini",
            "gemini-2.0-flash",
            0.0001,
            one,
        )
        .await;
        assert_eq!(calls, 1, "the second call's estimate would cross $0.0001");
    }
}
