//! Bindery: a self-hosted manuscript-to-ebook service in one binary.
//!
//! The architecture is in `DESIGN.md`; the module tree follows it. `supervisor` runs the web
//! process and watches its `worker` child; `storage` is the only channel between them.

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

pub mod cli;
pub mod config;
pub mod jobs;
pub mod keepalive;
pub mod signals;
pub mod storage;
pub mod supervisor;
pub mod telemetry;
pub mod web;
pub mod worker;
