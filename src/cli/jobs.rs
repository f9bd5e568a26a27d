//! `bindery jobs …`: the queue's operations from a terminal (the admin pages come later).

use std::process::ExitCode;

use clap::Subcommand;

use crate::config::Config;
use crate::jobs::{JobFilter, JobQueue, JobState, NewJob};
use crate::storage::Database;
use crate::worker::builtin;

#[derive(Debug, Subcommand)]
pub enum JobsCommand {
    /// Queue depth per queue and state, the oldest due job's age, and paused queues.
    Stats {
        /// Also count finished jobs (completed, discarded, cancelled) still retained; this
        /// reads the whole job history.
        #[arg(long)]
        all: bool,
    },
    /// List jobs, newest first.
    List {
        /// available, scheduled, waiting, running, completed, discarded, dead or cancelled.
        #[arg(long)]
        state: Option<String>,
        #[arg(long)]
        queue: Option<String>,
        #[arg(long)]
        tenant: Option<String>,
        /// A job type, e.g. `book.parse`.
        #[arg(long)]
        kind: Option<String>,
        #[arg(long, default_value_t = 50)]
        limit: i64,
    },
    /// Show one job, with its error history.
    Show { id: i64 },
    /// Run a dead, discarded or cancelled job again, with fresh attempts.
    Retry { id: i64 },
    /// Cancel a job that has not finished (a running one stops within a heartbeat).
    Cancel {
        id: i64,
        #[arg(long, default_value = "cancelled by an operator")]
        reason: String,
    },
    /// Fail a job that has not finished, without retries.
    Discard {
        id: i64,
        #[arg(long, default_value = "discarded by an operator")]
        reason: String,
    },
    /// Stop workers from claiming jobs of a queue.
    Pause { queue: String },
    /// Let workers claim jobs of a paused queue again.
    Resume { queue: String },
    /// Enqueue a diagnostic job (`noop`, or `sleep` for --millis) to check that workers run.
    Ping {
        #[arg(long)]
        millis: Option<u64>,
    },
}

pub async fn run(config: &Config, command: JobsCommand) -> anyhow::Result<ExitCode> {
    let db = Database::connect(&config.database, 2).await?;
    db.migrate().await?;
    let queue = JobQueue::new(db.clone());
    let code = match command {
        JobsCommand::Stats { all } => {
            let mut stats = queue.stats().await?;
            if all {
                stats.rows.extend(queue.finished_counts().await?);
                stats.rows.sort_by(|a, b| {
                    (&a.queue, a.state.as_str()).cmp(&(&b.queue, b.state.as_str()))
                });
            }
            println!(
                "{:<16} {:<10} {:>10} {:>14}",
                "QUEUE", "STATE", "JOBS", "OLDEST DUE"
            );
            for row in &stats.rows {
                let age = row
                    .oldest_due_ms
                    .map(|ms| format!("{:.1}s", ms as f64 / 1000.0))
                    .unwrap_or_default();
                println!(
                    "{:<16} {:<10} {:>10} {:>14}",
                    row.queue, row.state, row.count, age
                );
            }
            if !all {
                println!("(finished jobs are left out; `bindery jobs stats --all` counts them)");
            }
            if !stats.paused.is_empty() {
                println!("paused: {}", stats.paused.join(", "));
            }
            ExitCode::SUCCESS
        }
        JobsCommand::List {
            state,
            queue: name,
            tenant,
            kind,
            limit,
        } => {
            let state = match state.as_deref().map(|s| (s, JobState::parse(s))) {
                None => None,
                Some((_, Some(state))) => Some(state),
                Some((given, None)) => {
                    let known: Vec<&str> = JobState::ALL.iter().map(|s| s.as_str()).collect();
                    eprintln!(
                        "bindery: unknown state {given:?}; use one of {}",
                        known.join(", ")
                    );
                    return Ok(ExitCode::from(2));
                }
            };
            let jobs = queue
                .list(&JobFilter {
                    state,
                    queue: name,
                    tenant,
                    kind,
                    workflow: None,
                    before_id: None,
                    limit,
                })
                .await?;
            println!(
                "{:>8} {:<24} {:<12} {:<10} {:>7}  LAST ERROR",
                "ID", "KIND", "QUEUE", "STATE", "ATTEMPT"
            );
            for job in jobs {
                let last_error = if job.state == JobState::Completed {
                    String::new()
                } else {
                    job.error_history()
                        .last()
                        .and_then(|e| e["error"].as_str().map(str::to_owned))
                        .unwrap_or_default()
                };
                println!(
                    "{:>8} {:<24} {:<12} {:<10} {:>3}/{:<3}  {}",
                    job.id,
                    job.kind,
                    job.queue,
                    job.state,
                    job.attempt,
                    job.max_attempts,
                    last_error
                );
            }
            ExitCode::SUCCESS
        }
        JobsCommand::Show { id } => match queue.job(id).await? {
            Some(job) => {
                println!("{}", serde_json::to_string_pretty(&job)?);
                ExitCode::SUCCESS
            }
            None => not_found(id),
        },
        JobsCommand::Retry { id } => report(
            id,
            queue.retry(id).await?,
            "queued to run again",
            "is not dead, discarded or cancelled",
        ),
        JobsCommand::Cancel { id, reason } => report(
            id,
            queue.cancel(id, &reason).await?,
            "cancelled",
            "has already finished",
        ),
        JobsCommand::Discard { id, reason } => report(
            id,
            queue.discard(id, &reason).await?,
            "discarded",
            "has already finished",
        ),
        JobsCommand::Pause { queue: name } => {
            queue.pause(&name).await?;
            println!("queue {name} paused");
            ExitCode::SUCCESS
        }
        JobsCommand::Resume { queue: name } => {
            queue.resume(&name).await?;
            println!("queue {name} resumed");
            ExitCode::SUCCESS
        }
        JobsCommand::Ping { millis } => {
            let job = match millis {
                Some(millis) => NewJob::of(&builtin::Sleep { millis }),
                None => NewJob::of(&builtin::Noop {}),
            };
            let enqueued = queue.enqueue(job).await?;
            println!("enqueued job {}", enqueued.id);
            ExitCode::SUCCESS
        }
    };
    db.close().await;
    Ok(code)
}

fn not_found(id: i64) -> ExitCode {
    eprintln!("bindery: no job {id}");
    ExitCode::FAILURE
}

fn report(id: i64, done: bool, did: &str, why_not: &str) -> ExitCode {
    if done {
        println!("job {id} {did}");
        ExitCode::SUCCESS
    } else {
        eprintln!("bindery: job {id} was not changed: it does not exist or {why_not}");
        ExitCode::FAILURE
    }
}
