//! XHTML pages of the package: the shell every page shares, and the cover, title and
//! copyright pages Bindery writes itself.

use std::fmt::Write as _;

use crate::ebook::Book;
use crate::ebook::xhtml::chapter_label;
use crate::ebook::xhtml::escape::{collapse, escaped, escaped_attr};
use crate::labels::Key;
use crate::language::{self, DEFAULT_LANGUAGE, Direction};

/// The book's language as a tag safe to write anywhere.
pub fn book_language(book: &Book) -> String {
    language::normalize(&book.metadata.language).unwrap_or_else(|| DEFAULT_LANGUAGE.to_owned())
}

/// The book's title, never empty.
pub fn book_title(book: &Book) -> String {
    match collapse(&book.metadata.title) {
        t if t.is_empty() => "Untitled".to_owned(),
        t => t,
    }
}

fn authors(book: &Book) -> Vec<String> {
    book.metadata
        .authors
        .iter()
        .map(|a| collapse(a))
        .filter(|a| !a.is_empty())
        .collect()
}

/// "A", "A and B", "A, B and C", in the book's language.
fn join_names(book: &Book, names: &[String]) -> String {
    book.metadata.labels().join(names)
}

/// ` dir="rtl"` for a book whose language is written right to left, else nothing (left to
/// right is every document's default, and English books keep their bytes).
pub fn dir_attribute(book: &Book) -> &'static str {
    match Direction::of(&book_language(book)) {
        Direction::RightToLeft => " dir=\"rtl\"",
        Direction::LeftToRight => "",
    }
}

/// A complete XHTML document around `body` (already markup). `body_type` is the body's
/// `epub:type`, if any.
pub fn page(book: &Book, title: &str, body_type: &str, body: &str) -> String {
    let lang = book_language(book);
    let dir = dir_attribute(book);
    let mut out = String::with_capacity(body.len() + 512);
    out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE html>\n");
    let _ = writeln!(
        out,
        "<html xmlns=\"http://www.w3.org/1999/xhtml\" xmlns:epub=\"http://www.idpf.org/2007/ops\" lang=\"{lang}\" xml:lang=\"{lang}\"{dir}>"
    );
    let title = match collapse(title) {
        t if t.is_empty() => book_title(book),
        t => t,
    };
    let _ = writeln!(
        out,
        "<head>\n<title>{}</title>\n<link rel=\"stylesheet\" type=\"text/css\" href=\"css/book.css\"/>\n</head>",
        escaped(&title)
    );
    if body_type.is_empty() {
        out.push_str("<body>\n");
    } else {
        let _ = writeln!(out, "<body epub:type=\"{body_type}\">");
    }
    out.push_str(body);
    out.push_str("</body>\n</html>\n");
    out
}

/// Chapter `index` with its rendered body.
pub fn chapter_page(book: &Book, index: usize, body: &str) -> String {
    let matter = match book.document.chapters.get(index).map(|c| c.division) {
        Some(d) if d.is_front_matter() => "frontmatter",
        Some(d) if d.is_back_matter() => "backmatter",
        _ => "bodymatter",
    };
    page(book, &chapter_label(book, index), matter, body)
}

pub fn cover_page(book: &Book, href: &str) -> String {
    let labels = book.metadata.labels();
    let names = join_names(book, &authors(book));
    let title = book_title(book);
    let alt = if names.is_empty() {
        labels.fill(Key::CoverOf, &[("title", &title)])
    } else {
        labels.fill(Key::CoverOfBy, &[("title", &title), ("authors", &names)])
    };
    let body = format!(
        "<div class=\"cover\"><img role=\"doc-cover\" src=\"{}\" alt=\"{}\"/></div>\n",
        escaped_attr(href),
        escaped_attr(&alt)
    );
    page(book, labels.get(Key::Cover), "cover", &body)
}

pub fn title_page(book: &Book) -> String {
    let m = &book.metadata;
    let labels = m.labels();
    let mut body = format!(
        "<section epub:type=\"titlepage\" class=\"titlepage\" aria-label=\"{}\">\n",
        escaped_attr(labels.get(Key::TitlePage))
    );
    let _ = writeln!(
        body,
        "<h1 class=\"title\">{}</h1>",
        escaped(&book_title(book))
    );
    if let Some(subtitle) = m
        .subtitle
        .as_deref()
        .map(collapse)
        .filter(|s| !s.is_empty())
    {
        let _ = writeln!(body, "<p class=\"subtitle\">{}</p>", escaped(&subtitle));
    }
    for author in authors(book) {
        let _ = writeln!(body, "<p class=\"author\">{}</p>", escaped(&author));
    }
    if let Some(publisher) = m
        .publisher
        .as_deref()
        .map(collapse)
        .filter(|s| !s.is_empty())
    {
        let _ = writeln!(body, "<p class=\"publisher\">{}</p>", escaped(&publisher));
    }
    body.push_str("</section>\n");
    page(book, labels.get(Key::TitlePage), "frontmatter", &body)
}

/// The copyright section's `id`, on the EPUB's copyright page and the web reader's contents
/// page alike: where an advance reader copy's line goes (`advance_copies::stamp`), at its end.
pub const COPYRIGHT_ID: &str = "copyright";

pub fn copyright_page(book: &Book) -> String {
    let labels = book.metadata.labels();
    let mut body = format!(
        "<section id=\"{COPYRIGHT_ID}\" epub:type=\"copyright-page\" class=\"copyright\" aria-label=\"{}\">\n",
        escaped_attr(labels.get(Key::Copyright))
    );
    for line in copyright_lines(book) {
        let _ = writeln!(body, "<p>{}</p>", escaped(&line));
    }
    body.push_str("</section>\n");
    page(book, labels.get(Key::Copyright), "frontmatter", &body)
}

/// What the ebooks' copyright page says, a paragraph a line, as plain text: the title and
/// authors, the rights, the ISBN or identifier, the publisher and date, and Bindery.
pub fn copyright_lines(book: &Book) -> Vec<String> {
    let m = &book.metadata;
    let labels = m.labels();
    let mut lines = Vec::new();
    let mut title = book_title(book);
    if let Some(subtitle) = m
        .subtitle
        .as_deref()
        .map(collapse)
        .filter(|s| !s.is_empty())
    {
        title = format!("{title}: {subtitle}");
    }
    let names = join_names(book, &authors(book));
    if names.is_empty() {
        lines.push(title);
    } else {
        lines.push(labels.fill(Key::TitleBy, &[("title", &title), ("authors", &names)]));
    }
    let rights = m.rights.as_deref().map(collapse).filter(|s| !s.is_empty());
    lines.push(rights.unwrap_or_else(|| labels.get(Key::AllRightsReserved).to_owned()));
    match &m.isbn {
        Some(isbn) => lines.push(format!("ISBN {isbn}")),
        None => {
            lines.push(labels.fill(Key::Identifier, &[("identifier", &collapse(&m.identifier))]))
        }
    }
    let publisher = m
        .publisher
        .as_deref()
        .map(collapse)
        .filter(|s| !s.is_empty());
    match (publisher, &m.date) {
        (Some(p), Some(d)) => {
            lines.push(labels.fill(Key::PublishedByOn, &[("publisher", &p), ("date", d)]))
        }
        (Some(p), None) => lines.push(labels.fill(Key::PublishedBy, &[("publisher", &p)])),
        (None, Some(d)) => lines.push(labels.fill(Key::PublishedOn, &[("date", d)])),
        (None, None) => {}
    }
    lines.push(labels.get(Key::MadeWithBindery).to_owned());
    lines
}
