//! The app's sign-in, against the real server: session cookies, CSRF on every write made with
//! a cookie, sign-out and revocation ending sessions, and pages that stay with their tenant.

use crate::common;

use reqwest::StatusCode;
use reqwest::header::{COOKIE, LOCATION};

use common::web::{browser as http, cookie_pair, session, set_cookie, sign_in};
use common::{Server, command, corpus};

fn token(server: &Server, name: &str) -> String {
    common::web::token(server, name, false)
}

fn novel() -> reqwest::blocking::multipart::Form {
    let bytes = std::fs::read(corpus().join("markdown/love-among-the-chickens.md")).expect("novel");
    reqwest::blocking::multipart::Form::new().part(
        "manuscript",
        reqwest::blocking::multipart::Part::bytes(bytes).file_name("love-among-the-chickens.md"),
    )
}

#[test]
fn signing_in_sets_a_safe_cookie_and_refuses_bad_tokens_and_forged_forms() {
    let server = Server::start(&["serve"], &[]);
    let alice = token(&server, "alice");

    // Pages send a person without a session to sign in, and back afterwards.
    let books = http().get(server.url("/books/new")).send().expect("GET");
    assert_eq!(books.status(), StatusCode::SEE_OTHER);
    assert_eq!(books.headers()[LOCATION], "/signin?next=%2Fbooks%2Fnew");

    let ok = sign_in(&server, &alice);
    assert_eq!(ok.status(), StatusCode::SEE_OTHER);
    assert_eq!(ok.headers()[LOCATION], "/books");
    let cookie = set_cookie(&ok, "bindery_session").expect("session cookie");
    for attribute in ["HttpOnly", "SameSite=Lax", "Path=/"] {
        assert!(cookie.contains(attribute), "{attribute} missing: {cookie}");
    }
    assert!(
        !cookie.contains("Secure"),
        "plain http gets no Secure cookie: {cookie}"
    );

    // Behind the platform's https proxy the cookie is Secure.
    let form = http()
        .get(server.url("/signin"))
        .header("X-Forwarded-Proto", "https")
        .send()
        .expect("GET");
    assert!(
        set_cookie(&form, "bindery_signin")
            .expect("cookie")
            .contains("Secure")
    );

    // A wrong token: the form again, with the reason, and no session.
    let wrong = sign_in(&server, "bdy_not-a-token");
    assert_eq!(wrong.status(), StatusCode::OK, "the form again");
    assert!(set_cookie(&wrong, "bindery_session").is_none());
    assert!(
        wrong
            .text()
            .expect("body")
            .contains("That token is not valid")
    );

    // A form posted without its double-submit cookie (another site's form): refused.
    let forged = http()
        .post(server.url("/signin"))
        .form(&[
            ("token", alice.as_str()),
            ("_csrf", "0".repeat(64).as_str()),
        ])
        .send()
        .expect("POST");
    assert_eq!(forged.status(), StatusCode::FORBIDDEN);
    assert!(set_cookie(&forged, "bindery_session").is_none());

    // `next` only ever points into this site.
    let form = http().get(server.url("/signin")).send().expect("GET");
    let signin = cookie_pair(&set_cookie(&form, "bindery_signin").expect("cookie"));
    let csrf = signin.split_once('=').expect("pair").1.to_owned();
    let away = http()
        .post(server.url("/signin"))
        .header(COOKIE, &signin)
        .form(&[
            ("token", alice.as_str()),
            ("_csrf", &csrf),
            ("next", "//evil.example/"),
        ])
        .send()
        .expect("POST");
    assert_eq!(away.headers()[LOCATION], "/books");
}

#[test]
fn a_session_writes_only_with_its_csrf_token_and_ends_on_sign_out_or_revocation() {
    let server = Server::start(&["serve"], &[]);
    let alice = token(&server, "alice");
    let s = session(&server, &alice);

    // Reads need only the cookie.
    let list = http()
        .get(server.url("/api/v1/books"))
        .header(COOKIE, &s.cookie)
        .send()
        .expect("GET");
    assert_eq!(list.status(), 200);

    // A write with the cookie alone (what a cross-site request carries) is refused.
    let forged = http()
        .post(server.url("/api/v1/books"))
        .header(COOKIE, &s.cookie)
        .multipart(novel())
        .send()
        .expect("POST");
    assert_eq!(forged.status(), StatusCode::FORBIDDEN);
    let body: serde_json::Value = forged.json().expect("json");
    assert_eq!(body["error"]["code"], "csrf_failed");
    let wrong = http()
        .post(server.url("/api/v1/books"))
        .header(COOKIE, &s.cookie)
        .header("X-CSRF-Token", "f".repeat(64))
        .multipart(novel())
        .send()
        .expect("POST");
    assert_eq!(wrong.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        http()
            .get(server.url("/api/v1/books"))
            .bearer_auth(&alice)
            .send()
            .expect("GET")
            .json::<serde_json::Value>()
            .expect("json")["books"]
            .as_array()
            .map(Vec::len),
        Some(0),
        "no book was created by the refused writes"
    );

    // With the page's token it goes through, and the book page is the tenant's.
    let created = http()
        .post(server.url("/api/v1/books?wait=30"))
        .timeout(common::HELD)
        .header(COOKIE, &s.cookie)
        .header("X-CSRF-Token", &s.csrf)
        .multipart(novel())
        .send()
        .expect("POST");
    // Through: the book is made, and ready once followed (a loaded machine may answer 202).
    let id = common::web::follow_to_ready(&server, &alice, created)["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let page = http()
        .get(server.url(&format!("/books/{id}")))
        .header(COOKIE, &s.cookie)
        .send()
        .expect("GET");
    assert_eq!(page.status(), 200);
    let page = page.text().expect("body");
    assert!(page.contains("Love Among the Chickens") && page.contains("Download EPUB"));
    let epub = http()
        .get(server.url(&format!("/books/{id}/epub")))
        .header(COOKIE, &s.cookie)
        .send()
        .expect("GET");
    assert_eq!(epub.status(), 200);

    // Another tenant's session sees nothing of it: 404 on the page, the files and the reader.
    let bob = token(&server, "bob");
    let b = session(&server, &bob);
    for path in [
        format!("/books/{id}"),
        format!("/books/{id}/epub"),
        format!("/books/{id}/reader/"),
        format!("/books/{id}/reader/index.html"),
        format!("/api/v1/books/{id}/events"),
    ] {
        let response = http()
            .get(server.url(&path))
            .header(COOKIE, &b.cookie)
            .send()
            .expect("GET");
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "{path}");
    }
    // Bob's own admin page does not exist for him either.
    let admin = http()
        .get(server.url("/admin"))
        .header(COOKIE, &b.cookie)
        .send()
        .expect("GET");
    assert_eq!(admin.status(), StatusCode::NOT_FOUND);

    // Signing out ends the session on the server, not only in the browser.
    let out = http()
        .post(server.url("/signout"))
        .header(COOKIE, &s.cookie)
        .form(&[("_csrf", s.csrf.as_str())])
        .send()
        .expect("POST /signout");
    assert_eq!(out.status(), StatusCode::SEE_OTHER);
    let after = http()
        .get(server.url("/api/v1/books"))
        .header(COOKIE, &s.cookie)
        .send()
        .expect("GET");
    assert_eq!(after.status(), StatusCode::UNAUTHORIZED);

    // Revoking a token ends every session made with it.
    let again = session(&server, &alice);
    let revoke = command(&server.data_dir())
        .args(["token", "revoke", "alice"])
        .output()
        .expect("bindery token revoke");
    assert!(revoke.status.success());
    let after = http()
        .get(server.url("/books"))
        .header(COOKIE, &again.cookie)
        .send()
        .expect("GET");
    assert_eq!(after.status(), StatusCode::SEE_OTHER, "back to sign-in");
}

#[test]
fn a_page_with_a_before_that_is_no_pages_next_says_so() {
    let server = Server::start(&["web"], &[]);
    let root = common::web::token(&server, "root", true);
    let signed_in = session(&server, &root);
    // The jobs page shows a bad filter beside the filter form, as it does for any filter.
    for (path, status) in [
        ("/books?before=garbage", StatusCode::BAD_REQUEST),
        ("/admin/jobs?before=garbage", StatusCode::OK),
    ] {
        let response = http()
            .get(server.url(path))
            .header(COOKIE, &signed_in.cookie)
            .send()
            .expect("GET");
        assert_eq!(response.status(), status, "{path}");
        let body = response.text().expect("body");
        assert!(body.contains("before must be"), "{path}: {body}");
    }
}

/// #28: an address that is no page gets the app's own Not found page, with the navigation for
/// a signed-in person (and the same for a book of someone else's, or a bad filter's 400); an
/// API path keeps answering the API's JSON error; HEAD answers as GET without the body; the
/// workers have a page of their own.
#[test]
fn unknown_addresses_get_the_apps_own_page_and_api_paths_their_json() {
    let server = Server::start(&["web"], &[]);
    let root = common::web::token(&server, "root", true);
    let signed_in = session(&server, &root);
    let get = |path: &str, cookie: Option<&str>| {
        let mut request = http().get(server.url(path));
        if let Some(cookie) = cookie {
            request = request.header(COOKIE, cookie);
        }
        request.send().expect("GET")
    };
    for path in ["/no/such/page", "/books/not/a/page"] {
        let anyone = get(path, None);
        assert_eq!(anyone.status(), StatusCode::NOT_FOUND, "{path}");
        assert!(
            anyone.headers()["content-type"]
                .to_str()
                .unwrap_or_default()
                .starts_with("text/html"),
            "{path}"
        );
        let body = anyone.text().expect("body");
        assert!(body.contains("<h1>Not found</h1>"), "{path}: {body}");
        assert!(!body.contains("nav aria-label=\"Main\""), "{path}: {body}");
    }
    // A book that is not one's own is not found either (anyone else is asked to sign in).
    for path in [
        "/no/such/page",
        "/books/00000000-0000-4000-8000-000000000000",
        "/books/not/a/page",
    ] {
        let member = get(path, Some(&signed_in.cookie));
        assert_eq!(member.status(), StatusCode::NOT_FOUND, "{path}");
        let body = member.text().expect("body");
        assert!(body.contains("<h1>Not found</h1>"), "{path}: {body}");
        assert!(
            body.contains("<nav aria-label=\"Main\">") && body.contains("href=\"/admin\""),
            "{path}: no navigation for a signed-in admin: {body}"
        );
    }
    let bad = get("/books?before=garbage", Some(&signed_in.cookie));
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
    assert!(
        bad.text()
            .expect("body")
            .contains("<nav aria-label=\"Main\">")
    );

    for path in ["/api/v1/no/such/route", "/api/elsewhere", "/api"] {
        let response = get(path, None);
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "{path}");
        let body: serde_json::Value = response.json().expect("the API's JSON error");
        assert_eq!(body["error"]["code"], "not_found", "{path}: {body}");
    }
    let head = http()
        .head(server.url("/no/such/page"))
        .send()
        .expect("HEAD");
    assert_eq!(head.status(), StatusCode::NOT_FOUND);
    assert!(head.text().expect("body").is_empty());

    let workers = get("/admin/workers", Some(&signed_in.cookie));
    assert_eq!(workers.status(), StatusCode::OK);
    let body = workers.text().expect("body");
    assert!(body.contains("<h1>Workers</h1>"), "{body}");
    assert!(body.contains("aria-current=\"page\">Workers</a>"), "{body}");
}
