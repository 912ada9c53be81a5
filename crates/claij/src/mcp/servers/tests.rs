//! Unit tests of the installed servers' configuration: where the cache is, the configuration written for it, and the
//! errors when it is missing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::OsString;
use std::path::PathBuf;

use serde_json::json;

use super::{cache_dir, configuration, roots};

#[track_caller]
fn check_cache_dir(vars: &[(&str, &str)], expected: Option<&str>) {
    let var = |name: &str| {
        vars.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| OsString::from(v))
    };
    assert_eq!(cache_dir(var), expected.map(PathBuf::from), "{vars:?}");
}

#[test]
fn the_cache_is_where_xtask_puts_it() {
    check_cache_dir(
        &[
            ("CLAIJ_MCP_SERVERS", "/s"),
            ("XDG_CACHE_HOME", "/x"),
            ("HOME", "/h"),
        ],
        Some("/s"),
    );
    check_cache_dir(
        &[
            ("CLAIJ_MCP_SERVERS", ""),
            ("XDG_CACHE_HOME", "/x"),
            ("HOME", "/h"),
        ],
        Some("/x/claij/mcp-servers"),
    );
    check_cache_dir(
        &[("XDG_CACHE_HOME", "relative"), ("HOME", "/h")],
        Some("/h/.cache/claij/mcp-servers"),
    );
    check_cache_dir(&[], None);
}

/// A cache laid out as `cargo xtask mcp-servers` leaves it (empty files at the entry points).
struct Cache(PathBuf);

impl Cache {
    fn new(stamp: bool) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "claij-mcp-servers-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        for package in ["server-filesystem", "server-memory", "server-everything"] {
            let dist = dir
                .join("npm/node_modules/@modelcontextprotocol")
                .join(package)
                .join("dist");
            std::fs::create_dir_all(&dist).unwrap();
            std::fs::write(dist.join("index.js"), "").unwrap();
        }
        std::fs::create_dir_all(dir.join("venv/bin")).unwrap();
        for script in ["mcp-server-time", "mcp-server-fetch", "mcp-server-git"] {
            std::fs::write(dir.join("venv/bin").join(script), "").unwrap();
        }
        if stamp {
            std::fs::write(dir.join("servers.json"), "{}").unwrap();
        }
        Cache(dir)
    }

    fn path(&self, rest: &str) -> String {
        self.0.join(rest).to_string_lossy().into_owned()
    }
}

impl Drop for Cache {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn node() -> Option<PathBuf> {
    Some(PathBuf::from("/opt/node/bin/node"))
}

#[test]
fn the_default_servers_with_absolute_commands_and_fs_on_its_roots() {
    let cache = Cache::new(true);
    let roots = [PathBuf::from("/srv/a"), PathBuf::from("/srv/b")];
    let config = configuration(&cache.0, &[], &roots, node).unwrap();
    let npm = |package: &str| {
        cache.path(&format!(
            "npm/node_modules/@modelcontextprotocol/{package}/dist/index.js"
        ))
    };
    assert_eq!(
        config,
        json!({"mcpServers": {
            "fs": {"command": "/opt/node/bin/node", "args": [npm("server-filesystem"), "/srv/a", "/srv/b"]},
            "time": {"command": cache.path("venv/bin/mcp-server-time")},
        },
        "projects": {"docs": {"services": ["fs"], "tools": ["fs.read_text_file"]}}})
    );
    // claij reads what it prints: `--project docs` allows fs's read_text_file alone.
    let parsed = claij_mcp::McpConfig::from_value(&config).unwrap();
    assert_eq!(parsed.servers.len(), 2);
    let docs = parsed.project("docs").unwrap();
    assert!(docs.allows("fs", "read_text_file"));
    assert!(!docs.allows("fs", "write_file"));
    assert!(!docs.allows("time", "get_current_time"));
    // Every server, by name.
    let all: Vec<String> = ["fs", "time", "memory", "fetch", "git", "everything"]
        .map(str::to_owned)
        .to_vec();
    let config = configuration(&cache.0, &all, &roots, node).unwrap();
    assert_eq!(
        config["mcpServers"]["memory"],
        json!({"command": "/opt/node/bin/node", "args": [npm("server-memory")]})
    );
    assert_eq!(
        config["mcpServers"]["fetch"],
        json!({"command": cache.path("venv/bin/mcp-server-fetch")})
    );
    assert_eq!(config["mcpServers"].as_object().unwrap().len(), 6);
    assert_eq!(config["projects"].as_object().unwrap().len(), 1);
}

#[test]
fn servers_picks_some_and_may_name_the_test_server() {
    let cache = Cache::new(true);
    let picked = ["time".to_owned(), "everything".to_owned()];
    let config = configuration(&cache.0, &picked, &[], node).unwrap();
    let everything =
        cache.path("npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert_eq!(
        config,
        json!({"mcpServers": {
            "time": {"command": cache.path("venv/bin/mcp-server-time")},
            "everything": {"command": "/opt/node/bin/node", "args": [everything, "stdio"]},
        }})
    );
    // Without fs, no project (a project naming a server that is not there is refused).
    assert_eq!(config.get("projects"), None);
    // Python servers alone do not need node.
    let config = configuration(&cache.0, &["git".to_owned()], &[], || None).unwrap();
    assert_eq!(
        config["mcpServers"]["git"]["command"],
        cache.path("venv/bin/mcp-server-git")
    );
}

#[test]
fn a_missing_install_says_which_command_installs_it() {
    let unstamped = Cache::new(false);
    let err = configuration(&unstamped.0, &[], &[], node)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        format!(
            "no MCP servers installed in {}: run `cargo xtask mcp-servers` in the claij repository",
            unstamped.0.display()
        )
    );
    let cache = Cache::new(true);
    std::fs::remove_file(cache.0.join("venv/bin/mcp-server-time")).unwrap();
    let err = configuration(&cache.0, &[], &[], node)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(&format!(
            "{} is missing",
            cache.path("venv/bin/mcp-server-time")
        )),
        "{err}"
    );
    assert!(
        err.ends_with("run `cargo xtask mcp-servers` in the claij repository"),
        "{err}"
    );
    let err = configuration(&cache.0, &["fs".to_owned()], &[], || None)
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("node is not on PATH"), "{err}");
}

#[test]
fn the_toml_form_reads_back_as_the_json_one() {
    let cache = Cache::new(true);
    let roots = [PathBuf::from("/srv/with \"quotes\" and \\ backslash")];
    let config = configuration(&cache.0, &[], &roots, node).unwrap();
    let text = super::to_toml(&config);
    assert!(
        text.starts_with("[mcpServers.fs]\ncommand = \"/opt/node/bin/node\"\n"),
        "{text}"
    );
    assert!(
        text.ends_with("\n[projects.docs]\nservices = [\"fs\"]\ntools = [\"fs.read_text_file\"]\n"),
        "{text}"
    );
    let table: toml::Table = toml::from_str(&text).unwrap();
    assert_eq!(serde_json::to_value(&table).unwrap(), config);
}

#[test]
fn roots_are_resolved_and_each_must_be_a_directory() {
    let dir = std::env::temp_dir().join(format!("claij-roots-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("file"), "x").unwrap();
    let resolved = roots(&[dir.join("sub/..").join("sub")]).unwrap();
    assert_eq!(resolved, vec![dir.join("sub").canonicalize().unwrap()]);
    assert_eq!(
        roots(&[]).unwrap(),
        vec![std::env::current_dir().unwrap().canonicalize().unwrap()]
    );
    let file = dir.join("file");
    match roots(&[dir.join("sub"), file.clone()]).unwrap_err() {
        crate::mcp::Error::Io { what, source } => {
            assert_eq!(what, file.display().to_string());
            assert_eq!(source.to_string(), "not a directory");
        }
        other => panic!("{other}"),
    }
    let missing = dir.join("missing");
    match roots(std::slice::from_ref(&missing)).unwrap_err() {
        crate::mcp::Error::Io { what, source } => {
            assert_eq!(what, missing.display().to_string());
            assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
        }
        other => panic!("{other}"),
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_server_is_named_among_the_known_ones() {
    assert_eq!(super::known(" time "), Ok("time".to_owned()));
    let err = super::known("nope").unwrap_err();
    assert!(err.starts_with("expected one of "), "{err}");
    assert!(err.contains("time") && err.contains("fs"), "{err}");
}
