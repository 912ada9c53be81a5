//! The Chroma store: the store contract on a real server (`cargo xtask chroma`), and each failure a
//! server can cause (an error status, 413, a malformed or oversized reply, a slow server, no
//! server, a collection of other dimensions or space) on wiremock, with no credential shown.

use std::time::{Duration, SystemTime};

use claij_interceptors::builtin::recall::contract;
use serde_json::{Value, json};
use wiremock::matchers::{body_partial_json, header, method, path, path_regex};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use super::*;

const COLLECTIONS: &str = "/api/v2/tenants/default_tenant/databases/default_database/collections";
const COLLECTION: &str =
    "/api/v2/tenants/default_tenant/databases/default_database/collections/c0ffee";

fn chroma_error(e: &StoreError) -> &ChromaError {
    match e {
        StoreError::Engine { source, .. } => source
            .downcast_ref::<ChromaError>()
            .unwrap_or_else(|| panic!("not a ChromaError: {e:?}")),
        other => panic!("expected an engine error, got {other:?}"),
    }
}

/// A collection as Chroma describes it.
fn collection(dimension: Option<usize>, metadata: Value, space: &str) -> Value {
    json!({
        "id": "c0ffee",
        "name": DEFAULT_COLLECTION,
        "configuration_json": {"hnsw": {"space": space}},
        "tenant": DEFAULT_TENANT,
        "database": DEFAULT_DATABASE,
        "log_position": 0,
        "version": 0,
        "dimension": dimension,
        "metadata": metadata,
    })
}

/// A mock Chroma whose pre-flight says `max_batch_size` and whose collection is `described`.
async fn mock(max_batch_size: usize, described: Value) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/v2/pre-flight-checks"))
        .respond_with(ResponseTemplate::new(200).set_body_json(
            json!({"max_batch_size": max_batch_size, "supports_base64_encoding": true}),
        ))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(COLLECTIONS))
        .and(body_partial_json(json!({
            "name": DEFAULT_COLLECTION,
            "get_or_create": true,
            "configuration": {"hnsw": {"space": "cosine"}},
        })))
        .respond_with(ResponseTemplate::new(200).set_body_json(described))
        .mount(&server)
        .await;
    server
}

async fn fine_mock() -> MockServer {
    mock(5461, collection(None, json!({"claij_dim": 4}), "cosine")).await
}

async fn open(server: &MockServer) -> ChromaStore {
    ChromaStore::open(ChromaOptions::new(server.uri(), 4))
        .await
        .unwrap()
}

fn query(vector: &[f32]) -> Query<'_> {
    Query {
        session: Some("s"),
        vector,
        k: 3,
        min_similarity: 0.0,
    }
}

async fn on(server: &MockServer, route: &str, reply: impl wiremock::Respond + 'static) {
    Mock::given(method("POST"))
        .and(path(format!("{COLLECTION}/{route}")))
        .respond_with(reply)
        .mount(server)
        .await;
}

#[tokio::test]
async fn an_error_status_is_typed_and_names_the_url_and_chroma_s_message() {
    let server = fine_mock().await;
    on(
        &server,
        "query",
        ResponseTemplate::new(500)
            .set_body_json(json!({"error": "InternalError", "message": "the index is gone"})),
    )
    .await;
    let store = open(&server).await;
    let e = store
        .search(query(&[1.0, 0.0, 0.0, 0.0]))
        .await
        .unwrap_err();
    let ChromaError::Status {
        status, message, ..
    } = chroma_error(&e)
    else {
        panic!("{e:?}")
    };
    assert_eq!(*status, 500);
    assert_eq!(message, "InternalError: the index is gone");
    let shown = e.to_string();
    assert!(
        shown.contains(&format!("POST {}{COLLECTION}/query", server.uri())),
        "{shown}"
    );
    assert!(shown.contains("collection claij_memories"), "{shown}");
}

#[tokio::test]
async fn a_413_says_how_many_records_and_to_lower_max_batch() {
    let server = fine_mock().await;
    on(
        &server,
        "get",
        ResponseTemplate::new(200).set_body_json(json!({"ids": [], "include": []})),
    )
    .await;
    on(&server, "add", ResponseTemplate::new(413)).await;
    let store = open(&server).await;
    let e = store
        .add(vec![
            contract::record("a", "s", [1.0, 0.0, 0.0, 0.0], 1),
            contract::record("b", "s", [0.0, 1.0, 0.0, 0.0], 2),
        ])
        .await
        .unwrap_err();
    assert!(
        matches!(chroma_error(&e), ChromaError::TooLarge { records: 2, .. }),
        "{e:?}"
    );
    assert!(e.to_string().contains("(lower max_batch)"), "{e}");
}

#[tokio::test]
async fn a_malformed_reply_is_typed() {
    for (body, why) in [
        ("not json", "expected ident"),
        (
            r#"{"ids": [["a"]], "include": []}"#,
            "no documents for the query",
        ),
        (
            r#"{"ids": [["a"]], "documents": [["x"]], "embeddings": [[[1,0,0,0]]],
                "metadatas": [[{"session": "s"}]], "distances": [[0.0]], "include": []}"#,
            "record \"a\" has no valid `created_ms`",
        ),
        (
            r#"{"ids": [["a"]], "documents": [["x"]], "embeddings": [[[1,0,0]]],
                "metadatas": [[{"session": "s", "created_ms": 1}]], "distances": [[0.0]], "include": []}"#,
            "record \"a\" has 3 dimensions, the collection 4",
        ),
    ] {
        let server = fine_mock().await;
        let store = open(&server).await;
        on(
            &server,
            "query",
            ResponseTemplate::new(200).set_body_string(body),
        )
        .await;
        let e = store
            .search(query(&[1.0, 0.0, 0.0, 0.0]))
            .await
            .unwrap_err();
        assert!(
            matches!(chroma_error(&e), ChromaError::Malformed { why: w, .. } if w.contains(why)),
            "{body}: {e:?}"
        );
    }
}

#[tokio::test]
async fn a_reply_over_the_cap_is_refused_naming_the_limit() {
    let server = fine_mock().await;
    on(
        &server,
        "query",
        ResponseTemplate::new(200).set_body_string("x".repeat(5_000)),
    )
    .await;
    let store = ChromaStore::open(ChromaOptions::new(server.uri(), 4).with_max_reply_bytes(4_096))
        .await
        .unwrap();
    let e = store
        .search(query(&[1.0, 0.0, 0.0, 0.0]))
        .await
        .unwrap_err();
    assert!(
        matches!(
            chroma_error(&e),
            ChromaError::ReplyTooLarge { limit: 4_096, .. }
        ),
        "{e:?}"
    );
    assert!(
        e.to_string()
            .contains("larger than the limit of 4096 bytes (max_reply_bytes)"),
        "{e}"
    );
}

#[tokio::test]
async fn a_slow_server_is_a_timeout_naming_the_limit() {
    let server = fine_mock().await;
    on(
        &server,
        "query",
        ResponseTemplate::new(200)
            .set_body_json(json!({"ids": [[]], "include": []}))
            .set_delay(Duration::from_secs(600)),
    )
    .await;
    let store = ChromaStore::open(
        ChromaOptions::new(server.uri(), 4).with_timeout(Duration::from_millis(300)),
    )
    .await
    .unwrap();
    let e = store
        .search(query(&[1.0, 0.0, 0.0, 0.0]))
        .await
        .unwrap_err();
    assert!(
        matches!(chroma_error(&e), ChromaError::Timeout { timeout, .. } if *timeout == Duration::from_millis(300)),
        "{e:?}"
    );
    assert!(e.to_string().contains("within 300ms (timeout)"), "{e}");
}

#[tokio::test]
async fn no_server_is_a_connection_error_naming_the_url() {
    let [port] = claij_test_support::net::free_ports().unwrap();
    let url = format!("http://127.0.0.1:{port}");
    let e = ChromaStore::open(ChromaOptions::new(&url, 4))
        .await
        .unwrap_err();
    assert!(matches!(e, ChromaError::Connect { .. }), "{e:?}");
    assert!(
        e.to_string().starts_with(&format!(
            "GET {url}/api/v2/pre-flight-checks: cannot connect"
        )),
        "{e}"
    );
}

#[tokio::test]
async fn a_collection_of_other_dimensions_or_space_is_refused() {
    for (described, expected) in [
        (
            collection(Some(8), Value::Null, "cosine"),
            "collection claij_memories holds 8-dimension vectors, opened for 4",
        ),
        (
            collection(None, json!({"claij_dim": 8}), "cosine"),
            "collection claij_memories holds 8-dimension vectors, opened for 4",
        ),
        (
            collection(Some(4), json!({"claij_dim": 4}), "l2"),
            "collection claij_memories uses the l2 distance, not cosine",
        ),
    ] {
        let server = mock(5461, described).await;
        let e = ChromaStore::open(ChromaOptions::new(server.uri(), 4))
            .await
            .unwrap_err();
        assert_eq!(e.to_string(), expected);
    }
    let server = mock(5461, collection(Some(4), Value::Null, "cosine")).await;
    assert_eq!(open(&server).await.dim(), 4);
}

#[tokio::test]
async fn bad_options_are_refused_naming_them() {
    let cases = [
        (ChromaOptions::new("not a url", 4), "is not an http(s) URL"),
        (ChromaOptions::new("ftp://h/", 4), "the scheme is ftp"),
        (ChromaOptions::new("http://h/", 0), "dim = 0: 1 to 16384"),
        (
            ChromaOptions::new("http://h/", 4).with_max_batch(0),
            "max_batch = 0: at least 1",
        ),
        (
            ChromaOptions::new("http://h/", 4).with_max_reply_bytes(0),
            "max_reply_bytes = 0",
        ),
        (
            ChromaOptions::new("http://h/", 4).with_timeout(Duration::ZERO),
            "timeout = 0s",
        ),
        (
            ChromaOptions::new("http://h/", 4).with_collection("a/b"),
            "collection = a/b: 3 to 512 letters",
        ),
    ];
    for (options, expected) in cases {
        let e = ChromaStore::open(options).await.unwrap_err();
        assert!(e.to_string().contains(expected), "{e}");
    }
}

#[tokio::test]
async fn credentials_are_sent_but_never_shown() {
    const TOKEN: &str = "ck-0123456789abcdef-token";
    let server = MockServer::start().await;
    Mock::given(header("x-chroma-token", TOKEN))
        .and(method("GET"))
        .and(path("/api/v2/pre-flight-checks"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"max_batch_size": 100})))
        .mount(&server)
        .await;
    Mock::given(header("x-chroma-token", TOKEN))
        .and(method("POST"))
        .and(path(COLLECTIONS))
        // A server that quotes what it was sent.
        .respond_with(ResponseTemplate::new(401).set_body_json(json!({
            "error": "AuthError",
            "message": format!("token {TOKEN} is not allowed at {}", server.uri()),
        })))
        .mount(&server)
        .await;
    let with_password = server
        .uri()
        .replace("http://", "http://ada:pa55word-secret@");
    let auth = ChromaAuth::from_env(AuthHeader::XChromaToken, "CHROMA_TOKEN_VAR", |name| {
        (name == "CHROMA_TOKEN_VAR").then(|| TOKEN.to_owned())
    })
    .unwrap();
    let options = ChromaOptions::new(&with_password, 4).with_auth(auth);
    let debug = format!("{options:?}");
    let e = ChromaStore::open(options).await.unwrap_err();
    assert!(
        matches!(e, ChromaError::Status { status: 401, .. }),
        "{e:?}"
    );
    for shown in [e.to_string(), format!("{e:?}"), debug] {
        assert!(!shown.contains(TOKEN), "{shown}");
        assert!(!shown.contains("pa55word"), "{shown}");
        assert!(!shown.contains("ada:"), "{shown}");
    }
    let missing = ChromaAuth::from_env(AuthHeader::Bearer, "CHROMA_TOKEN_VAR", |_| None);
    assert_eq!(
        missing.unwrap_err().to_string(),
        "the Chroma token variable CHROMA_TOKEN_VAR is not set"
    );
}

#[tokio::test]
async fn a_bearer_token_goes_in_authorization() {
    let server = MockServer::start().await;
    Mock::given(header("authorization", "Bearer t0ken"))
        .and(path("/api/v2/pre-flight-checks"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"max_batch_size": 100})))
        .mount(&server)
        .await;
    Mock::given(header("authorization", "Bearer t0ken"))
        .and(path(COLLECTIONS))
        .respond_with(ResponseTemplate::new(200).set_body_json(collection(
            None,
            json!({"claij_dim": 4}),
            "cosine",
        )))
        .mount(&server)
        .await;
    let options =
        ChromaOptions::new(server.uri(), 4).with_auth(ChromaAuth::new(AuthHeader::Bearer, "t0ken"));
    let store = ChromaStore::open(options).await.unwrap();
    assert!(!format!("{store:?}").contains("t0ken"), "{store:?}");
    // A password in the URL is not shown either.
    let server = fine_mock().await;
    let with_password = server
        .uri()
        .replace("http://", "http://ada:pa55word-secret@");
    let store = ChromaStore::open(ChromaOptions::new(with_password, 4))
        .await
        .unwrap();
    let debug = format!("{store:?}");
    assert!(!debug.contains("pa55word"), "{debug}");
}

/// The ids of each request to `route`, in order.
fn ids_sent(requests: &[Request], route: &str) -> Vec<Vec<String>> {
    requests
        .iter()
        .filter(|r| r.url.path() == format!("{COLLECTION}/{route}"))
        .map(|r| {
            let body: Value = serde_json::from_slice(&r.body).unwrap();
            body["ids"]
                .as_array()
                .unwrap()
                .iter()
                .map(|id| id.as_str().unwrap().to_owned())
                .collect()
        })
        .collect()
}

#[tokio::test]
async fn a_large_add_goes_in_batches_of_the_server_s_max_and_fails_whole() {
    // The server takes 2 per request, fewer than asked for.
    let server = mock(2, collection(None, json!({"claij_dim": 4}), "cosine")).await;
    // None of the five is known before (three requests of at most two ids); then each is.
    Mock::given(method("POST"))
        .and(path(format!("{COLLECTION}/get")))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"ids": [], "include": []})))
        .up_to_n_times(3)
        .mount(&server)
        .await;
    on(&server, "get", {
        |request: &Request| {
            let body: Value = serde_json::from_slice(&request.body).unwrap();
            ResponseTemplate::new(200).set_body_json(json!({"ids": body["ids"], "include": []}))
        }
    })
    .await;
    // The third request of the batch fails.
    Mock::given(method("POST"))
        .and(path(format!("{COLLECTION}/add")))
        .respond_with(ResponseTemplate::new(201).set_body_json(json!({})))
        .up_to_n_times(2)
        .mount(&server)
        .await;
    on(&server, "add", ResponseTemplate::new(503)).await;
    on(
        &server,
        "delete",
        ResponseTemplate::new(200).set_body_json(json!({"deleted": 2})),
    )
    .await;
    let store = ChromaStore::open(ChromaOptions::new(server.uri(), 4).with_max_batch(10))
        .await
        .unwrap();
    assert_eq!(store.max_batch(), 2);
    let records: Vec<Record> = (0..5)
        .map(|i| contract::record(&format!("r{i}"), "s", [1.0, 0.0, 0.0, 0.0], i))
        .collect();
    let e = store.add(records).await.unwrap_err();
    assert!(
        matches!(chroma_error(&e), ChromaError::Status { status: 503, .. }),
        "{e:?}"
    );
    let requests = server.received_requests().await.unwrap();
    let pairs = |ids: &[&[&str]]| -> Vec<Vec<String>> {
        ids.iter()
            .map(|p| p.iter().map(|s| (*s).to_owned()).collect())
            .collect()
    };
    assert_eq!(
        ids_sent(&requests, "add"),
        pairs(&[&["r0", "r1"], &["r2", "r3"], &["r4"]])
    );
    // The two requests that went in are taken back.
    assert_eq!(
        ids_sent(&requests, "delete"),
        pairs(&[&["r0", "r1"], &["r2", "r3"]])
    );
}

#[tokio::test]
async fn a_known_id_is_a_duplicate_and_nothing_is_added() {
    let server = fine_mock().await;
    Mock::given(method("POST"))
        .and(path(format!("{COLLECTION}/get")))
        .and(body_partial_json(json!({"ids": ["new", "old"]})))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"ids": ["old"], "include": []})),
        )
        .mount(&server)
        .await;
    let store = open(&server).await;
    let e = store
        .add(vec![
            contract::record("new", "s", [1.0, 0.0, 0.0, 0.0], 1),
            contract::record("old", "s", [1.0, 0.0, 0.0, 0.0], 2),
        ])
        .await
        .unwrap_err();
    assert!(
        matches!(&e, StoreError::Duplicate { id, .. } if id == "old"),
        "{e:?}"
    );
    let requests = server.received_requests().await.unwrap();
    assert!(ids_sent(&requests, "add").is_empty());
}

#[tokio::test]
async fn a_search_sends_the_session_filter_and_reads_similarity_as_one_minus_distance() {
    let server = fine_mock().await;
    Mock::given(method("POST"))
        .and(path_regex(format!("^{COLLECTION}/query$")))
        .and(body_partial_json(json!({"n_results": 3, "where": {"session": "s"}})))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "ids": [["near", "far"]],
            "documents": [["close", "away"]],
            "embeddings": [[[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]]],
            "metadatas": [[{"session": "s", "created_ms": 1_000}, {"session": "s", "created_ms": 2_000}]],
            "distances": [[0.25, 0.75]],
            "include": ["documents", "metadatas", "distances", "embeddings"],
        })))
        .mount(&server)
        .await;
    let store = open(&server).await;
    let hits = store
        .search(Query {
            min_similarity: 0.5,
            ..query(&[1.0, 0.0, 0.0, 0.0])
        })
        .await
        .unwrap();
    assert_eq!(hits.len(), 1, "the floor keeps `far` (0.25) out: {hits:?}");
    assert_eq!(hits[0].record.id, "near");
    assert!((hits[0].similarity - 0.75).abs() < 1e-6);
    assert_eq!(
        hits[0].record.created_at,
        SystemTime::UNIX_EPOCH + Duration::from_secs(1)
    );
}

// ---- against a real server (`cargo xtask chroma`; fails under CI when it is missing) ----

/// Each contract check on a fresh collection of one server.
#[tokio::test]
async fn passes_the_store_contract_on_a_real_server() {
    let Some(server) =
        claij_test_support::chroma::start_or_skip("passes_the_store_contract_on_a_real_server")
    else {
        return;
    };
    let mut n = 0;
    let mut fresh = || {
        n += 1;
        ChromaOptions::new(server.url(), contract::DIM).with_collection(format!("contract_{n}"))
    };
    macro_rules! check {
        ($check:ident) => {
            let store = ChromaStore::open(fresh()).await.unwrap();
            contract::$check(&store)
                .await
                .unwrap_or_else(|e| panic!("{}: {e}\n{}", stringify!($check), server.log_tail()));
        };
    }
    check!(search_orders_by_similarity);
    check!(search_keeps_k);
    check!(search_keeps_the_floor);
    check!(search_filters_the_session);
    check!(list_is_oldest_first);
    check!(forget_removes_what_it_names);
    check!(duplicates_are_refused);
    check!(wrong_dimension_is_refused);
}

#[tokio::test]
async fn a_real_server_keeps_records_refuses_other_dimensions_and_pages_lists() {
    let Some(server) = claij_test_support::chroma::start_or_skip(
        "a_real_server_keeps_records_refuses_other_dimensions_and_pages_lists",
    ) else {
        return;
    };
    let options = ChromaOptions::new(server.url(), 4).with_max_batch(2);
    let store = ChromaStore::open(options.clone()).await.unwrap();
    let mut fact = contract::record("f1", "s", [0.25, -0.5, 0.0, 3.0], 0);
    fact.text = "the cat is called Miso — ミソ".into();
    fact.created_at = SystemTime::UNIX_EPOCH + Duration::from_millis(1_765_000_000_123);
    let mut records: Vec<Record> = (0..4)
        .map(|i| contract::record(&format!("r{i}"), "s", [1.0, 0.0, 0.0, 0.0], 10 + i))
        .collect();
    records.push(fact.clone());
    store.add(records).await.unwrap();
    assert_eq!(store.count().await.unwrap(), 5);
    // Five records in pages of two, oldest first.
    let listed = store.list(Some("s")).await.unwrap();
    let ids: Vec<&str> = listed.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["r0", "r1", "r2", "r3", "f1"]);
    assert_eq!(listed[4], fact);
    // The same collection opened again finds them; for other dimensions it is refused.
    let again = ChromaStore::open(options.clone()).await.unwrap();
    assert_eq!(again.count().await.unwrap(), 5);
    let e = ChromaStore::open(ChromaOptions { dim: 8, ..options })
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            ChromaError::Dimensions {
                stored: 4,
                requested: 8,
                ..
            }
        ),
        "{e:?}"
    );
    // Deleted, the collection is gone: opening makes a new, empty one.
    again.delete_collection().await.unwrap();
    let fresh = ChromaStore::open(ChromaOptions::new(server.url(), 4))
        .await
        .unwrap();
    assert_eq!(fresh.count().await.unwrap(), 0);
}
