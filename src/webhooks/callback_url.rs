//! `callback_url`: where a book's webhooks go, checked when the book is submitted.

use std::fmt;

use url::{Host, Url};

use super::address::{self, ALLOW_VARIABLE};

/// Longest callback URL accepted, as sent.
pub const MAX_LEN: usize = 2048;

/// An absolute http(s) URL without credentials (and, unless the operator allows it, not an
/// IP literal or `localhost` name of a non-public address). Only [`CallbackUrl::parse`] makes one.
#[derive(Clone, PartialEq, Eq)]
pub struct CallbackUrl(Url);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallbackUrlError {
    #[error("callback_url is over {MAX_LEN} characters long; use a shorter URL")]
    TooLong,
    #[error(
        "callback_url is not an absolute URL ({0}); send one like https://example.com/hooks/bindery"
    )]
    NotAUrl(String),
    #[error("callback_url must be an http:// or https:// URL, not {0}:")]
    Scheme(String),
    #[error(
        "callback_url must not carry a user name or password; check the Bindery-Signature header instead (README, \"Webhooks\")"
    )]
    Credentials,
    #[error(
        "callback_url points at {0}, a loopback, private or otherwise non-public address, which this server does not deliver to (its operator can allow it with {ALLOW_VARIABLE}=true)"
    )]
    Private(String),
}

impl CallbackUrl {
    pub fn parse(value: &str, allow_private: bool) -> Result<Self, CallbackUrlError> {
        let value = value.trim();
        if value.chars().count() > MAX_LEN {
            return Err(CallbackUrlError::TooLong);
        }
        let url = Url::parse(value).map_err(|e| CallbackUrlError::NotAUrl(e.to_string()))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(CallbackUrlError::Scheme(url.scheme().to_owned()));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(CallbackUrlError::Credentials);
        }
        let Some(host) = url.host() else {
            return Err(CallbackUrlError::NotAUrl("it names no host".into()));
        };
        if !allow_private && !host_may_be_public(&host) {
            return Err(CallbackUrlError::Private(host.to_string()));
        }
        Ok(Self(url))
    }

    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

/// False for hosts that are certainly not public: non-public IP literals and `localhost`
/// names. Other names are judged by what they resolve to, at delivery.
pub(super) fn host_may_be_public(host: &Host<&str>) -> bool {
    match host {
        Host::Ipv4(ip) => address::is_public((*ip).into()),
        Host::Ipv6(ip) => address::is_public((*ip).into()),
        Host::Domain(name) => !address::is_local_name(name),
    }
}

impl fmt::Debug for CallbackUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CallbackUrl({})", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(value: &str) -> Result<CallbackUrl, CallbackUrlError> {
        CallbackUrl::parse(value, false)
    }

    #[test]
    fn ordinary_urls_are_accepted_as_given() {
        for url in [
            "https://example.com/hooks/bindery",
            "http://hooks.example.com:8443/x?tenant=7",
            "https://93.184.215.14/hook",
            "https://[2606:2800:21f:cb07:6820:80da:af6b:8b2c]/hook",
        ] {
            assert_eq!(parse(url).expect(url).as_str(), url);
        }
        let long = format!("https://example.com/{}", "a".repeat(MAX_LEN - 20));
        assert_eq!(long.len(), MAX_LEN);
        assert!(parse(&long).is_ok());
    }

    #[test]
    fn malformed_urls_say_what_is_wrong() {
        assert!(matches!(
            parse("example.com/hook"),
            Err(CallbackUrlError::NotAUrl(_))
        ));
        assert!(matches!(parse(""), Err(CallbackUrlError::NotAUrl(_))));
        assert_eq!(
            parse("ftp://example.com/x"),
            Err(CallbackUrlError::Scheme("ftp".into()))
        );
        assert!(matches!(
            parse("javascript:alert(1)"),
            Err(CallbackUrlError::Scheme(_))
        ));
        assert_eq!(
            parse("https://user:pw@example.com/x"),
            Err(CallbackUrlError::Credentials)
        );
        assert_eq!(
            parse("https://user@example.com/x"),
            Err(CallbackUrlError::Credentials)
        );
        let long = format!("https://example.com/{}", "a".repeat(MAX_LEN));
        assert_eq!(parse(&long), Err(CallbackUrlError::TooLong));
    }

    #[test]
    fn private_literals_and_localhost_are_refused_unless_allowed() {
        for url in [
            "http://127.0.0.1:9000/hook",
            "http://2130706433/hook",
            "http://10.1.2.3/",
            "http://169.254.169.254/latest/meta-data/",
            "http://[::1]/",
            "http://[::ffff:192.168.0.1]/",
            "http://localhost:8080/",
            "http://api.localhost/",
        ] {
            let error = parse(url).expect_err(url);
            assert!(matches!(error, CallbackUrlError::Private(_)), "{url}");
            assert!(
                error.to_string().contains("WEBHOOK_ALLOW_PRIVATE=true"),
                "{error}"
            );
            assert!(CallbackUrl::parse(url, true).is_ok(), "{url}");
        }
    }
}
