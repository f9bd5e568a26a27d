//! Plain text of the model: for word counts, search, and the tests that check no text is lost.

use super::{Block, Document, Inline};

/// The text of a block list, one line per paragraph-like block.
pub fn plain_text(blocks: &[Block]) -> String {
    let mut out = String::new();
    for block in blocks {
        push_block(&mut out, block);
    }
    out
}

/// Words of the whole book: chapters and notes.
pub fn word_count(document: &Document) -> u64 {
    let mut words = 0u64;
    let mut buf = String::new();
    let mut count = |blocks: &[Block]| {
        buf.clear();
        for block in blocks {
            push_block(&mut buf, block);
        }
        words += buf.split_whitespace().count() as u64;
    };
    for chapter in &document.chapters {
        count(&chapter.blocks);
    }
    for note in &document.notes {
        count(&note.blocks);
    }
    words
}

fn push_block(out: &mut String, block: &Block) {
    match block {
        Block::Heading { content, .. } | Block::Paragraph { content, .. } => {
            push_inlines(out, content);
            out.push('\n');
        }
        Block::BlockQuote(blocks) => blocks.iter().for_each(|b| push_block(out, b)),
        Block::List { items, .. } => items.iter().flatten().for_each(|b| push_block(out, b)),
        Block::DefinitionList(items) => {
            for item in items {
                push_inlines(out, &item.term);
                out.push('\n');
                item.definitions
                    .iter()
                    .flatten()
                    .for_each(|b| push_block(out, b));
            }
        }
        Block::CodeBlock { text, .. } => {
            out.push_str(text);
            out.push('\n');
        }
        Block::Table(table) => {
            push_inlines(out, &table.caption);
            out.push('\n');
            for row in table.head.iter().chain(&table.body) {
                for cell in &row.cells {
                    cell.blocks.iter().for_each(|b| push_block(out, b));
                }
            }
        }
        Block::Figure { caption, .. } => {
            push_inlines(out, caption);
            out.push('\n');
        }
        Block::SceneBreak | Block::PageBreak => {}
    }
}

/// Appends the text of `inlines` (alt text of images is not text of the book).
pub fn push_inlines(out: &mut String, inlines: &[Inline]) {
    for inline in inlines {
        match inline {
            Inline::Text(t) | Inline::Code(t) => out.push_str(t),
            Inline::LineBreak => out.push('\n'),
            Inline::Math(math) => out.push_str(&math.text()),
            container => {
                if let Some(children) = container.children() {
                    push_inlines(out, children);
                }
            }
        }
    }
}

/// The plain text of some inlines.
pub fn inline_text(inlines: &[Inline]) -> String {
    let mut out = String::new();
    push_inlines(&mut out, inlines);
    out
}
