//! A line of text set alone: a one-page PDF exactly the size of the text, to be drawn onto a
//! finished interior's page without typesetting the book again (an advance reader copy's line
//! on the copyright page, `advance_copies::stamp`).
//!
//! It is set as the book is: by Typst, in the faces the print edition's default style sets the
//! language in (the bundled ones, the operator's, and the system's for the scripts the text
//! holds), the text entering the source only as a string literal. Its colours are the device's
//! gray, which any interior may hold, a PDF/X-1a one included. The same text gives the same
//! bytes.

use std::collections::BTreeMap;

use typst::foundations::{Datetime, Smart};
use typst_pdf::{PdfOptions, Timestamp};

use super::fonts::{BookFonts, FontNeeds};
use super::markup::typst_language;
use super::strings::literal;
use super::world::BookWorld;
use super::{PrintError, compile, named, pages, pdfx, template};

/// A line set alone.
#[derive(Debug, Clone)]
pub struct SetLine {
    /// A PDF of one page, `width` by `height` points, holding the text and nothing else.
    pub pdf: Vec<u8>,
    pub width: f64,
    pub height: f64,
}

/// `text` in `language` (a BCP 47 tag, which sets its direction and its faces), `size` points,
/// centred on a page `width` points wide and as tall as its lines from their ascenders to their
/// descenders (it wraps at the width). A character no face here draws is refused
/// ([`PrintError::MissingScript`]).
pub fn set_line(text: &str, language: &str, width: f64, size: f64) -> Result<SetLine, PrintError> {
    let needs = FontNeeds::of(text, false);
    let faces = BookFonts::for_needs(&needs, &BTreeMap::new());
    let fonts = template::body_fonts(&needs, language);
    let (lang, region) = typst_language(language).unwrap_or(("en".into(), None));
    let region = region.map_or_else(|| "none".to_owned(), |r| format!("\"{r}\""));
    let source = format!(
        "#set page(width: {width:.3}pt, height: auto, margin: 0pt)\n\
         #set text(font: ({fonts}), fallback: false, size: {size:.3}pt, lang: \"{lang}\", region: {region}, hyphenate: false, top-edge: \"ascender\", bottom-edge: \"descender\")\n\
         #set par(justify: false, leading: 0.5em)\n\
         #align(center, {text})\n",
        text = literal(text),
    );
    let images = BTreeMap::new();
    let world = BookWorld::new(source, &images, &faces);
    let mut warnings = Vec::new();
    let document = compile(&world, &mut warnings)?;
    // A name printed as empty boxes would name no one.
    let missing = pages::missing(&document);
    if !missing.is_empty() {
        return Err(PrintError::MissingScript(format!(
            "the print edition's faces cannot draw {} of the line {text:?}; the operator can add a font that has them to FONTS_DIR",
            named(&missing, 8)
        )));
    }
    let Some(page) = document.pages.first() else {
        return Err(PrintError::Typeset("the line set no page".into()));
    };
    let size = page.frame.size();
    let options = PdfOptions {
        // Nothing of the clock or the machine: the same line, the same bytes.
        ident: Smart::Custom("bindery-line"),
        timestamp: Datetime::from_ymd_hms(2026, 1, 1, 0, 0, 0).map(Timestamp::new_utc),
        tagged: false,
        ..PdfOptions::default()
    };
    let pdf = typst_pdf::pdf(&document, &options).map_err(|errors| {
        PrintError::Pdf(
            errors
                .iter()
                .map(|e| e.message.to_string())
                .collect::<Vec<_>>()
                .join("; "),
        )
    })?;
    let pdf = in_device_gray(&pdf).map_err(|e| PrintError::Pdf(format!("{e:#}")))?;
    Ok(SetLine {
        pdf,
        width: size.x.to_pt(),
        height: size.y.to_pt(),
    })
}

fn in_device_gray(pdf: &[u8]) -> anyhow::Result<Vec<u8>> {
    let mut doc = lopdf::Document::load_mem(pdf)?;
    pdfx::in_device_gray(&mut doc)?;
    // The ICC profiles no page names any more.
    doc.prune_objects();
    let mut bytes = Vec::new();
    doc.save_to(&mut bytes)?;
    Ok(bytes)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests {
    use super::*;

    const LINE: &str = "Advance reader copy for Jane Roe, not for sale.";

    fn text_of(pdf: &[u8]) -> String {
        let doc = lopdf::Document::load_mem(pdf).unwrap();
        assert_eq!(doc.get_pages().len(), 1);
        doc.extract_text(&[1]).unwrap()
    }

    #[test]
    fn a_line_is_one_page_of_its_text_in_the_devices_gray() {
        let line = set_line(LINE, "en", 288.0, 9.0).unwrap();
        assert_eq!(line.width, 288.0);
        // One line, from its ascenders to its descenders.
        assert!(line.height > 9.0 && line.height < 18.0, "{}", line.height);
        assert_eq!(text_of(&line.pdf).trim(), LINE);
        let doc = lopdf::Document::load_mem(&line.pdf).unwrap();
        let page = doc.page_iter().next().unwrap();
        let content = String::from_utf8_lossy(&doc.get_page_content(page)).into_owned();
        assert!(!content.contains(" rg"), "{content}");
        let objects = format!("{:?}", doc.objects);
        assert!(!objects.contains("ICCBased") && !objects.contains("DeviceRGB"));
        // Nothing of the clock: the same line, the same bytes.
        assert_eq!(set_line(LINE, "en", 288.0, 9.0).unwrap().pdf, line.pdf);
    }

    #[test]
    fn a_long_line_wraps_at_the_width() {
        let long = LINE.repeat(4);
        let line = set_line(&long, "en", 144.0, 9.0).unwrap();
        assert!(line.height > 40.0, "{}", line.height);
    }

    #[test]
    fn names_in_any_script_the_book_could_print_are_set() {
        if !crate::test_support::need::noto_fonts() {
            return;
        }
        for (language, text) in [
            ("pl", "Egzemplarz: Żaneta Łęcka."),
            ("el", "Αντίτυπο: Ἀλέξανδρος."),
            (
                "ar",
                "نسخة قراءة مسبقة باسم \u{2068}محمد\u{2069}، ليست للبيع.",
            ),
            ("ja", "\u{2068}山田\u{2069}様専用の先読み見本。非売品。"),
            (
                "en",
                "Advance reader copy for \u{2068}山田 محمد\u{2069}, not for sale.",
            ),
        ] {
            let line =
                set_line(text, language, 288.0, 9.0).unwrap_or_else(|e| panic!("{language}: {e}"));
            assert!(line.pdf.starts_with(b"%PDF-"), "{language}");
        }
    }

    #[test]
    fn a_character_no_face_draws_is_refused_not_printed_as_a_box() {
        // Ol Chiki: no face Bindery bundles or looks for has it.
        let e = set_line("For \u{1C5A}\u{1C5E}\u{1C64}.", "en", 288.0, 9.0).unwrap_err();
        assert_eq!(e.code(), "print_missing_script");
        assert!(e.to_string().contains("U+1C5A"), "{e}");
    }
}
