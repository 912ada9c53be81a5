//! Integration tests of claij-schema through its public API.

mod dialect;
mod render;
