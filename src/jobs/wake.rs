//! How a process learns, through storage alone, that there is new work or finished work.
//!
//! PostgreSQL: LISTEN/NOTIFY on two channels ([`notify`], [`listen`]). SQLite: every commit,
//! from any process, writes the database's `-wal` file, so an inotify watch on the database's
//! directory says "something committed" at no cost while idle; `PRAGMA data_version` then
//! confirms it. If inotify is unavailable (some network file systems), `data_version` is
//! polled every 2 ms.

use std::ffi::OsString;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::path::Path;
use std::time::Duration;

use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
use sqlx::SqlitePool;
use tokio::io::unix::AsyncFd;

use crate::storage::Tx;
use crate::storage::backoff::Backoff;

/// PostgreSQL channels: new work for workers, and finished work for waiters.
pub(crate) const CHANNEL_JOBS: &str = "bindery_jobs";
pub(crate) const CHANNEL_DONE: &str = "bindery_done";

/// With a working watch, `data_version` is still checked this often, in case an event is lost.
const WATCHED_POLL: Duration = Duration::from_millis(250);
/// Without one, this often.
const UNWATCHED_POLL: Duration = Duration::from_millis(2);

struct InotifyFd(Inotify);

impl AsRawFd for InotifyFd {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_fd().as_raw_fd()
    }
}

/// Watches one SQLite database file (and its `-wal`/`-journal` companions) for writes.
struct FileWatch {
    fd: AsyncFd<InotifyFd>,
    name: OsString,
}

impl FileWatch {
    fn new(database: &Path) -> std::io::Result<Self> {
        let dir = match database.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let name = database
            .file_name()
            .map(ToOwned::to_owned)
            .ok_or_else(|| std::io::Error::other("the database path names no file"))?;
        let inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC)?;
        inotify.add_watch(
            dir,
            AddWatchFlags::IN_MODIFY | AddWatchFlags::IN_CREATE | AddWatchFlags::IN_MOVED_TO,
        )?;
        // `AsyncFd::new` is deprecated because a wrapped type could close or swap its fd while
        // registered. `InotifyFd` owns its fd outright and exposes no way to replace it, and
        // `AsyncFd` deregisters before dropping it, so the concern does not arise here.
        #[allow(deprecated)]
        let fd = AsyncFd::new(InotifyFd(inotify))?;
        Ok(Self { fd, name })
    }

    /// Resolves at the next write to the database's files.
    async fn changed(&self) -> std::io::Result<()> {
        loop {
            let mut guard = self.fd.readable().await?;
            match guard.get_inner().0.read_events() {
                Ok(events) => {
                    let ours = events.iter().any(|e| {
                        e.name.as_ref().is_some_and(|n| {
                            n.as_encoded_bytes()
                                .starts_with(self.name.as_encoded_bytes())
                        })
                    });
                    if ours {
                        return Ok(());
                    }
                }
                Err(nix::errno::Errno::EAGAIN) => guard.clear_ready(),
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// Calls `wake` whenever another connection (in any process) commits to the database.
pub(crate) async fn sqlite_commits(pool: SqlitePool, database: &Path, wake: impl Fn()) {
    let watch = match FileWatch::new(database) {
        Ok(w) => Some(w),
        Err(e) => {
            tracing::warn!(error = %e, "cannot watch the database file; polling for new jobs instead");
            None
        }
    };
    let mut failures = Backoff::new("watching the database for new jobs");
    loop {
        let result: anyhow::Result<()> = async {
            let mut conn = pool.acquire().await?;
            let mut last: i64 = sqlx::query_scalar("PRAGMA data_version")
                .fetch_one(&mut *conn)
                .await?;
            failures.succeeded();
            loop {
                match &watch {
                    Some(w) => {
                        tokio::select! {
                            changed = w.changed() => changed?,
                            () = tokio::time::sleep(WATCHED_POLL) => {}
                        }
                    }
                    None => tokio::time::sleep(UNWATCHED_POLL).await,
                }
                let now: i64 = sqlx::query_scalar("PRAGMA data_version")
                    .fetch_one(&mut *conn)
                    .await?;
                if now != last {
                    last = now;
                    wake();
                }
            }
        }
        .await;
        let pause = match result {
            Err(e) => failures.failed(&e),
            Ok(()) => Duration::ZERO,
        };
        tokio::time::sleep(pause.max(Duration::from_millis(100))).await;
    }
}

/// Sends a wake-up on PostgreSQL (delivered when the transaction commits); nothing on SQLite,
/// whose readers notice new commits by polling `PRAGMA data_version`.
pub(crate) async fn notify(tx: &mut Tx, channel: &str) -> sqlx::Result<()> {
    if let Tx::Postgres(t) = tx {
        sqlx::query("SELECT pg_notify($1, '')")
            .bind(channel)
            .execute(&mut **t)
            .await?;
    }
    Ok(())
}

/// Listens on a PostgreSQL channel for as long as the process lives, calling `on_notify` for
/// each notification, and reconnecting after errors.
pub(crate) async fn listen(
    pool: sqlx::PgPool,
    channel: &'static str,
    on_notify: impl Fn() + Send + 'static,
) {
    let mut failures = Backoff::new("listening for wake-ups");
    loop {
        let result: anyhow::Result<()> = async {
            let mut listener = sqlx::postgres::PgListener::connect_with(&pool).await?;
            listener.listen(channel).await?;
            failures.succeeded();
            // Anything that happened while we were not listening is covered by one wake-up.
            on_notify();
            loop {
                listener.recv().await?;
                on_notify();
            }
        }
        .await;
        let pause = match result {
            Err(e) => {
                let _channel = tracing::info_span!("listen", channel).entered();
                failures.failed(&e)
            }
            Ok(()) => Duration::ZERO,
        };
        tokio::time::sleep(pause.max(Duration::from_millis(100))).await;
    }
}
