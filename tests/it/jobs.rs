//! The job engine's behaviour, one suite run against both backends: every test below exists
//! twice, as `name::sqlite` and `name::postgres`, on a fresh database each.

use crate::common;

use std::collections::{BTreeMap, HashMap};
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bindery::config::{DatabaseUrl, Secret};
use bindery::jobs::schedule::{self, Schedule};
use bindery::jobs::{
    Job, JobContext, JobFilter, JobQueue, JobState, NewJob, Outcome, Registry, Runner,
    RunnerConfig, RunnerHandle, WaitTarget,
};
use bindery::storage::Database;
use common::{all_jobs, execute, wait_job};
use serde::{Deserialize, Serialize};

// ----- test harness ----------------------------------------------------------------------------

struct Backend {
    db: Database,
    url: DatabaseUrl,
    _dir: Option<tempfile::TempDir>,
}

impl Backend {
    async fn sqlite() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let url = DatabaseUrl::Sqlite {
            path: dir.path().join("jobs.db"),
        };
        Self::open(url, Some(dir)).await
    }

    async fn postgres() -> Self {
        let url = url::Url::from_str(&common::postgres_database()).expect("url");
        Self::open(
            DatabaseUrl::Postgres {
                url: Secret::new(url),
            },
            None,
        )
        .await
    }

    async fn open(url: DatabaseUrl, dir: Option<tempfile::TempDir>) -> Self {
        let db = Database::connect(&url, 24).await.expect("connect");
        db.migrate().await.expect("migrate");
        Self { db, url, _dir: dir }
    }

    /// A second, independent connection pool: what another worker process would have.
    async fn another_pool(&self) -> Database {
        Database::connect(&self.url, 24).await.expect("connect")
    }

    fn queue(&self) -> JobQueue {
        JobQueue::new(self.db.clone())
    }

    async fn runner(&self, log: &Log, concurrency: usize) -> RunnerHandle {
        self.runner_on(self.db.clone(), log, concurrency).await
    }

    async fn runner_on(&self, db: Database, log: &Log, concurrency: usize) -> RunnerHandle {
        self.start(log, db, self.config(concurrency)).await
    }

    /// The tests' runner configuration: quick retries, leases and polls.
    fn config(&self, concurrency: usize) -> RunnerConfig {
        let mut config = RunnerConfig::new(self.url.clone());
        config.concurrency = concurrency;
        config.retry_base = Duration::from_millis(20);
        config.lease = Duration::from_secs(5);
        config.poll_interval = Duration::from_millis(200);
        config
    }

    async fn start(&self, log: &Log, db: Database, config: RunnerConfig) -> RunnerHandle {
        Runner::new(db, registry(), log.clone(), config)
            .start()
            .await
            .expect("start runner")
    }
}

macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn sqlite() {
                super::$name(super::Backend::sqlite().await).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn postgres() {
                if !crate::common::need::postgres() {
                    return;
                }
                super::$name(super::Backend::postgres().await).await;
            }
        }
    )*};
}

/// What test jobs saw, shared with the test body.
#[derive(Clone, Default)]
struct Log {
    events: Arc<Mutex<Vec<Event>>>,
    barrier: Arc<Mutex<Option<Arc<tokio::sync::Barrier>>>>,
}

#[derive(Debug, Clone)]
struct Event {
    key: String,
    tag: String,
    started: Instant,
    ended: Instant,
    attempt: i32,
}

impl Log {
    fn push(&self, e: Event) {
        self.events.lock().expect("log").push(e);
    }

    fn events(&self) -> Vec<Event> {
        self.events.lock().expect("log").clone()
    }

    fn count(&self, key: &str) -> usize {
        self.events().iter().filter(|e| e.key == key).count()
    }

    /// Makes the failing children succeed from now on, or fail again.
    fn heal(&self, healed: bool) {
        let mut events = self.events.lock().expect("log");
        events.retain(|e| e.key != HEALED);
        if healed {
            let now = Instant::now();
            events.push(Event {
                key: HEALED.into(),
                tag: String::new(),
                started: now,
                ended: now,
                attempt: 0,
            });
        }
    }
}

/// Runs for `sleep_ms`, and records when.
#[derive(Serialize, Deserialize)]
struct Record {
    key: String,
    tag: String,
    sleep_ms: u64,
}

impl Job for Record {
    const NAME: &'static str = "test.record";
    type Context = Log;

    async fn run(self, cx: &JobContext<Log>) -> anyhow::Result<Outcome> {
        let slept = self.sleep_ms;
        self.run_and_record(cx).await;
        Ok(Outcome::done_with(serde_json::json!({ "slept": slept })))
    }
}

impl Record {
    /// Sleeps `sleep_ms`, the job's work (time passes for the runner under test), and records
    /// the run.
    async fn run_and_record(self, cx: &JobContext<Log>) {
        let started = Instant::now();
        if self.sleep_ms > 0 {
            tokio::time::sleep(Duration::from_millis(self.sleep_ms)).await;
        }
        cx.app().push(Event {
            key: self.key,
            tag: self.tag,
            started,
            ended: Instant::now(),
            attempt: cx.attempt,
        });
    }
}

/// A `Record` that ends with no result: a plain completion, which the pump commits in bulk
/// (`Finished::is_plain`).
#[derive(Serialize, Deserialize)]
#[serde(transparent)]
struct Plain(Record);

impl Job for Plain {
    const NAME: &'static str = "test.plain";
    type Context = Log;

    async fn run(self, cx: &JobContext<Log>) -> anyhow::Result<Outcome> {
        self.0.run_and_record(cx).await;
        Ok(Outcome::done())
    }
}

fn plain(key: &str, tag: &str, sleep_ms: u64) -> NewJob {
    NewJob::of(&Plain(Record {
        key: key.into(),
        tag: tag.into(),
        sleep_ms,
    }))
}

/// The jobs of `key` that ran, by tag, each once: panics naming any that ran twice.
fn ran_once(log: &Log, key: &str) -> usize {
    let mut runs: HashMap<String, usize> = HashMap::new();
    for e in log.events().into_iter().filter(|e| e.key == key) {
        *runs.entry(e.tag).or_default() += 1;
    }
    let twice: Vec<&String> = runs
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(t, _)| t)
        .collect();
    assert!(twice.is_empty(), "ran more than once: {twice:?}");
    runs.len()
}

/// How many plain jobs are completed, and how many are leased to a worker.
async fn plain_jobs(pool: &sqlx::PgPool) -> (i64, i64) {
    sqlx::query_as(
        "SELECT count(*) FILTER (WHERE state = 'completed'),
                count(*) FILTER (WHERE locked_by IS NOT NULL)
         FROM jobs WHERE kind = 'test.plain'",
    )
    .fetch_one(pool)
    .await
    .expect("count the jobs")
}

/// Waits until all `n` plain jobs are completed and none is leased.
async fn plain_jobs_completed(pool: &sqlx::PgPool, n: i64, when: &str) {
    common::eventually_async(
        &format!("{n} jobs completed {when}"),
        Duration::from_secs(60),
        async || match plain_jobs(pool).await {
            (completed, 0) if completed == n => Ok(()),
            (completed, leased) => Err(format!("{completed} completed, {leased} leased")),
        },
    )
    .await;
}

fn record(key: &str, tag: &str, sleep_ms: u64) -> NewJob {
    NewJob::of(&Record {
        key: key.into(),
        tag: tag.into(),
        sleep_ms,
    })
}

/// Fails its first `failures` attempts.
#[derive(Serialize, Deserialize)]
struct Flaky {
    key: String,
    failures: i32,
}

impl Job for Flaky {
    const NAME: &'static str = "test.flaky";
    type Context = Log;

    async fn run(self, cx: &JobContext<Log>) -> anyhow::Result<Outcome> {
        cx.app().push(Event {
            key: self.key.clone(),
            tag: String::new(),
            started: Instant::now(),
            ended: Instant::now(),
            attempt: cx.attempt,
        });
        if cx.attempt <= self.failures {
            Err(anyhow::anyhow!("socket closed")
                .context(format!("attempt {} of {}", cx.attempt, self.key)))
        } else {
            Ok(Outcome::done())
        }
    }

    async fn on_dead(self, cx: &JobContext<Log>, error: &anyhow::Error) -> anyhow::Result<()> {
        cx.app().push(Event {
            key: format!("{}:dead", self.key),
            tag: error.to_string(),
            started: Instant::now(),
            ended: Instant::now(),
            attempt: cx.attempt,
        });
        Ok(())
    }
}

/// Ends with whatever outcome it is told to.
#[derive(Serialize, Deserialize)]
enum Behave {
    Panic,
    Discard,
    CancelSelf,
    SnoozeTwice,
}

impl Job for Behave {
    const NAME: &'static str = "test.behave";
    type Context = Log;

    async fn run(self, cx: &JobContext<Log>) -> anyhow::Result<Outcome> {
        cx.app().push(Event {
            key: "behave".into(),
            tag: String::new(),
            started: Instant::now(),
            ended: Instant::now(),
            attempt: cx.attempt,
        });
        match self {
            Behave::Panic => panic!("boom"),
            Behave::Discard => Ok(Outcome::Discard("the manuscript is empty".into())),
            Behave::CancelSelf => Ok(Outcome::Cancel("nothing left to do".into())),
            Behave::SnoozeTwice => {
                if cx.app().count("behave") <= 2 {
                    Ok(Outcome::Snooze(Duration::from_millis(30)))
                } else {
                    Ok(Outcome::done())
                }
            }
        }
    }
}

/// What a test logs to make a failing child succeed from then on.
const HEALED: &str = "healed";

/// Fans out `children` children and a join. Child `failing` fails until the log says
/// [`HEALED`]; with `barrier`, the others wait at the log's barrier first.
#[derive(Serialize, Deserialize)]
struct Parent {
    children: usize,
    failing: Option<usize>,
    barrier: bool,
}

impl Job for Parent {
    const NAME: &'static str = "test.parent";
    type Context = Log;

    async fn run(self, cx: &JobContext<Log>) -> anyhow::Result<Outcome> {
        let children = (0..self.children)
            .map(|i| {
                NewJob::of(&Child {
                    index: i,
                    fail: self.failing == Some(i),
                    barrier: self.barrier && self.failing != Some(i),
                })
                .max_attempts(1)
            })
            .collect();
        cx.fan_out(children, NewJob::of(&Join {}));
        Ok(Outcome::done())
    }
}

#[derive(Serialize, Deserialize)]
struct Child {
    index: usize,
    fail: bool,
    barrier: bool,
}

impl Job for Child {
    const NAME: &'static str = "test.child";
    type Context = Log;

    async fn run(self, cx: &JobContext<Log>) -> anyhow::Result<Outcome> {
        if self.barrier {
            let barrier = cx.app().barrier.lock().expect("barrier").clone();
            if let Some(b) = barrier {
                b.wait().await;
            }
        }
        if self.fail && cx.app().count(HEALED) == 0 {
            anyhow::bail!("child {} cannot render", self.index);
        }
        Ok(Outcome::done_with(self.index))
    }
}

#[derive(Serialize, Deserialize)]
struct Join {}

impl Job for Join {
    const NAME: &'static str = "test.join";
    type Context = Log;

    async fn run(self, cx: &JobContext<Log>) -> anyhow::Result<Outcome> {
        let children = cx.children().await?;
        let failed: Vec<String> = children
            .iter()
            .filter(|c| !c.succeeded())
            .map(|c| {
                format!(
                    "{}:{}:{}",
                    c.id,
                    c.state,
                    c.last_error().unwrap_or_default()
                )
            })
            .collect();
        let finished = children.iter().filter(|c| c.state.is_terminal()).count();
        cx.app().push(Event {
            key: "join".into(),
            tag: format!("{finished}/{}|{}", children.len(), failed.join(",")),
            started: Instant::now(),
            ended: Instant::now(),
            attempt: cx.attempt,
        });
        if !failed.is_empty() {
            // As the pipeline's joins do: a failed child stops the workflow here.
            return Ok(Outcome::Cancel(format!(
                "children failed: {}",
                failed.join(",")
            )));
        }
        Ok(Outcome::done_with(
            serde_json::json!({ "children": children.len() }),
        ))
    }
}

/// Sleeps, with progress, until cancelled.
#[derive(Serialize, Deserialize)]
struct Slow {
    millis: u64,
}

impl Job for Slow {
    const NAME: &'static str = "test.slow";
    type Context = Log;

    async fn run(self, cx: &JobContext<Log>) -> anyhow::Result<Outcome> {
        cx.progress(10, "started").await?;
        // The job's work: time passes for the runner under test.
        tokio::time::sleep(Duration::from_millis(self.millis)).await;
        cx.app().push(Event {
            key: "slow-finished".into(),
            tag: String::new(),
            started: Instant::now(),
            ended: Instant::now(),
            attempt: cx.attempt,
        });
        Ok(Outcome::done())
    }
}

/// Lets go of its unique key as it starts (recording that), then works for `sleep_ms`.
#[derive(Serialize, Deserialize)]
struct Coalesce {
    sleep_ms: u64,
}

impl Job for Coalesce {
    const NAME: &'static str = "test.coalesce";
    type Context = Log;

    async fn run(self, cx: &JobContext<Log>) -> anyhow::Result<Outcome> {
        assert!(cx.release_unique_key().await?, "the run holds its job");
        let started = Instant::now();
        cx.app().push(Event {
            key: "released".into(),
            tag: cx.id.to_string(),
            started,
            ended: started,
            attempt: cx.attempt,
        });
        // The job's work: time passes for the runner under test.
        tokio::time::sleep(Duration::from_millis(self.sleep_ms)).await;
        cx.app().push(Event {
            key: "coalesced".into(),
            tag: cx.id.to_string(),
            started,
            ended: Instant::now(),
            attempt: cx.attempt,
        });
        Ok(Outcome::done())
    }
}

fn registry() -> Registry<Log> {
    Registry::new()
        .register::<Coalesce>()
        .register::<Record>()
        .register::<Plain>()
        .register::<Flaky>()
        .register::<Behave>()
        .register::<Parent>()
        .register::<Child>()
        .register::<Join>()
        .register::<Slow>()
}

/// Proves the runner survived whatever the test did to it: a fresh job still completes.
async fn assert_runner_alive(queue: &JobQueue) {
    let after = queue
        .enqueue(record("after", "", 0))
        .await
        .expect("enqueue");
    assert_eq!(wait_job(queue, after.id).await.state, JobState::Completed);
}

// ----- the suite -------------------------------------------------------------------------------

on_both_backends!(
    unique_keys_hold_under_concurrent_enqueue,
    serialization_keys_never_overlap_and_keep_order,
    tenants_are_served_round_robin,
    failures_retry_with_backoff_then_die_with_their_history,
    bad_input_is_discarded_at_once,
    snooze_does_not_spend_attempts,
    cancel_stops_queued_and_running_jobs,
    a_panicking_job_fails_and_the_runner_lives_on,
    a_join_runs_exactly_once_after_all_children,
    a_retried_child_opens_its_join_again,
    wait_for_resolves_or_times_out,
    schedules_enqueue_each_slot_once_across_schedulers,
    priority_delay_pause_and_stats,
    enqueue_commits_with_the_callers_transaction,
    bulk_enqueue_then_drain,
    a_released_unique_key_coalesces_only_while_queued,
    jobs_claimed_ahead_go_back_for_an_idle_worker,
    a_jobs_run_time_leaves_out_its_wait_in_the_local_queue,
    every_way_of_completing_records_full_progress,
    pruning_deletes_old_finished_jobs_in_batches_and_keeps_the_rest,
);

async fn unique_keys_hold_under_concurrent_enqueue(b: Backend) {
    let queue = b.queue();
    let mut tasks = Vec::new();
    for i in 0..16 {
        let queue = JobQueue::new(if i % 2 == 0 {
            b.db.clone()
        } else {
            b.another_pool().await
        });
        tasks.push(tokio::spawn(async move {
            queue
                .enqueue(record("u", &i.to_string(), 0).unique_key("book-42/ingest"))
                .await
                .expect("enqueue")
        }));
    }
    let mut results = Vec::new();
    for t in tasks {
        results.push(t.await.expect("task"));
    }
    let first = results[0].id;
    assert!(results.iter().all(|r| r.id == first), "{results:?}");
    assert_eq!(
        results.iter().filter(|r| r.inserted).count(),
        1,
        "{results:?}"
    );
    let all = queue
        .list(&JobFilter {
            limit: 100,
            ..Default::default()
        })
        .await
        .expect("list");
    assert_eq!(all.len(), 1);
}

async fn serialization_keys_never_overlap_and_keep_order(b: Backend) {
    let queue = b.queue();
    let log = Log::default();
    let mut jobs = Vec::new();
    for n in 0..10 {
        for key in ["a", "b", "c", "d"] {
            jobs.push(record(key, &n.to_string(), 3).serial_key(format!("book-{key}")));
        }
    }
    for job in jobs {
        queue.enqueue(job).await.expect("enqueue");
    }
    // Two workers with their own pools, 16 executors between them.
    let one = b.runner(&log, 8).await;
    let two = b.runner_on(b.another_pool().await, &log, 8).await;
    common::eventually_async("all 40 jobs", Duration::from_secs(30), async || {
        let ran = log.events().len();
        if ran == 40 {
            Ok(())
        } else {
            Err(format!("{ran} ran"))
        }
    })
    .await;
    one.shutdown(Duration::from_secs(5)).await;
    two.shutdown(Duration::from_secs(5)).await;

    let mut by_key: BTreeMap<String, Vec<Event>> = BTreeMap::new();
    for e in log.events() {
        by_key.entry(e.key.clone()).or_default().push(e);
    }
    let mut overlapping_keys = 0;
    for (key, mut events) in by_key {
        events.sort_by_key(|e| e.started);
        let order: Vec<&str> = events.iter().map(|e| e.tag.as_str()).collect();
        let expected: Vec<String> = (0..10).map(|n| n.to_string()).collect();
        assert_eq!(order, expected, "key {key} ran out of order");
        for pair in events.windows(2) {
            assert!(
                pair[1].started >= pair[0].ended,
                "key {key}: two jobs ran at once"
            );
        }
        overlapping_keys += 1;
    }
    assert_eq!(overlapping_keys, 4);
}

/// A worker claims ahead while its jobs are short. When long jobs come right behind a run of
/// short ones, the ones it claimed but cannot start go back to the queue, and a second worker
/// with free executors runs them instead of waiting.
async fn jobs_claimed_ahead_go_back_for_an_idle_worker(b: Backend) {
    let queue = b.queue();
    let mut jobs: Vec<NewJob> = (0..3000)
        .map(|i| record("short", &i.to_string(), 0))
        .collect();
    jobs.extend((0..6).map(|i| record("long", &i.to_string(), 700)));
    queue.enqueue_bulk(&jobs).await.expect("bulk");
    let first_log = Log::default();
    let first = b.runner(&first_log, 2).await;
    common::eventually_async("the short jobs", Duration::from_secs(60), async || {
        let ran = first_log.count("short");
        if ran == 3000 {
            Ok(())
        } else {
            Err(format!("{ran} ran"))
        }
    })
    .await;
    let second_log = Log::default();
    let second = b.runner_on(b.another_pool().await, &second_log, 2).await;
    common::eventually_async("the long jobs", Duration::from_secs(30), async || {
        let ran = first_log.count("long") + second_log.count("long");
        if ran == 6 {
            Ok(())
        } else {
            Err(format!("{ran} ran"))
        }
    })
    .await;
    first.shutdown(Duration::from_secs(5)).await;
    second.shutdown(Duration::from_secs(5)).await;
    let (by_first, by_second) = (first_log.count("long"), second_log.count("long"));
    println!("long jobs: {by_first} on the first worker, {by_second} on the second");
    assert!(
        by_second >= 2,
        "the second worker, idle with 2 executors, ran only {by_second} of the 6 long jobs; \
         the first ran {by_first}"
    );
    // Nothing ran twice, nothing spent an attempt waiting.
    let long: Vec<_> = all_jobs(&queue, JobFilter::default())
        .await
        .into_iter()
        .filter(|j| j.payload.contains("\"long\""))
        .collect();
    assert_eq!(long.len(), 6);
    for job in long {
        assert_eq!(job.state, JobState::Completed, "{job:?}");
        assert_eq!(job.attempt, 1, "{job:?}");
    }
}

/// Jobs claimed ahead wait in the worker before they start; the stored run time (what a book's
/// report and `/metrics` show) is the time the job ran, not that wait.
async fn a_jobs_run_time_leaves_out_its_wait_in_the_local_queue(b: Backend) {
    let queue = b.queue();
    let mut jobs: Vec<NewJob> = (0..2000)
        .map(|i| record("short", &i.to_string(), 0))
        .collect();
    jobs.extend((0..6).map(|i| record("long", &i.to_string(), 150)));
    queue.enqueue_bulk(&jobs).await.expect("bulk");
    let log = Log::default();
    let runner = b.runner(&log, 2).await;
    common::eventually_async("the long jobs", Duration::from_secs(60), async || {
        let ran = log.count("long");
        if ran == 6 {
            Ok(())
        } else {
            Err(format!("{ran} ran"))
        }
    })
    .await;
    runner.shutdown(Duration::from_secs(5)).await;
    // Some of them waited for an executor (6 jobs, 2 executors): the test measures that itself.
    let events: Vec<Event> = log
        .events()
        .into_iter()
        .filter(|e| e.key == "long")
        .collect();
    let first = events.iter().map(|e| e.started).min().expect("events");
    let last = events.iter().map(|e| e.started).max().expect("events");
    assert!(
        last - first >= Duration::from_millis(250),
        "the long jobs ran two at a time"
    );
    for job in all_jobs(&queue, JobFilter::default()).await {
        if !job.payload.contains("\"long\"") {
            continue;
        }
        let ran = job.finished_at.expect("finished") - job.started_at.expect("started");
        assert!(
            (150..250).contains(&ran),
            "job {} is stored as running {ran} ms; it slept 150 ms",
            job.id
        );
    }
}

async fn tenants_are_served_round_robin(b: Backend) {
    let queue = b.queue();
    let log = Log::default();
    let job_ms = 20;
    let concurrency = 4;
    let backlog: Vec<NewJob> = (0..2000)
        .map(|i| record("big", &i.to_string(), job_ms).tenant("big-press"))
        .collect();
    queue.enqueue_bulk(&backlog).await.expect("bulk");
    let runner = b.runner(&log, concurrency).await;
    common::eventually_async(
        "the backlog to start",
        Duration::from_secs(10),
        async || {
            let ran = log.count("big");
            if ran >= 20 {
                Ok(())
            } else {
                Err(format!("{ran} ran"))
            }
        },
    )
    .await;

    let small = queue
        .enqueue(record("small", "1", job_ms).tenant("indie-author"))
        .await
        .expect("enqueue");
    // The job is committed, so every claim whose snapshot begins after this instant sees it.
    // A claim already under way may not (its snapshot is older), yet stamp its jobs later:
    // the stamp is the database's clock when the claim writes, not when it looked.
    let visible = database_clock(&b.db).await;
    let small = wait_job(&queue, small.id).await;
    runner.shutdown(Duration::from_secs(1)).await;

    // Judge by the database's own clock and the jobs' fair tags: which claims took backlog jobs
    // that sort after the small job (a later fair tag) once it was visible and before it was
    // claimed. The jobs of one claim share its stamp. A backlog job that sorts before it (its
    // tag's tie, which goes first by id, or one claimed earlier into a worker's local queue
    // and given back when it waited there too long, with its tag) is fair to take first.
    let inserted = small.created_at;
    let claimed = small.started_at.expect("claimed");
    let tags: Vec<(i64, i64, Option<i64>)> = match &b.db {
        Database::Sqlite(pool) => {
            sqlx::query_as("SELECT id, fair_tag, started_at FROM jobs")
                .fetch_all(pool)
                .await
        }
        Database::Postgres(pool) => {
            sqlx::query_as("SELECT id, fair_tag, started_at FROM jobs")
                .fetch_all(pool)
                .await
        }
    }
    .expect("read the fair tags");
    let small_tag = tags
        .iter()
        .find(|(id, _, _)| *id == small.id)
        .map(|(_, tag, _)| *tag)
        .expect("the small job's tag");
    let overtaking: BTreeMap<i64, usize> = tags
        .iter()
        .filter(|(id, tag, _)| *id != small.id && *tag > small_tag)
        .filter_map(|(_, _, started)| *started)
        .filter(|s| *s > visible && *s < claimed)
        .fold(Default::default(), |mut claims, s| {
            *claims.entry(s).or_default() += 1;
            claims
        });
    println!(
        "fairness: the single job waited {} ms behind a 2000-job backlog; claims of backlog jobs \
         after it in fair order, after it was visible and before it was claimed: {overtaking:?} \
         (stamp: jobs; concurrency {concurrency}, {job_ms} ms jobs)",
        claimed - inserted
    );
    // Only a claim whose snapshot was taken before the small job was committed may go first.
    assert!(
        overtaking.len() <= 1,
        "{} claims took backlog jobs after the small job in fair order, once it was visible: \
         {overtaking:?}",
        overtaking.len()
    );
    assert!(
        claimed - inserted < 1000,
        "waited {} ms",
        claimed - inserted
    );
}

/// The database's clock, in the unix milliseconds the jobs table stamps with.
async fn database_clock(db: &Database) -> i64 {
    match db {
        Database::Sqlite(pool) => {
            sqlx::query_scalar("SELECT CAST(unixepoch('subsec') * 1000 AS INTEGER)")
                .fetch_one(pool)
                .await
        }
        Database::Postgres(pool) => {
            sqlx::query_scalar("SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint")
                .fetch_one(pool)
                .await
        }
    }
    .expect("the database's clock")
}

async fn failures_retry_with_backoff_then_die_with_their_history(b: Backend) {
    let queue = b.queue();
    let log = Log::default();
    let runner = b.runner(&log, 4).await;

    let flaky = queue
        .enqueue(
            NewJob::of(&Flaky {
                key: "flaky".into(),
                failures: 2,
            })
            .max_attempts(5),
        )
        .await
        .expect("enqueue");
    let doomed = queue
        .enqueue(
            NewJob::of(&Flaky {
                key: "doomed".into(),
                failures: 99,
            })
            .max_attempts(3),
        )
        .await
        .expect("enqueue");

    let flaky = wait_job(&queue, flaky.id).await;
    assert_eq!(flaky.state, JobState::Completed);
    assert_eq!(flaky.attempt, 3);
    assert_eq!(flaky.error_history().len(), 2);

    let dead = wait_job(&queue, doomed.id).await;
    assert_eq!(dead.state, JobState::Dead);
    assert_eq!(dead.attempt, 3);
    // The job type heard of its death once, on the last attempt, with that attempt's error.
    let obituaries: Vec<Event> = log
        .events()
        .into_iter()
        .filter(|e| e.key.ends_with(":dead"))
        .collect();
    assert_eq!(obituaries.len(), 1, "{obituaries:?}");
    assert_eq!(obituaries[0].key, "doomed:dead");
    assert_eq!(obituaries[0].attempt, 3);
    assert_eq!(obituaries[0].tag, "attempt 3 of doomed");
    let history = dead.error_history();
    assert_eq!(history.len(), 3, "{history:?}");
    for (i, entry) in history.iter().enumerate() {
        assert_eq!(entry["attempt"], i as i64 + 1);
        assert_eq!(entry["error"], format!("attempt {} of doomed", i + 1));
        assert_eq!(entry["causes"][0], "socket closed");
        assert!(entry["at"].as_i64().is_some());
    }
    // Backoff: each wait at least 0.75 × base × 2^(attempt-1), so the second is longer.
    let mut runs: Vec<Event> = log
        .events()
        .into_iter()
        .filter(|e| e.key == "doomed")
        .collect();
    runs.sort_by_key(|e| e.started);
    let first_gap = runs[1].started - runs[0].started;
    let second_gap = runs[2].started - runs[1].started;
    assert!(first_gap >= Duration::from_millis(15), "{first_gap:?}");
    assert!(second_gap >= Duration::from_millis(30), "{second_gap:?}");

    // A person retries the dead job: it runs again with fresh attempts and keeps its history.
    assert!(queue.retry(doomed.id).await.expect("retry"));
    common::eventually_async(
        "the retried job to die again",
        Duration::from_secs(10),
        async || match queue.job(doomed.id).await {
            Ok(Some(j)) if j.state == JobState::Dead && j.error_history().len() == 6 => Ok(()),
            seen => Err(format!("{seen:?}")),
        },
    )
    .await;
    assert!(
        !queue.retry(flaky.id).await.expect("retry"),
        "a completed job is not retried"
    );
    runner.shutdown(Duration::from_secs(1)).await;
}

async fn bad_input_is_discarded_at_once(b: Backend) {
    let queue = b.queue();
    let log = Log::default();
    let runner = b.runner(&log, 2).await;

    let discard = queue
        .enqueue(NewJob::of(&Behave::Discard))
        .await
        .expect("enqueue");
    let mut garbled = record("x", "", 0);
    garbled.payload = "{\"key\": 42".into();
    let garbled = queue.enqueue(garbled).await.expect("enqueue");
    let mut unknown = record("x", "", 0);
    unknown.kind = "test.renamed_long_ago".into();
    let unknown = queue.enqueue(unknown).await.expect("enqueue");

    for (id, needle) in [
        (discard.id, "the manuscript is empty"),
        (garbled.id, "does not match job type `test.record`"),
        (unknown.id, "unknown job type `test.renamed_long_ago`"),
    ] {
        let job = wait_job(&queue, id).await;
        assert_eq!(job.state, JobState::Discarded, "{job:?}");
        assert_eq!(job.attempt, 1, "discarded jobs are not retried");
        let history = job.error_history();
        assert!(
            history[0]["error"]
                .as_str()
                .is_some_and(|e| e.contains(needle)),
            "{history:?}"
        );
    }
    // The runner is alive and well.
    assert_runner_alive(&queue).await;
    runner.shutdown(Duration::from_secs(1)).await;
}

async fn snooze_does_not_spend_attempts(b: Backend) {
    let queue = b.queue();
    let log = Log::default();
    let runner = b.runner(&log, 2).await;
    let job = queue
        .enqueue(NewJob::of(&Behave::SnoozeTwice).max_attempts(1))
        .await
        .expect("enqueue");
    let job = wait_job(&queue, job.id).await;
    assert_eq!(job.state, JobState::Completed);
    assert_eq!(log.count("behave"), 3);
    assert!(
        log.events().iter().all(|e| e.attempt == 1),
        "snoozes spent attempts"
    );
    runner.shutdown(Duration::from_secs(1)).await;
}

async fn cancel_stops_queued_and_running_jobs(b: Backend) {
    let queue = b.queue();
    let log = Log::default();
    let queued = queue
        .enqueue(record("never", "", 0).delay(Duration::from_secs(60)))
        .await
        .expect("enqueue");
    assert!(
        queue
            .cancel(queued.id, "the author withdrew the book")
            .await
            .expect("cancel")
    );

    let runner = b.runner(&log, 2).await;
    let slow = queue
        .enqueue(NewJob::of(&Slow { millis: 30_000 }))
        .await
        .expect("enqueue");
    common::eventually_async(
        "the slow job to report progress",
        Duration::from_secs(10),
        async || match queue.job(slow.id).await {
            Ok(Some(j)) if j.progress == Some(10) => Ok(()),
            seen => Err(format!("{seen:?}")),
        },
    )
    .await;
    let running = queue.job(slow.id).await.expect("read").expect("job");
    assert_eq!(running.state, JobState::Running);
    assert_eq!(running.progress_message.as_deref(), Some("started"));
    assert!(queue.cancel(slow.id, "operator").await.expect("cancel"));
    // The worker notices at its next heartbeat (lease 5 s → a beat every ~1.7 s) and stops it:
    // its executor is free again, so a new job runs.
    let next = queue.enqueue(record("next", "", 0)).await.expect("enqueue");
    let next_two = queue.enqueue(record("next", "", 0)).await.expect("enqueue");
    wait_job(&queue, next.id).await;
    wait_job(&queue, next_two.id).await;

    let cancelled = queue.job(slow.id).await.expect("read").expect("job");
    assert_eq!(cancelled.state, JobState::Cancelled);
    assert!(
        !queue.cancel(slow.id, "again").await.expect("cancel"),
        "already finished"
    );
    let self_cancel = queue
        .enqueue(NewJob::of(&Behave::CancelSelf))
        .await
        .expect("enqueue");
    assert_eq!(
        wait_job(&queue, self_cancel.id).await.state,
        JobState::Cancelled
    );
    runner.shutdown(Duration::from_secs(1)).await;
    assert_eq!(log.count("never"), 0);
    assert_eq!(log.count("slow-finished"), 0);
}

async fn a_panicking_job_fails_and_the_runner_lives_on(b: Backend) {
    let queue = b.queue();
    let log = Log::default();
    let runner = b.runner(&log, 2).await;
    let panics = queue
        .enqueue(NewJob::of(&Behave::Panic).max_attempts(2))
        .await
        .expect("enqueue");
    let job = wait_job(&queue, panics.id).await;
    assert_eq!(job.state, JobState::Dead);
    assert_eq!(job.attempt, 2);
    assert_eq!(job.error_history()[0]["error"], "the job panicked: boom");
    assert_runner_alive(&queue).await;
    runner.shutdown(Duration::from_secs(1)).await;
}

async fn a_join_runs_exactly_once_after_all_children(b: Backend) {
    let queue = b.queue();
    let log = Log::default();
    // Sixteen children finish at the same moment (a barrier), on two workers.
    *log.barrier.lock().expect("barrier") = Some(Arc::new(tokio::sync::Barrier::new(16)));
    let one = b.runner(&log, 8).await;
    let two = b.runner_on(b.another_pool().await, &log, 8).await;
    let parent = queue
        .enqueue(
            NewJob::of(&Parent {
                children: 16,
                failing: None,
                barrier: true,
            })
            .workflow("book-1"),
        )
        .await
        .expect("enqueue");
    assert!(
        queue
            .wait_for(
                &WaitTarget::Workflow("book-1".into()),
                Duration::from_secs(30)
            )
            .await
            .expect("wait")
    );
    let workflow = queue.workflow("book-1").await.expect("workflow");
    assert_eq!(workflow.jobs.len(), 18, "parent + 16 children + join");
    assert!(workflow.finished() && !workflow.failed());
    assert_eq!(log.count("join"), 1, "the join ran more than once");
    let join = log
        .events()
        .into_iter()
        .find(|e| e.key == "join")
        .expect("join ran");
    assert_eq!(
        join.tag, "16/16|",
        "the join ran before every child had finished"
    );
    assert_eq!(workflow.jobs[0].id, parent.id);
    *log.barrier.lock().expect("barrier") = None;

    // One child dies: the join still runs once, and learns which child.
    queue
        .enqueue(
            NewJob::of(&Parent {
                children: 5,
                failing: Some(3),
                barrier: false,
            })
            .workflow("book-2"),
        )
        .await
        .expect("enqueue");
    assert!(
        queue
            .wait_for(
                &WaitTarget::Workflow("book-2".into()),
                Duration::from_secs(30)
            )
            .await
            .expect("wait")
    );
    let workflow = queue.workflow("book-2").await.expect("workflow");
    assert!(workflow.finished() && workflow.failed());
    let joins: Vec<Event> = log
        .events()
        .into_iter()
        .filter(|e| e.key == "join")
        .collect();
    assert_eq!(joins.len(), 2);
    let dead_child = workflow
        .jobs
        .iter()
        .find(|j| j.state == JobState::Dead)
        .expect("a dead child");
    assert_eq!(
        joins[1].tag,
        format!("5/5|{}:dead:child 3 cannot render", dead_child.id)
    );
    one.shutdown(Duration::from_secs(1)).await;
    two.shutdown(Duration::from_secs(1)).await;
}

/// A join decides from how its children ended, so a child run again makes its join wait for
/// it again, whether the join was still waiting for others or had already stopped the
/// workflow: a retried book goes on from where it stopped instead of waiting for ever.
async fn a_retried_child_opens_its_join_again(b: Backend) {
    let queue = b.queue();
    let log = Log::default();
    let runner = b.runner(&log, 4).await;
    let workflow = WaitTarget::Workflow("book-3".into());
    let joins = || -> Vec<String> {
        log.events()
            .into_iter()
            .filter(|e| e.key == "join")
            .map(|e| e.tag)
            .collect()
    };
    // Two children, of which child 0 fails until healed.
    let fan_out = async |workflow: &str, barrier: bool| {
        let parent = NewJob::of(&Parent {
            children: 2,
            failing: Some(0),
            barrier,
        });
        queue
            .enqueue(parent.workflow(workflow))
            .await
            .expect("enqueue");
    };
    let kind_of = async |kind: &str| -> Vec<bindery::jobs::JobRecord> {
        let jobs = queue.workflow("book-3").await.expect("workflow").jobs;
        jobs.into_iter().filter(|j| j.kind == kind).collect()
    };

    // Child 0 dies while child 1 is held at the barrier: the join still waits for child 1.
    let gate = Arc::new(tokio::sync::Barrier::new(2));
    *log.barrier.lock().expect("barrier") = Some(gate.clone());
    fan_out("book-3", true).await;
    let dead = common::eventually_async("child 0 to die", Duration::from_secs(20), async || {
        let children = kind_of(Child::NAME).await;
        match children.iter().find(|c| c.state == JobState::Dead) {
            Some(dead) => Ok(dead.id),
            None => Err(format!("{children:?}")),
        }
    })
    .await;
    log.heal(true);
    assert!(queue.retry(dead).await.expect("retry"), "the dead child");
    assert_eq!(wait_job(&queue, dead).await.state, JobState::Completed);
    let join = kind_of(Join::NAME).await.remove(0);
    assert_eq!(
        join.state,
        JobState::Waiting,
        "the join ran before child 1 finished: {:?}",
        joins()
    );
    gate.wait().await;
    assert!(
        queue
            .wait_for(&workflow, Duration::from_secs(20))
            .await
            .expect("wait")
    );
    assert_eq!(joins(), ["2/2|"], "the join runs once, after both");
    *log.barrier.lock().expect("barrier") = None;

    // Child 0 of a second fan-out dies after the other: the join stops the workflow.
    let before = joins().len();
    log.heal(false);
    fan_out("book-4", false).await;
    let book_4 = WaitTarget::Workflow("book-4".into());
    assert!(
        queue
            .wait_for(&book_4, Duration::from_secs(20))
            .await
            .expect("wait")
    );
    let jobs = queue.workflow("book-4").await.expect("workflow").jobs;
    let join = jobs.iter().find(|j| j.kind == Join::NAME).expect("join");
    assert_eq!(join.state, JobState::Cancelled, "{jobs:#?}");
    let dead = jobs
        .iter()
        .find(|j| j.state == JobState::Dead)
        .expect("a dead child");
    // Run again, it opens the join once more, and the workflow ends well.
    log.heal(true);
    assert!(queue.retry(dead.id).await.expect("retry"));
    assert!(
        queue
            .wait_for(&book_4, Duration::from_secs(20))
            .await
            .expect("wait")
    );
    let workflow = queue.workflow("book-4").await.expect("workflow");
    assert!(!workflow.failed(), "{:#?}", workflow.jobs);
    let join = workflow
        .jobs
        .iter()
        .find(|j| j.kind == Join::NAME)
        .expect("join");
    assert_eq!(join.state, JobState::Completed, "{:#?}", workflow.jobs);
    assert_eq!(joins()[before..].len(), 2, "{:?}", joins());
    assert_eq!(joins().last().map(String::as_str), Some("2/2|"));
    runner.shutdown(Duration::from_secs(1)).await;
}

async fn wait_for_resolves_or_times_out(b: Backend) {
    let queue = b.queue();
    let log = Log::default();
    let runner = b.runner(&log, 2).await;
    let quick = queue
        .enqueue(record("quick", "", 150))
        .await
        .expect("enqueue");
    let started = Instant::now();
    assert!(
        queue
            .wait_for(&WaitTarget::Job(quick.id), Duration::from_secs(10))
            .await
            .expect("wait")
    );
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(140), "{took:?}");
    assert!(took < Duration::from_secs(2), "{took:?}");
    let done = queue.job(quick.id).await.expect("read").expect("job");
    assert_eq!(
        done.result_json(),
        Some(serde_json::json!({ "slept": 150 }))
    );

    // A plain completion (no result, no successors) takes the engine's fast path; waiters must
    // still hear of it at once, not at the next fallback poll.
    let plain = queue
        .enqueue(NewJob::of(&Flaky {
            key: "plain".into(),
            failures: 0,
        }))
        .await
        .expect("enqueue");
    let started = Instant::now();
    assert!(
        queue
            .wait_for(&WaitTarget::Job(plain.id), Duration::from_secs(10))
            .await
            .expect("wait")
    );
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "{:?}",
        started.elapsed()
    );

    let slow = queue
        .enqueue(NewJob::of(&Slow { millis: 5_000 }))
        .await
        .expect("enqueue");
    let started = Instant::now();
    assert!(
        !queue
            .wait_for(&WaitTarget::Job(slow.id), Duration::from_millis(300))
            .await
            .expect("wait")
    );
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(2),
        "{took:?}"
    );
    runner.shutdown(Duration::ZERO).await;
}

async fn schedules_enqueue_each_slot_once_across_schedulers(b: Backend) {
    let mut schedulers = Vec::new();
    for _ in 0..3 {
        let queue = JobQueue::new(b.another_pool().await);
        let every_second = Schedule {
            name: "tick",
            cron: "* * * * * *".into(),
            job: record("tick", "", 0),
        };
        schedulers.push(
            schedule::start(queue, vec![every_second])
                .await
                .expect("start"),
        );
    }
    // Until three slots have come: the schedulers all fire at the start of each second.
    common::eventually_async(
        "3 slots of a schedule every second",
        Duration::from_secs(10),
        async || {
            let per_slot = jobs_per_slot(&b.queue()).await;
            if per_slot.len() >= 3 {
                Ok(())
            } else {
                Err(format!("{per_slot:?}"))
            }
        },
    )
    .await;
    for s in schedulers {
        s.shutdown().await;
    }
    let per_slot = jobs_per_slot(&b.queue()).await;
    assert!(per_slot.values().all(|n| *n == 1), "{per_slot:?}");
}

/// How many jobs each schedule slot enqueued.
async fn jobs_per_slot(queue: &JobQueue) -> HashMap<String, usize> {
    let jobs = queue
        .list(&JobFilter {
            limit: 1000,
            ..Default::default()
        })
        .await
        .expect("list");
    let mut per_slot: HashMap<String, usize> = HashMap::new();
    for job in &jobs {
        let key = job
            .unique_key
            .clone()
            .expect("scheduled jobs have slot keys");
        assert!(key.starts_with("schedule:tick:"), "{key}");
        *per_slot.entry(key).or_default() += 1;
    }
    per_slot
}

async fn priority_delay_pause_and_stats(b: Backend) {
    let queue = b.queue();
    let log = Log::default();
    queue
        .enqueue(record("order", "low", 0).priority(5))
        .await
        .expect("enqueue");
    queue
        .enqueue(record("order", "high", 0).priority(-5))
        .await
        .expect("enqueue");
    queue
        .enqueue(record("order", "normal", 0))
        .await
        .expect("enqueue");
    let later = queue
        .enqueue(record("later", "", 0).delay(Duration::from_millis(700)))
        .await
        .expect("enqueue");

    let stats = queue.stats().await.expect("stats");
    assert_eq!(stats.available(), 3);
    let scheduled: i64 = stats
        .rows
        .iter()
        .filter(|r| r.state == JobState::Scheduled)
        .map(|r| r.count)
        .sum();
    assert_eq!(scheduled, 1);

    queue.pause("default").await.expect("pause");
    let runner = b.runner(&log, 1).await;
    // Time passes, not a wait for a condition: a window in which the runner, which claims at
    // once what it may, must run nothing, and which ages the due jobs for `oldest_due` below.
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(log.events().len(), 0, "a paused queue ran jobs");
    assert_eq!(
        queue.stats().await.expect("stats").paused,
        vec!["default".to_owned()]
    );
    let stats = queue.stats().await.expect("stats");
    assert!(
        stats
            .oldest_due()
            .is_some_and(|age| age >= Duration::from_millis(300)),
        "{stats:?}"
    );
    let resumed_at = Instant::now();
    queue.resume("default").await.expect("resume");

    let later = wait_job(&queue, later.id).await;
    assert_eq!(later.state, JobState::Completed);
    // `later` (priority 0) may overtake `low` (priority 5) once due; wait for all four.
    common::eventually_async("all four jobs", Duration::from_secs(10), async || {
        let ran = log.events().len();
        if ran == 4 {
            Ok(())
        } else {
            Err(format!("{ran} ran"))
        }
    })
    .await;
    let order: Vec<String> = log
        .events()
        .iter()
        .filter(|e| e.key == "order")
        .map(|e| e.tag.clone())
        .collect();
    assert_eq!(order, ["high", "normal", "low"]);
    let later_event = log
        .events()
        .into_iter()
        .find(|e| e.key == "later")
        .expect("ran");
    assert!(later_event.started >= resumed_at, "ran while paused");
    runner.shutdown(Duration::from_secs(1)).await;
}

async fn enqueue_commits_with_the_callers_transaction(b: Backend) {
    let queue = b.queue();
    let mut tx = b.db.begin().await.expect("begin");
    let rolled_back = queue
        .enqueue_in(&mut tx, record("rb", "", 0))
        .await
        .expect("enqueue");
    tx.rollback().await.expect("rollback");
    assert!(queue.job(rolled_back.id).await.expect("read").is_none());

    let mut tx = b.db.begin().await.expect("begin");
    let committed = queue
        .enqueue_in(&mut tx, record("c", "", 0))
        .await
        .expect("enqueue");
    tx.commit().await.expect("commit");
    assert!(queue.job(committed.id).await.expect("read").is_some());
}

async fn bulk_enqueue_then_drain(b: Backend) {
    let queue = b.queue();
    let log = Log::default();
    let jobs: Vec<NewJob> = (0..3000)
        .map(|i| record("bulk", &i.to_string(), 0))
        .collect();
    assert_eq!(queue.enqueue_bulk(&jobs).await.expect("bulk"), 3000);
    // Unique keys in bulk: duplicates are skipped.
    let unique: Vec<NewJob> = (0..10)
        .map(|i| record("u", "", 0).unique_key(format!("k{}", i % 5)))
        .collect();
    assert_eq!(queue.enqueue_bulk(&unique).await.expect("bulk"), 5);
    let runner = b.runner(&log, 32).await;
    common::eventually_async("3005 jobs", Duration::from_secs(60), async || {
        let ran = log.events().len();
        if ran == 3005 {
            Ok(())
        } else {
            Err(format!("{ran} ran"))
        }
    })
    .await;
    runner.shutdown(Duration::from_secs(1)).await;
    let stats = queue.stats().await.expect("stats");
    assert_eq!(stats.available(), 0);
    assert_eq!(ran_once(&log, "bulk"), 3000, "every job ran exactly once");
}

/// A job that lets go of its unique key when it starts: enqueues coalesce into it while it is
/// queued, but one made while it runs is a new job (run after it, by the serialization key),
/// never swallowed by a run that may already have read its inputs.
async fn a_released_unique_key_coalesces_only_while_queued(b: Backend) {
    let queue = b.queue();
    let log = Log::default();
    let job = || {
        NewJob::of(&Coalesce { sleep_ms: 300 })
            .unique_key("catalog.refresh:t")
            .serial_key("catalog:t")
    };
    let first = queue.enqueue(job()).await.expect("enqueue");
    let again = queue.enqueue(job()).await.expect("enqueue");
    assert!(first.inserted);
    assert_eq!(
        (again.id, again.inserted),
        (first.id, false),
        "queued: one job"
    );

    let runner = b.runner(&log, 4).await;
    common::eventually_async(
        "the first run to release its key",
        Duration::from_secs(10),
        async || log.count("released") == 1,
    )
    .await;
    let second = queue.enqueue(job()).await.expect("enqueue");
    assert!(second.inserted, "running: a new job, not swallowed");
    assert_ne!(second.id, first.id);
    let third = queue.enqueue(job()).await.expect("enqueue");
    assert_eq!(
        (third.id, third.inserted),
        (second.id, false),
        "queued again: one job"
    );

    assert_eq!(wait_job(&queue, second.id).await.state, JobState::Completed);
    runner.shutdown(Duration::from_secs(1)).await;
    let runs: Vec<Event> = log
        .events()
        .into_iter()
        .filter(|e| e.key == "coalesced")
        .collect();
    assert_eq!(
        runs.iter().map(|e| e.tag.clone()).collect::<Vec<_>>(),
        vec![first.id.to_string(), second.id.to_string()]
    );
    assert!(runs[1].started >= runs[0].ended, "one at a time, in order");
}

/// A job completes by one of three statements: in a batch with the next claim, in a batch in
/// its own transaction (a serialization key to release), or alone (a result to store). Each
/// records the same completion, full progress included.
async fn every_way_of_completing_records_full_progress(b: Backend) {
    let queue = b.queue();
    let log = Log::default();
    let runner = b.runner(&log, 1).await;
    let flaky = |key: &str| {
        NewJob::of(&Flaky {
            key: key.into(),
            failures: 0,
        })
    };
    for (path, job) in [
        ("with the next claim", flaky("plain")),
        ("in its own transaction", flaky("keyed").serial_key("k")),
        ("alone, with its result", record("result", "", 0)),
    ] {
        let id = queue.enqueue(job).await.expect("enqueue").id;
        let done = wait_job(&queue, id).await;
        assert_eq!(done.state, JobState::Completed, "{path}: {done:?}");
        assert_eq!(done.progress, Some(100), "{path}: {done:?}");
    }
    runner.shutdown(Duration::from_secs(1)).await;
}

async fn pruning_deletes_old_finished_jobs_in_batches_and_keeps_the_rest(b: Backend) {
    let queue = b.queue();
    // More than two pruning batches of old finished jobs, then one job each that must stay: old
    // but dead (for a person to look at), finished but recent, and waiting.
    let old = 25_001;
    let jobs: Vec<NewJob> = (0..old + 3)
        .map(|i| record("p", &i.to_string(), 0))
        .collect();
    queue.enqueue_bulk(&jobs).await.expect("bulk");
    let now_ms = chrono::Utc::now().timestamp_millis();
    let two_hours_ago = now_ms - 2 * 3_600_000;
    let first = "(SELECT min(id) FROM jobs)";
    for (offset, state) in [(0, "completed"), (1, "discarded"), (2, "cancelled")] {
        execute(
            &b.db,
            &format!(
                "UPDATE jobs SET state = '{state}', finished_at = {two_hours_ago}
                 WHERE id < {first} + {old} AND (id - {first}) % 3 = {offset}"
            ),
        )
        .await;
    }
    execute(
        &b.db,
        &format!(
            "UPDATE jobs SET state = 'dead', finished_at = {two_hours_ago} WHERE id = {first} + {old}"
        ),
    )
    .await;
    execute(
        &b.db,
        &format!(
            "UPDATE jobs SET state = 'completed', finished_at = {now_ms} WHERE id = {first} + {old} + 1"
        ),
    )
    .await;

    let pruned = queue.prune(Duration::from_secs(3600)).await.expect("prune");
    assert_eq!(pruned, old as u64, "every old finished job, and no other");
    let left: Vec<JobState> = all_jobs(&queue, JobFilter::default())
        .await
        .into_iter()
        .map(|j| j.state)
        .collect();
    assert_eq!(
        left.len(),
        3,
        "the dead, the recent and the waiting job stay: {left:?}"
    );
    for state in [JobState::Dead, JobState::Completed, JobState::Available] {
        assert!(left.contains(&state), "{state:?} is kept: {left:?}");
    }
    assert_eq!(
        queue.prune(Duration::from_secs(3600)).await.expect("again"),
        0
    );
}

/// On PostgreSQL a worker vacuums the jobs table itself every `vacuum_every` jobs it claims
/// (`VACUUM_EVERY` unless configured, as here to keep the test short): a
/// claim leaves dead entries in the claim index that every later claim walks over until a
/// vacuum, and autovacuum may not come for a minute. (What it is worth is measured by
/// `scripts/bench-queue postgres scale`: the drain of a million waiting jobs.) SQLite updates in
/// place and has nothing to vacuum.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_worker_vacuums_the_jobs_table_as_it_claims() {
    if !common::need::postgres() {
        return;
    }
    let b = Backend::postgres().await;
    let Database::Postgres(pool) = &b.db else {
        unreachable!("a PostgreSQL backend")
    };
    let vacuums = async || -> i64 {
        sqlx::query_scalar("SELECT vacuum_count FROM pg_stat_user_tables WHERE relname = 'jobs'")
            .fetch_one(pool)
            .await
            .expect("read the table's statistics")
    };
    let queue = b.queue();
    // Fewer claims between vacuums than a worker's default (`VACUUM_EVERY`), so that the test
    // drains thousands of jobs, not tens of thousands.
    let every = 2_000;
    let n = every + 100;
    let jobs: Vec<NewJob> = (0..n).map(|i| record("v", &i.to_string(), 0)).collect();
    for chunk in jobs.chunks(10_000) {
        queue.enqueue_bulk(chunk).await.expect("bulk");
    }
    assert_eq!(vacuums().await, 0, "nothing vacuumed the table yet");
    let log = Log::default();
    let mut config = b.config(32);
    config.vacuum_every = u64::try_from(every).expect("a count");
    let runner = b.start(&log, b.db.clone(), config).await;
    common::eventually_async(
        "every job run and the table vacuumed",
        Duration::from_secs(60),
        async || {
            let (ran, vacuumed) = (log.count("v"), vacuums().await);
            if ran == n && vacuumed >= 1 {
                Ok(())
            } else {
                Err(format!("{ran} of {n} ran; {vacuumed} vacuums"))
            }
        },
    )
    .await;
    runner.shutdown(Duration::from_secs(1)).await;
}

/// The pump commits plain completions in its claim's statement when it has one connection (the
/// least `DATABASE_MAX_CONNECTIONS`), and in a statement of their own on a second connection
/// while the first claims when it has two. Either way every job runs once and ends completed,
/// with no lease left.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn completions_commit_with_the_claims_on_one_pump_connection_or_beside_them_on_two() {
    if !common::need::postgres() {
        return;
    }
    for connections in [1, 2] {
        let b = Backend::postgres().await;
        let Database::Postgres(pool) = &b.db else {
            unreachable!("a PostgreSQL backend")
        };
        let queue = b.queue();
        let n = 3_000;
        let jobs: Vec<NewJob> = (0..n).map(|i| plain("c", &i.to_string(), 0)).collect();
        queue.enqueue_bulk(&jobs).await.expect("bulk");
        let log = Log::default();
        let mut config = b.config(32);
        config.pump_connections = Some(connections);
        let runner = b.start(&log, b.db.clone(), config).await;
        plain_jobs_completed(pool, n, &format!("with {connections} pump connection(s)")).await;
        // A connection's last statement stays in `pg_stat_activity` while it idles: the
        // completions' own statement is there only when the pump had a second connection.
        let own_statement: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity
             WHERE datname = current_database()
               AND query LIKE '%SELECT completed, notified FROM counts'",
        )
        .fetch_one(pool)
        .await
        .expect("pg_stat_activity");
        assert_eq!(
            own_statement > 0,
            connections == 2,
            "with {connections} pump connection(s)"
        );
        runner.shutdown(Duration::from_secs(1)).await;
        assert_eq!(ran_once(&log, "c"), n as usize, "every job ran");
    }
}

/// The pump's completions connection cut alone (a pooler restarting it, an idle-connection
/// reaper) fails one turn's completions while that turn's claim goes through on the other. The
/// jobs it claimed still run, rather than stay leased to a worker that lives on, and the
/// completions commit on a fresh connection when the pump tries again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn jobs_claimed_beside_failed_completions_still_run() {
    if !common::need::postgres() {
        return;
    }
    let b = Backend::postgres().await;
    let Database::Postgres(pool) = &b.db else {
        unreachable!("a PostgreSQL backend")
    };
    let queue = b.queue();
    // 3,000 jobs of 50 ms on 32 executors: a drain of about five seconds to cut into.
    let n: i64 = 3_000;
    let jobs: Vec<NewJob> = (0..n).map(|i| plain("cut", &i.to_string(), 50)).collect();
    queue.enqueue_bulk(&jobs).await.expect("bulk");
    let log = Log::default();
    // A lease longer than the wait below: leases the worker held without running their jobs
    // go back only after a lease (`watch_leases`), so a claim dropped with its turn's failed
    // completions would leave jobs undone past the wait.
    let mut config = b.config(32);
    config.lease = Duration::from_secs(120);
    let runner = b.start(&log, b.db.clone(), config).await;
    common::eventually_async(
        "the completions connection, cut while jobs wait",
        Duration::from_secs(30),
        async || {
            let cut: Vec<bool> = sqlx::query_scalar(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                 WHERE datname = current_database() AND pid <> pg_backend_pid()
                   AND query LIKE '%SELECT completed, notified FROM counts'",
            )
            .fetch_all(pool)
            .await
            .expect("terminate");
            let (completed, _) = plain_jobs(pool).await;
            match (cut.as_slice(), completed < n) {
                ([true], true) => Ok(()),
                (_, false) => Err("every job completed before the cut".to_owned()),
                (cut, true) => Err(format!("{cut:?}: no completions connection yet")),
            }
        },
    )
    .await;
    plain_jobs_completed(pool, n, "after the cut").await;
    runner.shutdown(Duration::from_secs(1)).await;
    assert_eq!(ran_once(&log, "cut"), n as usize, "every job ran");
}
