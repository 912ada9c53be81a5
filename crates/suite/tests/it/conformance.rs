//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, installed by `cargo xtask
//! mcp-servers` into `$CLAIJ_MCP_SERVERS/conformance`) drives `claij-suite mcp-conformance` through
//! every client scenario, one test each: a scenario passes when the suite says so (exit 0).
//!
//! The suite's test servers listen on an ephemeral port and claij's conformance mode talks to
//! loopback URLs only. Scenarios the suite itself marks `draft` or `extension` are skipped with that
//! reason; the ones claij does not pass yet are in [`KNOWN_FAILING`], each with why, and a scenario
//! there that passes fails its test, so the list only shrinks.

use claij_test_support::mcp::ConformanceSuite as Suite;

/// Every client scenario of the pinned suite, with the spec versions `conformance list` gives it.
/// `every_client_scenario_has_a_test` checks this against the suite.
const SCENARIOS: &[(&str, &str)] = &[
    ("initialize", "2025-06-18,2025-11-25"),
    ("tools_call", "2025-06-18,2025-11-25"),
    ("elicitation-sep1034-client-defaults", "2025-11-25"),
    ("sse-retry", "2025-11-25"),
    ("auth/metadata-default", "2025-11-25"),
    ("auth/metadata-var1", "2025-11-25"),
    ("auth/metadata-var2", "2025-11-25"),
    ("auth/metadata-var3", "2025-11-25"),
    ("auth/basic-cimd", "2025-11-25"),
    ("auth/scope-from-www-authenticate", "2025-11-25"),
    ("auth/scope-from-scopes-supported", "2025-11-25"),
    ("auth/scope-omitted-when-undefined", "2025-11-25"),
    ("auth/scope-step-up", "2025-11-25"),
    ("auth/scope-retry-limit", "2025-11-25"),
    ("auth/token-endpoint-auth-basic", "2025-06-18,2025-11-25"),
    ("auth/token-endpoint-auth-post", "2025-06-18,2025-11-25"),
    ("auth/token-endpoint-auth-none", "2025-06-18,2025-11-25"),
    ("auth/pre-registration", "2025-11-25"),
    ("auth/2025-03-26-oauth-metadata-backcompat", "2025-03-26"),
    ("auth/2025-03-26-oauth-endpoint-fallback", "2025-03-26"),
    ("auth/resource-mismatch", "draft"),
    ("auth/offline-access-scope", "draft"),
    ("auth/offline-access-not-supported", "draft"),
    ("auth/client-credentials-jwt", "extension"),
    ("auth/client-credentials-basic", "extension"),
    ("auth/cross-app-access-complete-flow", "extension"),
];

/// What claij does not pass yet, and why. THE one list of expected failures: each test here
/// asserts its scenario still fails, so fixing one means deleting its line.
const KNOWN_FAILING: &[(&str, &str)] = &[];

/// Runs `scenario` against `claij-suite mcp-conformance`, and checks it passes, or, when it is in
/// [`KNOWN_FAILING`], that it still fails.
#[track_caller]
fn check(scenario: &str) {
    let Some(suite) = Suite::find(scenario) else {
        return;
    };
    check_with(&suite, SCENARIOS, KNOWN_FAILING, scenario);
}

/// Runs `scenario` of `suite` against `claij-suite mcp-conformance`: it must pass, or, when it is in
/// `known_failing`, still fail. A scenario `scenarios` marks `draft` or `extension` is skipped.
#[track_caller]
pub(crate) fn check_with(
    suite: &Suite,
    scenarios: &[(&str, &str)],
    known_failing: &[(&str, &str)],
    scenario: &str,
) {
    let Some((_, versions)) = scenarios.iter().find(|(name, _)| *name == scenario) else {
        panic!("{scenario} is not in SCENARIOS");
    };
    if matches!(*versions, "draft" | "extension") {
        #[allow(clippy::print_stderr, reason = "a skipped test says so")]
        {
            eprintln!("{scenario}: skipped: the suite marks it a {versions} scenario");
        }
        return;
    }
    let claij = env!("CARGO_BIN_EXE_claij-suite");
    assert!(
        !claij.contains(' '),
        "the suite splits --command on spaces: {claij}"
    );
    let command = format!("{claij} mcp-conformance --elicitation defaults --timeout 20");
    // Without --output-dir the suite writes nothing.
    let (code, text) = suite.run(
        &["client", "--command", &command, "--scenario", scenario],
        &std::env::temp_dir(),
    );
    let passed = code == Some(0);
    match known_failing.iter().find(|(name, _)| *name == scenario) {
        Some((_, reason)) => assert!(
            !passed,
            "{scenario} passes now: remove it from KNOWN_FAILING (it said: {reason})\n{text}"
        ),
        None => assert!(passed, "{scenario} failed (exit {code:?}):\n{text}"),
    }
}

/// The client scenarios `conformance list --client` prints, each with its bracketed versions
/// (`2025-11-25,2026-07-28`, `draft`, `extension`).
fn listed_client_scenarios(suite: &Suite) -> Vec<(String, String)> {
    let (code, text) = suite.run(&["list", "--client"], &std::env::temp_dir());
    assert_eq!(code, Some(0), "{text}");
    text.lines()
        .filter_map(|line| line.trim().strip_prefix("- "))
        .filter_map(|entry| {
            let (name, rest) = entry.split_once(" [")?;
            Some((name.to_owned(), rest.strip_suffix(']')?.to_owned()))
        })
        .collect()
}

/// `scenarios` are the client scenarios `suite` lists, with their versions, and each of
/// `known_failing` names one that runs (not `draft` or `extension`).
#[track_caller]
pub(crate) fn check_listed(
    suite: &Suite,
    scenarios: &[(&str, &str)],
    known_failing: &[(&str, &str)],
) {
    let listed = listed_client_scenarios(suite);
    let ours: Vec<(String, String)> = scenarios
        .iter()
        .map(|(name, versions)| ((*name).to_owned(), (*versions).to_owned()))
        .collect();
    assert_eq!(listed, ours, "the suite's client scenarios changed");
    for (name, _) in known_failing {
        assert!(
            scenarios.iter().any(|(scenario, versions)| scenario == name
                && !matches!(*versions, "draft" | "extension")),
            "KNOWN_FAILING names {name}, which is no scenario this release runs"
        );
    }
}

#[test]
fn every_client_scenario_has_a_test() {
    let Some(suite) = Suite::find("every_client_scenario_has_a_test") else {
        return;
    };
    check_listed(&suite, SCENARIOS, KNOWN_FAILING);
}

/// One `#[test]` per scenario, so each passes or fails on its own: each calls the invoking
/// module's `check`, and a test checks every name of its `SCENARIOS` has one.
macro_rules! scenarios {
    ($($test:ident => $scenario:literal,)*) => {
        $(
            #[test]
            fn $test() {
                check($scenario);
            }
        )*

        #[test]
        fn each_scenario_has_its_test_function() {
            let tested = [$($scenario),*];
            for (name, _) in SCENARIOS {
                assert!(tested.contains(name), "no test runs {name}");
            }
        }
    };
}
pub(crate) use scenarios;

scenarios! {
    initialize => "initialize",
    tools_call => "tools_call",
    elicitation_sep1034_client_defaults => "elicitation-sep1034-client-defaults",
    sse_retry => "sse-retry",
    auth_metadata_default => "auth/metadata-default",
    auth_metadata_var1 => "auth/metadata-var1",
    auth_metadata_var2 => "auth/metadata-var2",
    auth_metadata_var3 => "auth/metadata-var3",
    auth_basic_cimd => "auth/basic-cimd",
    auth_scope_from_www_authenticate => "auth/scope-from-www-authenticate",
    auth_scope_from_scopes_supported => "auth/scope-from-scopes-supported",
    auth_scope_omitted_when_undefined => "auth/scope-omitted-when-undefined",
    auth_scope_step_up => "auth/scope-step-up",
    auth_scope_retry_limit => "auth/scope-retry-limit",
    auth_token_endpoint_auth_basic => "auth/token-endpoint-auth-basic",
    auth_token_endpoint_auth_post => "auth/token-endpoint-auth-post",
    auth_token_endpoint_auth_none => "auth/token-endpoint-auth-none",
    auth_pre_registration => "auth/pre-registration",
    auth_2025_03_26_oauth_metadata_backcompat => "auth/2025-03-26-oauth-metadata-backcompat",
    auth_2025_03_26_oauth_endpoint_fallback => "auth/2025-03-26-oauth-endpoint-fallback",
    auth_resource_mismatch => "auth/resource-mismatch",
    auth_offline_access_scope => "auth/offline-access-scope",
    auth_offline_access_not_supported => "auth/offline-access-not-supported",
    auth_client_credentials_jwt => "auth/client-credentials-jwt",
    auth_client_credentials_basic => "auth/client-credentials-basic",
    auth_cross_app_access_complete_flow => "auth/cross-app-access-complete-flow",
}
