//! Throwaway disks: on a host that throws its disk away at restarts, a database or blob store
//! on that disk is refused at start (exit 2, one line naming the variable and the fix), unless
//! it is on a mounted volume or `PERSISTENT_DISK=true` says the disk is kept.

use std::path::Path;
use std::process::{Command, Output};

use super::one_line;
use crate::common::{BIN, command, postgres_database};

fn run(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = command(dir);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.args(args).output().expect("run bindery")
}

#[test]
fn each_hosts_throwaway_disk_is_refused_for_the_database_and_the_blobs() {
    for marker in [
        ("DYNO", "web.1"),
        ("RENDER", "true"),
        ("RAILWAY_PROJECT_ID", "p1"),
        ("FLY_APP_NAME", "books"),
        ("WEBSITE_SITE_NAME", "books"),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        // `heroku run bindery token create` on a one-off dyno: refused, and nothing written.
        let out = run(
            dir.path(),
            &[marker, ("DATA_DIR", "./data")],
            &["token", "create", "alice"],
        );
        assert_eq!(out.status.code(), Some(2), "{marker:?}");
        let line = one_line(&out);
        assert!(
            line.contains("DATABASE_URL") && line.contains("PERSISTENT_DISK=true"),
            "{marker:?}: {line}"
        );
        assert!(out.stdout.is_empty(), "no token printed");
        assert!(
            !dir.path().join("data/bindery.db").exists(),
            "no database made"
        );

        let out = run(dir.path(), &[marker, ("DATA_DIR", "./data")], &["serve"]);
        assert_eq!(out.status.code(), Some(2), "serve {marker:?}");
        assert!(one_line(&out).contains("DATABASE_URL"));

        // Told the disk is kept, it starts.
        let out = run(
            dir.path(),
            &[marker, ("DATA_DIR", "./data"), ("PERSISTENT_DISK", "true")],
            &["token", "create", "alice"],
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn postgres_with_local_blobs_names_blob_url() {
    if !crate::common::need::postgres() {
        return;
    }
    let url = postgres_database();
    let dir = tempfile::tempdir().expect("tempdir");
    let out = run(
        dir.path(),
        &[("DYNO", "web.1"), ("DATABASE_URL", &url)],
        &["migrate"],
    );
    assert_eq!(out.status.code(), Some(2));
    let line = one_line(&out);
    assert!(
        line.contains("BLOB_URL") && line.contains("s3://"),
        "{line}"
    );
    // And PERSISTENT_DISK=false refuses a disk with no host detected at all.
    let out = run(dir.path(), &[("PERSISTENT_DISK", "false")], &["migrate"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(one_line(&out).contains("DATABASE_URL"));
}

#[test]
fn a_mounted_volume_at_the_data_directory_is_kept() {
    // A volume as the host mounts one: a filesystem of its own at DATA_DIR, in a mount
    // namespace of this test's own (unshare; as root, or in a user namespace otherwise).
    let dir = tempfile::tempdir().expect("tempdir");
    let (app, volume) = (dir.path().join("app"), dir.path().join("volume"));
    std::fs::create_dir_all(&app).expect("app");
    std::fs::create_dir_all(&volume).expect("volume");
    let script = r#"mount -t tmpfs tmpfs "$1" && cd "$2" && exec "$3" token create alice"#;
    let mut cmd = Command::new("unshare");
    let root =
        std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").expect("proc")) == 0;
    if !root {
        cmd.arg("--map-root-user");
    }
    let out = cmd
        .args([
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            script,
            "sh",
        ])
        .arg(&volume)
        .arg(&app)
        .arg(BIN)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("FLY_APP_NAME", "books")
        .env("DATA_DIR", &volume)
        .env("LOG_FORMAT", "json")
        .output()
        .expect("unshare");
    assert!(
        out.status.success(),
        "token create on a volume: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("bdy_"));

    // The same directory without the mount is the host's own disk.
    let mut cmd = Command::new(BIN);
    let out = cmd
        .current_dir(&app)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("FLY_APP_NAME", "books")
        .env("DATA_DIR", &volume)
        .args(["token", "create", "alice"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(one_line(&out).contains("mount a volume at DATA_DIR"));
}

#[test]
fn azure_app_service_keeps_data_under_home_when_its_storage_is_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = command(dir.path())
        .env_remove("DATA_DIR")
        .env("WEBSITE_SITE_NAME", "books")
        .env("WEBSITES_ENABLE_APP_SERVICE_STORAGE", "true")
        .arg("config")
        .output()
        .expect("run");
    assert!(out.status.success());
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("DATA_DIR=/home/bindery\n"), "{shown}");
    assert!(shown.contains("DATABASE_URL=sqlite:///home/bindery/bindery.db"));
    let warned = String::from_utf8_lossy(&out.stderr);
    assert!(
        warned.contains("safe for one instance only"),
        "SQLite on the share is flagged: {warned}"
    );
}

/// `az webapp create` with a container turns App Service's storage off: /home is then the
/// container's own disk, which the image's user (uid 65532) cannot even create a directory in.
/// DATA_DIR stays the image's ./data there, so a deployment on PostgreSQL and Azure Blob starts
/// (only its log files are local), and one on the SQLite default is refused with the setting
/// that keeps /home named, rather than failing on a directory it cannot create.
#[test]
fn azure_app_service_with_its_storage_off_keeps_data_dir_off_home() {
    let dir = tempfile::tempdir().expect("tempdir");
    let storage_off = [
        ("WEBSITE_SITE_NAME", "books"),
        ("WEBSITES_ENABLE_APP_SERVICE_STORAGE", "false"),
    ];
    let mut cmd = command(dir.path());
    cmd.env_remove("DATA_DIR");
    for (k, v) in storage_off {
        cmd.env(k, v);
    }
    let out = cmd.arg("config").output().expect("run");
    assert!(out.status.success());
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("DATA_DIR=./data\n"), "{shown}");
    assert!(!shown.contains("/home"), "{shown}");

    let mut cmd = command(dir.path());
    cmd.env_remove("DATA_DIR");
    for (k, v) in storage_off {
        cmd.env(k, v);
    }
    let out = cmd.arg("migrate").output().expect("run");
    assert_eq!(out.status.code(), Some(2), "{}", one_line(&out));
    let line = one_line(&out);
    assert!(
        line.contains("DATABASE_URL") && line.contains("WEBSITES_ENABLE_APP_SERVICE_STORAGE=true"),
        "{line}"
    );
}
