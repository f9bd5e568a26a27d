//! `bindery logs`: the lines of every process that shares the database, merged by time, then
//! (with `-f`) new lines as they are written; and with `--files`, this machine's log files.

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{Server, command};

#[test]
fn logs_prints_both_roles_files_and_follows_new_lines() {
    let server = Server::start(&["serve"], &[]);
    server.wait_ready(Duration::from_secs(30));

    // The server logs JSON (as the tests run it), one object per line, each with its role.
    let lines = |args: &[&str]| {
        let mut logs = command(&server.data_dir());
        logs.args(["logs", "--files"]).args(args);
        json_lines(logs)
    };
    let all = lines(&["-n", "200"]);
    let has = |role: &str, text: &str| all.iter().any(|l| common::message(l, Some(role), text));
    assert!(has("web", "listening"), "{all:#?}");
    assert!(has("worker", "worker ready"), "{all:#?}");
    let times: Vec<&str> = all.iter().filter_map(|l| l["timestamp"].as_str()).collect();
    assert!(
        times.windows(2).all(|w| w[0] <= w[1]),
        "merged in time order"
    );

    let only_worker = lines(&["--role", "worker"]);
    assert!(!only_worker.is_empty());
    assert!(
        only_worker.iter().all(|l| l["role"] == "worker"),
        "{only_worker:#?}"
    );

    // Following: a request made after it started shows up.
    let mut follow = command(&server.data_dir());
    follow.args(["logs", "--files", "-n", "0", "-f"]);
    follows_a_new_request(follow, &server);
}

#[test]
fn an_empty_log_dir_writes_no_files_and_full_files_roll_keeping_the_newest() {
    // Off: the processes run and log to stdout and the database, and write no file.
    let server = Server::start(&["serve"], &[("LOG_DIR", "")]);
    server.wait_ready(Duration::from_secs(30));
    let logs = |server: &Server, args: &[&str]| {
        let mut logs = command(&server.data_dir());
        logs.env("LOG_DIR", "").args(["logs", "--json"]).args(args);
        logs
    };
    let lines = common::eventually(
        "the worker's line in the database",
        Duration::from_secs(10),
        || {
            let lines = json_lines(logs(&server, &["-n", "200"]));
            lines
                .iter()
                .any(|l| common::message(l, Some("worker"), "worker ready"))
                .then_some(lines)
        },
    );
    assert!(
        lines
            .iter()
            .any(|l| common::message(l, Some("web"), "listening"))
    );
    let entries: Vec<_> = std::fs::read_dir(server.data_dir())
        .expect("data dir")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert!(!entries.iter().any(|e| e == "logs"), "{entries:?}");
    let refused = logs(&server, &["--files"]).output().expect("bindery logs");
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("LOG_DIR is off"), "{said}");
    drop(server);

    // Capped: 3 files of 4 KiB at most per role, and the newest lines are the ones kept.
    let cap = 4096;
    let server = Server::start(
        &["serve"],
        &[("LOG_MAX_FILE_SIZE", "4KiB"), ("LOG_MAX_FILES", "3")],
    );
    server.wait_ready(Duration::from_secs(30));
    let client = common::client();
    let last = format!("/static/last-{}", std::process::id());
    for n in 0..100 {
        let _ = client.get(server.url(&format!("/static/flood-{n}"))).send();
    }
    let _ = client.get(server.url(&last)).send();
    let dir = server.data_dir().join("logs");
    let web_files = || -> Vec<(String, u64)> {
        let mut files: Vec<(String, u64)> = std::fs::read_dir(&dir)
            .expect("LOG_DIR")
            .map(|e| e.expect("entry"))
            .filter(|e| e.file_name().to_string_lossy().starts_with("web."))
            .map(|e| {
                (
                    e.file_name().to_string_lossy().into_owned(),
                    e.metadata().expect("meta").len(),
                )
            })
            .collect();
        files.sort();
        files
    };
    let kept = common::eventually(
        "the last request's line in the files",
        Duration::from_secs(10),
        || {
            let mut files = command(&server.data_dir());
            files.args(["logs", "--files", "--role", "web", "-n", "400"]);
            let kept = json_lines(files);
            kept.iter()
                .any(|l| l.to_string().contains(&last))
                .then_some(kept)
        },
    );
    let on_disk = web_files();
    assert_eq!(on_disk.len(), 3, "{on_disk:?}");
    assert!(on_disk.iter().all(|(_, size)| *size <= cap), "{on_disk:?}");
    assert!(
        !kept
            .iter()
            .any(|l| l.to_string().contains("/static/flood-0\"")),
        "the oldest lines went with their files"
    );
}

/// Runs `logs` (a `bindery logs` command printing JSON), which must succeed, and parses its
/// lines.
fn json_lines(mut logs: std::process::Command) -> Vec<serde_json::Value> {
    common::succeed(&mut logs, "bindery logs")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// Starts `follow` (a `bindery logs -f` command), makes requests until the line of one shows
/// up, and returns how long the first of them took to show; then stops it with Ctrl-C.
fn follows_a_new_request(mut follow: std::process::Command, server: &Server) -> Duration {
    let mut follow = follow
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("bindery logs -f");
    let stdout = follow.stdout.take().expect("stdout");
    let (lines, seen) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines.send((line, Instant::now())).is_err() {
                break;
            }
        }
    });
    // It says nothing until there is a new line, so requests are made until one shows up
    // (a request made before it was watching would not: it prints only new lines).
    let found = (0..100).find_map(|n| {
        let marker = format!("/static/marker-{}-{n}", std::process::id());
        let sent = Instant::now();
        let _ = common::client().get(server.url(&marker)).send();
        let deadline = sent + Duration::from_millis(1500);
        while let Ok((line, at)) =
            seen.recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            if line.contains(&marker) {
                return Some(at - sent);
            }
        }
        None
    });
    // Ctrl-C (SIGINT) ends it cleanly.
    common::signal_pid(follow.id() as i32, nix::sys::signal::Signal::SIGINT);
    let status = follow.wait().expect("wait");
    assert!(status.success(), "{status:?}");
    found.expect("the new request's line never arrived")
}

/// The acceptance of the shared stream: two `web` and two `worker` processes on one
/// PostgreSQL, each with a LOG_DIR of its own, and `bindery logs` run from a third directory
/// that has no log files at all.
#[test]
fn logs_shows_every_process_sharing_the_database_from_anywhere() {
    if !common::need::postgres() {
        return;
    }
    let database = common::postgres_database();
    // One blob store for all four, as on a real deployment, so that books convert.
    let blobs = tempfile::tempdir().expect("tempdir");
    let blob_url = format!("file://{}", blobs.path().display());
    let env = [
        ("DATABASE_URL", database.as_str()),
        ("BLOB_URL", blob_url.as_str()),
    ];
    let webs: Vec<Server> = (0..2).map(|_| Server::start(&["web"], &env)).collect();
    let workers: Vec<(tempfile::TempDir, common::Running)> = (0..2)
        .map(|_| {
            let dir = tempfile::tempdir().expect("tempdir");
            let mut worker = command(dir.path());
            worker.arg("worker").envs(env);
            let running = common::Running::start(worker);
            running
                .logs
                .wait_for("worker ready", Duration::from_secs(30), |l| {
                    common::message(l, Some("worker"), "worker ready")
                });
            (dir, running)
        })
        .collect();
    for web in &webs {
        web.wait_ready(Duration::from_secs(30));
    }
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let logs = |args: &[&str]| {
        let mut logs = command(elsewhere.path());
        logs.env("DATABASE_URL", &database)
            .args(["logs", "--json"])
            .args(args);
        json_lines(logs)
    };

    // Every process's start, each line once, in time order.
    let pids: Vec<i64> = webs
        .iter()
        .map(|w| i64::from(w.process.pid()))
        .chain(workers.iter().map(|(_, w)| i64::from(w.pid())))
        .collect();
    let all = common::eventually("a line of every process", Duration::from_secs(10), || {
        let all = logs(&["-n", "100", "--grep", "ready"])
            .into_iter()
            .chain(logs(&["-n", "100", "--grep", "listening"]))
            .collect::<Vec<_>>();
        pids.iter()
            .all(|pid| all.iter().any(|l| l["pid"] == *pid))
            .then_some(all)
    });
    let listening: Vec<&serde_json::Value> = all
        .iter()
        .filter(|l| l["role"] == "web" && l["message"] == "listening")
        .collect();
    assert_eq!(listening.len(), 2, "{listening:#?}");
    let recent = logs(&["-n", "30"]);
    assert_eq!(recent.len(), 30, "-n 30 prints 30 lines");
    let times: Vec<&str> = recent
        .iter()
        .filter_map(|l| l["timestamp"].as_str())
        .collect();
    assert_eq!(times.len(), recent.len());
    assert!(
        times.windows(2).all(|w| w[0] <= w[1]),
        "merged in time order: {times:#?}"
    );

    // The filters.
    let only_workers = logs(&["-n", "50", "--role", "worker"]);
    assert!(!only_workers.is_empty());
    assert!(only_workers.iter().all(|l| l["role"] == "worker"));
    let warnings = logs(&["--level", "warn", "-n", "1000"]);
    assert!(
        warnings
            .iter()
            .all(|l| l["level"] == "WARN" || l["level"] == "ERROR"),
        "{warnings:#?}"
    );
    let bad = command(elsewhere.path())
        .env("DATABASE_URL", &database)
        .args(["logs", "--level", "loud"])
        .output()
        .expect("bindery logs");
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("use error, warn, info, debug or trace"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );

    // Following from the third directory: a request to either web process shows up.
    for web in &webs {
        let mut follow = command(elsewhere.path());
        follow
            .env("DATABASE_URL", &database)
            .args(["logs", "-n", "0", "-f"]);
        let took = follows_a_new_request(follow, web);
        println!(
            "bindery logs -f showed a new request's line after {} ms",
            took.as_millis()
        );
        assert!(took < Duration::from_secs(1), "shown after {took:?}");
    }

    // From a laptop: no database, only the deployment's URL and an admin token. The same
    // lines, over HTTP, whichever web process answers.
    let mut cli = command(elsewhere.path());
    cli.env("DATABASE_URL", &database);
    let admin = common::web::create_token(cli, "operator", true);
    let mut cli = command(elsewhere.path());
    cli.env("DATABASE_URL", &database);
    let tenant = common::web::create_token(cli, "author", false);
    let laptop = tempfile::tempdir().expect("tempdir");
    let remote = |token: &str| {
        let mut logs = command(laptop.path());
        logs.args(["logs", "--app", &webs[0].base, "--json"])
            .env("BINDERY_TOKEN", token);
        logs
    };
    let mut ready = remote(&admin);
    ready.args(["-n", "400", "--grep", "ready"]);
    let lines = json_lines(ready);
    for (_, worker) in &workers {
        assert!(
            lines
                .iter()
                .any(|l| l["pid"] == i64::from(worker.pid()) && l["message"] == "worker ready"),
            "worker {} missing from {lines:#?}",
            worker.pid()
        );
    }
    assert!(
        std::fs::read_dir(laptop.path())
            .expect("read_dir")
            .next()
            .is_none(),
        "the remote tail writes nothing where it runs"
    );
    let refused = remote(&tenant)
        .args(["-n", "5"])
        .output()
        .expect("bindery logs --app");
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("404") && said.contains("admin"), "{said}");
    let mut follow = command(laptop.path());
    follow
        .args(["logs", "-n", "0", "-f", "--app", &webs[1].base])
        .env("BINDERY_TOKEN", &admin);
    let took = follows_a_new_request(follow, &webs[0]);
    println!(
        "bindery logs -f --app showed a new request's line after {} ms",
        took.as_millis()
    );
    assert!(took < Duration::from_secs(1), "shown after {took:?}");

    // A book's own log, for its tenant: two books, each converted by one of the workers
    // through one of the web processes, and each log has its own book's lines only.
    let books: Vec<(String, &str)> = ["alpha", "beta"]
        .into_iter()
        .zip(&webs)
        .map(|(name, web)| (upload_markdown(web, &tenant, name), name))
        .collect();
    let stranger = {
        let mut cli = command(elsewhere.path());
        cli.env("DATABASE_URL", &database);
        common::web::create_token(cli, "stranger", false)
    };
    let book_log = |web: &Server, token: &str, id: &str| {
        common::client()
            .get(web.url(&format!("/api/v1/books/{id}/logs")))
            .bearer_auth(token)
            .send()
            .expect("GET /api/v1/books/{id}/logs")
    };
    for (i, (id, name)) in books.iter().enumerate() {
        // Read through the other web process: the log is in the database, not in a process.
        let web = &webs[1 - i];
        let log = common::eventually(
            "the book's log to reach its publication",
            Duration::from_secs(60),
            || {
                let log: serde_json::Value = book_log(web, &tenant, id).json().ok()?;
                let lines = log["lines"].as_array()?.clone();
                lines
                    .iter()
                    .any(|l| l["message"] == "book published")
                    .then_some(lines)
            },
        );
        let said = |role: &str, message: &str| {
            log.iter()
                .any(|l| l["role"] == role && l["message"] == message)
        };
        assert!(said("web", "book submitted"), "{log:#?}");
        assert!(said("worker", "book published"), "{log:#?}");
        // Lines that do not name the book themselves: their job's span does.
        assert!(said("worker", "manuscript read"), "{log:#?}");
        assert!(said("worker", "EPUB packaged"), "{log:#?}");
        // Every conversion step's run is there with its job.
        let jobs: std::collections::BTreeSet<i64> =
            log.iter().filter_map(|l| l["job"].as_i64()).collect();
        assert!(jobs.len() >= 4, "{jobs:?} in {log:#?}");
        let text = serde_json::to_string(&log).expect("json");
        assert!(text.contains(&format!("{name}.md")), "{log:#?}");
        let other = if *name == "alpha" { "beta" } else { "alpha" };
        assert!(
            !text.contains(&format!("{other}.md")),
            "{name}'s log shows {other}'s lines: {log:#?}"
        );
        for line in &log {
            assert!(
                line.get("host").is_none() && line.get("pid").is_none(),
                "{line:#}"
            );
        }
        // Another tenant, and the operator's own token, are told it does not exist.
        let refused = book_log(web, &stranger, id);
        assert_eq!(refused.status(), reqwest::StatusCode::NOT_FOUND);
        let body: serde_json::Value = refused.json().expect("json");
        assert_eq!(body["error"]["code"], "book_not_found", "{body:#}");
        assert_eq!(
            book_log(web, &admin, id).status(),
            reqwest::StatusCode::NOT_FOUND
        );
        // And the book's page shows the same lines.
        let session = common::web::session(web, &tenant);
        let page = common::web::browser()
            .get(web.url(&format!("/books/{id}")))
            .header("cookie", &session.cookie)
            .send()
            .and_then(|r| r.text())
            .expect("the book's page");
        assert!(page.contains("book published"), "{page}");
    }
}

/// Uploads a small Markdown book named `name` as `token`'s tenant, and returns its id.
fn upload_markdown(web: &Server, token: &str, name: &str) -> String {
    let manuscript = format!("# {name}\n\nThe only chapter of {name}, short and plain.\n");
    let form = reqwest::blocking::multipart::Form::new().part(
        "manuscript",
        reqwest::blocking::multipart::Part::bytes(manuscript.into_bytes())
            .file_name(format!("{name}.md")),
    );
    let response = common::client()
        .post(web.url("/api/v1/books"))
        .bearer_auth(token)
        .multipart(form)
        .send()
        .expect("POST /api/v1/books");
    assert!(response.status().is_success(), "{response:?}");
    let body: serde_json::Value = response.json().expect("json");
    body["id"].as_str().expect("the book's id").to_owned()
}
