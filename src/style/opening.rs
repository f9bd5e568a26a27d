//! Where a style's openings fall in a chapter, and how their text is cut: the EPUB's markup
//! and the print edition's source both ask here, so that a drop cap, a small-caps lead-in and
//! a chapter number fall on the same letters and words in every edition.

use super::{AfterBreak, Numbering, Opening, Style, numbers};
use crate::document::{Block, Chapter, Division, Inline};
use crate::labels::Labels;

/// Divisions whose first paragraph opens as the style says: the running text, not a
/// dedication, an epigraph, a part's title page or the back matter's lists.
pub fn opens(division: Division) -> bool {
    matches!(
        division,
        Division::Chapter
            | Division::Prologue
            | Division::Epilogue
            | Division::Introduction
            | Division::Foreword
            | Division::Preface
            | Division::Afterword
    )
}

/// The index in `chapter.blocks` of the paragraph that opens the chapter's text: the first
/// after its heading (and the line under a numbering heading that names it), if that is a
/// paragraph of text.
pub fn opening_paragraph(chapter: &Chapter) -> Option<usize> {
    if !opens(chapter.division) {
        return None;
    }
    let mut at = 0;
    let blank = |b: &Block| matches!(b, Block::Paragraph { content, .. } if crate::document::inline_text(content).trim().is_empty());
    while chapter.blocks.get(at).is_some_and(blank) {
        at += 1;
    }
    if matches!(chapter.blocks.get(at), Some(Block::Heading { .. })) {
        at += 1;
        if crate::document::chapters::subtitle(chapter).is_some() {
            at += 1;
        }
    }
    while chapter.blocks.get(at).is_some_and(blank) {
        at += 1;
    }
    match chapter.blocks.get(at) {
        Some(Block::Paragraph { content, .. })
            if !content.iter().any(|i| matches!(i, Inline::LineBreak)) =>
        {
            Some(at)
        }
        _ => None,
    }
}

/// Words set in small capitals at a small-caps opening when the style names no number.
const LEAD_IN_WORDS: usize = 3;

/// How many words of the chapter's opening paragraph are its lead-in, in small capitals.
pub fn lead_in(style: &Style) -> usize {
    let words = usize::from(style.paragraph.lead_in_words.0);
    match style.paragraph.opening {
        Opening::Plain => 0,
        Opening::SmallCaps if words == 0 => LEAD_IN_WORDS,
        Opening::SmallCaps | Opening::DropCap => words,
    }
}

/// How many words of the first paragraph after a scene break are in small capitals.
pub fn lead_after_break(style: &Style) -> usize {
    match style.paragraph.after_scene_break {
        AfterBreak::Plain => 0,
        AfterBreak::SmallCaps => match usize::from(style.paragraph.lead_in_words.0) {
            0 => LEAD_IN_WORDS,
            words => words,
        },
    }
}

/// The index of the paragraph under a heading that only numbers the chapter and names it
/// (`document::chapters::subtitle`): part of the chapter's head in every edition.
pub fn subtitle_paragraph(chapter: &Chapter) -> Option<usize> {
    crate::document::chapters::subtitle(chapter)?;
    let heading = chapter
        .blocks
        .iter()
        .position(|b| matches!(b, Block::Heading { .. }))?;
    matches!(
        chapter.blocks.get(heading + 1),
        Some(Block::Paragraph { .. })
    )
    .then_some(heading + 1)
}

/// A place in a paragraph's inlines: before byte `byte` of inline `index` (a text), or before
/// inline `index` when `byte` is 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cut {
    pub index: usize,
    pub byte: usize,
}

/// The place after the first `words` words of `content`, with the space after them; words are
/// counted in its texts, and anything else (emphasis, a note) goes with the word it touches.
/// `None` when the paragraph has no more words than that, or `words` is 0.
pub fn after_words(content: &[Inline], words: usize) -> Option<Cut> {
    if words == 0 {
        return None;
    }
    let mut seen = 0;
    let mut in_word = false;
    for (index, inline) in content.iter().enumerate() {
        match inline {
            Inline::Text(text) => {
                for (byte, c) in text.char_indices() {
                    if c.is_whitespace() {
                        if in_word {
                            seen += 1;
                            in_word = false;
                        }
                    } else if !in_word {
                        if seen == words {
                            return Some(Cut { index, byte });
                        }
                        in_word = true;
                    }
                }
            }
            Inline::LineBreak => return None,
            Inline::Anchor(_) | Inline::PrintPage(_) => {}
            _ => {
                if !in_word && seen == words {
                    return Some(Cut { index, byte: 0 });
                }
                in_word = true;
            }
        }
    }
    None
}

/// The drop cap's bytes at the start of `content`: the first letter with any opening
/// punctuation before it (`“T`) and the marks on it. `None` when the paragraph does not begin
/// with a letter of text, or has too little after it.
pub fn drop_cap(content: &[Inline]) -> Option<usize> {
    let Some(Inline::Text(text)) = content
        .iter()
        .find(|i| !matches!(i, Inline::Anchor(_) | Inline::PrintPage(_)))
    else {
        return None;
    };
    let mut end = None;
    for (byte, c) in text.char_indices() {
        if end.is_none() {
            if c.is_alphanumeric() {
                end = Some(byte + c.len_utf8());
            } else if !opening_punctuation(c) {
                return None;
            }
        } else if is_mark(c) {
            end = Some(byte + c.len_utf8());
        } else {
            break;
        }
    }
    let end = end?;
    // A one-letter paragraph, or a letter that is a whole word ("A", "I"), still drops; a
    // paragraph of that letter alone does not.
    (text[end..].trim().chars().count() + content.len() > 1).then_some(end)
}

/// Opening quotation marks and brackets, which a drop cap carries before its letter.
fn opening_punctuation(c: char) -> bool {
    matches!(
        c,
        '"' | '\'' | '“' | '‘' | '«' | '‹' | '„' | '‚' | '(' | '[' | '¿' | '¡' | '「' | '『'
    )
}

/// Combining marks, which stay with their letter.
fn is_mark(c: char) -> bool {
    matches!(c, '\u{0300}'..='\u{036f}' | '\u{1ab0}'..='\u{1aff}' | '\u{1dc0}'..='\u{1dff}' | '\u{20d0}'..='\u{20ff}' | '\u{fe20}'..='\u{fe2f}')
}

/// How a chapter's head reads in a style: the number it gets, and whether that number is
/// its whole heading (the manuscript's heading only counted, `Chapter 3`, `III`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Head {
    pub number: Option<String>,
    /// The number stands in for the manuscript's heading.
    pub replaces_title: bool,
}

/// The head of chapter `index` of `chapters` in `style`, for a book in `language` with its
/// words `labels`. Only chapters are numbered, counted from the first chapter of the book; a
/// prologue or a part keeps its own heading.
pub fn head(
    style: &Style,
    language: &str,
    labels: &Labels<'_>,
    chapters: &[Chapter],
    index: usize,
) -> Head {
    let Some(chapter) = chapters.get(index) else {
        return Head::default();
    };
    if chapter.division != Division::Chapter || style.chapter.number == Numbering::None {
        return Head::default();
    }
    let n = chapters[..=index]
        .iter()
        .filter(|c| c.division == Division::Chapter)
        .count();
    let number = numbers::chapter_number(
        language,
        labels,
        style.chapter.number,
        style.chapter.label,
        n,
    )
    .map(|(t, _)| t);
    Head {
        number,
        replaces_title: crate::document::chapters::only_numbers(&chapter.title),
    }
}

/// The warning's code when a style's numbers in words fall back to figures.
pub const NUMBERS_IN_FIGURES: &str = "style_numbers_in_figures";

/// The warning for a book in `language` whose style spells numbers it has no words for here.
pub fn numbering_warning(style: &Style, language: &str) -> Option<crate::report::Warning> {
    (style.chapter.number == Numbering::Words && !numbers::spells(language)).then(|| {
        crate::report::Warning::new(
            NUMBERS_IN_FIGURES,
            format!(
                "The style {:?} spells chapter numbers in words, which Bindery cannot yet write \
                 in {:?}: they are in figures.",
                style.title, language
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> Inline {
        Inline::Text(s.into())
    }

    #[test]
    fn words_are_cut_after_the_space_that_ends_them() {
        let content = vec![text("The storm came in  at night.")];
        assert_eq!(after_words(&content, 2), Some(Cut { index: 0, byte: 10 }));
        assert_eq!(after_words(&content, 0), None);
        assert_eq!(after_words(&content, 9), None);
        let content = vec![
            text("It was "),
            Inline::Emphasis(vec![text("very")]),
            text(" late"),
        ];
        assert_eq!(after_words(&content, 2), Some(Cut { index: 1, byte: 0 }));
        assert_eq!(after_words(&content, 3), Some(Cut { index: 2, byte: 1 }));
    }

    #[test]
    fn a_drop_cap_takes_the_opening_quote_with_its_letter() {
        assert_eq!(drop_cap(&[text("“Tell me,” she said.")]), Some("“T".len()));
        assert_eq!(drop_cap(&[text("The end")]), Some(1));
        assert_eq!(drop_cap(&[text("e\u{301}te\u{301}")]), Some(3));
        assert_eq!(drop_cap(&[text("— and so")]), None);
        assert_eq!(drop_cap(&[Inline::Emphasis(vec![text("So")])]), None);
        assert_eq!(drop_cap(&[text("A")]), None);
    }
}
