//! A print edition checked against its printer's rules: each rule passed or failed, with what
//! the edition has, what the printer asks for, what to change and where the printer says so.

use crate::paperback::{Binding, Paper, Printer, Trim};
use crate::report::{PrinterCheck, RuleCheck, Verdict};

use super::pdf::PdfFacts;
use super::{BleedEdges, Level, Rules};

/// How far a size may be from another and still be it, in inches.
const TOLERANCE: f64 = 0.01;

/// A print edition as it was made: what it was asked to be and the margins it was laid out
/// with, which no PDF states, and its files as a printer reads them.
#[derive(Debug, Clone)]
pub struct Facts {
    pub binding: Binding,
    pub trim: Trim,
    pub paper: Paper,
    pub bleed: bool,
    /// The inside margin, from the trim, in inches.
    pub inside_margin: f64,
    /// The least of the outside, top and bottom margins, from the trim, in inches.
    pub outside_margin: f64,
    pub interior: PdfFacts,
    pub cover: Option<Cover>,
}

/// The print cover, as made and as read.
#[derive(Debug, Clone)]
pub struct Cover {
    /// The spine's width, in inches.
    pub spine: f64,
    pub spine_text: bool,
    pub pdf: PdfFacts,
}

/// Checks `facts` against `printer`'s rules.
pub fn check(printer: Printer, rules: &Rules, facts: &Facts) -> PrinterCheck {
    let mut out = Checks {
        rules,
        list: Vec::new(),
    };
    out.trim(facts);
    out.page_count(facts);
    out.margins(facts);
    out.bleed(facts);
    if let Some(cover) = &facts.cover {
        out.spine(facts, cover);
    }
    out.images(facts);
    out.pdf(facts);
    let passed = out.list.iter().all(|r| r.verdict != Verdict::Fail);
    PrinterCheck {
        printer: printer.name().to_owned(),
        name: printer.label().to_owned(),
        passed,
        rules: out.list,
    }
}

struct Checks<'r> {
    rules: &'r Rules,
    list: Vec<RuleCheck>,
}

/// One rule's result, before it is listed.
struct Rule<'a> {
    rule: &'static str,
    label: &'static str,
    ok: bool,
    /// What a broken rule costs: a `should` is advice.
    level: Level,
    found: String,
    wanted: String,
    /// What to change, said only when the rule is broken.
    advice: String,
    source: &'a str,
    note: Option<&'a String>,
}

impl Checks<'_> {
    fn push(&mut self, rule: Rule<'_>) {
        let verdict = match (rule.ok, rule.level) {
            (true, _) => Verdict::Pass,
            (false, Level::Must) => Verdict::Fail,
            (false, Level::Should) => Verdict::Advice,
        };
        self.list.push(RuleCheck {
            rule: rule.rule.to_owned(),
            label: rule.label.to_owned(),
            verdict,
            found: rule.found,
            wanted: rule.wanted,
            advice: (!rule.ok).then_some(rule.advice),
            source: rule.source.to_owned(),
            note: rule.note.cloned(),
        });
    }

    fn trim(&mut self, facts: &Facts) {
        let table = &self.rules.trims;
        let offered = self.rules.trims(facts.binding);
        let (w, h) = facts.trim.inches();
        let (pw, ph) = facts.interior.trim;
        let sized = (pw - w).abs() < TOLERANCE && (ph - h).abs() < TOLERANCE;
        let even = facts.interior.uneven_pages == 0;
        let names: Vec<&str> = offered.iter().map(|t| t.name()).collect();
        let advice = if !offered.contains(&facts.trim) {
            format!(
                "Choose a trim this printer binds as a {}: {}.",
                facts.binding,
                names.join(", ")
            )
        } else {
            format!(
                "The PDF's pages are not the trim it was made for on {} pages: make the print \
                 edition again, and report it as Bindery's fault if it persists.",
                facts.interior.uneven_pages.max(1)
            )
        };
        self.push(Rule {
            rule: "trim",
            label: "Trim size",
            ok: offered.contains(&facts.trim) && sized && even,
            level: Level::Must,
            found: format!(
                "{} {} (the PDF's trim {pw:.2} × {ph:.2} in)",
                facts.trim.label(),
                facts.binding
            ),
            wanted: format!("a {} trim of {}", facts.binding, names.join(", ")),
            advice,
            source: &table.source,
            note: table.note.as_ref(),
        });
    }

    fn page_count(&mut self, facts: &Facts) {
        let table = &self.rules.pages;
        let pages = facts.interior.pages;
        let Some(limit) = self.rules.page_limit(facts.binding, facts.paper) else {
            self.push(Rule {
                rule: "page_count",
                label: "Page count",
                ok: false,
                level: Level::Must,
                found: format!("{pages} pages on {} paper", facts.paper),
                wanted: format!("a paper this printer binds as a {}", facts.binding),
                advice: "Choose another paper.".to_owned(),
                source: &table.source,
                note: table.note.as_ref(),
            });
            return;
        };
        let advice = if pages < limit.min {
            format!(
                "Add {} pages or more (front and back matter count), or choose a smaller trim: \
                 the printer binds no fewer than {}.",
                limit.min.saturating_sub(pages),
                limit.min
            )
        } else {
            format!(
                "Take {} pages out: choose a larger trim, white paper (which binds more pages \
                 where it differs), or publish the book in volumes.",
                pages.saturating_sub(limit.max)
            )
        };
        self.push(Rule {
            rule: "page_count",
            label: "Page count",
            ok: (limit.min..=limit.max).contains(&pages),
            level: Level::Must,
            found: format!("{pages} pages"),
            wanted: format!(
                "{} to {} pages for a {} on {} paper",
                limit.min, limit.max, facts.binding, facts.paper
            ),
            advice,
            source: &table.source,
            note: table.note.as_ref(),
        });
    }

    fn margins(&mut self, facts: &Facts) {
        let pages = facts.interior.pages;
        let table = &self.rules.inside_margin;
        let least = self.rules.inside_margin(pages);
        self.push(Rule {
            rule: "gutter",
            label: "Inside margin (gutter)",
            ok: facts.inside_margin + 1e-9 >= least,
            level: Level::Must,
            found: format!("{:.3} in at {pages} pages", facts.inside_margin),
            wanted: format!(
                "{least:.3} in at least, for {}",
                self.rules.inside_margin_band(pages)
            ),
            advice: format!(
                "Widen the inside margin to {least:.3} in: the pages nearest the spine would \
                 otherwise disappear into the binding."
            ),
            source: &table.source,
            note: table.note.as_ref(),
        });
        let table = &self.rules.outside_margin;
        let least = if facts.bleed {
            table.with_bleed
        } else {
            table.inches
        };
        self.push(Rule {
            rule: "outside_margin",
            label: "Outside, top and bottom margins",
            ok: facts.outside_margin + 1e-9 >= least,
            level: Level::Must,
            found: format!("{:.3} in", facts.outside_margin),
            wanted: format!(
                "{least:.3} in at least{}",
                if facts.bleed { ", with bleed" } else { "" }
            ),
            advice: format!("Widen the outside, top and bottom margins to {least:.3} in."),
            source: &table.source,
            note: table.note.as_ref(),
        });
    }

    fn bleed(&mut self, facts: &Facts) {
        let table = &self.rules.bleed;
        let (tw, th) = facts.interior.trim;
        let (mw, mh) = facts.interior.media;
        let (extra_w, extra_h) = (mw - tw, mh - th);
        let b = table.inches;
        let edges = match table.edges {
            BleedEdges::Outside => "the top, bottom and outside edges",
            BleedEdges::All => "every edge, the spine's too",
        };
        let (want_w, want_h) = match (facts.bleed, table.edges) {
            (false, _) => (0.0, 0.0),
            (true, BleedEdges::Outside) => (b, 2.0 * b),
            (true, BleedEdges::All) => (2.0 * b, 2.0 * b),
        };
        let ok = (extra_w - want_w).abs() < TOLERANCE && (extra_h - want_h).abs() < TOLERANCE;
        let found = if facts.bleed {
            format!("pages of {mw:.3} × {mh:.3} in for a {tw:.3} × {th:.3} in trim")
        } else {
            format!("no bleed: pages of {mw:.3} × {mh:.3} in")
        };
        let wanted = if facts.bleed {
            format!(
                "{b} in beyond the trim on {edges}: pages of {:.3} × {:.3} in",
                tw + want_w,
                th + want_h
            )
        } else {
            "pages the size of the trim, without bleed".to_owned()
        };
        self.push(Rule {
            rule: "bleed",
            label: "Bleed",
            ok,
            level: Level::Must,
            found,
            wanted,
            advice: format!(
                "This printer wants the bleed on {edges}: print this edition without bleed \
                 (bleed=no) unless its pictures run off the page."
            ),
            source: &table.source,
            note: table.note.as_ref(),
        });
    }

    fn spine(&mut self, facts: &Facts, cover: &Cover) {
        let pages = facts.interior.pages;
        let table = &self.rules.spine_text;
        let least = table.min_pages;
        self.push(Rule {
            rule: "spine_text",
            label: "Spine text",
            ok: !cover.spine_text || pages >= least,
            level: Level::Must,
            found: if cover.spine_text {
                format!("title and author on the spine, at {pages} pages")
            } else {
                format!("a spine without text, at {pages} pages")
            },
            wanted: format!("spine text only from {least} pages"),
            advice: format!(
                "Leave the spine without text: at {pages} pages it is too narrow to print on."
            ),
            source: &table.source,
            note: table.note.as_ref(),
        });
        self.cover_size(facts, cover);
        let hardcover = facts.binding == Binding::Hardcover;
        match &self.rules.spine_width {
            Some(_) if hardcover => {
                let table = self.rules.hardcover_cover();
                self.push(Rule {
                    rule: "spine_width",
                    label: "Spine width",
                    ok: false,
                    level: Level::Should,
                    found: format!("{:.3} in", cover.spine),
                    wanted: "the width the printer's cover calculator gives a hardcover".to_owned(),
                    advice: format!(
                        "This printer publishes no formula for a hardcover's spine: compare \
                         {:.3} in with its cover calculator's for {pages} pages.",
                        cover.spine
                    ),
                    source: &table.source,
                    note: table.note.as_ref(),
                });
            }
            Some(table) => {
                let wanted = self.rules.spine_width(pages, facts.paper);
                self.push(Rule {
                    rule: "spine_width",
                    label: "Spine width",
                    ok: (cover.spine - wanted).abs() < TOLERANCE,
                    level: Level::Must,
                    found: format!("{:.3} in", cover.spine),
                    wanted: format!("{wanted:.3} in for {pages} pages on {} paper", facts.paper),
                    advice: format!(
                        "Make the cover again for a {wanted:.3} in spine: the cover would \
                         otherwise wrap the book off centre."
                    ),
                    source: &table.source,
                    note: table.note.as_ref(),
                });
            }
            None => self.push(Rule {
                rule: "spine_width",
                label: "Spine width",
                ok: false,
                level: Level::Should,
                found: format!("{:.3} in", cover.spine),
                wanted: "the width the printer's cover template gives".to_owned(),
                advice: format!(
                    "This printer publishes no formula for the spine: compare {:.3} in with \
                     the spine of the cover template it makes for {pages} pages.",
                    cover.spine
                ),
                source: &self.rules.trims.source,
                note: None,
            }),
        }
    }

    /// The cover sheet's size: back, spine and front, and the bleed or wrap beyond them.
    fn cover_size(&mut self, facts: &Facts, cover: &Cover) {
        let (w, h) = facts.trim.inches();
        let margin = self.rules.cover_margin(facts.binding);
        let (want_w, want_h) = (2.0 * w + cover.spine + 2.0 * margin, h + 2.0 * margin);
        let (found_w, found_h) = cover.pdf.media;
        let (beyond, source, note) = match facts.binding {
            Binding::Paperback => (
                "bleed",
                &self.rules.bleed.source,
                self.rules.bleed.note.as_ref(),
            ),
            Binding::Hardcover => {
                let table = self.rules.hardcover_cover();
                ("wrap", &table.source, table.note.as_ref())
            }
        };
        self.push(Rule {
            rule: "cover_size",
            label: "Cover size",
            ok: (found_w - want_w).abs() < TOLERANCE && (found_h - want_h).abs() < TOLERANCE,
            level: Level::Must,
            found: format!("{found_w:.3} × {found_h:.3} in"),
            wanted: format!(
                "{want_w:.3} × {want_h:.3} in: two {w:.3} in panels, the {:.3} in spine and \
                 {margin:.3} in of {beyond} on each outer edge",
                cover.spine
            ),
            advice: "Make the cover again from this edition's page count.".to_owned(),
            source,
            note,
        });
    }

    fn images(&mut self, facts: &Facts) {
        let table = &self.rules.images;
        let least = table.min_dpi;
        let mut lowest: Vec<(String, &super::pdf::ImageResolution)> = Vec::new();
        if let Some(image) = &facts.interior.lowest_image {
            lowest.push((format!("page {}", image.page), image));
        }
        if let Some(image) = facts
            .cover
            .as_ref()
            .and_then(|c| c.pdf.lowest_image.as_ref())
        {
            lowest.push(("the cover".to_owned(), image));
        }
        let worst = lowest.iter().min_by(|a, b| a.1.dpi.total_cmp(&b.1.dpi));
        let (found, ok, advice) = match worst {
            None => ("no images".to_owned(), true, String::new()),
            Some((place, image)) => {
                let (w, h) = image.pixels;
                (
                    format!(
                        "{:.0} dpi at the lowest ({place}, {w} × {h} pixels)",
                        image.dpi
                    ),
                    image.dpi + 0.5 >= least,
                    format!(
                        "Supply the image on {place} at {:.0} × {:.0} pixels or more, or print \
                         it smaller.",
                        (w as f64 * least / image.dpi).ceil(),
                        (h as f64 * least / image.dpi).ceil()
                    ),
                )
            }
        };
        self.push(Rule {
            rule: "image_resolution",
            label: "Image resolution",
            ok,
            level: Level::Must,
            found,
            wanted: format!("{least:.0} dpi at least, at the size printed"),
            advice,
            source: &table.source,
            note: table.note.as_ref(),
        });
    }

    fn pdf(&mut self, facts: &Facts) {
        let pdf = &self.rules.pdf;
        let files: Vec<&PdfFacts> = std::iter::once(&facts.interior)
            .chain(facts.cover.as_ref().map(|c| &c.pdf))
            .collect();
        let any = |f: fn(&PdfFacts) -> bool| files.iter().any(|p| f(p));
        if let Some(level) = pdf.fonts_embedded {
            let missing: Vec<&str> = files
                .iter()
                .flat_map(|p| p.fonts_not_embedded.iter().map(String::as_str))
                .collect();
            self.push(Rule {
                rule: "fonts_embedded",
                label: "Fonts embedded",
                ok: missing.is_empty(),
                level,
                found: if missing.is_empty() {
                    "every font embedded".to_owned()
                } else {
                    format!("not embedded: {}", missing.join(", "))
                },
                wanted: "every font embedded".to_owned(),
                advice: "Embed the fonts named, or use a face whose licence allows it.".to_owned(),
                source: &pdf.source,
                note: pdf.note.as_ref(),
            });
        }
        if let Some(level) = pdf.no_transparency {
            let found = any(|p| p.transparency);
            self.push(Rule {
                rule: "transparency",
                label: "Transparency",
                ok: !found,
                level,
                found: if found { "transparency" } else { "none" }.to_owned(),
                wanted: "none: transparent objects flattened".to_owned(),
                advice: "Use images without an alpha channel (a JPEG, or a PNG without \
                         transparency), so that nothing is left to flatten."
                    .to_owned(),
                source: &pdf.source,
                note: pdf.note.as_ref(),
            });
        }
        if let Some(level) = pdf.device_colour {
            let rgb = any(|p| p.rgb);
            let independent = any(|p| p.device_independent_colour);
            self.push(Rule {
                rule: "colour",
                label: "Colour",
                ok: !rgb && !independent,
                level,
                found: each_file(facts, |p| {
                    match (p.rgb, p.device_independent_colour) {
                        (true, _) => "RGB colour",
                        (false, true) => "gray in an ICC profile",
                        (false, false) => "device gray and CMYK",
                    }
                    .to_owned()
                }),
                wanted: "gray (black-and-white interiors) or CMYK, without ICC profiles".to_owned(),
                advice: "The printer converts other colour itself: check a printed proof \
                         before ordering copies."
                    .to_owned(),
                source: &pdf.source,
                note: pdf.note.as_ref(),
            });
        }
        if let Some(pdfx) = &pdf.pdfx {
            let found = each_file(facts, |p| {
                p.pdfx.clone().unwrap_or_else(|| "no PDF/X".to_owned())
            });
            let ok = files.iter().all(|p| {
                p.pdfx
                    .as_deref()
                    .is_some_and(|v| pdfx.standards.iter().any(|s| s == v))
            });
            self.push(Rule {
                rule: "pdf_standard",
                label: "PDF standard",
                ok,
                level: pdfx.level,
                found,
                wanted: pdfx.standards.join(" or "),
                advice: format!(
                    "The printer asks for {}; it takes other PDFs, and preflights them itself.",
                    pdfx.standards.join(" or ")
                ),
                source: &pdf.source,
                note: pdf.note.as_ref(),
            });
        }
        if let Some(level) = pdf.no_bookmarks {
            let found = facts.interior.bookmarks;
            self.push(Rule {
                rule: "bookmarks",
                label: "Bookmarks",
                ok: !found,
                level,
                found: if found {
                    "an outline of bookmarks"
                } else {
                    "none"
                }
                .to_owned(),
                wanted: "none in the interior".to_owned(),
                advice: "Remove the interior's bookmarks.".to_owned(),
                source: &pdf.source,
                note: pdf.note.as_ref(),
            });
        }
        if let Some(level) = pdf.not_encrypted {
            let found = any(|p| p.encrypted);
            self.push(Rule {
                rule: "encryption",
                label: "Not encrypted",
                ok: !found,
                level,
                found: if found { "encrypted" } else { "not encrypted" }.to_owned(),
                wanted: "not locked or encrypted".to_owned(),
                advice: "Save the PDF without a password or permissions.".to_owned(),
                source: &pdf.source,
                note: pdf.note.as_ref(),
            });
        }
    }
}

/// What `say` says of the interior, and of the cover when there is one: `the interior …, the
/// cover …`.
fn each_file(facts: &Facts, say: impl Fn(&PdfFacts) -> String) -> String {
    match &facts.cover {
        Some(cover) => format!(
            "the interior {}, the cover {}",
            say(&facts.interior),
            say(&cover.pdf)
        ),
        None => format!("the interior {}", say(&facts.interior)),
    }
}
