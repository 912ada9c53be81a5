//! Unit tests of the plan, the estimate and the matrix; process tests of the confirmation (xtask
//! re-run in a child process, under a pseudo-terminal for ENTER and Ctrl-C, with a stand-in claij).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use super::matrix::{Matrix, Record, merge, utc};
use super::plan::{self, Model, Plan};
use super::{Options, parse};

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

#[track_caller]
fn check_plan(llms: &[&str], suites: &[&str], models: &[&str], tests: u64, spends: bool) {
    let plan = Plan::new(&strings(llms), &strings(suites)).unwrap();
    let names: Vec<&str> = plan.models.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, models);
    assert_eq!(plan.tests(), tests);
    assert_eq!(plan.spends_money(), spends);
}

#[test]
fn plans() {
    check_plan(&["local"], &["retry"], &["local"], 3, false);
    check_plan(&["local"], &[], &["local"], 13, false);
    check_plan(
        &["gemini-flash", "local"],
        &["memory", "tools"],
        &["gemini-flash", "local"],
        6,
        true,
    );
    check_plan(&["local"], &["memory", "history"], &["local"], 3, false);
    check_plan(
        &["local", "local"],
        &["retry", "retry"],
        &["local"],
        3,
        false,
    );
    check_plan(&["openai:gpt-4o"], &["fsm"], &["openai:gpt-4o"], 1, true);
    let all = [
        "gemini-flash",
        "claude-sonnet",
        "claude-opus",
        "gpt-5",
        "grok",
        "llama-maverick",
        "kimi",
        "qwen-7b",
        "local",
    ];
    check_plan(&["all"], &["retry"], &all, 27, true);
    check_plan(
        &["local", "all"],
        &["retry"],
        &[
            "local",
            "gemini-flash",
            "claude-sonnet",
            "claude-opus",
            "gpt-5",
            "grok",
            "llama-maverick",
            "kimi",
            "qwen-7b",
        ],
        27,
        true,
    );
}

#[track_caller]
fn check_plan_error(llms: &[&str], suites: &[&str], expected: &str) {
    let err = Plan::new(&strings(llms), &strings(suites)).unwrap_err();
    assert!(err.contains(expected), "{err}");
}

#[test]
fn plan_errors() {
    check_plan_error(&[], &[], "no model");
    check_plan_error(&["gpt5"], &[], "unknown model `gpt5`");
    check_plan_error(&["acme:x"], &[], "PROVIDER one of openrouter");
    check_plan_error(&["openai:"], &[], "unknown model `openai:`");
    check_plan_error(
        &["local"],
        &["speed"],
        "unknown suite `speed`: expected one of memory, history, tools, mcp, retry, fsm, citations, combined, eval",
    );
}

#[test]
fn estimates_use_the_suite_table_and_the_price() {
    let plan = Plan::new(
        &strings(&["gemini-flash", "local", "openai:gpt-4o"]),
        &strings(&["memory", "retry"]),
    )
    .unwrap();
    let flash = plan.estimate(&plan.models[0]);
    // memory: 2 tests, 2 and 6 calls of 900+120; retry: 3 tests (one per mode), 2 calls of 700+100
    // each.
    assert_eq!(
        (flash.tests, flash.calls, flash.tokens_in, flash.tokens_out),
        (5, 14, 11_400, 1_560)
    );
    let expected = (11_400.0 * 0.30 + 1_560.0 * 2.50) / 1e6;
    assert!((flash.cost.unwrap() - expected).abs() < 1e-12);
    assert_eq!(plan.estimate(&plan.models[1]).cost, Some(0.0));
    assert_eq!(
        plan.estimate(&plan.models[2]).cost,
        None,
        "an unaliased model's price is unknown"
    );
    assert_eq!(plan.cost(), None);
    // An aliased target costs what its alias costs.
    assert_eq!(
        Model::parse("openrouter:google/gemini-2.5-flash")
            .unwrap()
            .price,
        Some((0.30, 2.50))
    );
}

#[track_caller]
fn check_money(cost: Option<f64>, expected: &str) {
    assert_eq!(plan::money(cost), expected);
}

#[test]
fn money() {
    check_money(None, "unknown");
    check_money(Some(0.0), "$0");
    check_money(Some(0.00206), "$0.0021");
    check_money(Some(1.234), "$1.23");
}

#[test]
fn the_plan_text_warns_when_money_is_spent() {
    let paid = plan::render(&Plan::new(&strings(&["gemini-flash"]), &strings(&["retry"])).unwrap());
    assert!(
        paid.starts_with(
            "cargo xtask integration: 1 model(s) x 1 suite(s) (3 test(s) per model) = 3 test runs\n"
        ),
        "{paid}"
    );
    assert!(
        paid.contains("  retry          3          2         ~700+100  strict-word/native, strict-word/tool, strict-word/prompted\n"),
        "{paid}"
    );
    assert!(
        paid.contains("gemini-flash openrouter:google/gemini-2.5-flash"),
        "{paid}"
    );
    assert!(
        paid.contains("total: 3 tests, ~6 calls, ~4200+600 tokens, estimated cost $0.0028"),
        "{paid}"
    );
    assert!(
        paid.contains("WARNING: this calls hosted models with your API keys and spends money"),
        "{paid}"
    );
    assert!(!paid.contains("--llm all"), "{paid}");
    let all = plan::render(&Plan::new(&strings(&["all"]), &[]).unwrap());
    assert!(
        all.contains("WARNING: --llm all runs the whole matrix: every suite against all 9 models"),
        "{all}"
    );
    let local = plan::render(&Plan::new(&strings(&["local"]), &[]).unwrap());
    assert!(
        local.contains("local model only: no network, no cost, no confirmation needed."),
        "{local}"
    );
    assert!(!local.contains("WARNING"), "{local}");
}

#[track_caller]
fn check_args(args: &[&str], expected: Result<Options, &str>) {
    assert_eq!(parse(&strings(args)), expected.map_err(str::to_owned));
}

#[test]
fn arguments() {
    let options = |llms: &[&str], suites: &[&str], yes, dry_run| Options {
        llms: strings(llms),
        suites: strings(suites),
        yes,
        dry_run,
        ..Options::default()
    };
    check_args(
        &["--llm", "local"],
        Ok(options(&["local"], &[], false, false)),
    );
    check_args(
        &[
            "--llm",
            "kimi,local",
            "--suite",
            "retry",
            "--suite",
            "fsm,mcp",
            "--yes",
            "--dry-run",
        ],
        Ok(options(
            &["kimi", "local"],
            &["retry", "fsm", "mcp"],
            true,
            true,
        )),
    );
    check_args(
        &["--suite", "retry"],
        Err("`integration` needs --llm ALIAS (or `local`, or `all`)"),
    );
    check_args(&["--llm"], Err("`--llm` needs a value"));
    check_args(
        &["--llm", "local", "--fast"],
        Err("`integration` does not take `--fast`"),
    );
    check_args(
        &[
            "--llm",
            "local",
            "--max-retries",
            "0",
            "--timeout",
            "90",
            "--markdown",
            "docs/m.md",
        ],
        Ok(Options {
            max_retries: Some(0),
            timeout: Some(90),
            markdown: Some(PathBuf::from("docs/m.md")),
            ..options(&["local"], &[], false, false)
        }),
    );
    check_args(
        &["--llm", "local", "--timeout", "0"],
        Err("`--timeout` needs a whole number of at least 1, not `0`"),
    );
    check_args(
        &["--llm", "local", "--max-retries", "-1"],
        Err("`--max-retries` needs a whole number of at least 0, not `-1`"),
    );
}

#[test]
fn the_command_shown_leaves_out_where_the_copy_went_and_the_confirmation() {
    assert_eq!(
        super::command(&strings(&[
            "--llm",
            "local",
            "--out",
            "/tmp/x",
            "--yes",
            "--markdown",
            "docs/compat-matrix.md"
        ])),
        "cargo xtask integration --llm local --markdown docs/compat-matrix.md"
    );
}

fn record(model: &str, suite: &str, passed: bool, first: bool, retries: u64, cost: f64) -> Record {
    Record {
        model: model.to_owned(),
        suite: suite.to_owned(),
        test: format!("{suite}-test"),
        passed,
        valid_first_try: first,
        attempts: retries + 1,
        retries,
        tokens_in: 100,
        tokens_out: 10,
        cost: Some(cost),
        elapsed_ms: 1_500,
        detail: if passed {
            "ok".into()
        } else {
            "answer: \"red\" | wrong".into()
        },
        mode: "auto".into(),
        schema_tokens: None,
        at: None,
    }
}

/// A line as `claij-suite run` writes it: claij's `matrix::record` tests check that its `Record`
/// serialises to exactly this (xtask depends on no claij crate, so the two meet in this file).
const CLI_RECORD: &str = include_str!("../../../crates/claij/src/matrix/record/sample.json");

#[test]
fn a_record_written_by_the_cli_parses_and_goes_into_the_matrix_unchanged() {
    let record = Record::parse(CLI_RECORD.trim_end()).unwrap();
    assert_eq!(
        (
            record.model.as_str(),
            record.test.as_str(),
            record.mode.as_str(),
            record.retries,
            record.cost
        ),
        ("local", "strict-word/tool", "tool", 2, Some(0.0125))
    );
    assert_eq!(record.schema_tokens, Some(57));
    // The matrix keeps the record with the same fields, which is what `claij models` reads back.
    let written = Matrix::from_records(&[record]).to_json("now");
    let line: Value = serde_json::from_str(CLI_RECORD).unwrap();
    assert_eq!(written["records"][0], line);
}

#[test]
fn a_record_older_than_schema_tokens_reads_and_is_written_without_them() {
    let mut line: Value = serde_json::from_str(CLI_RECORD).unwrap();
    line.as_object_mut().unwrap().remove("schema_tokens");
    let record = Record::parse(&line.to_string()).unwrap();
    assert_eq!(record.schema_tokens, None);
    let written = Matrix::from_records(&[record]).to_json("now");
    assert_eq!(written["records"][0], line);
    let bad = CLI_RECORD.replace("\"schema_tokens\":57", "\"schema_tokens\":\"many\"");
    assert_eq!(
        Record::parse(bad.trim_end()).unwrap_err(),
        "record with a non-count `schema_tokens`"
    );
}

#[test]
fn records_parse_from_claij_lines() {
    let line = r#"{"model":"local","suite":"retry","test":"strict-word","passed":true,"valid_first_try":false,"attempts":3,"retries":2,"tokens_in":812,"tokens_out":97,"cost":0.0,"elapsed_ms":4120,"detail":"valid after 2 retries"}"#;
    let r = Record::parse(line).unwrap();
    assert_eq!(
        (
            r.model.as_str(),
            r.test.as_str(),
            r.passed,
            r.retries,
            r.elapsed_ms
        ),
        ("local", "strict-word", true, 2, 4_120)
    );
    assert_eq!(
        Record::parse("nope").unwrap_err().split(':').next(),
        Some("not a JSON record")
    );
    assert_eq!(
        Record::parse(&line.replace("\"retries\":2", "\"retries\":-2")).unwrap_err(),
        "record without a count `retries`"
    );
    assert_eq!(
        Record::parse(&line.replace("\"cost\":0.0", "\"cost\":\"0\"")).unwrap_err(),
        "record without a number (or null, unknown) `cost`"
    );
    assert_eq!(
        Record::parse(&line.replace(",\"cost\":0.0", "")).unwrap_err(),
        "record without a number (or null, unknown) `cost`"
    );
}

/// A test whose cost is unknown (a model without a price) is never counted as $0: its cell's and
/// the total's cost read unknown.
#[test]
fn an_unknown_cost_makes_its_cell_and_the_total_unknown() {
    let line = r#"{"model":"openai:gpt-x","suite":"retry","test":"strict-word","passed":true,"valid_first_try":true,"attempts":1,"retries":0,"tokens_in":812,"tokens_out":97,"cost":null,"elapsed_ms":4120,"detail":"ok"}"#;
    let unpriced = Record::parse(line).unwrap();
    assert_eq!(unpriced.cost, None);
    let records = [unpriced, record("local", "retry", true, true, 0, 0.0)];
    let matrix = Matrix::from_records(&records);
    assert_eq!(
        matrix.cell("openai:gpt-x", "retry").unwrap().known_cost(),
        None
    );
    assert_eq!(
        matrix.cell("local", "retry").unwrap().known_cost(),
        Some(0.0)
    );
    assert_eq!(matrix.total().known_cost(), None);
    let json = matrix.to_json("now");
    assert_eq!(json["records"][0]["cost"], Value::Null);
    let md = matrix.to_markdown("now", "cargo xtask integration");
    assert!(md.contains("tok · unknown"), "{md}");
}

#[test]
fn the_matrix_gathers_models_by_suites() {
    let records = [
        record("local", "retry", true, false, 2, 0.0),
        record("local", "memory", false, true, 0, 0.0),
        record("gemini-flash", "retry", true, true, 0, 0.001),
        record("gemini-flash", "retry", false, false, 3, 0.002),
    ];
    let matrix = Matrix::from_records(&records);
    assert_eq!(matrix.models, ["local", "gemini-flash"]);
    assert_eq!(matrix.suites, ["retry", "memory"]);
    let cell = matrix.cell("gemini-flash", "retry").unwrap();
    assert_eq!(
        (
            cell.tests,
            cell.passed,
            cell.valid_first_try,
            cell.retries,
            cell.tokens_in
        ),
        (2, 1, 1, 3, 200)
    );
    assert!((cell.known_cost().unwrap() - 0.003).abs() < 1e-12);
    assert_eq!(matrix.failed(), 2);

    let md = matrix.to_markdown(
        "2026-11-26T05:00:00Z",
        "cargo xtask integration --llm local",
    );
    assert!(
        md.contains("measure again with `cargo xtask integration --llm local`"),
        "{md}"
    );
    let rows: Vec<&str> = md.lines().filter(|l| l.starts_with('|')).collect();
    assert_eq!(rows[0], "| model | retry | memory |");
    assert_eq!(rows[1], "|---|---|---|");
    assert_eq!(
        rows[2],
        "| local | 1/1 pass · 0% first try · 2 retries · 100+10 tok · $0 | 0/1 FAIL · 100% first try · 0 retries · 100+10 tok · $0 |"
    );
    assert_eq!(
        rows[3],
        "| gemini-flash | 1/2 FAIL · 50% first try · 3 retries · 200+20 tok · $0.0030 | - |"
    );
    assert!(rows.iter().all(|r| r.matches('|').count() == 4), "{md}");
    assert!(
        md.contains("Total: 2/4 passed, 5 retries, 400+40 tokens, $0.0030, 6.0s."),
        "{md}"
    );
    assert!(
        md.contains("- local memory/memory-test: answer: \"red\" \\| wrong"),
        "{md}"
    );

    let json = matrix.to_json("2026-11-26T05:00:00Z");
    assert_eq!(json["cells"].as_array().unwrap().len(), 3);
    assert_eq!(json["cells"][2]["first_try_valid_rate"], 0.5);
    assert_eq!(json["cells"][2]["failed"], 1);
    assert_eq!(json["total"]["passed"], 2);
    assert_eq!(json["total"].get("model"), None);
    assert_eq!(json["records"][1]["detail"], "answer: \"red\" | wrong");
    let history: Value = serde_json::from_str(&matrix.history_line("t")).unwrap();
    assert_eq!(history["at"], "t");
    assert_eq!(history["total"]["tests"], 4);
    assert_eq!(history["records"].as_array().unwrap().len(), 4);
}

fn tagged(model: &str, suite: &str, mode: &str, detail: &str) -> Record {
    Record {
        mode: mode.to_owned(),
        detail: detail.to_owned(),
        ..record(model, suite, true, true, 0, 0.0)
    }
}

#[track_caller]
fn check_merge(old: &[Record], new: &[Record], expected: &[(&str, &str, &str, &str)]) {
    let merged = merge(old, new);
    let got: Vec<(&str, &str, &str, &str)> = merged
        .iter()
        .map(|r| {
            (
                r.model.as_str(),
                r.suite.as_str(),
                r.mode.as_str(),
                r.detail.as_str(),
            )
        })
        .collect();
    assert_eq!(got, expected);
}

#[test]
fn a_run_replaces_what_it_measured_and_keeps_the_rest() {
    let old = [
        tagged("a", "retry", "native", "old"),
        tagged("a", "retry", "tool", "old"),
        tagged("a", "memory", "auto", "old"),
        tagged("b", "retry", "native", "old"),
    ];
    // Another model: nothing erased, the new model last.
    check_merge(
        &old,
        &[tagged("c", "retry", "native", "new")],
        &[
            ("a", "retry", "native", "old"),
            ("a", "retry", "tool", "old"),
            ("a", "memory", "auto", "old"),
            ("b", "retry", "native", "old"),
            ("c", "retry", "native", "new"),
        ],
    );
    // The same model, suite and mode: replaced in place; its other modes and suites stay.
    check_merge(
        &old,
        &[
            tagged("a", "retry", "tool", "new"),
            tagged("a", "retry", "tool", "new 2"),
        ],
        &[
            ("a", "retry", "native", "old"),
            ("a", "retry", "tool", "new"),
            ("a", "retry", "tool", "new 2"),
            ("a", "memory", "auto", "old"),
            ("b", "retry", "native", "old"),
        ],
    );
    // A suite that now has fewer tests loses the old ones (same key), a new mode is added.
    check_merge(
        &[
            tagged("a", "mcp", "auto", "old 1"),
            tagged("a", "mcp", "auto", "old 2"),
        ],
        &[
            tagged("a", "mcp", "auto", "new"),
            tagged("a", "mcp", "prompted", "new"),
        ],
        &[("a", "mcp", "auto", "new"), ("a", "mcp", "prompted", "new")],
    );
    check_merge(&[], &[], &[]);
}

#[track_caller]
fn check_utc(secs: u64, expected: &str) {
    assert_eq!(utc(secs), expected);
}

#[test]
fn timestamps() {
    check_utc(0, "1970-01-01T00:00:00Z");
    check_utc(951_782_400, "2000-02-29T00:00:00Z");
    check_utc(1_795_670_529, "2026-11-26T05:22:09Z");
}

// --- xtask in a child process -------------------------------------------------------------------

/// Set in a child: the arguments for `cargo xtask`, one per line.
const CHILD: &str = "CLAIJ_XTASK_TEST_CHILD";

/// The child's entry point: the tests re-run this test binary with [`CHILD`] set and only this
/// test selected, so the real `integration` command runs in its own process (its own stdin, a
/// pseudo-terminal). Without [`CHILD`] it does nothing.
#[test]
fn child_process_entry() {
    let Some(args) = std::env::var_os(CHILD) else {
        return;
    };
    let args: Vec<String> = args.to_string_lossy().lines().map(str::to_owned).collect();
    let code = match super::execute(&args) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("xtask: error: {err:#}");
            1
        }
    };
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
    std::process::exit(i32::from(code));
}

/// A scratch directory, a listener standing in for the provider, and a stand-in claij that
/// connects to it, notes its arguments and prints canned records.
struct Stage {
    dir: PathBuf,
    listener: TcpListener,
}

const FAKE_CLAIJ: &str = r#"#!/usr/bin/env python3
import json, os, socket, sys
args = sys.argv[1:]
with open(os.environ["FAKE_MARKER"], "a") as f:
    f.write(" ".join(args) + "\n")
socket.create_connection(("127.0.0.1", int(os.environ["FAKE_PORT"]))).close()
llm = args[args.index("--llm") + 1]
suite = args[args.index("--suite") + 1]
tests = {"retry": ["strict-word/native", "strict-word/tool", "strict-word/prompted"],
         "memory": ["recall-next-turn", "recall-after-distractions"]}
for test in tests.get(suite, []):
    mode = test.rsplit("/", 1)[-1] if "/" in test else "auto"
    print(json.dumps({"model": llm, "suite": suite, "test": test, "passed": suite == "retry",
        "valid_first_try": False, "attempts": 3, "retries": 2, "tokens_in": 812, "tokens_out": 97,
        "cost": 0.0, "elapsed_ms": 4120, "detail": os.environ.get("FAKE_DETAIL", "canned"),
        "mode": mode}), flush=True)
"#;

impl Stage {
    fn new(name: &str) -> Stage {
        let dir =
            std::env::temp_dir().join(format!("xtask-integration-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let fake = dir.join("claij-suite");
        fs::write(&fake, FAKE_CLAIJ).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            fs::set_permissions(&fake, fs::Permissions::from_mode(0o755)).unwrap();
        }
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        // What a real claij would read: the provider pointed at the listener.
        fs::write(
            dir.join("config.toml"),
            format!("[providers.openrouter]\nbase_url = \"http://127.0.0.1:{port}/api/v1\"\n"),
        )
        .unwrap();
        Stage { dir, listener }
    }

    /// The test binary re-run as `cargo xtask integration --out DIR ARGS`, stdin from /dev/null.
    fn command(&self, program: &[&str], args: &[&str]) -> Command {
        let out = self.dir.join("out");
        let mut all = vec!["--out", out.to_str().unwrap()];
        all.extend_from_slice(args);
        self.command_without_out(program, &all)
    }

    /// [`Stage::command`] without `--out`: the matrix goes to the data directory, which is
    /// `XDG_DATA_HOME=<stage>/data`.
    fn command_without_out(&self, program: &[&str], args: &[&str]) -> Command {
        let exe = std::env::current_exe().unwrap();
        let mut cmd = Command::new(
            program
                .first()
                .copied()
                .map_or(exe.as_os_str(), std::ffi::OsStr::new),
        );
        cmd.args(&program[program.len().min(1)..]);
        if !program.is_empty() {
            cmd.arg(&exe);
        }
        cmd.args([
            "--exact",
            "integration::tests::child_process_entry",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, args.join("\n"))
        .env("XDG_DATA_HOME", self.dir.join("data"))
        .env_remove("FAKE_DETAIL")
        .env("CLAIJ_SUITE_BIN", self.dir.join("claij-suite"))
        .env("CLAIJ_CONFIG", self.dir.join("config.toml"))
        .env("FAKE_MARKER", self.dir.join("invoked"))
        .env(
            "FAKE_PORT",
            self.listener.local_addr().unwrap().port().to_string(),
        )
        .stdin(Stdio::null());
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(&[], args).output().unwrap()
    }

    /// Runs under a pseudo-terminal, sending `key` once the confirmation prompt shows; returns the
    /// terminal's text and the exit code (negative: killed by that signal).
    fn run_in_pty(&self, args: &[&str], key: &str) -> (String, i32) {
        let output = self
            .command(&["python3", "-c", PTY_DRIVER, key], args)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "pty driver: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        let (text, code) = text.rsplit_once("\nEXIT ").unwrap();
        (text.to_owned(), code.trim().parse().unwrap())
    }

    /// Connections the listener received.
    fn connections(&self) -> usize {
        std::iter::from_fn(|| self.listener.accept().ok()).count()
    }

    fn invocations(&self) -> Vec<String> {
        fs::read_to_string(self.dir.join("invoked"))
            .map(|t| t.lines().map(str::to_owned).collect())
            .unwrap_or_default()
    }

    fn out(&self, name: &str) -> PathBuf {
        self.dir.join("out").join(name)
    }
}

impl Drop for Stage {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// Runs argv[2:] under a pseudo-terminal (as its controlling terminal), writes argv[1] once the
/// prompt appears, prints everything the terminal showed, then `EXIT <code>`.
const PTY_DRIVER: &str = r#"
import os, pty, select, sys, time
key = sys.argv[1]
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
out = b""
sent = False
deadline = time.time() + 120
while time.time() < deadline:
    ready, _, _ = select.select([fd], [], [], 0.5)
    if ready:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    if not sent and b"press ENTER" in out:
        # The prompt is the event: the line discipline keeps the key until `read_line` asks (and
        # turns Ctrl-C into SIGINT at once), so no sleep is needed to let the child get there.
        os.write(fd, key.encode())
        sent = True
_, status = os.waitpid(pid, 0)
sys.stdout.write(out.decode("utf-8", "replace"))
sys.stdout.write("\nEXIT %d\n" % os.waitstatus_to_exitcode(status))
"#;

fn lines(bytes: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(bytes)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn without_a_terminal_and_without_yes_a_paid_run_is_refused_before_anything_runs() {
    let stage = Stage::new("refuse");
    let output = stage.run(&["--llm", "gemini-flash", "--suite", "retry"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = lines(&output.stderr);
    assert_eq!(
        stderr,
        [
            "xtask: refusing to spend money without confirmation: stdin is not a terminal; pass --yes to spend the estimated $0.0028"
        ]
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("WARNING: this calls hosted models"));
    assert_eq!(
        stage.invocations(),
        Vec::<String>::new(),
        "claij must not run"
    );
    assert_eq!(stage.connections(), 0, "nothing may reach the provider");
    assert!(!stage.out("compat-matrix.md").exists());
}

#[test]
fn dry_run_prints_the_plan_and_runs_nothing() {
    let stage = Stage::new("dry-run");
    let output = stage.run(&[
        "--llm",
        "gemini-flash",
        "--llm",
        "local",
        "--suite",
        "memory,retry",
        "--dry-run",
    ]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains(
            "cargo xtask integration: 2 model(s) x 2 suite(s) (5 test(s) per model) = 10 test runs"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "  memory         2          4         ~900+120  recall-next-turn, recall-after-distractions\n"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("  local        local "), "{stdout}");
    assert!(
        stdout.contains("WARNING: this calls hosted models"),
        "{stdout}"
    );
    assert!(stdout.contains("--dry-run: nothing was run"), "{stdout}");
    assert_eq!(stage.invocations(), Vec::<String>::new());
    assert_eq!(stage.connections(), 0);
}

#[test]
fn enter_on_a_terminal_proceeds() {
    let stage = Stage::new("enter");
    let (text, code) = stage.run_in_pty(&["--llm", "gemini-flash", "--suite", "retry"], "\n");
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("press ENTER to run, Ctrl-C to abort"),
        "{text}"
    );
    assert!(
        text.contains(
            "[1/3] gemini-flash retry/strict-word/native: pass (3 attempts, 2 retries, 812+97 tokens"
        ),
        "{text}"
    );
    assert_eq!(
        stage.invocations(),
        ["run --llm gemini-flash --suite retry"]
    );
    assert_eq!(stage.connections(), 1);
    assert!(stage.out("compat-matrix.md").is_file());
}

#[test]
fn ctrl_c_on_a_terminal_aborts_before_anything_is_sent() {
    let stage = Stage::new("ctrl-c");
    let (text, code) = stage.run_in_pty(&["--llm", "gemini-flash", "--suite", "retry"], "\u{3}");
    assert_eq!(code, -2, "killed by SIGINT: {text}");
    assert!(
        text.contains("press ENTER to run, Ctrl-C to abort"),
        "{text}"
    );
    assert_eq!(stage.invocations(), Vec::<String>::new());
    assert_eq!(stage.connections(), 0);
    assert!(!stage.out("compat-matrix.md").exists());
}

#[test]
fn a_local_run_needs_no_confirmation_and_writes_a_well_formed_matrix() {
    let stage = Stage::new("local");
    let output = stage.run(&["--llm", "local", "--suite", "retry,memory,tools"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    // memory fails (canned), tools prints nothing: both count as failures.
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert_eq!(
        stage.invocations(),
        [
            "run --llm local --suite retry",
            "run --llm local --suite memory",
            "run --llm local --suite tools"
        ]
    );
    assert!(
        stdout.contains("[1/6] local retry/strict-word/native: pass"),
        "{stdout}"
    );
    assert!(
        stdout.contains("[6/6] local tools/report-nonce: FAIL"),
        "{stdout}"
    );
    assert!(
        stdout.contains("integration: 3/6 tests passed, 3 failed"),
        "{stdout}"
    );
    let md = fs::read_to_string(stage.out("compat-matrix.md")).unwrap();
    assert!(md.contains("| model | retry | memory | tools |\n|---|---|---|---|\n| local | 3/3 pass · 0% first try · 6 retries · 2436+291 tok · $0 | 0/2 FAIL"), "{md}");
    assert!(md.contains("- local tools/report-nonce: claij-suite run ended (exit status: 0) without a result for this test"), "{md}");
    let json: Value =
        serde_json::from_str(&fs::read_to_string(stage.out("compat-matrix.json")).unwrap())
            .unwrap();
    assert_eq!(json["models"], serde_json::json!(["local"]));
    assert_eq!(json["total"]["tests"], 6);
    assert_eq!(json["cells"][0]["retries"], 6);
    // Each record keeps the mode it ran in, for `claij models`.
    assert_eq!(json["records"][1]["mode"], "tool");
    // A second run appends to the history.
    let _ = stage.run(&["--llm", "local", "--suite", "retry"]);
    let history = fs::read_to_string(stage.out("compat-history.jsonl")).unwrap();
    assert_eq!(history.lines().count(), 2);
    for line in history.lines() {
        let entry: Value = serde_json::from_str(line).unwrap();
        assert!(entry["at"].as_str().unwrap().ends_with('Z'));
    }
}

#[test]
fn the_progress_bar_fills_with_the_run() {
    assert_eq!(super::progress_bar(0, 4), "|--------------------|");
    assert_eq!(super::progress_bar(1, 4), "|#####---------------|");
    assert_eq!(super::progress_bar(4, 4), "|####################|");
    assert_eq!(super::progress_bar(3, 0), "|####################|");
}

/// The matrix JSON in `path`.
fn matrix_json(path: &std::path::Path) -> Value {
    serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
}

/// `(model, test, detail)` of each record.
fn rows(matrix: &Value) -> Vec<(String, String, String)> {
    matrix["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let text = |key: &str| r[key].as_str().unwrap().to_owned();
            (text("model"), text("test"), text("detail"))
        })
        .collect()
}

#[test]
fn runs_merge_into_the_users_matrix_and_a_rerun_replaces_its_own_results() {
    let stage = Stage::new("merge");
    let run = |args: &[&str], detail: &str| {
        let output = stage
            .command_without_out(&[], args)
            .env("FAKE_DETAIL", detail)
            .output()
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(0),
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    };
    run(&["--llm", "local", "--suite", "retry"], "first");
    run(
        &["--llm", "gemini-flash", "--suite", "retry", "--yes"],
        "second",
    );
    // No --out: the user's data directory, where claij reads it from any directory.
    let dir = stage.dir.join("data").join("claij");
    let json = matrix_json(&dir.join("compat-matrix.json"));
    assert_eq!(json["models"], serde_json::json!(["local", "gemini-flash"]));
    assert_eq!(json["total"]["tests"], 6);
    let md = fs::read_to_string(dir.join("compat-matrix.md")).unwrap();
    assert!(md.contains("\n| local | 3/3 pass"), "{md}");
    assert!(md.contains("\n| gemini-flash | 3/3 pass"), "{md}");
    assert!(md.contains("Last measured: local 20"), "{md}");
    assert!(
        json["records"][0]["at"].as_str().unwrap().ends_with('Z'),
        "{json}"
    );

    // The first model again: its results replaced (not added to), the other model's kept.
    run(&["--llm", "local", "--suite", "retry"], "third");
    let json = matrix_json(&dir.join("compat-matrix.json"));
    let details: Vec<(String, String)> = rows(&json)
        .into_iter()
        .map(|(model, _, detail)| (model, detail))
        .collect();
    let expect = |model: &str, detail: &str| (model.to_owned(), detail.to_owned());
    assert_eq!(
        details,
        [
            expect("local", "third"),
            expect("local", "third"),
            expect("local", "third"),
            expect("gemini-flash", "second"),
            expect("gemini-flash", "second"),
            expect("gemini-flash", "second"),
        ]
    );
    assert_eq!(json["total"]["tests"], 6);

    // The history keeps every run, each with its own records.
    let history = fs::read_to_string(dir.join("compat-history.jsonl")).unwrap();
    let runs: Vec<Value> = history
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let firsts: Vec<&str> = runs
        .iter()
        .map(|r| r["records"][0]["detail"].as_str().unwrap())
        .collect();
    assert_eq!(firsts, ["first", "second", "third"]);
    // No temp file is left behind.
    let mut names: Vec<String> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "compat-history.jsonl",
            "compat-matrix.json",
            "compat-matrix.lock",
            "compat-matrix.md"
        ]
    );
}

#[test]
fn a_matrix_file_that_is_not_one_is_left_alone() {
    let stage = Stage::new("corrupt");
    let out = stage.dir.join("out");
    fs::create_dir_all(&out).unwrap();
    let bad = r#"{"records": [{"model": "x"}]}"#;
    fs::write(out.join("compat-matrix.json"), bad).unwrap();
    let output = stage.run(&["--llm", "local", "--suite", "retry"]);
    assert_ne!(output.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("compat-matrix.json: /records/0: record without a string `suite`"),
        "{stderr}"
    );
    assert_eq!(
        fs::read_to_string(out.join("compat-matrix.json")).unwrap(),
        bad
    );
    assert!(!out.join("compat-history.jsonl").exists());
}

#[test]
fn markdown_gets_this_runs_models_and_the_flags_reach_claij() {
    let stage = Stage::new("markdown");
    assert_eq!(
        stage
            .run(&["--llm", "gemini-flash", "--suite", "retry", "--yes"])
            .status
            .code(),
        Some(0)
    );
    // In a directory that does not exist yet.
    let doc = stage.dir.join("docs").join("doc.md");
    let output = stage.run(&[
        "--llm",
        "local",
        "--suite",
        "retry",
        "--max-retries",
        "2",
        "--timeout",
        "90",
        "--markdown",
        doc.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        stage.invocations()[1],
        "run --llm local --suite retry --max-retries 2 --timeout 90"
    );
    let md = fs::read_to_string(&doc).unwrap();
    assert!(
        md.contains(&format!(
            "measure again with `cargo xtask integration --llm local --suite retry --max-retries 2 --timeout 90 --markdown {}`",
            doc.display()
        )),
        "{md}"
    );
    assert!(md.contains("\n| local | 3/3 pass"), "{md}");
    assert!(!md.contains("gemini-flash"), "only this run's models: {md}");
    // The matrix itself has both.
    let all = fs::read_to_string(stage.out("compat-matrix.md")).unwrap();
    assert!(
        all.contains("| gemini-flash |") && all.contains("| local |"),
        "{all}"
    );
}

#[test]
fn two_runs_at_once_wait_for_the_lock_and_both_land() {
    use std::io::BufRead as _;
    use std::sync::mpsc;
    use std::time::Duration;

    let stage = Stage::new("lock");
    let out = stage.dir.join("out");
    fs::create_dir_all(&out).unwrap();
    // Another writer holds the lock (as a run does from reading the matrix to writing it).
    let held = fs::File::create(out.join("compat-matrix.lock")).unwrap();
    held.lock().unwrap();
    let (tx, rx) = mpsc::channel();
    let mut children = Vec::new();
    for model in ["local", "gemini-flash"] {
        let mut child = stage
            .command(&[], &["--llm", model, "--suite", "retry", "--yes"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let tx = tx.clone();
        let reader = std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let line = line.unwrap();
                if line.starts_with("waiting for ") {
                    tx.send(model).unwrap();
                }
            }
        });
        children.push((child, reader));
    }
    // Both ran their suites and now wait (60 s: a hang guard, not a speed).
    let mut waiting = vec![
        rx.recv_timeout(Duration::from_secs(60)).unwrap(),
        rx.recv_timeout(Duration::from_secs(60)).unwrap(),
    ];
    waiting.sort_unstable();
    assert_eq!(waiting, ["gemini-flash", "local"]);
    assert!(
        !out.join("compat-matrix.json").exists(),
        "nothing is written while another holds the lock"
    );
    drop(held);
    for (mut child, reader) in children {
        assert_eq!(child.wait().unwrap().code(), Some(0));
        reader.join().unwrap();
    }
    let json = matrix_json(&out.join("compat-matrix.json"));
    let mut models: Vec<String> = rows(&json).into_iter().map(|(m, ..)| m).collect();
    models.dedup();
    models.sort();
    assert_eq!(models, ["gemini-flash", "local"], "neither run's rows lost");
    assert_eq!(json["total"]["tests"], 6);
    let history = fs::read_to_string(out.join("compat-history.jsonl")).unwrap();
    assert_eq!(history.lines().count(), 2);
}

/// The estimates price from claij's own data file: every alias's price is the built-in list's,
/// dated; an imported list takes precedence, as in claij.
#[test]
fn prices_come_from_claijs_price_list() {
    let prices = plan::Prices::builtin();
    assert!(
        prices.about.starts_with("the built-in list of 20"),
        "{}",
        prices.about
    );
    for (alias, target) in plan::ALIASES {
        assert!(
            prices.of(target).is_some(),
            "{alias} ({target}) has a price"
        );
    }
    assert_eq!(
        prices.of("openrouter:google/gemini-2.5-flash"),
        Some((0.3, 2.5))
    );
    assert_eq!(
        prices.of("openrouter:moonshotai/kimi-k2:free"),
        Some((0.0, 0.0))
    );
    assert_eq!(prices.of("local"), Some((0.0, 0.0)));
    assert_eq!(prices.of("openai:gpt-4o-mini"), Some((0.15, 0.6)));
    assert_eq!(prices.of("openai:gpt-9"), None);
    let path = std::path::Path::new("/data/claij/prices.json");
    let imported = prices
        .clone()
        .with_imported(
            path,
            r#"{"date": "2026-12-01", "sources": {}, "models": [{"provider": "openai", "id": "gpt-9", "input": 1, "output": 2},
               {"provider": "openai", "id": "gpt-4o-mini", "input": 9, "output": 9}]}"#,
        )
        .unwrap();
    assert_eq!(imported.of("openai:gpt-9"), Some((1.0, 2.0)));
    assert_eq!(imported.of("openai:gpt-4o-mini"), Some((9.0, 9.0)));
    assert!(imported.about.starts_with(
        "an imported list of 2026-12-01 (/data/claij/prices.json) over the built-in list of"
    ));
    let err = prices.with_imported(path, "{\"date\": \"x\"}").unwrap_err();
    assert_eq!(
        err,
        "/data/claij/prices.json: not a claij price list: no `models`"
    );
    // The plan says where its prices come from, and prices an unaliased model the list knows.
    let plan = Plan::new(&strings(&["openai:gpt-4o-mini"]), &strings(&["retry"]))
        .unwrap()
        .with_prices(&imported);
    assert_eq!(plan.models[0].price, Some((9.0, 9.0)));
    assert!(plan::render(&plan).contains("prices from an imported list of 2026-12-01"));
}
