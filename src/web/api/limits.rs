//! Per-token limits on writes (uploads, deletes, retries), so one client cannot fill the queue
//! or the blob store. Kept in memory by each web process: N web processes allow N times the
//! rate, which is the documented trade against a database write on every request.

use std::time::Duration;

use actix_web::http::StatusCode;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

use crate::books::Tenant;
use crate::config::RateLimit;
use crate::web::error::ApiError;

pub struct WriteLimiter {
    limiter: DefaultKeyedRateLimiter<Tenant>,
    clock: DefaultClock,
    rate: RateLimit,
}

impl WriteLimiter {
    pub fn new(rate: RateLimit) -> Self {
        let per_request = rate.period / rate.requests.get();
        let quota = Quota::with_period(per_request.max(Duration::from_nanos(1)))
            .unwrap_or_else(|| Quota::per_second(rate.requests))
            .allow_burst(rate.requests);
        WriteLimiter {
            limiter: RateLimiter::keyed(quota),
            clock: DefaultClock::default(),
            rate,
        }
    }

    /// One write by `tenant`, or 429 saying when the next one is allowed.
    pub fn check(&self, tenant: &Tenant) -> Result<(), ApiError> {
        match self.limiter.check_key(tenant) {
            Ok(()) => Ok(()),
            Err(not_until) => {
                let wait = not_until.wait_time_from(self.clock.now());
                let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
                Err(ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    "rate_limited",
                    format!(
                        "This token may make {} uploads, deletes or retries; try again in {seconds} s.",
                        self.rate
                    ),
                )
                .retry_after(seconds.max(1)))
            }
        }
    }
}
