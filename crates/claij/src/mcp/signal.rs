//! SIGINT and SIGTERM for a program that runs MCP servers: each server runs in its own process
//! group, which a signal to the program does not reach, so the program listens for the signals
//! ([`Signals`]) and stops the servers itself ([`Signals::or_stop`]) before it exits.
//!
//! ```no_run
//! # async fn example(services: claij::mcp::protocol::Services) -> Result<(), claij::mcp::Error> {
//! use claij::mcp::signal::Signals;
//!
//! let mut signals = Signals::new()?;
//! match signals.or_stop(&services, services.call("time", "now", serde_json::json!({}))).await {
//!     Ok(result) => println!("{:?}", result.map(|outcome| outcome.is_error)),
//!     // The servers are closed (killed after a second): exit with the signal's code.
//!     Err(signal) => std::process::exit(signal.exit_code().into()),
//! }
//! # Ok(())
//! # }
//! ```

use std::time::Duration;

use claij_mcp::Services;

use super::Error;

/// How long [`Signals::or_stop`] lets the servers close before they are killed.
pub const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// A signal that asks the program to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Signal {
    /// SIGINT (Ctrl-C).
    Interrupt,
    /// SIGTERM.
    Terminate,
}

impl Signal {
    /// The signal's name: `SIGINT`, `SIGTERM`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Signal::Interrupt => "SIGINT",
            Signal::Terminate => "SIGTERM",
        }
    }

    /// The exit code of a process it stopped: 128 + the signal's number (130, 143).
    #[must_use]
    pub fn exit_code(self) -> u8 {
        match self {
            Signal::Interrupt => 130,
            Signal::Terminate => 143,
        }
    }
}

/// SIGINT and SIGTERM, listened for from [`Signals::new`] on, so none is missed while servers
/// start.
#[derive(Debug)]
pub struct Signals {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl Signals {
    /// Starts listening (inside a tokio runtime with IO enabled).
    ///
    /// # Errors
    ///
    /// [`Error::Io`]: a signal cannot be listened for.
    #[cfg(unix)]
    pub fn new() -> Result<Self, Error> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self {
            interrupt: signal(SignalKind::interrupt())
                .map_err(|e| Error::io("cannot listen for SIGINT", e))?,
            terminate: signal(SignalKind::terminate())
                .map_err(|e| Error::io("cannot listen for SIGTERM", e))?,
        })
    }

    /// Starts listening (Ctrl-C only).
    ///
    /// # Errors
    ///
    /// None here; [`Error::Io`] on Unix.
    #[cfg(not(unix))]
    pub fn new() -> Result<Self, Error> {
        Ok(Self {})
    }

    /// The next signal.
    #[cfg(unix)]
    pub async fn recv(&mut self) -> Signal {
        tokio::select! {
            _ = self.interrupt.recv() => Signal::Interrupt,
            _ = self.terminate.recv() => Signal::Terminate,
        }
    }

    /// The next signal (Ctrl-C).
    #[cfg(not(unix))]
    pub async fn recv(&mut self) -> Signal {
        let _ = tokio::signal::ctrl_c().await;
        Signal::Interrupt
    }

    /// Runs `work` with `services`; a signal first stops them (closed, killed after
    /// [`CLOSE_GRACE`]) and is returned instead of `work`'s result.
    ///
    /// # Errors
    ///
    /// The signal that came first.
    pub async fn or_stop<T>(
        &mut self,
        services: &Services,
        work: impl Future<Output = T>,
    ) -> Result<T, Signal> {
        let signal = tokio::select! {
            done = work => return Ok(done),
            signal = self.recv() => signal,
        };
        let _ = tokio::time::timeout(CLOSE_GRACE, services.close()).await;
        Err(signal)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn each_signal_has_its_name_and_exit_code() {
        assert_eq!(
            (Signal::Interrupt.name(), Signal::Interrupt.exit_code()),
            ("SIGINT", 130)
        );
        assert_eq!(
            (Signal::Terminate.name(), Signal::Terminate.exit_code()),
            ("SIGTERM", 143)
        );
    }

    /// A signal that comes while the work waits stops the servers and is the result.
    #[cfg(unix)]
    #[tokio::test]
    async fn a_signal_stops_the_work_and_the_servers() {
        let mut signals = Signals::new().unwrap();
        let services = Services::from_clients([]);
        let pid = std::process::id().to_string();
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap();
        assert!(sent.success());
        let stopped = signals
            .or_stop(&services, std::future::pending::<()>())
            .await;
        assert_eq!(stopped, Err(Signal::Terminate));
        // Work that ends first is its result.
        assert_eq!(signals.or_stop(&services, async { 7 }).await, Ok(7));
    }
}
