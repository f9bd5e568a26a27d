//! What the print edition's steps share (`typeset`, `paginate`, `assemble` and the pieces
//! between them): the fan-out of a round of measures, a join's reading of its pieces, giving
//! the print edition up, and going on to the ebooks whatever became of it.

use anyhow::Context;
use serde::{Deserialize, Serialize};

use super::Cx;
use super::chapters::Chapters;
use super::measure_piece::{MeasurePiece, Piece};
use super::package_covers::PackageCovers;
use super::print_book::{Answer, Printed};
use super::stored::{self, revision_row};
use crate::books::{RevisionId, STEP_FAILED, keys};
use crate::ebook::BookMetadata;
use crate::jobs::{ChildOutcome, Job, NewJob, Outcome};
use crate::paperback::Edition;
use crate::print;

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
    /// Made on the pages of an edition set exactly alike.
    Reused {
        reused: Edition,
    },
}

/// Plans a print edition and fans out the measures of its pieces (`typeset`, which runs it).
/// Its job type keeps the name it was first stored under, `book.package_pdf`. Declared here,
/// below the steps that go on to it, since every edition but the last goes on to the next
/// one's.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Typeset {
    #[serde(flatten)]
    pub revision: RevisionId,
    /// The book's chapters, for `chapters` after the print edition. None in a job an older
    /// release enqueued, whose own join waits on this step alone: that book is printed whole
    /// here, as it was then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chapters: Option<usize>,
    /// The edition planned; none for the first (and in a job an older release enqueued). The
    /// book's editions are made one after another, the reference edition first
    /// (`BookMetadata::in_making_order`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edition: Option<Edition>,
}

/// The measures of every piece of `edition`, in round `round`.
pub(super) fn measures(
    revision: &RevisionId,
    edition: Edition,
    pieces: usize,
    gutter: f64,
    round: u32,
) -> Vec<NewJob> {
    (0..pieces)
        .map(|piece| {
            NewJob::of(&MeasurePiece {
                revision: revision.clone(),
                edition,
                piece,
                gutter,
                round,
            })
            .cost(print::pieces::PIECE_COST)
        })
        .collect()
}

/// What comes after `edition` is made or given up: the next edition the book lists, else the
/// ebooks.
pub(super) fn next(
    revision: &RevisionId,
    chapters: usize,
    metadata: &BookMetadata,
    edition: Edition,
) -> NewJob {
    let order = metadata.in_making_order();
    let following = order
        .iter()
        .position(|e| *e == edition)
        .and_then(|k| order.get(k + 1));
    match following {
        Some(next) => NewJob::of(&Typeset {
            revision: revision.clone(),
            chapters: Some(chapters),
            edition: Some(*next),
        }),
        None => chapters_job(revision, chapters),
    }
}

/// [`next`], from the book's stored metadata.
pub(super) async fn after(
    cx: &Cx,
    revision: &RevisionId,
    chapters: usize,
    edition: Edition,
) -> anyhow::Result<NewJob> {
    let stored = stored::parsed(&cx.app().blobs, revision).await?;
    Ok(next(revision, chapters, &stored.metadata, edition))
}

pub(super) fn chapters_job(revision: &RevisionId, chapters: usize) -> NewJob {
    NewJob::of(&Chapters {
        revision: revision.clone(),
        chapters,
    })
}

/// Print edition `edition` cannot be made: its report says why, its work is removed, and the
/// book goes on to its next edition or its ebooks.
pub(super) async fn give_up(
    cx: &Cx,
    revision: &RevisionId,
    chapters: usize,
    edition: Edition,
    printed: &Printed,
) -> anyhow::Result<Outcome> {
    let app = cx.app();
    let failure = printed.report.failure.as_ref();
    let (code, reason) = failure.map_or(("", ""), |f| (f.code.as_str(), f.message.as_str()));
    tracing::warn!(
        for_author = true,
        code,
        reason,
        %edition,
        "no print edition; the ebooks publish without it"
    );
    app.blobs
        .put_if_absent(
            &keys::print_report(revision, edition),
            serde_json::to_vec(printed)?,
        )
        .await?;
    app.blobs
        .delete_prefix(&keys::print_work_prefix(revision, edition))
        .await?;
    cx.then(after(cx, revision, chapters, edition).await?);
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
    revision: &RevisionId,
    chapters: usize,
    edition: Edition,
    code: &str,
    message: String,
) -> anyhow::Result<Outcome> {
    let stored = stored::parsed(&cx.app().blobs, revision).await?;
    let printed = Printed::refused(&stored.metadata, edition, code, message);
    give_up(cx, revision, chapters, edition, &printed).await
}

/// A stage of print edition `edition` kept failing: it is given up, as a refusal would give it
/// up, and the book goes on without it. Nothing committed this stage's end, so what comes next
/// (the next edition, or `chapters`) is enqueued here, once (its key), rather than with a
/// completion.
pub(super) async fn died(
    cx: &Cx,
    revision: &RevisionId,
    chapters: Option<usize>,
    edition: Edition,
) -> anyhow::Result<()> {
    let app = cx.app();
    let Some(chapters) = chapters else {
        // An older release's job: its join goes on by itself.
        return Ok(());
    };
    if revision_row(cx, revision).await?.is_none() {
        return Ok(());
    }
    let stored = stored::parsed(&app.blobs, revision).await?;
    let printed = Printed::refused(
        &stored.metadata,
        edition,
        STEP_FAILED,
        format!(
            "Typesetting the print edition kept failing. {}",
            super::RETRY_ADVICE
        ),
    );
    app.blobs
        .put_if_absent(
            &keys::print_report(revision, edition),
            serde_json::to_vec(&printed)?,
        )
        .await?;
    let following = next(revision, chapters, &stored.metadata, edition);
    // The same keys whichever stage died: one next edition, one `chapters`.
    let key = if following.kind == Chapters::NAME {
        format!("{}:{}", Chapters::NAME, revision.workflow())
    } else {
        format!("{}:{}:{edition}", following.kind, revision.workflow())
    };
    app.queue
        .enqueue(following.workflow(revision.workflow()).unique_key(key))
        .await
        .context("going on to the next edition or the ebooks")?;
    Ok(())
}

/// For a join of pieces: every piece's answer in piece order; or, when a piece's job did not
/// finish (it kept failing) or a piece was refused (the first in piece order), why the print
/// edition is given up, as `(code, message)`.
pub(super) async fn pieces(cx: &Cx) -> anyhow::Result<Result<Vec<Answer>, (String, String)>> {
    let children: Vec<ChildOutcome> = cx.children().await?;
    let mut pieces = Vec::with_capacity(children.len());
    // The covers drawn beside the first measures are an extra of their own.
    for child in children.iter().filter(|c| c.kind != PackageCovers::NAME) {
        let piece = child
            .result
            .as_deref()
            .filter(|_| child.succeeded())
            .and_then(|r| serde_json::from_str::<Piece>(r).ok());
        match piece {
            Some(piece) => pieces.push(piece),
            None => {
                return Ok(Err((
                    STEP_FAILED.to_owned(),
                    format!(
                        "Typesetting the print edition kept failing. {}",
                        super::RETRY_ADVICE
                    ),
                )));
            }
        }
    }
    pieces.sort_by_key(|p| p.piece);
    let mut answers = Vec::with_capacity(pieces.len());
    for piece in pieces {
        match piece.answer {
            Answer::Refused { code, message } => return Ok(Err((code, message))),
            answer => answers.push(answer),
        }
    }
    Ok(Ok(answers))
}
