//! `claij mcp login|logout SERVER`: authorize claij at an MCP server that asks for OAuth 2.1 and
//! keep its tokens in the user's data directory (one file per server, mode 0600), or forget them.
//! The person approves in a browser; claij listens for the redirect on a loopback port.

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context as _, Result, anyhow, bail};
use claij_backends::BoxFuture;
use claij_interceptors::BoxError;
use claij_mcp::{Authorizer, McpConfig, NeedsAuthorization, OAuth, ServerConfig};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;
use tokio::sync::Mutex;

use super::{Common, Signals};
use crate::Status;

/// The longest request line and headers read from the browser's redirect.
const MAX_REQUEST_BYTES: usize = 16 * 1024;

/// `claij mcp login`.
#[derive(Debug, clap::Args)]
pub(crate) struct LoginArgs {
    /// The server, as named in the configuration's `mcpServers` (read as every command reads it:
    /// `--config`, else $CLAIJ_CONFIG, ./.mcp.json, ~/.config/claij/config.toml).
    server: String,
    /// Longest wait for the browser's redirect, in seconds (default 300).
    #[arg(long, value_name = "SECS", value_parser = crate::args::seconds, default_value = "300")]
    timeout: Duration,
    /// Authorize again, asking for SCOPE as well (repeatable): for a tool the server refuses with
    /// 403 insufficient_scope. The scopes of the stored tokens and of the entry's `oauth.scopes`
    /// are asked for too; the stored tokens are replaced only once the new ones arrive.
    #[arg(long = "scope", value_name = "SCOPE")]
    scopes: Vec<String>,
}

/// `claij mcp logout`.
#[derive(Debug, clap::Args)]
pub(crate) struct LogoutArgs {
    /// The server whose tokens are forgotten.
    server: String,
}

/// The directory of the servers' token files: `$XDG_DATA_HOME/claij/mcp-tokens`, else
/// `~/.local/share/claij/mcp-tokens`.
pub(crate) fn token_dir() -> Option<PathBuf> {
    Some(claij::settings::data_dir()?.join("mcp-tokens"))
}

/// The OAuth settings of `list`, `call` and `chat`: stored tokens are used and refreshed; a server
/// that asks for authorization without usable tokens is an error that says to log in.
pub(crate) fn stored() -> OAuth {
    let oauth = OAuth::new("http://127.0.0.1/callback", NeedsLogin);
    match token_dir() {
        Some(dir) => oauth.with_token_dir(dir),
        None => oauth,
    }
}

/// Replaces each `oauth.clientSecret` written `${NAME}` with the environment variable `NAME`
/// (through `var`), so the secret need not be in the file; an unset one is an error at its pointer.
pub(crate) fn expand_secrets(
    config: &mut McpConfig,
    var: impl Fn(&str) -> Result<String, std::env::VarError>,
) -> Result<()> {
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
        *secret = var(variable).map_err(|_| {
            anyhow!(
                "/mcpServers/{}/oauth/clientSecret: the environment variable {variable} is not set",
                name.replace('~', "~0").replace('/', "~1")
            )
        })?;
    }
    Ok(())
}

/// Runs `claij mcp login`.
pub(crate) async fn login(args: &LoginArgs, signals: &mut Signals) -> Result<Status> {
    let dir = token_dir()
        .ok_or_else(|| anyhow!("no data directory for the tokens: set XDG_DATA_HOME or HOME"))?;
    let listener = TcpListener::bind(("127.0.0.1", 0))
        .await
        .context("cannot listen on a loopback port for the redirect")?;
    let port = listener.local_addr()?.port();
    let redirect_uri = format!("http://127.0.0.1:{port}/callback");
    let asked = Arc::new(AtomicBool::new(false));
    let loopback = Loopback {
        listener: Mutex::new(listener),
        redirect_uri: redirect_uri.clone(),
        timeout: args.timeout,
        server: args.server.clone(),
        asked: Arc::clone(&asked),
    };
    let file = claij_mcp::token_file(&dir, &args.server);
    // With --scope, the new tokens go to a directory of their own, so the stored ones neither
    // stand in for an authorization nor are lost when it fails.
    let fresh = if args.scopes.is_empty() {
        None
    } else {
        Some(Fresh::new(&dir)?)
    };
    let oauth = OAuth::new(redirect_uri, loopback).with_token_dir(
        fresh
            .as_ref()
            .map_or(dir.as_path(), |fresh| fresh.dir.as_path()),
    );
    let mut common = Common {
        project: None,
        sampling_llm: None,
        elicitation: None,
        mcp_log_level: None,
        scopes: Vec::new(),
    };
    if !args.scopes.is_empty() {
        common.scopes = scopes(args, &file)?;
    }
    let connected = tokio::select! {
        connected = super::connect_with(&common, Some(&args.server), None, None, oauth) => connected?,
        status = signals.recv() => return Ok(status),
    };
    let services = connected;
    services.close().await;
    if let Some(fresh) = &fresh {
        let new = claij_mcp::token_file(&fresh.dir, &args.server);
        if new.is_file() {
            std::fs::rename(&new, &file)
                .with_context(|| format!("cannot move the new tokens to {}", file.display()))?;
        }
    }
    let mut err = std::io::stderr();
    let server = &args.server;
    if !file.is_file() {
        writeln!(err, "{server} did not ask for authorization")?;
    } else if asked.load(Ordering::SeqCst) {
        writeln!(err, "logged in to {server} (tokens in {})", file.display())?;
    } else {
        // The stored tokens (refreshed if need be) were enough: nobody was asked.
        writeln!(
            err,
            "already logged in to {server} (tokens in {}); to authorize again, run `claij mcp logout {server}` first",
            file.display()
        )?;
    }
    Ok(Status::Ok)
}

/// The scopes `login --scope` asks for: those of the stored tokens (`granted_scopes` of the
/// token file, when there is one) and `--scope`, each once, in that order. The entry's own
/// `oauth.scopes` are added where the configuration is read.
fn scopes(args: &LoginArgs, file: &std::path::Path) -> Result<Vec<String>> {
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
        Err(e) => bail!("cannot read {}: {e}", file.display()),
    };
    let mut all: Vec<String> = Vec::new();
    for scope in granted.into_iter().chain(args.scopes.iter().cloned()) {
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
    fn new(tokens: &std::path::Path) -> Result<Fresh> {
        let dir = tokens.join(format!(".login-{}", std::process::id()));
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder
            .create(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        Ok(Fresh { dir })
    }
}

impl Drop for Fresh {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs `claij mcp logout`.
pub(crate) fn logout(args: &LogoutArgs) -> Result<Status> {
    let dir = token_dir()
        .ok_or_else(|| anyhow!("no data directory for the tokens: set XDG_DATA_HOME or HOME"))?;
    let file = claij_mcp::token_file(&dir, &args.server);
    let mut err = std::io::stderr();
    match std::fs::remove_file(&file) {
        Ok(()) => writeln!(err, "logged out of {}", args.server)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            writeln!(err, "no tokens for {}", args.server)?;
        }
        Err(e) => bail!("cannot remove {}: {e}", file.display()),
    }
    let _ = std::fs::remove_file(file.with_extension("lock"));
    Ok(Status::Ok)
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
    server: String,
    /// Set once the person has been asked to approve.
    asked: Arc<AtomicBool>,
}

impl Authorizer for Loopback {
    fn authorize<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<String, BoxError>> {
        Box::pin(async move {
            let state =
                query_param(url, "state").ok_or("the authorization URL has no state parameter")?;
            self.asked.store(true, Ordering::SeqCst);
            let mut err = std::io::stderr();
            writeln!(
                err,
                "to authorize claij at {}, open this URL in a browser:\n{url}",
                self.server
            )?;
            if let Some(browser) = std::env::var_os("BROWSER").filter(|b| !b.is_empty()) {
                // Never required: the URL is printed above.
                let _ = std::process::Command::new(browser)
                    .arg(url)
                    .stdin(std::process::Stdio::null())
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .spawn();
            }
            let listener = self.listener.lock().await;
            let waited = tokio::time::timeout(self.timeout, self.wait(&listener, &state)).await;
            match waited {
                Ok(redirect) => redirect,
                Err(_) => Err(format!(
                    "no redirect from the browser within --timeout {} s",
                    self.timeout.as_secs_f64()
                )
                .into()),
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

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
        let err = expand_secrets(&mut unset, var).unwrap_err().to_string();
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
