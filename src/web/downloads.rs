//! A book's files that are downloaded whole (the EPUB, the print edition and its cover, the
//! store cover), for the API and the app's links alike. One rule says when there is none: 409
//! `not_ready` before the book is ready, 404 `no_print_edition` for a ready book without a print
//! edition (with why), 404 when the file is missing from storage. The API answers it as JSON,
//! a browser as a line of text.

use actix_web::HttpResponse;
use actix_web::http::{StatusCode, header};
use bytes::Bytes;

use super::AppState;
use super::error::ApiError;
use crate::books::{self, BookRow, BookStatus, RevisionId, keys};
use crate::paperback::Edition;

/// A file of a ready book that is downloaded whole, as an attachment.
pub(crate) struct Download {
    /// Where it is stored, for a print edition's files the edition's.
    pub key: fn(&RevisionId, Edition) -> String,
    pub media_type: &'static str,
    /// What it is, in an error's words (`EPUB`, `print cover`).
    pub what: &'static str,
    /// What the attachment's name ends with, after the book's download name.
    pub suffix: &'static str,
    /// A file of the print edition, which a ready book may lack.
    pub printed: bool,
}

impl Download {
    pub const EPUB: Download = Download {
        key: |revision, _| keys::epub(revision),
        media_type: "application/epub+zip",
        what: "EPUB",
        suffix: ".epub",
        printed: false,
    };
    pub const PDF: Download = Download {
        key: keys::pdf,
        media_type: "application/pdf",
        what: "print edition",
        suffix: ".pdf",
        printed: true,
    };
    pub const STORE_COVER: Download = Download {
        key: |revision, _| keys::store_cover(revision),
        media_type: "image/jpeg",
        what: "store cover",
        suffix: "-cover.jpg",
        printed: false,
    };
    pub const PRINT_COVER: Download = Download {
        key: keys::print_cover,
        media_type: "application/pdf",
        what: "print cover",
        suffix: "-print-cover.pdf",
        printed: true,
    };

    /// The `Content-Disposition` of `book`'s file, of `edition` when it is not the book's own
    /// print edition (`…-hardcover.pdf`).
    pub fn disposition(&self, book: &books::BookRow, edition: Option<Edition>) -> String {
        let edition = match edition {
            Some(e) if self.printed => format!("-{}", e.name().replace('_', "-")),
            _ => String::new(),
        };
        format!(
            "attachment; filename=\"{}{edition}{}\"",
            book.download_name(),
            self.suffix
        )
    }
}

/// Which print edition a download asks for (`?edition=hardcover`); without it, the book's own,
/// the one its ebooks' page list follows.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EditionQuery {
    pub edition: Option<Edition>,
}

/// The edition `asked` of a book whose report is `report`: the one asked for, when the book
/// was made in it, else its reference edition; or why there is none of it.
fn edition_in(report: Option<&str>, asked: Option<Edition>) -> Result<Edition, ApiError> {
    let report: Option<crate::report::Report> = report.and_then(|r| serde_json::from_str(r).ok());
    let reference = report
        .as_ref()
        .and_then(|r| r.print.as_ref())
        .map(|p| p.edition)
        .unwrap_or_default();
    let Some(asked) = asked.filter(|a| *a != reference) else {
        return Ok(reference);
    };
    let made = report
        .iter()
        .flat_map(|r| r.editions.iter())
        .find(|p| p.edition == asked);
    match made {
        Some(p) if p.failure.is_none() && p.pages.is_some() => Ok(asked),
        Some(p) => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "no_print_edition",
            format!(
                "The book has no {} edition: {}",
                asked.label(),
                crate::report::sentence(
                    &p.failure
                        .as_ref()
                        .map(|f| f.message.clone())
                        .unwrap_or_default()
                )
            ),
        )),
        None => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "no_print_edition",
            format!(
                "The book is not made in a {} edition: list it in its editions (editions=…) \
                 and make a new revision.",
                asked.label()
            ),
        )),
    }
}

/// `file` of `book`, or the error that says why there is none.
pub(crate) async fn fetch(
    state: &AppState,
    book: &BookRow,
    file: &Download,
    edition: Option<Edition>,
) -> Result<Bytes, ApiError> {
    let what = file.what;
    if book.status != BookStatus::Ready {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "not_ready",
            format!(
                "The book is {}; its {what} exists once it is ready.",
                book.status
            ),
        ));
    }
    if file.printed && book.pdf_bytes.is_none() && edition.is_none() {
        return Err(no_print_edition(book));
    }
    let edition = edition_in(book.report.as_deref(), edition)?;
    state
        .blobs
        .get_opt(&(file.key)(&book.current(), edition))
        .await?
        .ok_or_else(|| {
            ApiError::not_found(
                "file",
                format!("The book's {what} is missing from storage."),
            )
        })
}

/// `file` of one revision of a book (an earlier version, to compare or to keep), or the error
/// that says why there is none: 409 `not_ready` for a revision that is not built (building,
/// failed or superseded), 410 `revision_files_removed` for one that no longer keeps its files,
/// 404 for a file it lacks.
pub(crate) async fn fetch_revision(
    state: &AppState,
    revision: &books::RevisionRow,
    file: &Download,
) -> Result<Bytes, ApiError> {
    let what = file.what;
    if revision.status != books::RevisionStatus::Ready {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "not_ready",
            format!(
                "Revision {} is {}; only a built revision has a {what}.",
                revision.id.number, revision.status
            ),
        ));
    }
    if revision.files_removed_at.is_some() {
        return Err(files_removed(revision));
    }
    if file.printed && revision.pdf_bytes.is_none() {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "no_print_edition",
            format!("Revision {} has no print edition.", revision.id.number),
        ));
    }
    let edition = edition_in(revision.report.as_deref(), None)?;
    state
        .blobs
        .get_opt(&(file.key)(&revision.id, edition))
        .await?
        .ok_or_else(|| {
            ApiError::not_found(
                "file",
                format!(
                    "The {what} of revision {} is missing from storage.",
                    revision.id.number
                ),
            )
        })
}

/// A revision that keeps its record but not its files.
pub(crate) fn files_removed(revision: &books::RevisionRow) -> ApiError {
    ApiError::new(
        StatusCode::GONE,
        "revision_files_removed",
        format!(
            "Revision {} no longer keeps its files: only the newest revisions do \
             (REVISIONS_KEPT), and one superseded while it was built keeps none.",
            revision.id.number
        ),
    )
}

/// A ready book that has no print edition: why, from its report.
fn no_print_edition(book: &BookRow) -> ApiError {
    let report: Option<crate::report::Report> = book
        .report
        .as_deref()
        .and_then(|r| serde_json::from_str(r).ok());
    let why = report
        .and_then(|r| r.print)
        .and_then(|p| p.failure)
        .map_or_else(
            || {
                "It was published before Bindery made print editions; retry it to make one."
                    .to_owned()
            },
            |f| f.message,
        );
    ApiError::new(
        StatusCode::NOT_FOUND,
        "no_print_edition",
        format!(
            "The book has no print edition: {}",
            crate::report::sentence(&why)
        ),
    )
}

/// `bytes`, `file` of revision `number` of `book`, as an attachment named for both.
pub(crate) fn revision_attachment(
    book: &BookRow,
    number: u32,
    file: &Download,
    bytes: Bytes,
) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(file.media_type)
        .insert_header((
            header::CONTENT_DISPOSITION,
            format!(
                "attachment; filename=\"{}-v{number}{}\"",
                book.download_name(),
                file.suffix
            ),
        ))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .body(bytes)
}

/// `bytes`, `file` of `book` (of `edition`, when one was asked for), as an attachment.
pub(crate) fn attachment(
    book: &BookRow,
    file: &Download,
    edition: Option<Edition>,
    bytes: Bytes,
) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(file.media_type)
        .insert_header((header::CONTENT_DISPOSITION, file.disposition(book, edition)))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .body(bytes)
}
