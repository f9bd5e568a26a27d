//! Every fixed word Bindery writes into a book, in the book's language: the EPUB's
//! navigation, landmarks and copyright page, the names of untitled chapters, the print
//! edition's contents and copyright page, the web reader's controls (its pages and the
//! messages of `reader.js`, which the pages hand it as data), and the line that makes a copy
//! an advance reader copy for one person.
//!
//! The table is one file per language under `translations/`, `key = value` lines (the format
//! of Typst's own translation files). English (`en.txt`) is the reference: every other file
//! has exactly its keys and, in each value, its placeholders (`{n}`, `{title}`…); a unit test
//! holds them to it.
//!
//! Where the words come from: the words for the table of contents (`contents`), `page` and
//! `bibliography` are seeded from Typst's translation files (`outline`, `page` and
//! `bibliography` in typst-library 0.14's `translations/*.txt`, whose `page` is sometimes the
//! abbreviation `page_short` holds here, © Typst contributors,
//! Apache-2.0, <https://github.com/typst/typst>). Typst has no words for the rest (landmarks,
//! cover, notes, divisions, the copyright page, the reader's controls, the advance copy's line): those were translated
//! for Bindery, kept short and in the register reading systems use. pandoc's translation
//! files are GPL and were not used.
//!
//! A book's labels are looked up by its BCP 47 tag: the whole tag first (`zh-Hant`,
//! `pt-PT`), then Chinese by script or region (`zh-TW` is written in traditional
//! characters), then the primary subtag (`de-AT` takes `de`), else English, which the
//! metadata's resolution reports as `labels_not_translated`. The book's `labels.KEY`
//! metadata replaces any one value.

use std::collections::BTreeMap;
use std::sync::LazyLock;

macro_rules! keys {
    ($($(#[$doc:meta])* $variant:ident = $name:literal,)*) => {
        /// One fixed word or phrase of the table.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Key {
            $($(#[$doc])* $variant,)*
        }

        impl Key {
            /// Every key, in the order of `en.txt`.
            pub const ALL: &[Key] = &[$(Key::$variant,)*];

            /// Its name in the translation files and in `labels.NAME` metadata.
            pub fn name(self) -> &'static str {
                match self {
                    $(Key::$variant => $name,)*
                }
            }
        }
    };
}

keys! {
    Contents = "contents",
    TitlePage = "title_page",
    Landmarks = "landmarks",
    Cover = "cover",
    StartOfContent = "start_of_content",
    Copyright = "copyright",
    Pages = "pages",
    Page = "page",
    PageShort = "page_short",
    Notes = "notes",
    Chapter = "chapter",
    Part = "part",
    Appendix = "appendix",
    Dedication = "dedication",
    Epigraph = "epigraph",
    Foreword = "foreword",
    Preface = "preface",
    Introduction = "introduction",
    Prologue = "prologue",
    Epilogue = "epilogue",
    Afterword = "afterword",
    Acknowledgments = "acknowledgments",
    Glossary = "glossary",
    Bibliography = "bibliography",
    And = "and",
    CoverOf = "cover_of",
    CoverOfBy = "cover_of_by",
    TitleBy = "title_by",
    AllRightsReserved = "all_rights_reserved",
    Identifier = "identifier",
    PublishedByOn = "published_by_on",
    PublishedBy = "published_by",
    PublishedOn = "published_on",
    MadeWithBindery = "made_with_bindery",
    CopyrightYear = "copyright_year",
    FirstPublished = "first_published",
    TypesetWithBindery = "typeset_with_bindery",
    /// The editions, as the copyright page names each one's ISBN: `ISBN … (paperback)`.
    EditionPaperback = "edition_paperback",
    EditionHardcover = "edition_hardcover",
    EditionLargePrint = "edition_large_print",
    EditionEbook = "edition_ebook",
    /// What an advance reader copy says of itself on every edition's copyright page
    /// (`advance_copies::stamp`): whom it was made for (`{reader}`), and that it is not for sale.
    AdvanceCopy = "advance_copy",
    SkipToContents = "skip_to_contents",
    SkipToText = "skip_to_text",
    SkipToPages = "skip_to_pages",
    ReadingSettings = "reading_settings",
    SmallerText = "smaller_text",
    LargerText = "larger_text",
    DarkTheme = "dark_theme",
    ReadingChapter = "reading_chapter",
    Position = "position",
    StartReading = "start_reading",
    ContinueReading = "continue_reading",
    Previous = "previous",
    Next = "next",
    BackTo = "back_to",
    TheEnd = "the_end",
    Chapters = "chapters",
    ThisBook = "this_book",
    BookPage = "book_page",
    DownloadEpub = "download_epub",
    GoToPrintPage = "go_to_print_page",
    PrintPages = "print_pages",
    EveryPage = "every_page",
    GoToPage = "go_to_page",
    Go = "go",
    PagesHint = "pages_hint",
    NoSuchPage = "no_such_page",
    TypeAPage = "type_a_page",
}

impl Key {
    /// The key named `name` (`contents`), as `labels.NAME` metadata gives it.
    pub fn parse(name: &str) -> Option<Key> {
        let name = name.trim().to_ascii_lowercase().replace('-', "_");
        Key::ALL.iter().copied().find(|k| k.name() == name)
    }
}

/// The translation files, by the tag they are for. `zh` is written in simplified characters.
const FILES: &[(&str, &str)] = &[
    ("ar", include_str!("translations/ar.txt")),
    ("bg", include_str!("translations/bg.txt")),
    ("ca", include_str!("translations/ca.txt")),
    ("cs", include_str!("translations/cs.txt")),
    ("da", include_str!("translations/da.txt")),
    ("de", include_str!("translations/de.txt")),
    ("el", include_str!("translations/el.txt")),
    ("en", include_str!("translations/en.txt")),
    ("es", include_str!("translations/es.txt")),
    ("fa", include_str!("translations/fa.txt")),
    ("fi", include_str!("translations/fi.txt")),
    ("fr", include_str!("translations/fr.txt")),
    ("he", include_str!("translations/he.txt")),
    ("hi", include_str!("translations/hi.txt")),
    ("hu", include_str!("translations/hu.txt")),
    ("id", include_str!("translations/id.txt")),
    ("it", include_str!("translations/it.txt")),
    ("ja", include_str!("translations/ja.txt")),
    ("ko", include_str!("translations/ko.txt")),
    ("nb", include_str!("translations/nb.txt")),
    ("nl", include_str!("translations/nl.txt")),
    ("pl", include_str!("translations/pl.txt")),
    ("pt", include_str!("translations/pt.txt")),
    ("ro", include_str!("translations/ro.txt")),
    ("ru", include_str!("translations/ru.txt")),
    ("sv", include_str!("translations/sv.txt")),
    ("tr", include_str!("translations/tr.txt")),
    ("uk", include_str!("translations/uk.txt")),
    ("vi", include_str!("translations/vi.txt")),
    ("zh", include_str!("translations/zh.txt")),
    ("zh-Hant", include_str!("translations/zh-Hant.txt")),
];

/// Primary subtags that name a language the table has under another tag: Norwegian without
/// a written standard is read as Bokmål; `iw` is Hebrew's withdrawn code.
const ALIASES: &[(&str, &str)] = &[("no", "nb"), ("iw", "he"), ("in", "id")];

/// One language's words, by key.
#[derive(Debug)]
pub struct Table {
    /// The tag of its file (`zh-Hant`).
    pub tag: &'static str,
    values: BTreeMap<&'static str, &'static str>,
}

impl Table {
    /// The value of `key`; English's where the file lacks it (the unit test sees that none do).
    pub fn get(&self, key: Key) -> &'static str {
        self.values
            .get(key.name())
            .or_else(|| english().values.get(key.name()))
            .copied()
            .unwrap_or("")
    }
}

/// `key = value` lines; `#` starts a comment line, blank lines are skipped.
fn parse(tag: &'static str, text: &'static str) -> Table {
    let values = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim(), v.trim()))
        .collect();
    Table { tag, values }
}

static TABLES: LazyLock<Vec<Table>> =
    LazyLock::new(|| FILES.iter().map(|(tag, text)| parse(tag, text)).collect());

fn table(tag: &str) -> Option<&'static Table> {
    TABLES.iter().find(|t| t.tag.eq_ignore_ascii_case(tag))
}

/// The English table, the fallback.
pub fn english() -> &'static Table {
    TABLES
        .iter()
        .find(|t| t.tag == "en")
        .unwrap_or_else(|| unreachable!("en.txt is in FILES"))
}

/// The table for a BCP 47 `tag`, or `None` when the table has no entry for its language.
pub fn table_for(tag: &str) -> Option<&'static Table> {
    let tag = tag.trim();
    if let Some(t) = table(tag) {
        return Some(t);
    }
    let lower = tag.to_ascii_lowercase();
    let mut subtags = lower.split('-');
    let primary = subtags.next().unwrap_or("");
    let primary = ALIASES
        .iter()
        .find(|(alias, _)| *alias == primary)
        .map_or(primary, |(_, to)| to);
    if primary == "zh" {
        // Chinese by its script, or, without one, by the region whose script it is.
        let rest: Vec<&str> = subtags.collect();
        let traditional = rest.contains(&"hant")
            || (!rest.contains(&"hans") && rest.iter().any(|s| matches!(*s, "tw" | "hk" | "mo")));
        return table(if traditional { "zh-Hant" } else { "zh" });
    }
    table(primary)
}

/// The tags the table has, for the README and the report's warning.
pub fn languages() -> impl Iterator<Item = &'static str> {
    FILES.iter().map(|(tag, _)| *tag)
}

/// A book's labels: its language's table, and the book's own replacements (`labels.KEY`).
#[derive(Debug, Clone, Copy)]
pub struct Labels<'a> {
    table: &'static Table,
    overrides: Option<&'a BTreeMap<String, String>>,
}

impl<'a> Labels<'a> {
    /// The labels of a book in `language` (English when the table has none), with
    /// `overrides` by key name.
    pub fn new(language: &str, overrides: &'a BTreeMap<String, String>) -> Labels<'a> {
        Labels {
            table: table_for(language).unwrap_or_else(english),
            overrides: Some(overrides),
        }
    }

    /// English, with no replacements.
    pub fn english() -> Labels<'static> {
        Labels {
            table: english(),
            overrides: None,
        }
    }

    /// The tag of the table in use.
    pub fn tag(&self) -> &'static str {
        self.table.tag
    }

    /// The value of `key`.
    pub fn get(&self, key: Key) -> &'a str {
        match self.overrides.and_then(|o| o.get(key.name())) {
            Some(value) => value.as_str(),
            None => self.table.get(key),
        }
    }

    /// The value of `key` with its placeholders filled: `("n", "3")` replaces `{n}`.
    pub fn fill(&self, key: Key, values: &[(&str, &str)]) -> String {
        fill(self.get(key), values)
    }

    /// "A", "A and B", "A, B and C" (the last two joined by `and`, the rest by commas; in
    /// Chinese and Japanese by the ideographic comma).
    pub fn join(&self, names: &[String]) -> String {
        match names {
            [] => String::new(),
            [one] => one.clone(),
            [init @ .., last] => {
                let comma = match self.table.tag {
                    "ja" | "zh" | "zh-Hant" => "、",
                    "ar" | "fa" => "، ",
                    _ => ", ",
                };
                self.fill(Key::And, &[("a", &init.join(comma)), ("b", last)])
            }
        }
    }
}

/// `template` with each `{name}` replaced by its value, in one pass (a value that holds
/// `{x}` is not filled again).
pub fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len() + 32);
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after
            .find('}')
            .and_then(|close| Some((close, values.iter().find(|(k, _)| *k == &after[..close])?)))
        {
            Some((close, (_, value))) => {
                out.push_str(value);
                rest = &after[close + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The placeholders of a template, in order (`{n}`, `{total}` → `["n", "total"]`).
pub fn placeholders(template: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            break;
        };
        names.push(&after[..close]);
        rest = &after[close + 1..];
    }
    names
}

#[cfg(test)]
mod tests;
