//! One chapter as markup: the body of an EPUB XHTML file or of a web reader page.
//!
//! The markup is polyglot: well-formed XML that is also valid HTML5, with no inline styles
//! and no scripts (the web reader runs under a strict CSP), so presentation is all classes
//! in [`STYLESHEET`]. `epub:type` is written for EPUB only; HTML5 does not know it.

pub(crate) mod escape;
#[cfg(test)]
pub(crate) mod fixture;
pub(crate) mod ids;

use std::fmt::Write as _;

use super::Book;
use crate::document::{
    Align, Block, Cell, Definition, Division, Image, Inline, LinkTarget, ListKind, Math, Table,
};
use crate::labels::Key;
use crate::language::{self, Direction};
use crate::report::Warning;
use crate::style::opening;
use escape::{attr, collapse, escaped, text};
use ids::IdPlan;

/// The default stylesheet, shared by the EPUB (`css/book.css`) and the web reader.
pub const STYLESHEET: &str = include_str!("stylesheet.css");

/// Where the markup goes; internal links and file names differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Epub,
    Web,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct RenderedChapter {
    /// A well-formed XHTML fragment (the chapter's `<section>` and its notes), valid in both
    /// XHTML and HTML5.
    pub body: String,
    pub warnings: Vec<Warning>,
}

/// File name of chapter `index` (0-based) in the EPUB (`chapter-001.xhtml`) or the reader.
pub fn chapter_file_name(index: usize, target: Target) -> String {
    match target {
        Target::Epub => format!("chapter-{:03}.xhtml", index + 1),
        Target::Web => format!("chapter-{:03}.html", index + 1),
    }
}

/// The chapter's name for navigation and `<title>`: its title with its subtitle ("I: A
/// Letter with a Postscript", see [`chapter_subtitle`]), or for an untitled chapter a label
/// from its division ("Chapter 3", "Prologue"), or the book's title when the book is a single
/// untitled chapter.
pub fn chapter_label(book: &Book, index: usize) -> String {
    let title = chapter_title(book, index);
    match chapter_subtitle(book, index) {
        Some(subtitle) => format!("{title}: {subtitle}"),
        None => title,
    }
}

/// The line under a chapter's numbering heading that names it (`document::chapters::subtitle`).
pub fn chapter_subtitle(book: &Book, index: usize) -> Option<String> {
    book.document
        .chapters
        .get(index)
        .and_then(crate::document::chapters::subtitle)
}

/// [`chapter_label`] without the subtitle.
pub fn chapter_title(book: &Book, index: usize) -> String {
    let chapters = &book.document.chapters;
    let Some(chapter) = chapters.get(index) else {
        return String::new();
    };
    let title = collapse(&chapter.title);
    if !title.is_empty() {
        return title;
    }
    let book_title = collapse(&book.metadata.title);
    if chapters.len() == 1 && !book_title.is_empty() {
        return book_title;
    }
    let nth = chapters[..=index]
        .iter()
        .filter(|c| c.division == chapter.division)
        .count();
    let labels = book.metadata.labels();
    match division_label(chapter.division) {
        key @ (Key::Chapter | Key::Part | Key::Appendix) => {
            labels.fill(key, &[("n", &nth.to_string())])
        }
        key => labels.get(key).to_owned(),
    }
}

/// The label that names an untitled chapter of a division (`Chapter {n}`, `Prologue`).
pub fn division_label(division: Division) -> Key {
    match division {
        Division::Dedication => Key::Dedication,
        Division::Epigraph => Key::Epigraph,
        Division::Foreword => Key::Foreword,
        Division::Preface => Key::Preface,
        Division::Introduction => Key::Introduction,
        Division::Prologue => Key::Prologue,
        Division::Chapter => Key::Chapter,
        Division::Part => Key::Part,
        Division::Epilogue => Key::Epilogue,
        Division::Afterword => Key::Afterword,
        Division::Acknowledgments => Key::Acknowledgments,
        Division::Appendix => Key::Appendix,
        Division::Glossary => Key::Glossary,
        Division::Bibliography => Key::Bibliography,
        Division::Endnotes => Key::Notes,
    }
}

/// The `epub:type` and DPUB-ARIA role of a division's `<section>`.
pub fn division_semantics(division: Division) -> (&'static str, &'static str) {
    match division {
        Division::Dedication => ("dedication", "doc-dedication"),
        Division::Epigraph => ("epigraph", "doc-epigraph"),
        Division::Foreword => ("foreword", "doc-foreword"),
        Division::Preface => ("preface", "doc-preface"),
        Division::Introduction => ("introduction", "doc-introduction"),
        Division::Prologue => ("prologue", "doc-prologue"),
        Division::Chapter => ("chapter", "doc-chapter"),
        Division::Part => ("part", "doc-part"),
        Division::Epilogue => ("epilogue", "doc-epilogue"),
        Division::Afterword => ("afterword", "doc-afterword"),
        Division::Acknowledgments => ("acknowledgments", "doc-acknowledgments"),
        Division::Appendix => ("appendix", "doc-appendix"),
        Division::Glossary => ("glossary", "doc-glossary"),
        Division::Bibliography => ("bibliography", "doc-bibliography"),
        Division::Endnotes => ("endnotes", "doc-endnotes"),
    }
}

/// An image the book may show: declared in the document, with a file name safe in a URL
/// and a media type every EPUB reading system supports.
pub fn usable_image<'b>(book: &'b Book, id: &str) -> Option<&'b Image> {
    let safe = !id.is_empty()
        && !id.starts_with('.')
        && id.len() <= 128
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    let core = |t: &str| {
        matches!(
            t,
            "image/jpeg" | "image/png" | "image/gif" | "image/webp" | "image/svg+xml"
        )
    };
    book.document
        .images
        .iter()
        .find(|image| image.id == id)
        .filter(|image| safe && core(&image.media_type))
}

/// A printed page the book marks: its folio and where its marker is (`chapter-003.xhtml#page-12`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrintedPage {
    pub label: String,
    pub href: String,
}

/// Every printed page's marker ([`Inline::PrintPage`]) in reading order, with its link for
/// `target`: the EPUB's page list and the reader's "go to page". Empty for a book that marks
/// no print edition.
pub fn printed_pages(book: &Book, target: Target) -> Vec<PrintedPage> {
    let plan = IdPlan::new(&book.document);
    let mut pages = Vec::new();
    for (i, chapter) in book.document.chapters.iter().enumerate() {
        let file = chapter_file_name(i, target);
        ids::visit_blocks(&chapter.blocks, &mut |node| {
            if let ids::Node::Inline(marker @ Inline::PrintPage(label)) = node
                && let Some(id) = plan.node_id(marker)
            {
                pages.push(PrintedPage {
                    label: collapse(label),
                    href: format!("{file}#{id}"),
                });
            }
        });
    }
    pages
}

/// Renders chapter `index` of `book`.
///
/// Each call plans the ids of the whole book (links cross chapters); to render every
/// chapter of a long book, [`render_book`] plans once.
pub fn render_chapter(book: &Book, index: usize, target: Target) -> RenderedChapter {
    render_planned(book, &IdPlan::new(&book.document), index, target)
}

/// Every chapter of `book`, in order: the same as calling [`render_chapter`] for each.
pub fn render_book(book: &Book, target: Target) -> Vec<RenderedChapter> {
    let plan = IdPlan::new(&book.document);
    (0..book.document.chapters.len())
        .map(|i| render_planned(book, &plan, i, target))
        .collect()
}

/// A book with its ids planned once, for rendering its chapters one at a time (the
/// pipeline's per-chapter jobs share one through the worker's cache).
#[derive(Debug)]
pub struct PlannedBook {
    pub book: Book,
    plan: IdPlan,
}

impl PlannedBook {
    pub fn new(book: Book) -> Self {
        let plan = IdPlan::new(&book.document);
        PlannedBook { book, plan }
    }

    /// The same as [`render_chapter`]`(&self.book, index, target)`, without re-planning.
    pub fn render(&self, index: usize, target: Target) -> RenderedChapter {
        render_planned(&self.book, &self.plan, index, target)
    }
}

fn render_planned(book: &Book, plan: &IdPlan, index: usize, target: Target) -> RenderedChapter {
    let Some(chapter) = book.document.chapters.get(index) else {
        return RenderedChapter::default();
    };
    let head = opening::head(
        &book.style,
        &book.metadata.language,
        &book.metadata.labels(),
        &book.document.chapters,
        index,
    );
    let mut r = Renderer {
        book,
        plan,
        chapter: index,
        target,
        out: String::new(),
        warnings: Vec::new(),
        last_level: 0,
        in_link: false,
        deferred: Vec::new(),
        heading: chapter
            .blocks
            .first()
            .filter(|b| matches!(b, Block::Heading { .. })),
        number: head.number,
        replaces_title: head.replaces_title,
        opening: opening::opening_paragraph(chapter).map(|i| &chapter.blocks[i]),
        subtitle: opening::subtitle_paragraph(chapter).map(|i| &chapter.blocks[i]),
    };
    let (epub_type, role) = division_semantics(chapter.division);
    r.out.push_str("<section");
    if target == Target::Epub {
        let _ = write!(r.out, " epub:type=\"{epub_type}\"");
    }
    let _ = write!(r.out, " role=\"{role}\" class=\"{epub_type}\"");
    let titled = chapter
        .blocks
        .iter()
        .any(|b| matches!(b, Block::Heading { content, .. } if !is_blank(content)));
    if !titled && r.number.is_none() {
        r.out.push_str(" aria-label=\"");
        attr(&mut r.out, &chapter_label(book, index));
        r.out.push('"');
    }
    r.out.push_str(">\n");
    // An untitled chapter the style numbers is headed by its number.
    if !titled && let Some(number) = r.number.take() {
        r.out.push_str("<h1><span class=\"chapter-number\">");
        text(&mut r.out, &number);
        r.out.push_str("</span></h1>\n");
        r.last_level = 1;
    }
    r.blocks(&chapter.blocks);
    r.notes();
    r.out.push_str("</section>\n");
    RenderedChapter {
        body: r.out,
        warnings: r.warnings,
    }
}

struct Renderer<'a> {
    book: &'a Book,
    plan: &'a IdPlan,
    chapter: usize,
    target: Target,
    out: String,
    warnings: Vec<Warning>,
    /// Level of the last heading written, so that levels never skip.
    last_level: u8,
    /// Links cannot nest: inside one, links render as their text and note references wait
    /// in `deferred` until the link closes.
    in_link: bool,
    deferred: Vec<&'a Inline>,
    /// The chapter's own heading, which the style heads with its number.
    heading: Option<&'a Block>,
    /// The chapter's number as the style writes it.
    number: Option<String>,
    /// The number stands in for the heading's text.
    replaces_title: bool,
    /// The paragraph that opens the chapter's text.
    opening: Option<&'a Block>,
    /// The line under a numbering heading that names the chapter, set as part of its head.
    subtitle: Option<&'a Block>,
}

impl<'a> Renderer<'a> {
    fn warn(&mut self, code: &str, message: String) {
        let location = format!("chapter {}", self.chapter + 1);
        self.warnings.push(Warning::new(code, message).at(location));
    }

    /// `href` of an element in chapter `chapter`.
    fn href(&self, chapter: usize, id: &str) -> String {
        if chapter == self.chapter {
            format!("#{id}")
        } else {
            format!("{}#{id}", chapter_file_name(chapter, self.target))
        }
    }

    fn epub_type(&mut self, value: &str) {
        if self.target == Target::Epub {
            let _ = write!(self.out, " epub:type=\"{value}\"");
        }
    }

    fn blocks(&mut self, blocks: &'a [Block]) {
        let mut after_paragraph = false;
        let mut after_break = false;
        for block in blocks {
            self.block(block, after_paragraph, after_break);
            let blank = matches!(block, Block::Paragraph { content, .. } if is_blank(content));
            let subtitle = self.subtitle.is_some_and(|s| std::ptr::eq(s, block));
            after_paragraph = matches!(block, Block::Paragraph { .. }) && !blank && !subtitle;
            if !blank {
                after_break = matches!(block, Block::SceneBreak);
            }
        }
    }

    /// The heading of a chapter, with the number the style gives it.
    fn chapter_head(&mut self, content: &'a [Inline]) {
        match self.number.take() {
            Some(number) if self.replaces_title => {
                self.out.push_str("<span class=\"chapter-number\">");
                text(&mut self.out, &number);
                self.out.push_str("</span>");
            }
            Some(number) => {
                self.out.push_str("<span class=\"chapter-number\">");
                text(&mut self.out, &number);
                self.out.push_str("</span> <span class=\"chapter-title\">");
                self.inlines(content);
                self.out.push_str("</span>");
            }
            None => {
                self.out.push_str("<span class=\"chapter-title\">");
                self.inlines(content);
                self.out.push_str("</span>");
            }
        }
    }

    /// The inlines of `content` before `cut` (`before`), or from it.
    fn cut_inlines(&mut self, content: &'a [Inline], cut: opening::Cut, before: bool) {
        let split = match content.get(cut.index) {
            Some(Inline::Text(t)) if cut.byte > 0 => Some(t.split_at(cut.byte)),
            _ => None,
        };
        if before {
            self.inlines(&content[..cut.index]);
            if let Some((head, _)) = split {
                text(&mut self.out, head);
            }
        } else {
            match split {
                Some((_, tail)) => {
                    text(&mut self.out, tail);
                    self.inlines(&content[cut.index + 1..]);
                }
                None => self.inlines(&content[cut.index..]),
            }
        }
    }

    /// Content of a list item or table cell: a lone paragraph is written as bare text.
    fn flow(&mut self, blocks: &'a [Block]) {
        match blocks {
            [Block::Paragraph { content, .. }] => self.inlines(content),
            _ => {
                self.out.push('\n');
                self.blocks(blocks);
            }
        }
    }

    fn block(&mut self, block: &'a Block, after_paragraph: bool, after_break: bool) {
        match block {
            Block::Heading { level, content, .. } => {
                if is_blank(content) {
                    self.page_markers(content);
                    return;
                }
                // A page that begins with the heading is marked before it, so the heading's
                // name is its text alone.
                let lead = content
                    .iter()
                    .take_while(|i| matches!(i, Inline::PrintPage(_)))
                    .count();
                let (markers, content) = content.split_at(lead);
                self.inlines(markers);
                let level = (*level).clamp(1, 6).min(self.last_level + 1);
                self.last_level = level;
                let _ = write!(self.out, "<h{level}");
                if let Some(id) = self.plan.node_id(block) {
                    let _ = write!(self.out, " id=\"{id}\"");
                }
                self.out.push('>');
                if self.heading.is_some_and(|h| std::ptr::eq(h, block)) {
                    self.chapter_head(content);
                } else {
                    self.inlines(content);
                }
                let _ = writeln!(self.out, "</h{level}>");
            }
            Block::Paragraph { align, content } => {
                if is_blank(content) {
                    self.page_markers(content);
                    return;
                }
                if self.subtitle.is_some_and(|s| std::ptr::eq(s, block)) {
                    self.out.push_str("<p class=\"chapter-subtitle\">");
                    self.inlines(content);
                    self.out.push_str("</p>\n");
                    return;
                }
                let mut classes: Vec<&str> = Vec::new();
                if !after_paragraph {
                    classes.push("first");
                }
                let opening = self.opening.is_some_and(|o| std::ptr::eq(o, block));
                if opening {
                    classes.push("opening");
                }
                if content.iter().any(|i| matches!(i, Inline::LineBreak)) {
                    classes.push("verse");
                }
                classes.extend(align_class(*align));
                self.out.push_str("<p");
                self.classes(&classes);
                self.out.push('>');
                let style = &self.book.style;
                let lead = if opening {
                    opening::lead_in(style)
                } else if after_break {
                    opening::lead_after_break(style)
                } else {
                    0
                };
                match opening::after_words(content, lead) {
                    Some(cut) => {
                        self.out.push_str("<span class=\"lead-in\">");
                        self.cut_inlines(content, cut, true);
                        self.out.push_str("</span>");
                        self.cut_inlines(content, cut, false);
                    }
                    None => self.inlines(content),
                }
                self.out.push_str("</p>\n");
            }
            Block::BlockQuote(inner) => {
                self.out.push_str("<blockquote>\n");
                self.blocks(inner);
                self.out.push_str("</blockquote>\n");
            }
            Block::List { kind, start, items } => self.list(*kind, *start, items),
            Block::DefinitionList(items) => self.definitions(items),
            Block::CodeBlock {
                language,
                text: code,
            } => {
                let _ = write!(self.out, "<pre class=\"code\"{}><code", self.code_dir());
                let language: String = language
                    .as_deref()
                    .unwrap_or("")
                    .chars()
                    .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '+'))
                    .take(32)
                    .collect();
                if !language.is_empty() {
                    let _ = write!(self.out, " class=\"language-{language}\"");
                }
                self.out.push('>');
                text(&mut self.out, code);
                self.out.push_str("</code></pre>\n");
            }
            Block::Table(table) => self.table(table),
            Block::Figure {
                image,
                alt,
                caption,
            } => self.figure(image, alt, caption),
            Block::SceneBreak => self.out.push_str("<hr class=\"scene-break\"/>\n"),
            Block::PageBreak => self.out.push_str("<div class=\"page-break\"></div>\n"),
        }
    }

    fn classes(&mut self, classes: &[&str]) {
        if !classes.is_empty() {
            let _ = write!(self.out, " class=\"{}\"", classes.join(" "));
        }
    }

    fn list(&mut self, kind: ListKind, start: u32, items: &'a [Vec<Block>]) {
        let (tag, class, type_attr) = match kind {
            ListKind::Bullet => ("ul", None, None),
            ListKind::Decimal => ("ol", None, None),
            ListKind::LowerAlpha => ("ol", Some("list-lower-alpha"), Some("a")),
            ListKind::UpperAlpha => ("ol", Some("list-upper-alpha"), Some("A")),
            ListKind::LowerRoman => ("ol", Some("list-lower-roman"), Some("i")),
            ListKind::UpperRoman => ("ol", Some("list-upper-roman"), Some("I")),
        };
        let _ = write!(self.out, "<{tag}");
        if let Some(class) = class {
            let _ = write!(self.out, " class=\"{class}\"");
        }
        if let Some(t) = type_attr {
            let _ = write!(self.out, " type=\"{t}\"");
        }
        if kind.is_ordered() && start != 1 {
            let _ = write!(self.out, " start=\"{start}\"");
        }
        self.out.push_str(">\n");
        for item in items {
            self.out.push_str("<li>");
            self.flow(item);
            self.out.push_str("</li>\n");
        }
        let _ = writeln!(self.out, "</{tag}>");
    }

    fn definitions(&mut self, items: &'a [Definition]) {
        self.out.push_str("<dl>\n");
        for item in items {
            self.out.push_str("<dt>");
            self.inlines(&item.term);
            self.out.push_str("</dt>\n");
            if item.definitions.is_empty() {
                // HTML requires a description after every term.
                self.out.push_str("<dd></dd>\n");
            }
            for definition in &item.definitions {
                self.out.push_str("<dd>");
                self.flow(definition);
                self.out.push_str("</dd>\n");
            }
        }
        self.out.push_str("</dl>\n");
    }

    fn table(&mut self, table: &'a Table) {
        // A caption of nothing but page markers: the markers stand before the table.
        let markers_only = only_page_markers(&table.caption);
        if markers_only {
            self.page_markers(&table.caption);
        }
        self.out.push_str("<table>\n");
        if !table.caption.is_empty() && !markers_only {
            self.out.push_str("<caption>");
            self.inlines(&table.caption);
            self.out.push_str("</caption>\n");
        }
        for (rows, section, head) in [(&table.head, "thead", true), (&table.body, "tbody", false)] {
            let rows: Vec<_> = rows.iter().filter(|r| !r.cells.is_empty()).collect();
            if rows.is_empty() {
                continue;
            }
            let _ = writeln!(self.out, "<{section}>");
            for row in rows {
                self.out.push_str("<tr>");
                for cell in &row.cells {
                    self.cell(cell, head);
                }
                self.out.push_str("</tr>\n");
            }
            let _ = writeln!(self.out, "</{section}>");
        }
        self.out.push_str("</table>\n");
    }

    fn cell(&mut self, cell: &'a Cell, head: bool) {
        let tag = if head || cell.header { "th" } else { "td" };
        let _ = write!(self.out, "<{tag}");
        if head {
            self.out.push_str(" scope=\"col\"");
        } else if cell.header {
            self.out.push_str(" scope=\"row\"");
        }
        // HTML's own limits on spans.
        if cell.colspan > 1 {
            let _ = write!(self.out, " colspan=\"{}\"", cell.colspan.min(1000));
        }
        if cell.rowspan > 1 {
            let _ = write!(self.out, " rowspan=\"{}\"", cell.rowspan.min(65534));
        }
        let class: Vec<&str> = align_class(cell.align).into_iter().collect();
        self.classes(&class);
        self.out.push('>');
        self.flow(&cell.blocks);
        let _ = write!(self.out, "</{tag}>");
    }

    fn figure(&mut self, image: &str, alt: &str, caption: &'a [Inline]) {
        let markers_only = only_page_markers(caption);
        if markers_only {
            self.page_markers(caption);
        }
        let caption: &[Inline] = if markers_only { &[] } else { caption };
        if self.image_src(image).is_none() {
            // The picture is gone; its caption is still the author's text.
            if !caption.is_empty() {
                self.out.push_str("<p class=\"caption\">");
                self.inlines(caption);
                self.out.push_str("</p>\n");
            }
            return;
        }
        self.out.push_str("<figure class=\"figure\">\n");
        self.img(image, alt, None);
        self.out.push('\n');
        if !caption.is_empty() {
            self.out.push_str("<figcaption>");
            self.inlines(caption);
            self.out.push_str("</figcaption>\n");
        }
        self.out.push_str("</figure>\n");
    }

    /// The image's `src`, or `None` (with a warning) when the book cannot show it.
    fn image_src(&mut self, id: &str) -> Option<String> {
        if usable_image(self.book, id).is_some() {
            return Some(format!("images/{id}"));
        }
        self.warn(
            "image_missing",
            format!(
                "The image {:?} is not in the manuscript or is not in a format ebooks support, so it was left out.",
                collapse(id)
            ),
        );
        None
    }

    fn img(&mut self, id: &str, alt: &str, class: Option<&str>) {
        let Some(src) = self.image_src(id) else {
            return;
        };
        let alt = collapse(alt);
        if alt.is_empty() {
            self.warn(
                "alt_missing",
                format!(
                    "The image {id} has no alternative text; readers who cannot see it will not know what it shows. Add a description to it."
                ),
            );
        }
        self.out.push_str("<img");
        if let Some(class) = class {
            let _ = write!(self.out, " class=\"{class}\"");
        }
        let _ = write!(self.out, " src=\"{src}\" alt=\"");
        attr(&mut self.out, &alt);
        self.out.push_str("\"/>");
    }

    fn inlines(&mut self, inlines: &'a [Inline]) {
        for inline in inlines {
            self.inline(inline);
        }
    }

    fn wrap(&mut self, open: &str, close: &str, content: &'a [Inline]) {
        self.out.push_str(open);
        self.inlines(content);
        self.out.push_str(close);
    }

    fn inline(&mut self, inline: &'a Inline) {
        match inline {
            Inline::Text(t) => text(&mut self.out, t),
            Inline::Emphasis(c) => self.wrap("<em>", "</em>", c),
            Inline::Strong(c) => self.wrap("<strong>", "</strong>", c),
            Inline::Underline(c) => self.wrap("<span class=\"underline\">", "</span>", c),
            Inline::Strikethrough(c) => self.wrap("<s>", "</s>", c),
            Inline::Superscript(c) => self.wrap("<sup>", "</sup>", c),
            Inline::Subscript(c) => self.wrap("<sub>", "</sub>", c),
            Inline::SmallCaps(c) => self.wrap("<span class=\"smallcaps\">", "</span>", c),
            Inline::Code(code) => {
                let _ = write!(self.out, "<code{}>", self.code_dir());
                text(&mut self.out, code);
                self.out.push_str("</code>");
            }
            Inline::Link { target, content } => self.link(target, content),
            Inline::Image { image, alt } => self.img(image, alt, Some("inline")),
            Inline::LineBreak => self.out.push_str("<br/>"),
            Inline::NoteRef(id) => {
                if self.in_link {
                    self.deferred.push(inline);
                } else {
                    self.note_ref(inline, id);
                }
            }
            Inline::Anchor(_) => {
                if let Some(id) = self.plan.node_id(inline) {
                    let _ = write!(self.out, "<span id=\"{id}\"></span>");
                }
            }
            Inline::Lang { lang, content } => self.lang(lang, content),
            Inline::PrintPage(label) => self.page_marker(inline, label),
            Inline::Math(math) => self.math(math),
        }
    }

    /// Where printed page `label` begins: an empty span that reading systems list and go to
    /// (EPUB 3.3's `pagebreak`, DPUB-ARIA's `doc-pagebreak`), named by its `title`. Ace asks
    /// for a `title` or an `aria-label`; axe-core takes `doc-pagebreak` on a span for a
    /// generic element, on which `aria-label` is prohibited, and a `title` passes both. The
    /// web reader shows the folio in the margin from `data-page`, by its stylesheet; there the
    /// title says "Page 12" (it is the folio's tooltip), since no reading system says what
    /// the number is.
    fn page_marker(&mut self, node: &Inline, label: &str) {
        let Some(id) = self.plan.node_id(node) else {
            return;
        };
        let label = collapse(label);
        self.out.push_str("<span");
        self.epub_type("pagebreak");
        let _ = write!(
            self.out,
            " role=\"doc-pagebreak\" class=\"pagebreak\" id=\"{id}\""
        );
        match self.target {
            Target::Epub => {
                self.out.push_str(" title=\"");
                attr(&mut self.out, &label);
            }
            Target::Web => {
                self.out.push_str(" data-page=\"");
                attr(&mut self.out, &label);
                self.out.push_str("\" title=\"");
                let title = self
                    .book
                    .metadata
                    .labels()
                    .fill(Key::Page, &[("page", &label)]);
                attr(&mut self.out, &title);
            }
        }
        self.out.push_str("\"></span>");
    }

    /// The page markers among a blank block's inlines, without the block.
    fn page_markers(&mut self, inlines: &'a [Inline]) {
        for inline in inlines {
            if let Inline::PrintPage(label) = inline {
                self.page_marker(inline, label);
            }
        }
    }

    /// ` dir="ltr"` for code in a right-to-left book: code reads left to right in any book, and
    /// EPUB style sheets may not say so (`direction` is refused), so the markup does.
    fn code_dir(&self) -> &'static str {
        match Direction::of(&self.book.metadata.language) {
            Direction::RightToLeft => " dir=\"ltr\"",
            Direction::LeftToRight => "",
        }
    }

    /// An equation: its MathML as the reader made it (already checked and escaped, see
    /// `crate::math`), or, when it could not be converted, its TeX as code (the reader
    /// warned about it).
    fn math(&mut self, math: &Math) {
        match (&math.mathml, &math.tex) {
            (Some(mathml), _) => self.out.push_str(mathml),
            (None, Some(tex)) => {
                let class = if math.display { "tex display" } else { "tex" };
                let _ = write!(self.out, "<code class=\"{class}\"{}>", self.code_dir());
                text(&mut self.out, tex);
                self.out.push_str("</code>");
            }
            (None, None) => {}
        }
    }

    fn lang(&mut self, lang: &str, content: &'a [Inline]) {
        match language::normalize(lang) {
            Some(tag) if tag.eq_ignore_ascii_case(&self.book.metadata.language) => {
                self.inlines(content);
            }
            Some(tag) => {
                let _ = write!(self.out, "<span lang=\"{tag}\" xml:lang=\"{tag}\"");
                // A run whose script runs the other way from the book's is isolated
                // (HTML gives an element with `dir` `unicode-bidi: isolate`), so that a
                // Hebrew phrase in an English sentence, or an English one in Arabic, keeps
                // its own order and leaves the sentence's around it alone.
                let direction = Direction::of(&tag);
                if direction != Direction::of(&self.book.metadata.language) {
                    let _ = write!(self.out, " dir=\"{}\"", direction.as_str());
                }
                self.out.push('>');
                self.inlines(content);
                self.out.push_str("</span>");
            }
            None => {
                self.warn(
                    "lang_invalid",
                    format!(
                        "{:?} is not a valid language tag, so the text marked with it is read in the book's language.",
                        collapse(lang)
                    ),
                );
                self.inlines(content);
            }
        }
    }

    fn link(&mut self, target: &LinkTarget, content: &'a [Inline]) {
        if self.in_link {
            self.inlines(content);
            return;
        }
        let href = match target {
            LinkTarget::External(url) => match external_url(url) {
                Some(href) => Some(href),
                None => {
                    self.warn(
                        "link_dropped",
                        format!(
                            "The link to {:?} was removed (only http, https, mailto and ftp links are kept); its text remains.",
                            collapse(url)
                        ),
                    );
                    None
                }
            },
            LinkTarget::Internal(id) => {
                let source = id.strip_prefix('#').unwrap_or(id);
                match self.plan.target(source) {
                    Some((chapter, xml_id)) => Some(self.href(chapter, xml_id)),
                    None => {
                        self.warn(
                            "link_target_missing",
                            format!(
                                "A link points to {:?}, which is nowhere in the book; the link was removed and its text kept.",
                                collapse(source)
                            ),
                        );
                        None
                    }
                }
            }
        };
        let Some(href) = href else {
            self.inlines(content);
            return;
        };
        self.out.push_str("<a href=\"");
        attr(&mut self.out, &href);
        self.out.push_str("\">");
        self.in_link = true;
        self.inlines(content);
        self.in_link = false;
        self.out.push_str("</a>");
        for node in std::mem::take(&mut self.deferred) {
            if let Inline::NoteRef(id) = node {
                self.note_ref(node, id);
            }
        }
    }

    fn note_ref(&mut self, node: &Inline, source: &str) {
        let own_id = self.plan.node_id(node).map(str::to_owned);
        let Some((_, note)) = self.plan.note(source) else {
            self.warn(
                "note_missing",
                format!(
                    "A note reference points to {:?}, a note that is not in the manuscript; the reference was removed.",
                    collapse(source)
                ),
            );
            return;
        };
        let href = self.href(note.chapter, &note.id);
        self.out.push_str("<a");
        self.epub_type("noteref");
        let _ = write!(
            self.out,
            " role=\"doc-noteref\" class=\"noteref\" href=\"{href}\""
        );
        if let Some(id) = own_id {
            let _ = write!(self.out, " id=\"{id}\"");
        }
        let _ = write!(self.out, ">{}</a>", note.number);
    }

    /// Notes shown at the end of this chapter: footnotes first referenced here, then, in the
    /// last chapter, notes nothing references (as plain text under "Notes", so that reading
    /// systems that hide footnotes outside their pop-ups still show them).
    fn notes(&mut self) {
        let plan = self.plan;
        let notes = &self.book.document.notes;
        let Some(placed) = plan.chapter_notes.get(self.chapter) else {
            return;
        };
        let (referenced, orphans): (Vec<usize>, Vec<usize>) = placed
            .iter()
            .copied()
            .partition(|&n| matches!(plan.notes.get(n), Some(Some(p)) if p.first_ref.is_some()));
        if !referenced.is_empty() {
            self.out.push_str("<div class=\"footnotes\">\n");
            for n in referenced {
                if let (Some(note), Some(Some(p))) = (notes.get(n), plan.notes.get(n)) {
                    self.out.push_str("<aside");
                    self.epub_type("footnote");
                    let _ = writeln!(
                        self.out,
                        " role=\"doc-footnote\" class=\"footnote\" id=\"{}\">",
                        p.id
                    );
                    let back = p.first_ref.as_deref().map(|r| {
                        format!(
                            "<a href=\"#{r}\" role=\"doc-backlink\" class=\"backlink\">{}.</a> ",
                            p.number
                        )
                    });
                    self.note_body(&note.blocks, back.as_deref().unwrap_or(""));
                    self.out.push_str("</aside>\n");
                }
            }
            self.out.push_str("</div>\n");
        }
        if !orphans.is_empty() {
            let level = if self.last_level == 0 { 1 } else { 2 };
            self.out.push_str("<section class=\"notes\">\n");
            let heading = escaped(self.book.metadata.labels().get(Key::Notes));
            let _ = writeln!(self.out, "<h{level}>{heading}</h{level}>");
            self.last_level = level;
            for n in orphans {
                if let (Some(note), Some(Some(p))) = (notes.get(n), plan.notes.get(n)) {
                    self.warn(
                        "note_unreferenced",
                        format!(
                            "The note {:?} is not referenced anywhere in the text; it was put under \"Notes\" at the end of the book.",
                            collapse(&note.id)
                        ),
                    );
                    let _ = writeln!(self.out, "<div class=\"note\" id=\"{}\">", p.id);
                    let label = format!("<span class=\"note-number\">{}.</span> ", p.number);
                    self.note_body(&note.blocks, &label);
                    self.out.push_str("</div>\n");
                }
            }
            self.out.push_str("</section>\n");
        }
    }

    /// A note's blocks, `label` (its number) leading the first paragraph.
    fn note_body(&mut self, blocks: &'a [Block], label: &str) {
        match blocks.split_first() {
            Some((Block::Paragraph { align, content }, rest)) if !is_blank(content) => {
                self.out.push_str("<p");
                let classes: Vec<&str> = align_class(*align).into_iter().collect();
                self.classes(&classes);
                self.out.push('>');
                self.out.push_str(label);
                self.inlines(content);
                self.out.push_str("</p>\n");
                self.blocks(rest);
            }
            _ => {
                if !label.is_empty() {
                    let _ = writeln!(self.out, "<p>{}</p>", label.trim_end());
                }
                self.blocks(blocks);
            }
        }
    }
}

/// Inlines a reader would not see at all: nothing, or only spaces (and printed pages'
/// markers). Such headings and paragraphs are left out rather than written empty; their
/// markers are written alone.
pub fn is_blank(inlines: &[Inline]) -> bool {
    inlines.iter().all(|i| match i {
        Inline::Text(t) => t.trim().is_empty(),
        Inline::PrintPage(_) => true,
        _ => false,
    })
}

/// A caption that holds nothing but printed pages' markers: they stand before its table or
/// figure, and the caption is not written.
fn only_page_markers(inlines: &[Inline]) -> bool {
    !inlines.is_empty() && inlines.iter().all(|i| matches!(i, Inline::PrintPage(_)))
}

fn align_class(align: Align) -> Option<&'static str> {
    match align {
        Align::Default => None,
        Align::Left => Some("align-left"),
        Align::Center => Some("align-center"),
        Align::Right => Some("align-right"),
        Align::Justify => Some("align-justify"),
    }
}

/// A link target readers may follow: an absolute http, https, mailto or ftp URL, in the
/// canonical (percent-encoded) form EPUBCheck accepts.
fn external_url(url: &str) -> Option<String> {
    let parsed = url::Url::parse(url.trim()).ok()?;
    let allowed = matches!(parsed.scheme(), "http" | "https" | "mailto" | "ftp");
    let has_host = parsed.scheme() == "mailto" || parsed.host_str().is_some_and(|h| !h.is_empty());
    (allowed && has_host).then(|| parsed.as_str().to_owned())
}

#[cfg(test)]
#[path = "xhtml/tests.rs"]
mod tests;
