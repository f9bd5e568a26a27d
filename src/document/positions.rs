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

use serde::{Deserialize, Serialize};

use super::{Block, Chapter, Inline};

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
}
