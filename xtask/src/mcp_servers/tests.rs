//! Tests for the MCP server cache: where it is, its layout, and when its stamps let a run skip
//! installing.

use super::*;

/// The paths the MCP tests start the servers from: changing them breaks those tests.
#[test]
fn layout_is_the_one_the_tests_rely_on() {
    let cache = Path::new("/c");
    let npm = Part::Npm.entry_points(&Part::Npm.dir(cache));
    let pip = Part::Pip.entry_points(&Part::Pip.dir(cache));
    let npm: Vec<&str> = npm.iter().map(|p| p.to_str().unwrap()).collect();
    let pip: Vec<&str> = pip.iter().map(|p| p.to_str().unwrap()).collect();
    assert_eq!(
        npm,
        [
            "/c/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
            "/c/npm/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js",
            "/c/npm/node_modules/@modelcontextprotocol/server-memory/dist/index.js",
        ]
    );
    assert_eq!(
        pip,
        [
            "/c/venv/bin/python",
            "/c/venv/bin/mcp-server-time",
            "/c/venv/bin/mcp-server-fetch",
            "/c/venv/bin/mcp-server-git",
        ]
    );
}

#[test]
fn requirements_pin_exact_versions() {
    assert_eq!(
        Part::Npm.requirements(),
        [
            "@modelcontextprotocol/server-everything@2026.8.31",
            "@modelcontextprotocol/server-filesystem@2026.8.31",
            "@modelcontextprotocol/server-memory@2026.8.31",
        ]
    );
    assert_eq!(
        Part::Pip.requirements(),
        [
            "mcp-server-fetch==2026.10.24",
            "mcp-server-git==2026.10.19",
            "mcp-server-time==2026.10.19",
        ]
    );
}

#[test]
fn stamp_round_trips_through_its_text() {
    let stamp = Stamp::pinned();
    let text = stamp.to_text();
    assert!(text.ends_with("}\n"), "{text}");
    let value: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        value["npm"]["@modelcontextprotocol/server-everything"],
        "2026.8.31"
    );
    assert_eq!(value["pip"]["mcp-server-fetch"], "2026.10.24");
    assert_eq!(Stamp::parse(&text), Some(stamp));
}

#[test]
fn stamp_parse_takes_both_parts_and_ignores_other_keys() {
    let stamp = Stamp::parse(r#"{"npm": {"a": "1"}, "pip": {}, "note": 3}"#).unwrap();
    assert_eq!(
        stamp.npm,
        Versions::from([("a".to_owned(), "1".to_owned())])
    );
    assert!(stamp.pip.is_empty());
    assert_ne!(stamp, Stamp::pinned());
}

#[track_caller]
fn check_parse_rejects(text: &str) {
    assert_eq!(Stamp::parse(text), None, "{text:?}");
}

#[test]
fn stamp_parse_rejects_missing_parts_and_malformed_versions() {
    check_parse_rejects("");
    check_parse_rejects("{");
    check_parse_rejects("[]");
    check_parse_rejects(r#"{"npm": {}}"#);
    check_parse_rejects(r#"{"pip": {}}"#);
    check_parse_rejects(r#"{"npm": [], "pip": {}}"#);
    check_parse_rejects(r#"{"npm": {"a": 1}, "pip": {}}"#);
    check_parse_rejects(r#"{"npm": {}, "pip": {"a": null}}"#);
}

fn versions(pairs: &[(&str, &str)]) -> Versions {
    pairs
        .iter()
        .map(|(name, version)| ((*name).to_owned(), (*version).to_owned()))
        .collect()
}

#[test]
fn differences_name_each_wrong_missing_and_extra_version() {
    let pinned = versions(&[("a", "1"), ("b", "2"), ("c", "3")]);
    assert!(differences(&pinned, &pinned).is_empty());
    assert_eq!(
        differences(&pinned, &versions(&[("a", "1"), ("b", "9"), ("d", "4")])),
        ["b 9 (pinned 2)", "no c (pinned 3)", "d 4 (not pinned)"]
    );
    assert_eq!(
        differences(&pinned, &versions(&[("a", "-"), ("b", "2"), ("c", "3")])),
        ["no a (pinned 1)"]
    );
}

#[test]
fn version_lines_parse_into_versions() {
    assert_eq!(
        parse_version_lines("mcp-server-time 2026.10.19\nmcp-server-git -\n\nnoise\n"),
        versions(&[("mcp-server-time", "2026.10.19"), ("mcp-server-git", "-")])
    );
}

#[test]
fn tail_quotes_the_end_of_stderr_else_stdout() {
    assert_eq!(
        tail(b"warn\n\nERROR: no such version\n", b"out"),
        "; its stderr:\n    warn\n    ERROR: no such version"
    );
    assert_eq!(
        tail(b" \n", b"npm error 404\n"),
        "; its stdout:\n    npm error 404"
    );
    assert_eq!(tail(b"", b"\n"), ", printing nothing");
    let long: String = (1..=40).map(|i| format!("line {i}\n")).collect();
    let quoted = tail(long.as_bytes(), b"");
    assert!(
        quoted.starts_with("; its stderr ends:\n    line 26\n"),
        "{quoted}"
    );
    assert!(quoted.ends_with("\n    line 40"), "{quoted}");
    assert_eq!(quoted.lines().count(), 1 + TAIL_LINES);
}

#[test]
fn commands_show_as_a_shell_would_take_them() {
    let mut command = Command::new("npm");
    command.args(["install", "@scope/pkg@1.0", "it's here", ""]);
    assert_eq!(
        show(&command),
        r#"npm install @scope/pkg@1.0 'it'\''s here' ''"#
    );
}

/// A fresh directory under the temp dir, removed by the caller.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "claij-xtask-mcp-servers-{name}-{}",
        std::process::id()
    ));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// Puts every entry point and each part's stamp in `cache`, as a finished install leaves them.
fn fake_install(cache: &Path) {
    for part in [Part::Npm, Part::Pip] {
        let part_dir = part.dir(cache);
        for path in part.entry_points(&part_dir) {
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, b"").unwrap();
        }
        let text = serde_json::to_string(&versions_value(&part.pinned())).unwrap();
        fs::write(part_dir.join(PART_STAMP), text).unwrap();
    }
}

#[test]
fn check_says_why_a_part_is_not_vouched_for() {
    let cache = scratch("check");
    let venv = Part::Pip.dir(&cache);
    let missing = Part::Pip.check(&venv);
    fake_install(&cache);
    let installed = Part::Pip.check(&venv);
    fs::remove_file(venv.join("bin/mcp-server-git")).unwrap();
    let no_script = Part::Pip.check(&venv);
    fs::write(venv.join(PART_STAMP), r#"{"mcp-server-time": "1"}"#).unwrap();
    let outdated = Part::Pip.check(&venv);
    fs::write(venv.join(PART_STAMP), "not json").unwrap();
    let malformed = Part::Pip.check(&venv);
    fs::remove_dir_all(&cache).unwrap();
    assert_eq!(missing, Err("not installed yet".to_owned()));
    assert_eq!(installed, Ok(()));
    assert_eq!(
        no_script,
        Err(format!(
            "{} is missing",
            venv.join("bin/mcp-server-git").display()
        ))
    );
    assert_eq!(
        outdated,
        Err(
            "installed no mcp-server-fetch (pinned 2026.10.24), no mcp-server-git (pinned 2026.10.19), \
             mcp-server-time 1 (pinned 2026.10.19)"
                .to_owned()
        )
    );
    assert_eq!(
        malformed,
        Err(format!("{} is malformed", venv.join(PART_STAMP).display()))
    );
}

/// With both parts vouched for, `ensure_in` runs neither npm nor pip: it only writes servers.json.
#[test]
fn ensure_in_only_restamps_parts_that_are_vouched_for() {
    let cache = scratch("ensure");
    fake_install(&cache);
    let incomplete = is_complete(&cache);
    let ensured = ensure_in(&cache, false);
    let complete = is_complete(&cache);
    let stamp = fs::read_to_string(cache.join(STAMP)).unwrap();
    fs::remove_file(Part::Npm.entry_points(&Part::Npm.dir(&cache))[0].clone()).unwrap();
    let entry_point_gone = is_complete(&cache);
    fs::remove_dir_all(&cache).unwrap();
    ensured.unwrap();
    assert!(!incomplete);
    assert!(complete);
    assert_eq!(Stamp::parse(&stamp), Some(Stamp::pinned()));
    assert!(!entry_point_gone);
}

#[test]
fn replace_dir_swaps_in_the_new_tree() {
    let cache = scratch("replace");
    fs::create_dir_all(cache.join("npm")).unwrap();
    fs::write(cache.join("npm/old"), b"").unwrap();
    let new = temp_path(&cache, "npm");
    fs::create_dir_all(&new).unwrap();
    fs::write(new.join("new"), b"").unwrap();
    replace_dir(&cache, &new, "npm").unwrap();
    let mut names: Vec<String> = fs::read_dir(&cache)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let has_new = cache.join("npm/new").is_file();
    fs::remove_dir_all(&cache).unwrap();
    assert_eq!(names, ["npm"]);
    assert!(has_new);
}
