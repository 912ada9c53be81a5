//! State machines run as the `claij` command runs them (feature `fsm`): a [`Machine`] loaded
//! from its file and checked (with the sub-FSM files it names), [`Wiring`] that makes it ready
//! with a configuration: its states' models resolved by name ([`crate::settings::Settings`]),
//! its services (MCP servers, Rust tools, `eval`; feature `mcp`) started once, the run's
//! limits on transitions and repeated calls, proposals and their approvals, meta-debugging; a
//! journaled run resumed from its journal ([`Machine::from_journal`]); runs on a Restate server
//! ([`restate`], feature `restate`). The state machine itself is [`claij_fsm`].
//!
//! A machine whose `clock` state calls the `get_current_time` tool of an MCP server (the `time`
//! server `cargo xtask mcp-servers` installs) and whose `llm` state has a model (here a mock of
//! OpenAI's wire) answer with what the tool said:
//!
//! ```
//! # #[cfg(feature = "mcp")]
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use claij::fsm::{Interrupt, Machine, Options, Outcome, Wiring};
//! use claij::{Claij, settings::Settings};
//! use serde_json::json;
//! use wiremock::{Mock, MockServer, ResponseTemplate, matchers::method};
//!
//! # let ci = matches!(std::env::var("CI").as_deref(), Ok("true" | "1"));
//! # let dir = std::env::var_os("CLAIJ_MCP_SERVERS").map(std::path::PathBuf::from);
//! # let Some(dir) = dir.filter(|d| d.join("servers.json").is_file()) else {
//! #     assert!(!ci, "no MCP servers in $CLAIJ_MCP_SERVERS: run `cargo xtask mcp-servers`");
//! #     return Ok(());
//! # };
//! # let time_server = dir.join("venv/bin/mcp-server-time");
//! let machine = Machine::new(claij::fsm::parse(json!({
//!     "id": "what-time",
//!     "states": [{"id": "clock", "action": "service", "config": {"service": "time"}},
//!                {"id": "llm", "action": "llm"},
//!                {"id": "end", "action": "end"}],
//!     "transitions": [
//!         {"id": ["start", "clock"], "schema": {"type": "object"}},
//!         {"id": ["clock", "llm"], "schema": {"type": "object"}},
//!         {"id": ["llm", "end"], "schema": {"type": "object",
//!             "properties": {"answer": {"type": "string"}}, "required": ["answer"]}}
//!     ]
//! }), "what-time.json")?);
//!
//! tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
//!     let model = MockServer::start().await;
//!     let reply = json!({"id": ["llm", "end"], "answer": "it is morning in UTC"});
//!     Mock::given(method("POST"))
//!         .respond_with(ResponseTemplate::new(200).set_body_json(json!({
//!             "id": "c1", "object": "chat.completion", "model": "gpt-4o",
//!             "choices": [{"index": 0, "finish_reason": "stop",
//!                 "message": {"role": "assistant", "content": reply.to_string()}}],
//!             "usage": {"prompt_tokens": 9, "completion_tokens": 9, "total_tokens": 18}
//!         })))
//!         .mount(&model)
//!         .await;
//!     let mut settings = Settings::builder().base_url("openai", &model.uri()).build()?;
//!     settings.mcp = Some(claij_mcp::McpConfig::from_json(&json!({"mcpServers": {
//!         "time": {"command": time_server, "args": ["--local-timezone", "UTC"]}
//!     }}).to_string())?);
//!     let claij = Claij::new(settings).with_var("OPENAI_API_KEY", "sk-test");
//!     let options = Options {
//!         model: claij::options::ModelOptions {
//!             llm: Some("openai:gpt-4o".into()),
//!             ..Default::default()
//!         },
//!         ..Options::default()
//!     };
//!
//!     let wired = Wiring::new(claij, options).wire(&machine).await?;
//!     let call = json!({"message": {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
//!         "params": {"name": "time.get_current_time", "arguments": {"timezone": "UTC"}}}});
//!     let mut run = wired.runner.start(call)?;
//!     let outcome = wired.runner.run(&mut run, &Interrupt::new(), None).await;
//!     wired.close().await;
//!
//!     assert!(matches!(outcome?, Outcome::Finished { .. }));
//!     let told = &run.trail.entries[1].event["message"]["result"]["content"][0]["text"];
//!     assert!(told.as_str().is_some_and(|t| t.contains("UTC")), "{told}");
//!     assert_eq!(run.trail.entries[2].event["answer"], "it is morning in UTC");
//!     // The model was asked with the tool's result.
//!     let asked = String::from_utf8_lossy(&model.received_requests().await.unwrap()[0].body)
//!         .into_owned();
//!     assert!(asked.contains("datetime"), "{asked}");
//!     Ok(())
//! })
//! # }
//! # #[cfg(not(feature = "mcp"))]
//! # fn main() {}
//! ```
//!
//! A machine checked against the settings before anything starts:
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use claij::fsm::{Machine, Options, Wiring};
//! use claij::{Claij, settings::Settings};
//! use serde_json::json;
//!
//! // A machine whose one state asks a model the settings do not have.
//! let definition = json!({
//!     "id": "hello",
//!     "states": [{"id": "answer", "action": "llm", "config": {"model": "nobody:nothing"}},
//!                {"id": "end", "action": "end"}],
//!     "transitions": [
//!         {"id": ["start", "answer"], "schema": {"type": "object"}},
//!         {"id": ["answer", "end"], "schema": {"type": "object"}}
//!     ]
//! });
//! let machine = Machine::new(claij::fsm::parse(definition, "hello.json")?);
//! let wiring = Wiring::new(Claij::new(Settings::default()), Options::default());
//! let problems = wiring.check(&machine)?;
//! assert_eq!(problems[0].pointer, "/states/0/config/model");
//! # Ok(())
//! # }
//! ```

use std::path::Path;

use claij_fsm::journal::SubDefinition;
use claij_fsm::{Definition, Fsm};
use serde_json::Value;

mod drive;
mod error;
mod meta_debug;
pub mod models;
#[cfg(feature = "restate")]
pub mod restate;
#[cfg(feature = "mcp")]
mod services;
mod subfsm;
mod wiring;

/// The state-machine engine under this module (definitions, runs, journals, trails, rendering):
/// [`claij_fsm`].
pub use claij_fsm as engine;
pub use claij_fsm::{
    Entry, ExistingJournal, Interrupt, Journal, Outcome, Problem, Run, Runner, Status, Trail,
};
pub use drive::{Ended, Input, Line, Report, count, drive, limit_flag, limit_reached, stopped};
pub use error::{Error, ErrorKind};
pub use wiring::{Options, Proposals, Services, Wired, Wiring};

/// A definition from its JSON (`name` says where it came from, for errors), checked.
///
/// # Errors
///
/// [`Error::NotADefinition`] (JSON not shaped like one), [`Error::Definition`] (its problems,
/// each at its pointer), [`Error::Fsm`] (a definition that cannot be built).
pub fn parse(value: Value, name: &str) -> Result<Fsm, Error> {
    let definition: Definition =
        serde_json::from_value(value).map_err(|error| Error::NotADefinition {
            name: name.to_owned(),
            error,
        })?;
    match Fsm::new(definition) {
        Ok(fsm) => Ok(fsm),
        Err(claij_fsm::Error::Definition(e)) => Err(Error::Definition(e)),
        Err(e) => Err(Error::Fsm(e)),
    }
}

/// A machine and the sub-FSM files its `fsm` states name (each with its own), ready to be wired.
#[derive(Debug)]
pub struct Machine {
    fsm: Fsm,
    subs: Vec<SubDefinition>,
}

impl Machine {
    /// A machine that names no sub-FSM file (built-in sub-FSMs need none).
    #[must_use]
    pub fn new(fsm: Fsm) -> Self {
        Machine {
            fsm,
            subs: Vec::new(),
        }
    }

    /// A machine with its sub-FSMs, as a journal's header or a Restate request carries them.
    #[must_use]
    pub fn with_subs(fsm: Fsm, subs: Vec<SubDefinition>) -> Self {
        Machine { fsm, subs }
    }

    /// The definition file at `path`, checked, with the sub-FSM files it names.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] or [`Error::Json`] (a file that cannot be read or is not JSON), and
    /// [`parse`]'s and [`Machine::from_fsm`]'s.
    pub fn load(path: &Path) -> Result<Self, Error> {
        let value = read_json(path)?;
        let fsm = parse(value, &path.display().to_string())?;
        Self::from_fsm(fsm, Some(path))
    }

    /// `fsm` with the sub-FSM files it names, relative to `file`, the file it was read from
    /// (`None`: it came from elsewhere, stdin; relative to the current directory).
    ///
    /// # Errors
    ///
    /// [`Error::Definition`] at the pointer of the state naming a sub-FSM: a cycle of files, a
    /// file that is no valid definition, a built-in sub-FSM without its models;
    /// [`Error::Config`], [`Error::Io`] or [`Error::Json`]: a file that cannot be read.
    pub fn from_fsm(fsm: Fsm, file: Option<&Path>) -> Result<Self, Error> {
        match subfsm::load(file, fsm.definition())? {
            Ok(subs) => Ok(Machine { fsm, subs }),
            Err(problems) => Err(Error::Definition(problems)),
        }
    }

    /// The machine a journal carries, and the schema extensions it saved (a resumed run's
    /// proposals go on from them).
    ///
    /// # Errors
    ///
    /// [`Error::Fsm`]: the journal cannot be read; [`Error::Config`]: it carries no definition.
    pub fn from_journal(path: &Path) -> Result<(Self, Option<claij_schema::SavedRegistry>), Error> {
        let (header, _) = claij_fsm::journal::read(path)?;
        let definition = header.definition.ok_or_else(|| {
            Error::Config(format!(
                "{}: the journal does not carry its FSM definition",
                path.display()
            ))
        })?;
        let saved = claij_fsm::journal::read_extensions(path)?;
        let machine = Machine {
            fsm: Fsm::new(definition)?,
            subs: header.sub_fsms,
        };
        Ok((machine, saved))
    }

    /// The machine.
    #[must_use]
    pub fn fsm(&self) -> &Fsm {
        &self.fsm
    }

    /// Its definition.
    #[must_use]
    pub fn definition(&self) -> &Definition {
        self.fsm.definition()
    }

    /// The sub-FSM files it names, each with its own.
    #[must_use]
    pub fn subs(&self) -> &[SubDefinition] {
        &self.subs
    }

    /// Whether a machine of the tree runs the built-in vote (which activates approved schema
    /// extensions: a run that votes wants [`Proposals`]).
    #[must_use]
    pub fn votes(&self) -> bool {
        subfsm::runs_vote(self.fsm.definition(), &self.subs)
    }
}

/// A JSON file, at most [`crate::fs::MAX_INPUT_BYTES`]: `cannot read FILE: ...`, `FILE: invalid
/// JSON: ...`.
fn read_json(path: &Path) -> Result<Value, Error> {
    let what = || format!("cannot read {}", path.display());
    let text = crate::fs::read_file_capped(path, crate::fs::MAX_INPUT_BYTES, "a definition file")
        .map_err(|source| match source.kind() {
        std::io::ErrorKind::InvalidData
            if source
                .get_ref()
                .is_some_and(|e| e.is::<std::string::FromUtf8Error>()) =>
        {
            Error::Io {
                what: format!("{}: invalid UTF-8", what()),
                source,
            }
        }
        _ => Error::Io {
            what: what(),
            source,
        },
    })?;
    serde_json::from_str(&text).map_err(|source| Error::Json {
        what: format!("{}: invalid JSON", path.display()),
        source,
    })
}
