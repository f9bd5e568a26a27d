//! `/styles`: every style the tenant's books may use, built-in and house styles, each with its
//! preview on the tenant's newest ready book (as `/books/{id}/styles` shows them), its files,
//! and its file as written; and the form that adds a house style (`POST /api/v1/styles`), whose
//! refusal names the file, the key and its line.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, get, web};
use maud::html;

use super::styles::{Shown, pages, preview};
use crate::books::{self, BookStatus, Tenant};
use crate::house_styles::Owner;
use crate::web::AppState;
use crate::web::frame::{Nav, PageError, Visitor, html_response, layout_in};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(styles);
}

/// Books looked through for one to preview the styles on: the newest ready one among them.
const BOOKS_LOOKED_AT: i64 = 20;

#[get("/styles")]
async fn styles(
    state: web::Data<AppState>,
    Visitor(session): Visitor,
) -> Result<HttpResponse, PageError> {
    let tenant = Tenant::of(&session.tenant);
    let admin = session.tenant.admin;
    let sample = books::list(&state.db, &tenant, None, BOOKS_LOOKED_AT)
        .await?
        .into_iter()
        .find(|b| b.status == BookStatus::Ready);
    let houses = crate::house_styles::visible(&state.db, &tenant).await?;
    let mut shown = Vec::new();
    for offered in crate::house_styles::offered(&state.db, &tenant).await? {
        let made = match &sample {
            Some(book) => preview(&state, book, &offered).await?,
            None => None,
        };
        shown.push(Shown { offered, made });
    }
    let body = html! {
        article #styles data-book=[sample.as_ref().map(|b| b.id.to_string())] {
            h1 { "Styles" }
            p.hint {
                "How a book looks in every edition: its EPUB, its web reader and its paperback. Choose one when you upload, or give a ready book another from its page. "
                @match &sample {
                    Some(book) => { "Each is shown with " em { (book.title.clone().unwrap_or_else(|| book.file_name.clone())) } ", your newest ready book." }
                    None => { "Upload a book to see each style on your own pages." }
                }
            }
            @for s in &shown {
                @let kept = houses.iter().find(|h| h.name == s.offered.name && s.offered.owner.is_some());
                section.style-preview aria-labelledby={ "style-" (s.offered.name) } data-style=(s.offered.name) data-pending[sample.is_some() && s.made.is_none()] {
                    h2 id={ "style-" (s.offered.name) } {
                        (s.offered.title)
                        " " span.badge { @match &s.offered.owner {
                            None => "built-in",
                            Some(Owner::Everyone) => "house style, every tenant",
                            Some(Owner::Tenant(_)) => "house style",
                        } }
                    }
                    p.hint { (s.offered.description) " Its name: " code { (s.offered.name) } "." }
                    @if let (Some(book), Some(made)) = (&sample, &s.made) {
                        (pages(&format!("/books/{}/preview", book.id), s, made))
                    } @else if sample.is_some() {
                        p.making role="status" { "Making the preview…" }
                    }
                    @if let Some(kept) = kept {
                        @if !kept.files.is_empty() {
                            p { "Files: " @for (i, f) in kept.files.iter().enumerate() { @if i > 0 { ", " } code { (f.name) } } }
                        }
                        details { summary { "The style file" } pre { code { (kept.source) } } }
                        @let removable = match &kept.owner { Owner::Tenant(_) => true, Owner::Everyone => admin };
                        @if removable {
                            @let url = match &kept.owner {
                                Owner::Tenant(_) => format!("/api/v1/styles/{}", kept.name),
                                Owner::Everyone => format!("/api/v1/styles/{}?scope=installation", kept.name),
                            };
                            form data-api="DELETE" data-url=(url) data-confirm={ "Remove the house style " (s.offered.title) "? Books already made with it keep their look." } {
                                button type="submit" { "Remove " (s.offered.title) }
                            }
                            p.error role="alert" hidden {}
                        }
                    }
                }
            }
            section.add-style aria-labelledby="add-style" {
                h2 #add-style { "Add a house style" }
                p.hint {
                    "A style is a TOML file; the README's “Book styles” lists every key, and any style above opens with its file to start from. Send the font files it names (each family's .ttf or .otf faces, under a licence that allows embedding) and its ornament image (.svg without text, or .png). Nothing is kept unless all of it can be used."
                }
                form data-api="POST" data-url="/api/v1/styles" enctype="multipart/form-data" data-then="/styles" {
                    p {
                        label for="style-file" { "Style file (.toml)" }
                        input #style-file type="file" name="style" accept=".toml,application/toml,text/plain" required;
                    }
                    p {
                        label for="style-files" { "Fonts and ornament" }
                        input #style-files type="file" name="files" accept=".ttf,.otf,.svg,.png" multiple;
                    }
                    p {
                        label for="style-name" { "Name (optional: the file's name without .toml)" }
                        input #style-name type="text" name="name" pattern="[a-z0-9]+(-[a-z0-9]+)*" maxlength="40" autocomplete="off";
                    }
                    p {
                        label { input type="checkbox" name="replace" value="true"; " Replace a house style of that name" }
                    }
                    @if admin {
                        p {
                            label { input type="checkbox" name="scope" value="installation"; " For every tenant's books" }
                        }
                    }
                    button type="submit" { "Add the style" }
                }
                p.error role="alert" hidden {}
            }
        }
    };
    Ok(html_response(
        StatusCode::OK,
        layout_in(
            Nav::Styles,
            "Styles",
            Some(&session),
            &["/static/styles.js"],
            body,
        ),
    ))
}
