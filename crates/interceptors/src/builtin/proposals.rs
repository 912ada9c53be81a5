//! The `proposals` interceptor.
