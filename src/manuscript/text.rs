//! Plain-text manuscripts: paragraphs at blank lines, chapters from common heading forms.
//!
//! Plain text has no markup, so structure is guessed from how people type books: a chapter
//! heading is a short line on its own (`Chapter 3`, `IV`, `Prologue`), a scene break is a
//! line of ornaments, and an indented block is a quotation. Every guess is reported.

use super::{InputError, Limits, Meter};
use crate::document::numbers::{TENS, UNITS};
use crate::document::{Block, Document, Inline, Metadata, Parsed, chapters};
use crate::report::Warning;

pub fn read(text: &str, limits: &Limits) -> Result<Parsed, InputError> {
    // Every paragraph holds at least one word, so the words bound the whole model: counted
    // before any of it is built.
    Meter::new(limits).text(text)?;
    let paragraphs = paragraphs(text);
    let mut metadata = Metadata::default();
    let skip = title_page(&paragraphs, &mut metadata);
    let paragraphs = &paragraphs[skip..];

    let forms: Vec<Option<HeadingForm>> = paragraphs.iter().map(|p| heading_form(p)).collect();
    let accepted = accept_numerals(&forms);

    let mut blocks = Vec::with_capacity(paragraphs.len());
    let mut found: Vec<HeadingForm> = Vec::new();
    for (paragraph, form) in paragraphs.iter().zip(accepted) {
        if let Some(form) = form {
            found.push(form);
            blocks.push(Block::Heading {
                level: 1,
                id: None,
                content: vec![Inline::Text(heading_text(paragraph))],
            });
        } else {
            blocks.push(block(paragraph));
        }
    }

    let mut warnings = Vec::new();
    if !found.is_empty() {
        warnings.push(chapters_guessed(&found));
    }
    let chapters = chapters::split(blocks, &mut metadata, &mut warnings);
    Ok(Parsed {
        document: Document {
            metadata,
            chapters,
            ..Document::default()
        },
        warnings,
        ..Parsed::default()
    })
}

/// Lines grouped at blank lines.
fn paragraphs(text: &str) -> Vec<Vec<&str>> {
    let mut out: Vec<Vec<&str>> = Vec::new();
    let mut current = Vec::new();
    for line in text.lines() {
        if line.trim().is_empty() {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
        } else {
            current.push(line);
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// A paragraph that is not a heading: a scene break, an indented quotation (line breaks
/// kept, as in verse or a letter's address), or running text (lines joined).
fn block(lines: &[&str]) -> Block {
    if let [line] = lines
        && is_scene_break(line)
    {
        return Block::SceneBreak;
    }
    if lines.iter().all(|l| indent(l) >= 2) {
        let mut content = Vec::with_capacity(lines.len() * 2);
        for (i, line) in lines.iter().enumerate() {
            if i > 0 {
                content.push(Inline::LineBreak);
            }
            content.push(Inline::Text(line.trim().to_owned()));
        }
        return Block::BlockQuote(vec![Block::Paragraph {
            align: Default::default(),
            content,
        }]);
    }
    let joined = lines.iter().map(|l| l.trim()).collect::<Vec<_>>().join(" ");
    Block::Paragraph {
        align: Default::default(),
        content: vec![Inline::Text(joined)],
    }
}

/// Columns of leading white space, a tab counting as four.
fn indent(line: &str) -> usize {
    line.chars()
        .take_while(|c| c.is_whitespace())
        .map(|c| if c == '\t' { 4 } else { 1 })
        .sum()
}

/// `***`, `* * *`, `#`, `~~~`, `⁂`, `---`, `§`: a line of ornaments and nothing else.
pub(super) fn is_scene_break(line: &str) -> bool {
    let t = line.trim();
    !t.is_empty()
        && t.chars().count() <= 40
        && t.chars().all(|c| {
            c.is_whitespace()
                || matches!(
                    c,
                    '*' | '#'
                        | '~'
                        | '-'
                        | '_'
                        | '='
                        | '+'
                        | '•'
                        | '·'
                        | '⁂'
                        | '§'
                        | '❧'
                        | '❦'
                        | '◆'
                        | '◇'
                        | '✻'
                        | '✽'
                        | '⁕'
                        | '†'
                        | '⸻'
                        | '—'
                        | '–'
                )
        })
}

/// The ways a line can be a heading; named in the `chapters_guessed` warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HeadingForm {
    /// `Chapter 1`, `CHAPTER ONE`, `Chapter the First`, `Chapter XII: Title`.
    Chapter,
    /// `Part One`, `Book II`.
    PartOrBook,
    /// `IV`, `I.`, `12`: only believed in a sequence counting up from one.
    Numeral(u32),
    /// `Prologue`, `Dedication`, `Acknowledgments`…
    Division,
}

impl HeadingForm {
    fn describe(self) -> &'static str {
        match self {
            HeadingForm::Chapter => "“Chapter …”",
            HeadingForm::PartOrBook => "“Part …” or “Book …”",
            HeadingForm::Numeral(_) => "numerals on their own line",
            HeadingForm::Division => "named sections such as Prologue or Dedication",
        }
    }
}

const DIVISIONS: &[&str] = &[
    "prologue",
    "epilogue",
    "dedication",
    "foreword",
    "preface",
    "introduction",
    "afterword",
    "acknowledgments",
    "acknowledgements",
    "epigraph",
    "appendix",
    "glossary",
];

/// A heading's text: its line, or `CHAPTER I.` and the title on the next line as one.
fn heading_text(lines: &[&str]) -> String {
    match lines {
        [number, title] => {
            let number = number.trim();
            let separator = if number.ends_with(['.', ':']) {
                " "
            } else {
                ": "
            };
            format!("{number}{separator}{}", title.trim())
        }
        _ => lines
            .first()
            .map(|l| l.trim().to_owned())
            .unwrap_or_default(),
    }
}

/// What heading form a paragraph has: one line short enough to be a heading, or a
/// `Chapter …` line with a short title on the line below (as in many scanned books).
fn heading_form(lines: &[&str]) -> Option<HeadingForm> {
    if let [number, title] = lines {
        let form = heading_form(&[number])?;
        let title = title.trim();
        let titled = matches!(form, HeadingForm::Chapter | HeadingForm::PartOrBook)
            && title.chars().count() <= 60
            && !title.ends_with([',', ';'])
            && heading_form(&[title]).is_none();
        return titled.then_some(form);
    }
    let [line] = lines else { return None };
    let line = line.trim();
    if line.chars().count() > 100 || indent(lines[0]) >= 8 {
        return None;
    }
    let lower = line.to_lowercase();
    let (first, rest) = split_word(&lower);
    let first_bare = first.trim_end_matches(['.', ':']);
    if matches!(first_bare, "chapter" | "part" | "book") {
        let rest = rest.trim_start();
        let (number, after) = match rest.strip_prefix("the ") {
            Some(ordinal) => {
                let (word, after) = split_word(ordinal.trim_start());
                (ordinal_word(word.trim_end_matches(['.', ':'])), after)
            }
            None => {
                let (word, after) = split_word(rest);
                (number(word.trim_end_matches(['.', ':', ','])), after)
            }
        };
        let word_ends_with_separator = rest
            .split_whitespace()
            .next()
            .is_some_and(|w| w.ends_with(['.', ':']));
        if number.is_some() && (is_title_tail(after) || word_ends_with_separator) {
            return Some(if first_bare == "chapter" {
                HeadingForm::Chapter
            } else {
                HeadingForm::PartOrBook
            });
        }
        return None;
    }
    if DIVISIONS.contains(&first_bare) && (rest.trim().is_empty() || is_title_tail(rest)) {
        return Some(HeadingForm::Division);
    }
    // A numeral alone, optionally followed by a full stop: `IV`, `I.`, `12`.
    let bare = line.strip_suffix('.').unwrap_or(line);
    if bare.chars().all(|c| c.is_ascii_digit()) && (1..=3).contains(&bare.len()) {
        return bare.parse().ok().map(HeadingForm::Numeral);
    }
    if bare.chars().all(|c| "IVXLC".contains(c)) {
        return roman(bare).map(HeadingForm::Numeral);
    }
    None
}

/// Empty, or a title after a separator: `: The Storm`, `. The Storm`, `— The Storm`.
fn is_title_tail(after: &str) -> bool {
    let after = after.trim_start();
    after.is_empty() || after.starts_with([':', '.', '-', '—', '–', '|'])
}

fn split_word(s: &str) -> (&str, &str) {
    let s = s.trim_start();
    match s.find(char::is_whitespace) {
        Some(at) => (&s[..at], &s[at..]),
        None => (s, ""),
    }
}

/// Numerals believed as headings: those that count up from one in document order. A lone
/// `I` in dialogue, or a year on its own line, does not extend the count.
fn accept_numerals(forms: &[Option<HeadingForm>]) -> Vec<Option<HeadingForm>> {
    let mut expected = 1;
    let mut out: Vec<Option<HeadingForm>> = forms
        .iter()
        .map(|form| match form {
            Some(HeadingForm::Numeral(n)) if *n == expected => {
                expected += 1;
                *form
            }
            Some(HeadingForm::Numeral(_)) => None,
            other => *other,
        })
        .collect();
    // One numeral alone is no sequence: a lone "I" is a word.
    if expected <= 2 {
        for form in &mut out {
            if matches!(form, Some(HeadingForm::Numeral(_))) {
                *form = None;
            }
        }
    }
    out
}

fn number(word: &str) -> Option<u32> {
    if let Ok(n) = word.parse::<u32>() {
        return (n < 10_000).then_some(n);
    }
    roman(&word.to_uppercase()).or_else(|| number_word(word))
}

/// A roman numeral in canonical form (so `IIII` or `VX` are not numerals).
fn roman(s: &str) -> Option<u32> {
    let numeral: roman_numerals_rs::RomanNumeral = s.parse().ok()?;
    (numeral.to_uppercase() == s).then(|| u32::from(numeral.as_u16()))
}

const ORDINAL_UNITS: [&str; 20] = [
    "zeroth",
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
    "sixth",
    "seventh",
    "eighth",
    "ninth",
    "tenth",
    "eleventh",
    "twelfth",
    "thirteenth",
    "fourteenth",
    "fifteenth",
    "sixteenth",
    "seventeenth",
    "eighteenth",
    "nineteenth",
];
const ORDINAL_TENS: [&str; 10] = [
    "",
    "",
    "twentieth",
    "thirtieth",
    "fortieth",
    "fiftieth",
    "sixtieth",
    "seventieth",
    "eightieth",
    "ninetieth",
];

/// `one` … `ninety-nine`.
fn number_word(word: &str) -> Option<u32> {
    compound(word, &UNITS, &TENS, &UNITS)
}

/// `first` … `ninety-ninth`.
fn ordinal_word(word: &str) -> Option<u32> {
    compound(word, &ORDINAL_UNITS, &ORDINAL_TENS, &ORDINAL_UNITS)
}

fn compound(word: &str, units: &[&str; 20], tens: &[&str; 10], tail: &[&str; 20]) -> Option<u32> {
    let find = |table: &[&str], w: &str| table.iter().position(|t| *t == w).map(|i| i as u32);
    if let Some(n) = find(units, word).filter(|&n| n > 0) {
        return Some(n);
    }
    if let Some(n) = find(tens, word).filter(|&n| n >= 2) {
        return Some(n * 10);
    }
    let (ten, unit) = word.split_once('-')?;
    let ten = find(&TENS, ten).filter(|&n| n >= 2)?;
    let unit = find(tail, unit).filter(|&n| (1..10).contains(&n))?;
    Some(ten * 10 + unit)
}

/// A short first line, then `by Name`: a title page. Returns how many paragraphs it used.
fn title_page(paragraphs: &[Vec<&str>], metadata: &mut Metadata) -> usize {
    let author_of = |line: &str| {
        let line = line.trim();
        let rest = line
            .strip_prefix("by ")
            .or_else(|| line.strip_prefix("By "))?;
        let rest = rest.trim();
        (!rest.is_empty() && rest.chars().count() <= 80).then(|| rest.to_owned())
    };
    let short_title = |line: &str| {
        let t = line.trim();
        (!t.is_empty() && t.chars().count() <= 100 && heading_form(&[line]).is_none())
            .then(|| t.to_owned())
    };
    let found = match paragraphs {
        [first, ..] if first.len() == 2 => short_title(first[0])
            .zip(author_of(first[1]))
            .map(|t| (t, 1)),
        [first, second, ..] if first.len() == 1 && second.len() == 1 => short_title(first[0])
            .zip(author_of(second[0]))
            .map(|t| (t, 2)),
        _ => None,
    };
    match found {
        Some(((title, author), used)) => {
            metadata.title = Some(title);
            metadata.authors.push(author);
            used
        }
        None => 0,
    }
}

fn chapters_guessed(found: &[HeadingForm]) -> Warning {
    let mut forms: Vec<&str> = Vec::new();
    for form in found {
        let name = form.describe();
        if !forms.contains(&name) {
            forms.push(name);
        }
    }
    Warning::new(
        "chapters_guessed",
        format!(
            "Plain text has no headings, so {} chapter heading{} {} recognised from lines on their own ({}). Check the table of contents; Markdown lets you mark headings yourself.",
            found.len(),
            if found.len() == 1 { "" } else { "s" },
            if found.len() == 1 { "was" } else { "were" },
            forms.join(", ")
        ),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::document::{Division, plain_text};

    fn titles(parsed: &Parsed) -> Vec<&str> {
        parsed
            .document
            .chapters
            .iter()
            .map(|c| c.title.as_str())
            .collect()
    }

    #[test]
    fn lines_of_a_paragraph_are_joined_and_blank_lines_split() {
        let parsed = read(
            "One line\nand the next.\n\nSecond paragraph.\n",
            &Limits::default(),
        )
        .unwrap();
        let blocks = &parsed.document.chapters[0].blocks;
        assert_eq!(
            plain_text(blocks),
            "One line and the next.\nSecond paragraph.\n"
        );
        assert!(parsed.warnings.is_empty());
    }

    #[test]
    fn an_indented_paragraph_is_a_quotation_keeping_its_lines() {
        let parsed = read(
            "Before.\n\n  To my friend\n  With thanks\n\nAfter.",
            &Limits::default(),
        )
        .unwrap();
        let blocks = &parsed.document.chapters[0].blocks;
        let Block::BlockQuote(inner) = &blocks[1] else {
            panic!("{blocks:?}")
        };
        assert_eq!(plain_text(inner), "To my friend\nWith thanks\n");
    }

    #[test]
    fn chapter_heading_forms_are_recognised() {
        for heading in [
            "Chapter 1",
            "CHAPTER ONE",
            "Chapter the First",
            "Chapter XII: The Storm",
            "Chapter Twenty-One",
            "Part One",
            "Book II",
            "Prologue",
            "Acknowledgments",
        ] {
            assert!(heading_form(&[heading]).is_some(), "{heading}");
        }
        for prose in [
            "Chapter and verse were quoted.",
            "Part of me wanted to stay.",
            "Book two was better than the first.",
            "Introduction to the problem was slow.",
            "I",
        ] {
            assert!(
                !matches!(
                    heading_form(&[prose]),
                    Some(HeadingForm::Chapter | HeadingForm::PartOrBook | HeadingForm::Division)
                ),
                "{prose}"
            );
        }
    }

    #[test]
    fn chapters_are_cut_at_headings_with_divisions() {
        let parsed = read("Prologue\n\nIt began.\n\nChapter 1\n\nOne.\n\nChapter 2: Later\n\nTwo.\n\nEpilogue\n\nEnd.", &Limits::default()).unwrap();
        assert_eq!(
            titles(&parsed),
            ["Prologue", "Chapter 1", "Chapter 2: Later", "Epilogue"]
        );
        assert_eq!(parsed.document.chapters[0].division, Division::Prologue);
        assert_eq!(parsed.document.chapters[3].division, Division::Epilogue);
        assert_eq!(parsed.warnings[0].code, "chapters_guessed");
        assert!(parsed.warnings[0].message.contains("4 chapter headings"));
    }

    #[test]
    fn a_chapter_line_with_its_title_below_is_one_heading() {
        let parsed = read(
            "CHAPTER I.\nTHE BEGINNING\n\nIt began.\n\nCHAPTER II\nLater\n\nOn.",
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(
            titles(&parsed),
            ["CHAPTER I. THE BEGINNING", "CHAPTER II: Later"]
        );
    }

    #[test]
    fn a_lone_i_is_a_heading_only_in_a_sequence_of_numerals() {
        let dialogue = read(
            "“Who did it?”\n\nI\n\nThe silence was long.",
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(dialogue.document.chapters.len(), 1);
        assert!(dialogue.warnings.is_empty());
        let numbered = read(
            "I.\n\nOne.\n\nII.\n\nTwo.\n\nI\n\nStill two.\n\nIII.\n\nThree.",
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(titles(&numbered), ["I.", "II.", "III."]);
    }

    #[test]
    fn scene_breaks_are_recognised() {
        for line in ["***", "* * *", "#", "~~~", "⁂", "  *  *  *  "] {
            assert!(is_scene_break(line), "{line}");
        }
        for line in ["A", "I.", "**Bold**", "#hashtag"] {
            assert!(!is_scene_break(line), "{line}");
        }
        let parsed = read("One.\n\n* * *\n\nTwo.", &Limits::default()).unwrap();
        assert_eq!(parsed.document.chapters[0].blocks[1], Block::SceneBreak);
    }

    #[test]
    fn a_title_page_fills_title_and_author() {
        let parsed = read(
            "The Long Road\n\nby Jane Doe\n\nChapter 1\n\nIt began.\n\nChapter 2\n\nOn.",
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(
            parsed.document.metadata.title.as_deref(),
            Some("The Long Road")
        );
        assert_eq!(parsed.document.metadata.authors, ["Jane Doe"]);
        assert_eq!(titles(&parsed), ["Chapter 1", "Chapter 2"]);
        let together = read(
            "The Long Road\nBy Jane Doe\n\nIt began.",
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(together.document.metadata.authors, ["Jane Doe"]);
    }

    #[test]
    fn roman_numerals_must_be_canonical() {
        assert_eq!(roman("XXIII"), Some(23));
        assert_eq!(roman("XIV"), Some(14));
        assert_eq!(roman("IIII"), None);
        assert_eq!(roman("VX"), None);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod novel_tests {
    use super::*;
    use crate::document::{Division, word_count};

    #[test]
    fn the_plain_text_novel_has_a_dedication_and_its_chapters() {
        let text = crate::test_support::fixture_text("text/love-among-the-chickens.txt");
        let markdown = crate::test_support::fixture_text("markdown/love-among-the-chickens.md");
        let expected: Vec<&str> = markdown
            .lines()
            .filter_map(|l| l.strip_prefix("## "))
            .collect();
        let parsed = read(&text, &Limits::default()).unwrap();
        let titles: Vec<_> = parsed
            .document
            .chapters
            .iter()
            .map(|c| c.title.as_str())
            .collect();
        assert_eq!(titles, expected);
        assert_eq!(parsed.document.chapters[0].division, Division::Dedication);
        // The indented lines of the dedication are a quotation with their line breaks.
        assert!(parsed.document.chapters[0].blocks.iter().any(|b| matches!(
            b,
            Block::BlockQuote(inner) if crate::document::plain_text(inner).lines().count() == 4
        )));
        assert_eq!(parsed.warnings.len(), 1);
        assert!(
            parsed.warnings[0].message.contains("24 chapter headings"),
            "{}",
            parsed.warnings[0].message
        );
        assert!(word_count(&parsed.document) > 45_000);
    }
}
