#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use std::collections::BTreeMap;
use std::io::{Cursor, Read};
use std::sync::LazyLock;

use lopdf::{Document, Object, ObjectId};
use zip::ZipArchive;

use super::*;
use crate::ebook::epub::{COPYRIGHT_PAGE, PACKAGE_DOCUMENT};
use crate::ebook::xhtml::{Target, fixture, render_chapter};
use crate::ebook::{Book, reader};
use crate::paperback::Printer;
use crate::print::PrintOptions;

const LINK: &str = "urn:uuid:0b7f3c1e-2d4a-4f6b-9e8d-1a2b3c4d5e6f";
/// A name that is markup if it is not escaped.
const HOSTILE: &str = "Jane <&\"> Roe";

fn book() -> (Book, BTreeMap<String, Vec<u8>>) {
    (fixture::book(), fixture::resources())
}

fn bodies(book: &Book, target: Target) -> Vec<String> {
    (0..book.document.chapters.len())
        .map(|i| render_chapter(book, i, target).body)
        .collect()
}

static EPUB: LazyLock<Vec<u8>> = LazyLock::new(|| {
    let (book, resources) = book();
    crate::ebook::epub::package(&book, &bodies(&book, Target::Epub), &resources).unwrap()
});

static READER_INDEX: LazyLock<Vec<u8>> = LazyLock::new(|| {
    let (book, resources) = book();
    let site = reader::build(
        &book,
        &bodies(&book, Target::Web),
        &resources,
        &reader::Links::default(),
    )
    .unwrap();
    site.into_iter()
        .find(|(path, _)| path == READER_PAGE)
        .map(|(_, bytes)| bytes)
        .unwrap()
});

fn interior(printer: Printer) -> Vec<u8> {
    let (book, resources) = book();
    let options = PrintOptions {
        printer,
        ..PrintOptions::default()
    };
    crate::print::typeset(
        &book.document,
        &resources,
        &book.metadata,
        &options,
        &book.style,
    )
    .unwrap()
    .pdf
}

static PDF: LazyLock<Vec<u8>> = LazyLock::new(|| interior(Printer::None));
/// IngramSpark's interior is PDF/X-1a: a PDF 1.3 with a classic cross-reference table.
static PDF_X: LazyLock<Vec<u8>> = LazyLock::new(|| interior(Printer::IngramSpark));

fn stamp(name: &str) -> Stamp {
    Stamp::new(name, LINK, "en").unwrap()
}

fn entry(epub: &[u8], name: &str) -> String {
    let mut archive = ZipArchive::new(Cursor::new(epub)).unwrap();
    let mut text = String::new();
    archive
        .by_name(name)
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    text
}

/// Each entry's name, method, CRC, sizes and stored (compressed) bytes, in the zip's order.
fn raw_entries(epub: &[u8]) -> Vec<(String, String, u32, u64, u64, Vec<u8>)> {
    let mut archive = ZipArchive::new(Cursor::new(epub)).unwrap();
    (0..archive.len())
        .map(|i| {
            let mut file = archive.by_index_raw(i).unwrap();
            let mut raw = Vec::new();
            file.read_to_end(&mut raw).unwrap();
            (
                String::from_utf8(file.name_raw().to_vec()).unwrap(),
                format!("{:?}", file.compression()),
                file.crc32(),
                file.compressed_size(),
                file.size(),
                raw,
            )
        })
        .collect()
}

/// Whether `xml` is well-formed, as quick-xml reads it.
fn well_formed(xml: &str) -> bool {
    let mut reader = quick_xml::Reader::from_str(xml);
    loop {
        match reader.read_event() {
            Ok(quick_xml::events::Event::Eof) => return true,
            Ok(_) => {}
            Err(_) => return false,
        }
    }
}

// The stamp.

#[test]
fn a_name_is_printed_as_given_without_controls_and_within_bounds() {
    let stamp = Stamp::new("  Jane\t\u{202E}Roe \u{7} ", LINK, "en").unwrap();
    assert_eq!(stamp.reader(), "Jane Roe");
    assert_eq!(
        stamp.sentence(),
        "Advance reader copy for Jane Roe, not for sale."
    );
    assert!(matches!(
        Stamp::new(" \u{2066} ", LINK, "en"),
        Err(StampError::EmptyName)
    ));
    assert!(matches!(
        Stamp::new(&"a".repeat(201), LINK, "en"),
        Err(StampError::NameTooLong { chars: 201 })
    ));
    for bad in ["", "urn:uuid: 1", "urn:\u{0}", "urn:ü", &"u".repeat(201)] {
        assert!(
            matches!(
                Stamp::new("Jane", bad, "en"),
                Err(StampError::BadIdentifier(_))
            ),
            "{bad:?}"
        );
    }
}

#[test]
fn the_words_are_the_books_language_or_its_own_label() {
    let ar = Stamp::new("Jane Roe", LINK, "ar").unwrap();
    assert_eq!(ar.sentence(), "نسخة قراءة مسبقة باسم Jane Roe، ليست للبيع.");
    // A language the labels lack is worded, and marked, as English.
    let ur = Stamp::new("Jane Roe", LINK, "ur").unwrap();
    assert_eq!(ur.language, "en");
    let mut metadata = fixture::metadata();
    metadata.language = "de-AT".into();
    assert_eq!(
        Stamp::for_book("Jane Roe", LINK, &metadata)
            .unwrap()
            .sentence(),
        "Leseexemplar für Jane Roe, unverkäuflich."
    );
    metadata
        .labels
        .insert("advance_copy".into(), "Nur für {reader}.".into());
    let own = Stamp::for_book("Jane Roe", LINK, &metadata).unwrap();
    assert_eq!(own.sentence(), "Nur für Jane Roe.");
    assert_eq!(own.language, "de-AT");
}

#[test]
fn the_name_is_isolated_in_markup_and_in_print_where_it_runs_the_other_way() {
    let ar = Stamp::new("Jane Roe", LINK, "ar").unwrap();
    assert_eq!(
        ar.paragraph(false),
        "<p id=\"advance-copy\" lang=\"ar\" dir=\"rtl\">نسخة قراءة مسبقة باسم <bdi>Jane Roe</bdi>، ليست للبيع.</p>\n"
    );
    assert_eq!(
        ar.printed(),
        "نسخة قراءة مسبقة باسم \u{2068}Jane Roe\u{2069}، ليست للبيع."
    );
    assert_eq!(
        stamp("محمد").printed(),
        "Advance reader copy for \u{2068}محمد\u{2069}, not for sale."
    );
    // A name that runs the words' way is printed as it is, so it copies as it reads.
    assert_eq!(
        stamp("Ἀλέξανδρος 山田").printed(),
        "Advance reader copy for Ἀλέξανδρος 山田, not for sale."
    );
    assert_eq!(
        stamp(HOSTILE).paragraph(true),
        "<p id=\"advance-copy\" lang=\"en\" xml:lang=\"en\" dir=\"ltr\">Advance reader copy for <bdi>Jane &lt;&amp;\"&gt; Roe</bdi>, not for sale.</p>\n"
    );
}

// The EPUB.

#[test]
fn the_epubs_copyright_page_has_the_line_with_the_name_escaped() {
    let stamped = epub(&EPUB, &stamp(HOSTILE)).unwrap();
    let page = entry(&stamped, COPYRIGHT_PAGE);
    assert!(
        page.contains("<bdi>Jane &lt;&amp;\"&gt; Roe</bdi>, not for sale.</p>\n</section>"),
        "{page}"
    );
    assert!(well_formed(&page), "{page}");
    // Nothing else of the page changed: without the line it is the book's own.
    let line = stamp(HOSTILE).paragraph(true);
    assert_eq!(page.replacen(&line, "", 1), entry(&EPUB, COPYRIGHT_PAGE));
}

#[test]
fn the_package_document_holds_the_links_identifier() {
    let stamped = epub(&EPUB, &stamp("Jane Roe")).unwrap();
    let opf = entry(&stamped, PACKAGE_DOCUMENT);
    let line = format!("    <dc:identifier id=\"advance-copy\">{LINK}</dc:identifier>\n");
    assert!(opf.contains(&format!("{line}  </metadata>")), "{opf}");
    assert!(well_formed(&opf));
    assert_eq!(opf.replacen(&line, "", 1), entry(&EPUB, PACKAGE_DOCUMENT));
    // The book's own identifier stays the unique one.
    assert!(opf.contains("unique-identifier=\"pub-id\""));
}

#[test]
fn every_other_entry_is_copied_as_it_was_stored() {
    let stamped = epub(&EPUB, &stamp("Jane Roe")).unwrap();
    let before = raw_entries(&EPUB);
    let after = raw_entries(&stamped);
    assert_eq!(
        before.iter().map(|e| &e.0).collect::<Vec<_>>(),
        after.iter().map(|e| &e.0).collect::<Vec<_>>(),
        "the same entries in the same order"
    );
    assert_eq!(after[0].0, "mimetype");
    assert_eq!(after[0].1, "Stored");
    let mut changed = Vec::new();
    for (old, new) in before.iter().zip(&after) {
        if old != new {
            changed.push(old.0.as_str());
        }
    }
    assert_eq!(changed, [PACKAGE_DOCUMENT, COPYRIGHT_PAGE]);
    // The two written again are compressed as the book's writer compresses them.
    for (old, new) in before.iter().zip(&after) {
        assert_eq!(old.1, new.1, "{}", old.0);
    }
    // Every entry's local header too (name, method, CRC, sizes, time): the bytes between
    // the zip's records are the original's for every untouched entry.
    let local = |epub: &[u8], name: &str| {
        let mut archive = ZipArchive::new(Cursor::new(epub)).unwrap();
        let file = archive.by_name_raw(name.as_bytes()).unwrap();
        let start = usize::try_from(file.header_start()).unwrap();
        let end = usize::try_from(file.data_start().unwrap() + file.compressed_size()).unwrap();
        epub[start..end].to_vec()
    };
    for (name, ..) in before.iter().filter(|e| !changed.contains(&e.0.as_str())) {
        assert_eq!(local(&EPUB, name), local(&stamped, name), "{name}");
    }
}

#[test]
fn the_same_inputs_give_the_same_bytes_and_another_name_others() {
    let jane = epub(&EPUB, &stamp("Jane Roe")).unwrap();
    assert_eq!(jane, epub(&EPUB, &stamp("Jane Roe")).unwrap());
    assert_ne!(jane, epub(&EPUB, &stamp("John Roe")).unwrap());
    let other_link = Stamp::new("Jane Roe", "urn:uuid:other", "en").unwrap();
    assert_ne!(jane, epub(&EPUB, &other_link).unwrap());
    let page = reader_page(&READER_INDEX, &stamp("Jane Roe")).unwrap();
    assert_eq!(
        page,
        reader_page(&READER_INDEX, &stamp("Jane Roe")).unwrap()
    );
    assert_ne!(
        page,
        reader_page(&READER_INDEX, &stamp("John Roe")).unwrap()
    );
}

#[test]
fn a_stamped_copy_or_another_file_is_refused() {
    let once = epub(&EPUB, &stamp("Jane Roe")).unwrap();
    assert!(matches!(
        epub(&once, &stamp("John Roe")),
        Err(StampError::AlreadyStamped(_))
    ));
    assert!(matches!(
        epub(b"PK not really", &stamp("Jane Roe")),
        Err(StampError::NotAnEpub(_))
    ));
    // A zip that is an EPUB, but not one of Bindery's.
    let foreign = {
        use std::io::Write;
        let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
        zip.start_file("mimetype", crate::ebook::epub::entry_options(false))
            .unwrap();
        zip.write_all(b"application/epub+zip").unwrap();
        zip.start_file(PACKAGE_DOCUMENT, crate::ebook::epub::entry_options(true))
            .unwrap();
        zip.write_all(b"<package><metadata>\n  </metadata></package>")
            .unwrap();
        zip.start_file(COPYRIGHT_PAGE, crate::ebook::epub::entry_options(true))
            .unwrap();
        zip.write_all(b"<html><body><p>(c)</p></body></html>")
            .unwrap();
        zip.finish().unwrap().into_inner()
    };
    assert!(matches!(
        epub(&foreign, &stamp("Jane Roe")),
        Err(StampError::NoCopyrightSection(COPYRIGHT_PAGE))
    ));
    let page = reader_page(&READER_INDEX, &stamp("Jane Roe")).unwrap();
    assert!(matches!(
        reader_page(&page, &stamp("John Roe")),
        Err(StampError::AlreadyStamped(_))
    ));
    assert!(matches!(
        reader_page(b"<html></html>", &stamp("John Roe")),
        Err(StampError::NoCopyrightSection(_))
    ));
    assert!(matches!(
        pdf(b"%PDF-1.7 nothing", &stamp("Jane Roe")),
        Err(StampError::NotAPdf(_))
    ));
}

#[test]
fn the_stamped_epub_passes_epubcheck() {
    if !crate::test_support::need::epubcheck() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (name, language) in [(HOSTILE, "en"), ("محمد بن موسى", "ar")] {
        let stamped = epub(&EPUB, &Stamp::new(name, LINK, language).unwrap()).unwrap();
        let path = dir.path().join("stamped.epub");
        std::fs::write(&path, &stamped).unwrap();
        let problems = crate::test_support::epubcheck::check(&path);
        assert!(problems.is_empty(), "{name}: {problems:#?}");
    }
}

// The web reader.

#[test]
fn the_readers_copyright_notice_has_the_line_and_only_it() {
    let page = reader_page(&READER_INDEX, &stamp(HOSTILE)).unwrap();
    let page = String::from_utf8(page).unwrap();
    let line = stamp(HOSTILE).paragraph(false);
    assert!(page.contains(&format!("{line}</section>")), "{page}");
    assert!(!line.contains("xml:lang"));
    // What the service worker leaves out of the page's digest is the line, whole: the page
    // without it is the build's own, byte for byte.
    assert_eq!(page.replacen(&line, "", 1).into_bytes(), *READER_INDEX);
    let rtl = reader_page(&READER_INDEX, &Stamp::new("Jane Roe", LINK, "he").unwrap()).unwrap();
    let rtl = String::from_utf8(rtl).unwrap();
    assert!(
        rtl.contains("<p id=\"advance-copy\" lang=\"he\" dir=\"rtl\">עותק קריאה מוקדם עבור <bdi>Jane Roe</bdi>, לא למכירה.</p>\n</section>"),
        "{rtl}"
    );
}

// The print edition.

/// The copyright page's object: the interior's destination.
fn copyright_page_of(doc: &Document) -> ObjectId {
    super::pdf::copyright_page(doc).unwrap()
}

/// The text the stamp's form shows on the copyright page, decoded through its fonts.
fn stamped_text(bytes: &[u8]) -> String {
    let doc = Document::load_mem(bytes).unwrap();
    let page = doc.get_dictionary(copyright_page_of(&doc)).unwrap();
    let resources = page
        .get_deref(b"Resources", &doc)
        .unwrap()
        .as_dict()
        .unwrap();
    let forms = resources
        .get_deref(b"XObject", &doc)
        .unwrap()
        .as_dict()
        .unwrap();
    let form = forms
        .get_deref(b"BinderyAdvanceCopy", &doc)
        .unwrap()
        .as_stream()
        .unwrap();
    let fonts = form
        .dict
        .get_deref(b"Resources", &doc)
        .and_then(|r| r.as_dict())
        .and_then(|r| r.get_deref(b"Font", &doc))
        .and_then(|f| f.as_dict())
        .unwrap();
    let content = lopdf::content::Content::decode(&form.decompressed_content().unwrap()).unwrap();
    let mut text = String::new();
    let mut encoding = None;
    for op in &content.operations {
        match op.operator.as_str() {
            "Tf" => {
                let name = op.operands[0].as_name().unwrap();
                let font = fonts.get_deref(name, &doc).unwrap().as_dict().unwrap();
                encoding = Some(font.get_font_encoding(&doc).unwrap());
            }
            "Tj" | "TJ" => {
                for operand in &op.operands {
                    let parts = match operand {
                        Object::Array(parts) => parts.clone(),
                        other => vec![other.clone()],
                    };
                    for part in parts {
                        if let (Object::String(bytes, _), Some(encoding)) = (&part, &encoding) {
                            text.push_str(&Document::decode_text(encoding, bytes).unwrap());
                        }
                    }
                }
            }
            _ => {}
        }
    }
    text
}

#[test]
fn the_pdf_keeps_every_original_byte_and_prints_the_line_on_the_copyright_page() {
    let stamped = pdf(&PDF, &stamp("Jane Roe")).unwrap();
    assert!(
        stamped.starts_with(&PDF),
        "the original is the stamped file's prefix"
    );
    assert!(stamped.len() > PDF.len());
    let doc = Document::load_mem(&stamped).unwrap();
    let original = Document::load_mem(&PDF).unwrap();
    assert_eq!(doc.get_pages().len(), original.get_pages().len());
    // The copyright page, the title page's verso, is the one changed.
    assert_eq!(
        doc.get_pages().get(&4).copied(),
        Some(copyright_page_of(&doc))
    );
    assert_eq!(
        stamped_text(&stamped),
        "Advance reader copy for Jane Roe, not for sale."
    );
    // The page's own text is still there.
    let own = doc.extract_text(&[4]).unwrap();
    assert!(own.contains("Public domain in the USA."), "{own}");
    assert_eq!(stamped, pdf(&PDF, &stamp("Jane Roe")).unwrap());
    assert_ne!(stamped, pdf(&PDF, &stamp("John Roe")).unwrap());
    assert!(matches!(
        pdf(&stamped, &stamp("John Roe")),
        Err(StampError::AlreadyStamped(_))
    ));
}

#[test]
fn a_pdf_x_interior_is_stamped_in_its_own_kind_of_cross_reference() {
    let stamped = pdf(&PDF_X, &stamp("Jane Roe")).unwrap();
    assert!(stamped.starts_with(&PDF_X));
    let update = &stamped[PDF_X.len()..];
    assert!(
        update.windows(5).any(|w| w == b"xref\n"),
        "a classic table, as PDF 1.3 has"
    );
    assert_eq!(
        stamped_text(&stamped),
        "Advance reader copy for Jane Roe, not for sale."
    );
}

#[test]
fn independent_readers_open_the_stamped_pdf_and_read_the_line() {
    if !crate::test_support::need::pdf_tools() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (label, interior) in [("plain", &*PDF), ("pdfx", &*PDF_X)] {
        let path = dir.path().join(format!("{label}.pdf"));
        std::fs::write(&path, pdf(interior, &stamp("Żaneta Roe")).unwrap()).unwrap();
        let check = std::process::Command::new("qpdf")
            .arg("--check")
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            check.status.success(),
            "{label}: {}{}",
            String::from_utf8_lossy(&check.stdout),
            String::from_utf8_lossy(&check.stderr)
        );
        let text = std::process::Command::new("pdftotext")
            .args(["-f", "4", "-l", "4"])
            .arg(&path)
            .arg("-")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&text.stdout);
        assert!(
            text.contains("Advance reader copy for Żaneta Roe, not for sale."),
            "{label}: {text}"
        );
    }
}

#[test]
fn names_in_any_script_are_printed() {
    if !crate::test_support::need::noto_fonts() {
        return;
    }
    for (name, language) in [
        ("Ἀλέξανδρος", "el"),
        ("محمد", "ar"),
        ("محمد", "en"),
        ("山田", "ja"),
        ("Żaneta", "pl"),
    ] {
        let stamp = Stamp::new(name, LINK, language).unwrap();
        let stamped = pdf(&PDF, &stamp).unwrap_or_else(|e| panic!("{name} ({language}): {e}"));
        // Right-to-left words are shown in the order they are seen: each letter is there.
        let text = stamped_text(&stamped);
        assert!(
            name.chars().all(|c| text.contains(c)),
            "{name} ({language}): {text}"
        );
    }
}
