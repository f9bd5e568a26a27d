//! Everything Bindery keeps: the database and the blob store. They are the only channel between
//! the web and worker processes.

pub mod blob;
pub mod database;
pub(crate) mod sql;
pub mod workers;

pub use blob::BlobStore;
pub use database::{Database, Durability, Plans, Tx};
