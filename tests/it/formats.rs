//! Manuscripts other tools wrote (issue 47): OpenDocument from LibreOffice, EPUB 2 and 3 from
//! pandoc and LibreOffice, a standalone web page from pandoc and a Google Docs "Web page"
//! zip. For each format: the document model holds every construct the file has, the EPUB
//! passes Ace (EPUBCheck passes every fixture in `convert::every_corpus_file_…`, and the
//! words are counted against pandoc's in `convert::other_formats_keep_…`), the print
//! edition is made, and a damaged or disguised file gets a clear error or, when it is
//! another format Bindery reads, is read as what it is with the mismatch warning.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use bindery::manuscript::{self, Format, ReadOptions};
use serde_json::Value;

use crate::common::{self, BIN, corpus};

fn read(path: &Path) -> (Format, bindery::document::Parsed) {
    let bytes = std::fs::read(path).expect("fixture");
    let options = ReadOptions {
        file_name: path.file_name().map(|n| n.to_string_lossy().into_owned()),
        ..ReadOptions::default()
    };
    let (ingested, parsed) =
        manuscript::read(&bytes, &options).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (ingested.format, parsed)
}

/// How many of each kind of block and inline the model holds (`note_ref`, `emphasis`,
/// `table`…), counted from its serialised form, notes included.
fn kinds(parsed: &bindery::document::Parsed) -> BTreeMap<String, usize> {
    fn walk(value: &Value, counts: &mut BTreeMap<String, usize>) {
        match value {
            Value::Object(map) => {
                // An enum variant is an object of one key.
                if map.len() == 1
                    && let Some((key, _)) = map.iter().next()
                {
                    *counts.entry(key.clone()).or_default() += 1;
                }
                map.values().for_each(|v| walk(v, counts));
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, counts)),
            _ => {}
        }
    }
    let mut counts = BTreeMap::new();
    let json = serde_json::to_value(&parsed.document).expect("the model serialises");
    walk(&json["chapters"], &mut counts);
    walk(&json["notes"], &mut counts);
    counts
}

fn text(parsed: &bindery::document::Parsed) -> String {
    parsed
        .document
        .chapters
        .iter()
        .map(|c| bindery::document::plain_text(&c.blocks))
        .chain(
            parsed
                .document
                .notes
                .iter()
                .map(|n| bindery::document::plain_text(&n.blocks)),
        )
        .collect::<Vec<_>>()
        .join("\n")
}

fn has(counts: &BTreeMap<String, usize>, kind: &str, at_least: usize) {
    let n = counts.get(kind).copied().unwrap_or(0);
    assert!(n >= at_least, "{n} {kind}, not {at_least}: {counts:?}");
}

fn codes(parsed: &bindery::document::Parsed) -> Vec<String> {
    parsed.warnings.iter().map(|w| w.code.clone()).collect()
}

#[test]
fn opendocument_holds_headings_notes_lists_tables_images_and_formulas() {
    let odt = corpus().join("odt");
    let (format, notes) = read(&odt.join("notes.odt"));
    assert_eq!(format, Format::Odt);
    assert_eq!(notes.document.notes.len(), 3);
    assert_eq!(
        notes
            .document
            .notes
            .iter()
            .filter(|n| n.kind == bindery::document::NoteKind::Endnote)
            .count(),
        1,
        "the endnote stays one"
    );
    has(&kinds(&notes), "note_ref", 3);
    has(&kinds(&notes), "link", 3);
    assert!(text(&notes).contains("A second paragraph in the same footnote."));

    let (_, lists) = read(&odt.join("lists.odt"));
    let counts = kinds(&lists);
    has(&counts, "list", 6);
    let json = serde_json::to_string(&lists.document).expect("json");
    assert!(
        json.contains("\"lower_alpha\"") || json.contains("\"lower_roman\""),
        "{json}"
    );
    // The list continued after a paragraph goes on counting.
    assert!(json.contains("\"start\":4"), "{json}");

    let (_, tables) = read(&odt.join("tables.odt"));
    let json = serde_json::to_value(&tables.document)
        .expect("json")
        .to_string();
    assert!(
        json.contains("\"rowspan\":2") && json.contains("\"colspan\":2"),
        "{json}"
    );
    assert!(text(&tables).contains("Eggs laid by breed"));

    let (_, images) = read(&odt.join("images.odt"));
    assert_eq!(images.document.images.len(), 3);
    assert!(
        serde_json::to_string(&images.document)
            .expect("json")
            .contains("A blue field under a wide sky"),
        "the description is the alt text"
    );

    for file in ["equations.odt", "equations.fodt"] {
        let (_, equations) = read(&odt.join(file));
        let counts = kinds(&equations);
        has(&counts, "math", 26);
        let json = serde_json::to_string(&equations.document).expect("json");
        assert!(json.contains("<mfrac>"), "{file}: fractions are MathML");
    }

    let (_, changes) = read(&odt.join("tracked-changes.odt"));
    let all = text(&changes);
    assert!(all.contains("nearly forty"), "an insertion is kept: {all}");
    assert!(!all.contains("sickly"), "a deletion is not: {all}");

    let (_, comments) = read(&odt.join("comments.odt"));
    assert!(codes(&comments).contains(&"comment_dropped".to_owned()));

    let (_, headings) = read(&odt.join("headings-and-properties.odt"));
    let meta = &headings.document.metadata;
    assert_eq!(meta.title.as_deref(), Some("Headings and Properties"));
    assert_eq!(meta.subtitle.as_deref(), Some("A Subtitle for the Book"));
    assert_eq!(meta.authors, ["Ada Writer", "Ben Writer"]);
    assert_eq!(meta.language.as_deref(), Some("en-GB"));
    let titles: Vec<&str> = headings
        .document
        .chapters
        .iter()
        .map(|c| c.title.as_str())
        .collect();
    assert!(titles.contains(&"Numbered Heading"), "{titles:?}");

    // The novel, saved by LibreOffice, reads as its Word original does.
    let (_, odt_novel) = read(&odt.join("love-among-the-chickens.odt"));
    let (_, docx_novel) = read(&corpus().join("docx/love-among-the-chickens.docx"));
    assert_eq!(
        odt_novel.document.chapters.len(),
        docx_novel.document.chapters.len()
    );
    assert_eq!(kinds(&odt_novel), kinds(&docx_novel));
}

#[test]
fn an_epub_gives_its_text_notes_metadata_and_cover_without_its_tools_pages() {
    let (format, book) = read(&corpus().join("epub/features-pandoc.epub"));
    assert_eq!(format, Format::Epub);
    let meta = &book.document.metadata;
    assert_eq!(meta.title.as_deref(), Some("The Keeper’s Almanac"));
    assert_eq!(meta.authors, ["Ada Writer"]);
    assert_eq!(meta.language.as_deref(), Some("en-GB"));
    assert_eq!(meta.subjects, ["Lighthouses"]);
    let titles: Vec<&str> = book
        .document
        .chapters
        .iter()
        .map(|c| c.title.as_str())
        .collect();
    assert_eq!(titles, ["The Lamp", "The Tides"]);
    let counts = kinds(&book);
    for (kind, n) in [
        ("note_ref", 2),
        ("emphasis", 1),
        ("strong", 1),
        ("strikethrough", 1),
        ("subscript", 1),
        ("superscript", 1),
        ("list", 3),
        ("table", 1),
        ("figure", 1),
        ("math", 2),
        ("block_quote", 1),
    ] {
        has(&counts, kind, n);
    }
    assert_eq!(book.document.notes.len(), 2);
    assert!(text(&book).contains("It rose again by morning."));
    // The link to the other chapter's heading still goes there.
    let json = serde_json::to_string(&book.document).expect("json");
    assert!(json.contains("\"internal\""), "{json}");
    assert!(
        codes(&book).contains(&"epub_front_matter_left_out".to_owned()),
        "{:?}",
        codes(&book)
    );
    assert!(
        !text(&book).contains("A Test of Every Construct"),
        "no title page"
    );

    let (_, novel) = read(&corpus().join("epub/love-among-the-chickens.epub"));
    assert_eq!(novel.document.chapters.len(), 24);
    let (name, cover) = novel.cover.as_ref().expect("the EPUB's cover");
    assert!(name.ends_with(".jpg"), "{name}");
    assert_eq!(
        cover,
        &std::fs::read(corpus().join("love-among-the-chickens-cover.jpg")).expect("cover")
    );

    let (_, libre) = read(&corpus().join("epub/notes-libreoffice.epub"));
    assert_eq!(libre.document.notes.len(), 3);
    assert!(
        !text(&libre).contains("calledF"),
        "the notes' own numbers are gone"
    );
}

#[test]
fn a_google_docs_web_page_keeps_its_classes_notes_links_and_picture() {
    let (format, page) = read(&corpus().join("html/gdocs-web-page.zip"));
    assert_eq!(format, Format::Html);
    let meta = &page.document.metadata;
    assert_eq!(meta.title.as_deref(), Some("The Lighthouse Keeper"));
    assert_eq!(meta.subtitle.as_deref(), Some("A Novella in Two Chapters"));
    let counts = kinds(&page);
    for (kind, n) in [
        ("emphasis", 2),
        ("strong", 2),
        ("underline", 1),
        ("strikethrough", 1),
        ("subscript", 1),
        ("superscript", 1),
        ("note_ref", 2),
        ("list", 2),
        ("table", 1),
        ("figure", 1),
    ] {
        has(&counts, kind, n);
    }
    assert_eq!(page.document.notes.len(), 2);
    let second = bindery::document::plain_text(&page.document.notes[1].blocks);
    assert!(
        second.contains("960 hPa") && second.contains("It rose again by morning."),
        "a note of two paragraphs: {second}"
    );
    let json = serde_json::to_string(&page.document).expect("json");
    assert!(
        json.contains("\"https://example.com/notice\""),
        "Google's redirector is undone: {json}"
    );
    assert!(!json.contains("google.com/url"), "{json}");
    assert!(!text(&page).contains("[1]"), "note labels are not text");

    let (_, pandoc) = read(&corpus().join("html/features-pandoc.html"));
    let counts = kinds(&pandoc);
    has(&counts, "math", 2);
    has(&counts, "note_ref", 2);
    has(&counts, "figure", 1);
    assert_eq!(pandoc.document.images.len(), 1, "the embedded picture");
}

/// Each format's fixture makes a print edition, with its text in the PDF.
#[test]
fn each_format_makes_a_print_edition() {
    if !common::need::pdf_tools() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    for (file, phrase) in [
        ("odt/lists.odt", "Chicken wire, the fine kind"),
        ("odt/equations.fodt", "is the frac equation"),
        ("epub/features-pandoc.epub", "always lit by six"),
        ("html/gdocs-web-page.zip", "The tides that week"),
    ] {
        let pdf = dir.path().join("book.pdf");
        let out = crate::convert::convert(
            &corpus().join(file),
            &dir.path().join("book.epub"),
            &["--quiet", "--pdf", pdf.to_str().expect("path")],
        );
        assert!(
            out.status.success(),
            "{file}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = common::succeed(Command::new("pdftotext").arg(&pdf).arg("-"), "pdftotext");
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(text.contains(phrase), "{file}: {phrase:?} not in the PDF");
    }
}

/// Ace finds nothing in the EPUBs made from each format (math and pictures included).
#[test]
fn ace_passes_the_books_made_from_each_format() {
    if !common::need::ace() {
        return;
    }
    let _heavy = common::heavy();
    for file in [
        "odt/equations.odt",
        "epub/features-pandoc.epub",
        "html/gdocs-web-page.zip",
    ] {
        let name = format!("formats-{}", file.replace(['/', '.'], "-"));
        let checked = crate::ace::ace(&name, &corpus().join(file), &[]);
        assert!(
            checked.violations.is_empty(),
            "{file}:\n{}",
            checked.violations.join("\n")
        );
    }
}

fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    {
        let mut zip = zip::ZipWriter::new(&mut out);
        let stored = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        for (name, bytes) in entries {
            zip.start_file(*name, stored).expect("entry");
            zip.write_all(bytes).expect("write");
        }
        zip.finish().expect("zip");
    }
    out.into_inner()
}

/// `bindery convert` on `bytes` saved as `name`: its exit code, its JSON report (when it
/// wrote a book) and its error output.
fn convert_bytes(dir: &Path, name: &str, bytes: &[u8]) -> (Option<i32>, Value, String) {
    convert_bytes_with(dir, name, bytes, &[])
}

fn convert_bytes_with(
    dir: &Path,
    name: &str,
    bytes: &[u8],
    env: &[(&str, &str)],
) -> (Option<i32>, Value, String) {
    let input: PathBuf = dir.join(name);
    std::fs::write(&input, bytes).expect("write");
    let out = Command::new(BIN)
        .envs(env.iter().copied())
        .arg("convert")
        .arg(&input)
        .arg("-o")
        .arg(dir.join("out.epub"))
        .arg("--json")
        .output()
        .expect("run bindery");
    let report = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (
        out.status.code(),
        report,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn damaged_or_disguised_files_are_read_as_what_they_are_or_refused_saying_why() {
    let dir = tempfile::tempdir().expect("tempdir");
    let docx = std::fs::read(corpus().join("docx/notes.docx")).expect("docx");
    let odt = std::fs::read(corpus().join("odt/notes.odt")).expect("odt");
    let warned = |report: &Value, code: &str| {
        report["report"]["warnings"]
            .as_array()
            .is_some_and(|w| w.iter().any(|w| w["code"] == code))
    };

    // A Word document named .odt is read as the Word document it is, and the report says so.
    let (code, report, stderr) = convert_bytes(dir.path(), "notes.odt", &docx);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(report["report"]["format"], "docx");
    assert!(warned(&report, "format_mismatch"), "{report}");
    // And an OpenDocument named .epub, as OpenDocument.
    let (code, report, stderr) = convert_bytes(dir.path(), "notes.epub", &odt);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(report["report"]["format"], "odt");
    assert!(warned(&report, "format_mismatch"), "{report}");

    // Damaged: an .odt cut in half.
    let (code, _, stderr) = convert_bytes(dir.path(), "cut.odt", &odt[..odt.len() / 2]);
    assert_eq!(code, Some(65), "{stderr}");
    assert!(
        stderr.contains("zip") || stderr.contains("archive"),
        "{stderr}"
    );

    // An EPUB whose text is encrypted: DRM, named as such.
    let epub = zip_of(&[
        ("mimetype", b"application/epub+zip"),
        (
            "META-INF/container.xml",
            br#"<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>"#,
        ),
        (
            "META-INF/encryption.xml",
            br#"<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" xmlns:enc="http://www.w3.org/2001/04/xmlenc#"><enc:EncryptedData><enc:EncryptionMethod Algorithm="http://www.w3.org/2001/04/xmlenc#aes128-cbc"/><enc:CipherData><enc:CipherReference URI="OEBPS/chapter.xhtml"/></enc:CipherData></enc:EncryptedData></encryption>"#,
        ),
        ("OEBPS/chapter.xhtml", b"\x8f\x13\x99 ciphertext"),
    ]);
    let (code, _, stderr) = convert_bytes(dir.path(), "locked.epub", &epub);
    assert_eq!(code, Some(65), "{stderr}");
    assert!(stderr.contains("DRM"), "{stderr}");

    // An EPUB without its container.
    let hollow = zip_of(&[
        ("mimetype", b"application/epub+zip"),
        (
            "OEBPS/chapter.xhtml",
            b"<html><body><p>Text</p></body></html>",
        ),
    ]);
    let (code, _, stderr) = convert_bytes(dir.path(), "hollow.epub", &hollow);
    assert_eq!(code, Some(65), "{stderr}");
    assert!(stderr.contains("container.xml"), "{stderr}");

    // A zip of pictures with no page.
    let pictures = zip_of(&[("images/a.png", b"\x89PNG\r\n\x1a\n")]);
    let (code, _, stderr) = convert_bytes(dir.path(), "page.zip", &pictures);
    assert_eq!(code, Some(65), "{stderr}");
    assert!(stderr.contains("no web page"), "{stderr}");

    // A spreadsheet saved by LibreOffice is not a manuscript.
    let sheet = zip_of(&[
        (
            "mimetype",
            b"application/vnd.oasis.opendocument.spreadsheet",
        ),
        ("content.xml", b"<office:document-content/>"),
    ]);
    let (code, _, stderr) = convert_bytes(dir.path(), "sums.ods", &sheet);
    assert_eq!(code, Some(65), "{stderr}");
    assert!(stderr.contains("spreadsheet"), "{stderr}");

    // An OpenDocument whose text inflates past `MAX_INFLATED_SIZE` is refused, as a DOCX is.
    let (code, _, stderr) = convert_bytes_with(
        dir.path(),
        "bomb.odt",
        &odt_bomb(),
        &[("MAX_INFLATED_SIZE", "1MiB")],
    );
    assert_eq!(code, Some(65), "{stderr}");
    assert!(stderr.contains("MAX_INFLATED_SIZE"), "{stderr}");
}

/// An .odt whose content.xml inflates from a few kilobytes to 8 MiB.
fn odt_bomb() -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    {
        let mut zip = zip::ZipWriter::new(&mut out);
        let stored = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        zip.start_file("mimetype", stored).expect("entry");
        zip.write_all(b"application/vnd.oasis.opendocument.text")
            .expect("write");
        let deflated = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        zip.start_file("content.xml", deflated).expect("entry");
        let chunk = vec![b' '; 1 << 20];
        for _ in 0..8 {
            zip.write_all(&chunk).expect("write");
        }
        zip.finish().expect("zip");
    }
    out.into_inner()
}
