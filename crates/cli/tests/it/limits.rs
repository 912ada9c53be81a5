//! Hostile inputs to `repair`, `validate`, `schema compose` and the configuration file: every read is
//! bounded, replies without JSON exit 1, schemas that cannot work are refused with their location.

use std::io::Write as _;
use std::process::{Command, Stdio};

use super::{BASE, Files, Run, assert_one_line_error, claij, claij_env};

/// Runs `claij` with raw bytes (not necessarily UTF-8) on stdin.
fn claij_bytes(args: &[&str], stdin: &[u8]) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_claij"))
        .args(args)
        .env_remove("CLAIJ_CONFIG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let written = child.stdin.take().unwrap().write_all(stdin);
    if let Err(e) = written {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
    }
    let out = child.wait_with_output().unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn stdin_and_instances_over_the_limit_are_refused_naming_it() {
    let endless = "y\n".repeat(50_000);
    let run = claij(&["repair", "--max-input-bytes", "1000"], &endless);
    assert_one_line_error(
        &run,
        2,
        "cannot read stdin: larger than 1000 bytes, the limit for an input (--max-input-bytes)",
    );
    assert!(run.stdout.is_empty());
    // At the limit exactly is fine.
    let at_limit = claij(&["repair", "--max-input-bytes", "8"], "{\"a\": 1}");
    assert_eq!(
        (at_limit.code, at_limit.stdout.as_str()),
        (0, "{\"a\":1}\n")
    );

    let f = Files::new(&[
        ("s.json", BASE),
        (
            "big.json",
            &format!(
                "{{\"answer\": \"{}\", \"state\": \"s\"}}",
                "a".repeat(5_000)
            ),
        ),
    ]);
    let big = claij(
        &[
            "validate",
            "--schema",
            &f.path("s.json"),
            "--max-input-bytes",
            "4096",
            &f.path("big.json"),
        ],
        "",
    );
    assert_one_line_error(&big, 2, "big.json: larger than 4096 bytes");
    let piped = claij(
        &[
            "validate",
            "--schema",
            &f.path("s.json"),
            "--max-input-bytes",
            "100",
        ],
        &endless,
    );
    assert_one_line_error(&piped, 2, "cannot read stdin: larger than 100 bytes");
    let fine = claij(
        &[
            "validate",
            "--schema",
            &f.path("s.json"),
            &f.path("big.json"),
        ],
        "",
    );
    assert_eq!(fine.code, 0, "{}", fine.stderr);
}

#[test]
fn an_endless_configuration_file_is_refused_naming_it_and_the_limit() {
    let run = claij_env(
        &["config", "show"],
        "",
        &[("CLAIJ_CONFIG", Some("/dev/zero"))],
    );
    assert_one_line_error(
        &run,
        2,
        "cannot read /dev/zero: larger than 1048576 bytes, the limit for a configuration file",
    );
    // The MCP configuration, a matrix and a note are bounded the same way.
    for (args, what) in [
        (
            &["mcp", "list", "--config", "/dev/zero"][..],
            "larger than 1048576 bytes, the limit for a configuration file",
        ),
        (
            &["models", "--matrix", "/dev/zero"][..],
            "larger than 67108864 bytes, the limit for a matrix file",
        ),
    ] {
        let run = claij(args, "");
        assert_one_line_error(&run, 2, what);
    }
}

#[test]
fn repair_without_json_exits_1() {
    // Random bytes that happen to hold `{}`, and prose around an empty array: nothing found.
    let mut noise: Vec<u8> = (0u32..4_000)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    noise.splice(1_000..1_000, b"{}".iter().copied());
    let run = claij_bytes(&["repair"], &noise);
    assert_one_line_error(&run, 1, "no JSON found");
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    let prose = "The list is empty: []. Nothing else to say. ".repeat(2_000);
    let run = claij(&["repair"], &prose);
    assert_one_line_error(&run, 1, "no JSON found: only an empty [] cut out of text");
    let prose = "Nothing here, sorry. ".repeat(5_000);
    assert_one_line_error(&claij(&["repair"], &prose), 1, "no JSON found");
    // An empty object or array that is the whole reply is an answer.
    let run = claij(&["repair"], " {} \n");
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, "{}\n"),
        "{}",
        run.stderr
    );
    let run = claij(&["repair"], "```json\n[]\n```");
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, "[]\n"),
        "{}",
        run.stderr
    );
    // A large hostile reply is still answered (linear extraction).
    let run = claij(&["repair"], &"{}".repeat(80_000));
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, "{}\n"),
        "{}",
        run.stderr
    );
}

#[test]
fn schema_compose_refuses_contradictory_deltas_with_exit_1() {
    let f = Files::new(&[
        ("base.json", BASE),
        (
            "text.json",
            r#"{"properties": {"summary": {"type": "string"}}}"#,
        ),
        (
            "count.json",
            r#"{"properties": {"summary": {"type": "integer"}}}"#,
        ),
        ("list.json", r#"{"type": "array"}"#),
    ]);
    let run = claij(
        &[
            "schema",
            "compose",
            &f.path("base.json"),
            &f.path("text.json"),
            &f.path("count.json"),
        ],
        "",
    );
    assert_one_line_error(
        &run,
        1,
        "count.json: extension `count` contradicts extension `text` at `/properties/summary/type`: \
         type \"string\" and type \"integer\"",
    );
    assert!(run.stdout.is_empty());
    let run = claij(
        &[
            "schema",
            "compose",
            &f.path("base.json"),
            &f.path("list.json"),
        ],
        "",
    );
    assert_one_line_error(
        &run,
        1,
        "extension `list` contradicts extension `base` at `/type`: type \"object\" and type \"array\"",
    );
}

#[test]
fn validate_refuses_schemas_that_cannot_work_with_exit_2() {
    let f = Files::new(&[
        (
            "cycle.json",
            r##"{"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}"##,
        ),
        ("self.json", r##"{"$ref": "#"}"##),
        (
            "regex.json",
            r#"{"properties": {"code": {"type": "string", "pattern": "a{1000}{1000}"}}}"#,
        ),
        (
            "tree.json",
            r##"{"$defs": {"node": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}}, "$ref": "#/$defs/node"}"##,
        ),
    ]);
    let run = claij(&["validate", "--schema", &f.path("cycle.json"), "-"], "{}");
    assert_one_line_error(
        &run,
        2,
        "invalid schema at `/$defs/b/$ref`: `$ref` cycle that never reaches a value: \
         #/$defs/a -> #/$defs/b -> #/$defs/a",
    );
    let run = claij(&["validate", "--schema", &f.path("self.json"), "-"], "{}");
    assert_one_line_error(&run, 2, "`$ref` cycle");
    let run = claij(&["validate", "--schema", &f.path("regex.json"), "-"], "{}");
    assert_one_line_error(
        &run,
        2,
        "invalid schema at `/properties/code/pattern`: regular expression \"a{1000}{1000}\"",
    );
    assert!(!run.stderr.contains("bug"), "{}", run.stderr);
    let tree = r#"{"children": [{"children": []}, {"children": [{}]}]}"#;
    let run = claij(&["validate", "--schema", &f.path("tree.json"), "-"], tree);
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, "valid\n"),
        "{}",
        run.stderr
    );
    let run = claij(
        &["validate", "--schema", &f.path("tree.json"), "-"],
        r#"{"children": [{"children": 3}]}"#,
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
}
