//! Reading a multipart upload: the manuscript and cover are streamed straight into the blob
//! store (memory stays flat at any size) and cut off, with 413, the moment they pass the limit;
//! the other fields are small metadata values.

use std::collections::{BTreeMap, BTreeSet};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use actix_multipart::{Field, Multipart};
use actix_web::error::PayloadError;
use actix_web::http::StatusCode;
use actix_web::web::Bytes;
use futures_util::{Stream, StreamExt};
use object_store::path::Path;
use object_store::{ObjectStoreExt, WriteMultipart};
use utoipa::ToSchema;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};

use crate::books::{RevisionId, keys};
use crate::document::keys::{self as metadata_keys, Given, Named};
use crate::ebook::metadata::bounds;
use crate::manuscript::Format;
use crate::storage::BlobStore;
use crate::web::error::ApiError;

/// Largest metadata value accepted, before its field's own bound (a description can be long; a
/// field is not a file).
const MAX_FIELD_BYTES: usize = 64 * 1024;
/// Parts of the streamed upload: small enough to keep memory flat, large enough for few
/// round trips to a remote store.
const CHUNK_BYTES: usize = 2 * 1024 * 1024;

/// The form's fields that are not metadata.
const OWN_FIELDS: &[&str] = &["manuscript", "cover", "format", "callback_url"];

/// An upload: the manuscript, an optional cover, and metadata fields, which override what
/// the manuscript says. Besides the fields below, `labels.KEY` (`labels.contents`,
/// `labels.notes`…) replaces one of the words Bindery writes into the book in its language: at
/// most 200 characters, each of its placeholders (`{title}`) used at most twice. Names are read
/// in any letter case and with `-` for `_`; each field may be sent once, under any of its
/// spellings (`author` and `authors` together are a `duplicate_field`). An unknown field, an
/// unknown label or a value over its bound is refused as it arrives, before the rest of the
/// body is read.
pub struct UploadForm;

/// The form's own fields, as the OpenAPI document describes them (never built: `read` parses
/// the stream itself); [`UploadForm`] adds the metadata fields from `document::keys::FIELDS`.
/// A field `read` learns to take needs its property here too: the unit test below holds the
/// two to one list.
#[derive(ToSchema)]
#[allow(dead_code)]
struct OwnFields {
    /// The manuscript: Markdown, DOCX, OpenDocument (`.odt`, `.fodt`), EPUB, HTML (one page,
    /// or a `.zip` of a page with its images) or plain text (in any common encoding). Its format is
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
}

impl utoipa::PartialSchema for UploadForm {
    fn schema() -> RefOr<Schema> {
        let RefOr::T(Schema::Object(mut form)) = OwnFields::schema() else {
            unreachable!("a derived struct's schema is an object")
        };
        form.description = Some(
            "An upload: the manuscript, an optional cover, and metadata fields, which override \
             what the manuscript says. Besides the fields below, `labels.KEY` (`labels.contents`, \
             `labels.notes`…) replaces one of the words Bindery writes into the book in its \
             language: at most 200 characters, each of its placeholders (`{title}`) used at most \
             twice. Names are read in any letter case and with `-` for `_`; each field may be \
             sent once, under any of its spellings (`author` and `authors` together are a \
             `duplicate_field`). An unknown field, an unknown label or a value over its bound is \
             refused as it arrives, before the rest of the body is read."
                .to_owned(),
        );
        for declared in metadata_keys::FIELDS {
            form.properties
                .insert(declared.name.to_owned(), metadata_property(declared).into());
            for alias in declared.aliases {
                let same = ObjectBuilder::new()
                    .schema_type(Type::String)
                    .description(Some(format!("The same as `{}`.", declared.name)));
                form.properties.insert((*alias).to_owned(), same.into());
            }
        }
        RefOr::T(Schema::Object(form))
    }
}

impl ToSchema for UploadForm {}

/// A metadata field's property: what the key table says of it, and its bound.
fn metadata_property(declared: &metadata_keys::Declared) -> ObjectBuilder {
    let (help, max_length) = match bounds::Bound::of(declared.field) {
        bounds::Bound::Text(max) => (
            format!("{} At most {max} characters.", declared.help),
            Some(max),
        ),
        bounds::Bound::Names => (
            format!(
                "{} At most {} of them, each at most {} characters.",
                declared.help,
                bounds::MAX_NAMES,
                bounds::MAX_NAME_CHARS
            ),
            None,
        ),
    };
    ObjectBuilder::new()
        .schema_type(Type::String)
        .description(Some(help))
        .max_length(max_length)
        .examples(declared.example)
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
pub struct FileLimits {
    /// `MAX_MANUSCRIPT_SIZE`.
    pub manuscript: u64,
    /// `MAX_COVER_SIZE`.
    pub cover: u64,
}

/// What the text fields of a form may add to its files, multipart's own framing included:
/// every field Bindery reads, each once, at its largest, is less than this (a unit test holds
/// it).
const FIELDS_ALLOWANCE: u64 = 2 * 1024 * 1024;

/// The most of a `callback_url` read: past the 2048 characters a URL may have (which the
/// URL's own check names), and no further.
const MAX_CALLBACK_URL_BYTES: usize = 4 * 2048;

impl FileLimits {
    /// The largest body an upload can be: its files at their limits, and its fields.
    pub fn body(&self) -> u64 {
        self.manuscript
            .saturating_add(self.cover)
            .saturating_add(FIELDS_ALLOWANCE)
    }
}

/// The most bytes a field's text may have: its bound in characters, each up to four bytes.
fn field_bytes(named: Named) -> usize {
    (bounds::max_chars(named) * 4).min(MAX_FIELD_BYTES)
}

/// Reads the form. On any error the caller deletes what was stored under the revision's
/// prefix.
/// Each field is judged as it arrives: an unknown one, one sent twice (under any spelling),
/// or a value over its bound ends the upload there, so nothing the form says is held beyond
/// one field's bound.
pub async fn read(
    mut form: Multipart,
    blobs: &BlobStore,
    revision: &RevisionId,
    limits: &FileLimits,
) -> Result<Upload, ApiError> {
    let mut file_name = None;
    let mut cover_name = None;
    let mut metadata = BTreeMap::new();
    let mut format = None;
    let mut callback_url = None;
    let mut own = BTreeSet::new();
    let mut given = Given::default();
    while let Some(field) = form.next().await {
        let mut field = field.map_err(|e| malformed(&e.to_string()))?;
        let name = field.name().unwrap_or_default().to_owned();
        // A field sent twice is a mistake to name, not a value to pick: the caller then
        // stores nothing (it deletes what the first one streamed).
        let twice = |first: &str| {
            ApiError::bad_request(
                "duplicate_field",
                if first == name {
                    format!("The form field {name:?} is sent more than once: send it once.")
                } else {
                    format!(
                        "The form fields {first:?} and {name:?} are the same field: send one of them, once."
                    )
                },
            )
            .field(name.clone())
        };
        if OWN_FIELDS.contains(&name.as_str()) && !own.insert(name.clone()) {
            return Err(twice(&name));
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
                    &keys::upload(revision),
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
                    &keys::cover_upload(revision),
                    limits.cover,
                    "cover",
                )
                .await?;
                cover_name = Some(given_name.unwrap_or_else(|| "cover".to_owned()));
            }
            "format" => {
                let value = text(&mut field, &name, 64).await.map_err(too_long)?;
                format = Some(Format::parse(&value).ok_or_else(|| {
                    ApiError::bad_request(
                        "invalid_field",
                        "format must be markdown, docx, odt, epub, html or text",
                    )
                    .field("format")
                })?);
            }
            "callback_url" => {
                callback_url = Some(
                    text(&mut field, &name, MAX_CALLBACK_URL_BYTES)
                        .await
                        .map_err(too_long)?,
                );
            }
            key => {
                let named = Named::parse(key).map_err(|unknown| unknown_field(key, &unknown))?;
                given
                    .note(named, key)
                    .map_err(|first| twice(&first.first))?;
                let invalid = |value: &str, problem: &str| {
                    ApiError::new(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        "invalid_metadata",
                        format!(
                            "The metadata value {}={:?} is not valid: {problem}. Correct it and \
                             upload again.",
                            named.key(),
                            bounds::excerpt(value)
                        ),
                    )
                    .field(key)
                };
                let value = match text(&mut field, &name, field_bytes(named)).await {
                    Ok(value) => value,
                    // Read no further than its bound could take, in words of the bound.
                    Err(Text::TooLong { start, .. }) => {
                        return Err(invalid(
                            &start,
                            &format!(
                                "it is longer than {max} characters; it may be at most {max}",
                                max = bounds::max_chars(named)
                            ),
                        ));
                    }
                    Err(Text::Refused(e)) => return Err(e),
                };
                bounds::check(named, &value).map_err(|problem| invalid(&value, &problem))?;
                metadata.insert(key.to_owned(), value);
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

/// The answer to a field Bindery does not read: a label it does not write is invalid
/// metadata (422, as a label in the manuscript's metadata would be); anything else an
/// unknown field (400).
fn unknown_field(name: &str, unknown: &metadata_keys::Unknown) -> ApiError {
    if unknown.label {
        return ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_metadata",
            format!(
                "The metadata value {} is not valid: {unknown}. Correct it and upload again.",
                bounds::excerpt(&unknown.key)
            ),
        )
        .field(bounds::excerpt(name));
    }
    ApiError::bad_request(
        "unknown_field",
        format!(
            "The form field {:?} is not one Bindery reads. Send `manuscript` (a file), \
             optionally `cover` (a file), `format`, `callback_url`, and metadata: {} and \
             labels.KEY.",
            bounds::excerpt(name),
            metadata_keys::field_names()
        ),
    )
    .field(bounds::excerpt(name))
}

/// A request body held to `limit` bytes as it streams, whatever its headers say: a body sent
/// in chunks has no `Content-Length` to refuse it by up front. Past the limit it fails, and
/// [`CountedBody::passed`] says why.
pub struct CountedBody<S> {
    inner: S,
    left: u64,
    passed: Arc<AtomicBool>,
}

impl<S> CountedBody<S> {
    pub fn new(inner: S, limit: u64) -> (CountedBody<S>, Arc<AtomicBool>) {
        let passed = Arc::new(AtomicBool::new(false));
        let body = CountedBody {
            inner,
            left: limit,
            passed: passed.clone(),
        };
        (body, passed)
    }
}

impl<S> Stream for CountedBody<S>
where
    S: Stream<Item = Result<Bytes, PayloadError>> + Unpin,
{
    type Item = Result<Bytes, PayloadError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_next(cx) {
            Poll::Ready(Some(Ok(bytes))) => {
                let len = bytes.len() as u64;
                if len > this.left {
                    this.left = 0;
                    this.passed.store(true, Ordering::Relaxed);
                    return Poll::Ready(Some(Err(PayloadError::Overflow)));
                }
                this.left -= len;
                Poll::Ready(Some(Ok(bytes)))
            }
            other => other,
        }
    }
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

/// Why a text field was not read.
enum Text {
    /// It passed its limit: what of it was read, and the 413 that says so.
    TooLong { start: String, answer: ApiError },
    /// It could not be read (a broken body, text that is not UTF-8).
    Refused(ApiError),
}

/// A field over its limit, as a plain 413.
fn too_long(error: Text) -> ApiError {
    match error {
        Text::TooLong { answer, .. } | Text::Refused(answer) => answer,
    }
}

/// A text field of at most `limit` bytes, given up the moment it passes it.
async fn text(field: &mut Field, name: &str, limit: usize) -> Result<String, Text> {
    let mut bytes = Vec::new();
    while let Some(chunk) = field.next().await {
        let chunk = chunk.map_err(|e| Text::Refused(malformed(&e.to_string())))?;
        if bytes.len() + chunk.len() > limit {
            bytes.extend_from_slice(&chunk[..chunk.len().min(limit)]);
            return Err(Text::TooLong {
                start: String::from_utf8_lossy(&bytes).into_owned(),
                answer: ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "field_too_large",
                    format!("The field {name:?} is over {limit} bytes."),
                )
                .field(name),
            });
        }
        bytes.extend_from_slice(&chunk);
    }
    String::from_utf8(bytes).map_err(|_| {
        Text::Refused(
            ApiError::bad_request(
                "invalid_field",
                format!("The field {name:?} is not UTF-8 text."),
            )
            .field(name),
        )
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

/// A body larger than any upload can be: by its `Content-Length` (`declared`), refused before
/// any of it is read, or counted as it streamed.
pub fn too_large_body(declared: Option<u64>, limits: &FileLimits) -> ApiError {
    let size = match declared {
        Some(declared) => format!("is {} (Content-Length)", bytesize::ByteSize(declared)),
        None => format!("passed {}", bytesize::ByteSize(limits.body())),
    };
    let kept = if declared.is_some() {
        "Nothing of it was read."
    } else {
        "It was read no further, and nothing of it was kept."
    };
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "too_large",
        format!(
            "The upload {size}, more than any upload may be: a manuscript of at most {} \
             (MAX_MANUSCRIPT_SIZE), a cover of at most {} (MAX_COVER_SIZE) and the form's \
             fields. {kept}",
            bytesize::ByteSize(limits.manuscript),
            bytesize::ByteSize(limits.cover)
        ),
    )
    .field("manuscript")
}

/// A multipart body that cannot be read: 400 `malformed_upload`, for every form the API reads.
pub(super) fn malformed(detail: &str) -> ApiError {
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

    /// Multipart's framing of one field (its boundary and headers) at most, as the allowance
    /// counts it.
    const FRAMING_BYTES: usize = 1024;

    /// Every text field, each once, at its largest, fits in what a body may add to its files.
    #[test]
    fn the_fields_fit_their_allowance() {
        let metadata: usize = metadata_keys::FIELDS
            .iter()
            .map(|d| Named::Field(d.field))
            .chain(crate::labels::Key::ALL.iter().map(|k| Named::Label(*k)))
            .map(|named| field_bytes(named) + FRAMING_BYTES)
            .sum();
        let own = 64 + MAX_CALLBACK_URL_BYTES + 4 * FRAMING_BYTES;
        assert!(
            (metadata + own) as u64 <= FIELDS_ALLOWANCE,
            "{} bytes",
            metadata + own
        );
    }

    /// The documented form names exactly the fields `read` takes.
    #[test]
    fn the_documented_form_has_every_field_read_takes() {
        let RefOr::T(Schema::Object(form)) = UploadForm::schema() else {
            panic!("the form is an object schema");
        };
        let mut documented: Vec<&str> = form.properties.keys().map(String::as_str).collect();
        let mut read: Vec<&str> = OWN_FIELDS
            .iter()
            .copied()
            .chain(metadata_keys::spellings())
            .collect();
        documented.sort_unstable();
        read.sort_unstable();
        assert_eq!(documented, read);
        assert_eq!(form.required, ["manuscript"]);
    }
}
