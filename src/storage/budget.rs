//! How many PostgreSQL connections each pool of a process may open (`DATABASE_MAX_CONNECTIONS`).
//!
//! Managed PostgreSQL plans cap connections (20 on Heroku's Essential-0), so a process opens at
//! most its budget, summed over every pool it has. With `serve` the budget is the web and worker
//! pair's together, since both run in one dyno or container:
//!
//! | process | pools | share |
//! |---|---|---|
//! | web | requests, plus the one LISTEN connection that wakes `?wait=` and event streams | all of it (`serve`: a quarter, 2 to 8) |
//! | worker | heartbeat 1, the pump's claims and completions 2 (1 at the least budget), the engine (jobs' progress, rescue, its LISTEN) a third of the rest (at least 2), the jobs' own queries the remainder (at least 2) | all of it (`serve`: what the web leaves) |
//!
//! SQLite has no connection limit to respect; its pools keep their own sizes.

use crate::config::ConfigError;

/// The fewest connections a web process works with: its LISTEN and one for requests.
pub const WEB_MIN: u32 = 2;
/// The fewest a worker works with: heartbeat, pump, two for the engine, two for jobs.
pub const WORKER_MIN: u32 = 6;
/// The pump's connections when the budget has room: one claims while the other commits what
/// finished. At the least budget it has one, which does both in one statement.
pub const PUMP_CONNECTIONS: u32 = 2;
/// How many executors one job-facing connection serves; jobs hold a connection only for their
/// short reads and commits, and spend the rest of their time parsing and rendering.
pub const EXECUTORS_PER_CONNECTION: u32 = 4;

/// The worker's pools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkerShare {
    /// Jobs' own queries (the pipeline's reads and writes, schedules' enqueues).
    pub app: u32,
    /// The engine's: progress, rescue, release, and its LISTEN connection.
    pub engine: u32,
    /// The pump's claims and completions ([`PUMP_CONNECTIONS`], or 1 at the least budget).
    pub pump: u32,
}

impl WorkerShare {
    /// The heartbeat thread's connection, whatever the budget.
    pub const HEARTBEAT: u32 = 1;

    pub fn total(&self) -> u32 {
        self.app + self.engine + self.pump + Self::HEARTBEAT
    }

    /// The most executors these pools serve.
    pub fn max_executors(&self) -> u32 {
        (self.app + self.engine) * EXECUTORS_PER_CONNECTION
    }
}

/// Which process is asking: the share differs when web and worker run as a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Process {
    /// `bindery serve`: the web process whose worker child shares the budget.
    ServeWeb,
    /// The worker child of `bindery serve`.
    ServeWorker,
    /// `bindery web` alone.
    Web,
    /// `bindery worker` alone.
    Worker,
}

/// The web's part of a `serve` pair's budget: a quarter, between 2 and 8.
fn serve_web_share(total: u32) -> u32 {
    (total / 4).clamp(WEB_MIN, 8)
}

/// The web process's pool size, or why the budget cannot run it.
pub fn web_pool(total: u32, process: Process) -> Result<u32, ConfigError> {
    let share = match process {
        Process::ServeWeb => {
            check(total, WEB_MIN + WORKER_MIN, "`serve` (web 2, worker 6)")?;
            serve_web_share(total)
        }
        _ => {
            check(total, WEB_MIN, "a web process")?;
            total
        }
    };
    Ok(share)
}

/// The worker's pools, or why the budget cannot run it.
pub fn worker_pools(total: u32, process: Process) -> Result<WorkerShare, ConfigError> {
    let share = match process {
        Process::ServeWorker => {
            check(total, WEB_MIN + WORKER_MIN, "`serve` (web 2, worker 6)")?;
            total - serve_web_share(total)
        }
        _ => {
            check(total, WORKER_MIN, "a worker")?;
            total
        }
    };
    let pump = if share > WORKER_MIN {
        PUMP_CONNECTIONS
    } else {
        1
    };
    let rest = share - pump - WorkerShare::HEARTBEAT;
    let engine = (rest / 3).max(2);
    Ok(WorkerShare {
        app: rest - engine,
        engine,
        pump,
    })
}

fn check(total: u32, least: u32, what: &str) -> Result<(), ConfigError> {
    if total < least {
        return Err(ConfigError::about(
            "DATABASE_MAX_CONNECTIONS",
            format!(
                "is {total}, fewer than {what} needs: set it to at least {least}, or to your \
                 PostgreSQL plan's connection limit divided among the processes that share it"
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_fits_a_whole_serve_into_twenty() {
        let web = web_pool(20, Process::ServeWeb).expect("web");
        let worker = worker_pools(20, Process::ServeWorker).expect("worker");
        assert_eq!(web + worker.total(), 20);
        assert_eq!(web, 5);
        assert_eq!(
            worker,
            WorkerShare {
                app: 8,
                engine: 4,
                pump: 2
            }
        );
        assert!(worker.max_executors() >= 16, "the default concurrency fits");
    }

    #[test]
    fn every_budget_is_spent_exactly_and_never_exceeded() {
        for total in (WEB_MIN + WORKER_MIN)..200 {
            let web = web_pool(total, Process::ServeWeb).expect("web");
            let worker = worker_pools(total, Process::ServeWorker).expect("worker");
            assert_eq!(web + worker.total(), total, "serve at {total}");
            assert!(web >= WEB_MIN && worker.app >= 2 && worker.engine >= 2);
        }
        for total in WORKER_MIN..200 {
            assert_eq!(
                worker_pools(total, Process::Worker)
                    .expect("worker")
                    .total(),
                total
            );
        }
        assert_eq!(web_pool(3, Process::Web).expect("web"), 3);
    }

    #[test]
    fn the_pump_has_a_second_connection_from_one_above_the_least_budget() {
        let least = worker_pools(WORKER_MIN, Process::Worker).expect("worker");
        assert_eq!((least.pump, least.engine, least.app), (1, 2, 2));
        let next = worker_pools(WORKER_MIN + 1, Process::Worker).expect("worker");
        assert_eq!((next.pump, next.engine, next.app), (PUMP_CONNECTIONS, 2, 2));
        let serve = |total| worker_pools(total, Process::ServeWorker).expect("worker");
        assert_eq!(serve(WEB_MIN + WORKER_MIN).pump, 1);
        assert_eq!(serve(WEB_MIN + WORKER_MIN + 1).pump, PUMP_CONNECTIONS);
    }

    #[test]
    fn too_small_a_budget_names_the_variable_and_the_least_it_needs() {
        let e = web_pool(7, Process::ServeWeb).expect_err("too small");
        assert_eq!(e.name, "DATABASE_MAX_CONNECTIONS");
        assert!(e.to_string().contains("at least 8"), "{e}");
        assert!(worker_pools(5, Process::Worker).is_err());
        assert!(web_pool(1, Process::Web).is_err());
    }
}
