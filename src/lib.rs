//! Bindery: a self-hosted manuscript-to-ebook service in one binary.
//!
//! The architecture is in `ARCHITECTURE.md`; the module tree follows it. `supervisor` runs the web
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

/// One SQL text, rendered once per backend and cached for the life of the process (sqlx
/// caches prepared statements by text, so the strings must be stable).
macro_rules! sql {
    ($dialect:expr, $text:expr) => {{
        static RENDERED: std::sync::LazyLock<[String; 2]> =
            std::sync::LazyLock::new(|| $crate::storage::sql::render($text));
        match $dialect {
            $crate::storage::sql::Dialect::Sqlite => RENDERED[0].as_str(),
            $crate::storage::sql::Dialect::Postgres => RENDERED[1].as_str(),
        }
    }};
}

/// Runs `$body` against the pool of whichever backend `$db` is, with `$dialect` set.
macro_rules! on_pool {
    ($db:expr, |$pool:ident, $dialect:ident| $body:expr) => {
        match $db {
            $crate::storage::Database::Sqlite($pool) => {
                let $dialect = $crate::storage::sql::Dialect::Sqlite;
                $body
            }
            $crate::storage::Database::Postgres($pool) => {
                let $dialect = $crate::storage::sql::Dialect::Postgres;
                $body
            }
        }
    };
}

/// The same, inside a transaction: `$conn` is the transaction's connection.
macro_rules! on_tx {
    ($tx:expr, |$conn:ident, $dialect:ident| $body:expr) => {
        match $tx {
            $crate::storage::Tx::Sqlite(t) => {
                let $conn = &mut **t;
                let $dialect = $crate::storage::sql::Dialect::Sqlite;
                $body
            }
            $crate::storage::Tx::Postgres(t) => {
                let $conn = &mut **t;
                let $dialect = $crate::storage::sql::Dialect::Postgres;
                $body
            }
        }
    };
}

pub mod accounts;
pub mod advance_copies;
pub mod books;
pub mod catalog;
pub mod cli;
pub mod config;
pub mod convert;
pub mod document;
pub mod ebook;
pub mod executable;
pub mod fuzzing;
pub mod house_styles;
pub mod jobs;
pub mod keepalive;
pub mod labels;
pub mod language;
pub mod log_files;
pub mod logbook;
pub mod logging;
pub mod manuscript;
pub mod math;
pub mod metrics;
pub mod paperback;
pub mod pipeline;
pub mod print;
pub mod printers;
pub mod report;
pub mod script_fonts;
pub mod services;
pub mod sessions;
pub mod signals;
pub mod storage;
pub mod style;
pub mod supervisor;
pub mod svg;
pub mod tenants;
#[cfg(test)]
mod test_support;
pub mod tokens;
pub mod web;
pub mod webhooks;
pub mod worker;
