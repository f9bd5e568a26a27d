//! The `assemble` step: the join of the pieces set for print. The interior assembled from
//! them, the print cover and the pagination, in the limited child; then the ebooks
//! (`chapters`), which mark where its pages begin.

use serde::{Deserialize, Serialize};

use super::failure::gone;
use super::print_book::{self, Answer, Printed, Request, whole_book};
use super::print_edition::{PrintEdition, after, died, give_up, give_up_for, pieces};
use super::stored::revision_row;
use super::{Cx, QUEUE};
use crate::books::{RevisionId, keys};
use crate::jobs::{Job, Outcome};
use crate::paperback::Edition;
use crate::services::Services;

/// The join of the pieces set for print.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Assemble {
    #[serde(flatten)]
    pub revision: RevisionId,
    /// The paperback in a job an older release enqueued.
    #[serde(default)]
    pub edition: Edition,
    pub chapters: usize,
}

impl Assemble {
    /// The edition is whole: its pieces go, and the next edition or the ebooks come next.
    async fn done(&self, cx: &Cx, printed: &Printed) -> anyhow::Result<Outcome> {
        cx.app()
            .blobs
            .delete_prefix(&keys::print_work_prefix(&self.revision, self.edition))
            .await?;
        cx.then(after(cx, &self.revision, self.chapters, self.edition).await?);
        Ok(Outcome::done_with(PrintEdition::Typeset {
            pages: printed.report.pages,
            pdf_bytes: printed.pdf_bytes,
        }))
    }
}

impl Job for Assemble {
    const NAME: &'static str = "book.assemble";
    const QUEUE: &'static str = QUEUE;
    type Context = Services;

    fn book(&self) -> Option<&str> {
        Some(self.revision.book.as_str())
    }

    async fn run(self, cx: &Cx) -> anyhow::Result<Outcome> {
        let app = cx.app();
        if revision_row(cx, &self.revision).await?.is_none() {
            return Ok(gone(&self.revision));
        }
        // Assembled already, by a run killed before it could commit.
        if let Some(stored) = app
            .blobs
            .get_opt(&keys::print_report(&self.revision, self.edition))
            .await?
        {
            let printed: Printed = serde_json::from_slice(&stored)?;
            return self.done(cx, &printed).await;
        }
        let pieces = match pieces(cx).await? {
            Ok(pieces) => pieces,
            Err((code, message)) => {
                return give_up_for(
                    cx,
                    &self.revision,
                    self.chapters,
                    self.edition,
                    &code,
                    message,
                )
                .await;
            }
        };
        let mut infos = Vec::with_capacity(pieces.len());
        for answer in pieces {
            match answer {
                Answer::Set(info) => infos.push(info),
                other => anyhow::bail!("a piece set for print answered {other:?}"),
            }
        }
        cx.progress(50, "assembling the print edition").await?;
        let request = Request::Assemble {
            revision: self.revision.clone(),
            edition: self.edition,
            pieces: infos,
        };
        let printed = match print_book::run(&app.config, &request, whole_book).await? {
            Answer::Assembled(printed) => *printed,
            Answer::Refused { code, message } => {
                return give_up_for(
                    cx,
                    &self.revision,
                    self.chapters,
                    self.edition,
                    &code,
                    message,
                )
                .await;
            }
            other => anyhow::bail!("assembling answered {other:?}"),
        };
        if printed.report.failure.is_some() {
            return give_up(cx, &self.revision, self.chapters, self.edition, &printed).await;
        }
        app.blobs
            .put_if_absent(
                &keys::print_report(&self.revision, self.edition),
                serde_json::to_vec(&printed)?,
            )
            .await?;
        let report = &printed.report;
        tracing::info!(for_author = true, edition = %self.edition, pages = report.pages, trim = %report.trim, bytes = printed.pdf_bytes, "print edition typeset");
        self.done(cx, &printed).await
    }

    async fn on_dead(self, cx: &Cx, _error: &anyhow::Error) -> anyhow::Result<()> {
        died(cx, &self.revision, Some(self.chapters), self.edition).await
    }
}
