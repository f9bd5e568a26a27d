//! SIGTERM and SIGINT, the two ways a platform or a person asks Bindery to stop.

use nix::sys::signal::Signal;
use tokio::signal::unix::{SignalKind, signal};

/// Both stop signals as one stream. Create it early: until it exists, a signal kills the
/// process with the default action instead of starting a graceful stop.
pub struct StopSignals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl StopSignals {
    pub fn install() -> std::io::Result<Self> {
        Ok(Self {
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
        })
    }

    /// The next stop signal.
    pub async fn recv(&mut self) -> Signal {
        tokio::select! {
            _ = self.term.recv() => Signal::SIGTERM,
            _ = self.int.recv() => Signal::SIGINT,
        }
    }
}
