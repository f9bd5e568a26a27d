//! The text of an OpenDocument (`office:text`), read in one pass onto the same builder that
//! Markdown and HTML drive: paragraphs and headings by their styles, spans by their looks,
//! lists, tables, notes (read into a builder of their own, as they sit inside a sentence),
//! frames (pictures with their descriptions, formulas as MathML), links and bookmarks.
//!
//! What LibreOffice shows is what is kept: tracked changes as accepted (the deleted text
//! lives apart, in `text:tracked-changes`, and is never read), comments left out, generated
//! indexes (a table of contents) left out, since Bindery makes its own.

use std::collections::HashMap;

use super::styles::{Role, Styles};
use crate::document::{Block, Inline, LinkTarget, ListKind, Note, NoteKind, inline_text};
use crate::manuscript::InputError;
use crate::manuscript::look::Look;
use crate::manuscript::markdown::builder::{BlockKind, Builder, InlineKind, LeafKind};
use crate::manuscript::xml::{Ev, Ns, Tag, Xml};

/// Where a formula's MathML comes from: `Object 1/content.xml` of the archive.
pub trait Objects {
    fn mathml(&mut self, href: &str) -> Result<Option<String>, InputError>;
}

pub struct Reader<'s, 'o> {
    styles: &'s Styles,
    objects: &'o mut dyn Objects,
    pub comments: usize,
    pub subtitle: Option<String>,
    pub authors: Vec<String>,
    pub date: Option<String>,
    /// Items numbered so far by each list style (`text:continue-numbering`), and by list id.
    counted: HashMap<String, u32>,
    /// Whether anything of the body has been read (a subtitle only counts at the top).
    started: bool,
    /// Caption paragraphs read, each followed by a [`CAPTION`] mark.
    pub captions: usize,
    /// Set when the paragraph being read draws a horizontal rule (Word's, as LibreOffice
    /// keeps it: a thin rectangle as wide as the text).
    rule: bool,
    /// What each style name came to, up its chain: a book of thousands of paragraphs uses a
    /// few dozen styles.
    paragraph_styles: HashMap<String, ParagraphStyle>,
    text_styles: HashMap<String, TextStyle>,
}

#[derive(Clone, Copy)]
struct ParagraphStyle {
    role: Option<Role>,
    breaks_page: bool,
    look: Look,
}

#[derive(Clone, Copy)]
struct TextStyle {
    code: bool,
    look: Look,
}

/// Marks the paragraph before it as a caption, for [`super::captions`] to move into the
/// table it captions (an id no document can give: it holds a NUL).
pub const CAPTION: &str = "\0caption";

/// Elements whose content is never the book's text.
const SKIPPED: &[&str] = &[
    "tracked-changes",
    "sequence-decls",
    "variable-decls",
    "user-field-decls",
    "dde-connection-decls",
    "table-of-content",
    "alphabetical-index",
    "illustration-index",
    "table-index",
    "object-index",
    "user-index",
    "bibliography",
    "change",
    "change-start",
    "change-end",
    "soft-page-break",
    "bookmark-end",
    "reference-mark-end",
    "note-citation",
];

impl<'s, 'o> Reader<'s, 'o> {
    pub fn new(styles: &'s Styles, objects: &'o mut dyn Objects) -> Self {
        Reader {
            styles,
            objects,
            comments: 0,
            subtitle: None,
            authors: Vec::new(),
            date: None,
            counted: HashMap::new(),
            started: false,
            captions: 0,
            rule: false,
            paragraph_styles: HashMap::new(),
            text_styles: HashMap::new(),
        }
    }

    fn paragraph_style(&mut self, name: &str) -> ParagraphStyle {
        if let Some(style) = self.paragraph_styles.get(name) {
            return *style;
        }
        let style = ParagraphStyle {
            role: self.styles.role(name),
            breaks_page: self.styles.breaks_page(name),
            look: self.styles.paragraph_look(name),
        };
        self.paragraph_styles.insert(name.to_owned(), style);
        style
    }

    fn text_style(&mut self, name: &str) -> TextStyle {
        if let Some(style) = self.text_styles.get(name) {
            return *style;
        }
        let style = TextStyle {
            code: self.styles.is_code(name),
            look: self.styles.text_look(name),
        };
        self.text_styles.insert(name.to_owned(), style);
        style
    }

    /// The blocks of the element whose start was just read, through its end.
    pub fn blocks(&mut self, x: &mut Xml, b: &mut Builder, level: u8) -> Result<(), InputError> {
        let mut run = Run::default();
        while let Some(tag) = x.child()? {
            self.block(&tag, x, b, level, &mut run)?;
        }
        run.end(b)
    }

    fn block(
        &mut self,
        tag: &Tag,
        x: &mut Xml,
        b: &mut Builder,
        level: u8,
        run: &mut Run,
    ) -> Result<(), InputError> {
        match (tag.ns, tag.name()) {
            (Ns::Text, "p" | "h") => self.paragraph(tag, x, b, run),
            (Ns::Text, "list") => {
                run.end(b)?;
                self.list(tag, x, b, level.max(1), None)
            }
            (Ns::Table, "table") => {
                run.end(b)?;
                self.table(x, b)
            }
            (Ns::Office, "annotation") => {
                self.comments += 1;
                x.skip()
            }
            (Ns::Text, name) if SKIPPED.contains(&name) => x.skip(),
            (Ns::Draw, "frame") => {
                // A frame anchored to the page or the paragraph, between paragraphs.
                run.end(b)?;
                b.open_leaf(LeafKind::Paragraph)?;
                self.frame(x, b)?;
                b.close_leaf()
            }
            // Sections, and whatever else holds blocks: their content is the book's.
            _ => self.blocks(x, b, level),
        }
    }

    fn paragraph(
        &mut self,
        tag: &Tag,
        x: &mut Xml,
        b: &mut Builder,
        run: &mut Run,
    ) -> Result<(), InputError> {
        let style = tag
            .attr("style-name")
            .map(|s| s.into_owned())
            .unwrap_or_default();
        let ParagraphStyle {
            role,
            breaks_page,
            look,
        } = self.paragraph_style(&style);
        let heading = tag.name() == "h";
        let outline = tag
            .attr("outline-level")
            .and_then(|l| l.parse::<u8>().ok())
            .filter(|l| (1..=6).contains(l));
        if breaks_page && self.started {
            run.end(b)?;
            b.add_block(Block::PageBreak)?;
        }
        let kind = match (heading, role) {
            (_, Some(Role::Title)) => Kind::Heading(0),
            (true, Some(Role::Heading(level))) => Kind::Heading(outline.unwrap_or(level)),
            (true, _) => Kind::Heading(outline.unwrap_or(1)),
            (false, Some(Role::Heading(level))) => Kind::Heading(level),
            (false, Some(role @ (Role::Subtitle | Role::Author | Role::Date))) if !self.started => {
                Kind::TitlePage(role)
            }
            (false, Some(Role::Quotation)) => Kind::Quotation,
            (false, Some(Role::Code)) => Kind::Code,
            _ => Kind::Paragraph,
        };
        match kind {
            Kind::Code => {
                if !matches!(run, Run::Code(_)) {
                    run.end(b)?;
                    *run = Run::Code(Vec::new());
                }
                let text = self.text_of(x, b)?;
                if let Run::Code(lines) = run {
                    lines.push(text);
                }
                return Ok(());
            }
            Kind::TitlePage(role) => {
                run.end(b)?;
                let text = self.text_of(x, b)?;
                let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
                if !text.is_empty() {
                    match role {
                        Role::Subtitle if self.subtitle.is_none() => self.subtitle = Some(text),
                        Role::Author => self.authors.push(text),
                        Role::Date if self.date.is_none() => self.date = Some(text),
                        _ => {}
                    }
                }
                return Ok(());
            }
            Kind::Quotation => {
                if !matches!(run, Run::Quote) {
                    run.end(b)?;
                    b.open_block(BlockKind::Quote, None)?;
                    *run = Run::Quote;
                }
            }
            _ => run.end(b)?,
        }
        // A title above the subtitle is still the top of the book.
        self.started |= !matches!(kind, Kind::Heading(0));
        let leaf = match kind {
            Kind::Heading(level) => LeafKind::Heading { level, id: None },
            _ => LeafKind::Paragraph,
        };
        b.open_leaf(leaf)?;
        // A heading's or a caption's style draws it bold or italic as such; only what its
        // spans add is the text's own emphasis.
        let plain =
            matches!(kind, Kind::Heading(_) | Kind::Quotation) || role == Some(Role::Caption);
        let (opened, outer) = if plain {
            (0, Look::default())
        } else {
            (look.beyond(&Look::default()).open(b, None)?, look)
        };
        self.inlines(x, b, &outer)?;
        for _ in 0..opened {
            b.close_inline()?;
        }
        b.close_leaf()?;
        if std::mem::take(&mut self.rule) || role == Some(Role::Rule) {
            b.add_block(Block::SceneBreak)?;
        }
        if role == Some(Role::Caption) {
            self.captions += 1;
            b.add_block(Block::Paragraph {
                align: crate::document::Align::default(),
                content: vec![Inline::Anchor(CAPTION.to_owned())],
            })?;
        }
        Ok(())
    }

    /// The plain text of the element whose start was just read (a code line, a subtitle).
    fn text_of(&mut self, x: &mut Xml, b: &mut Builder) -> Result<String, InputError> {
        let mut inner = Builder::new(&mut *b.res);
        inner.open_leaf(LeafKind::Paragraph)?;
        self.inlines(x, &mut inner, &Look::default())?;
        let (blocks, _) = inner.finish()?;
        Ok(blocks
            .iter()
            .map(|block| match block {
                Block::Paragraph { content, .. } => inline_text(content),
                _ => String::new(),
            })
            .collect::<Vec<_>>()
            .join(" "))
    }

    /// The inline content of the element whose start was just read, through its end.
    fn inlines(&mut self, x: &mut Xml, b: &mut Builder, outer: &Look) -> Result<(), InputError> {
        loop {
            match x.next()? {
                Ev::Text(text) => b.text(&collapse(&text))?,
                Ev::End => return Ok(()),
                Ev::Eof => return Err(x.error("unexpected end")),
                Ev::Start(tag) => self.inline(&tag, x, b, outer)?,
            }
        }
    }

    fn inline(
        &mut self,
        tag: &Tag,
        x: &mut Xml,
        b: &mut Builder,
        outer: &Look,
    ) -> Result<(), InputError> {
        match (tag.ns, tag.name()) {
            (Ns::Text, "span") => {
                let style = tag
                    .attr("style-name")
                    .map(|s| s.into_owned())
                    .unwrap_or_default();
                let TextStyle { code, look } = self.text_style(&style);
                if code {
                    b.open_inline(InlineKind::Code, None)?;
                    self.inlines(x, b, outer)?;
                    return b.close_inline();
                }
                let added = look.beyond(outer);
                if added.hidden {
                    return x.skip();
                }
                let opened = added.open(b, None)?;
                let mut inner = *outer;
                inner.over(&added);
                self.inlines(x, b, &inner)?;
                for _ in 0..opened {
                    b.close_inline()?;
                }
                Ok(())
            }
            (Ns::Text, "a") => {
                let href = tag.attr("href").map(|h| h.into_owned()).unwrap_or_default();
                let target = self.link(&href, b);
                b.open_inline(InlineKind::Link(target), None)?;
                self.inlines(x, b, outer)?;
                b.close_inline()
            }
            (
                Ns::Text,
                "bookmark" | "bookmark-start" | "reference-mark" | "reference-mark-start",
            ) => {
                if let Some(name) = tag.attr("name").filter(|n| !n.is_empty()) {
                    b.inline(Inline::Anchor(name.into_owned()))?;
                }
                x.skip()
            }
            (Ns::Text, "note") => self.note(tag, x, b),
            (Ns::Text, "s") => {
                let count = tag
                    .attr("c")
                    .and_then(|c| c.parse::<usize>().ok())
                    .unwrap_or(1)
                    .clamp(1, 64);
                x.skip()?;
                b.text(&" ".repeat(count))
            }
            (Ns::Text, "tab") => {
                x.skip()?;
                b.text(" ")
            }
            (Ns::Text, "line-break") => {
                x.skip()?;
                b.inline(Inline::LineBreak)
            }
            (Ns::Draw, "frame") => self.frame(x, b),
            (Ns::Draw, "a") => self.inlines(x, b, outer),
            (Ns::Draw, "rect" | "line") if is_rule(tag) => {
                self.rule = true;
                x.skip()
            }
            // The paragraphs of a shape's text, read where the shape is anchored.
            (Ns::Text, "p" | "h") => {
                b.text(" ")?;
                self.inlines(x, b, outer)
            }
            (Ns::Office, "annotation") => {
                self.comments += 1;
                x.skip()
            }
            (Ns::Office, "annotation-end") => x.skip(),
            (Ns::Text, "ruby-text") => x.skip(),
            (Ns::Text, name) if SKIPPED.contains(&name) => x.skip(),
            // Fields (a title, a page number, a cross-reference) show their text.
            _ => self.inlines(x, b, outer),
        }
    }

    /// Where a link goes. LibreOffice links to a heading by its text (`#Chapter One|outline`),
    /// which is the heading's slug once ids are settled.
    fn link(&self, href: &str, b: &mut Builder) -> Option<LinkTarget> {
        if let Some(fragment) = href.strip_prefix('#') {
            let fragment = crate::manuscript::markdown::resources::percent_decode(fragment);
            if let Some((text, kind)) = fragment.rsplit_once('|') {
                return match kind {
                    "outline" => Some(LinkTarget::Internal(
                        crate::manuscript::markdown::ids::slug(
                            text.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.'),
                        ),
                    )),
                    _ => Some(LinkTarget::Internal(text.to_owned())),
                };
            }
            return (!fragment.is_empty()).then_some(LinkTarget::Internal(fragment));
        }
        b.res.link_target(href, false)
    }

    fn note(&mut self, tag: &Tag, x: &mut Xml, b: &mut Builder) -> Result<(), InputError> {
        let id = tag
            .attr("id")
            .map(|i| i.into_owned())
            .unwrap_or_else(|| format!("note{}", b.notes.len() + 1));
        let kind = match tag.attr("note-class").as_deref() {
            Some("endnote") => NoteKind::Endnote,
            _ => NoteKind::Footnote,
        };
        b.inline(Inline::NoteRef(id.clone()))?;
        let mut found = Vec::new();
        while let Some(child) = x.child()? {
            if child.is(Ns::Text, "note-body") {
                let mut inner = Builder::new(&mut *b.res);
                self.blocks(x, &mut inner, 0)?;
                let (blocks, notes) = inner.finish()?;
                found.push(Note {
                    id: id.clone(),
                    kind,
                    blocks,
                });
                found.extend(notes);
            } else {
                x.skip()?;
            }
        }
        b.notes.extend(found);
        Ok(())
    }

    /// A frame: a picture (with its description as alt text), a formula, or a text box
    /// whose text joins the paragraph.
    fn frame(&mut self, x: &mut Xml, b: &mut Builder) -> Result<(), InputError> {
        let mut picture: Option<String> = None;
        let mut embedded: Option<Vec<u8>> = None;
        let mut alt = String::new();
        let mut title = String::new();
        let mut formula = false;
        while let Some(child) = x.child()? {
            match (child.ns, child.name()) {
                (Ns::Draw, "image") if picture.is_none() && embedded.is_none() => {
                    picture = child
                        .attr("href")
                        .map(|h| h.into_owned())
                        .filter(|h| !h.is_empty());
                    while let Some(inner) = x.child()? {
                        if inner.is(Ns::Office, "binary-data") {
                            let data: String = x.text()?.split_whitespace().collect();
                            use base64::Engine;
                            embedded = base64::engine::general_purpose::STANDARD.decode(data).ok();
                        } else {
                            x.skip()?;
                        }
                    }
                }
                (Ns::Draw, "object") => {
                    let href = child.attr("href").map(|h| h.into_owned());
                    let mathml = match href {
                        Some(href) => {
                            x.skip()?;
                            self.objects.mathml(&href)?
                        }
                        None => inline_math(x)?,
                    };
                    if let Some(mathml) = mathml {
                        formula = true;
                        b.inline(math(&mathml))?;
                    }
                }
                (Ns::Draw, "text-box") => {
                    // A caption frame holds the picture and its caption as paragraphs; a
                    // text box's text is read where it is anchored.
                    b.text(" ")?;
                    while let Some(inner) = x.child()? {
                        if inner.is(Ns::Text, "p") || inner.is(Ns::Text, "h") {
                            self.inlines(x, b, &Look::default())?;
                            b.text(" ")?;
                        } else {
                            x.skip()?;
                        }
                    }
                }
                (Ns::Other | Ns::Draw, "desc") | (_, "desc") => alt = x.text()?,
                (_, "title") => title = x.text()?,
                _ => x.skip()?,
            }
        }
        if formula {
            // The picture beside a formula is its drawing, for programs that cannot read it.
            return Ok(());
        }
        let alt = if alt.trim().is_empty() { title } else { alt };
        let alt = alt.split_whitespace().collect::<Vec<_>>().join(" ");
        let image = match (picture, embedded) {
            (_, Some(bytes)) => b.res.embedded_image("an embedded picture", bytes, &alt)?,
            (Some(href), None) => b.res.image(href.trim_start_matches("./"), &alt)?,
            (None, None) => return Ok(()),
        };
        match image {
            Some(image) => b.inline(Inline::Image { image, alt }),
            None => b.text(&alt),
        }
    }

    fn list(
        &mut self,
        tag: &Tag,
        x: &mut Xml,
        b: &mut Builder,
        level: u8,
        inherited: Option<String>,
    ) -> Result<(), InputError> {
        let style = tag.attr("style-name").map(|s| s.into_owned()).or(inherited);
        let continues = tag.attr("continue-numbering").as_deref() == Some("true")
            || tag.attr("continue-list").is_some();
        let key = format!("{}#{level}", style.as_deref().unwrap_or(""));
        let (kind, first) = match &style {
            Some(style) => self.styles.list_level(style, level),
            None => (ListKind::Bullet, 1),
        };
        let mut start = if continues {
            self.counted.get(&key).map_or(first, |n| n + 1)
        } else {
            first
        };
        let mut opened = false;
        let mut items = 0u32;
        while let Some(child) = x.child()? {
            if !(child.is(Ns::Text, "list-item") || child.is(Ns::Text, "list-header")) {
                x.skip()?;
                continue;
            }
            if !opened {
                if let Some(value) = child
                    .attr("start-value")
                    .and_then(|v| v.parse::<u32>().ok())
                {
                    start = value;
                }
                b.open_block(
                    BlockKind::List {
                        kind,
                        start,
                        items: Vec::new(),
                    },
                    None,
                )?;
                opened = true;
            }
            items += 1;
            b.open_block(BlockKind::Item, None)?;
            let mut run = Run::default();
            while let Some(inner) = x.child()? {
                if inner.is(Ns::Text, "list") {
                    run.end(b)?;
                    self.list(&inner, x, b, level + 1, style.clone())?;
                } else {
                    self.block(&inner, x, b, level + 1, &mut run)?;
                }
            }
            run.end(b)?;
            b.close_block()?;
        }
        if opened {
            b.close_block()?;
            self.counted.insert(key, start + items - 1);
        }
        Ok(())
    }

    fn table(&mut self, x: &mut Xml, b: &mut Builder) -> Result<(), InputError> {
        b.open_block(
            BlockKind::Table {
                aligns: Vec::new(),
                head: Vec::new(),
                body: Vec::new(),
                in_head: false,
            },
            None,
        )?;
        self.rows(x, b, false)?;
        b.close_block()
    }

    fn rows(&mut self, x: &mut Xml, b: &mut Builder, head: bool) -> Result<(), InputError> {
        while let Some(child) = x.child()? {
            match (child.ns, child.name()) {
                (Ns::Table, "table-header-rows") => {
                    b.set_table_head(true);
                    self.rows(x, b, true)?;
                    b.set_table_head(false);
                }
                (Ns::Table, "table-row") => {
                    b.open_block(BlockKind::Row(Vec::new()), None)?;
                    while let Some(cell) = x.child()? {
                        if !cell.is(Ns::Table, "table-cell") {
                            x.skip()?;
                            continue;
                        }
                        let span = |key: &str| {
                            cell.attr(key)
                                .and_then(|s| s.parse::<u32>().ok())
                                .unwrap_or(1)
                                .clamp(1, 1000)
                        };
                        b.open_block(
                            BlockKind::Cell {
                                header: head,
                                colspan: span("number-columns-spanned"),
                                rowspan: span("number-rows-spanned"),
                            },
                            None,
                        )?;
                        self.blocks(x, b, 0)?;
                        b.close_block()?;
                    }
                    b.close_block()?;
                }
                (Ns::Table, "table-rows" | "table-row-group") => self.rows(x, b, head)?,
                _ => x.skip()?,
            }
        }
        Ok(())
    }
}

enum Kind {
    Paragraph,
    Heading(u8),
    /// A subtitle, author or date at the top of the book.
    TitlePage(Role),
    Quotation,
    Code,
}

/// Consecutive paragraphs that become one block: a quotation, or lines of code.
#[derive(Default)]
enum Run {
    #[default]
    None,
    Quote,
    Code(Vec<String>),
}

impl Run {
    fn end(&mut self, b: &mut Builder) -> Result<(), InputError> {
        match std::mem::take(self) {
            Run::None => Ok(()),
            Run::Quote => b.close_block(),
            Run::Code(lines) => b.add_block(Block::CodeBlock {
                language: None,
                text: lines.join("\n"),
            }),
        }
    }
}

/// A shape as wide as the text and no taller than a line's stroke.
fn is_rule(tag: &Tag) -> bool {
    let thin = tag
        .attr("height")
        .and_then(|h| inches(&h))
        .is_some_and(|h| h <= 0.06);
    let wide = tag.attr("rel-width").as_deref() == Some("100%")
        || tag
            .attr("width")
            .and_then(|w| inches(&w))
            .is_some_and(|w| w >= 3.0);
    thin && wide
}

/// An ODF length in inches (`0.0213in`, `0.5cm`, `2mm`, `12pt`).
fn inches(length: &str) -> Option<f64> {
    let split = length.find(|c: char| c.is_ascii_alphabetic())?;
    let (number, unit) = length.split_at(split);
    let number: f64 = number.trim().parse().ok()?;
    Some(match unit {
        "in" => number,
        "cm" => number / 2.54,
        "mm" => number / 25.4,
        "pt" => number / 72.0,
        "pc" => number / 6.0,
        _ => return None,
    })
}

/// ODF collapses white space in text as HTML does (spaces it keeps are `text:s`).
fn collapse(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut space = false;
    for c in text.chars() {
        if matches!(c, ' ' | '\t' | '\n' | '\r') {
            space = true;
        } else {
            if space {
                out.push(' ');
                space = false;
            }
            out.push(c);
        }
    }
    if space {
        out.push(' ');
    }
    out
}

/// A formula written inside a flat document (`<draw:object><math:math>…`), as MathML text.
fn inline_math(x: &mut Xml) -> Result<Option<String>, InputError> {
    let mut out = String::new();
    let mut found = false;
    let mut open: Vec<String> = Vec::new();
    let mut depth = 0usize;
    loop {
        match x.next()? {
            Ev::Start(tag) => {
                depth += 1;
                if tag.ns == Ns::MathMl && (found || tag.name() == "math") {
                    found = true;
                    out.push('<');
                    out.push_str(tag.name());
                    if tag.name() == "math" && open.is_empty() {
                        out.push_str(&format!(r#" xmlns="{}""#, crate::math::NAMESPACE));
                    }
                    for (key, value) in tag.attributes() {
                        out.push(' ');
                        out.push_str(&key);
                        out.push_str("=\"");
                        crate::math::escape_into(&mut out, &value);
                        out.push('"');
                    }
                    out.push('>');
                    open.push(tag.name().to_owned());
                } else {
                    open.push(String::new());
                }
            }
            // The indentation of a pretty-printed formula is not its text.
            Ev::Text(text) => {
                if found && !text.trim().is_empty() {
                    crate::math::escape_into(&mut out, &text);
                }
            }
            Ev::End => {
                if depth == 0 {
                    return Ok(found.then_some(out));
                }
                depth -= 1;
                if let Some(name) = open.pop()
                    && !name.is_empty()
                {
                    out.push_str("</");
                    out.push_str(&name);
                    out.push('>');
                }
            }
            Ev::Eof => return Err(x.error("unexpected end")),
        }
    }
}

/// The book's equation for a formula's MathML (LibreOffice marks every formula displayed;
/// whether it is, is settled by its paragraph, see [`super::displayed`]).
fn math(mathml: &str) -> Inline {
    let cleaned = crate::math::clean(mathml);
    Inline::Math(crate::document::Math {
        display: false,
        tex: None,
        mathml: cleaned,
    })
}
