//! Firing `BINDERY_FAILPOINT` (the value is `config::Failpoint`): the worker SIGKILLs itself,
//! or fails an allocation, at the configured moment of the configured job type. Neither can be
//! caught, so the test sees what a real crash leaves behind.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::config::{Death, Failpoint, Moment};

static FIRED: AtomicBool = AtomicBool::new(false);

/// Kills this process if `kind` at `moment` is the configured point (once per process).
pub(crate) fn check(failpoint: &Failpoint, moment: Moment, kind: &str) {
    if failpoint.moment == moment && failpoint.kind == kind && !FIRED.swap(true, Ordering::SeqCst) {
        tracing::warn!(failpoint = %failpoint, "failpoint reached: killing this worker");
        match failpoint.death {
            Death::Kill => {
                let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
            }
            // What the global allocator's failure does: "memory allocation of N bytes failed",
            // then abort.
            Death::Abort => std::alloc::handle_alloc_error(
                std::alloc::Layout::from_size_align(1 << 40, 8)
                    .unwrap_or_else(|_| std::alloc::Layout::new::<u8>()),
            ),
        }
    }
}
