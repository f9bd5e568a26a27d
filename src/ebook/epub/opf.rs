//! The package document (`content.opf`): metadata, manifest and spine.

use std::fmt::Write as _;

use super::Manifest;
use super::pages::book_language;
use crate::ebook::Book;
use crate::ebook::metadata::FIXED_MODIFIED;
use crate::ebook::xhtml::escape::{collapse, escaped};
use crate::ebook::xhtml::{Target, chapter_file_name};
use crate::language::Direction;

/// `paged`: the book marks its print edition's pages and has a page list.
pub fn package_document(book: &Book, manifest: &Manifest, paged: bool) -> String {
    let lang = book_language(book);
    let mut out = String::new();
    out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<package xmlns=\"http://www.idpf.org/2007/opf\" version=\"3.0\" unique-identifier=\"pub-id\" xml:lang=\"{lang}\">"
    );
    metadata(&mut out, book, manifest, paged);
    manifest_section(&mut out, book, manifest);
    spine(&mut out, book, manifest);
    out.push_str("</package>\n");
    out
}

fn element(out: &mut String, name: &str, attrs: &str, value: &str) {
    let value = collapse(value);
    if !value.is_empty() {
        let _ = writeln!(out, "    <{name}{attrs}>{}</{name}>", escaped(&value));
    }
}

fn metadata(out: &mut String, book: &Book, manifest: &Manifest, paged: bool) {
    let m = &book.metadata;
    out.push_str("  <metadata xmlns:dc=\"http://purl.org/dc/elements/1.1/\">\n");
    element(out, "dc:identifier", " id=\"pub-id\"", &m.identifier);
    if m.isbn.is_some() {
        // ONIX code list 5, value 15: ISBN-13.
        out.push_str(
            "    <meta refines=\"#pub-id\" property=\"identifier-type\" scheme=\"onix:codelist5\">15</meta>\n",
        );
    }
    let title = match collapse(&m.title) {
        t if t.is_empty() => "Untitled".to_owned(),
        t => t,
    };
    element(out, "dc:title", " id=\"title\"", &title);
    out.push_str("    <meta refines=\"#title\" property=\"title-type\">main</meta>\n");
    if let Some(subtitle) = m
        .subtitle
        .as_deref()
        .map(collapse)
        .filter(|s| !s.is_empty())
    {
        element(out, "dc:title", " id=\"subtitle\"", &subtitle);
        out.push_str("    <meta refines=\"#subtitle\" property=\"title-type\">subtitle</meta>\n");
    }
    let authors = m
        .authors
        .iter()
        .map(|a| collapse(a))
        .filter(|a| !a.is_empty());
    for (i, author) in authors.enumerate() {
        let id = format!("creator-{}", i + 1);
        element(out, "dc:creator", &format!(" id=\"{id}\""), &author);
        let _ = writeln!(
            out,
            "    <meta refines=\"#{id}\" property=\"role\" scheme=\"marc:relators\">aut</meta>"
        );
    }
    element(out, "dc:language", "", &book_language(book));
    for (name, value) in [
        ("dc:publisher", &m.publisher),
        ("dc:date", &m.date),
        ("dc:description", &m.description),
    ] {
        if let Some(value) = value {
            element(out, name, "", value);
        }
    }
    for subject in &m.subjects {
        element(out, "dc:subject", "", subject);
    }
    if let Some(rights) = &m.rights {
        element(out, "dc:rights", "", rights);
    }
    if let Some(series) = m.series.as_deref().map(collapse).filter(|s| !s.is_empty()) {
        element(
            out,
            "meta",
            " property=\"belongs-to-collection\" id=\"series\"",
            &series,
        );
        out.push_str("    <meta refines=\"#series\" property=\"collection-type\">series</meta>\n");
        if let Some(position) = m.series_number.as_deref().and_then(group_position) {
            let _ = writeln!(
                out,
                "    <meta refines=\"#series\" property=\"group-position\">{position}</meta>"
            );
        }
    }
    let _ = writeln!(
        out,
        "    <meta property=\"dcterms:modified\">{}</meta>",
        modified(&m.modified)
    );
    // `schema` is a prefix EPUB reserves: no declaration needed.
    if let Some(revision) = m.revision {
        let _ = writeln!(
            out,
            "    <meta property=\"schema:version\">{revision}</meta>"
        );
    }
    let print = book.print.as_ref().filter(|_| paged);
    accessibility(out, manifest, print.is_some());
    if let Some(print) = print {
        element(
            out,
            "meta",
            " property=\"pageBreakSource\"",
            &page_break_source(book, print),
        );
    }
    if manifest.cover.is_some() {
        // EPUB 2 reading systems (and Kindle's converters) find the cover this way.
        out.push_str("    <meta name=\"cover\" content=\"cover-image\"/>\n");
    }
    out.push_str("  </metadata>\n");
}

/// The accessibility claims (EPUB Accessibility 1.1) Bindery's output supports: the text is
/// all text, navigable by headings and a table of contents, in reading order and restylable.
/// Conformance is only claimed when every image has alternative text. `paged`: the text
/// marks where the print edition's pages begin, and the navigation lists them.
fn accessibility(out: &mut String, manifest: &Manifest, paged: bool) {
    let has_images = !manifest.images.is_empty();
    let described = manifest.all_images_described();
    let mut meta = |property: &str, value: &str| {
        let _ = writeln!(
            out,
            "    <meta property=\"schema:{property}\">{value}</meta>"
        );
    };
    meta("accessMode", "textual");
    if has_images {
        meta("accessMode", "visual");
    }
    meta("accessModeSufficient", "textual");
    if has_images && !described {
        meta("accessModeSufficient", "textual,visual");
    }
    for feature in [
        "structuralNavigation",
        "tableOfContents",
        "readingOrder",
        "displayTransformability",
    ] {
        meta("accessibilityFeature", feature);
    }
    if has_images && described {
        meta("accessibilityFeature", "alternativeText");
    }
    if paged {
        // The two that replace `printPageNumbers`: the markers, and the page list to them.
        meta("accessibilityFeature", "pageBreakMarkers");
        meta("accessibilityFeature", "pageNavigation");
    }
    if manifest.has_mathml() {
        // Equations are MathML that assistive technology can read and explore. The TeX kept
        // in each one's annotation is its source, not a description, so `describedMath` is
        // not claimed.
        meta("accessibilityFeature", "MathML");
    }
    meta("accessibilityHazard", "none");
    let summary = match (has_images, described) {
        (false, _) => {
            "This publication meets WCAG 2.1 Level AA. It is text only, with a table of contents, headings for navigation and a logical reading order; its text can be resized and restyled."
        }
        (true, true) => {
            "This publication meets WCAG 2.1 Level AA. It has a table of contents, headings for navigation and a logical reading order; every image has a text description, and the text can be resized and restyled."
        }
        (true, false) => {
            "This publication has a table of contents, headings for navigation and a logical reading order, and its text can be resized and restyled; some images have no text description."
        }
    };
    let pages = " It marks the pages of the print edition, with a page list to go to any of them.";
    let summary = if paged {
        format!("{summary}{pages}")
    } else {
        summary.to_owned()
    };
    meta("accessibilitySummary", &summary);
    if !has_images || described {
        out.push_str(
            "    <meta property=\"dcterms:conformsTo\">EPUB Accessibility 1.1 - WCAG 2.1 Level AA</meta>\n",
        );
    }
}

/// What the page list's pages are the pages of (`pageBreakSource`, from the W3C's
/// "Page Source Identification" for EPUB Accessibility, which EPUBCheck accepts as it
/// incubates): the print edition's ISBN as a URN when it has one, else its title and trim.
fn page_break_source(book: &Book, print: &crate::ebook::PrintEdition) -> String {
    if let Some(isbn) = print
        .isbn
        .as_deref()
        .and_then(crate::ebook::metadata::parse_isbn)
    {
        return format!("urn:isbn:{isbn}");
    }
    let title = match collapse(&book.metadata.title) {
        t if t.is_empty() => "Untitled".to_owned(),
        t => t,
    };
    let edition = match &print.edition {
        Some(name) => format!("{name} edition"),
        None => "print edition".to_owned(),
    };
    format!("{title}, {edition}, {} trim", collapse(&print.trim))
}

/// `group-position` must be a number; "Book Two" is not.
fn group_position(s: &str) -> Option<String> {
    let s = s.trim();
    let numeric = !s.is_empty()
        && s.len() <= 10
        && s.chars().all(|c| c.is_ascii_digit() || c == '.')
        && s.chars().filter(|&c| c == '.').count() <= 1
        && !s.starts_with('.')
        && !s.ends_with('.');
    numeric.then(|| s.to_owned())
}

/// `dcterms:modified` must be `CCYY-MM-DDThh:mm:ssZ` exactly; anything else becomes the
/// fixed instant rather than an invalid book (and never the clock: same input, same bytes).
pub fn modified(value: &str) -> &str {
    let shape = "dddd-dd-ddTdd:dd:ddZ";
    let ok = value.len() == shape.len()
        && value.chars().zip(shape.chars()).all(|(v, s)| match s {
            'd' => v.is_ascii_digit(),
            s => v == s,
        })
        && chrono::NaiveDateTime::parse_from_str(value, "%Y-%m-%dT%H:%M:%SZ").is_ok();
    if ok { value } else { FIXED_MODIFIED }
}

fn manifest_section(out: &mut String, book: &Book, manifest: &Manifest) {
    out.push_str("  <manifest>\n");
    let mut item = |id: &str, href: &str, media_type: &str, properties: Option<&str>| {
        let properties = properties
            .map(|p| format!(" properties=\"{p}\""))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "    <item id=\"{id}\" href=\"{href}\" media-type=\"{media_type}\"{properties}/>"
        );
    };
    const XHTML: &str = "application/xhtml+xml";
    item("nav", "nav.xhtml", XHTML, Some("nav"));
    item("ncx", "toc.ncx", "application/x-dtbncx+xml", None);
    item("css", "css/book.css", "text/css", None);
    if let Some(cover) = &manifest.cover {
        item(
            &cover.id,
            &cover.href,
            &cover.media_type,
            Some("cover-image"),
        );
        item("cover", "cover.xhtml", XHTML, None);
    }
    item("titlepage", "titlepage.xhtml", XHTML, None);
    item("copyright", "copyright.xhtml", XHTML, None);
    for i in 0..book.document.chapters.len() {
        let file = chapter_file_name(i, Target::Epub);
        let mathml = manifest.mathml.get(i).copied().unwrap_or(false);
        item(&chapter_id(i), &file, XHTML, mathml.then_some("mathml"));
    }
    for image in manifest.images.iter().chain(&manifest.ornament) {
        item(&image.id, &image.href, &image.media_type, None);
    }
    for (i, face) in manifest.fonts.iter().enumerate() {
        item(
            &format!("font-{}", i + 1),
            &format!("fonts/{}", face.file),
            face.media_type(),
            None,
        );
    }
    out.push_str("  </manifest>\n");
}

pub fn chapter_id(index: usize) -> String {
    format!("chapter-{:03}", index + 1)
}

fn spine(out: &mut String, book: &Book, manifest: &Manifest) {
    // A right-to-left book turns its pages leftwards; a left-to-right one says nothing
    // (`default`), as it always did.
    match Direction::of(&book_language(book)) {
        Direction::RightToLeft => {
            out.push_str("  <spine toc=\"ncx\" page-progression-direction=\"rtl\">\n")
        }
        Direction::LeftToRight => out.push_str("  <spine toc=\"ncx\">\n"),
    }
    let mut itemref = |id: &str| {
        let _ = writeln!(out, "    <itemref idref=\"{id}\"/>");
    };
    if manifest.cover.is_some() {
        itemref("cover");
    }
    itemref("titlepage");
    itemref("copyright");
    itemref("nav");
    for i in 0..book.document.chapters.len() {
        itemref(&chapter_id(i));
    }
    out.push_str("  </spine>\n");
}
