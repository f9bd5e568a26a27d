//! Conditional GET (RFC 9110 §13.1.2): a representation's `ETag`, and `304 Not Modified`
//! instead of the body when the request's `If-None-Match` already names it. The one rule for
//! every route that serves stored bytes (the pages' assets, a book's reader files, the
//! catalog), so that they cannot drift apart.

use actix_web::body::MessageBody;
use actix_web::http::header::{
    self, EntityTag, Header, IfNoneMatch, TryIntoHeaderPair, TryIntoHeaderValue,
};
use actix_web::{HttpRequest, HttpResponse, HttpResponseBuilder};
use sha2::{Digest, Sha256};

/// The strong entity tag of `bytes`: half of their SHA-256, which is plenty to tell versions
/// of one resource apart.
pub fn etag(bytes: &[u8]) -> EntityTag {
    etag_of_digest(&Sha256::digest(bytes).into())
}

/// The entity tag of bytes whose SHA-256 is already known (the embedded assets carry theirs).
pub fn etag_of_digest(sha256: &[u8; 32]) -> EntityTag {
    EntityTag::new_strong(hex::encode(&sha256[..16]))
}

/// Whether the request's `If-None-Match` matches the current representation, `current`: `*`
/// (any current representation matches), or a list naming it under the weak comparison
/// RFC 9110 prescribes for this header (`W/"x"` matches `"x"`). An unreadable header matches
/// nothing, so the client gets the full answer.
pub fn not_modified(req: &HttpRequest, current: &EntityTag) -> bool {
    match IfNoneMatch::parse(req) {
        Ok(IfNoneMatch::Any) => true,
        Ok(IfNoneMatch::Items(tags)) => tags.iter().any(|tag| tag.weak_eq(current)),
        Err(_) => false,
    }
}

/// The answer to a GET of a representation with an entity tag: `200` with the body, or `304`
/// without one when the client already has it. The headers given go on both, as RFC 9110
/// §15.4.5 asks of a 304 (a cache updates its stored response from them).
pub struct Answer {
    response: HttpResponseBuilder,
    not_modified: bool,
}

impl Answer {
    pub fn new(req: &HttpRequest, etag: EntityTag) -> Self {
        let not_modified = not_modified(req, &etag);
        let mut response = if not_modified {
            HttpResponse::NotModified()
        } else {
            HttpResponse::Ok()
        };
        response.insert_header((header::ETAG, etag));
        Self {
            response,
            not_modified,
        }
    }

    pub fn header(mut self, header: impl TryIntoHeaderPair) -> Self {
        self.response.insert_header(header);
        self
    }

    /// The response: the body with its content type, unless it is the 304.
    pub fn body(
        mut self,
        content_type: impl TryIntoHeaderValue,
        body: impl MessageBody + 'static,
    ) -> HttpResponse {
        if self.not_modified {
            return self.response.finish();
        }
        self.response.content_type(content_type).body(body)
    }
}

#[cfg(test)]
mod tests {
    use actix_web::test::TestRequest;

    use super::*;

    fn matches(if_none_match: Option<&str>, current: &str) -> bool {
        let mut req = TestRequest::get();
        if let Some(value) = if_none_match {
            req = req.insert_header((header::IF_NONE_MATCH, value));
        }
        not_modified(
            &req.to_http_request(),
            &EntityTag::new_strong(current.into()),
        )
    }

    #[test]
    fn a_star_matches_any_current_representation() {
        assert!(matches(Some("*"), "abc"));
        assert!(matches(Some(" * "), "abc"));
    }

    #[test]
    fn a_list_matches_when_it_names_the_current_tag() {
        assert!(matches(Some("\"abc\""), "abc"));
        assert!(matches(Some("\"x\", \"abc\""), "abc"));
        assert!(matches(Some("\"x\",\"abc\" , \"y\""), "abc"));
        assert!(!matches(Some("\"x\", \"y\""), "abc"));
        assert!(!matches(Some("\"abcd\""), "abc"));
    }

    #[test]
    fn the_comparison_is_weak() {
        assert!(matches(Some("W/\"abc\""), "abc"));
        assert!(matches(Some("\"x\", W/\"abc\""), "abc"));
    }

    #[test]
    fn no_header_or_a_malformed_one_matches_nothing() {
        assert!(!matches(None, "abc"));
        assert!(!matches(Some(""), "abc"));
        // Unquoted: not an entity tag.
        assert!(!matches(Some("abc"), "abc"));
    }

    #[test]
    fn the_tag_is_half_a_sha256_in_lowercase_hex() {
        let tag = etag(b"hello");
        assert!(!tag.weak);
        assert_eq!(tag.tag(), "2cf24dba5fb0a30e26e83b2ac5b9e29e");
        assert_eq!(tag.to_string(), "\"2cf24dba5fb0a30e26e83b2ac5b9e29e\"");
    }

    #[test]
    fn a_304_has_the_headers_but_no_body() {
        let req = TestRequest::get()
            .insert_header((
                header::IF_NONE_MATCH,
                "W/\"2cf24dba5fb0a30e26e83b2ac5b9e29e\"",
            ))
            .to_http_request();
        let response = Answer::new(&req, etag(b"hello"))
            .header((header::CACHE_CONTROL, "no-cache"))
            .body("text/plain", "hello");
        assert_eq!(response.status(), actix_web::http::StatusCode::NOT_MODIFIED);
        let header = |response: &HttpResponse, name| {
            response
                .headers()
                .get(&name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        assert_eq!(
            header(&response, header::CACHE_CONTROL).as_deref(),
            Some("no-cache")
        );
        assert_eq!(
            header(&response, header::ETAG).as_deref(),
            Some("\"2cf24dba5fb0a30e26e83b2ac5b9e29e\"")
        );
        assert!(response.headers().get(header::CONTENT_TYPE).is_none());

        let fresh = Answer::new(&TestRequest::get().to_http_request(), etag(b"hello"))
            .body("text/plain", "hello");
        assert_eq!(fresh.status(), actix_web::http::StatusCode::OK);
        assert_eq!(
            header(&fresh, header::CONTENT_TYPE).as_deref(),
            Some("text/plain")
        );
    }
}
