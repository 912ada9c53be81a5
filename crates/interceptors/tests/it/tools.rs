//! Tests of the `tools` interceptor.
