//! The same binary on PostgreSQL: `DATABASE_URL=postgres://…` is all it takes.

use crate::common;

use std::time::Duration;

use common::{Server, message, signal_pid};
use nix::sys::signal::Signal;

#[test]
fn serve_on_postgres_migrates_heartbeats_and_stops_cleanly() {
    if !common::need::postgres() {
        return;
    }
    let database = common::postgres_database();
    let mut server = Server::start(&["serve"], &[("DATABASE_URL", &database)]);
    server.wait_ready(Duration::from_secs(10));
    let line = server
        .process
        .logs
        .wait_for("worker ready", Duration::from_secs(10), |l| {
            message(l, Some("worker"), "worker ready")
        });
    assert_eq!(line["database"], "postgres");
    server.process.signal(Signal::SIGTERM);
    let (status, _) = server.process.wait_exit(Duration::from_secs(10));
    assert!(status.success());
}

/// Every connection is called what `DATABASE_URL` says (`?application_name=`), so that a shared
/// server's `pg_stat_activity` and log tell deployments and roles apart. (`bindery` when the
/// URL names none: `storage::database`'s unit tests.)
#[test]
fn connections_keep_the_application_name_the_url_gives() {
    if !common::need::postgres() {
        return;
    }
    let database = common::postgres_database();
    let mut named = url::Url::parse(&database).expect("URL");
    named
        .query_pairs_mut()
        .append_pair("application_name", "books-web");
    let mut server = Server::start(&["serve"], &[("DATABASE_URL", named.as_str())]);
    server.wait_ready(Duration::from_secs(10));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let names: Vec<String> = runtime.block_on(async {
        use sqlx::Connection;
        let mut conn = sqlx::PgConnection::connect(&database)
            .await
            .expect("connect");
        let names = sqlx::query_scalar(
            "SELECT DISTINCT application_name FROM pg_stat_activity
             WHERE datname = current_database() AND pid <> pg_backend_pid()",
        )
        .fetch_all(&mut conn)
        .await
        .expect("pg_stat_activity");
        conn.close().await.expect("close");
        names
    });
    assert_eq!(names, ["books-web"], "the server's connections");
    server.process.signal(Signal::SIGTERM);
    let (status, _) = server.process.wait_exit(Duration::from_secs(10));
    assert!(status.success());
}

#[test]
fn a_stuck_worker_is_caught_on_postgres_too() {
    if !common::need::postgres() {
        return;
    }
    let database = common::postgres_database();
    let mut server = Server::start(
        &["serve"],
        &[("DATABASE_URL", &database), ("WORKER_STALL_TIMEOUT", "2s")],
    );
    server.wait_ready(Duration::from_secs(10));
    signal_pid(server.worker_pid(), Signal::SIGSTOP);
    let (status, took) = server.process.wait_exit(Duration::from_secs(8));
    assert!(!status.success());
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[test]
fn migrate_on_postgres_is_repeatable() {
    if !common::need::postgres() {
        return;
    }
    let database = common::postgres_database();
    let data = tempfile::tempdir().expect("tempdir");
    for _ in 0..2 {
        let output = common::command(data.path())
            .env("DATABASE_URL", &database)
            .arg("migrate")
            .output()
            .expect("run");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

#[test]
fn an_unreachable_postgres_fails_with_a_clear_error() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = closed.local_addr().expect("addr").port();
    drop(closed);
    let data = tempfile::tempdir().expect("tempdir");
    let output = common::command(data.path())
        .env(
            "DATABASE_URL",
            format!("postgres://u:hunter2@127.0.0.1:{port}/db"),
        )
        .arg("serve")
        .output()
        .expect("run");
    assert!(!output.status.success());
    let out = String::from_utf8_lossy(&output.stdout);
    assert!(
        out.contains(&format!("PostgreSQL at 127.0.0.1:{port}")),
        "{out}"
    );
    assert!(!out.contains("hunter2"), "{out}");
}

/// A server that cuts every connection (a pooler or a failover restarting, an idle-connection
/// reaper) stops no work. The job engine's pump does not test its connection before each
/// statement (`Checkout::Trusted`): the cut fails one of its statements, and the next must
/// run on a fresh connection, not on the dead one.
#[test]
fn jobs_still_run_after_the_server_cuts_every_connection() {
    if !common::need::postgres() {
        return;
    }
    let database = common::postgres_database();
    let server = Server::start(&["serve"], &[("DATABASE_URL", &database)]);
    server.wait_ready(Duration::from_secs(10));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let cut_every_connection = || {
        runtime.block_on(async {
            use sqlx::Connection;
            let mut conn = sqlx::PgConnection::connect(&database)
                .await
                .expect("connect");
            let cut: Vec<bool> = sqlx::query_scalar(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                 WHERE datname = current_database() AND pid <> pg_backend_pid()",
            )
            .fetch_all(&mut conn)
            .await
            .expect("terminate");
            conn.close().await.expect("close");
            cut.len()
        })
    };
    let env = [("DATABASE_URL", database.as_str())];
    common::ping_until_completed(&server, &env, Duration::from_secs(15));
    for round in 1..=2 {
        let cut = cut_every_connection();
        assert!(cut >= 3, "round {round}: only {cut} connections to cut");
        common::ping_until_completed(&server, &env, Duration::from_secs(15));
    }
    assert!(
        !common::process_gone(server.process.pid()),
        "serve exited after its connections were cut:\n{}",
        server.process.logs.dump()
    );
}
