//! Requests from the server to the client: sampling, roots and elicitation, as JSON-RPC requests in
//! the middle of a call (2025-11-25, `server-everything`) and as input requests of an
//! `InputRequiredResult` (2026-07-28, a Python stub).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use std::sync::{Arc, Mutex};

use claij_backends::{BoxFuture, Role};
use claij_interceptors::BoxError;
use claij_mcp::{
    BackendSampler, CallFailure, ClientOptions, ElicitationQueue, ElicitationReply, Hooks,
    McpClient, Root, Sampler, SamplingReply, SamplingRequest,
};
use claij_test_support::Scripted;
use serde_json::{Value, json};

use crate::servers;

/// A sampler that records what it was asked and answers with a fixed text.
#[derive(Clone, Default)]
struct Recorder {
    seen: Arc<Mutex<Vec<SamplingRequest>>>,
}

impl Sampler for Recorder {
    fn sample<'a>(
        &'a self,
        request: &'a SamplingRequest,
    ) -> BoxFuture<'a, Result<SamplingReply, BoxError>> {
        Box::pin(async move {
            self.seen.lock().unwrap().push(request.clone());
            Ok(SamplingReply::new("the answer is 42", "claij-test-model"))
        })
    }
}

/// The questions an elicitor saw: `(server, message, schema)`.
type Questions = Arc<Mutex<Vec<(String, String, Value)>>>;

/// An elicitation queue whose questions are answered, in order, with `replies`; returns the
/// questions seen.
fn answering(replies: Vec<ElicitationReply>) -> (ElicitationQueue, Questions) {
    let (queue, mut questions) = ElicitationQueue::new(4);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    tokio::spawn(async move {
        for reply in replies {
            let Some(pending) = questions.recv().await else {
                return;
            };
            let request = &pending.request;
            record.lock().unwrap().push((
                request.server.clone(),
                request.message.clone(),
                request.schema.clone(),
            ));
            pending.answer(reply);
        }
    });
    (queue, seen)
}

async fn connect(dir: &std::path::Path, hooks: Hooks) -> McpClient {
    servers::connect_with(
        "everything",
        servers::everything(dir),
        ClientOptions::default().with_hooks(hooks),
    )
    .await
}

#[tokio::test]
async fn sampling_requests_are_answered_by_the_sampler() {
    let Some(dir) = servers::require("sampling_requests_are_answered_by_the_sampler") else {
        return;
    };
    let recorder = Recorder::default();
    let scripted = Scripted::replies(["Paris is the capital."]);
    let (everything, backed) = tokio::join!(
        connect(&dir, Hooks::default().with_sampler(recorder.clone())),
        connect(
            &dir,
            Hooks::default().with_sampler(BackendSampler::new(
                Arc::new(scripted.clone()),
                "scripted-model"
            ))
        ),
    );

    let outcome = everything
        .call(
            "trigger-sampling-request",
            json!({"prompt": "What is six times seven?", "maxTokens": 33}),
        )
        .await
        .unwrap();
    assert!(!outcome.is_error, "{outcome}");
    // The server's tool result carries our answer back.
    assert!(outcome.text().contains("the answer is 42"), "{outcome}");
    assert!(outcome.text().contains("claij-test-model"), "{outcome}");
    let seen = recorder.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    let request = &seen[0];
    assert_eq!(request.server, "everything");
    assert_eq!(
        request.messages,
        [(
            "user".to_owned(),
            "Resource trigger-sampling-request context: What is six times seven?".to_owned()
        )]
    );
    assert_eq!(
        request.system_prompt.as_deref(),
        Some("You are a helpful test server.")
    );
    assert_eq!(request.max_tokens, 33);
    assert_eq!(request.temperature, Some(0.7));

    let outcome = backed
        .call(
            "trigger-sampling-request",
            json!({"prompt": "What is the capital of France?"}),
        )
        .await
        .unwrap();
    assert!(
        outcome.text().contains("Paris is the capital."),
        "{outcome}"
    );
    assert!(outcome.text().contains("scripted-model"), "{outcome}");
    let asked = scripted.requests();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].model, "scripted-model");
    assert_eq!(
        asked[0].system.as_deref(),
        Some("You are a helpful test server.")
    );
    assert_eq!(asked[0].max_tokens, Some(100));
    assert_eq!(asked[0].messages.len(), 1);
    assert_eq!(asked[0].messages[0].role, Role::User);
    assert_eq!(
        asked[0].messages[0].content,
        "Resource trigger-sampling-request context: What is the capital of France?"
    );
    tokio::join!(everything.close(), backed.close());
}

#[tokio::test]
async fn roots_are_listed_to_the_server() {
    let Some(dir) = servers::require("roots_are_listed_to_the_server") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let named = Root {
        uri: format!("file://{}", work.path().display()),
        name: Some("workspace".to_owned()),
    };
    let unnamed = Root::dir("/srv/claij");
    assert_eq!(unnamed.uri, "file:///srv/claij");
    let everything = connect(&dir, Hooks::default().with_roots([named.clone(), unnamed])).await;
    let outcome = everything.call("get-roots-list", json!({})).await.unwrap();
    let text = outcome.text();
    assert!(text.contains("Current MCP Roots (2 total)"), "{text}");
    assert!(
        text.contains(&format!("1. workspace\n   URI: {}", named.uri)),
        "{text}"
    );
    assert!(
        text.contains("2. Unnamed Root\n   URI: file:///srv/claij"),
        "{text}"
    );
    everything.close().await;
}

#[tokio::test]
async fn elicitations_reach_a_person_and_their_answer_reaches_the_server() {
    let Some(dir) =
        servers::require("elicitations_reach_a_person_and_their_answer_reaches_the_server")
    else {
        return;
    };
    let answer = json!({"name": "Ada Lovelace", "check": true, "integer": 7});
    let (queue, seen) = answering(vec![
        ElicitationReply::Accept(answer),
        ElicitationReply::Decline,
        ElicitationReply::Cancel,
    ]);
    let (unanswered, questions) = ElicitationQueue::new(1);
    drop(questions);
    let (everything, nobody, without) = tokio::join!(
        connect(&dir, Hooks::default().with_elicitor(queue)),
        connect(&dir, Hooks::default().with_elicitor(unanswered)),
        connect(&dir, Hooks::default()),
    );

    let accepted = everything
        .call("trigger-elicitation-request", json!({}))
        .await
        .unwrap();
    let text = accepted.text();
    assert!(
        text.contains("User provided the requested information"),
        "{text}"
    );
    assert!(text.contains("- Name: Ada Lovelace"), "{text}");
    assert!(text.contains("- Agreed to terms: true"), "{text}");
    assert!(text.contains("- Favorite Integer: 7"), "{text}");
    let declined = everything
        .call("trigger-elicitation-request", json!({}))
        .await
        .unwrap();
    assert!(declined.text().contains("User declined"), "{declined}");
    let cancelled = everything
        .call("trigger-elicitation-request", json!({}))
        .await
        .unwrap();
    assert!(cancelled.text().contains("User cancelled"), "{cancelled}");

    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3);
    let (server, message, schema) = &seen[0];
    assert_eq!(server, "everything");
    assert_eq!(message, "Please provide inputs for the following fields:");
    assert_eq!(schema["properties"]["name"]["type"], "string");
    assert_eq!(schema["required"], json!(["name"]));

    // A question nobody takes is declined.
    let nobody_there = nobody
        .call("trigger-elicitation-request", json!({}))
        .await
        .unwrap();
    assert!(
        nobody_there.text().contains("User declined"),
        "{nobody_there}"
    );

    // Without the hooks the capabilities are not declared, and the server offers no such tools.
    assert!(everything.tool("trigger-elicitation-request").is_some());
    for tool in [
        "trigger-elicitation-request",
        "trigger-sampling-request",
        "get-roots-list",
    ] {
        let outcome = without.call(tool, json!({})).await.unwrap();
        assert!(
            matches!(outcome.failure, Some(CallFailure::UnknownTool { .. })),
            "{tool}: {outcome}"
        );
    }
    tokio::join!(everything.close(), nobody.close(), without.close());
}

/// The stub's `ask` reply: `{"state": ..., "responses": {key: result}}`.
async fn ask(client: &McpClient) -> Value {
    let outcome = client.call("ask", json!({})).await.unwrap();
    assert!(!outcome.is_error, "{outcome}");
    serde_json::from_str(&outcome.text()).unwrap()
}

#[tokio::test]
async fn input_requests_of_the_stateless_revision_are_answered_through_the_hooks() {
    let Some(dir) =
        servers::require("input_requests_of_the_stateless_revision_are_answered_through_the_hooks")
    else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let recorder = Recorder::default();
    let (queue, seen) = answering(vec![ElicitationReply::Accept(json!({"name": "Ada"}))]);
    let hooks = Hooks::default()
        .with_sampler(recorder.clone())
        .with_roots([Root::dir(work.path())])
        .with_elicitor(queue);
    let (answered, bare) = tokio::join!(
        servers::connect_with(
            "stub",
            servers::stub(&dir, work.path()),
            ClientOptions::default().with_hooks(hooks)
        ),
        servers::connect("stub", servers::stub(&dir, work.path())),
    );
    assert_eq!(answered.protocol_version(), "2026-07-28");

    let reply = ask(&answered).await;
    assert_eq!(
        reply["state"], "round-1",
        "the request state comes back: {reply}"
    );
    let responses = &reply["responses"];
    assert_eq!(
        responses["name"],
        json!({"action": "accept", "content": {"name": "Ada"}}),
        "{reply}"
    );
    assert_eq!(
        responses["roots"]["roots"],
        json!([{"uri": format!("file://{}", work.path().display())}]),
        "{reply}"
    );
    assert_eq!(
        responses["poem"]["content"]["text"], "the answer is 42",
        "{reply}"
    );
    assert_eq!(responses["poem"]["model"], "claij-test-model", "{reply}");
    let asked = recorder.seen.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].server, "stub");
    assert_eq!(
        asked[0].messages,
        [("user".to_owned(), "A poem, please".to_owned())]
    );
    assert_eq!(asked[0].system_prompt.as_deref(), Some("You are a poet."));
    assert_eq!(asked[0].max_tokens, 40);
    let questions = seen.lock().unwrap().clone();
    assert_eq!(questions.len(), 1);
    assert_eq!(questions[0].1, "Your name?");

    // Without hooks: the elicitation is declined, no roots are offered, and sampling is left out
    // for the server to decide.
    let reply = ask(&bare).await;
    let responses = &reply["responses"];
    assert_eq!(responses["name"], json!({"action": "decline"}), "{reply}");
    assert_eq!(responses["roots"], json!({"roots": []}), "{reply}");
    assert!(responses.get("poem").is_none(), "{reply}");
    tokio::join!(answered.close(), bare.close());
}
