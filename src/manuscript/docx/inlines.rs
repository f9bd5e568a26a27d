//! Turning a paragraph's runs into the model's nested inlines. Word stores text as a flat
//! sequence of runs, each with its own formatting; a book wants `Emphasis("a whole phrase")`,
//! not one node per run. Runs become atoms with formatting bits, adjacent text with equal
//! formatting merges, and nesting is rebuilt one property at a time.

use crate::document::{Inline, LinkTarget, Math};

use super::styles::fmt;

#[derive(Debug, Clone, PartialEq)]
pub enum AtomKind {
    Text(String),
    Break,
    /// A page break inside the paragraph (`w:br w:type="page"`).
    PageBreak,
    NoteRef(String),
    Anchor(String),
    Image {
        id: String,
        alt: String,
    },
    /// A Word equation, already MathML.
    Math(Math),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Atom {
    pub fmt: u16,
    pub link: Option<usize>,
    pub kind: AtomKind,
}

/// The atoms of one paragraph and the link targets they refer to.
#[derive(Debug, Default)]
pub struct Atoms {
    pub atoms: Vec<Atom>,
    pub links: Vec<LinkTarget>,
}

impl Atoms {
    pub fn text(&mut self, fmt: u16, link: Option<usize>, text: &str) {
        if text.is_empty() {
            return;
        }
        if let Some(Atom {
            fmt: f,
            link: l,
            kind: AtomKind::Text(t),
        }) = self.atoms.last_mut()
            && *f == fmt
            && *l == link
        {
            t.push_str(text);
            return;
        }
        self.push(fmt, link, AtomKind::Text(text.to_owned()));
    }

    pub fn push(&mut self, fmt: u16, link: Option<usize>, kind: AtomKind) {
        self.atoms.push(Atom { fmt, link, kind });
    }

    /// The index of a link target, reusing the last one when it is the same link.
    pub fn link(&mut self, target: LinkTarget) -> usize {
        if let Some(i) = self.links.iter().rposition(|t| *t == target) {
            return i;
        }
        self.links.push(target);
        self.links.len() - 1
    }
}

/// Removes whitespace and line breaks at both ends of a paragraph.
pub fn trim(atoms: &mut Vec<Atom>) {
    loop {
        match atoms.first_mut().map(|a| &mut a.kind) {
            Some(AtomKind::Break) => {
                atoms.remove(0);
            }
            Some(AtomKind::Text(t)) => {
                let trimmed = t.trim_start();
                if trimmed.is_empty() {
                    atoms.remove(0);
                } else {
                    if trimmed.len() != t.len() {
                        *t = trimmed.to_owned();
                    }
                    break;
                }
            }
            _ => break,
        }
    }
    loop {
        match atoms.last_mut().map(|a| &mut a.kind) {
            Some(AtomKind::Break) => {
                atoms.pop();
            }
            Some(AtomKind::Text(t)) => {
                let len = t.trim_end().len();
                if len == 0 {
                    atoms.pop();
                } else {
                    t.truncate(len);
                    break;
                }
            }
            _ => break,
        }
    }
}

/// Nesting order: the outermost wrapper first.
const ORDER: [u16; 7] = [
    fmt::BOLD,
    fmt::ITALIC,
    fmt::UNDERLINE,
    fmt::STRIKE,
    fmt::SUPER,
    fmt::SUB,
    fmt::SMALL_CAPS,
];

fn wrap(bit: u16, content: Vec<Inline>) -> Inline {
    match bit {
        fmt::BOLD => Inline::Strong(content),
        fmt::ITALIC => Inline::Emphasis(content),
        fmt::UNDERLINE => Inline::Underline(content),
        fmt::STRIKE => Inline::Strikethrough(content),
        fmt::SUPER => Inline::Superscript(content),
        fmt::SUB => Inline::Subscript(content),
        _ => Inline::SmallCaps(content),
    }
}

/// Builds inlines from atoms.
pub fn build(mut atoms: Vec<Atom>, links: &[LinkTarget]) -> Vec<Inline> {
    neutralise(&mut atoms);
    let mut out = Vec::new();
    let mut rest = atoms.as_slice();
    while let Some(first) = rest.first() {
        let n = rest.iter().take_while(|a| a.link == first.link).count();
        let (group, tail) = rest.split_at(n);
        let content = if first.link.is_some() {
            // Underlining is how a link looks, not emphasis of its text.
            let plain: Vec<Atom> = group
                .iter()
                .map(|a| Atom {
                    fmt: a.fmt & !fmt::UNDERLINE,
                    ..a.clone()
                })
                .collect();
            nest(&plain, 0)
        } else {
            nest(group, 0)
        };
        match first.link.and_then(|i| links.get(i)) {
            Some(target) => out.push(Inline::Link {
                target: target.clone(),
                content,
            }),
            None => out.extend(content),
        }
        rest = tail;
    }
    out
}

/// Note references, anchors and equations take the formatting around them, so that they do
/// not split an italic phrase in two (a note mark's superscript is the writer's business, and
/// an equation's look is its own).
fn neutralise(atoms: &mut [Atom]) {
    let mut previous: Option<u16> = None;
    for i in 0..atoms.len() {
        let neutral = matches!(
            atoms[i].kind,
            AtomKind::NoteRef(_) | AtomKind::Anchor(_) | AtomKind::Math(_)
        );
        if neutral {
            let next = atoms[i..]
                .iter()
                .find(|a| {
                    !matches!(
                        a.kind,
                        AtomKind::NoteRef(_) | AtomKind::Anchor(_) | AtomKind::Math(_)
                    )
                })
                .map(|a| a.fmt);
            atoms[i].fmt = match (previous, next) {
                (Some(p), Some(n)) => p & n,
                (Some(f), None) | (None, Some(f)) => f,
                (None, None) => 0,
            };
        } else {
            previous = Some(atoms[i].fmt);
        }
    }
}

fn nest(atoms: &[Atom], k: usize) -> Vec<Inline> {
    let Some(&bit) = ORDER.get(k) else {
        return leaves(atoms);
    };
    let mut out = Vec::new();
    let mut rest = atoms;
    while let Some(first) = rest.first() {
        let on = first.fmt & bit != 0;
        let n = rest.iter().take_while(|a| (a.fmt & bit != 0) == on).count();
        let (group, tail) = rest.split_at(n);
        let inner = nest(group, k + 1);
        if on {
            out.push(wrap(bit, inner));
        } else {
            out.extend(inner);
        }
        rest = tail;
    }
    out
}

fn leaves(atoms: &[Atom]) -> Vec<Inline> {
    let mut out: Vec<Inline> = Vec::new();
    for atom in atoms {
        let code = atom.fmt & fmt::CODE != 0;
        match &atom.kind {
            AtomKind::Text(t) => match out.last_mut() {
                Some(Inline::Code(c)) if code => c.push_str(t),
                Some(Inline::Text(c)) if !code => c.push_str(t),
                _ if code => out.push(Inline::Code(t.clone())),
                _ => out.push(Inline::Text(t.clone())),
            },
            AtomKind::Break | AtomKind::PageBreak => out.push(Inline::LineBreak),
            AtomKind::NoteRef(id) => out.push(Inline::NoteRef(id.clone())),
            AtomKind::Anchor(id) => out.push(Inline::Anchor(id.clone())),
            AtomKind::Image { id, alt } => out.push(Inline::Image {
                image: id.clone(),
                alt: alt.clone(),
            }),
            AtomKind::Math(math) => out.push(Inline::Math(math.clone())),
        }
    }
    out
}

/// `head` followed by `tail`, joining text that meets at the seam ("D" + "rop cap").
pub fn join(mut head: Vec<Inline>, tail: Vec<Inline>) -> Vec<Inline> {
    let mut tail = tail.into_iter();
    if let (Some(Inline::Text(a)), Some(first)) = (head.last_mut(), tail.next()) {
        match first {
            Inline::Text(b) => a.push_str(&b),
            other => head.push(other),
        }
    }
    head.extend(tail);
    head
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(fmt: u16, s: &str) -> Atom {
        Atom {
            fmt,
            link: None,
            kind: AtomKind::Text(s.into()),
        }
    }

    #[test]
    fn runs_with_equal_formatting_merge_and_nesting_is_rebuilt() {
        let mut a = Atoms::default();
        a.text(0, None, "plain ");
        a.text(fmt::ITALIC, None, "it");
        a.text(fmt::ITALIC, None, "alic ");
        a.text(fmt::ITALIC | fmt::BOLD, None, "both");
        a.text(fmt::BOLD, None, " bold");
        assert_eq!(a.atoms.len(), 4);
        let inlines = build(a.atoms, &[]);
        assert_eq!(
            inlines,
            vec![
                Inline::Text("plain ".into()),
                Inline::Emphasis(vec![Inline::Text("italic ".into())]),
                Inline::Strong(vec![
                    Inline::Emphasis(vec![Inline::Text("both".into())]),
                    Inline::Text(" bold".into()),
                ]),
            ]
        );
    }

    #[test]
    fn a_note_reference_does_not_split_an_italic_phrase() {
        let atoms = vec![
            t(fmt::ITALIC, "a"),
            Atom {
                fmt: fmt::SUPER,
                link: None,
                kind: AtomKind::NoteRef("fn1".into()),
            },
            t(fmt::ITALIC, "b"),
        ];
        let inlines = build(atoms, &[]);
        assert_eq!(inlines.len(), 1);
    }

    #[test]
    fn trimming_drops_edge_whitespace_and_breaks() {
        let mut atoms = vec![
            t(0, "  "),
            Atom {
                fmt: 0,
                link: None,
                kind: AtomKind::Break,
            },
            t(0, " a "),
            t(fmt::BOLD, " "),
        ];
        trim(&mut atoms);
        assert_eq!(atoms, vec![t(0, "a")]);
    }
}
