//! No flag is silently ignored: each command states, per mode it can run in, the flags it honours
//! ([`SCOPES`]), and the flags a flag needs beside it to mean anything ([`Need`]); [`check`] refuses
//! any other flag given on the command line (exit 2, one line naming it) before anything runs.
//!
//! A flag's default (not given) is never refused, nor are the flags every command takes
//! ([`crate::args::Global`], checked where they are used). The unit tests walk every flag of
//! every command of clap's tree in each mode, so a flag no scope classifies fails them.

use clap::ArgMatches;
use clap::parser::ValueSource;

/// A command (`ask`, `fsm run`) and the modes it runs in.
pub(crate) struct Scope {
    /// The command's path under `claij`, words separated by a space.
    pub command: &'static str,
    /// Its modes; [`Scope::mode_of`] says which one a command line is in.
    pub modes: &'static [Mode],
    /// The mode of a command line (a name among [`Scope::modes`]).
    pub mode_of: fn(&ArgMatches) -> &'static str,
    /// Flags that mean something only beside others.
    pub needs: &'static [Need],
}

/// A mode of a command and the flags it honours.
pub(crate) struct Mode {
    /// Its name, as [`Scope::mode_of`] returns it.
    pub name: &'static str,
    /// The mode, as the refusal says it: `with --consensus (several models asked once each)`.
    pub said: &'static str,
    /// Arguments that put the command in this mode (after its path; the tests use them).
    #[cfg_attr(
        not(test),
        expect(dead_code, reason = "the tests walk each mode through it")
    )]
    pub example: &'static [&'static str],
    /// The flags (long names) it honours, in groups.
    pub honours: &'static [&'static [&'static str]],
    /// Refusals worded for a flag of their own (the rest get the same line).
    pub refusals: &'static [(&'static str, &'static str)],
}

/// A flag honoured only when others say so.
pub(crate) struct Need {
    /// The flag (long name).
    pub flag: &'static str,
    /// Whether the command line gives what the flag needs.
    pub met: fn(&ArgMatches) -> bool,
    /// The refusal when it does not (one line, naming the flag).
    pub says: &'static str,
    /// Arguments that meet it (the tests use them).
    #[cfg_attr(
        not(test),
        expect(dead_code, reason = "the tests meet each need through it")
    )]
    pub example: &'static [&'static str],
    /// Arguments that leave it unmet beside the flag alone (the tests use them).
    #[cfg_attr(
        not(test),
        expect(dead_code, reason = "the tests break each need through it")
    )]
    pub unmet: &'static [&'static str],
}

/// Checks the flags given to `command` (the whole tree) as `matches` holds them: the first flag
/// its mode does not honour, or whose need is not met, is the one-line usage error (without
/// `error: `).
pub(crate) fn check(command: &clap::Command, matches: &ArgMatches) -> Result<(), String> {
    let mut path = Vec::new();
    let (mut cmd, mut m) = (command, matches);
    while let Some((name, sub)) = m.subcommand() {
        let Some(next) = cmd.find_subcommand(name) else {
            break;
        };
        path.push(name);
        (cmd, m) = (next, sub);
    }
    let path = path.join(" ");
    let Some(scope) = scope(&path) else {
        return Ok(());
    };
    let mode = scope.mode(m);
    for long in given(cmd, m) {
        if !mode.honours(long) {
            let custom = mode.refusals.iter().find(|(flag, _)| *flag == long);
            return Err(custom.map_or_else(
                || {
                    let said = if mode.said.is_empty() { "" } else { " " };
                    format!(
                        "--{long} is not honoured by claij {path}{said}{}: drop it",
                        mode.said
                    )
                },
                |(_, says)| (*says).to_owned(),
            ));
        }
        if let Some(need) = scope.needs.iter().find(|n| n.flag == long)
            && !(need.met)(m)
        {
            return Err(need.says.to_owned());
        }
    }
    Ok(())
}

/// The scope of the command at `path`.
pub(crate) fn scope(path: &str) -> Option<&'static Scope> {
    SCOPES.iter().find(|s| s.command == path)
}

impl Scope {
    /// The mode `matches` is in.
    pub(crate) fn mode(&self, matches: &ArgMatches) -> &'static Mode {
        let name = (self.mode_of)(matches);
        self.modes
            .iter()
            .find(|m| m.name == name)
            .unwrap_or(&self.modes[0])
    }
}

impl Mode {
    /// Whether it honours the flag `long`.
    pub(crate) fn honours(&self, long: &str) -> bool {
        self.honours.iter().any(|group| group.contains(&long))
    }
}

/// The long names of the flags given on the command line to `cmd` (not its every-command flags),
/// in the order `cmd` declares them.
pub(crate) fn given<'a>(cmd: &'a clap::Command, matches: &ArgMatches) -> Vec<&'a str> {
    cmd.get_arguments()
        .filter(|arg| !arg.is_global_set() && !arg.is_positional())
        .filter(|arg| matches.value_source(arg.get_id().as_str()) == Some(ValueSource::CommandLine))
        .filter_map(clap::Arg::get_long)
        .collect()
}

/// Whether the flag with this id is on the command line.
fn on(matches: &ArgMatches, id: &str) -> bool {
    matches.value_source(id) == Some(ValueSource::CommandLine)
}

/// The raw values of the argument with this id (after splitting at its delimiter).
fn values(matches: &ArgMatches, id: &str) -> Vec<String> {
    matches
        .try_get_raw(id)
        .ok()
        .flatten()
        .map(|values| values.map(|v| v.to_string_lossy().into_owned()).collect())
        .unwrap_or_default()
}

/// Whether `--interceptors` names one of `names`.
fn intercepts(matches: &ArgMatches, names: &[&str]) -> bool {
    values(matches, "interceptors")
        .iter()
        .any(|n| names.contains(&n.as_str()))
}

/// The model flags of `ask`, `chat`, `fsm run|resume`, `mcp chat`, `serve restate`.
const MODEL: &[&str] = &[
    "llm",
    "model-path",
    "mode",
    "max-retries",
    "max-tokens",
    "max-reply-bytes",
    "temperature",
    "seed",
    "threads",
    "matrix",
];

/// What `ask` and `chat` share besides the model flags.
const CONVERSE: &[&str] = &[
    "schema",
    "interceptors",
    "approve",
    "voters",
    "compact-budget",
    "session",
    "memory-strategy",
    "recall-k",
    "recall-min-similarity",
    "recall-max-chars",
    "memory-store",
    "history-messages",
    "history-tokens",
    "tool-results-budget",
    "standard",
    "note",
    "project",
    "sampling-llm",
    "elicitation",
    "example",
    "json",
    "stream",
    "no-stream",
    "metrics",
];

/// The agent run's flags.
const AGENT: &[&str] = &["max-steps", "budget-usd"];

/// The flags of an FSM run's worker: services, what their servers are offered, meta-debug.
const WORKER: &[&str] = &[
    "project",
    "meta-debug",
    "interceptors",
    "approve",
    "voters",
    "sampling-llm",
    "elicitation",
];

/// The limits and output of an FSM run, wherever it runs.
const RUN: &[&str] = &["max-transitions", "max-repeated-calls", "json"];

/// The MCP servers' flags of `mcp list|call|chat|resources|read|prompts|prompt`.
const SERVERS: &[&str] = &["project", "sampling-llm", "elicitation", "mcp-log-level"];

/// `--consensus` with several models.
const CONSENSUS: &[&str] = &["consensus", "on"];

const RESTATE_RUN: &[&str] = &["ingress", "id", "follow-timeout"];

/// A command with one mode, whose flags do not depend on each other (but for `needs`).
macro_rules! plain {
    ($command:literal, $honours:expr) => {
        plain!($command, $honours, &[])
    };
    ($command:literal, $honours:expr, $needs:expr) => {
        Scope {
            command: $command,
            modes: &[only($honours)],
            mode_of: |_| "",
            needs: $needs,
        }
    };
}

/// Every command and what it honours in each mode.
pub(crate) static SCOPES: &[Scope] = &[
    Scope {
        command: "ask",
        modes: &[
            Mode {
                name: "one",
                said: "with one model",
                example: &[],
                honours: &[MODEL, CONVERSE, AGENT],
                refusals: &[("on", ON_NEEDS_CONSENSUS)],
            },
            Mode {
                name: "agent",
                said: "in an agent run",
                example: &["--max-steps", "2", "--interceptors", "tools"],
                honours: &[MODEL, CONVERSE, AGENT],
                refusals: &[("on", ON_NEEDS_CONSENSUS)],
            },
            Mode {
                name: "consensus",
                said: "with --consensus (several models asked once each, not streamed, no tool results on a next turn)",
                example: &["--consensus", "majority", "--llm", "a,b"],
                honours: &[
                    MODEL,
                    CONSENSUS,
                    &[
                        "schema",
                        "interceptors",
                        "standard",
                        "note",
                        "project",
                        "example",
                        "json",
                        "no-stream",
                    ],
                ],
                refusals: &[
                    (
                        "metrics",
                        "--metrics counts one model's calls, --consensus asks several: drop one",
                    ),
                    ("max-steps", AGENT_ALONE),
                    ("budget-usd", AGENT_ALONE),
                    (
                        "session",
                        "--memory carries one conversation, --consensus asks several models once each: drop one",
                    ),
                ],
            },
        ],
        mode_of: |m| {
            if on(m, "consensus") {
                "consensus"
            } else if on(m, "max_steps") || on(m, "budget_usd") {
                "agent"
            } else {
                "one"
            }
        },
        needs: &[
            Need {
                flag: "history-messages",
                met: |m| on(m, "memory"),
                says: "--history-messages bounds the conversation a session carries, and one question has none before it: add --session FILE",
                example: &["--session", "s.json"],
                unmet: &[],
            },
            Need {
                flag: "history-tokens",
                met: |m| on(m, "memory"),
                says: "--history-tokens bounds the conversation a session carries, and one question has none before it: add --session FILE",
                example: &["--session", "s.json"],
                unmet: &[],
            },
            TOOL_RESULTS,
            SAMPLING,
            ELICITATION,
            NOTE,
            APPROVE,
            VOTERS,
            COMPACT_BUDGET,
            THREADS,
            MATRIX,
            STEPS,
            Need {
                flag: "memory-strategy",
                met: |m| intercepts(m, &["memory"]),
                says: MEMORY_STRATEGY,
                example: &["--interceptors", "memory"],
                unmet: &[],
            },
            RECALL_K,
            RECALL_MIN_SIMILARITY,
            RECALL_MAX_CHARS,
            RECALL_MEMORY_STORE,
            Need {
                flag: "stream",
                met: |m| !on(m, "json"),
                says: "--stream shows partial values, and --json prints the final report alone: drop one",
                example: &[],
                unmet: &["--json"],
            },
            Need {
                flag: "project",
                met: |m| intercepts(m, &["mcp"]) || on(m, "memory"),
                says: "--project chooses the MCP servers' project: add --interceptors mcp (or --session FILE, which keeps it for later turns)",
                example: &["--interceptors", "mcp"],
                unmet: &[],
            },
        ],
    },
    Scope {
        command: "chat",
        modes: &[Mode {
            name: "chat",
            said: "",
            example: &[],
            honours: &[MODEL, CONVERSE, AGENT, &["no-history"]],
            refusals: &[
                (
                    "consensus",
                    "claij chat talks with one model: --consensus and several --llm models are for claij ask (one question, several answers compared)",
                ),
                (
                    "on",
                    "claij chat talks with one model: --on (what --consensus majority compares) and several --llm models are for claij ask (one question, several answers compared)",
                ),
            ],
        }],
        mode_of: |_| "chat",
        needs: &[
            TOOL_RESULTS,
            SAMPLING,
            ELICITATION,
            NOTE,
            APPROVE,
            VOTERS,
            COMPACT_BUDGET,
            THREADS,
            MATRIX,
            STEPS,
            Need {
                flag: "memory-strategy",
                met: |m| !on(m, "interceptors") || intercepts(m, &["memory"]),
                says: MEMORY_STRATEGY,
                example: &["--interceptors", "memory"],
                unmet: &["--interceptors", "tools"],
            },
            RECALL_K,
            RECALL_MIN_SIMILARITY,
            RECALL_MAX_CHARS,
            RECALL_MEMORY_STORE,
            Need {
                flag: "stream",
                met: |m| !on(m, "json") && !on(m, "standard"),
                says: "--stream writes the answer as it grows, and --json prints each turn's report whole, --standard renders the standard response whole: drop one",
                example: &[],
                unmet: &["--standard"],
            },
            Need {
                flag: "project",
                met: |m| intercepts(m, &["mcp"]) || on(m, "memory"),
                says: "--project chooses the MCP servers' project: add --interceptors mcp (or --session FILE, which keeps it for later conversations)",
                example: &["--interceptors", "mcp"],
                unmet: &[],
            },
        ],
    },
    Scope {
        command: "fsm run",
        modes: &[
            Mode {
                name: "embedded",
                said: "embedded",
                example: &[],
                honours: &[&["input", "journal", "force", "on"], MODEL, WORKER, RUN],
                refusals: &[
                    ("ingress", RESTATE_ONLY),
                    ("id", RESTATE_ONLY),
                    ("follow-timeout", RESTATE_ONLY),
                ],
            },
            Mode {
                name: "restate",
                said: ON_WORKER_SAID,
                example: &["--on", "restate"],
                honours: &[&["input", "on"], RESTATE_RUN, RUN],
                refusals: &[("journal", EMBEDDED_ONLY), ("force", EMBEDDED_ONLY)],
            },
        ],
        mode_of: |m| {
            if values(m, "on").iter().any(|v| v == "restate") {
                "restate"
            } else {
                "embedded"
            }
        },
        needs: &[MATRIX],
    },
    plain!("fsm resume", &[MODEL, WORKER, RUN], &[MATRIX]),
    plain!(
        "serve restate",
        &[&["bind", "register", "identity-key"], MODEL, WORKER, RUN],
        &[MATRIX]
    ),
    plain!("fsm validate", &[&["project"]]),
    plain!("fsm render", &[&["format"]]),
    plain!("fsm provide", &[&["on", "ingress"]]),
    plain!("mcp list", &[SERVERS, &["json"]]),
    plain!(
        "mcp call",
        &[SERVERS, &["args", "timeout", "max-message-bytes", "json"]]
    ),
    plain!(
        "mcp chat",
        &[
            SERVERS,
            MODEL,
            &["max-transitions", "max-repeated-calls", "history"]
        ],
        &[MATRIX]
    ),
    plain!("mcp resources", &[SERVERS, &["json"]]),
    plain!(
        "mcp read",
        &[SERVERS, &["out", "max-resource-bytes", "json"]]
    ),
    plain!("mcp prompts", &[SERVERS, &["json"]]),
    plain!("mcp prompt", &[SERVERS, &["arg", "json"]]),
    plain!("mcp login", &[&["timeout", "scope"]]),
    plain!("mcp logout", &[]),
    plain!("mcp servers", &[&["root", "servers", "dir", "format"]]),
    plain!("models", &[&["matrix", "json", "refresh"]]),
    plain!("models prices", &[&["import", "format", "json"]]),
    plain!("validate", &[&["schema", "json", "max-input-bytes"]]),
    plain!("repair", &[&["schema", "json", "max-input-bytes"]]),
    plain!("schema compose", &[&["compact"]]),
    plain!("schema render", &[&["as"]]),
    plain!("schema audit", &[&["json"]]),
    plain!("schema rollback", &[&["schema"]]),
    plain!(
        "schema compact",
        &[&["schema", "approve", "dry-run", "json"]]
    ),
    plain!(
        "schema cost",
        &[&["session", "schema", "tokenizer", "model", "json"]]
    ),
    plain!("config show", &[&["json"]]),
    plain!("memory list", &[&["session", "json"]]),
    plain!("memory search", &[&["k", "session", "json"]]),
    plain!("memory forget", &[&["id", "session"]]),
];

/// `--on` without `--consensus majority`.
const ON_NEEDS_CONSENSUS: &str =
    "--on chooses what --consensus majority compares: add --consensus majority";
/// The agent run's bounds with `--consensus`.
const AGENT_ALONE: &str = "--max-steps and --budget-usd bound one model's agent run, --consensus asks several models once each: drop one";
/// A Restate run's flags in an embedded one.
const RESTATE_ONLY: &str =
    "--ingress, --id and --follow-timeout are for a run on Restate: add --on restate";
/// An embedded run's flags on Restate.
const EMBEDDED_ONLY: &str =
    "--journal is for an embedded run: on Restate the server journals the run";

/// `on Restate`, as a refusal says it.
const ON_WORKER_SAID: &str = concat!(
    "on Restate ",
    "(the worker, `claij serve restate`, runs the machine with its own model, services and interceptors: give it there)"
);

/// The one mode of a command whose flags do not depend on each other.
const fn only(honours: &'static [&'static [&'static str]]) -> Mode {
    Mode {
        name: "",
        said: "",
        example: &[],
        honours,
        refusals: &[],
    }
}

/// A flag of the MCP interceptor's servers: it needs `--interceptors mcp`.
const fn of_mcp(flag: &'static str, says: &'static str) -> Need {
    let (example, unmet) = (&["--interceptors", "mcp"] as &[&str], &[] as &[&str]);
    let met = |m: &ArgMatches| intercepts(m, &["mcp"]);
    Need {
        flag,
        met,
        says,
        example,
        unmet,
    }
}

/// `--memory-strategy` without the memory interceptor.
const MEMORY_STRATEGY: &str =
    "--memory-strategy chooses how the memory interceptor remembers: add --interceptors memory";

/// A flag of the recall memory: it needs `--memory-strategy recall`.
const fn of_recall(flag: &'static str, says: &'static str) -> Need {
    Need {
        flag,
        met: |m| values(m, "memory_strategy").iter().any(|s| s == "recall"),
        says,
        example: &["--memory-strategy", "recall", "--interceptors", "memory"],
        unmet: &[],
    }
}

const RECALL_K: Need = of_recall(
    "recall-k",
    "--recall-k is how many memories recall brings back: add --memory-strategy recall",
);
const RECALL_MIN_SIMILARITY: Need = of_recall(
    "recall-min-similarity",
    "--recall-min-similarity is the floor of what recall brings back: add --memory-strategy recall",
);
const RECALL_MAX_CHARS: Need = of_recall(
    "recall-max-chars",
    "--recall-max-chars is the prompt budget of what recall brings back: add --memory-strategy recall",
);
const RECALL_MEMORY_STORE: Need = of_recall(
    "memory-store",
    "--memory-store is where recall keeps memories: add --memory-strategy recall",
);
const SAMPLING: Need = of_mcp(
    "sampling-llm",
    "--sampling-llm answers the MCP servers' sampling requests: add --interceptors mcp",
);
const ELICITATION: Need = of_mcp(
    "elicitation",
    "--elicitation answers the MCP servers' questions: add --interceptors mcp",
);

const TOOL_RESULTS: Need = Need {
    flag: "tool-results-budget",
    met: |m| intercepts(m, &["tools", "mcp"]),
    says: "--tool-results-budget sizes what tool and MCP calls return to the model: add --interceptors tools or --interceptors mcp",
    example: &["--interceptors", "tools"],
    unmet: &[],
};

const THREADS: Need = Need {
    flag: "threads",
    met: |m| {
        values(m, "llm")
            .iter()
            .all(|llm| llm.split(',').all(may_be_local))
    },
    says: "--threads sets the embedded model's threads, and --llm names no embedded model (`local`): drop it",
    example: &[],
    unmet: &["--llm", "openai:gpt-4o-mini"],
};

/// Whether `--llm`'s model may be the embedded one: `local`, `local:...`, or an alias (the
/// configuration may point it there); a `provider:model` of another provider is not.
fn may_be_local(llm: &str) -> bool {
    match llm.trim().split_once(':') {
        Some((provider, _)) => provider == "local",
        None => true,
    }
}

const STEPS: Need = Need {
    flag: "max-steps",
    met: |m| intercepts(m, &["tools", "mcp"]),
    says: "--max-steps bounds the steps of a model that calls tools, and no tools are on: add --interceptors tools or --interceptors mcp",
    example: &["--interceptors", "tools"],
    unmet: &[],
};

const MATRIX: Need = Need {
    flag: "matrix",
    met: |m| !(on(m, "mode") && on(m, "max_retries")),
    says: "--matrix chooses the mode and the retries, and --mode and --max-retries set both: drop one",
    example: &[],
    unmet: &["--mode", "prompted", "--max-retries", "1"],
};

const NOTE: Need = Need {
    flag: "note",
    met: |m| intercepts(m, &["citations"]) || on(m, "standard"),
    says: "--note is a note the model may cite: add --standard or --interceptors citations",
    example: &["--standard"],
    unmet: &[],
};

const APPROVE: Need = Need {
    flag: "approve",
    met: |m| intercepts(m, &["proposals"]),
    says: "--approve decides on the schema extensions the model proposes: add --interceptors proposals",
    example: &["--interceptors", "proposals"],
    unmet: &[],
};

const VOTERS: Need = Need {
    flag: "voters",
    met: |m| intercepts(m, &["proposals"]),
    says: "--voters is for --interceptors proposals --approve vote",
    example: &["--interceptors", "proposals", "--approve", "vote"],
    unmet: &[],
};

const COMPACT_BUDGET: Need = Need {
    flag: "compact-budget",
    met: |m| intercepts(m, &["proposals"]),
    says: "--compact-budget is when the approved schema extensions are compacted: add --interceptors proposals",
    example: &["--interceptors", "proposals"],
    unmet: &[],
};

#[cfg(test)]
mod tests;
