//! Step-up authorization: a request the server refuses with 403 `insufficient_scope` is authorized
//! again for the union of the scopes held and the challenge's, through the caller's
//! [`Authorizer`](crate::Authorizer), and sent again, at most [`MAX_STEP_UPS`] times for one
//! request (rmcp's own limit restarts with each token), after which the refusal fails it.
//!
//! A token the server rejects with 401 that rmcp could not refresh is authorized again from the
//! start ([`Again`]): the protected resource's metadata read afresh, so when it names a new
//! authorization server (SEP-2352) the old server's client registration and tokens are dropped and
//! claij registers with the new one; once for one request.

use std::collections::HashMap;
use std::sync::Arc;

use http::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::auth::{AuthClient, AuthorizationCallback, WWWAuthenticateParams};
use rmcp::transport::common::client_side_sse::BoxedSseResponse;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use tracing::{info, warn};

use crate::auth::Authorizer;

/// Step-up authorizations for one request: with the first, at most three authorizations.
pub(super) const MAX_STEP_UPS: usize = 2;

type Inner = AuthClient<reqwest::Client>;
type Failure = StreamableHttpError<reqwest::Error>;

/// rmcp's OAuth client, with step-up on `insufficient_scope` and a new authorization when a held
/// token is refused.
#[derive(Clone)]
pub(super) struct StepUp {
    pub(super) inner: Inner,
    pub(super) authorizer: Arc<dyn Authorizer>,
    /// Where giving up is said, for the connection's errors.
    pub(super) refusal: crate::wire::Refusal,
    /// How to authorize again from the start.
    pub(super) again: Arc<Again>,
}

/// What a new authorization of the server needs: its name, its entry and claij's OAuth settings.
pub(super) struct Again {
    pub(super) server: String,
    pub(super) http: crate::config::HttpServer,
    pub(super) oauth: crate::auth::OAuth,
}

impl StepUp {
    /// Runs `call`; while the server answers `insufficient_scope` and another upgrade is allowed,
    /// authorizes the wider scope and runs it again with the new token.
    async fn stepping_up<T, F, Fut>(
        &self,
        uri: &str,
        auth_token: Option<String>,
        call: F,
    ) -> Result<T, Failure>
    where
        F: Fn(Option<String>) -> Fut,
        Fut: Future<Output = Result<T, Failure>>,
    {
        let mut result = call(auth_token).await;
        if let Err(StreamableHttpError::AuthRequired(refusal)) = &result
            && self.authorize_again(&refusal.www_authenticate_header).await
        {
            result = call(None).await;
        }
        for _ in 0..MAX_STEP_UPS {
            let Err(StreamableHttpError::InsufficientScope(refusal)) = &result else {
                break;
            };
            if !self.widen(uri, &refusal.www_authenticate_header).await {
                break;
            }
            result = call(None).await;
        }
        if let Err(StreamableHttpError::InsufficientScope(refusal)) = &result {
            let scope = reqwest::Url::parse(uri)
                .ok()
                .and_then(|base| {
                    WWWAuthenticateParams::parse(&refusal.www_authenticate_header, &base).scope
                })
                .unwrap_or_default();
            let _ = self.refusal.set(format!(
                "the server refused the token's scope (403 insufficient_scope, it asks for `{scope}`) and no wider scope was authorized"
            ));
        }
        result
    }

    /// After a 401 `challenge` to a request that carried a token (rmcp already tried a refresh):
    /// authorizes again from the start, as the first time, and puts the new authorization in place
    /// of the old one; whether that worked. A request without a token is the start's to authorize.
    async fn authorize_again(&self, challenge: &str) -> bool {
        let held = {
            let manager = self.inner.auth_manager.lock().await;
            matches!(manager.get_credentials().await, Ok((_, Some(_))))
        };
        if !held {
            return false;
        }
        let Again {
            server,
            http,
            oauth,
        } = &*self.again;
        info!(
            server,
            "the server refused the token; authorizing again (the authorization server may have changed)"
        );
        match super::authorize(server, http, oauth, challenge).await {
            Ok(manager) => {
                *self.inner.auth_manager.lock().await = manager;
                true
            }
            Err(err) => {
                warn!(server, %err, "the new authorization failed");
                false
            }
        }
    }

    /// Authorizes the scope `challenge` asks for: whether a new token came of it.
    async fn widen(&self, uri: &str, challenge: &str) -> bool {
        let Ok(base) = reqwest::Url::parse(uri) else {
            return false;
        };
        let scope = WWWAuthenticateParams::parse(challenge, &base)
            .scope
            .unwrap_or_default();
        let authorization_url = {
            let manager = self.inner.auth_manager.lock().await;
            match manager.request_scope_upgrade(&scope).await {
                Ok(url) => url,
                Err(err) => {
                    warn!(%err, "no further scope upgrade");
                    return false;
                }
            }
        };
        info!(
            scope,
            "the server asks for a wider scope; authorizing again"
        );
        let redirect = match self.authorizer.authorize(&authorization_url).await {
            Ok(redirect) => redirect,
            Err(err) => {
                warn!(
                    err = %claij_backends::redact::redact_urls_in(&err.to_string()),
                    "the wider scope was not approved"
                );
                return false;
            }
        };
        let Ok(callback) = AuthorizationCallback::from_redirect_url(&redirect) else {
            warn!("the authorization server's redirect has no code and state");
            return false;
        };
        let manager = self.inner.auth_manager.lock().await;
        match manager
            .exchange_code_for_token_with_issuer(
                &callback.code,
                &callback.csrf_token,
                callback.issuer.as_deref(),
            )
            .await
        {
            Ok(_) => true,
            Err(err) => {
                warn!(
                    err = %claij_backends::redact::redact_urls_in(&err.to_string()),
                    "the token request for the wider scope failed"
                );
                false
            }
        }
    }
}

impl StreamableHttpClient for StepUp {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Failure> {
        self.stepping_up(&uri, auth_token, |token| {
            self.inner.post_message(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, Failure> {
        self.stepping_up(&uri, auth_token, |token| {
            self.inner.post_message_with_max_sse_event_size(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Failure> {
        self.stepping_up(&uri, auth_token, |token| {
            self.inner.post_message_with_response_limits(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
                limits,
            )
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Failure> {
        self.inner
            .delete_session(uri, session_id, auth_token, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxedSseResponse, Failure> {
        self.inner
            .get_stream(uri, session_id, last_event_id, auth_token, custom_headers)
            .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxedSseResponse, Failure> {
        self.inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_token,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }
}
