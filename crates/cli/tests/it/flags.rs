//! Every numeric flag out of its range: one line on stderr naming the flag and the range, exit 2,
//! before anything runs (no model, no server, no panic).

use super::{assert_one_line_error, claij};

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
            &["suite", "run", "--llm", "x", "--timeout=1e308"],
            "--timeout <SECS>",
            seconds,
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
