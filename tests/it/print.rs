//! The print edition from `bindery convert --pdf`, judged by independent tools: poppler's
//! `pdfinfo`, `pdffonts`, `pdftotext` and `pdftoppm`, and `qpdf`.
//!
//! The corpus novel is typeset once per trim size (5×8 with bleed) and shared by the tests.
//! Pages rendered to PNG are kept in `target/tmp/print/renders/`: the title page, the
//! contents, a chapter opening and a page with footnotes.

use crate::common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use bindery::document::positions::{self, PageStart};
use bindery::document::{Document, inline_text};
use bindery::manuscript::Limits;
use bindery::pipeline::in_memory;
use common::need;
use serde_json::Value;

/// Trim name, width and height in points.
const TRIMS: [(&str, f64, f64); 6] = [
    ("5x8", 360.0, 576.0),
    ("5.25x8", 378.0, 576.0),
    ("5.5x8.5", 396.0, 612.0),
    ("6x9", 432.0, 648.0),
    ("a5", 419.528, 595.276),
    ("royal", 442.205, 663.307),
];

/// The trim typeset with bleed.
const BLEED_TRIM: &str = "5x8";
const BLEED: f64 = 9.0;

fn out_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("print");
    std::fs::create_dir_all(&dir).expect("create target/tmp/print");
    dir
}

fn novel_path() -> PathBuf {
    common::corpus::fixtures().join("markdown/love-among-the-chickens.md")
}

/// `bindery convert INPUT --pdf PDF --json EXTRA…`, the EPUB beside the PDF.
fn convert(input: &Path, pdf: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["--pdf", path(pdf), "--json"];
    args.extend_from_slice(extra);
    crate::convert::convert(input, &pdf.with_extension("epub"), &args)
}

/// A typeset book: its PDF and what `--json` said of it.
struct Typeset {
    pdf: PathBuf,
    report: Value,
    cover: Option<PathBuf>,
}

impl Typeset {
    fn folios(&self) -> Vec<String> {
        serde_json::from_value(self.report["pdf"]["folios"].clone()).expect("folios")
    }

    fn page_starts(&self) -> Vec<PageStart> {
        serde_json::from_value(self.report["pdf"]["page_starts"].clone()).expect("page starts")
    }

    fn pages(&self) -> usize {
        self.report["pdf"]["pages"].as_u64().expect("pages") as usize
    }

    /// The page that begins "Contents".
    fn contents_page(&self) -> usize {
        (1..=self.pages())
            .find(|p| {
                page_text(&self.pdf, *p)
                    .trim_start()
                    .starts_with("Contents")
            })
            .expect("a contents page")
    }

    fn gutter(&self) -> f64 {
        self.report["pdf"]["gutter_inches"]
            .as_f64()
            .expect("gutter")
    }
}

fn typeset(input: &Path, pdf: &Path, extra: &[&str]) -> Typeset {
    let out = convert(input, pdf, extra);
    assert!(
        out.status.success(),
        "bindery convert --pdf {} {extra:?}: exit {:?}: {}",
        input.display(),
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("--json output");
    Typeset {
        pdf: pdf.to_owned(),
        report,
        cover: None,
    }
}

/// The novel at `trim`, typeset once for all the tests.
fn novel(trim: &str) -> &'static Typeset {
    static NOVELS: OnceLock<HashMap<&'static str, OnceLock<Typeset>>> = OnceLock::new();
    let novels = NOVELS.get_or_init(|| TRIMS.iter().map(|(t, ..)| (*t, OnceLock::new())).collect());
    novels[trim].get_or_init(|| {
        let pdf = out_dir().join(format!("novel-{trim}.pdf"));
        let cover = out_dir().join(format!("novel-{trim}-cover.pdf"));
        let mut args = vec!["--trim", trim, "--print-cover", path(&cover)];
        if trim == BLEED_TRIM {
            args.extend(["--bleed", "--paper", "cream"]);
        }
        let mut book = typeset(&novel_path(), &pdf, &args);
        book.cover = Some(cover.clone());
        book
    })
}

fn run(program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("run {program}: {e}"));
    // pdfinfo warns on stderr about Typst's tagged-PDF /MarkInfo and still succeeds.
    assert!(
        out.status.success(),
        "{program} {args:?}: exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

fn path(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

#[test]
fn the_print_cover_is_two_trims_a_spine_and_the_bleed_wide() {
    if !need::pdf_tools() {
        return;
    }
    // White paper is 0.002252 in a page, cream 0.0025.
    for (trim, per_page) in [("6x9", 0.002252), (BLEED_TRIM, 0.0025)] {
        let book = novel(trim);
        let (_, width, height) = TRIMS.iter().find(|(t, ..)| *t == trim).expect("trim");
        let spine = book.pages() as f64 * per_page * 72.0;
        let cover = book.cover.as_ref().expect("a cover");
        let info = run("pdfinfo", &[path(cover)]);
        let size = info
            .lines()
            .find_map(|l| l.strip_prefix("Page size:"))
            .expect("page size");
        let got = numbers(size);
        let (want_w, want_h) = (2.0 * width + spine + 2.0 * BLEED, height + 2.0 * BLEED);
        assert!(
            (got[0] - want_w).abs() < 0.05 && (got[1] - want_h).abs() < 0.05,
            "{trim}: cover {size}, wanted {want_w:.2} x {want_h:.2} for {} pages",
            book.pages()
        );
        // 151 pages: the spine carries the title.
        let text = run("pdftotext", &[path(cover), "-"]);
        assert!(text.contains("Love Among the Chickens"), "{trim}: {text}");
        let n = if trim == "6x9" {
            "cover"
        } else {
            "cover-5x8-bleed"
        };
        let renders = out_dir().join("renders");
        std::fs::create_dir_all(&renders).expect("renders");
        run(
            "pdftoppm",
            &[
                "-png",
                "-r",
                "30",
                "-singlefile",
                path(cover),
                path(&renders.join(n)),
            ],
        );
    }
}

/// The text of one page as pdftotext reads it.
fn page_text(pdf: &Path, page: usize) -> String {
    let n = page.to_string();
    run("pdftotext", &["-f", &n, "-l", &n, path(pdf), "-"])
}

/// The novel's running heads, compacted as [`first_words`] compares them.
fn novel_heads() -> (String, String) {
    (
        compact("Love Among the Chickens").to_lowercase(),
        compact("P. G. Wodehouse").to_lowercase(),
    )
}

/// The first 30 characters of the book's text on `page` (compacted), past the running head
/// (`title` or `author`) and a scene break's ornament.
fn first_words(pdf: &Path, page: usize, title: &str, author: &str) -> String {
    // A scene break at the head of a page shows its ornament, which is no text of the book.
    let ornament = bindery::style::builtin::default_style()
        .scene_break
        .ornament
        .0;
    let body = page_text(pdf, page)
        .lines()
        .map(compact)
        .find(|l| {
            !l.is_empty()
                && l.to_lowercase() != title
                && l.to_lowercase() != author
                && !l.chars().all(|c| ornament.contains(c))
        })
        .unwrap_or_default();
    body.trim_end_matches('-').chars().take(30).collect()
}

#[test]
fn the_epubs_page_n_begins_where_the_pdfs_page_n_does() {
    if !need::pdf_tools() {
        return;
    }
    // `bindery convert --pdf` marks the print edition's pages in the EPUB it writes beside.
    let book = novel("6x9");
    let epub_path = book.pdf.with_extension("epub");
    if need::epubcheck() {
        let problems = common::epubcheck::check(&epub_path);
        assert!(problems.is_empty(), "EPUBCheck: {problems:#?}");
    }
    let files = crate::page_list::zip_entries(&std::fs::read(&epub_path).expect("the EPUB"));
    let nav = &files["OEBPS/nav.xhtml"];
    let list = &nav[nav.find("epub:type=\"page-list\"").expect("a page list")..];
    let list = &list[..list.find("</nav>").expect("the list ends")];
    let folios = book.folios();
    let (title, author) = novel_heads();
    let mut checked = 0;
    for item in list.split("<li><a href=\"").skip(1) {
        let (href, rest) = item.split_once("\">").expect("href");
        let label = &rest[..rest.find("</a>").expect("label")];
        let (file, id) = href.split_once('#').expect("a fragment");
        let chapter = &files[&format!("OEBPS/{file}")];
        let at = chapter
            .find(&format!("id=\"{id}\""))
            .unwrap_or_else(|| panic!("page {label}: no marker {id} in {file}"));
        let after = &chapter[at..];
        let after = compact(&crate::page_list::text_of(
            &after[after.find('>').expect("tag") + 1..],
        ));
        let page = folios
            .iter()
            .position(|f| f == label)
            .unwrap_or_else(|| panic!("the PDF has no page {label}"))
            + 1;
        let first = first_words(&book.pdf, page, &title, &author);
        // Hyphenation may break the PDF's last word; 20 characters are past any doubt.
        let first: String = first.chars().take(20).collect();
        assert!(
            !first.is_empty() && after.starts_with(&first),
            "page {label}: the PDF's begins {first:?}, the EPUB's {:?}",
            after.chars().take(40).collect::<String>()
        );
        checked += 1;
    }
    assert_eq!(
        checked,
        book.page_starts().len(),
        "a page-list entry per page start"
    );
    assert!(checked > 100, "{checked} pages");
}

/// Text without what typesetting adds or moves: whitespace, word joiners, soft hyphens.
fn compact(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_whitespace() && !matches!(c, '\u{2060}' | '\u{ad}'))
        .collect()
}

fn numbers(line: &str) -> Vec<f64> {
    line.split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect()
}

#[test]
fn pdfinfo_shows_each_trim_and_the_bleed_boxes() {
    if !need::pdf_tools() {
        return;
    }
    for (trim, width, height) in TRIMS {
        let book = novel(trim);
        let info = run("pdfinfo", &[path(&book.pdf)]);
        let size = info
            .lines()
            .find_map(|l| l.strip_prefix("Page size:"))
            .unwrap_or_else(|| panic!("no page size in {info}"));
        let (want_w, want_h) = if trim == BLEED_TRIM {
            (width + BLEED, height + 2.0 * BLEED)
        } else {
            (width, height)
        };
        let got = numbers(size);
        assert!(
            (got[0] - want_w).abs() < 0.1 && (got[1] - want_h).abs() < 0.1,
            "{trim}: page size {size}, wanted {want_w} x {want_h}"
        );
        let pages: usize = info
            .lines()
            .find_map(|l| l.strip_prefix("Pages:"))
            .and_then(|p| p.trim().parse().ok())
            .expect("page count");
        assert_eq!(pages, book.pages(), "{trim}");
    }
    // With bleed, the trim box sits against the spine: on the left of a recto, the right of a
    // verso; the bleed box is the whole page.
    let book = novel(BLEED_TRIM);
    let boxes = run("pdfinfo", &["-box", "-f", "1", "-l", "2", path(&book.pdf)]);
    let find = |page: usize, name: &str| -> Vec<f64> {
        let prefix = format!("Page {page:>4} {name}:");
        let line = boxes
            .lines()
            .find(|l| l.starts_with(&prefix))
            .unwrap_or_else(|| panic!("no {prefix} in {boxes}"));
        numbers(&line[prefix.len()..])
    };
    let (w, h) = (TRIMS[0].1, TRIMS[0].2);
    assert_eq!(find(1, "TrimBox"), [0.0, BLEED, w, h + BLEED]);
    assert_eq!(find(2, "TrimBox"), [BLEED, BLEED, w + BLEED, h + BLEED]);
    assert_eq!(find(1, "BleedBox"), [0.0, 0.0, w + BLEED, h + 2.0 * BLEED]);
    assert_eq!(find(2, "MediaBox"), [0.0, 0.0, w + BLEED, h + 2.0 * BLEED]);
}

/// Every font is embedded, and each face once: the book is typeset in pieces, and a face
/// subset once a piece would be the novel's three faces a dozen times over.
#[test]
fn every_font_is_embedded_once() {
    if !need::pdf_tools() {
        return;
    }
    for trim in ["6x9", BLEED_TRIM] {
        let book = novel(trim);
        assert!(
            book.report["pdf"]["pieces"].as_u64().unwrap_or(0) > 3,
            "{trim}: typeset in pieces: {}",
            book.report["pdf"]
        );
        let fonts = run("pdffonts", &[path(&book.pdf)]);
        let rows: Vec<&str> = fonts.lines().skip(2).collect();
        assert!(!rows.is_empty(), "no fonts listed: {fonts}");
        let mut faces = Vec::new();
        for row in rows {
            // name type encoding emb sub uni object-number generation
            let words: Vec<&str> = row.split_whitespace().collect();
            let emb = words[words.len() - 5];
            assert_eq!(emb, "yes", "{trim}: a font is not embedded: {row}");
            // ABCDEF+LibertinusSerif-Regular-Identity-H: the face without its subset's tag.
            let face = words[0].split_once('+').map_or(words[0], |(_, face)| face);
            assert!(
                !faces.contains(&face),
                "{trim}: {face} is embedded twice:\n{fonts}"
            );
            faces.push(face);
        }
    }
}

#[test]
fn qpdf_finds_no_damage() {
    if !need::pdf_tools() {
        return;
    }
    for trim in ["6x9", BLEED_TRIM] {
        let check = run("qpdf", &["--check", path(&novel(trim).pdf)]);
        assert!(
            check.contains("No syntax or stream encoding errors found"),
            "{trim}: {check}"
        );
    }
}

#[test]
fn all_text_lies_inside_the_margins_in_every_trim() {
    if !need::pdf_tools() {
        return;
    }
    for (trim, ..) in TRIMS {
        let book = novel(trim);
        let bbox = out_dir().join(format!("novel-{trim}.bbox.html"));
        run("pdftotext", &["-bbox", path(&book.pdf), path(&bbox)]);
        let html = std::fs::read_to_string(&bbox).expect("read bbox");
        let bleed = if trim == BLEED_TRIM { BLEED } else { 0.0 };
        // KDP's minimums: the gutter inside, 0.25 in elsewhere (0.375 in from the trim with
        // bleed).
        let gutter = book.gutter() * 72.0;
        let edge = if bleed > 0.0 {
            0.375 * 72.0 + bleed
        } else {
            18.0
        };
        let (mut page, mut width, mut height, mut words) = (0, 0.0, 0.0, 0);
        for line in html.lines() {
            let attr = |name: &str| -> f64 {
                let at = line.find(&format!("{name}=\"")).expect("attribute") + name.len() + 2;
                line[at..line[at..].find('"').expect("quote") + at]
                    .parse()
                    .expect("number")
            };
            if line.trim_start().starts_with("<page ") {
                page += 1;
                width = attr("width");
                height = attr("height");
            } else if line.trim_start().starts_with("<word ") {
                words += 1;
                let (x0, y0, x1, y1) = (attr("xMin"), attr("yMin"), attr("xMax"), attr("yMax"));
                // Page 1 is a recto: its binding edge is on the left.
                let (left, right) = if page % 2 == 1 {
                    (gutter, edge)
                } else {
                    (edge, gutter)
                };
                assert!(
                    x0 >= left && x1 <= width - right && y0 >= edge && y1 <= height - edge,
                    "{trim}, page {page}: a word at ({x0:.1}, {y0:.1})–({x1:.1}, {y1:.1}) is outside the margins ({left:.1} left, {right:.1} right, {edge:.1} top and bottom) of a {width}×{height} page: {line}"
                );
            }
        }
        assert_eq!(page, book.pages(), "{trim}");
        assert!(words > 40_000, "{trim}: only {words} words");
    }
}

/// The PDF's bookmarks (one per chapter) and the page each points at, from qpdf.
fn bookmarks(pdf: &Path) -> Vec<(String, usize)> {
    let json: Value =
        serde_json::from_str(&run("qpdf", &["--json", "--json-key=outlines", path(pdf)]))
            .expect("qpdf --json");
    json["outlines"]
        .as_array()
        .expect("outlines")
        .iter()
        .map(|o| {
            (
                o["title"].as_str().expect("title").to_owned(),
                o["destpageposfrom1"].as_u64().expect("page") as usize,
            )
        })
        .collect()
}

/// Each page's label, as a viewer shows it in its page box, from the PDF's `/PageLabels`
/// (read by qpdf): roman or decimal numbers, each range from its start.
fn page_labels(pdf: &Path, pages: usize) -> Vec<String> {
    let json: Value = serde_json::from_str(&run(
        "qpdf",
        &["--json", "--json-key=pagelabels", path(pdf)],
    ))
    .expect("qpdf --json");
    let ranges: Vec<(usize, String, usize)> = json["pagelabels"]
        .as_array()
        .expect("page labels")
        .iter()
        .map(|r| {
            (
                r["index"].as_u64().expect("index") as usize,
                r["label"]["/S"].as_str().unwrap_or("").to_owned(),
                r["label"]["/St"].as_u64().unwrap_or(1) as usize,
            )
        })
        .collect();
    (0..pages)
        .map(|page| {
            let (start, style, first) = ranges
                .iter()
                .rev()
                .find(|(index, _, _)| *index <= page)
                .expect("a label for every page");
            let n = page - start + first;
            match style.as_str() {
                "/r" => bindery::print::roman(n),
                "/D" => n.to_string(),
                other => panic!("label style {other}"),
            }
        })
        .collect()
}

/// The page a viewer's page box names is the page's printed folio: roman through the front
/// matter, then 1 at the first chapter.
#[test]
fn page_labels_are_the_folios() {
    if !need::pdf_tools() {
        return;
    }
    for trim in ["6x9", BLEED_TRIM] {
        let book = novel(trim);
        assert_eq!(
            page_labels(&book.pdf, book.pages()),
            book.folios(),
            "{trim}"
        );
    }
}

#[test]
fn chapters_open_on_odd_pages_where_the_contents_says() {
    if !need::pdf_tools() {
        return;
    }
    for trim in ["6x9", BLEED_TRIM] {
        let book = novel(trim);
        let marks = bookmarks(&book.pdf);
        // The dedication, the contents, and the 23 chapters, each with its subtitle.
        assert_eq!(marks.len(), 25, "{trim}: a bookmark per chapter: {marks:?}");
        assert_eq!(marks[1], ("Contents".to_owned(), book.contents_page()));
        assert_eq!(marks[2].0, "I: A Letter with a Postscript", "{trim}");
        for (title, page) in &marks {
            assert!(page % 2 == 1, "{trim}: {title} opens on page {page}");
        }
        // The contents, read from the page: each chapter's folio there is the folio of the
        // page its bookmark points at.
        let folios = book.folios();
        let contents_page = book.contents_page();
        let contents = page_text(&book.pdf, contents_page);
        let mut listed = 0;
        // A long entry wraps: its first lines have no leader, and its title goes on below.
        let mut wrapped = String::new();
        for line in contents
            .lines()
            .skip_while(|l| l.trim() != "Contents")
            .skip(1)
        {
            let line = line.replace('\u{2060}', "");
            if !line.trim().is_empty() && !line.contains(" .") && !line.contains(". .") {
                wrapped.push_str(line.trim());
                wrapped.push(' ');
                continue;
            }
            let line = format!("{wrapped}{line}");
            wrapped.clear();
            let Some((title, folio)) = line
                .split_once(" .")
                .or_else(|| line.split_once(". ."))
                .map(|(t, _)| {
                    // The leader's first dot may touch the title.
                    let title = t.trim().trim_end_matches('.');
                    let title = title.split_whitespace().collect::<Vec<_>>().join(" ");
                    (
                        title,
                        line.split_whitespace()
                            .last()
                            .unwrap_or("")
                            .trim_start_matches('.'),
                    )
                })
            else {
                continue;
            };
            // An entry is the chapter's title (its bookmark), then its subtitle if it has one.
            let (_, page) = marks
                .iter()
                .find(|(t, _)| title == t.replacen(": ", " ", 1).replace('\u{2060}', ""))
                .unwrap_or_else(|| panic!("{trim}: contents entry {title:?} has no bookmark"));
            if listed == 0 {
                assert_eq!(title, "I A Letter with a Postscript", "{trim}");
            }
            assert_eq!(
                folios[page - 1],
                folio,
                "{trim}: the contents puts {title} on {folio}"
            );
            listed += 1;
        }
        assert_eq!(listed, 23, "{trim}: contents entries in {contents}");
    }
}

/// The novel's document model, as the converter reads it.
fn novel_document() -> Document {
    let manuscript = std::fs::read(novel_path()).expect("read the novel");
    let options = bindery::convert::Options {
        file_name: Some("love-among-the-chickens.md".into()),
        ..Default::default()
    };
    in_memory::convert(
        &manuscript,
        None,
        &options,
        &Limits::default(),
        "en",
        in_memory::Extras::default(),
        |_, _, _| {},
    )
    .expect("convert the novel")
    .book
    .document
}

#[test]
fn each_page_begins_where_its_page_start_says() {
    if !need::pdf_tools() {
        return;
    }
    let document = novel_document();
    let (title, author) = novel_heads();
    for trim in ["6x9", BLEED_TRIM] {
        let book = novel(trim);
        let folios = book.folios();
        let starts = book.page_starts();
        let mut checked = 0;
        for start in &starts {
            let page = folios
                .iter()
                .position(|f| *f == start.label)
                .unwrap_or_else(|| panic!("{trim}: no page is labelled {}", start.label))
                + 1;
            let chapter = &document.chapters[start.at.chapter];
            let block = positions::text_blocks(chapter)[start.at.block];
            let expected = compact(&inline_text(block)[start.at.offset..]);
            let first = first_words(&book.pdf, page, &title, &author);
            assert!(
                !first.is_empty() && expected.starts_with(&first),
                "{trim}: page {page} ({}) begins {first:?}, but its page start says {:?}",
                start.label,
                expected.chars().take(40).collect::<String>()
            );
            checked += 1;
        }
        // Every body page holding text has a start.
        let arabic: Vec<usize> = (1..=book.pages())
            .filter(|p| folios[p - 1].parse::<u32>().is_ok())
            .collect();
        let with_text = arabic
            .iter()
            .filter(|p| {
                page_text(&book.pdf, **p)
                    .lines()
                    .filter(|l| !compact(l).is_empty())
                    .count()
                    > 2
            })
            .count();
        let body_starts = starts
            .iter()
            .filter(|s| s.label.parse::<u32>().is_ok())
            .count();
        assert_eq!(body_starts, with_text, "{trim}: body pages with text");
        assert!(checked > 100, "{trim}: {checked} page starts");
    }
}

#[test]
fn the_same_book_twice_gives_the_same_bytes() {
    if !need::pdf_tools() {
        return;
    }
    let torture = common::corpus::fixtures().join("markdown/torture.md");
    let first = typeset(&torture, &out_dir().join("torture-1.pdf"), &[]);
    let second = typeset(&torture, &out_dir().join("torture-2.pdf"), &[]);
    let (a, b) = (
        std::fs::read(&first.pdf).expect("first"),
        std::fs::read(&second.pdf).expect("second"),
    );
    assert!(a == b, "two runs gave different PDFs");
    assert!(
        run("qpdf", &["--check", path(&first.pdf)]).contains("No syntax or stream encoding errors")
    );
    // Footnotes print at the foot of the page that calls them.
    let text = run("pdftotext", &[path(&first.pdf), "-"]);
    assert!(text.contains("The short note"), "{text}");
    render_pages(&first, &text);
}

/// Keeps PNGs of the title page, the contents, a chapter opening and a page with footnotes.
fn render_pages(torture: &Typeset, torture_text: &str) {
    let novel = novel("6x9");
    let folios = novel.folios();
    let contents = novel.contents_page();
    let opening = folios.iter().position(|f| f == "1").expect("page 1") + 1;
    let note_page = torture_text
        .split('\u{c}')
        .position(|page| page.contains("The short note"))
        .expect("a page with the footnote")
        + 1;
    for (name, pdf, page) in [
        ("title-page", &novel.pdf, 3),
        ("contents", &novel.pdf, contents),
        ("chapter-opening", &novel.pdf, opening),
        ("footnotes", &torture.pdf, note_page),
    ] {
        render_page(pdf, page, 80, name);
    }
}

/// Page `page` of `pdf` as `renders/NAME.png` at `dpi`, kept for a person to look at.
fn render_page(pdf: &Path, page: usize, dpi: u32, name: &str) {
    let renders = out_dir().join("renders");
    std::fs::create_dir_all(&renders).expect("create renders");
    let prefix = renders.join(name);
    let (n, dpi) = (page.to_string(), dpi.to_string());
    run(
        "pdftoppm",
        &[
            "-png",
            "-r",
            &dpi,
            "-singlefile",
            "-f",
            &n,
            "-l",
            &n,
            path(pdf),
            path(&prefix),
        ],
    );
    assert!(prefix.with_extension("png").is_file(), "{name}");
}

#[test]
fn typst_in_a_manuscript_prints_as_text() {
    if !need::pdf_tools() {
        return;
    }
    let hostile = [
        r#"#import "@preview/cetz:0.3.0": *"#,
        r#"#read("/etc/passwd")"#,
        r#"#include "/etc/hostname""#,
        "#let x = 1; #x",
        "#{ while true { } }",
        "#set page(width: 1000in)",
        "#set text(size: 200pt)",
        "$ sum_(i=0)^oo i $",
        r#"]]] [[[ <label> @label \u{41} \ " ""#,
        "#metadata(1)<bindery-chapter> #pagebreak()",
    ];
    let dir = out_dir();
    let manuscript = dir.join("hostile.txt");
    std::fs::write(
        &manuscript,
        format!("Hostile\n\n{}\n", hostile.join("\n\n")),
    )
    .expect("write");
    let book = typeset(&manuscript, &dir.join("hostile.pdf"), &[]);
    let text = compact(&run("pdftotext", &[path(&book.pdf), "-"]));
    for line in hostile {
        assert!(
            text.contains(&compact(line)),
            "{line:?} did not print as text: {text}"
        );
    }
    assert!(!text.contains("root:"), "a file was read: {text}");
    let n = book.pages().to_string();
    let sizes = run("pdfinfo", &["-f", "1", "-l", &n, path(&book.pdf)]);
    for line in sizes
        .lines()
        .filter(|l| l.starts_with("Page") && l.contains("size:"))
    {
        let got = numbers(line.split_once("size:").expect("size").1);
        assert_eq!(got[..2], [432.0, 648.0], "{line}");
    }
}

#[test]
fn a_bad_trim_is_refused_naming_the_good_ones() {
    let dir = out_dir();
    let out = convert(
        &novel_path(),
        &dir.join("bad-trim.pdf"),
        &["--trim", "7x10"],
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("7x10") && stderr.contains("5x8, 5.25x8, 5.5x8.5, 6x9, a5, royal"),
        "{stderr}"
    );
    assert!(!dir.join("bad-trim.pdf").exists());
}

/// Equations, TeX and Word alike, are set by Typst's math from their MathML: the mathematics
/// fixtures print with no typesetting warning and the math font embedded, and a page of each
/// is kept as a PNG (`renders/equations-*.png`).
#[test]
fn equations_print_as_mathematics() {
    if !need::pdf_tools() {
        return;
    }
    let fixtures = common::corpus::fixtures();
    for (name, input) in [
        ("tex", fixtures.join("markdown/math.md")),
        ("word", fixtures.join("docx/equations.docx")),
    ] {
        let pdf = out_dir().join(format!("equations-{name}.pdf"));
        let book = typeset(&input, &pdf, &[]);
        let typesetting: Vec<&Value> = book.report["report"]["warnings"]
            .as_array()
            .expect("warnings")
            .iter()
            .filter(|w| {
                w["code"]
                    .as_str()
                    .is_some_and(|c| c.starts_with("print_typesetting"))
            })
            .collect();
        assert!(typesetting.is_empty(), "{name}: {typesetting:#?}");
        let fonts = run("pdffonts", &[path(&pdf)]);
        assert!(
            fonts.contains("NewCMMath"),
            "{name}: no math font in\n{fonts}"
        );
        // The first page with an equation's font on it, kept for a person to look at.
        let page = (1..=book.pages())
            .find(|p| {
                run(
                    "pdffonts",
                    &["-f", &p.to_string(), "-l", &p.to_string(), path(&pdf)],
                )
                .contains("NewCMMath")
            })
            .expect("a page with an equation");
        render_page(&pdf, page, 100, &format!("equations-{name}"));
    }
}

/// Book typography, read from the page (`pdftotext -bbox`): the line under a chapter's number
/// is its subtitle (centred, listed with the number in the contents), and the first paragraph
/// after a heading, a subtitle, a scene break or verse begins at the text block's edge, where
/// a paragraph after a paragraph is indented; verse stands in from both sides.
#[test]
fn openings_are_flush_subtitles_are_subtitles_and_verse_stands_apart() {
    if !need::pdf_tools() {
        return;
    }
    let filler = "and the text goes on for a while so that the paragraph is longer than one \
                  line of the page, which lets the indent of its first line be seen";
    let manuscript = format!(
        "---\ntitle: Openings\nauthor: A. Printer\n---\n\n\
         ## I\n\nA Letter with a Postscript\n\nAlpha {filler}.\n\nBravo {filler}.\n\n\
         * * *\n\nCharlie {filler}.\n\n\
         > Verseline one of the poem  \n> Verseline two of the poem\n\nDelta {filler}.\n\n\
         ## The Second Chapter\n\nEcho {filler}.\n\nFoxtrot {filler}.\n"
    );
    let dir = out_dir();
    let input = dir.join("openings.md");
    std::fs::write(&input, manuscript).expect("write");
    let book = typeset(&input, &dir.join("openings.pdf"), &[]);
    let bbox = run("pdftotext", &["-bbox", path(&book.pdf), "-"]);
    // Each word's page and left edge, in reading order.
    let mut words: Vec<(usize, f64, String)> = Vec::new();
    let mut page = 0;
    for line in bbox.lines().map(str::trim_start) {
        if line.starts_with("<page ") {
            page += 1;
        } else if let Some(rest) = line.strip_prefix("<word xMin=\"") {
            let x: f64 = rest[..rest.find('"').expect("quote")]
                .parse()
                .expect("xMin");
            let text =
                rest[rest.find('>').expect(">") + 1..rest.find("</word>").expect("end")].to_owned();
            words.push((page, x, text));
        }
    }
    let at = |word: &str| {
        words
            .iter()
            .find(|(_, _, w)| w == word)
            .unwrap_or_else(|| panic!("{word} is not on any page"))
    };
    // A page's text block begins where its leftmost word does (a paragraph's later lines).
    let edge = |page: usize| {
        words
            .iter()
            .filter(|(p, ..)| *p == page)
            .map(|(_, x, _)| *x)
            .fold(f64::INFINITY, f64::min)
    };
    for word in ["Alpha", "Charlie", "Delta", "Echo"] {
        let (page, x, _) = at(word);
        assert!(
            (x - edge(*page)).abs() < 0.5,
            "{word} (page {page}) begins at {x:.1}, not at the text block's edge {:.1}",
            edge(*page)
        );
    }
    for word in ["Bravo", "Foxtrot"] {
        let (page, x, _) = at(word);
        assert!(
            x - edge(*page) > 8.0,
            "{word}, after a paragraph, is not indented: {x:.1} against {:.1}",
            edge(*page)
        );
    }
    let (page, x, _) = at("Verseline");
    assert!(
        x - edge(*page) > 16.0,
        "the verse stands in only {:.1} pt",
        x - edge(*page)
    );
    // The subtitle is centred on the chapter's page, not set as a paragraph at the edge.
    let (alpha_page, ..) = at("Alpha");
    let (_, x, _) = words
        .iter()
        .find(|(p, _, w)| p == alpha_page && w == "Letter")
        .expect("the subtitle on the chapter's first page");
    assert!(
        x - edge(*alpha_page) > 40.0,
        "the subtitle begins at {x:.1}: a paragraph?"
    );
    // The contents: the number with its subtitle.
    let contents_page = book.contents_page();
    let contents = compact(&page_text(&book.pdf, contents_page));
    assert!(
        contents.contains("IALetterwithaPostscript") && contents.contains("TheSecondChapter"),
        "{contents}"
    );
}

/// The longest title and subtitle allowed (`bounds::MAX_TITLE_CHARS` each) fit where they are
/// shown whole: the title page keeps to its page (the copyright page is still page 4), the
/// reader's contents page and the generated cover show every word. One over is refused.
/// Renders of the title page and the print cover, and screenshots of the reader on a desktop
/// and a phone (which must not scroll sideways or clip the title), are kept
/// (`renders/longest-title-*.png`).
#[test]
fn the_longest_title_allowed_fits_the_title_page_the_cover_and_the_reader() {
    use bindery::ebook::metadata::bounds::MAX_TITLE_CHARS;
    if !need::pdf_tools() {
        return;
    }
    let words = |seed: &str| {
        let mut text = String::new();
        for n in 1.. {
            let word = format!("{seed}{n}");
            if text.chars().count() + word.len() + 1 > MAX_TITLE_CHARS {
                break;
            }
            if !text.is_empty() {
                text.push(' ');
            }
            text.push_str(&word);
        }
        text
    };
    let (title, subtitle) = (words("Title"), words("Sub"));
    assert!(title.chars().count() > MAX_TITLE_CHARS - 8, "{title}");
    let dir = out_dir().join("longest-title");
    std::fs::create_dir_all(&dir).expect("dir");
    let input = dir.join("book.md");
    std::fs::write(
        &input,
        format!(
            "---\ntitle: \"{title}\"\nsubtitle: \"{subtitle}\"\nauthor: A. Person; B. Person\n---\n\n\
             # One\n\nSome text of the book.\n"
        ),
    )
    .expect("write");
    let cover = dir.join("cover.pdf");
    let site = dir.join("reader");
    let book = typeset(
        &input,
        &dir.join("book.pdf"),
        &["--print-cover", path(&cover), "--reader", path(&site)],
    );
    let pages: Vec<String> = (1..=4).map(|p| compact(&page_text(&book.pdf, p))).collect();
    assert!(
        pages[2].contains(&compact(&title)) && pages[2].contains(&compact(&subtitle)),
        "the title page does not hold the whole title: {}",
        pages[2]
    );
    assert!(
        pages[3].contains("TypesetwithBindery"),
        "the title page ran over: page 4 is {}",
        pages[3]
    );
    render_page(&book.pdf, 3, 60, "longest-title-page");
    render_page(&cover, 1, 30, "longest-title-print-cover");
    // The reader's contents page and the generated cover (an SVG, in the EPUB and the site).
    let index = std::fs::read_to_string(site.join("index.html")).expect("index.html");
    assert!(
        index.contains(&title) && index.contains(&subtitle),
        "{index}"
    );
    if common::need::browser() {
        let served = common::reader_site::serve(&site);
        common::browser_passes(
            common::browser_script("reader-fits.mjs")
                .arg(served.url("index.html"))
                .arg(out_dir().join("renders"))
                .arg("longest-title-reader"),
            "the reader of the longest title",
        );
    }
    let svg = std::fs::read_to_string(site.join("cover.svg")).expect("cover.svg");
    let drawn: String = svg
        .lines()
        .filter(|l| l.starts_with("<text"))
        .filter_map(|l| l.split('>').nth(1)?.split('<').next())
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        compact(&drawn).contains(&compact(&title)) && !drawn.contains('…'),
        "the cover does not show the whole title: {drawn}"
    );

    // One character more, given with the book, is refused, naming the bound.
    let over = format!(
        "{title}{}",
        "x".repeat(MAX_TITLE_CHARS + 1 - title.chars().count())
    );
    let out = convert(
        &input,
        &dir.join("over.pdf"),
        &["--meta", &format!("title={over}")],
    );
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains(&format!("at most {MAX_TITLE_CHARS}")),
        "{said}"
    );
}

/// A trim the manuscript's front matter gets wrong is not replaced by 6×9: no print edition
/// is made, the reason names the value and what to do, and the EPUB is still written.
#[test]
fn a_bad_trim_in_the_front_matter_makes_no_print_edition_and_says_why() {
    let dir = out_dir();
    let input = dir.join("front-matter-trim.md");
    std::fs::write(
        &input,
        "---\ntitle: Trimmed\ntrim: 7x10\n---\n\n# One\n\nSome text.\n",
    )
    .expect("write");
    let pdf = dir.join("front-matter-trim.pdf");
    let _ = std::fs::remove_file(&pdf);
    let out = convert(&input, &pdf, &[]);
    assert_eq!(out.status.code(), Some(65), "the author's to correct");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("7x10") && said.contains("front matter") && said.contains("trim"),
        "{said}"
    );
    assert!(!pdf.exists(), "a PDF at another trim was written");
    assert!(
        pdf.with_extension("epub").is_file(),
        "the EPUB is still written"
    );
}

/// The print cover carries the edition's ISBN as an EAN-13 barcode that a scanner reads back
/// from the printed sheet (rendered at 300 dpi, as a printer's proof would be): an ISBN-13 of
/// each prefix, and an ISBN-10, which is printed as the 978 number it became; a price is its
/// five-digit add-on. A wrong check digit is refused, naming the right one, and a price the
/// add-on cannot carry names what can; nothing is written for either.
#[test]
fn the_cover_barcode_scans_as_the_isbn_and_its_price_and_a_wrong_check_digit_names_the_right_one() {
    if !need::pdf_tools() || !need::zbar() {
        return;
    }
    let manuscript = common::corpus::fixtures().join("markdown/math.md");
    let dir = out_dir().join("barcodes");
    std::fs::create_dir_all(&dir).expect("dir");
    let scan = |png: &Path, symbology: &str| {
        let out = Command::new("zbarimg")
            .args(["-q", "--raw", "-Sdisable", &format!("-S{symbology}.enable")])
            .arg(png)
            .output()
            .expect("zbarimg");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    for (given, price, scanned) in [
        ("978-0-306-40615-7", None, "9780306406157"),
        (
            "9798886451306",
            Some(("USD 14.99", "51499")),
            "9798886451306",
        ),
        ("0-8044-2957-X", Some(("£8.99", "00899")), "9780804429573"),
        // A check value of 0, whose parity barcoders 2.0 had wrong.
        (
            "9780306406157",
            Some(("CAD 19.95", "61995")),
            "9780306406157",
        ),
    ] {
        let pdf = dir.join(format!("{scanned}.pdf"));
        let cover = dir.join(format!("{scanned}-cover.pdf"));
        let isbn = format!("print_isbn={given}");
        let priced = price.map(|(price, _)| format!("price={price}"));
        let mut args = vec!["--meta", &isbn, "--print-cover", path(&cover)];
        if let Some(priced) = &priced {
            args.extend(["--meta", priced]);
        }
        typeset(&manuscript, &pdf, &args);
        let png = dir.join(scanned);
        run(
            "pdftoppm",
            &["-r", "300", "-png", "-singlefile", path(&cover), path(&png)],
        );
        let png = png.with_extension("png");
        assert_eq!(scan(&png, "ean13"), scanned, "{given}");
        assert_eq!(
            scan(&png, "ean5"),
            price.map_or("", |(_, code)| code),
            "{given}'s add-on"
        );
    }

    let pdf = dir.join("wrong.pdf");
    let _ = std::fs::remove_file(&pdf);
    let out = convert(
        &manuscript,
        &pdf,
        &["--meta", "print_isbn=978-0-306-40615-8"],
    );
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a wrong check digit was taken");
    assert!(
        said.contains("ends in 8, where its first 12 digits need 7 (9780306406157)"),
        "{said}"
    );
    assert!(!pdf.exists(), "a PDF was written for a refused ISBN");

    let out = convert(&manuscript, &pdf, &["--meta", "price=EUR 12.50"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a price in euros was taken");
    assert!(said.contains("USD, CAD, GBP, AUD or NZD"), "{said}");
    assert!(!pdf.exists(), "a PDF was written for a refused price");
}
