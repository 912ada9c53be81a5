//! The SQLite store: the store contract, two writing processes, torn and foreign files, the schema
//! version, bounded reads, the vector cache and its bound, operations off the runtime, and the
//! failures a user meets (a lock held too long, a full disk, a read-only directory).

use std::cell::RefCell;
use std::process::{Command, Stdio};
use std::sync::Arc;
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
        max_cache_bytes: 0,
        ..SqliteOptions::default()
    });
}

/// About two of the contract's records fit: the rest of every search is read from the file.
#[test]
fn passes_the_store_contract_with_a_full_vector_cache() {
    let one = contract::DIM * 4 + 16 + std::mem::size_of::<Row>();
    run_contract(SqliteOptions {
        max_cache_bytes: 2 * one,
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
    // A generous busy timeout: what is tested is that nothing is lost, not how long a lock is
    // waited for (on a loaded 2-core machine the default 5 s has run out once).
    let options = SqliteOptions {
        busy_timeout: Duration::from_secs(120),
        ..SqliteOptions::default()
    };
    let store = SqliteStore::open_with(PathBuf::from(path), 4, options).unwrap();
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
fn the_best_k_match_the_exact_cosine() {
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
    let mut best = Best::new(Query {
        session: None,
        vector: &q,
        k: 7,
        min_similarity: -1.0,
    });
    for r in &rows {
        best.offer(best.similarity(&r.vector, r.norm), &r.id);
    }
    let got = best.into_sorted();
    let mut want: Vec<(f32, usize)> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| (cosine(&r.vector, &q), i))
        .collect();
    want.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    want.truncate(7);
    assert_eq!(got.len(), 7);
    for ((gs, gi), (ws, wi)) in got.iter().zip(&want) {
        assert_eq!(gi, &rows[*wi].id);
        assert!((gs - ws).abs() < 1e-5, "{gs} vs {ws}");
    }
}

#[test]
fn ties_keep_the_smaller_id_and_the_floor_holds() {
    let q = [1.0, 0.0];
    let mut best = Best::new(Query {
        session: None,
        vector: &q,
        k: 2,
        min_similarity: 0.5,
    });
    for id in ["d", "b", "c", "a"] {
        best.offer(0.9, id);
    }
    best.offer(0.49, "below");
    best.offer(f32::NAN, "nan");
    assert_eq!(
        best.into_sorted(),
        [(0.9, "a".to_owned()), (0.9, "b".to_owned())]
    );
}

fn hits(store: &SqliteStore, q: &[f32], session: Option<&str>, k: usize) -> Vec<(String, f32)> {
    block_on(store.search(Query {
        session,
        vector: q,
        k,
        min_similarity: -1.0,
    }))
    .unwrap()
    .into_iter()
    .map(|h| (h.record.id, h.similarity))
    .collect()
}

/// A deterministic vector of `D` dimensions, one for each `i` below 1,000.
fn spread<const D: usize>(i: usize) -> Vec<f32> {
    (0..D)
        .map(|j| ((i * 7919 + j * 104_729) % 1000) as f32 / 500.0 - 1.0)
        .collect()
}

fn record_of(id: &str, session: &str, embedding: Vec<f32>) -> Record {
    Record {
        id: id.to_owned(),
        session: session.to_owned(),
        text: format!("memory {id}"),
        embedding,
        created_at: SystemTime::UNIX_EPOCH,
    }
}

/// 50 of 200 records fit: the cache holds them, within the bound, and every search (of a session or
/// all, any k) finds what a store caching all and a store caching none find.
#[test]
fn the_vector_cache_stays_within_max_cache_bytes_and_search_stays_exact() {
    const D: usize = 8;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.sqlite3");
    let records: Vec<Record> = (0..200)
        .map(|i| record_of(&format!("m{i:03}"), ["a", "b", "c"][i % 3], spread::<D>(i)))
        .collect();
    block_on(SqliteStore::open(&path, D).unwrap().add(records)).unwrap();
    let one = D * 4 + "m000".len() + "a".len() + std::mem::size_of::<Row>();
    let with = |max_cache_bytes| {
        let options = SqliteOptions {
            max_cache_bytes,
            ..SqliteOptions::default()
        };
        SqliteStore::open_with(&path, D, options).unwrap()
    };
    let (bounded, all, none) = (with(50 * one), with(usize::MAX), with(0));
    for i in 0..10 {
        let q = spread::<D>(500 + i);
        for session in [None, Some("a")] {
            for k in [1, 5, 300] {
                let want = hits(&all, &q, session, k);
                assert_eq!(want.len(), k.min(if session.is_some() { 67 } else { 200 }));
                assert_eq!(hits(&bounded, &q, session, k), want, "{i} {session:?} {k}");
                assert_eq!(hits(&none, &q, session, k), want, "{i} {session:?} {k}");
            }
        }
    }
    let cached = |s: &SqliteStore| {
        let inner = s.lock();
        let c = inner.cache.as_ref().unwrap();
        (c.rows.len(), c.bytes, c.complete)
    };
    assert_eq!(cached(&bounded), (50, 50 * one, false));
    assert_eq!(cached(&all), (200, 200 * one, true));
    assert_eq!(cached(&none), (0, 0, false));

    // An add past the bound is read from the file.
    let q: Vec<f32> = (0..D)
        .map(|j| if j % 2 == 0 { 1.0 } else { -0.25 })
        .collect();
    block_on(bounded.add(vec![record_of("new", "a", q.clone())])).unwrap();
    assert_eq!(hits(&bounded, &q, Some("a"), 1)[0].0, "new");
    assert_eq!(cached(&bounded).0, 50);
}

/// The store's own adds extend a cache with room, stop at the bound, and a rowid SQLite reuses
/// inside the cached range (the newest records forgotten) is not missed.
#[test]
fn own_adds_and_forgets_keep_a_bounded_cache_exact() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.sqlite3");
    let one = 4 * 4 + "r1".len() + "s".len() + std::mem::size_of::<Row>();
    let options = SqliteOptions {
        max_cache_bytes: 3 * one,
        ..SqliteOptions::default()
    };
    let store = SqliteStore::open_with(&path, 4, options).unwrap();
    let unit = |i: usize| {
        let mut v = [0.0; 4];
        v[i] = 1.0;
        v
    };
    for i in 0..3 {
        block_on(store.add(vec![rec(&format!("r{}", i + 1), "s", unit(i))])).unwrap();
    }
    assert_eq!(hits(&store, &unit(2), None, 1)[0].0, "r3");
    let complete = |s: &SqliteStore| s.lock().cache.as_ref().map(|c| (c.rows.len(), c.complete));
    assert_eq!(complete(&store), Some((3, true)));
    block_on(store.add(vec![rec("r4", "s", unit(3))])).unwrap();
    assert_eq!(complete(&store), Some((3, false)), "r4 is past the bound");
    assert_eq!(hits(&store, &unit(3), None, 1)[0].0, "r4");
    block_on(store.forget(Forget::Ids(vec!["r3".into(), "r4".into()]))).unwrap();
    // SQLite gives r5 the rowid r3 had: inside the cached range, not in the cache.
    let r5 = [0.5; 4];
    block_on(store.add(vec![rec("r5", "s", r5)])).unwrap();
    assert_eq!(hits(&store, &r5, None, 1)[0].0, "r5");
    let all: Vec<String> = hits(&store, &r5, None, 10)
        .into_iter()
        .map(|h| h.0)
        .collect();
    assert_eq!(all, ["r5", "r1", "r2"]);
}

#[test]
fn the_stores_debug_form_leaves_the_vectors_out() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("m.sqlite3"), 4).unwrap();
    let many: Vec<Record> = (0..1_000)
        .map(|i| rec(&format!("d{i}"), "s", [1.0, i as f32, 0.0, 0.0]))
        .collect();
    block_on(store.add(many)).unwrap();
    assert_eq!(hits(&store, &[1.0, 0.0, 0.0, 0.0], None, 1).len(), 1);
    let shown = format!("{store:?}");
    assert!(shown.contains("rows: 1000"), "{shown}");
    assert!(shown.len() < 1_000, "{} bytes", shown.len());
}

/// An add waiting for another connection's write lock, and a search waiting for that add, both
/// leave the one thread of a current-thread runtime free: the task that releases the lock runs on
/// it. Were either run on the runtime's thread, the lock would be released only after the busy
/// timeout and the add would fail.
#[test]
fn a_waiting_add_and_search_leave_a_current_thread_runtime_free() {
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.sqlite3");
    let options = SqliteOptions {
        busy_timeout: Duration::from_secs(30),
        ..SqliteOptions::default()
    };
    let store = Arc::new(SqliteStore::open_with(&path, 4, options).unwrap());
    let blocker = Connection::open(&path).unwrap();
    blocker.execute_batch("BEGIN IMMEDIATE").unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let (added, found) = runtime.block_on(async {
        let adder = tokio::spawn({
            let store = Arc::clone(&store);
            async move {
                store
                    .add(vec![rec("held", "s", [1.0, 0.0, 0.0, 0.0])])
                    .await
            }
        });
        // The add holds the store (waiting for the write lock) before the search starts.
        while store.shared.inner.try_lock().is_ok() && !adder.is_finished() {
            tokio::task::yield_now().await;
        }
        let searching = Arc::new(AtomicBool::new(false));
        let searcher = tokio::spawn({
            let (store, searching) = (Arc::clone(&store), Arc::clone(&searching));
            async move {
                searching.store(true, SeqCst);
                let q = [1.0, 0.0, 0.0, 0.0];
                store
                    .search(Query {
                        session: Some("s"),
                        vector: &q,
                        k: 1,
                        min_similarity: -1.0,
                    })
                    .await
            }
        });
        let releaser = tokio::spawn(async move {
            while !searching.load(SeqCst) {
                tokio::task::yield_now().await;
            }
            blocker.execute_batch("COMMIT").unwrap();
        });
        releaser.await.unwrap();
        (adder.await.unwrap(), searcher.await.unwrap())
    });
    added.unwrap();
    let found = found.unwrap();
    assert_eq!(found[0].record.id, "held");
}

#[test]
fn a_lock_held_past_the_busy_timeout_names_busy_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.sqlite3");
    let options = SqliteOptions {
        busy_timeout: Duration::from_millis(50),
        ..SqliteOptions::default()
    };
    let store = SqliteStore::open_with(&path, 4, options).unwrap();
    let blocker = Connection::open(&path).unwrap();
    blocker.execute_batch("BEGIN IMMEDIATE").unwrap();
    let e = block_on(store.add(vec![rec("late", "s", [1.0; 4])])).unwrap_err();
    names(&e, &path);
    assert!(
        matches!(sqlite_error(&e), SqliteError::Busy { timeout, .. } if *timeout == Duration::from_millis(50)),
        "{e:?}"
    );
    assert!(
        e.to_string()
            .contains("(busy_timeout; memory.recall.busy_timeout_ms)"),
        "{e}"
    );
    blocker.execute_batch("COMMIT").unwrap();
    block_on(store.add(vec![rec("late", "s", [1.0; 4])])).unwrap();
}

/// SQLite's page limit stands in for a full disk: the same SQLITE_FULL.
#[test]
fn a_full_disk_is_a_typed_error_naming_the_file_and_the_add_is_rolled_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.sqlite3");
    let store = SqliteStore::open(&path, 4).unwrap();
    block_on(store.add(vec![rec("small", "s", [1.0, 0.0, 0.0, 0.0])])).unwrap();
    let q = [0.0, 1.0, 0.0, 0.0];
    assert_eq!(hits(&store, &q, None, 1)[0].0, "small", "the cache is read");
    {
        let inner = store.lock();
        let pages: i64 = inner
            .conn
            .query_row("PRAGMA page_count", [], |r| r.get(0))
            .unwrap();
        inner
            .conn
            .pragma_update(None, "max_page_count", pages)
            .unwrap();
    }
    let big: Vec<Record> = (0..50)
        .map(|i| {
            let mut r = rec(&format!("big{i}"), "s", q);
            r.text = "z".repeat(4_000);
            r
        })
        .collect();
    let e = block_on(store.add(big.clone())).unwrap_err();
    names(&e, &path);
    assert!(
        matches!(sqlite_error(&e), SqliteError::DiskFull(_)),
        "{e:?}"
    );
    assert!(e.to_string().contains("the disk is full"), "{e}");
    assert_eq!(store.count().unwrap(), 1, "all or none");
    assert_eq!(hits(&store, &q, None, 1)[0].0, "small", "nor in the cache");
    store
        .lock()
        .conn
        .pragma_update(None, "max_page_count", 1_000_000)
        .unwrap();
    block_on(store.add(big)).unwrap();
    assert_eq!(store.count().unwrap(), 51);
}

/// Another process (a newer claij) upgrades the file while this store has it open: every
/// operation after it is refused naming the file, and nothing is written.
#[test]
fn a_file_upgraded_while_open_is_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.sqlite3");
    let store = SqliteStore::open(&path, 4).unwrap();
    let q = [1.0, 0.0, 0.0, 0.0];
    block_on(store.add(vec![rec("old", "s", q)])).unwrap();
    assert_eq!(hits(&store, &q, None, 1)[0].0, "old");
    poke(
        &path,
        "UPDATE claij_schema SET version = 2 WHERE ?1 IS NOT NULL",
        b"",
    );
    let newer = |e: StoreError| {
        names(&e, &path);
        assert!(
            matches!(sqlite_error(&e), SqliteError::NewerSchema { found: 2, .. }),
            "{e}"
        );
    };
    newer(block_on(store.add(vec![rec("new", "s", q)])).unwrap_err());
    newer(
        block_on(store.search(Query {
            session: None,
            vector: &q,
            k: 1,
            min_similarity: -1.0,
        }))
        .unwrap_err(),
    );
    newer(block_on(store.list(None)).unwrap_err());
    newer(block_on(store.forget(Forget::Session("s".into()))).unwrap_err());
    assert_eq!(store.count().unwrap(), 1);
}

const READ_ONLY_CHILD: &str = "CLAIJ_RECALL_SQLITE_READ_ONLY_DIR";

/// A new store in a read-only directory, and an existing one there (its file writable: the
/// directory holds its -wal and -shm files).
fn read_only_cases(ro: &Path) {
    let new = ro.join("new.sqlite3");
    let e = SqliteStore::open(&new, 4).unwrap_err();
    names(&e, &new);
    assert!(
        matches!(sqlite_error(&e), SqliteError::CannotOpen(_)),
        "{e}"
    );
    let old = ro.join("old.sqlite3");
    let e = SqliteStore::open(&old, 4).unwrap_err();
    names(&e, &old);
    assert!(matches!(sqlite_error(&e), SqliteError::ReadOnly(_)), "{e}");
    assert!(e.to_string().contains("read-only"), "{e}");
}

/// Run by [`a_read_only_directory_is_a_typed_error_naming_the_file`] as an unprivileged child.
#[test]
fn read_only_child() {
    if let Some(ro) = std::env::var_os(READ_ONLY_CHILD) {
        read_only_cases(Path::new(&ro));
    }
}

#[cfg(unix)]
#[test]
fn a_read_only_directory_is_a_typed_error_naming_the_file() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let mode = |p: &Path, m: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m));
    let dir = tempfile::tempdir().unwrap();
    mode(dir.path(), 0o755).unwrap();
    let ro = dir.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    drop(SqliteStore::open(ro.join("old.sqlite3"), 4).unwrap());
    mode(&ro.join("old.sqlite3"), 0o666).unwrap();
    mode(&ro, 0o555).unwrap();
    let probe = ro.join("probe");
    if std::fs::File::create(&probe).is_ok() {
        // Permissions do not bind this user (root): the cases run as an unprivileged one.
        std::fs::remove_file(&probe).unwrap();
        // The child runs this test binary from `dir` (0755): where it was built (a clone in a
        // 0700 directory, say) may be out of that user's reach.
        let exe = dir.path().join("test-binary");
        let built = std::env::current_exe().unwrap();
        if std::fs::hard_link(&built, &exe).is_err() {
            std::fs::copy(&built, &exe).unwrap();
        }
        mode(&exe, 0o755).unwrap();
        let out = Command::new(&exe)
            .args([
                "--exact",
                "recall::sqlite::tests::read_only_child",
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .env(READ_ONLY_CHILD, &ro)
            .uid(65_534)
            .gid(65_534)
            .output()
            .expect("running the cases as uid 65534 (nobody)");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "as nobody: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    } else {
        read_only_cases(&ro);
    }
    mode(&ro, 0o755).unwrap();
}
