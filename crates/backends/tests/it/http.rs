//! Tests: http.
