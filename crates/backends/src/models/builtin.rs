//! The built-in model table, with where every figure came from.
//!
//! Prices are USD per million tokens; windows and limits are tokens. A figure no source gave is
//! `None`. Sources (none of these machines can reach a provider, so each was read from a stored copy):
//!
//! - **OR**: OpenRouter's `GET /api/v1/models` response as captured in the public repository
//!   tombeckenham/ai-tom, `scripts/openrouter.models.ts` (commit a19b247, 2026-01-19; newest model in it
//!   created 2026-01-09): `context_length` (or `top_provider.context_length` where smaller),
//!   `top_provider.max_completion_tokens`, `pricing.{prompt, completion, input_cache_read}`, and
//!   `supported_parameters` (`structured_outputs`, `tools`).
//! - **GP**: pydantic/genai-prices `prices/providers/{openai,anthropic,google}.yml` (snapshot of
//!   2026-08-21), each entry's `prices_checked` date given below.
//! - **AP**: Anthropic's pricing page, platform.claude.com/docs/en/about-claude/pricing, as stored
//!   for the search tool (read 2026-11-26): Opus 4.5 $5/$25 (cache hits $0.50), Opus 4.1 $15/$75
//!   ($1.50); agrees with GP.
//! - **LL**: LiteLLM's `model_prices_and_context_window.json` as synced in Wei-Shaw/model-price-repo
//!   (commit f9ff147, 2026-07-24): `max_input_tokens`, `max_output_tokens`.
//!
//! Tiered prices (Gemini 2.5 Pro and Claude Sonnet 4.5 charge more for prompts over 200k tokens) are
//! recorded at their base tier, so long prompts on those models cost more than the table says.

use crate::SchemaDialect;

use super::ModelInfo;

/// Every built-in model.
pub(super) fn models() -> Vec<ModelInfo> {
    let mut models = openrouter();
    models.extend(openai());
    models.extend(anthropic());
    models.extend(gemini());
    models
}

/// OpenRouter ids (`vendor/model`); structured output goes through OpenAI's `response_format`.
fn openrouter() -> Vec<ModelInfo> {
    let or = |id: &str| {
        ModelInfo::new(id, "openrouter")
            .with_schema_dialect(SchemaDialect::OpenAiStrict)
            .with_strict_tools(SchemaDialect::OpenAiStrict)
    };
    vec![
        // OR. The design's default.
        or("google/gemini-2.5-flash")
            .with_context_window(1_048_576)
            .with_max_output_tokens(65_535)
            .with_price(0.30, 2.50)
            .with_cached_input_price(0.03),
        // OR.
        or("google/gemini-2.5-pro")
            .with_context_window(1_048_576)
            .with_max_output_tokens(65_536)
            .with_price(1.25, 10.0)
            .with_cached_input_price(0.125),
        // OR (1M window on OpenRouter; 200k at Anthropic without the long-context beta).
        or("anthropic/claude-sonnet-4.5")
            .with_context_window(1_000_000)
            .with_max_output_tokens(64_000)
            .with_price(3.0, 15.0)
            .with_cached_input_price(0.30),
        // OR.
        or("anthropic/claude-opus-4.1")
            .with_context_window(200_000)
            .with_max_output_tokens(32_000)
            .with_price(15.0, 75.0)
            .with_cached_input_price(1.50),
        // OR. The current Opus.
        or("anthropic/claude-opus-4.5")
            .with_context_window(200_000)
            .with_max_output_tokens(64_000)
            .with_price(5.0, 25.0)
            .with_cached_input_price(0.50),
        // OR; the 272k input limit is OpenAI's (LL), which OpenRouter forwards to.
        or("openai/gpt-5")
            .with_context_window(400_000)
            .with_max_input_tokens(272_000)
            .with_max_output_tokens(128_000)
            .with_price(1.25, 10.0)
            .with_cached_input_price(0.125),
        // OR; input limit as for GPT-5 (LL).
        or("openai/gpt-5.1")
            .with_context_window(400_000)
            .with_max_input_tokens(272_000)
            .with_max_output_tokens(128_000)
            .with_price(1.25, 10.0)
            .with_cached_input_price(0.125),
        // OR.
        or("x-ai/grok-4.1-fast")
            .with_context_window(2_000_000)
            .with_max_output_tokens(30_000)
            .with_price(0.20, 0.50)
            .with_cached_input_price(0.05),
        // OR; no cache price listed.
        or("meta-llama/llama-4-maverick")
            .with_context_window(1_048_576)
            .with_max_output_tokens(16_384)
            .with_price(0.15, 0.60),
        // OR; no output limit or cache price listed.
        or("moonshotai/kimi-k2")
            .with_context_window(131_072)
            .with_price(0.50, 2.40),
        // OR: the model takes 131,072 but the top provider serves 32,768, the window requests
        // actually meet (the design's run overflowed it). No `structured_outputs` or
        // `response_format` in its parameters: the schema goes in the prompt.
        ModelInfo::new("qwen/qwen-2.5-7b-instruct", "openrouter")
            .with_tools(true)
            .with_context_window(32_768)
            .with_price(0.04, 0.10),
    ]
}

/// OpenAI ids.
fn openai() -> Vec<ModelInfo> {
    let openai = |id: &str| {
        ModelInfo::new(id, "openai")
            .with_schema_dialect(SchemaDialect::OpenAiStrict)
            .with_strict_tools(SchemaDialect::OpenAiStrict)
    };
    let gpt5 = |id: &str| {
        openai(id)
            .with_context_window(400_000)
            .with_max_input_tokens(272_000)
            .with_max_output_tokens(128_000)
    };
    vec![
        // Prices GP (prices_checked 2025-11-13); window GP, limits LL.
        gpt5("gpt-5")
            .with_price(1.25, 10.0)
            .with_cached_input_price(0.125),
        // As gpt-5.
        gpt5("gpt-5.1")
            .with_price(1.25, 10.0)
            .with_cached_input_price(0.125),
        // As gpt-5.
        gpt5("gpt-5-mini")
            .with_price(0.25, 2.0)
            .with_cached_input_price(0.025),
        // Prices and window GP (prices_checked 2025-07-04); output limit LL.
        openai("gpt-4o-mini")
            .with_context_window(128_000)
            .with_max_output_tokens(16_384)
            .with_price(0.15, 0.60)
            .with_cached_input_price(0.075),
    ]
}

/// Anthropic ids. Windows are the standard 200k (Sonnet 4.5 reaches 1M only with a beta header).
fn anthropic() -> Vec<ModelInfo> {
    let claude = |id: &str, max_output: u32| {
        ModelInfo::new(id, "anthropic")
            .with_schema_dialect(SchemaDialect::Anthropic)
            .with_strict_tools(SchemaDialect::Anthropic)
            .with_context_window(200_000)
            .with_max_output_tokens(max_output)
    };
    vec![
        // Prices GP (prices_checked 2026-07-29, base tier) and AP; limits LL.
        claude("claude-sonnet-4-5", 64_000)
            .with_price(3.0, 15.0)
            .with_cached_input_price(0.30),
        // Prices GP and AP; limits LL.
        claude("claude-opus-4-1", 32_000)
            .with_price(15.0, 75.0)
            .with_cached_input_price(1.50),
        // Prices GP and AP; limits LL.
        claude("claude-opus-4-5", 64_000)
            .with_price(5.0, 25.0)
            .with_cached_input_price(0.50),
        // Prices GP; limits LL.
        claude("claude-haiku-4-5", 64_000)
            .with_price(1.0, 5.0)
            .with_cached_input_price(0.10),
    ]
}

/// Gemini API ids.
fn gemini() -> Vec<ModelInfo> {
    let gemini = |id: &str| {
        ModelInfo::new(id, "gemini")
            .with_schema_dialect(SchemaDialect::Gemini)
            .with_tools(true)
            .with_context_window(1_048_576)
            .with_max_output_tokens(65_535)
    };
    vec![
        // Prices GP (prices_checked 2025-10-31, text); limits LL.
        gemini("gemini-2.5-flash")
            .with_price(0.30, 2.50)
            .with_cached_input_price(0.03),
        // Prices GP (prices_checked 2025-10-31, prompts up to 200k); limits LL.
        gemini("gemini-2.5-pro")
            .with_price(1.25, 10.0)
            .with_cached_input_price(0.125),
        // Prices GP (prices_checked 2025-10-31); limits LL.
        gemini("gemini-2.5-flash-lite")
            .with_price(0.10, 0.40)
            .with_cached_input_price(0.01),
    ]
}
