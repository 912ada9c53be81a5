//! Tests of the pipeline: retries, hooks, typed answers, fan-out.
