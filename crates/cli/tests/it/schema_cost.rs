//! `claij schema cost`: a conversation with ten schema extensions, saved as a session saves it
//! (the registry's approved extensions), shows what each costs in the real tokenizer's tokens, the
//! most expensive first; a bare schema shows its total; each tokenizer counts with its own
//! encoding; flags the mode cannot honour and unknown tokenizers are refused (exit 2, one line).

use claij::schema::{Registry, SchemaDelta, compose, to_compact};
use claij::session::Session;
use claij::tokens::Tokenizer;
use serde_json::{Value, json};

use super::{Files, assert_one_line_error, claij, claij_env};

/// Ten extensions as proposals add them: properties with short and long descriptions, an enum, a
/// required field, a nested object, an array, a shared definition.
fn ten() -> Vec<SchemaDelta> {
    let prop = |id: &str, name: &str, schema: Value| {
        SchemaDelta::new(id, "proposals", json!({"properties": {name: schema}}))
    };
    vec![
        prop(
            "confidence-v1",
            "confidence",
            json!({"type": "number", "minimum": 0, "maximum": 1, "description": "How sure the answer is"}),
        ),
        prop("tag-v1", "tag", json!({"type": "string"})),
        prop(
            "rationale-v1",
            "rationale",
            json!({"type": "string", "description": "Why the answer is right, step by step, naming each source the user gave and what it says"}),
        ),
        prop(
            "language-v1",
            "language",
            json!({"enum": ["en", "fr", "de", "es", "it", "pt", "nl"], "description": "The answer's language"}),
        ),
        SchemaDelta::new(
            "summary-v1",
            "memory",
            json!({"properties": {"summary": {"type": "string", "description": "What to remember for the next turn"}}, "required": ["summary"]}),
        ),
        prop(
            "sources-v1",
            "sources",
            json!({"type": "array", "items": {"type": "object", "properties": {"url": {"type": "string"}, "quote": {"type": "string"}}, "required": ["url"]}, "description": "Where each claim comes from"}),
        ),
        prop(
            "cost-v1",
            "cost",
            json!({"type": "object", "properties": {"usd": {"type": "number"}, "tokens": {"type": "integer"}}}),
        ),
        prop(
            "followups-v1",
            "followups",
            json!({"type": "array", "items": {"type": "string"}, "maxItems": 3, "description": "Questions the user may ask next"}),
        ),
        SchemaDelta::new(
            "person-v1",
            "proposals",
            json!({"$defs": {"person": {"type": "object", "properties": {"name": {"type": "string"}, "email": {"type": "string", "format": "email"}}}}, "properties": {"author": {"$ref": "#/$defs/person"}}}),
        ),
        prop(
            "done-v1",
            "done",
            json!({"type": "boolean", "description": "Whether the task is finished"}),
        ),
    ]
}

/// A conversation file holding the ten, as `claij ask --session` writes its approved extensions.
fn session(files: &Files) -> String {
    let file = files.path("conversation.json");
    let mut registry = Registry::new(claij::schema::base()).unwrap();
    for delta in ten() {
        registry.add(delta).unwrap();
    }
    let session = Session::load(std::path::Path::new(&file)).unwrap();
    session
        .with_extensions(Some(&registry))
        .save(std::path::Path::new(&file))
        .unwrap();
    file
}

/// The tokens of the compact rendering of the base with `deltas`, counted here with `tokenizer`.
fn tokens(tokenizer: &Tokenizer, deltas: &[SchemaDelta]) -> i64 {
    let schema = compose(&claij::schema::base(), deltas).unwrap();
    tokenizer
        .open()
        .unwrap()
        .count(&to_compact(&schema))
        .unwrap() as i64
}

#[test]
fn a_session_with_ten_extensions_shows_each_deltas_cost() {
    let files = Files::new(&[]);
    let file = session(&files);
    let run = claij(&["schema", "cost", "--session", &file], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    insta::assert_snapshot!(
        "ten_extensions",
        run.stdout.replace(&file, "conversation.json")
    );

    let run = claij(
        &[
            "schema",
            "cost",
            "--session",
            &file,
            "--json",
            "--tokenizer",
            "cl100k_base",
            "--model",
            "openai:gpt-4o-mini",
        ],
        "",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mut out: Value = serde_json::from_str(&run.stdout).unwrap();
    let schema = out["schemas"][0].clone();
    let all = ten();
    // The figures are the tokenizer's own: the total, and each delta's difference to the others.
    assert_eq!(schema["total"], tokens(&Tokenizer::Cl100kBase, &all));
    assert_eq!(schema["base"], tokens(&Tokenizer::Cl100kBase, &[]));
    let deltas = schema["deltas"].as_array().unwrap();
    assert_eq!(deltas.len(), 10);
    for (i, delta) in all.iter().enumerate() {
        let mut others = all.clone();
        others.remove(i);
        let shown = deltas
            .iter()
            .find(|d| d["extension_id"] == delta.extension_id.as_str())
            .unwrap();
        let expected =
            tokens(&Tokenizer::Cl100kBase, &all) - tokens(&Tokenizer::Cl100kBase, &others);
        assert_eq!(shown["tokens"], expected, "{}", delta.extension_id);
    }
    let figures: Vec<i64> = deltas
        .iter()
        .map(|d| d["tokens"].as_i64().unwrap())
        .collect();
    assert!(
        figures.windows(2).all(|w| w[0] >= w[1]),
        "most expensive first: {figures:?}"
    );
    assert_eq!(out["context_window"], 128_000);
    out["file"] = json!("conversation.json");
    insta::assert_snapshot!(
        "ten_extensions_json",
        serde_json::to_string_pretty(&out).unwrap()
    );
}

#[test]
fn a_bare_schema_shows_its_total_in_each_tokenizer() {
    let files = Files::new(&[("schema.json", super::BASE)]);
    let schema = files.path("schema.json");
    let text: Value = serde_json::from_str(super::BASE).unwrap();
    for (name, tokenizer) in [
        ("o200k_base", Tokenizer::O200kBase),
        ("cl100k_base", Tokenizer::Cl100kBase),
    ] {
        let run = claij(
            &["schema", "cost", &schema, "--tokenizer", name, "--json"],
            "",
        );
        assert_eq!(run.code, 0, "{}", run.stderr);
        let out: Value = serde_json::from_str(&run.stdout).unwrap();
        let expected = tokenizer.open().unwrap().count(&to_compact(&text)).unwrap();
        assert_eq!(out["schemas"][0]["total"], expected, "{name}");
        assert_eq!(out["tokenizer"], name);
    }
    let run = claij(&["schema", "cost", &schema], "");
    let total = Tokenizer::O200kBase
        .open()
        .unwrap()
        .count(&to_compact(&text))
        .unwrap();
    assert_eq!(
        run.stdout.replace(&schema, "schema.json"),
        format!(
            "schema.json: {total} tokens (o200k_base), no model (--model or defaults.llm): context window unknown\n"
        )
    );
}

#[test]
fn the_local_tokenizer_counts_with_the_embedded_models_file() {
    let test = "the_local_tokenizer_counts_with_the_embedded_models_file";
    let Some(model) = super::local_model::model(test) else {
        return;
    };
    let dir = model.parent().unwrap().to_string_lossy().into_owned();
    let files = Files::new(&[]);
    let file = session(&files);
    let args = [
        "schema",
        "cost",
        "--session",
        &file,
        "--tokenizer",
        "local",
        "--model",
        "local",
        "--json",
    ];
    let run = claij_env(&args, "", &[("CLAIJ_MODEL_DIR", Some(&dir))]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out: Value = serde_json::from_str(&run.stdout).unwrap();
    let local = Tokenizer::Local(model);
    assert_eq!(out["tokenizer"], "local");
    assert_eq!(out["schemas"][0]["total"], tokens(&local, &ten()));
    assert_ne!(
        out["schemas"][0]["total"],
        tokens(&Tokenizer::O200kBase, &ten())
    );
    // The embedded model's window, from its file.
    assert_eq!(out["context_window"], 8192);
}

#[test]
fn refusals_are_one_line() {
    let files = Files::new(&[("schema.json", super::BASE)]);
    let schema = files.path("schema.json");
    let run = claij(&["schema", "cost", &schema, "--schema", &schema], "");
    assert_one_line_error(&run, 2, "--schema is the base of --session's deltas");
    let run = claij(&["schema", "cost", &schema, "--tokenizer", "gpt2"], "");
    assert_one_line_error(
        &run,
        2,
        "unknown tokenizer `gpt2`: expected one of o200k_base, cl100k_base, local",
    );
    let missing = files.path("no-models");
    let run = claij_env(
        &["schema", "cost", &schema, "--tokenizer", "local"],
        "",
        &[("CLAIJ_MODEL_DIR", Some(&missing))],
    );
    assert_one_line_error(&run, 2, "cargo xtask model");
    assert!(run.stderr.contains(&missing), "{}", run.stderr);
    let run = claij(&["schema", "cost", &schema, "--session", &schema], "");
    assert_one_line_error(&run, 2, "--session FILE counts a conversation's deltas");
}
