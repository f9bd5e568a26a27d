//! `BINDERY_FAILPOINT`, the crash injection of recovery tests: a worker started with
//! `BINDERY_FAILPOINT=after_commit:book.parse` SIGKILLs itself right after the first
//! `book.parse` job's completion commits, exactly as a host (or the kernel, out of memory)
//! killing the process would; with `:abort` after it, it fails an allocation instead, as a
//! worker under a memory limit does (the message, then SIGABRT).
//!
//! Here is the value and its parsing; the job engine fires it (`jobs::failpoint`).

use std::fmt;
use std::str::FromStr;

/// When, relative to a job's commit, the worker dies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Moment {
    /// The job has run (its blobs are written) but its completion is not committed.
    BeforeCommit,
    /// Its completion and successors are committed; nothing after has run.
    AfterCommit,
}

/// How the worker dies there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Death {
    /// SIGKILL, as a host or the kernel's out-of-memory killer sends.
    Kill,
    /// An allocation that fails: Rust's message, then SIGABRT.
    Abort,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failpoint {
    pub moment: Moment,
    pub kind: String,
    pub death: Death,
}

impl FromStr for Failpoint {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (moment, kind) = s
            .split_once(':')
            .ok_or("is not MOMENT:JOB[:abort] (MOMENT is before_commit or after_commit)")?;
        let (kind, death) = match kind.strip_suffix(":abort") {
            Some(kind) => (kind, Death::Abort),
            None => (kind, Death::Kill),
        };
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
            death,
        })
    }
}

impl fmt::Display for Failpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let moment = match self.moment {
            Moment::BeforeCommit => "before_commit",
            Moment::AfterCommit => "after_commit",
        };
        let death = match self.death {
            Death::Kill => "",
            Death::Abort => ":abort",
        };
        write!(f, "{moment}:{}{death}", self.kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failpoint_reads_back_as_written_and_bad_ones_say_why() {
        let point: Failpoint = "before_commit:book.parse".parse().expect("parses");
        assert_eq!(point.moment, Moment::BeforeCommit);
        assert_eq!(point.kind, "book.parse");
        assert_eq!(point.to_string(), "before_commit:book.parse");
        assert_eq!(point.death, Death::Kill);
        let abort: Failpoint = "after_commit:bindery.noop:abort".parse().expect("parses");
        assert_eq!(
            (abort.kind.as_str(), abort.death),
            ("bindery.noop", Death::Abort)
        );
        assert_eq!(abort.to_string(), "after_commit:bindery.noop:abort");
        assert!(
            "book.parse"
                .parse::<Failpoint>()
                .unwrap_err()
                .contains("MOMENT:JOB")
        );
        assert!(
            "later:book.parse"
                .parse::<Failpoint>()
                .unwrap_err()
                .contains("unknown moment")
        );
        assert!(
            "after_commit:"
                .parse::<Failpoint>()
                .unwrap_err()
                .contains("no job type")
        );
    }
}
