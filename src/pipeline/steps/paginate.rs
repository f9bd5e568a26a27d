//! The `paginate` step: the join of the pieces' measures. From them, the book's pages
//! (`print::pieces::paginate`): when the page count wants another gutter than the pieces were
//! measured with, they are measured again with it; else the layout is stored and the pieces
//! are set for print.

use serde::{Deserialize, Serialize};

use super::failure::gone;
use super::print_book::{self, Answer};
use super::print_edition::{died, give_up_for, measures, pieces};
use super::set_piece::SetPiece;
use super::stored::revision_row;
use super::{Cx, QUEUE};
use crate::books::{RevisionId, keys};
use crate::jobs::{Job, NewJob, Outcome};
use crate::paperback::Edition;
use crate::print::{self, Paginated};
use crate::services::Services;

/// The join of round `round` of measures.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Paginate {
    #[serde(flatten)]
    pub revision: RevisionId,
    /// The paperback in a job an older release enqueued.
    #[serde(default)]
    pub edition: Edition,
    pub chapters: usize,
    pub round: u32,
}

impl Job for Paginate {
    const NAME: &'static str = "book.paginate";
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
        let mut measured = Vec::with_capacity(pieces.len());
        for answer in pieces {
            match answer {
                Answer::Measured(m) => measured.push(*m),
                other => anyhow::bail!("a measure answered {other:?}"),
            }
        }
        let plan = print_book::plan(&app.blobs, &self.revision, self.edition).await?;
        let round = self.round;
        let paginated = tokio::task::spawn_blocking(move || {
            print::pieces::paginate(&plan, &measured, round).map(|p| (p, plan.pieces()))
        })
        .await?;
        match paginated {
            Err(e) => {
                give_up_for(
                    cx,
                    &self.revision,
                    self.chapters,
                    self.edition,
                    e.code(),
                    e.to_string(),
                )
                .await
            }
            Ok((Paginated::Again { gutter }, pieces)) => {
                tracing::info!(
                    gutter,
                    round = self.round + 1,
                    "measuring the print edition again for its gutter"
                );
                cx.fan_out(
                    measures(&self.revision, self.edition, pieces, gutter, self.round + 1),
                    NewJob::of(&Paginate {
                        round: self.round + 1,
                        ..self.clone()
                    }),
                );
                Ok(Outcome::done_with(Pages { pages: None }))
            }
            Ok((Paginated::Settled(layout), pieces)) => {
                let pages = layout.pages;
                app.blobs
                    .put_if_absent(
                        &keys::print_layout(&self.revision, self.edition),
                        serde_json::to_vec(&layout)?,
                    )
                    .await?;
                cx.fan_out(
                    (0..pieces)
                        .map(|piece| {
                            NewJob::of(&SetPiece {
                                revision: self.revision.clone(),
                                edition: self.edition,
                                piece,
                            })
                            .cost(print::pieces::PIECE_COST)
                        })
                        .collect(),
                    NewJob::of(&super::assemble::Assemble {
                        revision: self.revision.clone(),
                        edition: self.edition,
                        chapters: self.chapters,
                    }),
                );
                Ok(Outcome::done_with(Pages { pages: Some(pages) }))
            }
        }
    }

    async fn on_dead(self, cx: &Cx, _error: &anyhow::Error) -> anyhow::Result<()> {
        died(cx, &self.revision, Some(self.chapters), self.edition).await
    }
}

/// What `paginate` decided, its job's result: the book's page count, or none when the pieces
/// are measured again.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Pages {
    pub pages: Option<usize>,
}
