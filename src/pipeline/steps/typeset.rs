//! The `package_pdf` step: the print edition typeset in a child process of its own (see
//! [`crate::pipeline::child`]).
//!
//! Typst's memory grows with the book and nothing can cancel it, so the step runs
//! `bindery print-book`, limited like the reading child. The child reads the stored model
//! and images, typesets them, and stores the interior PDF, the print cover and the pagination
//! (where each printed page begins, which the ebooks then mark); it answers with what the
//! report shows ([`Printed`]). A book whose print edition cannot be made (too long for any
//! binding, a limit hit, Typst refusing it) is refused, with the reason in the report's
//! `failure`: that step fails alone, and the ebooks publish without a page list.

use std::process::ExitCode;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use super::failure::gone;
use super::stored::book_row;
use super::{Cx, QUEUE};
use crate::books::{BookId, keys};
use crate::config::Config;
use crate::ebook::{Book, BookMetadata, Pagination};
use crate::jobs::{Job, Outcome};
use crate::pipeline::child::{Child, Ran};
use crate::print::{self, PrintOptions};
use crate::report::{PrintFailure, PrintReport, Warning};
use crate::services::Services;
use crate::storage::BlobStore;

/// The print edition: the interior PDF, typeset in a limited child process, and where its
/// pages begin. Its job type keeps the name it was first stored under, `book.package_pdf`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Typeset {
    pub book: BookId,
}

impl Job for Typeset {
    const NAME: &'static str = "book.package_pdf";
    const QUEUE: &'static str = QUEUE;
    type Context = Services;

    fn book(&self) -> Option<&str> {
        Some(self.book.as_str())
    }

    async fn run(self, cx: &Cx) -> anyhow::Result<Outcome> {
        let app = cx.app();
        if book_row(cx, &self.book).await?.is_none() {
            return Ok(gone(&self.book));
        }
        if !app.config.print_edition {
            // The ebooks alone, as the operator chose: no report of a print edition either.
            return Ok(Outcome::done_with(PrintEdition::Off {
                print_edition: false,
            }));
        }
        cx.progress(10, "typesetting the print edition").await?;
        // Only the metadata, for the report of a child a limit stopped: the child reads the
        // model itself (as parse stored it, not the cache's, which marks the pages this makes).
        #[derive(Deserialize)]
        struct Stored {
            metadata: crate::ebook::BookMetadata,
        }
        let stored: Stored =
            serde_json::from_slice(&app.blobs.get(&keys::model(&self.book)).await?)
                .context("reading the stored document model")?;
        let request = Request {
            book: self.book.clone(),
        };
        let printed = print_in_child(&app.config, &stored.metadata, &request).await?;
        app.blobs
            .put_if_absent(
                &keys::print_report(&self.book),
                serde_json::to_vec(&printed)?,
            )
            .await?;
        let report = printed.report;
        match report.failure {
            None => {
                tracing::info!(for_author = true, pages = report.pages, trim = %report.trim, bytes = printed.pdf_bytes, "print edition typeset");
                Ok(Outcome::done_with(PrintEdition::Typeset {
                    pages: report.pages,
                    pdf_bytes: printed.pdf_bytes,
                }))
            }
            Some(failure) => {
                tracing::warn!(for_author = true, code = %failure.code, reason = %failure.message, "no print edition; the ebooks publish without it");
                Ok(Outcome::Discard(failure.message))
            }
        }
    }
}

/// What `package_pdf` made of the print edition, its job's result. The print report itself,
/// with the warnings, is stored beside the book (`keys::print_report`, [`Printed`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PrintEdition {
    Typeset {
        pages: Option<u32>,
        pdf_bytes: Option<u64>,
    },
    /// The operator turned print editions off (`PRINT_EDITION`).
    Off { print_edition: bool },
}

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
    print::use_operator_fonts(config);
    CHILD.main(config, |request: Request, blobs| async move {
        print_and_store(&blobs, &request.book).await
    })
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
