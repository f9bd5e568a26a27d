//! A first admin without a shell: `BINDERY_ADMIN_TOKEN` becomes the admin token at start (stored
//! hashed, never twice, never brought back once revoked), and the admin API and Tokens page
//! create, list and revoke tenants' tokens, so a host with no shell gets from deploy to a
//! converted book.

use std::process::Command;
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::blocking::Response;
use serde_json::{Value, json};

use crate::common::web::{browser, session};
use crate::common::{self, Server, client, command, message};

/// What a host's secret generator makes: hex (openssl, Heroku's `generator: secret`)…
const CHOSEN: &str = "5d41402abc4b2a76b9719d911017c5925d41402abc4b2a76b9719d911017c592";
/// …or base64 (Render's `generateValue`).
const GENERATED: &str = "Zm9vYmFyYmF6cXV4+/0123456789abcdefABCDEFghijk=";

fn start(data: tempfile::TempDir, database_url: Option<&str>, admin_token: &str) -> Server {
    let mut env = vec![("BINDERY_ADMIN_TOKEN", admin_token)];
    if let Some(url) = database_url {
        env.push(("DATABASE_URL", url));
    }
    let server = Server::start_in(data, &["serve"], &env);
    server.wait_ready(Duration::from_secs(20));
    server
}

fn get(server: &Server, token: &str, path: &str) -> Response {
    client()
        .get(server.url(path))
        .bearer_auth(token)
        .send()
        .expect("GET")
}

fn post(server: &Server, token: &str, path: &str, body: Option<Value>) -> Response {
    let request = client().post(server.url(path)).bearer_auth(token);
    match body {
        Some(body) => request.json(&body),
        None => request,
    }
    .send()
    .expect("POST")
}

fn tokens(server: &Server, token: &str) -> Vec<Value> {
    let response = get(server, token, "/api/v1/admin/tokens");
    assert_eq!(response.status(), StatusCode::OK);
    let body: Value = response.json().expect("json");
    body["tokens"].as_array().expect("tokens").clone()
}

fn stop(mut server: Server) -> tempfile::TempDir {
    server.process.signal(nix::sys::signal::Signal::SIGTERM);
    server.process.wait_exit(Duration::from_secs(30));
    server.data
}

/// The log line the start made about the variable (its message names the token, never its value).
fn first_admin_line(server: &Server) -> Value {
    server.process.logs.wait_for(
        "the BINDERY_ADMIN_TOKEN line",
        Duration::from_secs(10),
        |l| {
            l["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("BINDERY_ADMIN_TOKEN"))
        },
    )
}

fn the_first_admin_lifecycle(database_url: Option<&str>) {
    let server = start(tempfile::tempdir().expect("tempdir"), database_url, CHOSEN);
    let line = first_admin_line(&server);
    let said = line["message"].as_str().unwrap_or_default();
    assert!(said.contains("is now the admin token \"admin\""), "{line}");
    assert!(
        !server
            .process
            .logs
            .all()
            .iter()
            .any(|l| l.to_string().contains(CHOSEN)),
        "the token is logged"
    );

    // The variable's value is the admin's token, as it is.
    let listed = tokens(&server, CHOSEN);
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["name"], "admin");
    assert_eq!(listed[0]["admin"], true);

    // A tenant's token through the API, shown once, not cached, and working at once.
    let created = post(
        &server,
        CHOSEN,
        "/api/v1/admin/tokens",
        Some(json!({"name": "alice"})),
    );
    assert_eq!(created.status(), StatusCode::CREATED);
    assert_eq!(created.headers()["cache-control"], "no-store");
    let created: Value = created.json().expect("json");
    assert_eq!(created["name"], "alice");
    assert_eq!(created["admin"], false);
    let alice = created["token"].as_str().expect("token").to_owned();
    assert!(alice.starts_with("bdy_") && alice.len() == 68, "{alice}");
    assert_eq!(
        get(&server, &alice, "/api/v1/books").status(),
        StatusCode::OK
    );
    // A tenant is no admin.
    assert_eq!(
        get(&server, &alice, "/api/v1/admin/tokens").status(),
        StatusCode::NOT_FOUND
    );
    // Names are checked, and never reused.
    let bad = post(
        &server,
        CHOSEN,
        "/api/v1/admin/tokens",
        Some(json!({"name": "has space"})),
    );
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
    let bad: Value = bad.json().expect("json");
    assert_eq!(bad["error"]["code"], "invalid_name");
    assert_eq!(bad["error"]["field"], "name");
    let again = post(
        &server,
        CHOSEN,
        "/api/v1/admin/tokens",
        Some(json!({"name": "alice"})),
    );
    assert_eq!(again.status(), StatusCode::CONFLICT);
    let not_json = client()
        .post(server.url("/api/v1/admin/tokens"))
        .bearer_auth(CHOSEN)
        .body("name=bob")
        .send()
        .expect("POST");
    assert_eq!(not_json.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        not_json.json::<Value>().expect("json")["error"]["code"],
        "invalid_body"
    );

    // The last live admin cannot be revoked: nobody could reach the admin pages again.
    let last = post(&server, CHOSEN, "/api/v1/admin/tokens/admin/revoke", None);
    assert_eq!(last.status(), StatusCode::CONFLICT);
    assert_eq!(
        last.json::<Value>().expect("json")["error"]["code"],
        "last_admin"
    );

    // Rotating it away: an admin token of one's own, then the first one revoked.
    let own: Value = post(
        &server,
        CHOSEN,
        "/api/v1/admin/tokens",
        Some(json!({"name": "ops", "admin": true})),
    )
    .json()
    .expect("json");
    let ops = own["token"].as_str().expect("token").to_owned();
    let revoked = post(&server, &ops, "/api/v1/admin/tokens/admin/revoke", None);
    assert_eq!(revoked.status(), StatusCode::OK);
    assert!(revoked.json::<Value>().expect("json")["revoked_at"].is_string());
    assert_eq!(
        get(&server, CHOSEN, "/api/v1/admin/tokens").status(),
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        post(&server, &ops, "/api/v1/admin/tokens/nobody/revoke", None).status(),
        StatusCode::NOT_FOUND
    );

    // A restart with the variable still set brings nothing back.
    let data = stop(server);
    let server = start(data, database_url, CHOSEN);
    let line = first_admin_line(&server);
    let said = line["message"].as_str().unwrap_or_default();
    assert!(
        said.contains("revoked token \"admin\", which is never brought back"),
        "{line}"
    );
    assert_eq!(
        get(&server, CHOSEN, "/api/v1/admin/tokens").status(),
        StatusCode::UNAUTHORIZED
    );
    let names: Vec<String> = tokens(&server, &ops)
        .iter()
        .map(|t| t["name"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(names, ["admin", "alice", "ops"]);

    // A new value while an admin is live is ignored, and said so.
    let data = stop(server);
    let other = "q3Zx8+Rk2mP/0vT6yHc1nW4bJ9eL5sA7dF2gK8uQ1oE=";
    let server = start(data, database_url, other);
    let line = first_admin_line(&server);
    assert!(
        line["message"]
            .as_str()
            .is_some_and(|m| m.contains("is ignored: admin tokens exist already")),
        "{line}"
    );
    assert_eq!(
        get(&server, other, "/api/v1/admin/tokens").status(),
        StatusCode::UNAUTHORIZED
    );
    stop(server);
}

#[test]
fn the_first_admin_comes_from_the_environment_and_is_rotated_away_on_sqlite() {
    the_first_admin_lifecycle(None);
}

#[test]
fn the_first_admin_comes_from_the_environment_and_is_rotated_away_on_postgres() {
    if !common::need::postgres() {
        return;
    }
    let url = common::postgres_database();
    the_first_admin_lifecycle(Some(&url));
}

/// Only the token's SHA-256 is stored, as for every token.
#[test]
fn the_first_admin_is_stored_hashed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cmd = command(dir.path());
    let out = cmd
        .env("BINDERY_ADMIN_TOKEN", CHOSEN)
        .arg("migrate")
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains(CHOSEN));
    // The database file and its write-ahead log, as bytes.
    let mut stored = Vec::new();
    for entry in std::fs::read_dir(dir.path()).expect("data dir") {
        let path = entry.expect("entry").path();
        if path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("bindery.db"))
        {
            stored.extend(std::fs::read(&path).expect("read"));
        }
    }
    let text = String::from_utf8_lossy(&stored);
    assert!(!text.contains(CHOSEN), "the token is stored in clear");
    let hash = sha256_hex(CHOSEN);
    assert!(text.contains(&hash), "its hash is not stored");
    let listed = command(dir.path())
        .args(["token", "list"])
        .output()
        .expect("run");
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed
            .lines()
            .any(|l| l.starts_with("admin ") && l.contains(" yes ")),
        "{listed}"
    );
}

fn sha256_hex(text: &str) -> String {
    let out = Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(text.as_bytes())?;
            child.wait_with_output()
        })
        .expect("sha256sum");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// Several processes starting at once (a release phase beside web processes, two `web`s) make
/// one first admin between them.
#[test]
fn processes_starting_at_once_make_one_first_admin() {
    if !common::need::postgres() {
        return;
    }
    let url = common::postgres_database();
    let dir = tempfile::tempdir().expect("tempdir");
    let children: Vec<_> = (0..4)
        .map(|_| {
            command(dir.path())
                .env("DATABASE_URL", &url)
                .env("BINDERY_ADMIN_TOKEN", CHOSEN)
                .arg("migrate")
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn")
        })
        .collect();
    let mut made = 0;
    for child in children {
        let out = child.wait_with_output().expect("wait");
        assert!(out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        made += stderr.matches("is now the admin token").count();
        assert!(
            stderr.contains("BINDERY_ADMIN_TOKEN is"),
            "each says what the variable did: {stderr}"
        );
    }
    assert_eq!(made, 1, "exactly one process made the first admin");
    let listed = command(dir.path())
        .env("DATABASE_URL", &url)
        .args(["token", "list"])
        .output()
        .expect("run");
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert_eq!(
        listed.lines().count(),
        2,
        "one token and the header: {listed}"
    );
}

/// The Tokens page lists the tokens and offers the form that creates one, to a first admin
/// signed in with a base64 token; a tenant is told there is nothing there.
#[test]
fn the_tokens_page_lists_tokens_for_an_admin_only() {
    let server = start(tempfile::tempdir().expect("tempdir"), None, GENERATED);
    first_admin_line(&server);
    let alice: Value = post(
        &server,
        GENERATED,
        "/api/v1/admin/tokens",
        Some(json!({"name": "alice"})),
    )
    .json()
    .expect("json");
    let admin = session(&server, GENERATED);
    let page = browser()
        .get(server.url("/admin/tokens"))
        .header("cookie", &admin.cookie)
        .send()
        .expect("GET /admin/tokens");
    assert_eq!(page.status(), StatusCode::OK);
    let html = page.text().expect("body");
    for expected in [
        "<h1>Tokens</h1>",
        "id=\"new-token\"",
        "/static/tokens.js",
        "/api/v1/admin/tokens/alice/revoke",
        "id=\"first-admin-hint\"",
        "href=\"/admin/tokens\" aria-current=\"page\"",
    ] {
        assert!(html.contains(expected), "{expected} missing from:\n{html}");
    }
    // The tokens themselves are never on a page.
    assert!(!html.contains(GENERATED));
    assert!(!html.contains(alice["token"].as_str().expect("token")));
    // The page's script is served.
    let script = client()
        .get(server.url("/static/tokens.js"))
        .send()
        .expect("GET");
    assert_eq!(script.status(), StatusCode::OK);

    let tenant = session(&server, alice["token"].as_str().expect("token"));
    let page = browser()
        .get(server.url("/admin/tokens"))
        .header("cookie", &tenant.cookie)
        .send()
        .expect("GET /admin/tokens");
    assert_eq!(page.status(), StatusCode::NOT_FOUND);
    // The log says nothing of either token.
    assert!(
        !server
            .process
            .logs
            .all()
            .iter()
            .any(|l| message(l, None, GENERATED))
    );
}

/// The Tokens page in a real browser (headless Chromium): a first admin signed in with
/// `BINDERY_ADMIN_TOKEN` creates a token with the form, sees it once, and revokes it.
/// Screenshots are kept in `target/tmp/screenshots/tokens/`.
#[test]
fn the_tokens_page_creates_and_revokes_in_chromium() {
    if !common::need::browser() {
        return;
    }
    let server = start(tempfile::tempdir().expect("tempdir"), None, CHOSEN);
    first_admin_line(&server);
    let shots = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("screenshots/tokens");
    let stdout = common::browser_passes(
        common::browser_script("tokens.mjs")
            .arg(server.url("/"))
            .arg(&shots)
            .env("BINDERY_TOKEN", CHOSEN),
        "the tokens page",
    );
    assert!(stdout.trim_end().ends_with("OK"), "{stdout}");
    // The token the page showed was kobo-alice's, and is revoked now.
    let shown = stdout
        .lines()
        .find_map(|l| l.strip_prefix("TOKEN "))
        .expect("the page's token");
    assert_eq!(
        get(&server, shown, "/api/v1/books").status(),
        StatusCode::UNAUTHORIZED
    );
    let listed = tokens(&server, CHOSEN);
    let kobo = listed
        .iter()
        .find(|t| t["name"] == "kobo-alice")
        .expect("kobo-alice is listed");
    assert!(kobo["revoked_at"].is_string(), "{kobo}");
}
