//! Random stacks of built-in interceptors.
