//! The `az://` blob store against Azurite (Microsoft's Azure Storage emulator, started on
//! loopback by scripts/test): a book goes through the whole service with every file in Azure
//! Blob Storage, a refused upload leaves nothing behind, deleting a book deletes its blobs, and
//! a missing container is named in /readyz.

mod common;

use std::process::Command;
use std::time::Duration;

use bindery::config::{AzureConfig, BlobUrl, Secret};
use bindery::storage::BlobStore;
use reqwest::StatusCode;
use reqwest::blocking::multipart::{Form, Part};
use serde_json::Value;

use common::{Server, client, command, corpus};

/// Azurite's well-known development account, the same for every installation.
const ACCOUNT: &str = "devstoreaccount1";
const KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

fn endpoint() -> String {
    std::env::var("TEST_AZURITE_ENDPOINT").expect(
        "TEST_AZURITE_ENDPOINT is not set: run the suite through scripts/test, which starts Azurite",
    )
}

/// A fresh container of its own for each test, created as an operator would before deploying.
fn new_container() -> String {
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

fn azure_env(container: &str) -> Vec<(&'static str, String)> {
    vec![
        ("BLOB_URL", format!("az://{container}")),
        ("AZURE_STORAGE_ACCOUNT_NAME", ACCOUNT.to_owned()),
        ("AZURE_STORAGE_ACCOUNT_KEY", KEY.to_owned()),
        ("AZURE_STORAGE_ENDPOINT", endpoint()),
    ]
}

/// The same container, opened by the test to see what the service stored.
fn store(container: &str) -> BlobStore {
    BlobStore::open(
        &BlobUrl::Azure {
            container: container.to_owned(),
        },
        &AzureConfig {
            account: Some(ACCOUNT.to_owned()),
            access_key: Some(Secret::new(KEY.to_owned())),
            use_emulator: false,
            endpoint: Some(endpoint().parse().expect("url")),
        },
    )
    .expect("open the container")
}

fn serve(container: &str, extra: &[(&str, &str)]) -> Server {
    let env = azure_env(container);
    let mut env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    env.extend_from_slice(extra);
    Server::start(&["serve"], &env)
}

fn token(server: &Server, container: &str) -> String {
    let mut cmd = command(&server.data_dir());
    for (k, v) in azure_env(container) {
        cmd.env(k, v);
    }
    common::web::create_token(cmd, "alice", false)
}

fn keys(container: &str, prefix: &str) -> Vec<String> {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime
        .block_on(store(container).list(prefix))
        .expect("list the container")
}

#[test]
fn a_book_lives_in_azure_blob_storage_from_upload_to_delete() {
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
    assert_eq!(created.status(), StatusCode::OK);
    let book: Value = created.json().expect("json");
    assert_eq!(book["status"], "ready", "{book}");
    let id = book["id"].as_str().expect("id").to_owned();

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
    assert!(keys(&container, &format!("books/{id}")).is_empty());
}

#[test]
fn a_missing_container_is_named_by_readyz() {
    let container = format!("missing{}", uuid::Uuid::new_v4().simple());
    let server = serve(&container, &[]);
    let ready = client()
        .get(server.url("/readyz"))
        .send()
        .expect("GET /readyz");
    assert_eq!(ready.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body: Value = ready.json().expect("json");
    let problem = body["blob_store"]["error"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(problem.contains(&container), "{body}");
}
