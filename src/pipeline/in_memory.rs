//! The whole conversion in one process, in memory: the pipeline's stages in a row, with no
//! storage in between, for `bindery convert`, tests and benchmarks. The stages are those of
//! `convert`, named as the step table (`steps::STEPS`) names them in memory.

use std::time::Instant;

use super::steps::{
    Ingest, PackageEpub, PackageReader, Parse, RenderChapter, Typeset, Verify, in_memory_name,
};
use crate::convert::{
    Assembled, Options, Resources, assemble, ingest, package_epub, package_reader, verify_epub,
};
use crate::ebook::xhtml::{self, Target};
use crate::ebook::{Book, PrintEdition};
use crate::manuscript::{InputError, Limits};
use crate::paperback::Edition;
use crate::print::{self, PrintError, PrintOptions};
use crate::report::{Report, StepTiming};

pub const INGEST: &str = in_memory_name::<Ingest>();
pub const PARSE: &str = in_memory_name::<Parse>();
pub const PACKAGE_PDF: &str = in_memory_name::<Typeset>();
/// Every chapter, in one pass.
pub const RENDER: &str = in_memory_name::<RenderChapter>();
pub const PACKAGE_EPUB: &str = in_memory_name::<PackageEpub>();
pub const PACKAGE_READER: &str = in_memory_name::<PackageReader>();
pub const VERIFY: &str = in_memory_name::<Verify>();

/// The whole conversion in memory, for `bindery convert`, tests and benchmarks.
pub struct Converted {
    pub book: Book,
    pub epub: Vec<u8>,
    /// The web reader's files, when asked for.
    pub reader: Option<Vec<(String, Vec<u8>)>>,
    /// The images' bytes by image id, and the cover's, for a writer run after these (the
    /// print cover).
    pub resources: Resources,
    /// The print editions, when asked for, in the order the book lists them: each typeset, or
    /// why it could not be. The ebooks mark the reference edition's pages.
    pub print: Vec<MadeEdition>,
    pub report: Report,
}

/// One print edition of the book, made or refused.
#[derive(Debug)]
pub struct MadeEdition {
    pub edition: Edition,
    pub options: PrintOptions,
    pub made: Result<print::PrintEdition, PrintError>,
}

impl Converted {
    /// The edition the ebooks' page list follows, when it was asked for.
    pub fn reference(&self) -> Option<&MadeEdition> {
        let wanted = self.book.metadata.reference_edition();
        self.print.iter().find(|e| e.edition == wanted)
    }
}

/// What to make beside the EPUB.
#[derive(Debug, Clone, Copy, Default)]
pub struct Extras<'a> {
    /// The web reader, linking out as it says (`Links::default()` for a site that stands
    /// alone; the service's links, `steps::packaging::reader_links`, to match what the pipeline makes).
    pub reader: Option<&'a crate::ebook::reader::Links>,
    /// The print edition, whose pages the ebooks then mark.
    pub print: bool,
    /// The files of the house style the book may choose (`Options::house_styles`).
    pub house_files: &'a [crate::style::house::File],
}

/// Runs every stage; `progress(step, done, total)` is called as work advances.
pub fn convert(
    manuscript: &[u8],
    cover_upload: Option<(&str, &[u8])>,
    options: &Options,
    limits: &Limits,
    default_language: &str,
    extras: Extras<'_>,
    mut progress: impl FnMut(&str, usize, usize),
) -> Result<Converted, ConvertError> {
    let Extras {
        reader,
        print,
        house_files,
    } = extras;
    let mut timings = Vec::new();
    let mut timed = |step: &str, started: Instant| {
        timings.push(StepTiming {
            step: step.to_owned(),
            millis: started.elapsed().as_millis() as u64,
        });
    };

    let t = Instant::now();
    progress(INGEST, 0, 1);
    let ingested = ingest(manuscript, options, limits)?;
    timed(INGEST, t);

    let t = Instant::now();
    progress(PARSE, 0, 1);
    let Assembled {
        mut book,
        mut resources,
        mut report,
    } = assemble(
        &ingested,
        manuscript,
        cover_upload,
        options,
        limits,
        default_language,
    )?;
    for file in house_files {
        if book.style_files.contains(&file.name) {
            resources.insert(
                crate::style::house::resource_id(&file.name),
                file.bytes.to_vec(),
            );
        }
    }
    timed(PARSE, t);

    // The print edition before the chapters are written: the ebooks mark where its pages
    // begin. It is an extra: when it cannot be made, the ebooks are made without it.
    let mut made = Vec::new();
    if print {
        let t = Instant::now();
        let editions = book.metadata.editions.0.clone();
        let reference = book.metadata.reference_edition();
        for (k, edition) in editions.iter().enumerate() {
            progress(PACKAGE_PDF, k, editions.len());
            let options = PrintOptions::of_edition(&book.metadata, *edition);
            let style = print::edition_style(&book.style, &book.metadata, *edition);
            let typeset =
                print::typeset(&book.document, &resources, &book.metadata, &options, &style);
            if let Ok(typeset) = &typeset {
                let at = print::where_printed(&book.metadata, *edition);
                for warning in &typeset.warnings {
                    report.warn(warning.clone().at(at.clone()));
                }
            }
            made.push(MadeEdition {
                edition: *edition,
                options,
                made: typeset,
            });
        }
        if let Some(Ok(typeset)) = made
            .iter()
            .find(|m| m.edition == reference)
            .map(|m| &m.made)
        {
            book.mark_print_pages(
                PrintEdition::of(&book.metadata, reference),
                &typeset.page_starts,
            );
        }
        timed(PACKAGE_PDF, t);
    }
    let print = made;

    let t = Instant::now();
    let n = book.document.chapters.len();
    progress(RENDER, 0, n);
    // One pass plans every id in the book; the pipeline's per-chapter jobs each redo it.
    let mut epub_chapters = Vec::with_capacity(n);
    for (i, rendered) in xhtml::render_book(&book, Target::Epub)
        .into_iter()
        .enumerate()
    {
        for w in rendered.warnings {
            report.warn(w.at(format!("chapter {}", i + 1)));
        }
        epub_chapters.push(rendered.body);
    }
    let web_chapters: Vec<String> = if reader.is_some() {
        xhtml::render_book(&book, Target::Web)
            .into_iter()
            .map(|r| r.body)
            .collect()
    } else {
        Vec::new()
    };
    progress(RENDER, n, n);
    timed(RENDER, t);

    let t = Instant::now();
    progress(PACKAGE_EPUB, 0, 1);
    let epub = package_epub(&book, &epub_chapters, &resources).map_err(ConvertError::Internal)?;
    timed(PACKAGE_EPUB, t);

    let reader = if let Some(links) = reader {
        let t = Instant::now();
        progress(PACKAGE_READER, 0, 1);
        let files = package_reader(&book, &web_chapters, &resources, links)
            .map_err(ConvertError::Internal)?;
        timed(PACKAGE_READER, t);
        Some(files)
    } else {
        None
    };

    let t = Instant::now();
    progress(VERIFY, 0, 1);
    verify_epub(&epub).map_err(|e| {
        ConvertError::Internal(anyhow::anyhow!("the EPUB failed its self-check: {e}"))
    })?;
    timed(VERIFY, t);

    report.timings = timings;
    Ok(Converted {
        book,
        epub,
        reader,
        resources,
        print,
        report,
    })
}

#[derive(Debug, thiserror::Error)]
pub enum ConvertError {
    /// The manuscript (or an option) cannot work; the message is for the author.
    #[error("{0}")]
    Input(#[from] InputError),
    /// Bindery failed; not the author's fault.
    #[error("internal error: {0:#}")]
    Internal(anyhow::Error),
}
