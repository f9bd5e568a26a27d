//! Everything Bindery keeps: the database and the blob store. They are the only channel between
//! the web and worker processes.

/// The database's clock in unix milliseconds, as SQL, so that hosts with skewed clocks agree.
macro_rules! sqlite_now {
    () => {
        "CAST(unixepoch('subsec') * 1000 AS INTEGER)"
    };
}

/// The PostgreSQL twin of `sqlite_now!`. `clock_timestamp()`, not `now()`, because `now()` is
/// frozen at the start of a transaction.
macro_rules! postgres_now {
    () => {
        "(extract(epoch from clock_timestamp()) * 1000)::bigint"
    };
}

pub mod blob;
pub mod database;
pub mod workers;

pub use blob::BlobStore;
pub use database::Database;
