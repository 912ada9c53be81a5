//! Request identity: a real Restate server started with an Ed25519 private key generated here (a
//! throwaway key for this test, never written outside its temp dir) signs every call to a worker
//! given the key's public form, and runs go through as before; a request sent straight to the
//! worker, unsigned or signed with another key, gets 401, while one this test signs with the
//! server's key is served (so the refusals are the key's doing, not the token's shape).

use std::ffi::OsStr;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use bytes::Bytes;
use claij_restate::{Client, Ended, Machine, RunRequest};
use http_body_util::{BodyExt as _, Full};
use ring::signature::{Ed25519KeyPair, KeyPair as _};
use serde_json::json;

use crate::runs::{Counts, chain, client};
use crate::support::{RestateServer, Worker};
use crate::worker::{IDENTITY_KEYS, command, count};

/// An Ed25519 key pair made for one test: its PKCS#8 document and its Restate public key.
struct TestKey {
    pkcs8: Vec<u8>,
    pair: Ed25519KeyPair,
}

impl TestKey {
    fn generate() -> TestKey {
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&rng)
            .unwrap()
            .as_ref()
            .to_vec();
        let pair = Ed25519KeyPair::from_pkcs8(&pkcs8).unwrap();
        TestKey { pkcs8, pair }
    }

    /// `publickeyv1_` and the public key in base58, as the server logs it.
    fn public(&self) -> String {
        format!(
            "publickeyv1_{}",
            bs58::encode(self.pair.public_key().as_ref()).into_string()
        )
    }

    /// The private key as a PEM file's text (what `request-identity-private-key-pem-file` reads).
    fn pem(&self) -> String {
        let body = STANDARD.encode(&self.pkcs8);
        let lines: Vec<&str> = body
            .as_bytes()
            .chunks(64)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect();
        format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            lines.join("\n")
        )
    }

    /// A token as the server makes one for `path` (Restate's request identity v1: EdDSA, its
    /// audience the path, valid a minute either side of now).
    fn token(&self, path: &str) -> String {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let header = json!({"alg": "EdDSA", "typ": "JWT", "kid": self.public()});
        let claims = json!({"aud": path, "iat": now, "nbf": now - 60, "exp": now + 60});
        let message = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = self.pair.sign(message.as_bytes());
        format!("{message}.{}", URL_SAFE_NO_PAD.encode(signature.as_ref()))
    }
}

/// A request straight to the worker on `port` (HTTP/2 without TLS, as the server calls it): its
/// status and body.
async fn straight(port: u16, path: &str, token: Option<&str>) -> (u16, String) {
    let stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let (mut sender, connection) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(stream),
    )
    .await
    .unwrap();
    tokio::spawn(connection);
    let mut request = http::Request::builder()
        .method(if path.ends_with("/discover") {
            "GET"
        } else {
            "POST"
        })
        .uri(format!("http://127.0.0.1:{port}{path}"))
        .header("accept", "application/vnd.restate.endpointmanifest.v3+json")
        .header("content-type", "application/vnd.restate.invocation.v5");
    request = match token {
        Some(token) => request
            .header("x-restate-signature-scheme", "v1")
            .header("x-restate-jwt-v1", token),
        None => request,
    };
    let response = sender
        .send_request(request.body(Full::new(Bytes::new())).unwrap())
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[test]
fn a_signing_server_runs_through_a_keyed_worker_and_an_unsigned_or_forged_request_gets_401() {
    let server_key = TestKey::generate();
    let dir = Counts::new();
    let pem = dir.path().join("request-identity.pem");
    std::fs::write(&pem, server_key.pem()).unwrap();
    let Some(server) = RestateServer::start_with(&[(
        "RESTATE_WORKER__INVOKER__REQUEST_IDENTITY_PRIVATE_KEY_PEM_FILE",
        OsStr::new(&pem),
    )]) else {
        return;
    };
    // The server says which public key it signs with: the one the worker is given.
    assert!(
        server.log().contains(&server_key.public()),
        "the server's log does not name {}:\n{}",
        server_key.public(),
        server.log()
    );

    let counts = Counts::new();
    let (dir_path, public) = (counts.path().to_owned(), server_key.public());
    let worker = Worker::spawn(move |port| {
        let mut command = command(port, &dir_path, None);
        command.env(IDENTITY_KEYS, &public);
        command
    });
    // Registration: the server calls the worker's discovery, signed.
    server.register(&worker.uri());
    let client: Client = client(&server);
    let request = RunRequest::new(Machine::inline(chain(), vec![]), json!({"topic": "rust"}));
    block(client.start("signed-1", &request)).unwrap();
    let result = block(client.attach("signed-1")).unwrap();
    assert!(
        matches!(&result.ended, Ended::Finished { state, .. } if state == "end"),
        "{:?}\n{}",
        result.ended,
        worker.log()
    );
    assert_eq!(count(counts.path(), "answered"), 3);

    // Straight to the worker, past the server.
    let other_key = TestKey::generate();
    let port = worker.port();
    for path in ["/discover", "/invoke/ClaijFsm/run"] {
        let unsigned = block(straight(port, path, None));
        assert_eq!(unsigned.0, 401, "unsigned {path}: {unsigned:?}");
        let forged = block(straight(port, path, Some(&other_key.token(path))));
        assert_eq!(forged.0, 401, "signed with another key {path}: {forged:?}");
        // The server's key on another path: the audience is checked too.
        let elsewhere = block(straight(port, path, Some(&server_key.token("/elsewhere"))));
        assert_eq!(
            elsewhere.0, 401,
            "a token for another path {path}: {elsewhere:?}"
        );
    }
    let signed = block(straight(
        port,
        "/discover",
        Some(&server_key.token("/discover")),
    ));
    assert_eq!(signed.0, 200, "signed by the server's key: {signed:?}");
    assert!(signed.1.contains("ClaijFsm"), "{signed:?}");
    // Nothing the refused requests sent reached the model.
    assert_eq!(count(counts.path(), "answered"), 3);
}

fn block<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}
