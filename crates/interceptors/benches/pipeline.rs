//! Pipeline CPU per call, with a zero-latency scripted backend: everything but the model's time
//! (interceptor hooks, schema preparation, prompt and request building, extraction, repair, coercion,
//! validation, post hooks). The `call` group adds the HTTP layer: one whole `Pipeline::ask` in native
//! mode through `OpenAi` against a mock on loopback (`support/mock.rs`), at one call in flight
//! (`call/cpu_small_native`, `call/cpu_big_native`; the load bench has CPU per call and req/s).

use std::hint::black_box;
use std::sync::Arc;

use claij_backends::http::{HttpConfig, RetryPolicy};
use claij_backends::openai::OpenAi;
use claij_backends::{ApiKey, ChatResponse};
use claij_interceptors::{Chain, Config, Context, Pipeline, StructuredMode, from_fn};
use claij_test_support::Scripted;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};

#[path = "support/mock.rs"]
mod mock;

use mock::fixture;

fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}"))
}

fn per_call(c: &mut Criterion) {
    let mut group = c.benchmark_group("pipeline");
    for name in ["small", "big"] {
        let schema = parse(&fixture(&format!("{name}.json")));
        let reply = fixture(&format!("{name}.valid.json"));
        let backend = Arc::new(Scripted::from_fn(move |_, _| {
            Ok(ChatResponse::text(reply.clone()))
        }));
        let pipeline =
            Pipeline::new(backend, Config::new("bench"), Chain::new()).with_base_schema(schema);
        let mut ctx = Context::default();
        group.bench_function(format!("{name}/no-interceptors"), |b| {
            b.iter(|| {
                black_box(
                    futures_executor::block_on(pipeline.ask(&mut ctx, "Go"))
                        .map(|a| a.attempts.len()),
                )
            })
        });
    }
    // The small schema built the way a real stack builds it: base plus a memory-like delta and hooks.
    let backend = Arc::new(Scripted::from_fn(|_, _| {
        Ok(ChatResponse::text(
            r#"{"answer": "ok", "state": "chat", "summary": "user said hi"}"#,
        ))
    }));
    let memory = from_fn("memory")
        .pre_schema(|s, _| {
            s.extend(
                "summary-v1",
                json!({"properties": {"summary": {"type": "string"}}, "required": ["summary"]}),
            );
            Ok(())
        })
        .pre_prompt(|p, ctx| {
            if let Some(last) = ctx.memory.summaries.last() {
                p.system_push(&format!("Previous context: {last}"));
            }
            Ok(())
        })
        .post_response(|v, ctx| {
            if let Some(s) = v["summary"].as_str() {
                ctx.memory.summaries = vec![s.to_owned()];
            }
            Ok(())
        });
    let pipeline = Pipeline::new(backend, Config::new("bench"), Chain::new().with(memory));
    let mut ctx = Context::default();
    group.bench_function("small/memory-delta", |b| {
        b.iter(|| {
            black_box(
                futures_executor::block_on(pipeline.ask(&mut ctx, "Hi")).map(|a| a.attempts.len()),
            )
        })
    });
    group.finish();
}

/// A native-mode pipeline on `OpenAi` at `url`, with `schema` as its base.
fn native(url: &str, schema: Value) -> Pipeline {
    let backend = OpenAi::new(ApiKey::new("sk-bench-not-a-real-key"))
        .with_config(HttpConfig::new(url).with_retry(RetryPolicy::none()));
    let mut config = Config::new("gpt-4o-mini");
    config.structured = StructuredMode::Native;
    Pipeline::new(Arc::new(backend), config, Chain::new()).with_base_schema(schema)
}

fn whole_call(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut group = c.benchmark_group("call");
    for name in ["small", "big"] {
        let schema = parse(&fixture(&format!("{name}.json")));
        let server = mock::Mock::start(
            std::time::Duration::ZERO,
            vec![fixture(&format!("{name}.valid.json"))],
        );
        let pipeline = native(&server.url, schema);
        // A one-shot call: a fresh context each time (no history grows from call to call).
        let call = || {
            runtime
                .block_on(pipeline.ask(&mut Context::default(), "Go"))
                .map(|a| a.attempts.len())
        };
        assert_eq!(call().ok(), Some(1), "the {name} call is valid at once");
        group.bench_function(format!("cpu_{name}_native"), |b| {
            b.iter(|| black_box(call()))
        });
    }
    group.finish();
}

criterion_group!(benches, per_call, whole_call);
criterion_main!(benches);
