//! `bindery logs`: the merged tail of this machine's web and worker log files (`LOG_DIR`), as
//! the admin page streams it, for an operator at a terminal.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use crate::config::Config;
use crate::logs::{LogLine, Tail};
use crate::telemetry::Role;

/// How often `--follow` looks for new lines.
const POLL: Duration = Duration::from_millis(250);

#[derive(Debug, clap::Args)]
pub struct LogsArgs {
    /// How many of the last lines to print first.
    #[arg(short = 'n', long, default_value_t = 100)]
    lines: usize,
    /// Keep printing lines as they are written, until Ctrl-C.
    #[arg(short, long)]
    follow: bool,
    /// Only this role's lines.
    #[arg(long, value_parser = ["web", "worker"])]
    role: Option<String>,
}

pub async fn run(config: &Config, args: LogsArgs) -> anyhow::Result<ExitCode> {
    let roles: Vec<&'static str> = match args.role.as_deref() {
        Some("web") => vec![Role::Web.as_str()],
        Some(_) => vec![Role::Worker.as_str()],
        None => vec![Role::Web.as_str(), Role::Worker.as_str()],
    };
    let dir = config.log_dir.clone();
    let n = args.lines;
    let (mut tail, backlog) = tokio::task::spawn_blocking(move || Tail::open(&dir, &roles, n))
        .await?
        .map_err(|e| {
            anyhow::Error::new(e).context(format!(
                "reading the log files in {}",
                config.log_dir.display()
            ))
        })?;
    if backlog.is_empty() && !args.follow {
        eprintln!(
            "bindery: no log lines in {} yet (LOG_DIR); `bindery serve` writes them there",
            config.log_dir.display()
        );
    }
    if !print(&backlog) || !args.follow {
        return Ok(ExitCode::SUCCESS);
    }
    let mut stop = crate::signals::StopSignals::install()?;
    loop {
        let (polled, lines) = tokio::task::spawn_blocking(move || {
            let lines = tail.poll();
            (tail, lines)
        })
        .await?;
        tail = polled;
        if !print(&lines?) {
            return Ok(ExitCode::SUCCESS);
        }
        if tail.behind() {
            continue;
        }
        tokio::select! {
            () = tokio::time::sleep(POLL) => {}
            _ = stop.recv() => return Ok(ExitCode::SUCCESS),
        }
    }
}

/// Prints lines as written; `false` once stdout is closed (`bindery logs | head`).
fn print(lines: &[LogLine]) -> bool {
    let mut out = std::io::stdout().lock();
    for line in lines {
        if writeln!(out, "{}", line.line).is_err() {
            return false;
        }
    }
    out.flush().is_ok()
}
