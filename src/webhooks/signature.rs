//! The `Bindery-Signature` header: `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`,
//! the scheme Stripe made familiar. Signing the time with the body lets a receiver refuse old
//! requests replayed by someone who captured one; the body is signed byte for byte as sent.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// The header's value for `body` sent at `timestamp` (unix seconds): one `v1` per secret,
/// current first (two while a rotated-out secret still signs; a receiver accepts any that
/// verifies with the secret it knows).
pub fn header(secrets: &[&str], timestamp: i64, body: &[u8]) -> String {
    let mut value = format!("t={timestamp}");
    for secret in secrets {
        value.push_str(",v1=");
        value.push_str(&sign(secret, timestamp, body));
    }
    value
}

/// Whether `header` is a valid signature of `body` by `secret`, made within `tolerance`
/// seconds of `now`. What a receiver does; here for tests and as the reference.
pub fn verify(secret: &str, header: &str, body: &[u8], now: i64, tolerance: i64) -> bool {
    let mut timestamp = None;
    let mut signatures = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", t)) => timestamp = t.parse::<i64>().ok(),
            Some(("v1", v1)) => signatures.push(v1),
            _ => {}
        }
    }
    let Some(timestamp) = timestamp else {
        return false;
    };
    if (now - timestamp).abs() > tolerance {
        return false;
    }
    signatures.iter().any(|given| {
        let Ok(given) = hex::decode(given) else {
            return false;
        };
        mac(secret, timestamp, body).verify_slice(&given).is_ok()
    })
}

fn sign(secret: &str, timestamp: i64, body: &[u8]) -> String {
    hex::encode(mac(secret, timestamp, body).finalize().into_bytes())
}

fn mac(secret: &str, timestamp: i64, body: &[u8]) -> HmacSha256 {
    let mut mac =
        HmacSha256::new_from_slice(secret.as_bytes()).expect("HMAC takes a key of any length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    mac
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_is_hmac_sha256_of_time_dot_body() {
        // The primitive, against RFC 4231 test case 2.
        let mut mac = HmacSha256::new_from_slice(b"Jefe").expect("key");
        mac.update(b"what do ya want for nothing?");
        let expected = hex::encode(mac.finalize().into_bytes());
        assert_eq!(
            expected,
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // The header: the time, a dot and the body, signed as one string.
        let mut mac = HmacSha256::new_from_slice(b"whsec_test").expect("key");
        mac.update(b"1700000000.{\"id\":\"x\"}");
        let by_hand = hex::encode(mac.finalize().into_bytes());
        assert_eq!(
            header(&["whsec_test"], 1_700_000_000, b"{\"id\":\"x\"}"),
            format!("t=1700000000,v1={by_hand}")
        );
    }

    #[test]
    fn verification_checks_secret_body_and_age() {
        let body = br#"{"id":"d1","type":"book.ready"}"#;
        let signed = header(&["whsec_a"], 1_700_000_000, body);
        assert!(verify("whsec_a", &signed, body, 1_700_000_100, 300));
        assert!(!verify("whsec_b", &signed, body, 1_700_000_100, 300));
        assert!(!verify("whsec_a", &signed, b"{}", 1_700_000_100, 300));
        assert!(!verify("whsec_a", &signed, body, 1_700_001_000, 300));
        assert!(!verify("whsec_a", "v1=00", body, 1_700_000_000, 300));
        assert!(!verify(
            "whsec_a",
            "t=1700000000,v1=zz",
            body,
            1_700_000_000,
            300
        ));
        // While a rotated-out secret still signs, either secret verifies.
        let both = header(&["whsec_new", "whsec_a"], 1_700_000_000, body);
        assert!(verify("whsec_new", &both, body, 1_700_000_100, 300));
        assert!(verify("whsec_a", &both, body, 1_700_000_100, 300));
        assert!(!verify("whsec_b", &both, body, 1_700_000_100, 300));
    }
}
