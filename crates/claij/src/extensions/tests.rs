//! A conversation's extensions: audited, rolled back, and the errors that name the file.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use claij_schema::{Registry, SchemaDelta};
use serde_json::json;

use super::{Audit, Error, Kind, rollback_conversation};
use crate::session::Session;

/// A conversation file holding one extension, `confidence-v1`.
fn conversation(dir: &std::path::Path) -> std::path::PathBuf {
    let file = dir.join("conversation.json");
    let mut registry = Registry::new(claij_schema::base()).unwrap();
    let delta = json!({"properties": {"confidence": {"type": "number"}}});
    registry
        .add(SchemaDelta::new("confidence-v1", "a test", delta))
        .unwrap();
    let session = Session::load(&file).unwrap();
    session
        .with_extensions(Some(&registry))
        .save(&file)
        .unwrap();
    file
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("claij-extensions-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_rolled_back_extension_is_audited_and_no_longer_active() {
    let dir = temp_dir("rollback");
    let file = conversation(&dir);
    assert_eq!(Kind::of(&file).unwrap(), Kind::Conversation);
    let before = Audit::read(&file).unwrap().to_string();
    assert!(before.ends_with("active: confidence-v1"), "{before}");
    let left = rollback_conversation(&file, "confidence-v1", claij_schema::base()).unwrap();
    assert!(left.extensions().is_empty());
    let after = Audit::read(&file).unwrap();
    let text = after.to_string();
    assert!(
        text.contains("confidence-v1  rolled back  (removed by claij schema rollback)"),
        "{text}"
    );
    assert!(text.ends_with("active: none"), "{text}");
    assert_eq!(after.to_json()["extensions"]["active"], json!([]));
    // Once more: it is no longer there, and the error says what is.
    let Err(e @ Error::Rollback { .. }) =
        rollback_conversation(&file, "confidence-v1", claij_schema::base())
    else {
        panic!("a second rollback of the same extension succeeded");
    };
    assert!(
        e.to_string()
            .ends_with("cannot roll back `confidence-v1` (active: none)"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_conversation_without_extensions_says_so() {
    let dir = temp_dir("none");
    let file = dir.join("empty.json");
    Session::load(&file).unwrap().save(&file).unwrap();
    let audit = Audit::read(&file).unwrap().to_string();
    assert_eq!(
        audit,
        format!("{}: no schema extension was proposed", file.display())
    );
    let Err(e) = rollback_conversation(&file, "x", claij_schema::base()) else {
        panic!("a rollback without extensions succeeded");
    };
    assert_eq!(
        e.to_string(),
        format!(
            "{}: the conversation has no schema extensions",
            file.display()
        )
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A delta file: a whole document as it is, a bare partial schema named after the file, anything
/// else refused saying why.
#[test]
fn a_delta_file_is_a_document_or_a_partial_schema_named_after_it() {
    use std::path::Path;

    use super::delta_of_file;
    let bare = json!({"properties": {"city": {"type": "string"}}});
    let delta = delta_of_file(bare.clone(), Path::new("dir/city.delta.json"), "cli").unwrap();
    let said = (delta.extension_id.as_str(), delta.added_by.as_str());
    assert_eq!((said, &delta.delta), (("city", "cli"), &bare));
    let document = serde_json::to_value(SchemaDelta::new("geo", "model", bare)).unwrap();
    let delta = delta_of_file(document, Path::new("x.json"), "cli").unwrap();
    assert_eq!(
        (delta.extension_id.as_str(), delta.added_by.as_str()),
        ("geo", "model")
    );
    let err = delta_of_file(json!([1]), Path::new("x.json"), "cli").unwrap_err();
    assert_eq!(err, "a schema delta must be a JSON object");
    let broken = json!({"extension_id": 3, "delta": {}});
    let err = delta_of_file(broken, Path::new("x.json"), "cli").unwrap_err();
    assert!(err.starts_with("invalid schema delta document: "), "{err}");
}
