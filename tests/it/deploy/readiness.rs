//! A `web` process stays ready while workers come and go (worker liveness is reported, not
//! required); `?wait=` answers 202 within `MAX_WAIT`, before a router's cut.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use reqwest::blocking::multipart::{Form, Part};
use serde_json::Value;

use super::BOOK;
use crate::common::{self, Running, Server, client, command, message};

fn readyz(server: &Server) -> (StatusCode, Value) {
    common::readiness(server)
}

fn metric(server: &Server, name: &str) -> Option<f64> {
    let text = client()
        .get(server.url("/metrics"))
        .bearer_auth(common::METRICS_TOKEN)
        .send()
        .expect("metrics")
        .text()
        .expect("text");
    text.lines()
        .find(|l| l.starts_with(name))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

/// Polls until `pred` holds for the `/readyz` body.
fn wait_readyz(server: &Server, what: &str, pred: impl Fn(&Value) -> bool) -> (StatusCode, Value) {
    common::eventually(what, Duration::from_secs(20), || {
        let (status, body) = readyz(server);
        if pred(&body) {
            Ok((status, body))
        } else {
            Err(body)
        }
    })
}

#[test]
fn a_web_process_is_ready_without_a_worker_and_reports_its_liveness() {
    let server = Server::start(
        &["web"],
        &[
            ("WORKER_STALL_TIMEOUT", "1s"),
            ("METRICS_TOKEN", common::METRICS_TOKEN),
        ],
    );
    let (status, body) = readyz(&server);
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["status"], "ready");
    assert_eq!(body["worker"]["ok"], false);
    assert_eq!(body["worker"]["required"], false);
    assert_eq!(body["database"]["ok"], true);
    assert_eq!(
        metric(&server, "bindery_workers{state=\"alive\"}"),
        Some(0.0)
    );

    // A worker starts elsewhere (same storage): reported alive.
    let mut cmd = command(&server.data_dir());
    cmd.env("WORKER_STALL_TIMEOUT", "1s").arg("worker");
    let mut worker = Running::start(cmd);
    let (status, _) = wait_readyz(&server, "worker alive", |b| b["worker"]["ok"] == true);
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        metric(&server, "bindery_workers{state=\"alive\"}"),
        Some(1.0)
    );
    assert!(metric(&server, "bindery_worker_heartbeat_age_seconds").is_some());

    // The worker freezes: liveness says so, and the web stays in the balancer.
    worker.signal(nix::sys::signal::Signal::SIGSTOP);
    let (status, body) = wait_readyz(&server, "worker stale", |b| b["worker"]["ok"] == false);
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(
        body["worker"]["error"]
            .as_str()
            .is_some_and(|e| e.contains("WORKER_STALL_TIMEOUT")),
        "{body}"
    );
    worker.signal(nix::sys::signal::Signal::SIGCONT);
    worker.signal(nix::sys::signal::Signal::SIGTERM);
    let (status, _) = worker.wait_exit(Duration::from_secs(30));
    assert!(status.success());
}

#[test]
fn serve_still_needs_its_worker_to_be_ready() {
    let server = Server::start(&["serve"], &[]);
    server.wait_ready(Duration::from_secs(30));
    let (_, body) = readyz(&server);
    assert!(body["worker"].get("required").is_none(), "{body}");
    // Its worker frozen past the stall timeout: not ready, then serve exits for the platform
    // to restart the pair. Both happen about one stall timeout after the freeze, so a probe
    // may find either: a 503, or nothing listening any more because serve has gone (when the
    // worker froze in the middle of a database write, its own probe waits for the lock).
    let mut server = Server::start(
        &["serve"],
        &[("WORKER_STALL_TIMEOUT", "1s"), ("JOB_LEASE", "1s")],
    );
    server.wait_ready(Duration::from_secs(30));
    crate::common::signal_pid(server.worker_pid(), nix::sys::signal::Signal::SIGSTOP);
    // The unready body, or none when nothing listens any more.
    let unready = common::eventually(
        "/readyz to answer 503, or serve to go",
        Duration::from_secs(20),
        || match client().get(server.url("/readyz")).send() {
            Ok(response) if response.status() == StatusCode::SERVICE_UNAVAILABLE => {
                Ok(Some(response.json::<Value>().expect("json")))
            }
            Ok(response) => Err(response.status()),
            Err(_) => Ok(None),
        },
    );
    match unready {
        Some(body) => assert_eq!(body["status"], "unavailable", "{body}"),
        None => {
            let (status, _) = server.process.wait_exit(Duration::from_secs(10));
            assert!(!status.success(), "serve must exit non-zero: {status}");
            assert!(
                server
                    .process
                    .logs
                    .find(|l| message(l, Some("web"), "worker is stuck"))
                    .is_some(),
                "serve left for its stuck worker"
            );
        }
    }
}

#[test]
fn wait_answers_202_within_max_wait() {
    let server = Server::start(&["serve"], &[("MAX_WAIT", "1s")]);
    server.wait_ready(Duration::from_secs(30));
    let token = crate::common::web::token(&server, "alice", false);
    // Nothing converts while the queue is paused, so only MAX_WAIT ends the wait.
    let paused = command(&server.data_dir())
        .args(["jobs", "pause", "books"])
        .status()
        .expect("pause");
    assert!(paused.success());
    let started = Instant::now();
    let response = client()
        .post(server.url("/api/v1/books?wait=60"))
        .bearer_auth(&token)
        .timeout(Duration::from_secs(30))
        .multipart(Form::new().part(
            "manuscript",
            Part::bytes(BOOK.as_bytes().to_vec()).file_name("book.md"),
        ))
        .send()
        .expect("upload");
    let took = started.elapsed();
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    assert!(response.headers().get("location").is_some());
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(5),
        "held {took:?}, MAX_WAIT=1s"
    );
    // 1e20 seconds is a long wait, not a crash.
    let response = client()
        .post(server.url("/api/v1/books?wait=1e20"))
        .bearer_auth(&token)
        .timeout(Duration::from_secs(30))
        .multipart(Form::new().part(
            "manuscript",
            Part::bytes(BOOK.as_bytes().to_vec()).file_name("book.md"),
        ))
        .send()
        .expect("upload");
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    assert!(
        server
            .process
            .logs
            .find(|l| message(l, None, "panicked"))
            .is_none()
    );
}
