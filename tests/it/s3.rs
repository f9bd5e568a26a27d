//! The `s3://` blob store against moto's S3-compatible server (started on loopback by
//! scripts/test): a book goes through the whole service with every file in a bucket (under a
//! prefix), a refused upload leaves nothing behind, deleting a book deletes its blobs, a
//! manuscript bigger than one part is streamed in parts, create-if-absent refuses a second
//! create of a key, and a missing bucket is named in /readyz.

use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;

use bindery::config::{AzureConfig, BlobUrl, S3Config, Secret};
use bindery::storage::BlobStore;
use reqwest::StatusCode;
use reqwest::blocking::multipart::{Form, Part};
use serde_json::Value;

use common::{Server, client, command, corpus};

/// moto takes any key pair; these are only there to sign requests.
const KEY_ID: &str = "bindery-test";
const SECRET: &str = "bindery-test-secret";

fn endpoint() -> String {
    std::env::var("TEST_S3_ENDPOINT").expect(
        "TEST_S3_ENDPOINT is not set: run the suite through scripts/test, which starts moto",
    )
}

/// A fresh bucket for each test, created as an operator would before deploying (moto takes an
/// unsigned `PUT /BUCKET`).
fn new_bucket() -> String {
    let name = format!("t{}", uuid::Uuid::new_v4().simple());
    let created = client()
        .put(format!("{}/{name}", endpoint()))
        .send()
        .expect("PUT bucket");
    assert!(
        created.status().is_success(),
        "could not create bucket {name}: {}",
        created.status()
    );
    name
}

fn s3_env(blob_url: &str) -> Vec<(&'static str, String)> {
    vec![
        ("BLOB_URL", blob_url.to_owned()),
        ("AWS_ACCESS_KEY_ID", KEY_ID.to_owned()),
        ("AWS_SECRET_ACCESS_KEY", SECRET.to_owned()),
        ("AWS_REGION", "us-east-1".to_owned()),
        ("AWS_ENDPOINT_URL", endpoint()),
    ]
}

/// The bucket as the service opens it (`prefix` and all), or the whole bucket without one.
fn store(bucket: &str, prefix: Option<&str>) -> BlobStore {
    BlobStore::open(
        &BlobUrl::S3 {
            bucket: bucket.to_owned(),
            prefix: prefix.map(str::to_owned),
            s3: Box::new(S3Config {
                access_key_id: Some(KEY_ID.to_owned()),
                secret_access_key: Some(Secret::new(SECRET.to_owned())),
                session_token: None,
                region: "us-east-1".to_owned(),
                endpoint: Some(endpoint().parse().expect("url")),
            }),
        },
        &AzureConfig::default(),
    )
    .expect("open the bucket")
}

fn serve(env: &[(&'static str, String)], extra: &[(&str, &str)]) -> Server {
    let mut env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    env.extend_from_slice(extra);
    Server::start(&["serve"], &env)
}

fn token(server: &Server, env: &[(&'static str, String)]) -> String {
    let mut cmd = command(&server.data_dir());
    for (k, v) in env {
        cmd.env(k, v);
    }
    common::web::create_token(cmd, "alice", false)
}

fn keys(store: &BlobStore, prefix: &str) -> Vec<String> {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime
        .block_on(store.list(prefix))
        .expect("list the bucket")
}

#[test]
fn a_book_lives_in_an_s3_bucket_from_upload_to_delete() {
    if !common::need::s3() {
        return;
    }
    let bucket = new_bucket();
    let env = s3_env(&format!("s3://{bucket}/bindery/prod"));
    let server = serve(&env, &[("MAX_MANUSCRIPT_SIZE", "2MB")]);
    let token = token(&server, &env);
    let http = client();
    let whole_bucket = store(&bucket, None);

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
    // Ready within the wait, or followed there on a loaded machine.
    let book = common::web::follow_to_ready(&server, &token, created);
    let id = book["id"].as_str().expect("id").to_owned();

    // Everything the book is lives in the bucket, under the URL's prefix: upload, cover,
    // model, chapters, EPUB, reader; and nothing under the local data directory.
    let stored = keys(&whole_bucket, &format!("bindery/prod/books/{id}"));
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
        keys(&whole_bucket, "")
            .iter()
            .all(|k| k.starts_with("bindery/prod/")),
        "a blob outside the prefix"
    );
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

    // An upload past the limit is cut off while streaming: 413, and no blob of it remains
    // (the multipart upload is aborted, not left half-written).
    let big = vec![b'a'; 3 * 1024 * 1024];
    let refused = http
        .post(server.url("/api/v1/books"))
        .bearer_auth(&token)
        .multipart(Form::new().part("manuscript", Part::bytes(big).file_name("big.txt")))
        .send()
        .expect("POST");
    assert_eq!(refused.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let books: BTreeSet<String> = keys(&whole_bucket, "bindery/prod/books")
        .iter()
        .filter_map(|k| k.split('/').nth(3).map(str::to_owned))
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
    common::until_gone("the book's objects removed", || {
        keys(&whole_bucket, &format!("bindery/prod/books/{id}"))
    });
}

/// S3 takes multipart uploads in parts of at least 5 MiB (all but the last), and so does moto.
#[test]
fn a_manuscript_bigger_than_one_part_is_stored_whole() {
    if !common::need::s3() {
        return;
    }
    let bucket = new_bucket();
    let env = s3_env(&format!("s3://{bucket}"));
    let server = serve(&env, &[("MAX_MANUSCRIPT_SIZE", "20MiB")]);
    let token = token(&server, &env);
    server.wait_ready(Duration::from_secs(30));

    let mut text = String::from("A Long Book\n\nChapter 1\n\n");
    while text.len() < 11 * 1024 * 1024 {
        text.push_str("The hens walked about the yard and nobody minded them at all.\n");
    }
    let created = client()
        .post(server.url("/api/v1/books"))
        .bearer_auth(&token)
        .timeout(Duration::from_secs(60))
        .multipart(Form::new().part(
            "manuscript",
            Part::bytes(text.clone().into_bytes()).file_name("long.txt"),
        ))
        .send()
        .expect("POST /api/v1/books");
    let status = created.status();
    let book: Value = created.json().expect("json");
    assert_eq!(status, StatusCode::ACCEPTED, "{book}");
    let id = book["id"].as_str().expect("id");

    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let stored = runtime
        .block_on(store(&bucket, None).get(&format!("books/{id}/upload/manuscript")))
        .expect("the manuscript blob");
    assert_eq!(stored.len(), text.len());
    assert!(stored == text.as_bytes(), "the stored manuscript differs");
}

#[tokio::test]
async fn put_if_absent_refuses_a_second_create_of_a_key() {
    if !common::need::s3() {
        return;
    }
    let bucket = tokio::task::spawn_blocking(new_bucket)
        .await
        .expect("bucket");
    for prefix in [None, Some("under/a/prefix")] {
        let blobs = store(&bucket, prefix);
        let key = format!("books/{}/book.epub", uuid::Uuid::new_v4());
        assert!(
            blobs.put_if_absent(&key, "first").await.expect("create"),
            "the first create writes"
        );
        assert!(
            !blobs.put_if_absent(&key, "second").await.expect("create"),
            "the second create finds the key taken"
        );
        assert_eq!(blobs.get(&key).await.expect("read"), "first");
    }
}

#[test]
fn a_missing_bucket_is_named_by_readyz() {
    if !common::need::s3() {
        return;
    }
    let bucket = format!("missing{}", uuid::Uuid::new_v4().simple());
    let server = serve(
        &s3_env(&format!("s3://{bucket}")),
        &[("METRICS_TOKEN", common::METRICS_TOKEN)],
    );
    let (status, body) = common::readiness(&server);
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    let problem = body["blob_store"]["error"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(problem.contains(&bucket), "{body}");
    assert!(!body.to_string().contains(SECRET), "{body}");
}
