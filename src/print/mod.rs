//! The print edition: a press-ready interior PDF of the book, typeset in process by Typst.
//!
//! [`typeset`] writes the document model as Typst source (`template` and `markup`: all the
//! manuscript's text as string literals, so no manuscript can run Typst), lays it out in a
//! world that holds only that source, the bundled fonts and the book's images (`world`), and
//! exports the PDF (`boxes` adds the trim and bleed boxes when the pages bleed).
//!
//! It takes more than one pass, with no introspection inside the template: the first pass
//! lays the book out with a gutter guessed from its length, and yields the page count, where
//! each chapter opened and which pages are empty (`pages`). If the count wants another gutter
//! (the printer's table, `printers::Rules::inside_margin`), the book is laid out again with it. The last pass prints
//! what the earlier one learnt as data: the contents' page numbers, the folios, and which
//! pages carry a running head. Each page's first glyph of the book's text, traced through its
//! span to the literal it came from, gives the [`PageStart`]s the ebook marks.

mod assemble;
mod barcode;
mod cover;
mod equations;
mod error;
mod fonts;
mod glyphs;
mod line;
mod markup;
mod pages;
mod pdfx;
pub mod pieces;
mod preflight;
mod preview;
mod strings;
mod style;
pub(crate) mod template;
#[cfg(test)]
mod tests;
pub mod trim;
mod world;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use typst::WorldExt;
use typst::diag::{SourceDiagnostic, Warned};
use typst::foundations::{Datetime, Smart};
use typst::layout::PagedDocument;
use typst_pdf::{PdfOptions, Timestamp};

use crate::document::Document;
use crate::document::positions::PageStart;
use crate::ebook::BookMetadata;
use crate::paperback::{Binding, Edition, Printer};
use crate::report::Warning;

pub use cover::{PrintCover, cover, cover_size};
pub use error::PrintError;
pub use fonts::{Listing, announce_operator_fonts, list_fonts, use_fonts_from, use_operator_fonts};
pub use trim::{MAX_PAGES, Paper, Trim, UnknownPaper, UnknownTrim};

pub use fonts::FontNeeds;
pub use glyphs::Glyphs;
pub use line::{SetLine, set_line};
pub use pages::roman;
pub use pieces::{Bare, Book, Layout, Measured, Paginated, Plan, SetInfo, SetPiece};
pub use preflight::{failed_rules, preflight};
pub use preview::{Previews, previews};

use world::BookWorld;

/// What the author chose for the paperback.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PrintOptions {
    pub trim: Trim,
    /// 0.125 in of bleed beyond the trim on the outside edges (and the spine's, for a printer
    /// that asks for it).
    pub bleed: bool,
    /// The paper, for the spine's width.
    pub paper: Paper,
    /// The printer the edition is made for: its inside margins, spine and bookmarks follow
    /// that printer's rules (KDP's when none is named).
    pub printer: Printer,
    /// Which of the book's print editions this is.
    pub edition: Edition,
}

impl PrintOptions {
    /// What the book's metadata asks for its reference edition (the one the ebooks' page
    /// list follows).
    pub fn of(metadata: &BookMetadata) -> PrintOptions {
        PrintOptions::of_edition(metadata, metadata.reference_edition())
    }

    /// What the book's metadata asks for `edition`: its own trim, else the paperback's; the
    /// book's paper, bleed and printer.
    pub fn of_edition(metadata: &BookMetadata, edition: Edition) -> PrintOptions {
        PrintOptions {
            trim: metadata.trim_of(edition),
            bleed: metadata.bleed,
            paper: metadata.paper,
            printer: metadata.printer,
            edition,
        }
    }

    pub fn binding(&self) -> Binding {
        self.edition.binding()
    }

    /// Whether the pages bleed past the spine edge as well as the outside ones: when they
    /// bleed, for a printer that asks for it.
    pub fn bleed_at_spine(&self) -> bool {
        self.bleed && self.rules().bleed.edges == crate::printers::BleedEdges::All
    }

    /// Whether the interior is made PDF/X-1a: for a printer that names it.
    pub fn wants_pdfx(&self) -> bool {
        self.printer != Printer::None
            && self
                .rules()
                .pdf
                .pdfx
                .as_ref()
                .is_some_and(|x| x.standards.iter().any(|s| s == pdfx::CONFORMANCE))
    }

    /// The rules the edition is made to.
    pub fn rules(&self) -> &'static crate::printers::Rules {
        crate::printers::rules(self.printer)
    }
}

/// A typeset book.
#[derive(Debug, Clone)]
pub struct PrintEdition {
    pub pdf: Vec<u8>,
    pub pages: u32,
    pub trim: Trim,
    pub bleed: bool,
    pub paper: Paper,
    /// The gutter, in inches: what the printer's table asks for at this page count (or the next
    /// band's, where the count straddles two). The inside margin is this plus [`GUTTER_COMFORT`], so
    /// that hanging punctuation and the curve of the binding stay clear of it.
    pub gutter: f64,
    /// Where each page holding the book's text begins, in page order.
    pub page_starts: Vec<PageStart>,
    /// Each physical page's folio, printed or not (`i`, `ii`, …, `1`, `2`, …).
    pub folios: Vec<String>,
    /// What the author should know: low-resolution images, characters no font has, a book too
    /// short for a paperback.
    pub warnings: Vec<Warning>,
    /// How many times each piece was laid out, and how long the whole took.
    pub passes: u32,
    pub layout_time: Duration,
    /// How many pieces it was typeset in.
    pub pieces: u32,
}

/// The style `edition` is set in: the book's own, its body at the large-print size for the
/// large-print edition.
pub fn edition_style(
    style: &crate::style::Style,
    metadata: &BookMetadata,
    edition: Edition,
) -> crate::style::Style {
    let mut style = style.clone();
    if edition == Edition::LargePrint {
        style.body.size = Some(crate::style::Points(metadata.large_print_size.0));
    }
    style
}

/// Whether editions `a` and `b` of a book have the same interior, page for page: the same trim,
/// paper, bleed and printer, in the same style (neither is the large-print edition). A
/// hardcover at the paperback's trim is; its binding changes only its cover and its checks.
pub fn same_interior(metadata: &BookMetadata, a: Edition, b: Edition) -> bool {
    let (x, y) = (
        PrintOptions::of_edition(metadata, a),
        PrintOptions::of_edition(metadata, b),
    );
    a != Edition::LargePrint
        && b != Edition::LargePrint
        && (x.trim, x.paper, x.bleed, x.printer) == (y.trim, y.paper, y.bleed, y.printer)
}

/// Where a print edition's warning is, in the report: `print edition`, or, for a book of more
/// than one, `hardcover edition`.
pub fn where_printed(metadata: &BookMetadata, edition: Edition) -> String {
    if metadata.editions.0.len() > 1 {
        format!("{} edition", edition.label())
    } else {
        "print edition".to_owned()
    }
}

/// The named destination (in the catalog's `/Names` `/Dests` tree) of the interior's copyright
/// page, the title page's verso: where an advance reader copy's line is printed
/// (`advance_copies::stamp`).
pub const COPYRIGHT_DESTINATION: &str = "bindery-copyright";

/// Inches added to the printer's least inside margin.
pub const GUTTER_COMFORT: f64 = 0.125;

/// Typesets `document` as a paperback interior, in this process: the pieces laid out on as
/// many threads as there are processors, through the same stages the worker runs as jobs
/// ([`pieces`]). `resources` holds the images' bytes by image id; `metadata` is the book's
/// final metadata (the front matter and running heads come from it).
pub fn typeset(
    document: &Document,
    resources: &BTreeMap<String, Vec<u8>>,
    metadata: &BookMetadata,
    options: &PrintOptions,
    style: &crate::style::Style,
) -> Result<PrintEdition, PrintError> {
    let started = Instant::now();
    let book = Book {
        document,
        resources,
        metadata,
        options,
        style,
    };
    let plan = pieces::plan(book)?;
    let mut gutter = plan.gutter;
    let mut round = 1;
    // Each piece's bare layout is kept for its setting: in one process it is laid out once.
    let (layout, bare) = loop {
        let (measured, bare): (Vec<Measured>, Vec<Bare>) = in_parallel(plan.pieces(), |k| {
            pieces::measure_keeping(book, &plan, k, gutter)
        })?
        .into_iter()
        .unzip();
        match pieces::paginate(&plan, &measured, round)? {
            Paginated::Again { gutter: wanted } => {
                gutter = wanted;
                round += 1;
            }
            Paginated::Settled(layout) => break (layout, bare),
        }
    };
    let bare: Vec<std::sync::Mutex<Option<Bare>>> = bare
        .into_iter()
        .map(|b| std::sync::Mutex::new(Some(b)))
        .collect();
    let set = in_parallel(plan.pieces(), |k| {
        let kept = bare[k].lock().unwrap_or_else(|e| e.into_inner()).take();
        pieces::set(book, &plan, &layout, k, kept)
    })?;
    let (pdfs, infos): (Vec<Vec<u8>>, Vec<SetInfo>) =
        set.into_iter().map(|piece| (piece.pdf, piece.info)).unzip();
    let mut edition = assemble(book, &plan, &layout, &pdfs, infos)?;
    edition.layout_time = started.elapsed();
    Ok(edition)
}

/// `f` of every piece from 0 to `count`, on as many threads as there are processors, in
/// piece order; the first error (in piece order) if any failed.
fn in_parallel<T: Send>(
    count: usize,
    f: impl Fn(usize) -> Result<T, PrintError> + Sync,
) -> Result<Vec<T>, PrintError> {
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZero::get)
        .min(count.max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: std::sync::Mutex<Vec<Option<Result<T, PrintError>>>> =
        std::sync::Mutex::new((0..count).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if k >= count {
                        break;
                    }
                    let result = f(k);
                    results.lock().unwrap_or_else(|e| e.into_inner())[k] = Some(result);
                }
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(PrintError::Typeset("a piece was not laid out".into()))))
        .collect()
}

/// The interior from its set pieces' PDFs and what setting them learnt, in piece order.
pub fn assemble(
    book: Book<'_>,
    plan: &Plan,
    layout: &Layout,
    pdfs: &[Vec<u8>],
    infos: Vec<SetInfo>,
) -> Result<PrintEdition, PrintError> {
    let Book {
        document,
        metadata,
        options,
        ..
    } = book;
    let mut warnings: Vec<Warning> = layout.warnings.clone();
    let mut page_starts = Vec::new();
    for (k, info) in infos.into_iter().enumerate() {
        if Some(info.pages) != layout.placement(k).map(|(_, count)| count) {
            warnings.push(pieces::unsettled());
        }
        page_starts.extend(info.page_starts);
        for warning in info.warnings {
            if !warnings.contains(&warning) {
                warnings.push(warning);
            }
        }
    }
    // A printer that refuses bookmarks gets none; without one named, they help a proofreader.
    let refused = options.printer != Printer::None && options.rules().pdf.no_bookmarks.is_some();
    let bookmarks = if refused {
        Vec::new()
    } else {
        bookmarks(document, metadata, layout)
    };
    let bleed = options.bleed.then(|| assemble::Bleed {
        points: trim::BLEED_INCHES * 72.0,
        at_spine: options.bleed_at_spine(),
        bound_on_right: crate::language::Direction::of(&metadata.language)
            == crate::language::Direction::RightToLeft,
    });
    let pdfx = options.wants_pdfx().then(|| assemble::PdfX {
        title: metadata.title.clone(),
        date: pdf_date(&metadata.modified),
    });
    let marks = assemble::Marks {
        folios: layout.folios(),
        bookmarks: &bookmarks,
        copyright: layout.copyright,
    };
    let assembled = assemble::assemble(pdfs, &marks, bleed, pdfx.as_ref())
        .map_err(|e| PrintError::Pdf(format!("assembling the pieces: {e:#}")))?;
    if let Some(reason) = &assembled.pdfx_refused {
        tracing::warn!(%reason, "the interior could not be made PDF/X-1a");
        warnings.push(Warning::new(
            "print_not_pdfx",
            format!(
                "The interior is a plain PDF, not the {} {} asks for: {reason}. The printer \
                 takes it, and checks it itself.",
                pdfx::CONFORMANCE,
                options.printer.label()
            ),
        ));
    }
    let pdf = assembled.pdf;
    let pages = layout.pages as u32;
    warnings.extend(trim::page_count_warnings(pages, options));
    Ok(PrintEdition {
        pdf,
        pages,
        trim: options.trim,
        bleed: options.bleed,
        paper: options.paper,
        gutter: layout.gutter,
        page_starts,
        folios: layout.folios().to_vec(),
        warnings,
        passes: layout.rounds + 1,
        layout_time: Duration::ZERO,
        pieces: plan.pieces() as u32,
    })
}

/// The images chapters `chapters` and the notes print, by id.
pub fn images_in(document: &Document, chapters: std::ops::Range<usize>) -> BTreeSet<String> {
    use crate::document::{Block, Inline};
    use crate::ebook::xhtml::ids::{Node, visit_blocks};
    let mut images = BTreeSet::new();
    let mut look = |node: Node<'_>| match node {
        Node::Block(Block::Figure { image, .. }) | Node::Inline(Inline::Image { image, .. }) => {
            images.insert(image.clone());
        }
        _ => {}
    };
    for chapter in document.chapters.get(chapters).unwrap_or(&[]) {
        visit_blocks(&chapter.blocks, &mut look);
    }
    for note in &document.notes {
        visit_blocks(&note.blocks, &mut look);
    }
    images
}

/// The outline: the contents, and every chapter by its title (and subtitle), at its opening.
fn bookmarks(
    document: &Document,
    metadata: &BookMetadata,
    layout: &Layout,
) -> Vec<assemble::Bookmark> {
    let mut marks = Vec::new();
    let arrangement = template::Arrangement::of(document);
    for (chapter, page) in &layout.openings {
        if *chapter == arrangement.listed.start
            && let Some(contents) = layout.contents
        {
            marks.push(assemble::Bookmark {
                title: metadata
                    .labels()
                    .get(crate::labels::Key::Contents)
                    .to_owned(),
                page: contents,
            });
        }
        let Some(c) = document.chapters.get(*chapter) else {
            continue;
        };
        let mut title = if c.title.trim().is_empty() {
            (chapter + 1).to_string()
        } else {
            c.title.clone()
        };
        if let Some(subtitle) = crate::document::chapters::subtitle(c) {
            title = format!("{title}: {subtitle}");
        }
        marks.push(assemble::Bookmark { title, page: *page });
    }
    marks
}

fn compile(
    world: &BookWorld<'_>,
    warnings: &mut Vec<Warning>,
) -> Result<PagedDocument, PrintError> {
    let Warned {
        output,
        warnings: diagnostics,
    } = typst::compile::<PagedDocument>(world);
    let mut seen = BTreeSet::new();
    for diagnostic in diagnostics.iter() {
        if seen.insert(diagnostic.message.clone()) {
            warnings.push(Warning::new(
                "print_typesetting",
                format!("Typesetting: {}.", diagnostic.message),
            ));
        }
    }
    output.map_err(|errors| PrintError::Typeset(describe(world, &errors)))
}

/// Typst's errors with the stretch of generated source each points at.
fn describe(world: &BookWorld<'_>, errors: &[SourceDiagnostic]) -> String {
    errors
        .iter()
        .take(3)
        .map(|e| {
            let text = world.source().text();
            let at = world.range(e.span).map(|r| {
                let from = text.floor_char_boundary(r.start.saturating_sub(30));
                let to = text.ceil_char_boundary((r.end + 30).min(text.len()));
                format!(" (at `{}`)", text[from..to].replace('\n', " "))
            });
            let hints: String = e.hints.iter().map(|h| format!("; hint: {h}")).collect();
            format!("{}{}{hints}", e.message, at.unwrap_or_default())
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Why letters of the book have no face: their scripts, what Bindery prints them in, and what
/// to do.
pub(crate) fn missing_letters(letters: &BTreeSet<char>) -> String {
    let sample = named(letters, 8);
    let scripts: BTreeSet<&crate::script_fonts::Script> = letters
        .iter()
        .filter_map(|c| crate::script_fonts::Script::of(*c))
        .collect();
    if scripts.is_empty() {
        format!(
            "the print edition has no typeface for letters of the book ({sample}); the ebooks are \
             made. Ask the server's operator to add a font that has them to FONTS_DIR, then \
             upload the book again"
        )
    } else {
        crate::script_fonts::missing_script_message(
            &scripts.into_iter().collect::<Vec<_>>(),
            &sample,
        )
    }
}

pub(crate) fn missing_glyphs(missing: &BTreeSet<char>) -> Warning {
    let more = if missing.len() > 20 { ", …" } else { "" };
    Warning::new(
        "print_missing_glyphs",
        format!(
            "The print edition's fonts cannot draw {} character(s) of the book ({}{more}); they print as empty boxes. The operator can add a font that has them to FONTS_DIR.",
            missing.len(),
            named(missing, 20)
        ),
    )
}

/// The first `most` of `chars`, each with its code point, as the author reads them:
/// `、 U+3001, 日 U+65E5`.
fn named(chars: &BTreeSet<char>, most: usize) -> String {
    chars
        .iter()
        .take(most)
        .map(|c| format!("{c} U+{:04X}", u32::from(*c)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `document` as a PDF, untagged: a printer reads none of a structure tree, the pieces'
/// trees could not be joined into the book's, and the ebooks are the accessible editions.
fn export(document: &PagedDocument, metadata: &BookMetadata) -> Result<Vec<u8>, PrintError> {
    let timestamp = parse_modified(&metadata.modified)
        .or_else(|| Datetime::from_ymd_hms(2026, 1, 1, 0, 0, 0))
        .map(Timestamp::new_utc);
    let pdf_options = PdfOptions {
        // The book's own identifier: stable between runs, unique between books.
        ident: Smart::Custom(&metadata.identifier),
        timestamp,
        tagged: false,
        ..PdfOptions::default()
    };
    typst_pdf::pdf(document, &pdf_options).map_err(|errors| {
        PrintError::Pdf(
            errors
                .iter()
                .map(|e| e.message.to_string())
                .collect::<Vec<_>>()
                .join("; "),
        )
    })
}

/// `2024-05-01T12:00:00Z` as a PDF date (`D:20240501120000Z`); the start of 2026 when the book
/// has no date of its own, as its timestamp has.
fn pdf_date(modified: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(modified)
        .map(|t| t.with_timezone(&chrono::Utc))
        .unwrap_or_else(|_| {
            chrono::DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
                .expect("a date")
                .with_timezone(&chrono::Utc)
        })
        .format("D:%Y%m%d%H%M%SZ")
        .to_string()
}

/// `2024-05-01T12:00:00Z` as Typst's datetime.
fn parse_modified(modified: &str) -> Option<Datetime> {
    let t = chrono::DateTime::parse_from_rfc3339(modified).ok()?;
    use chrono::{Datelike, Timelike};
    Datetime::from_ymd_hms(
        t.year(),
        u8::try_from(t.month()).ok()?,
        u8::try_from(t.day()).ok()?,
        u8::try_from(t.hour()).ok()?,
        u8::try_from(t.minute()).ok()?,
        u8::try_from(t.second()).ok()?,
    )
}
