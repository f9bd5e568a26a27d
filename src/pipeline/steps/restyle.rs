//! The first step of a revision that changes only the book's style: the revision it restyles
//! (`from`) was read already, so its model, report, manuscript and images are carried over,
//! the new style set in the model, and the print edition and the ebooks made again from there.
//! The manuscript is not read again: there is no `ingest` and no `parse` in its workflow.

use serde::{Deserialize, Serialize};

use super::failure::{fail_for_good, gone, refuse};
use super::print_edition::Typeset;
use super::stored::{carry_style_files, house_styles, revision_row};
use super::{Cx, QUEUE};
use crate::books::{RevisionId, keys};
use crate::jobs::{Job, NewJob, Outcome};
use crate::report::Report;
use crate::services::Services;
use crate::style::StyleName;

/// Carry a built revision over into a new one in another style.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Restyle {
    #[serde(flatten)]
    pub revision: RevisionId,
    /// The number of the revision whose reading is carried over.
    pub from: u32,
}

impl Job for Restyle {
    const NAME: &'static str = "book.restyle";
    const QUEUE: &'static str = QUEUE;
    type Context = Services;

    fn book(&self) -> Option<&str> {
        Some(self.revision.book.as_str())
    }

    async fn run(self, cx: &Cx) -> anyhow::Result<Outcome> {
        let app = cx.app();
        let blobs = &app.blobs;
        let Some(row) = revision_row(cx, &self.revision).await? else {
            return Ok(gone(&self.revision));
        };
        let mut options = row.options()?;
        options.convert.house_styles = house_styles(app, &self.revision.book).await?;
        let from = RevisionId::of(&self.revision.book, self.from);
        // Read once: the revision's files may go while this runs, and then it says so.
        let Some(model) = blobs.get_opt(&keys::model(&from)).await? else {
            return refuse(
                cx,
                &self.revision,
                "revision_files_removed",
                format!(
                    "Revision {} no longer keeps its files, so it cannot be given another \
                     style; upload the manuscript again with the style you want.",
                    self.from
                ),
            )
            .await;
        };
        let mut book: crate::ebook::Book = serde_json::from_slice(&model)?;
        drop(model);
        cx.progress(10, "carrying the book over").await?;
        for key in [keys::upload, keys::text, keys::cover_upload] {
            if let Some(bytes) = blobs.get_opt(&key(&from)).await? {
                blobs.put_if_absent(&key(&self.revision), bytes).await?;
            }
        }
        let (old, new) = (
            keys::resources_prefix(&from),
            keys::resources_prefix(&self.revision),
        );
        for key in blobs.list(&old).await? {
            // The old style's own files stay behind: the new style brings its own.
            let Some(name) = key
                .strip_prefix(&old)
                .filter(|id| !crate::style::house::is_style_file(id))
            else {
                continue;
            };
            let bytes = blobs.get(&key).await?;
            blobs.put_if_absent(&format!("{new}{name}"), bytes).await?;
        }

        let chosen = crate::convert::chosen_style_name(&options.convert.metadata)
            .unwrap_or_else(|| book.metadata.style.clone());
        book.metadata.style = chosen;
        book.metadata.revision = (self.revision.number > 1).then_some(self.revision.number);
        if let Some(modified) = &options.convert.modified {
            book.metadata.modified.clone_from(modified);
        }
        book.style = crate::convert::chosen_style(&book.metadata, &options.convert);
        book.style_files = crate::convert::style_files(&book.metadata, &options.convert);
        let house = crate::convert::chosen_house(&book.metadata, &options.convert);
        carry_style_files(blobs, &self.revision, house).await?;

        let mut report: Report =
            serde_json::from_slice(&blobs.get(&keys::parse_report(&from)).await?)?;
        report
            .warnings
            .retain(|w| w.code != crate::style::opening::NUMBERS_IN_FIGURES);
        if let Some(warning) =
            crate::style::opening::numbering_warning(&book.style, &book.metadata.language)
        {
            report.warn(warning);
        }
        // The style was given, by the request that restyled the book.
        report.metadata.retain(|m| m.field != "style");
        report.metadata.push(crate::report::MetadataSource {
            field: "style".to_owned(),
            value: book.metadata.style.to_string(),
            source: "upload".to_owned(),
            manuscript: None,
        });
        blobs
            .put_if_absent(
                &keys::parse_report(&self.revision),
                serde_json::to_vec(&report)?,
            )
            .await?;
        let chapters = book.document.chapters.len();
        blobs
            .put_if_absent(&keys::model(&self.revision), serde_json::to_vec(&book)?)
            .await?;
        cx.then(NewJob::of(&Typeset {
            revision: self.revision.clone(),
            chapters: Some(chapters),
            // The first the book lists, as `package_pdf` reads it.
            edition: None,
        }));
        cx.progress(100, "restyled").await?;
        tracing::info!(
            for_author = true,
            style = %book.metadata.style,
            from = self.from,
            "the book carried over in its new style"
        );
        Ok(Outcome::done_with(Restyled {
            chapters,
            style: book.metadata.style,
        }))
    }

    async fn on_dead(self, cx: &Cx, error: &anyhow::Error) -> anyhow::Result<()> {
        fail_for_good(cx, &self.revision, Self::NAME, error).await
    }
}

/// What `restyle` made, its job's result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Restyled {
    pub chapters: usize,
    pub style: StyleName,
}
