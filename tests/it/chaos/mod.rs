//! Chaos: the service deployed as it runs past one machine (2 `bindery web` and 3
//! `bindery worker` processes on one PostgreSQL over verified TLS and one Azure Blob container),
//! under a steady load of uploads from several tenants (one in ten under the faults a new
//! version of a book just uploaded, often while that one still builds), while the things that fail in
//! production fail together: workers and web processes are killed, a worker is frozen past its
//! lease, PostgreSQL restarts with every connection cut, and the blob store goes away.
//!
//! Within 60 s of the last fault, the run checks what a user would: every accepted upload is
//! exactly one book, every good book is ready and byte-identical to `bindery convert` of the
//! same input and metadata (a book sent new versions shows its newest, identical to `bindery
//! convert --revision N` of that manuscript, and each version it skipped was cancelled with its
//! files removed), every hostile one failed with its own code, no job is left behind
//! or dead but the hostile books', every webhook was delivered and acknowledged (a duplicate
//! only as a redelivery of the same delivery), and after `sweep_blobs` no blob is left without
//! a book. A good book that failed because the kills landed in one of its steps three times
//! (`MAX_LOST_WORKERS`, a rule of the product) is first retried through the API, as its author
//! would, and must then hold to all of that. It prints books per minute, submit→ready latency with and without faults, steps run
//! again, and how long the service took to recover from each database restart.
//!
//! `short_run` is part of the suite. `full_run` (300 books from 6 tenants, every fault of the
//! issue) is `scripts/chaos`. `CHAOS_SEED` replays a run's random choices; each run's process
//! logs are kept under `target/tmp/chaos-SEED/` until the next run.

mod faults;
mod fleet;
mod load;
mod services;
mod verify;

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::{self, need, receiver::Receiver};

use faults::Schedule;
use fleet::{Fleet, Role};
use load::{Planned, Uploader};
use services::{Azurite, Postgres};

/// How big a run is.
#[derive(Clone, Debug)]
pub struct Plan {
    pub books: usize,
    pub tenants: usize,
    /// Uploaded, and finished, before the first fault: the latency without faults.
    pub quiet_books: usize,
    pub webs: usize,
    pub workers: usize,
    pub faults: Schedule,
}

const LEASE: Duration = Duration::from_secs(5);

impl Plan {
    /// The run: 300 books from 6 tenants through 90 s of faults.
    pub fn full() -> Self {
        Self {
            books: 300,
            tenants: 6,
            quiet_books: 30,
            webs: 2,
            workers: 3,
            faults: Schedule {
                length: Duration::from_secs(90),
                worker_kills: (Duration::from_secs(2), Duration::from_secs(5)),
                web_kills: (Duration::from_secs(8), Duration::from_secs(12)),
                postgres_restarts: vec![Duration::from_secs(15), Duration::from_secs(55)],
                postgres_down: Duration::from_secs(5),
                azurite_stop: Duration::from_secs(33),
                azurite_down: Duration::from_secs(10),
                worker_stop: Duration::from_secs(72),
                lease: LEASE,
            },
        }
    }

    /// The same kinds of fault, each once (the random kills a few times), over fewer books.
    ///
    /// Workers are killed less than half as often as in the full run. This run uses the suite's debug
    /// build beside the rest of the suite, where a step runs five to ten times longer than in
    /// the full run's release build; what decides whether a kill lands in a step is the step's
    /// length against the time between kills. At the full run's pace, a step of a few seconds
    /// lost its worker three times (`MAX_LOST_WORKERS`) in about one run in ten, a rate the
    /// full run, at its own speed, does not come near. The longest step here is
    /// `package_covers` (a median of 1.2 s, 3 s at most: the store cover's 1600×2560 JPEG is
    /// encoded by `image`'s generic code, which the debug build compiles unoptimised in
    /// Bindery's own crate); with a kill every 4 to 8 s it lost three workers in two runs of
    /// five, so the kills come every 6 to 10 s.
    pub fn short() -> Self {
        Self {
            books: 42,
            tenants: 3,
            quiet_books: 6,
            faults: Schedule {
                length: Duration::from_secs(36),
                worker_kills: (Duration::from_secs(6), Duration::from_secs(10)),
                postgres_restarts: vec![Duration::from_secs(4)],
                azurite_stop: Duration::from_secs(13),
                worker_stop: Duration::from_secs(25),
                ..Self::full().faults
            },
            ..Self::full()
        }
    }
}

#[test]
fn short_run() {
    if !need::postgres_programs() || !need::azurite_program() {
        return;
    }
    let _heavy = common::heavy();
    run(&Plan::short());
}

#[test]
#[ignore = "the full run takes minutes: scripts/chaos runs it"]
fn full_run() {
    if !need::postgres_programs() || !need::azurite_program() {
        return;
    }
    run(&Plan::full());
}

/// The binary under test: `BINDERY_CHAOS_BIN` (scripts/chaos gives the release build), else
/// the one cargo built for the tests.
fn binary() -> PathBuf {
    std::env::var_os("BINDERY_CHAOS_BIN").map_or_else(|| PathBuf::from(common::BIN), PathBuf::from)
}

/// Straight to the terminal, past the test harness's capture: the figures are the point.
pub fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "chaos: {line}");
}

/// The run's directory for process logs and reference conversions, kept until the next run.
fn run_dir(seed: u64) -> PathBuf {
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    for old in std::fs::read_dir(&base).into_iter().flatten().flatten() {
        if old.file_name().to_string_lossy().starts_with("chaos-") {
            let _ = std::fs::remove_dir_all(old.path());
        }
    }
    let dir = base.join(format!("chaos-{seed}"));
    std::fs::create_dir_all(&dir).expect("run directory");
    dir
}

fn run(plan: &Plan) {
    let seed = std::env::var("CHAOS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::random_range(..1_000_000));
    let dir = run_dir(seed);
    say(&format!(
        "seed {seed} (CHAOS_SEED replays it); {} books from {} tenants ({} before the faults); {} web and {} worker processes; logs in {}",
        plan.books,
        plan.tenants,
        plan.quiet_books,
        plan.webs,
        plan.workers,
        dir.display()
    ));
    let Some(postgres) = Postgres::start() else {
        return;
    };
    let Some(mut azurite) = Azurite::start() else {
        return;
    };
    azurite.create_container("chaos");
    let env = vec![
        ("DATABASE_URL", postgres.url()),
        ("BLOB_URL", "az://chaos".to_owned()),
        (
            "AZURE_STORAGE_ACCOUNT_NAME",
            crate::azure::ACCOUNT.to_owned(),
        ),
        ("AZURE_STORAGE_ACCOUNT_KEY", crate::azure::KEY.to_owned()),
        ("AZURE_STORAGE_ENDPOINT", azurite.endpoint()),
        ("JOB_LEASE", format!("{}s", LEASE.as_secs())),
        ("WEBHOOK_ALLOW_PRIVATE", "true".to_owned()),
        ("MAX_INFLATED_SIZE", "8MiB".to_owned()),
    ];
    let env = env.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
    let mut fleet = Fleet::new(&binary(), &dir, env);

    // The release phase, then a token per tenant.
    common::succeed(fleet.command("release").arg("migrate"), "bindery migrate");
    let tokens: Vec<String> = (0..plan.tenants)
        .map(|t| {
            common::succeed(
                fleet
                    .command("release")
                    .args(["token", "create", &format!("tenant-{t}")]),
                "bindery token create",
            )
            .trim()
            .to_owned()
        })
        .collect();
    fleet.add(Role::Web, plan.webs);
    fleet.add(Role::Worker, plan.workers);
    fleet.start_all();
    let ports = fleet.web_ports();
    for &port in &ports {
        fleet::wait_ready(port, Duration::from_secs(30));
    }
    let fleet = Arc::new(Mutex::new(fleet));

    let receiver = Receiver::start(|_| 200);
    let uploader = Arc::new(Uploader::new(
        reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .expect("client"),
        tokens,
        ports,
        receiver.url("127.0.0.1"),
    ));
    let manuscripts = Arc::new(load::manuscripts());
    let planned: Vec<Planned> = (0..plan.books)
        .map(|n| {
            let revises = load::revises(n, plan.tenants, plan.quiet_books, &manuscripts);
            Planned {
                n,
                tenant: n % plan.tenants,
                manuscript: match revises {
                    Some(target) => {
                        load::revision_of(load::manuscript_of(target, &manuscripts), &manuscripts)
                    }
                    None => load::manuscript_of(n, &manuscripts),
                },
                // Every other book of each tenant.
                callback: (n / plan.tenants).is_multiple_of(2),
                key: uuid::Uuid::new_v4().to_string(),
                under_faults: n >= plan.quiet_books,
                revises,
            }
        })
        .collect();
    let (quiet, faulty): (Vec<_>, Vec<_>) = planned.into_iter().partition(|p| !p.under_faults);
    let check = verify::Checker::connect(&postgres.url(), &azurite.endpoint(), "chaos");

    // The same pace of uploads without faults first, for the latency to compare with, then
    // with the faults over the same stretch of time.
    let per_tenant = faulty.len().div_ceil(plan.tenants).max(1);
    let interval = plan.faults.length.mul_f64(0.9) / u32::try_from(per_tenant).expect("count");
    let mut submitted = load::submit_all(&uploader, &manuscripts, quiet, interval, seed);
    check.wait_settled(Instant::now() + Duration::from_secs(120), "the quiet books");
    let started = Instant::now();
    let record = std::thread::scope(|scope| {
        let load =
            scope.spawn(|| load::submit_all(&uploader, &manuscripts, faulty, interval, seed));
        let record = faults::inject(
            &plan.faults,
            &fleet,
            &postgres,
            &mut azurite,
            &postgres.url(),
            &|port| uploader.uploading(port),
            seed,
        );
        submitted.extend(load.join().expect("the load panicked"));
        record
    });
    let last_fault = record.last_fault_ended.unwrap_or(started);
    check.wait_settled(last_fault + Duration::from_secs(60), "every book and job");
    let settled_after = last_fault.elapsed();
    let retried = check.retry_stopped(&submitted, &uploader);

    let mut fleet = fleet.lock().expect("fleet");
    let crashed = fleet.unexpected_exits();
    let results = check.all(
        &submitted,
        &manuscripts,
        &receiver,
        &fleet,
        &uploader,
        retried,
    );
    check.write_lost_twice(&dir);
    fleet.stop_all();
    drop(fleet);
    verify::report(plan, &record, &submitted, &results, settled_after);
    assert!(
        crashed.is_empty() && record.unexpected_exits.is_empty(),
        "processes exited that nothing killed: {crashed:?} {:?}",
        record.unexpected_exits
    );
    results.assert_all_held();
}
