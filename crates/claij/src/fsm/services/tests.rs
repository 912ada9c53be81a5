//! The built-in `tools` and `eval` services run their calls through the one tool executor: its
//! result budget, timeout and argument check apply on the FSM route as on every other.

use std::time::Duration;

use claij_interceptors::Limits;
use claij_interceptors::builtin::tools::Tools;
use serde_json::{Value, json};

use super::Builtin;

/// A `tools/call` request event.
fn call(name: &str, arguments: Value) -> Value {
    json!({"message": {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": name, "arguments": arguments}}})
}

fn result(event: &Value) -> &Value {
    &event["message"]["result"]
}

fn tools(limits: Limits) -> Tools {
    Tools::with_limits(limits)
        .register("long", "A long text.", json!({"type": "object"}), |_| async {
            Ok(json!("x".repeat(100)))
        })
        .and_then(|t| {
            t.register("never", "Never answers.", json!({"type": "object"}), |_| async {
                std::future::pending::<()>().await;
                Ok(Value::Null)
            })
        })
        .and_then(|t| {
            t.register(
                "echo",
                "Its `n`.",
                json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
                |args| async move { Ok(args["n"].clone()) },
            )
        })
        .unwrap()
}

#[tokio::test]
async fn a_result_over_the_budget_is_cut_and_says_so() {
    let limits = Limits {
        result_chars: 10,
        ..Limits::default()
    };
    let service = Builtin::tools(&tools(limits));
    let answered = service.respond(&call("tools.long", json!({}))).await;
    assert_eq!(answered["message"]["id"], 7);
    let text = result(&answered)["content"][0]["text"].as_str().unwrap();
    assert_eq!(
        text,
        "xxxxxxxxxx… [cut: the tool-results budget shows 10 of its 100 characters]"
    );
    assert_eq!(result(&answered)["isError"], false);
}

#[tokio::test]
async fn an_eval_result_over_the_budget_is_cut_too() {
    let limits = Limits {
        result_chars: 4,
        ..Limits::default()
    };
    let service = Builtin::eval(limits);
    let answered = service
        .respond(&call("eval", json!({"code": "\"abcdefgh\""})))
        .await;
    let text = result(&answered)["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("abcd… [cut: the tool-results budget"),
        "{text}"
    );
}

#[tokio::test]
async fn a_call_over_the_timeout_ends_as_the_executor_s_timeout() {
    let limits = Limits {
        timeout: Some(Duration::from_millis(5)),
        ..Limits::default()
    };
    let service = Builtin::tools(&tools(limits));
    let answered = service.respond(&call("never", json!({}))).await;
    assert_eq!(result(&answered)["isError"], true);
    assert_eq!(
        result(&answered)["content"][0]["text"],
        "timed out after 5ms (timeout)"
    );
}

#[tokio::test]
async fn arguments_are_repaired_then_checked_against_the_tool_s_schema() {
    let service = Builtin::tools(&tools(Limits::default()));
    let repaired = service.respond(&call("echo", json!("{'n': 4,}"))).await;
    assert_eq!(result(&repaired)["content"][0]["text"], "4");
    let refused = service.respond(&call("echo", json!({"n": "four"}))).await;
    assert_eq!(result(&refused)["isError"], true);
    let text = result(&refused)["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("invalid arguments, not run: "), "{text}");
    let eval = Builtin::eval(Limits::default());
    let refused = eval.respond(&call("eval", json!({}))).await;
    let text = result(&refused)["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("invalid arguments, not run: "), "{text}");
}

#[tokio::test]
async fn eval_says_its_value_then_what_it_printed() {
    let answered = Builtin::eval(Limits::default())
        .respond(&call("eval.eval", json!({"code": "print(\"hi\"); 6 * 7"})))
        .await;
    assert_eq!(
        result(&answered)["content"],
        json!([{"type": "text", "text": "42"}, {"type": "text", "text": "printed:\nhi"}])
    );
}

#[tokio::test]
async fn a_batch_runs_at_most_max_calls_and_shares_the_budget() {
    let limits = Limits {
        max_calls: 2,
        result_chars: 150,
        ..Limits::default()
    };
    let service = Builtin::tools(&tools(limits));
    let request = |id: u32, name: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": {}}})
    };
    let batch =
        json!({"message": [request(1, "long"), {"id": 2}, request(3, "long"), request(4, "long")]});
    let answered = service.respond(&batch).await;
    let answers = answered["message"].as_array().unwrap();
    let ids: Vec<&Value> = answers.iter().map(|a| &a["id"]).collect();
    assert_eq!(ids, [&json!(1), &json!(2), &json!(3), &json!(4)]);
    let text = |i: usize| answers[i]["result"]["content"][0]["text"].as_str().unwrap();
    // The refusal past max_calls (46 characters) is shown whole, the two results share the
    // rest: 52 characters each.
    assert_eq!(
        text(0),
        format!(
            "{}… [cut: the tool-results budget shows 52 of its 100 characters]",
            "x".repeat(52)
        )
    );
    assert_eq!(text(2), text(0));
    assert_eq!(text(3), "not run: at most 2 calls per reply (max_calls)");
    assert_eq!(answers[1]["result"]["isError"], true);
}
