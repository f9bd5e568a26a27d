//! The producer: the pump, which commits what finished and claims what the executors will take
//! next, in one round trip where it can, and keeps claimed jobs in a local queue until an
//! executor is free. Its statements are the claim's (`claim`) and the completer's.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, watch};

use super::breaker::StorageBreaker;
use super::claim::{self, ClaimedRow};
use super::completer::{self, Finished};
use super::executor::spawn_job;
use super::shared::Shared;
use super::{failpoint, maintenance, records};
use crate::config::Moment;
use crate::storage::backoff::Backoff;
use crate::storage::{Database, KeptConnection};

/// The local queue holds at most this many jobs per executor. It only fills that far with jobs
/// short enough for the executors to get through that many in one round trip; measured on the
/// no-op PostgreSQL drain with 32 executors (jobs/s, medians of alternating runs): at most 1×
/// 25–37k, 2× 40–43k, 4× 44–47k, 8× 47–54k, 16× 42–57k, noisier. Four keeps the claims short.
const LOCAL_QUEUE_FACTOR: usize = 4;

/// A claimed job that has not started after this long goes back to the queue, for another
/// worker to take. Only when the mix changes (long jobs right behind a run of short ones) can
/// a job wait here that long.
const LOCAL_QUEUE_TTL: Duration = Duration::from_millis(500);

/// How soon a paused queue stops being claimed from.
pub const PAUSE_CHECK_INTERVAL: Duration = Duration::from_millis(100);

/// The claim/commit loop. Each turn it commits what has finished and claims for the executors
/// that will be free when the answer arrives, in one round trip where it can (plain
/// completions on PostgreSQL): in one statement, or in two at once on two connections (see
/// [`exchange`]).
///
/// While a statement is in flight, the jobs the previous one claimed start as executors free
/// up, so the database and the executors work at the same time instead of taking turns. For
/// that, a claim may take more jobs than there are free executors: as many as finished during
/// the previous round trip (at most `LOCAL_QUEUE_FACTOR` per executor). Short jobs so keep a
/// local queue and each statement carries several times the work; long jobs rarely finish
/// within a round trip, so they are claimed one free executor at a time and never wait here
/// while another worker is idle. Whatever waits here starts within about one round trip, so
/// it delays another tenant's job by no more than that. The local queue is kept in claim
/// order: a job claimed later that sorts earlier starts first.
pub(crate) async fn pump<C: Send + Sync + 'static>(
    shared: Arc<Shared<C>>,
    connection: KeptConnection,
    completions: Option<KeptConnection>,
    permits: Arc<Semaphore>,
    concurrency: usize,
    poll_interval: Duration,
    mut stop: watch::Receiver<bool>,
) {
    let mut pump = Pump::new(
        shared,
        connection,
        completions,
        permits,
        concurrency,
        poll_interval,
    );
    loop {
        let stopping = *stop.borrow();
        if stopping && pump.finished_tx.is_some() {
            // No new claims or starts; keep committing until every running job has reported.
            pump.finished_tx = None;
            pump.held.clear();
            pump.shared.give_back(pump.local.take_ids()).await;
        }
        pump.gather();
        pump.start_claimed().await;
        // The suspect this worker ran has ended: another may be claimed now.
        if pump.held_back_suspects && pump.batch.iter().any(|f| f.suspect) {
            pump.held_back_suspects = false;
            pump.idle = false;
        }
        let wanted = pump.wanted(stopping);
        // Nothing to do: wait for a finished job, a free executor, a wake-up or a stop.
        if pump.batch.is_empty() && wanted == 0 {
            if stopping {
                match pump.finished.recv().await {
                    Some(item) => pump.batch.push(item),
                    None => break,
                }
                continue;
            }
            pump.wait_for_work(&mut stop).await;
            continue;
        }
        if wanted > 0 {
            pump.read_paused_queues().await;
            pump.promote_due().await;
        }
        if !pump.commit_and_claim(wanted, &mut stop).await {
            continue;
        }
        // Let the jobs just spawned start (short ones finish) before counting free executors
        // again: bigger claims, fewer round trips.
        tokio::task::yield_now().await;
    }
}

/// What the pump keeps from one turn to the next.
struct Pump<C> {
    shared: Arc<Shared<C>>,
    /// The pump's statements go through it, but for completions on `completions`: its own
    /// connection on PostgreSQL (kept from one claim to the next), the shared pool on SQLite.
    /// See `Runner::start`.
    connection: KeptConnection,
    /// The pump's second PostgreSQL connection, where the budget gives it one: plain
    /// completions commit on it while the claim runs on the first (see [`exchange`]).
    completions: Option<KeptConnection>,
    permits: Arc<Semaphore>,
    concurrency: usize,
    poll_interval: Duration,
    /// How the jobs it started ended; the senders are the running jobs', and `finished_tx`,
    /// which it drops when stopping, so that the channel ends with the last of them.
    finished: mpsc::UnboundedReceiver<Finished>,
    finished_tx: Option<mpsc::UnboundedSender<Finished>>,
    /// The queues of the registered types, and those of them not paused.
    all_queues: Vec<String>,
    queues: Vec<String>,
    paused_checked: Option<Instant>,
    promoted: Option<Instant>,
    // While storage fails the pump, each of its statements waits (and logs) by the one rule:
    // a full disk once had it promote, fail and log every 20 ms.
    exchanges: Backoff,
    promotions: Backoff,
    pause_reads: Backoff,
    /// Finished jobs for the next statement, and those that finish while it is in flight.
    batch: Vec<Finished>,
    later: Vec<Finished>,
    /// Free executors this loop has reserved, and claimed jobs waiting for one.
    held: Vec<OwnedSemaphorePermit>,
    local: LocalQueue,
    prefetch: usize,
    idle: bool,
    /// Suspects were claimed beyond the one a worker runs at a time, and given back.
    held_back_suspects: bool,
    vacuums: maintenance::Vacuums,
}

impl<C: Send + Sync + 'static> Pump<C> {
    fn new(
        shared: Arc<Shared<C>>,
        connection: KeptConnection,
        completions: Option<KeptConnection>,
        permits: Arc<Semaphore>,
        concurrency: usize,
        poll_interval: Duration,
    ) -> Self {
        let (finished_tx, finished) = mpsc::unbounded_channel::<Finished>();
        let all_queues = shared.registry.queues();
        let vacuums = maintenance::Vacuums::every(shared.vacuum_every);
        Pump {
            queues: all_queues.clone(),
            all_queues,
            shared,
            connection,
            completions,
            permits,
            concurrency,
            poll_interval,
            finished,
            finished_tx: Some(finished_tx),
            paused_checked: None,
            promoted: None,
            exchanges: Backoff::new("committing or claiming jobs"),
            promotions: Backoff::new("promoting due jobs"),
            pause_reads: Backoff::new("reading paused queues"),
            batch: Vec::new(),
            later: Vec::new(),
            held: Vec::new(),
            local: LocalQueue::default(),
            prefetch: 0,
            idle: false,
            held_back_suspects: false,
            vacuums,
        }
    }

    /// Takes what finished into the batch, without waiting.
    fn gather(&mut self) {
        while self.batch.len() < 2048 {
            match self.finished.try_recv() {
                Ok(item) => self.batch.push(item),
                Err(_) => break,
            }
        }
    }

    /// Starts claimed jobs on free executors, reserves the executors still free (unless idle),
    /// and gives back the claimed jobs that waited too long. Nothing when stopping.
    async fn start_claimed(&mut self) {
        let Some(tx) = &self.finished_tx else {
            return;
        };
        while !self.local.is_empty() {
            let permit = match self.held.pop() {
                Some(p) => p,
                None => match self.permits.clone().try_acquire_owned() {
                    Ok(p) => p,
                    Err(_) => break,
                },
            };
            if let Some((row, waited)) = self.local.pop() {
                spawn_job(&self.shared, row, waited, permit, tx.clone());
            }
        }
        if !self.idle {
            while self.held.len() < self.concurrency {
                match self.permits.clone().try_acquire_owned() {
                    Ok(p) => self.held.push(p),
                    Err(_) => break,
                }
            }
        }
        let stale = self.local.take_expired(LOCAL_QUEUE_TTL);
        if !stale.is_empty() {
            tracing::debug!(
                jobs = stale.len(),
                "claimed jobs waited too long for an executor"
            );
            self.shared.give_back(stale).await;
            // These jobs are not short: claim for free executors only until they are again.
            self.prefetch = 0;
        }
    }

    /// How many jobs to claim this turn.
    fn wanted(&self, stopping: bool) -> usize {
        if stopping || self.idle {
            return 0;
        }
        let free = (self.held.len() + self.prefetch).saturating_sub(self.local.len());
        // While the pump's own statements fail, they are the probe: the first that goes
        // through claims as usual, and the heartbeat (which waits for a commit) resumes.
        if self.shared.commits.failing_for().is_some() {
            free
        } else {
            self.shared.storage.allow(free)
        }
    }

    /// Waits for a finished job, a free executor, a wake-up, the next due job or a stop.
    async fn wait_for_work(&mut self, stop: &mut watch::Receiver<bool>) {
        let nap = if self.idle {
            // A job that is due but could not be promoted is not due before promotion may
            // be tried again.
            next_nap(self.connection.pool(), self.poll_interval)
                .await
                .max(self.promotions.wait())
        } else {
            self.poll_interval
        };
        tokio::select! {
            item = self.finished.recv() => {
                if let Some(item) = item {
                    self.batch.push(item);
                }
            }
            permit = self.permits.clone().acquire_owned(), if !self.idle || !self.local.is_empty() => {
                if let Ok(p) = permit {
                    self.held.push(p);
                }
            }
            () = self.shared.wake.notified(), if self.idle => self.idle = false,
            () = tokio::time::sleep(nap), if self.idle => self.idle = false,
            () = tokio::time::sleep_until(self.local.expires(LOCAL_QUEUE_TTL)), if !self.local.is_empty() => {}
            () = sleep_until_probe(&self.shared.storage), if self.shared.storage.next_probe().is_some() => {}
            _ = stop.changed() => {}
        }
    }

    /// Paused queues are read at most every 100 ms (a pause takes effect within that):
    /// checking them inside every claim statement costs PostgreSQL several percent.
    async fn read_paused_queues(&mut self) {
        if self
            .paused_checked
            .is_some_and(|t| t.elapsed() < PAUSE_CHECK_INTERVAL)
            || !self.pause_reads.ready()
        {
            return;
        }
        self.paused_checked = Some(Instant::now());
        match records::paused_queues(self.connection.pool()).await {
            Ok(paused) => {
                self.pause_reads.succeeded();
                self.queues = self
                    .all_queues
                    .iter()
                    .filter(|q| !paused.contains(q))
                    .cloned()
                    .collect();
            }
            Err(e) => {
                self.pause_reads.failed(&e.into());
            }
        }
    }

    /// Scheduled jobs whose time has come join the claimable set; at most every 20 ms, so a
    /// busy loop does not pay for it on every claim.
    async fn promote_due(&mut self) {
        if self
            .promoted
            .is_some_and(|t| t.elapsed() < Duration::from_millis(20))
            || !self.promotions.ready()
        {
            return;
        }
        self.promoted = Some(Instant::now());
        match maintenance::promote_due(self.connection.pool()).await {
            Ok(_) => self.promotions.succeeded(),
            Err(e) => {
                self.promotions.failed(&e.into());
            }
        }
    }

    /// Commits the batch and claims up to `wanted` jobs, starting claimed jobs meanwhile.
    /// False when the statement failed (after a pause).
    async fn commit_and_claim(&mut self, wanted: usize, stop: &mut watch::Receiver<bool>) -> bool {
        let mut finished_in_flight = 0usize;
        // A suspect may be claimed only while this worker holds none (see
        // `claim::claim_and_complete`).
        let suspects =
            !self.local.has_suspect() && !self.shared.running().values().any(|j| j.suspect);
        let exchanged = {
            let statement = exchange(
                &self.shared,
                &mut self.connection,
                self.completions.as_mut(),
                &self.queues,
                &self.batch,
                wanted,
                suspects,
            );
            tokio::pin!(statement);
            loop {
                tokio::select! {
                    biased;
                    exchanged = &mut statement => break exchanged,
                    Some(item) = self.finished.recv() => {
                        self.later.push(item);
                        finished_in_flight += 1;
                    }
                    permit = self.permits.clone().acquire_owned(), if !self.local.is_empty() && self.finished_tx.is_some() => {
                        if let (Ok(permit), Some(tx), Some((row, waited))) = (permit, &self.finished_tx, self.local.pop()) {
                            spawn_job(&self.shared, row, waited, permit, tx.clone());
                        }
                    }
                }
            }
        };
        if exchanged.committed {
            self.batch.clear();
        }
        self.batch.append(&mut self.later);
        // Jobs claimed are leased to this worker, even when the turn's completions failed.
        if let Some(rows) = exchanged.claimed {
            self.vacuums.claimed(&self.shared.db, rows.len());
            let (rows, over) = self.shared.admission().admit(rows);
            self.shared
                .give_back(over.iter().map(|r| r.id).collect())
                .await;
            let (rows, extra_suspects) = one_suspect(rows, suspects);
            let got = rows.len();
            self.local.extend(rows);
            // Fewer than asked for: nothing more is due, so wait for a wake-up before
            // claiming again, and claim only for free executors then: the next jobs may
            // not be as short as the last. Suspects given back are still due, but wait for
            // the one kept: its end wakes the pump (in `pump`).
            self.idle = wanted > 0 && got < wanted;
            self.held_back_suspects |= !extra_suspects.is_empty();
            self.shared.give_back(extra_suspects).await;
            self.prefetch = if self.idle {
                0
            } else {
                finished_in_flight.min(self.concurrency * LOCAL_QUEUE_FACTOR)
            };
        }
        match exchanged.failure {
            None => {
                self.exchanges.succeeded();
                self.shared.commits.succeeded();
                true
            }
            Some(e) => {
                // Finished jobs keep their leases while we retry; if the database stays away
                // longer than a lease, they are rescued and run again (at least once).
                self.shared.commits.failed();
                let pause = self.exchanges.failed(&e.into());
                self.held.clear();
                tokio::select! {
                    () = tokio::time::sleep(pause) => {}
                    _ = stop.changed() => {}
                }
                false
            }
        }
    }
}

/// Until the storage breaker lets the next probe be claimed.
async fn sleep_until_probe(breaker: &StorageBreaker) {
    if let Some(next) = breaker.next_probe() {
        tokio::time::sleep_until(next.into()).await;
    }
}

/// What one turn's statements did: one statement, or two at once on two connections, or a
/// transaction for successors and failures and then a claim.
struct Exchanged {
    /// The batch of finished jobs is committed; it is not sent again.
    committed: bool,
    /// The jobs claimed and leased to this worker; `None` when the claim failed.
    claimed: Option<Vec<ClaimedRow>>,
    /// What failed: the turn is tried again after a pause.
    failure: Option<sqlx::Error>,
}

impl Exchanged {
    fn claimed(committed: bool, claimed: sqlx::Result<Vec<ClaimedRow>>) -> Self {
        match claimed {
            Ok(rows) => Exchanged {
                committed,
                claimed: Some(rows),
                failure: None,
            },
            Err(e) => Exchanged {
                committed,
                claimed: None,
                failure: Some(e),
            },
        }
    }
}

/// Commits `batch` and claims up to `wanted` jobs.
///
/// Plain completions commit in the claim's statement, so that one round trip and one commit
/// serve both; with a second connection, in a statement of their own on it while the claim
/// runs on the first. The server then runs the two at once, on two processes, and the pump
/// waits for the longer, not for both: on the no-op drain, 1.15× the jobs a second (medians of
/// 16 alternating rounds), for about a sixth more PostgreSQL CPU a job.
// One parameter per part of the statements it runs.
#[allow(clippy::too_many_arguments)]
async fn exchange<C>(
    shared: &Shared<C>,
    connection: &mut KeptConnection,
    completions: Option<&mut KeptConnection>,
    queues: &[String],
    batch: &[Finished],
    wanted: usize,
    suspects: bool,
) -> Exchanged {
    let room = shared.admission().room();
    // The claim, committing `complete` in the same statement.
    let claim = async |connection: &mut KeptConnection, complete: &[i64], waited_ms: &[i64]| {
        claim::claim_and_complete(
            connection,
            &shared.worker,
            queues,
            complete,
            waited_ms,
            wanted,
            shared.lease_ms,
            &room,
            suspects,
        )
        .await
    };
    if !batch.is_empty() && !batch.iter().all(Finished::is_plain) {
        // Successors, joins, failures: their own transaction, then claim.
        match completer::finish_batch(connection.pool(), &shared.worker, batch).await {
            Ok(accepted) => {
                report_dropped(batch, accepted.len());
                after_commit(shared, batch);
                // Successors may be due now.
                shared.wake.notify_one();
            }
            Err(e) => return Exchanged::claimed(false, Err(e)),
        }
        let claimed = if wanted > 0 {
            claim(connection, &[], &[]).await.map(|(rows, _)| rows)
        } else {
            Ok(Vec::new())
        };
        return Exchanged::claimed(true, claimed);
    }
    let ids: Vec<i64> = batch.iter().map(|f| f.id).collect();
    let waited_ms: Vec<i64> = batch.iter().map(|f| f.waited_ms).collect();
    if let Some(completions) = completions.filter(|_| !ids.is_empty() && wanted > 0) {
        let (completed, claimed) = tokio::join!(
            completer::complete_batch(completions, &shared.worker, &ids, &waited_ms),
            claim(connection, &[], &[]),
        );
        let claimed = claimed.map(|(rows, _)| rows);
        return match completed {
            Ok(accepted) => {
                report_dropped(batch, accepted);
                after_commit(shared, batch);
                Exchanged::claimed(true, claimed)
            }
            Err(e) => Exchanged {
                committed: false,
                claimed: claimed.ok(),
                failure: Some(e),
            },
        };
    }
    match claim(connection, &ids, &waited_ms).await {
        Ok((rows, completed)) => {
            report_dropped(batch, completed);
            after_commit(shared, batch);
            Exchanged::claimed(true, Ok(rows))
        }
        Err(e) => Exchanged::claimed(false, Err(e)),
    }
}

/// The claimed rows, with at most one suspect (the first in claim order) and none unless
/// `allowed`; and the ids of the suspects left out, to give back.
fn one_suspect(rows: Vec<ClaimedRow>, allowed: bool) -> (Vec<ClaimedRow>, Vec<i64>) {
    let mut room = usize::from(allowed);
    let mut extra = Vec::new();
    let mut kept = Vec::with_capacity(rows.len());
    // Rows come in claim order (see `claim_and_complete`).
    for row in rows {
        if !row.suspect() {
            kept.push(row);
        } else if room > 0 {
            room -= 1;
            kept.push(row);
        } else {
            extra.push(row.id);
        }
    }
    (kept, extra)
}

/// Claimed jobs waiting for an executor, smallest (priority, fair_tag, id) first.
#[derive(Default)]
struct LocalQueue(Vec<(ClaimedRow, Instant)>);

impl LocalQueue {
    fn extend(&mut self, rows: Vec<ClaimedRow>) {
        let now = Instant::now();
        self.0.extend(rows.into_iter().map(|r| (r, now)));
        // Largest first, so `pop` takes the smallest.
        self.0
            .sort_unstable_by_key(|(r, _)| std::cmp::Reverse((r.priority, r.fair_tag, r.id)));
    }

    /// The next job, and how long it waited here.
    fn pop(&mut self) -> Option<(ClaimedRow, Duration)> {
        self.0.pop().map(|(r, at)| (r, at.elapsed()))
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn has_suspect(&self) -> bool {
        self.0.iter().any(|(r, _)| r.suspect())
    }

    fn take_ids(&mut self) -> Vec<i64> {
        self.0.drain(..).map(|(r, _)| r.id).collect()
    }

    /// When the oldest job here has waited `ttl`.
    fn expires(&self, ttl: Duration) -> tokio::time::Instant {
        let oldest = self
            .0
            .iter()
            .map(|(_, at)| *at)
            .min()
            .unwrap_or_else(Instant::now);
        tokio::time::Instant::from_std(oldest + ttl)
    }

    /// Removes the jobs that have waited `ttl` or longer.
    fn take_expired(&mut self, ttl: Duration) -> Vec<i64> {
        let mut expired = Vec::new();
        self.0.retain(|(r, at)| {
            let keep = at.elapsed() < ttl;
            if !keep {
                expired.push(r.id);
            }
            keep
        });
        expired
    }
}

fn after_commit<C>(shared: &Shared<C>, batch: &[Finished]) {
    if let Some(failpoint) = &shared.failpoint {
        for finished in batch {
            failpoint::check(failpoint, Moment::AfterCommit, &finished.kind);
        }
    }
}

fn report_dropped(batch: &[Finished], accepted: usize) {
    if accepted < batch.len() {
        tracing::warn!(
            dropped = batch.len() - accepted,
            "some jobs were cancelled or taken from this worker before they finished; their results are dropped"
        );
    }
}

/// Until the next scheduled job is due, within the fallback poll interval.
async fn next_nap(db: &Database, poll_interval: Duration) -> Duration {
    match maintenance::next_due_in_ms(db).await {
        Ok(Some(ms)) => Duration::from_millis(u64::try_from(ms).unwrap_or(0))
            .clamp(Duration::from_millis(5), poll_interval),
        _ => poll_interval,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::claim::SUSPECT_LOST_WORKERS;

    fn row(attempt: i32, max_attempts: i32) -> ClaimedRow {
        ClaimedRow {
            id: 1,
            kind: "k".into(),
            payload: "{}".into(),
            queue: "default".into(),
            tenant: String::new(),
            attempt,
            max_attempts,
            workflow: None,
            join_id: None,
            serial_key: None,
            priority: 0,
            fair_tag: 0,
            cost: 0,
            lost_workers: 0,
        }
    }

    #[test]
    fn a_claim_keeps_at_most_one_suspect_and_none_when_one_runs() {
        let job = |id: i64, lost_workers: i32| ClaimedRow {
            id,
            lost_workers,
            ..row(1, 3)
        };
        let last = SUSPECT_LOST_WORKERS;
        let claimed = || vec![job(1, 0), job(2, last), job(3, last - 1), job(4, last + 1)];
        let ids = |rows: &[ClaimedRow]| rows.iter().map(|r| r.id).collect::<Vec<_>>();
        let (kept, back) = one_suspect(claimed(), true);
        assert_eq!((ids(&kept), back), (vec![1, 2, 3], vec![4]));
        let (kept, back) = one_suspect(claimed(), false);
        assert_eq!((ids(&kept), back), (vec![1, 3], vec![2, 4]));
    }

    #[test]
    fn a_job_claimed_later_that_sorts_earlier_starts_first() {
        let tagged = |id: i64, tenant: &str, fair_tag: i64| ClaimedRow {
            id,
            tenant: tenant.into(),
            fair_tag,
            ..row(1, 3)
        };
        let mut local = LocalQueue::default();
        local.extend(vec![
            tagged(10, "big", 5),
            tagged(11, "big", 6),
            tagged(12, "big", 7),
        ]);
        assert_eq!(local.pop().map(|(r, _)| r.id), Some(10));
        // Another tenant's job, tagged at the queue's front when it was enqueued.
        local.extend(vec![tagged(40, "small", 6)]);
        let order: Vec<i64> = std::iter::from_fn(|| local.pop())
            .map(|(r, _)| r.id)
            .collect();
        assert_eq!(order, vec![11, 40, 12]);
    }
}
