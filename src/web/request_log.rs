//! One log line per HTTP request (method, path, status, duration), its duration in the
//! request histogram of `/metrics`, and its id: every log line of the request carries
//! `request_id` (a span around it), and the response names it in `X-Request-Id`.

use std::time::Instant;

use actix_web::Error;
use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use tracing::Instrument as _;

use super::request_id::{self, RequestId};

pub async fn log_request(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, Error> {
    let started = Instant::now();
    // Bounded: a client chooses the method, and each distinct one would be a new label.
    let method = super::methods::label(req.method());
    let path = req.path().to_owned();
    let id = RequestId::of(req.headers());
    // At ERROR level, so that it is kept whenever the error lines it is most useful on are.
    let span = tracing::error_span!("request", request_id = %id);
    let mut result = id
        .clone()
        .scope(next.call(req))
        .instrument(span.clone())
        .await;
    let duration_ms = crate::logging::millis(started.elapsed());
    // Known only once the router has run.
    let route = match &result {
        Ok(response) => response.request().match_pattern(),
        Err(_) => None,
    }
    .unwrap_or_else(|| "unmatched".to_owned());
    let status = match &result {
        Ok(response) => response.status().as_u16(),
        Err(error) => error.as_response_error().status_code().as_u16(),
    };
    if let Ok(response) = &mut result {
        response
            .headers_mut()
            .insert(request_id::HEADER, id.header_value());
    }
    crate::metrics::HTTP_REQUESTS
        .with_label_values(&[route.as_str(), method, &status.to_string()])
        .observe(duration_ms / 1000.0);
    // Platforms probe health every few seconds; a healthy probe is not news.
    let probe = matches!(path.as_str(), "/healthz" | "/readyz") && status < 400;
    // Entered rather than named as the parent: the JSON log lists the current spans only.
    span.in_scope(|| {
        if probe {
            tracing::debug!(method, %path, status, duration_ms, "request");
        } else {
            tracing::info!(method, %path, status, duration_ms, "request");
        }
    });
    result
}
