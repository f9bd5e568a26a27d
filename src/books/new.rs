//! A new book as an upload describes it, parsed before anything of it is kept: what the person
//! gave (the metadata, where its webhooks go) is checked here, so that a value that cannot work
//! is refused naming its field, rather than becoming a book that fails.

use std::collections::BTreeMap;

use super::{BookId, NewBook, StoredOptions, Tenant};
use crate::convert::Options;
use crate::document::Metadata;
use crate::ebook::metadata::{self, MetadataInputs};
use crate::manuscript::{Format, InputError};
use crate::style::StyleName;
use crate::webhooks::CallbackUrl;

/// What an upload said of its book, its files already stored under `id`.
#[derive(Debug, Clone)]
pub struct Described {
    pub id: BookId,
    pub tenant: Tenant,
    pub file_name: String,
    pub cover_name: Option<String>,
    /// The metadata fields, each under its key's name.
    pub metadata: BTreeMap<String, String>,
    pub format: Option<Format>,
    /// As sent.
    pub callback_url: Option<String>,
    pub idempotency_key: Option<String>,
    /// The house styles the tenant's books may name, besides the built-in ones.
    pub styles: Vec<StyleName>,
}

/// Why an upload cannot be a book.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// A metadata value that cannot work (`field`, and why, in words for the person).
    Metadata { field: String, message: String },
    /// Something else the metadata's reading refused (`code` is the API's).
    Input { code: &'static str, message: String },
    /// The callback URL: why, in words for the person.
    CallbackUrl(String),
}

impl NewBook {
    /// The book `described` is, or why it cannot be one. `allow_private`: whether a callback
    /// URL may be a private address (`WEBHOOK_ALLOW_PRIVATE`).
    pub fn parse(described: Described, allow_private: bool) -> Result<NewBook, Refused> {
        check_metadata(&described.metadata, &described.styles)?;
        let callback_url = described
            .callback_url
            .as_deref()
            .map(|url| {
                CallbackUrl::parse(url, allow_private)
                    .map_err(|e| Refused::CallbackUrl(e.to_string()))
            })
            .transpose()?;
        Ok(NewBook {
            id: described.id,
            tenant: described.tenant,
            file_name: described.file_name,
            options: Options {
                metadata: described.metadata,
                file_name: None,
                format: described.format,
                modified: None,
                identifier: None,
                revision: None,
                house_styles: Vec::new(),
            },
            cover_name: described.cover_name,
            idempotency_key: described.idempotency_key,
            callback_url,
        })
    }
}

/// What a new revision's upload said, over what the book's current revision was given
/// (`current`): a metadata field it does not give carries over, and so do the cover's name
/// (when no new cover came; the caller copies the file) and the book's identifier. The format
/// and the time are the new upload's own.
pub fn revision_options(
    current: &StoredOptions,
    metadata: BTreeMap<String, String>,
    format: Option<Format>,
    cover_name: Option<String>,
    styles: &[StyleName],
) -> Result<StoredOptions, Refused> {
    let mut merged = current.convert.metadata.clone();
    merged.extend(metadata);
    check_metadata(&merged, styles)?;
    Ok(StoredOptions {
        convert: Options {
            metadata: merged,
            file_name: None,
            format,
            modified: None,
            identifier: current.convert.identifier.clone(),
            revision: None,
            house_styles: Vec::new(),
        },
        cover_name: cover_name.or_else(|| current.cover_name.clone()),
    })
}

/// The person's metadata, resolved as it would be against a manuscript that says nothing: the
/// same rules, and the same words, as when the book is made. `styles`: the house styles the
/// book may name.
fn check_metadata(values: &BTreeMap<String, String>, styles: &[StyleName]) -> Result<(), Refused> {
    let inputs = MetadataInputs {
        overrides: values.clone(),
        styles: styles.to_vec(),
        ..MetadataInputs::default()
    };
    let Err(e) = metadata::resolve(&Metadata::default(), &inputs, &mut Vec::new()) else {
        return Ok(());
    };
    Err(match &e {
        InputError::Metadata { key, .. } => Refused::Metadata {
            field: key.clone(),
            message: e.to_string(),
        },
        _ => Refused::Input {
            code: e.code(),
            message: e.to_string(),
        },
    })
}
