//! Resources and prompts of `server-everything`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use claij_mcp::Error;
use serde_json::{Map, Value, json};

use crate::servers;

fn args(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

#[tokio::test]
async fn resources_are_listed_and_read() {
    let Some(dir) = servers::require("resources_are_listed_and_read") else {
        return;
    };
    let everything = servers::connect("everything", servers::everything(&dir)).await;
    let resources = everything.resources().await.unwrap();
    let uri = "demo://resource/static/document/features.md";
    let features = resources
        .iter()
        .find(|r| r["uri"] == uri)
        .unwrap_or_else(|| panic!("no {uri} in {resources:?}"));
    assert_eq!(features["mimeType"], "text/markdown");
    assert_eq!(features["name"], "features.md");

    let read = everything.read_resource(uri).await.unwrap();
    let contents = read["contents"].as_array().unwrap();
    assert_eq!(contents.len(), 1);
    assert_eq!(contents[0]["uri"], uri);
    let on_disk = std::fs::read_to_string(
        dir.join("npm/node_modules/@modelcontextprotocol/server-everything/dist/docs/features.md"),
    )
    .unwrap();
    assert_eq!(contents[0]["text"], on_disk.as_str());

    // The templates, listed on their own.
    let templates = everything.resource_templates().await.unwrap();
    let uri_templates: Vec<&str> = templates
        .iter()
        .filter_map(|t| t["uriTemplate"].as_str())
        .collect();
    assert_eq!(
        uri_templates,
        [
            "demo://resource/dynamic/text/{resourceId}",
            "demo://resource/dynamic/blob/{resourceId}"
        ]
    );

    // A resource from a template.
    let dynamic = everything
        .read_resource("demo://resource/dynamic/text/7")
        .await
        .unwrap();
    let text = dynamic["contents"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("Resource 7: This is a plaintext resource"),
        "{text}"
    );

    let missing = everything.read_resource("demo://nowhere/at/all").await;
    match missing {
        Err(Error::Protocol {
            server,
            method,
            message,
            ..
        }) => {
            assert_eq!(server, "everything");
            assert_eq!(method, "resources/read");
            assert!(message.contains("demo://nowhere/at/all"), "{message}");
        }
        other => panic!("not a protocol error: {other:?}"),
    }
    assert!(everything.is_alive());
    everything.close().await;
}

#[tokio::test]
async fn prompts_are_listed_and_filled_in() {
    let Some(dir) = servers::require("prompts_are_listed_and_filled_in") else {
        return;
    };
    let everything = servers::connect("everything", servers::everything(&dir)).await;
    let prompts = everything.prompts().await.unwrap();
    let names: Vec<&str> = prompts.iter().filter_map(|p| p["name"].as_str()).collect();
    assert!(
        names.contains(&"simple-prompt") && names.contains(&"args-prompt"),
        "{names:?}"
    );
    let with_args = prompts.iter().find(|p| p["name"] == "args-prompt").unwrap();
    let arguments = with_args["arguments"].as_array().unwrap();
    assert!(
        arguments
            .iter()
            .any(|a| a["name"] == "city" && a["required"] == true),
        "{with_args}"
    );
    assert!(
        arguments
            .iter()
            .any(|a| a["name"] == "state" && a["required"] != true),
        "{with_args}"
    );

    let text = |prompt: &Value| {
        prompt["messages"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let lisbon = everything
        .get_prompt(
            "args-prompt",
            args(json!({"city": "Lisbon", "state": "Estremadura"})),
        )
        .await
        .unwrap();
    assert_eq!(lisbon["messages"][0]["role"], "user");
    assert_eq!(text(&lisbon), "What's weather in Lisbon, Estremadura?");
    // Prompt arguments are strings; other values are sent as their JSON text.
    let number = everything
        .get_prompt("args-prompt", args(json!({"city": 42})))
        .await
        .unwrap();
    assert_eq!(text(&number), "What's weather in 42?");
    let simple = everything
        .get_prompt("simple-prompt", Map::new())
        .await
        .unwrap();
    assert_eq!(text(&simple), "This is a simple prompt without arguments.");

    let missing = everything.get_prompt("args-prompt", Map::new()).await;
    assert!(
        matches!(&missing, Err(Error::Protocol { method, code: -32602, .. }) if method == "prompts/get"),
        "{missing:?}"
    );
    let unknown = everything.get_prompt("no-such-prompt", Map::new()).await;
    assert!(
        matches!(&unknown, Err(Error::Protocol { .. })),
        "{unknown:?}"
    );
    everything.close().await;
}
