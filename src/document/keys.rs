//! The metadata keys a person gives: an upload's form fields and `bindery convert --meta
//! KEY=VALUE`. Each is declared once here, with the other spellings it takes, so the form, the
//! command line, the API's description, the report and the rule against giving one value
//! twice all read the same list.
//!
//! A key is read in any letter case and with `-` for `_` (`Series-Index` is `series_number`);
//! `labels.KEY` names one of the words Bindery writes ([`crate::labels::Key`]). Two spellings
//! of one key in one request are a mistake to name, never a value to pick silently.

use crate::labels;

/// A field of the book's metadata that a person may give.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Field {
    Title,
    Subtitle,
    Authors,
    Language,
    Identifier,
    Publisher,
    Date,
    Description,
    Subjects,
    Series,
    SeriesNumber,
    Rights,
    Blurb,
    Trim,
    Paper,
    Bleed,
    PrintIsbn,
    Price,
    Printer,
    Editions,
    HardcoverIsbn,
    HardcoverTrim,
    LargePrintIsbn,
    LargePrintTrim,
    LargePrintSize,
    ReferenceEdition,
    Style,
}

/// A field's key, the other spellings it takes, and what it is, in the words the API's
/// description and `bindery convert --help` give it (its bound is `bounds::Bound::of`).
#[derive(Debug, Clone, Copy)]
pub struct Declared {
    pub field: Field,
    /// The key (`author`).
    pub name: &'static str,
    /// Other keys for the same field (`authors`, `creator`).
    pub aliases: &'static [&'static str],
    /// What a value is, for a person: a sentence or two.
    pub help: &'static str,
    /// A value, for the API's description.
    pub example: Option<&'static str>,
}

const fn key(
    field: Field,
    name: &'static str,
    aliases: &'static [&'static str],
    help: &'static str,
) -> Declared {
    Declared {
        field,
        name,
        aliases,
        help,
        example: None,
    }
}

impl Declared {
    const fn example(self, example: &'static str) -> Declared {
        Declared {
            example: Some(example),
            ..self
        }
    }
}

/// Every field, in the order the help and the errors list them.
pub const FIELDS: &[Declared] = &[
    key(Field::Title, "title", &[], "The title."),
    key(Field::Subtitle, "subtitle", &[], "The subtitle."),
    key(
        Field::Authors,
        "author",
        &["authors", "creator"],
        "One or more authors, separated by `;`.",
    ),
    key(
        Field::Language,
        "language",
        &["lang"],
        "A BCP 47 language tag (`en`, `fr-CA`). Absent, the manuscript's language is kept, or \
         the service's `DEFAULT_LANGUAGE` (`en`) when it names none.",
    )
    .example("en"),
    // An ISBN is how most books are identified, so it is the same field.
    key(
        Field::Identifier,
        "identifier",
        &["isbn"],
        "The book's unique identifier: an ISBN-10 or ISBN-13 with a valid check digit, or a \
         URN. Absent, it is derived from the manuscript.",
    ),
    key(Field::Publisher, "publisher", &[], "The publisher."),
    key(
        Field::Date,
        "date",
        &[],
        "The publication date, W3CDTF: `2024`, `2024-05` or `2024-05-01`.",
    )
    .example("2024-05-01"),
    key(
        Field::Description,
        "description",
        &[],
        "What the book is about, for catalogs and stores.",
    ),
    key(
        Field::Subjects,
        "subject",
        &["subjects"],
        "One or more subjects, separated by `;`.",
    ),
    key(
        Field::Series,
        "series",
        &[],
        "The series the book belongs to.",
    ),
    key(
        Field::SeriesNumber,
        "series_number",
        &["series_index"],
        "The book's number in its series.",
    )
    .example("2"),
    key(
        Field::Rights,
        "rights",
        &[],
        "A rights or copyright statement.",
    ),
    key(
        Field::Blurb,
        "blurb",
        &["back_cover"],
        "The back cover's text, for the print edition's cover (else the description). What \
         does not fit on the back cover is left off, with a warning that says how much did.",
    ),
    key(
        Field::Trim,
        "trim",
        &["trim_size"],
        "The print edition's trim size: `5x8`, `5.25x8`, `5.5x8.5`, `6x9` (the default), `a5` \
         or `royal`.",
    )
    .example("6x9"),
    key(
        Field::Paper,
        "paper",
        &[],
        "The print edition's paper, which sets the spine's width: `white` (the default) or \
         `cream`.",
    )
    .example("cream"),
    key(
        Field::Bleed,
        "bleed",
        &[],
        "`yes` for 0.125 in of bleed beyond the trim on the print edition's outside edges.",
    )
    .example("no"),
    key(
        Field::PrintIsbn,
        "print_isbn",
        &["paperback_isbn"],
        "The print edition's own ISBN (a paperback's is not the ebook's).",
    ),
    key(
        Field::Price,
        "price",
        &["barcode_price"],
        "The price in the print cover's barcode (its five-digit add-on): `USD 14.99`, `$14.99`, \
         `CAD`, `GBP` (`£`), `AUD` or `NZD` and an amount under 100, `none` for no suggested \
         price (90000), or the add-on's five digits. Without it the barcode has no add-on.",
    )
    .example("USD 14.99"),
    key(
        Field::Printer,
        "printer",
        &["print_service"],
        "The printer the print edition goes to, whose rules it is checked against (trim, page \
         count, margins, spine text, bleed, image resolution, fonts, PDF): `kdp`, \
         `ingramspark`, `lulu`, or `none` (the default) for no check.",
    )
    .example("kdp"),
    key(
        Field::Editions,
        "editions",
        &["print_editions"],
        "The print editions made, built together from the one manuscript: `paperback` (the \
         default), `hardcover`, `large print`, listed with commas, or `none` for the ebooks \
         alone. The paperback takes `trim`, `paper`, `print_isbn` and `price`; the others \
         take their own keys below.",
    )
    .example("paperback, hardcover, large print"),
    key(
        Field::HardcoverIsbn,
        "hardcover_isbn",
        &[],
        "The hardcover's own ISBN (each edition has its own).",
    ),
    key(
        Field::HardcoverTrim,
        "hardcover_trim",
        &[],
        "The hardcover's trim size (else the paperback's): `5.5x8.5`, `6x9` or `royal`, the \
         trims case-laminate printers bind.",
    )
    .example("6x9"),
    key(
        Field::LargePrintIsbn,
        "large_print_isbn",
        &[],
        "The large-print edition's own ISBN.",
    ),
    key(
        Field::LargePrintTrim,
        "large_print_trim",
        &[],
        "The large-print edition's trim size (else the paperback's).",
    )
    .example("6x9"),
    key(
        Field::LargePrintSize,
        "large_print_size",
        &[],
        "The large-print edition's body size in points: 16 (the default) to 24. It is set in \
         the book's own style at that size.",
    )
    .example("18"),
    key(
        Field::ReferenceEdition,
        "reference_edition",
        &["page_list_edition"],
        "The print edition whose pages the EPUB's page list and the reader's page numbers \
         follow (`pageBreakSource`): `paperback`, `hardcover` or `large print`; by default the \
         first edition listed.",
    )
    .example("paperback"),
    key(
        Field::Style,
        "style",
        &["book_style", "theme"],
        "How the book looks in every edition: a built-in style (`bindery`, the default; \
         `classic`, `modern`, `romance`, `thriller`, `fantasy`, `literary`, `large-print`) \
         or a house style's name.",
    )
    .example("classic"),
];

/// What labels are given under: `labels.contents`.
pub const LABEL_PREFIX: &str = "labels.";

impl Field {
    /// Its declaration.
    pub fn declared(self) -> &'static Declared {
        FIELDS
            .iter()
            .find(|d| d.field == self)
            .unwrap_or_else(|| unreachable!("every field is declared"))
    }

    /// Its key (`author`).
    pub fn name(self) -> &'static str {
        self.declared().name
    }
}

/// What a key names: a field, or one of the words Bindery writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Named {
    Field(Field),
    Label(labels::Key),
}

/// A key Bindery does not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unknown {
    /// The key, in the form keys are compared in (`labels.table_of_contents`).
    pub key: String,
    /// It was `labels.SOMETHING`: a label Bindery does not write.
    pub label: bool,
}

impl std::fmt::Display for Unknown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.label {
            write!(
                f,
                "not a label Bindery writes; the labels are {}",
                label_names()
            )
        } else {
            write!(
                f,
                "unknown key; known keys are {} and labels.KEY",
                field_names()
            )
        }
    }
}

/// `name` in the form keys are compared in: lower case, `_` for `-`, no surrounding space.
fn folded(name: &str) -> String {
    name.trim().to_ascii_lowercase().replace('-', "_")
}

impl Named {
    /// What `name` names, in any case and with `-` for `_`.
    pub fn parse(name: &str) -> Result<Named, Unknown> {
        let folded = folded(name);
        if let Some(label) = folded.strip_prefix(LABEL_PREFIX) {
            return labels::Key::parse(label)
                .map(Named::Label)
                .ok_or_else(|| Unknown {
                    key: folded.clone(),
                    label: true,
                });
        }
        FIELDS
            .iter()
            .find(|d| d.name == folded || d.aliases.contains(&folded.as_str()))
            .map(|d| Named::Field(d.field))
            .ok_or(Unknown {
                key: folded,
                label: false,
            })
    }

    /// Its key, as errors and the report name it: `series_number`, `labels.contents`.
    pub fn key(self) -> String {
        match self {
            Named::Field(field) => field.name().to_owned(),
            Named::Label(label) => format!("{LABEL_PREFIX}{}", label.name()),
        }
    }
}

/// Every key with its other spellings, for a help text: `title, author (authors, creator), …`.
pub fn field_names_with_aliases() -> String {
    FIELDS
        .iter()
        .map(|d| match d.aliases {
            [] => d.name.to_owned(),
            aliases => format!("{} ({})", d.name, aliases.join(", ")),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Every field's keys, aliases included, for a message that lists them.
pub fn field_names() -> String {
    FIELDS.iter().map(|d| d.name).collect::<Vec<_>>().join(", ")
}

/// Every label's name.
pub fn label_names() -> String {
    labels::Key::ALL
        .iter()
        .map(|k| k.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Every spelling a field is read under, aliases included.
pub fn spellings() -> impl Iterator<Item = &'static str> {
    FIELDS
        .iter()
        .flat_map(|d| std::iter::once(d.name).chain(d.aliases.iter().copied()))
}

/// Keys of one request, each once: the second spelling of a key already given is named with
/// the first.
#[derive(Debug, Default)]
pub struct Given {
    seen: std::collections::BTreeMap<Named, String>,
}

/// A key given twice, under `first` and then `again` (perhaps the same spelling).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Twice {
    pub named: Named,
    pub first: String,
    pub again: String,
}

impl std::fmt::Display for Twice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.first == self.again {
            write!(f, "{:?} is given more than once: give it once", self.again)
        } else {
            write!(
                f,
                "{:?} and {:?} are the same key ({}): give one of them",
                self.first,
                self.again,
                self.named.key()
            )
        }
    }
}

impl Given {
    /// Notes `name` (which names `named`); the second time a key is given, under any
    /// spelling, is an error.
    pub fn note(&mut self, named: Named, name: &str) -> Result<(), Twice> {
        match self.seen.get(&named) {
            Some(first) => Err(Twice {
                named,
                first: first.clone(),
                again: name.to_owned(),
            }),
            None => {
                self.seen.insert(named, name.to_owned());
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_read_in_any_case_with_either_separator_and_by_any_alias() {
        for (name, field) in [
            ("title", Field::Title),
            ("Title", Field::Title),
            ("AUTHORS", Field::Authors),
            ("creator", Field::Authors),
            ("lang", Field::Language),
            ("Series-Index", Field::SeriesNumber),
            ("isbn", Field::Identifier),
            ("back-cover", Field::Blurb),
        ] {
            assert_eq!(Named::parse(name), Ok(Named::Field(field)), "{name}");
        }
        assert_eq!(
            Named::parse("labels.Table-Of-Contents").map_err(|u| u.label),
            Err(true)
        );
        assert_eq!(
            Named::parse("Labels.Contents"),
            Ok(Named::Label(labels::Key::Contents))
        );
        assert_eq!(Named::parse("titel").map_err(|u| u.label), Err(false));
    }

    #[test]
    fn a_key_given_twice_under_any_spelling_is_named_with_both() {
        for (first, again) in [
            ("author", "authors"),
            ("language", "lang"),
            ("series_number", "series_index"),
            ("labels.contents", "labels.Contents"),
            ("title", "title"),
        ] {
            let mut given = Given::default();
            given
                .note(Named::parse(first).expect("known"), first)
                .expect("first");
            let twice = given
                .note(Named::parse(again).expect("known"), again)
                .expect_err("twice");
            let said = twice.to_string();
            assert!(said.contains(again), "{said}");
            if first != again {
                assert!(said.contains(first), "{said}");
            }
        }
    }

    #[test]
    fn no_spelling_is_declared_for_two_fields() {
        let all: Vec<&str> = spellings().collect();
        let mut unique = all.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(all.len(), unique.len(), "{all:?}");
        for name in &all {
            assert_eq!(*name, folded(name), "declared in the folded form: {name}");
        }
    }
}
