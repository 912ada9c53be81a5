//! The errors of a run answer what happened on the wire: a model call over HTTP that times out, or
//! finds no server, is `is_timeout()` or `is_connect()` on the FSM's error, through the pipeline's.

use std::sync::Arc;
use std::time::Duration;

use claij_backends::{ApiKey, HttpConfig, OpenAi, RetryPolicy};
use claij_fsm::{Definition, Error, ErrorKind, Fsm, Interrupt, Runner};
use claij_interceptors::Config;
use serde_json::json;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// start -> ask (llm) -> end, no bail-out: a failed model call ends the run with `Error::Llm`.
fn one_question() -> Fsm {
    let definition: Definition = serde_json::from_value(json!({
        "id": "one-question",
        "states": [{"id": "ask", "action": "llm"}, {"id": "end", "action": "end"}],
        "transitions": [
            {"id": ["start", "ask"], "schema": {"type": "object"}},
            {"id": ["ask", "end"], "schema": {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}}
        ]
    }))
    .unwrap();
    Fsm::new(definition).unwrap()
}

/// Runs [`one_question`] against an OpenAI-compatible server at `base_url` (no HTTP retries, a
/// `timeout` per request); the run's error.
async fn run_against(base_url: String, timeout: Duration) -> Error {
    let config = HttpConfig::new(base_url)
        .with_retry(RetryPolicy::none())
        .with_request_timeout(timeout);
    let backend = OpenAi::new(ApiKey::new("sk-test")).with_config(config);
    let mut pipeline = Config::new("gpt-4o-mini");
    pipeline.max_retries = 0;
    let runner = Runner::new(one_question()).with_llm(Arc::new(backend), pipeline);
    let mut run = runner.start(json!({})).unwrap();
    runner
        .run(&mut run, &Interrupt::new(), None)
        .await
        .unwrap_err()
}

#[tokio::test]
async fn a_model_call_that_times_out_on_the_wire_is_is_timeout_at_the_fsm() {
    let server = MockServer::start().await;
    // An answer long after the request's timeout: only the timeout ends the call (the time is
    // no speed claim; the test waits only for the short timeout).
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(60)))
        .mount(&server)
        .await;
    let error = run_against(format!("{}/v1", server.uri()), Duration::from_millis(200)).await;
    assert_eq!(error.kind(), ErrorKind::Llm, "{error}");
    assert!(error.is_timeout(), "{error:?}");
    assert!(error.is_retryable() && !error.is_connect() && !error.is_invalid_reply());
    // The same answer at each layer: the pipeline's, and the backend's own.
    let pipeline = error.pipeline().unwrap();
    assert_eq!(pipeline.kind(), claij_interceptors::ErrorKind::Backend);
    assert!(pipeline.is_timeout());
    assert_eq!(
        error.backend().map(claij_backends::Error::kind),
        Some(claij_backends::ErrorKind::Timeout)
    );
    assert!(!server.received_requests().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_model_call_to_no_server_is_is_connect_at_the_fsm() {
    // A port that was free a moment ago: nobody listens, the connection is refused.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let error = run_against(
        format!("http://127.0.0.1:{port}/v1"),
        Duration::from_secs(60),
    )
    .await;
    assert!(error.is_connect(), "{error:?}");
    assert!(error.is_retryable() && !error.is_timeout());
}
