//! Job queue benchmark, for the backend `BENCH_DATABASE_URL` names (`scripts/bench-queue` runs
//! it on SQLite and on a PostgreSQL it starts). Prints one line per figure:
//! - bulk enqueue of 100k no-op jobs, jobs/s;
//! - draining them with 32 executors, jobs/s (median of 3 runs);
//! - enqueue-to-start latency p50/p99 over 1,000 jobs enqueued one at a time, from a separate
//!   connection pool (as the web process would), while idle and while 10,000 other jobs are queued.
//!
//! `BENCH_QUEUE_ONLY=drain` runs only the enqueue and drain figures, `BENCH_RUNS` (default 3)
//! sets how many drains make the median: for A/B comparisons of engine changes.

use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bindery::config::{DatabaseUrl, Secret};
use bindery::jobs::{Job, JobContext, JobQueue, NewJob, Outcome, Registry, Runner, RunnerConfig};
use bindery::storage::Database;
use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;

#[derive(Default)]
struct Bench {
    ran: AtomicU64,
    started: Mutex<Option<oneshot::Sender<Instant>>>,
}

#[derive(Serialize, Deserialize)]
struct Noop {}

impl Job for Noop {
    const NAME: &'static str = "bench.noop";
    type Context = Arc<Bench>;

    async fn run(self, cx: &JobContext<Arc<Bench>>) -> anyhow::Result<Outcome> {
        cx.app().ran.fetch_add(1, Ordering::Relaxed);
        Ok(Outcome::done())
    }
}

#[derive(Serialize, Deserialize)]
struct Ping {}

impl Job for Ping {
    const NAME: &'static str = "bench.ping";
    type Context = Arc<Bench>;

    async fn run(self, cx: &JobContext<Arc<Bench>>) -> anyhow::Result<Outcome> {
        let now = Instant::now();
        if let Some(tx) = cx.app().started.lock().expect("lock").take() {
            let _ = tx.send(now);
        }
        Ok(Outcome::done())
    }
}

fn registry() -> Registry<Arc<Bench>> {
    Registry::new().register::<Noop>().register::<Ping>()
}

fn database_url() -> DatabaseUrl {
    let raw = std::env::var("BENCH_DATABASE_URL")
        .expect("set BENCH_DATABASE_URL (scripts/bench-queue does)");
    if let Some(path) = raw.strip_prefix("sqlite://") {
        DatabaseUrl::Sqlite { path: path.into() }
    } else {
        DatabaseUrl::Postgres {
            url: Secret::new(url::Url::from_str(&raw).expect("url")),
        }
    }
}

async fn fresh(url: &DatabaseUrl) -> Database {
    let db = Database::connect(url, 40).await.expect("connect");
    db.migrate().await.expect("migrate");
    match &db {
        Database::Sqlite(pool) => {
            sqlx::query("DELETE FROM jobs")
                .execute(pool)
                .await
                .expect("clear");
        }
        Database::Postgres(pool) => {
            sqlx::query("TRUNCATE jobs")
                .execute(pool)
                .await
                .expect("clear");
        }
    }
    db
}

async fn runner(
    db: &Database,
    url: &DatabaseUrl,
    bench: Arc<Bench>,
    concurrency: usize,
) -> bindery::jobs::RunnerHandle {
    let mut config = RunnerConfig::new(url.clone());
    config.concurrency = concurrency;
    Runner::new(db.clone(), registry(), bench, config)
        .start()
        .await
        .expect("runner")
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = (p * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank]
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

async fn open_jobs(db: &Database) -> i64 {
    let sql = "SELECT count(*) FROM jobs WHERE state IN ('available', 'running')";
    match db {
        Database::Sqlite(pool) => sqlx::query_scalar(sql)
            .fetch_one(pool)
            .await
            .expect("count"),
        Database::Postgres(pool) => sqlx::query_scalar(sql)
            .fetch_one(pool)
            .await
            .expect("count"),
    }
}

async fn throughput(url: &DatabaseUrl, backend: &str) {
    let mut enqueue_rates = Vec::new();
    let mut drain_rates = Vec::new();
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    for _ in 0..runs {
        let db = fresh(url).await;
        let queue = JobQueue::new(db.clone());
        let jobs: Vec<NewJob> = (0..100_000).map(|_| NewJob::of(&Noop {})).collect();
        let started = Instant::now();
        queue.enqueue_bulk(&jobs).await.expect("bulk");
        enqueue_rates.push(100_000.0 / started.elapsed().as_secs_f64());

        let bench = Arc::new(Bench::default());
        let started = Instant::now();
        let handle = runner(&db, url, bench.clone(), 32).await;
        // Counting open rows is itself a scan; only ask the database once every job has run,
        // to wait for the last commits.
        while bench.ran.load(Ordering::Relaxed) < 100_000 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        while open_jobs(&db).await > 0 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        let took = started.elapsed();
        handle.shutdown(Duration::from_secs(5)).await;
        assert_eq!(bench.ran.load(Ordering::Relaxed), 100_000);
        drain_rates.push(100_000.0 / took.as_secs_f64());
        db.close().await;
    }
    println!(
        "{backend} bulk_enqueue_100k_jobs_per_s: median {:.0} (runs: {})",
        median(enqueue_rates.clone()),
        fmt(&enqueue_rates)
    );
    println!(
        "{backend} drain_100k_noop_c32_jobs_per_s: median {:.0} (runs: {})",
        median(drain_rates.clone()),
        fmt(&drain_rates)
    );
}

fn fmt(v: &[f64]) -> String {
    v.iter()
        .map(|x| format!("{x:.0}"))
        .collect::<Vec<_>>()
        .join(", ")
}

async fn latency(url: &DatabaseUrl, backend: &str, queued: usize) {
    let db = fresh(url).await;
    if queued > 0 {
        // Other work waiting in the queue: scheduled for later, so it is queued but not runnable.
        let backlog: Vec<NewJob> = (0..queued)
            .map(|_| NewJob::of(&Noop {}).delay(Duration::from_secs(3600)))
            .collect();
        JobQueue::new(db.clone())
            .enqueue_bulk(&backlog)
            .await
            .expect("backlog");
    }
    let bench = Arc::new(Bench::default());
    let handle = runner(&db, url, bench.clone(), 16).await;
    // The enqueuer has its own pool, as a web process would: no in-process shortcut.
    let web = JobQueue::new(Database::connect(url, 4).await.expect("connect"));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut samples = Vec::with_capacity(1000);
    for _ in 0..1000 {
        let (tx, rx) = oneshot::channel();
        *bench.started.lock().expect("lock") = Some(tx);
        let before = Instant::now();
        web.enqueue(NewJob::of(&Ping {})).await.expect("enqueue");
        let started = rx.await.expect("job started");
        samples.push((started - before).as_secs_f64() * 1000.0);
        // Let the completion commit before the next sample, as in a quiet system.
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    handle.shutdown(Duration::from_secs(5)).await;
    samples.sort_by(f64::total_cmp);
    let label = if queued > 0 {
        format!("with_{queued}_queued")
    } else {
        "idle".to_owned()
    };
    println!(
        "{backend} enqueue_to_start_ms_{label}: p50 {:.2}  p99 {:.2}  max {:.2}",
        percentile(&samples, 0.50),
        percentile(&samples, 0.99),
        samples[samples.len() - 1]
    );
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let url = database_url();
    let backend = match url {
        DatabaseUrl::Sqlite { .. } => "sqlite",
        DatabaseUrl::Postgres { .. } => "postgres",
    };
    runtime.block_on(async {
        throughput(&url, backend).await;
        if std::env::var("BENCH_QUEUE_ONLY").as_deref() != Ok("drain") {
            latency(&url, backend, 0).await;
            latency(&url, backend, 10_000).await;
        }
    });
}
