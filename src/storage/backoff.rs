//! The one rule for a loop that storage keeps failing: how long it waits before trying again,
//! and how often it says so.
//!
//! The worker's and the web's loops (the pump's claims, commits and promotions, the rescue, the
//! heartbeat, the schedules, the logbook's writer, the event streams' watcher) run for as long
//! as the process does, so a database or blob store that fails them, full or out of reach or
//! broken, must neither make them spin nor flood the log: a full disk once had the pump try,
//! and log, every 20 ms. So a loop keeps a [`Backoff`]:
//!
//! - after each failure in a row it waits twice as long as after the one before, from 100 ms
//!   up to 1 s ([`pause_after`]): short enough that it works again within a second of the
//!   storage's return;
//! - it logs the first failure, then at most one line every 10 s with how many failed since,
//!   then one line when it works again. A failure whose storage is full or out of reach is an
//!   outage the loop rides out (WARN); anything else is a bug (ERROR), by `storage::fault`.

use std::time::{Duration, Instant};

use super::fault::Fault;

/// The pause after the first failure of a run.
pub const FIRST_PAUSE: Duration = Duration::from_millis(100);
/// The longest pause: the loop tries at least once a second.
pub const LONGEST_PAUSE: Duration = Duration::from_secs(1);
/// A run of failures is reported at most this often after its first line.
const REPORT_EVERY: Duration = Duration::from_secs(10);

/// The pause after the `failures`th failure in a row (1-based): 100 ms, 200 ms, 400 ms, 800 ms,
/// then 1 s.
pub fn pause_after(failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    FIRST_PAUSE
        .saturating_mul(1 << doublings)
        .min(LONGEST_PAUSE)
}

/// One loop's run of failures, if it is in one.
#[derive(Debug)]
pub struct Backoff {
    /// What the loop does, for its lines ("promoting due jobs"); `None` logs nothing (the
    /// logbook's writer, whose lines must not feed itself, says what it must itself).
    what: Option<&'static str>,
    run: Option<Run>,
}

#[derive(Debug, Clone, Copy)]
struct Run {
    since: Instant,
    failures: u32,
    /// Failures since the last line about this run.
    unreported: u32,
    reported_at: Instant,
    /// When the loop may try again.
    next_try: Instant,
}

impl Backoff {
    /// A loop doing `what`, which logs as the module says.
    pub const fn new(what: &'static str) -> Self {
        Self {
            what: Some(what),
            run: None,
        }
    }

    /// A loop that keeps to the same pauses but logs nothing itself.
    pub const fn unlogged() -> Self {
        Self {
            what: None,
            run: None,
        }
    }

    /// A try failed with `error`: says so if it is time to, and returns how long to wait before
    /// the next try.
    pub fn failed(&mut self, error: &anyhow::Error) -> Duration {
        let now = Instant::now();
        let run = self.run.get_or_insert(Run {
            since: now,
            failures: 0,
            unreported: 0,
            reported_at: now,
            next_try: now,
        });
        run.failures += 1;
        let pause = pause_after(run.failures);
        run.next_try = now + pause;
        let first = run.failures == 1;
        if first || now.duration_since(run.reported_at) >= REPORT_EVERY {
            let (failures, failing_for) = (run.unreported + 1, now.duration_since(run.since));
            run.unreported = 0;
            run.reported_at = now;
            if let Some(what) = self.what {
                report(what, error, first, failures, failing_for, pause);
            }
        } else {
            run.unreported += 1;
        }
        pause
    }

    /// A try went through: ends the run of failures, saying so if there was one.
    pub fn succeeded(&mut self) {
        if let (Some(run), Some(what)) = (self.run.take(), self.what) {
            tracing::info!(
                failures = run.failures,
                failing_for = ?run.since.elapsed(),
                "{what} works again"
            );
        }
    }

    /// How long until the next try is due: zero when it may be made now.
    pub fn wait(&self) -> Duration {
        self.run.map_or(Duration::ZERO, |r| {
            r.next_try.saturating_duration_since(Instant::now())
        })
    }

    /// Whether a try may be made now.
    pub fn ready(&self) -> bool {
        self.wait().is_zero()
    }

    /// Whether the last try failed.
    pub fn failing(&self) -> bool {
        self.run.is_some()
    }
}

fn report(
    what: &str,
    error: &anyhow::Error,
    first: bool,
    failures: u32,
    failing_for: Duration,
    retry_in: Duration,
) {
    let fault = Fault::of(error);
    let error = format!("{error:#}");
    let cause = match fault {
        Fault::OutOfSpace => "storage is full",
        Fault::Unavailable => "storage is out of reach",
        Fault::Bug => "a bug",
    };
    match (fault, first) {
        (Fault::Bug, true) => {
            tracing::error!(error, ?retry_in, "{what} failed ({cause}); trying again")
        }
        (Fault::Bug, false) => tracing::error!(
            error,
            failures,
            ?failing_for,
            "{what} still fails ({cause})"
        ),
        (_, true) => tracing::warn!(error, ?retry_in, "{what} failed ({cause}); trying again"),
        (_, false) => tracing::warn!(
            error,
            failures,
            ?failing_for,
            "{what} still fails ({cause})"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full() -> anyhow::Error {
        anyhow::Error::new(std::io::Error::from_raw_os_error(
            nix::errno::Errno::ENOSPC as i32,
        ))
    }

    #[test]
    fn pauses_double_from_a_tenth_of_a_second_to_one() {
        let pauses: Vec<u128> = (1..=7).map(|n| pause_after(n).as_millis()).collect();
        assert_eq!(pauses, [100, 200, 400, 800, 1000, 1000, 1000]);
        assert_eq!(pause_after(u32::MAX), LONGEST_PAUSE);
    }

    #[test]
    fn a_run_of_failures_paces_the_loop_and_ends_on_success() {
        let mut backoff = Backoff::new("testing");
        assert!(backoff.ready() && !backoff.failing());
        assert_eq!(backoff.failed(&full()), FIRST_PAUSE);
        assert!(!backoff.ready() && backoff.failing());
        assert!(backoff.wait() <= FIRST_PAUSE);
        assert_eq!(backoff.failed(&full()), FIRST_PAUSE * 2);
        for _ in 0..20 {
            backoff.failed(&full());
        }
        assert_eq!(backoff.failed(&full()), LONGEST_PAUSE);
        backoff.succeeded();
        assert!(backoff.ready() && !backoff.failing());
        // A new run starts from the first pause again.
        assert_eq!(backoff.failed(&full()), FIRST_PAUSE);
    }

    #[test]
    fn a_run_is_reported_once_then_every_ten_seconds() {
        let mut backoff = Backoff::unlogged();
        backoff.failed(&full());
        for _ in 0..50 {
            backoff.failed(&full());
        }
        let run = backoff.run.expect("failing");
        assert_eq!((run.failures, run.unreported), (51, 50));
        // Ten seconds on, the next failure is reported with the ones in between.
        backoff.run = Some(Run {
            reported_at: run
                .reported_at
                .checked_sub(REPORT_EVERY)
                .expect("up for ten seconds"),
            ..run
        });
        backoff.failed(&full());
        let run = backoff.run.expect("failing");
        assert_eq!((run.failures, run.unreported), (52, 0));
    }
}
