//! The whole configuration, parsed once from the environment into one typed struct.
//!
//! Every variable Bindery reads is listed in [`VARIABLES`], which is also what the README's table
//! is checked against and what `bindery config` prints. A bad value stops the process with exit
//! code 2 and one line that names the variable, says what is wrong and gives an example.

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;
use std::num::{NonZeroU32, NonZeroUsize};
use std::path::{Path, PathBuf};
use std::time::Duration;

use url::Url;

/// One environment variable Bindery understands.
#[derive(Debug, Clone, Copy)]
pub struct Variable {
    pub name: &'static str,
    pub default: &'static str,
    pub example: &'static str,
    pub secret: bool,
    pub help: &'static str,
}

const fn var(
    name: &'static str,
    default: &'static str,
    example: &'static str,
    help: &'static str,
) -> Variable {
    Variable {
        name,
        default,
        example,
        secret: false,
        help,
    }
}

const fn secret(
    name: &'static str,
    default: &'static str,
    example: &'static str,
    help: &'static str,
) -> Variable {
    Variable {
        name,
        default,
        example,
        secret: true,
        help,
    }
}

/// Every variable Bindery reads. Add new ones here; the README test keeps the docs in step.
pub const VARIABLES: &[Variable] = &[
    var(
        "PORT",
        "8080",
        "8080",
        "TCP port the web server listens on (0 picks a free port).",
    ),
    var(
        "HOST",
        "0.0.0.0",
        "127.0.0.1",
        "Address the web server binds to.",
    ),
    var(
        "DATA_DIR",
        "./data",
        "/var/lib/bindery",
        "Directory for the embedded database, blobs and logs. Must be writable. On Azure App Service the default is `/home/bindery`, on the share kept across restarts.",
    ),
    secret(
        "DATABASE_URL",
        "sqlite://$DATA_DIR/bindery.db",
        "postgres://bindery:secret@db.internal:5432/bindery",
        "Database: `sqlite://PATH` (embedded default) or `postgres://…` to scale out.",
    ),
    var(
        "PGSSLMODE",
        "prefer",
        "require",
        "libpq's TLS mode for PostgreSQL when `DATABASE_URL` has no `sslmode` (for hosts that own `DATABASE_URL`): `disable`, `prefer` (TLS when the server offers it), `require`, `verify-ca` or `verify-full`.",
    ),
    var(
        "PGSSLROOTCERT",
        "",
        "/etc/ssl/certs/db-ca.pem",
        "PEM file of the CA that issued the PostgreSQL server's certificate, or `system` for the system's roots, when `DATABASE_URL` has no `sslrootcert`.",
    ),
    var(
        "BLOB_URL",
        "file://$DATA_DIR/blobs",
        "az://manuscripts",
        "Blob store: `file://DIR` (default) or `az://CONTAINER` (Azure Blob Storage).",
    ),
    var(
        "AZURE_STORAGE_ACCOUNT_NAME",
        "",
        "bindery",
        "Azure storage account for `az://` blob URLs.",
    ),
    secret(
        "AZURE_STORAGE_ACCOUNT_KEY",
        "",
        "base64 key from the Azure portal",
        "Access key of that account.",
    ),
    var(
        "AZURE_STORAGE_USE_EMULATOR",
        "false",
        "true",
        "Talk to the Azurite emulator on loopback instead of Azure (tests, development).",
    ),
    var(
        "AZURE_STORAGE_ENDPOINT",
        "https://$AZURE_STORAGE_ACCOUNT_NAME.blob.core.windows.net",
        "http://127.0.0.1:10000/devstoreaccount1",
        "Blob service URL, for other Azure clouds or an Azurite elsewhere (http is allowed).",
    ),
    var(
        "LOG_DIR",
        "$DATA_DIR/logs",
        "/var/log/bindery",
        "Directory for daily-rolling log files, one set per role (web, worker).",
    ),
    var(
        "LOG_FORMAT",
        "text",
        "json",
        "Log line format on stdout and in files: `text` or `json`.",
    ),
    var(
        "LOG_MAX_FILES",
        "7",
        "14",
        "How many daily log files to keep per role.",
    ),
    var(
        "RUST_LOG",
        "info",
        "info,bindery=debug",
        "Log filter, in `tracing-subscriber` EnvFilter syntax.",
    ),
    var(
        "WORKER_CONCURRENCY",
        "16",
        "32",
        "How many jobs one worker process runs at once.",
    ),
    var(
        "DATABASE_MAX_CONNECTIONS",
        "20",
        "18",
        "Most PostgreSQL connections one process opens; with `serve`, the web process and its worker together (the web a quarter, 2 to 8; the worker the rest). Fits entry-level managed plans; give each process its share of the plan's limit.",
    ),
    var(
        "MAX_WAIT",
        "25s",
        "25s",
        "Longest a `POST /api/v1/books?wait=` request is held before it answers 202; under the 30 s that Heroku's and most routers allow.",
    ),
    var(
        "PERSISTENT_DISK",
        "detected",
        "true",
        "Whether the local disk outlives a restart. Unset, it is detected: on Heroku, Dokku, Render, Railway, Fly.io and Azure App Service a data directory outside a mounted volume is thrown away, and a database or blob store there is refused at start. `true` or `false` says so instead.",
    ),
    var(
        "SHUTDOWN_TIMEOUT",
        "25s",
        "25s",
        "How long SIGTERM/SIGINT waits for requests and jobs to finish before forcing exit.",
    ),
    var(
        "WORKER_STALL_TIMEOUT",
        "60s",
        "60s",
        "A worker whose heartbeat is older than this counts as dead (also the /readyz bound).",
    ),
    var(
        "JOB_LEASE",
        "30s",
        "30s",
        "How long a claimed job is held without a heartbeat; a dead worker's jobs run again after this.",
    ),
    var(
        "JOB_RETENTION",
        "7d",
        "14d",
        "Finished jobs are deleted after this long (dead jobs are kept for a person to retry).",
    ),
    var(
        "SCHEDULE_PRUNE_JOBS",
        "0 17 * * * *",
        "off",
        "Cron expression (5 or 6 fields, UTC) for pruning finished jobs, or `off`.",
    ),
    var(
        "SCHEDULE_CATALOG_REFRESH",
        "0 */15 * * * *",
        "off",
        "Cron expression (5 or 6 fields, UTC) for rebuilding every tenant's OPDS and JSON catalog, or `off` (publishing and deleting a book still refresh it).",
    ),
    var(
        "SCHEDULE_SWEEP_BLOBS",
        "0 43 3 * * *",
        "off",
        "Cron expression (5 or 6 fields, UTC) for deleting files of books that do not exist (uploads cut off by a crash), or `off`.",
    ),
    var(
        "MAX_MANUSCRIPT_SIZE",
        "100MiB",
        "20MiB",
        "Largest manuscript (or cover) accepted, as uploaded.",
    ),
    var(
        "MAX_INFLATED_SIZE",
        "512MiB",
        "256MiB",
        "Most a DOCX may inflate to, in total and per entry (zip bomb guard; actual bytes are counted, not the declared sizes).",
    ),
    var(
        "MAX_ZIP_ENTRIES",
        "10000",
        "2000",
        "Most entries a DOCX archive may have.",
    ),
    var(
        "MAX_IMAGE_PIXELS",
        "50000000",
        "25000000",
        "Most pixels (width × height) any image may decode to.",
    ),
    var(
        "DEFAULT_LANGUAGE",
        "en",
        "en-GB",
        "BCP 47 language of books whose manuscript and upload name none.",
    ),
    var(
        "RATE_LIMIT_WRITES",
        "60/min",
        "600/h",
        "Uploads, deletes and retries allowed per API token (`N/s`, `N/min`, `N/h`, or `off`), per web process.",
    ),
    secret(
        "METRICS_TOKEN",
        "",
        "3f9c1b7e5a2d4c6b8e0f1a3c5e7b9d2f",
        "When set, `/metrics` answers only `Authorization: Bearer $METRICS_TOKEN` (Prometheus: `authorization: {credentials: …}`); unset, anyone who can reach it can read it (queue names and counts, no book data). At least 16 characters.",
    ),
    var(
        "WEBHOOK_ALLOW_PRIVATE",
        "false",
        "true",
        "Let webhooks reach loopback, private, link-local and other non-public addresses (off by default, so a callback URL cannot probe the host's network).",
    ),
    var(
        "BINDERY_FAILPOINT",
        "",
        "after_commit:book.parse",
        "Testing only: `before_commit:JOB` or `after_commit:JOB` makes the worker SIGKILL itself at that point, once.",
    ),
    var(
        "KEEPALIVE_URL",
        "from APP_URL or WEBSITE_HOSTNAME, else off",
        "https://books.example.com",
        "Public URL of this app; the web process requests `$KEEPALIVE_URL/healthz` so idle-stopping hosts keep it running.",
    ),
    var(
        "KEEPALIVE_INTERVAL",
        "5m",
        "5m",
        "How often the keep-alive request is made (±10% jitter).",
    ),
    var(
        "APP_URL",
        "",
        "https://books.example.com",
        "Public URL of this app: links in webhook events are absolute under it, and it is the keep-alive default when KEEPALIVE_URL is unset.",
    ),
    var(
        "DYNO",
        "",
        "web.1",
        "Set by Heroku and Dokku: the local disk is thrown away at restarts (see PERSISTENT_DISK).",
    ),
    var(
        "RENDER",
        "",
        "true",
        "Set by Render: the local disk is thrown away at restarts unless a disk is attached (see PERSISTENT_DISK).",
    ),
    var(
        "RAILWAY_PROJECT_ID",
        "",
        "1b2c…",
        "Set by Railway: the local disk is thrown away at restarts unless a volume is mounted (see PERSISTENT_DISK).",
    ),
    var(
        "FLY_APP_NAME",
        "",
        "bindery",
        "Set by Fly.io: the local disk is thrown away at restarts unless a volume is mounted (see PERSISTENT_DISK).",
    ),
    var(
        "WEBSITE_SITE_NAME",
        "",
        "bindery",
        "Set by Azure App Service: DATA_DIR defaults to /home/bindery, the share kept across restarts (see PERSISTENT_DISK).",
    ),
    var(
        "WEBSITE_HOSTNAME",
        "",
        "bindery.azurewebsites.net",
        "Set by Azure App Service; `https://$WEBSITE_HOSTNAME` stands in for APP_URL when that is unset.",
    ),
];

/// A value that must never reach a log line or a terminal by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret<T>(T);

impl<T> Secret<T> {
    pub fn new(value: T) -> Self {
        Self(value)
    }

    /// The secret itself, for the one place that needs it (a connection, a signature).
    pub fn expose(&self) -> &T {
        &self.0
    }
}

impl<T> fmt::Debug for Secret<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

/// Where the database lives.
#[derive(Debug, Clone)]
pub enum DatabaseUrl {
    Sqlite { path: PathBuf },
    Postgres { url: Secret<Url> },
}

impl DatabaseUrl {
    /// A form safe to print: the password is replaced.
    pub fn redacted(&self) -> String {
        match self {
            DatabaseUrl::Sqlite { path } => format!("sqlite://{}", path.display()),
            DatabaseUrl::Postgres { url } => redact_url(url.expose()),
        }
    }
}

/// Where blobs (uploads, intermediate documents, EPUBs) live.
#[derive(Debug, Clone)]
pub enum BlobUrl {
    File { root: PathBuf },
    Azure { container: String },
}

impl fmt::Display for BlobUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BlobUrl::File { root } => write!(f, "file://{}", root.display()),
            BlobUrl::Azure { container } => write!(f, "az://{container}"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

/// Credentials for `az://` blob URLs. Kept here so that nothing else reads the environment.
#[derive(Debug, Clone, Default)]
pub struct AzureConfig {
    pub account: Option<String>,
    pub access_key: Option<Secret<String>>,
    pub use_emulator: bool,
    /// The blob service's URL, when it is not the public cloud's default for the account.
    pub endpoint: Option<url::Url>,
}

/// The effective configuration of one process.
#[derive(Debug, Clone)]
pub struct Config {
    pub host: IpAddr,
    pub port: u16,
    pub data_dir: PathBuf,
    pub database: DatabaseUrl,
    pub blob: BlobUrl,
    pub azure: AzureConfig,
    pub log_dir: PathBuf,
    pub log_format: LogFormat,
    pub log_max_files: usize,
    pub log_filter: String,
    pub worker_concurrency: NonZeroUsize,
    /// PostgreSQL connections one process may open (`storage::budget` shares them out).
    pub database_max_connections: u32,
    /// The longest `?wait=` holds a request.
    pub max_wait: Duration,
    /// `PERSISTENT_DISK`: `None` is "detect".
    pub persistent_disk: Option<bool>,
    /// The app host the environment names, whose local disk is thrown away.
    pub host_platform: Option<crate::platform::Host>,
    pub shutdown_timeout: Duration,
    pub worker_stall_timeout: Duration,
    pub keepalive_url: Option<Url>,
    /// Where users reach this app (`APP_URL`, or Azure's `WEBSITE_HOSTNAME`): the base of the
    /// links that leave it (webhook events).
    pub public_url: Option<Url>,
    pub keepalive_interval: Duration,
    pub job_lease: Duration,
    pub job_retention: Duration,
    pub schedules: ScheduleConfig,
    pub limits: crate::manuscript::Limits,
    /// A valid BCP 47 tag.
    pub default_language: String,
    pub failpoint: Option<crate::jobs::Failpoint>,
    /// Writes allowed per token: how many, per how long. `None` is off.
    pub rate_limit_writes: Option<RateLimit>,
    /// Webhooks may go to non-public addresses (tests, private deployments).
    pub webhook_allow_private: bool,
    /// What a scraper must send to read `/metrics`; `None` leaves it open.
    pub metrics_token: Option<Secret<String>>,
}

/// `N` requests per `period`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    pub requests: NonZeroU32,
    pub period: Duration,
}

impl fmt::Display for RateLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = match self.period.as_secs() {
            1 => "s",
            60 => "min",
            _ => "h",
        };
        write!(f, "{}/{unit}", self.requests)
    }
}

/// Cron expressions of the built-in schedules; `None` is switched off.
#[derive(Debug, Clone)]
pub struct ScheduleConfig {
    pub prune_jobs: Option<String>,
    pub catalog_refresh: Option<String>,
    pub sweep_blobs: Option<String>,
}

/// A variable with a value Bindery cannot use. Displays as the one line the user sees.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name}{shown} {problem} (example: {name}={example})")]
pub struct ConfigError {
    pub name: &'static str,
    /// `="value"`, or nothing when the problem is not the value as written.
    shown: String,
    problem: String,
    example: &'static str,
}

impl ConfigError {
    fn new(name: &'static str, value: &str, problem: impl Into<String>) -> Self {
        let variable = lookup(name);
        let shown = if variable.secret {
            "=[redacted]".to_owned()
        } else {
            format!("={value:?}")
        };
        Self {
            name,
            shown,
            problem: problem.into(),
            example: variable.example,
        }
    }

    /// A problem with what a variable leads to rather than how it is written (a database that
    /// refuses the connection it describes, a disk the platform throws away): `problem` starts
    /// right after the name, as in "DATABASE_URL names a database that does not exist".
    pub fn about(name: &'static str, problem: impl Into<String>) -> Self {
        Self {
            name,
            shown: String::new(),
            problem: problem.into(),
            example: lookup(name).example,
        }
    }
}

fn lookup(name: &str) -> &'static Variable {
    VARIABLES
        .iter()
        .find(|v| v.name == name)
        .unwrap_or_else(|| panic!("{name} is missing from config::VARIABLES"))
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
        let env: BTreeMap<String, String> = vars.into_iter().collect();
        let get = |name: &'static str| -> Option<&str> {
            debug_assert!(
                VARIABLES.iter().any(|v| v.name == name),
                "{name} undeclared"
            );
            env.get(name).map(|s| s.trim()).filter(|s| !s.is_empty())
        };

        let port = match get("PORT") {
            None => 8080,
            Some(v) => v.parse::<u16>().map_err(|_| {
                ConfigError::new(
                    "PORT",
                    v,
                    "is not a TCP port: use a whole number from 0 to 65535",
                )
            })?,
        };
        let host = match get("HOST") {
            None => IpAddr::from([0, 0, 0, 0]),
            Some(v) => v
                .parse()
                .map_err(|_| ConfigError::new("HOST", v, "is not an IP address to bind to"))?,
        };
        let host_platform = crate::platform::Host::detect(|name| get(name).is_some());
        // App Service keeps only its /home share across restarts.
        let data_dir = PathBuf::from(get("DATA_DIR").unwrap_or(
            if host_platform == Some(crate::platform::Host::AzureAppService) {
                AZURE_DATA_DIR
            } else {
                "./data"
            },
        ));
        let database = match get("DATABASE_URL") {
            None => DatabaseUrl::Sqlite {
                path: data_dir.join("bindery.db"),
            },
            Some(v) => parse_database_url(v)?,
        };
        let database = with_libpq_tls_defaults(database, get("PGSSLMODE"), get("PGSSLROOTCERT"))?;
        let blob = match get("BLOB_URL") {
            None => BlobUrl::File {
                root: data_dir.join("blobs"),
            },
            Some(v) => parse_blob_url(v)?,
        };
        let azure = AzureConfig {
            account: get("AZURE_STORAGE_ACCOUNT_NAME").map(str::to_owned),
            access_key: get("AZURE_STORAGE_ACCOUNT_KEY").map(|k| Secret::new(k.to_owned())),
            use_emulator: match get("AZURE_STORAGE_USE_EMULATOR") {
                None => false,
                Some(v) => parse_bool("AZURE_STORAGE_USE_EMULATOR", v)?,
            },
            endpoint: match get("AZURE_STORAGE_ENDPOINT") {
                None => None,
                Some(v) => Some(parse_endpoint(v)?),
            },
        };
        if matches!(blob, BlobUrl::Azure { .. }) && azure.account.is_none() && !azure.use_emulator {
            return Err(ConfigError::new(
                "AZURE_STORAGE_ACCOUNT_NAME",
                "",
                "must be set when BLOB_URL is az://… (or set AZURE_STORAGE_USE_EMULATOR=true)",
            ));
        }
        let log_dir = get("LOG_DIR").map_or_else(|| data_dir.join("logs"), PathBuf::from);
        let log_format = match get("LOG_FORMAT").map(str::to_ascii_lowercase).as_deref() {
            None | Some("text") => LogFormat::Text,
            Some("json") => LogFormat::Json,
            Some(_) => {
                return Err(ConfigError::new(
                    "LOG_FORMAT",
                    get("LOG_FORMAT").unwrap_or_default(),
                    "is not a log format: use `text` or `json`",
                ));
            }
        };
        let log_max_files = positive("LOG_MAX_FILES", get("LOG_MAX_FILES"), 7)?.get();
        let log_filter = get("RUST_LOG").unwrap_or("info").to_owned();
        if let Err(e) = tracing_subscriber::EnvFilter::try_new(&log_filter) {
            return Err(ConfigError::new(
                "RUST_LOG",
                &log_filter,
                format!("is not a valid log filter ({e})"),
            ));
        }
        let worker_concurrency = positive("WORKER_CONCURRENCY", get("WORKER_CONCURRENCY"), 16)?;
        let database_max_connections = positive(
            "DATABASE_MAX_CONNECTIONS",
            get("DATABASE_MAX_CONNECTIONS"),
            20,
        )?
        .get();
        let database_max_connections = u32::try_from(database_max_connections).map_err(|_| {
            ConfigError::new(
                "DATABASE_MAX_CONNECTIONS",
                get("DATABASE_MAX_CONNECTIONS").unwrap_or_default(),
                "is more connections than any server allows",
            )
        })?;
        let max_wait = duration("MAX_WAIT", get("MAX_WAIT"), 25)?;
        if max_wait > Duration::from_secs(3600) {
            return Err(ConfigError::new(
                "MAX_WAIT",
                get("MAX_WAIT").unwrap_or_default(),
                "is longer than any router holds a request: use at most 1h (25s suits most hosts)",
            ));
        }
        let persistent_disk = match get("PERSISTENT_DISK") {
            None => None,
            Some(v) if v.eq_ignore_ascii_case("detected") => None,
            Some(v) => Some(parse_bool("PERSISTENT_DISK", v)?),
        };
        let shutdown_timeout = duration("SHUTDOWN_TIMEOUT", get("SHUTDOWN_TIMEOUT"), 25)?;
        let worker_stall_timeout =
            duration("WORKER_STALL_TIMEOUT", get("WORKER_STALL_TIMEOUT"), 60)?;
        let keepalive_interval = duration("KEEPALIVE_INTERVAL", get("KEEPALIVE_INTERVAL"), 300)?;
        let public_url = match (get("APP_URL"), get("WEBSITE_HOSTNAME")) {
            (Some(v), _) => Some(parse_http_url("APP_URL", v)?),
            (None, Some(host)) => Some(parse_http_url(
                "WEBSITE_HOSTNAME",
                &format!("https://{host}"),
            )?),
            (None, None) => None,
        };
        let keepalive_url = match get("KEEPALIVE_URL") {
            Some(v) => Some(parse_http_url("KEEPALIVE_URL", v)?),
            None => public_url.clone(),
        };

        let job_lease = duration("JOB_LEASE", get("JOB_LEASE"), 30)?;
        if job_lease < Duration::from_secs(1) {
            return Err(ConfigError::new(
                "JOB_LEASE",
                get("JOB_LEASE").unwrap_or_default(),
                "is too short: use at least 1s",
            ));
        }
        let job_retention = duration("JOB_RETENTION", get("JOB_RETENTION"), 7 * 24 * 3600)?;
        let schedules = ScheduleConfig {
            prune_jobs: schedule("SCHEDULE_PRUNE_JOBS", get("SCHEDULE_PRUNE_JOBS"))?,
            catalog_refresh: schedule("SCHEDULE_CATALOG_REFRESH", get("SCHEDULE_CATALOG_REFRESH"))?,
            sweep_blobs: schedule("SCHEDULE_SWEEP_BLOBS", get("SCHEDULE_SWEEP_BLOBS"))?,
        };

        let limits = crate::manuscript::Limits {
            max_manuscript_bytes: size("MAX_MANUSCRIPT_SIZE", get("MAX_MANUSCRIPT_SIZE"))?,
            max_inflated_bytes: size("MAX_INFLATED_SIZE", get("MAX_INFLATED_SIZE"))?,
            max_zip_entries: positive("MAX_ZIP_ENTRIES", get("MAX_ZIP_ENTRIES"), 10_000)?.get(),
            max_image_pixels: positive("MAX_IMAGE_PIXELS", get("MAX_IMAGE_PIXELS"), 50_000_000)?
                .get() as u64,
        };
        let default_language = match get("DEFAULT_LANGUAGE") {
            None => crate::ebook::metadata::DEFAULT_LANGUAGE.to_owned(),
            Some(v) => crate::ebook::metadata::normalize_language(v).ok_or_else(|| {
                ConfigError::new("DEFAULT_LANGUAGE", v, "is not a BCP 47 language tag")
            })?,
        };
        let failpoint = match get("BINDERY_FAILPOINT") {
            None => None,
            Some(v) => Some(
                v.parse()
                    .map_err(|e: String| ConfigError::new("BINDERY_FAILPOINT", v, e))?,
            ),
        };

        let rate_limit_writes = rate_limit("RATE_LIMIT_WRITES", get("RATE_LIMIT_WRITES"))?;
        let webhook_allow_private = match get("WEBHOOK_ALLOW_PRIVATE") {
            None => false,
            Some(v) => parse_bool("WEBHOOK_ALLOW_PRIVATE", v)?,
        };

        let metrics_token = match get("METRICS_TOKEN") {
            None | Some("") => None,
            Some(v) if v.chars().count() < 16 => {
                return Err(ConfigError::new(
                    "METRICS_TOKEN",
                    v,
                    "is too short to keep anyone out: use at least 16 characters, e.g. the output of `openssl rand -hex 32`",
                ));
            }
            Some(v) => Some(Secret::new(v.to_owned())),
        };

        let mut warnings: Vec<String> = env
            .keys()
            .filter(|k| k.starts_with("BINDERY_") && !VARIABLES.iter().any(|v| v.name == *k))
            .map(|k| unknown_variable_warning(k))
            .collect();
        if host_platform == Some(crate::platform::Host::AzureAppService)
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
                host,
                port,
                data_dir,
                database,
                blob,
                azure,
                log_dir,
                log_format,
                log_max_files,
                log_filter,
                worker_concurrency,
                database_max_connections,
                max_wait,
                persistent_disk,
                host_platform,
                shutdown_timeout,
                worker_stall_timeout,
                keepalive_url,
                public_url,
                keepalive_interval,
                job_lease,
                job_retention,
                schedules,
                limits,
                default_language,
                failpoint,
                rate_limit_writes,
                webhook_allow_private,
                metrics_token,
            },
            warnings,
        })
    }

    /// Creates `DATA_DIR` and `LOG_DIR` (and the blob directory for `file://`), and proves they
    /// can be written, so a read-only volume is reported at start-up rather than at first upload.
    pub fn prepare_directories(&self) -> Result<(), ConfigError> {
        ensure_writable("DATA_DIR", &self.data_dir)?;
        ensure_writable("LOG_DIR", &self.log_dir)?;
        if let DatabaseUrl::Sqlite { path } = &self.database
            && let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty())
        {
            ensure_writable("DATABASE_URL", parent)?;
        }
        if let BlobUrl::File { root } = &self.blob {
            ensure_writable("BLOB_URL", root)?;
        }
        Ok(())
    }

    /// The effective configuration as `NAME=value` lines, secrets redacted.
    pub fn describe(&self) -> Vec<(&'static str, String)> {
        let d = |d: Duration| humantime::format_duration(d).to_string();
        vec![
            ("PORT", self.port.to_string()),
            ("HOST", self.host.to_string()),
            ("DATA_DIR", self.data_dir.display().to_string()),
            ("DATABASE_URL", self.database.redacted()),
            ("BLOB_URL", self.blob.to_string()),
            (
                "AZURE_STORAGE_ACCOUNT_NAME",
                self.azure.account.clone().unwrap_or_default(),
            ),
            (
                "AZURE_STORAGE_ACCOUNT_KEY",
                match self.azure.access_key {
                    Some(_) => "[redacted]".to_owned(),
                    None => String::new(),
                },
            ),
            (
                "AZURE_STORAGE_USE_EMULATOR",
                self.azure.use_emulator.to_string(),
            ),
            (
                "AZURE_STORAGE_ENDPOINT",
                self.azure
                    .endpoint
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_default(),
            ),
            ("LOG_DIR", self.log_dir.display().to_string()),
            (
                "LOG_FORMAT",
                match self.log_format {
                    LogFormat::Text => "text".to_owned(),
                    LogFormat::Json => "json".to_owned(),
                },
            ),
            ("LOG_MAX_FILES", self.log_max_files.to_string()),
            ("RUST_LOG", self.log_filter.clone()),
            ("WORKER_CONCURRENCY", self.worker_concurrency.to_string()),
            (
                "DATABASE_MAX_CONNECTIONS",
                self.database_max_connections.to_string(),
            ),
            ("MAX_WAIT", d(self.max_wait)),
            (
                "PERSISTENT_DISK",
                self.persistent_disk
                    .map_or_else(|| "detected".to_owned(), |p| p.to_string()),
            ),
            ("SHUTDOWN_TIMEOUT", d(self.shutdown_timeout)),
            ("WORKER_STALL_TIMEOUT", d(self.worker_stall_timeout)),
            (
                "KEEPALIVE_URL",
                self.keepalive_url
                    .as_ref()
                    .map_or_else(|| "(off)".to_owned(), redact_url),
            ),
            ("KEEPALIVE_INTERVAL", d(self.keepalive_interval)),
            (
                "APP_URL",
                self.public_url
                    .as_ref()
                    .map_or_else(String::new, redact_url),
            ),
            ("JOB_LEASE", d(self.job_lease)),
            ("JOB_RETENTION", d(self.job_retention)),
            (
                "SCHEDULE_PRUNE_JOBS",
                self.schedules
                    .prune_jobs
                    .clone()
                    .unwrap_or_else(|| "off".to_owned()),
            ),
            (
                "SCHEDULE_CATALOG_REFRESH",
                self.schedules
                    .catalog_refresh
                    .clone()
                    .unwrap_or_else(|| "off".to_owned()),
            ),
            (
                "SCHEDULE_SWEEP_BLOBS",
                self.schedules
                    .sweep_blobs
                    .clone()
                    .unwrap_or_else(|| "off".to_owned()),
            ),
            (
                "MAX_MANUSCRIPT_SIZE",
                bytesize::ByteSize(self.limits.max_manuscript_bytes).to_string(),
            ),
            (
                "MAX_INFLATED_SIZE",
                bytesize::ByteSize(self.limits.max_inflated_bytes).to_string(),
            ),
            ("MAX_ZIP_ENTRIES", self.limits.max_zip_entries.to_string()),
            ("MAX_IMAGE_PIXELS", self.limits.max_image_pixels.to_string()),
            ("DEFAULT_LANGUAGE", self.default_language.clone()),
            (
                "RATE_LIMIT_WRITES",
                self.rate_limit_writes
                    .map_or_else(|| "off".to_owned(), |r| r.to_string()),
            ),
            (
                "WEBHOOK_ALLOW_PRIVATE",
                self.webhook_allow_private.to_string(),
            ),
            (
                "METRICS_TOKEN",
                match self.metrics_token {
                    Some(_) => "[redacted]".to_owned(),
                    None => String::new(),
                },
            ),
            (
                "BINDERY_FAILPOINT",
                self.failpoint
                    .as_ref()
                    .map_or_else(String::new, ToString::to_string),
            ),
        ]
    }
}

fn parse_database_url(value: &str) -> Result<DatabaseUrl, ConfigError> {
    let problem = "has an unknown scheme: use sqlite://PATH or postgres://USER:PASSWORD@HOST/DB";
    let Some((scheme, rest)) = value.split_once(':') else {
        return Err(ConfigError::new("DATABASE_URL", value, problem));
    };
    match scheme.to_ascii_lowercase().as_str() {
        "sqlite" => {
            // sqlite://relative/path, sqlite:///absolute/path and sqlite:path all name a file;
            // query parameters are ours to set (WAL, busy timeout), so they are not accepted.
            let path = rest.strip_prefix("//").unwrap_or(rest);
            if path.is_empty() || path.contains('?') {
                return Err(ConfigError::new(
                    "DATABASE_URL",
                    value,
                    "must name a database file, with no options: sqlite://PATH",
                ));
            }
            if path == ":memory:" || path.starts_with("file::memory:") {
                return Err(ConfigError::new(
                    "DATABASE_URL",
                    value,
                    "is an in-memory database, which the web and worker processes cannot share: name a file",
                ));
            }
            Ok(DatabaseUrl::Sqlite {
                path: PathBuf::from(path),
            })
        }
        "postgres" | "postgresql" => {
            let url = Url::parse(value).map_err(|e| {
                ConfigError::new("DATABASE_URL", value, format!("is not a valid URL ({e})"))
            })?;
            if url.host_str().is_none_or(str::is_empty) {
                return Err(ConfigError::new(
                    "DATABASE_URL",
                    value,
                    "has no host: postgres://USER:PASSWORD@HOST:5432/DB",
                ));
            }
            check_tls_options(value, &url)?;
            Ok(DatabaseUrl::Postgres {
                url: Secret::new(url),
            })
        }
        _ => Err(ConfigError::new("DATABASE_URL", value, problem)),
    }
}

/// `DATA_DIR`'s default on Azure App Service: under the `/home` share, the one directory kept
/// across restarts.
pub const AZURE_DATA_DIR: &str = "/home/bindery";

/// `sslrootcert=system`: verify the server against the system's CA roots (libpq's spelling).
pub const SYSTEM_ROOTS: &str = "system";

const SSL_MODES: &[&str] = &[
    "disable",
    "allow",
    "prefer",
    "require",
    "verify-ca",
    "verify-full",
];

/// libpq's TLS options in a PostgreSQL URL: a known `sslmode`, and an `sslrootcert` that can be
/// read now rather than at the first connection.
fn check_tls_options(value: &str, url: &Url) -> Result<(), ConfigError> {
    let mut mode = None;
    for (key, v) in url.query_pairs() {
        match &*key {
            "sslmode" | "ssl-mode" => {
                if !SSL_MODES.contains(&&*v) {
                    return Err(ConfigError::new(
                        "DATABASE_URL",
                        value,
                        format!(
                            "has sslmode={v}: use disable, prefer, require, verify-ca or verify-full"
                        ),
                    ));
                }
                mode = Some(v.into_owned());
            }
            "sslrootcert" | "ssl-root-cert" | "ssl-ca" => {
                if let Some(problem) = root_cert_problem(&v) {
                    return Err(ConfigError::new(
                        "DATABASE_URL",
                        value,
                        format!("has sslrootcert={v}, which {problem}"),
                    ));
                }
            }
            _ => {}
        }
    }
    let system = url
        .query_pairs()
        .any(|(k, v)| k == "sslrootcert" && v == SYSTEM_ROOTS);
    if system && mode.as_deref().is_some_and(|m| m != "verify-full") {
        return Err(ConfigError::new(
            "DATABASE_URL",
            value,
            "has sslrootcert=system with a weaker sslmode: use sslmode=verify-full (the default with sslrootcert=system)",
        ));
    }
    Ok(())
}

/// Why a CA file named by `sslrootcert` cannot be used, read now rather than at the first
/// connection; `None` when it can (or when it is `system`).
fn root_cert_problem(path: &str) -> Option<String> {
    if path == SYSTEM_ROOTS {
        return None;
    }
    let problem = match std::fs::read(path) {
        Err(e) => format!("cannot be read ({e})"),
        Ok(pem) if !pem.windows(27).any(|w| w == b"-----BEGIN CERTIFICATE-----") => {
            "holds no PEM certificate".to_owned()
        }
        Ok(_) => return None,
    };
    Some(format!(
        "{problem}: point it at the PEM file of the CA that issued the server's certificate, or use sslrootcert=system"
    ))
}

/// libpq's `PGSSLMODE` and `PGSSLROOTCERT` fill in what `DATABASE_URL` leaves out, for hosts
/// that own `DATABASE_URL` and rewrite it (Heroku rotates its credentials).
fn with_libpq_tls_defaults(
    database: DatabaseUrl,
    mode: Option<&str>,
    root: Option<&str>,
) -> Result<DatabaseUrl, ConfigError> {
    if let Some(mode) = mode
        && !SSL_MODES.contains(&mode)
    {
        return Err(ConfigError::new(
            "PGSSLMODE",
            mode,
            "is not an sslmode: use disable, prefer, require, verify-ca or verify-full",
        ));
    }
    let DatabaseUrl::Postgres { url } = database else {
        return Ok(database);
    };
    let mut url = url.expose().clone();
    let has = |url: &Url, key: &str| url.query_pairs().any(|(k, _)| k == key);
    if let Some(mode) = mode
        && !has(&url, "sslmode")
    {
        url.query_pairs_mut().append_pair("sslmode", mode);
    }
    if let Some(root) = root
        && !has(&url, "sslrootcert")
    {
        url.query_pairs_mut().append_pair("sslrootcert", root);
    }
    if let Some(root) = root
        && let Some(problem) = root_cert_problem(root)
    {
        return Err(ConfigError::new("PGSSLROOTCERT", root, problem));
    }
    check_tls_options(url.as_str(), &url)?;
    Ok(DatabaseUrl::Postgres {
        url: Secret::new(url),
    })
}

fn parse_endpoint(value: &str) -> Result<url::Url, ConfigError> {
    match url::Url::parse(value) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.host().is_some() => Ok(url),
        _ => Err(ConfigError::new(
            "AZURE_STORAGE_ENDPOINT",
            value,
            "is not an http(s) URL of a blob service",
        )),
    }
}

fn parse_blob_url(value: &str) -> Result<BlobUrl, ConfigError> {
    let problem = "has an unknown scheme: use file://DIR or az://CONTAINER";
    let Some((scheme, rest)) = value.split_once("://") else {
        return Err(ConfigError::new("BLOB_URL", value, problem));
    };
    match scheme.to_ascii_lowercase().as_str() {
        "file" if !rest.is_empty() => Ok(BlobUrl::File {
            root: PathBuf::from(rest),
        }),
        "az" | "azure" => {
            let container = rest.trim_end_matches('/');
            // Azure's rules: 3-63 characters, lowercase letters, digits and single hyphens.
            let valid = (3..=63).contains(&container.len())
                && container
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && !container.starts_with('-')
                && !container.ends_with('-')
                && !container.contains("--");
            if !valid {
                return Err(ConfigError::new(
                    "BLOB_URL",
                    value,
                    "does not name a valid Azure container (3-63 lowercase letters, digits and hyphens)",
                ));
            }
            Ok(BlobUrl::Azure {
                container: container.to_owned(),
            })
        }
        "file" => Err(ConfigError::new("BLOB_URL", value, "names no directory")),
        _ => Err(ConfigError::new("BLOB_URL", value, problem)),
    }
}

fn parse_http_url(name: &'static str, value: &str) -> Result<Url, ConfigError> {
    match Url::parse(value) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.host().is_some() => Ok(url),
        Ok(_) => Err(ConfigError::new(
            name,
            value,
            "must be an http:// or https:// URL",
        )),
        Err(e) => Err(ConfigError::new(
            name,
            value,
            format!("is not a valid URL ({e})"),
        )),
    }
}

fn parse_bool(name: &'static str, value: &str) -> Result<bool, ConfigError> {
    match value.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(ConfigError::new(
            name,
            value,
            "is not a boolean: use true or false",
        )),
    }
}

fn positive(
    name: &'static str,
    value: Option<&str>,
    default: usize,
) -> Result<NonZeroUsize, ConfigError> {
    let Some(value) = value else {
        return Ok(NonZeroUsize::new(default).unwrap_or(NonZeroUsize::MIN));
    };
    value
        .parse::<NonZeroUsize>()
        .map_err(|_| ConfigError::new(name, value, "is not a whole number of at least 1"))
}

/// `N/s`, `N/min`, `N/h`, or `off`.
fn rate_limit(name: &'static str, value: Option<&str>) -> Result<Option<RateLimit>, ConfigError> {
    let value = value.unwrap_or(lookup(name).default);
    if value.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    let problem = "is not a rate: use N/s, N/min or N/h (or off)";
    let (n, unit) = value
        .split_once('/')
        .ok_or_else(|| ConfigError::new(name, value, problem))?;
    let requests = n
        .trim()
        .parse::<NonZeroU32>()
        .map_err(|_| ConfigError::new(name, value, problem))?;
    let period = match unit.trim() {
        "s" | "sec" | "second" => Duration::from_secs(1),
        "m" | "min" | "minute" => Duration::from_secs(60),
        "h" | "hour" => Duration::from_secs(3600),
        _ => return Err(ConfigError::new(name, value, problem)),
    };
    Ok(Some(RateLimit { requests, period }))
}

/// Sizes accept bytes (`1048576`) or units (`20MiB`, `500 KB`); the default is the
/// variable's documented one.
fn size(name: &'static str, value: Option<&str>) -> Result<u64, ConfigError> {
    let value = value.unwrap_or(lookup(name).default);
    let parsed = value
        .parse::<u64>()
        .or_else(|_| value.parse::<bytesize::ByteSize>().map(|b| b.as_u64()))
        .map_err(|_| {
            ConfigError::new(
                name,
                value,
                "is not a size: use bytes or a unit, like 20MiB",
            )
        })?;
    if parsed == 0 {
        return Err(ConfigError::new(name, value, "must be more than 0"));
    }
    Ok(parsed)
}

/// Durations accept plain seconds (`25`) or units (`500ms`, `25s`, `5m`, `1h 30m`).
fn duration(
    name: &'static str,
    value: Option<&str>,
    default_secs: u64,
) -> Result<Duration, ConfigError> {
    let Some(value) = value else {
        return Ok(Duration::from_secs(default_secs));
    };
    let parsed = match value.parse::<u64>() {
        Ok(secs) => Duration::from_secs(secs),
        Err(_) => humantime::parse_duration(value).map_err(|_| {
            ConfigError::new(
                name,
                value,
                "is not a duration: use seconds or a unit, like 25s or 5m",
            )
        })?,
    };
    if parsed < Duration::from_millis(100) {
        return Err(ConfigError::new(
            name,
            value,
            "is too short: use at least 100ms",
        ));
    }
    Ok(parsed)
}

/// A cron expression, its default, or `off`.
fn schedule(name: &'static str, value: Option<&str>) -> Result<Option<String>, ConfigError> {
    let value = value.unwrap_or(lookup(name).default);
    if value.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    crate::jobs::schedule::parse_cron(value).map_err(|e| {
        ConfigError::new(
            name,
            value,
            format!("is not a cron expression ({e}); or use `off`"),
        )
    })?;
    Ok(Some(value.to_owned()))
}

fn ensure_writable(name: &'static str, dir: &Path) -> Result<(), ConfigError> {
    let shown = dir.display().to_string();
    let fail = |e: std::io::Error| {
        ConfigError::new(
            name,
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

/// A URL with any password replaced, for logs and `bindery config`.
pub fn redact_url(url: &Url) -> String {
    let mut shown = url.clone();
    if shown.password().is_some() {
        let _ = shown.set_password(Some("REDACTED"));
    }
    // Set as a plain word, since a password's brackets would be percent-encoded.
    shown.to_string().replacen(":REDACTED@", ":[redacted]@", 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(pairs: &[(&str, &str)]) -> Result<Loaded, ConfigError> {
        Config::from_vars(
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
        )
    }

    fn error(pairs: &[(&str, &str)]) -> ConfigError {
        parse(pairs).expect_err("configuration should be refused")
    }

    #[test]
    fn defaults_need_no_variables() {
        let c = parse(&[]).expect("defaults").config;
        assert_eq!(c.port, 8080);
        assert_eq!(c.data_dir, PathBuf::from("./data"));
        assert!(
            matches!(&c.database, DatabaseUrl::Sqlite { path } if path == Path::new("./data/bindery.db"))
        );
        assert!(matches!(&c.blob, BlobUrl::File { root } if root == Path::new("./data/blobs")));
        assert_eq!(c.log_dir, PathBuf::from("./data/logs"));
        assert_eq!(c.shutdown_timeout, Duration::from_secs(25));
        assert_eq!(c.worker_stall_timeout, Duration::from_secs(60));
        assert_eq!(c.worker_concurrency.get(), 16);
        assert!(c.keepalive_url.is_none());
    }

    #[test]
    fn bad_port_names_the_variable_and_an_example() {
        let e = error(&[("PORT", "abc")]);
        assert_eq!(e.name, "PORT");
        let line = e.to_string();
        assert!(line.starts_with("PORT=\"abc\" "), "{line}");
        assert!(line.contains("example: PORT=8080"), "{line}");
        assert!(!line.contains('\n'));
        assert_eq!(error(&[("PORT", "70000")]).name, "PORT");
    }

    #[test]
    fn database_url_schemes() {
        assert_eq!(
            error(&[("DATABASE_URL", "mysql://x/y")]).name,
            "DATABASE_URL"
        );
        assert_eq!(
            error(&[("DATABASE_URL", "sqlite::memory:")]).name,
            "DATABASE_URL"
        );
        assert_eq!(error(&[("DATABASE_URL", "nonsense")]).name, "DATABASE_URL");
        let c = parse(&[("DATABASE_URL", "sqlite:///var/b.db")])
            .expect("sqlite")
            .config;
        assert!(
            matches!(c.database, DatabaseUrl::Sqlite { path } if path == Path::new("/var/b.db"))
        );
        let c = parse(&[("DATABASE_URL", "postgres://u:hunter2@db/x")])
            .expect("postgres")
            .config;
        assert!(!c.database.redacted().contains("hunter2"));
        assert!(!format!("{c:?}").contains("hunter2"));
    }

    #[test]
    fn postgres_tls_options_are_checked_at_start() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ca = dir.path().join("ca.pem");
        std::fs::write(
            &ca,
            "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
        )
        .expect("write");
        let ca = ca.to_str().expect("utf-8");
        for good in [
            "postgres://u:p@db/x?sslmode=require".to_owned(),
            format!("postgres://u:p@db/x?sslmode=verify-full&sslrootcert={ca}"),
            "postgres://u:p@db/x?sslrootcert=system".to_owned(),
        ] {
            parse(&[("DATABASE_URL", &good)]).expect(&good);
        }
        for (bad, says) in [
            ("postgres://u:hunter2@db/x?sslmode=verify", "sslmode=verify"),
            (
                "postgres://u:hunter2@db/x?sslrootcert=/no/such.pem",
                "cannot be read",
            ),
            (
                "postgres://u:hunter2@db/x?sslmode=require&sslrootcert=system",
                "sslmode=verify-full",
            ),
        ] {
            let e = error(&[("DATABASE_URL", bad)]);
            assert_eq!(e.name, "DATABASE_URL");
            assert!(e.to_string().contains(says), "{e}");
            assert!(!e.to_string().contains("hunter2"), "{e}");
        }
        // libpq's variables fill in what the URL leaves out, and never override it.
        let c = parse(&[
            ("DATABASE_URL", "postgres://u:p@db/x?sslmode=disable"),
            ("PGSSLMODE", "verify-full"),
            ("PGSSLROOTCERT", ca),
        ])
        .expect("ok")
        .config;
        let shown = c.database.redacted();
        assert!(
            shown.contains("sslmode=disable") && !shown.contains("verify-full"),
            "{shown}"
        );
        assert!(shown.contains("sslrootcert="), "{shown}");
        assert_eq!(error(&[("PGSSLMODE", "on")]).name, "PGSSLMODE");
        assert_eq!(
            error(&[
                ("DATABASE_URL", "postgres://u:p@db/x"),
                ("PGSSLROOTCERT", "/no/such.pem")
            ])
            .name,
            "PGSSLROOTCERT"
        );
    }

    #[test]
    fn deploy_settings() {
        let c = parse(&[]).expect("defaults").config;
        assert_eq!(c.database_max_connections, 20);
        assert_eq!(c.max_wait, Duration::from_secs(25));
        assert_eq!(c.persistent_disk, None);
        assert_eq!(c.host_platform, None);
        assert_eq!(
            error(&[("DATABASE_MAX_CONNECTIONS", "0")]).name,
            "DATABASE_MAX_CONNECTIONS"
        );
        assert_eq!(error(&[("MAX_WAIT", "2h")]).name, "MAX_WAIT");
        assert_eq!(
            error(&[("PERSISTENT_DISK", "maybe")]).name,
            "PERSISTENT_DISK"
        );
        let c = parse(&[("DYNO", "web.1"), ("PERSISTENT_DISK", "true")])
            .expect("ok")
            .config;
        assert_eq!(c.host_platform, Some(crate::platform::Host::Heroku));
        assert_eq!(c.persistent_disk, Some(true));
        let c = parse(&[("WEBSITE_SITE_NAME", "b")]).expect("ok").config;
        assert_eq!(c.data_dir, PathBuf::from(AZURE_DATA_DIR));
        let c = parse(&[("WEBSITE_SITE_NAME", "b"), ("DATA_DIR", "/srv")])
            .expect("ok")
            .config;
        assert_eq!(c.data_dir, PathBuf::from("/srv"));
    }

    #[test]
    fn secrets_are_not_echoed_in_errors() {
        let e = error(&[("DATABASE_URL", "postgres://u:hunter2@/x")]);
        assert!(!e.to_string().contains("hunter2"), "{e}");
    }

    #[test]
    fn blob_urls() {
        assert_eq!(error(&[("BLOB_URL", "s3://bucket")]).name, "BLOB_URL");
        assert_eq!(
            error(&[
                ("BLOB_URL", "az://Bad_Name"),
                ("AZURE_STORAGE_USE_EMULATOR", "1")
            ])
            .name,
            "BLOB_URL"
        );
        assert_eq!(
            error(&[("BLOB_URL", "az://books")]).name,
            "AZURE_STORAGE_ACCOUNT_NAME"
        );
        let c = parse(&[
            ("BLOB_URL", "az://books"),
            ("AZURE_STORAGE_ACCOUNT_NAME", "acct"),
        ])
        .expect("azure")
        .config;
        assert!(matches!(c.blob, BlobUrl::Azure { container } if container == "books"));
    }

    #[test]
    fn limits_and_rates() {
        let c = parse(&[
            ("RATE_LIMIT_WRITES", "10/s"),
            ("MAX_MANUSCRIPT_SIZE", "20MiB"),
            ("DEFAULT_LANGUAGE", "en_GB"),
        ])
        .expect("valid")
        .config;
        let rate = c.rate_limit_writes.expect("a rate");
        assert_eq!(
            (rate.requests.get(), rate.period),
            (10, Duration::from_secs(1))
        );
        assert_eq!(c.limits.max_manuscript_bytes, 20 * 1024 * 1024);
        assert_eq!(c.default_language, "en-GB");
        let off = parse(&[("RATE_LIMIT_WRITES", "off")])
            .expect("valid")
            .config;
        assert_eq!(off.rate_limit_writes, None);
        for (name, value) in [
            ("RATE_LIMIT_WRITES", "lots"),
            ("RATE_LIMIT_WRITES", "0/min"),
            ("MAX_MANUSCRIPT_SIZE", "big"),
            ("DEFAULT_LANGUAGE", "C"),
            ("BINDERY_FAILPOINT", "sometime:book.parse"),
        ] {
            assert_eq!(error(&[(name, value)]).name, name, "{value}");
        }
    }

    #[test]
    fn durations_take_seconds_or_units() {
        let c = parse(&[
            ("SHUTDOWN_TIMEOUT", "10"),
            ("WORKER_STALL_TIMEOUT", "1500ms"),
        ])
        .expect("durations")
        .config;
        assert_eq!(c.shutdown_timeout, Duration::from_secs(10));
        assert_eq!(c.worker_stall_timeout, Duration::from_millis(1500));
        assert_eq!(
            error(&[("KEEPALIVE_INTERVAL", "soon")]).name,
            "KEEPALIVE_INTERVAL"
        );
        assert_eq!(error(&[("SHUTDOWN_TIMEOUT", "0")]).name, "SHUTDOWN_TIMEOUT");
    }

    #[test]
    fn keepalive_url_falls_back_to_platform_variables() {
        let c = parse(&[("WEBSITE_HOSTNAME", "b.azurewebsites.net")])
            .expect("ok")
            .config;
        assert_eq!(
            c.keepalive_url.map(|u| u.to_string()).as_deref(),
            Some("https://b.azurewebsites.net/")
        );
        let c = parse(&[("APP_URL", "https://a.example"), ("WEBSITE_HOSTNAME", "b")])
            .expect("ok")
            .config;
        assert_eq!(
            c.keepalive_url.map(|u| u.host_str().map(str::to_owned)),
            Some(Some("a.example".to_owned()))
        );
        assert_eq!(error(&[("KEEPALIVE_URL", "ftp://x")]).name, "KEEPALIVE_URL");
        // Webhook links and the keep-alive share APP_URL; Azure's host name stands in for it.
        let c = parse(&[("WEBSITE_HOSTNAME", "b.azurewebsites.net")])
            .expect("ok")
            .config;
        assert_eq!(
            c.public_url.as_ref().map(Url::as_str),
            Some("https://b.azurewebsites.net/")
        );
        let c = parse(&[
            ("APP_URL", "https://a.example"),
            ("KEEPALIVE_URL", "http://10.0.0.1"),
        ])
        .expect("ok")
        .config;
        assert_eq!(
            c.public_url.as_ref().map(Url::as_str),
            Some("https://a.example/")
        );
        assert_eq!(
            c.keepalive_url.as_ref().map(Url::as_str),
            Some("http://10.0.0.1/")
        );
        assert_eq!(error(&[("APP_URL", "books.example.com")]).name, "APP_URL");
    }

    #[test]
    fn unknown_bindery_variables_get_a_suggestion() {
        let loaded = parse(&[("BINDERY_PROT", "1"), ("UNRELATED", "x")]).expect("ok");
        assert_eq!(loaded.warnings.len(), 1);
        assert!(
            loaded.warnings[0].contains("did you mean PORT?"),
            "{:?}",
            loaded.warnings
        );
        let loaded = parse(&[("BINDERY_WORKER_CONCURENCY", "1")]).expect("ok");
        assert!(
            loaded.warnings[0].contains("WORKER_CONCURRENCY"),
            "{:?}",
            loaded.warnings
        );
    }

    #[test]
    fn webhooks_stay_off_private_networks_unless_allowed() {
        assert!(!parse(&[]).expect("defaults").config.webhook_allow_private);
        let allowed = parse(&[("WEBHOOK_ALLOW_PRIVATE", "true")]).expect("ok");
        assert!(allowed.config.webhook_allow_private);
        let bad = error(&[("WEBHOOK_ALLOW_PRIVATE", "maybe")]);
        assert_eq!(bad.name, "WEBHOOK_ALLOW_PRIVATE");
        assert!(
            bad.to_string().contains("WEBHOOK_ALLOW_PRIVATE=true"),
            "{bad}"
        );
    }

    #[test]
    fn bad_log_settings() {
        assert_eq!(error(&[("LOG_FORMAT", "xml")]).name, "LOG_FORMAT");
        assert_eq!(error(&[("RUST_LOG", "info,[[[")]).name, "RUST_LOG");
        assert_eq!(
            error(&[("WORKER_CONCURRENCY", "0")]).name,
            "WORKER_CONCURRENCY"
        );
    }

    #[test]
    fn schedules_can_be_overridden_or_switched_off() {
        let c = parse(&[]).expect("defaults").config;
        assert_eq!(c.schedules.prune_jobs.as_deref(), Some("0 17 * * * *"));
        let c = parse(&[("SCHEDULE_PRUNE_JOBS", "*/5 * * * *")])
            .expect("ok")
            .config;
        assert_eq!(c.schedules.prune_jobs.as_deref(), Some("*/5 * * * *"));
        let c = parse(&[("SCHEDULE_PRUNE_JOBS", "OFF")]).expect("ok").config;
        assert_eq!(c.schedules.prune_jobs, None);
        let c = parse(&[]).expect("defaults").config;
        assert_eq!(
            c.schedules.catalog_refresh.as_deref(),
            Some("0 */15 * * * *")
        );
        let c = parse(&[("SCHEDULE_CATALOG_REFRESH", "off")])
            .expect("ok")
            .config;
        assert_eq!(c.schedules.catalog_refresh, None);
        let c = parse(&[]).expect("defaults").config;
        assert_eq!(c.schedules.sweep_blobs.as_deref(), Some("0 43 3 * * *"));
        let c = parse(&[("SCHEDULE_SWEEP_BLOBS", "off")])
            .expect("ok")
            .config;
        assert_eq!(c.schedules.sweep_blobs, None);
        assert_eq!(
            error(&[("SCHEDULE_CATALOG_REFRESH", "*/15")]).name,
            "SCHEDULE_CATALOG_REFRESH"
        );
        assert_eq!(
            error(&[("SCHEDULE_PRUNE_JOBS", "hourly-ish")]).name,
            "SCHEDULE_PRUNE_JOBS"
        );
        assert_eq!(error(&[("JOB_LEASE", "500ms")]).name, "JOB_LEASE");
    }

    #[test]
    fn unwritable_data_dir_is_refused() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let file = tmp.path().join("a-file");
        std::fs::write(&file, b"x").expect("write");
        let c = parse(&[("DATA_DIR", file.join("sub").to_str().expect("utf-8"))])
            .expect("parse")
            .config;
        assert_eq!(
            c.prepare_directories().expect_err("not writable").name,
            "DATA_DIR"
        );
    }

    #[test]
    fn every_variable_is_described() {
        let c = parse(&[]).expect("defaults").config;
        let described: Vec<_> = c.describe().into_iter().map(|(k, _)| k).collect();
        for v in VARIABLES {
            // Folded into another value, or only telling which host this is.
            let derived_only = matches!(
                v.name,
                "WEBSITE_HOSTNAME"
                    | "PGSSLMODE"
                    | "PGSSLROOTCERT"
                    | "DYNO"
                    | "RENDER"
                    | "RAILWAY_PROJECT_ID"
                    | "FLY_APP_NAME"
                    | "WEBSITE_SITE_NAME"
            );
            assert!(
                derived_only || described.contains(&v.name),
                "{} not described",
                v.name
            );
        }
    }
}
