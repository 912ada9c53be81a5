//! Unit tests of the private helpers: quoting, wrapping, and running a Graphviz that is not there.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

#[track_caller]
fn check_quote(text: &str, dot: &str, mermaid: &str) {
    assert_eq!(dot_quote(text), dot, "dot");
    assert_eq!(mermaid_quote(text), mermaid, "mermaid");
}

#[test]
fn quoting() {
    check_quote("plain", r#""plain""#, r#""plain""#);
    check_quote(
        r#"say "hi""#,
        r#""say \"hi\"""#,
        r##""say #quot;hi#quot;""##,
    );
    check_quote("two\r\nlines", r#""two\nlines""#, r#""two<br/>lines""#);
    check_quote(r"ends with \", r#""ends with \\""#, r#""ends with \""#);
    check_quote(r"\N \l", r#""\\N \\l""#, r#""\N \l""#);
    check_quote(
        "<b>#1 & co</b>",
        r#""<b>#1 & co</b>""#,
        r##""#lt;b#gt;#35;1 #amp; co#lt;/b#gt;""##,
    );
}

#[track_caller]
fn check_wrap(text: &str, width: usize, expected: &[&str]) {
    assert_eq!(wrap(text, width), expected);
}

#[test]
fn wrapping() {
    check_wrap("short", 10, &["short"]);
    check_wrap(
        "ask the first reviewer",
        10,
        &["ask the", "first", "reviewer"],
    );
    check_wrap(
        "a verylongwordindeed b",
        5,
        &["a", "verylongwordindeed", "b"],
    );
    check_wrap("kept\nbreaks", 40, &["kept", "breaks"]);
}

#[test]
fn a_missing_graphviz_is_a_typed_error() {
    let err = run_graphviz("claij-no-such-graphviz-binary", "digraph {}").unwrap_err();
    assert!(matches!(err, RenderError::DotNotInstalled), "{err:?}");
    let message = err.to_string();
    assert!(message.contains("`dot` is not installed"), "{message}");
    assert!(
        message.contains("claij fsm render FILE --format dot"),
        "{message}"
    );
    assert!(!message.contains('\n'), "{message}");
}
