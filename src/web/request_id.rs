//! The id of one HTTP request, which ties what a client saw to what the server logged. A
//! client (or a proxy in front) may choose it with `X-Request-Id`; otherwise the server makes
//! one. The request log (`request_log`) puts it on a tracing span around the request, so every
//! log line of the request carries it, answers it in the same header, and makes it the current
//! one while the request is handled, so that an error body can name it.

use std::fmt;
use std::future::Future;

use actix_web::http::header::{HeaderMap, HeaderName, HeaderValue};

pub const HEADER: HeaderName = HeaderName::from_static("x-request-id");

/// Longer ids from outside are replaced: they would only bloat every log line.
const MAX_LEN: usize = 128;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestId(String);

tokio::task_local! {
    static CURRENT: RequestId;
}

impl RequestId {
    /// The request's own id when it sends a sane one ([`sane`]), else a new UUID.
    pub fn of(headers: &HeaderMap) -> Self {
        headers
            .get(&HEADER)
            .and_then(sane)
            .map(RequestId)
            .unwrap_or_else(|| RequestId(uuid::Uuid::new_v4().to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The id of the request being handled, if any.
    pub fn current() -> Option<RequestId> {
        CURRENT.try_with(Clone::clone).ok()
    }

    /// Runs `work` with this as the current id.
    pub async fn scope<F: Future>(self, work: F) -> F::Output {
        CURRENT.scope(self, work).await
    }

    pub fn header_value(&self) -> HeaderValue {
        // Visible ASCII by construction, so always a valid header value.
        HeaderValue::from_str(&self.0).unwrap_or_else(|_| HeaderValue::from_static("invalid"))
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// An id from outside is kept when it is 1 to [`MAX_LEN`] ASCII letters, digits, `.`, `_` and
/// `-`: what request ids are made of (UUIDs, Heroku's and App Service's router ids), and
/// nothing that could mean something in a log line, a header, a query or a page (quotes,
/// braces, `<`, `:`, spaces, controls). Anything else is replaced, not cleaned: a cleaned id
/// would no longer be the one the client logged.
fn sane(value: &HeaderValue) -> Option<String> {
    let bytes = value.as_bytes();
    let allowed = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-');
    (!bytes.is_empty() && bytes.len() <= MAX_LEN && bytes.iter().all(allowed))
        .then(|| String::from_utf8_lossy(bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id_for(value: Option<&[u8]>) -> RequestId {
        let mut headers = HeaderMap::new();
        if let Some(value) = value {
            headers.insert(
                HEADER,
                HeaderValue::from_bytes(value).expect("header value"),
            );
        }
        RequestId::of(&headers)
    }

    fn is_uuid(id: &RequestId) -> bool {
        uuid::Uuid::parse_str(id.as_str()).is_ok_and(|u| u.get_version_num() == 4)
    }

    #[test]
    fn a_sane_incoming_id_is_kept() {
        assert_eq!(id_for(Some(b"abc-123_X.y")).as_str(), "abc-123_X.y");
        let longest = "a".repeat(MAX_LEN);
        assert_eq!(id_for(Some(longest.as_bytes())).as_str(), longest);
    }

    #[test]
    fn a_missing_or_unfit_id_is_replaced_by_a_new_uuid() {
        let too_long = "a".repeat(MAX_LEN + 1);
        for value in [
            None,
            Some(&b""[..]),
            Some(b"has space"),
            Some(b"tab\there"),
            Some(b"a:b"),
            Some(b"\"quoted\""),
            Some(b"{}"),
            Some(b"<script>"),
            Some(b"a/b"),
            Some("caf\u{e9}".as_bytes()),
            Some(too_long.as_bytes()),
        ] {
            let id = id_for(value);
            assert!(is_uuid(&id), "{value:?} gave {id}");
        }
        assert_ne!(id_for(None), id_for(None));
    }

    #[tokio::test]
    async fn the_current_id_is_the_one_in_scope() {
        assert_eq!(RequestId::current(), None);
        let id = RequestId("r-1".into());
        let seen = id.clone().scope(async { RequestId::current() }).await;
        assert_eq!(seen, Some(id));
        assert_eq!(RequestId::current(), None);
    }
}
