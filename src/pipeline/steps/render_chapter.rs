//! The `render_chapter` step: one chapter's EPUB and web bodies, from the planned book.

use serde::{Deserialize, Serialize};

use super::stored::model;
use super::{Cx, QUEUE};
use crate::books::{RevisionId, keys};
use crate::ebook::xhtml::Target;
use crate::jobs::{Job, Outcome};
use crate::report::Warning;
use crate::services::Services;

/// One chapter's EPUB and web bodies.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RenderChapter {
    #[serde(flatten)]
    pub revision: RevisionId,
    pub chapter: usize,
}

impl Job for RenderChapter {
    const NAME: &'static str = "book.render_chapter";
    const QUEUE: &'static str = QUEUE;
    type Context = Services;

    fn book(&self) -> Option<&str> {
        Some(self.revision.book.as_str())
    }

    async fn run(self, cx: &Cx) -> anyhow::Result<Outcome> {
        let app = cx.app();
        let planned = model(app, &self.revision).await?;
        if self.chapter >= planned.book.document.chapters.len() {
            anyhow::bail!(
                "chapter {} does not exist in the stored document",
                self.chapter
            );
        }
        let chapter = self.chapter;
        let (epub, web) = tokio::task::spawn_blocking(move || {
            (
                planned.render(chapter, Target::Epub),
                planned.render(chapter, Target::Web),
            )
        })
        .await?;
        app.blobs
            .put_if_absent(
                &keys::chapter(&self.revision, chapter, Target::Epub),
                epub.body,
            )
            .await?;
        app.blobs
            .put_if_absent(
                &keys::chapter(&self.revision, chapter, Target::Web),
                web.body,
            )
            .await?;
        let warnings: Vec<Warning> = epub
            .warnings
            .into_iter()
            .map(|w| w.at(format!("chapter {}", self.chapter + 1)))
            .collect();
        Ok(Outcome::done_with(Rendered { warnings }))
    }
}

/// What rendering a chapter found, its job's result: the warnings, each placed at its chapter,
/// which `publish` adds to the book's report in the chapters' order.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Rendered {
    pub warnings: Vec<Warning>,
}
