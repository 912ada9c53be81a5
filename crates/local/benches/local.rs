//! The embedded model's figures: load time, prompt and decode speed, grammar mask time, peak memory,
//! first-try validity over a fixed prompt set with and without constraints, and prompt reading
//! (prefill) cold, after a cached prefix, and with f32 against Q8_0 weights.
//!
//! Not a criterion bench: one generation takes seconds, so it reports figures from a fixed workload.
//! candle fixes its thread count once per process, so the bench runs itself again as a child per
//! thread count (`CANDLE_NUM_THREADS`), each child printing one JSON line, and this process writes the
//! table to stdout and `target/claij/bench-local.md` (`cargo xtask bench` prints that file at the end),
//! and the 2-thread figures to `target/claij/bench-local.json` for the goals table.
//!
//! With `CLAIJ_BENCH_FSM=path/to/claij` it also times `claij fsm run examples/fsm/code-review.json
//! --llm local --threads 2` with that binary (`fsm_code_review_s`; null otherwise: the bench does not
//! build the CLI).
//!
//! Needs the model in the cache (`cargo xtask model`); `CLAIJ_MODEL_DIR` overrides the directory.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::unwrap_used,
    clippy::expect_used
)]

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use claij_backends::{ChatRequest, FinishReason, Message};
use claij_local::{Decoding, LocalBackend, LocalConfig, PrefillWeights, Requantize};
use claij_schema::dialect::Dialect;
use claij_validation::Validator;
use serde_json::{Value, json};

const PROMPTS: [&str; 8] = [
    "What is the capital of France?",
    "Name a primary colour.",
    "Is 17 a prime number?",
    "What do bees make?",
    "Remember: my favourite colour is blue.",
    "How many legs does a spider have?",
    "Suggest a name for a cat.",
    "What is 12 times 3?",
];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(threads) = args
        .iter()
        .position(|a| a == "--child")
        .and_then(|i| args.get(i + 1))
    {
        child(threads);
        return;
    }
    // `cargo bench` passes `--bench` and maybe a filter: run unless filtered out.
    let filter = args.iter().skip(1).find(|a| !a.starts_with('-'));
    if filter.is_some_and(|f| !"local".contains(f.as_str())) {
        return;
    }
    let Some(path) = model_path() else {
        println!("local: skipped, no model (run `cargo xtask model`)");
        return;
    };
    println!("local model bench: {}", path.display());
    let exe = std::env::current_exe().expect("own path");
    let mut rows = Vec::new();
    for threads in ["1", "2"] {
        let output = Command::new(&exe)
            .args(["--child", threads])
            .env("CANDLE_NUM_THREADS", threads)
            .env("RAYON_NUM_THREADS", threads)
            .output()
            .expect("run the bench child");
        let stdout = String::from_utf8_lossy(&output.stdout);
        match stdout
            .lines()
            .rev()
            .find_map(|l| serde_json::from_str::<Value>(l).ok())
        {
            Some(row) if output.status.success() => rows.push(row),
            _ => {
                eprintln!("{}", String::from_utf8_lossy(&output.stderr));
                panic!("bench child with {threads} thread(s) failed");
            }
        }
    }
    let fsm = fsm_code_review();
    let report = table(&rows, fsm);
    print!("{report}");
    let dir = target_dir().join("claij");
    std::fs::create_dir_all(&dir).expect("create target/claij");
    std::fs::write(dir.join("bench-local.md"), &report).expect("write the report");
    let two = rows
        .iter()
        .find(|r| r["threads"] == 2)
        .or(rows.last())
        .expect("a row");
    let summary = json!({
        "prefill_tok_s": two["prefill"]["cold_tok_s"],
        "decode_tok_s": two["constrained"]["decode_tok_s"],
        "prefill_tok_s_cached": two["prefill"]["cached_tok_s"],
        "prefill_q8_tok_s": two["prefill"]["q8_tok_s"],
        "prefill_f32_tok_s": two["prefill"]["f32_tok_s"],
        "threads": two["candle_threads"],
        "fsm_code_review_s": fsm,
    });
    std::fs::write(
        dir.join("bench-local.json"),
        serde_json::to_string_pretty(&summary).expect("JSON"),
    )
    .expect("write bench-local.json");
}

/// Seconds for the code-review FSM on the local model, when `CLAIJ_BENCH_FSM` names a `claij` binary.
fn fsm_code_review() -> Option<f64> {
    let bin = std::env::var_os("CLAIJ_BENCH_FSM")?;
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let started = Instant::now();
    let output = Command::new(bin)
        .current_dir(&root)
        .args([
            "fsm",
            "run",
            "examples/fsm/code-review.json",
            "--input",
            r#"{"code": "fn add(a: i32, b: i32) -> i32 { a - b }"}"#,
            "--llm",
            "local",
            "--threads",
            "2",
        ])
        .output()
        .expect("run claij");
    let elapsed = started.elapsed().as_secs_f64();
    if !output.status.success() {
        eprintln!(
            "the code-review FSM failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        return None;
    }
    Some(elapsed)
}

fn target_dir() -> PathBuf {
    // benches run from the package directory; the workspace target is two levels up unless overridden.
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"))
}

fn model_path() -> Option<PathBuf> {
    let path =
        claij_local::model_dir(|name| std::env::var_os(name)).join(claij_local::DEFAULT_MODEL_FILE);
    path.is_file().then_some(path)
}

/// Totals over one set of generations.
#[derive(Default)]
struct Totals {
    runs: usize,
    parsed: usize,
    valid: usize,
    /// Valid after claij's extraction, repair and coercion (what the pipeline's first attempt gets).
    recovered: usize,
    length_stops: usize,
    prompt_tokens: usize,
    prefill: Duration,
    decoded_tokens: usize,
    decode: Duration,
    masks: usize,
    mask_total: Duration,
    grammar_compile: Duration,
}

impl Totals {
    fn json(&self) -> Value {
        let per_s = |n: usize, d: Duration| n as f64 / d.as_secs_f64().max(1e-9);
        json!({
            "runs": self.runs,
            "parsed": self.parsed,
            "valid": self.valid,
            "recovered": self.recovered,
            "length_stops": self.length_stops,
            "prefill_tok_s": per_s(self.prompt_tokens, self.prefill),
            "decode_tok_s": per_s(self.decoded_tokens, self.decode),
            "mask_ms": if self.masks == 0 { 0.0 } else { self.mask_total.as_secs_f64() * 1e3 / self.masks as f64 },
            "grammar_ms": if self.runs == 0 { 0.0 } else { self.grammar_compile.as_secs_f64() * 1e3 / self.runs as f64 },
            "mean_prompt_tokens": self.prompt_tokens as f64 / self.runs.max(1) as f64,
        })
    }
}

fn child(threads: &str) {
    let path = model_path().expect("model present");
    // Load from the cache (made by an earlier run), then once more re-quantising in memory.
    let started = Instant::now();
    let backend = LocalBackend::load(&path).expect("load");
    let cached_load = started.elapsed();
    let started = Instant::now();
    drop(
        LocalBackend::load_with(
            &path,
            LocalConfig::default().with_requantize(Requantize::InMemory),
        )
        .expect("load"),
    );
    let requantize_load = started.elapsed();
    let unconstrained = LocalBackend::load_with(
        &path,
        LocalConfig::default().with_decoding(Decoding::Unconstrained),
    )
    .expect("load");

    let schemas = [
        ("small", small_schema()),
        (
            "enums",
            json!({
                "type": "object",
                "properties": {
                    "verdict": {"enum": ["yes", "no", "unsure"]},
                    "topic": {"enum": ["geography", "nature", "maths", "animals", "other"]},
                    "confidence": {"type": "integer", "minimum": 0, "maximum": 10}
                },
                "required": ["verdict", "topic", "confidence"],
                "additionalProperties": false
            }),
        ),
    ];
    let mut constrained_totals = Totals::default();
    let mut unconstrained_totals = Totals::default();
    for (_, schema) in &schemas {
        let validator = Validator::new(schema).expect("schema compiles");
        let compiled = Dialect::Llguidance.compile(schema).expect("dialect");
        for prompt in PROMPTS {
            let request = ChatRequest::new("local")
                .message(Message::user(prompt))
                .structured("response", compiled.schema.clone(), true)
                .max_tokens(200);
            for (model, totals) in [
                (&backend, &mut constrained_totals),
                (&unconstrained, &mut unconstrained_totals),
            ] {
                let generation = model
                    .generate(&request, &AtomicBool::new(false))
                    .expect("generate");
                let t = generation.timings;
                totals.runs += 1;
                totals.prompt_tokens += t.prompt_tokens;
                totals.prefill += t.prefill;
                totals.decoded_tokens += t.generated_tokens;
                totals.decode += t.decode;
                totals.masks += t.masks;
                totals.mask_total += t.mask_total;
                totals.grammar_compile += t.grammar_compile;
                totals.length_stops +=
                    usize::from(generation.finish_reason == FinishReason::Length);
                if let Ok(value) = serde_json::from_str::<Value>(generation.text.trim()) {
                    totals.parsed += 1;
                    totals.valid += usize::from(validator.is_valid(&value));
                }
                let outcome = claij_validation::process(&generation.text, &validator);
                totals.recovered +=
                    usize::from(matches!(outcome, claij_validation::Outcome::Valid { .. }));
            }
        }
    }
    let prefill = prefill_figures(&path);
    let row = json!({
        "prefill": prefill,
        "threads": threads.parse::<usize>().unwrap_or(0),
        "candle_threads": LocalBackend::threads(),
        "load_cached_s": cached_load.as_secs_f64(),
        "load_requantize_s": requantize_load.as_secs_f64(),
        "peak_rss_mib": peak_rss_mib(),
        "constrained": constrained_totals.json(),
        "unconstrained": unconstrained_totals.json(),
    });
    println!("{row}");
}

/// Prompt reading alone (one generated token), the cache off unless said: cold with the default
/// weights over [`PROMPTS`] (the figure the issue's 171 tok/s was), a long prompt (system prompt and
/// the shared small schema) with f32 and with Q8_0 weights, and a second question after the same
/// system prompt and schema with the cache on (all its prompt tokens over its prefill time).
fn prefill_figures(path: &std::path::Path) -> Value {
    let off = |weights| {
        LocalBackend::load_with(
            path,
            LocalConfig::default()
                .with_kv_cache_mib(0)
                .with_prefill(weights),
        )
        .expect("load")
    };
    let schema = Dialect::Llguidance
        .compile(&small_schema())
        .expect("dialect")
        .schema;
    let long = |question: &str| {
        ChatRequest::new("local")
            .system("You are a careful assistant. Answer the question in the requested format; be brief and do not invent facts.")
            .message(Message::user(question))
            .structured("response", schema.clone(), true)
            .max_tokens(1)
    };
    let rate = |backend: &LocalBackend, request: &ChatRequest| {
        // Best of three: the machine is shared.
        (0..3)
            .map(|_| {
                let t = backend
                    .generate(request, &AtomicBool::new(false))
                    .expect("generate")
                    .timings;
                t.prompt_tokens as f64 / t.prefill.as_secs_f64().max(1e-9)
            })
            .fold(0.0, f64::max)
    };
    let f32_weights = off(PrefillWeights::F32);
    let q8_weights = off(PrefillWeights::Quantized);
    let (mut tokens, mut time) = (0, Duration::ZERO);
    for prompt in PROMPTS {
        let request = ChatRequest::new("local")
            .message(Message::user(prompt))
            .structured("response", schema.clone(), true)
            .max_tokens(1);
        let t = f32_weights
            .generate(&request, &AtomicBool::new(false))
            .expect("generate")
            .timings;
        tokens += t.prompt_tokens;
        time += t.prefill;
    }
    let cold = tokens as f64 / time.as_secs_f64().max(1e-9);
    let first = long(PROMPTS[0]);
    let f32_tok_s = rate(&f32_weights, &first);
    let q8_tok_s = rate(&q8_weights, &first);
    drop((f32_weights, q8_weights));
    let cached = LocalBackend::load(path).expect("load");
    let mut best = 0.0f64;
    let mut cached_tokens = 0;
    let mut prompt_tokens = 0;
    for (i, question) in PROMPTS.iter().enumerate().skip(1).take(3) {
        cached
            .generate(&long(PROMPTS[i - 1]), &AtomicBool::new(false))
            .expect("generate");
        let t = cached
            .generate(&long(question), &AtomicBool::new(false))
            .expect("generate")
            .timings;
        best = best.max(t.prompt_tokens as f64 / t.prefill.as_secs_f64().max(1e-9));
        cached_tokens = t.cached_tokens;
        prompt_tokens = t.prompt_tokens;
    }
    json!({
        "cold_tok_s": cold,
        "f32_tok_s": f32_tok_s,
        "q8_tok_s": q8_tok_s,
        "cached_tok_s": best,
        "long_prompt_tokens": prompt_tokens,
        "cached_tokens": cached_tokens,
    })
}

#[path = "../../../fixtures/fixture.rs"]
mod fixtures;

/// The small bench schema (`fixtures/bench/small.json`).
fn small_schema() -> Value {
    fixtures::json("fixtures/bench/small.json")
}

/// The process's peak resident set (Linux), in MiB.
fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

fn table(rows: &[Value], fsm: Option<f64>) -> String {
    let mut out = String::from(
        "\n## local model (SmolLM2-135M-Instruct, Q8_0)\n\n\
         | threads | load (cached) | load (re-quantise) | peak RSS | prefill tok/s | decode tok/s (constrained) | decode tok/s (free) | mask ms/token | grammar ms | valid first try, constrained | valid first try, unconstrained (raw / after repair) |\n\
         |---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for row in rows {
        let c = &row["constrained"];
        let u = &row["unconstrained"];
        out.push_str(&format!(
            "| {} | {:.2} s | {:.2} s | {:.0} MiB | {:.0} | {:.1} | {:.1} | {:.3} | {:.2} | {}/{} ({} cut at the limit) | {}/{} / {}/{} ({} parse as JSON) |\n",
            row["candle_threads"],
            row["load_cached_s"].as_f64().unwrap_or(0.0),
            row["load_requantize_s"].as_f64().unwrap_or(0.0),
            row["peak_rss_mib"].as_f64().unwrap_or(0.0),
            c["prefill_tok_s"].as_f64().unwrap_or(0.0),
            c["decode_tok_s"].as_f64().unwrap_or(0.0),
            u["decode_tok_s"].as_f64().unwrap_or(0.0),
            c["mask_ms"].as_f64().unwrap_or(0.0),
            c["grammar_ms"].as_f64().unwrap_or(0.0),
            c["valid"], c["runs"], c["length_stops"],
            u["valid"], u["runs"], u["recovered"], u["runs"], u["parsed"],
        ));
    }
    out.push_str(
        "\n| threads | prefill cold tok/s (questions) | long prompt: f32 weights | long prompt: Q8_0 weights | after a cached prefix (cached / prompt tokens) |\n|---|---|---|---|---|\n",
    );
    for row in rows {
        let p = &row["prefill"];
        out.push_str(&format!(
            "| {} | {:.0} | {:.0} | {:.0} | {:.0} ({} / {}) |\n",
            row["candle_threads"],
            p["cold_tok_s"].as_f64().unwrap_or(0.0),
            p["f32_tok_s"].as_f64().unwrap_or(0.0),
            p["q8_tok_s"].as_f64().unwrap_or(0.0),
            p["cached_tok_s"].as_f64().unwrap_or(0.0),
            p["cached_tokens"],
            p["long_prompt_tokens"],
        ));
    }
    if let Some(seconds) = fsm {
        out.push_str(&format!(
            "\nexamples/fsm/code-review.json on the local model, 2 threads: {seconds:.1} s\n"
        ));
    }
    out.push_str(&format!(
        "\nPrompts: {} questions x 2 schemas (fixtures/bench/small.json, an enum schema), greedy, max 200 tokens; the schema is in the prompt in both modes, and the first table's prefill has the prefix cache on (questions share the schema). The second table reads prompts alone (one token generated, best of three, the cache off except in the last column); the long prompt is a system prompt, the question and the small schema. Peak RSS includes every model the child loads (one at a time where it can).\n",
        PROMPTS.len()
    ));
    out
}
