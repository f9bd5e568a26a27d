//! The `package` step: the join of the chapter renders, which starts the packagers.

use serde::{Deserialize, Serialize};

use super::failure::{fail_for_good, fail_if_a_child_failed};
use super::package_covers::PackageCovers;
use super::package_epub::PackageEpub;
use super::package_reader::PackageReader;
use super::verify::Verify;
use super::{Cx, QUEUE};
use crate::books::RevisionId;
use crate::jobs::{Job, NewJob, Outcome};
use crate::services::Services;

/// The join of the chapter renders: when all succeeded, it starts the packagers (the EPUB, the
/// web reader, and the covers if the print edition's steps did not draw them), whose join is
/// `verify`. It packages nothing itself; its job type
/// keeps the name it was first stored under, `book.package`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlanPackaging {
    #[serde(flatten)]
    pub revision: RevisionId,
}

impl Job for PlanPackaging {
    const NAME: &'static str = "book.package";
    const QUEUE: &'static str = QUEUE;
    type Context = Services;

    fn book(&self) -> Option<&str> {
        Some(self.revision.book.as_str())
    }

    async fn run(self, cx: &Cx) -> anyhow::Result<Outcome> {
        if let Some(outcome) = fail_if_a_child_failed(cx, &self.revision).await? {
            return Ok(outcome);
        }
        let mut packagers = vec![
            NewJob::of(&PackageEpub {
                revision: self.revision.clone(),
            }),
            NewJob::of(&PackageReader {
                revision: self.revision.clone(),
            }),
        ];
        // The covers, unless they were drawn beside the print edition.
        let steps = cx
            .app()
            .queue
            .workflow_counts(&self.revision.workflow())
            .await?;
        if !steps.iter().any(|step| step.kind == PackageCovers::NAME) {
            packagers.push(NewJob::of(&PackageCovers {
                revision: self.revision.clone(),
            }));
        }
        cx.fan_out(
            packagers,
            NewJob::of(&Verify {
                revision: self.revision.clone(),
            }),
        );
        Ok(Outcome::done())
    }

    async fn on_dead(self, cx: &Cx, error: &anyhow::Error) -> anyhow::Result<()> {
        fail_for_good(cx, &self.revision, Self::NAME, error).await
    }
}
