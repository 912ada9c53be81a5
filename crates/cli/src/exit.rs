//! How a command ends: its [`Status`] (the exit code's meaning) and errors folded to [`one_line`].
//! A leaf module: every command names it, it names none of them.

/// How a command ended, when it did not fail outright.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    Ok,
    /// The input was read but is invalid (exit 1).
    Invalid,
    /// Stopped by a signal, after cleaning up (exit 128 + the signal's number).
    Signalled(claij::mcp::signal::Signal),
}

/// Errors are one line: newlines inside (from a library's message) are folded.
pub(crate) fn one_line(s: &str) -> String {
    s.split('\n')
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}
