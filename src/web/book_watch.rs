//! One watcher per web process for the books that event streams follow.
//!
//! An event stream used to read its book every 250 ms, so a thousand idle streams cost a whole
//! core (issue #12). Now a stream follows its book here, and while any stream is open one task
//! reads a stamp of every followed book in a single query per tick (`books::stamps`) and wakes
//! only the streams whose book changed; a stream reads its book once per change. The worker is
//! another process and storage is the only channel between them, so the reading cannot go:
//! it is shared instead. With no stream open, nothing runs.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::sync::watch;

use crate::books::{self, BookId};
use crate::storage::Database;
use crate::storage::backoff::Backoff;

/// How often the followed books are read: how late a change can reach a stream.
const TICK: Duration = Duration::from_millis(250);

/// The books the process's event streams follow (app state; cloning shares it).
#[derive(Clone)]
pub struct BookWatch {
    shared: Arc<Shared>,
}

struct Shared {
    db: Database,
    /// Where the reading task runs: the process's own runtime, which outlives any one of the
    /// HTTP server's workers.
    runtime: Handle,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    books: HashMap<BookId, Followed>,
    /// Whether the reading task runs; it runs only while some book is followed.
    reading: bool,
}

struct Followed {
    streams: usize,
    /// What the last read saw (`None`: the book is gone); unset until the first read.
    stamp: Option<Option<u64>>,
    /// Counts the changes seen; each stream waits on its own receiver.
    changes: watch::Sender<u64>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Nothing under this lock can leave the map half-changed, so a panic elsewhere while
        // holding it must not take every event stream down with it.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl BookWatch {
    pub fn new(db: Database, runtime: Handle) -> Self {
        Self {
            shared: Arc::new(Shared {
                db,
                runtime,
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// Follows a book until the returned `Follow` is dropped. Call it before reading the book
    /// the first time, so that no change can fall between that read and the first wake-up.
    pub async fn follow(&self, id: &BookId) -> Follow {
        let followed = self.shared.lock().books.contains_key(id);
        // A book nobody follows yet is stamped now rather than by the next tick, whose first
        // sight of it would wake the stream to read again what it has just read. A change
        // between this stamp and the stream's first read costs one read more, never a miss.
        // If this fails, the next tick stamps it (and wakes the stream once).
        let stamp = if followed {
            None
        } else {
            books::stamps(&self.shared.db, std::slice::from_ref(id))
                .await
                .ok()
                .map(|stamps| stamps.get(id).copied())
        };
        let mut state = self.shared.lock();
        let followed = state.books.entry(id.clone()).or_insert_with(|| Followed {
            streams: 0,
            stamp,
            changes: watch::channel(0).0,
        });
        followed.streams += 1;
        let changes = followed.changes.subscribe();
        if !state.reading {
            state.reading = true;
            self.shared.runtime.spawn(read(self.shared.clone()));
        }
        Follow {
            shared: self.shared.clone(),
            id: id.clone(),
            changes,
        }
    }
}

/// One stream's hold on a book: it is read for as long as some `Follow` of it lives.
pub struct Follow {
    shared: Arc<Shared>,
    id: BookId,
    changes: watch::Receiver<u64>,
}

impl Follow {
    /// Resolves once the book has changed since the last time this resolved (or since
    /// `follow`), or is gone.
    pub async fn changed(&mut self) {
        if self.changes.changed().await.is_err() {
            // The sender lives while any `Follow` of the book does, this one included.
            std::future::pending::<()>().await;
        }
    }
}

impl Drop for Follow {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        if let Some(followed) = state.books.get_mut(&self.id) {
            followed.streams -= 1;
            if followed.streams == 0 {
                state.books.remove(&self.id);
            }
        }
    }
}

/// Clears `reading` if the task ends without doing so itself (a panic, its runtime shutting
/// down), so that the next stream starts a new one.
struct Reading<'a> {
    shared: &'a Shared,
    ended_itself: bool,
}

impl Drop for Reading<'_> {
    fn drop(&mut self) {
        if !self.ended_itself {
            self.shared.lock().reading = false;
        }
    }
}

/// The reading task: every tick, one query for all followed books; wakes the changed ones.
/// Ends when no book is followed.
async fn read(shared: Arc<Shared>) {
    let mut reading = Reading {
        shared: &shared,
        ended_itself: false,
    };
    // While the database fails the reads, the streams stay open, and reading waits (and logs)
    // by the one rule for failing storage.
    let mut failures = Backoff::new("reading the books event streams follow");
    loop {
        let ids: Vec<BookId> = {
            let mut state = shared.lock();
            if state.books.is_empty() {
                // Under the lock, so that a stream arriving now sees `reading` false and
                // starts the next task.
                state.reading = false;
                reading.ended_itself = true;
                return;
            }
            state.books.keys().cloned().collect()
        };
        let pause = match books::stamps(&shared.db, &ids).await {
            Ok(stamps) => {
                failures.succeeded();
                let mut state = shared.lock();
                // Only the ids read: a book followed since then is read next tick.
                for id in &ids {
                    let Some(followed) = state.books.get_mut(id) else {
                        continue;
                    };
                    let stamp = stamps.get(id).copied();
                    if followed.stamp != Some(stamp) {
                        followed.stamp = Some(stamp);
                        followed.changes.send_modify(|n| *n = n.wrapping_add(1));
                        tracing::debug!(book.id = %id, streams = followed.streams, "book changed; waking its event streams");
                    }
                }
                TICK
            }
            Err(e) => failures.failed(&e).max(TICK),
        };
        tokio::time::sleep(pause).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    async fn run(db: &Database, sql: &'static str) {
        let Database::Sqlite(pool) = db else {
            unreachable!("the test opens SQLite")
        };
        sqlx::query(sql).execute(pool).await.expect(sql);
    }

    async fn changed(follow: &mut Follow, what: &str) {
        tokio::time::timeout(Duration::from_secs(5), follow.changed())
            .await
            .unwrap_or_else(|_| panic!("no wake-up for {what}"));
    }

    #[tokio::test]
    async fn a_change_wakes_only_the_streams_of_its_book_and_reading_stops_with_the_last() {
        let (_dir, db) = crate::test_support::sqlite_database().await;
        run(
            &db,
            "INSERT INTO books (id, tenant, file_name, status, created_at, updated_at)
             VALUES ('b1', 't', 'a.md', 'processing', 1, 1),
                    ('b2', 't', 'b.md', 'processing', 1, 1)",
        )
        .await;
        let watch = BookWatch::new(db.clone(), Handle::current());
        let mut first = watch.follow(&BookId::unchecked("b1")).await;
        let mut second = watch.follow(&BookId::unchecked("b1")).await;
        let other = watch.follow(&BookId::unchecked("b2")).await;
        assert!(watch.shared.lock().reading);

        run(&db, "UPDATE books SET updated_at = 2 WHERE id = 'b1'").await;
        changed(&mut first, "b1's first stream").await;
        changed(&mut second, "b1's second stream").await;
        // The read that saw b1 change saw b2 as it was.
        assert!(!other.changes.has_changed().expect("sender"));

        drop(first);
        run(&db, "DELETE FROM books WHERE id = 'b1'").await;
        changed(&mut second, "a deleted book").await;

        drop(second);
        drop(other);
        assert!(watch.shared.lock().books.is_empty());
        // With nothing followed, the reading task ends at its next tick.
        let deadline = Instant::now() + Duration::from_secs(5);
        while watch.shared.lock().reading {
            assert!(Instant::now() < deadline, "the reading task goes on");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // And the next stream starts it again.
        let mut again = watch.follow(&BookId::unchecked("b2")).await;
        assert!(watch.shared.lock().reading);
        run(
            &db,
            "UPDATE books SET status = 'ready', updated_at = 3 WHERE id = 'b2'",
        )
        .await;
        changed(&mut again, "a stream after a restart").await;
    }
}
