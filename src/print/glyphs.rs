//! The glyphs a book prints, and the page that makes every piece embed its fonts alike.
//!
//! typst-pdf embeds each face as a subset (through krilla and `subsetter`), numbering the
//! glyphs anew in the order the export meets them. Pieces of a book typeset apart would so
//! each hold their own subset of every face, numbered their own way, and the assembled book
//! would carry every face once a piece. So each piece, when it is set for print, is exported
//! with a *seed page* before its own: one line per face of every glyph the whole book uses
//! ([`Glyphs`], the union of what the pieces measured), in one fixed order. The export then
//! meets the glyphs in the same order in every piece and writes the same subset, byte for
//! byte, under the same name: the assembler keeps one copy, and drops the seed pages.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use typst::layout::{Abs, Em, Frame, FrameItem, Page, PagedDocument, Point, Size};
use typst::text::{Glyph, Lang, TextItem};
use typst::visualize::{Color, Paint};

use super::fonts::BookFonts;

/// The glyphs of the book by face (its index among the book's faces), each with the text it
/// stands for where it was first met (empty for a glyph that only ever continued a cluster,
/// the second glyph of a ligature's text).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Glyphs(pub BTreeMap<usize, BTreeMap<u16, String>>);

impl Glyphs {
    /// The glyphs `document`'s pages print.
    pub(crate) fn of(document: &PagedDocument, fonts: &BookFonts) -> Glyphs {
        let mut glyphs = Glyphs::default();
        let mut faces: Vec<(typst::text::Font, Option<usize>)> = Vec::new();
        for page in &document.pages {
            walk(&page.frame, &mut |item| {
                let index = match faces.iter().find(|(f, _)| *f == item.font) {
                    Some((_, index)) => *index,
                    None => {
                        let index = fonts.index_of(&item.font);
                        faces.push((item.font.clone(), index));
                        index
                    }
                };
                // A face that is not the book's (none should be) cannot be seeded: its glyphs
                // go unlisted, and only cost a second copy of it.
                let Some(index) = index else { return };
                let face = glyphs.0.entry(index).or_default();
                let mut previous = None;
                for glyph in &item.glyphs {
                    let range = glyph.range();
                    let text = if previous == Some(range.clone()) {
                        ""
                    } else {
                        item.text.get(range.clone()).unwrap_or("")
                    };
                    previous = Some(range);
                    let known = face.entry(glyph.id).or_default();
                    if known.is_empty() && !text.is_empty() {
                        *known = text.to_owned();
                    }
                }
            });
        }
        glyphs
    }

    /// Adds `other`'s glyphs; a glyph's text is the first given (`self`'s before `other`'s).
    pub fn merge(&mut self, other: &Glyphs) {
        for (face, glyphs) in &other.0 {
            let into = self.0.entry(*face).or_default();
            for (id, text) in glyphs {
                let known = into.entry(*id).or_default();
                if known.is_empty() && !text.is_empty() {
                    known.clone_from(text);
                }
            }
        }
    }

    /// The seed page, of `size`, to put before a piece's pages when it is exported.
    pub(crate) fn seed_page(&self, size: Size, fonts: &BookFonts) -> Page {
        let mut frame = Frame::soft(size);
        let mut y = Abs::pt(12.0);
        for (face, glyphs) in &self.0 {
            let Some(font) = fonts.get(*face) else {
                continue;
            };
            // The glyphs with text first, each its own cluster, in glyph order; then those
            // without, each continuing the cluster before it, so that the export maps no
            // text to them (as when they were met in the book).
            let mut text = String::new();
            let mut seeded = Vec::with_capacity(glyphs.len());
            let mut last = 0..0;
            for pass in [true, false] {
                for (id, own) in glyphs.iter().filter(|(_, t)| t.is_empty() != pass) {
                    if pass {
                        let start = text.len();
                        text.push_str(own);
                        last = start..text.len();
                    }
                    let range = u16::try_from(last.start).unwrap_or(u16::MAX)
                        ..u16::try_from(last.end).unwrap_or(u16::MAX);
                    seeded.push(Glyph {
                        id: *id,
                        x_advance: Em::new(0.5),
                        x_offset: Em::zero(),
                        y_advance: Em::zero(),
                        y_offset: Em::zero(),
                        range,
                        span: (typst::syntax::Span::detached(), 0),
                    });
                }
            }
            let item = TextItem {
                font,
                size: Abs::pt(10.0),
                fill: Paint::Solid(Color::BLACK),
                stroke: None,
                lang: Lang::ENGLISH,
                region: None,
                text: text.into(),
                glyphs: seeded,
            };
            frame.push(Point::new(Abs::pt(12.0), y), FrameItem::Text(item));
            y += Abs::pt(12.0);
        }
        Page {
            frame,
            fill: typst::foundations::Smart::Auto,
            numbering: None,
            supplement: typst::foundations::Content::empty(),
            number: 0,
        }
    }
}

fn walk(frame: &Frame, f: &mut dyn FnMut(&TextItem)) {
    for (_, item) in frame.items() {
        match item {
            FrameItem::Group(group) => walk(&group.frame, f),
            FrameItem::Text(text) => f(text),
            _ => {}
        }
    }
}
