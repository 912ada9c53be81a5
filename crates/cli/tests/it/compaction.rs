//! Compaction from the command line: a conversation whose ten approved extensions (several saying
//! the same thing again) render past `--compact-budget` is compacted before the turn with
//! `--approve auto`; `claij schema audit` shows it; `claij schema rollback FILE compaction-1`
//! brings back the schema exactly as it was; declined (`--approve never`), nothing changes; the
//! flag needs `--interceptors proposals`. Models mocked on the OpenAI-compatible wire.

use serde_json::{Value, json};
use wiremock::MockServer;
use wiremock::matchers::{method, path};

use super::openrouter::reply;
use super::proposals::claij;
use super::{Files, Run};

/// Ten approved extensions, as `claij ask --interceptors proposals` saves them.
fn session() -> String {
    let address = json!({"type": "object", "required": ["street", "city"], "properties": {
        "street": {"type": "string"}, "city": {"type": "string"},
        "country": {"type": "string", "pattern": "^[A-Z]{2}$"}}});
    let active: Vec<Value> = [
        (
            "notes-a",
            json!({"notes": {"type": "string", "description": "Notes"}}),
        ),
        (
            "notes-b",
            json!({"notes": {"type": "string", "description": "Follow-ups"}}),
        ),
        (
            "mood-v1",
            json!({"mood": {"enum": ["calm", "tense", "angry"]}}),
        ),
        (
            "mood-v2",
            json!({"mood": {"type": "string", "enum": ["calm", "tense"]}}),
        ),
        ("home-v1", json!({"home": address.clone()})),
        ("work-v1", json!({"work": address.clone()})),
        ("ship-v1", json!({"ship_to": address})),
        (
            "score-v1",
            json!({"score": {"type": "integer", "minimum": 0}}),
        ),
        (
            "score-v2",
            json!({"score": {"type": "integer", "maximum": 10}}),
        ),
        (
            "tags-v1",
            json!({"tags": {"type": "array", "description": "Tags"}}),
        ),
    ]
    .into_iter()
    .map(|(id, properties)| {
        json!({"extension_id": id, "added_by": "mylocal:smol", "added_at": "2026-01-01T00:00:00Z",
            "delta": {"properties": properties}})
    })
    .collect();
    json!({"version": 3, "extensions": {"active": active, "audit": []}}).to_string()
}

async fn setup() -> (MockServer, Files) {
    let server = MockServer::start().await;
    wiremock::Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(reply(r#"{"answer": "ok", "state": "answered"}"#))
        .mount(&server)
        .await;
    let config = format!(
        "[providers.mylocal]\nkind = \"openai-compatible\"\nbase_url = \"{}/v1\"\n",
        server.uri()
    );
    let files = Files::new(&[("config.toml", &config), ("s.json", &session())]);
    (server, files)
}

fn ask(files: &Files, approve: &str, budget: &str) -> Run {
    let session = files.path("s.json");
    claij(
        files,
        &[
            "ask",
            "Hello",
            "--llm",
            "mylocal:smol",
            "--interceptors",
            "proposals",
            "--approve",
            approve,
            "--compact-budget",
            budget,
            "--session",
            &session,
            "--mode",
            "prompted",
        ],
    )
}

/// The schema the last request carried.
async fn last_system(server: &MockServer) -> String {
    let requests = server.received_requests().await.unwrap();
    let body: Value = serde_json::from_slice(&requests.last().unwrap().body).unwrap();
    let messages = body["messages"].as_array().unwrap();
    let system = messages.iter().find(|m| m["role"] == "system").unwrap();
    system["content"].as_str().unwrap().to_owned()
}

fn active(files: &Files) -> Value {
    let text = std::fs::read_to_string(files.path("s.json")).unwrap();
    serde_json::from_str::<Value>(&text).unwrap()["extensions"]["active"].clone()
}

#[tokio::test]
async fn past_the_budget_auto_compacts_the_audit_shows_it_and_rollback_restores_it() {
    let (server, files) = setup().await;
    let session = files.path("s.json");
    let before = active(&files);
    // A budget nothing crosses: the ten deltas as they are.
    let run = ask(&files, "auto", "100000");
    assert_eq!(run.code, 0, "{}", run.stderr);
    let uncompacted = last_system(&server).await;
    assert!(
        uncompacted.contains("score?: integer & integer"),
        "{uncompacted}"
    );

    let run = ask(&files, "auto", "50");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("past [proposals] compact_budget = 50: compaction-1: "),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("(o200k_base), replacing notes-a, notes-b"),
        "{}",
        run.stderr
    );
    let compacted = last_system(&server).await;
    assert!(!compacted.contains("integer & integer"), "{compacted}");
    assert!(compacted.len() < uncompacted.len());
    assert_eq!(active(&files)[0]["extension_id"], "compaction-1");

    let audit = claij(&files, &["schema", "audit", &session]);
    assert_eq!(audit.code, 0, "{}", audit.stderr);
    assert!(
        audit
            .stdout
            .contains("compaction-1  activated  (proposed by claij compact)"),
        "{}",
        audit.stdout
    );
    assert!(
        audit
            .stdout
            .contains("    reason: Compacts the response schema from "),
        "{}",
        audit.stdout
    );
    assert!(
        audit.stdout.ends_with("active: compaction-1\n"),
        "{}",
        audit.stdout
    );

    let rollback = claij(&files, &["schema", "rollback", &session, "compaction-1"]);
    assert_eq!(rollback.code, 0, "{}", rollback.stderr);
    assert_eq!(active(&files), before);
    let audit = claij(&files, &["schema", "audit", &session]);
    assert!(
        audit
            .stdout
            .contains("compaction-1  rolled back  (removed by claij schema rollback)"),
        "{}",
        audit.stdout
    );
    // The next turn carries the ten deltas again, exactly as before.
    let run = ask(&files, "auto", "100000");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(last_system(&server).await, uncompacted);
}

#[tokio::test]
async fn declined_nothing_changes_and_the_flag_needs_proposals() {
    let (server, files) = setup().await;
    let before = active(&files);
    let run = ask(&files, "never", "50");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("compaction-1: "), "{}", run.stderr);
    assert!(
        run.stderr
            .contains(": declined: schema extensions are declined here (--approve never)"),
        "{}",
        run.stderr
    );
    assert_eq!(active(&files), before);
    assert!(
        last_system(&server)
            .await
            .contains("score?: integer & integer")
    );
    let audit = claij(&files, &["schema", "audit", &files.path("s.json")]);
    assert!(
        audit.stdout.contains("compaction-1  declined"),
        "{}",
        audit.stdout
    );

    let session = files.path("s.json");
    let run = claij(
        &files,
        &[
            "ask",
            "Hello",
            "--llm",
            "mylocal:smol",
            "--compact-budget",
            "50",
            "--session",
            &session,
        ],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("--compact-budget is when the approved schema extensions are compacted: add --interceptors proposals"), "{}", run.stderr);
    let run = ask(&files, "auto", "lots");
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("expected a number of tokens above 0, or \"off\""),
        "{}",
        run.stderr
    );
}

/// `claij schema cost --session FILE`'s schemas (each total and delta).
fn cost(files: &Files) -> Value {
    let run = claij(
        files,
        &[
            "schema",
            "cost",
            "--session",
            &files.path("s.json"),
            "--json",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    serde_json::from_str::<Value>(&run.stdout).unwrap()["schemas"].clone()
}

#[tokio::test]
async fn cost_after_a_rollback_is_what_the_next_turn_carries() {
    let (_server, files) = setup().await;
    let session = files.path("s.json");
    let run = ask(&files, "auto", "100000");
    assert_eq!(run.code, 0, "{}", run.stderr);
    let uncompacted = cost(&files);
    let run = ask(&files, "auto", "50");
    assert_eq!(run.code, 0, "{}", run.stderr);
    let compacted = cost(&files);
    assert!(
        compacted[0]["total"].as_u64() < uncompacted[0]["total"].as_u64(),
        "{compacted} {uncompacted}"
    );
    let rollback = claij(&files, &["schema", "rollback", &session, "compaction-1"]);
    assert_eq!(rollback.code, 0, "{}", rollback.stderr);
    // The last request carried compaction-1; the next carries the ten again, and cost says so.
    let rolled_back = cost(&files);
    let run = ask(&files, "auto", "100000");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(rolled_back, cost(&files));
    assert_eq!(rolled_back, uncompacted);
}

#[tokio::test]
async fn approve_ask_is_asked_about_a_compaction_by_claij_not_a_model() {
    let (_server, files) = setup().await;
    let (config, cache, session) = (
        files.path("config.toml"),
        files.path("cache"),
        files.path("s.json"),
    );
    let (shown, code) = super::proposals::on_a_terminal_answering(
        &[
            "ask",
            "Hello",
            "--llm",
            "mylocal:smol",
            "--interceptors",
            "proposals",
            "--compact-budget",
            "50",
            "--session",
            &session,
            "--mode",
            "prompted",
            "--no-stream",
        ],
        &[("CLAIJ_CONFIG", &config), ("XDG_CACHE_HOME", &cache)],
        "Accept? [y/N]",
        "y\n",
    );
    assert_eq!(code, 0, "{shown}");
    assert!(
        shown.contains(
            "claij proposes compacting the schema's 10 extension(s) (notes-a, notes-b, mood-v1, \
             mood-v2, home-v1, work-v1, ship-v1, score-v1, score-v2, tags-v1) into `compaction-1`: "
        ),
        "{shown}"
    );
    assert!(
        shown.contains(
            " tokens (o200k_base) of its prompt rendering; every reply valid before stays valid"
        ),
        "{shown}"
    );
    assert!(shown.contains("\n  - "), "each rewrite is listed: {shown}");
    assert!(!shown.contains("The model proposes"), "{shown}");
    assert_eq!(active(&files)[0]["extension_id"], "compaction-1");
}

#[tokio::test]
async fn schema_compact_on_demand_dry_run_audit_cost_and_rollback() {
    let (_server, files) = setup().await;
    let session = files.path("s.json");
    let run = ask(&files, "auto", "100000");
    assert_eq!(run.code, 0, "{}", run.stderr);
    let before = active(&files);
    let text = std::fs::read_to_string(&session).unwrap();

    let dry = claij(&files, &["schema", "compact", &session, "--dry-run"]);
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    assert!(
        dry.stdout.starts_with("compaction-1: ")
            && dry
                .stdout
                .contains("(o200k_base), replacing notes-a, notes-b")
            && dry.stdout.contains(": not applied (--dry-run)\n  "),
        "{}",
        dry.stdout
    );
    assert_eq!(std::fs::read_to_string(&session).unwrap(), text);

    let never = claij(
        &files,
        &["schema", "compact", &session, "--approve", "never"],
    );
    assert_eq!(never.code, 0, "{}", never.stderr);
    assert!(
        never
            .stdout
            .contains(": declined: compactions are declined here (--approve never)"),
        "{}",
        never.stdout
    );
    assert_eq!(active(&files), before);

    let run = claij(&files, &["schema", "compact", &session, "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["decision"], json!({"decision": "approve"}));
    let id = report["extension_id"].as_str().unwrap();
    assert_eq!(report["replaced"].as_array().unwrap().len(), 10);
    assert!(report["tokens"]["after"].as_u64() < report["tokens"]["before"].as_u64());
    assert_eq!(active(&files)[0]["extension_id"], id);
    assert_eq!(active(&files).as_array().unwrap().len(), 1);
    let audit = claij(&files, &["schema", "audit", &session]);
    assert!(
        audit
            .stdout
            .contains(&format!("{id}  activated  (proposed by claij compact)")),
        "{}",
        audit.stdout
    );
    // Before the next turn, cost already counts the compaction, as the next request carries it.
    let compacted = cost(&files);
    let run = ask(&files, "auto", "100000");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(compacted, cost(&files));

    let rollback = claij(&files, &["schema", "rollback", &session, id]);
    assert_eq!(rollback.code, 0, "{}", rollback.stderr);
    assert_eq!(active(&files), before);
}

#[test]
fn schema_compact_refuses_ask_without_a_terminal_vote_and_a_run_without_extensions() {
    let header =
        r#"{"kind": "run", "run_id": "r1", "fsm": "m", "started_at": "2026-12-07T09:00:00Z"}"#;
    let files = Files::new(&[
        ("run.jsonl", &format!("{header}\n")),
        ("s.json", &session()),
    ]);
    let run = claij(&files, &["schema", "compact", &files.path("run.jsonl")]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(
        run.stderr.trim_end(),
        format!(
            "error: {}: the run has no schema extensions",
            files.path("run.jsonl")
        )
    );
    // Without a terminal nobody can be asked: refused before anything is read or changed.
    let session = files.path("s.json");
    let text = std::fs::read(&session).unwrap();
    let run = claij(&files, &["schema", "compact", &session, "--approve", "ask"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(
        run.stderr.trim_end(),
        "error: --approve ask asks the person at the terminal, and there is none (stdin and \
         stderr are not both terminals): --approve auto or never decide without one"
    );
    assert_eq!(std::fs::read(&session).unwrap(), text);
    let run = claij(
        &files,
        &["schema", "compact", &session, "--approve", "vote"],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("--approve vote is for a conversation's models (claij ask|chat"),
        "{}",
        run.stderr
    );
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert_eq!(std::fs::read(&session).unwrap(), text);
}

#[tokio::test]
async fn schema_compact_approve_ask_asks_the_person_at_the_terminal() {
    let (_server, files) = setup().await;
    let (config, cache, session) = (
        files.path("config.toml"),
        files.path("cache"),
        files.path("s.json"),
    );
    let (shown, code) = super::proposals::on_a_terminal_answering(
        &["schema", "compact", &session, "--approve", "ask"],
        &[("CLAIJ_CONFIG", &config), ("XDG_CACHE_HOME", &cache)],
        "Accept? [y/N]",
        "y\n",
    );
    assert_eq!(code, 0, "{shown}");
    assert!(
        shown.contains(
            "claij proposes compacting the schema's 10 extension(s) (notes-a, notes-b, mood-v1, \
             mood-v2, home-v1, work-v1, ship-v1, score-v1, score-v2, tags-v1) into `compaction-1`: "
        ) && shown.contains("compaction-1: ")
            && shown.contains(": activated"),
        "{shown}"
    );
    assert_eq!(active(&files)[0]["extension_id"], "compaction-1");
    let audit = claij(&files, &["schema", "audit", &session]);
    assert!(
        audit
            .stdout
            .contains("compaction-1  activated  (proposed by claij compact)"),
        "{}",
        audit.stdout
    );
}

/// A run's journal: `schema compact` appends the compacted extensions, `schema audit` shows it,
/// `schema rollback` appends the ten again as they were.
#[test]
fn schema_compact_a_journal_audit_and_rollback() {
    let session: Value = serde_json::from_str(&session()).unwrap();
    let registry = json!({"base": {"type": "object"},
        "extensions": session["extensions"]["active"], "audit": []});
    let journal = format!(
        "{}\n{}\n",
        json!({"kind": "run", "run_id": "r1", "fsm": "m", "started_at": "2026-12-07T09:00:00Z"}),
        json!({"kind": "extensions", "registry": registry})
    );
    let files = Files::new(&[("run.jsonl", &journal)]);
    let file = files.path("run.jsonl");
    let last = || {
        let text = std::fs::read_to_string(&file).unwrap();
        let line = text
            .lines()
            .rev()
            .find(|l| l.contains("\"extensions\""))
            .unwrap();
        serde_json::from_str::<Value>(line).unwrap()["registry"]["extensions"].clone()
    };
    let before = last();
    let run = claij(&files, &["schema", "compact", &file]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.starts_with("compaction-1: ") && run.stdout.contains(": activated"),
        "{}",
        run.stdout
    );
    assert_eq!(last().as_array().unwrap().len(), 1);
    let audit = claij(&files, &["schema", "audit", &file]);
    assert!(
        audit
            .stdout
            .contains("compaction-1  activated  (proposed by claij compact)"),
        "{}",
        audit.stdout
    );
    let run = claij(&files, &["schema", "rollback", &file, "compaction-1"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(last(), before);
}
