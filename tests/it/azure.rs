//! The `az://` blob store against Azurite (Microsoft's Azure Storage emulator, started on
//! loopback by scripts/test): a book goes through the whole service with every file in Azure
//! Blob Storage, a refused upload leaves nothing behind, deleting a book deletes its blobs, and
//! a missing container is named in /readyz. The other credentials work too: a connection string,
//! and a container SAS signed here with the account key (a badly signed one fails /readyz).

use crate::common;

use std::process::Command;
use std::time::Duration;

use bindery::config::{AzureConfig, BlobUrl, Secret};
use bindery::storage::BlobStore;
use reqwest::StatusCode;
use reqwest::blocking::multipart::{Form, Part};
use serde_json::Value;

use common::{Server, client, command, corpus};

/// Azurite's well-known development account, the same for every installation.
pub(crate) const ACCOUNT: &str = "devstoreaccount1";
pub(crate) const KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

pub(crate) fn endpoint() -> String {
    std::env::var("TEST_AZURITE_ENDPOINT").expect(
        "TEST_AZURITE_ENDPOINT is not set: run the suite through scripts/test, which starts Azurite",
    )
}

/// A fresh container of its own for each test, created as an operator would before deploying.
pub(crate) fn new_container() -> String {
    let name = format!("t{}", uuid::Uuid::new_v4().simple());
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/azurite/create-container.py"
    );
    let status = Command::new("python3")
        .args([script, &endpoint(), &name])
        .status()
        .expect("python3");
    assert!(
        status.success(),
        "could not create container {name} in Azurite"
    );
    name
}

pub(crate) fn azure_env(container: &str) -> Vec<(&'static str, String)> {
    vec![
        ("BLOB_URL", format!("az://{container}")),
        ("AZURE_STORAGE_ACCOUNT_NAME", ACCOUNT.to_owned()),
        ("AZURE_STORAGE_ACCOUNT_KEY", KEY.to_owned()),
        ("AZURE_STORAGE_ENDPOINT", endpoint()),
    ]
}

/// The same container, opened by the test to see what the service stored.
fn store(container: &str) -> BlobStore {
    store_at(&endpoint(), container)
}

/// A container of the Azurite at `endpoint`, opened with the development account's key.
pub(crate) fn store_at(endpoint: &str, container: &str) -> BlobStore {
    BlobStore::open(
        &BlobUrl::Azure {
            container: container.to_owned(),
        },
        &AzureConfig {
            account: Some(ACCOUNT.to_owned()),
            access_key: Some(Secret::new(KEY.to_owned())),
            use_emulator: false,
            endpoint: Some(endpoint.parse().expect("url")),
            ..AzureConfig::default()
        },
    )
    .expect("open the container")
}

fn serve(container: &str, extra: &[(&str, &str)]) -> Server {
    serve_with(&azure_env(container), extra)
}

fn serve_with(env: &[(&'static str, String)], extra: &[(&str, &str)]) -> Server {
    let mut env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    env.extend_from_slice(extra);
    Server::start(&["serve"], &env)
}

fn token(server: &Server, container: &str) -> String {
    token_with(server, &azure_env(container))
}

fn token_with(server: &Server, env: &[(&'static str, String)]) -> String {
    let mut cmd = command(&server.data_dir());
    for (k, v) in env {
        cmd.env(k, v);
    }
    common::web::create_token(cmd, "alice", false)
}

/// A service SAS for the whole container (version 2020-12-06 and later's string to sign),
/// with the permissions Bindery needs: read, add, create, write, delete, list.
fn container_sas(container: &str, key: &str) -> String {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;
    use hmac::{Hmac, KeyInit, Mac};

    let (permissions, expiry, version, resource) =
        ("racwdl", "2099-01-01T00:00:00Z", "2022-11-02", "c");
    let canonical = format!("/blob/{ACCOUNT}/{container}");
    // Permissions, start, expiry, resource, identifier, IP, protocol, version, resource type,
    // snapshot time, encryption scope, and the five response header overrides.
    let string_to_sign = [
        permissions,
        "",
        expiry,
        &canonical,
        "",
        "",
        "",
        version,
        resource,
        "",
        "",
        "",
        "",
        "",
        "",
        "",
    ]
    .join("\n");
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(&STANDARD.decode(key).expect("base64 key"))
        .expect("HMAC takes any key");
    mac.update(string_to_sign.as_bytes());
    let signature = STANDARD.encode(mac.finalize().into_bytes());
    let query: String = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("sv", version)
        .append_pair("sr", resource)
        .append_pair("sp", permissions)
        .append_pair("se", expiry)
        .append_pair("sig", &signature)
        .finish();
    format!("?{query}")
}

/// Uploads a manuscript, waits for the book, and downloads its EPUB; returns the book's id.
fn upload_until_ready(server: &Server, token: &str) -> String {
    let http = client();
    server.wait_ready(Duration::from_secs(30));
    let novel = std::fs::read(corpus().join("markdown/love-among-the-chickens.md")).expect("novel");
    let created = http
        .post(server.url("/api/v1/books?wait=60"))
        .bearer_auth(token)
        .timeout(Duration::from_secs(90))
        .multipart(Form::new().part(
            "manuscript",
            Part::bytes(novel).file_name("love-among-the-chickens.md"),
        ))
        .send()
        .expect("POST /api/v1/books");
    let id = common::web::follow_to_ready(server, token, created)["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let epub = http
        .get(server.url(&format!("/books/{id}/epub")))
        .bearer_auth(token)
        .send()
        .expect("GET epub");
    assert_eq!(epub.status(), 200);
    assert!(epub.bytes().expect("body").starts_with(b"PK"), "an EPUB");
    id
}

fn keys(container: &str, prefix: &str) -> Vec<String> {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime
        .block_on(store(container).list(prefix))
        .expect("list the container")
}

#[test]
fn a_book_lives_in_azure_blob_storage_from_upload_to_delete() {
    if !common::need::azurite() {
        return;
    }
    let container = new_container();
    let server = serve(&container, &[("MAX_MANUSCRIPT_SIZE", "2MB")]);
    let token = token(&server, &container);
    let http = client();

    server.wait_ready(Duration::from_secs(30));

    let novel = std::fs::read(corpus().join("markdown/love-among-the-chickens.md")).expect("novel");
    let cover = std::fs::read(corpus().join("love-among-the-chickens-cover.jpg")).expect("cover");
    let created = http
        .post(server.url("/api/v1/books?wait=60"))
        .bearer_auth(&token)
        .timeout(Duration::from_secs(90))
        .multipart(
            Form::new()
                .part("cover", Part::bytes(cover).file_name("cover.jpg"))
                .part(
                    "manuscript",
                    Part::bytes(novel).file_name("love-among-the-chickens.md"),
                ),
        )
        .send()
        .expect("POST /api/v1/books");
    let id = common::web::follow_to_ready(&server, &token, created)["id"]
        .as_str()
        .expect("id")
        .to_owned();

    // Everything the book is lives in the container: upload, cover, model, chapters, EPUB,
    // reader; and nothing under the local data directory.
    let stored = keys(&container, &format!("books/{id}"));
    for expected in [
        "upload/manuscript",
        "upload/cover",
        "book.epub",
        "reader/index.html",
        "reader/sw.js",
    ] {
        assert!(
            stored.iter().any(|k| k.ends_with(expected)),
            "{expected} missing from {stored:?}"
        );
    }
    assert!(
        !server.data_dir().join("blobs").exists(),
        "a local blob directory appeared"
    );

    let epub = http
        .get(server.url(&format!("/books/{id}/epub")))
        .bearer_auth(&token)
        .send()
        .expect("GET epub");
    assert_eq!(epub.status(), 200);
    let bytes = epub.bytes().expect("body");
    assert!(bytes.starts_with(b"PK"), "an EPUB (zip) is served");
    let reader = http
        .get(server.url(&format!("/books/{id}/reader/index.html")))
        .bearer_auth(&token)
        .send()
        .expect("GET reader");
    assert_eq!(reader.status(), 200);
    assert!(
        reader
            .text()
            .expect("html")
            .contains("Love Among the Chickens")
    );

    // An upload past the limit is cut off while streaming: 413, and no blob of it remains.
    let big = vec![b'a'; 3 * 1024 * 1024];
    let refused = http
        .post(server.url("/api/v1/books"))
        .bearer_auth(&token)
        .multipart(Form::new().part("manuscript", Part::bytes(big).file_name("big.txt")))
        .send()
        .expect("POST");
    assert_eq!(refused.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let books: std::collections::BTreeSet<String> = keys(&container, "books")
        .iter()
        .filter_map(|k| k.split('/').nth(1).map(str::to_owned))
        .collect();
    assert_eq!(
        books.into_iter().collect::<Vec<_>>(),
        std::slice::from_ref(&id)
    );

    let deleted = http
        .delete(server.url(&format!("/api/v1/books/{id}")))
        .bearer_auth(&token)
        .send()
        .expect("DELETE");
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    common::until_gone("the book's blobs removed", || {
        keys(&container, &format!("books/{id}"))
    });
}

#[test]
fn a_missing_container_is_named_by_readyz() {
    if !common::need::azurite() {
        return;
    }
    let container = format!("missing{}", uuid::Uuid::new_v4().simple());
    let server = serve(&container, &[("METRICS_TOKEN", common::METRICS_TOKEN)]);
    let (status, body) = common::readiness(&server);
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    let problem = body["blob_store"]["error"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(problem.contains(&container), "{body}");
}

#[test]
fn a_connection_string_reaches_the_container() {
    if !common::need::azurite() {
        return;
    }
    let container = new_container();
    let env = vec![
        ("BLOB_URL", format!("az://{container}")),
        (
            "AZURE_STORAGE_CONNECTION_STRING",
            format!(
                "DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={KEY};BlobEndpoint={};",
                endpoint()
            ),
        ),
    ];
    let server = serve_with(&env, &[]);
    let id = upload_until_ready(&server, &token_with(&server, &env));
    let stored = keys(&container, &format!("books/{id}"));
    assert!(
        stored.iter().any(|k| k.ends_with("book.epub")),
        "{stored:?}"
    );
}

#[test]
fn a_sas_token_reaches_the_container() {
    if !common::need::azurite() {
        return;
    }
    let container = new_container();
    let env = vec![
        ("BLOB_URL", format!("az://{container}")),
        ("AZURE_STORAGE_ACCOUNT_NAME", ACCOUNT.to_owned()),
        ("AZURE_STORAGE_SAS_TOKEN", container_sas(&container, KEY)),
        ("AZURE_STORAGE_ENDPOINT", endpoint()),
    ];
    let server = serve_with(&env, &[]);
    let token = token_with(&server, &env);
    let id = upload_until_ready(&server, &token);
    let stored = keys(&container, &format!("books/{id}"));
    assert!(
        stored.iter().any(|k| k.ends_with("book.epub")),
        "{stored:?}"
    );
    // Deleting needs the SAS's `d` permission, and removes every blob of the book.
    let deleted = client()
        .delete(server.url(&format!("/api/v1/books/{id}")))
        .bearer_auth(&token)
        .send()
        .expect("DELETE");
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    common::until_gone("the book's blobs removed", || {
        keys(&container, &format!("books/{id}"))
    });
}

#[test]
fn a_badly_signed_sas_token_fails_readyz_naming_the_blob_store() {
    if !common::need::azurite() {
        return;
    }
    let container = new_container();
    // Signed with another key: well formed, and refused by the service.
    let other_key = "b3RoZXIga2V5IG9mIHRoZSB3cm9uZyBhY2NvdW50IGZvciB0aGlzIHRlc3Q=";
    let sas = container_sas(&container, other_key);
    let signature = sas.rsplit_once("sig=").expect("sig").1.to_owned();
    let env = vec![
        ("BLOB_URL", format!("az://{container}")),
        ("AZURE_STORAGE_ACCOUNT_NAME", ACCOUNT.to_owned()),
        ("AZURE_STORAGE_SAS_TOKEN", sas),
        ("AZURE_STORAGE_ENDPOINT", endpoint()),
    ];
    let server = serve_with(&env, &[("METRICS_TOKEN", common::METRICS_TOKEN)]);
    let ready = client()
        .get(server.url("/readyz"))
        .bearer_auth(common::METRICS_TOKEN)
        .send()
        .expect("GET /readyz");
    assert_eq!(ready.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body = ready.text().expect("body");
    let parsed: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(parsed["blob_store"]["ok"], false, "{body}");
    let problem = parsed["blob_store"]["error"].as_str().unwrap_or_default();
    assert!(problem.contains(&format!("az://{container}")), "{body}");
    // The signature is a secret: neither the answer nor the log shows it.
    let decoded: String = url::form_urlencoded::parse(format!("s={signature}").as_bytes())
        .map(|(_, v)| v.into_owned())
        .collect();
    for shown in [&signature, &decoded] {
        assert!(!body.contains(shown.as_str()), "{body}");
        assert!(
            !server
                .process
                .logs
                .all()
                .iter()
                .any(|l| l.to_string().contains(shown.as_str())),
            "the SAS signature reached the log"
        );
    }
}

/// Azurite's short connection string, moved to the test's Azurite by AZURE_STORAGE_ENDPOINT.
#[test]
fn use_development_storage_reaches_azurite() {
    if !common::need::azurite() {
        return;
    }
    let container = new_container();
    let server = serve_with(
        &[
            ("BLOB_URL", format!("az://{container}")),
            (
                "AZURE_STORAGE_CONNECTION_STRING",
                "UseDevelopmentStorage=true".to_owned(),
            ),
            ("AZURE_STORAGE_ENDPOINT", endpoint()),
        ],
        &[],
    );
    server.wait_ready(Duration::from_secs(30));
}

/// A host that runs the image as a user of its own (Heroku's container runtime) cannot write
/// the image's `/data`. On PostgreSQL and Azure Blob nothing is kept there: the real binary
/// migrates and serves, saying once that the default log files are off, where it used to exit
/// 2 naming `DATA_DIR`.
#[test]
fn on_postgres_and_azure_an_unwritable_data_dir_keeps_nothing_from_starting() {
    if !common::need::postgres() || !common::need::azurite() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let not_a_dir = dir.path().join("a-file");
    std::fs::write(&not_a_dir, b"x").expect("write");
    let data_dir = not_a_dir.join("data");
    let database = common::postgres_database();
    let container = new_container();
    let mut env = azure_env(&container);
    env.push(("DATABASE_URL", database));
    env.push(("DATA_DIR", data_dir.display().to_string()));
    let mut migrate = command(dir.path());
    migrate.arg("migrate");
    for (k, v) in &env {
        migrate.env(k, v);
    }
    let out = migrate.output().expect("bindery migrate");
    let said =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "migrate: {said}");
    assert!(
        said.contains("log files are off") && !said.contains("DATA_DIR="),
        "{said}"
    );
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let server = Server::start(&["serve"], &env);
    // Ready once the worker has beaten its first heartbeat.
    common::eventually("/readyz to answer 200", Duration::from_secs(30), || {
        client()
            .get(server.url("/readyz"))
            .send()
            .is_ok_and(|r| r.status() == StatusCode::OK)
    });
}
