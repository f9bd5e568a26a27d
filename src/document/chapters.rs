//! Cutting a flat run of blocks into chapters. Every reader ends with this, so that a heading
//! means the same thing whichever format it came from.

use super::numbers::{TENS, UNITS};
use super::{Block, Chapter, Division, Metadata, inline_text};
use crate::report::Warning;

/// Splits `blocks` at their shallowest heading level, which becomes level 1.
///
/// - A single shallowest heading at the very start, above deeper headings, is the book's
///   title (Markdown `# Title` over `## Chapter`s): it fills `metadata.title` when that is
///   empty, and chapters are cut at the next level.
/// - With no headings at all, explicit page breaks are taken as chapter breaks (with a
///   warning); failing that the book is one chapter.
/// - Text before the first heading becomes an untitled opening chapter.
pub fn split(
    mut blocks: Vec<Block>,
    metadata: &mut Metadata,
    warnings: &mut Vec<Warning>,
) -> Vec<Chapter> {
    let levels: Vec<u8> = blocks
        .iter()
        .filter_map(|b| match b {
            Block::Heading { level, .. } => Some(*level),
            _ => None,
        })
        .collect();
    let Some(&top) = levels.iter().min() else {
        return split_without_headings(blocks, warnings);
    };

    let mut cut = top;
    let tops = levels.iter().filter(|&&l| l == top).count();
    let deeper = levels.iter().filter(|&&l| l > top).min().copied();
    if let (1, Some(next), Some(Block::Heading { level, content, .. })) =
        (tops, deeper, blocks.first())
        && *level == top
    {
        let title = inline_text(content).trim().to_owned();
        let same = metadata.title.as_deref().map(str::trim) == Some(title.as_str());
        if metadata.title.is_none() || same {
            if metadata.title.is_none() && !title.is_empty() {
                metadata.title = Some(title);
            }
            blocks.remove(0);
        }
        cut = next;
    }

    let mut chapters: Vec<Chapter> = Vec::new();
    let mut current = Chapter::default();
    let mut started = false;
    for mut block in blocks {
        if let Block::Heading { level, content, .. } = &mut block {
            if *level <= cut {
                if started || has_content(&current.blocks) {
                    chapters.push(std::mem::take(&mut current));
                }
                started = true;
                current.title = inline_text(content)
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ");
                current.division = Division::from_title(&current.title);
            }
            *level = level.saturating_sub(cut - 1).clamp(1, 6);
        }
        current.blocks.push(block);
    }
    if started || has_content(&current.blocks) {
        chapters.push(current);
    }
    chapters
}

fn split_without_headings(blocks: Vec<Block>, warnings: &mut Vec<Warning>) -> Vec<Chapter> {
    let breaks = blocks
        .iter()
        .filter(|b| matches!(b, Block::PageBreak))
        .count();
    if breaks == 0 {
        return vec![Chapter {
            blocks,
            ..Chapter::default()
        }];
    }
    let mut chapters = Vec::new();
    let mut current = Vec::new();
    for block in blocks {
        if matches!(block, Block::PageBreak) {
            if has_content(&current) {
                chapters.push(Chapter {
                    blocks: std::mem::take(&mut current),
                    ..Chapter::default()
                });
            }
        } else {
            current.push(block);
        }
    }
    if has_content(&current) || chapters.is_empty() {
        chapters.push(Chapter {
            blocks: current,
            ..Chapter::default()
        });
    }
    if chapters.len() > 1 {
        warnings.push(Warning::new(
            "chapters_guessed",
            format!(
                "The manuscript has no headings, so its {} page breaks were taken as chapter breaks. \
                 Give chapter titles a heading style to choose the chapters yourself.",
                chapters.len() - 1
            ),
        ));
    }
    chapters
}

/// A chapter's subtitle, when its heading only numbers it (`I`, `12`, `Chapter Three`) and a
/// title follows at once: a deeper heading, or a short line that is no sentence
/// (`## I` then `A Letter with a Postscript`). The contents then show both, where "I … XXIII"
/// told a reader nothing. The line stays in the text as it was.
pub fn subtitle(chapter: &Chapter) -> Option<String> {
    let mut blocks = chapter.blocks.iter();
    let Some(Block::Heading { level, .. }) = blocks.next() else {
        return None;
    };
    if !only_numbers(&chapter.title) {
        return None;
    }
    let line = match blocks.next()? {
        Block::Heading {
            level: deeper,
            content,
            ..
        } if deeper > level => inline_text(content),
        Block::Paragraph { content, .. } => {
            let text = inline_text(content);
            // More must follow: a chapter of one short line has no title in it.
            blocks.next()?;
            if !reads_as_title(&text) {
                return None;
            }
            text
        }
        _ => return None,
    };
    let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
    (!line.is_empty()).then_some(line)
}

/// `I`, `XXIII`, `12`, `Chapter 3`, `Chapter Three`, `Part IV.`: a heading that only counts.
pub fn only_numbers(title: &str) -> bool {
    const NAMES: [&str; 5] = ["chapter", "part", "book", "letter", "section"];
    let lower = title.to_lowercase();
    let mut words: Vec<&str> = lower
        .split(|c: char| c.is_whitespace() || c == '-')
        .map(|w| w.trim_end_matches(['.', ':']))
        .filter(|w| !w.is_empty())
        .collect();
    if words.first().is_some_and(|w| NAMES.contains(w)) {
        words.remove(0);
    }
    !words.is_empty()
        && words.len() <= 3
        && words.iter().all(|w| {
            (w.len() <= 4 && w.chars().all(|c| c.is_ascii_digit()))
                || (w.len() <= 8 && w.chars().all(|c| "ivxlcdm".contains(c)))
                || UNITS[1..].contains(w)
                || TENS[2..].contains(w)
                || *w == "hundred"
        })
}

/// A short line that is a title, not the chapter's first sentence: a few words, no closing
/// full stop or comma, not a quotation.
fn reads_as_title(text: &str) -> bool {
    let text = text.trim();
    let words = text.split_whitespace().count();
    (1..=12).contains(&words)
        && text.chars().count() <= 90
        && !text.ends_with(['.', ',', ';', ':', '…'])
        && !text.starts_with(['“', '"', '‘', '\'', '«', '—', '-'])
        && text.chars().next().is_some_and(|c| !c.is_lowercase())
}

/// Whether blocks hold anything a reader would see.
fn has_content(blocks: &[Block]) -> bool {
    blocks.iter().any(|b| match b {
        Block::SceneBreak | Block::PageBreak => false,
        Block::Paragraph { content, .. } => !content.is_empty(),
        _ => true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::Inline;

    fn chapter(blocks: Vec<Block>) -> Chapter {
        let title = match &blocks[0] {
            Block::Heading { content, .. } => inline_text(content),
            _ => String::new(),
        };
        Chapter {
            title,
            blocks,
            ..Chapter::default()
        }
    }

    #[test]
    fn a_numbered_chapter_takes_the_title_line_under_it_as_its_subtitle() {
        let novel = chapter(vec![
            h(2, "I"),
            p("A Letter with a Postscript"),
            p(
                "“A gentleman called to see you when you were out last night, sir,” said Mrs. Medley.",
            ),
        ]);
        assert_eq!(
            subtitle(&novel).as_deref(),
            Some("A Letter with a Postscript")
        );
        let deeper = chapter(vec![h(1, "Chapter 3"), h(2, "What Ho!"), p("Text.")]);
        assert_eq!(subtitle(&deeper).as_deref(), Some("What Ho!"));
        let words = chapter(vec![h(1, "Chapter Twenty-One"), p("The Storm"), p("Text.")]);
        assert_eq!(subtitle(&words).as_deref(), Some("The Storm"));
    }

    #[test]
    fn a_titled_chapter_or_a_first_sentence_is_no_subtitle() {
        for blocks in [
            // The heading is a title already.
            vec![h(1, "The Farm"), p("Chickens"), p("Text.")],
            // The line is the story's first sentence, or its dialogue.
            vec![h(1, "II"), p("It was a dark and stormy night."), p("Text.")],
            vec![h(1, "II"), p("“Caruso?”"), p("Text.")],
            vec![h(1, "II"), p("and so it went on"), p("Text.")],
            // Nothing follows the line: it is the chapter, not its title.
            vec![h(1, "III"), p("The End")],
            vec![h(1, "IV"), p(&"word ".repeat(20)), p("Text.")],
        ] {
            let c = chapter(blocks);
            assert_eq!(subtitle(&c), None, "{:?}", c.blocks);
        }
    }

    fn h(level: u8, text: &str) -> Block {
        Block::Heading {
            level,
            id: None,
            content: vec![Inline::Text(text.into())],
        }
    }

    fn p(text: &str) -> Block {
        Block::Paragraph {
            align: Default::default(),
            content: vec![Inline::Text(text.into())],
        }
    }

    #[test]
    fn a_lone_top_heading_is_the_title_and_chapters_are_cut_below_it() {
        let mut meta = Metadata::default();
        let chapters = split(
            vec![
                h(1, "My Book"),
                h(2, "Prologue"),
                p("a"),
                h(2, "One"),
                p("b"),
                h(3, "Sub"),
                p("c"),
            ],
            &mut meta,
            &mut Vec::new(),
        );
        assert_eq!(meta.title.as_deref(), Some("My Book"));
        let titles: Vec<_> = chapters.iter().map(|c| c.title.as_str()).collect();
        assert_eq!(titles, ["Prologue", "One"]);
        assert_eq!(chapters[0].division, Division::Prologue);
        assert!(matches!(
            chapters[1].blocks[0],
            Block::Heading { level: 1, .. }
        ));
        assert!(matches!(
            chapters[1].blocks[2],
            Block::Heading { level: 2, .. }
        ));
    }

    #[test]
    fn text_before_the_first_heading_is_an_opening_chapter() {
        let chapters = split(
            vec![p("epigraph"), h(2, "I"), p("a"), h(2, "II"), p("b")],
            &mut Metadata::default(),
            &mut Vec::new(),
        );
        assert_eq!(chapters.len(), 3);
        assert_eq!(chapters[0].title, "");
    }

    #[test]
    fn page_breaks_cut_a_book_without_headings_and_say_so() {
        let mut warnings = Vec::new();
        let chapters = split(
            vec![p("a"), Block::PageBreak, p("b"), Block::PageBreak],
            &mut Metadata::default(),
            &mut warnings,
        );
        assert_eq!(chapters.len(), 2);
        assert_eq!(warnings[0].code, "chapters_guessed");
    }
}
