//! The 60-turn conversation every store runs with the same code: a fact given on turn 2 is asked
//! for on turn 60, and a [`ReportingModel`] answers it only when its prompt holds it.
//!
//! [`run`] talks the 60 turns through a [`Recall`] on the given store and embedder (session
//! `"s1"`, a [`ManualClock`]); [`check_recalled`] says whether turn 60's prompt held the fact, the
//! model answered it and every turn's summary was stored. [`run_chain`] talks them through any
//! chain, e.g. a window memory that has lost the fact by then.
//!
//! ```
//! use std::sync::Arc;
//! use claij_interceptors::builtin::recall::{HashedWords, InMemoryStore, scenario};
//!
//! let store = Arc::new(InMemoryStore::new(1024));
//! let turns = futures_executor::block_on(scenario::run(store.clone(), Arc::new(HashedWords::new(1024))))?;
//! futures_executor::block_on(scenario::check_recalled(&turns, store.as_ref()))?;
//! # Ok::<(), String>(())
//! ```

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use claij_backends::{Backend, BoxFuture, Capabilities, ChatRequest, ChatResponse, Error};
use serde_json::{Value, json};

use super::{Embedder, ManualClock, MemoryStore, Recall, RecallConfig};
use crate::{Chain, Config, Context, Pipeline};

/// The fact given on turn 2, as the model summarises it.
pub const FACT: &str = "The user's locker number is 47.";
/// The question of the last turn.
pub const QUESTION: &str = "What is my locker number?";
/// How many turns.
pub const TURNS: usize = 60;
/// The session the memories are kept under.
pub const SESSION: &str = "s1";

/// The clock's start: 2027-01-15.
pub fn start() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)
}

/// The [`TURNS`] messages: small talk, the fact on turn 2, distractions that share words with the
/// question ("what", "is", "my", "number") but fewer than the fact, and the question on the last.
pub fn messages() -> Vec<String> {
    let mut out = vec![
        "Hello there.".to_owned(),
        "Remember: my locker number is 47.".to_owned(),
    ];
    for n in 3..TURNS {
        out.push(match n % 3 {
            0 => format!("What is the weather like in city {n}?"),
            1 => format!(
                "My favourite colour today is a shade of red, code {}.",
                n * 7
            ),
            _ => format!("Tell me a story about dragon {n}."),
        });
    }
    out.push(QUESTION.to_owned());
    out
}

fn reply(answer: &str, summary: &str) -> ChatResponse {
    ChatResponse::text(json!({"answer": answer, "state": "chat", "summary": summary}).to_string())
}

/// What the model that says what its prompt held answers `request`: 47 to the question only when
/// its system prompt holds [`FACT`]; each turn summarised from the user's message.
pub fn reporting_reply(request: &ChatRequest) -> ChatResponse {
    let user = request
        .messages
        .last()
        .map(|m| m.content.clone())
        .unwrap_or_default();
    let knows = request.system.as_deref().unwrap_or_default().contains(FACT);
    if user.contains("locker number is 47") {
        reply("Noted.", FACT)
    } else if user == QUESTION {
        reply(
            if knows { "47" } else { "I don't know." },
            "The user asked for their locker number.",
        )
    } else {
        reply("Noted.", &format!("The user said: {user}"))
    }
}

/// A backend answering with [`reporting_reply`], keeping each request's system prompt.
#[derive(Debug, Default)]
pub struct ReportingModel {
    systems: Mutex<Vec<String>>,
}

impl ReportingModel {
    /// The system prompt of each request so far.
    pub fn systems(&self) -> Vec<String> {
        self.systems
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Backend for ReportingModel {
    fn provider(&self) -> &str {
        "reporting"
    }

    fn capabilities(&self, _model: &str) -> Capabilities {
        Capabilities::prompted()
    }

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, Error>> {
        self.systems
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(request.system.clone().unwrap_or_default());
        Box::pin(std::future::ready(Ok(reporting_reply(request))))
    }
}

/// What a 60-turn conversation left.
#[derive(Debug)]
pub struct Turns {
    /// Each turn's system prompt.
    pub systems: Vec<String>,
    /// Each turn's answer.
    pub answers: Vec<Value>,
    /// The conversation's context after the last turn.
    pub context: Context,
}

/// The [`TURNS`] messages through `chain` to a [`ReportingModel`].
///
/// # Errors
///
/// A turn failed: its number and the error.
pub async fn run_chain(chain: Chain) -> Result<Turns, String> {
    let model = Arc::new(ReportingModel::default());
    let pipeline = Pipeline::new(model.clone(), Config::new("m"), chain);
    let mut context = Context::default();
    let mut answers = Vec::with_capacity(TURNS);
    for (n, message) in messages().iter().enumerate() {
        let answer = pipeline
            .ask(&mut context, message)
            .await
            .map_err(|e| format!("turn {}: {e}", n + 1))?;
        answers.push(answer.value["answer"].clone());
    }
    Ok(Turns {
        systems: model.systems(),
        answers,
        context,
    })
}

/// The [`TURNS`] messages through a [`Recall`] on `store` and `embedder` with its default
/// configuration, session [`SESSION`] and a [`ManualClock`] at [`start`].
///
/// # Errors
///
/// As [`run_chain`].
pub async fn run(
    store: Arc<dyn MemoryStore>,
    embedder: Arc<dyn Embedder>,
) -> Result<Turns, String> {
    run_with(store, embedder, RecallConfig::default()).await
}

/// [`run`] with the recall configuration `config`.
///
/// # Errors
///
/// As [`run_chain`].
pub async fn run_with(
    store: Arc<dyn MemoryStore>,
    embedder: Arc<dyn Embedder>,
    config: RecallConfig,
) -> Result<Turns, String> {
    let recall = Recall::new(embedder, store)
        .with_clock(Arc::new(ManualClock::new(start())))
        .with_session(SESSION)
        .with_config(config);
    run_chain(Chain::new().with(recall)).await
}

/// Turn 60's prompt held the fact as a recalled memory, the model answered 47, and `store` holds
/// every turn's summary under [`SESSION`], the fact second.
///
/// # Errors
///
/// What did not hold, with turn 60's prompt.
pub async fn check_recalled(turns: &Turns, store: &dyn MemoryStore) -> Result<(), String> {
    let last = turns.systems.last().map_or("", String::as_str);
    if turns.systems.len() != TURNS || !last.contains(&format!(") {FACT}")) {
        return Err(format!(
            "{} prompts; turn {TURNS}'s does not recall the fact:\n{last}",
            turns.systems.len()
        ));
    }
    if turns.answers.last() != Some(&json!("47")) {
        return Err(format!("the model answered {:?}", turns.answers.last()));
    }
    let stored = store
        .list(Some(SESSION))
        .await
        .map_err(|e| format!("list: {e}"))?;
    if stored.len() != TURNS || stored[1].text != FACT {
        return Err(format!(
            "{} memories stored (expected {TURNS}, the fact second): {:?}",
            stored.len(),
            stored.iter().take(3).map(|r| &r.text).collect::<Vec<_>>()
        ));
    }
    Ok(())
}
