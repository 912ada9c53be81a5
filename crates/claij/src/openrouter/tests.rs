//! OpenRouter's cached model list: read fresh without a network call, fetched again when stale or
//! torn, kept when the fetch fails, written by `refresh`; a mock OpenRouter (wiremock) serves the
//! documented-shape list of `fixtures/providers/examples/openrouter-models.json`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use claij_test_support::harness::Files;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::{FILE_NAME, now, read, refresh, write};
use crate::settings::Settings;
use crate::{Claij, ErrorKind};

/// The fixture: a body of `GET /api/v1/models` written from OpenRouter's documented format.
const FIXTURE: &str =
    include_str!("../../../../fixtures/providers/examples/openrouter-models.json");

fn listed() -> Value {
    serde_json::from_str::<Value>(FIXTURE).unwrap()["body"].take()
}

/// A list that says qwen has structured outputs, unlike the served one: which of the two a model
/// was opened with shows whether the cache was used.
fn cached_list() -> Value {
    json!({"data": [{"id": "qwen/qwen-2.5-7b-instruct",
        "supported_parameters": ["structured_outputs", "tools", "tool_choice", "temperature"]}]})
}

fn base_url(server: &MockServer) -> String {
    format!("{}/api/v1", server.uri())
}

/// claij with OpenRouter at `server`, its key set and its cache in `cache`.
fn claij(server: &MockServer, cache: &Files, extra: &str) -> Claij {
    let text = format!(
        "[providers.openrouter]\nbase_url = \"{}\"\nretry_budget_secs = 0\n{extra}",
        base_url(server)
    );
    let settings = Settings::parse(&text, Path::new("/etc/claij.toml")).unwrap();
    Claij::new(settings)
        .with_var("OPENROUTER_API_KEY", "sk-or-test")
        .with_var("XDG_CACHE_HOME", cache.0.as_os_str())
}

fn cache_file(cache: &Files) -> std::path::PathBuf {
    cache.0.join("claij").join(FILE_NAME)
}

/// Whether qwen was opened with native output: only the cached list says it has it.
fn qwen_native(claij: &Claij) -> bool {
    let opened = claij.open("openrouter:qwen/qwen-2.5-7b-instruct").unwrap();
    opened
        .backend
        .capabilities("qwen/qwen-2.5-7b-instruct")
        .native_json_schema
}

async fn serve(server: &MockServer, response: ResponseTemplate, times: u64) {
    Mock::given(method("GET"))
        .and(path("/api/v1/models"))
        .respond_with(response)
        .expect(times)
        .mount(server)
        .await;
}

fn write_cached(cache: &Files, base_url: &str, fetched_at: u64) {
    let body = serde_json::to_vec(&cached_list()).unwrap();
    write(&cache_file(cache), base_url, fetched_at, &body).unwrap();
}

#[tokio::test]
async fn a_fresh_list_is_read_without_a_network_call() {
    let server = MockServer::start().await;
    serve(
        &server,
        ResponseTemplate::new(200).set_body_json(listed()),
        0,
    )
    .await;
    let cache = Files::new(&[]);
    write_cached(&cache, &base_url(&server), now());
    assert!(qwen_native(&claij(&server, &cache, "")));
}

#[tokio::test]
async fn a_stale_list_is_fetched_again() {
    let server = MockServer::start().await;
    serve(
        &server,
        ResponseTemplate::new(200).set_body_json(listed()),
        1,
    )
    .await;
    let cache = Files::new(&[]);
    let day_and_a_bit = now() - 25 * 60 * 60;
    write_cached(&cache, &base_url(&server), day_and_a_bit);
    // The served list: qwen has tools but no structured outputs.
    let claij = claij(&server, &cache, "");
    assert!(!qwen_native(&claij));
    let cached = read(&cache_file(&cache)).unwrap().unwrap();
    assert_eq!(cached.catalog.len(), 4);
    assert!(cached.fetched_at > day_and_a_bit);
}

#[tokio::test]
async fn the_max_age_is_configured() {
    let server = MockServer::start().await;
    serve(
        &server,
        ResponseTemplate::new(200).set_body_json(listed()),
        1,
    )
    .await;
    let cache = Files::new(&[]);
    // Two hours old: fresh by default, stale at an hour.
    write_cached(&cache, &base_url(&server), now() - 2 * 60 * 60);
    assert!(qwen_native(&claij(&server, &cache, "")));
    assert!(!qwen_native(&claij(
        &server,
        &cache,
        "models_max_age_secs = 3600\n"
    )));
}

#[tokio::test]
async fn a_stale_list_is_kept_when_the_fetch_fails() {
    let server = MockServer::start().await;
    serve(&server, ResponseTemplate::new(500), 1).await;
    let cache = Files::new(&[]);
    // The fixture's list (qwen: tools, no structured outputs), stale; the guess would be native.
    let body = serde_json::to_vec(&listed()).unwrap();
    write(&cache_file(&cache), &base_url(&server), 0, &body).unwrap();
    assert!(!qwen_native(&claij(&server, &cache, "")));
}

#[tokio::test]
async fn a_torn_file_is_a_typed_error_and_is_fetched_again() {
    let server = MockServer::start().await;
    serve(
        &server,
        ResponseTemplate::new(200).set_body_json(listed()),
        1,
    )
    .await;
    let cache = Files::new(&[]);
    write_cached(&cache, &base_url(&server), now());
    let file = cache_file(&cache);
    let whole = std::fs::read(&file).unwrap();
    std::fs::write(&file, &whole[..whole.len() / 2]).unwrap();
    let error = read(&file).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::File);
    assert!(
        error.to_string().contains(&*file.to_string_lossy()),
        "{error}"
    );
    // Opening does not fail: the list is fetched again and the file rewritten whole.
    assert!(!qwen_native(&claij(&server, &cache, "")));
    assert_eq!(read(&file).unwrap().unwrap().catalog.len(), 4);
}

#[tokio::test]
async fn without_a_list_for_this_base_url_the_first_open_fetches_it_once() {
    let server = MockServer::start().await;
    serve(
        &server,
        ResponseTemplate::new(200).set_body_json(listed()),
        1,
    )
    .await;
    let cache = Files::new(&[]);
    // No file: the served list decides (qwen: tools, no structured outputs; the guess was native).
    assert!(!qwen_native(&claij(&server, &cache, "")));
    let cached = read(&cache_file(&cache)).unwrap().unwrap();
    assert_eq!(cached.base_url, base_url(&server));
    assert_eq!(cached.catalog.len(), 4);
    // The next run reads it: no second GET (the mock expects one).
    let opened = claij(&server, &cache, "")
        .open("openrouter:acme/no-tools-chat")
        .unwrap();
    assert!(!opened.backend.capabilities("acme/no-tools-chat").tools);
}

#[tokio::test]
async fn another_base_urls_list_is_replaced_by_this_ones() {
    let server = MockServer::start().await;
    serve(
        &server,
        ResponseTemplate::new(200).set_body_json(listed()),
        1,
    )
    .await;
    let cache = Files::new(&[]);
    write_cached(&cache, "https://elsewhere.invalid/api/v1", now());
    assert!(!qwen_native(&claij(&server, &cache, "")));
    let cached = read(&cache_file(&cache)).unwrap().unwrap();
    assert_eq!(cached.base_url, base_url(&server));
}

/// A failed fetch (404, a torn body) leaves the capabilities guessed and caches nothing; the same
/// value does not fetch again, the next run does.
#[tokio::test]
async fn a_failed_fetch_guesses_and_the_next_run_tries_again() {
    for response in [
        ResponseTemplate::new(404),
        ResponseTemplate::new(200).set_body_string(r#"{"data": [{"id": "qwen"#),
    ] {
        let server = MockServer::start().await;
        serve(&server, response, 2).await;
        let cache = Files::new(&[]);
        let first = claij(&server, &cache, "");
        assert!(
            qwen_native(&first),
            "guessed: every non-OpenAI model native"
        );
        assert!(qwen_native(&first), "the same value: no second GET");
        assert!(!cache_file(&cache).exists());
        assert!(
            qwen_native(&claij(&server, &cache, "")),
            "the next run: GET"
        );
    }
}

#[tokio::test]
async fn off_fetches_nothing_and_uses_the_cached_list_however_old() {
    let server = MockServer::start().await;
    serve(
        &server,
        ResponseTemplate::new(200).set_body_json(listed()),
        0,
    )
    .await;
    let cache = Files::new(&[]);
    let off = "model_list = \"off\"\n";
    // No file: guessed (every non-OpenAI model native), nothing fetched.
    assert!(qwen_native(&claij(&server, &cache, off)));
    assert!(!cache_file(&cache).exists());
    // A year-old list for this base URL: used as it is.
    write_cached(&cache, &base_url(&server), 0);
    assert!(qwen_native(&claij(&server, &cache, off)));
    let opened = claij(&server, &cache, off)
        .open("openrouter:acme/no-tools-chat")
        .unwrap();
    assert!(
        opened.backend.capabilities("acme/no-tools-chat").tools,
        "not listed: guessed"
    );
    // A torn file: guessed, not fetched.
    std::fs::write(cache_file(&cache), b"{\"version\": 1").unwrap();
    assert!(qwen_native(&claij(&server, &cache, off)));
    // `claij models --refresh` still fetches.
    let served = MockServer::start().await;
    serve(
        &served,
        ResponseTemplate::new(200).set_body_json(listed()),
        1,
    )
    .await;
    assert_eq!(refresh(&claij(&served, &cache, off)).unwrap().models, 4);
}

#[tokio::test]
async fn refresh_fetches_and_caches_the_list() {
    let server = MockServer::start().await;
    serve(
        &server,
        ResponseTemplate::new(200).set_body_json(listed()),
        1,
    )
    .await;
    let cache = Files::new(&[]);
    let claij = claij(&server, &cache, "");
    let done = refresh(&claij).unwrap();
    assert_eq!(done.models, 4);
    assert_eq!(done.path, cache_file(&cache));
    let line = done.render(false);
    assert!(
        line.starts_with("4 models from http://127.0.0.1:"),
        "{line}"
    );
    let json: Value = serde_json::from_str(&done.render(true)).unwrap();
    assert_eq!(json["models"], 4);
    // Now opening reads it: the no-tools model has no tools.
    let opened = claij.open("openrouter:acme/no-tools-chat").unwrap();
    let capabilities = opened.backend.capabilities("acme/no-tools-chat");
    assert!(!capabilities.tools && !capabilities.native_json_schema);
    // Without a key: a key error naming the variable.
    let settings = claij.settings().clone();
    let keyless = Claij::new(settings).with_var("XDG_CACHE_HOME", cache.0.as_os_str());
    let error = refresh(&keyless).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Key);
    assert!(error.to_string().contains("OPENROUTER_API_KEY"), "{error}");
}

#[test]
fn model_list_is_auto_or_off() {
    let read = |text: &str| Settings::parse(text, Path::new("/etc/claij.toml"));
    let settings = read("[providers.openrouter]\nmodel_list = \"off\"\n").unwrap();
    let openrouter = settings.provider(crate::model::Provider::OpenRouter);
    assert_eq!(openrouter.model_list, crate::settings::ModelList::Off);
    let error = read("[providers.openrouter]\nmodel_list = \"never\"\n").unwrap_err();
    assert_eq!(
        error.to_string(),
        "/etc/claij.toml:2: providers.openrouter.model_list: expected \"auto\" or \"off\""
    );
    assert!(read("[providers.openai]\nmodel_list = \"off\"\n").is_err());
}

#[test]
fn the_max_age_is_checked_where_it_is_written() {
    let text = "[providers.openrouter]\nmodels_max_age_secs = -1\n";
    let error = Settings::parse(text, Path::new("/etc/claij.toml")).unwrap_err();
    assert_eq!(
        error.to_string(),
        "/etc/claij.toml:2: providers.openrouter.models_max_age_secs: expected whole seconds from 0 to 31536000"
    );
    let text = "[providers.openai]\nmodels_max_age_secs = 60\n";
    assert!(Settings::parse(text, Path::new("/etc/claij.toml")).is_err());
}

/// A base URL with user info (a proxy's credentials): neither what `refresh` says nor the file
/// holds them, and the list still serves that base URL.
#[tokio::test]
async fn the_base_url_s_user_info_is_neither_said_nor_cached() {
    let server = MockServer::start().await;
    serve(
        &server,
        ResponseTemplate::new(200).set_body_json(listed()),
        1,
    )
    .await;
    let cache = Files::new(&[]);
    let with_secret = base_url(&server).replace("http://", "http://me:pw-secret@");
    let text =
        format!("[providers.openrouter]\nbase_url = \"{with_secret}\"\nretry_budget_secs = 0\n");
    let settings = Settings::parse(&text, Path::new("/etc/claij.toml")).unwrap();
    let claij = Claij::new(settings)
        .with_var("OPENROUTER_API_KEY", "sk-or-test")
        .with_var("XDG_CACHE_HOME", cache.0.as_os_str());
    let done = refresh(&claij).unwrap();
    for said in [done.render(false), done.render(true)] {
        assert!(!said.contains("pw-secret"), "{said}");
        assert!(said.contains("127.0.0.1"), "{said}");
    }
    let file = std::fs::read_to_string(cache_file(&cache)).unwrap();
    assert!(!file.contains("pw-secret"), "{file}");
    // The cached list is this base URL's: opening reads it, no second GET (the mock expects one).
    let opened = claij.open("openrouter:acme/no-tools-chat").unwrap();
    assert!(!opened.backend.capabilities("acme/no-tools-chat").tools);
}
