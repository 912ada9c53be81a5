//! [`Services`]: every configured server, its tools named `server.tool`, seen through an optional
//! project filter.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use futures_util::future::join_all;
use serde::Serialize;
use serde_json::Value;
use tracing::warn;

use crate::client::{ClientOptions, McpClient};
use crate::config::McpConfig;
use crate::error::Error;
use crate::outcome::{CallFailure, CallOutcome};
use crate::project::Project;
use crate::tool::ToolInfo;

/// The servers of a configuration, connected. Clones share the connections; a clone made with
/// [`Services::with_project`] sees only what that project allows.
#[derive(Clone, Debug)]
pub struct Services {
    clients: Arc<BTreeMap<String, McpClient>>,
    project: Option<Arc<Project>>,
    refusals: Arc<Mutex<Vec<Refusal>>>,
}

/// A call refused because the active project does not allow it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Refusal {
    /// The project.
    pub project: String,
    /// The server named.
    pub server: String,
    /// The tool named.
    pub tool: String,
    /// When.
    #[serde(with = "unix_millis")]
    pub at: SystemTime,
}

impl Services {
    /// Connects every server of `config` at once. If one fails, the others are closed and the first
    /// failure is returned.
    ///
    /// # Errors
    ///
    /// The first server's [`McpClient::connect`] error, in name order.
    pub async fn connect(config: &McpConfig, options: ClientOptions) -> Result<Self, Error> {
        let attempts = join_all(config.servers.iter().map(|(name, server)| {
            McpClient::connect(name.clone(), server.clone(), options.clone())
        }))
        .await;
        let mut clients = Vec::new();
        let mut first_error = None;
        for attempt in attempts {
            match attempt {
                Ok(client) => clients.push(client),
                Err(err) => {
                    first_error.get_or_insert(err);
                }
            }
        }
        if let Some(err) = first_error {
            join_all(clients.iter().map(McpClient::close)).await;
            return Err(err);
        }
        Ok(Self::from_clients(clients))
    }

    /// Services over clients already connected.
    pub fn from_clients(clients: impl IntoIterator<Item = McpClient>) -> Self {
        Self {
            clients: Arc::new(
                clients
                    .into_iter()
                    .map(|c| (c.name().to_owned(), c))
                    .collect(),
            ),
            project: None,
            refusals: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// The same services seen through `project`: only its services and tools are listed, and a call
    /// to anything else is refused (and recorded).
    #[must_use]
    pub fn with_project(&self, project: Project) -> Self {
        Self {
            clients: Arc::clone(&self.clients),
            project: Some(Arc::new(project)),
            refusals: Arc::clone(&self.refusals),
        }
    }

    /// The active project.
    pub fn project(&self) -> Option<&Project> {
        self.project.as_deref()
    }

    /// The servers this view may use, in name order.
    pub fn names(&self) -> Vec<&str> {
        self.clients
            .keys()
            .filter(|name| {
                self.project
                    .as_ref()
                    .is_none_or(|p| p.services.iter().any(|s| s == *name))
            })
            .map(String::as_str)
            .collect()
    }

    /// A server's client (whatever the project allows).
    pub fn client(&self, server: &str) -> Option<&McpClient> {
        self.clients.get(server)
    }

    /// Every tool this view may use, server by server, as last listed.
    pub fn tools(&self) -> Vec<Arc<ToolInfo>> {
        self.names()
            .into_iter()
            .filter_map(|name| self.clients.get(name))
            .flat_map(|client| client.tools().iter().cloned().collect::<Vec<_>>())
            .filter(|tool| self.allows(&tool.server, &tool.name))
            .collect()
    }

    /// Whether this view may call `tool` of `server`.
    pub fn allows(&self, server: &str, tool: &str) -> bool {
        self.project.as_ref().is_none_or(|p| p.allows(server, tool))
    }

    /// Lists again the tools of every server that announced a change.
    pub async fn refresh_stale(&self) {
        let stale: Vec<&McpClient> = self.clients.values().filter(|c| c.tools_stale()).collect();
        for (client, result) in stale
            .iter()
            .zip(join_all(stale.iter().map(|c| c.refresh_tools())).await)
        {
            if let Err(err) = result {
                warn!(server = client.name(), error = %err, "refreshing the tool list failed");
            }
        }
    }

    /// Calls `tool` on `server`. A call the project does not allow is not sent: the outcome says so
    /// ([`CallFailure::NotAllowed`]) and the refusal is recorded ([`Services::refusals`]).
    ///
    /// # Errors
    ///
    /// [`Error::UnknownServer`] for a server that is not configured, and [`McpClient::call`]'s errors.
    pub async fn call(&self, server: &str, tool: &str, args: Value) -> Result<CallOutcome, Error> {
        if let Some(project) = &self.project
            && !project.allows(server, tool)
        {
            warn!(
                project = project.name,
                server, tool, "mcp call refused: not allowed in this project"
            );
            self.refusals
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(Refusal {
                    project: project.name.clone(),
                    server: server.to_owned(),
                    tool: tool.to_owned(),
                    at: SystemTime::now(),
                });
            return Ok(CallOutcome::failure(
                CallFailure::NotAllowed {
                    project: project.name.clone(),
                },
                format!(
                    "`{server}.{tool}` is not available in project `{}`; allowed services: {}",
                    project.name,
                    self.names().join(", ")
                ),
            ));
        }
        let client = self
            .clients
            .get(server)
            .ok_or_else(|| Error::UnknownServer {
                server: server.to_owned(),
                known: self.names().into_iter().map(str::to_owned).collect(),
            })?;
        client.call(tool, args).await
    }

    /// Calls a tool named `server.tool`.
    ///
    /// # Errors
    ///
    /// [`Error::Unqualified`] without a dot, and [`Services::call`]'s errors.
    pub async fn call_qualified(&self, name: &str, args: Value) -> Result<CallOutcome, Error> {
        let (server, tool) = name.split_once('.').ok_or_else(|| Error::Unqualified {
            name: name.to_owned(),
        })?;
        self.call(server, tool, args).await
    }

    /// The calls refused so far (shared by every view of these services).
    pub fn refusals(&self) -> Vec<Refusal> {
        self.refusals
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Closes every server.
    pub async fn close(&self) {
        join_all(self.clients.values().map(McpClient::close)).await;
    }
}

mod unix_millis {
    use std::time::{SystemTime, UNIX_EPOCH};

    pub(super) fn serialize<S: serde::Serializer>(
        at: &SystemTime,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        let millis = at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
        s.serialize_u128(millis)
    }
}
