//! Where the caches are.

use super::*;

#[track_caller]
fn check(cache: Cache, vars: &[(&str, &str)], expected: Option<&str>) {
    let var = |name: &str| {
        vars.iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| OsString::from(value))
    };
    assert_eq!(
        cache.resolve(var),
        expected.map(PathBuf::from),
        "{cache:?} {vars:?}"
    );
}

#[test]
fn each_cache_follows_its_variable_then_xdg_then_home() {
    for (cache, own) in [
        (MODELS, "/models"),
        (MCP_SERVERS, "/servers"),
        (LLAMA_SERVER, "/llama"),
        (COLLECTOR, "/collector"),
    ] {
        let all = [
            (cache.var, own),
            ("XDG_CACHE_HOME", "/xdg"),
            ("HOME", "/home/me"),
        ];
        check(cache, &all, Some(own));
        check(
            cache,
            &all[1..],
            Some(&format!("/xdg/claij/{}", cache.folder)),
        );
        check(
            cache,
            &all[2..],
            Some(&format!("/home/me/.cache/claij/{}", cache.folder)),
        );
        check(cache, &[], None);
    }
}

#[test]
fn empty_variables_and_a_relative_xdg_cache_home_are_skipped() {
    for cache in [MODELS, MCP_SERVERS] {
        let home = format!("/home/me/.cache/claij/{}", cache.folder);
        check(
            cache,
            &[(cache.var, ""), ("XDG_CACHE_HOME", "/xdg")],
            Some(&format!("/xdg/claij/{}", cache.folder)),
        );
        check(
            cache,
            &[("XDG_CACHE_HOME", ""), ("HOME", "/home/me")],
            Some(&home),
        );
        check(
            cache,
            &[("XDG_CACHE_HOME", "cache"), ("HOME", "/home/me")],
            Some(&home),
        );
        check(cache, &[("HOME", "")], None);
        // The variable is taken as given; `dir` makes it absolute.
        check(cache, &[(cache.var, "rel")], Some("rel"));
    }
    // One cache's variable is not the other's.
    check(
        MCP_SERVERS,
        &[("CLAIJ_MODEL_DIR", "/models"), ("HOME", "/home/me")],
        Some("/home/me/.cache/claij/mcp-servers"),
    );
}

#[test]
fn dirs_are_absolute() {
    assert!(MODELS.dir().is_absolute());
    assert!(MCP_SERVERS.dir().is_absolute());
    assert!(absolute(PathBuf::from("models")).is_absolute());
}

#[test]
fn only_old_temp_dirs_with_the_prefix_are_removed() {
    let dir = std::env::temp_dir().join(format!("xtask-cache-temps-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    for name in [".fetch-old", ".fetch-young", "models-old"] {
        fs::create_dir_all(dir.join(name)).unwrap();
    }
    let two_days_ago = std::time::SystemTime::now() - Duration::from_secs(2 * 24 * 60 * 60);
    for name in [".fetch-old", "models-old"] {
        let handle = fs::File::open(dir.join(name)).unwrap();
        handle
            .set_times(fs::FileTimes::new().set_modified(two_days_ago))
            .unwrap();
    }
    remove_abandoned_temps(&dir, ".fetch-");
    let mut left: Vec<String> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, [".fetch-young", "models-old"]);
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn dir_and_force_arguments() {
    let args = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    assert_eq!(
        MODELS.dir_args("model", &args(&["--dir", "/m", "--force"])),
        Ok((PathBuf::from("/m"), true))
    );
    assert_eq!(
        MCP_SERVERS.dir_args("mcp-servers", &args(&["--dir=/s"])),
        Ok((PathBuf::from("/s"), false))
    );
    assert_eq!(MODELS.dir_args("model", &[]), Ok((MODELS.dir(), false)));
    assert!(
        MODELS
            .dir_args("model", &args(&["--dir=rel"]))
            .unwrap()
            .0
            .is_absolute()
    );
    assert_eq!(
        MODELS.dir_args("model", &args(&["--dir"])),
        Err("`model --dir` needs a directory".to_owned())
    );
    assert_eq!(
        MCP_SERVERS.dir_args("mcp-servers", &args(&["--fast"])),
        Err("`mcp-servers` does not take `--fast`".to_owned())
    );
}
