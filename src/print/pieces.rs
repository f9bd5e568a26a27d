//! The print edition typeset in pieces: the front matter, and runs of chapters of about
//! [`PIECE_WORDS`]. Each piece is laid out on its own, so the memory a layout takes is the
//! piece's, not the book's, and the pieces can be laid out by any worker in any order.
//!
//! A piece opens on a recto, as every chapter does, and both pages of a spread have the same
//! text block (only the inside and outside margins trade places), so a piece's pages do not
//! depend on the pages before it. Four stages, each a pure function of what came before:
//!
//! 1. [`plan`]: which chapters go in which piece, the faces the book needs, and a first gutter
//!    guessed from its length and the style's type.
//! 2. [`measure`] each piece, bare (no running heads or folios): its pages, where its chapters
//!    open, which pages are empty, and the glyphs it prints.
//! 3. [`paginate`] the measures: the book's page count, and so its gutter (when the count asks
//!    for another gutter than the one measured, the pieces are measured again with it); every
//!    page's folio and running head, the contents' page numbers, and the union of the glyphs.
//! 4. [`set`] each piece for print, with its folios and running heads, and the seed page of
//!    the union ([`super::glyphs`]) before it; then [`super::assemble`] the pieces' PDFs.
//!
//! A piece is laid out twice (measured, then set) where the book as one document was laid out
//! at least twice too (bare, then printed); the set pass changes only what sits in the margins
//! (and the contents' numbers), so its pages fall where the measure's did, which [`set`]
//! checks.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use typst::layout::PagedDocument;

use crate::document::Document;
use crate::document::positions::PageStart;
use crate::ebook::BookMetadata;
use crate::report::Warning;

use super::fonts::{BookFonts, FontNeeds};
use super::glyphs::Glyphs;
use super::pages::{self, Survey};
use super::template::{self, Arrangement, PageData, Piece};
use super::trim::{self, PageGeometry};
use super::world::BookWorld;
use super::{GUTTER_COMFORT, PrintError, PrintOptions};

/// About how many words a piece holds: chapters are gathered into a piece until the next would
/// take it past this (a chapter longer than this is a piece alone). Measured with
/// `scripts/bench-print` (README): a piece of this size lays out in well under 100 MiB, and
/// fewer, larger pieces would spend less on starting processes but hold more memory.
pub const PIECE_WORDS: u64 = 12_000;

/// The memory a piece's layout takes at most, its child process's peak resident set (the
/// binary, the fonts and the piece), as `scripts/bench-print` measures it: the worker admits
/// the pieces' jobs by it (`NewJob::cost`), so that a book's fan-out runs as many children at
/// once as `WORKER_MEMORY_BUDGET` holds, not as many as it has pieces.
pub const PIECE_COST: u64 = 96 << 20;

/// Rounds of measuring before the gutter is taken as settled.
const MAX_ROUNDS: u32 = 3;

/// A page holds fewer words than this at any trim; a book with more than this many words a
/// page of [`trim::MAX_PAGES`] is refused before it is laid out, which for a very long book would
/// cost seconds and gigabytes to learn the same.
const MOST_WORDS_PER_PAGE: u64 = 600;
/// The same for Chinese and Japanese characters, set solid at 10 pt on the smallest trim
/// (about 30 a line and 32 lines; fewer once headings and breaks are counted).
const MOST_IDEOGRAPHS_PER_PAGE: u64 = 1_200;

/// What the book is typeset from.
#[derive(Clone, Copy)]
pub struct Book<'a> {
    pub document: &'a Document,
    /// The images' bytes by image id.
    pub resources: &'a BTreeMap<String, Vec<u8>>,
    pub metadata: &'a BookMetadata,
    pub options: &'a PrintOptions,
    pub style: &'a crate::style::Style,
}

/// How the book is cut into pieces, and what every piece needs to know of the whole.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub(crate) pieces: Vec<Piece>,
    /// The chapters the contents lists, and the first with arabic folios.
    pub(crate) listed: std::ops::Range<usize>,
    pub(crate) body: Option<usize>,
    pub(crate) trim: super::Trim,
    /// Whose table of inside margins the page count is looked up in.
    #[serde(default)]
    pub(crate) printer: crate::paperback::Printer,
    pub needs: FontNeeds,
    /// The first measure's gutter, guessed from the book's length.
    pub gutter: f64,
    /// What the running heads call each chapter, when they name chapters
    /// (`template::running_titles`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub heads: Vec<String>,
}

impl Plan {
    pub fn pieces(&self) -> usize {
        self.pieces.len()
    }

    /// The chapters of piece `k` (the front matter's are those before the contents), for a
    /// message that names them.
    pub fn chapters(&self, k: usize) -> std::ops::Range<usize> {
        self.pieces
            .get(k)
            .map_or(0..0, |piece| piece.chapters.clone())
    }
}

/// A piece's pages as measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    pub(crate) survey: Survey,
    pub glyphs: Glyphs,
    /// Characters no face drew.
    pub missing: BTreeSet<char>,
    /// The gutter it was measured with.
    pub gutter: f64,
}

impl Measured {
    pub fn pages(&self) -> usize {
        self.survey.pages
    }
}

/// The book's pages, from the measures: what every piece's set pass prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Layout {
    pub gutter: f64,
    /// Every physical page's style and folio, and the contents' folios.
    pub(crate) data: PageData,
    /// Each piece's first physical page (from 1) and its page count, the blank page that
    /// ends a piece of an odd count (so that the next opens on a recto) not counted.
    pub(crate) pieces: Vec<(usize, usize)>,
    /// The physical page each chapter opens on, by chapter index, and the contents'.
    pub(crate) openings: Vec<(usize, usize)>,
    pub(crate) contents: Option<usize>,
    /// The copyright page's physical page (none in a layout stored before it was marked).
    #[serde(default)]
    pub(crate) copyright: Option<usize>,
    pub pages: usize,
    pub glyphs: Glyphs,
    /// Rounds of measuring it took.
    pub rounds: u32,
    pub warnings: Vec<Warning>,
}

impl Layout {
    /// Each physical page's folio.
    pub fn folios(&self) -> &[String] {
        &self.data.folios
    }

    /// Where each piece's pages go: its first physical page and its count.
    pub fn placement(&self, k: usize) -> Option<(usize, usize)> {
        self.pieces.get(k).copied()
    }
}

/// What paginating the measures decided.
#[derive(Debug, Clone, PartialEq)]
pub enum Paginated {
    /// The count wants another gutter: measure every piece again with it.
    Again {
        gutter: f64,
    },
    Settled(Box<Layout>),
}

/// A piece set for print.
#[derive(Debug, Clone)]
pub struct SetPiece {
    /// The piece's PDF: the seed page, then its own.
    pub pdf: Vec<u8>,
    pub info: SetInfo,
}

/// What setting a piece learnt, beside its PDF.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SetInfo {
    /// Its pages, which should be what was measured.
    pub pages: usize,
    /// Where each of its pages holding the book's text begins, labelled with its folio.
    pub page_starts: Vec<PageStart>,
    pub warnings: Vec<Warning>,
}

/// Cuts the book into pieces; refuses it first if no paperback could hold it.
pub fn plan(book: Book<'_>) -> Result<Plan, PrintError> {
    plan_with(book, PIECE_WORDS)
}

/// [`plan`], with pieces of about `piece_words`.
pub(crate) fn plan_with(book: Book<'_>, piece_words: u64) -> Result<Plan, PrintError> {
    let Book {
        document,
        metadata,
        options,
        style,
        ..
    } = book;
    if let Some(refused) = &metadata.print_settings_refused {
        return Err(PrintError::Settings(refused.clone()));
    }
    let weight = weight(crate::document::words_of(document));
    let limit = u64::from(trim::MAX_PAGES) * MOST_WORDS_PER_PAGE;
    if weight > limit {
        return Err(PrintError::TooManyWords {
            words: crate::document::words_of(document).words,
            limit,
        });
    }
    let arrangement = Arrangement::of(document);
    let mut pieces = vec![Piece {
        front: true,
        chapters: arrangement.before_contents.clone(),
    }];
    let mut held = 0;
    for i in arrangement.listed.clone() {
        let words = weight_of(&document.chapters[i].blocks);
        match pieces.last_mut() {
            Some(last) if !last.front && held + words <= piece_words => {
                last.chapters.end = i + 1;
                held += words;
            }
            _ => {
                pieces.push(Piece {
                    front: false,
                    chapters: i..i + 1,
                });
                held = words;
            }
        }
    }
    let needs = FontNeeds::of(
        &template::book_text(document, metadata),
        crate::ebook::sets_bold(document),
    );
    Ok(Plan {
        pieces,
        listed: arrangement.listed.clone(),
        body: arrangement.body,
        trim: options.trim,
        printer: options.printer,
        needs,
        gutter: options
            .rules()
            .inside_margin(estimate_pages(weight, options.trim, style)),
        heads: template::running_titles(document, metadata, style),
    })
}

/// Words, with Chinese and Japanese characters weighing what their share of a page does.
fn weight(counted: crate::document::Words) -> u64 {
    counted.words - counted.ideographs
        + counted.ideographs * MOST_WORDS_PER_PAGE / MOST_IDEOGRAPHS_PER_PAGE
}

fn weight_of(blocks: &[crate::document::Block]) -> u64 {
    weight(crate::document::Words::of(&crate::document::plain_text(
        blocks,
    )))
}

/// A guess at the page count, for the first measure's gutter: a guess on the wrong side of
/// one of the gutter table's steps costs the book a second measure of every piece. The corpus
/// novel set in `bindery` at 6×9 fills about 336 words a page after two of front matter (153
/// pages at 51k words, 319 at 107k); a page holds fewer as the page shrinks, as the type grows
/// (its square: shorter lines, fewer of them) and as the lines spread apart (their pitch, about
/// 0.7 em of type and the leading).
pub(super) fn estimate_pages(words: u64, trim: super::Trim, style: &crate::style::Style) -> u32 {
    let (w, h) = trim.inches();
    let size = style.body.size.map_or(trim::font_size(trim), |size| size.0);
    let pitch = (0.7 + style.body.leading.0) / (0.7 + 0.6);
    let scale = (6.0 * 9.0) / (w * h) * (size / 11.0).powi(2) * pitch;
    (words as f64 / 336.0 * scale + 2.0) as u32
}

fn geometry(options: &PrintOptions, gutter: f64) -> PageGeometry {
    PageGeometry {
        trim: options.trim,
        bleed: options.bleed,
        bleed_at_spine: options.bleed_at_spine(),
        gutter: gutter + GUTTER_COMFORT,
    }
}

fn piece(plan: &Plan, k: usize) -> Result<&Piece, PrintError> {
    plan.pieces
        .get(k)
        .ok_or_else(|| PrintError::Typeset(format!("the book has no piece {k}")))
}

/// Lays piece `k` out bare, with `gutter`.
pub fn measure(book: Book<'_>, plan: &Plan, k: usize, gutter: f64) -> Result<Measured, PrintError> {
    measure_keeping(book, plan, k, gutter).map(|(measured, _)| measured)
}

/// [`measure`], and the layout it made, for [`set`] in the same process.
pub fn measure_keeping(
    book: Book<'_>,
    plan: &Plan,
    k: usize,
    gutter: f64,
) -> Result<(Measured, Bare), PrintError> {
    let piece = piece(plan, k)?;
    let faces = BookFonts::for_needs(&plan.needs, book.resources);
    let fonts = template::body_fonts(&plan.needs, &book.metadata.language);
    let g = geometry(book.options, gutter);
    let bare = lay_out(book, piece, &faces, &fonts, gutter, None)?;
    let survey = pages::survey(&bare.document);
    too_long(survey.pages, book.options.trim)?;
    let mut glyphs = Glyphs::of(&bare.document, &faces);
    let missing = pages::missing(&bare.document);
    if piece.front {
        // The margins' text, which no measure prints.
        let world = BookWorld::new(
            template::furniture(book.metadata, g, &fonts, book.style, &plan.heads),
            book.resources,
            &faces,
        );
        glyphs.merge(&Glyphs::of(
            &super::compile(&world, &mut Vec::new())?,
            &faces,
        ));
    }
    Ok((
        Measured {
            survey,
            glyphs,
            missing,
            gutter,
        },
        bare,
    ))
}

fn too_long(pages: usize, trim: super::Trim) -> Result<(), PrintError> {
    if pages > trim::MAX_PAGES as usize {
        return Err(PrintError::TooLong {
            pages: u32::try_from(pages).unwrap_or(u32::MAX),
            trim,
        });
    }
    Ok(())
}

/// The book's pages from its pieces' measures (in piece order), in measuring round `round`
/// (from 1).
pub fn paginate(plan: &Plan, measured: &[Measured], round: u32) -> Result<Paginated, PrintError> {
    if measured.len() != plan.pieces.len() {
        return Err(PrintError::Typeset(format!(
            "{} pieces measured of {}",
            measured.len(),
            plan.pieces.len()
        )));
    }
    let gutter = measured.first().map_or(plan.gutter, |m| m.gutter);
    // Each piece opens on a recto: one of an odd count is followed by a blank verso.
    let mut placed = Vec::with_capacity(measured.len());
    let mut survey = Survey {
        pages: 0,
        chapters: Vec::new(),
        contents: None,
        blank: BTreeSet::new(),
        copyright: None,
    };
    for (k, m) in measured.iter().enumerate() {
        let first = survey.pages + 1;
        let offset = survey.pages;
        placed.push((first, m.survey.pages));
        survey
            .chapters
            .extend(m.survey.chapters.iter().map(|(c, p)| (*c, p + offset)));
        if let Some(p) = m.survey.contents {
            survey.contents = Some(p + offset);
        }
        if let Some(p) = m.survey.copyright {
            survey.copyright = Some(p + offset);
        }
        survey
            .blank
            .extend(m.survey.blank.iter().map(|p| p + offset));
        survey.pages += m.survey.pages;
        if k + 1 < measured.len() && m.survey.pages % 2 == 1 {
            survey.pages += 1;
            survey.blank.insert(survey.pages);
        }
    }
    too_long(survey.pages, plan.trim)?;
    // The first round's gutter was a guess: take what its count asks. After that the gutter
    // only widens (a wider one than the table asks is allowed), so a book whose count
    // straddles a band settles on the wider.
    let wanted = crate::printers::rules(plan.printer).inside_margin(survey.pages as u32);
    if (wanted > gutter || (round == 1 && wanted != gutter)) && round < MAX_ROUNDS {
        return Ok(Paginated::Again { gutter: wanted });
    }
    // A letter no face draws would print as a box in every word of its script: no print
    // edition is better than that. A symbol (an emoji, an arrow) is a box with a warning.
    let missing: BTreeSet<char> = measured.iter().flat_map(|m| m.missing.clone()).collect();
    let (letters, symbols): (BTreeSet<char>, BTreeSet<char>) =
        missing.into_iter().partition(|c| c.is_alphabetic());
    if !letters.is_empty() {
        return Err(PrintError::MissingScript(super::missing_letters(&letters)));
    }
    let mut warnings = Vec::new();
    if !symbols.is_empty() {
        warnings.push(super::missing_glyphs(&symbols));
    }
    let listed: Vec<usize> = plan.listed.clone().collect();
    let data = pages::page_data(&survey, &listed, plan.body, &plan.heads);
    let mut glyphs = Glyphs::default();
    for m in measured {
        glyphs.merge(&m.glyphs);
    }
    Ok(Paginated::Settled(Box::new(Layout {
        gutter,
        data,
        pieces: placed,
        openings: survey.chapters.clone(),
        contents: survey.contents,
        copyright: survey.copyright,
        pages: survey.pages,
        glyphs,
        rounds: round,
        warnings,
    })))
}

/// Sets piece `k` for print: laid out bare again (or, in one process, as its measure laid it
/// out, `bare`), with its running heads and folios laid over its pages from a layout of its
/// margins alone, and exported with the seed page before its own.
pub fn set(
    book: Book<'_>,
    plan: &Plan,
    layout: &Layout,
    k: usize,
    bare: Option<Bare>,
) -> Result<SetPiece, PrintError> {
    let piece = piece(plan, k)?;
    let (first, count) = layout
        .placement(k)
        .ok_or_else(|| PrintError::Typeset(format!("the layout places no piece {k}")))?;
    let own = first - 1..first - 1 + count;
    let data = PageData {
        styles: layout.data.styles.get(own.clone()).unwrap_or("").to_owned(),
        folios: layout.data.folios.get(own.clone()).unwrap_or(&[]).to_vec(),
        heads: layout.data.heads.get(own).unwrap_or(&[]).to_vec(),
        contents: if piece.front {
            layout.data.contents.clone()
        } else {
            Vec::new()
        },
    };
    let faces = BookFonts::for_needs(&plan.needs, book.resources);
    let fonts = template::body_fonts(&plan.needs, &book.metadata.language);
    let g = geometry(book.options, layout.gutter);
    // The front matter's contents print their numbers now: it is laid out again.
    let Bare {
        document: mut laid,
        starts,
        warnings: mut set_warnings,
        ..
    } = match bare.filter(|b| !piece.front && b.gutter == layout.gutter) {
        Some(bare) => bare,
        None => lay_out(book, piece, &faces, &fonts, layout.gutter, Some(&data))?,
    };
    let survey = pages::survey(&laid);
    if survey.pages != count {
        set_warnings.push(unsettled());
    }
    let page_starts = starts
        .into_iter()
        .map(|(page, at)| PageStart {
            label: data
                .folios
                .get(page)
                .cloned()
                .unwrap_or_else(|| (page + 1).to_string()),
            at,
        })
        .collect();
    // The margins laid over the pages: the body stays the layout it was.
    let world = BookWorld::new(
        template::margins(book.metadata, g, &fonts, &data, book.style),
        book.resources,
        &faces,
    );
    let margins = super::compile(&world, &mut Vec::new())?;
    for (page, furniture) in laid.pages.iter_mut().zip(&margins.pages) {
        for (at, item) in furniture.frame.items() {
            page.frame.push(*at, item.clone());
        }
    }
    let size = laid
        .pages
        .first()
        .map(|p| p.frame.size())
        .unwrap_or_default();
    laid.pages.insert(0, layout.glyphs.seed_page(size, &faces));
    let pdf = super::export(&laid, book.metadata)?;
    Ok(SetPiece {
        pdf,
        info: SetInfo {
            pages: survey.pages,
            page_starts,
            warnings: set_warnings,
        },
    })
}

/// A piece laid out bare, as its measure or its setting lays it out: kept between the two
/// in one process, so that [`set`] need not lay it out again.
pub struct Bare {
    document: PagedDocument,
    /// Where each page's text begins: the page (from 0) and the place in the book.
    starts: Vec<(usize, crate::document::positions::TextPosition)>,
    /// What writing and laying it out warned of.
    warnings: Vec<Warning>,
    gutter: f64,
}

/// Lays `piece` out bare with `gutter`; `pages` for the contents' numbers.
fn lay_out(
    book: Book<'_>,
    piece: &Piece,
    faces: &BookFonts,
    fonts: &str,
    gutter: f64,
    pages: Option<&PageData>,
) -> Result<Bare, PrintError> {
    let text = template::Text {
        document: book.document,
        resources: book.resources,
        metadata: book.metadata,
        style: book.style,
    };
    let generated = template::generate(text, geometry(book.options, gutter), piece, pages, fonts);
    let world = BookWorld::new(generated.source, book.resources, faces);
    let mut warnings = generated.warnings;
    let document = super::compile(&world, &mut warnings)?;
    let starts = pages::starts(&document, &world, &generated.literals);
    Ok(Bare {
        document,
        starts,
        warnings,
        gutter,
    })
}

/// The warning of a book whose pages moved between its passes.
pub(crate) fn unsettled() -> Warning {
    Warning::new(
        "print_layout_unsettled",
        "The print edition's pages kept moving between passes; a running head or a contents entry may be a page out.",
    )
}
