//! Tests: recording a backend to a cassette and replaying it offline.

use std::path::PathBuf;
use std::time::Duration;

use claij_backends::cassette::{Recorder, Replayer, request_hash};
use claij_backends::{
    Backend, Capabilities, ChatRequest, ChatResponse, Error, ErrorContext, FinishReason, Message,
    SchemaDialect, StreamEvent, Usage,
};
use claij_test_support::Scripted;
use futures_executor::block_on;
use futures_util::StreamExt as _;
use serde_json::{Value, json};

/// A fresh cassette path for one test.
fn cassette(name: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("cassette-{name}.jsonl"));
    let _ = std::fs::remove_file(&path);
    path
}

fn ask(question: &str) -> ChatRequest {
    ChatRequest::new("google/gemini-2.5-flash")
        .system("Answer as JSON.")
        .message(Message::user(question))
        .structured(
            "answer",
            json!({"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}),
            true,
        )
        .temperature(0.0)
}

fn rate_limited() -> Error {
    Error::RateLimited {
        context: ErrorContext::new("openrouter")
            .with_status(429)
            .with_request_id("gen-2"),
        retry_after: Some(Duration::from_secs(2)),
        message: "slow down".into(),
    }
}

fn answer(text: &str) -> ChatResponse {
    ChatResponse::text(text)
        .usage(Usage {
            input_tokens: 12,
            output_tokens: 5,
            cached_tokens: 2,
            reasoning_tokens: 1,
            cost_usd: Some(0.000_021),
            ..Usage::default()
        })
        .request_id("gen-1")
        .model("google/gemini-2.5-flash")
}

/// A scripted OpenRouter: a retried question (rate limited, then answered), then another one.
fn scripted() -> Scripted {
    Scripted::new([
        Err(rate_limited()),
        Ok(answer(r#"{"answer": "4"}"#)),
        Ok(answer(r#"{"answer": "6"}"#).finish_reason(FinishReason::Length)),
    ])
    .with_provider("openrouter")
    .with_capabilities(
        Capabilities::prompted()
            .with_schema_dialect(SchemaDialect::OpenAiStrict)
            .with_context_window(1_048_576),
    )
}

/// Records the script's three calls; returns what the live backend answered.
fn record(path: &PathBuf) -> Vec<Result<ChatResponse, Error>> {
    let recorder = Recorder::new(scripted(), path).unwrap();
    let out = vec![
        block_on(recorder.complete(&ask("2+2?"))),
        block_on(recorder.complete(&ask("2+2?"))),
        block_on(recorder.complete(&ask("3+3?"))),
    ];
    assert_eq!(recorder.inner().calls(), 3);
    out
}

#[test]
fn replays_what_was_recorded() {
    let path = cassette("replays");
    let live = record(&path);
    assert_eq!(live[0], Err(rate_limited()));

    let replayer = Replayer::open(&path).unwrap();
    assert_eq!(replayer.len(), 3);
    assert_eq!(replayer.provider(), "openrouter");
    let capabilities = replayer.capabilities("google/gemini-2.5-flash");
    assert_eq!(
        capabilities.schema_dialect,
        Some(SchemaDialect::OpenAiStrict)
    );
    assert_eq!(capabilities.context_window, Some(1_048_576));

    // Same order as recorded: the retried request gets the error, then the answer.
    let replayed = vec![
        block_on(replayer.complete(&ask("2+2?"))),
        block_on(replayer.complete(&ask("2+2?"))),
        block_on(replayer.complete(&ask("3+3?"))),
    ];
    assert_eq!(replayed, live);
    // Once the recordings run out, the last one answers again.
    assert_eq!(block_on(replayer.complete(&ask("2+2?"))), live[1]);
    // The error keeps everything a caller acts on.
    let err = replayed[0].clone().unwrap_err();
    assert!(err.is_retryable());
    assert_eq!(err.retry_after(), Some(Duration::from_secs(2)));
    assert_eq!(err.context().request_id.as_deref(), Some("gen-2"));
}

#[test]
fn a_request_with_no_recording_is_a_clear_error() {
    let path = cassette("miss");
    record(&path);
    let replayer = Replayer::open(&path).unwrap();
    let mut other_model = ask("2+2?");
    other_model.model = "openai/gpt-5".into();
    for request in [ask("4+4?"), ask("2+2?").temperature(0.5), other_model] {
        let err = block_on(replayer.complete(&request)).unwrap_err();
        let Error::Other { context, message } = &err else {
            panic!("{err:?}");
        };
        assert_eq!(context.provider, "openrouter");
        let hash = request_hash(&request);
        assert!(
            message.starts_with(&format!(
                "no recording for request {hash} (model `{}`) in ",
                request.model
            )),
            "{message}"
        );
        assert!(message.ends_with("cassette-miss.jsonl"), "{message}");
    }
}

#[test]
fn cassette_file_contents() {
    let path = cassette("contents");
    record(&path);
    let text = std::fs::read_to_string(&path).unwrap();
    // One JSON object a line, each with the hash of its request.
    for line in text.lines() {
        let entry: Value = serde_json::from_str(line).unwrap();
        let request: ChatRequest = serde_json::from_value(entry["request"].clone()).unwrap();
        assert_eq!(entry["hash"], request_hash(&request).as_str());
    }
    insta::assert_snapshot!(text);
}

const PLANTED: [&str; 5] = [
    "sk-or-v1-0123456789abcdefPLANTED",
    "sk-ant-api03-PLANTEDkey0123456789",
    "AIzaSyPLANTED0123456789abcdefghijk",
    "PLANTED-bearer-token-0123456789",
    "PLANTEDxapikey42",
];

#[test]
fn keys_never_reach_a_cassette() {
    let path = cassette("keys");
    let leaky = Scripted::from_fn(|request, index| {
        let echo = request.messages[0].content.clone();
        if index == 0 {
            Ok(ChatResponse::text(format!("you said: {echo}")).request_id(PLANTED[0]))
        } else {
            Err(Error::Authentication {
                context: ErrorContext::new("anthropic").with_status(401),
                message: format!(
                    "invalid x-api-key: {} (header Authorization: Bearer {})",
                    PLANTED[1], PLANTED[3]
                ),
            })
        }
    });
    let recorder = Recorder::new(leaky, &path).unwrap();
    let request = ChatRequest::new("m")
        .system(format!("Authorization: Bearer {}", PLANTED[3]))
        .message(Message::user(format!(
            "GET https://generativelanguage.googleapis.com/v1beta/models?key={} with {} or {}",
            PLANTED[2], PLANTED[2], PLANTED[0]
        )))
        .message(Message::user(format!(
            r#"{{"x-api-key": "{}"}}"#,
            PLANTED[4]
        )));
    let live = block_on(recorder.complete(&request)).unwrap();
    assert!(
        live.content.contains(PLANTED[0]),
        "the live answer is untouched"
    );
    assert!(block_on(recorder.complete(&request)).is_err());

    let text = std::fs::read_to_string(&path).unwrap();
    for key in PLANTED {
        assert!(!text.contains(key), "{key} leaked into {text}");
    }
    assert!(!text.contains("PLANTED"), "{text}");
    insta::assert_snapshot!(text);

    // The scrubbed cassette still answers the original request.
    let replayer = Replayer::open(&path).unwrap();
    let replayed = block_on(replayer.complete(&request)).unwrap();
    assert!(replayed.content.starts_with("you said: GET https://"));
    assert_eq!(replayed.request_id.as_deref(), Some("sk-***"));
    let err = block_on(replayer.complete(&request)).unwrap_err();
    assert!(matches!(err, Error::Authentication { .. }), "{err:?}");
}

#[test]
fn streams_are_recorded_when_they_end() {
    let path = cassette("stream");
    let recorder =
        Recorder::new(Scripted::new([Ok(answer("{\"answer\": \"4\"}"))]), &path).unwrap();
    let request = ask("2+2?");
    let events: Vec<_> = block_on(recorder.stream(&request).collect());
    assert!(events.iter().all(Result::is_ok), "{events:?}");
    assert!(events.contains(&Ok(StreamEvent::Text("{\"answer\": \"4\"}".into()))));

    let replayed = block_on(Replayer::open(&path).unwrap().complete(&request)).unwrap();
    assert_eq!(replayed.content, "{\"answer\": \"4\"}");
    assert_eq!(replayed.usage, answer("").usage);
    assert_eq!(replayed.model.as_deref(), Some("google/gemini-2.5-flash"));
}

#[test]
fn stream_errors_are_recorded() {
    let path = cassette("stream-error");
    let recorder = Recorder::new(Scripted::new([Err(rate_limited())]), &path).unwrap();
    let events: Vec<_> = block_on(recorder.stream(&ask("2+2?")).collect());
    assert_eq!(events, vec![Err(rate_limited())]);
    let replayer = Replayer::open(&path).unwrap();
    assert_eq!(
        block_on(replayer.complete(&ask("2+2?"))),
        Err(rate_limited())
    );
}

#[test]
fn concurrent_calls_write_whole_lines() {
    let path = cassette("concurrent");
    let recorder = Recorder::new(
        Scripted::from_fn(|request, _| {
            Ok(ChatResponse::text(request.messages[0].content.repeat(100)))
        }),
        &path,
    )
    .unwrap();
    let requests: Vec<ChatRequest> = (0..32).map(|i| ask(&format!("question {i}"))).collect();
    std::thread::scope(|scope| {
        for request in &requests {
            let recorder = &recorder;
            scope.spawn(move || block_on(recorder.complete(request)).unwrap());
        }
    });
    let replayer = Replayer::open(&path).unwrap();
    assert_eq!(replayer.len(), 32);
    for request in &requests {
        let replayed = block_on(replayer.complete(request)).unwrap();
        assert_eq!(replayed.content, request.messages[0].content.repeat(100));
    }
}

#[cfg(target_os = "linux")]
#[test]
fn a_failed_write_fails_the_call() {
    // Writes to /dev/full fail with "no space left on device".
    let recorder = Recorder::new(Scripted::replies(["ok"]), "/dev/full").unwrap();
    let err = block_on(recorder.complete(&ask("2+2?"))).unwrap_err();
    let Error::Other { context, message } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(context.provider, "scripted");
    assert!(
        message.starts_with("could not record to cassette /dev/full: "),
        "{message}"
    );
}
