//! `/books/{id}/styles`: a ready book in every built-in style, from the book itself: the print
//! edition's title page, first chapter's opening and a page with a scene break, and the same
//! passages as the web reader shows them (`pipeline::preview`), each with the button that gives
//! the book that style. Previews not made yet are asked for as the page is shown, and
//! `styles.js` reloads the page once they are.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, get, web};
use maud::{Markup, html};

use crate::books::{self, BookStatus, Tenant, keys};
use crate::pipeline::preview::{MADE, Made, MakePreview};
use crate::style::{StyleName, builtin};
use crate::web::AppState;
use crate::web::book_view::own_book;
use crate::web::frame::{Nav, PageError, Visitor, html_response, layout_in};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(styles);
}

/// One style's preview, as the page shows it.
struct Shown {
    name: StyleName,
    title: String,
    description: String,
    made: Option<Made>,
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
        for name in builtin::names() {
            let Some(style) = builtin::get(name.as_str()) else {
                continue;
            };
            let made = match state
                .blobs
                .get_opt(&keys::preview(&book.current(), &name, MADE))
                .await?
            {
                Some(bytes) => serde_json::from_slice::<Made>(&bytes).ok(),
                None => {
                    state
                        .queue
                        .enqueue(MakePreview::job(&book.current(), &name, tenant.as_str()))
                        .await?;
                    None
                }
            };
            shown.push(Shown {
                name,
                title: style.title,
                description: style.description,
                made,
            });
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
                    section.style-preview aria-labelledby={ "style-" (s.name) } data-style=(s.name) data-pending[s.made.is_none()] {
                        h2 id={ "style-" (s.name) } {
                            (s.title)
                            @if s.name.as_str() == style_now { " " span.badge { "the book's style" } }
                        }
                        p.hint { (s.description) }
                        @match &s.made {
                            None => p.making role="status" { "Making the preview…" },
                            Some(made) => {
                                (pages(&base, s, made))
                                iframe.passages src={ (base) "/" (s.name) "/reader.html" } title={ "The passages in " (s.title) ", as the web reader shows them" } loading="lazy" {}
                            }
                        }
                        @if s.name.as_str() != style_now {
                            form data-api="POST" data-url={ "/api/v1/books/" (book.id) "/style" } data-then={ "/books/" (book.id) } {
                                input type="hidden" name="style" value=(s.name);
                                button type="submit" { "Use " (s.title) }
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

fn pages(base: &str, s: &Shown, made: &Made) -> Markup {
    html! {
        div.preview-pages {
            figure {
                img src={ (base) "/" (s.name) "/title.png" } alt={ "The title page in " (s.title) } loading="lazy";
                figcaption { "Title page" }
            }
            @if made.opening {
                figure {
                    img src={ (base) "/" (s.name) "/opening.png" } alt={ "The first chapter's opening page in " (s.title) } loading="lazy";
                    figcaption { "Chapter opening" }
                }
            }
            @if made.scene {
                figure {
                    img src={ (base) "/" (s.name) "/scene.png" } alt={ "A page with a scene break in " (s.title) } loading="lazy";
                    figcaption { "Scene break" }
                }
            }
        }
    }
}
