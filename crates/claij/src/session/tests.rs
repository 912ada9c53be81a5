//! Tests of the session file: each interceptor's state round-trips under its name, states of
//! interceptors a run does not have are kept, older versions migrate, newer ones are refused, the
//! applied deltas' audit records each change once, and the lock.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use claij_interceptors::builtin::eval::{Eval, EvalResult};
use claij_interceptors::builtin::memory::Memory;
use claij_interceptors::{Chain, Context, ToolOrigin, ToolResult};
use claij_schema::{AuditAction, SchemaDelta};
use serde_json::{Value, json};

use super::{Session, SessionError, SessionLock, VERSION};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "claij-cli-unit-{name}-{}-{}",
        std::process::id(),
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn at(s: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000 + s)
}

/// `claij ask`'s chain for `--interceptors memory,eval,tools`.
fn chain() -> Chain {
    Chain::new()
        .with(Memory::default())
        .with(Eval::new())
        .with(claij_interceptors::builtin::tools::Tools::new())
}

fn now_result() -> ToolResult {
    ToolResult {
        name: "now".into(),
        args: json!({}),
        output: Ok(json!("2026-01-01T00:00:00Z")),
        origin: ToolOrigin::Rust,
    }
}

fn mcp_result() -> ToolResult {
    ToolResult {
        name: "time.get_current_time".into(),
        args: json!({"timezone": "UTC"}),
        output: Err("timed out after 30s".into()),
        origin: ToolOrigin::Mcp {
            server: "time".into(),
        },
    }
}

#[test]
fn each_interceptor_s_state_round_trips_under_its_name() {
    let dir = scratch("session");
    let path = dir.join("s.json");
    assert_eq!(Session::load(&path).unwrap(), Session::default());
    std::fs::write(&path, "  \n").unwrap();
    assert_eq!(Session::load(&path).unwrap(), Session::default());

    let chain = chain();
    let mut ctx = Session::default().to_context(&chain, None).unwrap();
    ctx.turn = 2;
    ctx.memory.summaries = vec!["The user likes blue.".into()];
    ctx.insert(Eval::new().run_blocking("6 * 7"));
    ctx.tool_results = vec![now_result()];
    Session::default()
        .continued(&ctx, &chain, &[], at(0))
        .unwrap()
        .save(&path)
        .unwrap();
    let saved = read(&path);
    assert_eq!(saved["version"], 3);
    assert_eq!(
        saved["interceptors"],
        json!({
            "memory": {"version": 1, "state": {"summaries": ["The user likes blue."]}},
            "eval": {"version": 1, "state": {"code": "6 * 7", "outcome": {"Ok": 42}, "output": ""}},
            "tools": {"version": 1, "state": [{"name": "now", "args": {}, "output": {"Ok": "2026-01-01T00:00:00Z"}, "origin": {"kind": "rust"}}]},
        })
    );
    let loaded = Session::load(&path).unwrap();
    let next = loaded.to_context(&chain, Some(&path)).unwrap();
    assert_eq!(next.turn, 2);
    assert_eq!(next.memory, ctx.memory);
    assert_eq!(next.get::<EvalResult>(), ctx.get::<EvalResult>());
    assert_eq!(next.tool_results, ctx.tool_results);
    // Nothing but the file is left behind.
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);

    // A turn whose reply ran no code and called no tool leaves nothing of theirs for the next.
    let mut after = next;
    after.remove::<EvalResult>();
    after.tool_results.clear();
    loaded
        .continued(&after, &chain, &[], at(1))
        .unwrap()
        .save(&path)
        .unwrap();
    assert_eq!(
        read(&path)["interceptors"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["memory"]
    );

    std::fs::write(&path, "[1, 2]").unwrap();
    let err = format!("{:#}", Session::load(&path).unwrap_err());
    assert!(err.contains("not a claij session file"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A run without an interceptor keeps its state (and the file's unknown keys) for a later run
/// that has it.
#[test]
fn states_of_interceptors_a_run_does_not_have_are_kept() {
    let dir = scratch("session-kept");
    let path = dir.join("s.json");
    std::fs::write(
        &path,
        json!({"version": 3, "turn": 1, "owner": {"name": "ada"}, "interceptors": {
            "eval": {"version": 1, "state": {"code": "1", "outcome": {"Ok": 1}, "output": ""}},
            "vector-store": {"version": 7, "state": {"ids": [1]}}}})
        .to_string(),
    )
    .unwrap();
    let loaded = Session::load(&path).unwrap();
    let memory_only = Chain::new().with(Memory::default());
    let mut ctx = loaded.to_context(&memory_only, Some(&path)).unwrap();
    assert!(
        ctx.get::<EvalResult>().is_none(),
        "not restored without eval"
    );
    ctx.turn += 1;
    ctx.memory.summaries.push("b".into());
    loaded
        .continued(&ctx, &memory_only, &[], at(0))
        .unwrap()
        .save(&path)
        .unwrap();
    let saved = read(&path);
    assert_eq!(saved["owner"], json!({"name": "ada"}));
    assert_eq!(saved["turn"], 2);
    assert_eq!(
        saved["interceptors"],
        json!({
            "eval": {"version": 1, "state": {"code": "1", "outcome": {"Ok": 1}, "output": ""}},
            "memory": {"version": 1, "state": {"summaries": ["b"]}},
            "vector-store": {"version": 7, "state": {"ids": [1]}},
        })
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Versions 1 and 2 are read as 3: `memory` and `tool_results` (split by origin) move under
/// `interceptors`; an empty memory is nothing to keep.
#[test]
fn older_versions_migrate() {
    let dir = scratch("session-migrate");
    let path = dir.join("s.json");
    let v2 = json!({"version": 2, "turn": 4, "owner": "ada", "memory": {"summaries": ["likes tea"]},
        "tool_results": [now_result(), mcp_result()], "project": "atlas"});
    std::fs::write(&path, v2.to_string()).unwrap();
    let loaded = Session::load(&path).unwrap();
    assert_eq!(
        loaded.to_value().unwrap(),
        json!({"version": 3, "turn": 4, "owner": "ada", "project": "atlas", "interceptors": {
            "memory": {"version": 1, "state": {"summaries": ["likes tea"]}},
            "tools": {"version": 1, "state": [now_result()]},
            "mcp": {"version": 1, "state": [mcp_result()]}}})
    );
    let ctx = loaded.to_context(&chain(), Some(&path)).unwrap();
    assert_eq!(ctx.memory.summaries, ["likes tea"]);
    assert_eq!(
        ctx.tool_results,
        [now_result()],
        "the MCP result is the mcp interceptor's"
    );

    std::fs::write(&path, r#"{"turn": 1, "memory": {"summaries": []}}"#).unwrap();
    assert_eq!(
        Session::load(&path).unwrap().to_value().unwrap(),
        json!({"version": 3, "turn": 1})
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn newer_versions_are_refused() {
    let dir = scratch("session-versions");
    let path = dir.join("s.json");
    let load = |text: &str| {
        std::fs::write(&path, text).unwrap();
        Session::load(&path)
    };
    let newer = load(r#"{"version": 4}"#).unwrap_err();
    assert_eq!(
        newer.session_error(),
        Some(&SessionError::Newer {
            path: path.clone(),
            version: 4
        })
    );
    for bad in ["0", "-1", "2.5", "\"2\"", "null"] {
        let err = load(&format!("{{\"version\": {bad}}}")).unwrap_err();
        assert!(
            matches!(err.session_error(), Some(SessionError::BadVersion { .. })),
            "{bad}: {err:#}"
        );
    }
    assert_eq!(
        load(r#"{"turn": 1}"#).unwrap().to_value().unwrap()["version"],
        VERSION
    );
    // An interceptor's state in a newer format of its own is refused before the turn, by name.
    let session =
        load(r#"{"version": 3, "interceptors": {"eval": {"version": 2, "state": {"code": "1"}}}}"#)
            .unwrap();
    let err = session.to_context(&chain(), Some(&path)).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{}: `interceptors.eval`: saved in version 2 of its format, newer than this claij reads \
             (up to 1): use a newer claij, or start a new session",
            path.display()
        )
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The deltas of each turn's requests: recorded when first applied and when changed or dropped,
/// by who added them and when, not once per turn; kept across loads.
#[test]
fn applied_deltas_are_audited_once_per_change() {
    let dir = scratch("session-applied");
    let path = dir.join("s.json");
    let chain = Chain::new();
    let summary = SchemaDelta::new(
        "summary-v1",
        "memory",
        json!({"properties": {"summary": {"type": "string"}}}),
    );
    let eval = SchemaDelta::new(
        "eval-v1",
        "eval",
        json!({"properties": {"eval": {"type": "string"}}}),
    );
    let mut session = Session::default();
    let mut ctx = Context::default();
    for turn in 0..3 {
        ctx.turn = turn + 1;
        // Each process's pipeline stamps the deltas when it first composes them.
        let applied = [summary.clone().at(at(turn)), eval.clone().at(at(turn))];
        session = session.continued(&ctx, &chain, &applied, at(turn)).unwrap();
        session.save(&path).unwrap();
        session = Session::load(&path).unwrap();
    }
    let audit = session.applied.audit().entries();
    assert_eq!(audit.len(), 2, "{audit:?}");
    assert_eq!(
        (audit[0].action, audit[0].by.as_str(), audit[0].at),
        (AuditAction::Added, "memory", at(0))
    );
    // eval goes (a run without it), then comes back changed.
    session = session
        .continued(&ctx, &chain, &[summary.clone().at(at(5))], at(5))
        .unwrap();
    let changed = SchemaDelta::new(
        "eval-v1",
        "eval",
        json!({"properties": {"eval": {"maxLength": 9}}}),
    )
    .at(at(6));
    session = session
        .continued(&ctx, &chain, &[summary.at(at(6)), changed], at(6))
        .unwrap();
    let actions: Vec<(AuditAction, &str, SystemTime)> = session
        .applied
        .audit()
        .entries()
        .iter()
        .map(|e| (e.action, e.extension_id.as_str(), e.at))
        .collect();
    assert_eq!(
        actions,
        [
            (AuditAction::Added, "summary-v1", at(0)),
            (AuditAction::Added, "eval-v1", at(0)),
            (AuditAction::Removed, "eval-v1", at(5)),
            (AuditAction::Added, "eval-v1", at(6)),
        ]
    );
    session.save(&path).unwrap();
    assert_eq!(
        read(&path)["applied"]["active"][1]["delta"]["properties"]["eval"]["maxLength"],
        9
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn reset_forgets_the_conversation_but_not_its_audit() {
    let chain = chain();
    let mut ctx = Context::default();
    ctx.turn = 3;
    ctx.memory.summaries = vec!["a".into()];
    let delta = SchemaDelta::new("summary-v1", "memory", json!({"properties": {}}));
    let session = Session::default()
        .with_project(Some("atlas"))
        .continued(&ctx, &chain, &[delta], at(0))
        .unwrap()
        .reset();
    assert_eq!((session.turn, session.carried.len()), (0, 0));
    assert_eq!(session.project.as_deref(), Some("atlas"));
    assert_eq!(session.applied.audit().len(), 1);
}

#[test]
fn a_turn_counter_at_its_maximum_is_an_error_not_a_wrap() {
    let path = Path::new("m.json");
    Session::check_turn(u64::MAX - 1, Some(path)).unwrap();
    let err = Session::check_turn(u64::MAX, Some(path))
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "m.json: the turn counter is at its maximum (18446744073709551615): start a new conversation"
    );
}

#[test]
fn session_keeps_the_schema_extensions_with_or_without_the_registry() {
    let dir = scratch("session-extensions");
    let path = dir.join("memory.json");
    let mut registry = claij_schema::Registry::new(claij_schema::base()).unwrap();
    let delta = json!({"properties": {"confidence": {"type": "number"}}});
    registry
        .add(SchemaDelta::new("confidence-v1", "m", delta))
        .unwrap();
    let chain = Chain::new();
    let ctx = Context::default();
    Session::default()
        .continued(&ctx, &chain, &[], at(0))
        .unwrap()
        .with_extensions(Some(&registry))
        .save(&path)
        .unwrap();
    let loaded = Session::load(&path).unwrap();
    let saved = loaded.extensions.clone().unwrap();
    assert_eq!(saved.extensions, registry.extensions());
    assert_eq!(&saved.audit, registry.audit());

    // A turn without `--interceptors proposals` leaves them as they were.
    loaded
        .continued(&ctx, &chain, &[], at(1))
        .unwrap()
        .with_extensions(None)
        .save(&path)
        .unwrap();
    let again = Session::load(&path).unwrap();
    assert_eq!(again.extensions, loaded.extensions);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("\"active\""), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_project_is_kept() {
    let dir = scratch("session-project");
    let path = dir.join("s.json");
    let chain = Chain::new();
    let ctx = Context::default();
    Session::default()
        .with_project(Some("atlas"))
        .continued(&ctx, &chain, &[], at(0))
        .unwrap()
        .save(&path)
        .unwrap();
    let loaded = Session::load(&path).unwrap();
    assert_eq!(loaded.project.as_deref(), Some("atlas"));
    loaded
        .with_project(None)
        .continued(&ctx, &chain, &[], at(1))
        .unwrap()
        .save(&path)
        .unwrap();
    assert_eq!(read(&path)["project"], "atlas");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Whether another process could take the lock at `path` now (the file there is unlocked).
fn lockable(path: &Path) -> bool {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .unwrap();
    let free = file.try_lock().is_ok();
    drop(file);
    free
}

/// The lock file is gone once the lock is; a process that waited on the removed file locks the
/// one at the path now, so two holders never hold two files (a waiter that kept the removed one
/// would leave the path's lock free for a third process).
#[cfg(unix)]
#[test]
fn the_session_lock_removes_its_file_and_a_waiter_locks_the_file_at_the_path() {
    let dir = scratch("lock");
    let session = dir.join("chat.json");
    let lock_file = dir.join("chat.json.lock");
    let first = SessionLock::acquire(&session).unwrap();
    assert!(lock_file.is_file());
    assert!(!lockable(&lock_file));
    drop(first);
    assert!(!lock_file.exists(), "the lock file is removed");

    let first = SessionLock::acquire(&session).unwrap();
    let (waits, waiting) = std::sync::mpsc::channel();
    let second = std::thread::spawn({
        let session = session.clone();
        move || {
            let mut waited = 0;
            let lock = SessionLock::acquire_with(&session, &mut |_| {
                waited += 1;
                let _ = waits.send(());
                Ok(())
            })
            .unwrap();
            (lock, waited)
        }
    });
    // The second has opened the first's lock file and is about to wait on it: the first lets go
    // and removes that file.
    waiting.recv().unwrap();
    drop(first);
    let (second, waited) = second.join().unwrap();
    assert!(waited >= 1);
    assert!(lock_file.is_file(), "the second holds a file at the path");
    assert!(!lockable(&lock_file), "and that file is the one it locked");
    drop(second);
    assert!(!lock_file.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}
