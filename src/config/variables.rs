//! Every variable Bindery reads, each declared once: its name, type, default, documentation
//! (help and example) and whether it is secret. Parsing, defaults, `bindery config`, `--help`
//! and the README's table all come from here.
//!
//! A variable that stands alone is a field of [`Settings`] (`{field name}`), which
//! [`Config`](super::Config) dereferences to: adding one is its declaration here plus its use.
//! Those that combine into one value (the database, the blob store and its credentials,
//! `$DATA_DIR`-relative paths) are read through their declarations by the code that combines
//! them, in the sibling modules.

use std::net::IpAddr;
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::time::Duration;

use url::Url;

use super::Failpoint;
use super::values::{self, LogFormat, RateLimit, SignUp};
use super::variable::variables;
use super::{BlobUrl, DatabaseUrl, Secret, azure, blob, database};

variables! {
    /// TCP port the web server listens on (0 picks a free port).
    var PORT: u16 = value("8080"), example "8080",
        parse values::port, {field port};
    /// Address the web server binds to.
    var HOST: IpAddr = value("0.0.0.0"), example "127.0.0.1",
        parse values::ip, {field host};
    /// Directory for the embedded database, blobs and logs. Must be writable when any of them
    /// is kept there (with PostgreSQL, a cloud blob store and no log files it is not used). On
    /// Azure App Service the default is `/home/bindery`, on the share kept across restarts.
    var DATA_DIR: PathBuf = value("./data"), example "/var/lib/bindery",
        parse values::path, {shown |c| c.data_dir.display().to_string()};
    /// Database: `sqlite://PATH` (embedded default) or `postgres://…` to scale out.
    secret DATABASE_URL: DatabaseUrl = derived("sqlite://$DATA_DIR/bindery.db"),
        example "postgres://bindery:secret@db.internal:5432/bindery",
        parse database::parse_url, {shown |c| c.database.redacted()};
    /// libpq's TLS mode for PostgreSQL when `DATABASE_URL` has no `sslmode` (for hosts that own
    /// `DATABASE_URL`): `disable`, `prefer` (TLS when the server offers it), `require`,
    /// `verify-ca` or `verify-full`.
    var PGSSLMODE: &'static str = derived("prefer"), example "require",
        parse database::ssl_mode, {hidden};
    /// PEM file of the CA that issued the PostgreSQL server's certificate, or `system` for the
    /// system's roots, when `DATABASE_URL` has no `sslrootcert`.
    var PGSSLROOTCERT: String = unset, example "/etc/ssl/certs/db-ca.pem",
        parse values::text, {hidden};
    /// Blob store: `file://DIR` (default), `az://CONTAINER` (Azure Blob Storage) or
    /// `s3://BUCKET[/PREFIX]` (Amazon S3 or an S3-compatible service).
    var BLOB_URL: BlobUrl = derived("file://$DATA_DIR/blobs"), example "az://manuscripts",
        parse blob::parse_url, {shown |c| c.blob.to_string()};
    /// Azure storage account for `az://` blob URLs.
    var AZURE_STORAGE_ACCOUNT_NAME: String = unset, example "bindery",
        parse values::text, {shown shown::azure_account_name};
    /// Access key of that account.
    secret AZURE_STORAGE_ACCOUNT_KEY: Secret<String> = unset,
        example "base64 key from the Azure portal",
        parse values::secret, {shown shown::azure_account_key};
    /// Talk to the Azurite emulator on loopback instead of Azure (tests, development).
    var AZURE_STORAGE_USE_EMULATOR: bool = value("false"), example "true",
        parse values::boolean, {shown |c| c.azure.use_emulator.to_string()};
    /// Blob service URL, for other Azure clouds or an Azurite elsewhere (http is allowed).
    var AZURE_STORAGE_ENDPOINT: Url =
        derived("https://$AZURE_STORAGE_ACCOUNT_NAME.blob.core.windows.net"),
        example "http://127.0.0.1:10000/devstoreaccount1",
        parse azure::parse_endpoint, {shown shown::azure_endpoint};
    /// Instead of the account variables: the storage account's connection string
    /// (`AccountName`/`AccountKey`, `BlobEndpoint`/`SharedAccessSignature`, or
    /// `UseDevelopmentStorage=true` for a local Azurite).
    secret AZURE_STORAGE_CONNECTION_STRING: Secret<String> = unset,
        example "DefaultEndpointsProtocol=https;AccountName=bindery;AccountKey=…;EndpointSuffix=core.windows.net",
        parse values::secret, {shown shown::azure_connection_string};
    /// Instead of the account key: a shared access signature for the container or account, with or
    /// without the leading `?` (read, add, create, write, delete and list permissions).
    secret AZURE_STORAGE_SAS_TOKEN: Secret<String> = unset,
        example "sv=2022-11-02&sr=c&sp=racwdl&se=2030-01-01T00:00:00Z&sig=…",
        parse values::secret, {shown shown::azure_sas_token};
    /// Instead of a key: sign in to Azure Storage as the host's managed identity (App Service,
    /// Container Apps, VMs), which needs the Storage Blob Data Contributor role on the account.
    var AZURE_STORAGE_USE_MANAGED_IDENTITY: bool = value("false"), example "true",
        parse values::boolean, {shown shown::azure_managed_identity};
    /// Client id of the user-assigned managed identity to use (with
    /// AZURE_STORAGE_USE_MANAGED_IDENTITY); unset, the system-assigned one.
    var AZURE_CLIENT_ID: String = unset, example "6f1c2a4e-3b5d-4e7f-9a1b-2c3d4e5f6a7b",
        parse azure::parse_client_id, {shown shown::azure_client_id};
    /// Set by App Service and Container Apps (with IDENTITY_HEADER): where a managed identity gets
    /// its tokens; unset, the instance metadata service (169.254.169.254) is asked.
    var IDENTITY_ENDPOINT: Url = unset, example "http://localhost:42356/msi/token",
        parse values::http_url, {shown shown::identity_endpoint};
    /// Access key id for `s3://` blob URLs; with neither it nor AWS_SECRET_ACCESS_KEY set,
    /// credentials come from the EC2 instance metadata service (an instance profile).
    var AWS_ACCESS_KEY_ID: String = unset, example "AKIAIOSFODNN7EXAMPLE",
        parse values::text, {shown shown::aws_access_key_id};
    /// Secret access key of that key id.
    secret AWS_SECRET_ACCESS_KEY: Secret<String> = unset,
        example "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        parse values::secret, {shown shown::aws_secret_access_key};
    /// Session token of temporary credentials (with AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY).
    secret AWS_SESSION_TOKEN: Secret<String> = unset, example "IQoJb3JpZ2luX2VjE…",
        parse values::secret, {shown shown::aws_session_token};
    /// Region of the `s3://` bucket (`auto` for Cloudflare R2).
    var AWS_REGION: String = value(blob::DEFAULT_REGION), example "eu-west-1",
        parse blob::parse_region, {shown shown::aws_region};
    /// S3-compatible service URL (MinIO, R2, B2, moto; http is allowed); buckets are addressed
    /// path-style, `$AWS_ENDPOINT_URL/BUCKET`. It must honour `If-None-Match: *` on uploads.
    var AWS_ENDPOINT_URL: Url = derived("https://s3.$AWS_REGION.amazonaws.com"),
        example "https://ACCOUNT_ID.r2.cloudflarestorage.com",
        parse blob::parse_endpoint, {shown shown::aws_endpoint_url};
    /// Directory for daily-rolling log files, one set per role (web, worker). Set it empty or
    /// to `off` to write no files (stdout and the database still get every line). Left unset,
    /// log files that cannot be written there are turned off with a warning (a host that runs
    /// the image as a user of its own, with PostgreSQL and a cloud blob store, keeps nothing in
    /// `DATA_DIR`); a `LOG_DIR` that is set must be writable.
    var LOG_DIR: PathBuf = derived("$DATA_DIR/logs"), example "/var/log/bindery",
        parse values::path, {shown |c| c.log_dir.as_ref().map_or_else(|| "off".to_owned(), |d| d.display().to_string())};
    /// Log line format on stdout and in files: `text` or `json`.
    var LOG_FORMAT: LogFormat = value("text"), example "json",
        parse values::log_format, {field log_format};
    /// How many log files to keep per role: one a day, and another each time a day's file
    /// reaches LOG_MAX_FILE_SIZE. The oldest go first.
    var LOG_MAX_FILES: usize = value("7"), example "14",
        parse values::count, {field log_max_files};
    /// Size at which a log file is closed and the next one begun, so the files of one role
    /// take at most LOG_MAX_FILES times this much.
    var LOG_MAX_FILE_SIZE: u64 = value("100MiB"), example "20MiB",
        parse values::size, {field log_max_file_size, shown values::show_size};
    /// Log filter, in `tracing-subscriber` EnvFilter syntax.
    var RUST_LOG: String = value("info"), example "info,bindery=debug",
        parse values::log_filter, {field log_filter};
    /// How many jobs one worker process runs at once.
    var WORKER_CONCURRENCY: NonZeroUsize = value("16"), example "32",
        parse values::positive, {field worker_concurrency};
    /// Memory a worker's conversions may use at once. Jobs are admitted by their expected cost
    /// within it, and one tenant holds at most three quarters while another's jobs wait; a
    /// manuscript's reading, its packaging and each piece of its print edition (a chapter or a
    /// run of them, about 100 MiB) run in a child process limited to this much (`setrlimit`),
    /// so a runaway book fails alone (`too_large`), and an image may decode to half of it. The
    /// default suits a 512 MB host, and prints every book a paperback can hold.
    var WORKER_MEMORY_BUDGET: u64 = value("320MiB"), example "1GiB",
        parse worker_memory_budget, {field worker_memory_budget, shown values::show_size};
    /// Processor time one manuscript's reading may take in its child process before it is stopped
    /// (`too_complex`).
    var STEP_CPU_LIMIT: Duration = value("300s"), example "10m",
        parse values::duration, {field step_cpu_limit};
    /// Make a print edition of every book (a paperback PDF and its cover, whose pages the ebooks
    /// then mark). `false` makes the ebooks alone: for a host too small to typeset (each piece
    /// of a book, a chapter or a few, takes about 100 MiB in a child limited by
    /// `WORKER_MEMORY_BUDGET`), or a service that never prints.
    var PRINT_EDITION: bool = value("true"), example "false",
        parse values::boolean, {field print_edition};
    /// How many of a book's newest revisions keep their files (EPUB, reader, print edition,
    /// covers, manuscript) once a newer one is published; an older revision keeps its record
    /// but not its files, and can no longer be downloaded or restored. The revision a book
    /// shows always keeps its files.
    var REVISIONS_KEPT: NonZeroUsize = value("10"), example "3",
        parse values::positive, {field revisions_kept};
    /// Most PostgreSQL connections one process opens; with `serve`, the web process and its worker
    /// together (the web a quarter, 2 to 8; the worker the rest). Fits entry-level managed plans;
    /// give each process its share of the plan's limit.
    var DATABASE_MAX_CONNECTIONS: u32 = value("20"), example "18",
        parse database_max_connections, {field database_max_connections};
    /// Threads serving HTTP in a web process. Each holds about 1.4 MB even idle, and the web
    /// mostly waits on storage; unset, half the machine's cores (at least one), the other half
    /// being the worker's under `serve`.
    var HTTP_WORKERS: NonZeroUsize = unset, example "4",
        parse values::positive, {field http_workers};
    /// Longest a `POST /api/v1/books?wait=` request is held before it answers 202; under the 30 s
    /// that Heroku's and most routers allow.
    var MAX_WAIT: Duration = value("25s"), example "25s",
        parse max_wait, {field max_wait};
    /// Whether the local disk outlives a restart. Unset, it is detected: on Heroku, Dokku, Render,
    /// Railway, Fly.io and Azure App Service a data directory outside a mounted volume is thrown
    /// away, and a database or blob store there is refused at start. `true` or `false` says so
    /// instead.
    var PERSISTENT_DISK: Option<bool> = value("detected"), example "true",
        parse values::detected_or_boolean, {field persistent_disk, shown values::show_detected};
    /// How long SIGTERM/SIGINT waits for requests and jobs to finish before forcing exit.
    var SHUTDOWN_TIMEOUT: Duration = value("25s"), example "25s",
        parse values::duration, {field shutdown_timeout};
    /// A worker whose heartbeat is older than this counts as dead (also the /readyz bound).
    var WORKER_STALL_TIMEOUT: Duration = value("60s"), example "60s",
        parse values::duration, {field worker_stall_timeout};
    /// How long a claimed job is held without a heartbeat; a dead worker's jobs run again after
    /// this.
    var JOB_LEASE: Duration = value("30s"), example "30s",
        parse job_lease, {field job_lease};
    /// Finished jobs are deleted after this long (dead jobs are kept for a person to retry).
    var JOB_RETENTION: Duration = value("7d"), example "14d",
        parse values::duration, {field job_retention};
    /// Cron expression (5 or 6 fields, UTC) for pruning finished jobs, or `off`.
    var SCHEDULE_PRUNE_JOBS: Option<String> = value("0 17 * * * *"), example "off",
        parse values::schedule, {field schedule_prune_jobs, shown values::show_schedule};
    /// Most log lines a process stores in the database a second (for `bindery logs`); beyond it
    /// they are dropped there and counted (`bindery_log_events_dropped_total`), but still
    /// printed and written to the files.
    var LOG_MAX_RATE: u64 = value("2000"), example "500",
        parse values::count64, {field log_max_rate};
    /// Log lines kept in the database (for `bindery logs`) are deleted after this long.
    var LOG_RETENTION: Duration = value("7d"), example "2d",
        parse values::duration, {field log_retention};
    /// At most this many log lines are kept in the database; the oldest go first.
    var LOG_MAX_LINES: u64 = value("1000000"), example "5000000",
        parse values::count64, {field log_max_lines};
    /// Cron expression (5 or 6 fields, UTC) for pruning the database's log lines to
    /// LOG_RETENTION and LOG_MAX_LINES, or `off`.
    var SCHEDULE_PRUNE_LOGS: Option<String> = value("0 */10 * * * *"), example "off",
        parse values::schedule, {field schedule_prune_logs, shown values::show_schedule};
    /// Cron expression (5 or 6 fields, UTC) for rebuilding every tenant's OPDS and JSON catalog,
    /// or `off` (publishing and deleting a book still refresh it).
    var SCHEDULE_CATALOG_REFRESH: Option<String> = value("0 */15 * * * *"), example "off",
        parse values::schedule, {field schedule_catalog_refresh, shown values::show_schedule};
    /// Cron expression (5 or 6 fields, UTC) for deleting files of books that do not exist (uploads
    /// cut off by a crash), or `off`. Each run deletes at most a tenth of the book folders it
    /// finds (at least one, at most 100), and nothing unless the database and the blob store hold
    /// the same installation id.
    var SCHEDULE_SWEEP_BLOBS: Option<String> = value("0 43 3 * * *"), example "off",
        parse values::schedule, {field schedule_sweep_blobs, shown values::show_schedule};
    /// Largest manuscript accepted, as uploaded.
    var MAX_MANUSCRIPT_SIZE: u64 = value("100MiB"), example "20MiB",
        parse values::size, {shown |c| values::show_size(&c.limits.max_manuscript_bytes)};
    /// Largest cover image accepted, as uploaded. An upload whose `Content-Length` is over
    /// MAX_MANUSCRIPT_SIZE and this together (and 2 MiB for the other fields) is refused before
    /// any of it is read.
    var MAX_COVER_SIZE: u64 = value("20MiB"), example "10MiB",
        parse values::size, {field max_cover_size, shown values::show_size};
    /// How long a request body may send nothing before the request is ended with 408 and
    /// nothing of it is kept (an upload trickling a byte at a time holds a connection and a
    /// half-written file).
    var BODY_IDLE_TIMEOUT: Duration = value("30s"), example "60s",
        parse values::duration, {field body_idle_timeout};
    /// Most a DOCX, OpenDocument, EPUB or zipped web page may inflate to, in total and per
    /// entry (zip bomb guard; actual bytes are counted, not the declared sizes).
    var MAX_INFLATED_SIZE: u64 = value("512MiB"), example "256MiB",
        parse values::size, {shown |c| values::show_size(&c.limits.max_inflated_bytes)};
    /// Most entries such an archive (DOCX, OpenDocument, EPUB, zipped web page) may have.
    var MAX_ZIP_ENTRIES: usize = value("10000"), example "2000",
        parse values::count, {shown |c| c.limits.max_zip_entries.to_string()};
    /// Most pixels (width × height) any image may decode to.
    var MAX_IMAGE_PIXELS: u64 = value("50000000"), example "25000000",
        parse values::count64, {shown |c| c.limits.max_image_pixels.to_string()};
    /// Most words a book may have (the longest novels printed have about 2 million); counted while
    /// the manuscript is read, so an amplified file stops early.
    var MAX_BOOK_WORDS: u64 = value("3000000"), example "1500000",
        parse values::count64, {shown |c| c.limits.max_words.to_string()};
    /// Most paragraphs, text runs, formatting spans and breaks a book may have, counted while it
    /// is read: bounds memory when the markup is many and the words few.
    var MAX_BOOK_ELEMENTS: u64 = value("2000000"), example "1000000",
        parse values::count64, {shown |c| c.limits.max_elements.to_string()};
    /// Most words in one chapter (one file of the EPUB, one page of the web reader).
    var MAX_CHAPTER_WORDS: u64 = value("500000"), example "200000",
        parse values::count64, {shown |c| c.limits.max_chapter_words.to_string()};
    /// Most chapters a book may have (the Bible has 1,189). Each is a job, a file of the EPUB and
    /// a page of the web reader, so a manuscript of tiny chapters cannot make a worker write
    /// hundreds of thousands of files; more is refused, with advice to split the book.
    var MAX_CHAPTERS: u64 = value("2000"), example "5000",
        parse values::count64, {shown |c| c.limits.max_chapters.to_string()};
    /// BCP 47 language of books whose manuscript and upload name none.
    var DEFAULT_LANGUAGE: String = value(crate::language::DEFAULT_LANGUAGE), example "en-GB",
        parse values::language, {field default_language};
    /// Directory of fonts (`.ttf`, `.otf`, `.ttc`, in it and its folders) the print edition may
    /// use besides its own and the system's Noto faces (see `bindery fonts`), for a script
    /// those lack or another typeface. A face's file is read only when a book uses it.
    var FONTS_DIR: PathBuf = unset, example "/usr/share/fonts/opentype/noto",
        parse values::directory, {field fonts_dir};
    /// Uploads, deletes and retries allowed per API token (`N/s`, `N/min`, `N/h`, or `off`), per
    /// web process.
    var RATE_LIMIT_WRITES: Option<RateLimit> = value("60/min"), example "600/h",
        parse values::rate_limit, {field rate_limit_writes, shown values::show_rate_limit};
    /// Most event streams (a book's progress, the admin log) one API token may hold open, per
    /// web process; more answer 429. Streams end within a few seconds of their token's
    /// revocation.
    var MAX_STREAMS_PER_TOKEN: usize = value("20"), example "50",
        parse values::count, {field max_streams_per_token};
    /// When set, `/metrics` answers only `Authorization: Bearer $METRICS_TOKEN` (Prometheus:
    /// `authorization: {credentials: …}`); unset, anyone who can reach it can read it (queue names
    /// and counts, no book data). At least 16 characters.
    secret METRICS_TOKEN: Secret<String> = unset, example "3f9c1b7e5a2d4c6b8e0f1a3c5e7b9d2f",
        parse metrics_token, {field metrics_token};
    /// The first admin's API token, for hosts where no shell can run `bindery token create
    /// --admin`: at start, while no admin token is live, this value becomes one (named `admin`),
    /// stored hashed like every token. At least 32 characters without spaces (`openssl rand -hex
    /// 32`, or the host's generated secret). Sign in with it, make an admin token of your own,
    /// revoke `admin` and unset this; a revoked value never comes back.
    secret BINDERY_ADMIN_TOKEN: Secret<String> = unset,
        example "9f2c6d1e0b7a4c3f8e5d2a1b6c9f0e3d7a4b1c8e5f2d9a6b3c0e7f4a1d8b5c2e",
        parse admin_token, {field admin_token};
    /// Let people sign in with a password (argon2id, with an optional TOTP code), besides
    /// passkeys and single sign-on. `false` keeps passwords off the sign-in and invitation pages
    /// and refuses them; passwords already set are kept for when they are allowed again.
    var ACCOUNT_PASSWORDS: bool = value("true"), example "false",
        parse values::boolean, {field account_passwords};
    /// Single sign-on: the OpenID Connect provider's issuer, exactly as its discovery document
    /// (`ISSUER/.well-known/openid-configuration`) names it. With OIDC_CLIENT_ID and
    /// OIDC_CLIENT_SECRET, the sign-in page offers it; register `$APP_URL/signin/sso/callback`
    /// with the provider as the redirect URI.
    var OIDC_ISSUER_URL: Url = unset, example "https://accounts.example.com",
        parse values::http_url, {field oidc_issuer_url};
    /// The client id Bindery has at the OpenID Connect provider.
    var OIDC_CLIENT_ID: String = unset, example "bindery",
        parse values::text, {field oidc_client_id};
    /// The client secret Bindery has at the OpenID Connect provider.
    secret OIDC_CLIENT_SECRET: Secret<String> = unset, example "kY3…",
        parse oidc_client_secret, {field oidc_client_secret};
    /// Who a first single sign-on lets in: `email`, the account whose address the provider says
    /// it has verified; `invitation`, only someone who opens an invitation and chooses single
    /// sign-on there (an account then signs in with the provider it was made with).
    var OIDC_SIGN_UP: SignUp = value("email"), example "invitation",
        parse values::sign_up, {field oidc_sign_up};
    /// Mail server for invitations, optional: `smtps://USER:PASSWORD@HOST` (TLS from the start,
    /// port 465), `smtp://USER:PASSWORD@HOST:587?tls=required` (STARTTLS), or `smtp://HOST:PORT`
    /// (plain, for a relay on the same network). Set, the People page can mail an invitation's
    /// link; unset, the link is copied and sent by hand, as always.
    secret SMTP_URL: Secret<String> = unset, example "smtps://books%40example.com:app-password@smtp.example.com",
        parse smtp_url, {field smtp_url};
    /// Who invitations are mailed from, as a mailbox: `Bindery <books@example.com>`.
    var SMTP_FROM: String = value("Bindery <bindery@localhost>"), example "River Press <books@riverpress.example>",
        parse smtp_from, {field smtp_from};
    /// Let webhooks reach loopback, private, link-local and other non-public addresses (off by
    /// default, so a callback URL cannot probe the host's network).
    var WEBHOOK_ALLOW_PRIVATE: bool = value("false"), example "true",
        parse values::boolean, {field webhook_allow_private};
    /// Testing only: `before_commit:JOB` or `after_commit:JOB` makes the worker SIGKILL itself at
    /// that point, once; with `:abort` after it, fail an allocation there instead.
    var BINDERY_FAILPOINT: Failpoint = unset, example "after_commit:book.parse",
        parse values::failpoint, {field failpoint};
    /// Public URL of this app; the web process requests `$KEEPALIVE_URL/healthz` so idle-stopping
    /// hosts keep it running.
    var KEEPALIVE_URL: Url = derived("from APP_URL or WEBSITE_HOSTNAME, else off"),
        example "https://books.example.com",
        parse values::http_url, {shown shown::keepalive_url};
    /// How often the keep-alive request is made (±10% jitter).
    var KEEPALIVE_INTERVAL: Duration = value("5m"), example "5m",
        parse values::duration, {field keepalive_interval};
    /// Public URL of this app: links in webhook events are absolute under it, and it is the
    /// keep-alive default when KEEPALIVE_URL is unset.
    var APP_URL: Url = unset, example "https://books.example.com",
        parse values::http_url, {shown shown::app_url};
    /// Set by Heroku and Dokku: the local disk is thrown away at restarts (see PERSISTENT_DISK).
    var DYNO: String = unset, example "web.1",
        parse values::text, {hidden};
    /// Set by Render: the local disk is thrown away at restarts unless a disk is attached (see
    /// PERSISTENT_DISK).
    var RENDER: String = unset, example "true",
        parse values::text, {hidden};
    /// Set by Railway: the local disk is thrown away at restarts unless a volume is mounted (see
    /// PERSISTENT_DISK).
    var RAILWAY_PROJECT_ID: String = unset, example "1b2c…",
        parse values::text, {hidden};
    /// Set by Fly.io: the local disk is thrown away at restarts unless a volume is mounted (see
    /// PERSISTENT_DISK).
    var FLY_APP_NAME: String = unset, example "bindery",
        parse values::text, {hidden};
    /// Set by Azure App Service: the local disk is thrown away at restarts; with
    /// WEBSITES_ENABLE_APP_SERVICE_STORAGE=true, DATA_DIR defaults to /home/bindery, on the share
    /// kept across restarts (see PERSISTENT_DISK).
    var WEBSITE_SITE_NAME: String = unset, example "bindery",
        parse values::text, {hidden};
    /// An App Service setting: `true` mounts the kept `/home` share in a custom container, and
    /// DATA_DIR then defaults to /home/bindery. `az webapp create` sets it `false` for a
    /// container, and /home is then neither kept nor writable by the image's user.
    var WEBSITES_ENABLE_APP_SERVICE_STORAGE: bool = value("false"), example "true",
        parse values::boolean, {hidden};
    /// Set by Azure App Service; `https://$WEBSITE_HOSTNAME` stands in for APP_URL when that is
    /// unset.
    var WEBSITE_HOSTNAME: String = unset, example "bindery.azurewebsites.net",
        parse values::text, {hidden};
}

/// `[redacted]` for a secret that is set.
fn redacted(set: bool) -> String {
    if set { "[redacted]" } else { "" }.to_owned()
}

fn worker_memory_budget(value: &str) -> Result<u64, String> {
    let budget = values::size(value)?;
    if budget < 32 * 1024 * 1024 {
        return Err("is too small to read a manuscript: use at least 32MiB".to_owned());
    }
    Ok(budget)
}

fn database_max_connections(value: &str) -> Result<u32, String> {
    let connections = values::positive(value)?.get();
    u32::try_from(connections).map_err(|_| "is more connections than any server allows".to_owned())
}

fn max_wait(value: &str) -> Result<Duration, String> {
    let wait = values::duration(value)?;
    if wait > Duration::from_secs(3600) {
        return Err(
            "is longer than any router holds a request: use at most 1h (25s suits most hosts)"
                .to_owned(),
        );
    }
    Ok(wait)
}

fn job_lease(value: &str) -> Result<Duration, String> {
    let lease = values::duration(value)?;
    if lease < Duration::from_secs(1) {
        return Err("is too short: use at least 1s".to_owned());
    }
    Ok(lease)
}

fn smtp_url(value: &str) -> Result<Secret<String>, String> {
    match url::Url::parse(value) {
        Ok(url) if matches!(url.scheme(), "smtp" | "smtps") && url.host_str().is_some() => {
            Ok(Secret::new(value.to_owned()))
        }
        _ => Err(
            "is not an SMTP address: use smtps://USER:PASSWORD@HOST or smtp://HOST:PORT".to_owned(),
        ),
    }
}

fn smtp_from(value: &str) -> Result<String, String> {
    value
        .parse::<lettre::message::Mailbox>()
        .map(|_| value.to_owned())
        .map_err(|_| {
            "is not a mailbox: use `Name <address@example.com>` or `address@example.com`".to_owned()
        })
}

fn oidc_client_secret(value: &str) -> Result<Secret<String>, String> {
    if value.trim().is_empty() {
        return Err("is empty: set the client secret the provider gave Bindery".to_owned());
    }
    Ok(Secret::new(value.to_owned()))
}

fn metrics_token(value: &str) -> Result<Secret<String>, String> {
    if value.chars().count() < 16 {
        return Err("is too short to keep anyone out: use at least 16 characters, e.g. the output of `openssl rand -hex 32`".to_owned());
    }
    Ok(Secret::new(value.to_owned()))
}

/// Shortest value `BINDERY_ADMIN_TOKEN` may have: as hard to guess as a made token.
pub const ADMIN_TOKEN_MIN_LEN: usize = 32;
/// Longest value it may have.
pub const ADMIN_TOKEN_MAX_LEN: usize = 256;

/// Whether `value` has the shape a chosen admin token must have: 32 to 256 printable ASCII
/// characters without spaces, so that a host's secret generator (hex, base64) fits and a bearer
/// header carries it as it is; and not starting with `bdy_`, which only tokens Bindery makes
/// do (so a mangled one of those is still refused without a database query).
pub fn chosen_token_shape(value: &str) -> bool {
    (ADMIN_TOKEN_MIN_LEN..=ADMIN_TOKEN_MAX_LEN).contains(&value.len())
        && value.bytes().all(|b| b.is_ascii_graphic())
        && !made_token_prefix(value)
}

fn made_token_prefix(value: &str) -> bool {
    value
        .get(..4)
        .is_some_and(|p| p.eq_ignore_ascii_case("bdy_"))
}

fn admin_token(value: &str) -> Result<Secret<String>, String> {
    if made_token_prefix(value) {
        return Err("starts with bdy_, which only tokens Bindery makes do: choose your own value, e.g. the output of `openssl rand -hex 32`".to_owned());
    }
    if value.bytes().any(|b| !b.is_ascii_graphic()) {
        return Err("must be printable ASCII without spaces, as a bearer token is sent: use e.g. the output of `openssl rand -hex 32`".to_owned());
    }
    if value.len() < ADMIN_TOKEN_MIN_LEN {
        return Err(format!(
            "is too short to keep anyone out: use at least {ADMIN_TOKEN_MIN_LEN} characters, e.g. the output of `openssl rand -hex 32`"
        ));
    }
    if value.len() > ADMIN_TOKEN_MAX_LEN {
        return Err(format!(
            "is longer than {ADMIN_TOKEN_MAX_LEN} characters: use e.g. the output of `openssl rand -hex 32`"
        ));
    }
    let guesses = zxcvbn::zxcvbn(value, &[]).guesses_log10();
    if guesses < ADMIN_TOKEN_MIN_GUESSES_LOG10 {
        return Err(format!(
            "is too easy to guess (about 10^{guesses:.0} guesses; its repeats, sequences, keyboard runs or words make it so): use a random value of at least {ADMIN_TOKEN_MIN_LEN} characters, e.g. the output of `openssl rand -hex 32`"
        ));
    }
    Ok(Secret::new(value.to_owned()))
}

/// How many guesses (as a power of ten, by zxcvbn's estimate) a chosen admin token must take
/// at least. zxcvbn counts guesses in 64 bits, so its estimates stop near 10^19, where random
/// values of the shortest length land (the unit test samples them in every alphabet hosts'
/// generators use); 32 `a`s, a counted sequence, a keyboard run or a word repeated estimate
/// in the single digits.
pub const ADMIN_TOKEN_MIN_GUESSES_LOG10: f64 = 16.0;

/// How `bindery config` shows the variables folded into other values.
mod shown {
    use super::super::{Config, redact_url};
    use super::redacted;

    pub(super) fn azure_account_name(c: &Config) -> String {
        c.azure.account.clone().unwrap_or_default()
    }

    pub(super) fn azure_account_key(c: &Config) -> String {
        c.azure.shown_secret(c.azure.access_key.is_some())
    }

    pub(super) fn azure_endpoint(c: &Config) -> String {
        c.azure
            .endpoint
            .as_ref()
            .map_or_else(String::new, redact_url)
    }

    pub(super) fn azure_connection_string(c: &Config) -> String {
        redacted(c.azure.from_connection_string)
    }

    pub(super) fn azure_sas_token(c: &Config) -> String {
        c.azure.shown_secret(c.azure.sas_token.is_some())
    }

    pub(super) fn azure_managed_identity(c: &Config) -> String {
        c.azure.managed_identity.is_some().to_string()
    }

    pub(super) fn azure_client_id(c: &Config) -> String {
        c.azure
            .managed_identity
            .as_ref()
            .and_then(|i| i.client_id.clone())
            .unwrap_or_default()
    }

    pub(super) fn identity_endpoint(c: &Config) -> String {
        c.azure
            .managed_identity
            .as_ref()
            .and_then(|i| i.token_endpoint.as_ref())
            .map_or_else(String::new, redact_url)
    }

    pub(super) fn aws_access_key_id(c: &Config) -> String {
        c.s3()
            .and_then(|s| s.access_key_id.clone())
            .unwrap_or_default()
    }

    pub(super) fn aws_secret_access_key(c: &Config) -> String {
        redacted(c.s3().is_some_and(|s| s.secret_access_key.is_some()))
    }

    pub(super) fn aws_session_token(c: &Config) -> String {
        redacted(c.s3().is_some_and(|s| s.session_token.is_some()))
    }

    pub(super) fn aws_region(c: &Config) -> String {
        c.s3().map(|s| s.region.clone()).unwrap_or_default()
    }

    pub(super) fn aws_endpoint_url(c: &Config) -> String {
        c.s3()
            .and_then(|s| s.endpoint.as_ref())
            .map_or_else(String::new, redact_url)
    }

    pub(super) fn keepalive_url(c: &Config) -> String {
        c.keepalive_url
            .as_ref()
            .map_or_else(|| "(off)".to_owned(), redact_url)
    }

    pub(super) fn app_url(c: &Config) -> String {
        c.public_url.as_ref().map_or_else(String::new, redact_url)
    }
}
