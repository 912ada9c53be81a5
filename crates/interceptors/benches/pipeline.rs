//! Pipeline CPU per call.
fn main() {}
