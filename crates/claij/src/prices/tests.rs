//! The price layers, as used and as shown ([`super::render`], `claij models prices`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

/// The three layers, as `ask` and `claij models` use them: the configuration's price over the
/// imported one over the built-in one, each for the same provider and model only.
#[test]
fn the_configuration_over_the_import_over_the_builtin_prices() {
    let dir = std::env::temp_dir().join(format!("claij-prices-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let imported = serde_json::json!({"date": "2026-12-01", "sources": {"import": "a test list"},
    "models": [
        {"provider": "openai", "id": "gpt-4o-mini", "input": 9, "output": 9, "source": "import"},
        {"provider": "openai", "id": "o3-mini", "input": 1.1, "output": 4.4, "source": "import"},
        {"provider": "gemini", "id": "gemini-2.5-pro", "input": 7, "output": 7, "source": "import"}
    ]});
    std::fs::write(dir.join(crate::prices::IMPORTED_FILE), imported.to_string()).unwrap();
    let mut settings = crate::settings::Settings::parse(
        "[models.\"openai:gpt-4o-mini\"]\nprice = { input = 1, output = 2 }\n",
        std::path::Path::new("/etc/claij.toml"),
    )
    .unwrap();
    settings.data_dir = Some(dir.clone());
    let table = crate::prices::table(&settings).unwrap();
    let input = |provider: &str, model: &str| table.price_for(provider, model).unwrap().input;
    assert_eq!(
        input("openai", "gpt-4o-mini"),
        Some(1.0),
        "the configuration's"
    );
    assert_eq!(input("gemini", "gemini-2.5-pro"), Some(7.0), "the import's");
    assert_eq!(
        input("openai", "o3-mini"),
        Some(1.1),
        "only the import knows it"
    );
    assert_eq!(input("openai", "gpt-5"), Some(1.25), "the built-in one");
    let shown = super::render(&settings).unwrap();
    assert!(
        shown.contains(
            "openai:gpt-4o-mini: input 9, output 9; undated; a test list [replaced by the configuration's]"
        ),
        "{shown}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
