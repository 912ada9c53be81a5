//! Schema-aware coercion.
