//! Books not in English (`tests/fixtures/languages/`: Arabic, Hebrew, Japanese, Chinese,
//! Russian, Greek): each passes EPUBCheck, every word Bindery writes into it is its language's
//! entry of the table of labels (`bindery::labels`), and the right-to-left ones run right to
//! left in the EPUB and in the web reader, as Chromium lays them out.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use bindery::labels::{Key, Labels};
use common::corpus;
use common::need::OL_CHIKI_FONT;

use crate::convert::convert;
use crate::page_list::{text_of, zip_entries};

/// Each fixture and the language its front matter names.
const BOOKS: [(&str, &str); 6] = [
    ("ar", "ar"),
    ("he", "he"),
    ("ja", "ja"),
    ("zh", "zh-Hans"),
    ("ru", "ru"),
    ("el", "el"),
];

fn fixture(name: &str) -> PathBuf {
    corpus().join(format!("languages/{name}.md"))
}

/// The book converted with its web reader: the EPUB's entries and the reader's directory.
struct Converted {
    epub: PathBuf,
    entries: BTreeMap<String, String>,
    site: PathBuf,
    report: serde_json::Value,
}

fn convert_with_reader(name: &str, dir: &Path, extra: &[&str]) -> Converted {
    let epub = dir.join(format!("{name}.epub"));
    let site = dir.join(format!("{name}-site"));
    let mut args = vec!["--json", "--reader", site.to_str().expect("utf-8 path")];
    args.extend_from_slice(extra);
    let out = convert(&fixture(name), &epub, &args);
    assert!(
        out.status.success(),
        "{name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = serde_json::from_slice(&out.stdout).expect("the report as JSON");
    let entries = zip_entries(&std::fs::read(&epub).expect("epub"));
    Converted {
        epub,
        entries,
        site,
        report,
    }
}

fn entry<'a>(book: &'a Converted, name: &str) -> &'a str {
    book.entries
        .get(&format!("OEBPS/{name}"))
        .unwrap_or_else(|| panic!("no {name} in the EPUB"))
}

fn page(book: &Converted, name: &str) -> String {
    std::fs::read_to_string(book.site.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The text of every element that opens with `open` (up to its closing `close`), in order.
fn texts(markup: &str, open: &str, close: &str) -> Vec<String> {
    markup
        .split(open)
        .skip(1)
        .map(|rest| {
            let after = &rest[rest.find('>').map_or(0, |i| i + 1)..];
            text_of(&after[..after.find(close).unwrap_or(after.len())])
        })
        .collect()
}

/// The value of every `name="…"` attribute, unescaped.
fn attributes(markup: &str, name: &str) -> Vec<String> {
    let open = format!(" {name}=\"");
    markup
        .split(open.as_str())
        .skip(1)
        .map(|rest| text_of(&rest[..rest.find('"').unwrap_or(rest.len())]))
        .collect()
}

/// The codes of the warnings in `bindery convert --json`'s output.
fn codes(output: &serde_json::Value) -> Vec<String> {
    output["report"]["warnings"]
        .as_array()
        .map(|w| {
            w.iter()
                .filter_map(|w| w["code"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn each_language_is_a_valid_epub_whose_labels_come_from_the_table() {
    let epubcheck = common::need::epubcheck();
    let dir = tempfile::tempdir().expect("tempdir");
    let none = BTreeMap::new();
    let mut failures = Vec::new();
    for (name, tag) in BOOKS {
        let book = convert_with_reader(name, dir.path(), &[]);
        let labels = Labels::new(tag, &none);
        assert_ne!(
            labels.tag(),
            "en",
            "{name}: the table has no entry for {tag}"
        );
        let word = |key: Key| labels.get(key).to_owned();
        assert!(
            !codes(&book.report).contains(&"labels_not_translated".to_owned()),
            "{name}: {}",
            book.report
        );

        // The EPUB: the contents, the landmarks, the notes, the cover and the copyright page.
        let nav = entry(&book, "nav.xhtml");
        assert_eq!(texts(nav, "<h1", "</h1>"), [word(Key::Contents)], "{name}");
        assert_eq!(
            texts(nav, "<title", "</title>"),
            [word(Key::Contents)],
            "{name}"
        );
        let landmarks = &nav[nav.find("epub:type=\"landmarks\"").expect("landmarks")..];
        assert_eq!(
            texts(landmarks, "<h2", "</h2>")[0],
            word(Key::Landmarks),
            "{name}"
        );
        assert_eq!(
            texts(landmarks, "<li><a", "</a>"),
            [
                Key::Cover,
                Key::TitlePage,
                Key::Contents,
                Key::StartOfContent,
                Key::Copyright
            ]
            .map(word),
            "{name}: the landmarks"
        );
        let ncx = entry(&book, "toc.ncx");
        assert!(ncx.contains(&format!("xml:lang=\"{tag}\"")), "{name}");
        let last = entry(&book, "chapter-003.xhtml");
        let notes = &last[last.find("<section class=\"notes\">").expect("the notes")..];
        assert_eq!(
            texts(notes, "<h", "</h")[0],
            word(Key::Notes),
            "{name}: the notes' heading"
        );
        assert_eq!(
            texts(entry(&book, "cover.xhtml"), "<title", "</title>"),
            [word(Key::Cover)]
        );
        let copyright = entry(&book, "copyright.xhtml");
        let paragraphs = texts(copyright, "<p", "</p>");
        for key in [Key::AllRightsReserved, Key::MadeWithBindery] {
            assert!(
                paragraphs.contains(&word(key)),
                "{name}: {key:?} in {paragraphs:?}"
            );
        }
        assert_eq!(
            attributes(copyright, "aria-label"),
            [word(Key::Copyright)],
            "{name}"
        );

        // The web reader: its contents page, a chapter's bar and pager, and the words its
        // script is given.
        let index = page(&book, "index.html");
        assert_eq!(
            texts(&index, "<a class=\"skip\"", "</a>"),
            [word(Key::SkipToContents)]
        );
        assert_eq!(
            texts(&index, "<h2 id=\"toc-heading\"", "</h2>"),
            [word(Key::Contents)]
        );
        assert_eq!(
            texts(&index, "<span class=\"continue-label\"", "</span>"),
            [word(Key::StartReading)]
        );
        assert_eq!(
            attributes(&index, "data-continue"),
            [word(Key::ContinueReading)]
        );
        assert_eq!(
            attributes(&index, "aria-label"),
            [
                Key::ReadingSettings,
                Key::SmallerText,
                Key::LargerText,
                Key::DarkTheme
            ]
            .map(word),
            "{name}: the reader's controls"
        );
        let first = page(&book, "chapter-001.html");
        assert_eq!(
            texts(&first, "<a class=\"skip\"", "</a>"),
            [word(Key::SkipToText)]
        );
        assert_eq!(
            texts(&first, "<span class=\"pager-dir\"", "</span>"),
            [word(Key::BackTo), word(Key::Next)],
            "{name}: the pager"
        );
        let last = page(&book, "chapter-003.html");
        assert_eq!(
            texts(&last, "<span class=\"pager-dir\"", "</span>"),
            [word(Key::Previous), word(Key::TheEnd)],
            "{name}: the pager"
        );
        assert!(
            attributes(&last, "aria-label").contains(&word(Key::Chapters)),
            "{name}"
        );
        assert!(
            texts(&last, "<span class=\"visually-hidden\"", "</span>")
                .contains(&format!("{} ", word(Key::ReadingChapter))),
            "{name}: the bar's position"
        );

        if epubcheck {
            let problems = common::epubcheck::check(&book.epub);
            if !problems.is_empty() {
                failures.push(format!("{name}:\n{}", problems.join("\n")));
            }
        }
    }
    assert!(failures.is_empty(), "EPUBCheck:\n{}", failures.join("\n"));
}

/// Checked by hand, not read from the table: a Russian reader's word for the contents.
#[test]
fn a_russian_book_says_soderzhanie() {
    let dir = tempfile::tempdir().expect("tempdir");
    let book = convert_with_reader("ru", dir.path(), &[]);
    let nav = entry(&book, "nav.xhtml");
    assert!(nav.contains("<h1>Содержание</h1>"), "{nav}");
    assert!(
        entry(&book, "chapter-003.xhtml").contains("<h2>Примечания</h2>"),
        "the notes' heading"
    );
    assert!(page(&book, "index.html").contains(">Начать чтение<"));
}

#[test]
fn right_to_left_books_run_right_to_left_and_the_others_do_not() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, _) in BOOKS {
        let book = convert_with_reader(name, dir.path(), &[]);
        let rtl = matches!(name, "ar" | "he");
        let opf = entry(&book, "content.opf");
        assert_eq!(
            opf.contains("<spine toc=\"ncx\" page-progression-direction=\"rtl\">"),
            rtl,
            "{name}: the spine"
        );
        let documents: Vec<(&String, &String)> = book
            .entries
            .iter()
            .filter(|(path, _)| path.ends_with(".xhtml"))
            .collect();
        assert!(
            documents.len() >= 7,
            "{name}: {} documents",
            documents.len()
        );
        for (path, text) in documents {
            let html = &text[text.find("<html").expect("an html element")..];
            let html = &html[..html.find('>').expect("its end")];
            assert_eq!(html.contains(" dir=\"rtl\""), rtl, "{name}: {path}: {html}");
        }
        for file in ["index.html", "chapter-001.html"] {
            let expected = if rtl { "dir=\"rtl\"" } else { "dir=\"ltr\"" };
            assert!(page(&book, file).contains(expected), "{name}: {file}");
        }
    }
    // An English phrase in an Arabic sentence keeps its order: isolated, left to right.
    let book = convert_with_reader("ar", dir.path(), &[]);
    assert!(
        entry(&book, "chapter-001.xhtml")
            .contains("<span lang=\"en\" xml:lang=\"en\" dir=\"ltr\">The Harbour Café</span>")
    );
}

#[test]
fn labels_metadata_replaces_one_word_and_an_unknown_label_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let book = convert_with_reader("el", dir.path(), &["--meta", "labels.contents=Πίνακας"]);
    let nav = entry(&book, "nav.xhtml");
    assert!(nav.contains("<h1>Πίνακας</h1>"), "{nav}");
    // The others stay the language's.
    let none = BTreeMap::new();
    let notes = Labels::new("el", &none).get(Key::Notes).to_owned();
    assert!(entry(&book, "chapter-003.xhtml").contains(&format!("<h2>{notes}</h2>")));

    let out = convert(
        &fixture("el"),
        &dir.path().join("bad.epub"),
        &["--meta", "labels.contnets=Πίνακας"],
    );
    assert_eq!(out.status.code(), Some(65));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("labels.contnets") && stderr.contains("contents"),
        "{stderr}"
    );
}

#[test]
fn a_language_the_table_lacks_is_english_with_a_warning() {
    let dir = tempfile::tempdir().expect("tempdir");
    let book = convert_with_reader("el", dir.path(), &["--meta", "language=haw"]);
    assert!(
        codes(&book.report).contains(&"labels_not_translated".to_owned()),
        "{}",
        book.report
    );
    assert!(entry(&book, "nav.xhtml").contains("<h1>Contents</h1>"));
}

/// A script Bindery does not look for (Ol Chiki, Santali's) makes no print edition: the reason names
/// its letters and what the operator can do, and the EPUB is still written. Once `FONTS_DIR`
/// holds a font that has them, the book prints in it.
#[test]
fn a_script_without_a_font_makes_no_print_edition_until_fonts_dir_has_one() {
    if !common::need::pdf_tools() || !common::need::noto_fonts() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let fonts = dir.path().join("fonts");
    std::fs::create_dir_all(&fonts).expect("fonts dir");
    std::fs::copy(OL_CHIKI_FONT, fonts.join("ol-chiki.ttf")).expect("copy the font");
    let manuscript = dir.path().join("sat.md");
    std::fs::write(
        &manuscript,
        "---\ntitle: ᱚᱞ ᱪᱤᱠᱤ\nlang: sat\n---\n\n# ᱥᱟᱱᱛᱟᱲᱤ\n\nᱚᱞ ᱪᱤᱠᱤ ᱥᱟᱱᱛᱟᱲᱤ ᱯᱟᱹᱨᱥᱤ.\n",
    )
    .expect("write");
    let pdf = dir.path().join("sat.pdf");
    let print = |fonts_dir: Option<&Path>| {
        let mut cmd = Command::new(common::BIN);
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .arg("convert")
            .arg(&manuscript)
            .arg("-o")
            .arg(dir.path().join("sat.epub"))
            .arg("--pdf")
            .arg(&pdf);
        if let Some(fonts_dir) = fonts_dir {
            cmd.env("FONTS_DIR", fonts_dir);
        }
        cmd.output().expect("bindery convert")
    };
    let out = print(None);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(65), "{said}");
    assert!(
        said.contains("no typeface") && said.contains("U+1C") && said.contains("FONTS_DIR"),
        "{said}"
    );
    assert!(!pdf.exists(), "a PDF of boxes was written");
    assert!(dir.path().join("sat.epub").is_file(), "the EPUB is written");

    let out = print(Some(&fonts));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let used = Command::new("pdffonts")
        .arg(&pdf)
        .output()
        .expect("pdffonts");
    let used = String::from_utf8_lossy(&used.stdout);
    assert!(used.contains("NotoSansOlChiki"), "{used}");
}

/// Every script the labels cover prints in a book typeface out of the box: the six language
/// books and a Korean, a Hindi and a Thai story, with the system's Noto faces (a Chinese or
/// Japanese book in its own forms of the characters), never DejaVu Sans Mono. A page of each is
/// kept (`target/tmp/print/renders/script-*.png`).
#[test]
fn every_script_prints_in_a_book_typeface() {
    if !common::need::pdf_tools() || !common::need::noto_fonts() {
        return;
    }
    // What the operator asks: every script found, each with its face and files.
    let fonts = Command::new(common::BIN)
        .arg("fonts")
        .output()
        .expect("bindery fonts");
    let listed = String::from_utf8_lossy(&fonts.stdout);
    assert!(fonts.status.success(), "{listed}");
    assert!(
        listed.contains("Chinese, Japanese or Korean: Noto Serif CJK SC (/usr/share/fonts/")
            && listed.contains("Arabic: Noto Naskh Arabic (/usr/share/fonts/"),
        "{listed}"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let renders = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("print/renders");
    std::fs::create_dir_all(&renders).expect("renders");
    for (name, face) in [
        ("ar", "NotoNaskhArabic"),
        ("he", "LibertinusSerif"),
        ("ja", "NotoSerifCJKjp"),
        ("zh", "NotoSerifCJKsc"),
        ("ru", "LibertinusSerif"),
        ("el", "LibertinusSerif"),
        ("ko", "NotoSerifCJKkr"),
        ("hi", "NotoSerifDevanagari"),
        ("th", "NotoSerifThai"),
    ] {
        let pdf = dir.path().join(format!("{name}.pdf"));
        let out = Command::new(common::BIN)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .arg("convert")
            .arg(fixture(name))
            .arg("-o")
            .arg(dir.path().join(format!("{name}.epub")))
            .arg("--pdf")
            .arg(&pdf)
            .arg("--json")
            .output()
            .expect("bindery convert");
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // Words as the story's readers count them: a Chinese or Japanese story of a few
        // hundred characters has a few hundred words, not one a paragraph.
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("--json");
        // Thai spaces its phrases, not its words: its words are segmented (the story has 25
        // spaced phrases and about a hundred words).
        let words = report["report"]["statistics"]["words"]
            .as_u64()
            .expect("words");
        assert!(words > 15, "{name}: {words} words");
        if name == "ja" || name == "zh" {
            assert!(words > 200, "{name}: {words} words");
        }
        if name == "th" {
            assert!(words > 80, "{name}: {words} words");
        }
        let used = Command::new("pdffonts")
            .arg(&pdf)
            .output()
            .expect("pdffonts");
        let used = String::from_utf8_lossy(&used.stdout);
        assert!(used.contains(face), "{name}: no {face} in {used}");
        assert!(
            !used.contains("Mono"),
            "{name}: a monospaced face in {used}"
        );
        // The first chapter's page, for a person to look at.
        let status = Command::new("pdftoppm")
            .args(["-png", "-r", "60", "-singlefile", "-f", "7", "-l", "7"])
            .arg(&pdf)
            .arg(renders.join(format!("script-{name}")))
            .status()
            .expect("pdftoppm");
        assert!(status.success(), "{name}");
    }
}

/// The readers of a right-to-left book and of a Chinese and a Japanese one, served under the
/// reader's policy (`tests/browser/serve.py`), in Chromium: `tests/browser/reader-languages.mjs`
/// checks the layout runs the book's way, the arrow keys, the script's words and axe-core. The
/// screenshots stay in `target/tmp/screenshots/languages/`.
#[test]
fn the_readers_run_the_books_way_and_pass_axe_in_chromium() {
    if !common::need::browser() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("screenshots/languages");
    std::fs::create_dir_all(&shots).expect("screenshot dir");
    let none = BTreeMap::new();
    for (name, tag, direction) in [
        ("ar", "ar", "rtl"),
        ("he", "he", "rtl"),
        ("ja", "ja", "ltr"),
        ("zh", "zh-Hans", "ltr"),
    ] {
        let book = convert_with_reader(name, dir.path(), &[]);
        let served = common::reader_site::serve(&book.site);
        let url = served.url("index.html");
        let expected = serde_json::json!({
            "name": name,
            "continue": Labels::new(tag, &none).get(Key::ContinueReading),
        });
        common::browser_passes(
            common::browser_script("reader-languages.mjs")
                .arg(&url)
                .arg(&shots)
                .arg(direction)
                .arg(expected.to_string()),
            name,
        );
    }
}

/// A right-to-left book is bound on the right: with bleed, a recto's trim box sits against
/// the spine on its right and its bleed is on the left, the mirror of a left-to-right book's.
#[test]
fn a_right_to_left_print_edition_is_bound_on_the_right() {
    if !common::need::pdf_tools() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let boxes = |name: &str| {
        let pdf = dir.path().join(format!("{name}.pdf"));
        let out = convert(
            &fixture(name),
            &dir.path().join(format!("{name}.epub")),
            &["--quiet", "--pdf", pdf.to_str().expect("utf-8"), "--bleed"],
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let info = Command::new("pdfinfo")
            .args(["-box", "-f", "1", "-l", "2"])
            .arg(&pdf)
            .output()
            .expect("pdfinfo");
        let info = String::from_utf8_lossy(&info.stdout).into_owned();
        let trim = |page: usize| -> f64 {
            let prefix = format!("Page {page:>4} TrimBox:");
            let line = info
                .lines()
                .find(|l| l.starts_with(&prefix))
                .unwrap_or_else(|| panic!("no {prefix} in {info}"));
            line[prefix.len()..]
                .split_whitespace()
                .next()
                .and_then(|x| x.parse().ok())
                .expect("a number")
        };
        (trim(1), trim(2))
    };
    // 0.125 in of bleed, in points.
    let bleed = 9.0;
    assert_eq!(
        boxes("ru"),
        (0.0, bleed),
        "left to right: the recto's bleed on the right"
    );
    assert_eq!(
        boxes("ar"),
        (bleed, 0.0),
        "right to left: the recto's bleed on the left"
    );
}

/// A right-to-left book's paperback opens the other way: on its print cover the back (the
/// blurb) is the right half of the sheet and the front the left, the mirror of a
/// left-to-right book's.
#[test]
fn a_right_to_left_print_cover_has_its_front_on_the_left() {
    if !common::need::pdf_tools() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let blurb_side = |name: &str| {
        let cover = dir.path().join(format!("{name}-cover.pdf"));
        let out = convert(
            &fixture(name),
            &dir.path().join(format!("{name}.epub")),
            &[
                "--quiet",
                "--pdf",
                dir.path()
                    .join(format!("{name}.pdf"))
                    .to_str()
                    .expect("utf-8"),
                "--print-cover",
                cover.to_str().expect("utf-8"),
                "--meta",
                "blurb=BLURBMARK",
            ],
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let bbox = Command::new("pdftotext")
            .arg("-bbox")
            .arg(&cover)
            .arg("-")
            .output()
            .expect("pdftotext");
        let bbox = String::from_utf8_lossy(&bbox.stdout).into_owned();
        let number = |text: &str, name: &str| -> f64 {
            let at = text
                .find(&format!("{name}=\""))
                .unwrap_or_else(|| panic!("no {name} in {text}"));
            let rest = &text[at + name.len() + 2..];
            rest[..rest.find('"').expect("closing quote")]
                .parse()
                .expect("a number")
        };
        let width = number(&bbox, "width");
        let line = bbox
            .lines()
            .find(|l| l.contains(">BLURBMARK<"))
            .unwrap_or_else(|| panic!("the blurb is not on the cover: {bbox}"));
        if number(line, "xMin") > width / 2.0 {
            "right"
        } else {
            "left"
        }
    };
    assert_eq!(blurb_side("ru"), "left", "a left-to-right book's back");
    assert_eq!(blurb_side("ar"), "right", "a right-to-left book's back");
}
