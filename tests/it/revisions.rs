//! A book over time: new versions of its manuscript as revisions, on SQLite and PostgreSQL.
//! While a revision builds the book serves the one it has, byte for byte; then it switches to
//! the new one whole. A revision that fails leaves the book as it was, and a newer one
//! supersedes one still building.

use crate::common;

use std::io::Read;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::blocking::multipart::{Form, Part};
use serde_json::Value;

use common::{Server, client, command, eventually};

/// A book of three chapters whose second chapter says `word`.
fn manuscript(word: &str) -> Vec<u8> {
    format!(
        "---\ntitle: The Lighthouse Keeper\nauthor: Ann Example\n---\n\n\
         # One\n\nThe lamp was lit at dusk, as every evening.\n\n\
         # Two\n\nThe keeper wrote the {word} weather in the log.\n\n\
         # Three\n\nIn the morning the boats came home.\n"
    )
    .into_bytes()
}

/// A server, on SQLite or on a fresh PostgreSQL database, and a token of tenant `alice`.
struct Deployment {
    server: Server,
    database: Option<String>,
    token: String,
}

impl Deployment {
    fn start(postgres: bool) -> Self {
        Self::start_with(postgres, &[])
    }

    fn start_with(postgres: bool, extra: &[(&str, &str)]) -> Self {
        let database = postgres.then(common::postgres_database);
        let mut env: Vec<(&str, &str)> = database
            .iter()
            .map(|url| ("DATABASE_URL", url.as_str()))
            .collect();
        env.extend_from_slice(extra);
        let server = Server::start(&["serve"], &env);
        let mut deployment = Deployment {
            server,
            database,
            token: String::new(),
        };
        deployment.token = common::web::create_token(deployment.cli(), "alice", false);
        deployment
    }

    /// `bindery` with the server's storage.
    fn cli(&self) -> Command {
        let mut cmd = command(&self.server.data_dir());
        if let Some(url) = &self.database {
            cmd.env("DATABASE_URL", url);
        }
        cmd
    }

    /// Pauses or resumes the conversions (`bindery jobs pause|resume books`).
    fn books_queue(&self, action: &str) {
        let mut cli = self.cli();
        cli.args(["jobs", action, "books"]);
        common::succeed(&mut cli, "bindery jobs");
    }

    fn get(&self, path: &str) -> reqwest::blocking::Response {
        client()
            .get(self.server.url(path))
            .bearer_auth(&self.token)
            .send()
            .expect("GET")
    }

    fn json(&self, path: &str) -> Value {
        let response = self.get(path);
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        response.json().expect("json")
    }

    /// A ready book made of `manuscript`; its id.
    fn book(&self, manuscript: Vec<u8>) -> String {
        let created = common::web::upload(
            &self.server,
            &self.token,
            "?wait=25",
            Form::new().part("manuscript", Part::bytes(manuscript).file_name("keeper.md")),
        );
        let book = common::web::follow_to_ready(&self.server, &self.token, created);
        book["id"].as_str().expect("id").to_owned()
    }

    /// Sends a new version of book `id`; the answer.
    fn revise(&self, id: &str, query: &str, form: Form) -> reqwest::blocking::Response {
        client()
            .post(
                self.server
                    .url(&format!("/api/v1/books/{id}/revisions{query}")),
            )
            .bearer_auth(&self.token)
            .timeout(common::HELD)
            .multipart(form)
            .send()
            .expect("POST revisions")
    }

    fn epub(&self, id: &str) -> Vec<u8> {
        let response = self.get(&format!("/api/v1/books/{id}/epub"));
        assert_eq!(response.status(), StatusCode::OK);
        response.bytes().expect("EPUB").to_vec()
    }

    /// Waits for revision `n` of book `id` to be no longer processing; its view.
    fn finished(&self, id: &str, n: u32) -> Value {
        eventually(
            &format!("revision {n} built"),
            Duration::from_secs(120),
            || {
                let revision = self.json(&format!("/api/v1/books/{id}/revisions/{n}"));
                if revision["status"] == "processing" {
                    Err(revision.to_string())
                } else {
                    Ok(revision)
                }
            },
        )
    }

    fn revision_dir(&self, id: &str, n: u32) -> PathBuf {
        self.server
            .data_dir()
            .join(format!("blobs/books/{id}/revisions/{n}"))
    }
}

fn manuscript_form(bytes: Vec<u8>) -> Form {
    Form::new().part("manuscript", Part::bytes(bytes).file_name("keeper.md"))
}

/// The OPF of an EPUB.
fn opf(epub: &[u8]) -> String {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(epub)).expect("an EPUB");
    let name = archive
        .file_names()
        .filter_map(Result::ok)
        .find(|name| name.ends_with(".opf"))
        .expect("a package document")
        .into_owned();
    let mut text = String::new();
    archive
        .by_name(&name)
        .expect("the package document")
        .read_to_string(&mut text)
        .expect("UTF-8");
    text
}

/// The text of the OPF element or meta that starts with `open`.
fn opf_value(opf: &str, open: &str) -> String {
    let start = opf.find(open).unwrap_or_else(|| panic!("{open} in {opf}")) + open.len();
    let rest = &opf[start..];
    let rest = &rest[rest.find('>').expect(">") + 1..];
    rest[..rest.find('<').expect("<")].to_owned()
}

#[test]
fn a_new_version_builds_beside_the_served_one_and_the_book_switches_whole_on_sqlite() {
    a_new_version_builds_beside_the_served_one_and_the_book_switches_whole(false);
}

#[test]
fn a_new_version_builds_beside_the_served_one_and_the_book_switches_whole_on_postgres() {
    if !common::need::postgres() {
        return;
    }
    a_new_version_builds_beside_the_served_one_and_the_book_switches_whole(true);
}

fn a_new_version_builds_beside_the_served_one_and_the_book_switches_whole(postgres: bool) {
    let d = Deployment::start(postgres);
    let id = d.book(manuscript("stormy"));
    let first = d.epub(&id);
    let first_opf = opf(&first);
    let identifier = opf_value(&first_opf, "<dc:identifier");
    let modified = opf_value(&first_opf, "<meta property=\"dcterms:modified\"");
    // `dcterms:modified` is to the second: let one pass, so the next version's is later.
    eventually("the next second", Duration::from_secs(3), || {
        (chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string() > modified).then_some(())
    });

    // While the new version waits to build, the book serves the first, as it was.
    d.books_queue("pause");
    let accepted = d.revise(&id, "", manuscript_form(manuscript("calm")));
    assert_eq!(accepted.status(), StatusCode::ACCEPTED);
    let location = accepted
        .headers()
        .get("location")
        .expect("Location")
        .to_str()
        .expect("ASCII")
        .to_owned();
    assert_eq!(location, format!("/api/v1/books/{id}/revisions/2"));
    let revision: Value = accepted.json().expect("json");
    assert_eq!(revision["number"], 2, "{revision}");
    assert_eq!(revision["status"], "processing", "{revision}");
    assert_eq!(revision["current"], false, "{revision}");
    let book = d.json(&format!("/api/v1/books/{id}"));
    assert_eq!(book["status"], "ready", "{book}");
    assert_eq!(book["revision"], 1, "{book}");
    assert_eq!(
        d.epub(&id),
        first,
        "the first version is served while the next waits"
    );

    // It builds; every download meanwhile is one version whole, the first then the second.
    d.books_queue("resume");
    let mut seen_first = 0;
    let second = eventually(
        "the book switched to revision 2",
        Duration::from_secs(120),
        || {
            let epub = d.epub(&id);
            if epub == first {
                seen_first += 1;
                return Err("still the first version".to_owned());
            }
            let book = d.json(&format!("/api/v1/books/{id}"));
            Ok((epub, book))
        },
    );
    let (second, book) = second;
    assert!(
        seen_first > 0,
        "the first version was served while the second built"
    );
    assert_eq!(book["revision"], 2, "{book}");
    assert_eq!(book["status"], "ready", "{book}");
    assert_eq!(d.epub(&id), second, "the second version stays");
    let second_opf = opf(&second);
    assert_eq!(
        opf_value(&second_opf, "<dc:identifier"),
        identifier,
        "the EPUB keeps its identifier"
    );
    assert!(
        opf_value(&second_opf, "<meta property=\"dcterms:modified\"") > modified,
        "{second_opf}"
    );
    // The second says it is the second; the first says nothing of revisions, as before them.
    assert_eq!(
        opf_value(&second_opf, "<meta property=\"schema:version\""),
        "2"
    );
    assert!(!first_opf.contains("schema:version"), "{first_opf}");
    if common::need::epubcheck() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("second.epub");
        std::fs::write(&path, &second).expect("write");
        let problems = common::epubcheck::check(&path);
        assert!(problems.is_empty(), "EPUBCheck: {problems:#?}");
    }
    assert!(text(&second).contains("the calm weather"));
    assert!(!text(&second).contains("stormy"));

    let revisions = d.json(&format!("/api/v1/books/{id}/revisions"));
    let listed: Vec<(u64, &str, bool)> = revisions["revisions"]
        .as_array()
        .expect("revisions")
        .iter()
        .map(|r| {
            (
                r["number"].as_u64().expect("number"),
                r["status"].as_str().expect("status"),
                r["current"].as_bool().expect("current"),
            )
        })
        .collect();
    assert_eq!(listed, [(2, "ready", true), (1, "ready", false)]);

    // The first version is still there to download, as it was.
    let old = d.get(&format!("/api/v1/books/{id}/revisions/1/epub"));
    assert_eq!(old.status(), StatusCode::OK);
    assert!(
        old.headers()["content-disposition"]
            .to_str()
            .expect("ASCII")
            .ends_with("-v1.epub\""),
        "{:?}",
        old.headers()
    );
    assert_eq!(old.bytes().expect("EPUB").to_vec(), first);

    // Restoring it makes a third revision of the first's manuscript: history only grows.
    let restored = client()
        .post(
            d.server
                .url(&format!("/api/v1/books/{id}/revisions/1/restore")),
        )
        .bearer_auth(&d.token)
        .send()
        .expect("POST restore");
    assert_eq!(restored.status(), StatusCode::ACCEPTED);
    let restored: Value = restored.json().expect("json");
    assert_eq!(restored["number"], 3, "{restored}");
    assert_eq!(d.finished(&id, 3)["status"], "ready");
    let third = d.epub(&id);
    assert!(text(&third).contains("the stormy weather"));
    assert_eq!(opf_value(&opf(&third), "<dc:identifier"), identifier);
    assert_eq!(d.json(&format!("/api/v1/books/{id}"))["revision"], 3);
    let missing = d.get(&format!("/api/v1/books/{id}/revisions/9/epub"));
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
}

#[test]
fn a_version_that_fails_leaves_the_book_as_it_was_on_sqlite() {
    a_version_that_fails_leaves_the_book_as_it_was(false);
}

#[test]
fn a_version_that_fails_leaves_the_book_as_it_was_on_postgres() {
    if !common::need::postgres() {
        return;
    }
    a_version_that_fails_leaves_the_book_as_it_was(true);
}

fn a_version_that_fails_leaves_the_book_as_it_was(postgres: bool) {
    let d = Deployment::start(postgres);
    let id = d.book(manuscript("stormy"));
    let first = d.epub(&id);
    let answer = d.revise(&id, "?wait=25", manuscript_form(Vec::new()));
    assert!(
        [StatusCode::OK, StatusCode::ACCEPTED].contains(&answer.status()),
        "{}",
        answer.status()
    );
    let failed = d.finished(&id, 2);
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(failed["error"]["code"], "empty_manuscript", "{failed}");
    assert_eq!(failed["current"], false, "{failed}");
    let book = d.json(&format!("/api/v1/books/{id}"));
    assert_eq!(book["status"], "ready", "{book}");
    assert_eq!(book["revision"], 1, "{book}");
    assert!(book.get("error").is_none(), "{book}");
    assert_eq!(d.epub(&id), first);
    let not_built = d.get(&format!("/api/v1/books/{id}/revisions/2/epub"));
    assert_eq!(not_built.status(), StatusCode::CONFLICT);

    // A metadata value that cannot work is refused before anything is kept.
    let refused = d.revise(
        &id,
        "",
        manuscript_form(manuscript("calm")).text("language", "not a language!"),
    );
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let body: Value = refused.json().expect("json");
    assert_eq!(body["error"]["field"], "language", "{body}");
    let numbers: Vec<u64> = d.json(&format!("/api/v1/books/{id}/revisions"))["revisions"]
        .as_array()
        .expect("revisions")
        .iter()
        .map(|r| r["number"].as_u64().expect("number"))
        .collect();
    assert_eq!(numbers, [2, 1], "the refused upload made no revision");
    assert!(!d.revision_dir(&id, 3).exists(), "its files are gone");

    // Another tenant's book is not there to revise.
    let bob = common::web::create_token(d.cli(), "bob", false);
    let stranger = client()
        .post(d.server.url(&format!("/api/v1/books/{id}/revisions")))
        .bearer_auth(&bob)
        .multipart(manuscript_form(manuscript("calm")))
        .send()
        .expect("POST");
    assert_eq!(stranger.status(), StatusCode::NOT_FOUND);
}

#[test]
fn versions_sent_one_after_another_end_with_the_last_and_the_superseded_removed_on_sqlite() {
    versions_sent_one_after_another_end_with_the_last(false);
}

#[test]
fn versions_sent_one_after_another_end_with_the_last_and_the_superseded_removed_on_postgres() {
    if !common::need::postgres() {
        return;
    }
    versions_sent_one_after_another_end_with_the_last(true);
}

fn versions_sent_one_after_another_end_with_the_last(postgres: bool) {
    let d = Deployment::start_with(postgres, &[("REVISIONS_KEPT", "2")]);
    let id = d.book(manuscript("stormy"));
    // The second, third and fourth arrive before the second is built: each supersedes the
    // one before it.
    d.books_queue("pause");
    for word in ["grey", "calm", "clear"] {
        let answer = d.revise(&id, "", manuscript_form(manuscript(word)));
        assert_eq!(answer.status(), StatusCode::ACCEPTED);
    }
    assert!(d.revision_dir(&id, 4).join("upload").exists());
    d.books_queue("resume");
    let last = d.finished(&id, 4);
    assert_eq!(last["status"], "ready", "{last}");
    let book = d.json(&format!("/api/v1/books/{id}"));
    assert_eq!(book["revision"], 4, "{book}");
    let listed: Vec<(u64, String)> = d.json(&format!("/api/v1/books/{id}/revisions"))["revisions"]
        .as_array()
        .expect("revisions")
        .iter()
        .map(|r| {
            (
                r["number"].as_u64().expect("number"),
                r["status"].as_str().expect("status").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        [
            (4, "ready".to_owned()),
            (3, "cancelled".to_owned()),
            (2, "cancelled".to_owned()),
            (1, "ready".to_owned())
        ]
    );
    for n in [2, 3] {
        eventually(
            &format!("revision {n}'s files removed"),
            Duration::from_secs(30),
            || (!d.revision_dir(&id, n).exists()).then_some(()),
        );
    }
    assert!(d.revision_dir(&id, 4).exists());
    assert!(opf(&d.epub(&id)).contains("The Lighthouse Keeper"));

    // With REVISIONS_KEPT=2, revision 1 (out of the newest two) keeps its record alone.
    let book_dir = d.server.data_dir().join(format!("blobs/books/{id}"));
    eventually(
        "revision 1's files removed",
        Duration::from_secs(30),
        || {
            (!book_dir.join("upload").exists() && !book_dir.join("book.epub").exists())
                .then_some(())
        },
    );
    let first = d.json(&format!("/api/v1/books/{id}/revisions/1"));
    assert_eq!(first["status"], "ready", "{first}");
    assert_eq!(first["files_kept"], false, "{first}");
    let gone = d.get(&format!("/api/v1/books/{id}/revisions/1/epub"));
    assert_eq!(gone.status(), StatusCode::GONE);
    let body: Value = gone.json().expect("json");
    assert_eq!(body["error"]["code"], "revision_files_removed", "{body}");
    let restore = client()
        .post(
            d.server
                .url(&format!("/api/v1/books/{id}/revisions/1/restore")),
        )
        .bearer_auth(&d.token)
        .send()
        .expect("POST restore");
    assert_eq!(restore.status(), StatusCode::GONE);
    assert_eq!(
        d.json(&format!("/api/v1/books/{id}/revisions/4"))["files_kept"],
        true
    );
    // What revision 4 changed since revision 1 was stored as it was published: the report
    // outlives revision 1's files, on the API and on the page.
    for query in ["", "?from=1"] {
        let changes = d.json(&format!("/api/v1/books/{id}/revisions/4/changes{query}"));
        assert_eq!((&changes["from"], &changes["to"]), (&1.into(), &4.into()));
        let chapters = changes["chapters"].as_array().expect("chapters");
        assert_eq!(chapters.len(), 1, "{changes}");
        assert_eq!(chapters[0]["title"], "Two", "{changes}");
        let runs: Vec<(&str, &str)> = chapters[0]["diff"]
            .as_array()
            .expect("diff")
            .iter()
            .filter(|run| run["op"] != "equal")
            .map(|run| {
                (
                    run["op"].as_str().expect("op"),
                    run["text"].as_str().expect("text"),
                )
            })
            .collect();
        assert_eq!(
            runs,
            [("delete", "stormy"), ("insert", "clear")],
            "{changes}"
        );
    }
    let session = common::web::session(&d.server, &d.token);
    let page = common::web::browser()
        .get(d.server.url(&format!("/books/{id}/revisions/4/changes")))
        .header("cookie", &session.cookie)
        .send()
        .expect("GET page");
    assert_eq!(page.status(), StatusCode::OK);
    let page = page.text().expect("HTML");
    assert!(
        page.contains("<del>stormy</del>") && page.contains("<ins>clear</ins>"),
        "{page}"
    );
    // Another pair is compared from the files, which a cancelled revision does not have.
    let cancelled = d.get(&format!("/api/v1/books/{id}/revisions/4/changes?from=2"));
    assert_eq!(cancelled.status(), StatusCode::CONFLICT);

    // An upload retried with the same Idempotency-Key makes no other revision.
    let send = || {
        client()
            .post(d.server.url(&format!("/api/v1/books/{id}/revisions")))
            .bearer_auth(&d.token)
            .header("Idempotency-Key", "fix-typo-7")
            .multipart(manuscript_form(manuscript("fair")))
            .send()
            .expect("POST")
    };
    let once = send();
    assert_eq!(once.status(), StatusCode::ACCEPTED);
    let again = send();
    assert_eq!(
        again
            .headers()
            .get("Idempotent-Replayed")
            .map(|v| v.as_bytes()),
        Some(&b"true"[..])
    );
    let again: Value = again.json().expect("json");
    assert_eq!(again["number"], 5, "{again}");
    assert_eq!(d.finished(&id, 5)["status"], "ready");

    // Deleting the book deletes every revision's files.
    let deleted = client()
        .delete(d.server.url(&format!("/api/v1/books/{id}")))
        .bearer_auth(&d.token)
        .send()
        .expect("DELETE");
    assert!(deleted.status().is_success(), "{}", deleted.status());
    eventually("the book's files removed", Duration::from_secs(30), || {
        (!d.server
            .data_dir()
            .join(format!("blobs/books/{id}"))
            .exists())
        .then_some(())
    });
}

/// A book of fourteen chapters of some pages each; chapter 12 says `word`, and chapter 3 has
/// `more` paragraphs more.
fn long_manuscript(word: &str, more: usize) -> Vec<u8> {
    let mut text = String::from("---\ntitle: A Year of Weather\nauthor: Ann Example\n---\n\n");
    for chapter in 1..=14 {
        text.push_str(&format!("# Chapter {chapter}\n\n"));
        let paragraphs = if chapter == 3 { 12 + more } else { 12 };
        for p in 0..paragraphs {
            let said = if chapter == 12 && p == 5 {
                word
            } else {
                "grey"
            };
            text.push_str(&format!(
                "On day {p} of month {chapter} the keeper noted the {said} sky, the wind from \
                 the west, the height of the tide at noon, the boats that went out and the \
                 boats that came back, and the birds on the rocks below the lamp.\n\n"
            ));
        }
    }
    text.into_bytes()
}

#[test]
fn the_change_report_names_the_one_changed_word_and_the_pages_that_moved_on_sqlite() {
    the_change_report_names_the_changes(false);
}

#[test]
fn the_change_report_names_the_one_changed_word_and_the_pages_that_moved_on_postgres() {
    if !common::need::postgres() {
        return;
    }
    the_change_report_names_the_changes(true);
}

fn the_change_report_names_the_changes(postgres: bool) {
    let d = Deployment::start(postgres);
    let id = d.book(long_manuscript("stormy", 0));
    let nothing = d.get(&format!("/api/v1/books/{id}/revisions/1/changes"));
    assert_eq!(nothing.status(), StatusCode::CONFLICT);

    // One word of chapter 12.
    let answer = d.revise(&id, "", manuscript_form(long_manuscript("stormy-grey", 0)));
    assert_eq!(answer.status(), StatusCode::ACCEPTED);
    assert_eq!(d.finished(&id, 2)["status"], "ready");
    let changes = d.json(&format!("/api/v1/books/{id}/revisions/2/changes"));
    assert_eq!(
        (&changes["from"], &changes["to"]),
        (&Value::from(1), &Value::from(2))
    );
    let chapters = changes["chapters"].as_array().expect("chapters");
    assert_eq!(chapters.len(), 1, "{changes:#}");
    let twelve = &chapters[0];
    assert_eq!(twelve["title"], "Chapter 12", "{twelve}");
    assert_eq!(twelve["status"], "changed", "{twelve}");
    assert_eq!(
        (&twelve["words_added"], &twelve["words_removed"]),
        (&Value::from(1), &Value::from(1))
    );
    let runs: Vec<(String, String)> = twelve["diff"]
        .as_array()
        .expect("diff")
        .iter()
        .filter(|r| r["op"] != "equal")
        .map(|r| {
            (
                r["op"].as_str().expect("op").to_owned(),
                r["text"].as_str().expect("text").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        runs,
        [
            ("delete".to_owned(), "stormy".to_owned()),
            ("insert".to_owned(), "stormy-grey".to_owned())
        ]
    );
    let print = &changes["print"];
    assert_eq!(print["pages_before"], print["pages_after"], "{print}");
    assert!(
        print["chapters_moved"]
            .as_array()
            .expect("moved")
            .is_empty(),
        "{print}"
    );
    let first = print["first_page_that_differs"]
        .as_str()
        .expect("a page")
        .to_owned();

    // The book's page links the report, and its page shows the word out and the word in.
    let session = common::web::session(&d.server, &d.token);
    let page = |path: &str| {
        let response = common::web::browser()
            .get(d.server.url(path))
            .header("cookie", &session.cookie)
            .send()
            .expect("GET page");
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        response.text().expect("HTML")
    };
    let book_page = page(&format!("/books/{id}"));
    assert!(
        book_page.contains(&format!("href=\"/books/{id}/revisions/2/changes\"")),
        "the book's page does not link what changed"
    );
    let report_page = page(&format!("/books/{id}/revisions/2/changes"));
    assert!(report_page.contains("<del>stormy</del>"), "{report_page}");
    assert!(
        report_page.contains("<ins>stormy-grey</ins>"),
        "{report_page}"
    );
    assert!(
        report_page.contains("First page that differs"),
        "{report_page}"
    );

    // Chapter 3 grows by some pages: every chapter after it moves to other pages.
    let answer = d.revise(&id, "", manuscript_form(long_manuscript("stormy-grey", 12)));
    assert_eq!(answer.status(), StatusCode::ACCEPTED);
    assert_eq!(d.finished(&id, 3)["status"], "ready");
    let changes = d.json(&format!("/api/v1/books/{id}/revisions/3/changes?from=2"));
    let chapters = changes["chapters"].as_array().expect("chapters");
    assert_eq!(chapters.len(), 1, "{changes:#}");
    assert_eq!(chapters[0]["title"], "Chapter 3");
    assert!(
        chapters[0]["words_added"].as_u64() > Some(300),
        "{}",
        chapters[0]
    );
    let print = &changes["print"];
    assert!(
        print["pages_after"].as_u64() > print["pages_before"].as_u64(),
        "{print}"
    );
    let moved: Vec<&str> = print["chapters_moved"]
        .as_array()
        .expect("moved")
        .iter()
        .map(|m| m["title"].as_str().expect("title"))
        .collect();
    let after_three: Vec<String> = (3..=14).map(|n| format!("Chapter {n}")).collect();
    assert_eq!(moved, after_three, "{print}");
    let earlier: u32 = print["first_page_that_differs"]
        .as_str()
        .expect("page")
        .parse()
        .expect("a number");
    assert!(earlier < first.parse::<u32>().expect("a number"), "{print}");

    // Any two revisions compare: from 1 to 3 has both changes.
    let both = d.json(&format!("/api/v1/books/{id}/revisions/3/changes?from=1"));
    let titles: Vec<&str> = both["chapters"]
        .as_array()
        .expect("chapters")
        .iter()
        .map(|c| c["title"].as_str().expect("title"))
        .collect();
    assert_eq!(titles, ["Chapter 3", "Chapter 12"]);
    // And so does the page, which offers the earlier versions to compare with.
    let report_page = page(&format!("/books/{id}/revisions/3/changes"));
    assert!(
        report_page.contains("<option value=\"1\">")
            && report_page.contains("<option value=\"2\" selected>"),
        "{report_page}"
    );
    let from_first = page(&format!("/books/{id}/revisions/3/changes?from=1"));
    assert!(from_first.contains("Since version 1."), "{from_first}");
    assert!(from_first.contains("<del>stormy</del>") && from_first.contains("<h3>Chapter 3</h3>"));
}

/// Every XHTML document of an EPUB, one after another.
fn text(epub: &[u8]) -> String {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(epub)).expect("EPUB");
    let mut all = String::new();
    for i in 0..archive.len() {
        let mut file = archive.by_index(i).expect("entry");
        if file.name().is_ok_and(|name| name.ends_with(".xhtml")) {
            file.read_to_string(&mut all).expect("UTF-8");
        }
    }
    all
}

/// The stylesheet of an EPUB.
fn epub_css(epub: &[u8]) -> String {
    common::epub_entry(epub, "OEBPS/css/book.css")
}

#[test]
fn a_ready_book_given_another_style_is_made_again_without_reading_its_manuscript() {
    let d = Deployment::start(false);
    let id = d.book(manuscript("stormy"));
    let first = d.epub(&id);
    let first_pdf = d
        .get(&format!("/api/v1/books/{id}/pdf"))
        .bytes()
        .expect("PDF");
    let css = |path: &str| {
        client()
            .get(d.server.url(path))
            .bearer_auth(&d.token)
            .send()
            .expect("GET")
            .text()
            .expect("text")
    };
    let first_reader = css(&format!("/books/{id}/reader/reader.css"));
    assert!(epub_css(&first).contains("Book style: Bindery"));
    assert!(first_reader.contains("Book style: Bindery"));

    let restyle = |style: &str| {
        client()
            .post(d.server.url(&format!("/api/v1/books/{id}/style")))
            .bearer_auth(&d.token)
            .json(&serde_json::json!({ "style": style }))
            .send()
            .expect("POST style")
    };
    // A style that is not there is named, with the ones that are.
    let unknown = restyle("gothic");
    assert_eq!(unknown.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let body: Value = unknown.json().expect("json");
    assert_eq!(body["error"]["field"], "style", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("large-print")),
        "{body}"
    );
    // The style it is in already makes nothing.
    let same = restyle("bindery");
    assert_eq!(same.status(), StatusCode::CONFLICT);

    let accepted = restyle("fantasy");
    assert_eq!(accepted.status(), StatusCode::ACCEPTED);
    let accepted: Value = accepted.json().expect("json");
    assert_eq!(accepted["number"], 2, "{accepted}");
    let revision = d.finished(&id, 2);
    assert_eq!(revision["status"], "ready", "{revision}");

    // Its job history: no manuscript read, the book carried over and made again.
    let steps = revision["progress"]["steps"]
        .as_array()
        .unwrap_or_else(|| panic!("steps in {revision}"));
    let step = |name: &str| steps.iter().find(|s| s["step"] == name);
    for name in ["ingest", "parse"] {
        assert!(step(name).is_none(), "{name} in {revision}");
    }
    assert_eq!(step("restyle").expect("restyle")["state"], "completed");
    assert!(
        steps.iter().all(|s| s["state"] == "completed"),
        "{revision}"
    );
    // Its workflow's jobs say the same: no ingest, no parse.
    let read = d.json(&format!("/api/v1/books/{id}/revisions/1"));
    assert!(
        read["progress"]["steps"]
            .as_array()
            .is_some_and(|s| s.iter().all(|s| s["step"] != "restyle")),
        "{read}"
    );

    // The EPUB, the reader and the print edition are all in the new style; the EPUB keeps
    // its identifier.
    let second = d.epub(&id);
    assert_ne!(second, first);
    let second_css = epub_css(&second);
    assert!(
        second_css.contains("Book style: Fantasy"),
        "{second_css:.300}"
    );
    assert!(second_css.contains("p.opening::first-letter"));
    assert_eq!(
        opf_value(&opf(&second), "<dc:identifier"),
        opf_value(&opf(&first), "<dc:identifier")
    );
    assert!(opf(&second).contains("fonts/EBGaramond-Regular.ttf"));
    assert!(
        text(&second).contains("Chapter One"),
        "the chapters are numbered in words"
    );
    let reader = css(&format!("/books/{id}/reader/reader.css"));
    assert!(reader.contains("Book style: Fantasy"));
    let pdf = d
        .get(&format!("/api/v1/books/{id}/pdf"))
        .bytes()
        .expect("PDF");
    assert_ne!(pdf, first_pdf);
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("book.pdf"), &pdf).expect("write");
    let printed = Command::new("pdftotext")
        .arg(dir.path().join("book.pdf"))
        .arg("-")
        .output()
        .expect("pdftotext");
    assert!(
        String::from_utf8_lossy(&printed.stdout).contains("Chapter One"),
        "the print edition is restyled too"
    );
    // The book's report names the style it was given.
    let book = d.json(&format!("/api/v1/books/{id}"));
    let style = book["report"]["metadata"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["field"] == "style"))
        .unwrap_or_else(|| panic!("a style in {book}"));
    assert_eq!(style["value"], "fantasy");
    assert_eq!(style["source"], "upload");
}
