//! `--memory-strategy` and the recall memory through the CLI, against a scripted model on a mock
//! OpenRouter: a fact given in turn 2 is recalled in turn 60 by meaning (the embedded sentence
//! model and store), not by a window of summaries; the flags and `[memory]` keys, their refusals,
//! and a session kept with one strategy reopened with another.

use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use super::openrouter::{self, CHAT};
use super::{Files, Run, assert_one_line_error, claij_env};

const KEY: &str = "sk-or-v1-recall-secret-0123456789";
/// The fact of turn 2, and the word the scripted model looks for in its prompt.
const FACT: &str = "My cat is called Miso.";
const HELD: &str = "Miso";
/// The question of the last turn.
const QUESTION: &str = "What is my cat called?";

/// Topics of the distracting turns: nothing about pets or names.
const TOPICS: [&str; 14] = [
    "the boiling point of water at high altitude",
    "how to repair a flat bicycle tyre",
    "the history of the printing press",
    "good stretches after a long run",
    "how compound interest grows savings",
    "the rules of chess castling",
    "planting tomatoes on a balcony",
    "why the sky looks blue during the day",
    "how a bill becomes law in parliament",
    "tips for learning to play the guitar",
    "the difference between weather and climate",
    "how to bake sourdough bread",
    "the tallest mountains in South America",
    "how electric cars recharge their batteries",
];

/// The user's message of turn `n` (1-based) of `turns`.
fn message(n: usize, turns: usize) -> String {
    match n {
        2 => FACT.to_owned(),
        _ if n == turns => QUESTION.to_owned(),
        _ => format!("Tell me about {} (question {n}).", TOPICS[n % TOPICS.len()]),
    }
}

/// A model that says in its answer whether its system prompt (where memories are shown) held the
/// fact, and whose summary notes what the user said.
struct Reporting(AtomicUsize);

impl Respond for Reporting {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        self.0.fetch_add(1, Ordering::SeqCst);
        let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let system: String = messages
            .iter()
            .filter(|m| m["role"] == "system")
            .filter_map(|m| m["content"].as_str())
            .collect();
        let user = messages
            .iter()
            .rev()
            .find(|m| m["role"] == "user")
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default();
        let (answer, summary) = if user.contains(FACT) {
            (
                "Noted.".to_owned(),
                "The user's cat is called Miso.".to_owned(),
            )
        } else if user.contains(QUESTION) {
            let held = if system.contains(HELD) {
                "held"
            } else {
                "missing"
            };
            (
                format!("prompt {held} the fact"),
                "The user asked what their cat is called.".to_owned(),
            )
        } else {
            let topic = user.trim_start_matches("Tell me about ");
            ("Noted.".to_owned(), format!("The user asked about {topic}"))
        };
        openrouter::reply(
            &json!({"answer": answer, "state": "answered", "summary": summary}).to_string(),
        )
    }
}

/// `claij chat` over `turns` turns with `strategy` (and, for recall, `--memory-store store`),
/// the first half in one process and the rest in another on the same `--session` file, no
/// history kept (only the memory carries the fact); the stdout of both runs, and the system
/// prompt of the last request.
async fn chat_turns(strategy: &str, store: &str, turns: usize) -> (String, String) {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(Reporting(AtomicUsize::new(0)))
        .expect(turns as u64)
        .mount(&server)
        .await;
    let files = Files::new(&[("config.toml", &openrouter::config(&server))]);
    let (config, session, data) = (
        files.path("config.toml"),
        files.path("trip.json"),
        files.path("data"),
    );
    let mut args = vec![
        "chat",
        "--llm",
        "gemini-flash",
        "--no-stream",
        "--session",
        &session,
        "--history-messages",
        "0",
        "--memory-strategy",
        strategy,
    ];
    if strategy == "recall" {
        args.extend(["--memory-store", store]);
    }
    let half = turns / 2;
    let mut out = String::new();
    for range in [1..=half, half + 1..=turns] {
        let stdin: String = range.map(|n| message(n, turns) + "\n").collect();
        let run = claij_env(
            &args,
            &stdin,
            &[
                ("CLAIJ_CONFIG", Some(config.as_str())),
                ("OPENROUTER_API_KEY", Some(KEY)),
                ("XDG_DATA_HOME", Some(data.as_str())),
                ("USER", Some("ada")),
            ],
        );
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(!run.stdout.contains(KEY) && !run.stderr.contains(KEY));
        out.push_str(&run.stdout);
    }
    let requests = server.received_requests().await.unwrap_or_default();
    let last: Value = serde_json::from_slice(&requests[turns - 1].body).unwrap();
    let system = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "system")
        .filter_map(|m| m["content"].as_str())
        .collect();
    (out, system)
}

/// Whether the embedding model is here (fails under CI when it is not).
fn embedding_model(test: &str) -> bool {
    let dir = claij::local::embed_model_dir(|name| std::env::var_os(name));
    claij_test_support::local_model_or_skip(test, dir.join(claij::local::WEIGHTS_FILE), |name| {
        std::env::var_os(name)
    })
    .is_some()
}

/// The test, on the store `store` (`embedded`, or a server's URL): with recall the fact of
/// turn 2 is in turn 60's prompt, and the model answers from it.
async fn recall_holds_turn_two_at_turn_sixty(store: &str) {
    let (out, system) = chat_turns("recall", store, 60).await;
    let answers: Vec<&str> = out.lines().collect();
    assert_eq!(answers.len(), 60, "{out}");
    assert_eq!(answers[59], "prompt held the fact", "{system}");
    assert!(system.contains("Recalled memories:"), "{system}");
    assert!(
        system.contains("The user's cat is called Miso."),
        "{system}"
    );
}

#[tokio::test]
async fn recall_on_the_embedded_store_holds_turn_two_at_turn_sixty() {
    if !embedding_model("recall_on_the_embedded_store_holds_turn_two_at_turn_sixty") {
        return;
    }
    recall_holds_turn_two_at_turn_sixty("embedded").await;
}

/// A window of summaries has long dropped turn 2 by turn 60.
#[tokio::test]
async fn a_window_of_summaries_has_lost_turn_two_at_turn_sixty() {
    let (out, system) = chat_turns("window", "", 60).await;
    assert_eq!(
        out.lines().last(),
        Some("prompt missing the fact"),
        "{system}"
    );
    assert!(system.contains("The user asked about"), "{system}");
}

/// `claij` with the mock's configuration and a data directory of the test's own.
fn run_in(files: &Files, args: &[&str], stdin: &str, extra: &[(&str, Option<&str>)]) -> Run {
    let (config, data) = (files.path("config.toml"), files.path("data"));
    let mut env = vec![
        ("CLAIJ_CONFIG", Some(config.as_str())),
        ("OPENROUTER_API_KEY", Some(KEY)),
        ("XDG_DATA_HOME", Some(data.as_str())),
    ];
    env.extend_from_slice(extra);
    claij_env(args, stdin, &env)
}

/// The recall flags need `--memory-strategy recall`, and that needs the memory interceptor: each
/// refused in one line naming it, before any request.
#[test]
fn memory_flags_without_what_they_need_are_refused() {
    // A refusal that failed would reach no network: the provider is a closed loopback port.
    let dead =
        "[providers.openrouter]\nbase_url = \"http://127.0.0.1:9/api/v1\"\nmodel_list = \"off\"\n";
    let files = Files::new(&[("config.toml", dead)]);
    for (args, said) in [
        (
            &["ask", "hi", "--memory-strategy", "window"][..],
            "--memory-strategy chooses how the memory interceptor remembers: add --interceptors memory",
        ),
        (
            &[
                "chat",
                "--interceptors",
                "tools",
                "--memory-strategy",
                "recall",
            ][..],
            "--memory-strategy chooses how the memory interceptor remembers: add --interceptors memory",
        ),
        (
            &["chat", "--recall-k", "3"][..],
            "--recall-k is how many memories recall brings back: add --memory-strategy recall",
        ),
        (
            &[
                "chat",
                "--memory-strategy",
                "window",
                "--recall-min-similarity",
                "0.5",
            ][..],
            "--recall-min-similarity is the floor of what recall brings back: add --memory-strategy recall",
        ),
        (
            &[
                "ask",
                "hi",
                "--interceptors",
                "memory",
                "--recall-max-chars",
                "10",
            ][..],
            "--recall-max-chars is the prompt budget of what recall brings back: add --memory-strategy recall",
        ),
        (
            &["chat", "--memory-store", "embedded"][..],
            "--memory-store is where recall keeps memories: add --memory-strategy recall",
        ),
    ] {
        let run = run_in(&files, args, "", &[]);
        assert_one_line_error(&run, 2, said);
    }
    for (args, said) in [
        (
            &["chat", "--memory-strategy", "vector"][..],
            "invalid value 'vector' for '--memory-strategy <STRATEGY>'",
        ),
        (
            &["chat", "--memory-strategy", "recall", "--recall-k", "0"][..],
            "--recall-k",
        ),
        (
            &[
                "chat",
                "--memory-strategy",
                "recall",
                "--recall-min-similarity",
                "2",
            ][..],
            "expected a cosine similarity from -1 to 1",
        ),
        (
            &[
                "chat",
                "--memory-strategy",
                "recall",
                "--memory-store",
                "chroma",
            ][..],
            "expected \"embedded\" or a server's http:// or https:// URL",
        ),
    ] {
        let run = run_in(&files, args, "", &[]);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(said), "{args:?}: {}", run.stderr);
    }
}

/// The test on a Chroma server (`cargo xtask chroma` installs it; a missing install fails
/// under CI): the same 60 turns, the memories kept on the server.
#[tokio::test]
async fn recall_on_a_chroma_server_holds_turn_two_at_turn_sixty() {
    let test = "recall_on_a_chroma_server_holds_turn_two_at_turn_sixty";
    if !embedding_model(test) {
        return;
    }
    let Some(chroma) = claij_test_support::chroma::start_or_skip(test) else {
        return;
    };
    recall_holds_turn_two_at_turn_sixty(&chroma.url()).await;
}

/// A server store nobody answers at is one line naming the key and the URL, before any request
/// to the model, whether the URL comes from the flag or the key.
#[tokio::test]
async fn a_server_store_that_does_not_answer_is_refused_before_any_request() {
    if !embedding_model("a_server_store_that_does_not_answer_is_refused_before_any_request") {
        return;
    }
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500))
        .expect(0)
        .mount(&server)
        .await;
    let [port] = claij_test_support::net::free_ports::<1>().unwrap();
    let url = format!("http://127.0.0.1:{port}");
    let config = openrouter::config(&server);
    let keyed = format!(
        "{config}[memory]\nstrategy = \"recall\"\n[memory.recall]\nstore = \"{url}\"\ntimeout_ms = 2000\n"
    );
    let ask = [
        "ask",
        "hi",
        "--llm",
        "gemini-flash",
        "--interceptors",
        "memory",
    ];
    let flagged: Vec<&str> = ask
        .iter()
        .copied()
        .chain([
            "--memory-strategy",
            "recall",
            "--memory-store",
            url.as_str(),
        ])
        .collect();
    for (text, args) in [(config.as_str(), &flagged[..]), (keyed.as_str(), &ask[..])] {
        let files = Files::new(&[("config.toml", text)]);
        let run = run_in(&files, args, "", &[]);
        assert!(run.code != 0, "{}", run.stderr);
        assert!(
            run.stderr.contains("memory.recall.store: ") && run.stderr.contains(&url),
            "{}",
            run.stderr
        );
        assert!(run.stderr.contains("cannot connect"), "{}", run.stderr);
    }
}

/// A missing embedding model is one line naming where it was looked for and how to fetch it,
/// before any request.
#[tokio::test]
async fn recall_without_the_embedding_model_says_how_to_fetch_it() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500))
        .expect(0)
        .mount(&server)
        .await;
    let files = Files::new(&[("config.toml", &openrouter::config(&server))]);
    let empty = files.path("models");
    std::fs::create_dir_all(&empty).unwrap();
    let run = run_in(
        &files,
        &[
            "chat",
            "--llm",
            "gemini-flash",
            "--memory-strategy",
            "recall",
        ],
        "hello\n",
        &[("CLAIJ_MODEL_DIR", Some(empty.as_str()))],
    );
    assert_ne!(run.code, 0);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("the recall memory's embedding model"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("cargo xtask embed-model"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains(&empty), "{}", run.stderr);
}

/// The `[memory]` keys choose the strategy and `config show` shows what is in effect; a flag
/// overrides the key.
#[tokio::test]
async fn the_memory_keys_choose_the_strategy_and_a_flag_overrides_them() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(Reporting(AtomicUsize::new(0)))
        .mount(&server)
        .await;
    let text = format!(
        "{}[memory]\nstrategy = \"window\"\n[memory.window]\nsize = 1\n",
        openrouter::config(&server)
    );
    let files = Files::new(&[("config.toml", &text)]);
    let shown = run_in(&files, &["config", "show"], "", &[]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    assert!(
        shown
            .stdout
            .contains("memory:\n  strategy         window\n  window           size 1\n"),
        "{}",
        shown.stdout
    );
    let json = run_in(&files, &["config", "show", "--json"], "", &[]);
    let value: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(value["memory"]["strategy"], "window");
    assert_eq!(value["memory"]["recall"]["k"], 5);
    // Window of 1: turn 3's prompt no longer holds turn 2's fact; bounded (the flag) keeps it.
    let three = format!("hello\n{FACT}\n{QUESTION}\n");
    let chat = |extra: &[&str]| {
        let mut args = vec![
            "chat",
            "--llm",
            "gemini-flash",
            "--no-stream",
            "--history-messages",
            "0",
        ];
        args.extend_from_slice(extra);
        run_in(&files, &args, &three, &[])
    };
    let keyed = chat(&[]);
    assert_eq!(
        keyed.stdout.lines().last(),
        Some("prompt held the fact"),
        "{}",
        keyed.stderr
    );
    let hello_then_question = format!("{FACT}\nhello\n{QUESTION}\n");
    let mut args = vec![
        "chat",
        "--llm",
        "gemini-flash",
        "--no-stream",
        "--history-messages",
        "0",
    ];
    let keyed = run_in(&files, &args, &hello_then_question, &[]);
    assert_eq!(
        keyed.stdout.lines().last(),
        Some("prompt missing the fact"),
        "{}",
        keyed.stderr
    );
    args.extend(["--memory-strategy", "bounded"]);
    let flagged = run_in(&files, &args, &hello_then_question, &[]);
    assert_eq!(
        flagged.stdout.lines().last(),
        Some("prompt held the fact"),
        "{}",
        flagged.stderr
    );
}

/// A session kept with summaries and reopened with recall (or the other way) says what starts
/// empty, and keeps the other strategy's state in the file.
#[tokio::test]
async fn a_session_reopened_with_the_other_kind_of_memory_says_what_starts_empty() {
    if !embedding_model("a_session_reopened_with_the_other_kind_of_memory_says_what_starts_empty") {
        return;
    }
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(Reporting(AtomicUsize::new(0)))
        .mount(&server)
        .await;
    let files = Files::new(&[("config.toml", &openrouter::config(&server))]);
    let session = files.path("s.json");
    let ask = |strategy: &str, prompt: &str| {
        run_in(
            &files,
            &[
                "ask",
                prompt,
                "--llm",
                "gemini-flash",
                "--no-stream",
                "--interceptors",
                "memory",
                "--session",
                &session,
                "--memory-strategy",
                strategy,
            ],
            "",
            &[],
        )
    };
    let first = ask("bounded", FACT);
    assert_eq!(first.code, 0, "{}", first.stderr);
    let second = ask("recall", QUESTION);
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert!(
        second.stderr.contains("keeps its memory as summaries (memory strategy bounded, window or hierarchical): recall starts this conversation's memories empty"),
        "{}",
        second.stderr
    );
    assert!(
        second.stdout.contains("prompt missing the fact"),
        "{}",
        second.stdout
    );
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&session).unwrap()).unwrap();
    assert!(
        file["interceptors"]["memory"]["state"]["summaries"][0]
            .as_str()
            .unwrap()
            .contains(HELD)
    );
    let session_id = file["interceptors"]["recall"]["state"]["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    // Back to summaries: they are where they were, and recall's session id stays for later.
    let third = ask("bounded", QUESTION);
    assert_eq!(third.code, 0, "{}", third.stderr);
    assert!(
        third.stdout.contains("prompt held the fact"),
        "{}",
        third.stdout
    );
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&session).unwrap()).unwrap();
    assert_eq!(
        file["interceptors"]["recall"]["state"]["session_id"],
        session_id.as_str()
    );
}

/// `claij memory list|search|forget` over the store a recall chat filled: the session's memories
/// listed oldest first, searched by meaning with their similarity, forgotten by id and by session.
#[tokio::test]
async fn memory_list_search_and_forget_work_on_the_store_a_chat_filled() {
    if !embedding_model("memory_list_search_and_forget_work_on_the_store_a_chat_filled") {
        return;
    }
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(Reporting(AtomicUsize::new(0)))
        .mount(&server)
        .await;
    let files = Files::new(&[("config.toml", &openrouter::config(&server))]);
    let session = files.path("s.json");
    let user = [("USER", Some("ada"))];
    let stdin = format!("{}\n{FACT}\n{}\n/memory\n", message(1, 9), message(3, 9));
    let chat = run_in(
        &files,
        &[
            "chat",
            "--llm",
            "gemini-flash",
            "--no-stream",
            "--session",
            &session,
            "--memory-strategy",
            "recall",
        ],
        &stdin,
        &user,
    );
    assert_eq!(chat.code, 0, "{}", chat.stderr);
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&session).unwrap()).unwrap();
    let id = file["interceptors"]["recall"]["state"]["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    // `/memory` shows the recall memory's session, not the (empty) summaries.
    let shown =
        format!("recall memory, session {id} (`claij memory list --session {id}` lists it):");
    assert!(chat.stderr.contains(&shown), "{}", chat.stderr);
    assert!(
        std::path::Path::new(&files.path("data"))
            .join("claij/memory/ada.sqlite3")
            .is_file()
    );

    let list = run_in(
        &files,
        &["memory", "list", "--session", &id, "--json"],
        "",
        &user,
    );
    assert_eq!(list.code, 0, "{}", list.stderr);
    let rows: Value = serde_json::from_str(&list.stdout).unwrap();
    let texts: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts.len(), 3, "{texts:?}");
    assert_eq!(texts[1], "The user's cat is called Miso.");
    assert!(rows[0].get("similarity").is_none());
    assert_eq!(rows[0]["session"], id.as_str());

    let search = run_in(
        &files,
        &["memory", "search", "what is the name of my pet", "--k", "2"],
        "",
        &user,
    );
    assert_eq!(search.code, 0, "{}", search.stderr);
    let first = search.stdout.lines().next().unwrap();
    assert!(
        first.ends_with("The user's cat is called Miso."),
        "{}",
        search.stdout
    );
    assert!(first.contains(&id) && first.contains("just now"), "{first}");
    assert_eq!(search.stdout.lines().count(), 2, "{}", search.stdout);
    let json = run_in(&files, &["memory", "search", "cat", "--json"], "", &user);
    let hits: Value = serde_json::from_str(&json.stdout).unwrap();
    let similarity = hits[0]["similarity"].as_f64().unwrap();
    assert!(
        similarity > hits[1]["similarity"].as_f64().unwrap(),
        "{hits}"
    );

    let fact_id = rows[1]["id"].as_str().unwrap();
    let forget = run_in(&files, &["memory", "forget", "--id", fact_id], "", &user);
    assert_eq!(
        (forget.code, forget.stdout.as_str()),
        (0, "forgot 1 memory\n"),
        "{}",
        forget.stderr
    );
    let rest = run_in(&files, &["memory", "forget", "--session", &id], "", &user);
    assert_eq!(rest.stdout, "forgot 2 memories\n", "{}", rest.stderr);
    let empty = run_in(&files, &["memory", "list"], "", &user);
    assert_eq!(empty.stdout, "no memories\n", "{}", empty.stderr);
    // Another user's store is another file.
    let other = run_in(&files, &["memory", "list"], "", &[("USER", Some("bob"))]);
    assert_eq!(other.stdout, "no memories\n", "{}", other.stderr);
    let neither = run_in(&files, &["memory", "forget"], "", &user);
    assert_one_line_error(
        &neither,
        2,
        "claij memory forget: give --id ID or --session ID",
    );
}
