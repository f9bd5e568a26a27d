//! The database and the blob store belong to one installation: a process that finds them from
//! two (an emptied database file, or `DATABASE_URL` pointed at another database while
//! `BLOB_URL` still holds the books) refuses to start, keeps every file, and starts again only
//! after `bindery storage adopt --yes`; the blob sweep deletes nothing while they differ, and
//! at most a tenth of the book folders a run while they agree.

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use bindery::books::{BookId, RevisionId, keys};
use bindery::jobs::JobState;
use bindery::pipeline::SweepBlobs;
use common::books::{open, submit_bytes, wait_book};
use common::{Running, Server, client, command, message};
use nix::sys::signal::Signal;
use reqwest::StatusCode;
use reqwest::blocking::multipart::{Form, Part};
use serde_json::Value;

const MANUSCRIPT: &str = "---\ntitle: Kept Files\nauthor: A. Tester\n---\n\n# One\n\nThe first chapter.\n\n# Two\n\nThe second chapter.\n";

/// Every file under `dir`, relative to it.
fn files(dir: &Path) -> BTreeSet<PathBuf> {
    let mut found = BTreeSet::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(next) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&next) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                todo.push(path);
            } else {
                found.insert(path.strip_prefix(dir).expect("under dir").to_path_buf());
            }
        }
    }
    found
}

fn marker_id(blobs: &Path) -> String {
    let text = std::fs::read_to_string(blobs.join("bindery/installation.json")).expect("marker");
    let marker: Value = serde_json::from_str(&text).expect("marker is JSON");
    marker["id"].as_str().expect("id").to_owned()
}

/// Runs `cmd`, which must exit with code 2 and one line on stderr; returns that line.
fn refused(cmd: Command) -> String {
    let mut process = Running::start(cmd);
    let (status, _) = process.wait_exit(Duration::from_secs(30));
    // Its last line read, or what was read in 5 s (the assertions below then say what is wrong).
    let stderr = common::within(Duration::from_secs(5), Duration::from_millis(20), || {
        let text = process.stderr.lock().expect("stderr").clone();
        if text.ends_with('\n') {
            Ok(text)
        } else {
            Err(text)
        }
    })
    .unwrap_or_else(|seen| seen.unwrap_or_default());
    assert_eq!(status.code(), Some(2), "exit code; stderr: {stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line on stderr: {stderr}");
    let line = lines[0].to_owned();
    assert!(line.starts_with("bindery: configuration error: "), "{line}");
    assert!(line.contains("bindery storage adopt --yes"), "{line}");
    line
}

/// Uploads the manuscript and waits for the book to be ready; returns its id.
fn upload(server: &Server, token: &str) -> String {
    let response = client()
        .post(server.url("/api/v1/books?wait=30"))
        .timeout(common::HELD)
        .bearer_auth(token)
        .multipart(Form::new().part(
            "manuscript",
            Part::bytes(MANUSCRIPT.as_bytes().to_vec()).file_name("kept.md"),
        ))
        .send()
        .expect("POST /api/v1/books");
    assert_eq!(response.status(), StatusCode::OK, "ready within the wait");
    let book: Value = response.json().expect("json");
    book["id"].as_str().expect("id").to_owned()
}

fn stop(server: &mut Server) {
    server.process.signal(Signal::SIGTERM);
    let (status, _) = server.process.wait_exit(Duration::from_secs(30));
    assert!(status.success(), "clean stop: {status:?}");
}

#[test]
fn an_emptied_database_file_is_refused_and_every_blob_kept_until_adopted() {
    let mut server = Server::start(&["serve"], &[("SCHEDULE_SWEEP_BLOBS", "off")]);
    let data = server.data_dir();
    let token = common::web::token(&server, "alice", false);
    let book = upload(&server, &token);
    stop(&mut server);
    let blobs = data.join("blobs");
    let before = files(&blobs);
    assert!(
        before
            .iter()
            .any(|f| f.starts_with(format!("books/{book}"))),
        "{before:?}"
    );
    let installation = marker_id(&blobs);

    // `: > data/bindery.db`
    std::fs::File::create(data.join("bindery.db")).expect("truncate the database file");

    let mut serve = command(&data);
    serve.arg("serve");
    let line = refused(serve);
    assert!(line.contains("DATABASE_URL"), "{line}");
    assert!(
        line.contains(&format!("1 book of installation {installation}")),
        "{line}"
    );
    // The release phase refuses too, before creating anything in the new database.
    let mut migrate = command(&data);
    migrate.arg("migrate");
    refused(migrate);
    assert_eq!(
        sqlite_count(
            &data.join("bindery.db"),
            "SELECT count(*) FROM sqlite_master WHERE type = 'table'"
        ),
        0
    );
    assert_eq!(files(&blobs), before, "every blob is still there");

    // Without --yes it only says what it would do.
    let out = command(&data)
        .args(["storage", "adopt"])
        .output()
        .expect("run bindery storage adopt");
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains(&format!(
            "adopt the blob store's installation id {installation}"
        )),
        "{said}"
    );
    assert!(
        said.contains("1 book, 1 of them not in this database"),
        "{said}"
    );
    let out = command(&data)
        .args(["storage", "adopt", "--yes"])
        .output()
        .expect("run bindery storage adopt --yes");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(files(&blobs), before, "adopting deletes nothing");

    let mut again = Running::start({
        let mut cmd = command(&data);
        cmd.args(["serve"]).env("SCHEDULE_SWEEP_BLOBS", "off");
        cmd
    });
    let listening = again
        .logs
        .wait_for("the listening line", Duration::from_secs(20), |l| {
            message(l, Some("web"), "listening")
        });
    let base = format!("http://{}", listening["addr"].as_str().expect("addr"));
    common::eventually(
        "/readyz to answer 200",
        Duration::from_secs(30),
        || match client().get(format!("{base}/readyz")).send() {
            Ok(r) if r.status() == 200 => Ok(()),
            Ok(r) => Err(r.status().to_string()),
            Err(e) => Err(e.to_string()),
        },
    );
    // A new database: the old token is unknown.
    let old = client()
        .get(format!("{base}/api/v1/books"))
        .bearer_auth(&token)
        .send()
        .expect("GET");
    assert_eq!(old.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(marker_id(&blobs), installation);
    again.signal(Signal::SIGTERM);
    assert!(again.wait_exit(Duration::from_secs(30)).0.success());
    assert_eq!(files(&blobs), before);
}

#[test]
fn two_databases_against_one_blob_store_are_refused() {
    if !common::need::postgres() {
        return;
    }
    let mut first = Server::start(&["serve"], &[("SCHEDULE_SWEEP_BLOBS", "off")]);
    let token = common::web::token(&first, "alice", false);
    upload(&first, &token);
    stop(&mut first);
    let blobs = first.data_dir().join("blobs");
    let before = files(&blobs);
    let installation = marker_id(&blobs);
    let blob_url = format!("file://{}", blobs.display());

    // A new PostgreSQL database beside the first installation's books.
    let postgres = common::postgres_database();
    let other = tempfile::tempdir().expect("tempdir");
    let mut serve = command(other.path());
    serve
        .arg("serve")
        .env("DATABASE_URL", &postgres)
        .env("BLOB_URL", &blob_url);
    let line = refused(serve);
    assert!(
        line.contains(&format!("1 book of installation {installation}")),
        "{line}"
    );

    // That database, once it is an installation of its own (with its own blob store), is
    // still refused beside the first one's: the ids differ.
    let mut own = Server::start_in(
        other,
        &["serve"],
        &[("DATABASE_URL", &postgres), ("SCHEDULE_SWEEP_BLOBS", "off")],
    );
    own.wait_ready(Duration::from_secs(30));
    stop(&mut own);
    let second = marker_id(&own.data_dir().join("blobs"));
    assert_ne!(second, installation);
    let mut serve = command(&own.data_dir());
    serve
        .arg("serve")
        .env("DATABASE_URL", &postgres)
        .env("BLOB_URL", &blob_url);
    let line = refused(serve);
    assert!(
        line.contains(&format!("installation {second}"))
            && line.contains(&format!("1 book of installation {installation}")),
        "{line}"
    );
    assert_eq!(files(&blobs), before, "every blob is still there");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sweep_is_bounded_and_deletes_nothing_for_another_installation() {
    let mut server = Server::start(&["serve"], &[("SCHEDULE_SWEEP_BLOBS", "off")]);
    let data = server.data_dir();
    let store = open(&data, None).await;
    let book = submit_bytes(&store, "real.md", MANUSCRIPT.as_bytes().to_vec(), None).await;
    assert_eq!(
        wait_book(&store, &book, Duration::from_secs(30))
            .await
            .status,
        "ready"
    );
    let real_files = store
        .blobs
        .list(&keys::book_prefix(&book))
        .await
        .expect("list");

    // 30 orphans two hours old, and one just written.
    let two_hours_ago = SystemTime::now() - Duration::from_secs(2 * 3600);
    let mut old = BTreeSet::new();
    for _ in 0..30 {
        let id = BookId::new();
        store
            .blobs
            .put_if_absent(&keys::upload(&RevisionId::first(&id)), b"cut off".to_vec())
            .await
            .expect("put");
        std::fs::File::options()
            .write(true)
            .open(
                data.join("blobs")
                    .join(keys::upload(&RevisionId::first(&id))),
            )
            .expect("open orphan")
            .set_modified(two_hours_ago)
            .expect("age the orphan");
        old.insert(id.to_string());
    }
    let young = BookId::new();
    store
        .blobs
        .put_if_absent(
            &keys::upload(&RevisionId::first(&young)),
            b"still streaming".to_vec(),
        )
        .await
        .expect("put");

    let sweep = || {
        let queue = store.queue.clone();
        async move {
            let job = queue
                .enqueue(bindery::jobs::NewJob::of(&SweepBlobs {
                    min_age_secs: 3600,
                }))
                .await
                .expect("enqueue");
            let done = common::wait_job(&queue, job.id).await;
            assert_eq!(done.state, JobState::Completed, "{:?}", done.last_error());
            done.result_json().expect("result")
        }
    };
    let remaining = |old: &BTreeSet<String>| {
        let books = files(&data.join("blobs").join("books"));
        old.iter()
            .filter(|id| books.iter().any(|f| f.starts_with(id.as_str())))
            .count()
    };

    // 32 book folders: a tenth is 3.
    let first = sweep().await;
    assert_eq!(first["books_checked"], 32, "{first}");
    assert_eq!(first["limit"], 3, "{first}");
    assert_eq!(first["orphans"], 3, "{first}");
    assert_eq!(first["stopped_at_limit"], true, "{first}");
    assert_eq!(remaining(&old), 27);
    // The job's completion is read from the database, which can be ahead of the worker's log
    // lines on their way through its stdout: wait for the third line before counting.
    let deleted_lines = || -> Vec<String> {
        server
            .process
            .logs
            .all()
            .iter()
            .filter(|l| {
                message(
                    l,
                    Some("worker"),
                    "deleted the files of a book that does not exist",
                )
            })
            .map(|l| l["book.id"].as_str().expect("book.id").to_owned())
            .collect()
    };
    let deleted = common::eventually(
        "the third deletion's log line",
        Duration::from_secs(5),
        || {
            let lines = deleted_lines();
            (lines.len() >= 3).then_some(lines)
        },
    );
    assert_eq!(deleted.len(), 3, "one line per book: {deleted:?}");
    assert!(deleted.iter().all(|id| old.contains(id)), "{deleted:?}");
    server
        .process
        .logs
        .wait_for("the bound's warning", Duration::from_secs(5), |l| {
            message(l, Some("worker"), "stopped at its bound") && l["level"] == "WARN"
        });
    assert_eq!(
        store
            .blobs
            .list(&keys::book_prefix(&book))
            .await
            .expect("list"),
        real_files,
        "the real book keeps every file"
    );
    assert!(
        store
            .blobs
            .get_opt(&keys::upload(&RevisionId::first(&young)))
            .await
            .expect("get")
            .is_some(),
        "a young orphan is kept"
    );

    // The blob store now says it is another installation's: nothing is deleted.
    let marker = data.join("blobs/bindery/installation.json");
    let text = std::fs::read_to_string(&marker).expect("marker");
    let ours = marker_id(&data.join("blobs"));
    std::fs::write(
        &marker,
        text.replace(&ours, &uuid::Uuid::new_v4().to_string()),
    )
    .expect("rewrite the marker");
    let before = files(&data.join("blobs"));
    let refused = sweep().await;
    assert_eq!(refused["orphans"], 0, "{refused}");
    assert!(
        refused["refused"]
            .as_str()
            .is_some_and(|r| r.contains(&ours)),
        "{refused}"
    );
    assert_eq!(files(&data.join("blobs")), before, "nothing deleted");
    assert_eq!(remaining(&old), 27);
    server
        .process
        .logs
        .wait_for("the sweep's refusal", Duration::from_secs(5), |l| {
            message(l, Some("worker"), "sweep_blobs deletes nothing")
        });
    store.db.close().await;
    stop(&mut server);
}

/// An installation from before the id (books and tokens in the database, no id, no marker)
/// starts as before, and from then on both sides hold one new id.
#[test]
fn an_installation_from_before_the_id_gets_one_at_its_next_start() {
    let mut server = Server::start(&["serve"], &[("SCHEDULE_SWEEP_BLOBS", "off")]);
    let data = server.data_dir();
    let token = common::web::token(&server, "alice", false);
    let book = upload(&server, &token);
    stop(&mut server);
    let blobs = data.join("blobs");
    let before = marker_id(&blobs);
    // What the previous release left: no row, no marker.
    common::sqlite_execute(&data.join("bindery.db"), "DELETE FROM installation");
    std::fs::remove_file(blobs.join("bindery/installation.json")).expect("remove the marker");
    let kept = files(&blobs);

    let mut again = Server::start_in(server.data, &["serve"], &[("SCHEDULE_SWEEP_BLOBS", "off")]);
    again.wait_ready(Duration::from_secs(30));
    let after = marker_id(&blobs);
    assert_ne!(after, before, "a new id");
    assert_eq!(
        sqlite_scalar(&data.join("bindery.db"), "SELECT id FROM installation"),
        after,
        "the same id in the database"
    );
    let response = client()
        .get(again.url(&format!("/api/v1/books/{book}")))
        .bearer_auth(&token)
        .send()
        .expect("GET the book");
    assert_eq!(response.status(), StatusCode::OK, "the old token and book");
    stop(&mut again);
    let mut now = files(&blobs);
    now.remove(Path::new("bindery/installation.json"));
    assert_eq!(now, kept);
}

fn sqlite_scalar(path: &Path, query: &'static str) -> String {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        use sqlx::Connection;
        let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite://{}", path.display()))
            .await
            .expect("open the database file");
        let value: String = sqlx::query_scalar(query)
            .fetch_one(&mut conn)
            .await
            .expect("query");
        conn.close().await.expect("close");
        value
    })
}

/// Two installations from before the id, the database of one beside the blob store of the
/// other: the database's books are not in the blob store, so no id is recorded and the start
/// is refused.
#[test]
fn a_database_from_before_the_id_beside_another_installations_books_is_refused() {
    let mut stripped = Vec::new();
    for name in ["alice", "bob"] {
        let mut server = Server::start(&["serve"], &[("SCHEDULE_SWEEP_BLOBS", "off")]);
        let token = common::web::token(&server, name, false);
        upload(&server, &token);
        stop(&mut server);
        let data = server.data_dir();
        common::sqlite_execute(&data.join("bindery.db"), "DELETE FROM installation");
        std::fs::remove_file(data.join("blobs/bindery/installation.json")).expect("remove");
        stripped.push(server);
    }
    let (alice, bob) = (stripped[0].data_dir(), stripped[1].data_dir());
    let before = files(&bob.join("blobs"));
    let mut serve = command(&alice);
    serve.arg("serve").env(
        "BLOB_URL",
        format!("file://{}", bob.join("blobs").display()),
    );
    let line = refused(serve);
    assert!(
        line.contains("1 book but BLOB_URL holds the files of none of its newest"),
        "{line}"
    );
    assert_eq!(
        files(&bob.join("blobs")),
        before,
        "nothing written or deleted"
    );
    assert!(
        sqlite_count(
            &alice.join("bindery.db"),
            "SELECT count(*) FROM installation"
        ) == 0,
        "no id recorded"
    );
}

fn sqlite_count(path: &Path, query: &'static str) -> i64 {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        use sqlx::Connection;
        let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite://{}", path.display()))
            .await
            .expect("open the database file");
        let value: i64 = sqlx::query_scalar(query)
            .fetch_one(&mut conn)
            .await
            .expect("query");
        conn.close().await.expect("close");
        value
    })
}
