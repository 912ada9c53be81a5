//! The heartbeat's schedule on injected times, a command that runs until its heartbeats have been
//! said (an order of events, no clock), and the log and failure of a command.

use super::*;
use crate::mcp_servers::capture_with;

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("xtask-long-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_beat_is_due_every_interval_and_missed_beats_are_not_made_up() {
    let secs = Duration::from_secs;
    let mut beat = Heartbeat::new(secs(30));
    let due: Vec<u64> = [0, 10, 29, 30, 31, 59, 60, 61, 150, 151, 179, 180]
        .into_iter()
        .filter(|&at| beat.due(secs(at)))
        .collect();
    // 30 and 60 on time; a caller busy from 61 to 150 gets one beat there, then 180.
    assert_eq!(due, [30, 60, 150, 180]);
    let mut never = Heartbeat::new(Duration::ZERO);
    assert!(!never.due(secs(1_000)));
}

#[test]
fn labels_name_the_tool_and_its_subcommand() {
    let command = |program: &str, args: &[&str]| {
        let mut command = Command::new(program);
        command.args(args);
        label(&command)
    };
    let pip = ["-m", "pip", "install", "--cache-dir", "/c", "x==1"];
    assert_eq!(command("/c/venv/bin/python", &pip), "pip install");
    assert_eq!(command("python3", &["-m", "venv", "/c/venv"]), "venv");
    assert_eq!(
        command("npm", &["install", "--prefix", "/t"]),
        "npm install"
    );
    assert_eq!(
        command("/c/venv/bin/python", &["-I", "-c", "print(1)"]),
        "python"
    );
}

/// A command that runs until two heartbeats have been said: they come while it runs, name how long
/// it has run and its log, and the log holds everything it printed, as it came.
#[test]
fn a_long_command_says_it_is_alive_and_where_its_output_is() {
    let dir = scratch("alive");
    let release = dir.join("release");
    // It gives up after 6000 naps (a hang guard: a heartbeat that never comes fails the test).
    let script = format!(
        "echo started; echo building >&2; i=0; while [ ! -e '{}' ] && [ $i -lt 6000 ]; do \
         sleep 0.01; i=$((i+1)); done; echo done",
        release.display()
    );
    let mut command = Command::new("sh");
    command.args(["-c", &script]);
    let mut said = Vec::new();
    let stdout = capture_with(&mut command, &dir, Duration::from_millis(1), &mut |line| {
        said.push(line);
        if said.len() == 2 {
            std::fs::write(&release, "").unwrap();
        }
    })
    .unwrap();
    assert_eq!(stdout, "started\ndone\n");
    let log = dir.join("logs").join("sh.log");
    assert!(said.len() >= 2, "{said:?}");
    for line in &said {
        assert!(line.starts_with("sh: still running after "), "{line}");
        assert!(
            line.ends_with(&format!("; its output so far: {}", log.display())),
            "{line}"
        );
    }
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.starts_with("$ sh -c "), "{logged}");
    for printed in ["started\n", "building\n", "done\n"] {
        assert!(logged.contains(printed), "{printed:?} not in {logged}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A quick command says nothing more than it did; a failure still names the command and quotes
/// its stderr, and says where all it printed is.
#[test]
fn a_failure_quotes_the_end_of_the_output_and_names_the_log() {
    let dir = scratch("failure");
    let mut quiet = Vec::new();
    let mut ok = Command::new("sh");
    ok.args(["-c", "echo fine"]);
    let out = capture_with(&mut ok, &dir, HEARTBEAT, &mut |line| quiet.push(line)).unwrap();
    assert_eq!((out.as_str(), quiet.len()), ("fine\n", 0));
    let mut failing = Command::new("sh");
    failing.args([
        "-c",
        "echo progress; echo 'ERROR: no matching distribution' >&2; exit 3",
    ]);
    let error = capture_with(&mut failing, &dir, HEARTBEAT, &mut |line| quiet.push(line))
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("`sh -c 'echo progress; echo '\\''ERROR: no matching distribution'\\'' >&2; exit 3'` failed (exit status: 3); its stderr:\n    ERROR: no matching distribution"),
        "{error}"
    );
    assert!(
        error.ends_with(&format!(
            "\nall it printed: {}",
            dir.join("logs/sh.log").display()
        )),
        "{error}"
    );
    let mut missing = Command::new("no-such-program-for-xtask");
    let error = capture_with(&mut missing, &dir, HEARTBEAT, &mut |line| quiet.push(line))
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        "cannot run `no-such-program-for-xtask`: no-such-program-for-xtask is not installed"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
