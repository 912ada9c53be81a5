//! `claij fsm run --on restate` and `claij fsm provide --on restate`: a run as a durable Restate
//! workflow, started through the ingress and followed there (the worker, `claij serve restate`,
//! wires machines with [`claij::fsm::restate::Worker`]).

use std::io::Write as _;

use anyhow::{Context as _, Result, anyhow};
use claij::fsm::restate::durable::{Client, Ended, Error, FailureKind, Followed, RunResult};
use claij::fsm::restate::{DEFAULT_INGRESS, Provided, drive, new_run_id};
use claij::fsm::restate::{report, request, waiting};
use serde_json::Value;

use super::run::{self, Options};
use crate::exit::{Status, one_line};

/// `claij fsm run --on restate`: starts run `id` of `machine` from `input`, prints each transition
/// as it is recorded, answers `human` states from stdin as the embedded run does, and ends as it
/// does (the trail on stdout; exit 0 finished or waiting, 1 invalid or interrupted).
pub(super) fn run(
    machine: &claij::fsm::Machine,
    input: &str,
    id: Option<&str>,
    ingress: Option<&str>,
    follow_timeout: std::time::Duration,
    options: &Options,
) -> Result<Status> {
    let input: Value = serde_json::from_str(input).context("--input is not JSON")?;
    let client = Client::new(ingress.unwrap_or(DEFAULT_INGRESS))?;
    let limits = client.limits().with_run_timeout(follow_timeout);
    let client = client.with_limits(limits);
    let id = id.map_or_else(new_run_id, str::to_owned);
    let request = request(machine, input, &options.to_library());
    let runtime = run::runtime()?;
    let started = runtime.block_on(client.start(&id, &request))?;
    let how = if started.already {
        "was already started on Restate: following it"
    } else {
        "started on Restate"
    };
    writeln!(std::io::stderr(), "run {id} {how}")?;
    let print = |entry: &_| {
        let _ = crate::transitions::print_transition(entry);
    };
    // Ctrl-C interrupts the run (the trail records it); it is followed on to its end.
    let ctrl_c = || async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let followed = runtime.block_on(drive(&client, &id, &mut run::Stdin, print, ctrl_c));
    match followed {
        Ok(Followed::Ended(result)) => ended(&result, options),
        Ok(Followed::Waiting(status)) => {
            let (report, state) = waiting(&status);
            run::print_end(&report, options.json)?;
            writeln!(
                std::io::stderr(),
                "waiting for input in state `{state}`; give it with `claij fsm provide --on restate {id} EVENT`"
            )?;
            Ok(Status::Ok)
        }
        Ok(other) => Err(anyhow!("run {id}: unexpected {other:?}")),
        Err(e) => match e.downcast_ref::<Error>() {
            Some(Error::Timeout { .. }) => Err(anyhow!("{e}: `--follow-timeout` sets how long")),
            _ => Err(e),
        },
    }
}

/// The end of a run on Restate, printed as an embedded run's.
fn ended(result: &RunResult, options: &Options) -> Result<Status> {
    let Some(report) = report(result) else {
        return Err(anyhow!(
            "run {}: unexpected end {:?}",
            result.run_id,
            result.ended
        ));
    };
    run::print_end(&report, options.json)?;
    match &result.ended {
        Ended::Interrupted { from } => {
            writeln!(std::io::stderr(), "interrupted in state `{from}`")?;
            Ok(Status::Invalid)
        }
        Ended::Failed(failure) if matches!(failure.kind, FailureKind::Invalid) => {
            // A run stopped at a limit ended on Restate: it does not go on, but starts again.
            let limit = failure
                .limit
                .as_deref()
                .and_then(claij::fsm::limit_flag)
                .map_or_else(String::new, |flag| {
                    format!("; {flag} sets the limit for a run started again (a new --id)")
                });
            writeln!(
                std::io::stderr(),
                "error: {}{limit}",
                one_line(&failure.error)
            )?;
            Ok(Status::Invalid)
        }
        Ended::Failed(failure) => Err(anyhow!("{}", failure.error)),
        _ => Ok(Status::Ok),
    }
}

/// `claij fsm provide --on restate RUN_ID EVENT`.
pub(super) fn provide(run_id: &str, event: &str, ingress: Option<&str>) -> Result<Status> {
    let event: Value = serde_json::from_str(event).context("EVENT is not JSON")?;
    let client = Client::new(ingress.unwrap_or(DEFAULT_INGRESS))?;
    match run::runtime()?.block_on(claij::fsm::restate::provide(&client, run_id, &event))? {
        Provided::Taken(state) => {
            writeln!(
                std::io::stderr(),
                "run {run_id}: input given to state `{state}`"
            )?;
            Ok(Status::Ok)
        }
        Provided::Refused(why) => {
            writeln!(std::io::stderr(), "error: {}", one_line(&why))?;
            Ok(Status::Invalid)
        }
    }
}
