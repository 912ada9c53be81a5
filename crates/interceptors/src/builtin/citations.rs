//! The `citations` interceptor.
