//! `claij serve restate`, `claij fsm run --on restate` and `claij fsm provide --on restate` against
//! a real Restate server on loopback (`cargo xtask restate`; without it the test skips, except
//! under `CI=true`), the worker's model an OpenAI-compatible mock: the run prints what an embedded
//! run prints, each model call made once; a `human` state is answered from another command; a
//! worker given the server's request-identity key serves it and refuses a server with another.

use std::process::Command;

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer};

use super::openrouter::reply;
use super::{Files, claij_env};

#[path = "../../../restate/tests/support/mod.rs"]
mod support;

use support::{RestateServer, Worker};

/// start -> a -> b -> c -> end, each an `llm` state with one exit.
const CHAIN: &str = r#"{"id": "chain",
  "states": [{"id": "a", "action": "llm"}, {"id": "b", "action": "llm"}, {"id": "c", "action": "llm"}, {"id": "end", "action": "end"}],
  "transitions": [
    {"id": ["start", "a"], "schema": {"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]}},
    {"id": ["a", "b"], "schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
    {"id": ["b", "c"], "schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
    {"id": ["c", "end"], "schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}
  ]}"#;

/// start -> a (llm) -> approve (human) -> end.
const APPROVAL: &str = r#"{"id": "approval",
  "states": [{"id": "a", "action": "llm"}, {"id": "approve", "action": "human"}, {"id": "end", "action": "end"}],
  "transitions": [
    {"id": ["start", "a"], "schema": {"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]}},
    {"id": ["a", "approve"], "schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
    {"id": ["approve", "end"], "schema": {"type": "object", "properties": {"decision": {"type": "string"}}, "required": ["decision"]}}
  ]}"#;

/// The trail's content (states, events, attempts' verdicts, models), without times.
fn content(stdout: &str) -> Vec<Value> {
    let trail: Vec<Value> = serde_json::from_str(stdout).unwrap();
    trail
        .iter()
        .map(|e| {
            let verdicts: Vec<Value> = e["attempts"]
                .as_array()
                .map(|a| a.iter().map(|a| a["verdict"].clone()).collect())
                .unwrap_or_default();
            json!([e["from"], e["to"], e["event"], verdicts, e["model"]])
        })
        .collect()
}

/// The transitions the run printed on stderr (`from -> to ...` lines).
fn transitions(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| l.contains(" -> "))
        .map(|l| l.split(':').next().unwrap_or(l).to_owned())
        .collect()
}

#[tokio::test]
async fn fsm_run_on_restate_prints_what_an_embedded_run_prints() {
    let Some(server) = RestateServer::start() else {
        return;
    };
    let mock = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        // Valid for the machines' states (`text`) and for a conversation's base schema.
        .respond_with(reply(r#"{"text": "ok", "answer": "hi", "state": "done"}"#))
        .mount(&mock)
        .await;
    let config = format!(
        "[providers.mylocal]\nkind = \"openai-compatible\"\nbase_url = \"{}/v1\"\n",
        mock.uri()
    );
    let files = Files::new(&[
        ("config.toml", &config),
        ("chain.json", CHAIN),
        ("approval.json", APPROVAL),
    ]);
    let (config, cache) = (files.path("config.toml"), files.path("cache"));
    let env = [
        ("CLAIJ_CONFIG", Some(config.as_str())),
        ("XDG_CACHE_HOME", Some(cache.as_str())),
        ("OPENROUTER_API_KEY", None),
        ("OPENAI_API_KEY", None),
    ];

    // The worker: `claij serve restate` with the configuration's model.
    let (worker_config, worker_cache) = (config.clone(), cache.clone());
    let worker = Worker::spawn(move |port| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_claij"));
        command
            .args(["serve", "restate", "--bind", &format!("127.0.0.1:{port}")])
            .args(["--config", &worker_config, "--llm", "mylocal:smol"])
            .env("XDG_CACHE_HOME", &worker_cache)
            .env_remove("OPENROUTER_API_KEY")
            .env_remove("OPENAI_API_KEY");
        command
    });
    server.register(&worker.uri());
    let ingress = server.ingress_url();

    let embedded = claij_env(
        &[
            "fsm",
            "run",
            &files.path("chain.json"),
            "--input",
            r#"{"topic": "rust"}"#,
            "--llm",
            "mylocal:smol",
        ],
        "",
        &env,
    );
    assert_eq!(embedded.code, 0, "{}", embedded.stderr);
    let calls = mock.received_requests().await.unwrap().len();
    assert_eq!(calls, 3);

    let on_restate = claij_env(
        &[
            "fsm",
            "run",
            &files.path("chain.json"),
            "--input",
            r#"{"topic": "rust"}"#,
            "--on",
            "restate",
            "--ingress",
            &ingress,
            "--id",
            "cli-chain",
        ],
        "",
        &env,
    );
    assert_eq!(
        on_restate.code,
        0,
        "{}\n{}",
        on_restate.stderr,
        worker.log()
    );
    assert_eq!(content(&on_restate.stdout), content(&embedded.stdout));
    assert_eq!(
        transitions(&on_restate.stderr),
        transitions(&embedded.stderr)
    );
    assert!(
        on_restate
            .stderr
            .contains("run cli-chain started on Restate"),
        "{}",
        on_restate.stderr
    );
    // The worker asked the model once per `llm` state.
    assert_eq!(mock.received_requests().await.unwrap().len(), calls + 3);

    // Stopped at a limit, the line names the flag (a run on Restate that ended starts again).
    let stopped = claij_env(
        &[
            "fsm",
            "run",
            &files.path("chain.json"),
            "--input",
            r#"{"topic": "rust"}"#,
            "--on",
            "restate",
            "--ingress",
            &ingress,
            "--id",
            "cli-chain-limit",
            "--max-transitions",
            "2",
        ],
        "",
        &env,
    );
    assert_eq!(stopped.code, 1, "{}", stopped.stderr);
    assert_eq!(
        stopped.stderr.lines().last().unwrap(),
        "error: stopped in state `c` after 2 transitions of this call without reaching an end (the \
         limit max_transitions; the trail holds 3); --max-transitions sets the limit for a run \
         started again (a new --id)"
    );

    // A `human` state: the run waits (no input on stdin), another command gives the input, and
    // following the run again (the same id starts nothing) shows its end.
    let run = |stdin: &str| {
        claij_env(
            &[
                "fsm",
                "run",
                &files.path("approval.json"),
                "--input",
                r#"{"topic": "rust"}"#,
                "--on",
                "restate",
                "--ingress",
                &ingress,
                "--id",
                "cli-approval",
            ],
            stdin,
            &env,
        )
    };
    let waiting = run("");
    assert_eq!(waiting.code, 0, "{}", waiting.stderr);
    assert!(
        waiting.stderr.contains("waiting for input in state `approve`; give it with `claij fsm provide --on restate cli-approval EVENT`"),
        "{}",
        waiting.stderr
    );
    let wrong = claij_env(
        &[
            "fsm",
            "provide",
            "--ingress",
            &ingress,
            "cli-approval",
            r#"{"nope": 1}"#,
        ],
        "",
        &env,
    );
    assert_eq!(wrong.code, 1, "{}", wrong.stderr);
    let provided = claij_env(
        &[
            "fsm",
            "provide",
            "--on",
            "restate",
            "--ingress",
            &ingress,
            "cli-approval",
            r#"{"decision": "yes"}"#,
        ],
        "",
        &env,
    );
    assert_eq!(provided.code, 0, "{}", provided.stderr);
    let ended = run("");
    assert_eq!(ended.code, 0, "{}", ended.stderr);
    assert!(
        ended.stderr.contains("already started on Restate"),
        "{}",
        ended.stderr
    );
    let trail = content(&ended.stdout);
    assert_eq!(trail.len(), 3, "{}", ended.stdout);
    assert_eq!(
        trail[2][2],
        json!({"id": ["approve", "end"], "decision": "yes"})
    );

    // A conversation on the worker's model: turns keep the history.
    let calls = mock.received_requests().await.unwrap().len();
    for turn in 1..=2 {
        let answer = server
            .ingress(
                "POST",
                "/ClaijConversation/cli-session/turn",
                Some(r#""hello""#),
            )
            .unwrap();
        assert_eq!(answer.status, 200, "{}\n{}", answer.body, worker.log());
        let answer: Value = serde_json::from_str(&answer.body).unwrap();
        assert_eq!(
            (answer["value"]["answer"].clone(), answer["turn"].clone()),
            (json!("hi"), json!(turn))
        );
    }
    let history = server
        .ingress("POST", "/ClaijConversation/cli-session/history", None)
        .unwrap();
    let history: Vec<Value> = serde_json::from_str(&history.body).unwrap();
    assert_eq!(history.len(), 4);
    assert_eq!(mock.received_requests().await.unwrap().len(), calls + 2);

    let again = claij_env(
        &[
            "fsm",
            "provide",
            "--ingress",
            &ingress,
            "cli-approval",
            r#"{"decision": "no"}"#,
        ],
        "",
        &env,
    );
    assert_eq!(again.code, 2, "{}", again.stderr);
    assert!(
        again.stderr.contains("is not waiting for input"),
        "{}",
        again.stderr
    );
}

#[test]
fn restate_flags_are_refused_where_they_mean_nothing() {
    let files = Files::new(&[("chain.json", CHAIN)]);
    let chain = files.path("chain.json");
    let input = r#"{"topic": "rust"}"#;
    for (args, part) in [
        (
            vec!["--id", "r1"],
            "--ingress, --id and --follow-timeout are for a run on Restate: add --on restate",
        ),
        (
            vec!["--ingress", "http://127.0.0.1:1"],
            "--ingress, --id and --follow-timeout are for a run on Restate",
        ),
        (
            vec!["--follow-timeout", "5"],
            "--ingress, --id and --follow-timeout are for a run on Restate",
        ),
        (
            vec!["--on", "restate", "--follow-timeout", "0"],
            "expected seconds, above 0",
        ),
        (
            vec!["--on", "restate", "--journal", "j.jsonl"],
            "--journal is for an embedded run",
        ),
    ] {
        let mut all = vec!["fsm", "run", chain.as_str(), "--input", input];
        all.extend(args);
        let run = claij_env(&all, "", &[]);
        super::assert_one_line_error(&run, 2, part);
    }
    let embedded = claij_env(&["fsm", "provide", "--on", "embedded", "r1", "{}"], "", &[]);
    super::assert_one_line_error(&embedded, 2, "an embedded run takes its input on the stdin");
    // No server there: a one-line error naming the URL.
    let nowhere = claij_env(
        &[
            "fsm",
            "run",
            chain.as_str(),
            "--input",
            input,
            "--on",
            "restate",
            "--ingress",
            "http://127.0.0.1:1",
        ],
        "",
        &[],
    );
    super::assert_one_line_error(&nowhere, 2, "POST http://127.0.0.1:1/ClaijFsm/");
}

/// A bind beyond loopback without identity keys, and a bad key from each place a key comes from,
/// are refused before anything listens, in one line naming the flag, the variable or the file and
/// line (`--register` at a closed port: a worker that did start would fail otherwise).
#[test]
fn serve_restate_refuses_an_open_bind_without_keys_and_a_bad_key_naming_its_source() {
    let config =
        "[defaults]\nmax_retries = 1\n[restate]\nidentity_keys = [\"publickeyv1_short\"]\n";
    let files = Files::new(&[("config.toml", config), ("empty.toml", "")]);
    let (keyed, empty) = (files.path("config.toml"), files.path("empty.toml"));
    let serve = |bind: &str, flags: &[&str], var: Option<&str>, config: &str| {
        let mut args = vec!["serve", "restate", "--bind", bind];
        args.extend(["--register", "http://127.0.0.1:1"]);
        args.extend(flags);
        let env = [
            ("CLAIJ_CONFIG", Some(config)),
            ("CLAIJ_RESTATE_IDENTITY_KEYS", var),
        ];
        claij_env(&args, "", &env)
    };
    let open = serve("0.0.0.0:0", &[], None, &empty);
    super::assert_one_line_error(
        &open,
        2,
        "error: --bind 0.0.0.0:0 is beyond loopback and the worker has no identity keys",
    );
    assert!(open.stderr.contains("--identity-key"), "{}", open.stderr);

    let flag = serve(
        "127.0.0.1:0",
        &["--identity-key", "publickeyv1_x"],
        None,
        &keyed,
    );
    super::assert_one_line_error(
        &flag,
        2,
        "error: --identity-key: `publickeyv1_x` is not a Restate request-identity public key",
    );
    let var = serve("127.0.0.1:0", &[], Some("hunter2-secret"), &keyed);
    super::assert_one_line_error(
        &var,
        2,
        "error: CLAIJ_RESTATE_IDENTITY_KEYS: a value of 14 characters not starting with \
         publickeyv1_ (not shown)",
    );
    assert!(!var.stderr.contains("hunter2"), "{}", var.stderr);
    let file = serve("0.0.0.0:0", &[], None, &keyed);
    super::assert_one_line_error(
        &file,
        2,
        &format!("error: {keyed}:4: restate.identity_keys: `publickeyv1_short` is not"),
    );
}

/// A Restate server signing with a key made here (throwaway, in the test's temp dir): the worker
/// given its public key (as the server's log names it) serves a run through the server as before,
/// and a worker given another key refuses the server's calls, so it cannot even be registered.
#[tokio::test]
async fn a_keyed_worker_serves_its_signing_server_and_refuses_one_with_another_key() {
    use base64::Engine as _;
    let rng = ring::rand::SystemRandom::new();
    let pkcs8 = ring::signature::Ed25519KeyPair::generate_pkcs8(&rng).unwrap();
    let pem = format!(
        "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
        base64::engine::general_purpose::STANDARD.encode(pkcs8.as_ref())
    );
    let mock = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(reply(r#"{"text": "ok"}"#))
        .mount(&mock)
        .await;
    let config = format!(
        "[providers.mylocal]\nkind = \"openai-compatible\"\nbase_url = \"{}/v1\"\n",
        mock.uri()
    );
    let files = Files::new(&[
        ("config.toml", &config),
        ("chain.json", CHAIN),
        ("key.pem", &pem),
    ]);
    let key_file = files.path("key.pem");
    let Some(server) = RestateServer::start_with(&[(
        "RESTATE_WORKER__INVOKER__REQUEST_IDENTITY_PRIVATE_KEY_PEM_FILE",
        std::ffi::OsStr::new(&key_file),
    )]) else {
        return;
    };
    // `Loaded request identity key kid="publickeyv1_..."`: what docs/restate.md has users copy.
    let log = server.log();
    let at = log
        .find("Loaded request identity key kid=\"publickeyv1_")
        .unwrap_or_else(|| panic!("the server's log names no key:\n{log}"))
        + "Loaded request identity key kid=\"".len();
    let public: String = log[at..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();

    let (config, cache) = (files.path("config.toml"), files.path("cache"));
    let spawn = |key: String| {
        let (config, cache) = (config.clone(), cache.clone());
        Worker::spawn(move |port| {
            let mut command = Command::new(env!("CARGO_BIN_EXE_claij"));
            command
                .args(["serve", "restate", "--bind", &format!("127.0.0.1:{port}")])
                .args(["--config", &config, "--llm", "mylocal:smol"])
                .args(["--identity-key", &key])
                .env("XDG_CACHE_HOME", &cache)
                .env_remove("CLAIJ_RESTATE_IDENTITY_KEYS");
            command
        })
    };
    let worker = spawn(public.clone());
    server.register(&worker.uri());
    let run = claij_env(
        &[
            "fsm",
            "run",
            &files.path("chain.json"),
            "--input",
            r#"{"topic": "rust"}"#,
            "--on",
            "restate",
            "--ingress",
            &server.ingress_url(),
            "--id",
            "keyed-chain",
        ],
        "",
        &[("CLAIJ_CONFIG", Some(config.as_str()))],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stderr, worker.log());
    assert_eq!(transitions(&run.stderr).len(), 4, "{}", run.stderr);
    assert_eq!(mock.received_requests().await.unwrap().len(), 3);

    // Another key: the server's signed discovery call is refused (401), so is the registration.
    let other = spawn("publickeyv1_ChjENKeMvCtRnqG2mrBK1HmPKufgFUc98K8B3ononQvp".to_owned());
    let body = json!({"uri": other.uri(), "force": true}).to_string();
    let refused = server.admin("POST", "/deployments", Some(&body)).unwrap();
    assert!(
        !(200..300).contains(&refused.status) && refused.body.contains("401"),
        "{refused:?}\n{}",
        other.log()
    );
    assert!(
        worker
            .log()
            .contains("serving only requests signed with the 1 identity key(s) of --identity-key"),
        "{}",
        worker.log()
    );
}
