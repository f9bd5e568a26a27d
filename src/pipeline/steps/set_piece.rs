//! The `set_piece` step: one piece of the print edition set for print, in the limited child,
//! with its folios and running heads, its PDF stored (`print::pieces::set`).

use serde::{Deserialize, Serialize};

use super::measure_piece::run_piece;
use super::print_book::Request;
use super::{Cx, QUEUE};
use crate::books::BookId;
use crate::jobs::{Job, Outcome};
use crate::services::Services;

/// Sets piece `piece` as the stored layout says.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SetPiece {
    pub book: BookId,
    pub piece: usize,
}

impl Job for SetPiece {
    const NAME: &'static str = "book.set_piece";
    const QUEUE: &'static str = QUEUE;
    type Context = Services;

    fn book(&self) -> Option<&str> {
        Some(self.book.as_str())
    }

    async fn run(self, cx: &Cx) -> anyhow::Result<Outcome> {
        let request = Request::Set {
            book: self.book.clone(),
            piece: self.piece,
        };
        run_piece(cx, &self.book, self.piece, &request).await
    }
}
