//! The print edition checked against its printer's rules, as a printer's preflight would:
//! its interior and cover read back from their PDFs (`printers::PdfFacts`), with the margins
//! it was laid out with, which no PDF states.

use crate::paperback::Printer;
use crate::printers::{self, Facts, PdfFacts, check::Cover};
use crate::report::{PrinterCheck, Verdict, Warning};

use super::cover::spine_text;
use super::trim::PageGeometry;
use super::{GUTTER_COMFORT, PrintCover, PrintEdition, PrintOptions};

/// The check of `edition` (and its `cover`, when one was made) against the printer `options`
/// names; none when it names none.
pub fn preflight(
    edition: &PrintEdition,
    cover: Option<&PrintCover>,
    options: &PrintOptions,
) -> anyhow::Result<Option<PrinterCheck>> {
    if options.printer == Printer::None {
        return Ok(None);
    }
    let cover = match cover {
        Some(cover) => Some(Cover {
            spine: cover.spine,
            spine_text: spine_text(edition.pages, options),
            pdf: PdfFacts::read(&cover.pdf)?,
        }),
        None => None,
    };
    let facts = Facts {
        binding: options.binding(),
        trim: edition.trim,
        paper: edition.paper,
        bleed: edition.bleed,
        inside_margin: edition.gutter + GUTTER_COMFORT,
        outside_margin: PageGeometry::OUTSIDE
            .min(PageGeometry::TOP)
            .min(PageGeometry::BOTTOM),
        interior: PdfFacts::read(&edition.pdf)?,
        cover,
    };
    Ok(Some(printers::check(
        options.printer,
        options.rules(),
        &facts,
    )))
}

/// A warning for each rule `check` failed, so that the book's warnings say it too.
pub fn failed_rules(check: &PrinterCheck) -> Vec<Warning> {
    check
        .rules
        .iter()
        .filter(|r| r.verdict == Verdict::Fail)
        .map(|r| {
            Warning::new(
                "printer_rule_failed",
                format!(
                    "{}'s rule on {} is not met: the edition has {}, and {} asks for {}. {}",
                    check.name,
                    r.label.to_lowercase(),
                    r.found,
                    check.name,
                    r.wanted,
                    r.advice.as_deref().unwrap_or_default()
                ),
            )
        })
        .collect()
}
