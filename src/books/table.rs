//! The `books` table: one row per uploaded manuscript, its status, and its report. Its
//! statements, each taking the pool or the caller's transaction; the operations that combine
//! them (`super`) are what the rest of the application calls.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};

use anyhow::Context;
use chrono::{DateTime, Utc};
use sqlx::FromRow;

use super::id::{BookId, RevisionId, Tenant};
use crate::convert::Options;
use crate::jobs::JobQueue;
use crate::storage::{Database, Tx};
use crate::webhooks::{self, BookEvent, Event};

/// A book as stored.
#[derive(Debug, Clone)]
pub struct BookRow {
    pub id: BookId,
    pub tenant: Tenant,
    pub file_name: String,
    pub options: String,
    pub status: BookStatus,
    pub title: Option<String>,
    /// Empty until the book is published.
    pub authors: Vec<String>,
    pub format: Option<String>,
    pub report: Option<String>,
    pub error_code: Option<String>,
    pub error: Option<String>,
    pub epub_bytes: Option<i64>,
    /// The print edition's PDF, when the book has one (it can fail alone).
    pub pdf_bytes: Option<i64>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub published_at: Option<DateTime<Utc>>,
    pub idempotency_key: Option<String>,
    /// Where its webhooks go.
    pub callback_url: Option<String>,
    /// The revision the row shows and its files serve: the newest ready one, or before any is,
    /// the newest.
    pub revision: u32,
}

/// Where a book is: the `books.status` column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BookStatus {
    /// Its workflow is running.
    Processing,
    /// Published.
    Ready,
    /// A step refused the input or ran out of attempts; `error_code` and `error` say why.
    Failed,
}

impl BookStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            BookStatus::Processing => "processing",
            BookStatus::Ready => "ready",
            BookStatus::Failed => "failed",
        }
    }
}

impl std::str::FromStr for BookStatus {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> anyhow::Result<Self> {
        match s {
            "processing" => Ok(BookStatus::Processing),
            "ready" => Ok(BookStatus::Ready),
            "failed" => Ok(BookStatus::Failed),
            other => anyhow::bail!("unknown book status {other:?}"),
        }
    }
}

impl std::fmt::Display for BookStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for BookStatus {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// A row as the database returns it; [`BookRow`] is what it means.
#[derive(FromRow)]
struct Stored {
    id: BookId,
    tenant: Tenant,
    file_name: String,
    options: String,
    status: String,
    title: Option<String>,
    authors: Option<String>,
    author_list: Option<String>,
    format: Option<String>,
    report: Option<String>,
    error_code: Option<String>,
    error: Option<String>,
    epub_bytes: Option<i64>,
    pdf_bytes: Option<i64>,
    created_at: i64,
    updated_at: i64,
    published_at: Option<i64>,
    idempotency_key: Option<String>,
    callback_url: Option<String>,
    revision: i64,
}

impl TryFrom<Stored> for BookRow {
    type Error = anyhow::Error;

    fn try_from(row: Stored) -> anyhow::Result<Self> {
        let authors = authors(row.author_list.as_deref(), row.authors.as_deref())
            .with_context(|| format!("reading the authors of book {}", row.id))?;
        let revision = u32::try_from(row.revision)
            .with_context(|| format!("reading the revision of book {}", row.id))?;
        Ok(BookRow {
            status: row
                .status
                .parse()
                .with_context(|| format!("reading book {}", row.id))?,
            authors,
            created_at: time(row.created_at)?,
            updated_at: time(row.updated_at)?,
            published_at: row.published_at.map(time).transpose()?,
            id: row.id,
            tenant: row.tenant,
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
            callback_url: row.callback_url,
            revision,
        })
    }
}

/// The authors from `author_list` (a JSON array), or for a row written by a release before
/// that column, from `authors`, where they were joined with `"; "`.
fn authors(list: Option<&str>, joined: Option<&str>) -> anyhow::Result<Vec<String>> {
    if let Some(list) = list {
        return Ok(serde_json::from_str(list)?);
    }
    Ok(joined
        .map(|joined| {
            joined
                .split(JOINED)
                .filter(|a| !a.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default())
}

/// How the `authors` column joins names, kept written for the release before `author_list`.
const JOINED: &str = "; ";

/// A time the database stored, in unix milliseconds.
pub(super) fn time(millis: i64) -> anyhow::Result<DateTime<Utc>> {
    DateTime::from_timestamp_millis(millis)
        .with_context(|| format!("{millis} is not a time in milliseconds"))
}

/// Decodes rows at the edge: a status or a value this code does not know is an error.
fn decode(rows: Vec<Stored>) -> anyhow::Result<Vec<BookRow>> {
    rows.into_iter().map(BookRow::try_from).collect()
}

impl ReadyBook {
    /// The revision it shows, whose files are the book's.
    pub fn current(&self) -> RevisionId {
        RevisionId::of(&self.id, u32::try_from(self.revision).unwrap_or(1))
    }
}

impl BookRow {
    /// The revision the row shows, whose files are the book's.
    pub fn current(&self) -> RevisionId {
        RevisionId::of(&self.id, self.revision)
    }

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

const COLUMNS: &str = "id, tenant, file_name, options, status, title, authors, author_list, \
                       format, report, error_code, error, epub_bytes, pdf_bytes, created_at, \
                       updated_at, published_at, idempotency_key, callback_url, revision";

/// A new book row. `Ok(false)` when the tenant already has a book with this idempotency key
/// (a concurrent retry of the same upload won).
pub async fn insert(
    tx: &mut Tx,
    id: &BookId,
    tenant: &Tenant,
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
    tenant: &Tenant,
    key: &str,
) -> anyhow::Result<Option<BookRow>> {
    let row: Option<Stored> = on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(
            d,
            &format!("SELECT {COLUMNS} FROM books WHERE tenant = $1 AND idempotency_key = $2")
        ))
        .bind(tenant)
        .bind(key)
        .fetch_optional(pool)
        .await?
    });
    row.map(BookRow::try_from).transpose()
}

/// A tenant's books, newest first, `limit` at a time; `before` is the id of the last book of
/// the previous page.
pub async fn list(
    db: &Database,
    tenant: &Tenant,
    before: Option<&BookId>,
    limit: i64,
) -> anyhow::Result<Vec<BookRow>> {
    let rows: Vec<Stored> = on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(
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
        .await?
    });
    decode(rows)
}

/// What to call each of these books (its title, or its file name while it has none), by id;
/// books that do not exist are left out.
pub async fn names(db: &Database, ids: &[String]) -> anyhow::Result<HashMap<String, String>> {
    let mut ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    ids.sort_unstable();
    ids.dedup();
    let placeholders = (1..=ids.len())
        .map(|n| format!("${n}"))
        .collect::<Vec<_>>()
        .join(", ");
    let text = format!("SELECT id, title, file_name FROM books WHERE id IN ({placeholders})");
    // `$n` placeholders read alike on both backends; their number varies, so the text is
    // built here rather than cached by `sql!`.
    let rows: Vec<(String, Option<String>, String)> = on_pool!(db, |pool, _d| {
        let mut query = sqlx::query_as(sqlx::AssertSqlSafe(text.clone()));
        for id in &ids {
            query = query.bind(*id);
        }
        query.fetch_all(pool).await?
    });
    Ok(rows
        .into_iter()
        .map(|(id, title, file_name)| (id, title.unwrap_or(file_name)))
        .collect())
}

/// Removes a book's row, in the caller's transaction (so what must follow a deletion, such as
/// refreshing the catalog, commits with it); its blobs and jobs are the caller's to clean.
pub async fn delete(tx: &mut Tx, id: &BookId) -> anyhow::Result<bool> {
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
    pub id: BookId,
    /// The revision it shows.
    pub revision: i64,
    pub title: Option<String>,
    pub updated_at: i64,
    pub published_at: Option<i64>,
}

/// A tenant's ready books, most recently published first.
pub async fn ready(db: &Database, tenant: &Tenant) -> anyhow::Result<Vec<ReadyBook>> {
    on_pool!(db, |pool, d| {
        Ok(sqlx::query_as(sql!(
            d,
            "SELECT id, revision, title, updated_at, published_at FROM books
             WHERE tenant = $1 AND status = 'ready'
             ORDER BY published_at DESC, id"
        ))
        .bind(tenant)
        .fetch_all(pool)
        .await?)
    })
}

/// Every tenant that has a book, in any state.
pub async fn tenants(db: &Database) -> anyhow::Result<Vec<Tenant>> {
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
    ids: &[BookId],
) -> anyhow::Result<std::collections::HashSet<BookId>> {
    let ids = serde_json::to_string(ids)?;
    let found: Vec<BookId> = on_pool!(db, |pool, d| {
        sqlx::query_scalar(sql!(d, "SELECT id FROM books WHERE id IN ({texts $1})"))
            .bind(ids)
            .fetch_all(pool)
            .await?
    });
    Ok(found.into_iter().collect())
}

/// For each of `ids` that is a book, a stamp that changes whenever something its detailed
/// view (`GET /api/v1/books/{id}`) shows may have changed: its row, the progress of its steps,
/// its webhook deliveries. One query for all of them, so that one watcher can serve every
/// open event stream of a process. A deleted book's stamp changes too, or is missing.
///
/// `updated_at` alone would not do: a step's progress, its state and a delivery's attempts
/// change rows of `jobs` and `webhook_deliveries`, never the book's.
pub async fn stamps(db: &Database, ids: &[BookId]) -> anyhow::Result<HashMap<BookId, u64>> {
    // The steps' part reads what `count_workflow` reads, so that it sees every change the
    // progress display can show, of the revision the book shows (its workflow's id, as
    // `RevisionId::workflow` names it); a delivery's job changes `state`, `attempt` or `run_at` at
    // every turn (its errors grow only with them).
    // `{texts $1}` keeps the lookups on the indexes (`books` primary key, `jobs_workflow`,
    // `webhook_deliveries_book`) on both backends.
    const SQL: &str = "SELECT b.id AS book, 'book ' || b.status || ' ' || CAST(b.updated_at AS TEXT) AS stamp
             FROM books b WHERE b.id IN ({texts $1})
             UNION ALL
             SELECT b.id, 'steps ' || j.kind || ' ' || j.state || ' ' || CAST(count(*) AS TEXT)
                    || ' ' || CAST(COALESCE(sum(j.progress), 0) AS TEXT)
                    || ' ' || COALESCE(max(j.progress_message), '')
             FROM books b JOIN jobs j ON j.workflow = (CASE WHEN b.revision = 1 THEN b.id
                                                  ELSE b.id || '/r' || CAST(b.revision AS TEXT) END)
             WHERE b.id IN ({texts $1})
             GROUP BY b.id, j.kind, j.state
             UNION ALL
             SELECT d.book_id, 'webhook ' || d.id || ' ' || COALESCE(CAST(d.delivered_at AS TEXT), '')
                    || ' ' || COALESCE(j.state, '') || ' ' || COALESCE(CAST(j.attempt AS TEXT), '')
                    || ' ' || COALESCE(CAST(j.run_at AS TEXT), '')
             FROM webhook_deliveries d LEFT JOIN jobs j ON j.id = d.job_id
             WHERE d.book_id IN ({texts $1})
             ORDER BY 1, 2";
    let ids = serde_json::to_string(ids)?;
    let rows: Vec<(BookId, String)> = on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(d, SQL))
            .bind(ids)
            .fetch_all(pool)
            .await?
    });
    let mut hashers: HashMap<BookId, DefaultHasher> = HashMap::new();
    for (book, stamp) in rows {
        stamp.hash(hashers.entry(book).or_default());
    }
    Ok(hashers
        .into_iter()
        .map(|(book, hasher)| (book, hasher.finish()))
        .collect())
}

/// A failed book goes back to processing (for a retry), in the caller's transaction.
pub async fn mark_processing(tx: &mut Tx, id: &BookId) -> anyhow::Result<()> {
    on_tx!(tx, |conn, d| {
        sqlx::query(sql!(
            d,
            "UPDATE books SET status = 'processing', error_code = NULL, error = NULL,
                    updated_at = {now}
             WHERE id = $1"
        ))
        .bind(id)
        .execute(conn)
        .await?;
    });
    Ok(())
}

pub async fn get(db: &Database, id: &BookId) -> anyhow::Result<Option<BookRow>> {
    let row: Option<Stored> = on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(
            d,
            &format!("SELECT {COLUMNS} FROM books WHERE id = $1")
        ))
        .bind(id)
        .fetch_optional(pool)
        .await?
    });
    row.map(BookRow::try_from).transpose()
}

/// Marks a book failed with a message for its author, in the caller's transaction, when its
/// revision `revision` failed and that is the revision the book shows (it has no ready one).
/// Only a book still processing changes: a late failure report never overwrites a published
/// book. Its `book.failed` webhook is recorded in the same transaction, and a report that
/// changes nothing sends nothing. `false` when the book did not change.
pub async fn mark_failed(
    tx: &mut Tx,
    queue: &JobQueue,
    public_url: Option<&url::Url>,
    revision: &RevisionId,
    code: &str,
    message: &str,
) -> anyhow::Result<bool> {
    let changed: Option<Changed> = on_tx!(tx, |conn, d| {
        sqlx::query_as(sql!(
            d,
            "UPDATE books SET status = 'failed', error_code = $2, error = $3, updated_at = {now}
             WHERE id = $1 AND status = 'processing' AND revision = $4
             RETURNING tenant, title, callback_url"
        ))
        .bind(&revision.book)
        .bind(code)
        .bind(message)
        .bind(i64::from(revision.number))
        .fetch_optional(conn)
        .await?
    });
    let Some((tenant, title, callback_url)) = &changed else {
        return Ok(false);
    };
    if let Some(url) = callback_url {
        let event = BookEvent {
            event: Event::Failed,
            book_id: &revision.book,
            revision: revision.number,
            tenant,
            callback_url: url,
            title: title.as_deref(),
            error: Some((code, message)),
            base: public_url,
        };
        webhooks::record(tx, queue, &event).await?;
    }
    Ok(true)
}

/// Records `book.revision_failed` for a revision that failed while the book kept showing
/// another, in the caller's transaction.
pub async fn revision_failed(
    tx: &mut Tx,
    queue: &JobQueue,
    public_url: Option<&url::Url>,
    revision: &RevisionId,
    code: &str,
    message: &str,
) -> anyhow::Result<()> {
    let book: Option<Changed> = on_tx!(tx, |conn, d| {
        sqlx::query_as(sql!(
            d,
            "SELECT tenant, title, callback_url FROM books WHERE id = $1"
        ))
        .bind(&revision.book)
        .fetch_optional(conn)
        .await?
    });
    if let Some((tenant, title, Some(url))) = &book {
        let event = BookEvent {
            event: Event::RevisionFailed,
            book_id: &revision.book,
            revision: revision.number,
            tenant,
            callback_url: url,
            title: title.as_deref(),
            error: Some((code, message)),
            base: public_url,
        };
        webhooks::record(tx, queue, &event).await?;
    }
    Ok(())
}

/// What a status change returns: the book's tenant, title and callback URL.
type Changed = (Tenant, Option<String>, Option<String>);

/// What publishing records.
pub struct Published<'a> {
    pub title: &'a str,
    pub authors: &'a [String],
    pub format: &'a str,
    pub report: &'a str,
    pub epub_bytes: i64,
    pub pdf_bytes: Option<i64>,
    /// What changed since the revision before it: that revision's number and the report's
    /// JSON (`ebook::changes::Changes`); none for a first revision, or when there was nothing
    /// built to compare with.
    pub changes: Option<(u32, &'a str)>,
}

/// The book shows revision `revision`, ready, in the caller's transaction: its row takes what
/// publishing records, and the revision's manuscript and options. Only a newer revision than
/// the one it shows, or the same one while it is not ready, changes it: publishing again
/// changes nothing (the first publication stands), so its `book.ready` webhook, recorded in
/// the same transaction, is recorded once a revision. The book's tenant when it changed.
pub async fn mark_ready(
    tx: &mut Tx,
    queue: &JobQueue,
    public_url: Option<&url::Url>,
    revision: &RevisionId,
    p: &Published<'_>,
) -> anyhow::Result<Option<Tenant>> {
    // `authors` is still written for the previous release, which reads only it.
    let joined = p.authors.join(JOINED);
    let list = serde_json::to_string(p.authors)?;
    let changed: Option<Changed> = on_tx!(tx, |conn, d| {
        sqlx::query_as(sql!(
            d,
            "UPDATE books SET status = 'ready', title = $2, authors = $3, author_list = $7,
                    format = $4, report = $5, epub_bytes = $6, pdf_bytes = $8,
                    error_code = NULL, error = NULL, revision = $9,
                    file_name = COALESCE((SELECT file_name FROM book_revisions
                                          WHERE book_id = $1 AND number = $9), file_name),
                    options = COALESCE((SELECT options FROM book_revisions
                                        WHERE book_id = $1 AND number = $9), options),
                    updated_at = {now}, published_at = COALESCE(published_at, {now})
             WHERE id = $1 AND (revision < $9 OR (revision = $9 AND status <> 'ready'))
             RETURNING tenant, title, callback_url"
        ))
        .bind(&revision.book)
        .bind(p.title)
        .bind(&joined)
        .bind(p.format)
        .bind(p.report)
        .bind(p.epub_bytes)
        .bind(&list)
        .bind(p.pdf_bytes)
        .bind(i64::from(revision.number))
        .fetch_optional(conn)
        .await?
    });
    let Some((tenant, _, callback_url)) = changed else {
        return Ok(None);
    };
    if let Some(url) = &callback_url {
        let event = BookEvent {
            event: Event::Ready,
            book_id: &revision.book,
            revision: revision.number,
            tenant: &tenant,
            callback_url: url,
            title: Some(p.title),
            error: None,
            base: public_url,
        };
        webhooks::record(tx, queue, &event).await?;
    }
    Ok(Some(tenant))
}

/// The book follows its new revision `revision` while it has no ready one (its first build
/// failed or is still running): it shows that revision, processing, in the caller's
/// transaction.
pub async fn follow(tx: &mut Tx, revision: &RevisionId) -> anyhow::Result<()> {
    on_tx!(tx, |conn, d| {
        sqlx::query(sql!(
            d,
            "UPDATE books SET status = 'processing', error_code = NULL, error = NULL,
                    revision = $2,
                    file_name = (SELECT file_name FROM book_revisions
                                 WHERE book_id = $1 AND number = $2),
                    options = (SELECT options FROM book_revisions
                               WHERE book_id = $1 AND number = $2),
                    updated_at = {now}
             WHERE id = $1 AND status <> 'ready'"
        ))
        .bind(&revision.book)
        .bind(i64::from(revision.number))
        .execute(conn)
        .await?;
    });
    Ok(())
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::test_support::databases;

    /// What the test writes by hand: rows as the queue and the pipeline leave them.
    async fn run(db: &Database, sql: &'static str) {
        let Database::Sqlite(pool) = db else {
            unreachable!("the test opens SQLite")
        };
        sqlx::query(sql).execute(pool).await.expect(sql);
    }

    /// A statement for either backend (they read these the same).
    pub(crate) async fn exec(db: &Database, sql: &'static str) {
        match db {
            Database::Sqlite(pool) => sqlx::query(sql).execute(pool).await.map(drop),
            Database::Postgres(pool) => sqlx::query(sql).execute(pool).await.map(drop),
        }
        .expect(sql);
    }

    async fn authors_of(db: &Database, id: &str) -> Vec<String> {
        get(db, &BookId::unchecked(id))
            .await
            .expect("read")
            .expect("the book")
            .authors
    }

    #[tokio::test]
    async fn books_published_by_the_release_before_author_lists_read_back_as_it_read_them() {
        let dir = tempfile::tempdir().expect("tempdir");
        for (db, migrator) in databases(12, dir.path()).await {
            // As that release published them (its last name ends with the separator).
            exec(
                &db,
                r#"INSERT INTO books (id, tenant, file_name, status, title, authors, created_at, updated_at)
                   VALUES ('old', 't', 'a.md', 'ready', 'T', 'Ann Smith; Bob "B" Jones; C\D; ', 1, 1),
                          ('empty', 't', 'b.md', 'ready', 'T', '', 1, 1),
                          ('new', 't', 'c.md', 'processing', NULL, NULL, 1, 1)"#,
            )
            .await;
            match &db {
                Database::Sqlite(pool) => migrator.run(pool).await,
                Database::Postgres(pool) => migrator.run(pool).await,
            }
            .expect("migrate");
            // And as it may still publish them while the new release starts.
            exec(
                &db,
                "INSERT INTO books (id, tenant, file_name, status, title, authors, created_at, updated_at)
                 VALUES ('late', 't', 'd.md', 'ready', 'T', 'Cy; Di', 1, 1)",
            )
            .await;
            let backend = db.backend();
            let expected: [(&str, &[&str]); 4] = [
                ("old", &["Ann Smith", r#"Bob "B" Jones"#, r"C\D"]),
                ("empty", &[]),
                ("new", &[]),
                ("late", &["Cy", "Di"]),
            ];
            for (id, authors) in expected {
                assert_eq!(authors_of(&db, id).await, authors, "{backend}: {id}");
            }
            // The migration converted the rows, rather than reads falling back to splitting.
            exec(&db, "UPDATE books SET authors = 'gone' WHERE id = 'old'").await;
            assert_eq!(authors_of(&db, "old").await.len(), 3, "{backend}");
        }
    }

    #[tokio::test]
    async fn an_author_whose_name_holds_the_old_separator_round_trips() {
        let dir = tempfile::tempdir().expect("tempdir");
        for (db, migrator) in databases(i64::MAX, dir.path()).await {
            drop(migrator);
            exec(
                &db,
                "INSERT INTO books (id, tenant, file_name, status, created_at, updated_at)
                 VALUES ('b', 't', 'a.md', 'processing', 1, 1)",
            )
            .await;
            let authors = ["Smith; Jones & Co".to_owned(), "Ann".to_owned()];
            let published = Published {
                title: "T",
                authors: &authors,
                format: "markdown",
                report: "{}",
                epub_bytes: 1,
                pdf_bytes: None,
                changes: None,
            };
            let queue = JobQueue::new(db.clone());
            let mut tx = db.begin().await.expect("begin");
            mark_ready(
                &mut tx,
                &queue,
                None,
                &RevisionId::first(&BookId::unchecked("b")),
                &published,
            )
            .await
            .expect("publish");
            tx.commit().await.expect("commit");
            assert_eq!(authors_of(&db, "b").await, authors, "{}", db.backend());
        }
    }

    #[tokio::test]
    async fn a_status_this_code_does_not_know_is_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        for (db, _) in databases(i64::MAX, dir.path()).await {
            exec(
                &db,
                "INSERT INTO books (id, tenant, file_name, status, created_at, updated_at)
                 VALUES ('b', 't', 'a.md', 'archived', 1, 1)",
            )
            .await;
            let error = get(&db, &BookId::unchecked("b"))
                .await
                .expect_err("an unknown status");
            assert!(
                format!("{error:#}").contains("unknown book status \"archived\""),
                "{error:#}"
            );
        }
    }

    #[tokio::test]
    async fn a_stamp_changes_with_everything_the_detailed_view_shows_and_only_then() {
        let (_dir, db) = crate::test_support::sqlite_database().await;
        run(
            &db,
            "INSERT INTO books (id, tenant, file_name, status, created_at, updated_at)
             VALUES ('b1', 't', 'a.md', 'processing', 1, 1),
                    ('b2', 't', 'b.md', 'processing', 1, 1)",
        )
        .await;
        run(
            &db,
            "INSERT INTO jobs (id, kind, queue, payload, state, run_at, max_attempts, workflow,
                               created_at, progress)
             VALUES (1, 'book.ingest', 'books', '{}', 'running', 0, 3, 'b1', 0, 10),
                    (2, 'book.parse', 'books', '{}', 'waiting', 0, 3, 'b1', 0, NULL),
                    (3, 'book.ingest', 'books', '{}', 'running', 0, 3, 'b2', 0, 10),
                    (4, 'webhook.deliver', 'webhooks', '{}', 'available', 0, 3, NULL, 0, NULL)",
        )
        .await;
        run(
            &db,
            "INSERT INTO webhook_deliveries (id, book_id, tenant, event, url, body, job_id, created_at)
             VALUES ('d1', 'b1', 't', 'book.failed', 'https://example.com/', '{}', 4, 1)",
        )
        .await;
        let ids = ["b1", "b2", "nothing"].map(BookId::unchecked);
        let mut last = stamps(&db, &ids).await.expect("stamps");
        assert_eq!(last.len(), 2, "{last:?}");
        assert_eq!(
            stamps(&db, &ids).await.expect("stamps"),
            last,
            "nothing changed"
        );

        let changes: [&'static str; 10] = [
            "UPDATE jobs SET progress = 40 WHERE id = 1",
            "UPDATE jobs SET progress_message = 'chapter 2 of 9' WHERE id = 1",
            "UPDATE jobs SET state = 'completed' WHERE id = 1",
            "UPDATE jobs SET state = 'available' WHERE id = 2",
            "INSERT INTO jobs (kind, queue, payload, state, run_at, max_attempts, workflow, created_at)
             VALUES ('book.render', 'books', '{}', 'waiting', 0, 3, 'b1', 0)",
            "UPDATE jobs SET state = 'running', attempt = 1 WHERE id = 4",
            "UPDATE jobs SET state = 'scheduled', run_at = 5000 WHERE id = 4",
            "UPDATE webhook_deliveries SET delivered_at = 7, response_status = 200",
            "UPDATE books SET status = 'failed', updated_at = 9 WHERE id = 'b1'",
            "DELETE FROM books WHERE id = 'b1'",
        ];
        for change in changes {
            run(&db, change).await;
            let now = stamps(&db, &ids).await.expect("stamps");
            assert_ne!(now.get("b1"), last.get("b1"), "unseen: {change}");
            assert_eq!(now.get("b2"), last.get("b2"), "b2 changed with: {change}");
            last = now;
        }

        // A book that follows its second revision shows that revision's steps, by the
        // workflow id `RevisionId` names.
        let second = RevisionId::of(&BookId::unchecked("b2"), 2).workflow();
        let insert: &'static str = Box::leak(
            format!(
                "INSERT INTO jobs (kind, queue, payload, state, run_at, max_attempts, workflow,
                                   created_at)
                 VALUES ('book.ingest', 'books', '{{}}', 'running', 0, 3, '{second}', 0)"
            )
            .into_boxed_str(),
        );
        for change in ["UPDATE books SET revision = 2 WHERE id = 'b2'", insert] {
            run(&db, change).await;
            let now = stamps(&db, &ids).await.expect("stamps");
            assert_ne!(now.get("b2"), last.get("b2"), "unseen: {change}");
            last = now;
        }
    }
}
