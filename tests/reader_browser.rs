//! The web reader in a real browser (Debian's headless Chromium, driven by playwright-core):
//! served by `bindery serve`, read once online, then offline, where chapters must still load.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::books::{open, submit, wait_book};
use common::{Server, corpus};

/// Screenshots stay with the test output for a person to look at.
fn screenshot_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("screenshots/reader");
    std::fs::create_dir_all(&dir).expect("screenshot dir");
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reader_installs_and_reads_offline_in_chromium() {
    let server = Server::start(&["serve"], &[]);
    let store = open(&server.data_dir(), None).await;
    let cover = corpus().join("love-among-the-chickens-cover.jpg");
    let id = submit(&store, &corpus().join("markdown/love-among-the-chickens.md"), Some(&cover)).await;
    let book = wait_book(&store, &id, Duration::from_secs(60)).await;
    assert_eq!(book.status, "ready", "{:?}", book.error);

    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/browser/reader-offline.mjs");
    let url = server.url(&format!("/books/{id}/reader/index.html"));
    let out = tokio::task::spawn_blocking(move || {
        Command::new("node")
            .arg(&script)
            .arg(&url)
            .arg(screenshot_dir())
            .output()
            .expect("node is not installed: run the suite through scripts/test")
    })
    .await
    .expect("browser thread");
    assert!(
        out.status.success(),
        "the browser test failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
