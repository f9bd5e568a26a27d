//! The web reader in a real browser (Debian's headless Chromium, driven by playwright-core):
//! served by `bindery serve`, read once online, then offline, where chapters must still load;
//! and, installed, kept whole at one version of its book offline and moved whole to the next.

use crate::common;

use std::path::PathBuf;
use std::time::Duration;

use common::books::{open, submit, wait_book};
use common::{Server, corpus};

/// Screenshots stay with the test output for a person to look at.
fn screenshot_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("screenshots/reader");
    std::fs::create_dir_all(&dir).expect("screenshot dir");
    dir
}

/// Four chapters of the corpus novel's text, a footnote in the second (the script follows it)
/// and an image in the last (the script checks it loads offline).
fn manuscript_with_notes_and_an_image() -> String {
    let novel = std::fs::read_to_string(corpus().join("markdown/love-among-the-chickens.md"))
        .expect("novel");
    let paragraphs: Vec<&str> = novel
        .split("\n\n")
        .filter(|p| p.len() > 200 && !p.starts_with(['#', '>', '-']))
        .take(40)
        .collect();
    let mut png = Vec::new();
    image::RgbImage::from_fn(120, 80, |x, y| {
        image::Rgb([(x * 2) as u8, (y * 3) as u8, 120])
    })
    .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
    .expect("png");
    let mut md = String::from(
        "---\ntitle: The Reader Test\nauthor: P. G. Wodehouse\nlanguage: en-GB\n---\n\n",
    );
    for (i, chunk) in paragraphs.chunks(10).enumerate() {
        md.push_str(&format!("## Chapter {}\n\n", i + 1));
        for (j, p) in chunk.iter().enumerate() {
            md.push_str(p);
            if i == 1 && j == 0 {
                md.push_str("[^hat]");
            }
            md.push_str("\n\n");
        }
    }
    md.push_str(&format!(
        "![A gradient, for testing]({})\n\n",
        data_uri(&png)
    ));
    md.push_str("[^hat]: The same old brown one.\n");
    md
}

fn data_uri(png: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::from("data:image/png;base64,");
    for chunk in png.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A ready book made of `manuscript` (with `cover`) by `bindery serve`, and the browser
/// script `script` run on its reader with a token of its tenant and `args`: the reader's
/// `index.html`'s URL, then `args`, then the screenshots' folder.
async fn in_the_reader(
    manuscript: &std::path::Path,
    cover: Option<&std::path::Path>,
    script: &'static str,
    args: Vec<std::ffi::OsString>,
) {
    let server = Server::start(&["serve"], &[]);
    let store = open(&server.data_dir(), None).await;
    let id = submit(&store, manuscript, cover).await;
    let book = wait_book(&store, &id, Duration::from_secs(60)).await;
    assert_eq!(book.status, "ready", "{:?}", book.error);
    let url = server.url(&format!("/books/{id}/reader/index.html"));
    let token = bindery::tokens::create(&store.db, "test", false)
        .await
        .expect("token");
    tokio::task::spawn_blocking(move || {
        common::browser_passes(
            common::browser_script(script)
                .env("BINDERY_TOKEN", token)
                .arg(&url)
                .args(args)
                .arg(screenshot_dir()),
            script,
        )
    })
    .await
    .expect("browser thread");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reader_installs_and_reads_offline_in_chromium() {
    if !common::need::browser() {
        return;
    }
    let cover = corpus().join("love-among-the-chickens-cover.jpg");
    let dir = tempfile::tempdir().expect("tempdir");
    let manuscript = dir.path().join("reader-test.md");
    std::fs::write(&manuscript, manuscript_with_notes_and_an_image()).expect("write");
    in_the_reader(&manuscript, Some(&cover), "reader-offline.mjs", Vec::new()).await;
}

/// A book of `chapters` chapters, each saying it is of the `version` version.
fn versioned_manuscript(version: &str, chapters: usize) -> String {
    let mut md =
        String::from("---\ntitle: The Versioned Reader\nauthor: A. Tester\nlanguage: en\n---\n\n");
    for i in 1..=chapters {
        md.push_str(&format!(
            "# Chapter {i}\n\nThis chapter is of the {version} version of the book. \
             The lamp stood on the table by the window, and the rain kept on.\n\n"
        ));
    }
    md
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_installed_reader_keeps_its_version_offline_and_takes_the_next_whole_online() {
    if !common::need::browser() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let first = dir.path().join("versioned.md");
    std::fs::write(&first, versioned_manuscript("first", 3)).expect("write");
    let next = dir.path().join("versioned-2.md");
    std::fs::write(&next, versioned_manuscript("second", 4)).expect("write");
    // The script sends the next version itself, while the phone is offline.
    in_the_reader(&first, None, "reader-revision.mjs", vec![next.into()]).await;
}
