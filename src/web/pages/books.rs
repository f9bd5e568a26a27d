//! The author's pages: the list of books, the upload form, and a page per book with live
//! progress, the report, downloads and the reader.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError, get, web};
use chrono::{DateTime, Utc};
use maud::{Markup, html};
use serde::Deserialize;

use crate::books::log::{self as book_log, BookLogLine};
use crate::books::view::Progress;
use crate::books::{self, BookId, BookStatus, BookView, StepState, Tenant};
use crate::ebook::changes::{Changes, ChapterStatus, Op};
use crate::house_styles::Offered;
use crate::manuscript::naming;
use crate::report::sentence;
use crate::report::{PrinterCheck, Report, Verdict, Warning};
use crate::web::AppState;
use crate::web::book_view::{own_book, own_revision, view};
use crate::web::frame::{Nav, PageError, Visitor, html_response, layout_in};

const PAGE_SIZE: i64 = 50;

pub fn routes(cfg: &mut web::ServiceConfig) {
    // `/books/new` before `/books/{id}`, which would otherwise take it.
    cfg.service(list)
        .service(upload)
        .service(show)
        .service(changes);
}

#[derive(Deserialize)]
struct ListQuery {
    before: Option<String>,
    /// The title of a book just deleted from its page, said once at the top of the list.
    deleted: Option<String>,
}

#[get("/books")]
async fn list(
    state: web::Data<AppState>,
    Visitor(session): Visitor,
    query: web::Query<ListQuery>,
) -> Result<HttpResponse, PageError> {
    let before = crate::web::query::before(query.before.as_deref(), "a book id", BookId::parse)?;
    let tenant = Tenant::of(&session.tenant);
    let rows = books::list(&state.db, &tenant, before.as_ref(), PAGE_SIZE).await?;
    let mut views = Vec::with_capacity(rows.len());
    for row in &rows {
        views.push(view(&state, row, false).await?);
    }
    let next = (rows.len() as i64 == PAGE_SIZE)
        .then(|| rows.last().map(|b| b.id.clone()))
        .flatten();
    // Only a line's worth of whatever the address says.
    let deleted = query
        .deleted
        .as_deref()
        .map(crate::ebook::metadata::bounds::excerpt);
    let body = html! {
        div.heading {
            h1 { "Your books" }
            a.button href="/books/new" { "Upload a manuscript" }
        }
        @if let Some(title) = &deleted {
            p.notice role="status" { "Deleted \u{201c}" (title) "\u{201d}, with all of its files." }
        }
        @if views.is_empty() {
            p.empty { "No books yet. " a href="/books/new" { "Upload a manuscript" } " (Markdown, Word, OpenDocument, EPUB, a web page or plain text) and Bindery makes an EPUB and a web reader of it." }
        } @else {
            ul.books {
                @for book in &views {
                    li {
                        (cover_thumbnail(book))
                        div.book-text {
                            a.book-title href={ "/books/" (book.id) } { (display_title(book)) }
                            " "
                            (status_badge(book.status))
                            span.meta {
                                @if !book.authors.is_empty() { (book.authors.join(", ")) " · " }
                                (book.file_name) " · " (readable_time(book.created_at))
                            }
                            (book_actions(book, true))
                        }
                    }
                }
            }
            @if let Some(next) = next {
                p { a href={ "/books?before=" (next) } { "Older books →" } }
            }
        }
    };
    Ok(html_response(
        StatusCode::OK,
        layout_in(Nav::Books, "Books", Some(&session), &[], body),
    ))
}

#[get("/books/new")]
async fn upload(
    state: web::Data<AppState>,
    Visitor(session): Visitor,
) -> Result<HttpResponse, PageError> {
    let styles = crate::house_styles::offered(&state.db, &Tenant::of(&session.tenant)).await?;
    let body = html! {
        h1 { "Upload a manuscript" }
        (upload_form(&state, None, &styles))
    };
    Ok(html_response(
        StatusCode::OK,
        layout_in(
            Nav::Upload,
            "Upload",
            Some(&session),
            &["/static/upload.js"],
            body,
        ),
    ))
}

/// The upload form: for a new book, or with `revision` (the book's id) for its next version,
/// which sends to the book's revisions and comes back to its page.
fn upload_form(state: &AppState, revision: Option<&BookId>, styles: &[Offered]) -> Markup {
    let limit = bytesize::ByteSize::b(state.limits.max_manuscript_bytes)
        .display()
        .iec();
    let default_language = &state.config.default_language;
    let (action, then) = match revision {
        Some(id) => (
            format!("/api/v1/books/{id}/revisions"),
            Some(format!("/books/{id}")),
        ),
        None => ("/api/v1/books".to_owned(), None),
    };
    html! {
        form #upload.stack method="post" action=(action) data-then=[then] enctype="multipart/form-data" novalidate {
            label.drop for="manuscript" #drop {
                span.drop-title { "Manuscript" }
                span.drop-hint #manuscript-hint { "Drop a manuscript here (Markdown, Word, OpenDocument, EPUB, a web page or plain text), or choose one. Up to " (limit) "." }
                input #manuscript type="file" name="manuscript" required
                    accept=".md,.markdown,.txt,.text,.docx,.odt,.fodt,.epub,.html,.htm,.xhtml,.zip,text/markdown,text/plain,text/html,application/vnd.openxmlformats-officedocument.wordprocessingml.document,application/vnd.oasis.opendocument.text,application/epub+zip,application/zip";
            }
            label for="cover" { "Cover image (optional)" }
            input #cover type="file" name="cover" accept="image/jpeg,image/png" aria-describedby="cover-hint";
            @if revision.is_some() {
                p.hint #cover-hint { "JPEG or PNG. Without one, the new version keeps the current cover." }
            } @else {
                p.hint #cover-hint { "JPEG or PNG. Without one, Bindery sets a typographic cover from the title." }
            }
            fieldset {
                legend { "About the book" }
                @if revision.is_some() {
                    p.hint { "Leave a field empty to keep what the current version was given, or else what the new manuscript says." }
                } @else {
                    p.hint { "Leave a field empty to use what the manuscript says (its title page, front matter or document properties)." }
                }
                (text_field("title", "Title", "text", ""))
                (text_field("author", "Author", "text", ""))
                label for="language" { "Language" }
                input #language type="text" name="language" autocomplete="off" aria-describedby="language-hint";
                p.hint #language-hint { "A language tag such as en-GB or fr. Empty: the manuscript's, or " code { (default_language) } " when it names none." }
                details {
                    summary { "More details" }
                    (text_field("subtitle", "Subtitle", "text", ""))
                    (text_field("publisher", "Publisher", "text", ""))
                    (text_field("date", "Publication date", "text", ""))
                    (text_field("isbn", "ISBN", "text", ""))
                    (text_field("series", "Series", "text", ""))
                    (text_field("series_number", "Number in series", "text", ""))
                    label for="description" { "Description" }
                    textarea #description name="description" rows="4" aria-describedby="description-hint" {}
                    p.hint #description-hint { "For catalogs and stores; also the print edition's back cover, unless its back-cover text below is given." }
                    // The book's webhook is set by its first upload.
                    @if revision.is_none() {
                        label for="callback_url" { "Webhook URL" }
                        input #callback_url type="url" name="callback_url" autocomplete="off" placeholder="https://example.com/hooks/bindery" aria-describedby="callback-hint";
                        p.hint #callback-hint { "Bindery POSTs a signed event here when the book is ready or fails." }
                    }
                    label for="format" { "Format" }
                    select #format name="format" {
                        option value="" selected { "Detect from the file" }
                        option value="markdown" { "Markdown" }
                        option value="docx" { "DOCX" }
                        option value="text" { "Plain text" }
                    }
                }
            }
            fieldset.styles {
                legend { "Design" }
                p.hint { "How the book looks, in the EPUB, the web reader and the print edition alike." }
                (style_choices(styles, "upload", None, true))
            }
            (print_fields())
            div.progress-row #upload-progress hidden {
                label for="upload-bar" { "Uploading" }
                progress #upload-bar max="100" value="0" {}
                span #upload-percent aria-live="polite" { "0%" }
            }
            p.error #upload-error role="alert" hidden {}
            button type="submit" { @if revision.is_some() { "Upload the new version" } @else { "Upload and convert" } }
        }
    }
}

/// The styles the tenant's books may use (built-in and house styles) as a choice of radio
/// buttons named `style`, each with what it is for; `current` checked. `keep` offers to leave
/// the choice to the manuscript (the upload form). `form` keeps the ids of two pickers on one
/// page apart.
fn style_choices(styles: &[Offered], form: &str, current: Option<&str>, keep: bool) -> Markup {
    html! {
        div.style-choices role="radiogroup" aria-label="Style" {
            @if keep {
                div.check {
                    input id={ "style-" (form) "-keep" } type="radio" name="style" value="" checked[current.is_none()];
                    label for={ "style-" (form) "-keep" } { "As the manuscript says (else Bindery)" }
                }
            }
            @for style in styles {
                @let name = style.name.as_str();
                div.check {
                    input id={ "style-" (form) "-" (name) } type="radio" name="style" value=(name)
                        checked[current == Some(name)] aria-describedby={ "style-" (form) "-" (name) "-hint" };
                    label for={ "style-" (form) "-" (name) } {
                        (style.title)
                        @if style.owner.is_some() { " (house style)" }
                    }
                }
                p.hint id={ "style-" (form) "-" (name) "-hint" } { (style.description) }
            }
        }
    }
}

/// `deleted=TITLE`, for the list to say what went.
fn deleted_query(title: &str) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .append_pair("deleted", title)
        .finish()
}

/// A book's print editions, each with what it came to, its files and its printer's check.
fn editions_section(id: &str, editions: &[crate::report::PrintReport]) -> Markup {
    html! {
        section.editions #print-editions aria-labelledby="print-editions-title" {
            h3 #print-editions-title { "Print editions" }
            @for edition in editions {
                @let name = edition.edition.name();
                @let label = edition.edition.heading();
                section.edition data-edition=(name) aria-labelledby={ "edition-" (name) } {
                    h4 #{ "edition-" (name) } { (label) }
                    @if let Some(failure) = &edition.failure {
                        p { "None: " (sentence(&failure.message)) }
                    } @else {
                        p {
                            @if let Some(pages) = edition.pages { (pages) " pages, " }
                            "trim " (edition.trim) ", " (edition.paper) " paper"
                            @if edition.bleed { ", bleed" }
                            @if let Some(gutter) = edition.gutter_inches { ", gutter " (format!("{gutter:.3}")) " in" }
                            @if let Some(spine) = edition.spine_inches { ", spine " (format!("{spine:.3}")) " in" }
                        }
                        p.actions {
                            a.button.secondary href={ "/books/" (id) "/pdf?edition=" (name) } download {
                                (label) " interior (PDF)"
                            }
                            a.button.secondary href={ "/books/" (id) "/print-cover.pdf?edition=" (name) } download {
                                (label) " cover (PDF)"
                            }
                        }
                        @if let Some(check) = &edition.printer_check {
                            (printer_check(check, edition.edition, true))
                        }
                    }
                }
            }
        }
    }
}

/// The print edition checked against its printer's rules: each rule, what the edition has,
/// what the printer asks for, and what to change; the rule names link to the printer's page.
fn printer_check(check: &PrinterCheck, edition: crate::paperback::Edition, nested: bool) -> Markup {
    let failed = check
        .rules
        .iter()
        .filter(|r| r.verdict == Verdict::Fail)
        .count();
    let title = format!("printer-check-{}-title", edition.name());
    html! {
        section.printer-check id={ "printer-check-" (edition.name()) } aria-labelledby=(title) data-passed=(check.passed) {
            @let heading = html! {
                // Each edition's check is a landmark of its own: its name says whose it is.
                @if nested { (edition.heading()) ", checked against " } @else { "Checked against " }
                (check.name) ": "
                @if check.passed { "every rule passed" } @else { (failed) " of " (check.rules.len()) " rules failed" }
            };
            // Under the report's heading alone, or under its edition's.
            @if nested { h5 id=(title) { (heading) } } @else { h3 id=(title) { (heading) } }
            // A check that passed folds its rules away; one that did not shows them.
            details open[!check.passed] {
                summary { "The " (check.rules.len()) " rules, each with " (check.name) "'s page" }
                (rules_table(check))
            }
        }
    }
}

/// Each rule of a printer's check: its result, what the edition has and what the printer asks.
fn rules_table(check: &PrinterCheck) -> Markup {
    html! {
            div.table-wrap {
                table {
                    thead {
                        tr {
                            th scope="col" { "Rule" }
                            th scope="col" { "Result" }
                            th scope="col" { "This edition" }
                            th scope="col" { (check.name) " asks for" }
                        }
                    }
                    tbody {
                        @for rule in &check.rules {
                            tr data-rule=(rule.rule) data-verdict=(verdict_name(rule.verdict)) {
                                th scope="row" { a href=(rule.source) rel="noreferrer" { (rule.label) } }
                                td.verdict { (verdict_label(rule.verdict)) }
                                td { (rule.found) }
                                td {
                                    (rule.wanted)
                                    @if let Some(advice) = &rule.advice { br; strong { (advice) } }
                                    @if let Some(note) = &rule.note { br; span.meta { (note) } }
                                }
                            }
                        }
                    }
                }
            }
    }
}

fn verdict_name(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Pass => "pass",
        Verdict::Fail => "fail",
        Verdict::Advice => "advice",
    }
}

fn verdict_label(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Pass => "Passed",
        Verdict::Fail => "Failed",
        Verdict::Advice => "Advice",
    }
}

/// The editions the upload form offers, as `editions` takes them.
const EDITION_CHOICES: [(&str, &str); 6] = [
    ("paperback", "Paperback"),
    ("paperback, hardcover", "Paperback and hardcover"),
    ("paperback, large print", "Paperback and large print"),
    (
        "paperback, hardcover, large print",
        "Paperback, hardcover and large print",
    ),
    ("hardcover", "Hardcover alone"),
    ("none", "None: the ebooks alone"),
];

/// The print edition's settings, as the API and the front matter take them (the names are
/// the keys' own, `document::keys`). Empty, the manuscript's settings hold, or the defaults.
fn print_fields() -> Markup {
    use crate::document::keys::Field;
    use crate::paperback::{Paper, Printer, Trim};
    html! {
        fieldset {
            legend { "Print edition" }
            p.hint { "The paperback's interior and cover. Leave a field empty to use what the manuscript says, or the default." }
            label for="trim" { "Trim size" }
            select #trim name=(Field::Trim.name()) {
                option value="" selected { "As the manuscript says (else " (Trim::default().label()) ")" }
                @for trim in Trim::ALL { option value=(trim.name()) { (trim.label()) } }
            }
            label for="paper" { "Paper" }
            select #paper name=(Field::Paper.name()) aria-describedby="paper-hint" {
                option value="" selected { "As the manuscript says (else " (Paper::default().name()) ")" }
                @for paper in Paper::ALL { option value=(paper.name()) { (paper.name()) } }
            }
            p.hint #paper-hint { "Cream paper is thicker: the spine is wider." }
            div.check {
                input #bleed type="checkbox" name=(Field::Bleed.name()) value="yes" aria-describedby="bleed-hint";
                label for="bleed" { "Bleed" }
            }
            p.hint #bleed-hint { "0.125 in beyond the trim on the outside edges, for pictures printed to the edge of the page." }
            label for="print_isbn" { "Print ISBN" }
            input #print_isbn type="text" name=(Field::PrintIsbn.name()) autocomplete="off" inputmode="numeric" aria-describedby="print-isbn-hint";
            p.hint #print-isbn-hint { "The paperback's own ISBN, printed on its copyright page; not the ebook's." }
            label for="price" { "Price in the barcode" }
            input #price type="text" name=(Field::Price.name()) autocomplete="off" aria-describedby="price-hint";
            p.hint #price-hint { "Printed as the barcode's add-on: USD 14.99, CAD, GBP, AUD or NZD and an amount, or none. Leave empty for no add-on." }
            label for="editions" { "Editions" }
            select #editions name=(Field::Editions.name()) aria-describedby="editions-hint" {
                option value="" selected { "As the manuscript says (else the paperback)" }
                @for (value, label) in EDITION_CHOICES { option value=(value) { (label) } }
            }
            p.hint #editions-hint { "Every edition is made from the one manuscript, each with its own interior, cover and ISBN. The trim, paper and ISBN above are the paperback's." }
            label for="hardcover_isbn" { "Hardcover ISBN" }
            input #hardcover_isbn type="text" name=(Field::HardcoverIsbn.name()) autocomplete="off" inputmode="numeric";
            label for="hardcover_trim" { "Hardcover trim" }
            select #hardcover_trim name=(Field::HardcoverTrim.name()) {
                option value="" selected { "The paperback's" }
                @for trim in Trim::ALL { option value=(trim.name()) { (trim.label()) } }
            }
            label for="large_print_isbn" { "Large-print ISBN" }
            input #large_print_isbn type="text" name=(Field::LargePrintIsbn.name()) autocomplete="off" inputmode="numeric";
            label for="large_print_size" { "Large-print type size (points)" }
            input #large_print_size type="number" min="16" max="24" step="1" name=(Field::LargePrintSize.name()) placeholder="16";
            label for="printer" { "Printer" }
            select #printer name=(Field::Printer.name()) aria-describedby="printer-hint" {
                option value="" selected { "As the manuscript says (else none)" }
                @for printer in Printer::ALL { option value=(printer.name()) { (printer.label()) } }
                option value=(Printer::None.name()) { "None" }
            }
            p.hint #printer-hint { "The print edition is checked against this printer's rules: trim, page count, margins, spine text, bleed, image resolution, fonts and PDF." }
            label for="blurb" { "Back-cover text" }
            textarea #blurb name=(Field::Blurb.name()) rows="4" aria-describedby="blurb-hint" {}
            p.hint #blurb-hint { "Printed on the back cover. Empty: the description is printed there; with neither, the back is blank." }
        }
    }
}

fn text_field(name: &str, label: &str, kind: &str, value: &str) -> Markup {
    html! {
        label for=(name) { (label) }
        input id=(name) type=(kind) name=(name) value=(value) autocomplete="off";
    }
}

#[get("/books/{id}")]
async fn show(
    state: web::Data<AppState>,
    Visitor(session): Visitor,
    id: web::Path<String>,
) -> Result<HttpResponse, PageError> {
    let book = own_book(&state, &Tenant::of(&session.tenant), &id).await?;
    let styles = crate::house_styles::offered(&state.db, &book.tenant).await?;
    let given_style = crate::convert::chosen_style_name(&book.options()?.convert.metadata);
    let log = book_log::lines(&state.db, &book.id, book_log::LINES_DEFAULT).await?;
    let revisions = books::revisions(&state.db, &book.id).await?;
    let book = view(&state, &book, true).await?;
    let report: Option<Report> = book
        .report
        .clone()
        .and_then(|r| serde_json::from_value(r).ok());
    // The style the book is in: as its report says, else as it was given.
    let style = report
        .iter()
        .flat_map(|r| &r.metadata)
        .find(|m| m.field == "style")
        .map(|m| m.value.clone())
        .or_else(|| given_style.map(String::from))
        .unwrap_or_else(|| crate::style::DEFAULT.to_owned());
    let processing = book.status == BookStatus::Processing;
    let mismatches: Vec<&Warning> = report
        .iter()
        .flat_map(|r| &r.warnings)
        .filter(|w| w.code == naming::WARNING)
        .collect();
    let title = display_title(&book);
    let body = html! {
        article #book data-book=(book.id) data-status=(book.status) {
            div.book-head {
                (cover_thumbnail(&book))
                div {
                    div.heading {
                        h1 { (display_title(&book)) }
                        (status_badge(book.status))
                    }
                    @if !book.authors.is_empty() { p.byline { "by " (book.authors.join(", ")) } }
                    p.meta { (book.file_name) @if let Some(format) = &book.format { " · " (format) } " · uploaded " (readable_time(book.created_at)) }
                }
            }

            @if !mismatches.is_empty() {
                section.notice aria-labelledby="notice-title" {
                    h2 #notice-title { "Check the file" }
                    @for warning in &mismatches { p { (warning.message) } }
                }
            }

            @if let Some(error) = &book.error {
                section.failure aria-labelledby="failure-title" {
                    h2 #failure-title { "What went wrong" }
                    // The message says what to do; the page only offers the way to do it.
                    p { (error.message) }
                    @if error.code == books::STEP_FAILED {
                        form data-api="POST" data-url={ "/api/v1/books/" (book.id) "/retry" } data-then="reload" {
                            button type="submit" { "Retry" }
                        }
                    } @else if error.code != books::DAMAGED {
                        p { a.button href="#new-version" { "Upload a corrected manuscript" } }
                    }
                    p.error role="alert" hidden {}
                }
            }

            @if book.status == BookStatus::Ready {
                section.downloads aria-labelledby="downloads-title" {
                    h2 #downloads-title { "Your book" }
                    (book_actions(&book, false))
                    p { a #advance-links href=(format!("/books/{}/links", book.id)) { "Send it to advance readers" }
                        ": a personal link for each, with their name in their copies." }
                }
                section.design aria-labelledby="design-title" {
                    h2 #design-title { "Design" }
                    p.hint { "Give the book another style: the print edition, the EPUB and the reader are made again from what was read, without a new upload." }
                    p { a href={ "/books/" (book.id) "/styles" } { "See your book in each style" } }
                    form #restyle data-api="POST" data-url={ "/api/v1/books/" (book.id) "/style" } data-then="reload" {
                        (style_choices(&styles, "restyle", Some(style.as_str()), false))
                        button type="submit" { "Use this style" }
                    }
                    p.error role="alert" hidden {}
                }
            }

            @if let Some(progress) = &book.progress {
                section.progress aria-labelledby="progress-title" {
                    h2 #progress-title { "Conversion" }
                    @if book.status == BookStatus::Ready {
                        // Done is one line; the steps stay a click away.
                        details.steps-done {
                            summary { (finished_summary(&book, progress.steps.len())) }
                            (steps_list(progress))
                        }
                    } @else {
                        // A failed book has no "overall" to speak of: its steps say where it stopped.
                        @if processing {
                            div.progress-row {
                                label for="overall" { "Overall" }
                                progress #overall max="100" value=(progress.percent) {}
                                span #overall-percent { (progress.percent) "%" }
                            }
                        }
                        (steps_list(progress))
                        @if processing { p.hint #live aria-live="polite" { "Updating live." } }
                    }
                }
            }

            @if let Some(report) = &report {
                @if !report.metadata.is_empty() {
                    section.about aria-labelledby="about-title" {
                        h2 #about-title { "About the book" }
                        p.hint { "What the book says about itself, and where each value came from." }
                        dl.stats {
                            @for value in &report.metadata {
                                dt { (field_label(&value.field)) }
                                dd {
                                    (value.value)
                                    " " span.meta { "· " (source_label(&value.source)) }
                                    @if let Some(said) = &value.manuscript {
                                        " " span.meta { "(the manuscript said " q { (said) } ")" }
                                    }
                                }
                            }
                        }
                    }
                }
                section.report aria-labelledby="report-title" {
                    h2 #report-title { "Report" }
                    dl.stats {
                        dt { "Words" } dd { (grouped(report.statistics.words)) }
                        dt { "Chapters" } dd { (report.statistics.chapters) }
                        dt { "Images" } dd { (report.statistics.images) }
                        dt { "Notes" } dd { (report.statistics.notes) }
                        dt { "Tables" } dd { (report.statistics.tables) }
                        dt { "Read as" } dd { (report.format) @if let Some(enc) = &report.encoding { " (" (enc) ")" } }
                        @if let Some(print) = &report.print {
                            dt { "Print edition" }
                            dd #print-edition {
                                @if let Some(failure) = &print.failure {
                                    "None: " (sentence(&failure.message))
                                } @else {
                                    @if let Some(pages) = print.pages { (pages) " pages, " }
                                    "trim " (print.trim) ", " (print.paper) " paper"
                                    @if print.bleed { ", bleed" }
                                    @if let Some(gutter) = print.gutter_inches { ", gutter " (format!("{gutter:.3}")) " in" }
                                    @if let Some(spine) = print.spine_inches { ", spine " (format!("{spine:.3}")) " in" }
                                }
                            }
                        }
                    }
                    @if report.editions.len() > 1 {
                        (editions_section(book.id.as_ref(), &report.editions))
                    } @else if let Some(check) = report.print.as_ref().and_then(|p| p.printer_check.as_ref()) {
                        (printer_check(check, report.print.as_ref().map_or(crate::paperback::Edition::Paperback, |p| p.edition), false))
                    }
                    @if report.warnings.is_empty() {
                        p { "No warnings." }
                    } @else {
                        h3 { (report.warnings.len()) " warning" @if report.warnings.len() != 1 { "s" } }
                        ul.warnings {
                            @for warning in &report.warnings {
                                li data-code=(warning.code) {
                                    (warning.message)
                                    @if let Some(location) = &warning.location { " " span.meta { "(" (location) ")" } }
                                }
                            }
                        }
                    }
                }
            }

            @if let Some(deliveries) = book.deliveries.as_ref().filter(|d| !d.is_empty()) {
                section.webhooks aria-labelledby="webhooks-title" {
                    h2 #webhooks-title { "Webhook" }
                    p.meta { "To " (book.callback_url.as_deref().unwrap_or_default()) }
                    ul {
                        @for d in deliveries {
                            li {
                                code { (d.event) } " · " (d.state) " · " (d.attempts) " attempt" @if d.attempts != 1 { "s" }
                                @if let Some(e) = &d.last_error { " · " span.meta { (e) } }
                            }
                        }
                    }
                }
            }

            (versions_section(&state, &book, &revisions, &styles))

            (log_section(&log, book.status == BookStatus::Failed))

            section.danger {
                form data-api="DELETE" data-url={ "/api/v1/books/" (book.id) }
                    data-then={ "/books?" (deleted_query(&title)) }
                    data-confirm={ "Delete \u{201c}" (title) "\u{201d} and everything made of it: the manuscript, the EPUB, the web reader, the print edition, the covers and its entry in the catalog? This cannot be undone." } {
                    button.secondary type="submit" { "Delete book" }
                }
                p.error role="alert" hidden {}
            }
        }
    };
    Ok(html_response(
        StatusCode::OK,
        layout_in(
            Nav::Book,
            &title,
            Some(&session),
            &["/static/book.js", "/static/upload.js"],
            body,
        ),
    ))
}

/// `?from=`: the version a change report compares with.
#[derive(Deserialize)]
struct ChangesFrom {
    from: Option<String>,
}

#[get("/books/{id}/revisions/{n}/changes")]
async fn changes(
    state: web::Data<AppState>,
    Visitor(session): Visitor,
    path: web::Path<(String, String)>,
    query: web::Query<ChangesFrom>,
) -> Result<HttpResponse, PageError> {
    let (id, n) = path.into_inner();
    let row = own_book(&state, &Tenant::of(&session.tenant), &id).await?;
    let to = own_revision(&state, &row, &n).await?;
    let from = match query.from.as_deref().filter(|f| !f.is_empty()) {
        Some(from) => Some(
            from.parse::<u32>()
                .map_err(|_| PageError::BadRequest("from must be a version number".to_owned()))?,
        ),
        None => None,
    };
    let book = view(&state, &row, false).await?;
    let title = format!("What changed in version {}", to.id.number);
    // A pair that cannot be compared (not built, or its files removed) is said on the page,
    // with the versions that can be.
    let (report, refused) = match crate::web::changes::between(&state, &row, &to, from).await {
        Ok(report) => (Some(report), None),
        Err(e) if [StatusCode::CONFLICT, StatusCode::GONE].contains(&e.status_code()) => {
            (None, Some(e.message().to_owned()))
        }
        Err(e) => return Err(e.into()),
    };
    let shown_from = report.as_ref().map(|r| r.from).or(from);
    let earlier: Vec<u32> = books::revisions(&state.db, &row.id)
        .await?
        .iter()
        .filter(|r| {
            r.id.number < to.id.number
                && (books::changes::comparable(r) || Some(r.id.number) == shown_from)
        })
        .map(|r| r.id.number)
        .collect();
    let body = html! {
        article #changes {
            p { a href={ "/books/" (book.id) } { "← " (display_title(&book)) } }
            h1 { (title) }
            @if earlier.len() > 1 || refused.is_some() {
                form.filters method="get" action={ "/books/" (book.id) "/revisions/" (to.id.number) "/changes" } {
                    label {
                        "Since version"
                        select name="from" {
                            @for number in &earlier {
                                option value=(number) selected[Some(*number) == shown_from] { (number) }
                            }
                        }
                    }
                    button type="submit" { "Compare" }
                }
            }
            @if let Some(refused) = &refused {
                p.error role="alert" { (refused) }
            }
            @if let Some(report) = &report {
                (change_report(report))
            }
        }
    };
    Ok(html_response(
        StatusCode::OK,
        layout_in(Nav::Book, &title, Some(&session), &[], body),
    ))
}

/// A change report: the print edition's pages, each changed chapter with its words out and
/// in, and the warnings new and gone.
fn change_report(report: &Changes) -> Markup {
    html! {
            p.meta { "Since version " (report.from) "." }
            @if let Some(print) = &report.print {
                section aria-labelledby="print-changes-title" {
                    h2 #print-changes-title { "Print edition" }
                    dl.stats {
                        dt { "Pages" } dd { (print.pages_before) " → " (print.pages_after) }
                        @if let Some(page) = &print.first_page_that_differs {
                            dt { "First page that differs" } dd { (page) }
                        }
                    }
                    @if print.chapters_moved.is_empty() {
                        p { "No chapter moved to other pages." }
                    } @else {
                        h3 { "Chapters on other pages" }
                        ul {
                            @for moved in &print.chapters_moved {
                                li { (moved.title) ": pages " (moved.before.0) "–" (moved.before.1) " → " (moved.after.0) "–" (moved.after.1) }
                            }
                        }
                    }
                }
            }
            section aria-labelledby="chapter-changes-title" {
                h2 #chapter-changes-title { "Chapters" }
                @if report.chapters.is_empty() {
                    p { "No chapter changed." }
                }
                @for chapter in &report.chapters {
                    section.chapter-change data-status=(chapter.status.as_str()) {
                        h3 {
                            @if chapter.title.is_empty() {
                                // An untitled chapter, by its place.
                                "Chapter " (chapter.to_position.or(chapter.from_position).unwrap_or(1))
                            } @else {
                                (chapter.title)
                            }
                        }
                        p.meta {
                            (chapter_status(chapter.status))
                            @if let Some(was) = &chapter.renamed_from { " · renamed from " q { (was) } }
                            @if chapter.moved { " · moved" }
                            @if chapter.words_added + chapter.words_removed > 0 {
                                " · " (chapter.words_added) @if chapter.words_added == 1 { " word" } @else { " words" }
                                " added, " (chapter.words_removed) " removed"
                            }
                        }
                        @if !chapter.diff.is_empty() {
                            p.diff {
                                @for run in &chapter.diff {
                                    @match run.op {
                                        Op::Insert => ins { (run.text) },
                                        Op::Delete => del { (run.text) },
                                        Op::Equal => span { (run.text) },
                                    }
                                }
                            }
                        }
                    }
                }
            }
            @if !report.warnings.new.is_empty() || !report.warnings.gone.is_empty() {
                section aria-labelledby="warning-changes-title" {
                    h2 #warning-changes-title { "Warnings" }
                    @if !report.warnings.new.is_empty() {
                        h3 { "New" }
                        ul { @for w in &report.warnings.new { li data-code=(w.code) { (w.message) } } }
                    }
                    @if !report.warnings.gone.is_empty() {
                        h3 { "Gone" }
                        ul { @for w in &report.warnings.gone { li data-code=(w.code) { (w.message) } } }
                    }
                }
            }
    }
}

/// A changed chapter's status, in words.
fn chapter_status(status: ChapterStatus) -> &'static str {
    match status {
        ChapterStatus::Added => "Added",
        ChapterStatus::Removed => "Removed",
        ChapterStatus::Changed => "Changed",
        ChapterStatus::Unchanged => "Same text",
    }
}

/// The book's versions, newest first, and the form that sends the next: open when the book
/// failed, since a corrected manuscript is what mends it.
fn versions_section(
    state: &AppState,
    book: &BookView,
    revisions: &[books::RevisionRow],
    styles: &[Offered],
) -> Markup {
    html! {
        // A version building beside the one readers get: the page follows it (book.js).
        section.versions aria-labelledby="versions-title"
            data-building=[revisions.iter().find(|r| r.status == books::RevisionStatus::Processing
                && r.id.number != book.revision).map(|r| r.id.number)] {
            h2 #versions-title { "Versions" }
            @if revisions.len() > 1 {
                ul.versions {
                    @for revision in revisions {
                        li data-revision=(revision.id.number) data-status=(revision.status) {
                            "Version " (revision.id.number) " · " (revision.file_name)
                            " · " (readable_time(revision.created_at)) " · "
                            @if revision.id.number == book.revision {
                                strong { "current" }
                            } @else {
                                (revision_state(revision.status))
                            }
                            // What it changed, from the built version before it (stored as it
                            // was published, so whether or not either keeps its files).
                            @if revision.status == books::RevisionStatus::Ready
                                && revisions.iter().any(|r| r.id.number < revision.id.number
                                    && r.status == books::RevisionStatus::Ready) {
                                " · " a href={ "/books/" (book.id) "/revisions/" (revision.id.number) "/changes" } { "What changed" }
                            }
                            @if let Some(error) = revision.error.as_ref().filter(|_| revision.id.number != book.revision) {
                                " " span.meta { (error) }
                                // The newest version's steps ran out of attempts: it can go on.
                                @if revision.error_code.as_deref() == Some(books::STEP_FAILED)
                                    && Some(revision.id.number) == revisions.first().map(|r| r.id.number) {
                                    form.inline data-api="POST" data-url={ "/api/v1/books/" (book.id) "/retry" } data-then="reload" {
                                        button.secondary type="submit" { "Retry version " (revision.id.number) }
                                    }
                                    p.error role="alert" hidden {}
                                }
                            }
                        }
                    }
                }
            } @else {
                p.meta { "One version so far: the upload that made the book." }
            }
            details #new-version open[book.status == BookStatus::Failed] {
                summary { "Upload a new version" }
                p.hint { "The book keeps its links, its catalog entry and its EPUB identifier. Until the new version is ready, readers get this one." }
                (upload_form(state, Some(&book.id), styles))
            }
        }
    }
}

/// What became of a version that is not the current one, in words.
fn revision_state(status: books::RevisionStatus) -> &'static str {
    match status {
        books::RevisionStatus::Uploading | books::RevisionStatus::Processing => "building",
        books::RevisionStatus::Ready => "an earlier version",
        books::RevisionStatus::Failed => "failed",
        books::RevisionStatus::Cancelled => "superseded before it was built",
    }
}

/// The book's own log lines, folded away unless the book failed (when they say why).
fn log_section(log: &[BookLogLine], open: bool) -> Markup {
    let count = log.len();
    html! {
        section.book-log aria-labelledby="log-title" {
            h2 #log-title { "Log" }
            @if log.is_empty() {
                p.meta { "No log lines yet." }
            } @else {
                details open[open] {
                    summary {
                        @if i64::try_from(count).unwrap_or(i64::MAX) >= book_log::LINES_DEFAULT { "The last " }
                        (count) " line" @if count != 1 { "s" }
                    }
                    ol.log-lines {
                        @for line in log {
                            li data-level=(line.level) {
                                time datetime=(line.timestamp) { (clock_time(&line.timestamp)) }
                                " " span.level { (line.level) }
                                " " span.role { (line.role) }
                                " " span.message { (line.message) }
                                @for (key, value) in &line.fields {
                                    " " span.field {
                                        (key) "="
                                        @match value {
                                            serde_json::Value::String(text) => (text),
                                            other => (other),
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// `HH:MM:SS.mmm` of an RFC 3339 timestamp: the lines of one book span minutes, not days.
fn clock_time(timestamp: &str) -> &str {
    timestamp.get(11..23).unwrap_or(timestamp)
}

fn display_title(book: &BookView) -> String {
    book.title.clone().unwrap_or_else(|| book.file_name.clone())
}

/// A count with thousands grouped, as English prose writes it (50,401).
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A time as a person reads it: to the minute, in UTC.
fn readable_time(time: DateTime<Utc>) -> String {
    time.format("%-d %b %Y, %H:%M UTC").to_string()
}

fn status_badge(status: BookStatus) -> Markup {
    let text = match status {
        BookStatus::Ready => "ready",
        BookStatus::Failed => "failed",
        BookStatus::Processing => "converting",
    };
    html! { span.badge data-status=(status.as_str()) { (text) } }
}

fn step_state_text(state: StepState, done: usize, total: usize, message: Option<&str>) -> String {
    let base = match state {
        StepState::Completed => "done".to_owned(),
        StepState::Failed => "failed".to_owned(),
        StepState::Running if total > 1 => format!("{done} of {total}"),
        StepState::Running => "working".to_owned(),
        StepState::Queued if total > 1 => format!("queued: {done} of {total} done"),
        StepState::Queued => "queued".to_owned(),
        StepState::Pending => "waiting".to_owned(),
        StepState::Skipped => "skipped".to_owned(),
    };
    match message {
        Some(m) if state == StepState::Running => format!("{base}: {m}"),
        _ => base,
    }
}

/// The book's cover, small, or a blank of the same size while it has none.
fn cover_thumbnail(book: &BookView) -> Markup {
    html! {
        @if let Some(cover) = &book.links.cover {
            img.cover-thumb src=(cover) alt="" width="80" height="120" loading="lazy";
        } @else {
            span.cover-thumb.no-cover aria-hidden="true" {}
        }
    }
}

/// Read and Download for a ready book; in the list, each names its book for screen readers.
fn book_actions(book: &BookView, in_list: bool) -> Markup {
    let title = display_title(book);
    html! {
        @if book.status == BookStatus::Ready {
            p.actions {
                @if let Some(reader) = &book.links.reader {
                    a.button href=(reader) id=[(!in_list).then_some("open-reader")] {
                        "Read" @if in_list { span.visually-hidden { " " (title) } } @else { " in the browser" }
                    }
                }
                @if let Some(epub) = &book.links.epub {
                    a.button.secondary href=(epub.trim_start_matches("/api/v1")) download id=[(!in_list).then_some("download-epub")] {
                        "Download EPUB" @if in_list { span.visually-hidden { " of " (title) } }
                    }
                }
                // The print edition on the book's own page only: a list offers what most want.
                @if !in_list {
                    @if let Some(cover) = &book.links.store_cover {
                        a.button.secondary href=(cover.trim_start_matches("/api/v1")) download id="download-store-cover" {
                            "Cover for stores (JPEG)"
                        }
                    }
                    @if let Some(pdf) = &book.links.pdf {
                        a.button.secondary href=(pdf.trim_start_matches("/api/v1")) download id="download-pdf" {
                            "Print edition (PDF)"
                        }
                    }
                    @if let Some(cover) = &book.links.print_cover {
                        a.button.secondary href=(cover.trim_start_matches("/api/v1")) download id="download-print-cover" {
                            "Print cover (PDF)"
                        }
                    }
                }
            }
        }
    }
}

fn steps_list(progress: &Progress) -> Markup {
    html! {
        ol.steps {
            @for step in &progress.steps {
                li data-step=(step.step) data-state=(step.state.as_str()) {
                    label for={ "step-" (step.step) } { (step.label) }
                    progress id={ "step-" (step.step) } max="100" value=(step.percent) {}
                    span.step-state { (step_state_text(step.state, step.done, step.total, step.message.as_deref())) }
                }
            }
        }
    }
}

/// "All 8 steps done in 4 s": a ready book's conversion in one line.
fn finished_summary(book: &BookView, steps: usize) -> String {
    let took = book
        .published_at
        .map(|at| (at - book.created_at).num_milliseconds().max(0))
        .map(|ms| {
            let rounded =
                std::time::Duration::from_secs(u64::try_from((ms + 999) / 1000).unwrap_or(0));
            format!(" in {}", humantime::format_duration(rounded))
        })
        .unwrap_or_default();
    format!("All {steps} steps done{took}")
}

/// A metadata field as the form names it.
fn field_label(field: &str) -> &str {
    match field {
        "title" => "Title",
        "subtitle" => "Subtitle",
        "authors" => "Author",
        "language" => "Language",
        "isbn" => "ISBN",
        "publisher" => "Publisher",
        "date" => "Publication date",
        "series" => "Series",
        "series_number" => "Number in series",
        "subjects" => "Subjects",
        "rights" => "Rights",
        other => other,
    }
}

/// Where a metadata value came from, in words.
fn source_label(source: &str) -> &str {
    match source {
        "manuscript" => "from the manuscript",
        "upload" => "from the upload form",
        "file_name" => "from the file name",
        "default" => "the default",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::grouped;

    #[test]
    fn counts_are_grouped_by_thousands() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(50_401), "50,401");
        assert_eq!(grouped(1_010_000), "1,010,000");
    }
}
