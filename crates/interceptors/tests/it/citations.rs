//! Tests of the `citations` interceptor.
