//! A book's print editions built together by the service's workflow from one manuscript: a
//! paperback, a hardcover and a large-print edition, each with its own interior, cover, page
//! count, spine and ISBN, judged by poppler, qpdf and zbar, and its page in Chromium.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::{self, need};

const PAPERBACK_ISBN: &str = "9780140449136";
const HARDCOVER_ISBN: &str = "9781402894626";
const LARGE_PRINT_ISBN: &str = "9781853260414";
const EBOOK_ISBN: &str = "9780306406157";

/// KDP's spine: 0.002252 in a page of white paper
/// (https://kdp.amazon.com/en_US/help/topic/G201953020).
const WHITE_INCHES_A_PAGE: f64 = 0.002252;
/// A paperback cover's bleed beyond the trim on each outer edge, 0.125 in (the same page).
const PAPERBACK_BLEED: f64 = 0.125;
/// A KDP hardcover's cover extends 0.51 in past the edge of the front cover
/// (https://kdp.amazon.com/en_US/help/topic/GDTKFJPNQCBTMRV6).
const HARDCOVER_WRAP: f64 = 0.51;

fn out_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("editions");
    std::fs::create_dir_all(&dir).expect("create target/tmp/editions");
    dir
}

/// The corpus novel with front matter of its own: three editions of 6 × 9 in on white paper,
/// each with its ISBN, for KDP.
fn manuscript() -> Vec<u8> {
    let novel = std::fs::read_to_string(
        common::corpus::fixtures().join("markdown/love-among-the-chickens.md"),
    )
    .expect("the novel");
    let body = novel
        .splitn(3, "---")
        .nth(2)
        .expect("the novel's front matter closes");
    format!(
        "---\ntitle: Love Among the Chickens\nauthor: P. G. Wodehouse\nisbn: {EBOOK_ISBN}\n\
         trim: 6x9\npaper: white\nprint_isbn: {PAPERBACK_ISBN}\n\
         editions: paperback, hardcover, large print\nhardcover_isbn: {HARDCOVER_ISBN}\n\
         hardcover_trim: 6x9\nlarge_print_isbn: {LARGE_PRINT_ISBN}\nlarge_print_trim: 6x9\n\
         printer: kdp\n---\n{body}"
    )
    .into_bytes()
}

/// A server with the three-edition book ready on it: the server, a token and the book's JSON.
fn served() -> (common::Server, String, Value) {
    let server = common::Server::start(&["serve"], &[]);
    let token = common::web::token(&server, "author", false);
    let form = reqwest::blocking::multipart::Form::new().part(
        "manuscript",
        reqwest::blocking::multipart::Part::bytes(manuscript()).file_name("novel.md"),
    );
    let created = common::web::upload(&server, &token, "?wait=25", form);
    let book = common::web::follow_to_ready(&server, &token, created);
    (server, token, book)
}

fn get(server: &common::Server, token: &str, path: &str) -> Vec<u8> {
    let answer = common::client()
        .get(server.url(path))
        .bearer_auth(token)
        .send()
        .expect("GET");
    assert!(answer.status().is_success(), "{path}: {}", answer.status());
    answer.bytes().expect("body").to_vec()
}

fn pdfinfo(pdf: &Path) -> (usize, f64, f64) {
    let out = Command::new("pdfinfo").arg(pdf).output().expect("pdfinfo");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let field = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name} in {text}"))
            .to_owned()
    };
    let pages = field("Pages:")
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .expect("pages");
    let size: Vec<f64> = field("Page size:")
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    (pages, size[0] / 72.0, size[1] / 72.0)
}

/// The text of the page of `pdf` that holds the copyright notice's ISBNs.
fn isbn_lines(pdf: &Path) -> Vec<String> {
    let out = Command::new("pdftotext")
        .args(["-f", "1", "-l", "8", "-layout"])
        .arg(pdf)
        .arg("-")
        .output()
        .expect("pdftotext");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("ISBN"))
        .map(str::to_owned)
        .collect()
}

fn barcode(cover: &Path) -> String {
    let png = cover.with_extension("");
    let status = Command::new("pdftoppm")
        .args(["-r", "300", "-png", "-singlefile"])
        .arg(cover)
        .arg(&png)
        .status()
        .expect("pdftoppm");
    assert!(status.success());
    let out = Command::new("zbarimg")
        .args(["-q", "--raw", "-Sdisable", "-Sean13.enable"])
        .arg(png.with_extension("png"))
        .output()
        .expect("zbarimg");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[test]
fn one_manuscript_gives_three_editions_each_with_its_pages_spine_cover_and_isbn() {
    if !need::pdf_tools() || !need::zbar() {
        return;
    }
    let (server, token, book) = served();
    let id = book["id"].as_str().expect("id");
    let report = &book["report"];
    let editions = report["editions"].as_array().expect("the editions");
    let names: Vec<&str> = editions
        .iter()
        .map(|e| e["edition"].as_str().expect("an edition"))
        .collect();
    assert_eq!(names, ["paperback", "hardcover", "large_print"]);
    // The book's own print edition, whose pages the EPUB lists, is the first listed.
    assert_eq!(report["print"]["edition"], "paperback");
    let dir = out_dir();
    let mut pages_of = std::collections::BTreeMap::new();
    for (edition, isbn) in [
        ("paperback", PAPERBACK_ISBN),
        ("hardcover", HARDCOVER_ISBN),
        ("large_print", LARGE_PRINT_ISBN),
    ] {
        let made = editions
            .iter()
            .find(|e| e["edition"] == edition)
            .expect("reported");
        assert!(made["failure"].is_null(), "{edition}: {made}");
        assert_eq!(made["printer_check"]["passed"], true, "{edition}: {made}");
        let interior = dir.join(format!("{edition}.pdf"));
        std::fs::write(
            &interior,
            get(
                &server,
                &token,
                &format!("/api/v1/books/{id}/pdf?edition={edition}"),
            ),
        )
        .expect("write");
        let cover = dir.join(format!("{edition}-cover.pdf"));
        std::fs::write(
            &cover,
            get(
                &server,
                &token,
                &format!("/api/v1/books/{id}/print-cover.pdf?edition={edition}"),
            ),
        )
        .expect("write");
        let (pages, width, height) = pdfinfo(&interior);
        assert_eq!(Some(pages as u64), made["pages"].as_u64(), "{edition}");
        assert!(
            (width - 6.0).abs() < 0.01 && (height - 9.0).abs() < 0.01,
            "{edition}"
        );
        pages_of.insert(edition, pages);
        // Every edition's copyright page lists every ISBN, each named.
        assert_eq!(
            isbn_lines(&interior),
            [
                format!("ISBN {PAPERBACK_ISBN} (paperback)"),
                format!("ISBN {HARDCOVER_ISBN} (hardcover)"),
                format!("ISBN {LARGE_PRINT_ISBN} (large print)"),
                format!("ISBN {EBOOK_ISBN} (ebook)"),
            ],
            "{edition}"
        );
        // The cover: its width by the printer's published figures, and its own ISBN.
        let spine = pages as f64 * WHITE_INCHES_A_PAGE;
        let margin = if edition == "hardcover" {
            HARDCOVER_WRAP
        } else {
            PAPERBACK_BLEED
        };
        let (_, cover_width, cover_height) = pdfinfo(&cover);
        assert!(
            (cover_width - (2.0 * 6.0 + spine + 2.0 * margin)).abs() < 0.005,
            "{edition}: a cover {cover_width} in wide for {pages} pages"
        );
        assert!(
            (cover_height - (9.0 + 2.0 * margin)).abs() < 0.005,
            "{edition}"
        );
        assert!(
            (made["spine_inches"].as_f64().expect("spine") - spine).abs() < 1e-6,
            "{edition}"
        );
        assert_eq!(barcode(&cover), isbn, "{edition}'s barcode");
    }
    // Large print is its own book: 16 pt where the others are set at 11. The hardcover, at the
    // paperback's trim, is the paperback's pages, not typeset again.
    assert_eq!(pages_of["paperback"], pages_of["hardcover"]);
    assert!(
        std::fs::read(dir.join("paperback.pdf")).expect("read")
            == std::fs::read(dir.join("hardcover.pdf")).expect("read"),
        "the hardcover's interior is the paperback's"
    );
    assert!(
        pages_of["large_print"] as f64 > 1.4 * pages_of["paperback"] as f64,
        "{pages_of:?}"
    );
    // Without `edition`, the book's own print edition; an edition it lacks is named.
    let own = get(&server, &token, &format!("/api/v1/books/{id}/pdf"));
    assert_eq!(pdfinfo_bytes(&dir, &own), pages_of["paperback"]);
    // The EPUB's page list is the paperback's.
    let epub = get(&server, &token, &format!("/api/v1/books/{id}/epub"));
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(epub)).expect("a zip");
    let mut opf = String::new();
    std::io::Read::read_to_string(
        &mut zip.by_name("OEBPS/content.opf").expect("the package"),
        &mut opf,
    )
    .expect("UTF-8");
    assert!(
        opf.contains(&format!(
            "<meta property=\"pageBreakSource\">urn:isbn:{PAPERBACK_ISBN}</meta>"
        )),
        "{opf}"
    );
}

fn pdfinfo_bytes(dir: &Path, bytes: &[u8]) -> usize {
    let file = dir.join("own.pdf");
    std::fs::write(&file, bytes).expect("write");
    pdfinfo(&file).0
}

#[test]
fn the_book_page_lists_each_edition_with_its_files_and_check_and_passes_axe_in_chromium() {
    if !need::browser() {
        return;
    }
    let (server, token, book) = served();
    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("screenshots/editions");
    let stdout = common::browser_passes(
        common::browser_script("editions.mjs")
            .arg(server.url("/"))
            .arg(&shots)
            .env("BINDERY_TOKEN", &token)
            .env("BINDERY_BOOK", book["id"].as_str().expect("id")),
        "the editions on the book page",
    );
    assert!(stdout.trim_end().ends_with("OK"), "{stdout}");
}

/// Settings for an edition the book is not made in, and one ISBN for two editions, are
/// refused naming the key and what to do; an edition nobody prints names the ones there are.
#[test]
fn edition_settings_that_cannot_work_are_refused_naming_the_key() {
    let dir = out_dir();
    let novel = common::corpus::fixtures().join("markdown/math.md");
    for (meta, said) in [
        (
            vec!["hardcover_isbn=9781402894626"],
            "editions does not list",
        ),
        (
            vec![
                "editions=paperback, hardcover",
                "print_isbn=9781402894626",
                "hardcover_isbn=9781402894626",
            ],
            "each edition has an ISBN of its own",
        ),
        (
            vec!["editions=paperback, audiobook"],
            "paperback, hardcover or large print",
        ),
        (
            vec!["editions=large print", "large_print_size=12"],
            "16 to 24 points",
        ),
    ] {
        let mut args = vec!["--pdf".to_owned(), dir.join("x.pdf").display().to_string()];
        for m in &meta {
            args.push("--meta".to_owned());
            args.push((*m).to_owned());
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = crate::convert::convert(&novel, &dir.join("x.epub"), &args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(65), "{meta:?}: {stderr}");
        assert!(stderr.contains(said), "{meta:?}: {stderr}");
    }
}
