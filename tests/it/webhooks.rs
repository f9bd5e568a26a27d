//! Webhooks against the real server and a real HTTP receiver on loopback: a book's event is
//! delivered exactly once even when the first attempt fails, signed with the tenant's secret;
//! a failed book says why; bad callback URLs are refused at upload; and without
//! WEBHOOK_ALLOW_PRIVATE nothing goes to the host's own network.

use crate::common;

use std::time::Duration;

use hmac::{Hmac, KeyInit, Mac};
use reqwest::StatusCode;
use reqwest::blocking::multipart::{Form, Part};
use serde_json::Value;
use sha2::Sha256;

use common::receiver::{Received, Receiver};
use common::{Server, client, command};

/// `bindery serve` with `env`, on SQLite or a fresh PostgreSQL database; the database URL
/// is returned for CLI commands against the same data.
fn serve(postgres: bool, env: &[(&str, &str)]) -> (Server, Option<String>) {
    let mut env: Vec<(&str, String)> = env.iter().map(|(k, v)| (*k, (*v).to_owned())).collect();
    let database = postgres.then(common::postgres_database);
    if let Some(url) = &database {
        env.push(("DATABASE_URL", url.clone()));
    }
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    (Server::start(&["serve"], &env), database)
}

/// `bindery token …` against the server's database: stdout and stderr.
fn token_command(server: &Server, database: Option<&str>, args: &[&str]) -> (String, String) {
    let mut cmd = command(&server.data_dir());
    if let Some(url) = database {
        cmd.env("DATABASE_URL", url);
    }
    let out = cmd
        .arg("token")
        .args(args)
        .output()
        .expect("run bindery token");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    (String::from_utf8_lossy(&out.stdout).into_owned(), stderr)
}

fn form(manuscript: &[u8], callback_url: &str) -> Form {
    Form::new()
        .part(
            "manuscript",
            Part::bytes(manuscript.to_vec()).file_name("hook.md"),
        )
        .text("title", "Webhook Test")
        .text("callback_url", callback_url.to_owned())
}

const MANUSCRIPT: &[u8] = b"# One\n\nA short book, to be announced.\n\n# Two\n\nThe end.\n";

fn upload(server: &Server, token: &str, form: Form) -> reqwest::blocking::Response {
    client()
        .post(server.url("/api/v1/books?wait=30"))
        .timeout(common::HELD)
        .bearer_auth(token)
        .multipart(form)
        .send()
        .expect("POST /api/v1/books")
}

fn get_json(server: &Server, token: &str, path: &str) -> Value {
    let response = client()
        .get(server.url(path))
        .bearer_auth(token)
        .send()
        .expect("GET");
    assert_eq!(response.status(), 200, "{path}");
    response.json().expect("JSON")
}

/// Polls the book until its first delivery reaches `state`, and returns the book.
fn wait_delivery_state(server: &Server, token: &str, id: &str, state: &str) -> Value {
    common::eventually(
        &format!("the delivery to become {state}"),
        Duration::from_secs(20),
        || {
            let book = get_json(server, token, &format!("/api/v1/books/{id}"));
            if book["deliveries"][0]["state"] == state {
                Ok(book)
            } else {
                Err(format!("{book:#}"))
            }
        },
    )
}

/// Checks `Bindery-Signature` as a receiver would, with its own HMAC, not Bindery's code.
fn assert_signed(request: &Received, secret: &str) {
    let header = request.header("bindery-signature");
    let mut parts = header.split(',');
    let t = parts
        .next()
        .and_then(|p| p.strip_prefix("t="))
        .unwrap_or_else(|| panic!("no t= in {header:?}"));
    let v1 = parts
        .next()
        .and_then(|p| p.strip_prefix("v1="))
        .unwrap_or_else(|| panic!("no v1= in {header:?}"));
    let sent_at: i64 = t.parse().expect("t is unix seconds");
    let now = chrono::Utc::now().timestamp();
    assert!(
        (now - sent_at).abs() < 120,
        "t={sent_at} is not now ({now})"
    );
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("key");
    mac.update(t.as_bytes());
    mac.update(b".");
    mac.update(&request.body);
    let expected: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(v1, expected, "the signature does not verify");
    let mut forged = Hmac::<Sha256>::new_from_slice(b"whsec_wrong").expect("key");
    forged.update(format!("{t}.").as_bytes());
    forged.update(&request.body);
    assert_ne!(
        v1,
        forged
            .finalize()
            .into_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    );
}

/// The `v1` values of a delivery's `Bindery-Signature`, and what each given secret signs its body
/// to, computed here with HMAC the way a receiver would.
fn signatures(request: &Received, secrets: &[&str]) -> (Vec<String>, Vec<String>) {
    let header = request.header("bindery-signature");
    let t = header
        .split(',')
        .find_map(|p| p.strip_prefix("t="))
        .unwrap_or_else(|| panic!("no t= in {header:?}"));
    let given = header
        .split(',')
        .filter_map(|p| p.strip_prefix("v1="))
        .map(str::to_owned)
        .collect();
    let expected = secrets
        .iter()
        .map(|secret| {
            let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("key");
            mac.update(format!("{t}.").as_bytes());
            mac.update(&request.body);
            mac.finalize()
                .into_bytes()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect()
        })
        .collect();
    (given, expected)
}

/// Rotating a tenant's secret: for the overlap, deliveries carry a signature by the new secret
/// and one by the old, so a receiver that still knows only the old one accepts them; rotated
/// with no overlap, only the newest signs.
#[test]
fn a_rotated_secret_signs_alongside_the_old_one_for_the_overlap() {
    let receiver = Receiver::start(|_| 200);
    let (server, database) = serve(false, &[("WEBHOOK_ALLOW_PRIVATE", "true")]);
    let (stdout, _) = token_command(&server, database.as_deref(), &["create", "alice"]);
    let token = stdout.trim().to_owned();
    let (first, _) = token_command(&server, database.as_deref(), &["secret", "alice"]);
    let first = first.trim().to_owned();
    let url = receiver.url("127.0.0.1");
    let rotate = |query: &str| {
        client()
            .post(server.url(&format!("/api/v1/webhook-secret/rotate{query}")))
            .bearer_auth(&token)
            .send()
            .expect("POST rotate")
    };

    // Through the API, with the default overlap of a day.
    let rotated = rotate("");
    assert_eq!(rotated.status(), 200);
    assert_eq!(rotated.headers()["cache-control"], "no-store");
    let rotated: Value = rotated.json().expect("JSON");
    let second = rotated["secret"].as_str().expect("secret").to_owned();
    assert!(
        second.starts_with("whsec_") && second != first,
        "{rotated:#}"
    );
    let until = chrono::DateTime::parse_from_rfc3339(
        rotated["previous_secret_valid_until"]
            .as_str()
            .expect("previous_secret_valid_until"),
    )
    .expect("RFC 3339");
    let hours = (until.timestamp() - chrono::Utc::now().timestamp()) as f64 / 3600.0;
    assert!((23.9..=24.1).contains(&hours), "overlap of {hours} h");
    assert_eq!(
        get_json(&server, &token, "/api/v1/webhook-secret")["secret"],
        second.as_str()
    );

    assert_eq!(
        upload(&server, &token, form(MANUSCRIPT, &url)).status(),
        200
    );
    let during = receiver.wait_for(1, Duration::from_secs(20));
    let (given, expected) = signatures(&during[0], &[&second, &first]);
    assert_eq!(
        given, expected,
        "signed by the new secret, then the old one"
    );

    // From the command line, retiring the old one at once.
    let (third, said) = token_command(
        &server,
        database.as_deref(),
        &["secret", "alice", "--rotate", "--overlap-hours", "0"],
    );
    let third = third.trim().to_owned();
    assert!(third.starts_with("whsec_") && third != second, "{third}");
    assert!(said.contains("no longer signs"), "{said}");
    assert_eq!(
        upload(&server, &token, form(MANUSCRIPT, &url)).status(),
        200
    );
    let after = receiver.wait_for(2, Duration::from_secs(20));
    let (given, expected) = signatures(&after[1], &[&third]);
    assert_eq!(given, expected, "only the newest secret signs");
    let (_, by_old) = signatures(&after[1], &[&second, &first]);
    assert!(by_old.iter().all(|v| !given.contains(v)));

    // An overlap past 30 days is refused, naming the parameter; nothing changes.
    let refused = rotate("?overlap_hours=1000");
    assert_eq!(refused.status(), 400);
    let refused: Value = refused.json().expect("JSON");
    assert_eq!(refused["error"]["code"], "invalid_overlap", "{refused:#}");
    assert_eq!(refused["error"]["field"], "overlap_hours");
    assert_eq!(
        get_json(&server, &token, "/api/v1/webhook-secret")["secret"],
        third.as_str()
    );
}

#[test]
fn a_webhook_is_delivered_exactly_once_after_a_failed_attempt_on_sqlite() {
    delivered_exactly_once(false);
}

#[test]
fn a_webhook_is_delivered_exactly_once_after_a_failed_attempt_on_postgres() {
    if !common::need::postgres() {
        return;
    }
    delivered_exactly_once(true);
}

fn delivered_exactly_once(postgres: bool) {
    // The first request fails; every later one succeeds.
    let receiver = Receiver::start(|n| if n == 0 { 500 } else { 200 });
    // On PostgreSQL the service knows its public URL, so the event's links are absolute; on
    // SQLite it does not, and they are paths.
    let mut env = vec![("WEBHOOK_ALLOW_PRIVATE", "true")];
    if postgres {
        env.push(("APP_URL", "https://books.example.com/"));
    }
    let base = if postgres {
        "https://books.example.com"
    } else {
        ""
    };
    let (server, database) = serve(postgres, &env);
    let (stdout, stderr) = token_command(&server, database.as_deref(), &["create", "alice"]);
    let token = stdout.trim().to_owned();
    assert!(
        token.starts_with("bdy_") && !token.contains('\n'),
        "{stdout:?}"
    );
    let secret = get_json(&server, &token, "/api/v1/webhook-secret")["secret"]
        .as_str()
        .expect("secret")
        .to_owned();
    assert!(
        secret.starts_with("whsec_") && secret.len() == 6 + 64,
        "{secret}"
    );
    assert!(
        stderr.contains(&secret),
        "token create shows the secret: {stderr}"
    );
    let (printed, _) = token_command(&server, database.as_deref(), &["secret", "alice"]);
    assert_eq!(printed.trim(), secret);

    let url = receiver.url("127.0.0.1");
    let created = upload(&server, &token, form(MANUSCRIPT, &url));
    assert_eq!(created.status(), StatusCode::OK);
    let book: Value = created.json().expect("JSON");
    assert_eq!(book["status"], "ready", "{book:#}");
    assert_eq!(book["callback_url"], url.as_str());
    let id = book["id"].as_str().expect("id").to_owned();

    // A 500, then a retry after the engine's backoff that is acknowledged, then nothing more
    // (checked below, once the delivery's job has completed).
    let requests = receiver.wait_for(2, Duration::from_secs(30));
    let answered: Vec<u16> = requests.iter().map(|r| r.answered).collect();
    assert_eq!(answered, [500, 200]);
    let (first, second) = (&requests[0], &requests[1]);
    let delivery = first.header("bindery-delivery").to_owned();
    assert!(uuid::Uuid::parse_str(&delivery).is_ok(), "{delivery:?}");
    assert_eq!(
        second.header("bindery-delivery"),
        delivery,
        "one delivery id"
    );
    assert_eq!(first.body, second.body, "every attempt sends the same body");
    for request in &requests {
        assert_eq!(request.header("bindery-event"), "book.ready");
        assert_eq!(request.header("content-type"), "application/json");
        assert!(
            request.header("user-agent").starts_with("Bindery/"),
            "{:?}",
            request.headers
        );
        assert_signed(request, &secret);
    }
    let event = second.json();
    assert_eq!(event["id"], delivery.as_str());
    assert_eq!(event["type"], "book.ready");
    assert!(
        chrono::DateTime::parse_from_rfc3339(event["created_at"].as_str().unwrap_or_default())
            .is_ok(),
        "{event:#}"
    );
    assert_eq!(event["book"]["id"], id.as_str());
    assert_eq!(event["book"]["status"], "ready");
    assert_eq!(event["book"]["title"], "Webhook Test");
    assert!(event["book"].get("error").is_none(), "{event:#}");
    assert_eq!(
        event["book"]["links"]["self"],
        format!("{base}/api/v1/books/{id}").as_str()
    );
    assert_eq!(
        event["book"]["links"]["epub"],
        format!("{base}/api/v1/books/{id}/epub").as_str()
    );
    assert_eq!(
        event["book"]["links"]["reader"],
        format!("{base}/books/{id}/reader/").as_str()
    );

    // The book shows the delivery: delivered on the second attempt, after a 500.
    let book = wait_delivery_state(&server, &token, &id, "delivered");
    let deliveries = book["deliveries"].as_array().expect("deliveries");
    assert_eq!(deliveries.len(), 1, "{book:#}");
    let shown = &deliveries[0];
    assert_eq!(shown["id"], delivery.as_str());
    assert_eq!(shown["event"], "book.ready");
    assert_eq!(shown["attempts"], 2);
    assert_eq!(shown["response_status"], 200);
    assert!(shown["delivered_at"].is_string(), "{shown:#}");
    assert!(
        shown["last_error"]
            .as_str()
            .is_some_and(|e| e.contains("500") && e.contains("receiver not ready")),
        "{shown:#}"
    );

    // Operators see the job in its own queue, completed. The delivery is recorded as the job
    // runs and the job's completion commits after it (the worker batches completions), so the
    // list is read until it shows it.
    common::eventually(
        "the delivery job completed",
        Duration::from_secs(10),
        || {
            let mut jobs = command(&server.data_dir());
            if let Some(url) = &database {
                jobs.env("DATABASE_URL", url);
            }
            let listed = jobs
                .args(["jobs", "list", "--queue", "webhooks"])
                .output()
                .expect("bindery jobs list");
            let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
            if listed
                .lines()
                .any(|l| l.contains("webhook.deliver") && l.contains("completed"))
            {
                Ok(())
            } else {
                Err(listed)
            }
        },
    );
    // Its job completed with the delivery recorded, so nothing can send the event again.
    let requests_later = receiver.requests();
    assert_eq!(
        requests_later.len(),
        2,
        "a delivered event was sent again: {requests_later:#?}"
    );

    // A book that fails says so, with the reason.
    let failed = upload(&server, &token, form(b"", &url));
    let failed: Value = failed.json().expect("JSON");
    assert_eq!(failed["status"], "failed", "{failed:#}");
    let requests = receiver.wait_for(3, Duration::from_secs(20));
    let event = requests[2].json();
    assert_eq!(requests[2].header("bindery-event"), "book.failed");
    assert_ne!(requests[2].header("bindery-delivery"), delivery);
    assert_signed(&requests[2], &secret);
    assert_eq!(event["type"], "book.failed");
    assert_eq!(event["book"]["id"], failed["id"]);
    assert_eq!(event["book"]["status"], "failed");
    assert_eq!(event["book"]["error"]["code"], "empty_manuscript");
    assert_eq!(event["book"]["error"], failed["error"], "the API's words");
    assert!(event["book"]["links"].get("epub").is_none(), "{event:#}");

    // Deleting a book takes its deliveries with it.
    let deleted = client()
        .delete(server.url(&format!("/api/v1/books/{id}")))
        .bearer_auth(&token)
        .send()
        .expect("DELETE");
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
}

/// Makes the server's tokens look as they did before migration 0006 filled the column.
fn forget_webhook_secrets(server: &Server) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let store = common::books::open(&server.data_dir(), None).await;
        let bindery::storage::Database::Sqlite(pool) = &store.db else {
            unreachable!("this test runs on SQLite")
        };
        sqlx::query("UPDATE tokens SET webhook_secret = NULL")
            .execute(pool)
            .await
            .expect("forget secrets");
        store.db.close().await;
    });
}

#[test]
fn callback_urls_are_checked_and_private_addresses_refused() {
    let receiver = Receiver::start(|_| 200);
    // WEBHOOK_ALLOW_PRIVATE is unset: the default.
    let (server, _) = serve(false, &[]);
    let (stdout, _) = token_command(&server, None, &["create", "bob"]);
    let token = stdout.trim().to_owned();

    // A token from before webhooks has no secret; it gets one on first use, and keeps it.
    forget_webhook_secrets(&server);
    let secret = get_json(&server, &token, "/api/v1/webhook-secret")["secret"].clone();
    assert!(
        secret.as_str().is_some_and(|s| s.starts_with("whsec_")),
        "{secret}"
    );
    assert_eq!(
        get_json(&server, &token, "/api/v1/webhook-secret")["secret"],
        secret
    );
    let (printed, _) = token_command(&server, None, &["secret", "bob"]);
    assert_eq!(Some(printed.trim()), secret.as_str());

    let too_long = format!("https://example.com/{}", "a".repeat(2048));
    for (url, says) in [
        ("not a url", "not an absolute URL"),
        ("ftp://example.com/hook", "http:// or https://"),
        (
            "https://user:secret@example.com/hook",
            "user name or password",
        ),
        (too_long.as_str(), "2048"),
        (&receiver.url("127.0.0.1"), "WEBHOOK_ALLOW_PRIVATE=true"),
        ("http://[::1]/hook", "WEBHOOK_ALLOW_PRIVATE=true"),
        (
            "http://169.254.169.254/latest/",
            "WEBHOOK_ALLOW_PRIVATE=true",
        ),
        (&receiver.url("localhost"), "WEBHOOK_ALLOW_PRIVATE=true"),
    ] {
        let response = upload(&server, &token, form(MANUSCRIPT, url));
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{url}");
        let body: Value = response.json().expect("JSON");
        assert_eq!(body["error"]["code"], "invalid_callback_url", "{url}");
        assert_eq!(body["error"]["field"], "callback_url", "{url}");
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{url}: {message}");
    }
    let books = get_json(&server, &token, "/api/v1/books");
    assert_eq!(
        books["books"].as_array().map(Vec::len),
        Some(0),
        "{books:#}"
    );

    // A name that is not obviously local passes the upload, but resolves to this machine, so
    // the delivery is refused at connection time and not retried.
    let host = nix::unistd::gethostname()
        .expect("hostname")
        .into_string()
        .expect("UTF-8 hostname");
    let addresses: Vec<std::net::IpAddr> =
        std::net::ToSocketAddrs::to_socket_addrs(&(host.as_str(), 80))
            .map(|a| a.map(|a| a.ip()).collect())
            .unwrap_or_default();
    if !addresses.iter().any(|ip| ip.is_loopback()) {
        eprintln!(
            "skipped the DNS half: {host} resolves to {addresses:?}, and the receiver listens on loopback"
        );
        return;
    }
    let created = upload(&server, &token, form(MANUSCRIPT, &receiver.url(&host)));
    assert_eq!(created.status(), StatusCode::OK);
    let book: Value = created.json().expect("JSON");
    let id = book["id"].as_str().expect("id");
    let book = wait_delivery_state(&server, &token, id, "failed");
    let shown = &book["deliveries"][0];
    assert_eq!(shown["attempts"], 1, "refused, not retried: {shown:#}");
    assert!(
        shown["last_error"]
            .as_str()
            .is_some_and(|e| e.contains("WEBHOOK_ALLOW_PRIVATE=true") && e.contains(&host)),
        "{shown:#}"
    );
    // Refused before connecting, and `failed` is final: nothing is on its way.
    assert!(
        receiver.requests().is_empty(),
        "a webhook reached the host's own network"
    );
}
