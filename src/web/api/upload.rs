//! Reading a multipart upload: the manuscript and cover are streamed straight into the blob
//! store (memory stays flat at any size) and cut off, with 413, the moment they pass the limit;
//! the other fields are small metadata values.

use std::collections::{BTreeMap, BTreeSet};

use actix_multipart::{Field, Multipart};
use actix_web::http::StatusCode;
use futures_util::StreamExt;
use object_store::path::Path;
use object_store::{ObjectStoreExt, WriteMultipart};
use utoipa::ToSchema;

use crate::books::{BookId, keys};
use crate::ebook::metadata::KEYS;
use crate::manuscript::Format;
use crate::storage::BlobStore;
use crate::web::error::ApiError;

/// Largest metadata value accepted (a description can be long; a field is not a file).
const MAX_FIELD_BYTES: usize = 64 * 1024;
/// Parts of the streamed upload: small enough to keep memory flat, large enough for few
/// round trips to a remote store.
const CHUNK_BYTES: usize = 2 * 1024 * 1024;

/// Metadata fields that replace one of Bindery's own words (`labels.contents`); the
/// metadata's resolution refuses a label it does not know.
const LABEL_PREFIX: &str = "labels.";

/// Spellings `read` also takes for metadata keys, besides `KEYS`.
const KEY_ALIASES: &[&str] = &["authors", "lang", "series_index"];

// The form `read` takes, as the OpenAPI document describes it (never built: `read` parses the
// stream itself). A field `read` learns to take needs its property here too; the unit test
// below keeps the metadata keys in step with `KEYS`.
/// An upload: the manuscript, an optional cover, and metadata fields, which override what
/// the manuscript says. Besides the fields below, `labels.KEY` (`labels.contents`,
/// `labels.notes`…) replaces one of the words Bindery writes into the book in its language;
/// an unknown KEY is refused with `invalid_metadata`.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct UploadForm {
    /// The manuscript: Markdown, DOCX or plain text (in any common encoding). Its format is
    /// read from its content, and it must be what its file name says: one that is not (a
    /// `.docx` that is plain text) is read as what it is with a `format_mismatch` warning in
    /// the report, or fails with the error `format_mismatch` when it cannot be read at all.
    #[schema(value_type = String, content_media_type = "application/octet-stream")]
    manuscript: Vec<u8>,
    /// A cover image, JPEG or PNG (scaled to fit 1600×2560); without one Bindery makes a
    /// typographic cover.
    #[schema(value_type = String, content_media_type = "application/octet-stream", required = false)]
    cover: Vec<u8>,
    /// The manuscript's format when its content is ambiguous: `markdown` (`md`), `docx`
    /// (`word`) or `text` (`txt`, `plain`), in any case. Given, the file name is not checked
    /// against the content.
    #[schema(pattern = "^(markdown|md|docx|word|text|txt|plain)$", required = false)]
    format: String,
    /// Where to send the signed `book.ready` or `book.failed` event when the book finishes: an
    /// absolute http(s) URL without credentials, at a public address unless the operator allows
    /// private ones (`WEBHOOK_ALLOW_PRIVATE`). Check the signature with `GET
    /// /api/v1/webhook-secret`.
    #[schema(
        format = "uri",
        max_length = 2048,
        required = false,
        example = "https://publisher.example/hooks/bindery"
    )]
    callback_url: String,
    #[schema(required = false)]
    title: String,
    #[schema(required = false)]
    subtitle: String,
    /// One or more authors, separated by `;`.
    #[schema(required = false)]
    author: String,
    /// The same as `author`.
    #[schema(required = false)]
    authors: String,
    /// A BCP 47 language tag (`en`, `fr-CA`). Absent, the manuscript's language is kept, or
    /// the service's `DEFAULT_LANGUAGE` (`en`) when it names none.
    #[schema(required = false)]
    language: String,
    /// The same as `language`.
    #[schema(required = false)]
    lang: String,
    /// The book's unique identifier (a URN or an ISBN); derived from the manuscript if absent.
    #[schema(required = false)]
    identifier: String,
    /// An ISBN-10 or ISBN-13 with a valid check digit.
    #[schema(required = false)]
    isbn: String,
    #[schema(required = false)]
    publisher: String,
    /// Publication date, W3CDTF: `2024`, `2024-05` or `2024-05-01`.
    #[schema(required = false)]
    date: String,
    #[schema(required = false)]
    description: String,
    /// One or more subjects, separated by `;`.
    #[schema(required = false)]
    subject: String,
    #[schema(required = false)]
    series: String,
    /// The book's number in its series.
    #[schema(required = false)]
    series_number: String,
    /// The same as `series_number`.
    #[schema(required = false)]
    series_index: String,
    /// A rights or copyright statement.
    #[schema(required = false)]
    rights: String,
    /// The back cover's text, for the print edition's cover (else the description).
    #[schema(required = false)]
    blurb: String,
    /// The print edition's trim size: `5x8`, `5.25x8`, `5.5x8.5`, `6x9` (the default), `a5` or
    /// `royal`.
    #[schema(required = false, example = "6x9")]
    trim: String,
    /// The print edition's paper, which sets the spine's width: `white` (the default) or
    /// `cream`.
    #[schema(required = false, example = "cream")]
    paper: String,
    /// `yes` for 0.125 in of bleed beyond the trim on the print edition's outside edges.
    #[schema(required = false, example = "no")]
    bleed: String,
    /// The print edition's own ISBN (a paperback's is not the ebook's).
    #[schema(required = false)]
    print_isbn: String,
}

/// What the form carried, with the files already stored under the book's keys.
pub struct Upload {
    pub file_name: String,
    pub cover_name: Option<String>,
    pub metadata: BTreeMap<String, String>,
    pub format: Option<Format>,
    /// As sent; the caller checks it.
    pub callback_url: Option<String>,
}

/// How large an upload's files may be.
pub struct Limits {
    /// `MAX_MANUSCRIPT_SIZE`.
    pub manuscript: u64,
    /// `MAX_COVER_SIZE`.
    pub cover: u64,
}

/// What the text fields of a form may add to its files, multipart's own framing included:
/// every field Bindery reads at its largest is less than this.
const FIELDS_ALLOWANCE: u64 = 2 * 1024 * 1024;

impl Limits {
    /// The largest body an upload can be: its files at their limits, and its fields.
    pub fn body(&self) -> u64 {
        self.manuscript
            .saturating_add(self.cover)
            .saturating_add(FIELDS_ALLOWANCE)
    }
}

/// Reads the form. On any error the caller deletes what was stored under the book's prefix.
pub async fn read(
    mut form: Multipart,
    blobs: &BlobStore,
    book: &BookId,
    limits: &Limits,
) -> Result<Upload, ApiError> {
    let mut file_name = None;
    let mut cover_name = None;
    let mut metadata = BTreeMap::new();
    let mut format = None;
    let mut callback_url = None;
    let mut seen = BTreeSet::new();
    while let Some(field) = form.next().await {
        let mut field = field.map_err(|e| malformed(&e.to_string()))?;
        let name = field.name().unwrap_or_default().to_owned();
        // A field sent twice is a mistake to name, not a value to pick: the caller then
        // stores nothing (it deletes what the first one streamed).
        if !seen.insert(name.clone()) {
            return Err(ApiError::bad_request(
                "duplicate_field",
                format!("The form field {name:?} is sent more than once: send it once."),
            )
            .field(name));
        }
        let given_name = field
            .content_disposition()
            .and_then(|d| d.get_filename())
            .map(sanitize_file_name);
        match name.as_str() {
            "manuscript" => {
                stream_to_blob(
                    &mut field,
                    blobs,
                    &keys::upload(book),
                    limits.manuscript,
                    "manuscript",
                )
                .await?;
                file_name = Some(given_name.unwrap_or_else(|| "manuscript".to_owned()));
            }
            "cover" => {
                stream_to_blob(
                    &mut field,
                    blobs,
                    &keys::cover_upload(book),
                    limits.cover,
                    "cover",
                )
                .await?;
                cover_name = Some(given_name.unwrap_or_else(|| "cover".to_owned()));
            }
            "format" => {
                let value = text(&mut field, &name).await?;
                format = Some(Format::parse(&value).ok_or_else(|| {
                    ApiError::bad_request("invalid_field", "format must be markdown, docx or text")
                        .field("format")
                })?);
            }
            "callback_url" => callback_url = Some(text(&mut field, &name).await?),
            key if KEYS.contains(&key)
                || KEY_ALIASES.contains(&key)
                || key.starts_with(LABEL_PREFIX) =>
            {
                let value = text(&mut field, &name).await?;
                metadata.insert(key.to_owned(), value);
            }
            other => {
                return Err(ApiError::bad_request(
                    "unknown_field",
                    format!(
                        "The form field {other:?} is not one Bindery reads. Send `manuscript` (a file), \
                         optionally `cover` (a file), `format`, `callback_url`, and metadata: {} and labels.KEY.",
                        KEYS.join(", ")
                    ),
                )
                .field(other));
            }
        }
    }
    let Some(file_name) = file_name else {
        return Err(ApiError::bad_request(
            "missing_manuscript",
            "The upload has no manuscript: send it as the multipart file field `manuscript`.",
        )
        .field("manuscript"));
    };
    Ok(Upload {
        file_name,
        cover_name,
        metadata,
        format,
        callback_url,
    })
}

async fn stream_to_blob(
    field: &mut Field,
    blobs: &BlobStore,
    key: &str,
    limit: u64,
    what: &str,
) -> Result<u64, ApiError> {
    let upload = blobs
        .store()
        .put_multipart(&Path::from(key))
        .await
        .map_err(|e| ApiError::internal(&e.into()))?;
    let mut writer = WriteMultipart::new_with_chunk_size(upload, CHUNK_BYTES);
    let mut size = 0u64;
    while let Some(chunk) = field.next().await {
        let chunk = match chunk {
            Ok(chunk) => chunk,
            Err(e) => {
                let _ = writer.abort().await;
                return Err(malformed(&e.to_string()));
            }
        };
        size += chunk.len() as u64;
        if size > limit {
            let _ = writer.abort().await;
            return Err(too_large(what, limit));
        }
        if let Err(e) = writer.wait_for_capacity(2).await {
            // A failed part (a full disk) leaves the store's staged parts behind unless the
            // upload is aborted; the caller then deletes the book's blobs.
            let _ = writer.abort().await;
            return Err(ApiError::internal(&e.into()));
        }
        writer.write(&chunk);
    }
    writer
        .finish()
        .await
        .map_err(|e| ApiError::internal(&e.into()))?;
    Ok(size)
}

async fn text(field: &mut Field, name: &str) -> Result<String, ApiError> {
    let mut bytes = Vec::new();
    while let Some(chunk) = field.next().await {
        let chunk = chunk.map_err(|e| malformed(&e.to_string()))?;
        if bytes.len() + chunk.len() > MAX_FIELD_BYTES {
            return Err(ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "field_too_large",
                format!("The field {name:?} is over {MAX_FIELD_BYTES} bytes."),
            )
            .field(name));
        }
        bytes.extend_from_slice(&chunk);
    }
    String::from_utf8(bytes).map_err(|_| {
        ApiError::bad_request(
            "invalid_field",
            format!("The field {name:?} is not UTF-8 text."),
        )
        .field(name)
    })
}

pub fn too_large(what: &str, limit: u64) -> ApiError {
    let variable = if what == "cover" {
        "MAX_COVER_SIZE"
    } else {
        "MAX_MANUSCRIPT_SIZE"
    };
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "too_large",
        format!(
            "The {what} is over the limit of {} ({variable}).",
            bytesize::ByteSize(limit)
        ),
    )
    .field(what)
}

/// A body whose `Content-Length` says it is larger than any upload can be.
pub fn too_large_body(declared: u64, limits: &Limits) -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "too_large",
        format!(
            "The upload is {} (Content-Length), more than any upload may be: a manuscript of at \
             most {} (MAX_MANUSCRIPT_SIZE), a cover of at most {} (MAX_COVER_SIZE) and the form's \
             fields. Nothing of it was read.",
            bytesize::ByteSize(declared),
            bytesize::ByteSize(limits.manuscript),
            bytesize::ByteSize(limits.cover)
        ),
    )
    .field("manuscript")
}

fn malformed(detail: &str) -> ApiError {
    ApiError::bad_request(
        "malformed_upload",
        format!("The upload is not a readable multipart/form-data body ({detail})."),
    )
}

/// A client's file name, reduced to its last path segment and printable characters.
fn sanitize_file_name(name: &str) -> String {
    let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
    let clean: String = base.chars().filter(|c| !c.is_control()).take(200).collect();
    if clean.trim().is_empty() {
        "manuscript".to_owned()
    } else {
        clean
    }
}

#[cfg(test)]
mod tests {
    use utoipa::PartialSchema;
    use utoipa::openapi::{RefOr, Schema};

    use super::*;

    /// Every text field at its largest fits in what a body may add to its files.
    #[test]
    fn the_fields_fit_their_allowance() {
        let fields = KEYS.len() + KEY_ALIASES.len() + 2;
        assert!((fields * MAX_FIELD_BYTES) as u64 + 64 * 1024 < FIELDS_ALLOWANCE);
    }

    /// The documented form names exactly the fields `read` takes.
    #[test]
    fn the_documented_form_has_every_field_read_takes() {
        let RefOr::T(Schema::Object(form)) = UploadForm::schema() else {
            panic!("the form is an object schema");
        };
        let mut documented: Vec<&str> = form.properties.keys().map(String::as_str).collect();
        let mut read: Vec<&str> = ["manuscript", "cover", "format", "callback_url"]
            .into_iter()
            .chain(KEYS.iter().copied())
            .chain(KEY_ALIASES.iter().copied())
            .collect();
        documented.sort_unstable();
        read.sort_unstable();
        assert_eq!(documented, read);
        assert_eq!(form.required, ["manuscript"]);
    }
}
