use std::collections::BTreeMap;
use std::io::{Cursor, Read};

use super::nav::toc;
use super::*;
use crate::document::{Chapter, Division, Document};
use crate::ebook::cover;
use crate::ebook::xhtml::fixture::{self, p, t};
use crate::ebook::xhtml::render_chapter;
use crate::manuscript::Limits;

fn build(book: &Book, resources: &BTreeMap<String, Vec<u8>>) -> Vec<u8> {
    let chapters: Vec<String> = (0..book.document.chapters.len())
        .map(|i| render_chapter(book, i, Target::Epub).body)
        .collect();
    package(book, &chapters, resources).expect("test setup")
}

/// The fixture book with a generated cover.
fn full_book() -> (Book, BTreeMap<String, Vec<u8>>) {
    let mut book = fixture::book();
    let mut resources = fixture::resources();
    let (info, bytes) = cover::generate(&book.metadata);
    resources.insert(info.file_name.clone(), bytes);
    book.cover = Some(info);
    (book, resources)
}

/// A small book with the novel's cover and hostile metadata.
fn plain_book() -> (Book, BTreeMap<String, Vec<u8>>) {
    let path = crate::test_support::fixture("love-among-the-chickens-cover.jpg");
    let bytes = std::fs::read(path).expect("test setup");
    let (info, bytes) =
        cover::prepare("cover.jpg", &bytes, &Limits::default()).expect("test setup");
    let mut metadata = fixture::metadata();
    metadata.title = "<script>alert(1)</script> ]]> \u{1}Title".into();
    metadata.subtitle = None;
    metadata.authors = vec![];
    metadata.isbn = None;
    metadata.identifier = "urn:uuid:5e0c1b0a-8f3e-5b8e-9d7e-0a1b2c3d4e5f".into();
    metadata.publisher = None;
    metadata.series_number = Some("Book Two".into());
    metadata.rights = None;
    metadata.modified = "yesterday".into();
    let book = Book {
        metadata,
        document: Document {
            chapters: vec![Chapter {
                title: String::new(),
                division: Division::Chapter,
                blocks: vec![p(vec![t("Just one untitled chapter & nothing else.")])],
            }],
            ..Document::default()
        },
        cover: Some(info.clone()),
        print: None,
        style: Default::default(),
        style_files: Vec::new(),
    };
    (book, BTreeMap::from([(info.file_name, bytes)]))
}

/// Every message of severity warning or worse EPUBCheck finds in the book; none when it is
/// not installed and the run allows that (`test_support::need`).
fn epubcheck(epub: &[u8]) -> Vec<String> {
    if !crate::test_support::need::epubcheck() {
        return Vec::new();
    }
    let dir = tempfile::tempdir().expect("test setup");
    let path = dir.path().join("book.epub");
    std::fs::write(&path, epub).expect("test setup");
    crate::test_support::epubcheck::check(&path)
}

#[test]
fn the_full_book_passes_epubcheck() {
    let (book, resources) = full_book();
    let problems = epubcheck(&build(&book, &resources));
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn a_plain_book_with_a_photo_cover_and_hostile_metadata_passes_epubcheck() {
    let (book, resources) = plain_book();
    let epub = build(&book, &resources);
    let problems = epubcheck(&epub);
    assert!(problems.is_empty(), "{problems:#?}");
    let opf = entry(&epub, "OEBPS/content.opf");
    assert!(opf.contains("&lt;script&gt;alert(1)&lt;/script&gt; ]]&gt; Title"));
    assert!(opf.contains("<meta property=\"dcterms:modified\">2000-01-01T00:00:00Z</meta>"));
    // "Book Two" is no number: the series is kept, its position left out.
    assert!(opf.contains("collection-type\">series<") && !opf.contains("group-position"));
    let copyright = entry(&epub, "OEBPS/copyright.xhtml");
    assert!(copyright.contains("All rights reserved."));
    assert!(copyright.contains("Identifier: urn:uuid:"));
    assert!(copyright.contains("Made with Bindery."));
}

fn entries(epub: &[u8]) -> Vec<String> {
    let mut archive = zip::ZipArchive::new(Cursor::new(epub)).expect("test setup");
    (0..archive.len())
        .map(|i| {
            archive
                .by_index(i)
                .expect("test setup")
                .name()
                .expect("test setup")
                .into_owned()
        })
        .collect()
}

fn entry(epub: &[u8], name: &str) -> String {
    let mut archive = zip::ZipArchive::new(Cursor::new(epub)).expect("test setup");
    let mut file = archive.by_name(name).expect("test setup");
    let mut text = String::new();
    file.read_to_string(&mut text).expect("test setup");
    text
}

#[test]
fn the_container_starts_with_a_stored_mimetype_and_lists_every_part() {
    let (book, resources) = full_book();
    let epub = build(&book, &resources);
    assert_eq!(&epub[0..4], b"PK\x03\x04");
    assert_eq!(&epub[8..10], &[0, 0], "mimetype must be stored");
    assert_eq!(&epub[26..28], &[8, 0], "name length");
    assert_eq!(&epub[28..30], &[0, 0], "no extra field");
    assert_eq!(&epub[30..38], b"mimetype");
    assert_eq!(&epub[38..58], b"application/epub+zip");
    let names = entries(&epub);
    let expected_start = [
        "mimetype",
        "META-INF/container.xml",
        "OEBPS/content.opf",
        "OEBPS/nav.xhtml",
        "OEBPS/toc.ncx",
        "OEBPS/css/book.css",
        "OEBPS/cover.xhtml",
        "OEBPS/titlepage.xhtml",
        "OEBPS/copyright.xhtml",
        "OEBPS/chapter-001.xhtml",
    ];
    assert_eq!(&names[..expected_start.len()], expected_start);
    assert!(names.contains(&"OEBPS/chapter-016.xhtml".to_owned()));
    assert!(names.contains(&"OEBPS/cover.svg".to_owned()));
    assert!(names.contains(&"OEBPS/images/dot.png".to_owned()));
    assert!(names.contains(&"OEBPS/images/photo.jpg".to_owned()));
    // Every XHTML file names the book's language and links the stylesheet.
    for name in names.iter().filter(|n| n.ends_with(".xhtml")) {
        let page = entry(&epub, name);
        fixture::assert_well_formed(&page);
        assert!(page.contains("lang=\"en\" xml:lang=\"en\""), "{name}");
        assert!(page.contains("<title>"), "{name}");
        assert!(page.contains("href=\"css/book.css\""), "{name}");
    }
}

#[test]
fn the_same_book_gives_the_same_bytes() {
    let (book, resources) = full_book();
    let first = build(&book, &resources);
    let second = build(&book.clone(), &resources.clone());
    assert_eq!(first, second);
}

#[test]
fn the_package_document_describes_the_book() {
    let (book, resources) = full_book();
    let opf = entry(&build(&book, &resources), "OEBPS/content.opf");
    for needle in [
        "unique-identifier=\"pub-id\"",
        "<dc:identifier id=\"pub-id\">urn:isbn:9780306406157</dc:identifier>",
        "<dc:title id=\"title\">Love &amp; &lt;Chickens&gt;</dc:title>",
        "<meta refines=\"#title\" property=\"title-type\">main</meta>",
        "<dc:title id=\"subtitle\">A Farce in \"Three\" Parts</dc:title>",
        "<meta refines=\"#subtitle\" property=\"title-type\">subtitle</meta>",
        "<dc:creator id=\"creator-2\">A. N. Other</dc:creator>",
        "<meta refines=\"#creator-1\" property=\"role\" scheme=\"marc:relators\">aut</meta>",
        "<dc:language>en</dc:language>",
        "<dc:publisher>Herbert Jenkins</dc:publisher>",
        "<dc:date>1906</dc:date>",
        "<dc:subject>Humor</dc:subject>",
        "<dc:rights>Public domain in the USA.</dc:rights>",
        "<meta property=\"belongs-to-collection\" id=\"series\">Ukridge</meta>",
        "<meta refines=\"#series\" property=\"group-position\">1</meta>",
        "<meta property=\"dcterms:modified\">2024-05-01T12:00:00Z</meta>",
        "<meta property=\"schema:accessMode\">visual</meta>",
        "<meta property=\"schema:accessibilityHazard\">none</meta>",
        "properties=\"cover-image\"",
        "<item id=\"nav\" href=\"nav.xhtml\" media-type=\"application/xhtml+xml\" properties=\"nav\"/>",
        "<spine toc=\"ncx\">",
    ] {
        assert!(opf.contains(needle), "missing {needle}\n{opf}");
    }
    // One image has no alternative text: no conformance claim, no alternativeText feature.
    assert!(!opf.contains("alternativeText"));
    assert!(!opf.contains("conformsTo"));
    // An image the text never shows stays out.
    assert!(!opf.contains("ghost"));
}

#[test]
fn the_table_of_contents_nests_parts_chapters_and_headings() {
    let book = fixture::book();
    let points = toc(&book);
    let labels: Vec<&str> = points.iter().map(|p| p.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "Dedication",
            "Epigraph",
            "Foreword",
            "Preface",
            "Introduction",
            "Prologue",
            "Part One",
            "Epilogue",
            "Afterword",
            "Acknowledgments",
            "Appendix A",
            "Glossary",
            "Bibliography",
            "Notes"
        ]
    );
    let part = &points[6];
    assert_eq!(part.children.len(), 2);
    let chapter = &part.children[0];
    assert_eq!(chapter.href, "chapter-008.xhtml");
    assert_eq!(chapter.children[0].label, "A Subheading");
    assert_eq!(chapter.children[0].href, "chapter-008.xhtml#sub");
    assert_eq!(chapter.children[0].children[0].label, "A Skipped Level");
    assert_eq!(part.children[1].label, "Chapter 2");

    let (book, resources) = full_book();
    let epub = build(&book, &resources);
    let nav = entry(&epub, "OEBPS/nav.xhtml");
    assert!(nav.contains("<a epub:type=\"bodymatter\" href=\"chapter-007.xhtml\">"));
    assert!(nav.contains("<a epub:type=\"cover\" href=\"cover.xhtml\">"));
    let ncx = entry(&epub, "OEBPS/toc.ncx");
    assert!(ncx.contains("<meta name=\"dtb:uid\" content=\"urn:isbn:9780306406157\"/>"));
    assert!(ncx.contains("<meta name=\"dtb:depth\" content=\"4\"/>"));
}

#[test]
fn a_book_whose_images_are_described_claims_conformance() {
    let mut book = fixture::book();
    book.document.chapters.truncate(1);
    book.document.chapters[0]
        .blocks
        .push(crate::document::Block::Figure {
            image: "photo.jpg".into(),
            alt: "A hen".into(),
            caption: vec![],
        });
    let opf = entry(&build(&book, &fixture::resources()), "OEBPS/content.opf");
    assert!(opf.contains("<meta property=\"schema:accessibilityFeature\">alternativeText</meta>"));
    assert!(opf.contains("EPUB Accessibility 1.1 - WCAG 2.1 Level AA"));
    assert!(!opf.contains("images/dot.png"));
}

#[test]
fn missing_bytes_or_chapters_are_errors_not_broken_books() {
    let book = fixture::book();
    let chapters: Vec<String> = (0..book.document.chapters.len())
        .map(|i| render_chapter(&book, i, Target::Epub).body)
        .collect();
    let err = package(&book, &chapters, &BTreeMap::new()).expect_err("must be refused");
    assert!(err.to_string().contains("has no bytes"), "{err}");
    assert!(package(&book, &chapters[1..], &fixture::resources()).is_err());
}

#[test]
fn a_book_without_chapters_or_cover_still_passes_epubcheck() {
    let book = Book {
        metadata: fixture::metadata(),
        document: Document::default(),
        cover: None,
        print: None,
        style: Default::default(),
        style_files: Vec::new(),
    };
    let epub = build(&book, &BTreeMap::new());
    let problems = epubcheck(&epub);
    assert!(problems.is_empty(), "{problems:#?}");
    assert!(!entries(&epub).contains(&"OEBPS/cover.xhtml".to_owned()));
}

/// The checks above would pass vacuously if their reading of EPUBCheck's output missed
/// its messages.
#[test]
fn epubcheck_problems_are_seen() {
    if !crate::test_support::need::epubcheck() {
        return;
    }
    let (book, resources) = plain_book();
    let mut chapters = vec![render_chapter(&book, 0, Target::Epub).body];
    chapters[0].push_str("<p><a href=\"chapter-999.xhtml\">broken</a></p>");
    let problems = epubcheck(&package(&book, &chapters, &resources).expect("package"));
    assert!(!problems.is_empty());
}

/// The fixture book marking a print edition: a page at each chapter's start (with a blank
/// verso before the second chapter's), one mid-word in its second text block, and one past
/// the end of the book.
fn paged_book(isbn: Option<&str>) -> (Book, BTreeMap<String, Vec<u8>>) {
    use crate::document::positions::{PageStart, TextPosition, text_blocks};
    let (mut book, resources) = full_book();
    let mut pages = Vec::new();
    let mut page = |chapter, block, offset| {
        pages.push(PageStart {
            label: (pages.len() + 1).to_string(),
            at: TextPosition {
                chapter,
                block,
                offset,
            },
        });
    };
    for (c, chapter) in book.document.chapters.iter().enumerate() {
        let blocks = text_blocks(chapter);
        page(c, 0, 0);
        if c == 1 {
            page(c, 0, 0);
        }
        if let Some(second) = blocks.get(1) {
            let text = crate::document::inline_text(second);
            let middle = text
                .char_indices()
                .map(|(i, _)| i)
                .nth(text.chars().count() / 2);
            page(c, 1, middle.unwrap_or(0));
        }
    }
    page(usize::MAX, 0, 0);
    book.mark_print_pages(
        crate::ebook::PrintEdition {
            trim: "5 × 8 in".into(),
            isbn: isbn.map(str::to_owned),
            edition: None,
        },
        &pages,
    );
    (book, resources)
}

#[test]
fn a_book_marking_its_print_pages_lists_them_and_passes_epubcheck() {
    let (book, resources) = paged_book(Some("978-1-56619-909-4"));
    let markers = crate::ebook::xhtml::printed_pages(&book, Target::Epub);
    assert!(markers.len() > 20, "{} pages", markers.len());
    let epub = build(&book, &resources);
    let problems = epubcheck(&epub);
    assert!(problems.is_empty(), "{problems:#?}");

    let opf = entry(&epub, "OEBPS/content.opf");
    for needle in [
        "<meta property=\"pageBreakSource\">urn:isbn:9781566199094</meta>",
        "<meta property=\"schema:accessibilityFeature\">pageBreakMarkers</meta>",
        "<meta property=\"schema:accessibilityFeature\">pageNavigation</meta>",
        "It marks the pages of the print edition",
    ] {
        assert!(opf.contains(needle), "missing {needle}\n{opf}");
    }
    // Every page in the list, in order, each to a marker that is there, with a unique id.
    let nav = entry(&epub, "OEBPS/nav.xhtml");
    let list = &nav[nav.find("epub:type=\"page-list\"").expect("a page list")..];
    let list = &list[..list.find("</nav>").expect("the list ends")];
    let hrefs: Vec<&str> = list
        .split("<a href=\"")
        .skip(1)
        .map(|a| &a[..a.find('"').expect("href")])
        .collect();
    assert_eq!(hrefs.len(), markers.len());
    let mut ids = std::collections::BTreeSet::new();
    for (n, href) in hrefs.iter().enumerate() {
        let (file, id) = href.split_once('#').expect("a fragment");
        assert!(ids.insert(id), "{id} twice");
        let chapter = entry(&epub, &format!("OEBPS/{file}"));
        let marker = format!(
            "<span epub:type=\"pagebreak\" role=\"doc-pagebreak\" class=\"pagebreak\" id=\"{id}\" title=\"{}\"></span>",
            n + 1
        );
        assert!(chapter.contains(&marker), "no {marker} in {file}");
        assert!(list.contains(&format!("<a href=\"{href}\">{}</a>", n + 1)));
    }
    // The second chapter (the epigraph) opens with its blank verso's page and its own.
    let second = entry(&epub, "OEBPS/chapter-002.xhtml");
    let opening: Vec<&str> = hrefs
        .iter()
        .filter_map(|h| h.strip_prefix("chapter-002.xhtml#"))
        .take(2)
        .collect();
    let at = |id: &str| second.find(&format!("id=\"{id}\"")).expect("marker");
    let text = second.find("Cluck, said the hen.").expect("the epigraph");
    assert!(
        at(opening[0]) < at(opening[1]) && at(opening[1]) < text,
        "{second}"
    );
}

#[test]
fn without_an_isbn_the_page_source_is_the_print_editions_title_and_trim() {
    let (book, resources) = paged_book(None);
    let opf = entry(&build(&book, &resources), "OEBPS/content.opf");
    assert!(
        opf.contains(
            "<meta property=\"pageBreakSource\">Love &amp; &lt;Chickens&gt;, print edition, 5 × 8 in trim</meta>"
        ),
        "{opf}"
    );
}

#[test]
fn a_book_without_print_pages_has_no_page_list_and_claims_none() {
    let (book, resources) = full_book();
    let epub = build(&book, &resources);
    let (opf, nav) = (
        entry(&epub, "OEBPS/content.opf"),
        entry(&epub, "OEBPS/nav.xhtml"),
    );
    assert!(!nav.contains("page-list"));
    for absent in ["pageBreakSource", "pageBreakMarkers", "pageNavigation"] {
        assert!(!opf.contains(absent), "{absent} in {opf}");
    }
    // An edition with no pages marks nothing and names nothing.
    let mut unmarked = book.clone();
    unmarked.mark_print_pages(
        crate::ebook::PrintEdition {
            trim: "6 × 9 in".into(),
            isbn: None,
            edition: None,
        },
        &[],
    );
    assert_eq!(unmarked, book);
}
