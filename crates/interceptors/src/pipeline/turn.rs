//! One turn ([`Pipeline::ask`], [`Pipeline::run_agent`]): the schema and prompts, then steps until
//! a valid answer (one step, unless an agent's tools are called), then the hooks, and the turn kept
//! in the context's history.

use std::sync::Arc;
use std::time::{Duration, Instant};

use claij_backends::{Message, ToolCall, ToolSpec};
use serde_json::Value;

use super::agent::Agent;
use super::{
    Answer, Attempt, Base, Call, CallReport, Delivery, EXAMPLE_INTRO, Pipeline, Prepared, Retry,
};
use crate::context::{Context, ToolResult};
use crate::error::Error;
use crate::prompts::Prompts;
use crate::tool::NativeTools;

/// How the attempts of a step ended.
pub(super) enum Done {
    /// A valid value.
    Value(Value),
    /// Native tool calls (only when tools were sent), with the text the model wrote beside them
    /// (not the first call's arguments).
    Calls { text: String, calls: Vec<ToolCall> },
}

/// What a turn did: the answer, the tools it called and its steps.
pub(super) struct Ran {
    pub(super) answer: Answer,
    pub(super) calls: Vec<ToolResult>,
    pub(super) steps: usize,
}

/// What stays the same across the steps of a turn.
struct Turn<'a> {
    prompts: &'a Prompts,
    prepared: Option<&'a Prepared>,
    delivery: &'a Delivery,
    on_partial: Option<&'a (dyn Fn(&Value) + Send + Sync)>,
    agent: Option<&'a Agent<'a>>,
    specs: &'a [ToolSpec],
}

/// What the steps of a turn came to.
struct Stepped {
    value: Value,
    attempts: Vec<Attempt>,
    /// The model's calls and their results, in order.
    steps: Vec<Message>,
    calls: Vec<ToolResult>,
    count: usize,
}

impl Pipeline {
    /// One turn: the schema and prompts, then steps until a valid answer. Without `agent` a turn is
    /// one step; with it, a step whose reply calls tools runs them and the next step sees the
    /// results, within the agent's budget.
    pub(super) async fn run(
        &self,
        ctx: &mut Context,
        input: &str,
        base: Base,
        on_partial: Option<&(dyn Fn(&Value) + Send + Sync)>,
        agent: Option<&Agent<'_>>,
    ) -> Result<Ran, Error> {
        let started = Instant::now();
        let mut skipped = self.pre_request(input, ctx).await?;
        let native = agent.is_some_and(Agent::is_native);
        if let Some(marker) = agent.and_then(Agent::native_marker) {
            ctx.insert(marker);
        }
        let prepared = self.prepare_turn(&base, input, ctx, &mut skipped);
        ctx.remove::<NativeTools>();
        let (prepared, mut prompts) = prepared?;
        let delivery = self.turn_delivery(prepared.as_deref(), native);
        if let Some(prepared) = &prepared
            && self.shows_example(&delivery)
            && let Some(example) = prepared.example()
        {
            prompts.system_push(&format!("{EXAMPLE_INTRO}\n{example}"));
        }
        let specs = agent.map(Agent::specs).unwrap_or_default();
        let turn = Turn {
            prompts: &prompts,
            prepared: prepared.as_deref(),
            delivery: &delivery,
            on_partial,
            agent,
            specs: &specs,
        };
        let stepped = self.steps(ctx, &turn, started.elapsed()).await?;
        let Stepped {
            value,
            attempts,
            steps,
            calls,
            count,
        } = stepped;
        let usage = attempts.iter().map(|a| a.usage).sum();
        // The attempts move into the context for the post hooks and back out for the answer: no
        // copy of every attempt per call.
        ctx.insert(CallReport {
            provider: self.backend.provider().to_owned(),
            model: self.config.model.clone(),
            attempts,
        });
        self.post_response(&value, ctx, &mut skipped).await?;
        let attempts = ctx
            .remove::<CallReport>()
            .map(|report| report.attempts)
            .unwrap_or_default();
        // The answer as the model is to see it next turn: the valid value's JSON text (a plain-text
        // answer as its text), not the raw reply with its fences and repairs.
        let said = match (&base, &value) {
            (Base::PlainText, Value::String(text)) => text.clone(),
            (_, value) => value.to_string(),
        };
        self.remember(ctx, &prompts.user, steps, said);
        // A counter restored from a file can stand at its maximum: it stays there, never wraps
        // or panics (the CLI refuses such a session before any request).
        ctx.turn = ctx.turn.saturating_add(1);
        let answer = Answer {
            value,
            attempts,
            usage,
            skipped,
        };
        Ok(Ran {
            answer,
            calls,
            steps: count,
        })
    }

    /// The steps of a turn: each a validation-retry loop whose valid reply either answers or calls
    /// tools, which an agent runs (within its budget) before the next step.
    async fn steps(
        &self,
        ctx: &Context,
        turn: &Turn<'_>,
        mut prepare_time: Duration,
    ) -> Result<Stepped, Error> {
        let mut steps: Vec<Message> = Vec::new();
        let mut attempts: Vec<Attempt> = Vec::new();
        let mut calls: Vec<ToolResult> = Vec::new();
        let mut count = 0;
        let value = loop {
            count += 1;
            let call = Call {
                ctx,
                prompts: turn.prompts,
                prepared: turn.prepared,
                delivery: turn.delivery,
                on_partial: turn.on_partial,
                steps: &steps,
                tools: turn.specs,
                agent: turn.agent,
                spent: &attempts,
            };
            let first = self.request(&call, Retry::First);
            let (done, tried) = self
                .attempts(&call, Arc::new(first), prepare_time)
                .await
                .map_err(|e| e.after_steps(&attempts))?;
            attempts.extend(tried);
            let Some(agent) = turn.agent else {
                match done {
                    Done::Value(value) => break value,
                    // Never: no tools were sent.
                    Done::Calls { text, .. } => break Value::String(text),
                }
            };
            let (said, asked) = match done {
                Done::Calls { text, calls } => {
                    let calls = agent.repaired(calls);
                    (Message::assistant_calls(text, calls.clone()), calls)
                }
                Done::Value(value) => {
                    let found = agent.calls_in(&value);
                    if found.is_empty() {
                        break value;
                    }
                    (Message::assistant(value.to_string()), found)
                }
            };
            agent.check(count, &attempts)?;
            let results = agent.run_calls(&asked).await;
            steps.push(said);
            steps.extend(agent.result_messages(&asked, &results));
            calls.extend(results.into_iter().map(|(result, _)| result));
            prepare_time = Duration::ZERO;
        };
        Ok(Stepped {
            value,
            attempts,
            steps,
            calls,
            count,
        })
    }

    /// The composed schema (none for plain text) and the prompts of a turn.
    fn prepare_turn(
        &self,
        base: &Base,
        input: &str,
        ctx: &Context,
        skipped: &mut Vec<String>,
    ) -> Result<(Option<Arc<Prepared>>, Prompts), Error> {
        let prepared = match base {
            Base::Schema(base) => Some(self.prepare_schema(base, ctx, skipped)?),
            Base::PlainText => None,
        };
        let prompts = self.build_prompts(input, ctx, skipped)?;
        Ok((prepared, prompts))
    }

    /// How the turn's schema reaches the model; never as a forced tool while the model is free to
    /// call others (`native` tools).
    fn turn_delivery(&self, prepared: Option<&Prepared>, native: bool) -> Delivery {
        match prepared.map(|p| self.delivery(p)) {
            Some(Delivery::Provider {
                mode: claij_backends::OutputMode::Tool,
                ..
            }) if native => Delivery::Prompted,
            Some(delivery) => delivery,
            None => Delivery::Prompted,
        }
    }

    /// Appends the turn to the context's history (the user's input, an agent's steps, the answer)
    /// and keeps the policy's window.
    fn remember(&self, ctx: &mut Context, user: &str, steps: Vec<Message>, answer: String) {
        let policy = &self.config.history;
        if policy.is_none() {
            ctx.history.clear();
            return;
        }
        ctx.history.push(Message::user(user));
        ctx.history.messages.extend(steps);
        ctx.history.push(Message::assistant(answer));
        ctx.history.trim(policy);
    }
}
