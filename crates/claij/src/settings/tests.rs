//! Unit tests of the configuration file: where it is, parsing, errors with locations, aliases,
//! redaction.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};

#[cfg(feature = "mcp")]
use claij_interceptors::StructuredMode;

#[cfg(feature = "mcp")]
use super::Origin;
use super::{Places, Settings, locate};
use crate::model::{Llm, Provider};

const PATH: &str = "/etc/claij.toml";

fn parse(text: &str) -> Settings {
    Settings::parse(text, Path::new(PATH)).unwrap()
}

#[track_caller]
fn check_error(text: &str, expected: &str) {
    let err = format!("{:#}", Settings::parse(text, Path::new(PATH)).unwrap_err());
    assert_eq!(err, expected, "{text}");
}

fn remote(provider: Provider, model: &str) -> Llm {
    Llm::Remote {
        provider,
        model: model.to_owned(),
    }
}

#[test]
fn where_the_files_are() {
    let var = |vars: &'static [(&'static str, &'static str)]| {
        move |name: &str| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| OsString::from(v))
        }
    };
    let all = &[
        ("CLAIJ_CONFIG", "/c.toml"),
        ("XDG_CONFIG_HOME", "/x"),
        ("HOME", "/h"),
    ];
    let cwd = Some(Path::new("/work"));
    assert_eq!(
        locate(Some(Path::new("f.json")), var(all), cwd),
        Places {
            flag: Some(PathBuf::from("f.json")),
            env: Some(PathBuf::from("/c.toml")),
            usual: Some(PathBuf::from("/x/claij/config.toml")),
            project: Some(PathBuf::from("/work/.mcp.json")),
        }
    );
    let found = locate(
        None,
        var(&[
            ("CLAIJ_CONFIG", ""),
            ("XDG_CONFIG_HOME", "relative"),
            ("HOME", "/h"),
        ]),
        None,
    );
    assert_eq!(
        found,
        Places {
            usual: Some(PathBuf::from("/h/.config/claij/config.toml")),
            ..Places::default()
        }
    );
    assert_eq!(locate(None, var(&[]), None), Places::default());
}

#[test]
fn defaults_without_a_file() {
    let config = Settings::default();
    assert_eq!(config.path, None);
    assert_eq!(
        config.resolve("gemini-flash").unwrap().llm,
        remote(Provider::OpenRouter, "google/gemini-2.5-flash")
    );
    assert_eq!(
        config.resolve("kimi").unwrap().llm,
        remote(Provider::OpenRouter, "moonshotai/kimi-k2:free")
    );
    assert_eq!(config.resolve("local").unwrap().llm, Llm::Local);
    assert_eq!(config.aliases().len(), 9);
    let openrouter = config.provider(Provider::OpenRouter);
    assert_eq!(
        (
            openrouter.api_key_env.as_str(),
            openrouter.base_url.as_deref()
        ),
        ("OPENROUTER_API_KEY", None)
    );
    assert_eq!(
        config.provider(Provider::Gemini).api_key_env,
        "GEMINI_API_KEY"
    );
}

#[test]
fn resolve_values() {
    let config = Settings::default();
    let resolved = config.resolve("openai:gpt-5").unwrap();
    assert_eq!(resolved.llm, remote(Provider::OpenAi, "gpt-5"));
    assert_eq!(resolved.name, "openai:gpt-5");
    let unknown = config.resolve("gpt-6").unwrap_err().to_string();
    assert!(unknown.starts_with("unknown model `gpt-6`: expected an alias (claude-opus, claude-sonnet, gemini-flash, gpt-5, grok, kimi, llama-maverick, local, qwen-7b) or PROVIDER:MODEL"), "{unknown}");
    let provider = config.resolve("mistral:large").unwrap_err().to_string();
    assert!(
        provider.contains("unknown provider `mistral`"),
        "{provider}"
    );
}

#[cfg(feature = "mcp")]
#[test]
fn a_full_file() {
    let config = parse(
        r#"
[providers.openrouter]
api_key_env = "MY_OR_KEY"
base_url = "http://127.0.0.1:9/api/v1/"

[providers.anthropic]
base_url = "https://proxy.example.invalid"

[aliases]
fast = "openai:gpt-5-mini"
gpt-5 = "openai:gpt-5"
tiny = "local"

[defaults]
llm = "fast"
max_retries = 1
mode = "prompted"

[mcpServers.time]
command = "mcp-server-time"
env = { TZ = "UTC" }

[mcpServers.web]
url = "http://127.0.0.1:3001/mcp"
headers = { Authorization = "Bearer x" }

[projects.clock]
services = ["time"]
tools = ["time.get_current_time"]
"#,
    );
    assert_eq!(config.path.as_deref(), Some(Path::new(PATH)));
    let openrouter = config.provider(Provider::OpenRouter);
    assert_eq!(openrouter.api_key_env, "MY_OR_KEY");
    assert_eq!(
        openrouter.base_url.as_deref(),
        Some("http://127.0.0.1:9/api/v1")
    );
    assert_eq!(
        config.provider(Provider::OpenAi).api_key_env,
        "OPENAI_API_KEY"
    );
    assert_eq!(
        config.resolve("fast").unwrap().llm,
        remote(Provider::OpenAi, "gpt-5-mini")
    );
    assert_eq!(config.resolve("tiny").unwrap().llm, Llm::Local);
    let gpt5 = &config.aliases()["gpt-5"];
    assert_eq!(gpt5.llm, remote(Provider::OpenAi, "gpt-5"));
    assert_eq!(gpt5.origin, Origin::File { overrides: true });
    assert_eq!(config.aliases()["grok"].origin, Origin::BuiltIn);
    assert_eq!(config.defaults.llm.as_deref(), Some("fast"));
    assert_eq!(config.defaults.max_retries, Some(1));
    assert_eq!(config.defaults.mode, Some(StructuredMode::Prompted));
    let mcp = config.mcp.as_ref().unwrap();
    assert_eq!(
        mcp.servers.keys().collect::<Vec<_>>(),
        ["time", "web"].iter().collect::<Vec<_>>()
    );
    assert_eq!(mcp.projects["clock"].services, ["time"]);
}

#[cfg(feature = "mcp")]
#[test]
fn an_empty_file_is_the_defaults() {
    let config = parse("");
    assert_eq!(config.defaults, super::Defaults::default());
    assert!(config.mcp.is_none());
    assert_eq!(config.aliases().len(), 9);
}

#[test]
fn errors_name_file_line_and_key() {
    check_error(
        "[providers\n",
        "/etc/claij.toml:1: unclosed table, expected `]`",
    );
    check_error(
        "[providers.mistral]\nbase_url = \"http://x\"\n",
        "/etc/claij.toml:1: providers.mistral: unknown provider (expected one of openrouter, openai, anthropic, gemini, or a provider of your own with kind = \"openai-compatible\")",
    );
    check_error(
        "[providers.openrouter]\nbase_url = 3\n",
        "/etc/claij.toml:2: providers.openrouter.base_url: expected a string, found an integer",
    );
    check_error(
        "[providers.openrouter]\n\nbase_url = \"ftp://x\"\n",
        "/etc/claij.toml:3: providers.openrouter.base_url: expected an http:// or https:// URL",
    );
    check_error(
        "[providers.openai]\napi_key = \"sk-secret\"\n",
        "/etc/claij.toml:2: providers.openai.api_key: unknown key (expected api_key_env, base_url, max_body_bytes, retry_budget_secs, http_version, streams_per_connection, headers, query or auth_header)",
    );
    let bytes = "max_body_bytes: expected a whole number of bytes, at least 1024";
    let secs = "retry_budget_secs: expected whole seconds from 0 to 86400";
    for (line, expected) in [
        ("max_body_bytes = 1023", bytes),
        ("max_body_bytes = -1", bytes),
        ("max_body_bytes = \"32MiB\"", bytes),
        ("retry_budget_secs = 86401", secs),
        ("retry_budget_secs = 1.5", secs),
        (
            "http_version = \"h2\"",
            "http_version: expected \"auto\", \"http1\" or \"http2\", not \"h2\"",
        ),
        (
            "http_version = 2",
            "http_version: expected a string, found an integer",
        ),
        (
            "streams_per_connection = 0",
            "streams_per_connection: expected a whole number from 1 to 2147483647",
        ),
        (
            "streams_per_connection = 2147483648",
            "streams_per_connection: expected a whole number from 1 to 2147483647",
        ),
    ] {
        check_error(
            &format!("[providers.gemini]\n{line}\n"),
            &format!("/etc/claij.toml:2: providers.gemini.{expected}"),
        );
    }
    check_error(
        "[aliases]\nfast = \"gpt-5\"\n",
        "/etc/claij.toml:2: aliases.fast: expected `local` or PROVIDER:MODEL with PROVIDER one of openrouter, openai, anthropic, gemini",
    );
    for retries in ["-1", "101", "1e308"] {
        check_error(
            &format!("[defaults]\nmax_retries = {retries}\n"),
            "/etc/claij.toml:2: defaults.max_retries: expected a whole number from 0 to 100",
        );
    }
    check_error(
        "[defaults]\nmode = \"json\"\n",
        "/etc/claij.toml:2: defaults.mode: expected one of auto, native, tool, prompted",
    );
    check_error(
        "[defaults]\nllm = \"nope\"\n",
        "/etc/claij.toml:2: defaults.llm: unknown model `nope`: expected an alias (claude-opus, claude-sonnet, gemini-flash, gpt-5, grok, kimi, llama-maverick, local, qwen-7b) or PROVIDER:MODEL with PROVIDER one of openrouter, openai, anthropic, gemini",
    );
    check_error(
        "model = \"x\"\n",
        "/etc/claij.toml:1: model: unknown key (expected providers, aliases, defaults, proposals, memory, restate, models, mcpServers, projects, roots, samplingLlm or elicitation)",
    );
    #[cfg(feature = "mcp")]
    check_error(
        "[mcpServers.fs]\nargs = [\"x\"]\n",
        "/etc/claij.toml:1: mcpServers.fs: neither `command` nor `url`",
    );
    #[cfg(feature = "mcp")]
    check_error(
        "[projects.docs]\nservices = [\"fs\"]\n",
        "/etc/claij.toml:2: projects.docs.services.0: no enabled server `fs`",
    );
}

#[test]
fn providers_of_your_own() {
    let config = parse(
        r#"
[aliases]
smol = "mylocal:SmolLM2-135M"
[providers.mylocal]
kind = "openai-compatible"
base_url = "http://127.0.0.1:8080/v1/"
[providers.ollama]
kind = "openai-compatible"
base_url = "http://127.0.0.1:11434/v1"
api_key_env = "OLLAMA_KEY"
structured_output = "ollama_format"
"#,
    );
    let mylocal = config.compatible("mylocal").unwrap();
    assert_eq!(mylocal.base_url, "http://127.0.0.1:8080/v1");
    assert_eq!(mylocal.api_key_env, None);
    assert_eq!(mylocal.structured_output, None);
    let ollama = config.compatible("ollama").unwrap();
    assert_eq!(ollama.api_key_env.as_deref(), Some("OLLAMA_KEY"));
    assert_eq!(
        ollama.structured_output,
        Some(claij_backends::openai::StructuredDialect::OllamaFormat)
    );
    let compatible = |provider: &str, model: &str| Llm::Compatible {
        provider: provider.to_owned(),
        model: model.to_owned(),
    };
    // The alias was read before the providers in the file, and still resolves.
    assert_eq!(
        config.resolve("smol").unwrap().llm,
        compatible("mylocal", "SmolLM2-135M")
    );
    let resolved = config.resolve("ollama:qwen2.5:7b").unwrap();
    assert_eq!(resolved.llm, compatible("ollama", "qwen2.5:7b"));
    assert_eq!(resolved.llm.to_string(), "ollama:qwen2.5:7b");
    assert_eq!(
        config.resolve("mylocal:").unwrap_err().to_string(),
        "no model after `mylocal:`"
    );
    let unknown = config.resolve("mistral:large").unwrap_err().to_string();
    assert!(
        unknown.ends_with("or one of the configuration's: mylocal, ollama"),
        "{unknown}"
    );
    assert_eq!(
        config.resolve("openai:gpt-5").unwrap().llm,
        remote(Provider::OpenAi, "gpt-5")
    );
}

#[test]
fn errors_in_providers_of_your_own() {
    check_error(
        "[providers.mine]\nkind = \"anthropic\"\n",
        "/etc/claij.toml:2: providers.mine.kind: expected \"openai-compatible\"",
    );
    check_error(
        "[providers.mine]\nkind = \"openai-compatible\"\n",
        "/etc/claij.toml:1: providers.mine: a provider of kind \"openai-compatible\" needs base_url",
    );
    check_error(
        "[providers.mine]\nkind = \"openai-compatible\"\nbase_url = \"http://x/v1\"\nstructured_output = \"grammar\"\n",
        "/etc/claij.toml:4: providers.mine.structured_output: unknown structured output `grammar` (expected json_schema, json_object_schema, ollama_format, tools or prompted)",
    );
    check_error(
        "[providers.mine]\nkind = \"openai-compatible\"\nbase_url = \"x\"\n",
        "/etc/claij.toml:3: providers.mine.base_url: expected an http:// or https:// URL",
    );
    check_error(
        "[providers.mine]\nkind = \"openai-compatible\"\nbase_url = \"http://x\"\nkey = \"k\"\n",
        "/etc/claij.toml:4: providers.mine.key: unknown key (expected kind, base_url, api_key_env, structured_output, max_body_bytes, retry_budget_secs, http_version, streams_per_connection, headers, query or auth_header)",
    );
    check_error(
        "[providers.local]\nkind = \"openai-compatible\"\nbase_url = \"http://x\"\n",
        "/etc/claij.toml:1: providers.local: a provider's name is non-empty, has no `:` and is not `local`",
    );
    check_error(
        "[providers.openai]\nkind = \"openai-compatible\"\n",
        "/etc/claij.toml:2: providers.openai.kind: `kind` is for providers of your own (openai is built in): name the entry otherwise, e.g. [providers.myopenai]",
    );
    check_error(
        "[aliases]\nsmol = \"nowhere:m\"\n[providers.mine]\nkind = \"openai-compatible\"\nbase_url = \"http://x\"\n",
        "/etc/claij.toml:2: aliases.smol: unknown provider `nowhere`: expected `local` or one of openrouter, openai, anthropic, gemini, or one of the configuration's: mine",
    );
}

#[test]
fn body_and_retry_limits_per_provider() {
    let config = parse(
        "[providers.gemini]\nmax_body_bytes = 1048576\nretry_budget_secs = 300\n\n\
         [providers.openai]\nretry_budget_secs = 0\n",
    );
    let gemini = config.provider(Provider::Gemini);
    assert_eq!(gemini.max_body_bytes, Some(1_048_576));
    assert_eq!(
        gemini.retry_budget,
        Some(std::time::Duration::from_secs(300))
    );
    let openai = config.provider(Provider::OpenAi);
    assert_eq!(openai.max_body_bytes, None);
    assert_eq!(openai.retry_budget, Some(std::time::Duration::ZERO));
    let defaults = parse("");
    assert_eq!(defaults.provider(Provider::Gemini).max_body_bytes, None);
    assert_eq!(defaults.provider(Provider::Gemini).retry_budget, None);
    let own = parse(
        "[providers.mine]\nkind = \"openai-compatible\"\nbase_url = \"http://127.0.0.1:8080/v1\"\n\
         max_body_bytes = 4096\nretry_budget_secs = 10\n",
    );
    let mine = own.compatible("mine").unwrap();
    assert_eq!(mine.max_body_bytes, Some(4096));
    assert_eq!(mine.retry_budget, Some(std::time::Duration::from_secs(10)));
}

#[test]
fn http_version_and_streams_per_provider() {
    use claij_backends::http::HttpVersion;
    let config = parse(
        "[providers.openai]\nhttp_version = \"http1\"\n\n\
         [providers.anthropic]\nhttp_version = \"auto\"\nstreams_per_connection = 250\n",
    );
    let openai = config.provider(Provider::OpenAi);
    assert_eq!(openai.http_version, Some(HttpVersion::Http1));
    assert_eq!(openai.streams_per_connection, None);
    let anthropic = config.provider(Provider::Anthropic);
    assert_eq!(anthropic.http_version, Some(HttpVersion::Auto));
    assert_eq!(anthropic.streams_per_connection, Some(250));
    let defaults = parse("");
    assert_eq!(defaults.provider(Provider::Gemini).http_version, None);
    assert_eq!(
        defaults.provider(Provider::Gemini).streams_per_connection,
        None
    );
    let own = parse(
        "[providers.mine]\nkind = \"openai-compatible\"\nbase_url = \"http://127.0.0.1:8080/v1\"\n\
         http_version = \"http2\"\nstreams_per_connection = 32\n",
    );
    let mine = own.compatible("mine").unwrap();
    assert_eq!(mine.http_version, Some(HttpVersion::Http2));
    assert_eq!(mine.streams_per_connection, Some(32));
}

#[test]
fn the_compaction_budget_is_tokens_or_off() {
    use crate::settings::CompactBudget;
    assert_eq!(parse("").compact_budget, None);
    // Without the feature `tokens` it is refused (conversation::tests::without_tokens_*).
    #[cfg(feature = "tokens")]
    {
        let config = parse("[proposals]\ncompact_budget = 300\n");
        assert_eq!(config.compact_budget, Some(CompactBudget::Tokens(300)));
    }
    let config = parse("[proposals]\ncompact_budget = \"off\"\n");
    assert_eq!(config.compact_budget, Some(CompactBudget::Off));
    for bad in ["0", "-5", "\"lots\"", "1.5"] {
        let err = format!(
            "{:#}",
            Settings::parse(
                &format!("[proposals]\ncompact_budget = {bad}\n"),
                Path::new(PATH)
            )
            .unwrap_err()
        );
        assert!(
            err.starts_with("/etc/claij.toml:2: proposals.compact_budget: expected a number of tokens above 0, or \"off\""),
            "{err}"
        );
    }
    assert_eq!(CompactBudget::DEFAULT.to_string(), "120");
}

#[test]
fn proposals_voters_are_checked_when_read() {
    let config = parse("[proposals]\nvoters = [\"local\", \"openai:gpt-5\"]\n");
    assert_eq!(config.voters, ["local", "openai:gpt-5"]);
    check_error(
        "[proposals]\nvoters = \"local\"\n",
        "/etc/claij.toml:2: proposals.voters: expected a list of models",
    );
    check_error(
        "[proposals]\nvoters = [\"nobody:x\"]\n",
        &format!(
            "/etc/claij.toml:2: proposals.voters: {}",
            parse("").resolve("nobody:x").unwrap_err()
        ),
    );
    check_error(
        "[proposals]\nquorum = 2\n",
        "/etc/claij.toml:2: proposals.quorum: unknown key (expected voters or compact_budget)",
    );
}

#[cfg(feature = "mcp")]
/// A temporary directory with files, removed when dropped (the workspace's test harness).
struct Dir(claij_test_support::harness::Files);

#[cfg(feature = "mcp")]
impl Dir {
    fn new(files: &[(&str, &str)]) -> Self {
        Dir(claij_test_support::harness::Files::new(files))
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.0.join(name)
    }

    /// The places with `flag` (named by `--config`), the usual file `usual` and `.mcp.json` `project`.
    fn places(&self, flag: Option<&str>, usual: &str, project: &str) -> Places {
        Places {
            flag: flag.map(|n| self.path(n)),
            env: None,
            usual: Some(self.path(usual)),
            project: Some(self.path(project)),
        }
    }
}

#[cfg(feature = "mcp")]
const TOML_SERVERS: &str =
    "[aliases]\nfast = \"openai:gpt-5-mini\"\n[mcpServers.toml-fs]\ncommand = \"a\"\n";
#[cfg(feature = "mcp")]
const JSON_SERVERS: &str = r#"{"mcpServers": {"json-fs": {"command": "b"}}, "projects": {"p": {"services": ["json-fs"]}}}"#;

#[cfg(feature = "mcp")]
fn servers(settings: &Settings) -> Vec<String> {
    settings
        .mcp
        .as_ref()
        .map(|m| m.servers.keys().cloned().collect())
        .unwrap_or_default()
}

#[cfg(feature = "mcp")]
#[test]
fn the_mcp_part_comes_whole_from_one_file_in_a_fixed_order() {
    let dir = Dir::new(&[
        ("config.toml", TOML_SERVERS),
        ("mcp.json", JSON_SERVERS),
        ("other.toml", "[defaults]\nmax_retries = 3\n"),
    ]);
    // Without a named file, `.mcp.json` in the working directory wins over config.toml's servers;
    // the rest of the settings still come from config.toml.
    let found = Settings::load_from(&dir.places(None, "config.toml", "mcp.json")).unwrap();
    assert_eq!(servers(&found), ["json-fs"]);
    assert_eq!(found.mcp_path, Some(dir.path("mcp.json")));
    assert_eq!(found.path, Some(dir.path("config.toml")));
    assert!(found.resolve("fast").is_ok());
    assert!(found.mcp_project("p").is_ok());
    // Without `.mcp.json`: config.toml's.
    let usual = Settings::load_from(&dir.places(None, "config.toml", "none.json")).unwrap();
    assert_eq!(servers(&usual), ["toml-fs"]);
    assert_eq!(usual.mcp_path, Some(dir.path("config.toml")));
    // A named JSON file is the MCP part; config.toml still gives the rest, `.mcp.json` is not read.
    let named = Settings::load_from(&dir.places(Some("mcp.json"), "config.toml", "x")).unwrap();
    assert_eq!(servers(&named), ["json-fs"]);
    assert_eq!(named.mcp_path, Some(dir.path("mcp.json")));
    assert!(named.resolve("fast").is_ok());
    // A named TOML file is everything: neither config.toml nor `.mcp.json` is read.
    let whole =
        Settings::load_from(&dir.places(Some("other.toml"), "config.toml", "mcp.json")).unwrap();
    assert!(whole.mcp.is_none());
    assert_eq!(whole.defaults.max_retries, Some(3));
    assert!(whole.resolve("fast").is_err());
    assert_eq!(
        whole.no_servers(),
        format!(
            "no mcpServers in {} (`claij mcp servers > .mcp.json` writes one for the servers \
             `cargo xtask mcp-servers` installs)",
            dir.path("other.toml").display()
        )
    );
    // A JSON --config with CLAIJ_CONFIG naming a TOML file: the settings come from that file.
    let both = Places {
        env: Some(dir.path("other.toml")),
        ..dir.places(Some("mcp.json"), "config.toml", "x")
    };
    let both = Settings::load_from(&both).unwrap();
    assert_eq!(servers(&both), ["json-fs"]);
    assert_eq!(both.path, Some(dir.path("other.toml")));
    assert_eq!(both.defaults.max_retries, Some(3));
    // A TOML --config is everything: CLAIJ_CONFIG is not even read.
    let flag_wins = Places {
        env: Some(dir.path("gone.toml")),
        ..dir.places(Some("other.toml"), "config.toml", "mcp.json")
    };
    assert_eq!(
        Settings::load_from(&flag_wins).unwrap().path,
        Some(dir.path("other.toml"))
    );
    // JSON is told from TOML by its first character, whatever the file is called.
    std::fs::write(dir.path("servers"), format!("\n  {JSON_SERVERS}")).unwrap();
    let sniffed = Settings::load_from(&dir.places(Some("servers"), "none", "none")).unwrap();
    assert_eq!(servers(&sniffed), ["json-fs"]);
}

#[cfg(feature = "mcp")]
#[test]
fn every_message_names_the_file_read_or_the_files_looked_for() {
    let dir = Dir::new(&[
        ("bare.toml", "[defaults]\nmax_retries = 1\n"),
        (
            "empty.json",
            r#"{"mcpServers": {"off": {"command": "x", "disabled": true}}}"#,
        ),
        ("bad.json", r#"{"mcpServers": {"x": {"args": []}}}"#),
    ]);
    let hint = "(`claij mcp servers > .mcp.json` writes one for the servers `cargo xtask \
                mcp-servers` installs)";
    let show = |p: &str| dir.path(p).display().to_string();
    let nothing = Settings::load_from(&dir.places(None, "none.toml", "none.json")).unwrap();
    assert_eq!(
        nothing.no_servers(),
        format!(
            "no mcpServers: neither {} nor {} exists {hint}",
            show("none.json"),
            show("none.toml")
        )
    );
    assert_eq!(
        format!("{:#}", nothing.mcp_servers().unwrap_err()),
        nothing.no_servers()
    );
    let bare = Settings::load_from(&dir.places(None, "bare.toml", "none.json")).unwrap();
    assert_eq!(
        bare.no_servers(),
        format!(
            "no mcpServers in {} and no {} {hint}",
            show("bare.toml"),
            show("none.json")
        )
    );
    let disabled = Settings::load_from(&dir.places(None, "bare.toml", "empty.json")).unwrap();
    assert_eq!(
        disabled.no_servers(),
        format!("no enabled MCP server in {} {hint}", show("empty.json"))
    );
    let bad = Settings::load_from(&dir.places(None, "bare.toml", "bad.json")).unwrap_err();
    assert_eq!(
        format!("{bad:#}"),
        format!(
            "{}: invalid MCP configuration at /mcpServers/x: neither `command` nor `url`",
            show("bad.json")
        )
    );
    let missing =
        Settings::load_from(&dir.places(Some("gone.json"), "bare.toml", "x")).unwrap_err();
    assert_eq!(
        format!("{missing:#}"),
        format!("--config names {}, which does not exist", show("gone.json"))
    );
    let by_env = Places {
        env: Some(dir.path("gone.toml")),
        ..Places::default()
    };
    assert_eq!(
        format!("{:#}", Settings::load_from(&by_env).unwrap_err()),
        format!(
            "CLAIJ_CONFIG names {}, which does not exist",
            show("gone.toml")
        )
    );
    // A project that is not there names the file and the projects it has.
    std::fs::write(dir.path("p.json"), JSON_SERVERS).unwrap();
    let projects = Settings::load_from(&dir.places(Some("p.json"), "none", "none")).unwrap();
    assert_eq!(
        format!("{:#}", projects.mcp_project("q").unwrap_err()),
        format!("no project `q` in {} (its projects: p)", show("p.json"))
    );
}

#[test]
fn model_prices_by_provider_model_alias_wildcard_or_local() {
    let settings = parse(
        r#"
[providers.mylocal]
kind = "openai-compatible"
base_url = "http://127.0.0.1:8080/v1"

[aliases]
fast = "openrouter:google/gemini-2.5-flash"

[models."openai:gpt-4o-mini"]
price = { input = 0.15, output = 0.6, cached_input = 0.075 }

[models.fast.price]
input = 1
output = 2
tiers = [{ above_input_tokens = 1000, input = 3 }]
checked = "2026-12-01"
source = "our contract"

[models."mylocal:*"]
price = { input = 0, output = 0 }

[models.local]
price = { input = 0.5, output = 0.5 }
"#,
    );
    let found: Vec<(&str, &str, Option<f64>)> = settings
        .model_prices
        .iter()
        .map(|p| (p.provider.as_str(), p.model.as_str(), p.price.input))
        .collect();
    assert_eq!(
        found,
        [
            ("openrouter", "google/gemini-2.5-flash", Some(1.0)),
            ("local", "*", Some(0.5)),
            ("mylocal", "*", Some(0.0)),
            ("openai", "gpt-4o-mini", Some(0.15)),
        ]
    );
    let mini = &settings.model_prices[3].price;
    assert_eq!(
        mini.source.as_deref(),
        Some(r#"/etc/claij.toml [models."openai:gpt-4o-mini"]"#),
        "a price says where it was set"
    );
    let fast = &settings.model_prices[0].price;
    assert_eq!(fast.tiers[0].input, Some(3.0));
    assert_eq!(fast.checked.as_deref(), Some("2026-12-01"));
    assert_eq!(fast.source.as_deref(), Some("our contract"));
    // The layers: the configuration's price over the built-in one.
    let table = crate::prices::table(&settings).unwrap();
    let price = table
        .price_for("openrouter", "google/gemini-2.5-flash")
        .unwrap();
    assert_eq!((price.input, price.output), (Some(1.0), Some(2.0)));
    assert_eq!(
        table.price_for("mylocal", "llama3").unwrap().output,
        Some(0.0)
    );
    assert_eq!(
        table
            .price_for("local", "SmolLM2-135M-Instruct")
            .unwrap()
            .input,
        Some(0.5)
    );
    assert_eq!(
        table
            .price_for("openai", "gpt-4o-mini")
            .unwrap()
            .cached_input,
        Some(0.075)
    );
}

#[test]
fn model_price_errors_name_the_key() {
    check_error(
        "[models.\"nowhere:m\"]\nprice = { input = 1, output = 1 }\n",
        "/etc/claij.toml:1: models.nowhere:m: unknown provider `nowhere`: expected `local` or one of openrouter, openai, anthropic, gemini",
    );
    check_error(
        "[models.nameless]\nprice = { input = 1, output = 1 }\n",
        "/etc/claij.toml:1: models.nameless: unknown model `nameless`: expected an alias (claude-opus, claude-sonnet, gemini-flash, gpt-5, grok, kimi, llama-maverick, local, qwen-7b) or PROVIDER:MODEL with PROVIDER one of openrouter, openai, anthropic, gemini",
    );
    check_error(
        "[models.\"openai:m\"]\ncost = 1\n",
        "/etc/claij.toml:2: models.openai:m.cost: unknown key (expected price)",
    );
    check_error(
        "[models.\"openai:m\"]\nprice = { input = 1 }\n",
        "/etc/claij.toml:2: models.openai:m.price: a price needs input and output (US dollars per million tokens)",
    );
    check_error(
        "[models.\"openai:m\"]\nprice = { input = -1, output = 1 }\n",
        "/etc/claij.toml:2: models.openai:m.price.input: expected US dollars per million tokens, 0 or more, not -1",
    );
    let typo = format!(
        "{:#}",
        Settings::parse(
            "[models.\"openai:m\"]\nprice = { inptu = 1, output = 1 }\n",
            Path::new(PATH)
        )
        .unwrap_err()
    );
    assert!(
        typo.starts_with("/etc/claij.toml:2: models.openai:m.price: unknown field `inptu`"),
        "{typo}"
    );
    check_error(
        "[models.\"openai:m\"]\nprice = { input = 1, output = 1, tiers = [{ above_input_tokens = 9, input = 2 }, { above_input_tokens = 9, input = 3 }] }\n",
        "/etc/claij.toml:2: models.openai:m.price.tiers.1.above_input_tokens: tiers go in ascending order of above_input_tokens, each once",
    );
    check_error(
        "[models.\"openai:m\"]\nprice = \"cheap\"\n",
        "/etc/claij.toml:2: models.openai:m.price: expected a table, found a string",
    );
}
