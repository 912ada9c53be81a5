//! Per-project service filtering: a project names the services, and optionally the tools, it may use.
//!
//! This is the design's hybrid option. A hard filter decides what the model is offered and what may
//! run (the schema of the MCP interceptor only has branches for allowed tools, and execution refuses
//! anything else, recording the refusal), and a short "hat" prompt tells the model which project it
//! is working on.
//!
//! ```
//! use claij_mcp::Project;
//!
//! let docs = Project::new("docs", ["fs"]).with_tools(["fs.read_text_file"]);
//! assert!(docs.allows("fs", "read_text_file"));
//! assert!(!docs.allows("fs", "write_file"));
//! assert!(!docs.allows("git", "git_status"));
//! assert!(docs.hat().starts_with("You are working on project `docs`"));
//! ```

use serde_json::Value;

/// A project: its allowed services and tools and its hat.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Project {
    /// The project's name.
    pub name: String,
    /// The servers it may use.
    pub services: Vec<String>,
    /// The tools it may use, as `server.tool`; `None` allows every tool of [`Project::services`].
    pub tools: Option<Vec<String>>,
    /// Extra instructions for the hat prompt.
    pub description: Option<String>,
}

impl Project {
    /// A project that may use every tool of `services`.
    pub fn new(
        name: impl Into<String>,
        services: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Self {
            name: name.into(),
            services: services.into_iter().map(Into::into).collect(),
            tools: None,
            description: None,
        }
    }

    /// Restricts the project to these tools (`server.tool`; `server.*` allows a whole server).
    #[must_use]
    pub fn with_tools(mut self, tools: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.tools = Some(tools.into_iter().map(Into::into).collect());
        self
    }

    /// Adds instructions to the hat prompt.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Whether this project may call `tool` of `server`.
    pub fn allows(&self, server: &str, tool: &str) -> bool {
        if !self.services.iter().any(|s| s == server) {
            return false;
        }
        match &self.tools {
            None => true,
            Some(tools) => tools.iter().any(|allowed| match allowed.split_once('.') {
                Some((s, "*")) => s == server,
                Some((s, t)) => s == server && t == tool,
                None => false,
            }),
        }
    }

    /// The "hat": a short prompt saying which project is active and what it may use.
    pub fn hat(&self) -> String {
        let mut hat = format!(
            "You are working on project `{}`. Use only its services: {}.",
            self.name,
            if self.services.is_empty() {
                "none".to_owned()
            } else {
                self.services.join(", ")
            }
        );
        if let Some(description) = &self.description {
            hat.push(' ');
            hat.push_str(description.trim());
        }
        hat
    }

    /// Reads a project from its configuration entry:
    /// `{"services": [...], "tools": [...], "hat": "..."}`.
    pub(crate) fn from_value(name: &str, value: &Value) -> Result<Self, String> {
        let object = value.as_object().ok_or("expected an object")?;
        let strings = |key: &str| -> Result<Option<Vec<String>>, String> {
            match object.get(key) {
                None => Ok(None),
                Some(Value::Array(items)) => items
                    .iter()
                    .map(|item| {
                        item.as_str()
                            .map(str::to_owned)
                            .ok_or_else(|| format!("`{key}` lists strings"))
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map(Some),
                Some(_) => Err(format!("`{key}` is an array of strings")),
            }
        };
        let services = strings("services")?.ok_or("no `services`")?;
        let tools = strings("tools")?;
        if let Some(tools) = &tools {
            for tool in tools {
                match tool.split_once('.') {
                    Some((server, _)) if services.iter().any(|s| s == server) => {}
                    Some((server, _)) => {
                        return Err(format!(
                            "tool `{tool}` is on `{server}`, not one of `services`"
                        ));
                    }
                    None => return Err(format!("tool `{tool}` is not `server.tool`")),
                }
            }
        }
        let description = match object.get("hat").or_else(|| object.get("description")) {
            None => None,
            Some(Value::String(text)) => Some(text.clone()),
            Some(_) => return Err("`hat` is a string".to_owned()),
        };
        Ok(Self {
            name: name.to_owned(),
            services,
            tools,
            description,
        })
    }
}
