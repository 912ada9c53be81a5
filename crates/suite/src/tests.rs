//! A test's tally: its usage is the calls' sum; its cost is unknown when one call's is, never
//! counted as 0.

use claij_backends::Usage;
use claij_interceptors::Verdict;

use super::Tally;

fn usage(cost: Option<f64>) -> Usage {
    Usage {
        input_tokens: 10,
        output_tokens: 5,
        cache_write_tokens: 3,
        cost_usd: cost,
        ..Usage::default()
    }
}

fn tally(costs: &[Option<f64>]) -> Tally {
    let usages: Vec<Usage> = costs.iter().map(|c| usage(*c)).collect();
    let mut tally = Tally::default();
    for usage in &usages {
        tally.count([(&Verdict::Valid, usage)]);
    }
    tally
}

#[test]
fn the_cost_sums_the_calls_when_each_is_known() {
    let tally = tally(&[Some(0.25), Some(0.5), Some(0.0)]);
    assert_eq!(tally.cost(), Some(0.75));
    // Every kind of token adds up, as `Usage`'s own sum does it.
    let usage = tally.usage;
    assert_eq!(
        (
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_write_tokens
        ),
        (30, 15, 9)
    );
}

#[test]
fn one_unknown_cost_makes_the_tests_cost_unknown() {
    assert_eq!(tally(&[Some(0.25), None]).cost(), None);
    assert_eq!(tally(&[None, Some(0.25)]).cost(), None);
}

#[test]
fn a_test_that_made_no_call_cost_nothing() {
    assert_eq!(tally(&[]).cost(), Some(0.0));
}
