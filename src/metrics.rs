//! Process-wide counters for `/metrics` (Prometheus text). What only this process knows
//! (HTTP requests it served, its keep-alive pings) is counted here; what all processes share
//! (jobs, queues, step durations) is read from the database at scrape time.

use std::sync::LazyLock;

use prometheus::{HistogramOpts, HistogramVec, IntCounterVec, Opts, Registry};

pub static REGISTRY: LazyLock<Registry> = LazyLock::new(Registry::new);

/// Request durations by route pattern (not path: ids would explode the label set), method
/// and status.
pub static HTTP_REQUESTS: LazyLock<HistogramVec> = LazyLock::new(|| {
    let histogram = HistogramVec::new(
        HistogramOpts::new(
            "bindery_http_request_duration_seconds",
            "HTTP request durations by route, method and status.",
        )
        .buckets(vec![
            0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0, 60.0,
        ]),
        &["route", "method", "status"],
    )
    .unwrap_or_else(|e| unreachable_metric(&e));
    register(Box::new(histogram.clone()));
    histogram
});

/// Keep-alive self-pings by outcome (`ok`, `error_status`, `failed`).
pub static KEEPALIVE: LazyLock<IntCounterVec> = LazyLock::new(|| {
    let counter = IntCounterVec::new(
        Opts::new("bindery_keepalive_total", "Keep-alive requests by outcome."),
        &["outcome"],
    )
    .unwrap_or_else(|e| unreachable_metric(&e));
    register(Box::new(counter.clone()));
    counter
});

fn register(collector: Box<dyn prometheus::core::Collector>) {
    if let Err(e) = REGISTRY.register(collector) {
        tracing::error!(error = %e, "could not register a metric");
    }
}

/// The metric definitions above are constants; a failure here is a programming error caught
/// by the first test that scrapes.
fn unreachable_metric(e: &prometheus::Error) -> ! {
    panic!("invalid metric definition: {e}")
}
