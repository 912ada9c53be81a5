//! `claij schema audit FILE` and `claij schema rollback FILE EXTENSION_ID`: the schema extensions a
//! conversation file keeps (`--memory FILE --interceptors proposals`).

use std::io::Write as _;
use std::path::Path;

use anyhow::{Context as _, Result, bail};
use claij_schema::{AuditAction, AuditEntry, Registry, SavedRegistry};

use crate::Status;
use crate::ask::session::{Session, SessionLock};
use crate::input;

/// Who the audit log says removed an extension with `claij schema rollback`.
const ROLLED_BACK_BY: &str = "claij schema rollback";

/// Prints the audit log of `file`, oldest first.
pub(super) fn audit(file: &Path, json: bool) -> Result<Status> {
    let session = Session::load(file)?;
    let saved = session.extensions.unwrap_or_else(|| SavedRegistry {
        base: serde_json::Value::Null,
        extensions: Vec::new(),
        audit: claij_schema::AuditLog::default(),
    });
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&saved.audit)?)?;
        return Ok(Status::Ok);
    }
    if saved.audit.is_empty() {
        writeln!(out, "{}: no schema extension was proposed", file.display())?;
        return Ok(Status::Ok);
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

/// Removes `extension_id` from the extensions of `file`, composing and checking the rest onto
/// `schema` (default the base response schema), and writes the file back under its lock.
pub(super) fn rollback(file: &Path, extension_id: &str, schema: Option<&str>) -> Result<Status> {
    let base = match schema {
        Some(path) => {
            let schema = input::read_json(path)?;
            claij_schema::check(&schema).with_context(|| input::name(path).to_owned())?;
            schema
        }
        None => claij_schema::base(),
    };
    let _lock = SessionLock::acquire(file, false)?;
    let session = Session::load(file)?;
    let Some(saved) = &session.extensions else {
        bail!(
            "{}: the conversation has no schema extensions",
            file.display()
        );
    };
    let mut registry = Registry::from_saved(SavedRegistry {
        base,
        extensions: saved.extensions.clone(),
        audit: saved.audit.clone(),
    })
    .with_context(|| {
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
    session.with_extensions(Some(&registry)).save(file)?;
    let remaining = registry.extensions().len();
    writeln!(
        std::io::stderr(),
        "rolled back `{extension_id}`; {remaining} extension(s) still active, composed and checked"
    )?;
    Ok(Status::Ok)
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
