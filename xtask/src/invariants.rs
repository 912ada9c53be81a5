//! Dependency invariants from STYLE.md section 2: the claij→claij edges, and no IO in the pure crates;
//! and the repository stands alone: no source file under `crates/` or `xtask/` points at the team's
//! shared folder beside the repository (fixtures live in `fixtures/`); and the CLI stays thin: at
//! most 5,000 non-test lines under `crates/cli/src`.

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;

pub(crate) mod cycles;

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{Context as _, Result, bail};

use crate::cmd::{self, Cmd};
use crate::metadata::{DepKind, Package, Workspace};

/// The claij crates a crate may depend on directly (normal and build dependencies).
///
/// mcp may also name validation and backends directly: it reaches them through interceptors anyway.
const ALLOWED: &[(&str, Allowed)] = &[
    ("claij-schema", Allowed::Only(&[])),
    ("claij-validation", Allowed::Only(&["claij-schema"])),
    ("claij-backends", Allowed::Only(&[])),
    ("claij-local", Allowed::Only(&["claij-backends"])),
    (
        "claij-interceptors",
        Allowed::Only(&["claij-schema", "claij-validation", "claij-backends"]),
    ),
    (
        "claij-fsm",
        Allowed::Only(&[
            "claij-schema",
            "claij-validation",
            "claij-interceptors",
            "claij-backends",
        ]),
    ),
    (
        "claij-mcp",
        Allowed::Only(&[
            "claij-interceptors",
            "claij-fsm",
            "claij-schema",
            "claij-validation",
            "claij-backends",
        ]),
    ),
    (
        "claij-restate",
        Allowed::Only(&[
            "claij-fsm",
            "claij-interceptors",
            "claij-backends",
            "claij-mcp",
            "claij-schema",
            "claij-validation",
        ]),
    ),
    (TEST_SUPPORT, Allowed::Only(&["claij-backends"])),
    (
        FRONT_DOOR,
        Allowed::Only(&[
            "claij-schema",
            "claij-validation",
            "claij-backends",
            "claij-local",
            "claij-interceptors",
            "claij-fsm",
            "claij-mcp",
            "claij-restate",
        ]),
    ),
    // The binary reaches every layer through the front door (its re-exports).
    ("claij-cli", Allowed::Only(&[FRONT_DOOR])),
    // The test harnesses (`publish = false`, a binary): the live suites, the MCP conformance client.
    ("claij-suite", Allowed::Any),
    ("xtask", Allowed::Only(&[])),
];

/// Crates that must build without IO, and the feature flag they are checked with.
/// Backends' trait and types are always compiled and do no IO; its adapters sit behind features.
const IO_FREE: &[(&str, &str)] = &[
    ("claij-schema", "--all-features"),
    ("claij-validation", "--all-features"),
    ("claij-backends", "--no-default-features"),
];

/// Crates that do IO (their `-sys` crates count too).
const IO_CRATES: &[&str] = &[
    "tokio",
    "reqwest",
    "hyper",
    "mio",
    "async-std",
    "smol",
    "ureq",
    "isahc",
    "curl",
    "openssl",
    "rustls",
    "socket2",
];

/// Crates that take claij-backends without its provider adapters (they only see `dyn Backend`),
/// and whether they may switch on any of its features.
const BACKENDS_WITHOUT_DEFAULTS: &[(&str, bool)] = &[
    ("claij-interceptors", true),
    ("claij-fsm", false),
    ("claij-local", false),
];

/// Crates whose whole dependency tree (every feature, every kind of edge) must hold none of the
/// embedded model's crates: those belong to claij-local alone.
const MODEL_FREE: &[&str] = &["claij-backends"];

/// The embedded model's crates, by name or prefix (`candle-core`, `candle-nn`, ...).
fn is_model_crate(name: &str) -> bool {
    name.starts_with("candle") || ["llguidance", "toktrie", "tokenizers"].contains(&name)
}

/// The embedded model's crates in `cargo tree --prefix none` output of `package`, one violation each.
fn model_crates(package: &str, tree: &str) -> Vec<String> {
    tree_crates(tree)
        .into_iter()
        .filter(|name| is_model_crate(name))
        .map(|found| {
            format!(
                "{package} -> {found}: the embedded model's crates belong to claij-local, not to \
                 {package}'s tree (see `cargo tree -p {package} --all-features -i {found}`)"
            )
        })
        .collect()
}

/// The front door: the crate a user adds first. It may depend on `tracing-subscriber` (its `otel`
/// feature's layers join the application's subscriber; it installs none), not on `anyhow`.
const FRONT_DOOR: &str = "claij";

/// Crates that only the front door's opt-in features (`local`, `mcp`, `restate`, `otel`, `recall`) may bring,
/// by name or prefix: `claij` with `openai` alone holds none of them.
fn is_opt_in_crate(name: &str) -> bool {
    is_model_crate(name)
        || name == "rmcp"
        || name == "restate-sdk"
        || name == "rusqlite"
        || name == "libsqlite3-sys"
        || name.starts_with("opentelemetry")
        || name.starts_with("tracing-opentelemetry")
}

/// The opt-in features' crates in `cargo tree --prefix none` output of the front door with
/// `openai` only, one violation each.
fn opt_in_crates(tree: &str) -> Vec<String> {
    tree_crates(tree)
        .into_iter()
        .filter(|name| is_opt_in_crate(name))
        .map(|found| {
            format!(
                "{FRONT_DOOR} -> {found}: with `--no-default-features --features openai` the front \
                 door must not build {found} (see `cargo tree -p {FRONT_DOOR} --no-default-features \
                 --features openai -i {found}`): put it behind its feature"
            )
        })
        .collect()
}

/// Only applications use these: libraries return typed errors and never install a subscriber (the
/// test-support crate, [`TEST_SUPPORT`], may).
const APPLICATION_ONLY: &[&str] = &["anyhow", "tracing-subscriber"];

/// The crates other than claij's the CLI may depend on (normal dependencies): argument parsing, the
/// terminal, the runtime its commands run on, logging, and the JSON, TOML and durations it reads
/// and prints. Anything else is the front door's to depend on and the CLI's to reach through it.
const CLI_OUTSIDE: &[&str] = &[
    "anyhow",
    "clap",
    "futures-util",
    "humantime",
    "rustyline",
    "serde",
    "serde_json",
    "tokio",
    "toml",
    "tracing",
    "tracing-subscriber",
];

/// The workspace's test support (`publish = false`, other crates' dev-dependency only): its span
/// capture installs a subscriber, which a library may not.
const TEST_SUPPORT: &str = "claij-test-support";

#[derive(Debug, Clone, Copy)]
enum Allowed {
    Only(&'static [&'static str]),
    Any,
}

/// Checks every invariant, printing one line per violation; fails if there is any.
pub(crate) fn check() -> Result<()> {
    let workspace = Workspace::load()?;
    let mut violations = manifest_violations(&workspace.packages);
    let checked = workspace
        .packages
        .iter()
        .filter(|p| is_claij(&p.name) || p.name == "xtask")
        .count();
    println!("checked the direct dependencies of {checked} crates against STYLE.md section 2");
    for &(name, features) in IO_FREE {
        if workspace.package(name).is_none() {
            println!("{name}: not in the workspace yet, skipped");
            continue;
        }
        let tree = Cmd::cargo()
            .args(["tree", "-p", name, "-e", "normal", "--prefix", "none"])
            .args([features, "--target", "all"])
            .read()?;
        let found = io_crates(&tree);
        println!(
            "{name} ({features}): {} crates in its normal dependency tree, {} IO crates",
            tree_crates(&tree).len(),
            found.len()
        );
        violations.extend(found.into_iter().map(|io| {
            format!(
                "{name} -> {io}: {name} must not pull in IO with {features} \
                 (see `cargo tree -p {name} -e normal {features} --target all -i {io}`)"
            )
        }));
    }
    for &name in MODEL_FREE {
        if workspace.package(name).is_none() {
            println!("{name}: not in the workspace yet, skipped");
            continue;
        }
        let tree = Cmd::cargo()
            .args(["tree", "-p", name, "--prefix", "none", "--all-features"])
            .args(["--target", "all"])
            .read()?;
        let found = model_crates(name, &tree);
        println!(
            "{name} (--all-features, every edge): {} crates in its dependency tree, {} of the embedded model's",
            tree_crates(&tree).len(),
            found.len()
        );
        violations.extend(found);
    }
    if workspace.package(FRONT_DOOR).is_some() {
        let tree = Cmd::cargo()
            .args(["tree", "-p", FRONT_DOOR, "-e", "normal", "--prefix", "none"])
            .args([
                "--no-default-features",
                "--features",
                "openai",
                "--target",
                "all",
            ])
            .read()?;
        let found = opt_in_crates(&tree);
        println!(
            "claij (--no-default-features --features openai): {} crates in its normal dependency \
             tree, {} of the opt-in features'",
            tree_crates(&tree).len(),
            found.len()
        );
        violations.extend(found);
    }
    let features = |selection: &[&str]| -> Result<String> {
        Cmd::cargo()
            .args([
                "tree",
                "-e",
                "normal,build",
                "--prefix",
                "none",
                "-f",
                "{p}|{f}",
            ])
            .args(selection)
            .read()
    };
    let drift = feature_drift(
        &features(&["-p", "claij-cli"])?,
        &features(&["--workspace"])?,
    );
    println!(
        "claij-cli alone and the workspace build its dependencies with the same features: {}",
        if drift.is_empty() { "yes" } else { "no" }
    );
    violations.extend(drift);
    let graph = cycles::Graph::read(&cmd::root().join("crates/cli/src"))?;
    let found = graph.cycles();
    println!(
        "module cycles in claij-cli (a module naming one that names it back): {}",
        found.len()
    );
    violations.extend(found.iter().map(|cycle| {
        format!(
            "claij-cli: modules that name each other: {} ({}); move what both need into the \
             front door (crates/claij) or into the one that is used",
            cycle.join(", "),
            graph.edges_within(cycle).join(", ")
        )
    }));
    let lines = cli_lines(&cmd::root().join(CLI_SRC))?;
    println!("non-test lines in {CLI_SRC}: {lines} (at most {MAX_CLI_LINES})");
    violations.extend(cli_size(lines));
    let outside = outside_references(&cmd::root())?;
    println!(
        "source files under {}/ that point outside the repository: {}",
        STANDALONE.join("/ and "),
        outside.len()
    );
    violations.extend(outside);
    if violations.is_empty() {
        println!("dependency invariants hold");
        return Ok(());
    }
    for violation in &violations {
        println!("violation: {violation}");
    }
    bail!("{} dependency invariant violation(s)", violations.len())
}

/// Packages that `cargo build -p claij-cli` (`cli`, a `cargo tree -f "{p}|{f}"` listing) would build
/// with other features than a plain `cargo build` of the workspace (`workspace`): each is built twice,
/// so `cargo xtask demo` after `cargo build --release` would rebuild them (a workspace build turns on a
/// member's `default` features, for one).
fn feature_drift(cli: &str, workspace: &str) -> Vec<String> {
    let parse = |tree: &str| -> std::collections::BTreeMap<String, String> {
        tree.lines()
            .filter_map(|line| line.trim_end_matches(" (*)").split_once('|'))
            .map(|(package, features)| (package.trim().to_owned(), features.trim().to_owned()))
            .collect()
    };
    let workspace = parse(workspace);
    parse(cli)
        .into_iter()
        .filter_map(|(package, features)| {
            let other = workspace.get(&package)?;
            (*other != features).then(|| {
                format!(
                    "{package}: built with features [{features}] for claij-cli alone and [{other}] in a \
                     workspace build, so the demo's `cargo build -p claij-cli` rebuilds it after `cargo \
                     build`; name the missing features in claij-cli's dependency on it"
                )
            })
        })
        .collect()
}

/// Violations visible in the manifests alone: claij→claij edges, backends features, application-only crates.
fn manifest_violations(packages: &[Package]) -> Vec<String> {
    let mut violations = Vec::new();
    for package in packages {
        let name = package.name.as_str();
        if !is_claij(name) && name != "xtask" {
            continue;
        }
        let Some(&(_, allowed)) = ALLOWED.iter().find(|(crate_name, _)| *crate_name == name) else {
            violations.push(format!(
                "{name}: not in the dependency table; add a row to STYLE.md section 2 and to ALLOWED in xtask/src/invariants.rs"
            ));
            continue;
        };
        for dep in package.non_dev_dependencies() {
            if name == "claij-cli"
                && !is_claij(&dep.name)
                && !CLI_OUTSIDE.contains(&dep.name.as_str())
            {
                violations.push(format!(
                    "claij-cli -> {}: the CLI depends on the front door and on {} only; reach it \
                     through claij (a re-export or a front-door item)",
                    dep.name,
                    CLI_OUTSIDE.join(", ")
                ));
            }
            if is_claij(&dep.name) && !allows(allowed, &dep.name) {
                violations.push(format!(
                    "{name} -> {}: not allowed ({name} may depend on {})",
                    dep.name,
                    describe(allowed)
                ));
            }
            if is_library(package)
                && APPLICATION_ONLY.contains(&dep.name.as_str())
                && name != TEST_SUPPORT
                && !(name == FRONT_DOOR && dep.name == "tracing-subscriber")
            {
                violations.push(format!(
                    "{name} -> {}: only claij-cli and xtask may depend on {}",
                    dep.name, dep.name
                ));
            }
        }
        if let Some(&(_, features_ok)) = BACKENDS_WITHOUT_DEFAULTS.iter().find(|(n, _)| *n == name)
        {
            let deps = package
                .dependencies
                .iter()
                .filter(|d| d.kind == DepKind::Normal);
            for dep in deps.filter(|d| d.name == "claij-backends") {
                if dep.uses_default_features || (!features_ok && !dep.features.is_empty()) {
                    let wanted = if features_ok {
                        "default-features = false"
                    } else {
                        "default-features = false and no features"
                    };
                    violations.push(format!(
                        "{name} -> claij-backends: must use {wanted} (it only sees `dyn Backend`)"
                    ));
                }
            }
        }
    }
    violations
}

/// A claij library crate: `claij` or `claij-*` with a lib target, other than the CLI.
fn is_library(package: &Package) -> bool {
    is_claij(&package.name) && package.name != "claij-cli" && package.has_lib
}

/// One of the workspace's crates: the front door `claij`, or `claij-*`.
fn is_claij(name: &str) -> bool {
    name == FRONT_DOOR || name.starts_with("claij-")
}

fn allows(allowed: Allowed, dep: &str) -> bool {
    match allowed {
        Allowed::Any => true,
        Allowed::Only(names) => names.contains(&dep),
    }
}

fn describe(allowed: Allowed) -> String {
    match allowed {
        Allowed::Any => "any claij crate".to_owned(),
        Allowed::Only([]) => "no claij crate".to_owned(),
        Allowed::Only(names) => names.join(", "),
    }
}

/// The crate names in `cargo tree --prefix none` output (`name vX.Y.Z (path) (*)` per line).
fn tree_crates(tree: &str) -> BTreeSet<&str> {
    tree.lines()
        .filter_map(|line| line.split_whitespace().next())
        .collect()
}

/// The IO crates in `cargo tree --prefix none` output.
fn io_crates(tree: &str) -> Vec<String> {
    tree_crates(tree)
        .into_iter()
        .filter(|name| is_io(name))
        .map(str::to_owned)
        .collect()
}

fn is_io(name: &str) -> bool {
    let base = name.strip_suffix("-sys").unwrap_or(name);
    IO_CRATES.contains(&base)
}

/// The folders (from the repository's root) whose Rust and TOML files must not point outside it.
const STANDALONE: &[&str] = &["crates", "xtask"];

/// Every line of a `.rs` or `.toml` file under [`STANDALONE`] that points at the shared folder
/// beside the repository, as `path:line: ...` (a clone has no such folder: the file belongs in
/// `fixtures/`).
fn outside_references(root: &Path) -> Result<Vec<String>> {
    let patterns = outside_patterns();
    let mut found = Vec::new();
    for top in STANDALONE {
        let mut files = Vec::new();
        source_files(&root.join(top), &mut files)?;
        files.sort();
        for file in files {
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("cannot read {}", file.display()))?;
            let shown = file
                .strip_prefix(root)
                .unwrap_or(&file)
                .display()
                .to_string();
            found.extend(outside_lines(&shown, &text, &patterns));
        }
    }
    Ok(found)
}

/// The CLI's source: argument parsing, printing and exit codes over the front door.
const CLI_SRC: &str = "crates/cli/src";

/// The most non-test lines [`CLI_SRC`] may hold: logic beyond them belongs in the front door.
const MAX_CLI_LINES: usize = 5000;

/// The lines of the `.rs` files under `dir`, but `tests.rs` files and those under a `tests` folder.
fn cli_lines(dir: &Path) -> Result<usize> {
    let mut files = Vec::new();
    source_files(dir, &mut files)?;
    let mut lines = 0;
    for file in files {
        let test = file.file_name().is_some_and(|name| name == "tests.rs")
            || file
                .strip_prefix(dir)
                .is_ok_and(|rel| rel.components().any(|c| c.as_os_str() == "tests"));
        if test || file.extension().is_none_or(|ext| ext != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("cannot read {}", file.display()))?;
        lines += text.lines().count();
    }
    Ok(lines)
}

/// The violation when the CLI holds more than [`MAX_CLI_LINES`] non-test lines.
fn cli_size(lines: usize) -> Option<String> {
    (lines > MAX_CLI_LINES).then(|| {
        format!(
            "{CLI_SRC}: {lines} non-test lines, more than {MAX_CLI_LINES}: the CLI is argument \
             parsing, printing and exit codes; move logic into the front door (crates/claij)"
        )
    })
}

/// What a path to the shared folder beside the repository looks like in source: the parent
/// folder's `shared`, a `join` of `"shared"`, or `shared/` followed by one of its folders. Built
/// from pieces, so that this file does not match itself.
fn outside_patterns() -> Vec<String> {
    let shared = "shared";
    let mut patterns = vec![format!("../{shared}"), format!("join(\"{shared}\")")];
    patterns.extend(
        [
            "bench",
            "providers",
            "corpora",
            "design",
            "notes",
            "hooks",
            "STYLE.md",
        ]
        .iter()
        .map(|folder| format!("{shared}/{folder}")),
    );
    patterns
}

/// The lines of `text` (the file `shown`) that contain one of `patterns`, each as a violation.
fn outside_lines(shown: &str, text: &str, patterns: &[String]) -> Vec<String> {
    text.lines()
        .enumerate()
        .filter_map(|(index, line)| {
            let pattern = patterns.iter().find(|p| line.contains(p.as_str()))?;
            Some(format!(
                "{shown}:{}: refers to `{pattern}`, outside the repository (a clone has no such \
                 folder): copy the file into fixtures/ with its provenance and read it through \
                 fixtures/fixture.rs",
                index + 1
            ))
        })
        .collect()
}

/// The `.rs` and `.toml` files under `dir`, recursively, skipping `target` and hidden folders.
fn source_files(dir: &Path, files: &mut Vec<std::path::PathBuf>) -> Result<()> {
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("cannot list {}", dir.display()))?;
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let kind = entry
            .file_type()
            .with_context(|| format!("cannot stat {}", path.display()))?;
        if kind.is_dir() {
            if name != "target" && !name.starts_with('.') {
                source_files(&path, files)?;
            }
        } else if kind.is_file() && (name.ends_with(".rs") || name.ends_with(".toml")) {
            files.push(path);
        }
    }
    Ok(())
}
