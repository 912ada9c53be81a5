//! The recall@k harness: a held fact, N distracting turns, then a question about the fact, run
//! through the real pipeline (`claij_interceptors::Pipeline`) with a scripted model whose replies
//! carry the summary of each user message, as a model would; the fact counts as held when its
//! summary is in the prompt the model receives for the question.
//!
//! Shared by the bench (`benches/recall_at_k.rs`, the embedded sentence model) and its test
//! (`tests/it/recall_at_k.rs`, the `HashedWords` test double). The data is
//! `fixtures/recall/probes.json` (see the README there).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::SystemTime;

use claij::interceptors::builtin::memory::{Bounded, Memory, Window};
use claij::interceptors::builtin::recall::{
    Embedder, InMemoryStore, ManualClock, Recall, RecallConfig,
};
use claij::interceptors::{BoxError, Chain, Config, Context, Pipeline};
use claij_test_support::Scripted;
use serde::Deserialize;
use serde_json::json;

/// The probes, the opener and the distractors.
pub(crate) const PROBES_JSON: &str = include_str!("../../../../fixtures/recall/probes.json");

/// The window memory's size: `Window` has no default, and 10 is what the recall interceptor's
/// 60-turn test compares against.
pub(crate) const WINDOW_SIZE: usize = 10;

/// What the scripted model answers to the question (the turn's own summary is never looked at).
const QUESTION_SUMMARY: &str = "The user asked about something said earlier.";

/// One user message and the summary the scripted model gives of it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(crate) struct Turn {
    pub(crate) message: String,
    pub(crate) summary: String,
}

/// A fact stated in turn 2 and a question about it, worded apart from it; its near misses are
/// distractors of the same kind (other pets, other dates).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(crate) struct Probe {
    pub(crate) id: String,
    pub(crate) fact: Turn,
    pub(crate) question: String,
    pub(crate) near_misses: Vec<Turn>,
}

/// `fixtures/recall/probes.json`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(crate) struct Corpus {
    /// Turn 1 of every conversation.
    pub(crate) opener: Turn,
    pub(crate) probes: Vec<Probe>,
    /// General distractors, shared by every probe.
    pub(crate) distractors: Vec<Turn>,
}

/// Why a probe could not be run.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HarnessError {
    #[error("fixtures/recall/probes.json: {0}")]
    Corpus(#[from] serde_json::Error),
    #[error(
        "probe {probe}: {n} distracting turns need {n} distinct distractors, the corpus has {have}"
    )]
    TooFewDistractors {
        probe: String,
        n: usize,
        have: usize,
    },
    #[error("probe {probe}, {strategy}, {n} distracting turns: {source}")]
    Pipeline {
        probe: String,
        strategy: String,
        n: usize,
        source: Box<claij::interceptors::Error>,
    },
    #[error("probe {probe}: the model received no prompt for the question")]
    NoPrompt { probe: String },
}

/// A memory under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Strategy {
    /// The recall interceptor recalling at most `k` memories (its other settings the defaults).
    Recall { k: usize },
    /// The `Memory` interceptor with `Bounded::default()`.
    Bounded,
    /// The `Memory` interceptor with `Window::new(WINDOW_SIZE)`.
    Window,
}

impl Strategy {
    /// `recall k=5`, `bounded`, `window 10`.
    pub(crate) fn label(self) -> String {
        match self {
            Strategy::Recall { k } => format!("recall k={k}"),
            Strategy::Bounded => "bounded".to_owned(),
            Strategy::Window => format!("window {WINDOW_SIZE}"),
        }
    }
}

/// How many probes held their fact for one strategy and N.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cell {
    pub(crate) strategy: Strategy,
    pub(crate) n: usize,
    /// The probes run.
    pub(crate) probes: usize,
    /// The ids of the probes whose fact was in the question's prompt.
    pub(crate) held: Vec<String>,
}

impl Corpus {
    /// The corpus of the repository's fixture.
    pub(crate) fn load() -> Result<Corpus, HarnessError> {
        Corpus::parse(PROBES_JSON)
    }

    /// A corpus from its JSON.
    pub(crate) fn parse(text: &str) -> Result<Corpus, HarnessError> {
        Ok(serde_json::from_str(text)?)
    }

    /// The `n` distracting turns of probe `index`, in order: its own near misses spread over
    /// them (at `(j + 1) * n / (m + 1)`, so all of them even at small `n`), the rest drawn without
    /// repeats from the general distractors and the other probes' near misses, in an order fixed
    /// by the probe's index.
    pub(crate) fn distractors(&self, index: usize, n: usize) -> Result<Vec<&Turn>, HarnessError> {
        let probe = &self.probes[index];
        let own: Vec<&Turn> = probe.near_misses.iter().take(n).collect();
        let mut pool: Vec<&Turn> = self.distractors.iter().collect();
        for (i, other) in self.probes.iter().enumerate() {
            if i != index {
                pool.extend(other.near_misses.iter());
            }
        }
        let fill = n - own.len();
        if pool.len() < fill {
            return Err(HarnessError::TooFewDistractors {
                probe: probe.id.clone(),
                n,
                have: pool.len() + own.len(),
            });
        }
        shuffle(&mut pool, index as u64);
        let mut turns: Vec<&Turn> = pool.into_iter().take(fill).collect();
        let m = own.len();
        for (j, near) in own.into_iter().enumerate() {
            let at = (j + 1) * n / (m + 1);
            turns.insert(at.min(turns.len()), near);
        }
        Ok(turns)
    }

    /// Every text the pipeline embeds (messages, summaries, questions), each once.
    pub(crate) fn texts(&self) -> Vec<String> {
        let mut seen = HashSet::new();
        let mut texts = Vec::new();
        let turns = std::iter::once(&self.opener)
            .chain(self.distractors.iter())
            .chain(
                self.probes
                    .iter()
                    .flat_map(|p| std::iter::once(&p.fact).chain(p.near_misses.iter())),
            );
        let all = turns
            .flat_map(|t| [t.message.as_str(), t.summary.as_str()])
            .chain(self.probes.iter().map(|p| p.question.as_str()))
            .chain([QUESTION_SUMMARY]);
        for text in all {
            if seen.insert(text) {
                texts.push(text.to_owned());
            }
        }
        texts
    }
}

/// A Fisher-Yates shuffle driven by splitmix64 from `seed`: the same order on every machine.
fn shuffle<T>(items: &mut [T], seed: u64) {
    let mut state = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut next = || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    for i in (1..items.len()).rev() {
        let j = usize::try_from(next() % (i as u64 + 1)).unwrap_or(0);
        items.swap(i, j);
    }
}

/// Whether the system prompt's memory section holds `summary`: for recall a recalled memory's
/// line `- (<age>) <summary>` under "Recalled memories:", for the memory interceptor a summary line
/// `- <summary>` under "Previous context:".
pub(crate) fn held(system: &str, strategy: Strategy, summary: &str) -> bool {
    let recall = matches!(strategy, Strategy::Recall { .. });
    let header = if recall {
        "Recalled memories:"
    } else {
        "Previous context:"
    };
    let (recalled, kept) = (format!(") {summary}"), format!("- {summary}"));
    let line_holds = |line: &str| {
        if recall {
            line.starts_with("- (") && line.ends_with(&recalled)
        } else {
            line == kept
        }
    };
    let Some(start) = system.find(header) else {
        return false;
    };
    // The section runs to the next section the pipeline pushed (a paragraph that is not one of the
    // memory section's own).
    let section = &system[start..];
    let mut lines = section.lines();
    lines.next();
    for line in lines {
        if line_holds(line) {
            return true;
        }
        let own = line.is_empty()
            || line.starts_with("- ")
            || line.starts_with('(')
            || line.starts_with("Turn summaries")
            || line.starts_with("Long-term insights");
        if !own {
            return false;
        }
    }
    false
}

/// Runs probe `index` with `n` distracting turns through the pipeline with `strategy`; whether the
/// question's prompt held the fact.
pub(crate) fn run_probe(
    corpus: &Corpus,
    index: usize,
    n: usize,
    strategy: Strategy,
    embedder: &Arc<dyn Embedder>,
) -> Result<bool, HarnessError> {
    let probe = &corpus.probes[index];
    let mut turns = vec![&corpus.opener, &probe.fact];
    turns.extend(corpus.distractors(index, n)?);
    let reply = |summary: &str| {
        json!({"answer": "Noted.", "state": "chat", "summary": summary}).to_string()
    };
    let replies: Vec<String> = turns
        .iter()
        .map(|t| reply(&t.summary))
        .chain([reply(QUESTION_SUMMARY)])
        .collect();
    let backend = Scripted::replies(replies);
    let chain = match strategy {
        Strategy::Recall { k } => {
            let clock = Arc::new(ManualClock::new(SystemTime::UNIX_EPOCH));
            let store = Arc::new(InMemoryStore::new(embedder.dim()));
            let config = RecallConfig {
                k,
                ..RecallConfig::default()
            };
            Chain::new().with(
                Recall::new(Arc::clone(embedder), store)
                    .with_session(probe.id.clone())
                    .with_clock(clock)
                    .with_config(config),
            )
        }
        Strategy::Bounded => Chain::new().with(Memory::new(Bounded::default())),
        Strategy::Window => Chain::new().with(Memory::new(Window::new(WINDOW_SIZE))),
    };
    let pipeline = Pipeline::new(Arc::new(backend.clone()), Config::new("m"), chain);
    let mut ctx = Context::default();
    let fail = |source| HarnessError::Pipeline {
        probe: probe.id.clone(),
        strategy: strategy.label(),
        n,
        source: Box::new(source),
    };
    for turn in &turns {
        futures_executor::block_on(pipeline.ask(&mut ctx, &turn.message)).map_err(fail)?;
    }
    futures_executor::block_on(pipeline.ask(&mut ctx, &probe.question)).map_err(fail)?;
    let requests = backend.requests();
    let system = requests
        .last()
        .and_then(|r| r.system.clone())
        .ok_or_else(|| HarnessError::NoPrompt {
            probe: probe.id.clone(),
        })?;
    Ok(held(&system, strategy, &probe.fact.summary))
}

/// Every probe of `corpus` at each of `ns` for each of `strategies`.
pub(crate) fn measure(
    corpus: &Corpus,
    ns: &[usize],
    strategies: &[Strategy],
    embedder: &Arc<dyn Embedder>,
) -> Result<Vec<Cell>, HarnessError> {
    let mut cells = Vec::new();
    for &strategy in strategies {
        for &n in ns {
            let mut held = Vec::new();
            for (index, probe) in corpus.probes.iter().enumerate() {
                if run_probe(corpus, index, n, strategy, embedder)? {
                    held.push(probe.id.clone());
                }
            }
            cells.push(Cell {
                strategy,
                n,
                probes: corpus.probes.len(),
                held,
            });
        }
    }
    Ok(cells)
}

/// An embedder whose vectors were computed ahead, in batches, by another: the pipeline embeds one
/// text per call, so the bench embeds every text of the corpus once, in batches of 64, and the runs
/// look them up. A text not computed ahead goes to the inner embedder (and is counted).
#[derive(Debug)]
pub(crate) struct Precomputed {
    inner: Arc<dyn Embedder>,
    vectors: HashMap<String, Vec<f32>>,
    misses: AtomicUsize,
}

impl Precomputed {
    /// The vectors of `texts` from `inner`, `batch` texts per call.
    pub(crate) fn new(
        inner: Arc<dyn Embedder>,
        texts: &[String],
        batch: usize,
    ) -> Result<Self, BoxError> {
        let mut vectors = HashMap::with_capacity(texts.len());
        for chunk in texts.chunks(batch.max(1)) {
            let embedded = inner.embed(chunk)?;
            if embedded.len() != chunk.len() {
                return Err(format!(
                    "the embedder returned {} vectors for {} texts",
                    embedded.len(),
                    chunk.len()
                )
                .into());
            }
            vectors.extend(chunk.iter().cloned().zip(embedded));
        }
        Ok(Self {
            inner,
            vectors,
            misses: AtomicUsize::new(0),
        })
    }

    /// The texts embedded since, not computed ahead.
    pub(crate) fn misses(&self) -> usize {
        self.misses.load(Ordering::Relaxed)
    }
}

impl Embedder for Precomputed {
    fn dim(&self) -> usize {
        self.inner.dim()
    }

    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, BoxError> {
        let missing: Vec<String> = texts
            .iter()
            .filter(|t| !self.vectors.contains_key(*t))
            .cloned()
            .collect();
        let mut fresh = if missing.is_empty() {
            Vec::new()
        } else {
            self.misses.fetch_add(missing.len(), Ordering::Relaxed);
            self.inner.embed(&missing)?
        }
        .into_iter();
        texts
            .iter()
            .map(|t| match self.vectors.get(t) {
                Some(v) => Ok(v.clone()),
                None => fresh
                    .next()
                    .ok_or_else(|| BoxError::from("the embedder returned too few vectors")),
            })
            .collect()
    }
}
