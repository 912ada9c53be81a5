//! The agent run ([`Pipeline::run_agent`]): within one turn, the model calls the chain's tools and
//! sees their results until it answers, within a [`Budget`].

use std::collections::HashMap;

use claij_backends::{ChatRequest, Message, Role, SchemaTarget, ToolCall, ToolSpec};
use claij_validation::{FixKind, Validator};
use serde::Serialize;
use serde_json::Value;
use tracing::{Instrument as _, warn};

use super::prepare::compile_for;
use super::{Answer, Attempt, Pipeline, spans};
use crate::builtin::tools::results_section;
use crate::context::{Context, ToolOrigin, ToolResult};
use crate::error::Error;
use crate::toolbox::{Budget, BudgetKind, Toolbox, run_bounded};

/// What an agent run did: the answer, and every tool call made on the way to it.
#[derive(Debug, Clone, Serialize)]
pub struct AgentRun {
    /// The final answer; its attempts are every step's, in order (numbered within their step).
    pub answer: Answer,
    /// The tool calls, in the order they were made, with their results (a refused call's error
    /// says why: an unknown tool, arguments that violate the tool's schema).
    pub calls: Vec<ToolResult>,
    /// Steps taken: model calls that ended in tool calls or in the answer.
    pub steps: usize,
}

/// The tools of one agent run and its budget.
pub(super) struct Agent<'a> {
    toolboxes: Vec<&'a dyn Toolbox>,
    budget: &'a Budget,
    /// The backend's tool dialect, when the tools go natively.
    native: Option<SchemaTarget>,
    /// Each tool by name (the first toolbox offering a name wins): its toolbox, its spec and the
    /// validator of its arguments (`None` when the schema does not compile: the toolbox checks).
    tools: HashMap<String, (usize, ToolSpec, Option<Validator>)>,
    order: Vec<String>,
}

impl Pipeline {
    /// Asks `input` as [`Pipeline::ask`] does, letting the model call the tools of the chain's
    /// interceptors ([`Interceptor::toolbox`](crate::Interceptor::toolbox): the `tools`
    /// interceptor's Rust functions, the `mcp` interceptor's MCP tools) and see their results within
    /// this one turn, until it answers without calling any.
    ///
    /// Tools go natively ([`ChatRequest::tools`](claij_backends::ChatRequest::tools)) where the
    /// backend's capabilities have tools for the model, the calls coming back as the response's
    /// tool calls and the results as tool messages; elsewhere through each interceptor's field of
    /// the reply (the `oneOf` route), the results as a user turn (kept in the history as a tool
    /// message with no `tool_call_id`, so a window never opens on it). Each call's arguments are
    /// checked against its tool's schema first: a violation is the call's result, for the model to
    /// correct. Native arguments the provider could not parse (their raw text) are extracted and
    /// repaired as a reply is first; text with no JSON object in it, or cut off, is a violation too. Each toolbox runs a step's calls at most [`Toolbox::concurrency`] at once, under its
    /// own timeout; the model sees at most [`Budget::result_chars`] of them. The steps (calls and
    /// results) go into the context's history with the turn.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use claij_test_support::Scripted;
    /// use claij_interceptors::builtin::tools::Tools;
    /// use claij_interceptors::{Budget, Chain, Config, Context, Pipeline};
    /// use serde_json::json;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let tools = Tools::new().register(
    ///     "weather", "Today's weather in a city.",
    ///     json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    ///     |args| async move { Ok(json!(format!("sunny in {}", args["city"].as_str().unwrap_or("?")))) },
    /// )?;
    /// let backend = Arc::new(Scripted::replies([
    ///     r#"{"answer": "", "state": "asking", "tools": [{"name": "weather", "args": {"city": "Oslo"}}]}"#,
    ///     r#"{"answer": "It is sunny in Oslo.", "state": "done"}"#,
    /// ]));
    /// let pipeline = Pipeline::new(backend.clone(), Config::new("test-model"), Chain::new().with(tools));
    /// let mut ctx = Context::default();
    /// let run = pipeline.run_agent(&mut ctx, "Weather in Oslo?", &Budget::default()).await?;
    /// assert_eq!(run.answer.value["answer"], "It is sunny in Oslo.");
    /// assert_eq!(run.steps, 2);
    /// assert_eq!(run.calls[0].output, Ok(json!("sunny in Oslo")));
    /// // The second step saw the call and its result.
    /// assert!(backend.requests()[1].messages[2].content.contains("sunny in Oslo"));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Pipeline::ask`]; [`Error::BudgetExceeded`] naming the bound when the model still calls
    /// tools at the last step, or the tokens spent reach the budget's, before an answer, or when a
    /// model call's estimated cost would take the run past [`Budget::max_cost_usd`] (see
    /// [`Budget`]); [`Error::Unpriced`], before any request, for a cost bound without a known price.
    pub async fn run_agent(
        &self,
        ctx: &mut Context,
        input: &str,
        budget: &Budget,
    ) -> Result<AgentRun, Error> {
        self.agent(ctx, input, budget, None).await
    }

    /// [`Pipeline::run_agent`], streaming each step's reply as [`Pipeline::ask_streaming`] does:
    /// `on_partial` gets the value recovered so far whenever it changes, a step that calls tools
    /// through its reply's field included (its value then names the calls); a native tool call's
    /// arguments are not the answer and are not shown.
    ///
    /// # Errors
    ///
    /// As [`Pipeline::run_agent`].
    pub async fn run_agent_streaming(
        &self,
        ctx: &mut Context,
        input: &str,
        budget: &Budget,
        on_partial: &(dyn Fn(&Value) + Send + Sync),
    ) -> Result<AgentRun, Error> {
        self.agent(ctx, input, budget, Some(on_partial)).await
    }

    async fn agent(
        &self,
        ctx: &mut Context,
        input: &str,
        budget: &Budget,
        on_partial: Option<&(dyn Fn(&Value) + Send + Sync)>,
    ) -> Result<AgentRun, Error> {
        if budget.max_cost_usd.is_some() && !budget.price.as_ref().is_some_and(|p| p.is_known()) {
            return Err(Error::Unpriced {
                provider: self.backend.provider().to_owned(),
                model: self.config.model.clone(),
            });
        }
        let span = spans::ask(self.backend.provider(), &self.config.model, ctx.turn, true);
        let toolboxes = self
            .chain
            .links()
            .iter()
            .filter_map(|link| link.interceptor.toolbox())
            .collect();
        let capabilities = self.backend.capabilities(&self.config.model);
        let native = capabilities
            .tools
            .then(|| capabilities.schema_target(claij_backends::OutputMode::Tool));
        let agent = Agent::new(toolboxes, budget, native);
        let ran = self
            .run(ctx, input, self.base.clone(), on_partial, Some(&agent))
            .instrument(span.clone())
            .await
            .inspect_err(|e| spans::fail_with(&span, e))?;
        Ok(AgentRun {
            answer: ran.answer,
            calls: ran.calls,
            steps: ran.steps,
        })
    }
}

impl<'a> Agent<'a> {
    /// The agent over `toolboxes`; `native`: the dialect the backend takes tool schemas in, when it
    /// takes tools natively.
    fn new(
        toolboxes: Vec<&'a dyn Toolbox>,
        budget: &'a Budget,
        native: Option<SchemaTarget>,
    ) -> Self {
        let mut tools = HashMap::new();
        let mut order = Vec::new();
        for (index, toolbox) in toolboxes.iter().enumerate() {
            for spec in toolbox.specs() {
                if tools.contains_key(&spec.name) {
                    warn!(tool = %spec.name, "two toolboxes offer this tool; the first one's is used");
                    continue;
                }
                let validator = Validator::new(&spec.parameters)
                    .inspect_err(|e| warn!(tool = %spec.name, error = %e, "tool schema does not compile; arguments unchecked"))
                    .ok();
                order.push(spec.name.clone());
                tools.insert(spec.name.clone(), (index, spec, validator));
            }
        }
        Self {
            native: native.filter(|_| !tools.is_empty()),
            toolboxes,
            budget,
            tools,
            order,
        }
    }

    /// Whether the tools go natively.
    pub(super) fn is_native(&self) -> bool {
        self.native.is_some()
    }

    /// The tools, for a native request, in the toolboxes' order, each schema compiled to the
    /// backend's tool dialect (strict where the backend has strict tools); a schema the dialect
    /// cannot express goes as it is, not strict. The arguments are checked against the full schema.
    pub(super) fn specs(&self) -> Vec<ToolSpec> {
        let Some(target) = self.native else {
            return Vec::new();
        };
        self.order
            .iter()
            .filter_map(|name| self.tools.get(name))
            .map(|(_, spec, _)| match compile_for(target.dialect, &spec.parameters) {
                Ok(compiled) => ToolSpec {
                    parameters: compiled.schema,
                    strict: target.strict,
                    ..spec.clone()
                },
                Err(e) => {
                    warn!(tool = %spec.name, error = %e, "tool schema not expressible in the provider's dialect; sent as it is");
                    spec.clone()
                }
            })
            .collect()
    }

    /// Native calls with their arguments recovered where the provider could not parse them (it
    /// keeps their raw text, a JSON string): extracted and repaired as a reply is, for the history
    /// and the run. Arguments that cannot be recovered stay the text; [`Agent::run_calls`] refuses
    /// them, saying why.
    pub(super) fn repaired(&self, calls: Vec<ToolCall>) -> Vec<ToolCall> {
        calls
            .into_iter()
            .map(|mut call| {
                if let Value::String(raw) = &call.arguments
                    && let Ok((value, n_fixes)) = recover_arguments(raw)
                {
                    warn!(tool = %call.name, id = %call.id, n_fixes, "tool call arguments repaired");
                    call.arguments = value;
                }
                call
            })
            .collect()
    }

    /// The calls a valid value makes through the toolboxes' fields.
    pub(super) fn calls_in(&self, value: &Value) -> Vec<ToolCall> {
        self.toolboxes
            .iter()
            .flat_map(|toolbox| toolbox.calls_in(value))
            .collect()
    }

    /// Whether another step fits the budget after `step` steps and these attempts.
    pub(super) fn check(&self, step: usize, attempts: &[Attempt]) -> Result<(), Error> {
        let exceeded = |budget, limit: f64, used: f64| Error::BudgetExceeded {
            budget,
            limit,
            used,
            estimate: None,
            attempts: attempts.to_vec(),
        };
        if step >= self.budget.max_steps {
            return Err(exceeded(
                BudgetKind::Steps,
                self.budget.max_steps as f64,
                step as f64,
            ));
        }
        let tokens: u64 = attempts.iter().map(|a| a.usage.total_tokens()).sum();
        if let Some(limit) = self.budget.max_tokens
            && tokens >= limit
        {
            return Err(exceeded(BudgetKind::Tokens, limit as f64, tokens as f64));
        }
        let cost = self.spent(attempts, &[]);
        if let Some(limit) = self.budget.max_cost_usd
            && cost >= limit
        {
            return Err(exceeded(BudgetKind::CostUsd, limit, cost));
        }
        Ok(())
    }

    /// Before a model call: whether what the run spent (the `earlier` steps' attempts and the
    /// `current` step's) plus the call's estimated cost stays within the cost bound; see [`Budget`]
    /// for the estimate.
    pub(super) fn admit_call(
        &self,
        earlier: &[Attempt],
        current: &[Attempt],
        request: &ChatRequest,
    ) -> Result<(), Error> {
        let Some(limit) = self.budget.max_cost_usd else {
            return Ok(());
        };
        let spent = self.spent(earlier, current);
        let output = request.max_tokens.map_or_else(
            || {
                earlier
                    .iter()
                    .chain(current)
                    .map(|a| a.usage.output_tokens)
                    .max()
                    .unwrap_or(0)
            },
            u64::from,
        );
        let input = u64::from(claij_backends::models::estimate_tokens(request));
        // The run refused to start without a price: the estimate is known.
        let estimate = self.budget.estimate(input, output).unwrap_or(f64::INFINITY);
        if spent + estimate <= limit {
            return Ok(());
        }
        warn!(
            spent,
            estimate,
            limit,
            input_tokens = input,
            output_tokens = output,
            "the next model call would cross the agent run's cost budget"
        );
        Err(Error::BudgetExceeded {
            budget: BudgetKind::CostUsd,
            limit,
            used: spent,
            estimate: Some(estimate),
            attempts: earlier.iter().chain(current).cloned().collect(),
        })
    }

    /// What these attempts cost: each one's reported cost, else its usage at the budget's price.
    fn spent(&self, earlier: &[Attempt], current: &[Attempt]) -> f64 {
        let spent: f64 = earlier
            .iter()
            .chain(current)
            .filter_map(|a| self.budget.cost_of(&a.usage))
            .sum();
        // A sum of nothing is -0.0.
        spent + 0.0
    }

    /// Runs the calls, each checked against its tool's schema first; one result per call, in order.
    /// Each toolbox runs its calls as its interceptor runs a reply's after the turn: the first
    /// [`Toolbox::max_calls`] of them, at most [`Toolbox::concurrency`] at once, each under the
    /// toolbox's timeout; toolboxes side by side.
    pub(super) async fn run_calls(&self, calls: &[ToolCall]) -> Vec<ToolResult> {
        let mut outputs: Vec<Result<Value, String>> = Vec::with_capacity(calls.len());
        let mut origins: Vec<ToolOrigin> = Vec::with_capacity(calls.len());
        // The calls each toolbox runs, by their position.
        let mut runs: Vec<Vec<usize>> = vec![Vec::new(); self.toolboxes.len()];
        // The calls each toolbox was asked, run or not.
        let mut asked = vec![0usize; self.toolboxes.len()];
        for (position, call) in calls.iter().enumerate() {
            let (origin, admitted) = self.admit(call, &mut asked);
            origins.push(origin);
            match admitted {
                Ok(index) => {
                    runs[index].push(position);
                    // Its output takes this place once it ran.
                    outputs.push(Err(String::new()));
                }
                Err(why) => outputs.push(Err(why)),
            }
        }
        let toolbox_runs = runs.iter().enumerate().map(|(index, positions)| {
            let toolbox = self.toolboxes[index];
            // A vector rather than `map` keeps the future `Send`: rust-lang/rust#102211.
            let called: Vec<_> = positions
                .iter()
                .map(|&position| {
                    let call = &calls[position];
                    let span = spans::execute_tool(call);
                    async move {
                        let output = toolbox
                            .call(&call.name, call.arguments.clone())
                            .instrument(span.clone())
                            .await;
                        spans::record_tool_output(&span, &output);
                        output
                    }
                })
                .collect();
            run_bounded(called, toolbox.concurrency())
        });
        let ran = futures_util::future::join_all(toolbox_runs).await;
        for (positions, outputs_of) in runs.iter().zip(ran) {
            for (&position, output) in positions.iter().zip(outputs_of) {
                outputs[position] = output;
            }
        }
        calls
            .iter()
            .zip(origins)
            .zip(outputs)
            .map(|((call, origin), output)| ToolResult {
                name: call.name.clone(),
                args: call.arguments.clone(),
                output,
                origin,
            })
            .collect()
    }

    /// Who answers `call`, and the toolbox (its index) that runs it, or why it is not run: an
    /// unknown tool, past the toolbox's [`Toolbox::max_calls`] (`asked`: its calls so far in the
    /// step), arguments that violate the tool's schema.
    fn admit(&self, call: &ToolCall, asked: &mut [usize]) -> (ToolOrigin, Result<usize, String>) {
        let Some((index, _, validator)) = self.tools.get(&call.name) else {
            let origin = ToolOrigin::Other {
                interceptor: "agent".to_owned(),
            };
            let why = format!(
                "unknown tool `{}`; the tools are: {}",
                call.name,
                self.order.join(", ")
            );
            return (origin, Err(why));
        };
        let toolbox = self.toolboxes[*index];
        asked[*index] += 1;
        let admitted = if asked[*index] > toolbox.max_calls() {
            Err(format!(
                "not run: at most {} calls per step",
                toolbox.max_calls()
            ))
        } else if let Value::String(raw) = &call.arguments {
            // Raw text the provider could not parse, and nothing recovered from it.
            let why = recover_arguments(raw)
                .err()
                .unwrap_or_else(|| "the arguments are text, not a JSON object".to_owned());
            Err(format!("invalid arguments, not run: {why}"))
        } else {
            match validator.as_ref().map(|v| v.validate(&call.arguments)) {
                Some(Err(violations)) => {
                    let found: Vec<String> = violations.iter().map(ToString::to_string).collect();
                    Err(format!("invalid arguments, not run: {}", found.join("; ")))
                }
                _ => Ok(*index),
            }
        };
        (toolbox.origin(&call.name), admitted)
    }

    /// The messages that give a step's results back to the model, cut to the budget's
    /// [`Budget::result_chars`].
    pub(super) fn result_messages(
        &self,
        calls: &[ToolCall],
        results: &[ToolResult],
    ) -> Vec<Message> {
        result_messages(calls, results, self.is_native(), self.budget.result_chars)
    }
}

/// A native call's raw arguments (text the provider could not parse) as a JSON object, extracted and
/// repaired as a reply is, with the number of fixes made; or why not, for the model: no JSON in the
/// text, a value that is not an object, or one that was cut off (a repaired truncation could run a
/// tool with half its arguments).
fn recover_arguments(raw: &str) -> Result<(Value, usize), String> {
    let repaired = claij_validation::extract::recover(raw)
        .map_err(|e| format!("the arguments are not JSON ({e})"))?;
    if repaired
        .fixes
        .iter()
        .any(|fix| fix.kind == FixKind::Truncation)
    {
        return Err("the arguments were cut off before their end".to_owned());
    }
    if !repaired.value.is_object() {
        return Err("the arguments are not a JSON object".to_owned());
    }
    Ok((repaired.value, repaired.fixes.len()))
}

/// The messages that give a step's results back to the model: one tool message per call, its
/// output cut to `chars` (native); or one tool message answering no single call (no
/// `tool_call_id`) listing them all in `chars` ([`results_section`]), which the request sends as a
/// user turn (the `oneOf` route): a history window never opens on it.
fn result_messages(
    calls: &[ToolCall],
    results: &[ToolResult],
    native: bool,
    chars: usize,
) -> Vec<Message> {
    if !native {
        return results_section(results, chars)
            .map(|section| Message::new(Role::Tool, section))
            .into_iter()
            .collect();
    }
    calls
        .iter()
        .zip(results)
        .map(|(call, result)| {
            let text = match &result.output {
                Ok(value) => value.to_string(),
                Err(why) => format!("error: {why}"),
            };
            Message::tool_result(call.id.clone(), cut(text, chars))
        })
        .collect()
}

/// `text`, past `max` characters cut with a note saying so and why (the budget's `result_chars`).
fn cut(text: String, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!(
            "{}… [cut: the tool-results budget shows {max} of its {} characters]",
            &text[..end],
            text.chars().count()
        ),
        None => text,
    }
}
