//! Storage faults: a disk that fills up under a running `bindery serve` and is freed again, and
//! commits that fail on PostgreSQL. The service must wait calmly while the disk is full (no
//! loop that spins, a few log lines a second at most), come back by itself within seconds once
//! space returns, say honestly while it cannot write, and never wedge a connection.
//!
//! The full disk is a 20 MB tmpfs at `DATA_DIR`, mounted in a mount namespace of the server's
//! own (`unshare`; as root, or in a user namespace otherwise), so nothing outlives the test's
//! processes. The test reaches it through `/proc/PID/root`, the server's view of the file
//! system. For PostgreSQL the server's data directory is on that disk instead, the cluster
//! made and started in the same namespace (as root, as the `postgres` user).

use crate::common;

use std::fs::OpenOptions;
use std::io::Write;
use std::path::PathBuf;
use std::process::Command;
use std::str::FromStr;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use reqwest::StatusCode;
use reqwest::blocking::multipart::{Form, Part};
use serde_json::Value;

use bindery::config::{DatabaseUrl, Secret};
use bindery::storage::{Database, Tx};
use common::{BIN, Running, Server, client, message, process_gone};

const KB: u64 = 1024;
/// The most log lines a second a service on a full disk may write (issue #24: "a few").
const CALM_LINES_A_SECOND: f64 = 3.0;
/// How soon after space returns a book caught by the full disk must be ready (issue #24).
const READY_AFTER_SPACE: Duration = Duration::from_secs(5);

/// `bindery serve` with `DATA_DIR` on a tmpfs of `size_mb` that only its processes see, and a
/// token made on it before the server started.
struct SmallDisk {
    server: Server,
    token: String,
    /// `DATA_DIR` as the server sees it, reached from outside its mount namespace.
    view: PathBuf,
    /// With [`SmallDisk::with_postgres`], the PostgreSQL server whose data is on the disk,
    /// and its URL.
    postmaster: Option<(Postmaster, String)>,
}

/// A PostgreSQL server started in the disk's mount namespace, stopped (immediate shutdown)
/// when the test ends, pass or fail: the namespace, and the tmpfs, end with it.
struct Postmaster(i32);

impl Drop for Postmaster {
    fn drop(&mut self) {
        common::signal_pid(self.0, Signal::SIGQUIT);
        common::wait_gone(self.0, Duration::from_secs(10));
    }
}

impl SmallDisk {
    fn start(size_mb: u64) -> Self {
        Self::launch(size_mb, None)
    }

    /// `bindery serve` on a PostgreSQL whose data directory is on the small disk (the blob store
    /// is elsewhere). Needs real root: PostgreSQL runs as the `postgres` user.
    fn with_postgres(size_mb: u64) -> Self {
        let root =
            std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").expect("proc"))
                == 0;
        assert!(
            root,
            "this test starts PostgreSQL in a mount namespace as the postgres user: run it as root (scripts/test in CI is)"
        );
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .expect("PostgreSQL is installed (scripts/test installs it)")
            .filter_map(Result::ok)
            .map(|e| e.path().join("bin"))
            .filter(|p| p.join("initdb").exists())
            .max()
            .expect("a PostgreSQL version with initdb");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        Self::launch(size_mb, Some((bin, port)))
    }

    fn launch(size_mb: u64, postgres: Option<(PathBuf, u16)>) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        // PostgreSQL's user must reach its data directory below this one.
        std::fs::set_permissions(
            dir.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .expect("chmod");
        let data = dir.path().join("data");
        std::fs::create_dir_all(&data).expect("data dir");
        let token_file = dir.path().join("token");
        let script = match postgres {
            None => {
                r#"mount -t tmpfs -o "size=$4m" tmpfs "$1" && "$2" token create alice > "$3" && exec "$2" serve"#
            }
            Some(_) => {
                r#"mount -t tmpfs -o "size=$4m" tmpfs "$1" && mkdir "$1/pg" "$1/../pglog" &&
                chown postgres: "$1/pg" "$1/../pglog" &&
                runuser -u postgres -- "$5/initdb" -D "$1/pg/data" -U bindery --auth=trust -E UTF8 --no-instructions > /dev/null &&
                runuser -u postgres -- "$5/pg_ctl" -D "$1/pg/data" -l "$1/../pglog/postgres.log" -w start \
                    -o "-c listen_addresses=127.0.0.1 -p $6 -k $1/pg/data -c fsync=off" > /dev/null &&
                head -n 1 "$1/pg/data/postmaster.pid" > "$1/../postmaster.pid" &&
                "$2" token create alice > "$3" && exec "$2" serve"#
            }
        };
        let mut cmd = Command::new("unshare");
        let root =
            std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").expect("proc"))
                == 0;
        if !root {
            cmd.arg("--map-root-user");
        }
        cmd.args([
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            script,
            "sh",
        ])
        .arg(&data)
        .arg(BIN)
        .arg(&token_file)
        .arg(size_mb.to_string());
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("DATA_DIR", &data)
            // Logs beside the disk, not on it: this test is about the service's storage.
            .env("LOG_DIR", dir.path().join("logs"))
            .env("HOST", "127.0.0.1")
            .env("PORT", "0")
            .env("LOG_FORMAT", "json")
            .env("RUST_LOG", "info,bindery=debug")
            // What this measures is the database's disk; typesetting in an unoptimised build
            // would only add seconds to each book's way to ready.
            .env("PRINT_EDITION", "false")
            // `/readyz` names what failed to an operator.
            .env("METRICS_TOKEN", common::METRICS_TOKEN)
            // Webhooks to this machine, for a receiver that is down.
            .env("WEBHOOK_ALLOW_PRIVATE", "true")
            .current_dir(dir.path());
        if let Some((bin, port)) = &postgres {
            cmd.arg(bin).arg(port.to_string());
            cmd.env(
                "DATABASE_URL",
                format!("postgres://bindery@127.0.0.1:{port}/postgres"),
            );
            let blobs = dir.path().join("blobs");
            std::fs::create_dir_all(&blobs).expect("blob dir");
            cmd.env("BLOB_URL", format!("file://{}", blobs.display()));
        }
        // `sh` execs the server, so the child's pid is `bindery serve`'s.
        let process = Running::start(cmd);
        // Known before anything else can fail, so that PostgreSQL is stopped whatever happens.
        let postmaster = postgres.as_ref().map(|(_, port)| {
            let file = dir.path().join("postmaster.pid");
            let pid = common::eventually("PostgreSQL to start", Duration::from_secs(60), || {
                std::fs::read_to_string(&file)
                    .ok()
                    .and_then(|t| t.trim().parse().ok())
            });
            let url = format!("postgres://bindery@127.0.0.1:{port}/postgres");
            (Postmaster(pid), url)
        });
        let listening = process
            .logs
            .wait_for("the listening line", Duration::from_secs(30), |l| {
                message(l, Some("web"), "listening")
            });
        let base = format!("http://{}", listening["addr"].as_str().expect("addr"));
        let token = std::fs::read_to_string(&token_file)
            .expect("token file")
            .trim()
            .to_owned();
        assert!(token.starts_with("bdy_"), "token: {token:?}");
        let view = PathBuf::from(format!("/proc/{}/root", process.child.id()))
            .join(data.strip_prefix("/").expect("absolute"));
        let server = Server {
            process,
            base,
            data: dir,
        };
        Self {
            server,
            token,
            view,
            postmaster,
        }
    }

    /// `bindery jobs ARGS` against the disk's PostgreSQL, from outside the namespace.
    fn jobs(&self, args: &[&str]) {
        let (_, url) = self.postmaster.as_ref().expect("with_postgres");
        let out = Command::new(BIN)
            .arg("jobs")
            .args(args)
            .env_clear()
            .env("DATABASE_URL", url)
            .env("DATA_DIR", self.server.data.path().join("cli"))
            .env(
                "BLOB_URL",
                format!("file://{}", self.server.data.path().join("blobs").display()),
            )
            .output()
            .expect("bindery jobs");
        assert!(out.status.success(), "bindery jobs {args:?}: {out:?}");
    }

    /// Waits for book `id` to leave `processing` once space was freed; it must be ready.
    /// Returns how long that took.
    fn ready_after_space_returns(&self, id: &str) -> Duration {
        let freed = Instant::now();
        let status = common::eventually("the book to finish", Duration::from_secs(30), || {
            let status = self.book_status(id);
            (status != "processing").then_some(status)
        });
        let took = freed.elapsed();
        assert_eq!(status, "ready", "log:\n{}", self.log_text());
        eprintln!("the book was ready {took:?} after space returned");
        took
    }

    /// Keeps the disk full for `window` and watches the service meanwhile: it must back off, not
    /// spin. A full disk once had the worker try, fail and log a promotion of due jobs every
    /// 20 ms (242 lines in two seconds); now every loop storage fails waits by one rule and says
    /// so once, then every 10 s. So at most [`CALM_LINES_A_SECOND`] lines a second, of any level
    /// but debug, from both processes.
    fn assert_calm_while_full(&self, window: Duration) {
        self.fill("filler-rest", 0);
        let before = self.server.process.logs.all().len();
        let started = Instant::now();
        while started.elapsed() < window {
            // Time passes, not a wait for a condition: the window the service must stay calm in.
            std::thread::sleep(Duration::from_millis(200));
            // Whatever a failed write gave back is taken again.
            self.fill("filler-rest", 0);
        }
        let lines: Vec<Value> = self.server.process.logs.all()[before..]
            .iter()
            .filter(|l| !matches!(l["level"].as_str(), Some("DEBUG" | "TRACE")))
            .cloned()
            .collect();
        let per_second = lines.len() as f64 / started.elapsed().as_secs_f64();
        eprintln!(
            "{} lines in {:?} while the disk was full ({per_second:.1} a second)",
            lines.len(),
            started.elapsed()
        );
        assert!(
            per_second <= CALM_LINES_A_SECOND,
            "{per_second:.1} lines a second while the disk was full:\n{}",
            lines
                .iter()
                .map(Value::to_string)
                .collect::<Vec<_>>()
                .join("\n")
        );
    }

    fn free_bytes(&self) -> u64 {
        let stat = nix::sys::statvfs::statvfs(&self.view).expect("statvfs");
        stat.blocks_available() * stat.fragment_size()
    }

    /// Writes a file of zeros that leaves `leave` bytes free (or fills the disk, `leave` 0).
    fn fill(&self, name: &str, leave: u64) -> PathBuf {
        let path = self.view.join(name);
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .expect("filler");
        let chunk = vec![0u8; 64 * 1024];
        loop {
            let free = self.free_bytes();
            if free <= leave {
                break;
            }
            let n = usize::try_from((free - leave).min(chunk.len() as u64)).expect("usize");
            match file.write(&chunk[..n]) {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(nix::errno::Errno::ENOSPC as i32) => break,
                Err(e) => panic!("filling {}: {e}", path.display()),
            }
        }
        file.sync_all().ok();
        path
    }

    fn upload_with_callback(&self, manuscript: &[u8], callback_url: &str) -> String {
        let form = Form::new()
            .part(
                "manuscript",
                Part::bytes(manuscript.to_vec()).file_name("novel.md"),
            )
            .text("callback_url", callback_url.to_owned());
        let accepted = client()
            .post(self.server.url("/api/v1/books"))
            .bearer_auth(&self.token)
            .multipart(form)
            .send()
            .expect("POST /api/v1/books");
        assert_eq!(accepted.status(), StatusCode::ACCEPTED);
        let accepted: Value = accepted.json().expect("book JSON");
        accepted["id"].as_str().expect("id").to_owned()
    }

    /// Waits for book `id` to leave `processing`; it must end `status`.
    fn wait_book(&self, id: &str, status: &str) {
        let ended = common::eventually("the book to finish", Duration::from_secs(60), || {
            let status = self.book_status(id);
            (status != "processing").then_some(status)
        });
        assert_eq!(ended, status, "log:\n{}", self.log_text());
    }

    fn upload(&self, manuscript: &[u8]) -> reqwest::blocking::Response {
        let form = Form::new().part(
            "manuscript",
            Part::bytes(manuscript.to_vec()).file_name("novel.md"),
        );
        client()
            .post(self.server.url("/api/v1/books"))
            .bearer_auth(&self.token)
            .multipart(form)
            .send()
            .expect("POST /api/v1/books")
    }

    fn book_status(&self, id: &str) -> String {
        let book: Value = client()
            .get(self.server.url(&format!("/api/v1/books/{id}")))
            .bearer_auth(&self.token)
            .send()
            .expect("GET book")
            .json()
            .expect("book JSON");
        book["status"].as_str().unwrap_or_default().to_owned()
    }

    fn readyz(&self) -> (StatusCode, Value) {
        common::readiness(&self.server)
    }

    /// The book directories in the blob store.
    fn book_dirs(&self) -> Vec<String> {
        let dir = self.view.join("blobs").join("books");
        let mut names: Vec<String> = match std::fs::read_dir(&dir) {
            Ok(entries) => entries
                .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
                .collect(),
            Err(_) => Vec::new(),
        };
        names.sort();
        names
    }

    fn log_text(&self) -> String {
        self.server
            .process
            .logs
            .all()
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// A novel of `chapters` chapters of generated prose, as Markdown: about 13 KB a chapter.
fn novel(chapters: usize) -> Vec<u8> {
    const WORDS: &[&str] = &[
        "the",
        "river",
        "lantern",
        "quietly",
        "harbour",
        "morning",
        "she",
        "walked",
        "towards",
        "an",
        "orchard",
        "whose",
        "letters",
        "remembered",
        "winter",
        "and",
        "his",
        "brother",
        "carried",
        "bread",
        "across",
        "bridge",
        "evening",
        "rain",
        "stone",
        "window",
        "old",
        "garden",
        "listened",
        "because",
        "nobody",
        "spoke",
        "of",
        "ships",
        "salt",
        "returned",
    ];
    let mut text = String::from("---\ntitle: The Full Disk\nauthor: A. Tester\n---\n\n");
    let mut n = 7usize;
    for chapter in 1..=chapters {
        text.push_str(&format!("# Chapter {chapter}\n\n"));
        for _paragraph in 0..24 {
            let mut sentence_start = true;
            for word in 0..90 {
                // A small linear congruential walk: varied, and the same on every run.
                n = n.wrapping_mul(1_103_515_245).wrapping_add(12_345) % 2_147_483_648;
                let w = WORDS[(n >> 8) % WORDS.len()];
                if sentence_start {
                    let mut c = w.chars();
                    let first = c.next().expect("word").to_uppercase();
                    text.extend(first);
                    text.push_str(c.as_str());
                    sentence_start = false;
                } else {
                    text.push_str(w);
                }
                if word % 13 == 12 {
                    text.push_str(". ");
                    sentence_start = true;
                } else {
                    text.push(' ');
                }
            }
            text.push_str("the end.\n\n");
        }
    }
    text.into_bytes()
}

/// A loopback port nothing listens on: a webhook receiver that is down.
fn closed_port() -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("address")
}

fn out_of_space(line: &Value) -> bool {
    let text = line.to_string();
    text.contains("No space left on device") || text.contains("database or disk is full")
}

#[test]
fn a_disk_full_for_a_moment_stops_nothing_for_good() {
    let _heavy = common::heavy();
    let disk = SmallDisk::start(20);
    disk.server.wait_ready(Duration::from_secs(30));
    let worker = disk.server.worker_pid();
    // A short novel, whose conversion takes moments once space returns.
    let manuscript = novel(10);
    assert!(manuscript.len() > 120_000, "{} bytes", manuscript.len());

    // A book whose webhook receiver is down: its delivery is tried again after 1, 2, 4 and 8 s.
    let down = disk.upload_with_callback(&novel(1), &format!("http://{}/hook", closed_port()));
    disk.wait_book(&down, "ready");
    // The disk fills with nothing running: a retry of the delivery falls due while it is full,
    // and promoting it fails. A worker that did not back off tried that, and logged it, every
    // 20 ms.
    let filler = disk.fill("filler", 0);
    disk.assert_calm_while_full(Duration::from_secs(6));

    // About 400 KB free: the upload fits, its conversion does not.
    std::fs::remove_file(&filler).expect("free");
    let filler = disk.fill("filler", 400 * KB);
    let accepted = disk.upload(&manuscript);
    assert_eq!(accepted.status(), StatusCode::ACCEPTED);
    let accepted: Value = accepted.json().expect("book JSON");
    let id = accepted["id"].as_str().expect("id").to_owned();
    disk.server.process.logs.wait_for(
        "a write that failed for want of space",
        Duration::from_secs(60),
        |l| out_of_space(l) && l["level"] != "INFO",
    );
    // Whatever the failed writes gave back, the disk is full now. (Not asserted with a second
    // look at the free space: the service may give back a few blocks at any moment, as it did
    // once under load, 94 KB; each check below fills the disk again first.)
    let rest = disk.fill("filler-rest", 0);
    assert_eq!(disk.book_status(&id), "processing");
    // And with a book caught mid-way, the service waits as calmly for space.
    disk.assert_calm_while_full(Duration::from_secs(4));

    // Readiness says so, naming the store that cannot write. (Each check first takes whatever
    // space the service may have given back meanwhile.)
    disk.fill("filler-rest", 0);
    let (status, body) = disk.readyz();
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["blob_store"]["ok"], false, "{body}");
    let error = body["blob_store"]["error"].as_str().unwrap_or_default();
    assert!(error.contains("No space left on device"), "{body}");
    for check in ["database", "blob_store", "worker"] {
        assert!(body[check]["ok"].is_boolean(), "{check} in {body}");
    }

    // An upload is refused as such, and leaves nothing behind.
    disk.fill("filler-rest", 0);
    let before = disk.book_dirs();
    let refused = disk.upload(&manuscript);
    assert_eq!(refused.status(), StatusCode::INSUFFICIENT_STORAGE);
    let refused: Value = refused.json().expect("error JSON");
    assert_eq!(
        refused["error"]["code"], "insufficient_storage",
        "{refused}"
    );
    let text = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(text.contains("out of storage space"), "{refused}");
    let after = disk.book_dirs();
    let left: Vec<_> = after
        .iter()
        .filter(|d| !before.contains(d))
        .map(|d| {
            let dir = disk.view.join("blobs").join("books").join(d);
            let files: Vec<_> = std::fs::read_dir(dir)
                .map(|e| e.filter_map(Result::ok).map(|e| e.file_name()).collect())
                .unwrap_or_default();
            (d.clone(), files)
        })
        .collect();
    assert!(
        left.is_empty(),
        "the refused upload left blobs behind: {left:?}"
    );

    // Space returns: the book finishes soon, by the same worker, and readiness recovers.
    std::fs::remove_file(&rest).expect("free");
    std::fs::remove_file(&filler).expect("free");
    let took = disk.ready_after_space_returns(&id);
    assert!(took < READY_AFTER_SPACE, "{took:?}");
    common::eventually("/readyz to answer 200", Duration::from_secs(10), || {
        (disk.readyz().0 == StatusCode::OK).then_some(())
    });
    assert!(!process_gone(worker), "the worker was restarted");
    let started: Vec<Value> = disk
        .server
        .process
        .logs
        .all()
        .into_iter()
        .filter(|l| message(l, Some("web"), "worker process started"))
        .collect();
    assert_eq!(started.len(), 1, "the worker was restarted: {started:?}");
    let log = disk.log_text();
    assert!(
        !log.contains("non-zero transaction depth"),
        "a connection was left inside a transaction:\n{log}"
    );

    // And it stops cleanly.
    let mut disk = disk;
    disk.server.process.signal(Signal::SIGTERM);
    let (exit, took) = disk.server.process.wait_exit(Duration::from_secs(30));
    assert_eq!(exit.code(), Some(0), "log:\n{}", disk.log_text());
    assert!(took < Duration::from_secs(25), "SIGTERM took {took:?}");
}

/// The same on PostgreSQL, whose data directory is on the small disk: a full disk fails the
/// worker's commits ("could not extend file"), and once space returns the book finishes within
/// seconds, by the same worker, with no restart.
#[test]
fn postgres_on_a_disk_full_for_a_moment_stops_nothing_for_good() {
    if !common::need::postgres_programs() {
        return;
    }
    let _heavy = common::heavy();
    let disk = SmallDisk::with_postgres(80);
    disk.server.wait_ready(Duration::from_secs(30));
    let worker = disk.server.worker_pid();
    // Accepted while there is room, converted once the disk is full.
    disk.jobs(&["pause", "books"]);
    let accepted = disk.upload(&novel(30));
    assert_eq!(accepted.status(), StatusCode::ACCEPTED);
    let accepted: Value = accepted.json().expect("book JSON");
    let id = accepted["id"].as_str().expect("id").to_owned();
    let filler = disk.fill("filler", 0);
    assert_eq!(disk.free_bytes(), 0);
    disk.jobs(&["resume", "books"]);
    disk.server.process.logs.wait_for(
        "a commit that failed for want of space",
        Duration::from_secs(60),
        |l| out_of_space(l) && l["level"] != "INFO",
    );
    assert_eq!(disk.book_status(&id), "processing");
    disk.assert_calm_while_full(Duration::from_secs(6));

    std::fs::remove_file(&filler).expect("free");
    std::fs::remove_file(disk.view.join("filler-rest")).ok();
    let took = disk.ready_after_space_returns(&id);
    assert!(took < READY_AFTER_SPACE, "{took:?}");
    assert!(!process_gone(worker), "the worker was restarted");
    assert!(disk.postmaster.is_some());

    let mut disk = disk;
    disk.server.process.signal(Signal::SIGTERM);
    let (exit, _) = disk.server.process.wait_exit(Duration::from_secs(30));
    assert_eq!(exit.code(), Some(0), "log:\n{}", disk.log_text());
}

/// The web process dying while the disk is full (its host kills it) takes its worker with it,
/// although the worker cannot commit what it has finished: one that waited for the disk before
/// it stopped outlived its web for good, holding its jobs and the disk (found as orphans of this
/// file's tests, still running an hour after their test had failed).
#[test]
fn a_worker_whose_web_dies_on_a_full_disk_stops() {
    /// Kills the worker if the test fails with it still running.
    struct Orphan(i32);
    impl Drop for Orphan {
        fn drop(&mut self) {
            if !process_gone(self.0) {
                common::signal_pid(self.0, Signal::SIGKILL);
            }
        }
    }
    let _heavy = common::heavy();
    let disk = SmallDisk::start(20);
    disk.server.wait_ready(Duration::from_secs(30));
    let worker = Orphan(disk.server.worker_pid());
    disk.fill("filler", 400 * KB);
    assert_eq!(disk.upload(&novel(10)).status(), StatusCode::ACCEPTED);
    disk.server.process.logs.wait_for(
        "the worker failing to commit for want of space",
        Duration::from_secs(60),
        |l| {
            l["role"] == "worker"
                && l["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("committing or claiming jobs failed"))
        },
    );
    disk.fill("filler-rest", 0);
    disk.server.process.signal(Signal::SIGKILL);
    let took = common::wait_gone(worker.0, Duration::from_secs(15));
    eprintln!("the worker stopped {took:?} after its web process was killed");
}

#[test]
fn readiness_fails_without_the_blob_directory() {
    let disk = SmallDisk::start(20);
    disk.server.wait_ready(Duration::from_secs(30));
    let blobs = disk.view.join("blobs");
    let moved = disk.view.join("blobs-moved");
    std::fs::rename(&blobs, &moved).expect("move the blob directory away");
    let (status, body) = disk.readyz();
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["blob_store"]["ok"], false, "{body}");
    assert!(
        body["blob_store"]["error"]
            .as_str()
            .is_some_and(|e| e.contains("missing")),
        "{body}"
    );
    // The probe did not quietly make it again.
    assert!(!blobs.exists());
    std::fs::rename(&moved, &blobs).expect("put it back");
    common::eventually("/readyz to answer 200", Duration::from_secs(10), || {
        (disk.readyz().0 == StatusCode::OK).then_some(())
    });
}

fn postgres_url() -> DatabaseUrl {
    DatabaseUrl::Postgres {
        url: Secret::new(url::Url::from_str(&common::postgres_database()).expect("url")),
    }
}

/// A pool of one connection, so that the transaction after a failed one gets the same
/// connection, or its replacement.
async fn postgres_pool_of_one() -> (Database, DatabaseUrl) {
    let url = postgres_url();
    let db = Database::connect(&url, 1).await.expect("connect");
    let Database::Postgres(pool) = &db else {
        unreachable!()
    };
    sqlx::raw_sql(
        "CREATE TABLE parents (id INT PRIMARY KEY);
         CREATE TABLE children (id INT PRIMARY KEY,
             parent INT NOT NULL REFERENCES parents (id) DEFERRABLE INITIALLY DEFERRED)",
    )
    .execute(pool)
    .await
    .expect("tables");
    (db, url)
}

async fn insert_parent(db: &Database, id: i32) -> sqlx::Result<()> {
    let mut tx = db.begin().await?;
    let Tx::Postgres(t) = &mut tx else {
        unreachable!()
    };
    sqlx::query("INSERT INTO parents (id) VALUES ($1)")
        .bind(id)
        .execute(&mut **t)
        .await?;
    tx.commit().await
}

async fn parents(db: &Database) -> Vec<i32> {
    let Database::Postgres(pool) = &db else {
        unreachable!()
    };
    sqlx::query_scalar("SELECT id FROM parents ORDER BY id")
        .fetch_all(pool)
        .await
        .expect("select")
}

#[tokio::test]
async fn a_commit_postgres_refuses_leaves_the_connection_usable() {
    if !common::need::postgres() {
        return;
    }
    let (db, _) = postgres_pool_of_one().await;
    let mut tx = db.begin().await.expect("begin");
    let Tx::Postgres(t) = &mut tx else {
        unreachable!()
    };
    // Checked only at COMMIT, which fails and ends the transaction.
    sqlx::query("INSERT INTO parents (id) VALUES (1)")
        .execute(&mut **t)
        .await
        .expect("insert");
    sqlx::query("INSERT INTO children (id, parent) VALUES (1, 999)")
        .execute(&mut **t)
        .await
        .expect("a deferred check passes for now");
    let refused = tx
        .commit()
        .await
        .expect_err("the deferred check fails at COMMIT");
    assert!(refused.to_string().contains("foreign key"), "{refused}");
    for id in 2..5 {
        insert_parent(&db, id)
            .await
            .expect("a transaction after the failed commit");
    }
    assert_eq!(parents(&db).await, [2, 3, 4]);
}

#[tokio::test]
async fn a_connection_killed_mid_transaction_is_replaced() {
    if !common::need::postgres() {
        return;
    }
    let (db, url) = postgres_pool_of_one().await;
    let other = Database::connect(&url, 1).await.expect("a second pool");
    let mut tx = db.begin().await.expect("begin");
    let Tx::Postgres(t) = &mut tx else {
        unreachable!()
    };
    let backend: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(&mut **t)
        .await
        .expect("backend pid");
    sqlx::query("INSERT INTO parents (id) VALUES (1)")
        .execute(&mut **t)
        .await
        .expect("insert");
    let Database::Postgres(other_pool) = &other else {
        unreachable!()
    };
    let killed: bool = sqlx::query_scalar("SELECT pg_terminate_backend($1)")
        .bind(backend)
        .fetch_one(other_pool)
        .await
        .expect("terminate");
    assert!(killed);
    tx.commit().await.expect_err("the server is gone");
    insert_parent(&db, 2)
        .await
        .expect("a transaction on a fresh connection");
    assert_eq!(parents(&db).await, [2]);
    other.close().await;
}
