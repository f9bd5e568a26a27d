//! The catalog against the real server: `/opds` (OPDS 1.2, HTTP Basic as e-reader apps send
//! it) and `/api/v1/catalog`, kept current by the publish-time refresh, by deletes, and by the
//! `catalog_refresh` schedule; one tenant never sees another's books.

use crate::common;

use std::time::{Duration, Instant};

use quick_xml::NsReader;
use quick_xml::events::Event;
use quick_xml::name::ResolveResult;
use reqwest::StatusCode;
use reqwest::blocking::multipart::{Form, Part};
use serde_json::Value;

use common::{Server, client, command, corpus, message};

const ATOM: &str = "http://www.w3.org/2005/Atom";
const DC: &str = "http://purl.org/dc/terms/";
const OPDS: &str = "http://opds-spec.org/2010/catalog";
const ACQUISITION: &str = "http://opds-spec.org/acquisition";
const FEED_TYPE: &str = "application/atom+xml;profile=opds-catalog;kind=acquisition";

/// `bindery token create NAME` against the server's storage; the token it prints.
fn token(server: &Server, database: Option<&str>, name: &str) -> String {
    let mut cmd = command(&server.data_dir());
    if let Some(url) = database {
        cmd.env("DATABASE_URL", url);
    }
    common::web::create_token(cmd, name, false)
}

/// Uploads the corpus novel with its cover and a description, and waits until it is ready.
fn publish(server: &Server, token: &str) -> String {
    let novel = std::fs::read(corpus().join("markdown/love-among-the-chickens.md")).expect("novel");
    let cover = std::fs::read(corpus().join("love-among-the-chickens-cover.jpg")).expect("cover");
    let form = Form::new()
        .part(
            "manuscript",
            Part::bytes(novel).file_name("love-among-the-chickens.md"),
        )
        .part("cover", Part::bytes(cover).file_name("cover.jpg"))
        .text("description", "Chickens & <eggs>, in Dorset.");
    let response = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .expect("client")
        .post(server.url("/api/v1/books?wait=25"))
        .bearer_auth(token)
        .multipart(form)
        .send()
        .expect("POST /api/v1/books");
    common::web::follow_to_ready(server, token, response)["id"]
        .as_str()
        .expect("id")
        .to_owned()
}

/// GET with the token as the HTTP Basic password, as an e-reader app sends it.
fn get_basic(server: &Server, token: &str, path: &str) -> reqwest::blocking::Response {
    client()
        .get(server.url(path))
        .basic_auth("reader-app", Some(token))
        .send()
        .expect("GET")
}

/// An XML element with resolved namespaces.
#[derive(Debug, Default)]
struct Element {
    namespace: String,
    name: String,
    attributes: Vec<(String, String)>,
    text: String,
    children: Vec<Element>,
}

impl Element {
    fn attr(&self, name: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn all(&self, namespace: &str, name: &str) -> impl Iterator<Item = &Element> {
        let (namespace, name) = (namespace.to_owned(), name.to_owned());
        self.children
            .iter()
            .filter(move |c| c.namespace == namespace && c.name == name)
    }

    fn one(&self, namespace: &str, name: &str) -> &Element {
        let found: Vec<&Element> = self.all(namespace, name).collect();
        assert_eq!(
            found.len(),
            1,
            "expected one {{{namespace}}}{name} in <{}>",
            self.name
        );
        found[0]
    }

    fn link(&self, rel: &str) -> Option<&Element> {
        self.all(ATOM, "link").find(|l| l.attr("rel") == Some(rel))
    }
}

/// Parses a whole document, failing on anything that is not well-formed, and also returns
/// the namespace declarations of the root.
fn parse(xml: &str) -> (Element, Vec<(String, String)>) {
    let mut reader = NsReader::from_str(xml);
    reader.config_mut().check_end_names = true;
    let mut stack: Vec<Element> = vec![Element::default()];
    let mut declarations = Vec::new();
    loop {
        let (resolved, event) = reader.read_resolved_event().expect("well-formed XML");
        let namespace = match resolved {
            ResolveResult::Bound(ns) => ns.as_ref().to_owned(),
            _ => String::new(),
        };
        match event {
            Event::Start(ref e) | Event::Empty(ref e) => {
                let mut element = Element {
                    namespace,
                    name: e.local_name().as_ref().to_owned(),
                    ..Element::default()
                };
                for a in e.attributes() {
                    let a = a.expect("attribute");
                    let key = a.key.as_ref().to_owned();
                    let value = a
                        .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                        .expect("value")
                        .into_owned();
                    if stack.len() == 1 && key.starts_with("xmlns") {
                        declarations.push((key.clone(), value.clone()));
                    }
                    element.attributes.push((key, value));
                }
                if matches!(event, Event::Start(_)) {
                    stack.push(element);
                } else {
                    stack.last_mut().expect("parent").children.push(element);
                }
            }
            Event::End(_) => {
                let done = stack.pop().expect("open element");
                stack.last_mut().expect("parent").children.push(done);
            }
            Event::Text(t) => {
                let text = t.xml10_content();
                stack.last_mut().expect("element").text.push_str(&text);
            }
            Event::GeneralRef(r) => {
                let name = r.xml10_content();
                let text = quick_xml::escape::resolve_predefined_entity(&name)
                    .unwrap_or_else(|| panic!("unexpected entity &{name};"));
                stack.last_mut().expect("element").text.push_str(text);
            }
            Event::Eof => break,
            _ => {}
        }
    }
    assert_eq!(stack.len(), 1, "unclosed elements");
    let mut document = stack.pop().expect("document");
    assert_eq!(document.children.len(), 1, "one root element");
    (document.children.pop().expect("root"), declarations)
}

/// Checks what OPDS 1.2 and Atom require of an acquisition feed; returns its entries by id.
fn check_feed(xml: &str) -> Element {
    let (feed, declarations) = parse(xml);
    assert_eq!(
        (feed.namespace.as_str(), feed.name.as_str()),
        (ATOM, "feed")
    );
    for ns in [DC, OPDS] {
        assert!(
            declarations.iter().any(|(_, v)| v == ns),
            "{ns} not declared: {declarations:?}"
        );
    }
    for required in ["id", "title", "updated"] {
        assert!(
            !feed.one(ATOM, required).text.trim().is_empty(),
            "empty {required}"
        );
    }
    for rel in ["self", "start"] {
        let link = feed.link(rel).unwrap_or_else(|| panic!("no {rel} link"));
        assert_eq!(link.attr("type"), Some(FEED_TYPE));
    }
    for entry in feed.all(ATOM, "entry") {
        for required in ["id", "title", "updated"] {
            assert!(!entry.one(ATOM, required).text.trim().is_empty());
        }
        assert!(
            entry
                .all(ATOM, "link")
                .any(|l| l.attr("rel").is_some_and(|r| r.starts_with(ACQUISITION))),
            "an entry without an acquisition link"
        );
    }
    feed
}

fn entry<'a>(feed: &'a Element, book: &str) -> Option<&'a Element> {
    let id = format!("urn:uuid:{book}");
    feed.all(ATOM, "entry")
        .find(|e| e.one(ATOM, "id").text.trim() == id)
}

fn feed_of(server: &Server, token: &str) -> (String, Option<String>) {
    let response = get_basic(server, token, "/opds");
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], FEED_TYPE);
    let etag = response
        .headers()
        .get("etag")
        .map(|v| v.to_str().expect("ascii").to_owned());
    (response.text().expect("body"), etag)
}

fn json_catalog(server: &Server, token: &str) -> Value {
    let response = client()
        .get(server.url("/api/v1/catalog"))
        .bearer_auth(token)
        .send()
        .expect("GET /api/v1/catalog");
    assert_eq!(response.status(), StatusCode::OK);
    response.json().expect("JSON")
}

fn listed(catalog: &Value) -> Vec<String> {
    catalog["books"]
        .as_array()
        .expect("books")
        .iter()
        .map(|b| b["id"].as_str().expect("id").to_owned())
        .collect()
}

#[test]
fn a_published_book_is_in_its_tenants_feed_only_until_deleted_on_sqlite() {
    feed_follows_publish_and_delete(None);
}

#[test]
fn a_published_book_is_in_its_tenants_feed_only_until_deleted_on_postgres() {
    if !common::need::postgres() {
        return;
    }
    feed_follows_publish_and_delete(Some(common::postgres_database()));
}

fn feed_follows_publish_and_delete(database: Option<String>) {
    // The schedule is off: what is seen here comes from publish and delete alone.
    let mut env = vec![("SCHEDULE_CATALOG_REFRESH", "off")];
    if let Some(url) = &database {
        env.push(("DATABASE_URL", url));
    }
    let server = Server::start(&["serve"], &env);
    let alice = token(&server, database.as_deref(), "alice");
    let bob = token(&server, database.as_deref(), "bob");

    // No credentials, or a wrong password: a Basic challenge, so apps ask for the token.
    for response in [
        client().get(server.url("/opds")).send().expect("GET /opds"),
        get_basic(&server, "bdy_wrong", "/opds"),
    ] {
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(
            response.headers()["www-authenticate"],
            "Basic realm=\"Bindery\""
        );
    }

    // A new tenant: a valid, empty feed at once, and its stored catalog soon after. Once it
    // is stored, requests enqueue nothing: what changes it below is publish and delete.
    for tenant in [&alice, &bob] {
        let (empty, etag) = feed_of(&server, tenant);
        assert_eq!(check_feed(&empty).all(ATOM, "entry").count(), 0);
        assert_eq!(etag, None, "the placeholder is not the stored feed");
        common::eventually("a stored feed", Duration::from_secs(10), || {
            feed_of(&server, tenant).1
        });
    }

    let book = publish(&server, &alice);
    let published = Instant::now();
    let xml = common::eventually("the book in alice's feed", Duration::from_secs(5), || {
        let (xml, _) = feed_of(&server, &alice);
        entry(&check_feed(&xml), &book).is_some().then_some(xml)
    });
    eprintln!("listed {:?} after ready", published.elapsed());
    let feed = check_feed(&xml);
    let listed_entry = entry(&feed, &book).expect("entry");
    assert_eq!(
        listed_entry.one(ATOM, "title").text,
        "Love Among the Chickens"
    );
    assert!(
        listed_entry
            .one(ATOM, "author")
            .one(ATOM, "name")
            .text
            .contains("Wodehouse")
    );
    assert!(!listed_entry.one(DC, "language").text.is_empty());
    assert!(listed_entry.one(DC, "identifier").text.starts_with("urn:"));
    assert_eq!(
        listed_entry.one(ATOM, "summary").text,
        "Chickens & <eggs>, in Dorset."
    );
    let acquisition = listed_entry.link(ACQUISITION).expect("acquisition link");
    assert_eq!(acquisition.attr("type"), Some("application/epub+zip"));
    let reader = listed_entry.link("alternate").expect("reader link");
    assert_eq!(reader.attr("type"), Some("text/html"));
    let image = listed_entry
        .link("http://opds-spec.org/image")
        .expect("cover link");
    assert_eq!(image.attr("type"), Some("image/jpeg"));

    // Every link works with the same credentials, resolved against the feed's URL.
    let base = url::Url::parse(&server.url("/opds")).expect("url");
    let follow = |link: &Element| {
        let href = base.join(link.attr("href").expect("href")).expect("join");
        let response = get_basic(&server, &alice, href.path());
        assert_eq!(response.status(), StatusCode::OK, "{href}");
        let media_type = response.headers()["content-type"]
            .to_str()
            .expect("ascii")
            .to_owned();
        (media_type, response.bytes().expect("body"))
    };
    let (media_type, epub) = follow(acquisition);
    assert_eq!(media_type, "application/epub+zip");
    assert!(
        epub.starts_with(b"PK") && epub.len() > 10_000,
        "an EPUB (zip)"
    );
    assert!(follow(reader).0.starts_with("text/html"));
    assert_eq!(follow(image).0, "image/jpeg");

    // Unchanged: the client's copy is still good.
    let (_, etag) = feed_of(&server, &alice);
    let etag = etag.expect("the stored feed has an ETag");
    let revalidated = client()
        .get(server.url("/opds"))
        .basic_auth("reader-app", Some(&alice))
        .header("If-None-Match", &etag)
        .send()
        .expect("GET");
    assert_eq!(revalidated.status(), StatusCode::NOT_MODIFIED);

    // Bob's catalog does not have it, in either form.
    let (xml, _) = feed_of(&server, &bob);
    assert!(entry(&check_feed(&xml), &book).is_none());
    assert!(!xml.contains(&book));
    assert_eq!(listed(&json_catalog(&server, &bob)), Vec::<String>::new());

    // The JSON catalog lists it for alice, with the same links.
    let catalog = json_catalog(&server, &alice);
    assert_eq!(listed(&catalog), vec![book.clone()]);
    assert_eq!(catalog["books"][0]["title"], "Love Among the Chickens");
    assert_eq!(
        catalog["books"][0]["links"]["epub"],
        format!("/books/{book}/epub")
    );
    assert_eq!(
        catalog["books"][0]["links"]["reader"],
        format!("/books/{book}/reader/")
    );

    // Deleted: gone from both.
    let deleted = client()
        .delete(server.url(&format!("/api/v1/books/{book}")))
        .bearer_auth(&alice)
        .send()
        .expect("DELETE");
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    common::eventually(
        "the book gone from alice's feed",
        Duration::from_secs(5),
        || {
            let (xml, _) = feed_of(&server, &alice);
            let feed = check_feed(&xml);
            (feed.all(ATOM, "entry").count() == 0).then_some(())
        },
    );
    assert_eq!(listed(&json_catalog(&server, &alice)), Vec::<String>::new());
}

#[test]
fn the_schedule_rebuilds_catalogs_without_a_publish() {
    let server = Server::start(&["serve"], &[("SCHEDULE_CATALOG_REFRESH", "*/1 * * * * *")]);
    let carol = token(&server, None, "carol");
    let book = publish(&server, &carol);
    let stored = server.data_dir().join("blobs/catalogs/carol");
    let feed = stored.join("opds.xml");
    common::eventually("carol's stored catalog", Duration::from_secs(10), || {
        std::fs::read_to_string(stored.join("catalog.json"))
            .ok()
            .filter(|json| json.contains(&book))
    });

    // Lose the stored catalog. With no publish, no delete and no request for it, only the
    // schedule can bring it back.
    // The every-second refresh may be writing there (a staging file renamed into place), which
    // can make one removal fail with a file gone or come under it: try again.
    common::eventually("the stored catalog removed", Duration::from_secs(5), || {
        std::fs::remove_dir_all(&stored).ok()
    });
    let lost = Instant::now();
    // Both files: the feed is written first, the JSON catalog a moment later.
    let rebuilt = common::eventually("the catalog rebuilt", Duration::from_secs(10), || {
        std::fs::read_to_string(&feed)
            .ok()
            .filter(|xml| xml.contains(&book) && stored.join("catalog.json").is_file())
    });
    check_feed(&rebuilt);

    // Later scheduled refreshes find nothing changed and write nothing: the ETag holds. Two of
    // them, counted from the worker's log after the rebuild was seen.
    let logs = &server.process.logs;
    let unchanged = || {
        logs.all()
            .iter()
            .filter(|l| message(l, Some("worker"), "catalog unchanged") && l["tenant"] == "carol")
            .count()
    };
    let before = unchanged();
    common::eventually(
        "two refreshes after the rebuild",
        Duration::from_secs(10),
        || (unchanged() >= before + 2).then_some(()),
    );
    let (served, _) = feed_of(&server, &carol);
    assert_eq!(served, std::fs::read_to_string(&feed).expect("feed"));
    assert_eq!(served, rebuilt, "unchanged content is not rewritten");
    let enqueued = logs.wait_for(
        "a catalog_refresh slot enqueued",
        Duration::from_secs(5),
        |l| {
            message(l, Some("worker"), "scheduled job enqueued")
                && l["schedule"] == "catalog_refresh"
        },
    );
    assert!(enqueued["job.id"].as_i64().is_some());
    assert!(
        logs.find(|l| message(l, Some("worker"), "catalog refreshes enqueued"))
            .is_some()
    );
    eprintln!("rebuilt {:?} after it was lost", lost.elapsed());
}
