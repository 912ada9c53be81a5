//! Unit tests of the structured-output cache file: where it is, reading it back, hostile contents,
//! merging lessons.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::OsString;
use std::path::PathBuf;

use claij_backends::openai::{Remembered, StructuredDialect};

use super::{MAX_BYTES, MAX_ENTRIES, notice, parse, path, read, render, save};

fn entry(base_url: &str, model: &str, dialect: StructuredDialect) -> Remembered {
    Remembered {
        base_url: base_url.to_owned(),
        model: model.to_owned(),
        dialect,
    }
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "claij-structured-cache-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[track_caller]
fn check_path(vars: &[(&str, &str)], expected: Option<&str>) {
    let var = |name: &str| {
        vars.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| OsString::from(v))
    };
    assert_eq!(path(var), expected.map(PathBuf::from), "{vars:?}");
}

#[test]
fn where_the_file_is() {
    check_path(
        &[("XDG_CACHE_HOME", "/x"), ("HOME", "/h")],
        Some("/x/claij/structured-output.json"),
    );
    check_path(
        &[("XDG_CACHE_HOME", "relative"), ("HOME", "/h")],
        Some("/h/.cache/claij/structured-output.json"),
    );
    check_path(
        &[("XDG_CACHE_HOME", ""), ("HOME", "/h")],
        Some("/h/.cache/claij/structured-output.json"),
    );
    check_path(&[], None);
}

#[test]
fn entries_survive_a_round_trip() {
    let entries = vec![
        entry("http://127.0.0.1:8080/v1", "smol", StructuredDialect::Tools),
        entry(
            "http://h:11434/v1",
            "qwen",
            StructuredDialect::JsonObjectSchema,
        ),
    ];
    let text = render(&entries);
    insta::assert_snapshot!(text);
    assert_eq!(parse(&text), entries);
}

#[track_caller]
fn check_parse(text: &str, expected: usize) {
    assert_eq!(parse(text).len(), expected, "{text}");
}

#[test]
fn hostile_files_count_as_empty_or_lose_bad_entries() {
    check_parse("", 0);
    check_parse("not json", 0);
    check_parse("[]", 0);
    check_parse(r#"{"version": 2, "servers": []}"#, 0);
    check_parse(r#"{"version": 1, "servers": {}}"#, 0);
    check_parse(
        r#"{"version": 1, "servers": [
            {"base_url": "http://a/v1", "model": "m", "structured_output": "grammar"},
            {"base_url": 3, "model": "m", "structured_output": "tools"},
            {"model": "m", "structured_output": "tools"},
            {"base_url": "http://a/v1", "model": "m", "structured_output": "prompted"}]}"#,
        1,
    );
    // 100k-deep nesting: serde_json's recursion limit answers, no stack overflow.
    check_parse(&"[".repeat(100_000), 0);
}

#[test]
fn an_oversized_file_is_ignored() {
    let dir = temp_dir("big");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("structured-output.json");
    let one = entry("http://a/v1", "m", StructuredDialect::Tools);
    let mut text = render(&[one]);
    text.push_str(&" ".repeat(usize::try_from(MAX_BYTES).unwrap()));
    std::fs::write(&file, text).unwrap();
    assert!(read(&file).is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn saving_merges_with_what_is_there() {
    let dir = temp_dir("merge");
    let file = dir.join("claij").join("structured-output.json");
    save(&file, &entry("http://a/v1", "m", StructuredDialect::Tools)).unwrap();
    save(
        &file,
        &entry("http://b/v1", "m", StructuredDialect::Prompted),
    )
    .unwrap();
    save(
        &file,
        &entry("http://a/v1", "m", StructuredDialect::JsonObjectSchema),
    )
    .unwrap();
    assert_eq!(
        read(&file),
        [
            entry("http://b/v1", "m", StructuredDialect::Prompted),
            entry("http://a/v1", "m", StructuredDialect::JsonObjectSchema),
        ]
    );
    // Malformed contents are replaced, not kept.
    std::fs::write(&file, "{").unwrap();
    save(&file, &entry("http://c/v1", "m", StructuredDialect::Tools)).unwrap();
    assert_eq!(read(&file).len(), 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_file_keeps_the_newest_entries() {
    let dir = temp_dir("cap");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("structured-output.json");
    let many: Vec<Remembered> = (0..MAX_ENTRIES)
        .map(|i| entry(&format!("http://h{i}/v1"), "m", StructuredDialect::Tools))
        .collect();
    std::fs::write(&file, render(&many)).unwrap();
    save(
        &file,
        &entry("http://new/v1", "m", StructuredDialect::Tools),
    )
    .unwrap();
    let kept = read(&file);
    assert_eq!(kept.len(), MAX_ENTRIES);
    assert_eq!(kept[0].base_url, "http://h1/v1");
    assert_eq!(kept[MAX_ENTRIES - 1].base_url, "http://new/v1");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_notice_says_what_and_how_to_choose() {
    let text = notice(
        "mylocal",
        &entry("http://a/v1", "smol", StructuredDialect::Tools),
        "remembered in /c/claij/structured-output.json",
    );
    insta::assert_snapshot!(text);
}
