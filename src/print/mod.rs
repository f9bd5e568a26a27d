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
//! (KDP's table, `trim::gutter`), the book is laid out again with it. The last pass prints
//! what the earlier one learnt as data: the contents' page numbers, the folios, and which
//! pages carry a running head. Each page's first glyph of the book's text, traced through its
//! span to the literal it came from, gives the [`PageStart`]s the ebook marks.

mod boxes;
mod cover;
mod equations;
mod error;
mod fonts;
mod markup;
mod pages;
mod strings;
mod template;
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
use crate::report::Warning;

pub use cover::{PrintCover, SPINE_TEXT_PAGES, cover, cover_size};
pub use error::PrintError;
pub use fonts::{Listing, announce_operator_fonts, list_fonts, use_fonts_from, use_operator_fonts};
pub use trim::{MAX_PAGES, Paper, Trim, UnknownPaper, UnknownTrim};

use template::{Arrangement, Generated, PageData};
use trim::PageGeometry;
use world::BookWorld;

/// What the author chose for the paperback.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PrintOptions {
    pub trim: Trim,
    /// 0.125 in of bleed beyond the trim on the outside edges.
    pub bleed: bool,
    /// The paper, for the spine's width.
    pub paper: Paper,
}

impl PrintOptions {
    /// What the book's metadata asks for (`trim`, `bleed`, `paper`).
    pub fn of(metadata: &BookMetadata) -> PrintOptions {
        PrintOptions {
            trim: metadata.trim,
            bleed: metadata.bleed,
            paper: metadata.paper,
        }
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
    /// The gutter, in inches: what KDP's table asks for at this page count (or the next band's,
    /// where the count straddles two). The inside margin is this plus [`GUTTER_COMFORT`], so
    /// that hanging punctuation and the curve of the binding stay clear of it.
    pub gutter: f64,
    /// Where each page holding the book's text begins, in page order.
    pub page_starts: Vec<PageStart>,
    /// Each physical page's folio, printed or not (`i`, `ii`, …, `1`, `2`, …).
    pub folios: Vec<String>,
    /// What the author should know: low-resolution images, characters no font has, a book too
    /// short for a paperback.
    pub warnings: Vec<Warning>,
    /// How many times the book was laid out, and how long that took.
    pub passes: u32,
    pub layout_time: Duration,
}

/// Inches added to KDP's minimum gutter for the inside margin.
pub const GUTTER_COMFORT: f64 = 0.125;

/// A page holds fewer words than this at any trim; a book with more than this many words a
/// page of [`MAX_PAGES`] is refused before it is laid out, which for a very long book would
/// cost seconds and gigabytes to learn the same.
const MOST_WORDS_PER_PAGE: u64 = 600;
/// The same for Chinese and Japanese characters, set solid at 10 pt on the smallest trim
/// (about 30 a line and 32 lines; fewer once headings and breaks are counted).
const MOST_IDEOGRAPHS_PER_PAGE: u64 = 1_200;

/// Layouts before the page count is taken as settled.
const MAX_PASSES: u32 = 4;

/// Typesets `document` as a paperback interior. `resources` holds the images' bytes by image
/// id; `metadata` is the book's final metadata (the front matter and running heads come from
/// it).
pub fn typeset(
    document: &Document,
    resources: &BTreeMap<String, Vec<u8>>,
    metadata: &BookMetadata,
    options: &PrintOptions,
) -> Result<PrintEdition, PrintError> {
    if let Some(refused) = &metadata.print_settings_refused {
        return Err(PrintError::Settings(refused.clone()));
    }
    let counted = crate::document::words_of(document);
    let limit = u64::from(MAX_PAGES) * MOST_WORDS_PER_PAGE;
    // A page holds more Chinese or Japanese characters than words of other scripts: they
    // weigh what their share of a page does.
    let weight = counted.words - counted.ideographs
        + counted.ideographs * MOST_WORDS_PER_PAGE / MOST_IDEOGRAPHS_PER_PAGE;
    if weight > limit {
        return Err(PrintError::TooManyWords {
            words: counted.words,
            limit,
        });
    }
    let started = Instant::now();
    // The fonts follow the book's scripts, the same in every pass.
    let fonts = template::body_fonts(&template::book_text(document, metadata), &metadata.language);
    let arrangement = Arrangement::of(document);
    let listed: Vec<usize> = arrangement.listed.clone().collect();
    let geometry = |gutter: f64| PageGeometry {
        trim: options.trim,
        bleed: options.bleed,
        gutter: gutter + GUTTER_COMFORT,
    };
    let too_long = |pages: usize| -> Result<(), PrintError> {
        if pages > MAX_PAGES as usize {
            return Err(PrintError::TooLong {
                pages: u32::try_from(pages).unwrap_or(u32::MAX),
                trim: options.trim,
            });
        }
        Ok(())
    };

    let mut gutter = trim::gutter(estimate_pages(weight, options.trim));
    let mut passes = 0;
    let mut warnings = Vec::new();
    let mut contents: Option<Vec<String>> = None;
    loop {
        // Laid out bare: no running heads or folios, so that empty pages show as empty.
        passes += 1;
        let bare = PageData {
            styles: String::new(),
            folios: Vec::new(),
            contents: contents.clone().unwrap_or_default(),
        };
        let generated = template::generate(
            document,
            resources,
            metadata,
            geometry(gutter),
            contents.as_ref().map(|_| &bare),
            false,
            &fonts,
        );
        let world = BookWorld::new(generated.source, resources);
        let laid = compile(&world, &mut Vec::new())?;
        let survey = pages::survey(&laid);
        too_long(survey.pages)?;
        // The first pass's gutter was a guess: take what its count asks. After that the gutter
        // only widens (a wider one than the table asks is allowed), so a book whose count
        // straddles a band settles on the wider.
        let wanted = trim::gutter(survey.pages as u32);
        if (wanted > gutter || (passes == 1 && wanted != gutter)) && passes < MAX_PASSES {
            gutter = wanted;
            continue;
        }
        let data = pages::page_data(&survey, &listed, arrangement.body);

        // The pass that prints: the same layout, with what the bare one learnt as data.
        passes += 1;
        let Generated {
            source,
            literals,
            warnings: emitted,
        } = template::generate(
            document,
            resources,
            metadata,
            geometry(gutter),
            Some(&data),
            true,
            &fonts,
        );
        let world = BookWorld::new(source, resources);
        let mut typst_warnings = Vec::new();
        let document_laid = compile(&world, &mut typst_warnings)?;
        let check = pages::survey(&document_laid);
        too_long(check.pages)?;
        let settled = check.pages == survey.pages && check.chapters == survey.chapters;
        if !settled && passes < MAX_PASSES {
            // The contents' real page numbers moved a page: learn again from this layout.
            contents = Some(data.contents);
            continue;
        }
        if !settled {
            warnings.push(Warning::new(
                "print_layout_unsettled",
                "The print edition's pages kept moving between passes; a running head or a contents entry may be a page out.",
            ));
        }
        let (page_starts, missing) =
            pages::page_starts(&document_laid, &world, &literals, &data.folios);
        warnings.extend(emitted);
        warnings.extend(typst_warnings);
        // A letter no face draws would print as a box in every word of its script: no print
        // edition is better than that. A symbol (an emoji, an arrow) is a box with a warning.
        let (letters, symbols): (BTreeSet<char>, BTreeSet<char>) =
            missing.into_iter().partition(|c| c.is_alphabetic());
        if !letters.is_empty() {
            return Err(PrintError::MissingScript(missing_letters(&letters)));
        }
        if !symbols.is_empty() {
            warnings.push(missing_glyphs(&symbols));
        }
        let pages = check.pages as u32;
        if pages < trim::MIN_PAGES {
            warnings.push(Warning::new(
                "print_too_short",
                format!(
                    "The print edition has {pages} pages; print-on-demand services bind {} at least.",
                    trim::MIN_PAGES
                ),
            ));
        }
        let pdf = export(&document_laid, metadata, options)?;
        return Ok(PrintEdition {
            pdf,
            pages,
            trim: options.trim,
            bleed: options.bleed,
            paper: options.paper,
            gutter,
            page_starts,
            folios: data.folios,
            warnings,
            passes,
            layout_time: started.elapsed(),
        });
    }
}

/// A guess at the page count, for the first pass's gutter: about 330 words a 6×9 page of
/// 11 pt, in proportion to the page's area and the type's.
fn estimate_pages(words: u64, trim: Trim) -> u32 {
    let (w, h) = trim.inches();
    let scale = (6.0 * 9.0) / (w * h) * (trim::font_size(trim) / 11.0).powi(2);
    (words as f64 / 330.0 * scale + 8.0) as u32
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
fn missing_letters(letters: &BTreeSet<char>) -> String {
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

fn missing_glyphs(missing: &BTreeSet<char>) -> Warning {
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

fn export(
    document: &PagedDocument,
    metadata: &BookMetadata,
    options: &PrintOptions,
) -> Result<Vec<u8>, PrintError> {
    let timestamp = parse_modified(&metadata.modified)
        .or_else(|| Datetime::from_ymd_hms(2026, 1, 1, 0, 0, 0))
        .map(Timestamp::new_utc);
    let pdf_options = PdfOptions {
        // The book's own identifier: stable between runs, unique between books.
        ident: Smart::Custom(&metadata.identifier),
        timestamp,
        ..PdfOptions::default()
    };
    let pdf = typst_pdf::pdf(document, &pdf_options).map_err(|errors| {
        PrintError::Pdf(
            errors
                .iter()
                .map(|e| e.message.to_string())
                .collect::<Vec<_>>()
                .join("; "),
        )
    })?;
    if options.bleed {
        let bound_on_right = crate::language::Direction::of(&metadata.language)
            == crate::language::Direction::RightToLeft;
        boxes::add_trim_boxes(&pdf, trim::BLEED_INCHES * 72.0, bound_on_right)
            .map_err(|e| PrintError::Pdf(format!("adding the trim box: {e:#}")))
    } else {
        Ok(pdf)
    }
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
