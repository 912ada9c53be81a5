//! The journal under crashes and concurrency: torn last lines of every shape, the file repaired
//! before a resume appends (so a second resume works), one writer at a time, no overwriting.

use std::path::{Path, PathBuf};

use claij_fsm::{Error, ExistingJournal, Fsm, Interrupt, Outcome, Runner, Status, journal};
use serde_json::json;

/// Two people in a row: each resume appends one transition, no model or service needed.
fn two_people() -> Runner {
    let fsm = Fsm::new(
        serde_json::from_value(json!({
            "id": "two-people",
            "states": [
                {"id": "a", "action": "human"},
                {"id": "b", "action": "human"},
                {"id": "end", "action": "end"}
            ],
            "transitions": [
                {"id": ["start", "a"], "schema": {"type": "object"}},
                {"id": ["a", "b"], "schema": {"type": "object"}},
                {"id": ["b", "end"], "schema": {"type": "object"}}
            ]
        }))
        .unwrap(),
    )
    .unwrap();
    Runner::new(fsm)
}

fn block<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

fn steps(entries: &[claij_fsm::Entry]) -> Vec<String> {
    entries
        .iter()
        .map(|e| format!("{}->{}", e.from, e.to))
        .collect()
}

/// A journal of `start->a` and `a->b`, as a run waiting in `b` leaves it.
fn waiting_in_b(dir: &Path) -> PathBuf {
    let path = dir.join("run.jsonl");
    let runner = two_people();
    let (mut run, mut journal) = runner
        .start_journaled(json!({}), &path, ExistingJournal::Refuse)
        .unwrap();
    runner
        .provide(&mut run, json!({"id": ["a", "b"]}), Some(&mut journal))
        .unwrap();
    path
}

/// How a crash leaves the end of the file.
#[derive(Debug, Clone, Copy)]
enum Tear {
    /// Cut in the middle of the next line.
    MidLine,
    /// Cut right after a `}` that closes an inner object, not the line.
    AfterInnerBrace,
    /// Cut after a `}` with only the last `}` missing.
    BeforeLastBrace,
    /// The power cut left the file longer than what was written: zero bytes.
    Zeros,
    /// The last line complete, only its newline lost.
    NoNewline,
    /// Nothing torn.
    Clean,
}

fn tear(path: &Path, tear: Tear) {
    let mut bytes = std::fs::read(path).unwrap();
    let next = br#"{"kind":"transition","from":"b","to":"end","event":{"id":["b","end"],"x":1},"at":"2026-01-01T00:00:00Z"}"#;
    match tear {
        Tear::MidLine => bytes.extend_from_slice(&next[..30]),
        Tear::AfterInnerBrace => {
            let inner = next.windows(2).position(|w| w == b"1}").unwrap() + 2;
            bytes.extend_from_slice(&next[..inner]);
        }
        Tear::BeforeLastBrace => bytes.extend_from_slice(&next[..next.len() - 1]),
        Tear::Zeros => bytes.extend_from_slice(&[0; 512]),
        Tear::NoNewline => assert_eq!(bytes.pop(), Some(b'\n')),
        Tear::Clean => {}
    }
    std::fs::write(path, bytes).unwrap();
}

/// A journal torn by `how` resumes in `b`, takes the last transition, and then resumes again (the
/// second resume is what a torn line used to break); the file ends as three whole lines plus the
/// header, each ending with its newline.
#[track_caller]
fn check_torn(how: Tear) {
    let dir = tempfile::tempdir().unwrap();
    let path = waiting_in_b(dir.path());
    tear(&path, how);
    let (_, recorded) = journal::read(&path).unwrap();
    assert_eq!(steps(&recorded), ["start->a", "a->b"], "{how:?}");

    let runner = two_people();
    let (mut run, mut journal) = runner.resume(&path).unwrap();
    assert_eq!((run.state.as_str(), run.status), ("b", Status::Waiting));
    runner
        .provide(&mut run, json!({"id": ["b", "end"]}), Some(&mut journal))
        .unwrap();
    drop(journal);

    let (again, mut journal) = runner.resume(&path).unwrap();
    assert_eq!(again.status, Status::Finished, "{how:?}");
    assert_eq!(steps(&again.trail.entries), ["start->a", "a->b", "b->end"]);
    let mut again = again;
    let outcome =
        block(two_people().run(&mut again, &Interrupt::new(), Some(&mut journal))).unwrap();
    assert!(matches!(outcome, Outcome::Finished { .. }), "{outcome:?}");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.ends_with('\n'), "{how:?}: {text}");
    assert_eq!(text.lines().count(), 4, "{how:?}: {text}");
    for line in text.lines() {
        serde_json::from_str::<serde_json::Value>(line).unwrap();
    }
}

#[test]
fn a_torn_last_line_is_cut_before_appending_and_a_second_resume_works() {
    for how in [
        Tear::MidLine,
        Tear::AfterInnerBrace,
        Tear::BeforeLastBrace,
        Tear::Zeros,
        Tear::NoNewline,
        Tear::Clean,
    ] {
        check_torn(how);
    }
}

/// Every length a crash can leave: the recorded transitions are exactly the lines whole in what
/// is left (a last line missing only its newline counts), and resuming then appending gives a
/// journal that reads back whole. A cut inside the header leaves no run to resume.
#[test]
fn every_cut_of_a_journal_resumes_to_its_whole_lines() {
    let dir = tempfile::tempdir().unwrap();
    let path = waiting_in_b(dir.path());
    let full = std::fs::read(&path).unwrap();
    let ends: Vec<usize> = full
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .map(|(i, _)| i)
        .collect();
    let runner = two_people();
    for cut in 0..=full.len() {
        std::fs::write(&path, &full[..cut]).unwrap();
        // Lines whose text (without the newline) fits in the cut; the first is the header.
        let whole = ends.iter().filter(|&&end| end <= cut).count();
        if whole == 0 {
            assert!(
                matches!(
                    runner.resume(&path),
                    Err(Error::CorruptJournal { line: 1, .. })
                ),
                "cut {cut}"
            );
            continue;
        }
        let resumed = runner.resume(&path);
        if whole == 1 {
            assert!(
                matches!(resumed, Err(Error::CorruptJournal { .. })),
                "cut {cut}: a header alone has no transition to resume from"
            );
            continue;
        }
        let (run, mut journal) = resumed.unwrap();
        assert_eq!(run.trail.entries.len(), whole - 1, "cut {cut}");
        let interrupted = claij_fsm::Entry::new(run.state.clone(), "interrupted", json!({}));
        journal.record(&interrupted).unwrap();
        drop(journal);
        let (_, entries) = journal::read(&path).unwrap();
        assert_eq!(entries.len(), whole, "cut {cut}");
        assert_eq!(entries.last().unwrap().to, "interrupted", "cut {cut}");
    }
}

#[test]
fn a_bad_line_before_the_last_is_corruption_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = waiting_in_b(dir.path());
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(1, "{\"kind\": \"transition\", \"fr");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let before = std::fs::read(&path).unwrap();
    let err = two_people().resume(&path).unwrap_err();
    assert!(
        matches!(err, Error::CorruptJournal { line: 2, .. }),
        "{err}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), before, "left as it was");
}

#[test]
fn one_journal_has_one_writer_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = waiting_in_b(dir.path());
    let runner = two_people();
    let (_run, first) = runner.resume(&path).unwrap();
    let before = std::fs::read(&path).unwrap();
    // A second resume, a fresh start over it, and a plain append are all refused while it lives.
    let second = runner.resume(&path).unwrap_err();
    assert!(matches!(second, Error::JournalLocked { .. }), "{second}");
    assert!(
        second.to_string().contains("another process holds it"),
        "{second}"
    );
    assert!(second.to_string().contains("run.jsonl"), "{second}");
    let over = runner
        .start_journaled(json!({}), &path, ExistingJournal::Overwrite)
        .unwrap_err();
    assert!(matches!(over, Error::JournalLocked { .. }), "{over}");
    assert!(matches!(
        claij_fsm::Journal::append_to(&path),
        Err(Error::JournalLocked { .. })
    ));
    assert_eq!(std::fs::read(&path).unwrap(), before, "nothing written");
    drop(first);
    runner.resume(&path).unwrap();
}

#[test]
fn a_new_run_refuses_a_journal_that_holds_one_unless_told_to_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    let path = waiting_in_b(dir.path());
    let before = std::fs::read(&path).unwrap();
    let runner = two_people();
    let refused = runner
        .start_journaled(json!({}), &path, ExistingJournal::Refuse)
        .unwrap_err();
    assert!(matches!(refused, Error::JournalExists { .. }), "{refused}");
    assert_eq!(std::fs::read(&path).unwrap(), before, "left as it was");

    let (old, _) = journal::read(&path).unwrap();
    let (run, journal) = runner
        .start_journaled(json!({}), &path, ExistingJournal::Overwrite)
        .unwrap();
    drop(journal);
    let (header, entries) = journal::read(&path).unwrap();
    assert_eq!(header.run_id, run.id);
    assert_ne!(header.run_id, old.run_id);
    assert_eq!(steps(&entries), ["start->a"]);

    // An empty file (made by `mktemp`, say) is a new journal.
    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    runner
        .start_journaled(json!({}), &empty, ExistingJournal::Refuse)
        .unwrap();
}

#[test]
fn reading_a_journal_a_run_has_locked_but_not_begun_says_it_is_in_use() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.jsonl");
    // A run holds the lock and has not written its header yet (its first transitions are running).
    let holder = std::fs::File::create(&path).unwrap();
    holder.lock().unwrap();
    let error = journal::read(&path).unwrap_err();
    assert!(matches!(error, Error::JournalLocked { .. }), "{error}");
    // Once free, an empty file is what it is: no header.
    drop(holder);
    let error = journal::read(&path).unwrap_err();
    assert!(
        matches!(error, Error::CorruptJournal { line: 1, .. }),
        "{error}"
    );
}

#[test]
fn the_last_extensions_line_is_the_runs_and_resume_reads_past_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = waiting_in_b(dir.path());
    assert_eq!(journal::read_extensions(&path).unwrap(), None);
    let mut registry = claij_schema::Registry::new(claij_schema::base()).unwrap();
    let delta = json!({"properties": {"confidence": {"type": "number"}}});
    registry
        .add(claij_schema::SchemaDelta::new("confidence-v1", "m", delta))
        .unwrap();
    let (mut journal, _, _) = claij_fsm::Journal::resume(&path).unwrap();
    journal
        .record_extensions(
            &claij_schema::Registry::new(claij_schema::base())
                .unwrap()
                .to_saved(),
        )
        .unwrap();
    journal.record_extensions(&registry.to_saved()).unwrap();
    drop(journal);
    assert_eq!(
        journal::read_extensions(&path).unwrap(),
        Some(registry.to_saved())
    );

    let runner = two_people();
    let (mut run, mut journal) = runner.resume(&path).unwrap();
    runner
        .provide(&mut run, json!({"id": ["b", "end"]}), Some(&mut journal))
        .unwrap();
    assert_eq!(steps(&run.trail.entries), ["start->a", "a->b", "b->end"]);
}

/// start -> ask (llm) -> check (human) -> ask again or end.
fn ask_and_check(replies: &[&str]) -> Runner {
    let fsm = Fsm::new(
        serde_json::from_value(json!({
            "id": "ask-and-check",
            "states": [
                {"id": "ask", "action": "llm"},
                {"id": "check", "action": "human"},
                {"id": "end", "action": "end"}
            ],
            "transitions": [
                {"id": ["start", "ask"], "schema": {"type": "object"}},
                {"id": ["ask", "check"], "schema": {"type": "object"}},
                {"id": ["ask", "end"], "schema": {"type": "object"}},
                {"id": ["check", "ask"], "schema": {"type": "object"}}
            ]
        }))
        .unwrap(),
    )
    .unwrap();
    let backend = claij_test_support::Scripted::replies(replies.iter().map(|s| (*s).to_owned()));
    Runner::new(fsm)
        .with_llm(
            std::sync::Arc::new(backend),
            claij_interceptors::Config::new("scripted"),
        )
        .with_interceptors(|| {
            claij_interceptors::Chain::new().with(claij_interceptors::from_fn("notes").pre_schema(
                |schema, _| {
                    schema.extend(
                        "note-v1",
                        json!({"properties": {"note": {"type": "string"}}}),
                    );
                    Ok(())
                },
            ))
        })
}

/// The deltas an `llm` state's requests were composed of are journaled after the transition of
/// the step that first applied them, once: a resumed run goes on from what the journal recorded,
/// so asking the state again records nothing.
#[test]
fn applied_deltas_are_journaled_once_per_change_across_a_resume() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.jsonl");
    let runner = ask_and_check(&[r#"{"id": ["ask", "check"]}"#]);
    let (mut run, mut journal) = runner
        .start_journaled(json!({}), &path, ExistingJournal::Refuse)
        .unwrap();
    let outcome = block(runner.run(&mut run, &Interrupt::new(), Some(&mut journal))).unwrap();
    assert_eq!(
        outcome,
        Outcome::Waiting {
            state: "check".into()
        }
    );
    drop(journal);
    let applied = journal::read_applied(&path).unwrap();
    let log = &applied["ask"];
    assert_eq!(log.active().len(), 1);
    assert_eq!(
        (
            log.active()[0].extension_id.as_str(),
            log.active()[0].added_by.as_str()
        ),
        ("note-v1", "notes")
    );
    assert_eq!(run.applied(), &applied);

    let runner = ask_and_check(&[r#"{"id": ["ask", "end"]}"#]);
    let (mut run, mut journal) = runner.resume(&path).unwrap();
    assert_eq!(
        run.applied(),
        &applied,
        "the resumed run starts from the journal's"
    );
    runner
        .provide(
            &mut run,
            json!({"id": ["check", "ask"]}),
            Some(&mut journal),
        )
        .unwrap();
    let outcome = block(runner.run(&mut run, &Interrupt::new(), Some(&mut journal))).unwrap();
    assert!(matches!(outcome, Outcome::Finished { .. }), "{outcome:?}");
    drop(journal);
    assert_eq!(
        steps(&run.trail.entries),
        ["start->ask", "ask->check", "check->ask", "ask->end"]
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let kinds: Vec<String> = text
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["kind"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "run",
            "transition",
            "transition",
            "applied",
            "transition",
            "transition"
        ],
        "{text}"
    );
    assert_eq!(journal::read_applied(&path).unwrap(), applied);
}
