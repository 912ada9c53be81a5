//! `--interceptors eval` in `claij ask` and `claij chat`, against a mock OpenRouter: the result of
//! a reply's code is printed on the turn that ran it (a line on stderr, `eval` in the `--json`
//! report), saved in the session file as the eval interceptor's state, and shown to the model on
//! the next turn, in the next process as in the same one.

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer};

use super::openrouter::{CHAT, config, reply};
use super::session::{Command, read, system_of, two_runs};
use super::{Files, claij_env};

const KEY: &str = "sk-or-v1-eval-secret-0123456789";

/// A reply whose code prints and computes 42.
fn computing() -> Value {
    json!({"answer": "Computing.", "state": "waiting_for_tools",
           "eval": "let x = 6; print(`x is ${x}`); x * 7"})
}

fn answered() -> Value {
    json!({"answer": "It is 42.", "state": "answered"})
}

/// What the model is told of the previous reply's code.
const SHOWN: &str = "Result of the `eval` code of your previous reply:\nok: 42\nprinted:\nx is 6";

/// The code's result is printed by the run that ran it, saved as the eval interceptor's state,
/// and shown in the next run's request, which sends no history (so only the saved state carries
/// it); the next reply ran no code, so nothing is left for a third.
async fn check_eval(command: Command) {
    let (one, two, saved, requests) = two_runs(
        command,
        &computing(),
        &answered(),
        &["--interceptors", "eval", "--history-messages", "0"],
        "",
    )
    .await;
    assert!(
        one.stderr.lines().any(|l| l.trim_start()
            == r#"eval "let x = 6; print(`x is ${x}`); x * 7": ok: 42, printed: "x is 6""#),
        "{}",
        one.stderr
    );
    assert!(!two.stderr.contains("eval \""), "{}", two.stderr);
    assert_eq!(
        saved["interceptors"]["eval"],
        json!({"version": 1, "state": {"code": "let x = 6; print(`x is ${x}`); x * 7",
                                        "outcome": {"Ok": 42}, "output": "x is 6"}}),
        "{saved}"
    );
    assert!(!system_of(&requests[0]).contains(SHOWN));
    let system = system_of(&requests[1]);
    assert!(system.contains(SHOWN), "{system}");
    assert!(
        !String::from_utf8_lossy(&requests[1].body).contains("Turn one."),
        "no history"
    );
}

#[tokio::test]
async fn ask_eval_results_reach_the_next_run() {
    check_eval(Command::Ask).await;
}

#[tokio::test]
async fn chat_eval_results_reach_the_next_run() {
    check_eval(Command::Chat).await;
}

/// `ask --json` reports the code's result whole (`eval`, null when the reply ran none); code that
/// fails reports the error, printed and reported alike, and the model sees it next turn.
#[tokio::test]
async fn ask_json_reports_the_eval_result_and_errors_are_shown() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(&computing().to_string()))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(
            &json!({"answer": "Oops.", "state": "waiting_for_tools", "eval": "let x = ;"})
                .to_string(),
        ))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(&answered().to_string()))
        .expect(1)
        .mount(&server)
        .await;
    let files = Files::new(&[("config.toml", &config(&server))]);
    let session = files.path("s.json");
    let config = files.path("config.toml");
    let ask = |extra: &[&str]| {
        let mut args = vec![
            "ask",
            "Compute.",
            "--llm",
            "gemini-flash",
            "--interceptors",
            "eval",
            "--session",
            &session,
        ];
        args.extend_from_slice(extra);
        let run = claij_env(
            &args,
            "",
            &[
                ("CLAIJ_CONFIG", Some(config.as_str())),
                ("OPENROUTER_API_KEY", Some(KEY)),
            ],
        );
        assert_eq!(run.code, 0, "{}", run.stderr);
        run
    };
    let first = ask(&["--json"]);
    let report: Value = serde_json::from_str(&first.stdout).unwrap();
    assert_eq!(
        report["eval"],
        json!({"code": "let x = 6; print(`x is ${x}`); x * 7", "value": 42, "printed": "x is 6"}),
        "{report}"
    );
    let second = ask(&[]);
    let line = second
        .stderr
        .lines()
        .find(|l| l.starts_with("eval \"let x = ;\": error: syntax error: "))
        .unwrap_or_else(|| panic!("{}", second.stderr));
    assert!(!line.contains('\n'));
    assert_eq!(
        read(&session)["interceptors"]["eval"]["state"]["outcome"]["Err"]["kind"],
        "syntax"
    );
    let third = ask(&["--json"]);
    let report: Value = serde_json::from_str(&third.stdout).unwrap();
    assert_eq!(report["eval"], Value::Null, "{report}");
    let requests = server.received_requests().await.unwrap();
    let system = system_of(&requests[2]);
    assert!(
        system.contains("Result of the `eval` code of your previous reply:\nerror: syntax error: "),
        "{system}"
    );
    assert!(read(&session).get("interceptors").is_none());
}

/// In one `chat` process, as across two: the next turn's request shows the result.
#[tokio::test]
async fn chat_shows_the_eval_result_on_the_next_turn() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(&computing().to_string()))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(&answered().to_string()))
        .expect(1)
        .mount(&server)
        .await;
    let files = Files::new(&[("config.toml", &config(&server))]);
    let config = files.path("config.toml");
    let run = claij_env(
        &["chat", "--llm", "gemini-flash", "--interceptors", "eval"],
        "Compute.\nSo?\n",
        &[
            ("CLAIJ_CONFIG", Some(config.as_str())),
            ("OPENROUTER_API_KEY", Some(KEY)),
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "Computing.\nIt is 42.\n");
    assert!(
        run.stderr
            .contains("  eval \"let x = 6; print(`x is ${x}`); x * 7\": ok: 42"),
        "{}",
        run.stderr
    );
    let requests = server.received_requests().await.unwrap();
    assert!(system_of(&requests[1]).contains(SHOWN));
}
