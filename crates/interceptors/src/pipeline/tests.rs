//! Tests of the pipeline.

use std::sync::Arc;
use std::time::Duration;

use claij_test_support::Scripted;

use super::request::Retry;
use super::{Call, Delivery, Pipeline};
use crate::context::Context;
use crate::prompts::Prompts;
use crate::{Chain, Config};

/// Every call in flight holds its `ask` future while it waits (10,000 calls in flight: this size
/// times 10,000): nothing a plain call does not need may sit in it. A streamed reply's state is
/// boxed apart, the request is held as one `Arc`, each span
/// once (read back from its future, not cloned beside it). 1,200 bytes since the `pre_request` hook
/// (recall): its await keeps the turn's arguments apart from the call's state (40 bytes; boxing the
/// hook's future does not win them back).
#[test]
fn a_call_in_flight_holds_a_small_ask_future() {
    let pipeline = Pipeline::new(
        Arc::new(Scripted::replies(["{}"])),
        Config::new("m"),
        Chain::default(),
    );
    let mut ctx = Context::default();
    let ask = pipeline.ask(&mut ctx, "Go");
    let size = std::mem::size_of_val(&ask);
    drop(ask);
    assert!(size <= 1_200, "the ask future is {size} bytes");
    let prompts = Prompts::new(String::new(), "Go");
    let delivery = Delivery::Prompted;
    let call = Call {
        ctx: &ctx,
        prompts: &prompts,
        prepared: None,
        delivery: &delivery,
        on_partial: None,
        steps: &[],
        tools: &[],
        agent: None,
        spent: &[],
    };
    let first = Arc::new(pipeline.request(&call, Retry::First));
    let attempt = pipeline.attempt(&call, 1, Arc::clone(&first), Duration::ZERO);
    let size = std::mem::size_of_val(&attempt);
    drop(attempt);
    assert!(size <= 200, "one attempt's future is {size} bytes");
    let attempts = pipeline.attempts(&call, first, Duration::ZERO);
    let size = std::mem::size_of_val(&attempts);
    drop(attempts);
    assert!(size <= 400, "the retry loop's future is {size} bytes");
}
