//! From a story's paragraphs to blocks: numbered paragraphs nest into lists, runs of quote
//! or code paragraphs become one quotation or code block, terms gather their definitions,
//! and captions join the table or figure they describe.

use crate::document::{Block, Definition, Inline, ListKind};

use super::numbering;

/// A paragraph or block as read, before grouping.
#[derive(Debug)]
#[allow(clippy::enum_variant_names)] // `Item::ListItem` reads better than `Item::List`.
pub enum Item {
    Block(Block),
    Quote(Block),
    Code(String),
    Term(Vec<Inline>),
    Definition(Block),
    Caption(Vec<Inline>),
    ListItem(numbering::Item, Block),
}

struct OpenList {
    level: u8,
    kind: ListKind,
    start: u32,
    last: u32,
    items: Vec<Vec<Block>>,
}

impl OpenList {
    fn into_block(self) -> Block {
        Block::List {
            kind: self.kind,
            start: if self.kind.is_ordered() {
                self.start
            } else {
                1
            },
            items: self.items,
        }
    }
}

#[derive(Default)]
struct Assembler {
    out: Vec<Block>,
    lists: Vec<OpenList>,
    caption: Option<Vec<Inline>>,
}

impl Assembler {
    fn close_top(&mut self) {
        let Some(list) = self.lists.pop() else { return };
        let block = list.into_block();
        match self
            .lists
            .last_mut()
            .and_then(|parent| parent.items.last_mut())
        {
            Some(item) => item.push(block),
            None => self.out.push(block),
        }
    }

    /// Closes the lists deeper than `level`; all of them with `None`.
    fn close_lists(&mut self, level: Option<u8>) {
        while let Some(top) = self.lists.last() {
            if level.is_some_and(|l| top.level <= l) {
                break;
            }
            self.close_top();
        }
    }

    fn list_item(&mut self, item: numbering::Item, block: Block) {
        self.flush_caption();
        self.close_lists(Some(item.level));
        let same_level = self.lists.last().is_some_and(|top| top.level == item.level);
        let continues = self.lists.last().is_some_and(|top| {
            same_level
                && top.kind == item.kind
                && (!item.kind.is_ordered() || item.number == top.last.saturating_add(1))
        });
        if same_level && !continues {
            self.close_top();
        }
        match self.lists.last_mut() {
            Some(top) if continues => {
                top.last = item.number;
                top.items.push(vec![block]);
            }
            _ => self.lists.push(OpenList {
                level: item.level,
                kind: item.kind,
                start: item.number,
                last: item.number,
                items: vec![vec![block]],
            }),
        }
    }

    /// A block that is not a list item or a caption.
    fn block(&mut self, block: Block) {
        self.close_lists(None);
        if let Some(caption) = self.caption.take() {
            match block {
                Block::Table(mut table) if table.caption.is_empty() => {
                    table.caption = caption;
                    self.out.push(Block::Table(table));
                    return;
                }
                block => {
                    self.caption = Some(caption);
                    self.flush_caption();
                    self.out.push(block);
                    return;
                }
            }
        }
        self.out.push(block);
    }

    fn caption(&mut self, caption: Vec<Inline>) {
        self.close_lists(None);
        self.flush_caption();
        if let Some(Block::Figure { caption: slot, .. }) = self.out.last_mut()
            && slot.is_empty()
        {
            *slot = caption;
            return;
        }
        self.caption = Some(caption);
    }

    /// A caption that found no following table: the preceding table's, or a paragraph.
    fn flush_caption(&mut self) {
        let Some(caption) = self.caption.take() else {
            return;
        };
        match self.out.last_mut() {
            Some(Block::Table(table)) if table.caption.is_empty() => table.caption = caption,
            _ => self.out.push(Block::Paragraph {
                align: Default::default(),
                content: caption,
            }),
        }
    }

    fn finish(mut self) -> Vec<Block> {
        self.close_lists(None);
        self.flush_caption();
        self.out
    }
}

pub fn assemble(items: Vec<Item>) -> Vec<Block> {
    let mut a = Assembler::default();
    let mut items = items.into_iter().peekable();
    while let Some(item) = items.next() {
        match item {
            Item::ListItem(item, block) => a.list_item(item, block),
            Item::Caption(caption) => a.caption(caption),
            Item::Block(block) => a.block(block),
            Item::Quote(first) => {
                let mut quote = vec![first];
                while let Some(Item::Quote(_)) = items.peek() {
                    if let Some(Item::Quote(b)) = items.next() {
                        quote.push(b);
                    }
                }
                a.block(Block::BlockQuote(quote));
            }
            Item::Code(first) => {
                let mut text = first;
                while let Some(Item::Code(_)) = items.peek() {
                    if let Some(Item::Code(more)) = items.next() {
                        text.push('\n');
                        text.push_str(&more);
                    }
                }
                a.block(Block::CodeBlock {
                    language: None,
                    text,
                });
            }
            Item::Term(term) => {
                let mut entries = vec![Definition {
                    term,
                    definitions: Vec::new(),
                }];
                loop {
                    match items.peek() {
                        Some(Item::Definition(_)) => {
                            if let (Some(Item::Definition(b)), Some(entry)) =
                                (items.next(), entries.last_mut())
                            {
                                entry.definitions.push(vec![b]);
                            }
                        }
                        Some(Item::Term(_)) => {
                            if let Some(Item::Term(term)) = items.next() {
                                entries.push(Definition {
                                    term,
                                    definitions: Vec::new(),
                                });
                            }
                        }
                        _ => break,
                    }
                }
                a.block(Block::DefinitionList(entries));
            }
            // A definition without a term is an indented paragraph.
            Item::Definition(block) => a.block(Block::BlockQuote(vec![block])),
        }
    }
    a.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Block {
        Block::Paragraph {
            align: Default::default(),
            content: vec![Inline::Text(s.into())],
        }
    }

    fn li(level: u8, number: u32, s: &str) -> Item {
        Item::ListItem(
            numbering::Item {
                level,
                kind: ListKind::Decimal,
                number,
            },
            p(s),
        )
    }

    #[test]
    fn numbered_paragraphs_nest_by_level_and_continue_after_an_interruption() {
        let blocks = assemble(vec![
            li(0, 1, "a"),
            li(1, 1, "a.1"),
            li(1, 2, "a.2"),
            li(0, 2, "b"),
            Item::Block(p("interruption")),
            li(0, 3, "c"),
        ]);
        assert_eq!(blocks.len(), 3);
        let Block::List {
            items, start: 1, ..
        } = &blocks[0]
        else {
            panic!("{blocks:?}")
        };
        assert_eq!(items.len(), 2);
        assert!(matches!(&items[0][1], Block::List { items, .. } if items.len() == 2));
        assert!(matches!(&blocks[2], Block::List { start: 3, .. }));
    }

    #[test]
    fn a_restart_at_the_same_level_starts_a_new_list() {
        let blocks = assemble(vec![li(0, 1, "a"), li(0, 2, "b"), li(0, 1, "a")]);
        assert_eq!(blocks.len(), 2);
    }

    #[test]
    fn captions_join_figures_after_them_and_tables_before_or_after_them() {
        let figure = Block::Figure {
            image: "i.png".into(),
            alt: String::new(),
            caption: Vec::new(),
        };
        let table = || Block::Table(Default::default());
        let cap = || Item::Caption(vec![Inline::Text("cap".into())]);
        let blocks = assemble(vec![
            Item::Block(figure),
            cap(),
            cap(),
            Item::Block(table()),
        ]);
        assert_eq!(blocks.len(), 2);
        assert!(matches!(&blocks[0], Block::Figure { caption, .. } if !caption.is_empty()));
        assert!(matches!(&blocks[1], Block::Table(t) if !t.caption.is_empty()));
        let blocks = assemble(vec![Item::Block(table()), cap(), Item::Block(p("x"))]);
        assert!(matches!(&blocks[0], Block::Table(t) if !t.caption.is_empty()));
        assert_eq!(blocks.len(), 2);
    }
}
