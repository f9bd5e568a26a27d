//! The printed page: the trim sizes print-on-demand services take, the bleed, the paper, and the
//! margins, the inside one (the gutter) chosen from the page count by KDP's table.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Inches of bleed beyond the trim, on the outside edges only (top, bottom, fore-edge).
pub const BLEED_INCHES: f64 = 0.125;

/// The most pages a paperback may have: KDP's limit, the lowest of the services'.
pub const MAX_PAGES: u32 = 828;

/// The fewest pages a paperback may have; a shorter book prints with a warning.
pub const MIN_PAGES: u32 = 24;

/// A trim size: the finished page. Written as its name (`6x9`) wherever it is stored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Trim {
    /// 5 × 8 in.
    In5x8,
    /// 5.25 × 8 in.
    In5_25x8,
    /// 5.5 × 8.5 in.
    In5_5x8_5,
    /// 6 × 9 in, the commonest trade paperback.
    #[default]
    In6x9,
    /// A5, 148 × 210 mm.
    A5,
    /// Royal, 156 × 234 mm.
    Royal,
}

impl Trim {
    pub const ALL: [Trim; 6] = [
        Trim::In5x8,
        Trim::In5_25x8,
        Trim::In5_5x8_5,
        Trim::In6x9,
        Trim::A5,
        Trim::Royal,
    ];

    /// The name a user types (`6x9`, `a5`).
    pub fn name(self) -> &'static str {
        match self {
            Trim::In5x8 => "5x8",
            Trim::In5_25x8 => "5.25x8",
            Trim::In5_5x8_5 => "5.5x8.5",
            Trim::In6x9 => "6x9",
            Trim::A5 => "a5",
            Trim::Royal => "royal",
        }
    }

    /// The trim as a reader would name it (`6 × 9 in`, `A5`), for the ebook's page source.
    pub fn label(self) -> &'static str {
        match self {
            Trim::In5x8 => "5 × 8 in",
            Trim::In5_25x8 => "5.25 × 8 in",
            Trim::In5_5x8_5 => "5.5 × 8.5 in",
            Trim::In6x9 => "6 × 9 in",
            Trim::A5 => "A5",
            Trim::Royal => "Royal",
        }
    }

    /// Width and height in inches.
    pub fn inches(self) -> (f64, f64) {
        const MM: f64 = 1.0 / 25.4;
        match self {
            Trim::In5x8 => (5.0, 8.0),
            Trim::In5_25x8 => (5.25, 8.0),
            Trim::In5_5x8_5 => (5.5, 8.5),
            Trim::In6x9 => (6.0, 9.0),
            Trim::A5 => (148.0 * MM, 210.0 * MM),
            Trim::Royal => (156.0 * MM, 234.0 * MM),
        }
    }

    /// The body text's size in points: smaller pages, smaller type.
    pub(crate) fn font_size(self) -> f64 {
        match self {
            Trim::In5x8 | Trim::In5_25x8 => 10.0,
            Trim::In5_5x8_5 | Trim::A5 => 10.5,
            Trim::In6x9 | Trim::Royal => 11.0,
        }
    }
}

impl fmt::Display for Trim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A trim size nobody prints.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown trim size {given:?}: choose one of 5x8, 5.25x8, 5.5x8.5, 6x9, a5, royal")]
pub struct UnknownTrim {
    pub given: String,
}

impl From<Trim> for String {
    fn from(trim: Trim) -> String {
        trim.name().to_owned()
    }
}

impl TryFrom<String> for Trim {
    type Error = UnknownTrim;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl FromStr for Trim {
    type Err = UnknownTrim;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted = s.trim().to_ascii_lowercase().replace(['×', ' '], "x");
        let wanted = wanted.trim_end_matches("in");
        Trim::ALL
            .into_iter()
            .find(|t| t.name() == wanted)
            .ok_or_else(|| UnknownTrim {
                given: s.to_owned(),
            })
    }
}

/// The paper, which sets the spine's width on the cover.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Paper {
    #[default]
    White,
    Cream,
}

impl Paper {
    pub fn name(self) -> &'static str {
        match self {
            Paper::White => "white",
            Paper::Cream => "cream",
        }
    }

    /// Inches of spine a page adds (KDP's figures).
    pub fn inches_per_page(self) -> f64 {
        match self {
            Paper::White => 0.002252,
            Paper::Cream => 0.0025,
        }
    }
}

impl fmt::Display for Paper {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A paper nobody prints on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown paper {given:?}: choose white or cream")]
pub struct UnknownPaper {
    pub given: String,
}

impl FromStr for Paper {
    type Err = UnknownPaper;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "white" => Ok(Paper::White),
            "cream" => Ok(Paper::Cream),
            _ => Err(UnknownPaper {
                given: s.to_owned(),
            }),
        }
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
