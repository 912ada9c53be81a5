//! Every form of secret claij-backends' `redact` rules remove, built around a given secret, so the
//! property tests of each place that redacts (cassettes, the failure log, MCP and CLI configuration)
//! check one and the same list.

/// Texts that each carry `secret` in a form
/// [`redact_text`](claij_backends::redact::redact_text) removes: provider keys by prefix, bearer
/// tokens, auth headers as text and JSON, query parameters and URL user info.
/// `secret` should be 16 or more ASCII letters and digits (a shorter one is not a key by its form).
///
/// ```
/// use claij_backends::redact::redact_text;
/// use claij_test_support::secrets::secret_forms;
///
/// for form in secret_forms("0123456789abcdefXYZ") {
///     assert!(!redact_text(&form).contains("0123456789abcdefXYZ"), "{form}");
/// }
/// ```
pub fn secret_forms(secret: &str) -> Vec<String> {
    let s = secret;
    let mut forms: Vec<String> = [
        "sk-",
        "sk-proj-",
        "sk-ant-api03-",
        "sk-or-v1-",
        "gsk_",
        "AIza",
        "xai-",
        "pplx-",
        "nvapi-",
        "hf_",
        "r8_",
        "ghp_",
        "github_pat_",
        "glpat-",
    ]
    .iter()
    .map(|prefix| format!("{prefix}{s}"))
    .collect();
    forms.extend([
        format!("Authorization: Bearer {s}"),
        format!("authorization: basic {s}"),
        format!("Proxy-Authorization: token {s}"),
        format!("bearer {s}"),
        format!("x-api-key: {s}"),
        format!("X-Goog-Api-Key:{s}"),
        format!("api-key = {s}"),
        format!(r#"{{"x-api-key": "{s}"}}"#),
        format!(r#"{{"Authorization":"Bearer {s}"}}"#),
        format!(r#"{{"api_key": "{s}"}}"#),
        format!(r#"{{\"X-Api-Key\": \"{s}\"}}"#),
        format!("api_key={s}"),
        format!("access_token={s}"),
    ]);
    forms.extend(secret_urls(secret));
    forms
}

/// URLs that each carry `secret` where [`redact_url`](claij_backends::redact::redact_url) removes
/// it: user info, any query parameter, the fragment, a key in the path.
pub fn secret_urls(secret: &str) -> Vec<String> {
    let s = secret;
    vec![
        format!("https://user:{s}@proxy.invalid/v1"),
        format!("https://{s}@proxy.invalid"),
        format!("http://127.0.0.1:8080/v1?key={s}"),
        format!("https://host.invalid/mcp?alt=sse&token={s}"),
        format!("https://host.invalid/v1?api_key={s}#top"),
        format!("https://host.invalid/bot/sk-{s}/send"),
    ]
}
