//! The HTTP client webhooks go out through, and how one attempt at sending an event went.

use std::time::Duration;

use reqwest::header::{CONTENT_TYPE, HeaderValue, USER_AGENT};
use url::Url;

use super::address::{self, Blocked, PublicOnly};
use super::callback_url::host_may_be_public;
use super::deliveries::DeliveryRow;
use super::signature;

/// How long one attempt may take, connection included.
const TIMEOUT: Duration = Duration::from_secs(10);
/// Most of an error response's body quoted in the job's error, to help the tenant debug.
const QUOTED_BODY: usize = 200;

/// How one attempt went.
#[derive(Debug)]
pub enum Answer {
    Delivered(u16),
    /// 410: stop.
    Gone,
    /// Will never work as configured: do not retry.
    Refused(String),
    /// Try again later.
    Failed(String),
}

/// The HTTP client webhooks go out through: no redirects (a receiver could bounce the request
/// to an internal address), no proxy from the environment, a timeout, and unless the operator
/// allows it, only public addresses.
pub struct Sender {
    client: reqwest::Client,
    allow_private: bool,
}

/// The process's sender, made once: every delivery shares its connection pool.
static SHARED: std::sync::OnceLock<Sender> = std::sync::OnceLock::new();

impl Sender {
    /// The process's sender, made on first use (the worker makes it at start, so that a client
    /// that cannot be built stops the start, not a delivery). A process has one configuration,
    /// so `allow_private` is the same on every call.
    pub fn shared(allow_private: bool) -> anyhow::Result<&'static Sender> {
        if let Some(sender) = SHARED.get() {
            return Ok(sender);
        }
        let sender = Sender::new(allow_private)?;
        Ok(SHARED.get_or_init(|| sender))
    }

    pub fn new(allow_private: bool) -> anyhow::Result<Self> {
        let mut builder = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .pool_max_idle_per_host(2);
        if !allow_private {
            builder = builder.dns_resolver(PublicOnly);
        }
        Ok(Self {
            client: builder.build()?,
            allow_private,
        })
    }

    /// One attempt at delivering `row`, signed with each of `secrets`.
    pub async fn send(&self, row: &DeliveryRow, secrets: &[&str]) -> Answer {
        let url = match Url::parse(&row.url) {
            Ok(url) => url,
            Err(e) => return Answer::Refused(format!("the callback URL is not valid ({e})")),
        };
        if !self.allow_private
            && let Some(host) = url.host()
            && !host_may_be_public(&host)
        {
            // IP literals never reach the resolver, so they are judged here.
            return Answer::Refused(
                Blocked {
                    host: host.to_string(),
                }
                .to_string(),
            );
        }
        let timestamp = chrono::Utc::now().timestamp();
        let body = row.body.clone().into_bytes();
        let signature = signature::header(secrets, timestamp, &body);
        let request = self
            .client
            .post(url)
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .header(
                USER_AGENT,
                concat!("Bindery/", env!("CARGO_PKG_VERSION")).to_owned(),
            )
            .header("Bindery-Delivery", &row.id)
            .header("Bindery-Event", &row.event)
            .header("Bindery-Signature", signature)
            .body(body);
        let response = match request.send().await {
            Ok(response) => response,
            Err(e) => return failure(&e),
        };
        let status = response.status();
        if status.is_success() {
            return Answer::Delivered(status.as_u16());
        }
        if status == reqwest::StatusCode::GONE {
            return Answer::Gone;
        }
        let quoted = quote_body(response).await;
        let hint = if status.is_redirection() {
            " (redirects are not followed: point callback_url at the final URL)"
        } else {
            ""
        };
        Answer::Failed(format!("the receiver answered {status}{hint}{quoted}"))
    }
}

/// Why a request got no answer, without the URL (the job's error is shown to the tenant, who
/// knows it, and to operators, who need not).
fn failure(error: &reqwest::Error) -> Answer {
    if let Some(blocked) = address::blocked_cause(error) {
        return Answer::Refused(blocked.to_string());
    }
    let mut root: &dyn std::error::Error = error;
    while let Some(source) = root.source() {
        root = source;
    }
    let what = if error.is_timeout() {
        format!("the receiver did not answer within {} s", TIMEOUT.as_secs())
    } else if error.is_connect() {
        "could not connect to the receiver".to_owned()
    } else {
        "the request failed".to_owned()
    };
    Answer::Failed(format!("{what}: {root}"))
}

/// The start of an error response's body, as `: "…"`, or nothing.
async fn quote_body(mut response: reqwest::Response) -> String {
    let mut bytes = Vec::new();
    while bytes.len() < QUOTED_BODY * 4 {
        match response.chunk().await {
            Ok(Some(chunk)) => bytes.extend_from_slice(&chunk),
            _ => break,
        }
    }
    let text: String = String::from_utf8_lossy(&bytes)
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(QUOTED_BODY)
        .collect();
    let text = text.trim();
    if text.is_empty() {
        String::new()
    } else {
        format!(": {text:?}")
    }
}
