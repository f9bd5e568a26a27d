//! The pipeline's steps as jobs:
//!
//! ```text
//! ingest ─► parse ─► package_pdf ─► chapters ─► render chapter ×N ─► package ─► package_epub ──┐
//!                   (fan-out of one, join)       (fan-out, join)       └─────► package_reader ┴► verify ─► publish
//! ```
//!
//! The print edition comes first because the ebooks mark where its pages begin; it is an extra
//! ([`Step::extra`]), so when it cannot be made its step fails alone and `chapters`, its join,
//! goes on to make the ebooks without a page list.
//!
//! Each step reads its inputs from storage, writes its outputs to deterministic keys with
//! create-if-absent, and commits its completion together with its successors. A step killed
//! anywhere runs again from the top and writes nothing new; a step that finds bad input marks
//! the book failed and is discarded (never retried). A step that runs out of attempts marks
//! the book failed as it dies, unless it is a fan-out child: its join does that.
//!
//! [`STEPS`], after the jobs, declares each step once: its job type, and from it its name
//! and registration, its label on the pages, and what `bindery convert` makes of it.

use std::collections::BTreeMap;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use super::packaging::{self, Output, Packaged};
use super::{printing, reading};
use crate::books::{self, BookId, BookRow, STEP_FAILED, keys};
use crate::convert;
use crate::ebook::xhtml::Target;
use crate::jobs::{Job, JobContext, JobState, NewJob, Outcome, Registry};
use crate::logbook;
use crate::manuscript::Format;
use crate::report::{Report, StepTiming, Warning};
use crate::services::Services;

/// Every pipeline job runs on this queue, so operators can pause conversions alone.
pub const QUEUE: &str = "books";

/// How long a failing book waits for its log to be stored (`mark_failed`): the writer stores
/// within a twentieth of a second when the database is well, and a database that is not must
/// not hold the failure back for long.
const LOG_FLUSH_WITHIN: std::time::Duration = std::time::Duration::from_secs(2);

type Cx = JobContext<Services>;

/// Sniff, enforce limits, decode text to UTF-8.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Ingest {
    pub book: BookId,
}

impl Job for Ingest {
    const NAME: &'static str = "book.ingest";
    const QUEUE: &'static str = QUEUE;
    type Context = Services;

    fn book(&self) -> Option<&str> {
        Some(self.book.as_str())
    }

    async fn run(self, cx: &Cx) -> anyhow::Result<Outcome> {
        let app = cx.app();
        let Some(row) = book_row(cx, &self.book).await? else {
            return Ok(gone(&self.book));
        };
        let options = row.options()?;
        let manuscript = app.blobs.get(&keys::upload(&self.book)).await?;
        let ingested = match convert::ingest(&manuscript, &options.convert, &app.config.limits) {
            Ok(ingested) => ingested,
            Err(e) => return refuse(cx, &self.book, e.code(), e.to_string()).await,
        };
        if let Some(text) = &ingested.text {
            app.blobs
                .put_if_absent(&keys::text(&self.book), text.clone())
                .await?;
        }
        // Reading is the step whose memory the manuscript decides: it waits for room in the
        // worker's budget (see `jobs::admission`).
        let cost = crate::manuscript::reading_cost(&ingested, &manuscript);
        cx.then(
            NewJob::of(&Parse {
                book: self.book.clone(),
                format: ingested.format,
                encoding: ingested.encoding.clone(),
            })
            .cost(cost),
        );
        cx.progress(100, "ingested").await?;
        // The book's id comes from the job's span (`Job::book`), as on every line of a step.
        tracing::info!(for_author = true, format = ?ingested.format, encoding = ingested.encoding.as_deref(), bytes = manuscript.len(), "manuscript recognised");
        Ok(Outcome::done_with(serde_json::json!({
            "format": ingested.format,
            "encoding": ingested.encoding,
            "bytes": manuscript.len(),
        })))
    }

    async fn on_dead(self, cx: &Cx, error: &anyhow::Error) -> anyhow::Result<()> {
        fail_for_good(cx, &self.book, Self::NAME, error).await
    }
}

/// Read the manuscript into the document model, resolve metadata, prepare the cover.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Parse {
    pub book: BookId,
    pub format: Format,
    pub encoding: Option<String>,
}

impl Job for Parse {
    const NAME: &'static str = "book.parse";
    const QUEUE: &'static str = QUEUE;
    type Context = Services;

    fn book(&self) -> Option<&str> {
        Some(self.book.as_str())
    }

    async fn run(self, cx: &Cx) -> anyhow::Result<Outcome> {
        let app = cx.app();
        let Some(row) = book_row(cx, &self.book).await? else {
            return Ok(gone(&self.book));
        };
        cx.progress(10, "reading the manuscript").await?;
        let request = reading::Request {
            book: self.book.clone(),
            format: self.format,
            encoding: self.encoding.clone(),
            options: row.options()?,
        };
        let chapters = match reading::read_in_child(&app.config, &request).await? {
            reading::Reply::Stored { chapters } => chapters,
            reading::Reply::Refused { code, message } => {
                return refuse(cx, &self.book, &code, message).await;
            }
        };
        // The print edition first: the ebooks mark where its pages begin. It is an extra, so
        // its step fails alone, and the join goes on whatever became of it.
        cx.fan_out(
            vec![NewJob::of(&PackagePdf {
                book: self.book.clone(),
            })],
            NewJob::of(&Chapters {
                book: self.book.clone(),
                chapters,
            }),
        );
        cx.progress(100, "parsed").await?;
        tracing::info!(for_author = true, chapters, "manuscript read");
        Ok(Outcome::done_with(
            serde_json::json!({ "chapters": chapters }),
        ))
    }

    async fn on_dead(self, cx: &Cx, error: &anyhow::Error) -> anyhow::Result<()> {
        fail_for_good(cx, &self.book, Self::NAME, error).await
    }
}

/// The print edition: the interior PDF, typeset in a limited child process
/// ([`printing`]), and where its pages begin.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PackagePdf {
    pub book: BookId,
}

impl Job for PackagePdf {
    const NAME: &'static str = "book.package_pdf";
    const QUEUE: &'static str = QUEUE;
    type Context = Services;

    fn book(&self) -> Option<&str> {
        Some(self.book.as_str())
    }

    async fn run(self, cx: &Cx) -> anyhow::Result<Outcome> {
        let app = cx.app();
        if book_row(cx, &self.book).await?.is_none() {
            return Ok(gone(&self.book));
        }
        if !app.config.print_edition {
            // The ebooks alone, as the operator chose: no report of a print edition either.
            return Ok(Outcome::done_with(
                serde_json::json!({ "print_edition": false }),
            ));
        }
        cx.progress(10, "typesetting the print edition").await?;
        // Only the metadata, for the report of a child a limit stopped: the child reads the
        // model itself (as parse stored it, not the cache's, which marks the pages this makes).
        #[derive(Deserialize)]
        struct Stored {
            metadata: crate::ebook::BookMetadata,
        }
        let stored: Stored =
            serde_json::from_slice(&app.blobs.get(&keys::model(&self.book)).await?)
                .context("reading the stored document model")?;
        let request = printing::Request {
            book: self.book.clone(),
        };
        let printed = printing::print_in_child(&app.config, &stored.metadata, &request).await?;
        app.blobs
            .put_if_absent(
                &keys::print_report(&self.book),
                serde_json::to_vec(&printed)?,
            )
            .await?;
        let report = printed.report;
        match report.failure {
            None => {
                tracing::info!(for_author = true, pages = report.pages, trim = %report.trim, bytes = printed.pdf_bytes, "print edition typeset");
                Ok(Outcome::done_with(serde_json::json!({
                    "pages": report.pages,
                    "pdf_bytes": printed.pdf_bytes,
                })))
            }
            Some(failure) => {
                tracing::warn!(for_author = true, code = %failure.code, reason = %failure.message, "no print edition; the ebooks publish without it");
                Ok(Outcome::Discard(failure.message))
            }
        }
    }
}

/// The join of the print edition, however it ended: renders every chapter, with the printed
/// pages marked when there is a print edition.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Chapters {
    pub book: BookId,
    pub chapters: usize,
}

impl Job for Chapters {
    const NAME: &'static str = "book.chapters";
    const QUEUE: &'static str = QUEUE;
    type Context = Services;

    fn book(&self) -> Option<&str> {
        Some(self.book.as_str())
    }

    async fn run(self, cx: &Cx) -> anyhow::Result<Outcome> {
        let children = (0..self.chapters)
            .map(|chapter| {
                NewJob::of(&RenderChapter {
                    book: self.book.clone(),
                    chapter,
                })
            })
            .collect();
        cx.fan_out(
            children,
            NewJob::of(&Package {
                book: self.book.clone(),
            }),
        );
        Ok(Outcome::done())
    }

    async fn on_dead(self, cx: &Cx, error: &anyhow::Error) -> anyhow::Result<()> {
        fail_for_good(cx, &self.book, Self::NAME, error).await
    }
}

/// One chapter's EPUB and web bodies.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RenderChapter {
    pub book: BookId,
    pub chapter: usize,
}

impl Job for RenderChapter {
    const NAME: &'static str = "book.render_chapter";
    const QUEUE: &'static str = QUEUE;
    type Context = Services;

    fn book(&self) -> Option<&str> {
        Some(self.book.as_str())
    }

    async fn run(self, cx: &Cx) -> anyhow::Result<Outcome> {
        let app = cx.app();
        let planned = model(app, &self.book).await?;
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
            .put_if_absent(&keys::chapter(&self.book, chapter, Target::Epub), epub.body)
            .await?;
        app.blobs
            .put_if_absent(&keys::chapter(&self.book, chapter, Target::Web), web.body)
            .await?;
        let warnings: Vec<Warning> = epub
            .warnings
            .into_iter()
            .map(|w| w.at(format!("chapter {}", self.chapter + 1)))
            .collect();
        Ok(Outcome::done_with(
            serde_json::json!({ "warnings": warnings }),
        ))
    }
}

/// The join of the chapter renders: when all succeeded, start both packagers.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Package {
    pub book: BookId,
}

impl Job for Package {
    const NAME: &'static str = "book.package";
    const QUEUE: &'static str = QUEUE;
    type Context = Services;

    fn book(&self) -> Option<&str> {
        Some(self.book.as_str())
    }

    async fn run(self, cx: &Cx) -> anyhow::Result<Outcome> {
        if let Some(outcome) = fail_if_a_child_failed(cx, &self.book).await? {
            return Ok(outcome);
        }
        cx.fan_out(
            vec![
                NewJob::of(&PackageEpub {
                    book: self.book.clone(),
                }),
                NewJob::of(&PackageReader {
                    book: self.book.clone(),
                }),
                NewJob::of(&PackageCovers {
                    book: self.book.clone(),
                }),
            ],
            NewJob::of(&Verify {
                book: self.book.clone(),
            }),
        );
        Ok(Outcome::done())
    }

    async fn on_dead(self, cx: &Cx, error: &anyhow::Error) -> anyhow::Result<()> {
        fail_for_good(cx, &self.book, Self::NAME, error).await
    }
}

/// The EPUB, made in a limited child ([`packaging`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PackageEpub {
    pub book: BookId,
}

impl Job for PackageEpub {
    const NAME: &'static str = "book.package_epub";
    const QUEUE: &'static str = QUEUE;
    type Context = Services;

    fn book(&self) -> Option<&str> {
        Some(self.book.as_str())
    }

    async fn run(self, cx: &Cx) -> anyhow::Result<Outcome> {
        cx.progress(50, "zipping the EPUB").await?;
        match package(cx, &self.book, Output::Epub).await? {
            Packaged::Refused { code, message } => refuse(cx, &self.book, &code, message).await,
            packaged @ Packaged::Epub { bytes, unpacked } => {
                tracing::info!(for_author = true, bytes, unpacked, "EPUB packaged");
                Ok(Outcome::done_with(serde_json::to_value(packaged)?))
            }
            other => anyhow::bail!("packaging the EPUB answered {other:?}"),
        }
    }
}

/// The web reader, made in a limited child ([`packaging`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PackageReader {
    pub book: BookId,
}

impl Job for PackageReader {
    const NAME: &'static str = "book.package_reader";
    const QUEUE: &'static str = QUEUE;
    type Context = Services;

    fn book(&self) -> Option<&str> {
        Some(self.book.as_str())
    }

    async fn run(self, cx: &Cx) -> anyhow::Result<Outcome> {
        cx.progress(50, "writing the web reader").await?;
        match package(cx, &self.book, Output::Reader).await? {
            Packaged::Refused { code, message } => refuse(cx, &self.book, &code, message).await,
            packaged @ Packaged::Reader { files, bytes } => {
                tracing::info!(for_author = true, files, bytes, "web reader packaged");
                Ok(Outcome::done_with(serde_json::to_value(packaged)?))
            }
            other => anyhow::bail!("packaging the web reader answered {other:?}"),
        }
    }
}

/// Makes `output` of `book` in its limited child.
async fn package(cx: &Cx, book: &BookId, output: Output) -> anyhow::Result<Packaged> {
    let request = packaging::Request {
        book: book.clone(),
        output,
    };
    packaging::package_in_child(&cx.app().config, &request).await
}

/// The join of both packagers: self-check what they produced.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Verify {
    pub book: BookId,
}

impl Job for Verify {
    const NAME: &'static str = "book.verify";
    const QUEUE: &'static str = QUEUE;
    type Context = Services;

    fn book(&self) -> Option<&str> {
        Some(self.book.as_str())
    }

    async fn run(self, cx: &Cx) -> anyhow::Result<Outcome> {
        if let Some(outcome) = fail_if_a_child_failed(cx, &self.book).await? {
            return Ok(outcome);
        }
        let app = cx.app();
        let epub = app.blobs.get(&keys::epub(&self.book)).await?;
        let mut problems = match convert::verify_epub(&epub) {
            Ok(()) => Vec::new(),
            Err(e) => vec![e],
        };
        if app
            .blobs
            .get_opt(&keys::reader(&self.book, "index.html"))
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
            mark_failed(app, &self.book, books::DAMAGED, &message, Some(&message)).await?;
            return Ok(Outcome::Discard(message));
        }
        tracing::info!(
            for_author = true,
            epub_bytes = epub.len(),
            "EPUB and web reader checked"
        );
        cx.then(NewJob::of(&Publish {
            book: self.book.clone(),
        }));
        Ok(Outcome::done_with(
            serde_json::json!({ "epub_bytes": epub.len() }),
        ))
    }

    async fn on_dead(self, cx: &Cx, error: &anyhow::Error) -> anyhow::Result<()> {
        fail_for_good(cx, &self.book, Self::NAME, error).await
    }
}

/// The book's covers beyond the EPUB's: the pages' thumbnail and the stores' 1600×2560 JPEG.
/// A job of its own beside the EPUB and the reader, not part of publishing: drawing the large
/// one was the longest thing publishing did, and a kill during it cost publishing an attempt.
/// An extra: without it the pages show the EPUB's cover and the store cover is missing, but
/// the book publishes (and a worker older than this step, which discards it, fails nothing).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PackageCovers {
    pub book: BookId,
}

impl Job for PackageCovers {
    const NAME: &'static str = "book.package_covers";
    const QUEUE: &'static str = QUEUE;
    type Context = Services;

    fn book(&self) -> Option<&str> {
        Some(self.book.as_str())
    }

    /// In the worker, unlike the other packagers: what it draws from is bounded by constants.
    /// The stored cover is the reading child's `ebook::cover::prepare`d one, at most
    /// 1600×2560 pixels (32 MiB decoded at 16 bits a channel), or the generated design drawn
    /// at that size, whatever the upload was.
    async fn run(self, cx: &Cx) -> anyhow::Result<Outcome> {
        let app = cx.app();
        let planned = model(app, &self.book).await?;
        let Some(cover) = planned.book.cover.clone() else {
            return Ok(Outcome::done());
        };
        let bytes = app
            .blobs
            .get(&keys::resource(&self.book, &cover.file_name))
            .await?;
        let (thumbnail, store_cover) = tokio::task::spawn_blocking(move || {
            anyhow::Ok((
                crate::ebook::cover::thumbnail(&cover, &bytes)?,
                crate::ebook::cover::store_jpeg(&cover, &bytes)?,
            ))
        })
        .await??;
        app.blobs
            .put_if_absent(&keys::thumbnail(&self.book), thumbnail)
            .await?;
        app.blobs
            .put_if_absent(&keys::store_cover(&self.book), store_cover)
            .await?;
        Ok(Outcome::done())
    }
}

/// The book becomes ready, with its report, and its tenant's catalog is refreshed
/// (`books::publish`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Publish {
    pub book: BookId,
}

impl Job for Publish {
    const NAME: &'static str = "book.publish";
    const QUEUE: &'static str = QUEUE;
    type Context = Services;

    fn book(&self) -> Option<&str> {
        Some(self.book.as_str())
    }

    async fn run(self, cx: &Cx) -> anyhow::Result<Outcome> {
        let app = cx.app();
        let planned = model(app, &self.book).await?;
        let book = &planned.book;
        let mut report: Report =
            serde_json::from_slice(&app.blobs.get(&keys::parse_report(&self.book)).await?)
                .context("reading the parse report")?;
        let workflow = app.queue.workflow(&self.book).await?;
        let mut render_warnings: BTreeMap<usize, Vec<Warning>> = BTreeMap::new();
        let mut timings: BTreeMap<&str, u64> = BTreeMap::new();
        for job in &workflow.jobs {
            if let (Some(start), Some(end)) = (job.started_at, job.finished_at) {
                *timings.entry(job.kind.as_str()).or_default() +=
                    u64::try_from(end - start).unwrap_or(0);
            }
            if job.kind == RenderChapter::NAME
                && let Some(result) = &job.result
                && let Ok(payload) = serde_json::from_str::<RenderChapter>(&job.payload)
                && let Ok(value) = serde_json::from_str::<serde_json::Value>(result)
                && let Some(list) = value.get("warnings")
            {
                let warnings: Vec<Warning> =
                    serde_json::from_value(list.clone()).unwrap_or_default();
                render_warnings.insert(payload.chapter, warnings);
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
            .and_then(|j| j.result.as_deref())
            .and_then(|r| serde_json::from_str::<Packaged>(r).ok())
            .and_then(|packaged| match packaged {
                Packaged::Epub { bytes, .. } => i64::try_from(bytes).ok(),
                _ => None,
            })
            .unwrap_or(0);
        // The print edition: what it is, or why there is none (`PackagePdf`).
        let pdf_bytes = match app.blobs.get_opt(&keys::print_report(&self.book)).await? {
            Some(bytes) => {
                let found: printing::Printed =
                    serde_json::from_slice(&bytes).context("reading the print report")?;
                for warning in found.warnings {
                    report.warn(warning.at("print edition"));
                }
                report.print = Some(found.report);
                found.pdf_bytes.map(|b| b as i64)
            }
            // The step kept failing, or print editions are off (`PRINT_EDITION`), or the book
            // began before they were made.
            None => {
                if let Some(job) = workflow
                    .jobs
                    .iter()
                    .find(|j| j.kind == PackagePdf::NAME && j.state != JobState::Completed)
                {
                    report.print = Some(crate::report::PrintReport {
                        failure: Some(crate::report::PrintFailure {
                            code: STEP_FAILED.into(),
                            message: format!(
                                "Typesetting the print edition kept failing ({}). {RETRY_ADVICE}",
                                job.state
                            ),
                        }),
                        ..printing::asked(&book.metadata)
                    });
                }
                None
            }
        };
        // Before the book is ready, so a catalog that lists it always finds its entry.
        app.blobs
            .put_if_absent(
                &keys::catalog_entry(&self.book),
                serde_json::to_vec(&books::entry::Entry::of(book, pdf_bytes.is_some()))?,
            )
            .await?;
        // Its tenant's catalog is refreshed by a job that commits with the publication.
        books::publish(
            &app.db,
            &app.queue,
            app.config.public_url.as_ref(),
            &self.book,
            &books::Published {
                title: &book.metadata.title,
                authors: &book.metadata.authors,
                format: &report.format,
                report: &serde_json::to_string(&report)?,
                epub_bytes,
                pdf_bytes,
            },
        )
        .await?;
        tracing::info!(for_author = true, book.id = %self.book, title = %book.metadata.title, "book published");
        Ok(Outcome::done())
    }

    async fn on_dead(self, cx: &Cx, error: &anyhow::Error) -> anyhow::Result<()> {
        fail_for_good(cx, &self.book, Self::NAME, error).await
    }
}

/// One step of the pipeline: the worker registers its job, the API's progress and the
/// report's timings list it by `name`, the pages show its `label`, and `bindery convert` runs
/// its stage as `in_memory` says.
#[derive(Debug, Clone, Copy)]
pub struct Step {
    /// The job type, as the `jobs` table stores it (`book.render_chapter`).
    pub job: &'static str,
    /// The job type without `book.` (`render_chapter`).
    pub name: &'static str,
    /// What a person reads on the book's page.
    pub label: &'static str,
    pub in_memory: InMemory,
    /// An extra the book publishes without (the print edition): when it fails, only it has
    /// failed.
    pub extra: bool,
    register: fn(Registry<Services>) -> Registry<Services>,
}

/// A step is its job type.
impl PartialEq for Step {
    fn eq(&self, other: &Step) -> bool {
        self.job == other.job
    }
}

impl Eq for Step {}

/// What becomes of a step in `bindery convert`, which runs the stages in a row in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InMemory {
    /// It runs there under the step's name.
    Same,
    /// Its jobs' work runs there as one pass, under this name (a fan-out in the worker).
    Fused(&'static str),
    /// It has no work of its own without storage (a join, publishing), or none a file on disk
    /// needs (the web pages' covers).
    Skipped,
}

impl Step {
    const fn of<J: Job<Context = Services>>(label: &'static str, in_memory: InMemory) -> Step {
        Step {
            job: J::NAME,
            name: without_prefix(J::NAME),
            label,
            in_memory,
            extra: false,
            register: Registry::<Services>::register::<J>,
        }
    }

    /// The step as an extra (see [`Step::extra`]).
    const fn extra(self) -> Step {
        Step {
            extra: true,
            ..self
        }
    }

    /// The step's name in `bindery convert` (its progress and its report's timings).
    pub const fn in_memory_name(&self) -> Option<&'static str> {
        match self.in_memory {
            InMemory::Same => Some(self.name),
            InMemory::Fused(name) => Some(name),
            InMemory::Skipped => None,
        }
    }
}

/// The steps, in order. Adding a step is its job, a line here, and enqueuing it.
pub const STEPS: &[Step] = &[
    Step::of::<Ingest>("Read the upload", InMemory::Same),
    Step::of::<Parse>("Understand the manuscript", InMemory::Same),
    Step::of::<PackagePdf>("Typeset the print edition", InMemory::Same).extra(),
    Step::of::<Chapters>("Plan the chapters", InMemory::Skipped),
    Step::of::<RenderChapter>("Typeset chapters", InMemory::Fused("render")),
    Step::of::<Package>("Plan the book", InMemory::Skipped),
    Step::of::<PackageEpub>("Build the EPUB", InMemory::Same),
    Step::of::<PackageReader>("Build the web reader", InMemory::Same),
    Step::of::<PackageCovers>("Draw the covers", InMemory::Skipped).extra(),
    Step::of::<Verify>("Check the EPUB", InMemory::Same),
    Step::of::<Publish>("Publish", InMemory::Skipped),
];

/// Adds every step's job to the worker's registry.
pub fn register(registry: Registry<Services>) -> Registry<Services> {
    STEPS
        .iter()
        .fold(registry, |registry, step| (step.register)(registry))
}

/// Whether a job of type `kind` that died fails its book: any but an extra's (the print
/// edition, the web's covers), which the book publishes without.
pub fn fails_the_book(kind: &str) -> bool {
    by_job(kind).is_none_or(|step| !step.extra)
}

/// Whether a job of type `kind` marks its book ready, as it runs (`books::publish`).
pub fn publishes_the_book(kind: &str) -> bool {
    kind == Publish::NAME
}

/// The step whose job type is `job`.
pub fn by_job(job: &str) -> Option<&'static Step> {
    STEPS.iter().find(|step| step.job == job)
}

/// `J`'s step. Only ever evaluated at compile time (by `in_memory_name`, whose callers are
/// consts), where its panic is a build error: naming a job that is not a step does not build.
const fn step_of<J: Job>() -> &'static Step {
    let mut i = 0;
    while i < STEPS.len() {
        if same(STEPS[i].job, J::NAME) {
            return &STEPS[i];
        }
        i += 1;
    }
    panic!("this job is not a step of the pipeline")
}

/// How `bindery convert` names `J`'s stage; for consts, so that a step it does not run is a
/// build error.
pub(super) const fn in_memory_name<J: Job>() -> &'static str {
    match step_of::<J>().in_memory_name() {
        Some(name) => name,
        None => panic!("`bindery convert` does not run this step"),
    }
}

const fn without_prefix(job: &'static str) -> &'static str {
    match job.as_bytes() {
        [b'b', b'o', b'o', b'k', b'.', rest @ ..] => match std::str::from_utf8(rest) {
            Ok(name) => name,
            Err(_) => panic!("a job type is UTF-8"),
        },
        _ => panic!("a step's job type starts with `book.`"),
    }
}

const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

async fn book_row(cx: &Cx, book: &BookId) -> anyhow::Result<Option<BookRow>> {
    books::get(&cx.app().db, book).await
}

/// The book was deleted while its pipeline ran: stop quietly.
fn gone(book: &BookId) -> Outcome {
    Outcome::Cancel(format!("book {book} no longer exists"))
}

/// Bad input: the book fails with the reason, and the job is discarded (a retry cannot help).
async fn refuse(cx: &Cx, book: &BookId, code: &str, message: String) -> anyhow::Result<Outcome> {
    // The reason is the one the book shows its author (`error.message`).
    tracing::warn!(for_author = true, book.id = %book, code, reason = %message, "manuscript refused");
    mark_failed(cx.app(), book, code, &message, None).await?;
    Ok(Outcome::Discard(message))
}

/// Marks the book failed (its `book.failed` event links under this service's public URL).
/// With a `reason`, it first ends the book's log with why, in words written for its author
/// (what to do about a step that failed, never a server's error text); a refusal has said
/// why already (`refuse`).
///
/// The book's page reloads the moment the book has failed, and shows its log: so the line
/// that says why is in the database before the failure is committed (`logbook::flush`).
async fn mark_failed(
    app: &Services,
    book: &BookId,
    code: &str,
    message: &str,
    reason: Option<&str>,
) -> anyhow::Result<()> {
    if let Some(reason) = reason {
        tracing::warn!(for_author = true, book.id = %book, code, reason, "book failed");
    }
    if !logbook::flush(LOG_FLUSH_WITHIN).await {
        tracing::debug!(book.id = %book, "the log lines before the book's failure were not stored in time; failing it anyway");
    }
    let public_url = app.config.public_url.as_ref();
    books::fail(&app.db, &app.queue, public_url, book, code, message).await?;
    Ok(())
}

/// A step that is not a fan-out child ran out of attempts: nothing after it will run, so it
/// fails the book itself, in the words the API uses for a dead step.
async fn fail_for_good(
    cx: &Cx,
    book: &BookId,
    job: &str,
    error: &anyhow::Error,
) -> anyhow::Result<()> {
    step_failed(cx, book, job, &error.to_string()).await
}

/// Fails the book because step `job` kept failing with `error`. The book (its API, its page,
/// its `book.failed` event) and its author's log say which step and what to do; the error
/// itself, which can name the server's paths, storage and hosts, only the operator's log.
async fn step_failed(cx: &Cx, book: &BookId, job: &str, error: &str) -> anyhow::Result<()> {
    tracing::warn!(book.id = %book, step = job, error, "a step kept failing; the book fails");
    let message = stopped_at(job);
    mark_failed(cx.app(), book, STEP_FAILED, &message, Some(&message)).await
}

/// What a person can do about a step that failed.
pub const RETRY_ADVICE: &str = "Retry the book; if it fails again, the operator's logs say why.";

/// Why a book whose step `job` kept failing failed, for its tenant (the API, the page, the
/// `book.failed` event and the author's log): the step by its label and what to do. Not the
/// error, which can name the server's paths, storage and hosts: the operator's log and the
/// job's history keep it.
pub fn stopped_at(job: &str) -> String {
    match by_job(job) {
        Some(step) => format!(
            "The conversion stopped at “{}”, which kept failing. {RETRY_ADVICE}",
            step.label
        ),
        None => format!("The conversion stopped: a step kept failing. {RETRY_ADVICE}"),
    }
}

/// For joins: if a child other than an extra ended in anything but success, the book fails
/// with its error.
async fn fail_if_a_child_failed(cx: &Cx, book: &BookId) -> anyhow::Result<Option<Outcome>> {
    let children = cx.children().await?;
    let Some(failed) = children
        .iter()
        .find(|c| !c.succeeded() && fails_the_book(&c.kind))
    else {
        return Ok(None);
    };
    let error = failed
        .last_error()
        .unwrap_or_else(|| format!("step {} ended {}", failed.kind, failed.state));
    // A child that refused the book (too big to package) failed it already, with its reason;
    // otherwise, in the words of any step that kept failing, advice included.
    let already = book_row(cx, book)
        .await?
        .is_some_and(|row| row.status == books::BookStatus::Failed);
    if !already {
        step_failed(cx, book, &failed.kind, &error).await?;
    }
    Ok(Some(Outcome::Cancel(format!(
        "{} ended {}: {error}",
        failed.kind, failed.state
    ))))
}

/// The book as the ebooks are made from it: the stored model, with the print edition's pages
/// marked when there is one.
async fn model(
    app: &Services,
    book: &BookId,
) -> anyhow::Result<std::sync::Arc<crate::ebook::xhtml::PlannedBook>> {
    app.models
        .get(&app.blobs, &keys::model(book), &keys::pagination(book))
        .await
}

/// Payload of `ingest` for a new book (used by `submit`).
pub fn first_step(book: &BookId) -> NewJob {
    NewJob::of(&Ingest { book: book.clone() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bindery_convert_runs_the_stages_it_always_named() {
        let names: Vec<&str> = STEPS.iter().filter_map(Step::in_memory_name).collect();
        assert_eq!(
            names,
            [
                "ingest",
                "parse",
                "package_pdf",
                "render",
                "package_epub",
                "package_reader",
                "verify"
            ]
        );
    }
}
