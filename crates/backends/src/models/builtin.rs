//! The built-in model table, with where every figure came from: windows, limits and capabilities
//! here, prices in the built-in price list (`data/prices.json`, [`PriceList::builtin`], whose
//! entries name their own sources and dates).
//!
//! Windows and limits are tokens. A figure no source gave is `None`. Sources (none of these
//! machines can reach a provider, so each was read from a stored copy):
//!
//! - **OR**: OpenRouter's `GET /api/v1/models` response as captured in the public repository
//!   tombeckenham/ai-tom, `scripts/openrouter.models.ts` (commit a19b247, 2026-01-19; newest model in it
//!   created 2026-01-09): `context_length` (or `top_provider.context_length` where smaller),
//!   `top_provider.max_completion_tokens`, and `supported_parameters` (`structured_outputs`,
//!   `tools`).
//! - **GP**: pydantic/genai-prices `prices/providers/{openai,anthropic,google}.yml` (snapshot of
//!   2026-08-21): `context_window`.
//! - **LL**: LiteLLM's `model_prices_and_context_window.json` as synced in Wei-Shaw/model-price-repo
//!   (commit f9ff147, 2026-07-24): `max_input_tokens`, `max_output_tokens`.

#[cfg(doc)]
use super::PriceList;
use crate::SchemaDialect;

use super::ModelInfo;

/// Every built-in model, without prices (the built-in price list adds them).
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
            .with_max_output_tokens(65_535),
        // OR.
        or("google/gemini-2.5-pro")
            .with_context_window(1_048_576)
            .with_max_output_tokens(65_536),
        // OR (1M window on OpenRouter; 200k at Anthropic without the long-context beta).
        or("anthropic/claude-sonnet-4.5")
            .with_context_window(1_000_000)
            .with_max_output_tokens(64_000),
        // OR.
        or("anthropic/claude-opus-4.1")
            .with_context_window(200_000)
            .with_max_output_tokens(32_000),
        // OR. The current Opus.
        or("anthropic/claude-opus-4.5")
            .with_context_window(200_000)
            .with_max_output_tokens(64_000),
        // OR; the 272k input limit is OpenAI's (LL), which OpenRouter forwards to.
        or("openai/gpt-5")
            .with_rejects_temperature(true)
            .with_context_window(400_000)
            .with_max_input_tokens(272_000)
            .with_max_output_tokens(128_000),
        // OR; input limit as for GPT-5 (LL).
        or("openai/gpt-5.1")
            .with_rejects_temperature(true)
            .with_context_window(400_000)
            .with_max_input_tokens(272_000)
            .with_max_output_tokens(128_000),
        // OR.
        or("x-ai/grok-4.1-fast")
            .with_context_window(2_000_000)
            .with_max_output_tokens(30_000),
        // OR.
        or("meta-llama/llama-4-maverick")
            .with_context_window(1_048_576)
            .with_max_output_tokens(16_384),
        // OR; no output limit listed.
        or("moonshotai/kimi-k2").with_context_window(131_072),
        // OR: the model takes 131,072 but the top provider serves 32,768, the window requests
        // actually meet (the design's run overflowed it). No `structured_outputs` or
        // `response_format` in its parameters: the schema goes in the prompt.
        ModelInfo::new("qwen/qwen-2.5-7b-instruct", "openrouter")
            .with_tools(true)
            .with_context_window(32_768),
    ]
}

/// OpenAI ids.
fn openai() -> Vec<ModelInfo> {
    let openai = |id: &str| {
        ModelInfo::new(id, "openai")
            .with_schema_dialect(SchemaDialect::OpenAiStrict)
            .with_strict_tools(SchemaDialect::OpenAiStrict)
    };
    // GPT-5 is a reasoning model: no `temperature` (OpenAI's reasoning guide).
    let gpt5 = |id: &str| {
        openai(id)
            .with_rejects_temperature(true)
            .with_context_window(400_000)
            .with_max_input_tokens(272_000)
            .with_max_output_tokens(128_000)
    };
    vec![
        // Window GP, limits LL.
        gpt5("gpt-5"),
        // As gpt-5.
        gpt5("gpt-5.1"),
        // As gpt-5.
        gpt5("gpt-5-mini"),
        // Window GP; output limit LL.
        openai("gpt-4o-mini")
            .with_context_window(128_000)
            .with_max_output_tokens(16_384),
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
        // Limits LL.
        claude("claude-sonnet-4-5", 64_000),
        // Limits LL.
        claude("claude-opus-4-1", 32_000),
        // Limits LL.
        claude("claude-opus-4-5", 64_000),
        // Limits LL.
        claude("claude-haiku-4-5", 64_000),
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
        // Limits LL.
        gemini("gemini-2.5-flash"),
        // Limits LL.
        gemini("gemini-2.5-pro"),
        // Limits LL.
        gemini("gemini-2.5-flash-lite"),
    ]
}
