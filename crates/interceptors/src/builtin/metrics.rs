//! The `metrics` interceptor.
