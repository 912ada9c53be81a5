//! The server's command line, and a missing install under CI.

use super::*;

#[test]
fn the_server_runs_from_the_venv_on_loopback_with_its_own_data() {
    let command = command(Path::new("/c"), Path::new("/tmp/it's"), 4321);
    assert_eq!(command.get_program(), "/c/venv/bin/python");
    let args: Vec<_> = command.get_args().map(|a| a.to_string_lossy()).collect();
    assert_eq!(args[..2], ["-I", "-c"]);
    assert_eq!(
        args[2],
        "import chromadb_rust_bindings; chromadb_rust_bindings.cli(['chroma', 'run', '--path', \
         '/tmp/it\\'s', '--host', '127.0.0.1', '--port', '4321'])"
    );
}

#[test]
fn a_missing_install_fails_under_ci_and_names_the_command() {
    let missing = std::env::temp_dir().join("claij-no-chroma-here");
    let env = |ci: &'static str| {
        let missing = missing.clone();
        move |name: &str| match name {
            "CLAIJ_CHROMA" => Some(missing.clone().into_os_string()),
            "CI" => Some(ci.into()),
            _ => None,
        }
    };
    assert_eq!(
        crate::server::venv_install_or_skip_with(
            "t",
            VAR,
            "chroma",
            "cargo xtask chroma",
            env("false")
        ),
        None
    );
    let failed = std::panic::catch_unwind(|| {
        crate::server::venv_install_or_skip_with(
            "t",
            VAR,
            "chroma",
            "cargo xtask chroma",
            env("true"),
        )
    });
    let message = failed.unwrap_err();
    let message = message.downcast_ref::<String>().unwrap();
    assert!(message.contains("run `cargo xtask chroma`"), "{message}");
}
