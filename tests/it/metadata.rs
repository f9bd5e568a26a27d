//! Each metadata key is declared once (`document::keys`), and every way a person gives
//! one reads that declaration: a manuscript's front matter, `bindery convert --meta`, and the
//! upload's form fields. Here every key, under its name and under each of its other spellings,
//! goes in each way, and the books that come out must say the same.

use crate::common;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use bindery::document::keys::FIELDS;
use reqwest::blocking::multipart::{Form, Part};
use serde_json::Value;

use common::web::{token, upload};
use common::{BIN, Server};

/// A value each field accepts, by its key.
fn value_of(key: &str) -> &'static str {
    match key {
        "title" => "The Same Book",
        "subtitle" => "Whichever Way In",
        "author" => "Ann One; Bob Two",
        "language" => "fr",
        "identifier" => "9780306406157",
        "publisher" => "Small Press",
        "date" => "2024-05-01",
        "description" => "What the book is about.",
        "subject" => "Fiction; Cats",
        "series" => "The Saga",
        "series_number" => "2",
        "rights" => "All rights reserved.",
        "blurb" => "The back cover says this.",
        "trim" => "5x8",
        "paper" => "cream",
        "bleed" => "yes",
        "print_isbn" => "9780140449136",
        "price" => "USD 14.99",
        "printer" => "kdp",
        "editions" => "paperback, hardcover, large print",
        "hardcover_isbn" => "9781402894626",
        "hardcover_trim" => "6x9",
        "large_print_isbn" => "9781853260414",
        "large_print_trim" => "royal",
        "large_print_size" => "18",
        "reference_edition" => "hardcover",
        "style" => "classic",
        other => panic!("the test has no value for the key {other}: add one"),
    }
}

/// The spellings to send together: every key by its name, then each key by its first other
/// spelling, then by its second (a key with fewer goes by its name).
fn spelling_sets() -> Vec<Vec<(&'static str, &'static str)>> {
    let most = FIELDS.iter().map(|d| d.aliases.len()).max().unwrap_or(0);
    (0..=most)
        .map(|n| {
            FIELDS
                .iter()
                .map(|d| {
                    let spelling = match n {
                        0 => d.name,
                        n => d.aliases.get(n - 1).copied().unwrap_or(d.name),
                    };
                    (spelling, value_of(d.name))
                })
                .collect()
        })
        .collect()
}

const TEXT: &str = "# One\n\nThe first chapter's words.\n\n# Two\n\nThe second chapter's words.\n";

/// What a reader of the book sees of its metadata: the report's values (not their source,
/// which says which way they came in), the print edition it asked for, the warnings, and the
/// EPUB's Dublin Core.
fn seen(report: &Value, epub: &[u8]) -> BTreeMap<String, String> {
    let mut seen = BTreeMap::new();
    for entry in report["metadata"]
        .as_array()
        .expect("the report's metadata")
    {
        seen.insert(
            format!("report {}", entry["field"].as_str().expect("field")),
            entry["value"].as_str().expect("value").to_owned(),
        );
    }
    for field in ["trim", "paper", "bleed"] {
        seen.insert(format!("print {field}"), report["print"][field].to_string());
    }
    let mut codes: Vec<String> = report["warnings"]
        .as_array()
        .expect("warnings")
        .iter()
        .map(|w| w["code"].as_str().expect("code").to_owned())
        .collect();
    codes.sort();
    seen.insert("warnings".into(), codes.join(", "));
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(epub)).expect("the EPUB is a zip");
    let mut opf = String::new();
    zip.by_name("OEBPS/content.opf")
        .expect("the package document")
        .read_to_string(&mut opf)
        .expect("UTF-8");
    for (n, line) in opf.lines().filter(|l| l.contains("<dc:")).enumerate() {
        seen.insert(format!("opf {n:02}"), line.trim().to_owned());
    }
    seen
}

/// `bindery convert` of `manuscript` with `args`: the report and the EPUB.
fn convert(dir: &Path, manuscript: &str, args: &[String]) -> (Value, Vec<u8>) {
    let input = dir.join("book.md");
    let output = dir.join("book.epub");
    std::fs::write(&input, manuscript).expect("write the manuscript");
    let out = std::process::Command::new(BIN)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .arg("convert")
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .args(["--pdf", &dir.join("book.pdf").to_string_lossy(), "--json"])
        .args(args)
        .output()
        .expect("run bindery convert");
    assert!(
        out.status.success(),
        "convert {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_slice(&out.stdout).expect("convert --json");
    let epub = std::fs::read(&output).expect("the EPUB");
    // The print edition is `pdf` beside the report here, its `print` in the service's.
    let mut report = json["report"].clone();
    report["print"] = json["pdf"].clone();
    (report, epub)
}

fn front_matter(set: &[(&str, &str)]) -> String {
    let mut text = String::from("---\n");
    for (key, value) in set {
        text.push_str(&format!("{key}: \"{value}\"\n"));
    }
    text.push_str("---\n\n");
    text.push_str(TEXT);
    text
}

#[test]
fn every_key_and_spelling_means_the_same_through_every_way_in() {
    let server = Server::start(&["serve"], &[]);
    let alice = token(&server, "alice", false);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut first: Option<(String, BTreeMap<String, String>)> = None;
    for set in spelling_sets() {
        let spellings: Vec<&str> = set.iter().map(|(k, _)| *k).collect();
        let mut ways = Vec::new();
        let (report, epub) = convert(dir.path(), &front_matter(&set), &[]);
        ways.push(("front matter", seen(&report, &epub)));
        let meta: Vec<String> = set
            .iter()
            .flat_map(|(k, v)| ["--meta".to_owned(), format!("{k}={v}")])
            .collect();
        let (report, epub) = convert(dir.path(), TEXT, &meta);
        ways.push(("--meta", seen(&report, &epub)));
        let mut form = Form::new().part(
            "manuscript",
            Part::bytes(TEXT.as_bytes().to_vec()).file_name("book.md"),
        );
        for (key, value) in &set {
            form = form.text(*key, *value);
        }
        let answer = upload(&server, &alice, "?wait=25", form);
        assert_eq!(answer.status(), 200, "the form with {spellings:?}");
        let book: Value = answer.json().expect("the book");
        assert_eq!(book["status"], "ready", "{book}");
        let id = book["id"].as_str().expect("id");
        let book: Value = common::client()
            .get(server.url(&format!("/api/v1/books/{id}")))
            .bearer_auth(&alice)
            .send()
            .expect("GET the book")
            .json()
            .expect("JSON");
        let epub = common::client()
            .get(server.url(&format!("/api/v1/books/{id}/epub")))
            .bearer_auth(&alice)
            .send()
            .expect("GET the EPUB")
            .bytes()
            .expect("the EPUB");
        ways.push(("the form", seen(&book["report"], &epub)));
        for (way, what) in ways {
            let label = format!("{way} with {spellings:?}");
            match &first {
                None => {
                    assert_eq!(what["report title"], "The Same Book", "{label}: {what:#?}");
                    assert_eq!(what["report authors"], "Ann One; Bob Two", "{label}");
                    // The book's own print edition is its reference edition: the hardcover.
                    assert_eq!(what["print trim"], "\"6x9\"", "{label}");
                    first = Some((label, what));
                }
                Some((first_label, expected)) => {
                    assert_eq!(&what, expected, "{label} against {first_label}");
                }
            }
        }
    }
}
