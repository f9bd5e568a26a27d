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
        "Blob store: `file://DIR` (default), `az://CONTAINER` (Azure Blob Storage) or `s3://BUCKET[/PREFIX]` (Amazon S3 or an S3-compatible service).",
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
    secret(
        "AZURE_STORAGE_CONNECTION_STRING",
        "",
        "DefaultEndpointsProtocol=https;AccountName=bindery;AccountKey=…;EndpointSuffix=core.windows.net",
        "Instead of the account variables: the storage account's connection string (`AccountName`/`AccountKey`, `BlobEndpoint`/`SharedAccessSignature`, or `UseDevelopmentStorage=true` for a local Azurite).",
    ),
    secret(
        "AZURE_STORAGE_SAS_TOKEN",
        "",
        "sv=2022-11-02&sr=c&sp=racwdl&se=2030-01-01T00:00:00Z&sig=…",
        "Instead of the account key: a shared access signature for the container or account, with or without the leading `?` (read, add, create, write, delete and list permissions).",
    ),
    var(
        "AZURE_STORAGE_USE_MANAGED_IDENTITY",
        "false",
        "true",
        "Instead of a key: sign in to Azure Storage as the host's managed identity (App Service, Container Apps, VMs), which needs the Storage Blob Data Contributor role on the account.",
    ),
    var(
        "AZURE_CLIENT_ID",
        "",
        "6f1c2a4e-3b5d-4e7f-9a1b-2c3d4e5f6a7b",
        "Client id of the user-assigned managed identity to use (with AZURE_STORAGE_USE_MANAGED_IDENTITY); unset, the system-assigned one.",
    ),
    var(
        "IDENTITY_ENDPOINT",
        "",
        "http://localhost:42356/msi/token",
        "Set by App Service and Container Apps (with IDENTITY_HEADER): where a managed identity gets its tokens; unset, the instance metadata service (169.254.169.254) is asked.",
    ),
    var(
        "AWS_ACCESS_KEY_ID",
        "",
        "AKIAIOSFODNN7EXAMPLE",
        "Access key id for `s3://` blob URLs; with neither it nor AWS_SECRET_ACCESS_KEY set, credentials come from the EC2 instance metadata service (an instance profile).",
    ),
    secret(
        "AWS_SECRET_ACCESS_KEY",
        "",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "Secret access key of that key id.",
    ),
    secret(
        "AWS_SESSION_TOKEN",
        "",
        "IQoJb3JpZ2luX2VjE…",
        "Session token of temporary credentials (with AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY).",
    ),
    var(
        "AWS_REGION",
        "us-east-1",
        "eu-west-1",
        "Region of the `s3://` bucket (`auto` for Cloudflare R2).",
    ),
    var(
        "AWS_ENDPOINT_URL",
        "https://s3.$AWS_REGION.amazonaws.com",
        "https://ACCOUNT_ID.r2.cloudflarestorage.com",
        "S3-compatible service URL (MinIO, R2, B2, moto; http is allowed); buckets are addressed path-style, `$AWS_ENDPOINT_URL/BUCKET`. It must honour `If-None-Match: *` on uploads.",
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
        "WORKER_MEMORY_BUDGET",
        "320MiB",
        "1GiB",
        "Memory a worker's conversions may use at once. Jobs are admitted by their expected cost within it, and one tenant holds at most three quarters while another's jobs wait; a manuscript's reading runs in a child process limited to this much (`setrlimit`), so a runaway book fails alone (`too_large`). The default suits a 512 MB host.",
    ),
    var(
        "STEP_CPU_LIMIT",
        "300s",
        "10m",
        "Processor time one manuscript's reading may take in its child process before it is stopped (`too_complex`).",
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
        "Cron expression (5 or 6 fields, UTC) for deleting files of books that do not exist (uploads cut off by a crash), or `off`. Each run deletes at most a tenth of the book folders it finds (at least one, at most 100), and nothing unless the database and the blob store hold the same installation id.",
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
        "MAX_BOOK_WORDS",
        "3000000",
        "1500000",
        "Most words a book may have (the longest novels printed have about 2 million); counted while the manuscript is read, so an amplified file stops early.",
    ),
    var(
        "MAX_BOOK_ELEMENTS",
        "2000000",
        "1000000",
        "Most paragraphs, text runs, formatting spans and breaks a book may have, counted while it is read: bounds memory when the markup is many and the words few.",
    ),
    var(
        "MAX_CHAPTER_WORDS",
        "500000",
        "200000",
        "Most words in one chapter (one file of the EPUB, one page of the web reader).",
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
    File {
        root: PathBuf,
    },
    Azure {
        container: String,
    },
    /// A bucket of Amazon S3 or an S3-compatible service, and optionally a key prefix in it.
    /// Its credentials travel with it: they mean nothing for any other store.
    S3 {
        bucket: String,
        prefix: Option<String>,
        s3: Box<S3Config>,
    },
}

impl fmt::Display for BlobUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BlobUrl::File { root } => write!(f, "file://{}", root.display()),
            BlobUrl::Azure { container } => write!(f, "az://{container}"),
            BlobUrl::S3 {
                bucket,
                prefix: None,
                ..
            } => write!(f, "s3://{bucket}"),
            BlobUrl::S3 {
                bucket,
                prefix: Some(prefix),
                ..
            } => write!(f, "s3://{bucket}/{prefix}"),
        }
    }
}

/// How to reach an `s3://` bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Config {
    /// With `secret_access_key`; both unset, the EC2 instance metadata service is asked.
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<Secret<String>>,
    pub session_token: Option<Secret<String>>,
    pub region: String,
    /// An S3-compatible service; `None` is Amazon S3 in `region`.
    pub endpoint: Option<Url>,
}

impl Default for S3Config {
    fn default() -> Self {
        Self {
            access_key_id: None,
            secret_access_key: None,
            session_token: None,
            region: "us-east-1".to_owned(),
            endpoint: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

/// Credentials for `az://` blob URLs. Kept here so that nothing else reads the environment.
/// For `az://`, `Config::from_vars` leaves exactly one of `access_key`, `sas_token` and
/// `managed_identity` set (with `use_emulator`, at most one of the first two).
#[derive(Debug, Clone, Default)]
pub struct AzureConfig {
    pub account: Option<String>,
    pub access_key: Option<Secret<String>>,
    pub use_emulator: bool,
    /// The blob service's URL, when it is not the public cloud's default for the account.
    pub endpoint: Option<url::Url>,
    /// A shared access signature: a query string without the leading `?`.
    pub sas_token: Option<Secret<String>>,
    /// Sign in as the host's managed identity.
    pub managed_identity: Option<ManagedIdentity>,
    /// The account, endpoint and key or SAS came from `AZURE_STORAGE_CONNECTION_STRING`.
    pub from_connection_string: bool,
}

/// A managed identity, and where it gets its tokens.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ManagedIdentity {
    /// A user-assigned identity's client id (`AZURE_CLIENT_ID`); `None` is the
    /// system-assigned identity.
    pub client_id: Option<String>,
    /// The platform's token endpoint (`IDENTITY_ENDPOINT`); `None` is the instance metadata
    /// service.
    pub token_endpoint: Option<Url>,
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
    /// The most one manuscript-reading child process may allocate.
    pub worker_memory_budget: u64,
    /// Processor time one manuscript-reading child process may use.
    pub step_cpu_limit: Duration,
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
        // An unset secret has nothing to hide, and "[redacted]" would suggest it was set.
        let shown = if variable.secret && !value.is_empty() {
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
        let mut blob = match get("BLOB_URL") {
            None => BlobUrl::File {
                root: data_dir.join("blobs"),
            },
            Some(v) => parse_blob_url(v)?,
        };
        let azure = parse_azure(&get, matches!(blob, BlobUrl::Azure { .. }))?;
        if let BlobUrl::S3 { s3, .. } = &mut blob {
            **s3 = parse_s3(&get)?;
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
            max_words: positive("MAX_BOOK_WORDS", get("MAX_BOOK_WORDS"), 3_000_000)?.get() as u64,
            max_elements: positive("MAX_BOOK_ELEMENTS", get("MAX_BOOK_ELEMENTS"), 2_000_000)?.get()
                as u64,
            max_chapter_words: positive("MAX_CHAPTER_WORDS", get("MAX_CHAPTER_WORDS"), 500_000)?
                .get() as u64,
        };
        let worker_memory_budget = size("WORKER_MEMORY_BUDGET", get("WORKER_MEMORY_BUDGET"))?;
        if worker_memory_budget < 32 * 1024 * 1024 {
            return Err(ConfigError::new(
                "WORKER_MEMORY_BUDGET",
                get("WORKER_MEMORY_BUDGET").unwrap_or_default(),
                "is too small to read a manuscript: use at least 32MiB",
            ));
        }
        let step_cpu_limit = duration("STEP_CPU_LIMIT", get("STEP_CPU_LIMIT"), 300)?;
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
                worker_memory_budget,
                step_cpu_limit,
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
        let azure_secret = |set: bool| match (set, self.azure.from_connection_string) {
            (false, _) => String::new(),
            (true, false) => "[redacted]".to_owned(),
            (true, true) => "[redacted] (from AZURE_STORAGE_CONNECTION_STRING)".to_owned(),
        };
        let redacted = |set: bool| if set { "[redacted]" } else { "" }.to_owned();
        let identity = self.azure.managed_identity.as_ref();
        let s3 = match &self.blob {
            BlobUrl::S3 { s3, .. } => Some(s3),
            _ => None,
        };
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
                azure_secret(self.azure.access_key.is_some()),
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
            (
                "AZURE_STORAGE_CONNECTION_STRING",
                redacted(self.azure.from_connection_string),
            ),
            (
                "AZURE_STORAGE_SAS_TOKEN",
                azure_secret(self.azure.sas_token.is_some()),
            ),
            (
                "AZURE_STORAGE_USE_MANAGED_IDENTITY",
                identity.is_some().to_string(),
            ),
            (
                "AZURE_CLIENT_ID",
                identity
                    .and_then(|i| i.client_id.clone())
                    .unwrap_or_default(),
            ),
            (
                "IDENTITY_ENDPOINT",
                identity
                    .and_then(|i| i.token_endpoint.as_ref())
                    .map_or_else(String::new, redact_url),
            ),
            (
                "AWS_ACCESS_KEY_ID",
                s3.and_then(|s| s.access_key_id.clone()).unwrap_or_default(),
            ),
            (
                "AWS_SECRET_ACCESS_KEY",
                redacted(s3.is_some_and(|s| s.secret_access_key.is_some())),
            ),
            (
                "AWS_SESSION_TOKEN",
                redacted(s3.is_some_and(|s| s.session_token.is_some())),
            ),
            (
                "AWS_REGION",
                s3.map(|s| s.region.clone()).unwrap_or_default(),
            ),
            (
                "AWS_ENDPOINT_URL",
                s3.and_then(|s| s.endpoint.as_ref())
                    .map_or_else(String::new, redact_url),
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
            ("MAX_BOOK_WORDS", self.limits.max_words.to_string()),
            ("MAX_BOOK_ELEMENTS", self.limits.max_elements.to_string()),
            (
                "MAX_CHAPTER_WORDS",
                self.limits.max_chapter_words.to_string(),
            ),
            (
                "WORKER_MEMORY_BUDGET",
                bytesize::ByteSize(self.worker_memory_budget).to_string(),
            ),
            ("STEP_CPU_LIMIT", d(self.step_cpu_limit)),
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

/// Azurite's well-known development account, the same in every installation
/// (`UseDevelopmentStorage=true`).
const AZURITE_ACCOUNT: &str = "devstoreaccount1";
const AZURITE_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
const AZURITE_ENDPOINT: &str = "http://127.0.0.1:10000/devstoreaccount1";

/// The `AZURE_*` variables. Those that pick a credential are only read for `az://` blob URLs
/// (`used`), since other software on the host may set them for its own use; for `az://` there
/// must be an account and exactly one credential, or the emulator.
fn parse_azure<'a>(
    get: &impl Fn(&'static str) -> Option<&'a str>,
    used: bool,
) -> Result<AzureConfig, ConfigError> {
    let mut azure = AzureConfig {
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
        ..AzureConfig::default()
    };
    if !used {
        return Ok(azure);
    }
    let managed = match get("AZURE_STORAGE_USE_MANAGED_IDENTITY") {
        None => false,
        Some(v) => parse_bool("AZURE_STORAGE_USE_MANAGED_IDENTITY", v)?,
    };
    let credentials: Vec<&'static str> = [
        "AZURE_STORAGE_ACCOUNT_KEY",
        "AZURE_STORAGE_SAS_TOKEN",
        "AZURE_STORAGE_CONNECTION_STRING",
    ]
    .into_iter()
    .filter(|name| get(name).is_some())
    .chain(managed.then_some("AZURE_STORAGE_USE_MANAGED_IDENTITY"))
    .collect();
    if let [first, second, ..] = credentials[..] {
        return Err(ConfigError::new(
            second,
            get(second).unwrap_or_default(),
            format!(
                "cannot be used together with {first}: az://… takes one credential, so unset one of them"
            ),
        ));
    }
    let credential = credentials.first().copied();
    if azure.use_emulator
        && let Some(
            name @ ("AZURE_STORAGE_CONNECTION_STRING" | "AZURE_STORAGE_USE_MANAGED_IDENTITY"),
        ) = credential
    {
        return Err(ConfigError::new(
            name,
            get(name).unwrap_or_default(),
            "cannot be used together with AZURE_STORAGE_USE_EMULATOR=true: the emulator takes its well-known key, AZURE_STORAGE_ACCOUNT_KEY or AZURE_STORAGE_SAS_TOKEN",
        ));
    }
    match credential {
        Some("AZURE_STORAGE_ACCOUNT_KEY") => {
            let key = get("AZURE_STORAGE_ACCOUNT_KEY").unwrap_or_default();
            check_account_key("AZURE_STORAGE_ACCOUNT_KEY", key, "is not")?;
        }
        Some("AZURE_STORAGE_SAS_TOKEN") => {
            let token = get("AZURE_STORAGE_SAS_TOKEN").unwrap_or_default();
            azure.sas_token = Some(Secret::new(parse_sas("AZURE_STORAGE_SAS_TOKEN", token)?));
        }
        Some("AZURE_STORAGE_CONNECTION_STRING") => {
            let value = get("AZURE_STORAGE_CONNECTION_STRING").unwrap_or_default();
            let parsed = parse_connection_string(value)?;
            if let (Some(named), Some(account)) = (&azure.account, &parsed.account)
                && named != account
            {
                return Err(ConfigError::new(
                    "AZURE_STORAGE_ACCOUNT_NAME",
                    named,
                    "names another account than AZURE_STORAGE_CONNECTION_STRING's AccountName: unset AZURE_STORAGE_ACCOUNT_NAME",
                ));
            }
            match (&azure.endpoint, parsed.sets_endpoint) {
                (Some(endpoint), true) => {
                    return Err(ConfigError::new(
                        "AZURE_STORAGE_ENDPOINT",
                        endpoint.as_str(),
                        "cannot be used together with AZURE_STORAGE_CONNECTION_STRING's BlobEndpoint or EndpointSuffix: keep one",
                    ));
                }
                (Some(_), false) => {}
                (None, _) => azure.endpoint = parsed.endpoint,
            }
            azure.account = parsed.account.or(azure.account);
            azure.access_key = parsed.key.map(Secret::new);
            azure.sas_token = parsed.sas.map(Secret::new);
            azure.from_connection_string = true;
        }
        Some(_) => {
            let client_id = match get("AZURE_CLIENT_ID") {
                None => None,
                Some(v) => Some(
                    uuid::Uuid::parse_str(v)
                        .map_err(|_| {
                            ConfigError::new(
                                "AZURE_CLIENT_ID",
                                v,
                                "is not a client id: use the identity's Client ID, a GUID from its Overview page",
                            )
                        })?
                        .hyphenated()
                        .to_string(),
                ),
            };
            let token_endpoint = match get("IDENTITY_ENDPOINT") {
                None => None,
                Some(v) => Some(parse_http_url("IDENTITY_ENDPOINT", v)?),
            };
            azure.managed_identity = Some(ManagedIdentity {
                client_id,
                token_endpoint,
            });
        }
        None => {}
    }
    if azure.account.is_none() && !azure.use_emulator {
        return Err(ConfigError::new(
            "AZURE_STORAGE_ACCOUNT_NAME",
            "",
            "must be set when BLOB_URL is az://… (or come from AZURE_STORAGE_CONNECTION_STRING, or set AZURE_STORAGE_USE_EMULATOR=true)",
        ));
    }
    if credential.is_none() && !azure.use_emulator {
        return Err(ConfigError::new(
            "AZURE_STORAGE_ACCOUNT_KEY",
            "",
            "must be set when BLOB_URL is az://…, or another credential: AZURE_STORAGE_SAS_TOKEN, AZURE_STORAGE_CONNECTION_STRING or AZURE_STORAGE_USE_MANAGED_IDENTITY=true (or AZURE_STORAGE_USE_EMULATOR=true for Azurite)",
        ));
    }
    Ok(azure)
}

/// An account key is base64 (the portal's key1 or key2).
fn check_account_key(name: &'static str, key: &str, subject: &str) -> Result<(), ConfigError> {
    use base64::Engine as _;
    match base64::engine::general_purpose::STANDARD.decode(key) {
        Ok(bytes) if !bytes.is_empty() => Ok(()),
        _ => Err(ConfigError::new(
            name,
            key,
            format!(
                "{subject} a storage account key (base64): copy key1 or key2 from the account's Access keys page"
            ),
        )),
    }
}

/// A SAS token without its leading `?`: `key=value` pairs joined by `&`, one of them `sig`.
fn parse_sas(name: &'static str, value: &str) -> Result<String, ConfigError> {
    let token = value.trim().trim_start_matches('?');
    let pairs: Vec<&str> = token.split('&').filter(|p| !p.is_empty()).collect();
    if pairs.iter().all(|p| p.contains('=')) && pairs.iter().any(|p| p.starts_with("sig=")) {
        Ok(token.to_owned())
    } else {
        Err(ConfigError::new(
            name,
            value,
            "is not a SAS token: it is a query string like sv=…&sp=…&sig=… (from the portal's Shared access signature page)",
        ))
    }
}

/// What an Azure Storage connection string says about the blob service.
#[derive(Debug, PartialEq, Eq)]
struct ConnectionString {
    account: Option<String>,
    key: Option<String>,
    sas: Option<String>,
    endpoint: Option<Url>,
    /// It names the endpoint (`BlobEndpoint` or `EndpointSuffix`), rather than leaving it to
    /// the account's default (or Azurite's, for `UseDevelopmentStorage=true`).
    sets_endpoint: bool,
}

/// Parses `Key=value;Key=value` (values may contain `=`; keys are case-insensitive; other
/// services' endpoints are ignored). Errors name what is missing, never a value.
fn parse_connection_string(value: &str) -> Result<ConnectionString, ConfigError> {
    const NAME: &str = "AZURE_STORAGE_CONNECTION_STRING";
    let fail = |problem: &str| ConfigError::new(NAME, value, problem);
    let mut fields = BTreeMap::new();
    for part in value.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, field) = part.split_once('=').ok_or_else(|| {
            fail("is not a connection string: it is Key=value pairs separated by `;`, and a part has no `=`")
        })?;
        fields.insert(key.trim().to_ascii_lowercase(), field.trim());
    }
    let field = |key: &str| fields.get(key).copied().filter(|v| !v.is_empty());
    if field("usedevelopmentstorage").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        return Ok(ConnectionString {
            account: Some(AZURITE_ACCOUNT.to_owned()),
            key: Some(AZURITE_KEY.to_owned()),
            sas: None,
            endpoint: Url::parse(AZURITE_ENDPOINT).ok(),
            sets_endpoint: false,
        });
    }
    let protocol = match field("defaultendpointsprotocol").map(str::to_ascii_lowercase) {
        None => "https".to_owned(),
        Some(p) if p == "http" || p == "https" => p,
        Some(_) => {
            return Err(fail(
                "has a DefaultEndpointsProtocol other than https or http",
            ));
        }
    };
    let endpoint = match (field("blobendpoint"), field("accountname")) {
        (Some(url), _) => Some(
            Url::parse(url)
                .ok()
                .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
                .ok_or_else(|| fail("has a BlobEndpoint that is not an http(s) URL"))?,
        ),
        (None, Some(account)) => {
            let suffix = field("endpointsuffix").unwrap_or("core.windows.net");
            Some(
                Url::parse(&format!("{protocol}://{account}.blob.{suffix}"))
                    .map_err(|_| fail("has an AccountName or EndpointSuffix that makes no URL"))?,
            )
        }
        (None, None) => None,
    };
    let (key, sas) = match (field("accountkey"), field("sharedaccesssignature")) {
        (Some(_), Some(_)) => {
            return Err(fail(
                "has both AccountKey and SharedAccessSignature: keep one",
            ));
        }
        (None, None) => {
            return Err(fail(
                "has no credential: it needs AccountKey=… (with AccountName=…) or SharedAccessSignature=… (with BlobEndpoint=…), or is UseDevelopmentStorage=true",
            ));
        }
        (Some(key), None) => {
            check_account_key(NAME, key, "has an AccountKey that is not")?;
            (Some(key.to_owned()), None)
        }
        (None, Some(sas)) => (None, Some(parse_sas(NAME, sas)?)),
    };
    if key.is_some() && field("accountname").is_none() {
        return Err(fail("has an AccountKey but no AccountName=…"));
    }
    let Some(endpoint) = endpoint else {
        return Err(fail(
            "names no blob service: add BlobEndpoint=https://ACCOUNT.blob.core.windows.net or AccountName=…",
        ));
    };
    let account = match field("accountname") {
        Some(account) => account.to_owned(),
        None => account_of(&endpoint).ok_or_else(|| fail("names no account: add AccountName=…"))?,
    };
    Ok(ConnectionString {
        account: Some(account),
        key,
        sas,
        endpoint: Some(endpoint),
        sets_endpoint: field("blobendpoint").is_some() || field("endpointsuffix").is_some(),
    })
}

/// The storage account a blob endpoint belongs to: the first label of
/// `ACCOUNT.blob.core.windows.net`, or the first path segment of an emulator's
/// `http://127.0.0.1:10000/ACCOUNT`.
fn account_of(endpoint: &Url) -> Option<String> {
    match endpoint.host()? {
        url::Host::Domain(host) if host.contains(".blob.") => {
            host.split('.').next().map(str::to_owned)
        }
        _ => endpoint
            .path_segments()?
            .next()
            .filter(|s| !s.is_empty())
            .map(str::to_owned),
    }
}

/// The `AWS_*` variables, for an `s3://` blob URL.
fn parse_s3<'a>(get: &impl Fn(&'static str) -> Option<&'a str>) -> Result<S3Config, ConfigError> {
    let region = get("AWS_REGION").unwrap_or("us-east-1");
    if !region
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        return Err(ConfigError::new(
            "AWS_REGION",
            region,
            "is not a region name: lowercase letters, digits and hyphens",
        ));
    }
    let endpoint = match get("AWS_ENDPOINT_URL") {
        None => None,
        Some(v) => match Url::parse(v) {
            Ok(url) if matches!(url.scheme(), "http" | "https") && url.host().is_some() => {
                Some(url)
            }
            _ => {
                return Err(ConfigError::new(
                    "AWS_ENDPOINT_URL",
                    v,
                    "is not the http(s) URL of an S3-compatible service",
                ));
            }
        },
    };
    let id = get("AWS_ACCESS_KEY_ID");
    let secret = get("AWS_SECRET_ACCESS_KEY");
    let token = get("AWS_SESSION_TOKEN");
    match (id, secret) {
        (Some(_), None) => {
            return Err(ConfigError::new(
                "AWS_SECRET_ACCESS_KEY",
                "",
                "must be set with AWS_ACCESS_KEY_ID (or unset both to use the instance's role)",
            ));
        }
        (None, Some(_)) => {
            return Err(ConfigError::new(
                "AWS_ACCESS_KEY_ID",
                "",
                "must be set with AWS_SECRET_ACCESS_KEY (or unset both to use the instance's role)",
            ));
        }
        (None, None) if token.is_some() => {
            return Err(ConfigError::new(
                "AWS_SESSION_TOKEN",
                token.unwrap_or_default(),
                "needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY: temporary credentials are all three",
            ));
        }
        _ => {}
    }
    Ok(S3Config {
        access_key_id: id.map(str::to_owned),
        secret_access_key: secret.map(|s| Secret::new(s.to_owned())),
        session_token: token.map(|s| Secret::new(s.to_owned())),
        region: region.to_owned(),
        endpoint,
    })
}

fn parse_blob_url(value: &str) -> Result<BlobUrl, ConfigError> {
    let problem = "has an unknown scheme: use file://DIR, az://CONTAINER or s3://BUCKET";
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
        "s3" => {
            let (bucket, prefix) = match rest.trim_end_matches('/').split_once('/') {
                Some((bucket, prefix)) => (bucket, Some(prefix)),
                None => (rest.trim_end_matches('/'), None),
            };
            // S3's rules: 3-63 characters, lowercase letters, digits, dots and hyphens, starting
            // and ending with a letter or digit.
            let valid = (3..=63).contains(&bucket.len())
                && bucket
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-')
                && bucket.starts_with(|c: char| c.is_ascii_alphanumeric())
                && bucket.ends_with(|c: char| c.is_ascii_alphanumeric())
                && !bucket.contains("..");
            if !valid {
                return Err(ConfigError::new(
                    "BLOB_URL",
                    value,
                    "does not name a valid S3 bucket (3-63 lowercase letters, digits, dots and hyphens)",
                ));
            }
            if let Some(prefix) = prefix
                && prefix
                    .split('/')
                    .any(|s| s.is_empty() || s == "." || s == ".." || s.contains('\\'))
            {
                return Err(ConfigError::new(
                    "BLOB_URL",
                    value,
                    "has a prefix with an empty, `.` or `..` segment: use s3://BUCKET/some/prefix",
                ));
            }
            Ok(BlobUrl::S3 {
                bucket: bucket.to_owned(),
                prefix: prefix.map(str::to_owned),
                s3: Box::default(),
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
        assert_eq!(error(&[("BLOB_URL", "gs://bucket")]).name, "BLOB_URL");
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
            ("AZURE_STORAGE_ACCOUNT_KEY", KEY),
        ])
        .expect("azure")
        .config;
        assert!(matches!(c.blob, BlobUrl::Azure { container } if container == "books"));
    }

    /// A base64 key, as the portal gives.
    const KEY: &str = "a2V5IG9mIHRoZSB0ZXN0IGFjY291bnQ=";

    fn azure(pairs: &[(&str, &str)]) -> AzureConfig {
        let mut all = vec![("BLOB_URL", "az://books")];
        all.extend_from_slice(pairs);
        parse(&all).expect("azure configuration").config.azure
    }

    fn azure_error(pairs: &[(&str, &str)]) -> ConfigError {
        let mut all = vec![("BLOB_URL", "az://books")];
        all.extend_from_slice(pairs);
        error(&all)
    }

    #[test]
    fn azure_needs_one_credential() {
        let e = azure_error(&[("AZURE_STORAGE_ACCOUNT_NAME", "acct")]);
        assert_eq!(e.name, "AZURE_STORAGE_ACCOUNT_KEY");
        let line = e.to_string();
        for other in [
            "AZURE_STORAGE_SAS_TOKEN",
            "AZURE_STORAGE_CONNECTION_STRING",
            "AZURE_STORAGE_USE_MANAGED_IDENTITY=true",
            "AZURE_STORAGE_USE_EMULATOR=true",
        ] {
            assert!(line.contains(other), "{line}");
        }
        assert!(
            line.starts_with("AZURE_STORAGE_ACCOUNT_KEY=\"\" "),
            "{line}"
        );
        // The emulator needs none: it has a well-known key.
        let c = azure(&[("AZURE_STORAGE_USE_EMULATOR", "true")]);
        assert!(c.use_emulator && c.access_key.is_none() && c.sas_token.is_none());
        // Credentials are only checked for az://, as other software may set them.
        let c = parse(&[
            ("AZURE_STORAGE_CONNECTION_STRING", "nonsense"),
            ("AZURE_STORAGE_SAS_TOKEN", "nonsense"),
            ("AZURE_STORAGE_USE_MANAGED_IDENTITY", "maybe"),
        ])
        .expect("file:// ignores Azure credentials")
        .config;
        assert!(c.azure.sas_token.is_none() && c.azure.managed_identity.is_none());
    }

    #[test]
    fn two_azure_credentials_are_refused_naming_both() {
        let sas = "sv=2022-11-02&sp=rl&sig=hunter2";
        // The variables set, the one the error names, and the other one it mentions.
        type Case<'a> = (&'a [(&'a str, &'a str)], &'a str, &'a str);
        let cases: &[Case] = &[
            (
                &[
                    ("AZURE_STORAGE_ACCOUNT_KEY", KEY),
                    ("AZURE_STORAGE_SAS_TOKEN", sas),
                ],
                "AZURE_STORAGE_SAS_TOKEN",
                "AZURE_STORAGE_ACCOUNT_KEY",
            ),
            (
                &[
                    ("AZURE_STORAGE_SAS_TOKEN", sas),
                    ("AZURE_STORAGE_USE_MANAGED_IDENTITY", "true"),
                ],
                "AZURE_STORAGE_USE_MANAGED_IDENTITY",
                "AZURE_STORAGE_SAS_TOKEN",
            ),
            (
                &[
                    ("AZURE_STORAGE_ACCOUNT_KEY", KEY),
                    (
                        "AZURE_STORAGE_CONNECTION_STRING",
                        "AccountName=acct;AccountKey=a2V5",
                    ),
                ],
                "AZURE_STORAGE_CONNECTION_STRING",
                "AZURE_STORAGE_ACCOUNT_KEY",
            ),
            (
                &[
                    ("AZURE_STORAGE_USE_EMULATOR", "true"),
                    ("AZURE_STORAGE_USE_MANAGED_IDENTITY", "true"),
                ],
                "AZURE_STORAGE_USE_MANAGED_IDENTITY",
                "AZURE_STORAGE_USE_EMULATOR",
            ),
            (
                &[
                    ("AZURE_STORAGE_USE_EMULATOR", "true"),
                    (
                        "AZURE_STORAGE_CONNECTION_STRING",
                        "UseDevelopmentStorage=true",
                    ),
                ],
                "AZURE_STORAGE_CONNECTION_STRING",
                "AZURE_STORAGE_USE_EMULATOR",
            ),
        ];
        for (pairs, named, also) in cases {
            let mut pairs = pairs.to_vec();
            pairs.push(("AZURE_STORAGE_ACCOUNT_NAME", "acct"));
            let e = azure_error(&pairs);
            assert_eq!(e.name, *named, "{e}");
            assert!(e.to_string().contains(also), "{e}");
            assert!(
                !e.to_string().contains(KEY) && !e.to_string().contains("hunter2"),
                "{e}"
            );
        }
        // "false" is not a credential.
        let c = azure(&[
            ("AZURE_STORAGE_ACCOUNT_NAME", "acct"),
            ("AZURE_STORAGE_ACCOUNT_KEY", KEY),
            ("AZURE_STORAGE_USE_MANAGED_IDENTITY", "false"),
        ]);
        assert!(c.access_key.is_some() && c.managed_identity.is_none());
    }

    #[test]
    fn azure_account_key_and_sas_token() {
        let e = azure_error(&[
            ("AZURE_STORAGE_ACCOUNT_NAME", "acct"),
            ("AZURE_STORAGE_ACCOUNT_KEY", "not base64!"),
        ]);
        assert_eq!(e.name, "AZURE_STORAGE_ACCOUNT_KEY");
        assert!(!e.to_string().contains("not base64!"), "{e}");
        let c = azure(&[
            ("AZURE_STORAGE_ACCOUNT_NAME", "acct"),
            (
                "AZURE_STORAGE_SAS_TOKEN",
                "?sv=2022-11-02&sr=c&sp=racwdl&sig=a%2Bb%3D",
            ),
        ]);
        assert_eq!(
            c.sas_token.as_ref().map(|t| t.expose().as_str()),
            Some("sv=2022-11-02&sr=c&sp=racwdl&sig=a%2Bb%3D")
        );
        assert!(c.access_key.is_none() && !c.from_connection_string);
        for bad in ["hunter2", "sv=2022-11-02&sp=rl", "?"] {
            let e = azure_error(&[
                ("AZURE_STORAGE_ACCOUNT_NAME", "acct"),
                ("AZURE_STORAGE_SAS_TOKEN", bad),
            ]);
            assert_eq!(e.name, "AZURE_STORAGE_SAS_TOKEN", "{bad}");
            assert!(e.to_string().contains("[redacted]"), "{e}");
            assert!(!e.to_string().contains("hunter2"), "{e}");
        }
        // A SAS still needs the account (or an endpoint naming it, from a connection string).
        assert_eq!(
            azure_error(&[("AZURE_STORAGE_SAS_TOKEN", "sv=1&sig=x")]).name,
            "AZURE_STORAGE_ACCOUNT_NAME"
        );
    }

    #[test]
    fn azure_connection_strings() {
        const CS: &str = "AZURE_STORAGE_CONNECTION_STRING";
        // The portal's form: the key's own `=` padding stays in it.
        let c = azure(&[(
            CS,
            "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5IGE=;EndpointSuffix=core.chinacloudapi.cn",
        )]);
        assert_eq!(c.account.as_deref(), Some("acct"));
        assert_eq!(
            c.access_key.as_ref().map(|k| k.expose().as_str()),
            Some("a2V5IGE=")
        );
        assert_eq!(
            c.endpoint.as_ref().map(Url::as_str),
            Some("https://acct.blob.core.chinacloudapi.cn/")
        );
        assert!(c.from_connection_string && c.sas_token.is_none());
        // Keys are case-insensitive, the suffix defaults to the public cloud, a trailing `;` is fine.
        let c = azure(&[(CS, "accountname=acct;accountkey=a2V5;")]);
        assert_eq!(
            c.endpoint.as_ref().map(Url::as_str),
            Some("https://acct.blob.core.windows.net/")
        );
        // Azurite's long form, with its own BlobEndpoint.
        let c = azure(&[(
            CS,
            "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=a2V5;BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;",
        )]);
        assert_eq!(
            c.endpoint.as_ref().map(Url::as_str),
            Some("http://127.0.0.1:10000/devstoreaccount1")
        );
        // A SAS with the endpoint alone: the account is read from the endpoint.
        let c = azure(&[(
            CS,
            "BlobEndpoint=https://acct.blob.core.windows.net/;SharedAccessSignature=sv=2022-11-02&sp=rl&sig=x%3D",
        )]);
        assert_eq!(c.account.as_deref(), Some("acct"));
        assert_eq!(
            c.sas_token.as_ref().map(|t| t.expose().as_str()),
            Some("sv=2022-11-02&sp=rl&sig=x%3D")
        );
        assert!(c.access_key.is_none());
        let c = azure(&[(
            CS,
            "BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;SharedAccessSignature=sv=1&sig=x",
        )]);
        assert_eq!(c.account.as_deref(), Some("devstoreaccount1"));
        // Azurite's short form, which AZURE_STORAGE_ENDPOINT may move to another port.
        let c = azure(&[(CS, "UseDevelopmentStorage=true")]);
        assert_eq!(c.account.as_deref(), Some(AZURITE_ACCOUNT));
        assert_eq!(
            c.access_key.as_ref().map(|k| k.expose().as_str()),
            Some(AZURITE_KEY)
        );
        assert_eq!(
            c.endpoint.as_ref().map(Url::as_str),
            Some("http://127.0.0.1:10000/devstoreaccount1")
        );
        let c = azure(&[
            (CS, "UseDevelopmentStorage=true"),
            (
                "AZURE_STORAGE_ENDPOINT",
                "http://127.0.0.1:4321/devstoreaccount1",
            ),
        ]);
        assert_eq!(
            c.endpoint.as_ref().map(Url::as_str),
            Some("http://127.0.0.1:4321/devstoreaccount1")
        );
        // The same account named twice is fine; another one is not.
        azure(&[
            (CS, "AccountName=acct;AccountKey=a2V5"),
            ("AZURE_STORAGE_ACCOUNT_NAME", "acct"),
        ]);
        let e = azure_error(&[
            (CS, "AccountName=acct;AccountKey=a2V5"),
            ("AZURE_STORAGE_ACCOUNT_NAME", "other"),
        ]);
        assert_eq!(e.name, "AZURE_STORAGE_ACCOUNT_NAME");
        assert!(e.to_string().contains(CS), "{e}");
        let e = azure_error(&[
            (
                CS,
                "AccountName=acct;AccountKey=a2V5;BlobEndpoint=https://x.example",
            ),
            ("AZURE_STORAGE_ENDPOINT", "https://y.example"),
        ]);
        assert_eq!(e.name, "AZURE_STORAGE_ENDPOINT");
        assert!(e.to_string().contains(CS), "{e}");
    }

    #[test]
    fn incomplete_connection_strings_say_what_is_missing() {
        const CS: &str = "AZURE_STORAGE_CONNECTION_STRING";
        for (value, missing) in [
            ("AccountName=acct", "no credential"),
            (
                "DefaultEndpointsProtocol=https;AccountKey=c2VjcmV0a2V5",
                "no AccountName",
            ),
            (
                "SharedAccessSignature=sv=1&sig=c2VjcmV0a2V5",
                "no blob service",
            ),
            (
                "BlobEndpoint=https://books.example.com;SharedAccessSignature=sv=1&sig=c2VjcmV0a2V5",
                "no account",
            ),
            (
                "AccountName=acct;AccountKey=c2VjcmV0a2V5;SharedAccessSignature=sv=1&sig=c2VjcmV0a2V5",
                "both AccountKey and SharedAccessSignature",
            ),
            (
                "AccountName=acct;AccountKey=c2VjcmV0a2V5;BlobEndpoint=ftp://x",
                "BlobEndpoint",
            ),
            ("AccountName=acct;c2VjcmV0a2V5", "no `=`"),
            (
                "AccountName=acct;AccountKey=c2VjcmV0a2V5!!",
                "not a storage account key",
            ),
            (
                "AccountName=acct;SharedAccessSignature=c2VjcmV0a2V5",
                "not a SAS token",
            ),
        ] {
            let e = azure_error(&[(CS, value)]);
            assert_eq!(e.name, CS, "{value}: {e}");
            let line = e.to_string();
            assert!(line.contains(missing), "{value}: {line}");
            assert!(
                !line.contains("c2VjcmV0a2V5"),
                "the secret is echoed: {line}"
            );
            assert!(line.contains("[redacted]"), "{line}");
        }
    }

    #[test]
    fn azure_managed_identity() {
        let c = azure(&[
            ("AZURE_STORAGE_ACCOUNT_NAME", "acct"),
            ("AZURE_STORAGE_USE_MANAGED_IDENTITY", "true"),
        ]);
        assert_eq!(c.managed_identity, Some(ManagedIdentity::default()));
        assert!(c.access_key.is_none() && c.sas_token.is_none());
        let c = azure(&[
            ("AZURE_STORAGE_ACCOUNT_NAME", "acct"),
            ("AZURE_STORAGE_USE_MANAGED_IDENTITY", "yes"),
            ("AZURE_CLIENT_ID", "6F1C2A4E3B5D4E7F9A1B2C3D4E5F6A7B"),
            ("IDENTITY_ENDPOINT", "http://localhost:42356/msi/token"),
        ]);
        let identity = c.managed_identity.expect("managed identity");
        assert_eq!(
            identity.client_id.as_deref(),
            Some("6f1c2a4e-3b5d-4e7f-9a1b-2c3d4e5f6a7b")
        );
        assert_eq!(
            identity.token_endpoint.as_ref().map(Url::as_str),
            Some("http://localhost:42356/msi/token")
        );
        // Managed identity still needs to know the account.
        assert_eq!(
            azure_error(&[("AZURE_STORAGE_USE_MANAGED_IDENTITY", "true")]).name,
            "AZURE_STORAGE_ACCOUNT_NAME"
        );
        for (name, value) in [
            ("AZURE_STORAGE_USE_MANAGED_IDENTITY", "please"),
            ("AZURE_CLIENT_ID", "my-identity"),
            ("IDENTITY_ENDPOINT", "localhost:42356"),
        ] {
            let mut pairs = vec![
                ("AZURE_STORAGE_ACCOUNT_NAME", "acct"),
                ("AZURE_STORAGE_USE_MANAGED_IDENTITY", "true"),
            ];
            pairs.retain(|(k, _)| *k != name);
            pairs.push((name, value));
            assert_eq!(azure_error(&pairs).name, name, "{value}");
        }
    }

    #[test]
    fn s3_blob_urls() {
        let c = parse(&[("BLOB_URL", "s3://my-books")]).expect("s3").config;
        let BlobUrl::S3 { bucket, prefix, s3 } = &c.blob else {
            panic!("{:?}", c.blob)
        };
        assert_eq!((bucket.as_str(), prefix.as_deref()), ("my-books", None));
        assert_eq!(**s3, S3Config::default());
        assert_eq!(s3.region, "us-east-1");
        assert_eq!(c.blob.to_string(), "s3://my-books");
        let c = parse(&[
            ("BLOB_URL", "s3://my.books/bindery/prod/"),
            ("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE"),
            ("AWS_SECRET_ACCESS_KEY", "hunter2hunter2"),
            ("AWS_SESSION_TOKEN", "tok"),
            ("AWS_REGION", "eu-west-1"),
            ("AWS_ENDPOINT_URL", "http://127.0.0.1:9000"),
        ])
        .expect("s3")
        .config;
        assert_eq!(c.blob.to_string(), "s3://my.books/bindery/prod");
        let BlobUrl::S3 { prefix, s3, .. } = &c.blob else {
            panic!("{:?}", c.blob)
        };
        assert_eq!(prefix.as_deref(), Some("bindery/prod"));
        assert_eq!(s3.access_key_id.as_deref(), Some("AKIAEXAMPLE"));
        assert_eq!(
            s3.secret_access_key.as_ref().map(|s| s.expose().as_str()),
            Some("hunter2hunter2")
        );
        assert!(s3.session_token.is_some());
        assert_eq!(s3.region, "eu-west-1");
        assert_eq!(
            s3.endpoint.as_ref().map(Url::as_str),
            Some("http://127.0.0.1:9000/")
        );
        assert!(!format!("{c:?}").contains("hunter2"));
        let described = c.describe();
        assert!(!format!("{described:?}").contains("hunter2"));
        assert!(described.contains(&("AWS_SECRET_ACCESS_KEY", "[redacted]".to_owned())));
        assert!(described.contains(&("AWS_REGION", "eu-west-1".to_owned())));
        for bad in [
            "s3://",
            "s3://ab",
            "s3://My_Books",
            "s3://-books",
            "s3://books/a//b",
            "s3://books/../x",
        ] {
            assert_eq!(error(&[("BLOB_URL", bad)]).name, "BLOB_URL", "{bad}");
        }
    }

    #[test]
    fn s3_credentials_come_in_pairs() {
        let s3 = |pairs: &[(&str, &str)]| {
            let mut all = vec![("BLOB_URL", "s3://books")];
            all.extend_from_slice(pairs);
            parse(&all)
        };
        let e = s3(&[("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE")]).expect_err("no secret");
        assert_eq!(e.name, "AWS_SECRET_ACCESS_KEY");
        assert!(e.to_string().contains("AWS_ACCESS_KEY_ID"), "{e}");
        let e = s3(&[("AWS_SECRET_ACCESS_KEY", "hunter2")]).expect_err("no id");
        assert_eq!(e.name, "AWS_ACCESS_KEY_ID");
        assert!(!e.to_string().contains("hunter2"), "{e}");
        let e = s3(&[("AWS_SESSION_TOKEN", "hunter2")]).expect_err("token alone");
        assert_eq!(e.name, "AWS_SESSION_TOKEN");
        assert!(!e.to_string().contains("hunter2"), "{e}");
        assert_eq!(
            s3(&[("AWS_REGION", "EU West")]).expect_err("region").name,
            "AWS_REGION"
        );
        assert_eq!(
            s3(&[("AWS_ENDPOINT_URL", "minio:9000")])
                .expect_err("endpoint")
                .name,
            "AWS_ENDPOINT_URL"
        );
        // No keys: the instance's role, through the metadata service.
        let c = s3(&[]).expect("instance credentials").config;
        assert!(matches!(&c.blob, BlobUrl::S3 { s3, .. } if s3.access_key_id.is_none()));
        // AWS variables mean nothing to other blob stores, and are not checked for them.
        parse(&[
            ("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE"),
            ("AWS_REGION", "EU West"),
        ])
        .expect("file:// ignores AWS variables");
    }

    #[test]
    fn azure_secrets_are_described_redacted() {
        let c = parse(&[
            ("BLOB_URL", "az://books"),
            (
                "AZURE_STORAGE_CONNECTION_STRING",
                "AccountName=acct;AccountKey=c2VjcmV0a2V5",
            ),
        ])
        .expect("ok")
        .config;
        let described = c.describe();
        assert!(!format!("{described:?}").contains("c2VjcmV0a2V5"));
        assert!(!format!("{c:?}").contains("c2VjcmV0a2V5"));
        assert!(described.contains(&("AZURE_STORAGE_CONNECTION_STRING", "[redacted]".to_owned())));
        assert!(described.contains(&(
            "AZURE_STORAGE_ACCOUNT_KEY",
            "[redacted] (from AZURE_STORAGE_CONNECTION_STRING)".to_owned()
        )));
        assert!(described.contains(&("AZURE_STORAGE_ACCOUNT_NAME", "acct".to_owned())));
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
