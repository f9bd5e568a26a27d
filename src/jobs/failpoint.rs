//! Firing `BINDERY_FAILPOINT` (the value is `config::Failpoint`): the worker SIGKILLs itself
//! at the configured moment of the configured job type. A kill cannot be caught, so the test
//! sees what a real crash leaves behind.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::config::{Failpoint, Moment};

static FIRED: AtomicBool = AtomicBool::new(false);

/// Kills this process if `kind` at `moment` is the configured point (once per process).
pub(crate) fn check(failpoint: &Failpoint, moment: Moment, kind: &str) {
    if failpoint.moment == moment && failpoint.kind == kind && !FIRED.swap(true, Ordering::SeqCst) {
        tracing::warn!(failpoint = %failpoint, "failpoint reached: killing this worker");
        let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
    }
}
