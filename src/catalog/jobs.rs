//! The jobs that keep catalogs current: `catalog.refresh` for one tenant, and
//! `catalog.refresh_all` (the `catalog_refresh` schedule) that enqueues it for every tenant.

use serde::{Deserialize, Serialize};

use crate::jobs::{Job, JobContext, NewJob, Outcome};
use crate::pipeline::books;
use crate::services::Services;

/// Catalog jobs have a queue of their own, so a backlog of conversions never delays them.
const QUEUE: &str = "catalog";

/// Rebuilds one tenant's stored catalog.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Refresh {
    pub tenant: String,
}

/// A refresh of `tenant`'s catalog, to enqueue after anything that changes its list.
///
/// A burst of changes makes one job: the unique key holds only while the job is queued (it
/// lets go of the key when it starts, before reading anything), so a change made while a
/// refresh is already running enqueues a new one instead of being swallowed by it. The
/// serialization key runs a tenant's refreshes one at a time, in order, so an older list never
/// overwrites a newer one. Its own workflow keeps it out of the book's that published it.
pub fn refresh_job(tenant: &str) -> NewJob {
    let key = format!("catalog:{tenant}");
    NewJob::of(&Refresh {
        tenant: tenant.to_owned(),
    })
    .tenant(tenant)
    .unique_key(format!("catalog.refresh:{tenant}"))
    .serial_key(key.clone())
    .workflow(key)
}

impl Job for Refresh {
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
            cx.then(refresh_job(tenant));
        }
        tracing::info!(tenants = tenants.len(), "catalog refreshes enqueued");
        Ok(Outcome::done_with(
            serde_json::json!({ "tenants": tenants.len() }),
        ))
    }
}
