//! The app host Bindery runs on, as far as its environment tells, and whether the local disk
//! outlives a restart there.
//!
//! On Heroku (and Dokku, which copies its `DYNO`), Render, Railway, Fly.io and Azure App Service a
//! process's own disk is thrown away at every restart or deploy; only a mounted volume (Dokku's
//! storage mounts, Render disks, Railway and Fly volumes, App Service's `/home` share) is kept.
//! The embedded defaults (SQLite and files under `DATA_DIR`) would then lose every book and token
//! at the next restart without a word, so a process that would keep its database or blobs there
//! refuses to start instead, unless `PERSISTENT_DISK=true` says the disk is kept.

use std::path::{Path, PathBuf};

use super::{BlobUrl, Config, ConfigError, DatabaseUrl};

/// A host whose local disk is thrown away, found by a variable it sets in every process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Host {
    /// Heroku, and Dokku, which sets the same `DYNO`.
    Heroku,
    Render,
    Railway,
    Fly,
    AzureAppService,
}

impl Host {
    /// The variables that tell each host, in the order they are tried.
    pub const MARKERS: &[(&'static str, Host)] = &[
        ("DYNO", Host::Heroku),
        ("RENDER", Host::Render),
        ("RAILWAY_PROJECT_ID", Host::Railway),
        ("FLY_APP_NAME", Host::Fly),
        ("WEBSITE_SITE_NAME", Host::AzureAppService),
    ];

    /// Which host the environment names, if any.
    pub fn detect(is_set: impl Fn(&'static str) -> bool) -> Option<Host> {
        Self::MARKERS
            .iter()
            .find(|(name, _)| is_set(name))
            .map(|(_, host)| *host)
    }

    pub fn name(self) -> &'static str {
        match self {
            Host::Heroku => "Heroku (or Dokku)",
            Host::Render => "Render",
            Host::Railway => "Railway",
            Host::Fly => "Fly.io",
            Host::AzureAppService => "Azure App Service",
        }
    }

    /// How to keep data on this host's disk, for the refusal's advice.
    fn volume_advice(self) -> &'static str {
        match self {
            Host::Heroku => "or on Dokku mount storage at DATA_DIR (dokku storage:mount)",
            Host::Render => "attach a disk at DATA_DIR",
            Host::Railway | Host::Fly => "mount a volume at DATA_DIR",
            Host::AzureAppService => {
                "keep DATA_DIR under /home with WEBSITES_ENABLE_APP_SERVICE_STORAGE=true"
            }
        }
    }
}

/// Refuses a database or blob store on a disk the host throws away. `PERSISTENT_DISK`, when
/// set, overrides the detection.
pub fn check_storage_is_kept(config: &Config) -> Result<(), ConfigError> {
    let host = config.host_platform;
    match config.persistent_disk {
        Some(true) => return Ok(()),
        None if host.is_none() => return Ok(()),
        _ => {}
    }
    let mounts = Mounts::read();
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    // Told outright that the disk is not kept, a volume is not looked for.
    let kept = |path: &Path| config.persistent_disk.is_none() && mounts.on_volume(path, &cwd);
    let place = match host {
        Some(host) => format!("the local disk of this {} instance", host.name()),
        None => "a disk that PERSISTENT_DISK=false says is not kept".to_owned(),
    };
    let volume = host.map_or(String::new(), |h| format!("{}, ", h.volume_advice()));
    let fix = "or set PERSISTENT_DISK=true if this disk is kept";
    if let DatabaseUrl::Sqlite { path } = &config.database
        && !kept(path)
    {
        return Err(ConfigError::about(
            "DATABASE_URL",
            format!(
                "keeps the database in {} on {place}, which is thrown away at every restart: every book and token would be lost. Point DATABASE_URL at PostgreSQL, {volume}{fix}",
                path.display()
            ),
        ));
    }
    if let BlobUrl::File { root } = &config.blob
        && !kept(root)
    {
        return Err(ConfigError::about(
            "BLOB_URL",
            format!(
                "keeps the books' files in {} on {place}, which is thrown away at every restart. Point BLOB_URL at az://CONTAINER or s3://BUCKET, {volume}{fix}",
                root.display()
            ),
        ));
    }
    Ok(())
}

/// The mount points of this process's mount namespace.
struct Mounts(Vec<PathBuf>);

impl Mounts {
    fn read() -> Self {
        let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        Self(text.lines().filter_map(mount_point).collect())
    }

    /// Whether `path` lies on a mounted volume: its nearest mount point is neither the root
    /// filesystem nor one that holds the working directory (the app's own, thrown-away tree;
    /// on some hosts that is a mount of its own).
    fn on_volume(&self, path: &Path, cwd: &Path) -> bool {
        let path = resolve(&absolute(path, cwd));
        let nearest = self
            .0
            .iter()
            .filter(|mount| path.starts_with(mount))
            .max_by_key(|mount| mount.components().count());
        match nearest {
            None => false,
            Some(mount) => mount != Path::new("/") && !cwd.starts_with(mount),
        }
    }
}

/// The fifth field of a `/proc/self/mountinfo` line, with its octal escapes (`\040` for a
/// space) undone.
fn mount_point(line: &str) -> Option<PathBuf> {
    let raw = line.split(' ').nth(4)?;
    let mut out = Vec::with_capacity(raw.len());
    let bytes = raw.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && i + 3 < bytes.len()
            && let Ok(code) = u8::from_str_radix(&raw[i + 1..i + 4], 8)
        {
            out.push(code);
            i += 4;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    Some(PathBuf::from(String::from_utf8_lossy(&out).into_owned()))
}

fn absolute(path: &Path, cwd: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    }
}

/// The path with its existing part's symbolic links resolved (a volume is often reached
/// through one); the part that does not exist yet is kept as written.
fn resolve(path: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut existing = Some(path);
    while let Some(p) = existing {
        if let Ok(real) = p.canonicalize() {
            return rest.iter().rev().fold(real, |acc, part| acc.join(part));
        }
        if let Some(name) = p.file_name() {
            rest.push(name.to_owned());
        }
        existing = p.parent();
    }
    path.to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_told_by_their_variables() {
        assert_eq!(Host::detect(|n| n == "DYNO"), Some(Host::Heroku));
        assert_eq!(
            Host::detect(|n| n == "WEBSITE_SITE_NAME"),
            Some(Host::AzureAppService)
        );
        assert_eq!(Host::detect(|_| false), None);
    }

    #[test]
    fn mount_points_are_unescaped() {
        let line = r"36 35 98:0 /mnt1 /mnt/my\040volume rw,noatime master:1 - ext3 /dev/root rw";
        assert_eq!(
            mount_point(line).as_deref(),
            Some(Path::new("/mnt/my volume"))
        );
    }

    #[test]
    fn a_volume_is_a_mount_below_the_root_that_does_not_hold_the_app() {
        let mounts = Mounts(vec![
            PathBuf::from("/"),
            PathBuf::from("/app"),
            PathBuf::from("/data"),
        ]);
        let cwd = Path::new("/app");
        assert!(mounts.on_volume(Path::new("/data/blobs"), cwd));
        assert!(!mounts.on_volume(Path::new("/app/data/bindery.db"), cwd));
        assert!(!mounts.on_volume(Path::new("data/bindery.db"), cwd));
        assert!(!mounts.on_volume(Path::new("/var/lib/bindery"), cwd));
    }
}
