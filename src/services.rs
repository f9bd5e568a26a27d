//! What every job a worker runs can reach: storage, the queue, the configuration, the cache
//! of document models and the webhook client. `worker::run` builds it once per process, and
//! the jobs (the pipeline's steps, catalogs, webhooks, maintenance) reach it through
//! `JobContext::app`.
//!
//! It sits below the jobs that use it and the worker that builds it, so the pipeline depends
//! on it and never on the worker.

use std::sync::Arc;

use crate::config::Config;
use crate::jobs::JobQueue;
use crate::pipeline::cache::ModelCache;
use crate::storage::{BlobStore, Database};
use crate::webhooks::sender::Sender;

pub struct Services {
    pub db: Database,
    pub blobs: BlobStore,
    pub queue: JobQueue,
    pub config: Arc<Config>,
    /// Parsed document models of the books this worker is converting.
    pub models: ModelCache,
    /// The HTTP client webhooks go out through.
    pub webhooks: Sender,
}
