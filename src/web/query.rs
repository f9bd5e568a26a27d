//! A query string read into a typed struct, for the API's handlers. Two things actix's own
//! `web::Query` cannot do:
//!
//! - A bad parameter is named: `?lines=abc` answers 400 `invalid_parameter` with
//!   `"field": "lines"`, so a client knows which one to mend.
//! - The handler decides when it is read ([`Query::parsed`]), after the caller is known: an
//!   extractor that fails answers before the token is checked, which would tell anyone that
//!   the route exists and what it takes.

use std::future::{Ready, ready};

use actix_web::{FromRequest, HttpRequest, dev::Payload};
use serde::de::DeserializeOwned;

use super::error::ApiError;

pub struct Query<T>(Result<T, ApiError>);

impl<T: Default> Query<T> {
    /// No parameters: what a handler that takes none passes on.
    pub fn none() -> Self {
        Query(Ok(T::default()))
    }
}

impl<T> Query<T> {
    /// The parameters, or the 400 naming the one at fault.
    pub fn parsed(self) -> Result<T, ApiError> {
        self.0
    }
}

impl<T: DeserializeOwned> FromRequest for Query<T> {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(Ok(Query(parse(req.query_string()))))
    }
}

fn parse<T: DeserializeOwned>(query: &str) -> Result<T, ApiError> {
    let pairs = serde_urlencoded::Deserializer::new(form_urlencoded::parse(query.as_bytes()));
    serde_path_to_error::deserialize(pairs).map_err(|e| {
        let problem = e.inner().to_string();
        // A parameter given twice fails before its value is read, so it has no path; serde's
        // derived structs name it in their message (`duplicate field `lines``).
        let field = match problem
            .strip_prefix("duplicate field `")
            .and_then(|rest| rest.strip_suffix('`'))
        {
            Some(name) => name.to_owned(),
            None => e.path().to_string(),
        };
        if field == "." {
            ApiError::bad_request(
                "invalid_parameter",
                format!("The query string is invalid: {problem}."),
            )
        } else {
            ApiError::bad_request(
                "invalid_parameter",
                format!("The query parameter {field} is invalid: {problem}."),
            )
            .field(field)
        }
    })
}

/// The `before` cursor of a paged list, the one rule for every route that takes it: absent (or
/// empty) means the first page; otherwise it must be the `next` of an earlier page, which
/// `cursor` recognises (`what` names its form for the message), or the request is a 400
/// `invalid_parameter` naming `before` rather than a silently empty page.
pub(crate) fn before<T>(
    value: Option<&str>,
    what: &str,
    cursor: impl FnOnce(&str) -> Option<T>,
) -> Result<Option<T>, ApiError> {
    let Some(value) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    match cursor(value) {
        Some(cursor) => Ok(Some(cursor)),
        None => Err(ApiError::bad_request(
            "invalid_parameter",
            format!("before must be the `next` of an earlier page ({what}); got {value:?}."),
        )
        .field("before")),
    }
}

/// A query parameter, with an empty value (an unset form field) counting as absent.
pub(crate) fn given(value: &Option<String>) -> Option<&str> {
    value.as_deref().map(str::trim).filter(|v| !v.is_empty())
}

/// An integer query parameter within `range`, or a 400 naming it.
pub(crate) fn integer(
    name: &'static str,
    value: &Option<String>,
    range: std::ops::RangeInclusive<i64>,
) -> Result<Option<i64>, ApiError> {
    let Some(value) = given(value) else {
        return Ok(None);
    };
    match value.parse::<i64>() {
        Ok(n) if range.contains(&n) => Ok(Some(n)),
        _ => Err(ApiError::bad_request(
            "invalid_parameter",
            format!(
                "{name} must be a whole number from {} to {} (got {value:?}).",
                range.start(),
                range.end()
            ),
        )
        .field(name)),
    }
}

/// A job list's cursor: a job id.
pub(crate) fn job_cursor(value: &str) -> Option<i64> {
    value.parse::<i64>().ok().filter(|id| *id >= 1)
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize)]
    struct Wanted {
        lines: Option<i64>,
        follow: Option<bool>,
    }

    fn field_of(query: &str) -> Option<String> {
        let error = parse::<Wanted>(query).expect_err("invalid");
        let body: serde_json::Value = serde_json::from_slice(
            &actix_web::body::to_bytes(
                actix_web::ResponseError::error_response(&error).into_body(),
            )
            .now_or_never()
            .expect("ready")
            .expect("body"),
        )
        .expect("json");
        assert_eq!(body["error"]["code"], "invalid_parameter");
        body["error"]["field"].as_str().map(str::to_owned)
    }

    use futures_util::FutureExt as _;

    #[test]
    fn a_bad_parameter_is_named() {
        assert_eq!(field_of("lines=abc").as_deref(), Some("lines"));
        assert_eq!(field_of("lines=5&follow=maybe").as_deref(), Some("follow"));
        assert_eq!(field_of("lines=1&lines=2").as_deref(), Some("lines"));
        let fine = parse::<Wanted>("lines=5&other=x").expect("valid");
        assert_eq!((fine.lines, fine.follow), (Some(5), None));
    }
}
