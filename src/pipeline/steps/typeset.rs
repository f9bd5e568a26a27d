//! The `package_pdf` step: plans the print edition, which is then typeset in pieces as jobs
//! of their own ([`crate::print::pieces`]):
//!
//! ```text
//! package_pdf ─► measure_piece ×K ─► paginate ─► set_piece ×K ─► assemble ─► chapters
//!   (plan)        (fan-out, join)   (measure again     (fan-out, join)
//!                                    if the gutter moved)
//! ```
//!
//! Every stage that lays anything out runs in the limited child ([`super::print_book`]), so
//! what a child holds is one piece, not the book. Each stage commits as it finishes and stores
//! at keys of its own: a worker killed anywhere redoes at most the stage it was in. The print
//! edition is an extra: when it cannot be made, whatever stage finds out stores why in the
//! print report and goes on to `chapters`, which makes the ebooks without a page list; a stage
//! that keeps failing does the same as it dies.

use anyhow::Context;
use serde::{Deserialize, Serialize};

use super::chapters::Chapters;
use super::failure::gone;
use super::measure_piece::MeasurePiece;
use super::print_book::{self, Answer, Printed, Request};
use super::stored::book_row;
use super::{Cx, QUEUE};
use crate::books::{BookId, STEP_FAILED, keys};
use crate::jobs::{Job, NewJob, Outcome};
use crate::print::{self, PrintOptions};
use crate::services::Services;

/// Plans the print edition and fans out the measures of its pieces. Its job type keeps the
/// name it was first stored under, `book.package_pdf`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Typeset {
    pub book: BookId,
    /// The book's chapters, for `chapters` after the print edition. None in a job an older
    /// release enqueued, whose own join waits on this step alone: that book is printed whole
    /// here, as it was then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chapters: Option<usize>,
}

impl Job for Typeset {
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
        let Some(chapters) = self.chapters else {
            return whole(cx, &self.book).await;
        };
        if !app.config.print_edition {
            // The ebooks alone, as the operator chose: no report of a print edition either.
            cx.then(chapters_job(&self.book, chapters));
            return Ok(Outcome::done_with(PrintEdition::Off {
                print_edition: false,
            }));
        }
        cx.progress(5, "planning the print edition").await?;
        let stored = print_book::model(&app.blobs, &self.book).await?;
        let planned = tokio::task::spawn_blocking(move || {
            let options = PrintOptions::of(&stored.metadata);
            let resources = Default::default();
            let plan = print::pieces::plan(print::Book {
                document: &stored.document,
                resources: &resources,
                metadata: &stored.metadata,
                options: &options,
            });
            (plan, stored.metadata)
        })
        .await?;
        let plan = match planned {
            (Ok(plan), _) => plan,
            (Err(e), metadata) => {
                let printed = Printed::refused(&metadata, e.code(), e.to_string());
                return give_up(cx, &self.book, chapters, &printed).await;
            }
        };
        app.blobs
            .put_if_absent(&keys::print_plan(&self.book), serde_json::to_vec(&plan)?)
            .await?;
        tracing::info!(pieces = plan.pieces(), "print edition planned");
        let pieces = plan.pieces();
        cx.fan_out(
            measures(&self.book, pieces, plan.gutter, 1),
            NewJob::of(&super::paginate::Paginate {
                book: self.book.clone(),
                chapters,
                round: 1,
            }),
        );
        Ok(Outcome::done_with(PrintEdition::Planned { pieces }))
    }

    async fn on_dead(self, cx: &Cx, _error: &anyhow::Error) -> anyhow::Result<()> {
        died(cx, &self.book, self.chapters).await
    }
}

/// What `package_pdf` made of the print edition, its job's result: planned in pieces, or
/// turned off. The print report itself, with the warnings, is stored beside the book
/// (`keys::print_report`, [`Printed`]) when the print edition is made or given up.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PrintEdition {
    Planned {
        pieces: usize,
    },
    Typeset {
        pages: Option<u32>,
        pdf_bytes: Option<u64>,
    },
    /// The operator turned print editions off (`PRINT_EDITION`).
    Off {
        print_edition: bool,
    },
}

/// The measures of every piece, in round `round`.
pub(super) fn measures(book: &BookId, pieces: usize, gutter: f64, round: u32) -> Vec<NewJob> {
    (0..pieces)
        .map(|piece| {
            NewJob::of(&MeasurePiece {
                book: book.clone(),
                piece,
                gutter,
                round,
            })
            .cost(print::pieces::PIECE_COST)
        })
        .collect()
}

pub(super) fn chapters_job(book: &BookId, chapters: usize) -> NewJob {
    NewJob::of(&Chapters {
        book: book.clone(),
        chapters,
    })
}

/// The print edition cannot be made: its report says why, its work is removed, and the book
/// goes on to its ebooks.
pub(super) async fn give_up(
    cx: &Cx,
    book: &BookId,
    chapters: usize,
    printed: &Printed,
) -> anyhow::Result<Outcome> {
    let app = cx.app();
    let failure = printed.report.failure.as_ref();
    let (code, reason) = failure.map_or(("", ""), |f| (f.code.as_str(), f.message.as_str()));
    tracing::warn!(
        for_author = true,
        code,
        reason,
        "no print edition; the ebooks publish without it"
    );
    app.blobs
        .put_if_absent(&keys::print_report(book), serde_json::to_vec(printed)?)
        .await?;
    app.blobs
        .delete_prefix(&keys::print_work_prefix(book))
        .await?;
    cx.then(chapters_job(book, chapters));
    Ok(Outcome::done_with(GivenUp {
        given_up: code.to_owned(),
    }))
}

/// The result of a print stage that gave the print edition up: why, by its code (the report
/// says it in words).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GivenUp {
    pub given_up: String,
}

/// [`give_up`] for a refusal: `code` and `message`, with what the book asked for.
pub(super) async fn give_up_for(
    cx: &Cx,
    book: &BookId,
    chapters: usize,
    code: &str,
    message: String,
) -> anyhow::Result<Outcome> {
    let stored = print_book::model(&cx.app().blobs, book).await?;
    let printed = Printed::refused(&stored.metadata, code, message);
    give_up(cx, book, chapters, &printed).await
}

/// A stage of the print edition kept failing: the print edition is given up, as a refusal
/// would give it up, and the book goes on without it. Nothing committed this stage's end, so
/// `chapters` is enqueued here, once (its key), rather than with a completion.
pub(super) async fn died(cx: &Cx, book: &BookId, chapters: Option<usize>) -> anyhow::Result<()> {
    let app = cx.app();
    let Some(chapters) = chapters else {
        // An older release's job: its join goes on by itself.
        return Ok(());
    };
    if book_row(cx, book).await?.is_none() {
        return Ok(());
    }
    let stored = print_book::model(&app.blobs, book).await?;
    let printed = Printed::refused(
        &stored.metadata,
        STEP_FAILED,
        format!(
            "Typesetting the print edition kept failing. {}",
            super::RETRY_ADVICE
        ),
    );
    app.blobs
        .put_if_absent(&keys::print_report(book), serde_json::to_vec(&printed)?)
        .await?;
    app.queue
        .enqueue(
            chapters_job(book, chapters)
                .workflow(book.as_str())
                .unique_key(format!("{}:{book}", Chapters::NAME)),
        )
        .await
        .context("going on to the ebooks")?;
    Ok(())
}

/// A book an older release began: the whole print edition in one child, as then.
async fn whole(cx: &Cx, book: &BookId) -> anyhow::Result<Outcome> {
    let app = cx.app();
    if !app.config.print_edition {
        return Ok(Outcome::done_with(PrintEdition::Off {
            print_edition: false,
        }));
    }
    cx.progress(10, "typesetting the print edition").await?;
    let request = Request::Whole { book: book.clone() };
    let printed = match print_book::run(&app.config, &request, "the whole book").await? {
        Answer::Assembled(printed) => printed,
        Answer::Refused { code, message } => {
            let stored = print_book::model(&app.blobs, book).await?;
            Printed::refused(&stored.metadata, &code, message)
        }
        other => anyhow::bail!("the print child answered {other:?} to a whole book"),
    };
    app.blobs
        .put_if_absent(&keys::print_report(book), serde_json::to_vec(&printed)?)
        .await?;
    match printed.report.failure {
        None => Ok(Outcome::done_with(PrintEdition::Typeset {
            pages: printed.report.pages,
            pdf_bytes: printed.pdf_bytes,
        })),
        Some(failure) => Ok(Outcome::Discard(failure.message)),
    }
}
