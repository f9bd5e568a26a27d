//! Tokens and browser sign-in against a running server, as tests of the HTTP side need them.

use std::process::Command;
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::blocking::{Client, Response};

use super::{Server, command};

/// `bindery token create NAME [--admin]` run by `cmd`, which carries the server's environment
/// (its data directory, its `DATABASE_URL`); the token it prints alone on stdout.
pub fn create_token(mut cmd: Command, name: &str, admin: bool) -> String {
    cmd.args(["token", "create", name]);
    if admin {
        cmd.arg("--admin");
    }
    super::succeed(&mut cmd, "bindery token create")
        .trim()
        .to_owned()
}

/// `POST /api/v1/books{query}` with `form`, as `token`'s tenant.
pub fn upload(
    server: &Server,
    token: &str,
    query: &str,
    form: reqwest::blocking::multipart::Form,
) -> Response {
    super::client()
        .post(server.url(&format!("/api/v1/books{query}")))
        .bearer_auth(token)
        .multipart(form)
        .timeout(super::HELD)
        .send()
        .expect("POST /api/v1/books")
}

/// The book an upload created, followed to the end: the answer to `POST /api/v1/books?wait=`
/// is 200 when the book was ready within the wait (at most `MAX_WAIT`, 25 s) and 202 when it
/// was not, which a loaded machine makes of any book; either way the book is read back until
/// it is no longer processing, and must be ready. Its JSON, as `GET /api/v1/books/{id}` gives it.
pub fn follow_to_ready(server: &Server, token: &str, created: Response) -> serde_json::Value {
    let status = created.status();
    assert!(
        [StatusCode::OK, StatusCode::ACCEPTED].contains(&status),
        "{status}"
    );
    let accepted: serde_json::Value = created.json().expect("json");
    let id = accepted["id"].as_str().expect("id").to_owned();
    let book: serde_json::Value =
        super::eventually("the book ready", Duration::from_secs(120), || {
            let book: serde_json::Value = super::client()
                .get(server.url(&format!("/api/v1/books/{id}")))
                .bearer_auth(token)
                .send()
                .and_then(|r| r.json())
                .map_err(|e| e.to_string())?;
            if book["status"] == "processing" {
                Err(book.to_string())
            } else {
                Ok(book)
            }
        });
    assert_eq!(book["status"], "ready", "{book}");
    book
}

/// A token for a server on SQLite in its own data directory.
pub fn token(server: &Server, name: &str, admin: bool) -> String {
    create_token(command(&server.data_dir()), name, admin)
}

/// A client that never follows redirects, so a test sees where each answer points.
pub fn browser() -> Client {
    Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(20))
        .build()
        .expect("http client")
}

/// The `Set-Cookie` value (with its attributes) a response sets for `name`.
pub fn set_cookie(response: &Response, name: &str) -> Option<String> {
    response
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with(&format!("{name}=")))
        .map(str::to_owned)
}

/// `name=value` of a `Set-Cookie` value.
pub fn cookie_pair(set_cookie: &str) -> String {
    set_cookie.split(';').next().unwrap_or_default().to_owned()
}

/// A browser's sign-in: fetch the form (it sets the double-submit cookie) and post it back
/// with `token`. Returns the answer to the post.
pub fn sign_in(server: &Server, token: &str) -> Response {
    let form = browser()
        .get(server.url("/signin"))
        .send()
        .expect("GET /signin");
    assert_eq!(form.status(), StatusCode::OK);
    let signin = cookie_pair(&set_cookie(&form, "bindery_signin").expect("sign-in cookie"));
    let csrf = signin.split_once('=').expect("name=value").1.to_owned();
    let body = form.text().expect("body");
    assert!(
        body.contains(&format!("value=\"{csrf}\"")),
        "the form carries the cookie's value"
    );
    browser()
        .post(server.url("/signin"))
        .header("cookie", signin)
        .form(&[("token", token), ("_csrf", &csrf), ("next", "/books")])
        .send()
        .expect("POST /signin")
}

/// A signed-in browser session: its cookie (`name=value`) and the CSRF token its pages carry.
pub struct Session {
    pub cookie: String,
    pub csrf: String,
}

pub fn session(server: &Server, token: &str) -> Session {
    let response = sign_in(server, token);
    assert_eq!(response.status(), StatusCode::SEE_OTHER, "signed in");
    let cookie = cookie_pair(&set_cookie(&response, "bindery_session").expect("session cookie"));
    let page = browser()
        .get(server.url("/books"))
        .header("cookie", &cookie)
        .send()
        .expect("GET /books")
        .text()
        .expect("body");
    let csrf = page
        .split("name=\"csrf-token\" content=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("csrf meta tag")
        .to_owned();
    Session { cookie, csrf }
}
