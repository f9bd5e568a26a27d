//! XHTML pages of the package: the shell every page shares, and the cover, title and
//! copyright pages Bindery writes itself.

use std::fmt::Write as _;

use crate::ebook::Book;
use crate::ebook::xhtml::chapter_label;
use crate::ebook::xhtml::escape::{collapse, escaped, escaped_attr};
use crate::language::{self, DEFAULT_LANGUAGE};

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

/// "A", "A and B", "A, B and C".
fn join_names(names: &[String]) -> String {
    match names {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// A complete XHTML document around `body` (already markup). `body_type` is the body's
/// `epub:type`, if any.
pub fn page(book: &Book, title: &str, body_type: &str, body: &str) -> String {
    let lang = book_language(book);
    let mut out = String::with_capacity(body.len() + 512);
    out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE html>\n");
    let _ = writeln!(
        out,
        "<html xmlns=\"http://www.w3.org/1999/xhtml\" xmlns:epub=\"http://www.idpf.org/2007/ops\" lang=\"{lang}\" xml:lang=\"{lang}\">"
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
    let names = join_names(&authors(book));
    let alt = if names.is_empty() {
        format!("Cover of {}", book_title(book))
    } else {
        format!("Cover of {} by {names}", book_title(book))
    };
    let body = format!(
        "<div class=\"cover\"><img role=\"doc-cover\" src=\"{}\" alt=\"{}\"/></div>\n",
        escaped_attr(href),
        escaped_attr(&alt)
    );
    page(book, "Cover", "cover", &body)
}

pub fn title_page(book: &Book) -> String {
    let m = &book.metadata;
    let mut body = String::from(
        "<section epub:type=\"titlepage\" class=\"titlepage\" aria-label=\"Title page\">\n",
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
    page(book, "Title Page", "frontmatter", &body)
}

pub fn copyright_page(book: &Book) -> String {
    let m = &book.metadata;
    let mut body = String::from(
        "<section epub:type=\"copyright-page\" class=\"copyright\" aria-label=\"Copyright\">\n",
    );
    let mut para = |text: &str| {
        let _ = writeln!(body, "<p>{}</p>", escaped(text));
    };
    let mut title = book_title(book);
    if let Some(subtitle) = m
        .subtitle
        .as_deref()
        .map(collapse)
        .filter(|s| !s.is_empty())
    {
        title = format!("{title}: {subtitle}");
    }
    let names = join_names(&authors(book));
    if names.is_empty() {
        para(&title);
    } else {
        para(&format!("{title}, by {names}"));
    }
    let rights = m.rights.as_deref().map(collapse).filter(|s| !s.is_empty());
    para(rights.as_deref().unwrap_or("All rights reserved."));
    match &m.isbn {
        Some(isbn) => para(&format!("ISBN {isbn}")),
        None => para(&format!("Identifier: {}", collapse(&m.identifier))),
    }
    let publisher = m
        .publisher
        .as_deref()
        .map(collapse)
        .filter(|s| !s.is_empty());
    match (publisher, &m.date) {
        (Some(p), Some(d)) => para(&format!("Published by {p}, {d}.")),
        (Some(p), None) => para(&format!("Published by {p}.")),
        (None, Some(d)) => para(&format!("Published {d}.")),
        (None, None) => {}
    }
    para("Made with Bindery.");
    body.push_str("</section>\n");
    page(book, "Copyright", "frontmatter", &body)
}
