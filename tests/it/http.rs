//! The web process's own pages: health, the front page, embedded assets, request logs.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Server, message};

#[test]
fn front_page_and_assets_are_embedded_and_cacheable() {
    let server = Server::start(&["web"], &[]);
    let client = common::client();
    // `/` leads a visitor to sign in, which is a page of the binary's own.
    let page = client.get(server.url("/")).send().expect("GET /");
    assert_eq!(page.status(), 200);
    assert!(page.url().path().ends_with("/signin"), "{}", page.url());
    assert!(
        page.headers()["content-type"]
            .to_str()
            .expect("ct")
            .starts_with("text/html")
    );
    assert!(page.text().expect("body").contains("<h1>Sign in</h1>"));

    let css = client
        .get(server.url("/static/bindery.css"))
        .send()
        .expect("css");
    assert_eq!(css.status(), 200);
    let etag = css.headers()["etag"].clone();
    let again = client
        .get(server.url("/static/bindery.css"))
        .header("If-None-Match", etag)
        .send()
        .expect("css again");
    assert_eq!(again.status(), 304);

    let missing = client
        .get(server.url("/static/nope.js"))
        .send()
        .expect("404");
    assert_eq!(missing.status(), 404);
    let traversal = client
        .get(server.url("/static/../Cargo.toml"))
        .send()
        .expect("traversal");
    assert_eq!(traversal.status(), 404);
}

#[test]
fn requests_are_logged_with_method_path_status_and_duration() {
    let server = Server::start(&["web"], &[]);
    common::client()
        .get(server.url("/static/missing.css"))
        .send()
        .expect("request");
    let line = server
        .process
        .logs
        .wait_for("a request line", Duration::from_secs(5), |l| {
            message(l, Some("web"), "request") && l["path"] == "/static/missing.css"
        });
    assert_eq!(line["method"], "GET");
    assert_eq!(line["status"], 404);
    assert!(line["duration_ms"].as_f64().is_some(), "{line}");
}

/// A stand-in for the platform's front door: records the requests it gets.
fn recording_listener() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { break };
            let mut buf = [0u8; 2048];
            let n = stream.read(&mut buf).unwrap_or(0);
            let request = String::from_utf8_lossy(&buf[..n]);
            if let Some(first) = request.lines().next() {
                sink.lock().expect("lock").push(first.to_owned());
            }
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok");
        }
    });
    (format!("http://{addr}"), seen)
}

#[test]
fn keepalive_requests_the_public_healthz_on_schedule() {
    let (url, seen) = recording_listener();
    let server = Server::start(
        &["web"],
        &[
            ("KEEPALIVE_URL", &format!("{url}/")),
            ("KEEPALIVE_INTERVAL", "300ms"),
        ],
    );
    server
        .process
        .logs
        .wait_for("two keep-alive successes", Duration::from_secs(5), |_| {
            seen.lock().expect("lock").len() >= 2
        });
    let requests = seen.lock().expect("lock").clone();
    assert!(
        requests.iter().all(|r| r == "GET /healthz HTTP/1.1"),
        "{requests:?}"
    );
    server
        .process
        .logs
        .wait_for("an ok line", Duration::from_secs(5), |l| {
            message(l, Some("web"), "keep-alive ok")
        });
}

#[test]
fn a_failing_keepalive_never_takes_the_app_down() {
    // A port with nothing behind it.
    let closed = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", closed.local_addr().expect("addr"));
    drop(closed);
    let mut server = Server::start(
        &["serve"],
        &[("KEEPALIVE_URL", &url), ("KEEPALIVE_INTERVAL", "200ms")],
    );
    server
        .process
        .logs
        .wait_for("a failed keep-alive", Duration::from_secs(5), |l| {
            message(l, Some("web"), "keep-alive request failed")
        });
    server.wait_ready(Duration::from_secs(5));
    // Shutdown does not wait on it either.
    server.process.signal(nix::sys::signal::Signal::SIGTERM);
    let (status, took) = server.process.wait_exit(Duration::from_secs(10));
    assert!(status.success());
    assert!(took < Duration::from_secs(3), "{took:?}");
}

/// HTTP threads of a web process, by their name.
fn http_threads(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .expect("tasks")
        .filter_map(Result::ok)
        .filter(|task| {
            std::fs::read_to_string(task.path().join("comm"))
                .is_ok_and(|name| name.starts_with("actix-server wo"))
        })
        .count()
}

/// Each HTTP thread builds the whole application and keeps about 1.4 MB even idle, and the web
/// waits on storage far more than it computes: a web process serves on half the cores (at
/// least one), not on all of them, unless `HTTP_WORKERS` says how many.
#[test]
fn a_web_process_serves_http_on_half_the_cores_unless_told() {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    // /readyz answers from the first HTTP thread up, while the others may still be starting:
    // wait for the count to settle, then hold it to exactly that many.
    let settled = |pid: i32, expected: usize| {
        common::eventually("the HTTP threads to start", Duration::from_secs(10), || {
            let n = http_threads(pid);
            if n >= expected {
                Ok(n)
            } else {
                Err(format!("{n} of {expected}"))
            }
        })
    };
    let server = Server::start(&["web"], &[]);
    server.wait_ready(Duration::from_secs(20));
    assert_eq!(
        settled(server.process.pid(), cores.div_ceil(2)),
        cores.div_ceil(2),
        "{cores} cores"
    );
    let told = Server::start(&["web"], &[("HTTP_WORKERS", "3")]);
    told.wait_ready(Duration::from_secs(20));
    assert_eq!(settled(told.process.pid(), 3), 3);
}
