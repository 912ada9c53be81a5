//! An FSM state's output (a `oneOf` of its transitions at the root) sent natively to OpenAI strict,
//! Anthropic and Gemini over wiremock: wrapped in an object envelope where the provider takes only an
//! object root, unwrapped on the way back (complete and streamed), and never prompted instead.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use claij_backends::{Anthropic, ApiKey, Backend, Gemini, HttpConfig, OpenAi, RetryPolicy};
use claij_fsm::{Action, Definition, Fsm, Interrupt, Runner};
use claij_interceptors::{Chain, Config, Context, Pipeline, StructuredMode};
use claij_validation::Validator;
use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

/// The repository's root (the tests read only files inside it).
fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every example FSM in `examples/fsm/` and its sub-FSMs in `examples/fsm/flows/`, by file name.
fn examples() -> Vec<(String, Fsm)> {
    let mut out = Vec::new();
    let mut paths: Vec<PathBuf> = ["examples/fsm", "examples/fsm/flows"]
        .into_iter()
        .flat_map(|dir| std::fs::read_dir(repo().join(dir)).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    for path in paths {
        let text = std::fs::read_to_string(&path).unwrap();
        let fsm = Fsm::from_json(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        out.push((
            path.file_name().unwrap().to_string_lossy().into_owned(),
            fsm,
        ));
    }
    assert!(out.len() >= 6, "examples/fsm has {} FSMs", out.len());
    out
}

/// The `llm` states of an FSM with their output schemas.
fn llm_states(fsm: &Fsm) -> Vec<(String, Value)> {
    fsm.definition()
        .states
        .iter()
        .filter(|s| s.action == Action::Llm)
        .filter_map(|s| Some((s.id.clone(), fsm.output_schema(&s.id)?.clone())))
        .collect()
}

#[derive(Clone, Copy, Debug)]
enum Provider {
    OpenAi,
    Anthropic,
    Gemini,
}

fn http(server: &MockServer, suffix: &str) -> HttpConfig {
    HttpConfig::new(format!("{}{suffix}", server.uri())).with_retry(RetryPolicy::none())
}

/// The provider's backend against `server`, its model, and its complete reply carrying `text`.
fn provider(p: Provider, server: &MockServer) -> (Arc<dyn Backend>, &'static str) {
    match p {
        Provider::OpenAi => (
            Arc::new(OpenAi::new(ApiKey::new("sk-test")).with_config(http(server, "/v1"))),
            "gpt-4o-mini",
        ),
        Provider::Anthropic => (
            Arc::new(Anthropic::new(ApiKey::new("sk-ant-test")).with_config(http(server, ""))),
            "claude-sonnet-4-5",
        ),
        Provider::Gemini => (
            Arc::new(Gemini::new(ApiKey::new("g-test")).with_config(http(server, ""))),
            "gemini-2.5-flash",
        ),
    }
}

/// A complete reply in the provider's wire format whose text is `text`.
fn reply(p: Provider, text: &str) -> Value {
    match p {
        Provider::OpenAi => json!({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "gpt-4o-mini",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text, "refusal": null},
                         "finish_reason": "stop", "logprobs": null}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        }),
        Provider::Anthropic => json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 5}
        }),
        Provider::Gemini => json!({
            "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}
        }),
    }
}

/// The schema the request carries as structured output, by provider.
fn sent_schema(p: Provider, body: &Value) -> Value {
    match p {
        Provider::OpenAi => body["response_format"]["json_schema"]["schema"].clone(),
        Provider::Anthropic => body["output_config"]["format"]["schema"].clone(),
        Provider::Gemini => body["generationConfig"]["responseSchema"].clone(),
    }
}

/// The one request the server received, as JSON.
async fn only_request(server: &MockServer) -> Value {
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 1, "one request");
    serde_json::from_slice(&requests[0].body).unwrap()
}

/// `CreateChatCompletionRequest` of the OpenAI spec copied into `fixtures/providers`.
fn openai_request_validator() -> Validator {
    let text = std::fs::read_to_string(
        repo().join("fixtures/providers/openai-chat-completions.schema.json"),
    )
    .unwrap();
    let spec: Value = serde_json::from_str(&text).unwrap();
    Validator::new(&json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$ref": "#/$defs/CreateChatCompletionRequest",
        "$defs": spec["$defs"],
    }))
    .unwrap()
}

/// The keywords Gemini's `Schema` takes (fixtures/providers/gemini-v1beta.openapi.json), and the two
/// the provider documents since (`anyOf`, `propertyOrdering`; see fixtures/providers/README.md).
fn gemini_schema_keywords() -> Vec<String> {
    let text =
        std::fs::read_to_string(repo().join("fixtures/providers/gemini-v1beta.openapi.json"))
            .unwrap();
    let spec: Value = serde_json::from_str(&text).unwrap();
    let mut keys: Vec<String> = spec["components"]["schemas"]["Schema"]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    keys.extend(["anyOf".to_owned(), "propertyOrdering".to_owned()]);
    keys
}

/// Checks the root of the schema sent against what the provider's spec allows there.
fn check_root(p: Provider, body: &Value, schema: &Value) {
    match p {
        Provider::OpenAi => {
            // Strict structured output: an object root, closed, every property required.
            assert_eq!(
                body["response_format"]["json_schema"]["strict"],
                json!(true)
            );
            assert_eq!(schema["type"], json!("object"), "{schema:#}");
            assert_eq!(schema["additionalProperties"], json!(false));
            assert!(schema.get("anyOf").is_none() && schema.get("oneOf").is_none());
            let names: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
            assert_eq!(json!(names), schema["required"]);
            if let Err(violations) = openai_request_validator().validate(body) {
                panic!("not a CreateChatCompletionRequest: {violations:?}\n{body:#}");
            }
        }
        Provider::Anthropic => {
            // A tool's `input_schema` is `"type": "object"` (InputSchema in the spec); structured
            // outputs want every object closed.
            assert_eq!(schema["type"], json!("object"), "{schema:#}");
            assert_eq!(schema["additionalProperties"], json!(false));
            assert!(schema.get("anyOf").is_none() && schema.get("oneOf").is_none());
        }
        Provider::Gemini => {
            let allowed = gemini_schema_keywords();
            for key in schema.as_object().unwrap().keys() {
                assert!(
                    allowed.contains(key),
                    "Gemini Schema has no `{key}`: {schema:#}"
                );
            }
            assert_eq!(
                body["generationConfig"]["responseMimeType"],
                json!("application/json")
            );
        }
    }
}

/// One ask of `schema` against the provider, the model replying `value` (in the envelope when the
/// request wrapped the root); the answer and the request sent.
async fn ask_once(p: Provider, schema: &Value, value: &Value) -> (Value, Value) {
    // First, what the request looks like (the reply does not matter for it).
    let probe = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(reply(p, &value.to_string())))
        .mount(&probe)
        .await;
    let (backend, model) = provider(p, &probe);
    let mut config = Config::new(model);
    config.max_retries = 0;
    config.structured = StructuredMode::Native;
    let pipeline =
        Pipeline::new(backend, config.clone(), Chain::new()).with_base_schema(schema.clone());
    let _ = pipeline.ask(&mut Context::default(), "go").await;
    let body = only_request(&probe).await;
    let sent = sent_schema(p, &body);
    let wrapped = sent["properties"]["value"].is_object() && sent["required"] == json!(["value"]);
    let text = if wrapped {
        json!({"value": value})
    } else {
        value.clone()
    };
    // Then the real ask, the model answering as the request asked.
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(reply(p, &text.to_string())))
        .mount(&server)
        .await;
    let (backend, _) = provider(p, &server);
    let pipeline = Pipeline::new(backend, config, Chain::new()).with_base_schema(schema.clone());
    let answer = pipeline
        .ask(&mut Context::default(), "go")
        .await
        .unwrap_or_else(|e| panic!("{p:?}: {e}\nsent {body:#}"));
    assert_eq!(answer.attempts.len(), 1, "{p:?}: valid at once");
    (answer.value, body)
}

/// A valid reply for `schema`.
fn valid(schema: &Value) -> Value {
    let value = claij_schema::example(schema).unwrap();
    assert!(Validator::new(schema).unwrap().is_valid(&value), "{value}");
    value
}

#[tokio::test]
async fn every_example_state_goes_native_on_openai_anthropic_and_gemini() {
    let mut checked = 0;
    for (file, fsm) in examples() {
        for (state, schema) in llm_states(&fsm) {
            let value = valid(&schema);
            for p in [Provider::OpenAi, Provider::Anthropic, Provider::Gemini] {
                let (answer, body) = ask_once(p, &schema, &value).await;
                let sent = sent_schema(p, &body);
                assert!(
                    sent.is_object(),
                    "{file} {state} {p:?}: no native output sent:\n{body:#}"
                );
                // Not prompted: the schema is not in the system prompt.
                assert!(
                    !body.to_string().contains("Respond with only a JSON value"),
                    "{file} {state} {p:?}: prompted"
                );
                check_root(p, &body, &sent);
                // The caller sees the value itself, never the envelope.
                assert_eq!(answer, value, "{file} {state} {p:?}");
                checked += 1;
            }
        }
    }
    // Five `llm` states today (code-review 3, release-note 1, tool-loop 1), on three providers.
    assert!(checked >= 15, "{checked} state/provider pairs");
}

/// The first `llm` state of `examples/fsm/tool-loop.json` (a union of its transitions at the root).
fn tool_loop_state() -> Value {
    let (_, fsm) = examples()
        .into_iter()
        .find(|(f, _)| f == "tool-loop.json")
        .unwrap();
    let (_, schema) = llm_states(&fsm).into_iter().next().unwrap();
    assert!(schema.get("oneOf").is_some(), "{schema:#}");
    schema
}

#[tokio::test]
async fn request_snapshots_of_an_fsm_state() {
    let schema = tool_loop_state();
    let value = valid(&schema);
    for (p, name) in [
        (Provider::OpenAi, "envelope_openai_strict"),
        (Provider::Anthropic, "envelope_anthropic"),
        (Provider::Gemini, "envelope_gemini"),
    ] {
        let (_, body) = ask_once(p, &schema, &value).await;
        let sent = sent_schema(p, &body);
        check_root(p, &body, &sent);
        let structured = match p {
            Provider::OpenAi => body["response_format"].clone(),
            Provider::Anthropic => body["output_config"].clone(),
            Provider::Gemini => body["generationConfig"].clone(),
        };
        insta::assert_json_snapshot!(name, structured);
    }
}

/// The attempts of one OpenAI ask of `schema` answered with `text` (no retries).
async fn attempts_for(schema: &Value, text: &str) -> Result<Value, Vec<Option<String>>> {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(reply(Provider::OpenAi, text)))
        .mount(&server)
        .await;
    let (backend, model) = provider(Provider::OpenAi, &server);
    let mut config = Config::new(model);
    config.max_retries = 0;
    let pipeline = Pipeline::new(backend, config, Chain::new()).with_base_schema(schema.clone());
    match pipeline.ask(&mut Context::default(), "go").await {
        Ok(answer) => Ok(answer.value),
        Err(claij_interceptors::Error::RetriesExhausted(exhausted)) => {
            Err(exhausted.attempts.iter().map(|a| a.raw.clone()).collect())
        }
        Err(other) => panic!("{other}"),
    }
}

#[tokio::test]
async fn an_invalid_value_in_the_envelope_is_judged_unwrapped() {
    // The envelope is taken off before validation: what the attempt keeps (and the retry prompt
    // quotes) is the value inside, checked against the full schema.
    let schema = tool_loop_state();
    let raws = attempts_for(
        &schema,
        &json!({"value": {"id": ["nowhere", "else"]}}).to_string(),
    )
    .await
    .unwrap_err();
    assert_eq!(
        raws,
        vec![Some(json!({"id": ["nowhere", "else"]}).to_string())]
    );
}

#[tokio::test]
async fn a_reply_outside_the_envelope_is_judged_as_it_is() {
    // A model that answers with the bare value (no envelope) is not refused for it.
    let schema = tool_loop_state();
    let value = valid(&schema);
    assert_eq!(attempts_for(&schema, &value.to_string()).await, Ok(value));
}

/// `text` cut in `n` pieces.
fn pieces(text: &str, n: usize) -> Vec<&str> {
    let step = text.len().div_ceil(n);
    (0..text.len())
        .step_by(step)
        .map(|i| &text[i..(i + step).min(text.len())])
        .collect()
}

/// Server-sent events carrying `events`, one `data:` line each (Anthropic's also name the event).
fn sse_events(events: &[Value]) -> String {
    let mut body = String::new();
    for event in events {
        if let Some(name) = event.get("type").and_then(Value::as_str) {
            body.push_str(&format!("event: {name}\n"));
        }
        body.push_str(&format!("data: {event}\n\n"));
    }
    body
}

/// Anthropic's stream of one content block: `start` opens it, `delta(piece)` carries each piece.
fn anthropic_stream(
    start: Value,
    delta: impl Fn(&str) -> Value,
    pieces: &[&str],
    stop: &str,
) -> String {
    let mut events = vec![
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5", "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": start}),
    ];
    for piece in pieces {
        events.push(json!({"type": "content_block_delta", "index": 0, "delta": delta(piece)}));
    }
    events.push(json!({"type": "content_block_stop", "index": 0}));
    events.push(
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
        "usage": {"output_tokens": 5}}),
    );
    events.push(json!({"type": "message_stop"}));
    sse_events(&events)
}

/// The provider's stream of the envelope's text `text` as a native (structured-output) reply.
fn native_stream(p: Provider, text: &str) -> String {
    let pieces = pieces(text, 6);
    match p {
        Provider::OpenAi => {
            let mut chunks: Vec<Value> = pieces
                .iter()
                .map(|piece| json!({"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "gpt-4o-mini",
                    "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": null}]}))
                .collect();
            chunks.push(json!({"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "gpt-4o-mini",
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}));
            sse_events(&chunks) + "data: [DONE]\n\n"
        }
        Provider::Anthropic => anthropic_stream(
            json!({"type": "text", "text": ""}),
            |piece| json!({"type": "text_delta", "text": piece}),
            &pieces,
            "end_turn",
        ),
        Provider::Gemini => {
            let chunks: Vec<Value> = pieces
                .iter()
                .enumerate()
                .map(|(n, piece)| {
                    let mut candidate = json!({"content": {"role": "model", "parts": [{"text": piece}]}, "index": 0});
                    if n + 1 == pieces.len() {
                        candidate["finishReason"] = json!("STOP");
                    }
                    json!({"candidates": [candidate]})
                })
                .collect();
            sse_events(&chunks)
        }
    }
}

/// The provider's stream calling the output tool with `arguments` (Gemini sends a call whole).
fn tool_stream(p: Provider, arguments: &Value) -> String {
    let text = arguments.to_string();
    let pieces = pieces(&text, 5);
    match p {
        Provider::OpenAi => {
            let mut chunks: Vec<Value> = pieces
                .iter()
                .enumerate()
                .map(|(n, piece)| {
                    let call = if n == 0 {
                        json!({"index": 0, "id": "call_1", "type": "function", "function": {"name": "response", "arguments": piece}})
                    } else {
                        json!({"index": 0, "function": {"arguments": piece}})
                    };
                    json!({"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "gpt-4o-mini",
                        "choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": null}]})
                })
                .collect();
            chunks.push(json!({"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "gpt-4o-mini",
                "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}));
            sse_events(&chunks) + "data: [DONE]\n\n"
        }
        Provider::Anthropic => anthropic_stream(
            json!({"type": "tool_use", "id": "toolu_1", "name": "response", "input": {}}),
            |piece| json!({"type": "input_json_delta", "partial_json": piece}),
            &pieces,
            "tool_use",
        ),
        Provider::Gemini => sse_events(&[json!({"candidates": [{"content": {"role": "model",
            "parts": [{"functionCall": {"name": "response", "args": arguments}}]}, "finishReason": "STOP", "index": 0}]})]),
    }
}

/// Streams `body` from `p` with `schema` in `mode`: the answer, the request and the partial values shown.
async fn streamed(
    p: Provider,
    mode: StructuredMode,
    schema: Value,
    body: String,
) -> (Value, Value, Vec<Value>) {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream")
                .set_body_string(body),
        )
        .mount(&server)
        .await;
    let (backend, model) = provider(p, &server);
    let mut config = Config::new(model);
    config.structured = mode;
    let pipeline = Pipeline::new(backend, config, Chain::new()).with_base_schema(schema);
    let partials = Arc::new(Mutex::new(Vec::<Value>::new()));
    let seen = Arc::clone(&partials);
    let answer = pipeline
        .ask_streaming(&mut Context::default(), "go", &move |v: &Value| {
            seen.lock().unwrap().push(v.clone());
        })
        .await
        .unwrap_or_else(|e| panic!("{p:?}: {e}"));
    let request = only_request(&server).await;
    let partials = partials.lock().unwrap().clone();
    (answer.value, request, partials)
}

/// Every partial value shown is unwrapped, and the last is the answer.
fn check_partials(p: Provider, partials: &[Value], value: &Value) {
    assert!(!partials.is_empty(), "{p:?}: no partial value shown");
    for partial in partials {
        assert!(
            partial.get("value").is_none(),
            "{p:?}: an envelope shown: {partial}"
        );
    }
    assert_eq!(partials.last(), Some(value), "{p:?}");
}

#[tokio::test]
async fn a_streamed_reply_in_the_envelope_shows_unwrapped_partials() {
    // Gemini takes the union at the root natively: its stream carries the value itself.
    for p in [Provider::OpenAi, Provider::Anthropic, Provider::Gemini] {
        let schema = tool_loop_state();
        let value = valid(&schema);
        let text = match p {
            Provider::Gemini => value.to_string(),
            _ => json!({"value": value}).to_string(),
        };
        let (answer, request, partials) =
            streamed(p, StructuredMode::Native, schema, native_stream(p, &text)).await;
        assert_eq!(answer, value, "{p:?}");
        let sent = sent_schema(p, &request);
        match p {
            Provider::Gemini => assert!(sent.get("anyOf").is_some(), "{p:?}: {sent}"),
            _ => assert_eq!(sent["required"], json!(["value"]), "{p:?}: {sent}"),
        }
        check_partials(p, &partials, &value);
    }
}

#[tokio::test]
async fn the_trail_keeps_the_unwrapped_event() {
    let definition: Definition = serde_json::from_value(json!({
        "id": "fork",
        "states": [{"id": "ask", "action": "llm"}, {"id": "yes", "action": "end"}, {"id": "no", "action": "end"}],
        "transitions": [
            {"id": ["start", "ask"], "schema": {"type": "object"}},
            {"id": ["ask", "yes"], "schema": {"type": "object", "properties": {"why": {"type": "string"}}, "required": ["why"]}},
            {"id": ["ask", "no"], "schema": {"type": "object", "properties": {"why": {"type": "string"}}, "required": ["why"]}}
        ]
    }))
    .unwrap();
    let fsm = Fsm::new(definition).unwrap();
    let event = json!({"id": ["ask", "yes"], "why": "because"});
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(reply(
            Provider::OpenAi,
            &json!({"value": event}).to_string(),
        )))
        .mount(&server)
        .await;
    let (backend, model) = provider(Provider::OpenAi, &server);
    let runner = Runner::new(fsm).with_llm(backend, Config::new(model));
    let mut run = runner.start(json!({})).unwrap();
    runner.run(&mut run, &Interrupt::new(), None).await.unwrap();
    assert_eq!(run.state, "yes");
    let last = run.trail.entries.last().unwrap();
    assert_eq!(last.event, event);
    let body = only_request(&server).await;
    assert_eq!(
        body["response_format"]["json_schema"]["schema"]["required"],
        json!(["value"])
    );
}

/// A reply in the provider's wire format calling the output tool with `arguments`.
fn tool_reply(p: Provider, arguments: &Value) -> Value {
    match p {
        Provider::OpenAi => json!({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "gpt-4o-mini",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "refusal": null,
                "tool_calls": [{"id": "call_1", "type": "function",
                    "function": {"name": "response", "arguments": arguments.to_string()}}]},
                "finish_reason": "tool_calls", "logprobs": null}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        }),
        Provider::Anthropic => json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "response", "input": arguments}],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 5}
        }),
        Provider::Gemini => json!({
            "candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"name": "response", "args": arguments}}]},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}
        }),
    }
}

/// The output tool's parameters in the request, by provider.
fn tool_parameters(p: Provider, body: &Value) -> Value {
    match p {
        Provider::OpenAi => body["tools"][0]["function"]["parameters"].clone(),
        Provider::Anthropic => body["tools"][0]["input_schema"].clone(),
        Provider::Gemini => body["tools"][0]["functionDeclarations"][0]["parameters"].clone(),
    }
}

#[tokio::test]
async fn tool_mode_wraps_the_parameters_and_unwraps_the_call_on_every_provider() {
    // A tool's parameters are an object in every provider's format (Anthropic's InputSchema is
    // `"type": "object"`, Gemini's parameters name the function's parameters): the union goes in the
    // envelope for all three, Gemini included.
    let schema = tool_loop_state();
    let value = valid(&schema);
    for p in [Provider::OpenAi, Provider::Anthropic, Provider::Gemini] {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(
                ResponseTemplate::new(200).set_body_json(tool_reply(p, &json!({"value": value}))),
            )
            .mount(&server)
            .await;
        let (backend, model) = provider(p, &server);
        let mut config = Config::new(model);
        config.max_retries = 0;
        config.structured = StructuredMode::Tool;
        let pipeline =
            Pipeline::new(backend, config, Chain::new()).with_base_schema(schema.clone());
        let answer = pipeline
            .ask(&mut Context::default(), "go")
            .await
            .unwrap_or_else(|e| panic!("{p:?}: {e}"));
        assert_eq!(answer.value, value, "{p:?}");
        let body = only_request(&server).await;
        let parameters = tool_parameters(p, &body);
        assert_eq!(parameters["type"], json!("object"), "{p:?}: {body:#}");
        assert_eq!(parameters["required"], json!(["value"]), "{p:?}");
        assert!(parameters.get("anyOf").is_none() && parameters.get("oneOf").is_none());
        if let Provider::Gemini = p {
            let allowed = gemini_schema_keywords();
            for key in parameters.as_object().unwrap().keys() {
                assert!(allowed.contains(key), "Gemini Schema has no `{key}`");
            }
        }
    }
}

#[tokio::test]
async fn a_streamed_tool_call_in_the_envelope_shows_unwrapped_partials() {
    for p in [Provider::OpenAi, Provider::Anthropic, Provider::Gemini] {
        let schema = tool_loop_state();
        let value = valid(&schema);
        let body = tool_stream(p, &json!({"value": value}));
        let (answer, request, partials) = streamed(p, StructuredMode::Tool, schema, body).await;
        assert_eq!(answer, value, "{p:?}");
        assert_eq!(
            tool_parameters(p, &request)["required"],
            json!(["value"]),
            "{p:?}"
        );
        check_partials(p, &partials, &value);
    }
}
