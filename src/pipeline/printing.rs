//! Typesetting the print edition in a child process of its own (see [`super::child`]).
//!
//! Typst's memory grows with the book and nothing can cancel it, so the `package_pdf` step
//! runs `bindery print-book`, limited like the reading child. The child reads the stored model
//! and images, typesets them, and stores the interior PDF, the print cover and the pagination
//! (where each printed page begins, which the ebooks then mark); it answers with what the
//! report shows ([`Printed`]). A book whose print edition cannot be made (too long for any
//! binding, a limit hit, Typst refusing it) is refused, with the reason in the report's
//! `failure`: that step fails alone, and the ebooks publish without a page list.

use std::process::ExitCode;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use super::child::{Child, Ran};
use crate::books::{BookId, keys};
use crate::config::Config;
use crate::ebook::{Book, BookMetadata, Pagination};
use crate::print::{self, PrintOptions};
use crate::report::{PrintFailure, PrintReport, Warning};
use crate::storage::BlobStore;

/// The hidden subcommand the worker runs.
pub const SUBCOMMAND: &str = "print-book";

const CHILD: Child = Child {
    subcommand: SUBCOMMAND,
    work: "typesetting the print edition",
};

/// What the child is asked to typeset.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Request {
    pub book: BookId,
}

/// What the child answers on stdout, and the step stores for the report
/// (`keys::print_report`): the print edition's size, or why it could not be made, and its
/// warnings.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Printed {
    pub report: PrintReport,
    pub warnings: Vec<Warning>,
    /// The interior's size, when it was made.
    pub pdf_bytes: Option<u64>,
}

impl Printed {
    /// No print edition, for `code`'s reason: what `metadata` asked for, and the failure.
    fn refused(metadata: &BookMetadata, code: &str, message: String) -> Printed {
        Printed {
            report: PrintReport {
                failure: Some(PrintFailure {
                    code: code.to_owned(),
                    message,
                }),
                ..asked(metadata)
            },
            warnings: Vec::new(),
            pdf_bytes: None,
        }
    }
}

/// Runs the child and waits for it. `Err` is a failure worth retrying; a limit that stopped
/// it is a refusal.
pub async fn print_in_child(
    config: &Config,
    metadata: &BookMetadata,
    request: &Request,
) -> anyhow::Result<Printed> {
    Ok(match CHILD.run(config, &request.book, request).await? {
        Ran::Answered(printed) => printed,
        Ran::Stopped(error) => Printed::refused(metadata, error.code(), error.to_string()),
    })
}

/// The child: typesets the book its [`Request`] names and stores what it made.
pub fn child_main(config: &Config) -> ExitCode {
    use_operator_fonts(config);
    CHILD.main(config, |request: Request, blobs| async move {
        print_and_store(&blobs, &request.book).await
    })
}

/// Makes the operator's `FONTS_DIR` fonts available to the print edition, in this process.
/// A directory that cannot be listed leaves the built-in fonts alone: the book still prints,
/// its missing characters named in its report. What the listing leaves out the worker said
/// once, at its start ([`announce_operator_fonts`]).
pub fn use_operator_fonts(config: &Config) {
    let Some(dir) = &config.fonts_dir else {
        return;
    };
    match print::use_fonts_from(dir) {
        Ok(listing) => {
            tracing::debug!(dir = %dir.display(), faces = listing.faces, skipped = listing.skipped.len(), "the operator's fonts are listed")
        }
        Err(e) => tracing::warn!(
            dir = %dir.display(),
            error = format!("{e:#}"),
            "FONTS_DIR could not be read; the print edition uses its own fonts only"
        ),
    }
}

/// Tells the operator, once, what the print edition finds in `FONTS_DIR`: how many faces, and
/// each thing it leaves out (a file past the count, a collection's faces past the count, a
/// file it cannot read) with why. Every typesetting child lists the folder again, silently.
pub fn announce_operator_fonts(config: &Config) {
    let Some(dir) = &config.fonts_dir else {
        return;
    };
    match print::list_fonts(dir) {
        Ok(listing) => {
            for skipped in &listing.skipped {
                tracing::warn!(dir = %dir.display(), skipped = %skipped, "FONTS_DIR: a font the print edition will not use");
            }
            tracing::info!(dir = %dir.display(), faces = listing.faces, skipped = listing.skipped.len(), "FONTS_DIR listed for the print edition");
        }
        Err(e) => tracing::warn!(
            dir = %dir.display(),
            error = format!("{e:#}"),
            "FONTS_DIR could not be read; the print edition uses its own fonts only"
        ),
    }
}

/// What the book asked for, before anything is typeset.
pub fn asked(metadata: &BookMetadata) -> PrintReport {
    let options = PrintOptions::of(metadata);
    PrintReport {
        trim: options.trim.name().to_owned(),
        paper: options.paper.name().to_owned(),
        bleed: options.bleed,
        pages: None,
        gutter_inches: None,
        spine_inches: None,
        failure: None,
    }
}

async fn print_and_store(blobs: &BlobStore, id: &BookId) -> anyhow::Result<Printed> {
    let book: Book = serde_json::from_slice(&blobs.get(&keys::model(id)).await?)
        .context("reading the stored document model")?;
    let metadata = &book.metadata;
    let mut resources = crate::convert::Resources::new();
    let front = book.cover.as_ref().map(|c| c.file_name.as_str());
    for name in book
        .document
        .images
        .iter()
        .map(|i| i.id.as_str())
        .chain(front)
    {
        let bytes = blobs.get(&keys::resource(id, name)).await?;
        resources.insert(name.to_owned(), bytes.to_vec());
    }
    let options = PrintOptions::of(metadata);
    let edition = match print::typeset(&book.document, &resources, metadata, &options) {
        Ok(edition) => edition,
        Err(e) => {
            log_detail(&e);
            return Ok(Printed::refused(metadata, e.code(), e.to_string()));
        }
    };
    let cover = match print::cover(metadata, front, &resources, edition.pages, &options) {
        Ok(cover) => cover,
        Err(e) => {
            log_detail(&e);
            let message = format!("the print cover could not be made: {e}");
            return Ok(Printed::refused(metadata, e.code(), message));
        }
    };
    let pagination = Pagination {
        edition: crate::ebook::PrintEdition::of(metadata),
        pages: edition.page_starts,
    };
    let pdf_bytes = edition.pdf.len() as u64;
    blobs.put_if_absent(&keys::pdf(id), edition.pdf).await?;
    blobs
        .put_if_absent(&keys::print_cover(id), cover.pdf)
        .await?;
    // Last: its presence says the print edition is whole.
    blobs
        .put_if_absent(&keys::pagination(id), serde_json::to_vec(&pagination)?)
        .await?;
    let mut warnings = edition.warnings;
    warnings.extend(cover.warnings);
    Ok(Printed {
        report: PrintReport {
            pages: Some(edition.pages),
            gutter_inches: Some(edition.gutter),
            spine_inches: Some(cover.spine),
            ..asked(metadata)
        },
        warnings,
        pdf_bytes: Some(pdf_bytes),
    })
}

/// What Typst said of a book it refused, for the operator's log alone (the child's lines
/// reach the worker's log as fields, never the book's): it quotes the generated source.
fn log_detail(error: &print::PrintError) {
    if let Some(detail) = error.detail() {
        tracing::warn!(
            code = error.code(),
            detail,
            "the print edition could not be made"
        );
    }
}
