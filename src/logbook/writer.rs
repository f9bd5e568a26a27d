//! The task that moves captured log lines into the database, in batches.

use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use super::capture::{Backlog, OWN_TARGET, Origin, count_dropped, dropped, take_receiver};
use super::{Level, Line, store};
use crate::storage::Database;
use crate::storage::backoff::Backoff;

/// Most lines in one insert.
const BATCH: usize = 1_000;
/// After a batch that did not fill, wait this long for more: fewer, bigger inserts, and a line
/// still reaches a follower well within a second.
const GATHER: Duration = Duration::from_millis(50);
/// How long a stopping process gives the writer to store what it holds.
const FINISH_WITHIN: Duration = Duration::from_secs(2);

/// This process's writer; [`Writer::finish`] stores what is left.
pub struct Writer {
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Writer {
    /// Starts storing what the capture layer collects; `None` in a process that captures
    /// nothing (one-shot commands), or whose writer has started already.
    pub fn start(db: Database) -> Option<Writer> {
        let (receiver, origin) = take_receiver()?;
        let (stop, stopped) = watch::channel(false);
        let backlog = Backlog::installed();
        backlog.set_writing(true);
        let task = tokio::spawn(run(db, receiver, origin, stopped, backlog));
        Some(Writer { stop, task })
    }

    /// Stores the lines still held (within [`FINISH_WITHIN`]) and stops.
    pub async fn finish(self) {
        self.stop.send_replace(true);
        if tokio::time::timeout(FINISH_WITHIN, self.task)
            .await
            .is_err()
        {
            tracing::warn!("the last log lines could not be stored in time");
        }
    }
}

async fn run(
    db: Database,
    mut receiver: mpsc::Receiver<Line>,
    origin: Origin,
    mut stop: watch::Receiver<bool>,
    backlog: &'static Backlog,
) {
    let mut batch = Vec::with_capacity(BATCH);
    let mut reported = dropped();
    // Paced like every loop that storage fails (a full disk, a database away), but silent: its
    // own lines below say what matters, and must not be captured.
    let mut backoff = Backoff::unlogged();
    loop {
        // A dropped `Writer` stops it too (`changed` fails).
        let stopping = *stop.borrow()
            || tokio::select! {
                n = receiver.recv_many(&mut batch, BATCH) => n == 0,
                changed = stop.changed() => changed.is_err() || *stop.borrow(),
            };
        if stopping {
            while batch.len() < BATCH * 4 {
                match receiver.try_recv() {
                    Ok(line) => batch.push(line),
                    Err(_) => break,
                }
            }
        }
        let received = batch.len();
        let now_dropped = dropped();
        if now_dropped > reported {
            let n = now_dropped - reported;
            reported = now_dropped;
            let message = "log events dropped: they came faster than the database took them";
            tracing::warn!(dropped = n, "{message}");
            let mut fields = serde_json::Map::new();
            fields.insert("dropped".into(), serde_json::Value::from(n));
            batch.push(origin.line(Level::Warn, OWN_TARGET, message.to_owned(), fields));
        }
        match store::insert(&db, &batch).await {
            Ok(()) => {
                if backoff.failing() {
                    backoff.succeeded();
                    tracing::info!("storing log lines again");
                }
            }
            Err(e) => {
                // The lines are still on stdout and in the files; only the stream loses them.
                count_dropped(batch.len());
                reported = dropped();
                if !backoff.failing() {
                    tracing::warn!(error = %e, lines = batch.len(), "could not store log lines; dropping them until the database takes them again");
                }
                // Meanwhile lines wait in the channel, and past its capacity are dropped and
                // counted as they come.
                backoff.failed(&e.into());
            }
        }
        batch.clear();
        backlog.count_handled(received);
        if stopping {
            backlog.set_writing(false);
            return;
        }
        let wait = if backoff.failing() {
            backoff.wait()
        } else if receiver.len() < BATCH {
            GATHER
        } else {
            Duration::ZERO
        };
        if !wait.is_zero() {
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                // Seen at the top, where the rest is stored.
                _ = stop.changed() => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use tracing_subscriber::layer::SubscriberExt;

    use super::*;
    use crate::logbook::Capture;

    async fn stored(db: &Database, book: &str) -> usize {
        store::of_book(db, book, 10_000).await.expect("read").len()
    }

    #[tokio::test]
    async fn a_flush_returns_once_every_line_logged_before_it_is_stored() {
        static BACKLOG: Backlog = Backlog::new();
        let (_dir, db) = crate::test_support::sqlite_database().await;
        let (capture, receiver) = Capture::with_channel("worker", 8_192, &BACKLOG);
        let _subscriber =
            tracing::subscriber::set_default(tracing_subscriber::registry().with(capture));
        let (stop, stopped) = watch::channel(false);
        BACKLOG.set_writing(true);
        let origin = Origin::of_this_process("worker");
        let task = tokio::spawn(run(db.clone(), receiver, origin, stopped, &BACKLOG));

        // More than a batch, so that the flush outlasts several inserts.
        let lines = BATCH * 2 + BATCH / 2;
        for n in 0..lines {
            tracing::info!(book.id = "b-flush", n, "a line");
        }
        // Nothing has been awaited on this one thread: the writer has not run yet.
        assert_eq!(stored(&db, "b-flush").await, 0, "stored before the flush");
        assert!(
            BACKLOG.flush(Duration::from_secs(20)).await,
            "the flush timed out"
        );
        assert_eq!(
            stored(&db, "b-flush").await,
            lines,
            "lines missing after the flush"
        );

        // Once the writer has stopped, a flush has nothing to wait for.
        stop.send_replace(true);
        task.await.expect("the writer ends");
        tracing::info!(book.id = "b-flush", "after the writer stopped");
        assert!(BACKLOG.flush(Duration::from_secs(20)).await);
    }

    #[tokio::test]
    async fn a_process_without_a_writer_does_not_wait_to_flush() {
        static BACKLOG: Backlog = Backlog::new();
        let (capture, _receiver) = Capture::with_channel("cli", 16, &BACKLOG);
        let _subscriber =
            tracing::subscriber::set_default(tracing_subscriber::registry().with(capture));
        tracing::info!("never stored");
        let started = tokio::time::Instant::now();
        assert!(BACKLOG.flush(Duration::from_secs(20)).await);
        assert!(started.elapsed() < Duration::from_secs(1));
    }
}
