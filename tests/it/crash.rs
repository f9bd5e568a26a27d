//! Crash recovery with real processes: `bindery worker` is SIGKILLed mid-job, mid-claim and
//! mid-commit, and the queue still ends with every job done exactly once.

use crate::common;

use std::time::{Duration, Instant};

use bindery::jobs::{Job, JobFilter, JobQueue, JobState, NewJob, WaitTarget};
use bindery::worker::builtin::{Noop, Sleep};
use common::shared::Shared;
use common::{Running, all_jobs, wait_job};
use nix::sys::signal::Signal;
use rand::Rng;

async fn a_worker_killed_mid_job_loses_nothing(shared: Shared) {
    let queue = shared.queue().await;
    let env = [("JOB_LEASE", "2s"), ("WORKER_CONCURRENCY", "1")];
    let mut first = shared.worker(&env);
    let job = queue
        .enqueue(NewJob::of(&Sleep { millis: 2500 }))
        .await
        .expect("enqueue");
    wait_started(&queue, job.id).await;
    first.signal(Signal::SIGKILL);
    first.wait_exit(Duration::from_secs(5));
    let killed_at = Instant::now();

    let second = shared.worker(&env);
    let done = wait_job(&queue, job.id).await;
    assert_eq!(done.state, JobState::Completed, "{done:?}");
    assert_eq!(done.attempt, 2, "run once, killed, run again: {done:?}");
    let result = done.result_json().expect("result");
    assert_eq!(
        result["worker_pid"],
        second.pid(),
        "completed by the second worker"
    );
    assert_eq!(result["attempt"], 2);
    let history = done.error_history();
    assert_eq!(history.len(), 1, "{history:?}");
    assert!(
        history[0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("lease expired")),
        "{history:?}"
    );
    // Reclaimed within one lease period (2 s) of the kill, plus the rescue tick and the rerun.
    let recovered = killed_at.elapsed();
    assert!(
        recovered < Duration::from_millis(2000 + 1000 + 2500 + 1500),
        "{recovered:?}"
    );
}

async fn a_long_job_keeps_its_lease_while_its_worker_lives(shared: Shared) {
    let queue = shared.queue().await;
    // A 1 s lease and a 4 s job: only the heartbeat keeps the job from being rescued.
    let _worker = shared.worker(&[("JOB_LEASE", "1s")]);
    let _other = shared.worker(&[("JOB_LEASE", "1s")]);
    let job = queue
        .enqueue(NewJob::of(&Sleep { millis: 4000 }))
        .await
        .expect("enqueue");
    let done = wait_job(&queue, job.id).await;
    assert_eq!(done.state, JobState::Completed);
    assert_eq!(
        done.attempt, 1,
        "a live worker's job was run twice: {done:?}"
    );
    assert!(done.error_history().is_empty());
}

/// A worker frozen (SIGSTOP) for three leases that comes back before another worker took its
/// job keeps it: the job is not charged a lost worker, runs once, and spends no attempt. (The
/// worker's own rescue, waking with its heartbeat, used to find its own leases expired and
/// rescue them from under itself.)
async fn a_frozen_worker_that_comes_back_keeps_its_jobs(shared: Shared) {
    let queue = shared.queue().await;
    let env = [("JOB_LEASE", "1s"), ("WORKER_CONCURRENCY", "1")];
    let worker = shared.worker(&env);
    let job = queue
        .enqueue(NewJob::of(&Sleep { millis: 2000 }))
        .await
        .expect("enqueue");
    wait_started(&queue, job.id).await;
    worker.signal(Signal::SIGSTOP);
    // The fault itself: the worker stands still past its lease, three times over.
    tokio::time::sleep(Duration::from_secs(3)).await;
    worker.signal(Signal::SIGCONT);
    let done = wait_job(&queue, job.id).await;
    assert_eq!(done.state, JobState::Completed, "{done:?}");
    assert_eq!(done.attempt, 1, "the job ran again: {done:?}");
    assert!(
        done.error_history().is_empty(),
        "the job was charged: {:?}",
        done.error_history()
    );
    let result = done.result_json().expect("result");
    assert_eq!(
        result["worker_pid"],
        worker.pid(),
        "completed by its worker"
    );
    assert!(
        worker
            .logs
            .find(|l| common::message(
                l,
                Some("worker"),
                "rescued jobs whose worker stopped heartbeating"
            ))
            .is_none(),
        "the worker rescued its own job"
    );
}

/// A worker frozen past its lease whose job another worker rescued meanwhile, and that then
/// comes back: it stops its own run of the job, which is no longer its, and takes back the
/// lost-worker charge the rescue made, since it did not die. The charge counts towards running
/// a job alone and then stopping it, as one that kills its workers; a paused machine is not
/// the job's doing.
async fn a_frozen_worker_whose_job_was_rescued_takes_back_the_charge(shared: Shared) {
    use bindery::storage::Database;

    let queue = shared.queue().await;
    let db = Database::connect(&shared.url, 2).await.expect("connect");
    let env = [("JOB_LEASE", "1s"), ("WORKER_CONCURRENCY", "1")];
    let frozen = shared.worker(&env);
    // Long enough to be running still when its first worker comes back: a run that ended
    // first would only find its completion refused.
    let job = queue
        .enqueue(NewJob::of(&Sleep { millis: 6000 }))
        .await
        .expect("enqueue");
    wait_started(&queue, job.id).await;
    frozen.signal(Signal::SIGSTOP);
    let other = shared.worker(&env);
    common::eventually_async(
        "the job rescued and running on the other worker",
        Duration::from_secs(15),
        async || {
            let record = queue.job(job.id).await.expect("read").expect("job");
            if record.state == JobState::Running && record.attempt == 2 {
                Ok(())
            } else {
                Err(format!("{record:?}"))
            }
        },
    )
    .await;
    assert_eq!(
        lost_workers(&db, job.id).await,
        1,
        "the rescue charged the lost worker"
    );
    frozen.signal(Signal::SIGCONT);
    frozen
        .logs
        .wait_for("the charge taken back", Duration::from_secs(10), |l| {
            common::message(
                l,
                Some("worker"),
                "this worker came back after its job was rescued",
            )
        });
    assert_eq!(
        lost_workers(&db, job.id).await,
        0,
        "the charge was taken back"
    );
    let done = wait_job(&queue, job.id).await;
    assert_eq!(done.state, JobState::Completed, "{done:?}");
    assert_eq!(done.attempt, 2, "{done:?}");
    let result = done.result_json().expect("result");
    assert_eq!(
        result["worker_pid"],
        other.pid(),
        "completed by the other worker"
    );
    assert_eq!(lost_workers(&db, job.id).await, 0);
}

async fn lost_workers(db: &bindery::storage::Database, id: i64) -> i32 {
    use bindery::storage::Database;
    let sql = "SELECT lost_workers FROM jobs WHERE id = $1";
    match db {
        Database::Sqlite(pool) => sqlx::query_scalar(sql).bind(id).fetch_one(pool).await,
        Database::Postgres(pool) => sqlx::query_scalar(sql).bind(id).fetch_one(pool).await,
    }
    .expect("read lost_workers")
}

/// A claim that committed but whose answer never reached the worker (the connection cut at
/// that moment): the database says the worker holds the job, and its heartbeat renews the
/// lease, but nothing runs it. The worker gives the lease back after a whole lease unused.
async fn a_claim_whose_answer_was_lost_is_given_back(shared: Shared) {
    use bindery::storage::Database;

    let queue = shared.queue().await;
    let db = Database::connect(&shared.url, 2).await.expect("connect");
    queue.pause(Noop::QUEUE).await.expect("pause");
    let worker = shared.worker(&[("JOB_LEASE", "1s")]);
    let job = queue.enqueue(NewJob::of(&Noop {})).await.expect("enqueue");
    // What the lost claim left: running, held by the live worker, with a lease it renews.
    let far = chrono::Utc::now().timestamp_millis() + 60_000;
    let claimed = common::execute(
        &db,
        &format!(
            "UPDATE jobs SET state = 'running', attempt = 1, locked_until = {far},
                    locked_by = (SELECT id FROM workers)
             WHERE id = {}",
            job.id
        ),
    )
    .await;
    assert_eq!(claimed, 1);
    queue.resume(Noop::QUEUE).await.expect("resume");
    let done = wait_job(&queue, job.id).await;
    assert_eq!(done.state, JobState::Completed, "{done:?}");
    assert_eq!(
        done.attempt, 1,
        "giving it back spends no attempt: {done:?}"
    );
    worker
        .logs
        .wait_for("the lease given back", Duration::from_secs(5), |l| {
            common::message(l, Some("worker"), "giving back leases this worker held")
        });
}

async fn kills_during_claims_and_commits_lose_and_duplicate_nothing(shared: Shared) {
    let _heavy = common::heavy();
    let queue = shared.queue().await;
    let total = 10_000;
    let jobs: Vec<NewJob> = (0..total).map(|_| NewJob::of(&Noop {})).collect();
    queue.enqueue_bulk(&jobs).await.expect("bulk");
    let env = [("JOB_LEASE", "1s"), ("WORKER_CONCURRENCY", "32")];
    let mut kills = 0;
    for _ in 0..8 {
        let mut worker = shared.worker(&env);
        let pause = rand::rng().random_range(20..150);
        // Time passes, not a wait for a condition: the kill falls at a random point of the run.
        tokio::time::sleep(Duration::from_millis(pause)).await;
        worker.signal(Signal::SIGKILL);
        worker.wait_exit(Duration::from_secs(5));
        kills += 1;
    }
    let _last = shared.worker(&env);
    common::eventually_async("no job left open", Duration::from_secs(60), async || {
        let stats = queue.stats().await.expect("stats");
        let open: i64 = stats
            .rows
            .iter()
            .filter(|r| r.state == JobState::Available || r.state == JobState::Running)
            .map(|r| r.count)
            .sum();
        if open == 0 {
            Ok(())
        } else {
            Err(format!("{stats:?}"))
        }
    })
    .await;
    for job in &all_jobs(&queue, JobFilter::default()).await {
        assert_eq!(job.state, JobState::Completed, "{job:?}");
    }
    // Counted by kind: the workers' schedules may add a job of their own (a cron slot that
    // falls within the run).
    let noop = JobFilter {
        kind: Some(Noop::NAME.to_owned()),
        ..JobFilter::default()
    };
    let jobs = all_jobs(&queue, noop).await;
    let completed = jobs.len();
    let retried = jobs.iter().filter(|j| j.attempt > 1).count();
    assert_eq!(completed, total, "every job completed, each exactly once");
    println!("{kills} SIGKILLs; {retried} of {total} jobs were caught mid-flight and run again");
}

async fn serialization_keys_hold_across_two_worker_processes(shared: Shared) {
    let queue = shared.queue().await;
    let env = [("WORKER_CONCURRENCY", "16")];
    let _one = shared.worker(&env);
    let _two = shared.worker(&env);
    let mut ids = Vec::new();
    for n in 0..12 {
        for key in ["book-a", "book-b"] {
            let job = NewJob::of(&Sleep { millis: 20 }).serial_key(key);
            ids.push((key, n, queue.enqueue(job).await.expect("enqueue").id));
        }
    }
    for (_, _, id) in &ids {
        assert!(
            queue
                .wait_for(&WaitTarget::Job(*id), Duration::from_secs(30))
                .await
                .expect("wait")
        );
    }
    let mut pids = std::collections::HashSet::new();
    for key in ["book-a", "book-b"] {
        let mut runs = Vec::new();
        for (k, _, id) in &ids {
            if *k == key {
                let job = queue.job(*id).await.expect("read").expect("job");
                assert_eq!(job.state, JobState::Completed);
                pids.insert(job.result_json().expect("result")["worker_pid"].clone());
                runs.push((
                    job.started_at.expect("started"),
                    job.finished_at.expect("finished"),
                ));
            }
        }
        // In enqueue order, each one starting after the previous one finished.
        for pair in runs.windows(2) {
            assert!(
                pair[1].0 >= pair[0].1,
                "{key}: overlapping or out of order: {runs:?}"
            );
        }
    }
    assert_eq!(pids.len(), 2, "both worker processes took part");
}

/// A job that takes its worker down every time (as a book that runs it out of memory would)
/// is stopped after a few lost workers, not retried once per attempt, each a restart.
async fn a_job_that_keeps_killing_its_worker_is_stopped_early(shared: Shared) {
    stopped_early(shared, "before_commit:bindery.noop").await;
}

/// An allocation that fails (what a worker under a memory limit does) counts as a kill does:
/// issue #40's one upload that took the service down three times, now stopped by the same rule.
async fn a_job_that_keeps_failing_its_workers_allocations_is_stopped_early(shared: Shared) {
    stopped_early(shared, "before_commit:bindery.noop:abort").await;
}

/// A job whose every run takes its worker down, by `failpoint`, is dead after
/// `MAX_LOST_WORKERS` workers, and another tenant's job queued beside it is not dragged along:
/// it shares at most the losses before the job became a suspect (which then runs alone), and
/// completes.
async fn stopped_early(shared: Shared, failpoint: &str) {
    let queue = shared.queue().await;
    let job = queue
        .enqueue(NewJob::of(&Noop {}).max_attempts(20))
        .await
        .expect("enqueue");
    let other = queue
        .enqueue(NewJob::of(&Sleep { millis: 300 }).tenant("another-press"))
        .await
        .expect("enqueue");
    // The failpoint fires once per process: every new worker dies on its first attempt.
    let env = [("JOB_LEASE", "1s"), ("BINDERY_FAILPOINT", failpoint)];
    // A worker rescues the job a lease after the last one died, then claims it and dies.
    let mut worker: Option<Running> = None;
    let mut started = 0;
    // How each worker that died ended.
    let mut deaths = Vec::new();
    let dead = common::eventually_async(
        "the job to stop, dead",
        Duration::from_secs(60),
        async || {
            let record = queue.job(job.id).await.expect("read").expect("job");
            if record.state == JobState::Dead {
                return Ok(record);
            }
            if worker
                .as_ref()
                .is_none_or(|w| common::process_gone(w.pid()))
            {
                if let Some(mut gone) = worker.take() {
                    deaths.push(gone.wait_exit(Duration::from_secs(5)).0);
                }
                assert!(
                    started <= bindery::jobs::MAX_LOST_WORKERS,
                    "{started} workers started: {record:?}"
                );
                // Not waiting for "worker ready": it may claim the job, and die, before saying so.
                worker = Some(shared.spawn_worker(&env));
                started += 1;
            }
            Err(format!("{record:?}"))
        },
    )
    .await;
    assert_eq!(
        dead.attempt,
        bindery::jobs::MAX_LOST_WORKERS,
        "stopped after that many lost workers, with attempts left: {dead:?}"
    );
    let history = dead.error_history();
    let last = history
        .last()
        .and_then(|e| e["error"].as_str())
        .unwrap_or("");
    assert!(
        last.contains("stopped") && last.contains("died or froze"),
        "the error says why it stopped: {history:?}"
    );
    // Each died as the failpoint says: SIGABRT after a failed allocation, or SIGKILL.
    let signal = if failpoint.ends_with(":abort") {
        nix::sys::signal::Signal::SIGABRT
    } else {
        nix::sys::signal::Signal::SIGKILL
    };
    assert!(!deaths.is_empty());
    for death in &deaths {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(death.signal(), Some(signal as i32), "{deaths:?}");
    }
    // A worker that lives (no job left to fire its failpoint) runs what is left.
    drop(worker);
    let _next = shared.worker(&env);
    let other = wait_job(&queue, other.id).await;
    assert_eq!(other.state, JobState::Completed, "{other:?}");
    let db = bindery::storage::Database::connect(&shared.url, 2)
        .await
        .expect("connect");
    assert!(
        lost_workers(&db, other.id).await < bindery::jobs::MAX_LOST_WORKERS,
        "the other tenant's job was dragged to its end: {other:?}"
    );
}

macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$name(super::Shared::sqlite()).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                if !crate::common::need::postgres() {
                    return;
                }
                super::$name(super::Shared::postgres()).await;
            }
        }
    )*};
}

on_both_backends!(
    a_worker_killed_mid_job_loses_nothing,
    a_long_job_keeps_its_lease_while_its_worker_lives,
    a_frozen_worker_that_comes_back_keeps_its_jobs,
    a_frozen_worker_whose_job_was_rescued_takes_back_the_charge,
    a_claim_whose_answer_was_lost_is_given_back,
    kills_during_claims_and_commits_lose_and_duplicate_nothing,
    serialization_keys_hold_across_two_worker_processes,
    a_job_that_keeps_killing_its_worker_is_stopped_early,
    a_job_that_keeps_failing_its_workers_allocations_is_stopped_early,
);

/// Waits until the job runs and has reported progress (its worker is inside it).
async fn wait_started(queue: &JobQueue, id: i64) {
    common::eventually_async("the job to start", Duration::from_secs(10), async || {
        let record = queue.job(id).await.expect("read").expect("job");
        if record.state == JobState::Running && record.progress.unwrap_or(0) > 0 {
            Ok(())
        } else {
            Err(format!("{record:?}"))
        }
    })
    .await;
}
