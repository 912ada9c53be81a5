//! The `eval` interceptor.
