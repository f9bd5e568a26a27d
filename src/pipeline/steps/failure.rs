//! How a step ends a book that cannot go on: deleted while it ran, refused for its input, or
//! stopped by a step that kept failing. The book, its page and its `book.failed` event say why
//! in words for its author; the operator's log keeps the errors, which can name the server's
//! paths, storage and hosts.

use super::stored::revision_row;
use super::{Cx, by_job, fails_the_book};
use crate::books::{self, RevisionId, RevisionStatus, STEP_FAILED};
use crate::jobs::Outcome;
use crate::logbook;
use crate::services::Services;

/// How long a failing book waits for its log to be stored (`mark_failed`): the writer stores
/// within a twentieth of a second when the database is well, and a database that is not must
/// not hold the failure back for long.
const LOG_FLUSH_WITHIN: std::time::Duration = std::time::Duration::from_secs(2);

/// The book was deleted while its pipeline ran, or a newer revision superseded this one: stop
/// quietly.
pub(super) fn gone(revision: &RevisionId) -> Outcome {
    Outcome::Cancel(format!(
        "book {} no longer exists, or its revision {} was superseded",
        revision.book, revision.number
    ))
}

/// Bad input: the book fails with the reason, and the job is discarded (a retry cannot help).
pub(super) async fn refuse(
    cx: &Cx,
    revision: &RevisionId,
    code: &str,
    message: String,
) -> anyhow::Result<Outcome> {
    // The reason is the one the book shows its author (`error.message`).
    tracing::warn!(for_author = true, book.id = %revision.book, revision = revision.number, code, reason = %message, "manuscript refused");
    mark_failed(cx.app(), revision, code, &message, None).await?;
    Ok(Outcome::Discard(message))
}

/// Marks the book failed (its `book.failed` event links under this service's public URL).
/// With a `reason`, it first ends the book's log with why, in words written for its author
/// (what to do about a step that failed, never a server's error text); a refusal has said
/// why already (`refuse`).
///
/// The book's page reloads the moment the book has failed, and shows its log: so the line
/// that says why is in the database before the failure is committed (`logbook::flush`).
pub(super) async fn mark_failed(
    app: &Services,
    revision: &RevisionId,
    code: &str,
    message: &str,
    reason: Option<&str>,
) -> anyhow::Result<()> {
    if let Some(reason) = reason {
        tracing::warn!(for_author = true, book.id = %revision.book, revision = revision.number, code, reason, "book failed");
    }
    if !logbook::flush(LOG_FLUSH_WITHIN).await {
        tracing::debug!(book.id = %revision.book, revision = revision.number, "the log lines before the book's failure were not stored in time; failing it anyway");
    }
    let public_url = app.config.public_url.as_ref();
    books::fail(&app.db, &app.queue, public_url, revision, code, message).await?;
    Ok(())
}

/// A step that is not a fan-out child ran out of attempts: nothing after it will run, so it
/// fails the book itself, in the words the API uses for a dead step.
pub(super) async fn fail_for_good(
    cx: &Cx,
    revision: &RevisionId,
    job: &str,
    error: &anyhow::Error,
) -> anyhow::Result<()> {
    step_failed(cx, revision, job, &error.to_string()).await
}

/// Fails the book because step `job` kept failing with `error`. The book (its API, its page,
/// its `book.failed` event) and its author's log say which step and what to do; the error
/// itself, which can name the server's paths, storage and hosts, only the operator's log.
async fn step_failed(cx: &Cx, revision: &RevisionId, job: &str, error: &str) -> anyhow::Result<()> {
    tracing::warn!(book.id = %revision.book, revision = revision.number, step = job, error, "a step kept failing; the book fails");
    let message = stopped_at(job);
    mark_failed(cx.app(), revision, STEP_FAILED, &message, Some(&message)).await
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
pub(super) async fn fail_if_a_child_failed(
    cx: &Cx,
    revision: &RevisionId,
) -> anyhow::Result<Option<Outcome>> {
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
    let already = revision_row(cx, revision)
        .await?
        .is_none_or(|row| row.status == RevisionStatus::Failed);
    if !already {
        step_failed(cx, revision, &failed.kind, &error).await?;
    }
    Ok(Some(Outcome::Cancel(format!(
        "{} ended {}: {error}",
        failed.kind, failed.state
    ))))
}
