//! Retry delays: exponential in the attempt number, capped, with jitter so that a burst of
//! failures (a blob store outage) does not come back as a synchronised burst of retries.

use std::time::Duration;

use rand::Rng;

/// The default first delay.
pub const BASE: Duration = Duration::from_secs(1);
const CAP: Duration = Duration::from_secs(60 * 60);

/// Delay before the retry that follows failed attempt `attempt` (1-based): `base`, twice that,
/// four times … up to an hour, each scaled by a random factor in [0.75, 1.25).
pub fn retry_delay(attempt: i32, base: Duration) -> Duration {
    let exponent = u32::try_from(attempt.saturating_sub(1))
        .unwrap_or(0)
        .min(20);
    let raw = base.saturating_mul(1 << exponent).min(CAP);
    raw.mul_f64(rand::rng().random_range(0.75..1.25))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_exponentially_within_jitter_and_cap() {
        for _ in 0..200 {
            let first = retry_delay(1, BASE);
            assert!(first >= Duration::from_millis(750) && first < Duration::from_millis(1250));
            let fifth = retry_delay(5, BASE);
            assert!(fifth >= Duration::from_secs(12) && fifth < Duration::from_secs(20));
            assert!(retry_delay(40, BASE) < CAP.mul_f64(1.25));
            assert!(retry_delay(0, BASE) < Duration::from_millis(1250));
        }
    }
}
