//! `bindery logs`: the merged tail of the web and worker log files, then (with `-f`) new lines
//! as they are written.

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use common::{Server, command};

#[test]
fn logs_prints_both_roles_and_follows_new_lines() {
    let server = Server::start(&["serve"], &[]);
    server.wait_ready(Duration::from_secs(30));

    // The server logs JSON (as the tests run it), one object per line, each with its role.
    let lines = |args: &[&str]| -> Vec<serde_json::Value> {
        let out = command(&server.data_dir())
            .arg("logs")
            .args(args)
            .output()
            .expect("bindery logs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .expect("utf-8")
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON log line"))
            .collect()
    };
    let all = lines(&["-n", "200"]);
    let has = |role: &str, text: &str| all.iter().any(|l| common::message(l, Some(role), text));
    assert!(has("web", "listening"), "{all:#?}");
    assert!(has("worker", "worker ready"), "{all:#?}");
    let times: Vec<&str> = all.iter().filter_map(|l| l["timestamp"].as_str()).collect();
    assert!(
        times.windows(2).all(|w| w[0] <= w[1]),
        "merged in time order"
    );

    let only_worker = lines(&["--role", "worker"]);
    assert!(!only_worker.is_empty());
    assert!(
        only_worker.iter().all(|l| l["role"] == "worker"),
        "{only_worker:#?}"
    );

    // Following: a request made after it started shows up.
    let mut follow = command(&server.data_dir())
        .args(["logs", "-n", "0", "-f"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("bindery logs -f");
    let stdout = follow.stdout.take().expect("stdout");
    let (lines, seen) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    // It says nothing until there is a new line, so requests are made until one shows up
    // (a request made before it was watching would not: it prints only new lines).
    let marker = format!("/static/marker-{}", std::process::id());
    let found = (0..100).find_map(|_| {
        let _ = common::client().get(server.url(&marker)).send();
        seen.recv_timeout(Duration::from_millis(200))
            .ok()
            .filter(|l| l.contains(&marker))
    });
    assert!(found.is_some(), "the new request's line never arrived");
    // Ctrl-C (SIGINT) ends it cleanly.
    common::signal_pid(follow.id() as i32, nix::sys::signal::Signal::SIGINT);
    let status = follow.wait().expect("wait");
    assert!(status.success(), "{status:?}");
}
