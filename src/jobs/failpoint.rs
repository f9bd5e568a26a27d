//! Crash injection for tests of crash recovery: a worker started with
//! `BINDERY_FAILPOINT=after_commit:book.parse` SIGKILLs itself right after the first
//! `book.parse` job's completion commits, exactly as a host killing the process would.
//! A kill cannot be caught, so the test sees what a real crash leaves behind.

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};

/// When, relative to a job's commit, the worker dies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Moment {
    /// The job has run (its blobs are written) but its completion is not committed.
    BeforeCommit,
    /// Its completion and successors are committed; nothing after has run.
    AfterCommit,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failpoint {
    pub moment: Moment,
    pub kind: String,
}

impl FromStr for Failpoint {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (moment, kind) = s
            .split_once(':')
            .ok_or("is not MOMENT:JOB (MOMENT is before_commit or after_commit)")?;
        let moment = match moment {
            "before_commit" => Moment::BeforeCommit,
            "after_commit" => Moment::AfterCommit,
            _ => return Err("has an unknown moment: use before_commit or after_commit".into()),
        };
        if kind.is_empty() {
            return Err("names no job type".into());
        }
        Ok(Failpoint {
            moment,
            kind: kind.to_owned(),
        })
    }
}

impl fmt::Display for Failpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let moment = match self.moment {
            Moment::BeforeCommit => "before_commit",
            Moment::AfterCommit => "after_commit",
        };
        write!(f, "{moment}:{}", self.kind)
    }
}

static FIRED: AtomicBool = AtomicBool::new(false);

impl Failpoint {
    /// Kills this process if `kind` at `moment` is the configured point (once per process).
    pub fn check(&self, moment: Moment, kind: &str) {
        if self.moment == moment && self.kind == kind && !FIRED.swap(true, Ordering::SeqCst) {
            tracing::warn!(failpoint = %self, "failpoint reached: killing this worker");
            let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
        }
    }
}
