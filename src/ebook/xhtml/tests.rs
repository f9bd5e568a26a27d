use std::collections::{BTreeMap, HashMap, HashSet};

use quick_xml::events::Event;

use super::fixture::{self, p, t};
use super::*;
use crate::document::{Chapter, Document, Note, NoteKind, plain_text};

/// An element of rendered markup: name and attributes.
#[derive(Debug)]
pub struct Element {
    pub name: String,
    pub attrs: BTreeMap<String, String>,
}

/// Parses a fragment as XML (it must be well-formed), returning its elements and its text.
pub fn parse(body: &str) -> (Vec<Element>, String) {
    let doc = format!(
        "<root xmlns=\"http://www.w3.org/1999/xhtml\" xmlns:epub=\"http://www.idpf.org/2007/ops\">{body}</root>"
    );
    let mut reader = quick_xml::Reader::from_str(&doc);
    reader.config_mut().check_end_names = true;
    let mut elements = Vec::new();
    let mut text = String::new();
    loop {
        match reader.read_event() {
            Ok(Event::Start(e)) | Ok(Event::Empty(e)) => {
                let name = e.name().as_ref().to_owned();
                let attrs = e
                    .attributes()
                    .map(|a| {
                        let a = a.expect("attribute");
                        (
                            a.key.as_ref().to_owned(),
                            a.normalized_value(quick_xml::XmlVersion::Implicit1_0)
                                .expect("value")
                                .into_owned(),
                        )
                    })
                    .collect();
                elements.push(Element { name, attrs });
            }
            Ok(Event::Text(e)) => text.push_str(&e.xml10_content()),
            Ok(Event::GeneralRef(e)) => {
                let name = e.xml10_content();
                text.push_str(match name.as_ref() {
                    "amp" => "&",
                    "lt" => "<",
                    "gt" => ">",
                    "quot" => "\"",
                    other => panic!("unexpected entity {other}"),
                });
            }
            Ok(Event::Eof) => break,
            Ok(_) => {}
            Err(e) => panic!("not well-formed: {e}\n{body}"),
        }
    }
    (elements, text)
}

fn render_all(book: &Book, target: Target) -> Vec<RenderedChapter> {
    (0..book.document.chapters.len())
        .map(|i| render_chapter(book, i, target))
        .collect()
}

fn codes(chapters: &[RenderedChapter]) -> Vec<String> {
    chapters
        .iter()
        .flat_map(|c| c.warnings.iter().map(|w| w.code.clone()))
        .collect()
}

fn is_ncname(id: &str) -> bool {
    let mut chars = id.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

#[test]
fn every_chapter_is_well_formed_with_unique_ids_and_links_that_resolve() {
    let book = fixture::book();
    for target in [Target::Epub, Target::Web] {
        let rendered = render_all(&book, target);
        let mut ids: HashMap<String, HashSet<String>> = HashMap::new();
        let mut all_ids = HashSet::new();
        let mut hrefs = Vec::new();
        for (i, chapter) in rendered.iter().enumerate() {
            let file = chapter_file_name(i, target);
            let (elements, _) = parse(&chapter.body);
            for e in &elements {
                if let Some(id) = e.attrs.get("id") {
                    assert!(is_ncname(id), "{id}");
                    assert!(all_ids.insert(id.clone()), "duplicate id {id}");
                    ids.entry(file.clone()).or_default().insert(id.clone());
                }
                if let Some(href) = e.attrs.get("href") {
                    hrefs.push((file.clone(), href.clone()));
                }
                assert!(!e.attrs.contains_key("style"), "inline style in {}", e.name);
                assert_ne!(e.name, "script");
                if target == Target::Web {
                    assert!(!e.attrs.contains_key("epub:type"));
                }
            }
        }
        let mut internal = 0;
        for (file, href) in &hrefs {
            if href.starts_with("https:") || href.starts_with("mailto:") {
                continue;
            }
            let (path, fragment) = href.split_once('#').expect("fragment");
            let path = if path.is_empty() { file.as_str() } else { path };
            let ext = if target == Target::Epub {
                ".xhtml"
            } else {
                ".html"
            };
            assert!(path.ends_with(ext), "{href}");
            assert!(
                ids.get(path).is_some_and(|s| s.contains(fragment)),
                "{href} from {file} does not resolve"
            );
            internal += 1;
        }
        assert!(internal >= 10, "{internal} internal links");
    }
}

#[test]
fn links_across_chapters_resolve_and_bad_links_keep_their_text() {
    let book = fixture::book();
    let rendered = render_all(&book, Target::Epub);
    let everything = &rendered[7].body;
    assert!(everything.contains("<a href=\"chapter-009.xhtml#later\">the later anchor</a>"));
    assert!(
        rendered[8]
            .body
            .contains("<a href=\"chapter-008.xhtml#here\">back</a>")
    );
    assert!(everything.contains("<a href=\"#sub\">a heading</a>"));
    // Dropped links: their words stay.
    assert!(everything.contains(", a lost target, "));
    assert!(everything.contains(", a trap and "));
    assert!(!everything.contains("javascript"));
    assert!(everything.contains("href=\"https://example.com/a%20b?q=1&amp;r=2\""));
    assert!(everything.contains("href=\"mailto:ukridge@example.com\""));
    let warnings: Vec<_> = rendered[7].warnings.iter().collect();
    let missing = warnings
        .iter()
        .find(|w| w.code == "link_target_missing")
        .expect("warning");
    assert!(missing.message.contains("nowhere"));
    assert_eq!(missing.location.as_deref(), Some("chapter 8"));
    assert!(warnings.iter().any(|w| w.code == "link_dropped"));
}

#[test]
fn footnotes_are_numbered_through_the_book_and_shown_where_first_referenced() {
    let book = fixture::book();
    let rendered = render_all(&book, Target::Epub);
    let ch = &rendered[7].body;
    assert!(ch.contains(
        "<a epub:type=\"noteref\" role=\"doc-noteref\" class=\"noteref\" href=\"#fn-n1\" id=\"fnref-n1\">1</a>"
    ));
    // A second reference to the same note has its own id and the same number.
    assert!(ch.contains("href=\"#fn-n1\" id=\"fnref-n1-2\">1</a>"));
    // A reference inside a link follows the link instead of nesting in it.
    assert!(ch.contains(
        "<a href=\"https://example.com/a%20b?q=1&amp;r=2\">the web</a><a epub:type=\"noteref\""
    ));
    assert!(ch.contains(
        "<aside epub:type=\"footnote\" role=\"doc-footnote\" class=\"footnote\" id=\"fn-n1\">\n<p><a href=\"#fnref-n1\" role=\"doc-backlink\" class=\"backlink\">1.</a> The first note"
    ));
    // Notes referenced from a note follow it; the book's numbering continues.
    assert!(ch.contains("id=\"fn-n4\""));
    assert!(ch.contains("id=\"fn-n2\""));
    // Chapter 9's note is number 4 (n1, n4, n2 came first).
    assert!(
        rendered[8]
            .body
            .contains("href=\"#fn-n3\" id=\"fnref-n3\">4</a>")
    );
    assert!(rendered[8].body.contains(
        "<p><a href=\"#fnref-n3\" role=\"doc-backlink\" class=\"backlink\">4.</a></p>\n<blockquote>"
    ));
    // A link to a note goes to it, wherever it is.
    assert!(
        rendered[8]
            .body
            .contains("<a href=\"chapter-008.xhtml#fn-n1\">link to a note</a>")
    );
    // Notes nothing can reference end the book, visibly.
    let last = rendered.last().expect("chapters");
    assert!(
        last.body
            .contains("<section class=\"notes\">\n<h2>Notes</h2>")
    );
    assert!(last.body.contains("A note nothing references."));
    assert!(last.body.contains("A note whose id is taken."));
    assert_eq!(
        last.warnings
            .iter()
            .filter(|w| w.code == "note_unreferenced")
            .count(),
        2
    );
}

#[test]
fn every_block_and_inline_has_its_markup() {
    let book = fixture::book();
    let ch = render_chapter(&book, 7, Target::Epub).body;
    for needle in [
        "<section epub:type=\"chapter\" role=\"doc-chapter\" class=\"chapter\">",
        "<h1 id=\"chapter-one-everything\"><span class=\"chapter-title\">Chapter One: Everything</span></h1>",
        "<h2 id=\"sub\">A Subheading</h2>",
        // Level 5 under a level 2 becomes 3: levels never skip.
        "<h3 id=\"a-skipped-level\">A Skipped Level</h3>",
        "<p class=\"first verse\">Plain, <em>emphasis</em> <strong>strong</strong> <span class=\"underline\">underlined</span> <s>struck</s> E=mc<sup>2</sup> H<sub>2</sub>O <span class=\"smallcaps\">Small Caps</span> <code>let x = 1 &lt; 2;</code><br/>after a break <img class=\"inline\" src=\"images/dot.png\" alt=\"a red dot\"/><span id=\"here\"></span> and <span lang=\"fr\" xml:lang=\"fr\">joie de vivre</span> and gibberish.",
        "<p class=\"align-center\">Centred text.</p>",
        "<blockquote>\n<p class=\"first\">Quoted wisdom.</p>\n<p>More of it.</p>\n</blockquote>",
        "<ul>\n<li>bullet one</li>",
        "<ol start=\"3\">\n<li>third</li>\n<li>\n<p class=\"first\">fourth</p>\n<ol class=\"list-lower-roman\" type=\"i\">",
        "<ol class=\"list-upper-alpha\" type=\"A\" start=\"2\">",
        "<ol class=\"list-lower-alpha\" type=\"a\">",
        "<ol class=\"list-upper-roman\" type=\"I\" start=\"4\">",
        "<dl>\n<dt>Orpington</dt>\n<dd>A breed of chicken.</dd>\n<dt>Undefined</dt>\n<dd></dd>\n</dl>",
        "<pre class=\"code\"><code class=\"language-rustscript\">fn main() {\n    println!(\"&lt;hi&gt; &amp; bye\");\n}</code></pre>",
        "<table>\n<caption>Eggs per week</caption>\n<thead>\n<tr><th scope=\"col\">Hen</th><th scope=\"col\">Mon</th><th scope=\"col\">Tue</th></tr>\n</thead>\n<tbody>\n<tr><th scope=\"row\" rowspan=\"2\">Bertha</th><td colspan=\"2\" class=\"align-center\">none at all</td></tr>\n<tr><td>1</td><td>2</td></tr>\n</tbody>\n</table>",
        "<figure class=\"figure\">\n<img src=\"images/photo.jpg\" alt=\"A hen on a fence\"/>\n<figcaption>Figure 1: <em>the hen</em></figcaption>\n</figure>",
        "<hr class=\"scene-break\"/>\n<p class=\"first\">After the scene break.</p>\n<p>A second paragraph, indented.</p>",
        "<img src=\"images/dot.png\" alt=\"\"/>",
        "<p class=\"caption\">The caption of a missing picture.</p>",
        "<div class=\"page-break\"></div>\n<p class=\"first\">After the page break.</p>",
    ] {
        assert!(ch.contains(needle), "missing {needle}\n\n{ch}");
    }
    assert!(!ch.contains("<p></p>"));
    assert!(!ch.contains("<h2 id=\"section\"></h2>"));
}

#[test]
fn problems_are_reported_with_stable_codes() {
    let book = fixture::book();
    let rendered = render_chapter(&book, 7, Target::Epub);
    let warnings = &rendered.warnings;
    let alt = warnings
        .iter()
        .find(|w| w.code == "alt_missing")
        .expect("alt");
    assert!(alt.message.contains("dot.png"));
    assert!(warnings.iter().any(|w| w.code == "lang_invalid"));
    assert!(
        warnings
            .iter()
            .any(|w| w.code == "image_missing" && w.message.contains("ghost.png"))
    );
    let all = codes(&render_all(&book, Target::Epub));
    assert_eq!(all.iter().filter(|c| *c == "alt_missing").count(), 1);
}

#[test]
fn divisions_have_their_semantics_and_untitled_chapters_a_label() {
    let book = fixture::book();
    let rendered = render_all(&book, Target::Epub);
    for (chapter, r) in book.document.chapters.iter().zip(&rendered) {
        let (epub_type, role) = division_semantics(chapter.division);
        assert!(
            r.body.starts_with(&format!(
                "<section epub:type=\"{epub_type}\" role=\"{role}\""
            )),
            "{}",
            r.body
        );
    }
    assert!(rendered[1].body.contains("aria-label=\"Epigraph\""));
    assert_eq!(chapter_label(&book, 8), "Chapter 2");
    assert_eq!(chapter_label(&book, 7), "Chapter One: Everything");
    let web = render_chapter(&book, 1, Target::Web).body;
    assert!(
        web.starts_with(
            "<section role=\"doc-epigraph\" class=\"epigraph\" aria-label=\"Epigraph\">"
        )
    );
}

#[test]
fn web_pages_link_to_html_files() {
    let book = fixture::book();
    let ch = render_chapter(&book, 7, Target::Web).body;
    assert!(ch.contains("<a href=\"chapter-009.html#later\">"));
    assert!(ch.contains("src=\"images/photo.jpg\""));
    assert!(!ch.contains("epub:type"));
    assert!(ch.contains("role=\"doc-noteref\""));
}

#[test]
fn rendering_is_deterministic() {
    let book = fixture::book();
    let a = render_all(&book, Target::Epub);
    let b = render_all(&book.clone(), Target::Epub);
    assert_eq!(a, b);
    assert_eq!(render_book(&book, Target::Epub), a);
}

#[test]
fn a_long_book_renders_quickly() {
    let chapters: Vec<Chapter> = (0..400)
        .map(|c| Chapter {
            title: format!("Chapter {c}"),
            division: Division::Chapter,
            blocks: (0..150)
                .map(|i| {
                    p(vec![
                        t("Some words of a paragraph that goes on for a while."),
                        Inline::NoteRef(format!("n{c}-{i}")),
                        Inline::Anchor(format!("a{c}-{i}")),
                    ])
                })
                .collect(),
        })
        .collect();
    let notes = (0..400)
        .flat_map(|c| (0..150).map(move |i| (c, i)))
        .map(|(c, i)| Note {
            id: format!("n{c}-{i}"),
            kind: NoteKind::Footnote,
            blocks: vec![p(vec![t("A note.")])],
        })
        .collect();
    let mut book = fixture::book();
    book.document = Document {
        chapters,
        notes,
        ..Document::default()
    };
    let started = std::time::Instant::now();
    let rendered = render_book(&book, Target::Epub);
    assert_eq!(rendered.len(), 400);
    assert!(rendered[399].body.contains(">60000</a>"));
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn hostile_text_is_escaped_and_forbidden_characters_removed() {
    let hostile = "<script>alert('x')</script> ]]> &amp; \u{0}\u{7}\u{1B}\u{FFFF} \"quoted\"";
    let mut book = fixture::book();
    book.document.chapters = vec![Chapter {
        title: hostile.into(),
        division: Division::Chapter,
        blocks: vec![
            Block::Heading {
                level: 1,
                id: Some("\"><script>".into()),
                content: vec![t(hostile)],
            },
            p(vec![
                t(hostile),
                Inline::Code(hostile.into()),
                Inline::Image {
                    image: "dot.png".into(),
                    alt: hostile.into(),
                },
                Inline::Anchor("a\"b<c".into()),
                Inline::Link {
                    target: LinkTarget::External("https://example.com/\"><script>".into()),
                    content: vec![t("x")],
                },
            ]),
            Block::CodeBlock {
                language: None,
                text: hostile.into(),
            },
        ],
    }];
    let body = render_chapter(&book, 0, Target::Epub).body;
    let (elements, text) = parse(&body);
    assert!(elements.iter().all(|e| e.name != "script"));
    assert!(text.contains("<script>alert('x')</script> ]]> &amp;  \"quoted\""));
    assert!(!body.contains('\u{0}') && !body.contains('\u{1B}') && !body.contains('\u{FFFF}'));
    for e in &elements {
        if let Some(id) = e.attrs.get("id") {
            assert!(is_ncname(id), "{id}");
        }
    }
}

/// Removes whitespace: the model's words must appear in the output in order, whatever
/// markup separates them.
fn squeeze(s: &str) -> Vec<char> {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

fn is_subsequence(needle: &[char], haystack: &[char]) -> bool {
    let mut it = haystack.iter();
    needle.iter().all(|c| it.any(|h| h == c))
}

#[test]
fn no_text_of_the_model_is_lost() {
    let book = fixture::book();
    let mut output = String::new();
    for r in render_all(&book, Target::Epub) {
        output.push_str(&parse(&r.body).1);
    }
    let output = squeeze(&output);
    let mut model = String::new();
    for chapter in &book.document.chapters {
        model.push_str(&plain_text(&chapter.blocks));
    }
    assert!(is_subsequence(&squeeze(&model), &output));
    for note in &book.document.notes {
        let text = squeeze(&plain_text(&note.blocks));
        assert!(is_subsequence(&text, &output), "note {} lost", note.id);
    }
}

#[test]
fn ids_stay_unique_when_sources_collide() {
    let mut book = fixture::book();
    let heading = |id: &str| Block::Heading {
        level: 2,
        id: Some(id.into()),
        content: vec![t("Same")],
    };
    book.document = Document {
        chapters: vec![
            Chapter {
                title: "One".into(),
                division: Division::Chapter,
                blocks: vec![
                    heading("x"),
                    heading("x"),
                    heading("fn-n"),
                    p(vec![
                        Inline::Anchor("x".into()),
                        Inline::NoteRef("n".into()),
                    ]),
                    Block::Heading {
                        level: 2,
                        id: None,
                        content: vec![t("Same")],
                    },
                    Block::Heading {
                        level: 2,
                        id: None,
                        content: vec![t("Same")],
                    },
                ],
            },
            Chapter {
                title: "Two".into(),
                division: Division::Chapter,
                blocks: vec![
                    heading("x"),
                    p(vec![Inline::Link {
                        target: LinkTarget::Internal("x".into()),
                        content: vec![t("first x")],
                    }]),
                ],
            },
        ],
        notes: vec![Note {
            id: "n".into(),
            kind: NoteKind::Footnote,
            blocks: vec![p(vec![t("note")])],
        }],
        ..Document::default()
    };
    let mut seen = HashSet::new();
    for r in render_all(&book, Target::Epub) {
        for e in parse(&r.body).0 {
            if let Some(id) = e.attrs.get("id") {
                assert!(seen.insert(id.clone()), "duplicate {id}");
            }
        }
    }
    assert!(seen.contains("x-2") && seen.contains("x-3") && seen.contains("x-4"));
    assert!(seen.contains("fn-n-2") && seen.contains("same") && seen.contains("same-2"));
    // A link to a duplicated id goes to its first occurrence.
    let two = render_chapter(&book, 1, Target::Epub).body;
    assert!(two.contains("<a href=\"chapter-001.xhtml#x\">first x</a>"));
}

#[test]
fn an_index_past_the_end_renders_nothing() {
    let book = fixture::book();
    assert_eq!(
        render_chapter(&book, 99, Target::Epub),
        RenderedChapter::default()
    );
}

#[test]
fn page_markers_stand_before_the_heading_they_open_and_alone_where_their_block_is_blank() {
    use crate::document::positions::{PageStart, TextPosition};
    use crate::document::{Block, Inline, Table};
    let mut book = fixture::book();
    book.document.chapters = vec![Chapter {
        title: "One".into(),
        blocks: vec![
            fixture::h(1, None, "One"),
            p(vec![t("   ")]),
            p(vec![
                t("Some "),
                Inline::Emphasis(vec![t("words")]),
                t(" here."),
            ]),
            Block::Table(Table {
                caption: vec![],
                head: vec![],
                body: vec![],
            }),
        ],
        ..Default::default()
    }];
    let page = |label: &str, block, offset| PageStart {
        label: label.into(),
        at: TextPosition {
            chapter: 0,
            block,
            offset,
        },
    };
    book.mark_print_pages(
        crate::ebook::PrintEdition {
            trim: "A5".into(),
            isbn: None,
            edition: None,
        },
        &[
            page("1", 0, 0),
            page("2", 1, 1),
            page("3", 2, 7),
            page("4", 3, 0),
            page("4", 3, 0),
        ],
    );
    let body = render_chapter(&book, 0, Target::Epub).body;
    fixture::assert_well_formed(&format!(
        "<body xmlns=\"http://www.w3.org/1999/xhtml\" xmlns:epub=\"http://www.idpf.org/2007/ops\">{body}</body>"
    ));
    let marker = |id: &str, label: &str| {
        format!(
            "<span epub:type=\"pagebreak\" role=\"doc-pagebreak\" class=\"pagebreak\" id=\"{id}\" title=\"{label}\"></span>"
        )
    };
    // Before the heading, so that the heading's name is its text alone.
    assert!(
        body.contains(&format!(
            "{}<h1 id=\"one\"><span class=\"chapter-title\">One</span></h1>",
            marker("page-1", "1")
        )),
        "{body}"
    );
    // The blank paragraph is left out; its marker is not.
    assert!(
        body.contains(&format!("{}<p", marker("page-2", "2"))),
        "{body}"
    );
    assert!(body.contains(&format!(
        "Some <em>wo{}rds</em> here.",
        marker("page-3", "3")
    )));
    // Two pages of one label get two ids; an empty caption's markers stand before the table.
    assert!(body.contains(&format!(
        "{}{}<table>",
        marker("page-4", "4"),
        marker("page-4-2", "4")
    )));
    assert!(!body.contains("<caption>"));
}
