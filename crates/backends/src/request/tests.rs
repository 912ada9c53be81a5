//! Tests of the neutral request: tool calls and results in messages, their JSON form.

use serde_json::json;

use super::*;

#[track_caller]
fn check(message: Message, expected: Value) {
    let json = serde_json::to_value(&message).unwrap();
    assert_eq!(json, expected);
    let back: Message = serde_json::from_value(json).unwrap();
    assert_eq!(back, message);
}

#[test]
fn messages_keep_tool_calls_and_results_and_omit_them_when_empty() {
    check(
        Message::user("hi"),
        json!({"role": "user", "content": "hi"}),
    );
    check(
        Message::assistant_calls(
            "",
            vec![ToolCall::new("call_1", "add", json!({"a": 1, "b": 2}))],
        ),
        json!({"role": "assistant", "content": "",
               "tool_calls": [{"id": "call_1", "name": "add", "arguments": {"a": 1, "b": 2}}]}),
    );
    check(
        Message::tool_result("call_1", "3"),
        json!({"role": "tool", "content": "3", "tool_call_id": "call_1"}),
    );
}

#[test]
fn requests_carry_tools_and_choice_and_count_them_in_estimates() {
    let plain = ChatRequest::new("m").message(Message::user("hi"));
    let with_tools = plain
        .clone()
        .tool(ToolSpec::new("add", "adds", json!({"type": "object"})).strict(true))
        .tool_choice(ToolChoice::Tool("add".into()));
    assert!(with_tools.text_len() > plain.text_len());
    let json = serde_json::to_value(&with_tools).unwrap();
    assert_eq!(
        json["tools"],
        json!([{"name": "add", "description": "adds", "parameters": {"type": "object"}, "strict": true}])
    );
    assert_eq!(json["tool_choice"], json!({"tool": "add"}));
    assert!(serde_json::to_value(&plain).unwrap().get("tools").is_none());
    let back: ChatRequest = serde_json::from_value(json).unwrap();
    assert_eq!(back, with_tools);
}

#[test]
fn the_answer_call_is_told_from_calls_to_run_by_its_wire_name() {
    let mut request = ChatRequest::new("m").structured("my answer", json!({}), true);
    let call = |name: &str| ToolCall::new("c", name, json!({}));
    let response = crate::ChatResponse::text("{}").tool_calls(vec![
        call("my_answer"),
        call("get_weather"),
        call("my answer"),
    ]);
    // Native mode offers no answer tool: every call is one to run.
    assert_eq!(response.calls_to_run(&request).len(), 3);
    if let Some(s) = request.structured_output.as_mut() {
        s.mode = OutputMode::Tool;
        assert_eq!(s.tool_name(), "my_answer");
    }
    let names: Vec<&str> = response
        .calls_to_run(&request)
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(names, ["get_weather"]);
}

#[test]
fn a_shared_value_is_serialized_and_estimated_once() {
    let schema =
        json!({"type": "object", "properties": {"a": {"type": "string", "enum": ["x\"y"]}}});
    let shared = SharedJson::new(schema.clone());
    let copy = shared.clone();
    assert!(SharedJson::ptr_eq(&shared, &copy));
    assert_eq!(shared.raw().get(), serde_json::to_string(&schema).unwrap());
    assert_eq!(*copy, schema);
    assert_eq!(serde_json::to_value(&copy).unwrap(), schema);
    let back: SharedJson = serde_json::from_value(schema.clone()).unwrap();
    assert_eq!(back, shared);
    let mut estimates = 0;
    for s in [&shared, &copy, &shared] {
        let tokens = s.tokens(|text| {
            estimates += 1;
            u32::try_from(text.len()).unwrap()
        });
        assert_eq!(tokens as usize, shared.raw().get().len());
    }
    assert_eq!(estimates, 1, "the estimate is made once per shared value");
}
