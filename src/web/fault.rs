//! How the web answers a failure on the server's side, by what it means for the client that
//! asked ([`Fault`], read from the error in `storage::fault`): 507 for storage that is full, 503
//! with `Retry-After` for storage out of reach, 500 for a bug.

use actix_web::http::StatusCode;

pub use crate::storage::fault::Fault;

use super::request_id::RequestId;

impl Fault {
    pub fn status(self) -> StatusCode {
        match self {
            Fault::OutOfSpace => StatusCode::INSUFFICIENT_STORAGE,
            Fault::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            Fault::Bug => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// Seconds a client should wait before trying again (`Retry-After`), for a fault that
    /// passes by itself: soon enough to catch the end of a database restart, far enough apart
    /// that waiting clients do not hammer it. None for the faults a retry will not mend.
    pub fn retry_after(self) -> Option<u64> {
        match self {
            Fault::Unavailable => Some(5),
            Fault::OutOfSpace | Fault::Bug => None,
        }
    }

    /// Classifies `error` and logs it once, in full, under `what` failed (the request's span
    /// adds its id). Returns the fault and the id for the answer to name.
    ///
    /// Storage that is full or out of reach is an outage the service handles (the client is
    /// told to come back, nothing is lost, and the worker waits it out): a warning. ERROR is
    /// for bugs, so that an alert on it means one.
    pub fn report(error: &anyhow::Error, what: &str) -> (Self, Option<RequestId>) {
        let fault = Self::of(error);
        let error = format!("{error:#}");
        match fault {
            Fault::OutOfSpace => {
                tracing::warn!(error, "{what} failed: storage is out of space");
            }
            Fault::Unavailable => {
                tracing::warn!(error, "{what} failed: storage is unavailable");
            }
            Fault::Bug => tracing::error!(error, "{what} failed"),
        }
        (fault, RequestId::current())
    }
}
