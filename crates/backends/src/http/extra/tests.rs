//! Tests: extra headers and query parameters, the URL they make, the checks they pass, and what
//! reaches the wire (wiremock) for an OpenAI-compatible gateway and an Azure-style deployment.

use super::*;

#[track_caller]
fn check_url(base: &str, path: &str, query: &[Extra], expected: &str) {
    let url = url(base, path, query).unwrap_or_else(|e| panic!("{base} + {path}: {e}"));
    assert_eq!(url.as_str(), expected, "{base} + {path}");
}

#[test]
fn urls_keep_every_query() {
    let none: &[Extra] = &[];
    check_url(
        "http://h/v1",
        "/chat/completions",
        none,
        "http://h/v1/chat/completions",
    );
    check_url(
        "http://h/v1/",
        "/chat/completions",
        none,
        "http://h/v1/chat/completions",
    );
    // A query in the base URL stays after the path (it used to end up before it).
    check_url(
        "https://r.openai.azure.com/openai/deployments/d?api-version=2024-10-21",
        "/chat/completions",
        none,
        "https://r.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-10-21",
    );
    // The adapter's own query comes first.
    check_url(
        "http://h/v1beta?x=1",
        "/models/m:streamGenerateContent?alt=sse",
        none,
        "http://h/v1beta/models/m:streamGenerateContent?alt=sse&x=1",
    );
    let query = [
        Extra::new("api-version", "2024-10-21"),
        Extra::new("tag", "a b&c=d"),
    ];
    check_url(
        "http://h/v1",
        "/chat/completions",
        &query,
        "http://h/v1/chat/completions?api-version=2024-10-21&tag=a+b%26c%3Dd",
    );
    check_url(
        "http://h/v1?x=1",
        "/p?alt=sse",
        &query[..1],
        "http://h/v1/p?alt=sse&x=1&api-version=2024-10-21",
    );
    assert!(url("not a url", "/p", none).is_err());
}

#[test]
fn header_checks() {
    assert_eq!(check_header_name("Helicone-Auth"), Ok(()));
    assert_eq!(check_header_name("x-portkey-api-key"), Ok(()));
    for name in ["", "two words", "colon:", "new\nline", "é"] {
        assert_eq!(
            check_header_name(name),
            Err(HeaderProblem::InvalidName),
            "{name:?}"
        );
    }
    for name in [
        "Content-Type",
        "content-length",
        "HOST",
        "User-Agent",
        "Transfer-Encoding",
    ] {
        assert_eq!(
            check_header_name(name),
            Err(HeaderProblem::Reserved),
            "{name}"
        );
    }
    assert_eq!(check_header_value("Bearer sk-abc\tdef"), Ok(()));
    for value in ["a\r\nInjected: yes", "nul\0", "bell\u{7}"] {
        assert_eq!(
            check_header_value(value),
            Err(HeaderProblem::InvalidValue),
            "{value:?}"
        );
    }
}

#[test]
fn secret_names() {
    for name in [
        "Authorization",
        "Helicone-Auth",
        "x-portkey-api-key",
        "api-key",
        "X-Access-Token",
        "client_secret",
        "sig",
        "X-Amz-Signature",
        "Cookie",
        "x-goog-api-key",
        "apikey",
        "X-Auth-Token",
        "accesstoken",
    ] {
        assert!(is_secret_name(name), "{name}");
    }
    for name in [
        "x-portkey-provider",
        "api-version",
        "Helicone-Cache-Enabled",
        "deployment",
        "keyboard",
        "monkey",
    ] {
        assert!(!is_secret_name(name), "{name}");
    }
}

#[test]
fn debug_hides_secret_values() {
    let config = crate::HttpConfig::new("http://h/v1")
        .with_header("Helicone-Auth", "Bearer hel-0123456789abcdef")
        .with_extra_header(Extra::secret("x-gateway", "from-env-0123456789"))
        .with_header("x-portkey-provider", "openai")
        .with_query("api-version", "2024-10-21")
        .with_extra_query(Extra::secret("sig", "sas-0123456789abcdef"));
    let shown = format!("{config:?}");
    for secret in [
        "hel-0123456789abcdef",
        "from-env-0123456789",
        "sas-0123456789abcdef",
    ] {
        assert!(!shown.contains(secret), "{shown}");
    }
    assert!(shown.contains("x-portkey-provider"), "{shown}");
    assert!(shown.contains("2024-10-21"), "{shown}");
}

#[test]
fn adding_headers_refuses_repeats_reserved_and_bad_values() {
    let mut headers = HeaderMap::new();
    let fine = [
        Extra::new("a", "1"),
        Extra::new("Helicone-Auth", "Bearer x"),
    ];
    assert_eq!(add_headers(&mut headers, &fine), Ok(()));
    assert!(headers["helicone-auth"].is_sensitive());
    assert!(!headers["a"].is_sensitive());
    let cases: [(&[Extra], &str); 3] = [
        (
            &[Extra::new("X-A", "1"), Extra::new("x-a", "2")],
            "the `x-a` header is given twice",
        ),
        (
            &[Extra::new("Content-Type", "text/plain")],
            "the `Content-Type` header: claij sets this header itself",
        ),
        (
            &[Extra::secret("x-b", "line\nbreak-0123456789")],
            "the `x-b` header: the value has characters HTTP forbids in a header",
        ),
    ];
    for (extras, expected) in cases {
        let got = add_headers(&mut HeaderMap::new(), extras);
        assert_eq!(got, Err(expected.to_owned()));
    }
}

#[cfg(feature = "openai")]
mod wire {
    use serde_json::json;
    use wiremock::matchers::{header, method, path, query_param};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    use crate::http::{Extra, HttpConfig, RetryPolicy};
    use crate::openai::OpenAiCompatible;
    use crate::{ApiKey, Backend, ChatRequest, ErrorKind, Message};

    const KEY: &str = "sk-test-gateway-0123456789abcdef";
    const GATEWAY_KEY: &str = "sk-helicone-fedcba9876543210";

    fn request() -> ChatRequest {
        ChatRequest::new("gpt-4o-mini").message(Message::user("2+2?"))
    }

    fn completion() -> ResponseTemplate {
        ResponseTemplate::new(200).set_body_json(json!({
            "id": "c", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "{\"a\":4}"},
                         "finish_reason": "stop"}],
        }))
    }

    fn backend(config: HttpConfig) -> OpenAiCompatible {
        OpenAiCompatible::new(config.base_url.clone())
            .with_key(ApiKey::new(KEY))
            .with_config(config.with_retry(RetryPolicy::none()))
    }

    #[tokio::test]
    async fn a_gateway_gets_its_headers_and_query() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .and(header("authorization", format!("Bearer {KEY}").as_str()))
            .and(header(
                "helicone-auth",
                format!("Bearer {GATEWAY_KEY}").as_str(),
            ))
            .and(header("x-portkey-provider", "openai"))
            .and(header("content-type", "application/json"))
            .and(query_param("team", "research & dev"))
            .respond_with(completion())
            .expect(1)
            .mount(&server)
            .await;
        let config = HttpConfig::new(format!("{}/v1", server.uri()))
            .with_extra_header(Extra::secret(
                "Helicone-Auth",
                format!("Bearer {GATEWAY_KEY}"),
            ))
            .with_header("x-portkey-provider", "openai")
            .with_query("team", "research & dev");
        let response = backend(config).complete(&request()).await;
        assert!(response.is_ok(), "{response:?}");
    }

    #[tokio::test]
    async fn an_azure_deployment_gets_the_bare_key_in_api_key_and_the_api_version() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/openai/deployments/gpt-4o/chat/completions"))
            .and(header("api-key", KEY))
            .and(query_param("api-version", "2024-10-21"))
            .respond_with(completion())
            .expect(1)
            .mount(&server)
            .await;
        let config = HttpConfig::new(format!("{}/openai/deployments/gpt-4o", server.uri()))
            .with_auth_header("api-key")
            .with_query("api-version", "2024-10-21");
        let response = backend(config).complete(&request()).await;
        assert!(response.is_ok(), "{response:?}");
        let received = server.received_requests().await.unwrap_or_default();
        assert_eq!(received.len(), 1);
        assert!(
            !received[0].headers.contains_key("authorization"),
            "{:?}",
            received[0].headers
        );
    }

    #[tokio::test]
    async fn a_stream_gets_the_same_headers_and_query() {
        use futures_util::StreamExt as _;

        let server = MockServer::start().await;
        let chunk = json!({"id": "c", "object": "chat.completion.chunk", "created": 1,
            "model": "gpt-4o", "choices": [{"index": 0, "delta": {"content": "{}"},
            "finish_reason": "stop"}]});
        let body = format!("data: {chunk}\n\ndata: [DONE]\n\n");
        Mock::given(method("POST"))
            .and(path("/openai/deployments/gpt-4o/chat/completions"))
            .and(header("api-key", KEY))
            .and(header("helicone-auth", GATEWAY_KEY))
            .and(query_param("api-version", "2024-10-21"))
            .respond_with(ResponseTemplate::new(200).set_body_raw(body, "text/event-stream"))
            .expect(1)
            .mount(&server)
            .await;
        let config = HttpConfig::new(format!("{}/openai/deployments/gpt-4o", server.uri()))
            .with_auth_header("api-key")
            .with_extra_header(Extra::secret("Helicone-Auth", GATEWAY_KEY))
            .with_query("api-version", "2024-10-21");
        let backend = backend(config);
        let events: Vec<_> = backend.stream(&request()).collect().await;
        assert!(!events.is_empty());
        assert!(events.iter().all(Result::is_ok), "{events:?}");
    }

    #[tokio::test]
    async fn an_extra_header_the_adapter_sets_is_refused_before_sending() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(completion())
            .expect(0)
            .mount(&server)
            .await;
        let config = HttpConfig::new(format!("{}/v1", server.uri()))
            .with_header("Authorization", "Bearer other-0123456789");
        let error = backend(config).complete(&request()).await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::BadRequest, "{error}");
        let shown = error.to_string();
        assert!(
            shown.contains("`authorization` header is set by claij"),
            "{shown}"
        );
        assert!(!shown.contains("other-0123456789"), "{shown}");
        // Without a key, the same header is the caller's to set.
        let config = HttpConfig::new(format!("{}/v1", server.uri()))
            .with_header("Authorization", "Bearer other-0123456789")
            .with_header("Content-Type", "text/plain");
        let error = OpenAiCompatible::new(config.base_url.clone())
            .with_config(config)
            .complete(&request())
            .await
            .unwrap_err();
        assert!(
            error
                .to_string()
                .contains("`Content-Type` header: claij sets"),
            "{error}"
        );
    }

    #[tokio::test]
    async fn errors_scrub_secret_header_and_query_values() {
        let server = MockServer::start().await;
        let echo = format!("bad gateway key {GATEWAY_KEY} for sig=sas-secret-0123456789");
        Mock::given(method("POST"))
            .respond_with(
                ResponseTemplate::new(401).set_body_json(json!({"error": {"message": echo}})),
            )
            .expect(1)
            .mount(&server)
            .await;
        let config = HttpConfig::new(format!("{}/v1", server.uri()))
            .with_extra_header(Extra::secret("x-gateway", GATEWAY_KEY))
            .with_extra_query(Extra::secret("s", "sas-secret-0123456789"));
        let error = backend(config).complete(&request()).await.unwrap_err();
        let shown = format!("{error} {error:?}");
        assert!(shown.contains("bad gateway key ***"), "{shown}");
        assert!(!shown.contains(GATEWAY_KEY), "{shown}");
        assert!(!shown.contains("sas-secret-0123456789"), "{shown}");
    }
}
