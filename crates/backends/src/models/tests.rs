//! Unit tests of the model table, lookups, cost and the pre-flight estimate.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;

use super::*;
use crate::{Message, Role};

#[track_caller]
fn check_normalize(id: &str, expected: &str) {
    assert_eq!(normalize(id), expected, "normalize({id:?})");
}

#[test]
fn normalize_strips_vendor_variant_date_and_latest() {
    check_normalize("google/gemini-2.5-flash", "gemini-2-5-flash");
    check_normalize("models/gemini-2.5-flash", "gemini-2-5-flash");
    check_normalize("claude-sonnet-4-5-20250929", "claude-sonnet-4-5");
    check_normalize("anthropic/claude-sonnet-4.5", "claude-sonnet-4-5");
    check_normalize("claude-opus-4-1@20250805", "claude-opus-4-1");
    check_normalize("gpt-5-2025-08-07", "gpt-5");
    check_normalize("GPT-5.1", "gpt-5-1");
    check_normalize("x-ai/grok-4.1-fast:free", "grok-4-1-fast");
    check_normalize("gemini-2.5-flash-latest", "gemini-2-5-flash");
    // Not dates: kept.
    check_normalize("qwen/qwen-2.5-7b-instruct", "qwen-2-5-7b-instruct");
    check_normalize("model-12345678", "model-12345678");
    check_normalize(
        "gemini-2.5-flash-preview-09-2025",
        "gemini-2-5-flash-preview-09-2025",
    );
    check_normalize("", "");
}

#[track_caller]
fn check_find(table: &ModelTable, query: &str, expected: Option<(&str, &str)>) {
    let found = table
        .find(query)
        .map(|m| (m.provider.as_str(), m.id.as_str()));
    assert_eq!(found, expected, "find({query:?})");
}

#[test]
fn find_exact_then_lenient() {
    let table = ModelTable::builtin();
    check_find(
        &table,
        "google/gemini-2.5-flash",
        Some(("openrouter", "google/gemini-2.5-flash")),
    );
    check_find(
        &table,
        "gemini-2.5-flash",
        Some(("gemini", "gemini-2.5-flash")),
    );
    check_find(
        &table,
        "models/gemini-2.5-flash",
        Some(("openrouter", "google/gemini-2.5-flash")),
    );
    check_find(
        &table,
        "claude-sonnet-4-5-20250929",
        Some(("anthropic", "claude-sonnet-4-5")),
    );
    check_find(
        &table,
        "anthropic/claude-sonnet-4.5-20250929:beta",
        Some(("openrouter", "anthropic/claude-sonnet-4.5")),
    );
    check_find(&table, "gpt-5-2025-08-07", Some(("openai", "gpt-5")));
    check_find(
        &table,
        "openai/gpt-5.1",
        Some(("openrouter", "openai/gpt-5.1")),
    );
    check_find(
        &table,
        "x-ai/grok-4.1-fast:free",
        Some(("openrouter", "x-ai/grok-4.1-fast")),
    );
    // Only OpenRouter knows Grok: the unprefixed id still finds it.
    check_find(
        &table,
        "grok-4.1-fast",
        Some(("openrouter", "x-ai/grok-4.1-fast")),
    );
    check_find(&table, "no-such-model", None);
    check_find(&table, "gpt-5-pico", None);
}

#[test]
fn find_for_stays_with_the_provider() {
    let table = ModelTable::builtin();
    let id = |m: Option<&ModelInfo>| m.map(|m| m.id.clone());
    assert_eq!(
        id(table.find_for("anthropic", "anthropic/claude-sonnet-4.5")),
        Some("claude-sonnet-4-5".into())
    );
    assert_eq!(
        id(table.find_for("openrouter", "claude-sonnet-4-5-20250929")),
        Some("anthropic/claude-sonnet-4.5".into())
    );
    assert_eq!(id(table.find_for("openai", "gemini-2.5-flash")), None);
    assert_eq!(
        id(table.get_for("gemini", "gemini-2.5-pro")),
        Some("gemini-2.5-pro".into())
    );
}

#[test]
fn builtin_covers_the_design_models() {
    let table = ModelTable::builtin();
    for id in [
        "google/gemini-2.5-flash",
        "anthropic/claude-sonnet-4.5",
        "anthropic/claude-opus-4.1",
        "anthropic/claude-opus-4.5",
        "openai/gpt-5",
        "openai/gpt-5.1",
        "x-ai/grok-4.1-fast",
        "meta-llama/llama-4-maverick",
        "moonshotai/kimi-k2",
        "qwen/qwen-2.5-7b-instruct",
        "gpt-5",
        "claude-sonnet-4-5",
        "gemini-2.5-flash",
        "gemini-2.5-pro",
    ] {
        let model = table.get(id).unwrap_or_else(|| panic!("{id} is built in"));
        assert!(model.context_window.is_some(), "{id} has a window");
        assert!(
            model.price.input.is_some() && model.price.output.is_some(),
            "{id} has prices"
        );
    }
    // Keys are unique.
    let mut keys: Vec<_> = table.iter().map(|m| (&m.provider, &m.id)).collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), table.len());
}

#[test]
fn with_replaces_same_provider_and_id() {
    let table = ModelTable::builtin();
    let n = table.len();
    let table = table
        .with(ModelInfo::new("gpt-5", "openai").with_price(1.0, 2.0))
        .with(ModelInfo::new("gpt-5", "azure").with_context_window(10));
    assert_eq!(table.len(), n + 1);
    assert_eq!(
        table.get_for("openai", "gpt-5").unwrap().price.input,
        Some(1.0)
    );
    assert_eq!(
        table.get_for("openai", "gpt-5").unwrap().context_window,
        None
    );
    assert_eq!(
        table.get_for("azure", "gpt-5").unwrap().context_window,
        Some(10)
    );
    // The first inserted wins an id several providers share.
    assert_eq!(table.get("gpt-5").unwrap().provider, "openai");
}

#[test]
fn loads_from_json() {
    let list = json!([
        {"id": "llama3", "provider": "local", "context_window": 8192, "price": {"input": 0.0, "output": 0.0}},
        {"id": "mystery", "provider": "local"}
    ]);
    let table = ModelTable::from_json(&list).unwrap();
    assert_eq!(table.len(), 2);
    let llama = table.get("llama3").unwrap();
    assert_eq!(llama.context_window, Some(8192));
    assert_eq!(llama.price.cached_input, None);
    assert!(!llama.tools);
    assert_eq!(
        table.get("mystery").unwrap(),
        &ModelInfo::new("mystery", "local")
    );

    let object = json!({"models": [{"id": "gpt-5", "provider": "openai", "schema_dialect": "open_ai_strict"}]});
    let table = ModelTable::builtin().extend_from_json(&object).unwrap();
    let gpt5 = table.get_for("openai", "gpt-5").unwrap();
    assert_eq!(gpt5.schema_dialect, Some(SchemaDialect::OpenAiStrict));
    assert_eq!(
        gpt5.price.input, None,
        "the loaded entry replaces the built-in one"
    );

    assert!(ModelTable::from_json(&json!({"id": "x"})).is_err());
    assert!(ModelTable::from_json(&json!([{"provider": "p"}])).is_err());
}

#[test]
fn round_trips_through_json() {
    let table = ModelTable::builtin();
    let json = serde_json::to_value(table.iter().collect::<Vec<_>>()).unwrap();
    assert_eq!(ModelTable::from_json(&json).unwrap(), table);
}

#[test]
fn capabilities_follow_the_table() {
    let table = ModelTable::builtin();
    let flash = table.get("gemini-2.5-flash").unwrap().capabilities();
    assert!(flash.native_json_schema && flash.tools);
    assert_eq!(flash.schema_dialect, Some(SchemaDialect::Gemini));
    assert_eq!(flash.context_window, Some(1_048_576));
    let qwen = table
        .get("qwen/qwen-2.5-7b-instruct")
        .unwrap()
        .capabilities();
    assert!(!qwen.native_json_schema);
    assert_eq!(qwen.schema_dialect, None);
}

#[track_caller]
fn check_cost(model: &str, usage: Usage, expected: Option<f64>) {
    let table = ModelTable::builtin();
    let got = table.cost(&usage, model);
    match (got, expected) {
        (Some(got), Some(want)) => assert!((got - want).abs() < 1e-12, "{model}: {got} != {want}"),
        (got, want) => assert_eq!(got, want, "{model}"),
    }
}

fn usage(input: u64, cached: u64, output: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        cached_tokens: cached,
        ..Usage::default()
    }
}

#[test]
fn cost_by_hand() {
    // 8,000 uncached x $0.30 + 2,000 cached x $0.03 + 1,000 out x $2.50 = $0.0024 + $0.00006 + $0.0025.
    check_cost(
        "google/gemini-2.5-flash",
        usage(10_000, 2_000, 1_000),
        Some(0.00496),
    );
    // 1,000 x $15 + 500 x $75 = $0.015 + $0.0375.
    check_cost("claude-opus-4-1", usage(1_000, 0, 500), Some(0.0525));
    // 3,000 uncached x $3 + 1,000 cached x $0.30 + 2,000 out x $15 = $0.009 + $0.0003 + $0.03.
    check_cost(
        "claude-sonnet-4-5-20250929",
        usage(4_000, 1_000, 2_000),
        Some(0.0393),
    );
    // No cached price: cached input is billed as input. 1,000 x $0.50 + 100 x $2.40.
    check_cost("moonshotai/kimi-k2", usage(1_000, 400, 100), Some(0.00074));
    // Reasoning tokens are output tokens: no extra charge. 1M x $1.25 + 10k x $10.
    let mut reasoning = usage(1_000_000, 0, 10_000);
    reasoning.reasoning_tokens = 8_000;
    check_cost("gpt-5", reasoning, Some(1.35));
    // More cached than input (a provider quirk) is capped at the input.
    check_cost("gpt-5", usage(1_000, 5_000, 0), Some(0.000125));
    check_cost("no-such-model", usage(1, 0, 1), None);
}

#[test]
fn cost_needs_input_and_output_prices() {
    let model = ModelInfo::new("m", "p");
    assert_eq!(cost(&usage(10, 0, 10), &model), None);
    let model = model.with_price(1.0, 2.0);
    assert_eq!(cost(&usage(1_000_000, 0, 1_000_000), &model), Some(3.0));
    let mut half = model.clone();
    half.price.output = None;
    assert_eq!(cost(&usage(10, 0, 10), &half), None);
}

#[test]
fn reported_cost_is_kept() {
    let table = ModelTable::builtin();
    let reported = Usage {
        cost_usd: Some(0.123),
        ..usage(1_000_000, 0, 0)
    };
    assert_eq!(
        reported.with_cost_from(&table, "openai/gpt-5").cost_usd,
        Some(0.123)
    );
    let computed = usage(1_000_000, 0, 0).with_cost_from(&table, "openai/gpt-5");
    assert_eq!(computed.cost_usd, Some(1.25));
    let unknown = usage(1_000_000, 0, 0).with_cost_from(&table, "mystery");
    assert_eq!(unknown.cost_usd, None);
}

#[track_caller]
fn check_text(text: &str, expected: u32) {
    assert_eq!(estimate_text(text), expected, "estimate_text({text:?})");
}

#[test]
fn estimate_text_by_kind_of_character() {
    check_text("", 0);
    check_text("hello", 2); // 5 / 3.5
    check_text("hello world", 4); // 10 / 3.5 + 1 / 3.5
    check_text("12345", 3); // ceil(5 / 3) + 1
    check_text("a1b2c3", 4); // 6 / 1.5
    check_text("{}", 1); // 2 x 0.5
    check_text("你好", 3); // 2 x 3 bytes / 2
    check_text("👍", 2); // 4 bytes / 2
}

#[test]
fn estimate_tokens_counts_overheads() {
    assert_eq!(estimate_tokens(&ChatRequest::new("m")), REPLY_OVERHEAD);
    let one = ChatRequest::new("m").message(Message::user(""));
    assert_eq!(estimate_tokens(&one), REPLY_OVERHEAD + MESSAGE_OVERHEAD);
    let system = one.clone().system("hello");
    assert_eq!(
        estimate_tokens(&system),
        REPLY_OVERHEAD + 2 * MESSAGE_OVERHEAD + 2
    );
    let structured = one
        .clone()
        .structured("answer", json!({"type": "object"}), true);
    // "answer": 2; {"type":"object"}: 4 letters-words (10 / 3.5) + 7 punctuation (3.5) = 6.36 -> 7.
    assert_eq!(
        estimate_tokens(&structured),
        REPLY_OVERHEAD + MESSAGE_OVERHEAD + STRUCTURED_OVERHEAD + 2 + 7
    );
    let stopped = one.stop("END");
    assert_eq!(
        estimate_tokens(&stopped),
        REPLY_OVERHEAD + MESSAGE_OVERHEAD + 1
    );
}

#[test]
fn estimate_tokens_counts_every_message() {
    let mut request = ChatRequest::new("m");
    for role in [Role::User, Role::Assistant, Role::Tool] {
        request = request.message(Message::new(role, "abcdefg"));
    }
    assert_eq!(
        estimate_tokens(&request),
        REPLY_OVERHEAD + 3 * (MESSAGE_OVERHEAD + 2)
    );
}

fn small_model() -> ModelInfo {
    ModelInfo::new("small", "local").with_context_window(100)
}

#[test]
fn preflight_passes_what_fits() {
    let table = ModelTable::empty().with(small_model());
    let request = ChatRequest::new("small")
        .message(Message::user("hello"))
        .max_tokens(50);
    assert_eq!(preflight(&request, &table), Ok(()));
    // Unknown models pass.
    assert_eq!(
        preflight(&ChatRequest::new("other").max_tokens(u32::MAX), &table),
        Ok(())
    );
}

#[test]
fn preflight_reserves_max_tokens() {
    let table = ModelTable::empty().with(small_model());
    // 3 + 4 + 2 = 9 estimated; 9 + 92 > 100.
    let request = ChatRequest::new("small")
        .message(Message::user("hello"))
        .max_tokens(92);
    let err = preflight(&request, &table).unwrap_err();
    assert_eq!(
        err.to_string(),
        "local: context length exceeded: estimated 9 prompt tokens + 92 reserved for output exceed \
         the 100-token context window of small (pre-flight check, nothing was sent)"
    );
    assert!(!err.is_retryable());
    assert_eq!(preflight(&request.max_tokens(91), &table), Ok(()));
}

#[test]
fn preflight_checks_the_input_limit() {
    let table = ModelTable::builtin();
    let big = "word ".repeat(250_000); // 250k x (4 / 3.5 + 1 / 3.5) = 357,143 estimated
    let request = ChatRequest::new("gpt-5").message(Message::user(big));
    let err = preflight(&request, &table).unwrap_err();
    assert!(
        matches!(err, Error::ContextLengthExceeded { .. }),
        "{err:?}"
    );
    assert_eq!(err.context().provider, "openai");
    assert!(
        err.to_string()
            .contains("272000-token input limit of gpt-5"),
        "{err}"
    );
    // Gemini's window takes it.
    let request =
        ChatRequest::new("gemini-2.5-flash").message(Message::user("word ".repeat(250_000)));
    assert_eq!(preflight(&request, &table), Ok(()));
}

#[test]
fn preflight_check_is_per_provider() {
    let table = ModelTable::builtin().with(ModelInfo::new("tiny", "local").with_context_window(10));
    let check = table.preflight_check("local");
    let request = ChatRequest::new("tiny").message(Message::user("a sentence that is too long"));
    let err = check(&request).unwrap_err();
    assert_eq!(err.context().provider, "local");
    // The OpenRouter check does not know `tiny`, nor does it use Anthropic's 200k window for Sonnet.
    let openrouter = table.preflight_check("openrouter");
    assert_eq!(openrouter(&request), Ok(()));
    let sonnet = ChatRequest::new("anthropic/claude-sonnet-4.5")
        .message(Message::user("word ".repeat(200_000)));
    assert_eq!(openrouter(&sonnet), Ok(()));
    let anthropic = table.preflight_check("anthropic");
    let mut direct = sonnet;
    direct.model = "claude-sonnet-4-5".into();
    assert!(anthropic(&direct).is_err());
}
