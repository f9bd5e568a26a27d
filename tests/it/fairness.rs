//! Fairness across worker processes: one tenant's backlog of 2,000 books' steps holds up another
//! tenant's book no longer with three `bindery worker` processes on one PostgreSQL than with
//! one. Claims take jobs in (priority, fair tag, id) order in every process, and a new tenant's
//! first job sorts before the backlog's, so the next claim by any of them takes it.

use crate::common;

use std::io::Write;
use std::time::{Duration, Instant};

use bindery::jobs::{JobFilter, JobQueue, JobState, NewJob};
use bindery::worker::builtin::Sleep;
use common::books::{open, submit_as};
use common::shared::Shared;
use common::{all_jobs, need};

const BACKLOG: usize = 2000;
/// Each backlog step takes this long: the backlog lasts seconds even with 48 executors.
const STEP_MS: u64 = 100;
const CONCURRENCY: usize = 16;
/// How long the other tenant's first step may wait, whatever the number of processes.
const BOUND_MS: i64 = 1000;

/// How long the other tenant's book waited for its first step, and how many backlog steps
/// were claimed meanwhile.
struct Waited {
    ms: i64,
    overtaken: usize,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_tenants_book_starts_as_soon_behind_a_backlog_with_three_workers_as_with_one() {
    if !need::postgres() {
        return;
    }
    let _heavy = common::heavy();
    let one = behind_a_backlog(1).await;
    let three = behind_a_backlog(3).await;
    let _ = writeln!(
        std::io::stderr(),
        "fairness across processes: behind {BACKLOG} steps of another tenant ({STEP_MS} ms each, {CONCURRENCY} executors a process), a book's first step waited {} ms with 1 worker process ({} steps went first) and {} ms with 3 ({} went first)",
        one.ms,
        one.overtaken,
        three.ms,
        three.overtaken
    );
    for (processes, waited) in [(1, &one), (3, &three)] {
        assert!(
            waited.ms < BOUND_MS,
            "with {processes} worker processes the book waited {} ms",
            waited.ms
        );
        // At most one step per executor may go first: those whose executors freed up before the
        // book's first chance.
        assert!(
            waited.overtaken <= processes * CONCURRENCY,
            "with {processes} worker processes {} backlog steps went first",
            waited.overtaken
        );
    }
}

async fn behind_a_backlog(processes: usize) -> Waited {
    let shared = Shared::postgres();
    let queue = shared.queue().await;
    let backlog: Vec<NewJob> = (0..BACKLOG)
        .map(|_| {
            NewJob::of(&Sleep { millis: STEP_MS })
                .tenant("big-press")
                .queue("books")
        })
        .collect();
    queue.enqueue_bulk(&backlog).await.expect("the backlog");
    let concurrency = CONCURRENCY.to_string();
    let _workers: Vec<_> = (0..processes)
        .map(|_| shared.worker(&[("WORKER_CONCURRENCY", &concurrency)]))
        .collect();
    // Every process busy with the backlog before the book arrives.
    let started = Instant::now();
    common::eventually_async(
        "the backlog to start",
        Duration::from_secs(20),
        async || {
            if started_steps(&queue).await >= processes * CONCURRENCY * 2 {
                Ok(())
            } else {
                Err(format!("{:?}", queue.stats().await.expect("stats").rows))
            }
        },
    )
    .await;

    let store = open(shared.data.path(), Some(&shared.env_url)).await;
    let manuscript = b"# One\n\nA small book from another tenant.\n".to_vec();
    let id = submit_as(&store, "indie-author", "small.md", manuscript, None).await;
    let first = common::eventually_async(
        "the book's first step to start",
        Duration::from_secs(60).saturating_sub(started.elapsed()),
        async || {
            let jobs = queue.workflow(&id).await.expect("workflow").jobs;
            jobs.iter().find(|j| j.started_at.is_some()).cloned()
        },
    )
    .await;
    assert!(
        started_steps(&queue).await < BACKLOG,
        "the backlog was over before the book's step started: the test measured nothing"
    );
    // By the database's own clock: when the step was inserted and claimed, and which backlog
    // steps were claimed in between.
    let (inserted, claimed) = (first.created_at, first.started_at.expect("started"));
    let overtaken = backlog_jobs(&queue)
        .await
        .iter()
        .filter(|j| j.started_at.is_some_and(|s| s > inserted && s < claimed))
        .count();
    Waited {
        ms: claimed - inserted,
        overtaken,
    }
}

async fn backlog_jobs(queue: &JobQueue) -> Vec<bindery::jobs::JobRecord> {
    all_jobs(
        queue,
        JobFilter {
            tenant: Some("big-press".into()),
            ..Default::default()
        },
    )
    .await
}

/// Backlog steps claimed so far (running or done): the backlog less what still waits.
async fn started_steps(queue: &JobQueue) -> usize {
    let stats = queue.stats().await.expect("stats");
    let waiting: i64 = stats
        .rows
        .iter()
        .filter(|r| r.queue == "books" && r.state == JobState::Available)
        .map(|r| r.count)
        .sum();
    BACKLOG.saturating_sub(usize::try_from(waiting).unwrap_or(0))
}
