//! What the llama-server venv installs.

use super::*;

#[test]
fn the_requirement_pins_the_version_with_the_server_extra() {
    assert_eq!(
        LLAMA_CPP_PYTHON.requirement(),
        "llama-cpp-python[server]==0.3.36"
    );
}
