//! Unit and property tests of the redaction rules.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::borrow::Cow;

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;

#[track_caller]
fn check(text: &str, expected: &str) {
    assert_eq!(redact_text(text), expected, "redact_text({text:?})");
}

#[track_caller]
fn check_url(url: &str, expected: &str) {
    assert_eq!(redact_url(url), expected, "redact_url({url:?})");
}

#[test]
fn keys_by_prefix() {
    check("key sk-proj-AbC123xyz7890_-q end", "key sk-*** end");
    check("sk-or-v1-0123456789abcdef0123", "sk-***");
    check("\"sk-ant-api03-abcdefghijklmnop\"", "\"sk-***\"");
    check("AIzaSyA-1234567890abcdefghijklmno", "AIza***");
    check("xai-0123456789abcdef", "xai-***");
    check("gsk_0123456789abcdef", "gsk_***");
    check("pplx-0123456789abcdef", "pplx-***");
    check("hf_0123456789abcdefgh", "hf_***");
    check("ghp_0123456789abcdefgh", "ghp_***");
    // Too short, or inside a word: kept.
    check("sk-learn", "sk-learn");
    check("task-0123456789abcdef", "task-0123456789abcdef");
    check("AIzaShort", "AIzaShort");
    check("hf_transfer", "hf_transfer");
}

#[test]
fn bearer_tokens_and_auth_headers() {
    check("Authorization: Bearer abc.def", "Authorization: Bearer ***");
    check(
        "authorization=Basic dXNlcjpwYXNz",
        "authorization=Basic ***",
    );
    check("bearer eyJhbGciOiJIUzI1NiJ9.payload.sig", "bearer ***");
    check("the bearer of bad news", "the bearer of bad news");
    check("x-api-key: live-key-123\nnext", "x-api-key: ***\nnext");
    check(
        r#"{"x-api-key": "abc", "a": 1}"#,
        r#"{"x-api-key": "***", "a": 1}"#,
    );
    check("X-Goog-Api-Key:secret123", "X-Goog-Api-Key:***");
    check(
        "Proxy-Authorization: token abc",
        "Proxy-Authorization: token ***",
    );
    check("api-key = 42", "api-key = ***");
    // JSON text inside a JSON string.
    check(
        r#"{"raw": "{\"x-api-key\": \"abc\", \"n\": 1}"}"#,
        r#"{"raw": "{\"x-api-key\": \"***\", \"n\": 1}"}"#,
    );
    // Not a header: kept.
    check("authorizations: many", "authorizations: many");
    check("my-x-api-key-field", "my-x-api-key-field");
}

#[test]
fn query_parameters() {
    check(
        "https://h/v1?key=abc&alt=sse",
        "https://h/v1?key=***&alt=sse",
    );
    check("/m?alt=sse&key=abc#frag", "/m?alt=sse&key=***#frag");
    check("?access_token=ya29.a0Af\"", "?access_token=***\"");
    check("api_key=abc123 in config", "api_key=*** in config");
    // `key=` outside a query string is prose.
    check("the key=value pair", "the key=value pair");
}

#[test]
fn url_user_info() {
    check(
        "see https://ada:s3cr3t@example.invalid/x now",
        "see https://***@example.invalid/x now",
    );
    check("ssh://git@host:22/r", "ssh://***@host:22/r");
    check("\"http://tok@h\"", "\"http://***@h\"");
    // No user info, or an `@` in the path: kept.
    check(
        "https://example.invalid/@ada",
        "https://example.invalid/@ada",
    );
    check("mailto:ada@example.invalid", "mailto:ada@example.invalid");
    check("a://@b", "a://@b");
}

#[test]
fn unicode_and_plain_text_are_kept() {
    check("", "");
    check("héllo wörld 👍 sk-", "héllo wörld 👍 sk-");
    check("é sk-0123456789abcdef ü", "é sk-*** ü");
    check("ключ=sk-0123456789abcdef", "ключ=sk-***");
    assert!(matches!(redact_text("plain"), Cow::Borrowed(_)));
}

#[test]
fn urls_keep_only_the_server() {
    check_url("http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1");
    check_url(
        "https://user:pw@host.invalid/v1?key=k#f",
        "https://***@host.invalid/v1?***#***",
    );
    check_url("http://host.invalid?token=t", "http://host.invalid?***");
    check_url("https://h.invalid/x#s3cr3t", "https://h.invalid/x#***");
    check_url(
        "https://s3cr3t@127.0.0.1?key=s3cr3t",
        "https://***@127.0.0.1?***",
    );
    check_url("not a url", "not a url");
    check_url("", "");
}

#[test]
fn urls_in_messages_lose_their_secrets() {
    let message = "error sending request for url (http://127.0.0.1:4/mcp?token=s3cr3t), when \
                   sending to https://ada:s3cr3t@example.invalid/x#frag and 'http://h/p?q=s3cr3t' \
                   with Bearer abcdefgh12345678";
    assert_eq!(
        redact_urls_in(message),
        "error sending request for url (http://127.0.0.1:4/mcp?***), when sending to \
         https://***@example.invalid/x#*** and 'http://h/p?***' with Bearer ***"
    );
    assert!(matches!(redact_urls_in("no url here"), Cow::Borrowed(_)));
    assert_eq!(redact_urls_in("HTTPS://h/?a=b"), "HTTPS://h/?***");
}

#[test]
fn values_blank_credential_members_and_redact_strings() {
    let mut value = json!({
        "Authorization": "Bearer x",
        "api_key": "k",
        "Client_Secret": "c",
        "PASSWORD": "p",
        "nested": [{"text": "use sk-0123456789abcdef"}, 3, null],
        "x-api-key": {"type": "string"},
    });
    redact_value(&mut value);
    assert_eq!(
        value,
        json!({
            "Authorization": "***",
            "api_key": "***",
            "Client_Secret": "***",
            "PASSWORD": "***",
            "nested": [{"text": "use sk-***"}, 3, null],
            "x-api-key": {"type": "string"},
        })
    );
}

#[test]
fn values_of_any_depth() {
    let mut value = json!("sk-0123456789abcdef");
    for _ in 0..100_000 {
        value = Value::Array(vec![value]);
    }
    redact_value(&mut value);
    let mut inner = &value;
    while let Value::Array(items) = inner {
        inner = &items[0];
    }
    assert_eq!(inner, "sk-***");
    // serde_json drops nested values recursively: unwind by hand so the test's own stack holds.
    let mut value = value;
    while let Value::Array(mut items) = value {
        value = items.pop().unwrap_or(Value::Null);
    }
}

#[test]
fn a_known_secret_and_its_copies() {
    let key = "live-key-1234567890";
    assert_eq!(
        redact_secret("bad key live-key-1234567890 given", key),
        "bad key *** given"
    );
    // base64 alone (padded), URL-safe, and inside `Basic base64(user:key)` at every alignment.
    for (text, expected) in [
        ("bGl2ZS1rZXktMTIzNDU2Nzg5MA==", "***"),
        ("Basic dXNlcjpsaXZlLWtleS0xMjM0NTY3ODkw", "Basic dXNlcjp***"),
        ("Basic dTpsaXZlLWtleS0xMjM0NTY3ODkw", "Basic dTp***"),
        ("Basic OmxpdmUta2V5LTEyMzQ1Njc4OTA=", "Basic Om***A="),
    ] {
        assert_eq!(redact_secret(text, key), expected, "{text}");
    }
    // Percent-encoded.
    assert_eq!(redact_secret("?k=a%2Fb%2Bc%3D1234", "a/b+c=1234"), "?k=***");
    // Short secrets match only as themselves; an empty one never.
    assert_eq!(redact_secret("x abc x", "abc"), "x *** x");
    assert!(matches!(redact_secret("anything", ""), Cow::Borrowed(_)));
    assert!(matches!(
        redact_secret("nothing here", key),
        Cow::Borrowed(_)
    ));
}

#[test]
fn base64_matches_the_standard_encoding() {
    for (input, expected) in [
        ("", ""),
        ("f", "Zg=="),
        ("fo", "Zm8="),
        ("foo", "Zm9v"),
        ("foob", "Zm9vYg=="),
        ("fooba", "Zm9vYmE="),
        ("foobar", "Zm9vYmFy"),
    ] {
        assert_eq!(base64(input.as_bytes(), STANDARD, true), expected);
    }
    assert_eq!(base64(&[0xfb, 0xff], URL_SAFE, false), "-_8");
}

/// A key body: the part of a key that must never survive.
fn secret() -> impl Strategy<Value = String> {
    "[A-Za-z0-9]{16,40}"
}

/// Arbitrary text around a secret, kept apart from it by a space so it cannot become part of it.
fn around() -> impl Strategy<Value = String> {
    any::<String>()
}

proptest! {
    #[test]
    fn every_form_in_text_is_redacted(secret in secret(), before in around(), after in around()) {
        for form in claij_test_support::secrets::secret_forms(&secret) {
            let text = format!("{before} {form} {after}");
            let redacted = redact_text(&text);
            prop_assert!(
                !redacted.contains(&secret) || before.contains(&secret) || after.contains(&secret),
                "{form:?} survived in {redacted:?}"
            );
            let again = redact_text(&redacted);
            prop_assert_eq!(&again, &redacted, "redacting twice changed {:?}", text);
        }
    }

    #[test]
    fn every_form_in_json_is_redacted(secret in secret(), name in "[a-z_]{1,12}", other in around()) {
        for form in claij_test_support::secrets::secret_forms(&secret) {
            let mut value = json!({name.clone(): [form.clone(), {"note": other.clone()}]});
            redact_value(&mut value);
            prop_assert!(!value.to_string().contains(&secret), "{form:?} survived in {value}");
        }
        for header in ["Authorization", "x-api-key", "API_KEY", "access_token", "password"] {
            let mut value = json!({"headers": {header: secret.clone()}});
            redact_value(&mut value);
            prop_assert!(!value.to_string().contains(&secret), "{header} survived in {value}");
        }
    }

    #[test]
    fn every_url_form_is_redacted(secret in secret(), other in around()) {
        for url in claij_test_support::secrets::secret_urls(&secret) {
            let redacted = redact_url(&url);
            prop_assert!(!redacted.contains(&secret), "{url:?} became {redacted:?}");
            let message = format!("{other} ({url}) {other}");
            let redacted = redact_urls_in(&message);
            prop_assert!(
                !redacted.contains(&secret) || other.contains(&secret),
                "{message:?} became {redacted:?}"
            );
        }
    }

    #[test]
    fn a_known_secret_is_redacted_in_every_copy(
        secret in "[ -~]{8,40}",
        before in around(),
        prefix in "[ -~]{0,5}",
    ) {
        let std = base64(format!("{prefix}{secret}").as_bytes(), STANDARD, true);
        let url_safe = base64(format!("{prefix}{secret}").as_bytes(), URL_SAFE, false);
        for text in [
            format!("{before}{secret}"),
            format!("{before} Basic {std} "),
            format!("{before}?k={url_safe}"),
            format!("{before}={}&", percent_encode(&secret)),
        ] {
            let redacted = redact_secret(&text, &secret);
            let tail = redacted.strip_prefix(&before).unwrap_or(&redacted);
            prop_assert!(!tail.contains(&secret), "{text:?} became {redacted:?}");
            for offset in 0..3 {
                for alphabet in [STANDARD, URL_SAFE] {
                    let core = base64_core(secret.as_bytes(), offset, alphabet);
                    prop_assert!(!tail.contains(&core), "{core} of {text:?} in {redacted:?}");
                }
            }
        }
    }

    #[test]
    fn arbitrary_input_never_panics(text in any::<String>(), bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        let lossy = String::from_utf8_lossy(&bytes);
        for input in [text.as_str(), &lossy] {
            let redacted = redact_text(input);
            prop_assert_eq!(redact_text(&redacted), redacted.clone());
            let _ = redact_url(input);
            let _ = redact_urls_in(input);
            let _ = redact_secret(input, input);
            let mut value = json!({ input: input, "authorization": input });
            redact_value(&mut value);
        }
    }
}
