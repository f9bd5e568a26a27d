//! Heading ids and the links that point at them, settled once the whole tree is built
//! (a link may point forward).

use std::collections::{HashMap, HashSet};

use crate::document::{Block, Inline, LinkTarget, Note, inline_text};
use crate::report::Warning;

use super::resources::{LOCAL_MARK, percent_decode};

/// Gives every heading an id (its own `{#id}` or a pandoc-style slug), then makes every
/// internal link point at an existing id or removes the link (keeping its text), and turns
/// references to missing notes back into their text.
pub(crate) fn resolve(blocks: &mut [Block], notes: &mut [Note], warnings: &mut Vec<Warning>) {
    let mut ids = HashSet::new();
    // Explicit ids first: a slug must not take an id the author chose.
    walk_blocks(blocks, &mut |b| {
        if let Block::Heading { id: Some(id), .. } = b {
            ids.insert(id.clone());
        }
    });
    // The next suffix to try for each slug: headings that slug alike (a hundred thousand
    // `# 1`, `# 2`… are all `section`) would otherwise each count up from the first, a
    // quadratic walk that held a reading child for minutes.
    let mut next: HashMap<String, usize> = HashMap::new();
    walk_blocks(blocks, &mut |b| {
        if let Block::Heading {
            id: id @ None,
            content,
            ..
        } = b
        {
            let base = slug(&inline_text(content));
            let n = next.entry(base.clone()).or_insert(0);
            let mut candidate = base.clone();
            if *n > 0 {
                candidate = format!("{base}-{n}");
            }
            while ids.contains(&candidate) {
                *n += 1;
                candidate = format!("{base}-{n}");
            }
            *n += 1;
            ids.insert(candidate.clone());
            *id = Some(candidate);
        }
    });
    let mut collect_anchors = |inlines: &mut Vec<Inline>| {
        for inline in inlines.iter() {
            if let Inline::Anchor(a) = inline {
                ids.insert(a.clone());
            }
        }
    };
    for_each_inlines(blocks, &mut collect_anchors);
    for note in notes.iter_mut() {
        for_each_inlines(&mut note.blocks, &mut collect_anchors);
    }

    let note_ids: HashSet<String> = notes.iter().map(|n| n.id.clone()).collect();
    let mut fix = |inlines: &mut Vec<Inline>| fix_inlines(inlines, &ids, &note_ids, warnings);
    for_each_inlines(blocks, &mut fix);
    for note in notes.iter_mut() {
        for_each_inlines(&mut note.blocks, &mut fix);
    }
}

/// pandoc's `auto_identifiers`: lower case, only letters, digits, `_`, `-` and `.`, words
/// joined by `-`, nothing before the first letter; `section` if nothing is left.
pub(crate) fn slug(text: &str) -> String {
    let kept: String = text
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.') || c.is_whitespace())
        .flat_map(char::to_lowercase)
        .collect();
    let joined = kept.split_whitespace().collect::<Vec<_>>().join("-");
    let slug = joined.trim_start_matches(|c: char| !c.is_alphabetic());
    if slug.is_empty() {
        "section".to_owned()
    } else {
        slug.to_owned()
    }
}

fn fix_inlines(
    inlines: &mut Vec<Inline>,
    ids: &HashSet<String>,
    notes: &HashSet<String>,
    warnings: &mut Vec<Warning>,
) {
    let mut i = 0;
    while i < inlines.len() {
        let replacement = match &inlines[i] {
            Inline::Link {
                target: LinkTarget::Internal(target),
                content,
            } => {
                let (local, fragment) = match target.strip_prefix(LOCAL_MARK) {
                    Some(url) => (
                        Some(url),
                        url.split_once('#').map(|(_, f)| percent_decode(f)),
                    ),
                    None => (None, Some(target.clone())),
                };
                match fragment.filter(|f| ids.contains(f)) {
                    Some(f) => {
                        if f != *target {
                            inlines[i] = Inline::Link {
                                target: LinkTarget::Internal(f),
                                content: content.clone(),
                            };
                        }
                        None
                    }
                    None => {
                        let text = inline_text(content);
                        warnings.push(match local {
                            Some(url) => Warning::new(
                                "local_link_dropped",
                                format!("The link “{}” points to {url:?}, a file that is not part of the book; its text was kept without the link.", text.trim()),
                            ),
                            None => Warning::new(
                                "link_target_missing",
                                format!("The link “{}” points to #{target}, which is not a heading or anchor in the book; its text was kept without the link.", text.trim()),
                            ),
                        });
                        Some(content.clone())
                    }
                }
            }
            Inline::NoteRef(id) if !notes.contains(id) => {
                warnings.push(Warning::new(
                    "note_missing",
                    format!("The footnote reference [^{id}] has no footnote text; it was kept as written."),
                ));
                Some(vec![Inline::Text(format!("[^{id}]"))])
            }
            _ => None,
        };
        match replacement {
            // What replaced the link is looked at again (it may hold more links).
            Some(with) => {
                inlines.splice(i..=i, with);
            }
            None => {
                if let Some(children) = children_mut(&mut inlines[i]) {
                    fix_inlines(children, ids, notes, warnings);
                }
                i += 1;
            }
        }
    }
    merge_text(inlines);
}

/// Adjacent text runs (left by a removed link) become one.
fn merge_text(inlines: &mut Vec<Inline>) {
    let mut merged: Vec<Inline> = Vec::with_capacity(inlines.len());
    for inline in inlines.drain(..) {
        match (merged.last_mut(), inline) {
            (Some(Inline::Text(last)), Inline::Text(t)) => last.push_str(&t),
            (_, inline) => merged.push(inline),
        }
    }
    *inlines = merged;
}

fn children_mut(inline: &mut Inline) -> Option<&mut Vec<Inline>> {
    inline.children_mut()
}

fn walk_blocks(blocks: &mut [Block], f: &mut dyn FnMut(&mut Block)) {
    for block in blocks {
        f(block);
        match block {
            Block::BlockQuote(inner) => walk_blocks(inner, f),
            Block::List { items, .. } => items.iter_mut().for_each(|i| walk_blocks(i, f)),
            Block::DefinitionList(defs) => defs
                .iter_mut()
                .flat_map(|d| d.definitions.iter_mut())
                .for_each(|d| walk_blocks(d, f)),
            Block::Table(t) => t
                .head
                .iter_mut()
                .chain(t.body.iter_mut())
                .flat_map(|r| r.cells.iter_mut())
                .for_each(|c| walk_blocks(&mut c.blocks, f)),
            _ => {}
        }
    }
}

/// Calls `f` on every top-level inline list (paragraphs, headings, terms, captions).
fn for_each_inlines(blocks: &mut [Block], f: &mut dyn FnMut(&mut Vec<Inline>)) {
    walk_blocks(blocks, &mut |block| match block {
        Block::Heading { content, .. } | Block::Paragraph { content, .. } => f(content),
        Block::Figure { caption, .. } => f(caption),
        Block::Table(t) => f(&mut t.caption),
        Block::DefinitionList(defs) => defs.iter_mut().for_each(|d| f(&mut d.term)),
        _ => {}
    });
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::slug;

    #[test]
    fn slugs_follow_pandoc() {
        assert_eq!(slug("Chapter One"), "chapter-one");
        assert_eq!(
            slug("Level 2 with an embedded link"),
            "level-2-with-an-embedded-link"
        );
        assert_eq!(slug("1. Introduction!"), "introduction");
        assert_eq!(slug("Café au lait"), "café-au-lait");
        assert_eq!(slug("123"), "section");
    }

    /// Headings that slug alike take `-1`, `-2`… in order, around the ids an author chose, and
    /// fifty thousand of them (`# 1`, `# 2`…, all `section`) take a moment, not minutes.
    #[test]
    fn headings_that_slug_alike_are_numbered_in_one_pass() {
        use crate::document::{Block, Inline};
        let heading = |text: &str, id: Option<&str>| Block::Heading {
            level: 1,
            id: id.map(str::to_owned),
            content: vec![Inline::Text(text.to_owned())],
        };
        let mut blocks = vec![
            heading("1", None),
            heading("Chosen", Some("section-2")),
            heading("2", None),
            heading("3", None),
        ];
        super::resolve(&mut blocks, &mut [], &mut Vec::new());
        let ids: Vec<&str> = blocks
            .iter()
            .filter_map(|b| match b {
                Block::Heading { id, .. } => id.as_deref(),
                _ => None,
            })
            .collect();
        assert_eq!(ids, ["section", "section-2", "section-1", "section-3"]);
        let mut many: Vec<Block> = (0..50_000).map(|i| heading(&i.to_string(), None)).collect();
        let started = std::time::Instant::now();
        super::resolve(&mut many, &mut [], &mut Vec::new());
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        let unique: std::collections::HashSet<&str> = many
            .iter()
            .filter_map(|b| match b {
                Block::Heading { id, .. } => id.as_deref(),
                _ => None,
            })
            .collect();
        assert_eq!(unique.len(), 50_000);
    }
}
