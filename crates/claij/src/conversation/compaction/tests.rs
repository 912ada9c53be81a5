//! The compaction budget through the front door: a conversation whose ten approved extensions
//! render past the budget proposes a compaction before its turn; approved, the turn's request
//! carries the compacted schema and the session keeps it; declined, nothing changes and the
//! approver is not asked again; off, nothing is proposed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use claij_interceptors::Context;
use claij_interceptors::builtin::proposals::{Decision, Proposal};
use claij_schema::Registry;

use crate::approve::Approval;
use crate::conversation::Named;
use crate::session::Session;
use crate::settings::CompactBudget;

/// A backend answering every request validly, keeping each request's system prompt.
struct Recorder(Mutex<Vec<String>>);

impl claij_backends::Backend for Recorder {
    fn provider(&self) -> &str {
        "recorder"
    }

    fn capabilities(&self, _model: &str) -> claij_backends::Capabilities {
        claij_backends::Capabilities::prompted()
    }

    fn complete<'a>(
        &'a self,
        request: &'a claij_backends::ChatRequest,
    ) -> claij_backends::BoxFuture<'a, Result<claij_backends::ChatResponse, claij_backends::Error>>
    {
        self.0
            .lock()
            .unwrap()
            .push(request.system.clone().unwrap_or_default());
        let reply = r#"{"answer": "ok", "state": "answered"}"#.to_owned();
        Box::pin(std::future::ready(Ok(claij_backends::ChatResponse::text(
            reply,
        ))))
    }
}

fn session_with_ten(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("claij-budget-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("conversation.json");
    let _ = std::fs::remove_file(&file);
    let mut registry = Registry::new(claij_schema::base()).unwrap();
    for delta in crate::extensions::compact::tests::ten() {
        registry.add(delta).unwrap();
    }
    Session::load(&file)
        .unwrap()
        .with_extensions(Some(&registry))
        .save(&file)
        .unwrap();
    file
}

/// One turn over `file` with `budget`, `decision` deciding: the system prompt sent, the notices
/// told, how many times the approver was asked.
fn turn(
    file: &std::path::Path,
    budget: CompactBudget,
    decision: Decision,
) -> (String, Vec<String>, usize) {
    let notices = Arc::new(Mutex::new(Vec::new()));
    let told = Arc::clone(&notices);
    let claij = crate::Claij::new(crate::settings::Settings::default())
        .with_var("OPENAI_API_KEY", "sk-test")
        .on_notice(move |n| told.lock().unwrap().push(n.to_string()));
    let asked = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&asked);
    let approver = move |p: &Proposal, _: &Context| {
        assert!(p.extension_id.starts_with("compaction-"), "{p:?}");
        counted.fetch_add(1, Ordering::SeqCst);
        decision.clone()
    };
    let backend = Arc::new(Recorder(Mutex::new(Vec::new())));
    let sent = Arc::clone(&backend);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let open = claij
        .conversation()
        .model("openai:m")
        .interceptors([Named::Proposals])
        .session(file)
        .approval(Approval::given(approver))
        .compact_budget(budget)
        .map_backend(move |_| backend)
        .open();
    let mut conversation = runtime.block_on(open).unwrap();
    runtime.block_on(conversation.turn("hello")).unwrap();
    conversation.save().unwrap();
    let prompt = sent.0.lock().unwrap().last().cloned().unwrap();
    let notices = notices.lock().unwrap().clone();
    (prompt, notices, asked.load(Ordering::SeqCst))
}

fn active_ids(file: &std::path::Path) -> Vec<String> {
    let saved = Session::load(file).unwrap().extensions.unwrap();
    saved
        .extensions
        .into_iter()
        .map(|d| d.extension_id)
        .collect()
}

#[test]
fn past_the_budget_an_approved_compaction_shapes_the_turn() {
    let file = session_with_ten("approved");
    // The default budget: ten extensions cross it.
    let (prompt, notices, asked) = turn(&file, CompactBudget::DEFAULT, Decision::Approve);
    assert_eq!(asked, 1);
    assert_eq!(active_ids(&file), ["compaction-1"]);
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].contains("past [proposals] compact_budget = 120: compaction-1: "),
        "{notices:?}"
    );
    assert!(
        notices[0].contains("(o200k_base), replacing notes-a"),
        "{notices:?}"
    );
    // The two `score` deltas read as one field now.
    assert!(!prompt.contains("integer & integer"), "{prompt}");
    assert!(prompt.contains("Follow-ups for the next turn"), "{prompt}");
    // Under the budget now: the next turn proposes nothing.
    let (_, notices, asked) = turn(&file, CompactBudget::DEFAULT, Decision::Approve);
    assert_eq!((asked, notices.len()), (0, 0));
}

#[test]
fn declined_or_off_nothing_changes() {
    let file = session_with_ten("declined");
    let (prompt, notices, asked) = turn(
        &file,
        CompactBudget::Tokens(50),
        Decision::reject("keep them"),
    );
    assert_eq!(asked, 1);
    assert!(
        notices[0].ends_with("declined: keep them") || notices[0].contains("declined: keep them\n"),
        "{notices:?}"
    );
    assert_eq!(active_ids(&file).len(), 10);
    assert!(prompt.contains("score?: integer & integer"), "{prompt}");
    // Declined and nothing changed since: the approver is not asked again.
    let (_, _, asked) = turn(&file, CompactBudget::Tokens(50), Decision::Approve);
    assert_eq!(asked, 0);

    let file = session_with_ten("off");
    let (_, notices, asked) = turn(&file, CompactBudget::Off, Decision::Approve);
    assert_eq!((asked, notices.len()), (0, 0));
    // Under the budget: nothing either.
    let (_, _, asked) = turn(&file, CompactBudget::Tokens(100_000), Decision::Approve);
    assert_eq!(asked, 0);
    assert_eq!(active_ids(&file).len(), 10);
}
