//! The book's final metadata: what the manuscript said, overridden by what the user supplied,
//! with every gap filled and every value made valid for EPUB.
//!
//! Nothing here may produce a book EPUBCheck rejects: the title is never empty, the language
//! is always a valid BCP 47 tag (never pandoc's "C"), dates follow W3CDTF.

pub mod bounds;

use std::collections::BTreeMap;

use crate::labels::{self, Labels};
use crate::language::{self, DEFAULT_LANGUAGE};
use crate::report::MetadataSource;
use chrono::Datelike;
use serde::{Deserialize, Serialize};

use crate::document::Metadata;
use crate::document::keys::{self, Field, Named};
use crate::manuscript::InputError;
use crate::paperback::{Edition, Editions, LargePrintSize, Paper, Price, Printer, Trim};
use crate::report::Warning;
use crate::style::StyleName;
use bounds::Bound;

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
    /// Which revision of its book this is, from the second on (the EPUB's `schema:version`);
    /// `None` for a book's first, and for `bindery convert` without `--revision`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<u32>,
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
    /// The price the print cover's barcode carries, as its five-digit add-on.
    #[serde(default, skip_serializing_if = "Price::is_none")]
    pub price: Price,
    /// The printer whose rules the print edition is checked against.
    #[serde(default, skip_serializing_if = "Printer::is_none")]
    pub printer: Printer,
    /// The print editions made (the paperback alone, by default).
    #[serde(default)]
    pub editions: Editions,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardcover_isbn: Option<String>,
    /// Else the paperback's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardcover_trim: Option<Trim>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub large_print_isbn: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub large_print_trim: Option<Trim>,
    #[serde(default)]
    pub large_print_size: LargePrintSize,
    /// The edition the ebooks' page list follows; else the first listed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_edition: Option<Edition>,
    /// Why no print edition is made: the manuscript asked for a trim, paper or bleed Bindery
    /// does not know. Printing at the default instead would make a book the author did not
    /// ask for; the ebooks are made all the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub print_settings_refused: Option<String>,
    /// The book's own words for labels the table has (`contents` → `Inhalt`), by the key's
    /// name; they replace the table's ([`crate::labels`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// The book's style (`crate::style`).
    #[serde(default = "default_style")]
    pub style: StyleName,
}

fn default_style() -> StyleName {
    StyleName::parse(crate::style::DEFAULT)
        .unwrap_or_else(|_| unreachable!("the default style's name is a name"))
}

impl BookMetadata {
    /// The print edition the ebooks' page list follows: the one named, else the first made
    /// (the paperback for a book that lists none).
    pub fn reference_edition(&self) -> Edition {
        self.reference_edition
            .or_else(|| self.editions.0.first().copied())
            .unwrap_or_default()
    }

    /// The print editions in the order they are made: the reference edition (whose pages the
    /// ebooks mark) first, then the others as the book lists them.
    pub fn in_making_order(&self) -> Vec<Edition> {
        let reference = self.reference_edition();
        let mut editions: Vec<Edition> = self.editions.0.clone();
        editions.sort_by_key(|e| *e != reference);
        editions
    }

    /// `edition`'s trim: its own, else the paperback's.
    pub fn trim_of(&self, edition: Edition) -> Trim {
        match edition {
            Edition::Paperback => self.trim,
            Edition::Hardcover => self.hardcover_trim.unwrap_or(self.trim),
            Edition::LargePrint => self.large_print_trim.unwrap_or(self.trim),
        }
    }

    /// `edition`'s ISBN: its own; for the paperback, the ebook's where it has none of its own,
    /// as Bindery printed it before editions.
    pub fn isbn_of(&self, edition: Edition) -> Option<&String> {
        match edition {
            Edition::Paperback => self.print_isbn.as_ref().or(self.isbn.as_ref()),
            Edition::Hardcover => self.hardcover_isbn.as_ref(),
            Edition::LargePrint => self.large_print_isbn.as_ref(),
        }
    }

    /// Every ISBN the book has, with the edition it belongs to, as a copyright page lists
    /// them: the print editions made, in order, then the ebook.
    pub fn isbns(&self) -> Vec<(Option<Edition>, &String)> {
        let mut isbns: Vec<(Option<Edition>, &String)> = self
            .editions
            .0
            .iter()
            .filter_map(|e| {
                let own = match e {
                    Edition::Paperback => self.print_isbn.as_ref(),
                    _ => self.isbn_of(*e),
                };
                own.map(|isbn| (Some(*e), isbn))
            })
            .collect();
        if let Some(isbn) = &self.isbn {
            isbns.push((None, isbn));
        }
        isbns
    }

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
    /// The identifier the book keeps across its revisions, used when no ISBN is given;
    /// `None` derives one from `digest`.
    pub identifier: Option<String>,
    /// Which revision of its book this is (see [`BookMetadata::revision`]).
    pub revision: Option<u32>,
    /// Used when no language is given; must itself be valid.
    pub default_language: Option<String>,
    /// Styles the book may name besides the built-in ones (a house style).
    pub styles: Vec<StyleName>,
}

impl MetadataInputs {
    fn knows_style(&self, name: &StyleName) -> bool {
        crate::style::builtin::get(name.as_str()).is_some() || self.styles.contains(name)
    }

    fn style_names(&self) -> Vec<String> {
        crate::style::builtin::names()
            .chain(self.styles.iter().cloned())
            .map(String::from)
            .collect()
    }
}

/// Merges and validates. User-supplied values that are invalid are errors (the user can fix
/// them); invalid values found in the manuscript become warnings and are replaced.
pub fn resolve(
    found: &Metadata,
    inputs: &MetadataInputs,
    warnings: &mut Vec<Warning>,
) -> Result<BookMetadata, InputError> {
    let given = given(&inputs.overrides)?;
    let mut m = found.clone();
    fit_found(&mut m, warnings);
    for (named, value) in &given {
        apply(&mut m, *named, value);
    }
    let user = |field: Field| given.contains_key(&Named::Field(field));

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
            None if user(Field::Language) => {
                return Err(invalid(
                    "language",
                    tag,
                    "not a BCP 47 language tag (examples: en, en-GB, fr, pt-BR)",
                ));
            }
            None => {
                warnings.push(Warning::new(
                    "language_invalid",
                    format!(
                        "The manuscript's language {:?} is not a valid language tag; \
                         {default_language:?} was used. Supply language=… to choose.",
                        bounds::excerpt(tag)
                    ),
                ));
                default_language.to_owned()
            }
        },
    };

    let mut isbn = None;
    let mut urn = None;
    if let Some(id) = m
        .identifier
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        match parse_isbn(id) {
            Some(valid) => isbn = Some(valid),
            None if looks_like_isbn(id) && user(Field::Identifier) => {
                return Err(invalid("isbn", id, isbn_problem(id)));
            }
            None if looks_like_isbn(id) => warnings.push(Warning::new(
                "isbn_invalid",
                format!(
                    "The ISBN {:?} has a wrong check digit and was not used.",
                    bounds::excerpt(id)
                ),
            )),
            None if is_urn(id) => urn = Some(id.to_owned()),
            None if user(Field::Identifier) => {
                return Err(invalid(
                    "identifier",
                    id,
                    "neither an ISBN nor a URN (examples: 978-0-306-40615-7, \
                     urn:uuid:0b2e6e36-7a4f-4a6e-9d8f-1c2b3a4d5e6f)",
                ));
            }
            None => warnings.push(Warning::new(
                "identifier_invalid",
                format!(
                    "The manuscript's identifier {:?} is neither an ISBN nor a URN and was not \
                     used; the book's own was. Supply identifier=… to choose.",
                    bounds::excerpt(id)
                ),
            )),
        }
    }
    // An ISBN, then the author's URN, then the one the book kept across its revisions, then
    // one derived from the manuscript.
    let identifier = match (&isbn, urn, &inputs.identifier) {
        (Some(isbn), _, _) => format!("urn:isbn:{isbn}"),
        (None, Some(urn), _) => urn,
        (None, None, Some(kept)) => kept.clone(),
        (None, None, None) => format!(
            "urn:uuid:{}",
            uuid::Uuid::new_v5(&BINDERY_NAMESPACE, &inputs.digest)
        ),
    };

    let date = match m.date.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
        None => None,
        Some(d) => match normalize_date(d) {
            Some(d) => Some(d),
            None if user(Field::Date) => {
                return Err(invalid("date", d, "use YYYY, YYYY-MM or YYYY-MM-DD"));
            }
            None => {
                warnings.push(Warning::new(
                    "date_invalid",
                    format!(
                        "The date {:?} is not a date Bindery understands and was left out.",
                        bounds::excerpt(d)
                    ),
                ));
                None
            }
        },
    };

    let mut print_settings_refused = None;
    let mut print = Chosen {
        warnings: &mut *warnings,
        refused: &mut print_settings_refused,
    };
    let trim = print.value(m.trim.as_deref(), Field::Trim, user(Field::Trim))?;
    let paper = print.value(m.paper.as_deref(), Field::Paper, user(Field::Paper))?;
    let bleed = print
        .value::<Yes>(m.bleed.as_deref(), Field::Bleed, user(Field::Bleed))?
        .0;
    let price: Price = print.value(m.price.as_deref(), Field::Price, user(Field::Price))?;
    let printer: Printer =
        print.value(m.printer.as_deref(), Field::Printer, user(Field::Printer))?;
    let print_isbn = edition_isbn(
        m.print_isbn.as_deref(),
        Field::PrintIsbn,
        user(Field::PrintIsbn),
        warnings,
    )?;
    let hardcover_isbn = edition_isbn(
        m.hardcover_isbn.as_deref(),
        Field::HardcoverIsbn,
        user(Field::HardcoverIsbn),
        warnings,
    )?;
    let large_print_isbn = edition_isbn(
        m.large_print_isbn.as_deref(),
        Field::LargePrintIsbn,
        user(Field::LargePrintIsbn),
        warnings,
    )?;
    let mut print = Chosen {
        warnings,
        refused: &mut print_settings_refused,
    };
    let editions: Editions = print.value(
        m.editions.as_deref(),
        Field::Editions,
        user(Field::Editions),
    )?;
    let mut optional_trim =
        |found: &Option<String>, field: Field| -> Result<Option<Trim>, InputError> {
            match found.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
                None => Ok(None),
                Some(value) => print.value(Some(value), field, user(field)).map(Some),
            }
        };
    let hardcover_trim = optional_trim(&m.hardcover_trim, Field::HardcoverTrim)?;
    let large_print_trim = optional_trim(&m.large_print_trim, Field::LargePrintTrim)?;
    let large_print_size: LargePrintSize = print.value(
        m.large_print_size.as_deref(),
        Field::LargePrintSize,
        user(Field::LargePrintSize),
    )?;
    let reference_edition = match m
        .reference_edition
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        None => None,
        Some(value) => Some(print.value::<Edition>(
            Some(value),
            Field::ReferenceEdition,
            user(Field::ReferenceEdition),
        )?),
    };
    // A setting for an edition that is not made is a slip to name, not a value to drop.
    let given_for = [
        (Field::HardcoverIsbn, &m.hardcover_isbn, Edition::Hardcover),
        (Field::HardcoverTrim, &m.hardcover_trim, Edition::Hardcover),
        (
            Field::LargePrintIsbn,
            &m.large_print_isbn,
            Edition::LargePrint,
        ),
        (
            Field::LargePrintTrim,
            &m.large_print_trim,
            Edition::LargePrint,
        ),
        (
            Field::LargePrintSize,
            &m.large_print_size,
            Edition::LargePrint,
        ),
        (
            Field::ReferenceEdition,
            &m.reference_edition,
            reference_edition.unwrap_or(Edition::Paperback),
        ),
    ];
    for (field, given, edition) in given_for {
        let Some(given) = given.as_deref().map(str::trim).filter(|s| !s.is_empty()) else {
            continue;
        };
        if !editions.contains(edition) {
            let listed: Vec<&str> = editions
                .0
                .iter()
                .map(|e| e.label())
                .chain([edition.label()])
                .collect();
            return Err(invalid(
                field.name(),
                given,
                format!(
                    "the book is not made in {}, which editions does not list: list it \
                     (editions={}) or leave {} out",
                    edition.label(),
                    listed.join(", "),
                    field.name()
                ),
            ));
        }
    }
    // Each edition has its own ISBN: one given twice would name two books.
    let isbns = [
        ("isbn", isbn.as_ref()),
        ("print_isbn", print_isbn.as_ref()),
        ("hardcover_isbn", hardcover_isbn.as_ref()),
        ("large_print_isbn", large_print_isbn.as_ref()),
    ];
    for (k, (key, value)) in isbns.iter().enumerate() {
        let Some(value) = value else { continue };
        // The paperback prints the ebook's ISBN when it has none of its own, as before.
        if let Some((other, _)) = isbns[k + 1..]
            .iter()
            .find(|(other, v)| *v == Some(value) && !(*key == "isbn" && *other == "print_isbn"))
        {
            return Err(invalid(
                other,
                value,
                format!("it is also the {key}: each edition has an ISBN of its own"),
            ));
        }
    }

    let style = match m.style.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
        None => default_style(),
        Some(value) => match StyleName::parse(value)
            .ok()
            .filter(|name| inputs.knows_style(name))
        {
            Some(name) => name,
            None if user(Field::Style) => {
                return Err(invalid(
                    "style",
                    value,
                    format!(
                        "not a style here; the styles are {}",
                        inputs.style_names().join(", ")
                    ),
                ));
            }
            None => {
                warnings.push(Warning::new(
                    "style_unknown",
                    format!(
                        "The manuscript asks for the style {:?}, which is not one here ({}); \
                         the default style was used. Supply style=… to choose.",
                        bounds::excerpt(value),
                        inputs.style_names().join(", ")
                    ),
                ));
                default_style()
            }
        },
    };

    let labels = resolve_labels(&m.labels);
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
        style,
        // A first revision says nothing of revisions, as books did before them.
        revision: inputs.revision.filter(|&n| n > 1),
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
        price,
        printer,
        editions,
        hardcover_isbn,
        hardcover_trim,
        large_print_isbn,
        large_print_trim,
        large_print_size,
        reference_edition,
        print_settings_refused,
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

/// The book's replacements for labels, by the key's own name: the manuscript's that are
/// labels Bindery writes ([`fit_found`] named the others), with the person's over them, blank
/// ones left out.
fn resolve_labels(found: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    found
        .iter()
        .map(|(name, value)| (name.clone(), clean(value)))
        .filter(|(_, value)| !value.is_empty())
        .collect()
}

/// A print setting read: the person's value that does not parse is refused; the
/// manuscript's is left out with a warning, and no print edition is made of the book
/// (`print_settings_refused`), since the default is not what the author asked for.
struct Chosen<'a> {
    warnings: &'a mut Vec<Warning>,
    refused: &'a mut Option<String>,
}

impl Chosen<'_> {
    fn value<T>(&mut self, found: Option<&str>, field: Field, user: bool) -> Result<T, InputError>
    where
        T: std::str::FromStr + Default,
        T::Err: std::fmt::Display,
    {
        let Some(value) = found.map(str::trim).filter(|s| !s.is_empty()) else {
            return Ok(T::default());
        };
        let key = field.name();
        match value.parse() {
            Ok(parsed) => Ok(parsed),
            Err(e) if user => Err(invalid(key, value, e.to_string())),
            Err(e) => {
                let how = format!(
                    "correct {key} in the manuscript's front matter, or give {key} with the upload"
                );
                self.warnings.push(Warning::new(
                    &format!("{key}_invalid"),
                    format!(
                        "The manuscript's {key} was not used: {e}. No print edition is made \
                         until it is corrected: {how}."
                    ),
                ));
                self.refused.get_or_insert(format!(
                    "the manuscript's {key} is not one Bindery prints ({e}); {how}, and \
                     upload it again"
                ));
                Ok(T::default())
            }
        }
    }
}

/// An edition's ISBN under `field`: checked, in its 13 digits; a wrong one is refused when the
/// person gave it, and left out with a warning when the manuscript did.
fn edition_isbn(
    found: Option<&str>,
    field: Field,
    user: bool,
    warnings: &mut Vec<Warning>,
) -> Result<Option<String>, InputError> {
    let Some(id) = found.map(str::trim).filter(|s| !s.is_empty()) else {
        return Ok(None);
    };
    match parse_isbn(id) {
        Some(valid) => Ok(Some(valid)),
        None if user => Err(invalid(field.name(), id, isbn_problem(id))),
        None => {
            warnings.push(Warning::new(
                "isbn_invalid",
                format!(
                    "The {} {:?} is not a valid ISBN and was not used.",
                    field.name(),
                    bounds::excerpt(id)
                ),
            ));
            Ok(None)
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
    let given = |field: Field| {
        inputs.overrides.iter().any(|(key, value)| {
            Named::parse(key) == Ok(Named::Field(field)) && !value.trim().is_empty()
        })
    };
    // What the manuscript said, as long as it may be shown.
    let said = |value: &Option<String>| {
        value
            .as_deref()
            .map(clean)
            .filter(|v| !v.is_empty())
            .map(|v| bounds::shortened(&v, bounds::MAX_DESCRIPTION_CHARS))
    };
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
    let fields: [Weighed; 12] = [
        (
            "title",
            Some(book.title.clone()),
            Field::Title,
            said(&found.title),
            title_otherwise,
        ),
        (
            "subtitle",
            book.subtitle.clone(),
            Field::Subtitle,
            said(&found.subtitle),
            "manuscript",
        ),
        (
            "authors",
            listed(&book.authors),
            Field::Authors,
            listed(&found.authors),
            "manuscript",
        ),
        (
            "language",
            Some(book.language.clone()),
            Field::Language,
            said(&found.language),
            "default",
        ),
        (
            "isbn",
            book.isbn.clone(),
            Field::Identifier,
            said(&found.identifier),
            "manuscript",
        ),
        (
            "publisher",
            book.publisher.clone(),
            Field::Publisher,
            said(&found.publisher),
            "manuscript",
        ),
        (
            "date",
            book.date.clone(),
            Field::Date,
            said(&found.date),
            "manuscript",
        ),
        (
            "series",
            book.series.clone(),
            Field::Series,
            said(&found.series),
            "manuscript",
        ),
        (
            "series_number",
            book.series_number.clone(),
            Field::SeriesNumber,
            said(&found.series_number),
            "manuscript",
        ),
        (
            "subjects",
            listed(&book.subjects),
            Field::Subjects,
            listed(&found.subjects),
            "manuscript",
        ),
        (
            "rights",
            book.rights.clone(),
            Field::Rights,
            said(&found.rights),
            "manuscript",
        ),
        (
            "style",
            Some(book.style.to_string()),
            Field::Style,
            said(&found.style),
            "default",
        ),
    ];
    fields
        .into_iter()
        .filter_map(|(name, value, field, manuscript, otherwise)| {
            let value = value?;
            // The manuscript's value, made valid (a language tag normalised, a date in
            // W3CDTF), is the book's; one that was not valid was replaced.
            let kept = match (field, &manuscript) {
                (Field::Language, Some(tag)) => language::normalize(tag).as_deref() == Some(&value),
                (Field::Style, Some(name)) => {
                    StyleName::parse(name).is_ok_and(|name| name.as_str() == value)
                }
                (_, Some(_)) => true,
                (_, None) => false,
            };
            let source = if given(field) {
                "upload"
            } else if kept {
                "manuscript"
            } else {
                otherwise
            };
            Some(MetadataSource {
                field: name.to_owned(),
                source: source.to_owned(),
                manuscript: manuscript.filter(|m| source != "manuscript" && *m != value),
                value,
            })
        })
        .collect()
}

/// A field as [`sources`] weighs it: its name in the report, the book's value, the field the
/// upload gives it by, what the manuscript said, and where the value came from when neither
/// gave it.
type Weighed<'a> = (&'a str, Option<String>, Field, Option<String>, &'a str);

/// `dcterms:modified` when the caller has no meaningful time: reproducible builds' choice of
/// a fixed instant over the clock.
pub const FIXED_MODIFIED: &str = "2000-01-01T00:00:00Z";

/// Namespace for identifiers derived from a manuscript's digest (UUID v5).
const BINDERY_NAMESPACE: uuid::Uuid = uuid::Uuid::from_bytes([
    0x6b, 0x1d, 0x3f, 0x0e, 0x8a, 0x52, 0x4c, 0x1b, 0x9d, 0x2e, 0x51, 0x7a, 0x0c, 0x44, 0xb3, 0x19,
]);

/// The person's values by what they name: each key one Bindery reads, given once under any
/// spelling, and within its bound ([`bounds::check`]).
pub fn given(overrides: &BTreeMap<String, String>) -> Result<BTreeMap<Named, String>, InputError> {
    let mut seen = keys::Given::default();
    let mut given = BTreeMap::new();
    for (key, value) in overrides {
        let value = value.trim();
        let named = Named::parse(key).map_err(|unknown| {
            let key = unknown.key.clone();
            invalid(&key, value, unknown)
        })?;
        seen.note(named, key)
            .map_err(|twice| invalid(&named.key(), value, twice))?;
        bounds::check(named, value).map_err(|problem| invalid(&named.key(), value, problem))?;
        given.insert(named, value.to_owned());
    }
    Ok(given)
}

/// The person's `value` for what `named` names, over the manuscript's.
fn apply(m: &mut Metadata, named: Named, value: &str) {
    let some = || Some(value.to_owned());
    let list = || bounds::names(value).map(str::to_owned).collect::<Vec<_>>();
    let field = match named {
        Named::Label(key) => {
            m.labels.insert(key.name().to_owned(), value.to_owned());
            return;
        }
        Named::Field(field) => field,
    };
    match field {
        Field::Title => m.title = some(),
        Field::Subtitle => m.subtitle = some(),
        Field::Authors => m.authors = list(),
        Field::Language => m.language = some(),
        Field::Identifier => m.identifier = some(),
        Field::Publisher => m.publisher = some(),
        Field::Date => m.date = some(),
        Field::Description => m.description = some(),
        Field::Subjects => m.subjects = list(),
        Field::Series => m.series = some(),
        Field::SeriesNumber => m.series_number = some(),
        Field::Rights => m.rights = some(),
        Field::Blurb => m.blurb = some(),
        Field::Trim => m.trim = some(),
        Field::Paper => m.paper = some(),
        Field::Bleed => m.bleed = some(),
        Field::PrintIsbn => m.print_isbn = some(),
        Field::Price => m.price = some(),
        Field::Printer => m.printer = some(),
        Field::Editions => m.editions = some(),
        Field::HardcoverIsbn => m.hardcover_isbn = some(),
        Field::HardcoverTrim => m.hardcover_trim = some(),
        Field::LargePrintIsbn => m.large_print_isbn = some(),
        Field::LargePrintTrim => m.large_print_trim = some(),
        Field::LargePrintSize => m.large_print_size = some(),
        Field::ReferenceEdition => m.reference_edition = some(),
        Field::Style => m.style = some(),
    }
}

/// The manuscript's values within their bounds: a text too long is shortened, names past the
/// count left out, a label Bindery does not write or one that breaks the label rule left out,
/// each with a warning. Its labels are then under their keys' own names.
fn fit_found(m: &mut Metadata, warnings: &mut Vec<Warning>) {
    let mut text = |field: Field, value: &mut Option<String>| {
        let Some(found) = value.as_mut() else {
            return;
        };
        let Bound::Text(max) = Bound::of(field) else {
            return;
        };
        let chars = found.trim().chars().count();
        if chars > max {
            *found = bounds::shortened(found, max);
            warnings.push(Warning::new(
                "metadata_too_long",
                format!(
                    "The manuscript's {} is {chars} characters long, more than the {max} it may \
                     have, so it was shortened to “{}”. Supply {}=… to choose it.",
                    field.name(),
                    bounds::excerpt(found),
                    field.name()
                ),
            ));
        }
    };
    text(Field::Title, &mut m.title);
    text(Field::Subtitle, &mut m.subtitle);
    text(Field::Publisher, &mut m.publisher);
    text(Field::Description, &mut m.description);
    text(Field::Series, &mut m.series);
    text(Field::SeriesNumber, &mut m.series_number);
    text(Field::Rights, &mut m.rights);
    text(Field::Blurb, &mut m.blurb);
    let mut names = |field: Field, values: &mut Vec<String>| {
        let count = values.iter().filter(|v| !v.trim().is_empty()).count();
        values.retain(|v| !v.trim().is_empty());
        if count > bounds::MAX_NAMES {
            values.truncate(bounds::MAX_NAMES);
            warnings.push(Warning::new(
                "metadata_too_long",
                format!(
                    "The manuscript lists {count} in its {}, more than the {} a book may list; \
                     the first {} were kept.",
                    field.name(),
                    bounds::MAX_NAMES,
                    bounds::MAX_NAMES
                ),
            ));
        }
        for value in values.iter_mut() {
            if value.trim().chars().count() > bounds::MAX_NAME_CHARS {
                *value = bounds::shortened(value, bounds::MAX_NAME_CHARS);
                warnings.push(Warning::new(
                    "metadata_too_long",
                    format!(
                        "A name in the manuscript's {} is longer than the {} characters a name \
                         may have, so it was shortened to “{}”.",
                        field.name(),
                        bounds::MAX_NAME_CHARS,
                        bounds::excerpt(value)
                    ),
                ));
            }
        }
    };
    names(Field::Authors, &mut m.authors);
    names(Field::Subjects, &mut m.subjects);
    m.labels = std::mem::take(&mut m.labels)
        .into_iter()
        .filter_map(|(name, value)| {
            let key = format!("{}{name}", keys::LABEL_PREFIX);
            let problem = match Named::parse(&key) {
                Ok(named @ Named::Label(label)) => match bounds::check(named, &value) {
                    Ok(()) => return Some((label.name().to_owned(), value)),
                    Err(problem) => ("label_invalid", problem),
                },
                Ok(Named::Field(_)) => unreachable!("a labels. key names a label"),
                Err(unknown) => ("label_unknown", unknown.to_string()),
            };
            warnings.push(Warning::new(
                problem.0,
                format!(
                    "The manuscript's {} was not used: {}.",
                    bounds::excerpt(&key),
                    problem.1
                ),
            ));
            None
        })
        .collect();
}

/// The person's `value` for `key` is not valid, for `problem`; the error shows the value
/// cut to a line, whatever was sent.
fn invalid(key: &str, value: &str, problem: impl ToString) -> InputError {
    InputError::Metadata {
        key: key.to_owned(),
        value: bounds::excerpt(value),
        problem: problem.to_string(),
    }
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

/// A URN as RFC 8141 writes one: `urn:`, a namespace of 2 to 32 letters, digits and hyphens,
/// `:`, and a name of printable characters without spaces; at most 256 characters in all.
fn is_urn(s: &str) -> bool {
    let Some((scheme, rest)) = s.split_once(':') else {
        return false;
    };
    let Some((namespace, name)) = rest.split_once(':') else {
        return false;
    };
    s.len() <= 256
        && scheme.eq_ignore_ascii_case("urn")
        && (2..=32).contains(&namespace.len())
        && namespace
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-')
        && !namespace.starts_with('-')
        && !name.is_empty()
        && name.chars().all(|c| c.is_ascii_graphic())
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
    let digits = isbn_digits(s)?;
    let last = *digits.last()?;
    (Some(last) == isbn_check_digit(&digits[..digits.len() - 1])).then(|| digits.iter().collect())
}

/// Why `s` is not an ISBN, for an error the author can act on: a wrong check digit is named
/// with the one its other digits need.
pub fn isbn_problem(s: &str) -> String {
    let wrong_check = isbn_digits(s).and_then(|digits| {
        let (body, last) = digits.split_at(digits.len() - 1);
        isbn_check_digit(body).map(|right| {
            format!(
                "its check digit is wrong: it ends in {}, where its first {} digits need {right} ({}{right})",
                last[0],
                body.len(),
                body.iter().collect::<String>()
            )
        })
    });
    wrong_check
        .unwrap_or_else(|| "not an ISBN: 10 or 13 digits (an ISBN-10 may end in X)".to_owned())
}

/// An ISBN's characters without its prefix, hyphens and spaces (`X` upper case), if it has the
/// shape of one.
fn isbn_digits(s: &str) -> Option<Vec<char>> {
    if !looks_like_isbn(s) {
        return None;
    }
    let s = s
        .trim_start_matches("urn:isbn:")
        .trim_start_matches("ISBN")
        .trim_start_matches(':');
    Some(
        s.chars()
            .filter(|c| !matches!(c, '-' | ' '))
            .map(|c| c.to_ascii_uppercase())
            .collect(),
    )
}

/// The check digit an ISBN's other digits need: 12 of them (ISBN-13, weights 1 and 3, modulo
/// 10) or 9 (ISBN-10, weights 10 down to 2, modulo 11, where 10 is written X).
pub fn isbn_check_digit(body: &[char]) -> Option<char> {
    let values: Option<Vec<u32>> = body.iter().map(|c| c.to_digit(10)).collect();
    let values = values?;
    match values.len() {
        12 => {
            let sum: u32 = values
                .iter()
                .enumerate()
                .map(|(i, d)| if i % 2 == 0 { *d } else { d * 3 })
                .sum();
            char::from_digit((10 - sum % 10) % 10, 10)
        }
        9 => {
            let sum: u32 = values
                .iter()
                .zip((2..=10).rev())
                .map(|(d, weight)| d * weight)
                .sum();
            match (11 - sum % 11) % 11 {
                10 => Some('X'),
                digit => char::from_digit(digit, 10),
            }
        }
        _ => None,
    }
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
mod tests;
