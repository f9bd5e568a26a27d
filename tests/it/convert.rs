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
