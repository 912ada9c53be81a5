//! Every numeric flag out of its range, and every flag a command cannot honour in its mode: one
//! line on stderr naming the flag (and the range), exit 2, before anything runs (no model, no
//! server, no panic). The walk over every flag of every command in each mode is the binary's unit
//! test (`flags::tests`, from clap's tree); these run the binary on the cases a user meets.

use super::{assert_one_line_error, claij, claij_env};

#[test]
fn numeric_flags_out_of_range_are_usage_errors_naming_flag_and_range() {
    let seconds = "expected seconds, above 0 and at most 86400 (a day)";
    // (arguments, the flag as clap names it, the range)
    let cases: &[(&[&str], &str, &str)] = &[
        (
            &["mcp", "call", "s.t", "--timeout=1e308"],
            "--timeout <SECS>",
            seconds,
        ),
        (
            &["mcp", "call", "s.t", "--timeout=-1"],
            "--timeout <SECS>",
            seconds,
        ),
        (
            &["mcp", "call", "s.t", "--timeout=NaN"],
            "--timeout <SECS>",
            seconds,
        ),
        (
            &["mcp", "call", "s.t", "--timeout=inf"],
            "--timeout <SECS>",
            seconds,
        ),
        (
            &["mcp", "call", "s.t", "--max-message-bytes=1e9"],
            "--max-message-bytes <BYTES>",
            "expected a whole number from 1024 to 1073741824",
        ),
        (
            &["ask", "q", "--max-retries=1000000000"],
            "--max-retries <N>",
            "expected a whole number from 0 to 100",
        ),
        (
            &["ask", "q", "--max-tokens=0"],
            "--max-tokens <N>",
            "expected a whole number from 1 to 10000000",
        ),
        (
            &["ask", "q", "--temperature=NaN"],
            "--temperature <T>",
            "expected a number from 0 to 2",
        ),
        (
            &["ask", "q", "--temperature=1e308"],
            "--temperature <T>",
            "expected a number from 0 to 2",
        ),
        (
            &["ask", "q", "--threads=100000"],
            "--threads <N>",
            "expected a whole number from 1 to 1024",
        ),
        (
            &["chat", "--max-retries=-1"],
            "--max-retries <N>",
            "expected a whole number from 0 to 100",
        ),
        (
            &[
                "fsm",
                "run",
                "f.json",
                "--input",
                "{}",
                "--max-transitions=0",
            ],
            "--max-transitions <N>",
            "expected a whole number from 1 to 1000000",
        ),
        (
            &["fsm", "run", "f.json", "--input", "{}", "--max-retries=101"],
            "--max-retries <N>",
            "expected a whole number from 0 to 100",
        ),
        (
            &["fsm", "resume", "j.jsonl", "--max-tokens=99999999999"],
            "--max-tokens <N>",
            "expected a whole number from 1 to 10000000",
        ),
    ];
    for (args, flag, range) in cases {
        let run = claij(args, "");
        let value = args.last().unwrap().split_once('=').unwrap().1;
        assert_one_line_error(
            &run,
            2,
            &format!("invalid value '{value}' for '{flag}': {range}"),
        );
    }
}

/// A flag the command cannot honour in its mode: exit 2, one line naming it, nothing asked (the
/// models named listen nowhere).
#[test]
fn flags_a_mode_cannot_honour_are_refused_naming_them() {
    let cases: &[(&[&str], &str)] = &[
        (
            &[
                "ask",
                "q",
                "--llm",
                "openai:a,openai:b",
                "--consensus",
                "majority",
                "--stream",
            ],
            "error: --stream is not honoured by claij ask with --consensus",
        ),
        (
            &[
                "ask",
                "q",
                "--llm",
                "openai:a,openai:b",
                "--consensus",
                "first-valid",
                "--interceptors",
                "tools",
                "--tool-results-budget",
                "100",
            ],
            "error: --tool-results-budget is not honoured by claij ask with --consensus",
        ),
        (
            &["ask", "q", "--tool-results-budget", "100"],
            "error: --tool-results-budget sizes what tool and MCP calls return to the model: add --interceptors tools",
        ),
        (
            &["ask", "q", "--history-messages", "4"],
            "error: --history-messages bounds the conversation a session carries",
        ),
        (
            &["ask", "q", "--note", "n.txt"],
            "error: --note is a note the model may cite: add --standard",
        ),
        (
            &["ask", "q", "--approve", "auto"],
            "error: --approve decides on the schema extensions the model proposes: add --interceptors proposals",
        ),
        (
            &["ask", "q", "--project", "p"],
            "error: --project chooses the MCP servers' project: add --interceptors mcp",
        ),
        (
            &["ask", "q", "--stream", "--json"],
            "error: --stream shows partial values, and --json prints the final report alone: drop one",
        ),
        (
            &["chat", "--standard", "--stream"],
            "error: --stream writes the answer as it grows",
        ),
        (
            &["ask", "q", "--llm", "openai:gpt-4o-mini", "--threads", "2"],
            "error: --threads sets the embedded model's threads, and --llm names no embedded model",
        ),
        (
            &["ask", "q", "--max-steps", "3"],
            "error: --max-steps bounds the steps of a model that calls tools, and no tools are on",
        ),
        (
            &["chat", "--on", "/answer"],
            "error: claij chat talks with one model: --on",
        ),
        (
            &[
                "fsm", "run", "f.json", "--input", "{}", "--on", "restate", "--llm", "local",
            ],
            "error: --llm is not honoured by claij fsm run on Restate (the worker, `claij serve restate`, runs the machine",
        ),
        (
            &[
                "fsm",
                "run",
                "f.json",
                "--input",
                "{}",
                "--on",
                "restate",
                "--interceptors",
                "proposals",
            ],
            "error: --interceptors is not honoured by claij fsm run on Restate",
        ),
    ];
    for (args, line) in cases {
        let run = claij(args, "");
        assert_one_line_error(&run, 2, line);
        assert!(run.stderr.starts_with(line), "{args:?}: {}", run.stderr);
        assert!(run.stdout.is_empty(), "{args:?}: {}", run.stdout);
    }
    // --matrix (a file it reads) where the flags leave it nothing to choose.
    let files = super::Files::new(&[("m.json", r#"{"records": []}"#)]);
    let matrix = files.path("m.json");
    let run = claij(
        &[
            "ask",
            "q",
            "--mode",
            "prompted",
            "--max-retries",
            "1",
            "--matrix",
            &matrix,
        ],
        "",
    );
    assert_one_line_error(
        &run,
        2,
        "error: --matrix chooses the mode and the retries, and --mode and --max-retries set both: drop one",
    );
}

/// The refusals that were there before keep their words.
#[test]
fn earlier_refusals_keep_their_words() {
    let cases: &[(&[&str], &str)] = &[
        (
            &[
                "ask",
                "q",
                "--llm",
                "openai:a,openai:b",
                "--consensus",
                "majority",
                "--metrics",
            ],
            "error: --metrics counts one model's calls, --consensus asks several: drop one",
        ),
        (
            &["fsm", "run", "f.json", "--input", "{}", "--id", "r1"],
            "error: --ingress, --id and --follow-timeout are for a run on Restate: add --on restate",
        ),
        (
            &[
                "fsm",
                "run",
                "f.json",
                "--input",
                "{}",
                "--on",
                "restate",
                "--journal",
                "j",
            ],
            "error: --journal is for an embedded run: on Restate the server journals the run",
        ),
    ];
    for (args, line) in cases {
        let run = claij(args, "");
        assert_one_line_error(&run, 2, line);
        assert_eq!(run.stderr.trim_end(), *line, "{args:?}");
    }
}

/// `--otel-capture-content` with no span exported (no `--otlp-endpoint`, no OTLP variable) is
/// refused before the command runs.
#[test]
fn content_capture_without_an_exporter_is_refused() {
    let unset = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", None),
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", None),
    ];
    let run = claij_env(&["repair", "--otel-capture-content"], "{\"a\": 1}", &unset);
    assert_one_line_error(
        &run,
        2,
        "error: --otel-capture-content records prompts and replies in exported spans, and no spans are exported: add --otlp-endpoint URL",
    );
    assert!(run.stdout.is_empty(), "{}", run.stdout);
}
