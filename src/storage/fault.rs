//! What a failure means, read from the error's chain of causes: storage that is full (only the
//! operator can mend it), storage that could not be reached (the same work may succeed
//! shortly), or anything else, which is a bug (retrying will not help, and the log has to say
//! why). The web answers by it (`web::fault`: 507, 503 or 500), and the job engine does not
//! spend a job's attempts while its storage is out of reach.

use std::error::Error as StdError;
use std::io;

use object_store::client::{HttpError, HttpErrorKind};
use sqlx::error::DatabaseError;
use sqlx::postgres::PgDatabaseError;
use sqlx::sqlite::SqliteError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// A full disk or quota, on the database or the blob store.
    OutOfSpace,
    /// The database or blob store could not be reached, or did not answer in time.
    Unavailable,
    /// Anything else.
    Bug,
}

impl Fault {
    pub fn of(error: &anyhow::Error) -> Self {
        if error.chain().any(out_of_space) {
            Fault::OutOfSpace
        } else if error.chain().any(unreachable) {
            Fault::Unavailable
        } else {
            Fault::Bug
        }
    }
}

/// What `error` says of Bindery's own storage (the database or the blob store): full, or out
/// of reach; `None` for anything else, a bug or another service that could not be reached (a
/// webhook's receiver, say, which [`Fault::of`] also calls unavailable). Either is the
/// service's trouble, not a job's: a job that meets it waits without spending an attempt.
pub fn of_storage(error: &anyhow::Error) -> Option<Fault> {
    let from_storage = error.chain().any(|cause| {
        cause.is::<sqlx::Error>()
            || cause.is::<object_store::Error>()
            || cause.is::<OutOfReach>()
            || cause.is::<StorageFull>()
    });
    match Fault::of(error) {
        Fault::Bug => None,
        fault => from_storage.then_some(fault),
    }
}

/// What a database error means, as [`Fault::of`] would read it.
pub fn of_sqlx(e: &sqlx::Error) -> Fault {
    if out_of_space(e) {
        Fault::OutOfSpace
    } else if sqlx_unreachable(e) {
        Fault::Unavailable
    } else {
        Fault::Bug
    }
}

/// Whether `error` is Bindery's own storage out of reach (see [`of_storage`]).
pub fn storage_out_of_reach(error: &anyhow::Error) -> bool {
    of_storage(error) == Some(Fault::Unavailable)
}

/// Storage out of reach, as another process found it: a child process that could not reach
/// the blob store says so by its exit code ([`OutOfReach::EXIT_CODE`]), and its parent fails
/// with this, so that the job waits for storage rather than spending an attempt.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct OutOfReach(pub String);

impl OutOfReach {
    /// `EX_TEMPFAIL` of `sysexits.h`: a temporary failure, to be tried again later.
    pub const EXIT_CODE: u8 = 75;
}

/// Storage full, as another process found it: the manuscript reader's way of saying it could
/// not write its outputs for want of space ([`StorageFull::EXIT_CODE`]).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct StorageFull(pub String);

impl StorageFull {
    /// `EX_CANTCREAT` of `sysexits.h`: an output file could not be created.
    pub const EXIT_CODE: u8 = 73;
}

/// Whether an error comes from a full disk (or quota): `ENOSPC`/`EDQUOT` from the file system
/// (the blob store's writes), SQLite's `SQLITE_FULL`, or PostgreSQL's `disk_full` (53100).
fn out_of_space(cause: &(dyn StdError + 'static)) -> bool {
    if cause.is::<StorageFull>() {
        return true;
    }
    if let Some(io) = cause.downcast_ref::<io::Error>() {
        return io.kind() == io::ErrorKind::StorageFull
            || matches!(
                io.raw_os_error().map(nix::errno::Errno::from_raw),
                Some(nix::errno::Errno::ENOSPC | nix::errno::Errno::EDQUOT)
            );
    }
    if let Some(sqlx::Error::Database(db)) = cause.downcast_ref::<sqlx::Error>() {
        return sqlite_code(db.as_ref()) == Some(SQLITE_FULL)
            || postgres_code(db.as_ref()) == Some("53100");
    }
    false
}

const SQLITE_FULL: i32 = 13;
const SQLITE_BUSY: i32 = 5;
const SQLITE_LOCKED: i32 = 6;

/// Whether a cause says the storage could not be reached or did not answer: sqlx gave up
/// waiting for a connection, lost one, or the server refused it for now (PostgreSQL's
/// connection exceptions, class 08, its shutdown and start-up states and too many connections);
/// SQLite stayed busy or locked past its timeout; an object store's request could not connect,
/// timed out or was cut off, or the store answered that it cannot serve it now; or a socket
/// said so.
fn unreachable(cause: &(dyn StdError + 'static)) -> bool {
    if cause.is::<OutOfReach>() {
        return true;
    }
    if let Some(e) = cause.downcast_ref::<sqlx::Error>() {
        return sqlx_unreachable(e);
    }
    if let Some(e) = cause.downcast_ref::<object_store::Error>()
        && store_cannot_serve_now(e)
    {
        return true;
    }
    if let Some(e) = cause.downcast_ref::<HttpError>() {
        return matches!(
            e.kind(),
            HttpErrorKind::Connect
                | HttpErrorKind::Timeout
                | HttpErrorKind::Interrupted
                | HttpErrorKind::Request
        );
    }
    if let Some(e) = cause.downcast_ref::<io::Error>() {
        use io::ErrorKind::*;
        return matches!(
            e.kind(),
            ConnectionRefused
                | ConnectionReset
                | ConnectionAborted
                | NotConnected
                | BrokenPipe
                | TimedOut
                | HostUnreachable
                | NetworkUnreachable
                | NetworkDown
        );
    }
    false
}

/// Whether an object store's request failed on an answer that says "not now" once
/// object_store's own retries ran out: a server error (500, 502, 503, 504: a store that is
/// overloaded, failing over, or behind a proxy that lost it), throttling (429) or a request
/// timeout (408), the answers object_store itself retries. Not 501 or 505, which no wait mends.
///
/// object_store keeps the status in an error type it does not export, so it is read from the
/// error's text, which the unit tests below pin against a real store's client.
fn store_cannot_serve_now(e: &object_store::Error) -> bool {
    const STATUS: &str = "Server returned non-2xx status code: ";
    let mut cause: Option<&(dyn StdError + 'static)> = Some(e);
    while let Some(c) = cause {
        let text = c.to_string();
        if let Some(at) = text.find(STATUS) {
            let code = text[at + STATUS.len()..]
                .get(..3)
                .and_then(|c| c.parse().ok());
            return matches!(code, Some(500 | 502 | 503 | 504 | 429 | 408));
        }
        cause = c.source();
    }
    false
}

/// Whether the database could not be reached: the pool ran dry or closed, a connection was
/// refused or cut (the server is restarting or failing over), or the server said it cannot take
/// one now. A certificate that does not verify arrives as I/O too, from inside the TLS
/// handshake, but waiting will not mend it.
pub fn sqlx_unreachable(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed => true,
        sqlx::Error::Io(io) => io
            .get_ref()
            .is_none_or(|inner| !inner.is::<rustls::Error>()),
        sqlx::Error::Database(db) => database_unavailable(db.as_ref()),
        _ => false,
    }
}

fn database_unavailable(db: &dyn DatabaseError) -> bool {
    if let Some(code) = sqlite_code(db) {
        // The primary result code is the low byte of an extended one (SQLITE_BUSY_TIMEOUT…).
        return matches!(code & 0xFF, SQLITE_BUSY | SQLITE_LOCKED);
    }
    postgres_code(db).is_some_and(|code| {
        // 57P01 admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now, 53300
        // too_many_connections.
        code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03" | "53300")
    })
}

fn sqlite_code(db: &dyn DatabaseError) -> Option<i32> {
    db.try_downcast_ref::<SqliteError>()?.code()?.parse().ok()
}

fn postgres_code(db: &dyn DatabaseError) -> Option<&str> {
    Some(db.try_downcast_ref::<PgDatabaseError>()?.code())
}

#[cfg(test)]
mod tests {
    use actix_web::http::StatusCode;
    use anyhow::Context as _;

    use super::*;

    fn io(kind: io::ErrorKind) -> anyhow::Error {
        anyhow::Error::new(io::Error::new(kind, "test")).context("reading a blob")
    }

    fn os(errno: nix::errno::Errno) -> anyhow::Error {
        anyhow::Error::new(io::Error::from_raw_os_error(errno as i32)).context("writing a blob")
    }

    fn sqlx(e: sqlx::Error) -> anyhow::Error {
        anyhow::Error::new(e).context("SELECT … FROM tokens")
    }

    /// A real SQLite error, from a statement that raises it.
    async fn sqlite_error(sql: &'static str) -> sqlx::Error {
        use sqlx::Connection as _;
        let mut conn = sqlx::SqliteConnection::connect("sqlite::memory:")
            .await
            .expect("in-memory SQLite");
        sqlx::query(sql)
            .execute(&mut conn)
            .await
            .expect_err("the statement fails")
    }

    #[test]
    fn a_full_disk_is_out_of_space() {
        assert_eq!(Fault::of(&os(nix::errno::Errno::ENOSPC)), Fault::OutOfSpace);
        assert_eq!(Fault::of(&os(nix::errno::Errno::EDQUOT)), Fault::OutOfSpace);
        assert_eq!(
            Fault::of(&io(io::ErrorKind::StorageFull)),
            Fault::OutOfSpace
        );
        assert_eq!(Fault::OutOfSpace.status(), StatusCode::INSUFFICIENT_STORAGE);
    }

    #[test]
    fn storage_that_cannot_be_reached_is_unavailable() {
        for e in [
            sqlx::Error::PoolTimedOut,
            sqlx::Error::PoolClosed,
            sqlx::Error::Io(io::Error::new(io::ErrorKind::ConnectionRefused, "refused")),
            sqlx::Error::Io(io::Error::new(io::ErrorKind::UnexpectedEof, "closed")),
        ] {
            let text = e.to_string();
            assert_eq!(Fault::of(&sqlx(e)), Fault::Unavailable, "{text}");
        }
        for kind in [
            io::ErrorKind::ConnectionRefused,
            io::ErrorKind::ConnectionReset,
            io::ErrorKind::TimedOut,
            io::ErrorKind::BrokenPipe,
        ] {
            assert_eq!(Fault::of(&io(kind)), Fault::Unavailable, "{kind:?}");
        }
        for kind in [
            HttpErrorKind::Connect,
            HttpErrorKind::Timeout,
            HttpErrorKind::Interrupted,
        ] {
            let http = HttpError::new(kind, io::Error::other("socket"));
            let e = object_store::Error::Generic {
                store: "S3",
                source: Box::new(http),
            };
            assert_eq!(
                Fault::of(&anyhow::Error::new(e)),
                Fault::Unavailable,
                "{kind:?}"
            );
        }
        assert_eq!(Fault::Unavailable.status(), StatusCode::SERVICE_UNAVAILABLE);
    }

    #[tokio::test]
    async fn sqlite_busy_or_locked_is_unavailable_and_other_database_errors_are_bugs() {
        use sqlx::Connection as _;
        let dir = tempfile::tempdir().expect("tempdir");
        let url = format!("sqlite://{}?mode=rwc", dir.path().join("db").display());
        let mut holder = sqlx::SqliteConnection::connect(&url).await.expect("open");
        sqlx::query("CREATE TABLE t (x INTEGER)")
            .execute(&mut holder)
            .await
            .expect("create");
        sqlx::query("BEGIN EXCLUSIVE")
            .execute(&mut holder)
            .await
            .expect("lock");
        let options: sqlx::sqlite::SqliteConnectOptions = url.parse().expect("options");
        let mut other = sqlx::SqliteConnection::connect_with(
            &options.busy_timeout(std::time::Duration::from_millis(10)),
        )
        .await
        .expect("open");
        let busy = sqlx::query("INSERT INTO t VALUES (1)")
            .execute(&mut other)
            .await
            .expect_err("locked");
        assert_eq!(Fault::of(&sqlx(busy)), Fault::Unavailable);

        let syntax = sqlite_error("SELEC 1").await;
        assert_eq!(Fault::of(&sqlx(syntax)), Fault::Bug);
        let missing = sqlite_error("SELECT x FROM no_such_table").await;
        assert_eq!(Fault::of(&sqlx(missing)), Fault::Bug);
    }

    /// The error a real store's client makes of an answer with `status`, from a server that
    /// gives it to every request (as a proxy in front of a store in trouble does).
    async fn store_answering(status: &'static str) -> anyhow::Error {
        use object_store::ObjectStoreExt as _;
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("address");
        let server = tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let mut request = vec![0u8; 16 * 1024];
                let _ = socket.read(&mut request).await;
                let answer =
                    format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
                let _ = socket.write_all(answer.as_bytes()).await;
            }
        });
        let store = object_store::aws::AmazonS3Builder::new()
            .with_bucket_name("books")
            .with_region("us-east-1")
            .with_access_key_id("key")
            .with_secret_access_key("secret")
            .with_endpoint(format!("http://{addr}"))
            .with_allow_http(true)
            .with_retry(object_store::RetryConfig {
                max_retries: 0,
                ..object_store::RetryConfig::default()
            })
            .build()
            .expect("store");
        let error = store
            .get(&object_store::path::Path::from("books/1/manuscript"))
            .await
            .expect_err("the store refuses");
        server.abort();
        anyhow::Error::new(error).context("reading the manuscript")
    }

    #[tokio::test]
    async fn a_store_that_cannot_serve_now_is_unavailable_and_one_that_never_will_is_a_bug() {
        for status in [
            "500 Internal Server Error",
            "502 Bad Gateway",
            "503 Service Unavailable",
            "504 Gateway Timeout",
            "429 Too Many Requests",
        ] {
            let error = store_answering(status).await;
            assert_eq!(Fault::of(&error), Fault::Unavailable, "{status}: {error:#}");
            assert!(storage_out_of_reach(&error), "{status}");
        }
        for status in ["501 Not Implemented", "400 Bad Request"] {
            let error = store_answering(status).await;
            assert_eq!(Fault::of(&error), Fault::Bug, "{status}: {error:#}");
        }
    }

    #[test]
    fn a_child_that_found_storage_full_or_out_of_reach_is_storage_trouble() {
        let full = anyhow::Error::new(StorageFull("the reader's disk is full".into()))
            .context("reading the manuscript");
        assert_eq!(of_storage(&full), Some(Fault::OutOfSpace));
        let away = anyhow::Error::new(OutOfReach("no blob store".into()));
        assert_eq!(of_storage(&away), Some(Fault::Unavailable));
        // A full disk under a blob write is the store's; a bug is nobody's storage.
        let blob = object_store::Error::Generic {
            store: "LocalFileSystem",
            source: Box::new(io::Error::from_raw_os_error(
                nix::errno::Errno::ENOSPC as i32,
            )),
        };
        assert_eq!(
            of_storage(&anyhow::Error::new(blob)),
            Some(Fault::OutOfSpace)
        );
        assert_eq!(of_storage(&anyhow::anyhow!("no such chapter")), None);
    }

    #[test]
    fn anything_else_is_a_bug() {
        assert_eq!(
            Fault::of(&anyhow::anyhow!("no application state")),
            Fault::Bug
        );
        assert_eq!(Fault::of(&io(io::ErrorKind::PermissionDenied)), Fault::Bug);
        assert_eq!(Fault::of(&io(io::ErrorKind::InvalidData)), Fault::Bug);
        assert_eq!(Fault::of(&sqlx(sqlx::Error::RowNotFound)), Fault::Bug);
        let decode: anyhow::Error = sqlx(sqlx::Error::ColumnDecode {
            index: "tenant".into(),
            source: "mismatched types".into(),
        });
        assert_eq!(Fault::of(&decode), Fault::Bug);
        let json: anyhow::Error = serde_json::from_str::<u8>("x")
            .context("a stored row")
            .expect_err("not JSON");
        assert_eq!(Fault::of(&json), Fault::Bug);
        assert_eq!(Fault::Bug.status(), StatusCode::INTERNAL_SERVER_ERROR);
    }

    #[test]
    fn only_storage_out_of_reach_spares_a_jobs_attempts() {
        assert!(storage_out_of_reach(&sqlx(sqlx::Error::PoolTimedOut)));
        let blob = object_store::Error::Generic {
            store: "MicrosoftAzure",
            source: Box::new(HttpError::new(
                HttpErrorKind::Connect,
                io::Error::other("refused"),
            )),
        };
        assert!(storage_out_of_reach(&anyhow::Error::new(blob)));
        // A webhook receiver that refuses the connection is the job's failure, not an outage.
        assert!(!storage_out_of_reach(&io(io::ErrorKind::ConnectionRefused)));
        // A bug in a statement is no outage either.
        assert!(!storage_out_of_reach(&sqlx(sqlx::Error::RowNotFound)));
        // A child process that could not reach the blob store, as its parent reports it.
        let child = anyhow::Error::new(OutOfReach("the reader could not reach it".into()))
            .context("reading the manuscript");
        assert!(storage_out_of_reach(&child));
    }
}
