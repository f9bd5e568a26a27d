//! SIGTERM while requests are held: a `?wait=` upload answers 202 at once, a slow upload is
//! refused (503) with nothing of it left behind, and `serve` exits 0 well inside
//! `SHUTDOWN_TIMEOUT` (issue #12, item 5).

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use reqwest::StatusCode;
use reqwest::blocking::multipart::{Form, Part};
use serde_json::Value;

use common::{Server, client, command, corpus};

/// A `serve` whose books queue is paused before it starts, so that nothing converts.
fn paused_serve(env: &[(&str, &str)]) -> Server {
    let data = tempfile::tempdir().expect("tempdir");
    let paused = command(data.path())
        .args(["jobs", "pause", "books"])
        .output()
        .expect("bindery jobs pause books");
    assert!(
        paused.status.success(),
        "{}",
        String::from_utf8_lossy(&paused.stderr)
    );
    let server = Server::start_in(data, &["serve"], env);
    server.wait_ready(Duration::from_secs(20));
    server
}

fn book_count(server: &Server, token: &str) -> usize {
    client()
        .get(server.url("/api/v1/books"))
        .bearer_auth(token)
        .send()
        .ok()
        .and_then(|r| r.json::<Value>().ok())
        .and_then(|v| v["books"].as_array().map(Vec::len))
        .unwrap_or(0)
}

#[test]
fn sigterm_answers_a_waiting_upload_202_at_once_and_serve_exits_0() {
    let shutdown_timeout = Duration::from_secs(15);
    let mut server = paused_serve(&[("SHUTDOWN_TIMEOUT", "15s")]);
    let token = common::web::token(&server, "alice", false);

    let url = server.url("/api/v1/books?wait=20");
    let auth = token.clone();
    let waiting = std::thread::spawn(move || {
        let novel =
            std::fs::read(corpus().join("markdown/love-among-the-chickens.md")).expect("novel");
        let form = Form::new().part(
            "manuscript",
            Part::bytes(novel).file_name("love-among-the-chickens.md"),
        );
        let response = reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .expect("client")
            .post(url)
            .bearer_auth(auth)
            .multipart(form)
            .send();
        (Instant::now(), response)
    });

    // The server holds the request once its book exists (and the queue is paused).
    common::eventually("the book exists", Duration::from_secs(20), || {
        (book_count(&server, &token) == 1).then_some(())
    });
    assert!(!waiting.is_finished(), "the request is still held");
    let signalled = Instant::now();
    server.process.signal(Signal::SIGTERM);

    let (answered, response) = waiting.join().expect("the client thread");
    let response = response.expect("an answer, not a dropped connection");
    assert!(
        answered.duration_since(signalled) < Duration::from_secs(2),
        "answered {:?} after SIGTERM",
        answered.duration_since(signalled)
    );
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let location = response.headers()["location"]
        .to_str()
        .expect("location")
        .to_owned();
    let book: Value = response.json().expect("the book");
    assert_eq!(book["status"], "processing");
    assert_eq!(
        location,
        format!("/api/v1/books/{}", book["id"].as_str().expect("id"))
    );

    let (status, took) = server.process.wait_exit(shutdown_timeout);
    assert!(status.success(), "serve exited with {status}");
    assert!(
        took < shutdown_timeout / 3,
        "serve took {took:?} to stop (SHUTDOWN_TIMEOUT {shutdown_timeout:?})"
    );
}

/// Posts a multipart upload whose manuscript arrives slowly (chunked, a line every 10 ms, for
/// at most `MAX_LINES` lines or until `stop`), over a plain socket: a client library that
/// fails the request when the server stops reading the body would hide the answer, and the
/// answer is what this test is about. Returns the raw response.
fn slow_upload(addr: &str, token: &str, stop: Arc<AtomicBool>) -> std::io::Result<String> {
    const MAX_LINES: usize = 4000;
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(60)))?;
    let mut writer = stream.try_clone()?;
    let head = format!(
        "POST /api/v1/books HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: multipart/form-data; boundary=slowslowslow\r\n\
         Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    );
    let sender_stop = stop.clone();
    let sending = std::thread::spawn(move || -> std::io::Result<()> {
        let chunk = |w: &mut TcpStream, data: &[u8]| -> std::io::Result<()> {
            write!(w, "{:x}\r\n", data.len())?;
            w.write_all(data)?;
            w.write_all(b"\r\n")
        };
        writer.write_all(head.as_bytes())?;
        chunk(
            &mut writer,
            b"--slowslowslow\r\nContent-Disposition: form-data; name=\"manuscript\"; \
              filename=\"slow.md\"\r\nContent-Type: text/markdown\r\n\r\n# A slow book\n\n",
        )?;
        for _ in 0..MAX_LINES {
            if sender_stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            // Pacing only: the test waits on conditions, not on this.
            std::thread::sleep(Duration::from_millis(10));
            chunk(&mut writer, b"A line of the manuscript, sent slowly.\n")?;
        }
        chunk(&mut writer, b"\r\n--slowslowslow--\r\n")?;
        writer.write_all(b"0\r\n\r\n")
    });
    let mut response = Vec::new();
    let read = stream.read_to_end(&mut response);
    stop.store(true, Ordering::Relaxed);
    let _ = sending.join();
    // What arrived counts, even if the connection was then reset.
    if response.is_empty() {
        read?;
    }
    Ok(String::from_utf8_lossy(&response).into_owned())
}

/// Every entry under `blobs/books/`, as paths relative to it.
fn book_blobs(blobs: &Path) -> Vec<String> {
    fn walk(dir: &Path, base: &Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            out.push(
                path.strip_prefix(base)
                    .expect("under base")
                    .display()
                    .to_string(),
            );
            if path.is_dir() {
                walk(&path, base, out);
            }
        }
    }
    let mut out = Vec::new();
    let books = blobs.join("books");
    walk(&books, &books, &mut out);
    out.sort();
    out
}

#[test]
fn sigterm_refuses_a_slow_upload_with_503_and_leaves_nothing_of_it() {
    let shutdown_timeout = Duration::from_secs(3);
    let mut server = paused_serve(&[("SHUTDOWN_TIMEOUT", "3s")]);
    let token = common::web::token(&server, "alice", false);
    let blobs = server.data_dir().join("blobs");

    let stop = Arc::new(AtomicBool::new(false));
    let addr = server.base.trim_start_matches("http://").to_owned();
    let sender_stop = stop.clone();
    let uploading = std::thread::spawn(move || slow_upload(&addr, &token, sender_stop));

    // The upload is being written once its file (or staging file) is in the blob store.
    common::eventually(
        "the upload reaches the blob store",
        Duration::from_secs(20),
        || {
            book_blobs(&blobs)
                .iter()
                .any(|p| p.contains("upload"))
                .then_some(())
        },
    );
    server.process.signal(Signal::SIGTERM);

    let (status, took) = server.process.wait_exit(shutdown_timeout * 3);
    stop.store(true, Ordering::Relaxed);
    let response = uploading.join().expect("the client thread");
    assert!(status.success(), "serve exited with {status}");
    assert!(
        took < shutdown_timeout,
        "serve took {took:?} to stop (SHUTDOWN_TIMEOUT {shutdown_timeout:?})"
    );
    let response = response.expect("an answer, not a reset connection");
    let status_line = response.lines().next().unwrap_or_default().to_owned();
    if !status_line.contains(" 201 ") && !status_line.contains(" 202 ") {
        assert!(status_line.contains(" 503 "), "{response}");
        assert!(
            response.to_ascii_lowercase().contains("\r\nretry-after: "),
            "{response}"
        );
        // Nothing of the refused upload is left: no book, so no files.
        assert_eq!(book_blobs(&blobs), Vec::<String>::new());
    }
}
