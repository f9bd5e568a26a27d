//! What a catalog says about one book: fixed when the book is published, from its final
//! metadata, and stored beside the book (`keys::catalog_entry`), where the catalog's
//! refresh reads it. Part of the book, so that publishing writes it without knowing catalogs.

use serde::{Deserialize, Serialize};

use crate::ebook::Book;

/// What a catalog says about one book. Fixed when the book is published, from its final
/// metadata, and stored under `keys::catalog_entry`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = CatalogEntry)]
pub struct Entry {
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subtitle: Option<String>,
    pub authors: Vec<String>,
    /// BCP 47.
    pub language: String,
    /// The EPUB's own identifier (`urn:isbn:…` or `urn:uuid:…`).
    pub identifier: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publisher: Option<String>,
    /// W3CDTF, as the manuscript or the upload gave it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issued: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subjects: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series_number: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rights: Option<String>,
    /// The cover, as the web reader serves it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cover: Option<Cover>,
    /// Whether the book has a print edition (its PDF and print cover).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub print: bool,
}

/// A book's cover image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = CatalogCover)]
pub struct Cover {
    /// Its file name at the root of the web reader (`cover.jpg`, `cover.svg`).
    pub file: String,
    pub media_type: String,
}

impl Entry {
    /// The entry of `book`, which has a print edition when `print` says so.
    pub fn of(book: &Book, print: bool) -> Self {
        let m = &book.metadata;
        Entry {
            title: m.title.clone(),
            subtitle: m.subtitle.clone(),
            authors: m.authors.clone(),
            language: m.language.clone(),
            identifier: m.identifier.clone(),
            description: m.description.clone(),
            publisher: m.publisher.clone(),
            issued: m.date.clone(),
            subjects: m.subjects.clone(),
            series: m.series.clone(),
            series_number: m.series_number.clone(),
            rights: m.rights.clone(),
            cover: book.cover.as_ref().map(|c| Cover {
                file: c.file_name.clone(),
                media_type: c.media_type.clone(),
            }),
            print,
        }
    }
}
