//! Unit tests of the Gemini adapter's pure translations.

use serde_json::json;

use super::*;
use crate::{Message, StructuredOutput};

fn context() -> ErrorContext {
    ErrorContext::new(PROVIDER)
}

#[track_caller]
fn check_model_path(model: &str, expected: Option<&str>) {
    assert_eq!(model_path(model).ok().as_deref(), expected, "{model}");
}

#[test]
fn model_paths_stay_one_segment() {
    check_model_path("gemini-2.5-flash", Some("models/gemini-2.5-flash"));
    check_model_path("models/gemini-2.5-pro", Some("models/gemini-2.5-pro"));
    check_model_path("tunedModels/my-model_1", Some("tunedModels/my-model_1"));
    check_model_path("", None);
    check_model_path("models/", None);
    check_model_path("gemini?key=x", None);
    check_model_path("../v1/files", None);
    check_model_path("models/../x", None);
    check_model_path("google/gemini-2.5-flash", None);
    check_model_path("gemini 2.5", None);
}

#[track_caller]
fn check_capabilities(
    field: SchemaField,
    model: &str,
    dialect: Option<SchemaDialect>,
    window: Option<u32>,
) {
    let c = GeminiAdapter::default()
        .with_schema_field(field)
        .capabilities(model);
    assert_eq!(c.schema_dialect, dialect, "{model}");
    assert_eq!(c.native_json_schema, dialect.is_some(), "{model}");
    assert_eq!(c.tools, dialect.is_some(), "{model}");
    assert!(c.streaming, "{model}");
    assert_eq!(c.context_window, window, "{model}");
}

#[test]
fn capabilities_by_model_and_schema_field() {
    const G: Option<SchemaDialect> = Some(SchemaDialect::Gemini);
    const J: Option<SchemaDialect> = Some(SchemaDialect::JsonSchema);
    use SchemaField::{ResponseJsonSchema as RJ, ResponseSchema as RS};
    check_capabilities(RS, "gemini-2.5-flash", G, Some(1_048_576));
    check_capabilities(RS, "gemini-2.5-pro", G, Some(1_048_576));
    check_capabilities(RJ, "gemini-2.5-flash", J, Some(1_048_576));
    check_capabilities(RJ, "models/gemini-2.5-flash-lite", J, Some(1_048_576));
    check_capabilities(RJ, "gemini-3-pro-preview", J, Some(1_048_576));
    check_capabilities(RJ, "gemini-flash-latest", J, Some(1_048_576));
    check_capabilities(RJ, "gemini-2.0-flash", G, Some(1_048_576));
    check_capabilities(RJ, "gemini-1.5-pro-002", G, Some(2_097_152));
    check_capabilities(RS, "gemini-2.5-flash-image", G, None);
    check_capabilities(RS, "tunedModels/my-model", G, None);
    check_capabilities(RS, "gemma-3-27b-it", None, None);
}

#[test]
fn seeds_fit_an_int32() {
    assert_eq!(int32_seed(7), 7);
    assert_eq!(int32_seed(u64::from(u32::MAX)), i32::MAX);
    assert_eq!(int32_seed(1 << 31), 0);
    assert_eq!(int32_seed(u64::MAX), i32::MAX);
}

#[test]
fn system_messages_join_the_instruction_and_roles_map() {
    let request = ChatRequest::new("gemini-2.5-flash")
        .system("Rules.")
        .message(Message::user("Q"))
        .message(Message::assistant("A"))
        .message(Message::system("More rules."))
        .message(Message::new(Role::Tool, "42"));
    let wire = GeminiAdapter::default()
        .transform_request(&request, false)
        .unwrap();
    let body = wire.json().unwrap();
    assert_eq!(
        body["systemInstruction"],
        json!({"parts": [{"text": "Rules."}, {"text": "More rules."}]})
    );
    let roles: Vec<&str> = body["contents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "model", "user"]);
    assert!(body.get("generationConfig").is_none());
}

#[test]
fn function_names_are_checked_before_sending() {
    for name in ["1st", "has space", ""] {
        let mut request = ChatRequest::new("gemini-2.5-flash").message(Message::user("Q"));
        request.structured_output = Some(StructuredOutput {
            name: name.into(),
            schema: json!({"type": "object"}).into(),
            strict: false,
            mode: OutputMode::Tool,
        });
        let e = GeminiAdapter::default()
            .transform_request(&request, false)
            .unwrap_err();
        assert!(matches!(e, Error::BadRequest { .. }), "{name}: {e}");
    }
}

#[track_caller]
fn check_finish(body: Value, expected: Result<FinishReason, &str>) {
    let bytes = body.to_string();
    let got = GeminiAdapter::default().transform_response(bytes.as_bytes(), &context());
    match (got, expected) {
        (Ok(r), Ok(reason)) => assert_eq!(r.finish_reason, reason),
        (Err(e), Err(message)) => assert_eq!(e.to_string(), message),
        (got, expected) => panic!("{got:?} instead of {expected:?}"),
    }
}

fn candidate(reason: &str) -> Value {
    json!({"candidates": [{"content": {"parts": [{"text": "x"}], "role": "model"}, "finishReason": reason}]})
}

#[test]
fn finish_reasons() {
    check_finish(candidate("STOP"), Ok(FinishReason::Stop));
    check_finish(candidate("MAX_TOKENS"), Ok(FinishReason::Length));
    check_finish(
        candidate("MALFORMED_FUNCTION_CALL"),
        Ok(FinishReason::Other("MALFORMED_FUNCTION_CALL".into())),
    );
    check_finish(
        json!({"candidates": [{"content": {"parts": [{"text": "x"}]}}]}),
        Ok(FinishReason::Stop),
    );
    check_finish(
        candidate("RECITATION"),
        Err("gemini: refused: finish reason RECITATION"),
    );
    check_finish(
        json!({"candidates": [{"finishReason": "SAFETY", "safetyRatings": [
            {"category": "HARM_CATEGORY_HARASSMENT", "probability": "NEGLIGIBLE"},
            {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": true}
        ]}]}),
        Err("gemini: refused: finish reason SAFETY (HARM_CATEGORY_DANGEROUS_CONTENT)"),
    );
    check_finish(
        json!({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}, "usageMetadata": {"promptTokenCount": 9}}),
        Err("gemini: refused: prompt blocked: PROHIBITED_CONTENT"),
    );
    check_finish(
        json!({"usageMetadata": {"promptTokenCount": 9}}),
        Err(
            r#"gemini: malformed response: no candidates; body starts "{\"usageMetadata\":{\"promptTokenCount\":9}}""#,
        ),
    );
}

#[test]
fn thoughts_are_skipped_and_function_calls_win() {
    let body = json!({"candidates": [{"content": {"parts": [
        {"text": "thinking...", "thought": true},
        {"text": "{\"a\": "},
        {"text": "1}"}
    ]}, "finishReason": "STOP"}],
    "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "thoughtsTokenCount": 7,
        "cachedContentTokenCount": 4, "totalTokenCount": 22},
    "responseId": "resp-1", "modelVersion": "gemini-2.5-flash"});
    let r = GeminiAdapter::default()
        .transform_response(body.to_string().as_bytes(), &context())
        .unwrap();
    assert_eq!(r.content, "{\"a\": 1}");
    assert_eq!(r.usage.input_tokens, 10);
    assert_eq!(r.usage.output_tokens, 12);
    assert_eq!(r.usage.reasoning_tokens, 7);
    assert_eq!(r.usage.cached_tokens, 4);
    assert_eq!(r.request_id.as_deref(), Some("resp-1"));
    assert_eq!(r.model.as_deref(), Some("gemini-2.5-flash"));

    let call = json!({"candidates": [{"content": {"parts": [
        {"text": "Sure."},
        {"functionCall": {"name": "answer", "args": {"z": [1, 2], "a": null}}}
    ]}, "finishReason": "STOP"}]});
    let r = GeminiAdapter::default()
        .transform_response(call.to_string().as_bytes(), &context())
        .unwrap();
    assert_eq!(r.content, r#"{"z":[1,2],"a":null}"#);

    let no_args =
        json!({"candidates": [{"content": {"parts": [{"functionCall": {"name": "answer"}}]}}]});
    let r = GeminiAdapter::default()
        .transform_response(no_args.to_string().as_bytes(), &context())
        .unwrap();
    assert_eq!(r.content, "{}");
}

#[test]
fn retry_delays() {
    assert_eq!(parse_delay("37s"), Some(Duration::from_secs(37)));
    assert_eq!(parse_delay("1.5s"), Some(Duration::from_millis(1500)));
    assert_eq!(parse_delay("-1s"), None);
    assert_eq!(parse_delay("soon"), None);
    // Hostile numbers never panic the conversion.
    assert_eq!(parse_delay("1e308s"), Some(Duration::from_secs(86_400)));
    assert_eq!(parse_delay("NaNs"), None);
    assert_eq!(parse_delay("infs"), None);
}

#[test]
fn an_empty_error_array_is_not_a_panic() {
    let e = classify_error(500, None, b"[]", context());
    assert!(matches!(e, Error::Server { .. }), "{e}");
}

#[test]
fn requests_gemini_would_reject_fail_before_sending() {
    let adapter = GeminiAdapter::default();
    let only_system = ChatRequest::new("gemini-2.5-flash").message(Message::system("Rules."));
    let infinite = ChatRequest::new("gemini-2.5-flash")
        .message(Message::user("Q"))
        .temperature(f32::INFINITY);
    for request in [ChatRequest::new("gemini-2.5-flash"), only_system, infinite] {
        let e = adapter.transform_request(&request, false).unwrap_err();
        assert!(matches!(e, Error::BadRequest { .. }), "{e}");
    }
}

#[test]
fn an_error_body_with_status_200_is_still_an_error() {
    let body = br#"{"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED"}}"#;
    let e = GeminiAdapter::default()
        .transform_response(body, &context().with_status(200))
        .unwrap_err();
    assert!(matches!(e, Error::RateLimited { .. }), "{e}");
}
