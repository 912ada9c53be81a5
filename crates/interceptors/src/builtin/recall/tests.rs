//! Tests of the `recall` interceptor: a fact from turn 2 recalled on turn 60, the floor, the budget,
//! ages from an injected clock, the carried session, the embedder kept off the runtime's thread.

use std::sync::Mutex;
use std::thread::ThreadId;

use claij_backends::ChatRequest;
use claij_test_support::Scripted;
use futures_executor::block_on;
use serde_json::json;

use super::scenario::{FACT, QUESTION, start};
use super::*;
use crate::builtin::memory::{Memory, Window};
use crate::{Chain, Config, Error, Pipeline, Stage};

const DIM: usize = 1024;

fn system(request: &ChatRequest) -> &str {
    request.system.as_deref().unwrap_or_default()
}

/// A model that says what its prompt held ([`scenario::reporting_reply`]).
fn reporting_model() -> Scripted {
    Scripted::from_fn(|request, _call| Ok(scenario::reporting_reply(request)))
}

fn recall(store: &Arc<InMemoryStore>, config: RecallConfig) -> Recall {
    Recall::new(Arc::new(HashedWords::new(DIM)), store.clone())
        .with_config(config)
        .with_clock(Arc::new(ManualClock::new(start())))
        .with_session("s1")
}

/// The scenario on an in-memory store and the hashed-words embedder (the same code runs on the
/// SQLite and Chroma stores in the `claij` crate's tests).
#[test]
fn the_fact_of_turn_2_is_recalled_on_turn_60() {
    let store = Arc::new(InMemoryStore::new(DIM));
    // HashedWords scores shared words, not meaning: at a floor of 0.3 (the sentence model's default
    // is lower) the distractions that share only "what", "is", "my" with the question stay out.
    let config = RecallConfig {
        min_similarity: 0.3,
        ..RecallConfig::default()
    };
    let turns = block_on(scenario::run_with(
        store.clone(),
        Arc::new(HashedWords::new(DIM)),
        config,
    ))
    .unwrap();
    block_on(scenario::check_recalled(&turns, store.as_ref())).unwrap();
    let last = &turns.systems[59];
    // The floor keeps out the distractions that share only "what", "is", "my" with the question.
    assert!(!last.contains("weather"), "turn 60's prompt:\n{last}");
    assert!(
        !last.contains("favourite colour"),
        "turn 60's prompt:\n{last}"
    );
    let lines = last.lines().filter(|l| l.starts_with("- (")).count();
    assert_eq!(lines, 1, "turn 60's prompt:\n{last}");
    assert_eq!(
        turns.context.get::<RecallSession>().unwrap().session_id,
        scenario::SESSION
    );
}

#[test]
fn a_window_memory_has_lost_the_fact_by_turn_60() {
    let turns = block_on(scenario::run_chain(
        Chain::new().with(Memory::new(Window::new(10))),
    ))
    .unwrap();
    assert_eq!(turns.answers[59], "I don't know.");
    let last = &turns.systems[59];
    assert!(
        last.contains("Turn summaries"),
        "the window memory did recall: {last}"
    );
    assert!(!last.contains(FACT), "turn 60's prompt:\n{last}");
    let store = InMemoryStore::new(DIM);
    assert!(block_on(scenario::check_recalled(&turns, &store)).is_err());
}

#[test]
fn the_prompt_section_is_snapshotted_with_ages_and_a_cut() {
    let now = start();
    let hit = |id: &str, text: &str, ago: u64, similarity: f32| Hit {
        record: Record {
            id: id.into(),
            session: "s1".into(),
            text: text.into(),
            embedding: Vec::new(),
            created_at: now - Duration::from_secs(ago),
        },
        similarity,
    };
    let hits = [
        hit("a", FACT, 3 * 86_400 + 5, 0.9),
        hit(
            "b",
            "The user prefers the blue locker room.",
            2 * 3_600,
            0.7,
        ),
        hit("c", "The user asked about lockers at the pool.", 30, 0.5),
    ];
    insta::assert_snapshot!("recall_section_all", section(&hits, now, 1_500).unwrap());
    // Room for the first two lines only: the third is left out, and the prompt says so.
    let budget = "- (3 days ago) ".len()
        + FACT.len()
        + "- (2 hours ago) The user prefers the blue locker room.".len();
    let cut = section(&hits, now, budget).unwrap();
    insta::assert_snapshot!("recall_section_cut", cut);
    assert!(cut.contains("1 more recalled memory left out"));
    assert!(!cut.contains("pool"));
    assert!(
        section(&hits, now, budget - 1)
            .unwrap()
            .contains("2 more recalled memories left out")
    );
    assert_eq!(section(&[], now, 1_500), None);
}

#[test]
fn ages_read_minutes_hours_and_days() {
    let now = start();
    let ago = |secs| age(now, now - Duration::from_secs(secs));
    assert_eq!(ago(0), "just now");
    assert_eq!(ago(59), "just now");
    assert_eq!(ago(60), "1 minute ago");
    assert_eq!(ago(3_599), "59 minutes ago");
    assert_eq!(ago(3_600), "1 hour ago");
    assert_eq!(ago(86_399), "23 hours ago");
    assert_eq!(ago(86_400), "1 day ago");
    assert_eq!(ago(3 * 86_400), "3 days ago");
    // A memory from the future (a clock set back) is "just now", never a panic.
    assert_eq!(age(now, now + Duration::from_secs(500)), "just now");
}

#[test]
fn the_injected_clock_gives_the_age_in_the_prompt() {
    let store = Arc::new(InMemoryStore::new(DIM));
    let clock = Arc::new(ManualClock::new(start()));
    let chain = Chain::new().with(
        Recall::new(Arc::new(HashedWords::new(DIM)), store.clone())
            .with_clock(clock.clone())
            .with_session("s1"),
    );
    let backend = reporting_model();
    let pipeline = Pipeline::new(Arc::new(backend.clone()), Config::new("m"), chain);
    let mut ctx = Context::default();
    block_on(pipeline.ask(&mut ctx, "Remember: my locker number is 47.")).unwrap();
    clock.advance(Duration::from_secs(3 * 86_400 + 60));
    let answer = block_on(pipeline.ask(&mut ctx, QUESTION)).unwrap();
    let second = system(&backend.requests()[1]).to_owned();
    assert!(
        second.contains(&format!("- (3 days ago) {FACT}")),
        "{second}"
    );
    assert_eq!(answer.value["answer"], "47");
    let stored = block_on(store.list(None)).unwrap();
    assert_eq!(stored[0].created_at, start());
}

#[test]
fn the_budget_cuts_recalled_memories_in_the_pipeline() {
    let store = Arc::new(InMemoryStore::new(DIM));
    let config = RecallConfig {
        max_chars: 64,
        ..RecallConfig::default()
    };
    let backend = reporting_model();
    let pipeline = Pipeline::new(
        Arc::new(backend.clone()),
        Config::new("m"),
        Chain::new().with(recall(&store, config)),
    );
    let mut ctx = Context::default();
    for message in [
        "Remember: my locker number is 47.",
        "My locker number is easy to forget.",
        "The locker number of my brother is 12.",
        QUESTION,
    ] {
        block_on(pipeline.ask(&mut ctx, message)).unwrap();
    }
    let last = system(&backend.requests()[3]).to_owned();
    // The most similar (63 characters) fits; the fact (44) would not fit after it.
    let lines: Vec<&str> = last.lines().filter(|l| l.starts_with("- (")).collect();
    assert_eq!(
        lines,
        ["- (just now) The user said: My locker number is easy to forget."],
        "{last}"
    );
    assert!(
        last.contains(
            "2 more recalled memories left out to stay within the recall budget of 64 characters"
        ),
        "{last}"
    );
}

#[test]
fn the_session_is_carried_and_restored() {
    let store = Arc::new(InMemoryStore::new(DIM));
    let first = Chain::new().with(recall(&store, RecallConfig::default()));
    let backend = reporting_model();
    let pipeline = Pipeline::new(Arc::new(backend.clone()), Config::new("m"), first.clone());
    let mut ctx = Context::default();
    block_on(pipeline.ask(&mut ctx, "Remember: my locker number is 47.")).unwrap();
    let saved = first.carry(&ctx).unwrap();
    assert_eq!(saved["recall"].version, STATE_VERSION);
    assert_eq!(saved["recall"].state, json!({"session_id": "s1"}));

    // Another process: the interceptor would start a new session, the restored one wins.
    let ask_in_new_process = |restore: bool| {
        let chain = Chain::new().with(
            Recall::new(Arc::new(HashedWords::new(DIM)), store.clone())
                .with_clock(Arc::new(ManualClock::new(start())))
                .with_session("other"),
        );
        let backend = reporting_model();
        let pipeline = Pipeline::new(Arc::new(backend.clone()), Config::new("m"), chain.clone());
        let mut next = Context::default();
        if restore {
            chain.restore(&saved, &mut next).unwrap();
        }
        block_on(pipeline.ask(&mut next, QUESTION)).unwrap().value["answer"].clone()
    };
    assert_eq!(ask_in_new_process(true), "47");
    assert_eq!(ask_in_new_process(false), "I don't know.");

    let newer = Carried {
        version: STATE_VERSION + 1,
        state: json!({"session_id": "s1"}),
    };
    let err = Recall::new(Arc::new(HashedWords::new(DIM)), store.clone())
        .restore(&newer, &mut Context::default())
        .unwrap_err();
    assert!(
        err.to_string().contains("newer than this claij reads"),
        "{err}"
    );
}

#[test]
fn the_exchange_is_stored_when_configured() {
    let store = Arc::new(InMemoryStore::new(DIM));
    let config = RecallConfig {
        store_exchange: true,
        ..RecallConfig::default()
    };
    let backend = reporting_model();
    let pipeline = Pipeline::new(
        Arc::new(backend.clone()),
        Config::new("m"),
        Chain::new().with(recall(&store, config)),
    );
    block_on(pipeline.ask(&mut Context::default(), "Remember: my locker number is 47.")).unwrap();
    let stored = block_on(store.list(None)).unwrap();
    assert_eq!(
        stored[0].text,
        format!("{FACT}\nUser: Remember: my locker number is 47.\nAnswer: Noted.")
    );
}

#[test]
fn the_schema_delta_asks_for_the_summary() {
    let store = Arc::new(InMemoryStore::new(DIM));
    let mut schema = Schema::default();
    recall(&store, RecallConfig::default())
        .pre_schema(&mut schema, &Context::default())
        .unwrap();
    assert_eq!(schema.deltas().len(), 1);
    assert_eq!(schema.deltas()[0].extension_id, SUMMARY_EXTENSION);
    assert_eq!(schema.deltas()[0].delta, summary_delta());
}

/// An embedder that notes the thread it ran on.
#[derive(Debug, Default)]
struct ThreadNoting {
    threads: Mutex<Vec<ThreadId>>,
}

impl Embedder for ThreadNoting {
    fn dim(&self) -> usize {
        DIM
    }
    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, BoxError> {
        self.threads
            .lock()
            .unwrap()
            .push(std::thread::current().id());
        HashedWords::new(DIM).embed(texts)
    }
}

#[test]
fn the_embedder_runs_off_the_runtime_thread() {
    let embedder = Arc::new(ThreadNoting::default());
    let store = Arc::new(InMemoryStore::new(DIM));
    let chain = Chain::new().with(Recall::new(embedder.clone(), store).with_session("s1"));
    let pipeline = Pipeline::new(Arc::new(reporting_model()), Config::new("m"), chain);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime
        .block_on(pipeline.ask(&mut Context::default(), "Hello there."))
        .unwrap();
    let threads = embedder.threads.lock().unwrap();
    assert_eq!(
        threads.len(),
        2,
        "the message and the summary were embedded"
    );
    let here = std::thread::current().id();
    assert!(
        threads.iter().all(|t| *t != here),
        "embedded on the runtime's thread"
    );
}

/// A store whose engine is down.
#[derive(Debug)]
struct Down;

impl MemoryStore for Down {
    fn add<'a>(&'a self, _: Vec<Record>) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(std::future::ready(Err(down())))
    }
    fn search<'a>(&'a self, _: Query<'a>) -> BoxFuture<'a, Result<Vec<Hit>, StoreError>> {
        Box::pin(std::future::ready(Err(down())))
    }
    fn list<'a>(&'a self, _: Option<&'a str>) -> BoxFuture<'a, Result<Vec<Record>, StoreError>> {
        Box::pin(std::future::ready(Err(down())))
    }
    fn forget<'a>(&'a self, _: Forget) -> BoxFuture<'a, Result<usize, StoreError>> {
        Box::pin(std::future::ready(Err(down())))
    }
}

fn down() -> StoreError {
    StoreError::Engine {
        store: "http://127.0.0.1:9/memories".into(),
        source: "connection refused".into(),
    }
}

#[test]
fn a_store_that_fails_is_a_hook_error_naming_recall_and_the_store() {
    let chain = Chain::new().with(Recall::new(Arc::new(HashedWords::new(DIM)), Arc::new(Down)));
    let backend = reporting_model();
    let pipeline = Pipeline::new(Arc::new(backend.clone()), Config::new("m"), chain);
    let err = block_on(pipeline.ask(&mut Context::default(), "Hello there.")).unwrap_err();
    let Error::Hook {
        interceptor,
        stage,
        source,
    } = &err
    else {
        panic!("expected a hook error, got {err:?}");
    };
    assert_eq!(
        (interceptor.as_str(), *stage),
        ("recall", Stage::PreRequest)
    );
    assert_eq!(
        source.to_string(),
        "http://127.0.0.1:9/memories: connection refused"
    );
    assert_eq!(backend.calls(), 0, "no request without the recall");
}

#[test]
fn an_embedder_of_another_dimension_than_the_store_is_a_typed_error() {
    let chain = Chain::new().with(Recall::new(
        Arc::new(HashedWords::new(8)),
        Arc::new(InMemoryStore::new(DIM)),
    ));
    let pipeline = Pipeline::new(Arc::new(reporting_model()), Config::new("m"), chain);
    let err = block_on(pipeline.ask(&mut Context::default(), "Hello there.")).unwrap_err();
    let Error::Hook { source, .. } = &err else {
        panic!("expected a hook error, got {err:?}");
    };
    assert_eq!(
        source.to_string(),
        "in-memory store: the query vector has 8 dimensions, the store holds 1024"
    );
}

#[test]
fn the_in_memory_store_passes_the_contract() {
    block_on(contract::all(|| InMemoryStore::new(contract::DIM))).unwrap();
}

/// The contract catches a store that ignores the floor, k, the session or duplicates.
#[test]
fn the_contract_fails_a_store_that_ignores_the_floor() {
    #[derive(Debug)]
    struct NoFloor(InMemoryStore);
    impl MemoryStore for NoFloor {
        fn add<'a>(&'a self, r: Vec<Record>) -> BoxFuture<'a, Result<(), StoreError>> {
            self.0.add(r)
        }
        fn search<'a>(&'a self, q: Query<'a>) -> BoxFuture<'a, Result<Vec<Hit>, StoreError>> {
            self.0.search(Query {
                min_similarity: -1.0,
                ..q
            })
        }
        fn list<'a>(
            &'a self,
            s: Option<&'a str>,
        ) -> BoxFuture<'a, Result<Vec<Record>, StoreError>> {
            self.0.list(s)
        }
        fn forget<'a>(&'a self, w: Forget) -> BoxFuture<'a, Result<usize, StoreError>> {
            self.0.forget(w)
        }
    }
    let err = block_on(contract::all(|| NoFloor(InMemoryStore::new(contract::DIM)))).unwrap_err();
    assert!(err.starts_with("search_keeps_the_floor:"), "{err}");
}

#[test]
fn hashed_words_is_deterministic_and_normalised() {
    let e = HashedWords::new(64);
    assert_eq!(e.vector("Locker 47"), e.vector("locker, 47!"));
    let norm: f32 = e.vector("a b c").iter().map(|x| x * x).sum();
    assert!((norm - 1.0).abs() < 1e-5);
    assert!(e.vector("").iter().all(|x| *x == 0.0));
    assert!(cosine(&e.vector(FACT), &e.vector(QUESTION)) > 0.3);
}

#[test]
fn a_store_that_fails_under_skip_leaves_the_turn_to_go_on_and_says_so() {
    let chain = Chain::new().with_policy(
        Recall::new(Arc::new(HashedWords::new(DIM)), Arc::new(Down)),
        crate::OnError::Skip,
    );
    let backend = reporting_model();
    let pipeline = Pipeline::new(Arc::new(backend.clone()), Config::new("m"), chain);
    let answer = block_on(pipeline.ask(&mut Context::default(), QUESTION)).unwrap();
    assert_eq!(answer.value["answer"], "I don't know.");
    assert_eq!(
        answer.skipped,
        [
            "recall/pre_request: http://127.0.0.1:9/memories: connection refused",
            "recall/post_response: http://127.0.0.1:9/memories: connection refused",
        ]
    );
    assert!(!system(&backend.requests()[0]).contains("Recalled memories"));
}
