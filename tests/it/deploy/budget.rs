//! `DATABASE_MAX_CONNECTIONS`: what PostgreSQL sees of a whole `serve` never exceeds it, even
//! while the worker drains a backlog and clients hammer the API; a budget too small is refused;
//! a concurrency the budget cannot serve is lowered with a warning.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bindery::config::{DatabaseUrl, Secret};
use bindery::jobs::{JobQueue, NewJob};
use bindery::storage::Database;
use bindery::worker::builtin::{Noop, Sleep};
use reqwest::blocking::multipart::{Form, Part};

use super::{BOOK, one_line};
use crate::common::{self, Running, Server, client, command, message, postgres_database};

const BUDGET: i64 = 10;
const JOBS: usize = 4_000;

/// The test's own connections say so, and are not counted.
fn probe_url(url: &str) -> String {
    let mut url = url::Url::parse(url).expect("url");
    url.query_pairs_mut()
        .append_pair("application_name", "bindery-test");
    url.to_string()
}

#[test]
fn a_serve_never_holds_more_connections_than_its_budget_under_load() {
    if !common::need::postgres() {
        return;
    }
    let _heavy = common::heavy();
    let url = postgres_database();
    let database = url::Url::parse(&url).expect("url").path()[1..].to_owned();
    let runtime = tokio::runtime::Runtime::new().expect("runtime");

    // A backlog for the worker to drain: instant jobs and some that hold an executor.
    runtime.block_on(async {
        let db = Database::connect(
            &DatabaseUrl::Postgres {
                url: Secret::new(url.parse().expect("url")),
            },
            2,
        )
        .await
        .expect("connect");
        db.migrate().await.expect("migrate");
        let queue = JobQueue::new(db.clone());
        let mut jobs: Vec<NewJob> = (0..JOBS).map(|_| NewJob::of(&Noop {})).collect();
        jobs.extend((0..64).map(|_| NewJob::of(&Sleep { millis: 300 })));
        queue.enqueue_bulk(&jobs).await.expect("enqueue");
        db.close().await;
    });

    let budget = BUDGET.to_string();
    let data = tempfile::tempdir().expect("tempdir");
    let token = common::web::create_token(
        {
            let mut cmd = command(data.path());
            cmd.env("DATABASE_URL", &url);
            cmd
        },
        "alice",
        false,
    );
    // The sampler watches from before the start: pools fill as they are used.
    let stop = Arc::new(AtomicBool::new(false));
    let most = Arc::new(AtomicU64::new(0));
    let (clear_tx, clear_rx) = std::sync::mpsc::channel::<()>();
    let sampler = {
        let (stop, most, probe, database) = (
            stop.clone(),
            most.clone(),
            probe_url(&url),
            database.clone(),
        );
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Runtime::new().expect("runtime");
            runtime.block_on(async move {
                use sqlx::Connection;
                let mut conn = sqlx::PgConnection::connect(&probe).await.expect("probe");
                let count = "SELECT count(*) FROM pg_stat_activity
                             WHERE datname = $1 AND application_name = 'bindery'";
                // The set-up's connections (the enqueue above, `token create`) are closed, but
                // their server processes may still be exiting, seen under load: counted, they
                // would pass for the server's. Sampling starts once they are gone.
                let started = Instant::now();
                let mut lingering = 0;
                common::eventually_async(
                    "the set-up connections to close",
                    Duration::from_secs(30),
                    async || {
                        let (n,): (i64,) = sqlx::query_as(count)
                            .bind(&database)
                            .fetch_one(&mut conn)
                            .await
                            .expect("pg_stat_activity");
                        lingering = lingering.max(n);
                        if n == 0 { Ok(()) } else { Err(format!("{n} open")) }
                    },
                )
                .await;
                eprintln!(
                    "{lingering} set-up connections closed {:?} after the set-up",
                    started.elapsed()
                );
                let _ = clear_tx.send(());
                let mut samples = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let (n,): (i64,) = sqlx::query_as(count)
                        .bind(&database)
                        .fetch_one(&mut conn)
                        .await
                        .expect("pg_stat_activity");
                    if n > BUDGET {
                        let rows: Vec<(i32, String, String, String)> = sqlx::query_as(
                            "SELECT pid, to_char(backend_start, 'HH24:MI:SS.MS'), coalesce(state, ''),
                                    left(query, 80)
                             FROM pg_stat_activity WHERE datname = $1 AND application_name = 'bindery'
                             ORDER BY backend_start",
                        )
                        .bind(&database)
                        .fetch_all(&mut conn)
                        .await
                        .expect("pg_stat_activity");
                        eprintln!("over the budget: {rows:#?}");
                    }
                    most.fetch_max(u64::try_from(n).unwrap_or(0), Ordering::Relaxed);
                    samples += 1;
                    // The sampling pace, not a wait for a condition.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                samples
            })
        })
    };

    clear_rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the set-up's connections closed");
    let server = Server::start_in(
        data,
        &["serve"],
        &[
            ("DATABASE_URL", &url),
            ("DATABASE_MAX_CONNECTIONS", &budget),
            ("RATE_LIMIT_WRITES", "off"),
        ],
    );
    server.wait_ready(Duration::from_secs(30));

    // API load while the worker drains: reads, event streams, uploads held with ?wait=.
    let failures = Arc::new(AtomicU64::new(0));
    let requests = Arc::new(AtomicU64::new(0));
    // The load's length, not a deadline to wait for something by.
    let load_until = Instant::now() + Duration::from_secs(6);
    let mut clients = Vec::new();
    for i in 0..8 {
        let (base, token, failures, requests) = (
            server.base.clone(),
            token.clone(),
            failures.clone(),
            requests.clone(),
        );
        clients.push(std::thread::spawn(move || {
            let http = client();
            while Instant::now() < load_until {
                let response = if i < 2 {
                    http.post(format!("{base}/api/v1/books?wait=10"))
                        .bearer_auth(&token)
                        .timeout(Duration::from_secs(20))
                        .multipart(Form::new().part(
                            "manuscript",
                            Part::bytes(BOOK.as_bytes().to_vec()).file_name("book.md"),
                        ))
                        .send()
                } else if i < 4 {
                    http.get(format!("{base}/readyz")).send()
                } else {
                    http.get(format!("{base}/api/v1/books?limit=20"))
                        .bearer_auth(&token)
                        .send()
                };
                requests.fetch_add(1, Ordering::Relaxed);
                match response {
                    Ok(r) if r.status().is_success() || r.status() == 202 => {}
                    Ok(r) => {
                        eprintln!("{} from client {i}", r.status());
                        failures.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => {
                        eprintln!("client {i}: {e}");
                        failures.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }));
    }
    for c in clients {
        c.join().expect("client");
    }

    // The backlog drains within the budget. Watched through a plain connection under the
    // test's own name: `Database::connect` names every connection `bindery`, so this one
    // would be counted as the server's, one over the budget once its pools are full.
    runtime.block_on(async {
        use sqlx::Connection;
        let mut db = sqlx::PgConnection::connect(&probe_url(&url))
            .await
            .expect("connect");
        common::eventually_async("the backlog to drain", Duration::from_secs(60), async || {
            let (left,): (i64,) = sqlx::query_as(
                "SELECT count(*) FROM jobs WHERE kind IN ('bindery.noop', 'bindery.sleep') AND state NOT IN ('completed')",
            )
            .fetch_one(&mut db)
            .await
            .expect("count");
            if left == 0 { Ok(()) } else { Err(format!("{left} jobs still not done")) }
        })
        .await;
        db.close().await.expect("close");
    });
    stop.store(true, Ordering::Relaxed);
    let samples = sampler.join().expect("sampler");
    let most = most.load(Ordering::Relaxed);
    eprintln!(
        "budget {BUDGET}: at most {most} connections in {samples} samples; {} requests, {} failed",
        requests.load(Ordering::Relaxed),
        failures.load(Ordering::Relaxed)
    );
    assert!(samples > 50, "the sampler ran throughout");
    assert!(
        most <= u64::try_from(BUDGET).unwrap_or(0),
        "PostgreSQL saw {most} connections of the app, over DATABASE_MAX_CONNECTIONS={BUDGET}"
    );
    assert!(most >= 6, "the pools were in use ({most})");
    assert_eq!(
        failures.load(Ordering::Relaxed),
        0,
        "every request was answered"
    );
    let error = server.process.logs.find(|l| l["level"] == "ERROR");
    assert!(error.is_none(), "an error logged: {error:?}");
}

#[test]
fn a_budget_too_small_is_refused_and_too_many_executors_are_lowered() {
    if !common::need::postgres() {
        return;
    }
    let url = postgres_database();
    let data = tempfile::tempdir().expect("tempdir");
    for (process, budget, least) in [("serve", "7", "at least 8"), ("web", "1", "at least 2")] {
        let out = command(data.path())
            .env("DATABASE_URL", &url)
            .env("DATABASE_MAX_CONNECTIONS", budget)
            .arg(process)
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(2), "{process}");
        let line = one_line(&out);
        assert!(
            line.contains("DATABASE_MAX_CONNECTIONS") && line.contains(least),
            "{line}"
        );
    }

    // A lone worker with the least budget runs at most (2 + 2) × 4 executors.
    let mut cmd = command(data.path());
    cmd.env("DATABASE_URL", &url)
        .env("DATABASE_MAX_CONNECTIONS", "6")
        .env("WORKER_CONCURRENCY", "64")
        .arg("worker");
    let mut worker = Running::start(cmd);
    let warning = worker
        .logs
        .wait_for("the lowered concurrency", Duration::from_secs(20), |l| {
            message(l, None, "WORKER_CONCURRENCY=64")
        });
    assert_eq!(warning["level"], "WARN");
    let ready = worker
        .logs
        .wait_for("worker ready", Duration::from_secs(20), |l| {
            message(l, None, "worker ready")
        });
    assert_eq!(ready["concurrency"], 16, "{ready}");
    worker.signal(nix::sys::signal::Signal::SIGTERM);
    let (status, _) = worker.wait_exit(Duration::from_secs(30));
    assert!(status.success());
}
