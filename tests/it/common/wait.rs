//! The one way a test waits for something: poll a check until it holds or a deadline passes,
//! then fail naming what was awaited and what the check saw last. A test never sleeps for a
//! condition; it sleeps only to let time pass for the thing under test (a lease running out, a
//! window in which nothing may happen), and says so beside the sleep.
//!
//! A check returns `bool`, `Option<T>` (the value found), or `Result<T, S>`, where `S` is what
//! it saw instead (any `Display`, formatted only if the wait fails).

use std::convert::Infallible;
use std::fmt::Display;
use std::time::{Duration, Instant};

/// What a check returns: the value found, or what it saw instead.
pub trait Polled {
    type Found;
    type Seen: Display;
    fn found(self) -> Result<Self::Found, Option<Self::Seen>>;
}

impl Polled for bool {
    type Found = ();
    type Seen = Infallible;
    fn found(self) -> Result<(), Option<Infallible>> {
        if self { Ok(()) } else { Err(None) }
    }
}

impl<T> Polled for Option<T> {
    type Found = T;
    type Seen = Infallible;
    fn found(self) -> Result<T, Option<Infallible>> {
        self.ok_or(None)
    }
}

impl<T, S: Display> Polled for Result<T, S> {
    type Found = T;
    type Seen = S;
    fn found(self) -> Result<T, Option<S>> {
        self.map_err(Some)
    }
}

/// The first pause between checks; it doubles up to [`LONGEST_PAUSE`], so that a condition
/// that comes at once is seen at once, and a long wait does not load the machine (some checks
/// start a process or make a request). A test that times what it waited for (how soon a process
/// exited) is late by at most the longest pause.
const FIRST_PAUSE: Duration = Duration::from_millis(10);
const LONGEST_PAUSE: Duration = Duration::from_millis(50);

/// Pauses between checks, and the deadline.
struct Polling {
    timeout: Duration,
    started: Instant,
    pause: Duration,
    longest: Duration,
}

enum Next<R: Polled> {
    Found(R::Found),
    /// The deadline passed; what the check saw last.
    Late(Option<R::Seen>),
    Pause(Duration),
}

impl Polling {
    fn new(timeout: Duration, first: Duration, longest: Duration) -> Self {
        Self {
            timeout,
            started: Instant::now(),
            pause: first,
            longest,
        }
    }

    fn next<R: Polled>(&mut self, result: R) -> Next<R> {
        match result.found() {
            Ok(found) => Next::Found(found),
            Err(seen) if self.started.elapsed() >= self.timeout => Next::Late(seen),
            Err(_) => {
                let pause = self.pause;
                self.pause = (self.pause * 2).min(self.longest);
                Next::Pause(pause)
            }
        }
    }
}

/// Checks until `check` holds, and returns what it found; fails the test naming `what` (and
/// what the check saw last) if it does not hold within `timeout`.
pub fn eventually<R: Polled>(
    what: &str,
    timeout: Duration,
    mut check: impl FnMut() -> R,
) -> R::Found {
    let mut polling = Polling::new(timeout, FIRST_PAUSE, LONGEST_PAUSE);
    loop {
        match polling.next(check()) {
            Next::Found(found) => return found,
            Next::Late(seen) => late(what, timeout, seen),
            Next::Pause(pause) => std::thread::sleep(pause),
        }
    }
}

/// Fails the test: `what` did not come within `timeout`, and what the check saw last.
fn late(what: &str, timeout: Duration, seen: Option<impl Display>) -> ! {
    match seen {
        Some(seen) => panic!("{what}: not within {timeout:?}; last seen: {seen}"),
        None => panic!("{what}: not within {timeout:?}"),
    }
}

/// Checks every `every` until `check` holds, for a caller that does something else when it
/// does not within `timeout` (kills what would not stop, or goes on without): what it found, or
/// what it saw last.
pub fn within<R: Polled>(
    timeout: Duration,
    every: Duration,
    mut check: impl FnMut() -> R,
) -> Result<R::Found, Option<R::Seen>> {
    let mut polling = Polling::new(timeout, every, every);
    loop {
        match polling.next(check()) {
            Next::Found(found) => return Ok(found),
            Next::Late(seen) => return Err(seen),
            Next::Pause(pause) => std::thread::sleep(pause),
        }
    }
}

/// [`eventually`] for a check that awaits (a query, a request of an async client).
pub async fn eventually_async<R: Polled>(
    what: &str,
    timeout: Duration,
    mut check: impl AsyncFnMut() -> R,
) -> R::Found {
    let mut polling = Polling::new(timeout, FIRST_PAUSE, LONGEST_PAUSE);
    loop {
        match polling.next(check().await) {
            Next::Found(found) => return found,
            Next::Late(seen) => late(what, timeout, seen),
            Next::Pause(pause) => tokio::time::sleep(pause).await,
        }
    }
}

/// Checks, for the whole of `window`, that `check` keeps holding; fails the test naming `what`
/// (and what the check saw) the first time it does not. The window is time that must pass for
/// the thing under test (an outage outlasting a timeout), not a wait for a condition.
pub fn throughout<R: Polled>(what: &str, window: Duration, mut check: impl FnMut() -> R) {
    let started = Instant::now();
    loop {
        match check().found() {
            Ok(_) => {}
            Err(Some(seen)) => panic!("{what}: not after {:?}: {seen}", started.elapsed()),
            Err(None) => panic!("{what}: not after {:?}", started.elapsed()),
        }
        let left = window.saturating_sub(started.elapsed());
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(LONGEST_PAUSE));
    }
}

/// Waits until `left` lists nothing, for a deleted book's stored files: the deletion answers
/// after a moment's wait for the worker's removal, not for ever, so on a loaded machine the
/// files may outlive its answer by a little. They must go within 30 s; the panic names those
/// that did not.
pub fn until_gone(what: &str, mut left: impl FnMut() -> Vec<String>) {
    eventually(what, Duration::from_secs(30), || {
        let left = left();
        if left.is_empty() {
            Ok(())
        } else {
            Err(format!("{left:?}"))
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eventually_returns_what_the_check_found() {
        let mut calls = 0;
        let found = eventually("the third call", Duration::from_secs(5), || {
            calls += 1;
            (calls == 3).then_some(calls)
        });
        assert_eq!(found, 3);
    }

    #[test]
    #[should_panic(expected = "the count to reach 10: not within 50ms; last seen: 2")]
    fn eventually_fails_naming_what_it_awaited_and_what_it_saw_last() {
        let mut count = 0;
        eventually("the count to reach 10", Duration::from_millis(50), || {
            count = (count + 1).min(2);
            if count == 10 { Ok(()) } else { Err(count) }
        });
    }

    #[test]
    #[should_panic(expected = "the flag to stay up: not after")]
    fn throughout_fails_when_the_check_stops_holding() {
        let started = Instant::now();
        throughout("the flag to stay up", Duration::from_secs(5), || {
            started.elapsed() < Duration::from_millis(30)
        });
    }

    #[tokio::test]
    async fn eventually_async_awaits_its_check() {
        let mut calls = 0;
        eventually_async("the second call", Duration::from_secs(5), async || {
            calls += 1;
            tokio::task::yield_now().await;
            calls == 2
        })
        .await;
        assert_eq!(calls, 2);
    }
}
