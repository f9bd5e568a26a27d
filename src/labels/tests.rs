use std::collections::BTreeMap;

use super::*;

#[test]
fn every_language_has_every_key_with_english_placeholders() {
    let en = english();
    for (tag, text) in FILES {
        let table = parse(tag, text);
        for key in Key::ALL {
            let value = table
                .values
                .get(key.name())
                .unwrap_or_else(|| panic!("{tag}.txt has no {}", key.name()));
            assert!(!value.is_empty(), "{tag}.txt: {} is empty", key.name());
            let mut theirs = placeholders(value);
            let mut ours = placeholders(en.get(*key));
            theirs.sort_unstable();
            ours.sort_unstable();
            assert_eq!(
                theirs,
                ours,
                "{tag}.txt: the placeholders of {}",
                key.name()
            );
        }
        let unknown: Vec<&&str> = table
            .values
            .keys()
            .filter(|k| Key::parse(k).is_none())
            .collect();
        assert!(unknown.is_empty(), "{tag}.txt has unknown keys {unknown:?}");
    }
}

#[test]
fn the_table_covers_the_languages_it_promises() {
    let tags: Vec<&str> = languages().collect();
    assert!(tags.len() >= 30, "{} languages", tags.len());
    for tag in [
        "ar", "he", "fa", "ja", "zh", "ko", "ru", "el", "hi", "de", "fr", "es", "it", "pt", "nl",
        "pl", "sv",
    ] {
        assert!(tags.contains(&tag), "{tag}");
    }
}

#[test]
fn lookup_takes_the_whole_tag_then_the_script_then_the_language() {
    let tag = |t: &str| table_for(t).map(|t| t.tag);
    assert_eq!(tag("ru"), Some("ru"));
    assert_eq!(tag("de-AT"), Some("de"));
    assert_eq!(tag("DE-ch"), Some("de"));
    assert_eq!(tag("zh-Hant"), Some("zh-Hant"));
    assert_eq!(tag("zh-Hant-HK"), Some("zh-Hant"));
    assert_eq!(tag("zh-TW"), Some("zh-Hant"));
    assert_eq!(tag("zh-Hans-HK"), Some("zh"));
    assert_eq!(tag("zh-CN"), Some("zh"));
    assert_eq!(tag("zh"), Some("zh"));
    assert_eq!(tag("no"), Some("nb"));
    assert_eq!(tag("iw"), Some("he"));
    assert_eq!(tag("pt-BR"), Some("pt"));
    assert_eq!(tag("tlh"), None);
    assert_eq!(tag("nn"), None);
}

#[test]
fn a_language_without_an_entry_is_english() {
    let none = BTreeMap::new();
    let labels = Labels::new("tlh", &none);
    assert_eq!(labels.tag(), "en");
    assert_eq!(labels.get(Key::Contents), "Contents");
}

#[test]
fn a_books_label_replaces_the_tables() {
    let overrides = BTreeMap::from([("contents".to_owned(), "Inhalt des Buches".to_owned())]);
    let labels = Labels::new("de", &overrides);
    assert_eq!(labels.get(Key::Contents), "Inhalt des Buches");
    // The others stay the language's.
    assert_eq!(
        labels.get(Key::Notes),
        table_for("de").map_or("", |t| t.get(Key::Notes))
    );
}

#[test]
fn hand_checked_words() {
    let none = BTreeMap::new();
    assert_eq!(Labels::new("ru", &none).get(Key::Contents), "Содержание");
    assert_eq!(
        Labels::new("de", &none).get(Key::Contents),
        "Inhaltsverzeichnis"
    );
    assert_eq!(Labels::new("fr", &none).get(Key::Notes), "Notes");
    assert_eq!(
        Labels::new("ja", &none).fill(Key::Chapter, &[("n", "3")]),
        "第3章"
    );
}

#[test]
fn placeholders_are_filled_once() {
    assert_eq!(fill("Chapter {n}", &[("n", "{n}")]), "Chapter {n}");
    assert_eq!(fill("{a} and {b}", &[("a", "X"), ("b", "Y")]), "X and Y");
    assert_eq!(fill("{unknown} {", &[]), "{unknown} {");
    assert_eq!(placeholders("{n} of {total}"), ["n", "total"]);
}

#[test]
fn names_are_joined_in_the_language() {
    let none = BTreeMap::new();
    let names = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let en = Labels::new("en", &none);
    assert_eq!(en.join(&names(&["A"])), "A");
    assert_eq!(en.join(&names(&["A", "B", "C"])), "A, B and C");
    let ja = Labels::new("ja", &none);
    assert_eq!(ja.join(&names(&["A", "B", "C"])), "A、BとC");
}

#[test]
fn keys_parse_by_name() {
    assert_eq!(Key::parse("contents"), Some(Key::Contents));
    assert_eq!(Key::parse("Start-Of-Content"), Some(Key::StartOfContent));
    assert_eq!(Key::parse("nothing"), None);
}
