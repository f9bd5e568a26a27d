//! House styles from the outside (`POST /api/v1/styles`, `src/house_styles.rs`): a style with
//! a bad key, a missing font or a colour too pale is refused each time with its line and the
//! reason, and nothing of it is kept; a good one, uploaded with its fonts and ornament, styles a
//! book through the API (its EPUB, which EPUBCheck passes, its reader, its print edition and
//! its preview), is the tenant's alone, and once removed is offered no more while the books
//! made with it keep their look. On SQLite and on PostgreSQL.

use std::io::Read;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::blocking::multipart::{Form, Part};
use serde_json::Value;

use crate::common::{self, Server};

fn noir_dir() -> PathBuf {
    common::corpus::fixtures().join("styles/noir")
}

fn noir_source() -> String {
    std::fs::read_to_string(noir_dir().join("noir.toml")).expect("noir.toml")
}

/// A style's upload: its file (as `noir.toml`) and the named files of the test style.
fn style_form(source: &str, files: &[&str]) -> Form {
    let mut form = Form::new().part(
        "style",
        Part::bytes(source.as_bytes().to_vec()).file_name("noir.toml"),
    );
    for name in files {
        let bytes = std::fs::read(noir_dir().join(name)).expect("fixture");
        form = form.part("files", Part::bytes(bytes).file_name(name.to_string()));
    }
    form
}

const ALL_FILES: &[&str] = &["NotoSerif-Regular.ttf", "NotoSerif-Italic.ttf", "leaf.svg"];

struct Deployment {
    server: Server,
    database: Option<String>,
    token: String,
}

impl Deployment {
    fn start(postgres: bool) -> Self {
        let database = postgres.then(common::postgres_database);
        let env: Vec<(&str, &str)> = database
            .iter()
            .map(|url| ("DATABASE_URL", url.as_str()))
            .collect();
        let server = Server::start(&["serve"], &env);
        let mut d = Deployment {
            server,
            database,
            token: String::new(),
        };
        d.token = d.token_for("alice");
        d
    }

    fn token_for(&self, name: &str) -> String {
        let mut cmd: Command = common::command(&self.server.data_dir());
        if let Some(url) = &self.database {
            cmd.env("DATABASE_URL", url);
        }
        common::web::create_token(cmd, name, false)
    }

    fn get_as(&self, token: &str, path: &str) -> reqwest::blocking::Response {
        common::client()
            .get(self.server.url(path))
            .bearer_auth(token)
            .send()
            .expect("GET")
    }

    fn get(&self, path: &str) -> reqwest::blocking::Response {
        self.get_as(&self.token, path)
    }

    fn add_style(&self, query: &str, form: Form) -> (StatusCode, Value) {
        let response = common::client()
            .post(self.server.url(&format!("/api/v1/styles{query}")))
            .bearer_auth(&self.token)
            .multipart(form)
            .send()
            .expect("POST /api/v1/styles");
        let status = response.status();
        (status, response.json().expect("JSON"))
    }

    fn style_names(&self, token: &str) -> Vec<String> {
        let list: Value = self.get_as(token, "/api/v1/styles").json().expect("JSON");
        list["styles"]
            .as_array()
            .expect("styles")
            .iter()
            .map(|s| s["name"].as_str().expect("name").to_owned())
            .collect()
    }

    /// The novel uploaded in `style`: the answer.
    fn upload_novel(&self, token: &str, style: &str) -> reqwest::blocking::Response {
        let novel =
            std::fs::read(common::corpus::fixtures().join("markdown/love-among-the-chickens.md"))
                .expect("novel");
        common::web::upload(
            &self.server,
            token,
            "?wait=60",
            Form::new()
                .text("style", style.to_owned())
                .part("manuscript", Part::bytes(novel).file_name("novel.md")),
        )
    }

    /// Gives the book `style`, and waits until the revision that restyles it is ready.
    fn restyle(&self, id: &str, style: &str) {
        let response = common::client()
            .post(
                self.server
                    .url(&format!("/api/v1/books/{id}/style?wait=60")),
            )
            .timeout(common::HELD)
            .bearer_auth(&self.token)
            .json(&serde_json::json!({ "style": style }))
            .send()
            .expect("POST style");
        assert!(response.status().is_success(), "{:?}", response.text());
        let revision: Value = response.json().expect("JSON");
        let n = revision["number"].as_u64().expect("number");
        let path = format!("/api/v1/books/{id}/revisions/{n}");
        let done: Value =
            common::eventually("the restyled revision", Duration::from_secs(120), || {
                let r: Value = self.get(&path).json().map_err(|e| e.to_string())?;
                if (r["status"] == "ready" && r["current"] == true) || r["status"] == "failed" {
                    Ok(r)
                } else {
                    Err(r.to_string())
                }
            });
        assert_eq!(done["status"], "ready", "{done}");
    }
}

/// The entries of an EPUB, by name, with their bytes.
fn entries(epub: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(epub)).expect("an EPUB");
    (0..archive.len())
        .map(|i| {
            let mut file = archive.by_index(i).expect("entry");
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes).expect("read");
            (file.name().expect("name").to_string(), bytes)
        })
        .collect()
}

fn entry(entries: &[(String, Vec<u8>)], name: &str) -> String {
    let (_, bytes) = entries
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("{name} in the EPUB"));
    String::from_utf8(bytes.clone()).expect("UTF-8")
}

/// Asserts a refusal: 422 `invalid_style`, at `line` when given, saying each of `says`.
fn refused(answer: (StatusCode, Value), line: Option<u64>, says: &[&str]) {
    let (status, body) = answer;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["code"], "invalid_style", "{body}");
    assert_eq!(body["error"]["line"].as_u64(), line, "{body}");
    let message = body["error"]["message"].as_str().expect("message");
    for said in says {
        assert!(message.contains(said), "says {said:?}: {message}");
    }
}

#[test]
fn a_house_style_is_checked_whole_and_a_good_one_styles_a_book_on_sqlite() {
    a_house_style_is_checked_whole_and_a_good_one_styles_a_book(false);
}

#[test]
fn a_house_style_is_checked_whole_and_a_good_one_styles_a_book_on_postgres() {
    if !common::need::postgres() {
        return;
    }
    a_house_style_is_checked_whole_and_a_good_one_styles_a_book(true);
}

fn a_house_style_is_checked_whole_and_a_good_one_styles_a_book(postgres: bool) {
    let d = Deployment::start(postgres);
    let source = noir_source();

    // Three mistakes, each named with its line, and none of them kept.
    let bad_key = source.replace("title_case =", "title_kase =");
    refused(
        d.add_style("", style_form(&bad_key, ALL_FILES)),
        Some(15),
        &["title_kase", "title_case"],
    );
    refused(
        d.add_style("", style_form(&source, &["leaf.svg"])),
        Some(5),
        &["\"Noto Serif\" is not there", "EB Garamond"],
    );
    let pale = source.replace("#7a1c1c", "#c0c0c0");
    refused(
        d.add_style("", style_form(&pale, ALL_FILES)),
        Some(24),
        &["4.5:1"],
    );
    refused(
        d.add_style(
            "",
            style_form(&source, &["NotoSerif-Regular.ttf", "leaf.svg"]),
        ),
        None,
        &["no italic face"],
    );
    assert!(!d.style_names(&d.token).contains(&"noir".to_owned()));

    // The good one, kept once; again only as a replacement.
    let (status, kept) = d.add_style("", style_form(&source, ALL_FILES));
    assert_eq!(status, StatusCode::CREATED, "{kept}");
    assert_eq!(kept["name"], "noir");
    assert_eq!(kept["kind"], "house");
    assert_eq!(kept["files"].as_array().map(Vec::len), Some(3), "{kept}");
    let (status, body) = d.add_style("", style_form(&source, ALL_FILES));
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "style_exists");
    let (status, body) = d.add_style("?", style_form(&source, ALL_FILES).text("replace", "true"));
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let shown: Value = d.get("/api/v1/styles/noir").json().expect("JSON");
    assert!(
        shown["source"]
            .as_str()
            .is_some_and(|s| s.contains("leaf.svg")),
        "{shown}"
    );

    // Another tenant neither sees it nor can use it.
    let bob = d.token_for("bob");
    assert!(!d.style_names(&bob).contains(&"noir".to_owned()));
    let theirs = d.upload_novel(&bob, "noir");
    assert_eq!(theirs.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let said = theirs.text().expect("text");
    assert!(said.contains("not a style here"), "{said}");

    // A book in it: the EPUB carries the fonts and the ornament, EPUBCheck passes it, the
    // reader serves them, the print edition is set in the face.
    let created = d.upload_novel(&d.token, "noir");
    let book = common::web::follow_to_ready(&d.server, &d.token, created);
    let id = book["id"].as_str().expect("id").to_owned();
    let epub = d
        .get(&format!("/api/v1/books/{id}/epub"))
        .bytes()
        .expect("EPUB");
    let files = entries(&epub);
    for name in [
        "OEBPS/fonts/NotoSerif-Regular.ttf",
        "OEBPS/fonts/NotoSerif-Italic.ttf",
        "OEBPS/ornaments/leaf.svg",
    ] {
        assert!(files.iter().any(|(n, _)| n == name), "{name} in the EPUB");
    }
    let css = entry(&files, "OEBPS/css/book.css");
    assert!(css.contains("font-family: \"Noto Serif\""), "{css}");
    assert!(css.contains("url(\"../ornaments/leaf.svg\")"), "{css}");
    let opf = entry(&files, "OEBPS/content.opf");
    assert!(
        opf.contains("href=\"ornaments/leaf.svg\" media-type=\"image/svg+xml\""),
        "{opf}"
    );
    if common::need::epubcheck() {
        let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "house-style-{}.epub",
            if postgres { "pg" } else { "sqlite" }
        ));
        std::fs::write(&path, &epub).expect("write");
        let problems = common::epubcheck::check(&path);
        assert!(problems.is_empty(), "{problems:#?}");
    }
    let leaf = d.get(&format!("/books/{id}/reader/ornaments/leaf.svg"));
    assert_eq!(leaf.status(), StatusCode::OK);
    assert_eq!(leaf.headers()["content-type"], "image/svg+xml");
    let font = d.get(&format!("/books/{id}/reader/fonts/NotoSerif-Italic.ttf"));
    assert_eq!(font.headers()["content-type"], "font/ttf");
    let reader_css = d
        .get(&format!("/books/{id}/reader/reader.css"))
        .text()
        .expect("css");
    assert!(
        reader_css.contains("url(\"ornaments/leaf.svg\")"),
        "{reader_css:.400}"
    );
    if common::need::pdf_tools() {
        let pdf = d
            .get(&format!("/api/v1/books/{id}/pdf"))
            .bytes()
            .expect("PDF");
        let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "house-style-{}.pdf",
            if postgres { "pg" } else { "sqlite" }
        ));
        std::fs::write(&path, &pdf).expect("write");
        let fonts = Command::new("pdffonts")
            .arg(&path)
            .output()
            .expect("pdffonts");
        let fonts = String::from_utf8_lossy(&fonts.stdout);
        assert!(fonts.contains("NotoSerif-Regular"), "{fonts}");
        assert!(fonts.contains("NotoSerif-Italic"), "{fonts}");
    }

    // Its preview, fonts and ornament included.
    let view: Value =
        common::eventually("the house style's preview", Duration::from_secs(60), || {
            let view: Value = d
                .get(&format!("/api/v1/books/{id}/preview?style=noir"))
                .json()
                .map_err(|e| e.to_string())?;
            if view["status"] == "ready" {
                Ok(view)
            } else {
                Err(view.to_string())
            }
        });
    let reader = view["reader"].as_str().expect("reader");
    let base = reader.trim_end_matches("reader.html");
    let preview_css = d.get(&format!("{base}reader.css")).text().expect("css");
    assert!(
        preview_css.contains("Book style: Noir"),
        "{preview_css:.200}"
    );
    for file in ["fonts/NotoSerif-Regular.ttf", "ornaments/leaf.svg"] {
        let got = d.get(&format!("{base}{file}"));
        assert_eq!(got.status(), StatusCode::OK, "{base}{file}");
    }

    // Given a built-in style, the book leaves the house style's files behind.
    d.restyle(&id, "classic");
    let classic = entries(
        &d.get(&format!("/api/v1/books/{id}/epub"))
            .bytes()
            .expect("EPUB"),
    );
    assert!(
        !classic
            .iter()
            .any(|(n, _)| n.contains("NotoSerif") || n.contains("ornaments/"))
    );
    d.restyle(&id, "noir");

    // Removed: no longer offered or accepted; the book keeps its look.
    let removed = common::client()
        .delete(d.server.url("/api/v1/styles/noir"))
        .bearer_auth(&d.token)
        .send()
        .expect("DELETE");
    assert_eq!(removed.status(), StatusCode::NO_CONTENT);
    assert!(!d.style_names(&d.token).contains(&"noir".to_owned()));
    let again = d.upload_novel(&d.token, "noir");
    assert_eq!(again.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let kept = entries(
        &d.get(&format!("/api/v1/books/{id}/epub"))
            .bytes()
            .expect("EPUB"),
    );
    assert!(kept.iter().any(|(n, _)| n == "OEBPS/ornaments/leaf.svg"));
}
