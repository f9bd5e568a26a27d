//! `bindery logs`: the log lines of every web and worker process that shares this
//! `DATABASE_URL`, on any machine, merged by time (the logbook); with `--app`, the same lines
//! from a running deployment over its admin API; with `--files` or when the database cannot be
//! reached, this machine's log files in `LOG_DIR`.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use crate::config::{Config, DatabaseUrl};
use crate::log_files::text::escape;
use crate::log_files::{LogLine, Tail};
use crate::logbook::{self, Filter, Follow};
use crate::logging::Role;
use crate::storage::Database;

/// How often `--follow` looks for new lines in files, and in a database that cannot wake it.
const POLL: Duration = Duration::from_millis(250);
/// On PostgreSQL a follower is woken by `NOTIFY`; it looks anyway this often, in case a wake-up
/// was lost with a connection.
const POLL_LISTENING: Duration = Duration::from_secs(1);

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
    /// Only lines of this level or worse: error, warn, info, debug, trace.
    #[arg(long, value_parser = parse_level)]
    level: Option<logbook::Level>,
    /// Only the lines of this book.
    #[arg(long, value_name = "ID")]
    book: Option<String>,
    /// Only the lines of this job.
    #[arg(long, value_name = "ID")]
    job: Option<i64>,
    /// Only the lines of this tenant's requests and jobs.
    #[arg(long, value_name = "NAME")]
    tenant: Option<String>,
    /// Only the lines of this request (its `X-Request-Id`).
    #[arg(long, value_name = "ID")]
    request: Option<String>,
    /// Only lines of the last DURATION (`10m`, `2h`, `1d`).
    #[arg(long, value_name = "DURATION", value_parser = parse_since)]
    since: Option<Duration>,
    /// Only lines whose message or fields contain TEXT, ignoring case.
    #[arg(long, value_name = "TEXT")]
    grep: Option<String>,
    /// One JSON object per line.
    #[arg(long)]
    json: bool,
    /// Read this machine's log files in LOG_DIR instead of the database.
    #[arg(long, conflicts_with = "app")]
    files: bool,
    /// Follow a running deployment instead, over its admin API (`https://books.example.com`),
    /// with an admin token.
    #[arg(long, value_name = "URL", env = "BINDERY_APP")]
    pub app: Option<url::Url>,
    /// The admin token for --app.
    #[arg(
        long,
        value_name = "TOKEN",
        env = "BINDERY_TOKEN",
        hide_env_values = true
    )]
    token: Option<String>,
}

fn parse_level(text: &str) -> Result<logbook::Level, String> {
    logbook::Level::parse(text)
        .ok_or_else(|| format!("{text:?} is not a level: use error, warn, info, debug or trace"))
}

fn parse_since(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text)
        .map_err(|_| format!("{text:?} is not a duration: use a number and a unit, like 10m or 2h"))
}

impl LogsArgs {
    fn filter(&self) -> Filter {
        Filter {
            role: self.role.clone(),
            level: self.level,
            book_id: self.book.clone(),
            job_id: self.job,
            tenant: self.tenant.clone(),
            request_id: self.request.clone(),
            since: self.since.map(Filter::since_ago),
            grep: self.grep.clone(),
        }
    }

    /// The first option only the logbook can answer, as written on the command line.
    fn logbook_only(&self) -> Option<String> {
        self.filter().beyond_role().map(|name| format!("--{name}"))
    }
}

pub async fn run(config: &Config, args: LogsArgs) -> anyhow::Result<ExitCode> {
    if args.files {
        if let Some(option) = args.logbook_only() {
            anyhow::bail!(
                "{option} reads the database's log lines, and --files reads LOG_DIR's files, \
                 which only --role, -n and -f can filter: leave out one of the two"
            );
        }
        return files(config, &args).await;
    }
    match open_logbook(config).await {
        Ok(db) => logbook_tail(&db, &args).await,
        Err(why) => {
            if let Some(option) = args.logbook_only() {
                anyhow::bail!(
                    "{option} needs the database's log lines, and {why}; run `bindery logs` where \
                     DATABASE_URL reaches the database"
                );
            }
            eprintln!("bindery: {why}; showing this machine's log files in LOG_DIR instead");
            files(config, &args).await
        }
    }
}

/// The database, when it can be read and holds the logbook; else why not.
async fn open_logbook(config: &Config) -> Result<Database, String> {
    if let DatabaseUrl::Sqlite { path } = &config.database
        && !path.exists()
    {
        return Err(format!("there is no database at {}", path.display()));
    }
    let db = Database::connect(&config.database, 2)
        .await
        .map_err(|e| format!("the database could not be reached ({e:#})"))?;
    logbook::store::newest_id(&db).await.map_err(|e| {
        format!("the database holds no log lines yet ({e}); `bindery migrate` adds their table")
    })?;
    Ok(db)
}

async fn logbook_tail(db: &Database, args: &LogsArgs) -> anyhow::Result<ExitCode> {
    let filter = args.filter();
    // Where following starts is read before the backlog, so nothing falls between the two.
    let mut follow = Follow::from_now(db).await?;
    let n = i64::try_from(args.lines).unwrap_or(i64::MAX);
    let backlog = if n > 0 {
        logbook::store::last(db, &filter, n).await?
    } else {
        Vec::new()
    };
    if !print_lines(&backlog, args.json) || !args.follow {
        return Ok(ExitCode::SUCCESS);
    }
    let mut stop = crate::signals::StopSignals::install()?;
    let mut listener = match db {
        Database::Postgres(pool) => {
            let mut listener = sqlx::postgres::PgListener::connect_with(pool).await?;
            listener.listen(logbook::CHANNEL).await?;
            Some(listener)
        }
        Database::Sqlite(_) => None,
    };
    loop {
        let lines = follow.next(db, &filter).await?;
        if !print_lines(&lines, args.json) {
            return Ok(ExitCode::SUCCESS);
        }
        match listener.as_mut() {
            Some(listener) => tokio::select! {
                _ = listener.try_recv() => {}
                () = tokio::time::sleep(POLL_LISTENING) => {}
                _ = stop.recv() => return Ok(ExitCode::SUCCESS),
            },
            None => tokio::select! {
                () = tokio::time::sleep(POLL) => {}
                _ = stop.recv() => return Ok(ExitCode::SUCCESS),
            },
        }
    }
}

/// Prints lines; `false` once stdout is closed (`bindery logs | head`).
fn print_lines(lines: &[logbook::Line], json: bool) -> bool {
    let mut out = std::io::stdout().lock();
    for line in lines {
        let written = if json {
            writeln!(out, "{}", line.json())
        } else {
            writeln!(out, "{}", line.text())
        };
        if written.is_err() {
            return false;
        }
    }
    out.flush().is_ok()
}

/// This machine's files, as the admin page streams them.
async fn files(config: &Config, args: &LogsArgs) -> anyhow::Result<ExitCode> {
    let roles: Vec<&'static str> = match args.role.as_deref() {
        Some("web") => vec![Role::Web.as_str()],
        Some(_) => vec![Role::Worker.as_str()],
        None => vec![Role::Web.as_str(), Role::Worker.as_str()],
    };
    let Some(dir) = config.log_dir.clone() else {
        anyhow::bail!(
            "LOG_DIR is off (empty), so this machine keeps no log files; read the database's \
             lines (`bindery logs` without --files, where DATABASE_URL reaches the database), \
             or set LOG_DIR to a directory"
        );
    };
    let shown = dir.display().to_string();
    let n = args.lines;
    let (mut tail, backlog) = tokio::task::spawn_blocking(move || Tail::open(&dir, &roles, n))
        .await?
        .map_err(|e| anyhow::Error::new(e).context(format!("reading the log files in {shown}")))?;
    if backlog.is_empty() && !args.follow {
        eprintln!(
            "bindery: no log lines in {shown} yet (LOG_DIR); `bindery serve` writes them there"
        );
    }
    if !print_files(&backlog) || !args.follow {
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
        if !print_files(&lines?) {
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

/// Prints file lines as written, but for control characters (a file written by an older
/// version may hold them raw); `false` once stdout is closed.
fn print_files(lines: &[LogLine]) -> bool {
    let mut out = std::io::stdout().lock();
    for line in lines {
        if writeln!(out, "{}", escape(&line.line)).is_err() {
            return false;
        }
    }
    out.flush().is_ok()
}

/// `bindery logs --app URL`: the deployment's admin log stream, read as Server-Sent Events.
/// Needs no configuration, directories or database of its own: an operator's laptop runs it.
pub fn remote_main(args: &LogsArgs) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("bindery logs: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(remote(args)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("bindery logs: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn remote(args: &LogsArgs) -> anyhow::Result<ExitCode> {
    let Some(app) = &args.app else {
        anyhow::bail!("--app is missing");
    };
    let Some(token) = args.token.as_deref().filter(|t| !t.trim().is_empty()) else {
        anyhow::bail!(
            "--app needs an admin token: pass --token or set BINDERY_TOKEN (`bindery token create NAME --admin` makes one)"
        );
    };
    let mut url = app
        .join("api/v1/admin/logs")
        .map_err(|e| anyhow::anyhow!("{app} cannot be the base of a URL: {e}"))?;
    {
        let mut query = url.query_pairs_mut();
        query.append_pair("lines", &args.lines.to_string());
        query.append_pair("follow", if args.follow { "true" } else { "false" });
        if args.files {
            query.append_pair("source", "files");
        }
        let level = args.level.map(|l| l.as_str().to_lowercase());
        let job = args.job.map(|j| j.to_string());
        let since = args
            .since
            .map(|s| humantime::format_duration(s).to_string());
        for (name, value) in [
            ("role", args.role.as_deref()),
            ("level", level.as_deref()),
            ("book", args.book.as_deref()),
            ("job", job.as_deref()),
            ("tenant", args.tenant.as_deref()),
            ("request", args.request.as_deref()),
            ("since", since.as_deref()),
            ("grep", args.grep.as_deref()),
        ] {
            if let Some(value) = value {
                query.append_pair(name, value);
            }
        }
    }
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .build()?;
    let mut response = client
        .get(url.clone())
        .bearer_auth(token)
        .header("Accept", "text/event-stream")
        .send()
        .await
        .map_err(|e| anyhow::anyhow!("could not reach {app}: {e}"))?;
    match response.status().as_u16() {
        200 => {}
        401 => anyhow::bail!("{app} refused the token (401): check --token or BINDERY_TOKEN"),
        404 => anyhow::bail!(
            "{app} has no admin log stream for this token (404): the token must be an admin's \
             (`bindery token create NAME --admin`), and the URL the deployment's"
        ),
        status => {
            let body = response.text().await.unwrap_or_default();
            anyhow::bail!("{app} answered {status}: {}", body.trim());
        }
    }
    let mut stop = crate::signals::StopSignals::install()?;
    let mut pending = Vec::new();
    // The name of the event whose lines are being read (`event: ended` when the token is
    // revoked); unnamed events are log lines.
    let mut event_name = String::new();
    loop {
        let chunk = tokio::select! {
            chunk = response.chunk() => chunk.map_err(|e| anyhow::anyhow!("the stream from {app} broke: {e}"))?,
            _ = stop.recv() => return Ok(ExitCode::SUCCESS),
        };
        let Some(chunk) = chunk else {
            if args.follow {
                anyhow::bail!("{app} ended the stream (the server is stopping, or restarted)");
            }
            return Ok(ExitCode::SUCCESS);
        };
        pending.extend_from_slice(&chunk);
        let mut out = std::io::stdout().lock();
        while let Some(end) = pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end();
            if line.is_empty() {
                event_name.clear();
                continue;
            }
            if let Some(name) = line.strip_prefix("event: ") {
                name.clone_into(&mut event_name);
                continue;
            }
            let Some(data) = line.strip_prefix("data: ") else {
                continue;
            };
            let Ok(event) = serde_json::from_str::<serde_json::Value>(data) else {
                continue;
            };
            if event_name == "ended" {
                let message = event["message"].as_str().unwrap_or("the stream was ended");
                anyhow::bail!("{app} ended the stream: {}", escape(message));
            }
            let written = if args.json {
                match event.get("fields") {
                    Some(fields) => writeln!(out, "{fields}"),
                    None => writeln!(out, "{event}"),
                }
            } else {
                // Escaped here too: the server may be an older version, which sent them raw.
                writeln!(
                    out,
                    "{}",
                    escape(event["line"].as_str().unwrap_or_default())
                )
            };
            if written.is_err() {
                return Ok(ExitCode::SUCCESS);
            }
        }
        if out.flush().is_err() {
            return Ok(ExitCode::SUCCESS);
        }
    }
}
