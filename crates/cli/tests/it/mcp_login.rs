//! `claij mcp login|logout` against a loopback OAuth 2.1 server: login authorizes once (the test
//! plays the browser), `list` then uses the stored token without authorizing again, the token file
//! is private, logout forgets it and `list` says to log in.
//!
//! The server is a few lines of HTTP/1.1 on std threads: protected-resource and
//! authorization-server metadata, dynamic registration, an authorization endpoint that approves at
//! once, a token endpoint, and an MCP endpoint that wants the bearer token.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::{Files, claij_env};

const TOKEN: &str = "token-0c7f";

struct Server {
    base: String,
    authorizations: Arc<AtomicUsize>,
    /// Each request's method and target, in order.
    requests: Arc<Mutex<Vec<String>>>,
}

fn start() -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let authorizations = Arc::new(AtomicUsize::new(0));
    let requests = Arc::new(Mutex::new(Vec::new()));
    let (shared_base, count, seen) = (
        base.clone(),
        Arc::clone(&authorizations),
        Arc::clone(&requests),
    );
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let (base, count, seen) = (shared_base.clone(), Arc::clone(&count), Arc::clone(&seen));
            std::thread::spawn(move || handle(stream, &base, &count, &seen));
        }
    });
    Server {
        base,
        authorizations,
        requests,
    }
}

/// One request per connection.
fn handle(stream: TcpStream, base: &str, authorizations: &AtomicUsize, seen: &Mutex<Vec<String>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    seen.lock().unwrap().push(format!("{method} {target}"));
    let (mut length, mut bearer) = (0, None);
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).unwrap();
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':').unwrap();
        match name.trim().to_ascii_lowercase().as_str() {
            "content-length" => length = value.trim().parse().unwrap(),
            "authorization" => bearer = value.trim().strip_prefix("Bearer ").map(str::to_owned),
            _ => {}
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    let form = String::from_utf8_lossy(&body).into_owned();
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let path = target.split('?').next().unwrap_or("");
    let json_ok = |value: Value| ("200 OK", vec![], value.to_string());
    let (status, headers, text): (&str, Vec<(String, String)>, String) = match (method, path) {
        ("GET", "/.well-known/oauth-protected-resource/mcp")
        | ("GET", "/.well-known/oauth-protected-resource") => json_ok(json!({
            "resource": format!("{base}/mcp"),
            "authorization_servers": [base],
        })),
        ("GET", "/.well-known/oauth-authorization-server") => json_ok(json!({
            "issuer": base,
            "authorization_endpoint": format!("{base}/authorize"),
            "token_endpoint": format!("{base}/token"),
            "registration_endpoint": format!("{base}/register"),
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none"],
        })),
        ("POST", "/register") => (
            "201 Created",
            vec![],
            json!({
                "client_id": "client-1",
                "redirect_uris": body["redirect_uris"],
                "token_endpoint_auth_method": "none",
            })
            .to_string(),
        ),
        ("GET", "/authorize") => {
            authorizations.fetch_add(1, Ordering::SeqCst);
            let query = target.split_once('?').map_or("", |(_, q)| q);
            let param = |name: &str| {
                query
                    .split('&')
                    .find_map(|pair| pair.strip_prefix(&format!("{name}=")))
                    .unwrap_or("")
                    .to_owned()
            };
            let redirect = param("redirect_uri")
                .replace("%3A", ":")
                .replace("%2F", "/");
            let location = format!("{redirect}?code=code-1&state={}", param("state"));
            (
                "302 Found",
                vec![("location".into(), location)],
                String::new(),
            )
        }
        ("POST", "/token") => {
            let grant = if form.contains("grant_type=refresh_token") {
                "refresh"
            } else {
                "code"
            };
            seen.lock().unwrap().push(format!("token {grant}"));
            // Expired at once: every later use refreshes it.
            json_ok(json!({
                "access_token": TOKEN,
                "token_type": "Bearer",
                "expires_in": 0,
                "refresh_token": "refresh-1",
            }))
        }
        ("POST", "/mcp") if bearer.as_deref() != Some(TOKEN) => (
            "401 Unauthorized",
            vec![(
                "www-authenticate".into(),
                format!(
                    "Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\""
                ),
            )],
            String::new(),
        ),
        // Never granted: step-up cannot help.
        ("POST", "/mcp") if body["params"]["name"] == "admin" => (
            "403 Forbidden",
            vec![(
                "www-authenticate".into(),
                format!(
                    "Bearer error=\"insufficient_scope\", scope=\"admin\", resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\""
                ),
            )],
            String::new(),
        ),
        ("POST", "/mcp") => mcp(&body),
        _ => ("405 Method Not Allowed", vec![], String::new()),
    };
    let mut response = format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        text.len()
    );
    for (name, value) in headers {
        response.push_str(&format!("{name}: {value}\r\n"));
    }
    response.push_str("\r\n");
    response.push_str(&text);
    let mut stream = stream;
    let _ = stream.write_all(response.as_bytes());
}

fn mcp(body: &Value) -> (&'static str, Vec<(String, String)>, String) {
    let id = body["id"].clone();
    let result = match body["method"].as_str().unwrap_or("") {
        "initialize" => json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "secure", "version": "1.0.0"},
        }),
        "tools/list" => json!({"tools": [
            {"name": "echo", "description": "Says it again", "inputSchema": {"type": "object"}},
            {"name": "admin", "description": "Needs a scope", "inputSchema": {"type": "object"}},
        ]}),
        _ if id.is_null() => return ("202 Accepted", vec![], String::new()),
        _ => {
            let error = json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": "method not found"}});
            return ("200 OK", vec![], error.to_string());
        }
    };
    let reply = json!({"jsonrpc": "2.0", "id": id, "result": result});
    ("200 OK", vec![], reply.to_string())
}

/// A GET of `url`: the status line and the `location` header.
fn get(url: &str) -> (String, Option<String>) {
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_at(rest.find('/').unwrap());
    let mut stream = TcpStream::connect(host).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nhost: {host}\r\nconnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response.lines().next().unwrap().to_owned();
    let location = response.lines().find_map(|l| {
        l.to_ascii_lowercase()
            .starts_with("location:")
            .then(|| l[9..].trim().to_owned())
    });
    (status, location)
}

/// `claij mcp login secure`, the test playing the browser.
fn login(server: &Server, config: &str, data: &str) {
    login_with(server, config, data, &[]);
}

/// [`login`] with more environment variables.
fn login_with(server: &Server, config: &str, data: &str, env: &[(&str, &str)]) {
    let mut login = Command::new(env!("CARGO_BIN_EXE_claij"))
        .args(["mcp", "login", "secure", "--config", config])
        .env("XDG_DATA_HOME", data)
        .envs(env.iter().copied())
        .env_remove("BROWSER")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(login.stderr.take().unwrap());
    let mut seen = String::new();
    let url = loop {
        let mut line = String::new();
        assert_ne!(
            stderr.read_line(&mut line).unwrap(),
            0,
            "no URL printed: {seen}"
        );
        seen.push_str(&line);
        if line.starts_with(&format!("{}/authorize?", server.base)) {
            break line.trim().to_owned();
        }
    };
    // The browser: the authorization server redirects to claij's loopback port.
    let (status, location) = get(&url);
    assert!(status.contains("302"), "{status}");
    let (status, _) = get(&location.unwrap());
    assert!(status.contains("200"), "{status}");
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    assert!(login.wait().unwrap().success(), "{seen}{rest}");
    assert!(rest.contains("logged in to secure"), "{rest}");
}

#[test]
fn login_keeps_tokens_that_list_uses_until_logout() {
    let server = start();
    let config = json!({"mcpServers": {"secure": {"url": format!("{}/mcp", server.base)}}});
    let files = Files::new(&[("mcp.json", &config.to_string())]);
    let (config, data) = (files.path("mcp.json"), files.path("data"));
    let env = [("XDG_DATA_HOME", Some(data.as_str()))];
    let list = || claij_env(&["mcp", "list", "--config", &config], "", &env);

    let before = list();
    assert_ne!(before.code, 0, "{}", before.stderr);
    assert!(
        before.stderr.contains("claij mcp login"),
        "{}",
        before.stderr
    );
    // One line: no log line of rmcp's worker ending on the 401.
    assert_eq!(before.stderr.trim().lines().count(), 1, "{}", before.stderr);
    assert_eq!(server.authorizations.load(Ordering::SeqCst), 0);

    login(&server, &config, &data);
    assert_eq!(server.authorizations.load(Ordering::SeqCst), 1);

    let file = std::path::Path::new(&data).join("claij/mcp-tokens/secure.json");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    let refreshes = |server: &Server| {
        let requests = server.requests.lock().unwrap();
        requests.iter().filter(|r| *r == "token refresh").count()
    };
    let refreshed_before = refreshes(&server);
    let after = list();
    assert_eq!(after.code, 0, "{}", after.stderr);
    assert!(
        refreshes(&server) > refreshed_before,
        "the expired token was not refreshed"
    );
    assert!(after.stdout.contains("secure.echo"), "{}", after.stdout);
    assert!(!after.stderr.contains(TOKEN), "{}", after.stderr);
    assert_eq!(
        server.authorizations.load(Ordering::SeqCst),
        1,
        "authorized again"
    );

    // A scope the server never grants: the error says so (not a closed connection).
    let refused = claij_env(
        &["mcp", "call", "secure.admin", "--config", &config],
        "",
        &env,
    );
    assert_ne!(refused.code, 0, "{}", refused.stdout);
    assert!(
        refused
            .stderr
            .contains("refused the token's scope (403 insufficient_scope, it asks for `admin`)"),
        "{}",
        refused.stderr
    );
    assert!(
        !refused.stderr.contains("maxMessageBytes"),
        "{}",
        refused.stderr
    );

    let logout = claij_env(&["mcp", "logout", "secure"], "", &env);
    assert_eq!(logout.code, 0, "{}", logout.stderr);
    assert!(!file.exists());

    let again = list();
    assert_ne!(again.code, 0, "{}", again.stderr);
    assert!(
        again
            .stderr
            .contains("secure needs authorization: run `claij mcp login secure`"),
        "{}",
        again.stderr
    );
}

#[test]
fn the_server_entry_names_the_client_and_the_scopes() {
    let server = start();
    let config = json!({"mcpServers": {"secure": {
        "url": format!("{}/mcp", server.base),
        "oauth": {"clientId": "pre-1", "clientSecret": "${CLAIJ_TEST_CLIENT_SECRET}", "scopes": ["tools.read"]},
    }}});
    let files = Files::new(&[("mcp.json", &config.to_string())]);
    let (config, data) = (files.path("mcp.json"), files.path("data"));
    // Unset, the secret's variable is an error naming where it is wanted.
    let unset = claij_env(
        &["mcp", "list", "--config", &config],
        "",
        &[
            ("XDG_DATA_HOME", Some(data.as_str())),
            ("CLAIJ_TEST_CLIENT_SECRET", None),
        ],
    );
    assert_ne!(unset.code, 0);
    assert!(
        unset.stderr.contains("/mcpServers/secure/oauth/clientSecret: the environment variable CLAIJ_TEST_CLIENT_SECRET is not set"),
        "{}",
        unset.stderr
    );
    login_with(
        &server,
        &config,
        &data,
        &[("CLAIJ_TEST_CLIENT_SECRET", "shh-1")],
    );
    let requests = server.requests.lock().unwrap().clone();
    assert!(
        !requests.iter().any(|r| r.starts_with("POST /register")),
        "{requests:?}"
    );
    let authorize = requests
        .iter()
        .find(|r| r.starts_with("GET /authorize"))
        .unwrap();
    assert!(authorize.contains("client_id=pre-1"), "{authorize}");
    assert!(authorize.contains("scope=tools.read"), "{authorize}");
}

/// `llm` may call the `secure` server's tools (a service state), then ends.
const SECURE_MACHINE: &str = r#"{
  "id": "secure-machine",
  "states": [
    {"id": "llm", "action": "llm"},
    {"id": "secure", "action": "service", "config": {"service": "secure"}},
    {"id": "end", "action": "end"}
  ],
  "transitions": [
    {"id": ["start", "llm"], "schema": {"type": "object", "properties": {"request": {"type": "string"}}, "required": ["request"]}},
    {"id": ["llm", "secure"], "schema": {"type": "object", "properties": {"message": {"type": "object"}}, "required": ["message"]}},
    {"id": ["secure", "llm"], "schema": {"type": "object", "properties": {"message": {"type": "object"}}, "required": ["message"]}},
    {"id": ["llm", "end"], "schema": {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}}
  ]
}"#;

#[tokio::test]
async fn ask_and_fsm_run_use_the_token_login_stored() {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer};

    let server = start();
    let llm = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(super::openrouter::CHAT))
        .respond_with(super::openrouter::reply(
            r#"{"id": ["llm", "end"], "answer": "done"}"#,
        ))
        .mount(&llm)
        .await;
    let url = format!("{}/mcp", server.base);
    let toml = format!(
        "{}\n[mcpServers.secure]\nurl = {url:?}\n",
        super::openrouter::config(&llm)
    );
    let json = json!({"mcpServers": {"secure": {"url": url}}});
    let files = Files::new(&[
        ("config.toml", &toml),
        ("mcp.json", &json.to_string()),
        ("machine.json", SECURE_MACHINE),
        ("schema.json", r#"{"type": "object"}"#),
    ]);
    let (toml, data) = (files.path("config.toml"), files.path("data"));
    let env = [
        ("XDG_DATA_HOME", Some(data.as_str())),
        ("CLAIJ_CONFIG", Some(toml.as_str())),
        ("OPENROUTER_API_KEY", Some("sk-or-v1-login")),
    ];
    let (machine, schema) = (files.path("machine.json"), files.path("schema.json"));
    let ask = || {
        claij_env(
            &[
                "ask",
                "say done",
                "--schema",
                &schema,
                "--llm",
                "openrouter:test/model",
                "--interceptors",
                "mcp",
            ],
            "",
            &env,
        )
    };
    let run = || {
        claij_env(
            &[
                "fsm",
                "run",
                &machine,
                "--input",
                r#"{"request": "x"}"#,
                "--llm",
                "openrouter:test/model",
                "--mode",
                "prompted",
            ],
            "",
            &env,
        )
    };
    for before in [ask(), run()] {
        assert_ne!(before.code, 0, "{}", before.stdout);
        assert!(
            before
                .stderr
                .contains("secure needs authorization: run `claij mcp login secure`"),
            "{}",
            before.stderr
        );
    }

    login(&server, &files.path("mcp.json"), &data);
    for after in [ask(), run()] {
        assert_eq!(after.code, 0, "{}", after.stderr);
        assert!(after.stdout.contains("done"), "{}", after.stdout);
        assert!(!after.stderr.contains(TOKEN), "{}", after.stderr);
    }
    assert_eq!(
        server.authorizations.load(Ordering::SeqCst),
        1,
        "authorized again"
    );
}

#[test]
fn login_without_a_redirect_gives_up_at_its_timeout_and_stores_nothing() {
    let server = start();
    let config = json!({"mcpServers": {"secure": {"url": format!("{}/mcp", server.base)}}});
    let files = Files::new(&[("mcp.json", &config.to_string())]);
    let (config, data) = (files.path("mcp.json"), files.path("data"));
    // Nobody opens the URL: no browser, and the test does not play one.
    let login = claij_env(
        &[
            "mcp",
            "login",
            "secure",
            "--config",
            &config,
            "--timeout",
            "1",
        ],
        "",
        &[("XDG_DATA_HOME", Some(data.as_str())), ("BROWSER", None)],
    );
    assert_ne!(login.code, 0, "{}", login.stdout);
    assert!(
        login
            .stderr
            .contains("no redirect from the browser within --timeout 1 s"),
        "{}",
        login.stderr
    );
    assert_eq!(server.authorizations.load(Ordering::SeqCst), 0);
    assert!(
        !std::path::Path::new(&data)
            .join("claij/mcp-tokens/secure.json")
            .exists()
    );
}
