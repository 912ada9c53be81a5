//! The conversation's parts: interceptor names, the chain they make, the knobs.
#![allow(clippy::unwrap_used)]

use super::{Named, UnknownInterceptor};

#[test]
fn interceptors_are_named_and_an_unknown_name_lists_the_known_ones() {
    for named in Named::ALL {
        assert_eq!(named.name().parse::<Named>(), Ok(named));
        assert_eq!(named.to_string(), named.name());
    }
    assert_eq!(" tools ".parse::<Named>(), Ok(Named::Tools));
    let unknown = "memroy".parse::<Named>().unwrap_err();
    assert_eq!(
        unknown,
        UnknownInterceptor {
            name: "memroy".into()
        }
    );
    assert_eq!(
        unknown.to_string(),
        "no interceptor is named `memroy` (known: memory, citations, eval, tools, mcp, proposals, metrics)"
    );
}

#[test]
fn a_name_given_twice_keeps_its_first_place() {
    let claij = crate::Claij::new(crate::settings::Settings::default());
    let builder = claij
        .conversation()
        .interceptor(Named::Tools)
        .interceptors([Named::Memory, Named::Tools, Named::Eval]);
    assert_eq!(builder.named(), [Named::Tools, Named::Memory, Named::Eval]);
}

#[test]
fn tools_code_and_mcp_let_the_turn_wait_for_their_results() {
    let plain = super::states(&[Named::Memory]);
    assert!(!plain.names().contains(&"waiting_for_tools"));
    for name in [Named::Tools, Named::Mcp, Named::Eval] {
        let states = super::states(&[Named::Memory, name]);
        assert!(states.names().contains(&"waiting_for_tools"), "{name}");
    }
}

/// A backend that answers each request with the next of its replies.
struct Replies(std::sync::Mutex<Vec<String>>);

impl claij_backends::Backend for Replies {
    fn provider(&self) -> &str {
        "replies"
    }

    fn capabilities(&self, _model: &str) -> claij_backends::Capabilities {
        claij_backends::Capabilities::prompted()
    }

    fn complete<'a>(
        &'a self,
        _request: &'a claij_backends::ChatRequest,
    ) -> claij_backends::BoxFuture<'a, Result<claij_backends::ChatResponse, claij_backends::Error>>
    {
        let reply = self.0.lock().unwrap().remove(0);
        Box::pin(std::future::ready(Ok(claij_backends::ChatResponse::text(
            reply,
        ))))
    }
}

#[test]
fn the_citations_chain_checks_an_unknown_note_once_per_attempt() {
    use claij_interceptors::builtin::citations::Document;
    let notes = vec![Document::new("note-1", "Trip", "We land on 3 May.")];
    let (chain, _) = super::chain(&[Named::Citations], None, notes, 4000, None).unwrap();
    let cite = |id: &str| {
        serde_json::json!({"answer": "3 May", "state": "answered", "metadata": {
            "hasSources": true, "citations": [{"noteId": id, "noteTitle": "Trip"}]}})
        .to_string()
    };
    let backend = Replies(std::sync::Mutex::new(vec![cite("note-9"), cite("note-1")]));
    let pipeline = claij_interceptors::Pipeline::new(
        std::sync::Arc::new(backend),
        claij_interceptors::Config::new("m"),
        chain,
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let answer = runtime
        .block_on(pipeline.ask(&mut claij_interceptors::Context::default(), "When?"))
        .unwrap();
    assert_eq!(answer.retries(), 1);
    let first = &answer.attempts[0].violations;
    assert_eq!(first.len(), 1, "{first:?}");
    assert_eq!(first[0].keyword, "citations");
}

/// The embedded model's requests carry its token limit (so a reply it cuts names the limit); a
/// hosted model's carry none unless the options say; the options win.
#[cfg(feature = "local")]
#[test]
fn the_local_model_s_requests_carry_its_token_limit() {
    let defaults = crate::settings::Defaults::default();
    let limit = |options: &crate::options::ModelOptions, provider: &str| {
        super::knobs(options, ("m".to_owned(), provider), &defaults, None).max_tokens
    };
    let plain = crate::options::ModelOptions::default();
    assert_eq!(limit(&plain, "local"), Some(512));
    assert_eq!(limit(&plain, "openrouter"), None);
    let told = crate::options::ModelOptions {
        max_tokens: Some(24),
        ..Default::default()
    };
    assert_eq!(limit(&told, "local"), Some(24));
    assert_eq!(limit(&told, "openrouter"), Some(24));
}

/// A turn's error is the front door's: of kind `Pipeline`, its predicates forwarded to the
/// pipeline's error underneath, its message that error's, word for word.
#[test]
fn a_turn_without_a_valid_reply_is_the_front_door_s_error() {
    let claij = crate::Claij::new(crate::settings::Settings::default())
        .with_var("OPENAI_API_KEY", "sk-test");
    let replies = vec!["no JSON here".to_owned(); 10];
    let backend = std::sync::Arc::new(Replies(std::sync::Mutex::new(replies)));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let open = claij
        .conversation()
        .model("openai:m")
        .map_backend(move |_| backend)
        .open();
    let mut conversation = runtime.block_on(open).unwrap();
    let error = runtime.block_on(conversation.turn("?")).unwrap_err();
    assert_eq!(error.kind(), crate::ErrorKind::Pipeline);
    assert!(error.is_invalid_reply(), "{error:?}");
    assert!(!error.is_budget() && !error.is_retryable() && !error.is_timeout());
    let inner = error.pipeline().unwrap();
    assert!(
        matches!(inner, claij_interceptors::Error::RetriesExhausted(_)),
        "{inner:?}"
    );
    assert_eq!(error.to_string(), inner.to_string());
    // Said for people: one line, the reason the last reply held no JSON.
    let claij_interceptors::Error::RetriesExhausted(exhausted) = inner else {
        unreachable!()
    };
    let lines = crate::report::exhausted_lines(exhausted);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("no valid reply after ")
            && lines[0].contains(": the last held no JSON: "),
        "{lines:?}"
    );
}

/// Replies that are JSON but not valid: the last one's violations, one an indented line.
#[test]
fn the_last_reply_s_violations_are_said_one_a_line() {
    let claij = crate::Claij::new(crate::settings::Settings::default())
        .with_var("OPENAI_API_KEY", "sk-test");
    let replies = vec![r#"{"answer": 1}"#.to_owned(); 10];
    let backend = std::sync::Arc::new(Replies(std::sync::Mutex::new(replies)));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let open = claij
        .conversation()
        .model("openai:m")
        .map_backend(move |_| backend)
        .open();
    let mut conversation = runtime.block_on(open).unwrap();
    let error = runtime.block_on(conversation.turn("?")).unwrap_err();
    let Some(claij_interceptors::Error::RetriesExhausted(exhausted)) = error.pipeline() else {
        panic!("{error:?}")
    };
    let lines = crate::report::exhausted_lines(exhausted);
    let n = exhausted.last_call().len();
    assert_eq!(
        lines[0],
        format!("no valid reply after {n} attempts; the last one's violations:")
    );
    assert_eq!(lines.len(), 1 + exhausted.violations().len(), "{lines:?}");
    assert!(lines.len() > 1, "{lines:?}");
    assert!(
        lines[1..]
            .iter()
            .all(|l| l.starts_with("  ") && !l.contains('\n')),
        "{lines:?}"
    );
}

#[test]
fn an_opening_says_what_happens() {
    let waiting = super::Opening::Waiting {
        lock: "/tmp/s.json.lock".into(),
    };
    assert_eq!(
        waiting.to_string(),
        "waiting for /tmp/s.json.lock: another claij is on this conversation"
    );
    let chosen = super::Opening::Model("using openai:gpt-4o".into());
    assert_eq!(chosen.to_string(), "using openai:gpt-4o");
}

#[test]
fn notes_are_numbered_in_order_and_titled_by_their_file_names() {
    let dir = std::env::temp_dir().join(format!("claij-notes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (trip, menu) = (dir.join("trip.md"), dir.join("menu.txt"));
    std::fs::write(&trip, "We land on 3 May.").unwrap();
    std::fs::write(&menu, "Soup.").unwrap();
    let notes = super::notes(&[trip.clone(), menu]).unwrap();
    let seen: Vec<(&str, &str, &str)> = notes
        .iter()
        .map(|n| (n.id.as_str(), n.title.as_str(), n.content.as_str()))
        .collect();
    assert_eq!(
        seen,
        [
            ("note-1", "trip.md", "We land on 3 May."),
            ("note-2", "menu.txt", "Soup.")
        ]
    );
    let missing = dir.join("none.md");
    let error = super::notes(&[trip, missing.clone()]).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!("cannot read {}", missing.display())
    );
    assert_eq!(error.kind(), crate::ErrorKind::Io);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A session file another holder has locked: the wait is told, once, and the lock is taken when
/// the holder lets go.
#[test]
fn waiting_for_a_session_s_lock_is_told_once() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let dir = std::env::temp_dir().join(format!("claij-telling-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("s.json");
    let held = crate::session::SessionLock::acquire(&path).unwrap();
    let told = std::sync::Arc::new(AtomicUsize::new(0));
    let waiter = {
        let (told, path) = (std::sync::Arc::clone(&told), path.clone());
        std::thread::spawn(move || {
            crate::session::SessionLock::acquire_telling(&path, |waiting| {
                assert!(matches!(waiting, super::Opening::Waiting { .. }));
                told.fetch_add(1, Ordering::SeqCst);
            })
        })
    };
    // Let go once the wait is told (or after a while, for the assertion below to say so).
    for _ in 0..500 {
        if told.load(Ordering::SeqCst) > 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    drop(held);
    let lock = waiter.join().unwrap().unwrap();
    assert_eq!(told.load(Ordering::SeqCst), 1);
    drop(lock);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A compaction budget in tokens needs them counted: a build without the feature `tokens` refuses
/// it, naming where it was set (the builder's wins over the configuration's); `off` and no budget
/// need nothing.
#[test]
fn a_compaction_budget_this_build_cannot_count_is_refused_naming_where_it_is_set() {
    use crate::settings::CompactBudget;
    let builder = Some((CompactBudget::Tokens(300), "Builder::compact_budget"));
    let err = super::honoured(builder, false).unwrap_err();
    assert_eq!(err.kind(), crate::ErrorKind::Unavailable);
    assert_eq!(
        err.to_string(),
        "Builder::compact_budget = 300: 300 tokens cannot be counted: this build of claij has no \
         feature `tokens` (build it with `tokens`, or set \"off\")"
    );
    let configured = Some((CompactBudget::Tokens(50), "[proposals] compact_budget"));
    let err = super::honoured(configured, false).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("[proposals] compact_budget = 50: 50 tokens cannot be counted"),
        "{err}"
    );
    super::honoured(builder, true).unwrap();
    super::honoured(Some((CompactBudget::Off, "Builder::compact_budget")), false).unwrap();
    super::honoured(None, false).unwrap();
}

/// Without the feature `tokens` (`cargo test -p claij --lib without_tokens`, as `cargo xtask test`
/// runs it), a budget in tokens is refused wherever it is set: the configuration's key when the
/// file is read, the builder's and the settings' when the conversation opens.
#[cfg(not(feature = "tokens"))]
#[test]
fn without_tokens_a_compaction_budget_in_tokens_is_refused_wherever_it_is_set() {
    use crate::settings::{CompactBudget, Settings};
    let path = std::path::Path::new("/etc/claij.toml");
    let err = Settings::parse("[proposals]\ncompact_budget = 300\n", path).unwrap_err();
    assert_eq!(err.kind(), crate::ErrorKind::Unavailable);
    assert_eq!(
        err.to_string(),
        "/etc/claij.toml:2: proposals.compact_budget: 300 tokens cannot be counted: this build of \
         claij has no feature `tokens` (build it with `tokens`, or set \"off\")"
    );
    let off = Settings::parse("[proposals]\ncompact_budget = \"off\"\n", path).unwrap();
    assert_eq!(off.compact_budget, Some(CompactBudget::Off));
    // `config show` does not promise the default budget this build cannot apply.
    let shown = Settings::default().redacted(&|_| false).to_string();
    assert!(
        shown.contains("  compact_budget   (none: off, no feature `tokens` in this build)\n"),
        "{shown}"
    );

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let open = |settings: Settings, budget: Option<CompactBudget>| {
        let claij = crate::Claij::new(settings).with_var("OPENAI_API_KEY", "sk-test");
        let mut builder = claij
            .conversation()
            .model("openai:m")
            .interceptors([Named::Proposals]);
        if let Some(budget) = budget {
            builder = builder.compact_budget(budget);
        }
        runtime.block_on(builder.open()).map(drop)
    };
    let err = open(Settings::default(), Some(CompactBudget::Tokens(300))).unwrap_err();
    assert_eq!(err.kind(), crate::ErrorKind::Unavailable);
    assert!(
        err.to_string()
            .starts_with("Builder::compact_budget = 300: 300 tokens cannot be counted"),
        "{err}"
    );
    let mut settings = Settings::default();
    settings.compact_budget = Some(CompactBudget::Tokens(50));
    let err = open(settings.clone(), None).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("[proposals] compact_budget = 50: 50 tokens cannot be counted"),
        "{err}"
    );
    // The builder's `off` is the budget in force: nothing to count, the conversation opens.
    open(settings, Some(CompactBudget::Off)).unwrap();
    open(Settings::default(), None).unwrap();
}
