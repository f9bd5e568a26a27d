//! One log line per HTTP request: method, path, status, duration.

use std::time::Instant;

use actix_web::Error;
use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;

pub async fn log_request(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, Error> {
    let started = Instant::now();
    let method = req.method().clone();
    let path = req.path().to_owned();
    let result = next.call(req).await;
    let duration_ms = started.elapsed().as_secs_f64() * 1000.0;
    let status = match &result {
        Ok(response) => response.status().as_u16(),
        Err(error) => error.as_response_error().status_code().as_u16(),
    };
    // Platforms probe health every few seconds; a healthy probe is not news.
    let probe = matches!(path.as_str(), "/healthz" | "/readyz") && status < 400;
    if probe {
        tracing::debug!(%method, %path, status, duration_ms, "request");
    } else {
        tracing::info!(%method, %path, status, duration_ms, "request");
    }
    result
}
