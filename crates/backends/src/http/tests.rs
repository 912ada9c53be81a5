//! Unit tests of the HTTP machinery's pure parts: SSE parsing, backoff, `Retry-After`, scrubbing.

use std::time::{Duration, SystemTime};

use reqwest::header::{HeaderMap, HeaderValue};

use super::retry::{Next, RetryPolicy, parse_retry_after, retry_after};
use super::sse::{SseEvent, SseParser};
use super::transport::{request_id, scrub};
use crate::{ApiKey, Error, ErrorContext};

#[path = "../../../../fixtures/fixture.rs"]
mod fixtures;

fn ev(event: Option<&str>, data: &str) -> SseEvent {
    SseEvent {
        event: event.map(str::to_owned),
        data: data.to_owned(),
    }
}

/// Parses `chunks` in order, then ends the stream.
#[track_caller]
fn check_sse(chunks: &[&[u8]], expected: &[SseEvent]) {
    let mut parser = SseParser::new();
    let mut got: Vec<SseEvent> = chunks.iter().flat_map(|c| parser.push(c)).collect();
    got.extend(parser.finish());
    assert_eq!(got, expected, "chunks: {chunks:?}");
}

#[test]
fn sse_data_lines() {
    check_sse(
        &[b"data: {\"a\":1}\n\ndata: {\"b\":2}\n\n"],
        &[ev(None, "{\"a\":1}"), ev(None, "{\"b\":2}")],
    );
    // No space after the colon; only one space is stripped.
    check_sse(
        &[b"data:x\n\ndata:  y\n\n"],
        &[ev(None, "x"), ev(None, " y")],
    );
}

#[test]
fn sse_multi_line_data_joins_with_newlines() {
    check_sse(
        &[b"data: one\ndata: two\ndata:\n\n"],
        &[ev(None, "one\ntwo\n")],
    );
}

#[test]
fn sse_event_names_and_comments() {
    check_sse(
        &[b": keep-alive\n\nevent: message_start\ndata: {}\n\n: OPENROUTER PROCESSING\n\n"],
        &[ev(Some("message_start"), "{}")],
    );
    // An event name without data dispatches nothing, and does not leak into the next event.
    check_sse(&[b"event: ping\n\ndata: x\n\n"], &[ev(None, "x")]);
    // Unknown fields, `id` and `retry` are ignored.
    check_sse(
        &[b"id: 7\nretry: 10\nfoo: bar\ndata: x\n\n"],
        &[ev(None, "x")],
    );
}

/// Parses `chunks` with a 16-byte event limit: the events delivered, and whether it overflowed.
#[track_caller]
fn check_sse_limit(chunks: &[&[u8]], expected: &[SseEvent], overflows: bool) {
    let mut parser = SseParser::with_max_event(16);
    let mut got: Vec<SseEvent> = chunks.iter().flat_map(|c| parser.push(c)).collect();
    got.extend(parser.finish());
    assert_eq!(got, expected, "chunks: {chunks:?}");
    assert_eq!(parser.overflowed(), overflows, "chunks: {chunks:?}");
}

#[test]
fn sse_events_past_the_limit_overflow_without_being_held() {
    // Many events, each within the limit, however many in all.
    let many = b"data: 0123456789\n\n".repeat(100);
    let each = vec![ev(None, "0123456789"); 100];
    check_sse_limit(&[&many], &each, false);
    // One line past the limit, in one chunk or cut anywhere, and never ended.
    check_sse_limit(&[b"data: 0123456789abcdefXYZ\n\n"], &[], true);
    check_sse_limit(&[b"data: 01234", b"56789abcdef", b"XYZ"], &[], true);
    // Data lines that add up past the limit.
    check_sse_limit(&[b"data: 0123456\ndata: 789abcdef\n\n"], &[], true);
    // Events before the big one are delivered; nothing after it is read.
    check_sse_limit(
        &[b"data: ok\n\ndata: 0123456789abcdefXYZ\n\ndata: later\n\n"],
        &[ev(None, "ok")],
        true,
    );
    // Every line counts as read, whatever its field (the limit is on bytes held, not on data).
    check_sse_limit(&[b"event: abcdefghijklmnop\n"], &[], true);
    check_sse_limit(&[b": a comment longer than 16 bytes\n"], &[], true);
}

#[test]
fn sse_done_marker() {
    let mut parser = SseParser::new();
    let events = parser.push(b"data: {\"x\":1}\n\ndata: [DONE]\n\n");
    assert_eq!(events.len(), 2);
    assert!(!events[0].is_done());
    assert!(events[1].is_done());
}

#[test]
fn sse_chunks_split_anywhere() {
    let text = "event: delta\r\ndata: h\u{e9}llo\r\n\r\ndata: [DONE]\r\n\r\n";
    let expected = [ev(Some("delta"), "h\u{e9}llo"), ev(None, "[DONE]")];
    for cut in 0..=text.len() {
        let (a, b) = text.as_bytes().split_at(cut);
        check_sse(&[a, b], &expected);
    }
    // Byte by byte.
    let bytes: Vec<&[u8]> = text.as_bytes().chunks(1).collect();
    check_sse(&bytes, &expected);
}

#[test]
fn sse_line_endings() {
    let expected = [ev(None, "a"), ev(None, "b")];
    check_sse(&[b"data: a\n\ndata: b\n\n"], &expected);
    check_sse(&[b"data: a\r\n\r\ndata: b\r\n\r\n"], &expected);
    check_sse(&[b"data: a\r\rdata: b\r\r"], &expected);
    // A `\r` at the end of a chunk and its `\n` at the start of the next are one line end.
    check_sse(&[b"data: a\r", b"\n\r", b"\ndata: b\r\n\r\n"], &expected);
}

#[test]
fn sse_unterminated_event_is_dispatched_at_the_end() {
    check_sse(&[b"data: last"], &[ev(None, "last")]);
    check_sse(&[b"data: last\n"], &[ev(None, "last")]);
    check_sse(&[b""], &[]);
    check_sse(&[b": only a comment"], &[]);
}

#[test]
fn sse_invalid_utf8_does_not_panic() {
    check_sse(&[b"data: \xff\xfe\n\n"], &[ev(None, "\u{fffd}\u{fffd}")]);
}

#[test]
fn backoff_doubles_up_to_the_cap() {
    let policy = RetryPolicy::default()
        .with_backoff(Duration::from_millis(100), Duration::from_millis(1000))
        .with_jitter(0.0);
    let waits: Vec<u128> = (1..=6)
        .map(|n| policy.backoff(n, 0.7).as_millis())
        .collect();
    assert_eq!(waits, [100, 200, 400, 800, 1000, 1000]);
    assert_eq!(
        policy.backoff(u32::MAX, 0.0),
        Duration::from_millis(1000),
        "no overflow"
    );
}

#[test]
fn jitter_takes_off_at_most_its_share() {
    let policy = RetryPolicy::default()
        .with_backoff(Duration::from_millis(1000), Duration::from_secs(10))
        .with_jitter(0.5);
    assert_eq!(policy.backoff(1, 0.0), Duration::from_millis(1000));
    assert_eq!(policy.backoff(1, 1.0), Duration::from_millis(500));
    let silly = policy.with_jitter(f64::NAN);
    assert_eq!(silly.backoff(1, 0.9), Duration::from_millis(1000));
}

fn status_error(status: u16) -> Error {
    Error::Server {
        context: ErrorContext::new("p").with_status(status),
        message: String::new(),
    }
}

#[test]
fn retried_statuses_and_failures() {
    for status in [408, 500, 502, 503, 504, 520, 529] {
        assert!(status_error(status).is_retryable(), "{status}");
    }
    for status in [400, 401, 403, 404, 422, 501, 505, 511] {
        assert!(!status_error(status).is_retryable(), "{status}");
    }
    let network = Error::Network {
        context: ErrorContext::new("p").with_status(200),
        message: "reset".into(),
    };
    assert!(network.is_retryable());
    let malformed = Error::MalformedResponse {
        context: ErrorContext::new("p").with_status(200),
        reason: "truncated".into(),
        excerpt: String::new(),
    };
    assert!(!malformed.is_retryable());
}

#[test]
fn waits_respect_requests_total_time_and_retry_after() {
    let policy = RetryPolicy::default()
        .with_max_requests(3)
        .with_backoff(Duration::from_millis(100), Duration::from_secs(2))
        .with_max_total(Duration::from_secs(10))
        .with_jitter(0.0);
    let ms = Duration::from_millis;
    let secs = Duration::from_secs;
    let e = status_error(500);
    let limited = |after: Duration| Error::RateLimited {
        context: ErrorContext::new("p").with_status(429),
        retry_after: Some(after),
        message: String::new(),
    };
    let too_long = |wait: Duration, left: Duration| Next::TooLong {
        wait,
        budget: secs(10),
        left,
    };
    #[track_caller]
    fn check(policy: &RetryPolicy, error: &Error, request: u32, elapsed: Duration, expected: Next) {
        assert_eq!(policy.next(error, request, elapsed), expected, "{error}");
    }
    check(&policy, &e, 1, Duration::ZERO, Next::Retry(ms(100)));
    check(&policy, &e, 2, Duration::ZERO, Next::Retry(ms(200)));
    check(&policy, &e, 3, Duration::ZERO, Next::Stop); // out of requests
    check(&policy, &e, 1, ms(9950), Next::Stop); // would pass max_total
    check(&policy, &status_error(400), 1, Duration::ZERO, Next::Stop);
    check(
        &policy,
        &limited(secs(1)),
        1,
        Duration::ZERO,
        Next::Retry(secs(1)),
    );
    // The server's wait is not capped at max_backoff (2 s): it is waited exactly, or not at all.
    check(
        &policy,
        &limited(ms(9_400)),
        1,
        Duration::ZERO,
        Next::Retry(ms(9_400)),
    );
    check(
        &policy,
        &limited(secs(3600)),
        1,
        Duration::ZERO,
        too_long(secs(3600), secs(10)),
    );
    check(
        &policy,
        &limited(secs(6)),
        2,
        secs(5),
        too_long(secs(6), secs(5)),
    );
    check(&policy, &limited(secs(3600)), 3, Duration::ZERO, Next::Stop); // out of requests
    check(&RetryPolicy::none(), &e, 1, Duration::ZERO, Next::Stop);
}

#[test]
fn exhausted_quotas_are_never_retried_whatever_the_status() {
    let quota = Error::QuotaExhausted {
        context: ErrorContext::new("openai").with_status(429),
        message: "You exceeded your current quota".into(),
    };
    assert!(!quota.is_retryable());
    assert_eq!(
        RetryPolicy::default().next(&quota, 1, Duration::ZERO),
        Next::Stop
    );
    let too_large = Error::BodyTooLarge {
        context: ErrorContext::new("openai").with_status(503),
        which: crate::BodyLimit::Body,
        limit: 10,
    };
    assert!(!too_large.is_retryable());
}

#[test]
fn retry_after_seconds_and_dates() {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let check = |value: &str, expected: Option<Duration>| {
        assert_eq!(parse_retry_after(value, now), expected, "{value:?}");
    };
    check("1", Some(Duration::from_secs(1)));
    check(" 120 ", Some(Duration::from_secs(120)));
    check("1.5", Some(Duration::from_millis(1500)));
    let later = httpdate::fmt_http_date(now + Duration::from_secs(30));
    check(&later, Some(Duration::from_secs(30)));
    let earlier = httpdate::fmt_http_date(now - Duration::from_secs(30));
    check(&earlier, Some(Duration::ZERO));
    check("soon", None);
    check("-1", None);
    check("", None);

    let mut headers = HeaderMap::new();
    headers.insert("retry-after", HeaderValue::from_static("7"));
    assert_eq!(retry_after(&headers), Some(Duration::from_secs(7)));
    headers.insert("retry-after-ms", HeaderValue::from_static("250"));
    assert_eq!(retry_after(&headers), Some(Duration::from_millis(250)));
}

#[test]
fn request_ids_from_headers() {
    let mut headers = HeaderMap::new();
    assert_eq!(request_id(&headers), None);
    headers.insert("request-id", HeaderValue::from_static("req_anthropic"));
    assert_eq!(request_id(&headers).as_deref(), Some("req_anthropic"));
    headers.insert("x-request-id", HeaderValue::from_static("req_openai"));
    assert_eq!(request_id(&headers).as_deref(), Some("req_openai"));
}

#[test]
fn scrub_removes_the_key_everywhere() {
    let key = ApiKey::new("sk-test-0123456789abcdef");
    let context = ErrorContext::new("p").with_status(401);
    let echoed = format!("bad key {} given", key.expose());
    let errors = [
        Error::Authentication {
            context: context.clone(),
            message: echoed.clone(),
        },
        Error::MalformedResponse {
            context: context.clone(),
            reason: echoed.clone(),
            excerpt: echoed.clone(),
        },
        Error::RateLimited {
            context,
            retry_after: None,
            message: echoed,
        },
    ];
    for error in errors {
        let scrubbed = scrub(error, &key);
        let shown = format!("{scrubbed} {scrubbed:?}");
        assert!(!shown.contains(key.expose()), "{shown}");
        assert!(shown.contains("bad key *** given"), "{shown}");
    }
}

#[test]
fn scrub_removes_a_key_an_excerpt_cut_short() {
    let key = ApiKey::new("sk-test-0123456789abcdef");
    let cut = Error::MalformedResponse {
        context: ErrorContext::new("p"),
        reason: "not JSON".into(),
        excerpt: crate::excerpt(
            format!("{}{}", "x".repeat(190), key.expose()).as_bytes(),
            200,
        ),
    };
    let Error::MalformedResponse { excerpt, .. } = scrub(cut, &key) else {
        panic!("variant changed")
    };
    assert!(excerpt.ends_with("x***..."), "{excerpt}");
    assert!(!excerpt.contains("sk-test-01"), "{excerpt}");
    // Short coincidences stay.
    let plain = Error::Server {
        context: ErrorContext::new("p"),
        message: "ends with sk-".into(),
    };
    assert_eq!(
        scrub(plain, &key).to_string(),
        "p: server error: ends with sk-"
    );
}

#[test]
fn scrub_removes_encoded_copies_of_the_key() {
    let key = ApiKey::new("live-key-1234567890");
    // base64("user:live-key-1234567890") in a Basic header, and the key percent-encoded in a URL.
    let error = Error::Authentication {
        context: ErrorContext::new("p"),
        message: "rejected Authorization: Basic dXNlcjpsaXZlLWtleS0xMjM0NTY3ODkw".into(),
    };
    assert_eq!(
        scrub(error, &key).to_string(),
        "p: authentication failed: rejected Authorization: Basic dXNlcjp***"
    );
    let key = ApiKey::new("k3y/with+reserved=chars");
    let error = Error::Server {
        context: ErrorContext::new("p"),
        message: "bad url /v1?key=k3y%2Fwith%2Breserved%3Dchars".into(),
    };
    assert_eq!(
        scrub(error, &key).to_string(),
        "p: server error: bad url /v1?key=***"
    );
}

/// The bytes, URL and headers each provider sends, snapshotted: the lean call path must send what
/// the `Value` round trip sent, byte for byte.
#[cfg(all(feature = "openai", feature = "anthropic", feature = "gemini"))]
mod bodies {
    use serde_json::{Value, json};

    use crate::anthropic::Anthropic;
    use crate::gemini::{Gemini, SchemaField};
    use crate::http::{HttpBackend, HttpConfig};
    use crate::openai::{OpenAi, OpenAiCompatible, OpenRouter, StructuredDialect};
    use crate::{
        Adapter, ApiKey, ChatRequest, Message, OutputMode, StructuredOutput, ToolCall, ToolSpec,
    };

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "answer": {"type": "string", "description": "The answer"},
                "confidence": {"type": ["number", "null"]},
                "tags": {"type": "array", "items": {"enum": ["a", "b"]}}
            },
            "required": ["answer", "confidence", "tags"],
            "additionalProperties": false
        })
    }

    fn request(model: &str, mode: Option<OutputMode>) -> ChatRequest {
        let mut request = ChatRequest::new(model)
            .system("Be brief.")
            .message(Message::user("What is 2+2? \u{e9}\"quoted\"\n"))
            .message(Message::assistant_calls(
                "Looking it up.",
                vec![ToolCall::new("call_1", "lookup", json!({"q": "2+2"}))],
            ))
            .message(Message::tool_result("call_1", "4"))
            .temperature(0.2)
            .max_tokens(300)
            .seed(7)
            .stop("END")
            .tool(ToolSpec::new(
                "lookup",
                "Looks a thing up",
                json!({"type": "object", "properties": {"q": {"type": "string"}}}),
            ));
        if let Some(mode) = mode {
            request.structured_output = Some(StructuredOutput {
                name: "response".to_owned(),
                schema: schema().into(),
                strict: true,
                mode,
            });
        }
        request
    }

    /// What `backend` would send for `request`: URL, headers (secret ones masked) and body.
    fn sent<A: Adapter>(backend: &HttpBackend<A>, request: &ChatRequest, stream: bool) -> String {
        let prepared = backend.prepare(request, stream).unwrap();
        let mut out = format!("POST {}\n", prepared.url);
        for (name, value) in prepared.headers.iter() {
            let value = if value.is_sensitive() {
                "<sensitive>"
            } else {
                value.to_str().unwrap()
            };
            out.push_str(&format!("{name}: {value}\n"));
        }
        out.push_str(std::str::from_utf8(&prepared.body).unwrap());
        out
    }

    fn config() -> HttpConfig {
        HttpConfig::new("http://127.0.0.1:9/v1?tenant=t1").with_header("x-gateway", "g")
    }

    #[test]
    fn each_provider_sends_the_same_bytes() {
        let key = || ApiKey::new("sk-test-key");
        let openai = OpenAi::new(key()).with_config(config()).without_preflight();
        let openrouter = OpenRouter::new(key())
            .with_config(config())
            .without_preflight();
        let compatible = OpenAiCompatible::new("http://127.0.0.1:9/v1").without_preflight();
        let anthropic = Anthropic::new(key())
            .with_config(config())
            .without_preflight();
        let gemini = Gemini::new(key()).with_config(config()).without_preflight();
        let gemini_json = Gemini::new(key())
            .with_config(config())
            .with_schema_field(SchemaField::ResponseJsonSchema)
            .without_preflight();
        let mut all = String::new();
        let mut add = |label: &str, text: String| {
            all.push_str(&format!("== {label}\n{text}\n"));
        };
        for (label, mode) in [
            ("none", None),
            ("native", Some(OutputMode::Native)),
            ("tool", Some(OutputMode::Tool)),
        ] {
            for stream in [false, true] {
                let tag = format!("{label}, stream {stream}");
                add(
                    &format!("openai {tag}"),
                    sent(&openai, &request("gpt-4o-mini", mode), stream),
                );
                add(
                    &format!("openrouter {tag}"),
                    sent(
                        &openrouter,
                        &request("google/gemini-2.5-flash", mode),
                        stream,
                    ),
                );
                add(
                    &format!("anthropic {tag}"),
                    sent(&anthropic, &request("claude-sonnet-4-5", mode), stream),
                );
                add(
                    &format!("gemini {tag}"),
                    sent(&gemini, &request("gemini-2.5-flash", mode), stream),
                );
                add(
                    &format!("gemini json schema {tag}"),
                    sent(&gemini_json, &request("gemini-2.5-flash", mode), stream),
                );
            }
            for dialect in StructuredDialect::ALL {
                let backend = compatible.clone().with_structured_output(dialect);
                add(
                    &format!("compatible {dialect} {label}"),
                    sent(&backend, &request("smol", mode), false),
                );
            }
        }
        insta::assert_snapshot!(all);
    }

    /// The URL and headers are built once per backend: a backend changed after a call (another
    /// base URL, key or adapter setting) builds them again, and the original keeps its own.
    #[test]
    fn a_changed_backend_builds_its_url_and_headers_again() {
        let plain = request("gpt-4o-mini", None);
        let first = OpenAi::new(ApiKey::new("sk-one"))
            .with_config(config())
            .without_preflight();
        let url = |b: &OpenAi| b.prepare(&plain, false).unwrap().url.to_string();
        let auth = |b: &OpenAi| {
            let prepared = b.prepare(&plain, false).unwrap();
            prepared.headers["authorization"]
                .to_str()
                .unwrap()
                .to_owned()
        };
        assert_eq!(
            url(&first),
            "http://127.0.0.1:9/v1/chat/completions?tenant=t1"
        );
        assert_eq!(auth(&first), "Bearer sk-one");
        let moved = first.clone().with_base_url("http://127.0.0.1:10/v2");
        assert_eq!(url(&moved), "http://127.0.0.1:10/v2/chat/completions");
        let rekeyed = first.clone().with_key(ApiKey::new("sk-two"));
        assert_eq!(auth(&rekeyed), "Bearer sk-two");
        let regated = first
            .clone()
            .with_config(HttpConfig::new("http://127.0.0.1:11/v1").with_header("x-gateway", "h"));
        let prepared = regated.prepare(&plain, false).unwrap();
        assert_eq!(prepared.headers["x-gateway"], "h");
        assert_eq!(
            prepared.url.as_str(),
            "http://127.0.0.1:11/v1/chat/completions"
        );
        assert_eq!(
            url(&first),
            "http://127.0.0.1:9/v1/chat/completions?tenant=t1"
        );
        assert_eq!(auth(&first), "Bearer sk-one");
        // Gemini's path names the model: each model gets its own URL.
        let gemini = Gemini::new(ApiKey::new("k")).without_preflight();
        let for_model = |model: &str| {
            let prepared = gemini.prepare(&request(model, None), false).unwrap();
            prepared.url.path().to_owned()
        };
        assert_eq!(
            for_model("gemini-2.5-flash"),
            "/v1beta/models/gemini-2.5-flash:generateContent"
        );
        assert_eq!(
            for_model("gemini-2.5-pro"),
            "/v1beta/models/gemini-2.5-pro:generateContent"
        );
        assert_eq!(
            for_model("gemini-2.5-flash"),
            "/v1beta/models/gemini-2.5-flash:generateContent"
        );
    }

    /// A bad extra header fails every call the same way (the failure is kept, not retried).
    #[test]
    fn a_bad_extra_header_fails_each_call() {
        let bad = OpenAi::new(ApiKey::new("k"))
            .with_config(HttpConfig::new("http://127.0.0.1:9/v1").with_header("x-bad", "a\nb"))
            .without_preflight();
        let request = request("gpt-4o-mini", None);
        for _ in 0..2 {
            let error = bad.prepare(&request, false).err().unwrap();
            assert!(error.to_string().contains("x-bad"), "{error}");
        }
    }

    #[test]
    fn a_big_schema_is_sent_as_it_serializes() {
        let big = super::fixtures::json("fixtures/bench/big.json");
        let openai = OpenAi::new(ApiKey::new("k")).without_preflight();
        let mut request = ChatRequest::new("gpt-4o").message(Message::user("Go"));
        request.structured_output = Some(StructuredOutput {
            name: "response".to_owned(),
            schema: big.clone().into(),
            strict: true,
            mode: OutputMode::Native,
        });
        let body = openai.prepare(&request, false).unwrap().body;
        let expected = format!(
            r#"{{"model":"gpt-4o","messages":[{{"role":"user","content":"Go"}}],"response_format":{{"type":"json_schema","json_schema":{{"name":"response","strict":true,"schema":{}}}}}}}"#,
            serde_json::to_string(&big).unwrap()
        );
        assert_eq!(std::str::from_utf8(&body).unwrap(), expected);
    }
}

/// A call in flight holds its future (boxed by [`crate::Backend::complete`]): over HTTP/2 driven
/// directly that is most of what a call costs, so it stays small. A future passed into an async
/// function is held once in each frame it passes through (5.3 kB when `transport::exchange` took
/// the request's future rather than a closure making it), the connect, needed once per
/// connection, is boxed apart (640 bytes for the direct send when it was not), and the request's
/// head is built after the last wait before h2 takes it, and the body is read through a borrowed
/// response (1,768 bytes when `read_body` took it); the URL is shared with the backend's cache and
/// the direct send is an async block (its arguments held once: 304 bytes as an async function).
#[cfg(feature = "openai")]
#[test]
fn a_call_in_flight_holds_a_small_future() {
    use crate::openai::OpenAi;
    let backend = OpenAi::new(ApiKey::new("sk-test")).with_config(
        super::HttpConfig::new("http://127.0.0.1:9/v1")
            .with_http_version(super::HttpVersion::Http2),
    );
    let request = crate::ChatRequest::new("m");
    let call = backend.call(&request);
    assert!(
        std::mem::size_of_val(&call) <= 1500,
        "{} bytes",
        std::mem::size_of_val(&call)
    );
    let connection =
        super::direct::Connection::new(Duration::from_secs(1), "claij", Default::default());
    let url = reqwest::Url::parse("http://127.0.0.1:9/v1").unwrap();
    let headers = HeaderMap::new();
    let send = connection.send(reqwest::Method::POST, &url, &headers, bytes::Bytes::new());
    assert!(
        std::mem::size_of_val(&send) <= 256,
        "{} bytes",
        std::mem::size_of_val(&send)
    );
}
