//! Shared helpers for process-level tests: start the real `bindery` binary in its own temp data
//! directory on a free port, read its JSON log stream, signal it, and watch it exit.
#![allow(dead_code)] // each test binary uses a different subset

pub mod books;
#[path = "../../support/corpus.rs"]
pub mod corpus;
pub mod docx;
#[path = "../../support/epubcheck.rs"]
pub mod epubcheck;
#[path = "../../support/need.rs"]
pub mod need;
pub mod proxy;
pub mod reader_site;
pub mod receiver;
pub mod shared;
pub mod wait;
pub mod web;

pub use wait::{eventually, eventually_async, throughout, until_gone, within};

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_bindery");

/// Held by the tests that load the machine most, or measure it: at most one of them runs at a
/// time, while lighter tests (mostly waiting on the processes they started) run beside it.
/// The integration tests run as threads of one process, more of them than there are cores.
/// A flag and a condition variable rather than a `MutexGuard`, which async tests could not hold
/// across their awaits.
#[must_use = "the test is heavy only while it holds this"]
pub struct Heavy(());

static HEAVY: (Mutex<bool>, Condvar) = (Mutex::new(false), Condvar::new());

/// Waits until no other heavy test runs, and marks this one as running until dropped.
pub fn heavy() -> Heavy {
    let (lock, cvar) = &HEAVY;
    let busy = lock
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut busy = cvar
        .wait_while(busy, |busy| *busy)
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    *busy = true;
    Heavy(())
}

impl Drop for Heavy {
    fn drop(&mut self) {
        // Also when the test failed: the next heavy test must not wait forever.
        let (lock, cvar) = &HEAVY;
        *lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = false;
        cvar.notify_one();
    }
}

/// One statement on a SQLite database file, from outside the server that uses it.
pub fn sqlite_execute(path: &Path, statement: &'static str) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        use sqlx::Connection;
        let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite://{}", path.display()))
            .await
            .expect("open the database file");
        sqlx::query(statement)
            .execute(&mut conn)
            .await
            .expect("execute");
        conn.close().await.expect("close");
    });
}

/// A `Command` for the binary with a clean, test-owned environment: no `.env` pick-up from the
/// developer's directory, no inherited `DATABASE_URL` or `PORT`.
pub fn command(data_dir: &Path) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("DATA_DIR", data_dir)
        .env("HOST", "127.0.0.1")
        .env("PORT", "0")
        .env("LOG_FORMAT", "json")
        .env("RUST_LOG", "info,bindery=debug")
        .current_dir(data_dir);
    cmd
}

/// `bindery jobs ping` beside `server` (its data directory, and `env`, such as the
/// `DATABASE_URL` it was started with), then `bindery jobs list --state completed` until that
/// job is listed, within `timeout`: the job's id, and the listing.
pub fn ping_until_completed(
    server: &Server,
    env: &[(&str, &str)],
    timeout: Duration,
) -> (i64, String) {
    let jobs = |args: &[&str]| {
        command(&server.data_dir())
            .envs(env.iter().copied())
            .arg("jobs")
            .args(args)
            .output()
            .expect("run bindery jobs")
    };
    let out = jobs(&["ping"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let id: i64 = stdout
        .trim()
        .strip_prefix("enqueued job ")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{stdout}"));
    let listing = eventually(&format!("job {id} to complete"), timeout, || {
        let out = jobs(&["list", "--state", "completed"]);
        let listing = String::from_utf8_lossy(&out.stdout).into_owned();
        if listing
            .lines()
            .any(|l| l.split_whitespace().next() == Some(&id.to_string()))
        {
            Ok(listing)
        } else {
            Err(format!("\n{listing}"))
        }
    });
    (id, listing)
}

/// The JSON log lines a process has printed so far, shared with the thread that reads them.
#[derive(Clone, Default)]
pub struct LogStream {
    lines: Arc<(Mutex<Vec<Value>>, Condvar)>,
    closed: Arc<(Mutex<bool>, Condvar)>,
}

impl LogStream {
    fn push(&self, line: Value) {
        let (lock, cvar) = &*self.lines;
        lock.lock().expect("log lock").push(line);
        cvar.notify_all();
    }

    fn close(&self) {
        let (lock, cvar) = &*self.closed;
        *lock.lock().expect("closed lock") = true;
        cvar.notify_all();
        // Wake anyone waiting for a line, so they see the final state.
        self.lines.1.notify_all();
    }

    /// Waits (up to `timeout`) until the writer closed its end: every line is in.
    pub fn wait_closed(&self, timeout: Duration) -> bool {
        let (lock, cvar) = &*self.closed;
        let guard = lock.lock().expect("closed lock");
        let (guard, _) = cvar
            .wait_timeout_while(guard, timeout, |closed| !*closed)
            .expect("closed lock");
        *guard
    }

    /// Waits until a line matches, and returns it.
    pub fn wait_for(&self, what: &str, timeout: Duration, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + timeout;
        let (lock, cvar) = &*self.lines;
        let mut lines = lock.lock().expect("log lock");
        loop {
            if let Some(found) = lines.iter().find(|l| pred(l)) {
                return found.clone();
            }
            let now = Instant::now();
            assert!(
                now < deadline,
                "timed out after {timeout:?} waiting for {what}; log so far:\n{}",
                lines
                    .iter()
                    .map(Value::to_string)
                    .collect::<Vec<_>>()
                    .join("\n")
            );
            lines = cvar
                .wait_timeout(lines, deadline - now)
                .expect("log lock")
                .0;
        }
    }

    /// Every line so far, one a line, for a failing test's message.
    pub fn dump(&self) -> String {
        self.all()
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    }

    pub fn find(&self, pred: impl Fn(&Value) -> bool) -> Option<Value> {
        self.lines
            .0
            .lock()
            .expect("log lock")
            .iter()
            .find(|l| pred(l))
            .cloned()
    }

    pub fn all(&self) -> Vec<Value> {
        self.lines.0.lock().expect("log lock").clone()
    }
}

/// The log so far, as a failed wait's "last seen".
impl std::fmt::Display for LogStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "log so far:\n{}", self.dump())
    }
}

/// True when a log line has this message (and, if given, this role).
pub fn message(line: &Value, role: Option<&str>, text: &str) -> bool {
    line["message"].as_str().is_some_and(|m| m.contains(text))
        && role.is_none_or(|r| line["role"] == r)
}

/// A running `bindery` process (serve, web or worker) with its log stream.
pub struct Running {
    pub child: Child,
    pub logs: LogStream,
    pub stderr: Arc<Mutex<String>>,
}

impl Running {
    pub fn start(mut cmd: Command) -> Self {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("start bindery");
        let logs = LogStream::default();
        let stdout = child.stdout.take().expect("stdout");
        let sink = logs.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let value = serde_json::from_str(&line).unwrap_or(Value::String(line));
                sink.push(value);
            }
            sink.close();
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let pipe = child.stderr.take().expect("stderr");
        let err_sink = stderr.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                let mut s = err_sink.lock().expect("stderr lock");
                s.push_str(&line);
                s.push('\n');
            }
        });
        Self {
            child,
            logs,
            stderr,
        }
    }

    pub fn pid(&self) -> i32 {
        i32::try_from(self.child.id()).expect("pid")
    }

    pub fn signal(&self, sig: Signal) {
        kill(Pid::from_raw(self.pid()), sig).expect("signal bindery");
    }

    /// Waits for exit, failing the test if it takes longer than `timeout`.
    pub fn wait_exit(&mut self, timeout: Duration) -> (ExitStatus, Duration) {
        let started = Instant::now();
        let status = eventually("bindery to exit", timeout, || {
            self.child.try_wait().expect("try_wait").ok_or(&self.logs)
        });
        let took = started.elapsed();
        // Read what it printed last (its worker child may hold the pipe a moment longer).
        self.logs.wait_closed(Duration::from_secs(3));
        (status, took)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // Never leave a server behind, even when an assertion failed halfway.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `bindery serve` (or `web`), started and listening.
pub struct Server {
    pub process: Running,
    pub base: String,
    pub data: tempfile::TempDir,
}

impl Server {
    /// Starts `bindery <args>` with extra environment and waits for its "listening" line.
    pub fn start(args: &[&str], env: &[(&str, &str)]) -> Self {
        let data = tempfile::tempdir().expect("tempdir");
        Self::start_in(data, args, env)
    }

    pub fn start_in(data: tempfile::TempDir, args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut cmd = command(data.path());
        cmd.args(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let process = Running::start(cmd);
        let listening = process
            .logs
            .wait_for("the listening line", Duration::from_secs(20), |l| {
                message(l, Some("web"), "listening")
            });
        let addr = listening["addr"].as_str().expect("addr field").to_owned();
        Self {
            process,
            base: format!("http://{addr}"),
            data,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Polls `/readyz` until it answers 200, and returns how long that took.
    pub fn wait_ready(&self, timeout: Duration) -> Duration {
        let started = Instant::now();
        let client = client();
        eventually("/readyz to answer 200", timeout, || {
            match client.get(self.url("/readyz")).send() {
                Ok(r) if r.status() == 200 => Ok(()),
                Ok(r) => Err(r.status().to_string()),
                Err(e) => Err(e.to_string()),
            }
        });
        started.elapsed()
    }

    /// The worker child's pid, from its "worker process started" line.
    pub fn worker_pid(&self) -> i32 {
        let line =
            self.process
                .logs
                .wait_for("the worker start line", Duration::from_secs(10), |l| {
                    message(l, Some("web"), "worker process started")
                });
        i32::try_from(line["worker.pid"].as_i64().expect("worker.pid")).expect("pid")
    }

    pub fn data_dir(&self) -> PathBuf {
        self.data.path().to_path_buf()
    }
}

/// The `METRICS_TOKEN` a test gives a server whose `/readyz` details it reads: without it (or
/// an admin's credentials) `/readyz` says only which check failed.
pub const METRICS_TOKEN: &str = "test-metrics-token-of-32-characters";

/// `/readyz` as an operator reads it (with [`METRICS_TOKEN`], which the server must have):
/// its status and body, each failed check with its `error`.
pub fn readiness(server: &Server) -> (reqwest::StatusCode, Value) {
    let response = client()
        .get(server.url("/readyz"))
        .bearer_auth(METRICS_TOKEN)
        .send()
        .expect("GET /readyz");
    let status = response.status();
    (status, response.json().expect("readiness JSON"))
}

/// The log line of a request that failed because storage was out of reach (`what` names it in
/// a timeout's message), asserting that it is a warning: an outage the service handles is not
/// a bug, which is what ERROR is for.
pub fn handled_outage_line(server: &Server, what: &str) -> Value {
    let line = server
        .process
        .logs
        .wait_for(what, Duration::from_secs(10), |l| {
            l.to_string().contains("failed: storage is unavailable")
        });
    assert_eq!(line["level"], "WARN", "{line}");
    line
}

/// How long a test waits for an answer the server may hold: `?wait=N` uploads (N at most 60)
/// and the book behind them. [`client`]'s 10 s is for answers the server gives at once; a held
/// one on a loaded machine outlasted it, and the test failed on its own timeout, not the
/// server's answer.
pub const HELD: Duration = Duration::from_secs(90);

pub fn client() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .expect("http client")
}

/// Whether a process has exited. Zombies count as exited: once its parent is gone a process
/// is reaped by whoever adopts it, which in a container may be nobody.
pub fn process_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state == "Z" || state == "X"),
    }
}

/// Waits until `pid` has exited; returns how long that took.
pub fn wait_gone(pid: i32, timeout: Duration) -> Duration {
    let started = Instant::now();
    eventually(&format!("process {pid} to exit"), timeout, || {
        process_gone(pid)
    });
    started.elapsed()
}

/// Sends a signal to an arbitrary pid (the worker grandchild).
pub fn signal_pid(pid: i32, sig: Signal) {
    kill(Pid::from_raw(pid), sig).expect("signal process");
}

/// A fresh, empty PostgreSQL database on the test server `scripts/test` started, as a URL.
/// Each call makes a new one, so tests never see each other's rows.
pub fn postgres_database() -> String {
    let admin = std::env::var("TEST_POSTGRES_URL").expect(
        "TEST_POSTGRES_URL is not set: run the suite through scripts/test, which starts PostgreSQL",
    );
    let name = format!("bindery_test_{}", uuid::Uuid::new_v4().simple());
    // On a thread of its own, so that async tests can call it too.
    let (admin_url, db_name) = (admin.clone(), name.clone());
    std::thread::spawn(move || create_database(&admin_url, &db_name))
        .join()
        .expect("create database thread");
    let mut url = url::Url::parse(&admin).expect("TEST_POSTGRES_URL");
    url.set_path(&name);
    url.to_string()
}

fn create_database(admin: &str, name: &str) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        use sqlx::Connection;
        let mut conn = sqlx::PgConnection::connect(admin)
            .await
            .expect("connect to PostgreSQL");
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut conn)
            .await
            .expect("create test database");
    });
}

/// Waits (up to 20 s) for a job to finish and returns it as stored.
pub async fn wait_job(queue: &bindery::jobs::JobQueue, id: i64) -> bindery::jobs::JobRecord {
    let finished = queue
        .wait_for(&bindery::jobs::WaitTarget::Job(id), Duration::from_secs(20))
        .await
        .expect("wait");
    assert!(
        finished,
        "job {id} did not finish: {:?}",
        queue.job(id).await
    );
    queue.job(id).await.expect("read").expect("job exists")
}

/// Every job the filter matches, newest first, read a page at a time.
pub async fn all_jobs(
    queue: &bindery::jobs::JobQueue,
    filter: bindery::jobs::JobFilter,
) -> Vec<bindery::jobs::JobRecord> {
    let mut jobs = Vec::new();
    let mut page_filter = bindery::jobs::JobFilter {
        limit: 1000,
        ..filter
    };
    loop {
        let page = queue.list(&page_filter).await.expect("list");
        let Some(last) = page.last() else { break };
        page_filter.before_id = Some(last.id);
        jobs.extend(page);
    }
    jobs
}

/// The test corpus: the manuscripts committed in `tests/fixtures/` (see its README), laid out
/// as `docx/`, `markdown/`, `text/` and the novel's cover.
pub fn corpus() -> PathBuf {
    corpus::fixtures()
}

/// Every manuscript to sweep (DOCX, Markdown, plain text), sorted: the fixtures', then the
/// outside corpus's when present. Prints which it read.
pub fn corpus_files() -> Vec<PathBuf> {
    let dirs = corpus::sweep_dirs();
    let mut files = Vec::new();
    for dir in dirs {
        let mut here = Vec::new();
        for sub in ["docx", "markdown", "text", "odt", "epub", "html"] {
            // The formats read from other tools' files came later: an outside corpus may
            // have none.
            if !dir.join(sub).is_dir() && matches!(sub, "odt" | "epub" | "html") {
                continue;
            }
            for entry in std::fs::read_dir(dir.join(sub)).expect("corpus directory") {
                let path = entry.expect("corpus entry").path();
                if path.is_file() {
                    here.push(path);
                }
            }
        }
        here.sort();
        files.extend(here);
    }
    files
}

/// Words of a text, normalised for comparison: lower case, letters and digits only, and only
/// tokens with a letter (list numbers and note markers differ between writers by design).
pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().any(char::is_alphabetic))
        .map(str::to_lowercase)
        .collect()
}

/// Runs one statement of test set-up on either backend, and returns the rows it changed.
pub async fn execute(db: &bindery::storage::Database, sql: &str) -> u64 {
    use bindery::storage::Database;
    match db {
        Database::Sqlite(pool) => sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
            .execute(pool)
            .await
            .map(|r| r.rows_affected()),
        Database::Postgres(pool) => sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
            .execute(pool)
            .await
            .map(|r| r.rows_affected()),
    }
    .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// Runs a command to success and returns its stdout, or fails the test with its stderr.
pub fn succeed(cmd: &mut Command, what: &str) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// `node tests/browser/SCRIPT`: a browser test (playwright-core on Debian's Chromium), to which
/// the caller adds its arguments.
pub fn browser_script(script: &str) -> Command {
    let mut node = Command::new("node");
    node.arg(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/browser")
            .join(script),
    );
    node
}

/// Runs a browser test to success, or fails the test with all it printed; returns what it
/// printed on stdout.
pub fn browser_passes(node: &mut Command, what: &str) -> String {
    let out = node
        .output()
        .expect("node is not installed: run the suite through scripts/test");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what}: the browser check failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The words pandoc (an independent reader) finds in a file.
pub fn pandoc_words(path: &Path, from: &str) -> Vec<String> {
    try_pandoc_words(path, from)
        .unwrap_or_else(|e| panic!("pandoc failed on {}: {e}", path.display()))
}

/// The same, or pandoc's complaint (pandoc 2.17 cannot read some valid DOCX packaging).
///
/// Mathematics is left out, on both sides of a comparison: pandoc writes an equation it read
/// as TeX and the same one read as MathML in different words (`\\alpha` against `α`), and
/// `tests/it/math.rs` compares every equation's symbols instead.
pub fn try_pandoc_words(path: &Path, from: &str) -> Result<Vec<String>, String> {
    let filter = tempfile::Builder::new()
        .suffix(".lua")
        .tempfile()
        .map_err(|e| e.to_string())?;
    std::fs::write(filter.path(), "function Math(el) return {} end\n")
        .map_err(|e| e.to_string())?;
    let out = Command::new("pandoc")
        .args(["--wrap=none", "-t", "plain", "-f", from])
        .arg("--lua-filter")
        .arg(filter.path())
        .arg(path)
        .output()
        .expect("pandoc is not installed: run the suite through scripts/test");
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(words(&String::from_utf8_lossy(&out.stdout)))
}

/// Words of a DOCX's main text read the crudest way: every `t` element (text runs; deleted
/// text is `delText`, field codes `instrText`) of `word/document.xml`, whatever its namespace
/// prefix, with paragraphs (`p` elements) apart. For files pandoc cannot read.
pub fn raw_docx_words(path: &Path) -> Vec<String> {
    use std::io::Read;
    let file = std::fs::File::open(path).expect("open docx");
    let mut zip = zip::ZipArchive::new(file).expect("docx is a zip");
    let mut xml = String::new();
    zip.by_name("word/document.xml")
        .expect("word/document.xml")
        .read_to_string(&mut xml)
        .expect("read document.xml");
    let mut text = String::new();
    let mut rest = xml.as_str();
    while let Some(open) = rest.find('<') {
        let Some(close) = rest[open..].find('>') else {
            break;
        };
        let tag = &rest[open + 1..open + close];
        let name = tag.split([' ', '/']).next().unwrap_or("");
        let local = name.rsplit(':').next().unwrap_or(name);
        rest = &rest[open + close + 1..];
        if local == "p" && !tag.starts_with('/') {
            text.push('\n');
        } else if local == "t" && !tag.ends_with('/') {
            let end = rest.find('<').unwrap_or(rest.len());
            text.push_str(
                &rest[..end]
                    .replace("&amp;", "&")
                    .replace("&lt;", "<")
                    .replace("&gt;", ">"),
            );
        }
    }
    words(&text)
}

/// The text of the entry `name` of an EPUB (`OEBPS/css/book.css`).
pub fn epub_entry(epub: &[u8], name: &str) -> String {
    use std::io::Read;
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(epub)).expect("an EPUB");
    let mut text = String::new();
    archive
        .by_name(name)
        .unwrap_or_else(|e| panic!("{name} in the EPUB: {e}"))
        .read_to_string(&mut text)
        .expect("UTF-8");
    text
}
