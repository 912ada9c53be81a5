//! `--elicitation ask|defaults|decline` of `claij mcp list|call`, at the real everything server.

use super::mcp::{config, servers};
use super::{Files, assert_one_line_error, claij};

#[test]
fn defaults_offer_elicitation_and_decline_a_question_whose_required_field_has_no_default() {
    let Some(dir) = servers("elicitation defaults") else {
        return;
    };
    let f = Files::new(&[("mcp.json", &config(&dir))]);
    let cfg = f.path("mcp.json");
    let tool = "everything.trigger-elicitation-request";
    // The server registers its elicitation tool only for a client that offers elicitation; its
    // form requires `name`, which has no default.
    let run = claij(
        &[
            "mcp",
            "call",
            tool,
            "--config",
            &cfg,
            "--elicitation",
            "defaults",
        ],
        "",
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout
            .contains("User declined to provide the requested information"),
        "{}",
        run.stdout
    );
    for declined in [&["--elicitation", "decline"][..], &[]] {
        let mut args = vec!["mcp", "list", "--config", &cfg];
        args.extend_from_slice(declined);
        let run = claij(&args, "");
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(
            !run.stdout.contains("trigger-elicitation-request"),
            "no elicitation offered, no such tool: {}",
            run.stdout
        );
    }
}

#[test]
fn ask_without_a_terminal_is_a_one_line_error() {
    let Some(dir) = servers("elicitation ask") else {
        return;
    };
    let f = Files::new(&[("mcp.json", &config(&dir))]);
    let run = claij(
        &[
            "mcp",
            "list",
            "--config",
            &f.path("mcp.json"),
            "--elicitation",
            "ask",
        ],
        "",
    );
    assert_one_line_error(
        &run,
        2,
        "elicitation `ask` needs a terminal on stdin: use defaults or decline",
    );
}
