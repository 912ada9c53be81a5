//! `cargo xtask bench quality`: whether the embedded model's answers are right, not only valid.
//!
//! A fixed set of prompts with checkable answers (`quality.json`: capitals, arithmetic, sentiment,
//! yes/no facts, extraction of names and dates under a schema of their own) goes through
//! `claij ask --llm local --json`, one process per prompt. The figures (share of right answers, of
//! valid ones, of strings ending in a stray `,`, of `state` values from the declared set, of replies
//! flagged truncated, time and tokens per second) go to stdout and `target/claij/bench-quality.md`
//! and `.json`. They are for comparing builds; no test asserts them.

mod report;
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Map, Value};

use crate::cmd::{Cmd, display_path, root};
use crate::metadata::Workspace;

/// The prompts and the schemas they use; compiled in, so the runner needs no path to find them.
const PROMPTS: &str = include_str!("quality.json");
/// The `state` values a reply without an FSM should take.
pub(super) const SENSIBLE_STATES: [&str; 3] = ["answered", "needs_clarification", "cannot_answer"];
/// Per prompt, unless `--timeout` says otherwise: four attempts of 512 tokens fit on a slow machine.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);
/// How much of a reply the per-prompt table shows.
const EXCERPT_CHARS: usize = 100;

/// What `cargo xtask bench quality` was asked to do.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Options {
    /// The `claij` binary to measure; default `$CLAIJ_BIN`, else a release build of this tree.
    pub claij: Option<PathBuf>,
    /// Where the reports go; default `target/claij`.
    pub out: Option<PathBuf>,
    /// Per prompt: a prompt still running after it is killed and counted as timed out.
    pub timeout: Duration,
    /// Only the prompts whose id contains this.
    pub only: Option<String>,
    /// Passed on as `claij ask --max-retries`.
    pub max_retries: Option<String>,
}

/// The prompt set, as `quality.json` holds it.
#[derive(Debug, Clone, PartialEq)]
struct PromptSet {
    schemas: Map<String, Value>,
    prompts: Vec<Prompt>,
}

/// One prompt with a checkable answer.
#[derive(Debug, Clone, PartialEq)]
struct Prompt {
    id: String,
    category: String,
    prompt: String,
    /// The name of one of the set's schemas, given as `--schema`.
    schema: Option<String>,
    /// All must pass for the content to be right.
    checks: Vec<Check>,
}

/// One condition on the value at `pointer`.
#[derive(Debug, Clone, PartialEq)]
struct Check {
    pointer: String,
    kind: CheckKind,
}

#[derive(Debug, Clone, PartialEq)]
enum CheckKind {
    /// One of these appears as a whole word, case-insensitive.
    Word(Vec<String>),
    /// None of these appears as a whole word, case-insensitive.
    NotWord(Vec<String>),
    /// One of these appears anywhere, case-insensitive.
    Contains(Vec<String>),
    /// The value is exactly this.
    Equals(Value),
}

/// How one run of `claij ask` ended.
#[derive(Debug, Clone, PartialEq)]
enum Verdict {
    /// Exit 0: a valid document.
    Valid,
    /// Exit 1: no valid document within the retries.
    Invalid,
    /// Killed after `--timeout`.
    Timeout,
    /// Anything else: an exit code claij should not give here, or a report that is not JSON.
    Failed(String),
}

/// One prompt's result.
#[derive(Debug, Clone, PartialEq)]
struct Outcome {
    id: String,
    category: String,
    verdict: Verdict,
    /// The answer's value, when valid.
    value: Option<Value>,
    /// The checks that did not pass (all of them when there is no value).
    failed_checks: Vec<String>,
    truncated: bool,
    attempts: u64,
    input_tokens: u64,
    output_tokens: u64,
    /// claij's own `elapsed_ms` (the turn, without starting the process and loading the model).
    elapsed_ms: u64,
    /// The whole process, as the runner timed it.
    wall_ms: u64,
}

/// The figures over all outcomes.
#[derive(Debug, Clone, Default, PartialEq)]
struct Score {
    prompts: usize,
    right: usize,
    valid: usize,
    truncated: usize,
    /// String leaves of the valid values, and those ending in `,`.
    strings: usize,
    comma_strings: usize,
    /// Valid values with a string `/state`, and those from [`SENSIBLE_STATES`].
    with_state: usize,
    sensible_states: usize,
    /// Each distinct `state` and how often it came.
    states: BTreeMap<String, usize>,
    /// Per category: prompts, right, valid.
    categories: BTreeMap<String, [usize; 3]>,
    attempts: u64,
    input_tokens: u64,
    output_tokens: u64,
    elapsed_ms: u64,
    wall_ms: u64,
}

/// `cargo xtask bench quality [OPTIONS]`: the quality part alone, its table on stdout.
pub(super) fn run(args: &[String]) -> Result<ExitCode> {
    let options = match Options::parse(args) {
        Ok(options) => options,
        Err(message) => return crate::usage_error(&message),
    };
    let workspace = Workspace::load()?;
    let markdown = measure(&options, &workspace)?;
    print!("\n{markdown}");
    Ok(ExitCode::SUCCESS)
}

/// Runs the prompt set and writes `bench-quality.md` and `.json`; returns the markdown.
pub(super) fn measure(options: &Options, workspace: &Workspace) -> Result<String> {
    let set = PromptSet::parse(PROMPTS).context("xtask/src/bench/quality.json is malformed")?;
    let prompts: Vec<&Prompt> = set
        .prompts
        .iter()
        .filter(|p| options.only.as_ref().is_none_or(|only| p.id.contains(only)))
        .collect();
    if prompts.is_empty() {
        bail!(
            "no prompt id contains `{}`",
            options.only.as_deref().unwrap_or("")
        );
    }
    let model = crate::model::ensure()?;
    let model_dir = model
        .parent()
        .map(Path::to_path_buf)
        .with_context(|| format!("{} has no directory", model.display()))?;
    let (claij, tree) = match options
        .claij
        .clone()
        .or_else(|| std::env::var_os("CLAIJ_BIN").map(PathBuf::from))
    {
        Some(path) => (path, None),
        None => (build_claij(workspace)?, Some(tree_description())),
    };
    if !claij.is_file() {
        bail!("no claij binary at {}", claij.display());
    }
    let scratch = std::env::temp_dir().join(format!("claij-bench-quality-{}", std::process::id()));
    let result = run_prompts(&set, &prompts, &claij, &model_dir, &scratch, options);
    // Best effort: a leftover temp dir is harmless and must not hide the bench's own result.
    let _ = fs::remove_dir_all(&scratch);
    let outcomes = result?;

    let score = Score::of(&outcomes);
    let described = match &tree {
        Some(tree) => format!("{} (built from {tree})", claij.display()),
        None => claij.display().to_string(),
    };
    let markdown = report::markdown(&score, &outcomes, &described);
    let out = options
        .out
        .clone()
        .unwrap_or_else(|| workspace.target_directory.join("claij"));
    fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
    let md_path = out.join("bench-quality.md");
    fs::write(&md_path, &markdown)
        .with_context(|| format!("cannot write {}", md_path.display()))?;
    let json_path = out.join("bench-quality.json");
    let json = report::report_json(&score, &outcomes, &described);
    fs::write(&json_path, serde_json::to_string_pretty(&json)? + "\n")
        .with_context(|| format!("cannot write {}", json_path.display()))?;
    println!(
        "quality report: {} and {}",
        display_path(&md_path),
        display_path(&json_path)
    );
    Ok(markdown)
}

impl Default for Options {
    fn default() -> Self {
        Options {
            claij: None,
            out: None,
            timeout: DEFAULT_TIMEOUT,
            only: None,
            max_retries: None,
        }
    }
}

impl Options {
    /// `--claij PATH`, `--out DIR`, `--timeout SECS`, `--only TEXT`, `--max-retries N`; the error is
    /// the usage message.
    pub(super) fn parse(args: &[String]) -> Result<Options, String> {
        let mut options = Options::default();
        let mut args = args.iter();
        while let Some(flag) = args.next() {
            let mut value = || {
                args.next()
                    .cloned()
                    .ok_or_else(|| format!("`bench quality {flag}` needs a value"))
            };
            match flag.as_str() {
                "--claij" => options.claij = Some(PathBuf::from(value()?)),
                "--out" => options.out = Some(PathBuf::from(value()?)),
                "--only" => options.only = Some(value()?),
                "--max-retries" => options.max_retries = Some(value()?),
                "--timeout" => {
                    let text = value()?;
                    let secs: u64 = text
                        .parse()
                        .ok()
                        .filter(|&secs| secs > 0)
                        .ok_or_else(|| {
                            format!("`bench quality --timeout` takes whole seconds above 0, not `{text}`")
                        })?;
                    options.timeout = Duration::from_secs(secs);
                }
                other => return Err(format!("`bench quality` does not take `{other}`")),
            }
        }
        Ok(options)
    }
}

/// `cargo build --release -p claij-cli`, and the binary it made.
fn build_claij(workspace: &Workspace) -> Result<PathBuf> {
    Cmd::cargo()
        .args(["build", "--release", "-p", "claij-cli"])
        .run()
        .context("cannot build the claij CLI")?;
    Ok(workspace
        .target_directory
        .join("release")
        .join(format!("claij{}", std::env::consts::EXE_SUFFIX)))
}

/// `abc1234`, or `abc1234 with uncommitted changes`; `an unknown commit` without git.
fn tree_description() -> String {
    let Ok(commit) = Cmd::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .read()
    else {
        return "an unknown commit".to_owned();
    };
    let changed = Cmd::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .read()
        .is_ok_and(|status| !status.trim().is_empty());
    let commit = commit.trim();
    if changed {
        format!("{commit} with uncommitted changes")
    } else {
        commit.to_owned()
    }
}

fn run_prompts(
    set: &PromptSet,
    prompts: &[&Prompt],
    claij: &Path,
    model_dir: &Path,
    scratch: &Path,
    options: &Options,
) -> Result<Vec<Outcome>> {
    // An empty configuration directory: the bench measures claij's defaults, not the user's.
    let config_home = scratch.join("config");
    fs::create_dir_all(&config_home)
        .with_context(|| format!("cannot create {}", config_home.display()))?;
    let mut schema_files = BTreeMap::new();
    for (name, schema) in &set.schemas {
        let path = scratch.join(format!("{name}.schema.json"));
        fs::write(&path, serde_json::to_string_pretty(schema)?)
            .with_context(|| format!("cannot write {}", path.display()))?;
        schema_files.insert(name.clone(), path);
    }
    println!(
        "{} prompts through `claij ask --llm local --json` ({}), at most {} s each",
        prompts.len(),
        claij.display(),
        options.timeout.as_secs()
    );
    let mut outcomes = Vec::with_capacity(prompts.len());
    for (i, prompt) in prompts.iter().enumerate() {
        let mut command = Command::new(claij);
        command
            .args(["ask", &prompt.prompt, "--llm", "local", "--json"])
            .env("CLAIJ_MODEL_DIR", model_dir)
            .env("XDG_CONFIG_HOME", &config_home)
            .env_remove("CLAIJ_CONFIG")
            .current_dir(root());
        if let Some(name) = &prompt.schema {
            let path = schema_files
                .get(name)
                .with_context(|| format!("prompt {} names no schema of the set", prompt.id))?;
            command.arg("--schema").arg(path);
        }
        if let Some(n) = &options.max_retries {
            command.args(["--max-retries", n]);
        }
        let started = Instant::now();
        let finished = run_with_timeout(command, options.timeout)
            .with_context(|| format!("cannot run {} for prompt {}", claij.display(), prompt.id))?;
        let wall = started.elapsed();
        let outcome = Outcome::of(prompt, &finished, wall);
        println!("[{}/{}] {}", i + 1, prompts.len(), outcome.line());
        outcomes.push(outcome);
    }
    Ok(outcomes)
}

/// How a child process ended: its exit code (`None` when killed by a signal or the timeout).
#[derive(Debug, Clone, PartialEq)]
struct Finished {
    code: Option<i32>,
    timed_out: bool,
    stdout: String,
    stderr: String,
}

/// Runs `command` with stdin closed and its output captured, killing it after `timeout`.
fn run_with_timeout(mut command: Command, timeout: Duration) -> Result<Finished> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    // Read both pipes while waiting, so a chatty child never blocks on a full pipe.
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let started = Instant::now();
    let (code, timed_out) = loop {
        if let Some(status) = child.try_wait()? {
            break (status.code(), false);
        }
        if started.elapsed() >= timeout {
            kill(&mut child);
            break (None, true);
        }
        thread::sleep(Duration::from_millis(50));
    };
    Ok(Finished {
        code,
        timed_out,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    })
}

fn drain(pipe: Option<impl std::io::Read + Send + 'static>) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            // A read error just ends the capture early.
            let _ = pipe.read_to_end(&mut bytes);
        }
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// Kills this runner's own child and reaps it; it may have just exited on its own.
fn kill(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

impl PromptSet {
    fn parse(text: &str) -> Result<PromptSet> {
        let root: Value = serde_json::from_str(text)?;
        let schemas = root["schemas"].as_object().cloned().unwrap_or_default();
        let prompts = root["prompts"]
            .as_array()
            .context("no `prompts` array")?
            .iter()
            .enumerate()
            .map(|(i, p)| Prompt::parse(p).with_context(|| format!("at /prompts/{i}")))
            .collect::<Result<Vec<_>>>()?;
        let mut seen = std::collections::BTreeSet::new();
        for prompt in &prompts {
            if !seen.insert(&prompt.id) {
                bail!("two prompts have the id `{}`", prompt.id);
            }
            if let Some(schema) = &prompt.schema
                && !schemas.contains_key(schema)
            {
                bail!(
                    "prompt `{}` names the schema `{schema}`, which `schemas` lacks",
                    prompt.id
                );
            }
        }
        Ok(PromptSet { schemas, prompts })
    }
}

impl Prompt {
    fn parse(value: &Value) -> Result<Prompt> {
        let text = |key: &str| -> Result<String> {
            value[key]
                .as_str()
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .with_context(|| format!("no `{key}` string"))
        };
        let checks = value["checks"]
            .as_array()
            .filter(|checks| !checks.is_empty())
            .context("no `checks`: a prompt needs at least one")?
            .iter()
            .enumerate()
            .map(|(i, c)| Check::parse(c).with_context(|| format!("at checks/{i}")))
            .collect::<Result<Vec<_>>>()?;
        Ok(Prompt {
            id: text("id")?,
            category: text("category")?,
            prompt: text("prompt")?,
            schema: value["schema"].as_str().map(str::to_owned),
            checks,
        })
    }
}

impl Check {
    fn parse(value: &Value) -> Result<Check> {
        let object = value.as_object().context("a check is an object")?;
        let pointer = match object.get("pointer") {
            None => "/answer".to_owned(),
            Some(Value::String(p)) if p.is_empty() || p.starts_with('/') => p.clone(),
            Some(other) => bail!("`pointer` is a JSON pointer (\"/answer\"), not {other}"),
        };
        let words = |v: &Value| -> Result<Vec<String>> {
            let words: Vec<String> = match v {
                Value::String(s) => vec![s.clone()],
                Value::Array(items) => items
                    .iter()
                    .map(|i| i.as_str().map(str::to_owned))
                    .collect::<Option<_>>()
                    .context("a list of strings")?,
                _ => bail!("a string or a list of strings"),
            };
            if words.is_empty() || words.iter().any(|w| w.trim().is_empty()) {
                bail!("no empty words");
            }
            Ok(words)
        };
        let kinds: Vec<&str> = ["word", "not_word", "contains", "equals"]
            .into_iter()
            .filter(|k| object.contains_key(*k))
            .collect();
        let kind = match kinds.as_slice() {
            ["word"] => CheckKind::Word(words(&object["word"]).context("`word`")?),
            ["not_word"] => CheckKind::NotWord(words(&object["not_word"]).context("`not_word`")?),
            ["contains"] => CheckKind::Contains(words(&object["contains"]).context("`contains`")?),
            ["equals"] => CheckKind::Equals(object["equals"].clone()),
            _ => bail!("a check has exactly one of `word`, `not_word`, `contains`, `equals`"),
        };
        Ok(Check { pointer, kind })
    }

    /// Whether `value` passes.
    fn passes(&self, value: &Value) -> bool {
        let found = value.pointer(&self.pointer);
        // Words are looked for in a string, or in the JSON text of anything else (`12` as a number).
        let text = found.map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        });
        let text = text.as_deref().unwrap_or("");
        match &self.kind {
            CheckKind::Word(words) => words.iter().any(|w| has_word(text, w)),
            CheckKind::NotWord(words) => !words.iter().any(|w| has_word(text, w)),
            CheckKind::Contains(texts) => {
                let text = text.to_lowercase();
                texts.iter().any(|t| text.contains(&t.to_lowercase()))
            }
            CheckKind::Equals(expected) => found == Some(expected),
        }
    }

    /// `/answer has the word Paris`, for the report.
    fn describe(&self) -> String {
        let list = |words: &[String]| {
            words
                .iter()
                .map(|w| format!("`{w}`"))
                .collect::<Vec<_>>()
                .join(" or ")
        };
        match &self.kind {
            CheckKind::Word(words) => format!("{} has the word {}", self.pointer, list(words)),
            CheckKind::NotWord(words) => format!("{} lacks the word {}", self.pointer, list(words)),
            CheckKind::Contains(texts) => format!("{} contains {}", self.pointer, list(texts)),
            CheckKind::Equals(expected) => format!("{} equals `{expected}`", self.pointer),
        }
    }
}

/// Whether `word` appears in `text` with no letter or digit right before or after it, ignoring case.
fn has_word(text: &str, word: &str) -> bool {
    let text = text.to_lowercase();
    let word = word.to_lowercase();
    if word.is_empty() {
        return false;
    }
    let is_word_char = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    text.match_indices(&word).any(|(start, _)| {
        let before = text[..start].chars().next_back();
        let after = text[start + word.len()..].chars().next();
        !is_word_char(before) && !is_word_char(after)
    })
}

impl Outcome {
    /// Scores one finished run of `claij ask --json` for `prompt`.
    fn of(prompt: &Prompt, finished: &Finished, wall: Duration) -> Outcome {
        let report: Option<Value> = serde_json::from_str(finished.stdout.trim()).ok();
        let verdict = match (finished.timed_out, finished.code, &report) {
            (true, ..) => Verdict::Timeout,
            (false, Some(0), Some(report)) if !report["value"].is_null() => Verdict::Valid,
            (false, Some(1), Some(_)) => Verdict::Invalid,
            (false, code, _) => {
                let last = finished
                    .stderr
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("(no output on stderr)");
                let code = code.map_or_else(|| "a signal".to_owned(), |c| format!("exit {c}"));
                Verdict::Failed(format!("{code}: {}", last.trim()))
            }
        };
        let report = report.unwrap_or(Value::Null);
        let value = (verdict == Verdict::Valid).then(|| report["value"].clone());
        let failed_checks = prompt
            .checks
            .iter()
            .filter(|c| value.as_ref().is_none_or(|v| !c.passes(v)))
            .map(Check::describe)
            .collect();
        let attempts = report["attempts"].as_array().map_or(0, Vec::len);
        Outcome {
            id: prompt.id.clone(),
            category: prompt.category.clone(),
            verdict,
            value,
            failed_checks,
            truncated: is_truncated(&report),
            attempts: u64::try_from(attempts).unwrap_or(u64::MAX),
            input_tokens: report["usage"]["input_tokens"].as_u64().unwrap_or(0),
            output_tokens: report["usage"]["output_tokens"].as_u64().unwrap_or(0),
            elapsed_ms: report["elapsed_ms"].as_u64().unwrap_or(0),
            wall_ms: u64::try_from(wall.as_millis()).unwrap_or(u64::MAX),
        }
    }

    fn is_right(&self) -> bool {
        self.verdict == Verdict::Valid && self.failed_checks.is_empty()
    }

    fn verdict_text(&self) -> String {
        match &self.verdict {
            Verdict::Valid => "valid".to_owned(),
            Verdict::Invalid => "invalid".to_owned(),
            Verdict::Timeout => "timeout".to_owned(),
            Verdict::Failed(why) => format!("failed ({why})"),
        }
    }

    /// `capital-france: right (valid, 1 attempt, 2.1 s) {"answer":…}`, for the progress lines.
    fn line(&self) -> String {
        let judged = if self.is_right() { "right" } else { "wrong" };
        let value = self
            .value
            .as_ref()
            .map(|v| excerpt(&v.to_string(), EXCERPT_CHARS))
            .unwrap_or_default();
        format!(
            "{}: {judged} ({}, {} {}, {:.1} s{}) {value}",
            self.id,
            self.verdict_text(),
            self.attempts,
            if self.attempts == 1 {
                "attempt"
            } else {
                "attempts"
            },
            ms_to_s(self.wall_ms),
            if self.truncated { ", truncated" } else { "" },
        )
    }
}

/// Whether the report says the final reply was cut: a truthy flag (a key naming truncation, or
/// `cut_strings`: strings that reached a bound the schema dialect adds) at the top of the report or
/// in the last attempt, or a last attempt that stopped at the token limit. Earlier attempts, and
/// anything inside the value, do not count.
fn is_truncated(report: &Value) -> bool {
    fn is_flag(key: &str) -> bool {
        key.contains("truncat") || key == "cut_strings"
    }
    fn truthy(value: &Value) -> bool {
        match value {
            Value::Null => false,
            Value::Bool(b) => *b,
            Value::String(s) => !s.is_empty(),
            Value::Array(a) => !a.is_empty(),
            Value::Object(o) => !o.is_empty(),
            Value::Number(_) => true,
        }
    }
    let flagged = |value: &Value| {
        value
            .as_object()
            .is_some_and(|map| map.iter().any(|(key, v)| is_flag(key) && truthy(v)))
    };
    let last = report["attempts"].as_array().and_then(|a| a.last());
    flagged(report) || last.is_some_and(|last| flagged(last) || last["finish_reason"] == "length")
}

/// Every string in `value` (object keys aside), depth first.
fn string_leaves<'a>(value: &'a Value, found: &mut Vec<&'a str>) {
    match value {
        Value::String(s) => found.push(s),
        Value::Array(items) => items.iter().for_each(|v| string_leaves(v, found)),
        Value::Object(map) => map.values().for_each(|v| string_leaves(v, found)),
        _ => {}
    }
}

impl Score {
    fn of(outcomes: &[Outcome]) -> Score {
        let mut score = Score {
            prompts: outcomes.len(),
            ..Score::default()
        };
        for outcome in outcomes {
            let category = score
                .categories
                .entry(outcome.category.clone())
                .or_default();
            category[0] += 1;
            if outcome.is_right() {
                score.right += 1;
                category[1] += 1;
            }
            if outcome.verdict == Verdict::Valid {
                score.valid += 1;
                category[2] += 1;
            }
            score.truncated += usize::from(outcome.truncated);
            score.attempts += outcome.attempts;
            score.input_tokens += outcome.input_tokens;
            score.output_tokens += outcome.output_tokens;
            score.elapsed_ms += outcome.elapsed_ms;
            score.wall_ms += outcome.wall_ms;
            let Some(value) = &outcome.value else {
                continue;
            };
            let mut strings = Vec::new();
            string_leaves(value, &mut strings);
            score.strings += strings.len();
            score.comma_strings += strings
                .iter()
                .filter(|s| s.trim_end().ends_with(','))
                .count();
            if let Some(state) = value.pointer("/state").and_then(Value::as_str) {
                score.with_state += 1;
                score.sensible_states += usize::from(SENSIBLE_STATES.contains(&state));
                *score.states.entry(state.to_owned()).or_default() += 1;
            }
        }
        score
    }

    /// Output tokens per second of claij's own turn time; `None` before any time passed.
    fn tokens_per_second(&self) -> Option<f64> {
        (self.elapsed_ms > 0).then(|| self.output_tokens as f64 * 1000.0 / self.elapsed_ms as f64)
    }

    /// Prompt and output tokens per second of claij's own turn time: with a long prompt and a
    /// short answer, reading the prompt takes most of the time.
    fn all_tokens_per_second(&self) -> Option<f64> {
        (self.elapsed_ms > 0).then(|| {
            (self.input_tokens + self.output_tokens) as f64 * 1000.0 / self.elapsed_ms as f64
        })
    }
}

fn ms_to_s(ms: u64) -> f64 {
    ms as f64 / 1000.0
}

/// The first `max` characters of `text` on one line, with `…` when cut.
fn excerpt(text: &str, max: usize) -> String {
    let line = text.replace(['\n', '\r'], " ");
    match line.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}
