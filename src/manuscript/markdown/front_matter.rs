//! YAML front matter (the block between `---` lines at the top) into [`Metadata`].
//!
//! Keys follow pandoc's and common static-site generators' names. YAML aliases are refused
//! before anything is built, because `yaml-rust2` copies every aliased node and a few lines
//! of nested aliases expand to gigabytes.

use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::{Yaml, YamlLoader};

use crate::document::Metadata;
use crate::document::keys::{self, Field, Named, Unknown};
use crate::manuscript::InputError;

/// Front matter larger than this is not metadata but a mistake (or an attack).
pub(super) const MAX_BYTES: usize = 64 * 1024;
/// Metadata is shallow; deep nesting only serves to exhaust the stack.
const MAX_DEPTH: usize = 32;

/// Parses front matter into `metadata`. Unknown keys are ignored; a document that is not a
/// mapping (a list, a bare string) has no metadata to take.
pub(crate) fn parse(yaml: &str, metadata: &mut Metadata) -> Result<(), InputError> {
    let error = |detail: String| InputError::FrontMatter { detail };
    if yaml.len() > MAX_BYTES {
        return Err(error(format!(
            "it is {} KiB, over the limit of {} KiB for front matter",
            yaml.len().div_ceil(1024),
            MAX_BYTES / 1024
        )));
    }
    check_events(yaml).map_err(error)?;
    let docs = YamlLoader::load_from_str(yaml).map_err(|e| error(e.to_string()))?;
    let Some(Yaml::Hash(map)) = docs.into_iter().next() else {
        return Ok(());
    };
    for (key, value) in &map {
        let Some(key) = key.as_str() else { continue };
        apply(&key.to_ascii_lowercase(), value, metadata);
    }
    Ok(())
}

/// Refuses aliases and deep nesting, reading only the event stream.
fn check_events(yaml: &str) -> Result<(), String> {
    let mut parser = Parser::new_from_str(yaml);
    let mut depth = 0usize;
    loop {
        let (event, mark) = parser.next_token().map_err(|e| e.to_string())?;
        match event {
            Event::StreamEnd => return Ok(()),
            Event::Alias(_) => {
                return Err(format!(
                    "line {} uses a YAML alias (*name), which front matter does not allow; write the value out",
                    mark.line()
                ));
            }
            Event::SequenceStart(..) | Event::MappingStart(..) => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(format!("it nests deeper than {MAX_DEPTH} levels"));
                }
            }
            Event::SequenceEnd | Event::MappingEnd => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
}

/// A key of the table every way in reads (`document::keys`, in any case and with `-` for `_`)
/// means what it means there; pandoc's own names for the same fields (`abstract`, `keywords`,
/// `belongs-to-collection`…) are read here too, so a pandoc manuscript keeps its metadata.
fn apply(key: &str, value: &Yaml, m: &mut Metadata) {
    match Named::parse(key) {
        Ok(Named::Field(field)) => apply_field(field, value, m),
        Ok(Named::Label(label)) => {
            if let Some(text) = scalar(value) {
                m.labels.insert(label.name().to_owned(), text);
            }
        }
        Err(unknown) => apply_pandoc(key, &unknown, value, m),
    }
}

fn apply_field(field: Field, value: &Yaml, m: &mut Metadata) {
    let set = |slot: &mut Option<String>, value: Option<String>| {
        if let Some(v) = value {
            *slot = Some(v);
        }
    };
    match field {
        Field::Title => match value {
            // pandoc's EPUB form: a list of {type: main|subtitle, text: …}.
            Yaml::Array(items) => {
                for item in items {
                    let text = scalar(&item["text"]).or_else(|| scalar(item));
                    match item["type"].as_str() {
                        Some("subtitle") => set(&mut m.subtitle, text),
                        _ if m.title.is_none() => set(&mut m.title, text),
                        _ => {}
                    }
                }
            }
            _ => set(&mut m.title, scalar(value)),
        },
        Field::Subtitle => set(&mut m.subtitle, scalar(value)),
        Field::Blurb => set(&mut m.blurb, scalar(value)),
        Field::Trim => set(&mut m.trim, scalar(value)),
        Field::Paper => set(&mut m.paper, scalar(value)),
        Field::Bleed => set(&mut m.bleed, scalar(value)),
        Field::PrintIsbn => set(&mut m.print_isbn, scalar(value)),
        Field::Price => set(&mut m.price, scalar(value)),
        Field::Printer => set(&mut m.printer, scalar(value)),
        Field::Editions => set(&mut m.editions, scalar(value)),
        Field::HardcoverIsbn => set(&mut m.hardcover_isbn, scalar(value)),
        Field::HardcoverTrim => set(&mut m.hardcover_trim, scalar(value)),
        Field::LargePrintIsbn => set(&mut m.large_print_isbn, scalar(value)),
        Field::LargePrintTrim => set(&mut m.large_print_trim, scalar(value)),
        Field::LargePrintSize => set(&mut m.large_print_size, scalar(value)),
        Field::ReferenceEdition => set(&mut m.reference_edition, scalar(value)),
        Field::Style => set(&mut m.style, scalar(value)),
        Field::Authors => m.authors.extend(names(value)),
        Field::Language => set(&mut m.language, scalar(value)),
        Field::Identifier => set(&mut m.identifier, first(value, "text")),
        Field::Publisher => set(&mut m.publisher, scalar(value)),
        Field::Date => set(&mut m.date, scalar(value)),
        Field::Description => set(&mut m.description, scalar(value)),
        // A list, or one string of them separated by `;`, as the form and `--meta` take them.
        Field::Subjects => m.subjects.extend(split_list(value, ';')),
        Field::Series => set(&mut m.series, first(value, "name")),
        Field::SeriesNumber => set(&mut m.series_number, scalar(value)),
        Field::Rights => set(&mut m.rights, scalar(value)),
    }
}

/// pandoc's names for fields the table names otherwise, the `labels` map, and a label Bindery
/// does not write (kept, so that `resolve` names it in a warning).
fn apply_pandoc(key: &str, unknown: &Unknown, value: &Yaml, m: &mut Metadata) {
    match key.to_ascii_lowercase().as_str() {
        "abstract" | "summary" => apply_field(Field::Description, value, m),
        "keywords" | "tags" => m.subjects.extend(split_list(value, ',')),
        "belongs-to-collection" | "collection" => apply_field(Field::Series, value, m),
        "group-position" => apply_field(Field::SeriesNumber, value, m),
        "copyright" | "license" => apply_field(Field::Rights, value, m),
        "labels" => {
            if let Yaml::Hash(map) = value {
                for (name, text) in map {
                    if let (Some(name), Some(text)) = (scalar(name), scalar(text)) {
                        m.labels.insert(name.to_ascii_lowercase(), text);
                    }
                }
            }
        }
        _ if unknown.label => {
            if let (Some(name), Some(text)) =
                (unknown.key.strip_prefix(keys::LABEL_PREFIX), scalar(value))
            {
                m.labels.insert(name.to_owned(), text);
            }
        }
        _ => {}
    }
}

/// A string, number or date as text; `None` for null, booleans and collections.
fn scalar(value: &Yaml) -> Option<String> {
    let text = match value {
        Yaml::String(s) | Yaml::Real(s) => s.trim().to_owned(),
        Yaml::Integer(i) => i.to_string(),
        _ => return None,
    };
    (!text.is_empty()).then_some(text)
}

/// A scalar, or the first item of a list, or a map's `field`.
fn first(value: &Yaml, field: &str) -> Option<String> {
    match value {
        Yaml::Array(items) => items.iter().find_map(|i| first(i, field)),
        Yaml::Hash(_) => scalar(&value[field]),
        _ => scalar(value),
    }
}

fn list(value: &Yaml) -> Vec<String> {
    match value {
        Yaml::Array(items) => items.iter().filter_map(|i| first(i, "text")).collect(),
        _ => scalar(value).into_iter().collect(),
    }
}

/// A list's items, each also split at `separator`, trimmed, the empty ones left out.
fn split_list(value: &Yaml, separator: char) -> Vec<String> {
    list(value)
        .iter()
        .flat_map(|s| s.split(separator))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Authors: `Name`, `[A, B]`, `[{name: A}, …]`, `{name: A}`, or `A and B; C`.
fn names(value: &Yaml) -> Vec<String> {
    match value {
        Yaml::Array(items) => items.iter().flat_map(names).collect(),
        Yaml::Hash(_) => scalar(&value["name"])
            .or_else(|| scalar(&value["text"]))
            .into_iter()
            .collect(),
        _ => scalar(value)
            .map(|s| {
                s.split(';')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn meta(yaml: &str) -> Metadata {
        let mut m = Metadata::default();
        parse(yaml, &mut m).unwrap();
        m
    }

    #[test]
    fn common_keys_fill_metadata() {
        let m = meta(
            "title: The Book\nsubtitle: A Tale\nauthor: [Ann One, Bob Two]\nlang: fr-CA\nisbn: 978-3-16-148410-0\n\
             publisher: Small Press\ndate: 2024-05-01\nabstract: About it.\nkeywords: sea, ships\nsubject: Fiction\n\
             series: The Cycle\nseries-index: 2\ncopyright: © 2024\nunknown: ignored\n",
        );
        assert_eq!(m.title.as_deref(), Some("The Book"));
        assert_eq!(m.subtitle.as_deref(), Some("A Tale"));
        assert_eq!(m.authors, ["Ann One", "Bob Two"]);
        assert_eq!(m.language.as_deref(), Some("fr-CA"));
        assert_eq!(m.identifier.as_deref(), Some("978-3-16-148410-0"));
        assert_eq!(m.publisher.as_deref(), Some("Small Press"));
        assert_eq!(m.date.as_deref(), Some("2024-05-01"));
        assert_eq!(m.description.as_deref(), Some("About it."));
        assert_eq!(m.subjects, ["sea", "ships", "Fiction"]);
        assert_eq!(m.series.as_deref(), Some("The Cycle"));
        assert_eq!(m.series_number.as_deref(), Some("2"));
        assert_eq!(m.rights.as_deref(), Some("© 2024"));
    }

    #[test]
    fn authors_as_maps_and_pandoc_titles() {
        let m = meta(
            "author:\n  - name: Ann One\n  - name: Bob Two\ntitle:\n  - type: main\n    text: Main\n  - type: subtitle\n    text: Sub\n\
             belongs-to-collection: Saga\ngroup-position: 3\n",
        );
        assert_eq!(m.authors, ["Ann One", "Bob Two"]);
        assert_eq!(
            (m.title.as_deref(), m.subtitle.as_deref()),
            (Some("Main"), Some("Sub"))
        );
        assert_eq!(
            (m.series.as_deref(), m.series_number.as_deref()),
            (Some("Saga"), Some("3"))
        );
    }

    #[test]
    fn labels_come_as_a_map_or_one_by_one() {
        let m = meta("labels:\n  contents: Inhalt\n  Notes: Anmerkungen\nlabels.cover: Einband\n");
        let labels: Vec<(&str, &str)> = m
            .labels
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            labels,
            [
                ("contents", "Inhalt"),
                ("cover", "Einband"),
                ("notes", "Anmerkungen")
            ]
        );
    }

    #[test]
    fn invalid_yaml_is_a_front_matter_error() {
        let err = parse("title: [unclosed\n", &mut Metadata::default()).unwrap_err();
        assert_eq!(err.code(), "bad_front_matter");
    }

    #[test]
    fn aliases_are_refused_before_they_can_expand() {
        let bomb = "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n";
        let err = parse(bomb, &mut Metadata::default()).unwrap_err();
        assert!(err.to_string().contains("alias"), "{err}");
    }

    #[test]
    fn huge_or_deep_front_matter_is_refused() {
        let huge = format!("title: {}\n", "x".repeat(MAX_BYTES));
        assert!(
            parse(&huge, &mut Metadata::default())
                .unwrap_err()
                .to_string()
                .contains("KiB")
        );
        let deep = format!("a: {}{}\n", "[".repeat(100), "]".repeat(100));
        assert!(
            parse(&deep, &mut Metadata::default())
                .unwrap_err()
                .to_string()
                .contains("nests")
        );
    }
}
