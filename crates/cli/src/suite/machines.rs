//! The suites that run state machines: a code review (`examples/fsm/code-review.json`) and the MCP
//! FSM against the real filesystem server.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, anyhow};
use claij_fsm::{Fsm, Interrupt, Outcome, Run, Runner};
use claij_mcp::{ClientOptions, McpConfig, Services, mcp_fsm};
use serde_json::{Value, json};

use super::chat::clip;
use super::{Env, Judged, Tally, nonce};

/// The machine, compiled into the binary so the suite runs from any directory.
const CODE_REVIEW: &str = include_str!("../../../../examples/fsm/code-review.json");

/// The states the chairman must consult before the verdict.
const REVIEWERS: [&str; 2] = ["correctness-reviewer", "design-reviewer"];

/// A model can loop between states; a review needs about six transitions.
const MAX_TRANSITIONS: usize = 16;

/// The code review runs to `end` with a verdict.
pub(super) async fn code_review(env: &Env, tally: &mut Tally) -> Result<Judged> {
    let definition = serde_json::from_str(CODE_REVIEW).context("examples/fsm/code-review.json")?;
    let runner = Runner::new(Fsm::new(definition)?)
        .with_llm(env.backend.clone(), env.config())
        .with_max_transitions(MAX_TRANSITIONS);
    let mut run = runner.start(json!({
        "code": "fn average(xs: &[i32]) -> i32 {\n    xs.iter().sum::<i32>() / xs.len() as i32\n}",
        "language": "rust",
        "context": "a helper for the statistics page"
    }))?;
    let outcome = runner.run(&mut run, &Interrupt::new(), None).await;
    count_trail(&run, tally);
    let path = route(&run);
    Ok(match outcome {
        Ok(Outcome::Finished { state, event }) => {
            let decision = event["decision"].as_str().unwrap_or_default().to_owned();
            // The machine's prompt asks the chairman to hear both reviewers before deciding.
            let heard = REVIEWERS
                .iter()
                .all(|r| run.trail.entries.iter().any(|e| e.from == *r));
            Judged {
                passed: state == "end" && !decision.is_empty() && heard,
                detail: format!(
                    "finished in {state} with decision {decision:?}; both reviewers heard: {heard}; path {path}"
                ),
            }
        }
        Ok(other) => Judged::fail(&format!("stopped: {other:?}; path {path}")),
        Err(err) => Judged::fail(&crate::one_line(&format!("{err}; path {path}"))),
    })
}

/// The MCP FSM reads a file holding a random token through the filesystem server from
/// `CLAIJ_MCP_SERVERS`; the final answer must contain the token.
pub(super) async fn mcp(env: &Env, tally: &mut Tally) -> Result<Judged> {
    let servers = servers_dir()?;
    let scratch = std::env::temp_dir().join(format!("claij-suite-mcp-{}", nonce()));
    std::fs::create_dir_all(&scratch)
        .with_context(|| format!("cannot create {}", scratch.display()))?;
    let result = read_token(env, tally, &servers, &scratch).await;
    // Best effort: a leftover temp dir must not hide the test's result.
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

async fn read_token(
    env: &Env,
    tally: &mut Tally,
    servers: &Path,
    scratch: &Path,
) -> Result<Judged> {
    let token = nonce();
    let file = scratch.join("token.txt");
    std::fs::write(&file, format!("{token}\n"))
        .with_context(|| format!("cannot write {}", file.display()))?;
    let script =
        servers.join("npm/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    let config = McpConfig::from_value(&json!({"mcpServers": {"fs": {
        "command": "node",
        "args": [script.display().to_string(), scratch.display().to_string()]
    }}}))?;
    let services = Services::connect(&config, ClientOptions::default()).await?;
    let result = async {
        let runner = mcp_fsm::runner(&services, env.backend.clone(), env.config())?
            .with_max_transitions(MAX_TRANSITIONS);
        let mut run = runner.start(json!({"request": format!(
            "Read the file {} with the fs tools and answer with its exact contents.",
            file.display()
        )}))?;
        let outcome = runner.run(&mut run, &Interrupt::new(), None).await;
        count_trail(&run, tally);
        let path = route(&run);
        Ok::<_, anyhow::Error>(match outcome {
            Ok(Outcome::Finished { event, .. }) => {
                let answer = answer_text(&event);
                let found = answer.contains(&token);
                Judged {
                    passed: found,
                    detail: format!(
                        "token in the answer: {found}; path {path}; answer: {}",
                        clip(&answer)
                    ),
                }
            }
            Ok(other) => Judged::fail(&format!("stopped: {other:?}; path {path}")),
            Err(err) => Judged::fail(&crate::one_line(&format!("{err}; path {path}"))),
        })
    }
    .await;
    services.close().await;
    result
}

/// The install directory of `cargo xtask mcp-servers`.
fn servers_dir() -> Result<PathBuf> {
    let dir = std::env::var_os("CLAIJ_MCP_SERVERS")
        .map(PathBuf::from)
        .ok_or_else(|| anyhow!("CLAIJ_MCP_SERVERS is not set: run `cargo xtask mcp-servers`"))?;
    if !dir.join("servers.json").is_file() {
        return Err(anyhow!(
            "no MCP servers in {}: run `cargo xtask mcp-servers`",
            dir.display()
        ));
    }
    Ok(dir)
}

/// The text parts of an MCP result event.
fn answer_text(event: &Value) -> String {
    event["result"]["content"]
        .as_array()
        .map(|parts| {
            parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// Counts the model calls recorded in the trail.
fn count_trail(run: &Run, tally: &mut Tally) {
    for entry in &run.trail.entries {
        tally.count(entry.attempts.iter().map(|a| (&a.verdict, &a.usage)));
    }
}

/// The states visited, `a>b>c`.
fn route(run: &Run) -> String {
    let mut states: Vec<&str> = run.trail.entries.iter().map(|e| e.from.as_str()).collect();
    states.push(run.state.as_str());
    states.join(">")
}
