//! The configuration file, `config.toml`: providers and the variables holding their keys, model
//! aliases, defaults, MCP servers and projects; and `claij config show`.
//!
//! ```toml
//! [providers.openrouter]
//! api_key_env = "OPENROUTER_API_KEY"   # the default
//! base_url = "http://127.0.0.1:8080/v1" # a proxy or a test double
//! max_body_bytes = 33554432             # the default (32 MiB): a longer response is an error
//! retry_budget_secs = 120               # the default: retries and server-asked waits fit in it
//! http_version = "auto"                 # the default: HTTP/2 over TLS when offered; "http1",
//!                                       # or "http2" (also on plain http, by prior knowledge)
//! streams_per_connection = 100          # the default: HTTP/2 calls per connection before another
//! models_max_age_secs = 86400           # the default: OpenRouter's cached model list is refetched
//!                                       # when older (`claij models --refresh` fetches it now)
//! model_list = "auto"                   # the default: the first OpenRouter model opened fetches
//!                                       # the list; "off": only `claij models --refresh` does
//!
//! [providers.mylocal]                   # a server of your own: --llm mylocal:MODEL
//! kind = "openai-compatible"            # llama.cpp, vLLM, Ollama's /v1, LM Studio
//! base_url = "http://127.0.0.1:8080/v1" # required
//! api_key_env = "MYLOCAL_KEY"           # optional: no key is sent when unset
//! structured_output = "json_object_schema" # optional: json_schema, json_object_schema,
//!                                       # ollama_format, tools, prompted; default: detected
//!
//! [providers.openai]                   # through a gateway (Helicone here)
//! base_url = "https://oai.helicone.ai/v1"
//! headers = { "Helicone-Auth" = "Bearer ${HELICONE_API_KEY}" }
//!
//! [providers.azure]                     # Azure OpenAI: --llm azure:gpt-4o (the deployment)
//! kind = "openai-compatible"
//! base_url = "https://RESOURCE.openai.azure.com/openai/deployments/gpt-4o"
//! api_key_env = "AZURE_OPENAI_API_KEY"
//! auth_header = "api-key"               # the key, bare, in this header (not Authorization)
//! query = { "api-version" = "2024-10-21" }
//!
//! [aliases]
//! fast = "openrouter:google/gemini-2.5-flash"
//! tiny = "local"
//!
//! [defaults]
//! llm = "claude-sonnet"
//! max_retries = 2
//! mode = "auto"
//!
//! [mcpServers.fs]
//! command = "mcp-server-filesystem"
//! args = ["/srv/docs"]
//!
//! [projects.docs]
//! services = ["fs"]
//!
//! [models."openai:gpt-4o-mini"]          # over the imported and built-in prices (see [`models`])
//! price = { input = 0.15, output = 0.60, cached_input = 0.075 }
//!
//! [memory]                              # the conversation memory (see [`memory`] for every key)
//! strategy = "recall"                   # bounded (the default), window, hierarchical, recall
//!
//! [restate]                             # `claij serve restate`: serve only requests the Restate
//! identity_keys = ["publickeyv1_ChjENKeMvCtRnqG2mrBK1HmPKufgFUc98K8B3ononQvp"] # server signed
//! ```
//!
//! Every provider entry takes `headers` and `query` (added to every request) and `auth_header`; a
//! value names environment variables as `${NAME}` (`$$` is a `$`), read when the provider is opened
//! (unset: an error naming the variable and the entry). Values that name a variable, and values of
//! names that look secret (`auth`, `key`, `token`, ...), are secret: `config show` prints `***`. A
//! header claij sets itself (`Content-Type`, `User-Agent`, ...) is refused. See [`gateway`].
//!
//! Where ([`locate`], [`Settings::from_env`]): the file `--config FILE` names (every command that reads
//! the configuration takes it), else the one `$CLAIJ_CONFIG` names (a named file must exist), else
//! `$XDG_CONFIG_HOME/claij/config.toml`, else `$HOME/.config/claij/config.toml`, when it exists (no
//! file means the defaults). A file whose first character is `{` is JSON in the common `.mcp.json`
//! shape (`{"mcpServers": {...}, "projects": {...}, "roots": [...]}`, `claij_mcp::McpConfig`),
//! which holds only the MCP part; any other is TOML. Every error names the file, the line and the
//! key path (`providers.openrouter.base_url`).
//!
//! The TOML settings (providers, aliases, defaults, proposals, memory, restate) come from the first
//! TOML file of `--config`, `$CLAIJ_CONFIG` and the usual `config.toml`. The MCP part
//! (`mcpServers`, `projects`, `roots`) comes whole from one file, the first of:
//! 1. the file `--config` names, else the one `$CLAIJ_CONFIG` names, TOML or JSON;
//! 2. `.mcp.json` in the working directory, when it exists;
//! 3. the usual `config.toml`.
//!
//! [`Settings::mcp_path`] is that file, and every message about a server, a service or a project
//! names it (or, when there is none, the files looked for).

pub mod gateway;
pub mod memory;
mod models;
mod show;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::error::{Error, ErrorKind, Result};
use claij_backends::http::HttpVersion;
use claij_backends::openai::StructuredDialect;
use claij_interceptors::StructuredMode;
#[cfg(feature = "mcp")]
use claij_mcp::McpConfig;
use toml::{Table, Value};

use crate::model::{self as llm, Llm, Provider};

pub use self::gateway::Gateway;
pub use self::models::{ModelPrice, price_key};
pub use self::show::Redacted;

/// The built-in aliases (the design's model table): name, `provider:model` or `local`.
pub const BUILTIN_ALIASES: [(&str, &str); 9] = [
    ("gemini-flash", "openrouter:google/gemini-2.5-flash"),
    ("claude-sonnet", "openrouter:anthropic/claude-sonnet-4.5"),
    ("claude-opus", "openrouter:anthropic/claude-opus-4.5"),
    ("gpt-5", "openrouter:openai/gpt-5.1"),
    ("grok", "openrouter:x-ai/grok-4.1-fast"),
    ("llama-maverick", "openrouter:meta-llama/llama-4-maverick"),
    ("kimi", "openrouter:moonshotai/kimi-k2:free"),
    ("qwen-7b", "openrouter:qwen/qwen-2.5-7b-instruct"),
    ("local", "local"),
];

/// The alias of the default remote model (used without `--llm` when OpenRouter's key is set).
pub const DEFAULT_REMOTE_ALIAS: &str = "gemini-flash";

/// When a conversation's schema extensions are proposed for compaction: once the prompt
/// rendering of the schema they compose (o200k_base tokens) is longer than this.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactBudget {
    /// Proposed past this many tokens.
    Tokens(usize),
    /// Never proposed by itself (`claij schema compact` still proposes one).
    Off,
}

impl CompactBudget {
    /// 120 tokens: the base schema renders to 28 (o200k_base), ten short extensions to about 150.
    /// A compaction is proposed only when it rewrites something, so a lean schema past the
    /// budget is left alone.
    pub const DEFAULT: Self = Self::Tokens(crate::extensions::DEFAULT_BUDGET);

    /// Whether this build can honour the budget (`tokens`: whether claij's feature `tokens` is
    /// on, `cfg!(feature = "tokens")`): a budget in tokens needs them counted, so without the
    /// feature it is refused with why (the caller names the key), never ignored; `off` needs
    /// nothing.
    ///
    /// # Errors
    ///
    /// A budget in tokens without the feature.
    pub fn honoured(self, tokens: bool) -> std::result::Result<Self, String> {
        match self {
            Self::Tokens(n) if !tokens => Err(format!(
                "{n} tokens cannot be counted: this build of claij has no feature `tokens` \
                 (build it with `tokens`, or set \"off\")"
            )),
            _ => Ok(self),
        }
    }
}

impl std::str::FromStr for CompactBudget {
    type Err = String;

    /// `off`, or a number of tokens above 0.
    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "off" => Ok(Self::Off),
            _ => match text.parse::<usize>() {
                Ok(n) if n > 0 => Ok(Self::Tokens(n)),
                _ => Err(format!(
                    "expected a number of tokens above 0, or \"off\" (got {text:?})"
                )),
            },
        }
    }
}

impl std::fmt::Display for CompactBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Tokens(n) => write!(f, "{n}"),
            Self::Off => f.write_str("off"),
        }
    }
}

/// The effective configuration: the file's settings over the built-in ones.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The file read; `None` when no file exists (the defaults apply).
    pub path: Option<PathBuf>,
    /// One entry per provider, in [`Provider::ALL`] order.
    providers: Vec<ProviderSettings>,
    /// Every alias, built-in and from the file.
    aliases: BTreeMap<String, Alias>,
    /// `[defaults]`.
    pub defaults: Defaults,
    /// `[proposals] voters`: who votes on a proposed schema extension (`--approve vote` without
    /// `--voters`), each checked when the file is read.
    pub voters: Vec<String>,
    /// `[proposals] compact_budget`: when a conversation's schema extensions are proposed for
    /// compaction; `None` when the file does not say ([`CompactBudget::DEFAULT`]). A budget in
    /// tokens is refused when read by a build without the feature `tokens`.
    pub compact_budget: Option<CompactBudget>,
    /// `[memory]`: the conversation memory's strategy and sizes ([`memory`]).
    pub memory: memory::MemorySettings,
    /// `mcpServers`, `projects` and `roots`, when the file they come from has any of them.
    #[cfg(feature = "mcp")]
    pub mcp: Option<McpConfig>,
    /// The file the MCP part was read from (see the module docs); `None` when no file was.
    pub mcp_path: Option<PathBuf>,
    /// The files the MCP part was looked for in, in order (for messages).
    mcp_looked: Vec<PathBuf>,
    /// Providers of the user's own (`kind = "openai-compatible"`), by name.
    compatible: BTreeMap<String, CompatibleSettings>,
    /// `[models."provider:model"] price`: prices over the imported and built-in ones.
    pub model_prices: Vec<ModelPrice>,
    /// `[restate]`: what `claij serve restate` takes from the file.
    pub restate: RestateSettings,
    /// Where `claij models prices --import` keeps its prices (claij's data directory), when known.
    pub data_dir: Option<PathBuf>,
    /// The price table, built on first use ([`Settings::prices`]).
    prices: OnceLock<Result<Arc<claij_backends::ModelTable>, (crate::ErrorKind, String)>>,
}

/// The largest `models_max_age_secs`: a year.
pub const MAX_MODELS_MAX_AGE_SECS: u64 = 365 * 24 * 60 * 60;

/// The `kind` of a provider entry of the user's own.
pub const COMPATIBLE_KIND: &str = "openai-compatible";

/// `[restate]`: a Restate worker's settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RestateSettings {
    /// `identity_keys`: the Restate servers' request-identity public keys (`publickeyv1_...`) a
    /// worker serves requests signed with, as written (checked when a worker starts).
    pub identity_keys: Vec<String>,
    /// Where `identity_keys` is (`FILE:LINE: restate.identity_keys`), for messages.
    pub identity_keys_at: Option<String>,
}

/// A provider of the user's own: an OpenAI-compatible server (`kind = "openai-compatible"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompatibleSettings {
    /// The entry's name, as `--llm NAME:MODEL` uses it.
    pub name: String,
    /// The server's base URL, up to and including `/v1`.
    pub base_url: String,
    /// The variable holding a key, if the server wants one (unset or empty: no key is sent).
    pub api_key_env: Option<String>,
    /// `max_body_bytes`, as for a built-in provider.
    pub max_body_bytes: Option<u64>,
    /// `retry_budget_secs`, as for a built-in provider.
    pub retry_budget: Option<Duration>,
    /// `http_version`, as for a built-in provider.
    pub http_version: Option<HttpVersion>,
    /// `streams_per_connection`, as for a built-in provider.
    pub streams_per_connection: Option<u32>,
    /// How the server takes structured output; `None`: `json_schema`, falling back (and
    /// remembering) when the server rejects it.
    pub structured_output: Option<StructuredDialect>,
    /// `headers`, `query` and `auth_header`.
    pub gateway: Gateway,
}

/// How to reach one provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderSettings {
    /// Which provider.
    pub provider: Provider,
    /// The environment variable holding its key.
    pub api_key_env: String,
    /// Another base URL than the provider's own (a proxy, a compatible server, a test double).
    pub base_url: Option<String>,
    /// `max_body_bytes`: the most bytes one response (or one stream) may have; `None`: the
    /// backend's default, 32 MiB.
    pub max_body_bytes: Option<u64>,
    /// `retry_budget_secs`: the longest a call may take with its retries and the waits the server
    /// asks for; `None`: the backend's default, 120 s.
    pub retry_budget: Option<Duration>,
    /// `http_version`: `auto` (HTTP/2 over TLS when the server offers it), `http1` or `http2`
    /// (plain `http://` too, by prior knowledge); `None`: the backend's default, `auto`.
    pub http_version: Option<HttpVersion>,
    /// `streams_per_connection`: the most calls one HTTP/2 connection carries before another
    /// opens; `None`: the backend's default, 100.
    pub streams_per_connection: Option<u32>,
    /// `models_max_age_secs` (OpenRouter only): how old its cached model list may be before it is
    /// fetched again; `None`: a day (`openrouter::DEFAULT_MAX_AGE`).
    pub models_max_age: Option<Duration>,
    /// `model_list` (OpenRouter only): whether opening a model fetches its model list when none is
    /// cached for this base URL, or a stale one.
    pub model_list: ModelList,
    /// `headers`, `query` and `auth_header`.
    pub gateway: Gateway,
}

/// `[providers.openrouter] model_list`: whether opening an OpenRouter model may fetch its model
/// list.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ModelList {
    /// `"auto"`: fetched when no list is cached for the base URL, or the cached one is stale.
    #[default]
    Auto,
    /// `"off"`: never fetched on opening (a proxy that blocks it): a cached list is used, however
    /// old; `claij models --refresh` still fetches it.
    Off,
}

impl ModelList {
    /// The value as the file writes it.
    pub fn name(self) -> &'static str {
        match self {
            ModelList::Auto => "auto",
            ModelList::Off => "off",
        }
    }
}

/// What an alias stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alias {
    /// The model.
    pub llm: Llm,
    /// Where it was defined.
    pub origin: Origin,
}

/// Where an alias comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// claij's own table.
    BuiltIn,
    /// The configuration file (possibly replacing a built-in one).
    File {
        /// Whether a built-in alias of that name exists.
        overrides: bool,
    },
}

/// `[defaults]`: what a command uses when its flags do not say.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Defaults {
    /// The model (an alias, `local` or `provider:model`), checked when the file is read.
    pub llm: Option<String>,
    /// Retries after the first attempt when a reply is invalid.
    pub max_retries: Option<usize>,
    /// How the schema reaches the model.
    pub mode: Option<StructuredMode>,
    /// The longest reply searched for JSON, in bytes.
    pub max_reply_bytes: Option<usize>,
}

/// A resolved `--llm` value: the model and the words a message should use for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The model.
    pub llm: Llm,
    /// What the user wrote (`gpt-5`, `openai:gpt-5`).
    pub name: String,
}

impl Default for Settings {
    fn default() -> Self {
        let providers = Provider::ALL
            .into_iter()
            .map(|provider| ProviderSettings {
                provider,
                api_key_env: provider.key_var().to_owned(),
                base_url: None,
                max_body_bytes: None,
                retry_budget: None,
                http_version: None,
                streams_per_connection: None,
                models_max_age: None,
                model_list: ModelList::Auto,
                gateway: Gateway::default(),
            })
            .collect();
        let aliases = BUILTIN_ALIASES
            .into_iter()
            .filter_map(|(name, target)| {
                let llm = llm::parse(target).ok()?;
                let origin = Origin::BuiltIn;
                Some((name.to_owned(), Alias { llm, origin }))
            })
            .collect();
        Self {
            path: None,
            providers,
            aliases,
            defaults: Defaults::default(),
            voters: Vec::new(),
            compact_budget: None,
            memory: memory::MemorySettings::default(),
            #[cfg(feature = "mcp")]
            mcp: None,
            mcp_path: None,
            mcp_looked: Vec::new(),
            compatible: BTreeMap::new(),
            model_prices: Vec::new(),
            restate: RestateSettings::default(),
            data_dir: None,
            prices: OnceLock::new(),
        }
    }
}

/// Who named the configuration file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Namer {
    /// `--config FILE`.
    Flag,
    /// `$CLAIJ_CONFIG`.
    Env,
}

impl Namer {
    fn as_str(self) -> &'static str {
        match self {
            Namer::Flag => "--config",
            Namer::Env => "CLAIJ_CONFIG",
        }
    }
}

/// Where the configuration is read from ([`locate`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Places {
    /// The file `--config` names, which must exist.
    pub flag: Option<PathBuf>,
    /// The file `$CLAIJ_CONFIG` names, which must exist when it is read (not when `--config` names
    /// a TOML file, which is the whole configuration).
    pub env: Option<PathBuf>,
    /// `config.toml` in its usual place, read when it exists.
    pub usual: Option<PathBuf>,
    /// `.mcp.json` in the working directory, read (when no file is named) if it exists.
    pub project: Option<PathBuf>,
}

/// Bound of a configuration file: 1 MiB.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// The name of the MCP configuration file looked for in the working directory.
pub const PROJECT_MCP_FILE: &str = ".mcp.json";

impl Settings {
    /// The settings the environment names: the file `$CLAIJ_CONFIG` names, else the usual
    /// `config.toml` when it exists, else the defaults (and the MCP part, see the module docs);
    /// claij's data directory from `$XDG_DATA_HOME` or `$HOME`.
    ///
    /// # Errors
    ///
    /// A file that cannot be read or is invalid; a named file that does not exist.
    pub fn from_env() -> Result<Self> {
        Self::from_env_with(None)
    }

    /// [`Settings::from_env`], `file` (the command line's `--config`) first when given.
    ///
    /// # Errors
    ///
    /// As [`Settings::from_env`].
    pub fn from_env_with(file: Option<&Path>) -> Result<Self> {
        let cwd = std::env::current_dir().ok();
        let places = locate(file, |name| std::env::var_os(name), cwd.as_deref());
        let mut settings = Self::load_from(&places)?;
        settings.data_dir = data_dir();
        Ok(settings)
    }

    /// The settings of the file at `path` (TOML, or JSON in the `.mcp.json` shape for the MCP
    /// part only), without looking anywhere else; no data directory.
    ///
    /// # Errors
    ///
    /// The file does not exist, cannot be read or is invalid (file, line and key path).
    pub fn from_file(path: &Path) -> Result<Self> {
        Self::load_from(&Places {
            flag: Some(path.to_owned()),
            ..Places::default()
        })
    }

    /// Settings built in code ([`SettingsBuilder`]), checked as a file is.
    #[must_use]
    pub fn builder() -> SettingsBuilder {
        SettingsBuilder::default()
    }

    /// The price of every known model: the configuration's `[models]` over the prices `claij
    /// models prices --import` keeps in the data directory over the built-in ones; built once.
    ///
    /// # Errors
    ///
    /// The imported price file cannot be read or is not a price list (the message names it).
    pub fn prices(&self) -> Result<Arc<claij_backends::ModelTable>> {
        self.prices
            .get_or_init(|| {
                crate::prices::table(self)
                    .map(Arc::new)
                    .map_err(|e| (e.kind(), crate::error_chain(&e)))
            })
            .clone()
            .map_err(|(kind, message)| Error::with_kind(kind, message))
    }

    /// The configuration read from `places` (see the module docs for the order).
    ///
    /// # Errors
    ///
    /// As [`Settings::from_env`].
    pub fn load_from(places: &Places) -> Result<Self> {
        let named: Vec<(&PathBuf, Namer)> = places
            .flag
            .iter()
            .map(|p| (p, Namer::Flag))
            .chain(places.env.iter().map(|p| (p, Namer::Env)))
            .collect();
        if let Some(&(path, namer)) = named.first() {
            let text = read_named(path, namer)?;
            if !is_json(&text) {
                return Self::parse(&text, path);
            }
            // The MCP part; the settings from the next named file if it is TOML, else the usual.
            let mut settings = match named.get(1) {
                Some(&(next, namer)) => match read_named(next, namer)? {
                    text if !is_json(&text) => Self::parse(&text, next)?,
                    _ => Self::read_usual(places)?,
                },
                None => Self::read_usual(places)?,
            };
            settings.set_mcp(&text, path, false)?;
            settings.mcp_path = Some(path.clone());
            settings.mcp_looked = vec![path.clone()];
            return Ok(settings);
        }
        let mut settings = Self::read_usual(places)?;
        settings.mcp_looked = places
            .project
            .iter()
            .chain(&places.usual)
            .cloned()
            .collect();
        // Without the `mcp` feature the project's `.mcp.json` is nothing to this build.
        let project = places.project.as_ref().filter(|_| cfg!(feature = "mcp"));
        let Some(project) = project else {
            return Ok(settings);
        };
        let Some(text) = read_config(project)? else {
            return Ok(settings);
        };
        settings.set_mcp(&text, project, true)?;
        settings.mcp_path = Some(project.clone());
        Ok(settings)
    }

    /// The MCP part read from the JSON file at `path` (its text), over the TOML file's; `warn`:
    /// say so when the TOML file's servers are hidden.
    #[cfg(feature = "mcp")]
    fn set_mcp(&mut self, text: &str, path: &Path, warn: bool) -> Result<()> {
        let mcp = McpConfig::from_json(text)
            .map_err(|e| Error::config(format!("{}: {e}", path.display())))?;
        if let (true, Some(shadowed), Some(toml)) = (warn, &self.mcp, &self.path)
            && !shadowed.servers.is_empty()
        {
            warn_shadowed(path, toml);
        }
        self.mcp = Some(mcp);
        Ok(())
    }

    /// A build without the `mcp` feature reads no MCP part: a JSON file named as the
    /// configuration is refused.
    #[cfg(not(feature = "mcp"))]
    fn set_mcp(&mut self, _text: &str, path: &Path, _warn: bool) -> Result<()> {
        Err(Error::unavailable(format!(
            "{}: an MCP configuration (the .mcp.json shape), which this build of claij does not \
             read (feature `mcp`)",
            path.display()
        )))
    }

    /// The usual `config.toml` when it exists, else the defaults.
    fn read_usual(places: &Places) -> Result<Self> {
        match &places.usual {
            Some(usual) => Self::read_optional(usual),
            None => Ok(Self::default()),
        }
    }

    /// The TOML file at `path` when it exists, else the defaults.
    fn read_optional(path: &Path) -> Result<Self> {
        match read_config(path)? {
            Some(text) => Self::parse(&text, path),
            None => Ok(Self::default()),
        }
    }

    /// Why there is no MCP server to use, naming the file read or the files looked for (`no
    /// mcpServers in FILE`, `no enabled MCP server in FILE`, `no mcpServers: neither A nor B
    /// exists`), and how to write one.
    #[cfg(feature = "mcp")]
    pub fn no_servers(&self) -> String {
        let hint = "(`claij mcp servers > .mcp.json` writes one for the servers `cargo xtask \
                    mcp-servers` installs)";
        let Some(path) = &self.mcp_path else {
            let looked: Vec<String> = self
                .mcp_looked
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            return match looked.as_slice() {
                [] => format!("no mcpServers: no configuration file (HOME is not set) {hint}"),
                [one] => format!("no mcpServers: {one} does not exist {hint}"),
                many => format!(
                    "no mcpServers: neither {} exists {hint}",
                    many.join(" nor ")
                ),
            };
        };
        let what = if self.mcp.is_some() {
            "no enabled MCP server"
        } else {
            "no mcpServers"
        };
        // The files looked for before this one did not exist.
        let missing: Vec<String> = self
            .mcp_looked
            .iter()
            .take_while(|p| *p != path)
            .map(|p| p.display().to_string())
            .collect();
        if missing.is_empty() {
            format!("{what} in {} {hint}", path.display())
        } else {
            format!(
                "{what} in {} and no {} {hint}",
                path.display(),
                missing.join(" nor ")
            )
        }
    }

    /// The configured MCP servers, or the error [`Settings::no_servers`] says.
    ///
    /// # Errors
    ///
    /// No enabled server in the MCP part (or no MCP part).
    #[cfg(feature = "mcp")]
    pub fn mcp_servers(&self) -> Result<&McpConfig> {
        self.mcp
            .as_ref()
            .filter(|m| !m.servers.is_empty())
            .ok_or_else(|| Error::config(self.no_servers()))
    }

    /// The project `name` of the MCP part.
    ///
    /// # Errors
    ///
    /// No such project: the message names the file and the projects it has.
    #[cfg(feature = "mcp")]
    pub fn mcp_project(&self, name: &str) -> Result<&claij_mcp::Project> {
        let mcp = self.mcp_servers()?;
        mcp.project(name).ok_or_else(|| {
            let file = self
                .mcp_path
                .as_ref()
                .map_or_else(String::new, |p| format!(" in {}", p.display()));
            let names: Vec<&str> = mcp.projects.keys().map(String::as_str).collect();
            let known = if names.is_empty() {
                "it has none".to_owned()
            } else {
                format!("its projects: {}", names.join(", "))
            };
            Error::config(format!("no project `{name}`{file} ({known})"))
        })
    }

    /// Parses the text of the file at `path` (named in errors).
    ///
    /// # Errors
    ///
    /// Invalid TOML, an unknown key, a value of the wrong type, an alias or default model that does
    /// not resolve, invalid MCP servers or projects: `path:line: key.path: what`.
    pub fn parse(text: &str, path: &Path) -> Result<Self> {
        let table: Table = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|span| line_at(text, span.start));
            Error::config(format!("{}: {}", at(path, line), e.message().trim()))
        })?;
        let mut config = Self {
            path: Some(path.to_owned()),
            mcp_path: Some(path.to_owned()),
            mcp_looked: vec![path.to_owned()],
            ..Self::default()
        };
        let fail = |keys: &[&str], message: &str| {
            let line = line_of(text, keys);
            Error::config(format!("{}: {}: {message}", at(path, line), keys.join(".")))
        };
        // Aliases may name the file's own providers, so those come first.
        if let Some(providers) = table.get("providers") {
            config.read_providers(providers, &fail)?;
        }
        for (key, value) in &table {
            match key.as_str() {
                "providers" => {}
                "aliases" => config.read_aliases(value, &fail)?,
                "defaults" => config.read_defaults(value, &fail)?,
                "proposals" => config.read_proposals(value, &fail)?,
                "memory" => config.read_memory(value, &fail)?,
                "restate" => config.read_restate(value, text, path, &fail)?,
                "models" | "mcpServers" | "projects" | "roots" | "samplingLlm" | "elicitation" => {}
                other => {
                    return Err(fail(
                        &[other],
                        "unknown key (expected providers, aliases, defaults, proposals, memory, restate, models, mcpServers, projects, roots, samplingLlm or elicitation)",
                    ));
                }
            }
        }
        // Model keys may be aliases, so the aliases come first.
        if let Some(models) = table.get("models") {
            config.read_models(models, path, &fail)?;
        }
        if let Some(llm) = &config.defaults.llm {
            config
                .resolve_text(llm)
                .map_err(|e| fail(&["defaults", "llm"], &e))?;
        }
        #[cfg(feature = "mcp")]
        {
            config.mcp = read_mcp(&table, &fail)?;
        }
        Ok(config)
    }

    /// The settings of `provider`.
    pub fn provider(&self, provider: Provider) -> &ProviderSettings {
        let index = Provider::ALL
            .iter()
            .position(|p| *p == provider)
            .unwrap_or(0);
        &self.providers[index]
    }

    /// Every provider's settings.
    pub fn providers(&self) -> &[ProviderSettings] {
        &self.providers
    }

    /// Every alias, by name.
    pub fn aliases(&self) -> &BTreeMap<String, Alias> {
        &self.aliases
    }

    /// The provider of the user's own called `name`.
    pub fn compatible(&self, name: &str) -> Option<&CompatibleSettings> {
        self.compatible.get(name)
    }

    /// Every provider of the user's own, by name.
    pub fn compatible_providers(&self) -> &BTreeMap<String, CompatibleSettings> {
        &self.compatible
    }

    /// Resolves a `--llm` value: an alias, `local`, or `provider:model`.
    ///
    /// # Errors
    ///
    /// A message for the user: the value is neither an alias nor `provider:model`, or names an unknown
    /// provider.
    pub fn resolve(&self, text: &str) -> Result<Resolved> {
        self.resolve_text(text).map_err(Error::model)
    }

    /// [`Settings::resolve`], the message alone.
    pub(crate) fn resolve_text(&self, text: &str) -> Result<Resolved, String> {
        let name = text.to_owned();
        if let Some(alias) = self.aliases.get(text) {
            return Ok(Resolved {
                llm: alias.llm.clone(),
                name,
            });
        }
        if !text.contains(':') {
            let names: Vec<&str> = self.aliases.keys().map(String::as_str).collect();
            return Err(format!(
                "unknown model `{text}`: expected an alias ({}) or PROVIDER:MODEL with PROVIDER one of {}",
                names.join(", "),
                provider_names()
            ));
        }
        self.parse_llm(text).map(|llm| Resolved { llm, name })
    }

    /// `local`, `PROVIDER:MODEL`, or `NAME:MODEL` for a provider of the file's own.
    fn parse_llm(&self, text: &str) -> Result<Llm, String> {
        if let Some((name, model)) = text.split_once(':')
            && self.compatible.contains_key(name)
        {
            if model.trim().is_empty() {
                return Err(format!("no model after `{name}:`"));
            }
            return Ok(Llm::Compatible {
                provider: name.to_owned(),
                model: model.to_owned(),
            });
        }
        let own: Vec<&str> = self.compatible.keys().map(String::as_str).collect();
        llm::parse_naming(text, &own)
    }

    fn read_providers(&mut self, value: &Value, fail: &Fail<'_>) -> Result<()> {
        let providers = as_table(value, &["providers"], fail)?;
        for (name, entry) in providers {
            let keys = ["providers", name.as_str()];
            let Some(index) = Provider::ALL.iter().position(|p| p.name() == name) else {
                self.read_compatible(name, entry, fail)?;
                continue;
            };
            let settings = &mut self.providers[index];
            for (key, value) in as_table(entry, &keys, fail)? {
                let keys = ["providers", name.as_str(), key.as_str()];
                match key.as_str() {
                    "kind" | "structured_output" => {
                        return Err(fail(
                            &keys,
                            &format!(
                                "`{key}` is for providers of your own ({name} is built in): \
                                 name the entry otherwise, e.g. [providers.my{name}]"
                            ),
                        ));
                    }
                    "api_key_env" => settings.api_key_env = read_key_var(value, &keys, fail)?,
                    "base_url" => settings.base_url = Some(read_base_url(value, &keys, fail)?),
                    "max_body_bytes" => {
                        settings.max_body_bytes = Some(read_body_limit(value, &keys, fail)?);
                    }
                    "retry_budget_secs" => {
                        settings.retry_budget = Some(read_retry_budget(value, &keys, fail)?);
                    }
                    "http_version" => {
                        settings.http_version = Some(read_http_version(value, &keys, fail)?);
                    }
                    "streams_per_connection" => {
                        settings.streams_per_connection = Some(read_streams(value, &keys, fail)?);
                    }
                    "models_max_age_secs" if settings.provider == Provider::OpenRouter => {
                        let expected = format!("whole seconds from 0 to {MAX_MODELS_MAX_AGE_SECS}");
                        let range = 0..=MAX_MODELS_MAX_AGE_SECS;
                        settings.models_max_age = Some(Duration::from_secs(whole_in(
                            value, range, &expected, &keys, fail,
                        )?));
                    }
                    "model_list" if settings.provider == Provider::OpenRouter => {
                        settings.model_list = match as_str(value, &keys, fail)? {
                            "auto" => ModelList::Auto,
                            "off" => ModelList::Off,
                            _ => return Err(fail(&keys, "expected \"auto\" or \"off\"")),
                        };
                    }
                    "headers" | "query" | "auth_header" => {
                        settings.gateway.read(value, &keys, fail)?;
                    }
                    _ => {
                        let own = if settings.provider == Provider::OpenRouter {
                            "models_max_age_secs, model_list, "
                        } else {
                            ""
                        };
                        return Err(fail(
                            &keys,
                            &format!(
                                "unknown key (expected api_key_env, base_url, max_body_bytes, \
                                 retry_budget_secs, http_version, streams_per_connection, \
                                 {own}headers, query or auth_header)"
                            ),
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// `[providers.NAME]` for a name that is no built-in provider: an OpenAI-compatible server.
    fn read_compatible(&mut self, name: &str, entry: &Value, fail: &Fail<'_>) -> Result<()> {
        let keys = ["providers", name];
        let table = as_table(entry, &keys, fail)?;
        let Some(kind) = table.get("kind") else {
            return Err(fail(
                &keys,
                &format!(
                    "unknown provider (expected one of {}, or a provider of your own with \
                     kind = \"{COMPATIBLE_KIND}\")",
                    provider_names()
                ),
            ));
        };
        let kind_keys = ["providers", name, "kind"];
        if as_str(kind, &kind_keys, fail)? != COMPATIBLE_KIND {
            return Err(fail(&kind_keys, &format!("expected \"{COMPATIBLE_KIND}\"")));
        }
        if name.is_empty() || name.contains(':') || name == "local" {
            return Err(fail(
                &keys,
                "a provider's name is non-empty, has no `:` and is not `local`",
            ));
        }
        let mut settings = CompatibleSettings {
            name: name.to_owned(),
            base_url: String::new(),
            api_key_env: None,
            max_body_bytes: None,
            retry_budget: None,
            http_version: None,
            streams_per_connection: None,
            structured_output: None,
            gateway: Gateway::default(),
        };
        for (key, value) in table {
            let keys = ["providers", name, key.as_str()];
            match key.as_str() {
                "kind" => {}
                "base_url" => settings.base_url = read_base_url(value, &keys, fail)?,
                "api_key_env" => settings.api_key_env = Some(read_key_var(value, &keys, fail)?),
                "structured_output" => {
                    let text = as_str(value, &keys, fail)?;
                    let dialect = text
                        .parse::<StructuredDialect>()
                        .map_err(|e| fail(&keys, &e.to_string()))?;
                    settings.structured_output = Some(dialect);
                }
                "max_body_bytes" => {
                    settings.max_body_bytes = Some(read_body_limit(value, &keys, fail)?);
                }
                "retry_budget_secs" => {
                    settings.retry_budget = Some(read_retry_budget(value, &keys, fail)?);
                }
                "http_version" => {
                    settings.http_version = Some(read_http_version(value, &keys, fail)?);
                }
                "streams_per_connection" => {
                    settings.streams_per_connection = Some(read_streams(value, &keys, fail)?);
                }
                "headers" | "query" | "auth_header" => {
                    settings.gateway.read(value, &keys, fail)?;
                }
                _ => {
                    return Err(fail(
                        &keys,
                        "unknown key (expected kind, base_url, api_key_env, structured_output, \
                         max_body_bytes, retry_budget_secs, http_version, streams_per_connection, \
                         headers, query or auth_header)",
                    ));
                }
            }
        }
        if settings.base_url.is_empty() {
            return Err(fail(
                &keys,
                &format!("a provider of kind \"{COMPATIBLE_KIND}\" needs base_url"),
            ));
        }
        self.compatible.insert(name.to_owned(), settings);
        Ok(())
    }

    fn read_aliases(&mut self, value: &Value, fail: &Fail<'_>) -> Result<()> {
        for (name, target) in as_table(value, &["aliases"], fail)? {
            let keys = ["aliases", name.as_str()];
            if name.is_empty() || name.contains(':') {
                return Err(fail(&keys, "an alias name is non-empty and has no `:`"));
            }
            let target = as_str(target, &keys, fail)?;
            let llm = self.parse_llm(target).map_err(|e| fail(&keys, &e))?;
            let overrides = BUILTIN_ALIASES.iter().any(|(n, _)| n == name);
            let origin = Origin::File { overrides };
            self.aliases.insert(name.clone(), Alias { llm, origin });
        }
        Ok(())
    }

    /// `[proposals]`: `voters`, a list of models as `--llm` takes them; `compact_budget`, tokens
    /// or `"off"`.
    fn read_proposals(&mut self, value: &Value, fail: &Fail<'_>) -> Result<()> {
        for (key, value) in as_table(value, &["proposals"], fail)? {
            let keys = ["proposals", key.as_str()];
            if key == "compact_budget" {
                let text = match value {
                    Value::Integer(n) => n.to_string(),
                    Value::String(s) => s.clone(),
                    _ => String::new(),
                };
                let budget: CompactBudget = text.parse().map_err(|e: String| fail(&keys, &e))?;
                let budget = budget.honoured(cfg!(feature = "tokens")).map_err(|e| {
                    Error::with_kind(ErrorKind::Unavailable, fail(&keys, &e).to_string())
                })?;
                self.compact_budget = Some(budget);
                continue;
            }
            if key != "voters" {
                return Err(fail(
                    &keys,
                    "unknown key (expected voters or compact_budget)",
                ));
            }
            let Value::Array(voters) = value else {
                return Err(fail(&keys, "expected a list of models"));
            };
            for voter in voters {
                let voter = as_str(voter, &keys, fail)?;
                self.resolve_text(voter).map_err(|e| fail(&keys, &e))?;
                self.voters.push(voter.to_owned());
            }
        }
        Ok(())
    }

    /// `[restate] identity_keys = ["publickeyv1_...", ...]`.
    fn read_restate(
        &mut self,
        value: &Value,
        text: &str,
        path: &Path,
        fail: &Fail<'_>,
    ) -> Result<()> {
        for (key, value) in as_table(value, &["restate"], fail)? {
            let keys = ["restate", key.as_str()];
            if key != "identity_keys" {
                return Err(fail(&keys, "unknown key (expected identity_keys)"));
            }
            let Value::Array(items) = value else {
                return Err(fail(&keys, "expected a list of public keys"));
            };
            for item in items {
                self.restate
                    .identity_keys
                    .push(as_str(item, &keys, fail)?.to_owned());
            }
            let line = line_of(text, &keys);
            self.restate.identity_keys_at = Some(format!("{}: {}", at(path, line), keys.join(".")));
        }
        Ok(())
    }

    fn read_defaults(&mut self, value: &Value, fail: &Fail<'_>) -> Result<()> {
        for (key, value) in as_table(value, &["defaults"], fail)? {
            let keys = ["defaults", key.as_str()];
            match key.as_str() {
                "llm" => self.defaults.llm = Some(as_str(value, &keys, fail)?.to_owned()),
                "max_retries" => {
                    let max = crate::options::MAX_RETRIES;
                    let expected = format!("a whole number from 0 to {max}");
                    self.defaults.max_retries =
                        Some(whole_in(value, 0..=max, &expected, &keys, fail)?);
                }
                "max_reply_bytes" => {
                    let range = crate::options::REPLY_BYTES;
                    let expected = format!(
                        "a whole number of bytes from {} to {}",
                        range.start(),
                        range.end()
                    );
                    self.defaults.max_reply_bytes =
                        Some(whole_in(value, range, &expected, &keys, fail)?);
                }
                "mode" => {
                    let mode = match as_str(value, &keys, fail)? {
                        "auto" => StructuredMode::Auto,
                        "native" => StructuredMode::Native,
                        "tool" => StructuredMode::Tool,
                        "prompted" => StructuredMode::Prompted,
                        _ => {
                            return Err(fail(
                                &keys,
                                "expected one of auto, native, tool, prompted",
                            ));
                        }
                    };
                    self.defaults.mode = Some(mode);
                }
                _ => {
                    return Err(fail(
                        &keys,
                        "unknown key (expected llm, max_retries, max_reply_bytes or mode)",
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Where the configuration is: the file `flag` (`--config`) names, the one `$CLAIJ_CONFIG` names,
/// the usual `config.toml` (`$XDG_CONFIG_HOME/claij/config.toml` for an absolute
/// `XDG_CONFIG_HOME`, else `$HOME/.config/claij/config.toml`), and `.mcp.json` in `cwd`. Empty
/// variables count as unset.
pub fn locate(
    flag: Option<&Path>,
    var: impl Fn(&str) -> Option<OsString>,
    cwd: Option<&Path>,
) -> Places {
    let set = |name: &str| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let usual = set("XDG_CONFIG_HOME")
        .filter(|p| p.is_absolute())
        .or_else(|| set("HOME").map(|home| home.join(".config")))
        .map(|base| base.join("claij").join("config.toml"));
    Places {
        flag: flag.map(Path::to_owned),
        env: set("CLAIJ_CONFIG"),
        usual,
        project: cwd.map(|dir| dir.join(PROJECT_MCP_FILE)),
    }
}

/// The text of a file `--config` or `CLAIJ_CONFIG` names, which must exist.
fn read_named(path: &Path, namer: Namer) -> Result<String> {
    read_config(path)?.ok_or_else(|| {
        Error::config(format!(
            "{} names {}, which does not exist",
            namer.as_str(),
            path.display()
        ))
    })
}

/// The text of the configuration file at `path`; `None` when it does not exist.
fn read_config(path: &Path) -> Result<Option<String>> {
    match crate::fs::read_file_capped(path, MAX_CONFIG_BYTES, "a configuration file") {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(format!("cannot read {}", path.display()), e)),
    }
}

/// Whether a configuration file's text is JSON (the `.mcp.json` shape) rather than TOML: its first
/// character is `{` (no TOML document starts so).
fn is_json(text: &str) -> bool {
    text.trim_start_matches('\u{feff}')
        .trim_start()
        .starts_with('{')
}

/// Says (once per load) that `.mcp.json` in the working directory hides the servers of `toml`.
#[cfg(feature = "mcp")]
fn warn_shadowed(project: &Path, toml: &Path) {
    tracing::warn!(
        used = %project.display(),
        unused = %toml.display(),
        "MCP servers come from {}; the mcpServers of {} are not used (name the file with --config)",
        project.display(),
        toml.display()
    );
}

/// claij's data directory, where `cargo xtask integration` merges the compatibility matrix and
/// `claij mcp login` keeps tokens: `$XDG_DATA_HOME/claij` (an absolute `XDG_DATA_HOME`), else
/// `$HOME/.local/share/claij`; `None` without either. Empty variables count as unset.
pub fn data_dir() -> Option<PathBuf> {
    let set = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let base = set("XDG_DATA_HOME")
        .filter(|p| p.is_absolute())
        .or_else(|| set("HOME").map(|home| home.join(".local").join("share")))?;
    Some(base.join("claij"))
}

/// Builds an error at a key path.
type Fail<'a> = dyn Fn(&[&str], &str) -> Error + 'a;

/// A `base_url` value: an http:// or https:// URL, without a trailing `/`.
fn read_base_url(value: &Value, keys: &[&str], fail: &Fail<'_>) -> Result<String> {
    let url = as_str(value, keys, fail)?;
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(fail(keys, "expected an http:// or https:// URL"));
    }
    Ok(url.trim_end_matches('/').to_owned())
}

/// The least `max_body_bytes` takes: below it no real answer fits.
const MIN_BODY_BYTES: u64 = 1024;
/// The most `retry_budget_secs` takes: a day.
const MAX_RETRY_BUDGET_SECS: u64 = 86_400;

/// A `max_body_bytes` value: a whole number of bytes, at least [`MIN_BODY_BYTES`].
fn read_body_limit(value: &Value, keys: &[&str], fail: &Fail<'_>) -> Result<u64> {
    let expected = format!("a whole number of bytes, at least {MIN_BODY_BYTES}");
    whole_in(value, MIN_BODY_BYTES..=u64::MAX, &expected, keys, fail)
}

/// A `retry_budget_secs` value: whole seconds from 0 (no retry) to [`MAX_RETRY_BUDGET_SECS`].
fn read_retry_budget(value: &Value, keys: &[&str], fail: &Fail<'_>) -> Result<Duration> {
    let expected = format!("whole seconds from 0 to {MAX_RETRY_BUDGET_SECS}");
    whole_in(value, 0..=MAX_RETRY_BUDGET_SECS, &expected, keys, fail).map(Duration::from_secs)
}

/// An `http_version` value: `auto`, `http1` or `http2`.
fn read_http_version(value: &Value, keys: &[&str], fail: &Fail<'_>) -> Result<HttpVersion> {
    as_str(value, keys, fail)?
        .parse::<HttpVersion>()
        .map_err(|e| fail(keys, &e))
}

/// A `streams_per_connection` value: from 1 to 2^31 - 1 (HTTP/2's stream ids).
fn read_streams(value: &Value, keys: &[&str], fail: &Fail<'_>) -> Result<u32> {
    let most = u32::MAX >> 1;
    whole_in(
        value,
        1..=most,
        &format!("a whole number from 1 to {most}"),
        keys,
        fail,
    )
}

/// Every whole-number key: an integer within `range`, else one line saying `expected {expected}`.
fn whole_in<T>(
    value: &Value,
    range: std::ops::RangeInclusive<T>,
    expected: &str,
    keys: &[&str],
    fail: &Fail<'_>,
) -> Result<T>
where
    T: TryFrom<i64> + PartialOrd,
{
    value
        .as_integer()
        .and_then(|n| T::try_from(n).ok())
        .filter(|n| range.contains(n))
        .ok_or_else(|| fail(keys, &format!("expected {expected}")))
}

/// An `api_key_env` value: the name of an environment variable.
fn read_key_var(value: &Value, keys: &[&str], fail: &Fail<'_>) -> Result<String> {
    let var = as_str(value, keys, fail)?;
    if var.is_empty() || var.contains(['=', '\0']) {
        return Err(fail(keys, "expected the name of an environment variable"));
    }
    Ok(var.to_owned())
}

fn provider_names() -> String {
    Provider::ALL.map(Provider::name).join(", ")
}

fn as_table<'v>(value: &'v Value, keys: &[&str], fail: &Fail<'_>) -> Result<&'v Table> {
    value
        .as_table()
        .ok_or_else(|| fail(keys, &format!("expected a table, found {}", kind(value))))
}

fn as_str<'v>(value: &'v Value, keys: &[&str], fail: &Fail<'_>) -> Result<&'v str> {
    value
        .as_str()
        .ok_or_else(|| fail(keys, &format!("expected a string, found {}", kind(value))))
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::String(_) => "a string",
        Value::Integer(_) => "an integer",
        Value::Float(_) => "a float",
        Value::Boolean(_) => "a boolean",
        Value::Datetime(_) => "a datetime",
        Value::Array(_) => "an array",
        Value::Table(_) => "a table",
    }
}

/// `mcpServers`, `projects`, `roots`, `samplingLlm` and `elicitation`, parsed by claij-mcp from
/// their JSON form.
#[cfg(feature = "mcp")]
fn read_mcp(table: &Table, fail: &Fail<'_>) -> Result<Option<McpConfig>> {
    let mut json = serde_json::Map::new();
    for key in [
        "mcpServers",
        "projects",
        "roots",
        "samplingLlm",
        "elicitation",
    ] {
        if let Some(value) = table.get(key) {
            let value = serde_json::to_value(value).map_err(|e| fail(&[key], &e.to_string()))?;
            json.insert(key.to_owned(), value);
        }
    }
    if json.is_empty() {
        return Ok(None);
    }
    if !json.contains_key("mcpServers") {
        json.insert("mcpServers".to_owned(), serde_json::json!({}));
    }
    match McpConfig::from_value(&serde_json::Value::Object(json)) {
        Ok(config) => Ok(Some(config)),
        Err(claij_mcp::Error::Config { pointer, message }) => {
            let keys: Vec<String> = pointer
                .split('/')
                .filter(|k| !k.is_empty())
                .map(|k| k.replace("~1", "/").replace("~0", "~"))
                .collect();
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            Err(fail(&keys, &message))
        }
        Err(e) => Err(fail(&["mcpServers"], &e.to_string())),
    }
}

/// `path:line`, or `path` when the line is unknown.
fn at(path: &Path, line: Option<usize>) -> String {
    match line {
        Some(line) => format!("{}:{line}", path.display()),
        None => path.display().to_string(),
    }
}

/// The 1-based line of byte `offset`.
fn line_at(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

/// The line of the value at `keys` (or of the deepest table on the way that exists).
fn line_of(text: &str, keys: &[&str]) -> Option<usize> {
    use toml::de::{DeTable, DeValue};
    let document = DeTable::parse(text).ok()?;
    let mut table = document.get_ref();
    let mut span = None;
    for key in keys {
        let (_, value) = table.iter().find(|(k, _)| k.get_ref().as_ref() == *key)?;
        span = Some(value.span());
        match value.get_ref() {
            DeValue::Table(inner) => table = inner,
            _ => break,
        }
    }
    span.map(|span| line_at(text, span.start))
}

/// Settings built in code: providers, aliases and defaults, checked as a file's are (an alias
/// must resolve, a provider of one's own needs a `base_url`, ...); errors name the key path
/// (`settings built in code: aliases.fast: ...`).
///
/// ```
/// use claij::settings::Settings;
///
/// let settings = Settings::builder()
///     .compatible("mine", "http://127.0.0.1:8080/v1")
///     .alias("smol", "mine:SmolLM2-135M")
///     .default_llm("smol")
///     .build()?;
/// assert_eq!(settings.resolve("smol")?.llm.to_string(), "mine:SmolLM2-135M");
/// # Ok::<(), claij::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct SettingsBuilder {
    providers: BTreeMap<String, Table>,
    aliases: Table,
    defaults: Table,
    data_dir: Option<PathBuf>,
}

impl SettingsBuilder {
    fn provider_entry(&mut self, provider: &str) -> &mut Table {
        self.providers.entry(provider.to_owned()).or_default()
    }

    /// `provider`'s base URL (a proxy, a gateway, a test double): `providers.NAME.base_url`.
    #[must_use]
    pub fn base_url(mut self, provider: &str, url: &str) -> Self {
        self.provider_entry(provider)
            .insert("base_url".into(), Value::String(url.to_owned()));
        self
    }

    /// The variable holding `provider`'s key: `providers.NAME.api_key_env`.
    #[must_use]
    pub fn key_env(mut self, provider: &str, var: &str) -> Self {
        self.provider_entry(provider)
            .insert("api_key_env".into(), Value::String(var.to_owned()));
        self
    }

    /// An OpenAI-compatible server of one's own called `name` (`name:MODEL` then names its
    /// models): `kind = "openai-compatible"` and its `base_url`.
    #[must_use]
    pub fn compatible(mut self, name: &str, base_url: &str) -> Self {
        let entry = self.provider_entry(name);
        entry.insert("kind".into(), Value::String(COMPATIBLE_KIND.to_owned()));
        entry.insert("base_url".into(), Value::String(base_url.to_owned()));
        self
    }

    /// An alias: `name` stands for `target` (`local`, `provider:model`): `aliases.NAME`.
    #[must_use]
    pub fn alias(mut self, name: &str, target: &str) -> Self {
        self.aliases
            .insert(name.to_owned(), Value::String(target.to_owned()));
        self
    }

    /// The model used when none is named: `defaults.llm`.
    #[must_use]
    pub fn default_llm(mut self, name: &str) -> Self {
        self.defaults
            .insert("llm".into(), Value::String(name.to_owned()));
        self
    }

    /// Retries after an invalid reply: `defaults.max_retries`.
    #[must_use]
    pub fn max_retries(mut self, retries: usize) -> Self {
        let retries = i64::try_from(retries).unwrap_or(i64::MAX);
        self.defaults
            .insert("max_retries".into(), Value::Integer(retries));
        self
    }

    /// claij's data directory (imported prices, the compatibility matrix).
    #[must_use]
    pub fn data_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.data_dir = Some(dir.into());
        self
    }

    /// The settings, checked.
    ///
    /// # Errors
    ///
    /// What a file with the same keys would get (a [`crate::ErrorKind::Config`] naming the key).
    pub fn build(self) -> Result<Settings> {
        let fail = |keys: &[&str], message: &str| {
            Error::config(format!(
                "settings built in code: {}: {message}",
                keys.join(".")
            ))
        };
        let mut settings = Settings::default();
        let providers: Table = self
            .providers
            .into_iter()
            .map(|(name, entry)| (name, Value::Table(entry)))
            .collect();
        settings.read_providers(&Value::Table(providers), &fail)?;
        settings.read_aliases(&Value::Table(self.aliases), &fail)?;
        settings.read_defaults(&Value::Table(self.defaults), &fail)?;
        if let Some(llm) = &settings.defaults.llm {
            settings
                .resolve_text(llm)
                .map_err(|e| fail(&["defaults", "llm"], &e))?;
        }
        settings.data_dir = self.data_dir;
        Ok(settings)
    }
}
