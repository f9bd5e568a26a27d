//! Every route accounts and advance-reader links added, against everyone who must not use it:
//! no session, another tenant's account, an author where an owner is needed, a reviewer who
//! holds only a link, an expired link; and every form and script call that changes something,
//! sent with the session's cookie but without its CSRF token (or, before sign-in, without the
//! sign-in cookie's value). Each is refused, and what it would have changed is unchanged.

use reqwest::StatusCode;
use reqwest::blocking::RequestBuilder;
use reqwest::header::{COOKIE, LOCATION};

use crate::accounts::{ADMIN, PASSWORD, accept, csrf_of, invite, serve, session_cookie};
use crate::common::web::{browser as http, follow_to_ready, session, set_cookie, upload};
use crate::common::{self, Server};

/// A signed-in browser: its cookie and CSRF token.
struct Person {
    cookie: String,
    csrf: String,
}

/// Makes an account with an invitation to `tenant` as `role`, signed in.
fn person(server: &Server, admin: &Person, tenant: &str, role: &str, email: &str) -> Person {
    let link = invite(server, &admin.cookie, &admin.csrf, tenant, role);
    let made = accept(server, &link, email, email, PASSWORD);
    assert_eq!(made.status(), StatusCode::SEE_OTHER);
    let cookie = session_cookie(&made);
    let csrf = csrf_of(server, &cookie);
    Person { cookie, csrf }
}

/// The first value of `attribute` after `marker` in a page.
fn after(page: &str, marker: &str) -> String {
    page.split(marker)
        .nth(1)
        .and_then(|r| r.split(['"', '/']).next())
        .unwrap_or_else(|| panic!("no {marker} in {page}"))
        .to_owned()
}

fn page(server: &Server, who: &Person, path: &str) -> String {
    http()
        .get(server.url(path))
        .header(COOKIE, &who.cookie)
        .send()
        .expect("GET")
        .text()
        .expect("body")
}

#[test]
fn every_new_route_refuses_who_may_not_use_it_and_every_change_needs_its_csrf_token() {
    let (server, _) = serve(false);
    let admin = session(&server, ADMIN);
    let admin = Person {
        cookie: admin.cookie,
        csrf: admin.csrf,
    };
    let owner = person(&server, &admin, "riverpress", "owner", "ann@example.com");
    let author = person(&server, &admin, "riverpress", "author", "abe@example.com");
    let stranger = person(&server, &admin, "harbour", "owner", "ben@example.com");

    // The admin's tenant has a ready book with a link; riverpress has an open invitation.
    let created = upload(
        &server,
        ADMIN,
        "",
        reqwest::blocking::multipart::Form::new().part(
            "manuscript",
            reqwest::blocking::multipart::Part::bytes(b"# One\n\nA short book.\n".to_vec())
                .file_name("short.md"),
        ),
    );
    let book = follow_to_ready(&server, ADMIN, created)["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let made = http()
        .post(server.url(&format!("/books/{book}/links")))
        .header(COOKIE, &admin.cookie)
        .form(&[
            ("_csrf", admin.csrf.as_str()),
            ("reader", "Jane Roe"),
            ("offer_reader", "on"),
            ("offer_epub", "on"),
            ("days", "7"),
            ("downloads", "5"),
        ])
        .send()
        .expect("make a link")
        .text()
        .expect("body");
    let secret = after(&made, "/arc/");
    let links = page(&server, &admin, &format!("/books/{book}/links"));
    let link = after(&links, &format!("/books/{book}/links/"));
    let _open = invite(&server, &owner.cookie, &owner.csrf, "ignored", "author");
    let people = page(&server, &owner, "/people");
    let invitation = after(&people, "/people/invitations/");
    let abe = after(&page(&server, &admin, "/people"), "/people/accounts/");

    // Every route a session needs, as (method, path): with none, a page sends the browser to
    // sign in and a script's call is 401; nothing changes.
    let session_routes = [
        ("GET", "/people".to_owned()),
        ("GET", "/account".to_owned()),
        ("GET", format!("/books/{book}/links")),
        ("POST", "/people/invitations".to_owned()),
        ("POST", format!("/people/invitations/{invitation}/revoke")),
        ("POST", format!("/people/accounts/{abe}/disable")),
        ("POST", "/account/password".to_owned()),
        ("POST", "/account/totp/start".to_owned()),
        ("POST", "/account/totp/on".to_owned()),
        ("POST", "/account/totp/off".to_owned()),
        ("POST", "/account/passkeys/remove".to_owned()),
        ("POST", format!("/books/{book}/links")),
        ("POST", format!("/books/{book}/links/{link}/revoke")),
    ];
    let send = |method: &str, path: &str, cookie: Option<&str>| -> RequestBuilder {
        let request = match method {
            "GET" => http().get(server.url(path)),
            _ => http().post(server.url(path)).form(&[
                ("reader", "Mallory"),
                ("offer_epub", "on"),
                ("days", "7"),
                ("downloads", "1"),
                ("role", "author"),
                ("uses", "1"),
                ("password", "another long passphrase here"),
                ("id", "x"),
                ("secret", "JBSWY3DPEHPK3PXP"),
                ("code", "123456"),
            ]),
        };
        match cookie {
            Some(cookie) => request.header(COOKIE, cookie),
            None => request,
        }
    };
    for (method, path) in &session_routes {
        let answer = send(method, path, None).send().expect("send");
        assert_eq!(
            answer.status(),
            StatusCode::SEE_OTHER,
            "{method} {path} with no session"
        );
        let to = answer.headers()[LOCATION].to_str().expect("ascii");
        assert!(to.starts_with("/signin"), "{method} {path} sent to {to}");
    }
    for path in ["/account/passkeys/options", "/account/passkeys"] {
        let answer = http()
            .post(server.url(path))
            .json(&serde_json::json!({"passkey_name": "x"}))
            .send()
            .expect("send");
        assert!(
            [StatusCode::UNAUTHORIZED, StatusCode::BAD_REQUEST].contains(&answer.status()),
            "{path} with no session: {}",
            answer.status()
        );
    }

    // Another tenant's owner, on the admin's book and its link: 404, as if none existed.
    for (method, path) in [
        ("GET", format!("/books/{book}/links")),
        ("POST", format!("/books/{book}/links")),
        ("POST", format!("/books/{book}/links/{link}/revoke")),
    ] {
        let mut request = send(method, &path, Some(&stranger.cookie));
        if method == "POST" {
            request = http()
                .post(server.url(&path))
                .header(COOKIE, &stranger.cookie)
                .form(&[
                    ("_csrf", stranger.csrf.as_str()),
                    ("reader", "Mallory"),
                    ("offer_epub", "on"),
                    ("days", "7"),
                    ("downloads", "1"),
                ]);
        }
        let answer = request.send().expect("send");
        assert_eq!(
            answer.status(),
            StatusCode::NOT_FOUND,
            "{method} {path} by another tenant"
        );
    }
    // ... and on riverpress's invitation and author: 404.
    for path in [
        format!("/people/invitations/{invitation}/revoke"),
        format!("/people/accounts/{abe}/disable"),
    ] {
        let answer = http()
            .post(server.url(&path))
            .header(COOKIE, &stranger.cookie)
            .form(&[("_csrf", stranger.csrf.as_str())])
            .send()
            .expect("send");
        assert_eq!(
            answer.status(),
            StatusCode::NOT_FOUND,
            "{path} by another tenant"
        );
    }
    // An author has no People page and makes no invitation.
    for (method, path) in [("GET", "/people"), ("POST", "/people/invitations")] {
        let request = match method {
            "GET" => http().get(server.url(path)),
            _ => http().post(server.url(path)).form(&[
                ("_csrf", author.csrf.as_str()),
                ("role", "author"),
                ("days", "7"),
                ("uses", "1"),
            ]),
        };
        let answer = request.header(COOKIE, &author.cookie).send().expect("send");
        assert_eq!(
            answer.status(),
            StatusCode::NOT_FOUND,
            "{method} {path} by an author"
        );
    }

    // The cookie without the CSRF token changes nothing: every form and script call refuses.
    let changes = [
        "/people/invitations".to_owned(),
        format!("/people/invitations/{invitation}/revoke"),
        format!("/people/accounts/{abe}/disable"),
        "/account/password".to_owned(),
        "/account/totp/on".to_owned(),
        "/account/totp/off".to_owned(),
        "/account/passkeys/remove".to_owned(),
    ];
    for path in &changes {
        let answer = send("POST", path, Some(&owner.cookie))
            .send()
            .expect("send");
        assert!(
            !answer.status().is_success() || answer.text().expect("body").contains("expired"),
            "{path} without its CSRF token was taken"
        );
    }
    for path in [
        format!("/books/{book}/links"),
        format!("/books/{book}/links/{link}/revoke"),
    ] {
        let answer = send("POST", &path, Some(&admin.cookie))
            .send()
            .expect("send");
        assert_eq!(
            answer.status(),
            StatusCode::BAD_REQUEST,
            "{path} without its CSRF token"
        );
    }
    for path in ["/account/passkeys/options", "/account/passkeys"] {
        let answer = http()
            .post(server.url(path))
            .header(COOKIE, &owner.cookie)
            .json(&serde_json::json!({"passkey_name": "x"}))
            .send()
            .expect("send");
        // The finish call's body is no credential, which it refuses first (400); either way
        // nothing is registered.
        assert!(
            [StatusCode::FORBIDDEN, StatusCode::BAD_REQUEST].contains(&answer.status()),
            "{path} without its CSRF token: {}",
            answer.status()
        );
    }
    // Nothing changed: the invitation is open, Abe's account is not disabled, the owner asks for
    // no codes, and the link still opens.
    assert!(
        page(&server, &owner, "/people")
            .contains(&format!("/people/invitations/{invitation}/revoke"))
    );
    assert!(!page(&server, &admin, "/people").contains(">disabled<"));
    assert!(page(&server, &owner, "/account").contains("Set up sign-in codes"));
    assert_eq!(
        http()
            .get(server.url(&format!("/arc/{secret}")))
            .send()
            .expect("GET")
            .status(),
        StatusCode::OK
    );

    // Before sign-in, the forms and calls need their sign-in cookie's value (double submit).
    let pre = [
        ("/signin/password", "form"),
        ("/signin/code", "form"),
        ("/signin/passkey/options", "json"),
        ("/signin/passkey", "json"),
    ];
    for (path, kind) in pre {
        let request = http().post(server.url(path));
        let request = match kind {
            "form" => request.form(&[
                ("email", "ann@example.com"),
                ("password", "violet kettle orbits paper"),
                ("code", "123456"),
            ]),
            _ => request.json(&serde_json::json!({})),
        };
        let answer = request.send().expect("send");
        assert!(
            set_cookie(&answer, "bindery_session").is_none(),
            "{path} without its sign-in cookie signed someone in"
        );
        assert!(
            !answer.status().is_success() || kind == "form",
            "{path} without its sign-in cookie: {}",
            answer.status()
        );
    }

    // A reviewer holds only the link: it reaches the book's copies and nothing else of Bindery.
    for path in [
        "/books",
        &format!("/books/{book}"),
        &format!("/books/{book}/epub"),
    ] {
        let answer = http().get(server.url(path)).send().expect("GET");
        assert!(
            [StatusCode::SEE_OTHER, StatusCode::UNAUTHORIZED].contains(&answer.status()),
            "{path} without a session: {}",
            answer.status()
        );
    }
    // Once expired, every path of the link says so.
    common::sqlite_execute(
        &server.data_dir().join("bindery.db"),
        "UPDATE reader_links SET expires_at = 0",
    );
    for path in [
        format!("/arc/{secret}"),
        format!("/arc/{secret}/epub"),
        format!("/arc/{secret}/reader/"),
    ] {
        let answer = http().get(server.url(&path)).send().expect("GET");
        assert_eq!(answer.status(), StatusCode::GONE, "{path} expired");
        assert!(answer.text().expect("body").contains("link_expired"));
    }
}
