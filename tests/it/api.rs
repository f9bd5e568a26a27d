//! The HTTP API against the real server: tokens and tenant isolation, streamed uploads and
//! their limit, idempotent retries, `?wait=`, and errors a client can act on.

use crate::common;

use std::io::Read;
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::blocking::multipart::{Form, Part};
use serde_json::Value;

use common::web::upload;
use common::{Server, client, command, corpus};

/// `bindery token create NAME` against the server's storage; the token it prints.
fn token(server: &Server, name: &str) -> String {
    common::web::create_token(cli(server), name, false)
}

/// The same environment the server runs with (its data directory, its database).
fn cli(server: &Server) -> std::process::Command {
    let mut cmd = command(&server.data_dir());
    if let Some(url) = DATABASES.with(|d| d.borrow().clone()) {
        cmd.env("DATABASE_URL", url);
    }
    cmd
}

thread_local! {
    /// The PostgreSQL database of the current test, when it runs on PostgreSQL.
    static DATABASES: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// `bindery serve` on SQLite, or on a fresh PostgreSQL database.
fn serve(postgres: bool, env: &[(&str, &str)]) -> Server {
    let mut env: Vec<(&str, String)> = env.iter().map(|(k, v)| (*k, v.to_string())).collect();
    if postgres {
        let url = common::postgres_database();
        DATABASES.with(|d| *d.borrow_mut() = Some(url.clone()));
        env.push(("DATABASE_URL", url));
    }
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    Server::start(&["serve"], &env)
}

fn novel_form() -> Form {
    let novel = std::fs::read(corpus().join("markdown/love-among-the-chickens.md")).expect("novel");
    Form::new().part(
        "manuscript",
        Part::bytes(novel).file_name("love-among-the-chickens.md"),
    )
}

fn json(response: reqwest::blocking::Response) -> Value {
    response.json().expect("a JSON body")
}

fn error_code(response: reqwest::blocking::Response) -> (StatusCode, String, Option<String>) {
    let status = response.status();
    let body = json(response);
    (
        status,
        body["error"]["code"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        body["error"]["field"].as_str().map(str::to_owned),
    )
}

#[test]
fn a_tenant_never_sees_another_tenants_books_on_sqlite() {
    tenant_isolation(false);
}

#[test]
fn a_tenant_never_sees_another_tenants_books_on_postgres() {
    if !common::need::postgres() {
        return;
    }
    tenant_isolation(true);
}

fn tenant_isolation(postgres: bool) {
    let server = serve(postgres, &[]);
    let alice = token(&server, "alice");
    let bob = token(&server, "bob");

    let created = upload(&server, &alice, "?wait=30", novel_form());
    let book = common::web::follow_to_ready(&server, &alice, created);
    assert_eq!(book["title"], "Love Among the Chickens");
    let id = book["id"].as_str().expect("id").to_owned();
    let steps: Vec<&str> = book["progress"]["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| s["state"].as_str().unwrap_or(""))
        .collect();
    assert!(steps.iter().all(|s| *s == "completed"), "{steps:?}");

    let http = client();
    let get = |token: &str, path: &str| {
        http.get(server.url(path))
            .bearer_auth(token)
            .send()
            .expect("GET")
    };
    assert_eq!(get(&alice, &format!("/api/v1/books/{id}")).status(), 200);
    let epub = get(&alice, &format!("/api/v1/books/{id}/epub"));
    assert_eq!(epub.status(), 200);
    assert_eq!(epub.headers()["content-type"], "application/epub+zip");
    // The generated cover, drawn as the stores want it.
    let store_cover = get(&alice, &format!("/api/v1/books/{id}/store-cover.jpg"));
    assert_eq!(store_cover.status(), 200);
    assert_eq!(store_cover.headers()["content-type"], "image/jpeg");
    let picture = image::load_from_memory(&store_cover.bytes().expect("body")).expect("a JPEG");
    assert_eq!((picture.width(), picture.height()), (1600, 2560));
    // The print edition, made beside the ebooks.
    for (path, magic) in [("pdf", "%PDF-"), ("print-cover.pdf", "%PDF-")] {
        let file = get(&alice, &format!("/api/v1/books/{id}/{path}"));
        assert_eq!(file.status(), 200, "{path}");
        assert_eq!(file.headers()["content-type"], "application/pdf", "{path}");
        assert!(
            file.bytes().expect("body").starts_with(magic.as_bytes()),
            "{path}"
        );
    }
    assert_eq!(
        json(get(&alice, "/api/v1/books"))["books"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );

    // Bob: 404 everywhere, never 403, and an empty list.
    for path in [
        format!("/api/v1/books/{id}"),
        format!("/api/v1/books/{id}/epub"),
        format!("/api/v1/books/{id}/store-cover.jpg"),
        format!("/api/v1/books/{id}/pdf"),
        format!("/api/v1/books/{id}/print-cover.pdf"),
    ] {
        let (status, code, _) = error_code(get(&bob, &path));
        assert_eq!(
            (status, code.as_str()),
            (StatusCode::NOT_FOUND, "book_not_found"),
            "{path}"
        );
    }
    let retry = http
        .post(server.url(&format!("/api/v1/books/{id}/retry")))
        .bearer_auth(&bob)
        .send()
        .expect("POST retry");
    assert_eq!(retry.status(), 404);
    let delete = http
        .delete(server.url(&format!("/api/v1/books/{id}")))
        .bearer_auth(&bob)
        .send()
        .expect("DELETE");
    assert_eq!(delete.status(), 404);
    assert_eq!(
        json(get(&bob, "/api/v1/books"))["books"]
            .as_array()
            .map(Vec::len),
        Some(0)
    );

    // No token, or a wrong one: 401 with a reason.
    let anonymous = http.get(server.url("/api/v1/books")).send().expect("GET");
    assert_eq!(anonymous.status(), 401);
    assert!(anonymous.headers().contains_key("www-authenticate"));
    let (status, code, field) = error_code(get("bdy_0000", "/api/v1/books"));
    assert_eq!(
        (status, code.as_str(), field.as_deref()),
        (
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            Some("Authorization")
        )
    );

    // Metrics: this process's requests by route pattern, and the jobs every process ran.
    let metrics = http
        .get(server.url("/metrics"))
        .send()
        .expect("GET /metrics");
    assert_eq!(metrics.status(), 200);
    let metrics = metrics.text().expect("text");
    for expected in [
        r#"bindery_job_kind_jobs{kind="book.render_chapter",state="completed"} 24"#,
        r#"bindery_http_request_duration_seconds_count{method="GET",route="/api/v1/books/{id}",status="200"}"#,
        r#"bindery_http_request_duration_seconds_count{method="POST",route="/api/v1/books",status="200"} 1"#,
        "bindery_job_kind_run_seconds{",
        "bindery_job_kind_attempts{",
        "bindery_log_events_dropped_total 0",
    ] {
        assert!(
            metrics.contains(expected),
            "{expected} missing from:\n{metrics}"
        );
    }

    // Alice deletes it: the book and its files are gone.
    let delete = http
        .delete(server.url(&format!("/api/v1/books/{id}")))
        .bearer_auth(&alice)
        .send()
        .expect("DELETE");
    assert_eq!(delete.status(), 204);
    assert_eq!(get(&alice, &format!("/api/v1/books/{id}")).status(), 404);
    let leftovers = files_under(&server.data_dir().join("blobs/books").join(&id));
    assert!(leftovers.is_empty(), "blobs remain: {leftovers:?}");
}

#[test]
fn a_repeated_idempotency_key_creates_one_book() {
    let server = Server::start(&["serve"], &[]);
    let alice = token(&server, "alice");
    let post = || {
        client()
            .post(server.url("/api/v1/books"))
            .bearer_auth(&alice)
            .header("Idempotency-Key", "upload-7f3a")
            .multipart(novel_form())
            .send()
            .expect("POST")
    };
    let first = post();
    assert_eq!(first.status(), StatusCode::ACCEPTED);
    assert!(
        first.headers()["location"]
            .to_str()
            .expect("location")
            .starts_with("/api/v1/books/")
    );
    let first = json(first);
    let second = post();
    assert_eq!(second.headers()["idempotent-replayed"], "true");
    let second = json(second);
    assert_eq!(first["id"], second["id"]);
    let list = json(
        client()
            .get(server.url("/api/v1/books"))
            .bearer_auth(&alice)
            .send()
            .expect("GET"),
    );
    assert_eq!(list["books"].as_array().map(Vec::len), Some(1));
    // The same key from another tenant is another book.
    let bob = token(&server, "bob");
    let theirs = json(
        client()
            .post(server.url("/api/v1/books"))
            .bearer_auth(&bob)
            .header("Idempotency-Key", "upload-7f3a")
            .multipart(novel_form())
            .send()
            .expect("POST"),
    );
    assert_ne!(theirs["id"], first["id"]);
}

#[test]
fn wait_answers_202_and_events_follow_to_done_on_sqlite() {
    wait_and_events(false);
}

#[test]
fn wait_answers_202_and_events_follow_to_done_on_postgres() {
    if !common::need::postgres() {
        return;
    }
    wait_and_events(true);
}

fn wait_and_events(postgres: bool) {
    let server = serve_paused(postgres, &[]);
    let alice = token(&server, "alice");
    let started = std::time::Instant::now();
    let response = upload(&server, &alice, "?wait=1", novel_form());
    assert!(started.elapsed() >= Duration::from_millis(900), "it waited");
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let location = response.headers()["location"]
        .to_str()
        .expect("location")
        .to_owned();
    let book = json(response);
    assert_eq!(book["status"], "processing");
    assert_eq!(
        location,
        format!("/api/v1/books/{}", book["id"].as_str().expect("id"))
    );
    // Paused: its first step waits in the queue, and says so.
    assert_eq!(book["progress"]["steps"][0]["state"], "queued");

    // The queued ingest shows in the queue metrics autoscalers read.
    let metrics = client()
        .get(server.url("/metrics"))
        .send()
        .expect("GET /metrics")
        .text()
        .expect("text");
    assert!(
        metrics.contains(r#"bindery_jobs{queue="books",state="available"} 1"#),
        "{metrics}"
    );
    assert!(
        metrics.contains(r#"bindery_queue_oldest_available_seconds{queue="books"}"#),
        "{metrics}"
    );

    // Live progress: events while it runs, then `done` when it is ready, and the stream ends.
    let events = client()
        .get(server.url(&format!("{location}/events")))
        .bearer_auth(&alice)
        .timeout(common::HELD)
        .send()
        .expect("GET events");
    assert_eq!(events.headers()["content-type"], "text/event-stream");
    let resumed = cli(&server)
        .args(["jobs", "resume", "books"])
        .output()
        .expect("resume");
    assert!(resumed.status.success());
    let mut body = String::new();
    std::io::BufReader::new(events)
        .read_to_string(&mut body)
        .expect("the stream ends after done");
    let kinds: Vec<&str> = body
        .lines()
        .filter_map(|l| l.strip_prefix("event: "))
        .collect();
    assert_eq!(kinds.first(), Some(&"progress"), "{body}");
    assert_eq!(kinds.last(), Some(&"done"), "{body}");
    let last = body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .next_back()
        .expect("data");
    let last: Value = serde_json::from_str(last).expect("json event");
    assert_eq!(last["status"], "ready");
}

#[test]
fn an_open_event_stream_does_not_hold_up_a_graceful_stop() {
    let mut server = serve_paused(false, &[]);
    let alice = token(&server, "alice");
    let book = json(upload(&server, &alice, "", novel_form()));
    let id = book["id"].as_str().expect("id");
    // The book never finishes (its queue is paused), so only the stop can end this stream.
    let events = reqwest::blocking::Client::new()
        .get(server.url(&format!("/api/v1/books/{id}/events")))
        .bearer_auth(&alice)
        .send()
        .expect("GET events");
    assert_eq!(events.status(), StatusCode::OK);
    server.process.signal(nix::sys::signal::Signal::SIGTERM);
    let (status, took) = server.process.wait_exit(Duration::from_secs(20));
    assert!(status.success(), "{status:?}");
    assert!(
        took < Duration::from_secs(5),
        "the stop waited {took:?} for the stream"
    );
    let mut rest = String::new();
    let _ = std::io::BufReader::new(events).read_to_string(&mut rest);
    assert!(rest.contains("event: progress"), "{rest}");
}

/// `bindery serve` on a data directory whose `books` queue is paused before the worker starts:
/// uploads stay `processing`, so their event streams stay open and idle for as long as a test
/// needs (pausing a running server leaves a moment in which its worker may still claim one).
fn serve_paused(postgres: bool, extra: &[(&str, &str)]) -> Server {
    let data = tempfile::tempdir().expect("tempdir");
    let mut env = Vec::new();
    if postgres {
        let url = common::postgres_database();
        DATABASES.with(|d| *d.borrow_mut() = Some(url.clone()));
        env.push(("DATABASE_URL", url));
    }
    let mut pause = command(data.path());
    pause.args(["jobs", "pause", "books"]);
    for (k, v) in &env {
        pause.env(k, v);
    }
    let paused = pause.output().expect("pause");
    assert!(
        paused.status.success(),
        "{}",
        String::from_utf8_lossy(&paused.stderr)
    );
    let mut env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    env.extend_from_slice(extra);
    Server::start_in(data, &["serve"], &env)
}

/// A book's files follow one rule in the API and in the app's links: while the book is being
/// made, each is a 409 `not_ready` that says so, in JSON to the API and in the same words to a
/// browser (the app's links once answered 404, as if the book did not exist).
#[test]
fn a_book_not_yet_made_has_no_files_and_both_ways_in_say_why() {
    let server = serve_paused(false, &[]);
    let alice = token(&server, "alice");
    let book = json(upload(&server, &alice, "", novel_form()));
    let id = book["id"].as_str().expect("id").to_owned();
    for (api, app) in [
        ("epub", "epub"),
        ("pdf", "pdf"),
        ("print-cover.pdf", "print-cover.pdf"),
        ("store-cover.jpg", "store-cover.jpg"),
    ] {
        let answer = client()
            .get(server.url(&format!("/api/v1/books/{id}/{api}")))
            .bearer_auth(&alice)
            .send()
            .expect("GET");
        assert_eq!(answer.status(), StatusCode::CONFLICT, "{api}");
        let body = json(answer);
        assert_eq!(body["error"]["code"], "not_ready", "{api}: {body}");
        let message = body["error"]["message"].as_str().expect("a message");
        assert!(message.contains("processing"), "{api}: {message}");
        let answer = client()
            .get(server.url(&format!("/books/{id}/{app}")))
            .bearer_auth(&alice)
            .send()
            .expect("GET");
        assert_eq!(answer.status(), StatusCode::CONFLICT, "{app}");
        assert_eq!(answer.text().expect("text"), message, "{app}");
    }
}

/// CPU time (user + system) a process has used so far, from /proc/PID/stat.
fn cpu_time(pid: i32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("/proc/PID/stat");
    // Fields after the command name (which may hold spaces), counted from `state` (field 3):
    // utime and stime are fields 14 and 15, in clock ticks.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .expect("stat format")
        .1
        .split_whitespace()
        .collect();
    let ticks: u64 =
        fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
    let out = std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .expect("getconf CLK_TCK");
    let hz: u64 = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("CLK_TCK");
    Duration::from_millis(ticks * 1000 / hz)
}

/// An event stream opened on a bare socket (a thousand blocking HTTP clients would cost a
/// thread each): the request is sent, the answer is read by `first_event`.
fn open_event_stream(server: &Server, token: &str, book: &str) -> std::net::TcpStream {
    use std::io::Write;
    let addr = server.base.trim_start_matches("http://");
    let mut socket = std::net::TcpStream::connect(addr).expect("connect");
    write!(
        socket,
        "GET /api/v1/books/{book}/events HTTP/1.1\r\nHost: {addr}\r\n\
         Authorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n"
    )
    .expect("send the request");
    socket
}

/// How a stream's opening was answered.
enum Opened {
    /// Its first event came.
    Streaming,
    /// 503, to be asked again after `retry_after`.
    Unavailable { retry_after: Duration },
}

/// Reads a stream's answer until its first event has arrived, or the server said it is
/// unavailable for now.
fn first_event(socket: &mut std::net::TcpStream, deadline: std::time::Instant) -> Opened {
    let mut seen = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        assert!(
            !left.is_zero(),
            "no first event in time; got {:?}",
            String::from_utf8_lossy(&seen)
        );
        socket.set_read_timeout(Some(left)).expect("timeout");
        let n = socket.read(&mut buf).expect("read the stream");
        assert!(
            n > 0,
            "the stream closed: {:?}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&seen);
        if text.starts_with("HTTP/1.1 503") && text.contains("\r\n\r\n") {
            let seconds = text
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("retry-after: ")
                        .map(str::to_owned)
                })
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(1);
            return Opened::Unavailable {
                retry_after: Duration::from_secs(seconds),
            };
        }
        if text.contains("event: progress") && text.contains("\n\n") {
            assert!(text.starts_with("HTTP/1.1 200"), "{text}");
            return Opened::Streaming;
        }
    }
}

/// Issue #12: a thousand open event streams on books that do not change cost the web process
/// next to nothing. Each used to read its book every 250 ms (110 % of a core for 1,000); now
/// one watcher per process reads what changed for all of them at once.
#[test]
fn a_thousand_idle_event_streams_cost_the_web_process_little_cpu() {
    let _heavy = common::heavy();
    // A thousand, as in the issue: fewer would hide the cost per stream under the noise of a
    // shared machine. Each side holds one socket per stream; the soft limit on open files is
    // raised to the hard one for this process and, inherited, for the server.
    const STREAMS: usize = 1000;
    const BOOKS: usize = 20;
    let (_, hard) = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
        .expect("getrlimit");
    nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE, hard, hard)
        .expect("setrlimit");
    assert!(
        hard >= STREAMS as u64 + 200,
        "the hard limit on open files ({hard}) is too low for {STREAMS} streams"
    );
    // One token holds them all here: the cap that would refuse most of them is not what is
    // measured.
    let server = serve_paused(false, &[("MAX_STREAMS_PER_TOKEN", "2000")]);
    let alice = token(&server, "alice");
    let books: Vec<String> = (0..BOOKS)
        .map(|_| {
            let book = json(upload(&server, &alice, "", novel_form()));
            assert_eq!(book["status"], "processing");
            book["id"].as_str().expect("id").to_owned()
        })
        .collect();
    let mut streams: Vec<std::net::TcpStream> = (0..STREAMS)
        .map(|i| open_event_stream(&server, &alice, &books[i % BOOKS]))
        .collect();
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    for (i, stream) in streams.iter_mut().enumerate() {
        // A thousand requests at once on a loaded machine may find every database connection
        // taken past the pool's wait: the server answers 503 with `Retry-After`, and a client
        // opens the stream again, as a browser's EventSource does.
        loop {
            match first_event(stream, deadline) {
                Opened::Streaming => break,
                Opened::Unavailable { retry_after } => {
                    // Lets the time the server asked for pass.
                    std::thread::sleep(retry_after);
                    *stream = open_event_stream(&server, &alice, &books[i % BOOKS]);
                }
            }
        }
    }

    // A measurement window, not a wait for something: the web process's CPU time over it.
    let window = Duration::from_secs(4);
    let pid = server.process.pid();
    let (cpu_before, started) = (cpu_time(pid), std::time::Instant::now());
    std::thread::sleep(window);
    let (cpu, took) = (cpu_time(pid) - cpu_before, started.elapsed());
    let share = cpu.as_secs_f64() / took.as_secs_f64();
    eprintln!(
        "{STREAMS} idle event streams on {BOOKS} books: the web process used {cpu:?} of CPU \
         in {took:?} ({:.1} % of a core)",
        share * 100.0
    );

    // Every stream is still open (idle, not ended by an error).
    for stream in &mut streams {
        stream.set_nonblocking(true).expect("nonblocking");
        let mut buf = [0u8; 4096];
        loop {
            match stream.read(&mut buf) {
                Ok(0) => panic!("a stream ended"),
                Ok(_) => continue,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => panic!("a stream failed: {e}"),
            }
        }
    }
    assert!(
        share < 0.10,
        "{STREAMS} idle event streams cost the web process {:.1} % of a core",
        share * 100.0
    );
}

#[test]
fn a_change_by_the_worker_reaches_an_open_event_stream_within_a_second_on_sqlite() {
    change_reaches_stream(false);
}

#[test]
fn a_change_by_the_worker_reaches_an_open_event_stream_within_a_second_on_postgres() {
    if !common::need::postgres() {
        return;
    }
    change_reaches_stream(true);
}

/// The worker is another process: storage is the only way its changes reach the web process.
/// Each event's book carries `updated_at`, stamped by the database's clock when the worker
/// published it, so the `done` event shows how late it arrived.
fn change_reaches_stream(postgres: bool) {
    use std::io::BufRead;
    let server = serve_paused(postgres, &[]);
    let alice = token(&server, "alice");
    // Followed by two streams, so that one book's wake-up is shared.
    let book = json(upload(&server, &alice, "", novel_form()));
    let id = book["id"].as_str().expect("id").to_owned();
    let open = || {
        // The stream lasts until the book is done: the client's 10 s would end it first on a
        // loaded machine.
        let response = client()
            .get(server.url(&format!("/api/v1/books/{id}/events")))
            .bearer_auth(&alice)
            .timeout(common::HELD)
            .send()
            .expect("GET events");
        assert_eq!(response.status(), StatusCode::OK);
        std::io::BufReader::new(response).lines()
    };
    let (mut first, mut second) = (open(), open());
    for lines in [&mut first, &mut second] {
        let line = lines.next().expect("a line").expect("read");
        assert_eq!(line, "event: progress");
    }
    let resumed = cli(&server)
        .args(["jobs", "resume", "books"])
        .output()
        .expect("resume");
    assert!(resumed.status.success());
    for lines in [first, second] {
        let mut kind = String::new();
        for line in lines {
            let line = line.expect("read the stream");
            if let Some(k) = line.strip_prefix("event: ") {
                kind = k.to_owned();
            }
            let Some(data) = line.strip_prefix("data: ") else {
                continue;
            };
            let arrived = chrono::Utc::now();
            let book: Value = serde_json::from_str(data).expect("json event");
            if kind == "done" {
                assert_eq!(book["status"], "ready");
                let published = chrono::DateTime::parse_from_rfc3339(
                    book["updated_at"].as_str().expect("updated_at"),
                )
                .expect("rfc3339");
                let late = arrived.signed_duration_since(published);
                eprintln!("`done` arrived {late} after the worker published the book");
                assert!(
                    late < chrono::Duration::milliseconds(1000),
                    "the worker published the book {late} before the stream said so"
                );
                break;
            }
        }
        assert_eq!(kind, "done", "the stream ended before `done`");
    }
}

#[test]
fn metrics_can_require_a_token() {
    let secret = "3f9c1b7e5a2d4c6b8e0f1a3c5e7b9d2f";
    let server = serve(false, &[("METRICS_TOKEN", secret)]);
    let http = client();
    let scrape = |auth: Option<&str>| {
        let mut request = http.get(server.url("/metrics"));
        if let Some(auth) = auth {
            request = request.header("Authorization", auth);
        }
        request.send().expect("GET /metrics")
    };
    for wrong in [
        None,
        Some("Bearer wrong-token-of-some-length"),
        Some(secret),
    ] {
        let response = scrape(wrong);
        assert_eq!(response.status(), 401, "{wrong:?}");
        assert_eq!(
            response.headers()["www-authenticate"],
            r#"Bearer realm="metrics""#
        );
        assert!(
            response.text().expect("text").contains("METRICS_TOKEN"),
            "the refusal names what to send"
        );
    }
    let response = scrape(Some(&format!("Bearer {secret}")));
    assert_eq!(response.status(), 200);
    let text = response.text().expect("text");
    assert!(
        text.contains(
            r#"bindery_http_request_duration_seconds_count{method="GET",route="/metrics",status="401"} 3"#
        ),
        "{text}"
    );
    // Health checks stay open; the token is in no log line.
    assert_eq!(
        http.get(server.url("/healthz"))
            .send()
            .expect("healthz")
            .status(),
        200
    );
    // The request lines arrive through the process's stdout, which the test reads on a thread
    // of its own: wait for them rather than take whatever has arrived.
    server
        .process
        .logs
        .wait_for("the scrapes' request lines", Duration::from_secs(10), |l| {
            l["path"] == "/metrics" && l["status"] == 200
        });
    let logs: String = server
        .process
        .logs
        .all()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert!(logs.contains("/metrics"), "requests are logged");
    assert!(!logs.contains(secret), "the token was logged");
}

#[test]
fn an_upload_over_the_limit_is_refused_with_413_and_leaves_nothing() {
    let server = Server::start(&["serve"], &[("MAX_MANUSCRIPT_SIZE", "1MiB")]);
    let alice = token(&server, "alice");
    // Declared too big: refused before the body is read.
    let big = vec![b'a'; 3 * 1024 * 1024];
    let (status, code, _) = error_code(upload(
        &server,
        &alice,
        "",
        Form::new().part("manuscript", Part::bytes(big).file_name("big.txt")),
    ));
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::PAYLOAD_TOO_LARGE, "too_large")
    );
    // Streamed with no length: cut off once it passes the limit.
    let stream = std::io::repeat(b'a').take(1024 * 1024 + 4096);
    let (status, code, field) = error_code(upload(
        &server,
        &alice,
        "",
        Form::new().part("manuscript", Part::reader(stream).file_name("big.txt")),
    ));
    assert_eq!(
        (status, code.as_str(), field.as_deref()),
        (
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            Some("manuscript")
        )
    );
    let left = files_under(&server.data_dir().join("blobs/books"));
    assert!(
        left.is_empty(),
        "a refused upload leaves no blobs: {left:?}"
    );
}

fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[test]
fn mistakes_get_json_errors_naming_the_field() {
    let server = Server::start(&["serve"], &[]);
    let alice = token(&server, "alice");
    let cases: Vec<(Form, &str, StatusCode, &str, &str)> = vec![
        (
            Form::new().text("title", "No file"),
            "",
            StatusCode::BAD_REQUEST,
            "missing_manuscript",
            "manuscript",
        ),
        (
            novel_form().text("colour", "red"),
            "",
            StatusCode::BAD_REQUEST,
            "unknown_field",
            "colour",
        ),
        (
            novel_form().text("language", "C"),
            "",
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_metadata",
            "language",
        ),
        (
            novel_form().text("isbn", "978-0-306-40615-8"),
            "",
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_metadata",
            "isbn",
        ),
        (
            novel_form().text("labels.contnets", "Inhalt"),
            "",
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_metadata",
            "labels.contnets",
        ),
        (
            novel_form().text("title", "One").text("title", "Two"),
            "",
            StatusCode::BAD_REQUEST,
            "duplicate_field",
            "title",
        ),
        (
            novel_form().part(
                "manuscript",
                Part::bytes(b"# Another\n\nText.\n".to_vec()).file_name("other.md"),
            ),
            "",
            StatusCode::BAD_REQUEST,
            "duplicate_field",
            "manuscript",
        ),
        (
            novel_form(),
            "?wait=soon",
            StatusCode::BAD_REQUEST,
            "invalid_parameter",
            "wait",
        ),
    ];
    for (form, query, status, code, field) in cases {
        let (got_status, got_code, got_field) = error_code(upload(&server, &alice, query, form));
        assert_eq!(
            (got_status, got_code.as_str(), got_field.as_deref()),
            (status, code, Some(field)),
            "{code}"
        );
    }
    let missing = client()
        .get(server.url("/api/v1/nothing-here"))
        .bearer_auth(&alice)
        .send()
        .expect("GET");
    assert_eq!(error_code(missing).0, StatusCode::NOT_FOUND);
    let books = json(
        client()
            .get(server.url("/api/v1/books"))
            .bearer_auth(&alice)
            .send()
            .expect("GET"),
    );
    assert_eq!(
        books["books"].as_array().map(Vec::len),
        Some(0),
        "no book from a refused upload"
    );
    let left = files_under(&server.data_dir().join("blobs/books"));
    assert!(
        left.is_empty(),
        "a refused upload leaves no blobs: {left:?}"
    );
    // A `before` that is no page's `next` is a mistake, not an empty page.
    for before in ["garbage", "12"] {
        let response = client()
            .get(server.url(&format!("/api/v1/books?before={before}")))
            .bearer_auth(&alice)
            .send()
            .expect("GET");
        let (status, code, field) = error_code(response);
        assert_eq!(
            (status, code.as_str(), field.as_deref()),
            (StatusCode::BAD_REQUEST, "invalid_parameter", Some("before")),
            "before={before}"
        );
    }
}

/// Resident memory of a process, from /proc, in KiB.
fn rss_kib(pid: i32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

#[test]
fn a_200_mb_upload_streams_through_flat_memory() {
    let _heavy = common::heavy();
    let server = Server::start(&["serve"], &[("MAX_MANUSCRIPT_SIZE", "300MiB")]);
    let alice = token(&server, "alice");
    // The upload is what is measured, not a conversion of 200 MB of zeros.
    let paused = command(&server.data_dir())
        .args(["jobs", "pause", "books"])
        .output()
        .expect("pause");
    assert!(paused.status.success());
    let web = server.process.pid();
    let baseline = rss_kib(web);
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut peak = 0;
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                peak = peak.max(rss_kib(web));
                // The sampling pace, not a wait for a condition.
                std::thread::sleep(Duration::from_millis(10));
            }
            peak
        })
    };
    const SIZE: u64 = 200 * 1024 * 1024;
    let started = std::time::Instant::now();
    let response = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(300))
        .build()
        .expect("client")
        .post(server.url("/api/v1/books"))
        .bearer_auth(&alice)
        .multipart(Form::new().part(
            "manuscript",
            Part::reader(std::io::repeat(0).take(SIZE)).file_name("huge.txt"),
        ))
        .send()
        .expect("POST 200 MB");
    let took = started.elapsed();
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let peak = sampler.join().expect("sampler");
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let id = json(response)["id"].as_str().expect("id").to_owned();
    let stored = std::fs::metadata(
        server
            .data_dir()
            .join(format!("blobs/books/{id}/upload/manuscript")),
    )
    .expect("the upload is stored")
    .len();
    assert_eq!(stored, SIZE);
    let growth_mib = peak.saturating_sub(baseline) / 1024;
    println!(
        "200 MiB upload in {:.1} s: web RSS {} MiB before, peak {} MiB (+{growth_mib} MiB)",
        took.as_secs_f64(),
        baseline / 1024,
        peak / 1024
    );
    assert!(
        growth_mib < 40,
        "the web process grew by {growth_mib} MiB while streaming"
    );
}

#[test]
fn writes_are_rate_limited_per_token() {
    let server = serve(false, &[("RATE_LIMIT_WRITES", "2/min")]);
    let alice = token(&server, "alice");
    let bob = token(&server, "bob");
    let small = || {
        Form::new().part(
            "manuscript",
            Part::bytes(b"# One\n\nA line.\n".to_vec()).file_name("a.md"),
        )
    };
    for _ in 0..2 {
        assert_eq!(
            upload(&server, &alice, "", small()).status(),
            StatusCode::ACCEPTED
        );
    }
    let refused = upload(&server, &alice, "", small());
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry_after: u64 = refused.headers()["retry-after"]
        .to_str()
        .expect("retry-after")
        .parse()
        .expect("seconds");
    assert!((1..=60).contains(&retry_after), "{retry_after}");
    assert_eq!(error_code(refused).1, "rate_limited");
    // Reads are not limited, and another token has its own budget.
    let list = client()
        .get(server.url("/api/v1/books"))
        .bearer_auth(&alice)
        .send()
        .expect("GET");
    assert_eq!(list.status(), 200);
    assert_eq!(
        upload(&server, &bob, "", small()).status(),
        StatusCode::ACCEPTED
    );
}

#[test]
fn head_answers_like_get_without_a_body() {
    let server = serve(false, &[]);
    let alice = token(&server, "alice");
    let created = upload(&server, &alice, "?wait=30", novel_form());
    let id = common::web::follow_to_ready(&server, &alice, created)["id"]
        .as_str()
        .expect("id")
        .to_owned();

    // Redirects are compared, not followed.
    let http = reqwest::blocking::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(10))
        .build()
        .expect("client");
    let cases: Vec<(String, Option<&str>)> = vec![
        ("/healthz".into(), None),
        ("/readyz".into(), None),
        ("/metrics".into(), None),
        ("/opds".into(), None),
        ("/".into(), None),
        ("/signin".into(), None),
        ("/static/bindery.css".into(), None),
        ("/api/v1/openapi.json".into(), None),
        ("/api/v1/books".into(), Some(alice.as_str())),
        (format!("/api/v1/books/{id}"), Some(alice.as_str())),
        (format!("/api/v1/books/{id}/epub"), Some(alice.as_str())),
        (format!("/api/v1/books/{id}/events"), Some(alice.as_str())),
        (format!("/books/{id}/epub"), Some(alice.as_str())),
        (format!("/books/{id}/reader/"), Some(alice.as_str())),
        ("/api/v1/nothing-here".into(), Some(alice.as_str())),
    ];
    for (path, bearer) in cases {
        let send = |method: reqwest::Method| {
            let mut request = http.request(method.clone(), server.url(&path));
            if let Some(token) = bearer {
                request = request.bearer_auth(token);
            }
            request
                .send()
                .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
        };
        let get = send(reqwest::Method::GET);
        let head = send(reqwest::Method::HEAD);
        assert_eq!(head.status(), get.status(), "HEAD {path}");
        for name in ["content-type", "content-length"] {
            if let Some(value) = get.headers().get(name) {
                if path == "/metrics" && name == "content-length" {
                    // The metrics count requests, so each answer's length differs.
                    assert!(head.headers().contains_key(name), "HEAD {path}: {name}");
                } else {
                    assert_eq!(head.headers().get(name), Some(value), "HEAD {path}: {name}");
                }
            }
        }
        let head_status = head.status();
        let body = head.bytes().expect("HEAD body");
        assert!(body.is_empty(), "HEAD {path} ({head_status}) has a body");
        if path == "/opds" {
            assert_eq!(
                head_status,
                StatusCode::UNAUTHORIZED,
                "like GET, without credentials"
            );
        }
        if path.ends_with("/epub") || path == "/healthz" {
            assert_eq!(head_status, StatusCode::OK, "HEAD {path}");
        }
    }
}

/// Every numeric query parameter, given what a careless or hostile client sends: an answer of
/// 2xx or 4xx each time, never a 5xx, never a panic (#12: `?wait=1e20` used to panic).
#[test]
fn hostile_numbers_in_every_numeric_parameter_get_no_5xx() {
    let server = serve(false, &[("RATE_LIMIT_WRITES", "off")]);
    let user = token(&server, "numbers");
    let admin = common::web::token(&server, "numbers-admin", true);
    let values = [
        "-1",
        "0",
        "1",
        "1.5",
        "-0",
        "1e20",
        "1e308",
        "-1e308",
        "NaN",
        "inf",
        "-inf",
        "18446744073709551616",
        "9223372036854775808",
        "-9223372036854775809",
        "0x10",
        " 1",
        "1 ",
        "",
        "abc",
        "%00",
        "%E2%80%8B1",
        "１",
        "99999999999999999999999999999999999999",
    ];
    let http = client();
    let mut answered = 0;
    for value in values {
        let gets = [
            (format!("/api/v1/books?limit={value}"), &user),
            (format!("/api/v1/books?before={value}"), &user),
            (format!("/api/v1/admin/jobs?limit={value}"), &admin),
            (format!("/api/v1/admin/jobs?before={value}"), &admin),
        ];
        for (path, token) in gets {
            let response = http
                .get(server.url(&path))
                .bearer_auth(token)
                .send()
                .expect("GET");
            assert!(
                !response.status().is_server_error(),
                "{path}: {}",
                response.status()
            );
            answered += 1;
        }
        let small = Form::new().part(
            "manuscript",
            Part::bytes(b"# One\n\nA line.\n".to_vec()).file_name("small.md"),
        );
        let response = upload(&server, &user, &format!("?wait={value}"), small);
        assert!(
            !response.status().is_server_error(),
            "?wait={value}: {}",
            response.status()
        );
        answered += 1;
    }
    assert!(
        server
            .process
            .logs
            .find(|l| common::message(l, None, "panicked"))
            .is_none(),
        "a parameter made the server panic"
    );
    println!("{answered} requests with hostile numbers, no 5xx");
}

/// Whether a JSON log line was written inside the request with this id.
fn of_request(line: &Value, id: &str) -> bool {
    line["spans"]
        .as_array()
        .is_some_and(|spans| spans.iter().any(|s| s["request_id"] == id))
}

/// A bug (here a stored row of the wrong type, which no retry mends) answers 500, never 503,
/// and names the request, whose id is on the log line with the whole error chain. Every
/// response carries the id: the client's own when it is sane, a new one otherwise.
#[test]
fn a_bug_answers_500_with_the_request_id_of_its_log_line() {
    let server = serve(false, &[]);
    let alice = token(&server, "alice");
    let get = |id: Option<&str>| {
        let mut request = client()
            .get(server.url("/api/v1/books"))
            .bearer_auth(&alice);
        if let Some(id) = id {
            request = request.header("X-Request-Id", id);
        }
        request.send().expect("GET /api/v1/books")
    };
    let fine = get(Some("client-chosen-1"));
    assert_eq!(fine.status(), StatusCode::OK);
    assert_eq!(fine.headers()["x-request-id"], "client-chosen-1");
    let made = get(Some(&"x".repeat(129)));
    let made = made.headers()["x-request-id"].to_str().expect("ASCII");
    assert!(uuid::Uuid::parse_str(made).is_ok(), "{made}");

    // SQLite keeps a BLOB in a TEXT column as it is; reading it as text fails.
    common::sqlite_execute(
        &server.data_dir().join("bindery.db"),
        "UPDATE tokens SET tenant = X'00FF'",
    );
    for sent in [Some("bug-report-7"), None] {
        let response = get(sent);
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let id = response.headers()["x-request-id"]
            .to_str()
            .expect("ASCII")
            .to_owned();
        if let Some(sent) = sent {
            assert_eq!(id, sent);
        }
        let body = json(response);
        assert_eq!(body["error"]["code"], "internal", "{body}");
        assert_eq!(body["error"]["request_id"], id.as_str(), "{body}");
        let line =
            server
                .process
                .logs
                .wait_for("the failure's log line", Duration::from_secs(10), |l| {
                    l["level"] == "ERROR" && of_request(l, &id)
                });
        let error = line["error"].as_str().unwrap_or_default();
        assert!(error.contains("decoding column"), "{line}");
        // The request's own line carries the id too.
        server
            .process
            .logs
            .wait_for("the request line", Duration::from_secs(10), |l| {
                common::message(l, Some("web"), "request")
                    && l["status"] == 500
                    && of_request(l, &id)
            });
    }
}

/// A database that has gone away is storage that is unavailable: 503, worth retrying, not 500,
/// and a warning in the log, not an error.
/// The web process alone: under `serve` its worker may lose the database first and take the
/// pair down, which is another promise's business.
#[test]
fn a_stopped_database_answers_503() {
    if !common::need::postgres() {
        return;
    }
    let direct = url::Url::parse(&common::postgres_database()).expect("URL");
    let (mut proxy, proxied) = common::proxy::Proxy::to_url(direct.as_str());
    let server = Server::start(&["web"], &[("DATABASE_URL", proxied.as_str())]);
    let mut cli = command(&server.data_dir());
    cli.env("DATABASE_URL", direct.as_str());
    let alice = common::web::create_token(cli, "alice", false);
    let get = || {
        reqwest::blocking::Client::builder()
            // Past the pool's wait for a connection (15 s).
            .timeout(Duration::from_secs(40))
            .build()
            .expect("client")
            .get(server.url("/api/v1/books"))
            .bearer_auth(&alice)
            .send()
            .expect("GET /api/v1/books")
    };
    assert_eq!(get().status(), StatusCode::OK);

    proxy.stop();
    let response = get();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body = json(response);
    assert_eq!(body["error"]["code"], "unavailable", "{body}");
    common::handled_outage_line(&server, "the failure's log line");
}
