//! A binary replaced in place while it runs, as a package upgrade, a copy over the old file or
//! `cargo install` replace it: the running `serve` goes on starting what it starts (the
//! manuscript reader of every book) from the executable it runs, not from the file now at its
//! path, which is gone or another program.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::blocking::multipart::{Form, Part};
use serde_json::Value;

use super::BOOK;
use crate::common::{self, BIN, Running, Server, client, message};

/// A file of its own that is the bindery binary: a hard link where the file system allows one
/// (the test's build is large), else a copy.
fn own_binary(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("bindery");
    if std::fs::hard_link(BIN, &path).is_err() {
        std::fs::copy(BIN, &path).expect("copy the binary");
    }
    path
}

#[test]
fn a_binary_replaced_in_place_still_reads_manuscripts() {
    let installed = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir");
    let binary = own_binary(installed.path());
    let data = tempfile::tempdir().expect("tempdir");
    let env = |cmd: &mut Command| {
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("DATA_DIR", data.path())
            .env("HOST", "127.0.0.1")
            .env("PORT", "0")
            .env("LOG_FORMAT", "json")
            .env("RUST_LOG", "info,bindery=debug")
            .current_dir(data.path());
    };
    let mut token = Command::new(&binary);
    env(&mut token);
    let token = crate::common::web::create_token(token, "alice", false);
    let mut serve = Command::new(&binary);
    env(&mut serve);
    serve.arg("serve");
    let process = Running::start(serve);
    let listening = process
        .logs
        .wait_for("the listening line", Duration::from_secs(20), |l| {
            message(l, Some("web"), "listening")
        });
    let base = format!("http://{}", listening["addr"].as_str().expect("addr"));
    let server = Server {
        process,
        base,
        data,
    };
    server.wait_ready(Duration::from_secs(20));

    // The upgrade: the running file is unlinked, and another program takes its path.
    std::fs::remove_file(&binary).expect("remove the binary");
    std::fs::write(&binary, "#!/bin/sh\necho 'not this one' >&2\nexit 3\n").expect("replace");
    std::fs::set_permissions(&binary, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");

    let form = Form::new().part(
        "manuscript",
        Part::bytes(BOOK.as_bytes().to_vec()).file_name("book.md"),
    );
    let created = client()
        .post(server.url("/api/v1/books"))
        .bearer_auth(&token)
        .multipart(form)
        .send()
        .expect("POST /api/v1/books");
    assert_eq!(created.status(), StatusCode::ACCEPTED);
    let created: Value = created.json().expect("json");
    let id = created["id"].as_str().expect("id").to_owned();
    let book = common::eventually(
        "the book to leave processing",
        Duration::from_secs(60),
        || {
            let book: Value = client()
                .get(server.url(&format!("/api/v1/books/{id}")))
                .bearer_auth(&token)
                .send()
                .expect("GET book")
                .json()
                .expect("json");
            let failed_step = server
                .process
                .logs
                .find(|l| l.to_string().contains("read-manuscript") && l["level"] != "DEBUG");
            if book["status"] != "processing" || failed_step.is_some() {
                assert!(failed_step.is_none(), "reading failed: {failed_step:?}");
                return Ok(book);
            }
            Err(book)
        },
    );
    assert_eq!(book["status"], "ready", "{book}");
}
