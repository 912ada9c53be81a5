//! Tests of the `citations` interceptor: its delta and prompt, the citation check in the retry loop,
//! and the renderer for people.

use std::sync::Arc;

use claij_backends::ChatRequest;
use claij_interceptors::builtin::citations::{
    Citations, Document, Documents, Metadata, render_for_people,
};
use claij_interceptors::{Chain, Config, Context, Interceptor, Pipeline, Prompts, Schema};
use claij_test_support::Scripted;
use futures_executor::block_on;
use serde_json::{Value, json};

fn system(request: &ChatRequest) -> &str {
    request.system.as_deref().unwrap_or_default()
}

fn notes() -> Vec<Document> {
    vec![
        Document::new(
            "note-1",
            "Trip to Lisbon",
            "We land in Lisbon on 3 May at 10:40.\nThe hotel is in Alfama.",
        ),
        Document::new(
            "note-2",
            "Packing list",
            "Light clothes, walking shoes, a rain jacket.",
        ),
    ]
}

#[test]
fn schema_delta() {
    let mut schema = Schema::default();
    Citations::default()
        .pre_schema(&mut schema, &Context::default())
        .unwrap();
    let deltas: Value = schema
        .deltas()
        .iter()
        .map(|d| (d.extension_id.clone(), d.delta.clone()))
        .collect();
    insta::assert_json_snapshot!("delta", deltas);
}

#[test]
fn prompt_lists_the_interceptor_documents_then_the_turns() {
    let citations = Citations::new(notes());
    let mut ctx = Context::default();
    ctx.insert(Documents(vec![Document::new(
        "weather-7",
        "Forecast \"May\"",
        "Lisbon in May: 22°C, rarely rain.",
    )]));
    let mut prompts = Prompts::new("", "What do I pack?");
    citations.pre_prompt(&mut prompts, &ctx).unwrap();
    insta::assert_snapshot!("prompt_with_notes", prompts.system);
}

#[test]
fn prompt_without_documents_says_so() {
    let mut prompts = Prompts::new("", "hi");
    Citations::default()
        .pre_prompt(&mut prompts, &Context::default())
        .unwrap();
    insta::assert_snapshot!("prompt_without_notes", prompts.system);
}

/// What the model sees end to end: the notes, then the composed schema in compact form.
#[test]
fn system_prompt_of_a_request() {
    let backend = Scripted::replies([json!({
        "answer": "On 3 May.",
        "state": "done",
        "metadata": {"hasSources": true, "sourceTypes": ["notes"],
            "citations": [{"noteId": "note-1", "noteTitle": "Trip to Lisbon"}]}
    })
    .to_string()]);
    let citations = Citations::new(notes()[..1].to_vec());
    let pipeline = Pipeline::new(
        Arc::new(backend.clone()),
        Config::new("test-model"),
        Chain::new().with(citations),
    );
    let answer = block_on(pipeline.ask(&mut Context::default(), "When do we land?")).unwrap();
    let metadata: Metadata = serde_json::from_value(answer.value["metadata"].clone()).unwrap();
    assert_eq!(metadata.citations[0].note_id, "note-1");
    insta::assert_snapshot!("system_prompt", system(&backend.requests()[0]));
}

#[test]
fn metadata_is_required() {
    let backend = Scripted::replies([
        json!({"answer": "On 3 May.", "state": "done"}).to_string(),
        json!({"answer": "On 3 May.", "state": "done", "metadata": {}}).to_string(),
        json!({"answer": "On 3 May.", "state": "done", "metadata": {"hasSources": false}})
            .to_string(),
    ]);
    let pipeline = Pipeline::new(
        Arc::new(backend.clone()),
        Config::new("test-model"),
        Chain::new().with(Citations::default()),
    );
    let answer = block_on(pipeline.ask(&mut Context::default(), "When?")).unwrap();
    assert_eq!(answer.retries(), 2);
}

#[test]
fn unknown_note_ids_are_sent_back_for_a_retry() {
    let cite = |id: &str| {
        json!({
            "answer": "On 3 May.",
            "state": "done",
            "metadata": {"hasSources": true, "citations": [{"noteId": id, "noteTitle": "Trip"}]}
        })
        .to_string()
    };
    let backend = Scripted::replies([cite("note-3"), cite("weather-7")]);
    // The interceptor alone checks its citations (its check hook), once per attempt.
    let pipeline = Pipeline::new(
        Arc::new(backend.clone()),
        Config::new("test-model"),
        Chain::new().with(Citations::new(notes())),
    );
    let mut ctx = Context::default();
    ctx.insert(Documents(vec![Document::new("weather-7", "Forecast", "")]));
    let answer = block_on(pipeline.ask(&mut ctx, "When do we land?")).unwrap();

    assert_eq!(answer.retries(), 1);
    let first = &answer.attempts[0].violations;
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].instance_pointer, "/metadata/citations/0/noteId");
    assert_eq!(first[0].keyword, "citations");
    let requests = backend.requests();
    let retry = &requests[1].messages.last().unwrap().content;
    assert!(
        retry.contains(
            "unknown noteId `note-3`; the supplied notes are `note-1`, `note-2`, `weather-7`"
        ),
        "{retry}"
    );
}

#[test]
fn external_sources_need_a_url() {
    let backend = Scripted::replies([
        json!({"answer": "a", "state": "s", "metadata": {"hasSources": true,
            "externalSources": [{"title": "Lisbon", "source": "Wikipedia", "url": "not a url"}]}})
        .to_string(),
        json!({"answer": "a", "state": "s", "metadata": {"hasSources": true,
            "externalSources": [{"title": "Lisbon", "source": "Wikipedia",
                "url": "https://en.wikipedia.org/wiki/Lisbon"}]}})
        .to_string(),
    ]);
    let pipeline = Pipeline::new(
        Arc::new(backend),
        Config::new("test-model"),
        Chain::new().with(Citations::default()),
    );
    let answer = block_on(pipeline.ask(&mut Context::default(), "Lisbon?")).unwrap();
    assert_eq!(answer.retries(), 1);
    assert_eq!(
        answer.attempts[0].violations[0].instance_pointer,
        "/metadata/externalSources/0/url"
    );
}

#[test]
fn render_for_people_with_every_kind_of_source() {
    let reply = json!({
        "answer": "You land in Lisbon on 3 May at 10:40. Pack light clothes and a rain jacket: May is mild.",
        "state": "done",
        "metadata": {
            "hasSources": true,
            "sourceTypes": ["notes", "external", "profile"],
            "citations": [
                {"noteId": "note-1", "noteTitle": "Trip to Lisbon",
                    "excerpt": "We land in Lisbon on 3 May at 10:40.\nThe hotel is in Alfama."},
                {"noteId": "note-2", "noteTitle": "Packing list"}
            ],
            "externalSources": [{
                "title": "Lisbon climate", "source": "Wikipedia",
                "url": "https://en.wikipedia.org/wiki/Climate_of_Lisbon",
                "excerpt": "May averages 22°C."
            }],
            "usedProfile": true,
            "sourceExplanation": "The notes give the dates and the list; the climate page the weather."
        }
    });
    insta::assert_snapshot!("rendered_with_sources", render_for_people(&reply));
}

#[test]
fn render_for_people_without_sources() {
    let reply = json!({"answer": "Hello!", "state": "done", "metadata": {"hasSources": false}});
    insta::assert_snapshot!("rendered_without_sources", render_for_people(&reply));
}
