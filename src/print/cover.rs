//! The print cover: one PDF of back, spine and front, wrapping the book.
//!
//! Its width is twice the trim's, plus the spine, plus 0.125 in of bleed at each end; its
//! height is the trim's plus bleed at top and bottom. The spine grows with the page count by
//! the paper's thickness, and carries the title and author only from 80 pages, below which a
//! spine is too narrow to print on. The front is the book's cover image (an upload or the
//! generated design), the back the metadata's `blurb` (or, without one, its description): as
//! much of it as fits the back's safe area, with a warning that says how much did when not all
//! of it does.
//! A right-to-left book opens the other way: its front is on the left of the sheet, its back
//! on the right.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use typst::layout::PagedDocument;

use crate::ebook::BookMetadata;
use crate::ebook::metadata::bounds::shortened;
use crate::paperback::{Binding, Edition};
use crate::report::Warning;

use super::barcode::Barcode;
use super::fonts::{BookFonts, FontNeeds};
use super::strings::literal;
use super::world::{BookWorld, IMAGES};
use super::{PrintError, PrintOptions};

/// The most characters of the title, and of the authors, on the spine: together a line down
/// the shortest trim's spine at the spine's type size.
const SPINE_TITLE_CHARS: usize = 60;
const SPINE_AUTHORS_CHARS: usize = 40;

/// A typeset cover.
#[derive(Debug, Clone)]
pub struct PrintCover {
    pub pdf: Vec<u8>,
    /// The whole sheet, bleed included, in inches.
    pub width: f64,
    pub height: f64,
    /// The spine's width, in inches.
    pub spine: f64,
    /// What the author should know: the back's text cut short.
    pub warnings: Vec<Warning>,
}

/// The back's text block: half an inch inside the trim at the sides and the bottom, and three
/// quarters below the top.
const BACK_SIDE_INCHES: f64 = 0.5;
const BACK_TOP_INCHES: f64 = 0.75;
const BACK_BOTTOM_INCHES: f64 = 0.5;
/// The barcode's box from the trim's bottom edge and from the spine (a hardcover's from its
/// hinge), and the space between it and the back's text above.
const BARCODE_EDGE_INCHES: f64 = 0.25;
const BARCODE_GAP_INCHES: f64 = 0.2;
/// The back's text size, in points.
const BACK_TEXT_PT: f64 = 11.0;

/// The page setup and text style both the cover and the back's fitting use.
fn preamble(width: f64, height: f64, fonts: &str) -> String {
    format!(
        r##"#set page(width: {width:.4}in, height: {height:.4}in, margin: 0pt, fill: rgb("#23262d"))
#set text(font: ({fonts}), fallback: false, fill: white, hyphenate: false)
#set par(justify: false)
"##
    )
}

/// The back's text block holding `text`, at the origin or where `place` puts it.
fn back_block(text: &str, width: f64) -> String {
    format!(
        "block(width: {width:.4}in, text(size: {BACK_TEXT_PT}pt, {}))",
        literal(text)
    )
}

/// How much of `text` fits a block of `width` by `height` inches: all of it, or the longest run
/// of its first words that does, by laying them out on a page of that size (one page means it
/// fits). Binary search: a back cover's text of 10,000 characters takes about a dozen layouts.
fn fitting<'t>(
    text: &'t str,
    width: f64,
    height: f64,
    resources: &BTreeMap<String, Vec<u8>>,
    fonts: &str,
    faces: &BookFonts,
) -> Result<Fit<'t>, PrintError> {
    let fits = |prefix: &str| -> Result<bool, PrintError> {
        let source = format!(
            "{}#{}\n",
            preamble(width, height, fonts),
            back_block(prefix, width)
        );
        let world = BookWorld::new(source, resources, faces);
        Ok(super::compile(&world, &mut Vec::new())?.pages.len() <= 1)
    };
    // The end of each word, as a byte offset.
    let ends: Vec<usize> = text
        .split_whitespace()
        .map(|word| word.as_ptr() as usize - text.as_ptr() as usize + word.len())
        .collect();
    let total = ends.len();
    if fits(text)? {
        return Ok(Fit {
            text,
            words: total,
            total,
        });
    }
    // The most words that fit: `low` do, `high` do not.
    let (mut low, mut high) = (0, total);
    while high - low > 1 {
        let middle = low + (high - low) / 2;
        if fits(&format!("{}…", &text[..ends[middle - 1]]))? {
            low = middle;
        } else {
            high = middle;
        }
    }
    let text = if low == 0 { "" } else { &text[..ends[low - 1]] };
    Ok(Fit {
        text,
        words: low,
        total,
    })
}

/// What of a text fits: its first `words` of `total`, which end where `text` does.
struct Fit<'t> {
    text: &'t str,
    words: usize,
    total: usize,
}

/// Whether a book of `pages` pages has its title and author on the spine: from the printer's
/// least page count for spine text, below which a spine is too narrow to print on.
pub fn spine_text(pages: u32, options: &PrintOptions) -> bool {
    pages >= options.rules().spine_text.min_pages
}

/// The sheet's width, height and spine in inches for a book of `pages` pages: back, spine and
/// front, and beyond them on every outer edge the bleed of a paperback's cover, or the wrap
/// round a hardcover's boards.
pub fn cover_size(pages: u32, options: &PrintOptions) -> (f64, f64, f64) {
    let (w, h) = options.trim.inches();
    let spine = options.rules().spine_width(pages, options.paper);
    let margin = options.rules().cover_margin(options.binding());
    (2.0 * w + spine + 2.0 * margin, h + 2.0 * margin, spine)
}

/// Typesets the cover of a book of `pages` pages; `front` is the id in `resources` of the
/// cover image, if there is one.
pub fn cover(
    metadata: &BookMetadata,
    front: Option<&str>,
    resources: &BTreeMap<String, Vec<u8>>,
    pages: u32,
    options: &PrintOptions,
) -> Result<PrintCover, PrintError> {
    let (width, height, spine) = cover_size(pages, options);
    let (trim_w, _) = options.trim.inches();
    // The sheet beyond the trim: bleed, or a hardcover's wrap.
    let b = options.rules().cover_margin(options.binding());
    let title = literal(&metadata.title);
    let authors = literal(&metadata.authors.join(", "));
    // Where the back's panel and the front's (bleed included) begin on the sheet.
    let right_to_left = crate::language::Direction::of(&metadata.language)
        == crate::language::Direction::RightToLeft;
    let (back_x, front_x) = if right_to_left {
        (b + trim_w + spine, 0.0)
    } else {
        (b, b + trim_w + spine)
    };
    // The front's own text block, a trim's width wide, leaves out the bleed at the sheet's edge.
    let front_text_x = if right_to_left { b } else { front_x };
    let needs = FontNeeds::of(&super::template::metadata_text(metadata), false);
    let faces = BookFonts::for_needs(&needs, &BTreeMap::new());
    let fonts = super::template::body_fonts(&needs, &metadata.language);
    let mut source = preamble(width, height, &fonts);
    source.push_str(&super::template::document_set(metadata));
    let mut warnings = Vec::new();
    let (_, trim_h) = options.trim.inches();
    // The edition's ISBN as a barcode, in the back's bottom corner by the spine, where the
    // printers leave it room; the blurb ends above it.
    // The price is the paperback's: another edition's barcode carries none.
    let price = metadata
        .price
        .0
        .as_deref()
        .filter(|_| options.edition == Edition::Paperback);
    let barcode = metadata
        .isbn_of(options.edition)
        .and_then(|isbn| Barcode::of_isbn(isbn, price));
    // A hardcover's barcode keeps clear of the hinge, where the cover bends round the board.
    let from_spine = match options.binding() {
        Binding::Paperback => BARCODE_EDGE_INCHES,
        Binding::Hardcover => BARCODE_EDGE_INCHES + options.rules().hardcover_cover().hinge,
    };
    let barcode_room = barcode.as_ref().map_or(0.0, |barcode| {
        let (w, h) = barcode.size_mm();
        let (w, h) = (w / 25.4, h / 25.4);
        let x = if right_to_left {
            back_x + from_spine
        } else {
            back_x + trim_w - from_spine - w
        };
        let _ = writeln!(
            source,
            "#place(top + left, dx: {x:.4}in, dy: {:.4}in, {})",
            b + trim_h - BARCODE_EDGE_INCHES - h,
            barcode.typst()
        );
        h + BARCODE_EDGE_INCHES
    });
    if barcode.is_none() && price.is_some() {
        warnings.push(Warning::new(
            "print_price_without_isbn",
            "The book has a price for its barcode but no ISBN, so the print cover has no \
             barcode. Give the print edition's ISBN (print_isbn=…) to print one.",
        ));
    }
    // The back: the blurb, inside a safe area half an inch from the trim, as much as fits.
    if let Some(blurb) = metadata.blurb.as_ref().or(metadata.description.as_ref()) {
        let block_w = trim_w - 2.0 * BACK_SIDE_INCHES;
        let block_h =
            trim_h - BACK_TOP_INCHES - BACK_BOTTOM_INCHES.max(barcode_room + BARCODE_GAP_INCHES);
        let fit = fitting(blurb, block_w, block_h, resources, &fonts, &faces)?;
        let shown = if fit.words < fit.total {
            let from = if metadata.blurb.is_some() {
                "blurb"
            } else {
                "description (the back cover's text when there is no blurb)"
            };
            warnings.push(Warning::new(
                "print_back_cover_cut",
                format!(
                    "The back cover holds {} of the {from}'s {} words, so the rest is left off \
                     the print cover. Give a shorter blurb (blurb=…) to show all of it.",
                    fit.words, fit.total
                ),
            ));
            format!("{}…", fit.text)
        } else {
            fit.text.to_owned()
        };
        let _ = writeln!(
            source,
            "#place(top + left, dx: {:.4}in, dy: {:.4}in, {})",
            back_x + BACK_SIDE_INCHES,
            b + BACK_TOP_INCHES,
            back_block(&shown, block_w)
        );
    } else {
        warnings.push(Warning::new(
            "print_back_cover_blank",
            "The print cover's back is blank: it prints the book's back-cover text (blurb=…), \
             or else its description, and the book has neither. Give one to fill it.",
        ));
    }
    // The spine, read from top to bottom as English-language books are.
    if spine_text(pages, options) {
        let size = (spine * 72.0 * 0.45).min(12.0);
        let _ = writeln!(
            source,
            "#place(top + left, dx: {:.4}in, dy: 0in, block(width: {spine:.4}in, height: {height:.4}in, align(center + horizon, rotate(90deg, reflow: true, text(size: {size:.2}pt, {} + h(1.5em) + {})))))",
            b + trim_w,
            // A spine is one line: a long title or list of authors is shortened there.
            literal(&shortened(&metadata.title, SPINE_TITLE_CHARS)),
            literal(&shortened(
                &metadata.authors.join(", "),
                SPINE_AUTHORS_CHARS
            )),
        );
    }
    // The front, bleed included: the cover image cropped to fill it, or the title and author.
    match front.filter(|id| resources.contains_key(*id)) {
        Some(id) => {
            let _ = writeln!(
                source,
                "#place(top + left, dx: {front_x:.4}in, dy: 0in, image({}, width: {:.4}in, height: {height:.4}in, fit: \"cover\"))",
                literal(&format!("{IMAGES}{id}")),
                trim_w + b,
            );
        }
        None => {
            let _ = writeln!(
                source,
                "#place(top + left, dx: {front_text_x:.4}in, dy: {:.4}in, block(width: {trim_w:.4}in, align(center, text(size: 28pt, {title}) + v(0.5in) + text(size: 16pt, {authors}))))",
                b + 2.0,
            );
        }
    }
    let world = BookWorld::new(source, resources, &faces);
    let document: PagedDocument = super::compile(&world, &mut Vec::new())?;
    let pdf = super::export(&document, metadata)?;
    Ok(PrintCover {
        pdf,
        width,
        height,
        spine,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::print::{Paper, Trim};

    #[test]
    fn the_cover_is_two_trims_a_spine_and_the_bleed() {
        let options = PrintOptions {
            trim: Trim::In6x9,
            paper: Paper::White,
            ..PrintOptions::default()
        };
        let (w, h, spine) = cover_size(300, &options);
        assert!((spine - 0.6756).abs() < 1e-9);
        assert!((w - (12.0 + 0.6756 + 0.25)).abs() < 1e-9);
        assert!((h - 9.25).abs() < 1e-9);
        let cream = PrintOptions {
            paper: Paper::Cream,
            ..options
        };
        assert!((cover_size(300, &cream).2 - 0.75).abs() < 1e-9);
        // Lulu's spine: pages / 444 + 0.06 in, on any paper.
        let lulu = PrintOptions {
            printer: crate::paperback::Printer::Lulu,
            ..cream
        };
        assert!((cover_size(444, &lulu).2 - 1.06).abs() < 1e-3);
    }

    fn metadata(blurb: &str) -> BookMetadata {
        let found = crate::document::Metadata {
            title: Some("A Book".into()),
            blurb: Some(blurb.into()),
            ..Default::default()
        };
        crate::ebook::metadata::resolve(
            &found,
            &crate::ebook::metadata::MetadataInputs::default(),
            &mut Vec::new(),
        )
        .expect("metadata")
    }

    fn options() -> PrintOptions {
        PrintOptions {
            trim: Trim::In6x9,
            paper: Paper::White,
            ..PrintOptions::default()
        }
    }

    /// A price is printed only in an ISBN's barcode: without an ISBN the author is told why
    /// there is none.
    #[test]
    fn a_price_without_an_isbn_says_why_the_cover_has_no_barcode() {
        let mut metadata = metadata("A blurb.");
        metadata.price = "USD 14.99".parse().expect("price");
        let unprinted = cover(&metadata, None, &BTreeMap::new(), 120, &options()).expect("cover");
        let codes: Vec<&str> = unprinted.warnings.iter().map(|w| w.code.as_str()).collect();
        assert_eq!(codes, ["print_price_without_isbn"]);
        metadata.print_isbn = Some("9780306406157".into());
        let printed = cover(&metadata, None, &BTreeMap::new(), 120, &options()).expect("cover");
        assert!(printed.warnings.is_empty(), "{:?}", printed.warnings);
    }

    #[test]
    fn a_back_cover_text_that_fits_is_whole_and_says_nothing() {
        let blurb = "A tale of chickens, and of the people who keep them. ".repeat(5);
        let cover =
            cover(&metadata(&blurb), None, &BTreeMap::new(), 120, &options()).expect("cover");
        assert!(cover.warnings.is_empty(), "{:?}", cover.warnings);
    }

    #[test]
    fn a_back_cover_text_too_long_is_cut_at_a_word_and_says_how_much_fit() {
        // Within the bound on a blurb (10,000 characters), far more than a back cover holds.
        let words = 1_000;
        let blurb: String = (0..words).map(|i| format!("word{i} ")).collect();
        let blurb = blurb.trim_end();
        let block = (
            6.0 - 2.0 * BACK_SIDE_INCHES,
            9.0 - BACK_TOP_INCHES - BACK_BOTTOM_INCHES,
        );
        let needs = FontNeeds::of(blurb, false);
        let fonts = super::super::template::body_fonts(&needs, "en");
        let faces = BookFonts::for_needs(&needs, &BTreeMap::new());
        let fit = fitting(blurb, block.0, block.1, &BTreeMap::new(), &fonts, &faces).expect("fit");
        assert!(
            fit.words > 100 && fit.words < words,
            "{} words fit",
            fit.words
        );
        assert_eq!(fit.total, words);
        // Exactly the most: one word more does not fit.
        assert!(
            fit.text.ends_with(&format!("word{}", fit.words - 1)),
            "{}",
            fit.text
        );
        let cover =
            cover(&metadata(blurb), None, &BTreeMap::new(), 120, &options()).expect("cover");
        let said: Vec<&str> = cover.warnings.iter().map(|w| w.message.as_str()).collect();
        assert_eq!(cover.warnings.len(), 1, "{said:?}");
        assert_eq!(cover.warnings[0].code, "print_back_cover_cut");
        assert!(
            said[0].contains(&format!("holds {} of the blurb's {words} words", fit.words)),
            "{said:?}"
        );
    }

    /// A generated front whose author is "⁓" (U+2053): Typst's own fallback for an SVG's text
    /// spun on it until the processor limit ended the print step. The cover is made, in far
    /// less than that (the bound only keeps a regression from hanging the suite).
    #[test]
    fn a_generated_front_with_a_character_typsts_svg_fallback_spins_on_is_made() {
        let mut metadata = metadata("A blurb.");
        metadata.authors = vec!["\u{2053}".into()];
        let (_, svg) = crate::ebook::cover::generate(&metadata);
        let (done, made) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let resources = BTreeMap::from([("cover.svg".to_owned(), svg)]);
            let cover = cover(&metadata, Some("cover.svg"), &resources, 120, &options());
            let _ = done.send(cover.map(|c| c.pdf.len()));
        });
        let made = made
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the cover within a minute");
        assert!(made.expect("cover") > 1000);
    }
}
