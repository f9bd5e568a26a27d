//! Job queue benchmark, for the backend `BENCH_DATABASE_URL` names (`scripts/bench-queue` runs
//! it on SQLite and on a PostgreSQL it starts). Prints one line per figure:
//! - bulk enqueue of 100k no-op jobs, jobs/s;
//! - draining them with 32 executors, jobs/s (median of 3 runs);
//! - enqueue-to-start latency p50/p99 over 1,000 jobs enqueued one at a time, from a separate
//!   connection pool (as the web process would), while idle and while 10,000 other jobs are queued.
//!
//! `BENCH_QUEUE_ONLY=drain` runs only the enqueue and drain figures, `BENCH_RUNS` (default 3)
//! sets how many drains make the median: for A/B comparisons of engine changes.
//!
//! The queue when deep, each a run of its own (minutes each):
//! - `BENCH_QUEUE_ONLY=scale`: draining 100,000 and 1,000,000 waiting jobs in alternating runs,
//!   the table's size and the worker's memory growth, and enqueue-to-start latency with
//!   1,000,000 jobs scheduled;
//! - `BENCH_QUEUE_ONLY=retained`: a drain beside 10,000,000 retained finished jobs, and the same
//!   drain while they are pruned.
//!
//! `BENCH_QUEUE_ONLY=log-flood`: the drain of 300,000 no-op jobs with the logbook's capture
//! layer and writer installed (as in every worker), alternately quiet and under a flood of
//! 100,000 log events a second from another thread; the rates, how many events were stored
//! and dropped, and the slowest single logging call.

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

/// Bulk-enqueues `n` no-op jobs (in chunks, so the bench's own memory stays small) and returns
/// the rate.
async fn enqueue_noops(queue: &JobQueue, n: usize) -> f64 {
    let started = Instant::now();
    let mut left = n;
    while left > 0 {
        let chunk = left.min(100_000);
        let jobs: Vec<NewJob> = (0..chunk).map(|_| NewJob::of(&Noop {})).collect();
        queue.enqueue_bulk(&jobs).await.expect("bulk");
        left -= chunk;
    }
    n as f64 / started.elapsed().as_secs_f64()
}

/// What a drain cost, per 1,000 jobs: the CPU of this process (the worker) and of every
/// PostgreSQL process, and the WAL written. On a machine where the worker and the server share
/// the cores, it says which of them the time goes to.
#[derive(Clone, Copy, Default)]
struct Cost {
    worker_cpu_ms: f64,
    server_cpu_ms: f64,
    wal_kib: f64,
}

/// A drain's rate, and its cost (none on SQLite, where the worker is the server).
struct Drained {
    rate: f64,
    cost: Option<Cost>,
}

/// CPU time of this process and of the PostgreSQL server's processes, in milliseconds, from
/// `/proc` (in clock ticks, 100 a second on Linux).
fn cpu_ms() -> (f64, f64) {
    let ticks = |stat: &str| -> Option<f64> {
        // The fields after the command's closing parenthesis; utime and stime are the 12th
        // and 13th of them.
        let rest = &stat[stat.rfind(')')? + 2..];
        let fields: Vec<&str> = rest.split(' ').collect();
        Some((fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?) * 10.0)
    };
    let own = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| ticks(&s))
        .unwrap_or(0.0);
    let server = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|s| s.contains(" (postgres) "))
        .filter_map(|s| ticks(&s))
        .sum();
    (own, server)
}

async fn wal_bytes(db: &Database) -> Option<f64> {
    match db {
        Database::Postgres(pool) => Some(
            sqlx::query_scalar::<_, f64>(
                "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::float8",
            )
            .fetch_one(pool)
            .await
            .expect("WAL position"),
        ),
        Database::Sqlite(_) => None,
    }
}

/// Drains every runnable job with a 32-executor runner.
async fn drain(db: &Database, url: &DatabaseUrl, n: u64) -> Drained {
    let bench = Arc::new(Bench::default());
    let wal_before = wal_bytes(db).await;
    let cpu_before = cpu_ms();
    let started = Instant::now();
    let handle = runner(db, url, bench.clone(), 32).await;
    // Counting open rows is itself a scan; only ask the database once every job has run,
    // to wait for the last commits.
    while bench.ran.load(Ordering::Relaxed) < n {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    while open_jobs(db).await > 0 {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let took = started.elapsed();
    // Before the shutdown, while the worker's connections (and so their server processes,
    // whose CPU time is counted) are still there.
    let cpu_after = cpu_ms();
    let wal_after = wal_bytes(db).await;
    handle.shutdown(Duration::from_secs(5)).await;
    assert_eq!(bench.ran.load(Ordering::Relaxed), n);
    let per_1000 = 1000.0 / n as f64;
    Drained {
        rate: n as f64 / took.as_secs_f64(),
        cost: wal_before.zip(wal_after).map(|(before, after)| Cost {
            worker_cpu_ms: (cpu_after.0 - cpu_before.0) * per_1000,
            server_cpu_ms: (cpu_after.1 - cpu_before.1) * per_1000,
            wal_kib: (after - before) / 1024.0 * per_1000,
        }),
    }
}

/// The medians of drains' costs, as one line's end.
fn costs(costs: &[Option<Cost>]) -> String {
    let costs: Vec<Cost> = costs.iter().flatten().copied().collect();
    if costs.is_empty() {
        return String::new();
    }
    let of = |f: fn(&Cost) -> f64| median(costs.iter().map(f).collect());
    format!(
        "; per 1,000 jobs: worker CPU {:.0} ms, PostgreSQL CPU {:.0} ms, WAL {:.0} KiB (medians)",
        of(|c| c.worker_cpu_ms),
        of(|c| c.server_cpu_ms),
        of(|c| c.wal_kib)
    )
}

fn runs() -> usize {
    std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3)
}

async fn throughput(url: &DatabaseUrl, backend: &str) {
    let mut enqueue_rates = Vec::new();
    let mut drain_rates = Vec::new();
    let mut drain_costs = Vec::new();
    for _ in 0..runs() {
        let db = fresh(url).await;
        enqueue_rates.push(enqueue_noops(&JobQueue::new(db.clone()), 100_000).await);
        let drained = drain(&db, url, 100_000).await;
        drain_rates.push(drained.rate);
        drain_costs.push(drained.cost);
        db.close().await;
    }
    println!(
        "{backend} bulk_enqueue_100k_jobs_per_s: median {:.0} (runs: {})",
        median(enqueue_rates.clone()),
        fmt(&enqueue_rates)
    );
    println!(
        "{backend} drain_100k_noop_c32_jobs_per_s: median {:.0} (runs: {}){}",
        median(drain_rates.clone()),
        fmt(&drain_rates),
        costs(&drain_costs)
    );
}

/// The queue when deep (`BENCH_QUEUE_ONLY=scale`): the drain of 100,000 and of 1,000,000
/// waiting jobs in alternating runs, and the worker's peak memory while draining the million.
async fn deep(url: &DatabaseUrl, backend: &str) {
    let (mut shallow, mut deep, mut peaks) = (Vec::new(), Vec::new(), Vec::new());
    let (mut shallow_costs, mut deep_costs) = (Vec::new(), Vec::new());
    for _ in 0..runs() {
        for n in [100_000, 1_000_000] {
            let db = fresh(url).await;
            enqueue_noops(&JobQueue::new(db.clone()), n).await;
            settle(&db).await;
            let sizes = table_sizes(&db).await;
            // The enqueue's own allocations are freed by now; the peak from here on is the
            // worker's (this process is one) while it drains.
            reset_peak_rss();
            let drained = drain(&db, url, n as u64).await;
            if n == 100_000 {
                shallow.push(drained.rate);
                shallow_costs.push(drained.cost);
            } else {
                deep.push(drained.rate);
                deep_costs.push(drained.cost);
                peaks.push(peak_rss_kb() as f64 / 1024.0);
                println!(
                    "{backend} jobs_table_with_1m_waiting: {sizes}; after the drain: {}",
                    table_sizes(&db).await
                );
            }
            db.close().await;
        }
    }
    println!(
        "{backend} drain_100k_noop_c32_jobs_per_s: median {:.0} (runs: {}){}",
        median(shallow.clone()),
        fmt(&shallow),
        costs(&shallow_costs)
    );
    println!(
        "{backend} drain_1m_noop_c32_jobs_per_s: median {:.0} (runs: {}); {:.0} % of 100k{}",
        median(deep.clone()),
        fmt(&deep),
        100.0 * median(deep.clone()) / median(shallow.clone()),
        costs(&deep_costs)
    );
    println!(
        "{backend} worker_peak_rss_draining_1m_mib: median {:.0} (runs: {})",
        median(peaks.clone()),
        fmt(&peaks)
    );
}

/// A drain beside ten million retained finished jobs (`BENCH_QUEUE_ONLY=retained`), then the
/// same drain while those jobs are pruned.
async fn retained(url: &DatabaseUrl, backend: &str) {
    const RETAINED: i64 = 10_000_000;
    const N: usize = 200_000;
    let db = fresh(url).await;
    let queue = JobQueue::new(db.clone());
    let started = Instant::now();
    insert_finished(&db, RETAINED).await;
    settle(&db).await;
    println!(
        "{backend} retained_10m_finished: inserted in {:.0} s; {}",
        started.elapsed().as_secs_f64(),
        table_sizes(&db).await
    );
    let mut quiet = Vec::new();
    for _ in 0..runs() {
        enqueue_noops(&queue, N).await;
        quiet.push(drain(&db, url, N as u64).await.rate);
    }
    enqueue_noops(&queue, N).await;
    let prune_queue = queue.clone();
    let pruning = tokio::spawn(async move {
        let started = Instant::now();
        let pruned = prune_queue
            .prune(Duration::from_secs(3600))
            .await
            .expect("prune");
        (pruned, started.elapsed())
    });
    // The drain while the prune runs (it outlasts the drain: ten million rows against 200k).
    let during = drain(&db, url, N as u64).await.rate;
    let (pruned, took) = pruning.await.expect("prune task");
    println!(
        "{backend} drain_200k_beside_10m_finished_jobs_per_s: median {:.0} (runs: {})",
        median(quiet.clone()),
        fmt(&quiet)
    );
    println!(
        "{backend} drain_200k_while_pruning_10m_jobs_per_s: {during:.0}; {:.0} % of the quiet drain",
        100.0 * during / median(quiet.clone())
    );
    println!(
        "{backend} prune_10m_finished: {pruned} jobs in {:.0} s ({:.0} jobs/s); {}",
        took.as_secs_f64(),
        pruned as f64 / took.as_secs_f64(),
        table_sizes(&db).await
    );
    db.close().await;
}

/// After a bulk insert, what a running system would have done by itself since: statistics for
/// the planner, the visibility map, and a checkpoint (PostgreSQL); so that the figures measure a
/// steady state, not autovacuum and checkpointing catching up with the insert.
async fn settle(db: &Database) {
    match db {
        Database::Postgres(pool) => {
            for sql in ["VACUUM (ANALYZE) jobs", "CHECKPOINT"] {
                sqlx::raw_sql(sql).execute(pool).await.expect(sql);
            }
        }
        Database::Sqlite(pool) => {
            sqlx::raw_sql("ANALYZE jobs")
                .execute(pool)
                .await
                .expect("ANALYZE");
        }
    }
}

/// Inserts `n` completed jobs finished two days ago, in one statement per million.
async fn insert_finished(db: &Database, n: i64) {
    let at = chrono::Utc::now().timestamp_millis() - 2 * 86_400_000;
    let columns = "kind, queue, payload, state, run_at, attempt, max_attempts, progress, \
                   created_at, started_at, finished_at";
    let values =
        format!("'bench.noop', 'default', '{{}}', 'completed', {at}, 1, 3, 100, {at}, {at}, {at}");
    for _ in 0..n / 1_000_000 {
        match db {
            Database::Postgres(pool) => sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
                "INSERT INTO jobs ({columns}) SELECT {values} FROM generate_series(1, 1000000)"
            )))
            .execute(pool)
            .await
            .map(drop),
            Database::Sqlite(pool) => sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
                "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 1000000)
                 INSERT INTO jobs ({columns}) SELECT {values} FROM s"
            )))
            .execute(pool)
            .await
            .map(drop),
        }
        .expect("insert finished jobs");
    }
}

/// The jobs table's size on disk, with its indexes (PostgreSQL), or the database file's.
async fn table_sizes(db: &Database) -> String {
    match db {
        Database::Postgres(pool) => {
            let (table, indexes): (i64, i64) =
                sqlx::query_as("SELECT pg_table_size('jobs'), pg_indexes_size('jobs')")
                    .fetch_one(pool)
                    .await
                    .expect("sizes");
            format!(
                "table {} MiB, indexes {} MiB",
                table / (1 << 20),
                indexes / (1 << 20)
            )
        }
        Database::Sqlite(pool) => {
            let bytes: i64 = sqlx::query_scalar(
                "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()",
            )
            .fetch_one(pool)
            .await
            .expect("size");
            format!("database file {} MiB", bytes / (1 << 20))
        }
    }
}

fn proc_status_kb(field: &str) -> i64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

fn peak_rss_kb() -> i64 {
    proc_status_kb("VmHWM:")
}

/// Starts the peak (VmHWM) afresh from the current size.
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
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
        settle(&db).await;
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

/// Jobs drained in each run of the log-flood bench: about 10 s on PostgreSQL here.
const FLOOD_DRAIN: u64 = 300_000;
/// Log events a second in the flood.
const FLOOD_RATE: u64 = 100_000;

/// The drain quiet and under a flood of log events, alternately (`BENCH_QUEUE_ONLY=log-flood`).
async fn log_flood(url: &DatabaseUrl, backend: &str) {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;

    // As a worker process has it: INFO and worse, into the logbook.
    tracing_subscriber::registry()
        .with(tracing_subscriber::EnvFilter::new("info"))
        .with(bindery::logbook::Capture::install(
            "worker",
            bindery::config::variables::LOG_MAX_RATE
                .read(&bindery::config::variable::Env::new([]))
                .expect("LOG_MAX_RATE's default"),
        ))
        .try_init()
        .expect("subscriber");
    let logbook_db = Database::connect(url, 4).await.expect("connect");
    logbook_db.migrate().await.expect("migrate");
    let writer = bindery::logbook::Writer::start(logbook_db.clone()).expect("writer");
    let mut quiet = Vec::new();
    let mut flooded = Vec::new();
    let (mut emitted, mut dropped, mut slowest) = (0u64, 0u64, Duration::ZERO);
    for _ in 0..runs() {
        for flood in [false, true] {
            let db = fresh(url).await;
            clear_log_lines(&db).await;
            enqueue_noops(&JobQueue::new(db.clone()), FLOOD_DRAIN as usize).await;
            settle(&db).await;
            let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let dropped_before = bindery::logbook::dropped();
            let flooder = flood.then(|| {
                let stop = stop.clone();
                std::thread::spawn(move || flood_logs(&stop))
            });
            let rate = drain(&db, url, FLOOD_DRAIN).await.rate;
            stop.store(true, Ordering::Relaxed);
            if let Some(flooder) = flooder {
                let (n, worst) = flooder.join().expect("flooder");
                emitted += n;
                slowest = slowest.max(worst);
                dropped += bindery::logbook::dropped() - dropped_before;
                flooded.push(rate);
            } else {
                quiet.push(rate);
            }
            db.close().await;
        }
    }
    writer.finish().await;
    let stored = count_log_lines(&logbook_db).await;
    let (q, f) = (median(quiet.clone()), median(flooded.clone()));
    println!(
        "{backend} drain_300k_noop_c32_logbook_quiet_jobs_per_s: median {q:.0} (runs: {})",
        fmt(&quiet)
    );
    println!(
        "{backend} drain_300k_noop_c32_under_100k_log_events_per_s_jobs_per_s: median {f:.0} (runs: {}); {:.0} % of quiet",
        fmt(&flooded),
        f / q * 100.0
    );
    println!(
        "{backend} log_flood: {emitted} events emitted, {dropped} dropped and counted, {stored} lines stored in the last run; slowest logging call {} µs",
        slowest.as_micros()
    );
}

/// Logs `FLOOD_RATE` events a second, paced in steps of 10 ms, until told to stop; returns how
/// many it logged and the slowest single call.
fn flood_logs(stop: &std::sync::atomic::AtomicBool) -> (u64, Duration) {
    let per_step = FLOOD_RATE / 100;
    let started = Instant::now();
    let (mut n, mut slowest) = (0u64, Duration::ZERO);
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..per_step {
            let before = Instant::now();
            tracing::info!(n, book.id = "flood", "a log event of the flood");
            slowest = slowest.max(before.elapsed());
            n += 1;
        }
        let due = started + Duration::from_millis(n * 1000 / FLOOD_RATE);
        std::thread::sleep(due.saturating_duration_since(Instant::now()));
    }
    (n, slowest)
}

async fn clear_log_lines(db: &Database) {
    let sql = "DELETE FROM log_lines";
    match db {
        Database::Sqlite(pool) => sqlx::query(sql).execute(pool).await.map(drop),
        Database::Postgres(pool) => sqlx::query(sql).execute(pool).await.map(drop),
    }
    .expect("clear log lines");
}

async fn count_log_lines(db: &Database) -> i64 {
    let sql = "SELECT count(*) FROM log_lines";
    match db {
        Database::Sqlite(pool) => sqlx::query_scalar(sql).fetch_one(pool).await,
        Database::Postgres(pool) => sqlx::query_scalar(sql).fetch_one(pool).await,
    }
    .expect("count log lines")
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
        match std::env::var("BENCH_QUEUE_ONLY").as_deref() {
            Ok("drain") => throughput(&url, backend).await,
            Ok("scale") => {
                deep(&url, backend).await;
                latency(&url, backend, 1_000_000).await;
            }
            Ok("retained") => retained(&url, backend).await,
            Ok("deep-latency") => latency(&url, backend, 1_000_000).await,
            Ok("log-flood") => log_flood(&url, backend).await,
            _ => {
                throughput(&url, backend).await;
                latency(&url, backend, 0).await;
                latency(&url, backend, 10_000).await;
            }
        }
    });
}
