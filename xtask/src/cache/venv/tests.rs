//! The stamp that vouches for a pinned venv, with and without constraints; the Python it needs.

use super::*;
use crate::cache;

/// A distribution pinned at 1.2.0; with `constraints`, pip is constrained by them.
fn pinned(constraints: Option<&'static str>) -> PinnedVenv {
    PinnedVenv {
        command: "test",
        cache: cache::COLLECTOR,
        distribution: "some-distribution",
        version: "1.2.0",
        extras: "",
        verify_py: "",
        constraints,
        no_deps: false,
        python: Some(((3, 11), (3, 14))),
        install_note: "",
        pip_hint: "",
        cmake: None,
    }
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("xtask-venv-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// Without constraints, and with them: then a stamp vouches only for a venv installed with the
/// same constraints.
#[test]
fn the_stamp_vouches_only_for_the_pinned_version_its_constraints_and_its_python() {
    const CONSTRAINTS: &str = "numpy==2.0\n";
    for constraints in [None, Some(CONSTRAINTS)] {
        let venv = pinned(constraints);
        let dir = temp_dir(if constraints.is_some() {
            "constraints"
        } else {
            "stamp"
        });
        assert_eq!(venv.check(&dir), Err("not installed yet".to_owned()));
        fs::write(dir.join(STAMP), "{").unwrap();
        assert!(venv.check(&dir).unwrap_err().ends_with("is malformed"));
        fs::write(dir.join(STAMP), "{\"other-distribution\": \"1.2.0\"}").unwrap();
        assert!(venv.check(&dir).unwrap_err().ends_with("is malformed"));
        fs::write(dir.join(STAMP), venv.stamp_text("1.1.9")).unwrap();
        assert_eq!(
            venv.check(&dir),
            Err("installed 1.1.9 (pinned 1.2.0)".to_owned())
        );
        fs::write(dir.join(STAMP), venv.stamp_text("1.2.0")).unwrap();
        if let Some(constraints) = constraints {
            let other = Err("installed with other constraints".to_owned());
            assert_eq!(venv.check(&dir), other);
            fs::write(dir.join(CONSTRAINTS_FILE), "numpy==1.0\n").unwrap();
            assert_eq!(venv.check(&dir), other);
            fs::write(dir.join(CONSTRAINTS_FILE), constraints).unwrap();
        }
        assert!(
            venv.check(&dir)
                .unwrap_err()
                .ends_with("venv/bin/python is missing")
        );
        fs::create_dir_all(dir.join("venv/bin")).unwrap();
        fs::write(venv_python(&dir), "").unwrap();
        assert_eq!(venv.check(&dir), Ok(()));
        fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn the_stamp_names_the_distribution_and_its_version() {
    assert_eq!(
        pinned(None).stamp_text("1.2.0"),
        "{\n  \"some-distribution\": \"1.2.0\"\n}\n"
    );
}

#[test]
fn the_requirement_is_the_distribution_its_extras_and_the_pinned_version() {
    assert_eq!(pinned(None).requirement(), "some-distribution==1.2.0");
    let with_extras = PinnedVenv {
        extras: "[server]",
        ..pinned(None)
    };
    assert_eq!(
        with_extras.requirement(),
        "some-distribution[server]==1.2.0"
    );
}

#[test]
fn python_versions_are_read_and_checked_against_the_range() {
    assert_eq!(parse_python_version("3 11\n"), Some((3, 11)));
    assert_eq!(parse_python_version("3 9 1"), None);
    assert_eq!(parse_python_version("three"), None);
    assert_eq!(parse_python_version(""), None);
    let venv = pinned(None);
    assert!(!venv.supports((3, 10)));
    assert!(venv.supports((3, 11)));
    assert!(venv.supports((3, 14)));
    assert!(!venv.supports((3, 15)));
    assert!(!venv.supports((2, 12)));
    let any = PinnedVenv {
        python: None,
        ..pinned(None)
    };
    assert!(any.supports((2, 7)));
}

#[test]
fn pip_installs_quietly_without_prompts_with_its_cache_in_the_cache_dir() {
    let pip = pip_install(Path::new("/c/venv/bin/python"), Path::new("/c/pip-cache"));
    assert_eq!(pip.get_program(), "/c/venv/bin/python");
    let args: Vec<_> = pip.get_args().map(|a| a.to_string_lossy()).collect();
    assert_eq!(
        args,
        [
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "--no-input",
            "--progress-bar",
            "off",
            "--cache-dir",
            "/c/pip-cache"
        ]
    );
}

/// A cmake build pinned with `args`.
fn built_with(args: &'static str) -> PinnedVenv {
    PinnedVenv {
        cmake: Some(CmakeBuild {
            args,
            about: "a test baseline",
        }),
        ..pinned(None)
    }
}

/// A venv built from source vouches only for a build with the same `CMAKE_ARGS`: a stamp written
/// before they were recorded (a build for "this CPU") or with other arguments means a rebuild.
#[test]
fn a_cmake_build_is_vouched_for_only_with_the_same_cmake_args() {
    let portable = built_with("-DGGML_NATIVE=OFF -DGGML_AVX2=ON");
    let dir = temp_dir("cmake");
    fs::create_dir_all(dir.join("venv/bin")).unwrap();
    fs::write(venv_python(&dir), "").unwrap();
    let other_build = Err("built with other cmake arguments".to_owned());
    // No arguments recorded: the stamp of a plain (native) build.
    fs::write(dir.join(STAMP), pinned(None).stamp_text("1.2.0")).unwrap();
    assert_eq!(portable.check(&dir), other_build);
    // Other arguments.
    let native = built_with("-DGGML_NATIVE=ON");
    fs::write(dir.join(STAMP), native.stamp_text("1.2.0")).unwrap();
    assert_eq!(portable.check(&dir), other_build);
    // Arguments that are not a string.
    fs::write(
        dir.join(STAMP),
        "{\"some-distribution\": \"1.2.0\", \"cmake_args\": 7}",
    )
    .unwrap();
    assert_eq!(portable.check(&dir), other_build);
    // The same arguments, recorded by the stamp.
    let stamp = portable.stamp_text("1.2.0");
    assert!(
        stamp.contains("\"cmake_args\": \"-DGGML_NATIVE=OFF -DGGML_AVX2=ON\""),
        "{stamp}"
    );
    fs::write(dir.join(STAMP), stamp).unwrap();
    assert_eq!(portable.check(&dir), Ok(()));
    // A venv that is not built from source ignores the key.
    assert_eq!(pinned(None).check(&dir), Ok(()));
    fs::remove_dir_all(&dir).unwrap();
}

/// pip's wheel cache is kept per build arguments, so a wheel built otherwise is never reused; a
/// venv that is not built from source keeps the plain cache.
#[test]
fn the_pip_cache_is_kept_per_cmake_args() {
    let dir = Path::new("/c");
    assert_eq!(pinned(None).pip_cache_dir(dir), Path::new("/c/pip-cache"));
    let portable = built_with("-DGGML_NATIVE=OFF").pip_cache_dir(dir);
    let native = built_with("-DGGML_NATIVE=ON").pip_cache_dir(dir);
    assert_ne!(portable, native);
    assert!(
        portable.starts_with("/c/pip-cache"),
        "{}",
        portable.display()
    );
    assert_eq!(
        portable,
        built_with("-DGGML_NATIVE=OFF").pip_cache_dir(dir),
        "the same arguments, the same cache"
    );
}

/// The install's command: the requirement last; `--no-deps` only when the pin says so; the
/// constraints file in the cache when there are constraints.
#[test]
fn pip_installs_the_requirement_alone_only_with_no_deps() {
    let dir = Path::new("/c");
    let args = |venv: PinnedVenv| -> Vec<String> {
        venv.pip(dir)
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    };
    let plain = args(pinned(None));
    assert_eq!(
        plain.last().map(String::as_str),
        Some("some-distribution==1.2.0")
    );
    assert!(!plain.iter().any(|a| a == "--no-deps"), "{plain:?}");
    let alone = args(PinnedVenv {
        no_deps: true,
        ..pinned(None)
    });
    assert_eq!(
        alone[alone.len() - 2..],
        ["--no-deps", "some-distribution==1.2.0"]
    );
    let constrained = args(pinned(Some("numpy==2.0\n")));
    let at = constrained
        .iter()
        .position(|a| a == "--constraint")
        .unwrap();
    assert_eq!(constrained[at + 1], "/c/constraints.txt");
}
