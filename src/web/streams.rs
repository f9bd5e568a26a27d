//! Long-lived responses: the event streams of a book (`/api/v1/books/{id}/events`) and the
//! admin's live log (`/api/v1/admin/logs`). A request is authenticated once, when it arrives,
//! and a stream can stay open for days; so each open stream holds a [`Stream`] here, which
//!
//! - caps how many streams one token holds open in this web process
//!   (`MAX_STREAMS_PER_TOKEN`, counted like the write rate limit: per process), and
//! - ends it within [`TICK`] or so of its token being revoked, or its session signed out or
//!   expired.
//!
//! Storage is how a revocation reaches every web process, so the credentials of the open
//! streams are read back from the database: one task per process, running only while some
//! stream is open, reads them all in two queries a tick (`tokens::live`, `sessions::live`), as
//! `book_watch` does for the books they follow. A database that does not answer ends no
//! stream: a storage outage is not a revocation.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use actix_web::http::StatusCode;
use tokio::runtime::Handle;
use tokio::sync::watch;

use super::caller::Credential;
use super::error::ApiError;
use crate::storage::Database;

/// The last event of a stream whose credential ended, before the server closes it. A client
/// that connects again gets 401.
pub const ENDED_EVENT: &str = "event: ended\ndata: {\"reason\":\"credential_ended\",\"message\":\"The token this stream was opened with was revoked, or its session ended.\"}\n\n";

/// How often the open streams' credentials are read back: how late a revocation can be.
pub const TICK: Duration = Duration::from_secs(2);
/// The longest pause between reads while the database fails.
const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// The open streams of this process (app state; cloning shares it).
#[derive(Clone)]
pub struct Streams {
    shared: Arc<Shared>,
}

struct Shared {
    db: Database,
    /// Where the checking task runs: the process's own runtime, which outlives any one of the
    /// HTTP server's workers.
    runtime: Handle,
    per_token: usize,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    credentials: HashMap<Credential, Held>,
    /// Streams open per token, whatever credential of the token they came with.
    tokens: HashMap<String, usize>,
    /// Whether the checking task runs.
    checking: bool,
}

struct Held {
    streams: usize,
    /// Set once the credential has ended; every stream holding it waits on a receiver.
    ended: watch::Sender<bool>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Nothing under this lock can leave the maps half-changed.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Streams {
    pub fn new(db: Database, runtime: Handle, per_token: usize) -> Self {
        Streams {
            shared: Arc::new(Shared {
                db,
                runtime,
                per_token,
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// Opens a stream for `credential`, or answers 429 when its token holds the most streams
    /// it may in this process.
    pub fn open(&self, credential: &Credential) -> Result<Stream, ApiError> {
        let mut state = self.shared.lock();
        let open = state.tokens.get(credential.token()).copied().unwrap_or(0);
        if open >= self.shared.per_token {
            return Err(ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "too_many_streams",
                format!(
                    "This token already holds {open} open event streams on this server, the most \
                     it may (MAX_STREAMS_PER_TOKEN); close one (a tab or a `bindery logs -f`) \
                     and try again."
                ),
            )
            .retry_after(TICK.as_secs()));
        }
        *state
            .tokens
            .entry(credential.token().to_owned())
            .or_default() += 1;
        let held = state
            .credentials
            .entry(credential.clone())
            .or_insert_with(|| Held {
                streams: 0,
                ended: watch::channel(false).0,
            });
        held.streams += 1;
        let ended = held.ended.subscribe();
        if !state.checking {
            state.checking = true;
            self.shared.runtime.spawn(check(self.shared.clone()));
        }
        Ok(Stream {
            shared: self.shared.clone(),
            credential: credential.clone(),
            ended,
        })
    }
}

/// One open stream's hold on its credential; dropping it (the stream ended) lets go.
pub struct Stream {
    shared: Arc<Shared>,
    credential: Credential,
    ended: watch::Receiver<bool>,
}

impl Stream {
    /// Whether the credential has ended, without waiting.
    pub fn has_ended(&self) -> bool {
        *self.ended.borrow()
    }

    /// Resolves once the credential the stream was opened with no longer authenticates.
    pub async fn ended(&mut self) {
        if self.ended.wait_for(|ended| *ended).await.is_err() {
            // The sender lives while any `Stream` of the credential does, this one included.
            std::future::pending::<()>().await;
        }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        let token = self.credential.token();
        if let Some(open) = state.tokens.get_mut(token) {
            *open -= 1;
            if *open == 0 {
                state.tokens.remove(token);
            }
        }
        if let Some(held) = state.credentials.get_mut(&self.credential) {
            held.streams -= 1;
            if held.streams == 0 {
                state.credentials.remove(&self.credential);
            }
        }
    }
}

/// The checking task: every tick, which held credentials still authenticate; ends the streams
/// of those that do not. Ends when no stream is open.
async fn check(shared: Arc<Shared>) {
    let mut pause = TICK;
    let mut failing = false;
    loop {
        tokio::time::sleep(pause).await;
        let (names, hashes) = {
            let mut state = shared.lock();
            if state.credentials.is_empty() {
                // Under the lock, so that a stream opened now sees `checking` false and starts
                // the next task.
                state.checking = false;
                return;
            }
            let mut names: Vec<String> = state.tokens.keys().cloned().collect();
            names.sort();
            let hashes: Vec<String> = state
                .credentials
                .keys()
                .filter_map(|c| match c {
                    Credential::Session { hash, .. } => Some(hash.clone()),
                    Credential::Token { .. } => None,
                })
                .collect();
            (names, hashes)
        };
        let live = async {
            let tokens = crate::tokens::live(&shared.db, &names).await?;
            let sessions = if hashes.is_empty() {
                Default::default()
            } else {
                crate::sessions::live(&shared.db, &hashes).await?
            };
            anyhow::Ok((tokens, sessions))
        };
        match live.await {
            Ok((tokens, sessions)) => {
                if failing {
                    failing = false;
                    tracing::info!("reading the credentials of open event streams works again");
                }
                pause = TICK;
                let state = shared.lock();
                for (credential, held) in &state.credentials {
                    // Only those read: a credential first held since then is read next tick.
                    let alive = match credential {
                        Credential::Token { name } => {
                            !names.contains(name) || tokens.contains(name)
                        }
                        Credential::Session { hash, .. } => {
                            !hashes.contains(hash) || sessions.contains(hash)
                        }
                    };
                    if !alive && !*held.ended.borrow() {
                        held.ended.send_replace(true);
                        tracing::info!(
                            token.name = %credential.token(),
                            streams = held.streams,
                            "ending event streams: their token was revoked or their session ended"
                        );
                    }
                }
            }
            Err(e) => {
                // Once per streak; the streams stay open.
                if !failing {
                    failing = true;
                    tracing::warn!(
                        error = %format!("{e:#}"),
                        "reading the credentials of open event streams failed; they stay open, and reading is retried with backoff"
                    );
                }
                pause = (pause * 2).min(MAX_BACKOFF);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_token_holds_at_most_its_streams_and_they_end_when_it_is_revoked() {
        let (_dir, db) = crate::test_support::sqlite_database().await;
        crate::tokens::create(&db, "alice", false)
            .await
            .expect("alice");
        crate::tokens::create(&db, "bob", false).await.expect("bob");
        let streams = Streams::new(db.clone(), Handle::current(), 2);
        let alice = Credential::Token {
            name: "alice".into(),
        };
        let bob = Credential::Token { name: "bob".into() };
        let mut first = streams.open(&alice).expect("first");
        let second = streams.open(&alice).expect("second");
        let Err(refused) = streams.open(&alice) else {
            panic!("a third is refused");
        };
        assert_eq!(
            actix_web::ResponseError::status_code(&refused),
            StatusCode::TOO_MANY_REQUESTS
        );
        drop(second);
        let _again = streams.open(&alice).expect("one closed, one may open");
        let mut bobs = streams.open(&bob).expect("bob's own");

        assert!(crate::tokens::revoke(&db, "alice").await.expect("revoke"));
        tokio::time::timeout(TICK * 3, first.ended())
            .await
            .expect("alice's stream ends within a few seconds");
        assert!(
            tokio::time::timeout(TICK * 2, bobs.ended()).await.is_err(),
            "bob's goes on"
        );
    }
}
