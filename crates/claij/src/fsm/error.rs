//! [`Error`], why loading, checking or wiring a state machine failed, and its [`ErrorKind`]; a
//! run's own errors are [`claij_fsm::Error`]s, carried as [`Error::Fsm`] with their predicates
//! forwarded.

use claij_fsm::{DefinitionError, Problem};

/// Why a machine could not be loaded, checked or wired (or a run failed: [`Error::Fsm`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The state machine's own error: a run, a journal, a machine built.
    #[error(transparent)]
    Fsm(#[from] claij_fsm::Error),
    /// JSON that is not shaped like a definition.
    #[error("{name}: not an FSM definition: {error}")]
    NotADefinition {
        /// Where the JSON came from (a file, `stdin`).
        name: String,
        /// What serde said.
        error: serde_json::Error,
    },
    /// A definition (or a sub-FSM it names) with problems, each at its pointer.
    #[error(transparent)]
    Definition(DefinitionError),
    /// A file that cannot be read: what was read, and the system's error.
    #[error("{what}")]
    Io {
        /// `cannot read FILE`.
        what: String,
        /// The system's error.
        source: std::io::Error,
    },
    /// A file that is not JSON.
    #[error("{what}")]
    Json {
        /// `FILE: invalid JSON`.
        what: String,
        /// What serde said.
        source: serde_json::Error,
    },
    /// The settings: a project they do not have, MCP servers they do not configure.
    #[error("{0}")]
    Config(String),
    /// A model that does not resolve or cannot be opened (a state's named at its pointer).
    #[error("{0}")]
    Model(String),
    /// Meta-debugging without models: none listed, and no compatibility matrix lists any that
    /// pass every test.
    #[error(
        "meta-debugging needs diagnostic models: list them, or measure some with `cargo xtask \
         integration`, whose compatibility matrix lists those that work"
    )]
    NoDiagnosticModels,
    /// What the machine needs that is not here: a service, a model, a `custom` state's action.
    #[error("FSM `{fsm}` cannot run here: {}", each(.problems))]
    CannotRun {
        /// The machine's id.
        fsm: String,
        /// Each problem at its pointer (in the machine or a sub-FSM's file).
        problems: Vec<Problem>,
    },
    /// An MCP server that cannot start, or a secret of its entry that is not set (feature
    /// `mcp`).
    #[cfg(feature = "mcp")]
    #[error(transparent)]
    Mcp(#[from] crate::mcp::Error),
}

/// `pointer: message; pointer: message`.
fn each(problems: &[Problem]) -> String {
    let each: Vec<String> = problems
        .iter()
        .map(|p| format!("{}: {}", p.pointer, p.message))
        .collect();
    each.join("; ")
}

/// What kind of failure an [`Error`] is, to match on without its fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// [`Error::Fsm`] (its own kind: [`claij_fsm::Error::kind`]).
    Fsm,
    /// [`Error::NotADefinition`].
    NotADefinition,
    /// [`Error::Definition`].
    Definition,
    /// [`Error::Io`].
    Io,
    /// [`Error::Json`].
    Json,
    /// [`Error::Config`].
    Config,
    /// [`Error::Model`].
    Model,
    /// [`Error::NoDiagnosticModels`].
    NoDiagnosticModels,
    /// [`Error::CannotRun`].
    CannotRun,
    /// `Error::Mcp` (feature `mcp`; its own kind: [`crate::mcp::Error::kind`]).
    Mcp,
}

impl Error {
    /// What kind of failure it is.
    #[must_use]
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Fsm(_) => ErrorKind::Fsm,
            Error::NotADefinition { .. } => ErrorKind::NotADefinition,
            Error::Definition(_) => ErrorKind::Definition,
            Error::Io { .. } => ErrorKind::Io,
            Error::Json { .. } => ErrorKind::Json,
            Error::Config(_) => ErrorKind::Config,
            Error::Model(_) => ErrorKind::Model,
            Error::NoDiagnosticModels => ErrorKind::NoDiagnosticModels,
            Error::CannotRun { .. } => ErrorKind::CannotRun,
            #[cfg(feature = "mcp")]
            Error::Mcp(_) => ErrorKind::Mcp,
        }
    }

    /// The state machine's error underneath ([`Error::Fsm`]).
    #[must_use]
    pub fn fsm(&self) -> Option<&claij_fsm::Error> {
        match self {
            Error::Fsm(error) => Some(error),
            _ => None,
        }
    }

    /// Whether the definition is wrong ([`Error::NotADefinition`], [`Error::Definition`]): a
    /// problem of the file, not of this process.
    #[must_use]
    pub fn is_invalid(&self) -> bool {
        matches!(self, Error::NotADefinition { .. } | Error::Definition(_))
            || self
                .fsm()
                .is_some_and(|e| matches!(e, claij_fsm::Error::Definition(_)))
    }

    /// Whether the settings (or what the machine asks of them) are wrong: a project or server
    /// they lack, a model that does not resolve, a machine that cannot run with them.
    #[must_use]
    pub fn is_config(&self) -> bool {
        #[cfg(feature = "mcp")]
        if let Error::Mcp(e) = self {
            return e.is_config();
        }
        matches!(
            self,
            Error::Config(_)
                | Error::Model(_)
                | Error::NoDiagnosticModels
                | Error::CannotRun { .. }
        )
    }

    /// Whether a run stopped at a limit ([`claij_fsm::Error::is_limit`]).
    #[must_use]
    pub fn is_limit(&self) -> bool {
        self.fsm().is_some_and(claij_fsm::Error::is_limit)
    }

    /// Whether a model's replies never validated ([`claij_fsm::Error::is_invalid_reply`]).
    #[must_use]
    pub fn is_invalid_reply(&self) -> bool {
        self.fsm().is_some_and(claij_fsm::Error::is_invalid_reply)
    }

    /// Whether a call timed out ([`claij_fsm::Error::is_timeout`], an MCP server's too).
    #[must_use]
    pub fn is_timeout(&self) -> bool {
        #[cfg(feature = "mcp")]
        if let Error::Mcp(e) = self {
            return e.is_timeout();
        }
        self.fsm().is_some_and(claij_fsm::Error::is_timeout)
    }

    /// Whether a call found no server ([`claij_fsm::Error::is_connect`], an MCP server's too).
    #[must_use]
    pub fn is_connect(&self) -> bool {
        #[cfg(feature = "mcp")]
        if let Error::Mcp(e) = self {
            return e.is_connect();
        }
        self.fsm().is_some_and(claij_fsm::Error::is_connect)
    }

    /// Whether a provider refused the key ([`claij_fsm::Error::is_auth`]), or an MCP server
    /// needs an authorization nobody gave.
    #[must_use]
    pub fn is_auth(&self) -> bool {
        #[cfg(feature = "mcp")]
        if let Error::Mcp(e) = self {
            return e.is_auth();
        }
        self.fsm().is_some_and(claij_fsm::Error::is_auth)
    }

    /// Whether trying again later may succeed ([`claij_fsm::Error::is_retryable`]).
    #[must_use]
    pub fn is_retryable(&self) -> bool {
        self.fsm().is_some_and(claij_fsm::Error::is_retryable)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// Every variant's kind and class (an exhaustive match: a new variant must be classified
    /// here).
    #[test]
    fn each_variant_is_classified() {
        let problem = || Problem {
            pointer: "/states/0".to_owned(),
            message: "m".to_owned(),
        };
        let json = || serde_json::from_str::<serde_json::Value>("{").unwrap_err();
        let cases = [
            (
                Error::Fsm(claij_fsm::Error::TooManyTransitions {
                    state: "s".to_owned(),
                    limit: 1,
                    recorded: 1,
                }),
                ErrorKind::Fsm,
                (false, false),
            ),
            (
                Error::NotADefinition {
                    name: "f".to_owned(),
                    error: json(),
                },
                ErrorKind::NotADefinition,
                (true, false),
            ),
            (
                Error::Definition(DefinitionError {
                    fsm: "f".to_owned(),
                    problems: vec![problem()],
                }),
                ErrorKind::Definition,
                (true, false),
            ),
            (
                Error::Io {
                    what: "cannot read f".to_owned(),
                    source: std::io::Error::other("x"),
                },
                ErrorKind::Io,
                (false, false),
            ),
            (
                Error::Json {
                    what: "f: invalid JSON".to_owned(),
                    source: json(),
                },
                ErrorKind::Json,
                (false, false),
            ),
            (
                Error::Config("c".to_owned()),
                ErrorKind::Config,
                (false, true),
            ),
            (
                Error::Model("m".to_owned()),
                ErrorKind::Model,
                (false, true),
            ),
            (
                Error::NoDiagnosticModels,
                ErrorKind::NoDiagnosticModels,
                (false, true),
            ),
            (
                Error::CannotRun {
                    fsm: "f".to_owned(),
                    problems: vec![problem(), problem()],
                },
                ErrorKind::CannotRun,
                (false, true),
            ),
            #[cfg(feature = "mcp")]
            (
                Error::Mcp(crate::mcp::Error::Mcp(claij_mcp::Error::Unauthorized {
                    server: "s".to_owned(),
                })),
                ErrorKind::Mcp,
                (false, false),
            ),
        ];
        for (error, kind, (invalid, config)) in &cases {
            assert_eq!(error.kind(), *kind, "{error}");
            assert_eq!(error.is_invalid(), *invalid, "{error}");
            assert_eq!(error.is_config(), *config, "{error}");
            match error {
                Error::Fsm(_)
                | Error::NotADefinition { .. }
                | Error::Definition(_)
                | Error::Io { .. }
                | Error::Json { .. }
                | Error::Config(_)
                | Error::Model(_)
                | Error::NoDiagnosticModels
                | Error::CannotRun { .. } => {}
                #[cfg(feature = "mcp")]
                Error::Mcp(_) => {}
            }
        }
        // The run's predicates are forwarded.
        assert!(cases[0].0.is_limit());
        assert!(!cases[1].0.is_limit());
        assert_eq!(
            cases[8].0.to_string(),
            "FSM `f` cannot run here: /states/0: m; /states/0: m"
        );
        #[cfg(feature = "mcp")]
        assert!(cases[9].0.is_auth() && !cases[8].0.is_auth());
    }
}
