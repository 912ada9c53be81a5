//! The pipeline and a failing backend: it follows the one definition of retryable
//! (`claij_backends::Error::is_retryable`). A streamed reply that breaks off after part of it arrived
//! with a retryable error (which the HTTP layer cannot send again, its caller having seen part of
//! it) is sent again as the call's next attempt; anything else ends the call with the error.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use claij_backends::{
    Backend, BoxFuture, BoxStream, Capabilities, ChatRequest, ChatResponse, Error as BackendError,
    ErrorContext, FinishReason, StreamEvent,
};
use claij_interceptors::{Chain, Config, Context, Error, Pipeline, Verdict};
use serde_json::Value;

const ANSWER: &str = r#"{"answer": "4", "state": "done"}"#;

/// A backend whose first call fails with `error`: a stream after part of the reply, a complete
/// call at once. Later calls answer whole.
struct Breaks {
    error: BackendError,
    calls: AtomicUsize,
    requests: Mutex<Vec<ChatRequest>>,
}

impl Breaks {
    fn new(error: BackendError) -> Arc<Self> {
        Arc::new(Self {
            error,
            calls: AtomicUsize::new(0),
            requests: Mutex::new(Vec::new()),
        })
    }

    /// Whether this call is the first (and records its request).
    fn first(&self, request: &ChatRequest) -> bool {
        self.requests.lock().unwrap().push(request.clone());
        self.calls.fetch_add(1, Ordering::SeqCst) == 0
    }

    fn requests(&self) -> Vec<ChatRequest> {
        self.requests.lock().unwrap().clone()
    }
}

impl Backend for Breaks {
    fn provider(&self) -> &str {
        "breaks"
    }

    fn capabilities(&self, _model: &str) -> Capabilities {
        Capabilities::prompted()
    }

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, BackendError>> {
        let result = if self.first(request) {
            Err(self.error.clone())
        } else {
            Ok(ChatResponse::text(ANSWER))
        };
        Box::pin(async move { result })
    }

    fn stream<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxStream<'a, Result<StreamEvent, BackendError>> {
        let events = if self.first(request) {
            vec![
                Ok(StreamEvent::Text(r#"{"answer": "#.to_owned())),
                Err(self.error.clone()),
            ]
        } else {
            vec![
                Ok(StreamEvent::Text(ANSWER.to_owned())),
                Ok(StreamEvent::Finish(FinishReason::Stop)),
            ]
        };
        Box::pin(futures_util::stream::iter(events))
    }
}

fn overloaded() -> BackendError {
    BackendError::Overloaded {
        context: ErrorContext::new("anthropic").with_status(200),
        retry_after: None,
        message: "Overloaded".into(),
    }
}

fn bad_request() -> BackendError {
    BackendError::BadRequest {
        context: ErrorContext::new("anthropic").with_status(200),
        message: "messages: at least one message is required".into(),
    }
}

fn pipeline(backend: &Arc<Breaks>, max_retries: usize) -> Pipeline {
    let mut config = Config::new("m");
    config.max_retries = max_retries;
    Pipeline::new(backend.clone(), config, Chain::new())
}

fn streamed(pipeline: &Pipeline) -> Result<claij_interceptors::Answer, Error> {
    let partials = Mutex::new(Vec::new());
    let on_partial = |value: &Value| partials.lock().unwrap().push(value.clone());
    futures_executor::block_on(pipeline.ask_streaming(
        &mut Context::default(),
        "What is 2+2?",
        &on_partial,
    ))
}

#[test]
fn a_stream_broken_by_a_retryable_error_is_sent_again_as_the_next_attempt() {
    let backend = Breaks::new(overloaded());
    let answer = streamed(&pipeline(&backend, 3)).unwrap();
    assert_eq!(answer.value["answer"], "4");
    let verdicts: Vec<&Verdict> = answer.attempts.iter().map(|a| &a.verdict).collect();
    assert!(
        matches!(verdicts[..], [Verdict::BackendError { .. }, Verdict::Valid]),
        "{verdicts:?}"
    );
    assert_eq!(answer.retries(), 1);
    // The same request again, not a correction: the model said nothing wrong.
    let requests = backend.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].messages, requests[1].messages);
}

#[test]
fn a_stream_broken_by_a_permanent_error_ends_the_call() {
    let backend = Breaks::new(bad_request());
    let error = streamed(&pipeline(&backend, 3)).unwrap_err();
    let Error::Backend { attempts, source } = &error else {
        panic!("{error}");
    };
    assert!(!source.is_retryable());
    assert_eq!(attempts.len(), 1);
    assert_eq!(backend.requests().len(), 1);
}

#[test]
fn a_broken_stream_is_sent_again_only_within_the_retries() {
    let backend = Breaks::new(overloaded());
    let error = streamed(&pipeline(&backend, 0)).unwrap_err();
    assert!(matches!(error, Error::Backend { .. }), "{error}");
    assert_eq!(backend.requests().len(), 1);
}

/// A complete call's retryable error was the HTTP layer's to retry (under its policy): the
/// pipeline does not send it again on top.
#[test]
fn a_complete_call_that_failed_is_not_sent_again_by_the_pipeline() {
    let backend = Breaks::new(overloaded());
    let error =
        futures_executor::block_on(pipeline(&backend, 3).ask(&mut Context::default(), "2+2?"))
            .unwrap_err();
    let Error::Backend { attempts, source } = &error else {
        panic!("{error}");
    };
    assert!(source.is_retryable());
    assert_eq!(attempts.len(), 1);
    assert_eq!(backend.requests().len(), 1);
}

fn refused() -> BackendError {
    BackendError::Refused {
        context: ErrorContext::new("gemini").with_status(200),
        message: "finish reason MODEL_ARMOR: Blocked by Model Armor.".into(),
    }
}

/// A refusal is the model's answer, not an empty reply: neither a complete nor a streamed call is
/// sent again (not as a correction, however many retries the pipeline allows), and the error says
/// it is a refusal with the provider's message.
#[test]
fn a_refusal_is_sent_once_complete_or_streamed() {
    let backend = Breaks::new(refused());
    let complete =
        futures_executor::block_on(pipeline(&backend, 3).ask(&mut Context::default(), "2+2?"))
            .unwrap_err();
    assert_eq!(backend.requests().len(), 1);
    let backend = Breaks::new(refused());
    let streamed = streamed(&pipeline(&backend, 3)).unwrap_err();
    assert_eq!(backend.requests().len(), 1);
    for error in [complete, streamed] {
        assert!(error.is_refusal(), "{error}");
        assert!(
            !error.is_invalid_reply() && !error.is_retryable(),
            "{error}"
        );
        assert_eq!(error.attempts().len(), 1, "{error}");
        // The pipeline's line names the attempt, its source the provider's message.
        let source = error.backend().map(ToString::to_string).unwrap_or_default();
        assert!(
            source.contains("Blocked by Model Armor."),
            "{error}: {source}"
        );
    }
}
