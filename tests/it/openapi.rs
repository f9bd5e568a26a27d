//! The OpenAPI document against the real server. It is a valid OpenAPI 3.1 document, and the
//! server does what it says: every documented operation is served, answers only statuses it
//! documents, with bodies of the documented type that match the documented schemas, refuses
//! a request without a token (401), hides one tenant's books from another (404), hides admin
//! operations from a tenant without the `admin` role (404), takes the pages' session cookie,
//! and refuses a write made with it but without its CSRF token (403).
//!
//! The walk is generic: a route added to the document is called without touching this file.
//! Only a new path parameter, a required parameter without an `example`, or a new kind of
//! request body needs a fixture below, and the test names the one that is missing.

use crate::common;

use std::collections::BTreeMap;
use std::io::Read;
use std::time::Duration;

use reqwest::blocking::multipart::{Form, Part};
use reqwest::blocking::{Client, RequestBuilder, Response};
use reqwest::{Method, StatusCode};
use serde_json::Value;

use common::Server;
use common::web::token;

const DOCUMENT: &str = "/api/v1/openapi.json";

/// The queue `queues/{name}` is called with: one the walk does not otherwise depend on, so that
/// pausing it (which the walk does) slows nothing down.
const QUEUE: &str = "maintenance";

/// A small manuscript that converts in a moment.
const MANUSCRIPT: &[u8] = b"---\ntitle: A Small Book\nauthor: Test Author\n---\n\n\
    # One\n\nThe first chapter, short.\n\n# Two\n\nThe second chapter, shorter.\n";

/// Path parameters, by the path segment before them and their name (`books/{id}`), so that an
/// `{id}` of another resource is not mistaken for a book's. A tenant-owned one is also called
/// with the other tenant's token, and must then answer 404.
struct PathFixture {
    value: String,
    tenant_owned: bool,
}

/// A house style that needs no files of its own: its fonts are bundled.
const STYLE: &[u8] = b"title = \"Walk\"\n[body]\nfont = \"EB Garamond\"\n";

/// Files a multipart body needs, by form field name.
fn file_fixture(field: &str) -> Option<Part> {
    match field {
        "manuscript" => Some(
            Part::bytes(MANUSCRIPT)
                .file_name("small-book.md")
                .mime_str("text/markdown")
                .expect("mime"),
        ),
        "style" => Some(Part::bytes(STYLE).file_name("walk.toml")),
        _ => None,
    }
}

fn http() -> Client {
    Client::builder()
        .timeout(Duration::from_secs(90))
        .build()
        .expect("http client")
}

/// Signs in as a browser does and returns the session cookie, `name=value`.
fn sign_in(server: &Server, token: &str) -> String {
    common::web::session(server, token).cookie
}

fn fetch_document(server: &Server) -> Value {
    let response = http()
        .get(server.url(DOCUMENT))
        .send()
        .expect("GET the document");
    assert_eq!(
        response.status(),
        StatusCode::OK,
        "the document needs no token"
    );
    assert_eq!(response.headers()["content-type"], "application/json");
    response.json().expect("the document is JSON")
}

#[test]
fn the_served_document_is_valid_openapi_3_1() {
    let server = Server::start(&["serve"], &[]);
    let doc = fetch_document(&server);
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["info"]["version"], env!("CARGO_PKG_VERSION"));
    let server_url = doc["servers"][0]["url"].as_str().expect("a servers entry");
    assert!(
        server_url.starts_with('/'),
        "the server URL is relative, so the document is right behind any host: {server_url}"
    );
    for scheme in ["bearer", "basic"] {
        assert_eq!(
            doc["components"]["securitySchemes"][scheme]["scheme"], scheme,
            "security scheme {scheme}"
        );
    }
    let session = &doc["components"]["securitySchemes"]["session"];
    assert_eq!(session["type"], "apiKey");
    assert_eq!(session["in"], "cookie");
    assert_eq!(session["name"], "bindery_session");
    let upload = &doc["paths"]["/api/v1/books"]["post"];
    assert!(
        upload["requestBody"]["content"]["multipart/form-data"].is_object(),
        "the upload is documented as a multipart form"
    );

    // An independent judge: the reference validator (scripts/test installs it).
    if !common::need::openapi_validator() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("openapi.json");
    std::fs::write(&file, serde_json::to_vec_pretty(&doc).expect("json")).expect("write");
    let out = std::process::Command::new("python3")
        .args(["-m", "openapi_spec_validator", "--schema", "3.1"])
        .arg(&file)
        .output()
        .expect("python3");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !text.contains("No module named openapi_spec_validator"),
        "openapi-spec-validator is not installed: run the suite through scripts/test \
         (pip install openapi-spec-validator==0.9.0)"
    );
    assert!(
        out.status.success() && text.contains(": OK"),
        "the document does not validate:\n{}",
        text.chars().take(4000).collect::<String>()
    );
}

/// The two tenants and the fixtures their requests are built from.
struct World {
    server: Server,
    doc: Value,
    /// Tenant A, an admin token so that admin routes answer too.
    alice: String,
    /// Tenant B, who must never see A's books, and is no admin.
    bob: String,
    /// The session cookie of tenant A, signed in to the pages.
    session: String,
    paths: BTreeMap<String, PathFixture>,
}

/// Who a request is sent as.
#[derive(Clone, Copy, Debug)]
enum As {
    Nobody,
    Alice,
    AliceBasic,
    /// With A's session cookie, as the pages send it (and without their CSRF token).
    AliceSession,
    Bob,
}

/// What one operation is, from the document.
struct Operation<'d> {
    method: Method,
    template: String,
    op: &'d Value,
    path_item: &'d Value,
}

impl Operation<'_> {
    fn name(&self) -> String {
        format!("{} {}", self.method, self.template)
    }
}

#[test]
fn every_documented_operation_is_served_as_documented() {
    let server = Server::start(&["serve"], &[("RATE_LIMIT_WRITES", "off")]);
    let alice = token(&server, "alice", true);
    let bob = token(&server, "bob", false);

    // A ready book of tenant A, uploaded through the API itself.
    let ready = http()
        .post(server.url("/api/v1/books?wait=60"))
        .bearer_auth(&alice)
        .multipart(Form::new().part("manuscript", file_fixture("manuscript").expect("fixture")))
        .send()
        .expect("upload the fixture book");
    assert_eq!(
        ready.status(),
        StatusCode::OK,
        "the fixture book is ready in time"
    );
    let book: Value = ready.json().expect("json");
    assert_eq!(book["status"], "ready", "{book}");
    let book_id = book["id"].as_str().expect("id").to_owned();

    // One of the fixture book's jobs (finished, so retry, cancel and discard answer 409).
    let jobs: Value = http()
        .get(server.url("/api/v1/admin/jobs?queue=books&limit=200"))
        .bearer_auth(&alice)
        .send()
        .expect("GET the jobs")
        .json()
        .expect("json");
    let job_id = jobs["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .find(|j| j["workflow"] == book_id.as_str())
        .and_then(|j| j["id"].as_i64())
        .unwrap_or_else(|| panic!("no job of the fixture book in {jobs}"));

    let doc = fetch_document(&server);
    let mut paths = BTreeMap::new();
    paths.insert(
        "books/{id}".to_owned(),
        PathFixture {
            value: book_id,
            tenant_owned: true,
        },
    );
    // The book's first revision, which every book has.
    paths.insert(
        "revisions/{n}".to_owned(),
        PathFixture {
            value: "1".to_owned(),
            tenant_owned: false,
        },
    );
    // Admin routes see every tenant's jobs and queues: nothing of them is tenant-owned, and a
    // non-admin gets 404 anyway.
    paths.insert(
        "jobs/{id}".to_owned(),
        PathFixture {
            value: job_id.to_string(),
            tenant_owned: false,
        },
    );
    paths.insert(
        "queues/{name}".to_owned(),
        PathFixture {
            value: QUEUE.to_owned(),
            tenant_owned: false,
        },
    );
    // A token for the admin's revoke to take: not Bob's, whose requests must keep working.
    token(&server, "carol", false);
    paths.insert(
        "tokens/{name}".to_owned(),
        PathFixture {
            value: "carol".to_owned(),
            tenant_owned: false,
        },
    );
    // A house style of tenant A's (`POST /api/v1/styles` adds `walk` again, and is refused as
    // a duplicate, which it documents).
    let style = http()
        .post(server.url("/api/v1/styles"))
        .bearer_auth(&alice)
        .multipart(
            Form::new()
                .part("style", file_fixture("style").expect("fixture"))
                .text("name", "alices-style"),
        )
        .send()
        .expect("add a house style");
    assert_eq!(style.status(), StatusCode::CREATED, "{:?}", style.text());
    paths.insert(
        "styles/{name}".to_owned(),
        PathFixture {
            value: "alices-style".to_owned(),
            tenant_owned: true,
        },
    );
    let session = sign_in(&server, &alice);
    let world = World {
        server,
        doc,
        alice,
        bob,
        session,
        paths,
    };

    // The signature of a route the server does not have, which a documented one must never give.
    let missing = http()
        .get(world.server.url("/api/v1/no-such-route"))
        .bearer_auth(&world.alice)
        .send()
        .expect("GET");
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    assert_eq!(error_code(missing).as_deref(), Some("not_found"));

    let mut operations = world.operations();
    assert!(
        operations.len() >= 8,
        "the document lists only {} operations",
        operations.len()
    );
    // Deletes last: they may remove the fixtures the others use.
    operations.sort_by_key(|o| o.method == Method::DELETE);
    let mut seen = Vec::new();
    for operation in &operations {
        let name = operation.name();
        if world.needs_token(operation) {
            let status = world.call(operation, As::Nobody);
            assert_eq!(status, 401, "{name} without a token");
        } else {
            let status = world.call(operation, As::Nobody);
            assert_ne!(status, 401, "{name} is documented as needing no token");
        }
        if world.tenant_owned(operation) {
            let status = world.call(operation, As::Bob);
            assert_eq!(status, 404, "{name} for another tenant's resource");
        }
        if world.admin_only(operation) {
            let status = world.call(operation, As::Bob);
            assert_eq!(status, 404, "{name} for a token without the admin role");
        }
        let safe = operation.method == Method::GET;
        if safe && world.needs_token(operation) {
            world.call(operation, As::AliceBasic);
        }
        if world.takes_session(operation) {
            let status = world.call(operation, As::AliceSession);
            if safe {
                assert!(
                    (200..300).contains(&status),
                    "{name} with the session cookie answered {status}"
                );
            } else {
                assert_eq!(
                    status, 403,
                    "{name} with the session cookie but no CSRF token"
                );
            }
        }
        let status = world.call(operation, As::Alice);
        if safe {
            // Its fixtures are Alice's, and she is an admin: a read must succeed, so that the
            // schemas of what it answers are checked.
            assert!((200..300).contains(&status), "{name} answered {status}");
        }
        seen.push(format!("{name} → {status}"));
    }
    println!("answers:\n{}", seen.join("\n"));

    // A query string the handler cannot read is the documented JSON 400, not actix's text.
    let list = &world.doc["paths"]["/api/v1/books"]["get"];
    let bad = http()
        .get(world.server.url("/api/v1/books?limit=many"))
        .bearer_auth(&world.alice)
        .send()
        .expect("GET");
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
    let schema = &world.resolve(&list["responses"]["400"])["content"]["application/json"]["schema"];
    world.validate(
        "GET /api/v1/books?limit=many",
        schema,
        &bad.json().expect("JSON"),
    );
}

impl World {
    /// Every operation in the document, once.
    fn operations(&self) -> Vec<Operation<'_>> {
        let mut operations = Vec::new();
        let mut ids = Vec::new();
        for (template, item) in self.doc["paths"].as_object().expect("paths") {
            for (key, op) in item.as_object().expect("path item") {
                let Ok(method) = key.to_uppercase().parse::<Method>() else {
                    continue;
                };
                if !matches!(
                    key.as_str(),
                    "get" | "put" | "post" | "delete" | "options" | "head" | "patch" | "trace"
                ) {
                    continue;
                }
                let id = op["operationId"].as_str().unwrap_or_default().to_owned();
                assert!(
                    !id.is_empty() && !ids.contains(&id),
                    "{key} {template}: operationId {id:?} is missing or not unique"
                );
                ids.push(id);
                operations.push(Operation {
                    method,
                    template: template.clone(),
                    op,
                    path_item: item,
                });
            }
        }
        operations
    }

    /// A `$ref` followed to what it names (in this document), or the value itself.
    fn resolve<'a>(&'a self, value: &'a Value) -> &'a Value {
        let mut value = value;
        while let Some(reference) = value.get("$ref").and_then(Value::as_str) {
            let pointer = reference
                .strip_prefix('#')
                .unwrap_or_else(|| panic!("{reference}: only local references are followed"));
            value = self
                .doc
                .pointer(pointer)
                .unwrap_or_else(|| panic!("{reference} names nothing in the document"));
        }
        value
    }

    fn needs_token(&self, operation: &Operation) -> bool {
        let requirements = self.security(operation);
        !requirements.is_empty()
            && !requirements
                .iter()
                .any(|r| r.as_object().is_some_and(serde_json::Map::is_empty))
    }

    /// The security requirements in force for the operation.
    fn security<'a>(&'a self, operation: &'a Operation) -> &'a [Value] {
        operation
            .op
            .get("security")
            .unwrap_or(&self.doc["security"])
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// Every way in needs the role `admin` (OpenAPI 3.1 lets a requirement list roles).
    fn admin_only(&self, operation: &Operation) -> bool {
        let requirements = self.security(operation);
        !requirements.is_empty()
            && requirements.iter().all(|r| {
                r.as_object().is_some_and(|schemes| {
                    !schemes.is_empty()
                        && schemes.values().all(|roles| {
                            roles
                                .as_array()
                                .is_some_and(|roles| roles.iter().any(|r| r == "admin"))
                        })
                })
            })
    }

    /// The pages' session cookie is one of the ways in.
    fn takes_session(&self, operation: &Operation) -> bool {
        self.security(operation)
            .iter()
            .any(|r| r.get("session").is_some())
    }

    fn parameters<'a>(&'a self, operation: &'a Operation) -> Vec<&'a Value> {
        let own = operation.op["parameters"].as_array().into_iter().flatten();
        let shared = operation.path_item["parameters"]
            .as_array()
            .into_iter()
            .flatten();
        own.chain(shared).map(|p| self.resolve(p)).collect()
    }

    fn path_fixture(&self, operation: &Operation, name: &str) -> &PathFixture {
        let key = path_fixture_key(&operation.template, name);
        self.paths.get(&key).unwrap_or_else(|| {
            panic!(
                "{}: no fixture for the path parameter {name:?}; add one for {key:?} in \
                 tests/openapi.rs",
                operation.name()
            )
        })
    }

    fn tenant_owned(&self, operation: &Operation) -> bool {
        self.parameters(operation)
            .iter()
            .filter(|p| p["in"] == "path")
            .any(|p| {
                self.path_fixture(operation, p["name"].as_str().expect("name"))
                    .tenant_owned
            })
    }

    /// The request for an operation, built from what the document says it takes.
    fn request(&self, operation: &Operation, who: As) -> RequestBuilder {
        let name = operation.name();
        let mut url = operation.template.clone();
        let mut query = Vec::new();
        let mut headers = Vec::new();
        for parameter in self.parameters(operation) {
            let param = parameter["name"].as_str().expect("parameter name");
            let place = parameter["in"].as_str().expect("parameter in");
            if place == "path" {
                let fixture = self.path_fixture(operation, param);
                url = url.replace(&format!("{{{param}}}"), &fixture.value);
                continue;
            }
            let value = example(parameter).or_else(|| example(&parameter["schema"]));
            let value = match (value, parameter["required"] == true) {
                (Some(value), _) => value,
                (None, false) => continue,
                (None, true) => panic!(
                    "{name}: the required {place} parameter {param:?} has no example to send; \
                     document one (`example = …`)"
                ),
            };
            match place {
                "query" => query.push((param.to_owned(), value)),
                "header" => headers.push((param.to_owned(), value)),
                other => panic!("{name}: parameters in {other} are not supported by this test"),
            }
        }
        let mut url = url::Url::parse(&self.server.url(&url)).expect("url");
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(&query);
        }
        let mut request = http().request(operation.method.clone(), url);
        for (header, value) in headers {
            request = request.header(header, value);
        }
        if let Some(body) = operation.op.get("requestBody") {
            request = self.body(&name, self.resolve(body), request);
        }
        match who {
            As::Nobody => request,
            As::Alice => request.bearer_auth(&self.alice),
            As::AliceBasic => request.basic_auth("any-name", Some(&self.alice)),
            As::AliceSession => request.header("cookie", &self.session),
            As::Bob => request.bearer_auth(&self.bob),
        }
    }

    fn body(&self, name: &str, body: &Value, request: RequestBuilder) -> RequestBuilder {
        let content = body["content"].as_object().expect("requestBody content");
        if let Some(media) = content.get("multipart/form-data") {
            let schema = self.resolve(&media["schema"]);
            let mut form = Form::new();
            for field in schema["required"].as_array().into_iter().flatten() {
                let field = field.as_str().expect("field name");
                let property = self.resolve(&schema["properties"][field]);
                let is_file =
                    property.get("contentMediaType").is_some() || property["format"] == "binary";
                form = if is_file {
                    form.part(
                        field.to_owned(),
                        file_fixture(field).unwrap_or_else(|| {
                            panic!(
                                "{name}: no file fixture for the form field {field:?}; add one \
                                 to file_fixture in tests/openapi.rs"
                            )
                        }),
                    )
                } else {
                    let value = example(property).unwrap_or_else(|| {
                        panic!("{name}: the required form field {field:?} has no example to send")
                    });
                    form.text(field.to_owned(), value)
                };
            }
            return request.multipart(form);
        }
        if let Some(media) = content.get("application/json") {
            let value = media
                .get("example")
                .or_else(|| self.resolve(&media["schema"]).get("example"))
                .unwrap_or_else(|| {
                    panic!("{name}: the JSON request body has no example to send; document one")
                });
            return request.json(value);
        }
        panic!(
            "{name}: no fixture for a request body of type {:?}",
            content.keys().collect::<Vec<_>>()
        );
    }

    fn send(&self, operation: &Operation, who: As) -> Response {
        self.request(operation, who)
            .send()
            .unwrap_or_else(|e| panic!("{} as {who:?}: {e}", operation.name()))
    }

    /// Calls the operation and checks the answer against the document; returns its status.
    fn call(&self, operation: &Operation, who: As) -> u16 {
        let name = format!("{} as {who:?}", operation.name());
        let response = self.send(operation, who);
        let status = response.status();
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .map(|v| v.split(';').next().unwrap_or(v).trim().to_owned());
        let body = if content_type.as_deref() == Some("text/event-stream") {
            first_bytes(response)
        } else {
            response.bytes().expect("read the body").to_vec()
        };
        let json = || -> Value {
            serde_json::from_slice(&body).unwrap_or_else(|e| {
                panic!(
                    "{name}: {status} says JSON but is not ({e}): {}",
                    String::from_utf8_lossy(&body)
                )
            })
        };

        let code = status.as_u16().to_string();
        let range = format!("{}XX", status.as_u16() / 100);
        let responses = &operation.op["responses"];
        if status == StatusCode::NOT_FOUND
            && content_type.as_deref() == Some("application/json")
            && json()["error"]["code"] == "not_found"
            && !matches!(who, As::Bob)
        {
            panic!(
                "{name}: the server has no such route (404 `not_found`), but the document \
                 lists it"
            );
        }
        let documented = responses
            .get(&code)
            .or_else(|| responses.get(&range))
            .or_else(|| responses.get("default"))
            .unwrap_or_else(|| {
                panic!(
                    "{name}: answered {status}, which it does not document (it documents {:?}): {}",
                    responses.as_object().map(|r| r.keys().collect::<Vec<_>>()),
                    String::from_utf8_lossy(&body)
                        .chars()
                        .take(500)
                        .collect::<String>()
                )
            });
        let documented = self.resolve(documented);

        let Some(content) = documented["content"].as_object().filter(|c| !c.is_empty()) else {
            assert!(
                body.is_empty(),
                "{name}: {status} is documented without a body, but has one: {}",
                String::from_utf8_lossy(&body)
            );
            return status.as_u16();
        };
        let content_type =
            content_type.unwrap_or_else(|| panic!("{name}: {status} has no Content-Type"));
        let media = content.get(&content_type).unwrap_or_else(|| {
            panic!(
                "{name}: {status} is {content_type}, but it documents {:?}",
                content.keys().collect::<Vec<_>>()
            )
        });
        if content_type == "application/json" || content_type.ends_with("+json") {
            let schema = media.get("schema").unwrap_or(&Value::Bool(true));
            self.validate(&name, schema, &json());
        } else {
            assert!(!body.is_empty(), "{name}: {status} {content_type} is empty");
            if content_type == "application/epub+zip" {
                assert!(body.starts_with(b"PK"), "{name}: the EPUB is not a zip");
            }
            if content_type == "text/event-stream" {
                let first = String::from_utf8_lossy(&body);
                assert!(
                    [":", "event:", "data:", "id:", "retry:"]
                        .iter()
                        .any(|field| first.starts_with(field)),
                    "{name}: {status} does not start like an event stream: {first}"
                );
            }
        }
        status.as_u16()
    }

    /// Checks a JSON body against a schema of the document (references into its components
    /// resolve because the components are carried along).
    fn validate(&self, name: &str, schema: &Value, instance: &Value) {
        let mut root = serde_json::json!({ "allOf": [schema] });
        root["components"] = self.doc["components"].clone();
        let validator = jsonschema::draft202012::options()
            .should_validate_formats(true)
            .build(&root)
            .unwrap_or_else(|e| panic!("{name}: the documented schema does not compile: {e}"));
        let errors: Vec<String> = validator
            .iter_errors(instance)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "{name}: the body does not match the documented schema:\n{}\nbody: {instance}",
            errors.join("\n")
        );
    }
}

/// `books/{id}` for the `id` of `/api/v1/books/{id}/epub`.
fn path_fixture_key(template: &str, name: &str) -> String {
    let placeholder = format!("{{{name}}}");
    let segments: Vec<&str> = template.split('/').collect();
    let at = segments
        .iter()
        .position(|s| *s == placeholder)
        .unwrap_or_else(|| panic!("{template} has no {placeholder}"));
    let before = at.checked_sub(1).map_or("", |i| segments[i]);
    format!("{before}/{placeholder}")
}

/// A value to send for a parameter or schema: its example, else its default.
fn example(value: &Value) -> Option<String> {
    let found = value
        .get("example")
        .or_else(|| value.get("examples").and_then(|e| e.get(0)))
        .or_else(|| value.get("default"))?;
    Some(match found {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    })
}

/// The first bytes of an event stream, which may never end (the log stream does not): enough
/// to see that it opened as one. Dropping the response then closes the connection.
fn first_bytes(mut response: Response) -> Vec<u8> {
    let mut buf = vec![0; 4096];
    let n = response.read(&mut buf).expect("read the event stream");
    buf.truncate(n);
    buf
}

fn error_code(response: Response) -> Option<String> {
    let body: Value = response.json().ok()?;
    body["error"]["code"].as_str().map(str::to_owned)
}
