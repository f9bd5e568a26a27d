//! Keeps idle-stopping hosts from putting the app to sleep: the web process requests its own
//! public `/healthz` every `KEEPALIVE_INTERVAL`, through the platform's front door.

use std::time::{Duration, Instant};

use rand::Rng;
use tokio::task::JoinHandle;
use url::Url;

use crate::config::redact_url;

/// Starts the pinger if a public URL is known. Abort the handle to stop it; nothing waits on it.
pub fn spawn(base: Option<Url>, interval: Duration) -> Option<JoinHandle<()>> {
    let base = base?;
    // `/healthz` under the URL's path, keeping its query (a token a proxy in front may want).
    let mut target = base.clone();
    target.set_path(&format!("{}/healthz", base.path().trim_end_matches('/')));
    let shown = redact_url(&base);
    let client = match reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .user_agent(concat!("bindery-keepalive/", env!("CARGO_PKG_VERSION")))
        .build()
    {
        Ok(client) => client,
        Err(e) => {
            tracing::warn!(error = %e, "keep-alive disabled: could not build an HTTP client");
            return None;
        }
    };
    tracing::info!(url = %shown, every = %humantime::format_duration(interval), "keep-alive on");
    Some(tokio::spawn(async move {
        loop {
            tokio::time::sleep(jittered(interval)).await;
            ping(&client, target.as_str(), &shown).await;
        }
    }))
}

async fn ping(client: &reqwest::Client, target: &str, shown: &str) {
    let started = Instant::now();
    let result = client.get(target).send().await;
    let duration_ms = crate::logging::millis(started.elapsed());
    match result {
        Ok(response) if response.status().is_success() => {
            crate::metrics::KEEPALIVE.with_label_values(&["ok"]).inc();
            tracing::info!(url = %shown, status = response.status().as_u16(), duration_ms, "keep-alive ok");
        }
        Ok(response) => {
            crate::metrics::KEEPALIVE
                .with_label_values(&["error_status"])
                .inc();
            tracing::warn!(url = %shown, status = response.status().as_u16(), duration_ms, "keep-alive got an error status");
        }
        Err(e) => {
            crate::metrics::KEEPALIVE
                .with_label_values(&["failed"])
                .inc();
            // Without the URL, which reqwest would print whole, secrets and all.
            tracing::warn!(url = %shown, error = %e.without_url(), duration_ms, "keep-alive request failed");
        }
    }
}

/// ±10%, so a fleet of instances does not ping in lock-step.
fn jittered(interval: Duration) -> Duration {
    let factor = rand::rng().random_range(0.9..=1.1);
    interval.mul_f64(factor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_stays_within_ten_percent() {
        let base = Duration::from_secs(300);
        for _ in 0..1000 {
            let d = jittered(base);
            assert!(
                d >= Duration::from_secs(270) && d <= Duration::from_secs(330),
                "{d:?}"
            );
        }
    }
}
