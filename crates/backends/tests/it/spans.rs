//! The `http.request` spans as an OpenTelemetry exporter reads them: a client span per HTTP request,
//! the resend count from the second on, a failure's status, error type and error status, no key.

#![cfg(feature = "openai")]

use std::time::Duration;

use claij_backends::http::RetryPolicy;
use claij_backends::openai::OpenAi;
use claij_backends::{ApiKey, Backend};
use claij_test_support::spans::SpanCapture;
use serde_json::json;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::http::{CHAT, KEY, completion, fast_config, request};

#[tokio::test]
async fn each_request_is_a_client_span_and_a_failed_one_says_why() {
    let capture = SpanCapture::default();
    let _guard = capture.set_default();
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(
            ResponseTemplate::new(503)
                .set_body_json(json!({"error": {"message": format!("no, {KEY}")}})),
        )
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion(r#"{"answer": "4"}"#)))
        .expect(1)
        .mount(&server)
        .await;
    let retry = RetryPolicy::default()
        .with_max_requests(2)
        .with_backoff(Duration::from_millis(1), Duration::from_millis(1))
        .with_jitter(0.0);
    let backend =
        OpenAi::new(ApiKey::new(KEY)).with_config(fast_config(&server.uri()).with_retry(retry));
    backend.complete(&request()).await.unwrap();

    // The fields of every `http.request` span, in creation order.
    let spans: Vec<_> = capture
        .spans()
        .into_iter()
        .filter(|span| span.name == "http.request")
        .map(|span| span.fields)
        .collect();
    assert_eq!(spans.len(), 2, "{spans:#?}");
    let (first, second) = (&spans[0], &spans[1]);
    for span in &spans {
        assert_eq!(span["otel.kind"], "client");
        assert_eq!(span["provider"], "openai");
        assert_eq!(span["model"], "gpt-4o-mini");
    }
    assert_eq!(first["request"], "1");
    assert_eq!(first["http.response.status_code"], "503");
    assert_eq!(first["otel.status_code"], "ERROR");
    assert!(!first["error.type"].is_empty(), "{first:#?}");
    assert!(
        !first.contains_key("http.request.resend_count"),
        "{first:#?}"
    );
    assert_eq!(second["request"], "2");
    assert_eq!(second["http.request.resend_count"], "1");
    assert!(!second.contains_key("otel.status_code"), "{second:#?}");
    for span in &spans {
        for (field, value) in span {
            assert!(!value.contains(KEY), "{field} holds the key: {value}");
        }
    }
}
