//! The client's spans at a real server (the Python SDK's `mcp-server-time`), captured by a small
//! `tracing` layer: a tool call is an `execute_tool` span under the caller's span (an FSM state's
//! visit in the MCP FSM), a tool error marks it failed, content only when `claij::content` is on,
//! and the connection's service loop lives in its own `mcp.session`, not under `mcp.connect`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use std::sync::{Arc, Mutex};

use claij_backends::BoxFuture;
use claij_fsm::{Interrupt, Outcome};
use claij_interceptors::BoxError;
use claij_interceptors::Config;
use claij_mcp::{
    ClientOptions, Hooks, PendingElicitation, Sampler, SamplingReply, SamplingRequest, Services,
    mcp_fsm,
};
use claij_test_support::Scripted;
use claij_test_support::spans::{CapturedSpan, SpanCapture};
use serde_json::json;
use tracing::Instrument as _;

use crate::servers;

/// The shared capturing layer, run on a current-thread runtime.
#[derive(Default)]
struct Capture(SpanCapture);

impl Capture {
    /// Runs `f` on a current-thread runtime (so tasks it spawns report here too) with this layer
    /// as the thread's subscriber.
    fn run<T>(&self, f: impl std::future::Future<Output = T>) -> T {
        let _default = self.0.set_default();
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(f)
    }

    fn spans(&self) -> Vec<CapturedSpan> {
        self.0.spans()
    }
}

fn named<'a>(spans: &'a [CapturedSpan], name: &str) -> Vec<&'a CapturedSpan> {
    spans.iter().filter(|s| s.name == name).collect()
}

fn parent_name(spans: &[CapturedSpan], span: &CapturedSpan) -> Option<&'static str> {
    span.parent.map(|p| spans[p].name)
}

#[test]
fn a_tool_call_is_an_execute_tool_span_under_the_callers_span() {
    let Some(dir) = servers::require("a_tool_call_is_an_execute_tool_span_under_the_callers_span")
    else {
        return;
    };
    let capture = Capture::default();
    let (ok, failed) = capture.run(async {
        let time = servers::connect("time", servers::time(&dir)).await;
        let caller = tracing::info_span!("caller");
        let ok = time
            .call("get_current_time", json!({"timezone": "UTC"}))
            .instrument(caller.clone())
            .await
            .unwrap();
        let failed = time
            .call("get_current_time", json!({"timezone": "Nowhere/Nope"}))
            .instrument(caller)
            .await
            .unwrap();
        time.close().await;
        (ok, failed)
    });
    assert!(!ok.is_error, "{ok}");
    assert!(failed.is_error, "{failed}");
    let spans = capture.spans();
    let calls = named(&spans, "mcp.call");
    assert_eq!(calls.len(), 2, "{spans:#?}");
    for call in &calls {
        assert_eq!(parent_name(&spans, call), Some("caller"));
        let fields = &call.fields;
        assert_eq!(fields["otel.name"], "execute_tool get_current_time");
        assert_eq!(fields["otel.kind"], "client");
        assert_eq!(fields["gen_ai.operation.name"], "execute_tool");
        assert_eq!(fields["gen_ai.tool.name"], "get_current_time");
        assert_eq!(fields["claij.mcp.server"], "time");
        assert_eq!(fields["claij.mcp.tool"], "get_current_time");
        assert!(
            !fields.contains_key("gen_ai.tool.call.arguments")
                && !fields.contains_key("gen_ai.tool.call.result"),
            "content without opting in: {fields:?}"
        );
    }
    assert!(
        !calls[0].fields.contains_key("otel.status_code"),
        "{:?}",
        calls[0]
    );
    let failed = &calls[1].fields;
    assert_eq!(failed["otel.status_code"], "ERROR");
    assert_eq!(failed["error.type"], "tool");
    assert_eq!(
        failed["otel.status_description"],
        "the tool reported an error"
    );

    let connects = named(&spans, "mcp.connect");
    assert_eq!(connects.len(), 1, "{spans:#?}");
    assert_eq!(connects[0].fields["claij.mcp.server"], "time");
    // The service loop outlives the connect: it lives in a root span of its own, so nothing the
    // connection does later keeps `mcp.connect` (or a caller's span) open.
    let sessions = named(&spans, "mcp.session");
    assert!(!sessions.is_empty(), "{spans:#?}");
    assert!(sessions.iter().all(|s| s.parent.is_none()), "{sessions:?}");
    let loops = named(&spans, "serve_inner");
    assert!(
        !loops.is_empty(),
        "rmcp's service loop has a span: {spans:#?}"
    );
    for service_loop in loops {
        assert_eq!(parent_name(&spans, service_loop), Some("mcp.session"));
    }
}

#[test]
fn a_calls_arguments_and_result_are_recorded_only_with_content_on() {
    let Some(dir) =
        servers::require("a_calls_arguments_and_result_are_recorded_only_with_content_on")
    else {
        return;
    };
    let capture = Capture(SpanCapture::with_content(true));
    capture.run(async {
        let time = servers::connect("time", servers::time(&dir)).await;
        time.call("get_current_time", json!({"timezone": "UTC"}))
            .await
            .unwrap();
        time.close().await;
    });
    let spans = capture.spans();
    let call = named(&spans, "mcp.call")[0];
    assert_eq!(
        call.fields["gen_ai.tool.call.arguments"],
        r#"{"timezone":"UTC"}"#
    );
    let result: serde_json::Value =
        serde_json::from_str(&call.fields["gen_ai.tool.call.result"]).unwrap();
    assert_eq!(result["isError"], json!(false), "{result}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("UTC"), "{text}");
}

/// The MCP FSM with a question queue runs its tool calls in a task of their own: the call's span is still a child of the
/// `servicing` state's visit, in the run's tree.
#[test]
fn the_mcp_fsm_calls_a_tool_under_its_servicing_state() {
    let Some(dir) = servers::require("the_mcp_fsm_calls_a_tool_under_its_servicing_state") else {
        return;
    };
    let model = Scripted::replies([
        json!({"id": ["llm", "servicing"], "message": {
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "time.get_current_time", "arguments": {"timezone": "UTC"}}
        }})
        .to_string(),
        json!({"id": ["llm", "end"], "result": {"content": [{"type": "text", "text": "noon"}]}})
            .to_string(),
    ]);
    let capture = Capture::default();
    capture.run(async {
        let time = servers::connect("time", servers::time(&dir)).await;
        let services = Services::from_clients([time]);
        let mut config = Config::new("scripted");
        config.max_retries = 0;
        // With a question queue the call runs in a task of its own (a person may be asked).
        let (_questions, queue) = tokio::sync::mpsc::channel::<PendingElicitation>(1);
        let service = mcp_fsm::McpService::new(services.clone()).with_questions(queue);
        let runner = mcp_fsm::runner_with(service, Arc::new(model), config).unwrap();
        let mut run = runner
            .start(json!({"request": "What time is it?"}))
            .unwrap();
        let outcome = runner.run(&mut run, &Interrupt::new(), None).await.unwrap();
        services.close().await;
        assert!(matches!(outcome, Outcome::Finished { .. }), "{outcome:?}");
    });
    let spans = capture.spans();
    let calls = named(&spans, "mcp.call");
    assert_eq!(calls.len(), 1, "{spans:#?}");
    // The call runs through the tool engine: its `execute_tool` span, in the state's.
    let tool = &spans[calls[0].parent.expect("the call has a parent")];
    assert_eq!(tool.name, "execute_tool");
    let state = &spans[tool.parent.expect("the tool call has a parent")];
    assert_eq!(state.name, "fsm.state");
    assert_eq!(state.fields["claij.fsm.state"], mcp_fsm::SERVICING);
    assert_eq!(state.fields["claij.fsm.transition"], "servicing -> llm");
    assert_eq!(parent_name(&spans, state), Some("fsm.run"));
}

/// A server's request in the middle of a call (sampling at `server-everything`) runs in an
/// `mcp.server_request` span under that call's `mcp.call`, not in the connection's session.
#[test]
fn a_servers_request_during_a_call_runs_under_the_call() {
    let Some(dir) = servers::require("a_servers_request_during_a_call_runs_under_the_call") else {
        return;
    };
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sampler = SeenIn(Arc::clone(&seen));
    let capture = Capture::default();
    capture.run(async {
        let everything = servers::connect_with(
            "everything",
            servers::everything(&dir),
            ClientOptions::default().with_hooks(Hooks::default().with_sampler(sampler)),
        )
        .await;
        let outcome = everything
            .call(
                "trigger-sampling-request",
                json!({"prompt": "Six times seven?"}),
            )
            .await
            .unwrap();
        assert!(!outcome.is_error, "{outcome}");
        everything.close().await;
    });
    let spans = capture.spans();
    let requests = named(&spans, "mcp.server_request");
    assert_eq!(requests.len(), 1, "{spans:#?}");
    let request = requests[0];
    assert_eq!(parent_name(&spans, request), Some("mcp.call"));
    assert_eq!(request.fields["claij.mcp.method"], "sampling/createMessage");
    assert_eq!(
        request.fields["otel.name"],
        "sampling/createMessage everything"
    );
    assert_eq!(*seen.lock().unwrap(), [Some("mcp.server_request")]);
}

/// A sampler that records the span it is asked in.
struct SeenIn(Arc<Mutex<Vec<Option<&'static str>>>>);

impl Sampler for SeenIn {
    fn sample<'a>(
        &'a self,
        _: &'a SamplingRequest,
    ) -> BoxFuture<'a, Result<SamplingReply, BoxError>> {
        let current = tracing::Span::current();
        self.0
            .lock()
            .unwrap()
            .push(current.metadata().map(|m| m.name()));
        Box::pin(async { Ok(SamplingReply::new("42", "claij-test-model")) })
    }
}
