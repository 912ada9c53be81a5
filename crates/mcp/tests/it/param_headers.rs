//! SEP-2243 over streamable HTTP on the 2026-07-28 revision: a tool argument whose property carries
//! `x-mcp-header` travels in an `Mcp-Param-{Name}` header too, as it is when it is plain ASCII, as
//! `=?base64?...?=` when it is not safe in an HTTP field value (non-ASCII, leading or trailing
//! whitespace, control characters), and not at all when it is null or left out. The server is
//! wiremock on 127.0.0.1, answering as the conformance suite's stateless mock does.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use claij_mcp::{ClientOptions, HttpServer, McpClient, StartMode};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// A 2026-07-28 server with one tool, `route`, whose `region` is mirrored into `Mcp-Param-Region`.
struct Stateless;

impl Respond for Stateless {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let id = body.get("id").cloned().unwrap_or(Value::Null);
        let result = match body.get("method").and_then(Value::as_str) {
            Some("server/discover") => json!({
                "resultType": "complete",
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}},
                "ttlMs": 0,
                "cacheScope": "private",
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "headers", "version": "1.0.0"}},
            }),
            Some("tools/list") => json!({
                "resultType": "complete",
                "ttlMs": 0,
                "cacheScope": "private",
                "tools": [{
                    "name": "route",
                    "inputSchema": {"type": "object", "properties": {
                        "region": {"type": "string", "x-mcp-header": "Region"},
                        "note": {"type": "string"},
                    }},
                }],
            }),
            Some("tools/call") => json!({
                "resultType": "complete",
                "content": [{"type": "text", "text": "routed"}],
            }),
            _ => return ResponseTemplate::new(202),
        };
        ResponseTemplate::new(200)
            .set_body_json(json!({"jsonrpc": "2.0", "id": id, "result": result}))
    }
}

/// The `Mcp-Param-Region` header of each `tools/call` the server received, in order (`None` when
/// the call had none).
async fn region_headers(server: &MockServer) -> Vec<Option<String>> {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .filter(|request| {
            serde_json::from_slice::<Value>(&request.body)
                .ok()
                .and_then(|body| body.get("method")?.as_str().map(str::to_owned))
                .as_deref()
                == Some("tools/call")
        })
        .map(|request| {
            request
                .headers
                .get("mcp-param-region")
                .map(|value| value.to_str().unwrap().to_owned())
        })
        .collect()
}

#[tokio::test]
async fn annotated_arguments_travel_in_headers_base64_when_unsafe() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/mcp"))
        .respond_with(Stateless)
        .mount(&server)
        .await;
    let options = ClientOptions::default().with_start(StartMode::Stateless);
    let client = McpClient::connect(
        "headers",
        HttpServer::new(format!("{}/mcp", server.uri())),
        options,
    )
    .await
    .unwrap();
    assert_eq!(client.server_info().protocol_version, "2026-07-28");
    for region in [
        json!("us-west1"),
        json!("us west 1"),
        json!("Hello, 世界"),
        json!(" padded"),
        json!("line1\r\nline2"),
        Value::Null,
    ] {
        let outcome = client
            .call("route", json!({"region": region, "note": "x"}))
            .await
            .unwrap();
        assert!(!outcome.is_error, "{region}: {outcome:?}");
    }
    client.call("route", json!({"note": "x"})).await.unwrap();
    assert_eq!(
        region_headers(&server).await,
        vec![
            Some("us-west1".to_owned()),
            Some("us west 1".to_owned()),
            Some("=?base64?SGVsbG8sIOS4lueVjA==?=".to_owned()),
            Some("=?base64?IHBhZGRlZA==?=".to_owned()),
            Some("=?base64?bGluZTENCmxpbmUy?=".to_owned()),
            None,
            None,
        ]
    );
    client.close().await;
}
