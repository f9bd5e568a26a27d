//! Building the document model from a stream of "open this, text, close that" calls.
//!
//! Both Markdown events and raw HTML tags drive the same builder, so an `<em>` in HTML and a
//! `*` in Markdown end up as the same [`Inline::Emphasis`], and mis-nested or unclosed input
//! (common in hand-written HTML) is repaired in one place: closing a frame closes everything
//! opened inside it, and whatever is still open at the end is closed.

use crate::document::{
    Align, Block, Cell, Definition, Inline, LinkTarget, ListKind, Note, NoteKind, Row, Table,
    inline_text,
};
use crate::manuscript::InputError;

use super::resources::Resources;

/// A container of blocks.
#[derive(Debug)]
pub(crate) enum BlockKind {
    Root,
    Quote,
    List {
        kind: ListKind,
        start: u32,
        items: Vec<Vec<Block>>,
    },
    Item,
    Note(String),
    DefinitionList(Vec<Definition>),
    Definition,
    Table {
        aligns: Vec<Align>,
        head: Vec<Row>,
        body: Vec<Row>,
        in_head: bool,
    },
    Row(Vec<Cell>),
    Cell {
        header: bool,
        colspan: u32,
        rowspan: u32,
    },
    /// HTML `<div lang>`: its paragraphs are wrapped in [`Inline::Lang`].
    Lang(String),
    /// A container nested past [`MAX_DEPTH`]: its blocks join its parent's.
    Flat,
}

/// How deep blocks (or inlines) may nest in the model. Deeper input (100,000 `>` on a line
/// is a few hundred kilobytes) is flattened, so nothing that walks the tree recursively
/// can overflow the stack; no real book comes close.
pub(crate) const MAX_DEPTH: usize = 40;
/// End tags look this far up the open elements for their start tag, so a flood of
/// unmatched tags stays linear.
const MATCH_WINDOW: usize = 64;

#[derive(Debug)]
struct BlockFrame {
    kind: BlockKind,
    blocks: Vec<Block>,
    /// Opened by an HTML tag of this name (so only its end tag closes it).
    html: Option<&'static str>,
    /// Whether it is a level of nesting as an author counts them (a list, a quote, a
    /// table…), not a part of one (an item, a row, a cell).
    level: bool,
}

/// Where the input nested past [`MAX_DEPTH`], for the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Flattened {
    /// The source offset (of the event being read) where flattening first began.
    pub offset: usize,
    /// The nesting level (lists, quotes…) of the first container flattened.
    pub from_level: usize,
    /// The deepest nesting level the input reached.
    pub deepest: usize,
}

/// What a run of inline content becomes when it ends.
#[derive(Debug, Clone)]
pub(crate) enum LeafKind {
    Paragraph,
    /// Loose text in a tight list item, a table cell or an HTML container.
    Implicit,
    Heading {
        level: u8,
        id: Option<String>,
    },
    Term,
    /// HTML's `<figcaption>` (and a table's `<caption>`): the caption of the figure or table
    /// just before it, or else a paragraph.
    Caption,
}

/// An inline container.
#[derive(Debug, Clone)]
pub(crate) enum InlineKind {
    Root,
    Emphasis,
    Strong,
    Underline,
    Strikethrough,
    Superscript,
    Subscript,
    SmallCaps,
    /// HTML `<code>`: its text becomes [`Inline::Code`].
    Code,
    Link(Option<LinkTarget>),
    Image {
        url: String,
        title: String,
    },
    Lang(String),
    /// Content removed with its element (`<script>`, `<svg>`…).
    Drop(&'static str),
    /// Content a page repeats that the model holds otherwise (a note reference's number,
    /// a page-break marker), removed without a word.
    Omit,
    /// An element whose tag is dropped and whose content is kept.
    Transparent,
}

#[derive(Debug)]
struct InlineFrame {
    kind: InlineKind,
    children: Vec<Inline>,
    html: Option<&'static str>,
}

#[derive(Debug)]
struct Leaf {
    kind: LeafKind,
    frames: Vec<InlineFrame>,
    /// How many of `frames` drop their content.
    drops: usize,
}

pub(crate) struct Builder<'r, 'l> {
    pub res: &'r mut Resources<'l>,
    stack: Vec<BlockFrame>,
    leaf: Option<Leaf>,
    pub notes: Vec<Note>,
    /// Titles of images by id, for figure captions.
    image_titles: Vec<(String, String)>,
    /// The source offset of the event being read (set by the reader), for [`Flattened`].
    pub offset: usize,
    /// Nesting levels open (see [`BlockFrame::level`]), flattened ones included.
    levels: usize,
    /// Set once input nests past [`MAX_DEPTH`].
    pub flattened: Option<Flattened>,
}

impl<'r, 'l> Builder<'r, 'l> {
    pub fn new(res: &'r mut Resources<'l>) -> Self {
        Builder {
            res,
            stack: vec![BlockFrame {
                kind: BlockKind::Root,
                blocks: Vec::new(),
                html: None,
                level: false,
            }],
            leaf: None,
            notes: Vec::new(),
            image_titles: Vec::new(),
            offset: 0,
            levels: 0,
            flattened: None,
        }
    }

    /// Everything built, all frames closed.
    pub fn finish(mut self) -> Result<(Vec<Block>, Vec<Note>), InputError> {
        self.close_leaf()?;
        while self.stack.len() > 1 {
            self.close_block()?;
        }
        let blocks = self.stack.pop().map(|f| f.blocks).unwrap_or_default();
        Ok((blocks, self.notes))
    }

    // ----- blocks -----

    pub fn depth(&self) -> usize {
        self.stack.len()
    }

    pub fn open_block(
        &mut self,
        kind: BlockKind,
        html: Option<&'static str>,
    ) -> Result<(), InputError> {
        self.close_leaf()?;
        self.res.meter.element()?;
        let level = matches!(
            kind,
            BlockKind::Quote
                | BlockKind::List { .. }
                | BlockKind::Note(_)
                | BlockKind::DefinitionList(_)
                | BlockKind::Table { .. }
                | BlockKind::Lang(_)
        );
        if level {
            self.levels += 1;
        }
        let kind = if self.stack.len() >= MAX_DEPTH {
            let flattened = self.flattened.get_or_insert(Flattened {
                offset: self.offset,
                from_level: self.levels.max(1),
                deepest: 0,
            });
            flattened.deepest = flattened.deepest.max(self.levels);
            BlockKind::Flat
        } else {
            kind
        };
        self.stack.push(BlockFrame {
            kind,
            blocks: Vec::new(),
            html,
            level,
        });
        Ok(())
    }

    /// Closes the innermost block container (and any text still open in it).
    pub fn close_block(&mut self) -> Result<(), InputError> {
        self.close_leaf()?;
        if self.stack.len() <= 1 {
            return Ok(());
        }
        let Some(frame) = self.stack.pop() else {
            return Ok(());
        };
        if frame.level {
            self.levels -= 1;
        }
        let blocks = frame.blocks;
        match frame.kind {
            BlockKind::Root => {}
            BlockKind::Quote => self.push_block(Block::BlockQuote(blocks)),
            BlockKind::List {
                kind,
                start,
                mut items,
            } => {
                // Loose blocks directly in a list (HTML without <li>) form their own item.
                if !blocks.is_empty() {
                    items.push(blocks);
                }
                self.push_block(Block::List { kind, start, items });
            }
            BlockKind::Item => match self.top_mut() {
                BlockKind::List { items, .. } => items.push(blocks),
                _ => self.extend_blocks(blocks),
            },
            BlockKind::Note(id) => self.notes.push(Note {
                id,
                kind: NoteKind::Footnote,
                blocks,
            }),
            BlockKind::DefinitionList(definitions) => {
                // Blocks outside any term/definition (malformed HTML) are kept after it.
                if !definitions.is_empty() {
                    self.push_block(Block::DefinitionList(definitions));
                }
                self.extend_blocks(blocks);
            }
            BlockKind::Definition => match self.top_mut() {
                BlockKind::DefinitionList(definitions) => {
                    if definitions.is_empty() {
                        definitions.push(Definition {
                            term: Vec::new(),
                            definitions: Vec::new(),
                        });
                    }
                    if let Some(last) = definitions.last_mut() {
                        last.definitions.push(blocks);
                    }
                }
                _ => self.extend_blocks(blocks),
            },
            BlockKind::Table { head, body, .. } => {
                if !head.is_empty() || !body.is_empty() {
                    self.push_block(Block::Table(Table {
                        caption: Vec::new(),
                        head,
                        body,
                    }));
                }
                self.extend_blocks(blocks);
            }
            BlockKind::Row(cells) => {
                let row = Row { cells };
                match self.top_mut() {
                    BlockKind::Table {
                        head,
                        body,
                        in_head,
                        ..
                    } => {
                        if *in_head {
                            head.push(row)
                        } else {
                            body.push(row)
                        }
                    }
                    _ => {
                        let blocks = row.cells.into_iter().flat_map(|c| c.blocks).collect();
                        self.extend_blocks(blocks);
                    }
                }
            }
            BlockKind::Cell {
                header,
                colspan,
                rowspan,
            } => {
                let column = match self.top_mut() {
                    BlockKind::Row(cells) => Some(cells.len()),
                    _ => None,
                };
                let align = column
                    .and_then(|c| self.table_aligns().and_then(|a| a.get(c).copied()))
                    .unwrap_or_default();
                let cell = Cell {
                    header,
                    colspan,
                    rowspan,
                    align,
                    blocks,
                };
                match self.top_mut() {
                    BlockKind::Row(cells) => cells.push(cell),
                    _ => self.extend_blocks(cell.blocks),
                }
            }
            BlockKind::Flat => self.extend_blocks(blocks),
            BlockKind::Lang(lang) => {
                let wrapped = blocks.into_iter().map(|b| wrap_lang(b, &lang)).collect();
                self.extend_blocks(wrapped);
            }
        }
        Ok(())
    }

    /// Closes block containers down to and including the innermost one opened by the HTML
    /// tag `name`, if there is one at or above `floor`.
    pub fn close_html_block(&mut self, name: &str, floor: usize) -> Result<bool, InputError> {
        let window = self.stack.len().saturating_sub(MATCH_WINDOW);
        let Some(at) = self.stack[window..]
            .iter()
            .rposition(|f| f.html == Some(name))
            .map(|i| i + window)
        else {
            return Ok(false);
        };
        if at < floor.max(1) {
            return Ok(false);
        }
        while self.stack.len() > at {
            self.close_block()?;
        }
        Ok(true)
    }

    pub fn in_block(&self, test: impl Fn(&BlockKind) -> bool) -> bool {
        self.stack.last().is_some_and(|f| test(&f.kind))
    }

    pub fn set_table_head(&mut self, head: bool) {
        if let Some(BlockKind::Table { in_head, .. }) = self
            .stack
            .iter_mut()
            .rev()
            .map(|f| &mut f.kind)
            .find(|k| matches!(k, BlockKind::Table { .. }))
        {
            *in_head = head;
        }
    }

    fn table_aligns(&self) -> Option<&Vec<Align>> {
        self.stack.iter().rev().find_map(|f| match &f.kind {
            BlockKind::Table { aligns, .. } => Some(aligns),
            _ => None,
        })
    }

    fn top_mut(&mut self) -> &mut BlockKind {
        // The root frame is never popped, so there is always a top.
        let len = self.stack.len();
        &mut self.stack[len.saturating_sub(1)].kind
    }

    /// A finished block, added to the innermost container after any open text.
    pub fn add_block(&mut self, block: Block) -> Result<(), InputError> {
        self.close_leaf()?;
        self.res.meter.element()?;
        self.push_block(block);
        Ok(())
    }

    fn push_block(&mut self, block: Block) {
        let len = self.stack.len();
        let blocks = &mut self.stack[len.saturating_sub(1)].blocks;
        // Two scene breaks in a row are one change of scene.
        if block == Block::SceneBreak && blocks.last() == Some(&Block::SceneBreak) {
            return;
        }
        blocks.push(block);
    }

    fn extend_blocks(&mut self, blocks: Vec<Block>) {
        for block in blocks {
            self.push_block(block);
        }
    }

    // ----- inline leaves -----

    pub fn open_leaf(&mut self, kind: LeafKind) -> Result<(), InputError> {
        self.close_leaf()?;
        self.res.meter.element()?;
        self.leaf = Some(Leaf {
            kind,
            frames: vec![InlineFrame {
                kind: InlineKind::Root,
                children: Vec::new(),
                html: None,
            }],
            drops: 0,
        });
        Ok(())
    }

    /// Ends the current run of inline content, turning it into its block.
    pub fn close_leaf(&mut self) -> Result<(), InputError> {
        let Some(mut leaf) = self.leaf.take() else {
            return Ok(());
        };
        while leaf.frames.len() > 1 {
            self.pop_inline_frame(&mut leaf)?;
        }
        let mut content = leaf.frames.pop().map(|f| f.children).unwrap_or_default();
        trim_inlines(&mut content);
        let block = match leaf.kind {
            LeafKind::Term => {
                if let BlockKind::DefinitionList(definitions) = self.top_mut() {
                    definitions.push(Definition {
                        term: content,
                        definitions: Vec::new(),
                    });
                    return Ok(());
                }
                paragraph(content)
            }
            LeafKind::Caption => {
                if content.is_empty() {
                    return Ok(());
                }
                let len = self.stack.len();
                let blocks = &mut self.stack[len.saturating_sub(1)].blocks;
                match blocks.last_mut() {
                    Some(Block::Figure { caption, .. }) if caption.is_empty() => {
                        *caption = content;
                        return Ok(());
                    }
                    Some(Block::Table(table)) if table.caption.is_empty() => {
                        table.caption = content;
                        return Ok(());
                    }
                    _ => paragraph(content),
                }
            }
            LeafKind::Heading { level, id } => {
                if inline_text(&content).trim().is_empty() && !has_image(&content) {
                    // `#` alone: an empty heading is a scene break, not a chapter.
                    Block::SceneBreak
                } else {
                    Block::Heading { level, id, content }
                }
            }
            LeafKind::Paragraph | LeafKind::Implicit => {
                if content.is_empty() {
                    return Ok(());
                }
                self.paragraph_or_figure(content)
            }
        };
        self.push_block(block);
        Ok(())
    }

    fn paragraph_or_figure(&mut self, content: Vec<Inline>) -> Block {
        if let [Inline::Image { image, alt }] = content.as_slice() {
            let caption = self
                .image_titles
                .iter()
                .find(|(id, _)| id == image)
                .map(|(_, t)| t.clone())
                .filter(|t| !t.is_empty())
                .map(|t| vec![Inline::Text(t)])
                .unwrap_or_default();
            return Block::Figure {
                image: image.clone(),
                alt: alt.clone(),
                caption,
            };
        }
        let equation = content.iter().any(|i| matches!(i, Inline::Math(_)));
        if !has_image(&content)
            && !equation
            && crate::manuscript::text::is_scene_break(&inline_text(&content))
        {
            return Block::SceneBreak;
        }
        paragraph(content)
    }

    fn ensure_leaf(&mut self) -> Result<&mut Leaf, InputError> {
        if self.leaf.is_none() {
            self.open_leaf(LeafKind::Implicit)?;
        }
        match self.leaf.as_mut() {
            Some(leaf) => Ok(leaf),
            None => Err(InputError::NoText),
        }
    }

    // ----- inline content -----

    pub fn text(&mut self, text: &str) -> Result<(), InputError> {
        if text.is_empty() {
            return Ok(());
        }
        if self.leaf.is_none() && text.trim().is_empty() {
            return Ok(());
        }
        self.res.meter.text(text)?;
        let leaf = self.ensure_leaf()?;
        push_text(top_children(leaf), text);
        Ok(())
    }

    pub fn inline(&mut self, inline: Inline) -> Result<(), InputError> {
        self.res.meter.element()?;
        let leaf = self.ensure_leaf()?;
        top_children(leaf).push(inline);
        Ok(())
    }

    pub fn open_inline(
        &mut self,
        kind: InlineKind,
        html: Option<&'static str>,
    ) -> Result<(), InputError> {
        self.res.meter.element()?;
        let leaf = self.ensure_leaf()?;
        let kind = match kind {
            // Past the depth limit, formatting is dropped and text kept.
            InlineKind::Emphasis
            | InlineKind::Strong
            | InlineKind::Underline
            | InlineKind::Strikethrough
            | InlineKind::Superscript
            | InlineKind::Subscript
            | InlineKind::SmallCaps
            | InlineKind::Link(_)
            | InlineKind::Lang(_)
                if leaf.frames.len() >= MAX_DEPTH =>
            {
                InlineKind::Transparent
            }
            other => other,
        };
        if matches!(kind, InlineKind::Drop(_) | InlineKind::Omit) {
            leaf.drops += 1;
        }
        leaf.frames.push(InlineFrame {
            kind,
            children: Vec::new(),
            html,
        });
        Ok(())
    }

    /// Closes the innermost inline frame opened by Markdown (HTML frames inside it close
    /// with it).
    pub fn close_inline(&mut self) -> Result<(), InputError> {
        let Some(mut leaf) = self.leaf.take() else {
            return Ok(());
        };
        while leaf.frames.len() > 1 {
            let markdown = leaf.frames.last().is_some_and(|f| f.html.is_none());
            self.pop_inline_frame(&mut leaf)?;
            if markdown {
                break;
            }
        }
        self.leaf = Some(leaf);
        Ok(())
    }

    /// Closes the innermost inline frame opened by HTML tag `name`, unless a Markdown
    /// frame lies in between (`*<em>a*</em>` must not close the Markdown emphasis).
    pub fn close_html_inline(&mut self, name: &str) -> Result<bool, InputError> {
        let Some(mut leaf) = self.leaf.take() else {
            return Ok(false);
        };
        let found = leaf
            .frames
            .iter()
            .enumerate()
            .skip(1)
            .rev()
            .take(MATCH_WINDOW)
            .take_while(|(_, f)| f.html.is_some())
            .find(|(_, f)| f.html == Some(name))
            .map(|(i, _)| i);
        if let Some(at) = found {
            while leaf.frames.len() > at {
                self.pop_inline_frame(&mut leaf)?;
            }
        }
        self.leaf = Some(leaf);
        Ok(found.is_some())
    }

    /// Whether content is currently being dropped (inside `<script>` and the like).
    pub fn dropping(&self) -> bool {
        self.leaf.as_ref().is_some_and(|l| l.drops > 0)
    }

    fn pop_inline_frame(&mut self, leaf: &mut Leaf) -> Result<(), InputError> {
        let Some(frame) = leaf.frames.pop() else {
            return Ok(());
        };
        if matches!(frame.kind, InlineKind::Drop(_) | InlineKind::Omit) {
            leaf.drops = leaf.drops.saturating_sub(1);
        }
        let children = frame.children;
        let out: Vec<Inline> = match frame.kind {
            InlineKind::Root | InlineKind::Transparent => children,
            InlineKind::Emphasis => wrap(Inline::Emphasis, children),
            InlineKind::Strong => wrap(Inline::Strong, children),
            InlineKind::Underline => wrap(Inline::Underline, children),
            InlineKind::Strikethrough => wrap(Inline::Strikethrough, children),
            InlineKind::Superscript => wrap(Inline::Superscript, children),
            InlineKind::Subscript => wrap(Inline::Subscript, children),
            InlineKind::SmallCaps => wrap(Inline::SmallCaps, children),
            InlineKind::Code => {
                let text = inline_text(&children);
                if text.is_empty() {
                    Vec::new()
                } else {
                    vec![Inline::Code(text)]
                }
            }
            InlineKind::Lang(lang) => {
                if children.is_empty() {
                    Vec::new()
                } else {
                    vec![Inline::Lang {
                        lang,
                        content: children,
                    }]
                }
            }
            InlineKind::Link(Some(target)) if !children.is_empty() => {
                vec![Inline::Link {
                    target,
                    content: children,
                }]
            }
            InlineKind::Link(_) => children,
            InlineKind::Image { url, title } => {
                let alt = inline_text(&children).trim().to_owned();
                match self.res.image(&url, &alt)? {
                    Some(id) => {
                        self.image_titles.push((id.clone(), title));
                        vec![Inline::Image { image: id, alt }]
                    }
                    None => children,
                }
            }
            InlineKind::Omit => Vec::new(),
            InlineKind::Drop(name) => {
                if !inline_text(&children).trim().is_empty() {
                    self.res.warn(
                        "html_dropped",
                        format!("An HTML <{name}> element and its content were removed; ebooks do not allow it."),
                    );
                }
                Vec::new()
            }
        };
        if let Some(parent) = leaf.frames.last_mut() {
            for inline in out {
                match inline {
                    Inline::Text(t) => push_text(&mut parent.children, &t),
                    other => parent.children.push(other),
                }
            }
        }
        Ok(())
    }
}

fn top_children(leaf: &mut Leaf) -> &mut Vec<Inline> {
    let len = leaf.frames.len();
    &mut leaf.frames[len.saturating_sub(1)].children
}

fn push_text(children: &mut Vec<Inline>, text: &str) {
    if let Some(Inline::Text(last)) = children.last_mut() {
        last.push_str(text);
    } else {
        children.push(Inline::Text(text.to_owned()));
    }
}

fn wrap(make: fn(Vec<Inline>) -> Inline, children: Vec<Inline>) -> Vec<Inline> {
    if children.is_empty() {
        Vec::new()
    } else {
        vec![make(children)]
    }
}

fn paragraph(content: Vec<Inline>) -> Block {
    Block::Paragraph {
        align: Align::Default,
        content,
    }
}

fn has_image(content: &[Inline]) -> bool {
    content.iter().any(|i| matches!(i, Inline::Image { .. }))
}

/// Leading and trailing white space of a paragraph is not text.
fn trim_inlines(content: &mut Vec<Inline>) {
    if let Some(Inline::Text(t)) = content.first_mut() {
        let trimmed = t.trim_start();
        if trimmed.len() != t.len() {
            *t = trimmed.to_owned();
        }
    }
    if let Some(Inline::Text(t)) = content.last_mut() {
        t.truncate(t.trim_end().len());
    }
    content.retain(|i| !matches!(i, Inline::Text(t) if t.is_empty()));
}

/// `<div lang="fr">` around paragraphs: the language goes on each paragraph's text.
fn wrap_lang(block: Block, lang: &str) -> Block {
    match block {
        Block::Paragraph { align, content } if !content.is_empty() => Block::Paragraph {
            align,
            content: vec![Inline::Lang {
                lang: lang.to_owned(),
                content,
            }],
        },
        Block::BlockQuote(blocks) => {
            Block::BlockQuote(blocks.into_iter().map(|b| wrap_lang(b, lang)).collect())
        }
        other => other,
    }
}
