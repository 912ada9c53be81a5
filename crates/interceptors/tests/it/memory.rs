//! Tests of the `memory` interceptor.
