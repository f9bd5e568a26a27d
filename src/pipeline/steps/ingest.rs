//! The first step: what the upload is (sniffed, held to the limits, its text decoded to
//! UTF-8), and what reading it will cost.

use serde::{Deserialize, Serialize};

use super::failure::{fail_for_good, gone, refuse};
use super::parse::Parse;
use super::stored::revision_row;
use super::{Cx, QUEUE};
use crate::books::{RevisionId, keys};
use crate::convert;
use crate::jobs::{Job, NewJob, Outcome};
use crate::manuscript::Format;
use crate::services::Services;

/// Sniff, enforce limits, decode text to UTF-8.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Ingest {
    #[serde(flatten)]
    pub revision: RevisionId,
}

impl Job for Ingest {
    const NAME: &'static str = "book.ingest";
    const QUEUE: &'static str = QUEUE;
    type Context = Services;

    fn book(&self) -> Option<&str> {
        Some(self.revision.book.as_str())
    }

    async fn run(self, cx: &Cx) -> anyhow::Result<Outcome> {
        let app = cx.app();
        let Some(row) = revision_row(cx, &self.revision).await? else {
            return Ok(gone(&self.revision));
        };
        let options = row.options()?;
        let manuscript = app.blobs.get(&keys::upload(&self.revision)).await?;
        let ingested = match convert::ingest(&manuscript, &options.convert, &app.config.limits) {
            Ok(ingested) => ingested,
            Err(e) => return refuse(cx, &self.revision, e.code(), e.to_string()).await,
        };
        if let Some(text) = &ingested.text {
            app.blobs
                .put_if_absent(&keys::text(&self.revision), text.clone())
                .await?;
        }
        // Reading is the step whose memory the manuscript decides: it waits for room in the
        // worker's budget (see `jobs::admission`).
        let cost = crate::manuscript::reading_cost(&ingested, &manuscript);
        cx.then(
            NewJob::of(&Parse {
                revision: self.revision.clone(),
                format: ingested.format,
                encoding: ingested.encoding.clone(),
            })
            .cost(cost),
        );
        cx.progress(100, "ingested").await?;
        // The book's id comes from the job's span (`Job::book`), as on every line of a step.
        tracing::info!(for_author = true, format = ?ingested.format, encoding = ingested.encoding.as_deref(), bytes = manuscript.len(), "manuscript recognised");
        Ok(Outcome::done_with(Recognised {
            format: ingested.format,
            encoding: ingested.encoding,
            bytes: manuscript.len(),
        }))
    }

    async fn on_dead(self, cx: &Cx, error: &anyhow::Error) -> anyhow::Result<()> {
        fail_for_good(cx, &self.revision, Self::NAME, error).await
    }
}

/// What `ingest` recognised, its job's result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Recognised {
    pub format: Format,
    pub encoding: Option<String>,
    pub bytes: usize,
}
