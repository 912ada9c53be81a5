//! `claij ask` failing before any model runs: usage, keys, model files, schema and memory files.

use super::{Files, assert_one_line_error, claij, claij_env};

/// No key of any provider, so nothing can reach the network.
const NO_KEYS: [(&str, Option<&str>); 4] = [
    ("OPENROUTER_API_KEY", None),
    ("OPENAI_API_KEY", None),
    ("ANTHROPIC_API_KEY", None),
    ("GEMINI_API_KEY", None),
];

#[track_caller]
fn check(args: &[&str], env: &[(&str, Option<&str>)], part: &str) {
    let mut all = NO_KEYS.to_vec();
    all.extend_from_slice(env);
    let run = claij_env(args, "", &all);
    assert_one_line_error(&run, 2, part);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
}

#[test]
fn usage_errors_are_one_line() {
    check(
        &["ask", "hi", "--mode", "bogus"],
        &[],
        "invalid value 'bogus' for '--mode",
    );
    check(
        &["ask", "hi", "--llm", "gpt-6"],
        &[],
        "unknown model `gpt-6`: expected an alias",
    );
    check(
        &["ask", "hi", "--llm", "mistral:large"],
        &[],
        "unknown provider `mistral`",
    );
    check(&["ask", "hi", "--llm", "openai:"], &[], "no model after");
    check(
        &["ask", "hi", "--interceptors", "memory,nope"],
        &[],
        "invalid value 'nope'",
    );
    check(&["ask", "hi", "--threads", "0"], &[], "--threads");
    check(&["ask"], &[], "<PROMPT>");
    check(
        &[
            "ask",
            "hi",
            "--llm",
            "openai:gpt-5",
            "--model-path",
            "m.gguf",
        ],
        &[],
        "--model-path is for the local model",
    );
}

#[test]
fn a_missing_key_names_the_variable() {
    let cases = [
        ("openai:gpt-5", "OPENAI_API_KEY is not set"),
        ("openrouter:google/gemini-2.5-flash", "OPENROUTER_API_KEY"),
        ("anthropic:claude-sonnet-4-5", "ANTHROPIC_API_KEY"),
        ("gemini:gemini-2.5-flash", "GEMINI_API_KEY"),
    ];
    for (llm, part) in cases {
        check(&["ask", "hi", "--llm", llm], &[], part);
    }
    // An empty key is no key.
    check(
        &["ask", "hi", "--llm", "openai:gpt-5"],
        &[("OPENAI_API_KEY", Some(""))],
        "OPENAI_API_KEY is not set",
    );
}

#[test]
fn a_missing_model_says_how_to_fetch_it() {
    check(
        &[
            "ask",
            "hi",
            "--llm",
            "local",
            "--model-path",
            "/nonexistent.gguf",
        ],
        &[],
        "cargo xtask model",
    );
    // No key and no model in the cache: the local model is the default, and the error says so.
    let empty = Files::new(&[]);
    let dir = empty.path("");
    check(
        &["ask", "hi"],
        &[("CLAIJ_MODEL_DIR", Some(dir.as_str()))],
        "no provider key is set, so claij uses the local model",
    );
    check(
        &["ask", "hi"],
        &[("CLAIJ_MODEL_DIR", Some(dir.as_str()))],
        "cargo xtask model",
    );
}

#[test]
fn bad_schema_and_memory_files_are_named() {
    let files = Files::new(&[
        ("not-json.json", "{"),
        ("bad-schema.json", r#"{"type": 12}"#),
        ("memory.json", r#"["not", "a", "session"]"#),
    ]);
    let path = |name| files.path(name);
    check(
        &["ask", "hi", "--schema", &path("not-json.json")],
        &[],
        "not-json.json: invalid JSON",
    );
    check(
        &["ask", "hi", "--schema", &path("bad-schema.json")],
        &[],
        "bad-schema.json",
    );
    check(
        &["ask", "hi", "--schema", &path("missing.json")],
        &[],
        "cannot read",
    );
    check(
        &["ask", "hi", "--memory", &path("memory.json")],
        &[],
        "not a claij session file",
    );
    // The memory file is untouched by a failed run.
    let kept = std::fs::read_to_string(path("memory.json")).unwrap();
    assert_eq!(kept, r#"["not", "a", "session"]"#);
}

#[test]
fn help_lists_ask() {
    let run = claij(&["--help"], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("ask"), "{}", run.stdout);
}

#[test]
fn a_bad_kv_cache_limit_names_the_variable() {
    check(
        &["ask", "hi", "--llm", "local"],
        &[("CLAIJ_KV_CACHE_MIB", Some("lots"))],
        "CLAIJ_KV_CACHE_MIB=\"lots\" is not a whole number of MiB",
    );
}

/// A mode the model lacks is refused in one line naming the flag and the model, exit 2, before any
/// request: the providers' base URL is a closed port, so a request would fail otherwise.
#[test]
fn a_forced_mode_the_model_lacks_is_refused() {
    let files = Files::new(&[(
        "config.toml",
        "[providers.openai]\nbase_url = \"http://127.0.0.1:9/v1\"\n\
         [providers.openrouter]\nbase_url = \"http://127.0.0.1:9/api/v1\"\nmodel_list = \"off\"\n",
    )]);
    let config = files.path("config.toml");
    let env = [
        ("CLAIJ_CONFIG", Some(config.as_str())),
        ("OPENAI_API_KEY", Some("sk-test")),
        ("OPENROUTER_API_KEY", Some("sk-or-test")),
    ];
    let cases = [
        (
            "openai:o1-mini",
            "tool",
            "--mode tool: openai:o1-mini has no tools",
        ),
        (
            "openai:gpt-3.5-turbo",
            "native",
            "--mode native: openai:gpt-3.5-turbo has no native structured output",
        ),
        (
            "openrouter:openai/o1-preview",
            "tool",
            "--mode tool: openrouter:openai/o1-preview has no tools",
        ),
    ];
    for (llm, mode, part) in cases {
        check(&["ask", "hi", "--llm", llm, "--mode", mode], &env, part);
    }
    // An FSM run's models, the same.
    let flow = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/fsm/code-review.json"
    );
    let input = r#"{"code": "fn main() {}"}"#;
    let args = [
        "fsm",
        "run",
        flow,
        "--input",
        input,
        "--llm",
        "openai:o1-mini",
    ];
    check(
        &[&args[..], &["--mode", "tool"]].concat(),
        &env,
        "--mode tool: openai:o1-mini has no tools",
    );
    // A mode the model has goes on to the request (which fails on the closed port, not exit 2).
    let run = claij_env(
        &["ask", "hi", "--llm", "openai:gpt-4o", "--mode", "tool"],
        "",
        &env,
    );
    assert!(!run.stderr.contains("has no tools"), "{}", run.stderr);
}
