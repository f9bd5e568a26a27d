//! The document model as Typst markup, and the map back from it.
//!
//! Every piece of the manuscript's text goes into Typst as a string literal (`#"…"`), never as
//! markup: inside a literal only `\` and `"` mean anything, so a manuscript that holds Typst
//! (`#import`, `#read("/etc/passwd")`, `#set page(…)`, a loop) prints as the text it is. The one
//! rule the emitter keeps: after a `#"…"` or a `#f(…)` comes `#`, `]` or a newline, so that
//! nothing written next can continue the expression as a method call or a content argument.
//!
//! Each literal of a text block is recorded with the [`TextPosition`] its first byte stands
//! for, so that a glyph on a page (whose span names its literal and the byte offset in the
//! literal's value) maps back to a place in the book. Literals are cut below Typst's 64 KiB
//! span offset. Notes and the template's own text are not recorded: a page begins with the
//! book's body text, never with a running head or a footnote.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use crate::document::positions::TextPosition;
use crate::document::{
    Align, Block, Chapter, Definition, Division, Document, Image, Inline, ListKind, Note, Table,
};
use crate::ebook::BookMetadata;
use crate::report::Warning;
use crate::style::Style;
use crate::style::opening::{self, Cut};

use super::strings::{literal, push_literal};
use super::world::IMAGES;

/// Figures print at 300 dpi or better; below that the report says so.
pub(crate) const MIN_DPI: f64 = 300.0;

/// Bytes of text in one literal: well under the `u16` offset a glyph's span carries.
const MAX_LITERAL: usize = 16 * 1024;

/// How deep quotes, lists, definitions and tables nest on the printed page. The model keeps up
/// to 40 levels (the readers flatten deeper input), which Typst cannot lay out: each level is
/// a few of its show rules deep, and it stops at 64 ("maximum show rule depth exceeded"), while
/// eight levels of indent already leave a 6 in page a column of a few words. What is nested
/// deeper prints at this level, in order, with a warning.
pub(crate) const MAX_PRINT_NESTING: usize = 8;

/// A string literal of the book's text in the generated source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Literal {
    /// Byte range of the literal (quotes included) in the source.
    pub start: usize,
    pub end: usize,
    /// The place its first byte of text stands for.
    pub at: TextPosition,
}

/// The room a figure may take, in inches.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Room {
    pub width: f64,
    pub height: f64,
}

/// Writes the book's chapters and notes as Typst, recording where its text went.
pub(crate) struct Emitter<'a> {
    pub out: String,
    pub literals: Vec<Literal>,
    pub warnings: Vec<Warning>,
    notes: HashMap<&'a str, &'a Note>,
    /// Notes already printed in this chapter, by id, with their labels: a second reference
    /// points at the first. A note printed in an earlier chapter prints again (with the same
    /// number): each chapter stands alone, so that a book typeset in pieces prints the same
    /// whatever pieces its chapters fall in.
    printed_notes: HashMap<&'a str, usize>,
    /// Labels given to printed notes, in this source.
    note_labels: usize,
    /// Each note's number, the ebooks' own.
    note_numbers: HashMap<String, usize>,
    images: HashMap<&'a str, &'a Image>,
    resources: &'a BTreeMap<String, Vec<u8>>,
    room: Room,
    warned_images: Vec<&'a str>,
    chapter: usize,
    /// The next text block's index in the chapter.
    next_block: usize,
    /// The text block being written and the offset reached in its text; `None` in a note.
    current: Option<(usize, usize)>,
    /// The level of the chapter's own heading, so that the ones below it step down from it.
    base_level: u8,
    in_note: bool,
    /// Containers (quotes, list items, definitions, table cells) open around what is written.
    nesting: usize,
    /// Whether anything was nested past [`MAX_PRINT_NESTING`], for the one warning.
    flattened: bool,
    style: &'a Style,
    metadata: &'a BookMetadata,
    chapters: &'a [Chapter],
    /// The paragraph that opens the chapter being written.
    opening: Option<&'a Block>,
    /// The block written last was a drop cap's paragraph: Typst sets it as blocks, after
    /// which it indents no paragraph, though the book's next paragraph follows a paragraph.
    after_drop_cap: bool,
}

/// Words of an opening paragraph set beside its drop cap, at most: more than any measure
/// holds in five lines. The rest follow at the full measure.
const DROP_CAP_WORDS: usize = 60;

impl<'a> Emitter<'a> {
    pub fn new(
        document: &'a Document,
        resources: &'a BTreeMap<String, Vec<u8>>,
        room: Room,
        style: &'a Style,
        metadata: &'a BookMetadata,
    ) -> Self {
        Emitter {
            out: String::new(),
            literals: Vec::new(),
            warnings: Vec::new(),
            notes: document.notes.iter().map(|n| (n.id.as_str(), n)).collect(),
            printed_notes: HashMap::new(),
            note_labels: 0,
            note_numbers: crate::ebook::xhtml::ids::note_numbers(document),
            images: document.images.iter().map(|i| (i.id.as_str(), i)).collect(),
            resources,
            room,
            warned_images: Vec::new(),
            chapter: 0,
            next_block: 0,
            current: None,
            base_level: 1,
            in_note: false,
            nesting: 0,
            flattened: false,
            style,
            metadata,
            chapters: &document.chapters,
            opening: None,
            after_drop_cap: false,
        }
    }

    /// Whether a container opened here would pass [`MAX_PRINT_NESTING`]: then its blocks are
    /// written in its place, without it, and the book is warned once.
    fn too_deep(&mut self) -> bool {
        let deep = self.nesting >= MAX_PRINT_NESTING;
        if deep && !self.flattened {
            self.flattened = true;
            self.warnings.push(Warning::new(
                "print_nesting_flattened",
                format!(
                    "The book nests quotes, lists or tables more than {MAX_PRINT_NESTING} deep; \
                     the print edition sets what is deeper at the {MAX_PRINT_NESTING}th level, \
                     without the deeper indents (the ebooks keep them)."
                ),
            ));
        }
        deep
    }

    /// `blocks` written one container deeper.
    fn nested(&mut self, blocks: &'a [Block]) {
        self.nesting += 1;
        self.blocks(blocks);
        self.nesting -= 1;
    }

    /// Template text, written as is.
    pub fn raw(&mut self, markup: &str) {
        self.out.push_str(markup);
    }

    /// The blocks of chapter `index`; its own heading (its first block) as the chapter's head.
    pub fn chapter(&mut self, index: usize, chapter: &'a Chapter) {
        self.chapter = index;
        self.printed_notes.clear();
        self.next_block = 0;
        self.current = None;
        self.opening = opening::opening_paragraph(chapter).map(|i| &chapter.blocks[i]);
        let head = opening::head(
            self.style,
            &self.metadata.language,
            &self.metadata.labels(),
            self.chapters,
            index,
        );
        let number = head
            .number
            .map(|n| format!("#bindery-chapter-number({})", literal(&n)));
        let mut blocks = chapter.blocks.as_slice();
        match blocks.first() {
            Some(Block::Heading { level, content, .. }) => {
                self.base_level = *level;
                // Bookmarked: the PDF's outline lists the chapters.
                self.out
                    .push_str("#heading(level: 1, outlined: false, bookmarked: true)[");
                match number {
                    Some(number) if head.replaces_title => {
                        self.out.push_str(&number);
                        self.skip_text_block();
                    }
                    number => {
                        self.out.push_str(number.as_deref().unwrap_or(""));
                        self.out.push_str("#bindery-chapter-title[");
                        self.text_block(content);
                        self.out.push(']');
                    }
                }
                self.out.push_str("]\n\n");
                blocks = &blocks[1..];
                // A heading that only numbers the chapter ("I") and the line that names it
                // under it: that line is set as the chapter's subtitle, not as its text.
                if crate::document::chapters::subtitle(chapter).is_some()
                    && let Some(Block::Paragraph { content, .. } | Block::Heading { content, .. }) =
                        blocks.first()
                {
                    self.out.push_str("#bindery-chapter-subtitle[");
                    self.text_block(content);
                    self.out.push_str("]\n\n");
                    blocks = &blocks[1..];
                }
            }
            _ => {
                self.base_level = 1;
                match number {
                    Some(number) => {
                        let _ = write!(
                            self.out,
                            "#heading(level: 1, outlined: false, bookmarked: true)[{number}]\n\n"
                        );
                    }
                    None => self.out.push_str("#bindery-sink\n\n"),
                }
            }
        }
        if matches!(chapter.division, Division::Dedication | Division::Epigraph) {
            self.out.push_str("#bindery-epigraph[\n");
            self.blocks(blocks);
            self.out.push_str("]\n\n");
        } else {
            self.blocks(blocks);
        }
    }

    /// The blocks of chapter `index` as a passage from its middle: no head, no opening.
    pub fn passage(&mut self, index: usize, chapter: &'a Chapter) {
        self.chapter = index;
        self.printed_notes.clear();
        self.next_block = 0;
        self.current = None;
        self.opening = None;
        self.base_level = 1;
        self.blocks(&chapter.blocks);
    }

    fn blocks(&mut self, blocks: &'a [Block]) {
        let mut after_break = false;
        for block in blocks {
            self.block(block, after_break);
            let blank = matches!(block, Block::Paragraph { content, .. } if crate::document::inline_text(content).trim().is_empty());
            if !blank {
                after_break = matches!(block, Block::SceneBreak);
            }
        }
    }

    fn block(&mut self, block: &'a Block, after_break: bool) {
        let after_drop_cap = std::mem::take(&mut self.after_drop_cap);
        match block {
            Block::Heading { level, content, .. } => {
                let level = (i32::from(*level) - i32::from(self.base_level) + 2).clamp(2, 6);
                let _ = write!(
                    self.out,
                    "#heading(level: {level}, outlined: false, bookmarked: false)["
                );
                self.text_block(content);
                self.out.push_str("]\n\n");
            }
            Block::Paragraph { content, .. }
                if self.opening.is_some_and(|o| std::ptr::eq(o, block)) =>
            {
                let lead = opening::after_words(content, opening::lead_in(self.style));
                match self.style.paragraph.opening {
                    crate::style::Opening::DropCap => match opening::drop_cap(content) {
                        Some(cap) => self.drop_cap(content, cap, lead),
                        None => self.lead_in(content, lead),
                    },
                    _ => self.lead_in(content, lead),
                }
            }
            Block::Paragraph { align, content } => {
                // Lines broken by hand (verse, an address) keep their own length: justified,
                // a short line would be stretched to the measure.
                let lines = content.iter().any(|i| matches!(i, Inline::LineBreak));
                if lines {
                    self.out.push_str("#bindery-verse[");
                }
                let indented = format!(
                    "#par(first-line-indent: (amount: {}em, all: true))[",
                    self.style.paragraph.indent.0
                );
                let open = match align {
                    Align::Default | Align::Justify if lines => "#par(justify: false)[",
                    Align::Default | Align::Justify
                        if after_drop_cap
                            && self.style.paragraph.separation
                                == crate::style::Separation::Indent =>
                    {
                        indented.as_str()
                    }
                    Align::Default | Align::Justify => "#par[",
                    Align::Left => "#par(justify: false)[",
                    Align::Center => "#align(center)[#par(justify: false)[",
                    Align::Right => "#align(right)[#par(justify: false)[",
                };
                self.out.push_str(open);
                let lead = if after_break {
                    opening::after_words(content, opening::lead_after_break(self.style))
                } else {
                    None
                };
                match lead {
                    Some(cut) => self.text_block_cut(content, cut),
                    None => self.text_block(content),
                }
                self.out.push(']');
                if matches!(align, Align::Center | Align::Right) {
                    self.out.push(']');
                }
                if lines {
                    self.out.push(']');
                }
                self.out.push_str("\n\n");
            }
            Block::BlockQuote(blocks) if self.too_deep() => self.blocks(blocks),
            Block::BlockQuote(blocks) => {
                self.out.push_str("#bindery-quote[\n");
                self.nested(blocks);
                self.out.push_str("]\n\n");
            }
            Block::List { items, .. } if self.too_deep() => {
                for item in items {
                    self.blocks(item);
                }
            }
            Block::List { kind, start, items } => {
                match kind {
                    ListKind::Bullet => self.out.push_str("#list("),
                    ordered => {
                        let numbering = match ordered {
                            ListKind::LowerAlpha => "a.",
                            ListKind::UpperAlpha => "A.",
                            ListKind::LowerRoman => "i.",
                            ListKind::UpperRoman => "I.",
                            _ => "1.",
                        };
                        let _ = write!(
                            self.out,
                            "#enum(start: {start}, numbering: \"{numbering}\", "
                        );
                    }
                }
                for item in items {
                    self.out.push('[');
                    self.nested(item);
                    self.out.push_str("], ");
                }
                self.out.push_str(")\n\n");
            }
            Block::DefinitionList(items) => self.definitions(items),
            Block::CodeBlock { text, .. } => {
                // Not a text block: no page is said to begin in it.
                let saved = self.current.take();
                self.out.push_str("#bindery-code(");
                push_literal(&mut self.out, text);
                self.out.push_str(")\n\n");
                self.current = saved;
            }
            Block::Table(table) => self.table(table),
            Block::Figure {
                image,
                alt,
                caption,
            } => {
                self.out.push_str("#bindery-figure(");
                self.figure_image(image, alt, self.room.width, self.room.height);
                if caption.is_empty() {
                    self.skip_text_block();
                    self.out.push_str(", none)\n\n");
                } else {
                    self.out.push_str(", [");
                    self.text_block(caption);
                    self.out.push_str("])\n\n");
                }
            }
            Block::SceneBreak => self.out.push_str("#bindery-scene-break\n\n"),
            Block::PageBreak => self.out.push_str("#pagebreak(weak: true)\n"),
        }
    }

    fn definitions(&mut self, items: &'a [Definition]) {
        if self.too_deep() {
            for item in items {
                self.out.push_str("#par[");
                self.text_block(&item.term);
                self.out.push_str("]\n\n");
                for definition in &item.definitions {
                    self.blocks(definition);
                }
            }
            return;
        }
        self.out.push_str("#terms(");
        for item in items {
            self.out.push_str("([");
            self.text_block(&item.term);
            self.out.push_str("], [");
            for definition in &item.definitions {
                self.nested(definition);
            }
            self.out.push_str("]), ");
        }
        self.out.push_str(")\n\n");
    }

    fn table(&mut self, table: &'a Table) {
        // The caption is the table's first text block (`positions::text_blocks`), and it is
        // printed above the table, as books print them.
        if table.caption.is_empty() {
            self.skip_text_block();
        } else {
            self.out.push_str("#bindery-table-caption[");
            self.text_block(&table.caption);
            self.out.push_str("]\n");
        }
        let grid = Grid::of(table);
        if grid.columns == 0 {
            self.out.push('\n');
            return;
        }
        if self.too_deep() {
            for cell in table
                .head
                .iter()
                .chain(&table.body)
                .flat_map(|row| &row.cells)
            {
                self.blocks(&cell.blocks);
            }
            return;
        }
        let _ = write!(self.out, "#bindery-table({}, ", grid.columns);
        if !table.head.is_empty() {
            self.out.push_str("table.header(");
            for (r, row) in table.head.iter().enumerate() {
                self.row(row, &grid, r, true);
            }
            self.out.push_str("), ");
        }
        for (r, row) in table.body.iter().enumerate() {
            self.row(row, &grid, table.head.len() + r, false);
        }
        self.out.push_str(")\n\n");
    }

    fn row(&mut self, row: &'a crate::document::Row, grid: &Grid, r: usize, head: bool) {
        for (cell, rowspan) in row.cells.iter().zip(&grid.rowspans[r]) {
            let align = match cell.align {
                Align::Center => ", align: center",
                Align::Right => ", align: right",
                Align::Left => ", align: left",
                Align::Default | Align::Justify => "",
            };
            let _ = write!(
                self.out,
                "table.cell(colspan: {}, rowspan: {rowspan}{align})[",
                cell.colspan.max(1)
            );
            if head || cell.header {
                self.out.push_str("#set text(weight: \"bold\")\n");
            }
            self.nested(&cell.blocks);
            self.out.push_str("], ");
        }
        for _ in 0..grid.free[r] {
            self.out.push_str("[], ");
        }
    }

    /// `image(…)` sized to fit `width` × `height` inches, or the alt text where the image is
    /// missing. Warns once per image printed below [`MIN_DPI`].
    fn figure_image(&mut self, id: &'a str, alt: &str, width: f64, height: f64) {
        let (Some(image), true) = (self.images.get(id), self.resources.contains_key(id)) else {
            self.out.push_str("emph(");
            push_literal(&mut self.out, alt);
            self.out.push(')');
            return;
        };
        let (px_w, px_h) = (
            f64::from(image.width.max(1)),
            f64::from(image.height.max(1)),
        );
        let scale = (width / px_w).min(height / px_h);
        let (w, h) = (px_w * scale, px_h * scale);
        let dpi = px_w / w;
        if image.media_type != "image/svg+xml" && dpi < MIN_DPI && !self.warned_images.contains(&id)
        {
            self.warned_images.push(id);
            self.warnings.push(Warning::new(
                "print_image_low_resolution",
                format!(
                    "The image {id} ({}×{} pixels) prints {w:.2}×{h:.2} in at {dpi:.0} dpi, below the {MIN_DPI:.0} dpi printers ask for; it may look soft. Supply it at {:.0}×{:.0} pixels or more.",
                    image.width,
                    image.height,
                    (w * MIN_DPI).ceil(),
                    (h * MIN_DPI).ceil()
                ),
            ));
        }
        self.out.push_str("image(");
        push_literal(&mut self.out, &format!("{IMAGES}{id}"));
        let _ = write!(self.out, ", width: {w:.4}in, alt: ");
        push_literal(&mut self.out, alt);
        self.out.push(')');
    }

    /// The chapter's opening paragraph, its first words in small capitals when `lead` says.
    fn lead_in(&mut self, content: &'a [Inline], lead: Option<Cut>) {
        self.out.push_str("#par[");
        match lead {
            Some(cut) => self.text_block_cut(content, cut),
            None => self.text_block(content),
        }
        self.out.push_str("]\n\n");
    }

    /// A text block whose words before `cut` are a lead-in, in small capitals.
    fn text_block_cut(&mut self, content: &'a [Inline], cut: Cut) {
        let block = self.next_block;
        self.next_block += 1;
        let saved = self.current.replace((block, 0));
        self.out.push_str("#bindery-lead-in[");
        self.inlines(&content[..cut.index]);
        let split = match content.get(cut.index) {
            Some(Inline::Text(t)) if cut.byte > 0 => Some(t.as_str()),
            _ => None,
        };
        if let Some(t) = split {
            self.text(&t[..cut.byte]);
        }
        self.out.push(']');
        match split {
            Some(t) => {
                self.text(&t[cut.byte..]);
                self.inlines(&content[cut.index + 1..]);
            }
            None => self.inlines(&content[cut.index..]),
        }
        self.current = saved;
    }

    /// The opening paragraph with a drop cap: its first `cap` bytes large, beside the words
    /// that follow, one by one, for the template to fill the lines with
    /// (`bindery-drop-cap`), the lead-in's among them in small capitals.
    fn drop_cap(&mut self, content: &'a [Inline], cap: usize, lead: Option<Cut>) {
        let block = self.next_block;
        self.next_block += 1;
        let saved = self.current.replace((block, 0));
        let first = content
            .iter()
            .position(|i| matches!(i, Inline::Text(_)))
            .unwrap_or(0);
        self.out.push_str("#bindery-drop-cap([");
        let Some(Inline::Text(opening_text)) = content.get(first) else {
            self.current = saved;
            return;
        };
        self.text(&opening_text[..cap]);
        self.out.push_str("], (");
        let in_lead = |index: usize, byte: usize| {
            lead.is_some_and(|cut| index < cut.index || (index == cut.index && byte < cut.byte))
        };
        let mut words = 0;
        let mut rest_from: Option<(usize, usize)> = None;
        'inlines: for (index, inline) in content.iter().enumerate().skip(first) {
            match inline {
                Inline::Text(t) => {
                    let start = if index == first { cap } else { 0 };
                    let mut at = start;
                    for piece in t[start..].split_inclusive(char::is_whitespace) {
                        if words >= DROP_CAP_WORDS && !piece.trim().is_empty() {
                            rest_from = Some((index, at));
                            break 'inlines;
                        }
                        let lead_in = in_lead(index, at);
                        self.out
                            .push_str(if lead_in { "[#bindery-lead-in[" } else { "[" });
                        self.text(piece);
                        self.out.push_str(if lead_in { "]], " } else { "], " });
                        if piece.ends_with(char::is_whitespace) {
                            words += 1;
                        }
                        at += piece.len();
                    }
                }
                _ => {
                    if words >= DROP_CAP_WORDS {
                        rest_from = Some((index, 0));
                        break 'inlines;
                    }
                    let lead_in = in_lead(index, 0);
                    self.out
                        .push_str(if lead_in { "[#bindery-lead-in[" } else { "[" });
                    self.inline(inline);
                    self.out.push_str(if lead_in { "]], " } else { "], " });
                }
            }
        }
        self.out.push_str("), [");
        if let Some((index, byte)) = rest_from {
            match &content[index] {
                Inline::Text(t) if byte > 0 => {
                    self.text(&t[byte..]);
                    self.inlines(&content[index + 1..]);
                }
                _ => self.inlines(&content[index..]),
            }
        }
        self.out.push_str("])\n\n");
        self.current = saved;
        self.after_drop_cap = true;
    }

    /// A text block with nothing to print: counted all the same.
    fn skip_text_block(&mut self) {
        if !self.in_note {
            self.next_block += 1;
        }
    }

    /// A text block: counts it, then writes its inlines with their places recorded.
    fn text_block(&mut self, inlines: &'a [Inline]) {
        if self.in_note {
            // A note's paragraphs are not the chapter's text blocks.
            self.inlines(inlines);
            return;
        }
        let block = self.next_block;
        self.next_block += 1;
        let saved = self.current.replace((block, 0));
        self.inlines(inlines);
        self.current = saved;
    }

    fn inlines(&mut self, inlines: &'a [Inline]) {
        for inline in inlines {
            self.inline(inline);
        }
    }

    fn inline(&mut self, inline: &'a Inline) {
        let wrap = |f: &str| format!("#{f}[");
        match inline {
            Inline::Text(text) => self.text(text),
            Inline::Code(text) => {
                self.out.push_str("#bindery-mono[");
                self.text(text);
                self.out.push(']');
            }
            Inline::LineBreak => {
                self.out.push_str("#linebreak()");
                self.advance(1);
            }
            Inline::Emphasis(c)
            | Inline::Strong(c)
            | Inline::Underline(c)
            | Inline::Strikethrough(c)
            | Inline::Superscript(c)
            | Inline::Subscript(c)
            | Inline::SmallCaps(c) => {
                let f = match inline {
                    Inline::Emphasis(_) => "emph",
                    Inline::Strong(_) => "strong",
                    Inline::Underline(_) => "underline",
                    Inline::Strikethrough(_) => "strike",
                    Inline::Superscript(_) => "super",
                    Inline::Subscript(_) => "sub",
                    _ => "smallcaps",
                };
                self.out.push_str(&wrap(f));
                self.inlines(c);
                self.out.push(']');
            }
            // Print has no links to follow: their text is what prints.
            Inline::Link { content, .. } => self.inlines(content),
            Inline::Lang { lang, content } => match typst_language(lang) {
                Some((lang, region)) => {
                    let _ = write!(self.out, "#text(lang: \"{lang}\"");
                    if let Some(region) = region {
                        let _ = write!(self.out, ", region: \"{region}\"");
                    }
                    self.out.push_str(")[");
                    self.inlines(content);
                    self.out.push(']');
                }
                None => self.inlines(content),
            },
            Inline::Image { image, alt } => {
                // An image in a line of text is as tall as a line or two at most.
                self.out.push_str("#box(");
                self.figure_image(image, alt, self.room.width, 0.25);
                self.out.push(')');
            }
            Inline::Math(math) => {
                // Laid out by Typst's math from its MathML (TeX and Word equations alike), or
                // where that cannot be read, its characters in italics. Either is one piece for
                // the page starts: a page beginning inside it begins after it.
                let text = math.text();
                match math
                    .mathml
                    .as_deref()
                    .and_then(|mathml| super::equations::equation(mathml, math.display))
                {
                    Some(equation) => self.out.push_str(&equation),
                    None => {
                        self.out.push_str(if math.display {
                            "#linebreak()#h(1fr)#emph("
                        } else {
                            "#emph("
                        });
                        push_literal(&mut self.out, &text);
                        self.out.push(')');
                        if math.display {
                            self.out.push_str("#h(1fr)#linebreak()");
                        }
                    }
                }
                self.advance(text.len());
            }
            Inline::NoteRef(id) => self.note(id),
            // Where another edition's page begins is nothing on this one's.
            Inline::Anchor(_) | Inline::PrintPage(_) => {}
        }
    }

    fn note(&mut self, id: &'a str) {
        if self.in_note {
            return;
        }
        let Some(note) = self.notes.get(id).copied() else {
            return;
        };
        if let Some(n) = self.printed_notes.get(id) {
            let _ = write!(self.out, "#footnote(<bindery-note-{n}>)");
            return;
        }
        let n = self.note_labels;
        self.note_labels += 1;
        self.printed_notes.insert(id, n);
        if let Some(number) = self.note_numbers.get(id) {
            let _ = write!(
                self.out,
                "#counter(footnote).update({})",
                number.saturating_sub(1)
            );
        }
        let saved = self.current.take();
        let saved_block = self.next_block;
        self.in_note = true;
        self.out.push_str("#footnote[");
        // The note's first paragraph runs on from its number.
        let rest = match note.blocks.split_first() {
            Some((Block::Paragraph { content, .. }, rest)) => {
                self.inlines(content);
                self.out.push_str("\n\n");
                rest
            }
            _ => note.blocks.as_slice(),
        };
        self.blocks(rest);
        let _ = write!(self.out, "]<bindery-note-{n}>");
        self.in_note = false;
        self.next_block = saved_block;
        self.current = saved;
    }

    fn text(&mut self, text: &str) {
        // The two- and three-em dashes are in none of the bundled fonts: em dashes set close
        // stand in for them, outside the recorded text, which keeps its offsets.
        let mut rest = text;
        while let Some(at) = rest.find(['\u{2e3a}', '\u{2e3b}']) {
            let (before, dash) = rest.split_at(at);
            self.text_run(before);
            let (width, after) = if dash.starts_with('\u{2e3a}') {
                (2, &dash['\u{2e3a}'.len_utf8()..])
            } else {
                (3, &dash['\u{2e3b}'.len_utf8()..])
            };
            let _ = write!(self.out, "#bindery-dash({width})");
            self.advance(dash.len() - after.len());
            rest = after;
        }
        self.text_run(rest);
    }

    fn text_run(&mut self, text: &str) {
        let mut rest = text;
        while !rest.is_empty() {
            let mut cut = rest.len().min(MAX_LITERAL);
            while !rest.is_char_boundary(cut) {
                cut -= 1;
            }
            let (piece, after) = rest.split_at(cut);
            // Whitespace that would break the line in Typst is a space in the book's text;
            // the same number of bytes, so offsets still hold.
            let piece = piece.replace(['\n', '\r', '\t'], " ");
            self.out.push('#');
            let start = self.out.len();
            push_literal(&mut self.out, &piece);
            if let Some((block, offset)) = self.current {
                self.literals.push(Literal {
                    start,
                    end: self.out.len(),
                    at: TextPosition {
                        chapter: self.chapter,
                        block,
                        offset,
                    },
                });
            }
            self.advance(piece.len());
            rest = after;
        }
    }

    fn advance(&mut self, bytes: usize) {
        if let Some((_, offset)) = &mut self.current {
            *offset += bytes;
        }
    }
}

/// Typst's `lang` and `region` for a BCP 47 tag: its language and region subtags, when they
/// have the shapes Typst takes.
pub(crate) fn typst_language(tag: &str) -> Option<(String, Option<String>)> {
    let mut parts = tag.split(['-', '_']);
    let lang = parts.next()?.to_ascii_lowercase();
    if !(2..=3).contains(&lang.len()) || !lang.bytes().all(|b| b.is_ascii_lowercase()) {
        return None;
    }
    let region = parts
        .find(|p| p.len() == 2 && p.bytes().all(|b| b.is_ascii_alphabetic()))
        .map(|r| r.to_ascii_lowercase());
    Some((lang, region))
}

/// A table's shape as Typst places its cells: the columns, each cell's row span kept inside
/// its section, and the empty cells that fill each row out.
struct Grid {
    columns: usize,
    rowspans: Vec<Vec<usize>>,
    free: Vec<usize>,
}

impl Grid {
    fn of(table: &Table) -> Grid {
        let rows: Vec<(&crate::document::Row, usize)> = table
            .head
            .iter()
            .map(|r| (r, table.head.len()))
            .chain(
                table
                    .body
                    .iter()
                    .map(|r| (r, table.head.len() + table.body.len())),
            )
            .collect();
        let mut occupied: Vec<Vec<bool>> = vec![Vec::new(); rows.len()];
        let mut rowspans = Vec::with_capacity(rows.len());
        for (r, (row, section_end)) in rows.iter().enumerate() {
            let mut col = 0;
            let mut spans = Vec::with_capacity(row.cells.len());
            for cell in &row.cells {
                while occupied[r].get(col).copied().unwrap_or(false) {
                    col += 1;
                }
                let rowspan = (cell.rowspan.max(1) as usize).min(section_end - r);
                let colspan = cell.colspan.max(1) as usize;
                for taken in occupied.iter_mut().skip(r).take(rowspan) {
                    if taken.len() < col + colspan {
                        taken.resize(col + colspan, false);
                    }
                    taken[col..col + colspan].iter_mut().for_each(|t| *t = true);
                }
                spans.push(rowspan);
                col += colspan;
            }
            rowspans.push(spans);
        }
        let columns = occupied.iter().map(Vec::len).max().unwrap_or(0);
        let free = occupied
            .iter()
            .map(|row| columns - row.iter().filter(|t| **t).count())
            .collect();
        Grid {
            columns,
            rowspans,
            free,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::{Cell, Row};

    #[test]
    fn languages_become_typst_lang_and_region() {
        assert_eq!(
            typst_language("en-GB"),
            Some(("en".into(), Some("gb".into())))
        );
        assert_eq!(typst_language("de"), Some(("de".into(), None)));
        assert_eq!(
            typst_language("zh-Hant-TW").map(|l| l.1),
            Some(Some("tw".into()))
        );
        assert_eq!(typst_language("x-klingon"), None);
    }

    #[test]
    fn a_table_grid_counts_spans_and_fills_short_rows() {
        let cell = |colspan, rowspan| Cell {
            colspan,
            rowspan,
            ..Cell::new(vec![])
        };
        let table = Table {
            caption: vec![],
            head: vec![Row {
                cells: vec![cell(1, 2), cell(2, 1)],
            }],
            body: vec![
                Row {
                    cells: vec![cell(1, 1), cell(1, 1), cell(1, 1)],
                },
                Row {
                    cells: vec![cell(1, 5)],
                },
            ],
        };
        let grid = Grid::of(&table);
        assert_eq!(grid.columns, 3);
        // The head's row span stays in the head.
        assert_eq!(grid.rowspans[0], vec![1, 1]);
        // The last row's span is cut to the table's end; two cells are left to fill.
        assert_eq!(grid.rowspans[2], vec![1]);
        assert_eq!(grid.free, vec![0, 0, 2]);
    }
}
