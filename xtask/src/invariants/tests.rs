//! Tests for the dependency invariants, on hand-written `cargo metadata` and `cargo tree` output.

use super::*;

#[track_caller]
fn check(packages: &[(&str, &[&str])], expected: &[&str]) {
    let json = metadata(packages, |_| (true, Vec::new()));
    let workspace = Workspace::parse(&json).unwrap();
    assert_eq!(manifest_violations(&workspace.packages), expected);
}

/// `cargo metadata --no-deps` output for lib crates with normal dependencies; `backends_dep` gives
/// (uses_default_features, features) for each dependency on claij-backends.
fn metadata(
    packages: &[(&str, &[&str])],
    backends_dep: impl Fn(&str) -> (bool, Vec<&str>),
) -> String {
    let packages: Vec<serde_json::Value> = packages
        .iter()
        .map(|(name, deps)| {
            let deps: Vec<serde_json::Value> = deps
                .iter()
                .map(|dep| {
                    let (defaults, features) = if *dep == "claij-backends" {
                        backends_dep(name)
                    } else {
                        (true, Vec::new())
                    };
                    serde_json::json!({
                        "name": dep, "kind": null,
                        "uses_default_features": defaults, "features": features,
                    })
                })
                .collect();
            let kind = if ["claij-cli", "xtask"].contains(name) {
                "bin"
            } else {
                "lib"
            };
            serde_json::json!({
                "name": name,
                "targets": [{"kind": [kind], "name": name}],
                "dependencies": deps,
            })
        })
        .collect();
    serde_json::json!({"target_directory": "/tmp/target", "packages": packages}).to_string()
}

#[test]
fn allowed_edges_pass() {
    check(
        &[
            ("claij-schema", &["serde_json"]),
            ("claij-validation", &["claij-schema", "boon"]),
            ("claij-cli", &["claij", "clap", "anyhow", "tokio"]),
            (
                "claij-mcp",
                &["claij-fsm", "claij-validation", "claij-backends"],
            ),
            ("xtask", &["anyhow", "serde_json"]),
        ],
        &[],
    );
}

#[test]
fn forbidden_edges_name_both_crates() {
    check(
        &[
            ("claij-schema", &["claij-validation"]),
            ("claij-validation", &["claij-schema", "claij-fsm"]),
            ("xtask", &["claij-schema"]),
            ("claij-restate", &["claij-fsm", "claij-mcp", "claij-cli"]),
        ],
        &[
            "claij-schema -> claij-validation: not allowed (claij-schema may depend on no claij crate)",
            "claij-validation -> claij-fsm: not allowed (claij-validation may depend on claij-schema)",
            "xtask -> claij-schema: not allowed (xtask may depend on no claij crate)",
            "claij-restate -> claij-cli: not allowed (claij-restate may depend on claij-fsm, claij-interceptors, claij-backends, claij-mcp, claij-schema, claij-validation)",
        ],
    );
}

#[test]
fn unknown_claij_crate_needs_a_row() {
    check(
        &[("claij-extra", &[]), ("unrelated", &["claij-fsm"])],
        &[
            "claij-extra: not in the dependency table; add a row to STYLE.md section 2 and to ALLOWED in xtask/src/invariants.rs",
        ],
    );
}

#[test]
fn libraries_do_not_use_application_crates() {
    check(
        &[("claij-fsm", &["anyhow", "tracing-subscriber"])],
        &[
            "claij-fsm -> anyhow: only claij-cli and xtask may depend on anyhow",
            "claij-fsm -> tracing-subscriber: only claij-cli and xtask may depend on tracing-subscriber",
        ],
    );
}

#[test]
fn dev_dependencies_are_not_edges() {
    let json = r#"{"target_directory": "/t", "packages": [{"name": "claij-schema",
        "targets": [{"kind": ["lib"]}],
        "dependencies": [{"name": "claij-validation", "kind": "dev", "uses_default_features": true, "features": []}]}]}"#;
    let workspace = Workspace::parse(json).unwrap();
    assert_eq!(
        manifest_violations(&workspace.packages),
        Vec::<String>::new()
    );
}

#[test]
fn pipeline_takes_backends_without_adapters() {
    let packages: &[(&str, &[&str])] = &[
        ("claij-interceptors", &["claij-backends"]),
        ("claij-fsm", &["claij-backends"]),
    ];
    let check_backends = |dep: fn(&str) -> (bool, Vec<&str>), expected: &[&str]| {
        let workspace = Workspace::parse(&metadata(packages, dep)).unwrap();
        assert_eq!(manifest_violations(&workspace.packages), expected);
    };
    check_backends(|_| (false, Vec::new()), &[]);
    check_backends(
        |_| (false, vec!["mock"]),
        &[
            "claij-fsm -> claij-backends: must use default-features = false and no features (it only sees `dyn Backend`)",
        ],
    );
    check_backends(
        |_| (true, Vec::new()),
        &[
            "claij-interceptors -> claij-backends: must use default-features = false (it only sees `dyn Backend`)",
            "claij-fsm -> claij-backends: must use default-features = false and no features (it only sees `dyn Backend`)",
        ],
    );
}

#[test]
fn io_crates_in_tree_output() {
    let tree = "\
claij-validation v0.1.0 (/work/crates/validation)
boon v0.6.1
claij-schema v0.1.0 (/work/crates/schema)
tokio v1.40.0
mio v1.0.2
mio v1.0.2 (*)
openssl-sys v0.9.0
rustls-pki-types v1.0.0
smol_str v0.2.0
";
    assert_eq!(io_crates(tree), ["mio", "openssl-sys", "tokio"]);
    assert_eq!(
        io_crates("claij-schema v0.1.0 (/w)\nserde v1.0.0\n"),
        Vec::<String>::new()
    );
}

#[test]
fn the_embedded_models_crates_in_backends_tree_are_named() {
    let tree = "\
claij-backends v0.1.0 (/work/crates/backends)
serde v1.0.0
candle-core v0.11.1
candle-nn v0.11.1
candle-core v0.11.1 (*)
llguidance v1.9.1
toktrie v1.9.1
tokenizers v0.23.2
tokenizers-like v0.1.0
";
    let found = model_crates("claij-backends", tree);
    let named: Vec<&str> = found.iter().map(|v| v.split(':').next().unwrap()).collect();
    assert_eq!(
        named,
        [
            "claij-backends -> candle-core",
            "claij-backends -> candle-nn",
            "claij-backends -> llguidance",
            "claij-backends -> tokenizers",
            "claij-backends -> toktrie",
        ]
    );
    assert!(found[0].contains("belong to claij-local"), "{}", found[0]);
    assert!(
        found[0].contains("cargo tree -p claij-backends --all-features -i candle-core"),
        "{}",
        found[0]
    );
    assert_eq!(
        model_crates(
            "claij-backends",
            "claij-backends v0.1.0 (/w)\nserde v1.0.0\n"
        ),
        Vec::<String>::new()
    );
}

#[test]
fn the_embedded_model_crate_takes_backends_without_features() {
    let json = metadata(
        &[("claij-local", &["claij-backends", "candle-core"])],
        |_| (false, vec!["openai"]),
    );
    let workspace = Workspace::parse(&json).unwrap();
    assert_eq!(
        manifest_violations(&workspace.packages),
        [
            "claij-local -> claij-backends: must use default-features = false and no features (it only sees `dyn Backend`)"
        ]
    );
    let json = metadata(&[("claij-local", &["claij-backends"])], |_| {
        (false, Vec::new())
    });
    let workspace = Workspace::parse(&json).unwrap();
    assert_eq!(
        manifest_violations(&workspace.packages),
        Vec::<String>::new()
    );
    check(
        &[("claij-local", &["claij-interceptors"])],
        &[
            "claij-local -> claij-interceptors: not allowed (claij-local may depend on claij-backends)",
        ],
    );
}

#[test]
fn a_dependency_built_with_other_features_for_the_cli_alone_is_a_violation() {
    let cli = "claij-cli v0.1.0 (/w/crates/cli)|\nclaij-mcp v0.1.0 (/w/crates/mcp)|http\n\
               serde v1.0.0|derive,std\nserde v1.0.0|derive,std (*)\n";
    let workspace = "claij-cli v0.1.0 (/w/crates/cli)|\nclaij-mcp v0.1.0 (/w/crates/mcp)|default,http\n\
                     serde v1.0.0|derive,std\nxtask v0.1.0 (/w/xtask)|\n";
    let drift = feature_drift(cli, workspace);
    assert_eq!(drift.len(), 1, "{drift:?}");
    assert!(
        drift[0].starts_with("claij-mcp v0.1.0 (/w/crates/mcp): built with features [http]"),
        "{}",
        drift[0]
    );
    assert!(feature_drift(workspace, workspace).is_empty());
}

#[test]
fn only_the_test_support_crate_may_use_an_application_crate() {
    let manifest = |name: &str, optional: bool| {
        format!(
            r#"{{"target_directory": "/t", "packages": [{{"name": "{name}",
            "targets": [{{"kind": ["lib"]}}], "features": {{"testing": ["dep:tracing-subscriber"]}},
            "dependencies": [{{"name": "tracing-subscriber", "kind": null, "optional": {optional},
                "uses_default_features": true, "features": []}}]}}]}}"#
        )
    };
    let violations = |name: &str, optional: bool| {
        manifest_violations(
            &Workspace::parse(&manifest(name, optional))
                .unwrap()
                .packages,
        )
    };
    assert_eq!(violations(TEST_SUPPORT, false), Vec::<String>::new());
    // A library may not, not even behind a `testing` feature: test support is its own crate.
    for optional in [false, true] {
        assert_eq!(
            violations("claij-backends", optional),
            [
                "claij-backends -> tracing-subscriber: only claij-cli and xtask may depend on tracing-subscriber"
            ]
        );
    }
}

/// The parent folder's `shared`, spelt in pieces so that this file does not match the check itself.
fn up_to_shared() -> String {
    format!("../{}", "shared")
}

#[test]
fn a_path_to_the_shared_folder_beside_the_repository_is_named_with_file_and_line() {
    let patterns = outside_patterns();
    let text = format!(
        "//! A test.\nlet ok = \"fixtures/bench/big.json\";\nlet bad = Path::new(dir).join(\"../../{}/bench/big.json\");\n\
         // the {}/providers spec\nlet joined = root.join(\"..\").join(\"{}\");\nlet fine = \"a shared schema\";\n",
        up_to_shared(),
        "shared",
        "shared"
    );
    let found = outside_lines("crates/x/tests/it/a.rs", &text, &patterns);
    assert_eq!(found.len(), 3, "{found:#?}");
    assert!(
        found[0].starts_with(&format!(
            "crates/x/tests/it/a.rs:3: refers to `{}`, outside the repository",
            up_to_shared()
        )),
        "{}",
        found[0]
    );
    let line_4 = format!(
        "crates/x/tests/it/a.rs:4: refers to `{}/providers`",
        "shared"
    );
    assert!(found[1].starts_with(&line_4), "{}", found[1]);
    assert!(
        found[2].starts_with("crates/x/tests/it/a.rs:5:"),
        "{}",
        found[2]
    );
    assert!(
        found[0].contains("copy the file into fixtures/"),
        "{}",
        found[0]
    );
}

#[test]
fn the_check_walks_rust_and_toml_files_under_crates_and_xtask_only() {
    let root = std::env::temp_dir().join(format!("claij-invariants-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let write = |path: &str, text: &str| {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    let bad = format!("let p = \"{}/corpora/a.jsonl\";\n", up_to_shared());
    write("crates/x/tests/it/main.rs", &format!("//! Tests.\n{bad}"));
    write("crates/x/Cargo.toml", &format!("[package]\n# {bad}"));
    write("xtask/src/main.rs", "//! Clean.\nfn main() {}\n");
    // Not source, a build output, a hidden folder, outside crates/ and xtask/: not read.
    write("crates/x/tests/it/notes.md", &bad);
    write("crates/x/target/debug/build/out.rs", &bad);
    write("crates/x/.cache/a.rs", &bad);
    write("docs/example.rs", &bad);
    let found = outside_references(&root).unwrap();
    let _ = std::fs::remove_dir_all(&root);
    let places: Vec<&str> = found
        .iter()
        .map(|v| v.split(": refers").next().unwrap())
        .collect();
    assert_eq!(
        places,
        ["crates/x/Cargo.toml:2", "crates/x/tests/it/main.rs:2"],
        "{found:#?}"
    );
}

/// The repository as it is: nothing under crates/ or xtask/ reads the shared folder beside it.
#[test]
fn this_repository_stands_alone() {
    let found = outside_references(&crate::cmd::root()).unwrap();
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_front_door_is_a_library_with_its_own_row() {
    check(
        &[(
            "claij",
            &[
                "claij-interceptors",
                "claij-cli",
                "anyhow",
                "tracing-subscriber",
            ],
        )],
        &[
            "claij -> claij-cli: not allowed (claij may depend on claij-schema, claij-validation, \
             claij-backends, claij-local, claij-interceptors, claij-fsm, claij-mcp, claij-restate)",
            "claij -> anyhow: only claij-cli and xtask may depend on anyhow",
        ],
    );
}

#[test]
fn the_cli_reaches_every_layer_through_the_front_door() {
    check(
        &[(
            "claij-cli",
            &[
                "claij",
                "claij-fsm",
                "clap",
                "reqwest",
                "tracing-subscriber",
            ],
        )],
        &[
            "claij-cli -> claij-fsm: not allowed (claij-cli may depend on claij)",
            "claij-cli -> reqwest: the CLI depends on the front door and on anyhow, clap, \
             futures-util, humantime, rustyline, serde, serde_json, tokio, toml, tracing, \
             tracing-subscriber only; reach it through claij (a re-export or a front-door item)",
        ],
    );
}

#[test]
fn the_front_door_with_openai_alone_holds_no_opt_in_crate() {
    let tree = "claij v0.1.0 (/r/crates/claij)\nclaij-backends v0.1.0\nreqwest v0.12.0\n";
    assert!(opt_in_crates(tree).is_empty());
    let tree = "claij v0.1.0\nrmcp v3.11.0\ncandle-core v0.11.1\nrestate-sdk v0.8.0\n\
                opentelemetry_sdk v0.33.0\ntracing-opentelemetry v0.34.0\nllguidance v1.9.1\n\
                rusqlite v0.43.0\nlibsqlite3-sys v0.40.0\n";
    let found = opt_in_crates(tree);
    assert_eq!(found.len(), 8, "{found:#?}");
    assert!(
        found[0]
            .starts_with("claij -> candle-core: with `--no-default-features --features openai`")
    );
}

/// The CLI's size: `.rs` lines counted but test files and folders; past the bound, a violation
/// naming the count and the rule.
#[test]
fn the_cli_is_at_most_its_bound_of_non_test_lines() {
    let root = std::env::temp_dir().join(format!("claij-cli-lines-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let write = |path: &str, lines: usize| {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "//! x\n".repeat(lines)).unwrap();
    };
    write("main.rs", 3);
    write("ask/report.rs", 4);
    write("ask/tests.rs", 100);
    write("ask/tests/cases.rs", 100);
    write("notes.toml", 100);
    let counted = cli_lines(&root).unwrap();
    let _ = std::fs::remove_dir_all(&root);
    assert_eq!(counted, 7);
    assert_eq!(cli_size(5000), None);
    let violation = cli_size(5001).unwrap();
    assert!(
        violation.starts_with("crates/cli/src: 5001 non-test lines, more than 5000: "),
        "{violation}"
    );
    assert!(
        violation.contains("move logic into the front door"),
        "{violation}"
    );
}
