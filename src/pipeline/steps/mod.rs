//! The pipeline's steps as jobs, a file each:
//!
//! ```text
//! ingest ─► parse ─┬► package_pdf ─► measure_piece ×K ─► paginate ─► set_piece ×K ─► assemble ─┐
//!        restyle ──┘                                                                           │
//!                     (print plan)    (fan-out, join)                 (fan-out, join)         │
//!   ┌─────────────────────────────────────────────────────────────────────────────────────────┘
//!   └► chapters ─► render chapter ×N ─► package ─► package_epub ──┐
//!                   (fan-out, join)      └─────► package_reader ┴► verify ─► publish
//! ```
//!
//! The print edition comes first because the ebooks mark where its pages begin ([`typeset`]
//! says how it is cut into pieces). Its steps are extras ([`Step::extra`]): when it cannot be
//! made, the stage that finds out says why in the print report and goes on to `chapters`,
//! which makes the ebooks without a page list.
//!
//! Each step reads its inputs from storage ([`stored`]), writes its outputs to deterministic
//! keys with create-if-absent, and commits its completion together with its successors. A step
//! killed anywhere runs again from the top and writes nothing new; a step that finds bad input
//! marks the book failed and is discarded (never retried). A step that runs out of attempts
//! marks the book failed as it dies, unless it is a fan-out child: its join does that
//! ([`failure`]). What a step hands a later one is a type of its own, stored as its job's
//! result and read back with serde (`JobRecord::result_as`).
//!
//! The steps that run a limited child ([`super::child`]) hold that child's side too: `parse`
//! reads the manuscript in `bindery read-manuscript`, `typeset` prints in `bindery print-book`,
//! and both packagers run `bindery package-book` ([`packaging`]).
//!
//! [`STEPS`], after the modules, declares each step once: its job type, and from it its name
//! and registration, its label on the pages, and what `bindery convert` makes of it.

pub mod assemble;
pub mod chapters;
pub mod failure;
pub mod ingest;
pub mod measure_piece;
pub mod package_covers;
pub mod package_epub;
pub mod package_reader;
pub mod packaging;
pub mod paginate;
pub mod parse;
pub mod plan_packaging;
pub mod print_book;
pub mod print_edition;
pub mod publish;
pub mod render_chapter;
pub mod restyle;
pub mod set_piece;
pub mod stored;
pub mod typeset;
pub mod verify;

use crate::books::RevisionId;
use crate::jobs::{Job, JobContext, NewJob, Registry};
use crate::services::Services;

pub use assemble::Assemble;
pub use chapters::Chapters;
pub use failure::{RETRY_ADVICE, stopped_at};
pub use ingest::Ingest;
pub use measure_piece::MeasurePiece;
pub use package_covers::PackageCovers;
pub use package_epub::PackageEpub;
pub use package_reader::PackageReader;
pub use paginate::Paginate;
pub use parse::Parse;
pub use plan_packaging::PlanPackaging;
pub use print_edition::Typeset;
pub use publish::Publish;
pub use render_chapter::RenderChapter;
pub use restyle::Restyle;
pub use set_piece::SetPiece;
pub use verify::Verify;

/// Every pipeline job runs on this queue, so operators can pause conversions alone.
pub const QUEUE: &str = "books";

type Cx = JobContext<Services>;

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
    Step::of::<Restyle>("Carry the book over in its new style", InMemory::Skipped),
    Step::of::<Typeset>("Plan the print edition", InMemory::Same).extra(),
    Step::of::<MeasurePiece>("Measure the print edition", InMemory::Skipped).extra(),
    Step::of::<Paginate>("Number the pages", InMemory::Skipped).extra(),
    Step::of::<SetPiece>("Typeset the print edition", InMemory::Skipped).extra(),
    Step::of::<Assemble>("Assemble the print edition", InMemory::Skipped).extra(),
    Step::of::<Chapters>("Plan the chapters", InMemory::Skipped),
    Step::of::<RenderChapter>("Typeset chapters", InMemory::Fused("render")),
    Step::of::<PlanPackaging>("Plan the book", InMemory::Skipped),
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

/// Whether a job of type `kind` is one of the print edition's steps.
pub fn makes_the_print_edition(kind: &str) -> bool {
    [
        Typeset::NAME,
        MeasurePiece::NAME,
        Paginate::NAME,
        SetPiece::NAME,
        Assemble::NAME,
    ]
    .contains(&kind)
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

/// The first step of a revision's workflow (used by `submit` and `revise`).
/// The first job of a revision that gives revision `from`'s book another style.
pub fn restyle_step(revision: &RevisionId, from: u32) -> NewJob {
    NewJob::of(&Restyle {
        revision: revision.clone(),
        from,
    })
}

/// Whether a job of type `kind` is a step only one way into a workflow takes: `ingest` and
/// `parse` for a manuscript, `restyle` for a book given another style. The steps of the other
/// way are skipped.
pub fn entry(kind: &str) -> Option<Entry> {
    match kind {
        k if k == Ingest::NAME || k == Parse::NAME => Some(Entry::Manuscript),
        k if k == Restyle::NAME => Some(Entry::Restyle),
        _ => None,
    }
}

/// The two ways into a book's workflow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    Manuscript,
    Restyle,
}

pub fn first_step(revision: &RevisionId) -> NewJob {
    NewJob::of(&Ingest {
        revision: revision.clone(),
    })
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
