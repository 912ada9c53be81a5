//! Tests: the HTTP machinery against local servers (wiremock, raw sockets): retries, timeouts,
//! broken and malformed bodies, cancellation, pre-flight, request ids, and no key in logs or errors.

#![cfg(feature = "openai")]

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use claij_backends::http::{CancelToken, Cancellable, HttpConfig, RetryPolicy};
use claij_backends::openai::OpenAi;
use claij_backends::{
    ApiKey, Backend, BodyLimit, ChatRequest, Error, ErrorContext, ErrorKind, Message, StreamEvent,
};
use futures_util::StreamExt as _;
use serde_json::{Value, json};
use tracing_subscriber::util::SubscriberInitExt as _;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// A made-up key; tests check it reaches the server and nothing else.
pub(crate) const KEY: &str = "sk-test-claij-5ecret-9f8e7d6c5b4a";

/// The chat completions path under a mock server's `/v1`.
pub(crate) const CHAT: &str = "/v1/chat/completions";

/// Short timeouts and backoffs, so fault tests stay fast.
pub(crate) fn fast_config(server: &str) -> HttpConfig {
    HttpConfig::new(format!("{server}/v1"))
        .with_connect_timeout(Duration::from_secs(2))
        .with_request_timeout(Duration::from_secs(2))
        .with_retry(
            RetryPolicy::default()
                .with_max_requests(3)
                .with_backoff(Duration::from_millis(10), Duration::from_millis(100))
                .with_max_total(Duration::from_secs(5)),
        )
}

fn backend(server: &str) -> OpenAi {
    OpenAi::new(ApiKey::new(KEY)).with_config(fast_config(server))
}

fn backend_with_retry(server: &str, retry: RetryPolicy) -> OpenAi {
    OpenAi::new(ApiKey::new(KEY)).with_config(fast_config(server).with_retry(retry))
}

pub(crate) fn request() -> ChatRequest {
    ChatRequest::new("gpt-4o-mini").message(Message::user("What is 2+2?"))
}

/// A chat completion answering `content`.
pub(crate) fn completion(content: &str) -> Value {
    json!({
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content, "refusal": null},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}
    })
}

fn ok() -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(completion(r#"{"answer": "4"}"#))
}

/// Answers `times` requests with `response` (later mocks answer the rest), and expects exactly that many.
async fn mount(server: &MockServer, response: ResponseTemplate, times: u64) {
    let mock = Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(response)
        .expect(times);
    let mock = if times > 0 {
        mock.up_to_n_times(times)
    } else {
        mock
    };
    mock.mount(server).await;
}

/// The error's variant name.
pub(crate) fn kind(error: &Error) -> String {
    let debug = format!("{error:?}");
    debug
        .split([' ', '{', '('])
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// Asserts the key shows nowhere in the error.
#[track_caller]
pub(crate) fn assert_no_key(error: &Error) {
    let shown = format!("{error} {error:?}");
    assert!(!shown.contains(KEY), "the key leaked: {shown}");
}

#[tokio::test(start_paused = true)]
async fn rate_limited_with_retry_after_then_ok() {
    let (logs, _guard) = plain_logs();
    let _frozen = FrozenClock::hold();
    let server = MockServer::start().await;
    let limited = ResponseTemplate::new(429)
        .insert_header("retry-after", "1")
        .set_body_json(
            json!({"error": {"message": "Rate limit reached", "type": "requests",
                                        "code": "rate_limit_exceeded"}}),
        );
    mount(&server, limited, 1).await;
    mount(&server, ok(), 1).await;
    let retry = RetryPolicy::default()
        .with_max_requests(3)
        .with_backoff(Duration::from_millis(10), Duration::from_secs(5))
        .with_max_total(Duration::from_secs(10));
    let backend = backend_with_retry(&server.uri(), retry);
    let started = tokio::time::Instant::now();
    let call = tokio::spawn(async move { backend.complete(&request()).await });
    until(&logs, || logs.count("retrying after a failed request") == 1).await;
    assert_eq!(logs.count("wait_ms=1000"), 1, "Retry-After honoured");
    tokio::time::advance(Duration::from_millis(999)).await;
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
    assert_eq!(logs.count("sending request"), 1, "no retry before 1 s");
    tokio::time::advance(Duration::from_millis(1)).await;
    let response = call.await.unwrap().unwrap();
    assert_eq!(response.content, r#"{"answer": "4"}"#);
    assert_eq!(logs.count("sending request"), 2);
    assert_eq!(started.elapsed(), Duration::from_secs(1));
}

#[tokio::test(start_paused = true)]
async fn each_http_request_is_traced_as_a_request_not_an_attempt() {
    let (logs, _guard) = plain_logs();
    let _frozen = FrozenClock::hold();
    let server = MockServer::start().await;
    mount(&server, ResponseTemplate::new(503), 1).await;
    mount(&server, ok(), 1).await;
    let retry = RetryPolicy::default()
        .with_max_requests(2)
        .with_backoff(Duration::from_millis(10), Duration::from_millis(10))
        .with_jitter(0.0);
    let backend = backend_with_retry(&server.uri(), retry);
    let call = tokio::spawn(async move { backend.complete(&request()).await });
    until(&logs, || logs.count("retrying after a failed request") == 1).await;
    tokio::time::advance(Duration::from_millis(10)).await;
    call.await.unwrap().unwrap();
    let text = logs.text();
    let sent: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("sending request"))
        .collect();
    assert_eq!(sent.len(), 2, "{text}");
    for (line, n) in sent.iter().zip(1..) {
        assert!(line.contains("http.request{"), "in the span: {line}");
        assert!(
            line.contains(&format!(" request={n}}}")),
            "numbered {n}: {line}"
        );
    }
    let retried = text
        .lines()
        .find(|l| l.contains("retrying after a failed request"));
    assert!(retried.is_some_and(|l| l.contains(" request=1 ")), "{text}");
    // `attempt` is the pipeline's validation attempt only.
    assert!(!text.contains("attempt"), "{text}");
}

#[tokio::test(start_paused = true)]
async fn retry_after_past_the_total_budget_gives_up_at_once() {
    let (logs, _guard) = plain_logs();
    let _frozen = FrozenClock::hold();
    let server = MockServer::start().await;
    let limited = ResponseTemplate::new(429).insert_header("retry-after", "10");
    mount(&server, limited, 1).await;
    let retry = RetryPolicy::default()
        .with_backoff(Duration::from_millis(10), Duration::from_secs(30))
        .with_max_total(Duration::from_secs(2));
    let backend = backend_with_retry(&server.uri(), retry);
    let started = tokio::time::Instant::now();
    let call = tokio::spawn(async move { backend.complete(&request()).await });
    // Either the call ends, or (the bug) a retry is scheduled; the frozen clock never runs it.
    until(&logs, || {
        call.is_finished() || logs.count("retrying after a failed request") > 0
    })
    .await;
    assert_eq!(logs.count("retrying after a failed request"), 0);
    let error = call.await.unwrap().unwrap_err();
    assert_eq!(started.elapsed(), Duration::ZERO);
    assert_eq!(kind(&error), "RateLimited");
    assert_eq!(error.retry_after(), Some(Duration::from_secs(10)));
}

#[tokio::test]
async fn server_errors_twice_then_ok() {
    let server = MockServer::start().await;
    let failing = ResponseTemplate::new(500)
        .set_body_json(json!({"error": {"message": "oops", "type": "server_error"}}));
    mount(&server, failing, 2).await;
    mount(&server, ok(), 1).await;
    let response = backend(&server.uri()).complete(&request()).await.unwrap();
    assert_eq!(response.usage.input_tokens, 12);
}

#[tokio::test]
async fn a_retry_sends_the_same_bytes_with_the_same_headers() {
    let server = MockServer::start().await;
    let failing = ResponseTemplate::new(503)
        .set_body_json(json!({"error": {"message": "busy", "type": "server_error"}}));
    mount(&server, failing, 2).await;
    mount(&server, ok(), 1).await;
    let request = request().system("Be brief.").structured(
        "answer",
        json!({"type": "object", "properties": {"a": {"type": "string"}}}),
        true,
    );
    backend(&server.uri()).complete(&request).await.unwrap();
    let received = server.received_requests().await.unwrap();
    assert_eq!(received.len(), 3);
    let body: Value = serde_json::from_slice(&received[0].body).unwrap();
    assert_eq!(
        body["response_format"]["json_schema"]["schema"]["properties"]["a"]["type"],
        "string"
    );
    for retry in &received[1..] {
        assert_eq!(retry.body, received[0].body);
        assert_eq!(retry.url, received[0].url);
        for name in ["authorization", "content-type"] {
            assert_eq!(
                retry.headers.get(name),
                received[0].headers.get(name),
                "{name}"
            );
        }
    }
}

#[tokio::test]
async fn retries_are_bounded_in_requests() {
    let server = MockServer::start().await;
    for status in [502, 503, 504, 529] {
        server.reset().await;
        mount(&server, ResponseTemplate::new(status), 3).await;
        let error = backend(&server.uri())
            .complete(&request())
            .await
            .unwrap_err();
        assert_eq!(error.context().status, Some(status));
        assert!(error.is_retryable());
        server.verify().await;
    }
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let server = MockServer::start().await;
    for (status, expected) in [
        (400, "BadRequest"),
        (401, "Authentication"),
        (403, "Authentication"),
        (404, "ModelNotFound"),
        (422, "BadRequest"),
    ] {
        server.reset().await;
        let body =
            json!({"error": {"message": "no", "type": "invalid_request_error", "code": null}});
        mount(
            &server,
            ResponseTemplate::new(status).set_body_json(body),
            1,
        )
        .await;
        let error = backend(&server.uri())
            .complete(&request())
            .await
            .unwrap_err();
        assert_eq!(kind(&error), expected, "{status}: {error}");
        server.verify().await;
    }
}

#[tokio::test]
async fn unauthorized_says_where_and_hides_the_key() {
    let server = MockServer::start().await;
    let echo = format!("Incorrect API key provided: {KEY}. You can find your API key at ...");
    let response = ResponseTemplate::new(401)
        .insert_header("x-request-id", "req_401")
        .set_body_json(
            json!({"error": {"message": echo, "type": "invalid_request_error",
                                        "code": "invalid_api_key"}}),
        );
    Mock::given(method("POST"))
        .and(path(CHAT))
        .and(header("authorization", format!("Bearer {KEY}").as_str()))
        .respond_with(response)
        .expect(1)
        .mount(&server)
        .await;
    let error = backend(&server.uri())
        .complete(&request())
        .await
        .unwrap_err();
    assert_eq!(kind(&error), "Authentication");
    assert_eq!(
        error.context(),
        &ErrorContext::new("openai")
            .with_status(401)
            .with_request_id("req_401")
            .with_requests(1)
    );
    assert!(
        error
            .to_string()
            .contains("Incorrect API key provided: ***."),
        "{error}"
    );
    assert_no_key(&error);
}

/// Each request reaches the server (which would answer after 3 s); only then does the frozen clock
/// move, past the request timeout.
#[tokio::test(start_paused = true)]
async fn timeout_ends_in_a_timeout_error_after_bounded_retries() {
    let (logs, _guard) = plain_logs();
    let _frozen = FrozenClock::hold();
    let server = MockServer::start().await;
    mount(&server, ok().set_delay(Duration::from_secs(3)), 2).await;
    let config = fast_config(&server.uri())
        .with_request_timeout(Duration::from_millis(200))
        .with_retry(
            RetryPolicy::default()
                .with_max_requests(2)
                .with_backoff(Duration::from_millis(10), Duration::from_millis(10))
                .with_jitter(0.0),
        );
    let backend = OpenAi::new(ApiKey::new(KEY)).with_config(config);
    let started = tokio::time::Instant::now();
    let call = tokio::spawn(async move { backend.complete(&request()).await });
    received(&server, 1).await;
    tokio::time::advance(Duration::from_millis(200)).await;
    until(&logs, || logs.count("retrying after a failed request") == 1).await;
    tokio::time::advance(Duration::from_millis(10)).await;
    received(&server, 2).await;
    tokio::time::advance(Duration::from_millis(200)).await;
    // Either the call ends, or (the bug) a third request is scheduled; the frozen clock never runs it.
    until(&logs, || {
        call.is_finished() || logs.count("retrying after a failed request") > 1
    })
    .await;
    assert_eq!(logs.count("retrying after a failed request"), 1);
    let error = call.await.unwrap().unwrap_err();
    assert!(
        matches!(error, Error::Timeout { after, .. } if after == Duration::from_millis(200)),
        "{error:?}"
    );
    assert_eq!(
        error.context().requests,
        2,
        "max_requests bounds the retries"
    );
    // Two timeouts and one backoff between them.
    assert_eq!(started.elapsed(), Duration::from_millis(410));
}

/// A server that answers every connection with a 200 head promising more body than it sends, then
/// closes. Returns its address and a counter of connections served.
fn cut_off_server() -> (String, Arc<Mutex<usize>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = format!("http://{}", listener.local_addr().unwrap());
    let served = Arc::new(Mutex::new(0));
    let count = served.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            read_request(&mut stream);
            let head =
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n";
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(br#"{"id": "chatcmpl-cut", "choices": [{"#);
            let _ = stream.flush();
            *count.lock().unwrap_or_else(PoisonError::into_inner) += 1;
            drop(stream);
        }
    });
    (address, served)
}

/// Reads one HTTP/1.1 request (head and `content-length` body).
fn read_request(stream: &mut std::net::TcpStream) {
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let Ok(n) = stream.read(&mut buf) else { return };
        if n == 0 {
            return;
        }
        data.extend_from_slice(&buf[..n]);
        let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&data[..end]).to_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        if data.len() >= end + 4 + length {
            return;
        }
    }
}

#[tokio::test]
async fn connection_reset_mid_body_is_a_network_error_after_bounded_retries() {
    let (address, served) = cut_off_server();
    let retry = RetryPolicy::default()
        .with_max_requests(2)
        .with_backoff(Duration::from_millis(10), Duration::from_millis(10));
    let error = backend_with_retry(&address, retry)
        .complete(&request())
        .await
        .unwrap_err();
    assert_eq!(kind(&error), "Network", "{error}");
    assert_eq!(error.context().status, Some(200));
    assert!(
        error
            .to_string()
            .contains("broke while reading the response body"),
        "{error}"
    );
    assert_eq!(*served.lock().unwrap(), 2, "one retry, then give up");
    assert_no_key(&error);
}

#[tokio::test]
async fn connection_refused_is_a_network_error() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let error = backend_with_retry(&address, RetryPolicy::none())
        .complete(&request())
        .await
        .unwrap_err();
    assert_eq!(kind(&error), "Network", "{error}");
    assert!(error.to_string().contains("could not connect"), "{error}");
    assert_eq!(error.context().status, None);
    assert!(
        !error.to_string().contains("127.0.0.1"),
        "no URL in errors: {error}"
    );
}

#[tokio::test]
async fn truncated_json_is_malformed_and_not_retried() {
    let server = MockServer::start().await;
    let cut =
        r#"{"id": "chatcmpl-1", "choices": [{"index": 0, "message": {"role": "assistant", "con"#;
    mount(
        &server,
        ResponseTemplate::new(200).set_body_raw(cut, "application/json"),
        1,
    )
    .await;
    let error = backend(&server.uri())
        .complete(&request())
        .await
        .unwrap_err();
    let Error::MalformedResponse {
        context, excerpt, ..
    } = &error
    else {
        panic!("{error:?}")
    };
    assert_eq!(context.status, Some(200));
    assert!(excerpt.starts_with(r#"{"id": "chatcmpl-1""#), "{excerpt}");
}

const HTML: &str = "<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head>\
                    <body><h1>Bad Gateway</h1><p>nginx</p></body></html>";

#[tokio::test]
async fn html_error_page_is_a_server_error_with_an_excerpt() {
    let server = MockServer::start().await;
    mount(
        &server,
        ResponseTemplate::new(502).set_body_raw(HTML, "text/html"),
        3,
    )
    .await;
    let error = backend(&server.uri())
        .complete(&request())
        .await
        .unwrap_err();
    assert_eq!(kind(&error), "Server");
    assert!(
        error
            .to_string()
            .contains("not JSON: \"<!DOCTYPE html><html><head><title>502 Bad Gateway"),
        "{error}"
    );
}

#[tokio::test]
async fn html_page_with_200_is_malformed() {
    let server = MockServer::start().await;
    mount(
        &server,
        ResponseTemplate::new(200).set_body_raw(HTML, "text/html"),
        1,
    )
    .await;
    let error = backend(&server.uri())
        .complete(&request())
        .await
        .unwrap_err();
    let Error::MalformedResponse { excerpt, .. } = &error else {
        panic!("{error:?}")
    };
    assert!(excerpt.starts_with("<!DOCTYPE html>"), "{excerpt}");
}

#[tokio::test]
async fn empty_bodies() {
    let server = MockServer::start().await;
    mount(&server, ResponseTemplate::new(200), 1).await;
    let error = backend(&server.uri())
        .complete(&request())
        .await
        .unwrap_err();
    assert_eq!(kind(&error), "MalformedResponse");
    assert!(error.to_string().contains("empty"), "{error}");
    server.verify().await;

    server.reset().await;
    mount(&server, ResponseTemplate::new(500), 3).await;
    let error = backend(&server.uri())
        .complete(&request())
        .await
        .unwrap_err();
    assert_eq!(kind(&error), "Server");
    assert!(error.to_string().contains("empty body"), "{error}");
}

#[tokio::test]
async fn request_ids_reach_the_response() {
    let server = MockServer::start().await;
    mount(&server, ok().insert_header("x-request-id", "req_abc"), 1).await;
    let response = backend(&server.uri()).complete(&request()).await.unwrap();
    assert_eq!(response.request_id.as_deref(), Some("req_abc"));
}

/// Yields until `server` has received `n` requests (a frozen clock stays still meanwhile).
async fn received(server: &MockServer, n: usize) {
    while server.received_requests().await.map_or(0, |r| r.len()) < n {
        tokio::task::yield_now().await;
    }
}

/// The cancel comes once the request is at the server (whose answer would take 5 s), and then the
/// paused clock is let go: a call still waiting for the answer would let it run to the request
/// timeout, so the call must end with the clock where it stood.
#[tokio::test(start_paused = true)]
async fn cancel_ends_a_call_in_flight() {
    let frozen = FrozenClock::hold();
    let server = MockServer::start().await;
    mount(&server, ok().set_delay(Duration::from_secs(5)), 1).await;
    let backend = backend(&server.uri());
    let token = CancelToken::new();
    let request = request();
    let started = tokio::time::Instant::now();
    let cancel = async {
        received(&server, 1).await;
        token.cancel();
        drop(frozen);
    };
    let (outcome, ()) = tokio::join!(backend.complete_with(&request, &token), cancel);
    let error = outcome.unwrap_err();
    assert_eq!(kind(&error), "Cancelled");
    assert_eq!(error.context().provider, "openai");
    assert_eq!(started.elapsed(), Duration::ZERO, "waited after the cancel");
}

/// The cancel comes during a 3 s retry wait on the paused clock; once the clock is released, a wait
/// the cancel did not interrupt would run to its end.
#[tokio::test(start_paused = true)]
async fn cancel_interrupts_a_retry_wait() {
    let (logs, _guard) = plain_logs();
    let frozen = FrozenClock::hold();
    let server = MockServer::start().await;
    mount(&server, ResponseTemplate::new(503), 1).await;
    let retry = RetryPolicy::default()
        .with_backoff(Duration::from_secs(3), Duration::from_secs(3))
        .with_jitter(0.0);
    let backend = Cancellable::new(backend_with_retry(&server.uri(), retry), CancelToken::new());
    let token = backend.token().clone();
    let started = tokio::time::Instant::now();
    let call = tokio::spawn(async move { backend.complete(&request()).await });
    until(&logs, || logs.count("retrying after a failed request") == 1).await;
    assert_eq!(logs.count("wait_ms=3000"), 1);
    token.cancel();
    drop(frozen);
    let error = call.await.unwrap().unwrap_err();
    assert_eq!(kind(&error), "Cancelled");
    assert_eq!(started.elapsed(), Duration::ZERO, "the wait ran");
    assert_eq!(logs.count("sending request"), 1);
}

#[tokio::test]
async fn an_already_cancelled_token_sends_nothing() {
    let server = MockServer::start().await;
    mount(&server, ok(), 0).await;
    let token = CancelToken::new();
    token.cancel();
    let error = backend(&server.uri())
        .complete_with(&request(), &token)
        .await
        .unwrap_err();
    assert_eq!(kind(&error), "Cancelled");
}

/// A call dropped while its request is at the server (whose answer would take 5 s) leaves the
/// backend usable.
#[tokio::test(start_paused = true)]
async fn dropping_a_call_in_flight_leaves_the_backend_usable() {
    let _frozen = FrozenClock::hold();
    let server = MockServer::start().await;
    mount(&server, ok().set_delay(Duration::from_secs(5)), 1).await;
    let backend = backend(&server.uri());
    let request = request();
    let mut call = Box::pin(backend.complete(&request));
    tokio::select! {
        outcome = &mut call => panic!("ended before it was dropped: {outcome:?}"),
        () = received(&server, 1) => {}
    }
    drop(call);
    // The pool is still usable after an aborted call.
    server.reset().await;
    mount(&server, ok(), 1).await;
    assert!(backend.complete(&request).await.is_ok());
}

/// As `cancel_ends_a_call_in_flight`, for a stream.
#[tokio::test(start_paused = true)]
async fn cancel_stops_a_stream_in_flight() {
    let frozen = FrozenClock::hold();
    let server = MockServer::start().await;
    mount(&server, ok().set_delay(Duration::from_secs(5)), 1).await;
    let backend = backend(&server.uri());
    let token = CancelToken::new();
    let request = request();
    let started = tokio::time::Instant::now();
    let cancel = async {
        received(&server, 1).await;
        token.cancel();
        drop(frozen);
    };
    let events = backend.stream_with(&request, &token).collect::<Vec<_>>();
    let (events, ()) = tokio::join!(events, cancel);
    assert_eq!(started.elapsed(), Duration::ZERO, "waited after the cancel");
    assert_eq!(events.len(), 1);
    assert_eq!(kind(events[0].as_ref().unwrap_err()), "Cancelled");
}

#[tokio::test]
async fn preflight_failure_sends_nothing() {
    let server = MockServer::start().await;
    mount(&server, ok(), 0).await;
    let backend = backend(&server.uri()).with_preflight(Arc::new(|request: &ChatRequest| {
        if request.text_len() > 10 {
            return Err(Error::ContextLengthExceeded {
                context: ErrorContext::new("openai"),
                message: format!(
                    "about {} tokens, the window holds 2",
                    request.text_len() / 4
                ),
            });
        }
        Ok(())
    }));
    let error = backend.complete(&request()).await.unwrap_err();
    assert_eq!(kind(&error), "ContextLengthExceeded");
    let streamed: Vec<_> = backend.stream(&request()).collect().await;
    assert_eq!(
        kind(streamed[0].as_ref().unwrap_err()),
        "ContextLengthExceeded"
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 0);
}

#[tokio::test]
async fn model_table_preflight_stops_oversized_prompts_before_any_request() {
    let server = MockServer::start().await;
    mount(&server, ok(), 1).await;
    let table = claij_backends::ModelTable::builtin();
    let backend = backend(&server.uri()).with_preflight(Arc::new(table.preflight_check("openai")));
    let huge = ChatRequest::new("gpt-4o-mini").message(Message::user("word ".repeat(200_000)));
    let error = backend.complete(&huge).await.unwrap_err();
    assert_eq!(kind(&error), "ContextLengthExceeded", "{error}");
    assert_eq!(server.received_requests().await.unwrap().len(), 0);
    // A prompt that fits goes through.
    assert!(backend.complete(&request()).await.is_ok());
}

/// SSE body of a streamed structured answer.
pub(crate) fn sse_body(pieces: &[&str]) -> String {
    let mut body = String::from(": keep-alive\n\n");
    for piece in pieces {
        let chunk = json!({"id": "chatcmpl-s", "object": "chat.completion.chunk", "model": "gpt-4o-mini",
                           "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": null}]});
        body.push_str(&format!("data: {chunk}\n\n"));
    }
    let finish = json!({"id": "chatcmpl-s", "object": "chat.completion.chunk", "model": "gpt-4o-mini",
                        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
    let usage = json!({"id": "chatcmpl-s", "object": "chat.completion.chunk", "model": "gpt-4o-mini",
                       "choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 3}});
    body.push_str(&format!(
        "data: {finish}\n\ndata: {usage}\n\ndata: [DONE]\n\n"
    ));
    // Anything after [DONE] is ignored.
    body.push_str("data: {\"not\": \"read\"}\n\n");
    body
}

#[tokio::test]
async fn streams_retry_before_the_first_byte() {
    let server = MockServer::start().await;
    mount(&server, ResponseTemplate::new(503), 1).await;
    let sse =
        ResponseTemplate::new(200).set_body_raw(sse_body(&["{\"a\"", ": 1}"]), "text/event-stream");
    mount(&server, sse, 1).await;
    let backend = backend(&server.uri());
    let request = request();
    let events: Vec<StreamEvent> = backend.stream(&request).map(|e| e.unwrap()).collect().await;
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "{\"a\": 1}");
    assert!(events.contains(&StreamEvent::Finish(claij_backends::FinishReason::Stop)));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, StreamEvent::Usage(u) if u.input_tokens == 9))
    );
}

#[tokio::test]
async fn stream_errors_end_the_stream() {
    let server = MockServer::start().await;
    let body = json!({"error": {"message": "bad key", "type": "invalid_request_error", "code": "invalid_api_key"}});
    mount(&server, ResponseTemplate::new(401).set_body_json(body), 1).await;
    let backend = backend(&server.uri());
    let request = request();
    let events: Vec<_> = backend.stream(&request).collect().await;
    assert_eq!(events.len(), 1);
    assert_eq!(kind(events[0].as_ref().unwrap_err()), "Authentication");

    server.reset().await;
    let mid = "data: {\"choices\":[{\"delta\":{\"content\":\"{\\\"a\"}}]}\n\n\
               data: {\"error\":{\"code\":502,\"message\":\"upstream died\"}}\n\n\
               data: {\"choices\":[{\"delta\":{\"content\":\"never\"}}]}\n\n";
    mount(
        &server,
        ResponseTemplate::new(200).set_body_raw(mid, "text/event-stream"),
        1,
    )
    .await;
    let events: Vec<_> = backend.stream(&request).collect().await;
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[0], Ok(StreamEvent::Text("{\"a".into())));
    assert_eq!(kind(events[1].as_ref().unwrap_err()), "Server");
}

/// A `tracing` writer into a shared buffer.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn the_key_never_appears_in_logs_errors_or_debug_output() {
    let logs = Capture::default();
    let writer = logs.clone();
    let _guard = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish()
        .set_default();

    let server = MockServer::start().await;
    let echo = |status: u16| {
        ResponseTemplate::new(status)
            .insert_header("x-request-id", "req_leak")
            .set_body_json(
                json!({"error": {"message": format!("key {KEY} rejected"), "type": "x"}}),
            )
    };
    mount(&server, echo(500), 1).await;
    mount(&server, echo(429).insert_header("retry-after", "0"), 1).await;
    mount(&server, ok(), 1).await;
    mount(&server, echo(401), 1).await;
    mount(
        &server,
        ResponseTemplate::new(200).set_body_raw(format!("<html>{KEY}</html>"), "text/html"),
        1,
    )
    .await;
    let backend = backend(&server.uri());
    let mut errors = Vec::new();
    assert!(
        backend.complete(&request()).await.is_ok(),
        "500, 429, then 200"
    );
    errors.push(backend.complete(&request()).await.unwrap_err());
    errors.push(backend.complete(&request()).await.unwrap_err());
    server.verify().await;
    server.reset().await;
    mount(&server, echo(401), 1).await;
    let request = request();
    let streamed: Vec<_> = backend.stream(&request).collect().await;
    errors.extend(streamed.into_iter().filter_map(Result::err));
    assert_eq!(errors.len(), 3);
    for error in &errors {
        assert_no_key(error);
    }
    let backend_debug = format!("{backend:?}");
    assert!(!backend_debug.contains(KEY), "{backend_debug}");

    let logs = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    assert!(
        logs.contains("retrying after a failed request"),
        "capture works: {logs}"
    );
    assert!(logs.contains("response received"), "{logs}");
    assert!(!logs.contains(KEY), "the key leaked into the logs:\n{logs}");
    assert!(
        !logs.to_lowercase().contains("authorization"),
        "no headers in logs:\n{logs}"
    );
}

#[tokio::test]
async fn the_builtin_table_checks_by_default_and_can_be_turned_off() {
    let server = MockServer::start().await;
    mount(&server, ok(), 1).await;
    let huge = ChatRequest::new("gpt-4o-mini").message(Message::user("word ".repeat(200_000)));
    let checked = backend(&server.uri());
    let error = checked.complete(&huge).await.unwrap_err();
    assert_eq!(kind(&error), "ContextLengthExceeded", "{error}");
    assert_eq!(server.received_requests().await.unwrap().len(), 0);
    // Without the check the request goes out (the mock answers it).
    let unchecked = checked.without_preflight();
    let sent = unchecked.complete(&huge).await;
    assert!(sent.is_ok(), "{sent:?}");
}

// ---- Issue 21: body limits, exhausted quotas, request counts, server waits past the budget ----

/// `fast_config` with a body limit of `body` bytes and an event limit of `event` bytes.
fn limited(server: &str, body: u64, event: u64) -> OpenAi {
    let config = fast_config(server)
        .with_max_body_bytes(body)
        .with_max_event_bytes(event);
    OpenAi::new(ApiKey::new(KEY)).with_config(config)
}

/// Asserts `error` is a `BodyTooLarge` for `which` at `limit`, and its message names the setting.
#[track_caller]
fn assert_too_large(error: &Error, which: BodyLimit, limit: u64) {
    assert_eq!(error.kind(), ErrorKind::BodyTooLarge, "{error}");
    match error {
        Error::BodyTooLarge {
            which: got,
            limit: got_limit,
            ..
        } => assert_eq!((*got, *got_limit), (which, limit), "{error}"),
        other => panic!("not BodyTooLarge: {other}"),
    }
    let shown = error.to_string();
    assert!(shown.contains(which.setting()), "{shown}");
    assert!(
        shown.contains(&format!("limit of {limit} bytes")),
        "{shown}"
    );
    assert!(!error.is_retryable());
}

#[tokio::test]
async fn a_body_one_byte_over_the_limit_is_too_large_and_one_at_it_is_read() {
    let server = MockServer::start().await;
    let body = completion(r#"{"answer": "4"}"#).to_string();
    let limit = 1024;
    let pad = |n: usize| format!("{body}{}", " ".repeat(n - body.len()));
    let at_limit = ResponseTemplate::new(200).set_body_raw(pad(1024), "application/json");
    mount(&server, at_limit, 1).await;
    let response = limited(&server.uri(), limit, limit)
        .complete(&request())
        .await
        .unwrap();
    assert_eq!(response.content, r#"{"answer": "4"}"#);
    server.verify().await;

    server.reset().await;
    let over = ResponseTemplate::new(200).set_body_raw(pad(1025), "application/json");
    mount(&server, over, 1).await;
    let error = limited(&server.uri(), limit, limit)
        .complete(&request())
        .await
        .unwrap_err();
    assert_too_large(&error, BodyLimit::Body, limit);
    assert_eq!(error.context().status, Some(200));
    // An error body is held to the same limit, and an oversized one is not retried.
    server.reset().await;
    let error_page = ResponseTemplate::new(503).set_body_raw("x".repeat(1025), "text/html");
    mount(&server, error_page, 1).await;
    let error = limited(&server.uri(), limit, limit)
        .complete(&request())
        .await
        .unwrap_err();
    assert_too_large(&error, BodyLimit::Body, limit);
    assert_eq!(error.context().requests, 1);
}

/// A server that answers every connection with `head` and then `piece`, again and again, until the
/// client hangs up. Returns its URL and how many bytes it managed to send.
async fn endless_server(head: &'static str, piece: Vec<u8>) -> (String, Arc<Mutex<u64>>) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let sent = Arc::new(Mutex::new(0u64));
    let counter = sent.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let piece = piece.clone();
            let counter = counter.clone();
            tokio::spawn(async move {
                // Read the request head and whatever of the body came with it.
                let mut buf = vec![0u8; 64 * 1024];
                let _ = socket.read(&mut buf).await;
                if socket.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                while socket.write_all(&piece).await.is_ok() {
                    *counter.lock().unwrap() += piece.len() as u64;
                }
            });
        }
    });
    (url, sent)
}

#[tokio::test]
async fn an_endless_body_ends_at_the_limit() {
    // No Content-Length: only counting while reading can stop it.
    let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n";
    let (url, sent) = endless_server(head, vec![b' '; 16 * 1024]).await;
    let limit = 1024 * 1024;
    let error = limited(&url, limit, limit)
        .complete(&request())
        .await
        .unwrap_err();
    assert_too_large(&error, BodyLimit::Body, limit);
    assert_eq!(error.context().requests, 1, "not retried: {error}");
    // The server went on sending until the client hung up; the client held at most the limit.
    assert!(
        *sent.lock().unwrap() >= limit,
        "the server sent past the limit"
    );
}

#[tokio::test]
async fn an_endless_error_body_ends_at_the_limit_and_is_not_retried() {
    let head = "HTTP/1.1 500 Internal Server Error\r\ntransfer-encoding: chunked\r\n\r\n";
    // One 16 KiB chunk in chunked encoding, sent forever.
    let mut piece = format!("{:x}\r\n", 16 * 1024).into_bytes();
    piece.extend(std::iter::repeat_n(b'x', 16 * 1024));
    piece.extend_from_slice(b"\r\n");
    let (url, _) = endless_server(head, piece).await;
    let limit = 256 * 1024;
    let error = limited(&url, limit, limit)
        .complete(&request())
        .await
        .unwrap_err();
    assert_too_large(&error, BodyLimit::Body, limit);
    assert_eq!(error.context().status, Some(500));
    assert_eq!(error.context().requests, 1);
}

/// The items of a stream, the first `max` at most (a stream that never ended would fail here).
async fn first_items(backend: &OpenAi, max: usize) -> Vec<Result<StreamEvent, Error>> {
    let request = request();
    backend.stream(&request).take(max).collect().await
}

#[tokio::test]
async fn a_giant_server_sent_event_ends_the_stream_at_the_event_limit() {
    let server = MockServer::start().await;
    let small = r#"{"choices":[{"delta":{"content":"{\"a\""}}]}"#;
    let giant = format!(
        r#"{{"choices":[{{"delta":{{"content":"{}"}}}}]}}"#,
        "y".repeat(8 * 1024)
    );
    let body = format!("data: {small}\n\ndata: {giant}\n\ndata: {small}\n\ndata: [DONE]\n\n");
    let sse = ResponseTemplate::new(200).set_body_raw(body, "text/event-stream");
    mount(&server, sse, 1).await;
    let backend = limited(&server.uri(), 1024 * 1024, 4096);
    let items = first_items(&backend, 100).await;
    assert_eq!(items.len(), 2, "{items:?}");
    assert_eq!(items[0], Ok(StreamEvent::Text("{\"a\"".into())));
    assert_too_large(items[1].as_ref().unwrap_err(), BodyLimit::Event, 4096);
}

#[tokio::test]
async fn a_stream_that_never_ends_stops_at_the_body_limit() {
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
    let one = b"data: {\"choices\":[{\"delta\":{\"content\":\"ab\"}}]}\n\n";
    let (url, _) = endless_server(head, one.repeat(100)).await;
    let limit = 64 * 1024;
    let backend = limited(&url, limit, limit);
    let items = first_items(&backend, 10_000).await;
    let (last, events) = items.split_last().unwrap();
    assert_too_large(last.as_ref().unwrap_err(), BodyLimit::Body, limit);
    assert!(
        events
            .iter()
            .all(|e| *e == Ok(StreamEvent::Text("ab".into()))),
        "every event before the error is text"
    );
    // The events read add up to no more than the limit.
    assert!(events.len() > 100, "{}", events.len());
    assert!(
        events.len() * one.len() <= limit as usize,
        "{}",
        events.len()
    );
}

#[tokio::test]
async fn an_exhausted_quota_is_sent_once_and_says_quota() {
    let server = MockServer::start().await;
    let body = json!({"error": {
        "message": "You exceeded your current quota, please check your plan and billing details.",
        "type": "insufficient_quota", "param": null, "code": "insufficient_quota"}});
    mount(&server, ResponseTemplate::new(429).set_body_json(body), 1).await;
    let error = backend(&server.uri())
        .complete(&request())
        .await
        .unwrap_err();
    server.verify().await;
    assert_eq!(error.kind(), ErrorKind::QuotaExhausted, "{error}");
    assert!(!error.is_retryable());
    assert_eq!(error.context().requests, 1);
    let shown = error.to_string();
    assert!(shown.contains("quota exhausted"), "{shown}");
    assert!(!shown.contains("authentication"), "{shown}");
}

#[cfg(feature = "anthropic")]
#[test]
fn anthropic_billing_errors_are_exhausted_quotas() {
    use claij_backends::Adapter as _;
    use claij_backends::anthropic::AnthropicAdapter;
    let cases = [
        (
            400,
            r#"{"type": "error", "error": {"type": "invalid_request_error", "message": "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."}}"#,
        ),
        (
            402,
            r#"{"type": "error", "error": {"type": "billing_error", "message": "There is an issue with your billing."}}"#,
        ),
    ];
    for (status, body) in cases {
        let context = ErrorContext::new("anthropic").with_status(status);
        let error =
            AnthropicAdapter::default().classify_error(status, None, body.as_bytes(), context);
        assert_eq!(error.kind(), ErrorKind::QuotaExhausted, "{status}: {error}");
        assert!(!error.is_retryable());
    }
}

#[tokio::test]
async fn a_retried_failure_says_how_many_requests_were_made() {
    let server = MockServer::start().await;
    let failing = ResponseTemplate::new(500)
        .set_body_json(json!({"error": {"message": "oops", "type": "server_error"}}));
    mount(&server, failing, 3).await;
    let error = backend(&server.uri())
        .complete(&request())
        .await
        .unwrap_err();
    server.verify().await;
    assert_eq!(error.context().requests, 3);
    assert_eq!(
        error.to_string(),
        "openai (HTTP 500, after 3 HTTP requests): server error: oops"
    );
    // Streams count their requests too.
    server.reset().await;
    mount(&server, ResponseTemplate::new(503), 3).await;
    let items = first_items(&backend(&server.uri()), 10).await;
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].as_ref().unwrap_err().context().requests, 3);
}

/// Keeps tokio's paused clock still while real sockets do their work: while a blocking task runs,
/// tokio does not auto-advance, so only `tokio::time::advance` moves time and no timeout can fire
/// early while a response is on its way.
struct FrozenClock {
    _release: std::sync::mpsc::Sender<()>,
}

impl FrozenClock {
    fn hold() -> Self {
        let (release, wait) = std::sync::mpsc::channel::<()>();
        tokio::task::spawn_blocking(move || {
            let _ = wait.recv();
        });
        Self { _release: release }
    }
}

/// Yields to the runtime (sockets keep working, the frozen clock does not move) until `done`; after
/// a minute of real time (a hang guard, not a speed) it fails with what `logs` captured, so a wait for
/// a log line that never comes is a failure that shows why, not a hang.
async fn until(logs: &Capture, mut done: impl FnMut() -> bool) {
    let guard = std::time::Instant::now();
    while !done() {
        assert!(
            guard.elapsed() < std::time::Duration::from_secs(60),
            "the awaited event did not come (60 s hang guard); the logs:\n{}",
            logs.text()
        );
        tokio::task::yield_now().await;
    }
}

/// Logs of this thread without colours, and the guard that keeps capturing them.
fn plain_logs() -> (Capture, tracing::subscriber::DefaultGuard) {
    let logs = Capture::default();
    let writer = logs.clone();
    let guard = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish()
        .set_default();
    (logs, guard)
}

impl Capture {
    fn count(&self, needle: &str) -> usize {
        self.text().matches(needle).count()
    }

    fn text(&self) -> String {
        let bytes = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

#[cfg(feature = "gemini")]
#[tokio::test(start_paused = true)]
async fn a_retry_delay_in_the_body_is_waited_exactly_past_the_backoff_cap() {
    use claij_backends::Gemini;
    let (logs, _guard) = plain_logs();
    let _frozen = FrozenClock::hold();
    let server = MockServer::start().await;
    let limited = json!({"error": {"code": 429, "status": "RESOURCE_EXHAUSTED",
        "message": "You exceeded your current quota. Please retry in 34.4s.",
        "details": [
            {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [
                {"quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "34.4s"}]}});
    let answer = json!({"candidates": [{"content": {"parts": [{"text": "{\"a\": 1}"}]},
        "finishReason": "STOP"}]});
    let endpoint =
        || Mock::given(method("POST")).and(path("/v1beta/models/gemini-2.5-flash:generateContent"));
    endpoint()
        .respond_with(ResponseTemplate::new(429).set_body_json(limited))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    endpoint()
        .respond_with(ResponseTemplate::new(200).set_body_json(answer))
        .expect(1)
        .mount(&server)
        .await;
    // The default policy: backoff capped at 30 s, a retry budget of 120 s.
    assert_eq!(RetryPolicy::default().max_backoff, Duration::from_secs(30));
    let config = HttpConfig::new(format!("{}/v1beta", server.uri()));
    let backend = Gemini::new(ApiKey::new(KEY)).with_config(config);
    let started = tokio::time::Instant::now();
    let call = tokio::spawn(async move {
        let request = ChatRequest::new("gemini-2.5-flash").message(Message::user("Q"));
        backend.complete(&request).await
    });
    // The 429 arrives; the retry is scheduled while the clock stands at the start.
    until(&logs, || logs.count("retrying after a failed request") == 1).await;
    assert_eq!(logs.count("wait_ms=34400"), 1);
    tokio::time::advance(Duration::from_millis(34_399)).await;
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
    assert_eq!(
        logs.count("sending request"),
        1,
        "no second request before 34.4 s"
    );
    tokio::time::advance(Duration::from_millis(1)).await;
    let response = call.await.unwrap().unwrap();
    assert_eq!(response.content, "{\"a\": 1}");
    assert_eq!(logs.count("sending request"), 2);
    assert_eq!(started.elapsed(), Duration::from_millis(34_400));
    server.verify().await;
}

#[tokio::test(start_paused = true)]
async fn a_server_wait_past_the_retry_budget_fails_at_once_saying_so() {
    let (logs, _guard) = plain_logs();
    let _frozen = FrozenClock::hold();
    let server = MockServer::start().await;
    let limited = ResponseTemplate::new(429)
        .insert_header("retry-after", "86400")
        .set_body_json(
            json!({"error": {"message": "Rate limit reached", "type": "requests",
            "code": "rate_limit_exceeded"}}),
        );
    mount(&server, limited, 1).await;
    let config = HttpConfig::new(format!("{}/v1", server.uri()));
    let backend = OpenAi::new(ApiKey::new(KEY)).with_config(config);
    let started = tokio::time::Instant::now();
    let call = tokio::spawn(async move { backend.complete(&request()).await });
    // Either the call ends, or (the bug) a retry is scheduled; the frozen clock never runs it.
    until(&logs, || {
        call.is_finished() || logs.count("retrying after a failed request") > 0
    })
    .await;
    assert_eq!(logs.count("retrying after a failed request"), 0);
    let error = call.await.unwrap().unwrap_err();
    server.verify().await;
    assert_eq!(started.elapsed(), Duration::ZERO);
    assert_eq!(error.kind(), ErrorKind::RateLimited);
    assert_eq!(error.retry_after(), Some(Duration::from_secs(86_400)));
    assert_eq!(error.context().requests, 1);
    assert_eq!(
        error.to_string(),
        "openai (HTTP 429): rate limited (retry after 86400.0 s): the server asks to wait \
         86400.0 s, more than the retry budget of 120.0 s; Rate limit reached"
    );
}
