//! The process model's promises, tested on the real binary: `bindery serve` supervises its
//! worker child, and each side's death or stall takes the other down, quickly.

use crate::common;

use std::time::Duration;

use common::{Server, message, process_gone, signal_pid, wait_gone};
use nix::sys::signal::Signal;

/// The bound for "the other process notices and exits".
const PROMPT: Duration = Duration::from_secs(3);

#[test]
fn serve_starts_a_worker_becomes_ready_and_logs_both_roles_to_one_stream() {
    let server = Server::start(&["serve"], &[]);
    server.wait_ready(Duration::from_secs(10));
    let worker_pid = server.worker_pid();

    // One stream: the worker's own lines arrive on the web process's stdout.
    let ready = server.process.logs.wait_for("worker ready", PROMPT, |l| {
        message(l, Some("worker"), "worker ready")
    });
    assert_eq!(ready["pid"], worker_pid);
    let web_line = server
        .process
        .logs
        .find(|l| message(l, Some("web"), "listening"))
        .expect("listening line");
    assert_eq!(web_line["pid"], server.process.pid());

    let body: serde_json::Value = common::client()
        .get(server.url("/readyz"))
        .send()
        .expect("readyz")
        .json()
        .expect("json");
    assert_eq!(body["status"], "ready");
    assert_eq!(body["database"]["ok"], true);
    assert_eq!(body["blob_store"]["ok"], true);
    assert_eq!(body["worker"]["ok"], true);

    // Files roll per role.
    let logs: Vec<String> = std::fs::read_dir(server.data_dir().join("logs"))
        .expect("LOG_DIR exists")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert!(logs.iter().any(|f| f.starts_with("web.")), "{logs:?}");
    assert!(logs.iter().any(|f| f.starts_with("worker.")), "{logs:?}");
}

#[test]
fn a_killed_worker_makes_the_web_process_exit_nonzero() {
    let mut server = Server::start(&["serve"], &[]);
    server.wait_ready(Duration::from_secs(10));
    let worker_pid = server.worker_pid();

    signal_pid(worker_pid, Signal::SIGKILL);
    let (status, took) = server.process.wait_exit(PROMPT + Duration::from_secs(2));
    assert!(!status.success(), "web must exit non-zero, got {status}");
    assert!(took < PROMPT, "web took {took:?} to notice");

    let line = server
        .process
        .logs
        .find(|l| message(l, Some("web"), "worker process exited"))
        .expect("one clear line about the worker");
    assert_eq!(line["worker.pid"], worker_pid);
    assert_eq!(line["signal"], "SIGKILL");
    assert_eq!(line["level"], "ERROR");
    // It does not restart the child: no second "worker process started".
    let starts = server
        .process
        .logs
        .all()
        .iter()
        .filter(|l| message(l, Some("web"), "worker process started"))
        .count();
    assert_eq!(starts, 1);
}

#[test]
fn a_worker_that_exits_cleanly_on_its_own_still_stops_the_web_process() {
    let mut server = Server::start(&["serve"], &[]);
    server.wait_ready(Duration::from_secs(10));
    let worker_pid = server.worker_pid();

    // SIGTERM straight to the worker: it stops gracefully with code 0, but the web did not ask
    // for that, so the pair must restart.
    signal_pid(worker_pid, Signal::SIGTERM);
    let (status, took) = server.process.wait_exit(PROMPT + Duration::from_secs(2));
    assert!(!status.success(), "web must exit non-zero, got {status}");
    assert!(took < PROMPT, "web took {took:?} to notice");
    let line = server
        .process
        .logs
        .find(|l| message(l, Some("web"), "worker process exited"))
        .expect("one clear line about the worker");
    assert_eq!(line["exit_code"], 0);
}

#[test]
fn a_killed_web_process_takes_its_worker_down() {
    let mut server = Server::start(&["serve"], &[]);
    server.wait_ready(Duration::from_secs(10));
    let worker_pid = server.worker_pid();

    server.process.signal(Signal::SIGKILL);
    server.process.wait_exit(PROMPT);
    let took = wait_gone(worker_pid, PROMPT + Duration::from_secs(2));
    assert!(took < PROMPT, "worker outlived its web process by {took:?}");
}

fn stops_cleanly_on(signal: Signal) {
    let mut server = Server::start(&["serve"], &[("SHUTDOWN_TIMEOUT", "10s")]);
    server.wait_ready(Duration::from_secs(10));
    let worker_pid = server.worker_pid();

    server.process.signal(signal);
    let (status, took) = server.process.wait_exit(Duration::from_secs(12));
    assert!(
        status.success(),
        "web must exit 0 on {signal}, got {status}"
    );
    assert!(took < Duration::from_secs(5), "graceful stop took {took:?}");
    assert!(process_gone(worker_pid), "the worker must be gone too");
    // The worker got the signal (forwarded) and stopped on its own, not by force.
    let worker_stop = server
        .process
        .logs
        .find(|l| message(l, Some("worker"), "stopping: no new work"))
        .expect("worker saw the signal");
    assert_eq!(worker_stop["signal"], signal.to_string());
    assert!(
        server
            .process
            .logs
            .find(|l| message(l, Some("worker"), "worker stopped"))
            .is_some()
    );
}

#[test]
fn sigterm_stops_both_processes_with_exit_code_zero() {
    stops_cleanly_on(Signal::SIGTERM);
}

#[test]
fn sigint_stops_both_processes_with_exit_code_zero() {
    stops_cleanly_on(Signal::SIGINT);
}

#[test]
fn a_stuck_worker_counts_as_dead() {
    let stall = Duration::from_secs(2);
    let mut server = Server::start(&["serve"], &[("WORKER_STALL_TIMEOUT", "2s")]);
    server.wait_ready(Duration::from_secs(10));
    let worker_pid = server.worker_pid();

    // SIGSTOP: the process is alive (waitpid says nothing) but does no work and writes no
    // heartbeat. Only the heartbeat in the database can tell.
    signal_pid(worker_pid, Signal::SIGSTOP);
    let (status, took) = server.process.wait_exit(stall + Duration::from_secs(5));
    assert!(!status.success(), "web must exit non-zero, got {status}");
    assert!(
        took >= stall - Duration::from_millis(600),
        "declared stuck after only {took:?}, before WORKER_STALL_TIMEOUT"
    );
    assert!(
        took < stall + PROMPT,
        "took {took:?} to notice a stall of {stall:?}"
    );
    assert!(process_gone(worker_pid), "the stuck worker must be killed");
    let line = server
        .process
        .logs
        .find(|l| message(l, Some("web"), "worker is stuck"))
        .expect("a line saying why");
    assert_eq!(line["worker.pid"], worker_pid);
}

/// The server's SQLite database, opened beside it (with the runtime its pool lives on), to
/// see who holds its write lock.
fn sqlite_of(server: &Server) -> (tokio::runtime::Runtime, bindery::storage::Database) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let db = runtime
        .block_on(bindery::storage::Database::connect(
            &bindery::config::DatabaseUrl::Sqlite {
                path: server.data_dir().join("bindery.db"),
            },
            1,
        ))
        .expect("open the database");
    (runtime, db)
}

/// The worker frozen in the middle of a SQLite write holds the database's lock: every other
/// write waits, the supervisor's probe too. It must still count as stuck, not as an outage.
#[test]
fn a_worker_stopped_in_the_middle_of_a_write_counts_as_dead() {
    let stall = Duration::from_secs(2);
    let mut server = Server::start(&["serve"], &[("WORKER_STALL_TIMEOUT", "2s")]);
    server.wait_ready(Duration::from_secs(10));
    let worker_pid = server.worker_pid();
    let (_runtime, db) = sqlite_of(&server);
    let pid = u32::try_from(worker_pid).expect("pid");
    // Freeze it the moment it is seen writing; if the write ended in between, let it go on
    // and try again. It writes its heartbeat, its jobs' state and its log lines.
    // Its writes are short, so the lock table is read as fast as it can be.
    common::within(Duration::from_secs(20), Duration::ZERO, || {
        if !db.write_locked_by(pid) {
            return false;
        }
        signal_pid(worker_pid, Signal::SIGSTOP);
        if db.write_locked_by(pid) {
            return true;
        }
        signal_pid(worker_pid, Signal::SIGCONT);
        false
    })
    .unwrap_or_else(|_| panic!("the worker was never seen holding the write lock in 20 s"));
    let (status, took) = server.process.wait_exit(stall + Duration::from_secs(5));
    assert!(!status.success(), "web must exit non-zero, got {status}");
    assert!(
        took < stall + PROMPT,
        "took {took:?} to notice a stall of {stall:?}"
    );
    assert!(process_gone(worker_pid), "the stuck worker must be killed");
}

#[test]
fn readyz_reports_a_stale_heartbeat() {
    let server = Server::start(&["serve"], &[("WORKER_STALL_TIMEOUT", "30s")]);
    server.wait_ready(Duration::from_secs(10));
    let worker_pid = server.worker_pid();
    let (_runtime, db) = sqlite_of(&server);
    let pid = u32::try_from(worker_pid).expect("pid");
    // Frozen between writes: a worker frozen holding SQLite's write lock stops every other
    // writer too, the readiness probe's among them (that case is the test above); here only
    // its heartbeat is to go stale. If it was caught writing, let it finish and try again.
    common::within(Duration::from_secs(20), Duration::ZERO, || {
        signal_pid(worker_pid, Signal::SIGSTOP);
        if !db.write_locked_by(pid) {
            return true;
        }
        signal_pid(worker_pid, Signal::SIGCONT);
        false
    })
    .unwrap_or_else(|_| panic!("the worker was never seen between writes in 20 s"));
    // `web` alone (no child, same database) has only the frozen worker's heartbeat to go on. It
    // reports it stale, and stays ready: a worker outage must not empty the load balancer.
    let web = Server::start(
        &["web"],
        &[
            ("WORKER_STALL_TIMEOUT", "1s"),
            ("DATA_DIR", server.data_dir().to_str().expect("utf-8")),
            ("METRICS_TOKEN", common::METRICS_TOKEN),
        ],
    );
    let (status, body) = common::eventually(
        "the heartbeat reported stale",
        Duration::from_secs(10),
        || {
            let (status, body) = common::readiness(&web);
            if body["worker"]["ok"] == false {
                Ok((status, body))
            } else {
                Err(body)
            }
        },
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "ready");
    assert_eq!(body["database"]["ok"], true);
    assert_eq!(body["worker"]["required"], false);
    assert!(
        body["worker"]["error"]
            .as_str()
            .is_some_and(|e| e.contains("WORKER_STALL_TIMEOUT")),
        "{body}"
    );
    signal_pid(worker_pid, Signal::SIGCONT);
}

#[test]
fn a_second_signal_means_exit_now() {
    let mut server = Server::start(&["serve"], &[("SHUTDOWN_TIMEOUT", "20s")]);
    server.wait_ready(Duration::from_secs(10));
    let worker_pid = server.worker_pid();

    // A frozen worker cannot finish its graceful stop, so the first SIGTERM would wait the whole
    // SHUTDOWN_TIMEOUT; the second must cut that short.
    signal_pid(worker_pid, Signal::SIGSTOP);
    server.process.signal(Signal::SIGTERM);
    server.process.logs.wait_for("graceful stop", PROMPT, |l| {
        message(l, Some("web"), "stopping gracefully")
    });
    server.process.signal(Signal::SIGTERM);
    let (status, took) = server.process.wait_exit(PROMPT + Duration::from_secs(2));
    assert!(
        !status.success(),
        "a forced exit is not a clean one: {status}"
    );
    assert!(took < PROMPT, "second signal took {took:?}");
    wait_gone(worker_pid, PROMPT);
}

#[test]
fn shutdown_timeout_bounds_a_graceful_stop() {
    let mut server = Server::start(&["serve"], &[("SHUTDOWN_TIMEOUT", "2s")]);
    server.wait_ready(Duration::from_secs(10));
    let worker_pid = server.worker_pid();

    signal_pid(worker_pid, Signal::SIGSTOP);
    server.process.signal(Signal::SIGTERM);
    let (status, took) = server.process.wait_exit(Duration::from_secs(8));
    assert!(
        !status.success(),
        "a timed-out stop is not a clean one: {status}"
    );
    assert!(
        took >= Duration::from_secs(2),
        "gave up after only {took:?}"
    );
    assert!(
        took < Duration::from_secs(5),
        "took {took:?} for a 2s timeout"
    );
    wait_gone(worker_pid, PROMPT);
}

#[test]
fn web_alone_runs_without_a_worker_child() {
    let mut server = Server::start(&["web"], &[]);
    let health = common::client()
        .get(server.url("/healthz"))
        .send()
        .expect("healthz");
    assert_eq!(health.status(), 200);
    // No worker anywhere: ready to serve all the same, and says the worker is missing.
    let ready = common::client()
        .get(server.url("/readyz"))
        .send()
        .expect("readyz");
    assert_eq!(ready.status(), 200);
    let body: serde_json::Value = ready.json().expect("json");
    assert_eq!(body["worker"]["ok"], false, "{body}");
    assert_eq!(body["worker"]["required"], false, "{body}");
    assert!(
        server
            .process
            .logs
            .find(|l| message(l, None, "worker process started"))
            .is_none()
    );
    server.process.signal(Signal::SIGTERM);
    let (status, _) = server.process.wait_exit(Duration::from_secs(5));
    assert!(status.success());
}

#[test]
fn a_worker_whose_supervisor_is_already_gone_refuses_to_start() {
    // The race the parent-death signal cannot cover: the parent died before the child set it.
    // The child then sees a parent pid other than the one it was told.
    let data = tempfile::tempdir().expect("tempdir");
    let output = common::command(data.path())
        .args([
            "worker",
            "--supervised-by",
            "999999",
            "--worker-id",
            "orphan",
        ])
        .output()
        .expect("run");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("web process 999999") && stderr.contains("is gone"),
        "{stderr}"
    );
}
