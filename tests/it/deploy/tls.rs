//! PostgreSQL over TLS, against the cluster `scripts/test` starts with `ssl=on`, a CA made at
//! test time, and a `pg_hba.conf` that allows only `hostssl` (as managed services do).

use std::time::Duration;

use reqwest::StatusCode;
use reqwest::blocking::multipart::{Form, Part};
use serde_json::Value;

use super::{BOOK, one_line};
use crate::common::{self, Server, client, command};

struct TlsServer {
    /// `postgres://bindery:…@localhost:PORT/DB`, no TLS options.
    url: String,
    ca: String,
    wrong_ca: String,
}

fn tls_server() -> TlsServer {
    let var = |name: &str| {
        std::env::var(name).unwrap_or_else(|_| {
            panic!("{name} is not set: run the suite through scripts/test, which starts a TLS-only PostgreSQL")
        })
    };
    let admin = format!(
        "{}?sslmode=verify-full&sslrootcert={}",
        var("TEST_POSTGRES_TLS_URL"),
        var("TEST_POSTGRES_TLS_CA")
    );
    let name = format!("bindery_tls_{}", uuid::Uuid::new_v4().simple());
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        use sqlx::Connection;
        let mut conn = sqlx::PgConnection::connect(&admin)
            .await
            .expect("the test itself connects over verified TLS");
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut conn)
            .await
            .expect("create database");
    });
    let mut url = url::Url::parse(&var("TEST_POSTGRES_TLS_URL")).expect("url");
    url.set_path(&name);
    TlsServer {
        url: url.to_string(),
        ca: var("TEST_POSTGRES_TLS_CA"),
        wrong_ca: var("TEST_POSTGRES_TLS_WRONG_CA"),
    }
}

fn bindery(data: &std::path::Path, database_url: &str, args: &[&str]) -> std::process::Output {
    let mut cmd = command(data);
    cmd.env("DATABASE_URL", database_url).args(args);
    cmd.output().expect("run bindery")
}

/// How many of the app's connections are encrypted, and how many are not.
fn app_connections_by_ssl(admin: &str, database: &str) -> (i64, i64) {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        use sqlx::Connection;
        let mut conn = sqlx::PgConnection::connect(admin).await.expect("connect");
        let row: (i64, i64) = sqlx::query_as(
            "SELECT count(*) FILTER (WHERE s.ssl), count(*) FILTER (WHERE NOT s.ssl)
             FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid)
             WHERE a.application_name = 'bindery' AND a.datname = $1",
        )
        .bind(database)
        .fetch_one(&mut conn)
        .await
        .expect("pg_stat_ssl");
        row
    })
}

#[test]
fn require_and_verify_full_reach_a_tls_only_server_and_a_book_converts() {
    if !common::need::postgres_tls() {
        return;
    }
    let pg = tls_server();
    let data = tempfile::tempdir().expect("tempdir");

    let out = bindery(
        data.path(),
        &format!("{}?sslmode=require", pg.url),
        &["migrate"],
    );
    assert!(
        out.status.success(),
        "migrate with sslmode=require: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    let verified = format!("{}?sslmode=verify-full&sslrootcert={}", pg.url, pg.ca);
    let token = common::web::create_token(
        {
            let mut cmd = command(data.path());
            cmd.env("DATABASE_URL", &verified);
            cmd
        },
        "alice",
        false,
    );
    let server = Server::start_in(data, &["serve"], &[("DATABASE_URL", &verified)]);
    server.wait_ready(Duration::from_secs(30));

    let created = client()
        .post(server.url("/api/v1/books?wait=25"))
        .bearer_auth(&token)
        .timeout(Duration::from_secs(40))
        .multipart(Form::new().part(
            "manuscript",
            Part::bytes(BOOK.as_bytes().to_vec()).file_name("deployed.md"),
        ))
        .send()
        .expect("upload");
    assert_eq!(created.status(), StatusCode::OK);
    let book: Value = created.json().expect("json");
    assert_eq!(book["status"], "ready", "{book}");
    let epub = client()
        .get(server.url(&format!(
            "/api/v1/books/{}/epub",
            book["id"].as_str().expect("id")
        )))
        .bearer_auth(&token)
        .send()
        .expect("epub");
    assert_eq!(epub.status(), StatusCode::OK);
    assert!(epub.bytes().expect("bytes").starts_with(b"PK"));

    let database = url::Url::parse(&pg.url).expect("url").path()[1..].to_owned();
    let (encrypted, plain) = app_connections_by_ssl(&verified, &database);
    assert!(encrypted >= 2, "the web and worker pools are connected");
    assert_eq!(plain, 0, "no connection of the app is unencrypted");
}

#[test]
fn a_wrong_ca_or_host_name_or_no_tls_is_one_line_naming_database_url_and_exit_2() {
    if !common::need::postgres_tls() {
        return;
    }
    let pg = tls_server();
    let data = tempfile::tempdir().expect("tempdir");
    let wrong_host = pg.url.replacen("@localhost:", "@127.0.0.1:", 1);
    let cases = [
        (
            format!("{}?sslmode=verify-full&sslrootcert={}", pg.url, pg.wrong_ca),
            "sslrootcert",
        ),
        (
            format!("{wrong_host}?sslmode=verify-full&sslrootcert={}", pg.ca),
            "not issued for",
        ),
        (format!("{}?sslmode=disable", pg.url), "sslmode=require"),
        (
            format!(
                "{}?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem",
                pg.url
            ),
            "cannot be read",
        ),
    ];
    for (url, advice) in &cases {
        for command in ["migrate", "serve"] {
            let out = bindery(data.path(), url, &[command]);
            assert_eq!(
                out.status.code(),
                Some(2),
                "{command} with {url}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let line = one_line(&out);
            assert!(line.contains("DATABASE_URL"), "{line}");
            assert!(line.contains(advice), "{command}: {line}");
            let password = url::Url::parse(url)
                .ok()
                .and_then(|u| u.password().map(str::to_owned))
                .unwrap_or_default();
            assert!(
                !line.contains(&password),
                "the password is not shown: {line}"
            );
            if command == "serve" {
                let stdout = String::from_utf8_lossy(&out.stdout);
                assert!(
                    !stdout.contains("worker process started"),
                    "no worker was started: {stdout}"
                );
            }
        }
    }
    // The verified form itself works from the same directory.
    let ok = bindery(
        data.path(),
        &format!("{}?sslmode=verify-full&sslrootcert={}", pg.url, pg.ca),
        &["migrate"],
    );
    assert!(ok.status.success());
    // libpq's PGSSLMODE / PGSSLROOTCERT fill in a DATABASE_URL that the host owns.
    let mut cmd = command(data.path());
    cmd.env("DATABASE_URL", &pg.url)
        .env("PGSSLMODE", "verify-full")
        .env("PGSSLROOTCERT", &pg.wrong_ca)
        .arg("migrate");
    let out = cmd.output().expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(one_line(&out).contains("DATABASE_URL"));
    let mut cmd = command(data.path());
    cmd.env("DATABASE_URL", &pg.url)
        .env("PGSSLMODE", "verify-full")
        .env("PGSSLROOTCERT", &pg.ca)
        .arg("migrate");
    assert!(cmd.status().expect("run").success());
}
