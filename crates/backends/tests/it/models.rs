//! Tests: models.
