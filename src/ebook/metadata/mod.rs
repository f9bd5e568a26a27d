//! The book's final metadata: what the manuscript said, overridden by what the user supplied,
//! with every gap filled and every value made valid for EPUB.
//!
//! Nothing here may produce a book EPUBCheck rejects: the title is never empty, the language
//! is always a valid BCP 47 tag (never pandoc's "C"), dates follow W3CDTF.

use std::collections::BTreeMap;

use crate::labels::{self, Key, Labels};
use crate::language::{self, DEFAULT_LANGUAGE};
use crate::report::MetadataSource;
use chrono::Datelike;
use serde::{Deserialize, Serialize};

use crate::document::Metadata;
use crate::manuscript::InputError;
use crate::paperback::{Paper, Trim};
use crate::report::Warning;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BookMetadata {
    pub title: String,
    pub subtitle: Option<String>,
    pub authors: Vec<String>,
    /// A valid BCP 47 tag.
    pub language: String,
    /// `urn:isbn:…` when an ISBN was given, else `urn:uuid:…` derived from the manuscript.
    pub identifier: String,
    pub isbn: Option<String>,
    pub publisher: Option<String>,
    /// W3CDTF (`2024`, `2024-05`, `2024-05-01`).
    pub date: Option<String>,
    pub description: Option<String>,
    pub subjects: Vec<String>,
    pub series: Option<String>,
    pub series_number: Option<String>,
    pub rights: Option<String>,
    /// `dcterms:modified` (`2024-05-01T12:00:00Z`). Never read from the clock here, so the
    /// same input gives the same bytes.
    pub modified: String,
    /// The back cover's text.
    #[serde(default)]
    pub blurb: Option<String>,
    /// The print edition: its trim size, paper, bleed and own ISBN (a paperback's ISBN is not
    /// the ebook's).
    #[serde(default)]
    pub trim: Trim,
    #[serde(default)]
    pub paper: Paper,
    #[serde(default)]
    pub bleed: bool,
    #[serde(default)]
    pub print_isbn: Option<String>,
    /// The book's own words for labels the table has (`contents` → `Inhalt`), by the key's
    /// name; they replace the table's ([`crate::labels`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

impl BookMetadata {
    /// The words Bindery writes into this book: its language's, with its own replacements.
    pub fn labels(&self) -> Labels<'_> {
        Labels::new(&self.language, &self.labels)
    }
}

/// What the conversion knows besides the manuscript.
#[derive(Debug, Clone, Default)]
pub struct MetadataInputs {
    /// `key=value` pairs the user supplied; they win over the manuscript.
    pub overrides: BTreeMap<String, String>,
    /// The upload's file name, for a title of last resort.
    pub file_name: Option<String>,
    /// SHA-256 of the manuscript bytes (and cover), for a stable identifier.
    pub digest: [u8; 32],
    /// When the book was made, as `dcterms:modified`; `None` means a fixed epoch.
    pub modified: Option<String>,
    /// Used when no language is given; must itself be valid.
    pub default_language: Option<String>,
}

/// Keys users may supply, for error messages and `--help`.
pub const KEYS: &[&str] = &[
    "title",
    "subtitle",
    "author",
    "language",
    "identifier",
    "isbn",
    "publisher",
    "date",
    "description",
    "subject",
    "series",
    "series_number",
    "rights",
    "blurb",
    "trim",
    "paper",
    "bleed",
    "print_isbn",
];

/// Merges and validates. User-supplied values that are invalid are errors (the user can fix
/// them); invalid values found in the manuscript become warnings and are replaced.
pub fn resolve(
    found: &Metadata,
    inputs: &MetadataInputs,
    warnings: &mut Vec<Warning>,
) -> Result<BookMetadata, InputError> {
    let mut m = found.clone();
    for (key, value) in &inputs.overrides {
        apply_override(&mut m, key, value.trim())?;
    }
    let user = |key: &str| inputs.overrides.contains_key(key);

    let title = m
        .title
        .as_deref()
        .map(clean)
        .filter(|t| !t.is_empty())
        .or_else(|| {
            inputs
                .file_name
                .as_deref()
                .map(title_from_file_name)
                .filter(|t| !t.is_empty())
        })
        .unwrap_or_else(|| "Untitled".to_owned());

    let default_language = inputs
        .default_language
        .as_deref()
        .unwrap_or(DEFAULT_LANGUAGE);
    let language = match m
        .language
        .as_deref()
        .map(str::trim)
        .filter(|l| !l.is_empty())
    {
        None => default_language.to_owned(),
        Some(tag) => match language::normalize(tag) {
            Some(tag) => tag,
            None if user("language") => {
                return Err(InputError::Metadata {
                    key: "language".into(),
                    value: tag.into(),
                    problem: "not a BCP 47 language tag (examples: en, en-GB, fr, pt-BR)".into(),
                });
            }
            None => {
                warnings.push(Warning::new(
                    "language_invalid",
                    format!(
                        "The manuscript's language {tag:?} is not a valid language tag; \
                         {default_language:?} was used. Supply language=… to choose."
                    ),
                ));
                default_language.to_owned()
            }
        },
    };

    let mut isbn = None;
    if let Some(id) = m
        .identifier
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        match parse_isbn(id) {
            Some(valid) => isbn = Some(valid),
            None if looks_like_isbn(id) && (user("isbn") || user("identifier")) => {
                return Err(InputError::Metadata {
                    key: "isbn".into(),
                    value: id.into(),
                    problem: "the ISBN's check digit is wrong".into(),
                });
            }
            None if looks_like_isbn(id) => warnings.push(Warning::new(
                "isbn_invalid",
                format!("The ISBN {id:?} has a wrong check digit and was not used."),
            )),
            None => {}
        }
    }
    let identifier = match &isbn {
        Some(isbn) => format!("urn:isbn:{isbn}"),
        None => format!(
            "urn:uuid:{}",
            uuid::Uuid::new_v5(&BINDERY_NAMESPACE, &inputs.digest)
        ),
    };

    let date = match m.date.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
        None => None,
        Some(d) => match normalize_date(d) {
            Some(d) => Some(d),
            None if user("date") => {
                return Err(InputError::Metadata {
                    key: "date".into(),
                    value: d.into(),
                    problem: "use YYYY, YYYY-MM or YYYY-MM-DD".into(),
                });
            }
            None => {
                warnings.push(Warning::new(
                    "date_invalid",
                    format!("The date {d:?} is not a date Bindery understands and was left out."),
                ));
                None
            }
        },
    };

    let trim = chosen(m.trim.as_deref(), "trim", user("trim"), warnings)?;
    let paper = chosen(m.paper.as_deref(), "paper", user("paper"), warnings)?;
    let bleed = chosen::<Yes>(m.bleed.as_deref(), "bleed", user("bleed"), warnings)?.0;
    let print_isbn = match m
        .print_isbn
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        None => None,
        Some(id) => match parse_isbn(id) {
            Some(valid) => Some(valid),
            None if user("print_isbn") => {
                return Err(InputError::Metadata {
                    key: "print_isbn".into(),
                    value: id.into(),
                    problem: "not an ISBN, or its check digit is wrong".into(),
                });
            }
            None => {
                warnings.push(Warning::new(
                    "isbn_invalid",
                    format!(
                        "The print edition's ISBN {id:?} is not a valid ISBN and was not used."
                    ),
                ));
                None
            }
        },
    };

    let labels = resolve_labels(&m.labels, inputs, warnings)?;
    if labels::table_for(&language).is_none() {
        warnings.push(Warning::new(
            "labels_not_translated",
            format!(
                "Bindery has no translation of its own words (Contents, Notes, Cover, the \
                 reader's buttons) for the book's language {language:?}, so they are in \
                 English. Supply labels.contents=… and the other labels to name them."
            ),
        ));
    }

    let text = |v: &Option<String>| v.as_deref().map(clean).filter(|s| !s.is_empty());
    Ok(BookMetadata {
        labels,
        blurb: m
            .blurb
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned),
        trim,
        paper,
        bleed,
        print_isbn,
        title,
        subtitle: text(&m.subtitle),
        authors: m
            .authors
            .iter()
            .map(|a| clean(a))
            .filter(|a| !a.is_empty())
            .collect(),
        language,
        identifier,
        isbn,
        publisher: text(&m.publisher),
        date,
        description: text(&m.description),
        subjects: m
            .subjects
            .iter()
            .map(|s| clean(s))
            .filter(|s| !s.is_empty())
            .collect(),
        series: text(&m.series),
        series_number: text(&m.series_number),
        rights: text(&m.rights),
        modified: inputs
            .modified
            .clone()
            .unwrap_or_else(|| FIXED_MODIFIED.to_owned()),
    })
}

/// The book's replacements for labels, by the key's own name. A key the table does not have
/// is the user's error when they supplied it, else a warning, and left out.
fn resolve_labels(
    found: &BTreeMap<String, String>,
    inputs: &MetadataInputs,
    warnings: &mut Vec<Warning>,
) -> Result<BTreeMap<String, String>, InputError> {
    let mut labels = BTreeMap::new();
    for (name, value) in found {
        let value = clean(value);
        match Key::parse(name) {
            Some(key) if !value.is_empty() => {
                labels.insert(key.name().to_owned(), value);
            }
            Some(_) => {}
            None => {
                let key = format!("labels.{name}");
                let user = inputs
                    .overrides
                    .keys()
                    .any(|k| k.trim().to_ascii_lowercase().replace('-', "_") == key);
                let known = || {
                    Key::ALL
                        .iter()
                        .map(|k| k.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                if user {
                    return Err(InputError::Metadata {
                        key,
                        value,
                        problem: format!("not a label Bindery writes; the labels are {}", known()),
                    });
                }
                warnings.push(Warning::new(
                    "label_unknown",
                    format!(
                        "The manuscript's {key} is not a label Bindery writes and was not used; \
                         the labels are {}.",
                        known()
                    ),
                ));
            }
        }
    }
    Ok(labels)
}

/// A value `key` must parse as: the user's bad value is an error they can fix; the
/// manuscript's is a warning, and the default stands.
fn chosen<T>(
    found: Option<&str>,
    key: &str,
    user: bool,
    warnings: &mut Vec<Warning>,
) -> Result<T, InputError>
where
    T: std::str::FromStr + Default,
    T::Err: std::fmt::Display,
{
    let Some(value) = found.map(str::trim).filter(|s| !s.is_empty()) else {
        return Ok(T::default());
    };
    match value.parse() {
        Ok(parsed) => Ok(parsed),
        Err(e) if user => Err(InputError::Metadata {
            key: key.into(),
            value: value.into(),
            problem: e.to_string(),
        }),
        Err(e) => {
            warnings.push(Warning::new(
                &format!("{key}_invalid"),
                format!("The manuscript's {key} was not used: {e}."),
            ));
            Ok(T::default())
        }
    }
}

/// A yes or no, as people write one.
#[derive(Debug, Default)]
struct Yes(bool);

impl std::str::FromStr for Yes {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "yes" | "true" | "on" | "1" => Ok(Yes(true)),
            "no" | "false" | "off" | "0" => Ok(Yes(false)),
            _ => Err("write yes or no".into()),
        }
    }
}

/// Where each value of the book's metadata came from, for the report: the author then sees
/// what the manuscript said, and whether the upload's fields replaced it. Only values the
/// book has are listed; the title and the language always are.
pub fn sources(
    found: &Metadata,
    inputs: &MetadataInputs,
    book: &BookMetadata,
) -> Vec<MetadataSource> {
    let given = |keys: &[&str]| {
        inputs.overrides.iter().any(|(key, value)| {
            keys.contains(&key.to_ascii_lowercase().replace('-', "_").as_str())
                && !value.trim().is_empty()
        })
    };
    let said = |value: &Option<String>| value.as_deref().map(clean).filter(|v| !v.is_empty());
    let listed = |values: &[String]| {
        let joined = values
            .iter()
            .map(|v| clean(v))
            .filter(|v| !v.is_empty())
            .collect::<Vec<_>>()
            .join("; ");
        (!joined.is_empty()).then_some(joined)
    };
    let title_otherwise = match inputs.file_name.as_deref().map(title_from_file_name) {
        Some(t) if t == book.title => "file_name",
        _ => "default",
    };
    let fields: [Field; 11] = [
        (
            "title",
            Some(book.title.clone()),
            &["title"],
            said(&found.title),
            title_otherwise,
        ),
        (
            "subtitle",
            book.subtitle.clone(),
            &["subtitle"],
            said(&found.subtitle),
            "manuscript",
        ),
        (
            "authors",
            listed(&book.authors),
            &["author", "authors", "creator"],
            listed(&found.authors),
            "manuscript",
        ),
        (
            "language",
            Some(book.language.clone()),
            &["language", "lang"],
            said(&found.language),
            "default",
        ),
        (
            "isbn",
            book.isbn.clone(),
            &["isbn", "identifier"],
            said(&found.identifier),
            "manuscript",
        ),
        (
            "publisher",
            book.publisher.clone(),
            &["publisher"],
            said(&found.publisher),
            "manuscript",
        ),
        (
            "date",
            book.date.clone(),
            &["date"],
            said(&found.date),
            "manuscript",
        ),
        (
            "series",
            book.series.clone(),
            &["series"],
            said(&found.series),
            "manuscript",
        ),
        (
            "series_number",
            book.series_number.clone(),
            &["series_number", "series_index"],
            said(&found.series_number),
            "manuscript",
        ),
        (
            "subjects",
            listed(&book.subjects),
            &["subject", "subjects"],
            listed(&found.subjects),
            "manuscript",
        ),
        (
            "rights",
            book.rights.clone(),
            &["rights"],
            said(&found.rights),
            "manuscript",
        ),
    ];
    fields
        .into_iter()
        .filter_map(|(field, value, keys, manuscript, otherwise)| {
            let value = value?;
            // The manuscript's value, made valid (a language tag normalised, a date in
            // W3CDTF), is the book's; one that was not valid was replaced.
            let kept = match (field, &manuscript) {
                ("language", Some(tag)) => language::normalize(tag).as_deref() == Some(&value),
                (_, Some(_)) => true,
                (_, None) => false,
            };
            let source = if given(keys) {
                "upload"
            } else if kept {
                "manuscript"
            } else {
                otherwise
            };
            Some(MetadataSource {
                field: field.to_owned(),
                source: source.to_owned(),
                manuscript: manuscript.filter(|m| source != "manuscript" && *m != value),
                value,
            })
        })
        .collect()
}

/// A field as [`sources`] weighs it: its name, the book's value, the upload's keys for it, what
/// the manuscript said, and where the value came from when neither gave it.
type Field<'a> = (
    &'a str,
    Option<String>,
    &'a [&'a str],
    Option<String>,
    &'a str,
);

/// `dcterms:modified` when the caller has no meaningful time: reproducible builds' choice of
/// a fixed instant over the clock.
pub const FIXED_MODIFIED: &str = "2000-01-01T00:00:00Z";

/// Namespace for identifiers derived from a manuscript's digest (UUID v5).
const BINDERY_NAMESPACE: uuid::Uuid = uuid::Uuid::from_bytes([
    0x6b, 0x1d, 0x3f, 0x0e, 0x8a, 0x52, 0x4c, 0x1b, 0x9d, 0x2e, 0x51, 0x7a, 0x0c, 0x44, 0xb3, 0x19,
]);

fn apply_override(m: &mut Metadata, key: &str, value: &str) -> Result<(), InputError> {
    let some = || Some(value.to_owned());
    let list = || {
        value
            .split(';')
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
    };
    let normal = key.trim().to_ascii_lowercase().replace('-', "_");
    if let Some(label) = normal.strip_prefix("labels.") {
        m.labels.insert(label.to_owned(), value.to_owned());
        return Ok(());
    }
    match normal.as_str() {
        "title" => m.title = some(),
        "subtitle" => m.subtitle = some(),
        "author" | "authors" | "creator" => m.authors = list(),
        "language" | "lang" => m.language = some(),
        "identifier" | "isbn" => m.identifier = some(),
        "publisher" => m.publisher = some(),
        "date" => m.date = some(),
        "description" => m.description = some(),
        "subject" | "subjects" => m.subjects = list(),
        "series" => m.series = some(),
        "series_number" | "series_index" => m.series_number = some(),
        "rights" => m.rights = some(),
        "blurb" | "back_cover" => m.blurb = some(),
        "trim" | "trim_size" => m.trim = some(),
        "paper" => m.paper = some(),
        "bleed" => m.bleed = some(),
        "print_isbn" | "paperback_isbn" => m.print_isbn = some(),
        _ => {
            return Err(InputError::Metadata {
                key: key.into(),
                value: value.into(),
                problem: format!(
                    "unknown key; known keys are {} and labels.KEY",
                    KEYS.join(", ")
                ),
            });
        }
    }
    Ok(())
}

/// Collapses whitespace (titles from Word often carry tabs and runs of spaces).
fn clean(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `my_first-novel.final.docx` → `My first novel final`.
pub fn title_from_file_name(name: &str) -> String {
    let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
    let stem = match base.rfind('.') {
        Some(i) if i > 0 => &base[..i],
        _ => base,
    };
    let words = stem.replace(['_', '-', '.'], " ");
    let cleaned = clean(&words);
    let mut chars = cleaned.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn looks_like_isbn(s: &str) -> bool {
    let s = s
        .trim_start_matches("urn:isbn:")
        .trim_start_matches("ISBN")
        .trim_start_matches(':');
    let digits = s
        .chars()
        .filter(|c| c.is_ascii_digit() || *c == 'X' || *c == 'x')
        .count();
    (digits == 10 || digits == 13)
        && s.chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '-' | ' ' | 'X' | 'x'))
}

/// The ISBN in canonical form (digits only, ISBN-10 kept as given), if the check digit holds.
pub fn parse_isbn(s: &str) -> Option<String> {
    if !looks_like_isbn(s) {
        return None;
    }
    let s = s
        .trim_start_matches("urn:isbn:")
        .trim_start_matches("ISBN")
        .trim_start_matches(':');
    let digits: Vec<char> = s.chars().filter(|c| !matches!(c, '-' | ' ')).collect();
    let value = |c: char| c.to_digit(10);
    let valid = match digits.len() {
        13 => {
            let sum: Option<u32> = digits
                .iter()
                .enumerate()
                .map(|(i, &c)| value(c).map(|d| if i % 2 == 0 { d } else { d * 3 }))
                .sum();
            sum.is_some_and(|s| s % 10 == 0)
        }
        10 => {
            let sum: Option<u32> = digits
                .iter()
                .enumerate()
                .map(|(i, &c)| {
                    let d = if i == 9 && (c == 'X' || c == 'x') {
                        Some(10)
                    } else {
                        value(c)
                    };
                    d.map(|d| d * (10 - i as u32))
                })
                .sum();
            sum.is_some_and(|s| s % 11 == 0)
        }
        _ => false,
    };
    valid.then(|| digits.iter().collect::<String>().to_uppercase())
}

/// W3CDTF, which EPUBCheck expects of `dc:date`: `YYYY`, `YYYY-MM`, `YYYY-MM-DD`, or a full
/// timestamp. Also accepts `YYYY/MM/DD` and a leading timestamp's date part.
pub fn normalize_date(s: &str) -> Option<String> {
    // Dates as people write them on a title page: "July 17, 2006", "17 July 2006", "May 2020".
    let human = s.trim().replace(',', "");
    for format in ["%B %d %Y", "%d %B %Y", "%b %d %Y", "%d %b %Y"] {
        if let Ok(date) = chrono::NaiveDate::parse_from_str(&human, format)
            && date.year() >= 1000
        {
            return Some(date.format("%Y-%m-%d").to_string());
        }
    }
    if let Ok(date) = chrono::NaiveDate::parse_from_str(&format!("1 {human}"), "%d %B %Y") {
        return Some(date.format("%Y-%m").to_string());
    }
    let s = s.trim().replace('/', "-");
    let date_part = s.split(['T', ' ']).next().unwrap_or(&s);
    let parts: Vec<&str> = date_part.split('-').collect();
    let num = |p: &str, len: usize, max: u32| {
        (p.len() == len && p.chars().all(|c| c.is_ascii_digit()))
            .then(|| p.parse::<u32>().ok())
            .flatten()
            .filter(|&n| n >= 1 && n <= max)
    };
    match parts.as_slice() {
        [y] => num(y, 4, 9999).map(|_| y.to_string()),
        [y, m] => {
            (num(y, 4, 9999).is_some() && num(m, 2, 12).is_some()).then(|| format!("{y}-{m}"))
        }
        [y, m, d] => {
            chrono::NaiveDate::from_ymd_opt(num(y, 4, 9999)? as i32, num(m, 2, 12)?, num(d, 2, 31)?)
                .map(|d| d.format("%Y-%m-%d").to_string())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve_with(
        found: Metadata,
        overrides: &[(&str, &str)],
    ) -> Result<BookMetadata, InputError> {
        let overrides = overrides
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        resolve(
            &found,
            &MetadataInputs {
                overrides,
                file_name: Some("my_novel-draft.docx".into()),
                ..Default::default()
            },
            &mut Vec::new(),
        )
    }

    #[test]
    fn the_print_edition_is_chosen_by_metadata_and_a_bad_choice_is_named() {
        let m = resolve_with(
            Metadata::default(),
            &[
                ("trim", "A5"),
                ("paper", "Cream"),
                ("bleed", "yes"),
                ("print_isbn", "978-0-306-40615-7"),
                ("blurb", "  A tale of chickens.  "),
            ],
        )
        .expect("valid");
        assert_eq!((m.trim, m.paper, m.bleed), (Trim::A5, Paper::Cream, true));
        assert_eq!(m.print_isbn.as_deref(), Some("9780306406157"));
        assert_eq!(m.blurb.as_deref(), Some("A tale of chickens."));
        let defaults = resolve_with(Metadata::default(), &[]).expect("valid");
        assert_eq!(
            (defaults.trim, defaults.paper, defaults.bleed),
            (Trim::In6x9, Paper::White, false)
        );

        // The upload's bad value is an error that says what would do.
        for (key, value, hint) in [
            ("trim", "7x7", "6x9"),
            ("paper", "glossy", "cream"),
            ("bleed", "maybe", "yes or no"),
            ("print_isbn", "978-0-306-40615-8", "check digit"),
        ] {
            match resolve_with(Metadata::default(), &[(key, value)]) {
                Err(InputError::Metadata {
                    key: k, problem, ..
                }) => {
                    assert_eq!(k, key);
                    assert!(problem.contains(hint), "{key}: {problem}");
                }
                other => panic!("{key}={value}: {other:?}"),
            }
        }
        // The manuscript's is a warning, and the default stands.
        let mut warnings = Vec::new();
        let m = resolve(
            &Metadata {
                trim: Some("7x7".into()),
                ..Metadata::default()
            },
            &MetadataInputs::default(),
            &mut warnings,
        )
        .expect("valid");
        assert_eq!(m.trim, Trim::In6x9);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert_eq!(warnings[0].code, "trim_invalid");
    }

    #[test]
    fn gaps_are_filled_with_valid_values() {
        let m = resolve_with(Metadata::default(), &[]).unwrap();
        assert_eq!(m.title, "My novel draft");
        assert_eq!(m.language, "en");
        assert!(m.identifier.starts_with("urn:uuid:"));
        assert_eq!(m.modified, FIXED_MODIFIED);
    }

    #[test]
    fn posix_locales_never_become_the_language() {
        for bad in ["C", "POSIX", "c.UTF-8", "english", "e"] {
            assert_eq!(language::normalize(bad), None, "{bad}");
        }
        assert_eq!(language::normalize("en_GB.UTF-8").as_deref(), Some("en-GB"));
        let found = Metadata {
            language: Some("C".into()),
            ..Default::default()
        };
        assert_eq!(resolve_with(found, &[]).unwrap().language, "en");
        assert!(resolve_with(Metadata::default(), &[("language", "C")]).is_err());
    }

    #[test]
    fn isbns_are_checked() {
        assert_eq!(
            parse_isbn("978-0-306-40615-7").as_deref(),
            Some("9780306406157")
        );
        assert_eq!(parse_isbn("0-306-40615-2").as_deref(), Some("0306406152"));
        assert_eq!(parse_isbn("978-0-306-40615-8"), None);
        let m = resolve_with(Metadata::default(), &[("isbn", "9780306406157")]).unwrap();
        assert_eq!(m.identifier, "urn:isbn:9780306406157");
        assert!(resolve_with(Metadata::default(), &[("isbn", "9780306406158")]).is_err());
    }

    #[test]
    fn dates_follow_w3cdtf() {
        assert_eq!(normalize_date("1906").as_deref(), Some("1906"));
        assert_eq!(normalize_date("2024/05/01").as_deref(), Some("2024-05-01"));
        assert_eq!(normalize_date("2024-02-30"), None);
        assert_eq!(
            normalize_date("2024-05-01T10:00:00Z").as_deref(),
            Some("2024-05-01")
        );
        assert_eq!(normalize_date("last May"), None);
        assert_eq!(
            normalize_date("July 17, 2006").as_deref(),
            Some("2006-07-17")
        );
        assert_eq!(
            normalize_date("17 July 2006").as_deref(),
            Some("2006-07-17")
        );
        assert_eq!(normalize_date("May 2020").as_deref(), Some("2020-05"));
    }

    #[test]
    fn labels_are_replaced_by_the_books_own_words() {
        let found = Metadata {
            language: Some("de".into()),
            labels: BTreeMap::from([
                ("notes".to_owned(), "  Endnoten ".to_owned()),
                ("contents".to_owned(), "Inhalt".to_owned()),
            ]),
            ..Metadata::default()
        };
        // The upload's value wins over the manuscript's, whatever its spelling of the key.
        let m = resolve_with(found, &[("labels.Contents", "Übersicht")]).expect("valid");
        assert_eq!(m.labels().get(Key::Contents), "Übersicht");
        assert_eq!(m.labels().get(Key::Notes), "Endnoten");
        assert_eq!(m.labels().get(Key::Cover), "Umschlag");
    }

    #[test]
    fn an_unknown_label_is_the_uploads_error_and_the_manuscripts_warning() {
        match resolve_with(
            Metadata::default(),
            &[("labels.Table-Of-Contents", "Inhalt")],
        ) {
            Err(InputError::Metadata { key, problem, .. }) => {
                assert_eq!(key, "labels.table_of_contents");
                assert!(problem.contains("contents"), "{problem}");
            }
            other => panic!("{other:?}"),
        }
        let mut warnings = Vec::new();
        let found = Metadata {
            labels: BTreeMap::from([("contnets".to_owned(), "Inhalt".to_owned())]),
            ..Metadata::default()
        };
        let m = resolve(&found, &MetadataInputs::default(), &mut warnings).expect("valid");
        assert!(m.labels.is_empty());
        let codes: Vec<&str> = warnings.iter().map(|w| w.code.as_str()).collect();
        assert_eq!(codes, ["label_unknown"]);
        assert!(warnings[0].message.contains("labels.contnets"));
    }

    #[test]
    fn a_language_without_labels_is_english_and_says_so() {
        let mut warnings = Vec::new();
        let found = Metadata {
            language: Some("haw".into()),
            ..Metadata::default()
        };
        let m = resolve(&found, &MetadataInputs::default(), &mut warnings).expect("valid");
        assert_eq!(m.labels().get(Key::Contents), "Contents");
        let codes: Vec<&str> = warnings.iter().map(|w| w.code.as_str()).collect();
        assert_eq!(codes, ["labels_not_translated"]);
        assert!(
            warnings[0].message.contains("\"haw\""),
            "{}",
            warnings[0].message
        );
        // A language the table has, in any region, says nothing.
        for tag in ["en", "fr-CA", "zh-TW", "ar-EG"] {
            let mut warnings = Vec::new();
            let found = Metadata {
                language: Some(tag.into()),
                ..Metadata::default()
            };
            resolve(&found, &MetadataInputs::default(), &mut warnings).expect("valid");
            assert!(warnings.is_empty(), "{tag}: {warnings:?}");
        }
    }

    #[test]
    fn unknown_keys_are_refused_by_name() {
        let err = resolve_with(Metadata::default(), &[("titel", "x")]).unwrap_err();
        assert!(err.to_string().contains("titel"));
    }

    #[test]
    fn the_report_says_where_each_value_came_from() {
        let found = Metadata {
            title: Some("Love Among the Chickens".into()),
            authors: vec!["P. G. Wodehouse".into()],
            language: Some("en-GB".into()),
            date: Some("1906".into()),
            ..Default::default()
        };
        let inputs = MetadataInputs {
            overrides: [("author".to_owned(), "P. G. W.".to_owned())].into(),
            file_name: Some("chickens.md".into()),
            ..Default::default()
        };
        let book = resolve(&found, &inputs, &mut Vec::new()).unwrap();
        let seen: Vec<(String, String, String, Option<String>)> = sources(&found, &inputs, &book)
            .into_iter()
            .map(|s| (s.field, s.value, s.source, s.manuscript))
            .collect();
        let row = |f: &str, v: &str, s: &str, m: Option<&str>| {
            (
                f.to_owned(),
                v.to_owned(),
                s.to_owned(),
                m.map(str::to_owned),
            )
        };
        assert_eq!(
            seen,
            [
                row("title", "Love Among the Chickens", "manuscript", None),
                row("authors", "P. G. W.", "upload", Some("P. G. Wodehouse")),
                row("language", "en-GB", "manuscript", None),
                row("date", "1906", "manuscript", None),
            ]
        );

        // Nothing said: a title from the file name, the default language; a manuscript's
        // language that is no language tag is replaced, and the report says what it was.
        let found = Metadata {
            language: Some("C".into()),
            ..Default::default()
        };
        let inputs = MetadataInputs {
            file_name: Some("my_novel.txt".into()),
            ..Default::default()
        };
        let book = resolve(&found, &inputs, &mut Vec::new()).unwrap();
        let seen: Vec<(String, String, String, Option<String>)> = sources(&found, &inputs, &book)
            .into_iter()
            .map(|s| (s.field, s.value, s.source, s.manuscript))
            .collect();
        assert_eq!(
            seen,
            [
                row("title", "My novel", "file_name", None),
                row("language", "en", "default", Some("C")),
            ]
        );
    }
}
