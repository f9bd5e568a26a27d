//! Notes as web pages and ebooks write them, settled once a whole book is read.
//!
//! EPUB 3 marks notes (`epub:type="noteref"`, `role="doc-footnote"`…), which [`super::page`]
//! reads as it goes. Google Docs, Project Gutenberg and many older ebooks only link them both
//! ways: a numbered link in the text goes to a paragraph at the end, whose own number links
//! back. That pattern is found here, and those paragraphs become notes.

use std::collections::{HashMap, HashSet};

use crate::document::{Block, Inline, LinkTarget, Note, NoteKind, inline_text};
use crate::manuscript::tidy::visit_inlines;

/// Sets each note's kind, finds the notes only linked both ways, and unwraps note references
/// a page put in superscript (the writers raise them).
pub(crate) fn settle(blocks: &mut Vec<Block>, notes: &mut Vec<Note>, kinds: &[(String, NoteKind)]) {
    let kinds: HashMap<&str, NoteKind> = kinds.iter().map(|(id, k)| (id.as_str(), *k)).collect();
    for note in notes.iter_mut() {
        if let Some(kind) = kinds.get(note.id.as_str()) {
            note.kind = *kind;
        }
    }
    // A marked note still starts with its number linking back (libepubgen, many tools):
    // the writers number and link notes themselves.
    for note in notes.iter_mut() {
        if let Some(first) = note.blocks.first_mut()
            && starts_with_label(first)
        {
            *first = strip_label(std::mem::replace(first, Block::SceneBreak));
        }
    }
    backlinked(blocks, notes);
    unwrap_raised_refs(blocks, notes);
}

/// Whether a paragraph opens with a note's number as a link.
fn starts_with_label(block: &Block) -> bool {
    let Block::Paragraph { content, .. } = block else {
        return false;
    };
    let label =
        |i: &Inline| matches!(i, Inline::Link { content, .. } if is_label(&inline_text(content)));
    content
        .iter()
        .find(|i| {
            !matches!(i, Inline::Text(t) if t.trim().is_empty()) && !matches!(i, Inline::Anchor(_))
        })
        .is_some_and(|i| match i {
            Inline::Superscript(inner) => inner.iter().any(label),
            other => label(other),
        })
}

/// Note references a document put in superscript, as bare references (the writers raise
/// them).
pub(crate) fn unwrap_raised_refs(blocks: &mut [Block], notes: &mut [Note]) {
    visit_inlines(blocks, &mut |i| unwrap_raised(i));
    for note in notes.iter_mut() {
        visit_inlines(&mut note.blocks, &mut |i| unwrap_raised(i));
    }
}

fn unwrap_raised(inlines: &mut [Inline]) {
    for inline in inlines.iter_mut() {
        if let Inline::Superscript(inner) = inline
            && let [Inline::NoteRef(_)] = inner.as_slice()
            && let Some(note_ref) = inner.pop()
        {
            *inline = note_ref;
        }
    }
}

/// A note's label: `1`, `[1]`, `(1)`, `1.`, `*`, `†`, `a`.
fn is_label(text: &str) -> bool {
    let t = text
        .trim()
        .trim_matches(|c: char| matches!(c, '[' | ']' | '(' | ')' | '.'));
    !t.is_empty()
        && t.chars().count() <= 6
        && (t.chars().all(|c| c.is_ascii_digit())
            || t.chars().all(|c| matches!(c, '*' | '†' | '‡' | '§'))
            || (t.chars().count() == 1 && t.chars().all(char::is_alphabetic))
            || t.chars().all(|c| matches!(c, 'i' | 'v' | 'x')))
}

/// The start of a note paragraph: its id and the id it links back to.
fn note_start(block: &Block) -> Option<(String, String)> {
    let Block::Paragraph { content, .. } = block else {
        return None;
    };
    let mut id = None;
    for inline in content {
        match inline {
            Inline::Text(t) if t.trim().is_empty() => {}
            Inline::Anchor(a) if id.is_none() => id = Some(a.clone()),
            Inline::Link {
                target: LinkTarget::Internal(back),
                content,
            } if is_label(&inline_text(content)) => {
                return id.map(|id| (id, back.clone()));
            }
            Inline::Superscript(inner) | Inline::Strong(inner) => {
                // `<sup><a id href>1</a></sup>` at the start of the note.
                let mut inner_id = id.clone();
                for i in inner {
                    match i {
                        Inline::Anchor(a) if inner_id.is_none() => inner_id = Some(a.clone()),
                        Inline::Link {
                            target: LinkTarget::Internal(back),
                            content,
                        } if is_label(&inline_text(content)) => {
                            return inner_id.map(|id| (id, back.clone()));
                        }
                        _ => return None,
                    }
                }
                return None;
            }
            _ => return None,
        }
    }
    None
}

/// Finds the references: an anchor `r` right before a labelled link to `n`, alone or in
/// superscript. Replaced by a note reference when `(n, r)` is a note start.
fn replace_refs(
    inlines: &mut Vec<Inline>,
    starts: &HashMap<String, String>,
    used: &mut HashSet<String>,
) {
    let mut i = 0;
    while i < inlines.len() {
        let found = match &inlines[i] {
            Inline::Superscript(inner) => reference(inner, starts).map(|n| (n, 1)),
            _ => reference(&inlines[i..], starts).map(|n| (n, 2)),
        };
        if let Some((note, span)) = found {
            used.insert(note.clone());
            inlines.splice(i..i + span, [Inline::NoteRef(note)]);
        }
        i += 1;
    }
}

fn reference(inlines: &[Inline], starts: &HashMap<String, String>) -> Option<String> {
    match inlines {
        [
            Inline::Anchor(r),
            Inline::Link {
                target: LinkTarget::Internal(n),
                content,
            },
            ..,
        ] if starts.get(n) == Some(r) && is_label(&inline_text(content)) => Some(n.clone()),
        _ => None,
    }
}

fn backlinked(blocks: &mut Vec<Block>, notes: &mut Vec<Note>) {
    let starts: HashMap<String, String> = blocks.iter().filter_map(note_start).collect();
    if starts.is_empty() {
        return;
    }
    let mut used = HashSet::new();
    // Only the body's own paragraphs are looked at for references: the note paragraphs
    // themselves start with the back link.
    visit_inlines(blocks, &mut |inlines| {
        replace_refs(inlines, &starts, &mut used)
    });
    if used.is_empty() {
        return;
    }
    // A note is its start paragraph and the paragraphs after it up to the next note's start
    // (a note of several paragraphs). After the last note of a run, the text is the book's
    // again (Gutenberg puts notes after the paragraph that calls them), unless the notes end
    // the page.
    let starts_at: Vec<usize> = blocks
        .iter()
        .enumerate()
        .filter(|(_, b)| note_start(b).is_some_and(|(id, _)| used.contains(&id)))
        .map(|(i, _)| i)
        .collect();
    let mut end_of = HashMap::new();
    for pair in starts_at.windows(2) {
        let between = &blocks[pair[0] + 1..pair[1]];
        let end = if between.iter().all(|b| matches!(b, Block::Paragraph { .. })) {
            pair[1]
        } else {
            pair[0] + 1
        };
        end_of.insert(pair[0], end);
    }
    if let Some(&last) = starts_at.last() {
        // Notes at the very end of a page (Google Docs) take the paragraphs after them to
        // the end; notes anywhere else end with their own paragraph.
        let to_end = blocks[last + 1..]
            .iter()
            .all(|b| matches!(b, Block::Paragraph { .. }));
        end_of.insert(last, if to_end { blocks.len() } else { last + 1 });
    }
    let mut out = Vec::with_capacity(blocks.len());
    let mut found = Vec::new();
    let mut note: Option<(Note, usize)> = None;
    for (i, block) in blocks.drain(..).enumerate() {
        if let Some(&end) = end_of.get(&i) {
            found.extend(note.take().map(|(n, _)| n));
            let id = note_start(&block).map(|(id, _)| id).unwrap_or_default();
            note = Some((
                Note {
                    id,
                    kind: NoteKind::Footnote,
                    blocks: vec![strip_label(block)],
                },
                end,
            ));
            continue;
        }
        match &mut note {
            Some((n, end)) if i < *end => n.blocks.push(block),
            _ => {
                found.extend(note.take().map(|(n, _)| n));
                out.push(block);
            }
        }
    }
    found.extend(note.map(|(n, _)| n));
    // A rule drawn above the notes (Google Docs draws one) has nothing left to divide.
    while matches!(out.last(), Some(Block::SceneBreak)) {
        out.pop();
    }
    *blocks = out;
    notes.extend(found);
}

/// The note's paragraph without its label and back link.
fn strip_label(block: Block) -> Block {
    let Block::Paragraph { align, content } = block else {
        return block;
    };
    let mut content: Vec<Inline> = content
        .into_iter()
        .skip_while(|i| match i {
            Inline::Text(t) => t.trim().is_empty(),
            Inline::Anchor(_) => true,
            Inline::Link { content, .. } => is_label(&inline_text(content)),
            Inline::Superscript(inner) => inner
                .iter()
                .all(|i| matches!(i, Inline::Anchor(_) | Inline::Link { .. })),
            _ => false,
        })
        .collect();
    if let Some(Inline::Text(t)) = content.first_mut() {
        *t = t
            .trim_start_matches(|c: char| c.is_whitespace() || c == '\u{a0}')
            .to_owned();
    }
    Block::Paragraph { align, content }
}
