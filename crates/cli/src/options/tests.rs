//! The model flags: the help names the local model's token limit.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::ModelOptions;

#[derive(Debug, clap::Parser)]
struct Cli {
    #[command(flatten)]
    model: ModelOptions,
}

/// The local model's requests carry its own limit, which `--max-tokens`'s help names.
#[test]
fn the_help_names_the_local_model_s_token_limit() {
    let limit = claij::options::default_max_tokens("local").unwrap();
    let mut command = <Cli as clap::CommandFactory>::command();
    let help = command.render_long_help().to_string();
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        help.contains(&format!("Default: {limit} for the local model")),
        "{help}"
    );
}
