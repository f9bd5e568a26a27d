//! The house styles kept: each one's file and list of files in `house_styles`, the files'
//! bytes as blobs named by their content ([`file_key`]), so a style replaced or removed never
//! changes a file another style or a book being made still reads.
//!
//! A tenant's books may use its own house styles and those an admin added for every tenant
//! (kept under the tenant `''`); where both have a name, the tenant's own is the one.

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::books::Tenant;
use crate::convert::{HouseStyle, StyleFile};
use crate::storage::{BlobStore, Database};
use crate::style::house::{House, Kind};
use crate::style::{Style, StyleName};

/// The tenant an installation-wide style is kept under.
const EVERY_TENANT: &str = "";

/// Whose a house style is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    /// One tenant's, for its own books.
    Tenant(Tenant),
    /// An admin's, for every tenant's books.
    Everyone,
}

impl Owner {
    fn column(&self) -> &str {
        match self {
            Owner::Tenant(tenant) => tenant.as_str(),
            Owner::Everyone => EVERY_TENANT,
        }
    }

    fn of_column(column: &str) -> Owner {
        match Tenant::parse(column) {
            Some(tenant) if column != EVERY_TENANT => Owner::Tenant(tenant),
            _ => Owner::Everyone,
        }
    }
}

/// A file of a kept style, as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    pub name: String,
    pub kind: Kind,
    pub sha256: String,
    pub bytes: u64,
}

/// A house style as kept.
#[derive(Debug, Clone)]
pub struct Kept {
    pub owner: Owner,
    pub name: StyleName,
    pub title: String,
    pub source: String,
    pub files: Vec<FileEntry>,
    pub created_at: i64,
    pub updated_at: i64,
}

impl Kept {
    /// The style its file says; `None` for a file this version of Bindery no longer reads
    /// (kept, and listed as such, until its owner replaces it).
    pub fn style(&self) -> Option<Style> {
        Style::parse(&self.source).ok()
    }

    /// Its version: a digest of its file and its files, which a preview of it is kept under
    /// (`style::preview::Look`).
    pub fn version(&self) -> String {
        use sha2::Digest;
        let mut hash = sha2::Sha256::new();
        hash.update(self.source.as_bytes());
        for file in &self.files {
            hash.update([0]);
            hash.update(file.name.as_bytes());
            hash.update([0]);
            hash.update(file.sha256.as_bytes());
        }
        hex::encode(&hash.finalize()[..4])
    }

    /// The look a preview of it shows.
    pub fn look(&self) -> crate::style::preview::Look {
        crate::style::preview::Look {
            style: self.name.clone(),
            version: Some(self.version()),
        }
    }

    /// As a book's options name it: the style and where its files are.
    pub fn house_style(&self) -> Option<HouseStyle> {
        Some(HouseStyle {
            name: self.name.clone(),
            style: self.style()?,
            files: self
                .files
                .iter()
                .map(|f| StyleFile {
                    name: f.name.clone(),
                    blob: Some(file_key(&f.sha256)),
                })
                .collect(),
        })
    }
}

/// Where a style's file is kept: by its content's SHA-256.
pub fn file_key(sha256: &str) -> String {
    format!("styles/files/{sha256}")
}

/// Why a style could not be added.
#[derive(Debug, thiserror::Error)]
pub enum AddError {
    #[error("there is a house style called {0} already")]
    Exists(StyleName),
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

/// Keeps `house` for `owner`: its files first (by content, so twice is once), then its row.
/// A style of that name is replaced only when `replace` says so.
pub async fn add(
    db: &Database,
    blobs: &BlobStore,
    owner: &Owner,
    house: &House,
    replace: bool,
) -> Result<Kept, AddError> {
    let mut files = Vec::with_capacity(house.files.len());
    for file in &house.files {
        let sha256 = file.sha256();
        blobs
            .put_if_absent(&file_key(&sha256), file.bytes.clone())
            .await?;
        files.push(FileEntry {
            name: file.name.clone(),
            kind: file.kind,
            sha256,
            bytes: file.bytes.len() as u64,
        });
    }
    let files_json = serde_json::to_string(&files).map_err(anyhow::Error::from)?;
    let (tenant, name) = (owner.column(), house.name.as_str());
    let title = house.style.title.as_str();
    let written: u64 = on_pool!(db, |pool, d| {
        let statement = if replace {
            sql!(
                d,
                "INSERT INTO house_styles (tenant, name, title, source, files, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, {now}, {now})
                 ON CONFLICT (tenant, name) DO UPDATE SET title = excluded.title,
                     source = excluded.source, files = excluded.files, updated_at = {now}"
            )
        } else {
            sql!(
                d,
                "INSERT INTO house_styles (tenant, name, title, source, files, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, {now}, {now})
                 ON CONFLICT (tenant, name) DO NOTHING"
            )
        };
        sqlx::query(statement)
            .bind(tenant)
            .bind(name)
            .bind(title)
            .bind(&house.source)
            .bind(&files_json)
            .execute(pool)
            .await
            .map_err(anyhow::Error::from)?
            .rows_affected()
    });
    if written == 0 {
        return Err(AddError::Exists(house.name.clone()));
    }
    let kept = get_of(db, owner, &house.name)
        .await?
        .ok_or_else(|| anyhow::anyhow!("the house style {name} was written and is not there"))?;
    tracing::info!(style = %house.name, tenant, files = files.len(), replace, "house style kept");
    Ok(kept)
}

type Row = (String, String, String, String, String, i64, i64);

const COLUMNS: &str = "tenant, name, title, source, files, created_at, updated_at";

fn kept(row: Row) -> Option<Kept> {
    let (tenant, name, title, source, files, created_at, updated_at) = row;
    Some(Kept {
        owner: Owner::of_column(&tenant),
        name: StyleName::parse(&name).ok()?,
        title,
        source,
        files: serde_json::from_str(&files).ok()?,
        created_at,
        updated_at,
    })
}

/// The house styles `tenant`'s books may use, by name: its own, and every tenant's where it
/// has none of that name.
pub async fn visible(db: &Database, tenant: &Tenant) -> anyhow::Result<Vec<Kept>> {
    let rows: Vec<Row> = on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(
            d,
            &format!(
                "SELECT {COLUMNS} FROM house_styles WHERE tenant = $1 OR tenant = $2
                 ORDER BY name, tenant DESC"
            )
        ))
        .bind(tenant.as_str())
        .bind(EVERY_TENANT)
        .fetch_all(pool)
        .await?
    });
    let mut styles: Vec<Kept> = Vec::with_capacity(rows.len());
    // Ordered by name, the tenant's own (a non-empty tenant) before every tenant's.
    for style in rows.into_iter().filter_map(kept) {
        if styles.last().is_none_or(|last| last.name != style.name) {
            styles.push(style);
        }
    }
    Ok(styles)
}

/// The house style called `name` that `tenant`'s books may use.
pub async fn find(
    db: &Database,
    tenant: &Tenant,
    name: &StyleName,
) -> anyhow::Result<Option<Kept>> {
    Ok(visible(db, tenant)
        .await?
        .into_iter()
        .find(|style| &style.name == name))
}

/// `owner`'s own style called `name`.
pub async fn get_of(
    db: &Database,
    owner: &Owner,
    name: &StyleName,
) -> anyhow::Result<Option<Kept>> {
    let row: Option<Row> = on_pool!(db, |pool, d| {
        sqlx::query_as(sql!(
            d,
            &format!("SELECT {COLUMNS} FROM house_styles WHERE tenant = $1 AND name = $2")
        ))
        .bind(owner.column())
        .bind(name.as_str())
        .fetch_optional(pool)
        .await?
    });
    Ok(row.and_then(kept))
}

/// Removes `owner`'s style called `name`; whether there was one. Its files stay: books made
/// with it carry copies, and another style may share them.
pub async fn remove(db: &Database, owner: &Owner, name: &StyleName) -> anyhow::Result<bool> {
    let removed: u64 = on_pool!(db, |pool, d| {
        sqlx::query(sql!(
            d,
            "DELETE FROM house_styles WHERE tenant = $1 AND name = $2"
        ))
        .bind(owner.column())
        .bind(name.as_str())
        .execute(pool)
        .await?
        .rows_affected()
    });
    if removed > 0 {
        tracing::info!(style = %name, tenant = owner.column(), "house style removed");
    }
    Ok(removed > 0)
}

/// The bytes of `style`'s files, by name.
pub async fn files(blobs: &BlobStore, style: &HouseStyle) -> anyhow::Result<Vec<(String, Bytes)>> {
    let mut out = Vec::with_capacity(style.files.len());
    for file in &style.files {
        let Some(blob) = &file.blob else {
            anyhow::bail!(
                "the house style {}'s file {} is in no blob",
                style.name,
                file.name
            );
        };
        out.push((file.name.clone(), blobs.get(blob).await?));
    }
    Ok(out)
}

/// The names of the house styles `tenant`'s books may use.
pub async fn names(db: &Database, tenant: &Tenant) -> anyhow::Result<Vec<StyleName>> {
    Ok(visible(db, tenant)
        .await?
        .into_iter()
        .map(|style| style.name)
        .collect())
}

/// The style `asked` names for `tenant`'s books: a built-in one (`None`), or one of the
/// house styles it may use. `Err` says why not, naming every style there is.
pub async fn choose(
    db: &Database,
    tenant: &Tenant,
    asked: &str,
) -> anyhow::Result<Result<(StyleName, Option<Kept>), String>> {
    if let Ok((name, _)) = crate::style::builtin::choose(asked) {
        return Ok(Ok((name, None)));
    }
    let houses = visible(db, tenant).await?;
    if let Ok(name) = StyleName::parse(asked)
        && let Some(kept) = houses.iter().find(|h| h.name == name)
    {
        return Ok(Ok((name, Some(kept.clone()))));
    }
    let names: Vec<String> = crate::style::builtin::names()
        .chain(houses.into_iter().map(|h| h.name))
        .map(String::from)
        .collect();
    Ok(Err(format!(
        "{:?} is not a style here; the styles are {}.",
        asked.chars().take(40).collect::<String>(),
        names.join(", ")
    )))
}

/// A style a tenant's books may use, as pickers and previews list it.
#[derive(Debug, Clone)]
pub struct Offered {
    pub name: StyleName,
    pub title: String,
    pub description: String,
    /// What its preview is kept under.
    pub look: crate::style::preview::Look,
    /// Whose it is, for a house style; `None` for a built-in one.
    pub owner: Option<Owner>,
}

/// Every style `tenant`'s books may use: the built-in ones in their order, then its house
/// styles by name (those whose file no longer reads are left out).
pub async fn offered(db: &Database, tenant: &Tenant) -> anyhow::Result<Vec<Offered>> {
    let mut all: Vec<Offered> = crate::style::builtin::names()
        .filter_map(|name| {
            let style = crate::style::builtin::get(name.as_str())?;
            Some(Offered {
                look: crate::style::preview::Look {
                    style: name.clone(),
                    version: None,
                },
                name,
                title: style.title,
                description: style.description,
                owner: None,
            })
        })
        .collect();
    for kept in visible(db, tenant).await? {
        let Some(style) = kept.style() else { continue };
        all.push(Offered {
            look: kept.look(),
            name: kept.name,
            title: style.title,
            description: style.description,
            owner: Some(kept.owner),
        });
    }
    Ok(all)
}
