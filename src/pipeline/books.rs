//! The `books` table: one row per uploaded manuscript, its status, and its report.

use serde::Serialize;
use sqlx::FromRow;

use crate::convert::Options;
use crate::storage::{Database, Tx};

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
}

impl BookRow {
    pub fn options(&self) -> anyhow::Result<StoredOptions> {
        Ok(serde_json::from_str(&self.options)?)
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
                       error_code, error, epub_bytes, created_at, updated_at, published_at";

pub async fn insert(
    tx: &mut Tx,
    id: &str,
    tenant: &str,
    file_name: &str,
    options: &StoredOptions,
) -> anyhow::Result<()> {
    let options = serde_json::to_string(options)?;
    on_tx!(tx, |conn, d| {
        sqlx::query(sql!(
            d,
            "INSERT INTO books (id, tenant, file_name, options, status, created_at, updated_at)
             VALUES ($1, $2, $3, $4, 'processing', {now}, {now})"
        ))
        .bind(id)
        .bind(tenant)
        .bind(file_name)
        .bind(&options)
        .execute(conn)
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
/// a late failure report never overwrites a published book.
pub async fn mark_failed(db: &Database, id: &str, code: &str, message: &str) -> anyhow::Result<()> {
    on_pool!(db, |pool, d| {
        sqlx::query(sql!(
            d,
            "UPDATE books SET status = 'failed', error_code = $2, error = $3, updated_at = {now}
             WHERE id = $1 AND status = 'processing'"
        ))
        .bind(id)
        .bind(code)
        .bind(message)
        .execute(pool)
        .await?;
    });
    Ok(())
}

/// What publishing records.
pub struct Published<'a> {
    pub title: &'a str,
    pub authors: &'a str,
    pub format: &'a str,
    pub report: &'a str,
    pub epub_bytes: i64,
}

/// The book is ready. Idempotent: publishing twice leaves the first publication time.
pub async fn mark_ready(db: &Database, id: &str, p: &Published<'_>) -> anyhow::Result<()> {
    on_pool!(db, |pool, d| {
        sqlx::query(sql!(
            d,
            "UPDATE books SET status = 'ready', title = $2, authors = $3, format = $4,
                    report = $5, epub_bytes = $6, error_code = NULL, error = NULL,
                    updated_at = {now}, published_at = COALESCE(published_at, {now})
             WHERE id = $1"
        ))
        .bind(id)
        .bind(p.title)
        .bind(p.authors)
        .bind(p.format)
        .bind(p.report)
        .bind(p.epub_bytes)
        .execute(pool)
        .await?;
    });
    Ok(())
}
