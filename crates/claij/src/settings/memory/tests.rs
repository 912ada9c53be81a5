//! `[memory]`: every key read, the defaults, and each bad value refused at its file and line.

use std::path::Path;

use super::*;

fn parse(text: &str) -> crate::Result<Settings> {
    Settings::parse(text, Path::new("/etc/claij.toml"))
}

fn error(text: &str) -> String {
    match parse(text) {
        Ok(_) => panic!("accepted: {text}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn no_memory_table_is_the_bounded_strategy_with_the_interceptors_defaults() {
    let memory = parse("").unwrap().memory;
    assert_eq!(memory.strategy, Strategy::Bounded);
    assert_eq!(
        (memory.bounded_max_chars, memory.bounded_max_summaries),
        (2_000, 20)
    );
    assert_eq!((memory.window_size, memory.hierarchical_every), (10, 5));
    let recall = &memory.recall;
    assert_eq!(
        (recall.k, recall.max_chars, recall.store_exchange),
        (5, 1_500, false)
    );
    assert!((recall.min_similarity - 0.2).abs() < 1e-6);
    assert_eq!(recall.store, Store::Embedded);
    assert_eq!(recall.collection, "claij_memories");
    assert_eq!(recall.user, None);
}

#[test]
fn every_key_is_read() {
    let text = "[memory]\nstrategy = \"window\"\n\
        [memory.bounded]\nmax_chars = 900\nmax_summaries = 7\n\
        [memory.window]\nsize = 3\n\
        [memory.hierarchical]\nevery = 4\n\
        [memory.recall]\nk = 2\nmin_similarity = 0.5\nmax_chars = 300\nstore_exchange = true\n\
        store = \"http://127.0.0.1:8000/\"\ncollection = \"mine\"\nuser = \"ada\"\n";
    let memory = parse(text).unwrap().memory;
    assert_eq!(memory.strategy, Strategy::Window);
    assert_eq!(
        (memory.bounded_max_chars, memory.bounded_max_summaries),
        (900, 7)
    );
    assert_eq!((memory.window_size, memory.hierarchical_every), (3, 4));
    let r = &memory.recall;
    assert_eq!((r.k, r.max_chars, r.store_exchange), (2, 300, true));
    assert!((r.min_similarity - 0.5).abs() < 1e-6);
    assert_eq!(r.store, Store::Server("http://127.0.0.1:8000".into()));
    assert_eq!(
        (r.collection.as_str(), r.user.as_deref()),
        ("mine", Some("ada"))
    );
    // A whole number is a similarity too.
    let floor = parse("[memory.recall]\nmin_similarity = 0\n").unwrap();
    assert!(floor.memory.recall.min_similarity.abs() < 1e-6);
}

#[test]
fn a_bad_value_is_refused_at_its_line_and_key() {
    for (text, said) in [
        (
            "[memory]\nstrategy = \"vector\"\n",
            "/etc/claij.toml:2: memory.strategy: expected one of bounded, window, hierarchical, recall (got \"vector\")",
        ),
        (
            "[memory]\nsize = 3\n",
            "/etc/claij.toml:2: memory.size: unknown key (expected strategy, bounded, window, hierarchical or recall)",
        ),
        (
            "[memory.window]\nsize = 0\n",
            "/etc/claij.toml:2: memory.window.size: expected a whole number from 1 to 100000",
        ),
        (
            "[memory.window]\nevery = 2\n",
            "/etc/claij.toml:2: memory.window.every: unknown key (expected size)",
        ),
        (
            "[memory.recall]\n\nk = 1001\n",
            "/etc/claij.toml:3: memory.recall.k: expected a whole number from 1 to 1000",
        ),
        (
            "[memory.recall]\nmin_similarity = 1.5\n",
            "/etc/claij.toml:2: memory.recall.min_similarity: expected a cosine similarity from -1 to 1",
        ),
        (
            "[memory.recall]\nmax_chars = -1\n",
            "/etc/claij.toml:2: memory.recall.max_chars: expected a whole number of characters from 1 to 1000000",
        ),
        (
            "[memory.recall]\nstore = \"chroma\"\n",
            "/etc/claij.toml:2: memory.recall.store: expected \"embedded\" or a server's http:// or https:// URL (got \"chroma\")",
        ),
        (
            "[memory.recall]\nstore_exchange = \"yes\"\n",
            "/etc/claij.toml:2: memory.recall.store_exchange: expected true or false",
        ),
        (
            "[memory.recall]\nuser = \"../etc\"\n",
            "/etc/claij.toml:2: memory.recall.user: expected a plain file name (not empty, no `/`, `\\` or leading `.`, at most 128 bytes)",
        ),
        (
            "[memory.recall]\ncollection = \"a b\"\n",
            "/etc/claij.toml:2: memory.recall.collection: expected a collection name of 3 to 512 letters, digits, `_`, `-` or `.`",
        ),
        (
            "[memory.recall]\nkk = 1\n",
            "/etc/claij.toml:2: memory.recall.kk: unknown key (expected k, min_similarity, max_chars, store_exchange, store, collection, user, max_cache_mib, busy_timeout_ms, timeout_ms or token_env)",
        ),
        (
            "[memory]\nrecall = 3\n",
            "/etc/claij.toml:2: memory.recall: expected a table, found an integer",
        ),
    ] {
        assert_eq!(error(text), said, "{text}");
    }
}

#[test]
fn the_user_is_the_key_else_user_else_default() {
    let mut recall = RecallSettings::default();
    let env = |v: &'static str| move |name: &str| (name == "USER").then(|| v.into());
    assert_eq!(recall.user_or_env(env("ada")), "ada");
    assert_eq!(recall.user_or_env(env("")), "default");
    assert_eq!(recall.user_or_env(|_| None), "default");
    recall.user = Some("bob".into());
    assert_eq!(recall.user_or_env(env("ada")), "bob");
}

#[test]
fn a_server_url_is_shown_without_its_secrets() {
    let store: Store = "https://me:pw@chroma.example/?token=x".parse().unwrap();
    let shown = store.to_string();
    assert!(
        !shown.contains("pw") && !shown.contains("token=x"),
        "{shown}"
    );
    assert_eq!("embedded".parse::<Store>().unwrap().to_string(), "embedded");
    assert!("http://".parse::<Store>().is_err());
}

#[test]
fn each_summary_strategy_builds_its_own_sizes() {
    let mut memory = MemorySettings {
        strategy: Strategy::Window,
        window_size: 3,
        ..MemorySettings::default()
    };
    let built = memory.summaries().unwrap();
    assert_eq!(format!("{:?}", built.strategy()), "Window { size: 3 }");
    memory.strategy = Strategy::Hierarchical;
    memory.hierarchical_every = 4;
    assert_eq!(
        format!("{:?}", memory.summaries().unwrap().strategy()),
        "Hierarchical { every: 4 }"
    );
    memory.strategy = Strategy::Bounded;
    memory.bounded_max_chars = 100;
    assert_eq!(
        format!("{:?}", memory.summaries().unwrap().strategy()),
        "Bounded { max_chars: 100, max_summaries: 20, max_summary_chars: 100 }"
    );
    memory.strategy = Strategy::Recall;
    assert!(memory.summaries().is_none());
}

#[test]
fn the_embedded_stores_cache_and_lock_wait_are_keys_with_named_limits() {
    let path = std::path::Path::new("config.toml");
    let settings = Settings::parse(
        "[memory.recall]\nmax_cache_mib = 0\nbusy_timeout_ms = 30000\n",
        path,
    )
    .unwrap();
    assert_eq!(settings.memory.recall.max_cache_mib, 0);
    assert_eq!(settings.memory.recall.busy_timeout_ms, 30_000);
    let defaults = Settings::parse("", path).unwrap();
    assert_eq!(defaults.memory.recall.max_cache_mib, 64);
    assert_eq!(defaults.memory.recall.busy_timeout_ms, 5_000);
    for (text, key) in [
        ("max_cache_mib = 65537", "memory.recall.max_cache_mib"),
        ("busy_timeout_ms = -1", "memory.recall.busy_timeout_ms"),
        ("busy_timeout_ms = 600001", "memory.recall.busy_timeout_ms"),
    ] {
        let e = Settings::parse(&format!("[memory.recall]\n{text}\n"), path).unwrap_err();
        assert!(e.to_string().contains(key), "{text}: {e}");
    }
}

#[test]
fn a_server_stores_timeout_and_token_variable_are_keys() {
    let path = std::path::Path::new("config.toml");
    let settings = Settings::parse(
        "[memory.recall]\ntimeout_ms = 2500\ntoken_env = \"CHROMA_TOKEN\"\n",
        path,
    )
    .unwrap();
    assert_eq!(settings.memory.recall.timeout_ms, 2_500);
    assert_eq!(
        settings.memory.recall.token_env.as_deref(),
        Some("CHROMA_TOKEN")
    );
    let defaults = Settings::parse("", path).unwrap();
    assert_eq!(defaults.memory.recall.timeout_ms, 30_000);
    assert_eq!(defaults.memory.recall.token_env, None);
    for (text, key) in [
        ("timeout_ms = 0", "memory.recall.timeout_ms"),
        ("token_env = \"\"", "memory.recall.token_env"),
    ] {
        let e = Settings::parse(&format!("[memory.recall]\n{text}\n"), path).unwrap_err();
        assert!(e.to_string().contains(key), "{text}: {e}");
    }
}

#[test]
fn overrides_replace_only_the_settings_they_give() {
    let configured = parse(
        "[memory]\nstrategy = \"window\"\n[memory.recall]\nk = 7\nmin_similarity = 0.5\nmax_chars = 900\n",
    )
    .unwrap()
    .memory;
    assert_eq!(
        configured.clone().overridden(&MemoryOverrides::default()),
        configured
    );
    let over = configured.clone().overridden(&MemoryOverrides {
        strategy: Some(Strategy::Recall),
        k: Some(2),
        min_similarity: Some(-0.25),
        max_chars: Some(40),
        store: Some(Store::Server("http://127.0.0.1:6333".to_owned())),
    });
    assert_eq!(over.strategy, Strategy::Recall);
    assert_eq!(
        (
            over.recall.k,
            over.recall.min_similarity,
            over.recall.max_chars
        ),
        (2, -0.25, 40)
    );
    assert_eq!(
        over.recall.store,
        Store::Server("http://127.0.0.1:6333".to_owned())
    );
    let kept = configured.overridden(&MemoryOverrides {
        k: Some(3),
        ..MemoryOverrides::default()
    });
    assert_eq!(kept.strategy, Strategy::Window);
    assert_eq!(
        (
            kept.recall.k,
            kept.recall.min_similarity,
            kept.recall.max_chars
        ),
        (3, 0.5, 900)
    );
}
