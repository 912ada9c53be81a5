//! Running commands from the repository root: stdin closed, output inherited, each echoed first.

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};

use anyhow::{Context, Result, bail};

/// A command to run from the repository root. Nothing it runs can wait for input: stdin is
/// `/dev/null` unless [`Cmd::stdin_file`] says otherwise.
#[derive(Debug, Clone)]
pub(crate) struct Cmd {
    program: OsString,
    /// What to show for the program when echoing, instead of its full path.
    shown_as: Option<String>,
    args: Vec<OsString>,
    envs: Vec<(OsString, OsString)>,
    stdin: Option<PathBuf>,
    /// Whether the variables `cargo run` set for xtask itself are removed ([`Cmd::without_cargo_run_env`]).
    clean: bool,
}

/// The repository root: the parent of xtask's manifest directory.
pub(crate) fn root() -> PathBuf {
    // `cargo run` sets the variable at run time; the compile-time value covers running the binary directly.
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    match manifest_dir.parent() {
        Some(root) => root.to_path_buf(),
        None => manifest_dir,
    }
}

impl Cmd {
    pub(crate) fn new(program: impl Into<OsString>) -> Cmd {
        Cmd {
            program: program.into(),
            shown_as: None,
            args: Vec::new(),
            envs: Vec::new(),
            stdin: None,
            clean: false,
        }
    }

    /// `cargo` from `PATH`: under rustup the proxy keeps the toolchain `cargo xtask` was started with.
    /// It runs without the variables `cargo run` set for xtask ([`Cmd::without_cargo_run_env`]), so
    /// it shares one build with a plain `cargo build`.
    pub(crate) fn cargo() -> Cmd {
        Cmd::new("cargo").without_cargo_run_env()
    }

    /// Runs the command without the variables `cargo run` sets for the program it runs (xtask):
    /// `CARGO_MANIFEST_*`, `CARGO_PKG_*`, `CARGO_CRATE_NAME`, `CARGO_BIN_*`, `CARGO_PRIMARY_PACKAGE`,
    /// `OUT_DIR`, `CARGO_TARGET_TMPDIR`, `CARGO_RUSTC_CURRENT_DIR`. They describe xtask's package, and
    /// build scripts that watch them (ring's `rerun-if-env-changed=CARGO_MANIFEST_DIR`,
    /// `CARGO_PKG_NAME`...) would otherwise see them change and rebuild everything above them. What
    /// the user set (`RUSTFLAGS`, `CARGO_TARGET_DIR`, `CARGO_HOME`...) stays.
    pub(crate) fn without_cargo_run_env(mut self) -> Cmd {
        self.clean = true;
        self
    }

    /// Echo the program as `name` (say `claij` for `/long/target/release/claij`).
    pub(crate) fn shown_as(mut self, name: &str) -> Cmd {
        self.shown_as = Some(name.to_owned());
        self
    }

    pub(crate) fn arg(mut self, arg: impl Into<OsString>) -> Cmd {
        self.args.push(arg.into());
        self
    }

    pub(crate) fn args<I, S>(mut self, args: I) -> Cmd
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    pub(crate) fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Cmd {
        self.envs.push((key.into(), value.into()));
        self
    }

    pub(crate) fn stdin_file(mut self, path: impl Into<PathBuf>) -> Cmd {
        self.stdin = Some(path.into());
        self
    }

    /// Echoes the command, runs it with inherited output and fails unless it exits 0.
    pub(crate) fn run(&self) -> Result<()> {
        let status = self.status()?;
        if !status.success() {
            bail!("`{self}` failed ({status})");
        }
        Ok(())
    }

    /// Echoes the command and runs it with inherited output, returning however it exited.
    pub(crate) fn status(&self) -> Result<ExitStatus> {
        println!("$ {self}");
        self.command()?
            .status()
            .with_context(|| format!("cannot run `{self}`"))
    }

    /// Echoes the command, runs it with stdout captured and stderr inherited, and returns how it
    /// exited and what it printed (lossy UTF-8), whatever the exit code.
    pub(crate) fn capture(&self) -> Result<(ExitStatus, String)> {
        println!("$ {self}");
        let output = self
            .command()?
            .stderr(Stdio::inherit())
            .output()
            .with_context(|| format!("cannot run `{self}`"))?;
        Ok((
            output.status,
            String::from_utf8_lossy(&output.stdout).into_owned(),
        ))
    }

    /// Runs the command without echoing it and returns its stdout; stderr stays inherited.
    pub(crate) fn read(&self) -> Result<String> {
        self.read_inner()
    }

    /// Echoes the command, then runs it like [`Cmd::read`].
    pub(crate) fn echo_read(&self) -> Result<String> {
        println!("$ {self}");
        self.read_inner()
    }

    fn read_inner(&self) -> Result<String> {
        let output = self
            .command()?
            .stderr(Stdio::inherit())
            .output()
            .with_context(|| format!("cannot run `{self}`"))?;
        if !output.status.success() {
            bail!("`{self}` failed ({})", output.status);
        }
        String::from_utf8(output.stdout).with_context(|| format!("`{self}` printed non-UTF-8"))
    }

    /// Whether the command runs and exits 0, with all of its output discarded.
    pub(crate) fn succeeds_quietly(&self) -> bool {
        self.command()
            .and_then(|mut command| {
                Ok(command
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()?)
            })
            .is_ok_and(|status| status.success())
    }

    fn command(&self) -> Result<Command> {
        let mut command = Command::new(&self.program);
        if self.clean {
            for (name, _) in std::env::vars_os() {
                if is_cargo_run_var(&name) {
                    command.env_remove(name);
                }
            }
        }
        command
            .args(&self.args)
            .envs(self.envs.iter().map(|(k, v)| (k, v)))
            .current_dir(root());
        match &self.stdin {
            None => command.stdin(Stdio::null()),
            Some(path) => {
                let file = File::open(root().join(path))
                    .with_context(|| format!("cannot open {}", path.display()))?;
                command.stdin(file)
            }
        };
        Ok(command)
    }
}

impl fmt::Display for Cmd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (key, value) in &self.envs {
            write!(f, "{}={} ", quote(key), quote(value))?;
        }
        match &self.shown_as {
            Some(name) => f.write_str(name)?,
            None => f.write_str(&quote(&self.program))?,
        }
        for arg in &self.args {
            write!(f, " {}", quote(arg))?;
        }
        if let Some(path) = &self.stdin {
            write!(f, " < {}", quote(path.as_os_str()))?;
        }
        Ok(())
    }
}

/// Whether cargo sets `name` for the program `cargo run` runs, describing that program's own package
/// (see [`Cmd::without_cargo_run_env`]).
pub(crate) fn is_cargo_run_var(name: &OsStr) -> bool {
    const PREFIXES: [&str; 3] = ["CARGO_MANIFEST_", "CARGO_PKG_", "CARGO_BIN_"];
    const NAMES: [&str; 5] = [
        "CARGO_CRATE_NAME",
        "CARGO_PRIMARY_PACKAGE",
        "OUT_DIR",
        "CARGO_TARGET_TMPDIR",
        "CARGO_RUSTC_CURRENT_DIR",
    ];
    name.to_str().is_some_and(|name| {
        PREFIXES.iter().any(|prefix| name.starts_with(prefix)) || NAMES.contains(&name)
    })
}

/// Shell-quotes `word` for display when it holds anything beyond plain path and flag characters.
fn quote(word: impl AsRef<OsStr>) -> String {
    let word = word.as_ref().to_string_lossy();
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./=:,@+%".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.into_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// `path` relative to the repository root when it is inside it, for shorter messages.
pub(crate) fn display_path(path: &Path) -> String {
    let root = root();
    path.strip_prefix(&root)
        .unwrap_or(path)
        .display()
        .to_string()
}
