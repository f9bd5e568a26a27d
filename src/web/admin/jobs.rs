//! Jobs as an operator reads them, a filtered page at a time or one with its whole history:
//! what `/api/v1/admin/jobs` answers and the admin pages show.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use crate::jobs::{JobFilter, JobRecord, JobState};
use crate::storage::rfc3339;
use crate::web::AppState;
use crate::web::error::ApiError;
use crate::web::query::{given, integer};

const PAGE_DEFAULT: i64 = 50;
const PAGE_MAX: i64 = 200;

// Read as strings and parsed in the handler (see `web::api::admin`); the document
// gives their real types.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Only jobs in this state (`dead` for the jobs that ran out of attempts).
    #[param(
        pattern = "^(available|scheduled|waiting|running|completed|discarded|dead|cancelled)$",
        example = "completed"
    )]
    pub(crate) state: Option<String>,
    /// Only jobs of this queue (`books`, `catalog`, `webhooks`, `maintenance`, …).
    #[param(example = "books")]
    pub(crate) queue: Option<String>,
    /// Only this tenant's jobs.
    pub(crate) tenant: Option<String>,
    /// Only jobs of this type (`book.parse`, `catalog.refresh`, …).
    pub(crate) kind: Option<String>,
    /// Only the jobs of this workflow: a book's steps, by the book's id.
    pub(crate) workflow: Option<String>,
    /// The `next` of the previous page: jobs older than that one.
    #[param(value_type = Option<i64>, minimum = 1)]
    pub(crate) before: Option<String>,
    /// Jobs per page.
    #[param(value_type = Option<i64>, minimum = 1, maximum = 200, default = 50, example = 20)]
    pub(crate) limit: Option<String>,
}

/// One page of jobs, newest first.
#[derive(Serialize, ToSchema)]
#[schema(as = JobPage)]
pub(crate) struct Page {
    pub(crate) jobs: Vec<JobSummary>,
    /// Pass as `before` for the next (older) page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) next: Option<String>,
}

/// A job as listed: what it is, where it stands, and its latest error.
#[derive(Serialize, ToSchema)]
#[schema(as = JobSummary)]
pub(crate) struct JobSummary {
    pub(crate) id: i64,
    /// Its type (`book.parse`, `catalog.refresh`, …).
    pub(crate) kind: String,
    pub(crate) queue: String,
    /// The tenant it works for.
    pub(crate) tenant: String,
    #[schema(
        value_type = String,
        pattern = "^(available|scheduled|waiting|running|completed|discarded|dead|cancelled)$"
    )]
    pub(crate) state: JobState,
    pub(crate) priority: i16,
    /// Attempts made so far, of `max_attempts`.
    pub(crate) attempt: i32,
    pub(crate) max_attempts: i32,
    /// When it is (or was) due.
    #[schema(format = DateTime)]
    pub(crate) run_at: String,
    #[schema(format = DateTime)]
    pub(crate) created_at: String,
    #[schema(format = DateTime)]
    pub(crate) started_at: Option<String>,
    #[schema(format = DateTime)]
    pub(crate) finished_at: Option<String>,
    /// 0 to 100, as the job last reported it.
    pub(crate) progress: Option<i32>,
    pub(crate) progress_message: Option<String>,
    /// While it is unfinished, no other job with this key can be enqueued.
    pub(crate) unique_key: Option<String>,
    /// The workflow it belongs to: for a book's steps, the book's id.
    pub(crate) workflow: Option<String>,
    /// The book it works on (a book's steps, its webhook deliveries), by id.
    pub(crate) book: Option<String>,
    /// That book's title, or its file name while it has none; absent once the book is deleted.
    pub(crate) book_title: Option<String>,
    /// The newest entry of its error history, unless it completed.
    pub(crate) last_error: Option<String>,
    /// This job in full.
    pub(crate) url: String,
}

impl From<&JobRecord> for JobSummary {
    fn from(job: &JobRecord) -> Self {
        JobSummary {
            id: job.id,
            kind: job.kind.clone(),
            queue: job.queue.clone(),
            tenant: job.tenant.clone(),
            state: job.state,
            priority: job.priority,
            attempt: job.attempt,
            max_attempts: job.max_attempts,
            run_at: rfc3339(job.run_at),
            created_at: rfc3339(job.created_at),
            started_at: job.started_at.map(rfc3339),
            finished_at: job.finished_at.map(rfc3339),
            progress: job.progress,
            progress_message: job.progress_message.clone(),
            unique_key: job.unique_key.clone(),
            workflow: job.workflow.clone(),
            book: serde_json::from_str::<Value>(&job.payload)
                .ok()
                .and_then(|p| p.get("book").and_then(Value::as_str).map(str::to_owned)),
            book_title: None,
            last_error: (job.state != JobState::Completed)
                .then(|| job.last_error())
                .flatten(),
            url: format!("/api/v1/admin/jobs/{}", job.id),
        }
    }
}

/// A job in full.
#[derive(Serialize, ToSchema)]
#[schema(as = Job)]
pub(crate) struct JobDetail {
    #[serde(flatten)]
    pub(crate) summary: JobSummary,
    /// As enqueued: JSON when it parses as JSON, else the stored text.
    #[schema(value_type = Value)]
    pub(crate) payload: Value,
    /// What it returned when it completed: JSON when it parses as JSON, else the stored text.
    #[schema(value_type = Option<Value>)]
    pub(crate) result: Option<Value>,
    /// Jobs with the same serial key run one at a time.
    pub(crate) serial_key: Option<String>,
    /// The job that waits for this one (and its siblings) to finish.
    pub(crate) join_id: Option<i64>,
    /// Jobs this one waits for that have not finished.
    pub(crate) pending_children: i32,
    /// The worker running it.
    pub(crate) locked_by: Option<String>,
    /// When that worker's lease ends unless it renews it.
    #[schema(format = DateTime)]
    pub(crate) locked_until: Option<String>,
    /// Every failure, oldest first: one per failed attempt, plus cancels and discards.
    pub(crate) errors: Vec<ErrorEntry>,
}

/// One entry of a job's error history.
#[derive(Serialize, ToSchema)]
#[schema(as = JobError)]
pub(crate) struct ErrorEntry {
    pub(crate) attempt: Option<i64>,
    #[schema(format = DateTime)]
    pub(crate) at: Option<String>,
    pub(crate) message: String,
    /// The error's causes, outermost first.
    pub(crate) causes: Vec<String>,
}

impl From<&JobRecord> for JobDetail {
    fn from(job: &JobRecord) -> Self {
        let errors = job
            .error_history()
            .iter()
            .map(|e| ErrorEntry {
                attempt: e["attempt"].as_i64(),
                at: e["at"].as_i64().map(rfc3339),
                message: e["error"].as_str().unwrap_or_default().to_owned(),
                causes: e["causes"]
                    .as_array()
                    .map(|c| {
                        c.iter()
                            .filter_map(|c| c.as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default(),
            })
            .collect();
        JobDetail {
            summary: JobSummary::from(job),
            payload: serde_json::from_str(&job.payload)
                .unwrap_or_else(|_| Value::String(job.payload.clone())),
            result: job
                .result
                .as_ref()
                .map(|r| serde_json::from_str(r).unwrap_or_else(|_| Value::String(r.clone()))),
            serial_key: job.serial_key.clone(),
            join_id: job.join_id,
            pending_children: job.pending_children,
            locked_by: job.locked_by.clone(),
            locked_until: job.locked_until.map(rfc3339),
            errors,
        }
    }
}

/// A page of jobs for `query`, as the API lists them (and the admin pages show them).
pub(crate) async fn page(state: &AppState, query: &ListQuery) -> Result<Page, ApiError> {
    let job_state = match given(&query.state) {
        None => None,
        Some(s) => Some(JobState::parse(s).ok_or_else(|| {
            let known: Vec<&str> = JobState::ALL.iter().map(|s| s.as_str()).collect();
            ApiError::bad_request(
                "invalid_parameter",
                format!("Unknown job state {s:?}: use one of {}.", known.join(", ")),
            )
            .field("state")
        })?),
    };
    let limit = integer("limit", &query.limit, 1..=PAGE_MAX)?.unwrap_or(PAGE_DEFAULT);
    let before_id = crate::web::query::before(
        query.before.as_deref(),
        "a job id",
        crate::web::query::job_cursor,
    )?;
    let filter = JobFilter {
        state: job_state,
        queue: given(&query.queue).map(str::to_owned),
        tenant: given(&query.tenant).map(str::to_owned),
        kind: given(&query.kind).map(str::to_owned),
        workflow: given(&query.workflow).map(str::to_owned),
        before_id,
        limit,
    };
    let jobs = state.queue.list(&filter).await?;
    let next = (jobs.len() as i64 == limit)
        .then(|| jobs.last().map(|j| j.id.to_string()))
        .flatten();
    let mut jobs: Vec<JobSummary> = jobs.iter().map(JobSummary::from).collect();
    name_books(state, &mut jobs).await?;
    Ok(Page { jobs, next })
}

/// Fills in the title of each job's book, in one query for the page.
async fn name_books(state: &AppState, jobs: &mut [JobSummary]) -> Result<(), ApiError> {
    let ids: Vec<String> = jobs.iter().filter_map(|j| j.book.clone()).collect();
    if ids.is_empty() {
        return Ok(());
    }
    let names = crate::books::names(&state.db, &ids).await?;
    for job in jobs {
        job.book_title = job.book.as_ref().and_then(|id| names.get(id).cloned());
    }
    Ok(())
}

/// One job in full, as the API shows it (and the admin pages).
pub(crate) async fn detail(state: &AppState, id: &str) -> Result<JobDetail, ApiError> {
    let mut job = JobDetail::from(&find(state, id).await?);
    name_books(state, std::slice::from_mut(&mut job.summary)).await?;
    Ok(job)
}

/// The job `id` (as a path gave it), or 404.
pub(crate) async fn find(state: &AppState, id: &str) -> Result<JobRecord, ApiError> {
    let missing = || ApiError::not_found("job", format!("There is no job {id}."));
    let id: i64 = id.parse().map_err(|_| missing())?;
    state.queue.job(id).await?.ok_or_else(missing)
}
