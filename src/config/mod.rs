//! The whole configuration, parsed once from the environment into one typed struct.
//!
//! Every variable Bindery reads is declared once, in [`variables`]: its name, type, default,
//! documentation and whether it is secret. The README's table, `--help` and `bindery config`
//! are made from those declarations. A bad value stops the process with exit code 2 and one
//! line that names the variable, says what is wrong and gives an example.
//!
//! - [`variable`]: what a declaration is, and the macro that declares them;
//! - [`values`]: the parsers of values (durations, sizes, rates, cron expressions…);
//! - `database`, `blob`, `azure`: the variables that combine into one value;
//! - this module: [`Config`], which puts them together.

mod azure;
mod blob;
mod combined;
pub mod cron;
mod database;
mod error;
mod failpoint;
mod limits;
pub mod platform;
#[cfg(test)]
mod readme;
mod secret;
pub mod values;
pub mod variable;
pub mod variables;

use std::path::{Path, PathBuf};

use url::Url;

pub use azure::{AzureConfig, ManagedIdentity};
pub use blob::{BlobUrl, S3Config};
pub use database::{DatabaseUrl, SYSTEM_ROOTS};
pub use error::ConfigError;
pub use failpoint::{Death, Failpoint, Moment};
pub use limits::Limits;
pub use secret::{Secret, redact_url, redact_urls};
pub use values::{LogFormat, RateLimit};
pub use variable::{Env, Var, Variable};
pub use variables::{Settings, VARIABLES};

use variables::{
    APP_URL, DATA_DIR, KEEPALIVE_URL, LOG_DIR, MAX_BOOK_ELEMENTS, MAX_BOOK_WORDS,
    MAX_CHAPTER_WORDS, MAX_CHAPTERS, MAX_IMAGE_PIXELS, MAX_INFLATED_SIZE, MAX_MANUSCRIPT_SIZE,
    MAX_ZIP_ENTRIES, WEBSITE_HOSTNAME, WEBSITES_ENABLE_APP_SERVICE_STORAGE, WORKER_MEMORY_BUDGET,
};

/// `DATA_DIR`'s default on Azure App Service with its storage on
/// (`WEBSITES_ENABLE_APP_SERVICE_STORAGE=true`): under the `/home` share, the one directory kept
/// across restarts.
pub const AZURE_DATA_DIR: &str = "/home/bindery";

/// Where log files go under `DATA_DIR` when `LOG_DIR` does not say.
const DEFAULT_LOG_DIR: &str = "logs";

/// The effective configuration of one process: the variables that stand alone ([`Settings`],
/// which it dereferences to: `config.port`), and the values others combine into.
#[derive(Debug, Clone)]
pub struct Config {
    pub settings: Settings,
    pub data_dir: PathBuf,
    pub database: DatabaseUrl,
    pub blob: BlobUrl,
    pub azure: AzureConfig,
    /// `None`: no log files (`LOG_DIR` empty or `off`).
    pub log_dir: Option<PathBuf>,
    /// The app host the environment names, whose local disk is thrown away.
    pub host_platform: Option<crate::config::platform::Host>,
    pub keepalive_url: Option<Url>,
    /// Where users reach this app (`APP_URL`, or Azure's `WEBSITE_HOSTNAME`): the base of the
    /// links that leave it (webhook events).
    pub public_url: Option<Url>,
    pub limits: Limits,
}

impl std::ops::Deref for Config {
    type Target = Settings;

    fn deref(&self) -> &Settings {
        &self.settings
    }
}

/// The result of reading the environment: the configuration, and warnings to log once logging
/// is up (unknown `BINDERY_*` names).
#[derive(Debug)]
pub struct Loaded {
    pub config: Config,
    pub warnings: Vec<String>,
}

impl Config {
    /// Reads the process environment (after `.env`, which `main` loads first).
    pub fn from_env() -> Result<Loaded, ConfigError> {
        Self::from_vars(std::env::vars_os().filter_map(|(k, v)| {
            // A name or value that is not UTF-8 cannot be one of ours; a bad value of ours is
            // reported as such below.
            let k = k.into_string().ok()?;
            let v = v
                .into_string()
                .unwrap_or_else(|v| v.to_string_lossy().into_owned());
            Some((k, v))
        }))
    }

    /// Parses a set of variables. Pure, so that every rule has a unit test.
    pub fn from_vars(
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Loaded, ConfigError> {
        let env = Env::new(vars);
        let settings = Settings::read(&env)?;
        single_sign_on_complete(&settings)?;

        let host_platform = crate::config::platform::Host::detect(|name| env.is_set(name));
        // App Service keeps only its /home share across restarts, and mounts it in a custom
        // container only with its storage setting on. Off, /home is the container's own disk,
        // which the image's user cannot write, and the image's ./data is the better default
        // (with PostgreSQL and Azure Blob only the log files go there).
        let app_service_storage = WEBSITES_ENABLE_APP_SERVICE_STORAGE.read(&env)?;
        let data_dir = if env.raw(&DATA_DIR.variable).is_none()
            && host_platform == Some(crate::config::platform::Host::AzureAppService)
            && app_service_storage
        {
            PathBuf::from(AZURE_DATA_DIR)
        } else {
            DATA_DIR.read(&env)?
        };
        let database = combined::database(&env, &data_dir)?;
        let blob = combined::blob(&env, &data_dir)?;
        let azure = combined::azure(&env, matches!(blob, BlobUrl::Azure { .. }))?;
        // Blank counts as unset for every other variable; here it is how files are turned off.
        let log_dir = match env.given_blank(&LOG_DIR.variable) {
            true => None,
            false if env.raw(&LOG_DIR.variable) == Some("off") => None,
            false => Some(
                LOG_DIR
                    .read(&env)?
                    .unwrap_or_else(|| data_dir.join(DEFAULT_LOG_DIR)),
            ),
        };
        let public_url = match (APP_URL.read(&env)?, env.raw(&WEBSITE_HOSTNAME.variable)) {
            (Some(url), _) => Some(url),
            (None, Some(host)) => {
                let url = format!("https://{host}");
                Some(values::http_url(&url).map_err(|problem| {
                    ConfigError::new(&WEBSITE_HOSTNAME.variable, &url, problem)
                })?)
            }
            (None, None) => None,
        };
        let keepalive_url = KEEPALIVE_URL.read(&env)?.or_else(|| public_url.clone());
        let limits = Limits {
            max_manuscript_bytes: MAX_MANUSCRIPT_SIZE.read(&env)?,
            max_inflated_bytes: MAX_INFLATED_SIZE.read(&env)?,
            max_zip_entries: MAX_ZIP_ENTRIES.read(&env)?,
            max_image_pixels: MAX_IMAGE_PIXELS.read(&env)?,
            max_image_bytes: WORKER_MEMORY_BUDGET.read(&env)? / 2,
            max_words: MAX_BOOK_WORDS.read(&env)?,
            max_elements: MAX_BOOK_ELEMENTS.read(&env)?,
            max_chapter_words: MAX_CHAPTER_WORDS.read(&env)?,
            max_chapters: MAX_CHAPTERS.read(&env)?,
        };

        let mut warnings: Vec<String> = env
            .names()
            .filter(|k| k.starts_with("BINDERY_") && !VARIABLES.iter().any(|v| v.name == *k))
            .map(unknown_variable_warning)
            .collect();
        if host_platform == Some(crate::config::platform::Host::AzureAppService)
            && let DatabaseUrl::Sqlite { path } = &database
            && path.starts_with("/home")
        {
            warnings.push(format!(
                "DATABASE_URL keeps SQLite in {} on App Service's /home network share: safe for one instance only; scale out with PostgreSQL",
                path.display()
            ));
        }

        Ok(Loaded {
            config: Config {
                settings,
                data_dir,
                database,
                blob,
                azure,
                log_dir,
                host_platform,
                keepalive_url,
                public_url,
                limits,
            },
            warnings,
        })
    }

    /// Creates the directories Bindery writes (the SQLite database's, the `file://` blob
    /// store's, `LOG_DIR`) and proves they can be written, so a read-only volume is reported
    /// at start-up rather than at first upload. `DATA_DIR` itself is checked only when
    /// something is kept under it: with PostgreSQL and a cloud blob store it may be read-only
    /// (a host that runs the image as a user of its own, not the one that owns `/data`).
    /// Log files at their default place that cannot be written are turned off, with the
    /// warning returned: stdout still carries every line. A `LOG_DIR` given that cannot be
    /// written is an error.
    pub fn prepare_directories(&mut self) -> Result<Vec<String>, ConfigError> {
        let under_data_dir = |path: &Path| path.starts_with(&self.data_dir);
        let kept_there = matches!(&self.database, DatabaseUrl::Sqlite { path } if under_data_dir(path))
            || matches!(&self.blob, BlobUrl::File { root } if under_data_dir(root));
        if kept_there {
            ensure_writable(&DATA_DIR.variable, &self.data_dir)?;
        }
        if let DatabaseUrl::Sqlite { path } = &self.database
            && let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty())
        {
            ensure_writable(&variables::DATABASE_URL.variable, parent)?;
        }
        if let BlobUrl::File { root } = &self.blob {
            ensure_writable(&variables::BLOB_URL.variable, root)?;
        }
        let mut warnings = Vec::new();
        if let Some(log_dir) = &self.log_dir
            && let Err(e) = ensure_writable(&LOG_DIR.variable, log_dir)
        {
            if *log_dir != self.data_dir.join(DEFAULT_LOG_DIR) {
                return Err(e);
            }
            warnings.push(format!(
                "log files are off: their default directory {} {}; stdout carries every line. \
                 Set LOG_DIR to a directory this user can write, or LOG_DIR= to keep them off \
                 without this warning",
                log_dir.display(),
                e.problem
            ));
            self.log_dir = None;
        }
        Ok(warnings)
    }

    /// The effective configuration as `NAME=value` pairs, in the README's order, secrets
    /// redacted; variables folded into another's value are left out.
    pub fn describe(&self) -> Vec<(&'static str, String)> {
        VARIABLES
            .iter()
            .filter_map(|v| v.shown.map(|shown| (v.name, shown(self))))
            .collect()
    }

    /// The `s3://` store's settings, if that is the blob store.
    fn s3(&self) -> Option<&S3Config> {
        match &self.blob {
            BlobUrl::S3 { s3, .. } => Some(s3),
            _ => None,
        }
    }
}

fn ensure_writable(variable: &Variable, dir: &Path) -> Result<(), ConfigError> {
    let shown = dir.display().to_string();
    let fail = |e: std::io::Error| {
        ConfigError::new(
            variable,
            &shown,
            format!("is not a writable directory ({e}); point it at one this user can write"),
        )
    };
    std::fs::create_dir_all(dir).map_err(fail)?;
    let probe = dir.join(format!(".bindery-write-test-{}", std::process::id()));
    std::fs::write(&probe, b"ok").map_err(fail)?;
    std::fs::remove_file(&probe).map_err(fail)?;
    Ok(())
}

fn unknown_variable_warning(name: &str) -> String {
    let bare = name.trim_start_matches("BINDERY_");
    let closest = VARIABLES
        .iter()
        .map(|v| {
            let score = strsim::jaro_winkler(name, v.name).max(strsim::jaro_winkler(bare, v.name));
            (score, v.name)
        })
        .max_by(|a, b| a.0.total_cmp(&b.0));
    match closest {
        Some((score, known)) if score > 0.8 => {
            format!("unknown variable {name} is ignored; did you mean {known}?")
        }
        _ => format!(
            "unknown variable {name} is ignored; `bindery config --help` lists the known ones"
        ),
    }
}

#[cfg(test)]
mod tests;

/// Single sign-on needs its issuer, client id and secret together: one set without the others
/// is a half-done setup, which would otherwise show a button that cannot work.
fn single_sign_on_complete(settings: &Settings) -> Result<(), ConfigError> {
    let set = [
        (
            &variables::OIDC_ISSUER_URL.variable,
            settings.oidc_issuer_url.is_some(),
        ),
        (
            &variables::OIDC_CLIENT_ID.variable,
            settings.oidc_client_id.is_some(),
        ),
        (
            &variables::OIDC_CLIENT_SECRET.variable,
            settings.oidc_client_secret.is_some(),
        ),
    ];
    if set.iter().all(|(_, s)| *s) || set.iter().all(|(_, s)| !*s) {
        return Ok(());
    }
    let (missing, _) = set.iter().find(|(_, s)| !*s).expect("one is unset");
    Err(ConfigError::new(
        missing,
        "",
        "is unset, while another OIDC_ variable is set: single sign-on needs OIDC_ISSUER_URL, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET together",
    ))
}
