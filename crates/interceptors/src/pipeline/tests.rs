//! Tests of the pipeline.
