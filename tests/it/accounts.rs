//! Accounts as a person meets them, over HTTP against the real binary, on SQLite and
//! PostgreSQL: the first admin (from `BINDERY_ADMIN_TOKEN`) invites someone, who makes an
//! account with a password, signs in and uploads; an invitation used, revoked or expired says
//! why; wrong passwords are limited, and neither the answers nor their times tell whether an
//! address has an account. Passkeys, in Chromium, are `accounts_browser.rs`.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use reqwest::blocking::Response;
use reqwest::header::{COOKIE, LOCATION};

use crate::common::web::{browser as http, cookie_pair, session, set_cookie};
use crate::common::{self, Server};

/// The first admin's token, as an operator would set it.
pub const ADMIN: &str = "3f9c1e7a5b2d8046c1e9f7a3b5d2c8e0a6f4b1d9c7e5a3f1b8d6c4e2a0f9b7d5";
/// A password that passes the strength check.
pub const PASSWORD: &str = "violet kettle orbits paper";

/// `bindery serve` with a first admin, on SQLite or a fresh PostgreSQL database (whose URL
/// comes back too).
pub fn serve(postgres: bool) -> (Server, Option<String>) {
    let mut env = vec![("BINDERY_ADMIN_TOKEN", ADMIN.to_owned())];
    let database = postgres.then(common::postgres_database);
    if let Some(url) = &database {
        env.push(("DATABASE_URL", url.clone()));
    }
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    (Server::start(&["serve"], &env), database)
}

/// The value of the element with `id`'s `value` attribute in a page.
pub fn value_of(page: &str, id: &str) -> Option<String> {
    let at = page.find(&format!("id=\"{id}\""))?;
    let tag_start = page[..at].rfind('<')?;
    let tag = &page[tag_start..tag_start + page[tag_start..].find('>')?];
    let value = tag.split("value=\"").nth(1)?;
    Some(value[..value.find('"')?].replace("&amp;", "&"))
}

/// Makes an invitation on the People page as `cookie`'s session; returns the link's path.
pub fn invite(server: &Server, cookie: &str, csrf: &str, tenant: &str, role: &str) -> String {
    let page = http()
        .post(server.url("/people/invitations"))
        .header(COOKIE, cookie)
        .form(&[
            ("_csrf", csrf),
            ("tenant", tenant),
            ("role", role),
            ("email", ""),
            ("note", "a test"),
            ("days", "7"),
            ("uses", "1"),
        ])
        .send()
        .expect("POST /people/invitations");
    assert_eq!(page.status(), StatusCode::OK);
    let page = page.text().expect("body");
    let link = value_of(&page, "invitation-link").unwrap_or_else(|| panic!("no link in {page}"));
    let path = link
        .split_once("/invitations/")
        .map(|(_, secret)| format!("/invitations/{secret}"))
        .expect("an invitation link");
    assert!(link.starts_with(&server.base), "{link}");
    path
}

/// The sign-in cookie and CSRF value a page before sign-in sets.
fn form_cookie(response: &Response) -> (String, String) {
    let pair = cookie_pair(&set_cookie(response, "bindery_signin").expect("sign-in cookie"));
    let csrf = pair.split_once('=').expect("name=value").1.to_owned();
    (pair, csrf)
}

/// Opens an invitation and makes an account with a password.
pub fn accept(server: &Server, link: &str, name: &str, email: &str, password: &str) -> Response {
    // A form fetched earlier: a used link's page has no form (nor its cookie) to fetch now.
    let form = http()
        .get(server.url("/signin"))
        .send()
        .expect("GET a form");
    let (cookie, csrf) = form_cookie(&form);
    http()
        .post(server.url(link))
        .header(COOKIE, cookie)
        .form(&[
            ("_csrf", csrf.as_str()),
            ("name", name),
            ("email", email),
            ("password", password),
        ])
        .send()
        .expect("POST invitation")
}

/// Signs in with an address and password; the answer to the post.
fn sign_in(server: &Server, email: &str, password: &str) -> Response {
    let form = http()
        .get(server.url("/signin"))
        .send()
        .expect("GET /signin");
    let (cookie, csrf) = form_cookie(&form);
    http()
        .post(server.url("/signin/password"))
        .header(COOKIE, cookie)
        .form(&[
            ("_csrf", csrf.as_str()),
            ("email", email),
            ("password", password),
            ("next", "/books"),
        ])
        .send()
        .expect("POST /signin/password")
}

pub fn session_cookie(response: &Response) -> String {
    cookie_pair(&set_cookie(response, "bindery_session").expect("a session cookie"))
}

/// The CSRF token the pages carry for a session's cookie.
pub fn csrf_of(server: &Server, cookie: &str) -> String {
    let page = http()
        .get(server.url("/books"))
        .header(COOKIE, cookie)
        .send()
        .expect("GET /books")
        .text()
        .expect("body");
    page.split("name=\"csrf-token\" content=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a CSRF token in the page")
        .to_owned()
}

/// What a refusal page shows (an invitation's, a link's): its status and the code it carries.
pub fn refusal(response: Response) -> (StatusCode, String) {
    let status = response.status();
    let body = response.text().expect("body");
    let code = body
        .split("data-code=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap_or_else(|| panic!("no refusal in {body}"))
        .to_owned();
    (status, code)
}

fn invitation_password_sign_in_and_upload(postgres: bool) {
    let (server, database) = serve(postgres);
    let admin = session(&server, ADMIN);

    // The admin invites an owner into a new imprint.
    let link = invite(&server, &admin.cookie, &admin.csrf, "riverpress", "owner");
    let made = accept(&server, &link, "Ann Lee", "ann@example.com", PASSWORD);
    assert_eq!(made.status(), StatusCode::SEE_OTHER, "{:?}", made.text());
    assert_eq!(made.headers()[LOCATION], "/books");
    let ann = session_cookie(&made);

    // Ann's session acts for riverpress: she uploads there.
    let csrf = csrf_of(&server, &ann);
    let novel =
        std::fs::read(common::corpus().join("markdown/love-among-the-chickens.md")).expect("novel");
    let upload = http()
        .post(server.url("/api/v1/books"))
        .header(COOKIE, &ann)
        .header("X-CSRF-Token", &csrf)
        .multipart(reqwest::blocking::multipart::Form::new().part(
            "manuscript",
            reqwest::blocking::multipart::Part::bytes(novel).file_name("novel.md"),
        ))
        .send()
        .expect("upload");
    assert_eq!(upload.status(), StatusCode::ACCEPTED, "{:?}", upload.text());
    let book: serde_json::Value = upload.json().expect("JSON");
    let id = book["id"].as_str().expect("id");
    // The admin's token tenant does not see riverpress's book; Ann does.
    let theirs = http()
        .get(server.url(&format!("/api/v1/books/{id}")))
        .header("Authorization", format!("Bearer {ADMIN}"))
        .send()
        .expect("GET as admin");
    assert_eq!(theirs.status(), StatusCode::NOT_FOUND);
    let hers = http()
        .get(server.url(&format!("/api/v1/books/{id}")))
        .header(COOKIE, &ann)
        .send()
        .expect("GET as Ann");
    assert_eq!(hers.status(), StatusCode::OK);

    // A token made on her account's page acts for her imprint, for tools.
    let made = http()
        .post(server.url("/account/tokens"))
        .header(COOKIE, &ann)
        .form(&[("_csrf", csrf.as_str()), ("name", "ann-kobo")])
        .send()
        .expect("make a token")
        .text()
        .expect("body");
    let token = value_of(&made, "token-value").unwrap_or_else(|| panic!("no token in {made}"));
    let with_token = http()
        .get(server.url(&format!("/api/v1/books/{id}")))
        .bearer_auth(&token)
        .send()
        .expect("GET with her token");
    assert_eq!(with_token.status(), StatusCode::OK);

    // Her imprint, made by the invitation alone, signs its webhooks with a secret of its own.
    let secret: serde_json::Value = http()
        .get(server.url("/api/v1/webhook-secret"))
        .header(COOKIE, &ann)
        .send()
        .expect("GET the webhook secret")
        .json()
        .expect("JSON");
    assert!(
        secret["secret"]
            .as_str()
            .is_some_and(|s| s.starts_with("whsec_")),
        "{secret}"
    );

    // Signed out, she signs in again with her password, in any letter case of her address.
    let again = sign_in(&server, "Ann@Example.com", PASSWORD);
    assert_eq!(again.status(), StatusCode::SEE_OTHER);
    let page = http()
        .get(server.url("/account"))
        .header(COOKIE, session_cookie(&again))
        .send()
        .expect("GET /account")
        .text()
        .expect("body");
    assert!(
        page.contains("riverpress") && page.contains("Ann Lee"),
        "{page}"
    );

    // The invitation was for one account: it is spent.
    let used = http().get(server.url(&link)).send().expect("GET used");
    assert_eq!(refusal(used), (StatusCode::GONE, "invitation_used".into()));
    let twice = accept(&server, &link, "Someone", "someone@example.com", PASSWORD);
    assert_eq!(refusal(twice), (StatusCode::GONE, "invitation_used".into()));

    // Ann, an owner, invites an author; then revokes it, and the link says so.
    let owner_csrf = csrf_of(&server, &ann);
    let revoked = invite(&server, &ann, &owner_csrf, "ignored", "author");
    let people = http()
        .get(server.url("/people"))
        .header(COOKIE, &ann)
        .send()
        .expect("GET /people")
        .text()
        .expect("body");
    let id = people
        .split("/people/invitations/")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .expect("a revoke button");
    let revoke = http()
        .post(server.url(&format!("/people/invitations/{id}/revoke")))
        .header(COOKIE, &ann)
        .form(&[("_csrf", owner_csrf.as_str())])
        .send()
        .expect("revoke");
    assert_eq!(revoke.status(), StatusCode::OK);
    let gone = http()
        .get(server.url(&revoked))
        .send()
        .expect("GET revoked");
    assert_eq!(
        refusal(gone),
        (StatusCode::GONE, "invitation_revoked".into())
    );
    // An owner cannot invite an admin, nor into another imprint: the invitation was riverpress's.
    assert!(
        people.contains("riverpress") && !people.contains(">ignored<"),
        "{people}"
    );
    let forged = http()
        .post(server.url("/people/invitations"))
        .header(COOKIE, &ann)
        .form(&[
            ("_csrf", owner_csrf.as_str()),
            ("role", "admin"),
            ("days", "7"),
            ("uses", "1"),
        ])
        .send()
        .expect("POST");
    assert_eq!(forged.status(), StatusCode::BAD_REQUEST);
    // Without the CSRF token the cookie alone changes nothing.
    let no_csrf = http()
        .post(server.url("/people/invitations"))
        .header(COOKIE, &ann)
        .form(&[("role", "author"), ("days", "7"), ("uses", "1")])
        .send()
        .expect("POST");
    assert_eq!(no_csrf.status(), StatusCode::BAD_REQUEST);
    assert!(no_csrf.text().expect("body").contains("expired"));

    // An expired invitation says so.
    let expired = invite(&server, &admin.cookie, &admin.csrf, "riverpress", "author");
    expire_invitations(&server, database.as_deref());
    let late = http()
        .get(server.url(&expired))
        .send()
        .expect("GET expired");
    assert_eq!(
        refusal(late),
        (StatusCode::GONE, "invitation_expired".into())
    );
    // A link nobody made is not found.
    let unknown = http()
        .get(server.url(&format!("/invitations/inv_{}", "0".repeat(64))))
        .send()
        .expect("GET unknown");
    assert_eq!(
        refusal(unknown),
        (StatusCode::NOT_FOUND, "invitation_unknown".into())
    );

    // An author has no People page, and the admin disabling Ann signs her out at once.
    let disable_id = http()
        .get(server.url("/people"))
        .header(COOKIE, &admin.cookie)
        .send()
        .expect("GET /people")
        .text()
        .expect("body")
        .split("/people/accounts/")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .expect("a disable button")
        .to_owned();
    let disabled = http()
        .post(server.url(&format!("/people/accounts/{disable_id}/disable")))
        .header(COOKIE, &admin.cookie)
        .form(&[("_csrf", admin.csrf.as_str())])
        .send()
        .expect("disable");
    assert_eq!(disabled.status(), StatusCode::OK);
    let after = http()
        .get(server.url("/books"))
        .header(COOKIE, &ann)
        .send()
        .expect("GET /books");
    assert_eq!(after.status(), StatusCode::SEE_OTHER, "signed out");
    let refused = sign_in(&server, "ann@example.com", PASSWORD);
    assert_eq!(
        refused.status(),
        StatusCode::OK,
        "the form again, not a session"
    );
}

/// Moves every invitation's expiry into the past, as time would.
fn expire_invitations(server: &Server, postgres: Option<&str>) {
    const SQL: &str = "UPDATE invitations SET expires_at = 0";
    use bindery::config::{DatabaseUrl, Secret};
    let url = match postgres {
        Some(url) => DatabaseUrl::Postgres {
            url: Secret::new(url.parse().expect("url")),
        },
        None => DatabaseUrl::Sqlite {
            path: server.data_dir().join("bindery.db"),
        },
    };
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let db = bindery::storage::Database::connect(&url, 1)
            .await
            .expect("connect");
        common::execute(&db, SQL).await;
    });
}

#[test]
fn an_invited_person_makes_an_account_signs_in_and_uploads_on_sqlite() {
    invitation_password_sign_in_and_upload(false);
}

#[test]
fn an_invited_person_makes_an_account_signs_in_and_uploads_on_postgres() {
    if !common::need::postgres() {
        return;
    }
    invitation_password_sign_in_and_upload(true);
}

/// A sign-in form's cookie and CSRF value, fetched once and posted back many times (a form
/// stays good until its cookie expires).
fn signin_form(server: &Server) -> (String, String) {
    let form = http()
        .get(server.url("/signin"))
        .send()
        .expect("GET /signin");
    form_cookie(&form)
}

/// What one wrong try got: status, the page's error, and how long it took. `from` is the
/// network address the platform's proxy says the try came from.
fn wrong_try(
    server: &Server,
    form: &(String, String),
    email: &str,
    from: &str,
) -> (StatusCode, String, Duration) {
    let started = Instant::now();
    let response = http()
        .post(server.url("/signin/password"))
        .header(COOKIE, &form.0)
        .header("X-Forwarded-For", format!("203.0.113.9, {from}"))
        .form(&[
            ("_csrf", form.1.as_str()),
            ("email", email),
            ("password", "not the password at all"),
        ])
        .send()
        .expect("POST");
    let took = started.elapsed();
    let status = response.status();
    let body = response.text().expect("body");
    let error = body
        .split("id=\"signin-error\"")
        .nth(1)
        .and_then(|r| r.split_once('>'))
        .and_then(|(_, r)| r.split('<').next())
        .unwrap_or_default()
        .to_owned();
    (status, error, took)
}

fn median(mut times: Vec<f64>) -> f64 {
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

#[test]
fn a_hundred_wrong_passwords_are_refused_alike_for_real_and_unknown_addresses() {
    let (server, _) = serve(false);
    let admin = session(&server, ADMIN);
    let form = signin_form(&server);
    let mut people = Vec::new();
    for n in 0..11 {
        let link = invite(&server, &admin.cookie, &admin.csrf, "press", "author");
        let email = format!("author{n}@example.com");
        let made = accept(&server, &link, "Bea Roe", &email, PASSWORD);
        assert_eq!(made.status(), StatusCode::SEE_OTHER);
        people.push(email);
    }

    // A hundred wrong passwords for one account inside a minute, then as many for an address
    // nobody has: the same answers in the same order, five wrong-password pages, then
    // refusals. Each from its own network address, so that the address's own limit (fifty)
    // is not what refuses them.
    let started = Instant::now();
    let real: Vec<_> = (0..100)
        .map(|_| wrong_try(&server, &form, &people[0], "198.51.100.1"))
        .collect();
    let spent = started.elapsed();
    println!("100 wrong tries for one account took {spent:?}");
    assert!(spent < Duration::from_secs(60), "the tries took {spent:?}");
    let unknown: Vec<_> = (0..100)
        .map(|_| wrong_try(&server, &form, "nobody@example.com", "198.51.100.2"))
        .collect();
    let answers = |tries: &[(StatusCode, String, Duration)]| -> Vec<(StatusCode, String)> {
        tries.iter().map(|(s, e, _)| (*s, e.clone())).collect()
    };
    assert_eq!(answers(&real), answers(&unknown));
    let checked = real.iter().filter(|(s, _, _)| *s == StatusCode::OK).count();
    let refused = real
        .iter()
        .filter(|(s, _, _)| *s == StatusCode::TOO_MANY_REQUESTS)
        .count();
    println!("checked {checked}, refused {refused}");
    assert_eq!(checked, 5, "{:?}", answers(&real));
    assert_eq!(refused, 95);
    assert!(real[0].1.contains("do not match"), "{}", real[0].1);
    assert!(
        real[99].1.contains("Too many wrong tries"),
        "{}",
        real[99].1
    );
    // While refused, even the right password does not get in; passkeys would.
    let right = sign_in(&server, &people[0], PASSWORD);
    assert_eq!(right.status(), StatusCode::TOO_MANY_REQUESTS);

    // Their times tell nothing either. Checked tries (the costly ones) for ten more accounts
    // and ten unknown addresses, in pairs, each pair sent back to back and in alternating
    // order, so that the machine's drift falls on both; then refused tries likewise. Which of
    // a pair took longer must be a coin toss (a sign test: outside the bounds, p < 0.01), which
    // holds on a loaded machine too, where the times themselves swing by tens of milliseconds.
    let mut checked_gaps = Vec::new();
    let mut refused_gaps = Vec::new();
    for round in 0..7 {
        for (n, email) in people.iter().enumerate().skip(1) {
            let nobody = format!("nobody{n}@example.com");
            let from = format!("198.51.100.{}", 10 + n);
            let (a, b) = if (round + n) % 2 == 0 {
                let a = wrong_try(&server, &form, email, &from);
                (a, wrong_try(&server, &form, &nobody, &from))
            } else {
                let b = wrong_try(&server, &form, &nobody, &from);
                (wrong_try(&server, &form, email, &from), b)
            };
            assert_eq!((a.0, &a.1), (b.0, &b.1), "round {round}");
            let gap = a.2.as_secs_f64() - b.2.as_secs_f64();
            if round < 5 {
                checked_gaps.push(gap);
            } else {
                refused_gaps.push(gap);
            }
        }
    }
    for (what, gaps, bounds) in [
        ("checked", checked_gaps, 15..=35),
        ("refused", refused_gaps, 4..=16),
    ] {
        let slower = gaps.iter().filter(|g| **g > 0.0).count();
        let total = gaps.len();
        let gap = median(gaps);
        println!(
            "{what}: the account's try was the slower in {slower} of {total} pairs; median difference {:+.1} ms",
            gap * 1000.0
        );
        assert!(
            bounds.contains(&slower),
            "{what}: the account's try was the slower in {slower} of {total} pairs"
        );
    }
}

/// The SMTP server of `tests/support/smtp_server.py`, running: its port and its maildir.
struct MailServer {
    child: std::process::Child,
    port: u16,
    maildir: tempfile::TempDir,
}

impl MailServer {
    fn start() -> MailServer {
        use std::io::BufRead as _;
        let maildir = tempfile::tempdir().expect("tempdir");
        let mut child = std::process::Command::new("python3")
            .arg(
                std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("tests/support/smtp_server.py"),
            )
            .arg(maildir.path().join("mail"))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the PORT line");
        let port = line
            .trim()
            .strip_prefix("PORT ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {line:?}"));
        MailServer {
            child,
            port,
            maildir,
        }
    }

    /// The messages taken so far, as text.
    fn messages(&self) -> Vec<String> {
        let new = self.maildir.path().join("mail/new");
        let Ok(entries) = std::fs::read_dir(new) else {
            return Vec::new();
        };
        entries
            .filter_map(Result::ok)
            .map(|e| std::fs::read_to_string(e.path()).expect("a message"))
            .collect()
    }
}

impl Drop for MailServer {
    fn drop(&mut self) {
        // Closing its stdin stops it.
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

#[test]
fn an_invitation_is_mailed_when_smtp_is_set_and_made_all_the_same_when_mail_fails() {
    if !common::need::smtp_server() {
        return;
    }
    let mail = MailServer::start();
    let smtp = format!("smtp://127.0.0.1:{}", mail.port);
    let server = Server::start(
        &["serve"],
        &[
            ("BINDERY_ADMIN_TOKEN", ADMIN),
            ("SMTP_URL", &smtp),
            ("SMTP_FROM", "River Press <books@riverpress.example>"),
        ],
    );
    let admin = session(&server, ADMIN);
    let invite_by_mail = |email: &str| {
        http()
            .post(server.url("/people/invitations"))
            .header(COOKIE, &admin.cookie)
            .form(&[
                ("_csrf", admin.csrf.as_str()),
                ("tenant", "riverpress"),
                ("role", "author"),
                ("email", email),
                ("note", ""),
                ("days", "7"),
                ("uses", "1"),
                ("mail", "on"),
            ])
            .send()
            .expect("POST")
            .text()
            .expect("body")
    };
    let page = invite_by_mail("cleo@example.com");
    assert!(page.contains("id=\"invitation-mailed\""), "{page}");
    let link = value_of(&page, "invitation-link").expect("the link, shown too");
    let messages = mail.messages();
    assert_eq!(messages.len(), 1, "{messages:?}");
    let message = &messages[0];
    assert!(message.contains("To: cleo@example.com"), "{message}");
    assert!(
        message.contains("From: \"River Press\" <books@riverpress.example>"),
        "{message}"
    );
    assert!(message.contains("riverpress"), "{message}");
    let unfolded = message.replace("=\r\n", "").replace("=\n", "");
    assert!(
        unfolded.contains(&link),
        "the link {link} is not in {message}"
    );

    // With the mail server gone, the invitation is made and its link shown, saying the mail
    // did not go.
    drop(mail);
    let page = invite_by_mail("dora@example.com");
    assert!(page.contains("id=\"invitation-not-mailed\""), "{page}");
    let link = value_of(&page, "invitation-link").expect("the link");
    let path = link
        .split_once("/invitations/")
        .map(|(_, s)| format!("/invitations/{s}"))
        .expect("path");
    assert_eq!(
        http().get(server.url(&path)).send().expect("GET").status(),
        StatusCode::OK
    );
}
