//! Advance-reader links: what an author makes on a ready book for one named reader, and what the
//! reader's visits do to it. A link offers some of the book's formats (the web reader, the
//! EPUB, the PDF), until a date and up to a number of downloads; it can be revoked at once.
//! Its secret is shown once, when it is made; only its SHA-256 is kept, as for tokens. Its id
//! (a UUID) is the identifier stamped into every copy it gives (`urn:uuid:ID`).
//!
//! A link names one book of one tenant and nothing else: its visitor reaches that book's files
//! through it and no other.

use std::time::Duration;

use anyhow::Context as _;
use sqlx::FromRow;

use crate::storage::Database;

const PREFIX: &str = "arc_";
/// Longest a link may last.
pub const MAX_LIFETIME: Duration = Duration::from_secs(365 * 24 * 3600);
/// Most downloads a link may allow.
pub const MAX_DOWNLOADS: i64 = 1000;
/// Longest reader's name, as the stamp allows.
pub const MAX_READER_CHARS: usize = 200;

/// A format a link may offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Reader,
    Epub,
    Pdf,
}

impl Format {
    pub const ALL: [Format; 3] = [Format::Reader, Format::Epub, Format::Pdf];

    pub fn as_str(self) -> &'static str {
        match self {
            Format::Reader => "reader",
            Format::Epub => "epub",
            Format::Pdf => "pdf",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Format::Reader => "Read online",
            Format::Epub => "EPUB",
            Format::Pdf => "PDF",
        }
    }

    fn parse(text: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.as_str() == text)
    }
}

/// A link as stored. Times are unix milliseconds.
#[derive(Debug, Clone, FromRow)]
pub struct Link {
    pub id: String,
    pub tenant: String,
    pub book_id: String,
    pub reader: String,
    formats: String,
    pub expires_at: i64,
    pub max_downloads: i64,
    pub downloads: i64,
    pub opens: i64,
    pub created_at: i64,
    pub revoked_at: Option<i64>,
}

macro_rules! link_columns {
    () => {
        "id, tenant, book_id, reader, formats, expires_at, max_downloads, downloads, opens, created_at, revoked_at"
    };
}

/// Why a link gives nothing now, as its visitor is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("This link is not known here: check that the whole link was copied.")]
    Unknown,
    #[error("This link was revoked by the author. Ask them for a new one if you still need it.")]
    Revoked,
    #[error("This link has expired. Ask the author for a new one if you still need it.")]
    Expired,
    #[error(
        "This link has been used for as many downloads as it allows. Ask the author for a new one if you need another copy."
    )]
    DownloadsUsed,
    #[error("This link does not offer that format.")]
    NotOffered,
}

impl Refusal {
    pub fn code(self) -> &'static str {
        match self {
            Refusal::Unknown => "link_unknown",
            Refusal::Revoked => "link_revoked",
            Refusal::Expired => "link_expired",
            Refusal::DownloadsUsed => "link_downloads_used",
            Refusal::NotOffered => "link_format_not_offered",
        }
    }
}

impl Link {
    /// The formats it offers.
    pub fn formats(&self) -> Vec<Format> {
        self.formats.split(',').filter_map(Format::parse).collect()
    }

    /// The identifier stamped into its copies.
    pub fn identifier(&self) -> String {
        format!("urn:uuid:{}", self.id)
    }

    /// Whether it opens at `now`, and if not why.
    pub fn open(&self, now: i64) -> Result<(), Refusal> {
        if self.revoked_at.is_some() {
            Err(Refusal::Revoked)
        } else if self.expires_at <= now {
            Err(Refusal::Expired)
        } else {
            Ok(())
        }
    }
}

/// What makes a new link.
#[derive(Debug, Clone)]
pub struct NewLink {
    pub reader: String,
    pub formats: Vec<Format>,
    pub lifetime: Duration,
    pub max_downloads: i64,
}

/// Why a link could not be made.
#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    #[error(
        "Enter the reader's name (up to {MAX_READER_CHARS} characters): it is printed in their copies."
    )]
    Reader,
    #[error("Offer at least one format: the web reader, the EPUB or the PDF.")]
    Formats,
    #[error("Choose how long the link lasts: from a day to a year.")]
    Lifetime,
    #[error("Choose how many downloads it allows: 1 to {MAX_DOWNLOADS}.")]
    Downloads,
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

/// Makes a link to `book` of `tenant`; returns it and its secret, never shown again. `by` says
/// who made it (an account id, or `token:NAME`).
pub async fn create(
    db: &Database,
    tenant: &str,
    book: &str,
    by: &str,
    new: &NewLink,
) -> Result<(Link, String), CreateError> {
    let reader = new.reader.split_whitespace().collect::<Vec<_>>().join(" ");
    if reader.is_empty()
        || reader.chars().count() > MAX_READER_CHARS
        || reader.chars().any(char::is_control)
    {
        return Err(CreateError::Reader);
    }
    if new.formats.is_empty() {
        return Err(CreateError::Formats);
    }
    if new.lifetime < Duration::from_secs(24 * 3600) || new.lifetime > MAX_LIFETIME {
        return Err(CreateError::Lifetime);
    }
    if !(1..=MAX_DOWNLOADS).contains(&new.max_downloads) {
        return Err(CreateError::Downloads);
    }
    let secret = crate::tokens::new_secret(PREFIX);
    let id = uuid::Uuid::new_v4().to_string();
    let formats: Vec<&str> = Format::ALL
        .into_iter()
        .filter(|f| new.formats.contains(f))
        .map(Format::as_str)
        .collect();
    let lifetime = i64::try_from(new.lifetime.as_millis()).unwrap_or(i64::MAX);
    on_pool!(db, |pool, d| {
        sqlx::query(sql!(
            d,
            "INSERT INTO reader_links
                (id, hash, tenant, book_id, reader, formats, expires_at, max_downloads,
                 created_by, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, {now} + $7, $8, $9, {now})"
        ))
        .bind(&id)
        .bind(crate::tokens::hash(&secret))
        .bind(tenant)
        .bind(book)
        .bind(&reader)
        .bind(formats.join(","))
        .bind(lifetime)
        .bind(new.max_downloads)
        .bind(by)
        .execute(pool)
        .await
        .context("storing an advance-reader link")?;
    });
    let link = by_id(db, tenant, &id)
        .await?
        .context("a link vanished once made")?;
    Ok((link, secret))
}

/// The link `id` of `tenant`.
pub async fn by_id(db: &Database, tenant: &str, id: &str) -> anyhow::Result<Option<Link>> {
    Ok(on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(
            d,
            concat!(
                "SELECT ",
                link_columns!(),
                " FROM reader_links WHERE id = $1 AND tenant = $2"
            )
        ))
        .bind(id)
        .bind(tenant)
        .fetch_optional(pool)
        .await?
    }))
}

/// The links of one book, newest first.
pub async fn of_book(db: &Database, tenant: &str, book: &str) -> anyhow::Result<Vec<Link>> {
    Ok(on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(
            d,
            concat!(
                "SELECT ",
                link_columns!(),
                " FROM reader_links WHERE tenant = $1 AND book_id = $2
                 ORDER BY created_at DESC, id"
            )
        ))
        .bind(tenant)
        .bind(book)
        .fetch_all(pool)
        .await?
    }))
}

/// The link a secret names if it opens now, counting the visit; else why not.
pub async fn visit(db: &Database, secret: &str) -> anyhow::Result<Result<Link, Refusal>> {
    let Some((link, now)) = by_secret(db, secret).await? else {
        return Ok(Err(Refusal::Unknown));
    };
    if let Err(refusal) = link.open(now) {
        return Ok(Err(refusal));
    }
    on_pool!(db, |pool, d| {
        sqlx::query(sql!(
            d,
            "UPDATE reader_links SET opens = opens + 1 WHERE id = $1"
        ))
        .bind(&link.id)
        .execute(pool)
        .await?;
    });
    Ok(Ok(link))
}

/// The link a secret names if it opens now and offers `format` (no visit counted); else why not.
pub async fn usable(
    db: &Database,
    secret: &str,
    format: Format,
) -> anyhow::Result<Result<Link, Refusal>> {
    let Some((link, now)) = by_secret(db, secret).await? else {
        return Ok(Err(Refusal::Unknown));
    };
    if let Err(refusal) = link.open(now) {
        return Ok(Err(refusal));
    }
    if !link.formats().contains(&format) {
        return Ok(Err(Refusal::NotOffered));
    }
    Ok(Ok(link))
}

/// Counts a download against a link, if it has one left (one statement, so two at once cannot
/// both take the last); else why not.
pub async fn download(db: &Database, link: &Link) -> anyhow::Result<Result<(), Refusal>> {
    let counted = on_pool!(db, |pool, d| {
        sqlx::query(sql!(
            d,
            "UPDATE reader_links SET downloads = downloads + 1
             WHERE id = $1 AND revoked_at IS NULL AND expires_at > {now}
               AND downloads < max_downloads"
        ))
        .bind(&link.id)
        .execute(pool)
        .await?
        .rows_affected()
    });
    if counted == 1 {
        return Ok(Ok(()));
    }
    let Some(now_link) = by_id(db, &link.tenant, &link.id).await? else {
        return Ok(Err(Refusal::Unknown));
    };
    let now = chrono::Utc::now().timestamp_millis();
    Ok(Err(now_link
        .open(now)
        .err()
        .unwrap_or(Refusal::DownloadsUsed)))
}

/// Revokes link `id` of `tenant`'s book `book`: it stops working at once. Returns it, or `None`
/// if there is no such link there.
pub async fn revoke(
    db: &Database,
    tenant: &str,
    book: &str,
    id: &str,
) -> anyhow::Result<Option<Link>> {
    let changed = on_pool!(db, |pool, d| {
        sqlx::query(sql!(
            d,
            "UPDATE reader_links SET revoked_at = COALESCE(revoked_at, {now})
             WHERE id = $1 AND tenant = $2 AND book_id = $3"
        ))
        .bind(id)
        .bind(tenant)
        .bind(book)
        .execute(pool)
        .await?
        .rows_affected()
    });
    if changed == 0 {
        return Ok(None);
    }
    by_id(db, tenant, id).await
}

async fn by_secret(db: &Database, secret: &str) -> anyhow::Result<Option<(Link, i64)>> {
    if !well_formed(secret) {
        return Ok(None);
    }
    #[derive(FromRow)]
    struct Row {
        #[sqlx(flatten)]
        link: Link,
        now: i64,
    }
    let found: Option<Row> = on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(
            d,
            concat!(
                "SELECT ",
                link_columns!(),
                ", {now} AS now FROM reader_links WHERE hash = $1"
            )
        ))
        .bind(crate::tokens::hash(secret))
        .fetch_optional(pool)
        .await?
    });
    Ok(found.map(|row| (row.link, row.now)))
}

fn well_formed(secret: &str) -> bool {
    crate::tokens::secret_shaped(secret, PREFIX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(expires_at: i64, revoked: bool) -> Link {
        Link {
            id: "0b5e".into(),
            tenant: "press".into(),
            book_id: "b".into(),
            reader: "Jane Roe".into(),
            formats: "reader,pdf".into(),
            expires_at,
            max_downloads: 3,
            downloads: 0,
            opens: 0,
            created_at: 0,
            revoked_at: revoked.then_some(1),
        }
    }

    #[test]
    fn a_link_says_why_it_does_not_open_and_what_it_offers() {
        assert_eq!(link(100, false).open(50), Ok(()));
        assert_eq!(link(100, false).open(100), Err(Refusal::Expired));
        assert_eq!(link(10, true).open(50), Err(Refusal::Revoked));
        assert_eq!(link(100, false).formats(), [Format::Reader, Format::Pdf]);
        assert_eq!(link(100, false).identifier(), "urn:uuid:0b5e");
        assert!(!well_formed("arc_00"));
        assert!(well_formed(&format!("arc_{}", "ab".repeat(32))));
    }
}
