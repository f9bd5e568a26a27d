//! Places in a book's text that outlive the way it was laid out: where the print edition's
//! pages begin, so that the ebook can mark the same places.
//!
//! A [`TextPosition`] counts a chapter's *text blocks* in reading order: every heading,
//! paragraph, definition term, table caption and figure caption, nested ones included (a
//! paragraph in a quotation in a list item is one of them). Its `offset` is in bytes into
//! [`inline_text`](super::inline_text) of that block's inlines. The typesetter that reports a
//! position and the writer that marks it both walk the chapter with [`text_blocks`], so the
//! two count the same blocks. Code blocks hold no inlines and are not text blocks: a page that
//! begins inside one is marked at the next text block.
//!
//! [`mark_pages`] puts an [`Inline::PrintPage`] where each page begins, so that every writer
//! (the EPUB, the web reader) shows the same printed pages.

use std::iter::Peekable;

use serde::{Deserialize, Serialize};

use super::{Block, Chapter, Document, Inline};

/// A place in a chapter's text; see the module's documentation for what the numbers count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TextPosition {
    /// Index into [`Document::chapters`](super::Document::chapters).
    pub chapter: usize,
    /// Index into the chapter's [`text_blocks`].
    pub block: usize,
    /// Byte offset into the block's [`inline_text`](super::inline_text), on a character
    /// boundary.
    pub offset: usize,
}

/// Where one printed page begins.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageStart {
    /// The folio as printed (`7`, `xii`).
    pub label: String,
    /// The first of the book's text on the page.
    pub at: TextPosition,
}

/// The inlines of each text block of `chapter`, in reading order.
pub fn text_blocks(chapter: &Chapter) -> Vec<&Vec<Inline>> {
    let mut out = Vec::new();
    walk(&chapter.blocks, &mut out);
    out
}

/// As [`text_blocks`], for a writer that inserts into them.
pub fn text_blocks_mut(chapter: &mut Chapter) -> Vec<&mut Vec<Inline>> {
    let mut out = Vec::new();
    walk_mut(&mut chapter.blocks, &mut out);
    out
}

/// Marks where each printed page begins: an [`Inline::PrintPage`] at each page's position,
/// splitting a `Text` or `Code` leaf there, inside the emphasis, link or other span the
/// offset falls in. A page that begins at the boundary of a span is marked outside it, before
/// what follows (at the start of a block: before all of the block's inlines).
///
/// - Pages keep their order: several pages at one position (a blank verso, a page of front
///   matter the typesetter made, which hold none of the book's text and so are reported at the
///   first text after them) get markers side by side, in the order given. The DAISY Knowledge
///   Base's page-list guidance asks for a marker for every page, blank ones included, so that
///   the list has no gaps; a typesetter that leaves them out gives a list with gaps, which is
///   still valid.
/// - A position past the end clamps: an offset past the block's text marks its end, a block
///   past the chapter's last text block marks the end of that one, a chapter past the book's
///   last marks the end of the last chapter. An offset that is not on a character boundary
///   moves back to the start of its character.
/// - A chapter with no text block (only code or scene breaks) gets a paragraph at its start
///   holding its markers.
///
/// The order of `pages` is the order of the markers at one position; positions need not be
/// sorted. A page whose label is blank is left out: a marker must say which page it is.
/// Marking twice adds markers twice: the pipeline marks a fresh document.
pub fn mark_pages(document: &mut Document, pages: &[PageStart]) {
    let Some(last_chapter) = document.chapters.len().checked_sub(1) else {
        return;
    };
    // Per chapter, per block: (offset, label), in the order given (a stable sort keeps it).
    let mut by_chapter: Vec<Vec<(usize, usize, &str)>> = vec![Vec::new(); last_chapter + 1];
    for page in pages.iter().filter(|p| !p.label.trim().is_empty()) {
        let at = page.at;
        let (chapter, block, offset) = if at.chapter > last_chapter {
            (last_chapter, usize::MAX, usize::MAX)
        } else {
            (at.chapter, at.block, at.offset)
        };
        by_chapter[chapter].push((block, offset, page.label.as_str()));
    }
    for (chapter, mut marks) in document.chapters.iter_mut().zip(by_chapter) {
        if marks.is_empty() {
            continue;
        }
        let mut blocks = text_blocks_mut(chapter);
        let Some(last_block) = blocks.len().checked_sub(1) else {
            let content = marks
                .iter()
                .map(|(_, _, label)| Inline::PrintPage((*label).to_owned()))
                .collect();
            chapter.blocks.insert(
                0,
                Block::Paragraph {
                    align: Default::default(),
                    content,
                },
            );
            continue;
        };
        for mark in &mut marks {
            if mark.0 > last_block {
                *mark = (last_block, usize::MAX, mark.2);
            }
        }
        marks.sort_by_key(|&(block, offset, _)| (block, offset));
        for run in marks.chunk_by(|a, b| a.0 == b.0) {
            let inlines = &mut *blocks[run[0].0];
            let marks: Vec<(usize, &str)> = run.iter().map(|&(_, o, l)| (o, l)).collect();
            insert_markers(inlines, &marks);
        }
    }
}

/// Inserts `marks` (offset into `inline_text(inlines)`, label), sorted by offset, into a text
/// block's inlines.
fn insert_markers(inlines: &mut Vec<Inline>, marks: &[(usize, &str)]) {
    let mut pending = marks.iter().copied().peekable();
    let mut pos = 0;
    insert_in(inlines, &mut pos, &mut pending);
    // Whatever lies at or past the end marks the end.
    inlines.extend(pending.map(|(_, label)| Inline::PrintPage(label.to_owned())));
}

/// One level of [`insert_markers`]: `pos` is the offset where `inlines` begin; marks before or
/// at an inline's start go before it, marks strictly inside it go into it.
fn insert_in<'l>(
    inlines: &mut Vec<Inline>,
    pos: &mut usize,
    pending: &mut Peekable<impl Iterator<Item = (usize, &'l str)>>,
) {
    let old = std::mem::take(inlines);
    for inline in old {
        while let Some((_, label)) = pending.next_if(|&(offset, _)| offset <= *pos) {
            inlines.push(Inline::PrintPage(label.to_owned()));
        }
        let start = *pos;
        let end = start + text_len(&inline);
        if pending.peek().is_none_or(|&(offset, _)| offset >= end) {
            *pos = end;
            inlines.push(inline);
            continue;
        }
        match inline {
            Inline::Text(text) => split_leaf(inlines, &text, start, pending, Inline::Text),
            Inline::Code(text) => split_leaf(inlines, &text, start, pending, Inline::Code),
            mut container => {
                if let Some(children) = container.children_mut() {
                    insert_in(children, pos, pending);
                }
                inlines.push(container);
            }
        }
        *pos = end;
    }
}

/// A `Text` or `Code` leaf starting at offset `start`, cut where the marks inside it fall
/// (each moved back to a character boundary), markers between the pieces.
fn split_leaf<'l>(
    out: &mut Vec<Inline>,
    text: &str,
    start: usize,
    pending: &mut Peekable<impl Iterator<Item = (usize, &'l str)>>,
    leaf: fn(String) -> Inline,
) {
    let end = start + text.len();
    let mut from = 0;
    while let Some((offset, label)) = pending.next_if(|&(offset, _)| offset < end) {
        let mut cut = offset - start;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        if cut > from {
            out.push(leaf(text[from..cut].to_owned()));
            from = cut;
        }
        out.push(Inline::PrintPage(label.to_owned()));
    }
    if from < text.len() {
        out.push(leaf(text[from..].to_owned()));
    }
}

/// Bytes an inline adds to [`inline_text`](super::inline_text).
fn text_len(inline: &Inline) -> usize {
    match inline {
        Inline::Text(t) | Inline::Code(t) => t.len(),
        Inline::LineBreak => 1,
        // An equation is one piece: a page that begins inside it is marked after it.
        Inline::Math(math) => math.text().len(),
        other => other.children().map_or(0, |c| c.iter().map(text_len).sum()),
    }
}

// The two walks must visit the same blocks in the same order; `walks_agree` holds them to it.
fn walk<'a>(blocks: &'a [Block], out: &mut Vec<&'a Vec<Inline>>) {
    for block in blocks {
        match block {
            Block::Heading { content, .. } | Block::Paragraph { content, .. } => out.push(content),
            Block::BlockQuote(blocks) => walk(blocks, out),
            Block::List { items, .. } => items.iter().for_each(|item| walk(item, out)),
            Block::DefinitionList(items) => {
                for item in items {
                    out.push(&item.term);
                    item.definitions.iter().for_each(|d| walk(d, out));
                }
            }
            Block::Table(table) => {
                out.push(&table.caption);
                for row in table.head.iter().chain(&table.body) {
                    row.cells.iter().for_each(|cell| walk(&cell.blocks, out));
                }
            }
            Block::Figure { caption, .. } => out.push(caption),
            Block::CodeBlock { .. } | Block::SceneBreak | Block::PageBreak => {}
        }
    }
}

fn walk_mut<'a>(blocks: &'a mut [Block], out: &mut Vec<&'a mut Vec<Inline>>) {
    for block in blocks {
        match block {
            Block::Heading { content, .. } | Block::Paragraph { content, .. } => out.push(content),
            Block::BlockQuote(blocks) => walk_mut(blocks, out),
            Block::List { items, .. } => items.iter_mut().for_each(|item| walk_mut(item, out)),
            Block::DefinitionList(items) => {
                for item in items {
                    out.push(&mut item.term);
                    item.definitions.iter_mut().for_each(|d| walk_mut(d, out));
                }
            }
            Block::Table(table) => {
                out.push(&mut table.caption);
                for row in table.head.iter_mut().chain(&mut table.body) {
                    row.cells
                        .iter_mut()
                        .for_each(|cell| walk_mut(&mut cell.blocks, out));
                }
            }
            Block::Figure { caption, .. } => out.push(caption),
            Block::CodeBlock { .. } | Block::SceneBreak | Block::PageBreak => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::{Cell, Definition, ListKind, Row, Table, inline_text};

    fn para(text: &str) -> Block {
        Block::Paragraph {
            align: Default::default(),
            content: vec![Inline::Text(text.into())],
        }
    }

    fn nested_chapter() -> Chapter {
        Chapter {
            title: "One".into(),
            blocks: vec![
                Block::Heading {
                    level: 1,
                    id: None,
                    content: vec![Inline::Text("One".into())],
                },
                para("a"),
                Block::BlockQuote(vec![para("b"), Block::SceneBreak]),
                Block::List {
                    kind: ListKind::Bullet,
                    start: 1,
                    items: vec![vec![para("c")], vec![para("d")]],
                },
                Block::CodeBlock {
                    language: None,
                    text: "not a text block".into(),
                },
                Block::DefinitionList(vec![Definition {
                    term: vec![Inline::Text("e".into())],
                    definitions: vec![vec![para("f")]],
                }]),
                Block::Table(Table {
                    caption: vec![Inline::Text("g".into())],
                    head: vec![Row {
                        cells: vec![Cell::new(vec![para("h")])],
                    }],
                    body: vec![Row {
                        cells: vec![Cell::new(vec![para("i")])],
                    }],
                }),
                Block::Figure {
                    image: "x.png".into(),
                    alt: "not text".into(),
                    caption: vec![Inline::Text("j".into())],
                },
            ],
            ..Default::default()
        }
    }

    #[test]
    fn text_blocks_are_in_reading_order_and_nested_ones_count() {
        let chapter = nested_chapter();
        let texts: Vec<String> = text_blocks(&chapter)
            .into_iter()
            .map(|b| inline_text(b))
            .collect();
        assert_eq!(
            texts,
            ["One", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j"]
        );
    }

    #[test]
    fn walks_agree() {
        let mut chapter = nested_chapter();
        let read: Vec<String> = text_blocks(&chapter)
            .into_iter()
            .map(|b| inline_text(b))
            .collect();
        let written: Vec<String> = text_blocks_mut(&mut chapter)
            .into_iter()
            .map(|b| inline_text(b))
            .collect();
        assert_eq!(read, written);
    }

    fn text(s: &str) -> Inline {
        Inline::Text(s.into())
    }

    fn page(label: &str) -> Inline {
        Inline::PrintPage(label.into())
    }

    fn start(label: &str, chapter: usize, block: usize, offset: usize) -> PageStart {
        PageStart {
            label: label.into(),
            at: TextPosition {
                chapter,
                block,
                offset,
            },
        }
    }

    fn book(chapters: Vec<Vec<Block>>) -> Document {
        Document {
            chapters: chapters
                .into_iter()
                .map(|blocks| Chapter {
                    blocks,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    fn content(block: &Block) -> &Vec<Inline> {
        match block {
            Block::Paragraph { content, .. } | Block::Heading { content, .. } => content,
            other => panic!("not a text block: {other:?}"),
        }
    }

    #[test]
    fn a_page_that_begins_mid_word_inside_nested_spans_splits_the_innermost_text() {
        // "The storm broke" with "storm" in a link inside emphasis; page 7 begins at "orm".
        let mut doc = book(vec![vec![Block::Paragraph {
            align: Default::default(),
            content: vec![
                text("The "),
                Inline::Emphasis(vec![Inline::Link {
                    target: crate::document::LinkTarget::Internal("x".into()),
                    content: vec![text("storm")],
                }]),
                text(" broke"),
            ],
        }]]);
        let before = inline_text(content(&doc.chapters[0].blocks[0]));
        mark_pages(&mut doc, &[start("7", 0, 0, 6)]);
        let after = content(&doc.chapters[0].blocks[0]);
        assert_eq!(
            after[1],
            Inline::Emphasis(vec![Inline::Link {
                target: crate::document::LinkTarget::Internal("x".into()),
                content: vec![text("st"), page("7"), text("orm")],
            }])
        );
        assert_eq!(inline_text(after), before, "no text is lost or added");
    }

    #[test]
    fn offsets_count_bytes_and_land_on_character_boundaries() {
        // "ï" is bytes 2 and 3: offset 3 falls inside it and moves back to its start; offset
        // 4 is after it.
        let mut doc = book(vec![vec![para("naïve café")]]);
        mark_pages(&mut doc, &[start("2", 0, 0, 3), start("3", 0, 0, 4)]);
        assert_eq!(
            content(&doc.chapters[0].blocks[0]),
            &vec![text("na"), page("2"), text("ï"), page("3"), text("ve café")]
        );
    }

    #[test]
    fn pages_at_one_position_keep_their_order_and_a_span_boundary_is_marked_outside() {
        // A blank verso (iv) and the page after it (v) both begin at "b".
        let mut doc = book(vec![vec![Block::Paragraph {
            align: Default::default(),
            content: vec![text("a "), Inline::Strong(vec![text("b")])],
        }]]);
        mark_pages(
            &mut doc,
            &[
                start("iv", 0, 0, 2),
                start("v", 0, 0, 2),
                start("1", 0, 0, 0),
            ],
        );
        assert_eq!(
            content(&doc.chapters[0].blocks[0]),
            &vec![
                page("1"),
                text("a "),
                page("iv"),
                page("v"),
                Inline::Strong(vec![text("b")])
            ]
        );
    }

    #[test]
    fn positions_past_the_end_clamp_to_the_end() {
        let mut doc = book(vec![vec![para("one"), para("two")], vec![para("three")]]);
        mark_pages(
            &mut doc,
            &[
                start("a", 0, 0, 99), // past the block's text: its end
                start("b", 0, 9, 0),  // past the chapter's blocks: the end of its last
                start("c", 7, 0, 0),  // past the book: the end of the last chapter
                start("d", 1, 0, 5),  // exactly the end
            ],
        );
        assert_eq!(
            content(&doc.chapters[0].blocks[0]),
            &vec![text("one"), page("a")]
        );
        assert_eq!(
            content(&doc.chapters[0].blocks[1]),
            &vec![text("two"), page("b")]
        );
        assert_eq!(
            content(&doc.chapters[1].blocks[0]),
            &vec![text("three"), page("d"), page("c")],
            "the end of the book keeps the order of the positions"
        );
    }

    #[test]
    fn positions_count_nested_blocks_and_line_breaks() {
        let mut chapter = nested_chapter();
        // Block 5 is the definition term "e", block 8 the head cell "h".
        if let Block::Table(table) = &mut chapter.blocks[6] {
            table.head[0].cells[0].blocks = vec![Block::Paragraph {
                align: Default::default(),
                content: vec![text("h1"), Inline::LineBreak, text("h2")],
            }];
        }
        let mut doc = Document {
            chapters: vec![chapter],
            ..Default::default()
        };
        mark_pages(&mut doc, &[start("5", 0, 5, 0), start("8", 0, 8, 3)]);
        let blocks = text_blocks(&doc.chapters[0]);
        assert_eq!(blocks[5], &vec![page("5"), text("e")]);
        assert_eq!(
            blocks[8],
            &vec![text("h1"), Inline::LineBreak, page("8"), text("h2")]
        );
        // The other blocks are as they were.
        assert_eq!(blocks[4], &vec![text("d")]);
    }

    #[test]
    fn code_splits_like_text_and_a_chapter_without_text_gets_a_paragraph_of_markers() {
        let mut doc = book(vec![
            vec![Block::Paragraph {
                align: Default::default(),
                content: vec![text("run "), Inline::Code("make all".into())],
            }],
            vec![Block::CodeBlock {
                language: None,
                text: "fn main() {}".into(),
            }],
        ]);
        mark_pages(&mut doc, &[start("3", 0, 0, 8), start("4", 1, 0, 0)]);
        assert_eq!(
            content(&doc.chapters[0].blocks[0]),
            &vec![
                text("run "),
                Inline::Code("make".into()),
                page("3"),
                Inline::Code(" all".into())
            ]
        );
        assert_eq!(content(&doc.chapters[1].blocks[0]), &vec![page("4")]);
        assert!(matches!(doc.chapters[1].blocks[1], Block::CodeBlock { .. }));
    }

    #[test]
    fn markers_are_not_text() {
        let mut doc = book(vec![vec![para("Call me Ishmael. Some years ago")]]);
        let words = crate::document::word_count(&doc);
        let plain = crate::document::plain_text(&doc.chapters[0].blocks);
        mark_pages(
            &mut doc,
            &[
                start("1", 0, 0, 0),
                start(" ", 0, 0, 5),
                start("2", 0, 0, 10),
            ],
        );
        assert_eq!(
            content(&doc.chapters[0].blocks[0]),
            &vec![
                page("1"),
                text("Call me Is"),
                page("2"),
                text("hmael. Some years ago")
            ],
            "a page without a label is left out"
        );
        assert_eq!(crate::document::word_count(&doc), words);
        assert_eq!(crate::document::plain_text(&doc.chapters[0].blocks), plain);
    }

    #[test]
    fn an_equation_counts_the_text_it_adds_and_is_not_split() {
        let math = Inline::Math(crate::document::Math {
            display: false,
            tex: Some("x^2".into()),
            mathml: Some("<math xmlns=\"http://www.w3.org/1998/Math/MathML\"><msup><mi>x</mi><mn>2</mn></msup></math>".into()),
        });
        assert_eq!(
            text_len(&math),
            super::super::inline_text(std::slice::from_ref(&math)).len()
        );
        let mut inlines = vec![text("a "), math.clone(), text(" b")];
        let mut pos = 0;
        let mut pending = [(3usize, "7")].into_iter().peekable();
        insert_in(&mut inlines, &mut pos, &mut pending);
        assert_eq!(
            inlines,
            [text("a "), math, Inline::PrintPage("7".into()), text(" b")]
        );
    }
}
