//! Unit tests of [`Price::cost`]: each kind of token at its price, fallbacks, tiers.

use super::*;

fn usage(input: u64, cached: u64, written: u64, output: u64, reasoning: u64) -> Usage {
    Usage {
        input_tokens: input,
        cached_tokens: cached,
        cache_write_tokens: written,
        output_tokens: output,
        reasoning_tokens: reasoning,
        ..Usage::default()
    }
}

#[track_caller]
fn check(price: &Price, usage: Usage, expected_micro_usd: Option<f64>) {
    let got = price.cost(&usage);
    match (got, expected_micro_usd) {
        (Some(got), Some(micro)) => {
            let want = micro / 1_000_000.0;
            assert!((got - want).abs() < 1e-15, "{got} != {want}");
        }
        (got, want) => assert_eq!(got, want),
    }
}

/// Claude Sonnet 4.5's figures: cache reads, cache writes, and the tier above 200k.
fn sonnet() -> Price {
    Price::new(3.0, 15.0)
        .with_cached_input(0.3)
        .with_cache_write(3.75)
        .with_tier(
            Tier::above(200_000, 6.0, 22.5)
                .with_cached_input(0.6)
                .with_cache_write(7.5),
        )
}

#[test]
fn each_kind_of_token_at_its_price() {
    let price = sonnet();
    // 1,000 plain x 3 + 2,000 read x 0.3 + 3,000 written x 3.75 + 100 out x 15.
    check(
        &price,
        usage(6_000, 2_000, 3_000, 100, 0),
        Some(3_000.0 + 600.0 + 11_250.0 + 1_500.0),
    );
    // Reasoning is output unless priced apart.
    check(&price, usage(0, 0, 0, 100, 60), Some(1_500.0));
    let apart = price.clone().with_reasoning(30.0);
    check(
        &apart,
        usage(0, 0, 0, 100, 60),
        Some(40.0 * 15.0 + 60.0 * 30.0),
    );
}

#[test]
fn unknown_cache_prices_are_input_prices() {
    let price = Price::new(2.0, 8.0);
    check(&price, usage(1_000, 400, 100, 10, 0), Some(2_000.0 + 80.0));
}

#[test]
fn counts_past_their_whole_are_capped() {
    // More cached than input, more written than what is left, more reasoning than output.
    check(
        &sonnet(),
        usage(1_000, 5_000, 5_000, 10, 50),
        Some(1_000.0 * 0.3 + 10.0 * 15.0),
    );
}

#[test]
fn a_long_prompt_bills_the_whole_call_at_its_tier() {
    let price = sonnet();
    // At 200,000 the base price; above it every token at the tier's.
    check(
        &price,
        usage(200_000, 0, 0, 1_000, 0),
        Some(600_000.0 + 15_000.0),
    );
    check(
        &price,
        usage(200_001, 100_001, 50_000, 1_000, 0),
        Some(50_000.0 * 6.0 + 100_001.0 * 0.6 + 50_000.0 * 7.5 + 1_000.0 * 22.5),
    );
    // A tier that leaves a figure out keeps the base one.
    let partial = Price::new(1.0, 2.0).with_cached_input(0.5).with_tier(Tier {
        above_input_tokens: 10,
        input: Some(4.0),
        ..Tier::default()
    });
    check(&partial, usage(20, 10, 0, 10, 0), Some(40.0 + 5.0 + 20.0));
    // The highest tier the prompt crosses.
    let two = Price::new(1.0, 1.0)
        .with_tier(Tier::above(100, 10.0, 10.0))
        .with_tier(Tier::above(10, 5.0, 5.0));
    assert_eq!(two.tiers[0].above_input_tokens, 10, "kept in order");
    check(&two, usage(50, 0, 0, 0, 0), Some(250.0));
    check(&two, usage(101, 0, 0, 0, 0), Some(1_010.0));
}

#[test]
fn an_unknown_price_is_no_cost_and_0_is_free() {
    check(&Price::default(), usage(1, 0, 0, 1, 0), None);
    let mut half = Price::new(1.0, 1.0);
    half.output = None;
    check(&half, usage(1, 0, 0, 1, 0), None);
    check(
        &Price::free("here"),
        usage(1_000, 0, 0, 1_000, 0),
        Some(0.0),
    );
    assert_eq!(
        Price::new(1.0, 2.0).estimate(1_000_000, 1_000_000),
        Some(3.0)
    );
}

#[test]
fn check_names_the_field() {
    let problem = |price: Price| price.check().unwrap_err().field;
    assert_eq!(problem(Price::new(-1.0, 1.0)), "input");
    assert_eq!(problem(Price::new(1.0, f64::NAN)), "output");
    let mut tiers = Price::new(1.0, 1.0);
    tiers.tiers = vec![Tier::above(10, 1.0, 1.0), Tier::above(10, 2.0, 2.0)];
    assert_eq!(problem(tiers), "tiers/1/above_input_tokens");
    let mut negative = Price::new(1.0, 1.0);
    negative.tiers = vec![Tier::above(10, 1.0, -2.0)];
    assert_eq!(problem(negative), "tiers/0/output");
    assert!(sonnet().check().is_ok());
}
