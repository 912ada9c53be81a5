//! Schema evolution from the command line: `--interceptors proposals` with each `--approve`, the
//! extension saved with `--memory FILE`, `claij schema audit` and `claij schema rollback`; models
//! mocked on the OpenAI-compatible wire.

use serde_json::{Value, json};
use wiremock::matchers::{body_partial_json, method, path};
use wiremock::{Mock, MockServer};

use super::openrouter::reply;
use super::{Files, Run, claij_env};

const CHAT: &str = "/v1/chat/completions";

/// A configuration with `mylocal` (no key) at `server`.
fn config(server: &MockServer) -> String {
    format!(
        "[providers.mylocal]\nkind = \"openai-compatible\"\nbase_url = \"{}/v1\"\n",
        server.uri()
    )
}

/// `claij ARGS` with the files' configuration and cache.
pub(super) fn claij(files: &Files, args: &[&str]) -> Run {
    let config = files.path("config.toml");
    let cache = files.path("cache");
    claij_env(
        args,
        "",
        &[
            ("CLAIJ_CONFIG", Some(config.as_str())),
            ("XDG_CACHE_HOME", Some(cache.as_str())),
            ("OPENROUTER_API_KEY", None),
            ("OPENAI_API_KEY", None),
        ],
    )
}

/// Mounts `content` as the reply to requests for `model`, at most `times` times when given.
async fn answer(server: &MockServer, model: &str, content: &str, times: Option<u64>) {
    let mock = Mock::given(method("POST"))
        .and(path(CHAT))
        .and(body_partial_json(json!({"model": model})))
        .respond_with(reply(content));
    let mock = match times {
        Some(n) => mock.up_to_n_times(n).with_priority(1),
        None => mock,
    };
    mock.mount(server).await;
}

fn confidence() -> Value {
    json!({"properties": {"confidence": {"type": "number", "minimum": 0, "maximum": 1,
        "description": "How sure you are"}}, "required": ["confidence"]})
}

fn proposal() -> String {
    json!({"answer": "Paris", "state": "answered", "proposed_extension": {
        "extension_id": "confidence-v1", "reason": "to say how sure I am", "delta": confidence()}})
    .to_string()
}

fn ballot(approve: bool, reason: &str) -> String {
    json!({"approve": approve, "reason": reason}).to_string()
}

/// The bodies the server received for `model`.
async fn bodies(server: &MockServer, model: &str) -> Vec<Value> {
    server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| serde_json::from_slice::<Value>(&r.body).unwrap())
        .filter(|b| b["model"] == model)
        .collect()
}

fn file(files: &Files, name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(files.path(name)).unwrap()).unwrap()
}

#[tokio::test]
async fn a_proposal_voted_in_by_three_models_extends_the_next_reply_and_rolls_back() {
    let server = MockServer::start().await;
    answer(
        &server,
        "voter-a",
        &ballot(true, "a reader can weigh it"),
        None,
    )
    .await;
    answer(
        &server,
        "voter-b",
        &ballot(false, "poorly calibrated"),
        None,
    )
    .await;
    answer(
        &server,
        "voter-c",
        &ballot(true, "optional in spirit"),
        None,
    )
    .await;
    answer(&server, "smol", &proposal(), Some(1)).await;
    let files = Files::new(&[("config.toml", &config(&server))]);
    let memory = files.path("conversation.json");
    let ask = |prompt: &'static str, approve: &'static [&'static str]| {
        let mut args = vec![
            "ask",
            prompt,
            "--llm",
            "mylocal:smol",
            "--interceptors",
            "proposals",
            "--memory",
            &memory,
        ];
        args.extend_from_slice(approve);
        claij(&files, &args)
    };
    let voters = &[
        "--approve",
        "vote",
        "--voters",
        "mylocal:voter-a,mylocal:voter-b,mylocal:voter-c",
    ];

    let first = ask("Capital of France?", voters);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert!(
        first
            .stderr
            .contains("vote on the schema extension `confidence-v1`: 2 for, 1 against: activated"),
        "{}",
        first.stderr
    );
    assert!(
        first
            .stderr
            .contains("mylocal:voter-b rejects: poorly calibrated")
    );
    let saved = file(&files, "conversation.json");
    assert_eq!(
        saved["extensions"]["active"][0]["extension_id"],
        "confidence-v1"
    );
    assert_eq!(saved["extensions"]["active"][0]["added_by"], "mylocal:smol");
    let ballots = &saved["extensions"]["audit"][0]["ballots"];
    assert_eq!(ballots.as_array().map(Vec::len), Some(3), "{saved}");
    // Each voter saw the proposal, not the conversation.
    for voter in ["voter-a", "voter-b", "voter-c"] {
        let seen = bodies(&server, voter).await;
        assert_eq!(seen.len(), 1, "{voter}");
        assert!(seen[0].to_string().contains("confidence-v1"));
    }

    // The next run (another process, another approver) asks with the extension and validates
    // against it: a reply without `confidence` is retried.
    answer(
        &server,
        "smol",
        &json!({"answer": "Rome", "state": "answered"}).to_string(),
        Some(1),
    )
    .await;
    answer(
        &server,
        "smol",
        &json!({"answer": "Rome", "state": "answered", "confidence": 0.9}).to_string(),
        None,
    )
    .await;
    let second = ask("Capital of Italy?", &["--approve", "never"]);
    assert_eq!(second.code, 0, "{}", second.stderr);
    let value: Value = serde_json::from_str(&second.stdout).unwrap();
    assert_eq!(value["confidence"], 0.9);
    let asked = bodies(&server, "smol").await;
    assert_eq!(asked.len(), 3, "one proposal, then a retried reply");
    assert!(
        !asked[0]["response_format"]
            .to_string()
            .contains("\"confidence\"")
    );
    assert!(
        asked[1]["response_format"]
            .to_string()
            .contains("\"confidence\"")
    );

    let audit = claij(&files, &["schema", "audit", &memory]);
    assert_eq!(audit.code, 0, "{}", audit.stderr);
    assert!(
        audit
            .stdout
            .contains("confidence-v1  activated  (proposed by mylocal:smol)"),
        "{}",
        audit.stdout
    );
    assert!(
        audit
            .stdout
            .contains("    mylocal:voter-a approves: a reader can weigh it")
    );
    assert!(
        audit.stdout.ends_with("active: confidence-v1\n"),
        "{}",
        audit.stdout
    );

    let rollback = claij(&files, &["schema", "rollback", &memory, "confidence-v1"]);
    assert_eq!(rollback.code, 0, "{}", rollback.stderr);
    let saved = file(&files, "conversation.json");
    assert_eq!(saved["extensions"]["active"], json!([]));
    assert_eq!(saved["turn"], 2, "the rest of the conversation is kept");
    let audit = claij(&files, &["schema", "audit", &memory]);
    assert!(
        audit
            .stdout
            .contains("confidence-v1  rolled back  (removed by claij schema rollback)"),
        "{}",
        audit.stdout
    );

    let again = claij(&files, &["schema", "rollback", &memory, "confidence-v1"]);
    assert_eq!(again.code, 2, "{}", again.stderr);
    assert!(
        again
            .stderr
            .contains("cannot roll back `confidence-v1` (active: none)"),
        "{}",
        again.stderr
    );
}

#[tokio::test]
async fn a_declined_proposal_is_shown_to_the_proposer_and_audited() {
    let server = MockServer::start().await;
    answer(&server, "smol", &proposal(), Some(1)).await;
    answer(
        &server,
        "smol",
        &json!({"answer": "Rome", "state": "answered"}).to_string(),
        None,
    )
    .await;
    let files = Files::new(&[("config.toml", &config(&server))]);
    let memory = files.path("conversation.json");
    for approve in ["ask", "ask"] {
        // No terminal: `ask` declines.
        let run = claij(
            &files,
            &[
                "ask",
                "Hello",
                "--llm",
                "mylocal:smol",
                "--interceptors",
                "proposals",
                "--approve",
                approve,
                "--memory",
                &memory,
            ],
        );
        assert_eq!(run.code, 0, "{}", run.stderr);
    }
    let asked = bodies(&server, "smol").await;
    let system = asked[1]["messages"].to_string();
    assert!(
        system.contains("- `confidence-v1`: no terminal to ask, so declined"),
        "{system}"
    );
    let audit = claij(&files, &["schema", "audit", &memory]);
    assert!(
        audit.stdout.contains("confidence-v1  declined"),
        "{}",
        audit.stdout
    );
    assert!(audit.stdout.ends_with("active: none\n"), "{}", audit.stdout);
}

#[test]
fn vote_needs_voters_and_voters_need_a_vote() {
    // Nothing is asked: the flags are refused first.
    let nowhere =
        "[providers.mylocal]\nkind = \"openai-compatible\"\nbase_url = \"http://127.0.0.1:9/v1\"\n";
    let files = Files::new(&[("config.toml", nowhere)]);
    let run = claij(
        &files,
        &[
            "ask",
            "Hi",
            "--llm",
            "mylocal:smol",
            "--interceptors",
            "proposals",
            "--approve",
            "vote",
        ],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("--approve vote needs voters"),
        "{}",
        run.stderr
    );
    let run = claij(
        &files,
        &[
            "ask",
            "Hi",
            "--llm",
            "mylocal:smol",
            "--interceptors",
            "proposals",
            "--voters",
            "local",
        ],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("--voters is for --approve vote"),
        "{}",
        run.stderr
    );
}

/// `draft` -> `polish` -> `end`, both `llm` states.
const TWO_STEPS: &str = r#"{
  "id": "two-steps",
  "states": [
    {"id": "draft", "action": "llm"},
    {"id": "polish", "action": "llm"},
    {"id": "end", "action": "end"}
  ],
  "transitions": [
    {"id": ["start", "draft"], "schema": {"type": "object"}},
    {"id": ["draft", "polish"], "schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
    {"id": ["polish", "end"], "schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}
  ]
}"#;

#[tokio::test]
async fn a_state_of_an_fsm_run_proposes_the_next_state_follows_and_the_journal_keeps_it() {
    let server = MockServer::start().await;
    let draft = json!({"id": ["draft", "polish"], "text": "hello",
        "proposed_extension": {"extension_id": "confidence-v1", "reason": "to say how sure I am",
                               "delta": confidence()}});
    answer(&server, "smol", &draft.to_string(), Some(1)).await;
    let polish = json!({"id": ["polish", "end"], "text": "Hello.", "confidence": 0.7});
    answer(&server, "smol", &polish.to_string(), None).await;
    let files = Files::new(&[("config.toml", &config(&server)), ("two.json", TWO_STEPS)]);
    let journal = files.path("run.jsonl");
    let run = claij(
        &files,
        &[
            "fsm",
            "run",
            &files.path("two.json"),
            "--input",
            "{}",
            "--llm",
            "mylocal:smol",
            "--interceptors",
            "proposals",
            "--approve",
            "auto",
            "--journal",
            &journal,
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let asked = bodies(&server, "smol").await;
    assert_eq!(asked.len(), 2);
    assert!(
        !asked[0]["response_format"]
            .to_string()
            .contains("\"confidence\"")
    );
    assert!(
        asked[1]["response_format"]
            .to_string()
            .contains("\"confidence\"")
    );

    let audit = claij(&files, &["schema", "audit", &journal]);
    assert_eq!(audit.code, 0, "{}", audit.stderr);
    assert!(
        audit
            .stdout
            .contains("confidence-v1  activated  (proposed by mylocal:smol)"),
        "{}",
        audit.stdout
    );
    // What shaped each state's requests: the proposals interceptor's own delta in both, the
    // approved extension from the state after the approval on, each recorded once.
    let applied: Vec<&str> = audit
        .stdout
        .lines()
        .filter(|l| !l.starts_with(' '))
        .filter_map(|l| {
            l.strip_prefix("schema deltas applied to the requests of state ")
                .or_else(|| l.split_once("  ").map(|(_, rest)| rest))
        })
        .take_while(|l| !l.starts_with("confidence-v1  activated"))
        .collect();
    assert_eq!(
        applied,
        [
            "`draft`:",
            "proposals-v1  applied  (added by proposals)",
            "`polish`:",
            "proposals-v1  applied  (added by proposals)",
            "confidence-v1  applied  (added by proposals)",
        ],
        "{}",
        audit.stdout
    );
    assert!(
        audit
            .stdout
            .contains("applied to the last request: proposals-v1, confidence-v1\n"),
        "{}",
        audit.stdout
    );
    let rollback = claij(&files, &["schema", "rollback", &journal, "confidence-v1"]);
    assert_eq!(rollback.code, 0, "{}", rollback.stderr);
    let audit = claij(&files, &["schema", "audit", &journal]);
    assert!(
        audit.stdout.contains("confidence-v1  rolled back"),
        "{}",
        audit.stdout
    );
    assert!(audit.stdout.ends_with("active: none\n"), "{}", audit.stdout);
}

#[tokio::test]
async fn chat_turns_share_the_registry_an_approval_joins() {
    let server = MockServer::start().await;
    answer(&server, "smol", &proposal(), Some(1)).await;
    let rome = json!({"answer": "Rome", "state": "answered", "confidence": 0.8});
    answer(&server, "smol", &rome.to_string(), None).await;
    let files = Files::new(&[("config.toml", &config(&server))]);
    let config = files.path("config.toml");
    let cache = files.path("cache");
    let run = claij_env(
        &[
            "chat",
            "--llm",
            "mylocal:smol",
            "--interceptors",
            "proposals",
            "--approve",
            "auto",
        ],
        "Capital of France?\nCapital of Italy?\n/quit\n",
        &[
            ("CLAIJ_CONFIG", Some(config.as_str())),
            ("XDG_CACHE_HOME", Some(cache.as_str())),
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let asked = bodies(&server, "smol").await;
    assert_eq!(asked.len(), 2, "{}", run.stderr);
    assert!(
        asked[1]["response_format"]
            .to_string()
            .contains("\"confidence\"")
    );
}

/// `claij ARGS` on a pseudo-terminal (python3's `pty`) that answers `answer` once `prompt` shows;
/// everything shown and the exit code.
pub(super) fn on_a_terminal_answering(
    args: &[&str],
    env: &[(&str, &str)],
    prompt: &str,
    answer: &str,
) -> (String, i32) {
    const DRIVER: &str = r#"
import os, pty, sys
prompt, answer = sys.argv[1].encode(), sys.argv[2].encode()
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[3], sys.argv[3:])
chunks, answered = [], False
while True:
    try:
        data = os.read(fd, 4096)
    except OSError:
        break
    if not data:
        break
    chunks.append(data)
    if not answered and prompt in b"".join(chunks):
        os.write(fd, answer)
        answered = True
_, status = os.waitpid(pid, 0)
sys.stdout.write(b"".join(chunks).decode("utf-8", "replace"))
sys.stdout.write("\nEXIT %d\n" % os.waitstatus_to_exitcode(status))
"#;
    let output = std::process::Command::new("python3")
        .args(["-c", DRIVER, prompt, answer, env!("CARGO_BIN_EXE_claij")])
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8_lossy(&output.stdout).replace("\r\n", "\n");
    let (text, code) = text.rsplit_once("\nEXIT ").unwrap();
    (text.to_owned(), code.trim().parse().unwrap())
}

#[tokio::test]
async fn approve_ask_shows_the_delta_on_a_terminal_and_takes_yes() {
    let server = MockServer::start().await;
    answer(&server, "smol", &proposal(), None).await;
    let files = Files::new(&[("config.toml", &config(&server))]);
    let (config, cache, memory) = (
        files.path("config.toml"),
        files.path("cache"),
        files.path("conversation.json"),
    );
    let (shown, code) = on_a_terminal_answering(
        &[
            "ask",
            "Capital of France?",
            "--llm",
            "mylocal:smol",
            "--interceptors",
            "proposals",
            "--memory",
            &memory,
        ],
        &[("CLAIJ_CONFIG", &config), ("XDG_CACHE_HOME", &cache)],
        "Accept? [y/N]",
        "y\n",
    );
    assert_eq!(code, 0, "{shown}");
    assert!(
        shown.contains(
            "The model proposes the schema extension `confidence-v1`: to say how sure I am"
        ),
        "{shown}"
    );
    assert!(
        shown.contains("\"confidence\": {"),
        "the delta is shown: {shown}"
    );
    let saved = file(&files, "conversation.json");
    assert_eq!(
        saved["extensions"]["active"][0]["extension_id"],
        "confidence-v1"
    );
}

#[tokio::test]
async fn the_configurations_voters_vote_when_the_flags_name_none() {
    let server = MockServer::start().await;
    answer(&server, "smol", &proposal(), None).await;
    answer(&server, "voter-a", &ballot(false, "not needed"), None).await;
    let config = format!(
        "{}\n[proposals]\nvoters = [\"mylocal:voter-a\"]\n",
        config(&server)
    );
    let files = Files::new(&[("config.toml", &config)]);
    let run = claij(
        &files,
        &[
            "ask",
            "Hi",
            "--llm",
            "mylocal:smol",
            "--interceptors",
            "proposals",
            "--approve",
            "vote",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("vote on the schema extension `confidence-v1`: 0 for, 1 against: rejected"),
        "{}",
        run.stderr
    );
    assert_eq!(bodies(&server, "voter-a").await.len(), 1);
}

/// `draft` (llm) -> `review` (a person) -> `polish` (llm) -> `end`.
const WITH_REVIEW: &str = r#"{
  "id": "with-review",
  "states": [
    {"id": "draft", "action": "llm"},
    {"id": "review", "action": "human"},
    {"id": "polish", "action": "llm"},
    {"id": "end", "action": "end"}
  ],
  "transitions": [
    {"id": ["start", "draft"], "schema": {"type": "object"}},
    {"id": ["draft", "review"], "schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
    {"id": ["review", "polish"], "schema": {"type": "object"}},
    {"id": ["polish", "end"], "schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}
  ]
}"#;

#[tokio::test]
async fn fsm_resume_restores_the_extensions_from_the_journal() {
    let server = MockServer::start().await;
    let draft = json!({"id": ["draft", "review"], "text": "hello",
        "proposed_extension": {"extension_id": "confidence-v1", "reason": "to say how sure I am",
                               "delta": confidence()}});
    answer(&server, "smol", &draft.to_string(), Some(1)).await;
    let polish = json!({"id": ["polish", "end"], "text": "Hello.", "confidence": 0.7});
    answer(&server, "smol", &polish.to_string(), None).await;
    let files = Files::new(&[
        ("config.toml", &config(&server)),
        ("flow.json", WITH_REVIEW),
    ]);
    let journal = files.path("run.jsonl");
    let flags = [
        "--llm",
        "mylocal:smol",
        "--interceptors",
        "proposals",
        "--approve",
        "auto",
    ];
    let mut args = vec!["fsm", "run", "--input", "{}", "--journal", &journal];
    let flow = files.path("flow.json");
    args.insert(2, &flow);
    args.extend_from_slice(&flags);
    // No input on stdin: the run waits in `review`, its extension in the journal.
    let waiting = claij(&files, &args);
    assert_eq!(waiting.code, 0, "{}", waiting.stderr);
    assert!(
        waiting
            .stderr
            .contains("waiting for input in state `review`"),
        "{}",
        waiting.stderr
    );

    // Another process goes on: the registry comes back from the journal.
    let config = files.path("config.toml");
    let cache = files.path("cache");
    let mut resume = vec!["fsm", "resume", &journal];
    resume.extend_from_slice(&flags);
    let done = claij_env(
        &resume,
        "{}\n",
        &[
            ("CLAIJ_CONFIG", Some(config.as_str())),
            ("XDG_CACHE_HOME", Some(cache.as_str())),
        ],
    );
    assert_eq!(done.code, 0, "{}", done.stderr);
    let asked = bodies(&server, "smol").await;
    assert_eq!(asked.len(), 2);
    assert!(
        !asked[0]["response_format"]
            .to_string()
            .contains("\"confidence\"")
    );
    assert!(
        asked[1]["response_format"]
            .to_string()
            .contains("\"confidence\"")
    );
}

/// start -> decide (the built-in `vote`, three voters) -> answer (an `llm` state) -> end, or
/// declined.
const VOTE_THEN_ANSWER: &str = r#"{
  "id": "vote-then-answer",
  "states": [
    {"id": "decide", "action": "fsm", "config": {"fsm": "vote", "trail": "full",
      "voters": ["mylocal:a", "mylocal:b", "mylocal:c"]}},
    {"id": "answer", "action": "llm"},
    {"id": "end", "action": "end"},
    {"id": "declined", "action": "end"}
  ],
  "transitions": [
    {"id": ["start", "decide"], "schema": {"type": "object"}},
    {"id": ["decide", "answer"], "schema": {"type": "object", "properties": {"activated": {"const": true}}, "required": ["activated"]}},
    {"id": ["decide", "declined"], "schema": {"type": "object", "properties": {"activated": {"const": false}}, "required": ["activated"]}},
    {"id": ["answer", "end"], "schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}
  ]
}"#;

/// The built-in `vote` of an `fsm` state activates into the run's one registry: the next `llm`
/// state's request carries the extension the voters approved, and `claij schema audit` of the
/// journal shows its activation with the ballots.
#[tokio::test]
async fn the_vote_state_activates_into_the_registry_the_next_state_asks_with() {
    vote_then_answer(&["--interceptors", "proposals", "--approve", "never"]).await;
}

/// Without `--interceptors proposals` too: the states are not offered `proposed_extension`, but
/// the extension the vote approved joins their schema.
#[tokio::test]
async fn the_vote_state_extends_the_next_state_without_the_proposals_interceptor() {
    let format = vote_then_answer(&[]).await;
    assert!(!format.contains("proposed_extension"), "{format}");
}

/// Runs [`VOTE_THEN_ANSWER`] with `flags`, two of three voters approving; the `response_format`
/// of the `answer` state's request.
async fn vote_then_answer(flags: &[&str]) -> String {
    let server = MockServer::start().await;
    for (model, approve) in [("a", true), ("b", false), ("c", true)] {
        answer(
            &server,
            model,
            &ballot(approve, &format!("voter {model}")),
            None,
        )
        .await;
    }
    let done = json!({"id": ["answer", "end"], "text": "Hello.", "confidence": 0.7});
    answer(&server, "smol", &done.to_string(), None).await;
    let files = Files::new(&[
        ("config.toml", &config(&server)),
        ("flow.json", VOTE_THEN_ANSWER),
    ]);
    let journal = files.path("run.jsonl");
    let input = json!({"extension_id": "confidence-v1", "reason": "to say how sure",
                       "delta": confidence()})
    .to_string();
    let flow = files.path("flow.json");
    let mut args = vec![
        "fsm",
        "run",
        &flow,
        "--input",
        &input,
        "--llm",
        "mylocal:smol",
        "--journal",
        &journal,
    ];
    args.extend_from_slice(flags);
    let run = claij(&files, &args);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let asked = bodies(&server, "smol").await;
    assert_eq!(asked.len(), 1);
    let format = asked[0]["response_format"].to_string();
    assert!(format.contains("\"confidence\""), "{format}");

    let audit = claij(&files, &["schema", "audit", &journal]);
    assert_eq!(audit.code, 0, "{}", audit.stderr);
    for line in [
        "confidence-v1  activated  (proposed by vote)",
        "    mylocal:a approves: voter a",
        "    mylocal:b rejects: voter b",
        "    mylocal:c approves: voter c",
    ] {
        assert!(audit.stdout.contains(line), "{line}: {}", audit.stdout);
    }
    assert!(
        audit.stdout.ends_with("active: confidence-v1\n"),
        "{}",
        audit.stdout
    );
    format
}

/// Voted down in the vote state, the proposal is declined in the run's audit log with its ballots,
/// and the run goes on to `declined`.
#[tokio::test]
async fn the_vote_state_records_a_proposal_voted_down_with_its_ballots() {
    let server = MockServer::start().await;
    for (model, approve) in [("a", true), ("b", false), ("c", false)] {
        answer(
            &server,
            model,
            &ballot(approve, &format!("voter {model}")),
            None,
        )
        .await;
    }
    let files = Files::new(&[
        ("config.toml", &config(&server)),
        ("flow.json", VOTE_THEN_ANSWER),
    ]);
    let journal = files.path("run.jsonl");
    let input = json!({"extension_id": "confidence-v1", "reason": "to say how sure",
                       "delta": confidence()})
    .to_string();
    let run = claij(
        &files,
        &[
            "fsm",
            "run",
            &files.path("flow.json"),
            "--input",
            &input,
            "--llm",
            "mylocal:smol",
            "--interceptors",
            "proposals",
            "--journal",
            &journal,
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("decide -> declined"), "{}", run.stderr);
    let audit = claij(&files, &["schema", "audit", &journal]);
    assert_eq!(audit.code, 0, "{}", audit.stderr);
    for line in [
        "confidence-v1  declined  (proposed by vote)",
        "    reason: voted down: 1 for, 2 against",
        "    mylocal:a approves: voter a",
        "    mylocal:c rejects: voter c",
    ] {
        assert!(audit.stdout.contains(line), "{line}: {}", audit.stdout);
    }
    assert!(audit.stdout.ends_with("active: none\n"), "{}", audit.stdout);
}

/// A run whose extension was approved and that then waits (here: it has been given the person's
/// input and is stuck in the next model call) has the extensions in its journal already: killed
/// there, it resumes with them (with or without `--interceptors proposals`).
#[tokio::test]
async fn a_run_killed_after_an_approval_keeps_it_in_the_journal() {
    use std::process::{Command, Stdio};

    let server = MockServer::start().await;
    let draft = json!({"id": ["draft", "review"], "text": "hello",
        "proposed_extension": {"extension_id": "confidence-v1", "reason": "to say how sure I am",
                               "delta": confidence()}});
    answer(&server, "smol", &draft.to_string(), Some(1)).await;
    // The first ask of `polish` never ends: the process is killed while it waits for it.
    Mock::given(method("POST"))
        .and(path(CHAT))
        .and(body_partial_json(json!({"model": "smol"})))
        .respond_with(reply("{}").set_delay(std::time::Duration::from_secs(3600)))
        .up_to_n_times(1)
        .with_priority(2)
        .mount(&server)
        .await;
    let polish = json!({"id": ["polish", "end"], "text": "Hello.", "confidence": 0.7});
    answer(&server, "smol", &polish.to_string(), None).await;
    let files = Files::new(&[
        ("config.toml", &config(&server)),
        ("flow.json", WITH_REVIEW),
    ]);
    let journal = files.path("run.jsonl");
    let flags = [
        "--llm",
        "mylocal:smol",
        "--interceptors",
        "proposals",
        "--approve",
        "auto",
    ];
    let mut child = Command::new(env!("CARGO_BIN_EXE_claij"))
        .args(["fsm", "run", &files.path("flow.json"), "--input", "{}"])
        .args(["--journal", &journal])
        .args(flags)
        .env("CLAIJ_CONFIG", files.path("config.toml"))
        .env("XDG_CACHE_HOME", files.path("cache"))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    {
        use std::io::Write as _;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"{}\n").unwrap();
    }
    // Wait for `polish` to be asked (a bound, not a timing assertion: a loaded machine is slow).
    for _ in 0..6000 {
        if bodies(&server, "smol").await.len() == 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(
        bodies(&server, "smol").await.len(),
        2,
        "polish was never asked"
    );
    child.kill().unwrap();
    child.wait().unwrap();

    let extensions: Vec<Value> = std::fs::read_to_string(&journal)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["kind"] == "extensions")
        .collect();
    assert_eq!(
        extensions.len(),
        1,
        "the approval is journaled before the wait"
    );
    assert_eq!(
        extensions[0]["registry"]["extensions"][0]["extension_id"],
        "confidence-v1"
    );

    // Resumed without `--interceptors proposals`, the run's states still follow its extensions.
    let done = claij(
        &files,
        &["fsm", "resume", &journal, "--llm", "mylocal:smol"],
    );
    assert_eq!(done.code, 0, "{}", done.stderr);
    let asked = bodies(&server, "smol").await;
    assert_eq!(asked.len(), 3);
    let format = asked[2]["response_format"].to_string();
    assert!(format.contains("\"confidence\""), "{format}");
    assert!(!format.contains("proposed_extension"), "{format}");
}

/// One `llm` state that may bail out into `failed`.
const ONE_QUESTION_BAILING: &str = r#"{
  "id": "one-question",
  "states": [{"id": "ask", "action": "llm"}, {"id": "end", "action": "end"}, {"id": "failed", "action": "end"}],
  "transitions": [
    {"id": ["start", "ask"], "schema": {"type": "object"}},
    {"id": ["ask", "end"], "schema": {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}},
    {"id": ["ask", "failed"], "schema": {"type": "object", "properties": {"error": {"type": "string"}, "bail_out": {"const": true}}, "required": ["error", "bail_out"]}}
  ]
}"#;

/// A schema remedy of meta-debugging (its delta) goes through the run's `--approve`: activated,
/// journaled, and in `claij schema audit` as proposed by `meta-debug`.
#[tokio::test]
async fn a_meta_debug_schema_remedy_goes_to_the_approver() {
    use wiremock::matchers::body_string_contains;

    let server = MockServer::start().await;
    answer(&server, "small", r#"{"reply": "4"}"#, None).await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .and(body_partial_json(json!({"model": "big"})))
        .and(body_string_contains("Analyze why"))
        .respond_with(reply(r#"{"analysis": "it calls the field reply"}"#))
        .expect(1)
        .mount(&server)
        .await;
    let fix = json!({"fix_kind": "schema", "suggestion": "Let it reply with `reply`.",
                     "delta": {"properties": {"reply": {"type": "string"}}}});
    Mock::given(method("POST"))
        .and(path(CHAT))
        .and(body_partial_json(json!({"model": "big"})))
        .and(body_string_contains("Suggest one fix"))
        .respond_with(reply(&fix.to_string()))
        .expect(1)
        .mount(&server)
        .await;
    let files = Files::new(&[
        ("config.toml", &config(&server)),
        ("one.json", ONE_QUESTION_BAILING),
    ]);
    let journal = files.path("run.jsonl");
    let run = claij(
        &files,
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
            "--meta-debug=mylocal:big",
            "--interceptors",
            "proposals",
            "--approve",
            "auto",
            "--journal",
            &journal,
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let trail: Value = serde_json::from_str(&run.stdout).unwrap();
    let last = trail.as_array().unwrap().last().unwrap();
    assert_eq!(last["to"], "failed", "{}", run.stdout);
    assert!(
        run.stderr.contains(
            "meta-debugging of `ask` proposes the schema extension `meta-debug-ask-v1`: activated"
        ),
        "{}",
        run.stderr
    );
    let audit = claij(&files, &["schema", "audit", &journal]);
    assert_eq!(audit.code, 0, "{}", audit.stderr);
    assert!(
        audit
            .stdout
            .contains("meta-debug-ask-v1  activated  (proposed by meta-debug)"),
        "{}",
        audit.stdout
    );
    assert!(
        audit
            .stdout
            .contains(r#"delta: {"properties":{"reply":{"type":"string"}}}"#),
        "{}",
        audit.stdout
    );
}

/// An approval journaled right after the transition whose reply made it, with no stop in between:
/// the next state's model call never returns, the process is killed there, and the resumed run's
/// states ask with the extension.
#[tokio::test]
async fn a_run_killed_mid_flight_after_an_approval_keeps_it_in_the_journal() {
    use std::process::{Command, Stdio};

    let server = MockServer::start().await;
    let draft = json!({"id": ["draft", "polish"], "text": "hello",
        "proposed_extension": {"extension_id": "confidence-v1", "reason": "to say how sure I am",
                               "delta": confidence()}});
    answer(&server, "smol", &draft.to_string(), Some(1)).await;
    // The first ask of `polish` never ends: the process is killed while it waits for it.
    Mock::given(method("POST"))
        .and(path(CHAT))
        .and(body_partial_json(json!({"model": "smol"})))
        .respond_with(reply("{}").set_delay(std::time::Duration::from_secs(3600)))
        .up_to_n_times(1)
        .with_priority(2)
        .mount(&server)
        .await;
    let polish = json!({"id": ["polish", "end"], "text": "Hello.", "confidence": 0.7});
    answer(&server, "smol", &polish.to_string(), None).await;
    let files = Files::new(&[("config.toml", &config(&server)), ("two.json", TWO_STEPS)]);
    let journal = files.path("run.jsonl");
    let mut child = Command::new(env!("CARGO_BIN_EXE_claij"))
        .args(["fsm", "run", &files.path("two.json"), "--input", "{}"])
        .args(["--journal", &journal, "--llm", "mylocal:smol"])
        .args(["--interceptors", "proposals", "--approve", "auto"])
        .env("CLAIJ_CONFIG", files.path("config.toml"))
        .env("XDG_CACHE_HOME", files.path("cache"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait for `polish` to be asked (a bound, not a timing assertion: a loaded machine is slow).
    for _ in 0..6000 {
        if bodies(&server, "smol").await.len() == 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(
        bodies(&server, "smol").await.len(),
        2,
        "polish was never asked"
    );
    child.kill().unwrap();
    child.wait().unwrap();

    let lines: Vec<Value> = std::fs::read_to_string(&journal)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .collect();
    let kinds: Vec<&str> = lines.iter().map(|l| l["kind"].as_str().unwrap()).collect();
    // Right after the transition out of the state that proposed (and the deltas its request
    // was composed of).
    assert_eq!(
        kinds,
        ["run", "transition", "transition", "applied", "extensions"]
    );
    assert_eq!(lines[3]["state"], "draft");
    assert_eq!(
        lines[4]["registry"]["extensions"][0]["extension_id"],
        "confidence-v1"
    );

    let done = claij(
        &files,
        &["fsm", "resume", &journal, "--llm", "mylocal:smol"],
    );
    assert_eq!(done.code, 0, "{}", done.stderr);
    let asked = bodies(&server, "smol").await;
    assert_eq!(asked.len(), 3);
    let format = asked[2]["response_format"].to_string();
    assert!(format.contains("\"confidence\""), "{format}");
    // Each state's deltas journaled once: the resumed run went on from what `draft` recorded.
    let applied: Vec<String> = std::fs::read_to_string(&journal)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["kind"] == "applied")
        .map(|l| l["state"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(applied, ["draft", "polish"]);
}

/// The diagnostic model `big` finds the schema remedy that gives `ask` a required `unit`.
async fn diagnose_unit(server: &MockServer) {
    use wiremock::matchers::body_string_contains;

    Mock::given(method("POST"))
        .and(path(CHAT))
        .and(body_partial_json(json!({"model": "big"})))
        .and(body_string_contains("Analyze why"))
        .respond_with(reply(r#"{"analysis": "it insists on a unit"}"#))
        .expect(1)
        .mount(server)
        .await;
    let fix = json!({"fix_kind": "schema", "suggestion": "Give it a `unit`.",
                     "delta": {"properties": {"unit": {"type": "string",
                               "description": "the answer's unit"}}, "required": ["unit"]}});
    Mock::given(method("POST"))
        .and(path(CHAT))
        .and(body_partial_json(json!({"model": "big"})))
        .and(body_string_contains("Suggest one fix"))
        .respond_with(reply(&fix.to_string()))
        .expect(1)
        .mount(server)
        .await;
}

/// `claij fsm run` of [`ONE_QUESTION_BAILING`] asking `small`, meta-debugged by `big`, `--approve WHO`.
fn run_meta_debugged(files: &Files, approve: &str) -> Run {
    claij(
        files,
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
            "--meta-debug=mylocal:big",
            "--interceptors",
            "proposals",
            "--approve",
            approve,
            "--journal",
            &files.path("run.jsonl"),
        ],
    )
}

/// The last transition of the meta-debug run of `ask` in a printed trail.
fn last_meta_debug_entry(trail: &Value) -> &Value {
    trail
        .as_array()
        .unwrap()
        .iter()
        .rfind(|e| {
            e["from"]
                .as_str()
                .is_some_and(|f| f.starts_with("ask/meta-debug/"))
        })
        .unwrap()
}

/// The journal's `remedy` lines.
fn remedy_lines(files: &Files) -> Vec<Value> {
    std::fs::read_to_string(files.path("run.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["kind"] == "remedy")
        .collect()
}

/// A schema remedy approved when it is diagnosed is tried at once: `ask` is asked again with the
/// extended schema, its reply with the unit goes on to `end`, and the journal's remedy says it
/// validated.
#[tokio::test]
async fn an_approved_meta_debug_schema_remedy_is_tried_and_the_run_goes_on() {
    use wiremock::matchers::body_string_contains;

    let server = MockServer::start().await;
    answer(
        &server,
        "small",
        r#"{"reply": "4", "unit": "apples"}"#,
        None,
    )
    .await;
    // Asked with the extension, it answers.
    Mock::given(method("POST"))
        .and(path(CHAT))
        .and(body_partial_json(json!({"model": "small"})))
        .and(body_string_contains("the answer's unit"))
        .respond_with(reply(
            &json!({"id": ["ask", "end"], "answer": "4", "unit": "apples"}).to_string(),
        ))
        .with_priority(1)
        .expect(1)
        .mount(&server)
        .await;
    diagnose_unit(&server).await;
    let files = Files::new(&[
        ("config.toml", &config(&server)),
        ("one.json", ONE_QUESTION_BAILING),
    ]);
    let run = run_meta_debugged(&files, "auto");
    assert_eq!(run.code, 0, "{}", run.stderr);
    let trail: Value = serde_json::from_str(&run.stdout).unwrap();
    let last = trail.as_array().unwrap().last().unwrap();
    assert_eq!(last["to"], "end", "{}", run.stdout);
    assert_eq!(last["event"]["unit"], "apples");
    // The model is told about the field in its prompt, whatever carries the schema.
    let small = bodies(&server, "small").await;
    assert_eq!(small.len(), 3);
    let system = |body: &Value| body["messages"][0]["content"].as_str().unwrap().to_owned();
    assert!(!system(&small[0]).contains("meta-debug-ask-v1"));
    let again = system(&small[2]);
    let section = &again[again.find("Schema extensions in force").unwrap()..];
    assert!(
        section.contains("meta-debug-ask-v1") && section.contains("unit: string"),
        "{again}"
    );
    // The meta-debug sub-trail ends as the remedy did.
    let verified = last_meta_debug_entry(&trail);
    assert_eq!(verified["to"], "ask/meta-debug/fixed", "{}", run.stdout);
    assert_eq!(verified["event"]["applied"], true);
    assert!(
        run.stderr.contains(
            "meta-debugging of `ask` proposes the schema extension `meta-debug-ask-v1`: activated"
        ),
        "{}",
        run.stderr
    );
    let remedies = remedy_lines(&files);
    assert_eq!(remedies.len(), 1);
    assert_eq!(remedies[0]["remedy"]["fix_kind"], "schema");
    assert_eq!(remedies[0]["remedy"]["effect"], "validated");
    let audit = claij(&files, &["schema", "audit", &files.path("run.jsonl")]);
    assert!(
        audit
            .stdout
            .contains("meta-debug-ask-v1  activated  (proposed by meta-debug)"),
        "{}",
        audit.stdout
    );
}

/// A schema remedy the approver declines is not tried: `ask` bails out as before, and the
/// journal's remedy says it was declined.
#[tokio::test]
async fn a_declined_meta_debug_schema_remedy_is_recorded_and_the_state_bails_out() {
    let server = MockServer::start().await;
    answer(
        &server,
        "small",
        r#"{"reply": "4", "unit": "apples"}"#,
        None,
    )
    .await;
    diagnose_unit(&server).await;
    let files = Files::new(&[
        ("config.toml", &config(&server)),
        ("one.json", ONE_QUESTION_BAILING),
    ]);
    let run = run_meta_debugged(&files, "never");
    assert_eq!(run.code, 0, "{}", run.stderr);
    let trail: Value = serde_json::from_str(&run.stdout).unwrap();
    let last = trail.as_array().unwrap().last().unwrap();
    assert_eq!(last["to"], "failed", "{}", run.stdout);
    assert_eq!(bodies(&server, "small").await.len(), 2, "not asked again");
    let declined = last_meta_debug_entry(&trail);
    assert_eq!(
        (&declined["from"], &declined["to"]),
        (
            &json!("ask/meta-debug/verify"),
            &json!("ask/meta-debug/unfixed")
        ),
        "{}",
        run.stdout
    );
    assert_eq!(declined["event"]["applied"], false);
    let remedies = remedy_lines(&files);
    assert_eq!(remedies.len(), 1);
    assert_eq!(remedies[0]["remedy"]["effect"], "declined");
    let audit = claij(&files, &["schema", "audit", &files.path("run.jsonl")]);
    assert!(
        audit.stdout.contains("meta-debug-ask-v1  declined"),
        "{}",
        audit.stdout
    );
}

/// One `llm` state with no bail-out.
const ONE_QUESTION: &str = r#"{
  "id": "one-question",
  "states": [{"id": "ask", "action": "llm"}, {"id": "end", "action": "end"}],
  "transitions": [
    {"id": ["start", "ask"], "schema": {"type": "object"}},
    {"id": ["ask", "end"], "schema": {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}}
  ]
}"#;

/// A state with no bail-out is still meta-debugged: the remedy (approved, tried, still invalid)
/// and the extension it added are journaled before the run fails with its error.
#[tokio::test]
async fn a_failure_with_no_bail_out_journals_its_remedy_before_the_error() {
    let server = MockServer::start().await;
    answer(&server, "small", r#"{"reply": "4"}"#, None).await;
    diagnose_unit(&server).await;
    let files = Files::new(&[
        ("config.toml", &config(&server)),
        ("one.json", ONE_QUESTION),
    ]);
    let run = claij(
        &files,
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
            "--meta-debug=mylocal:big",
            "--interceptors",
            "proposals",
            "--approve",
            "auto",
            "--journal",
            &files.path("run.jsonl"),
        ],
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("error: "), "{}", run.stderr);
    // Two failed attempts, then two more with the approved remedy.
    assert_eq!(bodies(&server, "small").await.len(), 4);
    let lines: Vec<Value> = std::fs::read_to_string(files.path("run.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .collect();
    let kinds: Vec<&str> = lines.iter().map(|l| l["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["run", "transition", "remedy", "extensions"]);
    assert_eq!(lines[2]["remedy"]["effect"], "invalid");
    assert_eq!(
        lines[3]["registry"]["extensions"][0]["extension_id"],
        "meta-debug-ask-v1"
    );
}
