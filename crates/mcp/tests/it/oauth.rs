//! OAuth 2.1 against an authorization server played by wiremock on 127.0.0.1 (reached as
//! `localhost`, as the conformance suite's are): the issuer of the authorization response checked
//! (RFC 9207), `offline_access` asked for only when the authorization server lists it (SEP-2207),
//! and a protected resource that moves to a new authorization server met with a new registration
//! there (SEP-2352).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use claij_mcp::{
    Authorizer, BoxError, BoxFuture, ClientOptions, Error, HttpServer, McpClient,
    NeedsAuthorization, OAuth,
};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// Where the authorization server redirects (never visited: the authorizer reads the redirect).
const REDIRECT_URI: &str = "http://localhost:3000/callback";

/// `server`'s URL with `localhost` for its host (rmcp refuses private address literals in
/// metadata URLs; `localhost` is the loopback name).
fn localhost(server: &MockServer) -> String {
    server.uri().replace("127.0.0.1", "localhost")
}

/// What the authorizer does with the authorization URL.
#[derive(Clone)]
enum Approve {
    /// Redirects with a code, the request's `state` and this `iss` (none when `None`).
    WithIssuer(Option<String>),
    /// Records the URL and declines (nobody to ask).
    Decline,
}

/// Approves at once, as a person would in a browser, and records each authorization URL.
#[derive(Clone)]
struct Approver {
    approve: Approve,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Approver {
    fn new(approve: Approve) -> Self {
        Self {
            approve,
            seen: Arc::default(),
        }
    }

    /// The query parameter `name` of the `index`th authorization URL.
    fn param(&self, index: usize, name: &str) -> Option<String> {
        let seen = self.seen.lock().unwrap();
        let url = reqwest::Url::parse(&seen[index]).unwrap();
        url.query_pairs()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.into_owned())
    }
}

impl Authorizer for Approver {
    fn authorize<'a>(
        &'a self,
        authorization_url: &'a str,
    ) -> BoxFuture<'a, Result<String, BoxError>> {
        Box::pin(async move {
            self.seen.lock().unwrap().push(authorization_url.to_owned());
            let issuer = match &self.approve {
                Approve::Decline => return Err(Box::new(NeedsAuthorization) as BoxError),
                Approve::WithIssuer(issuer) => issuer.clone(),
            };
            let url = reqwest::Url::parse(authorization_url)?;
            let state = url
                .query_pairs()
                .find(|(key, _)| key == "state")
                .map(|(_, value)| value.into_owned())
                .unwrap_or_default();
            let mut redirect = reqwest::Url::parse(REDIRECT_URI)?;
            redirect
                .query_pairs_mut()
                .append_pair("code", "the-code")
                .append_pair("state", &state);
            if let Some(issuer) = issuer {
                redirect.query_pairs_mut().append_pair("iss", &issuer);
            }
            Ok(redirect.to_string())
        })
    }
}

/// An authorization server: its metadata (with `extra` fields), registration (client `client_id`)
/// and token endpoint (token `token`).
async fn authorization_server(client_id: &str, token: &str, extra: Value) -> MockServer {
    let server = MockServer::start().await;
    let base = localhost(&server);
    let mut metadata = json!({
        "issuer": base,
        "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"),
        "registration_endpoint": format!("{base}/register"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
        "scopes_supported": ["mcp:basic"],
    });
    for (key, value) in extra.as_object().unwrap() {
        metadata[key] = value.clone();
    }
    Mock::given(method("GET"))
        .and(path("/.well-known/oauth-authorization-server"))
        .respond_with(ResponseTemplate::new(200).set_body_json(metadata))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/register"))
        .respond_with(ResponseTemplate::new(201).set_body_json(json!({
            "client_id": client_id,
            "redirect_uris": [REDIRECT_URI],
            "token_endpoint_auth_method": "none",
        })))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/token"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "access_token": token,
            "token_type": "Bearer",
            "expires_in": 3600,
            "scope": "mcp:basic",
        })))
        .mount(&server)
        .await;
    server
}

/// The protected resource's metadata: it names the first authorization server until `moved`,
/// then the second.
struct Metadata {
    resource: String,
    first: String,
    second: String,
    moved: Arc<AtomicBool>,
}

impl Respond for Metadata {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        let server = if self.moved.load(Ordering::SeqCst) {
            &self.second
        } else {
            &self.first
        };
        ResponseTemplate::new(200).set_body_json(json!({
            "resource": self.resource,
            "authorization_servers": [server],
            "scopes_supported": ["mcp:basic"],
        }))
    }
}

/// The MCP endpoint: every request is refused with a 401 challenge; one carrying `old_token` moves
/// the resource to the second authorization server.
struct Endpoint {
    metadata_url: String,
    old_token: String,
    moved: Arc<AtomicBool>,
}

impl Respond for Endpoint {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let bearer = request
            .headers
            .get("authorization")
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default();
        if bearer == format!("Bearer {}", self.old_token) {
            self.moved.store(true, Ordering::SeqCst);
        }
        ResponseTemplate::new(401)
            .insert_header(
                "WWW-Authenticate",
                format!(
                    "Bearer error=\"invalid_token\", scope=\"mcp:basic\", resource_metadata=\"{}\"",
                    self.metadata_url
                )
                .as_str(),
            )
            .set_body_json(json!({"error": "invalid_token"}))
    }
}

/// A protected MCP resource whose metadata names `first`, then `second` once a request carried
/// `old_token`; its URL.
async fn resource(
    server: &MockServer,
    first: &MockServer,
    second: &MockServer,
    old_token: &str,
) -> String {
    let base = localhost(server);
    let moved = Arc::new(AtomicBool::new(false));
    let metadata_url = format!("{base}/.well-known/oauth-protected-resource/mcp");
    Mock::given(method("GET"))
        .and(path("/.well-known/oauth-protected-resource/mcp"))
        .respond_with(Metadata {
            resource: format!("{base}/mcp"),
            first: localhost(first),
            second: localhost(second),
            moved: Arc::clone(&moved),
        })
        .mount(server)
        .await;
    Mock::given(method("POST"))
        .and(path("/mcp"))
        .respond_with(Endpoint {
            metadata_url,
            old_token: old_token.to_owned(),
            moved,
        })
        .mount(server)
        .await;
    format!("{base}/mcp")
}

/// Connects to `url` with `approver`.
async fn connect(url: &str, approver: &Approver) -> Result<McpClient, Error> {
    let options = ClientOptions::default().with_oauth(OAuth::new(REDIRECT_URI, approver.clone()));
    McpClient::connect("guarded", HttpServer::new(url), options).await
}

/// The requests `server` received at `path`.
async fn received(server: &MockServer, at: &str) -> Vec<Request> {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .into_iter()
        .filter(|request| request.url.path() == at)
        .collect()
}

#[tokio::test]
async fn an_authorization_response_from_another_issuer_is_refused_naming_both() {
    let authorization = authorization_server(
        "client-1",
        "token-1",
        json!({"authorization_response_iss_parameter_supported": true}),
    )
    .await;
    let protected = MockServer::start().await;
    let url = resource(&protected, &authorization, &authorization, "none").await;
    let approver = Approver::new(Approve::WithIssuer(Some(
        "https://evil.example.com".to_owned(),
    )));
    let err = connect(&url, &approver).await.err().unwrap();
    let issuer = localhost(&authorization);
    match &err {
        Error::IssuerMismatch {
            server,
            expected,
            received,
        } => {
            assert_eq!(server, "guarded");
            assert_eq!(expected, &issuer);
            assert_eq!(received.as_deref(), Some("https://evil.example.com"));
        }
        other => panic!("not an issuer mismatch: {other:?}"),
    }
    assert!(
        err.to_string().contains("https://evil.example.com"),
        "{err}"
    );
    assert!(err.is_connect(), "{err}");
    // The code was never exchanged.
    assert!(received(&authorization, "/token").await.is_empty());
}

#[tokio::test]
async fn a_missing_issuer_is_refused_when_the_server_promises_one() {
    let authorization = authorization_server(
        "client-1",
        "token-1",
        json!({"authorization_response_iss_parameter_supported": true}),
    )
    .await;
    let protected = MockServer::start().await;
    let url = resource(&protected, &authorization, &authorization, "none").await;
    let approver = Approver::new(Approve::WithIssuer(None));
    let err = connect(&url, &approver).await.err().unwrap();
    assert!(
        matches!(&err, Error::IssuerMismatch { received: None, expected, .. } if *expected == localhost(&authorization)),
        "{err:?}"
    );
    assert!(received(&authorization, "/token").await.is_empty());
}

#[tokio::test]
async fn offline_access_is_asked_for_only_when_the_authorization_server_lists_it() {
    for (listed, expected) in [
        (
            json!(["mcp:basic", "offline_access"]),
            "mcp:basic offline_access",
        ),
        (json!(["mcp:basic"]), "mcp:basic"),
    ] {
        let authorization =
            authorization_server("client-1", "token-1", json!({"scopes_supported": listed})).await;
        let protected = MockServer::start().await;
        let url = resource(&protected, &authorization, &authorization, "none").await;
        let approver = Approver::new(Approve::Decline);
        let err = connect(&url, &approver).await.err().unwrap();
        assert!(err.is_auth(), "{err}");
        assert_eq!(
            approver.param(0, "scope").as_deref(),
            Some(expected),
            "scopes_supported {listed}"
        );
    }
}

#[tokio::test]
async fn a_resource_moved_to_a_new_authorization_server_is_registered_there_afresh() {
    let first = authorization_server("first-client", "first-token", json!({})).await;
    let second = authorization_server("second-client", "second-token", json!({})).await;
    let protected = MockServer::start().await;
    let url = resource(&protected, &first, &second, "first-token").await;
    let approver = Approver::new(Approve::WithIssuer(None));
    // The resource refuses every token, so the connection fails in the end; what matters is how
    // claij met the move.
    let _ = connect(&url, &approver).await;
    assert_eq!(received(&first, "/register").await.len(), 1);
    assert_eq!(
        received(&second, "/register").await.len(),
        1,
        "no registration at the new authorization server"
    );
    // The first server's client is never presented to the second.
    assert_eq!(
        approver.param(0, "client_id").as_deref(),
        Some("first-client")
    );
    assert_eq!(
        approver.param(1, "client_id").as_deref(),
        Some("second-client")
    );
    for request in received(&second, "/token").await {
        let body = String::from_utf8_lossy(&request.body);
        assert!(!body.contains("first-client"), "{body}");
    }
    // The second token went to the resource.
    let bearers: Vec<String> = received(&protected, "/mcp")
        .await
        .iter()
        .filter_map(|request| {
            request
                .headers
                .get("authorization")
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned)
        })
        .collect();
    assert!(
        bearers.contains(&"Bearer first-token".to_owned()),
        "{bearers:?}"
    );
    assert!(
        bearers.contains(&"Bearer second-token".to_owned()),
        "{bearers:?}"
    );
}

#[tokio::test]
async fn after_the_authorization_the_start_is_the_one_asked_for_not_initialize() {
    let authorization = authorization_server("client-1", "token-1", json!({})).await;
    let protected = MockServer::start().await;
    let url = resource(&protected, &authorization, &authorization, "none").await;
    let approver = Approver::new(Approve::WithIssuer(None));
    let _ = connect(&url, &approver).await;
    let authorized: Vec<String> = received(&protected, "/mcp")
        .await
        .iter()
        .filter(|request| request.headers.get("authorization").is_some())
        .filter_map(|request| {
            let body: Value = serde_json::from_slice(&request.body).ok()?;
            body.get("method")?.as_str().map(str::to_owned)
        })
        .collect();
    // A 2026-07-28 server answers an `initialize` without `MCP-Protocol-Version` with 400.
    assert_eq!(
        authorized.first().map(String::as_str),
        Some("server/discover"),
        "{authorized:?}"
    );
}
