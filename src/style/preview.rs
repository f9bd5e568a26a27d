//! The few pages of a book a style's preview shows: its first chapter's opening and a passage
//! around its first scene break, cut from the book itself so that an author judges a style on
//! their own words. The print edition sets them and the reader shows them from this one cut.

use super::{StyleName, opening};
use crate::document::{Block, Chapter, Division, Document};

/// Which look a preview shows: a style, and for a house style the version of its file and
/// files, so that a house style replaced is previewed anew. Written `classic`, or
/// `noir.1a2b3c4d` (a dot is never in a style's name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Look {
    pub style: StyleName,
    pub version: Option<String>,
}

impl Look {
    /// A look as [`Look`]'s `Display` wrote it.
    pub fn parse(s: &str) -> Option<Look> {
        let (style, version) = match s.split_once('.') {
            Some((style, version)) => (style, Some(version)),
            None => (s, None),
        };
        let version_ok = version.is_none_or(|v| {
            !v.is_empty() && v.len() <= 16 && v.bytes().all(|b| b.is_ascii_hexdigit())
        });
        let name = StyleName::parse(style).ok()?;
        (version_ok && name.as_str() == style).then(|| Look {
            style: name,
            version: version.map(str::to_owned),
        })
    }
}

impl std::fmt::Display for Look {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.version {
            Some(version) => write!(f, "{}.{version}", self.style),
            None => write!(f, "{}", self.style),
        }
    }
}

/// Blocks of the opening chapter a preview sets: more than a page holds.
const OPENING_BLOCKS: usize = 16;
/// Blocks before and after the scene break: it falls on the passage's first page.
const AROUND_BREAK: (usize, usize) = (3, 8);

/// The preview's document: chapter 0 is the opening (`opening`), chapter 1 the passage with
/// a scene break (`scene`), each when the book has one. Images are left out: a preview is
/// about type, and costs what a few pages of text cost.
#[derive(Debug, Clone)]
pub struct Excerpt {
    pub document: Document,
    pub opening: Option<usize>,
    pub scene: Option<usize>,
}

/// The excerpt of `document`.
pub fn excerpt(document: &Document) -> Excerpt {
    let keep = |b: &&Block| !matches!(b, Block::Figure { .. } | Block::PageBreak);
    let mut chapters = Vec::new();
    let opening_chapter = document
        .chapters
        .iter()
        .find(|c| opening::opening_paragraph(c).is_some());
    let opening = opening_chapter.map(|chapter| {
        chapters.push(Chapter {
            title: chapter.title.clone(),
            division: chapter.division,
            blocks: chapter
                .blocks
                .iter()
                .filter(keep)
                .take(OPENING_BLOCKS)
                .cloned()
                .collect(),
        });
        chapters.len() - 1
    });
    let scene = document.chapters.iter().find_map(|chapter| {
        let at = chapter
            .blocks
            .iter()
            .position(|b| matches!(b, Block::SceneBreak))?;
        let from = at.saturating_sub(AROUND_BREAK.0);
        let to = (at + 1 + AROUND_BREAK.1).min(chapter.blocks.len());
        let blocks: Vec<Block> = chapter.blocks[from..to]
            .iter()
            .filter(keep)
            .filter(|b| !matches!(b, Block::Heading { .. }))
            .cloned()
            .collect();
        chapters.push(Chapter {
            title: String::new(),
            // Not a chapter's opening: a passage from the middle of one.
            division: Division::Appendix,
            blocks,
        });
        Some(chapters.len() - 1)
    });
    Excerpt {
        document: Document {
            metadata: document.metadata.clone(),
            chapters,
            notes: document.notes.clone(),
            images: Vec::new(),
        },
        opening,
        scene,
    }
}
