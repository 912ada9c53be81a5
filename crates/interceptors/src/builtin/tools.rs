//! The `tools` interceptor.
