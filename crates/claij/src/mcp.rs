//! MCP servers for an application (feature `mcp`): the configured servers started
//! ([`start_configured`], [`start_services`]: the settings' MCP part, its `${VAR}` secrets, the
//! tokens `claij mcp login` stored), OAuth logins and their token store ([`login`]), what is
//! answered when a server asks the user something ([`elicitation`]), and a configuration for the
//! servers `cargo xtask mcp-servers` installs ([`servers`]). The MCP client itself is
//! [`claij_mcp`].
//!
//! ```
//! use claij::mcp::{Error, ErrorKind};
//! use claij_mcp::McpConfig;
//!
//! let mut config = McpConfig::from_json(
//!     r#"{"mcpServers": {"secure": {"url": "http://127.0.0.1:1/mcp",
//!         "oauth": {"clientId": "claij", "clientSecret": "${SECURE_SECRET}"}}}}"#,
//! )
//! .unwrap();
//! // The secret comes from the environment (here a variable nobody set): an error at its pointer.
//! let error = claij::mcp::login::expand_secrets(&mut config, |_| Err(std::env::VarError::NotPresent))
//!     .unwrap_err();
//! assert_eq!(error.kind(), ErrorKind::UnsetSecret);
//! assert!(error.is_config());
//! assert_eq!(
//!     error.to_string(),
//!     "/mcpServers/secure/oauth/clientSecret: the environment variable SECURE_SECRET is not set"
//! );
//! ```

use std::path::PathBuf;

use claij_mcp::{ClientOptions, Hooks, McpConfig, Services};

use crate::settings::Settings;

/// The MCP client, its configuration, services, interceptor and FSM services under this module:
/// [`claij_mcp`].
pub use claij_mcp as protocol;

pub mod chat;
pub mod elicitation;
pub mod login;
pub mod servers;

/// Why an MCP operation of this module failed. The MCP client's own errors are
/// [`Error::Mcp`], whose predicates ([`Error::is_timeout`], [`Error::is_auth`]...) this error
/// forwards.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The MCP client failed: a server would not start or answer, refused, or asked for an
    /// authorization nobody gave.
    #[error(transparent)]
    Mcp(#[from] claij_mcp::Error),
    /// The settings have no MCP servers ([`Settings::mcp_servers`]'s error).
    #[error(transparent)]
    NoServers(Box<dyn std::error::Error + Send + Sync>),
    /// The settings cannot give what was asked (a project they do not have: the settings' error).
    #[error(transparent)]
    Settings(Box<dyn std::error::Error + Send + Sync>),
    /// A `${VAR}` client secret whose variable is not set.
    #[error("{}{pointer}: the environment variable {variable} is not set", .file.as_ref().map_or_else(String::new, |file| format!("{}: ", file.display())))]
    UnsetSecret {
        /// The file of the configuration, when it came from one.
        file: Option<PathBuf>,
        /// The JSON pointer of the secret (`/mcpServers/NAME/oauth/clientSecret`).
        pointer: String,
        /// The variable.
        variable: String,
    },
    /// A server the configuration does not name.
    #[error("no mcp server `{server}` in the configuration; configured: {}", .known.join(", "))]
    UnknownServer {
        /// The name asked for.
        server: String,
        /// The names the configuration has.
        known: Vec<String>,
    },
    /// A file or a port: what was being done, and the system's error.
    #[error("{what}")]
    Io {
        /// What failed (`cannot read FILE`...).
        what: String,
        /// The system's error.
        source: std::io::Error,
    },
    /// The servers of [`servers`] are not installed in `dir`.
    #[error("no MCP servers installed in {}: run `{}` in the claij repository", .dir.display(), servers::INSTALL)]
    NotInstalled {
        /// The cache looked in.
        dir: PathBuf,
    },
    /// A selected server's entry point is missing from the cache.
    #[error(
        "{} is missing: the MCP servers in {} are not completely installed; run `{}` in the claij repository",
        .path.display(),
        .dir.display(),
        servers::INSTALL
    )]
    Incomplete {
        /// The missing file.
        path: PathBuf,
        /// The cache.
        dir: PathBuf,
    },
    /// An npm server is selected and `node` is not on PATH.
    #[error("node is not on PATH: the npm servers ({package}) run with it")]
    NoNode {
        /// The npm package that needs it.
        package: &'static str,
    },
}

/// What kind of failure an [`Error`] is, to match on without its fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// [`Error::Mcp`] (its own kind: [`claij_mcp::Error::kind`]).
    Mcp,
    /// [`Error::NoServers`].
    NoServers,
    /// [`Error::Settings`].
    Settings,
    /// [`Error::UnsetSecret`].
    UnsetSecret,
    /// [`Error::UnknownServer`].
    UnknownServer,
    /// [`Error::Io`].
    Io,
    /// [`Error::NotInstalled`].
    NotInstalled,
    /// [`Error::Incomplete`].
    Incomplete,
    /// [`Error::NoNode`].
    NoNode,
}

impl Error {
    /// What kind of failure it is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Mcp(_) => ErrorKind::Mcp,
            Error::NoServers(_) => ErrorKind::NoServers,
            Error::Settings(_) => ErrorKind::Settings,
            Error::UnsetSecret { .. } => ErrorKind::UnsetSecret,
            Error::UnknownServer { .. } => ErrorKind::UnknownServer,
            Error::Io { .. } => ErrorKind::Io,
            Error::NotInstalled { .. } => ErrorKind::NotInstalled,
            Error::Incomplete { .. } => ErrorKind::Incomplete,
            Error::NoNode { .. } => ErrorKind::NoNode,
        }
    }

    /// The MCP client's error, when it failed ([`Error::Mcp`]).
    pub fn mcp(&self) -> Option<&claij_mcp::Error> {
        match self {
            Error::Mcp(error) => Some(error),
            _ => None,
        }
    }

    /// Whether a request got no answer in time ([`claij_mcp::Error::is_timeout`]).
    pub fn is_timeout(&self) -> bool {
        self.mcp().is_some_and(claij_mcp::Error::is_timeout)
    }

    /// Whether a server could not be reached or is gone ([`claij_mcp::Error::is_connect`]).
    pub fn is_connect(&self) -> bool {
        self.mcp().is_some_and(claij_mcp::Error::is_connect)
    }

    /// Whether a server needs an authorization nobody gave ([`claij_mcp::Error::is_auth`]): log
    /// in ([`login::Login`]).
    pub fn is_auth(&self) -> bool {
        self.mcp().is_some_and(claij_mcp::Error::is_auth)
    }

    /// Whether the configuration (or the installed set it is built from) is wrong: an unset
    /// secret, an unknown server, servers not installed, and the MCP client's
    /// ([`claij_mcp::Error::is_config`]).
    pub fn is_config(&self) -> bool {
        match self {
            Error::Mcp(error) => error.is_config(),
            Error::NoServers(_)
            | Error::Settings(_)
            | Error::UnsetSecret { .. }
            | Error::UnknownServer { .. }
            | Error::NotInstalled { .. }
            | Error::Incomplete { .. }
            | Error::NoNode { .. } => true,
            Error::Io { .. } => false,
        }
    }

    /// The same error, said to be in `file` (an unset secret's).
    fn in_file(self, file: Option<&std::path::Path>) -> Self {
        match self {
            Error::UnsetSecret {
                pointer, variable, ..
            } => Error::UnsetSecret {
                file: file.map(std::path::Path::to_path_buf),
                pointer,
                variable,
            },
            other => other,
        }
    }

    /// An [`Error::Io`].
    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            what: what.into(),
            source,
        }
    }
}

/// Starts the servers of `config` (the settings' MCP part, or a selection of it): the
/// configuration's hooks over `hooks`, OAuth with the tokens `claij mcp login` stored in the
/// settings' data directory ([`login::stored`]); the entries' `${VAR}` client secrets are
/// expanded first, through `var` (`std::env::var` reads the environment).
///
/// # Errors
///
/// A secret's variable is not set ([`Error::UnsetSecret`], naming the settings' file); a server
/// that does not start, or needs an authorization nobody gave ([`Error::Mcp`]: `is_auth()`).
pub async fn start_services(
    config: &mut McpConfig,
    hooks: Hooks,
    settings: &Settings,
    var: impl Fn(&str) -> Result<String, std::env::VarError>,
) -> Result<Services, Error> {
    login::expand_secrets(config, var).map_err(|e| e.in_file(settings.mcp_path.as_deref()))?;
    let tokens = settings.data_dir.as_deref().map(login::token_dir);
    let options = ClientOptions::default()
        .with_hooks(config.hooks(hooks))
        .with_oauth(login::stored(tokens.as_deref()));
    Ok(Services::connect(config, options).await?)
}

/// The settings' MCP servers (only those `project` allows, when one is named), started
/// ([`start_services`]) and seen through the project.
///
/// ```no_run
/// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
/// let settings = claij::settings::Settings::from_env()?;
/// let services =
///     claij::mcp::start_configured(&settings, Some("docs"), |name| std::env::var(name)).await?;
/// for tool in services.tools() {
///     println!("{}", tool.qualified());
/// }
/// services.close().await;
/// # Ok(())
/// # }
/// ```
///
/// # Errors
///
/// No MCP servers ([`Error::NoServers`]) or no such project ([`Error::Settings`]), each naming
/// the file read; what [`start_services`] returns.
pub async fn start_configured(
    settings: &Settings,
    project: Option<&str>,
    var: impl Fn(&str) -> Result<String, std::env::VarError>,
) -> Result<Services, Error> {
    let mcp = settings
        .mcp_servers()
        .map_err(|e| Error::NoServers(e.into()))?;
    let project = match project {
        None => None,
        Some(name) => Some(
            settings
                .mcp_project(name)
                .map_err(|e| Error::Settings(e.into()))?
                .clone(),
        ),
    };
    let mut selected = mcp.clone();
    if let Some(project) = &project {
        selected
            .servers
            .retain(|name, _| project.services.contains(name));
    }
    let services = start_services(&mut selected, Hooks::default(), settings, var).await?;
    Ok(match project {
        Some(project) => services.with_project(project),
        None => services,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// Every variant's kind and whether it is the configuration's fault (an exhaustive match: a
    /// new variant must be classified here).
    #[test]
    fn each_variant_is_classified() {
        let io = || std::io::Error::other("x");
        let cases = [
            (
                Error::Mcp(claij_mcp::Error::Unauthorized {
                    server: "s".to_owned(),
                }),
                ErrorKind::Mcp,
                false,
            ),
            (
                Error::NoServers("no MCP servers".into()),
                ErrorKind::NoServers,
                true,
            ),
            (
                Error::Settings("no such project".into()),
                ErrorKind::Settings,
                true,
            ),
            (
                Error::UnsetSecret {
                    file: None,
                    pointer: "/p".to_owned(),
                    variable: "V".to_owned(),
                },
                ErrorKind::UnsetSecret,
                true,
            ),
            (
                Error::UnknownServer {
                    server: "s".to_owned(),
                    known: vec!["a".to_owned()],
                },
                ErrorKind::UnknownServer,
                true,
            ),
            (Error::io("cannot read f", io()), ErrorKind::Io, false),
            (
                Error::NotInstalled { dir: "/d".into() },
                ErrorKind::NotInstalled,
                true,
            ),
            (
                Error::Incomplete {
                    path: "/d/f".into(),
                    dir: "/d".into(),
                },
                ErrorKind::Incomplete,
                true,
            ),
            (Error::NoNode { package: "p" }, ErrorKind::NoNode, true),
        ];
        for (error, kind, config) in &cases {
            assert_eq!(error.kind(), *kind, "{error}");
            assert_eq!(error.is_config(), *config, "{error}");
            match error {
                Error::Mcp(_)
                | Error::NoServers(_)
                | Error::Settings(_)
                | Error::UnsetSecret { .. }
                | Error::UnknownServer { .. }
                | Error::Io { .. }
                | Error::NotInstalled { .. }
                | Error::Incomplete { .. }
                | Error::NoNode { .. } => {}
            }
        }
        // The client's predicates are forwarded.
        assert!(cases[0].0.is_auth());
        assert!(!cases[0].0.is_timeout() && !cases[0].0.is_connect());
        assert!(!cases[3].0.is_auth());
        // An unset secret says in which file, when there is one.
        let unset = |file: Option<&std::path::Path>| {
            Error::UnsetSecret {
                file: None,
                pointer: "/mcpServers/a/oauth/clientSecret".to_owned(),
                variable: "V".to_owned(),
            }
            .in_file(file)
            .to_string()
        };
        assert_eq!(
            unset(Some("/etc/claij.toml".as_ref())),
            "/etc/claij.toml: /mcpServers/a/oauth/clientSecret: the environment variable V is not set"
        );
        assert_eq!(
            unset(None),
            "/mcpServers/a/oauth/clientSecret: the environment variable V is not set"
        );
    }
}
