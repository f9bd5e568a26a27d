//! The book's id plan: every heading, anchor, note and note reference gets a valid, unique
//! XML id (an NCName), and so does every printed page's marker (`page-12`, `page-xii`), decided once for the whole book so that links resolve across
//! chapters, and decided the same way every time so the output is reproducible.
//!
//! Ids are keyed by the address of the model node they belong to: the plan is only ever
//! used with the very `Document` it was made from, within one call, and keying by address
//! spares the renderer from replaying the planner's walk in exactly the same order.

use std::collections::{HashMap, HashSet};

use crate::document::{Block, Document, Inline, inline_text};

/// Where a note is rendered and how it is numbered.
#[derive(Debug, Clone)]
pub struct NotePlan {
    /// XML id of the note itself (`fn-…`).
    pub id: String,
    /// Number shown at the reference and before the note (counted across the book).
    pub number: usize,
    /// Chapter whose end shows the note.
    pub chapter: usize,
    /// Id of the first reference, for the back link; `None` for a note nothing references.
    pub first_ref: Option<String>,
}

#[derive(Debug, Default)]
pub struct IdPlan {
    /// Ids of headings, anchors and note references, by node address.
    nodes: HashMap<usize, String>,
    /// Link targets: source id → (chapter, XML id).
    targets: HashMap<String, (usize, String)>,
    /// By index into `Document::notes`; `None` for a note whose id an earlier note took.
    pub notes: Vec<Option<NotePlan>>,
    /// Source note id → index into `Document::notes` (the first note with that id).
    note_index: HashMap<String, usize>,
    /// Per chapter, the notes shown at its end, in order of first reference.
    pub chapter_notes: Vec<Vec<usize>>,
}

fn key<T>(node: &T) -> usize {
    std::ptr::from_ref(node) as usize
}

/// Each note's number, by its id, as the ebooks number it (through the book in reading order):
/// the print edition numbers its footnotes the same.
pub fn note_numbers(document: &Document) -> HashMap<String, usize> {
    let mut index = HashMap::new();
    for (i, note) in document.notes.iter().enumerate() {
        index.entry(note.id.clone()).or_insert(i);
    }
    let placement = place_notes(document, &index);
    index
        .into_iter()
        .map(|(id, n)| (id, placement.numbers[n]))
        .collect()
}

impl IdPlan {
    pub fn new(document: &Document) -> IdPlan {
        let mut plan = IdPlan {
            notes: vec![None; document.notes.len()],
            chapter_notes: vec![Vec::new(); document.chapters.len()],
            ..IdPlan::default()
        };
        for (i, note) in document.notes.iter().enumerate() {
            plan.note_index.entry(note.id.clone()).or_insert(i);
        }
        let placement = place_notes(document, &plan.note_index);
        let mut ids = Allocator::default();
        let mut first_refs: HashMap<usize, String> = HashMap::new();

        // Chapters, each followed by the notes it shows: the order readers meet them in.
        for (c, chapter) in document.chapters.iter().enumerate() {
            let mut walker = Walker {
                plan: &mut plan,
                ids: &mut ids,
                chapter: c,
                first_refs: &mut first_refs,
            };
            walker.blocks(&chapter.blocks);
            for &n in &placement.order[c] {
                let note = &document.notes[n];
                let id = walker.ids.alloc(&format!("fn-{}", base(&note.id)));
                walker.plan.notes[n] = Some(NotePlan {
                    id,
                    number: placement.numbers[n],
                    chapter: c,
                    first_ref: None,
                });
                walker.blocks(&note.blocks);
            }
        }
        for (n, first) in first_refs {
            if let Some(Some(note)) = plan.notes.get_mut(n) {
                note.first_ref = Some(first);
            }
        }
        plan.chapter_notes = placement.order;
        plan
    }

    /// The XML id of a heading block, an anchor, a note reference or a printed page's marker.
    pub fn node_id<T>(&self, node: &T) -> Option<&str> {
        self.nodes.get(&key(node)).map(String::as_str)
    }

    /// Where an internal link to `source_id` goes: a heading, an anchor, or a note.
    pub fn target(&self, source_id: &str) -> Option<(usize, &str)> {
        if let Some((chapter, id)) = self.targets.get(source_id) {
            return Some((*chapter, id));
        }
        self.note(source_id)
            .map(|(_, n)| (n.chapter, n.id.as_str()))
    }

    /// The note a reference names, with its index.
    pub fn note(&self, source_id: &str) -> Option<(usize, &NotePlan)> {
        let index = *self.note_index.get(source_id)?;
        Some((index, self.notes.get(index)?.as_ref()?))
    }
}

/// Which chapter shows each note, and the notes' numbers.
struct Placement {
    order: Vec<Vec<usize>>,
    numbers: Vec<usize>,
}

/// A note is shown at the end of the chapter that first references it (notes referenced
/// only from other notes follow them there); notes nothing references end the last chapter,
/// so that no text is lost. Numbers run through the book in reading order.
fn place_notes(document: &Document, index: &HashMap<String, usize>) -> Placement {
    let mut placing = Placing {
        index,
        placed: vec![false; document.notes.len()],
        placement: Placement {
            order: vec![Vec::new(); document.chapters.len()],
            numbers: vec![0; document.notes.len()],
        },
        next: 1,
    };
    for (c, chapter) in document.chapters.iter().enumerate() {
        placing.refs_in(&chapter.blocks, c);
        placing.follow_notes(document, c, 0);
    }
    if let Some(last) = document.chapters.len().checked_sub(1) {
        let start = placing.placement.order[last].len();
        for (n, note) in document.notes.iter().enumerate() {
            // A later note reusing an earlier note's id can never be referenced: it is an
            // unreferenced note like any other.
            if !placing.placed[n] || index.get(&note.id) != Some(&n) {
                placing.place(n, last);
            }
        }
        placing.follow_notes(document, last, start);
    }
    placing.placement
}

struct Placing<'a> {
    index: &'a HashMap<String, usize>,
    placed: Vec<bool>,
    placement: Placement,
    next: usize,
}

impl Placing<'_> {
    fn place(&mut self, n: usize, chapter: usize) {
        self.placed[n] = true;
        self.placement.numbers[n] = self.next;
        self.next += 1;
        self.placement.order[chapter].push(n);
    }

    fn refs_in(&mut self, blocks: &[Block], chapter: usize) {
        for r in note_refs(blocks) {
            if let Some(&n) = self.index.get(r)
                && !self.placed[n]
            {
                self.place(n, chapter);
            }
        }
    }

    /// Places the notes referenced from notes already placed in `chapter` (from `start`).
    fn follow_notes(&mut self, document: &Document, chapter: usize, start: usize) {
        let mut i = start;
        while let Some(&n) = self.placement.order[chapter].get(i) {
            self.refs_in(&document.notes[n].blocks, chapter);
            i += 1;
        }
    }
}

fn note_refs(blocks: &[Block]) -> Vec<&str> {
    let mut refs = Vec::new();
    visit_blocks(blocks, &mut |node| {
        if let Node::Inline(Inline::NoteRef(id)) = node {
            refs.push(id.as_str());
        }
    });
    refs
}

/// A node of the model, as [`visit_blocks`] meets it.
#[derive(Clone, Copy)]
pub enum Node<'a> {
    Block(&'a Block),
    Inline(&'a Inline),
}

/// Calls `f` for every block and inline, in document order.
pub fn visit_blocks<'a>(blocks: &'a [Block], f: &mut dyn FnMut(Node<'a>)) {
    for block in blocks {
        f(Node::Block(block));
        match block {
            Block::Heading { content, .. } | Block::Paragraph { content, .. } => {
                visit_inlines(content, f);
            }
            Block::BlockQuote(inner) => visit_blocks(inner, f),
            Block::List { items, .. } => {
                for item in items {
                    visit_blocks(item, f);
                }
            }
            Block::DefinitionList(items) => {
                for item in items {
                    visit_inlines(&item.term, f);
                    for definition in &item.definitions {
                        visit_blocks(definition, f);
                    }
                }
            }
            Block::Table(table) => {
                visit_inlines(&table.caption, f);
                for row in table.head.iter().chain(&table.body) {
                    for cell in &row.cells {
                        visit_blocks(&cell.blocks, f);
                    }
                }
            }
            Block::Figure { caption, .. } => visit_inlines(caption, f),
            Block::CodeBlock { .. } | Block::SceneBreak | Block::PageBreak => {}
        }
    }
}

pub fn visit_inlines<'a>(inlines: &'a [Inline], f: &mut dyn FnMut(Node<'a>)) {
    for inline in inlines {
        f(Node::Inline(inline));
        if let Some(children) = inline.children() {
            visit_inlines(children, f);
        }
    }
}

struct Walker<'p> {
    plan: &'p mut IdPlan,
    ids: &'p mut Allocator,
    chapter: usize,
    first_refs: &'p mut HashMap<usize, String>,
}

impl Walker<'_> {
    fn blocks(&mut self, blocks: &[Block]) {
        let mut events: Vec<Event> = Vec::new();
        visit_blocks(blocks, &mut |node| match node {
            Node::Block(block @ Block::Heading { id, content, .. }) => {
                events.push(Event::Heading(key(block), id.as_deref(), content));
            }
            Node::Inline(inline @ Inline::Anchor(id)) => {
                events.push(Event::Anchor(key(inline), id))
            }
            Node::Inline(inline @ Inline::NoteRef(id)) => {
                events.push(Event::NoteRef(key(inline), id));
            }
            Node::Inline(inline @ Inline::PrintPage(label)) => {
                events.push(Event::PrintPage(key(inline), label));
            }
            _ => {}
        });
        for event in events {
            match event {
                Event::Heading(node, Some(source), _) if !source.trim().is_empty() => {
                    let id = self.ids.alloc(&sanitize(source));
                    self.target(source, &id);
                    self.plan.nodes.insert(node, id);
                }
                Event::Heading(node, _, content) => {
                    let id = self.ids.alloc(&slug(&inline_text(content)));
                    self.plan.nodes.insert(node, id);
                }
                Event::Anchor(node, source) => {
                    let id = self.ids.alloc(&sanitize(source));
                    self.target(source, &id);
                    self.plan.nodes.insert(node, id);
                }
                Event::PrintPage(node, label) => {
                    let id = self.ids.alloc(&format!("page-{}", base(label)));
                    self.plan.nodes.insert(node, id);
                }
                Event::NoteRef(node, source) => {
                    if let Some(&n) = self.plan.note_index.get(source) {
                        let id = self.ids.alloc(&format!("fnref-{}", base(source)));
                        self.first_refs.entry(n).or_insert_with(|| id.clone());
                        self.plan.nodes.insert(node, id);
                    }
                }
            }
        }
    }

    /// The first element with a source id is the one links go to.
    fn target(&mut self, source: &str, id: &str) {
        self.plan
            .targets
            .entry(source.to_owned())
            .or_insert_with(|| (self.chapter, id.to_owned()));
    }
}

enum Event<'a> {
    Heading(usize, Option<&'a str>, &'a [Inline]),
    Anchor(usize, &'a str),
    NoteRef(usize, &'a str),
    PrintPage(usize, &'a str),
}

/// Hands out ids, never the same one twice.
#[derive(Default)]
struct Allocator {
    used: HashSet<String>,
}

impl Allocator {
    fn alloc(&mut self, wanted: &str) -> String {
        if self.used.insert(wanted.to_owned()) {
            return wanted.to_owned();
        }
        let mut n = 2;
        loop {
            let candidate = format!("{wanted}-{n}");
            if self.used.insert(candidate.clone()) {
                return candidate;
            }
            n += 1;
        }
    }
}

/// Longest id Bindery writes; source ids from Word can be absurdly long.
const MAX_ID: usize = 64;

/// A source id as an NCName of ASCII letters, digits, `-`, `_` and `.`, starting with a
/// letter. ASCII keeps ids safe in URLs as well as in XML.
pub fn sanitize(source: &str) -> String {
    let mut out = String::new();
    for c in source.chars() {
        if out.len() >= MAX_ID {
            break;
        }
        if c.is_ascii_alphanumeric() || matches!(c, '_' | '.') {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let trimmed = out.trim_matches(['-', '.']);
    match trimmed.chars().next() {
        None => "id".to_owned(),
        Some(c) if c.is_ascii_alphabetic() || c == '_' => trimmed.to_owned(),
        Some(_) => format!("id-{trimmed}"),
    }
}

/// The part of a note id that goes after `fn-`/`fnref-`.
fn base(source: &str) -> String {
    let s = sanitize(source);
    s.strip_prefix("id-").map(str::to_owned).unwrap_or(s)
}

/// An id for a heading the source gave none: its words, lower-cased (`the-storm`).
fn slug(text: &str) -> String {
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let mut out = String::new();
    for word in words {
        if out.len() + word.len() > 40 {
            break;
        }
        if !out.is_empty() {
            out.push('-');
        }
        out.push_str(word);
    }
    match out.chars().next() {
        None => "section".to_owned(),
        Some(c) if c.is_ascii_alphabetic() => out,
        Some(_) => format!("h-{out}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_ids_become_ncnames() {
        assert_eq!(sanitize("_Toc123"), "_Toc123");
        assert_eq!(sanitize("1. Intro"), "id-1.-Intro");
        assert_eq!(sanitize("été 2024"), "t-2024");
        assert_eq!(sanitize("<>\"&"), "id");
        assert_eq!(sanitize(""), "id");
        assert!(sanitize(&"x".repeat(500)).len() <= MAX_ID);
        assert_eq!(slug("The Storm, Part 2!"), "the-storm-part-2");
        assert_eq!(slug("1914"), "h-1914");
        assert_eq!(slug("…"), "section");
    }
}
