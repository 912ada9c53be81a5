//! The validator's compiled check against boon on the official JSON-Schema-Test-Suite: every case of
//! draft 2020-12 and draft-07 (with `optional/` and `optional/format/`, format assertions on as claij
//! compiles them; remote references excluded) gets the same verdict from [`Validator::is_valid`],
//! from [`Validator::validate`] and from plain boon, or the test fails naming each disagreement.
//!
//! The suite comes from `cargo xtask schema-suite`, which `cargo xtask test` runs and whose cache it
//! names in `CLAIJ_SCHEMA_SUITE`. Without it the test skips itself, saying so; with `CI=true` it fails.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::path::{Path, PathBuf};

use claij_validation::{FastPath, Validator};
use serde_json::Value;

const DRAFTS: &[(&str, &str)] = &[
    (
        "draft2020-12",
        "https://json-schema.org/draft/2020-12/schema",
    ),
    ("draft7", "http://json-schema.org/draft-07/schema#"),
];

/// The suite's `tests` folder, when `cargo xtask schema-suite` has filled the cache.
fn suite() -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os("CLAIJ_SCHEMA_SUITE")?);
    dir.join("installed.json")
        .is_file()
        .then(|| dir.join("tests"))
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files(&path, out);
        } else if path.extension().is_some_and(|e| e == "json")
            // Remote references need a server at localhost:1234; claij never loads them anyway.
            && path.file_name().is_some_and(|n| n != "refRemote.json")
        {
            out.push(path);
        }
    }
}

#[derive(Default)]
struct Tally {
    cases: usize,
    fast: usize,
    full: usize,
    skipped_schemas: usize,
    disagreements: Vec<String>,
}

#[test]
fn fast_path_agrees_with_boon_on_the_json_schema_test_suite() {
    let Some(root) = suite() else {
        let ci = std::env::var("CI").is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1");
        assert!(
            !ci,
            "CI is set and CLAIJ_SCHEMA_SUITE names no suite: run `cargo xtask schema-suite`"
        );
        eprintln!(
            "skipped: no JSON-Schema-Test-Suite (run `cargo xtask schema-suite` and set CLAIJ_SCHEMA_SUITE)"
        );
        return;
    };
    let mut tally = Tally::default();
    for (draft, uri) in DRAFTS {
        let mut paths = Vec::new();
        files(&root.join(draft), &mut paths);
        assert!(paths.len() > 40, "{draft}: only {} files", paths.len());
        for path in paths {
            let text = std::fs::read_to_string(&path).unwrap();
            let groups: Vec<Value> = serde_json::from_str(&text).unwrap();
            let name = path.strip_prefix(&root).unwrap().display().to_string();
            for group in groups {
                run_group(&name, uri, &group, &mut tally);
            }
        }
    }
    eprintln!(
        "{} cases, {} through the compiled check ({} with no subschema deferred to boon), {} schemas \
         boon refuses skipped",
        tally.cases, tally.fast, tally.full, tally.skipped_schemas
    );
    assert!(
        tally.disagreements.is_empty(),
        "{} disagreements with boon:\n{}",
        tally.disagreements.len(),
        tally.disagreements.join("\n")
    );
    // The compiled check must actually be exercised, not deferred to boon wholesale.
    assert!(tally.cases > 3000, "{}", tally.cases);
    assert!(
        tally.fast * 10 > tally.cases * 7,
        "{} of {}",
        tally.fast,
        tally.cases
    );
}

fn run_group(file: &str, uri: &str, group: &Value, tally: &mut Tally) {
    let mut schema = group["schema"].clone();
    if let Value::Object(map) = &mut schema {
        map.entry("$schema").or_insert_with(|| uri.into());
    }
    let Ok(validator) = Validator::new(&schema) else {
        tally.skipped_schemas += 1;
        return;
    };
    let plain = claij_schema::compile(&schema).unwrap();
    let (schemas, index) = plain.as_boon();
    for case in group["tests"].as_array().unwrap() {
        let data = &case["data"];
        let boon = schemas.validate(data, index).is_ok();
        let fast = validator.is_valid(data);
        let full = validator.validate(data).is_ok();
        tally.cases += 1;
        match validator.fast_path() {
            FastPath::Off => {}
            FastPath::Full => {
                tally.fast += 1;
                tally.full += 1;
            }
            _ => tally.fast += 1,
        }
        if fast != boon || full != boon {
            tally.disagreements.push(format!(
                "{file}: {} / {}: boon {boon}, is_valid {fast}, validate {full} ({:?})",
                group["description"].as_str().unwrap_or(""),
                case["description"].as_str().unwrap_or(""),
                validator.fast_path()
            ));
        }
    }
}
