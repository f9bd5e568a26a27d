//! What every job a worker runs can reach: storage, the queue, the configuration and the
//! cache of document models. `worker::run` builds it once per process, and
//! the jobs (the pipeline's steps, catalogs, webhooks, maintenance) reach it through
//! `JobContext::app`.
//!
//! It is made of the layers under it (storage, the queue, the configuration, the ebook's
//! model), so every job above can name it (the webhooks', the books', the catalog's, the
//! pipeline's), and the worker at the top builds it.

use std::sync::Arc;

mod models;

pub use models::{ModelCache, plan as plan_model, read as read_model};

use crate::config::Config;
use crate::jobs::JobQueue;
use crate::storage::{BlobStore, Database};

pub struct Services {
    pub db: Database,
    pub blobs: BlobStore,
    pub queue: JobQueue,
    pub config: Arc<Config>,
    /// Parsed document models of the books this worker is converting.
    pub models: ModelCache,
}
