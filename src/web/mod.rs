//! The HTTP side: an actix-web application built from the configuration, zero2prod style.
//!
//! `Application::build` binds the listener (port 0 works) and remembers the real port; the
//! supervisor decides when it stops. actix's own signal handling is off: the supervisor owns
//! signals, because it must forward them to the worker child and escalate on a second one.

mod admin;
mod advance_copies;
pub mod api;
mod assets;
mod body;
mod book_events;
mod book_view;
pub mod book_watch;
mod caller;
mod catalog;
mod changes;
mod conditional;
mod downloads;
mod error;
mod error_responses;
mod fault;
mod files;
mod frame;
mod head;
mod health;
mod methods;
mod metrics;
mod pages;
pub(crate) mod query;
mod reader_site;
mod request_id;
mod request_log;
pub mod session;
pub mod streams;

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::{Server, ServerHandle};
use actix_web::http::header;
use actix_web::middleware::{DefaultHeaders, from_fn};
use actix_web::{App, HttpServer, web};
use anyhow::Context;
use tokio::sync::watch;

use crate::config::Config;
use crate::storage::{BlobStore, Database};

/// The app's pages run only their own scripts and styles, and no site may frame them.
const APP_CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; \
                       img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; \
                       form-action 'self'";

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub db: Database,
    pub blobs: BlobStore,
    pub queue: crate::jobs::JobQueue,
    pub limits: crate::manuscript::Limits,
    /// Per-token limit on writes; `None` when `RATE_LIMIT_WRITES=off`.
    pub writes: Option<std::sync::Arc<api::limits::WriteLimiter>>,
    pub worker_stall_timeout: Duration,
    /// Whether `/readyz` fails without a fresh worker heartbeat: under `serve`, whose own
    /// worker it is; not for a `web` process, which is ready to serve while workers come and
    /// go elsewhere (a worker outage must not take every web instance out of the balancer).
    pub ready_needs_worker: bool,
    /// The whole configuration, for what the fields above do not cover (log files, schedules).
    pub config: std::sync::Arc<Config>,
    /// What wakes event streams when their book changes.
    pub book_watch: book_watch::BookWatch,
    /// The open event streams: their cap per token, and their end when their token's comes.
    pub streams: streams::Streams,
    /// The single sign-on provider, when `OIDC_ISSUER_URL` and its client are set.
    pub sign_on: Option<Arc<crate::accounts::single_sign_on::Provider>>,
    /// The mail server invitations can be mailed through, when `SMTP_URL` is set.
    pub mailer: Option<Arc<crate::accounts::mail::Mailer>>,
}

/// A bound, not yet running, web server.
pub struct Application {
    server: Server,
    addr: SocketAddr,
    stopping: Arc<watch::Sender<bool>>,
}

/// Stops the server. Long-lived responses (event streams) are told first, so that a graceful
/// stop does not wait out the whole shutdown timeout for a browser tab left open on them.
#[derive(Clone)]
pub struct AppHandle {
    server: ServerHandle,
    stopping: Arc<watch::Sender<bool>>,
}

impl AppHandle {
    pub async fn stop(&self, graceful: bool) {
        self.stopping.send_replace(true);
        self.server.stop(graceful).await;
    }
}

/// Tells a response that would otherwise never end that the server is stopping (app data of
/// every request).
#[derive(Clone)]
pub struct Stopping(watch::Receiver<bool>);

impl Stopping {
    /// Resolves once the server has begun to stop.
    pub async fn wait(&mut self) {
        let _ = self.0.wait_for(|stopping| *stopping).await;
    }
}

/// How many threads serve HTTP: `HTTP_WORKERS`, else half the cores, at least one. actix-web's
/// own default is one per core, and each builds the whole application and keeps about 1.4 MB
/// (measured by `scripts/bench-startup`: 1.35 MB between one and two), so an idle web process
/// grew with the machine it landed on; and the web waits on storage far more than it computes
/// (one thread served as many requests as two in `scripts/bench-api` on two cores).
fn http_workers(config: &Config) -> usize {
    config.http_workers.map_or_else(
        || {
            std::thread::available_parallelism()
                .map_or(1, std::num::NonZeroUsize::get)
                .div_ceil(2)
        },
        std::num::NonZeroUsize::get,
    )
}

impl Application {
    pub fn build(config: &Config, state: AppState) -> anyhow::Result<Self> {
        let listener = TcpListener::bind((config.host, config.port))
            .with_context(|| format!("binding {}:{}", config.host, config.port))?;
        let addr = listener.local_addr().context("reading the bound address")?;
        let state = web::Data::new(state);
        let allowed = Arc::new(api::allowed_methods());
        let body_idle = config.body_idle_timeout;
        let (stopping, stopping_rx) = watch::channel(false);
        let stopping_rx = web::Data::new(Stopping(stopping_rx));
        let server = HttpServer::new(move || {
            let allowed = allowed.clone();
            App::new()
                .app_data(state.clone())
                .app_data(stopping_rx.clone())
                // Error pages with the navigation, under the HEAD handling like any page.
                .wrap(from_fn(frame::with_navigation))
                // Innermost, so that the log and metrics still see the HEAD.
                .wrap(from_fn(head::head_as_get))
                .wrap(from_fn(move |req, next| {
                    body::limit_idle(body_idle, req, next)
                }))
                // Outside `head`, so that it sees a HEAD as such.
                .wrap(from_fn(move |req, next| {
                    methods::check(allowed.clone(), req, next)
                }))
                .wrap(from_fn(request_log::log_request))
                // Defaults for every response; a route that sets its own (the reader) keeps it.
                .wrap(
                    DefaultHeaders::new()
                        .add((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
                        .add((header::REFERRER_POLICY, "no-referrer"))
                        .add((header::CONTENT_SECURITY_POLICY, APP_CSP)),
                )
                .configure(health::routes)
                .configure(assets::routes)
                .configure(pages::routes)
                .configure(files::routes)
                .configure(advance_copies::routes)
                .configure(catalog::routes)
                .configure(api::routes)
                .configure(metrics::routes)
                .default_service(web::to(frame::unmatched))
        })
        .workers(http_workers(config))
        .disable_signals()
        .shutdown_timeout(config.shutdown_timeout.as_secs().max(1))
        .listen(listener)
        .context("starting the HTTP server")?
        .run();
        Ok(Self {
            server,
            addr,
            stopping: Arc::new(stopping),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn handle(&self) -> AppHandle {
        AppHandle {
            server: self.server.handle(),
            stopping: self.stopping.clone(),
        }
    }

    /// Serves until the handle stops the server.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        self.server.await
    }
}
