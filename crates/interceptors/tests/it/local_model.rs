//! The pipeline on the embedded model (claij-backends `local`): constrained answers valid on the first
//! attempt, unconstrained ones through repair and retry, truncated ones through the brevity retry.
//!
//! Real generations on one thread, one test at a time (`.config/nextest.toml`). They assert mechanics
//! and validity, never content. Without the model file they are skipped, except under `CI=true`.

use std::sync::Arc;

use claij_backends::{FinishReason, Role};
use claij_interceptors::builtin::memory::Memory;
use claij_interceptors::{Chain, Config, Context, Error, Pipeline, Verdict};
use claij_local::{Decoding, LocalBackend, LocalConfig};

fn pipeline(decoding: Decoding, config: Config, chain: Chain) -> Option<Pipeline> {
    let env = |name: &str| std::env::var_os(name);
    let model = claij_local::model_dir(env).join(claij_local::DEFAULT_MODEL_FILE);
    let path = claij_test_support::local_model_or_skip("local_model", model, env)?;
    let backend = LocalBackend::load_with(path, LocalConfig::default().with_decoding(decoding))
        .expect("the cached model loads");
    Some(Pipeline::new(Arc::new(backend), config, chain))
}

fn run<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(future)
}

/// The design's memory test, for mechanics: two turns, each valid on its first attempt because the
/// grammar only lets the model write what the schema allows; the summary of turn 1 reaches turn 2.
#[test]
fn constrained_turns_with_memory_are_valid_first_try() {
    let mut config = Config::new("local");
    config.max_tokens = Some(200);
    config.seed = Some(1);
    let chain = Chain::new().with(Memory::default());
    let Some(pipeline) = pipeline(Decoding::Constrained, config, chain) else {
        return;
    };
    let mut ctx = Context::default();
    for (turn, input) in [
        "Remember: my favourite colour is blue.",
        "What is my favourite colour?",
    ]
    .into_iter()
    .enumerate()
    {
        let answer = run(pipeline.ask(&mut ctx, input)).unwrap();
        assert_eq!(
            answer.attempts.len(),
            1,
            "turn {turn}: {:?}",
            answer.attempts
        );
        let attempt = &answer.attempts[0];
        assert_eq!(attempt.verdict, Verdict::Valid);
        // Ended by the model, or closed by the decoder at the token limit (still valid, flagged).
        match attempt.finish_reason {
            Some(FinishReason::Stop) => assert_eq!(attempt.truncation(), None),
            Some(FinishReason::Length) => assert!(attempt.truncation().is_some()),
            ref other => panic!("turn {turn}: finished by {other:?}"),
        }
        assert!(
            attempt.fixes.is_empty(),
            "constrained output needs no repair: {:?}",
            attempt.fixes
        );
        assert!(
            attempt.request.structured_output.is_some(),
            "the schema goes to the backend natively"
        );
        for key in ["answer", "state", "summary"] {
            assert!(
                answer.value[key].is_string(),
                "turn {turn}: {key} in {}",
                answer.value
            );
        }
        assert!(answer.usage.input_tokens > 0 && answer.usage.output_tokens > 0);
    }
    assert_eq!(ctx.memory.summaries.len(), 2);
    assert_eq!(ctx.turn, 2);
}

/// Unconstrained, the model writes what it likes; the pipeline extracts, repairs, coerces, validates
/// and retries. The run ends valid or with the typed error holding every attempt, never a panic.
#[test]
fn unconstrained_replies_go_through_repair_and_retry() {
    let mut config = Config::new("local");
    config.max_tokens = Some(120);
    config.max_retries = 2;
    let Some(pipeline) = pipeline(Decoding::Unconstrained, config, Chain::new()) else {
        return;
    };
    let mut ctx = Context::default();
    let outcome = run(pipeline.ask(&mut ctx, "What is the capital of France?"));
    let attempts = match &outcome {
        Ok(answer) => {
            assert!(answer.value["answer"].is_string() && answer.value["state"].is_string());
            &answer.attempts
        }
        Err(Error::RetriesExhausted(exhausted)) => {
            assert_eq!(exhausted.attempts.len(), 3, "the first try and two retries");
            &exhausted.attempts
        }
        Err(other) => panic!("expected a valid answer or RetriesExhausted, got {other}"),
    };
    let first = &attempts[0];
    assert!(
        first.request.structured_output.is_none(),
        "unconstrained: the schema is in the prompt"
    );
    let system = first.request.system.as_deref().unwrap_or_default();
    assert!(system.contains("conforms to this schema"), "{system}");
    for retry in &attempts[1..] {
        let last = retry.request.messages.last().unwrap();
        assert_eq!(last.role, Role::User);
        assert!(!last.content.is_empty());
    }
}

/// A token limit too small for any valid answer: every attempt stops at the limit, each retry asks
/// for a shorter answer, and the run ends in the typed error.
#[test]
fn truncated_answers_are_retried_for_brevity_then_fail_typed() {
    let mut config = Config::new("local");
    config.max_tokens = Some(6);
    config.max_retries = 1;
    let Some(pipeline) = pipeline(Decoding::Constrained, config, Chain::new()) else {
        return;
    };
    let mut ctx = Context::default();
    let err = run(pipeline.ask(&mut ctx, "Describe the sea.")).unwrap_err();
    let Error::RetriesExhausted(exhausted) = err else {
        panic!("expected RetriesExhausted, got {err}");
    };
    assert_eq!(exhausted.attempts.len(), 2);
    for attempt in &exhausted.attempts {
        assert_eq!(attempt.finish_reason, Some(FinishReason::Length));
    }
    let retry = &exhausted.attempts[1]
        .request
        .messages
        .last()
        .unwrap()
        .content;
    assert!(retry.contains("cut off"), "{retry}");
    assert!(retry.contains("shorter"), "{retry}");
}

/// A retry on the greedy local model is sampled: attempt 1 (greedy) fails a check, and each retry
/// goes out at the retry temperature with its own seed. (Whether the model then writes another reply
/// is its own affair: shown its first reply, the small model often copies it, and on a sure token
/// nucleus sampling keeps only the greedy one. That the backend samples is tested in claij-backends.)
#[test]
fn a_retry_on_the_local_model_goes_out_sampled() {
    let mut config = Config::new("local");
    config.max_tokens = Some(48);
    config.max_retries = 2;
    let Some(pipeline) = pipeline(Decoding::Constrained, config, Chain::new()) else {
        return;
    };
    let pipeline = pipeline.with_check("never", |_, _| {
        vec![claij_validation::Violation {
            instance_pointer: "/answer".to_owned(),
            schema_pointer: String::new(),
            keyword: String::new(),
            message: "try again".to_owned(),
        }]
    });
    let mut ctx = Context::default();
    let err = run(pipeline.ask(
        &mut ctx,
        "Invent a name for a new colour and describe it in one sentence.",
    ))
    .unwrap_err();
    let Error::RetriesExhausted(exhausted) = err else {
        panic!("expected RetriesExhausted, got {err}");
    };
    let [first, second, third] = &exhausted.attempts[..] else {
        panic!("three attempts: {:?}", exhausted.attempts);
    };
    assert_eq!(
        (first.request.temperature, first.request.seed),
        (None, None)
    );
    for (retry, seed) in [(second, 1), (third, 2)] {
        assert_eq!(
            (retry.request.temperature, retry.request.seed),
            (Some(claij_interceptors::RETRY_TEMPERATURE), Some(seed))
        );
    }
}

/// An agent run on the embedded model, for mechanics: the grammar lets the model call the tool
/// through the reply's `tools` field; whether it does is its choice, so the run ends with an answer
/// (after zero or more steps with calls) or out of steps, and every call's result reaches the next
/// step's request.
#[test]
fn an_agent_run_on_the_local_model_feeds_results_to_the_next_step() {
    use claij_interceptors::builtin::tools::Tools;
    use claij_interceptors::{Budget, BudgetKind};

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Add {
        a: i64,
        b: i64,
    }
    // One call a reply: a small model otherwise lists calls until the token limit.
    let limits = claij_interceptors::Limits {
        max_calls: 1,
        ..Default::default()
    };
    let tools = Tools::with_limits(limits)
        .register_typed("add", "Adds two integers.", |args: Add| async move {
            Ok(args.a + args.b)
        })
        .unwrap();
    let mut config = Config::new("local");
    config.max_tokens = Some(160);
    config.max_retries = 1;
    config.seed = Some(1);
    let executor = tools.executor();
    let Some(pipeline) = pipeline(Decoding::Constrained, config, Chain::new().with(tools))
        .map(|p| p.with_tools(executor))
    else {
        return;
    };
    let budget = Budget {
        max_steps: 2,
        ..Budget::default()
    };
    let mut ctx = Context::default();
    let outcome = run(pipeline.run_agent(&mut ctx, "Use the add tool to add 2 and 3.", &budget));
    let attempts = match &outcome {
        Ok(run) => {
            assert!(run.answer.value["answer"].is_string());
            assert_eq!(run.steps, run.calls.len().min(1) + 1);
            &run.answer.attempts
        }
        Err(Error::BudgetExceeded {
            budget, attempts, ..
        }) => {
            assert_eq!(*budget, BudgetKind::Steps);
            attempts
        }
        Err(other) => panic!("expected an answer or the step budget, got {other}"),
    };
    // A step after calls sends their results as a user turn, after the model's reply.
    for later in attempts.iter().skip(1) {
        let messages = &later.request.messages;
        assert!(
            messages
                .iter()
                .any(|m| m.role == Role::User && m.content.starts_with("Results of the tool calls")),
            "{messages:?}"
        );
    }
}
