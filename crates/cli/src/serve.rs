//! `claij serve restate`: a Restate worker, the endpoint a Restate server calls to run `claij fsm
//! run --on restate` runs, each machine's states wired as `claij fsm run` wires them.

use std::net::SocketAddr;

use anyhow::Result;

use crate::exit::Status;

/// `--bind`, `--register`, `--identity-key`.
type Serve<'a> = (SocketAddr, Option<&'a str>, &'a [String]);

/// `claij serve` subcommands.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum Command {
    /// Serve FSM runs (the `ClaijFsm` workflow) for a Restate server until Ctrl-C: the server
    /// calls this worker at `--bind`; register it once (`--register`, or the admin API's `POST
    /// /deployments`). A run's `llm` states ask the model these flags and the configuration
    /// (`--config`, as every command reads it) give, its `service` states the configuration's
    /// services, as `claij fsm run`.
    Restate {
        /// The address to serve on (the deployment URI the server calls is `http://BIND`).
        #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:9080")]
        bind: SocketAddr,
        /// Register this worker with the Restate admin API at this URL once it listens (again on
        /// every start: a registration of the same URI is replaced).
        #[arg(long, value_name = "ADMIN_URL")]
        register: Option<String>,
        /// Serve only requests the Restate server signed (its `publickeyv1_...` key; repeat for
        /// several; else $CLAIJ_RESTATE_IDENTITY_KEYS, else the configuration's `[restate]
        /// identity_keys`). Required to bind beyond loopback.
        #[arg(long, value_name = "KEY")]
        identity_key: Vec<String>,
        #[command(flatten)]
        options: crate::fsm::Options,
    },
}

impl Command {
    /// `--threads`.
    pub(crate) fn threads(&self) -> Option<std::num::NonZeroUsize> {
        match self {
            Command::Restate { options, .. } => options.threads(),
        }
    }
}

/// Runs a `claij serve` subcommand.
pub(crate) fn run(cmd: &Command, front: &std::sync::Arc<crate::front::Front>) -> Result<Status> {
    match cmd {
        Command::Restate {
            bind,
            register,
            identity_key,
            options,
        } => restate((*bind, register.as_deref(), identity_key), options, front),
    }
}

#[cfg(feature = "restate")]
fn restate(
    serve: Serve<'_>,
    options: &crate::fsm::Options,
    front: &crate::front::Front,
) -> Result<Status> {
    use claij::fsm::restate::{Serving, Worker};
    use std::io::Write as _;

    let claij = front.shared()?;
    let serving = Serving::new(
        serve.0,
        serve.2,
        |name| std::env::var_os(name),
        claij.settings(),
    )?;
    let worker = {
        let options = options.clone();
        let proposing = std::sync::Arc::clone(&claij);
        Worker::new(options.wiring(claij)?).with_proposals(move |machine| {
            options
                .proposals(&proposing, None, machine.votes())
                .map_err(|e| format!("{e:#}").into())
        })
    };
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    serving.run(worker, serve.1, ctrl_c, |line| {
        let _ = writeln!(std::io::stderr(), "{line}");
    })?;
    Ok(Status::Ok)
}

#[cfg(not(feature = "restate"))]
fn restate(_: Serve<'_>, _: &crate::fsm::Options, _: &crate::front::Front) -> Result<Status> {
    anyhow::bail!("serve restate: this claij was built without the `restate` feature")
}
