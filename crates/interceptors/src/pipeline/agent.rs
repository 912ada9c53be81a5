//! The agent run ([`Pipeline::run_agent`]): within one turn, the model calls the pipeline's tools
//! and sees their results until it answers, within a [`Budget`]. The native route of the tool
//! engine: the calls run through the tools' [`Executor`]s.

use std::collections::HashMap;

use claij_backends::{ChatRequest, Message, Role, SchemaTarget, ToolCall, ToolSpec};
use serde::Serialize;
use serde_json::Value;
use tracing::{Instrument as _, warn};

use super::prepare::compile_for;
use super::{Answer, Attempt, Pipeline, spans};
use crate::budget::{Budget, BudgetKind};
use crate::builtin::tools::results_section;
use crate::context::{Context, ToolOrigin, ToolResult};
use crate::error::Error;
use crate::tool::{Executor, NativeTools, recover_arguments};

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
    executors: &'a [Executor],
    budget: &'a Budget,
    /// The backend's tool dialect, when the tools go natively.
    native: Option<SchemaTarget>,
    /// Each tool by name (the first executor offering a name wins): its executor and its spec.
    tools: HashMap<String, (usize, ToolSpec)>,
    order: Vec<String>,
}

impl Pipeline {
    /// Asks `input` as [`Pipeline::ask`] does, letting the model call the tools given to the
    /// pipeline ([`Pipeline::with_tools`]: the `tools` interceptor's Rust functions, the `mcp`
    /// interceptor's MCP tools, any [`Tool`](crate::Tool)) and see their results within this one
    /// turn, until it answers without calling any.
    ///
    /// Tools go natively ([`ChatRequest::tools`](claij_backends::ChatRequest::tools)) where the
    /// backend's capabilities have tools for the model, the calls coming back as the response's
    /// tool calls and the results as tool messages; elsewhere through the field of the reply of
    /// the interceptor that offers them (the `oneOf` route, [`Executor::with_reply_calls`]), the
    /// results as a user turn (kept in the history as a tool message with no `tool_call_id`, so a
    /// window never opens on it). Each executor runs its calls of a step as on every route (see
    /// [`crate::tool`]): the arguments repaired when they are text and checked against the tool's
    /// schema (a violation is the call's result, for the model to correct), at most
    /// [`Limits::max_calls`](crate::Limits::max_calls) of them, [`Limits::concurrency`](crate::Limits::concurrency)
    /// at once, each under [`Limits::timeout`](crate::Limits::timeout); the model sees
    /// [`Limits::result_chars`](crate::Limits::result_chars) of them. The steps (calls and results)
    /// go into the context's history with the turn.
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
    /// let pipeline = Pipeline::new(backend.clone(), Config::new("test-model"), Chain::new().with(tools.clone()))
    ///     .with_tools(tools.executor());
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
        let capabilities = self.backend.capabilities(&self.config.model);
        let native = capabilities
            .tools
            .then(|| capabilities.schema_target(claij_backends::OutputMode::Tool));
        let agent = Agent::new(&self.tools, budget, native);
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
    /// The agent over `executors`; `native`: the dialect the backend takes tool schemas in, when it
    /// takes tools natively.
    fn new(executors: &'a [Executor], budget: &'a Budget, native: Option<SchemaTarget>) -> Self {
        let mut tools = HashMap::new();
        let mut order = Vec::new();
        for (index, executor) in executors.iter().enumerate() {
            for spec in executor.specs() {
                if tools.contains_key(&spec.name) {
                    warn!(tool = %spec.name, "two executors offer this tool; the first one's is used");
                    continue;
                }
                order.push(spec.name.clone());
                tools.insert(spec.name.clone(), (index, spec));
            }
        }
        Self {
            native: native.filter(|_| !tools.is_empty()),
            executors,
            budget,
            tools,
            order,
        }
    }

    /// What an interceptor offering these tools through a field of the reply sees while the turn
    /// is prepared, when they go natively.
    pub(super) fn native_marker(&self) -> Option<NativeTools> {
        self.is_native()
            .then(|| NativeTools::of(self.executors.iter()))
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
            .map(|(_, spec)| match compile_for(target.dialect, &spec.parameters, false) {
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

    /// The calls a valid value makes through the executors' fields.
    pub(super) fn calls_in(&self, value: &Value) -> Vec<ToolCall> {
        self.executors
            .iter()
            .flat_map(|executor| executor.calls_in(value))
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

    /// Runs the calls, one result per call, in order: each executor runs its calls as on every
    /// route (checked, at most its `max_calls`, its `concurrency` at once, each under its
    /// `timeout`), executors side by side; a call naming no tool is refused, listing them. With
    /// each result, the executor that ran it (`None`: none did).
    pub(super) async fn run_calls(&self, calls: &[ToolCall]) -> Vec<(ToolResult, Option<usize>)> {
        let mut results: Vec<Option<ToolResult>> = vec![None; calls.len()];
        let mut owner: Vec<Option<usize>> = vec![None; calls.len()];
        // The calls each executor runs, by their position.
        let mut runs: Vec<Vec<usize>> = vec![Vec::new(); self.executors.len()];
        for (position, call) in calls.iter().enumerate() {
            match self.tools.get(&call.name) {
                Some((index, _)) => {
                    runs[*index].push(position);
                    owner[position] = Some(*index);
                }
                None => {
                    let why = format!(
                        "unknown tool `{}`; the tools are: {}",
                        call.name,
                        self.order.join(", ")
                    );
                    results[position] = Some(ToolResult {
                        name: call.name.clone(),
                        args: call.arguments.clone(),
                        output: Err(why),
                        origin: ToolOrigin::Other {
                            interceptor: "agent".to_owned(),
                        },
                    });
                }
            }
        }
        let executor_runs = runs.iter().enumerate().map(|(index, positions)| {
            let mine: Vec<ToolCall> = positions.iter().map(|&p| calls[p].clone()).collect();
            let executor = &self.executors[index];
            async move { executor.run(&mine).await }
        });
        let ran = futures_util::future::join_all(executor_runs).await;
        for (positions, outputs) in runs.iter().zip(ran) {
            for (&position, result) in positions.iter().zip(outputs) {
                results[position] = Some(result);
            }
        }
        results.into_iter().flatten().zip(owner).collect()
    }

    /// The messages that give a step's results back to the model, each executor's cut to its
    /// [`Limits::result_chars`](crate::Limits::result_chars).
    pub(super) fn result_messages(
        &self,
        calls: &[ToolCall],
        results: &[(ToolResult, Option<usize>)],
    ) -> Vec<Message> {
        if !self.is_native() {
            // One section per executor, in the order the executors were given.
            let sections: Vec<String> = (0..self.executors.len())
                .filter_map(|index| {
                    let own: Vec<ToolResult> = results
                        .iter()
                        .filter(|(_, owner)| *owner == Some(index))
                        .map(|(r, _)| r.clone())
                        .collect();
                    results_section(&own, self.executors[index].limits().result_chars)
                })
                .chain({
                    let unknown: Vec<ToolResult> = results
                        .iter()
                        .filter(|(_, owner)| owner.is_none())
                        .map(|(r, _)| r.clone())
                        .collect();
                    results_section(&unknown, crate::tool::DEFAULT_RESULT_CHARS)
                })
                .collect();
            if sections.is_empty() {
                return Vec::new();
            }
            return vec![Message::new(Role::Tool, sections.join("\n\n"))];
        }
        let texts: Vec<String> = results
            .iter()
            .map(|(result, _)| match &result.output {
                Ok(value) => value.to_string(),
                Err(why) => format!("error: {why}"),
            })
            .collect();
        // Each executor's results share its budget.
        let mut shown = texts.clone();
        for (index, executor) in self.executors.iter().enumerate() {
            let positions: Vec<usize> = (0..results.len())
                .filter(|&p| results[p].1 == Some(index))
                .collect();
            let own: Vec<String> = positions.iter().map(|&p| texts[p].clone()).collect();
            let cut = executor.budget(&own, |keep, total| {
                format!("… [cut: the tool-results budget shows {keep} of its {total} characters]")
            });
            for (&p, text) in positions.iter().zip(cut) {
                shown[p] = text;
            }
        }
        calls
            .iter()
            .zip(shown)
            .map(|(call, text)| Message::tool_result(call.id.clone(), text))
            .collect()
    }
}
