//! `bindery jobs …` against a running `bindery serve`, as an operator would use it.

use crate::common;

use std::time::Duration;

use common::Server;

fn jobs(server: &Server, args: &[&str]) -> std::process::Output {
    common::command(&server.data_dir())
        .arg("jobs")
        .args(args)
        .output()
        .expect("run bindery jobs")
}

#[test]
fn an_operator_pings_the_worker_and_manages_jobs() {
    let server = Server::start(&["serve"], &[]);
    server.wait_ready(Duration::from_secs(10));

    // The supervised worker runs it.
    let (id, listing) = common::ping_until_completed(&server, &[], Duration::from_secs(10));
    assert!(listing.contains("bindery.noop"), "{listing}");

    // Finished jobs are counted only on request (that reads the whole history).
    let stats = String::from_utf8_lossy(&jobs(&server, &["stats"]).stdout).into_owned();
    assert!(!stats.contains("completed"), "{stats}");
    assert!(
        stats.contains("--all"),
        "the table says how to see more: {stats}"
    );
    let all = String::from_utf8_lossy(&jobs(&server, &["stats", "--all"]).stdout).into_owned();
    assert!(
        all.lines().any(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            cols.first() == Some(&"default") && cols.get(1) == Some(&"completed")
        }),
        "{all}"
    );

    // Pausing a queue holds new jobs back; resuming lets them run.
    assert!(jobs(&server, &["pause", "default"]).status.success());
    // Time passes, not a wait for a condition: a pause takes effect within 100 ms (the worker
    // reads paused queues at most that often, and shows nothing of it), so a job enqueued
    // later than that must not run.
    std::thread::sleep(Duration::from_millis(300));
    let out = jobs(&server, &["ping", "--millis", "10"]);
    assert!(out.status.success());
    // Time passes, not a wait for a condition: a window for the job to be wrongly run. An idle
    // worker on SQLite hears of a commit at once (inotify), or within 250 ms by its poll.
    std::thread::sleep(Duration::from_millis(600));
    let stats = String::from_utf8_lossy(&jobs(&server, &["stats"]).stdout).into_owned();
    assert!(stats.contains("paused: default"), "{stats}");
    assert!(
        stats
            .lines()
            .any(|l| l.starts_with("default") && l.contains("available")),
        "{stats}"
    );
    assert!(jobs(&server, &["resume", "default"]).status.success());
    common::eventually(
        "no job available after the resume",
        Duration::from_secs(10),
        || {
            let stats = String::from_utf8_lossy(&jobs(&server, &["stats"]).stdout).into_owned();
            if stats.lines().any(|l| l.contains("available")) {
                Err(format!("\n{stats}"))
            } else {
                Ok(())
            }
        },
    );

    // Mistakes get a clear answer and a failing exit code.
    let out = jobs(&server, &["retry", &id.to_string()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not dead, discarded or cancelled"));
    let out = jobs(&server, &["list", "--state", "finished"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown state"));
    let out = jobs(&server, &["show", "987654"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no job 987654"));
}
