//! Sending one event: the `webhook.deliver` job (its HTTP client is `sender`'s, one a process).
//!
//! A 2xx answer delivers it. 410 Gone means the receiver wants no more: the job is discarded.
//! Anything else (another status, a timeout, a refused connection) is an error, so the job
//! engine retries it with exponential backoff; every attempt carries the same delivery id and
//! body, signed afresh with the time of sending.

use serde::{Deserialize, Serialize};

use super::QUEUE;
use super::deliveries::{self, DeliveryRow};
use super::sender::{Answer, Sender};
use crate::jobs::{Job, JobContext, Outcome};
use crate::services::Services;

/// Delivers one recorded event. The payload names the delivery; its URL and body are read from
/// the delivery's row, fixed when the event happened.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Deliver {
    pub delivery: String,
    /// For people reading the queue: the row is what counts.
    pub book: String,
    pub event: String,
}

impl Job for Deliver {
    const NAME: &'static str = "webhook.deliver";
    const QUEUE: &'static str = QUEUE;
    /// With the engine's backoff (1 s doubling, capped at an hour, ±25% jitter), the first
    /// twelve retries fill about an hour and the rest come hourly: the last attempt is about
    /// 18 hours after the first. A receiver down overnight still gets its events, and a dead
    /// one stops being called within a day.
    const MAX_ATTEMPTS: i32 = 30;
    type Context = Services;

    fn book(&self) -> Option<&str> {
        Some(&self.book)
    }

    #[tracing::instrument(name = "webhook", skip_all, fields(delivery.id = %self.delivery, event = %self.event))]
    async fn run(self, cx: &JobContext<Services>) -> anyhow::Result<Outcome> {
        let app = cx.app();
        let Some(row) = deliveries::get(&app.db, &self.delivery).await? else {
            return Ok(Outcome::Cancel(format!(
                "book {} was deleted, and its webhooks with it",
                self.book
            )));
        };
        if let (Some(_), Some(status)) = (row.delivered_at, row.response_status) {
            // A re-run after the receiver already took it (the worker stopped before committing).
            return Ok(Outcome::done_with(delivered(&row, status)));
        }
        let Some(secrets) = crate::tenants::webhook_secrets(&app.db, &row.tenant).await? else {
            return Ok(Outcome::Discard(format!(
                "tenant {:?} has neither a token nor an account, so there is no secret to sign its webhooks with",
                row.tenant
            )));
        };
        let sender = Sender::shared(app.config.webhook_allow_private)?;
        match sender.send(&row, &secrets.all()).await {
            Answer::Delivered(status) => {
                deliveries::mark_delivered(&app.db, &row.id, status).await?;
                tracing::info!(
                    for_author = true,
                    status,
                    attempt = cx.attempt,
                    "webhook delivered"
                );
                Ok(Outcome::done_with(delivered(&row, i32::from(status))))
            }
            Answer::Gone => {
                let reason = "the receiver answered 410 Gone: it wants no more events at this URL";
                tracing::warn!(for_author = true, reason, "webhook not delivered");
                Ok(Outcome::Discard(reason.into()))
            }
            // The refusal names the callback URL's host, the tenant's own; the addresses it
            // resolved to stay in the operator's line (`address::PublicOnly`).
            Answer::Refused(reason) => {
                tracing::warn!(for_author = true, %reason, "webhook not delivered");
                Ok(Outcome::Discard(reason))
            }
            Answer::Failed(message) => Err(anyhow::anyhow!(message)),
        }
    }
}

fn delivered(row: &DeliveryRow, status: i32) -> serde_json::Value {
    serde_json::json!({ "delivery": row.id, "status": status })
}
