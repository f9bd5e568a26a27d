//! Navigation: the EPUB 3 navigation document (table of contents, landmarks and, when the
//! book marks a print edition's pages, the page list) and the EPUB 2 NCX, both from one
//! tree: chapters, their sub-headings, and chapters grouped under the parts that precede them.

use std::fmt::Write as _;

use super::Manifest;
use super::pages::{book_language, page};
use crate::document::{Block, Division, inline_text};
use crate::ebook::Book;
use crate::ebook::xhtml::escape::{collapse, escaped, escaped_attr};
use crate::ebook::xhtml::ids::IdPlan;
use crate::ebook::xhtml::{Target, chapter_file_name, chapter_label, is_blank, printed_pages};
use crate::labels::Key;

/// One entry of the table of contents.
#[derive(Debug, Clone, PartialEq)]
pub struct NavPoint {
    pub label: String,
    pub href: String,
    pub children: Vec<NavPoint>,
}

/// The table of contents: every chapter, its headings below the chapter's own, and
/// chapters nested under the part they belong to.
pub fn toc(book: &Book) -> Vec<NavPoint> {
    let plan = IdPlan::new(&book.document);
    let mut top: Vec<NavPoint> = Vec::new();
    let mut in_part = false;
    for (i, chapter) in book.document.chapters.iter().enumerate() {
        let file = chapter_file_name(i, Target::Epub);
        let point = NavPoint {
            label: chapter_label(book, i),
            href: file.clone(),
            children: sub_headings(&chapter.blocks, &plan, &file),
        };
        let division = chapter.division;
        if division == Division::Part {
            in_part = true;
        } else if division.is_back_matter() || division.is_front_matter() {
            in_part = false;
        }
        match top.last_mut() {
            Some(part) if in_part && division != Division::Part => part.children.push(point),
            _ => top.push(point),
        }
    }
    top
}

/// The page list: every printed page's marker, in reading order ([`printed_pages`]).
pub fn page_list(book: &Book) -> Vec<NavPoint> {
    printed_pages(book, Target::Epub)
        .into_iter()
        .map(|page| NavPoint {
            label: page.label,
            href: page.href,
            children: Vec::new(),
        })
        .collect()
}

/// Headings of a chapter after its leading title, nested by level.
fn sub_headings(blocks: &[Block], plan: &IdPlan, file: &str) -> Vec<NavPoint> {
    let mut flat = Vec::new();
    // The chapter's leading heading is its title: the chapter's own entry.
    let titled =
        matches!(blocks.first(), Some(Block::Heading { content, .. }) if !is_blank(content));
    for block in blocks.iter().skip(usize::from(titled)) {
        let Block::Heading { level, content, .. } = block else {
            continue;
        };
        let label = collapse(&inline_text(content));
        if let (Some(id), false) = (plan.node_id(block), label.is_empty()) {
            flat.push((
                *level,
                NavPoint {
                    label,
                    href: format!("{file}#{id}"),
                    children: Vec::new(),
                },
            ));
        }
    }
    nest(&mut flat.into_iter().peekable())
}

/// Nests a flat run of `(level, point)`: each point takes the deeper points after it.
fn nest(items: &mut std::iter::Peekable<impl Iterator<Item = (u8, NavPoint)>>) -> Vec<NavPoint> {
    let mut out = Vec::new();
    while let Some((level, mut point)) = items.next() {
        let mut deeper = Vec::new();
        while let Some((l, _)) = items.peek() {
            if *l <= level {
                break;
            }
            if let Some(item) = items.next() {
                deeper.push(item);
            }
        }
        point.children = nest(&mut deeper.into_iter().peekable());
        out.push(point);
    }
    out
}

/// `nav.xhtml`. `pages` is [`page_list`]: without pages, no page list.
pub fn nav_document(book: &Book, manifest: &Manifest, pages: &[NavPoint]) -> String {
    let labels = book.metadata.labels();
    let word = |key: Key| escaped(labels.get(key));
    let mut body = String::new();
    let _ = writeln!(
        body,
        "<nav epub:type=\"toc\" role=\"doc-toc\" id=\"toc\">\n<h1>{}</h1>",
        word(Key::Contents)
    );
    let points = toc(book);
    if points.is_empty() {
        // A navigation list may not be empty; the title page is always there.
        let _ = writeln!(
            body,
            "<ol>\n<li><a href=\"titlepage.xhtml\">{}</a></li>\n</ol>",
            word(Key::TitlePage)
        );
    } else {
        nav_list(&mut body, &points);
    }
    body.push_str("</nav>\n");
    let _ = writeln!(
        body,
        "<nav epub:type=\"landmarks\" id=\"landmarks\" hidden=\"hidden\">\n<h2>{}</h2>\n<ol>",
        word(Key::Landmarks)
    );
    let mut landmark = |kind: &str, href: &str, key: Key| {
        let label = word(key);
        let _ = writeln!(
            body,
            "<li><a epub:type=\"{kind}\" href=\"{href}\">{label}</a></li>"
        );
    };
    if manifest.cover.is_some() {
        landmark("cover", "cover.xhtml", Key::Cover);
    }
    landmark("titlepage", "titlepage.xhtml", Key::TitlePage);
    landmark("toc", "nav.xhtml#toc", Key::Contents);
    if let Some(start) = body_start(book) {
        landmark(
            "bodymatter",
            &chapter_file_name(start, Target::Epub),
            Key::StartOfContent,
        );
    }
    landmark("copyright-page", "copyright.xhtml", Key::Copyright);
    body.push_str("</ol>\n</nav>\n");
    if !pages.is_empty() {
        // Hidden like the landmarks: reading systems offer it as their "go to page".
        let _ = writeln!(
            body,
            "<nav epub:type=\"page-list\" role=\"doc-pagelist\" id=\"page-list\" aria-labelledby=\"page-list-heading\" hidden=\"hidden\">\n<h2 id=\"page-list-heading\">{}</h2>",
            word(Key::Pages)
        );
        nav_list(&mut body, pages);
        body.push_str("</nav>\n");
    }
    page(book, labels.get(Key::Contents), "", &body)
}

/// Where reading starts: the first chapter that is not front matter.
pub fn body_start(book: &Book) -> Option<usize> {
    let chapters = &book.document.chapters;
    chapters
        .iter()
        .position(|c| !c.division.is_front_matter())
        .or_else(|| (!chapters.is_empty()).then_some(0))
}

fn nav_list(out: &mut String, points: &[NavPoint]) {
    out.push_str("<ol>\n");
    for point in points {
        let _ = write!(
            out,
            "<li><a href=\"{}\">{}</a>",
            escaped_attr(&point.href),
            escaped(&point.label)
        );
        if !point.children.is_empty() {
            out.push('\n');
            nav_list(out, &point.children);
        }
        out.push_str("</li>\n");
    }
    out.push_str("</ol>\n");
}

/// `toc.ncx`, for EPUB 2 reading systems.
pub fn ncx(book: &Book) -> String {
    let points = toc(book);
    let depth = max_depth(&points).max(1);
    let mut out = String::new();
    out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<ncx xmlns=\"http://www.daisy.org/z3986/2005/ncx/\" version=\"2005-1\" xml:lang=\"{}\">",
        book_language(book)
    );
    let _ = writeln!(
        out,
        "<head>\n<meta name=\"dtb:uid\" content=\"{}\"/>\n<meta name=\"dtb:depth\" content=\"{depth}\"/>\n<meta name=\"dtb:totalPageCount\" content=\"0\"/>\n<meta name=\"dtb:maxPageNumber\" content=\"0\"/>\n</head>",
        escaped_attr(&book.metadata.identifier)
    );
    let title = match collapse(&book.metadata.title) {
        t if t.is_empty() => "Untitled".to_owned(),
        t => t,
    };
    let _ = writeln!(out, "<docTitle><text>{}</text></docTitle>", escaped(&title));
    out.push_str("<navMap>\n");
    let mut order = 0;
    if points.is_empty() {
        let _ = writeln!(
            out,
            "<navPoint id=\"np-1\" playOrder=\"1\"><navLabel><text>{}</text></navLabel><content src=\"titlepage.xhtml\"/></navPoint>",
            escaped(book.metadata.labels().get(Key::TitlePage))
        );
    }
    ncx_points(&mut out, &points, &mut order);
    out.push_str("</navMap>\n</ncx>\n");
    out
}

fn ncx_points(out: &mut String, points: &[NavPoint], order: &mut usize) {
    for point in points {
        *order += 1;
        let _ = writeln!(
            out,
            "<navPoint id=\"np-{order}\" playOrder=\"{order}\"><navLabel><text>{}</text></navLabel><content src=\"{}\"/>",
            escaped(&point.label),
            escaped_attr(&point.href)
        );
        ncx_points(out, &point.children, order);
        out.push_str("</navPoint>\n");
    }
}

fn max_depth(points: &[NavPoint]) -> usize {
    points
        .iter()
        .map(|p| 1 + max_depth(&p.children))
        .max()
        .unwrap_or(0)
}
