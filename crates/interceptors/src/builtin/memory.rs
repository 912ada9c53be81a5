//! The `memory` interceptor.
