//! The `measure_piece` step: one piece of the print edition laid out bare, in the limited
//! child, for its pages and the glyphs it prints (`print::pieces::measure`).

use serde::{Deserialize, Serialize};

use super::print_book::{self, Answer, Request};
use super::{Cx, QUEUE};
use crate::books::RevisionId;
use crate::jobs::{Job, Outcome};
use crate::paperback::Edition;
use crate::services::Services;

/// Measures piece `piece` with `gutter`, in measuring round `round`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MeasurePiece {
    #[serde(flatten)]
    pub revision: RevisionId,
    /// The paperback in a job an older release enqueued.
    #[serde(default)]
    pub edition: Edition,
    pub piece: usize,
    pub gutter: f64,
    pub round: u32,
}

impl Job for MeasurePiece {
    const NAME: &'static str = "book.measure_piece";
    const QUEUE: &'static str = QUEUE;
    type Context = Services;

    fn book(&self) -> Option<&str> {
        Some(self.revision.book.as_str())
    }

    async fn run(self, cx: &Cx) -> anyhow::Result<Outcome> {
        let request = Request::Measure {
            revision: self.revision.clone(),
            edition: self.edition,
            piece: self.piece,
            gutter: self.gutter,
        };
        run_piece(cx, &self.revision, self.edition, self.piece, &request).await
    }
}

/// Runs `request` for piece `piece` in the print child; its answer is the job's result.
pub(super) async fn run_piece(
    cx: &Cx,
    revision: &RevisionId,
    edition: Edition,
    piece: usize,
    request: &Request,
) -> anyhow::Result<Outcome> {
    let app = cx.app();
    let work = || piece_work(&app.blobs, revision, edition, piece);
    let answer = print_book::run(&app.config, request, work).await?;
    Ok(Outcome::done_with(Piece { piece, answer }))
}

/// What a piece's stage answered, its job's result: the join reads every piece's, in piece
/// order, by `piece`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Piece {
    pub piece: usize,
    pub answer: Answer,
}

/// What piece `piece` holds, in the words an author's error names it with: "the piece of
/// chapters 12 to 15".
pub(super) async fn piece_work(
    blobs: &crate::storage::BlobStore,
    revision: &RevisionId,
    edition: Edition,
    piece: usize,
) -> String {
    if piece == 0 {
        return "the front matter".to_owned();
    }
    let chapters = match print_book::plan(blobs, revision, edition).await {
        Ok(plan) => plan.chapters(piece),
        Err(_) => return format!("piece {piece} of the print edition"),
    };
    match (chapters.start, chapters.end) {
        (a, b) if b == a + 1 => format!("chapter {b}"),
        (a, b) => format!("chapters {} to {b}", a + 1),
    }
}
