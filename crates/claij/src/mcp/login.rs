//! OAuth 2.1 at an MCP server: [`Login`] authorizes claij (the person approves in a browser,
//! claij listens for the redirect on a loopback port) and keeps the server's tokens in a token
//! directory (one file per server, mode 0600, written by claij-mcp); [`stored`] uses and refreshes
//! them afterwards; [`logout`] forgets them. The token directory is the caller's to choose
//! ([`token_dir`] under a data directory is the `claij` command line's).
//!
//! ```
//! use claij::mcp::login::{self, stored, token_dir};
//!
//! let dir = token_dir(&std::env::temp_dir().join("claij-doc-data"));
//! assert!(dir.ends_with("mcp-tokens"));
//! // For every connection after the login: the stored tokens, refreshed when they expire; a
//! // server that asks for authorization without usable ones is an `is_auth()` error.
//! let _oauth = stored(Some(&dir));
//! // No tokens for this server: nothing to forget.
//! assert!(!login::logout(&dir, "nowhere").unwrap());
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use claij_backends::BoxFuture;
use claij_interceptors::BoxError;
use claij_mcp::{
    Authorizer, ClientOptions, Hooks, McpConfig, NeedsAuthorization, OAuth, ServerConfig, Services,
};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;
use tokio::sync::Mutex;

use super::Error;

/// The longest request line and headers read from the browser's redirect.
const MAX_REQUEST_BYTES: usize = 16 * 1024;

/// How long [`Login::run`] waits for the browser's redirect unless told otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// The start of the error when no redirect came in time (`... within N s`).
pub const NO_REDIRECT: &str = "no redirect from the browser within";

/// The token directory under a data directory: `<data_dir>/mcp-tokens`.
pub fn token_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("mcp-tokens")
}

/// The OAuth settings of every connection but a login: the tokens in `token_dir` are used and
/// refreshed; a server that asks for authorization without usable tokens fails with
/// [`claij_mcp::Error::Unauthorized`] (nobody is asked). `None`: no stored tokens.
pub fn stored(token_dir: Option<&Path>) -> OAuth {
    let oauth = OAuth::new("http://127.0.0.1/callback", NeedsLogin);
    match token_dir {
        Some(dir) => oauth.with_token_dir(dir),
        None => oauth,
    }
}

/// Replaces each `oauth.clientSecret` written `${NAME}` with the variable `NAME` (through `var`),
/// so the secret need not be in the file.
///
/// # Errors
///
/// A variable `var` does not know: [`Error::UnsetSecret`], at its JSON pointer.
pub fn expand_secrets(
    config: &mut McpConfig,
    var: impl Fn(&str) -> Result<String, std::env::VarError>,
) -> Result<(), Error> {
    for (name, server) in &mut config.servers {
        let ServerConfig::Http(http) = server else {
            continue;
        };
        let Some(secret) = http.oauth.as_mut().and_then(|o| o.client_secret.as_mut()) else {
            continue;
        };
        let Some(variable) = secret
            .strip_prefix("${")
            .and_then(|rest| rest.strip_suffix('}'))
        else {
            continue;
        };
        *secret = var(variable).map_err(|_| Error::UnsetSecret {
            file: None,
            pointer: format!(
                "/mcpServers/{}/oauth/clientSecret",
                name.replace('~', "~0").replace('/', "~1")
            ),
            variable: variable.to_owned(),
        })?;
    }
    Ok(())
}

/// One authorization of claij at one server of an [`McpConfig`].
///
/// ```no_run
/// # async fn example(config: claij_mcp::McpConfig) -> Result<(), claij::mcp::Error> {
/// use claij::mcp::login::{Login, Outcome};
///
/// let login = Login::new("secure", "/home/me/.local/share/claij/mcp-tokens")
///     .on_authorize(|url| eprintln!("open {url} in a browser"));
/// match login.run(&config).await? {
///     Outcome::LoggedIn { tokens } => println!("tokens in {}", tokens.display()),
///     Outcome::AlreadyLoggedIn { .. } => println!("nothing to do"),
///     _ => println!("the server asks for no authorization"),
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Login {
    server: String,
    token_dir: PathBuf,
    timeout: Duration,
    scopes: Vec<String>,
    open: Arc<dyn Fn(&str) + Send + Sync>,
}

impl std::fmt::Debug for Login {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Login")
            .field("server", &self.server)
            .field("token_dir", &self.token_dir)
            .field("timeout", &self.timeout)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

/// How a [`Login`] ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// The server asked for no authorization: there are no tokens to keep.
    NotAsked,
    /// The person approved; the tokens are in `tokens`.
    LoggedIn {
        /// The token file.
        tokens: PathBuf,
    },
    /// The stored tokens (refreshed if need be) were enough: nobody was asked.
    AlreadyLoggedIn {
        /// The token file.
        tokens: PathBuf,
    },
}

impl Login {
    /// A login at `server` (a name of the configuration's `mcpServers`), its tokens kept in
    /// `token_dir`; the redirect awaited at most [`DEFAULT_TIMEOUT`].
    pub fn new(server: impl Into<String>, token_dir: impl Into<PathBuf>) -> Self {
        Self {
            server: server.into(),
            token_dir: token_dir.into(),
            timeout: DEFAULT_TIMEOUT,
            scopes: Vec::new(),
            open: Arc::new(|_| {}),
        }
    }

    /// The longest wait for the browser's redirect.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Authorizes again, asking for `scopes` as well (for a tool the server refuses with 403
    /// insufficient_scope): the scopes of the stored tokens and of the entry's `oauth.scopes` are
    /// asked for too, and the stored tokens are replaced only once the new ones arrive.
    pub fn with_scopes(mut self, scopes: impl IntoIterator<Item = String>) -> Self {
        self.scopes = scopes.into_iter().collect();
        self
    }

    /// What shows the person the authorization URL to open (print it, start a browser): called
    /// once the server asks for authorization, before the wait for the redirect.
    pub fn on_authorize(mut self, open: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.open = Arc::new(open);
        self
    }

    /// [`Login::run`] with the settings' MCP servers, their `${VAR}` client secrets expanded
    /// through `var` (`std::env::var` reads the environment); errors name the settings' file.
    ///
    /// # Errors
    ///
    /// No MCP servers ([`Error::NoServers`]), an unset secret ([`Error::UnsetSecret`]), and what
    /// [`Login::run`] returns.
    pub async fn run_configured(
        &self,
        settings: &crate::settings::Settings,
        var: impl Fn(&str) -> Result<String, std::env::VarError>,
    ) -> Result<Outcome, Error> {
        let file = settings.mcp_path.as_deref();
        let mut config = settings
            .mcp_servers()
            .map_err(|e| Error::NoServers(e.into()))?
            .clone();
        expand_secrets(&mut config, var).map_err(|e| e.in_file(file))?;
        self.run(&config).await.map_err(|e| e.in_file(file))
    }

    /// Connects to the server of `config` (its `${VAR}` secrets expanded: [`expand_secrets`]),
    /// authorizing claij when it asks, and keeps the tokens.
    ///
    /// # Errors
    ///
    /// The server is not in `config` ([`Error::UnknownServer`]); no loopback port, a token file
    /// that cannot be read or moved ([`Error::Io`]); the server cannot be reached, refuses, or no
    /// redirect came within the timeout ([`Error::Mcp`]).
    pub async fn run(&self, config: &McpConfig) -> Result<Outcome, Error> {
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(|e| Error::io("cannot listen on a loopback port for the redirect", e))?;
        let port = listener
            .local_addr()
            .map_err(|e| Error::io("cannot listen on a loopback port for the redirect", e))?
            .port();
        let redirect_uri = format!("http://127.0.0.1:{port}/callback");
        let asked = Arc::new(AtomicBool::new(false));
        let loopback = Loopback {
            listener: Mutex::new(listener),
            redirect_uri: redirect_uri.clone(),
            timeout: self.timeout,
            asked: Arc::clone(&asked),
            open: Arc::clone(&self.open),
        };
        let dir = self.token_dir.as_path();
        let file = claij_mcp::token_file(dir, &self.server);
        // With scopes, the new tokens go to a directory of their own, so the stored ones neither
        // stand in for an authorization nor are lost when it fails.
        let fresh = if self.scopes.is_empty() {
            None
        } else {
            Some(Fresh::new(dir)?)
        };
        let oauth = OAuth::new(redirect_uri, loopback)
            .with_token_dir(fresh.as_ref().map_or(dir, |fresh| fresh.dir.as_path()));
        let scopes = if self.scopes.is_empty() {
            Vec::new()
        } else {
            scopes(&self.scopes, &file)?
        };
        let mut selected = config.clone();
        if !selected.servers.contains_key(&self.server) {
            return Err(Error::UnknownServer {
                file: None,
                server: self.server.clone(),
                known: config.servers.keys().cloned().collect(),
            });
        }
        selected.servers.retain(|name, _| *name == self.server);
        for entry in selected.servers.values_mut() {
            if let (ServerConfig::Http(http), false) = (entry, scopes.is_empty()) {
                let asked = &mut http.oauth.get_or_insert_with(Default::default).scopes;
                for scope in &scopes {
                    if !asked.contains(scope) {
                        asked.push(scope.clone());
                    }
                }
            }
        }
        let options = ClientOptions::default()
            .with_hooks(config.hooks(Hooks::default()))
            .with_oauth(oauth);
        let services = Services::connect(&selected, options).await?;
        services.close().await;
        if let Some(fresh) = &fresh {
            let new = claij_mcp::token_file(&fresh.dir, &self.server);
            if new.is_file() {
                std::fs::rename(&new, &file).map_err(|e| {
                    Error::io(
                        format!("cannot move the new tokens to {}", file.display()),
                        e,
                    )
                })?;
            }
        }
        Ok(if !file.is_file() {
            Outcome::NotAsked
        } else if asked.load(Ordering::SeqCst) {
            Outcome::LoggedIn { tokens: file }
        } else {
            Outcome::AlreadyLoggedIn { tokens: file }
        })
    }
}

/// The scopes a login with `extra` scopes asks for: those of the stored tokens (`granted_scopes`
/// of the token file, when there is one) and `extra`, each once, in that order. The entry's own
/// `oauth.scopes` are added by claij-mcp.
fn scopes(extra: &[String], file: &Path) -> Result<Vec<String>, Error> {
    let granted = match std::fs::read_to_string(file) {
        Ok(text) => serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|stored| {
                let scopes = stored.get("granted_scopes")?.as_array()?.clone();
                Some(
                    scopes
                        .iter()
                        .filter_map(|s| s.as_str().map(str::to_owned))
                        .collect::<Vec<_>>(),
                )
            })
            .unwrap_or_default(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(Error::io(format!("cannot read {}", file.display()), e)),
    };
    let mut all: Vec<String> = Vec::new();
    for scope in granted.into_iter().chain(extra.iter().cloned()) {
        for scope in scope.split_whitespace() {
            if !all.iter().any(|s| s == scope) {
                all.push(scope.to_owned());
            }
        }
    }
    Ok(all)
}

/// A private directory next to the token files, removed with everything in it when dropped.
struct Fresh {
    dir: PathBuf,
}

impl Fresh {
    fn new(tokens: &Path) -> Result<Fresh, Error> {
        let dir = tokens.join(format!(".login-{}", std::process::id()));
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder
            .create(&dir)
            .map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))?;
        Ok(Fresh { dir })
    }
}

impl Drop for Fresh {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Forgets the tokens kept for `server` in `token_dir`: `true` when there were some.
///
/// # Errors
///
/// The token file exists and cannot be removed ([`Error::Io`]).
pub fn logout(token_dir: &Path, server: &str) -> Result<bool, Error> {
    let file = claij_mcp::token_file(token_dir, server);
    let removed = match std::fs::remove_file(&file) {
        Ok(()) => true,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => return Err(Error::io(format!("cannot remove {}", file.display()), e)),
    };
    let _ = std::fs::remove_file(file.with_extension("lock"));
    Ok(removed)
}

/// Refuses: the person has to log in first.
struct NeedsLogin;

impl Authorizer for NeedsLogin {
    fn authorize<'a>(&'a self, _url: &'a str) -> BoxFuture<'a, Result<String, BoxError>> {
        Box::pin(async { Err(NeedsAuthorization.into()) })
    }
}

/// The person approves in a browser; the authorization server redirects it to a loopback port.
struct Loopback {
    listener: Mutex<TcpListener>,
    redirect_uri: String,
    timeout: Duration,
    /// Set once the person has been asked to approve.
    asked: Arc<AtomicBool>,
    /// Shows the person the URL.
    open: Arc<dyn Fn(&str) + Send + Sync>,
}

impl Authorizer for Loopback {
    fn authorize<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<String, BoxError>> {
        Box::pin(async move {
            let state =
                query_param(url, "state").ok_or("the authorization URL has no state parameter")?;
            self.asked.store(true, Ordering::SeqCst);
            (self.open)(url);
            let listener = self.listener.lock().await;
            let waited = tokio::time::timeout(self.timeout, self.wait(&listener, &state)).await;
            match waited {
                Ok(redirect) => redirect,
                Err(_) => Err(format!("{NO_REDIRECT} {} s", self.timeout.as_secs_f64()).into()),
            }
        })
    }
}

impl Loopback {
    /// Answers requests on the loopback port until the redirect with this `state`: the URL it
    /// came to.
    async fn wait(&self, listener: &TcpListener, state: &str) -> Result<String, BoxError> {
        loop {
            let (mut stream, _) = listener.accept().await?;
            let target = match read_target(&mut stream).await {
                Some(target) if target.starts_with("/callback?") => target,
                _ => {
                    respond(&mut stream, "404 Not Found", "not the redirect").await;
                    continue;
                }
            };
            let redirect = format!("{}{}", self.redirect_uri, &target["/callback".len()..]);
            if query_param(&redirect, "state").as_deref() != Some(state) {
                // Not this login's redirect (a stale tab, another site): keep waiting.
                respond(&mut stream, "400 Bad Request", "the state does not match").await;
                continue;
            }
            if let Some(error) = query_param(&redirect, "error") {
                respond(&mut stream, "200 OK", "authorization refused").await;
                return Err(format!("the authorization server refused: {error}").into());
            }
            respond(
                &mut stream,
                "200 OK",
                "claij is authorized; you may close this window",
            )
            .await;
            return Ok(redirect);
        }
    }
}

/// The target of an HTTP/1 `GET` request (`/callback?code=...`), reading at most
/// [`MAX_REQUEST_BYTES`].
async fn read_target(stream: &mut tokio::net::TcpStream) -> Option<String> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 2048];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 || buf.len() + n > MAX_REQUEST_BYTES {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let text = std::str::from_utf8(&buf).ok()?;
    let mut parts = text.lines().next()?.split(' ');
    (parts.next()? == "GET").then_some(())?;
    parts.next().map(str::to_owned)
}

async fn respond(stream: &mut tokio::net::TcpStream, status: &str, body: &str) {
    let response = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}\n",
        body.len() + 1
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// The decoded value of `name` in `url`'s query (`+` a space, `%XX` a byte).
fn query_param(url: &str, name: &str) -> Option<String> {
    let query = url.split_once('?')?.1;
    let query = query.split_once('#').map_or(query, |(q, _)| q);
    query.split('&').find_map(|pair| {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        (decode(key)? == name).then(|| decode(value))?
    })
}

fn decode(text: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text.as_bytes();
    while let Some((&byte, tail)) = rest.split_first() {
        rest = tail;
        match byte {
            b'+' => bytes.push(b' '),
            b'%' => {
                let hex = std::str::from_utf8(rest.get(..2)?).ok()?;
                bytes.push(u8::from_str_radix(hex, 16).ok()?);
                rest = &rest[2..];
            }
            other => bytes.push(other),
        }
    }
    String::from_utf8(bytes).ok()
}

/// Starts `browser` (a program, as `$BROWSER` names one) on `url`, its standard streams closed,
/// without waiting for it: what a [`Login::on_authorize`] may do after showing the URL.
///
/// # Errors
///
/// The program cannot be started.
pub fn browse(browser: &std::ffi::OsStr, url: &str) -> std::io::Result<std::process::Child> {
    use std::process::Stdio;
    std::process::Command::new(browser)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// The browser gets the URL as its one argument.
    #[cfg(unix)]
    #[test]
    fn the_browser_is_started_on_the_url() {
        let file = std::env::temp_dir().join(format!("claij-browse-{}", std::process::id()));
        let url = file.display().to_string();
        let mut child = browse("touch".as_ref(), &url).unwrap();
        assert!(child.wait().unwrap().success());
        assert!(file.is_file());
        std::fs::remove_file(&file).unwrap();
        assert!(browse("/nonexistent/browser".as_ref(), &url).is_err());
    }

    #[test]
    fn client_secrets_are_read_from_the_environment() {
        let mut config = McpConfig::from_json(
            r#"{"mcpServers": {
                "a": {"url": "http://127.0.0.1/mcp", "oauth": {"clientId": "i", "clientSecret": "${A_SECRET}"}},
                "b": {"url": "http://127.0.0.1/mcp", "oauth": {"clientId": "i", "clientSecret": "literal"}}}}"#,
        )
        .unwrap();
        let var = |name: &str| match name {
            "A_SECRET" => Ok("from-env".to_owned()),
            _ => Err(std::env::VarError::NotPresent),
        };
        expand_secrets(&mut config, var).unwrap();
        let secret = |server: &str| match &config.servers[server] {
            ServerConfig::Http(http) => http.oauth.as_ref().unwrap().client_secret.clone(),
            _ => None,
        };
        assert_eq!(secret("a").as_deref(), Some("from-env"));
        assert_eq!(secret("b").as_deref(), Some("literal"));

        let mut unset = McpConfig::from_json(
            r#"{"mcpServers": {"a/b": {"url": "http://127.0.0.1/mcp", "oauth": {"clientId": "i", "clientSecret": "${NOPE}"}}}}"#,
        )
        .unwrap();
        let err = expand_secrets(&mut unset, var).unwrap_err();
        assert!(err.is_config());
        let err = err.to_string();
        assert_eq!(
            err,
            "/mcpServers/a~1b/oauth/clientSecret: the environment variable NOPE is not set"
        );
    }

    #[test]
    fn query_params_are_decoded() {
        let url = "http://127.0.0.1:1/callback?code=a%2Fb&state=s+1";
        assert_eq!(query_param(url, "code").as_deref(), Some("a/b"));
        assert_eq!(query_param(url, "state").as_deref(), Some("s 1"));
        assert_eq!(query_param(url, "error"), None);
        assert_eq!(query_param("http://h/c?state=%zz", "state"), None);
        assert_eq!(query_param("http://h/c?state=%e", "state"), None);
        assert_eq!(
            query_param("http://h/c?a&state=x#frag", "state").as_deref(),
            Some("x")
        );
    }
}
