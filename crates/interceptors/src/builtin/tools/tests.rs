//! Unit tests of the `tools` interceptor: names, recursive argument schemas, result budgets, call planning.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};

use super::render::{cut, shares};
use super::{Tools, is_tool_name};

#[test]
fn tool_names() {
    for good in ["a", "get_weather", "fetch-url", "X9", &"a".repeat(64)] {
        assert!(is_tool_name(good), "{good}");
    }
    for bad in [
        "",
        "has space",
        "dot.ted",
        "ünï",
        "semi;colon",
        &"a".repeat(65),
    ] {
        assert!(!is_tool_name(bad), "{bad}");
    }
}

#[test]
fn recursive_typed_args_compose_and_validate() {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Tree {
        label: String,
        children: Vec<Tree>,
    }
    let tools = Tools::new()
        .register_typed("count", "Counts nodes.", |_: Tree| async { Ok(0) })
        .unwrap();
    let delta = claij_schema::SchemaDelta::new("tools-v1", "tools", tools.schema_delta().unwrap());
    let schema = claij_schema::compose(&claij_schema::base(), &[delta]).unwrap();
    let validator = claij_validation::Validator::new(&schema).unwrap();
    let reply = |children: Value| {
        json!({"answer": "", "state": "s", "tools": [
            {"name": "count", "args": {"label": "root", "children": children}}
        ]})
    };
    assert!(validator.is_valid(&reply(json!([{"label": "leaf", "children": []}]))));
    let violations = validator
        .validate(&reply(json!([{"label": 3, "children": []}])))
        .unwrap_err();
    assert_eq!(
        violations[0].instance_pointer,
        "/tools/0/args/children/0/label"
    );
}

#[test]
fn shares_fill_short_texts_first() {
    assert_eq!(shares(&[], 10), Vec::<usize>::new());
    assert_eq!(shares(&[3, 4], 100), [3, 4]);
    assert_eq!(shares(&[2, 100, 100], 50), [2, 24, 24]);
    assert_eq!(shares(&[100, 5, 1000], 60), [27, 5, 28]);
    assert_eq!(shares(&[10, 10], 0), [0, 0]);
}

#[test]
fn cutting_on_characters() {
    assert_eq!(cut("hello", 5), "hello");
    assert_eq!(cut("hello", 2), "he… (3 more characters)");
    assert_eq!(cut("éèê", 1), "é… (2 more characters)");
    assert_eq!(cut("abc", 0), "… (3 more characters)");
}

fn two_tools() -> Tools {
    Tools::new()
        .register(
            "echo",
            "Echoes.",
            json!({"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}),
            |args| async move { Ok(args) },
        )
        .unwrap()
        .register("nothing", "", json!({"type": "object"}), |_| async {
            Ok(Value::Null)
        })
        .unwrap()
}

/// The calls of `calls` run through the executor: the tool each ran, or why it did not.
#[track_caller]
fn check_plan(calls: Value, expected: &[Result<&str, &str>]) {
    let tools = two_tools();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let results = runtime.block_on(tools.run(&calls));
    let found: Vec<Result<&str, &str>> = results
        .iter()
        .map(|r| {
            r.output
                .as_ref()
                .map(|_| r.name.as_str())
                .map_err(String::as_str)
        })
        .collect();
    assert_eq!(found, expected);
}

#[test]
fn planning_calls() {
    check_plan(Value::Null, &[]);
    check_plan(json!([]), &[]);
    check_plan(
        json!([{"name": "echo", "args": {"x": 1}}, {"name": "nothing"}]),
        &[Ok("echo"), Ok("nothing")],
    );
    check_plan(
        json!([{"name": "ehco", "args": {}}]),
        &[Err("unknown tool `ehco`; the tools are: echo, nothing")],
    );
    check_plan(
        json!([{"name": "echo", "args": {"x": "one"}}, {"args": {}}]),
        &[
            Err("invalid arguments, not run: /x: expected integer, got string"),
            Err("unknown tool ``; the tools are: echo, nothing"),
        ],
    );
    check_plan(
        json!({"name": "echo"}),
        &[Err(
            "`tools` must be a list of calls `{\"name\": …, \"args\": {…}}`",
        )],
    );
    let nine = Value::Array(vec![json!({"name": "nothing", "args": {}}); 9]);
    let mut expected = vec![Ok("nothing"); 8];
    expected.push(Err("not run: at most 8 calls per reply (max_calls)"));
    check_plan(nine, &expected);
}

#[test]
fn registration_errors() {
    let taken = two_tools()
        .register("echo", "", json!({}), |a| async move { Ok(a) })
        .unwrap_err();
    assert_eq!(taken.to_string(), "tool `echo` is already registered");
    let bad_name = Tools::new()
        .register("a b", "", json!({}), |a| async move { Ok(a) })
        .unwrap_err();
    assert!(bad_name.to_string().starts_with("invalid tool name `a b`"));
    let bad_schema = Tools::new()
        .register("t", "", json!({"type": "nope"}), |a| async move { Ok(a) })
        .unwrap_err();
    assert!(
        bad_schema
            .to_string()
            .starts_with("the arguments schema of tool `t` is invalid"),
        "{bad_schema}"
    );
    let with_id = Tools::new()
        .register("t", "", json!({"$id": "urn:x"}), |a| async move { Ok(a) })
        .unwrap_err();
    assert!(with_id.to_string().contains("`$id` is not supported"));
}

#[test]
fn no_tools_no_delta_no_prompt() {
    let tools = Tools::new();
    assert_eq!(tools.schema_delta(), None);
    assert_eq!(tools.prompt_section(), None);
}

#[tokio::test]
async fn a_panicking_tool_is_an_error_result() {
    let tools = Tools::new()
        .register("boom", "", json!({}), |_| async {
            if true {
                panic!("kaboom");
            }
            Ok(Value::Null)
        })
        .unwrap();
    let results = tools.run(&json!([{"name": "boom", "args": {}}])).await;
    assert_eq!(
        results[0].output,
        Err("the tool panicked: kaboom".to_owned())
    );
}

#[test]
fn without_a_runtime_calls_report_it() {
    let tools = two_tools();
    let results =
        futures_executor::block_on(tools.run(&json!([{"name": "echo", "args": {"x": 1}}])));
    assert_eq!(
        results[0].output,
        Err("not run: tool calls need a tokio runtime (for their timeouts)".to_owned())
    );
}

#[tokio::test]
async fn results_of_another_origin_are_kept_and_not_shown_whatever_their_names() {
    use crate::context::{Context, ToolOrigin, ToolResult};
    use crate::interceptor::Interceptor as _;
    use crate::prompts::Prompts;

    let tools = two_tools();
    let mut ctx = Context::default();
    let result = |name: &str, output, origin| ToolResult {
        name: name.to_owned(),
        args: json!({}),
        output: Ok(output),
        origin,
    };
    // Another interceptor's tools, one namespaced, one called like one of ours: told apart by origin.
    let mcp = result(
        "server.tool",
        json!("theirs"),
        ToolOrigin::Mcp {
            server: "server".to_owned(),
        },
    );
    let other = result(
        "echo",
        json!("noted"),
        ToolOrigin::Other {
            interceptor: "notes".to_owned(),
        },
    );
    ctx.tool_results = vec![
        mcp.clone(),
        other.clone(),
        result("echo", json!("old"), ToolOrigin::Rust),
    ];
    let reply = json!({"tools": [{"name": "echo", "args": {"x": 7}}]});
    tools.post_response(&reply, &mut ctx).await.unwrap();
    assert_eq!(ctx.tool_results.len(), 3, "{:?}", ctx.tool_results);
    assert_eq!(
        ctx.tool_results[..2],
        [mcp, other],
        "own results replaced, others kept"
    );
    assert_eq!(ctx.tool_results[2].output, Ok(json!({"x": 7})));
    assert_eq!(ctx.tool_results[2].origin, ToolOrigin::Rust);

    let mut prompts = Prompts::new("system", "user");
    tools.pre_prompt(&mut prompts, &ctx).unwrap();
    assert!(
        prompts.system.contains("echo {\"x\":7}"),
        "{}",
        prompts.system
    );
    assert!(!prompts.system.contains("theirs"), "{}", prompts.system);
    assert!(!prompts.system.contains("noted"), "{}", prompts.system);
}
