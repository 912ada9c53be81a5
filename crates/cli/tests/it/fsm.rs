//! `claij fsm validate` and `claij fsm render`: summaries, problems one per line, diagrams, exit codes.

use std::process::{Command, Stdio};

use super::{Files, assert_one_line_error, claij, claij_env};

fn example(name: &str) -> String {
    format!(
        "{}/../../examples/fsm/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// Every problem at once: a duplicate state, a duplicate transition, an unknown and an unreachable
/// state, a schema that does not compile, a sub-FSM state naming no machine.
const BROKEN: &str = r#"{
  "id": "broken",
  "states": [
    {"id": "ask", "action": "llm"},
    {"id": "ask", "action": "human"},
    {"id": "orphan", "action": "llm"},
    {"id": "sub", "action": "fsm"},
    {"id": "end", "action": "end"}
  ],
  "transitions": [
    {"id": ["start", "ask"]},
    {"id": ["ask", "sub"]},
    {"id": ["ask", "sub"]},
    {"id": ["sub", "nowhere"]},
    {"id": ["ask", "end"], "schema": {"type": 12}}
  ]
}"#;

#[track_caller]
fn check_valid(file: &str, summary: &str) {
    let run = claij(&["fsm", "validate", file], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, format!("{summary}\n"));
    assert!(run.stderr.is_empty(), "{}", run.stderr);
}

#[test]
fn validate_the_examples() {
    check_valid(
        &example("code-review"),
        "FSM `code-review`: 4 states, 6 transitions",
    );
    // The tool loop's `mcp` service needs MCP servers in the configuration (`fsm run` refuses it
    // without; see fsm_services.rs).
    let servers = Files::new(&[(
        "mcp.json",
        r#"{"mcpServers": {"fs": {"command": "mcp-server-filesystem"}}}"#,
    )]);
    let tool_loop = example("tool-loop");
    let config = servers.path("mcp.json");
    let run = claij(&["fsm", "validate", &tool_loop, "--config", &config], "");
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.stdout, "FSM `tool-loop`: 3 states, 4 transitions\n");
    let one = r#"{"id": "one", "states": [{"id": "ask"}], "xitions": [{"id": ["start", "ask"]}, {"id": ["ask", "end"]}]}"#;
    let f = Files::new(&[("one.json", one)]);
    check_valid(&f.path("one.json"), "FSM `one`: 1 state, 2 transitions");
}

#[test]
fn validate_lists_every_problem() {
    let f = Files::new(&[("broken.json", BROKEN)]);
    let path = f.path("broken.json");
    let run = claij(&["fsm", "validate", &path], "");
    assert_eq!(run.code, 1, "{}", run.stderr);
    insta::assert_snapshot!(run.stdout, @r#"
    /states/1/id: duplicate state `ask` (first at /states/0)
    /states/3/config: an `fsm` state names its sub-FSM: {"fsm": "<id>"}
    /transitions/2/id: duplicate transition ["ask", "sub"] (first at /transitions/1)
    /transitions/3/id/1: unknown state `nowhere`
    /transitions/4/schema/type: invalid schema: not valid against the meta-schema: value must be one of 'array', 'boolean', 'integer', 'null', 'number', 'object', 'string'
    /states/2: `orphan` cannot be reached from `start`
    /states/2: `orphan` is not terminal and no transition leaves it
    "#);
    assert_eq!(
        run.stderr,
        format!("{path}: invalid: FSM `broken` has 7 problems\n")
    );
    // Rendering refuses the same definition the same way.
    let render = claij(&["fsm", "render", &path], "");
    assert_eq!((render.code, render.stdout), (1, run.stdout));
}

#[test]
fn validate_exit_codes() {
    let f = Files::new(&[
        ("broken.json", "{\"id\": \"x\", "),
        ("shape.json", r#"{"id": "x", "transitions": []}"#),
    ]);
    let missing = claij(&["fsm", "validate", &f.path("nope.json")], "");
    assert_one_line_error(&missing, 2, "cannot read");
    let broken = claij(&["fsm", "validate", &f.path("broken.json")], "");
    assert_one_line_error(&broken, 2, "broken.json: invalid JSON");
    let stdin = claij(&["fsm", "validate", "-"], "[1, 2");
    assert_one_line_error(&stdin, 2, "stdin: invalid JSON");
    let shape = claij(&["fsm", "validate", &f.path("shape.json")], "");
    assert_one_line_error(
        &shape,
        1,
        "shape.json: not an FSM definition: missing field `states`",
    );
    assert!(shape.stdout.is_empty(), "{}", shape.stdout);
    let usage = claij(&["fsm", "validate"], "");
    assert_eq!(usage.code, 2);
}

#[test]
fn render_dot_and_mermaid() {
    let path = example("code-review");
    let definition =
        claij::fsm::engine::Definition::from_json(&std::fs::read_to_string(&path).unwrap())
            .unwrap();
    for args in [vec![], vec!["--format", "dot"]] {
        let mut all = vec!["fsm", "render", path.as_str()];
        all.extend(args);
        let run = claij(&all, "");
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert_eq!(run.stdout, claij::fsm::engine::render::to_dot(&definition));
        assert!(run.stdout.starts_with("digraph \"code-review\" {\n"));
    }
    let mermaid = claij(&["fsm", "render", &path, "--format", "mermaid"], "");
    assert_eq!(mermaid.code, 0, "{}", mermaid.stderr);
    assert_eq!(
        mermaid.stdout,
        claij::fsm::engine::render::to_mermaid(&definition)
    );
    let stdin = claij(
        &["fsm", "render", "-"],
        &std::fs::read_to_string(example("tool-loop")).unwrap(),
    );
    assert!(
        stdin
            .stdout
            .contains(r#""servicing" [shape=component, label="servicing\nservice: mcp"];"#),
        "{}",
        stdin.stdout
    );
    let usage = claij(&["fsm", "render", &path, "--format", "png"], "");
    assert_one_line_error(&usage, 2, "invalid value 'png'");
}

#[test]
fn render_svg_needs_graphviz() {
    let path = example("tool-loop");
    let installed = Command::new("dot")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    if installed {
        let run = claij(&["fsm", "render", &path, "--format", "svg"], "");
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(run.stdout.contains("<svg"), "{}", run.stdout);
    }
    // With nothing on the PATH, `dot` is missing whether or not Graphviz is installed.
    let empty = Files::new(&[]);
    let run = claij_env(
        &["fsm", "render", &path, "--format", "svg"],
        "",
        &[("PATH", Some(&empty.path("")))],
    );
    assert_one_line_error(&run, 2, "graphviz's `dot` is not installed");
    assert!(
        run.stderr
            .contains(&format!("`claij fsm render {path} --format dot`")),
        "{}",
        run.stderr
    );
    assert!(run.stdout.is_empty(), "{}", run.stdout);
}

/// A machine with no model: a person approves, then it ends.
const APPROVAL: &str = r#"{
  "id": "approval",
  "states": [
    {"id": "approve", "action": "human"},
    {"id": "end", "action": "end"}
  ],
  "transitions": [
    {"id": ["start", "approve"], "schema": {"type": "object", "properties": {"plan": {"type": "string"}}, "required": ["plan"]}},
    {"id": ["approve", "end"], "schema": {"type": "object", "properties": {"decision": {"enum": ["yes", "no"]}}, "required": ["decision"]}}
  ]
}"#;

#[test]
fn run_waits_for_input_and_resume_finishes_from_the_journal() {
    let files = Files::new(&[("approval.json", APPROVAL)]);
    let journal = files.path("run.jsonl");
    let args = [
        "fsm",
        "run",
        &files.path("approval.json"),
        "--input",
        r#"{"plan": "ship it"}"#,
        "--journal",
        &journal,
    ];
    // No input on stdin: the run stops waiting, and says how to go on.
    let waiting = claij(&args, "");
    assert_eq!(waiting.code, 0, "{}", waiting.stderr);
    assert!(
        waiting.stderr.contains("start -> approve"),
        "{}",
        waiting.stderr
    );
    assert!(
        waiting
            .stderr
            .contains("waiting for input in state `approve`"),
        "{}",
        waiting.stderr
    );
    assert!(
        waiting.stderr.contains("claij fsm resume"),
        "{}",
        waiting.stderr
    );
    let trail: serde_json::Value = serde_json::from_str(&waiting.stdout).unwrap();
    assert_eq!(trail.as_array().unwrap().len(), 1);

    // An invalid answer is refused (exit 1) and changes nothing.
    let refused = claij(&["fsm", "resume", &journal], "{\"decision\": \"maybe\"}\n");
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(refused.stderr.contains("decision"), "{}", refused.stderr);

    // Resume needs only the journal; the answer comes from stdin.
    let done = claij(
        &["fsm", "resume", &journal, "--json"],
        "{\"decision\": \"yes\"}\n",
    );
    assert_eq!(done.code, 0, "{}", done.stderr);
    let report: serde_json::Value = serde_json::from_str(&done.stdout).unwrap();
    assert_eq!(report["outcome"]["finished"], "end");
    assert_eq!(report["trail"].as_array().unwrap().len(), 2);
    assert_eq!(report["trail"][1]["event"]["decision"], "yes");

    // Finished: resuming again does nothing more.
    let again = claij(&["fsm", "resume", &journal, "--json"], "");
    assert_eq!(again.code, 0, "{}", again.stderr);
    let report: serde_json::Value = serde_json::from_str(&again.stdout).unwrap();
    assert_eq!(report["trail"].as_array().unwrap().len(), 2);
}

#[test]
fn run_refuses_input_that_fits_no_start_transition() {
    let files = Files::new(&[("approval.json", APPROVAL)]);
    let run = claij(
        &[
            "fsm",
            "run",
            &files.path("approval.json"),
            "--input",
            r#"{"plan": 3}"#,
        ],
        "",
    );
    assert_one_line_error(&run, 2, "invalid event from state `start`");
}

/// `claij fsm run approval.json --journal FILE` (plus `extra`), with no answer on stdin: it stops
/// waiting in `approve` with one transition journaled.
fn run_approval(files: &Files, journal: &str, extra: &[&str]) -> super::Run {
    let definition = files.path("approval.json");
    let mut args = vec![
        "fsm",
        "run",
        definition.as_str(),
        "--input",
        r#"{"plan": "ship it"}"#,
        "--journal",
        journal,
    ];
    args.extend_from_slice(extra);
    claij(&args, "")
}

fn journal_lines(journal: &str) -> Vec<serde_json::Value> {
    std::fs::read_to_string(journal)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// What a crash can leave at the end of a journal.
#[track_caller]
fn check_resume_after_tear(tear: impl Fn(&mut Vec<u8>), what: &str) {
    let files = Files::new(&[("approval.json", APPROVAL)]);
    let journal = files.path("run.jsonl");
    let waiting = run_approval(&files, &journal, &[]);
    assert_eq!(waiting.code, 0, "{what}: {}", waiting.stderr);
    let mut bytes = std::fs::read(&journal).unwrap();
    tear(&mut bytes);
    std::fs::write(&journal, bytes).unwrap();

    let done = claij(&["fsm", "resume", &journal], "{\"decision\": \"yes\"}\n");
    assert_eq!(done.code, 0, "{what}: {}", done.stderr);
    assert!(
        done.stderr.contains("approve -> end"),
        "{what}: {}",
        done.stderr
    );
    // The second resume is the one a torn line used to break.
    let again = claij(&["fsm", "resume", &journal, "--json"], "");
    assert_eq!(again.code, 0, "{what}: {}", again.stderr);
    let report: serde_json::Value = serde_json::from_str(&again.stdout).unwrap();
    assert_eq!(report["outcome"]["finished"], "end", "{what}");
    assert_eq!(report["trail"].as_array().unwrap().len(), 2, "{what}");
    assert_eq!(journal_lines(&journal).len(), 3, "{what}");
}

#[test]
fn resume_cuts_a_torn_last_line_and_resumes_again() {
    let next = br#"{"kind":"transition","from":"approve","to":"end","event":{"decision":"yes"}}"#;
    check_resume_after_tear(|b| b.extend_from_slice(&next[..25]), "cut mid-line");
    check_resume_after_tear(
        |b| b.extend_from_slice(&next[..next.len() - 1]),
        "cut right after an inner `}`",
    );
    check_resume_after_tear(
        |b| assert_eq!(b.pop(), Some(b'\n')),
        "a whole last line without its newline",
    );
}

#[test]
fn run_refuses_a_journal_that_holds_a_run_unless_forced() {
    let files = Files::new(&[("approval.json", APPROVAL)]);
    let journal = files.path("run.jsonl");
    let first = run_approval(&files, &journal, &[]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    let before = std::fs::read(&journal).unwrap();

    let refused = run_approval(&files, &journal, &[]);
    assert_one_line_error(
        &refused,
        2,
        &format!("journal {journal} already holds a run: use `claij fsm resume {journal}`"),
    );
    assert!(refused.stdout.is_empty(), "{}", refused.stdout);
    assert_eq!(std::fs::read(&journal).unwrap(), before, "left as it was");

    let forced = run_approval(&files, &journal, &["--force"]);
    assert_eq!(forced.code, 0, "{}", forced.stderr);
    let lines = journal_lines(&journal);
    assert_eq!(lines.len(), 2, "a new header and one transition");
    let old: serde_json::Value = serde_json::from_str(
        std::str::from_utf8(&before)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_ne!(lines[0]["run_id"], old["run_id"]);

    let usage = claij(
        &[
            "fsm",
            "run",
            &files.path("approval.json"),
            "--input",
            "{}",
            "--force",
        ],
        "",
    );
    assert_one_line_error(&usage, 2, "--journal");
}

#[test]
fn a_second_process_on_a_journal_in_use_exits_2() {
    use std::io::{BufRead as _, BufReader, Read as _, Write as _};

    let files = Files::new(&[("approval.json", APPROVAL)]);
    let journal = files.path("run.jsonl");
    let definition = files.path("approval.json");
    let mut first = Command::new(env!("CARGO_BIN_EXE_claij"))
        .args([
            "fsm",
            "run",
            &definition,
            "--input",
            r#"{"plan": "ship it"}"#,
            "--journal",
            &journal,
        ])
        .env_remove("CLAIJ_CONFIG")
        .env(
            "XDG_CONFIG_HOME",
            std::env::temp_dir().join("claij-tests-no-config"),
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(first.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    // The first transition is printed after the journal is locked; the run now waits on stdin.
    assert!(line.starts_with("start -> approve"), "{line}");

    for args in [
        vec!["fsm", "resume", journal.as_str()],
        vec![
            "fsm",
            "run",
            definition.as_str(),
            "--input",
            r#"{"plan": "other"}"#,
            "--journal",
            journal.as_str(),
            "--force",
        ],
    ] {
        let second = claij(&args, "{\"decision\": \"no\"}\n");
        assert_one_line_error(
            &second,
            2,
            &format!("journal {journal}: another process holds it"),
        );
    }

    let mut stdin = first.stdin.take().unwrap();
    stdin.write_all(b"{\"decision\": \"yes\"}\n").unwrap();
    drop(stdin);
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    assert!(first.wait().unwrap().success(), "{rest}");
    let lines = journal_lines(&journal);
    let steps: Vec<String> = lines[1..]
        .iter()
        .map(|l| format!("{}->{}", l["from"], l["to"]))
        .collect();
    assert_eq!(
        steps,
        [r#""start"->"approve""#, r#""approve"->"end""#],
        "each transition once, the refused processes' answers nowhere"
    );
}

/// One `llm` state, asked through a mock OpenRouter.
const ONE_QUESTION: &str = r#"{
  "id": "one-question",
  "states": [{"id": "ask", "action": "llm"}, {"id": "end", "action": "end"}],
  "transitions": [
    {"id": ["start", "ask"], "schema": {"type": "object"}},
    {"id": ["ask", "end"], "schema": {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}}
  ]
}"#;

/// `claij fsm run` exits as `claij ask` does: 2 when the backend fails, 1 when the replies stay
/// invalid.
#[tokio::test]
async fn run_exit_codes_follow_ask_for_backend_failures() {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    let unauthorized = ResponseTemplate::new(401).set_body_json(
        serde_json::json!({"error": {"message": "No auth credentials found", "code": 401}}),
    );
    for (response, code, says) in [
        (unauthorized, 2, "401"),
        (super::openrouter::reply("no JSON here"), 1, "state `ask`"),
    ] {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path(super::openrouter::CHAT))
            .respond_with(response)
            .expect(1)
            .mount(&server)
            .await;
        let files = Files::new(&[
            ("one.json", ONE_QUESTION),
            ("config.toml", &super::openrouter::config(&server)),
        ]);
        let config = files.path("config.toml");
        let run = claij_env(
            &[
                "fsm",
                "run",
                &files.path("one.json"),
                "--input",
                "{}",
                "--llm",
                "gemini-flash",
                "--max-retries",
                "0",
            ],
            "",
            &[
                ("CLAIJ_CONFIG", Some(config.as_str())),
                ("OPENROUTER_API_KEY", Some("sk-or-v1-fsm-test-0123456789")),
            ],
        );
        assert_eq!(run.code, code, "{}", run.stderr);
        let last = run.stderr.lines().last().unwrap();
        assert!(last.starts_with("error: "), "{}", run.stderr);
        assert!(last.contains(says), "{}", run.stderr);
        assert!(!run.stderr.contains("sk-or-v1-fsm-test"), "{}", run.stderr);
    }
}

/// `claij fsm run` against a mock OpenRouter that never replies with JSON, the configuration's
/// `[defaults]` being `defaults`: how many model calls it made, and the run.
async fn run_against_a_model_that_never_answers(
    defaults: &str,
    extra: &[&str],
) -> (usize, super::Run) {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer};

    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(super::openrouter::CHAT))
        .respond_with(super::openrouter::reply("I would rather not say."))
        .mount(&server)
        .await;
    let config = format!("{}{defaults}", super::openrouter::config(&server));
    let files = Files::new(&[("config.toml", &config), ("fsm.json", ONE_QUESTION)]);
    let (cfg, definition, data) = (
        files.path("config.toml"),
        files.path("fsm.json"),
        files.path("data"),
    );
    let mut args = vec![
        "fsm",
        "run",
        definition.as_str(),
        "--input",
        "{}",
        "--llm",
        "gemini-flash",
    ];
    args.extend_from_slice(extra);
    let run = claij_env(
        &args,
        "",
        &[
            ("CLAIJ_CONFIG", Some(cfg.as_str())),
            ("OPENROUTER_API_KEY", Some("sk-or-v1-fsm-defaults")),
            // No compatibility matrix: only the flags and `[defaults]` decide.
            ("XDG_DATA_HOME", Some(data.as_str())),
        ],
    );
    (server.received_requests().await.unwrap().len(), run)
}

#[tokio::test]
async fn run_takes_max_retries_from_the_configuration_defaults_unless_told() {
    let (calls, run) =
        run_against_a_model_that_never_answers("[defaults]\nmax_retries = 1\n", &[]).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("start -> ask"), "{}", run.stderr);
    assert_eq!(
        calls, 2,
        "the first attempt and the one retry [defaults] allows"
    );

    let (calls, run) = run_against_a_model_that_never_answers(
        "[defaults]\nmax_retries = 1\n",
        &["--max-retries", "0"],
    )
    .await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(calls, 1, "the flag wins over [defaults]");

    let (calls, run) = run_against_a_model_that_never_answers("", &[]).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(calls, 4, "without either: the first attempt and 3 retries");
}

/// The end line counts model calls, not attempts: the one `llm` state's call, valid on its
/// second attempt, is 1 model call with 1 retry (it was "2 model calls").
#[tokio::test]
async fn the_end_line_counts_a_retry_as_an_attempt_of_its_call() {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer};

    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(super::openrouter::CHAT))
        .respond_with(super::openrouter::reply(r#"{"reply": "4"}"#))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(super::openrouter::CHAT))
        .respond_with(super::openrouter::reply(r#"{"answer": "4"}"#))
        .expect(1)
        .mount(&server)
        .await;
    let files = Files::new(&[
        ("one.json", ONE_QUESTION),
        ("config.toml", &super::openrouter::config(&server)),
    ]);
    let (config, data) = (files.path("config.toml"), files.path("data"));
    let run = claij_env(
        &[
            "fsm",
            "run",
            &files.path("one.json"),
            "--input",
            "{}",
            "--llm",
            "gemini-flash",
        ],
        "",
        &[
            ("CLAIJ_CONFIG", Some(config.as_str())),
            ("OPENROUTER_API_KEY", Some("sk-or-v1-fsm-retry-0123456789")),
            ("XDG_DATA_HOME", Some(data.as_str())),
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let end = run
        .stderr
        .lines()
        .find(|l| l.contains(" transitions, "))
        .unwrap_or_else(|| panic!("{}", run.stderr));
    assert!(
        end.starts_with("2 transitions, 1 model call (0 valid on the first try, 1 retry), "),
        "{end}"
    );
}

#[tokio::test]
async fn run_takes_the_model_options_ask_takes() {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer};

    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(super::openrouter::CHAT))
        .respond_with(super::openrouter::reply(r#"{"answer": "4"}"#))
        .expect(1)
        .mount(&server)
        .await;
    let files = Files::new(&[
        ("one.json", ONE_QUESTION),
        ("config.toml", &super::openrouter::config(&server)),
    ]);
    let config = files.path("config.toml");
    let run = claij_env(
        &[
            "fsm",
            "run",
            &files.path("one.json"),
            "--input",
            "{}",
            "--llm",
            "gemini-flash",
            "--mode",
            "prompted",
            "--temperature",
            "0.5",
            "--seed",
            "7",
            "--max-tokens",
            "64",
            "--threads",
            "1",
        ],
        "",
        &[
            ("CLAIJ_CONFIG", Some(config.as_str())),
            ("OPENROUTER_API_KEY", Some("sk-or-v1-fsm-options")),
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let requests = server.received_requests().await.unwrap();
    let body: serde_json::Value = serde_json::from_slice(&requests[0].body).unwrap();
    assert!(
        body.get("response_format").is_none() && body.get("tools").is_none(),
        "prompted: the schema is in the prompt only: {body}"
    );
    assert_eq!(
        (&body["temperature"], &body["seed"], &body["max_tokens"]),
        (
            &serde_json::json!(0.5),
            &serde_json::json!(7),
            &serde_json::json!(64)
        ),
        "{body}"
    );
}

/// start -> review (the sub-FSM in `flows/approval.json`, trail full) -> end.
const SHIPPING: &str = r#"{
  "id": "shipping",
  "states": [
    {"id": "review", "action": "fsm", "config": {"fsm": "flows/approval.json", "trail": "full"}},
    {"id": "end", "action": "end"}
  ],
  "transitions": [
    {"id": ["start", "review"], "schema": {"type": "object", "properties": {"plan": {"type": "string"}}, "required": ["plan"]}},
    {"id": ["review", "end"], "schema": {"type": "object", "properties": {"decision": {"enum": ["yes", "no"]}}, "required": ["decision"]}}
  ]
}"#;

/// A sub-FSM read from a file next to its parent reaches a `human` state: the parent run waits in
/// it (`review/approve`), and `claij fsm resume` gives the sub-FSM its input from the journal alone
/// (the definition files are gone by then).
#[test]
fn a_sub_fsm_from_a_file_suspends_the_run_and_resume_continues_it() {
    let files = Files::new(&[("shipping.json", SHIPPING)]);
    std::fs::create_dir_all(files.path("flows")).unwrap();
    std::fs::write(files.path("flows/approval.json"), APPROVAL).unwrap();
    let journal = files.path("run.jsonl");
    let parent = files.path("shipping.json");
    let args = [
        "fsm",
        "run",
        &parent,
        "--input",
        r#"{"plan": "ship it"}"#,
        "--journal",
        &journal,
    ];
    assert_eq!(claij(&["fsm", "validate", &parent], "").code, 0);
    let waiting = claij(&args, "");
    assert_eq!(waiting.code, 0, "{}", waiting.stderr);
    assert!(
        waiting
            .stderr
            .contains("waiting for input in state `review/approve`"),
        "{}",
        waiting.stderr
    );
    // The sub-FSM's steps on stderr carry the state they run in.
    assert!(
        waiting.stderr.contains("review/start -> review/approve: "),
        "{}",
        waiting.stderr
    );
    std::fs::remove_file(files.path("flows/approval.json")).unwrap();
    std::fs::remove_file(&parent).unwrap();

    let done = claij(
        &["fsm", "resume", &journal, "--json"],
        "{\"decision\": \"yes\"}\n",
    );
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert!(
        done.stderr.contains("review/approve -> review/end: "),
        "{}",
        done.stderr
    );
    let report: serde_json::Value = serde_json::from_str(&done.stdout).unwrap();
    assert_eq!(report["outcome"]["finished"], "end");
    let path: Vec<String> = report["trail"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            format!(
                "{}->{}",
                e["from"].as_str().unwrap(),
                e["to"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        path,
        [
            "start->review",
            "review/start->review/approve",
            "review/approve->review/end",
            "review->end"
        ]
    );
    assert_eq!(report["trail"][3]["event"]["decision"], "yes");
}

/// A file that refers back to one on its way is a load error (exit 1) naming the chain, for `run`
/// and `validate` alike, before any model is opened.
#[test]
fn sub_fsm_files_that_refer_back_are_a_load_error_naming_the_chain() {
    let refers_to = |id: &str, to: &str| {
        format!(
            r#"{{"id": "{id}", "states": [{{"id": "inner", "action": "fsm", "config": {{"fsm": "{to}"}}}}, {{"id": "end", "action": "end"}}],
                "transitions": [{{"id": ["start", "inner"]}}, {{"id": ["inner", "end"]}}]}}"#
        )
    };
    let files = Files::new(&[
        ("a.json", &refers_to("a", "b.json")),
        ("b.json", &refers_to("b", "a.json")),
    ]);
    let a = files.path("a.json");
    for args in [
        vec!["fsm", "run", a.as_str(), "--input", "{}"],
        vec!["fsm", "validate", a.as_str()],
    ] {
        let run = claij(&args, "");
        assert_eq!(run.code, 1, "{}", run.stderr);
        assert_eq!(
            run.stdout,
            "/states/0/config/fsm: `b.json`: FSM `b` has 1 problem: /states/0/config/fsm: sub-FSMs \
             refer back in a cycle: a.json -> b.json -> a.json\n"
        );
        assert_eq!(run.stderr, format!("{a}: invalid: FSM `a` has 1 problem\n"));
    }
}

/// The remedy the diagnostic model suggests in the meta-debug tests.
const REMEDY: &str = "Name the field answer, not reply.";

/// `claij fsm run` of [`ONE_QUESTION`] with `mylocal:small`, one retry and `meta_debug` (the flag),
/// the compatibility matrix `matrix` in the data directory when given, against an OpenAI-compatible
/// server where `small` names its field right only once told how, and `big` diagnoses: the run and
/// its journal's lines.
async fn run_meta_debugged(
    meta_debug: &str,
    matrix: Option<serde_json::Value>,
) -> (super::Run, Vec<serde_json::Value>) {
    use wiremock::matchers::{body_partial_json, body_string_contains, method, path};
    use wiremock::{Mock, MockServer};

    let server = MockServer::start().await;
    let chat = || Mock::given(method("POST")).and(path("/v1/chat/completions"));
    chat()
        .and(body_partial_json(serde_json::json!({"model": "small"})))
        .and(body_string_contains(REMEDY))
        .respond_with(super::openrouter::reply(r#"{"answer": "4"}"#))
        .with_priority(1)
        .expect(1)
        .mount(&server)
        .await;
    chat()
        .and(body_partial_json(serde_json::json!({"model": "small"})))
        .respond_with(super::openrouter::reply(r#"{"reply": "4"}"#))
        .with_priority(2)
        .expect(2)
        .mount(&server)
        .await;
    chat()
        .and(body_partial_json(serde_json::json!({"model": "big"})))
        .and(body_string_contains("Analyze why"))
        .respond_with(super::openrouter::reply(
            r#"{"analysis": "it calls the field reply"}"#,
        ))
        .expect(1)
        .mount(&server)
        .await;
    chat()
        .and(body_partial_json(serde_json::json!({"model": "big"})))
        .and(body_string_contains("Suggest one fix"))
        .respond_with(super::openrouter::reply(&format!(
            r#"{{"fix_kind": "prompt", "suggestion": "{REMEDY}"}}"#
        )))
        .expect(1)
        .mount(&server)
        .await;
    let config = format!(
        "[providers.mylocal]\nkind = \"openai-compatible\"\nbase_url = \"{}/v1\"\n",
        server.uri()
    );
    let files = Files::new(&[("one.json", ONE_QUESTION), ("config.toml", &config)]);
    let (cfg, cache, data, journal) = (
        files.path("config.toml"),
        files.path("cache"),
        files.path("data"),
        files.path("run.jsonl"),
    );
    if let Some(matrix) = matrix {
        std::fs::create_dir_all(files.path("data/claij")).unwrap();
        std::fs::write(
            files.path("data/claij/compat-matrix.json"),
            matrix.to_string(),
        )
        .unwrap();
    }
    let run = claij_env(
        &[
            "fsm",
            "run",
            &files.path("one.json"),
            "--input",
            "{}",
            "--llm",
            "mylocal:small",
            "--max-retries",
            "1",
            "--mode",
            "prompted",
            meta_debug,
            "--journal",
            &journal,
            "--json",
        ],
        "",
        &[
            ("CLAIJ_CONFIG", Some(cfg.as_str())),
            ("XDG_CACHE_HOME", Some(cache.as_str())),
            ("XDG_DATA_HOME", Some(data.as_str())),
        ],
    );
    let lines = journal_lines(&journal);
    (run, lines)
}

/// `--meta-debug=LLM`: the run's model (`mylocal:small`) never names its field right until its
/// prompt says how; after its retries, the diagnostic model (`mylocal:big`, on the same
/// OpenAI-compatible server) analyses the failure and suggests a prompt remedy, the state is asked
/// again with it and its valid answer ends the run; the remedy and its effect are in the trail and
/// the journal.
#[tokio::test]
async fn meta_debug_diagnoses_a_failing_state_and_its_prompt_remedy_is_applied() {
    let (run, lines) = run_meta_debugged("--meta-debug=mylocal:big", None).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["outcome"]["finished"], "end");
    let trail = report["trail"].as_array().unwrap();
    let fixed = trail
        .iter()
        .find(|e| e["to"] == "ask/meta-debug/fixed")
        .unwrap_or_else(|| panic!("{}", run.stdout));
    assert_eq!(fixed["event"]["suggestion"], REMEDY);
    assert_eq!(fixed["event"]["fixed"], true);
    let last = trail.last().unwrap();
    assert_eq!((&last["from"], &last["to"]), (&"ask".into(), &"end".into()));
    assert_eq!(last["event"]["answer"], "4");
    assert_eq!(last["attempts"].as_array().unwrap().len(), 3);
    let remedy = lines.iter().find(|l| l["kind"] == "remedy").unwrap();
    assert_eq!(remedy["state"], "ask");
    assert_eq!(remedy["remedy"]["suggestion"], REMEDY);
    assert_eq!(remedy["remedy"]["fix_kind"], "prompt");
}

/// `--meta-debug` without models takes them from the compatibility matrix: those that passed every
/// test they ran (`mylocal:big`), not one that failed a test (`mylocal:flaky`, listed first).
#[tokio::test]
async fn meta_debug_takes_the_models_the_compatibility_matrix_knows_to_work() {
    let record = |model: &str, passed: bool| {
        serde_json::json!({"model": model, "suite": "retry", "test": "t", "passed": passed,
            "valid_first_try": passed, "attempts": 1, "retries": 0, "tokens_in": 1, "tokens_out": 1,
            "cost": 0.0, "elapsed_ms": 1, "detail": "", "mode": "prompted"})
    };
    let matrix = serde_json::json!({"records": [
        record("mylocal:flaky", true), record("mylocal:flaky", false), record("mylocal:big", true),
    ]});
    let (run, lines) = run_meta_debugged("--meta-debug", Some(matrix)).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let remedy = lines.iter().find(|l| l["kind"] == "remedy").unwrap();
    assert_eq!(remedy["remedy"]["suggestion"], REMEDY);

    // Without a matrix and without a list there is no model to diagnose with: said before the run.
    let files = Files::new(&[("one.json", ONE_QUESTION)]);
    let data = files.path("data");
    let run = claij_env(
        &[
            "fsm",
            "run",
            &files.path("one.json"),
            "--input",
            "{}",
            "--meta-debug",
        ],
        "",
        &[("XDG_DATA_HOME", Some(data.as_str()))],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("--meta-debug=LLM"), "{}", run.stderr);
}

/// start -> decide (the built-in `vote`, three voters) -> adopted | declined.
const ADOPTION: &str = r#"{
  "id": "adoption",
  "states": [
    {"id": "decide", "action": "fsm", "config": {"fsm": "vote", "trail": "full",
      "voters": ["mylocal:a", "mylocal:b", "mylocal:c"]}},
    {"id": "adopted", "action": "end"},
    {"id": "declined", "action": "end"}
  ],
  "transitions": [
    {"id": ["start", "decide"], "schema": {"type": "object"}},
    {"id": ["decide", "adopted"], "schema": {"type": "object", "properties": {"activated": {"const": true}}, "required": ["activated"]}},
    {"id": ["decide", "declined"], "schema": {"type": "object", "properties": {"activated": {"const": false}}, "required": ["activated"]}}
  ]
}"#;

/// An `fsm` state naming the built-in `vote` runs it with the voters its config names, each
/// resolved as `--llm` resolves a model (here three models of one OpenAI-compatible server): two of
/// three approve, the delta is activated, and the ballots are in the trail.
#[tokio::test]
async fn the_built_in_vote_runs_as_a_sub_fsm_with_the_configured_voters() {
    use wiremock::matchers::{body_partial_json, method, path};
    use wiremock::{Mock, MockServer};

    let server = MockServer::start().await;
    for (model, approve) in [("a", true), ("b", false), ("c", true)] {
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .and(body_partial_json(serde_json::json!({"model": model})))
            .respond_with(super::openrouter::reply(&format!(
                r#"{{"approve": {approve}, "reason": "voter {model}"}}"#
            )))
            .expect(1)
            .mount(&server)
            .await;
    }
    let config = format!(
        "[providers.mylocal]\nkind = \"openai-compatible\"\nbase_url = \"{}/v1\"\n",
        server.uri()
    );
    let files = Files::new(&[("adoption.json", ADOPTION), ("config.toml", &config)]);
    let (cfg, cache) = (files.path("config.toml"), files.path("cache"));
    let input = r#"{"extension_id": "confidence-v1", "reason": "say how sure",
        "delta": {"properties": {"confidence": {"type": "number", "minimum": 0, "maximum": 1}}}}"#;
    let run = claij_env(
        &[
            "fsm",
            "run",
            &files.path("adoption.json"),
            "--input",
            input,
            "--mode",
            "prompted",
            "--json",
        ],
        "",
        &[
            ("CLAIJ_CONFIG", Some(cfg.as_str())),
            ("XDG_CACHE_HOME", Some(cache.as_str())),
            ("XDG_DATA_HOME", Some(cache.as_str())),
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["outcome"]["finished"], "adopted", "{}", run.stdout);
    assert_eq!(
        report["outcome"]["event"]["votes"],
        serde_json::json!({"approve": 2, "reject": 1})
    );
    let ballots: Vec<bool> = report["trail"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["from"].as_str().unwrap().starts_with("decide/voter-"))
        .map(|e| e["event"]["approve"].as_bool().unwrap())
        .collect();
    assert_eq!(ballots, [true, false, true]);
    // Each voter is named as anywhere else (`provider:model`), not by the router that serves them.
    let models: Vec<&str> = report["trail"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["from"].as_str().unwrap().starts_with("decide/voter-"))
        .map(|e| e["model"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        models,
        ["mylocal:a", "mylocal:b", "mylocal:c"],
        "{}",
        run.stdout
    );
}

/// A state running a built-in sub-FSM names its models: `validate` and `run` say where one does
/// not (exit 1), before any model is opened.
#[test]
fn a_built_in_sub_fsm_without_its_models_is_a_load_error() {
    let files = Files::new(&[(
        "adoption.json",
        &ADOPTION.replace(r#""voters""#, r#""voter""#),
    )]);
    let file = files.path("adoption.json");
    for args in [
        vec!["fsm", "validate", file.as_str()],
        vec!["fsm", "run", file.as_str(), "--input", "{}"],
    ] {
        let run = claij(&args, "");
        assert_eq!(run.code, 1, "{}", run.stderr);
        assert_eq!(
            run.stdout,
            "/states/0/config/voters: the `vote` sub-FSM needs its models, as `--llm` names them: \
             {\"voters\": [\"LLM\", ...]}\n"
        );
    }
}

/// The README's commands on `examples/fsm/shipping.json` (its sub-FSM in `flows/approval.json`) work
/// as printed: the run waits in `review/approve`, `resume` with a decision ends it; and
/// `examples/fsm/adoption.json` (the built-in vote) is a valid definition.
#[test]
fn the_sub_fsm_examples_run_as_the_readme_says() {
    let files = Files::new(&[]);
    let journal = files.path("run.jsonl");
    let shipping = example("shipping");
    assert_eq!(claij(&["fsm", "validate", &shipping], "").code, 0);
    let waiting = claij(
        &[
            "fsm",
            "run",
            &shipping,
            "--input",
            r#"{"plan": "ship it"}"#,
            "--journal",
            &journal,
        ],
        "",
    );
    assert_eq!(waiting.code, 0, "{}", waiting.stderr);
    assert!(
        waiting
            .stderr
            .contains("waiting for input in state `review/approve`"),
        "{}",
        waiting.stderr
    );
    let done = claij(
        &["fsm", "resume", &journal, "--json"],
        "{\"decision\": \"yes\"}\n",
    );
    assert_eq!(done.code, 0, "{}", done.stderr);
    let report: serde_json::Value = serde_json::from_str(&done.stdout).unwrap();
    assert_eq!(report["outcome"]["finished"], "end");
    let adoption = claij(&["fsm", "validate", &example("adoption")], "");
    assert_eq!(adoption.code, 0, "{}{}", adoption.stdout, adoption.stderr);
}

/// `calc` asks the `eval` service (`run`) as often as it likes, then answers.
const CALCULATOR: &str = r#"{
  "id": "calculator",
  "states": [
    {"id": "calc", "action": "llm"},
    {"id": "run", "action": "service", "config": {"service": "eval"}},
    {"id": "end", "action": "end"}
  ],
  "transitions": [
    {"id": ["start", "calc"], "schema": {"type": "object", "required": ["question"]}},
    {"id": ["calc", "run"], "schema": {"type": "object", "required": ["message"]}},
    {"id": ["run", "calc"], "schema": {"type": "object", "required": ["message"]}},
    {"id": ["calc", "end"], "schema": {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}}
  ]
}"#;

/// The model's call of `eval` on `40 + 2`.
const EVAL_CALL: &str = r#"{"id": ["calc", "run"], "message": {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "eval", "arguments": {"code": "40 + 2"}}}}"#;

/// A mock OpenRouter that always replies `content`.
async fn model_replying(content: &str) -> wiremock::MockServer {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer};
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(super::openrouter::CHAT))
        .respond_with(super::openrouter::reply(content))
        .mount(&server)
        .await;
    server
}

/// The last message of each request `server` received: what the model was told last each time.
async fn told(server: &wiremock::MockServer) -> Vec<String> {
    server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| {
            let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
            let messages = body["messages"].as_array().unwrap();
            messages.last().unwrap()["content"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

/// A model that repeats its `eval` call: the second same result is told to the model, the third
/// stops the run naming the state, the call, the flag and how to resume; resumed, the model is told
/// again and another repeat stops it at once; with `--max-repeated-calls` raised, it answers.
#[tokio::test]
async fn a_repeated_service_call_stops_the_run_naming_the_flag_and_resume_goes_on() {
    let server = model_replying(EVAL_CALL).await;
    let files = Files::new(&[
        ("calc.json", CALCULATOR),
        ("config.toml", &super::openrouter::config(&server)),
    ]);
    let (config, journal) = (files.path("config.toml"), files.path("run.jsonl"));
    let env = [
        ("CLAIJ_CONFIG", Some(config.as_str())),
        ("OPENROUTER_API_KEY", Some("sk-or-v1-fsm-loop-0123456789")),
    ];
    let definition = files.path("calc.json");
    let args = |extra: &[&str]| -> Vec<String> {
        let mut args: Vec<String> = [
            "fsm",
            "run",
            definition.as_str(),
            "--input",
            r#"{"question": "40 + 2?"}"#,
            "--llm",
            "gemini-flash",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        args
    };
    let argv = args(&["--journal", &journal]);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let run = claij_env(&argv, "", &env);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let last = run.stderr.lines().last().unwrap();
    assert_eq!(
        last,
        format!(
            "error: state `run` repeats itself: `eval` with {{\"code\":\"40 + 2\"}} got the same \
             result 3 times since the last input (--max-repeated-calls 1 allows 1 repeat); the run \
             can go on, the model told of the repeats: `claij fsm resume {journal}` (with a higher \
             --max-repeated-calls to allow more)"
        )
    );
    assert!(
        run.stderr
            .contains("7 transitions, 3 model calls, 57+30 tokens"),
        "{}",
        run.stderr
    );
    // The repeats are on the transitions' lines, and no warning says them again.
    assert!(
        run.stderr
            .contains("run -> calc (repeats an earlier call): "),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("run -> calc (repeats 2 earlier calls): "),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("claij_fsm::runner"), "{}", run.stderr);
    let trail: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let repeats: Vec<u64> = trail
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["repeats"].as_u64().unwrap_or(0))
        .collect();
    assert_eq!(repeats, [0, 0, 0, 0, 1, 0, 2]);
    let told_model = told(&server).await;
    assert_eq!(told_model.len(), 3);
    assert!(!told_model[1].contains("Note:"), "{}", told_model[1]);
    assert!(
        told_model[2].ends_with(
            "Note: `run` was given this same request once before and gave this same result: \
             calling it again will not change it. Use the result you have: take [\"calc\",\"end\"], \
             or make a different call. The same call once more ends the run."
        ),
        "{}",
        told_model[2]
    );

    // Resumed: told again (twice before now); the same call stops it at once.
    let resumed = claij_env(&["fsm", "resume", &journal], "", &env);
    assert_eq!(resumed.code, 1, "{}", resumed.stderr);
    assert!(
        resumed.stderr.contains("resuming run run-"),
        "{}",
        resumed.stderr
    );
    assert!(
        resumed
            .stderr
            .contains("got the same result 4 times since the last input"),
        "{}",
        resumed.stderr
    );
    let told_model = told(&server).await;
    assert_eq!(told_model.len(), 4);
    assert!(
        told_model[3].contains("was given this same request 2 times before"),
        "{}",
        told_model[3]
    );

    // A model that answers, allowed more repeats: the run finishes.
    let answering = model_replying(r#"{"id": ["calc", "end"], "answer": 42}"#).await;
    std::fs::write(&config, super::openrouter::config(&answering)).unwrap();
    let done = claij_env(
        &["fsm", "resume", &journal, "--max-repeated-calls", "5"],
        "",
        &env,
    );
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert!(done.stderr.contains("calc -> end"), "{}", done.stderr);

    // Without a journal, the line says how to keep one; 0 stops at the first repeat.
    let argv = args(&["--max-repeated-calls", "0"]);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    std::fs::write(&config, super::openrouter::config(&server)).unwrap();
    let run = claij_env(&argv, "", &env);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let last = run.stderr.lines().last().unwrap();
    assert!(
        last.ends_with(
            "got the same result 2 times since the last input (--max-repeated-calls 0 allows 0 \
             repeats); to be able to go on after a stop, run with --journal FILE, then `claij fsm \
             resume FILE`"
        ),
        "{last}"
    );
    let bad = claij_env(
        &["fsm", "resume", &journal, "--max-repeated-calls", "x"],
        "",
        &env,
    );
    assert_one_line_error(&bad, 2, "--max-repeated-calls");

    // `off`: the repeats are recorded, nobody is told, the run goes on to --max-transitions.
    let argv = args(&["--max-repeated-calls", "off", "--max-transitions", "8"]);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let before = told(&server).await.len();
    let run = claij_env(&argv, "", &env);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("(--max-transitions 8; the trail holds 9)"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("run -> calc (repeats 3 earlier calls): "),
        "{}",
        run.stderr
    );
    assert!(
        told(&server).await[before..]
            .iter()
            .all(|t| !t.contains("Note:")),
        "the model was told"
    );
}

/// a -> a forever: `--max-transitions` stops it, the line naming the flag with counts that agree
/// with the summary, and saying how the run goes on.
#[tokio::test]
async fn max_transitions_names_its_flag_and_how_to_go_on() {
    const LOOPING: &str = r#"{
      "id": "looping",
      "states": [{"id": "a", "action": "llm"}],
      "transitions": [
        {"id": ["start", "a"], "schema": {"type": "object"}},
        {"id": ["a", "a"], "schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}
      ]
    }"#;
    let server = model_replying(r#"{"text": "again"}"#).await;
    let files = Files::new(&[
        ("looping.json", LOOPING),
        ("config.toml", &super::openrouter::config(&server)),
    ]);
    let (config, journal) = (files.path("config.toml"), files.path("run.jsonl"));
    let env = [
        ("CLAIJ_CONFIG", Some(config.as_str())),
        ("OPENROUTER_API_KEY", Some("sk-or-v1-fsm-loop-0123456789")),
    ];
    let definition = files.path("looping.json");
    let base = [
        "fsm",
        "run",
        definition.as_str(),
        "--input",
        "{}",
        "--llm",
        "gemini-flash",
    ];
    let mut argv = base.to_vec();
    argv.extend(["--max-transitions", "5"]);
    let run = claij_env(&argv, "", &env);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(
        lines[lines.len() - 2..],
        [
            "6 transitions, 5 model calls, 95+50 tokens",
            "error: stopped in state `a` after 5 transitions without reaching an end \
             (--max-transitions 5; the trail holds 6); to be able to go on after a stop, run with \
             --journal FILE, then `claij fsm resume FILE`",
        ]
    );

    let mut argv = base.to_vec();
    argv.extend(["--max-transitions", "1", "--journal", &journal]);
    let run = claij_env(&argv, "", &env);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(
        lines[lines.len() - 2..],
        [
            "2 transitions, 1 model call, 19+10 tokens",
            &format!(
                "error: stopped in state `a` after 1 transition without reaching an end \
                 (--max-transitions 1; the trail holds 2); the run can go on: `claij fsm resume \
                 {journal}` (its --max-transitions counts anew)"
            ),
        ]
    );
    let resumed = claij_env(
        &["fsm", "resume", &journal, "--max-transitions", "2"],
        "",
        &env,
    );
    assert_eq!(resumed.code, 1, "{}", resumed.stderr);
    assert!(
        resumed.stderr.contains("resuming run run-"),
        "{}",
        resumed.stderr
    );
    assert!(
        resumed.stderr.contains("after 2 recorded transitions"),
        "{}",
        resumed.stderr
    );
    assert!(
        resumed
            .stderr
            .contains("(--max-transitions 2; the trail holds 4)"),
        "{}",
        resumed.stderr
    );
}

/// `fsm validate` names a misspelt top-level key with the one it was meant to be, and a custom
/// action that looks like a misspelt built-in one.
#[test]
fn validate_names_misspelt_keys_and_actions() {
    let files = Files::new(&[
        (
            "keys.json",
            r#"{"id": "k", "states": [{"id": "ask", "action": "llm"}], "transitons": [{"id": ["start", "ask"]}, {"id": ["ask", "end"]}]}"#,
        ),
        (
            "action.json",
            r#"{"id": "a", "states": [{"id": "ask", "action": "lm"}], "transitions": [{"id": ["start", "ask"]}, {"id": ["ask", "end"]}]}"#,
        ),
    ]);
    let keys = claij(&["fsm", "validate", &files.path("keys.json")], "");
    assert_eq!(keys.code, 1, "{}", keys.stderr);
    assert_eq!(
        keys.stdout,
        "/transitons: unknown field `transitons`; did you mean `transitions`? (annotations may \
         start with `$` or `x-`)\n"
    );
    let action = claij(&["fsm", "validate", &files.path("action.json")], "");
    assert_eq!(action.code, 1, "{}", action.stderr);
    assert!(
        action
            .stdout
            .starts_with("/states/0/action: custom action `lm`; did you mean `llm`?"),
        "{}",
        action.stdout
    );
}

/// Tests on the embedded model: one at a time (the `local-model` nextest group).
mod local_model {
    use super::{Files, example};

    /// The README's line that writes the file its tool loop reads.
    const WRITE_NOTES: &str = r"printf '# Shopping list\n\n- milk\n- eggs\n- bread\n' > notes.md";

    /// The README's tool loop as a newcomer runs it, on the embedded model and the real filesystem
    /// server, from a directory holding only what the README has them write: `claij mcp servers
    /// --root . > .mcp.json` (which also prints the project `docs`), the small file of its `printf`
    /// line, then its `claij fsm run examples/fsm/tool-loop.json --llm local --project docs --input
    /// ...`, word for word. Asked for the file's title, the 135M model (offered only
    /// `fs.read_text_file`) reads the file, then sends the same call again (greedy decoding, so
    /// every run is the same); the repeat is recorded and told to the model, which then answers
    /// with the file, its title first. Without loop detection it calls again until
    /// `--max-transitions`.
    #[test]
    fn the_readme_tool_loop_reads_the_file_repeats_once_and_answers() {
        let test = "the_readme_tool_loop_reads_the_file_repeats_once_and_answers";
        let Some(model) = crate::local_model::model(test) else {
            return;
        };
        let Some(servers) = super::super::mcp::servers(test) else {
            return;
        };
        let work = Files::new(&[]);
        let home = Files::new(&[]);
        let (cwd, home) = (work.path(""), home.path(""));
        let models = model.parent().unwrap().to_string_lossy().into_owned();
        let servers = servers.to_string_lossy().into_owned();
        let env = [
            ("CLAIJ_MCP_SERVERS", servers.as_str()),
            ("CLAIJ_MODEL_DIR", models.as_str()),
        ];
        let claij = |args: &[&str]| super::super::mcp::claij_in(&cwd, &home, args, &env);
        let printed = claij(&["mcp", "servers", "--root", "."]);
        assert_eq!(printed.code, 0, "{}", printed.stderr);
        std::fs::write(work.0.join(".mcp.json"), &printed.stdout).unwrap();
        let wrote = std::process::Command::new("sh")
            .args(["-c", WRITE_NOTES])
            .current_dir(&work.0)
            .status()
            .unwrap();
        assert!(wrote.success(), "{WRITE_NOTES}");
        std::fs::create_dir_all(work.0.join("examples/fsm")).unwrap();
        std::fs::copy(
            example("tool-loop"),
            work.0.join("examples/fsm/tool-loop.json"),
        )
        .unwrap();
        let run = claij(&[
            "fsm",
            "run",
            "examples/fsm/tool-loop.json",
            "--llm",
            "local",
            "--project",
            "docs",
            "--input",
            r#"{"request": "Read the file \"notes.md\" and tell me its title"}"#,
        ]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(
            run.stderr
                .contains("servicing -> llm (repeats an earlier call): "),
            "{}",
            run.stderr
        );
        let trail: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        let trail = trail.as_array().unwrap();
        let path: Vec<String> = trail
            .iter()
            .map(|e| format!("{}->{} {}", e["from"], e["to"], e["repeats"]))
            .collect();
        assert_eq!(
            path,
            [
                r#""start"->"llm" null"#,
                r#""llm"->"servicing" null"#,
                r#""servicing"->"llm" null"#,
                r#""llm"->"servicing" null"#,
                r#""servicing"->"llm" 1"#,
                r#""llm"->"end" null"#,
            ],
            "{}",
            run.stderr
        );
        let call = &trail[1]["event"]["message"]["params"];
        assert_eq!(call["name"], "fs.read_text_file", "{}", run.stderr);
        let answer = trail[5]["event"]["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        assert!(answer.starts_with("# Shopping list\n"), "{}", run.stderr);
    }
}
