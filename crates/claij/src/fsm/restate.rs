//! Runs on a Restate server (feature `restate`): [`Worker`], the [`claij_restate::Wiring`] a
//! worker wires each machine with (as [`Wiring`] wires a run in this process), and what starting
//! a run takes ([`DEFAULT_INGRESS`], [`new_run_id`], [`request`]), following it ([`follow`],
//! [`drive`]), its input ([`provide`]) and its end said as an embedded run's ([`report`]), and
//! `claij serve restate`'s serving ([`Serving`]: the request-identity keys, a bind beyond loopback
//! refused without them). The client and the worker themselves are [`claij_restate`].

use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::task::Poll;

use claij_backends::BoxFuture;
use claij_fsm::{Entry, Fsm, Runner, Status};
use claij_interceptors::{BoxError, Chain, ErrorChain, Pipeline};
use claij_restate::Machine as Requested;
use claij_restate::{Client, Ended, Followed, RunRequest, RunResult, RunStatus};
use serde_json::{Value, json};

use super::{Input, Machine, Options, Proposals, Report, Services, Wired, Wiring};

/// The Restate client and worker under this module: [`claij_restate`].
pub use claij_restate as durable;

mod serving;

pub use serving::{
    IDENTITY_KEY_FLAG, IDENTITY_KEYS_CONFIG, IDENTITY_KEYS_VAR, ServeError, Serving,
};

/// A Restate server's ingress when none is named.
pub const DEFAULT_INGRESS: &str = "http://127.0.0.1:8080";

/// A new run id (the workflow's key): the time and the process.
#[must_use]
pub fn new_run_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("run-{nanos:x}-{}", std::process::id())
}

/// The request that starts a run of `machine` (inline, with its sub-FSMs) from `input`, with the
/// limits of `options` on transitions and repeated calls.
#[must_use]
pub fn request(machine: &Machine, input: Value, options: &Options) -> RunRequest {
    let inline = Requested::inline(machine.definition().clone(), machine.subs().to_vec());
    let mut request = RunRequest::new(inline, input);
    request.options.max_transitions = Some(options.max_transitions);
    request.options.max_repeated_calls = Some(options.max_repeated_calls);
    request
}

/// Follows run `id` until it ends or waits, telling `on_entry` each transition after the first
/// `seen` (which then counts them, so a run followed again tells each once). When `interrupted`
/// completes first, the run is interrupted on the server (its trail records it) and followed on
/// to its end.
///
/// # Errors
///
/// The client's: the server cannot be reached, no result within its `run_timeout`.
pub async fn follow(
    client: &Client,
    id: &str,
    seen: &mut usize,
    mut on_entry: impl FnMut(&Entry),
    interrupted: impl Future<Output = ()>,
) -> Result<Followed, claij_restate::Error> {
    let told = *seen;
    let mut index = 0;
    let followed = {
        let mut follow = std::pin::pin!(client.follow(id, |entry| {
            index += 1;
            if index > told {
                on_entry(entry);
            }
        }));
        let mut interrupted = std::pin::pin!(interrupted);
        let first = std::future::poll_fn(|cx| match follow.as_mut().poll(cx) {
            Poll::Ready(followed) => Poll::Ready(Some(followed)),
            Poll::Pending => interrupted.as_mut().poll(cx).map(|()| None),
        })
        .await;
        match first {
            Some(followed) => followed,
            None => {
                client.interrupt(id).await?;
                follow.await
            }
        }
    };
    *seen = told.max(index);
    followed
}

/// Follows run `id` as [`follow`] does (telling `on_entry` each transition once, `interrupted()`
/// interrupting it), giving each `human` state it waits in the next event of `input` (an event
/// the server refuses is told to [`Input::refused`] and the run waits on), until it ends or waits
/// for an event `input` does not have.
///
/// # Errors
///
/// [`follow`]'s, a server that refuses an event otherwise than as invalid, and `input`'s.
pub async fn drive<E, F>(
    client: &Client,
    id: &str,
    input: &mut dyn Input<E>,
    mut on_entry: impl FnMut(&Entry),
    interrupted: impl Fn() -> F,
) -> Result<Followed, E>
where
    E: From<claij_restate::Error>,
    F: Future<Output = ()>,
{
    let mut seen = 0;
    loop {
        let followed = follow(client, id, &mut seen, &mut on_entry, interrupted()).await?;
        let Followed::Waiting(status) = &followed else {
            return Ok(followed);
        };
        let (_, state) = waiting(status);
        let Some(event) = input.event(&state)? else {
            return Ok(followed);
        };
        if let Provided::Refused(why) = provide(client, id, &event).await? {
            input.refused(&why);
        }
    }
}

/// Registers the worker at `uri` with the Restate server whose admin API is at `admin` (a
/// registration of the same URI is replaced).
///
/// # Errors
///
/// The client's: an invalid URL, a server that cannot be reached or refuses.
pub async fn register(admin: &str, uri: &str) -> Result<(), claij_restate::Error> {
    let client = Client::new(DEFAULT_INGRESS)?.with_admin(admin)?;
    client.register(uri).await.map(drop)
}

/// What became of an event given to a run waiting on the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Provided {
    /// The waiting state took it (the state).
    Taken(String),
    /// The server refused it as wrong for the waiting state, saying why; the run waits on.
    Refused(String),
}

/// Gives `event` to run `id`, waiting on the server in a `human` state.
///
/// # Errors
///
/// The client's: the server cannot be reached, the run does not wait.
pub async fn provide(
    client: &Client,
    id: &str,
    event: &Value,
) -> Result<Provided, claij_restate::Error> {
    match client.provide(id, event).await {
        Ok(status) => Ok(Provided::Taken(status.waiting_in.unwrap_or(status.state))),
        Err(claij_restate::Error::Status {
            status: 400,
            message,
            ..
        }) => Ok(Provided::Refused(message)),
        Err(e) => Err(e),
    }
}

/// A run's end on the server as [`Report`] says an embedded run's (`None`: an end this version
/// does not know).
#[must_use]
pub fn report(result: &RunResult) -> Option<Report> {
    let (outcome, status) = match &result.ended {
        Ended::Finished { state, event } => {
            (json!({"finished": state, "event": event}), Status::Finished)
        }
        Ended::Interrupted { from } => (json!({"interrupted": from}), Status::Interrupted),
        Ended::Failed(failure) => (json!({"failed": failure.state}), Status::Running),
        _ => return None,
    };
    Some(Report {
        run_id: result.run_id.clone(),
        outcome,
        status,
        trail: result.trail.clone(),
    })
}

/// A run waiting on the server for input (`status`), as [`Report`] says it, and the state that
/// waits (a sub-FSM's `human` state, or the run's own).
#[must_use]
pub fn waiting(status: &RunStatus) -> (Report, String) {
    let state = status.waiting_in.clone().unwrap_or(status.state.clone());
    let report = Report {
        run_id: status.run_id.clone(),
        outcome: json!({"waiting": state}),
        status: status.status,
        trail: status.trail.clone(),
    };
    (report, state)
}

/// What a machine's runs get as proposals on this worker (`None`: none), made once per machine.
pub type ProposalsFor = Arc<dyn Fn(&Machine) -> Result<Option<Proposals>, BoxError> + Send + Sync>;

/// How a Restate worker wires a machine: with a [`Wiring`] (its settings, options, tools and
/// observer), the services started for a machine living until [`Worker::close`]; a
/// conversation's turns ask the wiring's model through a plain pipeline.
#[derive(Clone)]
pub struct Worker {
    wiring: Wiring,
    proposals: Option<ProposalsFor>,
    services: Arc<Mutex<Vec<Services>>>,
    /// The conversations' pipeline, opened at the first turn (`None`: the model cannot be opened).
    conversation: Arc<OnceLock<Option<Arc<Pipeline>>>>,
}

impl Worker {
    /// Machines wired with `wiring`.
    #[must_use]
    pub fn new(wiring: Wiring) -> Self {
        Worker {
            wiring,
            proposals: None,
            services: Arc::new(Mutex::new(Vec::new())),
            conversation: Arc::new(OnceLock::new()),
        }
    }

    /// Each machine's proposals, made when the machine is wired.
    #[must_use]
    pub fn with_proposals(
        mut self,
        proposals: impl Fn(&Machine) -> Result<Option<Proposals>, BoxError> + Send + Sync + 'static,
    ) -> Self {
        self.proposals = Some(Arc::new(proposals));
        self
    }

    /// Serves the runs a Restate server sends to `listener` until `shutdown` completes, then
    /// closes the services its machines started. With `keys`, only requests a Restate server
    /// signed with one of them are served ([`claij_restate::Worker::with_identity_keys`]).
    ///
    /// # Errors
    ///
    /// [`claij_restate::Worker::serve`]'s, before anything is served.
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        keys: Vec<claij_restate::IdentityKey>,
        shutdown: impl Future<Output = ()>,
    ) -> Result<(), claij_restate::Error> {
        let served = claij_restate::Worker::new(self.clone())
            .with_identity_keys(keys)
            .serve(listener, shutdown)
            .await;
        self.close().await;
        served
    }

    /// Closes the services every machine started.
    pub async fn close(&self) {
        let services: Vec<Services> =
            std::mem::take(&mut *self.services.lock().unwrap_or_else(PoisonError::into_inner));
        for s in &services {
            s.close().await;
        }
    }
}

impl claij_restate::Wiring for Worker {
    fn runner<'a>(&'a self, machine: &'a Requested) -> BoxFuture<'a, Result<Runner, BoxError>> {
        Box::pin(async move {
            let (definition, subs) = match machine {
                Requested::Inline {
                    definition,
                    sub_fsms,
                } => (definition.clone(), sub_fsms.clone()),
                other => {
                    return Err(format!("this worker knows no machine by name: {other:?}").into());
                }
            };
            let machine = Machine::with_subs(Fsm::new(definition)?, subs);
            let proposals = match &self.proposals {
                Some(make) => make(&machine)?,
                None => None,
            };
            // Building starts the machine's services on this (the worker's) runtime.
            let handle = tokio::runtime::Handle::current();
            let built = tokio::task::block_in_place(|| {
                handle.block_on(self.wiring.wire_proposing(&machine, proposals.as_ref()))
            });
            let Wired { runner, services } =
                built.map_err(|e| -> BoxError { ErrorChain(&e).to_string().into() })?;
            self.services
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(services);
            Ok(runner)
        })
    }

    /// A conversation's turns ask the wiring's model through a plain pipeline: no interceptors.
    fn conversation(&self) -> Option<Arc<Pipeline>> {
        self.conversation
            .get_or_init(|| match self.wiring.model(None) {
                Ok(opened) => Some(Arc::new(Pipeline::new(
                    opened.backend,
                    opened.config,
                    Chain::new(),
                ))),
                Err(e) => {
                    tracing::warn!(error = %e, "conversations cannot be served: no model");
                    None
                }
            })
            .clone()
    }
}
