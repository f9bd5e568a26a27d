//! How long each metadata value may be, and what a label may say.
//!
//! A value is small, but Bindery writes it into many places: the title into the cover and
//! copyright pages, every page of the web reader and the print edition's running heads, a
//! label into every chapter it names. So each value has a bound, and a label may use each of
//! its placeholders only a few times: `{title}` three thousand times over a long title was a
//! 180 MB page from a 60 KB upload. With these, every page Bindery writes itself is bounded
//! by constants ([`MAX_FILLED_CHARS`]), whatever the upload says.
//!
//! The person's own value (an upload's field, `--meta`) over a bound is refused, naming the
//! bound; a manuscript's (its front matter, its document properties) is shortened or left out
//! with a warning, as its other invalid values are.

use crate::document::keys::{Field, Named};
use crate::labels::{self, Key};

/// Longest title or subtitle, in characters: what KDP allows for both together. The generated
/// cover, the title page and the web reader show every word of a title and a subtitle this
/// long; the running heads and the spine, a line each, shorten them at a word.
pub const MAX_TITLE_CHARS: usize = 200;
/// Longest name: an author, a publisher, a series, a subject.
pub const MAX_NAME_CHARS: usize = 200;
/// Most authors, and most subjects, a book may list.
pub const MAX_NAMES: usize = 50;
/// Longest description (KDP's is 4,000 characters) or back-cover text, which a paperback's
/// back cover holds a fraction of.
pub const MAX_DESCRIPTION_CHARS: usize = 10_000;
/// Longest rights statement.
pub const MAX_RIGHTS_CHARS: usize = 2_000;
/// Longest value of a field that must parse (a date, an ISBN, a trim…): far above any valid
/// one, so that only the error message is bounded by it.
pub const MAX_PARSED_CHARS: usize = 100;
/// Longest label (`labels.contents`), placeholders included.
pub const MAX_LABEL_CHARS: usize = 200;
/// How many times a label may use each of its placeholders (`{title}`).
pub const MAX_PLACEHOLDER_USES: usize = 2;

/// The longest list of names `Labels::join` makes: the `and` label at its bound, using its
/// `{a}` (every name but the last, joined by commas of up to two characters) and `{b}` each as
/// often as it may.
pub const MAX_JOINED_CHARS: usize =
    MAX_LABEL_CHARS + MAX_PLACEHOLDER_USES * MAX_NAMES * (MAX_NAME_CHARS + 2);

/// The longest any label can be once its placeholders are filled, in characters: a label at
/// its bound using the two longest values, the title and the authors joined, each as often as
/// it may. Every label Bindery fills is at most this.
pub const MAX_FILLED_CHARS: usize =
    MAX_LABEL_CHARS + MAX_PLACEHOLDER_USES * (MAX_TITLE_CHARS + MAX_JOINED_CHARS);

/// What a field's value may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// Text of at most this many characters.
    Text(usize),
    /// A list separated by `;`: at most [`MAX_NAMES`] names of at most [`MAX_NAME_CHARS`].
    Names,
}

impl Bound {
    /// The bound of `field`.
    pub fn of(field: Field) -> Bound {
        match field {
            Field::Title | Field::Subtitle => Bound::Text(MAX_TITLE_CHARS),
            Field::Authors | Field::Subjects => Bound::Names,
            Field::Publisher | Field::Series => Bound::Text(MAX_NAME_CHARS),
            Field::Description | Field::Blurb => Bound::Text(MAX_DESCRIPTION_CHARS),
            Field::Rights => Bound::Text(MAX_RIGHTS_CHARS),
            Field::Language => Bound::Text(crate::language::MAX_TAG_CHARS),
            Field::Identifier
            | Field::Date
            | Field::SeriesNumber
            | Field::Trim
            | Field::Paper
            | Field::Bleed
            | Field::PrintIsbn
            | Field::Price
            | Field::Printer
            | Field::Editions
            | Field::HardcoverIsbn
            | Field::HardcoverTrim
            | Field::LargePrintIsbn
            | Field::LargePrintTrim
            | Field::LargePrintSize
            | Field::ReferenceEdition
            | Field::Style => Bound::Text(MAX_PARSED_CHARS),
        }
    }
}

/// The most characters a value for `named` can have, separators included.
pub fn max_chars(named: Named) -> usize {
    match named {
        Named::Label(_) => MAX_LABEL_CHARS,
        Named::Field(field) => match Bound::of(field) {
            Bound::Text(max) => max,
            // Each name with a "; " after it.
            Bound::Names => MAX_NAMES * (MAX_NAME_CHARS + 2),
        },
    }
}

/// Checks a value a person gave for `named`: `Err` says what is wrong, in words for them.
pub fn check(named: Named, value: &str) -> Result<(), String> {
    match named {
        Named::Label(key) => check_label(key, value),
        Named::Field(field) => match Bound::of(field) {
            Bound::Text(max) => within(value, max),
            Bound::Names => {
                let names: Vec<&str> = names(value).collect();
                if names.len() > MAX_NAMES {
                    return Err(format!(
                        "it lists {} names; a book may list at most {MAX_NAMES}",
                        names.len()
                    ));
                }
                names.iter().try_for_each(|name| {
                    within(name, MAX_NAME_CHARS).map_err(|e| format!("a name is too long: {e}"))
                })
            }
        },
    }
}

/// The names of a `;`-separated list, trimmed, empty ones left out.
pub fn names(value: &str) -> impl Iterator<Item = &str> {
    value.split(';').map(str::trim).filter(|s| !s.is_empty())
}

fn within(value: &str, max: usize) -> Result<(), String> {
    let chars = value.trim().chars().count();
    if chars > max {
        Err(format!(
            "it is {chars} characters long; it may be at most {max}"
        ))
    } else {
        Ok(())
    }
}

/// A label: within [`MAX_LABEL_CHARS`], each of its placeholders used at most
/// [`MAX_PLACEHOLDER_USES`] times. A placeholder the key does not fill (`{title}` in
/// `contents`) is plain text, and counts as such.
fn check_label(key: Key, value: &str) -> Result<(), String> {
    within(value, MAX_LABEL_CHARS)?;
    let own = labels::placeholders(labels::english().get(key));
    let used = labels::placeholders(value);
    for name in own {
        let uses = used.iter().filter(|u| **u == name).count();
        if uses > MAX_PLACEHOLDER_USES {
            return Err(format!(
                "it uses {{{name}}} {uses} times; a label may use each placeholder at most \
                 {MAX_PLACEHOLDER_USES} times"
            ));
        }
    }
    Ok(())
}

/// `value` cut to `max` characters at a word's end where there is one, with "…" after it:
/// what a manuscript's over-long value becomes.
pub fn shortened(value: &str, max: usize) -> String {
    let value = value.trim();
    if value.chars().count() <= max {
        return value.to_owned();
    }
    // Room for the ellipsis.
    let end = value
        .char_indices()
        .nth(max.saturating_sub(1))
        .map_or(value.len(), |(i, _)| i);
    let cut = &value[..end];
    let ends_a_word = value[end..].starts_with(char::is_whitespace);
    let at_word = if ends_a_word {
        cut
    } else {
        cut.rfind(char::is_whitespace)
            .filter(|i| *i > end / 2)
            .map_or(cut, |i| &cut[..i])
    };
    format!("{}…", at_word.trim_end())
}

/// A value as an error shows it: at most a line's worth, so a message never carries a
/// megabyte of what was sent.
pub fn excerpt(value: &str) -> String {
    shortened(value, 80)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_may_use_each_of_its_placeholders_twice_and_be_two_hundred_characters() {
        let ok = "{title} — {title}, by {authors}";
        assert_eq!(check(Named::Label(Key::TitleBy), ok), Ok(()));
        let thrice = "{title}{title}{title}";
        let problem = check(Named::Label(Key::TitleBy), thrice).expect_err("refused");
        assert!(problem.contains("{title} 3 times"), "{problem}");
        // Not a placeholder of `contents`: plain text, bounded by the length alone.
        assert_eq!(
            check(Named::Label(Key::Contents), "{title}{title}{title}"),
            Ok(())
        );
        let long = "x".repeat(MAX_LABEL_CHARS + 1);
        let problem = check(Named::Label(Key::Contents), &long).expect_err("refused");
        assert!(problem.contains("201 characters"), "{problem}");
    }

    #[test]
    fn fields_are_held_to_their_bounds_by_characters_not_bytes() {
        let title = Named::Field(Field::Title);
        assert_eq!(check(title, &"日".repeat(MAX_TITLE_CHARS)), Ok(()));
        assert!(check(title, &"日".repeat(MAX_TITLE_CHARS + 1)).is_err());
        let authors = Named::Field(Field::Authors);
        let many = vec!["A. Author"; MAX_NAMES + 1].join("; ");
        assert!(
            check(authors, &many)
                .expect_err("many")
                .contains("51 names")
        );
        let long = format!("Ann; {}", "n".repeat(MAX_NAME_CHARS + 1));
        assert!(check(authors, &long).expect_err("long").contains("a name"));
        assert_eq!(
            check(authors, &vec!["A. Author"; MAX_NAMES].join("; ")),
            Ok(())
        );
    }

    #[test]
    fn a_shortened_value_ends_at_a_word_with_an_ellipsis() {
        assert_eq!(shortened("short", 10), "short");
        let cut = shortened("the quick brown fox jumps over", 16);
        assert_eq!(cut, "the quick brown…");
        assert!(cut.chars().count() <= 16);
        let cut = shortened(&"x".repeat(100), 10);
        assert_eq!(cut.chars().count(), 10);
    }

    /// Every label the English table has, replaced by the longest the rules allow and filled
    /// with values at their bounds, stays within [`MAX_FILLED_CHARS`]; the names joined, within
    /// [`MAX_JOINED_CHARS`].
    #[test]
    fn every_label_filled_at_the_bounds_is_within_the_filled_bound() {
        let title = "t".repeat(MAX_TITLE_CHARS);
        let names: Vec<String> = (0..MAX_NAMES).map(|_| "n".repeat(MAX_NAME_CHARS)).collect();
        let and = format!("{{a}}{{a}}{}{{b}}{{b}}", "&".repeat(MAX_LABEL_CHARS - 12));
        assert_eq!(check(Named::Label(Key::And), &and), Ok(()));
        let mut overrides = std::collections::BTreeMap::from([("and".to_owned(), and)]);
        let joined = labels::Labels::new("ar", &overrides).join(&names);
        assert!(
            joined.chars().count() <= MAX_JOINED_CHARS,
            "{}",
            joined.chars().count()
        );
        // Every other value Bindery fills in (a number, a date, a publisher, an identifier)
        // is shorter than this.
        let short = "s".repeat(MAX_PARSED_CHARS.max(MAX_NAME_CHARS));
        for key in Key::ALL.iter().copied().filter(|k| *k != Key::And) {
            let own = labels::placeholders(labels::english().get(key));
            let mut label: String = own
                .iter()
                .flat_map(|p| std::iter::repeat_n(format!("{{{p}}}"), MAX_PLACEHOLDER_USES))
                .collect();
            let pad = MAX_LABEL_CHARS.saturating_sub(label.chars().count());
            label.push_str(&"x".repeat(pad));
            assert_eq!(check(Named::Label(key), &label), Ok(()), "{key:?}");
            overrides.insert(key.name().to_owned(), label);
            let labels = labels::Labels::new("en", &overrides);
            let values: Vec<(&str, &str)> = own
                .iter()
                .map(|p| match *p {
                    "title" => (*p, title.as_str()),
                    "authors" => (*p, joined.as_str()),
                    _ => (*p, short.as_str()),
                })
                .collect();
            let filled = labels.fill(key, &values).chars().count();
            assert!(filled <= MAX_FILLED_CHARS, "{key:?}: {filled} characters");
        }
    }
}
