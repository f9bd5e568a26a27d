//! Request bodies that stall. actix bounds how long a client may take to send its headers, but
//! not its body: an upload that trickles a byte every few seconds held a connection, a
//! half-written blob and its place under the rate limit for as long as the client liked. Here
//! every request's body is read through [`IdleLimited`], which fails once nothing has arrived
//! for `BODY_IDLE_TIMEOUT` while the handler waits on it; the handler then gives up as for any
//! broken body (an upload deletes what it stored), and the answer becomes 408 `body_stalled`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::error::PayloadError;
use actix_web::http::{StatusCode, header};
use actix_web::middleware::Next;
use actix_web::web::Bytes;
use actix_web::{Error, HttpMessage, ResponseError};
use futures_util::Stream;
use tokio::time::Sleep;

use super::error::ApiError;

/// The middleware: reads the body through [`IdleLimited`] and answers 408 if it stalled.
pub async fn limit_idle(
    idle: Duration,
    mut req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, Error> {
    let stalled = Arc::new(AtomicBool::new(false));
    let payload = req.take_payload();
    req.set_payload(Payload::Stream {
        payload: Box::pin(IdleLimited {
            inner: payload,
            idle,
            timer: None,
            stalled: stalled.clone(),
        }),
    });
    let response = next.call(req).await?;
    if !stalled.load(Ordering::Relaxed) {
        return Ok(response.map_into_left_body());
    }
    let mut answer = ApiError::new(
        StatusCode::REQUEST_TIMEOUT,
        "body_stalled",
        format!(
            "The request body sent nothing for {} (BODY_IDLE_TIMEOUT), so the request was \
             ended and nothing of it was kept. Send it again.",
            humantime::format_duration(idle)
        ),
    )
    .error_response();
    // The rest of the body will not be read: the connection cannot carry another request.
    answer.headers_mut().insert(
        header::CONNECTION,
        header::HeaderValue::from_static("close"),
    );
    let (request, _) = response.into_parts();
    Ok(ServiceResponse::new(request, answer).map_into_right_body())
}

/// A body that fails once it has sent nothing for `idle` while being read. The clock runs only
/// while the reader waits for the client: a handler busy writing what it has read (to a slow
/// blob store) is not the client's stall.
struct IdleLimited {
    inner: Payload,
    idle: Duration,
    timer: Option<Pin<Box<Sleep>>>,
    stalled: Arc<AtomicBool>,
}

impl Stream for IdleLimited {
    type Item = Result<Bytes, PayloadError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if let Poll::Ready(item) = Pin::new(&mut this.inner).poll_next(cx) {
            this.timer = None;
            return Poll::Ready(item);
        }
        let idle = this.idle;
        let timer = this
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(idle)));
        if timer.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        this.timer = None;
        this.stalled.store(true, Ordering::Relaxed);
        Poll::Ready(Some(Err(PayloadError::Io(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!(
                "the body sent nothing for {}",
                humantime::format_duration(idle)
            ),
        )))))
    }
}

#[cfg(test)]
mod tests {
    use futures_util::StreamExt;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_body_that_sends_nothing_for_the_idle_time_fails_and_one_that_keeps_sending_does_not()
    {
        let (sender, receiver) = tokio::sync::mpsc::unbounded_channel::<Bytes>();
        let chunks = futures_util::stream::unfold(receiver, |mut receiver| async move {
            receiver.recv().await.map(|chunk| (Ok(chunk), receiver))
        });
        let stalled = Arc::new(AtomicBool::new(false));
        let mut body = IdleLimited {
            inner: Payload::Stream {
                payload: Box::pin(chunks),
            },
            idle: Duration::from_secs(30),
            timer: None,
            stalled: stalled.clone(),
        };
        let reading = async move {
            let mut chunks = 0;
            loop {
                match body.next().await {
                    Some(Ok(_)) => chunks += 1,
                    Some(Err(e)) => return (chunks, Some(e.to_string())),
                    None => return (chunks, None),
                }
            }
        };
        let sending = async {
            // A chunk every 20 s keeps it going: each resets the clock.
            for _ in 0..5 {
                tokio::time::sleep(Duration::from_secs(20)).await;
                sender
                    .send(Bytes::from_static(b"x"))
                    .expect("the reader is there");
            }
            assert!(!stalled.load(Ordering::Relaxed));
            // Then nothing, and the sender stays open: a stall, not an end.
            tokio::time::sleep(Duration::from_secs(31)).await;
        };
        let ((chunks, error), ()) = tokio::join!(reading, sending);
        assert_eq!(chunks, 5);
        assert!(error.is_some_and(|e| e.contains("sent nothing for 30s")));
        assert!(stalled.load(Ordering::Relaxed));
    }
}
