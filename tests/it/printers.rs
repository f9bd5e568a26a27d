//! The print edition made to, and checked against, the printer an author names
//! (`printer=kdp|ingramspark|lulu`), through `bindery convert --json`, with poppler and qpdf as
//! independent readers of the files it wrote.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::{self, need};

fn out_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("printers");
    std::fs::create_dir_all(&dir).expect("create target/tmp/printers");
    dir
}

fn novel() -> PathBuf {
    common::corpus::fixtures().join("markdown/love-among-the-chickens.md")
}

/// `bindery convert INPUT --pdf --print-cover --json EXTRA…` into `name`.pdf and
/// `name`-cover.pdf; what `--json` said.
fn made(input: &Path, name: &str, extra: &[&str]) -> (Value, PathBuf, PathBuf) {
    let dir = out_dir();
    let pdf = dir.join(format!("{name}.pdf"));
    let cover = dir.join(format!("{name}-cover.pdf"));
    let mut args = vec![
        "--pdf",
        pdf.to_str().expect("utf-8"),
        "--print-cover",
        cover.to_str().expect("utf-8"),
        "--json",
    ];
    args.extend_from_slice(extra);
    let out = crate::convert::convert(input, &dir.join(format!("{name}.epub")), &args);
    assert!(
        out.status.success(),
        "bindery convert {extra:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        serde_json::from_slice(&out.stdout).expect("--json"),
        pdf,
        cover,
    )
}

/// The rules of `report`'s check that did not pass, as `rule:verdict`.
fn not_passed(report: &Value) -> Vec<String> {
    report["printer_check"]["rules"]
        .as_array()
        .expect("a printer check")
        .iter()
        .filter(|r| r["verdict"] != "pass")
        .map(|r| {
            format!(
                "{}:{}",
                r["rule"].as_str().expect("a rule"),
                r["verdict"].as_str().expect("a verdict")
            )
        })
        .collect()
}

fn rule<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["printer_check"]["rules"]
        .as_array()
        .expect("a printer check")
        .iter()
        .find(|r| r["rule"] == name)
        .unwrap_or_else(|| panic!("no rule {name}"))
}

/// The interior's bookmarks, counted by qpdf.
fn outline_entries(pdf: &Path) -> usize {
    let out = Command::new("qpdf")
        .args(["--json", "--json-key=outlines"])
        .arg(pdf)
        .output()
        .expect("qpdf");
    let json: Value = serde_json::from_slice(&out.stdout).expect("qpdf --json");
    json["outlines"].as_array().map_or(0, Vec::len)
}

/// The first page's size in inches, by pdfinfo.
fn page_inches(pdf: &Path) -> (f64, f64) {
    let out = Command::new("pdfinfo").arg(pdf).output().expect("pdfinfo");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = text
        .lines()
        .find(|l| l.starts_with("Page size:"))
        .expect("a page size");
    let numbers: Vec<f64> = line
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    (numbers[0] / 72.0, numbers[1] / 72.0)
}

#[test]
fn the_corpus_novel_passes_kdp_and_is_made_without_bookmarks() {
    if !need::pdf_tools() {
        return;
    }
    let (report, pdf, _) = made(&novel(), "novel-kdp", &["--meta", "printer=kdp"]);
    let check = &report["printer_check"];
    assert_eq!(check["printer"], "kdp");
    assert_eq!(check["passed"], true, "{:?}", not_passed(&report));
    assert!(not_passed(&report).is_empty(), "{:?}", not_passed(&report));
    for name in [
        "trim",
        "page_count",
        "gutter",
        "outside_margin",
        "bleed",
        "spine_text",
        "spine_width",
        "image_resolution",
        "fonts_embedded",
        "transparency",
        "bookmarks",
        "encryption",
    ] {
        let r = rule(&report, name);
        assert!(
            r["source"]
                .as_str()
                .unwrap()
                .starts_with("https://kdp.amazon.com/"),
            "{name}: {r}"
        );
    }
    // KDP asks for no bookmarks; qpdf finds none. Without a printer they are kept for proofing.
    assert_eq!(outline_entries(&pdf), 0);
    let (_, plain, _) = made(&novel(), "novel-no-printer", &[]);
    assert!(outline_entries(&plain) > 20);
}

#[test]
fn a_twenty_page_paperback_fails_kdp_s_page_count_naming_the_rule() {
    let dir = out_dir();
    let short = dir.join("short.md");
    let mut text = String::from("---\ntitle: A Short Book\nauthor: A. Writer\n---\n\n");
    for chapter in 1..=4 {
        text.push_str(&format!(
            "# Chapter {chapter}\n\n{}\n\n",
            "A sentence of a short book. ".repeat(60)
        ));
    }
    std::fs::write(&short, text).expect("write the manuscript");
    let (report, _, _) = made(&short, "short-kdp", &["--meta", "printer=kdp"]);
    let pages = report["pdf"]["pages"].as_u64().expect("pages");
    assert!(pages < 24, "{pages} pages");
    assert_eq!(report["printer_check"]["passed"], false);
    assert_eq!(not_passed(&report), ["page_count:fail"]);
    let count = rule(&report, "page_count");
    assert_eq!(count["found"], format!("{pages} pages"));
    assert_eq!(
        count["wanted"],
        "24 to 828 pages for a paperback on white paper"
    );
    assert!(
        count["advice"]
            .as_str()
            .unwrap()
            .starts_with(&format!("Add {} pages", 24 - pages)),
        "{count}"
    );
    // The same file is short for Lulu too, by Lulu's own figure.
    let (lulu, _, _) = made(&short, "short-lulu", &["--meta", "printer=lulu"]);
    assert!(
        rule(&lulu, "page_count")["wanted"]
            .as_str()
            .unwrap()
            .starts_with("32 to 800 pages")
    );
}

/// Lulu publishes its own gutter table (0.5 in of safety margin, plus 0.5 in for 151 to 400
/// pages: its Book Creation Guide) and spine formula (pages / 444 + 0.06 in:
/// https://help.api.lulu.com/en/support/solutions/articles/64000254616), and wants bleed on
/// every edge; a book made for Lulu follows them, and the cover's width is Lulu's.
#[test]
fn a_book_for_lulu_has_lulu_s_gutter_and_spine() {
    if !need::pdf_tools() {
        return;
    }
    let (report, _, cover) = made(&novel(), "novel-lulu", &["--meta", "printer=lulu"]);
    let pages = report["pdf"]["pages"].as_u64().expect("pages") as f64;
    assert!((151.0..=400.0).contains(&pages), "{pages}");
    assert_eq!(report["pdf"]["gutter_inches"], 1.0);
    let spine = pages / 444.0 + 0.06;
    let (width, height) = page_inches(&cover);
    // Back and front of 6 in, the spine, and 0.125 in of bleed at each end.
    assert!(
        (width - (2.0 * 6.0 + spine + 0.25)).abs() < 0.005,
        "{width} in for {pages} pages"
    );
    assert!((height - 9.25).abs() < 0.005);
    assert!(not_passed(&report).is_empty(), "{:?}", not_passed(&report));
}

/// The lowest resolution the check finds is the one poppler's `pdfimages` reports.
#[test]
fn a_cover_image_under_300_dpi_fails_and_pdfimages_agrees() {
    if !need::pdf_tools() {
        return;
    }
    let image = common::corpus::fixtures().join("love-among-the-chickens-cover.jpg");
    let (report, _, cover) = made(
        &novel(),
        "novel-ingramspark",
        &[
            "--meta",
            "printer=ingramspark",
            "--cover",
            image.to_str().unwrap(),
        ],
    );
    let found = rule(&report, "image_resolution");
    assert_eq!(found["verdict"], "fail");
    let out = Command::new("pdfimages")
        .arg("-list")
        .arg(&cover)
        .output()
        .expect("pdfimages");
    let listed = String::from_utf8_lossy(&out.stdout).into_owned();
    let ppi: Vec<u32> = listed
        .lines()
        .skip(2)
        .filter_map(|l| l.split_whitespace().nth(12)?.parse().ok())
        .collect();
    let lowest = ppi.iter().min().expect("an image");
    assert!(
        found["found"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{lowest} dpi at the lowest (the cover")),
        "{found} against pdfimages' {lowest}"
    );
    // IngramSpark only asks for PDF/X and device colour: advice, not failure.
    let advice = not_passed(&report);
    assert!(
        advice.contains(&"pdf_standard:advice".to_owned()),
        "{advice:?}"
    );
    assert!(advice.contains(&"colour:advice".to_owned()), "{advice:?}");
}

#[test]
fn a_printer_nobody_knows_is_refused_naming_the_known_ones() {
    let out = crate::convert::convert(
        &novel(),
        &out_dir().join("unknown.epub"),
        &["--meta", "printer=gutenberg", "--pdf", "/dev/null"],
    );
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("kdp, ingramspark, lulu or none"), "{said}");
}

/// Through the service: a book uploaded for KDP is checked, the API's report holds the check,
/// and the book's page shows each rule with its result.
#[test]
fn the_service_checks_an_upload_for_its_printer_and_the_book_page_shows_it() {
    let server = common::Server::start(&["serve"], &[]);
    let token = common::web::token(&server, "author", false);
    let form = reqwest::blocking::multipart::Form::new()
        .part(
            "manuscript",
            reqwest::blocking::multipart::Part::bytes(std::fs::read(novel()).expect("novel"))
                .file_name("novel.md"),
        )
        .text("printer", "kdp");
    let created = common::web::upload(&server, &token, "?wait=25", form);
    let book = common::web::follow_to_ready(&server, &token, created);
    let check = &book["report"]["print"]["printer_check"];
    assert_eq!(check["printer"], "kdp", "{book}");
    assert_eq!(check["passed"], true, "{check}");
    let id = book["id"].as_str().expect("id");
    let session = common::web::session(&server, &token);
    let page = common::web::browser()
        .get(server.url(&format!("/books/{id}")))
        .header("cookie", &session.cookie)
        .send()
        .expect("GET the book's page")
        .text()
        .expect("body");
    assert!(
        page.contains("Checked against Amazon KDP: every rule passed"),
        "{page}"
    );
    for rule in ["page_count", "gutter", "spine_text", "bookmarks"] {
        assert!(
            page.contains(&format!("data-rule=\"{rule}\" data-verdict=\"pass\"")),
            "{rule}"
        );
    }
}
