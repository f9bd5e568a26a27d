//! The admin API against the real server: only admin tokens reach it; jobs listed, filtered,
//! paged and operated on; queues paused and resumed; worker heartbeats; schedules; and the
//! live log stream.

use crate::common;

use std::io::{BufRead, BufReader, Read};
use std::process::Command;
use std::time::Duration;

use bindery::books::{self, BookId, NewBook, RevisionId, Tenant, keys};
use bindery::jobs::NewJob;
use bindery::pipeline::steps;
use bindery::worker::builtin::Noop;
use reqwest::StatusCode;
use reqwest::blocking::Response;
use serde_json::Value;

use common::{Server, client, command};
use nix::sys::signal::Signal;

/// A running `bindery serve` and the database it uses.
struct Admin {
    server: Server,
    database_url: Option<String>,
}

impl Admin {
    fn start(postgres: bool, env: &[(&str, &str)]) -> Self {
        let database_url = postgres.then(common::postgres_database);
        let mut env: Vec<(&str, &str)> = env.to_vec();
        if let Some(url) = &database_url {
            env.push(("DATABASE_URL", url));
        }
        let server = Server::start(&["serve"], &env);
        server.wait_ready(Duration::from_secs(20));
        Self {
            server,
            database_url,
        }
    }

    /// `bindery …` against the server's database.
    fn cli(&self) -> Command {
        let mut cmd = command(&self.server.data_dir());
        if let Some(url) = &self.database_url {
            cmd.env("DATABASE_URL", url);
        }
        cmd
    }

    fn token(&self, name: &str, admin: bool) -> String {
        common::web::create_token(self.cli(), name, admin)
    }

    async fn store(&self) -> common::books::Store {
        common::books::open(&self.server.data_dir(), self.database_url.as_deref()).await
    }

    fn get(&self, token: &str, path: &str) -> Response {
        client()
            .get(self.server.url(&format!("/api/v1/admin{path}")))
            .bearer_auth(token)
            .send()
            .expect("GET")
    }

    fn post(&self, token: &str, path: &str) -> Response {
        client()
            .post(self.server.url(&format!("/api/v1/admin{path}")))
            .bearer_auth(token)
            .send()
            .expect("POST")
    }

    /// GET that must answer 200 with JSON.
    fn json(&self, token: &str, path: &str) -> Value {
        ok(self.get(token, path))
    }

    fn job(&self, token: &str, id: i64) -> Value {
        self.json(token, &format!("/jobs/{id}"))
    }

    /// Ids of the jobs a listing returns, newest first.
    fn ids(&self, token: &str, query: &str) -> Vec<i64> {
        self.json(token, &format!("/jobs?{query}"))["jobs"]
            .as_array()
            .expect("jobs")
            .iter()
            .map(|j| j["id"].as_i64().expect("id"))
            .collect()
    }

    fn queue(&self, token: &str, name: &str) -> Value {
        self.json(token, "/queues")["queues"]
            .as_array()
            .expect("queues")
            .iter()
            .find(|q| q["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("queue {name} is not listed"))
    }

    fn schedule(&self, token: &str, name: &str) -> Value {
        self.json(token, "/schedules")["schedules"]
            .as_array()
            .expect("schedules")
            .iter()
            .find(|s| s["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("schedule {name} is not listed"))
    }

    /// Polls a job until `pred` holds.
    fn wait_job(&self, token: &str, id: i64, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        common::eventually(&format!("job {id} {what}"), Duration::from_secs(30), || {
            let job = self.job(token, id);
            if pred(&job) {
                Ok(job)
            } else {
                Err(format!("{job:#}"))
            }
        })
    }
}

fn ok(response: Response) -> Value {
    let status = response.status();
    let body: Value = response.json().expect("a JSON body");
    assert_eq!(status, StatusCode::OK, "{body:#}");
    body
}

/// The status and error code of a failed call.
fn error(response: Response) -> (StatusCode, String, String) {
    let status = response.status();
    let body: Value = response.json().expect("a JSON error body");
    (
        status,
        body["error"]["code"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    )
}

#[test]
fn only_admin_tokens_reach_the_admin_api() {
    let admin = Admin::start(false, &[]);
    let root = admin.token("root", true);
    let alice = admin.token("alice", false);

    let gets = [
        "/jobs",
        "/jobs?state=bogus&limit=x",
        "/jobs/1",
        "/queues",
        "/workers",
        "/schedules",
        "/logs?lines=5",
    ];
    let posts = [
        "/jobs/1/retry",
        "/jobs/1/cancel",
        "/jobs/1/discard",
        "/queues/default/pause",
        "/queues/default/resume",
    ];
    for path in gets {
        let (status, code, _) = error(admin.get(&alice, path));
        assert_eq!(
            (status, code.as_str()),
            (StatusCode::NOT_FOUND, "not_found"),
            "GET {path}"
        );
    }
    for path in posts {
        let (status, code, _) = error(admin.post(&alice, path));
        assert_eq!(
            (status, code.as_str()),
            (StatusCode::NOT_FOUND, "not_found"),
            "POST {path}"
        );
    }
    // Exactly what a route that does not exist answers.
    let (status, code, _) = error(admin.get(&alice, "/no-such-thing"));
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::NOT_FOUND, "not_found")
    );
    // Without a token at all: the usual 401.
    let response = client()
        .get(admin.server.url("/api/v1/admin/jobs"))
        .send()
        .expect("GET");
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);

    // The admin reaches all of them, and alice's pause did nothing.
    for path in ["/jobs", "/queues", "/workers", "/schedules"] {
        ok(admin.get(&root, path));
    }
    assert_eq!(admin.queue(&root, "default")["paused"], false);
    let (status, code, message) = error(admin.get(&root, "/jobs?state=bogus"));
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::BAD_REQUEST, "invalid_parameter")
    );
    assert!(message.contains("dead"), "{message}");
}

#[test]
fn operators_manage_jobs_and_queues_on_sqlite() {
    jobs_and_queues(false);
}

#[test]
fn operators_manage_jobs_and_queues_on_postgres() {
    if !common::need::postgres() {
        return;
    }
    jobs_and_queues(true);
}

/// For the library calls beside the server (blocking HTTP cannot run inside a runtime).
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn jobs_and_queues(postgres: bool) {
    let admin = Admin::start(postgres, &[]);
    let root = admin.token("root", true);
    let rt = runtime();
    let store = rt.block_on(admin.store());

    // A paused queue holds its jobs back.
    let paused = ok(admin.post(&root, "/queues/default/pause"));
    assert_eq!(paused["paused"], true);
    let (status, _, message) = error(admin.post(&root, "/queues/defualt/pause"));
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(
        message.contains("defualt") && message.contains("default"),
        "{message}"
    );
    // Time passes, not a wait for a condition: the worker rereads paused queues every 100 ms,
    // and says nothing when it does.
    std::thread::sleep(Duration::from_millis(300));
    let enqueue = |job: NewJob| rt.block_on(store.queue.enqueue(job)).expect("enqueue").id;
    let alice = [
        enqueue(NewJob::of(&Noop {}).tenant("alice")),
        enqueue(NewJob::of(&Noop {}).tenant("alice")),
    ];
    let bob_now = enqueue(NewJob::of(&Noop {}).tenant("bob"));
    let bob_later = enqueue(
        NewJob::of(&Noop {})
            .tenant("bob")
            .delay(Duration::from_secs(3600)),
    );

    // Held back for a second, more than the worker's poll interval.
    common::eventually(
        "the paused jobs to wait a second",
        Duration::from_secs(10),
        || {
            let queue = admin.queue(&root, "default");
            assert_eq!(queue["paused"], true);
            assert_eq!(queue["depth"], 3, "{queue:#}");
            assert_eq!(queue["counts"]["available"], 3);
            assert_eq!(queue["counts"]["scheduled"], 1);
            if queue["oldest_available_age_ms"].as_i64().expect("age") >= 1000 {
                Ok(())
            } else {
                Err(format!("{queue:#}"))
            }
        },
    );
    // Queues nobody has used yet are listed too.
    assert_eq!(admin.queue(&root, "books")["depth"], 0);

    // Filters, alone and together; newest first.
    let alice_desc = vec![alice[1], alice[0]];
    assert_eq!(admin.ids(&root, "tenant=alice"), alice_desc);
    assert_eq!(admin.ids(&root, "state=available&tenant=alice"), alice_desc);
    assert_eq!(
        admin.ids(&root, "queue=default&tenant=bob"),
        [bob_later, bob_now]
    );
    assert_eq!(admin.ids(&root, "state=scheduled"), [bob_later]);
    assert_eq!(
        admin.ids(&root, "state=available&queue=default"),
        [bob_now, alice[1], alice[0]]
    );
    assert_eq!(
        admin.ids(&root, "kind=bindery.noop&tenant=alice"),
        alice_desc
    );
    assert!(
        admin
            .ids(&root, "queue=maintenance&tenant=alice")
            .is_empty()
    );
    assert!(admin.ids(&root, "state=dead").is_empty());
    // Empty parameters (an unset form field) filter nothing.
    assert_eq!(admin.ids(&root, "tenant=alice&state=&queue="), alice_desc);

    // Pages: `next` leads to the older jobs, and is absent on the last page.
    let first = admin.json(&root, "/jobs?tenant=alice&limit=1");
    assert_eq!(first["jobs"][0]["id"], alice[1]);
    let next = first["next"].as_str().expect("next").to_owned();
    let second = admin.json(&root, &format!("/jobs?tenant=alice&limit=1&before={next}"));
    assert_eq!(second["jobs"][0]["id"], alice[0]);
    let next = second["next"].as_str().expect("next").to_owned();
    let third = admin.json(&root, &format!("/jobs?tenant=alice&limit=1&before={next}"));
    assert_eq!(third["jobs"].as_array().map(Vec::len), Some(0));
    assert!(third.get("next").is_none());
    let (status, _, _) = error(admin.get(&root, "/jobs?limit=100000"));
    assert_eq!(status, StatusCode::BAD_REQUEST);
    // The same `before` rule as the books list: a 400 naming it, never an empty page.
    for before in ["garbage", "0", "-3"] {
        let response = admin.get(&root, &format!("/jobs?before={before}"));
        let status = response.status();
        let body: Value = response.json().expect("a JSON error body");
        assert_eq!(
            (status, &body["error"]["code"], &body["error"]["field"]),
            (
                StatusCode::BAD_REQUEST,
                &Value::from("invalid_parameter"),
                &Value::from("before")
            ),
            "before={before}"
        );
    }

    // Cancel the scheduled job; it cannot be cancelled twice.
    let cancelled = ok(admin.post(&root, &format!("/jobs/{bob_later}/cancel")));
    assert_eq!(cancelled["state"], "cancelled");
    let last = cancelled["errors"]
        .as_array()
        .and_then(|e| e.last())
        .cloned();
    let last = last.expect("the cancel is in the history");
    assert!(
        last["message"]
            .as_str()
            .is_some_and(|m| m.contains("cancelled by root")),
        "{last:#}"
    );
    let (status, code, message) = error(admin.post(&root, &format!("/jobs/{bob_later}/cancel")));
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::CONFLICT, "invalid_job_state")
    );
    assert!(message.contains("is cancelled"), "{message}");
    let (status, _, _) = error(admin.post(&root, "/jobs/987654321/retry"));
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _, _) = error(admin.post(&root, "/jobs/not-a-number/discard"));
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _, _) = error(admin.get(&root, "/jobs/987654321"));
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Still held back a while later; resuming lets the worker run them.
    assert_eq!(admin.queue(&root, "default")["depth"], 3);
    let resumed = ok(admin.post(&root, "/queues/default/resume"));
    assert_eq!(resumed["paused"], false);
    for id in [alice[0], alice[1], bob_now] {
        admin.wait_job(&root, id, "completed", |j| j["state"] == "completed");
    }
    assert_eq!(admin.queue(&root, "default")["depth"], 0);
    let (status, code, message) = error(admin.post(&root, &format!("/jobs/{bob_now}/retry")));
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::CONFLICT, "invalid_job_state")
    );
    assert!(
        message.contains("is completed") && message.contains("dead"),
        "{message}"
    );
    let (status, _, _) = error(admin.post(&root, &format!("/jobs/{bob_now}/discard")));
    assert_eq!(status, StatusCode::CONFLICT);

    // A book whose upload went missing: its first step fails, and with one attempt it is dead.
    let book = BookId::new();
    let doomed = rt.block_on(async {
        let lost = NewBook {
            id: book.clone(),
            tenant: Tenant::parse("carol").expect("a tenant"),
            file_name: "lost.md".into(),
            options: bindery::convert::Options::default(),
            cover_name: None,
            idempotency_key: None,
            callback_url: None,
        };
        let first = steps::first_step(&RevisionId::first(&book)).max_attempts(1);
        books::submit(&store.db, &store.queue, &lost, first)
            .await
            .expect("submit");
        let workflow = store.queue.workflow(&book).await.expect("workflow");
        workflow.jobs[0].id
    });
    let dead = admin.wait_job(&root, doomed, "died", |j| j["state"] == "dead");
    assert_eq!(admin.ids(&root, "state=dead"), [doomed]);
    assert_eq!(
        admin.ids(&root, "state=dead&tenant=carol&queue=books"),
        [doomed]
    );
    let errors = dead["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 1, "{dead:#}");
    assert_eq!(errors[0]["attempt"], 1);
    assert!(
        errors[0]["at"].as_str().is_some_and(|t| t.ends_with('Z')),
        "{dead:#}"
    );
    let message = errors[0]["message"].as_str().expect("message");
    assert!(
        message.contains(&keys::upload(&RevisionId::first(&book))),
        "{dead:#}"
    );
    assert!(
        !errors[0]["causes"].as_array().expect("causes").is_empty(),
        "the cause chain is kept: {dead:#}"
    );
    assert_eq!(dead["last_error"], message);
    assert_eq!(dead["payload"]["book"], book.as_str());
    assert_eq!(dead["tenant"], "carol");

    // Once the upload is back, a retry runs it again (and the history stays).
    rt.block_on(store.blobs.put_if_absent(
        &keys::upload(&RevisionId::first(&book)),
        b"# Found Again\n\nThe upload was restored.\n".to_vec(),
    ))
    .expect("restore upload");
    let retried = ok(admin.post(&root, &format!("/jobs/{doomed}/retry")));
    assert_ne!(retried["state"], "dead");
    let done = admin.wait_job(&root, doomed, "completed", |j| j["state"] == "completed");
    assert_eq!(done["errors"].as_array().map(Vec::len), Some(1));
    assert_eq!(done["result"]["format"], "markdown");
    assert!(done["last_error"].is_null());

    // The supervised worker, beating.
    let workers = admin.json(&root, "/workers");
    let list = workers["workers"].as_array().expect("workers");
    assert_eq!(list.len(), 1, "{workers:#}");
    let worker = &list[0];
    assert_eq!(worker["pid"], admin.server.worker_pid());
    assert_eq!(worker["stale"], false);
    assert!(
        worker["heartbeat_age_ms"].as_i64().expect("age")
            < workers["stall_timeout_ms"].as_i64().expect("timeout"),
        "{workers:#}"
    );
    assert!(worker["host"].as_str().is_some_and(|h| !h.is_empty()));

    // The built-in schedule, on its default.
    let prune = admin.schedule(&root, "prune_jobs");
    assert_eq!(prune["enabled"], true);
    assert_eq!(prune["overridden"], false);
    assert_eq!(prune["variable"], "SCHEDULE_PRUNE_JOBS");
    assert_eq!(prune["cron"], "0 17 * * * *");
    let next: chrono::DateTime<chrono::Utc> = prune["next_run"]
        .as_str()
        .expect("next_run")
        .parse()
        .expect("RFC 3339");
    let ahead = next - chrono::Utc::now();
    assert!(
        ahead > chrono::Duration::zero() && ahead <= chrono::Duration::hours(1),
        "{prune:#}"
    );
}

#[test]
fn a_schedule_shows_its_override_and_last_run() {
    let admin = Admin::start(false, &[("SCHEDULE_PRUNE_JOBS", "*/2 * * * * *")]);
    let root = admin.token("root", true);
    let prune = common::eventually(
        "a completed run of prune_jobs",
        Duration::from_secs(20),
        || {
            let prune = admin.schedule(&root, "prune_jobs");
            if prune["last_run"]["state"] == "completed" {
                Ok(prune)
            } else {
                Err(format!("{prune:#}"))
            }
        },
    );
    assert_eq!(prune["overridden"], true);
    assert_eq!(prune["cron"], "*/2 * * * * *");
    assert_eq!(prune["kind"], "bindery.prune_jobs");
    let run = &prune["last_run"];
    let job = admin.job(&root, run["job_id"].as_i64().expect("job id"));
    assert_eq!(job["kind"], "bindery.prune_jobs");
    assert!(
        job["unique_key"]
            .as_str()
            .is_some_and(|k| k.starts_with("schedule:prune_jobs:")),
        "{job:#}"
    );
    let slot: chrono::DateTime<chrono::Utc> =
        run["slot"].as_str().expect("slot").parse().expect("time");
    let next: chrono::DateTime<chrono::Utc> = prune["next_run"]
        .as_str()
        .expect("next")
        .parse()
        .expect("time");
    assert!(
        slot < next && next - slot <= chrono::Duration::seconds(6),
        "{prune:#}"
    );
}

/// Reads Server-Sent Events: each `data:` line as JSON.
struct Events {
    lines: std::io::Lines<BufReader<Response>>,
}

impl Events {
    fn next(&mut self) -> Value {
        loop {
            let line = self
                .lines
                .next()
                .expect("the stream ended")
                .expect("read the stream");
            if let Some(data) = line.strip_prefix("data: ") {
                return serde_json::from_str(data).expect("an event is JSON");
            }
        }
    }
}

#[test]
fn the_log_stream_filters_and_ends_when_asked_not_to_follow() {
    let admin = Admin::start(false, &[]);
    let root = admin.token("root", true);
    let reader = admin.token("reader", false);
    admin
        .server
        .process
        .logs
        .wait_for("the worker's ready line", Duration::from_secs(20), |l| {
            common::message(l, Some("worker"), "worker ready")
        });
    let events = |query: &str, token: &str| -> (StatusCode, Vec<Value>) {
        let response = client()
            .get(admin.server.url(&format!("/api/v1/admin/logs?{query}")))
            .bearer_auth(token)
            .send()
            .expect("GET /logs");
        let status = response.status();
        let body = response.text().expect("the whole stream");
        let events = body
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .map(|data| serde_json::from_str(data).expect("an event is JSON"))
            .collect();
        (status, events)
    };
    // The worker's lines reach the web process through the database.
    let workers = common::eventually("the worker's lines", Duration::from_secs(10), || {
        let (status, events) = events("follow=false&lines=100&role=worker", &root);
        assert_eq!(status, StatusCode::OK);
        events
            .iter()
            .any(|e| e["fields"]["message"] == "worker ready")
            .then_some(events)
    });
    assert!(
        workers.iter().all(|e| e["role"] == "worker"),
        "{workers:#?}"
    );
    let (_, grepped) = events("follow=false&grep=WORKER%20READY", &root);
    assert!(!grepped.is_empty());
    assert!(
        grepped.iter().all(|e| e["line"]
            .as_str()
            .is_some_and(|l| l.to_lowercase().contains("worker ready"))),
        "{grepped:#?}"
    );
    // This machine's files, on request: the lines as written (JSON, as the suite logs).
    let (status, files) = events("follow=false&lines=20&source=files", &root);
    assert_eq!(status, StatusCode::OK);
    assert_eq!(files.len(), 20);
    assert!(
        files
            .iter()
            .all(|e| e["line"].as_str().is_some_and(|l| l.starts_with('{')))
    );

    for (query, wrong) in [
        ("level=loud", "level must be"),
        (
            "source=files&grep=x",
            "source=files is filtered by role only",
        ),
        ("since=yesterday", "since must be a duration"),
        ("role=db", "role must be web or worker"),
        ("follow=maybe", "follow must be true or false"),
    ] {
        let response = client()
            .get(admin.server.url(&format!("/api/v1/admin/logs?{query}")))
            .bearer_auth(&root)
            .send()
            .expect("GET /logs");
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{query}");
        let body = response.text().expect("body");
        assert!(body.contains(wrong), "{query}: {body}");
    }
    // Not an admin: no such route.
    let (status, none) = events("follow=false", &reader);
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(none.is_empty());
}

#[test]
fn the_log_stream_tails_both_roles_then_follows() {
    let admin = Admin::start(false, &[]);
    let root = admin.token("root", true);
    // Some history, old enough to be in the files before the stream opens: both roles' start,
    // older by more than the half second the backlog check below leaves.
    let ready = admin.server.process.logs.wait_for(
        "the worker's ready line",
        Duration::from_secs(20),
        |l| common::message(l, Some("worker"), "worker ready"),
    );
    let ready_at: chrono::DateTime<chrono::Utc> = ready["timestamp"]
        .as_str()
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no timestamp: {ready}"));
    let old_enough = ready_at + chrono::Duration::milliseconds(700);
    if let Ok(left) = (old_enough - chrono::Utc::now()).to_std() {
        // Time passes, not a wait for a condition: the history must age.
        std::thread::sleep(left);
    }
    let opened = chrono::Utc::now();

    // The whole body must arrive within this, so a stream that stops delivering fails the test.
    let streaming = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client");
    let response = streaming
        .get(admin.server.url("/api/v1/admin/logs?lines=2000"))
        .bearer_auth(&root)
        .send()
        .expect("GET /logs");
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()["content-type"].to_str().ok(),
        Some("text/event-stream")
    );
    // A request made after the stream opened: the web logs it, and the stream must deliver it.
    let marker = "/api/v1/admin/jobs/424242";
    assert_eq!(
        client()
            .get(admin.server.url(marker))
            .bearer_auth(&root)
            .send()
            .expect("GET")
            .status(),
        StatusCode::NOT_FOUND
    );

    let mut events = Events {
        lines: BufReader::new(response).lines(),
    };
    let mut seen = Vec::new();
    loop {
        let event = events.next();
        let done = event["fields"]["path"] == marker;
        seen.push(event);
        if done {
            break;
        }
    }
    let time = |e: &Value| -> chrono::DateTime<chrono::Utc> {
        e["timestamp"]
            .as_str()
            .and_then(|t| t.parse().ok())
            .unwrap_or_else(|| panic!("no timestamp: {e}"))
    };
    for e in &seen {
        let message = e["fields"]["message"]
            .as_str()
            .unwrap_or_else(|| panic!("{e}"));
        assert!(
            e["line"].as_str().is_some_and(|l| l.contains(message)),
            "{e}"
        );
        assert_eq!(e["fields"]["role"], e["role"], "{e}");
    }
    let has = |role: &str, text: &str| {
        seen.iter().any(|e| {
            e["role"] == role
                && e["fields"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains(text))
        })
    };
    assert!(
        has("web", "listening"),
        "the web's start-up is in the backlog"
    );
    assert!(has("worker", "worker ready"), "so is the worker's");
    // The backlog (lines written well before the stream opened) is in time order.
    let backlog: Vec<_> = seen
        .iter()
        .filter(|e| time(e) < opened - chrono::Duration::milliseconds(500))
        .map(time)
        .collect();
    assert!(backlog.len() >= 5, "{seen:#?}");
    assert!(backlog.windows(2).all(|w| w[0] <= w[1]), "{seen:#?}");
    let marker_event = seen.last().expect("marker");
    assert_eq!(marker_event["role"], "web");
    assert!(time(marker_event) > opened);

    // The client goes away: the stream notices (at its next write) and ends.
    drop(events);
    ok(admin.get(&root, "/queues"));
    admin
        .server
        .process
        .logs
        .wait_for("the stream to close", Duration::from_secs(20), |l| {
            common::message(l, Some("web"), "log stream closed")
        });

    // A stream still open when the server is told to stop ends, rather than holding the
    // graceful shutdown until its timeout.
    let open = streaming
        .get(admin.server.url("/api/v1/admin/logs?lines=0"))
        .bearer_auth(&root)
        .send()
        .expect("GET /logs");
    assert_eq!(open.status(), StatusCode::OK);
    let mut admin = admin;
    admin.server.process.signal(Signal::SIGTERM);
    let (status, took) = admin.server.process.wait_exit(Duration::from_secs(15));
    assert!(status.success(), "{status:?}");
    assert!(took < Duration::from_secs(5), "shutdown took {took:?}");
    let mut rest = String::new();
    let _ = BufReader::new(open).read_to_string(&mut rest);
}
