//! Progress on a terminal while the local model works: one line on stderr, redrawn in place, with
//! the attempt, the prompt being read, the tokens so far and their rate, and the end of the reply as
//! it grows; cleared once the reply is complete, so what is printed after it stays clean. The line
//! and the watched backend are the library's ([`claij::progress`]); drawing it is this module's.

use std::io::Write;
use std::sync::Arc;

use claij::backends::Backend;
use claij::progress::{Turns, Watched};

/// The terminal's width: `COLUMNS`, else 80, from 20 to 1000 ([`claij::progress::terminal_width`]).
pub(super) fn terminal_width() -> usize {
    claij::progress::terminal_width(std::env::var("COLUMNS").ok().as_deref())
}

/// `inner`, its progress line drawn on stderr, `COLUMNS` wide (else 80).
pub(super) fn stderr(inner: Arc<dyn Backend>) -> (Watched, Turns) {
    Watched::new(inner, terminal_width(), |line| {
        // `\r`, the line cleared, then the new one. Best effort: a failed write to the terminal
        // never fails the call.
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{line}");
        let _ = err.flush();
    })
}
