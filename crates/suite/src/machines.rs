//! The suites that run state machines, and MCP: a code review (`examples/fsm/code-review.json`), and
//! the MCP FSM and the MCP interceptor (`mcp_calls`) against the real filesystem server.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, anyhow};
use claij_fsm::{Fsm, Interrupt, Outcome, Run, Runner};
use claij_interceptors::{Chain, Context, Pipeline};
use claij_mcp::{ClientOptions, McpConfig, McpInterceptor, Services, mcp_fsm};
use serde_json::{Value, json};

use super::chat::clip;
use super::{Env, Judged, Tally, nonce};

/// The machine, compiled into the binary so the suite runs from any directory.
const CODE_REVIEW: &str = include_str!("../../../examples/fsm/code-review.json");

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

/// How an MCP test reaches the filesystem server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum McpRoute {
    /// The MCP FSM (`tools/call` through its servicing state).
    Fsm,
    /// The MCP interceptor: `mcp_calls` in a reply, the result in the next turn's prompt.
    Interceptor,
}

/// A file holding a random token, read through the filesystem server from `CLAIJ_MCP_SERVERS`
/// by `route`; the final answer must contain the token.
pub(super) async fn mcp(env: &Env, tally: &mut Tally, route: McpRoute) -> Result<Judged> {
    let servers = servers_dir()?;
    let scratch = std::env::temp_dir().join(format!("claij-suite-mcp-{}", nonce()));
    std::fs::create_dir_all(&scratch)
        .with_context(|| format!("cannot create {}", scratch.display()))?;
    let result = read_token(env, tally, &servers, &scratch, route).await;
    // Best effort: a leftover temp dir must not hide the test's result.
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

async fn read_token(
    env: &Env,
    tally: &mut Tally,
    servers: &Path,
    scratch: &Path,
    route: McpRoute,
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
    let result = match route {
        McpRoute::Fsm => through_fsm(env, tally, &services, &file, &token).await,
        McpRoute::Interceptor => through_calls(env, tally, &services, &file, &token).await,
    };
    services.close().await;
    result
}

/// Turn 1 lists a read of the file in `mcp_calls`; turn 2 reports what it read.
async fn through_calls(
    env: &Env,
    tally: &mut Tally,
    services: &Services,
    file: &Path,
    token: &str,
) -> Result<Judged> {
    let chain = Chain::new().with(McpInterceptor::new(services.clone()));
    let pipeline = Pipeline::new(env.backend.clone(), env.config(), chain);
    let mut ctx = Context::default();
    let request = format!(
        "Read the file {} with the fs tools: list a call of the fs server's file-reading tool in \
         `mcp_calls`; you will see its contents on the next turn.",
        file.display()
    );
    let Some(_) = env.ask(&pipeline, &mut ctx, &request, tally).await? else {
        return Ok(Judged::fail("turn 1: no valid reply within the retries"));
    };
    let calls: Vec<String> = ctx
        .tool_results
        .iter()
        .filter(|r| r.name.starts_with("fs."))
        .map(|r| r.name.clone())
        .collect();
    let read = ctx
        .tool_results
        .iter()
        .any(|r| matches!(&r.output, Ok(output) if output.to_string().contains(token)));
    let Some(second) = env
        .ask(
            &pipeline,
            &mut ctx,
            "What exactly does the file contain? Put its contents in `answer`.",
            tally,
        )
        .await?
    else {
        return Ok(Judged::fail(&format!(
            "calls {calls:?}, token read: {read}; turn 2: no valid reply within the retries"
        )));
    };
    let answer = second.value["answer"].as_str().unwrap_or_default();
    let found = answer.contains(token);
    Ok(Judged {
        passed: read && found,
        detail: format!(
            "calls {calls:?}; token read: {read}; token in the answer: {found}; answer: {}",
            clip(answer)
        ),
    })
}

/// The MCP FSM asked to read the file.
async fn through_fsm(
    env: &Env,
    tally: &mut Tally,
    services: &Services,
    file: &Path,
    token: &str,
) -> Result<Judged> {
    let runner = mcp_fsm::runner(services, env.backend.clone(), env.config())?
        .with_max_transitions(MAX_TRANSITIONS);
    let mut run = runner.start(json!({"request": format!(
        "Read the file {} with the fs tools and answer with its exact contents.",
        file.display()
    )}))?;
    let outcome = runner.run(&mut run, &Interrupt::new(), None).await;
    count_trail(&run, tally);
    let path = route(&run);
    Ok(match outcome {
        Ok(Outcome::Finished { event, .. }) => {
            let answer = answer_text(&event);
            let found = answer.contains(token);
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
