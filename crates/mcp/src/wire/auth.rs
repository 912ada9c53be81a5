//! OAuth 2.1 for streamable-HTTP servers, on rmcp's `auth`: a start the server refuses with a 401
//! (or 403) challenge is authorized, then made again with the token. rmcp does the protocol
//! (protected-resource and authorization-server metadata discovery, client ID metadata documents,
//! dynamic or pre-registered clients, PKCE S256, the `resource` parameter, scope selection, the
//! token endpoint's auth methods, refresh); the caller's [`Authorizer`](crate::Authorizer) is the
//! person who approves.

use std::sync::Arc;

use rmcp::RoleClient;
use rmcp::service::{ClientLifecycleMode, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::auth::{
    AuthClient, AuthError, AuthorizationManager, AuthorizationRequest, AuthorizationSession,
    OAuthState,
};
use tracing::{debug, info, warn};

mod legacy;
mod step_up;
mod store;

use super::{Failed, Refusal, handler, handshake_no_child, http_config};
use crate::auth::{NeedsAuthorization, OAuth, token_file};
use crate::client::ClientOptions;
use crate::config::HttpServer;
use crate::error::Error;

type Client = AuthClient<reqwest::Client>;

/// Connects to `http`, authorizing through `oauth` when the server asks for it.
pub(super) async fn connect(
    target: Target<'_>,
    handler: handler::Handler,
    lifecycle: ClientLifecycleMode,
) -> Result<RunningService<RoleClient, handler::Handler>, Error> {
    let Target {
        server,
        http,
        options,
        max_message_bytes,
        refusal,
    } = target;
    let Some(oauth) = &options.oauth else {
        return Err(refused(server, &"no OAuth settings"));
    };
    let manager = stored_manager(server, &http.url, oauth).await?;
    let client = AuthClient::new(reqwest::Client::default(), manager);
    let start = Start {
        server,
        http,
        options,
        max_message_bytes,
        refusal,
    };
    match start.run(handler.clone(), lifecycle.clone(), &client).await {
        Ok(running) => Ok(running),
        Err(Failed {
            challenge: Some(challenge),
            ..
        }) => {
            info!(server, "the server asks for authorization");
            let manager = authorize(server, http, oauth, &challenge).await?;
            let client = AuthClient::new(reqwest::Client::default(), manager);
            // The same start as before, now with the token: a 2026-07-28 server takes only
            // `server/discover` (an `initialize` without `MCP-Protocol-Version` is a 400), an
            // older one still gets `initialize` when the probe fails.
            start
                .run(handler, lifecycle, &client)
                .await
                .map_err(|failed| failed.error)
        }
        Err(failed) => Err(failed.error),
    }
}

/// The server to connect to and what its connection keeps.
pub(super) struct Target<'a> {
    pub(super) server: &'a str,
    pub(super) http: &'a HttpServer,
    pub(super) options: &'a ClientOptions,
    pub(super) max_message_bytes: usize,
    /// Set when step-up gives up, so the connection's errors say why.
    pub(super) refusal: Refusal,
}

/// What every start of one server shares.
struct Start<'a> {
    server: &'a str,
    http: &'a HttpServer,
    options: &'a ClientOptions,
    max_message_bytes: usize,
    refusal: Refusal,
}

impl Start<'_> {
    /// One start with `client`'s token (if any), falling back from a failed discovery probe to a
    /// fresh `initialize` as an unauthorized server does.
    async fn run(
        &self,
        handler: handler::Handler,
        lifecycle: ClientLifecycleMode,
        client: &Client,
    ) -> Result<RunningService<RoleClient, handler::Handler>, Failed> {
        let auto = matches!(lifecycle, ClientLifecycleMode::Auto { .. });
        let started = self.once(handler.clone(), lifecycle, client).await;
        match started {
            Err(Failed {
                error,
                probe_failed: true,
                challenge: None,
            }) if auto => {
                warn!(
                    server = self.server,
                    %error,
                    "the discovery probe failed; connecting again with initialize"
                );
                self.once(handler, ClientLifecycleMode::Initialize, client)
                    .await
            }
            other => other,
        }
    }

    async fn once(
        &self,
        handler: handler::Handler,
        lifecycle: ClientLifecycleMode,
        client: &Client,
    ) -> Result<RunningService<RoleClient, handler::Handler>, Failed> {
        let config = http_config(self.server, self.http, self.options, self.max_message_bytes)
            .map_err(|error| Failed {
                error,
                probe_failed: false,
                challenge: None,
            })?;
        let Some(oauth) = &self.options.oauth else {
            return Err(Failed {
                error: refused(self.server, &"no OAuth settings"),
                probe_failed: false,
                challenge: None,
            });
        };
        let client = step_up::StepUp {
            inner: client.clone(),
            authorizer: Arc::clone(&oauth.authorizer),
            refusal: Arc::clone(&self.refusal),
            again: Arc::new(step_up::Again {
                server: self.server.to_owned(),
                http: self.http.clone(),
                oauth: oauth.clone(),
            }),
        };
        let transport = StreamableHttpClientTransport::with_client(client, config);
        handshake_no_child(
            self.server,
            &self.http.url,
            self.options,
            handler,
            transport,
            lifecycle,
        )
        .await
    }
}

/// The authorization-code flow for the server at `url`, started from its `challenge`: the
/// authorization manager holding the tokens.
async fn authorize(
    server: &str,
    http: &HttpServer,
    oauth: &OAuth,
    challenge: &str,
) -> Result<AuthorizationManager, Error> {
    let fail = |err: &dyn std::fmt::Display| refused(server, err);
    let mut manager = AuthorizationManager::new(http.url.as_str())
        .await
        .map_err(|err| fail(&err))?;
    if let Some(dir) = &oauth.token_dir {
        manager.set_credential_store(store::FileStore::new(token_file(dir, server)));
    }
    let mut request = AuthorizationRequest::new(oauth.redirect_uri.clone())
        .with_client_name(oauth.client_name.clone())
        .with_challenge(challenge);
    // The server entry's own settings come first.
    let entry = http.oauth.clone().unwrap_or_default();
    if let Some(client_metadata_url) = entry
        .client_metadata_url
        .as_ref()
        .or(oauth.client_metadata_url.as_ref())
    {
        request = request.with_client_metadata_url(client_metadata_url.clone());
    }
    let client = match &entry.client_id {
        Some(id) => Some((id, &entry.client_secret)),
        None => oauth
            .client_id
            .as_ref()
            .map(|id| (id, &oauth.client_secret)),
    };
    if let Some((client_id, secret)) = client {
        request = request.with_preregistered_client(client_id.clone());
        if let Some(secret) = secret {
            request = request.with_client_secret(secret.clone());
        }
    }
    if !entry.scopes.is_empty() {
        request = request.with_scopes(entry.scopes.iter().cloned());
    }
    // What `OAuthState::start_authorization` does, with claij's discovery.
    let metadata = legacy::discover(&manager, &http.url, Some(challenge))
        .await
        .map_err(|err| fail(&err))?;
    manager.set_metadata(metadata);
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, err)| fail(&err))?;
    let mut state = OAuthState::Session(session);
    let authorization_url = state
        .get_authorization_url()
        .await
        .map_err(|err| fail(&err))?;
    let redirect = oauth
        .authorizer
        .authorize(&authorization_url)
        .await
        .map_err(|err| {
            if err.is::<NeedsAuthorization>() {
                Error::Unauthorized {
                    server: server.to_owned(),
                }
            } else {
                fail(&err)
            }
        })?;
    state
        .handle_callback_url(&redirect)
        .await
        .map_err(|err| callback_refused(server, err))?;
    state
        .into_authorization_manager()
        .ok_or_else(|| fail(&"no tokens after the authorization"))
}

/// The authorization manager of the server at `url`, holding the tokens of the server's token file
/// when there is one (an unreadable file is an error; tokens the server's authorization server did
/// not issue are dropped by rmcp).
async fn stored_manager(
    server: &str,
    url: &str,
    oauth: &OAuth,
) -> Result<AuthorizationManager, Error> {
    let mut manager = AuthorizationManager::new(url)
        .await
        .map_err(|err| refused(server, &err))?;
    let Some(dir) = &oauth.token_dir else {
        return Ok(manager);
    };
    manager.set_credential_store(store::FileStore::new(token_file(dir, server)));
    let mut found = manager.initialize_from_store().await;
    if let Err(AuthError::AuthorizationServerMismatch { .. }) = found {
        // rmcp's discovery refused the issuer; claij's may take it (see `legacy`).
        match legacy::discover(&manager, url, None).await {
            Ok(metadata) => {
                manager.set_metadata(metadata);
                found = manager.initialize_from_store().await;
            }
            Err(err) => found = Err(err),
        }
    }
    match found {
        Ok(found) => debug!(server, found, "stored tokens"),
        Err(err @ AuthError::CredentialStoreError(_)) => return Err(refused(server, &err)),
        // Discovery failed: the start says why, or asks for authorization.
        Err(err) => warn!(
            server,
            err = %claij_backends::redact::redact_urls_in(&err.to_string()),
            "the stored tokens cannot be used"
        ),
    }
    Ok(manager)
}

/// The authorization response refused: [`Error::IssuerMismatch`] when its issuer (`iss`) is not
/// the authorization server's (or missing where the server promised it), else [`refused`].
fn callback_refused(server: &str, err: AuthError) -> Error {
    match err {
        AuthError::AuthorizationServerMismatch {
            expected_issuer,
            received_issuer,
        } => Error::IssuerMismatch {
            server: server.to_owned(),
            expected: expected_issuer,
            received: Some(received_issuer),
        },
        AuthError::AuthorizationServerMissingIssuer { expected_issuer } => Error::IssuerMismatch {
            server: server.to_owned(),
            expected: expected_issuer,
            received: None,
        },
        other => refused(server, &other),
    }
}

/// An authorization failure, its URLs without query strings (codes, states, tokens).
fn refused(server: &str, err: &dyn std::fmt::Display) -> Error {
    Error::Handshake {
        server: server.to_owned(),
        message: format!(
            "authorization failed: {}",
            claij_backends::redact::redact_urls_in(&err.to_string())
        ),
    }
}
