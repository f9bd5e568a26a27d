//! Advance-reader links, over HTTP against the real binary, on SQLite and PostgreSQL: the
//! author makes a link for a named reader on a ready book; the reader, with no account, opens
//! it, downloads an EPUB and a PDF that carry their name on the copyright page (and the EPUB
//! the link's identifier, passing EPUBCheck and Ace), and reads the web reader's stamped
//! contents page; the same link gives the same bytes; the download limit holds; the author sees
//! the opens and downloads, and a revoked link answers 410 at once. Another tenant, and no
//! session, reach none of it.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use reqwest::blocking::multipart::{Form, Part};
use reqwest::header::COOKIE;

use crate::accounts::{ADMIN, refusal, serve, value_of};
use crate::common::web::{browser as http, follow_to_ready, session, upload};
use crate::common::{self, Server};

const MANUSCRIPT: &str = "---\ntitle: The Lighthouse Keeper\nauthor: Ada Brook\n---\n\n\
# The Storm\n\nThe lamp turned all night, and nobody came.\n\n\
# The Morning\n\nIn the morning a boat was on the rocks, and a girl was in it.\n";

/// Makes a link on the book's links page as `session`; returns the link's path.
fn make_link(server: &Server, cookie: &str, csrf: &str, book: &str, reader: &str) -> String {
    let page = http()
        .post(server.url(&format!("/books/{book}/links")))
        .header(COOKIE, cookie)
        .form(&[
            ("_csrf", csrf),
            ("reader", reader),
            ("offer_reader", "on"),
            ("offer_epub", "on"),
            ("offer_pdf", "on"),
            ("days", "30"),
            ("downloads", "3"),
        ])
        .send()
        .expect("POST links");
    assert_eq!(page.status(), StatusCode::OK);
    let page = page.text().expect("body");
    let url = value_of(&page, "link-url").unwrap_or_else(|| panic!("no link in {page}"));
    let path = url
        .split_once("/arc/")
        .map(|(_, s)| format!("/arc/{s}"))
        .expect("a link");
    assert!(url.starts_with(&server.base), "{url}");
    path
}

fn a_reader_gets_personal_copies_until_the_link_is_revoked(postgres: bool) {
    let (server, database) = serve(postgres);
    let created = upload(
        &server,
        ADMIN,
        "",
        Form::new().part(
            "manuscript",
            Part::bytes(MANUSCRIPT.as_bytes().to_vec()).file_name("lighthouse.md"),
        ),
    );
    let book = follow_to_ready(&server, ADMIN, created);
    let id = book["id"].as_str().expect("id").to_owned();
    let author = session(&server, ADMIN);

    // The book's page leads to its links; a link is made for Jane.
    let book_page = http()
        .get(server.url(&format!("/books/{id}")))
        .header(COOKIE, &author.cookie)
        .send()
        .expect("GET book")
        .text()
        .expect("body");
    assert!(book_page.contains("id=\"advance-links\""), "{book_page}");
    let reader = "Jane <Roe> & Sons";
    let link = make_link(&server, &author.cookie, &author.csrf, &id, reader);

    // The reader, with no account, opens it.
    let landing = http().get(server.url(&link)).send().expect("GET link");
    assert_eq!(landing.status(), StatusCode::OK);
    let landing = landing.text().expect("body");
    assert!(
        landing.contains("The Lighthouse Keeper")
            && landing.contains("Jane &lt;Roe&gt; &amp; Sons"),
        "{landing}"
    );
    assert!(
        !landing.contains(&id),
        "the link's page names the book's id"
    );

    // The EPUB: the name on the copyright page, the link's identifier in the package, the same
    // bytes every time.
    let epub = http()
        .get(server.url(&format!("{link}/epub")))
        .send()
        .expect("GET epub");
    assert_eq!(epub.status(), StatusCode::OK);
    assert_eq!(epub.headers()["content-type"], "application/epub+zip");
    let epub = epub.bytes().expect("bytes").to_vec();
    let copyright = common::epub_entry(&epub, "OEBPS/copyright.xhtml");
    assert!(
        copyright.contains("Advance reader copy for")
            && copyright.contains("Jane &lt;Roe&gt; &amp; Sons"),
        "{copyright}"
    );
    let package = common::epub_entry(&epub, "OEBPS/content.opf");
    assert!(package.contains("urn:uuid:"), "{package}");
    let again = http()
        .get(server.url(&format!("{link}/epub")))
        .send()
        .expect("GET epub")
        .bytes()
        .expect("bytes");
    assert_eq!(epub, again.to_vec(), "the same link gave other bytes");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("advance.epub");
    std::fs::write(&path, &epub).expect("write");
    if common::need::epubcheck() {
        let found = common::epubcheck::check(&path);
        assert!(found.is_empty(), "EPUBCheck: {found:?}");
    }
    if common::need::ace() {
        let checked = crate::ace::ace_all(&dir.path().join("ace"), std::slice::from_ref(&path));
        assert!(
            checked[0].violations.is_empty(),
            "Ace: {:?}",
            checked[0].violations
        );
    }

    // The PDF: the sentence on the copyright page.
    let pdf = http()
        .get(server.url(&format!("{link}/pdf")))
        .send()
        .expect("GET pdf");
    assert_eq!(pdf.status(), StatusCode::OK);
    let pdf = pdf.bytes().expect("bytes").to_vec();
    assert!(pdf.starts_with(b"%PDF"));
    if common::need::pdf_tools() {
        let file = dir.path().join("advance.pdf");
        std::fs::write(&file, &pdf).expect("write");
        let text = std::process::Command::new("pdftotext")
            .arg(&file)
            .arg("-")
            .output()
            .expect("pdftotext");
        let text = String::from_utf8_lossy(&text.stdout).replace('\n', " ");
        assert!(
            text.contains("Advance reader copy for Jane <Roe> & Sons"),
            "{text}"
        );
    }

    // Three downloads were allowed: the fourth is refused, saying so.
    let fourth = http()
        .get(server.url(&format!("{link}/pdf")))
        .send()
        .expect("GET pdf");
    assert_eq!(
        refusal(fourth),
        (StatusCode::GONE, "link_downloads_used".into())
    );

    // The web reader's contents page carries the name; reading is not a download.
    let reader_page = http()
        .get(server.url(&format!("{link}/reader/")))
        .send()
        .expect("GET reader");
    assert_eq!(reader_page.status(), StatusCode::OK);
    let reader_page = reader_page.text().expect("body");
    assert!(
        reader_page.contains("Jane &lt;Roe&gt; &amp; Sons"),
        "{reader_page}"
    );

    // The author sees one open and three downloads.
    let links_page = http()
        .get(server.url(&format!("/books/{id}/links")))
        .header(COOKIE, &author.cookie)
        .send()
        .expect("GET links")
        .text()
        .expect("body");
    assert!(
        links_page.contains("<td class=\"opens\">1</td>")
            && links_page.contains("<td class=\"downloads\">3 of 3</td>"),
        "{links_page}"
    );

    // Another tenant's session, and no session, reach none of the book's links.
    let mut command = common::command(&server.data_dir());
    if let Some(url) = &database {
        command.env("DATABASE_URL", url);
    }
    let other = common::web::create_token(command, "other-press", false);
    let other = session(&server, &other);
    let theirs = http()
        .get(server.url(&format!("/books/{id}/links")))
        .header(COOKIE, &other.cookie)
        .send()
        .expect("GET");
    assert_eq!(theirs.status(), StatusCode::NOT_FOUND);
    let forged = http()
        .post(server.url(&format!("/books/{id}/links")))
        .header(COOKIE, &other.cookie)
        .form(&[
            ("_csrf", other.csrf.as_str()),
            ("reader", "Mallory"),
            ("offer_epub", "on"),
            ("days", "7"),
            ("downloads", "1"),
        ])
        .send()
        .expect("POST");
    assert_eq!(forged.status(), StatusCode::NOT_FOUND);
    let anonymous = http()
        .get(server.url(&format!("/books/{id}/links")))
        .send()
        .expect("GET");
    assert_eq!(anonymous.status(), StatusCode::SEE_OTHER);
    // Without the CSRF token, the author's own cookie makes no link.
    let no_csrf = http()
        .post(server.url(&format!("/books/{id}/links")))
        .header(COOKIE, &author.cookie)
        .form(&[
            ("reader", "Mallory"),
            ("offer_epub", "on"),
            ("days", "7"),
            ("downloads", "1"),
        ])
        .send()
        .expect("POST");
    assert_eq!(no_csrf.status(), StatusCode::BAD_REQUEST);

    // Revoked, the link answers 410 at once, on every path.
    let link_id = links_page
        .split("/links/")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .expect("a revoke button")
        .to_owned();
    let revoke = http()
        .post(server.url(&format!("/books/{id}/links/{link_id}/revoke")))
        .header(COOKIE, &author.cookie)
        .form(&[("_csrf", author.csrf.as_str())])
        .send()
        .expect("revoke");
    assert_eq!(revoke.status(), StatusCode::OK);
    let revoked_at = Instant::now();
    for path in [
        link.clone(),
        format!("{link}/epub"),
        format!("{link}/reader/"),
    ] {
        let answer = http().get(server.url(&path)).send().expect("GET");
        assert_eq!(
            refusal(answer),
            (StatusCode::GONE, "link_revoked".into()),
            "{path}"
        );
    }
    assert!(revoked_at.elapsed() < Duration::from_secs(1));
    // A link nobody made is not found, and names nothing.
    let unknown = http()
        .get(server.url(&format!("/arc/arc_{}", "0".repeat(64))))
        .send()
        .expect("GET");
    assert_eq!(
        refusal(unknown),
        (StatusCode::NOT_FOUND, "link_unknown".into())
    );
}

#[test]
fn a_reader_gets_personal_copies_until_the_link_is_revoked_on_sqlite() {
    a_reader_gets_personal_copies_until_the_link_is_revoked(false);
}

#[test]
fn a_reader_gets_personal_copies_until_the_link_is_revoked_on_postgres() {
    if !common::need::postgres() {
        return;
    }
    a_reader_gets_personal_copies_until_the_link_is_revoked(true);
}
