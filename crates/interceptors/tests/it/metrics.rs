//! Tests of the `metrics` interceptor.
