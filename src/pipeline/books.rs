//! The `books` table: one row per uploaded manuscript, its status, and its report.

use serde::Serialize;
use sqlx::FromRow;

use crate::convert::Options;
use crate::jobs::JobQueue;
use crate::storage::{Database, Tx};
use crate::webhooks::{self, BookEvent, Event};

/// A book as stored.
#[derive(Debug, Clone, FromRow, Serialize)]
pub struct BookRow {
    pub id: String,
    pub tenant: String,
    pub file_name: String,
    pub options: String,
    pub status: String,
    pub title: Option<String>,
    pub authors: Option<String>,
    pub format: Option<String>,
    pub report: Option<String>,
    pub error_code: Option<String>,
    pub error: Option<String>,
    pub epub_bytes: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
    pub published_at: Option<i64>,
    pub idempotency_key: Option<String>,
    /// Where its webhooks go.
    pub callback_url: Option<String>,
}

impl BookRow {
    pub fn options(&self) -> anyhow::Result<StoredOptions> {
        Ok(serde_json::from_str(&self.options)?)
    }

    /// The title as a safe download file name (ASCII letters, digits and dashes).
    pub fn download_name(&self) -> String {
        let title = self.title.as_deref().unwrap_or("book");
        let name = title
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    ' '
                }
            })
            .collect::<String>()
            .split_whitespace()
            .take(12)
            .collect::<Vec<_>>()
            .join("-");
        if name.is_empty() { "book".into() } else { name }
    }
}

/// What the upload chose, stored with the book so that every step (and every re-run of a
/// step) sees the same inputs.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct StoredOptions {
    #[serde(flatten)]
    pub convert: Options,
    /// The cover's file name, when one was uploaded.
    #[serde(default)]
    pub cover_name: Option<String>,
}

pub const PROCESSING: &str = "processing";
pub const READY: &str = "ready";
pub const FAILED: &str = "failed";

const COLUMNS: &str = "id, tenant, file_name, options, status, title, authors, format, report, \
                       error_code, error, epub_bytes, created_at, updated_at, published_at, \
                       idempotency_key, callback_url";

/// A new book row. `Ok(false)` when the tenant already has a book with this idempotency key
/// (a concurrent retry of the same upload won).
pub async fn insert(
    tx: &mut Tx,
    id: &str,
    tenant: &str,
    file_name: &str,
    options: &StoredOptions,
    idempotency_key: Option<&str>,
    callback_url: Option<&str>,
) -> anyhow::Result<bool> {
    let options = serde_json::to_string(options)?;
    let inserted = on_tx!(tx, |conn, d| {
        sqlx::query(sql!(
            d,
            "INSERT INTO books (id, tenant, file_name, options, status, created_at, updated_at,
                                idempotency_key, callback_url)
             VALUES ($1, $2, $3, $4, 'processing', {now}, {now}, $5, $6)
             ON CONFLICT (tenant, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING"
        ))
        .bind(id)
        .bind(tenant)
        .bind(file_name)
        .bind(&options)
        .bind(idempotency_key)
        .bind(callback_url)
        .execute(conn)
        .await?
        .rows_affected()
    });
    Ok(inserted == 1)
}

/// The tenant's book made by an upload with this idempotency key.
pub async fn find_by_idempotency_key(
    db: &Database,
    tenant: &str,
    key: &str,
) -> anyhow::Result<Option<BookRow>> {
    on_pool!(db, |pool, d| {
        Ok(sqlx::query_as(sql!(
            d,
            &format!("SELECT {COLUMNS} FROM books WHERE tenant = $1 AND idempotency_key = $2")
        ))
        .bind(tenant)
        .bind(key)
        .fetch_optional(pool)
        .await?)
    })
}

/// A tenant's books, newest first, `limit` at a time; `before` is the id of the last book of
/// the previous page.
pub async fn list(
    db: &Database,
    tenant: &str,
    before: Option<&str>,
    limit: i64,
) -> anyhow::Result<Vec<BookRow>> {
    on_pool!(db, |pool, d| {
        Ok(sqlx::query_as(sql!(
            d,
            &format!(
                "SELECT {COLUMNS} FROM books
                 WHERE tenant = $1
                   AND (CAST($2 AS TEXT) IS NULL OR (created_at, id) <
                        (SELECT created_at, id FROM books WHERE id = $2 AND tenant = $1))
                 ORDER BY created_at DESC, id DESC
                 LIMIT $3"
            )
        ))
        .bind(tenant)
        .bind(before)
        .bind(limit)
        .fetch_all(pool)
        .await?)
    })
}

/// Removes a book's row, in the caller's transaction (so what must follow a deletion, such as
/// refreshing the catalog, commits with it); its blobs and jobs are the caller's to clean.
pub async fn delete(tx: &mut Tx, id: &str) -> anyhow::Result<bool> {
    on_tx!(tx, |conn, d| {
        Ok(sqlx::query(sql!(d, "DELETE FROM books WHERE id = $1"))
            .bind(id)
            .execute(conn)
            .await?
            .rows_affected()
            == 1)
    })
}

/// A ready book, as a catalog lists it (the columns it needs, not the report).
#[derive(Debug, Clone, FromRow)]
pub struct ReadyBook {
    pub id: String,
    pub title: Option<String>,
    pub authors: Option<String>,
    pub updated_at: i64,
    pub published_at: Option<i64>,
}

/// A tenant's ready books, most recently published first.
pub async fn ready(db: &Database, tenant: &str) -> anyhow::Result<Vec<ReadyBook>> {
    on_pool!(db, |pool, d| {
        Ok(sqlx::query_as(sql!(
            d,
            "SELECT id, title, authors, updated_at, published_at FROM books
             WHERE tenant = $1 AND status = 'ready'
             ORDER BY published_at DESC, id"
        ))
        .bind(tenant)
        .fetch_all(pool)
        .await?)
    })
}

/// Every tenant that has a book, in any state.
pub async fn tenants(db: &Database) -> anyhow::Result<Vec<String>> {
    on_pool!(db, |pool, d| {
        Ok(
            sqlx::query_scalar(sql!(d, "SELECT DISTINCT tenant FROM books ORDER BY tenant"))
                .fetch_all(pool)
                .await?,
        )
    })
}

/// Which of `ids` are books (one query for a whole page of ids).
pub async fn existing(
    db: &Database,
    ids: &[String],
) -> anyhow::Result<std::collections::HashSet<String>> {
    let ids = serde_json::to_string(ids)?;
    let found: Vec<String> = match db {
        Database::Postgres(pool) => {
            sqlx::query_scalar(
                "SELECT id FROM books WHERE id IN (SELECT jsonb_array_elements_text($1::jsonb))",
            )
            .bind(ids)
            .fetch_all(pool)
            .await?
        }
        Database::Sqlite(pool) => {
            sqlx::query_scalar("SELECT id FROM books WHERE id IN (SELECT value FROM json_each($1))")
                .bind(ids)
                .fetch_all(pool)
                .await?
        }
    };
    Ok(found.into_iter().collect())
}

/// A failed book goes back to processing (for a retry).
pub async fn mark_processing(db: &Database, id: &str) -> anyhow::Result<()> {
    on_pool!(db, |pool, d| {
        sqlx::query(sql!(
            d,
            "UPDATE books SET status = 'processing', error_code = NULL, error = NULL,
                    updated_at = {now}
             WHERE id = $1"
        ))
        .bind(id)
        .execute(pool)
        .await?;
    });
    Ok(())
}

pub async fn get(db: &Database, id: &str) -> anyhow::Result<Option<BookRow>> {
    on_pool!(db, |pool, d| {
        Ok(sqlx::query_as(sql!(
            d,
            &format!("SELECT {COLUMNS} FROM books WHERE id = $1")
        ))
        .bind(id)
        .fetch_optional(pool)
        .await?)
    })
}

/// Marks a book failed with a message for its author. Only a book still processing changes:
/// a late failure report never overwrites a published book. The change and its `book.failed`
/// webhook commit together, and a report that changes nothing sends nothing.
pub async fn mark_failed(
    db: &Database,
    public_url: Option<&url::Url>,
    id: &str,
    code: &str,
    message: &str,
) -> anyhow::Result<()> {
    let mut tx = db.begin().await?;
    let changed: Option<Changed> = on_tx!(&mut tx, |conn, d| {
        sqlx::query_as(sql!(
            d,
            "UPDATE books SET status = 'failed', error_code = $2, error = $3, updated_at = {now}
             WHERE id = $1 AND status = 'processing'
             RETURNING tenant, title, callback_url"
        ))
        .bind(id)
        .bind(code)
        .bind(message)
        .fetch_optional(conn)
        .await?
    });
    if let Some((tenant, title, Some(url))) = &changed {
        let event = BookEvent {
            event: Event::Failed,
            book_id: id,
            tenant,
            callback_url: url,
            title: title.as_deref(),
            error: Some((code, message)),
            base: public_url,
        };
        webhooks::record(&mut tx, &JobQueue::new(db.clone()), &event).await?;
    }
    tx.commit().await?;
    Ok(())
}

/// What a status change returns: the book's tenant, title and callback URL.
type Changed = (String, Option<String>, Option<String>);

/// What publishing records.
pub struct Published<'a> {
    pub title: &'a str,
    pub authors: &'a str,
    pub format: &'a str,
    pub report: &'a str,
    pub epub_bytes: i64,
}

/// The book is ready. Idempotent: publishing again changes nothing (the first publication
/// stands), so its `book.ready` webhook, committed with the change, is recorded once.
pub async fn mark_ready(
    db: &Database,
    public_url: Option<&url::Url>,
    id: &str,
    p: &Published<'_>,
) -> anyhow::Result<()> {
    let mut tx = db.begin().await?;
    let changed: Option<Changed> = on_tx!(&mut tx, |conn, d| {
        sqlx::query_as(sql!(
            d,
            "UPDATE books SET status = 'ready', title = $2, authors = $3, format = $4,
                    report = $5, epub_bytes = $6, error_code = NULL, error = NULL,
                    updated_at = {now}, published_at = COALESCE(published_at, {now})
             WHERE id = $1 AND status <> 'ready'
             RETURNING tenant, title, callback_url"
        ))
        .bind(id)
        .bind(p.title)
        .bind(p.authors)
        .bind(p.format)
        .bind(p.report)
        .bind(p.epub_bytes)
        .fetch_optional(conn)
        .await?
    });
    if let Some((tenant, _, Some(url))) = &changed {
        let event = BookEvent {
            event: Event::Ready,
            book_id: id,
            tenant,
            callback_url: url,
            title: Some(p.title),
            error: None,
            base: public_url,
        };
        webhooks::record(&mut tx, &JobQueue::new(db.clone()), &event).await?;
    }
    tx.commit().await?;
    Ok(())
}
