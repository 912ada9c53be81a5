//! Meta-debugging's remedies acting in the run, with `Scripted` models: a schema remedy put to the
//! remedy approver at once and, approved, verified with the extended schema; each remedy's effect
//! in the journal; a failure with no bail-out keeps its remedy; the journal hook after each line.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use claij_backends::BoxFuture;
use claij_fsm::builtin::meta_debug::{self, Effect, Remedy, RemedyKind};
use claij_fsm::{Fsm, Interrupt, Journal, Outcome, RemedyApprover, Run, Runner};
use claij_interceptors::{BoxError, Chain, Config};
use claij_test_support::Scripted;
use serde_json::{Value, json};

fn block<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

/// start -> ask (llm, meta-debugged) -> end, or the bail-out into `failed` when `bails`.
fn once(bails: bool) -> Fsm {
    let object = |key: &str| json!({"type": "object", "properties": {key: {"type": "string"}}, "required": [key]});
    let mut states = vec![
        json!({"id": "ask", "action": "llm", "config": {"meta_debug": true}}),
        json!({"id": "end", "action": "end"}),
    ];
    let mut transitions = vec![
        json!({"id": ["start", "ask"], "schema": object("topic")}),
        json!({"id": ["ask", "end"], "schema": object("answer")}),
    ];
    if bails {
        states.push(json!({"id": "failed", "action": "end"}));
        transitions.push(json!({"id": ["ask", "failed"], "schema": {"type": "object", "properties": {
            "error": {"type": "string"}, "bail_out": {"const": true}}, "required": ["error", "bail_out"]}}));
    }
    Fsm::new(
        serde_json::from_value(json!({"id": "once", "states": states, "transitions": transitions}))
            .unwrap(),
    )
    .unwrap()
}

/// The delta the diagnostic model proposes: a required `unit`.
fn delta() -> Value {
    json!({"properties": {"unit": {"type": "string", "description": "the answer's unit"}},
           "required": ["unit"]})
}

/// A diagnostic model that suggests the schema remedy [`delta`].
fn diagnostician() -> Scripted {
    Scripted::replies([
        json!({"analysis": "it has no field for the unit it insists on"}).to_string(),
        json!({"fix_kind": "schema", "suggestion": "give it a `unit`", "delta": delta()})
            .to_string(),
    ])
}

/// Approves (or not) every schema remedy; an approved delta joins the state's schema through the
/// interceptor [`Approver::chain`] builds, as a shared registry would.
#[derive(Clone, Default)]
struct Approver {
    approve: bool,
    active: Arc<AtomicBool>,
    asked: Arc<Mutex<Vec<(String, Remedy)>>>,
}

impl RemedyApprover for Approver {
    fn approve<'a>(
        &'a self,
        state: &'a str,
        remedy: &'a Remedy,
    ) -> BoxFuture<'a, Result<bool, BoxError>> {
        self.asked
            .lock()
            .unwrap()
            .push((state.to_owned(), remedy.clone()));
        self.active.store(self.approve, Ordering::SeqCst);
        Box::pin(std::future::ready(Ok(self.approve)))
    }
}

impl Approver {
    fn chain(&self) -> impl Fn() -> Chain + Send + Sync + 'static {
        let active = Arc::clone(&self.active);
        move || {
            let active = Arc::clone(&active);
            Chain::new().with(claij_interceptors::from_fn("approved").pre_schema(
                move |schema, _| {
                    if active.load(Ordering::SeqCst) {
                        schema.extend("meta-debug-ask-v1", delta());
                    }
                    Ok(())
                },
            ))
        }
    }
}

fn runner(fsm: Fsm, failing: &Scripted, approver: &Approver) -> Runner {
    let mut config = Config::new("small-model");
    config.max_retries = 1;
    Runner::new(fsm)
        .with_llm(Arc::new(failing.clone()), config)
        .with_interceptors(approver.chain())
        .with_meta_debug(meta_debug::Diagnostics::new(
            Arc::new(diagnostician()),
            Config::new("unused"),
            ["big-model"],
        ))
        .with_remedy_approver(approver.clone())
}

/// The journal's `remedy` lines.
fn remedy_lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["kind"] == "remedy")
        .collect()
}

/// An approved schema remedy is tried at once: the failing state is asked again with the extended
/// schema, its valid reply goes on, and the remedy is journaled as validated (and kept on resume).
#[test]
fn an_approved_schema_remedy_is_verified_with_the_extended_schema_and_the_run_goes_on() {
    // The unit is what the model insists on. Asked again, its first reply would do without the
    // delta; with it (`unit` required) it is retried, and the reply with the unit goes on.
    let failing = Scripted::replies([
        r#"{"reply": "4", "unit": "apples"}"#,
        r#"{"reply": "4", "unit": "apples"}"#,
        r#"{"id": ["ask", "end"], "answer": "4"}"#,
        r#"{"id": ["ask", "end"], "answer": "4", "unit": "apples"}"#,
    ]);
    let approver = Approver {
        approve: true,
        ..Approver::default()
    };
    let runner = runner(once(true), &failing, &approver);
    let dir = tempfile::tempdir().unwrap();
    let journal_path = dir.path().join("run.jsonl");
    let (mut run, mut journal) = runner
        .start_journaled(
            json!({"topic": "apples"}),
            &journal_path,
            claij_fsm::ExistingJournal::Refuse,
        )
        .unwrap();
    let outcome = block(runner.run(&mut run, &Interrupt::new(), Some(&mut journal))).unwrap();
    let Outcome::Finished { state, event } = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(state, "end");
    assert_eq!(event["unit"], "apples");

    let asked = approver.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "put to the approver once");
    assert_eq!(asked[0].0, "ask");
    assert_eq!(asked[0].1.delta.as_ref(), Some(&delta()));
    // Asked again with the extended schema: the reply without the unit was retried.
    assert_eq!(failing.calls(), 4);
    let ask = run.trail.entries.iter().find(|e| e.from == "ask").unwrap();
    assert_eq!(
        ask.attempts.len(),
        4,
        "the failed attempts and the verification's"
    );

    let remedy = &run.remedies()["ask"];
    assert_eq!(remedy.kind, RemedyKind::Schema);
    assert_eq!(remedy.effect, Some(Effect::Validated));
    let lines = remedy_lines(&journal_path);
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["remedy"]["effect"], "validated");
    drop(journal);
    let (resumed, _journal) = runner.resume(&journal_path).unwrap();
    assert_eq!(resumed.remedies()["ask"].effect, Some(Effect::Validated));
}

/// A declined schema remedy is not tried: the state bails out as before, the remedy journaled as
/// declined.
#[test]
fn a_declined_schema_remedy_is_recorded_as_declined_and_the_state_bails_out() {
    let failing = Scripted::replies([r#"{"reply": "4"}"#, r#"{"reply": "4"}"#]);
    let approver = Approver::default();
    let runner = runner(once(true), &failing, &approver);
    let dir = tempfile::tempdir().unwrap();
    let journal_path = dir.path().join("run.jsonl");
    let (mut run, mut journal) = runner
        .start_journaled(
            json!({"topic": "2 + 2"}),
            &journal_path,
            claij_fsm::ExistingJournal::Refuse,
        )
        .unwrap();
    let outcome = block(runner.run(&mut run, &Interrupt::new(), Some(&mut journal))).unwrap();
    let Outcome::Finished { state, event } = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(
        (state.as_str(), &event["bail_out"]),
        ("failed", &json!(true))
    );
    assert_eq!(approver.asked.lock().unwrap().len(), 1);
    assert_eq!(failing.calls(), 2, "a declined remedy is not tried");
    assert_eq!(run.remedies()["ask"].effect, Some(Effect::Declined));
    let lines = remedy_lines(&journal_path);
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["remedy"]["effect"], "declined");
}

/// A state with no bail-out is still diagnosed: its remedy and the remedy's effect are journaled
/// (and the journal hook runs after that line) before the run fails with `Error::Llm`; a resumed
/// run has the remedy.
#[test]
fn a_failure_with_no_bail_out_journals_its_remedy_before_the_error() {
    // Two failed attempts, then two more with the approved remedy.
    let failing = Scripted::replies([r#"{"reply": "4"}"#; 4]);
    let approver = Approver {
        approve: true,
        ..Approver::default()
    };
    let hooked = Arc::new(AtomicUsize::new(0));
    let remedied_when_hooked = Arc::new(AtomicBool::new(false));
    let runner = runner(once(false), &failing, &approver).with_journal_hook({
        let (hooked, remedied) = (Arc::clone(&hooked), Arc::clone(&remedied_when_hooked));
        move |run: &Run, _: &mut Journal| {
            hooked.fetch_add(1, Ordering::SeqCst);
            if run.remedies().contains_key("ask") {
                remedied.store(true, Ordering::SeqCst);
            }
            Ok(())
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let journal_path = dir.path().join("run.jsonl");
    let (mut run, mut journal) = runner
        .start_journaled(
            json!({"topic": "2 + 2"}),
            &journal_path,
            claij_fsm::ExistingJournal::Refuse,
        )
        .unwrap();
    let error = block(runner.run(&mut run, &Interrupt::new(), Some(&mut journal))).unwrap_err();
    assert!(
        matches!(&error, claij_fsm::Error::Llm { state, .. } if state == "ask"),
        "{error}"
    );
    assert_eq!(failing.calls(), 4, "the approved remedy was tried");
    let lines = remedy_lines(&journal_path);
    assert_eq!(lines.len(), 1, "the remedy is journaled before the error");
    assert_eq!(lines[0]["state"], "ask");
    assert_eq!(lines[0]["remedy"]["fix_kind"], "schema");
    assert_eq!(lines[0]["remedy"]["effect"], "invalid");
    assert_eq!(hooked.load(Ordering::SeqCst), 1, "after the remedy line");
    assert!(remedied_when_hooked.load(Ordering::SeqCst));
    drop(journal);
    let (resumed, _journal) = runner.resume(&journal_path).unwrap();
    assert_eq!(resumed.state, "ask");
    assert_eq!(resumed.remedies()["ask"].effect, Some(Effect::Invalid));
}

/// The journal hook runs after every line the runner appends, the run's trail already holding it.
#[test]
fn the_journal_hook_runs_after_each_recorded_transition() {
    let failing = Scripted::replies([r#"{"answer": "4"}"#]);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let runner = runner(once(true), &failing, &Approver::default()).with_journal_hook({
        let seen = Arc::clone(&seen);
        move |run: &Run, journal: &mut Journal| {
            let lines = std::fs::read_to_string(journal.path())
                .unwrap()
                .lines()
                .count();
            seen.lock().unwrap().push((run.trail.entries.len(), lines));
            Ok(())
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let journal_path = dir.path().join("run.jsonl");
    let (mut run, mut journal) = runner
        .start_journaled(
            json!({"topic": "2 + 2"}),
            &journal_path,
            claij_fsm::ExistingJournal::Refuse,
        )
        .unwrap();
    block(runner.run(&mut run, &Interrupt::new(), Some(&mut journal))).unwrap();
    // The header and `start -> ask` were written by `start_journaled`; `ask -> end` by the run.
    assert_eq!(*seen.lock().unwrap(), [(2, 3)]);
}

/// A prompt remedy records its effect as a schema remedy does: validated here, in the run and in
/// the journal's remedy line.
#[test]
fn a_prompt_remedy_records_its_effect() {
    let failing = Scripted::replies([
        r#"{"reply": "4"}"#,
        r#"{"reply": "4"}"#,
        r#"{"id": ["ask", "end"], "answer": "4"}"#,
    ]);
    let diagnostic = Scripted::replies([
        json!({"analysis": "it calls the field `reply`"}).to_string(),
        json!({"fix_kind": "prompt", "suggestion": "Name the field `answer`."}).to_string(),
    ]);
    let mut config = Config::new("small-model");
    config.max_retries = 1;
    let runner = Runner::new(once(true))
        .with_llm(Arc::new(failing), config)
        .with_meta_debug(meta_debug::Diagnostics::new(
            Arc::new(diagnostic),
            Config::new("unused"),
            ["big-model"],
        ));
    let dir = tempfile::tempdir().unwrap();
    let journal_path = dir.path().join("run.jsonl");
    let (mut run, mut journal) = runner
        .start_journaled(
            json!({"topic": "2 + 2"}),
            &journal_path,
            claij_fsm::ExistingJournal::Refuse,
        )
        .unwrap();
    let outcome = block(runner.run(&mut run, &Interrupt::new(), Some(&mut journal))).unwrap();
    assert!(matches!(outcome, Outcome::Finished { ref state, .. } if state == "end"));
    assert_eq!(run.remedies()["ask"].effect, Some(Effect::Validated));
    let lines = remedy_lines(&journal_path);
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["remedy"]["fix_kind"], "prompt");
    assert_eq!(lines[0]["remedy"]["effect"], "validated");
}

/// Once an extension is active, a prompted model is told about it: the state prompt lists only
/// the transitions' schemas as written, and the pipeline shows no schema of its own in an FSM.
#[test]
fn a_prompted_model_sees_the_extended_schema_once_the_extension_is_active() {
    let failing = Scripted::replies([
        r#"{"reply": "4", "unit": "apples"}"#,
        r#"{"reply": "4", "unit": "apples"}"#,
        r#"{"id": ["ask", "end"], "answer": "4", "unit": "apples"}"#,
    ]);
    let approver = Approver {
        approve: true,
        ..Approver::default()
    };
    let runner = runner(once(true), &failing, &approver);
    let mut run = runner.start(json!({"topic": "apples"})).unwrap();
    block(runner.run(&mut run, &Interrupt::new(), None)).unwrap();
    let systems: Vec<String> = failing
        .requests()
        .into_iter()
        .map(|r| r.system.unwrap_or_default())
        .collect();
    assert_eq!(systems.len(), 3);
    assert!(!systems[0].contains("unit"), "{}", systems[0]);
    let extended = &systems[2];
    assert!(
        extended.contains("meta-debug-ask-v1") && extended.contains("unit: string"),
        "{extended}"
    );
    // Said once, after the state prompt.
    assert_eq!(extended.matches("Schema extensions in force").count(), 1);
    assert!(extended.starts_with(systems[0].as_str()));
    insta::assert_snapshot!(
        "extended_state_prompt_section",
        &extended[systems[0].len()..]
    );
}

/// The meta-debug sub-trail ends as the remedy did: an approved schema remedy that validated is
/// `verify -> fixed`, applied; a declined one `verify -> unfixed`, not applied.
#[test]
fn the_sub_trail_of_a_schema_remedy_ends_as_its_effect() {
    let last_sub_entry = |run: &Run| {
        run.trail
            .entries
            .iter()
            .rfind(|e| e.from.starts_with("ask/meta-debug/"))
            .cloned()
            .unwrap()
    };
    let failing = Scripted::replies([
        r#"{"reply": "4", "unit": "apples"}"#,
        r#"{"reply": "4", "unit": "apples"}"#,
        r#"{"id": ["ask", "end"], "answer": "4", "unit": "apples"}"#,
    ]);
    let approver = Approver {
        approve: true,
        ..Approver::default()
    };
    let approving = runner(once(true), &failing, &approver);
    let mut run = approving.start(json!({"topic": "apples"})).unwrap();
    block(approving.run(&mut run, &Interrupt::new(), None)).unwrap();
    assert_eq!(run.remedies()["ask"].effect, Some(Effect::Validated));
    let last = last_sub_entry(&run);
    assert_eq!(
        (last.from.as_str(), last.to.as_str()),
        ("ask/meta-debug/verify", "ask/meta-debug/fixed")
    );
    assert_eq!(last.event["applied"], true);
    assert_eq!(last.event["fixed"], true);
    assert_eq!(last.event["delta"], delta());
    assert_eq!(run.remedies()["ask"].delta.as_ref(), Some(&delta()));

    let failing = Scripted::replies([r#"{"reply": "4"}"#, r#"{"reply": "4"}"#]);
    let approver = Approver::default();
    let declining = runner(once(true), &failing, &approver);
    let mut run = declining.start(json!({"topic": "apples"})).unwrap();
    block(declining.run(&mut run, &Interrupt::new(), None)).unwrap();
    assert_eq!(run.remedies()["ask"].effect, Some(Effect::Declined));
    let last = last_sub_entry(&run);
    assert_eq!(
        (last.from.as_str(), last.to.as_str()),
        ("ask/meta-debug/verify", "ask/meta-debug/unfixed")
    );
    assert_eq!(last.event["applied"], false);
    assert_eq!(last.event["fixed"], false);
}

/// A remedy tried in vain still cost model calls: the bail-out's trail entry holds the failed
/// attempts and the re-ask's, for a schema remedy and for a prompt remedy.
#[test]
fn a_failed_re_ask_keeps_its_attempts_in_the_trail() {
    let failing = Scripted::replies([r#"{"reply": "4"}"#; 4]);
    let approver = Approver {
        approve: true,
        ..Approver::default()
    };
    let schema = runner(once(true), &failing, &approver);
    let mut run = schema.start(json!({"topic": "apples"})).unwrap();
    block(schema.run(&mut run, &Interrupt::new(), None)).unwrap();
    assert_eq!(run.remedies()["ask"].effect, Some(Effect::Invalid));
    assert_eq!(failing.calls(), 4);
    let bail = run.trail.entries.iter().find(|e| e.to == "failed").unwrap();
    assert_eq!(bail.from, "ask");
    assert_eq!(
        bail.attempts.len(),
        4,
        "the failed attempts and the re-ask's"
    );
    // Two model calls on the one entry: the state's, then the re-ask's, each with its attempts.
    let calls: Vec<usize> = bail.calls().map(<[_]>::len).collect();
    assert!(
        calls.len() == 2 && calls.iter().sum::<usize>() == 4,
        "{calls:?}"
    );

    let failing = Scripted::replies([r#"{"reply": "4"}"#; 4]);
    let diagnostic = Scripted::replies([
        json!({"analysis": "it calls the field `reply`"}).to_string(),
        json!({"fix_kind": "prompt", "suggestion": "Name the field `answer`."}).to_string(),
    ]);
    let mut config = Config::new("small-model");
    config.max_retries = 1;
    let prompt = Runner::new(once(true))
        .with_llm(Arc::new(failing.clone()), config)
        .with_meta_debug(meta_debug::Diagnostics::new(
            Arc::new(diagnostic),
            Config::new("unused"),
            ["big-model"],
        ));
    let mut run = prompt.start(json!({"topic": "2 + 2"})).unwrap();
    block(prompt.run(&mut run, &Interrupt::new(), None)).unwrap();
    assert_eq!(run.remedies()["ask"].effect, Some(Effect::Invalid));
    assert_eq!(failing.calls(), 4);
    let bail = run.trail.entries.iter().find(|e| e.to == "failed").unwrap();
    assert_eq!(
        bail.attempts.len(),
        4,
        "the failed attempts and the re-ask's"
    );
}

/// The extensions section composes the deltas in order, leaves out one that contradicts those
/// before it (the registry refuses it), and is absent when nothing is active.
#[test]
fn the_extensions_section_shows_what_composes() {
    use claij_fsm::prompts::extensions_section;
    use claij_schema::SchemaDelta;

    assert_eq!(extensions_section(&[]), None);
    let unit = SchemaDelta::new("unit-v1", "test", delta());
    let clash = SchemaDelta::new(
        "unit-v2",
        "test",
        json!({"properties": {"unit": {"type": "integer"}}}),
    );
    let confidence = SchemaDelta::new(
        "confidence-v1",
        "test",
        json!({"properties": {"confidence": {"type": "number"}}}),
    );
    let section = extensions_section(&[unit, clash, confidence]).unwrap();
    assert!(
        section.starts_with("Schema extensions in force (`unit-v1`, `confidence-v1`)"),
        "{section}"
    );
    assert!(section.contains("unit: string"), "{section}");
    assert!(section.contains("confidence?: number"), "{section}");
    assert!(!section.contains("integer"), "{section}");
}
