//! Pipeline CPU per call, with a zero-latency scripted backend: everything but the model's time
//! (interceptor hooks, schema preparation, prompt and request building, extraction, repair, coercion,
//! validation, post hooks).

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;

use claij_backends::ChatResponse;
use claij_backends::testing::Scripted;
use claij_interceptors::{Chain, Config, Context, Pipeline, from_fn};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/bench")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

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

criterion_group!(benches, per_call);
criterion_main!(benches);
