//! claij FSM runs as durable [Restate](https://restate.dev) workflows, and conversations as
//! Restate virtual objects.
//!
//! An embedded run ([`claij_fsm::Runner::run`], a JSONL journal) lives in one process. On
//! Restate, a run is the `ClaijFsm` workflow keyed by its run id: the server journals each step,
//! so a worker killed mid-run is replaced by another that replays the journal instead of calling
//! the model again, and runs spread over as many workers as register with the server.
//!
//! - Each `llm`, service or MCP state's action runs inside `ctx.run` (named `{state} #{n}`), its
//!   result a [`claij_fsm::StepRecord`] the runner applies ([`claij_fsm::Runner::act_step`],
//!   [`claij_fsm::Runner::apply_step`]: the embedded runner is made of the same pieces).
//! - A `human` state waits on a durable promise (`human/{state}/{visit}`) that the `provide`
//!   handler resolves, after checking the event against the state's transitions.
//! - The trail is the workflow's state, set after every transition: the `status` handler reads it
//!   while the run goes on ([`RunStatus`]).
//! - `interrupt`, or Restate's cancel of the run's invocation (`restate invocations cancel`, the
//!   admin API), ends the run with `[state, "interrupted"]`: at once in a `human` state, else when
//!   the action under way returns, whose result is then dropped, as the embedded runner drops the
//!   action in flight (`ctx.run` cannot be raced in restate-sdk 0.13, so a model call is not cut
//!   short). [`Client::interrupt`] interrupts the sub-FSM runs it waits on too.
//! - An `fsm` state's sub-FSM is a child workflow keyed `{run_id}/{state}/{n}`.
//! - A second start of the same run id starts nothing ([`Started::already`]).
//! - Conversations: the `ClaijConversation` object, keyed by session id: `turn` asks the model
//!   (one turn at a time per key, across workers), `history` reads the messages.
//!
//! A [`Worker`] serves both with a [`Wiring`] (which models and services a machine's states
//! get); [`Client`] starts, follows, provides, interrupts and registers. Both halves meet on the
//! wire types in [`types`].
//!
//! ```
//! use std::sync::Arc;
//! use claij_test_support::Scripted;
//! use claij_fsm::{Fsm, Runner};
//! use claij_interceptors::Config;
//! use claij_restate::{Machine, RunRequest, Worker, wiring_fn};
//! use serde_json::json;
//!
//! // The worker: every machine's `llm` states ask one (here scripted) model.
//! let model = Scripted::replies([r#"{"greeting": "Hello, Ada"}"#]);
//! let worker = Worker::new(wiring_fn(move |machine| match machine {
//!     Machine::Inline { definition, .. } => Ok(Runner::new(Fsm::new(definition.clone())?)
//!         .with_llm(Arc::new(model.clone()), Config::new("any-model"))),
//!     other => Err(format!("unknown machine {other:?}").into()),
//! }));
//! let _endpoint = worker.endpoint()?; // what `HttpServer` serves (see `serve`)
//!
//! // What a client sends to start a run.
//! let definition = serde_json::from_value(json!({
//!   "id": "greeter",
//!   "states": [{"id": "greet", "action": "llm"}, {"id": "end", "action": "end"}],
//!   "transitions": [
//!     {"id": ["start", "greet"], "schema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}},
//!     {"id": ["greet", "end"], "schema": {"type": "object", "properties": {"greeting": {"type": "string"}}, "required": ["greeting"]}}
//!   ]
//! }))?;
//! let request = RunRequest::new(Machine::inline(definition, vec![]), json!({"name": "Ada"}));
//! assert_eq!(serde_json::to_value(&request)?["input"], json!({"name": "Ada"}));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! With a server (`cargo xtask restate` installs one), a worker and a run:
//!
//! ```no_run
//! # use claij_restate::{Client, Machine, RunRequest, Wiring, serve};
//! # async fn example(wiring: impl Wiring, request: RunRequest) -> Result<(), Box<dyn std::error::Error>> {
//! let bind = "127.0.0.1:9080".parse()?;
//! tokio::spawn(serve(bind, wiring, std::future::pending::<()>()));
//! let client = Client::new("http://127.0.0.1:8080")?.with_admin("http://127.0.0.1:9070")?;
//! client.register("http://127.0.0.1:9080").await?;
//! client.start("run-1", &request).await?;
//! let result = client.attach("run-1").await?;
//! println!("{} transitions", result.trail.entries.len());
//! # Ok(())
//! # }
//! ```
//!
//! Who may call a worker: given the Restate server's request-identity public keys
//! ([`Worker::with_identity_keys`], [`IdentityKey`]), a worker serves only requests the server
//! signed with the matching private key (its `request-identity-private-key-pem-file` option) and
//! answers any other, unsigned or signed with another key, 401 before a handler runs. Without keys
//! it serves whoever reaches its port: keep such a worker on loopback (`claij serve restate`
//! refuses another address without keys).
//!
//! Features: none of its own. restate-sdk is built with `http_server` only: its request-identity
//! check uses ring's Ed25519 (in the build already, for reqwest's TLS) instead of its
//! `rust_crypto` or `aws_lc_rs` features, which would build a second crypto library; and not
//! `tracing-span-filter`, which would pull a tracing subscriber into a library.
//!
//! Errors: [`Error`] (client and serving, naming the URL or the run, never a header); a run's
//! own failure is data, [`Ended::Failed`] with the state and a [`FailureKind`].

pub mod client;
mod conversation;
mod error;
mod identity;
pub mod types;
mod wiring;
mod worker;
mod workflow;

pub use client::{Client, Followed, Limits, Started};
pub use conversation::{CONVERSATION, ClaijConversation, TurnAnswer};
pub use error::{Error, ErrorKind, Result};
pub use identity::{IdentityKey, KEY_PREFIX};
pub use types::{
    Ended, Failure, FailureKind, Machine, RunOptions, RunRequest, RunResult, RunStatus,
};
pub use wiring::{Wiring, wiring_fn};
pub use worker::{DEFAULT_RUNNER_CACHE, Worker, serve};
pub use workflow::{ClaijFsm, WORKFLOW};
