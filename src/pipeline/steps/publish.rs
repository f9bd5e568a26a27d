//! The `publish` step: the book becomes ready, with its report gathered from its steps'
//! results, and its tenant's catalog is refreshed.

use std::collections::BTreeMap;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use super::failure::{RETRY_ADVICE, fail_for_good};
use super::package_epub::PackageEpub;
use super::packaging::Packaged;
use super::print_book::{self, Printed};
use super::render_chapter::{RenderChapter, Rendered};
use super::stored::model;
use super::{Cx, QUEUE, STEPS, makes_the_print_edition};
use crate::books::{self, RevisionId, STEP_FAILED, keys};
use crate::jobs::{Job, JobState, Outcome};
use crate::print::where_printed;
use crate::report::{Report, StepTiming, Warning};
use crate::services::Services;

/// The book becomes ready, with its report, and its tenant's catalog is refreshed
/// (`books::publish`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Publish {
    #[serde(flatten)]
    pub revision: RevisionId,
}

impl Job for Publish {
    const NAME: &'static str = "book.publish";
    const QUEUE: &'static str = QUEUE;
    type Context = Services;

    fn book(&self) -> Option<&str> {
        Some(self.revision.book.as_str())
    }

    async fn run(self, cx: &Cx) -> anyhow::Result<Outcome> {
        let app = cx.app();
        let planned = model(app, &self.revision).await?;
        let book = &planned.book;
        let mut report: Report =
            serde_json::from_slice(&app.blobs.get(&keys::parse_report(&self.revision)).await?)
                .context("reading the parse report")?;
        let workflow = app.queue.workflow(&self.revision.workflow()).await?;
        let mut render_warnings: BTreeMap<usize, Vec<Warning>> = BTreeMap::new();
        let mut timings: BTreeMap<&str, u64> = BTreeMap::new();
        for job in &workflow.jobs {
            if let (Some(start), Some(end)) = (job.started_at, job.finished_at) {
                *timings.entry(job.kind.as_str()).or_default() +=
                    u64::try_from(end - start).unwrap_or(0);
            }
            if job.kind == RenderChapter::NAME
                && let Some(payload) = job.payload_as::<RenderChapter>()
                && let Some(rendered) = job.result_as::<Rendered>()
            {
                render_warnings.insert(payload.chapter, rendered.warnings);
            }
        }
        for warning in render_warnings.into_values().flatten() {
            report.warn(warning);
        }
        // Publish's own time is not known until it commits, so it is never listed.
        report.timings = STEPS
            .iter()
            .filter_map(|step| {
                timings.get(step.job).map(|millis| StepTiming {
                    step: step.name.to_owned(),
                    millis: *millis,
                })
            })
            .collect();
        let epub_bytes = workflow
            .jobs
            .iter()
            .find(|j| j.kind == PackageEpub::NAME)
            .and_then(|j| j.result_as::<Packaged>())
            .and_then(|packaged| match packaged {
                Packaged::Epub { bytes, .. } => i64::try_from(bytes).ok(),
                _ => None,
            })
            .unwrap_or(0);
        // The print editions: what each is, or why there is none (their steps store the
        // reports). The book's own print edition, in the report and its row, is the reference
        // edition, whose pages the ebooks mark.
        let reference = book.metadata.reference_edition();
        let mut pdf_bytes = None;
        for edition in book.metadata.in_making_order() {
            let printed = match app
                .blobs
                .get_opt(&keys::print_report(&self.revision, edition))
                .await?
            {
                Some(bytes) => {
                    let found: Printed =
                        serde_json::from_slice(&bytes).context("reading the print report")?;
                    let at = where_printed(&book.metadata, edition);
                    for warning in found.warnings {
                        report.warn(warning.at(at.clone()));
                    }
                    if edition == reference {
                        pdf_bytes = found.pdf_bytes.map(|b| b as i64);
                    }
                    found.report
                }
                // The step kept failing, or print editions are off (`PRINT_EDITION`), or the
                // book began before they were made.
                None => {
                    let Some(job) = workflow.jobs.iter().find(|j| {
                        makes_the_print_edition(&j.kind) && j.state != JobState::Completed
                    }) else {
                        continue;
                    };
                    crate::report::PrintReport {
                        failure: Some(crate::report::PrintFailure {
                            code: STEP_FAILED.into(),
                            message: format!(
                                "Typesetting the print edition kept failing ({}). {RETRY_ADVICE}",
                                job.state
                            ),
                        }),
                        ..print_book::asked(&book.metadata, edition)
                    }
                }
            };
            if edition == reference {
                report.print = Some(printed.clone());
            }
            report.editions.push(printed);
        }
        // Before the book is ready, so a catalog that lists it always finds its entry.
        app.blobs
            .put_if_absent(
                &keys::catalog_entry(&self.revision),
                serde_json::to_vec(&books::entry::Entry::of(book, pdf_bytes.is_some()))?,
            )
            .await?;
        let format = report.format.clone();
        let report = serde_json::to_string(&report)?;
        let changes = changes_since_the_last(app, &self.revision, &report).await;
        // Its tenant's catalog is refreshed by a job that commits with the publication.
        books::publish(
            &app.db,
            &app.queue,
            app.config.public_url.as_ref(),
            &self.revision,
            &books::Published {
                title: &book.metadata.title,
                authors: &book.metadata.authors,
                format: &format,
                report: &report,
                epub_bytes,
                pdf_bytes,
                changes: changes.as_ref().map(|(from, json)| (*from, json.as_str())),
            },
            app.config.revisions_kept.get(),
        )
        .await?;
        tracing::info!(for_author = true, book.id = %self.revision.book, title = %book.metadata.title, "book published");
        Ok(Outcome::done())
    }

    async fn on_dead(self, cx: &Cx, error: &anyhow::Error) -> anyhow::Result<()> {
        fail_for_good(cx, &self.revision, Self::NAME, error).await
    }
}

/// What changed in `revision` (whose report is `report`) since the newest built revision
/// before it: that revision's number and the change report's JSON, stored with the
/// publication so that it outlives both revisions' files. None for a first revision; and when
/// the comparison fails, the revision still publishes (its changes can be asked for while the
/// files are kept).
async fn changes_since_the_last(
    app: &Services,
    revision: &RevisionId,
    report: &str,
) -> Option<(u32, String)> {
    if revision.number == 1 {
        return None;
    }
    let compared = async {
        let revisions = books::revisions(&app.db, &revision.book).await?;
        let (Some(from), Some(to)) = (
            books::changes::before(&revisions, revision),
            revisions.iter().find(|r| r.id == *revision),
        ) else {
            return Ok(None);
        };
        // Its report is not stored until it is published.
        let to = books::RevisionRow {
            report: Some(report.to_owned()),
            ..to.clone()
        };
        let changes = books::changes::between(&app.blobs, &from, &to).await?;
        anyhow::Ok(Some((from.id.number, serde_json::to_string(&changes)?)))
    };
    match compared.await {
        Ok(changes) => changes,
        Err(e) => {
            tracing::warn!(book.id = %revision.book, revision = revision.number, error = %format!("{e:#}"), "what the revision changed was not stored");
            None
        }
    }
}
