//! Tests for the quality bench's checkers and scoring, on made-up replies: never the model.

use serde_json::json;

use super::report::{cell, markdown, report_json, share};
use super::*;

#[track_caller]
fn check_word(text: &str, word: &str, expected: bool) {
    assert_eq!(has_word(text, word), expected, "{word:?} in {text:?}");
}

#[test]
fn words_are_whole_and_case_insensitive() {
    check_word("The capital of France is Paris.", "paris", true);
    check_word("PARIS", "Paris", true);
    check_word("Parisian food", "Paris", false);
    check_word("7 + 5 = 12", "12", true);
    check_word("112", "12", false);
    check_word("12.", "12", true);
    check_word("120", "12", false);
    check_word("No, dogs cannot fly.", "no", true);
    check_word("Nothing is known", "no", false);
    check_word("it is not negative", "negative", true);
    check_word("positively", "positive", false);
    check_word("", "yes", false);
    check_word("yes", "", false);
    // A second occurrence counts when the first is inside a word.
    check_word("Parisian, then Paris", "Paris", true);
    // Non-ASCII around the word: é is a letter.
    check_word("éParis", "Paris", false);
    check_word("«Paris»", "Paris", true);
}

#[track_caller]
fn check(check: Value, value: Value, expected: bool) {
    let parsed = Check::parse(&check).unwrap();
    assert_eq!(parsed.passes(&value), expected, "{check} on {value}");
}

#[test]
fn checks_pass_and_fail() {
    let answer = |text: &str| json!({"answer": text, "state": "answered"});
    check(json!({"word": "Paris"}), answer("It is Paris."), true);
    check(json!({"word": "Paris"}), answer("It is Lyon."), false);
    check(json!({"word": ["12", "twelve"]}), answer("Twelve."), true);
    check(json!({"word": ["12", "twelve"]}), answer("13"), false);
    check(json!({"not_word": "negative"}), answer("positive"), true);
    check(json!({"not_word": "negative"}), answer("Negative!"), false);
    check(json!({"contains": "par"}), answer("a PARTY"), true);
    check(json!({"contains": ["x", "y"]}), answer("abc"), false);
    // Pointers other than /answer, and values that are not strings.
    let extracted = json!({"name": "Marie Curie", "date": "1867-11-07", "n": 12});
    check(
        json!({"pointer": "/name", "equals": "Marie Curie"}),
        extracted.clone(),
        true,
    );
    check(
        json!({"pointer": "/name", "equals": "marie curie"}),
        extracted.clone(),
        false,
    );
    check(
        json!({"pointer": "/name", "equals": "Marie Curie"}),
        json!({"name": "Marie Curie,"}),
        false,
    );
    check(
        json!({"pointer": "/date", "equals": "1867-11-07"}),
        extracted.clone(),
        true,
    );
    check(
        json!({"pointer": "/n", "word": "12"}),
        extracted.clone(),
        true,
    );
    check(
        json!({"pointer": "/n", "equals": 12}),
        extracted.clone(),
        true,
    );
    check(
        json!({"pointer": "/n", "equals": "12"}),
        extracted.clone(),
        false,
    );
    // A missing value has no words and equals nothing.
    check(
        json!({"pointer": "/missing", "word": "x"}),
        extracted.clone(),
        false,
    );
    check(
        json!({"pointer": "/missing", "not_word": "x"}),
        extracted.clone(),
        true,
    );
    check(
        json!({"pointer": "/missing", "equals": null}),
        extracted,
        false,
    );
}

#[track_caller]
fn check_malformed(check: Value, expected: &str) {
    let err = format!("{:#}", Check::parse(&check).unwrap_err());
    assert!(err.contains(expected), "{err}");
}

#[test]
fn malformed_checks_are_refused() {
    check_malformed(json!("Paris"), "a check is an object");
    check_malformed(json!({}), "exactly one of");
    check_malformed(json!({"word": "a", "equals": "a"}), "exactly one of");
    check_malformed(json!({"word": ""}), "no empty words");
    check_malformed(json!({"word": []}), "no empty words");
    check_malformed(json!({"word": [1]}), "a list of strings");
    check_malformed(json!({"not_word": 3}), "a string or a list");
    check_malformed(json!({"pointer": "answer", "word": "a"}), "JSON pointer");
}

#[test]
fn the_prompt_set_is_well_formed() {
    let set = PromptSet::parse(PROMPTS).unwrap();
    assert!(
        (24..=40).contains(&set.prompts.len()),
        "{}",
        set.prompts.len()
    );
    let categories: std::collections::BTreeSet<&str> =
        set.prompts.iter().map(|p| p.category.as_str()).collect();
    assert_eq!(
        categories.into_iter().collect::<Vec<_>>(),
        ["arithmetic", "capital", "extraction", "sentiment", "yes/no"]
    );
    for prompt in &set.prompts {
        // Every check can fail: none passes on an empty reply.
        let empty = json!({"answer": "", "state": "", "name": "", "date": ""});
        let passes_anyway = prompt.checks.iter().all(|c| c.passes(&empty));
        assert!(!passes_anyway, "{} is right for an empty reply", prompt.id);
        if prompt.category == "extraction" {
            assert_eq!(
                prompt.schema.as_deref(),
                Some("person_date"),
                "{}",
                prompt.id
            );
        }
    }
    // The extraction schema asks for the fields its checks read.
    assert_eq!(
        set.schemas["person_date"]["required"],
        json!(["name", "date"])
    );
}

#[track_caller]
fn check_set_error(set: Value, expected: &str) {
    let err = format!("{:#}", PromptSet::parse(&set.to_string()).unwrap_err());
    assert!(err.contains(expected), "{err}");
}

#[test]
fn malformed_prompt_sets_are_refused() {
    let prompt = json!({"id": "a", "category": "c", "prompt": "p", "checks": [{"word": "x"}]});
    check_set_error(json!({}), "no `prompts` array");
    check_set_error(
        json!({"prompts": [prompt, prompt]}),
        "two prompts have the id `a`",
    );
    check_set_error(
        json!({"prompts": [{"id": "a", "category": "c", "prompt": "p", "checks": []}]}),
        "at /prompts/0: no `checks`",
    );
    check_set_error(
        json!({"prompts": [{"id": "a", "category": "c", "checks": [{"word": "x"}]}]}),
        "no `prompt` string",
    );
    check_set_error(
        json!({"prompts": [{"id": "a", "category": "c", "prompt": "p", "schema": "s",
            "checks": [{"word": "x"}]}]}),
        "names the schema `s`",
    );
}

fn prompt(id: &str, category: &str, checks: Value) -> Prompt {
    Prompt::parse(&json!({"id": id, "category": category, "prompt": "?", "checks": checks}))
        .unwrap()
}

fn finished(code: Option<i32>, stdout: Value) -> Finished {
    Finished {
        code,
        timed_out: false,
        stdout: stdout.to_string(),
        stderr: String::new(),
    }
}

fn report(value: Value, finish_reasons: &[&str]) -> Value {
    let attempts: Vec<Value> = finish_reasons
        .iter()
        .map(|r| json!({"verdict": "valid", "finish_reason": r}))
        .collect();
    json!({"value": value, "attempts": attempts, "usage": {"input_tokens": 100, "output_tokens": 20},
        "elapsed_ms": 2000})
}

#[test]
fn outcomes_from_reports() {
    let capital = prompt("capital", "capital", json!([{"word": "Paris"}]));
    let second = Duration::from_secs(1);

    let right = Outcome::of(
        &capital,
        &finished(
            Some(0),
            report(json!({"answer": "Paris", "state": "answered"}), &["stop"]),
        ),
        second,
    );
    assert_eq!(right.verdict, Verdict::Valid);
    assert!(right.is_right());
    assert_eq!(
        (
            right.attempts,
            right.input_tokens,
            right.output_tokens,
            right.elapsed_ms,
            right.wall_ms
        ),
        (1, 100, 20, 2000, 1000)
    );
    assert!(!right.truncated);

    let wrong = Outcome::of(
        &capital,
        &finished(
            Some(0),
            report(json!({"answer": "Lyon", "state": "x"}), &["stop"]),
        ),
        second,
    );
    assert!(!wrong.is_right());
    assert_eq!(wrong.failed_checks, ["/answer has the word `Paris`"]);

    // Exit 1: the retries ran out; the report holds a null value. Not right, whatever it held.
    let invalid = Outcome::of(
        &capital,
        &finished(Some(1), report(Value::Null, &["length", "length"])),
        second,
    );
    assert_eq!(invalid.verdict, Verdict::Invalid);
    assert!(!invalid.is_right());
    assert!(invalid.truncated);
    assert_eq!(invalid.attempts, 2);

    // An exit claij should not give, with the last stderr line as the reason.
    let failed = Outcome::of(
        &capital,
        &Finished {
            code: Some(2),
            timed_out: false,
            stdout: String::new(),
            stderr: "warming up\nerror: no model\n\n".into(),
        },
        second,
    );
    assert_eq!(
        failed.verdict,
        Verdict::Failed("exit 2: error: no model".into())
    );
    // Exit 0 with something that is not a report is a failure too, not a valid answer.
    let garbage = Outcome::of(
        &capital,
        &Finished {
            code: Some(0),
            timed_out: false,
            stdout: "Paris".into(),
            stderr: String::new(),
        },
        second,
    );
    assert!(matches!(garbage.verdict, Verdict::Failed(_)), "{garbage:?}");
    assert!(!garbage.is_right());

    let timeout = Outcome::of(
        &capital,
        &Finished {
            code: None,
            timed_out: true,
            stdout: String::new(),
            stderr: String::new(),
        },
        second,
    );
    assert_eq!(timeout.verdict, Verdict::Timeout);
    assert_eq!(timeout.failed_checks.len(), 1);
}

#[track_caller]
fn check_truncated(report: Value, expected: bool) {
    assert_eq!(is_truncated(&report), expected, "{report}");
}

#[test]
fn truncation_flags() {
    check_truncated(report(json!({"answer": "a"}), &["stop"]), false);
    check_truncated(report(json!({"answer": "a"}), &["length"]), true);
    // Only the last attempt's finish counts: a retry that finished is not a cut reply.
    check_truncated(report(json!({"answer": "a"}), &["length", "stop"]), false);
    check_truncated(json!({"value": {"answer": "a"}, "truncated": true}), true);
    check_truncated(json!({"value": {"answer": "a"}, "truncated": false}), false);
    check_truncated(json!({"value": {"answer": "a"}, "truncated": []}), false);
    check_truncated(
        json!({"value": {"answer": "a"}, "truncated": ["/answer"]}),
        true,
    );
    check_truncated(
        json!({"value": {}, "attempts": [{"finish_reason": "stop", "truncation": {"pointer": "/answer"}}]}),
        true,
    );
    check_truncated(
        json!({"value": {}, "attempts": [{"finish_reason": "stop",
            "cut_strings": [{"pointer": "/answer", "limit": 256}]}]}),
        true,
    );
    check_truncated(
        json!({"value": {}, "attempts": [{"finish_reason": "stop", "cut_strings": []}]}),
        false,
    );
    // A flag on an earlier attempt is about a reply that was retried, not the answer.
    check_truncated(
        json!({"value": {}, "attempts": [{"cut_strings": [{"pointer": "/answer"}]},
            {"finish_reason": "stop"}]}),
        false,
    );
    // The model writing the word inside its value is not a flag.
    check_truncated(json!({"value": {"truncated": true}, "attempts": []}), false);
    check_truncated(json!("not a report"), false);
}

fn outcome(category: &str, value: Option<Value>, right: bool, truncated: bool) -> Outcome {
    Outcome {
        id: "x".into(),
        category: category.into(),
        verdict: if value.is_some() {
            Verdict::Valid
        } else {
            Verdict::Invalid
        },
        value,
        failed_checks: if right {
            vec![]
        } else {
            vec!["/answer has the word `x`".into()]
        },
        truncated,
        attempts: 2,
        input_tokens: 150,
        output_tokens: 50,
        elapsed_ms: 1000,
        wall_ms: 1500,
    }
}

#[test]
fn scores_count_commas_states_and_truncation() {
    let outcomes = [
        outcome(
            "capital",
            Some(json!({"answer": "Paris,", "state": "answered"})),
            true,
            false,
        ),
        outcome(
            "capital",
            Some(json!({"answer": "Lyon", "state": "IT,"})),
            false,
            true,
        ),
        outcome(
            "extraction",
            Some(json!({"name": "Ada ,  ", "date": "2020-01-01", "tags": ["a,", "b"], "n": 1})),
            true,
            false,
        ),
        // An invalid reply: counts for the shares of right, valid and truncated, not for strings.
        outcome("extraction", None, false, true),
    ];
    let score = Score::of(&outcomes);
    assert_eq!(
        (score.prompts, score.right, score.valid, score.truncated),
        (4, 2, 3, 2)
    );
    // Strings: Paris, answered, Lyon, IT, / Ada, 2020, a, b: four end in a comma (spaces aside).
    assert_eq!((score.comma_strings, score.strings), (4, 8));
    assert_eq!((score.sensible_states, score.with_state), (1, 2));
    assert_eq!(
        score.states,
        BTreeMap::from([("IT,".to_owned(), 1), ("answered".to_owned(), 1)])
    );
    assert_eq!(score.categories["capital"], [2, 1, 2]);
    assert_eq!(score.categories["extraction"], [2, 1, 1]);
    assert_eq!(
        (score.attempts, score.output_tokens, score.elapsed_ms),
        (8, 200, 4000)
    );
    assert_eq!(score.tokens_per_second(), Some(50.0));
    assert_eq!(score.all_tokens_per_second(), Some(200.0));
    assert_eq!(Score::of(&[]).tokens_per_second(), None);

    let md = markdown(&score, &outcomes, "/bin/claij");
    for row in [
        "| content right (valid and every check passes) | 2/4 (50.0%) |",
        "| valid | 3/4 (75.0%) |",
        "| string values ending in `,` (all strings of the valid replies) | 4/8 (50.0%) |",
        "(valid replies with a `state`) | 1/2 (50.0%) |",
        "| replies flagged truncated | 2/4 (50.0%) |",
        "| attempts per prompt (mean) | 2.00 |",
        "| time per prompt (mean, whole process) | 1.5 s |",
        "| tokens per prompt (mean, prompt + output, all attempts) | 150 + 50 |",
        "| output tokens per second (claij's turn time) | 50.0 |",
        "| prompt + output tokens per second (claij's turn time) | 200.0 |",
        "distinct `state` values: `IT,` ×1, `answered` ×1",
        "| capital | 2 | 1/2 (50.0%) | 2/2 (100.0%) |",
        "| x | invalid, truncated | no | 2 | 1.5 s | /answer has the word `x` |  |",
    ] {
        assert!(md.contains(row), "no {row:?} in\n{md}");
    }
    let report = report_json(&score, &outcomes, "/bin/claij");
    assert_eq!(report["right_share"], json!(0.5));
    assert_eq!(report["comma_share"], json!(0.5));
    assert_eq!(report["states"], json!({"IT,": 1, "answered": 1}));
    assert_eq!(report["outcomes"].as_array().unwrap().len(), 4);
}

#[test]
fn shares_and_excerpts() {
    assert_eq!(share(1, 3), "1/3 (33.3%)");
    assert_eq!(share(0, 0), "0/0 (n/a)");
    assert_eq!(excerpt("abcdef", 3), "abc…");
    assert_eq!(excerpt("a\nb", 10), "a b");
    assert_eq!(excerpt("ééé", 2), "éé…");
    assert_eq!(cell("a|b"), "a\\|b");
}

#[track_caller]
fn check_options(args: &[&str], expected: Result<Options, &str>) {
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    assert_eq!(Options::parse(&args), expected.map_err(str::to_owned));
}

#[test]
fn options() {
    check_options(&[], Ok(Options::default()));
    check_options(
        &[
            "--claij",
            "/tmp/claij",
            "--out",
            "/tmp/out",
            "--timeout",
            "60",
            "--only",
            "capital",
            "--max-retries",
            "1",
        ],
        Ok(Options {
            claij: Some("/tmp/claij".into()),
            out: Some("/tmp/out".into()),
            timeout: Duration::from_secs(60),
            only: Some("capital".into()),
            max_retries: Some("1".into()),
        }),
    );
    check_options(&["--claij"], Err("`bench quality --claij` needs a value"));
    check_options(
        &["--timeout", "0"],
        Err("`bench quality --timeout` takes whole seconds above 0, not `0`"),
    );
    check_options(
        &["--timeout", "soon"],
        Err("`bench quality --timeout` takes whole seconds above 0, not `soon`"),
    );
    check_options(&["--quick"], Err("`bench quality` does not take `--quick`"));
}

#[cfg(unix)]
#[test]
fn a_slow_child_is_killed_at_the_timeout() {
    // `sleep` stands in for a model that never finishes; the bound is what is checked, not a time.
    let mut command = Command::new("sleep");
    command.arg("600");
    let finished = run_with_timeout(command, Duration::from_millis(100)).unwrap();
    assert!(finished.timed_out);
    assert_eq!(finished.code, None);

    let mut command = Command::new("sh");
    command.args(["-c", "echo out; echo err >&2; exit 3"]);
    let finished = run_with_timeout(command, Duration::from_secs(600)).unwrap();
    assert_eq!(
        finished,
        Finished {
            code: Some(3),
            timed_out: false,
            stdout: "out\n".into(),
            stderr: "err\n".into()
        }
    );
}
