//! Which installation the database and the blob store belong to.
//!
//! Both hold the same installation id: a row in the database's `installation` table and a
//! small blob, [`MARKER`]. A process that finds a database and a blob store of different
//! installations refuses to start (a [`ConfigError`], exit code 2), so that a new, emptied or
//! wrong database is never paired with the files of another installation's books: the blob
//! sweep would take every one of them for files of a book that does not exist.
//!
//! When the ids cannot be compared (one side has none yet), the two are judged by what they
//! hold:
//! - neither has an id: a fresh pair (no books in the blob store, and none in the database)
//!   or a pre-id installation (books in both, and the database's newest books have files in
//!   the blob store) gets one new id, written to the database first, then the marker. Anything
//!   else (a database with no books, or books none of which are in the blob store, beside a
//!   blob store that holds books) is refused.
//! - the database has an id, the blob store no marker: a process stopped between the two
//!   writes above. The marker is written when the contents agree by the same rule; otherwise
//!   refused.
//! - the blob store has a marker, the database no id: never left by a crash (the database is
//!   written first), so refused, whatever the database holds.
//!
//! `bindery storage adopt --yes` ([`plan_adoption`], [`adopt`]) is the deliberate way out.

use std::collections::HashSet;
use std::fmt;

use anyhow::Context as _;
use futures_util::StreamExt as _;
use object_store::path::Path;
use serde::{Deserialize, Serialize};

use super::{BlobStore, Database};
use crate::config::ConfigError;

/// The blob that names the blob store's installation.
pub const MARKER: &str = "bindery/installation.json";
/// How many of the database's newest books are looked for in the blob store to tell whether
/// the two belong together when neither has an id.
const SAMPLE: i64 = 20;
/// Ids checked against the database at once, when counting books it does not list.
const PAGE: usize = 500;

/// The blob store's side: [`MARKER`]'s content.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Marker {
    pub id: String,
    /// RFC 3339, when the marker was written.
    pub created_at: String,
}

/// A blob store that could not be read (unreachable, or a container that does not exist):
/// nothing can be compared.
#[derive(Debug, thiserror::Error)]
#[error("the blob store did not answer: {0:#}")]
pub struct Unavailable(anyhow::Error);

/// What the database holds, as far as telling installations apart goes.
#[derive(Clone, Debug, Default)]
pub struct DatabaseState {
    pub id: Option<String>,
    pub books: i64,
    pub tokens: i64,
}

impl DatabaseState {
    /// No books and no tokens: a database nobody has used.
    pub fn is_new(&self) -> bool {
        self.books == 0 && self.tokens == 0
    }
}

/// What the blob store holds.
#[derive(Clone, Debug)]
pub struct BlobState {
    pub marker: Option<Marker>,
    /// Anything under `books/`.
    pub has_books: bool,
}

/// Before migrating: a database with no tables yet is new, and a new database beside a blob
/// store that already holds books or a marker is refused before anything is created in it.
pub async fn check_before_migrating(db: &Database, blobs: &BlobStore) -> anyhow::Result<()> {
    if has_schema(db).await? {
        return Ok(());
    }
    let blob = blob_state(blobs).await?;
    if blob.marker.is_none() && !blob.has_books {
        return Ok(());
    }
    // Another process may have migrated and initialised this very database since the first
    // look (two processes starting on a new pair): then it is not new, and `ensure` judges.
    if has_schema(db).await? {
        return Ok(());
    }
    let books = count_books(blobs).await;
    Err(new_database_refused(&blob, books, "has no tables yet").into())
}

/// After migrating: the ids agree (or are recorded now, see the module's rules), or a
/// [`ConfigError`] that says what was found and how to proceed. Returns the installation id.
pub async fn ensure(db: &Database, blobs: &BlobStore) -> anyhow::Result<String> {
    let state = database_state(db).await?;
    let blob = blob_state(blobs).await?;
    match (state.id.clone(), blob.marker.clone()) {
        (Some(id), Some(marker)) if id == marker.id => Ok(id),
        (Some(_), Some(_)) => Err(differ(&state, &blob, blobs).await?.into()),
        (None, Some(marker)) => {
            // A process initialising this pair writes the database before the marker: one
            // that found no row a moment ago may find it now.
            match read_id(db).await? {
                Some(id) if id == marker.id => Ok(id),
                Some(id) => {
                    let state = DatabaseState {
                        id: Some(id),
                        ..state
                    };
                    Err(differ(&state, &blob, blobs).await?.into())
                }
                None => {
                    let books = count_books(blobs).await;
                    Err(if state.is_new() {
                        new_database_refused(&blob, books, "is new (no books, no tokens)")
                    } else {
                        ConfigError::about(
                            "DATABASE_URL",
                            format!(
                                "names a database with {} and {} but no installation id, while \
                                 BLOB_URL holds {} of installation {}: {}",
                                plural(state.books, "book"),
                                plural(state.tokens, "token"),
                                books,
                                marker.id,
                                HOW
                            ),
                        )
                    }
                    .into())
                }
            }
        }
        (Some(id), None) => {
            if let Some(refusal) = contents_disagree(db, &state, &blob, blobs).await? {
                return Err(refusal.into());
            }
            write_marker(blobs, &id, &state).await?;
            tracing::info!(installation.id = %id, "wrote the blob store's installation marker");
            Ok(id)
        }
        (None, None) => {
            if let Some(refusal) = contents_disagree(db, &state, &blob, blobs).await? {
                return Err(refusal.into());
            }
            let id = insert_id(db, &uuid::Uuid::new_v4().to_string(), false).await?;
            write_marker(blobs, &id, &state).await?;
            if state.books > 0 {
                tracing::info!(installation.id = %id, books = state.books, "recorded the installation id of existing books in the database and the blob store");
            } else {
                tracing::info!(installation.id = %id, "new installation");
            }
            Ok(id)
        }
    }
}

/// At start (`serve`, `web`, `worker`, `migrate`): [`check_before_migrating`] when this
/// process migrates, the migrations, then [`ensure`]. A blob store that does not answer cannot
/// be compared: a warning, and the process starts (its `/readyz` names the store); the sweep
/// checks the ids itself ([`verify`]) and deletes nothing unless they are equal.
///
/// While storage is out of reach it tries again, for as long as opening the database does: a
/// process started during a database restart, whose pool opened just before the server went
/// down, waits rather than exits.
pub async fn at_start(db: &Database, blobs: &BlobStore, migrate: bool) -> anyhow::Result<()> {
    super::database::patiently(
        "storage cannot be reached at start",
        super::fault::storage_out_of_reach,
        async || check_at_start(db, blobs, migrate).await,
    )
    .await
}

async fn check_at_start(db: &Database, blobs: &BlobStore, migrate: bool) -> anyhow::Result<()> {
    let checked = async {
        if migrate {
            check_before_migrating(db, blobs).await?;
            db.migrate().await?;
        }
        ensure(db, blobs).await
    }
    .await;
    match checked {
        Ok(id) => {
            tracing::debug!(installation.id = %id, "the database and the blob store belong together");
            Ok(())
        }
        Err(e) if e.downcast_ref::<Unavailable>().is_some() => {
            tracing::warn!(
                error = %format!("{e:#}"),
                "could not check that DATABASE_URL and BLOB_URL belong to one installation; \
                 the next start checks again, and the blob sweep deletes nothing unless both \
                 hold the same installation id"
            );
            if migrate && !has_schema(db).await? {
                db.migrate().await?;
            }
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// Read-only, for the blob sweep before it deletes anything: the id when both sides hold the
/// same one, else why not.
pub async fn verify(db: &Database, blobs: &BlobStore) -> anyhow::Result<Result<String, String>> {
    let id = read_id(db).await?;
    let marker = read_marker(blobs).await?;
    Ok(match (id, marker) {
        (Some(id), Some(marker)) if id == marker.id => Ok(id),
        (Some(id), Some(marker)) => Err(format!(
            "the database belongs to installation {id} but the blob store to installation {}",
            marker.id
        )),
        (None, _) => Err("the database has no installation id".to_owned()),
        (Some(id), None) => Err(format!(
            "the blob store has no installation marker (the database is installation {id})"
        )),
    })
}

/// What `bindery storage adopt` found and would do.
#[derive(Clone, Debug)]
pub struct Adoption {
    pub database: DatabaseState,
    pub marker: Option<Marker>,
    /// Book folders in the blob store.
    pub blob_books: usize,
    /// Of those, books the database does not list: after the adoption the sweep takes them for
    /// files of books that do not exist.
    pub unknown_books: usize,
    /// The id both will hold.
    pub id: String,
}

impl fmt::Display for Adoption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let db = &self.database;
        match &db.id {
            Some(id) => writeln!(f, "database (DATABASE_URL): installation {id}")?,
            None => writeln!(f, "database (DATABASE_URL): no installation id")?,
        }
        writeln!(
            f,
            "  {} and {}",
            plural(db.books, "book"),
            plural(db.tokens, "token")
        )?;
        match &self.marker {
            Some(m) => writeln!(
                f,
                "blob store (BLOB_URL): installation {} (marker written {})",
                m.id, m.created_at
            )?,
            None => writeln!(f, "blob store (BLOB_URL): no installation marker")?,
        }
        writeln!(
            f,
            "  {}, {} of them not in this database",
            plural(self.blob_books as i64, "book"),
            self.unknown_books
        )?;
        match (&db.id, &self.marker) {
            (Some(id), Some(m)) if *id == m.id => {
                writeln!(f, "They already belong together: nothing to do.")?
            }
            (_, Some(m)) => writeln!(
                f,
                "Will: make this database adopt the blob store's installation id {}.",
                m.id
            )?,
            (Some(id), None) => writeln!(
                f,
                "Will: write the database's installation id {id} to the blob store's marker."
            )?,
            (None, None) => writeln!(
                f,
                "Will: start installation {}, in the database and the blob store.",
                self.id
            )?,
        }
        if self.unknown_books > 0 {
            writeln!(
                f,
                "Warning: the files of the {} that this database does not list then count as \
                 files of books that do not exist, and sweep_blobs deletes them (a tenth of the \
                 book folders at most per run). To keep them, restore the database that lists \
                 them instead.",
                plural(self.unknown_books as i64, "book")
            )?;
        }
        Ok(())
    }
}

/// Reads both sides for `bindery storage adopt` (after migrating), changing nothing. `known`
/// says which of a page of the blob store's book folders are books the database lists: the
/// books are a layer above storage, so their caller gives it.
pub async fn plan_adoption(
    db: &Database,
    blobs: &BlobStore,
    known: impl AsyncFn(&[String]) -> anyhow::Result<HashSet<String>>,
) -> anyhow::Result<Adoption> {
    let database = database_state(db).await?;
    let marker = read_marker(blobs).await?;
    let ids = book_ids(blobs).await?;
    let mut unknown_books = 0;
    for page in ids.chunks(PAGE) {
        let known = known(page).await?;
        unknown_books += page.iter().filter(|id| !known.contains(*id)).count();
    }
    let id = marker
        .as_ref()
        .map(|m| m.id.clone())
        .or_else(|| database.id.clone())
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    Ok(Adoption {
        database,
        marker,
        blob_books: ids.len(),
        unknown_books,
        id,
    })
}

/// Does what [`plan_adoption`] said: the database takes `plan.id`, and the blob store's marker
/// is written if it had none.
pub async fn adopt(db: &Database, blobs: &BlobStore, plan: &Adoption) -> anyhow::Result<String> {
    let id = insert_id(db, &plan.id, true).await?;
    if plan.marker.is_none() {
        let marker = Marker {
            id: id.clone(),
            created_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        };
        blobs
            .put(MARKER, serde_json::to_vec_pretty(&marker)?)
            .await?;
    }
    tracing::warn!(
        installation.id = %id,
        previous = plan.database.id.as_deref().unwrap_or("none"),
        unknown_books = plan.unknown_books,
        "the database adopted the blob store's installation (bindery storage adopt)"
    );
    Ok(id)
}

/// What every refusal says to do.
const HOW: &str = "restore the database that belongs to these files (from a backup), or point \
    DATABASE_URL and BLOB_URL at one installation's database and blob store; to pair them \
    anyway, deliberately, run `bindery storage adopt --yes`";

fn plural(n: i64, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

fn of_installation(blob: &BlobState) -> String {
    blob.marker
        .as_ref()
        .map(|m| format!(" of installation {}", m.id))
        .unwrap_or_default()
}

fn new_database_refused(blob: &BlobState, books: Held, database: &str) -> ConfigError {
    let holds = if blob.marker.is_some() && books.0 == Some(0) {
        format!("the marker{} (and no books)", of_installation(blob))
    } else {
        format!("{}{}", books, of_installation(blob))
    };
    ConfigError::about(
        "DATABASE_URL",
        format!("names a database that {database} but BLOB_URL already holds {holds}: {HOW}"),
    )
}

async fn differ(
    state: &DatabaseState,
    blob: &BlobState,
    blobs: &BlobStore,
) -> anyhow::Result<ConfigError> {
    let books = count_books(blobs).await;
    Ok(ConfigError::about(
        "DATABASE_URL",
        format!(
            "names a database of installation {} ({}, {}) but BLOB_URL holds {}{}: {HOW}",
            state.id.as_deref().unwrap_or("?"),
            plural(state.books, "book"),
            plural(state.tokens, "token"),
            books,
            of_installation(blob),
        ),
    ))
}

/// For a pair whose ids cannot be compared: `None` when what they hold agrees (no books on
/// either side, or books on both and the database's newest have files in the blob store).
async fn contents_disagree(
    db: &Database,
    state: &DatabaseState,
    blob: &BlobState,
    blobs: &BlobStore,
) -> anyhow::Result<Option<ConfigError>> {
    let of = state
        .id
        .as_ref()
        .map(|id| format!(" of installation {id}"))
        .unwrap_or_default();
    if !blob.has_books {
        if state.books == 0 {
            return Ok(None);
        }
        return Ok(Some(ConfigError::about(
            "BLOB_URL",
            format!(
                "holds no books and no installation marker, but DATABASE_URL names a database{of} \
                 with {}: point BLOB_URL at the blob store that holds their files; to pair them \
                 anyway, deliberately, run `bindery storage adopt --yes`",
                plural(state.books, "book")
            ),
        )));
    }
    if state.books > 0 && shares_books(db, blobs).await? {
        return Ok(None);
    }
    let books = count_books(blobs).await;
    Ok(Some(if state.is_new() {
        new_database_refused(blob, books, "is new (no books, no tokens)")
    } else if state.books == 0 {
        ConfigError::about(
            "DATABASE_URL",
            format!(
                "names a database{of} with no books ({}) but BLOB_URL already holds {}: {HOW}",
                plural(state.tokens, "token"),
                books
            ),
        )
    } else {
        ConfigError::about(
            "DATABASE_URL",
            format!(
                "names a database{of} with {} but BLOB_URL holds the files of none of its newest \
                 {SAMPLE} (it holds {} in all): {HOW}",
                plural(state.books, "book"),
                books
            ),
        )
    }))
}

/// Whether any of the database's newest books has files in the blob store.
async fn shares_books(db: &Database, blobs: &BlobStore) -> anyhow::Result<bool> {
    let newest: Vec<String> = on_pool!(db, |pool, d| {
        sqlx::query_scalar(sql!(
            d,
            "SELECT id FROM books ORDER BY created_at DESC LIMIT $1"
        ))
        .bind(SAMPLE)
        .fetch_all(pool)
        .await?
    });
    for id in newest {
        let prefix = Path::from(format!("books/{id}"));
        let first = blobs.store().list(Some(&prefix)).next().await;
        match first {
            Some(Ok(_)) => return Ok(true),
            Some(Err(e)) => return Err(Unavailable(e.into()).into()),
            None => {}
        }
    }
    Ok(false)
}

async fn has_schema(db: &Database) -> anyhow::Result<bool> {
    Ok(match db {
        Database::Sqlite(pool) => sqlx::query_scalar(
            "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'books'",
        )
        .fetch_one(pool)
        .await
        .context("reading the database's tables")?,
        Database::Postgres(pool) => sqlx::query_scalar("SELECT to_regclass('books') IS NOT NULL")
            .fetch_one(pool)
            .await
            .context("reading the database's tables")?,
    })
}

async fn read_id(db: &Database) -> anyhow::Result<Option<String>> {
    let id = on_pool!(db, |pool, d| {
        sqlx::query_scalar(sql!(d, "SELECT id FROM installation WHERE singleton = 1"))
            .fetch_optional(pool)
            .await
    })
    .context("reading the database's installation id")?;
    Ok(id)
}

pub async fn database_state(db: &Database) -> anyhow::Result<DatabaseState> {
    let id = read_id(db).await?;
    let (books, tokens): (i64, i64) = on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(
            d,
            "SELECT (SELECT count(*) FROM books), (SELECT count(*) FROM tokens)"
        ))
        .fetch_one(pool)
        .await
    })
    .context("counting the database's books and tokens")?;
    Ok(DatabaseState { id, books, tokens })
}

/// Records `id` unless the database has one (`replace`: replaces it); returns the id the
/// database holds afterwards.
async fn insert_id(db: &Database, id: &str, replace: bool) -> anyhow::Result<String> {
    on_pool!(db, |pool, d| {
        let statement = if replace {
            sql!(
                d,
                "INSERT INTO installation (singleton, id, created_at) VALUES (1, $1, {now})
                 ON CONFLICT (singleton) DO UPDATE SET id = excluded.id"
            )
        } else {
            sql!(
                d,
                "INSERT INTO installation (singleton, id, created_at) VALUES (1, $1, {now})
                 ON CONFLICT (singleton) DO NOTHING"
            )
        };
        sqlx::query(statement)
            .bind(id)
            .execute(pool)
            .await
            .map(drop)
    })
    .context("recording the installation id in the database")?;
    read_id(db)
        .await?
        .context("the installation id just recorded is missing")
}

/// Writes the marker unless one exists; one that does must name `id`.
async fn write_marker(blobs: &BlobStore, id: &str, state: &DatabaseState) -> anyhow::Result<()> {
    let marker = Marker {
        id: id.to_owned(),
        created_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
    };
    if blobs
        .put_if_absent(MARKER, serde_json::to_vec_pretty(&marker)?)
        .await
        .map_err(Unavailable)?
    {
        return Ok(());
    }
    let found = read_marker(blobs).await?;
    match found {
        Some(found) if found.id == id => Ok(()),
        _ => {
            let blob = BlobState {
                marker: found,
                has_books: true,
            };
            let state = DatabaseState {
                id: Some(id.to_owned()),
                ..state.clone()
            };
            Err(differ(&state, &blob, blobs).await?.into())
        }
    }
}

pub async fn read_marker(blobs: &BlobStore) -> anyhow::Result<Option<Marker>> {
    let Some(bytes) = blobs.get_opt(MARKER).await.map_err(Unavailable)? else {
        return Ok(None);
    };
    let marker = serde_json::from_slice(&bytes).with_context(|| {
        format!(
            "BLOB_URL's installation marker {MARKER} is not what Bindery writes; restore it, or \
             remove it and run `bindery storage adopt --yes`"
        )
    })?;
    Ok(Some(marker))
}

async fn blob_state(blobs: &BlobStore) -> anyhow::Result<BlobState> {
    let marker = read_marker(blobs).await?;
    let first = blobs.store().list(Some(&Path::from("books"))).next().await;
    let has_books = match first {
        Some(Ok(_)) => true,
        Some(Err(e)) => return Err(Unavailable(e.into()).into()),
        None => false,
    };
    Ok(BlobState { marker, has_books })
}

/// The book folders (`books/{uuid}/`) in the blob store.
pub async fn book_ids(blobs: &BlobStore) -> anyhow::Result<Vec<String>> {
    let listing = blobs
        .store()
        .list_with_delimiter(Some(&Path::from("books")))
        .await
        .map_err(|e| Unavailable(e.into()))?;
    Ok(listing
        .common_prefixes
        .iter()
        .filter_map(|p| p.filename().map(str::to_owned))
        .filter(|id| uuid::Uuid::parse_str(id).is_ok())
        .collect::<HashSet<_>>()
        .into_iter()
        .collect())
}

/// How many books the blob store holds, for a refusal's message: a listing that fails makes
/// the message vaguer, never the refusal go away.
struct Held(Option<i64>);

impl fmt::Display for Held {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(n) => f.write_str(&plural(n, "book")),
            None => f.write_str("books (how many could not be listed)"),
        }
    }
}

async fn count_books(blobs: &BlobStore) -> Held {
    match book_ids(blobs).await {
        Ok(ids) => Held(Some(ids.len() as i64)),
        Err(e) => {
            tracing::warn!(error = %format!("{e:#}"), "could not count the books in the blob store");
            Held(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_read_as_words() {
        assert_eq!(plural(1, "book"), "1 book");
        assert_eq!(plural(12, "book"), "12 books");
        assert_eq!(plural(0, "token"), "0 tokens");
    }
}
