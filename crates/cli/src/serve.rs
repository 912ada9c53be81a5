//! `claij serve restate`: a Restate worker, the endpoint a Restate server calls to run `claij fsm
//! run --on restate` runs, each machine's states wired as `claij fsm run` wires them.

use std::net::SocketAddr;

use anyhow::Result;

use crate::exit::Status;

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
            options,
            ..
        } => restate(*bind, register.as_deref(), options, front),
    }
}

#[cfg(feature = "restate")]
fn restate(
    bind: SocketAddr,
    register: Option<&str>,
    options: &crate::fsm::Options,
    front: &crate::front::Front,
) -> Result<Status> {
    use std::io::Write as _;

    use anyhow::Context as _;

    use claij::fsm::restate::Worker;

    // Multi-threaded: a machine's services start inside a handler (`block_in_place`).
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let claij = front.shared()?;
    let worker = {
        let options = options.clone();
        let proposing = std::sync::Arc::clone(&claij);
        Worker::new(options.wiring(claij)?).with_proposals(move |machine| {
            options
                .proposals(&proposing, None, machine.votes())
                .map_err(|e| format!("{e:#}").into())
        })
    };
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(bind)
            .await
            .with_context(|| format!("cannot listen on {bind}"))?;
        let address = listener.local_addr().unwrap_or(bind);
        writeln!(
            std::io::stderr(),
            "restate worker listening on http://{address}"
        )?;
        let served = tokio::spawn(worker.serve(listener, async {
            let _ = tokio::signal::ctrl_c().await;
        }));
        if let Some(admin) = register {
            let uri = format!("http://{address}");
            claij::fsm::restate::register(admin, &uri)
                .await
                .with_context(|| format!("cannot register {uri} with {admin}"))?;
            writeln!(std::io::stderr(), "registered {uri} with {admin}")?;
        }
        served.await.context("the worker stopped")?;
        anyhow::Ok(())
    })?;
    Ok(Status::Ok)
}

#[cfg(not(feature = "restate"))]
fn restate(
    _: SocketAddr,
    _: Option<&str>,
    _: &crate::fsm::Options,
    _: &crate::front::Front,
) -> Result<Status> {
    anyhow::bail!("serve restate: this claij was built without the `restate` feature")
}
