//! The deploy as a Heroku-style host runs it: the repository's real `Procfile` under honcho (a
//! Procfile runner; `scripts/test` installs it), first the `release` phase, then `web`, then
//! SIGTERM. And the release phase's safety: several `bindery migrate` processes started at
//! once on a fresh database, as when a release phase overlaps processes that migrate at start.

use std::io::{BufRead, BufReader, Read};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Barrier, Condvar, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use reqwest::StatusCode;
use reqwest::blocking::multipart::{Form, Part};
use serde_json::Value;

use crate::common::{self, BIN, client, process_gone};

/// How many rounds of simultaneous `migrate` processes, and how many processes per round.
const ROUNDS: usize = 5;
const RACERS: usize = 3;

/// Every migration version the binary carries, from `migrations/{backend}`.
fn migration_versions(backend: &str) -> Vec<i64> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("migrations")
        .join(backend);
    let mut versions: Vec<i64> = std::fs::read_dir(&dir)
        .expect("migrations directory")
        .map(|entry| {
            let name = entry.expect("entry").file_name();
            let name = name.to_string_lossy();
            let digits: String = name.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().expect("a numbered migration")
        })
        .collect();
    versions.sort_unstable();
    versions
}

/// Runs `sql` on the database at `database_url`, then reads the `(i64, bool)` rows of `query`.
fn on_database(database_url: &str, sql: Option<&str>, query: &str) -> Vec<(i64, bool)> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        use sqlx::Connection;
        let query = sqlx::AssertSqlSafe(query.to_owned());
        if database_url.starts_with("postgres") {
            let mut conn = sqlx::PgConnection::connect(database_url)
                .await
                .expect("connect to PostgreSQL");
            if let Some(sql) = sql {
                sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
                    .execute(&mut conn)
                    .await
                    .expect(sql);
            }
            sqlx::query_as(query)
                .fetch_all(&mut conn)
                .await
                .expect("read _sqlx_migrations")
        } else {
            let mut conn = sqlx::SqliteConnection::connect(database_url)
                .await
                .expect("open SQLite");
            if let Some(sql) = sql {
                sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
                    .execute(&mut conn)
                    .await
                    .expect(sql);
            }
            sqlx::query_as(query)
                .fetch_all(&mut conn)
                .await
                .expect("read _sqlx_migrations")
        }
    })
}

/// `(version, success)` of every row of `_sqlx_migrations`, in version order.
fn applied_migrations(database_url: &str) -> Vec<(i64, bool)> {
    on_database(
        database_url,
        None,
        "SELECT version, success FROM _sqlx_migrations ORDER BY version",
    )
}

/// A new PostgreSQL database, or an SQLite one in `dir`: its URL.
fn fresh_database(postgres: bool, dir: &Path) -> String {
    if postgres {
        crate::common::postgres_database()
    } else {
        format!("sqlite://{}", dir.join("bindery.db").display())
    }
}

/// `bindery` in `dir`, on the database at `database_url`.
fn bindery_on(dir: &Path, database_url: &str) -> Command {
    let mut cmd = crate::common::command(dir);
    cmd.env("DATABASE_URL", database_url);
    cmd
}

/// Asserts that the database holds each of the binary's migrations exactly once, applied.
fn assert_migrated(database_url: &str, backend: &str) {
    let expected: Vec<(i64, bool)> = migration_versions(backend)
        .into_iter()
        .map(|v| (v, true))
        .collect();
    assert_eq!(applied_migrations(database_url), expected);
}

#[test]
fn simultaneous_migrates_on_a_fresh_sqlite_database_apply_each_migration_once() {
    simultaneous_migrates(false);
}

#[test]
fn simultaneous_migrates_on_a_fresh_postgres_database_apply_each_migration_once() {
    if !crate::common::need::postgres() {
        return;
    }
    simultaneous_migrates(true);
}

/// The previous release starts on a database that a later release has migrated: an old process
/// restarting during a rolling deploy, or every process after a rollback. The migration it
/// does not carry is let be (migrations are additive), with a warning that names it.
#[test]
fn the_previous_release_starts_beside_a_later_releases_migration_on_sqlite() {
    beside_a_later_migration(false);
}

#[test]
fn the_previous_release_starts_beside_a_later_releases_migration_on_postgres() {
    if !crate::common::need::postgres() {
        return;
    }
    beside_a_later_migration(true);
}

fn beside_a_later_migration(postgres: bool) {
    const LATER: i64 = 99_990_101;
    let data = tempfile::tempdir().expect("tempdir");
    let database_url = fresh_database(postgres, data.path());
    let command = || bindery_on(data.path(), &database_url);
    common::succeed(command().arg("migrate"), "bindery migrate");
    let checksum = if postgres { "'\\x00'::bytea" } else { "X'00'" };
    let rows = on_database(
        &database_url,
        Some(&format!(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
             VALUES ({LATER}, 'a later release', TRUE, {checksum}, 0)"
        )),
        "SELECT version, success FROM _sqlx_migrations ORDER BY version DESC LIMIT 1",
    );
    assert_eq!(rows, [(LATER, true)]);

    let out = command()
        .arg("migrate")
        .output()
        .expect("run bindery migrate");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "bindery migrate refused a database a later release migrated ({}):\n{stderr}",
        out.status
    );
    assert!(
        stderr.contains("migrations of a later release") && stderr.contains(&LATER.to_string()),
        "no warning naming the later migration:\n{stderr}"
    );
    let token = crate::common::web::create_token(command(), "alice", false);
    assert!(token.starts_with("bdy_"), "{token}");
}

fn simultaneous_migrates(postgres: bool) {
    let backend = if postgres { "postgres" } else { "sqlite" };
    let mut waits = 0;
    for round in 0..ROUNDS {
        let data = tempfile::tempdir().expect("tempdir");
        let database_url = fresh_database(postgres, data.path());
        let command = || bindery_on(data.path(), &database_url);

        // Each process is started by its own thread as the barrier opens.
        let gate = Arc::new(Barrier::new(RACERS));
        let racers: Vec<_> = (0..RACERS)
            .map(|_| {
                let mut cmd = command();
                cmd.arg("migrate");
                let gate = gate.clone();
                std::thread::spawn(move || {
                    gate.wait();
                    cmd.output().expect("run bindery migrate")
                })
            })
            .collect();
        for racer in racers {
            let out = racer.join().expect("racer thread");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                out.status.success(),
                "round {round} on {backend}: bindery migrate failed ({}):\n{stderr}",
                out.status
            );
            waits += stderr
                .lines()
                .filter(|l| l.contains("waiting for its lock"))
                .count();
        }

        assert_migrated(&database_url, backend);
        let token = crate::common::web::create_token(command(), "alice", false);
        assert!(token.starts_with("bdy_"), "{token}");
    }
    eprintln!(
        "{backend}: {waits} of {} migrate processes waited for another's lock",
        ROUNDS * RACERS
    );
}

/// The Python that `scripts/test` installed honcho into (found once through `PATH`, so that
/// honcho itself runs with a clean environment).
fn python() -> PathBuf {
    let out = Command::new("python3")
        .args(["-c", "import honcho, sys; print(sys.executable)"])
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "honcho is not installed: run the suite through scripts/test (pip install honcho==2.0.0)\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// One line honcho printed: the process it came from (`web.1`, `release.1`, or `system` for
/// honcho's own), and the text, parsed as JSON when it is a JSON log line.
#[derive(Clone, Debug)]
struct Line {
    name: String,
    text: String,
    json: Option<Value>,
}

/// The lines honcho printed so far, and whether its output has closed, shared with the thread
/// that reads them.
type Transcript = Arc<(Mutex<(Vec<Line>, bool)>, Condvar)>;

/// What honcho printed so far, for a failed wait's message.
struct Printed<'a>(&'a Transcript);

impl std::fmt::Display for Printed<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.0.0.lock().expect("lines lock");
        writeln!(f, "honcho printed:")?;
        for line in &state.0 {
            writeln!(f, "{} | {}", line.name, line.text)?;
        }
        Ok(())
    }
}

/// `honcho start …` in an app directory, its output read line by line. Dropping it kills honcho
/// and every process it started, even after a failed assertion.
struct Honcho {
    child: Child,
    lines: Transcript,
}

impl Honcho {
    fn start(app: &Path, args: &[&str]) -> Self {
        let mut child = Command::new(python())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("PYTHONUNBUFFERED", "1")
            .current_dir(app)
            .args(["-m", "honcho", "start", "--no-colour"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start honcho");
        let lines = Transcript::default();
        let stdout = child.stdout.take().expect("stdout");
        let sink = lines.clone();
        std::thread::spawn(move || {
            for raw in BufReader::new(stdout).lines() {
                let Ok(raw) = raw else { break };
                // `HH:MM:SS name | text`
                let (head, text) = raw.split_once(" | ").unwrap_or(("", raw.as_str()));
                let line = Line {
                    name: head.split_whitespace().nth(1).unwrap_or("").to_owned(),
                    text: text.to_owned(),
                    json: serde_json::from_str(text).ok(),
                };
                sink.0.lock().expect("lines lock").0.push(line);
                sink.1.notify_all();
            }
            sink.0.lock().expect("lines lock").1 = true;
            sink.1.notify_all();
        });
        Self { child, lines }
    }

    fn pid(&self) -> i32 {
        i32::try_from(self.child.id()).expect("pid")
    }

    fn all(&self) -> Vec<Line> {
        self.lines.0.lock().expect("lines lock").0.clone()
    }

    fn transcript(&self) -> String {
        self.all()
            .iter()
            .map(|l| format!("{} | {}", l.name, l.text))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Waits until a line matches, and returns it.
    fn wait_for(&self, what: &str, timeout: Duration, pred: impl Fn(&Line) -> bool) -> Line {
        let deadline = Instant::now() + timeout;
        let (lock, cvar) = &*self.lines;
        let mut state = lock.lock().expect("lines lock");
        loop {
            if let Some(found) = state.0.iter().find(|l| pred(l)) {
                return found.clone();
            }
            let now = Instant::now();
            assert!(
                now < deadline && !state.1,
                "no {what} within {timeout:?}; honcho printed:\n{}",
                state
                    .0
                    .iter()
                    .map(|l| format!("{} | {}", l.name, l.text))
                    .collect::<Vec<_>>()
                    .join("\n")
            );
            state = cvar
                .wait_timeout(state, deadline - now)
                .expect("lines lock")
                .0;
        }
    }

    /// Waits for honcho to exit and for all it printed; fails the test past `timeout`.
    fn wait_exit(&mut self, timeout: Duration) -> (ExitStatus, Duration) {
        let started = Instant::now();
        let status = common::eventually("honcho to exit", timeout, || {
            let printed = Printed(&self.lines);
            self.child.try_wait().expect("try_wait").ok_or(printed)
        });
        let took = started.elapsed();
        let (lock, cvar) = &*self.lines;
        let state = lock.lock().expect("lines lock");
        drop(
            cvar.wait_timeout_while(state, Duration::from_secs(5), |s| !s.1)
                .expect("lines lock"),
        );
        (status, took)
    }

    fn stderr(&mut self) -> String {
        let mut text = String::new();
        if let Some(mut pipe) = self.child.stderr.take() {
            let _ = pipe.read_to_string(&mut text);
        }
        text
    }

    /// Every pid honcho started (`name started (pid=N)`, each the leader of its own session)
    /// and every pid a bindery log line names (its own, its worker child's).
    fn pids(&self) -> (Vec<i32>, Vec<i32>) {
        let mut leaders = Vec::new();
        let mut others = Vec::new();
        for line in self.all() {
            if line.name == "system"
                && let Some(pid) = line
                    .text
                    .split_once("started (pid=")
                    .and_then(|(_, rest)| rest.trim_end_matches(')').parse().ok())
            {
                leaders.push(pid);
            }
            if let Some(json) = &line.json {
                for key in ["pid", "worker.pid"] {
                    if let Some(pid) = json[key].as_i64().and_then(|p| i32::try_from(p).ok()) {
                        others.push(pid);
                    }
                }
            }
        }
        (leaders, others)
    }
}

impl Drop for Honcho {
    fn drop(&mut self) {
        // honcho runs each process in a session of its own, and bindery's worker has a process
        // group of its own: killing honcho alone would leave them running.
        let (leaders, others) = self.pids();
        for pid in leaders {
            if !process_gone(pid) {
                let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
            }
        }
        for pid in others {
            if !process_gone(pid) {
                let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            }
        }
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A free loopback port (there is a short window in which someone else could take it).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

const SMALL_BOOK: &str = "---\ntitle: A Deploy in Three Acts\nauthor: R. Elease\n---\n\n\
    # The Release Phase\n\nThe migrations ran once, before anything else.\n\n\
    # The Web\n\nThen the web process answered on the port it was given.\n\n\
    # The Signal\n\nAnd at the end everyone left quietly, with nothing left running.\n";

#[test]
fn the_procfile_runs_under_honcho_release_then_web_then_sigterm() {
    if !crate::common::need::honcho() {
        return;
    }
    let app = tempfile::tempdir().expect("tempdir");
    let app = app.path();

    // The app as a host checks it out: the real Procfile, and the release build where the
    // Procfile expects it (here the binary under test).
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("Procfile"),
        app.join("Procfile"),
    )
    .expect("copy the Procfile");
    std::fs::create_dir_all(app.join("target/release")).expect("target/release");
    std::os::unix::fs::symlink(BIN, app.join("target/release/bindery")).expect("symlink");
    // The host's configuration; honcho and bindery both read .env.
    std::fs::write(
        app.join(".env"),
        "DATA_DIR=data\nHOST=127.0.0.1\nLOG_FORMAT=json\nRUST_LOG=info\n",
    )
    .expect("write .env");
    let database_url = format!("sqlite://{}", app.join("data/bindery.db").display());

    // The release phase, alone: it must finish, and succeed, before any web process starts.
    let mut release = Honcho::start(app, &["release"]);
    let (status, _) = release.wait_exit(Duration::from_secs(60));
    assert!(
        status.success(),
        "honcho start release: {status}\n{}\n{}",
        release.transcript(),
        release.stderr()
    );
    release.wait_for("the release's exit", Duration::ZERO, |l| {
        l.name == "system" && l.text.contains("release.1 stopped (rc=0)")
    });
    release.wait_for("the migration's log line", Duration::ZERO, |l| {
        l.name == "release.1"
            && l.json
                .as_ref()
                .is_some_and(|j| crate::common::message(j, None, "database migrated"))
    });
    drop(release);
    assert_migrated(&database_url, "sqlite");

    // A token, made by the binary as an operator would, with the same .env.
    let mut cli = Command::new(BIN);
    cli.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .current_dir(app);
    let token = crate::common::web::create_token(cli, "alice", false);

    // The web process type, on the port honcho gives it.
    let port = free_port();
    let mut web = Honcho::start(app, &["web", "-p", &port.to_string()]);
    let listening = web.wait_for("the listening line", Duration::from_secs(30), |l| {
        l.name == "web.1"
            && l.json
                .as_ref()
                .is_some_and(|j| crate::common::message(j, Some("web"), "listening"))
    });
    let json = listening.json.expect("json");
    assert_eq!(
        json["addr"].as_str(),
        Some(format!("127.0.0.1:{port}").as_str()),
        "bindery listens on the PORT honcho set"
    );
    let web_pid = i32::try_from(json["pid"].as_i64().expect("pid")).expect("pid");
    let worker_pid = web.wait_for("the worker start line", Duration::from_secs(10), |l| {
        l.json
            .as_ref()
            .is_some_and(|j| crate::common::message(j, Some("web"), "worker process started"))
    });
    let worker_pid = i32::try_from(
        worker_pid.json.expect("json")["worker.pid"]
            .as_i64()
            .expect("worker.pid"),
    )
    .expect("pid");

    let base = format!("http://127.0.0.1:{port}");
    let http = client();
    common::eventually(
        "/readyz to answer 200",
        Duration::from_secs(30),
        || match http.get(format!("{base}/readyz")).send() {
            Ok(r) if r.status() == StatusCode::OK => Ok(()),
            _ => Err(Printed(&web.lines)),
        },
    );

    // A book, through the API, to ready.
    let form = Form::new().part(
        "manuscript",
        Part::bytes(SMALL_BOOK.as_bytes().to_vec()).file_name("deploy.md"),
    );
    let created = http
        .post(format!("{base}/api/v1/books?wait=30"))
        .bearer_auth(&token)
        .multipart(form)
        .send()
        .expect("POST /api/v1/books");
    assert!(
        matches!(created.status(), StatusCode::OK | StatusCode::ACCEPTED),
        "upload: {}",
        created.status()
    );
    let book: Value = created.json().expect("json");
    let id = book["id"].as_str().expect("id").to_owned();
    common::eventually("the book to be ready", Duration::from_secs(60), || {
        let book: Value = http
            .get(format!("{base}/api/v1/books/{id}"))
            .bearer_auth(&token)
            .send()
            .expect("GET book")
            .json()
            .expect("json");
        match book["status"].as_str() {
            Some("ready") => Ok(()),
            Some("failed") => panic!("the book failed: {book}"),
            _ => Err(book),
        }
    });
    let epub = http
        .get(format!("{base}/api/v1/books/{id}/epub"))
        .bearer_auth(&token)
        .send()
        .expect("GET epub");
    assert_eq!(epub.status(), StatusCode::OK);
    let epub = epub.bytes().expect("epub body").to_vec();
    // An EPUB is a zip whose first entry, stored, is `mimetype`.
    assert_eq!(&epub[..4], b"PK\x03\x04", "a zip");
    assert_eq!(&epub[30..38], b"mimetype", "mimetype comes first");
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(epub)).expect("a readable zip");
    let mut mimetype = String::new();
    zip.by_index(0)
        .expect("first entry")
        .read_to_string(&mut mimetype)
        .expect("mimetype");
    assert_eq!(mimetype, "application/epub+zip");

    // The host stops the dyno: SIGTERM to honcho, which passes it on to the web's process
    // group. Everything exits cleanly within the shutdown timeout (25 s by default; honcho
    // itself sends SIGKILL after 5 s, which must not be needed).
    kill(Pid::from_raw(web.pid()), Signal::SIGTERM).expect("SIGTERM honcho");
    let (status, took) = web.wait_exit(Duration::from_secs(25));
    let transcript = web.transcript();
    // honcho reports a stop by SIGTERM as 128 + 15 whatever its processes did; how the web
    // process exited is its `stopped (rc=…)` line.
    assert_eq!(
        status.code(),
        Some(143),
        "honcho's exit: {status}\n{transcript}"
    );
    assert!(
        transcript.contains("web.1 stopped (rc=0)"),
        "the web process exits 0:\n{transcript}"
    );
    assert!(
        !transcript.contains("SIGKILL"),
        "honcho had to kill:\n{transcript}"
    );
    for pid in [web_pid, worker_pid] {
        crate::common::wait_gone(pid, Duration::from_secs(5));
    }
    eprintln!("honcho and bindery stopped {took:?} after SIGTERM");
}
