//! The print edition's child process, `bindery print-book` (see [`crate::pipeline::child`]):
//! Typst's memory grows with what it lays out and nothing can cancel it, so every stage that
//! lays anything out runs here, limited to `WORKER_MEMORY_BUDGET`: measuring a piece, setting
//! it, and assembling the interior (with the print cover and the pagination). Each request
//! reads what it needs from the blob store and writes what it makes there, at keys of its
//! own, create-if-absent; its answer is what the step's job keeps as its result.
//!
//! A stage the book itself cannot pass (a limit hit, a letter no font draws) answers
//! [`Answer::Refused`], with the reason the author reads: the print edition is given up, and
//! the ebooks publish without it.

use std::collections::BTreeMap;
use std::future::Future;
use std::process::ExitCode;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use super::stored;
use crate::books::{RevisionId, keys};
use crate::config::Config;
use crate::ebook::{Book, BookMetadata, Pagination};
use crate::manuscript::InputError;
use crate::paperback::Edition;
use crate::pipeline::child::{Child, Ran};
use crate::print::{self, Layout, Measured, Plan, PrintOptions, SetInfo};
use crate::report::{PrintFailure, PrintReport, Warning};
use crate::storage::BlobStore;

/// The hidden subcommand the worker runs.
pub const SUBCOMMAND: &str = "print-book";

const CHILD: Child = Child {
    subcommand: SUBCOMMAND,
    work: "typesetting the print edition",
};

/// What the child is asked to do for a book.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Request {
    /// Lay piece `piece` of `edition` out bare, with `gutter` (`print::pieces::measure`).
    Measure {
        revision: RevisionId,
        #[serde(default)]
        edition: Edition,
        piece: usize,
        gutter: f64,
    },
    /// Set piece `piece` of `edition` for print, as the stored layout says, and store its PDF.
    Set {
        revision: RevisionId,
        #[serde(default)]
        edition: Edition,
        piece: usize,
    },
    /// The whole print edition in this one child, as releases before the pieces made it: for a
    /// book whose pipeline an older release began (its join waits on this step alone).
    Whole { revision: RevisionId },
    /// Make `edition` from the interior of `from`, made before it and set exactly alike (the
    /// same trim, paper, bleed, printer and style: a hardcover at the paperback's trim): its own
    /// cover and printer check on the same pages.
    Reuse {
        revision: RevisionId,
        edition: Edition,
        from: Edition,
    },
    /// Assemble the stored pieces of `edition` into its interior, and make its cover and
    /// pagination; `pieces` is what setting each piece learnt, in piece order.
    Assemble {
        revision: RevisionId,
        #[serde(default)]
        edition: Edition,
        pieces: Vec<SetInfo>,
    },
}

impl Request {
    fn revision(&self) -> &RevisionId {
        match self {
            Request::Measure { revision, .. }
            | Request::Set { revision, .. }
            | Request::Whole { revision }
            | Request::Reuse { revision, .. }
            | Request::Assemble { revision, .. } => revision,
        }
    }
}

/// What the child answers.
// Externally tagged: serde reads an internally tagged enum through a buffer that cannot give
// a map's keys back as numbers (the glyphs' faces and ids).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    Measured(Box<Measured>),
    Set(SetInfo),
    Assembled(Box<Printed>),
    /// The book cannot have a print edition: why, for its author.
    Refused {
        code: String,
        message: String,
    },
}

/// What the print edition came to, stored for the report (`keys::print_report`): its size, or
/// why it could not be made, and its warnings.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Printed {
    pub report: PrintReport,
    pub warnings: Vec<Warning>,
    /// The interior's size, when it was made.
    pub pdf_bytes: Option<u64>,
}

impl Printed {
    /// No print edition `edition`, for `code`'s reason: what `metadata` asked for, and the
    /// failure.
    pub fn refused(
        metadata: &BookMetadata,
        edition: Edition,
        code: &str,
        message: String,
    ) -> Printed {
        Printed {
            report: PrintReport {
                failure: Some(PrintFailure {
                    code: code.to_owned(),
                    message,
                }),
                ..asked(metadata, edition)
            },
            warnings: Vec::new(),
            pdf_bytes: None,
        }
    }
}

/// What the book asked for of `edition`, before anything is typeset.
pub fn asked(metadata: &BookMetadata, edition: Edition) -> PrintReport {
    let options = PrintOptions::of_edition(metadata, edition);
    PrintReport {
        edition,
        trim: options.trim.name().to_owned(),
        paper: options.paper.name().to_owned(),
        bleed: options.bleed,
        pages: None,
        gutter_inches: None,
        spine_inches: None,
        failure: None,
        printer_check: None,
    }
}

/// Runs the child and waits for it. `Err` is a failure worth retrying; a limit that stopped
/// it is a refusal, which names what it was doing (`work`, asked only then: "chapters 12 to
/// 15").
pub async fn run<W: Future<Output = String>>(
    config: &Config,
    request: &Request,
    work: impl FnOnce() -> W,
) -> anyhow::Result<Answer> {
    Ok(
        match CHILD.run(config, &request.revision().book, request).await? {
            Ran::Answered(answer) => answer,
            // A piece is a chapter or a run of them: what did not fit is named, with what the
            // author can do about it.
            Ran::Stopped(error @ InputError::OutOfMemory { .. }) => Answer::Refused {
                code: error.code().to_owned(),
                message: format!(
                    "typesetting {} of the print edition needed more memory than the server \
                 allows one book (WORKER_MEMORY_BUDGET); the print edition is typeset a chapter \
                 or a few at a time, so give a chapter this long headings where its parts \
                 begin, or ask the operator to raise the limit. The ebooks are made",
                    work().await
                ),
            },
            Ran::Stopped(error) => Answer::Refused {
                code: error.code().to_owned(),
                message: format!("{error} ({})", work().await),
            },
        },
    )
}

/// What a refusal of the whole book names.
pub async fn whole_book() -> String {
    "the whole book".to_owned()
}

/// The child: does what its [`Request`] asks.
pub fn child_main(config: &Config) -> ExitCode {
    print::use_operator_fonts(config);
    CHILD.main(config, |request: Request, blobs| async move {
        serve(&blobs, request).await
    })
}

async fn serve(blobs: &BlobStore, request: Request) -> anyhow::Result<Answer> {
    match request {
        Request::Measure {
            revision,
            edition,
            piece,
            gutter,
        } => {
            let (stored, plan) = (
                stored::parsed(blobs, &revision).await?,
                plan(blobs, &revision, edition).await?,
            );
            let resources = images(blobs, &revision, &stored, plan.chapters(piece)).await?;
            let options = PrintOptions::of_edition(&stored.metadata, edition);
            let style = print::edition_style(&stored.style, &stored.metadata, edition);
            let input = print_book(&stored, &resources, &options, &style);
            Ok(match print::pieces::measure(input, &plan, piece, gutter) {
                Ok(measured) => Answer::Measured(Box::new(measured)),
                Err(e) => refused(&e),
            })
        }
        Request::Set {
            revision,
            edition,
            piece,
        } => {
            let (stored, plan) = (
                stored::parsed(blobs, &revision).await?,
                plan(blobs, &revision, edition).await?,
            );
            let layout: Layout =
                serde_json::from_slice(&blobs.get(&keys::print_layout(&revision, edition)).await?)
                    .context("reading the print edition's layout")?;
            let resources = images(blobs, &revision, &stored, plan.chapters(piece)).await?;
            let options = PrintOptions::of_edition(&stored.metadata, edition);
            let style = print::edition_style(&stored.style, &stored.metadata, edition);
            let input = print_book(&stored, &resources, &options, &style);
            Ok(
                match print::pieces::set(input, &plan, &layout, piece, None) {
                    Ok(set) => {
                        blobs
                            .put_if_absent(&keys::print_piece(&revision, edition, piece), set.pdf)
                            .await?;
                        Answer::Set(set.info)
                    }
                    Err(e) => refused(&e),
                },
            )
        }
        Request::Whole { revision } => whole(blobs, &revision).await,
        Request::Reuse {
            revision,
            edition,
            from,
        } => reuse(blobs, &revision, edition, from).await,
        Request::Assemble {
            revision,
            edition,
            pieces,
        } => assemble(blobs, &revision, edition, pieces).await,
    }
}

/// Answers a refusal, and logs what Typst said of a book it refused for the operator alone
/// (the child's lines reach the worker's log as fields, never the book's): it quotes the
/// generated source.
fn refused(error: &print::PrintError) -> Answer {
    log_detail(error);
    Answer::Refused {
        code: error.code().to_owned(),
        message: error.to_string(),
    }
}

fn log_detail(error: &print::PrintError) {
    if let Some(detail) = error.detail() {
        tracing::warn!(
            code = error.code(),
            detail,
            "the print edition could not be made"
        );
    }
}

fn print_book<'a>(
    stored: &'a Book,
    resources: &'a BTreeMap<String, Vec<u8>>,
    options: &'a PrintOptions,
    style: &'a crate::style::Style,
) -> print::Book<'a> {
    print::Book {
        document: &stored.document,
        resources,
        metadata: &stored.metadata,
        options,
        style,
    }
}

pub(super) async fn plan(
    blobs: &BlobStore,
    revision: &RevisionId,
    edition: Edition,
) -> anyhow::Result<Plan> {
    serde_json::from_slice(&blobs.get(&keys::print_plan(revision, edition)).await?)
        .context("reading the print edition's plan")
}

/// The images `chapters` (and the notes) print, and the house style's files: a piece holds
/// only its own images in memory, and every piece the same faces.
async fn images(
    blobs: &BlobStore,
    revision: &RevisionId,
    stored: &Book,
    chapters: std::ops::Range<usize>,
) -> anyhow::Result<BTreeMap<String, Vec<u8>>> {
    let mut resources = BTreeMap::new();
    let style_files = stored
        .style_files
        .iter()
        .map(|file| crate::style::house::resource_id(file));
    for name in print::images_in(&stored.document, chapters)
        .into_iter()
        .chain(style_files)
    {
        let bytes = blobs.get(&keys::resource(revision, &name)).await?;
        resources.insert(name, bytes.to_vec());
    }
    Ok(resources)
}

/// The whole print edition, laid out here piece after piece.
async fn whole(blobs: &BlobStore, revision: &RevisionId) -> anyhow::Result<Answer> {
    let stored = stored::parsed(blobs, revision).await?;
    let everything = 0..stored.document.chapters.len();
    let mut resources = images(blobs, revision, &stored, everything).await?;
    let front = stored.cover.as_ref().map(|c| c.file_name.clone());
    if let Some(name) = &front {
        resources.insert(
            name.clone(),
            blobs.get(&keys::resource(revision, name)).await?.to_vec(),
        );
    }
    let options = PrintOptions::of(&stored.metadata);
    let style = print::edition_style(&stored.style, &stored.metadata, options.edition);
    match print::typeset(
        &stored.document,
        &resources,
        &stored.metadata,
        &options,
        &style,
    ) {
        Ok(edition) => finish(blobs, revision, &stored, &resources, &options, edition).await,
        Err(e) => Ok(refused(&e)),
    }
}

/// `edition` on the interior `from` was made with: its own cover and check.
async fn reuse(
    blobs: &BlobStore,
    revision: &RevisionId,
    edition: Edition,
    from: Edition,
) -> anyhow::Result<Answer> {
    let stored = stored::parsed(blobs, revision).await?;
    let made: Printed =
        serde_json::from_slice(&blobs.get(&keys::print_report(revision, from)).await?)
            .context("reading the print report of the edition reused")?;
    let (Some(pages), Some(gutter)) = (made.report.pages, made.report.gutter_inches) else {
        anyhow::bail!(
            "the {} edition was not made, so there is nothing to reuse",
            from.label()
        );
    };
    let pdf = blobs.get(&keys::pdf(revision, from)).await?.to_vec();
    let options = PrintOptions::of_edition(&stored.metadata, edition);
    let typeset = print::PrintEdition {
        pdf,
        pages,
        trim: options.trim,
        bleed: options.bleed,
        paper: options.paper,
        gutter,
        // The ebooks mark the reference edition's pages, which is never one reused.
        page_starts: Vec::new(),
        folios: Vec::new(),
        warnings: print::trim::page_count_warnings(pages, &options),
        passes: 0,
        layout_time: std::time::Duration::ZERO,
        pieces: 0,
    };
    let mut resources = BTreeMap::new();
    if let Some(name) = stored.cover.as_ref().map(|c| c.file_name.clone()) {
        let bytes = blobs.get(&keys::resource(revision, &name)).await?.to_vec();
        resources.insert(name, bytes);
    }
    finish(blobs, revision, &stored, &resources, &options, typeset).await
}

/// The interior from its pieces, the cover, and the pagination: stored, and answered as the
/// print report. The pagination is stored last: its presence says the print edition is whole.
async fn assemble(
    blobs: &BlobStore,
    revision: &RevisionId,
    edition: Edition,
    infos: Vec<SetInfo>,
) -> anyhow::Result<Answer> {
    let stored = stored::parsed(blobs, revision).await?;
    let plan = plan(blobs, revision, edition).await?;
    let layout: Layout =
        serde_json::from_slice(&blobs.get(&keys::print_layout(revision, edition)).await?)
            .context("reading the print edition's layout")?;
    let mut pdfs = Vec::with_capacity(plan.pieces());
    for k in 0..plan.pieces() {
        pdfs.push(
            blobs
                .get(&keys::print_piece(revision, edition, k))
                .await?
                .to_vec(),
        );
    }
    let metadata = &stored.metadata;
    let options = PrintOptions::of_edition(metadata, edition);
    let style = print::edition_style(&stored.style, metadata, edition);
    let front = stored.cover.as_ref().map(|c| c.file_name.clone());
    let mut resources = BTreeMap::new();
    if let Some(name) = &front {
        resources.insert(
            name.clone(),
            blobs.get(&keys::resource(revision, name)).await?.to_vec(),
        );
    }
    let input = print_book(&stored, &resources, &options, &style);
    let typeset = match print::assemble(input, &plan, &layout, &pdfs, infos) {
        Ok(typeset) => typeset,
        Err(e) => return Ok(refused(&e)),
    };
    drop(pdfs);
    finish(blobs, revision, &stored, &resources, &options, typeset).await
}

/// Stores the interior, its cover and the pagination (last: its presence says the print
/// edition is whole), and answers the print report.
async fn finish(
    blobs: &BlobStore,
    revision: &RevisionId,
    stored: &Book,
    resources: &BTreeMap<String, Vec<u8>>,
    options: &PrintOptions,
    edition: print::PrintEdition,
) -> anyhow::Result<Answer> {
    let metadata = &stored.metadata;
    let options = *options;
    let at = options.edition;
    let front = stored.cover.as_ref().map(|c| c.file_name.as_str());
    let cover = match print::cover(metadata, front, resources, edition.pages, &options) {
        Ok(cover) => cover,
        Err(e) => {
            log_detail(&e);
            return Ok(Answer::Refused {
                code: e.code().to_owned(),
                message: format!("the print cover could not be made: {e}"),
            });
        }
    };
    let printer_check = print::preflight(&edition, Some(&cover), &options)
        .context("reading the print edition back for its printer's check")?;
    let pagination = Pagination {
        edition: crate::ebook::PrintEdition::of(metadata, options.edition),
        pages: edition.page_starts,
    };
    let pdf_bytes = edition.pdf.len() as u64;
    blobs
        .put_if_absent(&keys::pdf(revision, at), edition.pdf)
        .await?;
    blobs
        .put_if_absent(&keys::print_cover(revision, at), cover.pdf)
        .await?;
    // The ebooks mark one edition's pages: the reference edition's.
    if at == metadata.reference_edition() {
        blobs
            .put_if_absent(
                &keys::pagination(revision),
                serde_json::to_vec(&pagination)?,
            )
            .await?;
    }
    let mut warnings = edition.warnings;
    warnings.extend(cover.warnings);
    warnings.extend(printer_check.iter().flat_map(print::failed_rules));
    Ok(Answer::Assembled(Box::new(Printed {
        report: PrintReport {
            pages: Some(edition.pages),
            gutter_inches: Some(edition.gutter),
            spine_inches: Some(cover.spine),
            printer_check,
            ..asked(metadata, at)
        },
        warnings,
        pdf_bytes: Some(pdf_bytes),
    })))
}
