//! Every flag of every command, from clap's tree, in each mode: classified, and refused where its
//! mode does not honour it or its need is not met.

use clap::CommandFactory as _;

use super::{Scope, check, scope};

/// Every command with flags of its own (or none below it), as `(path, command)`.
fn commands() -> Vec<(String, clap::Command)> {
    let mut root = crate::Cli::command();
    root.build();
    let mut out = Vec::new();
    walk(&root, "", &mut out);
    out
}

fn walk(cmd: &clap::Command, path: &str, out: &mut Vec<(String, clap::Command)>) {
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let path = if path.is_empty() {
            sub.get_name().to_owned()
        } else {
            format!("{path} {}", sub.get_name())
        };
        if own_flags(sub).next().is_some() || !sub.has_subcommands() {
            out.push((path.clone(), sub.clone()));
        }
        walk(sub, &path, out);
    }
}

/// The flags of a command, its every-command flags and `--help` aside.
fn own_flags(cmd: &clap::Command) -> impl Iterator<Item = &clap::Arg> {
    cmd.get_arguments().filter(|a| {
        !a.is_global_set() && !a.is_positional() && a.get_long().is_some_and(|l| l != "help")
    })
}

/// A compatibility matrix file `--matrix` accepts.
fn matrix() -> std::path::PathBuf {
    static FILE: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    FILE.get_or_init(|| {
        let path = std::env::temp_dir().join(format!("claij-flags-{}.json", std::process::id()));
        std::fs::write(&path, r#"{"records": []}"#).unwrap();
        path
    })
    .clone()
}

/// `claij PATH` with its required arguments, `extra` after them.
fn argv(path: &str, cmd: &clap::Command, extra: &[String]) -> Vec<String> {
    let mut argv = vec!["claij".to_owned()];
    argv.extend(path.split(' ').map(str::to_owned));
    for arg in cmd.get_arguments().filter(|a| a.is_required_set()) {
        if arg.is_positional() {
            argv.push("a.b".to_owned());
        } else if let Some(long) = arg.get_long()
            && !extra.iter().any(|e| e == &format!("--{long}"))
        {
            argv.extend([format!("--{long}"), "{}".to_owned()]);
        }
    }
    argv.extend(extra.iter().cloned());
    argv
}

/// The flag `long` with a value it parses, as arguments, and the flags it requires beside it
/// (`--format` of `models prices` requires `--import`) with theirs.
fn with_value(path: &str, cmd: &clap::Command, base: &[String], long: &str) -> Vec<String> {
    let mut args = value_of(path, cmd, base, long);
    for _ in 0..3 {
        let mut extra = base.to_vec();
        extra.extend(args.iter().cloned());
        let Err(e) = cli().try_get_matches_from(argv(path, cmd, &extra)) else {
            return args;
        };
        let missing = e
            .get(clap::error::ContextKind::InvalidArg)
            .and_then(|v| match v {
                clap::error::ContextValue::Strings(s) => s.first().cloned(),
                _ => None,
            });
        let Some(missing) =
            missing.filter(|_| e.kind() == clap::error::ErrorKind::MissingRequiredArgument)
        else {
            break;
        };
        let other = missing
            .trim_start_matches("--")
            .split(' ')
            .next()
            .unwrap_or_default()
            .to_owned();
        args.extend(value_of(path, cmd, &extra, &other));
    }
    args
}

/// The flag `long` with a value it parses (with `base` and the flags it requires, if any).
fn value_of(path: &str, cmd: &clap::Command, base: &[String], long: &str) -> Vec<String> {
    let arg = cmd
        .get_arguments()
        .find(|a| a.get_long() == Some(long))
        .unwrap();
    let flag = format!("--{long}");
    if !arg.get_action().takes_values() {
        return vec![flag];
    }
    let mut candidates: Vec<String> = arg
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| v.get_name().to_owned())
        .collect();
    candidates.extend(
        [
            "1",
            "1024",
            "a.b",
            "/answer",
            "x",
            "127.0.0.1:0",
            "http://127.0.0.1:1",
            "info",
            "time",
            "name=value",
            "auto",
        ]
        .map(str::to_owned),
    );
    candidates.push(matrix().display().to_string());
    for value in candidates {
        let given = if arg.is_require_equals_set() {
            vec![format!("{flag}={value}")]
        } else {
            vec![flag.clone(), value]
        };
        let mut extra = base.to_vec();
        extra.extend(given.iter().cloned());
        let parsed = cli().try_get_matches_from(argv(path, cmd, &extra));
        let missing = parsed
            .as_ref()
            .is_err_and(|e| e.kind() == clap::error::ErrorKind::MissingRequiredArgument);
        if parsed.is_ok() || missing {
            return given;
        }
    }
    panic!("claij {path} {base:?}: no sample value parses for {flag}");
}

fn cli() -> clap::Command {
    crate::Cli::command()
}

/// What [`check`] says of `claij PATH EXTRA...` (which must parse).
fn checked(path: &str, cmd: &clap::Command, extra: &[String]) -> Result<(), String> {
    let mut root = cli();
    let argv = argv(path, cmd, extra);
    let matches = root
        .try_get_matches_from_mut(&argv)
        .unwrap_or_else(|e| panic!("{argv:?} does not parse: {e}"));
    check(&root, &matches)
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| (*s).to_owned()).collect()
}

/// Each command has a scope, each of its flags is honoured in one of its modes at least, or refused
/// with a reason of its own in each (a flag no scope names fails here), and the scopes name no flag
/// the commands lack.
#[test]
fn every_flag_of_every_command_is_classified() {
    let commands = commands();
    let mut unclassified = Vec::new();
    for (path, cmd) in &commands {
        let Some(scope) = scope(path) else {
            let flags: Vec<&str> = own_flags(cmd).filter_map(clap::Arg::get_long).collect();
            unclassified.push(format!("claij {path}: no scope (flags {flags:?})"));
            continue;
        };
        for arg in own_flags(cmd) {
            let long = arg.get_long().unwrap();
            // Honoured in a mode, or refused with a reason of its own in every one.
            let honoured = scope.modes.iter().any(|m| m.honours(long));
            let refused = scope
                .modes
                .iter()
                .all(|m| m.refusals.iter().any(|(flag, _)| *flag == long));
            if !honoured && !refused {
                unclassified.push(format!("claij {path} --{long}"));
            }
        }
        let known: Vec<&str> = own_flags(cmd).filter_map(clap::Arg::get_long).collect();
        for mode in scope.modes {
            for long in mode.honours.iter().flat_map(|g| g.iter()) {
                assert!(known.contains(long), "claij {path}: no flag --{long}");
            }
        }
    }
    assert!(unclassified.is_empty(), "{unclassified:#?}");
    for scope in super::SCOPES {
        assert!(
            commands.iter().any(|(path, _)| path == scope.command),
            "no command `{}`",
            scope.command
        );
    }
}

/// In each mode of each command, each flag given: accepted where the mode honours it and its need
/// is met (and refused, naming it, where the need is not), refused naming it where the mode does
/// not honour it.
#[test]
fn each_flag_in_each_mode_is_honoured_or_refused_naming_it() {
    let mut checked_cases = 0;
    // Each need refused somewhere (not met by every mode's example).
    let mut refused = std::collections::BTreeSet::new();
    for (path, cmd) in commands() {
        let scope: &Scope = scope(&path).unwrap();
        for mode in scope.modes {
            let base = strings(mode.example);
            // The example puts the command in its mode.
            let mut root = cli();
            let matches = root
                .try_get_matches_from_mut(argv(&path, &cmd, &base))
                .unwrap();
            let mut m = &matches;
            while let Some((_, sub)) = m.subcommand() {
                m = sub;
            }
            assert_eq!(scope.mode(m).name, mode.name, "claij {path} {base:?}");
            assert_eq!(checked(&path, &cmd, &base), Ok(()), "claij {path} {base:?}");
            for arg in own_flags(&cmd) {
                let long = arg.get_long().unwrap();
                if base.iter().any(|a| a == &format!("--{long}")) {
                    assert!(
                        mode.honours(long),
                        "claij {path}: mode {} --{long}",
                        mode.name
                    );
                    continue;
                }
                let mut extra = base.clone();
                extra.extend(with_value(&path, &cmd, &base, long));
                // A flag that puts the command in another mode is that mode's case.
                let mut root = cli();
                let matches = root
                    .try_get_matches_from_mut(argv(&path, &cmd, &extra))
                    .unwrap();
                let mut m = &matches;
                while let Some((_, sub)) = m.subcommand() {
                    m = sub;
                }
                if scope.mode(m).name != mode.name {
                    // Still refused, naming it, when what it needs is missing.
                    if let Some(need) = scope.needs.iter().find(|n| n.flag == long)
                        && !(need.met)(m)
                    {
                        let case = format!("claij {path} {extra:?}");
                        let refusal = checked(&path, &cmd, &extra).expect_err(&case);
                        assert!(refusal.contains(&format!("--{long}")), "{case}: {refusal}");
                        refused.insert(format!("{path} --{long}"));
                    }
                    continue;
                }
                checked_cases += 1;
                let result = checked(&path, &cmd, &extra);
                let need = scope.needs.iter().find(|n| n.flag == long);
                let case = format!("claij {path} {extra:?}");
                match (mode.honours(long), need) {
                    (true, None) => assert_eq!(result, Ok(()), "{case}"),
                    (true, Some(need)) => {
                        // Unmet: the flag alone, or beside what breaks its need (unless the
                        // mode's example gives one of those flags already).
                        let unmet = strings(need.unmet);
                        let clash = unmet
                            .iter()
                            .any(|u| u.starts_with("--") && base.contains(u));
                        if !clash {
                            let mut unmet_case = extra.clone();
                            unmet_case.extend(unmet);
                            let case = format!("claij {path} {unmet_case:?}");
                            // The mode's example may meet the need itself (an agent run's tools).
                            let mut root = cli();
                            let matches = root
                                .try_get_matches_from_mut(argv(&path, &cmd, &unmet_case))
                                .unwrap();
                            let mut m = &matches;
                            while let Some((_, sub)) = m.subcommand() {
                                m = sub;
                            }
                            if (need.met)(m) {
                                assert_eq!(checked(&path, &cmd, &unmet_case), Ok(()), "{case}");
                            } else {
                                let refusal = checked(&path, &cmd, &unmet_case).expect_err(&case);
                                assert!(
                                    refusal.contains(&format!("--{long}")),
                                    "{case}: {refusal}"
                                );
                                assert!(!refusal.contains('\n'), "{case}: {refusal}");
                                refused.insert(format!("{path} --{long}"));
                            }
                        }
                        let mut met = extra.clone();
                        met.extend(strings(need.example));
                        assert_eq!(checked(&path, &cmd, &met), Ok(()), "claij {path} {met:?}");
                    }
                    (false, _) => {
                        let refusal = result.expect_err(&case);
                        // The flag, or one it requires beside it, refused first.
                        let aliases = arg.get_visible_aliases().unwrap_or_default();
                        let named = extra[base.len()..]
                            .iter()
                            .filter(|a| a.starts_with("--"))
                            .any(|a| refusal.contains(a.split('=').next().unwrap_or(a)))
                            || aliases.iter().any(|a| refusal.contains(&format!("--{a}")));
                        assert!(named, "{case}: {refusal}");
                        assert!(!refusal.contains('\n'), "{case}: {refusal}");
                    }
                }
            }
        }
    }
    assert!(checked_cases > 200, "{checked_cases} cases");
    for scope in super::SCOPES {
        for need in scope.needs {
            let case = format!("{} --{}", scope.command, need.flag);
            assert!(refused.contains(&case), "never refused: claij {case}");
        }
    }
}

/// The refusals the issue named, as one line each.
#[test]
fn consensus_refuses_stream_and_the_tool_results_budget() {
    let (path, cmd) = commands().into_iter().find(|(p, _)| p == "ask").unwrap();
    let consensus = strings(&["--consensus", "majority", "--llm", "a,b"]);
    for flag in [["--stream", ""], ["--tool-results-budget", "10"]] {
        let mut extra = consensus.clone();
        extra.extend(
            flag.iter()
                .filter(|f| !f.is_empty())
                .map(|f| (*f).to_owned()),
        );
        let refusal = checked(&path, &cmd, &extra).unwrap_err();
        assert!(
            refusal.starts_with(&format!(
                "{} is not honoured by claij ask with --consensus",
                flag[0]
            )),
            "{refusal}"
        );
    }
    // The same flags with one model are honoured.
    let one = strings(&[
        "--stream",
        "--interceptors",
        "tools",
        "--tool-results-budget",
        "10",
    ]);
    assert_eq!(checked(&path, &cmd, &one), Ok(()));
}
