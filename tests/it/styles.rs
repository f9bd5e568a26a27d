//! Book styles from the outside (`src/style/`): every built-in style makes books EPUBCheck and
//! DAISY Ace pass, and each one's design decisions (the chapter number's form, the drop cap,
//! the scene-break ornament, the lead-in) are found in all three editions: the EPUB, the web
//! reader and the print edition, read back with `unzip`-free zip reading and poppler's
//! `pdftotext`. A style file edited in one key changes all three.

use std::path::{Path, PathBuf};
use std::process::Command;

use bindery::style::{BreakMark, Numbering, Opening, Style, builtin};

use crate::common;

fn fixtures() -> PathBuf {
    common::corpus::fixtures()
}

fn out_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("styles")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("output dir");
    dir
}

fn style_names() -> Vec<String> {
    builtin::names().map(String::from).collect()
}

/// Every built-in style, and the test house style (`tests/fixtures/styles/noir`, its fonts and
/// ornament beside it): each as a label and what `--style` is given.
fn every_style() -> Vec<(String, String)> {
    let house = fixtures().join("styles/noir/noir.toml");
    style_names()
        .into_iter()
        .map(|name| (name.clone(), name))
        .chain([("noir".to_owned(), house.display().to_string())])
        .collect()
}

/// `bindery convert MANUSCRIPT -o EPUB --style STYLE ARGS…`, which must succeed.
fn convert(manuscript: &Path, epub: &Path, style: &str, args: &[&str]) {
    let out = crate::convert::convert(
        manuscript,
        epub,
        &[&["--style", style, "--quiet"], args].concat(),
    );
    assert!(
        out.status.success(),
        "{style} on {}: {}",
        manuscript.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The six languages Ace checks in the styles (the other language books are in the EPUBCheck
/// sweep alone: their scripts are the print edition's concern).
const ACE_LANGUAGES: &[&str] = &["ar", "el", "he", "ja", "ru", "zh"];

/// The style Ace checks on every book, not the novel alone: the fanciest built-in one (a drop
/// cap, a lead-in, chapter numbers in words, ornaments, embedded fonts). The novel, which holds
/// every kind of opening and break, is checked in every style, the house style's too. Ace on
/// every style and every book is five more minutes of a two-core run for markup these already
/// hold; `BINDERY_ACE_EVERY_STYLE=1` runs it.
const ACE_EVERY_BOOK: &[&str] = &["fantasy"];

/// One book of the styles' sweep.
struct Swept {
    /// The style's label (`classic`, `noir`).
    style: String,
    manuscript: PathBuf,
    epub: PathBuf,
}

/// The novel, the mathematics and every language book in every style, converted once a test
/// process (two at a time) for the checks that read them: EPUBCheck and Ace.
fn sweep() -> &'static [Swept] {
    static SWEEP: std::sync::OnceLock<Vec<Swept>> = std::sync::OnceLock::new();
    SWEEP.get_or_init(|| {
        let mut manuscripts = vec![
            fixtures().join("markdown/love-among-the-chickens.md"),
            fixtures().join("markdown/math.md"),
            fixtures().join("docx/equations.docx"),
        ];
        let mut languages: Vec<PathBuf> = std::fs::read_dir(fixtures().join("languages"))
            .expect("languages")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "md"))
            .collect();
        languages.sort();
        manuscripts.extend(languages);
        let dir = out_dir("sweep");
        let jobs: Vec<(String, String, PathBuf)> = every_style()
            .into_iter()
            .flat_map(|(label, style)| {
                manuscripts
                    .iter()
                    .map(move |m| (label.clone(), style.clone(), m.clone()))
            })
            .collect();
        let next = std::sync::atomic::AtomicUsize::new(0);
        let done = std::sync::Mutex::new(Vec::new());
        std::thread::scope(|scope| {
            for _ in 0..2 {
                scope.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        let Some((label, style, manuscript)) = jobs.get(i) else {
                            break;
                        };
                        let stem = manuscript.file_stem().expect("stem").to_string_lossy();
                        let epub = dir.join(format!("{label}-{stem}.epub"));
                        convert(manuscript, &epub, style, &[]);
                        done.lock().expect("lock").push((
                            i,
                            Swept {
                                style: label.clone(),
                                manuscript: manuscript.clone(),
                                epub,
                            },
                        ));
                    }
                });
            }
        });
        let mut done = done.into_inner().expect("lock");
        done.sort_by_key(|(i, _)| *i);
        done.into_iter().map(|(_, swept)| swept).collect()
    })
}

#[test]
fn every_style_makes_books_epubcheck_passes() {
    if !common::need::epubcheck() {
        return;
    }
    // Converting the sweep two at a time loads the machine: timed tests take turns with it.
    let _heavy = common::heavy();
    // One EPUBCheck, warm after the first book, checks them in turn.
    let problems: Vec<String> = sweep()
        .iter()
        .flat_map(|book| {
            common::epubcheck::check(&book.epub)
                .into_iter()
                .map(|problem| format!("{}: {problem}", book.epub.display()))
        })
        .collect();
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn ace_finds_nothing_in_the_novel_in_any_style_nor_in_any_book_in_the_fanciest() {
    if !common::need::ace() {
        return;
    }
    // Chromium checks four documents at once: timed tests take turns with it.
    let _heavy = common::heavy();
    let every_style = std::env::var_os("BINDERY_ACE_EVERY_STYLE").is_some();
    let for_ace: Vec<PathBuf> = sweep()
        .iter()
        .filter(|book| {
            let stem = book.manuscript.file_stem().expect("stem").to_string_lossy();
            let language_book = book.manuscript.parent() == Some(&fixtures().join("languages"));
            let every_book = every_style || ACE_EVERY_BOOK.contains(&book.style.as_str());
            stem == "love-among-the-chickens"
                || (every_book && (!language_book || ACE_LANGUAGES.contains(&&*stem)))
        })
        .map(|book| book.epub.clone())
        .collect();
    let checked = crate::ace::ace_all(&out_dir("ace"), &for_ace);
    let violations: Vec<String> = for_ace
        .iter()
        .zip(checked)
        .flat_map(|(epub, checked)| {
            checked
                .violations
                .into_iter()
                .map(move |v| format!("{}: {v}", epub.display()))
        })
        .collect();
    assert!(violations.is_empty(), "{violations:#?}");
    println!("Ace found nothing in {} EPUBs", for_ace.len());
}

/// The three editions of the novel in one style.
struct Editions {
    epub: PathBuf,
    reader: PathBuf,
    pdf: PathBuf,
}

impl Editions {
    fn make(name: &str, style: &str) -> Editions {
        let dir = out_dir(name);
        let editions = Editions {
            epub: dir.join("book.epub"),
            reader: dir.join("reader"),
            pdf: dir.join("book.pdf"),
        };
        convert(
            &fixtures().join("markdown/love-among-the-chickens.md"),
            &editions.epub,
            style,
            &[
                "--reader",
                editions.reader.to_str().expect("path"),
                "--pdf",
                editions.pdf.to_str().expect("path"),
            ],
        );
        editions
    }

    fn epub_file(&self, name: &str) -> String {
        let file = std::fs::File::open(&self.epub).expect("epub");
        let mut zip = zip::ZipArchive::new(file).expect("zip");
        let mut entry = zip.by_name(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut text = String::new();
        std::io::Read::read_to_string(&mut entry, &mut text).expect("utf-8");
        text
    }

    /// The first line of each page of the PDF that has one above its text: its running head.
    fn running_heads(&self) -> Vec<String> {
        let out = Command::new("pdftotext")
            .args(["-layout", "-f", "1", "-l", "40"])
            .arg(&self.pdf)
            .arg("-")
            .output()
            .expect("pdftotext");
        String::from_utf8_lossy(&out.stdout)
            .split('\u{c}')
            .filter_map(|page| page.lines().map(str::trim).find(|l| !l.is_empty()))
            .map(str::to_owned)
            .collect()
    }

    fn reader_file(&self, name: &str) -> String {
        std::fs::read_to_string(self.reader.join(name)).expect("reader file")
    }

    /// The words of the PDF's page where the first chapter's text opens, with their heights.
    fn opening_page(&self) -> Vec<(String, f64)> {
        let out = Command::new("pdftotext")
            .args(["-bbox", "-f", "1", "-l", "20"])
            .arg(&self.pdf)
            .arg("-")
            .output()
            .expect("pdftotext");
        let html = String::from_utf8_lossy(&out.stdout).into_owned();
        for page in html.split("<page ").skip(1) {
            let words: Vec<(String, f64)> = page
                .split("<word ")
                .skip(1)
                .filter_map(|w| {
                    let attr = |name: &str| -> Option<f64> {
                        let at = w.find(&format!("{name}=\""))? + name.len() + 2;
                        w[at..].split('"').next()?.parse().ok()
                    };
                    let text = w.split('>').nth(1)?.split('<').next()?.to_owned();
                    Some((text, attr("yMax")? - attr("yMin")?))
                })
                .collect();
            if words
                .windows(2)
                .any(|w| w[0].0 == "my" && w[1].0 == "landlady,")
            {
                return words;
            }
        }
        panic!("no page opens the first chapter in {}", self.pdf.display());
    }
}

/// The first chapter's number as a style writes it: the novel's heading is `I`.
fn expected_number(style: &Style) -> Option<&'static str> {
    match (style.chapter.number, style.chapter.label) {
        (Numbering::None, _) => None,
        (Numbering::Arabic, false) => Some("1"),
        (Numbering::Arabic, true) => Some("Chapter 1"),
        (Numbering::Roman, false) => Some("I"),
        (Numbering::Roman, true) => Some("Chapter I"),
        (Numbering::Words, false) => Some("One"),
        (Numbering::Words, true) => Some("Chapter One"),
    }
}

/// The ornament as CSS writes it in a string.
fn css_escaped(glyphs: &str) -> String {
    glyphs
        .chars()
        .map(|c| {
            if c.is_ascii() {
                c.to_string()
            } else {
                format!("\\{:x} ", u32::from(c))
            }
        })
        .collect()
}

/// Checks the decisions of `style` in the novel's three editions.
fn same_decisions(name: &str, style: &Style, editions: &Editions) {
    let css = editions.epub_file("OEBPS/css/book.css");
    let reader_css = editions.reader_file("reader.css");
    let chapter = editions.epub_file("OEBPS/chapter-002.xhtml");
    let reader_chapter = editions.reader_file("chapter-002.html");
    let page = editions.opening_page();
    let page_text: Vec<&str> = page.iter().map(|(w, _)| w.as_str()).collect();
    let page_line = page_text.join(" ");

    // The chapter's number.
    match expected_number(style) {
        Some(number) => {
            let span = format!("<span class=\"chapter-number\">{number}</span>");
            assert!(
                chapter.contains(&span),
                "{name}: EPUB {span} in {chapter:.600}"
            );
            assert!(reader_chapter.contains(&span), "{name}: reader {span}");
            assert!(
                page_line.contains(number),
                "{name}: PDF {number:?} in {page_line:.300}"
            );
        }
        None => {
            assert!(!chapter.contains("chapter-number"), "{name}");
            assert!(
                chapter.contains("<span class=\"chapter-title\">I</span>"),
                "{name}"
            );
            assert!(!reader_chapter.contains("chapter-number"), "{name}");
            assert!(page_text.contains(&"I"), "{name}: PDF {page_line:.300}");
        }
    }

    // The drop cap: a rule in both stylesheets, the opening paragraph marked, and a first
    // letter several lines tall in print.
    let body_height = {
        let mut heights: Vec<f64> = page.iter().map(|(_, h)| *h).collect();
        heights.sort_by(f64::total_cmp);
        heights[heights.len() / 2]
    };
    let cap = page
        .iter()
        .find(|(w, _)| w.starts_with('“'))
        .unwrap_or_else(|| panic!("{name}: the opening's first word in {page_line:.300}"));
    assert!(chapter.contains("<p class=\"first opening\">"), "{name}");
    assert!(
        reader_chapter.contains("<p class=\"first opening\">"),
        "{name}"
    );
    if style.paragraph.opening == Opening::DropCap {
        assert!(css.contains("p.opening::first-letter"), "{name}: EPUB rule");
        assert!(
            reader_css.contains(".chapter p.opening::first-letter"),
            "{name}: reader rule"
        );
        assert!(
            cap.1 > 2.0 * body_height,
            "{name}: the drop cap {cap:?} is no taller than the text ({body_height})"
        );
    } else {
        assert!(!css.contains("::first-letter"), "{name}");
        assert!(!reader_css.contains("::first-letter"), "{name}");
        assert!(
            cap.1 < 1.5 * body_height,
            "{name}: {cap:?} is large without a drop cap ({body_height})"
        );
    }

    // The lead-in in small capitals.
    let lead = bindery::style::opening::lead_in(style) > 0;
    assert_eq!(
        chapter.contains("<span class=\"lead-in\">"),
        lead,
        "{name}: EPUB lead-in"
    );
    assert_eq!(
        reader_chapter.contains("<span class=\"lead-in\">"),
        lead,
        "{name}: reader"
    );

    // The scene break's ornament.
    let all_text = String::from_utf8_lossy(
        &Command::new("pdftotext")
            .arg(&editions.pdf)
            .arg("-")
            .output()
            .expect("pdftotext")
            .stdout,
    )
    .into_owned();
    match style.scene_break.mark() {
        BreakMark::Glyph(ornament) => {
            let rule = format!("content: \"{}\"", css_escaped(&ornament.0));
            assert!(
                css.contains(&format!("hr.scene-break::after {{ {rule}")),
                "{name}: EPUB {rule}"
            );
            assert!(
                reader_css.contains(&format!(".chapter hr.scene-break::after {{ {rule}")),
                "{name}: reader {rule}"
            );
            let glyph = ornament.0.split_whitespace().next().expect("a glyph");
            assert!(
                all_text.lines().any(|l| l.trim().starts_with(glyph)),
                "{name}: the PDF sets the ornament {glyph:?}"
            );
        }
        BreakMark::Image(file) => {
            assert!(
                css.contains(&format!("url(\"../ornaments/{file}\")")),
                "{name}: the EPUB draws the ornament {file}"
            );
            assert!(
                reader_css.contains(&format!("url(\"ornaments/{file}\")")),
                "{name}: the reader draws the ornament {file}"
            );
        }
        BreakMark::Space => {
            assert!(
                css.contains("hr.scene-break::after { content: none; }"),
                "{name}"
            );
            assert!(reader_css.contains("content: none;"), "{name}");
        }
    }
}

#[test]
fn each_built_in_style_makes_the_same_decisions_in_the_epub_the_reader_and_the_print_edition() {
    if !common::need::pdf_tools() {
        return;
    }
    let names = style_names();
    std::thread::scope(|scope| {
        for chunk in names.chunks(names.len().div_ceil(2)) {
            scope.spawn(move || {
                for name in chunk {
                    let style = builtin::get(name).expect("a built-in style");
                    let editions = Editions::make(&format!("decisions-{name}"), name);
                    same_decisions(name, &style, &editions);
                }
            });
        }
    });
}

#[test]
fn a_style_file_edited_in_one_key_changes_all_three_editions() {
    if !common::need::pdf_tools() {
        return;
    }
    let dir = out_dir("edited");
    let source = builtin::source("classic").expect("classic");
    assert!(source.contains("number = \"roman\""));
    let edited = source
        .replace("number = \"roman\"", "number = \"words\"\nlabel = true")
        .replace("label = false\n", "")
        .replace("recto = \"title\"", "recto = \"chapter\"");
    assert!(edited.contains("recto = \"chapter\""));
    let file = dir.join("house.toml");
    std::fs::write(&file, &edited).expect("write the style");
    let style = Style::parse(&edited).expect("the edited style reads");
    assert_eq!(expected_number(&style), Some("Chapter One"));
    let editions = Editions::make("edited-house", file.to_str().expect("path"));
    same_decisions("house", &style, &editions);
    // Its right-hand pages are headed by the chapter they are in, its left-hand ones still by
    // the author.
    let heads = editions.running_heads();
    for (chapter, title) in [
        (1, "A Letter with a Postscript"),
        (2, "Mr. and Mrs. S. F. Ukridge"),
    ] {
        assert!(
            heads.iter().any(|h| h.eq_ignore_ascii_case(title)),
            "chapter {chapter}'s pages are headed {title:?}: {heads:?}"
        );
    }
    assert!(
        heads
            .iter()
            .any(|h| h.eq_ignore_ascii_case("P. G. Wodehouse"))
    );
    // (The half title and the title page open with the title; no page of the text does.)
    let text = heads.iter().skip_while(|h| h.as_str() != "Contents");
    assert!(
        !text
            .clone()
            .any(|h| h.eq_ignore_ascii_case("Love Among the Chickens")),
        "the book's title heads no page of the text: {heads:?}"
    );
    let before = Editions::make("edited-classic", "classic");
    same_decisions(
        "classic",
        &builtin::get("classic").expect("classic"),
        &before,
    );
}

#[test]
fn a_bad_style_file_is_refused_with_its_line_and_nothing_is_written() {
    let dir = out_dir("refused");
    let novel = fixtures().join("markdown/love-among-the-chickens.md");
    for (file, body, says) in [
        (
            "typo.toml",
            "title = \"Typo\"\n\n[chapter]\nnumbr = \"roman\"\n",
            "line 4",
        ),
        (
            "pale.toml",
            "title = \"Pale\"\n[colors]\naccent = \"#bbbbbb\"\n",
            "contrast",
        ),
        (
            "missing.toml",
            "title = \"Missing\"\n[body]\nfont = \"Papyrus\"\n",
            "Papyrus",
        ),
    ] {
        let path = dir.join(file);
        std::fs::write(&path, body).expect("write");
        let epub = dir.join(format!("{file}.epub"));
        let out =
            crate::convert::convert(&novel, &epub, &["--style", path.to_str().expect("path")]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(65), "{file}: {stderr}");
        assert!(stderr.contains(says), "{file}: {stderr}");
        assert!(!epub.exists(), "{file}: nothing is written");
    }
    let out = crate::convert::convert(&novel, &dir.join("x.epub"), &["--style", "gothic"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(65), "{stderr}");
    assert!(
        stderr.contains("large-print"),
        "names the styles there are: {stderr}"
    );
}

/// A ready book of the corpus novel on a fresh server; the server, a token and the book's id.
fn served_book() -> (common::Server, String, String) {
    let server = common::Server::start(&["serve"], &[]);
    let token = common::web::token(&server, "author", false);
    let created = common::web::upload(
        &server,
        &token,
        "?wait=25",
        reqwest::blocking::multipart::Form::new().part(
            "manuscript",
            reqwest::blocking::multipart::Part::bytes(
                std::fs::read(fixtures().join("markdown/love-among-the-chickens.md"))
                    .expect("novel"),
            )
            .file_name("novel.md"),
        ),
    );
    let book = common::web::follow_to_ready(&server, &token, created);
    let id = book["id"].as_str().expect("id").to_owned();
    (server, token, id)
}

#[test]
fn a_preview_of_a_ready_book_is_made_on_demand_then_served_from_storage() {
    let (server, token, id) = served_book();
    let get = |path: &str| {
        common::client()
            .get(server.url(path))
            .bearer_auth(&token)
            .send()
            .expect("GET")
    };
    let unknown = get(&format!("/api/v1/books/{id}/preview?style=gothic"));
    assert_eq!(unknown.status(), reqwest::StatusCode::UNPROCESSABLE_ENTITY);
    let first = get(&format!("/api/v1/books/{id}/preview?style=romance"));
    assert_eq!(first.status(), reqwest::StatusCode::ACCEPTED);
    assert!(first.headers().contains_key("retry-after"));
    let view: serde_json::Value = common::eventually(
        "the preview made",
        std::time::Duration::from_secs(60),
        || {
            let view: serde_json::Value = get(&format!("/api/v1/books/{id}/preview?style=romance"))
                .json()
                .map_err(|e| e.to_string())?;
            if view["status"] == "ready" {
                Ok(view)
            } else {
                Err(view.to_string())
            }
        },
    );
    for page in ["title", "opening", "scene"] {
        let href = view["pages"][page]
            .as_str()
            .unwrap_or_else(|| panic!("{page} in {view}"));
        let png = get(href);
        assert_eq!(png.status(), reqwest::StatusCode::OK, "{href}");
        assert_eq!(png.headers()["content-type"], "image/png");
        let bytes = png.bytes().expect("bytes");
        assert!(bytes.starts_with(b"\x89PNG"), "{href} is a PNG");
        assert!(
            bytes.len() > 5_000,
            "{href} shows a page ({} bytes)",
            bytes.len()
        );
    }
    let reader = get(view["reader"].as_str().expect("reader"));
    assert_eq!(reader.status(), reqwest::StatusCode::OK);
    let csp = reader.headers()["content-security-policy"]
        .to_str()
        .expect("ascii")
        .to_owned();
    assert!(
        csp.contains("frame-ancestors 'self'") && csp.contains("script-src 'none'"),
        "{csp}"
    );
    let html = reader.text().expect("html");
    assert!(
        html.contains("<span class=\"chapter-number\">Chapter One</span>"),
        "{html:.600}"
    );
    let css = get(&format!("/books/{id}/preview/romance/reader.css"))
        .text()
        .expect("css");
    assert!(css.contains("Book style: Romance"));
    let font = get(&format!(
        "/books/{id}/preview/romance/fonts/EBGaramond-Regular.ttf"
    ));
    assert_eq!(font.status(), reqwest::StatusCode::OK);
    // Asked again, it is served as made: no second job.
    let again = get(&format!("/api/v1/books/{id}/preview?style=romance"));
    assert_eq!(again.status(), reqwest::StatusCode::OK);
    // Another tenant sees nothing of it.
    let other = common::web::token(&server, "someone-else", false);
    let theirs = common::client()
        .get(server.url(&format!("/api/v1/books/{id}/preview?style=romance")))
        .bearer_auth(&other)
        .send()
        .expect("GET");
    assert_eq!(theirs.status(), reqwest::StatusCode::NOT_FOUND);
}

#[test]
fn the_style_pickers_the_previews_and_the_house_styles_page_pass_axe_on_a_desktop_and_a_phone_in_chromium()
 {
    if !common::need::browser() {
        return;
    }
    let (server, token, id) = served_book();
    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("screenshots/styles");
    let stdout = common::browser_passes(
        common::browser_script("styles.mjs")
            .arg(server.url("/"))
            .arg(&shots)
            .env("BINDERY_TOKEN", &token)
            .env("BINDERY_BOOK", &id)
            .env("BINDERY_STYLES", style_names().join(","))
            .env("BINDERY_HOUSE_STYLE", fixtures().join("styles/noir")),
        "the styles pages",
    );
    assert!(stdout.trim_end().ends_with("OK"), "{stdout}");
}
