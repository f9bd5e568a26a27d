//! The book, Bindery's domain: its names ([`BookId`], [`Tenant`]), its table, where its blobs
//! live, how it looks to the API and the pages, and what can be done to it.
//!
//! The operations ([`submit`], [`delete`], [`retry`], [`publish`], [`fail`], and [`list`],
//! [`ready`] and [`tenants`] for the catalog) are what the HTTP handlers, the pages, the CLI
//! and the pipeline's steps call. Each runs as one transaction, and what must follow it (a
//! book's files removed, its tenant's catalog refreshed, a webhook sent) is enqueued as a job in
//! that same transaction: a process killed just after an operation leaves nothing half done.
//!
//! It sits above the job engine, storage and webhooks, and below the services, the catalog
//! and the pipeline: it never knows how a book is converted or a catalog written. The jobs it
//! enqueues are declared here ([`jobs`]) and run where what they need is reachable.

pub mod changes;
pub mod entry;
mod id;
pub mod jobs;
pub mod keys;
pub mod log;
mod new;
mod revisions;
mod table;
pub mod view;

use std::time::Duration;

use anyhow::Context;

use crate::convert::Options;
use crate::jobs::{JobQueue, JobState, NewJob, WaitTarget};
use crate::storage::Database;
use crate::webhooks::CallbackUrl;

pub use id::{BookId, RevisionId, Tenant};
pub use jobs::{RefreshCatalog, RemoveFiles, refresh_catalog};
pub use new::{Described, Refused, revision_options};
pub use revisions::{RevisionRow, RevisionStatus};
pub use table::{
    BookRow, BookStatus, Published, ReadyBook, StoredOptions, existing, get, list, names, ready,
    stamps, tenants,
};
pub use view::{BookView, RevisionView, StepState};

/// A book whose uploads are already stored under its id ([`keys::upload`],
/// [`keys::cover_upload`]).
#[derive(Debug, Clone)]
pub struct NewBook {
    pub id: BookId,
    pub tenant: Tenant,
    pub file_name: String,
    pub options: Options,
    pub cover_name: Option<String>,
    pub idempotency_key: Option<String>,
    /// Where the book's webhooks go, checked by the caller.
    pub callback_url: Option<CallbackUrl>,
}

/// What [`submit`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Submitted {
    /// The book exists, with its pipeline queued.
    Created(BookId),
    /// The tenant already had a book with the same idempotency key: nothing was created, and
    /// the caller should drop its uploads.
    Existing(BookId),
}

/// Creates the book row and its first job (`first`, the start of its workflow) in one
/// transaction, so a book either exists with its pipeline queued or not at all.
pub async fn submit(
    db: &Database,
    queue: &JobQueue,
    book: &NewBook,
    first: NewJob,
) -> anyhow::Result<Submitted> {
    let mut options = StoredOptions {
        convert: book.options.clone(),
        cover_name: book.cover_name.clone(),
    };
    if options.convert.file_name.is_none() {
        options.convert.file_name = Some(book.file_name.clone());
    }
    if options.convert.modified.is_none() {
        // Fixed at upload, so every re-run of every step makes the same bytes.
        options.convert.modified =
            Some(chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string());
    }
    let mut tx = db
        .begin()
        .await
        .context("starting the upload transaction")?;
    let inserted = table::insert(
        &mut tx,
        &book.id,
        &book.tenant,
        &book.file_name,
        &options,
        book.idempotency_key.as_deref(),
        book.callback_url.as_ref().map(CallbackUrl::as_str),
    )
    .await?;
    if !inserted {
        // Rolled back rather than dropped: a dropped transaction closes its connection.
        tx.rollback().await?;
        let key = book.idempotency_key.as_deref().unwrap_or_default();
        let existing = table::find_by_idempotency_key(db, &book.tenant, key)
            .await?
            .context("an idempotency key conflicted, but its book is gone")?;
        return Ok(Submitted::Existing(existing.id));
    }
    let revision = RevisionId::first(&book.id);
    revisions::insert(
        &mut tx,
        &revision,
        RevisionStatus::Processing,
        &book.file_name,
        &options,
        None,
    )
    .await?;
    queue
        .enqueue_in(
            &mut tx,
            first.tenant(&book.tenant).workflow(revision.workflow()),
        )
        .await?;
    tx.commit().await?;
    tracing::info!(for_author = true, book.id = %book.id, tenant = %book.tenant, file_name = %book.file_name, "book submitted");
    Ok(Submitted::Created(book.id.clone()))
}

/// Revision `id` of a book, `None` when there is none.
pub async fn revision(db: &Database, id: &RevisionId) -> anyhow::Result<Option<RevisionRow>> {
    revisions::get(db, id).await
}

/// Every revision of a book but one still uploading, newest first.
pub async fn revisions(db: &Database, book: &BookId) -> anyhow::Result<Vec<RevisionRow>> {
    revisions::list(db, book).await
}

/// The revision of `book` an upload with this idempotency key made.
pub async fn revision_by_idempotency_key(
    db: &Database,
    book: &BookId,
    key: &str,
) -> anyhow::Result<Option<RevisionRow>> {
    revisions::by_idempotency_key(db, book, key).await
}

/// What [`reserve_revision`] did.
#[derive(Debug)]
pub enum Reserved {
    /// The number is the new revision's, for its upload to be stored under.
    New(RevisionId),
    /// The book already has the revision an upload with this idempotency key made.
    Existing(Box<RevisionRow>),
}

/// Takes the number of `book`'s next revision, before its upload is stored under it: two
/// uploads at once get two numbers, never one prefix. The revision is seen by no one until
/// [`revise`] starts it; [`abandon_revision`] removes it if its upload fails. An upload
/// retried with its `idempotency_key` gets the revision the key started, if one did; the key is
/// not the reservation's until then, so a retry of an upload a crash cut off takes a number of
/// its own and is not answered with one that will never build.
pub async fn reserve_revision(
    db: &Database,
    book: &BookId,
    idempotency_key: Option<&str>,
) -> anyhow::Result<Reserved> {
    // A number taken between the read and the insert is taken again, a few times.
    for _ in 0..5 {
        if let Some(key) = idempotency_key
            && let Some(existing) = revisions::by_idempotency_key(db, book, key).await?
        {
            return Ok(Reserved::Existing(Box::new(existing)));
        }
        let mut tx = db.begin().await.context("reserving a revision")?;
        // A book from before revisions gets its revision 1's row before it gets a second.
        revisions::ensure_first(&mut tx, book).await?;
        let number = revisions::next_number(&mut tx, book).await?;
        let revision = RevisionId::of(book, number);
        let inserted = revisions::insert(
            &mut tx,
            &revision,
            RevisionStatus::Uploading,
            "",
            &StoredOptions::default(),
            None,
        )
        .await?;
        if inserted {
            tx.commit().await.context("reserving a revision")?;
            return Ok(Reserved::New(revision));
        }
        tx.rollback().await?;
    }
    anyhow::bail!("book {book}: no revision number could be taken in five tries")
}

/// Revisions whose upload a crash cut off before `before` (see [`revisions::stale_uploads`]);
/// the sweep removes their files, then [`abandon_revision`]s them.
pub async fn stale_uploads(
    db: &Database,
    before: chrono::DateTime<chrono::Utc>,
    limit: i64,
) -> anyhow::Result<Vec<RevisionId>> {
    revisions::stale_uploads(db, before, limit).await
}

/// Revisions whose files were removed after `since` (see [`revisions::recently_removed`]): a
/// step frozen past its lease may still have written one after the removal.
pub async fn recently_removed(
    db: &Database,
    since: chrono::DateTime<chrono::Utc>,
    limit: i64,
) -> anyhow::Result<Vec<RevisionId>> {
    revisions::recently_removed(db, since, limit).await
}

/// A reserved revision whose upload failed is removed (its files are the caller's to remove).
pub async fn abandon_revision(db: &Database, revision: &RevisionId) -> anyhow::Result<()> {
    revisions::remove_uploading(db, revision).await
}

/// Starts building revision `revision` of `book`, whose upload is stored under it, in one
/// transaction: it takes `file_name` and `options` (its `modified` stamped now, when unset);
/// the book's older revisions still building are cancelled, with their steps stopped and
/// their files removed by a job; a book with no ready revision follows this one (it shows it,
/// processing); and `first`, the start of its workflow, is enqueued. It takes the upload's
/// `idempotency_key`: a concurrent upload with the same key that started first makes this one
/// fail (the unique index), and its retry is answered with that one.
#[allow(clippy::too_many_arguments)]
pub async fn revise(
    db: &Database,
    queue: &JobQueue,
    book: &BookRow,
    revision: &RevisionId,
    file_name: &str,
    mut options: StoredOptions,
    idempotency_key: Option<&str>,
    first: NewJob,
) -> anyhow::Result<()> {
    options.convert.file_name = Some(file_name.to_owned());
    options.convert.revision = (revision.number > 1).then_some(revision.number);
    if options.convert.modified.is_none() {
        options.convert.modified =
            Some(chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string());
    }
    let mut tx = db.begin().await.context("starting the revision")?;
    if !revisions::start(&mut tx, revision, file_name, &options, idempotency_key).await? {
        tx.rollback().await?;
        anyhow::bail!("revision {revision} was not waiting for its upload");
    }
    for older in revisions::cancel_older(&mut tx, revision).await? {
        let older = RevisionId::of(&book.id, older);
        queue
            .enqueue_in(&mut tx, jobs::remove_revision_files(&older, &book.tenant))
            .await?;
    }
    table::follow(&mut tx, revision).await?;
    queue
        .enqueue_in(
            &mut tx,
            first.tenant(&book.tenant).workflow(revision.workflow()),
        )
        .await?;
    tx.commit().await.context("committing the revision")?;
    tracing::info!(for_author = true, book.id = %book.id, revision = revision.number, file_name, "new revision submitted");
    Ok(())
}

/// The tenant's book made by an upload with this idempotency key.
pub async fn by_idempotency_key(
    db: &Database,
    tenant: &Tenant,
    key: &str,
) -> anyhow::Result<Option<BookRow>> {
    table::find_by_idempotency_key(db, tenant, key).await
}

/// The tenant's book `id`; `None` for a book that does not exist or is another tenant's (whose
/// existence is not revealed).
pub async fn of_tenant(
    db: &Database,
    tenant: &Tenant,
    id: &BookId,
) -> anyhow::Result<Option<BookRow>> {
    Ok(get(db, id).await?.filter(|book| book.tenant == *tenant))
}

/// Deletes a book. Its row goes first, so a step still running finds no book and stops; the
/// removal of its files and the refresh of its tenant's catalog commit with it, so that the
/// book leaves the feed and its files go even if this process stops right after. Then it waits
/// up to `wait` for its files to be gone (a worker removes them within moments), so that a
/// caller told "deleted" finds nothing left.
pub async fn delete(
    db: &Database,
    queue: &JobQueue,
    book: &BookRow,
    wait: Duration,
) -> anyhow::Result<()> {
    let mut tx = db.begin().await.context("starting the deletion")?;
    table::delete(&mut tx, &book.id).await?;
    revisions::delete_all(&mut tx, &book.id).await?;
    let removal = queue
        .enqueue_in(&mut tx, jobs::remove_files(&book.id, &book.tenant))
        .await?;
    queue
        .enqueue_in(&mut tx, refresh_catalog(&book.tenant))
        .await?;
    tx.commit().await.context("committing the deletion")?;
    let removed = queue.wait_for(&WaitTarget::Job(removal.id), wait).await?;
    let blobs = match queue.job(removal.id).await? {
        Some(job) if removed && job.state == JobState::Completed => {
            job.result_as::<jobs::Removed>().map(|r| r.blobs)
        }
        _ => None,
    };
    match blobs {
        Some(blobs) => tracing::info!(book.id = %book.id, blobs, "book deleted"),
        None => {
            tracing::info!(book.id = %book.id, removal.job = removal.id, "book deleted; its files are being removed");
        }
    }
    Ok(())
}

/// The error code of a book whose step failed (ran out of attempts, or a fan-out child did):
/// the one failure a retry can mend.
pub const STEP_FAILED: &str = "step_failed";

/// The error code of a book Bindery itself damaged (its checks found the EPUB or the reader
/// broken): a bug, which no upload or retry mends.
pub const DAMAGED: &str = "internal_error";

/// Why a book cannot be retried.
#[derive(Debug, thiserror::Error)]
pub enum RetryError {
    #[error("The manuscript itself was refused; retrying cannot help. Fix it and upload it again.")]
    InputRefused,
    #[error("Bindery damaged this book, and would again; retrying cannot help. Please report it.")]
    Damaged,
    #[error("The book is {0}; only a book whose steps ran out of attempts can be retried.")]
    NothingToRetry(BookStatus),
    #[error("The book's other steps are still stopping; retry once they have (in a few seconds).")]
    StillStopping,
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

impl RetryError {
    /// The API's error code.
    pub fn code(&self) -> &'static str {
        match self {
            RetryError::InputRefused => "input_refused",
            RetryError::Damaged => "book_damaged",
            RetryError::NothingToRetry(_) => "nothing_to_retry",
            RetryError::StillStopping => "still_stopping",
            RetryError::Unexpected(_) => "internal_error",
        }
    }
}

/// Runs again the steps of a failed book that ran out of attempts, or of its newest revision
/// when that failed so while the book kept an earlier one: the revision (and a book that shows
/// it) goes back to processing and each dead step is queued again, in one transaction (a step
/// that a join waited for opens the join again, so it goes on from there).
///
/// Only once the workflow has stopped: a join still deciding would fail the book again after
/// the retry had set it going.
pub async fn retry(db: &Database, queue: &JobQueue, book: &BookRow) -> Result<(), RetryError> {
    let (revision, code) = if book.status == BookStatus::Failed {
        (book.current(), book.error_code.clone())
    } else {
        // A ready book's newest revision, when it failed.
        match revisions::list(db, &book.id).await?.into_iter().next() {
            Some(newest)
                if newest.status == RevisionStatus::Failed && newest.id.number > book.revision =>
            {
                (newest.id, newest.error_code)
            }
            _ => return Err(RetryError::NothingToRetry(book.status)),
        }
    };
    match code.as_deref() {
        Some(STEP_FAILED) => {}
        Some(DAMAGED) => return Err(RetryError::Damaged),
        _ => return Err(RetryError::InputRefused),
    }
    let workflow = queue.workflow(&revision.workflow()).await?;
    if !workflow.finished() {
        return Err(RetryError::StillStopping);
    }
    let dead: Vec<i64> = workflow
        .jobs
        .iter()
        .filter(|j| j.state == JobState::Dead)
        .map(|j| j.id)
        .collect();
    if dead.is_empty() {
        return Err(RetryError::NothingToRetry(book.status));
    }
    let mut tx = db.begin().await.context("starting the retry")?;
    if book.revision == revision.number {
        table::mark_processing(&mut tx, &book.id).await?;
    }
    revisions::ensure_first(&mut tx, &book.id).await?;
    revisions::mark_processing(&mut tx, &revision).await?;
    for job in dead {
        queue.retry_in(&mut tx, job).await?;
    }
    tx.commit().await.context("committing the retry")?;
    Ok(())
}

/// Revision `revision` is built: it says so, and when it is newer than the one the book
/// shows, the book switches to it (its row, and so every file it serves) with its `book.ready`
/// webhook, a refresh of its tenant's catalog, and the removal of the files of its revisions
/// older than the newest `kept` (`REVISIONS_KEPT`), all in one transaction. Idempotent: a
/// revision already published stays as it was first published, and one a newer revision
/// cancelled meanwhile changes nothing.
pub async fn publish(
    db: &Database,
    queue: &JobQueue,
    public_url: Option<&url::Url>,
    revision: &RevisionId,
    published: &Published<'_>,
    kept: usize,
) -> anyhow::Result<()> {
    let mut tx = db.begin().await.context("starting the publication")?;
    revisions::ensure_first(&mut tx, &revision.book).await?;
    if !revisions::mark_ready(&mut tx, revision, published).await? {
        tx.rollback().await?;
        return Ok(());
    }
    if let Some((from, changes)) = published.changes {
        revisions::store_changes(&mut tx, revision, from, changes).await?;
    }
    if let Some(tenant) = table::mark_ready(&mut tx, queue, public_url, revision, published).await?
    {
        // A published book always gets into its tenant's catalog.
        queue.enqueue_in(&mut tx, refresh_catalog(&tenant)).await?;
        for old in revisions::prune(&mut tx, revision, kept).await? {
            let old = RevisionId::of(&revision.book, old);
            queue
                .enqueue_in(&mut tx, jobs::remove_revision_files(&old, &tenant))
                .await?;
        }
    }
    tx.commit().await.context("committing the publication")?;
    Ok(())
}

/// Revision `revision` failed, with a message for its author, in one transaction: it says so,
/// and the book fails with it when it is the revision the book shows (a book with no ready
/// revision; `book.failed`). A book that has one keeps it, and only the revision fails
/// (`book.revision_failed`). Only a revision still building changes, so a late failure never
/// overwrites a published one.
pub async fn fail(
    db: &Database,
    queue: &JobQueue,
    public_url: Option<&url::Url>,
    revision: &RevisionId,
    code: &str,
    message: &str,
) -> anyhow::Result<()> {
    let mut tx = db.begin().await.context("starting to fail the book")?;
    revisions::ensure_first(&mut tx, &revision.book).await?;
    if revisions::mark_failed(&mut tx, revision, code, message).await?
        && !table::mark_failed(&mut tx, queue, public_url, revision, code, message).await?
    {
        table::revision_failed(&mut tx, queue, public_url, revision, code, message).await?;
    }
    tx.commit().await.context("committing the book's failure")?;
    Ok(())
}

/// The style revision `revision` was made in, as its report says (the default style for a
/// revision made before styles, or one that keeps no files).
pub async fn style_of(
    blobs: &crate::storage::BlobStore,
    revision: &RevisionId,
) -> anyhow::Result<String> {
    let report = blobs.get_opt(&keys::parse_report(revision)).await?;
    Ok(report
        .and_then(|bytes| serde_json::from_slice::<crate::report::Report>(&bytes).ok())
        .and_then(|report| report.metadata.into_iter().find(|m| m.field == "style"))
        .map_or_else(|| crate::style::DEFAULT.to_owned(), |m| m.value))
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    use super::table::tests::exec;
    use super::*;
    use crate::jobs::{Job, JobContext, JobFilter, JobRecord, Outcome};
    use crate::test_support::databases;

    /// A first step that no worker runs here.
    #[derive(Serialize, Deserialize)]
    struct First {}

    impl Job for First {
        const NAME: &'static str = "test.first";
        type Context = ();

        async fn run(self, _: &JobContext<()>) -> anyhow::Result<Outcome> {
            Ok(Outcome::done())
        }
    }

    async fn submitted(db: &Database, queue: &JobQueue) -> BookRow {
        let book = NewBook {
            id: BookId::new(),
            tenant: Tenant::parse("alice").expect("a tenant"),
            file_name: "a.md".into(),
            options: Options::default(),
            cover_name: None,
            idempotency_key: None,
            callback_url: None,
        };
        let first = NewJob::of(&First {}).max_attempts(1);
        let submitted = submit(db, queue, &book, first).await.expect("submit");
        assert_eq!(submitted, Submitted::Created(book.id.clone()));
        get(db, &book.id).await.expect("read").expect("the book")
    }

    async fn jobs(queue: &JobQueue, kind: &str) -> Vec<JobRecord> {
        let filter = JobFilter {
            kind: Some(kind.into()),
            ..JobFilter::default()
        };
        queue.list(&filter).await.expect("list jobs")
    }

    #[tokio::test]
    async fn a_deleted_books_files_and_catalog_are_left_to_jobs_that_commit_with_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        for (db, _) in databases(i64::MAX, dir.path()).await {
            let queue = JobQueue::new(db.clone());
            let book = submitted(&db, &queue).await;
            // No worker runs here: what must follow the deletion is queued, not done.
            delete(&db, &queue, &book, Duration::ZERO)
                .await
                .expect("delete");
            let backend = db.backend();
            assert!(
                get(&db, &book.id).await.expect("read").is_none(),
                "{backend}"
            );
            let removal = jobs(&queue, "books.remove_files").await;
            assert_eq!(removal.len(), 1, "{backend}: {removal:?}");
            assert_eq!(removal[0].state, JobState::Available, "{backend}");
            let payload: RemoveFiles = serde_json::from_str(&removal[0].payload).expect("payload");
            assert_eq!(payload.book, book.id, "{backend}");
            let refresh = jobs(&queue, "catalog.refresh").await;
            assert_eq!(refresh.len(), 1, "{backend}: {refresh:?}");
            assert_eq!(refresh[0].tenant, "alice", "{backend}");
        }
    }

    #[tokio::test]
    async fn a_retry_puts_the_book_and_its_dead_steps_back_together() {
        let dir = tempfile::tempdir().expect("tempdir");
        for (db, _) in databases(i64::MAX, dir.path()).await {
            let queue = JobQueue::new(db.clone());
            let backend = db.backend();
            let book = submitted(&db, &queue).await;
            let refused = retry(&db, &queue, &book).await.expect_err("nothing died");
            assert_eq!(refused.code(), "nothing_to_retry", "{backend}");
            assert_eq!(
                refused.to_string(),
                "The book is processing; only a book whose steps ran out of attempts can be \
                 retried.",
                "{backend}"
            );

            let failed = async |code: &str| {
                fail(&db, &queue, None, &book.current(), code, "It stopped.")
                    .await
                    .expect("fail");
                get(&db, &book.id).await.expect("read").expect("the book")
            };
            // A step still running: the retry waits for the workflow to stop.
            let book = failed(STEP_FAILED).await;
            let refused = retry(&db, &queue, &book).await.expect_err("running");
            assert_eq!(refused.code(), "still_stopping", "{backend}");

            exec(&db, "UPDATE jobs SET state = 'dead', attempt = 1").await;
            retry(&db, &queue, &book).await.expect("retry");
            let again = get(&db, &book.id).await.expect("read").expect("the book");
            assert_eq!(again.status, BookStatus::Processing, "{backend}");
            assert_eq!(again.error, None, "{backend}");
            let first = jobs(&queue, First::NAME).await;
            assert_eq!(first[0].state, JobState::Available, "{backend}");
            assert_eq!(first[0].attempt, 0, "{backend}");
            let refused = retry(&db, &queue, &again).await.expect_err("processing");
            assert_eq!(refused.code(), "nothing_to_retry", "{backend}");

            // A refused manuscript fails the same way again, whatever its jobs say.
            exec(&db, "UPDATE jobs SET state = 'dead'").await;
            let book = failed("manuscript_empty").await;
            let refused = retry(&db, &queue, &book).await.expect_err("refused input");
            assert_eq!(refused.code(), "input_refused", "{backend}");

            // Nor does a book Bindery damaged, and the answer does not blame the manuscript.
            exec(&db, "UPDATE books SET status = 'processing'").await;
            exec(&db, "UPDATE book_revisions SET status = 'processing'").await;
            let book = failed(DAMAGED).await;
            let refused = retry(&db, &queue, &book).await.expect_err("damaged");
            assert_eq!(refused.code(), "book_damaged", "{backend}");
        }
    }

    #[tokio::test]
    async fn a_later_revision_that_ran_out_of_attempts_is_retried_while_the_book_stays_ready() {
        let dir = tempfile::tempdir().expect("tempdir");
        for (db, _) in databases(i64::MAX, dir.path()).await {
            let queue = JobQueue::new(db.clone());
            let backend = db.backend();
            let book = submitted(&db, &queue).await;
            let published = Published {
                title: "T",
                authors: &[],
                format: "markdown",
                report: "{}",
                epub_bytes: 1,
                pdf_bytes: None,
                changes: None,
            };
            publish(&db, &queue, None, &book.current(), &published, 10)
                .await
                .expect("publish");
            let book = get(&db, &book.id).await.expect("read").expect("the book");
            let refused = retry(&db, &queue, &book).await.expect_err("nothing failed");
            assert_eq!(refused.code(), "nothing_to_retry", "{backend}");

            let Reserved::New(second) = reserve_revision(&db, &book.id, None)
                .await
                .expect("reserve")
            else {
                panic!("{backend}: no new revision")
            };
            let first = NewJob::of(&First {}).max_attempts(1);
            revise(
                &db,
                &queue,
                &book,
                &second,
                "b.md",
                StoredOptions::default(),
                None,
                first,
            )
            .await
            .expect("revise");
            fail(&db, &queue, None, &second, STEP_FAILED, "It stopped.")
                .await
                .expect("fail");
            exec(&db, "UPDATE jobs SET state = 'dead', attempt = 1").await;
            let book = get(&db, &book.id).await.expect("read").expect("the book");
            assert_eq!(book.status, BookStatus::Ready, "{backend}");
            retry(&db, &queue, &book).await.expect("retry");
            let again = revision(&db, &second)
                .await
                .expect("read")
                .expect("revision 2");
            assert_eq!(again.status, RevisionStatus::Processing, "{backend}");
            let book = get(&db, &book.id).await.expect("read").expect("the book");
            assert_eq!(
                (book.status, book.revision),
                (BookStatus::Ready, 1),
                "{backend}: the book keeps what it shows"
            );
        }
    }

    #[tokio::test]
    async fn a_retried_upload_whose_first_was_cut_off_takes_a_revision_of_its_own() {
        let dir = tempfile::tempdir().expect("tempdir");
        for (db, _) in databases(i64::MAX, dir.path()).await {
            let queue = JobQueue::new(db.clone());
            let backend = db.backend();
            let book = submitted(&db, &queue).await;
            let reserve = || async {
                reserve_revision(&db, &book.id, Some("key-1"))
                    .await
                    .expect("reserve")
            };
            // The first attempt reserved a number, then its process died mid-upload.
            let Reserved::New(cut_off) = reserve().await else {
                panic!("{backend}: no new revision")
            };
            // Its retry is not answered with a revision that will never build.
            let Reserved::New(retried) = reserve().await else {
                panic!("{backend}: the retry was answered with the cut-off upload")
            };
            assert_ne!(retried, cut_off, "{backend}");
            let first = NewJob::of(&First {}).max_attempts(1);
            revise(
                &db,
                &queue,
                &book,
                &retried,
                "b.md",
                StoredOptions::default(),
                Some("key-1"),
                first.clone(),
            )
            .await
            .expect("revise");
            // Once started, the key answers with it.
            match reserve().await {
                Reserved::Existing(existing) => assert_eq!(existing.id, retried, "{backend}"),
                Reserved::New(other) => panic!("{backend}: a third revision {other}"),
            }
            // A concurrent upload with the same key that started second is refused.
            let Reserved::New(late) = reserve_revision(&db, &book.id, None)
                .await
                .expect("reserve")
            else {
                panic!("{backend}: no new revision")
            };
            revise(
                &db,
                &queue,
                &book,
                &late,
                "b.md",
                StoredOptions::default(),
                Some("key-1"),
                first,
            )
            .await
            .expect_err("a second revision started with one key");
        }
    }

    #[tokio::test]
    async fn publishing_commits_the_catalogs_refresh_with_the_book_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        for (db, _) in databases(i64::MAX, dir.path()).await {
            let queue = JobQueue::new(db.clone());
            let backend = db.backend();
            let book = submitted(&db, &queue).await;
            let published = Published {
                title: "T",
                authors: &[],
                format: "markdown",
                report: "{}",
                epub_bytes: 1,
                pdf_bytes: None,
                changes: None,
            };
            publish(&db, &queue, None, &book.current(), &published, 10)
                .await
                .expect("publish");
            let ready = get(&db, &book.id).await.expect("read").expect("the book");
            assert_eq!(ready.status, BookStatus::Ready, "{backend}");
            let refresh = jobs(&queue, "catalog.refresh").await;
            assert_eq!(refresh.len(), 1, "{backend}: {refresh:?}");
            assert_eq!(refresh[0].tenant, "alice", "{backend}");
            // Publishing again changes nothing, and enqueues nothing either.
            exec(
                &db,
                "UPDATE jobs SET state = 'completed' WHERE kind = 'catalog.refresh'",
            )
            .await;
            publish(&db, &queue, None, &book.current(), &published, 10)
                .await
                .expect("publish again");
            assert_eq!(jobs(&queue, "catalog.refresh").await.len(), 1, "{backend}");
        }
    }
}
