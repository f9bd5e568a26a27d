//! The printers' rules, as data: one table a printer (`printers/kdp.toml`, `ingramspark.toml`,
//! `lulu.toml`), each figure beside the page the printer publishes it on. The print edition is
//! made to its printer's rules (the inside margin for its page count, the spine's width, spine
//! text, where it bleeds, whether it carries bookmarks), and the file it made is then checked
//! against all of them ([`check`]), read back from the PDF where the PDF says ([`pdf`]).
//!
//! A book that names no printer is made to KDP's figures, the strictest of the three on page
//! counts, and checked against none.

pub mod check;
pub mod pdf;
#[cfg(test)]
mod tests;

use std::sync::LazyLock;

use serde::Deserialize;

use crate::paperback::{Binding, Paper, Printer, Trim};

pub use check::{Facts, check};
pub use pdf::PdfFacts;

/// One printer's rules. Each table has the address the printer publishes its figures at
/// (`source`), and may say where a figure came from otherwise (`note`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rules {
    pub trims: Trims,
    pub pages: Pages,
    pub inside_margin: InsideMargin,
    pub outside_margin: OutsideMargin,
    pub bleed: Bleed,
    pub spine_text: SpineText,
    /// Absent where the printer publishes no formula (its cover template decides).
    #[serde(default)]
    pub spine_width: Option<SpineWidth>,
    pub images: Images,
    pub pdf: Pdf,
    /// Absent where the printer publishes no figures for a case-laminate cover.
    #[serde(default)]
    pub hardcover_cover: Option<HardcoverCover>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trims {
    pub source: String,
    #[serde(default)]
    pub note: Option<String>,
    pub paperback: Vec<Trim>,
    pub hardcover: Vec<Trim>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pages {
    pub source: String,
    #[serde(default)]
    pub note: Option<String>,
    pub limits: Vec<PageLimit>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PageLimit {
    pub binding: Binding,
    pub paper: Paper,
    pub min: u32,
    pub max: u32,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InsideMargin {
    pub source: String,
    #[serde(default)]
    pub note: Option<String>,
    /// The least inside margin up to each page count, in rising order.
    pub bands: Vec<Band>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Band {
    pub up_to: u32,
    pub inches: f64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutsideMargin {
    pub source: String,
    #[serde(default)]
    pub note: Option<String>,
    /// The least outside, top and bottom margins from the trim, without bleed and with it.
    pub inches: f64,
    pub with_bleed: f64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bleed {
    pub source: String,
    #[serde(default)]
    pub note: Option<String>,
    pub inches: f64,
    pub edges: BleedEdges,
}

/// Which of a page's edges bleed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BleedEdges {
    /// Top, bottom and the fore-edge; none at the spine.
    Outside,
    /// Every edge, the spine's too.
    All,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpineText {
    pub source: String,
    #[serde(default)]
    pub note: Option<String>,
    /// The fewest pages whose spine may carry text.
    pub min_pages: u32,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpineWidth {
    pub source: String,
    #[serde(default)]
    pub note: Option<String>,
    /// Inches a page adds, by paper.
    pub white: f64,
    pub cream: f64,
    /// Inches the spine has whatever its pages.
    #[serde(default)]
    pub plus: f64,
}

/// A case-laminate cover: printed larger than the book, and wrapped round its boards.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HardcoverCover {
    pub source: String,
    #[serde(default)]
    pub note: Option<String>,
    /// Inches beyond the trim on each outer edge.
    pub wrap: f64,
    /// Inches between the spine and the panels' safe areas.
    pub hinge: f64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Images {
    pub source: String,
    #[serde(default)]
    pub note: Option<String>,
    pub min_dpi: f64,
}

/// What the printer asks of the PDF file itself. A rule left out is none of the printer's.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pdf {
    pub source: String,
    #[serde(default)]
    pub note: Option<String>,
    #[serde(default)]
    pub fonts_embedded: Option<Level>,
    #[serde(default)]
    pub no_transparency: Option<Level>,
    #[serde(default)]
    pub no_bookmarks: Option<Level>,
    #[serde(default)]
    pub not_encrypted: Option<Level>,
    /// Gray and CMYK as the device's own (no RGB, no ICC-based colour).
    #[serde(default)]
    pub device_colour: Option<Level>,
    #[serde(default)]
    pub pdfx: Option<PdfX>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PdfX {
    pub level: Level,
    /// The standards the printer names (`PDF/X-1a:2001`), as a file claims them.
    pub standards: Vec<String>,
}

/// How hard a printer holds to a rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// A file that breaks it is refused, or printed other than meant.
    Must,
    /// The printer asks for it and takes a file without it.
    Should,
}

static KDP: LazyLock<Rules> = LazyLock::new(|| parse(include_str!("../../printers/kdp.toml")));
static INGRAMSPARK: LazyLock<Rules> =
    LazyLock::new(|| parse(include_str!("../../printers/ingramspark.toml")));
static LULU: LazyLock<Rules> = LazyLock::new(|| parse(include_str!("../../printers/lulu.toml")));

fn parse(table: &str) -> Rules {
    toml::from_str(table).unwrap_or_else(|e| panic!("a built-in printer table: {e}"))
}

/// The rules a print edition for `printer` is made to: its own, or, for none, KDP's.
pub fn rules(printer: Printer) -> &'static Rules {
    match printer {
        Printer::Kdp | Printer::None => &KDP,
        Printer::IngramSpark => &INGRAMSPARK,
        Printer::Lulu => &LULU,
    }
}

impl Rules {
    /// The least inside margin for `pages` pages: the band that holds them, or the last band's
    /// for more pages than any (a book that long is refused on its page count).
    pub fn inside_margin(&self, pages: u32) -> f64 {
        let bands = &self.inside_margin.bands;
        bands
            .iter()
            .find(|band| pages <= band.up_to)
            .or(bands.last())
            .map_or(0.0, |band| band.inches)
    }

    /// The band of the inside-margin table that holds `pages`, as a person reads it: `301 to
    /// 500 pages`.
    pub fn inside_margin_band(&self, pages: u32) -> String {
        let bands = &self.inside_margin.bands;
        let k = bands
            .iter()
            .position(|band| pages <= band.up_to)
            .unwrap_or(bands.len().saturating_sub(1));
        let from = if k == 0 { 1 } else { bands[k - 1].up_to + 1 };
        let to = bands.get(k).map_or(from, |band| band.up_to);
        if k == 0 {
            format!("up to {to} pages")
        } else {
            format!("{from} to {to} pages")
        }
    }

    /// The page limits for a binding on a paper.
    pub fn page_limit(&self, binding: Binding, paper: Paper) -> Option<PageLimit> {
        self.pages
            .limits
            .iter()
            .copied()
            .find(|l| l.binding == binding && l.paper == paper)
    }

    /// The spine's width in inches for `pages` pages on `paper`, by the printer's formula, or
    /// KDP's where it publishes none.
    pub fn spine_width(&self, pages: u32, paper: Paper) -> f64 {
        let formula = self
            .spine_width
            .as_ref()
            .unwrap_or_else(|| KDP.spine_width.as_ref().expect("KDP publishes its spine"));
        let per_page = match paper {
            Paper::White => formula.white,
            Paper::Cream => formula.cream,
        };
        f64::from(pages) * per_page + formula.plus
    }

    /// The case-laminate cover's figures: the printer's, or KDP's where it publishes none.
    pub fn hardcover_cover(&self) -> &HardcoverCover {
        self.hardcover_cover
            .as_ref()
            .or(KDP.hardcover_cover.as_ref())
            .expect("KDP publishes its hardcover cover's wrap")
    }

    /// Inches the cover sheet reaches beyond the trim on each outer edge: the bleed of a
    /// paperback's, the wrap of a hardcover's.
    pub fn cover_margin(&self, binding: Binding) -> f64 {
        match binding {
            Binding::Paperback => self.bleed.inches,
            Binding::Hardcover => self.hardcover_cover().wrap,
        }
    }

    /// The trims the printer binds as `binding`.
    pub fn trims(&self, binding: Binding) -> &[Trim] {
        match binding {
            Binding::Paperback => &self.trims.paperback,
            Binding::Hardcover => &self.trims.hardcover,
        }
    }
}
