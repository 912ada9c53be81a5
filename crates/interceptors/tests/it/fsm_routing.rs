//! Tests of the `fsm_routing` interceptor.
