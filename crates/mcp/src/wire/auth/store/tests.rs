//! The token file: kept between stores, private, replaced whole, removed, never shown.

use serde_json::json;

use super::*;

fn credentials(token: &str) -> StoredCredentials {
    serde_json::from_value(json!({
        "client_id": "client-1",
        "token_response": {"access_token": token, "token_type": "Bearer", "refresh_token": "r-1"},
        "granted_scopes": ["read"],
    }))
    .unwrap()
}

fn access_token(store: &FileStore) -> Option<String> {
    let loaded = store.read().unwrap()?;
    let value = serde_json::to_value(loaded).unwrap();
    Some(
        value["token_response"]["access_token"]
            .as_str()
            .unwrap()
            .to_owned(),
    )
}

#[tokio::test]
async fn tokens_saved_by_one_store_are_loaded_by_another() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tokens").join("server.json");
    let first = FileStore::new(path.clone());
    assert!(first.load().await.unwrap().is_none());
    first.save(credentials("at-1")).await.unwrap();
    first.save(credentials("at-2")).await.unwrap();
    let second = FileStore::new(path.clone());
    assert_eq!(access_token(&second).as_deref(), Some("at-2"));
    let names: Vec<_> = fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["server.json"], "no temporary file is left behind");
    second.clear().await.unwrap();
    assert!(!path.exists());
    second.clear().await.unwrap();
    assert!(first.load().await.unwrap().is_none());
}

#[cfg(unix)]
#[tokio::test]
async fn the_token_file_is_readable_by_the_user_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("server.json");
    let store = FileStore::new(path.clone());
    store.save(credentials("at-1")).await.unwrap();
    let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    store.save(credentials("at-2")).await.unwrap();
    let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

#[tokio::test]
async fn a_damaged_file_is_an_error_that_does_not_quote_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("server.json");
    fs::write(
        &path,
        r#"{"client_id": "c", "token_response": {"access_token": "secret-at""#,
    )
    .unwrap();
    let err = FileStore::new(path).load().await.unwrap_err().to_string();
    assert!(
        err.contains("server.json is not a token file (line 1"),
        "{err}"
    );
    assert!(!err.contains("secret-at"), "{err}");
}

#[tokio::test]
async fn the_refresh_guard_holds_the_lock_until_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::new(dir.path().join("server.json"));
    let guard = store.acquire_refresh_guard().await.unwrap();
    let other = fs::File::open(dir.path().join("server.lock")).unwrap();
    assert!(other.try_lock().is_err(), "a second process would wait");
    drop(guard);
    other.try_lock().unwrap();
}
