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
/// pages: its Book Creation Guide), spine formula (pages / 444 + 0.06 in:
/// https://help.api.lulu.com/en/support/solutions/articles/64000254616) and bleed (0.125 in
/// on every side, a 6 × 9 book's pages 6.25 × 9.25 in:
/// https://help.lulu.com/en/support/solutions/articles/64000255584); a book made for Lulu
/// follows them, and the cover's width is Lulu's.
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
    // With bleed, Lulu's pages bleed past the spine too: 6.25 × 9.25 in for a 6 × 9 book.
    let (bled, interior, _) = made(
        &novel(),
        "novel-lulu-bleed",
        &["--meta", "printer=lulu", "--bleed"],
    );
    let (width, height) = page_inches(&interior);
    assert!(
        (width - 6.25).abs() < 0.005 && (height - 9.25).abs() < 0.005,
        "{width} × {height} in"
    );
    assert!(not_passed(&bled).is_empty(), "{:?}", not_passed(&bled));
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

/// A manuscript with a colour photograph (JPEG) and a drawing with transparency (PNG with
/// alpha) in its chapters, made here and embedded as `data:` URIs.
fn illustrated(dir: &Path) -> PathBuf {
    let photo = image::RgbImage::from_fn(600, 400, |x, y| {
        image::Rgb([(x % 256) as u8, (y % 256) as u8, 160])
    });
    photo
        .save(dir.join("photo.jpg"))
        .expect("write the photograph");
    let drawing = image::RgbaImage::from_fn(300, 300, |x, y| {
        let inside = (x as i32 - 150).pow(2) + (y as i32 - 150).pow(2) < 120 * 120;
        image::Rgba([200, 30, 30, if inside { 255 } else { 0 }])
    });
    drawing
        .save(dir.join("drawing.png"))
        .expect("write the drawing");
    use base64::Engine as _;
    let uri = |file: &str, kind: &str| {
        let bytes = std::fs::read(dir.join(file)).expect("an image");
        format!(
            "data:{kind};base64,{}",
            base64::engine::general_purpose::STANDARD.encode(bytes)
        )
    };
    let (photo, drawing) = (
        uri("photo.jpg", "image/jpeg"),
        uri("drawing.png", "image/png"),
    );
    let manuscript = dir.join("illustrated.md");
    let mut text = String::from("---\ntitle: Pictures\nauthor: A. Painter\n---\n\n");
    for chapter in 1..=6 {
        text.push_str(&format!(
            "# Chapter {chapter}\n\n{}\n\n![A photograph]({photo})\n\n{}\n\n![A red disc]({drawing})\n\n",
            "Words before the picture. ".repeat(120),
            "Words after it. ".repeat(120)
        ));
    }
    std::fs::write(&manuscript, text).expect("write the manuscript");
    manuscript
}

/// qpdf's JSON of a PDF: its version and its objects by `N 0 R`.
struct QpdfJson {
    version: String,
    objects: serde_json::Map<String, Value>,
}

impl QpdfJson {
    fn of(pdf: &Path) -> QpdfJson {
        let out = Command::new("qpdf")
            .args(["--json", "--json-key=qpdf"])
            .arg(pdf)
            .output()
            .expect("qpdf --json");
        let json: Value = serde_json::from_slice(&out.stdout).expect("qpdf's JSON");
        QpdfJson {
            version: json["qpdf"][0]["pdfversion"]
                .as_str()
                .expect("a version")
                .to_owned(),
            objects: json["qpdf"][1].as_object().expect("objects").clone(),
        }
    }

    /// The dictionary `value` is, or refers to (a stream's dictionary for a stream).
    fn dict<'a>(&'a self, value: &'a Value) -> &'a Value {
        let value = match value.as_str().and_then(|r| r.strip_suffix(" R")) {
            Some(id) => &self.objects[&format!("obj:{id} R")],
            None => return value,
        };
        if value["stream"].is_object() {
            &value["stream"]["dict"]
        } else {
            &value["value"]
        }
    }

    fn trailer(&self) -> &Value {
        &self.objects["trailer"]["value"]
    }

    /// Every dictionary in the file, streams' included.
    fn dicts(&self) -> impl Iterator<Item = &Value> {
        self.objects.values().filter_map(|o| {
            if o["stream"].is_object() {
                Some(&o["stream"]["dict"])
            } else {
                o["value"].is_object().then_some(&o["value"])
            }
        })
    }
}

/// PDF/X-1a:2001 (ISO 15930-1:2001), checked here clause by clause with qpdf and poppler
/// rather than with Bindery's own reader: a PDF 1.3 file without cross-reference or object
/// streams, not encrypted, with an identifier; the document information naming the version
/// and conformance, `Trapped`, a title and dates; a `GTS_PDFX` output intent naming its
/// printing condition; a trim box on every page, inside its media box; every font embedded;
/// colour only in the device's gray or CMYK (no RGB, no ICC, no Lab), images included; nothing
/// transparent; no JavaScript, JBIG2 or JPEG 2000.
#[test]
fn an_interior_for_ingramspark_is_pdf_x_1a_by_a_check_of_the_standard() {
    if !need::pdf_tools() {
        return;
    }
    let dir = out_dir().join("illustrated");
    std::fs::create_dir_all(&dir).expect("a directory");
    let (report, pdf, _) = made(
        &illustrated(&dir),
        "pdfx",
        &["--meta", "printer=ingramspark"],
    );
    let bytes = std::fs::read(&pdf).expect("the interior");
    assert!(bytes.starts_with(b"%PDF-1.3"), "a PDF 1.3 header");
    let q = QpdfJson::of(&pdf);
    assert_eq!(q.version, "1.3");
    let trailer = q.trailer();
    assert!(trailer["/Encrypt"].is_null(), "not encrypted");
    assert!(trailer["/ID"].is_array(), "a file identifier");
    assert_ne!(
        trailer["/Type"], "/XRef",
        "a cross-reference table, not a stream"
    );
    let info = q.dict(&trailer["/Info"]);
    assert_eq!(info["/GTS_PDFXVersion"], "u:PDF/X-1:2001", "{info}");
    assert_eq!(info["/GTS_PDFXConformance"], "u:PDF/X-1a:2001");
    assert!(["/False", "/True"].contains(&info["/Trapped"].as_str().unwrap_or_default()));
    for key in ["/Title", "/CreationDate", "/ModDate"] {
        assert!(info[key].is_string(), "{key} in {info}");
    }
    let catalog = q.dict(&trailer["/Root"]);
    let intents = catalog["/OutputIntents"]
        .as_array()
        .expect("output intents");
    let intent = q.dict(&intents[0]);
    assert_eq!(intent["/S"], "/GTS_PDFX");
    assert!(intent["/OutputConditionIdentifier"].is_string(), "{intent}");
    let mut pages = 0;
    for dict in q.dicts() {
        let kind = dict["/Type"].as_str().unwrap_or_default();
        if kind == "/Page" {
            pages += 1;
            let media: Vec<f64> = serde_json::from_value(dict["/MediaBox"].clone()).expect("media");
            let trim: Vec<f64> = serde_json::from_value(dict["/TrimBox"].clone())
                .unwrap_or_else(|_| panic!("a trim box on every page: {dict}"));
            assert!(
                trim[0] >= media[0]
                    && trim[1] >= media[1]
                    && trim[2] <= media[2]
                    && trim[3] <= media[3],
                "the trim box inside the media box"
            );
        }
        assert_ne!(kind, "/ObjStm", "no object streams");
        for key in [
            "/JS",
            "/JavaScript",
            "/SMask",
            "/CA",
            "/ca",
            "/BM",
            "/Encrypt",
        ] {
            assert!(dict[key].is_null(), "{key} in {dict}");
        }
        assert_ne!(dict["/S"], "/Transparency", "a transparency group");
        let filters = dict["/Filter"].to_string();
        assert!(
            !filters.contains("JBIG2") && !filters.contains("JPX"),
            "{filters}"
        );
        let space = dict["/ColorSpace"].to_string();
        for forbidden in ["ICCBased", "DeviceRGB", "CalRGB", "CalGray", "Lab"] {
            assert!(!space.contains(forbidden), "{forbidden}: {dict}");
        }
    }
    assert_eq!(pages, report["pdf"]["pages"].as_u64().expect("pages"));
    // No colour space anywhere in the file is an ICC profile or RGB, however it is referred to.
    for (id, object) in &q.objects {
        let text = object.to_string();
        for forbidden in ["\"/ICCBased\"", "\"/DeviceRGB\"", "\"/CalRGB\"", "\"/Lab\""] {
            assert!(!text.contains(forbidden), "{forbidden} in {id}");
        }
    }
    // The pages' own painting: no RGB operator left in any content stream.
    let qdf = dir.join("pdfx.qdf.pdf");
    let status = Command::new("qpdf")
        .args(["--qdf", "--object-streams=disable"])
        .arg(&pdf)
        .arg(&qdf)
        .status()
        .expect("qpdf --qdf");
    assert!(status.success());
    let uncompressed = String::from_utf8_lossy(&std::fs::read(&qdf).expect("qdf")).into_owned();
    for line in uncompressed.lines() {
        let op = line.split_whitespace().last().unwrap_or_default();
        assert!(op != "rg" && op != "RG", "an RGB colour: {line}");
    }
    // poppler: every font embedded, every image gray, at its own size.
    let fonts = run("pdffonts", &pdf);
    for line in fonts.lines().skip(2) {
        let columns: Vec<&str> = line.split_whitespace().collect();
        let emb = columns[columns.len() - 5];
        assert_eq!(emb, "yes", "a font not embedded: {line}");
    }
    let images = run_list("pdfimages", &pdf);
    let listed: Vec<Vec<&str>> = images
        .lines()
        .skip(2)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert!(listed.len() >= 12, "{images}");
    for image in &listed {
        assert_eq!(image[5], "gray", "{image:?}");
        assert!(
            [("600", "400"), ("300", "300")].contains(&(image[3], image[4])),
            "{image:?}"
        );
    }
    // The check reads the claim back: the interior passes; the cover, in colour, is advice.
    let standard = rule(&report, "pdf_standard");
    assert_eq!(
        standard["found"],
        "the interior PDF/X-1a:2001, the cover no PDF/X"
    );
    assert_eq!(standard["verdict"], "advice");
}

fn run(program: &str, pdf: &Path) -> String {
    let out = Command::new(program).arg(pdf).output().expect(program);
    assert!(out.status.success(), "{program}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn run_list(program: &str, pdf: &Path) -> String {
    let out = Command::new(program)
        .arg("-list")
        .arg(pdf)
        .output()
        .expect(program);
    assert!(out.status.success(), "{program}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}
