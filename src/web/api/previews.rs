//! `GET /api/v1/books/{id}/preview?style=`: a ready book in a style, before the author chooses
//! it. Made on demand by the worker (`pipeline::preview`), once per revision and style, and
//! kept with the revision's files: the first ask answers 202 while it is made, the next ones
//! 200 with its pages.

use actix_web::http::{StatusCode, header};
use actix_web::{HttpResponse, get, web};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::books::{self, keys};
use crate::jobs::JobState;
use crate::pipeline::preview::{MADE, Made, MakePreview};
use crate::style::builtin;
use crate::style::preview::Look;
use crate::web::AppState;
use crate::web::book_view::own_book;
use crate::web::caller::Caller;
use crate::web::error::{ApiError, ErrorBody};
use crate::web::error_responses::{Internal, NotFound, RateLimited, Unauthorized, Unavailable};
use crate::web::query::Query;

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PreviewQuery {
    /// A built-in style's name; the default style's when not given.
    #[param(example = "classic")]
    style: Option<String>,
}

/// A book's preview in a style.
#[derive(Debug, Serialize, ToSchema)]
pub struct PreviewView {
    /// The style's name.
    #[schema(example = "classic")]
    pub style: String,
    /// The style's title and what it is for.
    pub title: String,
    pub description: String,
    /// `ready`, or `making`: ask again in a moment (`Retry-After`).
    pub status: PreviewStatus,
    /// The print edition's pages, as PNG: its title page, its first chapter's opening and a
    /// page with a scene break (`null` for a book without one). Present once ready.
    pub pages: Option<PreviewPages>,
    /// The same passages as the web reader shows them: an HTML page to frame.
    pub reader: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PreviewStatus {
    Ready,
    Making,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PreviewPages {
    pub title: String,
    pub opening: Option<String>,
    pub scene: Option<String>,
}

/// Preview a book in a style
///
/// The book's title page, first chapter's opening and a page with a scene break, typeset in
/// the style from the book itself, and the same passages as the web reader shows them. The
/// first ask makes it (202, `status: making`); ask again until it is `ready` (200). A new
/// revision of the book has previews of its own.
#[utoipa::path(
    operation_id = "preview_book",
    tag = "books",
    params(("id" = String, Path, description = "The book's id."), PreviewQuery),
    responses(
        (status = 200, description = "The preview.", body = PreviewView),
        (status = 202, description = "The preview is being made; ask again.", body = PreviewView,
            headers(("Retry-After" = String, description = "Seconds to wait."))),
        (status = 401, response = Unauthorized),
        (status = 404, response = NotFound),
        (status = 409, description = "The book has no built version yet (`not_ready`).",
            body = ErrorBody),
        (status = 422, description = "No style of that name (`invalid_style`, `field` is \
            `style`); the message lists the styles.", body = ErrorBody),
        (status = 429, response = RateLimited),
        (status = 500, response = Internal),
        (status = 503, response = Unavailable),
    )
)]
#[get("/books/{id}/preview")]
pub async fn preview(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
    query: Query<PreviewQuery>,
) -> Result<HttpResponse, ApiError> {
    let tenant = caller.tenant();
    let asked = query
        .parsed()?
        .style
        .unwrap_or_else(|| crate::style::DEFAULT.to_owned());
    let book = own_book(&state, &tenant, &id).await?;
    let (name, house) = crate::house_styles::choose(&state.db, &tenant, &asked)
        .await?
        .map_err(|why| {
            ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_style", why).field("style")
        })?;
    let (look, style) = match house {
        None => (
            Look {
                style: name.clone(),
                version: None,
            },
            builtin::get(name.as_str()).unwrap_or_default(),
        ),
        Some(kept) => (kept.look(), kept.style().unwrap_or_default()),
    };
    if book.status != books::BookStatus::Ready {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "not_ready",
            "The book has no built version to preview yet: wait until it is ready.",
        ));
    }
    let revision = book.current();
    let base = format!("/books/{}/preview/{look}/", book.id);
    let view = PreviewView {
        style: name.to_string(),
        title: style.title,
        description: style.description,
        status: PreviewStatus::Making,
        pages: None,
        reader: None,
    };
    let made = keys::preview(&revision, &look, MADE);
    if let Some(bytes) = state.blobs.get_opt(&made).await? {
        return ready(view, &base, &bytes);
    }
    let enqueued = state
        .queue
        .enqueue(MakePreview::job(&revision, &look, tenant.as_str()))
        .await?;
    if !enqueued.inserted
        && let Some(job) = state.queue.job(enqueued.id).await?
    {
        match job.state {
            // Asked for again: one that ran out of attempts tries once more.
            JobState::Dead => {
                state.queue.retry(enqueued.id).await?;
            }
            // Made between the look for it above and now: a job completes only once its
            // preview is stored.
            JobState::Completed if let Some(bytes) = state.blobs.get_opt(&made).await? => {
                return ready(view, &base, &bytes);
            }
            JobState::Discarded | JobState::Cancelled | JobState::Completed => {
                return Err(ApiError::from(anyhow::anyhow!(
                    "the preview of book {} in {name} was not made (job {} {:?})",
                    book.id,
                    enqueued.id,
                    job.state
                )));
            }
            _ => {}
        }
    }
    Ok(HttpResponse::Accepted()
        .insert_header((header::RETRY_AFTER, "1"))
        .json(view))
}

/// The answer for a preview that is made: `bytes` are its record.
fn ready(mut view: PreviewView, base: &str, bytes: &[u8]) -> Result<HttpResponse, ApiError> {
    let made: Made = serde_json::from_slice(bytes)
        .map_err(|e| anyhow::anyhow!("reading a preview's record: {e}"))?;
    view.status = PreviewStatus::Ready;
    view.pages = Some(PreviewPages {
        title: format!("{base}title.png"),
        opening: made.opening.then(|| format!("{base}opening.png")),
        scene: made.scene.then(|| format!("{base}scene.png")),
    });
    view.reader = Some(format!("{base}reader.html"));
    Ok(HttpResponse::Ok().json(view))
}
