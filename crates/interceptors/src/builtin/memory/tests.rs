//! Tests of the memory strategies and the recall text.

use super::*;

/// Stores `summaries` (one per turn, from turn 0) through `strategy` and checks what is kept.
#[track_caller]
fn check(strategy: &dyn MemoryStrategy, summaries: &[&str], expected: &[&str]) {
    let mut memory = context::MemoryState::default();
    for (number, summary) in (0..).zip(summaries) {
        strategy.store(
            &mut memory,
            &Turn {
                number,
                summary,
                insights: None,
            },
        );
    }
    assert_eq!(memory.summaries, expected);
}

#[test]
fn bounded_keeps_everything_within_budget() {
    check(
        &Bounded::new(100, 10),
        &["a", "bb", "ccc"],
        &["a", "bb", "ccc"],
    );
}

#[test]
fn bounded_drops_oldest_past_the_character_budget() {
    check(&Bounded::new(5, 10), &["aa", "bb", "cc"], &["bb", "cc"]);
    check(&Bounded::new(4, 10), &["aa", "bb", "cc"], &["bb", "cc"]);
    check(&Bounded::new(3, 10), &["aa", "bb", "cc"], &["cc"]);
}

#[test]
fn bounded_counts_characters_not_bytes() {
    check(&Bounded::new(4, 10), &["éé", "üü"], &["éé", "üü"]);
}

#[test]
fn bounded_drops_oldest_past_the_count_budget() {
    check(&Bounded::new(100, 2), &["a", "b", "c", "d"], &["c", "d"]);
}

#[test]
fn bounded_cuts_a_summary_longer_than_the_budget() {
    check(&Bounded::new(4, 10), &["aa", "abcdef"], &["abc…"]);
    check(&Bounded::new(0, 10), &["aa"], &[]);
}

#[test]
fn bounded_cuts_a_summary_longer_than_its_own_cap() {
    check(
        &Bounded::new(10, 10).with_max_summary_chars(3),
        &["aa", "abcdef", "bb"],
        &["aa", "ab…", "bb"],
    );
}

/// One rambling summary (the embedded model's can run to the whole budget) does not push turn 1's
/// fact out: the default keeps at least five summaries of the longest kind.
#[test]
fn bounded_default_keeps_an_early_fact_past_a_rambling_summary() {
    let fact = "The user's locker number is 47.";
    let ramble = "The answer to the question ".repeat(200);
    let mut summaries = vec![fact];
    summaries.extend(std::iter::repeat_n(ramble.as_str(), 4));
    let mut memory = context::MemoryState::default();
    for (number, summary) in (0..).zip(&summaries) {
        Bounded::default().store(
            &mut memory,
            &Turn {
                number,
                summary,
                insights: None,
            },
        );
    }
    assert_eq!(memory.summaries.len(), 5);
    assert_eq!(memory.summaries[0], fact);
    assert!(
        memory.summaries[1..]
            .iter()
            .all(|s| s.chars().count() == 400 && s.ends_with('…'))
    );
}

#[test]
fn window_keeps_the_last_n() {
    check(&Window::new(2), &["a", "b", "c"], &["b", "c"]);
    check(&Window::new(5), &["a", "b"], &["a", "b"]);
    check(&Window::new(0), &["a", "b"], &[]);
}

#[test]
fn hierarchical_refresh_turns() {
    let every_3 = Hierarchical::new(3);
    let refreshes: Vec<u64> = (0..9).filter(|&t| every_3.asks_insights(t)).collect();
    assert_eq!(refreshes, [2, 5, 8]);
    assert!((0..3).all(|t| Hierarchical::new(1).asks_insights(t)));
    assert_eq!(Hierarchical::new(0).every, 1);
    assert!(!Window::new(3).asks_insights(2));
}

#[test]
fn hierarchical_insights_replace_older_summaries_on_refresh_turns() {
    let strategy = Hierarchical::new(2);
    let mut memory = context::MemoryState::default();
    let turns = [
        (0, "s0", None),
        (1, "s1", Some("i1")),
        (2, "s2", Some("ignored: not a refresh turn")),
        (3, "s3", Some("i3")),
        (4, "s4", None),
    ];
    let mut seen = Vec::new();
    for (number, summary, insights) in turns {
        strategy.store(
            &mut memory,
            &Turn {
                number,
                summary,
                insights,
            },
        );
        seen.push((memory.summaries.join(","), memory.insights.clone()));
    }
    let some = |s: &str| Some(s.to_owned());
    assert_eq!(
        seen,
        [
            ("s0".to_owned(), None),
            ("s1".to_owned(), some("i1")),
            ("s1,s2".to_owned(), some("i1")),
            ("s3".to_owned(), some("i3")),
            ("s3,s4".to_owned(), some("i3")),
        ]
    );
}

#[test]
fn hierarchical_bounds_summaries_when_a_refresh_has_no_insights() {
    check(&Hierarchical::new(2), &["a", "b", "c", "d"], &["c", "d"]);
}

#[test]
fn recall_is_nothing_when_memory_is_empty() {
    assert_eq!(recall(&context::MemoryState::default()), None);
    let blank = context::MemoryState {
        summaries: Vec::new(),
        insights: Some("  ".into()),
    };
    assert_eq!(recall(&blank), None);
}

#[test]
fn recall_without_insights_lists_summaries() {
    let memory = context::MemoryState {
        summaries: vec!["one".into(), "two".into()],
        insights: None,
    };
    assert_eq!(
        recall(&memory).as_deref(),
        Some(
            "Previous context: what you noted in earlier turns of this conversation. Rely on it when \
             the user refers to something said before.\n\nTurn summaries, oldest first:\n- one\n- two"
        )
    );
}

#[test]
fn remember_ignores_missing_and_blank_summaries() {
    let mut ctx = Context::default();
    remember(&Window::new(3), &json!({"answer": "x"}), &mut ctx);
    remember(&Window::new(3), &json!({"summary": "  "}), &mut ctx);
    remember(&Window::new(3), &json!({"summary": 3}), &mut ctx);
    assert!(ctx.memory.is_empty());
    remember(&Window::new(3), &json!({"summary": " kept "}), &mut ctx);
    assert_eq!(ctx.memory.summaries, ["kept"]);
}
