//! Unit tests of the parts of the local backend that need no model file: chat templates, the prompt's
//! schema, grammar options, sampling.

use serde_json::json;

use super::sample::{Sampler, SplitMix64};
use super::vocab::{ChatTemplate, is_structural};
use super::{Traced, grammar_schema, schema_for_prompt};
use claij_backends::Message;

fn conversation() -> Vec<Message> {
    vec![
        Message::user("Remember: my favourite colour is blue."),
        Message::assistant(r#"{"answer":"Noted.","state":"remembered"}"#),
        Message::system("Be brief."),
        Message::new(claij_backends::Role::Tool, "42"),
        Message::user("What is my favourite colour?"),
    ]
}

#[test]
fn templates_render_the_conversation() {
    for (name, template) in [
        ("chatml", ChatTemplate::ChatMl),
        ("llama3", ChatTemplate::Llama3),
        ("inst", ChatTemplate::Inst),
        ("plain", ChatTemplate::Plain),
    ] {
        let prompt = template.render(Some("You answer in JSON."), &conversation());
        insta::assert_snapshot!(format!("template_{name}"), prompt);
    }
}

#[test]
fn templates_without_a_system_prompt() {
    let messages = [Message::user("Hi")];
    assert_eq!(
        ChatTemplate::ChatMl.render(None, &messages),
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    );
    assert_eq!(
        ChatTemplate::Inst.render(None, &[]),
        "<s>[INST] [/INST]",
        "an empty conversation still opens the answer"
    );
}

#[test]
fn template_detected_from_the_jinja_source() {
    let none = |_: &str| None;
    let chatml_tokens = |t: &str| ["<|im_start|>", "<|im_end|>"].contains(&t).then_some(1);
    #[track_caller]
    fn check(jinja: Option<&str>, tokens: impl Fn(&str) -> Option<u32>, expected: ChatTemplate) {
        assert_eq!(ChatTemplate::detect(jinja, tokens), expected, "{jinja:?}");
    }
    check(
        Some("{% for m in messages %}<|im_start|>{{m.role}}"),
        none,
        ChatTemplate::ChatMl,
    );
    check(
        Some("<|start_header_id|>{{ m.role }}<|end_header_id|>"),
        none,
        ChatTemplate::Llama3,
    );
    check(
        Some("[INST] {{ m.content }} [/INST]"),
        none,
        ChatTemplate::Inst,
    );
    check(None, chatml_tokens, ChatTemplate::ChatMl);
    check(Some("{{ m.content }}"), none, ChatTemplate::Plain);
    assert_eq!(ChatTemplate::ChatMl.end_of_turn(), Some("<|im_end|>"));
    assert_eq!(ChatTemplate::Plain.end_of_turn(), None);
}

#[test]
fn grammar_schema_fixes_whitespace_and_keeps_options() {
    let schema = json!({"type": "object", "x-guidance": {"whitespace_flexible": true}});
    assert_eq!(
        grammar_schema(&schema, false)["x-guidance"],
        json!({"whitespace_flexible": true}),
        "an explicit choice is kept"
    );
    let plain = json!({"type": "string"});
    assert_eq!(
        grammar_schema(&plain, true)["x-guidance"],
        json!({"whitespace_flexible": false, "lenient": true})
    );
    assert_eq!(
        grammar_schema(&json!(true), false),
        json!({"x-guidance": {"whitespace_flexible": false}})
    );
}

#[test]
fn prompt_schema_is_minified_without_engine_options() {
    let schema = json!({"type": "object", "x-guidance": {"lenient": true}, "required": ["a"]});
    assert_eq!(
        schema_for_prompt(&schema),
        r#"{"type":"object","required":["a"]}"#
    );
}

#[test]
fn greedy_picks_the_best_allowed_token() {
    let mut sampler = Sampler::new(None, 0.9, 0);
    assert_eq!(sampler.pick(&[0.5, f32::NEG_INFINITY, 2.0, 1.0]), Some(2));
    assert_eq!(sampler.pick(&[f32::NEG_INFINITY; 3]), None);
    assert_eq!(Sampler::new(Some(0.0), 0.9, 0), Sampler::Greedy);
}

#[test]
fn sampling_is_reproducible_and_respects_the_mask() {
    let logits = [1.0, 1.2, f32::NEG_INFINITY, 0.8, 1.1];
    let run = |seed| {
        let mut sampler = Sampler::new(Some(1.0), 1.0, seed);
        (0..200)
            .map(|_| sampler.pick(&logits).unwrap_or(99))
            .collect::<Vec<_>>()
    };
    let first = run(7);
    assert_eq!(first, run(7), "same seed, same tokens");
    assert_ne!(first, run(8), "another seed, other tokens");
    assert!(!first.contains(&2), "a masked token is never chosen");
    for token in [0, 1, 3, 4] {
        assert!(first.contains(&token), "token {token} never sampled");
    }
}

#[test]
fn top_p_keeps_only_the_head_of_the_distribution() {
    // Token 0 holds almost all the mass: with top_p 0.5 nothing else is ever chosen.
    let logits = [10.0, 0.0, 0.0, 0.0];
    let mut sampler = Sampler::new(Some(1.0), 0.5, 3);
    assert!((0..100).all(|_| sampler.pick(&logits) == Some(0)));
}

#[test]
fn splitmix_is_uniform_enough() {
    let mut rng = SplitMix64(1);
    let draws: Vec<f32> = (0..10_000).map(|_| rng.next_f32()).collect();
    assert!(draws.iter().all(|d| (0.0..1.0).contains(d)));
    let mean = draws.iter().sum::<f32>() / draws.len() as f32;
    assert!((mean - 0.5).abs() < 0.02, "mean {mean}");
}

#[test]
fn the_penalty_spares_all_punctuation_alike() {
    #[track_caller]
    fn check(token: &[u8], expected: bool) {
        assert_eq!(
            is_structural(token),
            expected,
            "{:?}",
            String::from_utf8_lossy(token)
        );
    }
    // A sentence's full stop before the closing quote is spared like a comma before it: otherwise
    // `."` is penalised after one sentence and `,"` (a comma inside the string) wins.
    check(b".\"", true);
    check(b",\"", true);
    check(b"\",", true);
    check(b"...\"", true);
    check(b" \n", true);
    check(b"Paris", false);
    check(b"IT,", false);
    check(b"", false);
    check(b"\xff<|im_end|>", false);
}

#[test]
fn native_tools_are_refused_not_ignored() {
    let ask = || claij_backends::ChatRequest::new("m").message(Message::user("hi"));
    assert!(super::check_no_tools(&ask()).is_ok());
    assert!(super::check_no_tools(&ask().tool_choice(claij_backends::ToolChoice::None)).is_ok());
    for request in [
        ask().tool(claij_backends::ToolSpec::new(
            "add",
            "",
            json!({"type": "object"}),
        )),
        ask().tool_choice(claij_backends::ToolChoice::Required),
    ] {
        let error = super::check_no_tools(&request).unwrap_err();
        assert_eq!(error.kind(), claij_backends::ErrorKind::BadRequest);
        assert_eq!(
            error.to_string(),
            "local: bad request: the local model has no native tools; offer them in the schema instead"
        );
    }
}

#[test]
fn the_kv_cache_limit_comes_from_the_environment_when_set() {
    use super::{KV_CACHE_ENV, LocalConfig};
    let with = |value: &'static str| {
        LocalConfig::default().with_env(move |name| (name == KV_CACHE_ENV).then(|| value.into()))
    };
    assert_eq!(with("0").unwrap().kv_cache_mib, 0);
    assert_eq!(with(" 64 ").unwrap().kv_cache_mib, 64);
    assert_eq!(
        with("").unwrap().kv_cache_mib,
        LocalConfig::default().kv_cache_mib,
        "empty counts as unset"
    );
    let error = with("lots").unwrap_err();
    assert!(error.contains("CLAIJ_KV_CACHE_MIB"), "{error}");
    assert_eq!(
        LocalConfig::default().with_env(|_| None).unwrap(),
        LocalConfig::default()
    );
}

#[test]
fn a_mixture_of_experts_is_refused_as_unsupported() {
    use candle_core::quantized::gguf_file::{self, Value};
    let dir = std::env::temp_dir().join(format!("claij-moe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("moe.gguf");
    let architecture = Value::String("llama".to_owned());
    let experts = Value::U32(8);
    let mut file = std::fs::File::create(&path).unwrap();
    gguf_file::write(
        &mut file,
        &[
            ("general.architecture", &architecture),
            ("llama.expert_count", &experts),
        ],
        &[],
    )
    .unwrap();
    drop(file);
    let error = super::load::load(&path, &super::Requantize::Off)
        .err()
        .expect("refused");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        matches!(&error, super::LoadError::Unsupported { reason, .. } if reason.contains("8 experts")),
        "{error}"
    );
}

/// Records the name of each span as it closes.
struct Closes(std::sync::Arc<std::sync::Mutex<Vec<&'static str>>>);

impl<S> tracing_subscriber::Layer<S> for Closes
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    fn on_close(&self, id: tracing::span::Id, ctx: tracing_subscriber::layer::Context<'_, S>) {
        if let Some(span) = ctx.span(&id) {
            self.0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(span.name());
        }
    }
}

/// The generation thread runs in the caller's span and lets go of it before the caller hears of
/// the result: a command that exits and flushes its exporter the moment its call returns must
/// find the call's span (and so its whole trace) closed. Held a moment longer, the trace was lost
/// at the collector when the machine was busy.
#[test]
fn the_generation_thread_lets_go_of_the_callers_span_before_it_hands_over_the_result() {
    use tracing_subscriber::layer::SubscriberExt as _;

    let closed = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let subscriber = tracing_subscriber::registry().with(Closes(closed.clone()));
    let traced = tracing::subscriber::with_default(subscriber, || {
        let call = tracing::info_span!("llm.call");
        let _in_call = call.enter();
        Traced::current()
    });
    // The caller's own handle is gone: the thread's is the last one.
    assert!(closed.lock().unwrap().is_empty());
    let mut delivered = None;
    traced.run_then(
        || {
            let current = tracing::Span::current();
            assert_eq!(current.metadata().map(|m| m.name()), Some("llm.call"));
            7
        },
        |value| delivered = Some((value, closed.lock().unwrap().clone())),
    );
    assert_eq!(delivered, Some((7, vec!["llm.call"])));
}
