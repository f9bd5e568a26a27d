//! Single sign-on against a real OpenID provider the test starts on loopback (panva's
//! oidc-provider, `tests/browser/oidc-provider.mjs`), signed in to over plain HTTP as a
//! browser would, on SQLite and PostgreSQL: an account signs in by its verified address; an
//! invitation makes an account with single sign-on; a callback with another `state`, an ID
//! token made for another `nonce`, an unverified address and an address with no account are
//! each refused.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::blocking::Response;
use reqwest::header::{COOKIE, LOCATION};

use crate::accounts::{ADMIN, PASSWORD, accept, invite};
use crate::common::web::{browser as http, cookie_pair, session, set_cookie};
use crate::common::{self, Server};

const CLIENT_ID: &str = "bindery";
const CLIENT_SECRET: &str = "a-client-secret-for-the-tests";

/// The provider, running: its issuer, and its stdin until it has been told the redirect URI.
struct Provider {
    child: Child,
    issuer: String,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl Provider {
    fn start() -> Provider {
        let mut child = Command::new("node")
            .arg(
                std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("tests/browser/oidc-provider.mjs"),
            )
            .arg("0")
            .env("OIDC_CLIENT_ID", CLIENT_ID)
            .env("OIDC_CLIENT_SECRET", CLIENT_SECRET)
            .env("OIDC_SKIP_CONSENT", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("node");
        let stdout = child.stdout.take().expect("stdout");
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        let mut provider = Provider {
            child,
            issuer: String::new(),
            stdin,
            lines,
        };
        provider.issuer = provider
            .line("ISSUER ")
            .expect("the provider's ISSUER line");
        provider
    }

    /// The next line that starts with `prefix`, without it.
    fn line(&self, prefix: &str) -> Option<String> {
        loop {
            let line = self.lines.recv_timeout(Duration::from_secs(20)).ok()?;
            if let Some(rest) = line.strip_prefix(prefix) {
                return Some(rest.to_owned());
            }
        }
    }

    /// Registers the client's redirect URI and waits until the provider answers.
    fn ready(&mut self, redirect: &str) {
        let mut stdin = self.stdin.take().expect("told once");
        writeln!(stdin, "{redirect}").expect("write the redirect URI");
        assert_eq!(self.line("READY ").as_deref(), Some(redirect));
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        common::signal_pid(
            i32::try_from(self.child.id()).expect("pid"),
            nix::sys::signal::Signal::SIGTERM,
        );
        let _ = self.child.wait();
    }
}

/// A browser at the provider: its cookies (the newest value of a name wins, whatever its
/// path), and the walk through its sign-in form to the redirect back to Bindery.
struct ProviderBrowser {
    issuer: String,
    cookies: HashMap<String, String>,
}

impl ProviderBrowser {
    fn new(issuer: &str) -> Self {
        ProviderBrowser {
            issuer: issuer.to_owned(),
            cookies: HashMap::new(),
        }
    }

    fn keep(&mut self, response: &Response) {
        for value in response.headers().get_all("set-cookie") {
            let pair = cookie_pair(value.to_str().expect("ascii"));
            if let Some((name, value)) = pair.split_once('=') {
                self.cookies.insert(name.to_owned(), value.to_owned());
            }
        }
    }

    fn cookie_header(&self) -> String {
        self.cookies
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }

    fn absolute(&self, location: &str) -> String {
        if location.starts_with('/') {
            format!("{}{location}", self.issuer)
        } else {
            location.to_owned()
        }
    }

    /// Signs in as `login` from the authorization URL; returns the URL the provider sends the
    /// browser back to (`redirect?code=…&state=…&iss=…`).
    fn sign_in(&mut self, authorization: &str, login: &str, redirect: &str) -> String {
        let mut url = authorization.to_owned();
        for _ in 0..12 {
            let response = http()
                .get(&url)
                .header(COOKIE, self.cookie_header())
                .send()
                .expect("GET at the provider");
            self.keep(&response);
            if response.status().is_redirection() {
                let next = self.absolute(response.headers()[LOCATION].to_str().expect("ascii"));
                if next.starts_with(redirect) {
                    return next;
                }
                url = next;
                continue;
            }
            let page = response.text().expect("body");
            let fields: Vec<(&str, &str)> = if page.contains("value=\"login\"") {
                vec![
                    ("prompt", "login"),
                    ("login", login),
                    ("password", "password"),
                ]
            } else if page.contains("value=\"consent\"") {
                vec![("prompt", "consent")]
            } else {
                panic!("an unexpected page at {url}: {page}");
            };
            let posted = http()
                .post(&url)
                .header(COOKIE, self.cookie_header())
                .form(&fields)
                .send()
                .expect("POST at the provider");
            self.keep(&posted);
            assert!(posted.status().is_redirection(), "{}", posted.status());
            url = self.absolute(posted.headers()[LOCATION].to_str().expect("ascii"));
        }
        panic!("the provider never sent the browser back");
    }
}

/// Bindery with single sign-on set up against the provider, which is then told Bindery's
/// redirect URI.
fn serve(provider: &mut Provider, postgres: bool, sign_up: &str) -> Server {
    let mut env = vec![
        ("BINDERY_ADMIN_TOKEN", ADMIN.to_owned()),
        ("OIDC_ISSUER_URL", provider.issuer.clone()),
        ("OIDC_CLIENT_ID", CLIENT_ID.to_owned()),
        ("OIDC_CLIENT_SECRET", CLIENT_SECRET.to_owned()),
        ("OIDC_SIGN_UP", sign_up.to_owned()),
    ];
    if postgres {
        env.push(("DATABASE_URL", common::postgres_database()));
    }
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let server = Server::start(&["serve"], &env);
    provider.ready(&server.url("/signin/sso/callback"));
    server
}

/// Bindery's start of a sign-on (`path`): the provider's authorization URL and the cookie that
/// names the sign-on in progress.
fn begin(server: &Server, path: &str) -> (String, String) {
    let started = http().get(server.url(path)).send().expect("GET start");
    assert_eq!(started.status(), StatusCode::SEE_OTHER, "{path}");
    let cookie = cookie_pair(&set_cookie(&started, "bindery_sso").expect("the sign-on cookie"));
    let authorization = started.headers()[LOCATION]
        .to_str()
        .expect("ascii")
        .to_owned();
    (authorization, cookie)
}

/// The callback as the browser brings it back to Bindery.
fn come_back(callback: &str, cookie: &str) -> Response {
    http()
        .get(callback)
        .header(COOKIE, cookie)
        .send()
        .expect("GET callback")
}

/// The error a refused sign-on shows.
fn refusal(response: Response) -> (StatusCode, String) {
    let status = response.status();
    let body = response.text().expect("body");
    let error = body
        .split("id=\"sso-error\"")
        .nth(1)
        .and_then(|r| r.split_once('>'))
        .and_then(|(_, r)| r.split('<').next())
        .unwrap_or_else(|| panic!("no refusal in {body}"))
        .to_owned();
    (status, error)
}

/// `url` with its query parameter `name` set to `value`.
fn with_param(url: &str, name: &str, value: &str) -> String {
    let mut url = url::Url::parse(url).expect("url");
    let pairs: Vec<(String, String)> = url
        .query_pairs()
        .map(|(k, v)| {
            let v = if k == name {
                value.to_owned()
            } else {
                v.into_owned()
            };
            (k.into_owned(), v)
        })
        .collect();
    url.query_pairs_mut().clear().extend_pairs(pairs);
    url.into()
}

fn signs_in_and_refuses_what_it_must(postgres: bool) {
    let mut provider = Provider::start();
    let server = serve(&mut provider, postgres, "email");
    let callback = server.url("/signin/sso/callback");
    let admin = session(&server, ADMIN);

    // Ann has an account (made with a password) at the address the provider has verified.
    let link = invite(&server, &admin.cookie, &admin.csrf, "riverpress", "owner");
    let made = accept(&server, &link, "Ann Example", "Ann@Example.test", PASSWORD);
    assert_eq!(made.status(), StatusCode::SEE_OTHER);

    // The sign-in page offers single sign-on; Ann signs in with it.
    let page = http()
        .get(server.url("/signin"))
        .send()
        .expect("GET")
        .text()
        .expect("body");
    assert!(page.contains("id=\"sso-signin\""), "{page}");
    let mut browser = ProviderBrowser::new(&provider.issuer);
    let (authorization, cookie) = begin(&server, "/signin/sso?next=%2Faccount");
    assert!(
        authorization.starts_with(&provider.issuer),
        "{authorization}"
    );
    for part in [
        "code_challenge_method=S256",
        "nonce=",
        "state=",
        "scope=openid",
    ] {
        assert!(authorization.contains(part), "{part} in {authorization}");
    }
    let back = browser.sign_in(&authorization, "ann", &callback);
    let signed_in = come_back(&back, &cookie);
    assert_eq!(
        signed_in.status(),
        StatusCode::SEE_OTHER,
        "{:?}",
        signed_in.text()
    );
    assert_eq!(signed_in.headers()[LOCATION], "/account");
    let ann = cookie_pair(&set_cookie(&signed_in, "bindery_session").expect("a session"));
    let account = http()
        .get(server.url("/account"))
        .header(COOKIE, &ann)
        .send()
        .expect("GET /account")
        .text()
        .expect("body");
    assert!(
        account.contains("riverpress") && account.contains("Ann Example"),
        "{account}"
    );
    // The same callback a second time finds its sign-on spent.
    let replayed = come_back(&back, &cookie);
    assert_eq!(refusal(replayed).0, StatusCode::FORBIDDEN);

    // A callback whose state is not the one this browser began with: refused before the code
    // is exchanged, which then still works for the right state.
    let (authorization, cookie) = begin(&server, "/signin/sso");
    let back = browser.sign_in(&authorization, "ann", &callback);
    let forged = come_back(&with_param(&back, "state", "another-state"), &cookie);
    let (status, why) = refusal(forged);
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(why.contains("did not start here"), "{why}");

    // An ID token made for another nonce: the same request but for its nonce, whose code comes
    // back with the first request's state (and so its PKCE verifier, which still fits).
    let (authorization, cookie) = begin(&server, "/signin/sso");
    let other = with_param(&authorization, "nonce", "a-nonce-bindery-never-made");
    let back = browser.sign_in(&other, "ann", &callback);
    let (status, why) = refusal(come_back(&back, &cookie));
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(
        why.contains("could not be verified") && why.contains("nonce mismatch"),
        "{why}"
    );

    // Bob's address is not verified by the provider: it names no account.
    let mut bob = ProviderBrowser::new(&provider.issuer);
    let (authorization, cookie) = begin(&server, "/signin/sso");
    let back = bob.sign_in(&authorization, "bob", &callback);
    let (status, why) = refusal(come_back(&back, &cookie));
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(
        why.contains("has not verified") && why.contains("bob@example.test"),
        "{why}"
    );

    // Cat is verified but has no account here: she is told to ask for an invitation.
    let mut cat = ProviderBrowser::new(&provider.issuer);
    let (authorization, cookie) = begin(&server, "/signin/sso");
    let back = cat.sign_in(&authorization, "cat", &callback);
    let (status, why) = refusal(come_back(&back, &cookie));
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(why.contains("invitation"), "{why}");

    // With an invitation, single sign-on makes her account, named as the provider says.
    let link = invite(&server, &admin.cookie, &admin.csrf, "harbour", "author");
    let page = http()
        .get(server.url(&link))
        .send()
        .expect("GET")
        .text()
        .expect("body");
    assert!(page.contains("id=\"new-account-sso\""), "{page}");
    let (authorization, cookie) = begin(&server, &format!("{link}/sso"));
    let back = cat.sign_in(&authorization, "cat", &callback);
    let joined = come_back(&back, &cookie);
    assert_eq!(
        joined.status(),
        StatusCode::SEE_OTHER,
        "{:?}",
        joined.text()
    );
    let cat_session = cookie_pair(&set_cookie(&joined, "bindery_session").expect("a session"));
    let account = http()
        .get(server.url("/account"))
        .header(COOKIE, &cat_session)
        .send()
        .expect("GET /account")
        .text()
        .expect("body");
    assert!(
        account.contains("harbour") && account.contains("Cat Example"),
        "{account}"
    );
    // And from then on she signs in with it alone.
    let (authorization, cookie) = begin(&server, "/signin/sso");
    let back = cat.sign_in(&authorization, "cat", &callback);
    assert_eq!(come_back(&back, &cookie).status(), StatusCode::SEE_OTHER);
}

#[test]
fn single_sign_on_signs_in_and_refuses_a_wrong_state_nonce_or_address_on_sqlite() {
    if !common::need::oidc_provider() {
        return;
    }
    signs_in_and_refuses_what_it_must(false);
}

#[test]
fn single_sign_on_signs_in_and_refuses_a_wrong_state_nonce_or_address_on_postgres() {
    if !common::need::oidc_provider() || !common::need::postgres() {
        return;
    }
    signs_in_and_refuses_what_it_must(true);
}

#[test]
fn with_sign_up_by_invitation_an_address_alone_joins_no_account() {
    if !common::need::oidc_provider() {
        return;
    }
    let mut provider = Provider::start();
    let server = serve(&mut provider, false, "invitation");
    let admin = session(&server, ADMIN);
    let link = invite(&server, &admin.cookie, &admin.csrf, "riverpress", "author");
    let made = accept(&server, &link, "Ann Example", "ann@example.test", PASSWORD);
    assert_eq!(made.status(), StatusCode::SEE_OTHER);
    let mut browser = ProviderBrowser::new(&provider.issuer);
    let (authorization, cookie) = begin(&server, "/signin/sso");
    let back = browser.sign_in(&authorization, "ann", &server.url("/signin/sso/callback"));
    let (status, why) = refusal(come_back(&back, &cookie));
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(why.contains("invitation"), "{why}");
}
