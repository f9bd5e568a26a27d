//! An installation made by the previous release (before accounts: `tests/fixtures/upgrade`,
//! made by its `make.sh` with that release's binary) opened by this one: the migrations run at
//! start, and nothing is lost. Alice's token, her book and its files, the browser session she
//! signed in with, and her webhook secret all work as before; then the operator's path to
//! accounts (README, "From tokens to accounts"): the admin invites an owner into the imprint
//! named as her token is, who sees her book at once.

use reqwest::StatusCode;
use reqwest::header::{COOKIE, LOCATION};
use serde_json::Value;

use crate::accounts::{PASSWORD, accept, invite};
use crate::common::web::{browser as http, cookie_pair, session, set_cookie};
use crate::common::{self, Server};

#[test]
fn an_installation_of_the_previous_release_keeps_everything_and_takes_accounts() {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/upgrade");
    let made: Value = serde_json::from_slice(
        &std::fs::read(fixtures.join("previous-release.json")).expect("the fixture's record"),
    )
    .expect("JSON");
    let field = |name: &str| made[name].as_str().expect(name).to_owned();
    let data = tempfile::tempdir().expect("tempdir");
    let untar = std::process::Command::new("tar")
        .arg("-xzf")
        .arg(fixtures.join("previous-release.tar.gz"))
        .arg("-C")
        .arg(data.path())
        .status()
        .expect("tar");
    assert!(untar.success());
    // Sessions last 30 days from when they were made: the fixture's is moved to today, as if
    // the upgrade came the day after it was made.
    common::sqlite_execute(
        &data.path().join("bindery.db"),
        "UPDATE sessions SET expires_at = CAST(unixepoch('subsec') * 1000 AS INTEGER) + 86400000",
    );

    let server = Server::start_in(data, &["serve"], &[("PRINT_EDITION", "false")]);
    let alice = field("alice_token");
    let book = field("book");

    // Her token and her book, with its files.
    let shown: Value = http()
        .get(server.url(&format!("/api/v1/books/{book}")))
        .bearer_auth(&alice)
        .send()
        .expect("GET book")
        .json()
        .expect("JSON");
    assert_eq!(shown["status"], "ready", "{shown}");
    assert_eq!(shown["title"], "Before Accounts", "{shown}");
    let epub = http()
        .get(server.url(&format!("/books/{book}/epub")))
        .bearer_auth(&alice)
        .send()
        .expect("GET epub");
    assert_eq!(epub.status(), StatusCode::OK);
    let epub = epub.bytes().expect("bytes");
    assert!(common::epub_entry(&epub, "OEBPS/content.opf").contains("Before Accounts"));

    // The browser session she signed in with before the upgrade.
    let cookie = format!("bindery_session={}", field("alice_session"));
    let books = http()
        .get(server.url("/books"))
        .header(COOKIE, &cookie)
        .send()
        .expect("GET /books");
    assert_eq!(books.status(), StatusCode::OK);
    assert!(books.text().expect("body").contains("Before Accounts"));

    // Her webhook secret, carried over to her tenant's own row.
    let secret: Value = http()
        .get(server.url("/api/v1/webhook-secret"))
        .bearer_auth(&alice)
        .send()
        .expect("GET secret")
        .json()
        .expect("JSON");
    assert_eq!(secret["secret"], field("alice_webhook_secret").as_str());

    // The operator invites an owner into `alice`; she makes her account, and her book is there.
    let admin = session(&server, &field("admin_token"));
    let link = invite(&server, &admin.cookie, &admin.csrf, "alice", "owner");
    let made = accept(&server, &link, "Alice Old", "alice@example.com", PASSWORD);
    assert_eq!(made.status(), StatusCode::SEE_OTHER);
    assert_eq!(made.headers()[LOCATION], "/books");
    let account = cookie_pair(&set_cookie(&made, "bindery_session").expect("a session"));
    let books = http()
        .get(server.url("/books"))
        .header(COOKIE, &account)
        .send()
        .expect("GET /books")
        .text()
        .expect("body");
    assert!(books.contains("Before Accounts"), "{books}");
    // A link to a book made before copies could be stamped says the book must be made again.
    let csrf = books
        .split("name=\"csrf-token\" content=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .expect("a CSRF token")
        .to_owned();
    let page = http()
        .post(server.url(&format!("/books/{book}/links")))
        .header(COOKIE, &account)
        .form(&[
            ("_csrf", csrf.as_str()),
            ("reader", "Jane Roe"),
            ("offer_epub", "on"),
            ("days", "7"),
            ("downloads", "1"),
        ])
        .send()
        .expect("make a link")
        .text()
        .expect("body");
    let link = page
        .split("/arc/")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .expect("a link");
    let old = http()
        .get(server.url(&format!("/arc/{link}/epub")))
        .send()
        .expect("GET epub");
    assert_eq!(old.status(), StatusCode::CONFLICT);
    assert!(old.text().expect("body").contains("book_needs_remaking"));

    // Her token goes on working beside her account.
    let still = http()
        .get(server.url(&format!("/api/v1/books/{book}")))
        .bearer_auth(&alice)
        .send()
        .expect("GET book");
    assert_eq!(still.status(), StatusCode::OK);
}
