//! Book typefaces for the scripts Bindery's own fonts lack (Arabic, Hebrew, the Indic scripts,
//! Thai, Chinese, Japanese, Korean…), taken from the system's fonts: Debian's Noto families
//! (`fonts-noto-core`, `fonts-noto-cjk`), which the container image installs, under the
//! system's font folders.
//!
//! Only a book's own scripts are looked for, and only their files are read: a Latin book
//! costs nothing, a Japanese one reads the CJK collection it prints with. A file is found by
//! its name (the folders are walked, nothing else is opened), read once per process and kept.
//! A script whose face is not there is not drawn in another script's font: its letters are
//! missing, and the print edition says so (`print::PrintError::MissingScript`). The print
//! edition (Typst) and the generated cover's drawing (resvg) read the same files.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// A script the built-in fonts cannot draw, and the faces that draw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Script {
    /// The script's name, for the author ("Japanese", "Devanagari").
    pub name: &'static str,
    /// The families to print it in, in order (the book's language may put another first).
    pub families: &'static [&'static str],
    /// The files that hold them, by name; regular first, then bold.
    pub files: &'static [&'static str],
    /// The package that installs them on Debian, for the operator.
    pub package: &'static str,
    ranges: &'static [(u32, u32)],
}

const CORE: &str = "fonts-noto-core";
const CJK: &str = "fonts-noto-cjk";

const fn script(
    name: &'static str,
    families: &'static [&'static str],
    files: &'static [&'static str],
    package: &'static str,
    ranges: &'static [(u32, u32)],
) -> Script {
    Script {
        name,
        families,
        files,
        package,
        ranges,
    }
}

/// Chinese, Japanese and Korean: one collection, a face for each. Simplified Chinese first,
/// unless the book's language names another ([`Script::families_for`]).
const CJK_FAMILIES: &[&str] = &[
    "Noto Serif CJK SC",
    "Noto Serif CJK TC",
    "Noto Serif CJK HK",
    "Noto Serif CJK JP",
    "Noto Serif CJK KR",
];

/// Every script Bindery prints from the system's fonts.
pub const SCRIPTS: &[Script] = &[
    script(
        "Arabic",
        &["Noto Naskh Arabic"],
        &["NotoNaskhArabic-Regular.ttf", "NotoNaskhArabic-Bold.ttf"],
        CORE,
        &[
            (0x0600, 0x06FF),
            (0x0750, 0x077F),
            (0x08A0, 0x08FF),
            (0xFB50, 0xFDFF),
            (0xFE70, 0xFEFF),
        ],
    ),
    script(
        "Hebrew",
        &["Noto Serif Hebrew"],
        &["NotoSerifHebrew-Regular.ttf", "NotoSerifHebrew-Bold.ttf"],
        CORE,
        &[(0x0590, 0x05FF), (0xFB1D, 0xFB4F)],
    ),
    script(
        "Armenian",
        &["Noto Serif Armenian"],
        &[
            "NotoSerifArmenian-Regular.ttf",
            "NotoSerifArmenian-Bold.ttf",
        ],
        CORE,
        &[(0x0530, 0x058F)],
    ),
    script(
        "Georgian",
        &["Noto Serif Georgian"],
        &[
            "NotoSerifGeorgian-Regular.ttf",
            "NotoSerifGeorgian-Bold.ttf",
        ],
        CORE,
        &[(0x10A0, 0x10FF), (0x2D00, 0x2D2F)],
    ),
    script(
        "Devanagari",
        &["Noto Serif Devanagari"],
        &[
            "NotoSerifDevanagari-Regular.ttf",
            "NotoSerifDevanagari-Bold.ttf",
        ],
        CORE,
        &[(0x0900, 0x097F), (0xA8E0, 0xA8FF)],
    ),
    script(
        "Bengali",
        &["Noto Serif Bengali"],
        &["NotoSerifBengali-Regular.ttf", "NotoSerifBengali-Bold.ttf"],
        CORE,
        &[(0x0980, 0x09FF)],
    ),
    script(
        "Gurmukhi",
        &["Noto Serif Gurmukhi"],
        &[
            "NotoSerifGurmukhi-Regular.ttf",
            "NotoSerifGurmukhi-Bold.ttf",
        ],
        CORE,
        &[(0x0A00, 0x0A7F)],
    ),
    script(
        "Gujarati",
        &["Noto Serif Gujarati"],
        &[
            "NotoSerifGujarati-Regular.ttf",
            "NotoSerifGujarati-Bold.ttf",
        ],
        CORE,
        &[(0x0A80, 0x0AFF)],
    ),
    script(
        "Tamil",
        &["Noto Serif Tamil"],
        &["NotoSerifTamil-Regular.ttf", "NotoSerifTamil-Bold.ttf"],
        CORE,
        &[(0x0B80, 0x0BFF)],
    ),
    script(
        "Telugu",
        &["Noto Serif Telugu"],
        &["NotoSerifTelugu-Regular.ttf", "NotoSerifTelugu-Bold.ttf"],
        CORE,
        &[(0x0C00, 0x0C7F)],
    ),
    script(
        "Kannada",
        &["Noto Serif Kannada"],
        &["NotoSerifKannada-Regular.ttf", "NotoSerifKannada-Bold.ttf"],
        CORE,
        &[(0x0C80, 0x0CFF)],
    ),
    script(
        "Malayalam",
        &["Noto Serif Malayalam"],
        &[
            "NotoSerifMalayalam-Regular.ttf",
            "NotoSerifMalayalam-Bold.ttf",
        ],
        CORE,
        &[(0x0D00, 0x0D7F)],
    ),
    script(
        "Sinhala",
        &["Noto Serif Sinhala"],
        &["NotoSerifSinhala-Regular.ttf", "NotoSerifSinhala-Bold.ttf"],
        CORE,
        &[(0x0D80, 0x0DFF)],
    ),
    script(
        "Thai",
        &["Noto Serif Thai"],
        &["NotoSerifThai-Regular.ttf", "NotoSerifThai-Bold.ttf"],
        CORE,
        &[(0x0E00, 0x0E7F)],
    ),
    script(
        "Lao",
        &["Noto Serif Lao"],
        &["NotoSerifLao-Regular.ttf", "NotoSerifLao-Bold.ttf"],
        CORE,
        &[(0x0E80, 0x0EFF)],
    ),
    script(
        "Tibetan",
        &["Noto Serif Tibetan"],
        &["NotoSerifTibetan-Regular.ttf", "NotoSerifTibetan-Bold.ttf"],
        CORE,
        &[(0x0F00, 0x0FFF)],
    ),
    script(
        "Myanmar",
        &["Noto Serif Myanmar"],
        &["NotoSerifMyanmar-Regular.ttf", "NotoSerifMyanmar-Bold.ttf"],
        CORE,
        &[(0x1000, 0x109F)],
    ),
    script(
        "Ethiopic",
        &["Noto Serif Ethiopic"],
        &[
            "NotoSerifEthiopic-Regular.ttf",
            "NotoSerifEthiopic-Bold.ttf",
        ],
        CORE,
        &[(0x1200, 0x139F)],
    ),
    script(
        "Khmer",
        &["Noto Serif Khmer"],
        &["NotoSerifKhmer-Regular.ttf", "NotoSerifKhmer-Bold.ttf"],
        CORE,
        &[(0x1780, 0x17FF)],
    ),
    script(
        "Chinese, Japanese or Korean",
        CJK_FAMILIES,
        &["NotoSerifCJK-Regular.ttc", "NotoSerifCJK-Bold.ttc"],
        CJK,
        &[
            (0x1100, 0x11FF),
            (0x2E80, 0x2FDF),
            (0x3000, 0x303F),
            (0x3040, 0x30FF),
            (0x3130, 0x318F),
            (0x31F0, 0x31FF),
            (0x3400, 0x4DBF),
            (0x4E00, 0x9FFF),
            (0xAC00, 0xD7AF),
            (0xF900, 0xFAFF),
            (0xFF00, 0xFFEF),
            (0x20000, 0x3134F),
        ],
    ),
];

impl Script {
    /// The script `c` belongs to, when Bindery prints it from the system's fonts.
    pub fn of(c: char) -> Option<&'static Script> {
        let c = u32::from(c);
        SCRIPTS
            .iter()
            .find(|s| s.ranges.iter().any(|(from, to)| (*from..=*to).contains(&c)))
    }

    /// The families in the order a book in `language` wants them: for Chinese, Japanese and
    /// Korean, the book's own forms of the characters first (a Japanese book's kanji are not
    /// a Chinese book's hanzi).
    pub fn families_for(&self, language: &str) -> Vec<&'static str> {
        let mut families = self.families.to_vec();
        if families.len() > 1 {
            let lower = language.to_ascii_lowercase();
            let first = match lower.split(['-', '_']).next().unwrap_or("") {
                "ja" => Some("Noto Serif CJK JP"),
                "ko" => Some("Noto Serif CJK KR"),
                "zh" if lower.contains("hant") || lower.ends_with("-tw") => {
                    Some("Noto Serif CJK TC")
                }
                "zh" if lower.ends_with("-hk") || lower.ends_with("-mo") => {
                    Some("Noto Serif CJK HK")
                }
                _ => None,
            };
            if let Some(first) = first {
                families.retain(|f| *f != first);
                families.insert(0, first);
            }
        }
        families
    }
}

/// The scripts of `text` that Bindery prints from the system's fonts.
pub fn scripts_in(text: &str) -> BTreeSet<&'static Script> {
    let mut found = BTreeSet::new();
    for c in text.chars() {
        // The built-in fonts draw all of Latin, Greek and Cyrillic.
        if c < '\u{0590}' {
            continue;
        }
        if let Some(script) = Script::of(c) {
            found.insert(script);
        }
    }
    found
}

/// Where the system keeps its fonts.
const SYSTEM_FONT_DIRS: &[&str] = &["/usr/share/fonts", "/usr/local/share/fonts"];
/// How deep under them a font file is looked for (Debian's are two deep).
const MAX_DEPTH: usize = 4;

/// The bytes of each font file of `scripts` found on this machine, read once per process; the
/// bold ones only when `bold` (a Chinese, Japanese or Korean face is 26 MB). A script none of
/// whose files is found has none here.
pub fn files(scripts: &BTreeSet<&'static Script>, bold: bool) -> Vec<FontFile> {
    scripts
        .iter()
        .flat_map(|script| script.files.iter())
        .filter(|name| bold || !name.contains("-Bold"))
        .filter_map(|name| read(name))
        .collect()
}

/// Where this machine keeps `script`'s files, those it has.
pub fn found_files(script: &Script) -> Vec<PathBuf> {
    script
        .files
        .iter()
        .filter_map(|name| found().get(*name).cloned())
        .collect()
}

/// A font file's name (as [`Script::files`] gives it) and bytes, shared by everything that
/// uses it.
#[derive(Debug, Clone)]
pub struct FontFile {
    pub name: &'static str,
    data: Arc<Vec<u8>>,
}

impl AsRef<[u8]> for FontFile {
    fn as_ref(&self) -> &[u8] {
        &self.data
    }
}

/// The file named `name` under the system's font folders, read on first use.
fn read(name: &'static str) -> Option<FontFile> {
    static READ: OnceLock<Mutex<HashMap<&'static str, Option<FontFile>>>> = OnceLock::new();
    let mut read = READ
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    read.entry(name)
        .or_insert_with(|| {
            let path = found().get(name)?;
            std::fs::read(path).ok().map(|data| FontFile {
                name,
                data: Arc::new(data),
            })
        })
        .clone()
}

/// The font files under the system's folders that [`SCRIPTS`] names, by file name; listed
/// once per process, by name alone.
fn found() -> &'static HashMap<String, PathBuf> {
    static FOUND: OnceLock<HashMap<String, PathBuf>> = OnceLock::new();
    FOUND.get_or_init(|| {
        let wanted: BTreeSet<&str> = SCRIPTS
            .iter()
            .flat_map(|s| s.files.iter().copied())
            .collect();
        let mut found = HashMap::new();
        for dir in SYSTEM_FONT_DIRS {
            walk(Path::new(dir), 0, &wanted, &mut found);
        }
        found
    })
}

fn walk(dir: &Path, depth: usize, wanted: &BTreeSet<&str>, found: &mut HashMap<String, PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    // In name order, so that of two copies the same one is used on every run.
    entries.sort();
    for path in entries {
        if path.is_dir() {
            if depth < MAX_DEPTH {
                walk(&path, depth + 1, wanted, found);
            }
        } else if let Some(name) = path.file_name().and_then(|n| n.to_str())
            && wanted.contains(name)
        {
            found.entry(name.to_owned()).or_insert(path);
        }
    }
}

/// What the author reads when the print edition cannot draw one of the book's scripts.
pub fn missing_script_message(scripts: &[&Script], sample: &str) -> String {
    let names: Vec<&str> = scripts.iter().map(|s| s.name).collect();
    let packages: BTreeSet<&str> = scripts.iter().map(|s| s.package).collect();
    let families: BTreeSet<&str> = scripts.iter().map(|s| s.families[0]).collect();
    format!(
        "the print edition has no typeface for the book's {} text ({sample}): this server lacks \
         the fonts Bindery prints it in ({}; Debian's {}). The ebooks are made. Ask the \
         server's operator to install them, or to add a font for the script to FONTS_DIR, then \
         upload the book again",
        names.join(" and "),
        families.into_iter().collect::<Vec<_>>().join(", "),
        packages.into_iter().collect::<Vec<_>>().join(" and "),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_books_scripts_are_found_in_its_text_and_latin_greek_cyrillic_need_none() {
        let names = |text: &str| -> Vec<&str> { scripts_in(text).iter().map(|s| s.name).collect() };
        assert!(names("The Café — Ἀθῆναι, Москва").is_empty());
        assert_eq!(names("مرحبا and שלום"), ["Arabic", "Hebrew"]);
        assert_eq!(names("नमस्ते"), ["Devanagari"]);
        assert_eq!(
            names("東京 ひらがな 한국어"),
            ["Chinese, Japanese or Korean"]
        );
    }

    #[test]
    fn the_books_language_chooses_the_forms_of_its_characters() {
        let cjk = Script::of('日').expect("CJK");
        assert_eq!(cjk.families_for("ja")[0], "Noto Serif CJK JP");
        assert_eq!(cjk.families_for("zh-Hant")[0], "Noto Serif CJK TC");
        assert_eq!(cjk.families_for("zh-TW")[0], "Noto Serif CJK TC");
        assert_eq!(cjk.families_for("zh-Hans")[0], "Noto Serif CJK SC");
        assert_eq!(cjk.families_for("ko-KR")[0], "Noto Serif CJK KR");
        assert_eq!(cjk.families_for("en")[0], "Noto Serif CJK SC");
        assert_eq!(cjk.families_for("ja").len(), CJK_FAMILIES.len());
    }
}
