//! Typed partials: a backend streaming a reply in pieces, read through `Partial<T>`.

#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use claij_backends::{
    Backend, BoxFuture, BoxStream, Capabilities, ChatRequest, ChatResponse, Error, FinishReason,
    StreamEvent,
};
use serde_json::json;

use crate::{Chain, Config, Context, Partial, Pipeline};

#[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
struct Plan {
    title: String,
    steps: Vec<Step>,
}

#[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
struct Step {
    name: String,
    done: bool,
}

/// Streams one reply in the given pieces.
struct Pieces(Vec<&'static str>);

impl Backend for Pieces {
    fn provider(&self) -> &str {
        "pieces"
    }

    fn capabilities(&self, _model: &str) -> Capabilities {
        Capabilities::prompted()
    }

    fn complete<'a>(&'a self, _: &'a ChatRequest) -> BoxFuture<'a, Result<ChatResponse, Error>> {
        Box::pin(std::future::ready(Ok(ChatResponse::text(self.0.concat()))))
    }

    fn stream<'a>(&'a self, _: &'a ChatRequest) -> BoxStream<'a, Result<StreamEvent, Error>> {
        let mut events: Vec<Result<StreamEvent, Error>> = self
            .0
            .iter()
            .map(|piece| Ok(StreamEvent::Text((*piece).to_owned())))
            .collect();
        events.push(Ok(StreamEvent::Finish(FinishReason::Stop)));
        Box::pin(futures_util::stream::iter(events))
    }
}

#[test]
fn partials_grow_field_by_field_and_the_answer_is_typed() {
    let backend = Pieces(vec![
        r#"{"title": "Tr"#,
        r#"ip", "steps": [{"name": "pa"#,
        r#"ck", "done": tr"#,
        r#"ue}, {"name": "go""#,
        r#", "done": false}]}"#,
    ]);
    let pipeline = Pipeline::new(Arc::new(backend), Config::new("m"), Chain::new());
    let seen: Mutex<Vec<Partial<Plan>>> = Mutex::default();
    let answer = futures_executor::block_on(pipeline.ask_as_streaming::<Plan, _>(
        &mut Context::default(),
        "Plan a trip",
        |partial| seen.lock().unwrap().push(partial),
    ))
    .unwrap();
    let seen = seen.into_inner().unwrap();
    let titles: Vec<Option<String>> = seen.iter().map(|p| p.get("title")).collect();
    assert_eq!(
        titles,
        [
            Some("Tr"),
            Some("Trip"),
            Some("Trip"),
            Some("Trip"),
            Some("Trip")
        ]
        .map(|t| t.map(String::from))
    );
    // The first step's name grows; a step is a `Step` only once both its fields are there.
    let names: Vec<Option<String>> = seen.iter().map(|p| p.pointer("/steps/0/name")).collect();
    assert_eq!(
        names,
        [None, Some("pa"), Some("pack"), Some("pack"), Some("pack")].map(|n| n.map(String::from))
    );
    assert_eq!(seen[1].pointer::<Step>("/steps/0"), None);
    assert_eq!(
        seen[2].pointer::<Step>("/steps/0"),
        Some(Step {
            name: "pack".into(),
            done: true
        })
    );
    // A whole `Plan` whenever every field so far is whole: not while the second step lacks `done`.
    let complete: Vec<bool> = seen.iter().map(|p| p.complete().is_some()).collect();
    assert_eq!(complete, [false, false, true, false, true]);
    assert_eq!(
        seen[4].value(),
        &json!({"title": "Trip", "steps": [
        {"name": "pack", "done": true}, {"name": "go", "done": false}]})
    );
    assert_eq!(answer.value.steps.len(), 2);
    assert_eq!(answer.value.title, "Trip");
}
