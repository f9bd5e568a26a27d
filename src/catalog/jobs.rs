//! The jobs that keep catalogs current: `catalog.refresh` for one tenant (declared with the
//! book, `books::RefreshCatalog`, since a book's operations enqueue it), and
//! `catalog.refresh_all` (the `catalog_refresh` schedule) that enqueues it for every tenant.

use serde::{Deserialize, Serialize};

use crate::books::{self, RefreshCatalog, refresh_catalog};
use crate::jobs::{Job, JobContext, Outcome};
use crate::services::Services;

/// Catalog jobs have a queue of their own, so a backlog of conversions never delays them.
const QUEUE: &str = "catalog";

/// `books::refresh_catalog` enqueues it.
impl Job for RefreshCatalog {
    const NAME: &'static str = "catalog.refresh";
    const QUEUE: &'static str = QUEUE;
    const MAX_ATTEMPTS: i32 = 5;
    type Context = Services;

    async fn run(self, cx: &JobContext<Services>) -> anyhow::Result<Outcome> {
        if !cx.release_unique_key().await? {
            anyhow::bail!("this run no longer holds the job (cancelled, or its lease was lost)");
        }
        let app = cx.app();
        let refreshed = super::refresh(&app.db, &app.blobs, &self.tenant).await?;
        if refreshed.changed {
            tracing::info!(tenant = %self.tenant, books = refreshed.books, "catalog refreshed");
        } else {
            tracing::debug!(tenant = %self.tenant, books = refreshed.books, "catalog unchanged");
        }
        Ok(Outcome::done_with(refreshed))
    }
}

/// Enqueues a refresh for every tenant that has books or a stored catalog (a tenant whose last
/// book was deleted still needs its feed emptied).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RefreshAll {}

impl Job for RefreshAll {
    const NAME: &'static str = "catalog.refresh_all";
    const QUEUE: &'static str = QUEUE;
    type Context = Services;

    async fn run(self, cx: &JobContext<Services>) -> anyhow::Result<Outcome> {
        let app = cx.app();
        let mut tenants = books::tenants(&app.db).await?;
        tenants.extend(super::stored_tenants(&app.blobs).await?);
        tenants.sort();
        tenants.dedup();
        for tenant in &tenants {
            cx.then(refresh_catalog(tenant));
        }
        tracing::info!(tenants = tenants.len(), "catalog refreshes enqueued");
        Ok(Outcome::done_with(
            serde_json::json!({ "tenants": tenants.len() }),
        ))
    }
}
