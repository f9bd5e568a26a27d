//! Everything Bindery keeps: the database and the blob store. They are the only channel between
//! the web and worker processes.

pub mod backoff;
pub mod blob;
pub mod budget;
pub mod database;
pub mod fault;
pub mod installation;
pub mod kept;
pub(crate) mod sql;
pub mod workers;

pub use blob::BlobStore;
pub use database::{Checkout, Database, Durability, Plans, Tx};
pub use kept::KeptConnection;

/// A stored time (unix milliseconds, from the database's clock) as RFC 3339 UTC with
/// milliseconds, how the API, webhook events and the CLI show times.
pub fn rfc3339(millis: i64) -> String {
    chrono::DateTime::from_timestamp_millis(millis)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_default()
}
