//! Tests of the configuration parser.
