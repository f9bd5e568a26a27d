//! Where a book is: its status, why it failed, and how far each step of its pipeline is, from
//! its row and its workflow's jobs, in the book's view's types (`books::view::Now`). The API
//! and the pages show this; they do not work it out.

use super::steps::{STEPS, Step, entry, fails_the_book, publishes_the_book, stopped_at};
use crate::books::{BookRow, BookStatus, RevisionId, RevisionRow, RevisionStatus, STEP_FAILED};
use crate::jobs::{JobQueue, JobState, StepCount};

// What this works out is the book's view's own types: the API and the pages show them as
// they are.
pub use crate::books::StepState;
use crate::books::view::{ErrorView, Now, Progress, StepView};

/// Where `book` is; with `detailed`, the progress of its steps too.
pub async fn of(queue: &JobQueue, book: &BookRow, detailed: bool) -> anyhow::Result<Now> {
    let failure = book.error.as_ref().map(|message| ErrorView {
        code: book.error_code.clone().unwrap_or_else(|| "failed".into()),
        message: message.clone(),
    });
    of_workflow(queue, &book.current(), book.status, failure, detailed).await
}

/// Where revision `revision` is: [`of`] for one revision of a book, the book's own status and
/// failure being the revision's (a cancelled revision's steps will not run, as a failed one's).
pub async fn of_revision(
    queue: &JobQueue,
    revision: &RevisionRow,
    detailed: bool,
) -> anyhow::Result<Now> {
    let status = match revision.status {
        RevisionStatus::Uploading | RevisionStatus::Processing => BookStatus::Processing,
        RevisionStatus::Ready => BookStatus::Ready,
        RevisionStatus::Failed | RevisionStatus::Cancelled => BookStatus::Failed,
    };
    let failure = revision.error.as_ref().map(|message| ErrorView {
        code: revision
            .error_code
            .clone()
            .unwrap_or_else(|| "failed".into()),
        message: message.clone(),
    });
    of_workflow(queue, &revision.id, status, failure, detailed).await
}

async fn of_workflow(
    queue: &JobQueue,
    revision: &RevisionId,
    mut status: BookStatus,
    mut failure: Option<ErrorView>,
    detailed: bool,
) -> anyhow::Result<Now> {
    if !detailed {
        return Ok(Now {
            status,
            failure,
            progress: None,
        });
    }
    let workflow = revision.workflow();
    let counts = queue.workflow_counts(&workflow).await?;
    // A step that ran out of attempts has no job left to mark the book; say so here.
    if status == BookStatus::Processing && counts.iter().any(|c| c.state == JobState::Dead) {
        let jobs = queue.workflow(&workflow).await?.jobs;
        if let Some(dead) = jobs
            .iter()
            .find(|j| j.state == JobState::Dead && fails_the_book(&j.kind))
        {
            status = BookStatus::Failed;
            failure = Some(ErrorView {
                code: STEP_FAILED.into(),
                message: stopped_at(&dead.kind),
            });
        }
    }
    Ok(Now {
        progress: Some(progress(&counts, status)),
        status,
        failure,
    })
}

/// The progress of every step, from the counts of the workflow's jobs by type and state, for a
/// book of `status`. Once the book has failed, a step never enqueued will not run: it is
/// skipped, not waiting.
fn progress(counts: &[StepCount], status: BookStatus) -> Progress {
    let failed_book = status == BookStatus::Failed;
    // A workflow comes in by one way: the other way's steps are none of its own.
    let taken = counts.iter().find_map(|c| entry(&c.kind));
    let ours = |step: &&Step| taken.is_none_or(|way| entry(step.job).is_none_or(|e| e == way));
    let mut steps: Vec<StepView> = STEPS
        .iter()
        .filter(ours)
        .map(|step| {
            let mine: Vec<&StepCount> = counts.iter().filter(|c| c.kind == step.job).collect();
            let count = |states: &[JobState]| -> i64 {
                mine.iter()
                    .filter(|c| states.contains(&c.state))
                    .map(|c| c.jobs)
                    .sum()
            };
            let total = mine.iter().map(|c| c.jobs).sum::<i64>();
            let done = count(&[JobState::Completed]);
            let failed = count(&[JobState::Dead, JobState::Discarded]) > 0;
            // A join cancels itself when a job it waited for failed: it did not fail, it will
            // not run.
            let cancelled = count(&[JobState::Cancelled]) > 0;
            let running: Vec<&&StepCount> = mine
                .iter()
                .filter(|c| c.state == JobState::Running)
                .collect();
            let partial: i64 = running
                .iter()
                .map(|c| c.progress.clamp(0, 99 * c.jobs))
                .sum();
            let percent = if total == 0 {
                0
            } else {
                u32::try_from((done * 100 + partial) / total).unwrap_or(0)
            };
            let state = if failed {
                StepState::Failed
            } else if cancelled || (failed_book && total == 0) {
                StepState::Skipped
            } else if total > 0 && done == total {
                StepState::Completed
            } else if !running.is_empty() {
                StepState::Running
            } else if total > 0 {
                StepState::Queued
            } else {
                StepState::Pending
            };
            StepView {
                step: step.name,
                label: step.label,
                state,
                percent,
                done: usize::try_from(done).unwrap_or(0),
                total: usize::try_from(total).unwrap_or(0),
                message: running.iter().find_map(|c| c.message.clone()),
            }
        })
        .collect();
    // A step that ends its book writes the book's failure, or that it is ready, while it runs,
    // and its job's end is committed after, by its worker's next statement. In between, the
    // book has ended and the step still runs; the book's page, which stops following the book
    // once it has ended, showed it running for good. With no step failed yet, the running step
    // that can fail the book is the one that did; the one that publishes it has done so.
    let listed: Vec<&Step> = STEPS.iter().filter(ours).collect();
    if failed_book && !steps.iter().any(|s| s.state == StepState::Failed) {
        for (step, of) in steps.iter_mut().zip(&listed) {
            if step.state == StepState::Running && fails_the_book(of.job) {
                step.state = StepState::Failed;
            }
        }
    }
    if status == BookStatus::Ready {
        for (step, of) in steps.iter_mut().zip(&listed) {
            if step.state == StepState::Running && publishes_the_book(of.job) {
                step.state = StepState::Completed;
                step.percent = 100;
                step.done = step.total;
                step.message = None;
            }
        }
    }
    let percent = steps.iter().map(|s| s.percent).sum::<u32>() / listed.len().max(1) as u32;
    Progress { percent, steps }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each step's name and state, in order.
    fn named_states(progress: &Progress) -> Vec<(&'static str, StepState)> {
        progress.steps.iter().map(|s| (s.step, s.state)).collect()
    }

    fn count(kind: &str, state: JobState, jobs: i64, progress: i64) -> StepCount {
        StepCount {
            kind: kind.into(),
            state,
            jobs,
            progress,
            message: None,
        }
    }

    #[test]
    fn steps_are_reported_in_the_tables_order_with_their_states() {
        let progress = progress(
            &[
                count("book.ingest", JobState::Completed, 1, 100),
                count("book.parse", JobState::Completed, 1, 100),
                count("book.render_chapter", JobState::Completed, 1, 0),
                count("book.render_chapter", JobState::Running, 1, 50),
                count("book.render_chapter", JobState::Available, 2, 0),
                count("bindery.noop", JobState::Running, 1, 0),
            ],
            BookStatus::Processing,
        );
        let seen: Vec<(&str, StepState, u32)> = progress
            .steps
            .iter()
            .map(|s| (s.step, s.state, s.percent))
            .collect();
        // A manuscript's workflow never restyles: that step is not its own.
        assert_eq!(seen.len(), STEPS.len() - 1);
        assert_eq!(
            seen[..10],
            [
                ("ingest", StepState::Completed, 100),
                ("parse", StepState::Completed, 100),
                ("package_pdf", StepState::Pending, 0),
                ("measure_piece", StepState::Pending, 0),
                ("paginate", StepState::Pending, 0),
                ("set_piece", StepState::Pending, 0),
                ("assemble", StepState::Pending, 0),
                ("chapters", StepState::Pending, 0),
                ("render_chapter", StepState::Running, 37),
                ("package", StepState::Pending, 0),
            ]
        );
        assert!(
            seen[10..].iter().all(|s| s.1 == StepState::Pending),
            "{seen:?}"
        );
        assert_eq!(progress.percent, 237 / (STEPS.len() as u32 - 1));
    }

    #[test]
    fn a_dead_print_edition_fails_only_its_step() {
        for step in [
            "book.package_pdf",
            "book.measure_piece",
            "book.paginate",
            "book.set_piece",
            "book.assemble",
        ] {
            assert!(!fails_the_book(step), "{step}");
        }
        assert!(fails_the_book("book.render_chapter"));
        assert!(fails_the_book("book.parse"));
        // A job of no step (an old release's) fails its book as before.
        assert!(fails_the_book("book.gone"));
        // The step itself still shows what became of it.
        let printed = progress(
            &[
                count("book.ingest", JobState::Completed, 1, 100),
                count("book.parse", JobState::Completed, 1, 100),
                count("book.package_pdf", JobState::Completed, 1, 100),
                count("book.measure_piece", JobState::Completed, 3, 100),
                count("book.paginate", JobState::Dead, 1, 10),
                count("book.chapters", JobState::Completed, 1, 100),
            ],
            BookStatus::Processing,
        );
        let states = named_states(&printed);
        assert_eq!(
            [states[4], states[7]],
            [
                ("paginate", StepState::Failed),
                ("chapters", StepState::Completed)
            ]
        );
    }

    #[test]
    fn the_steps_of_a_failed_book_that_will_not_run_are_skipped() {
        // Refused at parse: nothing after it was ever enqueued.
        let refused = progress(
            &[
                count("book.ingest", JobState::Completed, 1, 100),
                count("book.parse", JobState::Discarded, 1, 10),
            ],
            BookStatus::Failed,
        );
        let states: Vec<StepState> = refused.steps.iter().map(|s| s.state).collect();
        assert_eq!(states[..2], [StepState::Completed, StepState::Failed]);
        assert!(
            states[2..].iter().all(|s| *s == StepState::Skipped),
            "{states:?}"
        );
        // A chapter died: its join cancelled itself, and the rest never came.
        let died = progress(
            &[
                count("book.ingest", JobState::Completed, 1, 100),
                count("book.parse", JobState::Completed, 1, 100),
                count("book.package_pdf", JobState::Completed, 1, 100),
                count("book.chapters", JobState::Completed, 1, 100),
                count("book.render_chapter", JobState::Completed, 3, 0),
                count("book.render_chapter", JobState::Dead, 1, 0),
                count("book.package", JobState::Cancelled, 1, 0),
            ],
            BookStatus::Failed,
        );
        let states = named_states(&died);
        assert_eq!(
            states[8..10],
            [
                ("render_chapter", StepState::Failed),
                ("package", StepState::Skipped)
            ]
        );
        assert!(states[10..].iter().all(|s| s.1 == StepState::Skipped));
        // Refused at ingest, before the ingest job's end was committed: the step that failed
        // the book is the one still running, not an extra running beside it.
        let refusing = progress(
            &[
                count("book.ingest", JobState::Running, 1, 10),
                count("book.package_pdf", JobState::Running, 1, 10),
            ],
            BookStatus::Failed,
        );
        assert_eq!(
            named_states(&refusing)[..3],
            [
                ("ingest", StepState::Failed),
                ("parse", StepState::Skipped),
                ("package_pdf", StepState::Running)
            ]
        );
        // Once a step has failed, another still running is not taken for it.
        let beside = progress(
            &[
                count("book.package_epub", JobState::Discarded, 1, 0),
                count("book.package_reader", JobState::Running, 1, 50),
            ],
            BookStatus::Failed,
        );
        let reader = beside
            .steps
            .iter()
            .find(|s| s.step == "package_reader")
            .map(|s| s.state);
        assert_eq!(reader, Some(StepState::Running));
        // While the book is still converting, steps not yet enqueued are only waiting.
        let running = progress(
            &[count("book.ingest", JobState::Running, 1, 50)],
            BookStatus::Processing,
        );
        assert!(
            running.steps[1..]
                .iter()
                .all(|s| s.state == StepState::Pending)
        );
        // The other way into a workflow is not its own: not listed at all.
        assert!(running.steps.iter().all(|s| s.step != "restyle"));
        // A restyled book's lists no reading of a manuscript.
        let restyled = progress(
            &[count("book.restyle", JobState::Completed, 1, 100)],
            BookStatus::Processing,
        );
        assert!(
            restyled
                .steps
                .iter()
                .all(|s| s.step != "ingest" && s.step != "parse")
        );
    }

    /// The book is ready before its publish job's end is committed: that step is shown
    /// completed, as the book's page last sees it, while an extra still running stays so.
    #[test]
    fn a_ready_book_shows_the_step_that_published_it_completed() {
        let finished: Vec<StepCount> = STEPS
            .iter()
            .filter(|s| s.job != "book.publish" && s.job != "book.package_covers")
            .map(|s| count(s.job, JobState::Completed, 1, 100))
            .chain([
                count("book.package_covers", JobState::Running, 1, 40),
                count("book.publish", JobState::Running, 1, 0),
            ])
            .collect();
        let ready = progress(&finished, BookStatus::Ready);
        let states = named_states(&ready);
        assert_eq!(
            states.iter().find(|(name, _)| *name == "publish"),
            Some(&("publish", StepState::Completed)),
            "{states:?}"
        );
        assert_eq!(
            states.iter().find(|(name, _)| *name == "package_covers"),
            Some(&("package_covers", StepState::Running)),
            "{states:?}"
        );
        let publish = ready.steps.iter().find(|s| s.step == "publish");
        assert_eq!(
            publish.map(|s| (s.percent, s.done, s.total)),
            Some((100, 1, 1))
        );
        // While the book still converts, a running publish step is running.
        let converting = progress(&finished, BookStatus::Processing);
        assert!(
            named_states(&converting).contains(&("publish", StepState::Running)),
            "{:?}",
            named_states(&converting)
        );
    }

    #[test]
    fn a_step_that_kept_failing_is_named_by_its_label_without_the_error() {
        let said = stopped_at("book.package_epub");
        let label = crate::pipeline::steps::by_job("book.package_epub")
            .map(|s| s.label)
            .expect("a step");
        assert!(said.contains(label), "{said}");
        assert!(said.contains("Retry"), "{said}");
    }
}
