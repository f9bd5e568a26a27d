//! A book's progress as Server-Sent Events (`GET /api/v1/books/{id}/events`): what one
//! client's stream has sent, when it reads the book again (at each change the process's
//! watcher sees, a little after a failed read), its keep-alive, and how it ends (the book
//! done or deleted, the credential revoked, the server stopping).

use std::sync::Arc;
use std::time::Duration;

use actix_web::web::Bytes;
use futures_util::Stream;

use super::book_view::view;
use super::book_watch::Follow;
use super::streams::{self, ENDED_EVENT};
use super::{AppState, Stopping};
use crate::books::{self, BookId, BookStatus};

/// A comment line this often keeps proxies from closing a quiet stream.
const EVENT_KEEPALIVE: Duration = Duration::from_secs(15);
/// After a failed read of the book, the stream tries again this much later.
const EVENT_RETRY: Duration = Duration::from_secs(1);

/// The events of book `id` for one client, held as `held` and woken by `follow`.
pub(crate) fn stream(
    state: Arc<AppState>,
    stopping: Stopping,
    held: streams::Stream,
    follow: Follow,
    id: BookId,
) -> impl Stream<Item = Result<Bytes, actix_web::Error>> {
    let watch = Watch {
        held,
        state,
        stopping,
        follow,
        id,
        last: String::new(),
        finished: false,
        read_at: Some(tokio::time::Instant::now()),
        failing: false,
        quiet_since: tokio::time::Instant::now(),
    };
    futures_util::stream::unfold(watch, |mut watch| async move {
        if watch.finished {
            return None;
        }
        loop {
            if watch
                .read_at
                .is_some_and(|at| at <= tokio::time::Instant::now())
            {
                watch.read_at = None;
                if let Some(event) = watch.read().await {
                    return Some((Ok::<_, actix_web::Error>(event), watch));
                }
            }
            let keepalive = watch.quiet_since + EVENT_KEEPALIVE;
            // Far off when no read is due: only a change or the keep-alive wakes the stream.
            let read_at = watch.read_at.unwrap_or(keepalive);
            tokio::select! {
                () = watch.follow.changed() => {
                    watch.read_at = Some(tokio::time::Instant::now());
                }
                () = tokio::time::sleep_until(read_at), if watch.read_at.is_some() => {}
                () = tokio::time::sleep_until(keepalive) => {
                    watch.quiet_since = tokio::time::Instant::now();
                    return Some((Ok(Bytes::from_static(b": keep-alive\n\n")), watch));
                }
                // Ends the stream at once instead of holding a graceful stop until its deadline.
                () = watch.stopping.wait() => return None,
                () = watch.held.ended() => {
                    watch.finished = true;
                    return Some((Ok(Bytes::from_static(ENDED_EVENT.as_bytes())), watch));
                }
            }
        }
    })
}

/// One client's event stream: the book it follows and what it was last sent.
struct Watch {
    state: Arc<AppState>,
    stopping: Stopping,
    /// Wakes the stream when the process's watcher sees the book change.
    follow: Follow,
    /// Ends it when its credential ends.
    held: streams::Stream,
    id: BookId,
    last: String,
    finished: bool,
    /// When to read the book next: now at first, then at each change, or a little after a
    /// failed read.
    read_at: Option<tokio::time::Instant>,
    /// The last read failed (logged once per streak).
    failing: bool,
    quiet_since: tokio::time::Instant,
}

impl Watch {
    /// Reads the book and returns the event to send, if there is one: its state when that is
    /// new to the client, or `deleted`.
    async fn read(&mut self) -> Option<Bytes> {
        let book = match books::get(&self.state.db, &self.id).await {
            Ok(Some(book)) => book,
            Ok(None) => {
                self.finished = true;
                return Some(Bytes::from_static(b"event: deleted\ndata: {}\n\n"));
            }
            Err(e) => {
                self.read_failed(&format!("{e:#}"));
                return None;
            }
        };
        let view = match view(&self.state, &book, true).await {
            Ok(view) => view,
            Err(e) => {
                self.read_failed(&e.to_string());
                return None;
            }
        };
        if self.failing {
            self.failing = false;
            tracing::info!(book.id = %self.id, "event stream reads the book again");
        }
        let json = serde_json::to_string(&view).unwrap_or_default();
        if json == self.last {
            return None;
        }
        let done = view.status != BookStatus::Processing;
        let kind = if done { "done" } else { "progress" };
        let event = format!("event: {kind}\ndata: {json}\n\n");
        self.last = json;
        self.finished = done;
        self.quiet_since = tokio::time::Instant::now();
        Some(Bytes::from(event))
    }

    fn read_failed(&mut self, error: &str) {
        if !self.failing {
            self.failing = true;
            tracing::warn!(book.id = %self.id, error, "event stream read failed; retrying");
        }
        self.read_at = Some(tokio::time::Instant::now() + EVENT_RETRY);
    }
}
