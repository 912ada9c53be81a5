//! `claij config show` and the configuration file's effect on `claij ask`: defaults, redaction, errors
//! with locations, the key variable a provider names.

use serde_json::Value;
use wiremock::matchers::{header, method, path, query_param};
use wiremock::{Mock, MockServer};

use super::openrouter::reply;
use super::{BASE, Files, Run, assert_one_line_error, claij_env};

/// Runs `claij` with `CLAIJ_CONFIG` set to `config` (or unset, with an empty config home), no
/// provider key but those in `env`.
fn run_with(args: &[&str], config: Option<&str>, env: &[(&str, Option<&str>)]) -> Run {
    let home = Files::new(&[]);
    let home_path = home.path("");
    let mut all: Vec<(&str, Option<&str>)> = vec![
        ("CLAIJ_CONFIG", config),
        ("XDG_CONFIG_HOME", Some(home_path.as_str())),
        ("HOME", Some(home_path.as_str())),
        ("OPENROUTER_API_KEY", None),
        ("OPENAI_API_KEY", None),
        ("ANTHROPIC_API_KEY", None),
        ("GEMINI_API_KEY", None),
    ];
    all.extend_from_slice(env);
    claij_env(args, "", &all)
}

#[test]
fn show_without_a_file_prints_the_defaults() {
    let run = run_with(&["config", "show"], None, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.starts_with("file: (defaults)\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("gemini-flash    openrouter:google/gemini-2.5-flash  (built-in)"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("key OPENROUTER_API_KEY (not set)"),
        "{}",
        run.stdout
    );
    let json = run_with(&["config", "show", "--json"], None, &[]);
    assert_eq!(json.code, 0, "{}", json.stderr);
    let value: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(value["path"], Value::Null);
    assert_eq!(value["aliases"]["local"]["target"], "local");
    assert_eq!(
        value["aliases"]["gpt-5"]["target"],
        "openrouter:openai/gpt-5.1"
    );
    assert_eq!(value["providers"]["gemini"]["api_key_set"], false);
}

const SECRET_CONFIG: &str = r#"
[providers.openrouter]
api_key_env = "CLAIJ_TEST_OR_KEY"
base_url = "https://user:secret-pw@proxy.invalid/api/v1?key=secret-query"

[aliases]
fast = "openai:gpt-5-mini"

[defaults]
llm = "fast"
max_retries = 2

[mcpServers.time]
command = "mcp-server-time"
env = { API_TOKEN = "secret-env" }

[mcpServers.web]
url = "http://127.0.0.1:3001/mcp?token=secret-url"
headers = { Authorization = "Bearer secret-header" }

[projects.clock]
services = ["time"]
"#;

#[test]
fn show_never_prints_a_secret() {
    let f = Files::new(&[("config.toml", SECRET_CONFIG)]);
    let path = f.path("config.toml");
    let env = [
        ("CLAIJ_TEST_OR_KEY", Some("secret-key-or")),
        ("OPENAI_API_KEY", Some("secret-key-openai")),
    ];
    for args in [&["config", "show"][..], &["config", "show", "--json"][..]] {
        let run = run_with(args, Some(&path), &env);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(!run.stdout.contains("secret"), "{}", run.stdout);
        assert!(!run.stderr.contains("secret"), "{}", run.stderr);
        for part in [
            "CLAIJ_TEST_OR_KEY",
            "API_TOKEN",
            "Authorization",
            "proxy.invalid",
        ] {
            assert!(run.stdout.contains(part), "{part}: {}", run.stdout);
        }
    }
    let text = run_with(&["config", "show"], Some(&path), &env).stdout;
    assert!(text.starts_with(&format!("file: {path}\n")), "{text}");
    assert!(
        text.contains(
            "openrouter  key CLAIJ_TEST_OR_KEY (set), base_url https://***@proxy.invalid/api/v1?***"
        ),
        "{text}"
    );
    assert!(
        text.contains("fast  openai:gpt-5-mini  (file)")
            || text.contains("openai:gpt-5-mini  (file)"),
        "{text}"
    );
    assert!(text.contains("  llm              fast"), "{text}");
    assert!(
        text.contains("  max_reply_bytes  (none: 1048576)"),
        "{text}"
    );
    assert!(
        text.contains("  time: stdio `mcp-server-time`, env API_TOKEN=***"),
        "{text}"
    );
    let json: Value =
        serde_json::from_str(&run_with(&["config", "show", "--json"], Some(&path), &env).stdout)
            .unwrap();
    assert_eq!(json["providers"]["openrouter"]["api_key_set"], true);
    assert_eq!(json["providers"]["anthropic"]["api_key_set"], false);
    assert_eq!(json["aliases"]["fast"]["origin"], "file");
    assert_eq!(json["defaults"]["max_retries"], 2);
    assert_eq!(json["mcpServers"]["web"]["headers"]["Authorization"], "***");
    assert_eq!(json["projects"]["clock"]["services"][0], "time");
}

/// Every key the file sets shows: OpenRouter's model list, the voters, the Restate keys (public
/// keys, shown whole).
#[test]
fn show_names_the_model_list_voters_and_identity_keys() {
    const KEY: &str = "publickeyv1_ChjENKeMvCtRnqG2mrBK1HmPKufgFUc98K8B3ononQvp";
    let config = format!(
        "[providers.openrouter]\nmodel_list = \"off\"\nmodels_max_age_secs = 3600\n\
         [proposals]\nvoters = [\"openai:gpt-4o-mini\", \"anthropic:claude-sonnet-4-5\"]\n\
         [restate]\nidentity_keys = [\"{KEY}\"]\n"
    );
    let f = Files::new(&[("config.toml", &config)]);
    let path = f.path("config.toml");
    let text = run_with(&["config", "show"], Some(&path), &[]).stdout;
    for part in [
        ", model_list off, models_max_age_secs 3600",
        "proposals:\n  voters           openai:gpt-4o-mini, anthropic:claude-sonnet-4-5",
        &format!("restate:\n  identity_keys    {KEY}"),
    ] {
        assert!(text.contains(part), "{part}: {text}");
    }
    let json: Value =
        serde_json::from_str(&run_with(&["config", "show", "--json"], Some(&path), &[]).stdout)
            .unwrap();
    assert_eq!(json["providers"]["openrouter"]["model_list"], "off");
    assert_eq!(json["providers"]["openrouter"]["models_max_age_secs"], 3600);
    assert_eq!(
        json["proposals"]["voters"][1],
        "anthropic:claude-sonnet-4-5"
    );
    assert_eq!(json["restate"]["identity_keys"][0], KEY);

    // Without a file: what is not set is not said on a provider's line, as for its limits.
    let defaults = run_with(&["config", "show"], None, &[]).stdout;
    for part in [
        "  voters           (none: --voters)",
        "  identity_keys    (none: loopback only)",
    ] {
        assert!(defaults.contains(part), "{part}: {defaults}");
    }
    assert!(!defaults.contains("model_list"), "{defaults}");
}

#[test]
fn a_bad_file_is_one_line_with_its_location() {
    let f = Files::new(&[
        ("syntax.toml", "[defaults\nllm = 1\n"),
        ("type.toml", "[defaults]\n\nmax_retries = \"three\"\n"),
        ("alias.toml", "[aliases]\nx = \"nope:model\"\n"),
    ]);
    let cases = [
        ("syntax.toml", ":1: "),
        (
            "type.toml",
            ":3: defaults.max_retries: expected a whole number from 0 to 100",
        ),
        ("alias.toml", ":2: aliases.x: unknown provider `nope`"),
    ];
    for (name, part) in cases {
        let path = f.path(name);
        for args in [&["config", "show"][..], &["ask", "hi"][..]] {
            let run = run_with(args, Some(&path), &[]);
            assert_one_line_error(&run, 2, &format!("{path}{part}"));
            assert!(run.stdout.is_empty(), "{}", run.stdout);
        }
    }
    let missing = f.path("missing.toml");
    let run = run_with(&["config", "show"], Some(&missing), &[]);
    assert_one_line_error(&run, 2, "CLAIJ_CONFIG names");
}

#[test]
fn a_missing_key_names_the_configured_variable() {
    let f = Files::new(&[(
        "config.toml",
        "[providers.openrouter]\napi_key_env = \"CLAIJ_TEST_OR_KEY\"\n",
    )]);
    let path = f.path("config.toml");
    let run = run_with(&["ask", "hi", "--llm", "gpt-5"], Some(&path), &[]);
    assert_one_line_error(
        &run,
        2,
        "CLAIJ_TEST_OR_KEY is not set: export it to use --llm gpt-5 (openrouter:openai/gpt-5.1)",
    );
    // The default variable of another provider still applies.
    let run = run_with(&["ask", "hi", "--llm", "claude-opus"], None, &[]);
    assert_one_line_error(&run, 2, "OPENROUTER_API_KEY is not set");
    let run = run_with(&["ask", "hi", "--llm", "gpt-6"], None, &[]);
    assert_one_line_error(&run, 2, "unknown model `gpt-6`: expected an alias");
}

const GATEWAY_CONFIG: &str = r#"
[providers.openrouter]
headers = { "Helicone-Auth" = "Bearer ${CLAIJ_TEST_HELICONE_KEY}", "Helicone-Cache-Enabled" = "true" }

[providers.azure]
kind = "openai-compatible"
base_url = "https://res.openai.azure.com/openai/deployments/gpt-4o"
api_key_env = "CLAIJ_TEST_AZURE_KEY"
auth_header = "api-key"
headers = { "x-gateway-token" = "secret-literal-token" }
query = { "api-version" = "2024-10-21" }
"#;

#[test]
fn show_redacts_gateway_headers() {
    let f = Files::new(&[("config.toml", GATEWAY_CONFIG)]);
    let path = f.path("config.toml");
    let env = [
        ("CLAIJ_TEST_HELICONE_KEY", Some("secret-helicone")),
        ("CLAIJ_TEST_AZURE_KEY", Some("secret-azure")),
    ];
    for args in [&["config", "show"][..], &["config", "show", "--json"][..]] {
        let run = run_with(args, Some(&path), &env);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(!run.stdout.contains("secret"), "{}", run.stdout);
        for part in ["Helicone-Auth", "CLAIJ_TEST_HELICONE_KEY", "2024-10-21"] {
            assert!(run.stdout.contains(part), "{part}: {}", run.stdout);
        }
    }
    let text = run_with(&["config", "show"], Some(&path), &env).stdout;
    assert!(
        text.contains(
            "headers Helicone-Auth=*** (CLAIJ_TEST_HELICONE_KEY set) Helicone-Cache-Enabled=true"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "headers x-gateway-token=***, query api-version=2024-10-21, auth_header api-key"
        ),
        "{text}"
    );
    let run = run_with(&["config", "show", "--json"], Some(&path), &[]);
    let json: Value = serde_json::from_str(&run.stdout).unwrap();
    let openrouter = &json["providers"]["openrouter"];
    assert_eq!(openrouter["headers"]["Helicone-Auth"], "***");
    assert_eq!(openrouter["variables"]["CLAIJ_TEST_HELICONE_KEY"], false);
    assert_eq!(json["providers"]["azure"]["auth_header"], "api-key");
}

#[test]
fn a_header_claij_sets_is_a_load_error() {
    let f = Files::new(&[(
        "config.toml",
        "[providers.openai]\n\nheaders = { \"Content-Type\" = \"text/plain\" }\n",
    )]);
    let path = f.path("config.toml");
    for args in [&["config", "show"][..], &["ask", "hi"][..]] {
        let run = run_with(args, Some(&path), &[]);
        assert_one_line_error(
            &run,
            2,
            &format!(
                "{path}:3: providers.openai.headers.Content-Type: claij sets this header itself"
            ),
        );
    }
}

#[tokio::test]
async fn ask_sends_an_azure_style_entry_s_headers_and_query() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/openai/deployments/gpt-4o/chat/completions"))
        .and(header("api-key", "azure-key-0123456789"))
        .and(header("x-trace", "gw-secret-0123456789"))
        .and(query_param("api-version", "2024-10-21"))
        .respond_with(reply(r#"{"answer": "4", "state": "done"}"#))
        .expect(1)
        .mount(&server)
        .await;
    let text = format!(
        "[providers.azure]\nkind = \"openai-compatible\"\n\
         base_url = \"{}/openai/deployments/gpt-4o\"\napi_key_env = \"CLAIJ_TEST_AZURE_KEY\"\n\
         auth_header = \"api-key\"\nstructured_output = \"json_schema\"\n\
         headers = {{ x-trace = \"${{CLAIJ_TEST_TRACE}}\" }}\n\
         query = {{ \"api-version\" = \"2024-10-21\" }}\n",
        server.uri()
    );
    let f = Files::new(&[("config.toml", &text), ("schema.json", BASE)]);
    let config = f.path("config.toml");
    let schema = f.path("schema.json");
    let args = [
        "ask",
        "What is 2+2?",
        "--schema",
        &schema,
        "--llm",
        "azure:gpt-4o",
    ];
    let env = [
        ("CLAIJ_TEST_AZURE_KEY", Some("azure-key-0123456789")),
        ("CLAIJ_TEST_TRACE", Some("gw-secret-0123456789")),
    ];
    let run = run_with(&args, Some(&config), &env);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let received = server.received_requests().await.unwrap();
    assert!(!received[0].headers.contains_key("authorization"));
}

#[test]
fn an_unset_gateway_variable_names_itself_and_the_entry() {
    let f = Files::new(&[(
        "config.toml",
        "[providers.openrouter]\nheaders = { \"Helicone-Auth\" = \"Bearer ${CLAIJ_TEST_HELICONE_KEY}\" }\n",
    )]);
    let path = f.path("config.toml");
    let env = [
        ("OPENROUTER_API_KEY", Some("sk-or-test-0123456789")),
        ("CLAIJ_TEST_HELICONE_KEY", None),
    ];
    let run = run_with(&["ask", "hi", "--llm", "gpt-5"], Some(&path), &env);
    assert_one_line_error(
        &run,
        2,
        "providers.openrouter.headers.Helicone-Auth: CLAIJ_TEST_HELICONE_KEY is not set",
    );
}

/// One configuration for every command: `.mcp.json` in the working directory (written from `claij
/// mcp servers`) gives `ask --interceptors mcp --session`, `fsm validate` and `fsm run` their MCP
/// servers, while the providers come from `~/.config/claij/config.toml`; `--config FILE.json`
/// names the same servers from anywhere; without servers each names the files it looked for.
#[tokio::test]
async fn ask_and_fsm_read_the_servers_where_mcp_does() {
    use serde_json::json;
    use wiremock::matchers::{method, path};

    let Some(dir) = super::mcp::servers("ask_and_fsm_read_the_servers_where_mcp_does") else {
        return;
    };
    let dir = dir.to_string_lossy().into_owned();
    let server = MockServer::start().await;
    let time_call = json!({"answer": "Let me look.", "state": "waiting_for_tools", "mcp_calls": [
        {"service": "time", "tool": "get_current_time", "args": {"timezone": "UTC"}}]});
    let loop_call = json!({"id": ["llm", "servicing"], "message": {"jsonrpc": "2.0", "id": 1,
        "method": "tools/call", "params": {"name": "time.get_current_time",
        "arguments": {"timezone": "UTC"}}}});
    let loop_end =
        json!({"id": ["llm", "end"], "result": {"content": [{"type": "text", "text": "noon"}]}});
    let answered = json!({"answer": "Noon-ish.", "state": "answered"});
    for reply_json in [&time_call, &answered, &loop_call, &loop_end] {
        Mock::given(method("POST"))
            .and(path(super::openrouter::CHAT))
            .respond_with(reply(&reply_json.to_string()))
            .up_to_n_times(1)
            .expect(1)
            .mount(&server)
            .await;
    }
    let work = Files::new(&[]);
    let home = Files::new(&[]);
    let (work_dir, home_dir) = (work.path(""), home.path(""));
    std::fs::create_dir_all(home.0.join(".config/claij")).unwrap();
    std::fs::write(
        home.0.join(".config/claij/config.toml"),
        super::openrouter::config(&server),
    )
    .unwrap();
    let env = [
        ("CLAIJ_MCP_SERVERS", dir.as_str()),
        ("OPENROUTER_API_KEY", "sk-or-v1-one-configuration"),
    ];
    let run = |cwd: &str, args: &[&str]| super::mcp::claij_in(cwd, &home_dir, args, &env);
    let printed = run(&work_dir, &["mcp", "servers", "--servers", "time"]);
    assert_eq!(printed.code, 0, "{}", printed.stderr);
    std::fs::write(work.0.join(".mcp.json"), &printed.stdout).unwrap();

    // ask --interceptors mcp --session, no --config: the servers of ./.mcp.json.
    let session = work.path("talk.json");
    let llm = ["--llm", "openrouter:test/model", "--mode", "prompted"];
    let mut ask = vec![
        "ask",
        "What time is it?",
        "--interceptors",
        "mcp",
        "--session",
        &session,
    ];
    ask.extend(llm);
    let asked = run(&work_dir, &ask);
    assert_eq!(asked.code, 0, "{}", asked.stderr);
    assert!(
        asked
            .stderr
            .contains("mcp time.get_current_time {\"timezone\":\"UTC\"}: ok: "),
        "{}",
        asked.stderr
    );

    // fsm validate and fsm run of the tool loop, from another directory with --config.
    let tool_loop = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/fsm/tool-loop.json"
    );
    let mcp_json = work.path(".mcp.json");
    let validated = run(
        &home_dir,
        &["fsm", "validate", tool_loop, "--config", &mcp_json],
    );
    assert_eq!(
        validated.code, 0,
        "{}{}",
        validated.stdout, validated.stderr
    );
    let mut fsm = vec![
        "fsm",
        "run",
        tool_loop,
        "--input",
        r#"{"request": "the time?"}"#,
    ];
    fsm.extend(llm);
    fsm.extend(["--config", &mcp_json]);
    let ran = run(&home_dir, &fsm);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(ran.stdout.contains(r#""to": "end""#), "{}", ran.stdout);

    // Without --config there, nothing names MCP servers: each command says which files it read.
    let looked = format!(
        "no mcpServers in {} and no {}",
        home.0.join(".config/claij/config.toml").display(),
        home.0.join(".mcp.json").display()
    );
    let validated = run(&home_dir, &["fsm", "validate", tool_loop]);
    assert_eq!(validated.code, 1, "{}", validated.stderr);
    assert!(
        validated.stdout.starts_with(&format!(
            "/states/1/config/service: unknown service `mcp`: {looked}"
        )),
        "{}",
        validated.stdout
    );
    let mut fsm = vec![
        "fsm",
        "run",
        tool_loop,
        "--input",
        r#"{"request": "the time?"}"#,
    ];
    fsm.extend(llm);
    let refused = run(&home_dir, &fsm);
    assert_one_line_error(&refused, 2, &format!("unknown service `mcp`: {looked}"));
    let mut ask = vec!["ask", "Time?", "--interceptors", "mcp"];
    ask.extend(llm);
    let refused = run(&home_dir, &ask);
    assert_one_line_error(
        &refused,
        2,
        &format!("error: --interceptors mcp needs MCP servers: {looked}"),
    );
    // A --config that is not there is named as such, by chat as by the others.
    let gone = home.path("gone.json");
    let chat = run(&home_dir, &["chat", "--config", &gone]);
    assert_one_line_error(
        &chat,
        2,
        &format!("--config names {gone}, which does not exist"),
    );
}

/// `.mcp.json` in the working directory hides the servers of `config.toml`: `config show` names the
/// file the servers come from, and the hiding is said once, as a warning naming both files.
#[test]
fn a_project_mcp_json_that_hides_config_toml_s_servers_is_said() {
    let work = Files::new(&[(
        ".mcp.json",
        r#"{"mcpServers": {"here": {"command": "here-server"}}}"#,
    )]);
    let home = Files::new(&[]);
    std::fs::create_dir_all(home.0.join(".config/claij")).unwrap();
    let toml = home.0.join(".config/claij/config.toml");
    std::fs::write(&toml, "[mcpServers.there]\ncommand = \"there-server\"\n").unwrap();
    let run = super::mcp::claij_in(&work.path(""), &home.path(""), &["config", "show"], &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mcp_json = work.0.join(".mcp.json");
    assert!(
        run.stdout.contains(&format!(
            "mcpServers (from {}):\n  here: stdio `here-server`\n",
            mcp_json.display()
        )),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("there-server"), "{}", run.stdout);
    let warnings: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(warnings.len(), 1, "{}", run.stderr);
    assert!(
        warnings[0].contains(&format!(
            "MCP servers come from {}; the mcpServers of {} are not used (name the file with --config)",
            mcp_json.display(),
            toml.display()
        )),
        "{}",
        run.stderr
    );
    // Named with --config, config.toml is the one file: no warning.
    let toml_path = toml.to_string_lossy().into_owned();
    let named = super::mcp::claij_in(
        &work.path(""),
        &home.path(""),
        &["config", "show", "--config", &toml_path],
        &[],
    );
    assert_eq!((named.code, named.stderr.as_str()), (0, ""));
    assert!(
        named.stdout.contains("  there: stdio `there-server`"),
        "{}",
        named.stdout
    );
}
