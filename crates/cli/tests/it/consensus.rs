//! `claij ask --llm a,b,c --consensus majority|first-valid`: three scripted models of one
//! OpenAI-compatible provider (mocked), their tally, the answer chosen and the exit codes.

use serde_json::{Value, json};
use wiremock::matchers::{body_partial_json, method, path};
use wiremock::{Mock, MockServer};

use super::openrouter::reply;
use super::{BASE, Files, Run, claij_env};

const THREE: &str = "mylocal:one,mylocal:two,mylocal:three";

/// A server where model `one`, `two` and `three` each reply their text once.
async fn server(replies: [&str; 3]) -> MockServer {
    let server = MockServer::start().await;
    for (model, text) in ["one", "two", "three"].into_iter().zip(replies) {
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .and(body_partial_json(json!({"model": model})))
            .respond_with(reply(text))
            .expect(1)
            .named(model)
            .mount(&server)
            .await;
    }
    server
}

/// The configuration (`mylocal` at `server`) and the schema.
fn files(server: &MockServer) -> Files {
    let config = format!(
        "[providers.mylocal]\nkind = \"openai-compatible\"\nbase_url = \"{}/v1\"\n",
        server.uri()
    );
    Files::new(&[("config.toml", &config), ("schema.json", BASE)])
}

/// `claij ask QUESTION --schema schema.json --max-retries 0 ARGS...` with the files' configuration.
fn ask(files: &Files, args: &[&str]) -> Run {
    let schema = files.path("schema.json");
    let mut all = vec![
        "ask",
        "Capital of France?",
        "--schema",
        &schema,
        "--max-retries",
        "0",
    ];
    all.extend_from_slice(args);
    claij_env(
        &all,
        "",
        &[
            ("CLAIJ_CONFIG", Some(files.path("config.toml").as_str())),
            ("XDG_CACHE_HOME", Some(files.path("cache").as_str())),
            ("OPENROUTER_API_KEY", None),
        ],
    )
}

#[tokio::test]
async fn two_of_three_agree_on_the_whole_value() {
    // `three` writes the same value as `one` with its keys in another order and 2.0 for 2.
    let server = server([
        r#"{"answer": "Paris", "state": "done", "n": 2}"#,
        r#"{"answer": "Lyon", "state": "done", "n": 2}"#,
        r#"{"n": 2.0, "state": "done", "answer": "Paris"}"#,
    ])
    .await;
    let files = files(&server);
    let run = ask(&files, &["--llm", THREE, "--consensus", "majority"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let value: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(value, json!({"answer": "Paris", "state": "done", "n": 2}));
    assert!(
        run.stderr.contains(
            r#"tally on the whole value, 3 models asked: {"answer":"Paris","n":2,"state":"done"}: 2 votes (mylocal:one, mylocal:three); {"answer":"Lyon","n":2,"state":"done"}: 1 vote (mylocal:two)"#
        ),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(
            "majority: 2 of 3 models agree (mylocal:one, mylocal:three); the answer is mylocal:one's"
        ),
        "{}",
        run.stderr
    );
    // A line per model, with its attempts.
    assert!(
        run.stderr.contains("mylocal:two: 1 attempt, 19+10 tokens"),
        "{}",
        run.stderr
    );
}

#[tokio::test]
async fn a_majority_on_answer_while_the_other_fields_differ() {
    let replies = [
        r#"{"answer": "Lyon", "state": "done"}"#,
        r#"{"answer": "Paris", "state": "done", "n": 1}"#,
        r#"{"answer": "Paris", "state": "chat", "n": 7}"#,
    ];
    // On the whole value the three differ.
    let whole = server(replies).await;
    let run = ask(
        &files(&whole),
        &["--llm", THREE, "--consensus", "majority", "--json"],
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["value"], Value::Null);
    assert_eq!(report["consensus"]["winner"], Value::Null);
    assert_eq!(
        report["consensus"]["tally"]["votes"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    let on = server(replies).await;
    let files = files(&on);
    let run = ask(
        &files,
        &[
            "--llm",
            THREE,
            "--consensus",
            "majority",
            "--on",
            "/answer",
            "--json",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    // The first agreeing model's whole value.
    assert_eq!(
        report["value"],
        json!({"answer": "Paris", "state": "done", "n": 1})
    );
    assert_eq!(
        report["consensus"],
        json!({
            "rule": "majority",
            "winner": "mylocal:two",
            "majority": 2,
            "tally": {
                "on": ["/answer"],
                "asked": 3,
                "votes": [
                    {"value": "Paris", "count": 2, "names": ["mylocal:two", "mylocal:three"]},
                    {"value": "Lyon", "count": 1, "names": ["mylocal:one"]},
                ],
                "failed": [],
                "missing": [],
            },
        })
    );
    let names: Vec<&str> = report["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["mylocal:one", "mylocal:two", "mylocal:three"]);
    assert_eq!(report["models"][2]["value"]["n"], 7);
    assert_eq!(report["usage"]["input_tokens"], 3 * 19);
}

#[tokio::test]
async fn no_majority_exits_1_with_the_counts() {
    let server = server([
        r#"{"answer": "Paris", "state": "done"}"#,
        r#"{"answer": "Lyon", "state": "done"}"#,
        "I would rather not say.",
    ])
    .await;
    let files = files(&server);
    let run = ask(
        &files,
        &["--llm", THREE, "--consensus", "majority", "--on", "/answer"],
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr.contains(
            r#"tally on /answer, 3 models asked: "Paris": 1 vote (mylocal:one); "Lyon": 1 vote (mylocal:two); no valid answer: mylocal:three"#
        ),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(
            "no majority: the most models agreeing on one value is 1 of 3 (a majority is 2); 2 valid answers, 2 distinct values"
        ),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("mylocal:three: no valid answer: "),
        "{}",
        run.stderr
    );
}

#[tokio::test]
async fn first_valid_skips_an_invalid_model() {
    let server = server([
        "I would rather not say.",
        r#"{"answer": "Paris", "state": "done"}"#,
        r#"{"answer": "Lyon", "state": "done"}"#,
    ])
    .await;
    let files = files(&server);
    let run = ask(&files, &["--llm", THREE, "--consensus", "first-valid"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let value: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(value, json!({"answer": "Paris", "state": "done"}));
    assert!(
        run.stderr.contains("first valid: mylocal:two"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("mylocal:one: no valid answer: "),
        "{}",
        run.stderr
    );
}

#[tokio::test]
async fn a_pointer_no_answer_has_is_a_usage_error() {
    let server = server([
        r#"{"answer": "Paris", "state": "done"}"#,
        r#"{"answer": "Paris", "state": "done"}"#,
        r#"{"answer": "Lyon", "state": "done"}"#,
    ])
    .await;
    let files = files(&server);
    let run = ask(
        &files,
        &["--llm", THREE, "--consensus", "majority", "--on", "/anwser"],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("error: --on /anwser: no valid answer has it (a mistyped pointer?)"),
        "{}",
        run.stderr
    );
    assert_eq!(run.stdout, "");
    // What the answers hold is on stderr.
    assert!(
        run.stderr
            .contains("without /anwser: mylocal:one, mylocal:two, mylocal:three"),
        "{}",
        run.stderr
    );
    let server = self::server([r#"{"answer": "Paris", "state": "done"}"#; 3]).await;
    let files = self::files(&server);
    // With --json too: nothing on stdout.
    let run = ask(
        &files,
        &[
            "--llm",
            THREE,
            "--consensus",
            "majority",
            "--on",
            "/anwser",
            "--json",
        ],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(run.stdout, "");
}

#[track_caller]
fn check_usage(args: &[&str], message: &str) {
    // Nothing listens here: a usage error must come before any model is asked.
    let config =
        "[providers.mylocal]\nkind = \"openai-compatible\"\nbase_url = \"http://127.0.0.1:9/v1\"\n";
    let files = Files::new(&[("config.toml", config), ("schema.json", BASE)]);
    let run = if args[0] == "chat" {
        claij_env(
            args,
            "",
            &[("CLAIJ_CONFIG", Some(files.path("config.toml").as_str()))],
        )
    } else {
        ask(&files, args)
    };
    assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
    assert!(run.stderr.contains(message), "{args:?}: {}", run.stderr);
    assert_eq!(run.stdout, "", "{args:?}");
}

#[test]
fn usage_errors_exit_2_before_asking() {
    check_usage(
        &["--llm", "mylocal:one", "--consensus", "majority"],
        "error: --consensus needs several models to compare: --llm a,b,c (got mylocal:one)",
    );
    check_usage(
        &["--consensus", "first-valid"],
        "error: --consensus needs several models to compare: --llm a,b,c (got none)",
    );
    check_usage(
        &["--llm", "mylocal:one,mylocal:two", "--on", "/answer"],
        "error: --on chooses what --consensus majority compares: add --consensus majority",
    );
    check_usage(
        &[
            "--llm",
            "mylocal:one,mylocal:two",
            "--consensus",
            "first-valid",
            "--on",
            "/answer",
        ],
        "error: --on is for --consensus majority (--consensus first-valid takes the first valid answer whole)",
    );
    check_usage(
        &["--llm", "mylocal:one,mylocal:two"],
        "error: --llm mylocal:one,mylocal:two names several models: add --consensus majority or --consensus first-valid",
    );
    check_usage(
        &[
            "--llm",
            "mylocal:one,,mylocal:two",
            "--consensus",
            "majority",
        ],
        "error: --llm mylocal:one,,mylocal:two has an empty model",
    );
    check_usage(
        &["--llm", THREE, "--consensus", "majority", "--on", "answer"],
        "a JSON pointer starts with `/`: did you mean /answer?",
    );
    check_usage(
        &[
            "--llm",
            THREE,
            "--consensus",
            "majority",
            "--memory",
            "m.json",
        ],
        "error: --memory carries one conversation, --consensus asks several models once each",
    );
    check_usage(
        &[
            "--llm",
            THREE,
            "--consensus",
            "majority",
            "--interceptors",
            "proposals",
        ],
        "error: --interceptors proposals keeps approved schema extensions in a conversation (--memory), which --consensus does not keep",
    );
    check_usage(
        &["--llm", "mylocal:one,nope:two", "--consensus", "majority"],
        "error: --llm nope:two: unknown provider `nope`",
    );
    check_usage(
        &["chat", "--llm", THREE, "--consensus", "majority"],
        "error: claij chat talks with one model: --consensus and several --llm models are for claij ask",
    );
}

#[tokio::test]
async fn no_valid_answer_exits_1() {
    let server = server(["no", "nope", r#"{"answer": 4}"#]).await;
    let files = files(&server);
    let run = ask(&files, &["--llm", THREE, "--consensus", "first-valid"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr
            .contains("no valid answer from any of the 3 models"),
        "{}",
        run.stderr
    );
}

/// The embedded model twice, each on its own backend (the nextest `local-model` group runs tests
/// under a `local_model` module one at a time).
mod local_model {
    use serde_json::Value;

    use super::super::{Files, claij_env};

    #[test]
    fn two_local_models_agree() {
        let Some(model) =
            crate::local_model::model("consensus::local_model::two_local_models_agree")
        else {
            return;
        };
        let model = model.to_string_lossy().into_owned();
        let files = Files::new(&[]);
        let run = claij_env(
            &[
                "ask",
                "What is 2+2?",
                "--llm",
                "local,local",
                "--model-path",
                &model,
                "--consensus",
                "majority",
                "--threads",
                "1",
                "--max-tokens",
                "96",
                "--max-retries",
                "0",
                "--json",
            ],
            "",
            &[("XDG_CACHE_HOME", Some(files.path("cache").as_str()))],
        );
        assert_eq!(run.code, 0, "{}", run.stderr);
        let report: Value = serde_json::from_str(&run.stdout).unwrap();
        // Greedy decoding: the same model answers the same twice.
        assert_eq!(report["consensus"]["majority"], 2, "{report}");
        for one in report["models"].as_array().unwrap() {
            assert_eq!(one["attempts"][0]["verdict"], "valid", "{one}");
            assert!(one["usage"]["output_tokens"].as_u64().unwrap() > 0, "{one}");
        }
        assert_eq!(report["value"], report["models"][0]["value"]);
    }
}
