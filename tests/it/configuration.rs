//! Configuration errors stop the real binary before anything starts: exit code 2 and one line
//! that names the variable.

use crate::common;

use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

fn run(args: &[&str], env: &[(&str, &str)]) -> (Output, tempfile::TempDir) {
    let data = tempfile::tempdir().expect("tempdir");
    let mut cmd = common::command(data.path());
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("run bindery");
    // A value that should be refused and is not starts a server that never exits: that fails
    // the test, it does not hang it.
    let exited = common::within(Duration::from_secs(30), Duration::from_millis(50), || {
        child.try_wait().expect("try_wait")
    });
    if exited.is_err() {
        let _ = child.kill();
        let output = child.wait_with_output().expect("wait");
        panic!(
            "bindery {args:?} still ran after 30 s, refusing nothing; stderr: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let output = child.wait_with_output().expect("run bindery");
    (output, data)
}

/// Asserts exit code 2 and exactly one stderr line naming `variable`.
fn assert_refused(args: &[&str], env: &[(&str, &str)], variable: &str) -> String {
    let started = Instant::now();
    let (output, data) = run(args, env);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "refusal took {:?}",
        started.elapsed()
    );
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(2), "exit code; stderr: {stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line, got: {stderr}");
    assert!(lines[0].contains(variable), "{stderr}");
    assert!(lines[0].contains("example:"), "{stderr}");
    // Nothing started: no database, no log files.
    assert!(
        !data.path().join("bindery.db").exists(),
        "a database was created"
    );
    stderr
}

#[test]
fn a_port_that_is_not_a_number_is_refused() {
    let line = assert_refused(&["serve"], &[("PORT", "abc")], "PORT");
    assert!(line.contains("\"abc\""), "{line}");
}

#[test]
fn single_sign_on_half_set_up_is_refused_naming_what_is_missing() {
    let line = assert_refused(
        &["serve"],
        &[
            ("OIDC_ISSUER_URL", "https://accounts.example.com"),
            ("OIDC_CLIENT_ID", "bindery"),
        ],
        "OIDC_CLIENT_SECRET",
    );
    assert!(line.contains("together"), "{line}");
    assert_refused(&["serve"], &[("OIDC_SIGN_UP", "anyone")], "OIDC_SIGN_UP");
}

#[test]
fn an_unknown_database_scheme_is_refused() {
    assert_refused(
        &["serve"],
        &[("DATABASE_URL", "mysql://root@localhost/b")],
        "DATABASE_URL",
    );
    assert_refused(
        &["worker"],
        &[("DATABASE_URL", "redis://x")],
        "DATABASE_URL",
    );
}

#[test]
fn a_data_dir_that_cannot_be_written_is_refused() {
    let data = tempfile::tempdir().expect("tempdir");
    let file = data.path().join("not-a-directory");
    std::fs::write(&file, b"x").expect("write");
    let target = file.join("data");
    assert_refused(
        &["serve"],
        &[("DATA_DIR", target.to_str().expect("utf-8"))],
        "DATA_DIR",
    );
    assert_refused(&["migrate"], &[("DATA_DIR", "/proc/bindery")], "DATA_DIR");
}

#[test]
fn other_bad_values_name_their_variable() {
    for (name, value) in [
        ("SHUTDOWN_TIMEOUT", "forever"),
        ("WORKER_STALL_TIMEOUT", "-1"),
        ("WORKER_CONCURRENCY", "none"),
        ("LOG_FORMAT", "yaml"),
        ("KEEPALIVE_URL", "not a url"),
        ("BLOB_URL", "gs://bucket"),
        ("FONTS_DIR", "/nonexistent/bindery-fonts"),
    ] {
        assert_refused(&["serve"], &[(name, value)], name);
    }
}

/// Issue #40's finding: 32 `a`s passed as a first admin's token by their length alone. A value
/// that is easy to guess (repeats, sequences, keyboard runs, words) is refused, the secret
/// never echoed.
#[test]
fn a_first_admin_token_easy_to_guess_is_refused() {
    for weak in [
        "a".repeat(32),
        "abcdefghijklmnopqrstuvwxyz0123456789".to_owned(),
        "passwordpasswordpasswordpassword".to_owned(),
    ] {
        let line = assert_refused(
            &["serve"],
            &[("BINDERY_ADMIN_TOKEN", &weak)],
            "BINDERY_ADMIN_TOKEN",
        );
        assert!(line.contains("too easy to guess"), "{line}");
        assert!(!line.contains(&weak), "the secret is echoed: {line}");
    }
}

#[test]
fn secrets_are_never_printed() {
    let (output, _data) = run(
        &["config"],
        &[(
            "DATABASE_URL",
            "postgres://bindery:hunter2@db.internal/bindery",
        )],
    );
    assert!(output.status.success());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("DATABASE_URL=postgres://bindery:"),
        "{stdout}"
    );
    assert!(stdout.contains("@db.internal/bindery"), "{stdout}");
    assert!(!stdout.contains("hunter2"), "{stdout}");
    let (output, _data) = run(
        &["config"],
        &[("METRICS_TOKEN", "correct-horse-battery-staple")],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("METRICS_TOKEN=[redacted]"), "{stdout}");
    assert!(!stdout.contains("battery"), "{stdout}");

    // Nor in a refusal.
    let (output, _data) = run(&["serve"], &[("DATABASE_URL", "postgres://u:hunter2@/x")]);
    assert_eq!(output.status.code(), Some(2));
    assert!(!String::from_utf8_lossy(&output.stderr).contains("hunter2"));
    let stderr = assert_refused(&["serve"], &[("METRICS_TOKEN", "hunter2")], "METRICS_TOKEN");
    assert!(!stderr.contains("hunter2"), "{stderr}");
    assert!(stderr.contains("at least 16 characters"), "{stderr}");
}

#[test]
fn config_prints_every_effective_value() {
    let (output, data) = run(&["config"], &[("PORT", "9999")]);
    assert!(output.status.success());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.lines().any(|l| l == "PORT=9999"), "{stdout}");
    let db = format!("DATABASE_URL=sqlite://{}/bindery.db", data.path().display());
    assert!(stdout.lines().any(|l| l == db), "{stdout}");
    assert!(
        stdout.lines().any(|l| l == "SHUTDOWN_TIMEOUT=25s"),
        "{stdout}"
    );
}

#[test]
fn an_unknown_bindery_variable_gets_a_suggestion() {
    let (output, _data) = run(&["config"], &[("BINDERY_PROT", "1")]);
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("BINDERY_PROT"), "{stderr}");
    assert!(stderr.contains("did you mean PORT?"), "{stderr}");
}

#[test]
fn a_dotenv_file_is_read_in_development() {
    let data = tempfile::tempdir().expect("tempdir");
    std::fs::write(data.path().join(".env"), "PORT=7070\n").expect("write .env");
    let output = common::command(data.path())
        .env_remove("PORT")
        .arg("config")
        .output()
        .expect("run");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.lines().any(|l| l == "PORT=7070"), "{stdout}");
}

#[test]
fn version_and_help_are_there_for_newcomers() {
    let (output, _data) = run(&["--version"], &[]);
    assert!(output.status.success());
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        format!("bindery {}", env!("CARGO_PKG_VERSION"))
    );
    let (output, _data) = run(&["--help"], &[]);
    let help = String::from_utf8_lossy(&output.stdout);
    for command in ["serve", "web", "worker", "migrate", "config"] {
        assert!(help.contains(command), "{help}");
    }
    let (output, _data) = run(&["config", "--help"], &[]);
    let help = String::from_utf8_lossy(&output.stdout);
    assert!(help.contains("WORKER_STALL_TIMEOUT"), "{help}");
}

#[test]
fn migrate_creates_the_database_and_is_repeatable() {
    let data = tempfile::tempdir().expect("tempdir");
    for _ in 0..2 {
        let output = common::command(data.path())
            .arg("migrate")
            .output()
            .expect("run");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    assert!(data.path().join("bindery.db").exists());
}

#[test]
fn every_variable_is_documented_in_the_readme() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    for v in bindery::config::VARIABLES {
        assert!(
            readme.contains(&format!("| `{}` |", v.name)),
            "README.md's variable table lacks {}",
            v.name
        );
    }
}
