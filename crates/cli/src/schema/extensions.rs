//! `claij schema audit FILE` and `claij schema rollback FILE EXTENSION_ID`: the schema deltas a
//! conversation file (`claij ask|chat --session FILE`) or a run's journal (`claij fsm run --journal
//! FILE`) keeps: those that shaped its requests (every interceptor's, and approved proposals), each
//! change once, and the extensions proposed with `--interceptors proposals` and how each was decided.

use std::io::Write as _;
use std::path::Path;

use anyhow::{Context as _, Result, bail};
use claij_schema::{AppliedLog, AuditAction, AuditEntry, Registry, SavedRegistry};
use serde_json::json;

use crate::exit::Status;
use crate::input;
use claij::session::Session;

/// Who the audit log says removed an extension with `claij schema rollback`.
const ROLLED_BACK_BY: &str = "claij schema rollback";

/// Whether `file` is a run's journal (its first line a run header) rather than a conversation.
fn is_journal(file: &Path) -> Result<bool> {
    let text = input::read_file_capped(file, input::MAX_INPUT_BYTES, "a conversation or journal")
        .with_context(|| format!("cannot read {}", file.display()))?;
    let first = text.lines().next().unwrap_or_default();
    Ok(serde_json::from_str::<serde_json::Value>(first)
        .is_ok_and(|line| line.get("kind").and_then(|k| k.as_str()) == Some("run")))
}

/// Prints the audit logs of `file`, oldest first: the schema deltas applied to its requests (per
/// `llm` state for a journal), then the proposed extensions (`active:` last, those approved).
pub(super) fn audit(file: &Path, json: bool) -> Result<Status> {
    let (saved, applied) = if is_journal(file)? {
        let applied = claij_fsm::journal::read_applied(file)?
            .into_iter()
            .map(|(state, log)| (Some(state), log))
            .collect();
        (claij_fsm::journal::read_extensions(file)?, applied)
    } else {
        let session = Session::load(file)?;
        let applied: Vec<(Option<String>, AppliedLog)> = if session.applied.is_empty() {
            Vec::new()
        } else {
            vec![(None, session.applied)]
        };
        (session.extensions, applied)
    };
    let saved = saved.unwrap_or_else(|| SavedRegistry {
        base: serde_json::Value::Null,
        extensions: Vec::new(),
        audit: claij_schema::AuditLog::default(),
    });
    let mut out = std::io::stdout().lock();
    if json {
        let applied: Vec<serde_json::Value> = applied
            .iter()
            .map(|(state, log)| {
                json!({"state": state, "active": log.active(), "audit": log.audit()})
            })
            .collect();
        let report = json!({
            "applied": applied,
            "extensions": {"active": saved.extensions, "audit": saved.audit},
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
        return Ok(Status::Ok);
    }
    for (state, log) in &applied {
        write_applied(&mut out, state.as_deref(), log)?;
    }
    if saved.audit.is_empty() {
        writeln!(out, "{}: no schema extension was proposed", file.display())?;
        return Ok(Status::Ok);
    }
    if !applied.is_empty() {
        writeln!(out, "schema extensions proposed:")?;
    }
    for entry in saved.audit.entries() {
        write_entry(&mut out, entry)?;
    }
    let active: Vec<&str> = saved
        .extensions
        .iter()
        .map(|e| e.extension_id.as_str())
        .collect();
    writeln!(
        out,
        "active: {}",
        if active.is_empty() {
            "none".to_owned()
        } else {
            active.join(", ")
        }
    )?;
    Ok(Status::Ok)
}

/// The deltas applied to the requests (of `state`, in a journal): a heading, each change (when,
/// which extension, applied or no longer, by whom, the delta), and those of the last request.
fn write_applied(
    out: &mut impl std::io::Write,
    state: Option<&str>,
    log: &AppliedLog,
) -> Result<()> {
    match state {
        Some(state) => writeln!(
            out,
            "schema deltas applied to the requests of state `{state}`:"
        )?,
        None => writeln!(out, "schema deltas applied to the requests:")?,
    }
    for entry in log.audit().entries() {
        let action = match entry.action {
            AuditAction::Added => "applied",
            AuditAction::Removed => "no longer applied",
            AuditAction::Rejected => "refused by the registry",
            AuditAction::Declined => "declined",
        };
        writeln!(
            out,
            "{}  {}  {action}  (added by {})",
            humantime::format_rfc3339_seconds(entry.at),
            entry.extension_id,
            entry.by
        )?;
        writeln!(out, "    delta: {}", entry.delta)?;
    }
    let last: Vec<&str> = log
        .active()
        .iter()
        .map(|d| d.extension_id.as_str())
        .collect();
    writeln!(
        out,
        "applied to the last request: {}",
        if last.is_empty() {
            "none".to_owned()
        } else {
            last.join(", ")
        }
    )?;
    Ok(())
}

/// Removes `extension_id` from the extensions of `file`, composing and checking the rest onto
/// `schema` (default the base response schema; a journal's own), and writes the file back under
/// its lock (a journal gets a new extensions line).
pub(super) fn rollback(file: &Path, extension_id: &str, schema: Option<&str>) -> Result<Status> {
    if is_journal(file)? {
        let mut journal = claij_fsm::Journal::append_to(file)?;
        let Some(mut saved) = claij_fsm::journal::read_extensions(file)? else {
            bail!("{}: the run has no schema extensions", file.display());
        };
        if let Some(path) = schema {
            saved.base = input::read_json(path)?;
        }
        let registry = remove(file, saved, extension_id)?;
        journal.record_extensions(&registry.to_saved())?;
        return rolled_back(extension_id, &registry);
    }
    let base = match schema {
        Some(path) => {
            let schema = input::read_json(path)?;
            claij_schema::check(&schema).with_context(|| input::name(path).to_owned())?;
            schema
        }
        None => claij_schema::base(),
    };
    let _lock = crate::ask::lock_session(file, false)?;
    let session = Session::load(file)?;
    let Some(saved) = &session.extensions else {
        bail!(
            "{}: the conversation has no schema extensions",
            file.display()
        );
    };
    let saved = SavedRegistry {
        base,
        extensions: saved.extensions.clone(),
        audit: saved.audit.clone(),
    };
    let registry = remove(file, saved, extension_id)?;
    session.with_extensions(Some(&registry)).save(file)?;
    rolled_back(extension_id, &registry)
}

/// Says what is left after a rollback.
fn rolled_back(extension_id: &str, registry: &Registry) -> Result<Status> {
    let remaining = registry.extensions().len();
    writeln!(
        std::io::stderr(),
        "rolled back `{extension_id}`; {remaining} extension(s) still active, composed and checked"
    )?;
    Ok(Status::Ok)
}

/// The registry `saved` without `extension_id`, the rest composed and checked again.
fn remove(file: &Path, saved: SavedRegistry, extension_id: &str) -> Result<Registry> {
    let mut registry = Registry::from_saved(saved).with_context(|| {
        format!(
            "{}: the saved schema extensions do not compose with this schema",
            file.display()
        )
    })?;
    if let Err(e) = registry.remove(extension_id, ROLLED_BACK_BY) {
        let active: Vec<&str> = registry
            .extensions()
            .iter()
            .map(|e| e.extension_id.as_str())
            .collect();
        return Err(e).with_context(|| {
            format!(
                "{}: cannot roll back `{extension_id}` (active: {})",
                file.display(),
                if active.is_empty() {
                    "none".to_owned()
                } else {
                    active.join(", ")
                }
            )
        });
    }
    Ok(registry)
}

/// One audit entry: when, what, which extension, by whom; then the reason, the ballots, the delta.
fn write_entry(out: &mut impl std::io::Write, entry: &AuditEntry) -> Result<()> {
    let action = match entry.action {
        AuditAction::Added => "activated",
        AuditAction::Rejected => "refused by the registry",
        AuditAction::Removed => "rolled back",
        AuditAction::Declined => "declined",
    };
    let by = match entry.action {
        AuditAction::Removed => "removed by",
        _ => "proposed by",
    };
    writeln!(
        out,
        "{}  {}  {action}  ({by} {})",
        humantime::format_rfc3339_seconds(entry.at),
        entry.extension_id,
        entry.by
    )?;
    if let Some(reason) = &entry.reason {
        writeln!(out, "    reason: {reason}")?;
    }
    for ballot in &entry.ballots {
        let verb = if ballot.approve {
            "approves"
        } else {
            "rejects"
        };
        writeln!(out, "    {} {verb}: {}", ballot.voter, ballot.reason)?;
    }
    writeln!(out, "    delta: {}", entry.delta)?;
    Ok(())
}
