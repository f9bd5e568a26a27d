//! The `set_piece` step: one piece of the print edition set for print, in the limited child,
//! with its folios and running heads, its PDF stored (`print::pieces::set`).

use serde::{Deserialize, Serialize};

use super::measure_piece::run_piece;
use super::print_book::Request;
use super::{Cx, QUEUE};
use crate::books::RevisionId;
use crate::jobs::{Job, Outcome};
use crate::paperback::Edition;
use crate::services::Services;

/// Sets piece `piece` as the stored layout says.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SetPiece {
    #[serde(flatten)]
    pub revision: RevisionId,
    /// The paperback in a job an older release enqueued.
    #[serde(default)]
    pub edition: Edition,
    pub piece: usize,
}

impl Job for SetPiece {
    const NAME: &'static str = "book.set_piece";
    const QUEUE: &'static str = QUEUE;
    type Context = Services;

    fn book(&self) -> Option<&str> {
        Some(self.revision.book.as_str())
    }

    async fn run(self, cx: &Cx) -> anyhow::Result<Outcome> {
        let request = Request::Set {
            revision: self.revision.clone(),
            edition: self.edition,
            piece: self.piece,
        };
        run_piece(cx, &self.revision, self.edition, self.piece, &request).await
    }
}
