//! Outages survived, not crashed through: the database or the blob store goes away for longer
//! than the worker's stall timeout and a job's lease, then comes back. Through it `serve` and its
//! worker keep running (no exit, no restart by the supervisor); readiness names what is down;
//! a write is answered 503 with `Retry-After`; and within moments of the dependency's return
//! everything works again, the book caught mid-way is finished, and the careful client's retry
//! of its refused upload makes exactly one book.
//!
//! `serve` rides out each dependency's outage for 12 s; the split roles (a `web` and a `worker`
//! process) ride out a whole minute without PostgreSQL, the longest outage the README promises
//! to wait out.
//!
//! The dependency goes away behind a TCP proxy ([`Proxy`]) that cuts every connection and
//! refuses new ones, as a server that restarts does, without stopping the server the other
//! tests share.

use crate::common;

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use reqwest::blocking::multipart::{Form, Part};
use serde_json::Value;

use common::proxy::Proxy;
use common::{Server, client, command, message, process_gone};

/// How long each outage lasts: past the stall timeout and the lease the service runs with here,
/// so that a supervisor or a rescuer that judged by the clock alone would act.
const OUTAGE: Duration = Duration::from_secs(12);
const SERVICE: [(&str, &str); 3] = [
    ("WORKER_STALL_TIMEOUT", "4s"),
    ("JOB_LEASE", "3s"),
    // `/readyz` names what failed to an operator.
    ("METRICS_TOKEN", common::METRICS_TOKEN),
];
/// How soon after the dependency's return the service must be ready and working again.
const RESUME_WITHIN: Duration = Duration::from_secs(2);

/// Which dependency goes away.
#[derive(Clone, Copy, Debug)]
enum Dependency {
    Postgres,
    AzureBlob,
    /// The SQLite file, locked by another program's exclusive transaction: it still answers
    /// reads, but takes no writes.
    SqliteLocked,
}

impl Dependency {
    /// The `/readyz` check that must name it.
    fn check(self) -> &'static str {
        match self {
            Dependency::Postgres | Dependency::SqliteLocked => "database",
            Dependency::AzureBlob => "blob_store",
        }
    }
}

/// How the dependency is taken away and given back.
enum Cut {
    Proxy(Proxy),
    Lock(std::path::PathBuf, Option<SqliteLock>),
}

impl Cut {
    fn stop(&mut self) {
        match self {
            Cut::Proxy(proxy) => proxy.stop(),
            Cut::Lock(path, lock) => *lock = Some(SqliteLock::take(path)),
        }
    }

    fn resume(&mut self) {
        match self {
            Cut::Proxy(proxy) => proxy.resume(),
            Cut::Lock(_, lock) => drop(lock.take()),
        }
    }
}

/// An exclusive transaction on a SQLite file, held by a thread of its own until dropped.
struct SqliteLock {
    release: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SqliteLock {
    fn take(path: &std::path::Path) -> Self {
        let (locked_tx, locked_rx) = std::sync::mpsc::channel();
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        let path = path.to_owned();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async {
                use sqlx::Connection;
                let options = sqlx::sqlite::SqliteConnectOptions::new()
                    .filename(&path)
                    .busy_timeout(Duration::from_secs(30));
                let mut conn = sqlx::SqliteConnection::connect_with(&options)
                    .await
                    .expect("open the database");
                sqlx::query("BEGIN EXCLUSIVE")
                    .execute(&mut conn)
                    .await
                    .expect("lock the database");
                locked_tx.send(()).expect("locked");
                let _ = release_rx.recv();
                sqlx::query("ROLLBACK")
                    .execute(&mut conn)
                    .await
                    .expect("unlock the database");
                conn.close().await.expect("close");
            });
        });
        locked_rx.recv().expect("the lock is taken");
        Self {
            release: Some(release_tx),
            thread: Some(thread),
        }
    }
}

impl Drop for SqliteLock {
    fn drop(&mut self) {
        drop(self.release.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// How the service runs: `serve` (web and its supervised worker), or the Procfile's split
/// roles, a `web` process and a `worker` process of their own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Roles {
    Serve,
    Split,
}

#[test]
fn serve_rides_out_a_postgres_outage() {
    if common::need::postgres() {
        rides_out(Dependency::Postgres, Roles::Serve, OUTAGE);
    }
}

#[test]
fn serve_rides_out_a_locked_sqlite_database() {
    rides_out(Dependency::SqliteLocked, Roles::Serve, OUTAGE);
}

#[test]
fn serve_rides_out_a_blob_store_outage() {
    if common::need::azurite() {
        rides_out(Dependency::AzureBlob, Roles::Serve, OUTAGE);
    }
}

/// What Azure answers when it is overloaded; a load balancer that lost its store answers alike.
const SERVER_BUSY: &str = "HTTP/1.1 503 Service Unavailable\r\n\
    content-type: application/xml\r\n\
    x-ms-error-code: ServerBusy\r\n\
    content-length: 160\r\n\
    connection: close\r\n\r\n\
    <?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>ServerBusy</Code>\
    <Message>The server is currently unable to receive requests. Please retry.</Message></Error>";

/// A blob store that answers but cannot serve (Azure's 503 Server Busy): storage out of reach,
/// like one that does not answer at all. An upload is refused with 503 and `Retry-After` (not a
/// 500, which says retrying will not help), and logged as the handled outage it is, a warning
/// (ERROR is for bugs); as soon as the store serves again, so does the service.
#[test]
fn a_blob_store_answering_5xx_is_out_of_reach_not_a_bug() {
    if !common::need::azurite() {
        return;
    }
    assert_eq!(
        SERVER_BUSY.split("\r\n\r\n").nth(1).map(str::len),
        Some(160),
        "content-length"
    );
    let container = crate::azure::new_container();
    let (proxy, proxied) = Proxy::to_url(&crate::azure::endpoint());
    let mut env = crate::azure::azure_env(&container);
    for (name, value) in &mut env {
        if *name == "AZURE_STORAGE_ENDPOINT" {
            *value = proxied.to_string();
        }
    }
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let server = Server::start(&["serve"], &env);
    server.wait_ready(Duration::from_secs(30));
    let mut cli = command(&server.data_dir());
    cli.envs(env.iter().copied());
    let token = common::web::create_token(cli, "alice", false);
    let api = Api {
        server: &server,
        token: &token,
    };

    proxy.answer_with(Some(SERVER_BUSY));
    let refused = api.upload("busy");
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        refused.headers().get("retry-after").is_some(),
        "{:?}",
        refused.headers()
    );
    let body: Value = refused.json().expect("error JSON");
    assert_eq!(body["error"]["code"], "unavailable", "{body}");
    let line = common::handled_outage_line(&server, "the refused upload's line");
    assert!(
        line["error"].as_str().is_some_and(|e| e.contains("503")),
        "the line says what the store answered: {line}"
    );

    proxy.answer_with(None);
    let accepted = common::eventually("the upload again", Duration::from_secs(10), || {
        let response = api.upload("busy");
        (response.status() == StatusCode::ACCEPTED).then(|| id_of(response))
    });
    api.wait_ready_book(&accepted, Duration::from_secs(60));
}

/// The longest outage the service promises to ride out, on the split roles.
#[test]
fn web_and_worker_ride_out_a_minute_without_postgres() {
    if common::need::postgres() {
        rides_out(Dependency::Postgres, Roles::Split, Duration::from_secs(60));
    }
}

fn rides_out(dependency: Dependency, roles: Roles, outage: Duration) {
    let data = tempfile::tempdir().expect("tempdir");
    let (mut cut, env) = match dependency {
        Dependency::Postgres => {
            let (proxy, proxied) = Proxy::to_url(&common::postgres_database());
            (
                Cut::Proxy(proxy),
                vec![("DATABASE_URL", proxied.to_string())],
            )
        }
        Dependency::SqliteLocked => (Cut::Lock(data.path().join("bindery.db"), None), vec![]),
        Dependency::AzureBlob => {
            let container = crate::azure::new_container();
            let (proxy, proxied) = Proxy::to_url(&crate::azure::endpoint());
            let mut env = crate::azure::azure_env(&container);
            for (name, value) in &mut env {
                if *name == "AZURE_STORAGE_ENDPOINT" {
                    *value = proxied.to_string();
                }
            }
            (Cut::Proxy(proxy), env)
        }
    };
    let mut all: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    all.extend(SERVICE);
    let (server, worker_process) = match roles {
        Roles::Serve => (Server::start_in(data, &["serve"], &all), None),
        Roles::Split => {
            let mut worker = command(data.path());
            worker.arg("worker").envs(all.iter().copied());
            let worker = common::Running::start(worker);
            (Server::start_in(data, &["web"], &all), Some(worker))
        }
    };
    server.wait_ready(Duration::from_secs(30));
    let worker = match &worker_process {
        None => server.worker_pid(),
        Some(worker) => worker.pid(),
    };
    let mut cli = command(&server.data_dir());
    cli.envs(all.iter().copied());
    let token = common::web::create_token(cli, "alice", false);
    let api = Api {
        server: &server,
        token: &token,
    };

    // Working before: a book is converted.
    let before = api.upload("before");
    assert_eq!(before.status(), StatusCode::ACCEPTED);
    let before = id_of(before);
    api.wait_ready_book(&before, Duration::from_secs(60));

    // A book in flight when the dependency goes.
    let caught = api.upload("caught");
    assert_eq!(caught.status(), StatusCode::ACCEPTED);
    let caught = id_of(caught);
    cut.stop();
    let down = Instant::now();

    let unready = common::eventually(
        &format!("/readyz to name the {dependency:?} outage"),
        Duration::from_secs(10),
        || {
            let (status, body) = common::readiness(&server);
            (status == StatusCode::SERVICE_UNAVAILABLE && body[dependency.check()]["ok"] == false)
                .then_some(body)
        },
    );
    let error = unready[dependency.check()]["error"].as_str().unwrap_or("");
    assert!(!error.is_empty(), "readiness says why: {unready}");

    // A write is refused as worth retrying, and says when.
    let refused = api.upload("during");
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    let retry_after = refused
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    assert!(
        retry_after.is_some_and(|s| s > 0),
        "Retry-After: {retry_after:?}"
    );
    let body: Value = refused.json().expect("error JSON");
    assert_eq!(body["error"]["code"], "unavailable", "{body}");

    // The outage outlasts the stall timeout and the lease; nothing exits meanwhile.
    common::throughout(
        "both processes running through the outage",
        outage.saturating_sub(down.elapsed()),
        || {
            if process_gone(server.process.pid()) {
                Err("the web process exited in the outage")
            } else if process_gone(worker) {
                Err("the worker exited in the outage")
            } else {
                Ok(())
            }
        },
    );

    cut.resume();
    let back = Instant::now();
    server.wait_ready(Duration::from_secs(30));
    let ready_in = back.elapsed();
    // The careful client tries its refused upload again, with the same key.
    let retried = common::eventually("the retried upload", Duration::from_secs(30), || {
        let response = api.upload("during");
        (response.status() == StatusCode::ACCEPTED).then(|| id_of(response))
    });
    let accepted_in = back.elapsed();
    println!(
        "{dependency:?} back after {outage:?} ({roles:?}): ready in {} ms, the retried upload accepted in {} ms",
        ready_in.as_millis(),
        accepted_in.as_millis()
    );
    assert!(
        ready_in <= RESUME_WITHIN && accepted_in <= RESUME_WITHIN,
        "resumed {ready_in:?} (ready) and {accepted_in:?} (write) after the {dependency:?} came back"
    );
    api.wait_ready_book(&caught, Duration::from_secs(60));
    api.wait_ready_book(&retried, Duration::from_secs(60));
    let again = api.upload("during");
    assert!(again.status().is_success(), "{}", again.status());
    assert_eq!(id_of(again), retried, "one key, one book");

    // The same worker all along: the supervisor restarted nothing.
    assert!(!process_gone(worker), "the worker was restarted");
    let mut logs = server.process.logs.all();
    match &worker_process {
        None => {
            let started = logs
                .iter()
                .filter(|l| message(l, Some("web"), "worker process started"))
                .count();
            assert_eq!(started, 1, "the worker was restarted");
        }
        Some(worker) => logs.extend(worker.logs.all()),
    }
    let lost: Vec<&Value> = logs
        .iter()
        .filter(|l| {
            message(
                l,
                Some("worker"),
                "rescued jobs whose worker stopped heartbeating",
            )
        })
        .collect();
    assert!(
        lost.is_empty(),
        "a live worker's jobs were rescued after the outage: {lost:?}"
    );
}

struct Api<'a> {
    server: &'a Server,
    token: &'a str,
}

impl Api<'_> {
    /// Uploads a small book under an idempotency key, as a careful client would.
    fn upload(&self, key: &str) -> reqwest::blocking::Response {
        let text = format!("# A book called {key}\n\nIt has one chapter, and this is it.\n");
        let form = Form::new().part(
            "manuscript",
            Part::bytes(text.into_bytes()).file_name(format!("{key}.md")),
        );
        reqwest::blocking::Client::builder()
            // Past the database pool's wait for a connection (15 s).
            .timeout(Duration::from_secs(40))
            .build()
            .expect("client")
            .post(self.server.url("/api/v1/books"))
            .bearer_auth(self.token)
            .header("Idempotency-Key", key)
            .multipart(form)
            .send()
            .expect("POST /api/v1/books")
    }

    fn wait_ready_book(&self, id: &str, timeout: Duration) {
        let status = common::eventually(&format!("book {id} to finish"), timeout, || {
            let book: Value = client()
                .get(self.server.url(&format!("/api/v1/books/{id}")))
                .bearer_auth(self.token)
                .send()
                .ok()?
                .json()
                .ok()?;
            let status = book["status"].as_str()?.to_owned();
            (status != "processing").then_some(status)
        });
        assert_eq!(status, "ready", "book {id}");
    }
}

fn id_of(response: reqwest::blocking::Response) -> String {
    let book: Value = response.json().expect("book JSON");
    book["id"].as_str().expect("id").to_owned()
}

/// A process that starts while PostgreSQL is restarting (it accepts connections and cuts them
/// at once) waits for it, as a running one does: a worker restarted by its host beside a
/// database failover must not exit into a crash loop.
#[test]
fn a_worker_started_while_postgres_cuts_connections_waits_for_it() {
    if !common::need::postgres() {
        return;
    }
    let database = common::postgres_database();
    let data = tempfile::tempdir().expect("tempdir");
    let migrated = command(data.path())
        .arg("migrate")
        .env("DATABASE_URL", &database)
        .output()
        .expect("bindery migrate");
    assert!(migrated.status.success(), "{migrated:?}");
    let (proxy, proxied) = Proxy::to_url(&database);
    proxy.cut_new_connections(true);
    let mut worker = command(data.path());
    worker.arg("worker").env("DATABASE_URL", proxied.as_str());
    let mut worker = common::Running::start(worker);
    worker
        .logs
        .wait_for("a retried connection", Duration::from_secs(10), |l| {
            message(
                l,
                Some("worker"),
                "PostgreSQL cannot be reached; trying again",
            )
        });
    // Time passes, not a wait for a condition: longer than the connection attempts back off
    // to, shorter than their patience. The worker shows nothing of it (the retries' line is
    // logged once, then every 10 s).
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        worker.child.try_wait().expect("try_wait").is_none(),
        "the worker exited while the database cut its connections: {:#?}",
        worker.logs.all()
    );
    let back = Instant::now();
    proxy.cut_new_connections(false);
    worker
        .logs
        .wait_for("worker ready", Duration::from_secs(10), |l| {
            message(l, Some("worker"), "worker ready")
        });
    assert!(
        back.elapsed() < RESUME_WITHIN,
        "the worker was ready {:?} after the database came back",
        back.elapsed()
    );
}
