//! Tests for `cargo xtask test`'s own decisions.

use super::*;

#[test]
fn ci_is_true_or_one() {
    for value in ["true", "TRUE", "True", "1"] {
        assert!(is_ci(Some(value)), "{value}");
    }
    for value in ["", "0", "false", "yes"] {
        assert!(!is_ci(Some(value)), "{value}");
    }
    assert!(!is_ci(None));
}
