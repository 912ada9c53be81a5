//! Unit tests of the MCP FSM: reading requests, specialising the definition, the tool list.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use claij_fsm::Fsm;
use serde_json::{Value, json};

use super::{ToolsCall, narrow, read_call, response, specialise, tools_response};
use crate::outcome::{CallFailure, CallOutcome};
use crate::project::Project;
use crate::tool::ToolInfo;

/// What `read_call` makes of `event`: the call, or the echoed id, the JSON-RPC code and the text.
#[track_caller]
fn check(event: Value, expected: Result<(Value, &str, Value), (Value, i32, &str)>) {
    match (read_call(&event), expected) {
        (Ok(call), Ok((id, name, arguments))) => {
            assert_eq!(
                (call.id, call.name.as_str(), call.arguments),
                (id, name, arguments)
            );
        }
        (Err(rejected), Err((id, code, text))) => {
            assert_eq!((rejected.id, rejected.code), (id, code));
            assert!(rejected.message.contains(text), "{}", rejected.message);
        }
        (got, expected) => panic!(
            "{event}: got {:?}, expected {expected:?}",
            got.map(|c| c.name).map_err(|r| r.message)
        ),
    }
}

fn request(message: Value) -> Value {
    json!({"id": ["llm", "servicing"], "message": message})
}

#[test]
fn requests_are_read_or_rejected_with_json_rpc_codes() {
    let call = |id: Value, params: Value| {
        request(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}))
    };
    check(
        call(
            json!(1),
            json!({"name": "fs.read", "arguments": {"path": "/a"}}),
        ),
        Ok((json!(1), "fs.read", json!({"path": "/a"}))),
    );
    check(
        call(json!("x-1"), json!({"name": "fs.list"})),
        Ok((json!("x-1"), "fs.list", json!({}))),
    );
    check(
        json!({"id": ["llm", "servicing"]}),
        Err((Value::Null, -32600, "`message` must be")),
    );
    check(
        call(json!(null), json!({"name": "a.b"})),
        Err((Value::Null, -32600, "needs an `id`")),
    );
    check(
        request(json!({"id": 2, "method": "tools/call", "params": {"name": "a.b"}})),
        Err((json!(2), -32600, "\"jsonrpc\": \"2.0\"")),
    );
    check(
        request(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})),
        Err((json!(3), -32601, "only tools/call")),
    );
    check(
        call(json!(4), json!({"arguments": {}})),
        Err((json!(4), -32602, "`params.name`")),
    );
    check(
        call(json!(5), json!({"name": "a.b", "arguments": [1]})),
        Err((json!(5), -32602, "must be an object")),
    );
}

#[test]
fn the_response_is_json_rpc_with_the_mcp_result() {
    let outcome = CallOutcome::failure(CallFailure::Transport, "gone");
    assert_eq!(
        response(json!(9), &outcome),
        json!({"id": ["servicing", "llm"], "message": {"jsonrpc": "2.0", "id": 9, "result": {
            "content": [{"type": "text", "text": "gone"}], "isError": true
        }}})
    );
}

fn tool(server: &str, name: &str, description: &str, input: Value) -> Arc<ToolInfo> {
    Arc::new(ToolInfo::new(
        server,
        name,
        Some(description.to_owned()),
        input,
        None,
    ))
}

#[test]
fn tools_become_branches_with_their_definitions_hoisted() {
    let draft7 = json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"when": {"type": "string"}},
        "required": ["when"]
    });
    let with_refs = json!({
        "type": "object",
        "properties": {"at": {"$ref": "#/definitions/point"}},
        "required": ["at"],
        "definitions": {"point": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}}
    });
    let broken = json!({"type": "object", "properties": {"n": {"type": "whole"}}});
    let tools = [
        tool("clock", "now", "The time.\nIn UTC.", draft7),
        tool("map", "pin", "Pins a point.", with_refs),
        tool("odd", "count", "Counts.", broken),
    ];
    let project = Project::new("trip", ["clock", "map", "odd"]);
    let definition = specialise(&tools, Some(&project));
    let fsm = Fsm::new(definition.clone()).unwrap();

    let params = definition
        .transition("llm", "servicing")
        .unwrap()
        .schema
        .pointer("/properties/message/properties/params/oneOf")
        .unwrap();
    let arguments = |i: usize| &params[i]["properties"]["arguments"];
    assert_eq!(
        arguments(0),
        &json!({"type": "object", "properties": {"when": {"type": "string"}}, "required": ["when"]}),
        "self-contained and normalised (no $schema): in place"
    );
    assert_eq!(arguments(1), &json!({"$ref": "#/$defs/map.pin"}));
    assert_eq!(
        definition.schemas["map.pin.point"]["required"],
        json!(["x"]),
        "{:?}",
        definition.schemas
    );
    assert_eq!(
        arguments(2),
        &json!({"type": "object"}),
        "does not compile: generic"
    );

    let call = |name: &str, arguments: Value| {
        json!({"id": ["llm", "servicing"], "message": {"jsonrpc": "2.0", "id": 1,
            "method": "tools/call", "params": {"name": name, "arguments": arguments}}})
    };
    assert!(
        fsm.route("llm", &call("clock.now", json!({"when": "now"})))
            .is_ok()
    );
    assert!(fsm.route("llm", &call("clock.now", json!({}))).is_err());
    assert!(
        fsm.route("llm", &call("map.pin", json!({"at": {"x": 1}})))
            .is_ok()
    );
    assert!(
        fsm.route("llm", &call("map.pin", json!({"at": {"y": 1}})))
            .is_err()
    );
    assert!(
        fsm.route("llm", &call("odd.count", json!({"n": 1})))
            .is_ok()
    );
    assert!(fsm.route("llm", &call("map.drop", json!({}))).is_err());

    let llm = definition.state("llm").unwrap();
    let hat = &llm.prompts[llm.prompts.len() - 2];
    assert!(
        hat.starts_with("You are working on project `trip`"),
        "{hat}"
    );
    let list = llm.prompts.last().unwrap();
    assert!(list.contains("- `clock.now`: The time.\n  In UTC.\n- `map.pin`: Pins a point.\n- `odd.count`: Counts.\n  arguments (not in the schema"), "{list}");
    let prompt = fsm.prompt("llm").unwrap();
    assert!(
        prompt.contains("x: number"),
        "the hoisted definition is rendered: {prompt}"
    );
}

#[tokio::test]
async fn an_answer_with_no_call_waiting_is_an_error_result() {
    let (_queue, questions) = crate::hooks::ElicitationQueue::new(1);
    let service = super::McpService::new(crate::services::Services::from_clients([]))
        .with_questions(questions);
    let event =
        json!({"id": ["asking", "servicing"], "answer": {"action": "accept", "content": {}}});
    let reply = service.step(&event).await;
    assert_eq!(reply["id"], json!(["servicing", "llm"]));
    assert_eq!(reply["message"]["result"]["isError"], true);
    let text = reply["message"]["result"]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("no tool call is waiting"), "{text}");
}

#[test]
fn answers_become_replies() {
    use crate::hooks::ElicitationReply;
    assert_eq!(
        super::reply_of(&json!({"action": "accept", "content": {"a": 1}})),
        ElicitationReply::Accept(json!({"a": 1}))
    );
    assert_eq!(
        super::reply_of(&json!({"action": "accept"})),
        ElicitationReply::Accept(json!({}))
    );
    assert_eq!(
        super::reply_of(&json!({"action": "cancel"})),
        ElicitationReply::Cancel
    );
    assert_eq!(
        super::reply_of(&json!({"action": "decline"})),
        ElicitationReply::Decline
    );
    assert_eq!(super::reply_of(&json!({})), ElicitationReply::Decline);
}

/// A machine of one's own: `ask` (llm) calls `files` (a service) with a tools/call request; `note`
/// (llm) sends it something else.
fn own_machine() -> claij_fsm::Definition {
    let call = json!({"type": "object", "properties": {"message": {"type": "object", "properties": {
        "jsonrpc": {"const": "2.0"}, "id": {"type": "integer"}, "method": {"const": "tools/call"},
        "params": {"type": "object", "properties": {"name": {"type": "string"}, "arguments": {"type": "object"}},
            "required": ["name", "arguments"]}},
        "required": ["jsonrpc", "id", "method", "params"]}}, "required": ["message"]});
    serde_json::from_value(json!({
        "id": "own",
        "states": [
            {"id": "ask", "action": "llm", "prompts": ["Ask."]},
            {"id": "note", "action": "llm"},
            {"id": "files", "action": "service"},
            {"id": "end", "action": "end"}
        ],
        "transitions": [
            {"id": ["start", "ask"]},
            {"id": ["ask", "files"], "schema": call},
            {"id": ["ask", "note"]},
            {"id": ["note", "files"], "schema": {"type": "object"}},
            {"id": ["files", "ask"]},
            {"id": ["ask", "end"]}
        ]
    }))
    .unwrap()
}

#[test]
fn narrowing_a_machine_of_one_s_own_touches_only_the_calls_into_the_service() {
    let mut definition = own_machine();
    let tools = [tool(
        "fs",
        "read_text_file",
        "Reads a file.",
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    )];
    narrow(&mut definition, "files", &tools, None);
    let fsm = Fsm::new(definition.clone()).unwrap();
    let call = |name: &str, arguments: Value| {
        json!({"id": ["ask", "files"], "message": {"jsonrpc": "2.0", "id": 1,
            "method": "tools/call", "params": {"name": name, "arguments": arguments}}})
    };
    assert!(
        fsm.route("ask", &call("fs.read_text_file", json!({"path": "/a"})))
            .is_ok()
    );
    assert!(
        fsm.route("ask", &call("fs.write_file", json!({"path": "/a"})))
            .is_err(),
        "only the tools there are"
    );
    assert!(
        fsm.route("ask", &call("fs.read_text_file", json!({})))
            .is_err()
    );
    assert_eq!(
        definition.transition("note", "files").unwrap().schema,
        json!({"type": "object"}),
        "no tools/call request in it: left alone"
    );
    let prompts = |id: &str| definition.state(id).unwrap().prompts;
    assert_eq!(prompts("ask").len(), 2, "{:?}", prompts("ask"));
    assert!(prompts("ask")[1].contains("`fs.read_text_file`: Reads a file."));
    assert!(prompts("note").is_empty(), "it sends no tools/call request");
    let mut again = definition.clone();
    narrow(
        &mut again,
        "files",
        &tools,
        Some(&Project::new("p", ["fs"])),
    );
    narrow(
        &mut again,
        "files",
        &tools,
        Some(&Project::new("p", ["fs"])),
    );
    assert_eq!(
        again.state("ask").unwrap().prompts.len(),
        3,
        "the hat once, the tools once"
    );
    let mut twice = definition.clone();
    narrow(&mut twice, "files", &tools, None);
    assert_eq!(
        twice, definition,
        "narrowing a narrowed definition changes nothing"
    );

    // Nor for a tool whose schema has definitions, hoisted into the machine's schemas.
    let pin = [tool(
        "map",
        "pin",
        "Pins a point.",
        json!({"type": "object", "properties": {"at": {"$ref": "#/$defs/point"}}, "required": ["at"],
            "$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}}}}}),
    )];
    let mut once = own_machine();
    narrow(&mut once, "files", &pin, None);
    let mut twice = once.clone();
    narrow(&mut twice, "files", &pin, None);
    assert_eq!(twice, once);
    assert!(
        once.schemas.contains_key("map.pin.point"),
        "{:?}",
        once.schemas
    );
}

#[test]
fn a_tools_call_is_read_from_any_event_and_answered_without_a_transition_id() {
    let event = json!({"message": {"jsonrpc": "2.0", "id": "a", "method": "tools/call",
        "params": {"name": "now"}}});
    let call = ToolsCall::from_event(&event).unwrap();
    assert_eq!(
        (call.id, call.name, call.arguments),
        (json!("a"), "now".to_owned(), json!({}))
    );
    let rejected = ToolsCall::from_event(
        &json!({"message": {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}}),
    )
    .unwrap_err();
    assert_eq!(
        rejected,
        json!({"message": {"jsonrpc": "2.0", "id": 3, "result": {"isError": true, "content": [
            {"type": "text", "text": "method `tools/list` is not served here: only tools/call"}]}}})
    );
    let answered = tools_response(
        json!(4),
        &CallOutcome::success(vec![crate::Content::text("ok")], None),
    );
    assert_eq!(answered.get("id"), None);
    assert_eq!(answered["message"]["result"]["content"][0]["text"], "ok");
}
