//! The app in a real browser (Debian's headless Chromium, driven by playwright-core): sign in,
//! upload the corpus novel, follow its conversion live, download the EPUB, open the reader; a
//! manuscript of script payloads runs nothing; the pages fit a phone. Screenshots are kept in
//! `target/tmp/screenshots/app/`.

use crate::common;

use std::path::PathBuf;

use common::{Server, command, corpus};

const HOSTILE: &str = r#"---
title: "Chapters <script>window.__pwned = true; alert('title')</script>"
---

# One <img src=x onerror="window.__pwned = true; alert('heading')">

<script>window.__pwned = true; alert('body')</script>

Some text with <img src="x" onerror="window.__pwned = true; alert('inline')"> an image that fails.

<svg onload="window.__pwned = true"><script>alert('svg')</script></svg>

[a link](javascript:window.__pwned=true) and <a href="javascript:alert('a')">another</a>.

<iframe src="javascript:alert('frame')"></iframe>

# Two

<details open ontoggle="window.__pwned = true">More text.</details>

<p style="background:url(javascript:alert('css'))" onclick="alert('click')">A paragraph.</p>
"#;

#[test]
fn an_author_signs_in_uploads_follows_downloads_and_reads_in_chromium() {
    if !common::need::browser() {
        return;
    }
    let server = Server::start(&["serve"], &[]);
    let cli = |args: &[&str]| {
        common::succeed(command(&server.data_dir()).args(args), "bindery")
            .trim()
            .to_owned()
    };
    let token = cli(&["token", "create", "author"]);
    // Conversion waits until the page is watching, so the test sees live progress, not a
    // book that was ready before the page loaded.
    cli(&["jobs", "pause", "books"]);

    let dir = tempfile::tempdir().expect("tempdir");
    let hostile = dir.path().join("hostile.md");
    std::fs::write(&hostile, HOSTILE).expect("write");
    let resume = serde_json::to_string(&[
        common::BIN.to_owned(),
        "jobs".into(),
        "resume".into(),
        "books".into(),
    ])
    .expect("json");

    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("screenshots/app");
    let mut node = common::browser_script("app.mjs");
    node.arg(server.url("/"))
        .arg(&shots)
        .env("BINDERY_TOKEN", &token)
        // How many steps the book page lists: the pipeline's.
        .env("BINDERY_STEPS", manuscript_steps().to_string())
        .env(
            "BINDERY_NOVEL",
            corpus().join("markdown/love-among-the-chickens.md"),
        )
        .env("BINDERY_HOSTILE", &hostile)
        .env("BINDERY_RESUME", resume);
    // The resume command runs against the server's data directory, like `cli` above.
    for (key, value) in command(&server.data_dir()).get_envs() {
        if let Some(value) = value {
            node.env(key, value);
        }
    }
    let stdout = common::browser_passes(&mut node, "the app");
    assert!(stdout.trim_end().ends_with("OK"), "{stdout}");
}

#[test]
fn an_admin_watches_queues_jobs_and_live_logs_in_chromium() {
    if !common::need::browser() {
        return;
    }
    let server = Server::start(&["serve"], &[]);
    let out = command(&server.data_dir())
        .args(["token", "create", "operator", "--admin"])
        .output()
        .expect("run bindery");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let token = String::from_utf8(out.stdout)
        .expect("utf-8")
        .trim()
        .to_owned();
    // Some finished jobs to list: a book through the pipeline.
    let book = common::client()
        .post(server.url("/api/v1/books?wait=30"))
        .timeout(common::HELD)
        .bearer_auth(&token)
        .multipart(
            reqwest::blocking::multipart::Form::new().part(
                "manuscript",
                reqwest::blocking::multipart::Part::bytes(
                    std::fs::read(corpus().join("markdown/love-among-the-chickens.md"))
                        .expect("novel"),
                )
                .file_name("novel.md"),
            ),
        )
        .send()
        .expect("upload");
    common::web::follow_to_ready(&server, &token, book);

    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("screenshots/admin");
    let stdout = common::browser_passes(
        common::browser_script("admin.mjs")
            .arg(server.url("/"))
            .arg(&shots)
            .env("BINDERY_TOKEN", &token),
        "the admin pages",
    );
    assert!(stdout.trim_end().ends_with("OK"), "{stdout}");
}

/// Issue #28's walk, on a desktop and a phone (`tests/browser/author.mjs`): the novel and its
/// cover through the form with the language left to the manuscript, a plain-text `.docx`
/// (warned), a web page saved as `.docx` (refused), an empty file (refused by the browser),
/// an unknown address, and the reader mid-chapter on a phone. axe-core checks every page.
/// Then the API must say what the pages said. Screenshots: `target/tmp/screenshots/author/`.
#[test]
fn an_author_finds_their_way_on_a_desktop_and_a_phone_in_chromium() {
    if !common::need::browser() {
        return;
    }
    let server = Server::start(&["serve"], &[]);
    let token = common::succeed(
        command(&server.data_dir()).args(["token", "create", "author"]),
        "bindery",
    )
    .trim()
    .to_owned();
    let dir = tempfile::tempdir().expect("tempdir");
    let write = |name: &str, bytes: &[u8]| {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).expect("write");
        path
    };
    let notes = write(
        "notes.docx",
        b"Notes for the book\n\nNot a zip: these are notes, saved as text under a Word name.\n",
    );
    let page = write(
        "chapter.docx",
        b"<!DOCTYPE html>\n<html><head><title>Sign in to your drive</title></head>\
          <body><form><input name=password></form></body></html>\n",
    );
    let empty = write("empty.md", b"");
    let notes_v2 = write(
        "notes-v2.txt",
        b"Notes for the book\n\nNot a zip: these are revised notes, saved as text under a Word name.\n",
    );

    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("screenshots/author");
    let mut node = common::browser_script("author.mjs");
    node.arg(server.url("/"))
        .arg(&shots)
        .env("BINDERY_TOKEN", &token)
        // How many steps the book page lists: the pipeline's.
        .env("BINDERY_STEPS", manuscript_steps().to_string())
        .env(
            "BINDERY_NOVEL",
            corpus().join("markdown/love-among-the-chickens.md"),
        )
        .env(
            "BINDERY_COVER",
            corpus().join("love-among-the-chickens-cover.jpg"),
        )
        .env("BINDERY_NOTES", &notes)
        .env("BINDERY_PAGE", &page)
        .env("BINDERY_EMPTY", &empty)
        .env("BINDERY_NOTES_V2", &notes_v2);
    let stdout = common::browser_passes(&mut node, "the author's walk");
    assert!(stdout.trim_end().ends_with("OK"), "{stdout}");
    let books: serde_json::Value = stdout
        .lines()
        .find_map(|line| line.strip_prefix("BOOKS "))
        .and_then(|json| serde_json::from_str(json).ok())
        .expect("the script names its books");
    let api = |path: String| -> serde_json::Value {
        let response = common::client()
            .get(server.url(&path))
            .bearer_auth(&token)
            .send()
            .expect("GET");
        assert_eq!(response.status(), 200, "{path}");
        response.json().expect("json")
    };
    let book = |name: &str| {
        api(format!(
            "/api/v1/books/{}",
            books[name].as_str().expect("id")
        ))
    };

    // The novel: the language the manuscript said, and a cover anyone listing books can show.
    let novel = book("novel");
    assert_eq!(novel["status"], "ready");
    let language = novel["report"]["metadata"]
        .as_array()
        .expect("metadata")
        .iter()
        .find(|m| m["field"] == "language")
        .expect("the language")
        .clone();
    assert_eq!(
        language,
        serde_json::json!({"field": "language", "value": "en-GB", "source": "manuscript"})
    );
    // The print settings chosen in the form: the paperback was made as they say.
    let print = &novel["report"]["print"];
    assert_eq!(
        (&print["trim"], &print["paper"], &print["bleed"]),
        (
            &serde_json::json!("5.5x8.5"),
            &serde_json::json!("cream"),
            &serde_json::json!(true)
        ),
        "{print}"
    );
    assert!(print.get("failure").is_none(), "{print}");
    let cover = common::client()
        .get(server.url(novel["links"]["cover"].as_str().expect("a cover link")))
        .bearer_auth(&token)
        .send()
        .expect("GET cover");
    assert_eq!(cover.status(), 200);
    assert_eq!(cover.headers()["content-type"], "image/jpeg");

    // The plain text named .docx: ready, with the mismatch warning the page showed; its new
    // version, named as what it is, shows it no more, as what changed says.
    let notes = book("notes");
    assert_eq!(notes["status"], "ready");
    assert_eq!(notes["revision"], 2, "{notes}");
    let changes = api(format!(
        "/api/v1/books/{}/revisions/2/changes",
        books["notes"].as_str().expect("id")
    ));
    let gone = changes["warnings"]["gone"].as_array().expect("gone");
    assert!(
        gone.iter().any(|w| w["code"] == "format_mismatch"
            && w["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("“notes.docx” is named as a Word document"))),
        "{changes:#}"
    );

    // The web page named .docx: its first version failed with the mismatch, the steps after
    // it skipped; the corrected manuscript sent from its page is its second, and ready.
    let id = books["page"].as_str().expect("id");
    let mended = book("page");
    assert_eq!(mended["status"], "ready", "{mended}");
    assert_eq!(mended["revision"], 2, "{mended}");
    let refused = api(format!("/api/v1/books/{id}/revisions/1"));
    assert_eq!(refused["status"], "failed", "{refused}");
    assert_eq!(refused["error"]["code"], "format_mismatch", "{refused}");
    let states: Vec<&str> = refused["progress"]["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| s["state"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(states[0], "failed", "{states:?}");
    assert!(states[1..].iter().all(|s| *s == "skipped"), "{states:?}");
    // Its log gives the reason in the same words, then the new version and its publication.
    let log = api(format!("/api/v1/books/{id}/logs"));
    let lines = log["lines"].as_array().expect("lines");
    let at = |message: &str| {
        lines
            .iter()
            .position(|l| l["message"] == message)
            .unwrap_or_else(|| panic!("no {message:?} in {log:#}"))
    };
    let refusal = &lines[at("manuscript refused")];
    assert_eq!(
        refusal["fields"]["reason"], refused["error"]["message"],
        "{log:#}"
    );
    assert_eq!(refusal["fields"]["code"], "format_mismatch", "{log:#}");
    assert!(
        at("manuscript refused") < at("new revision submitted"),
        "{log:#}"
    );
    assert!(
        at("new revision submitted") < at("book published"),
        "{log:#}"
    );
}

/// How many steps a manuscript's book lists: every step but the other way into the pipeline
/// (`restyle`).
fn manuscript_steps() -> usize {
    use bindery::pipeline::steps::{Entry, STEPS, entry};
    STEPS
        .iter()
        .filter(|step| entry(step.job) != Some(Entry::Restyle))
        .count()
}
