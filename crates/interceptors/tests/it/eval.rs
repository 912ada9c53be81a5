//! Tests of the `eval` interceptor.
