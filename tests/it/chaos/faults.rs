//! The faults, each kind on a thread of its own so that they overlap as they would in
//! production: workers and web processes killed at random and started again, a worker stopped
//! (SIGSTOP) past its lease and let go, PostgreSQL restarted with `-m immediate`, and Azurite
//! stopped for a while.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use super::fleet::{self, Fleet, Role};
use super::services::{Azurite, Postgres};
use crate::common;

/// When each fault happens, as offsets from the start of the faulty phase.
#[derive(Clone, Debug)]
pub struct Schedule {
    pub length: Duration,
    /// A random worker is killed every so often (a uniform draw from this range), and started
    /// again 1 s later.
    pub worker_kills: (Duration, Duration),
    /// A web process is killed every so often, and started again at once: one in the middle of
    /// an upload when one comes within 2 s, else a random one.
    pub web_kills: (Duration, Duration),
    pub postgres_restarts: Vec<Duration>,
    pub postgres_down: Duration,
    pub azurite_stop: Duration,
    pub azurite_down: Duration,
    /// A worker is stopped with SIGSTOP here, for twice the lease.
    pub worker_stop: Duration,
    pub lease: Duration,
}

/// What was done, and how the service came back.
#[derive(Debug, Default)]
pub struct Record {
    pub worker_kills: usize,
    pub web_kills: usize,
    /// Of them, those that came while an upload to that process was under way.
    pub web_kills_mid_upload: usize,
    pub worker_stops: usize,
    pub azurite_stops: usize,
    /// For each PostgreSQL restart: how long after it accepted connections again every web
    /// process was ready, and a job enqueued then had been completed.
    pub postgres_recoveries: Vec<Recovery>,
    /// When the last fault ended.
    pub last_fault_ended: Option<Instant>,
    /// Processes found exited when a fault came to kill them.
    pub unexpected_exits: Vec<String>,
}

impl Record {
    fn ended(&mut self) {
        self.last_fault_ended = Some(Instant::now());
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Recovery {
    pub ready: Duration,
    pub job_done: Duration,
}

/// Runs the schedule to its end; the faults that hold something (a stopped server or process)
/// give it back before this returns.
pub fn inject(
    schedule: &Schedule,
    fleet: &Arc<Mutex<Fleet>>,
    postgres: &Postgres,
    azurite: &mut Azurite,
    database_url: &str,
    uploading: &(dyn Fn(u16) -> bool + Sync),
    seed: u64,
) -> Record {
    let record = Arc::new(Mutex::new(Record::default()));
    let started = Instant::now();
    let until = started + schedule.length;
    // Each thread sleeps until its fault is due and holds it as long as the schedule says: these
    // sleeps let time pass for the faults under test, none waits for a condition.
    std::thread::scope(|scope| {
        scope.spawn(|| kill_workers(schedule, fleet, &record, until, seed));
        scope.spawn(|| kill_webs(schedule, fleet, &record, until, uploading, seed ^ 0x5eed));
        scope.spawn(|| {
            let at = started + schedule.worker_stop;
            std::thread::sleep(at.saturating_duration_since(Instant::now()));
            stop_a_worker(schedule, fleet, &record, seed);
        });
        scope.spawn(|| {
            let at = started + schedule.azurite_stop;
            std::thread::sleep(at.saturating_duration_since(Instant::now()));
            fleet.lock().expect("fleet").journal("Azurite stopped");
            azurite.stop();
            std::thread::sleep(schedule.azurite_down);
            azurite.resume();
            fleet.lock().expect("fleet").journal("Azurite resumed");
            let mut r = record.lock().expect("record");
            r.azurite_stops += 1;
            r.ended();
        });
        for offset in &schedule.postgres_restarts {
            let at = started + *offset;
            std::thread::sleep(at.saturating_duration_since(Instant::now()));
            fleet
                .lock()
                .expect("fleet")
                .journal("PostgreSQL restarting (-m immediate)");
            postgres.restart_immediate(schedule.postgres_down);
            let back = Instant::now();
            fleet
                .lock()
                .expect("fleet")
                .journal("PostgreSQL accepts connections again");
            record.lock().expect("record").ended();
            let recovered = recovery(fleet, database_url, back);
            record
                .lock()
                .expect("record")
                .postgres_recoveries
                .push(recovered);
        }
    });
    Arc::try_unwrap(record)
        .expect("the fault threads have ended")
        .into_inner()
        .expect("record")
}

fn between(rng: &mut StdRng, (low, high): (Duration, Duration)) -> Duration {
    low + (high - low).mul_f64(rng.random::<f64>())
}

/// SIGKILL, noting a process that had already exited by itself.
fn kill(fleet: &mut Fleet, victim: usize, record: &Mutex<Record>) {
    if let Some(status) = fleet.kill(victim) {
        let name = fleet.processes[victim].name();
        record
            .lock()
            .expect("record")
            .unexpected_exits
            .push(format!("{name} had exited: {status}"));
    }
}

fn kill_workers(
    schedule: &Schedule,
    fleet: &Mutex<Fleet>,
    record: &Mutex<Record>,
    until: Instant,
    seed: u64,
) {
    let mut rng = StdRng::seed_from_u64(seed);
    loop {
        // Time passes until the next kill is due.
        std::thread::sleep(between(&mut rng, schedule.worker_kills));
        if Instant::now() >= until {
            return;
        }
        let victim = {
            let mut fleet = fleet.lock().expect("fleet");
            let free: Vec<usize> = fleet
                .of(Role::Worker)
                .into_iter()
                .filter(|&i| !fleet.processes[i].held)
                .collect();
            let victim = free[rng.random_range(..free.len())];
            kill(&mut fleet, victim, record);
            victim
        };
        // Time passes, not a wait for a condition: the killed worker stays down a second.
        std::thread::sleep(Duration::from_secs(1));
        fleet.lock().expect("fleet").start(victim);
        let mut r = record.lock().expect("record");
        r.worker_kills += 1;
        r.ended();
    }
}

fn kill_webs(
    schedule: &Schedule,
    fleet: &Mutex<Fleet>,
    record: &Mutex<Record>,
    until: Instant,
    uploading: &(dyn Fn(u16) -> bool + Sync),
    seed: u64,
) {
    let mut rng = StdRng::seed_from_u64(seed);
    loop {
        // Time passes until the next kill is due.
        std::thread::sleep(between(&mut rng, schedule.web_kills));
        if Instant::now() >= until {
            return;
        }
        let ports = fleet.lock().expect("fleet").web_ports();
        // A web process in the middle of an upload, if one comes within 2 s (else any): checked
        // every millisecond, for an upload is short.
        let busy = common::within(Duration::from_secs(2), Duration::from_millis(1), || {
            ports.iter().copied().find(|&p| uploading(p))
        })
        .ok();
        if busy.is_some() {
            // Time passes, not a wait for a condition: somewhere in the upload, before its
            // files are stored, between them and its book, or after the book and before the
            // answer.
            std::thread::sleep(Duration::from_millis(rng.random_range(0..100)));
        }
        let mut fleet = fleet.lock().expect("fleet");
        let webs = fleet.of(Role::Web);
        let victim = busy
            .and_then(|port| {
                webs.iter()
                    .copied()
                    .find(|&i| fleet.processes[i].port == Some(port))
            })
            .unwrap_or_else(|| webs[rng.random_range(..webs.len())]);
        kill(&mut fleet, victim, record);
        fleet.start(victim);
        drop(fleet);
        let mut r = record.lock().expect("record");
        r.web_kills += 1;
        if busy.is_some() {
            r.web_kills_mid_upload += 1;
        }
        r.ended();
    }
}

/// SIGSTOP a worker for twice the lease: its jobs are rescued by the others meanwhile, and when
/// it runs again it must not overwrite what they did.
fn stop_a_worker(schedule: &Schedule, fleet: &Mutex<Fleet>, record: &Mutex<Record>, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed ^ 0x570b);
    let victim = {
        let mut fleet = fleet.lock().expect("fleet");
        let workers = fleet.of(Role::Worker);
        let victim = workers[rng.random_range(..workers.len())];
        fleet.processes[victim].held = true;
        fleet.signal(victim, Signal::SIGSTOP);
        victim
    };
    // Time passes, not a wait for a condition: the stopped worker's leases run out.
    std::thread::sleep(schedule.lease * 2);
    let mut fleet = fleet.lock().expect("fleet");
    fleet.signal(victim, Signal::SIGCONT);
    fleet.processes[victim].held = false;
    drop(fleet);
    let mut r = record.lock().expect("record");
    r.worker_stops += 1;
    r.ended();
}

/// From the database's return until every web process answers ready, and until a job
/// enqueued once it was back has been completed.
fn recovery(fleet: &Mutex<Fleet>, database_url: &str, back: Instant) -> Recovery {
    let (ports, mut ping) = {
        let fleet = fleet.lock().expect("fleet");
        (fleet.web_ports(), fleet.command("ping"))
    };
    let pinged = ping
        .args(["jobs", "ping"])
        .output()
        .expect("bindery jobs ping");
    assert!(
        pinged.status.success(),
        "`bindery jobs ping` failed after PostgreSQL's restart: {}",
        String::from_utf8_lossy(&pinged.stderr)
    );
    let job: i64 = String::from_utf8_lossy(&pinged.stdout)
        .split(|c: char| !c.is_ascii_digit())
        .find_map(|word| word.parse().ok())
        .unwrap_or_else(|| panic!("no job id in {pinged:?}"));
    for port in ports {
        fleet::wait_ready(port, Duration::from_secs(60));
    }
    let ready = back.elapsed();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    common::eventually(
        "the job enqueued after PostgreSQL's restart to be done",
        Duration::from_secs(60).saturating_sub(back.elapsed()),
        || {
            let state = runtime.block_on(async {
                use sqlx::Connection;
                let mut conn = sqlx::PgConnection::connect(database_url).await.ok()?;
                sqlx::query_scalar::<_, String>("SELECT state FROM jobs WHERE id = $1")
                    .bind(job)
                    .fetch_one(&mut conn)
                    .await
                    .ok()
            });
            if state.as_deref() == Some("completed") {
                Ok(())
            } else {
                Err(format!("{state:?}"))
            }
        },
    );
    Recovery {
        ready,
        job_done: back.elapsed(),
    }
}
