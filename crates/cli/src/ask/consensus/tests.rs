//! The consensus flags: pointers checked.

use super::pointer;

#[test]
fn pointers_start_with_a_slash() {
    assert_eq!(pointer("/answer"), Ok("/answer".to_owned()));
    assert_eq!(pointer(""), Ok(String::new()));
    assert_eq!(
        pointer("answer"),
        Err("a JSON pointer starts with `/`: did you mean /answer?".to_owned())
    );
}
