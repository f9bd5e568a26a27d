//! The printed page's geometry: the bleed, the type size and the margins, the inside one (the
//! gutter) chosen from the page count by the printer's table (`printers`). The trims and papers
//! themselves are `paperback`'s, low in the layers, since a book's metadata names them too; they are
//! re-exported here for the print edition's use.

pub use crate::paperback::{Paper, Trim, UnknownPaper, UnknownTrim};

use crate::paperback::{Binding, Printer};
use crate::report::Warning;

use super::PrintOptions;

/// Inches of bleed beyond the trim, on the outside edges only (top, bottom, fore-edge).
pub const BLEED_INCHES: f64 = 0.125;

/// The most pages Bindery lays out: KDP's limit, which Lulu's (800) is under and
/// IngramSpark's over; a longer book is refused before it is laid out.
pub const MAX_PAGES: u32 = 828;

/// What the author should know of a print edition's page count: fewer pages than the printer
/// binds in the edition's binding, or more than it binds on the paper chosen (where the
/// printer's limit differs by paper, the other paper is the way out).
pub fn page_count_warnings(pages: u32, options: &PrintOptions) -> Vec<Warning> {
    let rules = options.rules();
    let binding = options.binding();
    let Some(limit) = rules.page_limit(binding, options.paper) else {
        return Vec::new();
    };
    let (printer, binds) = match options.printer {
        Printer::None => ("print-on-demand services".to_owned(), "bind"),
        named => (named.label().to_owned(), "binds"),
    };
    let edition = match binding {
        Binding::Paperback => "print edition".to_owned(),
        Binding::Hardcover => "hardcover".to_owned(),
    };
    let mut warnings = Vec::new();
    if pages < limit.min {
        warnings.push(Warning::new(
            "print_too_short",
            format!(
                "The {edition} has {pages} pages; {printer} {binds} {} at least.",
                limit.min
            ),
        ));
    }
    if pages > limit.max {
        let other = Paper::ALL
            .into_iter()
            .filter(|p| *p != options.paper)
            .find(|p| {
                rules
                    .page_limit(binding, *p)
                    .is_some_and(|l| pages <= l.max)
            });
        let way_out = match other {
            Some(paper) => format!("Choose {paper} paper (paper={paper}) or a larger trim."),
            None => "Choose a larger trim, or publish the book in volumes.".to_owned(),
        };
        warnings.push(Warning::new(
            "print_too_long_for_paper",
            format!(
                "The {edition} has {pages} pages on {} paper, which {printer} {binds} up to \
                 {} pages. {way_out}",
                options.paper, limit.max
            ),
        ));
    }
    warnings
}

/// The body text's size in points: smaller pages, smaller type.
pub(crate) fn font_size(trim: Trim) -> f64 {
    match trim {
        Trim::In5x8 | Trim::In5_25x8 => 10.0,
        Trim::In5_5x8_5 | Trim::A5 => 10.5,
        Trim::In6x9 | Trim::Royal => 11.0,
    }
}

/// Where the type may go on a page, in inches. The outside margins are well over the services'
/// minimum (0.25 in, 0.375 in with bleed), which the bleed adds to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct PageGeometry {
    pub trim: Trim,
    pub bleed: bool,
    /// The bleed runs past the spine edge too, as Lulu asks, not only past the outside ones.
    pub bleed_at_spine: bool,
    pub gutter: f64,
}

impl PageGeometry {
    /// The outside margin from the trim edge.
    pub const OUTSIDE: f64 = 0.5;
    /// Top margin from the trim edge; the running head sits inside it.
    pub const TOP: f64 = 0.75;
    /// Bottom margin from the trim edge; the folio sits inside it.
    pub const BOTTOM: f64 = 0.75;

    fn bleed(self) -> f64 {
        if self.bleed { BLEED_INCHES } else { 0.0 }
    }

    fn spine_bleed(self) -> f64 {
        if self.bleed_at_spine {
            self.bleed()
        } else {
            0.0
        }
    }

    /// The media: the trim plus bleed on the fore-edge, top and bottom (and the spine edge,
    /// where the printer asks for it).
    pub fn media(self) -> (f64, f64) {
        let (w, h) = self.trim.inches();
        (
            w + self.bleed() + self.spine_bleed(),
            h + 2.0 * self.bleed(),
        )
    }

    /// Inside, outside, top and bottom margins of the media.
    pub fn margins(self) -> (f64, f64, f64, f64) {
        let b = self.bleed();
        (
            self.gutter + self.spine_bleed(),
            Self::OUTSIDE + b,
            Self::TOP + b,
            Self::BOTTOM + b,
        )
    }

    /// Width and height of the text block.
    pub fn text_block(self) -> (f64, f64) {
        let (w, h) = self.trim.inches();
        (
            w - self.gutter - Self::OUTSIDE,
            h - Self::TOP - Self::BOTTOM,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trims_parse_as_users_type_them() {
        assert_eq!("6x9".parse(), Ok(Trim::In6x9));
        assert_eq!(" 5.25X8 ".parse(), Ok(Trim::In5_25x8));
        assert_eq!("5.5x8.5in".parse(), Ok(Trim::In5_5x8_5));
        assert_eq!("A5".parse(), Ok(Trim::A5));
        assert_eq!("Royal".parse(), Ok(Trim::Royal));
        for t in Trim::ALL {
            assert_eq!(t.name().parse(), Ok(t));
            assert_eq!(
                serde_json::to_string(&t).unwrap(),
                format!("\"{}\"", t.name())
            );
        }
    }

    #[test]
    fn a_bad_trim_names_the_accepted_ones() {
        let e = "7x10".parse::<Trim>().unwrap_err().to_string();
        assert!(e.contains("\"7x10\""), "{e}");
        assert!(e.contains("5x8, 5.25x8, 5.5x8.5, 6x9, a5, royal"), "{e}");
        assert!("".parse::<Trim>().is_err());
        let e = "grey".parse::<Paper>().unwrap_err().to_string();
        assert!(e.contains("white or cream"), "{e}");
    }

    #[test]
    fn a_page_count_outside_what_the_paper_binds_is_told() {
        let codes = |pages, paper, printer| -> Vec<String> {
            let options = PrintOptions {
                paper,
                printer,
                ..PrintOptions::default()
            };
            page_count_warnings(pages, &options)
                .into_iter()
                .map(|w| w.code)
                .collect()
        };
        assert_eq!(codes(23, Paper::White, Printer::None), ["print_too_short"]);
        assert!(codes(24, Paper::Cream, Printer::None).is_empty());
        assert!(codes(776, Paper::Cream, Printer::None).is_empty());
        assert_eq!(
            codes(777, Paper::Cream, Printer::Kdp),
            ["print_too_long_for_paper"]
        );
        assert!(codes(828, Paper::White, Printer::None).is_empty());
        // Lulu binds 32 pages at least, and 800 at most on any paper.
        assert_eq!(codes(30, Paper::White, Printer::Lulu), ["print_too_short"]);
        assert_eq!(
            codes(810, Paper::White, Printer::Lulu),
            ["print_too_long_for_paper"]
        );
        let cream = PrintOptions {
            paper: Paper::Cream,
            ..PrintOptions::default()
        };
        let said = &page_count_warnings(800, &cream)[0].message;
        assert!(
            said.contains("800 pages on cream paper") && said.contains("paper=white"),
            "{said}"
        );
    }

    #[test]
    fn bleed_grows_the_media_on_outside_edges_only() {
        let g = PageGeometry {
            trim: Trim::In6x9,
            bleed: true,
            bleed_at_spine: false,
            gutter: 0.5,
        };
        assert_eq!(g.media(), (6.125, 9.25));
        let (inside, outside, top, bottom) = g.margins();
        assert_eq!(inside, 0.5);
        assert!(outside >= 0.375 + BLEED_INCHES && top >= 0.375 && bottom >= 0.375);
        let plain = PageGeometry { bleed: false, ..g };
        assert_eq!(plain.media(), (6.0, 9.0));
        assert!(plain.margins().1 >= 0.25);
        assert_eq!(g.text_block(), plain.text_block());
        // Lulu's bleed runs past the spine too: the page is wider by it, the inside margin
        // with it, and the text block the same.
        let lulu = PageGeometry {
            bleed_at_spine: true,
            ..g
        };
        assert_eq!(lulu.media(), (6.25, 9.25));
        assert_eq!(lulu.margins().0, 0.5 + BLEED_INCHES);
        assert_eq!(lulu.text_block(), plain.text_block());
    }
}
