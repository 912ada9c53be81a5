//! The client's URL handling.

use super::{base, segment};

#[test]
fn child_run_ids_are_one_path_segment() {
    assert_eq!(segment("run-1/review/2"), "run-1%2Freview%2F2");
    assert_eq!(segment("a b?c#d"), "a%20b%3Fc%23d");
    assert_eq!(segment("plain-id_1.x~"), "plain-id_1.x~");
}

#[test]
fn base_urls_are_checked_and_never_echo_credentials() {
    assert_eq!(
        base("http://127.0.0.1:8080/").unwrap(),
        "http://127.0.0.1:8080"
    );
    assert!(base("127.0.0.1:8080").is_err());
    let error = base("http://user:secret@host:8080")
        .unwrap_err()
        .to_string();
    assert!(!error.contains("secret"), "{error}");
}
