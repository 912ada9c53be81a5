//! Tests of the `proposals` interceptor.
