//! A chapter's number as a style writes it: in figures, in roman numerals, or in words in the
//! book's language, with or without its label ("Chapter Three", "Chapitre trois").

use super::Numbering;
use crate::labels::{Key, Labels};

/// Chapter `n` (from 1) of a book in `language`, as `numbering` and `label` say (the label in
/// the book's own words, `labels`); `None` for [`Numbering::None`]. The second value says the
/// words were wanted but the language has none Bindery can write, so figures stand in.
pub fn chapter_number(
    language: &str,
    labels: &Labels<'_>,
    numbering: Numbering,
    label: bool,
    n: usize,
) -> Option<(String, bool)> {
    let (number, fell_back) = match numbering {
        Numbering::None => return None,
        Numbering::Arabic => (n.to_string(), false),
        Numbering::Roman => (roman(n), false),
        Numbering::Words => match words(language, n) {
            Some(words) => (words, false),
            None => (n.to_string(), true),
        },
    };
    let text = if label {
        labels.fill(Key::Chapter, &[("n", &number)])
    } else {
        number
    };
    Some((text, fell_back))
}

/// Whether a book in `language` gets its numbers in words from [`words`].
pub fn spells(language: &str) -> bool {
    words(language, 1).is_some()
}

/// Upper-case roman numerals; figures past 3999, which roman numerals do not reach.
pub fn roman(n: usize) -> String {
    u16::try_from(n)
        .ok()
        .and_then(|n| roman_numerals_rs::RomanNumeral::new(n).ok())
        .map_or_else(
            || n.to_string(),
            roman_numerals_rs::RomanNumeral::to_uppercase,
        )
}

/// `n` in words in `language`, capitalised as a heading is: each word in English ("Twenty-One"),
/// the first elsewhere ("Vingt et un"). `None` where the language has no speller here.
fn words(language: &str, n: usize) -> Option<String> {
    use num2words::{Lang, Num2Words};
    let primary = language
        .split(['-', '_'])
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    let (lang, english) = match primary.as_str() {
        "en" => (Lang::English, true),
        "fr" => (Lang::French, false),
        "uk" => (Lang::Ukrainian, false),
        _ => return None,
    };
    let n = i64::try_from(n).ok()?;
    let words = Num2Words::new(n).lang(lang).to_words().ok()?;
    Some(if english {
        words.split_inclusive([' ', '-']).map(capitalised).collect()
    } else {
        capitalised(&words)
    })
}

fn capitalised(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roman_numerals_count_as_books_print_them() {
        assert_eq!(roman(1), "I");
        assert_eq!(roman(4), "IV");
        assert_eq!(roman(14), "XIV");
        assert_eq!(roman(49), "XLIX");
        assert_eq!(roman(1994), "MCMXCIV");
        assert_eq!(roman(4000), "4000");
    }

    #[test]
    fn numbers_are_spelled_in_the_books_language_or_given_in_figures() {
        assert_eq!(words("en", 21).as_deref(), Some("Twenty-One"));
        assert_eq!(words("en-GB", 3).as_deref(), Some("Three"));
        assert_eq!(words("fr", 21).as_deref(), Some("Vingt et un"));
        assert_eq!(words("de", 3), None);
        assert!(spells("uk"));
        assert!(!spells("ja"));
    }
}
