//! The `claij` binary.
fn main() {}
