use super::*;
use crate::labels::Key;

fn resolve_with(found: Metadata, overrides: &[(&str, &str)]) -> Result<BookMetadata, InputError> {
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

/// The check digits of ISBNs as publishers print them (ISBN-10's X among them).
#[test]
fn an_isbns_check_digit_is_computed_from_its_other_digits() {
    for isbn in [
        "9780306406157",
        "0306406152",
        "080442957X",
        "9781861972712",
        "9798886451306",
    ] {
        let digits: Vec<char> = isbn.chars().collect();
        let (body, last) = digits.split_at(digits.len() - 1);
        assert_eq!(super::isbn_check_digit(body), Some(last[0]), "{isbn}");
        assert_eq!(super::parse_isbn(isbn).as_deref(), Some(isbn));
    }
    assert_eq!(
        super::parse_isbn("978-0-306-40615-7").as_deref(),
        Some("9780306406157")
    );
    assert_eq!(
        super::parse_isbn("080442957x").as_deref(),
        Some("080442957X")
    );
    assert_eq!(super::parse_isbn("9780306406158"), None);
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
        // A wrong check digit is named with the right one.
        (
            "print_isbn",
            "978-0-306-40615-8",
            "it ends in 8, where its first 12 digits need 7 (9780306406157)",
        ),
        ("print_isbn", "0-306-40615-3", "need 2 (0306406152)"),
        ("print_isbn", "080442957Y", "10 or 13 digits"),
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
fn a_urn_is_the_identifier_and_anything_else_is_refused_or_warned_of() {
    let urn = "urn:uuid:0b2e6e36-7a4f-4a6e-9d8f-1c2b3a4d5e6f";
    let m = resolve_with(Metadata::default(), &[("identifier", urn)]).unwrap();
    assert_eq!(m.identifier, urn);
    // An author's URN wins over the identifier a book kept across its revisions.
    let mut warnings = Vec::new();
    let kept = MetadataInputs {
        identifier: Some("urn:uuid:kept".into()),
        ..MetadataInputs::default()
    };
    let found = Metadata {
        identifier: Some("urn:doi:10.1000/182".into()),
        ..Metadata::default()
    };
    assert_eq!(
        resolve(&found, &kept, &mut warnings).unwrap().identifier,
        "urn:doi:10.1000/182"
    );
    assert_eq!(
        resolve(&Metadata::default(), &kept, &mut warnings)
            .unwrap()
            .identifier,
        "urn:uuid:kept"
    );
    assert!(warnings.is_empty(), "{warnings:?}");
    for bad in [
        "my-book",
        "urn:x:",
        "urn::y",
        "urn:uuid:two words",
        "http://example.com/b",
    ] {
        assert!(
            resolve_with(Metadata::default(), &[("identifier", bad)]).is_err(),
            "{bad}"
        );
    }
    // From the manuscript, it is not used, and the author is told.
    let found = Metadata {
        identifier: Some("my-book".into()),
        ..Metadata::default()
    };
    let m = resolve(&found, &MetadataInputs::default(), &mut warnings).unwrap();
    assert!(m.identifier.starts_with("urn:uuid:"), "{}", m.identifier);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0].code, "identifier_invalid");
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
            row("style", "bindery", "default", None),
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
            row("style", "bindery", "default", None),
        ]
    );
}
