//! Tests: the model table through the public API, and the pre-flight estimate against OpenAI's o200k
//! tokenizer on real prose and JSON.

use std::fmt::Write as _;

use claij_backends::models::{
    InstructionRole, estimate_text, estimate_tokens, instruction_role, preflight,
};
use claij_backends::{
    Capabilities, ChatRequest, Error, Message, ModelInfo, ModelTable, OutputMode, SchemaDialect,
    StructuredOutput, Usage,
};
use serde_json::{Value, json};
use tiktoken_rs::CoreBPE;

/// A file of the repository, `path` from its root; a missing one panics with its full path.
fn read(path: &str) -> String {
    crate::fixtures::text(path)
}

fn o200k() -> CoreBPE {
    tiktoken_rs::o200k_base().unwrap()
}

/// English prose and Markdown from the repository's own documents, JSON (compact and pretty) from the
/// provider fixtures, and text that is hard on a character count: numbers, ids, Chinese.
fn samples() -> Vec<(String, String)> {
    let mut samples = Vec::new();
    for prose in [
        "README.md",
        "ARCHITECTURE.md",
        "docs/compat-matrix.md",
        "fixtures/providers/README.md",
        "crates/validation/tests/corpora/README.md",
    ] {
        samples.push((prose.to_owned(), read(prose)));
    }
    for doc in [
        "fixtures/providers/openai-chat-completions.schema.json",
        "fixtures/providers/examples/anthropic-1.json",
        "fixtures/providers/examples/gemini-1.json",
        "fixtures/providers/examples/openai-1.json",
        "fixtures/providers/examples/openai-3.json",
    ] {
        let value: Value = serde_json::from_str(&read(doc)).unwrap();
        samples.push((format!("{doc} (compact)"), value.to_string()));
        samples.push((
            format!("{doc} (pretty)"),
            serde_json::to_string_pretty(&value).unwrap(),
        ));
    }
    let floats: Vec<f64> = (0..500)
        .map(|i| (f64::from(i) * 1.618).sin() * 1000.0)
        .collect();
    samples.push(("JSON array of floats".into(), json!(floats).to_string()));
    let ids: Vec<String> = (0..200u64)
        .map(|i| format!("{:016x}", i.wrapping_mul(0x9E37_79B9_7F4A_7C15)))
        .collect();
    samples.push(("JSON array of hex ids".into(), json!(ids).to_string()));
    samples.push((
        "Chinese prose".into(),
        "这是一个用于测试分词器的中文句子，包含一些常见的词语和标点符号。".repeat(20),
    ));
    samples
}

#[test]
fn estimate_is_conservative_against_o200k() {
    let bpe = o200k();
    let mut table = String::from("sample | o200k | estimate | ratio\n");
    for (name, text) in samples() {
        let actual = bpe.encode_ordinary(&text).len() as f64;
        let estimate = f64::from(estimate_text(&text));
        let ratio = estimate / actual;
        writeln!(table, "{name} | {actual} | {estimate} | {ratio:.2}").unwrap();
        // Never under the real count, and not wildly over it.
        assert!(
            (1.0..=2.0).contains(&ratio),
            "{name}: estimate {estimate}, o200k {actual}\n{table}"
        );
    }
    // The prose samples are the repository's documents, which change with it: the ratios are the
    // invariant, the table is for reading (`-- --nocapture`), not a snapshot.
    println!("{table}");
}

#[test]
fn request_estimate_covers_every_part() {
    let bpe = o200k();
    let schema: Value =
        serde_json::from_str(&read("fixtures/providers/examples/gemini-2.json")).unwrap();
    let system = read("fixtures/providers/README.md");
    let user = read("ARCHITECTURE.md");
    let request = ChatRequest::new("google/gemini-2.5-flash")
        .system(system.clone())
        .message(Message::user(user.clone()))
        .message(Message::assistant("{\"ok\": true}"))
        .structured("answer", schema.clone(), true);
    let parts = [system, user, "{\"ok\": true}".into(), schema.to_string()];
    let actual: usize = parts.iter().map(|p| bpe.encode_ordinary(p).len()).sum();
    let estimate = estimate_tokens(&request) as usize;
    assert!(estimate > actual, "estimate {estimate}, o200k {actual}");
    assert!(estimate < 2 * actual, "estimate {estimate}, o200k {actual}");
}

#[test]
fn oversized_prompts_fail_before_sending() {
    let table = ModelTable::builtin();
    // About 40k o200k tokens, over Qwen 2.5 7B's 32k window (as in the design's failed run): the
    // architecture document, as many times as that takes.
    let architecture = read("ARCHITECTURE.md");
    let once = o200k().encode_ordinary(&architecture).len();
    let prompt = architecture.repeat(40_000usize.div_ceil(once.max(1)));
    let request = ChatRequest::new("qwen/qwen-2.5-7b-instruct")
        .message(Message::user(prompt.clone()))
        .max_tokens(1000);
    let err = preflight(&request, &table).unwrap_err();
    let Error::ContextLengthExceeded { context, message } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(context.provider, "openrouter");
    assert!(
        message.contains("the 32768-token context window of qwen/qwen-2.5-7b-instruct"),
        "{message}"
    );
    // The same prompt fits Gemini 2.5 Flash.
    let flash = ChatRequest::new("google/gemini-2.5-flash").message(Message::user(prompt));
    assert_eq!(preflight(&flash, &table), Ok(()));
    // And the per-provider check (the HTTP backend's seam) agrees.
    let check = table.preflight_check("openrouter");
    assert!(check(&request).is_err());
    assert_eq!(check(&flash), Ok(()));
}

#[test]
fn users_override_and_extend_the_table() {
    let json = json!({"models": [
        {"id": "llama3.1:8b", "provider": "local", "context_window": 8192, "price": {"input": 0, "output": 0}},
        {"id": "google/gemini-2.5-flash", "provider": "openrouter", "context_window": 1000,
         "price": {"input": 1.0, "output": 2.0}},
    ]});
    let table = ModelTable::builtin()
        .extend_from_json(&json)
        .unwrap()
        .with(ModelInfo::new("my-model", "local").with_price(0.5, 0.5));
    let flash = table.find("google/gemini-2.5-flash").unwrap();
    assert_eq!(flash.context_window, Some(1000));
    let usage = Usage {
        input_tokens: 1_000_000,
        output_tokens: 1_000_000,
        ..Usage::default()
    };
    assert_eq!(table.cost(&usage, "google/gemini-2.5-flash"), Some(3.0));
    assert_eq!(table.cost(&usage, "llama3.1:8b"), Some(0.0));
    assert_eq!(usage.with_cost_from(&table, "my-model").cost_usd, Some(1.0));
}

/// A schema as a user writes it, not strict-compatible: an optional property (`note`), no
/// `additionalProperties`, and a keyword strict dialects drop (`minLength`).
#[cfg_attr(
    not(any(feature = "anthropic", all(feature = "openai", feature = "openrouter"))),
    allow(dead_code, reason = "used by the anthropic and openai tests")
)]
pub(crate) fn loose_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "answer": {"type": "string", "minLength": 1},
            "state": {"type": "string", "enum": ["done", "more"]},
            "note": {"type": "string"}
        },
        "required": ["answer", "state"]
    })
}

/// The tool-mode request the pipeline builds for a model with `capabilities`: [`loose_schema`]
/// compiled to [`Capabilities::schema_target`]'s dialect (as the pipeline's `Prepared::dialect`
/// does), strict as the target says; and what the dialect lost.
#[cfg_attr(
    not(any(feature = "anthropic", all(feature = "openai", feature = "openrouter"))),
    allow(dead_code, reason = "used by the anthropic and openai tests")
)]
pub(crate) fn tool_request(
    capabilities: Capabilities,
    model: &str,
) -> (ChatRequest, Vec<claij_schema::dialect::Loss>) {
    use claij_schema::dialect::{Compiled, Dialect};
    let target = capabilities.schema_target(OutputMode::Tool);
    let schema = loose_schema();
    let compiled = match target.dialect {
        SchemaDialect::OpenAiStrict => Dialect::OpenAiStrict.compile(&schema).unwrap(),
        SchemaDialect::Anthropic => Dialect::Anthropic.compile(&schema).unwrap(),
        SchemaDialect::Gemini => Dialect::Gemini.compile(&schema).unwrap(),
        _ => Compiled {
            schema,
            losses: Vec::new(),
        },
    };
    let mut request = ChatRequest::new(model)
        .system("Answer in JSON.")
        .message(Message::user("What is 2+2?"));
    request.structured_output = Some(StructuredOutput {
        name: "response".into(),
        schema: compiled.schema.into(),
        strict: target.strict,
        mode: OutputMode::Tool,
    });
    (request, compiled.losses)
}

#[test]
fn instruction_roles_by_model() {
    let cases = [
        ("gpt-4o", InstructionRole::System),
        ("gpt-4.1-mini", InstructionRole::System),
        ("gpt-3.5-turbo", InstructionRole::System),
        ("o1-mini", InstructionRole::User),
        ("o1-mini-2024-09-12", InstructionRole::User),
        ("o1-preview", InstructionRole::User),
        ("openai/o1-mini", InstructionRole::User),
        ("OpenAI/O1-Preview", InstructionRole::User),
        ("o1", InstructionRole::Developer),
        ("o1-2024-12-17", InstructionRole::Developer),
        ("o3-mini", InstructionRole::Developer),
        ("o3", InstructionRole::Developer),
        ("o4-mini", InstructionRole::Developer),
        ("gpt-5", InstructionRole::Developer),
        ("gpt-5-mini", InstructionRole::Developer),
        ("openai/gpt-5.1", InstructionRole::Developer),
        // Another vendor's model of the same name is not OpenAI's.
        ("acme/o1-mini", InstructionRole::System),
        ("anthropic/claude-sonnet-4.5", InstructionRole::System),
        ("", InstructionRole::System),
    ];
    for (model, expected) in cases {
        assert_eq!(instruction_role(model), expected, "{model}");
    }
    let table = ModelTable::builtin();
    let role = |provider: &str, id: &str| table.get_for(provider, id).unwrap().instruction_role();
    assert_eq!(role("openai", "gpt-5"), InstructionRole::Developer);
    assert_eq!(
        role("openrouter", "openai/gpt-5"),
        InstructionRole::Developer
    );
    assert_eq!(role("openai", "gpt-4o-mini"), InstructionRole::System);
    assert_eq!(
        role("anthropic", "claude-sonnet-4-5"),
        InstructionRole::System
    );
}

#[test]
fn the_table_knows_strict_tools() {
    let table = ModelTable::builtin();
    let strict = |provider: &str, id: &str| {
        let model = table.get_for(provider, id).unwrap();
        (model.strict_tools, model.capabilities().strict_tools)
    };
    let openai = Some(SchemaDialect::OpenAiStrict);
    let anthropic = Some(SchemaDialect::Anthropic);
    assert_eq!(strict("openai", "gpt-4o-mini"), (openai, openai));
    assert_eq!(strict("openrouter", "openai/gpt-5"), (openai, openai));
    assert_eq!(
        strict("anthropic", "claude-haiku-4-5"),
        (anthropic, anthropic)
    );
    // Gemini's function declarations have no strict flag; qwen's upstream has no structured outputs.
    assert_eq!(strict("gemini", "gemini-2.5-flash"), (None, None));
    assert_eq!(
        strict("openrouter", "qwen/qwen-2.5-7b-instruct"),
        (None, None)
    );
    let from_json = ModelTable::from_json(&json!([{"id": "m", "provider": "p", "tools": true,
        "strict_tools": "open_ai_strict"}]))
    .unwrap();
    assert_eq!(from_json.get("m").unwrap().strict_tools, openai);
}
