//! The `fsm_routing` interceptor.
