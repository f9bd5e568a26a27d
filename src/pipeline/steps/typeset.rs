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

use super::failure::gone;
use super::package_covers::PackageCovers;
use super::print_book::{self, Answer, Printed, Request, whole_book};
use super::print_edition::{PrintEdition, Typeset, chapters_job, died, give_up, measures, next};
use super::stored::{self, revision_row};
use super::{Cx, QUEUE};
use crate::books::{RevisionId, keys};
use crate::ebook::BookMetadata;
use crate::jobs::{Job, NewJob, Outcome};
use crate::paperback::Edition;
use crate::print::{self, PrintOptions};
use crate::services::Services;

impl Job for Typeset {
    const NAME: &'static str = "book.package_pdf";
    const QUEUE: &'static str = QUEUE;
    type Context = Services;

    fn book(&self) -> Option<&str> {
        Some(self.revision.book.as_str())
    }

    async fn run(self, cx: &Cx) -> anyhow::Result<Outcome> {
        let app = cx.app();
        if revision_row(cx, &self.revision).await?.is_none() {
            return Ok(gone(&self.revision));
        }
        let Some(chapters) = self.chapters else {
            return whole(cx, &self.revision).await;
        };
        if !app.config.print_edition {
            // The ebooks alone, as the operator chose: no report of a print edition either.
            cx.then(chapters_job(&self.revision, chapters));
            return Ok(Outcome::done_with(PrintEdition::Off {
                print_edition: false,
            }));
        }
        let stored = stored::parsed(&app.blobs, &self.revision).await?;
        let order = stored.metadata.in_making_order();
        let Some(edition) = self.edition.or(order.first().copied()) else {
            // The book asks for no print edition (`editions=none`): the ebooks alone.
            cx.then(chapters_job(&self.revision, chapters));
            return Ok(Outcome::done_with(PrintEdition::Off {
                print_edition: false,
            }));
        };
        let first = order.first() == Some(&edition);
        // An edition set exactly as one made before it has its pages already.
        let earlier = order.iter().take_while(|e| **e != edition);
        let twin = earlier
            .copied()
            .find(|e| print::same_interior(&stored.metadata, *e, edition));
        if let Some(from) = twin
            && app
                .blobs
                .get_opt(&keys::pdf(&self.revision, from))
                .await?
                .is_some()
        {
            return reuse(
                cx,
                &self.revision,
                &stored.metadata,
                chapters,
                edition,
                from,
            )
            .await;
        }
        cx.progress(5, &format!("planning the {} edition", edition.label()))
            .await?;
        let planned = tokio::task::spawn_blocking(move || {
            let options = PrintOptions::of_edition(&stored.metadata, edition);
            let style = print::edition_style(&stored.style, &stored.metadata, edition);
            let resources = Default::default();
            let plan = print::pieces::plan(print::Book {
                document: &stored.document,
                resources: &resources,
                metadata: &stored.metadata,
                options: &options,
                style: &style,
            });
            (plan, stored)
        })
        .await?;
        let plan = match planned {
            (Ok(plan), _) => plan,
            (Err(e), stored) => {
                let printed = Printed::refused(&stored.metadata, edition, e.code(), e.to_string());
                return give_up(cx, &self.revision, chapters, edition, &printed).await;
            }
        };
        app.blobs
            .put_if_absent(
                &keys::print_plan(&self.revision, edition),
                serde_json::to_vec(&plan)?,
            )
            .await?;
        tracing::info!(pieces = plan.pieces(), %edition, "print edition planned");
        let pieces = plan.pieces();
        let mut children = measures(&self.revision, edition, pieces, plan.gutter, 1);
        // The stores' covers need no print edition: drawn once, beside the first's measures.
        if first {
            children.push(NewJob::of(&PackageCovers {
                revision: self.revision.clone(),
            }));
        }
        cx.fan_out(
            children,
            NewJob::of(&super::paginate::Paginate {
                revision: self.revision.clone(),
                edition,
                chapters,
                round: 1,
            }),
        );
        Ok(Outcome::done_with(PrintEdition::Planned { pieces }))
    }

    async fn on_dead(self, cx: &Cx, _error: &anyhow::Error) -> anyhow::Result<()> {
        died(
            cx,
            &self.revision,
            self.chapters,
            self.edition.unwrap_or_default(),
        )
        .await
    }
}

/// `edition` made on the interior of `from`, an edition set exactly alike: its cover and
/// check in the print child, its report stored, and on to the next.
async fn reuse(
    cx: &Cx,
    revision: &RevisionId,
    metadata: &BookMetadata,
    chapters: usize,
    edition: Edition,
    from: Edition,
) -> anyhow::Result<Outcome> {
    let app = cx.app();
    if app
        .blobs
        .get_opt(&keys::print_report(revision, edition))
        .await?
        .is_none()
    {
        cx.progress(
            50,
            &format!(
                "the {} edition on the {}'s pages",
                edition.label(),
                from.label()
            ),
        )
        .await?;
        let request = Request::Reuse {
            revision: revision.clone(),
            edition,
            from,
        };
        let printed = match print_book::run(&app.config, &request, whole_book).await? {
            Answer::Assembled(printed) => *printed,
            Answer::Refused { code, message } => {
                Printed::refused(metadata, edition, &code, message)
            }
            other => anyhow::bail!("reusing an edition's pages answered {other:?}"),
        };
        app.blobs
            .put_if_absent(
                &keys::print_report(revision, edition),
                serde_json::to_vec(&printed)?,
            )
            .await?;
        tracing::info!(for_author = true, %edition, %from, pages = printed.report.pages, "print edition made on another's pages");
    }
    cx.then(next(revision, chapters, metadata, edition));
    Ok(Outcome::done_with(PrintEdition::Reused { reused: from }))
}

/// A book an older release began: the whole print edition in one child, as then.
async fn whole(cx: &Cx, revision: &RevisionId) -> anyhow::Result<Outcome> {
    let app = cx.app();
    if !app.config.print_edition {
        return Ok(Outcome::done_with(PrintEdition::Off {
            print_edition: false,
        }));
    }
    cx.progress(10, "typesetting the print edition").await?;
    let request = Request::Whole {
        revision: revision.clone(),
    };
    let printed = match print_book::run(&app.config, &request, whole_book).await? {
        Answer::Assembled(printed) => *printed,
        Answer::Refused { code, message } => {
            let stored = stored::parsed(&app.blobs, revision).await?;
            let reference = stored.metadata.reference_edition();
            Printed::refused(&stored.metadata, reference, &code, message)
        }
        other => anyhow::bail!("the print child answered {other:?} to a whole book"),
    };
    app.blobs
        .put_if_absent(
            &keys::print_report(revision, printed.report.edition),
            serde_json::to_vec(&printed)?,
        )
        .await?;
    match printed.report.failure {
        None => Ok(Outcome::done_with(PrintEdition::Typeset {
            pages: printed.report.pages,
            pdf_bytes: printed.pdf_bytes,
        })),
        Some(failure) => Ok(Outcome::Discard(failure.message)),
    }
}
