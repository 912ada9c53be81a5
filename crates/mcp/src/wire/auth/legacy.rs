//! Authorization-server metadata that names another issuer on the MCP server's own origin.
//!
//! A 2025-03-26 server has no protected-resource metadata: the client looks for the authorization
//! server's metadata at the MCP server's own origin (`/.well-known/oauth-authorization-server`),
//! so it knows no issuer beforehand. Such servers often mount their authorization endpoints under
//! a path and name that path as the issuer (`http://host/oauth`), which is not the issuer RFC 8414
//! §3.3 derives from the URL the document was fetched at (`http://host/`). rmcp refuses the
//! mismatch, as it should for a document fetched from another server.
//!
//! claij accepts the document in one case only: it was fetched from the MCP server's origin, and
//! the issuer it names is on that same origin (scheme, host and port). The party that serves the
//! MCP endpoint then vouches for the metadata itself, so nothing another server says is taken; an
//! issuer on any other origin is still refused (the mix-up attack §3.3 guards against).

use std::time::Duration;

use reqwest::Url;
use rmcp::transport::auth::{AuthError, AuthorizationManager, AuthorizationMetadata};
use tracing::warn;

/// Largest metadata document read.
const MAX_METADATA_BYTES: usize = 256 * 1024;
/// How long one metadata request may take.
const TIMEOUT: Duration = Duration::from_secs(30);

/// rmcp's discovery from `challenge` for the server at `url`, taking a same-origin issuer
/// mismatch (see the module docs) instead of failing on it.
pub(super) async fn discover(
    manager: &AuthorizationManager,
    url: &str,
    challenge: Option<&str>,
) -> Result<AuthorizationMetadata, AuthError> {
    match manager.resolve_metadata_from_challenge(challenge).await {
        Ok(resolution) => Ok(resolution.metadata),
        Err(AuthError::AuthorizationServerMismatch {
            expected_issuer,
            received_issuer,
        }) => {
            let refused = || AuthError::AuthorizationServerMismatch {
                expected_issuer: expected_issuer.clone(),
                received_issuer: received_issuer.clone(),
            };
            if !same_origin(url, &expected_issuer, &received_issuer) {
                return Err(refused());
            }
            let metadata = fetch(url, &received_issuer).await?.ok_or_else(refused)?;
            warn!(
                issuer = received_issuer,
                "the authorization server metadata at the MCP server's origin names another issuer on \
                 that origin; taking it (2025-03-26 discovery)"
            );
            Ok(metadata)
        }
        Err(err) => Err(err),
    }
}

/// Whether `expected` (the issuer derived from where the document was fetched) and `received`
/// (the issuer the document names) are both on the origin of the MCP server at `url`.
fn same_origin(url: &str, expected: &str, received: &str) -> bool {
    let origin = |text: &str| Url::parse(text).ok().map(|url| url.origin());
    let Some(server) = origin(url) else {
        return false;
    };
    server.is_tuple()
        && origin(expected) == Some(server.clone())
        && origin(received) == Some(server)
}

/// The metadata document naming `issuer`, at the first of the MCP server's well-known URLs (in
/// rmcp's order) that serves one; `None` when none does.
async fn fetch(url: &str, issuer: &str) -> Result<Option<AuthorizationMetadata>, AuthError> {
    let base = Url::parse(url).map_err(|err| AuthError::InternalError(err.to_string()))?;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(TIMEOUT)
        .build()
        .map_err(|err| AuthError::InternalError(err.to_string()))?;
    for candidate in candidates(&base) {
        let Ok(mut response) = client.get(candidate.clone()).send().await else {
            continue;
        };
        if !response.status().is_success() {
            continue;
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|err| AuthError::InternalError(format!("reading {candidate}: {err}")))?
        {
            if body.len() + chunk.len() > MAX_METADATA_BYTES {
                return Err(AuthError::InternalError(format!(
                    "the metadata at {candidate} is larger than {MAX_METADATA_BYTES} bytes"
                )));
            }
            body.extend_from_slice(&chunk);
        }
        match serde_json::from_slice::<AuthorizationMetadata>(&body) {
            Ok(metadata) if metadata.issuer.as_deref() == Some(issuer) => {
                return Ok(Some(metadata));
            }
            _ => continue,
        }
    }
    Ok(None)
}

/// The well-known URLs of the authorization server metadata for the MCP server at `base`, in the
/// order rmcp tries them.
fn candidates(base: &Url) -> Vec<Url> {
    let trimmed = base.path().trim_matches('/');
    let paths = if trimmed.is_empty() {
        vec![
            "/.well-known/oauth-authorization-server".to_owned(),
            "/.well-known/openid-configuration".to_owned(),
        ]
    } else {
        vec![
            format!("/.well-known/oauth-authorization-server/{trimmed}"),
            format!("/.well-known/openid-configuration/{trimmed}"),
            format!("/{trimmed}/.well-known/openid-configuration"),
            "/.well-known/oauth-authorization-server".to_owned(),
        ]
    };
    paths
        .into_iter()
        .map(|path| {
            let mut url = base.clone();
            url.set_query(None);
            url.set_fragment(None);
            url.set_path(&path);
            url
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_issuer_on_the_mcp_servers_origin_is_taken() {
        assert!(same_origin(
            "http://localhost:3000/mcp",
            "http://localhost:3000/",
            "http://localhost:3000/oauth"
        ));
    }

    #[test]
    fn an_issuer_on_another_origin_is_refused() {
        let mcp = "https://mcp.example.com/mcp";
        // Another host, another port, another scheme.
        for received in [
            "https://evil.example.com/oauth",
            "https://mcp.example.com:8443/oauth",
            "http://mcp.example.com/oauth",
        ] {
            assert!(
                !same_origin(mcp, "https://mcp.example.com/", received),
                "{received}"
            );
        }
    }

    #[test]
    fn metadata_fetched_from_another_origin_is_refused() {
        // The document came from the authorization server a protected-resource document named,
        // not from the MCP server: its issuer must match exactly, as rmcp checks.
        assert!(!same_origin(
            "https://mcp.example.com/mcp",
            "https://auth.example.com/",
            "https://auth.example.com/tenant"
        ));
    }

    #[test]
    fn the_candidates_follow_rmcps_order() {
        let urls = |base: &str| -> Vec<String> {
            candidates(&Url::parse(base).unwrap())
                .iter()
                .map(Url::to_string)
                .collect()
        };
        assert_eq!(
            urls("http://h:1/mcp?x=1"),
            [
                "http://h:1/.well-known/oauth-authorization-server/mcp",
                "http://h:1/.well-known/openid-configuration/mcp",
                "http://h:1/mcp/.well-known/openid-configuration",
                "http://h:1/.well-known/oauth-authorization-server",
            ]
        );
        assert_eq!(
            urls("http://h:1/"),
            [
                "http://h:1/.well-known/oauth-authorization-server",
                "http://h:1/.well-known/openid-configuration",
            ]
        );
    }
}
