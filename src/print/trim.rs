//! The printed page's geometry: the bleed, the type size and the margins, the inside one (the
//! gutter) chosen from the page count by KDP's table. The trims and papers themselves are
//! `paperback`'s, low in the layers, since a book's metadata names them too; they are
//! re-exported here for the print edition's use.

pub use crate::paperback::{Paper, Trim, UnknownPaper, UnknownTrim};

use crate::report::Warning;

/// Inches of bleed beyond the trim, on the outside edges only (top, bottom, fore-edge).
pub const BLEED_INCHES: f64 = 0.125;

/// The most pages a paperback may have: KDP's limit, the lowest of the services'.
pub const MAX_PAGES: u32 = 828;

/// The fewest pages a paperback may have; a shorter book prints with a warning.
pub const MIN_PAGES: u32 = 24;

/// The most pages KDP binds on cream paper, which is thicker than white (its paperback
/// guidelines: 24–776 pages on cream, 24–828 on white, for every trim Bindery offers); a longer
/// book on cream prints with a warning.
pub const MAX_CREAM_PAGES: u32 = 776;

/// What the author should know of a print edition's page count on `paper`: too few pages to
/// bind, or too many for cream paper.
pub(crate) fn page_count_warnings(pages: u32, paper: Paper) -> Vec<Warning> {
    let mut warnings = Vec::new();
    if pages < MIN_PAGES {
        warnings.push(Warning::new(
            "print_too_short",
            format!(
                "The print edition has {pages} pages; print-on-demand services bind {MIN_PAGES} \
                 at least."
            ),
        ));
    }
    if paper == Paper::Cream && pages > MAX_CREAM_PAGES {
        warnings.push(Warning::new(
            "print_too_long_for_cream",
            format!(
                "The print edition has {pages} pages on cream paper, which KDP binds up to \
                 {MAX_CREAM_PAGES} pages (white up to {MAX_PAGES}). Choose white paper \
                 (paper=white) or a larger trim."
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

/// The inside margin for a book of `pages` pages, by KDP's table (24–150 pages 0.375 in, then
/// 0.5, 0.625, 0.75, and 0.875 up to 828). Longer books are refused before this is asked.
pub fn gutter(pages: u32) -> f64 {
    match pages {
        0..=150 => 0.375,
        151..=300 => 0.5,
        301..=500 => 0.625,
        501..=700 => 0.75,
        _ => 0.875,
    }
}

/// Where the type may go on a page, in inches. The outside margins are well over the services'
/// minimum (0.25 in, 0.375 in with bleed), which the bleed adds to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct PageGeometry {
    pub trim: Trim,
    pub bleed: bool,
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

    /// The media: the trim plus bleed on the fore-edge, top and bottom.
    pub fn media(self) -> (f64, f64) {
        let (w, h) = self.trim.inches();
        (w + self.bleed(), h + 2.0 * self.bleed())
    }

    /// Inside, outside, top and bottom margins of the media.
    pub fn margins(self) -> (f64, f64, f64, f64) {
        let b = self.bleed();
        (
            self.gutter,
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
        let codes = |pages, paper| -> Vec<&'static str> {
            page_count_warnings(pages, paper)
                .iter()
                .map(|w| match w.code.as_str() {
                    "print_too_short" => "short",
                    "print_too_long_for_cream" => "cream",
                    other => panic!("{other}"),
                })
                .collect()
        };
        assert_eq!(codes(23, Paper::White), ["short"]);
        assert!(codes(24, Paper::Cream).is_empty());
        assert!(codes(776, Paper::Cream).is_empty());
        assert_eq!(codes(777, Paper::Cream), ["cream"]);
        assert!(codes(828, Paper::White).is_empty());
        let said = &page_count_warnings(800, Paper::Cream)[0].message;
        assert!(
            said.contains("800 pages on cream paper") && said.contains("paper=white"),
            "{said}"
        );
    }

    #[test]
    fn gutter_follows_kdp_table_at_its_edges() {
        for (pages, inches) in [
            (24, 0.375),
            (150, 0.375),
            (151, 0.5),
            (300, 0.5),
            (301, 0.625),
            (500, 0.625),
            (501, 0.75),
            (700, 0.75),
            (701, 0.875),
            (828, 0.875),
        ] {
            assert_eq!(gutter(pages), inches, "{pages} pages");
        }
    }

    #[test]
    fn bleed_grows_the_media_on_outside_edges_only() {
        let g = PageGeometry {
            trim: Trim::In6x9,
            bleed: true,
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
    }
}
