//! The MCP FSM: a model answers a request, calling MCP tools through a service state, as data
//! (`fsm/mcp.json`) plus the [`McpService`] that runs its calls.
//!
//! ```mermaid
//! flowchart TD
//!   s0(("start"))
//!   s1("llm")
//!   s2{{"servicing<br/>service: mcp"}}
//!   s3[/"asking"/]
//!   s4((("end")))
//!   s0 -->|"the user's request"| s1
//!   s1 -->|"call a tool"| s2
//!   s2 -->|"the tool's result"| s1
//!   s2 -->|"a server asks a person"| s3
//!   s3 -->|"the person's answer"| s2
//!   s1 -->|"the final answer"| s4
//! ```
//!
//! The events, each with its transition `id`:
//!
//! | transition | event |
//! |---|---|
//! | `start` → `llm` | `{"request": "..."}` |
//! | `llm` → `servicing` | `{"message": {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "server.tool", "arguments": {...}}}}` |
//! | `servicing` → `llm` | `{"message": {"jsonrpc": "2.0", "id": 1, "result": {"content": [...], "isError": false, "structuredContent"?: ...}}}` |
//! | `servicing` → `asking` | `{"elicitation": {"server": "...", "message": "...", "schema": {...}}}` (see [`McpService`]) |
//! | `asking` → `servicing` | `{"answer": {"action": "accept" \| "decline" \| "cancel", "content"?: {...}}}` |
//! | `llm` → `end` | `{"result": {"content": [{"type": "text", "text": "..."}], "isError"?: false}}` |
//!
//! [`definition`] is the file as written: `params` is any `{name, arguments}`. [`definition_for`]
//! specialises it for a [`Services`] view: `params` becomes a `oneOf` with one branch per tool the
//! view allows (`name` the constant `server.tool`, `arguments` the tool's input schema), and the
//! `llm` state's prompts list the tools and wear the project's hat. The `servicing` state runs
//! [`McpService`], registered under [`SERVICE`]; [`runner`] wires all three.
//!
//! Everything a tool call can go wrong with reaches the model as an MCP result with `isError: true`
//! (a malformed request, an unknown tool or server, bad arguments, a timeout, a dead server), so it
//! can correct the call or say what failed in its answer; the run never ends on a failed call. An
//! [`Interrupt`](claij_fsm::Interrupt) cancels the call in flight (the server is sent
//! `notifications/cancelled`) and the run ends in `interrupted`.
//!
//! ```
//! use claij_fsm::Fsm;
//! use serde_json::json;
//!
//! let fsm = Fsm::new(claij_mcp::mcp_fsm::definition())?;
//! let call = json!({"id": ["llm", "servicing"], "message": {
//!     "jsonrpc": "2.0", "id": 1, "method": "tools/call",
//!     "params": {"name": "fs.read_text_file", "arguments": {"path": "/tmp/notes.txt"}}
//! }});
//! assert_eq!(fsm.route("llm", &call).map(|t| t.id.to.as_str()), Ok("servicing"));
//! let answer = json!({"id": ["llm", "end"], "result": {"content": [{"type": "text", "text": "42"}]}});
//! assert_eq!(fsm.route("llm", &answer).map(|t| t.id.to.as_str()), Ok("end"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! With real servers and a model:
//!
//! ```no_run
//! use std::sync::Arc;
//! use claij_fsm::{Interrupt, Outcome};
//! use claij_interceptors::Config;
//! use claij_mcp::{ClientOptions, McpConfig, Services, mcp_fsm};
//! use serde_json::json;
//!
//! # async fn demo(config: McpConfig, backend: Arc<dyn claij_backends::Backend>) -> Result<(), Box<dyn std::error::Error>> {
//! let services = Services::connect(&config, ClientOptions::default()).await?;
//! let runner = mcp_fsm::runner(&services, backend, Config::new("some-model"))?;
//! let mut run = runner.start(json!({"request": "What is in /tmp/notes.txt?"}))?;
//! if let Outcome::Finished { event, .. } = runner.run(&mut run, &Interrupt::new(), None).await? {
//!     println!("{}", event["result"]["content"][0]["text"]);
//! }
//! services.close().await;
//! # Ok(()) }
//! ```

use std::sync::Arc;

use claij_backends::{Backend, BoxFuture, ToolCall};
use claij_fsm::{Action, Definition, Fsm, Runner, Service, ServiceCall};
use claij_interceptors::{BoxError, Config, Executor, Limits, ToolError};
use serde_json::{Map, Value, json};
use tokio::sync::{Mutex, mpsc, oneshot};
use tokio::task::JoinHandle;
use tracing::{Instrument as _, debug, warn};

use crate::error::Error;
use crate::hooks::{ElicitationReply, PendingElicitation};
use crate::outcome::{CallFailure, CallOutcome, Content};
use crate::project::Project;
use crate::services::Services;
use crate::tool::ToolInfo;

#[cfg(test)]
mod tests;

/// The machine's id (what a parent's `fsm` state names in `config.fsm`).
pub const ID: &str = "mcp";

/// The name the `servicing` state's service is registered under (its `config.service`).
pub const SERVICE: &str = "mcp";

/// The state where the model decides.
pub const LLM: &str = "llm";

/// The state that runs a tool call.
pub const SERVICING: &str = "servicing";

/// The `human` state where a person answers a server's question (an elicitation) while a call waits.
pub const ASKING: &str = "asking";

/// The definition file.
const DEFINITION: &str = include_str!("../fsm/mcp.json");

/// Where the tool call's `params` schema sits in the `llm` → `servicing` transition's schema.
const PARAMS: &str = "/properties/message/properties/params";

/// JSON-RPC's codes for a request that is not one, a method not served, and bad parameters.
const INVALID_REQUEST: i32 = -32600;
const METHOD_NOT_FOUND: i32 = -32601;
const INVALID_PARAMS: i32 = -32602;

/// The MCP FSM as written in `fsm/mcp.json`: any tool name, any arguments.
pub fn definition() -> Definition {
    #[allow(
        clippy::expect_used,
        reason = "the file is compiled in, and the crate's tests load and check it"
    )]
    Definition::from_json(DEFINITION).expect("fsm/mcp.json is a valid FSM definition")
}

/// The MCP FSM for what `services` may use: the call's `params` is a `oneOf` of the allowed tools,
/// and the `llm` state's prompts list them (after the project's hat, if there is a project).
///
/// A tool's `arguments` schema is its input schema, normalised to draft 2020-12 ([`crate::normalise`])
/// and embedded with [`claij_schema::embed`]: a schema with definitions becomes a reference to the
/// machine's shared schemas (`server.tool`, `server.tool.<definition>`), so its references still
/// resolve. A schema that cannot be embedded (it does not compile alone, it uses `$dynamicRef`, or
/// its definitions' names clash with another tool's) is left generic: that tool's branch takes any
/// object, its arguments are shown in the prompt instead, and the client still checks them against
/// the tool's own schema before sending, so a bad call comes back to the model as an error result
/// naming each violation.
///
/// With no tool at all the `servicing` state and its transitions are left out: the model can only
/// answer. The tool lists are those last fetched; build the definition again after they change.
pub fn definition_for(services: &Services) -> Definition {
    specialise(&services.tools(), services.project())
}

/// Narrows a machine of your own that calls MCP tools to what `services` may use, as
/// [`definition_for`] does for the MCP FSM: every transition into `service_state` whose schema holds
/// a `tools/call` request at `/properties/message/properties/params` gets the `oneOf` of the allowed
/// tools (their arguments' schemas embedded in the machine's shared schemas), and every `llm` state
/// such a transition leaves lists the tools in its prompts, after the project's hat. With no tool
/// nothing changes; narrowing again (a journaled definition, on resume) changes nothing more. A constrained decoder (the local model) can then only write a call that names a
/// real tool with arguments of the right shape.
pub fn narrow_calls(definition: &mut Definition, service_state: &str, services: &Services) {
    let tools = services.tools();
    if !tools.is_empty() {
        narrow(definition, service_state, &tools, services.project());
    }
}

/// [`definition_for`] from the tools and the project.
fn specialise(tools: &[Arc<ToolInfo>], project: Option<&Project>) -> Definition {
    let mut definition = definition();
    if tools.is_empty() {
        definition
            .states
            .retain(|s| s.id != SERVICING && s.id != ASKING);
        definition.transitions.retain(|t| {
            ![&t.id.from, &t.id.to]
                .iter()
                .any(|s| *s == SERVICING || *s == ASKING)
        });
        if let Some(llm) = definition.states.iter_mut().find(|s| s.id == LLM) {
            if let Some(project) = project {
                llm.prompts.push(project.hat());
            }
            llm.prompts.push(tools_prompt(tools, &[]));
        }
    } else {
        narrow(&mut definition, SERVICING, tools, project);
    }
    definition
}

/// The `params` of every call into `service_state` as a `oneOf` of `tools`, and the tools listed in
/// the prompts of the `llm` states the calls leave.
fn narrow(
    definition: &mut Definition,
    service_state: &str,
    tools: &[Arc<ToolInfo>],
    project: Option<&Project>,
) {
    let mut generic = Vec::new();
    let mut branches = Vec::new();
    for tool in tools {
        let arguments = match embedded_arguments(tool, &definition.schemas) {
            Some((arguments, defs)) => {
                definition.schemas.extend(defs);
                arguments
            }
            None => {
                generic.push(tool.qualified());
                json!({"type": "object"})
            }
        };
        branches.push(json!({
            "type": "object",
            "properties": {"name": {"const": tool.qualified()}, "arguments": arguments},
            "required": ["name", "arguments"],
            "additionalProperties": false
        }));
    }
    let mut callers = Vec::new();
    for transition in definition
        .transitions
        .iter_mut()
        .filter(|t| t.id.to == service_state)
    {
        if let Some(params) = transition.schema.pointer_mut(PARAMS) {
            *params = json!({ "oneOf": branches });
            callers.push(transition.id.from.clone());
        }
    }
    for state in definition
        .states
        .iter_mut()
        .filter(|s| s.action == Action::Llm && callers.contains(&s.id))
    {
        // Narrowing a definition narrowed before (a resumed run's) adds nothing twice.
        let added = project
            .map(Project::hat)
            .into_iter()
            .chain([tools_prompt(tools, &generic)]);
        for prompt in added {
            if !state.prompts.contains(&prompt) {
                state.prompts.push(prompt);
            }
        }
    }
}

/// A runner of the MCP FSM for `services`: `llm` asks `backend` with `config`, `servicing` runs
/// [`McpService`].
///
/// # Errors
///
/// [`claij_fsm::Error::Definition`] when the specialised definition does not compile (a tool's
/// schema that compiles alone but not inside the state's output schema).
pub fn runner(
    services: &Services,
    backend: Arc<dyn Backend>,
    config: Config,
) -> Result<Runner, claij_fsm::Error> {
    runner_with(McpService::new(services.clone()), backend, config)
}

/// [`runner`] with a service of your own making (one that routes questions to `asking`,
/// [`McpService::with_questions`]); the definition is specialised for its services.
///
/// # Errors
///
/// As [`runner`].
pub fn runner_with(
    service: McpService,
    backend: Arc<dyn Backend>,
    config: Config,
) -> Result<Runner, claij_fsm::Error> {
    let fsm = Fsm::new(definition_for(service.services()))?;
    Ok(Runner::new(fsm)
        .with_llm(backend, config)
        .with_service(SERVICE, service))
}

/// The `servicing` state's action: runs the `tools/call` request in the event that entered the
/// state and answers with the JSON-RPC response, `{"message": {"jsonrpc", "id", "result"}}`, whose
/// `result` is [`CallOutcome::to_mcp`].
///
/// It never fails the run: a request it cannot run becomes an error result the model reads. A dead
/// server is one of those too: the other servers still work, a [`crate::Restart`] policy may bring
/// it back on the next call, and the model can say what failed; the runner's transition limit
/// stops a model that keeps calling it.
///
/// # Questions for a person
///
/// A server may ask the user something in the middle of a call (MCP elicitation). By default the
/// clients decline (they declare no elicitation capability). To route questions to the machine's
/// `asking` state, a `human` state, connect the services with an
/// [`ElicitationQueue`](crate::ElicitationQueue) as their
/// elicitor and give this service the queue's receiving end ([`McpService::with_questions`]): when a
/// question arrives while a call runs, the service leaves `servicing` for `asking` with
/// `{"elicitation": {"server", "message", "schema"}}` and the run waits; [`claij_fsm::Runner::provide`]
/// with `{"answer": {"action": "accept", "content": {...}}}` (or `decline`, `cancel`) brings it back,
/// the answer goes to the server, and the same call goes on. The waiting call lives in this service,
/// so such a runner serves one run at a time, and a run resumed from its journal in another process
/// finds no call waiting (the model is told so).
///
/// ```
/// # use claij_mcp::{ClientOptions, ElicitationQueue, Hooks, McpConfig, Services, mcp_fsm::McpService};
/// # async fn demo(config: McpConfig) -> Result<(), claij_mcp::Error> {
/// let (queue, questions) = ElicitationQueue::new(4);
/// let options = ClientOptions::default().with_hooks(Hooks::default().with_elicitor(queue));
/// let services = Services::connect(&config, options).await?;
/// let service = McpService::new(services).with_questions(questions);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct McpService {
    services: Services,
    /// Runs the calls: the services' tools within their limits.
    executor: Executor,
    questions: Option<Arc<Mutex<mpsc::Receiver<PendingElicitation>>>>,
    in_flight: Arc<Mutex<Option<InFlight>>>,
}

/// A call that runs while its run waits in `asking`.
struct InFlight {
    /// The JSON-RPC id of its request.
    id: Value,
    task: JoinHandle<CallOutcome>,
    /// The question a person is answering.
    waiting: Option<PendingElicitation>,
}

impl std::fmt::Debug for McpService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpService")
            .field("services", &self.services)
            .field("questions", &self.questions.is_some())
            .finish_non_exhaustive()
    }
}

/// A JSON-RPC `tools/call` request, read from an event's `message` (what every `service` state of
/// a tool loop receives, whoever serves it).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolsCall {
    /// The request's id, to echo in the response.
    pub id: Value,
    /// `params.name`: the tool.
    pub name: String,
    /// `params.arguments` (an empty object when left out; text, which the executor repairs into
    /// an object or refuses).
    pub arguments: Value,
}

impl ToolsCall {
    /// Reads the request in `event`'s `message`. A message that is not a `tools/call` request gives
    /// the event answering it ([`tools_response`]): an error result (`isError: true`) saying what is
    /// wrong, for the model to correct its call.
    ///
    /// ```
    /// use claij_mcp::mcp_fsm::ToolsCall;
    /// use serde_json::json;
    ///
    /// let event = json!({"message": {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
    ///     "params": {"name": "now", "arguments": {}}}});
    /// assert_eq!(ToolsCall::from_event(&event).map(|call| call.name), Ok("now".to_owned()));
    /// let answer = ToolsCall::from_event(&json!({"message": {"id": 8}})).unwrap_err();
    /// assert_eq!(answer["message"]["id"], 8);
    /// assert_eq!(answer["message"]["result"]["isError"], true);
    /// ```
    ///
    /// # Errors
    ///
    /// The answering event, as said.
    pub fn from_event(event: &Value) -> Result<Self, Value> {
        read_call(event).map_err(|rejected| {
            let outcome = CallOutcome::failure(
                CallFailure::Rejected {
                    code: rejected.code,
                },
                rejected.message,
            );
            tools_response(rejected.id, &outcome)
        })
    }
}

/// The event answering a `tools/call` request with `outcome`:
/// `{"message": {"jsonrpc": "2.0", "id", "result": outcome.to_mcp()}}`, with no transition `id` (a
/// state with one exit takes it without).
pub fn tools_response(id: Value, outcome: &CallOutcome) -> Value {
    json!({"message": {"jsonrpc": "2.0", "id": id, "result": outcome.to_mcp()}})
}

/// A request that is not a `tools/call` one: the id to echo, the JSON-RPC error code, and why.
struct Rejected {
    id: Value,
    code: i32,
    message: String,
}

impl McpService {
    /// A service calling through `services` (and only what its project allows), within
    /// [`crate::default_limits`].
    pub fn new(services: Services) -> Self {
        Self {
            executor: services.executor(),
            services,
            questions: None,
            in_flight: Arc::new(Mutex::new(None)),
        }
    }

    /// Routes the servers' questions that arrive on `questions` (the receiving end of the
    /// [`ElicitationQueue`](crate::ElicitationQueue) the services' clients were connected with) to the
    /// `asking` state.
    #[must_use]
    pub fn with_questions(mut self, questions: mpsc::Receiver<PendingElicitation>) -> Self {
        self.questions = Some(Arc::new(Mutex::new(questions)));
        self
    }

    /// The same service with other limits for its calls: the same [`Limits`] as on every route
    /// ([`claij_interceptors::tool`]). A `tools/call` event is one call, so [`Limits::max_calls`]
    /// bounds a JSON-RPC batch (an array of requests in `message`); [`Limits::result_chars`] is
    /// what the model sees of the result's text.
    #[must_use]
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.executor = self.executor.with_limits(limits);
        self
    }

    /// The services it calls.
    pub fn services(&self) -> &Services {
        &self.services
    }

    /// Runs the request in `event` and returns the response event (`["servicing", "llm"]`).
    ///
    /// A JSON-RPC batch (an array of requests in `message`) runs as one reply's calls, within the
    /// same [`Limits`] (at most [`Limits::max_calls`] of them run), and is answered by the array of
    /// responses, in order.
    pub async fn respond(&self, event: &Value) -> Value {
        if let Some(Value::Array(requests)) = event.get("message") {
            return self.respond_batch(requests).await;
        }
        let (id, outcome) = match read_call(event) {
            Ok(call) => {
                let outcome = self.execute(&call).await;
                (call.id, outcome)
            }
            Err(rejected) => {
                let outcome = CallOutcome::failure(
                    CallFailure::Rejected {
                        code: rejected.code,
                    },
                    rejected.message,
                );
                (rejected.id, outcome)
            }
        };
        response(id, &outcome)
    }

    /// The answer to a batch of requests: every `tools/call` among them run together.
    async fn respond_batch(&self, requests: &[Value]) -> Value {
        let read: Vec<Result<ToolsCall, Rejected>> = requests
            .iter()
            .map(|request| read_call(&json!({ "message": request })))
            .collect();
        let calls: Vec<ToolsCall> = read
            .iter()
            .filter_map(|r| r.as_ref().ok())
            .cloned()
            .collect();
        let mut outcomes = self.execute_all(&calls).await.into_iter();
        let responses: Vec<Value> = read
            .into_iter()
            .map(|read| {
                let (id, outcome) = match read {
                    Ok(call) => (
                        call.id,
                        outcomes.next().unwrap_or_else(|| {
                            CallOutcome::failure(CallFailure::Transport, "the call did not run")
                        }),
                    ),
                    Err(rejected) => (
                        rejected.id,
                        CallOutcome::failure(
                            CallFailure::Rejected {
                                code: rejected.code,
                            },
                            rejected.message,
                        ),
                    ),
                };
                json!({"jsonrpc": "2.0", "id": id, "result": outcome.to_mcp()})
            })
            .collect();
        json!({"id": [SERVICING, LLM], "message": responses})
    }

    async fn execute(&self, call: &ToolsCall) -> CallOutcome {
        self.execute_all(std::slice::from_ref(call))
            .await
            .pop()
            .unwrap_or_else(|| CallOutcome::failure(CallFailure::Transport, "the call did not run"))
    }

    /// Runs `calls` (one event's) through the executor; one outcome per call, in order.
    async fn execute_all(&self, calls: &[ToolsCall]) -> Vec<CallOutcome> {
        let native: Vec<ToolCall> = calls
            .iter()
            .map(|call| {
                // `server.tool` as the executor names it (an unqualified name names nothing).
                let name = call
                    .name
                    .split_once('.')
                    .map_or_else(String::new, |(server, tool)| {
                        crate::native_name(server, tool)
                    });
                ToolCall::new(call.id.to_string(), name, call.arguments.clone())
            })
            .collect();
        let ran = self.executor.run_calls(&native).await;
        let mut outcomes = Vec::with_capacity(ran.len());
        for (call, ran) in calls.iter().zip(ran) {
            let outcome = match ran.output {
                Ok(result) => {
                    debug!(tool = call.name, "mcp fsm call done");
                    outcome_of(&result)
                }
                Err(ToolError::Unknown { .. }) => self.refused(call).await,
                Err(err) => {
                    warn!(tool = call.name, error = %err, "mcp fsm call not run or failed");
                    let failure = match &err {
                        ToolError::InvalidArguments { .. } => CallFailure::Rejected {
                            code: INVALID_PARAMS,
                        },
                        ToolError::MaxCalls { .. } => CallFailure::Rejected {
                            code: INVALID_REQUEST,
                        },
                        _ => CallFailure::Transport,
                    };
                    CallOutcome::failure(failure, err.to_string())
                }
            };
            outcomes.push(outcome);
        }
        self.budget(outcomes)
    }

    /// A call naming no tool the view offers: the services' own answer (a project's refusal,
    /// recorded; an unknown server or tool, listing the tools there are).
    async fn refused(&self, call: &ToolsCall) -> CallOutcome {
        match self
            .services
            .call_qualified(&call.name, call.arguments.clone())
            .await
        {
            Ok(outcome) => outcome,
            Err(err) => {
                warn!(tool = call.name, error = %err, "mcp fsm call failed");
                self.failed(&err)
            }
        }
    }

    /// The outcomes' text blocks cut to share [`Limits::result_chars`], each cut one saying so.
    fn budget(&self, mut outcomes: Vec<CallOutcome>) -> Vec<CallOutcome> {
        let texts: Vec<String> = outcomes
            .iter()
            .flat_map(|o| &o.content)
            .filter(|block| block.kind() == "text")
            .map(|block| block.as_text().unwrap_or_default().to_owned())
            .collect();
        let mut shown = self
            .executor
            .budget(&texts, |keep, total| {
                format!("… [cut: the tool-results budget shows {keep} of its {total} characters]")
            })
            .into_iter();
        for outcome in &mut outcomes {
            for block in &mut outcome.content {
                if block.kind() == "text"
                    && let Some(cut) = shown.next()
                    && Some(cut.as_str()) != block.as_text()
                {
                    *block = Content::text(cut);
                }
            }
        }
        outcomes
    }

    /// An error the model can read: for a name that is not a known tool, the tools there are.
    fn failed(&self, err: &Error) -> CallOutcome {
        match err {
            Error::UnknownServer { .. } | Error::Unqualified { .. } => {
                let available: Vec<String> = self
                    .services
                    .tools()
                    .iter()
                    .map(|t| t.qualified())
                    .collect();
                let message = format!(
                    "{err}; the tools are: {}",
                    if available.is_empty() {
                        "none".to_owned()
                    } else {
                        available.join(", ")
                    }
                );
                CallOutcome::failure(CallFailure::UnknownTool { available }, message)
            }
            _ => CallOutcome::failure(CallFailure::Transport, err.to_string()),
        }
    }
}

impl McpService {
    /// One visit of `servicing`: a new call, or a person's answer for the call that waits.
    async fn step(&self, event: &Value) -> Value {
        let Some(questions) = &self.questions else {
            return self.respond(event).await;
        };
        if event.get("message").is_some_and(Value::is_array) {
            return self.respond(event).await;
        }
        let mut slot = self.in_flight.lock().await;
        if let Some(answer) = event.get("answer") {
            let Some(flight) = slot.as_mut() else {
                let outcome = CallOutcome::failure(
                    CallFailure::Transport,
                    "no tool call is waiting for this answer (the run was resumed elsewhere, or the call ended)",
                );
                return response(Value::Null, &outcome);
            };
            if let Some(pending) = flight.waiting.take() {
                pending.answer(reply_of(answer));
            }
        } else {
            if let Some(stale) = slot.take() {
                stale.task.abort();
            }
            let call = match read_call(event) {
                Ok(call) => call,
                Err(rejected) => {
                    let outcome = CallOutcome::failure(
                        CallFailure::Rejected {
                            code: rejected.code,
                        },
                        rejected.message,
                    );
                    return response(rejected.id, &outcome);
                }
            };
            let this = self.clone();
            let id = call.id.clone();
            // In the span of the state that asked (the call outlives this poll: a person may answer
            // a question first).
            let task = tokio::spawn(async move { this.execute(&call).await }.in_current_span());
            *slot = Some(InFlight {
                id,
                task,
                waiting: None,
            });
        }
        let Some(flight) = slot.as_mut() else {
            return response(
                Value::Null,
                &CallOutcome::failure(CallFailure::Transport, "no call"),
            );
        };
        // Dropped here (an interrupt racing the runner), the call is dropped too: the server is
        // told it was cancelled. Returned normally, it keeps running while a person answers.
        let abort = AbortOnDrop(Some(flight.task.abort_handle()));
        let mut receiver = questions.lock().await;
        let next = tokio::select! {
            joined = &mut flight.task => Step::Done(joined),
            question = receiver.recv() => match question {
                Some(pending) => Step::Asked(pending),
                None => Step::Done((&mut flight.task).await),
            },
        };
        abort.disarm();
        match next {
            Step::Done(joined) => {
                let outcome = joined.unwrap_or_else(|err| {
                    CallOutcome::failure(
                        CallFailure::Transport,
                        format!("the call's task failed: {err}"),
                    )
                });
                let id = flight.id.clone();
                *slot = None;
                response(id, &outcome)
            }
            Step::Asked(pending) => {
                let request = pending.request.clone();
                flight.waiting = Some(pending);
                json!({
                    "id": [SERVICING, ASKING],
                    "elicitation": {
                        "server": request.server,
                        "message": request.message,
                        "schema": if request.schema.is_object() { request.schema } else { json!({}) },
                    }
                })
            }
        }
    }
}

/// What a visit of `servicing` ends with.
enum Step {
    Done(Result<CallOutcome, tokio::task::JoinError>),
    Asked(PendingElicitation),
}

/// Aborts a task when dropped, unless disarmed.
struct AbortOnDrop(Option<tokio::task::AbortHandle>);

impl AbortOnDrop {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if let Some(handle) = self.0.take() {
            handle.abort();
        }
    }
}

/// A person's answer, from the `["asking", "servicing"]` event.
fn reply_of(answer: &Value) -> ElicitationReply {
    match answer.get("action").and_then(Value::as_str) {
        Some("accept") => {
            ElicitationReply::Accept(answer.get("content").cloned().unwrap_or_else(|| json!({})))
        }
        Some("cancel") => ElicitationReply::Cancel,
        _ => ElicitationReply::Decline,
    }
}

impl Service for McpService {
    /// [`McpService::respond`], cancelled by an interrupt: the hook drops the call, which sends the
    /// server `notifications/cancelled`. (The runner drops the action on an interrupt too; the hook
    /// also serves callers that run the service outside a runner's race.)
    fn call<'a>(&'a self, call: ServiceCall<'a>) -> BoxFuture<'a, Result<Value, BoxError>> {
        let (cancel, cancelled) = oneshot::channel::<()>();
        // The hook stays registered after the call ends (an interrupt has no way to unregister
        // one); sending to a finished call does nothing.
        call.interrupt.on_interrupt(move || {
            let _ = cancel.send(());
        });
        let event = call.event;
        Box::pin(async move {
            let cancelled = async {
                // A hook dropped unsent (the interrupt handle itself dropped) is no interrupt.
                if cancelled.await.is_err() {
                    std::future::pending::<()>().await;
                }
            };
            tokio::select! {
                biased;
                () = cancelled => {
                    // The step future is gone, and its lock with it; `try_lock` never waits anyway.
                    let flight = self.in_flight.try_lock().ok().and_then(|mut slot| slot.take());
                    let id = match flight {
                        Some(flight) => {
                            flight.task.abort();
                            flight.id
                        }
                        None => event.pointer("/message/id").cloned().unwrap_or(Value::Null),
                    };
                    let outcome = CallOutcome::failure(
                        CallFailure::Transport,
                        "the call was cancelled: the run was interrupted",
                    );
                    Ok(response(id, &outcome))
                }
                response = self.step(event) => Ok(response),
            }
        })
    }
}

/// The tool's input schema, normalised and embedded ([`claij_schema::embed`]): what to put under
/// `arguments`, and the definitions to add to the machine's shared schemas. `None` when it cannot be
/// embedded: it does not compile alone, it uses `$dynamicRef`, or its definitions' names are taken
/// (by other definitions).
fn embedded_arguments(
    tool: &ToolInfo,
    taken: &Map<String, Value>,
) -> Option<(Value, Map<String, Value>)> {
    let schema = tool.normalised_input();
    if claij_schema::check(&schema).is_err() || has_dynamic_reference(&schema) {
        return None;
    }
    let (arguments, defs) = claij_schema::embed(&tool.qualified(), &schema);
    // A name taken by the same definition is this tool's from an earlier narrowing.
    defs.iter()
        .all(|(name, def)| taken.get(name).is_none_or(|had| had == def))
        .then_some((arguments, defs))
}

/// Whether a schema uses `$dynamicRef`, which embedding does not rewrite.
fn has_dynamic_reference(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => map
            .iter()
            .any(|(k, v)| k == "$dynamicRef" || has_dynamic_reference(v)),
        Value::Array(items) => items.iter().any(has_dynamic_reference),
        _ => false,
    }
}

/// The `llm` state's list of tools: each name with its description, and the arguments of the
/// `generic` ones, whose schema is not in the transition's.
fn tools_prompt(tools: &[Arc<ToolInfo>], generic: &[String]) -> String {
    if tools.is_empty() {
        return "No tools are available: answer the request yourself through [\"llm\", \"end\"], and \
                say so when it needs information you do not have."
            .to_owned();
    }
    let mut out = String::from(
        "The tools you can call (as `params.name`; the arguments each takes are in the schema of \
         [\"llm\", \"servicing\"]):",
    );
    for tool in tools {
        out.push_str(&format!("\n- `{}`", tool.qualified()));
        let about = tool
            .description
            .as_deref()
            .or(tool.title.as_deref())
            .map(str::trim)
            .unwrap_or_default();
        if !about.is_empty() {
            out.push_str(": ");
            out.push_str(&indent_rest(about, "  "));
        }
        if generic.contains(&tool.qualified()) {
            let compact = claij_schema::to_compact(&tool.normalised_input());
            out.push_str("\n  arguments (not in the schema; checked when you call):\n");
            out.push_str(&indent_all(compact.trim_end(), "    "));
        }
    }
    out
}

/// Reads the `tools/call` request in `event`.
fn read_call(event: &Value) -> Result<ToolsCall, Rejected> {
    let reject = |id: &Value, code: i32, message: String| Rejected {
        id: id.clone(),
        code,
        message,
    };
    let Some(message) = event.get("message").and_then(Value::as_object) else {
        return Err(reject(
            &Value::Null,
            INVALID_REQUEST,
            "no request: `message` must be a JSON-RPC 2.0 tools/call request object".to_owned(),
        ));
    };
    let id = match message.get("id") {
        Some(id @ (Value::Number(_) | Value::String(_))) => id.clone(),
        _ => {
            return Err(reject(
                &Value::Null,
                INVALID_REQUEST,
                "the request needs an `id`, a number or a string".to_owned(),
            ));
        }
    };
    if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(reject(
            &id,
            INVALID_REQUEST,
            "the request needs \"jsonrpc\": \"2.0\"".to_owned(),
        ));
    }
    match message.get("method").and_then(Value::as_str) {
        Some("tools/call") => {}
        Some(other) => {
            return Err(reject(
                &id,
                METHOD_NOT_FOUND,
                format!("method `{other}` is not served here: only tools/call"),
            ));
        }
        None => {
            return Err(reject(
                &id,
                INVALID_REQUEST,
                "the request needs \"method\": \"tools/call\"".to_owned(),
            ));
        }
    }
    let params = message.get("params");
    let Some(name) = params.and_then(|p| p.get("name")).and_then(Value::as_str) else {
        return Err(reject(
            &id,
            INVALID_PARAMS,
            "`params.name` must name the tool, as `server.tool`".to_owned(),
        ));
    };
    let arguments = match params.and_then(|p| p.get("arguments")) {
        None | Some(Value::Null) => json!({}),
        // Text is a model's arguments it wrote as a string: the executor repairs it into an
        // object (as it does a native call's), or refuses it saying why.
        Some(arguments @ (Value::Object(_) | Value::String(_))) => arguments.clone(),
        Some(_) => {
            return Err(reject(
                &id,
                INVALID_PARAMS,
                "`params.arguments` must be an object".to_owned(),
            ));
        }
    };
    Ok(ToolsCall {
        id,
        name: name.to_owned(),
        arguments,
    })
}

/// The `servicing` → `llm` event: the JSON-RPC response carrying the MCP result.
fn response(id: Value, outcome: &CallOutcome) -> Value {
    json!({
        "id": [SERVICING, LLM],
        "message": {"jsonrpc": "2.0", "id": id, "result": outcome.to_mcp()}
    })
}

/// `text` with every line after the first indented.
fn indent_rest(text: &str, by: &str) -> String {
    text.lines()
        .enumerate()
        .map(|(i, line)| match (i, line.trim_end()) {
            (0, line) | (_, line @ "") => line.to_owned(),
            (_, line) => format!("{by}{line}"),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `text` with every non-empty line indented.
fn indent_all(text: &str, by: &str) -> String {
    text.lines()
        .map(|line| {
            if line.trim().is_empty() {
                String::new()
            } else {
                format!("{by}{line}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A `CallToolResult` (the executor's output for an MCP tool) as an outcome.
fn outcome_of(result: &Value) -> CallOutcome {
    let content = result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|block| Content::from_value(block.clone()))
        .collect();
    let structured = result.get("structuredContent").cloned();
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        let mut outcome = CallOutcome::failure(CallFailure::Tool, "");
        outcome.content = content;
        outcome.structured = structured;
        outcome
    } else {
        CallOutcome::success(content, structured)
    }
}
