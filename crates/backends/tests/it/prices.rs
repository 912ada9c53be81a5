//! Prices: the built-in list, the two public formats it imports (the hand-written lists of
//! `fixtures/prices`), malformed lists, precedence, and every HTTP backend pricing its responses
//! from the recorded usage of `fixtures/providers/examples`.

use std::time::Duration;

use claij_backends::models::{PriceFormat, PriceList, Tier};
use claij_backends::{
    Anthropic, ApiKey, Assembler, Backend, ChatRequest, Gemini, HttpConfig, Message, ModelTable,
    OpenAi, OpenRouter, Price, RetryPolicy, Usage,
};
use futures_util::StreamExt as _;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::fixtures;

const TODAY: &str = "2026-12-06";

#[track_caller]
fn close(got: Option<f64>, want: f64) {
    let got = got.unwrap_or_else(|| panic!("no figure, expected {want}"));
    assert!((got - want).abs() < 1e-12, "{got} != {want}");
}

fn imported(file: &str, format: PriceFormat) -> claij_backends::models::Imported {
    let json = fixtures::json(&format!("fixtures/prices/{file}"));
    assert_eq!(PriceFormat::detect(&json), Some(format));
    PriceList::import(&json, format, TODAY, file).unwrap()
}

fn entry<'a>(list: &'a PriceList, provider: &str, id: &str) -> &'a Price {
    &list
        .models
        .iter()
        .find(|e| e.provider == provider && e.id == id)
        .unwrap_or_else(|| panic!("{provider}:{id} in {:?}", list.models))
        .price
}

#[test]
fn the_builtin_list_is_valid_dated_and_sourced() {
    let json = fixtures::json("crates/backends/data/prices.json");
    let list = PriceList::from_json(&json).unwrap();
    assert_eq!(list, PriceList::builtin());
    assert!(!list.models.is_empty());
    for entry in &list.models {
        let key = entry.price.source.as_deref().unwrap();
        assert!(list.sources.contains_key(key), "{}: {key}", entry.id);
        assert!(entry.price.is_known(), "{}", entry.id);
        assert!(
            entry.price.checked.is_some() || key == "LOCAL",
            "{} has no date",
            entry.id
        );
    }
    // Every model of the built-in table has a price, with its date and source spelled out.
    let table = ModelTable::builtin();
    for model in table.iter().filter(|m| !m.id.starts_with('*')) {
        let price = table.price_for(&model.provider, &model.id).unwrap();
        assert!(price.source.as_deref().unwrap().len() > 20, "{}", model.id);
    }
}

#[test]
fn genai_prices_import() {
    let imported = imported("genai-prices.json", PriceFormat::GenaiPrices);
    let list = &imported.list;
    assert_eq!(imported.skipped, 0);
    assert_eq!(list.date, TODAY);
    let haiku = entry(list, "anthropic", "claude-haiku-4-5");
    assert_eq!(
        (
            haiku.input,
            haiku.cache_write,
            haiku.cached_input,
            haiku.output
        ),
        (Some(1.0), Some(1.25), Some(0.1), Some(5.0))
    );
    assert_eq!(haiku.checked.as_deref(), Some(TODAY));
    assert_eq!(
        list.sources[haiku.source.as_deref().unwrap()],
        "genai-prices.json"
    );
    // Tiers: every figure at its tier.
    let sonnet = entry(list, "anthropic", "claude-sonnet-4-5");
    let tier = Tier::above(200_000, 6.0, 22.5)
        .with_cached_input(0.6)
        .with_cache_write(7.5);
    assert_eq!(sonnet.tiers, [tier]);
    // Conditional prices: the last in force today (not the one of 2099).
    let opus = entry(list, "anthropic", "claude-opus-4-6");
    assert_eq!(
        (opus.input, opus.output, opus.tiers.len()),
        (Some(5.0), Some(25.0), 0)
    );
    let earlier = PriceList::import(
        &fixtures::json("fixtures/prices/genai-prices.json"),
        PriceFormat::GenaiPrices,
        "2026-01-01",
        "f",
    )
    .unwrap();
    assert_eq!(
        entry(&earlier.list, "anthropic", "claude-opus-4-6")
            .tiers
            .len(),
        1
    );
    // google is gemini; a price left out is 0 (embeddings write nothing); audio is not read.
    let pro = entry(list, "gemini", "gemini-2.5-pro");
    assert_eq!(
        (pro.input, pro.cached_input, pro.output),
        (Some(1.25), Some(0.125), Some(10.0))
    );
    assert_eq!(
        entry(list, "gemini", "text-embedding-004").output,
        Some(0.0)
    );
    // A time-of-day price is never in force: the unconstrained one is.
    assert_eq!(entry(list, "deepseek", "deepseek-chat").input, Some(0.27));
    // `{}`: free.
    let free = entry(list, "openrouter", "moonshotai/kimi-k2:free");
    assert_eq!((free.input, free.output), (Some(0.0), Some(0.0)));
}

#[test]
fn litellm_import() {
    let imported = imported("litellm.json", PriceFormat::LiteLlm);
    let list = &imported.list;
    // The embedding model and the image model are not chat models.
    assert_eq!(imported.skipped, 2);
    assert_eq!(list.models.len(), 6, "{:?}", list.models);
    let mini = entry(list, "openai", "gpt-4o-mini");
    assert_eq!(
        (mini.input, mini.cached_input, mini.output, mini.tiers.len()),
        (Some(0.15), Some(0.075), Some(0.6), 0),
        "batch and priority prices are not read"
    );
    assert_eq!(entry(list, "openai", "o3-mini").reasoning, Some(4.4));
    let sonnet = entry(list, "anthropic", "claude-sonnet-4-5");
    assert_eq!(
        sonnet.cache_write,
        Some(3.75),
        "the 1-hour write price is not read"
    );
    assert_eq!(
        sonnet.tiers,
        [Tier::above(200_000, 6.0, 22.5)
            .with_cached_input(0.6)
            .with_cache_write(7.5)]
    );
    // The provider prefix goes.
    assert_eq!(
        entry(list, "gemini", "gemini-2.5-pro").tiers[0].output,
        Some(15.0)
    );
    assert_eq!(
        entry(list, "openrouter", "google/gemini-2.5-flash").output,
        Some(2.5)
    );
    assert_eq!(entry(list, "ollama", "llama3").input, Some(0.0));
}

#[test]
fn an_imported_list_round_trips_in_claijs_format() {
    for (file, format) in [
        ("genai-prices.json", PriceFormat::GenaiPrices),
        ("litellm.json", PriceFormat::LiteLlm),
    ] {
        let list = imported(file, format).list;
        let stored = serde_json::to_value(&list).unwrap();
        assert_eq!(PriceFormat::detect(&stored), Some(PriceFormat::Claij));
        assert_eq!(PriceList::from_json(&stored).unwrap(), list, "{file}");
    }
}

#[track_caller]
fn check_malformed(json: Value, format: PriceFormat, pointer: &str, says: &str) {
    let err = PriceList::import(&json, format, TODAY, "f").unwrap_err();
    assert_eq!(err.pointer, pointer, "{err}");
    assert!(err.to_string().contains(says), "{err}");
}

#[test]
fn a_malformed_list_says_where() {
    use PriceFormat::{Claij, GenaiPrices, LiteLlm};
    let model = |prices: Value| json!([{"id": "p", "models": [{"id": "m", "prices": prices}]}]);
    check_malformed(json!({"a": 1}), GenaiPrices, "", "a list of providers");
    check_malformed(json!([{"id": "p"}]), GenaiPrices, "/0/models", "a list");
    check_malformed(
        json!([{"models": []}]),
        GenaiPrices,
        "/0/id",
        "non-empty string",
    );
    check_malformed(
        model(json!({"input_mtok": "cheap"})),
        GenaiPrices,
        "/0/models/0/prices/input_mtok",
        "a number or",
    );
    check_malformed(
        model(json!({"output_mtok": -1})),
        GenaiPrices,
        "/0/models/0/prices/output_mtok",
        "0 or more",
    );
    check_malformed(
        model(json!({"input_mtok": {"base": 1, "tiers": [{"start": "lots", "price": 2}]}})),
        GenaiPrices,
        "/0/models/0/prices/input_mtok/tiers/0/start",
        "whole number",
    );
    check_malformed(
        model(json!([{"constraint": {"start_date": 20260101}, "prices": {}}])),
        GenaiPrices,
        "/0/models/0/prices/0/constraint/start_date",
        "a date",
    );
    check_malformed(json!([1]), LiteLlm, "", "an object of models");
    check_malformed(
        json!({"a/b": {"litellm_provider": "p", "input_cost_per_token": -1e-6, "output_cost_per_token": 1e-6}}),
        LiteLlm,
        "/a~1b/input_cost_per_token",
        "0 or more",
    );
    check_malformed(
        json!({"m": {"input_cost_per_token": 1e-6, "output_cost_per_token": 1e-6}}),
        LiteLlm,
        "/m/litellm_provider",
        "non-empty string",
    );
    check_malformed(json!({"m": [1]}), LiteLlm, "/m", "an object");
    let claij = |entry: Value| json!({"date": TODAY, "sources": {"S": "s"}, "models": [entry]});
    check_malformed(
        claij(json!({"provider": "p", "id": "m", "inptu": 1})),
        Claij,
        "/models/0/inptu",
        "unknown field `inptu`",
    );
    check_malformed(
        claij(json!({"provider": "p", "id": "m", "input": 1})),
        Claij,
        "/models/0",
        "needs input and output",
    );
    check_malformed(
        claij(
            json!({"provider": "p", "id": "m", "input": 1, "output": 1, "tiers": [{"above_input_tokens": 9, "inptu": 2}]}),
        ),
        Claij,
        "/models/0",
        "unknown field `inptu`",
    );
    check_malformed(
        claij(json!({"provider": "p", "id": "m", "input": 1, "output": 1, "source": "X"})),
        Claij,
        "/models/0/source",
        "not one of the list's sources",
    );
    check_malformed(
        claij(json!({"provider": "p", "id": "m", "input": 1, "output": 1,
                     "tiers": [{"above_input_tokens": 9, "input": 2}, {"above_input_tokens": 5, "input": 3}]})),
        Claij,
        "/models/0/tiers/1/above_input_tokens",
        "ascending",
    );
    assert_eq!(PriceFormat::detect(&json!("prices")), None);
    assert_eq!(PriceFormat::detect(&json!({"a": 1})), None);
}

#[test]
fn the_configuration_over_the_import_over_the_builtin() {
    let import = imported("litellm.json", PriceFormat::LiteLlm).list;
    let mut table = ModelTable::builtin().with_prices(&import);
    // The import replaced the built-in price of the same provider and model...
    let mini = table.price_for("openai", "gpt-4o-mini").unwrap();
    assert_eq!(mini.source.as_deref(), Some("litellm.json"));
    // ... and kept the built-in window of that model.
    let model = table.get_for("openai", "gpt-4o-mini").unwrap();
    assert_eq!(model.context_window, Some(128_000));
    // What the configuration sets wins.
    table.set_price("openai", "gpt-4o-mini", Price::new(9.0, 9.0));
    assert_eq!(
        table.price_for("openai", "gpt-4o-mini").unwrap().input,
        Some(9.0)
    );
    // A dated id finds it; a new one is priced with the window of the model it matches.
    assert_eq!(
        table
            .price_for("openai", "gpt-4o-mini-2024-07-18")
            .unwrap()
            .input,
        Some(9.0)
    );
    table.set_price("openai", "gpt-4o-mini-2024-07-18", Price::new(1.0, 1.0));
    let dated = table.get_for("openai", "gpt-4o-mini-2024-07-18").unwrap();
    assert_eq!(
        (dated.price.input, dated.context_window),
        (Some(1.0), Some(128_000))
    );
    assert_eq!(
        table.price_for("openai", "gpt-4o-mini").unwrap().input,
        Some(9.0)
    );
}

#[test]
fn price_lookups_keep_to_the_variant_and_fall_back_to_the_provider() {
    let mut table = ModelTable::builtin();
    // A :free variant is not the paid model.
    assert_eq!(
        table
            .price_for("openrouter", "moonshotai/kimi-k2")
            .unwrap()
            .input,
        Some(0.5)
    );
    assert_eq!(
        table
            .price_for("openrouter", "moonshotai/kimi-k2:free")
            .unwrap()
            .input,
        Some(0.0)
    );
    assert_eq!(
        table
            .price_for("openrouter", "anything/at-all:free")
            .unwrap()
            .output,
        Some(0.0)
    );
    // Other variants of a known model are unknown, not the base model's price.
    assert!(
        table
            .price_for("openrouter", "moonshotai/kimi-k2:nitro")
            .is_none()
    );
    // The embedded model, whatever its file: a real 0.
    let local = table.price_for("local", "SmolLM2-135M-Instruct").unwrap();
    assert_eq!((local.input, local.output), (Some(0.0), Some(0.0)));
    // Another provider's model is not this one's.
    assert!(table.price_for("openai", "gemini-2.5-flash").is_none());
    assert!(table.price_for("mylocal", "llama3").is_none());
    table.set_price("mylocal", "*", Price::new(0.0, 0.0));
    assert_eq!(
        table.price_for("mylocal", "llama3").unwrap().input,
        Some(0.0)
    );
    // A model's own price beats the wildcard.
    table.set_price("mylocal", "big", Price::new(1.0, 2.0));
    assert_eq!(table.price_for("mylocal", "big").unwrap().input, Some(1.0));
}

// Every HTTP backend prices its responses: the recorded usage of each provider's example bodies.

fn no_retry(server: &MockServer, suffix: &str) -> HttpConfig {
    HttpConfig::new(format!("{}{suffix}", server.uri()))
        .with_retry(RetryPolicy::none())
        .with_request_timeout(Duration::from_secs(10))
}

fn example(name: &str) -> Value {
    fixtures::json(&format!("fixtures/providers/examples/{name}.json"))["body"].clone()
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

fn ask(model: &str) -> ChatRequest {
    ChatRequest::new(model).message(Message::user("Hi"))
}

#[tokio::test]
async fn openai_responses_are_priced_from_the_table() {
    // openai-2: 82 prompt tokens, 17 completion tokens.
    let server = served("/v1/chat/completions", example("openai-2")).await;
    let backend = OpenAi::new(ApiKey::new("sk-test")).with_config(no_retry(&server, "/v1"));
    let response = backend.complete(&ask("gpt-4o-mini")).await.unwrap();
    close(response.usage.cost_usd, (82.0 * 0.15 + 17.0 * 0.60) / 1e6);
    // A model without a price keeps an unknown cost, never 0.
    let unknown = backend.complete(&ask("gpt-9")).await.unwrap();
    assert_eq!(unknown.usage.cost_usd, None);
    // Without prices, the provider's figure (none).
    let bare = backend.clone().without_prices();
    assert_eq!(
        bare.complete(&ask("gpt-4o-mini"))
            .await
            .unwrap()
            .usage
            .cost_usd,
        None
    );
    // Another table.
    let mut table = ModelTable::empty();
    table.set_price("openai", "gpt-9", Price::new(1_000_000.0, 0.0));
    let priced = backend.with_prices(&table);
    close(
        priced.complete(&ask("gpt-9")).await.unwrap().usage.cost_usd,
        82.0,
    );
}

#[tokio::test]
async fn anthropic_cache_writes_and_reads_are_priced_apart() {
    // anthropic-1: 2,095 input, 2,051 written to the cache, 2,051 read from it, 503 output.
    let server = served("/v1/messages", example("anthropic-1")).await;
    let backend = Anthropic::new(ApiKey::new("sk-ant-test")).with_config(no_retry(&server, "/v1"));
    let response = backend.complete(&ask("claude-opus-4-6")).await.unwrap();
    let usage = response.usage;
    assert_eq!(
        (
            usage.input_tokens,
            usage.cached_tokens,
            usage.cache_write_tokens
        ),
        (2_095 + 2_051 + 2_051, 2_051, 2_051)
    );
    let want = (2_095.0 * 5.0 + 2_051.0 * 6.25 + 2_051.0 * 0.5 + 503.0 * 25.0) / 1e6;
    close(usage.cost_usd, want);
}

#[tokio::test]
async fn gemini_responses_are_priced_and_long_prompts_at_their_tier() {
    // gemini-1: 405 prompt tokens, 14 candidates tokens.
    let server = served(
        "/v1beta/models/gemini-2.0-flash:generateContent",
        example("gemini-1"),
    )
    .await;
    let backend = Gemini::new(ApiKey::new("AIza-test")).with_config(no_retry(&server, "/v1beta"));
    let response = backend.complete(&ask("gemini-2.0-flash")).await.unwrap();
    close(response.usage.cost_usd, (405.0 * 0.10 + 14.0 * 0.40) / 1e6);
    // Gemini 2.5 Pro above 200k prompt tokens: every token at the long-context price.
    let mut long = example("gemini-1");
    long["usageMetadata"]["promptTokenCount"] = json!(300_000);
    let server = served("/v1beta/models/gemini-2.5-pro:generateContent", long).await;
    let backend = Gemini::new(ApiKey::new("AIza-test")).with_config(no_retry(&server, "/v1beta"));
    let response = backend.complete(&ask("gemini-2.5-pro")).await.unwrap();
    close(
        response.usage.cost_usd,
        (300_000.0 * 2.5 + 14.0 * 15.0) / 1e6,
    );
}

#[tokio::test]
async fn a_reported_cost_wins() {
    let mut body = example("openai-1");
    body["usage"]["cost"] = json!(0.5);
    let server = served("/api/v1/chat/completions", body).await;
    let backend =
        OpenRouter::new(ApiKey::new("sk-or-test")).with_config(no_retry(&server, "/api/v1"));
    let response = backend.complete(&ask("openai/gpt-5")).await.unwrap();
    assert_eq!(response.usage.cost_usd, Some(0.5));
}

#[tokio::test]
async fn a_streams_usage_is_priced_as_it_adds_up() {
    let server = MockServer::start().await;
    let chunk = |choices: Value, usage: Value| {
        format!(
            "data: {}\n\n",
            json!({"id": "c", "model": "gpt-4o-mini", "choices": choices, "usage": usage})
        )
    };
    let mut body = chunk(
        json!([{"index": 0, "delta": {"content": "Hi"}, "finish_reason": "stop"}]),
        Value::Null,
    );
    body.push_str(&chunk(
        json!([]),
        json!({"prompt_tokens": 82, "completion_tokens": 17, "prompt_tokens_details": {"cached_tokens": 80}}),
    ));
    body.push_str("data: [DONE]\n\n");
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(body, "text/event-stream"))
        .mount(&server)
        .await;
    let backend = OpenAi::new(ApiKey::new("sk-test")).with_config(no_retry(&server, "/v1"));
    let request = ask("gpt-4o-mini");
    let mut assembler = Assembler::default();
    let mut events = backend.stream(&request);
    while let Some(event) = events.next().await {
        assembler.push(event.unwrap());
    }
    let usage: Usage = assembler.finish().usage;
    // 2 uncached at $0.15, 80 cached at $0.075, 17 out at $0.60.
    close(
        usage.cost_usd,
        (2.0 * 0.15 + 80.0 * 0.075 + 17.0 * 0.60) / 1e6,
    );
}
