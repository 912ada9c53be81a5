//! `Claij` values: settings built in code resolve as a file's do, keys come from the value's own
//! variables, and two values share nothing (fallback memory, loaded models).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
#[cfg(feature = "local")]
use std::sync::Mutex;

use claij_backends::openai::StructuredDialect;

use super::Claij;
#[cfg(feature = "local")]
use super::Notice;
use crate::ErrorKind;
use crate::settings::Settings;

/// The same providers, aliases and default, once from a file and once built in code: every name
/// resolves to the same model, and the same mistakes are refused at the same key.
#[test]
fn settings_built_in_code_resolve_aliases_as_the_file_does() {
    let file = Settings::parse(
        "[providers.mine]\nkind = \"openai-compatible\"\nbase_url = \"http://127.0.0.1:8080/v1\"\n\
         [providers.openai]\nbase_url = \"http://127.0.0.1:9090/v1\"\n\
         [aliases]\nsmol = \"mine:SmolLM2\"\nfast = \"openai:gpt-4o-mini\"\ngpt-5 = \"local\"\n\
         [defaults]\nllm = \"smol\"\nmax_retries = 2\n",
        Path::new("/etc/claij.toml"),
    )
    .unwrap();
    let code = Settings::builder()
        .compatible("mine", "http://127.0.0.1:8080/v1")
        .base_url("openai", "http://127.0.0.1:9090/v1")
        .alias("smol", "mine:SmolLM2")
        .alias("fast", "openai:gpt-4o-mini")
        .alias("gpt-5", "local")
        .default_llm("smol")
        .max_retries(2)
        .build()
        .unwrap();
    for name in [
        "smol",
        "fast",
        "gpt-5",
        "gemini-flash",
        "mine:other",
        "local",
    ] {
        assert_eq!(
            code.resolve(name).unwrap(),
            file.resolve(name).unwrap(),
            "{name}"
        );
    }
    assert_eq!(code.defaults, file.defaults);
    assert_eq!(code.aliases(), file.aliases());
    assert_eq!(code.compatible("mine"), file.compatible("mine"));
    // The same checks as a file's: an alias to an unknown provider, a default that resolves to
    // nothing, a provider of one's own named like a built-in one's model.
    let err = Settings::builder()
        .alias("x", "nowhere:m")
        .build()
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Config);
    assert!(
        err.to_string()
            .starts_with("settings built in code: aliases.x: unknown provider `nowhere`"),
        "{err}"
    );
    let err = Settings::builder().default_llm("nope").build().unwrap_err();
    assert!(
        err.to_string()
            .starts_with("settings built in code: defaults.llm: unknown model `nope`"),
        "{err}"
    );
    let err = Settings::builder().max_retries(1000).build().unwrap_err();
    assert_eq!(
        err.to_string(),
        "settings built in code: defaults.max_retries: expected a whole number from 0 to 100"
    );
}

/// A key comes from the value's own variables, never from the process's environment.
#[test]
fn keys_come_from_the_value_s_variables() {
    let settings = Settings::builder()
        .base_url("openai", "http://127.0.0.1:9/v1")
        .build()
        .unwrap();
    let without = Claij::new(settings.clone());
    let err = without.open("openai:gpt-4o").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Key);
    assert!(err.is_auth());
    assert_eq!(
        err.to_string(),
        "OPENAI_API_KEY is not set: export it to use --llm openai:gpt-4o"
    );
    let with = Claij::new(settings).with_var("OPENAI_API_KEY", "sk-test");
    let opened = with.open("openai:gpt-4o").unwrap();
    assert_eq!(opened.model, "gpt-4o");
    let err = with.open("gpt-6").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Model);
}

/// What one value learns about a server is not known to another.
#[test]
fn two_values_share_no_fallback_memory() {
    let a = Claij::new(Settings::default());
    let b = Claij::new(Settings::default());
    assert!(!Arc::ptr_eq(&a.fallback_memory(), &b.fallback_memory()));
    assert!(Arc::ptr_eq(&a.fallback_memory(), &a.fallback_memory()));
    a.fallback_memory()
        .remember("http://127.0.0.1:8080/v1", "smol", StructuredDialect::Tools);
    assert_eq!(
        a.fallback_memory().get("http://127.0.0.1:8080/v1", "smol"),
        Some(StructuredDialect::Tools)
    );
    assert_eq!(
        b.fallback_memory().get("http://127.0.0.1:8080/v1", "smol"),
        None
    );
}

/// The embedded model is loaded once per value: a second opener of the same value shares its
/// backend, another value loads its own.
#[cfg(feature = "local")]
#[test]
fn two_values_share_no_loaded_model() {
    let path =
        claij_local::model_dir(|name| std::env::var_os(name)).join(claij_local::DEFAULT_MODEL_FILE);
    if !path.is_file() {
        assert!(
            std::env::var_os("CI").is_none_or(|v| v.is_empty() || v == "false"),
            "the local model is missing at {} (cargo xtask model installs it)",
            path.display()
        );
        eprintln!("skipped: no local model at {}", path.display());
        return;
    }
    let loads = Arc::new(Mutex::new(0));
    let counter = Arc::clone(&loads);
    let a = Claij::new(Settings::default()).on_notice(move |notice: &Notice| {
        if matches!(notice, Notice::LoadingLocal { .. }) {
            *counter.lock().unwrap() += 1;
        }
    });
    let b = Claij::new(Settings::default());
    let first = a.open_with(Some("local"), Some(&path)).unwrap();
    let again = a.open_with(None, Some(&path)).unwrap();
    assert!(Arc::ptr_eq(&first.backend, &again.backend));
    assert_eq!(*loads.lock().unwrap(), 1, "loaded once, told once");
    assert_eq!(a.local.lock().unwrap().len(), 1);
    assert_eq!(b.local.lock().unwrap().len(), 0);
    let other = b.open_with(Some("local"), Some(&path)).unwrap();
    assert!(!Arc::ptr_eq(&first.backend, &other.backend));
}
