//! The print edition's pages in the ebook: the corpus novel, paged every 300 words or so as the
//! typesetter would report it (each chapter opening a page, three pages of front matter before
//! the text), marked in the EPUB and the web reader. Every page in the EPUB's page list is a
//! marker followed by the text its page start named, EPUBCheck passes the book, and in
//! Chromium the reader shows the folios and goes to a page asked for by number.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;

use bindery::convert::{self, Options};
use bindery::document::positions::{PageStart, TextPosition, text_blocks};
use bindery::document::{Document, inline_text, word_count};
use bindery::ebook::xhtml::{Target, render_book};
use bindery::ebook::{Book, PrintEdition, reader};
use bindery::manuscript::Limits;

use crate::common::{self, corpus};

/// Words on a synthetic page.
const WORDS_PER_PAGE: usize = 300;

/// The novel as the pipeline assembles it, with its resources.
fn novel() -> (Book, convert::Resources) {
    let bytes = std::fs::read(corpus().join("markdown/love-among-the-chickens.md")).expect("novel");
    let options = Options {
        file_name: Some("love-among-the-chickens.md".into()),
        ..Options::default()
    };
    let limits = Limits::default();
    let ingested = convert::ingest(&bytes, &options, &limits).expect("ingest");
    let assembled =
        convert::assemble(&ingested, &bytes, None, &options, &limits, "en").expect("assemble");
    (assembled.book, assembled.resources)
}

/// A page start, and the words the book's text has from there (up to eight).
struct Expected {
    start: PageStart,
    words: Vec<String>,
}

/// Pages i–iii (front matter, no text of the book's) before the first word, then a page at
/// each chapter's opening and after every `WORDS_PER_PAGE` words within a chapter, numbered
/// from 1; each with the words that follow it.
fn synthetic_pages(document: &Document) -> Vec<Expected> {
    let mut pages: Vec<Expected> = Vec::new();
    let mut push = |label: String, at: TextPosition, words: Vec<String>| {
        pages.push(Expected {
            start: PageStart { label, at },
            words,
        });
    };
    let mut number = 0;
    for (c, chapter) in document.chapters.iter().enumerate() {
        let texts: Vec<String> = text_blocks(chapter)
            .into_iter()
            .map(|b| inline_text(b))
            .collect();
        // Every word of the chapter: (block, byte offset), and the chapter's words from there.
        let starts: Vec<(usize, usize)> = texts
            .iter()
            .enumerate()
            .flat_map(|(b, text)| word_starts(text).into_iter().map(move |o| (b, o)))
            .collect();
        let words: Vec<String> = texts
            .iter()
            .flat_map(|t| t.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
            .collect();
        for (w, &(block, offset)) in starts.iter().enumerate() {
            if w % WORDS_PER_PAGE != 0 {
                continue;
            }
            // The chapter's opening page begins at its start, not at its first word.
            let at = if w == 0 {
                TextPosition {
                    chapter: c,
                    block: 0,
                    offset: 0,
                }
            } else {
                TextPosition {
                    chapter: c,
                    block,
                    offset,
                }
            };
            let following: Vec<String> = words[w..].iter().take(8).cloned().collect();
            if c == 0 && w == 0 {
                for roman in ["i", "ii", "iii"] {
                    push(roman.into(), at, following.clone());
                }
            }
            number += 1;
            push(number.to_string(), at, following);
        }
    }
    pages
}

/// Byte offsets where the words of `text` begin.
fn word_starts(text: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let mut in_word = false;
    for (i, c) in text.char_indices() {
        if !c.is_whitespace() && !in_word {
            out.push(i);
        }
        in_word = !c.is_whitespace();
    }
    out
}

/// The novel with its synthetic pages marked, and what each page starts with.
fn paged_novel() -> (Book, convert::Resources, Vec<Expected>) {
    let (mut book, resources) = novel();
    let expected = synthetic_pages(&book.document);
    let words = word_count(&book.document);
    let starts: Vec<PageStart> = expected.iter().map(|e| e.start.clone()).collect();
    book.mark_print_pages(
        PrintEdition {
            trim: "5 × 8 in".into(),
            isbn: Some("978-0-306-40615-7".into()),
            edition: None,
        },
        &starts,
    );
    assert_eq!(word_count(&book.document), words, "markers are not words");
    (book, resources, expected)
}

/// Test output kept for a person (and Ace) to look at.
fn output_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("page-list");
    std::fs::create_dir_all(&dir).expect("output dir");
    dir
}

/// The text of some XHTML or HTML: tags dropped, the escapes Bindery writes decoded.
pub(crate) fn text_of(markup: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in markup.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

pub(crate) fn zip_entries(epub: &[u8]) -> BTreeMap<String, String> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(epub)).expect("zip");
    let mut out = BTreeMap::new();
    for i in 0..archive.len() {
        let mut file = archive.by_index(i).expect("entry");
        let mut text = String::new();
        if file.read_to_string(&mut text).is_ok() {
            out.insert(file.name().expect("entry name").into_owned(), text);
        }
    }
    out
}

#[test]
fn the_novels_page_list_leads_to_the_text_each_page_begins_with_and_epubcheck_passes() {
    let (book, resources, expected) = paged_novel();
    assert!(expected.len() > 150, "{} pages", expected.len());
    let chapters: Vec<String> = render_book(&book, Target::Epub)
        .into_iter()
        .map(|r| r.body)
        .collect();
    let epub = convert::package_epub(&book, &chapters, &resources).expect("package");
    let path = output_dir().join("love-among-the-chickens-paged.epub");
    std::fs::write(&path, &epub).expect("write the EPUB");
    println!("the paged EPUB is at {}", path.display());

    if common::need::epubcheck() {
        let problems = common::epubcheck::check(&path);
        assert!(problems.is_empty(), "EPUBCheck: {problems:#?}");
    }

    let files = zip_entries(&epub);
    let nav = &files["OEBPS/nav.xhtml"];
    let list = &nav[nav.find("epub:type=\"page-list\"").expect("a page list")..];
    let list = &list[..list.find("</nav>").expect("the list ends")];
    let entries: Vec<(&str, &str)> = list
        .split("<li><a href=\"")
        .skip(1)
        .map(|item| {
            let (href, rest) = item.split_once("\">").expect("href");
            (href, &rest[..rest.find("</a>").expect("label")])
        })
        .collect();
    assert_eq!(
        entries.len(),
        expected.len(),
        "one entry per page, none lost"
    );
    for ((href, label), page) in entries.iter().zip(&expected) {
        assert_eq!(*label, page.start.label, "the list is in page order");
        let (file, id) = href.split_once('#').expect("a fragment");
        let chapter = &files[&format!("OEBPS/{file}")];
        let marker = format!(
            "<span epub:type=\"pagebreak\" role=\"doc-pagebreak\" class=\"pagebreak\" id=\"{id}\" title=\"{label}\"></span>"
        );
        let at = chapter
            .find(&marker)
            .unwrap_or_else(|| panic!("page {label}: no marker {id} in {file}"));
        // Compared without spaces: markup splits words from their punctuation ("<em>Arthur</em>.").
        let after: String = text_of(&chapter[at + marker.len()..])
            .split_whitespace()
            .collect();
        let wanted = page.words.concat();
        assert!(
            after.starts_with(&wanted),
            "page {label}: the text after its marker is {:?}, not {wanted:?}",
            &after[..after.len().min(wanted.len() + 20)]
        );
    }
}

#[test]
fn the_reader_shows_the_printed_pages_and_goes_to_one_by_number_in_chromium() {
    if !common::need::browser() {
        return;
    }
    let (book, resources, expected) = paged_novel();
    let chapters: Vec<String> = render_book(&book, Target::Web)
        .into_iter()
        .map(|r| r.body)
        .collect();
    let site = tempfile::tempdir().expect("tempdir");
    let files = convert::package_reader(&book, &chapters, &resources, &reader::Links::default())
        .expect("reader");
    for (path, bytes) in files {
        std::fs::write(site.path().join(&path), bytes).expect("write the site");
    }
    // A page well inside the book, and what it begins with.
    let page = expected
        .iter()
        .find(|e| e.start.label == "112")
        .expect("the novel has a page 112");
    let served = common::reader_site::serve(site.path());
    let shots = output_dir().join("screenshots");
    std::fs::create_dir_all(&shots).expect("screenshots");
    common::browser_passes(
        common::browser_script("page-list.mjs")
            .arg(served.url("index.html"))
            .arg(&shots)
            .arg(&page.start.label)
            .arg(page.words.join(" ")),
        "the page list",
    );
}
