//! The worker's breaker for storage that is out of reach or full.
//!
//! When a job fails because the database or the blob store cannot be reached, or is full, every job
//! claimed after it would fail the same way, each holding an executor and a lease through its
//! client's retries. A worker killed meanwhile (a host's restart, an out-of-memory kill) would
//! then take all of them down with it, and count that lost worker against each: enough such
//! losses stop a job as one that kills its workers. So the pump stops claiming: while the
//! breaker is tripped it claims one job at a time, after a pause that doubles from 250 ms to
//! 2 s, as a probe. The first job that completes closes the breaker, so claiming resumes
//! within 2 s of the storage's return (or of space). Jobs already claimed run on; the ones that
//! fail for storage wait without spending an attempt (see the runner), and are not held
//! meanwhile.

use std::sync::Mutex;
use std::time::{Duration, Instant};

const FIRST_PAUSE: Duration = Duration::from_millis(250);
const LONGEST_PAUSE: Duration = Duration::from_secs(2);

#[derive(Debug, Default)]
pub(crate) struct StorageBreaker {
    tripped: Mutex<Option<Tripped>>,
}

#[derive(Debug, Clone, Copy)]
struct Tripped {
    /// When the next probe may be claimed.
    next: Instant,
    pause: Duration,
}

impl StorageBreaker {
    fn state(&self) -> std::sync::MutexGuard<'_, Option<Tripped>> {
        self.tripped.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A job found storage out of reach or full.
    pub(crate) fn trip(&self) {
        let mut state = self.state();
        let pause = state.map_or(FIRST_PAUSE, |t| (t.pause * 2).min(LONGEST_PAUSE));
        if state.is_none() {
            tracing::warn!(
                "storage is out of reach or full: claiming one job at a time until a job gets through"
            );
        }
        *state = Some(Tripped {
            next: Instant::now() + pause,
            pause,
        });
    }

    /// A job completed: storage answers.
    pub(crate) fn close(&self) {
        if self.state().take().is_some() {
            tracing::info!("storage answers again: claiming as usual");
        }
    }

    /// How many of the `wanted` jobs the pump may claim now: all of them while closed; while
    /// tripped, one once the pause is over (and the next pause starts), else none.
    pub(crate) fn allow(&self, wanted: usize) -> usize {
        let mut state = self.state();
        match state.as_mut() {
            None => wanted,
            Some(t) if wanted > 0 && Instant::now() >= t.next => {
                t.next = Instant::now() + t.pause;
                1
            }
            Some(_) => 0,
        }
    }

    /// When the next probe may be claimed, while tripped.
    pub(crate) fn next_probe(&self) -> Option<Instant> {
        self.state().map(|t| t.next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tripped_breaker_lets_one_probe_through_a_pause_and_closes_on_success() {
        let breaker = StorageBreaker::default();
        assert_eq!(breaker.allow(16), 16, "closed: everything");
        breaker.trip();
        assert_eq!(breaker.allow(16), 0, "tripped: nothing within the pause");
        let next = breaker.next_probe().expect("tripped");
        assert!(next > Instant::now() && next <= Instant::now() + FIRST_PAUSE);
        std::thread::sleep(FIRST_PAUSE);
        assert_eq!(breaker.allow(16), 1, "one probe after the pause");
        assert_eq!(breaker.allow(16), 0, "and no second one straight after");
        breaker.trip();
        let second = breaker.next_probe().expect("tripped") - Instant::now();
        assert!(
            second > FIRST_PAUSE && second <= FIRST_PAUSE * 2,
            "the pause doubles: {second:?}"
        );
        for _ in 0..10 {
            breaker.trip();
        }
        assert!(breaker.next_probe().expect("tripped") <= Instant::now() + LONGEST_PAUSE);
        breaker.close();
        assert_eq!(breaker.allow(16), 16, "closed again");
        assert!(breaker.next_probe().is_none());
    }
}
