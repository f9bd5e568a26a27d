//! `bindery convert` on every manuscript of the corpus, judged by independent tools:
//! EPUBCheck 5.3 for validity, pandoc for the words of the source and of the EPUB.

use crate::common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{BIN, corpus, corpus_files, pandoc_words, raw_docx_words, try_pandoc_words, words};

/// `bindery convert INPUT -o OUTPUT EXTRA…`, with a fixed `SOURCE_DATE_EPOCH` and nothing
/// else of the environment but `PATH`.
pub fn convert(input: &Path, output: &Path, extra: &[&str]) -> Output {
    Command::new(BIN)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .arg("convert")
        .arg(input)
        .arg("-o")
        .arg(output)
        .args(extra)
        .output()
        .expect("run bindery convert")
}

fn epub_name(input: &Path) -> String {
    let parent = input
        .parent()
        .and_then(Path::file_name)
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!(
        "{parent}-{}.epub",
        input.file_stem().unwrap_or_default().to_string_lossy()
    )
}

/// Converts every corpus file with no metadata supplied, two at a time; panics naming each
/// failure.
fn convert_corpus(dir: &Path) -> Vec<(PathBuf, PathBuf)> {
    // Numbered: the fixtures and an outside corpus may both hold a `docx/comments.docx`.
    let inputs: Vec<(usize, PathBuf)> = corpus_files().into_iter().enumerate().collect();
    let done = Mutex::new(Vec::new());
    let failures = in_parallel(&inputs, |(n, input)| {
        let output = dir.join(format!("{n:03}-{}", epub_name(input)));
        let out = convert(input, &output, &["--quiet"]);
        if out.status.success() {
            done.lock().expect("lock").push((*n, input.clone(), output));
            None
        } else {
            Some(format!(
                "{}: exit {:?}: {}",
                input.display(),
                out.status.code(),
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    });
    assert!(
        failures.is_empty(),
        "conversions failed:\n{}",
        failures.join("\n")
    );
    let mut done = done.into_inner().expect("lock");
    done.sort_by_key(|(n, _, _)| *n);
    done.into_iter()
        .map(|(_, input, epub)| (input, epub))
        .collect()
}

/// The corpus converted once a test process, for every test that reads it: converting every
/// file is a minute of a two-core run, and both the EPUBCheck sweep and the words' check
/// read the same EPUBs.
fn converted_corpus() -> &'static [(PathBuf, PathBuf)] {
    static CORPUS: std::sync::OnceLock<Vec<(PathBuf, PathBuf)>> = std::sync::OnceLock::new();
    CORPUS.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("convert-corpus");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("output dir");
        convert_corpus(&dir)
    })
}

/// Runs `f` over `items` on two threads (EPUBCheck and pandoc are slow to start).
fn in_parallel<T: Sync>(items: &[T], f: impl Fn(&T) -> Option<String> + Sync) -> Vec<String> {
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(item) = items.get(i) else { break };
                    if let Some(failure) = f(item) {
                        failures.lock().expect("lock").push(failure);
                    }
                }
            });
        }
    });
    let mut failures = failures.into_inner().expect("lock");
    failures.sort();
    failures
}

#[test]
fn every_corpus_file_becomes_an_epub_that_epubcheck_passes_without_metadata() {
    if !common::need::epubcheck() {
        return;
    }
    let _heavy = common::heavy();
    let books = converted_corpus();
    assert!(
        books.len() >= 14,
        "only {} corpus manuscripts found",
        books.len()
    );
    // One EPUBCheck, warm after the first book, checks them in turn: far quicker than one
    // JVM per book, however many run at once.
    let failures: Vec<String> = books
        .iter()
        .filter_map(|(input, epub)| {
            let problems = common::epubcheck::check(epub);
            (!problems.is_empty()).then(|| format!("{}:\n{}", input.display(), problems.join("\n")))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} books fail EPUBCheck:\n{}",
        failures.len(),
        books.len(),
        failures.join("\n")
    );
}

#[test]
fn every_word_of_every_source_is_in_its_epub() {
    if !common::need::pandoc() {
        return;
    }
    let _heavy = common::heavy();
    let books = converted_corpus();
    let failures = in_parallel(books, |(input, epub)| {
        if other_format(input) {
            // Measured against pandoc's reading, in order: the next test.
            return None;
        }
        let source = match input.extension().and_then(|e| e.to_str()) {
            Some("docx") => {
                try_pandoc_words(input, "docx").unwrap_or_else(|_| raw_docx_words(input))
            }
            // The dialect Bindery reads: CommonMark with its extensions, not pandoc's Markdown
            // (which would turn `$\\alpha$` into α and `H~2~O` into H₂O).
            Some("md") => {
                // A pandoc title block (`% Title` lines) is metadata, like YAML front matter,
                // which pandoc's plain output leaves out too; CommonMark would read it as text.
                let text = std::fs::read_to_string(input).expect("read");
                // `\\(…\\)` and `\\[…\\]` are mathematics to Bindery (and LaTeX); pandoc 2.17's
                // CommonMark knows only dollars.
                let body: String = text
                    .lines()
                    .skip_while(|l| l.starts_with('%'))
                    .map(|l| format!("{}\n", dollars(l)))
                    .collect();
                let tmp = tempfile::NamedTempFile::new().expect("tmp");
                std::fs::write(tmp.path(), body).expect("write");
                pandoc_words(
                    tmp.path(),
                    "commonmark+footnotes+pipe_tables+strikeout+smart+yaml_metadata_block+tex_math_dollars",
                )
            }
            // Plain text needs no parser to find its words.
            _ => words(&String::from_utf8_lossy(
                &std::fs::read(input).expect("read"),
            )),
        };
        let mut ours = pandoc_words(epub, "epub");
        // pandoc drops images' alt text when it reads an EPUB; it is text of the book.
        ours.extend(alt_words(epub));
        let missing = missing_words(&source, &ours);
        (!missing.is_empty()).then(|| {
            format!(
                "{}: {} of {} words missing, e.g. {:?}",
                input.display(),
                missing.len(),
                source.len(),
                missing.iter().take(12).collect::<Vec<_>>()
            )
        })
    });
    assert!(failures.is_empty(), "text lost:\n{}", failures.join("\n"));
}

/// Whether a manuscript is a file another tool wrote (OpenDocument, EPUB, a web page).
fn other_format(input: &Path) -> bool {
    matches!(
        input.extension().and_then(|e| e.to_str()),
        Some("odt" | "fodt" | "epub" | "html" | "zip")
    )
}

/// Issue 47's measure for the formats other tools write: of the words pandoc reads from the
/// file (`pandoc FILE -t plain`), at least 99.5 % appear in Bindery's EPUB, in order. The
/// figure for each file is printed. A flat `.fodt` (which pandoc 2.17 cannot read) is held
/// against pandoc's reading of the `.odt` LibreOffice saved beside it; a zipped web page
/// against its page.
#[test]
fn other_formats_keep_what_pandoc_reads_in_order() {
    if !common::need::pandoc() {
        return;
    }
    let _heavy = common::heavy();
    let books: Vec<&(PathBuf, PathBuf)> = converted_corpus()
        .iter()
        .filter(|(input, _)| other_format(input))
        .collect();
    assert!(books.len() >= 18, "only {} such fixtures", books.len());
    let figures = Mutex::new(Vec::new());
    let failures = in_parallel(&books, |(input, epub)| {
        let source = source_words(input);
        // Notes may be read where they stand or after the book (where pandoc's plain text
        // puts the notes it recognised): the better of the two orders counts.
        let (in_place, at_end) = reading_words(epub);
        let (kept, lost) = [in_place, at_end]
            .iter()
            .map(|ours| kept_in_order(&source, ours))
            .max_by_key(|(kept, _)| *kept)
            .expect("two readings");
        let share = if source.is_empty() {
            1.0
        } else {
            kept as f64 / source.len() as f64
        };
        let line = format!(
            "{:>7.2} %  {kept:>6} of {:>6} words  {}{}",
            share * 100.0,
            source.len(),
            input.display(),
            if lost.is_empty() {
                String::new()
            } else {
                format!("  (not kept: {})", lost.join(" "))
            }
        );
        figures.lock().expect("lock").push(line.clone());
        (share < 0.995).then_some(line)
    });
    let mut figures = figures.into_inner().expect("lock");
    figures.sort();
    println!(
        "words pandoc reads that Bindery's EPUB keeps, in order:\n{}",
        figures.join("\n")
    );
    assert!(
        failures.is_empty(),
        "under 99.5 %:\n{}",
        failures.join("\n")
    );
}

/// pandoc's words of a file another tool wrote.
fn source_words(input: &Path) -> Vec<String> {
    match input.extension().and_then(|e| e.to_str()) {
        Some("fodt") => pandoc_reading(&input.with_extension("odt"), "odt"),
        Some("zip") => {
            let mut zip =
                zip::ZipArchive::new(std::fs::File::open(input).expect("zip")).expect("zip");
            let mut page = String::new();
            for i in 0..zip.len() {
                let mut entry = zip.by_index(i).expect("entry");
                if entry.name().is_ok_and(|n| n.ends_with(".html")) {
                    std::io::Read::read_to_string(&mut entry, &mut page).expect("page");
                }
            }
            let tmp = tempfile::Builder::new()
                .suffix(".html")
                .tempfile()
                .expect("tmp");
            std::fs::write(tmp.path(), page).expect("write");
            pandoc_reading(tmp.path(), "html")
        }
        Some(ext) => pandoc_reading(input, ext),
        None => unreachable!("other formats have extensions"),
    }
}

/// `pandoc FILE -t plain`, as words, with what differs between two faithful writers by
/// design left out on both sides: mathematics (compared symbol by symbol in `math.rs`), the
/// numbers or letters of ordered lists, note markers and a note's own number, and the notes'
/// text following the book's (where pandoc's plain text puts it, and [`reading_words`] too).
fn pandoc_reading(path: &Path, from: &str) -> Vec<String> {
    let filter = tempfile::Builder::new()
        .suffix(".lua")
        .tempfile()
        .expect("tmp");
    std::fs::write(
        filter.path(),
        r#"
local notes = {}
function Math(el) return {} end
function Note(el)
  -- A note that opens with its own number linking back (libepubgen writes one): the number.
  local first = el.content[1]
  if first and (first.t == "Para" or first.t == "Plain") and #first.content > 0 then
    local holder, lead = first, first.content[1]
    if lead.t == "Span" and #lead.content > 0 then holder, lead = lead, lead.content[1] end
    if lead.t == "Link" or lead.t == "Superscript" then table.remove(holder.content, 1) end
  end
  table.insert(notes, pandoc.Div(el.content))
  return {}
end
function OrderedList(el) return pandoc.BulletList(el.content) end
function Pandoc(doc)
  for _, note in ipairs(notes) do table.insert(doc.blocks, note) end
  return doc
end
"#,
    )
    .expect("write");
    let out = Command::new("pandoc")
        .args(["--wrap=none", "-t", "plain", "-f", from, "--lua-filter"])
        .arg(filter.path())
        .arg(path)
        .output()
        .expect("pandoc is not installed: run the suite through scripts/test");
    assert!(
        out.status.success(),
        "pandoc failed on {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    comparable_words(&String::from_utf8_lossy(&out.stdout))
}

/// Words for comparing two writers: [`common::words`] once sub- and superscript digits are
/// plain (pandoc writes H~2~O as “H₂O”, an EPUB as `H<sub>2</sub>O`) and letters and
/// digits apart (“2nd” and “2^(nd)” are both “nd”).
fn comparable_words(text: &str) -> Vec<String> {
    let plain: String = text
        .chars()
        .flat_map(|c| {
            let digit = "⁰¹²³⁴⁵⁶⁷⁸⁹₀₁₂₃₄₅₆₇₈₉"
                .chars()
                .position(|d| d == c)
                .map(|i| char::from(b'0' + (i % 10) as u8));
            let split = c.is_ascii_digit();
            let c = digit.unwrap_or(c);
            if split || digit.is_some() {
                vec![' ', c, ' ']
            } else {
                vec![c]
            }
        })
        .collect();
    common::words(&plain)
}

/// How many of `source`'s words appear in `ours` in the same order: the length of their
/// longest common subsequence, from a Myers diff (`similar`, which Bindery already builds).
fn kept_in_order(source: &[String], ours: &[String]) -> (usize, Vec<String>) {
    let mut kept = 0;
    let mut lost = Vec::new();
    for op in similar::capture_diff_slices(similar::Algorithm::Myers, source, ours) {
        match op {
            similar::DiffOp::Equal { len, .. } => kept += len,
            similar::DiffOp::Delete {
                old_index, old_len, ..
            }
            | similar::DiffOp::Replace {
                old_index, old_len, ..
            } => {
                if lost.len() < 12 {
                    lost.extend(
                        source[old_index..old_index + old_len]
                            .iter()
                            .take(12)
                            .cloned(),
                    );
                }
            }
            similar::DiffOp::Insert { .. } => {}
        }
    }
    (kept, lost)
}

/// The words a person reads in an EPUB, in reading order: each spine document's text, an
/// image's description where the image is, and mathematics left out (as the source's pandoc
/// reading leaves it out); twice, with the notes where they stand and with them after the
/// book. Read here rather than by pandoc, whose EPUB reader drops images' descriptions and
/// the cells of tables that span rows.
fn reading_words(epub: &Path) -> (Vec<String>, Vec<String>) {
    use std::io::Read;
    let mut zip = zip::ZipArchive::new(std::fs::File::open(epub).expect("epub")).expect("zip");
    let mut read = |name: &str| {
        let mut text = String::new();
        zip.by_name(name)
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .read_to_string(&mut text)
            .expect("utf-8");
        text
    };
    let opf = read("OEBPS/content.opf");
    // Each piece starts right after `<item `, so a space goes before it to find the first
    // attribute as every other.
    let attr = |tag: &str, key: &str| {
        format!(" {tag}")
            .split(&format!(" {key}=\""))
            .nth(1)
            .and_then(|v| v.split('"').next())
            .map(str::to_owned)
    };
    let hrefs: HashMap<String, String> = opf
        .split("<item ")
        .skip(1)
        .filter_map(|tag| Some((attr(tag, "id")?, attr(tag, "href")?)))
        .collect();
    let mut in_place = Vec::new();
    let mut words = Vec::new();
    let mut notes = Vec::new();
    for itemref in opf.split("<itemref ").skip(1) {
        let Some(href) = attr(itemref, "idref").and_then(|id| hrefs.get(&id).cloned()) else {
            continue;
        };
        let xhtml = read(&format!("OEBPS/{href}"));
        let mut body = xhtml.split("<body").nth(1).unwrap_or("");
        while let Some(start) = body.find("<aside") {
            let text = comparable_words(&visible_text(&body[..start]));
            in_place.extend(text.iter().cloned());
            words.extend(text);
            let end = body[start..]
                .find("</aside>")
                .map_or(body.len(), |e| start + e + 8);
            let note = comparable_words(&visible_text(&body[start..end]));
            in_place.extend(note.iter().cloned());
            notes.extend(note);
            body = &body[end..];
        }
        let text = comparable_words(&visible_text(body));
        in_place.extend(text.iter().cloned());
        words.extend(text);
    }
    words.extend(notes);
    (in_place, words)
}

/// The text of XHTML as it reads: tags out, `<math>` out, an image's `alt` in its place,
/// the predefined entities resolved.
fn visible_text(xhtml: &str) -> String {
    let mut out = String::new();
    let mut rest = xhtml;
    while let Some(open) = rest.find('<') {
        out.push_str(&rest[..open]);
        rest = &rest[open..];
        if rest.starts_with("<math") {
            let end = rest
                .find("</math>")
                .map_or(rest.len(), |e| e + "</math>".len());
            rest = &rest[end..];
            out.push(' ');
            continue;
        }
        let end = rest.find('>').map_or(rest.len(), |e| e + 1);
        let tag = &rest[..end];
        // A note's marker and its link back are numbers, not the book's words.
        if tag.starts_with("<a ") && (tag.contains("noteref") || tag.contains("doc-backlink")) {
            let close = rest.find("</a>").map_or(rest.len(), |e| e + 4);
            rest = &rest[close..];
            continue;
        }
        if tag.starts_with("<img")
            && let Some(alt) = tag
                .split(" alt=\"")
                .nth(1)
                .and_then(|a| a.split('"').next())
        {
            out.push(' ');
            out.push_str(alt);
        }
        // A tag may stand between words (`</p><p>`) or inside one (`H<sub>2</sub>O`).
        if !matches!(
            tag.trim_start_matches("</")
                .trim_start_matches('<')
                .split([' ', '>', '/'])
                .next(),
            Some(
                "sub"
                    | "sup"
                    | "em"
                    | "strong"
                    | "span"
                    | "a"
                    | "i"
                    | "b"
                    | "small"
                    | "u"
                    | "s"
                    | "code"
            )
        ) {
            out.push(' ');
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

/// A line with each `\\(…\\)` and `\\[…\\]` closed on it written with dollars.
fn dollars(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(i) = rest.find(['\\']) {
        let (open, close, delimiter) = match rest[i..].get(..2) {
            Some("\\(") => ("\\(", "\\)", "$"),
            Some("\\[") => ("\\[", "\\]", "$$"),
            _ => {
                out.push_str(&rest[..i + 1]);
                rest = &rest[i + 1..];
                continue;
            }
        };
        match rest[i + 2..].find(close) {
            Some(j) => {
                out.push_str(&rest[..i]);
                out.push_str(delimiter);
                out.push_str(&rest[i + 2..i + 2 + j]);
                out.push_str(delimiter);
                rest = &rest[i + 2 + j + close.len()..];
            }
            None => {
                out.push_str(&rest[..i + open.len()]);
                rest = &rest[i + open.len()..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Words of every `alt` attribute in the EPUB's documents.
fn alt_words(epub: &Path) -> Vec<String> {
    use std::io::Read;
    let mut zip = zip::ZipArchive::new(std::fs::File::open(epub).expect("epub")).expect("zip");
    let mut found = Vec::new();
    for i in 0..zip.len() {
        let mut entry = zip.by_index(i).expect("entry");
        if !entry.name().is_ok_and(|n| n.ends_with(".xhtml")) {
            continue;
        }
        let mut xml = String::new();
        entry.read_to_string(&mut xml).expect("read");
        for part in xml.split(" alt=\"").skip(1) {
            found.extend(words(part.split('"').next().unwrap_or("")));
        }
    }
    found
}

/// Words (with multiplicity) of `source` that `ours` lacks. A word that survives inside a
/// longer one counts as kept: accepting a tracked deletion of a paragraph mark joins two
/// paragraphs the way Word does ("split" + "Paragraph" → "splitParagraph").
fn missing_words(source: &[String], ours: &[String]) -> Vec<String> {
    let mut have: HashMap<&str, usize> = HashMap::new();
    for w in ours {
        *have.entry(w.as_str()).or_default() += 1;
    }
    let mut missing = Vec::new();
    for w in source {
        match have.get_mut(w.as_str()) {
            Some(n) if *n > 0 => *n -= 1,
            _ if ours
                .iter()
                .any(|o| o.len() > w.len() && o.contains(w.as_str())) => {}
            _ => missing.push(w.clone()),
        }
    }
    missing
}

#[test]
fn the_same_manuscript_gives_byte_identical_epubs() {
    let dir = tempfile::tempdir().expect("tempdir");
    for input in [
        corpus().join("markdown/love-among-the-chickens.md"),
        corpus().join("docx/love-among-the-chickens.docx"),
        corpus().join("text/love-among-the-chickens.txt"),
    ] {
        let a = dir.path().join("a.epub");
        let b = dir.path().join("b.epub");
        assert!(convert(&input, &a, &["--quiet"]).status.success());
        assert!(convert(&input, &b, &["--quiet"]).status.success());
        let (a, b) = (std::fs::read(a).expect("a"), std::fs::read(b).expect("b"));
        assert!(a == b, "{} converted twice differs", input.display());
        assert_eq!(&a[30..38], b"mimetype", "mimetype is the first entry");
    }
}

#[test]
fn the_report_names_the_book_and_its_warnings() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = convert(
        &corpus().join("docx/comments.docx"),
        &dir.path().join("c.epub"),
        &["--json"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json report");
    assert!(report["report"]["statistics"]["words"].as_u64() > Some(0));
    let codes: Vec<&str> = report["report"]["warnings"]
        .as_array()
        .expect("warnings")
        .iter()
        .filter_map(|w| w["code"].as_str())
        .collect();
    assert!(codes.contains(&"comment_dropped"), "{codes:?}");
    // The language comes from the document's default style; never pandoc's "C".
    assert_eq!(report["language"], "en-US");
}

/// The text report lists each warning once: the print edition's are in the book's report,
/// marked as the print edition's, and were listed a second time after them.
#[test]
fn the_text_report_lists_a_print_warning_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let short = dir.path().join("short.md");
    std::fs::write(&short, "# One\n\nA line.\n").expect("write");
    let pdf = dir.path().join("short.pdf");
    let out = convert(
        &short,
        &dir.path().join("short.epub"),
        &["--pdf", pdf.to_str().expect("utf-8 path")],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout.matches("[print_too_short]").count(), 1, "{stdout}");
    assert!(stdout.contains("1 warning"), "{stdout}");
}

#[test]
fn bad_input_is_refused_with_a_reason_and_exit_code_65() {
    let dir = tempfile::tempdir().expect("tempdir");
    let empty = dir.path().join("empty.md");
    std::fs::write(&empty, b"").expect("write");
    let pdf = dir.path().join("draft.docx");
    std::fs::write(&pdf, b"%PDF-1.7 not really").expect("write");
    for (input, expect) in [(&empty, "empty"), (&pdf, "PDF")] {
        let out = convert(input, &dir.path().join("x.epub"), &[]);
        assert_eq!(out.status.code(), Some(65), "{}", input.display());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(expect), "{stderr}");
        assert!(
            !dir.path().join("x.epub").exists(),
            "no EPUB for refused input"
        );
    }
    let out = convert(
        &corpus().join("markdown/love-among-the-chickens.md"),
        &dir.path().join("x.epub"),
        &["--meta", "language=C"],
    );
    assert_eq!(out.status.code(), Some(65));
    assert!(String::from_utf8_lossy(&out.stderr).contains("language"));
}

#[test]
fn the_web_reader_is_written_when_asked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let site = dir.path().join("site");
    let out = convert(
        &corpus().join("markdown/love-among-the-chickens.md"),
        &dir.path().join("b.epub"),
        &["--quiet", "--reader", site.to_str().expect("utf-8 path")],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for file in [
        "index.html",
        "sw.js",
        "manifest.webmanifest",
        "chapter-001.html",
    ] {
        assert!(site.join(file).is_file(), "{file} missing from the reader");
    }
}
