//! Tests: cassette.
