//! The newest pinned release of the official MCP conformance suite (0.2.0-alpha.12, installed by
//! `cargo xtask mcp-servers` into `$CLAIJ_MCP_SERVERS/conformance-0.2`), which also tests the
//! 2026-07-28 revision of the specification, drives `claij-suite mcp-conformance` through every client
//! scenario it lists, one test each (0.1.16's twenty run in [`super::conformance`]).
//!
//! What is an extension is the suite's own metadata: a scenario whose `source` names an
//! `extensionId` is listed by `conformance list --client` as `[extension]`, and those (optional
//! extensions of the protocol, outside any specification revision) are skipped with that reason.
//! Every other scenario must pass, except the ones in [`KNOWN_FAILING`], each with why; a scenario
//! there that passes fails its test, so the list only shrinks. Under `CI=true` a missing suite
//! fails every test here.

use claij_test_support::mcp::ConformanceSuite as Suite;

use crate::conformance::{check_listed, check_with, scenarios};

/// The folder of the MCP server cache this release is installed in.
const FOLDER: &str = "conformance-0.2";

/// Every client scenario of the release, with the spec versions `conformance list --client` gives
/// it. `every_client_scenario_has_a_test` checks this against the suite.
const SCENARIOS: &[(&str, &str)] = &[
    ("initialize", "2025-06-18,2025-11-25"),
    ("tools_call", "2025-06-18,2025-11-25,2026-07-28"),
    ("elicitation-sep1034-client-defaults", "2025-11-25"),
    ("sse-retry", "2025-11-25"),
    ("request-metadata", "2026-07-28"),
    ("auth/metadata-default", "2025-11-25,2026-07-28"),
    ("auth/metadata-var1", "2025-11-25,2026-07-28"),
    ("auth/metadata-var2", "2025-11-25,2026-07-28"),
    ("auth/metadata-var3", "2025-11-25,2026-07-28"),
    ("auth/basic-cimd", "2025-11-25,2026-07-28"),
    ("auth/scope-from-www-authenticate", "2025-11-25,2026-07-28"),
    ("auth/scope-from-scopes-supported", "2025-11-25,2026-07-28"),
    ("auth/scope-omitted-when-undefined", "2025-11-25,2026-07-28"),
    ("auth/scope-step-up", "2025-11-25,2026-07-28"),
    ("auth/scope-retry-limit", "2025-11-25,2026-07-28"),
    (
        "auth/token-endpoint-auth-basic",
        "2025-06-18,2025-11-25,2026-07-28",
    ),
    (
        "auth/token-endpoint-auth-post",
        "2025-06-18,2025-11-25,2026-07-28",
    ),
    (
        "auth/token-endpoint-auth-none",
        "2025-06-18,2025-11-25,2026-07-28",
    ),
    ("auth/pre-registration", "2025-11-25,2026-07-28"),
    ("auth/2025-03-26-oauth-metadata-backcompat", "2025-03-26"),
    ("auth/2025-03-26-oauth-endpoint-fallback", "2025-03-26"),
    ("auth/resource-mismatch", "2026-07-28"),
    ("auth/offline-access-scope", "2026-07-28"),
    ("auth/offline-access-not-supported", "2026-07-28"),
    ("auth/authorization-server-migration", "2026-07-28"),
    ("auth/iss-supported", "2026-07-28"),
    ("auth/iss-not-advertised", "2026-07-28"),
    ("auth/iss-supported-missing", "2026-07-28"),
    ("auth/iss-wrong-issuer", "2026-07-28"),
    ("auth/iss-unexpected", "2026-07-28"),
    ("auth/iss-normalized", "2026-07-28"),
    ("auth/metadata-issuer-mismatch", "2026-07-28"),
    ("auth/client-credentials-jwt", "extension"),
    ("auth/client-credentials-basic", "extension"),
    ("auth/enterprise-managed-authorization", "extension"),
    ("auth/dpop", "extension"),
    ("auth/dpop-nonce", "extension"),
    ("auth/wif-jwt-bearer", "extension"),
    ("sep-2322-client-request-state", "2026-07-28"),
    ("http-standard-headers", "2026-07-28"),
    ("http-custom-headers", "2026-07-28"),
    ("http-invalid-tool-headers", "2026-07-28"),
    ("json-schema-ref-no-deref", "2026-07-28"),
    ("json-schema-2020-12-preservation", "2025-11-25,2026-07-28"),
    ("sep-2640-client-no-prefetch", "extension"),
    ("sep-2640-client-verify-digest", "extension"),
    ("sep-2640-client-verify-size", "extension"),
    ("sep-2640-client-verify-frontmatter", "extension"),
];

/// What claij does not pass yet, and why. THE one list of expected failures of this release: each
/// test here asserts its scenario still fails, so fixing one means deleting its line.
const KNOWN_FAILING: &[(&str, &str)] = &[];

/// Runs `scenario` of this release ([`check_with`]).
#[track_caller]
fn check(scenario: &str) {
    let Some(suite) = Suite::find_release(scenario, FOLDER) else {
        return;
    };
    check_with(&suite, SCENARIOS, KNOWN_FAILING, scenario);
}

#[test]
fn every_client_scenario_has_a_test() {
    let Some(suite) = Suite::find_release("every_client_scenario_has_a_test", FOLDER) else {
        return;
    };
    check_listed(&suite, SCENARIOS, KNOWN_FAILING);
}

/// The suite's own verdict on the 2026-07-28 revision: `client --requirements 2026-07-28` runs
/// exactly the client scenarios the revision requires, frozen at its release, at its wire (the
/// stateless protocol), and exits 0 only when every scored one passes (extensions and scenarios
/// added after the release are run and reported, never scored).
#[test]
fn the_2026_07_28_requirements_pass() {
    let Some(suite) = Suite::find_release("the_2026_07_28_requirements_pass", FOLDER) else {
        return;
    };
    let claij = env!("CARGO_BIN_EXE_claij-suite");
    let command = format!("{claij} mcp-conformance --elicitation defaults --timeout 20");
    let (code, text) = suite.run(
        &[
            "client",
            "--requirements",
            "2026-07-28",
            "--command",
            &command,
        ],
        &std::env::temp_dir(),
    );
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("Running requirements 2026-07-28"), "{text}");
}

scenarios! {
    initialize => "initialize",
    tools_call => "tools_call",
    elicitation_sep1034_client_defaults => "elicitation-sep1034-client-defaults",
    sse_retry => "sse-retry",
    request_metadata => "request-metadata",
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
    auth_authorization_server_migration => "auth/authorization-server-migration",
    auth_iss_supported => "auth/iss-supported",
    auth_iss_not_advertised => "auth/iss-not-advertised",
    auth_iss_supported_missing => "auth/iss-supported-missing",
    auth_iss_wrong_issuer => "auth/iss-wrong-issuer",
    auth_iss_unexpected => "auth/iss-unexpected",
    auth_iss_normalized => "auth/iss-normalized",
    auth_metadata_issuer_mismatch => "auth/metadata-issuer-mismatch",
    auth_client_credentials_jwt => "auth/client-credentials-jwt",
    auth_client_credentials_basic => "auth/client-credentials-basic",
    auth_enterprise_managed_authorization => "auth/enterprise-managed-authorization",
    auth_dpop => "auth/dpop",
    auth_dpop_nonce => "auth/dpop-nonce",
    auth_wif_jwt_bearer => "auth/wif-jwt-bearer",
    sep_2322_client_request_state => "sep-2322-client-request-state",
    http_standard_headers => "http-standard-headers",
    http_custom_headers => "http-custom-headers",
    http_invalid_tool_headers => "http-invalid-tool-headers",
    json_schema_ref_no_deref => "json-schema-ref-no-deref",
    json_schema_2020_12_preservation => "json-schema-2020-12-preservation",
    sep_2640_client_no_prefetch => "sep-2640-client-no-prefetch",
    sep_2640_client_verify_digest => "sep-2640-client-verify-digest",
    sep_2640_client_verify_size => "sep-2640-client-verify-size",
    sep_2640_client_verify_frontmatter => "sep-2640-client-verify-frontmatter",
}
