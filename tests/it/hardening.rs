//! What anyone can send costs a bounded amount, forges no log line and reads nothing of the
//! operator's; a long-lived stream ends with its token (issue #23's probe, as tests). Each
//! test is one finding, named in its doc comment.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use reqwest::StatusCode;
use reqwest::blocking::multipart::{Form, Part};
use serde_json::Value;

use common::web::{token, upload};
use common::{Running, Server, client, command, message};

/// The markdown every test converts: small, so that books are ready in a moment.
const BOOK: &str = "# A Title\n\n## One\n\nSome words in a first chapter.\n\n## Two\n\nAnd more.\n";

/// Sends `request` on a connection of its own and returns the whole answer as text (the
/// request asks the server to close the connection after it).
fn raw(server: &Server, request: &[u8]) -> String {
    let addr = server.base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    stream.write_all(request).expect("send");
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

/// The resident memory of a process, in bytes.
fn rss(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("VmRSS");
    kib * 1024
}

fn metrics(server: &Server) -> String {
    client()
        .get(server.url("/metrics"))
        .send()
        .expect("GET /metrics")
        .text()
        .expect("text")
}

/// A method of `len` letters that no other `n` gives.
fn method(n: usize, len: usize) -> String {
    let mut name = String::with_capacity(len);
    let mut rest = n;
    loop {
        name.push(char::from(b'A' + u8::try_from(rest % 26).unwrap_or(0)));
        rest /= 26;
        if rest == 0 {
            break;
        }
    }
    while name.len() < len {
        name.push('X');
    }
    name
}

/// Finding 1: every new HTTP method was a new label of the request histogram, so memory grew
/// without end. A thousand requests, each with a method of 8 KiB letters and a path of its own,
/// must leave `/metrics` and the process's memory as they were.
#[test]
fn unknown_methods_and_paths_grow_neither_the_metrics_nor_the_memory() {
    let _heavy = common::heavy();
    let server = Server::start(&["web"], &[]);
    let send = |n: usize| {
        let request = format!(
            "{} /nothing/{n} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            method(n, 8 * 1024)
        );
        raw(&server, request.as_bytes())
    };
    // Warm up, so that the server's buffers and allocator arenas reach their working size.
    for n in 0..200 {
        send(n);
    }
    metrics(&server);
    let (size, memory) = (metrics(&server).len(), rss(server.process.pid()));
    let answers: Vec<String> = (200..1200).map(send).collect();
    let text = metrics(&server);
    let grown = rss(server.process.pid()).saturating_sub(memory);
    println!(
        "1000 requests with methods of 8 KiB: /metrics {size} -> {} bytes, the web process's \
         memory grew by {grown} bytes",
        text.len()
    );
    // The counts' digits may grow a little; a label per method was ~100 KiB a request.
    assert!(
        text.len() <= size + 2048,
        "/metrics grew from {size} to {} bytes",
        text.len()
    );
    assert!(grown < 8 << 20, "the web process grew by {grown} bytes");
    for answer in answers {
        assert!(answer.starts_with("HTTP/1.1 405"), "{answer}");
        assert!(
            answer.contains("allow: GET, HEAD, POST, DELETE"),
            "{answer}"
        );
    }
    assert!(
        text.contains(r#"method="other",route="unmatched",status="405""#),
        "{text}"
    );
    assert!(!text.contains("XXXXXXXX"), "no method is a label");
}

/// Finding 8 (OPTIONS, methods): an API path answers a method it does not take with 405 and
/// the methods it does take in `Allow`, read from the routes themselves.
#[test]
fn api_paths_answer_other_methods_with_405_and_allow() {
    let server = Server::start(&["web"], &[]);
    let http = client();
    for (method, path, allow) in [
        ("OPTIONS", "/api/v1/books", "GET, HEAD, POST"),
        ("PUT", "/api/v1/books", "GET, HEAD, POST"),
        ("OPTIONS", "/api/v1/books/b-1", "GET, HEAD, DELETE"),
        ("PATCH", "/api/v1/books/b-1/retry", "POST"),
        ("FROBNICATE", "/api/v1/books/b-1/logs", "GET, HEAD"),
    ] {
        let response = http
            .request(
                reqwest::Method::from_bytes(method.as_bytes()).expect("method"),
                server.url(path),
            )
            .send()
            .expect("request");
        assert_eq!(
            response.status(),
            StatusCode::METHOD_NOT_ALLOWED,
            "{method} {path}"
        );
        assert_eq!(response.headers()["allow"], allow, "{method} {path}");
        let body: Value = response.json().expect("json");
        assert_eq!(body["error"]["code"], "method_not_allowed", "{body}");
    }
    // A path no route has is still a 404, and a known method on a page goes on as before.
    let missing = http
        .request(reqwest::Method::OPTIONS, server.url("/api/v1/nothing"))
        .send()
        .expect("request");
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
}

/// Finding 8 (request ids): an id from outside is kept only when it is letters, digits and
/// `._-`, up to 128 of them; anything else is replaced by a new one.
#[test]
fn a_request_id_from_outside_is_kept_only_when_plain() {
    let server = Server::start(&["web"], &[]);
    let id_for = |sent: &[u8]| {
        let response = client()
            .get(server.url("/healthz"))
            .header(
                "X-Request-Id",
                reqwest::header::HeaderValue::from_bytes(sent).expect("header"),
            )
            .send()
            .expect("GET /healthz");
        response.headers()["x-request-id"]
            .to_str()
            .expect("ascii")
            .to_owned()
    };
    assert_eq!(id_for(b"client-7.retry_2"), "client-7.retry_2");
    for sent in [
        &b"\"{}<>:"[..],
        b"a:b",
        b"<script>",
        b"{\"id\":1}",
        b"caf\xc3\xa9",
        b"two words",
    ] {
        let id = id_for(sent);
        assert!(
            uuid::Uuid::parse_str(&id).is_ok(),
            "{:?} became {id}",
            String::from_utf8_lossy(sent)
        );
    }
}

/// Finding 8 (query strings): a query parameter that does not parse is named in the error's
/// `field`.
#[test]
fn a_bad_query_parameter_is_named() {
    let server = Server::start(&["web"], &[]);
    let alice = token(&server, "alice", false);
    for (path, field) in [
        ("/api/v1/books?limit=abc", "limit"),
        (
            "/api/v1/books/3f0c2b1e-8a5d-4c6b-9e7f-0a1b2c3d4e5f/logs?lines=abc",
            "lines",
        ),
        (
            "/api/v1/webhook-secret/rotate?overlap_hours=-1",
            "overlap_hours",
        ),
    ] {
        let request = if path.contains("rotate") {
            client().post(server.url(path))
        } else {
            client().get(server.url(path))
        };
        let response = request.bearer_auth(&alice).send().expect("request");
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{path}");
        let body: Value = response.json().expect("json");
        assert_eq!(body["error"]["code"], "invalid_parameter", "{body}");
        assert_eq!(body["error"]["field"], field, "{path}: {body}");
    }
    // Without a token the answer is 401 whatever the query says: nothing is told first.
    let anonymous = client()
        .get(server.url("/api/v1/books?limit=abc"))
        .send()
        .expect("request");
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
}

fn jobs(data: &Path, action: &str) {
    let mut cli = command(data);
    cli.args(["jobs", action, "books"]);
    common::succeed(&mut cli, "bindery jobs");
}

fn book_log(server: &Server, token: &str, id: &str) -> String {
    let response = client()
        .get(server.url(&format!("/api/v1/books/{id}/logs")))
        .bearer_auth(token)
        .send()
        .expect("GET logs");
    assert_eq!(response.status(), StatusCode::OK);
    response.text().expect("text")
}

/// Finding 2: the tenant's book log showed a reading child's error output (the server's
/// paths) and a refused webhook's resolved addresses. It is an allowlist now: the lines
/// written for the author, and a summary of the rest.
#[test]
fn a_tenants_book_log_shows_no_path_address_host_or_pid() {
    let data = tempfile::tempdir().expect("tempdir");
    jobs(data.path(), "pause");
    let server = Server::start_in(data, &["serve"], &[]);
    let alice = token(&server, "alice", false);

    // Book A: its cover goes missing before it is read, so the reading child fails and says
    // so on its error output, naming the blob store's files.
    let cover =
        std::fs::read(common::corpus().join("love-among-the-chickens-cover.jpg")).expect("cover");
    let form = Form::new()
        .part("manuscript", Part::bytes(BOOK.as_bytes()).file_name("a.md"))
        .part("cover", Part::bytes(cover).file_name("cover.jpg"));
    let created = upload(&server, &alice, "", form);
    assert_eq!(created.status(), StatusCode::ACCEPTED);
    let a: Value = created.json().expect("json");
    let a = a["id"].as_str().expect("id").to_owned();
    let cover = server
        .data_dir()
        .join("blobs/books")
        .join(&a)
        .join("upload/cover");
    std::fs::remove_file(&cover).expect("remove the cover");
    jobs(&server.data_dir(), "resume");
    let child = server.process.logs.wait_for(
        "the reading child's error line",
        Duration::from_secs(30),
        |l| l["book.id"] == a.as_str() && l["child.pid"].is_number() && l["level"] == "WARN",
    );
    assert!(
        child
            .to_string()
            .contains(&*server.data_dir().to_string_lossy()),
        "the operator sees the path: {child}"
    );

    // Book B: its webhook goes to this machine's name, which resolves to a private address
    // (`localhost` itself is refused at upload), so the delivery is refused.
    let host = nix::unistd::gethostname()
        .expect("hostname")
        .to_string_lossy()
        .into_owned();
    let form = Form::new()
        .part("manuscript", Part::bytes(BOOK.as_bytes()).file_name("b.md"))
        .text("callback_url", format!("http://{host}:9/hook"));
    let created = upload(&server, &alice, "?wait=30", form);
    assert_eq!(created.status(), StatusCode::OK);
    let b: Value = created.json().expect("json");
    let b = b["id"].as_str().expect("id").to_owned();
    server
        .process
        .logs
        .wait_for("the refused webhook's line", Duration::from_secs(30), |l| {
            message(
                l,
                Some("worker"),
                "refused a webhook to a non-public address",
            )
        });

    let data_dir = server.data_dir().to_string_lossy().into_owned();
    for id in [&a, &b] {
        // Book B's webhook went to this machine's name, which its refusal names: the tenant's
        // own callback host, not a fact about the server.
        let host = if *id == b { "\"host\"" } else { host.as_str() };
        // Read until the lines the test waited for are stored (the logbook writes in batches).
        let text = common::eventually(
            "the book's log to have its problem lines",
            Duration::from_secs(10),
            || {
                let text = book_log(&server, &alice, id);
                let lines: Value = serde_json::from_str(&text).expect("json");
                let warned = lines["lines"]
                    .as_array()
                    .is_some_and(|l| l.iter().any(|l| l["level"] == "WARN"));
                let seen = if *id == a {
                    warned
                } else {
                    text.contains("book published") && text.contains("webhook queued")
                };
                seen.then_some(text)
            },
        );
        for operator_only in [
            data_dir.as_str(),
            "/blobs/",
            "127.0.0.1",
            "::1",
            "addresses",
            "child.pid",
            "\"pid\"",
            "\"host\"",
            "read-manuscript",
            host,
        ] {
            assert!(
                !text.contains(operator_only),
                "book {id}'s log shows {operator_only:?} to its tenant: {text}"
            );
        }
    }
    // What the tenant reads of the two books' trouble instead: the step failed and is tried
    // again; the webhook was not delivered, and why, in words about their own URL.
    assert!(book_log(&server, &alice, &a).contains("job failed; will retry"));
    let b_log = book_log(&server, &alice, &b);
    assert!(
        b_log.contains("webhook not delivered") && b_log.contains("non-public"),
        "{b_log}"
    );
}

/// Text that a terminal would act on, and other characters a log must not carry raw.
const HOSTILE: &[&str] = &[
    "\u{1b}[1G\u{1b}[2Kweb[1] 2026-01-01 ERROR forged line",
    "\u{1b}]0;owned\u{7}",
    "\u{1b}[2J\u{1b}[H",
    "line\nbreak\r\n",
    "tab\there\u{0}nul",
    "\u{7f}\u{85}\u{9b}31m",
    "sep\u{2028}ara\u{2029}tors",
    "\u{202e}desrever\u{202c} \u{2066}iso\u{2069} \u{200f}",
    "\"{}<>:/etc/passwd",
    "https://user:pw@example.com/?token=secret",
];

/// A random string made of hostile pieces, ordinary words and random characters.
fn hostile(rng: &mut impl Rng) -> String {
    let mut text = String::new();
    for _ in 0..rng.random_range(1..4) {
        match rng.random_range(0..3) {
            0 => text.push_str(HOSTILE[rng.random_range(0..HOSTILE.len())]),
            1 => text.push_str(["Café", "東京", "עברית", "Title", "🙂"][rng.random_range(0..5)]),
            _ => {
                for _ in 0..rng.random_range(1..6) {
                    let c = match rng.random_range(0..4) {
                        0 => char::from_u32(rng.random_range(0..0x20)),
                        1 => char::from_u32(rng.random_range(0x7f..0xa0)),
                        2 => char::from_u32(rng.random_range(0x2000..0x2070)),
                        _ => char::from_u32(rng.random_range(0x20..0x7f)),
                    };
                    text.extend(c);
                }
            }
        }
    }
    text
}

/// Whether a character may not reach a terminal raw (the product's rule, written out again).
fn unsafe_char(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' | '\u{61c}' | '\u{200e}' | '\u{200f}'
        | '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Every line of `text` (split on `\n` only) free of unsafe characters, or the first that is not.
fn first_unsafe_line(text: &str) -> Option<String> {
    text.split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .find(|l| l.chars().any(unsafe_char))
        .map(|l| format!("{l:?}"))
}

/// Findings 3 (and 2, 5 and the fuzz-style test the issue asks for): random titles, file
/// names, request ids and form fields through uploads; every text log line, on stdout, in the
/// files, from `bindery logs` and from `bindery logs --app`, holds no control character, bidi
/// override or line separator, and no secret of a URL; the tenant's log holds no path, host,
/// address or pid.
#[test]
fn hostile_text_through_uploads_reaches_no_text_log_raw() {
    let seed: u64 = std::env::var("HARDENING_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::rng().random());
    println!("hardening: seed {seed} (HARDENING_SEED replays it)");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let data = tempfile::tempdir().expect("tempdir");
    let mut cmd = command(data.path());
    cmd.env("LOG_FORMAT", "text").arg("serve");
    let serve = Running::start(cmd);
    // Text lines arrive as JSON strings in the log stream.
    let listening = serve
        .logs
        .wait_for("the listening line", Duration::from_secs(20), |l| {
            l.as_str()
                .is_some_and(|t| t.contains(" listening ") && t.contains("addr="))
        });
    let addr = listening
        .as_str()
        .and_then(|t| t.split("addr=").nth(1))
        .and_then(|t| t.split_whitespace().next())
        .expect("addr")
        .to_owned();
    let base = format!("http://{addr}");
    let alice = common::web::create_token(command(data.path()), "alice", false);
    let admin = common::web::create_token(command(data.path()), "root", true);

    let mut books = Vec::new();
    for n in 0..12 {
        let mut form = Form::new().part(
            "manuscript",
            Part::bytes(format!("# {}\n\n{}\n", hostile(&mut rng), BOOK).into_bytes())
                .file_name(format!("{}.md", hostile(&mut rng))),
        );
        for field in ["title", "author", "description", "subject"] {
            form = form.text(field, hostile(&mut rng));
        }
        let id: String = (0..rng.random_range(1..40))
            .map(|_| char::from(rng.random_range(0x20u8..0x7f)))
            .collect();
        let response = client()
            .post(format!("{base}/api/v1/books"))
            .bearer_auth(&alice)
            .header("X-Request-Id", id)
            .multipart(form)
            .send()
            .expect("POST /api/v1/books");
        let status = response.status();
        let body: Value = response.json().expect("json");
        assert!(
            status.is_success() || status.is_client_error(),
            "{n}: {status} {body}"
        );
        if let Some(id) = body["id"].as_str() {
            books.push(id.to_owned());
        }
    }
    assert!(!books.is_empty(), "some uploads made books");
    // Every book converted (or refused): its steps have logged what they log.
    for id in &books {
        common::eventually("the book to finish", Duration::from_secs(120), || {
            let book: Value = client()
                .get(format!("{base}/api/v1/books/{id}"))
                .bearer_auth(&alice)
                .send()
                .ok()?
                .json()
                .ok()?;
            (book["status"] != "processing").then_some(())
        });
    }

    // Every line of every text log.
    let logs = |args: &[&str]| {
        let mut cli = command(data.path());
        cli.args(args);
        common::succeed(&mut cli, "bindery logs")
    };
    let from_app = {
        let mut cli = command(data.path());
        cli.args(["logs", "-n", "5000", "--app", &base, "--token", &admin]);
        common::succeed(&mut cli, "bindery logs --app")
    };
    let text = common::eventually(
        "the last book's lines in the database",
        Duration::from_secs(10),
        || {
            let text = logs(&["logs", "-n", "5000"]);
            text.contains(books.last().map_or("", String::as_str))
                .then_some(text)
        },
    );
    let mut files = String::new();
    for entry in std::fs::read_dir(data.path().join("logs")).expect("LOG_DIR") {
        files.push_str(&std::fs::read_to_string(entry.expect("entry").path()).expect("read"));
    }
    let stdout: String = serve
        .logs
        .all()
        .iter()
        .map(|l| l.as_str().map_or_else(|| l.to_string(), str::to_owned) + "\n")
        .collect();
    for (what, text) in [
        ("stdout", &stdout),
        ("the log files", &files),
        ("bindery logs", &text),
        ("bindery logs --app", &from_app),
    ] {
        assert!(text.lines().count() > 20, "{what} has lines: {text}");
        if let Some(line) = first_unsafe_line(text) {
            panic!("{what} holds a raw control character (seed {seed}): {line}");
        }
        if let Some(line) = text
            .lines()
            // (A file name keeps only its last segment, `?token=secret`: no longer a URL.)
            .find(|l| l.contains("example.com/?token=secret") || l.contains("user:pw@"))
        {
            panic!("{what} shows a URL's secret (seed {seed}): {line}");
        }
    }
    // The forged line never stands alone.
    assert!(
        !stdout
            .lines()
            .any(|l| l.starts_with("web[1] 2026-01-01 ERROR")),
        "a forged line"
    );

    let host = nix::unistd::gethostname()
        .expect("hostname")
        .to_string_lossy()
        .into_owned();
    let data_dir = data.path().to_string_lossy().into_owned();
    for id in &books {
        let log = client()
            .get(format!("{base}/api/v1/books/{id}/logs"))
            .bearer_auth(&alice)
            .send()
            .expect("GET logs")
            .text()
            .expect("text");
        for operator_only in [data_dir.as_str(), "\"pid\"", "\"host\"", host.as_str()] {
            assert!(
                !log.contains(operator_only),
                "book {id}'s log shows {operator_only:?} (seed {seed}): {log}"
            );
        }
    }
}

/// `bindery serve` with its `books` queue paused, a tenant `alice` and one book of hers that
/// stays processing, so that its event stream stays open; the server, her token and the
/// stream's path.
fn serve_with_an_open_book(env: &[(&str, &str)]) -> (Server, String, String) {
    let data = tempfile::tempdir().expect("tempdir");
    jobs(data.path(), "pause");
    let server = Server::start_in(data, &["serve"], env);
    let alice = token(&server, "alice", false);
    let form = Form::new().part("manuscript", Part::bytes(BOOK.as_bytes()).file_name("a.md"));
    let created = upload(&server, &alice, "", form);
    assert_eq!(created.status(), StatusCode::ACCEPTED);
    let id = created.json::<Value>().expect("json")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    (server, alice, format!("/api/v1/books/{id}/events"))
}

fn open_stream(server: &Server, path: &str, token: &str) -> reqwest::blocking::Response {
    reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .expect("client")
        .get(server.url(path))
        .bearer_auth(token)
        .send()
        .expect("GET events")
}

/// Finding 4: revoking a token ends its open streams within a few seconds: the admin's log
/// stream (`bindery logs --app -f` exits, saying why) and a tenant's book events (an `ended`
/// event, then the end).
#[test]
fn streams_end_within_seconds_of_their_tokens_revocation() {
    let (server, alice, events) = serve_with_an_open_book(&[]);
    let admin = token(&server, "root", true);
    let mut stream = open_stream(&server, &events, &alice);
    assert_eq!(stream.status(), StatusCode::OK);

    // The admin follows the log from a laptop.
    let mut tail = command(&server.data_dir());
    tail.args([
        "logs",
        "-f",
        "-n",
        "5",
        "--app",
        &server.base,
        "--token",
        &admin,
    ]);
    tail.stdout(std::process::Stdio::piped());
    tail.stderr(std::process::Stdio::piped());
    let mut tail = tail.spawn().expect("bindery logs --app -f");
    server
        .process
        .logs
        .wait_for("the log stream to open", Duration::from_secs(10), |l| {
            message(l, Some("web"), "log stream opened")
        });

    let revoke = |name: &str| {
        let mut cli = command(&server.data_dir());
        cli.args(["token", "revoke", name]);
        common::succeed(&mut cli, "bindery token revoke");
        Instant::now()
    };
    let revoked = revoke("root");
    let ended = common::eventually(
        "bindery logs --app -f to end",
        Duration::from_secs(10),
        || tail.try_wait().expect("wait"),
    );
    let took = revoked.elapsed();
    assert!(!ended.success(), "it ends as a failure, saying why");
    let mut stderr = String::new();
    tail.stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("stderr");
    assert!(stderr.contains("revoked"), "{stderr}");
    assert!(took < Duration::from_secs(6), "took {took:?}");

    let revoked = revoke("alice");
    let mut seen = String::new();
    let mut buffer = [0u8; 4096];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => seen.push_str(&String::from_utf8_lossy(&buffer[..n])),
        }
    }
    let took = revoked.elapsed();
    assert!(took < Duration::from_secs(6), "took {took:?}: {seen}");
    assert!(seen.contains("event: ended"), "{seen}");
    // And it cannot open again.
    assert_eq!(
        open_stream(&server, &events, &alice).status(),
        StatusCode::UNAUTHORIZED
    );
}

/// Finding 8 (streams per token): one token held 180 event streams in the probe; it holds at
/// most `MAX_STREAMS_PER_TOKEN` in a web process, and the next is a 429 that says so.
#[test]
fn one_token_holds_at_most_its_streams() {
    let (server, alice, events) = serve_with_an_open_book(&[("MAX_STREAMS_PER_TOKEN", "2")]);
    let first = open_stream(&server, &events, &alice);
    let second = open_stream(&server, &events, &alice);
    assert_eq!(
        (first.status(), second.status()),
        (StatusCode::OK, StatusCode::OK)
    );
    let third = open_stream(&server, &events, &alice);
    assert_eq!(third.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(third.headers().contains_key("retry-after"));
    let body: Value = third.json().expect("json");
    assert_eq!(body["error"]["code"], "too_many_streams", "{body}");
    // Another token has streams of its own.
    let bob = token(&server, "bob", false);
    let books = client()
        .get(server.url("/api/v1/books"))
        .bearer_auth(&bob)
        .send()
        .expect("GET books");
    assert_eq!(books.status(), StatusCode::OK);
}

/// Finding 5: `bindery config` printed a `password=` in `DATABASE_URL`'s query, a `sig=` in a
/// connection string's `BlobEndpoint` and a `token=` on `KEEPALIVE_URL`.
#[test]
fn config_shows_no_secret_of_any_url() {
    let data = tempfile::tempdir().expect("tempdir");
    let mut cli = command(data.path());
    cli.arg("config")
        .env(
            "DATABASE_URL",
            "postgres://bindery@db.example.com/books?password=dbsecret&sslmode=require",
        )
        .env("BLOB_URL", "az://books")
        .env(
            "AZURE_STORAGE_CONNECTION_STRING",
            "BlobEndpoint=https://acct.blob.core.windows.net/?sv=2024-01-01&sig=blobsecret;\
             AccountName=acct;AccountKey=a2V5c2VjcmV0",
        )
        .env(
            "KEEPALIVE_URL",
            "https://books.example.com/?token=pingsecret",
        )
        .env("APP_URL", "https://books.example.com/");
    let shown = common::succeed(&mut cli, "bindery config");
    for secret in ["dbsecret", "blobsecret", "pingsecret", "a2V5c2VjcmV0"] {
        assert!(!shown.contains(secret), "{secret} in:\n{shown}");
    }
    assert!(shown.contains("password=[redacted]"), "{shown}");
    assert!(shown.contains("sig=[redacted]"), "{shown}");
    assert!(shown.contains("token=[redacted]"), "{shown}");
    assert!(shown.contains("sslmode=require"), "{shown}");
}

/// Finding 6: `/readyz`, which needs no token, answered a failed check with the storage's
/// error in full. Anyone learns which check failed; the metrics token or an admin reads why.
#[test]
fn readyz_tells_only_an_operator_why_a_check_failed() {
    let server = Server::start(&["serve"], &[("METRICS_TOKEN", common::METRICS_TOKEN)]);
    server.wait_ready(Duration::from_secs(30));
    let admin = token(&server, "root", true);
    let blobs = server.data_dir().join("blobs");
    let moved = server.data_dir().join("blobs-moved");
    std::fs::rename(&blobs, &moved).expect("move the blob directory away");

    let anonymous = client().get(server.url("/readyz")).send().expect("readyz");
    assert_eq!(anonymous.status(), StatusCode::SERVICE_UNAVAILABLE);
    let text = anonymous.text().expect("text");
    let body: Value = serde_json::from_str(&text).expect("json");
    assert_eq!(body["blob_store"]["ok"], false, "{body}");
    assert_eq!(body["database"]["ok"], true, "{body}");
    assert!(body["blob_store"].get("error").is_none(), "{body}");
    assert!(
        !text.contains(&*server.data_dir().to_string_lossy()),
        "{text}"
    );

    for bearer in [common::METRICS_TOKEN, admin.as_str()] {
        let told = client()
            .get(server.url("/readyz"))
            .bearer_auth(bearer)
            .send()
            .expect("readyz");
        let body: Value = told.json().expect("json");
        assert!(
            body["blob_store"]["error"]
                .as_str()
                .is_some_and(|e| !e.is_empty()),
            "{body}"
        );
    }
    // The operator's log has it too.
    let line =
        server
            .process
            .logs
            .wait_for("the failed check's line", Duration::from_secs(10), |l| {
                message(l, Some("web"), "readiness check failed") && l["check"] == "blob_store"
            });
    assert!(
        line["error"].as_str().is_some_and(|e| !e.is_empty()),
        "{line}"
    );
    std::fs::rename(&moved, &blobs).expect("put it back");
}

/// The head of a multipart upload to `/api/v1/books` that says its body is `length` bytes.
fn upload_head(token: &str, length: u64) -> String {
    format!(
        "POST /api/v1/books HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: multipart/form-data; boundary=b\r\n\
         Content-Length: {length}\r\nConnection: close\r\n\r\n"
    )
}

/// Finding 7 (size): a 200 MB upload was refused only after ~100 MiB had been read, though
/// its `Content-Length` said so at the start. Over what any upload may be (with the default
/// 100 MiB manuscript and 20 MiB cover), it is refused before a byte of the body is sent.
#[test]
fn an_upload_too_large_by_its_content_length_is_refused_at_once() {
    let server = Server::start(&["serve"], &[]);
    let alice = token(&server, "alice", false);
    let started = Instant::now();
    let answer = raw(&server, upload_head(&alice, 200_000_000).as_bytes());
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("MAX_MANUSCRIPT_SIZE"), "{answer}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

/// Finding 7 (stall): a body that trickled was kept open for as long as the client liked. One
/// that sends nothing for `BODY_IDLE_TIMEOUT` ends with 408, and nothing of it is kept.
#[test]
fn a_stalled_upload_ends_with_408_and_keeps_nothing() {
    let server = Server::start(&["serve"], &[("BODY_IDLE_TIMEOUT", "1s")]);
    let alice = token(&server, "alice", false);
    // Part of a manuscript, and then nothing.
    let part = "--b\r\nContent-Disposition: form-data; name=\"manuscript\"; filename=\"a.md\"\r\n\
                Content-Type: text/markdown\r\n\r\n# A book that never ends\n\nwords words";
    let mut request = upload_head(&alice, 1_000_000).into_bytes();
    request.extend_from_slice(part.as_bytes());
    let started = Instant::now();
    let answer = raw(&server, &request);
    let took = started.elapsed();
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("body_stalled"), "{answer}");
    assert!(took < Duration::from_secs(8), "took {took:?}");
    let books = server.data_dir().join("blobs/books");
    let left: Vec<_> = std::fs::read_dir(&books)
        .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "nothing is kept: {left:?}");
    let listed: Value = client()
        .get(server.url("/api/v1/books"))
        .bearer_auth(&alice)
        .send()
        .expect("list")
        .json()
        .expect("json");
    assert_eq!(listed["books"], serde_json::json!([]), "{listed}");
}
