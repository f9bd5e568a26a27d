//! The `verify` step: the join of the packagers, which checks what they made before the book
//! is published.

use serde::{Deserialize, Serialize};

use super::failure::{fail_for_good, fail_if_a_child_failed, mark_failed};
use super::publish::Publish;
use super::{Cx, QUEUE};
use crate::books::{self, RevisionId, keys};
use crate::convert;
use crate::jobs::{Job, NewJob, Outcome};
use crate::services::Services;

/// The join of both packagers: self-check what they produced.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Verify {
    #[serde(flatten)]
    pub revision: RevisionId,
}

impl Job for Verify {
    const NAME: &'static str = "book.verify";
    const QUEUE: &'static str = QUEUE;
    type Context = Services;

    fn book(&self) -> Option<&str> {
        Some(self.revision.book.as_str())
    }

    async fn run(self, cx: &Cx) -> anyhow::Result<Outcome> {
        if let Some(outcome) = fail_if_a_child_failed(cx, &self.revision).await? {
            return Ok(outcome);
        }
        let app = cx.app();
        let epub = app.blobs.get(&keys::epub(&self.revision)).await?;
        let mut problems = match convert::verify_epub(&epub) {
            Ok(()) => Vec::new(),
            Err(e) => vec![e],
        };
        if app
            .blobs
            .get_opt(&keys::reader(&self.revision, "index.html"))
            .await?
            .is_none()
        {
            problems.push("the web reader has no index.html".into());
        }
        if !problems.is_empty() {
            // Deterministic output: running again would fail the same way.
            let message = format!(
                "Bindery produced a damaged book ({}). This is a bug in Bindery, not in your manuscript; please report it.",
                problems.join("; ")
            );
            mark_failed(
                app,
                &self.revision,
                books::DAMAGED,
                &message,
                Some(&message),
            )
            .await?;
            return Ok(Outcome::Discard(message));
        }
        tracing::info!(
            for_author = true,
            epub_bytes = epub.len(),
            "EPUB and web reader checked"
        );
        cx.then(NewJob::of(&Publish {
            revision: self.revision.clone(),
        }));
        Ok(Outcome::done_with(Verified {
            epub_bytes: epub.len(),
        }))
    }

    async fn on_dead(self, cx: &Cx, error: &anyhow::Error) -> anyhow::Result<()> {
        fail_for_good(cx, &self.revision, Self::NAME, error).await
    }
}

/// What `verify` checked, its job's result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Verified {
    pub epub_bytes: usize,
}
