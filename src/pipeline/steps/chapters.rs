//! The `chapters` step: the join of the print edition, which fans out a render per chapter.

use serde::{Deserialize, Serialize};

use super::failure::fail_for_good;
use super::plan_packaging::PlanPackaging;
use super::render_chapter::RenderChapter;
use super::{Cx, QUEUE};
use crate::books::RevisionId;
use crate::jobs::{Job, NewJob, Outcome};
use crate::services::Services;

/// The join of the print edition, however it ended: renders every chapter, with the printed
/// pages marked when there is a print edition.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Chapters {
    #[serde(flatten)]
    pub revision: RevisionId,
    pub chapters: usize,
}

impl Job for Chapters {
    const NAME: &'static str = "book.chapters";
    const QUEUE: &'static str = QUEUE;
    type Context = Services;

    fn book(&self) -> Option<&str> {
        Some(self.revision.book.as_str())
    }

    async fn run(self, cx: &Cx) -> anyhow::Result<Outcome> {
        let children = (0..self.chapters)
            .map(|chapter| {
                NewJob::of(&RenderChapter {
                    revision: self.revision.clone(),
                    chapter,
                })
            })
            .collect();
        cx.fan_out(
            children,
            NewJob::of(&PlanPackaging {
                revision: self.revision.clone(),
            }),
        );
        Ok(Outcome::done())
    }

    async fn on_dead(self, cx: &Cx, error: &anyhow::Error) -> anyhow::Result<()> {
        fail_for_good(cx, &self.revision, Self::NAME, error).await
    }
}
