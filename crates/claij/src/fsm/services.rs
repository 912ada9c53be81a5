//! The services `service` states run (feature `mcp`), from the configuration: every
//! `mcpServers` entry (through the run's project) as `mcp` (all servers, tools named
//! `server.tool`) and under the server's own name, and the built-in `tools` (the Rust tools the
//! wiring is given, [`super::Wiring::with_tools`]) and `eval` (the sandboxed Rhai evaluator of the
//! `eval` interceptor).
//!
//! Every one of them speaks the tool loop's shape: the event entering the state carries a JSON-RPC
//! `tools/call` request in `message`, and the event leaving it the JSON-RPC response whose `result`
//! is MCP content (`{content: [{type: "text", text}], isError}`); a JSON-RPC batch (an array of
//! requests) is answered by the array of responses; a malformed call, an unknown tool or
//! a failing one is an error result the model reads, never the end of the run. `eval` takes
//! `{"name": "eval", "arguments": {"code": "..."}}`. Every call runs through the one tool
//! executor ([`claij_interceptors::tool`]): the same argument check, limits and result budget as
//! an agent run's calls and a reply's.

#[cfg(test)]
mod tests;

use std::collections::BTreeSet;
use std::sync::Arc;

use claij_backends::{BoxFuture, ToolCall};
use claij_fsm::journal::SubDefinition;
use claij_fsm::{Action, Definition, Problem, Runner, Service, ServiceCall};
use claij_interceptors::builtin::eval::Eval;
use claij_interceptors::builtin::tools::Tools;
use claij_interceptors::{BoxError, Executor, Limits, ToolError};
use claij_mcp::mcp_fsm::{self, McpService, ToolsCall, tools_response};
use claij_mcp::{CallFailure, CallOutcome, Content, Services};
use serde_json::{Value, json};

use super::Error;
use crate::Claij;
use crate::settings::Settings;

type Result<T, E = Error> = std::result::Result<T, E>;

/// The built-in services, always there.
const BUILTIN: [&str; 2] = ["eval", "tools"];

/// The services a configuration offers, by name, in order (`tools` when the run has `tools`).
fn known(settings: &Settings, tools: bool) -> BTreeSet<String> {
    let mut names: BTreeSet<String> = BUILTIN
        .iter()
        .filter(|s| tools || **s != "tools")
        .map(|s| (*s).to_owned())
        .collect();
    if let Some(mcp) = settings.mcp.as_ref().filter(|m| !m.servers.is_empty()) {
        names.insert(mcp_fsm::SERVICE.to_owned());
        names.extend(mcp.servers.keys().cloned());
    }
    names
}

/// The service a `service` state runs: its `config.service`, else its id.
fn service_of(state: &claij_fsm::State) -> &str {
    state.config_str("service").unwrap_or(&state.id)
}

/// Everything a run refuses before anything runs, the one check of a run, a resumed run, a
/// Restate worker's run and a validation: the problems of `definition` and of every sub-FSM it
/// runs (`subs`), each at its pointer ([`problems_with_subs`]), given the configuration and the
/// project.
///
/// # Errors
///
/// `project` names a project the configuration does not have (or there are no MCP servers).
pub(super) fn check(
    definition: &Definition,
    subs: &[SubDefinition],
    settings: &Settings,
    project: Option<&str>,
    tools: bool,
) -> Result<Vec<Problem>> {
    let project = match project {
        Some(name) => Some(
            settings
                .mcp_project(name)
                .map_err(|e| Error::Config(format!("{e:#}")))?,
        ),
        None => None,
    };
    let seen = Seen {
        settings,
        project,
        tools,
    };
    Ok(problems_with_subs(definition, subs, &seen))
}

/// What a definition is checked against.
struct Seen<'a> {
    settings: &'a Settings,
    /// The run's project, when given.
    project: Option<&'a claij_mcp::Project>,
    /// Whether the run has Rust tools (the `tools` service).
    tools: bool,
}

/// What a run cannot run, each at its pointer: a `custom` state (a program registers its
/// action); a `service` state naming a service the configuration does not offer, or a server
/// the project does not allow; a model a state names (`config.model`, a built-in's `voters` or
/// `models`) that does not resolve.
fn problems(definition: &Definition, seen: &Seen<'_>) -> Vec<Problem> {
    let mut problems = Vec::new();
    for (i, state) in definition.states.iter().enumerate() {
        match &state.action {
            Action::Service => problems.extend(service_problem(state, i, seen)),
            Action::Custom(name) => problems.push(problem(
                format!("/states/{i}/action"),
                format!(
                    "custom action `{name}`{}: claij runs only llm, service, fsm, human and end \
                     states; a program provides `{name}` with \
                     claij_fsm::Runner::with_service(\"{name}\", ...)",
                    state
                        .action
                        .misspelt_built_in()
                        .map_or_else(String::new, |meant| format!("; did you mean `{meant}`?"))
                ),
            )),
            _ => {}
        }
        problems.extend(model_problems(state, i, seen.settings));
    }
    problems
}

/// What is wrong with the service `service` state `state` (at `/states/{i}`) names, if anything.
fn service_problem(state: &claij_fsm::State, i: usize, seen: &Seen<'_>) -> Option<Problem> {
    let settings = seen.settings;
    let name = service_of(state);
    let pointer = if state.config_str("service").is_some() {
        format!("/states/{i}/config/service")
    } else {
        format!("/states/{i}/id")
    };
    let file = settings.mcp_path.as_ref().map_or_else(
        || "the configuration".to_owned(),
        |p| p.display().to_string(),
    );
    let server = settings
        .mcp
        .as_ref()
        .is_some_and(|m| m.servers.contains_key(name));
    if server && (BUILTIN.contains(&name) || name == mcp_fsm::SERVICE) {
        return Some(problem(
            pointer,
            format!(
                "ambiguous service `{name}`: a built-in service and an MCP server of {file} are \
                 both called so; rename the server"
            ),
        ));
    }
    let known = known(settings, seen.tools);
    if !known.contains(name) {
        let list: Vec<&str> = known.iter().map(String::as_str).collect();
        let has_servers = settings.mcp.as_ref().is_some_and(|m| !m.servers.is_empty());
        let message = if has_servers {
            format!(
                "unknown service `{name}`: the services of {file} are {}",
                list.join(", ")
            )
        } else {
            format!(
                "unknown service `{name}`: {}; the built-in services are {}",
                settings.no_servers(),
                list.join(", ")
            )
        };
        return Some(problem(pointer, message));
    }
    let project = seen.project?;
    if server && !project.services.iter().any(|s| s == name) {
        return Some(problem(
            pointer,
            format!(
                "server `{name}` is not in project `{}` of {file} (its services: {})",
                project.name,
                project.services.join(", ")
            ),
        ));
    }
    None
}

/// The models `state` (at `/states/{i}`) names that do not resolve: an `llm`
/// state's `config.model`, a built-in vote's `config.voters`, meta-debugging's `config.models`.
fn model_problems(state: &claij_fsm::State, i: usize, settings: &Settings) -> Vec<Problem> {
    use claij_fsm::builtin::{meta_debug, vote};
    let mut problems = Vec::new();
    match &state.action {
        Action::Llm => {
            if let Some(model) = state.config_str("model")
                && let Err(e) = settings.resolve(model)
            {
                problems.push(problem(format!("/states/{i}/config/model"), e.to_string()));
            }
        }
        Action::Fsm => {
            let key = match state.config_str("fsm") {
                Some(vote::ID) => "voters",
                Some(meta_debug::ID) => "models",
                _ => return problems,
            };
            let named = state.config.get(key).and_then(Value::as_array);
            for (j, model) in named.into_iter().flatten().enumerate() {
                if let Some(model) = model.as_str()
                    && let Err(e) = settings.resolve(model)
                {
                    problems.push(problem(
                        format!("/states/{i}/config/{key}/{j}"),
                        e.to_string(),
                    ));
                }
            }
        }
        _ => {}
    }
    problems
}

fn problem(pointer: String, message: String) -> Problem {
    Problem { pointer, message }
}

/// `problems` of `definition` and of every sub-FSM file it runs (`subs`, with their own), a
/// sub-FSM's at the pointer of the state naming it (`/states/0/config/fsm: `flow.json`:
/// /states/1/config/service: unknown service ...`).
fn problems_with_subs(
    definition: &Definition,
    subs: &[SubDefinition],
    seen: &Seen<'_>,
) -> Vec<Problem> {
    let mut problems = problems(definition, seen);
    for sub in subs {
        let inner = problems_with_subs(&sub.definition, &sub.sub_fsms, seen);
        let pointer = definition
            .states
            .iter()
            .position(|s| s.action == Action::Fsm && s.config_str("fsm") == Some(&sub.name))
            .map_or_else(String::new, |i| format!("/states/{i}/config/fsm"));
        for p in inner {
            let message = format!("`{}`: {}: {}", sub.name, p.pointer, p.message);
            problems.push(problem(pointer.clone(), message));
        }
    }
    problems
}

/// The services of a run, started once and shared by every runner of it (its machine's and each
/// sub-FSM's): one process per MCP server, whichever machines call it. Close them when it ends.
#[derive(Default)]
pub(super) struct Connected {
    /// Each service by the name states give it.
    registered: Vec<(String, Arc<dyn Service>)>,
    /// The MCP services by name, what a call to each is narrowed to.
    views: Vec<(String, Services)>,
    /// All the servers started.
    services: Option<Services>,
}

impl Connected {
    /// Narrows each MCP call `definition` makes to the tools its service has
    /// ([`mcp_fsm::narrow_calls`]): the narrowed definition is the one to run (and journal).
    pub(super) fn narrow(&self, definition: &mut Definition) {
        for (name, services) in &self.views {
            let states: Vec<String> = definition
                .states
                .iter()
                .filter(|s| s.action == Action::Service && service_of(s) == name)
                .map(|s| s.id.clone())
                .collect();
            for state in &states {
                mcp_fsm::narrow_calls(definition, state, services);
            }
        }
    }

    /// `runner` with every service of the run registered.
    pub(super) fn register(&self, mut runner: Runner) -> Runner {
        for (name, service) in &self.registered {
            runner = runner.with_service(name.clone(), Shared(Arc::clone(service)));
        }
        runner
    }

    /// Closes the servers.
    pub(super) async fn close(&self) {
        if let Some(services) = &self.services {
            services.close().await;
        }
    }
}

/// Starts the services the `service` states of `definitions` (a machine and its sub-FSMs) name,
/// once for them all: the built-in ones and the MCP servers they need (only those).
///
/// # Errors
///
/// An unknown project, a server the project does not allow ([`Error::Config`]), a server that
/// does not start ([`Error::Mcp`]).
pub(super) async fn connect(
    definitions: &[&Definition],
    claij: &Claij,
    project: Option<&str>,
    tools: Option<&Tools>,
    offer: &crate::mcp::offer::Offer,
) -> Result<Connected> {
    let settings = claij.settings();
    let used: BTreeSet<String> = definitions
        .iter()
        .flat_map(|d| &d.states)
        .filter(|s| s.action == Action::Service)
        .map(|s| service_of(s).to_owned())
        .collect();
    let mut registered: Vec<(String, Arc<dyn Service>)> = Vec::new();
    if used.contains("tools")
        && let Some(tools) = tools
    {
        registered.push(("tools".to_owned(), Arc::new(Builtin::tools(tools))));
    }
    if used.contains("eval") {
        let limits = tools.map_or_else(Limits::default, |t| t.limits().clone());
        registered.push(("eval".to_owned(), Arc::new(Builtin::eval(limits))));
    }
    let mcp = settings.mcp.as_ref();
    let servers: Vec<&String> = mcp
        .map(|m| {
            m.servers
                .keys()
                .filter(|name| used.contains(*name))
                .collect()
        })
        .unwrap_or_default();
    let all = used.contains(mcp_fsm::SERVICE);
    let Some(mcp) = mcp.filter(|_| all || !servers.is_empty()) else {
        return Ok(Connected {
            registered,
            ..Connected::default()
        });
    };
    // `check` refused an unknown project and servers outside it before.
    let project = match project {
        None => None,
        Some(name) => Some(
            settings
                .mcp_project(name)
                .map_err(|e| Error::Config(format!("{e:#}")))?
                .clone(),
        ),
    };
    if let Some(project) = &project
        && let Some(outside) = servers.iter().find(|s| !project.services.contains(*s))
    {
        return Err(Error::Config(format!(
            "a service state names the server `{outside}`, which project `{}` does not allow",
            project.name
        )));
    }
    let mut selected = mcp.clone();
    selected.servers.retain(|name, _| {
        (all || servers.contains(&name))
            && project.as_ref().is_none_or(|p| p.services.contains(name))
    });
    // As every command starts them: `${VAR}` secrets from `claij`'s variables, stored tokens.
    let var = |name: &str| {
        let value = claij.var(name).ok_or(std::env::VarError::NotPresent)?;
        value.into_string().map_err(std::env::VarError::NotUnicode)
    };
    // Offered what `claij mcp` offers (the flags over the configuration's `samplingLlm` and
    // `elicitation`); no one at a terminal answers a service's questions.
    let offer = offer.clone().over(settings);
    let hooks = offer
        .hooks(claij, None, false, crate::mcp::offer::Elicitation::Decline)
        .map_err(crate::mcp::Error::from)?;
    let services = crate::mcp::start_services(&mut selected, hooks, settings, var).await?;
    let view = |services: Services| match &project {
        Some(project) => services.with_project(project.clone()),
        None => services,
    };
    let all_servers = view(services.clone());
    let mut views: Vec<(String, Services)> = Vec::new();
    if all {
        views.push((mcp_fsm::SERVICE.to_owned(), all_servers.clone()));
    }
    for server in servers {
        if let Some(client) = all_servers.client(server) {
            let one = view(Services::from_clients([client.clone()]));
            views.push((server.clone(), one));
        }
    }
    for (name, services) in &views {
        registered.push((
            name.clone(),
            Arc::new(Mcp(McpService::new(services.clone()))),
        ));
    }
    Ok(Connected {
        registered,
        views,
        services: Some(services),
    })
}

/// An `Arc`'d service, registered by value.
struct Shared(Arc<dyn Service>);

impl Service for Shared {
    fn call<'a>(&'a self, call: ServiceCall<'a>) -> BoxFuture<'a, Result<Value, BoxError>> {
        self.0.call(call)
    }
}

/// [`McpService`] in any machine: outside the MCP FSM's own `servicing` state the response leaves
/// by the state's one exit, whatever it is called.
struct Mcp(McpService);

impl Service for Mcp {
    fn call<'a>(&'a self, call: ServiceCall<'a>) -> BoxFuture<'a, Result<Value, BoxError>> {
        let own = call.state.id == mcp_fsm::SERVICING;
        let answered = self.0.call(call);
        Box::pin(async move {
            let mut event = answered.await?;
            if !own && let Value::Object(map) = &mut event {
                map.remove("id");
            }
            Ok(event)
        })
    }
}

/// A built-in service (`tools`, `eval`): its `tools/call` requests run through the one tool
/// [`Executor`], as an agent run's and a reply's calls do, so a limit means the same here: the
/// argument check (text repaired into an object first), the executor's limits (a call past
/// `max_calls`, one over `timeout`) and the result budget (`result_chars` of the result's text the
/// model sees, a cut one saying so, as an MCP service's).
struct Builtin {
    /// The service's name, which a tool's name may carry as a prefix (`tools.now`).
    name: &'static str,
    executor: Executor,
    /// A tool's output as MCP content.
    content: fn(&Value) -> CallOutcome,
}

impl Builtin {
    /// The `tools` service: the Rust tools `tools` has (`now`, `random_int`), within its limits.
    fn tools(tools: &Tools) -> Self {
        Builtin {
            name: "tools",
            executor: tools.executor(),
            content: success,
        }
    }

    /// The `eval` service: `eval` with `{"code": "..."}` run in the sandbox ([`Eval::tool`]),
    /// within `limits`; its value, then what the script printed.
    fn eval(limits: Limits) -> Self {
        let tool: Arc<dyn claij_interceptors::Tool> = Arc::new(Eval::new().tool());
        Builtin {
            name: "eval",
            executor: Executor::new([tool]).with_limits(limits),
            content: |value| match value.as_object().map(|o| (o.len(), o.get("printed"))) {
                Some((2, Some(Value::String(printed)))) if value.get("value").is_some() => {
                    let mut outcome = success(&value["value"]);
                    outcome
                        .content
                        .push(Content::text(format!("printed:\n{printed}")));
                    outcome
                }
                _ => success(value),
            },
        }
    }

    /// The response event to the `tools/call` request in `event`; a JSON-RPC batch (an array of
    /// requests in `message`) runs as one reply's calls (at most `max_calls` of them run) and is
    /// answered by the array of responses, in order.
    async fn respond(&self, event: &Value) -> Value {
        let batch = event.get("message").and_then(Value::as_array);
        let read: Vec<Result<ToolsCall, Value>> = match batch {
            Some(requests) => requests
                .iter()
                .map(|request| ToolsCall::from_event(&json!({ "message": request })))
                .collect(),
            None => vec![ToolsCall::from_event(event)],
        };
        let prefix = format!("{}.", self.name);
        let calls: Vec<ToolCall> = read
            .iter()
            .flatten()
            .map(|request| {
                let name = request.name.strip_prefix(&prefix).unwrap_or(&request.name);
                ToolCall::new(request.id.to_string(), name, request.arguments.clone())
            })
            .collect();
        let mut outcomes: Vec<CallOutcome> = (self.executor.run_calls(&calls).await)
            .into_iter()
            .map(|ran| self.outcome(ran.output))
            .collect();
        self.budget(&mut outcomes);
        let mut outcomes = outcomes.into_iter();
        let mut answers = read.into_iter().map(|read| match read {
            Ok(request) => {
                let outcome = outcomes.next().unwrap_or_else(|| {
                    CallOutcome::failure(CallFailure::Transport, "the call did not run")
                });
                tools_response(request.id, &outcome)
            }
            Err(answer) => answer,
        });
        match batch {
            Some(_) => {
                json!({"message": answers.map(|a| a["message"].clone()).collect::<Vec<_>>()})
            }
            None => answers.next().unwrap_or(Value::Null),
        }
    }

    /// A call's output, or why there is none, as MCP content for the model.
    fn outcome(&self, output: Result<Value, ToolError>) -> CallOutcome {
        let e = match output {
            Ok(value) => return (self.content)(&value),
            Err(e) => e,
        };
        let failure = match &e {
            ToolError::Failed(_) | ToolError::Panicked(_) => CallFailure::Tool,
            ToolError::Unknown { available, .. } => CallFailure::UnknownTool {
                available: available.clone(),
            },
            ToolError::InvalidArguments { .. } => CallFailure::Rejected { code: -32602 },
            ToolError::MaxCalls { .. } => CallFailure::Rejected { code: -32600 },
            _ => CallFailure::Transport,
        };
        CallOutcome::failure(failure, e.to_string())
    }

    /// The outcomes' text blocks (one reply's) cut to share the executor's `result_chars`, each
    /// cut one saying so, as an MCP service's.
    fn budget(&self, outcomes: &mut [CallOutcome]) {
        let texts: Vec<String> = outcomes
            .iter()
            .flat_map(|o| &o.content)
            .filter_map(|block| block.as_text().map(str::to_owned))
            .collect();
        let shown = self.executor.budget(&texts, |keep, total| {
            format!("… [cut: the tool-results budget shows {keep} of its {total} characters]")
        });
        let mut shown = shown.into_iter();
        for block in outcomes.iter_mut().flat_map(|o| &mut o.content) {
            if block.as_text().is_some()
                && let Some(cut) = shown.next()
                && Some(cut.as_str()) != block.as_text()
            {
                *block = Content::text(cut);
            }
        }
    }
}

impl Service for Builtin {
    fn call<'a>(&'a self, call: ServiceCall<'a>) -> BoxFuture<'a, Result<Value, BoxError>> {
        Box::pin(async move { Ok(self.respond(call.event).await) })
    }
}

/// A function's value as MCP content: a string as it is, anything else as JSON (an object also as
/// `structuredContent`).
fn success(value: &Value) -> CallOutcome {
    let text = match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    let structured = value.is_object().then(|| value.clone());
    CallOutcome::success(vec![Content::text(text)], structured)
}
