//! The API's error answer: JSON with a stable `code`, a `message` for a person, the `field` at
//! fault when there is one, and for a failure on the server's side the `request_id` its log
//! line carries. Never a bare 500 with a stack trace.

use std::fmt;

use actix_web::http::StatusCode;
use actix_web::http::header;
use actix_web::{HttpResponse, ResponseError};
use serde::Serialize;
use utoipa::ToSchema;

use super::fault::Fault;

#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
    field: Option<String>,
    line: Option<u32>,
    retry_after: Option<u64>,
    /// What failed on the server's side, for an error made by [`ApiError::internal`].
    fault: Option<Fault>,
    request_id: Option<String>,
}

/// Every error the API answers.
#[derive(Serialize, ToSchema)]
#[schema(as = Error)]
pub(crate) struct ErrorBody<'a> {
    error: ErrorDetail<'a>,
}

#[derive(Serialize, ToSchema)]
struct ErrorDetail<'a> {
    /// Stable, for programs to branch on (`book_not_found`, `too_large`, `rate_limited`, …).
    code: &'a str,
    /// For a person: what went wrong and what to do about it.
    message: &'a str,
    /// The parameter, header or form field at fault, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    field: Option<&'a str>,
    /// The line of the uploaded file at fault (a style file), when the problem has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<u32>,
    /// For a failure on the server's side (5xx): the request's id, as in its `X-Request-Id`
    /// header and in the server's log, for a report to the operator.
    #[serde(skip_serializing_if = "Option::is_none")]
    request_id: Option<&'a str>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            field: None,
            line: None,
            retry_after: None,
            fault: None,
            request_id: None,
        }
    }

    /// Seconds until the client may try again (`Retry-After`).
    pub fn retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds);
        self
    }

    /// What the error says to a person.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// What failed on the server's side, when this answers such a failure.
    pub fn fault(&self) -> Option<Fault> {
        self.fault
    }

    pub fn field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    /// The line of the uploaded file at fault.
    pub fn line(mut self, line: Option<usize>) -> Self {
        self.line = line.and_then(|n| u32::try_from(n).ok());
        self
    }

    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }

    pub fn not_found(what: &str, message: impl Into<String>) -> Self {
        let code = if what == "book" {
            "book_not_found"
        } else {
            "not_found"
        };
        Self::new(StatusCode::NOT_FOUND, code, message)
    }

    /// Something on our side failed: logged in full, and answered by what it means for the
    /// client (see [`Fault`]): a full disk is named (507), since only the operator can mend it
    /// and retrying will not; storage that could not be reached is 503, worth a retry; anything
    /// else is a bug, 500.
    pub fn internal(error: &anyhow::Error) -> Self {
        let (fault, request_id) = Fault::report(error, "API request");
        let answer = match fault {
            Fault::OutOfSpace => Self::new(
                fault.status(),
                "insufficient_storage",
                "The server is out of storage space, so it could not store this. Nothing was kept; try again once the operator has freed space.",
            ),
            Fault::Unavailable => Self::new(
                fault.status(),
                "unavailable",
                "Bindery's storage is unavailable, so it could not complete the request. Try again shortly.",
            ),
            Fault::Bug => Self::new(
                fault.status(),
                "internal",
                "Bindery failed to complete the request, through a fault of its own that retrying will not mend. The operator's log has the details, under this request_id.",
            ),
        };
        ApiError {
            fault: Some(fault),
            request_id: request_id.map(|id| id.as_str().to_owned()),
            retry_after: fault.retry_after(),
            ..answer
        }
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse {
        let mut response = HttpResponse::build(self.status);
        if self.status == StatusCode::UNAUTHORIZED {
            response.insert_header((header::WWW_AUTHENTICATE, "Bearer realm=\"bindery\""));
        }
        if let Some(seconds) = self.retry_after {
            response.insert_header((header::RETRY_AFTER, seconds.to_string()));
        }
        response.json(ErrorBody {
            error: ErrorDetail {
                code: self.code,
                message: &self.message,
                field: self.field.as_deref(),
                line: self.line,
                request_id: self.request_id.as_deref(),
            },
        })
    }
}

impl From<anyhow::Error> for ApiError {
    fn from(e: anyhow::Error) -> Self {
        ApiError::internal(&e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::web::request_id::RequestId;

    async fn body(error: ApiError) -> serde_json::Value {
        let response = error.error_response();
        let bytes = actix_web::body::to_bytes(response.into_body())
            .await
            .expect("body");
        serde_json::from_slice(&bytes).expect("JSON")
    }

    #[tokio::test]
    async fn a_bug_is_a_500_naming_the_request() {
        let id = RequestId::of(&actix_web::http::header::HeaderMap::new());
        let error = id
            .clone()
            .scope(async { ApiError::internal(&anyhow::anyhow!("a stored row is corrupt")) })
            .await;
        assert_eq!(error.status_code(), StatusCode::INTERNAL_SERVER_ERROR);
        let body = body(error).await;
        assert_eq!(body["error"]["code"], "internal");
        assert_eq!(body["error"]["request_id"], id.as_str());
        assert!(
            !body["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .contains("corrupt"),
            "the cause is for the log, not the client: {body}"
        );
    }

    #[tokio::test]
    async fn storage_out_of_reach_is_a_503_and_a_client_error_has_no_request_id() {
        let unreachable = anyhow::Error::new(sqlx::Error::PoolTimedOut);
        let error = ApiError::internal(&unreachable);
        assert_eq!(error.status_code(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            error.error_response().headers().get(header::RETRY_AFTER),
            Some(&header::HeaderValue::from_static("5")),
            "a client is told when to try again"
        );
        assert_eq!(body(error).await["error"]["code"], "unavailable");

        let body = body(ApiError::bad_request("invalid_parameter", "no")).await;
        assert!(body["error"].get("request_id").is_none(), "{body}");
    }
}
