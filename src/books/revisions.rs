//! The `book_revisions` table: one row per revision of a book, what it was given and what it
//! became. The books row is the revision readers get (`books.revision`); this table is every
//! revision, that one included. Its statements take the pool or the caller's transaction; the
//! operations that combine them with the books row are in `super`.
//!
//! A book a release before revisions submitted has no row for its revision 1 until something
//! is done to that revision: [`ensure_first`] writes it from the books row, in the transaction
//! that needs it, and [`get`] reads the books row in its place meanwhile.

use anyhow::Context;
use chrono::{DateTime, Utc};
use sqlx::FromRow;

use super::id::{BookId, RevisionId};
use super::table::{self, BookStatus, Published, StoredOptions};
use crate::storage::{Database, Tx};

/// Where a revision is: the `book_revisions.status` column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RevisionStatus {
    /// Its number is taken and its files are arriving: no one sees it yet. An upload that
    /// fails removes it; one cut off by a crash leaves it, seen by no one, its number spent.
    Uploading,
    /// Its workflow is running.
    Processing,
    /// Built: the book's current revision, or one it had.
    Ready,
    /// A step refused its input or ran out of attempts; `error_code` and `error` say why.
    Failed,
    /// A newer revision superseded it while it was building; its files are removed.
    Cancelled,
}

impl RevisionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RevisionStatus::Uploading => "uploading",
            RevisionStatus::Processing => "processing",
            RevisionStatus::Ready => "ready",
            RevisionStatus::Failed => "failed",
            RevisionStatus::Cancelled => "cancelled",
        }
    }
}

impl std::str::FromStr for RevisionStatus {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> anyhow::Result<Self> {
        match s {
            "uploading" => Ok(RevisionStatus::Uploading),
            "processing" => Ok(RevisionStatus::Processing),
            "ready" => Ok(RevisionStatus::Ready),
            "failed" => Ok(RevisionStatus::Failed),
            "cancelled" => Ok(RevisionStatus::Cancelled),
            other => anyhow::bail!("unknown revision status {other:?}"),
        }
    }
}

impl std::fmt::Display for RevisionStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<BookStatus> for RevisionStatus {
    fn from(status: BookStatus) -> Self {
        match status {
            BookStatus::Processing => RevisionStatus::Processing,
            BookStatus::Ready => RevisionStatus::Ready,
            BookStatus::Failed => RevisionStatus::Failed,
        }
    }
}

/// A revision as stored.
#[derive(Debug, Clone)]
pub struct RevisionRow {
    pub id: RevisionId,
    pub status: RevisionStatus,
    pub file_name: String,
    pub options: String,
    pub title: Option<String>,
    pub authors: Vec<String>,
    pub format: Option<String>,
    pub report: Option<String>,
    pub error_code: Option<String>,
    pub error: Option<String>,
    pub epub_bytes: Option<i64>,
    pub pdf_bytes: Option<i64>,
    pub idempotency_key: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub published_at: Option<DateTime<Utc>>,
    /// When its files were removed (superseded while it built, or out of the newest
    /// `REVISIONS_KEPT`): it keeps its record alone.
    pub files_removed_at: Option<DateTime<Utc>>,
}

impl RevisionRow {
    pub fn options(&self) -> anyhow::Result<StoredOptions> {
        Ok(serde_json::from_str(&self.options)?)
    }
}

#[derive(FromRow)]
struct Stored {
    book_id: BookId,
    number: i64,
    status: String,
    file_name: String,
    options: String,
    title: Option<String>,
    author_list: Option<String>,
    format: Option<String>,
    report: Option<String>,
    error_code: Option<String>,
    error: Option<String>,
    epub_bytes: Option<i64>,
    pdf_bytes: Option<i64>,
    idempotency_key: Option<String>,
    created_at: i64,
    updated_at: i64,
    published_at: Option<i64>,
    files_removed_at: Option<i64>,
}

impl TryFrom<Stored> for RevisionRow {
    type Error = anyhow::Error;

    fn try_from(row: Stored) -> anyhow::Result<Self> {
        let what = || format!("reading revision {} of book {}", row.number, row.book_id);
        Ok(RevisionRow {
            id: RevisionId::of(&row.book_id, u32::try_from(row.number).with_context(what)?),
            status: row.status.parse().with_context(what)?,
            authors: row
                .author_list
                .as_deref()
                .map(serde_json::from_str)
                .transpose()
                .with_context(what)?
                .unwrap_or_default(),
            created_at: table::time(row.created_at)?,
            updated_at: table::time(row.updated_at)?,
            published_at: row.published_at.map(table::time).transpose()?,
            files_removed_at: row.files_removed_at.map(table::time).transpose()?,
            file_name: row.file_name,
            options: row.options,
            title: row.title,
            format: row.format,
            report: row.report,
            error_code: row.error_code,
            error: row.error,
            epub_bytes: row.epub_bytes,
            pdf_bytes: row.pdf_bytes,
            idempotency_key: row.idempotency_key,
        })
    }
}

const COLUMNS: &str = "book_id, number, status, file_name, options, title, author_list, format, \
                       report, error_code, error, epub_bytes, pdf_bytes, idempotency_key, \
                       created_at, updated_at, published_at, files_removed_at";

/// Revision `id`; for a book a release before revisions made, its revision 1 as the books row
/// says while it has no row of its own. `None` when there is no such revision.
pub async fn get(db: &Database, id: &RevisionId) -> anyhow::Result<Option<RevisionRow>> {
    let row: Option<Stored> = on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(
            d,
            &format!("SELECT {COLUMNS} FROM book_revisions WHERE book_id = $1 AND number = $2")
        ))
        .bind(&id.book)
        .bind(i64::from(id.number))
        .fetch_optional(pool)
        .await?
    });
    match row {
        Some(row) => Ok(Some(row.try_into()?)),
        None if id.number == 1 => Ok(table::get(db, &id.book).await?.map(|book| RevisionRow {
            id: id.clone(),
            status: book.status.into(),
            file_name: book.file_name,
            options: book.options,
            title: book.title,
            authors: book.authors,
            format: book.format,
            report: book.report,
            error_code: book.error_code,
            error: book.error,
            epub_bytes: book.epub_bytes,
            pdf_bytes: book.pdf_bytes,
            idempotency_key: None,
            created_at: book.created_at,
            updated_at: book.updated_at,
            published_at: book.published_at,
            files_removed_at: None,
        })),
        None => Ok(None),
    }
}

/// Every revision of `book` but those still uploading, newest first.
pub async fn list(db: &Database, book: &BookId) -> anyhow::Result<Vec<RevisionRow>> {
    let rows: Vec<Stored> = on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(
            d,
            &format!(
                "SELECT {COLUMNS} FROM book_revisions
                 WHERE book_id = $1 AND status <> 'uploading'
                 ORDER BY number DESC"
            )
        ))
        .bind(book)
        .fetch_all(pool)
        .await?
    });
    let mut revisions: Vec<RevisionRow> = rows
        .into_iter()
        .map(RevisionRow::try_from)
        .collect::<anyhow::Result<_>>()?;
    if !revisions.iter().any(|r| r.id.number == 1)
        && let Some(first) = get(db, &RevisionId::first(book)).await?
    {
        revisions.push(first);
    }
    Ok(revisions)
}

/// The revision of `book` an upload with this idempotency key made.
pub async fn by_idempotency_key(
    db: &Database,
    book: &BookId,
    key: &str,
) -> anyhow::Result<Option<RevisionRow>> {
    let row: Option<Stored> = on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(
            d,
            &format!(
                "SELECT {COLUMNS} FROM book_revisions
                 WHERE book_id = $1 AND idempotency_key = $2 AND status <> 'uploading'"
            )
        ))
        .bind(book)
        .bind(key)
        .fetch_optional(pool)
        .await?
    });
    row.map(RevisionRow::try_from).transpose()
}

/// Writes revision 1's row from the books row when it has none (a book a release before
/// revisions submitted), in the caller's transaction.
pub async fn ensure_first(tx: &mut Tx, book: &BookId) -> anyhow::Result<()> {
    on_tx!(tx, |conn, d| {
        sqlx::query(sql!(
            d,
            "INSERT INTO book_revisions (book_id, number, status, file_name, options, title,
                                         author_list, format, report, error_code, error,
                                         epub_bytes, pdf_bytes, created_at, updated_at,
                                         published_at)
             SELECT id, 1, status, file_name, options, title, author_list, format, report,
                    error_code, error, epub_bytes, pdf_bytes, created_at, updated_at, published_at
             FROM books WHERE id = $1
             ON CONFLICT (book_id, number) DO NOTHING"
        ))
        .bind(book)
        .execute(conn)
        .await?;
    });
    Ok(())
}

/// A new revision in `status` (processing, or uploading with no file name or options yet), in
/// the caller's transaction. `Ok(false)` when the book already has a revision with this
/// idempotency key, or this number (a concurrent revision won).
pub async fn insert(
    tx: &mut Tx,
    id: &RevisionId,
    status: RevisionStatus,
    file_name: &str,
    options: &StoredOptions,
    idempotency_key: Option<&str>,
) -> anyhow::Result<bool> {
    let options = serde_json::to_string(options)?;
    let inserted = on_tx!(tx, |conn, d| {
        sqlx::query(sql!(
            d,
            "INSERT INTO book_revisions (book_id, number, status, file_name, options,
                                         idempotency_key, created_at, updated_at)
             VALUES ($1, $2, $6, $3, $4, $5, {now}, {now})
             ON CONFLICT DO NOTHING"
        ))
        .bind(&id.book)
        .bind(i64::from(id.number))
        .bind(file_name)
        .bind(&options)
        .bind(idempotency_key)
        .bind(status.as_str())
        .execute(conn)
        .await?
        .rows_affected()
    });
    Ok(inserted == 1)
}

/// An uploaded revision starts building with what its upload said, in the caller's
/// transaction, and takes the upload's idempotency key (a second revision started with the
/// same key is refused by the unique index): `false` when it was not uploading (removed
/// meanwhile).
pub async fn start(
    tx: &mut Tx,
    id: &RevisionId,
    file_name: &str,
    options: &StoredOptions,
    idempotency_key: Option<&str>,
) -> anyhow::Result<bool> {
    let options = serde_json::to_string(options)?;
    let started = on_tx!(tx, |conn, d| {
        sqlx::query(sql!(
            d,
            "UPDATE book_revisions SET status = 'processing', file_name = $3, options = $4,
                    idempotency_key = $5, created_at = {now}, updated_at = {now}
             WHERE book_id = $1 AND number = $2 AND status = 'uploading'"
        ))
        .bind(&id.book)
        .bind(i64::from(id.number))
        .bind(file_name)
        .bind(&options)
        .bind(idempotency_key)
        .execute(conn)
        .await?
        .rows_affected()
    });
    Ok(started == 1)
}

/// Removes a revision whose upload failed.
pub async fn remove_uploading(db: &Database, id: &RevisionId) -> anyhow::Result<()> {
    on_pool!(db, |pool, d| {
        sqlx::query(sql!(
            d,
            "DELETE FROM book_revisions WHERE book_id = $1 AND number = $2 AND status = 'uploading'"
        ))
        .bind(&id.book)
        .bind(i64::from(id.number))
        .execute(pool)
        .await?;
    });
    Ok(())
}

/// The number the book's next revision takes.
pub async fn next_number(tx: &mut Tx, book: &BookId) -> anyhow::Result<u32> {
    let latest: Option<i64> = on_tx!(tx, |conn, d| {
        sqlx::query_scalar(sql!(
            d,
            "SELECT max(number) FROM book_revisions WHERE book_id = $1"
        ))
        .bind(book)
        .fetch_one(conn)
        .await?
    });
    Ok(u32::try_from(latest.unwrap_or(1))? + 1)
}

/// Cancels the book's revisions older than `newer` that are still building, in the caller's
/// transaction: the numbers it cancelled.
pub async fn cancel_older(tx: &mut Tx, newer: &RevisionId) -> anyhow::Result<Vec<u32>> {
    let cancelled: Vec<i64> = on_tx!(tx, |conn, d| {
        sqlx::query_scalar(sql!(
            d,
            "UPDATE book_revisions SET status = 'cancelled', updated_at = {now},
                    files_removed_at = {now}
             WHERE book_id = $1 AND number < $2 AND status = 'processing'
             RETURNING number"
        ))
        .bind(&newer.book)
        .bind(i64::from(newer.number))
        .fetch_all(conn)
        .await?
    });
    cancelled
        .into_iter()
        .map(|n| Ok(u32::try_from(n)?))
        .collect()
}

/// The revisions of `book` whose files go now that `shown` is the one it shows: every built or
/// failed one but the newest `kept` (by number) and `shown` itself, in the caller's
/// transaction. They are marked as they are chosen, so each is chosen once.
pub async fn prune(tx: &mut Tx, shown: &RevisionId, kept: usize) -> anyhow::Result<Vec<u32>> {
    let kept = i64::try_from(kept).unwrap_or(i64::MAX);
    let pruned: Vec<i64> = on_tx!(tx, |conn, d| {
        sqlx::query_scalar(sql!(
            d,
            "UPDATE book_revisions SET files_removed_at = {now}, updated_at = {now}
             WHERE book_id = $1 AND files_removed_at IS NULL AND status IN ('ready', 'failed')
               AND number <> $2
               AND number <= (SELECT max(number) FROM book_revisions WHERE book_id = $1) - $3
             RETURNING number"
        ))
        .bind(&shown.book)
        .bind(i64::from(shown.number))
        .bind(kept)
        .fetch_all(conn)
        .await?
    });
    pruned.into_iter().map(|n| Ok(u32::try_from(n)?)).collect()
}

/// The revision is built, in the caller's transaction: `false` when it was not building (it
/// was published already, or cancelled), and nothing changed.
pub async fn mark_ready(tx: &mut Tx, id: &RevisionId, p: &Published<'_>) -> anyhow::Result<bool> {
    let list = serde_json::to_string(p.authors)?;
    let changed = on_tx!(tx, |conn, d| {
        sqlx::query(sql!(
            d,
            "UPDATE book_revisions SET status = 'ready', title = $3, author_list = $4,
                    format = $5, report = $6, epub_bytes = $7, pdf_bytes = $8,
                    error_code = NULL, error = NULL,
                    updated_at = {now}, published_at = COALESCE(published_at, {now})
             WHERE book_id = $1 AND number = $2 AND status IN ('processing', 'failed')"
        ))
        .bind(&id.book)
        .bind(i64::from(id.number))
        .bind(p.title)
        .bind(&list)
        .bind(p.format)
        .bind(p.report)
        .bind(p.epub_bytes)
        .bind(p.pdf_bytes)
        .execute(conn)
        .await?
        .rows_affected()
    });
    Ok(changed == 1)
}

/// The revision failed, in the caller's transaction: `false` when it was not building.
pub async fn mark_failed(
    tx: &mut Tx,
    id: &RevisionId,
    code: &str,
    message: &str,
) -> anyhow::Result<bool> {
    let changed = on_tx!(tx, |conn, d| {
        sqlx::query(sql!(
            d,
            "UPDATE book_revisions SET status = 'failed', error_code = $3, error = $4,
                    updated_at = {now}
             WHERE book_id = $1 AND number = $2 AND status = 'processing'"
        ))
        .bind(&id.book)
        .bind(i64::from(id.number))
        .bind(code)
        .bind(message)
        .execute(conn)
        .await?
        .rows_affected()
    });
    Ok(changed == 1)
}

/// A failed revision goes back to processing (for a retry), in the caller's transaction.
pub async fn mark_processing(tx: &mut Tx, id: &RevisionId) -> anyhow::Result<()> {
    on_tx!(tx, |conn, d| {
        sqlx::query(sql!(
            d,
            "UPDATE book_revisions SET status = 'processing', error_code = NULL, error = NULL,
                    updated_at = {now}
             WHERE book_id = $1 AND number = $2 AND status = 'failed'"
        ))
        .bind(&id.book)
        .bind(i64::from(id.number))
        .execute(conn)
        .await?;
    });
    Ok(())
}

/// Revision ids from `(book_id, number)` rows.
fn revision_ids(rows: Vec<(BookId, i64)>) -> anyhow::Result<Vec<RevisionId>> {
    rows.into_iter()
        .map(|(book, number)| Ok(RevisionId::of(&book, u32::try_from(number)?)))
        .collect()
}

/// Revisions still `uploading` that were reserved before `before`: uploads a crash cut off
/// (an upload in progress is seconds or minutes old), at most `limit` of them.
pub async fn stale_uploads(
    db: &Database,
    before: DateTime<Utc>,
    limit: i64,
) -> anyhow::Result<Vec<RevisionId>> {
    let rows: Vec<(BookId, i64)> = on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(
            d,
            "SELECT book_id, number FROM book_revisions
             WHERE status = 'uploading' AND number > 1 AND created_at < $1
             ORDER BY created_at LIMIT $2"
        ))
        .bind(before.timestamp_millis())
        .bind(limit)
        .fetch_all(pool)
        .await?
    });
    revision_ids(rows)
}

/// Revisions whose files were removed after `since` (superseded, or out of the newest
/// `REVISIONS_KEPT`), at most `limit`, newest first.
pub async fn recently_removed(
    db: &Database,
    since: DateTime<Utc>,
    limit: i64,
) -> anyhow::Result<Vec<RevisionId>> {
    let rows: Vec<(BookId, i64)> = on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(
            d,
            "SELECT book_id, number FROM book_revisions
             WHERE files_removed_at > $1 ORDER BY files_removed_at DESC LIMIT $2"
        ))
        .bind(since.timestamp_millis())
        .bind(limit)
        .fetch_all(pool)
        .await?
    });
    revision_ids(rows)
}

/// Removes every revision row of a book, and what each changed, in the caller's transaction
/// (the book's deletion).
pub async fn delete_all(tx: &mut Tx, book: &BookId) -> anyhow::Result<()> {
    on_tx!(tx, |conn, d| {
        sqlx::query(sql!(d, "DELETE FROM book_revisions WHERE book_id = $1"))
            .bind(book)
            .execute(conn)
            .await?;
    });
    on_tx!(tx, |conn, d| {
        sqlx::query(sql!(d, "DELETE FROM revision_changes WHERE book_id = $1"))
            .bind(book)
            .execute(conn)
            .await?;
    });
    Ok(())
}

/// Stores what changed in revision `id` since revision `from` (the report's JSON), in the
/// caller's transaction; the first stored stands.
pub async fn store_changes(
    tx: &mut Tx,
    id: &RevisionId,
    from: u32,
    changes: &str,
) -> anyhow::Result<()> {
    on_tx!(tx, |conn, d| {
        sqlx::query(sql!(
            d,
            "INSERT INTO revision_changes (book_id, number, from_number, changes)
             VALUES ($1, $2, $3, $4)
             ON CONFLICT (book_id, number) DO NOTHING"
        ))
        .bind(&id.book)
        .bind(i64::from(id.number))
        .bind(i64::from(from))
        .bind(changes)
        .execute(conn)
        .await?;
    });
    Ok(())
}

/// What changed in revision `id` since the revision before it, as stored when it was
/// published: the report's JSON.
pub async fn stored_changes(db: &Database, id: &RevisionId) -> anyhow::Result<Option<String>> {
    let row: Option<(String,)> = on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(
            d,
            "SELECT changes FROM revision_changes WHERE book_id = $1 AND number = $2"
        ))
        .bind(&id.book)
        .bind(i64::from(id.number))
        .fetch_optional(pool)
        .await?
    });
    Ok(row.map(|(json,)| json))
}
