//! `claij fsm run --on restate` and `claij fsm provide --on restate`: a run as a durable Restate
//! workflow, started through the ingress and followed there (the worker, `claij serve restate`,
//! wires machines with [`claij::fsm::restate::Worker`]).

use std::io::Write as _;

use anyhow::{Context as _, Result, anyhow};
use claij::fsm::restate::{DEFAULT_INGRESS, new_run_id};
use claij_restate::{Client, Ended, FailureKind, Followed, Machine, RunRequest};
use serde_json::{Value, json};

use super::run::{self, Options};
use crate::exit::Status;

/// `claij fsm run --on restate`: starts run `id` of `fsm` (with `subs`) from `input`, prints each
/// transition as it is recorded, answers `human` states from stdin as the embedded run does, and
/// ends as it does (the trail on stdout; exit 0 finished or waiting, 1 invalid or interrupted).
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
    let mut request = RunRequest::new(
        Machine::inline(machine.definition().clone(), machine.subs().to_vec()),
        input,
    );
    let limits = options.to_library();
    request.options.max_transitions = Some(limits.max_transitions);
    request.options.max_repeated_calls = Some(limits.max_repeated_calls);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let started = runtime.block_on(client.start(&id, &request))?;
    if started.already {
        writeln!(
            std::io::stderr(),
            "run {id} was already started on Restate: following it"
        )?;
    } else {
        writeln!(std::io::stderr(), "run {id} started on Restate")?;
    }
    let mut seen = 0;
    loop {
        let followed = runtime.block_on(follow(&client, &id, &mut seen))?;
        let status = match followed {
            Followed::Ended(result) => return ended(&result, options),
            Followed::Waiting(status) => status,
            other => return Err(anyhow!("run {id}: unexpected {other:?}")),
        };
        let state = status.waiting_in.clone().unwrap_or(status.state.clone());
        let Some(event) = run::read_input(&state)? else {
            let outcome = json!({"waiting": state});
            run::print_end(&id, status.status, &status.trail, &outcome, options.json())?;
            writeln!(
                std::io::stderr(),
                "waiting for input in state `{state}`; give it with `claij fsm provide --on restate {id} EVENT`"
            )?;
            return Ok(Status::Ok);
        };
        match runtime.block_on(client.provide(&id, &event)) {
            Ok(_) => {}
            Err(claij_restate::Error::Status {
                status: 400,
                message,
                ..
            }) => {
                writeln!(
                    std::io::stderr(),
                    "error: {}",
                    crate::exit::one_line(&message)
                )?;
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// Follows run `id` until it ends or waits, printing each new transition; Ctrl-C interrupts it
/// (the trail records it) and goes on following to its end.
async fn follow(client: &Client, id: &str, seen: &mut usize) -> Result<Followed> {
    let printed = *seen;
    let mut index = 0;
    let followed = {
        let follow = client.follow(id, |entry| {
            index += 1;
            if index > printed {
                let _ = crate::transitions::print_transition(entry);
            }
        });
        tokio::pin!(follow);
        tokio::select! {
            followed = &mut follow => match followed {
                Err(error @ claij_restate::Error::Timeout { .. }) => {
                    return Err(anyhow!("{error}: `--follow-timeout` sets how long"));
                }
                followed => followed?,
            },
            _ = tokio::signal::ctrl_c() => {
                client.interrupt(id).await?;
                follow.await?
            }
        }
    };
    *seen = printed.max(index);
    Ok(followed)
}

/// The end of a run on Restate, printed as an embedded run's.
fn ended(result: &claij_restate::RunResult, options: &Options) -> Result<Status> {
    match &result.ended {
        Ended::Finished { state, event } => {
            let outcome = json!({"finished": state, "event": event});
            run::print_end(
                &result.run_id,
                claij_fsm::Status::Finished,
                &result.trail,
                &outcome,
                options.json(),
            )?;
            Ok(Status::Ok)
        }
        Ended::Interrupted { from } => {
            let outcome = json!({"interrupted": from});
            run::print_end(
                &result.run_id,
                claij_fsm::Status::Interrupted,
                &result.trail,
                &outcome,
                options.json(),
            )?;
            writeln!(std::io::stderr(), "interrupted in state `{from}`")?;
            Ok(Status::Invalid)
        }
        Ended::Failed(failure) => {
            let outcome = json!({"failed": failure.state});
            run::print_end(
                &result.run_id,
                claij_fsm::Status::Running,
                &result.trail,
                &outcome,
                options.json(),
            )?;
            // A run stopped at a limit ended on Restate: it does not go on, but starts again.
            let limit = failure
                .limit
                .as_deref()
                .and_then(run::flag_of)
                .map_or_else(String::new, |flag| {
                    format!("; {flag} sets the limit for a run started again (a new --id)")
                });
            match failure.kind {
                FailureKind::Invalid => {
                    writeln!(
                        std::io::stderr(),
                        "error: {}{limit}",
                        crate::exit::one_line(&failure.error)
                    )?;
                    Ok(Status::Invalid)
                }
                _ => Err(anyhow!("{}", failure.error)),
            }
        }
        other => Err(anyhow!("run {}: unexpected end {other:?}", result.run_id)),
    }
}

/// `claij fsm provide --on restate RUN_ID EVENT`.
pub(super) fn provide(run_id: &str, event: &str, ingress: Option<&str>) -> Result<Status> {
    let event: Value = serde_json::from_str(event).context("EVENT is not JSON")?;
    let client = Client::new(ingress.unwrap_or(DEFAULT_INGRESS))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    match runtime.block_on(client.provide(run_id, &event)) {
        Ok(status) => {
            writeln!(
                std::io::stderr(),
                "run {run_id}: input given to state `{}`",
                status.waiting_in.unwrap_or(status.state)
            )?;
            Ok(Status::Ok)
        }
        Err(claij_restate::Error::Status {
            status: 400,
            message,
            ..
        }) => {
            writeln!(
                std::io::stderr(),
                "error: {}",
                crate::exit::one_line(&message)
            )?;
            Ok(Status::Invalid)
        }
        Err(e) => Err(e.into()),
    }
}
