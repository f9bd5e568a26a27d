//! Tests of the whole site. The browser tests of the reader (`tests/it/reader_browser.rs` and
//! others) read sites the server serves.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Cursor;

use html5gum::{Token, Tokenizer};
use image::{DynamicImage, ImageFormat, Rgba, RgbaImage};

use super::*;
use crate::document::{Chapter, Division, Document, Image};
use crate::ebook::{BookMetadata, CoverInfo};

fn png(width: u32, height: u32, colour: [u8; 3]) -> Vec<u8> {
    let img = RgbaImage::from_fn(width, height, |x, y| {
        let shade = ((x + y) % 64) as u8;
        Rgba([
            colour[0].saturating_add(shade),
            colour[1].saturating_add(shade / 2),
            colour[2],
            255,
        ])
    });
    let mut out = Cursor::new(Vec::new());
    DynamicImage::ImageRgba8(img)
        .write_to(&mut out, ImageFormat::Png)
        .unwrap();
    out.into_inner()
}

fn metadata(title: &str) -> BookMetadata {
    BookMetadata {
        title: title.into(),
        subtitle: Some("A Novel in Four Parts".into()),
        authors: vec!["Ada Brightwater".into(), "Tomás Ó Riain".into()],
        language: "en".into(),
        identifier: "urn:uuid:3c1e1a52-9f50-5b8e-8f7e-2f6d1f0b9a11".into(),
        isbn: None,
        publisher: None,
        date: Some("2024".into()),
        description: Some("A lighthouse keeper's daughter & the sea.".into()),
        subjects: vec![],
        series: None,
        series_number: None,
        rights: None,
        modified: "2000-01-01T00:00:00Z".into(),
        revision: None,
        blurb: None,
        trim: Default::default(),
        paper: Default::default(),
        bleed: false,
        print_isbn: None,
        price: Default::default(),
        printer: Default::default(),
        editions: Default::default(),
        hardcover_isbn: None,
        hardcover_trim: None,
        large_print_isbn: None,
        large_print_trim: None,
        large_print_size: Default::default(),
        reference_edition: None,
        print_settings_refused: None,
        labels: Default::default(),
        style: "bindery".to_owned().try_into().unwrap(),
    }
}

const PARAGRAPHS: [&str; 6] = [
    "The lamp had been lit every night for forty-one years, and on the forty-second it was \
     lit again, though by a different hand. Mara climbed the iron stair with the oil can \
     knocking against her knee and counted the steps as her father had taught her: one \
     hundred and twelve, and a thirteenth that was not a step at all but a promise.",
    "Below, the sea worked at the rocks with the patience of something that knows it will \
     win. She trimmed the wick, polished the great lens until her own face swam in it, \
     small and serious, and then she sat on the gallery with her back to the glass and \
     waited for the dark.",
    "\u{201c}You\u{2019}ll go blind staring at it,\u{201d} said the boatman when he brought \
     the supplies on Thursday. He said it every Thursday. She had stopped answering him in \
     March, and he had not noticed, which told her something about conversations.",
    "There were letters in the tin box under the bed: forty of them, tied with the green \
     ribbon from a cake she did not remember eating. Her father had written them and never \
     sent them, or had written them and had them returned; the envelopes did not say which.",
    "At night the beam went round and round, and the island went from silver to black to \
     silver again, and somewhere out past the reef a ship she would never see altered its \
     course by a degree and a half because of her, and did not sink.",
    "In the morning the gulls came back, loud and indignant, as if the night had been a \
     personal insult, and the kettle sang, and there was bread, and the world went on in \
     the ordinary way of worlds.",
];

/// A chapter body like `xhtml::render_chapter(…, Target::Web)` gives: a section with its
/// heading, text, an internal link, an image, and a footnote.
fn chapter_body(i: usize, count: usize) -> String {
    let n = i + 1;
    let title = &chapter_titles()[i];
    let mut body =
        format!("<section id=\"chapter-{n}\" epub:type=\"chapter\" role=\"doc-chapter\">\n");
    if !title.is_empty() {
        body.push_str(&format!(
            "<h1 id=\"h-{n}\">{}</h1>\n",
            crate::ebook::xhtml::escape::escaped(title)
        ));
    }
    for (p, text) in PARAGRAPHS.iter().cycle().take(12 + i * 3).enumerate() {
        if p == 2 {
            body.push_str(&format!(
                "<p>{text}<a epub:type=\"noteref\" role=\"doc-noteref\" id=\"ref-{n}\" \
                 href=\"#fn-{n}\">{n}</a></p>\n"
            ));
        } else if p == 4 {
            body.push_str(
                "<figure><img src=\"images/lighthouse.png\" alt=\"A lighthouse on a rock at \
                 dusk\"/><figcaption>The light at Carrick Point.</figcaption></figure>\n",
            );
        } else if p == 6 {
            body.push_str("<hr class=\"scene-break\"/>\n");
            body.push_str(&format!("<p>{text}</p>\n"));
        } else if p == 8 && count > 1 {
            let other = if i + 1 < count { i + 2 } else { 1 };
            body.push_str(&format!(
                "<p>{text} (See <a href=\"chapter-{other:03}.html#chapter-{other}\">the other \
                 chapter</a>.)</p>\n"
            ));
        } else {
            body.push_str(&format!("<p>{text}</p>\n"));
        }
    }
    body.push_str("</section>\n");
    body.push_str(&format!(
        "<aside epub:type=\"footnote\" role=\"doc-footnote\" id=\"fn-{n}\"><p>\
         <a href=\"#ref-{n}\" role=\"doc-backlink\">{n}.</a> The keeper\u{2019}s log for \
         that year is lost; this is from the boatman\u{2019}s account.</p></aside>\n"
    ));
    body
}

fn chapter_titles() -> Vec<String> {
    vec![
        "Prologue".into(),
        "The Lamp & the <Lens>".into(),
        String::new(),
        "Letters Never Sent".into(),
        String::new(),
    ]
}

fn sample(title: &str, cover: bool) -> (Book, Vec<String>, BTreeMap<String, Vec<u8>>) {
    let titles = chapter_titles();
    let chapters: Vec<Chapter> = titles
        .iter()
        .enumerate()
        .map(|(i, t)| Chapter {
            title: t.clone(),
            division: if i == 4 {
                Division::Epilogue
            } else {
                Division::from_title(t)
            },
            blocks: vec![],
        })
        .collect();
    let bodies = (0..chapters.len())
        .map(|i| chapter_body(i, chapters.len()))
        .collect();
    let mut resources = BTreeMap::from([
        ("lighthouse.png".to_owned(), png(480, 320, [40, 70, 110])),
        ("unused-map.png".to_owned(), png(8, 8, [0, 0, 0])),
    ]);
    let cover_info = cover.then(|| {
        resources.insert("cover.png".into(), png(400, 640, [120, 40, 30]));
        CoverInfo {
            file_name: "cover.png".into(),
            media_type: "image/png".into(),
            width: 400,
            height: 640,
            generated: false,
        }
    });
    let book = Book {
        metadata: metadata(title),
        document: Document {
            chapters,
            images: vec![Image {
                id: "lighthouse.png".into(),
                media_type: "image/png".into(),
                width: 480,
                height: 320,
            }],
            ..Document::default()
        },
        cover: cover_info,
        print: None,
        style: Default::default(),
        style_files: Vec::new(),
    };
    (book, bodies, resources)
}

fn site(title: &str) -> BTreeMap<String, Vec<u8>> {
    let (book, bodies, resources) = sample(title, true);
    build(&book, &bodies, &resources, &Links::default())
        .unwrap()
        .into_iter()
        .collect()
}

fn text(site: &BTreeMap<String, Vec<u8>>, path: &str) -> String {
    String::from_utf8(site[path].clone()).unwrap()
}

/// Every start tag of a page: (name, attributes).
fn tags(html: &str) -> Vec<(String, BTreeMap<String, String>)> {
    Tokenizer::new(html)
        .flatten()
        .filter_map(|token| match token {
            Token::StartTag(tag) => Some((
                String::from_utf8_lossy(&tag.name).into_owned(),
                tag.attributes
                    .iter()
                    .map(|(k, v)| {
                        (
                            String::from_utf8_lossy(k).into_owned(),
                            String::from_utf8_lossy(&v.value).into_owned(),
                        )
                    })
                    .collect(),
            )),
            _ => None,
        })
        .collect()
}

fn html_pages(site: &BTreeMap<String, Vec<u8>>) -> impl Iterator<Item = (&String, String)> {
    site.keys()
        .filter(|p| p.ends_with(".html"))
        .map(|p| (p, text(site, p)))
}

#[test]
fn site_has_every_chapter_image_and_app_file() {
    let site = site("The Keeper");
    let paths: BTreeSet<&str> = site.keys().map(String::as_str).collect();
    for expected in [
        "index.html",
        "chapter-001.html",
        "chapter-005.html",
        "reader.css",
        "reader.js",
        "sw.js",
        "manifest.webmanifest",
        "icon-192.png",
        "icon-512.png",
        "apple-touch-icon.png",
        "cover.png",
        "images/lighthouse.png",
        "images/unused-map.png",
    ] {
        assert!(
            paths.contains(expected),
            "{expected} missing from {paths:?}"
        );
    }
    assert_eq!(paths.len(), 16);
    let index = text(&site, "index.html");
    let toc: Vec<String> = tags(&index)
        .into_iter()
        .filter_map(|(name, a)| (name == "a").then(|| a.get("href").cloned()).flatten())
        .filter(|h| h.starts_with("chapter-"))
        .collect();
    // The "Start reading" button, then one contents entry per chapter in order.
    assert_eq!(
        toc,
        [
            "chapter-001.html",
            "chapter-001.html",
            "chapter-002.html",
            "chapter-003.html",
            "chapter-004.html",
            "chapter-005.html"
        ]
    );
    assert!(index.contains(">The Lamp &amp; the &lt;Lens&gt;</span></a>"));
    let label = crate::ebook::xhtml::chapter_label(&sample("The Keeper", true).0, 2);
    assert!(label.starts_with("Chapter "), "{label}");
    assert!(
        index.contains(&format!(">{label}</span></a>")),
        "an untitled chapter gets the EPUB's label"
    );
    assert!(
        index.contains(">Epilogue</span></a>"),
        "untitled epilogue is named"
    );
    assert!(index.contains("<img class=\"cover\" src=\"cover.png\" width=\"400\" height=\"640\""));
    assert!(index.contains("Ada Brightwater and Tomás Ó Riain"));
    assert!(text(&site, "chapter-002.html").contains("The keeper\u{2019}s log"));
}

#[test]
fn every_internal_link_resolves_to_a_file_and_an_id_of_the_site() {
    let site = site("The Keeper");
    let ids: BTreeMap<&String, BTreeSet<String>> = site
        .keys()
        .filter(|p| p.ends_with(".html"))
        .map(|p| {
            let ids = tags(&text(&site, p))
                .into_iter()
                .filter_map(|(_, a)| a.get("id").cloned())
                .collect();
            (p, ids)
        })
        .collect();
    let mut checked = 0;
    for (page, html) in html_pages(&site) {
        for (name, attrs) in tags(&html) {
            for attr in ["href", "src"] {
                let Some(url) = attrs.get(attr) else { continue };
                assert!(
                    !url.contains("//") && !url.starts_with('/'),
                    "{page}: <{name} {attr}={url:?}> is not relative to the site"
                );
                let (file, fragment) = url.split_once('#').unwrap_or((url, ""));
                let file = if file.is_empty() { page.as_str() } else { file };
                assert!(site.contains_key(file), "{page}: {url:?} points at no file");
                if !fragment.is_empty() {
                    assert!(
                        ids[&file.to_owned()].contains(fragment),
                        "{page}: {url:?} points at no id"
                    );
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 60, "only {checked} links checked");
    // reader.js registers the worker and the manifest lists its icons, by relative path too.
    assert!(text(&site, "reader.js").contains("register('sw.js')"));
    let manifest: serde_json::Value =
        serde_json::from_slice(&site["manifest.webmanifest"]).unwrap();
    for icon in manifest["icons"].as_array().unwrap() {
        assert!(site.contains_key(icon["src"].as_str().unwrap()));
    }
}

/// The paths `sw.js` pre-caches.
fn precached(site: &BTreeMap<String, Vec<u8>>) -> BTreeSet<String> {
    let sw = text(site, "sw.js");
    let start = sw.find("const FILES = ").unwrap() + "const FILES = ".len();
    let end = start + sw[start..].find("];").unwrap() + 1;
    serde_json::from_str::<Vec<String>>(&sw[start..end])
        .unwrap()
        .into_iter()
        .collect()
}

#[test]
fn service_worker_precaches_exactly_the_site() {
    let site = site("The Keeper");
    let files: BTreeSet<String> = site.keys().cloned().collect();
    assert_eq!(precached(&site), files);
    let sw = text(&site, "sw.js");
    assert!(
        !sw.contains("__VERSION__") && !sw.contains("__FILES__") && !sw.contains("__DIGESTS__")
    );
    assert!(
        sw.contains("self.registration.scope"),
        "cache name is per book"
    );
}

#[test]
fn service_worker_knows_each_files_digest_so_it_saves_one_version_whole() {
    use sha2::{Digest, Sha256};
    let site = site("The Keeper");
    let sw = text(&site, "sw.js");
    let start = sw.find("const DIGESTS = ").unwrap() + "const DIGESTS = ".len();
    let end = start + sw[start..].find("};").unwrap() + 1;
    let digests: BTreeMap<String, String> = serde_json::from_str(&sw[start..end]).unwrap();
    let others: BTreeSet<String> = site.keys().filter(|k| *k != "sw.js").cloned().collect();
    assert_eq!(digests.keys().cloned().collect::<BTreeSet<_>>(), others);
    for (path, digest) in &digests {
        assert_eq!(*digest, hex::encode(Sha256::digest(&site[path])), "{path}");
    }
}

#[test]
fn same_book_builds_same_bytes_and_a_changed_book_a_new_cache() {
    let (book, bodies, resources) = sample("The Keeper", true);
    let first = build(&book, &bodies, &resources, &Links::default()).unwrap();
    let second = build(&book, &bodies, &resources, &Links::default()).unwrap();
    assert_eq!(first, second);
    let paths: Vec<&str> = first.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(paths.first(), Some(&"index.html"));
    assert_eq!(paths.last(), Some(&"sw.js"));

    let mut edited = bodies.clone();
    edited[3] = edited[3].replace("forty", "fifty");
    let third = build(&book, &edited, &resources, &Links::default()).unwrap();
    let version = |files: &[(String, Vec<u8>)]| {
        let sw = String::from_utf8(files.last().unwrap().1.clone()).unwrap();
        sw.lines()
            .find(|l| l.starts_with("const VERSION"))
            .unwrap()
            .to_owned()
    };
    assert_ne!(version(&first), version(&third));
}

#[test]
fn hostile_titles_are_escaped_everywhere() {
    let title = "</title><script>alert(\"x\")</script> & 'Bob's' <b>";
    let site = site(title);
    for (page, html) in html_pages(&site) {
        assert!(!html.contains("<script>alert"), "{page} runs the title");
        assert!(!html.contains("<b>"), "{page} shows raw markup");
        let title_tag = &html[html.find("<title>").unwrap()..html.find("</title>").unwrap()];
        assert!(title_tag.contains("&lt;/title&gt;&lt;script&gt;alert(\"x\")"));
        assert!(title_tag.contains("&amp; 'Bob's'"));
    }
    let manifest: serde_json::Value =
        serde_json::from_slice(&site["manifest.webmanifest"]).unwrap();
    assert_eq!(manifest["name"], title);
}

#[test]
fn pages_need_nothing_a_strict_content_security_policy_forbids() {
    let site = site("The Keeper");
    for (page, html) in html_pages(&site) {
        assert!(html.starts_with("<!DOCTYPE html>\n<html lang=\"en\" dir=\"ltr\">"));
        assert!(html.contains("<meta name=\"viewport\""));
        assert!(html.contains("<meta name=\"color-scheme\" content=\"light dark\">"));
        assert!(html.contains("<link rel=\"manifest\" href=\"manifest.webmanifest\">"));
        for (name, attrs) in tags(&html) {
            assert_ne!(name, "style", "{page} has a <style> element");
            if name == "script" {
                assert_eq!(attrs.get("src").map(String::as_str), Some("reader.js"));
            }
            for attr in attrs.keys() {
                assert!(
                    attr != "style" && !attr.starts_with("on"),
                    "{page}: <{name} {attr}> needs 'unsafe-inline'"
                );
            }
        }
    }
}

#[test]
fn chapter_pages_link_their_neighbours_and_reserve_image_space() {
    let site = site("The Keeper");
    let first = text(&site, "chapter-001.html");
    assert!(!first.contains("rel=\"prev\""));
    assert!(first.contains("<link rel=\"next\" href=\"chapter-002.html\">"));
    assert!(first.contains("<title>Prologue \u{2014} The Keeper</title>"));
    let middle = text(&site, "chapter-003.html");
    assert!(middle.contains("<link rel=\"prev\" href=\"chapter-002.html\">"));
    assert!(middle.contains("<link rel=\"next\" href=\"chapter-004.html\">"));
    assert!(middle.contains("<body class=\"chapter-page\" data-chapter=\"chapter-003.html\">"));
    assert!(middle.contains("<img width=\"480\" height=\"320\" src=\"images/lighthouse.png\""));
    let last = text(&site, "chapter-005.html");
    assert!(!last.contains("rel=\"next\""));
    assert!(last.contains("<span class=\"pager-dir\">The end</span>"));
}

#[test]
fn manifest_makes_an_installable_app() {
    let site = site("The Lighthouse Keeper's Daughter");
    let manifest: serde_json::Value =
        serde_json::from_slice(&site["manifest.webmanifest"]).unwrap();
    assert_eq!(manifest["start_url"], "./index.html");
    assert_eq!(manifest["scope"], "./");
    assert_eq!(manifest["display"], "standalone");
    assert_eq!(manifest["short_name"], "The");
    assert_eq!(manifest["lang"], "en");
    let sizes: Vec<&str> = manifest["icons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["sizes"].as_str().unwrap())
        .collect();
    assert_eq!(sizes, ["192x192", "512x512"]);
    for (file, size) in [
        ("icon-192.png", 192),
        ("icon-512.png", 512),
        ("apple-touch-icon.png", 180),
    ] {
        let icon = image::load_from_memory(&site[file]).unwrap();
        assert_eq!((icon.width(), icon.height()), (size, size), "{file}");
    }
}

#[test]
fn a_book_without_cover_or_chapters_still_builds() {
    let (mut book, _, resources) = sample("Empty", false);
    book.document.chapters.clear();
    let files = build(&book, &[], &resources, &Links::default()).unwrap();
    let index = String::from_utf8(files[0].1.clone()).unwrap();
    assert!(!index.contains("class=\"cover\""));
    assert!(!index.contains("id=\"continue\""));
    let icon = &files.iter().find(|(p, _)| p == "icon-512.png").unwrap().1;
    assert_eq!(image::load_from_memory(icon).unwrap().width(), 512);
}

#[test]
fn unsafe_resource_names_and_mismatched_chapters_are_errors() {
    let (book, bodies, mut resources) = sample("X", false);
    assert!(build(&book, &bodies[1..], &resources, &Links::default()).is_err());
    resources.insert("../../etc/passwd".into(), vec![1]);
    let error = build(&book, &bodies, &resources, &Links::default())
        .unwrap_err()
        .to_string();
    assert!(error.contains("../../etc/passwd"), "{error}");
}

#[test]
fn right_to_left_books_are_marked() {
    let (mut book, bodies, resources) = sample("X", false);
    book.metadata.language = "ar-EG".into();
    let files = build(&book, &bodies, &resources, &Links::default()).unwrap();
    let index = String::from_utf8(files[0].1.clone()).unwrap();
    assert!(index.contains("<html lang=\"ar-EG\" dir=\"rtl\">"));
}

#[test]
fn the_contents_give_subtitles_and_the_way_out_and_chapters_say_where_they_are() {
    use crate::document::{Block, Inline};
    let paragraph = |text: &str| Block::Paragraph {
        align: Default::default(),
        content: vec![Inline::Text(text.into())],
    };
    let (mut book, bodies, resources) = sample("The Keeper", false);
    book.document.chapters[1] = Chapter {
        title: "I".into(),
        division: Division::Chapter,
        blocks: vec![
            Block::Heading {
                level: 1,
                id: None,
                content: vec![Inline::Text("I".into())],
            },
            paragraph("A Letter with a Postscript"),
            paragraph("It began, as these things do, with a letter."),
        ],
    };
    let links = Links {
        book_page: Some("/books/b-1".into()),
        epub: Some("/books/b-1/epub".into()),
    };
    let site: BTreeMap<String, Vec<u8>> = build(&book, &bodies, &resources, &links)
        .unwrap()
        .into_iter()
        .collect();
    let index = text(&site, "index.html");
    assert!(
        index.contains(
            "<span class=\"toc-title\">I</span><span class=\"visually-hidden\">: </span>\
             <span class=\"toc-subtitle\">A Letter with a Postscript</span>"
        ),
        "{index}"
    );
    assert!(index.contains("<a class=\"book-page\" href=\"/books/b-1\">"));
    assert!(index.contains("<a class=\"download\" href=\"/books/b-1/epub\" download>"));
    let chapter = text(&site, "chapter-002.html");
    assert!(
        chapter.contains("<header class=\"bar bar-chapter\">"),
        "{chapter}"
    );
    assert!(chapter.contains("<span class=\"visually-hidden\">Chapter </span>2\u{a0}of\u{a0}5"));
    assert!(chapter.contains("<title>I: A Letter with a Postscript \u{2014} The Keeper</title>"));
    // Without links (`bindery convert`), the site stands alone.
    let alone = text(&self::site("The Keeper"), "index.html");
    assert!(!alone.contains("book-links"));
}

/// The sample book with text of its own, marking pages 11 and 12 of a print edition in its
/// first chapter and 13 at the start of its third.
fn paged_site() -> BTreeMap<String, Vec<u8>> {
    use crate::document::positions::{PageStart, TextPosition};
    use crate::document::{Block, Inline};
    use crate::ebook::xhtml::{Target, render_book};
    let paragraph = |text: &str| Block::Paragraph {
        align: Default::default(),
        content: vec![Inline::Text(text.into())],
    };
    let (mut book, _, resources) = sample("The Keeper", true);
    for chapter in &mut book.document.chapters {
        chapter.blocks = vec![
            paragraph("It was a dark night."),
            paragraph("The lamp went out."),
        ];
    }
    let page = |label: &str, chapter, block, offset| PageStart {
        label: label.into(),
        at: TextPosition {
            chapter,
            block,
            offset,
        },
    };
    book.mark_print_pages(
        crate::ebook::PrintEdition {
            trim: "6 × 9 in".into(),
            isbn: None,
            edition: None,
        },
        &[
            page("11", 0, 0, 0),
            page("12", 0, 1, 4),
            page("13", 2, 0, 0),
        ],
    );
    let bodies: Vec<String> = render_book(&book, Target::Web)
        .into_iter()
        .map(|r| r.body)
        .collect();
    build(&book, &bodies, &resources, &Links::default())
        .unwrap()
        .into_iter()
        .collect()
}

#[test]
fn a_book_with_print_pages_shows_each_and_lists_them_to_go_to() {
    let site = paged_site();
    let first = text(&site, "chapter-001.html");
    assert!(
        first.contains(
            "The <span role=\"doc-pagebreak\" class=\"pagebreak\" id=\"page-12\" data-page=\"12\" title=\"Page 12\"></span>lamp went out."
        ),
        "{first}"
    );
    assert!(first.contains("<a class=\"bar-pages\" href=\"pages.html\""));

    let pages = text(&site, "pages.html");
    let links: Vec<String> = tags(&pages)
        .into_iter()
        .filter(|(name, attrs)| name == "a" && attrs["href"].contains("#page-"))
        .map(|(_, attrs)| attrs["href"].clone())
        .collect();
    assert_eq!(
        links,
        [
            "chapter-001.html#page-11",
            "chapter-001.html#page-12",
            "chapter-003.html#page-13"
        ]
    );
    assert!(pages.contains("<li><a href=\"chapter-003.html#page-13\">13</a></li>"));
    assert!(pages.contains("role=\"status\""));
    assert!(
        !pages.contains("bar-pages"),
        "the list does not link to itself"
    );

    let index = text(&site, "index.html");
    assert!(index.contains("<form class=\"goto-page\" action=\"pages.html\" method=\"get\">"));
    assert!(index.contains("Pages 11 to 13 of the print edition (6 × 9 in)."));
    // The list reads offline like every other page.
    assert!(text(&site, "sw.js").contains("\"pages.html\""));
    for (page, html) in html_pages(&site) {
        for (name, attrs) in tags(&html) {
            assert!(
                !attrs.contains_key("style") && name != "style",
                "{page}: <{name}> needs 'unsafe-inline'"
            );
        }
    }
}

#[test]
fn a_book_without_print_pages_offers_none() {
    let site = site("The Keeper");
    assert!(!site.contains_key("pages.html"));
    for (page, html) in html_pages(&site) {
        for absent in ["goto-page", "bar-pages", "pagebreak"] {
            assert!(!html.contains(absent), "{page} has {absent}");
        }
    }
}
