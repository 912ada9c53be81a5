//! The SQLite store: the store contract, two writing processes, torn and foreign files, the schema
//! version, bounded reads and the vector cache.

use std::cell::RefCell;
use std::process::{Command, Stdio};
use std::time::SystemTime;

use claij_interceptors::builtin::recall::contract;
use futures_executor::block_on;

use super::*;

fn rec(id: &str, session: &str, v: [f32; 4]) -> Record {
    contract::record(id, session, v, 10)
}

fn sqlite_error(e: &StoreError) -> &SqliteError {
    match e {
        StoreError::Engine { source, .. } => source
            .downcast_ref::<SqliteError>()
            .unwrap_or_else(|| panic!("not a SqliteError: {e:?}")),
        other => panic!("expected an engine error, got {other:?}"),
    }
}

fn names(e: &StoreError, path: &Path) {
    let shown = e.to_string();
    assert!(
        shown.contains(&path.display().to_string()),
        "{shown:?} names the file {path:?}"
    );
}

fn run_contract(options: SqliteOptions) {
    let dir = tempfile::tempdir().unwrap();
    let n = RefCell::new(0);
    let made = block_on(contract::all(|| {
        *n.borrow_mut() += 1;
        let path = dir.path().join(format!("{}.sqlite3", n.borrow()));
        SqliteStore::open_with(path, contract::DIM, options).unwrap()
    }));
    made.unwrap();
}

#[test]
fn passes_the_store_contract() {
    run_contract(SqliteOptions::default());
}

#[test]
fn passes_the_store_contract_without_the_vector_cache() {
    run_contract(SqliteOptions {
        cache_vectors: false,
        ..SqliteOptions::default()
    });
}

#[test]
fn records_outlive_the_store_and_come_back_as_added() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("deep/er/ada.sqlite3");
    let mut fact = rec("f1", "s", [0.25, -0.5, 1.0e-7, 3.0]);
    fact.text = "the cat is called Miso — ミソ".into();
    fact.created_at = SystemTime::UNIX_EPOCH + Duration::from_millis(1_765_000_000_123);
    let before = SystemTime::UNIX_EPOCH - Duration::from_secs(5);
    let mut old = rec("f0", "s", [1.0, 0.0, 0.0, 0.0]);
    old.created_at = before;
    {
        let store = SqliteStore::open(&path, 4).unwrap();
        block_on(store.add(vec![fact.clone(), old.clone()])).unwrap();
    }
    let store = SqliteStore::open(&path, 4).unwrap();
    assert_eq!(block_on(store.list(Some("s"))).unwrap(), vec![old, fact]);
}

#[test]
fn another_connections_writes_are_seen_by_a_cached_search() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.sqlite3");
    let reader = SqliteStore::open(&path, 4).unwrap();
    let writer = SqliteStore::open(&path, 4).unwrap();
    let q = [1.0, 0.0, 0.0, 0.0];
    let search = |s: &SqliteStore| {
        let hits = block_on(s.search(Query {
            session: None,
            vector: &q,
            k: 10,
            min_similarity: -1.0,
        }))
        .unwrap();
        hits.into_iter()
            .map(|h| h.record.id)
            .collect::<Vec<String>>()
    };
    assert!(search(&reader).is_empty(), "the cache is read, empty");
    block_on(reader.add(vec![rec("r1", "a", [0.5, 0.5, 0.0, 0.0])])).unwrap();
    assert_eq!(
        search(&reader),
        ["r1"],
        "the reader's own add is in its cache"
    );
    block_on(writer.add(vec![rec("w1", "a", q)])).unwrap();
    assert_eq!(search(&reader), ["w1", "r1"], "the other connection's add");
    block_on(writer.forget(Forget::Ids(vec!["r1".into()]))).unwrap();
    assert_eq!(search(&reader), ["w1"], "the other connection's forget");
    block_on(reader.forget(Forget::Session("a".into()))).unwrap();
    assert!(search(&reader).is_empty(), "the reader's own forget");
    assert!(search(&writer).is_empty(), "seen by the writer");
}

const CHILD_PATH: &str = "CLAIJ_RECALL_SQLITE_CHILD_PATH";
const CHILD_TAG: &str = "CLAIJ_RECALL_SQLITE_CHILD_TAG";
const PER_WRITER: usize = 150;

fn writer_id(tag: &str, i: usize) -> String {
    format!("{tag}-{i:04}")
}

/// Run by [`two_processes_appending_lose_nothing`] as a child process: adds [`PER_WRITER`] records
/// one transaction at a time, each search in between, to the file it is given.
#[test]
fn writer_child() {
    let (Some(path), Some(tag)) = (std::env::var_os(CHILD_PATH), std::env::var(CHILD_TAG).ok())
    else {
        return;
    };
    let store = SqliteStore::open(PathBuf::from(path), 4).unwrap();
    for i in 0..PER_WRITER {
        let x = i as f32;
        block_on(store.add(vec![rec(&writer_id(&tag, i), &tag, [1.0, x, 0.0, 0.0])])).unwrap();
        let q = [0.0, 1.0, 0.0, 0.0];
        block_on(store.search(Query {
            session: None,
            vector: &q,
            k: 3,
            min_similarity: -1.0,
        }))
        .unwrap();
    }
}

#[test]
fn two_processes_appending_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // Neither child finds the file: both create it at once.
    let path = dir.path().join("shared.sqlite3");
    let spawn = |tag: &str| {
        Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "recall::sqlite::tests::writer_child",
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .env(CHILD_PATH, &path)
            .env(CHILD_TAG, tag)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let children = [spawn("a"), spawn("b")];
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "a writer failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let store = SqliteStore::open(&path, 4).unwrap();
    assert_eq!(store.count().unwrap(), 2 * PER_WRITER);
    let all = block_on(store.list(None)).unwrap();
    let ids: HashSet<String> = all.into_iter().map(|r| r.id).collect();
    for tag in ["a", "b"] {
        for i in 0..PER_WRITER {
            assert!(
                ids.contains(&writer_id(tag, i)),
                "{} lost",
                writer_id(tag, i)
            );
        }
    }
}

#[test]
fn a_file_of_garbage_is_a_typed_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("garbage.sqlite3");
    let bytes: Vec<u8> = (0..20_000u32).map(|i| (i * 7919 % 251) as u8).collect();
    std::fs::write(&path, bytes).unwrap();
    let e = SqliteStore::open(&path, 4).unwrap_err();
    names(&e, &path);
    let SqliteError::Sqlite(inner) = sqlite_error(&e) else {
        panic!("expected SQLite's error, got {e:?}");
    };
    assert_eq!(
        inner.sqlite_error_code(),
        Some(ErrorCode::NotADatabase),
        "{e}"
    );
}

#[test]
fn a_truncated_file_is_a_typed_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("torn.sqlite3");
    {
        let store = SqliteStore::open(&path, 4).unwrap();
        let many: Vec<Record> = (0..400)
            .map(|i| {
                let mut r = rec(&format!("t{i}"), "s", [1.0, i as f32, 0.0, 0.0]);
                r.text = "x".repeat(200);
                r
            })
            .collect();
        block_on(store.add(many)).unwrap();
    }
    let len = std::fs::metadata(&path).unwrap().len();
    assert!(len > 8 * 4096, "the file spans many pages: {len}");
    for keep in [4096, len / 2, 100] {
        let torn = dir.path().join(format!("torn-{keep}.sqlite3"));
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&torn, &bytes[..usize::try_from(keep).unwrap()]).unwrap();
        let outcome = SqliteStore::open(&torn, 4).and_then(|s| {
            block_on(s.list(None))?;
            let q = [1.0, 0.0, 0.0, 0.0];
            block_on(s.search(Query {
                session: None,
                vector: &q,
                k: 3,
                min_similarity: -1.0,
            }))
        });
        let e = outcome.expect_err("a file cut to {keep} bytes");
        names(&e, &torn);
        assert!(
            matches!(sqlite_error(&e), SqliteError::Sqlite(_)),
            "cut to {keep}: {e:?}"
        );
    }
}

/// Writes a row behind the store's back, as a torn or foreign writer would.
fn poke(path: &Path, sql: &str, blob: &[u8]) {
    let conn = Connection::open(path).unwrap();
    conn.execute(sql, params![blob]).unwrap();
}

#[test]
fn a_corrupt_vector_names_the_file_and_the_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.sqlite3");
    let store = SqliteStore::open(&path, 4).unwrap();
    block_on(store.add(vec![rec("ok", "s", [1.0, 0.0, 0.0, 0.0])])).unwrap();
    let nan = [f32::NAN.to_le_bytes(), [0; 4], [0; 4], [0; 4]].concat();
    for (id, blob) in [("short", vec![1u8, 2, 3]), ("nan", nan)] {
        poke(
            &path,
            &format!(
                "INSERT INTO memories (id, session, text, embedding, created_ms) \
                 VALUES ('{id}', 's', 't', ?1, 0)"
            ),
            &blob,
        );
        let q = [1.0, 0.0, 0.0, 0.0];
        let searched = block_on(store.search(Query {
            session: Some("s"),
            vector: &q,
            k: 1,
            min_similarity: -1.0,
        }));
        let listed = block_on(store.list(None));
        for e in [searched.unwrap_err(), listed.unwrap_err()] {
            names(&e, &path);
            assert!(
                matches!(sqlite_error(&e), SqliteError::Corrupt { id: got, .. } if got == id),
                "{e}"
            );
        }
        block_on(store.forget(Forget::Ids(vec![id.into()]))).unwrap();
    }
}

#[test]
fn reads_are_bounded_by_max_text_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.sqlite3");
    let small = SqliteOptions {
        max_text_bytes: 16,
        ..SqliteOptions::default()
    };
    let store = SqliteStore::open_with(&path, 4, small).unwrap();
    let mut long = rec("long", "s", [1.0, 0.0, 0.0, 0.0]);
    long.text = "y".repeat(17);
    let e = block_on(store.add(vec![rec("fine", "s", [1.0; 4]), long.clone()])).unwrap_err();
    assert!(
        matches!(sqlite_error(&e), SqliteError::TextTooLong { id, len: 17, limit: 16 } if id == "long"),
        "{e}"
    );
    assert_eq!(store.count().unwrap(), 0, "all or none");

    // Written by a store with a larger limit, read by one with the small limit.
    let roomy = SqliteStore::open(&path, 4).unwrap();
    block_on(roomy.add(vec![long])).unwrap();
    let e = block_on(store.list(None)).unwrap_err();
    names(&e, &path);
    assert!(
        matches!(sqlite_error(&e), SqliteError::Corrupt { id, what } if id == "long" && what.contains("max_text_bytes")),
        "{e}"
    );
}

#[test]
fn a_newer_schema_is_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.sqlite3");
    drop(SqliteStore::open(&path, 4).unwrap());
    poke(
        &path,
        "UPDATE claij_schema SET version = 2 WHERE ?1 IS NOT NULL",
        b"",
    );
    let e = SqliteStore::open(&path, 4).unwrap_err();
    names(&e, &path);
    assert!(
        matches!(
            sqlite_error(&e),
            SqliteError::NewerSchema {
                found: 2,
                supported: SCHEMA_VERSION
            }
        ),
        "{e}"
    );
}

#[test]
fn other_dimensions_are_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.sqlite3");
    drop(SqliteStore::open(&path, 4).unwrap());
    let e = SqliteStore::open(&path, 384).unwrap_err();
    names(&e, &path);
    assert!(
        matches!(
            sqlite_error(&e),
            SqliteError::Dimensions {
                stored: 4,
                requested: 384
            }
        ),
        "{e}"
    );
    for dim in [0, MAX_DIM + 1] {
        let e = SqliteStore::open(dir.path().join("n.sqlite3"), dim).unwrap_err();
        assert!(
            matches!(sqlite_error(&e), SqliteError::BadDimensions(d) if *d == dim),
            "{e}"
        );
    }
}

#[test]
fn the_file_is_in_wal_mode_with_the_busy_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.sqlite3");
    let store = SqliteStore::open(&path, 4).unwrap();
    let inner = store.lock();
    let mode: String = inner
        .conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    let timeout: i64 = inner
        .conn
        .query_row("PRAGMA busy_timeout", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    assert_eq!(
        timeout,
        i64::try_from(DEFAULT_BUSY_TIMEOUT.as_millis()).unwrap()
    );
}

#[test]
fn top_k_matches_the_exact_cosine() {
    use claij_interceptors::builtin::recall::cosine;
    let rows: Vec<Row> = (0..50)
        .map(|i| {
            let v: Vec<f32> = (0..19)
                .map(|j| (((i * 31 + j * 17) % 23) as f32 - 11.0) / 7.0)
                .collect();
            row(format!("r{i:02}"), "s".into(), v)
        })
        .collect();
    let q: Vec<f32> = (0..19).map(|j| ((j * 5 % 7) as f32) - 3.0).collect();
    let got = top_k(
        &rows,
        Query {
            session: None,
            vector: &q,
            k: 7,
            min_similarity: -1.0,
        },
    );
    let mut want: Vec<(f32, usize)> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| (cosine(&r.vector, &q), i))
        .collect();
    want.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    want.truncate(7);
    assert_eq!(got.len(), 7);
    for ((gs, gi), (ws, wi)) in got.iter().zip(&want) {
        assert_eq!(gi, wi);
        assert!((gs - ws).abs() < 1e-5, "{gs} vs {ws}");
    }
}
