//! The recall@k bench's harness (`benches/recall_at_k/harness.rs`) and data
//! (`fixtures/recall/probes.json`), on the `HashedWords` test double: a harness that counts a
//! fact held when the prompt does not hold it, or runs fewer distracting turns than asked, fails.

#[allow(dead_code)]
#[path = "../../benches/recall_at_k/harness.rs"]
mod harness;

use std::collections::HashSet;
use std::sync::Arc;

use claij::interceptors::builtin::recall::{Embedder, HashedWords};
use harness::{Corpus, Precomputed, Probe, Strategy, Turn, held, measure};

fn turn(message: &str, summary: &str) -> Turn {
    Turn {
        message: message.to_owned(),
        summary: summary.to_owned(),
    }
}

/// The repository's distractors with two probes whose outcome on `HashedWords` is known: `echo`'s
/// question is its fact's summary word for word (the most similar memory), `apart`'s shares no
/// word with anything said.
fn known_corpus() -> Corpus {
    let mut corpus = Corpus::load().unwrap();
    corpus.probes = vec![
        Probe {
            id: "echo".into(),
            fact: turn("My locker code is 4812.", "The user's locker code is 4812."),
            question: "The user's locker code is 4812.".into(),
            near_misses: vec![turn(
                "My bike lock is 3307.",
                "The user's bike lock is 3307.",
            )],
        },
        Probe {
            id: "apart".into(),
            fact: turn(
                "My parrot is named Quillon.",
                "The lighthouse keeper's parrot is named Quillon.",
            ),
            question: "Zyxqv wobbleton?".into(),
            near_misses: vec![turn("My cat is Pepper.", "The user's cat is Pepper.")],
        },
    ];
    corpus
}

fn ids(ids: &[&str]) -> Vec<String> {
    ids.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn the_harness_counts_only_what_the_prompt_holds() {
    let corpus = known_corpus();
    let embedder: Arc<dyn Embedder> = Arc::new(HashedWords::new(1024));
    let strategies = [
        Strategy::Recall { k: 1 },
        Strategy::Bounded,
        Strategy::Window,
    ];
    let cells = measure(&corpus, &[10, 50], &strategies, &embedder).unwrap();
    let held_by = |strategy, n| {
        let cell = cells
            .iter()
            .find(|c| c.strategy == strategy && c.n == n)
            .unwrap();
        assert_eq!(cell.probes, 2);
        cell.held.clone()
    };
    // Recall finds the memory the question repeats, among 50 distractions, and not the other.
    assert_eq!(held_by(Strategy::Recall { k: 1 }, 10), ids(&["echo"]));
    assert_eq!(held_by(Strategy::Recall { k: 1 }, 50), ids(&["echo"]));
    // 12 short summaries fit the bounded memory's 20 and 2,000 characters; 52 do not.
    assert_eq!(held_by(Strategy::Bounded, 10), ids(&["echo", "apart"]));
    assert_eq!(held_by(Strategy::Bounded, 50), ids(&[]));
    // The window of 10 holds the last 10 summaries: distractions only.
    assert_eq!(held_by(Strategy::Window, 10), ids(&[]));
}

#[test]
fn a_summary_counts_only_inside_its_section() {
    let summary = "The user's dog is called Biscuit.";
    let recall = Strategy::Recall { k: 5 };
    let inside = format!(
        "Be helpful.\n\nRecalled memories: notes.\n- (2 minutes ago) Other.\n- (1 hour ago) {summary}\n\nAnswer in JSON."
    );
    assert!(held(&inside, recall, summary));
    let after = format!(
        "Recalled memories: notes.\n- (2 minutes ago) Other.\n\nAnswer in JSON.\n- (1 hour ago) {summary}"
    );
    assert!(!held(&after, recall, summary));
    assert!(!held(&format!("- (just now) {summary}"), recall, summary));
    // The memory interceptor's lines have no age; a recall line is not one.
    let memory = format!(
        "Previous context: notes.\n\nTurn summaries, oldest first:\n- Hello.\n- {summary}\n\nAnswer in JSON."
    );
    assert!(held(&memory, Strategy::Bounded, summary));
    assert!(!held(&memory, recall, summary));
    assert!(!held(&inside, Strategy::Window, summary));
}

#[test]
fn the_corpus_has_distinct_facts_and_enough_distractors() {
    let corpus = Corpus::load().unwrap();
    assert!(corpus.probes.len() >= 20, "{} probes", corpus.probes.len());
    let ids: HashSet<&str> = corpus.probes.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids.len(), corpus.probes.len(), "probe ids repeat");
    let every: Vec<&Turn> = std::iter::once(&corpus.opener)
        .chain(&corpus.distractors)
        .chain(corpus.probes.iter().flat_map(|p| &p.near_misses))
        .collect();
    for (index, probe) in corpus.probes.iter().enumerate() {
        assert!(probe.near_misses.len() >= 2, "{}: near misses", probe.id);
        // No other turn says the fact, so only the fact's own turn can put it in a prompt.
        for other in &every {
            assert!(!other.summary.contains(&probe.fact.summary), "{}", probe.id);
        }
        for n in [10, 50, 200] {
            let turns = corpus.distractors(index, n).unwrap();
            assert_eq!(turns.len(), n, "{} at {n}", probe.id);
            let distinct: HashSet<&str> = turns.iter().map(|t| t.message.as_str()).collect();
            assert_eq!(
                distinct.len(),
                n,
                "{} at {n}: a distractor repeats",
                probe.id
            );
            for near in &probe.near_misses {
                assert!(
                    turns.contains(&near),
                    "{} at {n}: near miss left out",
                    probe.id
                );
            }
            assert_eq!(
                turns,
                corpus.distractors(index, n).unwrap(),
                "not deterministic"
            );
        }
    }
    assert_ne!(
        corpus.distractors(0, 50).unwrap()[..10],
        corpus.distractors(1, 50).unwrap()[..10],
        "every probe gets the same order"
    );
    let too_many = corpus.distractors(0, 10_000).unwrap_err().to_string();
    assert!(
        too_many.contains("probe dog-name: 10000 distracting turns"),
        "{too_many}"
    );
}

/// Words that carry no meaning of their own; any other word a question shares with its fact would
/// let lexical overlap carry the recall.
const STOP_WORDS: &[&str] = &[
    "a", "an", "the", "i", "i'm", "me", "my", "we", "our", "we're", "user", "user's", "is", "are",
    "am", "was", "be", "do", "does", "did", "to", "of", "in", "on", "at", "by", "for", "with",
    "from", "and", "or", "if", "it", "what", "which", "who", "when", "where", "how", "way", "any",
    "there", "that", "this", "s", "next", "every",
];

fn key_words(text: &str) -> HashSet<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .map(|w| w.trim_matches('\'').to_lowercase())
        .filter(|w| !w.is_empty() && !STOP_WORDS.contains(&w.as_str()))
        .map(|w| w.strip_suffix("'s").map_or(w.clone(), str::to_owned))
        .map(|w| w.strip_suffix('s').map_or(w.clone(), str::to_owned))
        .collect()
}

#[test]
fn no_question_shares_a_key_word_with_its_fact() {
    let corpus = Corpus::load().unwrap();
    for probe in &corpus.probes {
        let question = key_words(&probe.question);
        let fact: HashSet<String> = key_words(&probe.fact.message)
            .union(&key_words(&probe.fact.summary))
            .cloned()
            .collect();
        let shared: Vec<&String> = question.intersection(&fact).collect();
        assert!(shared.is_empty(), "{}: {shared:?}", probe.id);
    }
    // The check itself sees a shared word.
    assert!(key_words("What is my dog's name?").contains("dog"));
}

#[test]
fn precomputed_vectors_are_the_embedders_own() {
    let inner = HashedWords::new(64);
    let texts = vec![
        "one fish".to_owned(),
        "two fish".to_owned(),
        "red".to_owned(),
    ];
    let ahead = Precomputed::new(Arc::new(inner), &texts, 2).unwrap();
    let asked = vec![
        "two fish".to_owned(),
        "blue".to_owned(),
        "one fish".to_owned(),
    ];
    let vectors = ahead.embed(&asked).unwrap();
    assert_eq!(vectors, inner.embed(&asked).unwrap());
    assert_eq!(ahead.misses(), 1, "only `blue` was not embedded ahead");
}
