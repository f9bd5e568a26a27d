//! The `webhook_deliveries` table: one row per event, holding the body every attempt sends and
//! whether the receiver took it. The attempts themselves are the `webhook.deliver` job's.

use sqlx::FromRow;

use crate::storage::{Database, Tx};

/// A delivery as stored.
#[derive(Debug, Clone, FromRow)]
pub struct DeliveryRow {
    /// Sent as `Bindery-Delivery`; the same on every attempt.
    pub id: String,
    pub book_id: String,
    pub tenant: String,
    pub event: String,
    pub url: String,
    pub body: String,
    pub job_id: i64,
    pub created_at: i64,
    pub delivered_at: Option<i64>,
    pub response_status: Option<i32>,
}

const COLUMNS: &str = "id, book_id, tenant, event, url, body, job_id, created_at, delivered_at, \
                       response_status";

/// What recording an event writes.
pub struct NewDelivery<'a> {
    pub id: &'a str,
    pub book_id: &'a str,
    pub tenant: &'a str,
    pub event: &'a str,
    pub url: &'a str,
    pub body: &'a str,
    pub job_id: i64,
}

pub async fn insert(tx: &mut Tx, delivery: &NewDelivery<'_>) -> anyhow::Result<()> {
    on_tx!(tx, |conn, d| {
        sqlx::query(sql!(
            d,
            "INSERT INTO webhook_deliveries (id, book_id, tenant, event, url, body, job_id,
                                             created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, {now})"
        ))
        .bind(delivery.id)
        .bind(delivery.book_id)
        .bind(delivery.tenant)
        .bind(delivery.event)
        .bind(delivery.url)
        .bind(delivery.body)
        .bind(delivery.job_id)
        .execute(conn)
        .await?;
    });
    Ok(())
}

pub async fn get(db: &Database, id: &str) -> anyhow::Result<Option<DeliveryRow>> {
    on_pool!(db, |pool, d| {
        Ok(sqlx::query_as(sql!(
            d,
            &format!("SELECT {COLUMNS} FROM webhook_deliveries WHERE id = $1")
        ))
        .bind(id)
        .fetch_optional(pool)
        .await?)
    })
}

/// A book's deliveries, oldest first.
pub async fn for_book(db: &Database, book: &str) -> anyhow::Result<Vec<DeliveryRow>> {
    on_pool!(db, |pool, d| {
        Ok(sqlx::query_as(sql!(
            d,
            &format!(
                "SELECT {COLUMNS} FROM webhook_deliveries WHERE book_id = $1
                 ORDER BY created_at, id"
            )
        ))
        .bind(book)
        .fetch_all(pool)
        .await?)
    })
}

/// The receiver took it. The first answer stays recorded if a re-run delivers again.
pub async fn mark_delivered(db: &Database, id: &str, status: u16) -> anyhow::Result<()> {
    on_pool!(db, |pool, d| {
        sqlx::query(sql!(
            d,
            "UPDATE webhook_deliveries SET delivered_at = {now}, response_status = $2
             WHERE id = $1 AND delivered_at IS NULL"
        ))
        .bind(id)
        .bind(i32::from(status))
        .execute(pool)
        .await?;
    });
    Ok(())
}
