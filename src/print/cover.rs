//! The print cover: one PDF of back, spine and front, wrapping the book.
//!
//! Its width is twice the trim's, plus the spine, plus 0.125 in of bleed at each end; its
//! height is the trim's plus bleed at top and bottom. The spine grows with the page count by
//! the paper's thickness, and carries the title and author only from 80 pages, below which a
//! spine is too narrow to print on. The front is the book's cover image (an upload or the
//! generated design), the back the metadata's `blurb` (or, without one, its description).
//! A right-to-left book opens the other way: its front is on the left of the sheet, its back
//! on the right.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use typst::layout::PagedDocument;

use crate::ebook::BookMetadata;

use super::strings::literal;
use super::trim::BLEED_INCHES;
use super::world::{BookWorld, IMAGES};
use super::{PrintError, PrintOptions};

/// The fewest pages whose spine carries text (KDP's rule).
pub const SPINE_TEXT_PAGES: u32 = 80;

/// A typeset cover.
#[derive(Debug, Clone)]
pub struct PrintCover {
    pub pdf: Vec<u8>,
    /// The whole sheet, bleed included, in inches.
    pub width: f64,
    pub height: f64,
    /// The spine's width, in inches.
    pub spine: f64,
}

/// The sheet's width, height and spine in inches for a book of `pages` pages.
pub fn cover_size(pages: u32, options: &PrintOptions) -> (f64, f64, f64) {
    let (w, h) = options.trim.inches();
    let spine = f64::from(pages) * options.paper.inches_per_page();
    (
        2.0 * w + spine + 2.0 * BLEED_INCHES,
        h + 2.0 * BLEED_INCHES,
        spine,
    )
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
    let b = BLEED_INCHES;
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
    let mut source = format!(
        r##"#set page(width: {width:.4}in, height: {height:.4}in, margin: 0pt, fill: rgb("#23262d"))
#set text(font: ("Libertinus Serif", "New Computer Modern", "DejaVu Sans Mono"), fill: white, hyphenate: false)
#set par(justify: false)
"##
    );
    // The back: the blurb, inside a safe area half an inch from the trim.
    if let Some(blurb) = metadata.blurb.as_ref().or(metadata.description.as_ref()) {
        let _ = writeln!(
            source,
            "#place(top + left, dx: {:.4}in, dy: {:.4}in, block(width: {:.4}in, text(size: 11pt, {})))",
            back_x + 0.5,
            b + 0.75,
            trim_w - 1.0,
            literal(blurb)
        );
    }
    // The spine, read from top to bottom as English-language books are.
    if pages >= SPINE_TEXT_PAGES {
        let size = (spine * 72.0 * 0.45).min(12.0);
        let _ = writeln!(
            source,
            "#place(top + left, dx: {:.4}in, dy: 0in, block(width: {spine:.4}in, height: {height:.4}in, align(center + horizon, rotate(90deg, reflow: true, text(size: {size:.2}pt, {title} + h(1.5em) + {authors})))))",
            b + trim_w,
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
    let world = BookWorld::new(source, resources);
    let document: PagedDocument = super::compile(&world, &mut Vec::new())?;
    let pdf = super::export(
        &document,
        metadata,
        &PrintOptions {
            bleed: false,
            ..*options
        },
    )?;
    Ok(PrintCover {
        pdf,
        width,
        height,
        spine,
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
            bleed: false,
            paper: Paper::White,
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
    }
}
