//! The app in a real browser (Debian's headless Chromium, driven by playwright-core): sign in,
//! upload the corpus novel, follow its conversion live, download the EPUB, open the reader; a
//! manuscript of script payloads runs nothing; the pages fit a phone. Screenshots are kept in
//! `target/tmp/screenshots/app/`.

use crate::common;

use std::path::PathBuf;
use std::process::Command;

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
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/browser/app.mjs");
    let mut node = Command::new("node");
    node.arg(&script)
        .arg(server.url("/"))
        .arg(&shots)
        .env("BINDERY_TOKEN", &token)
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
    let out = node
        .output()
        .expect("node is not installed: run the suite through scripts/test");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the browser test failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
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
    assert_eq!(book.status(), 200);

    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("screenshots/admin");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/browser/admin.mjs");
    let out = Command::new("node")
        .arg(&script)
        .arg(server.url("/"))
        .arg(&shots)
        .env("BINDERY_TOKEN", &token)
        .output()
        .expect("node is not installed: run the suite through scripts/test");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the browser test failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.trim_end().ends_with("OK"), "{stdout}");
}
