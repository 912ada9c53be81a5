//! Tests of the pipeline: retries, hooks, typed answers, fan-out, truncation, native mode, failure log.

use std::sync::{Arc, Mutex};

use claij_backends::{
    Capabilities, ChatResponse, Error as BackendError, FinishReason, Role, SharedJson,
};
use claij_interceptors::several::{ask_all, first_valid, majority, tally};
use claij_interceptors::{
    CallReport, Chain, Config, Context, Error, ErrorChain, FailureLog, OnError, Pipeline,
    RetryForm, StructuredMode, Verdict, from_fn,
};
use claij_test_support::Scripted;
use claij_validation::Violation;
use serde_json::{Value, json};

fn block<F: std::future::Future>(f: F) -> F::Output {
    futures_executor::block_on(f)
}

const VALID: &str = r#"{"answer": "4", "state": "done"}"#;

fn pipeline(backend: &Scripted, chain: Chain) -> Pipeline {
    Pipeline::new(Arc::new(backend.clone()), Config::new("test-model"), chain)
}

/// An interceptor that records each hook call in a shared log.
fn recorder(
    name: &'static str,
    log: &Arc<Mutex<Vec<String>>>,
) -> claij_interceptors::FnInterceptor {
    let (a, b, c) = (Arc::clone(log), Arc::clone(log), Arc::clone(log));
    from_fn(name)
        .pre_schema(move |_, _| {
            a.lock().unwrap().push(format!("{name}.pre_schema"));
            Ok(())
        })
        .pre_prompt(move |p, _| {
            b.lock().unwrap().push(format!("{name}.pre_prompt"));
            p.system_push(&format!("({name} was here)"));
            Ok(())
        })
        .post_response(move |_, _| {
            c.lock().unwrap().push(format!("{name}.post_response"));
            Ok(())
        })
}

#[test]
fn invalid_then_valid_runs_post_hooks_once() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let backend = Scripted::replies([r#"{"answer": ["not", "a string"]}"#, VALID]);
    let p = pipeline(&backend, Chain::new().with(recorder("a", &log)));
    let mut ctx = Context::default();
    let answer = block(p.ask(&mut ctx, "What is 2+2?")).unwrap();
    assert_eq!(answer.value, json!({"answer": "4", "state": "done"}));
    assert_eq!(answer.retries(), 1);
    assert_eq!(answer.attempts[0].verdict, Verdict::Invalid);
    assert_eq!(answer.attempts[1].verdict, Verdict::Valid);
    assert_eq!(ctx.turn, 1);
    let log = log.lock().unwrap();
    assert_eq!(
        log.iter().filter(|l| l.ends_with("post_response")).count(),
        1
    );
    // Usage is totalled over both attempts.
    let sum: u64 = answer.attempts.iter().map(|a| a.usage.total_tokens()).sum();
    assert_eq!(answer.usage.total_tokens(), sum);
    // The retry keeps the question, adds the invalid reply as the model's turn and says what to fix.
    let retry = &backend.requests()[1];
    assert_eq!(
        retry.messages[..1],
        backend.requests()[0].messages[..],
        "the first request is the retry's prefix"
    );
    insta::assert_json_snapshot!(retry.messages);
}

#[test]
fn a_second_retry_extends_the_first() {
    let backend = Scripted::replies(["no json here", r#"{"answer": 4}"#, VALID]);
    let p = pipeline(&backend, Chain::new());
    let answer = block(p.ask(&mut Context::default(), "What is 2+2?")).unwrap();
    assert_eq!(answer.retries(), 2);
    let requests = backend.requests();
    assert_eq!(requests[2].messages[..3], requests[1].messages[..]);
    let roles: Vec<Role> = requests[2].messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::User,
            Role::Assistant,
            Role::User,
            Role::Assistant,
            Role::User
        ]
    );
    assert_eq!(requests[2].messages[3].content, r#"{"answer": 4}"#);
    // The context's history keeps the question and the valid answer, not the failed attempts.
    assert_eq!(answer.attempts.len(), 3);
}

#[test]
fn a_self_contained_retry_replaces_the_input() {
    let backend = Scripted::replies([r#"{"answer": ["not", "a string"]}"#, VALID]);
    let mut config = Config::new("test-model");
    config.retry_form = RetryForm::SelfContained;
    let p = Pipeline::new(Arc::new(backend.clone()), config, Chain::new());
    block(p.ask(&mut Context::default(), "What is 2+2?")).unwrap();
    let retry = &backend.requests()[1];
    assert_eq!(retry.messages.len(), 1);
    insta::assert_snapshot!("self_contained_retry", retry.messages[0].content);
}

#[test]
fn retries_exhausted_carry_every_attempt() {
    let backend = Scripted::replies(["{}", "{\"answer\": 1}", "nothing here", "[1]"]);
    let p = pipeline(&backend, Chain::new());
    let err = block(p.ask(&mut Context::default(), "Hi")).unwrap_err();
    let Error::RetriesExhausted(exhausted) = &err else {
        panic!("{err}")
    };
    assert_eq!(exhausted.attempts.len(), 4); // 1 + max_retries (3)
    assert_eq!(exhausted.last_response(), "[1]");
    assert_eq!(
        exhausted.violations()[0].message,
        "expected object, got array"
    );
    assert!(matches!(
        exhausted.attempts[2].verdict,
        Verdict::NoJson { .. }
    ));
    assert_eq!(backend.calls(), 4);
    assert_eq!(
        err.to_string(),
        "no valid reply after 4 attempts; last: (root): expected object, got array"
    );
}

#[test]
fn hook_order_is_the_onion() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let backend = Scripted::replies([VALID]);
    let chain = Chain::new()
        .with(recorder("outer", &log))
        .with(recorder("middle", &log))
        .with(recorder("inner", &log));
    let p = pipeline(&backend, chain);
    block(p.ask(&mut Context::default(), "Hi")).unwrap();
    insta::assert_snapshot!(log.lock().unwrap().join("\n"));
}

#[test]
fn system_prompt_shows_interceptor_sections_then_the_schema() {
    let backend = Scripted::replies([VALID]);
    let chain = Chain::new().with(from_fn("memory").pre_schema(|s, _| {
        s.extend(
            "summary-v1",
            json!({"properties": {"summary": {"type": "string", "description": "Key facts to remember"}}, "required": ["summary"]}),
        );
        Ok(())
    }));
    let mut config = Config::new("test-model");
    config.system = "You are a helpful assistant.".into();
    let p = Pipeline::new(Arc::new(backend.clone()), config, chain);
    let _ = block(p.ask(&mut Context::default(), "Hi"));
    let request = &backend.requests()[0];
    insta::assert_snapshot!(request.system.clone().unwrap());
}

#[test]
fn hook_errors_name_the_interceptor_and_stage_and_skip_goes_on() {
    let failing = || {
        from_fn("flaky")
            .pre_prompt(|_, _| Err("the prompt store is down".into()))
            .post_response(|_, _| Err("cannot store".into()))
    };
    let backend = Scripted::replies([VALID, VALID]);
    let p = pipeline(&backend, Chain::new().with(failing()));
    let err = block(p.ask(&mut Context::default(), "Hi")).unwrap_err();
    assert_eq!(err.to_string(), "interceptor `flaky` failed in pre_prompt");
    assert_eq!(
        ErrorChain(&err).to_string(),
        "interceptor `flaky` failed in pre_prompt: the prompt store is down"
    );
    assert_eq!(backend.calls(), 0, "a failed pre hook spends nothing");

    let p = pipeline(&backend, Chain::new().with_policy(failing(), OnError::Skip));
    let answer = block(p.ask(&mut Context::default(), "Hi")).unwrap();
    assert_eq!(
        answer.skipped,
        [
            "flaky/pre_prompt: the prompt store is down",
            "flaky/post_response: cannot store"
        ]
    );
}

#[test]
fn a_broken_delta_is_rolled_back_or_fails_by_policy() {
    let broken = || {
        from_fn("bad").pre_schema(|s, _| {
            s.extend("bad-v1", json!({"properties": {"x": {"type": "strin"}}}));
            Ok(())
        })
    };
    let backend = Scripted::replies([VALID, VALID]);
    let p = pipeline(&backend, Chain::new().with(broken()));
    let err = block(p.ask(&mut Context::default(), "Hi")).unwrap_err();
    assert_eq!(err.to_string(), "interceptor `bad`: schema rejected");
    let chain = ErrorChain(&err).to_string();
    assert!(
        chain.starts_with("interceptor `bad`: schema rejected: extension `bad-v1`: invalid schema at `/properties/x/type`"),
        "{chain}"
    );
    let p = pipeline(&backend, Chain::new().with_policy(broken(), OnError::Skip));
    let answer = block(p.ask(&mut Context::default(), "Hi")).unwrap();
    assert_eq!(answer.skipped.len(), 1);
    assert_eq!(
        p.audit().entries()[0].action,
        claij_schema::AuditAction::Rejected
    );
    // The next call does not try (and audit) the same broken delta again.
    block(p.ask(&mut Context::default(), "Hi")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.audit().len(), 1);
}

#[test]
fn deltas_that_change_are_audited_once_per_change() {
    let backend = Scripted::from_fn(|_, _| {
        Ok(ChatResponse::text(
            r#"{"answer": "a", "state": "s", "mood": "calm"}"#,
        ))
    });
    let moody = from_fn("mood").pre_schema(|s, ctx| {
        if ctx.turn < 2 {
            s.extend(
                "mood-v1",
                json!({"properties": {"mood": {"type": "string"}}}),
            );
        }
        Ok(())
    });
    let p = pipeline(&backend, Chain::new().with(moody));
    let mut ctx = Context::default();
    for _ in 0..4 {
        block(p.ask(&mut ctx, "Hi")).unwrap();
    }
    let actions: Vec<_> = p
        .audit()
        .entries()
        .iter()
        .map(|e| (e.action, e.by.clone()))
        .collect();
    assert_eq!(
        actions,
        [
            (claij_schema::AuditAction::Added, "mood".to_owned()),
            (claij_schema::AuditAction::Removed, "pipeline".to_owned())
        ]
    );
}

#[test]
fn truncated_reply_is_repaired_or_retried_for_brevity() {
    // Cut off inside the last string: repair closes it and it validates.
    let backend = Scripted::new([Ok(ChatResponse::text(
        r#"{"answer": "Paris is the capital", "state": "do"#,
    )
    .finish_reason(FinishReason::Length))]);
    let answer =
        block(pipeline(&backend, Chain::new()).ask(&mut Context::default(), "Hi")).unwrap();
    assert_eq!(answer.value["state"], "do");
    assert!(
        answer.attempts[0]
            .fixes
            .iter()
            .any(|f| f.kind == claij_validation::FixKind::Truncation)
    );

    // Cut off before `state`: invalid after repair, so the retry asks for a shorter answer.
    let backend = Scripted::new([
        Ok(ChatResponse::text(r#"{"answer": "a very long"#).finish_reason(FinishReason::Length)),
        Ok(ChatResponse::text(VALID)),
    ]);
    let answer =
        block(pipeline(&backend, Chain::new()).ask(&mut Context::default(), "Hi")).unwrap();
    assert_eq!(answer.retries(), 1);
    let requests = backend.requests();
    let retry = &requests[1].messages.last().unwrap().content;
    assert!(
        retry.contains("cut off at the output token limit"),
        "{retry}"
    );
    assert!(retry.contains("keep it shorter"), "{retry}");
}

/// A reply cut at the token limit is named in each attempt and in the final error, not only as the
/// schema violation it causes; cut before any JSON, the retry still asks for a shorter reply.
#[test]
fn a_cut_reply_is_named_in_the_attempts_and_the_error() {
    let cut = |text: &str| Ok(ChatResponse::text(text).finish_reason(FinishReason::Length));
    let ask = |backend: &Scripted, max_tokens: Option<u32>| {
        let mut config = Config::new("test-model");
        config.max_retries = 1;
        config.max_tokens = max_tokens;
        let p = Pipeline::new(Arc::new(backend.clone()), config, Chain::new());
        match block(p.ask(&mut Context::default(), "Hi")) {
            Err(Error::RetriesExhausted(exhausted)) => exhausted,
            other => panic!("{other:?}"),
        }
    };
    // Both replies cut inside JSON: invalid (no `state`), and the error says why.
    let backend = Scripted::new([
        cut(r#"{"answer": "a very long"#),
        cut(r#"{"answer": "still too long"#),
    ]);
    let exhausted = ask(&backend, Some(64));
    let cut_64 = Some("the reply was cut at max_tokens (64)".to_owned());
    assert_eq!(exhausted.attempts[0].truncation(), cut_64);
    assert_eq!(exhausted.attempts[1].truncation(), cut_64);
    assert_eq!(exhausted.truncation(), cut_64);
    let error = Error::RetriesExhausted(exhausted).to_string();
    assert!(
        error.ends_with("; the reply was cut at max_tokens (64)"),
        "{error}"
    );

    // Cut before any JSON (a long preamble): no JSON, but the retry says it was cut and asks for
    // less. Only the first reply was cut, and no max_tokens was set.
    let backend = Scripted::new([
        cut("Let me think about this step by step. First, the capital of"),
        Ok(ChatResponse::text("Paris.")),
    ]);
    let exhausted = ask(&backend, None);
    assert_eq!(exhausted.attempts[1].truncation(), None);
    assert_eq!(
        exhausted.truncation().as_deref(),
        Some("1 of 2 replies were cut at the output token limit")
    );
    let requests = backend.requests();
    let retry = &requests[1].messages.last().unwrap().content;
    assert!(
        retry.contains("cut off at the output token limit"),
        "{retry}"
    );
    assert!(retry.contains("keep it shorter"), "{retry}");

    // Nothing cut: nothing said.
    let backend = Scripted::replies([r#"{"answer": "x"}"#, r#"{"answer": "y"}"#]);
    let exhausted = ask(&backend, Some(64));
    assert_eq!(exhausted.truncation(), None);
    assert!(!exhausted.to_string().contains("cut"), "{exhausted}");
}

#[test]
fn no_schema_means_plain_text() {
    let backend = Scripted::replies(["Just text, no JSON."]);
    let p = pipeline(&backend, Chain::new()).with_plain_text();
    let answer = block(p.ask(&mut Context::default(), "Hi")).unwrap();
    assert_eq!(answer.value, json!("Just text, no JSON."));
    assert_eq!(backend.requests()[0].system, None);
}

#[test]
fn native_structured_output_keeps_the_schema_out_of_the_prompt() {
    let backend = Scripted::replies([VALID])
        .with_capabilities(Capabilities::prompted().with_native_json_schema(true));
    let p = pipeline(&backend, Chain::new());
    block(p.ask(&mut Context::default(), "Hi")).unwrap();
    let request = &backend.requests()[0];
    assert_eq!(request.system, None);
    let structured = request.structured_output.as_ref().unwrap();
    assert_eq!(structured.schema["required"], json!(["answer", "state"]));

    // Prompted mode overrides the capability.
    let backend = Scripted::replies([VALID])
        .with_capabilities(Capabilities::prompted().with_native_json_schema(true));
    let mut config = Config::new("m");
    config.structured = StructuredMode::Prompted;
    let p = Pipeline::new(Arc::new(backend.clone()), config, Chain::new());
    block(p.ask(&mut Context::default(), "Hi")).unwrap();
    assert!(backend.requests()[0].structured_output.is_none());
    assert!(
        backend.requests()[0]
            .system
            .as_ref()
            .unwrap()
            .contains("answer: string")
    );
}

/// The schema a request carries is the one memoized per dialect, shared: no attempt or call
/// copies it, and the answer's attempts share the one list of what the dialect loses.
#[test]
fn attempts_and_calls_share_one_serialized_schema() {
    let backend = Scripted::replies([r#"{"answer": ["not", "a string"]}"#, VALID, VALID])
        .with_capabilities(Capabilities::prompted().with_native_json_schema(true));
    let p = pipeline(&backend, Chain::new());
    let mut ctx = Context::default();
    let first = block(p.ask(&mut ctx, "Hi")).unwrap();
    let second = block(p.ask(&mut ctx, "Again")).unwrap();
    assert_eq!((first.attempts.len(), second.attempts.len()), (2, 1));
    let requests = backend.requests();
    let schema = |i: usize| {
        requests[i]
            .structured_output
            .as_ref()
            .unwrap()
            .schema
            .clone()
    };
    assert_eq!(schema(0)["required"], json!(["answer", "state"]));
    assert!(
        SharedJson::ptr_eq(&schema(0), &schema(1)),
        "a retry copied the schema"
    );
    assert!(
        SharedJson::ptr_eq(&schema(0), &schema(2)),
        "a call copied the schema"
    );
    assert_eq!(
        schema(0).raw().get(),
        serde_json::to_string(schema(0).value()).unwrap()
    );
    assert!(Arc::ptr_eq(
        &first.attempts[0].dialect_losses,
        &second.attempts[0].dialect_losses
    ));
    // The report was the post hooks' to see during the call; the answer carries the attempts.
    assert!(ctx.get::<CallReport>().is_none());
}

#[test]
fn semantic_checks_feed_the_retry_loop() {
    let backend = Scripted::replies([
        r#"{"answer": "take action 7", "state": "act", "choice": 7}"#,
        r#"{"answer": "take action 1", "state": "act", "choice": 1}"#,
    ]);
    let chain = Chain::new().with(from_fn("choice").pre_schema(|s, _| {
        s.extend(
            "choice-v1",
            json!({"properties": {"choice": {"type": "integer"}}, "required": ["choice"]}),
        );
        Ok(())
    }));
    let p = pipeline(&backend, chain).with_check("choice-in-range", |value, _ctx| {
        let n = value["choice"].as_i64().unwrap_or(-1);
        if (0..3).contains(&n) {
            Vec::new()
        } else {
            vec![Violation {
                instance_pointer: "/choice".into(),
                schema_pointer: String::new(),
                keyword: String::new(),
                message: format!("{n} is not one of the 3 available actions (0..=2)"),
            }]
        }
    });
    let answer = block(p.ask(&mut Context::default(), "Choose")).unwrap();
    assert_eq!(answer.value["choice"], 1);
    assert_eq!(answer.attempts[0].violations[0].keyword, "choice-in-range");
    assert!(
        backend.requests()[1]
            .messages
            .last()
            .unwrap()
            .content
            .contains("/choice: 7 is not one of the 3 available actions")
    );
}

/// A check that flags any `answer` other than "4", counting its calls.
fn answer_is_four(
    calls: &Arc<Mutex<usize>>,
    keyword: &'static str,
) -> claij_interceptors::FnInterceptor {
    let calls = Arc::clone(calls);
    from_fn("four").check(move |value, _ctx| {
        *calls.lock().unwrap() += 1;
        if value["answer"] == "4" {
            return Vec::new();
        }
        vec![Violation {
            instance_pointer: "/answer".into(),
            schema_pointer: String::new(),
            keyword: keyword.into(),
            message: "2+2 is 4".into(),
        }]
    })
}

#[test]
fn an_interceptors_check_hook_feeds_the_retry_loop_once_per_attempt() {
    let wrong = r#"{"answer": "5", "state": "done"}"#;
    let backend = Scripted::replies([wrong, VALID]);
    let calls = Arc::new(Mutex::new(0));
    let p = pipeline(&backend, Chain::new().with(answer_is_four(&calls, "")));
    let answer = block(p.ask(&mut Context::default(), "What is 2+2?")).unwrap();
    assert_eq!(answer.retries(), 1);
    // Named by the interceptor when the check sets no keyword.
    let first = &answer.attempts[0].violations;
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].keyword, "four");
    assert_eq!(answer.attempts[0].verdict, Verdict::Invalid);
    assert!(
        backend.requests()[1]
            .messages
            .last()
            .unwrap()
            .content
            .contains("/answer: 2+2 is 4")
    );
    assert_eq!(*calls.lock().unwrap(), 2);
    // A keyword the check sets is kept.
    let backend = Scripted::replies([wrong, VALID]);
    let p = pipeline(
        &backend,
        Chain::new().with(answer_is_four(&calls, "arithmetic")),
    );
    let answer = block(p.ask(&mut Context::default(), "What is 2+2?")).unwrap();
    assert_eq!(answer.attempts[0].violations[0].keyword, "arithmetic");
}

#[test]
fn chain_checks_run_before_with_check_and_schema_invalid_replies_are_not_checked() {
    let backend = Scripted::replies([
        r#"{"answer": ["not a string"]}"#,
        r#"{"answer": "5", "state": "done"}"#,
        VALID,
    ]);
    let calls = Arc::new(Mutex::new(0));
    let p = pipeline(&backend, Chain::new().with(answer_is_four(&calls, ""))).with_check(
        "also",
        |value, _| {
            if value["answer"] == "4" {
                return Vec::new();
            }
            vec![Violation {
                instance_pointer: "/answer".into(),
                schema_pointer: String::new(),
                keyword: String::new(),
                message: "still not 4".into(),
            }]
        },
    );
    let answer = block(p.ask(&mut Context::default(), "What is 2+2?")).unwrap();
    assert_eq!(answer.retries(), 2);
    let keywords: Vec<&str> = answer.attempts[1]
        .violations
        .iter()
        .map(|v| v.keyword.as_str())
        .collect();
    assert_eq!(keywords, ["four", "also"]);
    // The schema-invalid first reply never reached the checks.
    assert_eq!(*calls.lock().unwrap(), 2);
}

#[test]
fn backend_errors_keep_the_attempts() {
    let backend = Scripted::new([
        Ok(ChatResponse::text("{}")),
        Err(BackendError::other("scripted", "connection reset")),
    ]);
    let err =
        block(pipeline(&backend, Chain::new()).ask(&mut Context::default(), "Hi")).unwrap_err();
    assert_eq!(err.to_string(), "attempt 2");
    assert_eq!(
        ErrorChain(&err).to_string(),
        "attempt 2: scripted: connection reset"
    );
    assert_eq!(err.attempts().len(), 2);
    assert!(matches!(
        err.attempts()[1].verdict,
        Verdict::BackendError { .. }
    ));
}

#[test]
fn typed_ask_with_a_nested_enum() {
    #[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
    #[serde(rename_all = "snake_case")]
    enum Priority {
        Low,
        High,
    }
    #[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
    #[serde(tag = "kind", rename_all = "snake_case")]
    enum Step {
        Search { query: String },
        Wait { seconds: u32 },
    }
    #[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
    struct Plan {
        priority: Priority,
        steps: Vec<Step>,
    }
    let backend = Scripted::replies([
        r#"{"priority": "urgent", "steps": []}"#,
        r#"{"priority": "HIGH", "steps": [{"kind": "search", "query": "rust"}, {"kind": "wait", "seconds": "5"}]}"#,
    ]);
    let p = pipeline(&backend, Chain::new());
    let answer = block(p.ask_as::<Plan>(&mut Context::default(), "Plan it")).unwrap();
    assert_eq!(
        answer.value,
        Plan {
            priority: Priority::High,
            steps: vec![
                Step::Search {
                    query: "rust".into()
                },
                Step::Wait { seconds: 5 }
            ],
        }
    );
    assert_eq!(answer.retries(), 1);
    let first = &answer.attempts[0].violations;
    assert_eq!(first[0].instance_pointer, "/priority");
}

#[test]
fn fan_out_returns_every_answer_and_error() {
    let ok = |a: &str| {
        Pipeline::new(
            Arc::new(Scripted::replies([format!(
                r#"{{"answer": "{a}", "state": "done"}}"#
            )])),
            Config::new("m"),
            Chain::new(),
        )
    };
    let failing = Pipeline::new(
        Arc::new(Scripted::new([Err(BackendError::other(
            "down",
            "unreachable",
        ))])),
        Config::new("m"),
        Chain::new(),
    );
    let (a, b, c, d) = (ok("Lyon"), failing, ok("Paris"), ok("Paris"));
    let replies = block(ask_all(
        &[("a", &a), ("b", &b), ("c", &c), ("d", &d)],
        Context::default,
        "Capital?",
    ));
    let names: Vec<&str> = replies.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "c", "d"]);
    assert!(replies[1].result.is_err());
    assert_eq!(replies[0].context.turn, 1);
    // Paris has the most votes, 2 of the 4 pipelines asked: no majority.
    assert_eq!(tally(&replies, &["/answer"]).votes[0].value, json!("Paris"));
    assert_eq!(majority(&replies, &["/answer"]), None);
    assert_eq!(majority(&replies[1..], &["/answer"]), Some(json!("Paris")));
    assert_eq!(first_valid(&replies).unwrap().value["answer"], "Lyon");
}

#[test]
fn failure_log_appends_redacted_attempts() {
    let dir = std::env::temp_dir().join(format!("claij-failure-log-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("failures.jsonl");
    let _ = std::fs::remove_file(&path);
    let backend = Scripted::replies([
        r#"{"answer": "my key is sk-abcdefghijklmnopqrstuvwx"}"#,
        VALID,
    ]);
    let p = pipeline(&backend, Chain::new()).with_failure_log(FailureLog::new(&path));
    block(p.ask(
        &mut Context::default(),
        "Use Bearer abcdefghijklmnop please",
    ))
    .unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["attempt"]["verdict"]["verdict"], "invalid");
    assert!(!text.contains("sk-abcdefghijklmnopqrstuvwx"), "{text}");
    assert!(!text.contains("abcdefghijklmnop please"), "{text}");
    assert!(text.contains("sk-***"), "{text}");
    // A first-try success writes nothing.
    let backend = Scripted::replies([VALID]);
    let p = pipeline(&backend, Chain::new()).with_failure_log(FailureLog::new(&path));
    block(p.ask(&mut Context::default(), "Hi")).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 2);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn history_goes_before_the_input() {
    let backend = Scripted::replies([VALID]);
    let chain = Chain::new().with(from_fn("history").pre_prompt(|p, _| {
        p.history
            .push(claij_backends::Message::user("earlier question"));
        p.history
            .push(claij_backends::Message::assistant("earlier answer"));
        Ok(())
    }));
    block(pipeline(&backend, chain).ask(&mut Context::default(), "now")).unwrap();
    let roles: Vec<Role> = backend.requests()[0]
        .messages
        .iter()
        .map(|m| m.role)
        .collect();
    assert_eq!(roles, [Role::User, Role::Assistant, Role::User]);
}

/// Tool mode is strict only on models with strict tools, and then compiled to their dialect with
/// the losses reported as in native mode; elsewhere the schema goes as composed, not strict.
#[test]
fn tool_mode_is_strict_only_where_the_model_has_strict_tools() {
    use claij_backends::{OutputMode, SchemaDialect};
    let schema = json!({
        "type": "object", "required": ["answer"],
        "properties": {"answer": {"type": "string", "minLength": 2}, "note": {"type": "string"}}
    });
    let ask = |capabilities: Capabilities| {
        let backend = Scripted::replies([r#"{"answer": "ok", "note": null}"#])
            .with_capabilities(capabilities);
        let mut config = Config::new("test-model");
        config.structured = StructuredMode::Tool;
        let p = Pipeline::new(Arc::new(backend.clone()), config, Chain::new())
            .with_base_schema(schema.clone());
        let answer = block(p.ask(&mut Context::default(), "Hi")).unwrap();
        assert_eq!(answer.value, json!({"answer": "ok"}));
        let sent = backend.requests()[0].structured_output.clone().unwrap();
        assert_eq!(sent.mode, OutputMode::Tool);
        let keywords: Vec<String> = answer.attempts[0]
            .dialect_losses
            .iter()
            .map(|l| l.keyword.clone())
            .collect();
        (sent, keywords)
    };
    // gpt-4-turbo: strict tools without native structured output.
    let (sent, losses) =
        ask(Capabilities::prompted().with_strict_tools(SchemaDialect::OpenAiStrict));
    assert!(sent.strict);
    assert_eq!(sent.schema["additionalProperties"], json!(false));
    assert_eq!(sent.schema["required"], json!(["answer", "note"]));
    assert!(losses.contains(&"minLength".to_owned()), "{losses:?}");
    // Claude 3.5 or a compatible server: tools, none strict.
    let (sent, losses) = ask(Capabilities::prompted().with_tools(true));
    assert!(!sent.strict);
    assert_eq!(sent.schema, schema);
    assert!(losses.is_empty(), "{losses:?}");
    // Gemini: tools in its dialect (function declarations take its subset), none strict.
    let (sent, _) = ask(Capabilities::prompted()
        .with_tools(true)
        .with_schema_dialect(SchemaDialect::Gemini));
    assert!(!sent.strict);
    assert_eq!(sent.schema.get("additionalProperties"), None);
}

#[test]
fn native_mode_compiles_to_the_provider_dialect_and_reports_losses() {
    use claij_backends::{OutputMode, SchemaDialect};
    let schema = json!({
        "type": "object", "required": ["answer"],
        "properties": {"answer": {"type": "string", "minLength": 2}, "note": {"type": "string"}}
    });
    // OpenAI strict sends `"note": null` for the optional field it made required and nullable.
    let backend = Scripted::replies([r#"{"answer": "ok", "note": null}"#]).with_capabilities(
        Capabilities::prompted().with_schema_dialect(SchemaDialect::OpenAiStrict),
    );
    let p = pipeline(&backend, Chain::new()).with_base_schema(schema);
    let answer = block(p.ask(&mut Context::default(), "Hi")).unwrap();
    assert_eq!(answer.value, json!({"answer": "ok"}));
    let sent = backend.requests()[0].structured_output.clone().unwrap();
    assert_eq!(sent.mode, OutputMode::Native);
    assert_eq!(sent.schema["additionalProperties"], json!(false));
    assert_eq!(sent.schema["required"], json!(["answer", "note"]));
    let keywords: Vec<&str> = answer.attempts[0]
        .dialect_losses
        .iter()
        .map(|l| l.keyword.as_str())
        .collect();
    assert!(keywords.contains(&"minLength"), "{keywords:?}");
    // The local validator still enforces what the dialect dropped.
    let backend = Scripted::replies([r#"{"answer": "x"}"#, r#"{"answer": "xy"}"#])
        .with_capabilities(
            Capabilities::prompted().with_schema_dialect(SchemaDialect::OpenAiStrict),
        );
    let schema = json!({"type": "object", "required": ["answer"], "properties": {"answer": {"type": "string", "minLength": 2}}});
    let p = pipeline(&backend, Chain::new()).with_base_schema(schema);
    assert_eq!(
        block(p.ask(&mut Context::default(), "Hi"))
            .unwrap()
            .retries(),
        1
    );
}

#[test]
fn auto_mode_falls_back_to_a_forced_tool_then_to_the_prompt() {
    use claij_backends::OutputMode;
    let backend =
        Scripted::replies([VALID]).with_capabilities(Capabilities::prompted().with_tools(true));
    block(pipeline(&backend, Chain::new()).ask(&mut Context::default(), "Hi")).unwrap();
    let request = &backend.requests()[0];
    assert_eq!(
        request.structured_output.as_ref().unwrap().mode,
        OutputMode::Tool
    );
    assert_eq!(request.system, None);

    let backend = Scripted::replies([VALID]);
    block(pipeline(&backend, Chain::new()).ask(&mut Context::default(), "Hi")).unwrap();
    assert!(backend.requests()[0].structured_output.is_none());
}

/// A backend that streams a fixed reply a few characters at a time.
struct Chunked(&'static str);

impl claij_backends::Backend for Chunked {
    fn provider(&self) -> &str {
        "chunked"
    }

    fn capabilities(&self, _model: &str) -> Capabilities {
        Capabilities::prompted().with_streaming(true)
    }

    fn complete<'a>(
        &'a self,
        _request: &'a claij_backends::ChatRequest,
    ) -> claij_backends::BoxFuture<'a, Result<ChatResponse, BackendError>> {
        Box::pin(std::future::ready(Ok(ChatResponse::text(self.0))))
    }

    fn stream<'a>(
        &'a self,
        _request: &'a claij_backends::ChatRequest,
    ) -> claij_backends::BoxStream<'a, Result<claij_backends::StreamEvent, BackendError>> {
        let chunks: Vec<Result<claij_backends::StreamEvent, BackendError>> = self
            .0
            .as_bytes()
            .chunks(6)
            .map(|c| {
                Ok(claij_backends::StreamEvent::Text(
                    String::from_utf8_lossy(c).into_owned(),
                ))
            })
            .chain([
                // Usage split the way Anthropic sends it: input first, output at the end.
                Ok(claij_backends::StreamEvent::Usage(claij_backends::Usage {
                    input_tokens: 11,
                    ..Default::default()
                })),
                Ok(claij_backends::StreamEvent::Usage(claij_backends::Usage {
                    output_tokens: 7,
                    ..Default::default()
                })),
                Ok(claij_backends::StreamEvent::Finish(FinishReason::Stop)),
            ])
            .collect();
        Box::pin(futures_util::stream::iter(chunks))
    }
}

#[test]
fn streaming_shows_partial_values_and_validates_the_final_one() {
    let backend = Arc::new(Chunked(
        r#"{"answer": "Paris is the capital of France", "state": "done"}"#,
    ));
    let p = Pipeline::new(backend, Config::new("m"), Chain::new());
    let partials = Mutex::new(Vec::new());
    let on_partial = |v: &Value| partials.lock().unwrap().push(v.clone());
    let answer = block(p.ask_streaming(&mut Context::default(), "Capital?", &on_partial)).unwrap();
    assert_eq!(answer.value["state"], "done");
    let partials = partials.into_inner().unwrap();
    assert!(partials.len() > 3, "{partials:?}");
    // The answer grows in the partial values before `state` appears.
    assert!(partials.iter().any(|v| v.get("state").is_none()
        && v["answer"].as_str().is_some_and(|a| a.starts_with("Paris"))));
    assert_eq!(partials.last().unwrap(), &answer.value);
    assert_eq!(
        (answer.usage.input_tokens, answer.usage.output_tokens),
        (11, 7)
    );
}

/// A backend streaming a tool call after some text, the way Claude answers a forced tool.
struct TextThenTool;

impl claij_backends::Backend for TextThenTool {
    fn provider(&self) -> &str {
        "text-then-tool"
    }

    fn capabilities(&self, _model: &str) -> Capabilities {
        Capabilities::prompted()
            .with_streaming(true)
            .with_tools(true)
    }

    fn complete<'a>(
        &'a self,
        _request: &'a claij_backends::ChatRequest,
    ) -> claij_backends::BoxFuture<'a, Result<ChatResponse, BackendError>> {
        Box::pin(std::future::ready(Ok(ChatResponse::text(VALID))))
    }

    fn stream<'a>(
        &'a self,
        _request: &'a claij_backends::ChatRequest,
    ) -> claij_backends::BoxStream<'a, Result<claij_backends::StreamEvent, BackendError>> {
        use claij_backends::StreamEvent::{Finish, Text, ToolInput};
        let events = [
            Text("I'll answer with the tool: {\"answer\": \"wrong\"".into()),
            ToolInput(String::new()),
            ToolInput(r#"{"answer": "4", "#.into()),
            Text(" (more text)".into()),
            ToolInput(r#""state": "done"}"#.into()),
            Finish(FinishReason::ToolCalls),
        ];
        Box::pin(futures_util::stream::iter(events.map(Ok)))
    }
}

#[test]
fn a_streamed_tool_call_is_the_answer_not_the_text_beside_it() {
    let p = Pipeline::new(Arc::new(TextThenTool), Config::new("m"), Chain::new());
    let partials = Mutex::new(Vec::new());
    let on_partial = |v: &Value| partials.lock().unwrap().push(v.clone());
    let answer = block(p.ask_streaming(&mut Context::default(), "2+2?", &on_partial)).unwrap();
    assert_eq!(answer.value, json!({"answer": "4", "state": "done"}));
    assert_eq!(answer.retries(), 0);
    let partials = partials.into_inner().unwrap();
    // The text's `wrong` was a preview until the call began; the call's values after it.
    assert_eq!(partials.first(), Some(&json!({"answer": "wrong"})));
    assert_eq!(partials.last(), Some(&answer.value));
}

#[test]
fn pre_schema_sees_the_base_schema() {
    let seen = Arc::new(Mutex::new(Value::Null));
    let log = Arc::clone(&seen);
    let chain = Chain::new().with(from_fn("peek").pre_schema(move |s, _| {
        *log.lock().unwrap() = s.base().clone();
        Ok(())
    }));
    block(pipeline(&Scripted::replies([VALID]), chain).ask(&mut Context::default(), "Hi")).unwrap();
    assert_eq!(*seen.lock().unwrap(), claij_schema::base());
}

#[test]
fn a_reply_over_max_reply_bytes_is_not_searched_and_the_retry_asks_for_less() {
    // Valid JSON, but padded past the limit: refused unread, whatever it holds.
    let padded = format!("{VALID}{}", " ".repeat(100));
    let backend = Scripted::replies([padded.as_str(), VALID]);
    let mut config = Config::new("test-model");
    config.max_reply_bytes = 64;
    config.retry_prompt.max_response_chars = 20;
    let p = Pipeline::new(Arc::new(backend.clone()), config, Chain::new());
    let answer = block(p.ask(&mut Context::default(), "Hi")).unwrap();
    assert_eq!(answer.retries(), 1);
    let Verdict::NoJson { reason } = &answer.attempts[0].verdict else {
        panic!("{:?}", answer.attempts[0].verdict)
    };
    assert_eq!(
        reason,
        &format!(
            "the reply is {} bytes, over the limit of 64 bytes (max_reply_bytes)",
            padded.len()
        )
    );
    let requests = backend.requests();
    let retry = &requests[1].messages.last().unwrap().content;
    assert!(
        retry.contains(&format!(
            "PROBLEM: your reply was {} bytes, over the limit of 64 bytes",
            padded.len()
        )),
        "{retry}"
    );
    // The reply that was not read is cut in the model's turn, so later requests stay small.
    assert_eq!(
        backend.requests()[1].messages[1].content,
        format!(
            "{}\n[... cut: the reply was {} bytes ...]",
            &VALID[..20],
            padded.len()
        )
    );
    assert_eq!(
        claij_interceptors::DEFAULT_MAX_REPLY_BYTES,
        Config::new("m").max_reply_bytes
    );
}

#[test]
fn schemas_no_reply_can_satisfy_are_refused_before_any_request() {
    // A `$ref` cycle in the base schema: a schema error, not an invalid reply.
    let backend = Scripted::replies([VALID]);
    let cyclic = json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"});
    let p = pipeline(&backend, Chain::new()).with_base_schema(cyclic);
    let err = block(p.ask(&mut Context::default(), "Hi")).unwrap_err();
    assert!(
        matches!(
            &err,
            Error::Schema {
                interceptor: None,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(err.to_string(), "schema rejected");
    let chain = ErrorChain(&err).to_string();
    assert!(chain.contains("`$ref` cycle"), "{chain}");
    // A delta contradicting the base: refused, naming both.
    let list = from_fn("list").pre_schema(|s, _| {
        s.extend("list-v1", json!({"type": "array"}));
        Ok(())
    });
    let p = pipeline(&backend, Chain::new().with(list));
    let err = block(p.ask(&mut Context::default(), "Hi")).unwrap_err();
    let chain = ErrorChain(&err).to_string();
    assert!(
        chain.contains("extension `list-v1` contradicts extension `base` at `/type`"),
        "{chain}"
    );
    assert_eq!(backend.calls(), 0);
}

#[test]
fn retries_on_a_greedy_backend_sample_with_a_new_seed_each() {
    const MISSING_STATE: &str = r#"{"answer": "4"}"#;
    let greedy = Capabilities::prompted().with_greedy_default(true);
    let backend =
        Scripted::replies([MISSING_STATE, MISSING_STATE, VALID]).with_capabilities(greedy);
    let mut config = Config::new("test-model");
    config.seed = Some(40);
    let p = Pipeline::new(Arc::new(backend.clone()), config, Chain::new());
    let answer = block(p.ask(&mut Context::default(), "Hi")).unwrap();
    assert_eq!(answer.retries(), 2);
    let sampling: Vec<(Option<f32>, Option<u64>)> = backend
        .requests()
        .iter()
        .map(|r| (r.temperature, r.seed))
        .collect();
    let t = Some(claij_interceptors::RETRY_TEMPERATURE);
    assert_eq!(
        sampling,
        [(None, Some(40)), (t, Some(41)), (t, Some(42))],
        "the first attempt as configured, each retry sampled with its own seed"
    );
    // Two identical replies in a row never come from identical requests.
    let requests = backend.requests();
    assert_ne!(requests[1], requests[2]);

    // A backend that samples by default, or a configured temperature, is left as it is.
    for (capabilities, temperature) in [
        (Capabilities::prompted(), None),
        (
            Capabilities::prompted().with_greedy_default(true),
            Some(0.3),
        ),
    ] {
        let backend = Scripted::replies([MISSING_STATE, VALID]).with_capabilities(capabilities);
        let mut config = Config::new("test-model");
        config.temperature = temperature;
        let p = Pipeline::new(Arc::new(backend.clone()), config, Chain::new());
        block(p.ask(&mut Context::default(), "Hi")).unwrap();
        let requests = backend.requests();
        assert_eq!(requests[1].temperature, temperature);
        assert_eq!(requests[1].seed, None);
    }
}

#[test]
fn a_string_at_the_dialect_bound_is_flagged_as_cut() {
    use claij_backends::SchemaDialect;
    let limit = claij_schema::dialect::LlguidanceBounds::default().max_string_chars;
    let long = "a".repeat(usize::try_from(limit).unwrap());
    let schema = json!({
        "type": "object", "required": ["answer", "state"],
        "properties": {"answer": {"type": "string"}, "state": {"type": "string", "maxLength": 4}}
    });
    let replies = [
        json!({"answer": long, "state": "done"}).to_string(),
        json!({"answer": "short", "state": "done"}).to_string(),
    ];
    for (reply, cut) in replies.into_iter().zip([true, false]) {
        let backend = Scripted::replies([reply]).with_capabilities(
            Capabilities::prompted().with_schema_dialect(SchemaDialect::Llguidance),
        );
        let p = pipeline(&backend, Chain::new()).with_base_schema(schema.clone());
        let answer = block(p.ask(&mut Context::default(), "Hi")).unwrap();
        let attempt = &answer.attempts[0];
        if cut {
            assert_eq!(
                attempt.cut_strings,
                [claij_interceptors::CutString {
                    pointer: "/answer".to_owned(),
                    limit,
                    kept: None,
                }]
            );
            let warning = attempt.truncation().unwrap();
            assert!(
                warning.contains(&format!("/answer was cut at {limit} characters")),
                "{warning}"
            );
        } else {
            assert!(attempt.cut_strings.is_empty());
            assert_eq!(attempt.truncation(), None);
        }
    }
}

/// A reply whose string the dialect's bound cut mid-word, for the schema `answer_schema`.
fn cut_mid_word(answer_schema: Value) -> (claij_interceptors::Answer, u64) {
    use claij_backends::SchemaDialect;
    let limit = claij_schema::dialect::LlguidanceBounds::default().max_string_chars;
    let mut long = "Once upon a time, a dragon ".repeat(100);
    long.truncate(usize::try_from(limit).unwrap());
    assert!(!long.ends_with(' '));
    let schema = json!({
        "type": "object", "required": ["answer"],
        "properties": {"answer": answer_schema}
    });
    let backend = Scripted::replies([json!({ "answer": long }).to_string()])
        .with_capabilities(Capabilities::prompted().with_schema_dialect(SchemaDialect::Llguidance));
    let p = pipeline(&backend, Chain::new()).with_base_schema(schema);
    (block(p.ask(&mut Context::default(), "Hi")).unwrap(), limit)
}

#[test]
fn a_string_cut_mid_word_by_the_dialect_bound_ends_at_its_last_whole_word() {
    let (answer, limit) = cut_mid_word(json!({"type": "string"}));
    let attempt = &answer.attempts[0];
    let text = answer.value["answer"].as_str().unwrap();
    let kept = attempt.cut_strings[0].kept.expect("ended at a word");
    assert!(kept < limit && kept * 2 >= limit, "{kept}");
    assert_eq!(text.chars().count(), usize::try_from(kept).unwrap() + 1);
    assert!(
        text.ends_with("dragon…") || text.ends_with("time…"),
        "{text}"
    );
    // The raw reply keeps what the model wrote; the warning says what was done.
    assert!(
        attempt
            .raw
            .as_ref()
            .unwrap()
            .contains(&text[..text.len() - '…'.len_utf8()])
    );
    let warning = attempt.truncation().unwrap();
    assert!(
        warning.contains(&format!(
            "ends after its last whole word ({kept} characters)"
        )),
        "{warning}"
    );
}

#[test]
fn a_cut_string_is_left_as_cut_when_ending_it_at_a_word_would_break_the_schema() {
    let (answer, limit) = cut_mid_word(json!({"type": "string", "pattern": "^[A-Za-z ,]*$"}));
    let attempt = &answer.attempts[0];
    assert_eq!(attempt.cut_strings[0].kept, None);
    let text = answer.value["answer"].as_str().unwrap();
    assert_eq!(text.chars().count(), usize::try_from(limit).unwrap());
}
