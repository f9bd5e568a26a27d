//! DAISY Ace, the EPUB accessibility checker the stores and publishers use, on the EPUBs that
//! carry what Ace checks beyond EPUBCheck: the corpus novel with its cover and its print
//! edition's page list (`pageBreakSource`, the page-list nav, page-break markers), and the
//! mathematics fixtures (TeX in Markdown, MathML with its TeX as annotation; Word equations in
//! a DOCX), and the books in other languages. Each must come out with no
//! violation at all, of any impact. Ace's reports are kept under `target/tmp/ace/` for a
//! person to read.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common;

fn fixtures() -> PathBuf {
    common::corpus::fixtures()
}

/// What Ace found in one EPUB.
pub(crate) struct Checked {
    /// Each violation, one line each.
    pub violations: Vec<String>,
    /// What Ace saw the EPUB hold (`hasPageBreaks`, `hasMathML`, …).
    properties: Value,
}

/// `bindery convert MANUSCRIPT -o DIR/book.epub ARGS…`, then Ace on the EPUB.
pub(crate) fn ace(name: &str, manuscript: &Path, args: &[&str]) -> Checked {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("ace")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("output dir");
    let epub = dir.join("book.epub");
    let mut convert = Command::new(common::BIN);
    convert
        .arg("convert")
        .arg(manuscript)
        .arg("-o")
        .arg(&epub)
        .arg("--quiet")
        .args(args)
        .current_dir(&dir);
    common::succeed(&mut convert, "bindery convert");

    let report = dir.join("report");
    let out = Command::new(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ace/node_modules/.bin/ace-puppeteer"),
    )
    .arg("--outdir")
    .arg(&report)
    .args(["--force", "--silent", "--tempdir"])
    .arg(dir.join("unpacked"))
    .arg(&epub)
    .env("PUPPETEER_EXECUTABLE_PATH", "/usr/bin/chromium")
    .output()
    .expect("ace is not installed: run the suite through scripts/test");
    let json = std::fs::read(report.join("report.json")).unwrap_or_else(|e| {
        panic!(
            "Ace wrote no report ({e}): {:?}\n{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    read_report(name, &json)
}

/// What Ace's `report.json` says: its violations, each a line, and what it saw.
fn read_report(name: &str, json: &[u8]) -> Checked {
    let report: Value = serde_json::from_slice(json).expect("Ace's report is JSON");
    let mut violations = Vec::new();
    for document in report["assertions"].as_array().into_iter().flatten() {
        let file = document["earl:testSubject"]["url"].as_str().unwrap_or("?");
        for assertion in document["assertions"].as_array().into_iter().flatten() {
            let test = &assertion["earl:test"];
            violations.push(format!(
                "{file}: {} {} — {}",
                test["earl:impact"].as_str().unwrap_or("?"),
                test["dct:title"].as_str().unwrap_or("?"),
                assertion["earl:result"]["dct:description"]
                    .as_str()
                    .unwrap_or("")
            ));
        }
    }
    if violations.is_empty() {
        assert_eq!(
            report["earl:result"]["earl:outcome"], "pass",
            "{name}: Ace's outcome with no violation listed"
        );
    }
    Checked {
        violations,
        properties: report["properties"].clone(),
    }
}

/// Ace on each of `epubs` in one process and one browser (`tests/ace/batch.js`), its reports
/// under `dir`: what it found in each, in order.
pub(crate) fn ace_all(dir: &Path, epubs: &[PathBuf]) -> Vec<Checked> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).expect("output dir");
    let ace = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ace");
    let out = Command::new("node")
        .arg(ace.join("batch.js"))
        .arg(dir)
        .args(epubs)
        .current_dir(&ace)
        .env("PUPPETEER_EXECUTABLE_PATH", "/usr/bin/chromium")
        .output()
        .expect("node is not installed: run the suite through scripts/test");
    assert!(
        out.status.success(),
        "Ace's batch failed: {:?}\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    epubs
        .iter()
        .enumerate()
        .map(|(n, epub)| {
            let json = std::fs::read(dir.join(n.to_string()).join("report.json"))
                .unwrap_or_else(|e| panic!("Ace wrote no report for {}: {e}", epub.display()));
            read_report(&epub.display().to_string(), &json)
        })
        .collect()
}

#[test]
fn ace_finds_nothing_in_a_paged_novel_or_books_of_mathematics() {
    if !common::need::ace() {
        return;
    }
    let novel = fixtures().join("markdown/love-among-the-chickens.md");
    let cover = fixtures().join("love-among-the-chickens-cover.jpg");
    let pdf = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ace/novel.pdf");
    std::fs::create_dir_all(pdf.parent().expect("dir")).expect("dir");
    let math = fixtures().join("markdown/math.md");
    let word = fixtures().join("docx/equations.docx");
    let (novel, math, word) = std::thread::scope(|scope| {
        let novel = scope.spawn(|| {
            ace(
                "novel",
                &novel,
                &[
                    "--cover",
                    cover.to_str().expect("path"),
                    "--pdf",
                    pdf.to_str().expect("path"),
                ],
            )
        });
        let math = scope.spawn(|| ace("math", &math, &[]));
        let word = scope.spawn(|| ace("word-equations", &word, &[]));
        (
            novel.join().expect("the novel's check"),
            math.join().expect("the mathematics' check"),
            word.join().expect("the Word equations' check"),
        )
    });
    assert!(
        novel.violations.is_empty(),
        "the paged novel: {:#?}",
        novel.violations
    );
    assert!(
        math.violations.is_empty(),
        "the mathematics: {:#?}",
        math.violations
    );
    // Ace saw what it was run for.
    assert_eq!(
        novel.properties["hasPageBreaks"], true,
        "{}",
        novel.properties
    );
    assert_eq!(math.properties["hasMathML"], true, "{}", math.properties);
    assert!(
        word.violations.is_empty(),
        "the Word equations: {:#?}",
        word.violations
    );
    assert_eq!(word.properties["hasMathML"], true, "{}", word.properties);
}

/// The books in other languages (`tests/fixtures/languages/`): right to left, CJK, Cyrillic
/// and Greek, with their labels in their language. Ace reads `lang` and `dir` on every
/// document; none may show a violation of any impact.
#[test]
fn ace_finds_nothing_in_books_in_other_languages() {
    if !common::need::ace() {
        return;
    }
    let names = ["ar", "he", "ja", "zh", "ru", "el"];
    let mut failures = Vec::new();
    for pair in names.chunks(2) {
        let checked: Vec<(&str, Checked)> = std::thread::scope(|scope| {
            let running: Vec<_> = pair
                .iter()
                .map(|name| {
                    scope.spawn(move || {
                        let manuscript = fixtures().join(format!("languages/{name}.md"));
                        (*name, ace(&format!("languages-{name}"), &manuscript, &[]))
                    })
                })
                .collect();
            running
                .into_iter()
                .map(|r| r.join().expect("Ace's check"))
                .collect()
        });
        for (name, checked) in checked {
            if !checked.violations.is_empty() {
                failures.push(format!("{name}: {:#?}", checked.violations));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
