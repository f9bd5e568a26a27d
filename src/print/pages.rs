//! What a typeset pass tells of its pages: where each chapter and the contents fell, which
//! pages are empty, and where the book's text begins on each page.

use std::collections::BTreeSet;

use typst::WorldExt;
use typst::foundations::{Label, Selector, Value};
use typst::introspection::MetadataElem;
use typst::layout::{Frame, FrameItem, PagedDocument};
use typst::utils::PicoStr;

use crate::document::positions::TextPosition;

use super::markup::Literal;
use super::template::{CHAPTER_LABEL, CONTENTS_LABEL, COPYRIGHT_LABEL, PageData};
use super::world::BookWorld;

/// The pages of one pass, as plain data.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Survey {
    pub pages: usize,
    /// The physical page (from 1) each chapter opens on, by chapter index.
    pub chapters: Vec<(usize, usize)>,
    pub contents: Option<usize>,
    /// Physical pages with nothing printed on them.
    pub blank: BTreeSet<usize>,
    /// The copyright page's physical page, in the piece that holds the front matter (a survey
    /// stored before it was marked has none).
    #[serde(default)]
    pub copyright: Option<usize>,
}

fn label(name: &str) -> Label {
    Label::new(PicoStr::intern(name)).expect("a label's name is not empty")
}

/// Where the markers fell and which pages are empty.
pub(crate) fn survey(document: &PagedDocument) -> Survey {
    let introspector = &document.introspector;
    let mut chapters = Vec::new();
    for marker in introspector.query(&Selector::Label(label(CHAPTER_LABEL))) {
        let (Some(location), Some(meta)) = (marker.location(), marker.to_packed::<MetadataElem>())
        else {
            continue;
        };
        if let Value::Int(index) = meta.value {
            chapters.push((index as usize, introspector.page(location).get()));
        }
    }
    chapters.sort_unstable();
    let page_of = |name: &str| {
        introspector
            .query(&Selector::Label(label(name)))
            .first()
            .and_then(|m| m.location())
            .map(|location| introspector.page(location).get())
    };
    let contents = page_of(CONTENTS_LABEL);
    let copyright = page_of(COPYRIGHT_LABEL);
    let blank = document
        .pages
        .iter()
        .enumerate()
        .filter(|(_, page)| !prints_anything(&page.frame))
        .map(|(i, _)| i + 1)
        .collect();
    Survey {
        pages: document.pages.len(),
        chapters,
        contents,
        blank,
        copyright,
    }
}

fn prints_anything(frame: &Frame) -> bool {
    frame.items().any(|(_, item)| match item {
        FrameItem::Group(group) => prints_anything(&group.frame),
        FrameItem::Text(_) | FrameItem::Shape(..) | FrameItem::Image(..) => true,
        FrameItem::Link(..) | FrameItem::Tag(_) => false,
    })
}

/// Each page's folio and style, and the contents' folios, for the next pass. The front
/// matter is numbered in roman from the half title; the first body chapter is page 1.
/// Display pages before the contents (half title, title, copyright, dedication) and empty
/// pages print nothing; chapter openings and the contents print a folio but no running head.
/// `titles` are the chapters' running titles (`template::running_titles`; none when the
/// style's heads do not name chapters).
pub(crate) fn page_data(
    survey: &Survey,
    listed: &[usize],
    body: Option<usize>,
    titles: &[String],
) -> PageData {
    let page_of = |chapter: usize| {
        survey
            .chapters
            .iter()
            .find(|(c, _)| *c == chapter)
            .map(|(_, p)| *p)
    };
    let body_start = body.and_then(page_of).unwrap_or(survey.pages + 1);
    let contents = survey.contents.unwrap_or(body_start);
    let openings: BTreeSet<usize> = survey.chapters.iter().map(|(_, p)| *p).collect();
    let contents_end = listed
        .first()
        .and_then(|c| page_of(*c))
        .unwrap_or(body_start);
    let mut styles = String::with_capacity(survey.pages);
    let mut folios = Vec::with_capacity(survey.pages);
    for page in 1..=survey.pages {
        let style = if survey.blank.contains(&page) || page < contents {
            'n'
        } else if openings.contains(&page) || page < contents_end {
            'f'
        } else {
            'h'
        };
        styles.push(style);
        folios.push(if page < body_start {
            roman(page)
        } else {
            (page - body_start + 1).to_string()
        });
    }
    let contents = listed
        .iter()
        .map(|c| page_of(*c).map_or_else(String::new, |p| folios[p - 1].clone()))
        .collect();
    PageData {
        styles,
        folios,
        contents,
        heads: heads(survey, titles),
    }
}

/// Each page's chapter's running title: the last chapter to open on or before it.
pub(crate) fn heads(survey: &Survey, titles: &[String]) -> Vec<String> {
    if titles.is_empty() {
        return Vec::new();
    }
    let mut openings = survey.chapters.clone();
    openings.sort_by_key(|&(_, page)| page);
    (1..=survey.pages)
        .map(|page| {
            openings
                .iter()
                .rev()
                .find(|&&(_, start)| start <= page)
                .and_then(|&(chapter, _)| titles.get(chapter).cloned())
                .unwrap_or_default()
        })
        .collect()
}

/// Lower-case roman numerals, as front matter is numbered (figures past 3999, which roman
/// numerals do not reach).
pub fn roman(n: usize) -> String {
    crate::style::numbers::roman(n).to_lowercase()
}

/// The first glyph of the book's text on each page that has any, as the page (from 0) and a
/// place in the book.
pub(crate) fn starts(
    document: &PagedDocument,
    world: &BookWorld<'_>,
    literals: &[Literal],
) -> Vec<(usize, TextPosition)> {
    let mut starts = Vec::new();
    for (i, page) in document.pages.iter().enumerate() {
        let mut first: Option<TextPosition> = None;
        walk_text(&page.frame, &mut |text| {
            for glyph in &text.glyphs {
                if first.is_some() {
                    return;
                }
                let (span, offset) = glyph.span;
                let Some(range) = world.range(span) else {
                    continue;
                };
                let at = literals.partition_point(|l| l.start <= range.start);
                let Some(literal) = at.checked_sub(1).map(|at| &literals[at]) else {
                    continue;
                };
                if range.start < literal.end {
                    first = Some(TextPosition {
                        offset: literal.at.offset + usize::from(offset),
                        ..literal.at
                    });
                }
            }
        });
        if let Some(at) = first {
            starts.push((i, at));
        }
    }
    starts
}

/// The characters no face could draw, on any page of `document`.
pub(crate) fn missing(document: &PagedDocument) -> BTreeSet<char> {
    let mut missing = BTreeSet::new();
    for page in &document.pages {
        walk_text(&page.frame, &mut |text| {
            for glyph in text.glyphs.iter().filter(|g| g.id == 0) {
                missing.extend(text.text[glyph.range()].chars());
            }
        });
    }
    missing
}

fn walk_text(frame: &Frame, f: &mut dyn FnMut(&typst::text::TextItem)) {
    for (_, item) in frame.items() {
        match item {
            FrameItem::Group(group) => walk_text(&group.frame, f),
            FrameItem::Text(text) => f(text),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roman_numerals() {
        let got: Vec<String> = [1, 4, 9, 14, 40, 90, 400, 1994].map(roman).to_vec();
        assert_eq!(got, ["i", "iv", "ix", "xiv", "xl", "xc", "cd", "mcmxciv"]);
    }

    #[test]
    fn front_matter_is_roman_and_display_pages_bare() {
        // Half title, blank, title, copyright, dedication (5), blank (6), contents (7), blank
        // (8), chapter 1 at 9 (page 1), its second page, blank, chapter 2 at 13.
        let survey = Survey {
            pages: 13,
            chapters: vec![(0, 5), (1, 9), (2, 13)],
            contents: Some(7),
            blank: BTreeSet::from([2, 6, 8, 11]),
            copyright: Some(4),
        };
        let data = page_data(&survey, &[1, 2], Some(1), &[]);
        assert_eq!(data.styles, "nnnnnnfnfhnhf");
        assert_eq!(data.folios[6], "vii");
        assert_eq!(data.folios[8], "1");
        assert_eq!(data.folios[12], "5");
        assert_eq!(data.contents, ["1", "5"]);
    }
}
