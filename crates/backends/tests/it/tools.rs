//! Tests: native tools in every adapter, against wiremock: the tools and the tool choice in each
//! provider's format, two parallel calls parsed from a complete and from a streamed response, a
//! history with calls and their results sent back, tool mode beside the caller's tools, and
//! arguments that are not JSON kept as their raw text (tool mode's content, repaired as a reply is;
//! a strict `try_finish` names the call).

#![cfg(all(feature = "openai", feature = "anthropic", feature = "gemini"))]

use claij_backends::http::{HttpConfig, RetryPolicy};
use claij_backends::{
    Anthropic, ApiKey, Assembler, Backend, ChatRequest, ChatResponse, Error, ErrorKind,
    FinishReason, Gemini, Message, OpenAi, OutputMode, StreamEvent, ToolCall, ToolChoice, ToolSpec,
};
use futures_util::StreamExt as _;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::openai::assert_valid_request;

/// What the Anthropic OpenAPI document finds wrong with a body, but for the `strict` of tools
/// (the document predates strict tools).
fn anthropic_violations(body: &Value) -> Vec<String> {
    let validator = super::anthropic::messages_validator();
    match validator.validate(body) {
        Ok(()) => Vec::new(),
        Err(violations) => violations
            .iter()
            .map(ToString::to_string)
            .filter(|v| !v.ends_with("property `strict` is not allowed"))
            .collect(),
    }
}

/// What the Gemini OpenAPI document finds wrong with a body.
fn gemini_violations(body: &Value) -> Vec<String> {
    match super::gemini::request_validator().validate(body) {
        Ok(()) => Vec::new(),
        Err(violations) => violations.iter().map(ToString::to_string).collect(),
    }
}

const KEY: &str = "sk-test-claij-tools-0123456789";

fn weather() -> ToolSpec {
    ToolSpec::new(
        "get_weather",
        "The current weather in a city",
        json!({"type": "object", "properties": {"city": {"type": "string"}},
               "required": ["city"], "additionalProperties": false}),
    )
    .strict(true)
}

fn clock() -> ToolSpec {
    ToolSpec::new(
        "get_time",
        "",
        json!({"type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]}),
    )
}

/// A question with two tools, the model made to call one.
fn ask(model: &str) -> ChatRequest {
    ChatRequest::new(model)
        .system("Use the tools.")
        .message(Message::user("Weather in Paris and Oslo?"))
        .tool(weather())
        .tool(clock())
        .tool_choice(ToolChoice::Required)
}

/// The two calls the replies below make, as the history keeps them.
fn calls() -> Vec<ToolCall> {
    vec![
        ToolCall::new("call_a", "get_weather", json!({"city": "Paris"})),
        ToolCall::new("call_b", "get_weather", json!({"city": "Oslo"})),
    ]
}

/// The conversation after the model called both: its turn with the calls, then the results.
fn history(model: &str) -> ChatRequest {
    ChatRequest::new(model)
        .message(Message::user("Weather in Paris and Oslo?"))
        .message(Message::assistant_calls("Checking both.", calls()))
        .message(Message::tool_result("call_a", r#"{"temp": 12}"#))
        .message(Message::tool_result("call_b", "rain"))
        .message(Message::user("And which is warmer?"))
        .tool(weather())
        .tool_choice(ToolChoice::Auto)
}

/// Tool mode (the answer as a forced tool) beside the caller's tools.
fn tool_mode(model: &str) -> ChatRequest {
    let mut request = ChatRequest::new(model)
        .message(Message::user("Weather in Paris?"))
        .tool(weather())
        .structured(
            "response",
            json!({"type": "object", "properties": {"answer": {"type": "string"}},
                   "required": ["answer"], "additionalProperties": false}),
            true,
        );
    if let Some(s) = request.structured_output.as_mut() {
        s.mode = OutputMode::Tool;
    }
    request
}

fn config(server: &MockServer, prefix: &str) -> HttpConfig {
    HttpConfig::new(format!("{}{prefix}", server.uri())).with_retry(RetryPolicy::none())
}

fn openai(server: &MockServer) -> OpenAi {
    OpenAi::new(ApiKey::new(KEY)).with_config(config(server, "/v1"))
}

fn anthropic(server: &MockServer) -> Anthropic {
    Anthropic::new(ApiKey::new(KEY)).with_config(config(server, "/v1"))
}

fn gemini(server: &MockServer) -> Gemini {
    Gemini::new(ApiKey::new(KEY)).with_config(config(server, "/v1beta"))
}

/// One server answering `path` once with `body` (JSON, or server-sent events when `sse`).
async fn serve(at: &str, body: String, sse: bool) -> MockServer {
    let server = MockServer::start().await;
    let content_type = if sse {
        "text/event-stream"
    } else {
        "application/json"
    };
    Mock::given(method("POST"))
        .and(path(at))
        .respond_with(ResponseTemplate::new(200).set_body_raw(body, content_type))
        .expect(1)
        .mount(&server)
        .await;
    server
}

async fn sent(server: &MockServer) -> Value {
    let requests = server.received_requests().await.unwrap();
    serde_json::from_slice(&requests[0].body).unwrap()
}

async fn assembled(
    backend: &dyn Backend,
    request: &ChatRequest,
    provider: &str,
) -> Result<ChatResponse, Error> {
    let mut assembler = Assembler::default();
    let mut events = backend.stream(request);
    while let Some(event) = events.next().await {
        assembler.push(event?);
    }
    assembler.try_finish(provider)
}

#[track_caller]
fn check_calls(response: &ChatResponse, ids: [&str; 2]) {
    let got: Vec<(&str, &str, &Value)> = response
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str(), &c.arguments))
        .collect();
    assert_eq!(
        got,
        [
            (ids[0], "get_weather", &json!({"city": "Paris"})),
            (ids[1], "get_weather", &json!({"city": "Oslo"})),
        ]
    );
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
}

// ---- OpenAI chat completions ----

const OPENAI_PATH: &str = "/v1/chat/completions";

/// Two calls in one completion, in the shape of the spec's "Functions" example (openai-2.json).
fn openai_two_calls() -> String {
    let call = |id: &str, city: &str| {
        json!({"id": id, "type": "function",
               "function": {"name": "get_weather", "arguments": format!("{{\n\"city\": \"{city}\"\n}}")}})
    };
    json!({"id": "chatcmpl-abc123", "object": "chat.completion", "created": 1699896916,
           "model": "gpt-4o-mini",
           "choices": [{"index": 0, "message": {"role": "assistant", "content": null,
                        "tool_calls": [call("call_a", "Paris"), call("call_b", "Oslo")]},
                        "logprobs": null, "finish_reason": "tool_calls"}],
           "usage": {"prompt_tokens": 82, "completion_tokens": 17, "total_tokens": 99}})
    .to_string()
}

/// The same two calls streamed as `CreateChatCompletionStreamResponse` chunks: each call's first
/// delta carries its index, id and name, the arguments follow in fragments keyed by index.
fn openai_two_calls_streamed(torn: bool) -> String {
    let chunk = |delta: Value, finish: Value| {
        let chunk = json!({"id": "chatcmpl-s", "object": "chat.completion.chunk", "created": 1,
                           "model": "gpt-4o-mini",
                           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {chunk}\n\n")
    };
    let start = |index: u32, id: &str| {
        json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                               "function": {"name": "get_weather", "arguments": ""}}]})
    };
    let part = |index: u32, text: &str| json!({"tool_calls": [{"index": index, "function": {"arguments": text}}]});
    let mut body = chunk(json!({"role": "assistant", "content": null}), Value::Null);
    body += &chunk(start(0, "call_a"), Value::Null);
    body += &chunk(part(0, "{\"city\": "), Value::Null);
    body += &chunk(part(0, "\"Paris\"}"), Value::Null);
    body += &chunk(start(1, "call_b"), Value::Null);
    body += &chunk(part(1, "{\"city\": "), Value::Null);
    if torn {
        // The connection is cut mid-arguments, yet the server closes the stream cleanly.
        return body + "data: [DONE]\n\n";
    }
    body += &chunk(part(1, "\"Oslo\"}"), Value::Null);
    body += &chunk(json!({}), json!("tool_calls"));
    body + "data: [DONE]\n\n"
}

#[tokio::test]
async fn openai_sends_tools_and_the_choice() {
    let server = serve(OPENAI_PATH, openai_two_calls(), false).await;
    openai(&server).complete(&ask("gpt-4o-mini")).await.unwrap();
    let body = sent(&server).await;
    assert_valid_request("openai_tools", &body);
    assert_eq!(body["tools"][0]["type"], "function");
    assert_eq!(body["tools"][0]["function"]["name"], "get_weather");
    assert_eq!(body["tools"][0]["function"]["strict"], true);
    assert_eq!(body["tools"][1]["function"]["name"], "get_time");
    assert_eq!(body["tool_choice"], "required");
    insta::assert_json_snapshot!("openai_tools_request", body);

    // Each choice in its wire form.
    for (choice, expected) in [
        (ToolChoice::Auto, json!("auto")),
        (ToolChoice::None, json!("none")),
        (
            ToolChoice::Tool("get_time".into()),
            json!({"type": "function", "function": {"name": "get_time"}}),
        ),
    ] {
        let server = serve(OPENAI_PATH, openai_two_calls(), false).await;
        let request = ask("gpt-4o-mini").tool_choice(choice);
        openai(&server).complete(&request).await.unwrap();
        let body = sent(&server).await;
        assert_valid_request("openai_tool_choice", &body);
        assert_eq!(body["tool_choice"], expected);
    }
}

/// OpenRouter forwards the same tools, routed only to providers that take them.
#[tokio::test]
async fn openrouter_sends_tools_to_providers_that_take_them() {
    let server = serve("/api/v1/chat/completions", openai_two_calls(), false).await;
    let backend =
        claij_backends::OpenRouter::new(ApiKey::new(KEY)).with_config(config(&server, "/api/v1"));
    let response = backend.complete(&ask("openai/gpt-4o-mini")).await.unwrap();
    check_calls(&response, ["call_a", "call_b"]);
    let body = sent(&server).await;
    assert_valid_request("openrouter_tools", &body);
    assert_eq!(body["tools"][1]["function"]["name"], "get_time");
    assert_eq!(body["provider"], json!({"require_parameters": true}));
}

#[tokio::test]
async fn openai_parses_two_parallel_calls() {
    let server = serve(OPENAI_PATH, openai_two_calls(), false).await;
    let request = ask("gpt-4o-mini");
    let response = openai(&server).complete(&request).await.unwrap();
    check_calls(&response, ["call_a", "call_b"]);
    assert_eq!(response.calls_to_run(&request).len(), 2);
}

#[tokio::test]
async fn openai_parses_two_parallel_calls_streamed() {
    let server = serve(OPENAI_PATH, openai_two_calls_streamed(false), true).await;
    let backend = openai(&server);
    let response = assembled(&backend, &ask("gpt-4o-mini"), "openai")
        .await
        .unwrap();
    check_calls(&response, ["call_a", "call_b"]);
}

#[tokio::test]
async fn openai_sends_a_history_with_calls_and_results() {
    let server = serve(OPENAI_PATH, openai_two_calls(), false).await;
    openai(&server)
        .complete(&history("gpt-4o-mini"))
        .await
        .unwrap();
    let body = sent(&server).await;
    assert_valid_request("openai_history", &body);
    let messages = &body["messages"];
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(messages[1]["tool_calls"][1]["id"], "call_b");
    assert_eq!(
        messages[1]["tool_calls"][0]["function"]["arguments"],
        r#"{"city":"Paris"}"#
    );
    assert_eq!(
        (&messages[2]["role"], &messages[2]["tool_call_id"]),
        (&json!("tool"), &json!("call_a"))
    );
    assert_eq!(messages[3]["tool_call_id"], "call_b");
    insta::assert_json_snapshot!("openai_history_request", messages);
}

/// Arguments that are not JSON are no error of a complete response: the call keeps their raw text
/// (the caller repairs it); a strict caller's `try_finish` names the call.
#[tokio::test]
async fn openai_arguments_that_are_not_json_are_kept_raw() {
    let torn = openai_two_calls().replace(r#"\"Oslo\"\n}"#, r#"\"Os"#);
    let server = serve(OPENAI_PATH, torn, false).await;
    let response = openai(&server).complete(&ask("gpt-4o-mini")).await.unwrap();
    assert_eq!(response.tool_calls[0].arguments, json!({"city": "Paris"}));
    assert_eq!(
        response.tool_calls[1].arguments,
        json!("{\n\"city\": \"Os"),
        "{response:?}"
    );

    let server = serve(OPENAI_PATH, openai_two_calls_streamed(true), true).await;
    let backend = openai(&server);
    let error = assembled(&backend, &ask("gpt-4o-mini"), "openai")
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::ToolArguments);
    assert!(
        error.to_string().contains("`call_b` (get_weather)"),
        "{error}"
    );
    assert!(error.to_string().starts_with("openai"), "{error}");
}

/// The reply of tool mode whose arguments a model wrote slightly wrong, as the pipeline sees it.
const MALFORMED_ANSWER: &str = "{'answer': 'Paris', 'state': 'done',}";

/// What the pipeline's processing (extraction, repair, coercion, validation against the base
/// schema) makes of a response's content.
#[track_caller]
fn repaired(response: &ChatResponse) -> Value {
    let validator = claij_validation::Validator::new(&claij_schema::base()).unwrap();
    match claij_validation::process(&response.content, &validator) {
        claij_validation::Outcome::Valid { value, fixes } => {
            assert!(!fixes.is_empty(), "{value}");
            value
        }
        other => panic!("{other:?}"),
    }
}

/// Tool mode asking for the base schema (`answer`, `state`).
fn base_tool_mode(model: &str) -> ChatRequest {
    let mut request = ChatRequest::new(model)
        .message(Message::user("Capital of France?"))
        .structured("response", claij_schema::base(), false);
    if let Some(s) = request.structured_output.as_mut() {
        s.mode = OutputMode::Tool;
    }
    request
}

/// A forced answer whose arguments are malformed JSON is the content, repaired as a reply is; the
/// call keeps the raw text.
#[tokio::test]
async fn openai_malformed_tool_mode_arguments_are_repaired() {
    let answer = json!({"id": "c", "model": "gpt-4o-mini",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "call_r", "type": "function",
                            "function": {"name": "response", "arguments": MALFORMED_ANSWER}}]}}]});
    let server = serve(OPENAI_PATH, answer.to_string(), false).await;
    let request = base_tool_mode("gpt-4o-mini");
    let response = openai(&server).complete(&request).await.unwrap();
    assert_eq!(response.content, MALFORMED_ANSWER);
    assert_eq!(
        repaired(&response),
        json!({"answer": "Paris", "state": "done"})
    );
    assert_eq!(response.tool_calls[0].arguments, json!(MALFORMED_ANSWER));
    assert!(response.calls_to_run(&request).is_empty());
}

/// A history call whose arguments were not JSON goes back as the text the model wrote.
#[tokio::test]
async fn openai_sends_raw_arguments_back_as_written() {
    let server = serve(OPENAI_PATH, openai_two_calls(), false).await;
    let request = ChatRequest::new("gpt-4o-mini")
        .message(Message::user("Weather in Paris?"))
        .message(Message::assistant_calls(
            "",
            vec![ToolCall::new(
                "call_a",
                "get_weather",
                json!("{'city': 'Paris'"),
            )],
        ))
        .message(Message::tool_result("call_a", "error: invalid arguments"))
        .tool(weather());
    openai(&server).complete(&request).await.unwrap();
    let body = sent(&server).await;
    assert_valid_request("openai_raw_history", &body);
    assert_eq!(
        body["messages"][1]["tool_calls"][0]["function"]["arguments"],
        "{'city': 'Paris'"
    );
}

/// Arguments the token limit cut off are what the finish reason says, not an error: in tool mode
/// they are the content, for the pipeline's repair and its "cut off" retry.
#[tokio::test]
async fn openai_arguments_cut_at_the_token_limit_are_no_error() {
    let cut = json!({"id": "c", "model": "gpt-4o-mini",
        "choices": [{"index": 0, "finish_reason": "length", "message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "call_r", "type": "function",
                            "function": {"name": "response", "arguments": "{\"answer\": \"12"}}]}}]});
    let server = serve(OPENAI_PATH, cut.to_string(), false).await;
    let request = tool_mode("gpt-4o-mini");
    let response = openai(&server).complete(&request).await.unwrap();
    assert_eq!(response.finish_reason, FinishReason::Length);
    assert_eq!(response.content, r#"{"answer": "12"#);
    assert_eq!(response.tool_calls[0].arguments, json!(r#"{"answer": "12"#));
    assert!(response.calls_to_run(&request).is_empty());

    let mut streamed = openai_two_calls_streamed(true);
    streamed = streamed.replace(
        "data: [DONE]",
        &format!(
            "data: {}\n\ndata: [DONE]",
            json!({"id": "chatcmpl-s", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o-mini",
                   "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]})
        ),
    );
    let server = serve(OPENAI_PATH, streamed, true).await;
    let backend = openai(&server);
    let response = assembled(&backend, &ask("gpt-4o-mini"), "openai")
        .await
        .unwrap();
    assert_eq!(response.finish_reason, FinishReason::Length);
    let ids: Vec<&str> = response.tool_calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["call_a"]);
}

#[tokio::test]
async fn openai_tool_mode_beside_tools() {
    let answer = json!({"id": "c", "model": "gpt-4o-mini",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "call_r", "type": "function",
                            "function": {"name": "response", "arguments": "{\"answer\":\"12 C\"}"}}]}}]});
    let server = serve(OPENAI_PATH, answer.to_string(), false).await;
    let request = tool_mode("gpt-4o-mini");
    let response = openai(&server).complete(&request).await.unwrap();
    let body = sent(&server).await;
    assert_valid_request("openai_tool_mode_beside_tools", &body);
    let names: Vec<&Value> = (0..2)
        .map(|i| &body["tools"][i]["function"]["name"])
        .collect();
    assert_eq!(names, [&json!("response"), &json!("get_weather")]);
    // The answer is a call too, so the model must call one; calls may come together.
    assert_eq!(body["tool_choice"], "required");
    assert!(body.get("parallel_tool_calls").is_none());
    assert_eq!(response.content, r#"{"answer":"12 C"}"#);
    assert!(response.calls_to_run(&request).is_empty());
}

// ---- Anthropic Messages ----

const ANTHROPIC_PATH: &str = "/v1/messages";

/// Two `tool_use` blocks after text, in the shape of the reference's tool-use example
/// (anthropic-3.json) inside a whole Message.
fn anthropic_two_calls() -> String {
    json!({"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
           "content": [
               {"type": "text", "text": "Checking both."},
               {"type": "tool_use", "id": "toolu_a", "name": "get_weather", "input": {"city": "Paris"}},
               {"type": "tool_use", "id": "toolu_b", "name": "get_weather", "input": {"city": "Oslo"}}],
           "stop_reason": "tool_use", "stop_sequence": null,
           "usage": {"input_tokens": 50, "output_tokens": 40}})
    .to_string()
}

/// The same streamed: `content_block_start` per block (the tool_use blocks with their id and
/// name), `input_json_delta` fragments keyed by block index.
fn anthropic_two_calls_streamed(torn: bool) -> String {
    let event = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
    let delta = |index: u32, part: &str| {
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index,
                   "delta": {"type": "input_json_delta", "partial_json": part}}),
        )
    };
    let start = |index: u32, id: &str| {
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index,
                   "content_block": {"type": "tool_use", "id": id, "name": "get_weather", "input": {}}}),
        )
    };
    let stop = |index: u32| {
        event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        )
    };
    let mut body = event(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_01", "type": "message", "role": "assistant",
               "model": "claude-sonnet-4-5", "content": [], "stop_reason": null,
               "usage": {"input_tokens": 50, "output_tokens": 1}}}),
    );
    body += &event(
        "content_block_start",
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    );
    body += &event(
        "content_block_delta",
        json!({"type": "content_block_delta", "index": 0,
               "delta": {"type": "text_delta", "text": "Checking both."}}),
    );
    body += &stop(0);
    body += &start(1, "toolu_a");
    body += &delta(1, "");
    body += &delta(1, "{\"city\": \"Par");
    body += &delta(1, "is\"}");
    body += &stop(1);
    body += &start(2, "toolu_b");
    body += &delta(2, "{\"city\": ");
    if torn {
        return body + &event("message_stop", json!({"type": "message_stop"}));
    }
    body += &delta(2, "\"Oslo\"}");
    body += &stop(2);
    body += &event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null},
               "usage": {"output_tokens": 40}}),
    );
    body + &event("message_stop", json!({"type": "message_stop"}))
}

#[tokio::test]
async fn anthropic_sends_tools_and_the_choice() {
    let server = serve(ANTHROPIC_PATH, anthropic_two_calls(), false).await;
    anthropic(&server)
        .complete(&ask("claude-sonnet-4-5"))
        .await
        .unwrap();
    let body = sent(&server).await;
    assert_eq!(body["tools"][0]["name"], "get_weather");
    assert_eq!(
        body["tools"][0]["input_schema"]["required"],
        json!(["city"])
    );
    assert_eq!(body["tools"][0]["strict"], true);
    assert!(body["tools"][1].get("description").is_none());
    assert_eq!(body["tool_choice"], json!({"type": "any"}));
    assert_eq!(anthropic_violations(&body), Vec::<String>::new());
    insta::assert_json_snapshot!("anthropic_tools_request", body);

    for (choice, expected) in [
        (ToolChoice::Auto, json!({"type": "auto"})),
        (ToolChoice::None, json!({"type": "none"})),
        (
            ToolChoice::Tool("get_time".into()),
            json!({"type": "tool", "name": "get_time"}),
        ),
    ] {
        let server = serve(ANTHROPIC_PATH, anthropic_two_calls(), false).await;
        let request = ask("claude-sonnet-4-5").tool_choice(choice);
        anthropic(&server).complete(&request).await.unwrap();
        assert_eq!(sent(&server).await["tool_choice"], expected);
    }
    // Models before structured outputs get no `strict` (they reject it).
    let server = serve(ANTHROPIC_PATH, anthropic_two_calls(), false).await;
    anthropic(&server)
        .complete(&ask("claude-3-5-haiku-20241022"))
        .await
        .unwrap();
    assert!(sent(&server).await["tools"][0].get("strict").is_none());
}

#[tokio::test]
async fn anthropic_parses_two_parallel_calls() {
    let server = serve(ANTHROPIC_PATH, anthropic_two_calls(), false).await;
    let response = anthropic(&server)
        .complete(&ask("claude-sonnet-4-5"))
        .await
        .unwrap();
    check_calls(&response, ["toolu_a", "toolu_b"]);
    // The text beside the calls, for the history's assistant turn.
    assert_eq!(response.text, "Checking both.");
}

#[tokio::test]
async fn anthropic_parses_two_parallel_calls_streamed() {
    let server = serve(ANTHROPIC_PATH, anthropic_two_calls_streamed(false), true).await;
    let backend = anthropic(&server);
    let response = assembled(&backend, &ask("claude-sonnet-4-5"), "anthropic")
        .await
        .unwrap();
    check_calls(&response, ["toolu_a", "toolu_b"]);
    assert_eq!(response.text, "Checking both.");
    // The first call's arguments, as streamed, are the content (the answer, in tool mode).
    assert_eq!(response.content, r#"{"city": "Paris"}"#);
}

#[tokio::test]
async fn anthropic_sends_a_history_with_calls_and_results() {
    let server = serve(ANTHROPIC_PATH, anthropic_two_calls(), false).await;
    anthropic(&server)
        .complete(&history("claude-sonnet-4-5"))
        .await
        .unwrap();
    let body = sent(&server).await;
    let messages = &body["messages"];
    // The model's turn: its text, then a tool_use block per call.
    assert_eq!(
        messages[1]["content"],
        json!([{"type": "text", "text": "Checking both."},
               {"type": "tool_use", "id": "call_a", "name": "get_weather", "input": {"city": "Paris"}},
               {"type": "tool_use", "id": "call_b", "name": "get_weather", "input": {"city": "Oslo"}}])
    );
    // Both results in the one user turn that follows, then the user's next question.
    assert_eq!(
        messages[2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "call_a", "content": "{\"temp\": 12}"},
            {"type": "tool_result", "tool_use_id": "call_b", "content": "rain"}]})
    );
    assert_eq!(messages[3]["content"], "And which is warmer?");
    assert_eq!(anthropic_violations(&body), Vec::<String>::new());
    insta::assert_json_snapshot!("anthropic_history_request", messages);
}

#[tokio::test]
async fn anthropic_torn_arguments_name_the_call() {
    let server = serve(ANTHROPIC_PATH, anthropic_two_calls_streamed(true), true).await;
    let backend = anthropic(&server);
    let error = assembled(&backend, &ask("claude-sonnet-4-5"), "anthropic")
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::ToolArguments);
    assert!(
        error.to_string().contains("`toolu_b` (get_weather)"),
        "{error}"
    );
}

/// A streamed forced answer whose `input_json_delta`s add up to malformed JSON is the content, as
/// the pipeline's streaming assembles it (`finish`), repaired as a reply is.
#[tokio::test]
async fn anthropic_malformed_streamed_tool_mode_input_is_repaired() {
    let event = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
    let mut body = event(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_m", "type": "message", "role": "assistant",
               "model": "claude-sonnet-4-5", "content": [], "stop_reason": null,
               "usage": {"input_tokens": 20, "output_tokens": 1}}}),
    );
    body += &event(
        "content_block_start",
        json!({"type": "content_block_start", "index": 0,
               "content_block": {"type": "tool_use", "id": "toolu_r", "name": "response", "input": {}}}),
    );
    let (head, tail) = MALFORMED_ANSWER.split_at(14);
    for part in [head, tail] {
        body += &event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
                   "delta": {"type": "input_json_delta", "partial_json": part}}),
        );
    }
    body += &event(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    );
    body += &event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null},
               "usage": {"output_tokens": 12}}),
    );
    body += &event("message_stop", json!({"type": "message_stop"}));
    let server = serve(ANTHROPIC_PATH, body, true).await;
    let backend = anthropic(&server);
    let request = base_tool_mode("claude-sonnet-4-5");
    let mut assembler = Assembler::default();
    let mut events = backend.stream(&request);
    while let Some(event) = events.next().await {
        assembler.push(event.unwrap());
    }
    let response = assembler.finish();
    assert_eq!(response.content, MALFORMED_ANSWER);
    assert_eq!(
        repaired(&response),
        json!({"answer": "Paris", "state": "done"})
    );
    assert_eq!(response.tool_calls[0].arguments, json!(MALFORMED_ANSWER));
    assert!(response.calls_to_run(&request).is_empty());
}

/// A history call whose arguments were not JSON goes to Anthropic, which takes only an object as
/// `input`, as `{}`; the call's result says what was wrong.
#[tokio::test]
async fn anthropic_sends_raw_arguments_back_as_an_empty_input() {
    let server = serve(ANTHROPIC_PATH, anthropic_two_calls(), false).await;
    let request = ChatRequest::new("claude-sonnet-4-5")
        .message(Message::user("Weather in Paris?"))
        .message(Message::assistant_calls(
            "",
            vec![ToolCall::new(
                "call_a",
                "get_weather",
                json!("{'city': 'Paris'"),
            )],
        ))
        .message(Message::tool_result("call_a", "error: invalid arguments"))
        .tool(weather());
    anthropic(&server).complete(&request).await.unwrap();
    let body = sent(&server).await;
    assert_eq!(body["messages"][1]["content"][0]["input"], json!({}));
    assert_eq!(anthropic_violations(&body), Vec::<String>::new());
}

#[tokio::test]
async fn anthropic_tool_mode_beside_tools() {
    let answer = json!({"id": "msg_02", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "tool_use", "id": "toolu_r", "name": "response", "input": {"answer": "12 C"}}],
        "stop_reason": "tool_use", "usage": {"input_tokens": 5, "output_tokens": 5}});
    let server = serve(ANTHROPIC_PATH, answer.to_string(), false).await;
    let request = tool_mode("claude-sonnet-4-5");
    let response = anthropic(&server).complete(&request).await.unwrap();
    let body = sent(&server).await;
    assert_eq!(body["tools"][0]["name"], "response");
    assert_eq!(body["tools"][1]["name"], "get_weather");
    assert_eq!(body["tool_choice"], json!({"type": "any"}));
    assert_eq!(response.content, r#"{"answer":"12 C"}"#);
    assert!(response.calls_to_run(&request).is_empty());
}

// ---- Gemini generateContent ----

const GEMINI_PATH: &str = "/v1beta/models/gemini-2.5-flash:generateContent";
const GEMINI_STREAM_PATH: &str = "/v1beta/models/gemini-2.5-flash:streamGenerateContent";

fn gemini_call(city: &str) -> Value {
    json!({"functionCall": {"name": "get_weather", "args": {"city": city}}})
}

/// Two `functionCall` parts in one candidate, in the shape of the captured responses
/// (gemini-1.json): Gemini sends no ids and `STOP` as the finish reason.
fn gemini_two_calls() -> String {
    json!({"candidates": [{"content": {"parts": [gemini_call("Paris"), gemini_call("Oslo")], "role": "model"},
                           "finishReason": "STOP", "avgLogprobs": -0.1}],
           "usageMetadata": {"promptTokenCount": 40, "candidatesTokenCount": 12, "totalTokenCount": 52},
           "modelVersion": "gemini-2.5-flash", "responseId": "r-1"})
    .to_string()
}

/// Streamed, each call whole, and here in chunks of their own (each chunk's positions start at 0).
fn gemini_two_calls_streamed() -> String {
    let chunk = |part: Value, finish: Option<&str>| {
        let mut candidate = json!({"content": {"parts": [part], "role": "model"}});
        if let Some(finish) = finish {
            candidate["finishReason"] = json!(finish);
        }
        format!(
            "data: {}\n\n",
            json!({"candidates": [candidate], "modelVersion": "gemini-2.5-flash"})
        )
    };
    chunk(gemini_call("Paris"), None) + &chunk(gemini_call("Oslo"), Some("STOP"))
}

/// The stable ids of the two calls, as `complete` made them.
async fn gemini_ids() -> [String; 2] {
    let server = serve(GEMINI_PATH, gemini_two_calls(), false).await;
    let response = gemini(&server)
        .complete(&ask("gemini-2.5-flash"))
        .await
        .unwrap();
    [
        response.tool_calls[0].id.clone(),
        response.tool_calls[1].id.clone(),
    ]
}

#[tokio::test]
async fn gemini_sends_tools_and_the_choice() {
    let server = serve(GEMINI_PATH, gemini_two_calls(), false).await;
    gemini(&server)
        .complete(&ask("gemini-2.5-flash"))
        .await
        .unwrap();
    let body = sent(&server).await;
    let declarations = &body["tools"][0]["functionDeclarations"];
    assert_eq!(declarations[0]["name"], "get_weather");
    assert_eq!(declarations[0]["parameters"]["required"], json!(["city"]));
    assert_eq!(declarations[1]["name"], "get_time");
    assert_eq!(
        body["toolConfig"],
        json!({"functionCallingConfig": {"mode": "ANY"}})
    );
    assert_eq!(gemini_violations(&body), Vec::<String>::new());
    insta::assert_json_snapshot!("gemini_tools_request", body);

    for (choice, expected) in [
        (ToolChoice::Auto, json!({"mode": "AUTO"})),
        (ToolChoice::None, json!({"mode": "NONE"})),
        (
            ToolChoice::Tool("get_time".into()),
            json!({"mode": "ANY", "allowedFunctionNames": ["get_time"]}),
        ),
    ] {
        let server = serve(GEMINI_PATH, gemini_two_calls(), false).await;
        let request = ask("gemini-2.5-flash").tool_choice(choice);
        gemini(&server).complete(&request).await.unwrap();
        assert_eq!(
            sent(&server).await["toolConfig"]["functionCallingConfig"],
            expected
        );
    }
}

#[tokio::test]
async fn gemini_parses_two_parallel_calls_with_stable_ids() {
    let [a, b] = gemini_ids().await;
    assert_ne!(a, b);
    let server = serve(GEMINI_PATH, gemini_two_calls(), false).await;
    let response = gemini(&server)
        .complete(&ask("gemini-2.5-flash"))
        .await
        .unwrap();
    // The same reply gives the same ids.
    check_calls(&response, [a.as_str(), b.as_str()]);
}

#[tokio::test]
async fn gemini_parses_two_parallel_calls_streamed() {
    let server = serve(GEMINI_STREAM_PATH, gemini_two_calls_streamed(), true).await;
    let backend = gemini(&server);
    let response = assembled(&backend, &ask("gemini-2.5-flash"), "gemini")
        .await
        .unwrap();
    assert_eq!(response.tool_calls.len(), 2, "{response:?}");
    assert_ne!(response.tool_calls[0].id, response.tool_calls[1].id);
    assert_eq!(response.tool_calls[1].arguments, json!({"city": "Oslo"}));
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
}

#[tokio::test]
async fn gemini_sends_a_history_with_calls_and_results() {
    let server = serve(GEMINI_PATH, gemini_two_calls(), false).await;
    gemini(&server)
        .complete(&history("gemini-2.5-flash"))
        .await
        .unwrap();
    let body = sent(&server).await;
    let contents = &body["contents"];
    assert_eq!(
        contents[1],
        json!({"role": "model", "parts": [
            {"text": "Checking both."},
            {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}},
            {"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}}]})
    );
    // Both results in one user turn, named after their calls; an object as it is, text wrapped.
    assert_eq!(
        contents[2],
        json!({"role": "user", "parts": [
            {"functionResponse": {"name": "get_weather", "response": {"temp": 12}}},
            {"functionResponse": {"name": "get_weather", "response": {"result": "rain"}}}]})
    );
    assert_eq!(gemini_violations(&body), Vec::<String>::new());
    insta::assert_json_snapshot!("gemini_history_request", contents);

    // A result answering no call of the history cannot be sent.
    let orphan = ChatRequest::new("gemini-2.5-flash")
        .message(Message::user("hi"))
        .message(Message::tool_result("call_x", "1"));
    let server = MockServer::start().await;
    let error = gemini(&server).complete(&orphan).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::BadRequest);
    assert!(error.to_string().contains("`call_x`"), "{error}");
}

/// Gemini's `args` are an object on its wire; arguments a proxy sends as text that is not JSON are
/// the content of tool mode, repaired as a reply is, and a history sends such a call as `{}`.
#[tokio::test]
async fn gemini_arguments_as_text_are_repaired() {
    let answer = json!({"candidates": [{"content": {"parts": [
        {"functionCall": {"name": "response", "args": MALFORMED_ANSWER}}], "role": "model"},
        "finishReason": "STOP"}]});
    let server = serve(GEMINI_PATH, answer.to_string(), false).await;
    let request = base_tool_mode("gemini-2.5-flash");
    let response = gemini(&server).complete(&request).await.unwrap();
    assert_eq!(response.content, MALFORMED_ANSWER);
    assert_eq!(
        repaired(&response),
        json!({"answer": "Paris", "state": "done"})
    );
    assert_eq!(response.tool_calls[0].arguments, json!(MALFORMED_ANSWER));

    let streamed = format!("data: {answer}\n\n");
    let server = serve(GEMINI_STREAM_PATH, streamed, true).await;
    let backend = gemini(&server);
    let mut assembler = Assembler::default();
    let mut events = backend.stream(&request);
    while let Some(event) = events.next().await {
        assembler.push(event.unwrap());
    }
    let response = assembler.finish();
    assert_eq!(response.content, MALFORMED_ANSWER);
    assert_eq!(response.tool_calls[0].arguments, json!(MALFORMED_ANSWER));

    let server = serve(GEMINI_PATH, gemini_two_calls(), false).await;
    let history = ChatRequest::new("gemini-2.5-flash")
        .message(Message::user("Weather in Paris?"))
        .message(Message::assistant_calls(
            "",
            vec![ToolCall::new(
                "call_a",
                "get_weather",
                json!("{'city': 'Paris'"),
            )],
        ))
        .message(Message::tool_result("call_a", "error: invalid arguments"))
        .tool(weather());
    gemini(&server).complete(&history).await.unwrap();
    let body = sent(&server).await;
    assert_eq!(
        body["contents"][1]["parts"][0]["functionCall"]["args"],
        json!({})
    );
    assert_eq!(gemini_violations(&body), Vec::<String>::new());
}

#[tokio::test]
async fn gemini_tool_mode_beside_tools() {
    let answer = json!({"candidates": [{"content": {"parts": [
        {"functionCall": {"name": "response", "args": {"answer": "12 C"}}}], "role": "model"},
        "finishReason": "STOP"}]});
    let server = serve(GEMINI_PATH, answer.to_string(), false).await;
    let request = tool_mode("gemini-2.5-flash");
    let response = gemini(&server).complete(&request).await.unwrap();
    let body = sent(&server).await;
    let declarations = &body["tools"][0]["functionDeclarations"];
    assert_eq!(declarations[0]["name"], "response");
    assert_eq!(declarations[1]["name"], "get_weather");
    assert_eq!(
        body["toolConfig"],
        json!({"functionCallingConfig": {"mode": "ANY"}})
    );
    assert_eq!(response.content, r#"{"answer":"12 C"}"#);
    assert!(response.calls_to_run(&request).is_empty());
}

// ---- every adapter ----

#[tokio::test]
async fn requests_whose_tools_cannot_be_sent_fail_before_sending() {
    let server = MockServer::start().await;
    let backends: [(&str, Box<dyn Backend>); 3] = [
        ("gpt-4o-mini", Box::new(openai(&server))),
        ("claude-sonnet-4-5", Box::new(anthropic(&server))),
        ("gemini-2.5-flash", Box::new(gemini(&server))),
    ];
    for (model, backend) in &backends {
        let check = |request: ChatRequest, says: &str| {
            let says = says.to_owned();
            let backend = backend.as_ref();
            async move {
                let error = backend.complete(&request).await.unwrap_err();
                assert_eq!(error.kind(), ErrorKind::BadRequest, "{error}");
                assert!(error.to_string().contains(&says), "{error}");
            }
        };
        check(
            ask(model).tool(weather()),
            "two tools are named `get_weather`",
        )
        .await;
        check(
            ask(model).tool_choice(ToolChoice::Tool("nope".into())),
            "names `nope`",
        )
        .await;
        check(
            ask(model).tool(ToolSpec::new("get weather", "", json!({"type": "object"}))),
            "`get weather`",
        )
        .await;
        check(
            tool_mode(model).tool(ToolSpec::new("response", "", json!({}))),
            "`response`",
        )
        .await;
    }
    assert!(server.received_requests().await.unwrap().is_empty());
}

/// A backend without streaming streams its complete response; the calls survive the trip.
#[tokio::test]
async fn the_default_stream_keeps_the_calls() {
    struct Complete;
    impl Backend for Complete {
        fn provider(&self) -> &str {
            "complete"
        }
        fn capabilities(&self, _model: &str) -> claij_backends::Capabilities {
            claij_backends::Capabilities::prompted()
        }
        fn complete<'a>(
            &'a self,
            _request: &'a ChatRequest,
        ) -> claij_backends::BoxFuture<'a, Result<ChatResponse, Error>> {
            let mut response = ChatResponse::text(r#"{"city":"Paris"}"#).tool_calls(calls());
            response.text = "Checking both.".into();
            Box::pin(async { Ok(response) })
        }
    }
    let events: Vec<StreamEvent> = Complete
        .stream(&ask("m"))
        .map(Result::unwrap)
        .collect()
        .await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e, StreamEvent::ToolCall { index: 1, .. }))
    );
    let response = assembled(&Complete, &ask("m"), "complete").await.unwrap();
    check_calls(&response, ["call_a", "call_b"]);
    assert_eq!(response.content, r#"{"city":"Paris"}"#);
    assert_eq!(response.text, "Checking both.");
}
