//! Clean-up passes over a whole document that the readers of word processors and web pages
//! share: the title page, page breaks that only precede a heading, anchors nothing links to,
//! and notes in reading order.

use std::collections::{HashMap, HashSet};

use crate::document::{Block, Inline, LinkTarget, Metadata, Note, inline_text};
use crate::report::Warning;

/// Calls `f` on every inline list in `blocks`, outermost first, including nested wrappers.
pub fn visit_inlines(blocks: &mut [Block], f: &mut dyn FnMut(&mut Vec<Inline>)) {
    for block in blocks {
        match block {
            Block::Heading { content, .. } | Block::Paragraph { content, .. } => {
                visit_tree(content, f)
            }
            Block::BlockQuote(blocks) => visit_inlines(blocks, f),
            Block::List { items, .. } => items.iter_mut().for_each(|b| visit_inlines(b, f)),
            Block::DefinitionList(entries) => {
                for entry in entries {
                    visit_tree(&mut entry.term, f);
                    entry
                        .definitions
                        .iter_mut()
                        .for_each(|b| visit_inlines(b, f));
                }
            }
            Block::Table(table) => {
                visit_tree(&mut table.caption, f);
                for row in table.head.iter_mut().chain(table.body.iter_mut()) {
                    row.cells
                        .iter_mut()
                        .for_each(|c| visit_inlines(&mut c.blocks, f));
                }
            }
            Block::Figure { caption, .. } => visit_tree(caption, f),
            Block::CodeBlock { .. } | Block::SceneBreak | Block::PageBreak => {}
        }
    }
}

fn visit_tree(inlines: &mut Vec<Inline>, f: &mut dyn FnMut(&mut Vec<Inline>)) {
    f(inlines);
    for inline in inlines {
        if let Some(children) = inline.children_mut() {
            visit_tree(children, f);
        }
    }
}

/// Level-0 headings mark Title-style paragraphs. Those that open the document are the
/// book's title (returned, joined); a document that uses the Title style throughout gets
/// them as its top-level headings instead, the other headings one level down.
pub fn title_paragraphs(blocks: &mut Vec<Block>) -> Option<String> {
    let is_title = |b: &Block| matches!(b, Block::Heading { level: 0, .. });
    let titles = blocks.iter().filter(|b| is_title(b)).count();
    let leading = blocks
        .iter()
        .take_while(|b| is_title(b) || matches!(b, Block::PageBreak))
        .filter(|b| is_title(b))
        .count();
    if titles == 0 {
        return None;
    }
    if titles == leading {
        let mut text = Vec::new();
        blocks.retain(|b| match b {
            Block::Heading {
                level: 0, content, ..
            } => {
                text.push(
                    inline_text(content)
                        .split_whitespace()
                        .collect::<Vec<_>>()
                        .join(" "),
                );
                false
            }
            _ => true,
        });
        return Some(text.join(" ")).filter(|t| !t.is_empty());
    }
    for block in blocks.iter_mut() {
        if let Block::Heading { level, .. } = block {
            *level = (*level + 1).min(6);
        }
    }
    None
}

/// The title a document's Title paragraphs give, held against its properties' (which win,
/// with a warning when they differ).
pub fn title_from_paragraphs(
    metadata: &mut Metadata,
    title: Option<String>,
    warnings: &mut Vec<Warning>,
) {
    match (&metadata.title, title) {
        (None, Some(title)) => metadata.title = Some(title),
        (Some(properties), Some(title)) if properties.trim() != title => warnings.push(Warning::new(
            "title_differs",
            format!("The document's properties give the title “{properties}”, but its Title paragraph says “{title}”; the properties were used. Change File › Properties › Title to choose."),
        )),
        _ => {}
    }
}

/// Page breaks right before a heading (the heading starts a new page or chapter anyway),
/// repeated, or at either end say nothing.
pub fn page_breaks(blocks: &mut Vec<Block>) {
    let mut out: Vec<Block> = Vec::with_capacity(blocks.len());
    for block in blocks.drain(..) {
        let is_break = matches!(block, Block::PageBreak);
        if is_break && matches!(out.last(), None | Some(Block::PageBreak)) {
            continue;
        }
        if matches!(block, Block::Heading { .. }) && matches!(out.last(), Some(Block::PageBreak)) {
            out.pop();
        }
        out.push(block);
    }
    if matches!(out.last(), Some(Block::PageBreak)) {
        out.pop();
    }
    *blocks = out;
}

/// Drops bookmarks no link points at (Word leaves `_Toc…` and `_Ref…` bookmarks all over a
/// document), and paragraphs that held nothing else.
pub fn unused_anchors(blocks: &mut Vec<Block>, notes: &mut [Note]) {
    let mut targets: HashSet<String> = HashSet::new();
    let mut collect = |inlines: &mut Vec<Inline>| {
        for inline in inlines.iter() {
            if let Inline::Link {
                target: LinkTarget::Internal(id),
                ..
            } = inline
            {
                targets.insert(id.clone());
            }
        }
    };
    visit_inlines(blocks, &mut collect);
    for note in notes.iter_mut() {
        visit_inlines(&mut note.blocks, &mut collect);
    }
    let mut prune = |inlines: &mut Vec<Inline>| {
        let before = inlines.len();
        inlines.retain(|i| !matches!(i, Inline::Anchor(a) if !targets.contains(a)));
        if inlines.len() != before {
            merge_text(inlines);
        }
    };
    visit_inlines(blocks, &mut prune);
    for note in notes.iter_mut() {
        visit_inlines(&mut note.blocks, &mut prune);
    }
    clear_heading_ids(blocks, &targets);
    drop_empty_paragraphs(blocks);
}

/// Joins adjacent text nodes (left apart by a bookmark that has since gone).
fn merge_text(inlines: &mut Vec<Inline>) {
    let mut out: Vec<Inline> = Vec::with_capacity(inlines.len());
    for inline in inlines.drain(..) {
        match (out.last_mut(), inline) {
            (Some(Inline::Text(a)), Inline::Text(b)) => a.push_str(&b),
            (_, inline) => out.push(inline),
        }
    }
    *inlines = out;
}

fn clear_heading_ids(blocks: &mut [Block], targets: &HashSet<String>) {
    for block in blocks {
        if let Block::Heading { id, .. } = block
            && id.as_ref().is_some_and(|i| !targets.contains(i))
        {
            *id = None;
        }
    }
}

fn drop_empty_paragraphs(blocks: &mut Vec<Block>) {
    blocks.retain(|b| !matches!(b, Block::Paragraph { content, .. } if content.is_empty()));
    for block in blocks {
        match block {
            Block::BlockQuote(inner) => drop_empty_paragraphs(inner),
            Block::List { items, .. } => items.iter_mut().for_each(drop_empty_paragraphs),
            Block::Table(table) => {
                for row in table.head.iter_mut().chain(table.body.iter_mut()) {
                    row.cells
                        .iter_mut()
                        .for_each(|c| drop_empty_paragraphs(&mut c.blocks));
                }
            }
            _ => {}
        }
    }
}

/// Notes in the order the text first refers to them; notes nothing refers to are not shown
/// by Word either and are dropped, and a reference to a missing note is removed.
pub fn order_notes(
    notes: Vec<Note>,
    refs: &[String],
    blocks: &mut [Block],
    warnings: &mut Vec<Warning>,
) -> Vec<Note> {
    let mut by_id: HashMap<String, Note> = notes.into_iter().map(|n| (n.id.clone(), n)).collect();
    let mut ordered = Vec::new();
    let mut seen = HashSet::new();
    for id in refs {
        if seen.insert(id.clone())
            && let Some(note) = by_id.remove(id)
        {
            ordered.push(note);
        }
    }
    let present: HashSet<String> = ordered.iter().map(|n| n.id.clone()).collect();
    let mut missing = 0usize;
    let mut drop_missing = |inlines: &mut Vec<Inline>| {
        inlines.retain(|i| match i {
            Inline::NoteRef(id) if !present.contains(id) => {
                missing += 1;
                false
            }
            _ => true,
        });
    };
    visit_inlines(blocks, &mut drop_missing);
    for note in ordered.iter_mut() {
        visit_inlines(&mut note.blocks, &mut drop_missing);
    }
    if missing > 0 {
        warnings.push(Warning::new(
            "note_missing",
            format!("{missing} note references point to notes the document does not contain; they were left out."),
        ));
    }
    ordered
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(level: u8, s: &str) -> Block {
        Block::Heading {
            level,
            id: None,
            content: vec![Inline::Text(s.into())],
        }
    }

    #[test]
    fn a_leading_title_paragraph_is_the_title_and_titles_used_throughout_are_headings() {
        let mut blocks = vec![h(0, "Book"), h(1, "One")];
        assert_eq!(title_paragraphs(&mut blocks).as_deref(), Some("Book"));
        assert_eq!(blocks, vec![h(1, "One")]);

        let mut blocks = vec![h(0, "Part A"), h(1, "One"), h(0, "Part B")];
        assert_eq!(title_paragraphs(&mut blocks.clone()), None);
        let p = Block::Paragraph {
            align: Default::default(),
            content: vec![Inline::Text("x".into())],
        };
        let mut later = vec![p.clone(), h(0, "Contents")];
        assert_eq!(title_paragraphs(&mut later), None);
        assert_eq!(later, vec![p, h(1, "Contents")]);
        assert_eq!(title_paragraphs(&mut blocks), None);
        assert_eq!(blocks, vec![h(1, "Part A"), h(2, "One"), h(1, "Part B")]);
    }

    #[test]
    fn page_breaks_before_headings_and_at_the_ends_are_dropped() {
        let p = || Block::Paragraph {
            align: Default::default(),
            content: vec![Inline::Text("x".into())],
        };
        let mut blocks = vec![
            Block::PageBreak,
            p(),
            Block::PageBreak,
            Block::PageBreak,
            p(),
            Block::PageBreak,
            h(1, "A"),
            Block::PageBreak,
        ];
        page_breaks(&mut blocks);
        assert_eq!(blocks, vec![p(), Block::PageBreak, p(), h(1, "A")]);
    }
}
