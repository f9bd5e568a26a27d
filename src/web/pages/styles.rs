//! `/books/{id}/styles`: a ready book in every style it may have (built-in and house styles), from the book itself: the print
//! edition's title page, first chapter's opening and a page with a scene break, and the same
//! passages as the web reader shows them (`pipeline::preview`), each with the button that gives
//! the book that style. Previews not made yet are asked for as the page is shown, and
//! `styles.js` reloads the page once they are.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, get, web};
use maud::{Markup, html};

use crate::books::{self, BookStatus, Tenant, keys};
use crate::house_styles::Offered;
use crate::pipeline::preview::{MADE, Made, MakePreview};
use crate::web::AppState;
use crate::web::book_view::own_book;
use crate::web::frame::{Nav, PageError, Visitor, html_response, layout_in};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(styles);
}

/// One style's preview, as the page shows it.
pub(super) struct Shown {
    pub offered: Offered,
    pub made: Option<Made>,
}

/// The preview of `book` in `offered`, once made; until then `None`, and it is asked for.
pub(super) async fn preview(
    state: &AppState,
    book: &books::BookRow,
    offered: &Offered,
) -> anyhow::Result<Option<Made>> {
    let revision = book.current();
    Ok(
        match state
            .blobs
            .get_opt(&keys::preview(&revision, &offered.look, MADE))
            .await?
        {
            Some(bytes) => serde_json::from_slice::<Made>(&bytes).ok(),
            None => {
                state
                    .queue
                    .enqueue(MakePreview::job(
                        &revision,
                        &offered.look,
                        book.tenant.as_str(),
                    ))
                    .await?;
                None
            }
        },
    )
}

#[get("/books/{id}/styles")]
async fn styles(
    state: web::Data<AppState>,
    Visitor(session): Visitor,
    id: web::Path<String>,
) -> Result<HttpResponse, PageError> {
    let tenant = Tenant::of(&session.tenant);
    let book = own_book(&state, &tenant, &id).await?;
    let title = book.title.clone().unwrap_or_else(|| book.file_name.clone());
    let current = books::revision(&state.db, &book.current()).await?;
    let style_now = match &current {
        Some(row) => books::style_of(&state.blobs, &row.id).await?,
        None => crate::style::DEFAULT.to_owned(),
    };
    let ready = book.status == BookStatus::Ready;
    let mut shown = Vec::new();
    if ready {
        for offered in crate::house_styles::offered(&state.db, &tenant).await? {
            let made = preview(&state, &book, &offered).await?;
            shown.push(Shown { offered, made });
        }
    }
    let base = format!("/books/{}/preview", book.id);
    let body = html! {
        article #styles data-book=(book.id) {
            p { a href={ "/books/" (book.id) } { "← " (title) } }
            h1 { "Styles for " (title) }
            @if !ready {
                p { "Previews are made from the book once it is ready." }
            } @else {
                p.hint { "Each style shown with your own book: the print edition's title page, the opening of the first chapter and a page with a scene break, then the same passages as the web reader shows them." }
                @for s in &shown {
                    section.style-preview aria-labelledby={ "style-" (s.offered.name) } data-style=(s.offered.name) data-pending[s.made.is_none()] {
                        h2 id={ "style-" (s.offered.name) } {
                            (s.offered.title)
                            @if s.offered.owner.is_some() { " " span.badge { "house style" } }
                            @if s.offered.name.as_str() == style_now { " " span.badge { "the book's style" } }
                        }
                        p.hint { (s.offered.description) }
                        @match &s.made {
                            None => p.making role="status" { "Making the preview…" },
                            Some(made) => {
                                (pages(&base, s, made))
                                iframe.passages src={ (base) "/" (s.offered.look) "/reader.html" } title={ "The passages in " (s.offered.title) ", as the web reader shows them" } loading="lazy" {}
                            }
                        }
                        @if s.offered.name.as_str() != style_now {
                            form data-api="POST" data-url={ "/api/v1/books/" (book.id) "/style" } data-then={ "/books/" (book.id) } {
                                input type="hidden" name="style" value=(s.offered.name);
                                button type="submit" { "Use " (s.offered.title) }
                            }
                            p.error role="alert" hidden {}
                        }
                    }
                }
            }
        }
    };
    Ok(html_response(
        StatusCode::OK,
        layout_in(
            Nav::Book,
            &format!("Styles — {title}"),
            Some(&session),
            &["/static/styles.js"],
            body,
        ),
    ))
}

pub(super) fn pages(base: &str, s: &Shown, made: &Made) -> Markup {
    html! {
        div.preview-pages {
            figure {
                img src={ (base) "/" (s.offered.look) "/title.png" } alt={ "The title page in " (s.offered.title) } loading="lazy";
                figcaption { "Title page" }
            }
            @if made.opening {
                figure {
                    img src={ (base) "/" (s.offered.look) "/opening.png" } alt={ "The first chapter's opening page in " (s.offered.title) } loading="lazy";
                    figcaption { "Chapter opening" }
                }
            }
            @if made.scene {
                figure {
                    img src={ (base) "/" (s.offered.look) "/scene.png" } alt={ "A page with a scene break in " (s.offered.title) } loading="lazy";
                    figcaption { "Scene break" }
                }
            }
        }
    }
}
