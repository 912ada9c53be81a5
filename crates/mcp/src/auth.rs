//! OAuth 2.1 settings for streamable-HTTP servers (feature `oauth`): how claij names itself to an
//! authorization server and who approves. The protocol itself is rmcp's, in `wire`.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use claij_backends::BoxFuture;
use claij_interceptors::BoxError;

/// The person (or program) who approves an authorization request.
pub trait Authorizer: Send + Sync {
    /// Has `authorization_url` approved (in a browser, say) and returns the URL the authorization
    /// server redirected to, with its `code` and `state`.
    fn authorize<'a>(
        &'a self,
        authorization_url: &'a str,
    ) -> BoxFuture<'a, Result<String, BoxError>>;
}

/// How claij authorizes at a server that asks for OAuth 2.1: set with
/// [`ClientOptions::with_oauth`](crate::ClientOptions::with_oauth).
///
/// The client is, in rmcp's order: the pre-registered one ([`OAuth::with_client`]), else the client
/// ID metadata document ([`OAuth::with_client_metadata_url`]) when the authorization server takes
/// one, else one registered dynamically under [`OAuth::client_name`].
#[derive(Clone)]
#[non_exhaustive]
pub struct OAuth {
    /// Where the authorization server sends the person back (a loopback URL claij listens on).
    pub redirect_uri: String,
    /// The name claij registers under (default `claij`).
    pub client_name: String,
    /// The HTTPS URL of claij's client ID metadata document.
    pub client_metadata_url: Option<String>,
    /// A client ID registered beforehand.
    pub client_id: Option<String>,
    /// The secret of [`OAuth::client_id`], for a confidential client.
    pub client_secret: Option<String>,
    /// Who approves.
    pub authorizer: Arc<dyn Authorizer>,
    /// The directory where each server's tokens are kept between connections and processes, a
    /// file per server ([`token_file`]; `None`: in memory, for one connection only). A file is
    /// created with mode 0600, replaced atomically and refreshed under a lock on a sibling `.lock`
    /// file.
    pub token_dir: Option<PathBuf>,
}

impl OAuth {
    /// Authorizes with redirects to `redirect_uri`, approved by `authorizer`.
    pub fn new(redirect_uri: impl Into<String>, authorizer: impl Authorizer + 'static) -> Self {
        Self {
            redirect_uri: redirect_uri.into(),
            client_name: "claij".to_owned(),
            client_metadata_url: None,
            client_id: None,
            client_secret: None,
            authorizer: Arc::new(authorizer),
            token_dir: None,
        }
    }

    /// Offers the client ID metadata document at `url`.
    #[must_use]
    pub fn with_client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// Keeps each server's tokens in `dir` (see [`token_file`]), so a later connection or process
    /// uses and refreshes them instead of authorizing again.
    #[must_use]
    pub fn with_token_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.token_dir = Some(dir.into());
        self
    }

    /// Uses a pre-registered client, with its secret if it has one.
    #[must_use]
    pub fn with_client(mut self, client_id: impl Into<String>, secret: Option<String>) -> Self {
        self.client_id = Some(client_id.into());
        self.client_secret = secret;
        self
    }
}

impl fmt::Debug for OAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuth")
            .field("redirect_uri", &self.redirect_uri)
            .field("client_name", &self.client_name)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "***"))
            .field("token_dir", &self.token_dir)
            .finish_non_exhaustive()
    }
}

/// What an [`Authorizer`] returns to decline without asking anyone (no person at hand, say): the
/// connection fails with [`Error::Unauthorized`](crate::Error::Unauthorized) naming the server.
#[derive(Debug, Clone, Copy, Default, thiserror::Error)]
#[error("authorization needed")]
pub struct NeedsAuthorization;

/// The token file of `server` in `dir`: the server's name with every character but ASCII letters,
/// digits, `-` and `_` written as `%XX` (so no name reaches outside `dir`), then `.json`.
pub fn token_file(dir: &Path, server: &str) -> PathBuf {
    let mut name = String::with_capacity(server.len() + 5);
    for byte in server.bytes() {
        if byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_' {
            name.push(char::from(byte));
        } else {
            name.push_str(&format!("%{byte:02X}"));
        }
    }
    name.push_str(".json");
    dir.join(name)
}

/// Approves without a person: fetches the authorization URL and takes the redirect the server
/// answers with at once, as test authorization servers (the MCP conformance suite's) do.
#[derive(Debug, Clone, Copy, Default)]
pub struct Headless;

impl Authorizer for Headless {
    fn authorize<'a>(
        &'a self,
        authorization_url: &'a str,
    ) -> BoxFuture<'a, Result<String, BoxError>> {
        Box::pin(async move {
            let client = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()?;
            let response = client.get(authorization_url).send().await?;
            let status = response.status();
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|value| value.to_str().ok())
                .ok_or_else(|| {
                    format!("the authorization server answered {status} without a redirect")
                })?;
            Ok(location.to_owned())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_files_stay_in_their_directory() {
        let dir = Path::new("/d");
        let check = |server: &str, expected: &str| {
            assert_eq!(token_file(dir, server), dir.join(expected), "{server}");
        };
        check("github", "github.json");
        check("my-server_2", "my-server_2.json");
        check("../etc/passwd", "%2E%2E%2Fetc%2Fpasswd.json");
        check("a.b", "a%2Eb.json");
        check("", ".json");
        check("é", "%C3%A9.json");
    }

    #[test]
    fn debug_hides_the_client_secret() {
        let oauth = OAuth::new("http://127.0.0.1:1/callback", Headless)
            .with_client("id-1", Some("s3cret".to_owned()));
        let shown = format!("{oauth:?}");
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("id-1"), "{shown}");
    }
}
