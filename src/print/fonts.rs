//! The print edition's fonts: those built into the binary (typst-assets' Libertinus Serif, New
//! Computer Modern and DejaVu Sans Mono, which cover Latin, Greek and Cyrillic), and the
//! operator's own from `FONTS_DIR`, for the scripts those lack (Arabic, Hebrew, Devanagari,
//! Chinese, Japanese, Korean…). Typst falls back to any font of the book that has a glyph the
//! template's fonts do not, so adding a font is all a script needs.
//!
//! The operator's fonts are listed once per process ([`use_fonts_from`], before the first
//! book is typeset) by reading each file's tables, and a file's bytes are read only when a
//! book needs one of its faces: a directory of large CJK collections costs a typesetting
//! child only the faces it uses.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::Context;
use typst::foundations::Bytes;
use typst::text::{Font, FontBook, FontInfo};
use typst::utils::LazyHash;

use crate::config::Config;

/// Files under `FONTS_DIR` looked at, at most, and how deep: a mistaken `/` costs seconds,
/// not minutes.
const MAX_FILES: usize = 2_000;
const MAX_DEPTH: usize = 6;
/// Faces read from one file, at most. The largest collections made (a super-OTC of a CJK
/// family in every weight, Iosevka's in every width) hold a few hundred; a file's header may
/// claim four billion, and each claimed face is a parse that fails (12 bytes that claimed
/// `0xFFFFFFFF` cost 17 s of processor time in every typesetting child).
const MAX_FACES_PER_FILE: u32 = 512;

/// One face of an operator's font file, loaded on first use.
struct Slot {
    path: PathBuf,
    index: u32,
    font: OnceLock<Option<Font>>,
}

impl Slot {
    fn get(&self) -> Option<Font> {
        self.font
            .get_or_init(|| {
                let data = std::fs::read(&self.path).ok()?;
                Font::new(Bytes::new(data), self.index)
            })
            .clone()
    }
}

/// The operator's fonts, once listed.
static OPERATORS: OnceLock<Vec<(FontInfo, Slot)>> = OnceLock::new();

/// What listing `FONTS_DIR` found, and what it left out.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Listing {
    /// Faces the books may use.
    pub faces: usize,
    /// What was not listed, each in words for the operator: a folder past the depth, files
    /// past the count, a file's faces past the count, a file that could not be read.
    pub skipped: Vec<String>,
}

/// Lists the fonts under `dir` (`.ttf`, `.otf`, `.ttc`, `.otc`, in it and its folders) for
/// every book this process typesets from now on, and says what it found and what it left
/// out. Call it once, before the first book; a second call changes nothing.
pub fn use_fonts_from(dir: &Path) -> anyhow::Result<Listing> {
    let (listing, faces) = scan(dir)?;
    let _ = OPERATORS.set(faces);
    Ok(listing)
}

/// What [`use_fonts_from`] would find under `dir`, for the operator, without using it.
pub fn list_fonts(dir: &Path) -> anyhow::Result<Listing> {
    scan(dir).map(|(listing, _)| listing)
}

/// Makes the operator's `FONTS_DIR` fonts available to the print edition, in this process.
/// A directory that cannot be listed leaves the built-in fonts alone: the book still prints,
/// its missing characters named in its report. What the listing leaves out the worker said
/// once, at its start ([`announce_operator_fonts`]).
pub fn use_operator_fonts(config: &Config) {
    let Some(dir) = &config.fonts_dir else {
        return;
    };
    match use_fonts_from(dir) {
        Ok(listing) => {
            tracing::debug!(dir = %dir.display(), faces = listing.faces, skipped = listing.skipped.len(), "the operator's fonts are listed")
        }
        Err(e) => tracing::warn!(
            dir = %dir.display(),
            error = format!("{e:#}"),
            "FONTS_DIR could not be read; the print edition uses its own fonts only"
        ),
    }
}

/// Tells the operator, once, what the print edition finds in `FONTS_DIR`: how many faces, and
/// each thing it leaves out (a file past the count, a collection's faces past the count, a
/// file it cannot read) with why. Every typesetting child lists the folder again, silently.
pub fn announce_operator_fonts(config: &Config) {
    let Some(dir) = &config.fonts_dir else {
        return;
    };
    match list_fonts(dir) {
        Ok(listing) => {
            for skipped in &listing.skipped {
                tracing::warn!(dir = %dir.display(), skipped = %skipped, "FONTS_DIR: a font the print edition will not use");
            }
            tracing::info!(dir = %dir.display(), faces = listing.faces, skipped = listing.skipped.len(), "FONTS_DIR listed for the print edition");
        }
        Err(e) => tracing::warn!(
            dir = %dir.display(),
            error = format!("{e:#}"),
            "FONTS_DIR could not be read; the print edition uses its own fonts only"
        ),
    }
}

/// The faces under `dir`, each a slot to load on first use, and what was left out.
fn scan(dir: &Path) -> anyhow::Result<(Listing, Vec<(FontInfo, Slot)>)> {
    let mut walk = Walk::default();
    walk.collect(dir, 0)
        .with_context(|| format!("listing the fonts in {}", dir.display()))?;
    let Walk { mut files, skipped } = walk;
    files.truncate(MAX_FILES);
    files.sort();
    let mut listing = Listing { faces: 0, skipped };
    let mut faces = Vec::new();
    for path in files {
        let data = match std::fs::read(&path) {
            Ok(data) => data,
            Err(e) => {
                listing
                    .skipped
                    .push(format!("{} could not be read ({e})", path.display()));
                continue;
            }
        };
        let claimed = match ttf_parser::fonts_in_collection(&data) {
            // One font, not a collection.
            None => 1,
            // A collection's header is followed by a 4-byte offset for each face: one that
            // claims more than its file can hold is damaged (and parsing it asks for a table
            // of gigabytes).
            Some(claimed) if u64::from(claimed) * 4 + 12 > data.len() as u64 => {
                listing.skipped.push(format!(
                    "{} claims {claimed} faces, more than its {} bytes could hold: it is damaged, and was not read",
                    path.display(),
                    data.len()
                ));
                continue;
            }
            Some(claimed) => claimed,
        };
        if claimed > MAX_FACES_PER_FILE {
            listing.skipped.push(format!(
                "{} claims {claimed} faces; only its first {MAX_FACES_PER_FILE} were looked at",
                path.display()
            ));
        }
        let before = faces.len();
        for index in 0..claimed.min(MAX_FACES_PER_FILE) {
            let Some(info) = FontInfo::new(&data, index) else {
                continue;
            };
            faces.push((
                info,
                Slot {
                    path: path.clone(),
                    index,
                    font: OnceLock::new(),
                },
            ));
        }
        if faces.len() == before {
            listing
                .skipped
                .push(format!("{} holds no font Bindery can read", path.display()));
        }
    }
    listing.faces = faces.len();
    Ok((listing, faces))
}

/// The font files under a folder, and what was left out.
#[derive(Default)]
struct Walk {
    files: Vec<PathBuf>,
    skipped: Vec<String>,
}

impl Walk {
    fn collect(&mut self, dir: &Path, depth: usize) -> std::io::Result<()> {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .collect();
        // In name order, so that what a limit leaves out does not depend on the disk.
        entries.sort();
        for path in entries {
            if self.files.len() > MAX_FILES {
                return Ok(());
            }
            if path.is_dir() {
                if depth >= MAX_DEPTH {
                    self.skipped.push(format!(
                        "{} is more than {MAX_DEPTH} folders deep, and was not looked in",
                        path.display()
                    ));
                } else if let Err(e) = self.collect(&path, depth + 1) {
                    // A folder that cannot be read is skipped, not the whole directory.
                    self.skipped
                        .push(format!("{} could not be read ({e})", path.display()));
                }
            } else if is_font(&path) {
                if self.files.len() == MAX_FILES {
                    self.skipped.push(format!(
                        "{} and every font file after it: only the first {MAX_FILES} are used",
                        path.display()
                    ));
                }
                // One past the limit marks the walk as full; it is never listed.
                self.files.push(path);
            }
        }
        Ok(())
    }
}

fn is_font(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()).is_some_and(|e| {
        matches!(
            e.to_ascii_lowercase().as_str(),
            "ttf" | "otf" | "ttc" | "otc"
        )
    })
}

/// The fonts every book may use: the built-in ones, then the operator's.
pub(crate) struct Fonts {
    infos: Vec<FontInfo>,
    builtin: Vec<Font>,
}

impl Fonts {
    /// Face `index` of the built-in and the operator's faces.
    fn get(&self, index: usize) -> Option<Font> {
        match self.builtin.get(index) {
            Some(font) => Some(font.clone()),
            None => OPERATORS
                .get()?
                .get(index - self.builtin.len())
                .and_then(|(_, slot)| slot.get()),
        }
    }
}

/// The fonts, gathered once per process.
fn fonts() -> &'static Fonts {
    static FONTS: OnceLock<Fonts> = OnceLock::new();
    FONTS.get_or_init(|| {
        let builtin: Vec<Font> = typst_assets::fonts()
            .chain(crate::style::fonts::bundled_files())
            .flat_map(|data| Font::iter(Bytes::new(data)))
            .collect();
        let infos = builtin
            .iter()
            .map(|f| f.info().clone())
            .chain(
                OPERATORS
                    .get()
                    .into_iter()
                    .flatten()
                    .map(|(info, _)| info.clone()),
            )
            .collect();
        Fonts { infos, builtin }
    })
}

/// The families of the operator's fonts, in the order they were listed: the template names
/// them after its own, so that a script only they draw prints in them.
pub(crate) fn operator_families() -> Vec<String> {
    let mut families: Vec<String> = Vec::new();
    for (info, _) in OPERATORS.get().into_iter().flatten() {
        if !families.contains(&info.family) {
            families.push(info.family.clone());
        }
    }
    families
}

/// The faces of a system font file, parsed once per process (a CJK collection holds five).
fn parsed(file: &crate::script_fonts::FontFile) -> Vec<Font> {
    type Parsed = Vec<(&'static str, Vec<Font>)>;
    static PARSED: OnceLock<std::sync::Mutex<Parsed>> = OnceLock::new();
    let key = file.name;
    let mut parsed = PARSED
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((_, fonts)) = parsed.iter().find(|(k, _)| *k == key) {
        return fonts.clone();
    }
    let fonts: Vec<Font> = Font::iter(Bytes::new(file.clone())).collect();
    parsed.push((key, fonts.clone()));
    fonts
}

/// What decides a book's fonts: the scripts it is written in that the built-in faces do not
/// draw, and whether it sets anything bold. Worked out once a book ([`FontNeeds::of`]) and
/// handed to every piece, so that every piece's world has the same faces in the same order
/// (the glyph union names faces by their index, `glyphs.rs`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FontNeeds {
    /// [`crate::script_fonts::Script::name`]s, in the scripts' order.
    pub scripts: Vec<String>,
    pub bold: bool,
}

impl FontNeeds {
    /// What the book's printed text (`text`, its chapters, notes and metadata) needs;
    /// `bold` when it sets anything bold (strong text, a table's head).
    pub fn of(text: &str, bold: bool) -> FontNeeds {
        FontNeeds {
            scripts: crate::script_fonts::scripts_in(text)
                .into_iter()
                .map(|s| s.name.to_owned())
                .collect(),
            bold,
        }
    }

    pub fn scripts(&self) -> BTreeSet<&'static crate::script_fonts::Script> {
        crate::script_fonts::SCRIPTS
            .iter()
            .filter(|s| self.scripts.iter().any(|n| n == s.name))
            .collect()
    }
}

/// The fonts of one book: every book's, the system's faces for the book's own scripts
/// ([`crate::script_fonts`]), and its house style's.
pub(crate) struct BookFonts {
    pub book: LazyHash<FontBook>,
    system: Vec<Font>,
}

impl BookFonts {
    /// The fonts for a book that needs `needs`, whose resources are `resources` (a house
    /// style's fonts among them: `style::house::own_faces`).
    pub fn for_needs(
        needs: &FontNeeds,
        resources: &std::collections::BTreeMap<String, Vec<u8>>,
    ) -> BookFonts {
        // Bold faces only for a book that sets something bold (a CJK face is 26 MB).
        let system: Vec<Font> = crate::script_fonts::files(&needs.scripts(), needs.bold)
            .into_iter()
            .flat_map(|file| parsed(&file))
            .chain(
                crate::style::house::own_faces(resources)
                    .into_iter()
                    .flat_map(|face| Font::iter(Bytes::new(face.bytes.to_vec()))),
            )
            .collect();
        let mut book = FontBook::new();
        for info in fonts().infos.iter().chain(system.iter().map(Font::info)) {
            book.push(info.clone());
        }
        BookFonts {
            book: LazyHash::new(book),
            system,
        }
    }

    /// How many faces [`BookFonts::book`] lists.
    pub fn len(&self) -> usize {
        fonts().infos.len() + self.system.len()
    }

    /// The index of `font`, a face of this book's (as a laid-out page names it).
    pub fn index_of(&self, font: &Font) -> Option<usize> {
        (0..self.len())
            .find(|&i| self.book.info(i) == Some(font.info()) && self.get(i).as_ref() == Some(font))
    }

    /// Face `index` of [`BookFonts::book`].
    pub fn get(&self, index: usize) -> Option<Font> {
        let shared = fonts();
        match index.checked_sub(shared.infos.len()) {
            None => shared.get(index),
            Some(own) => self.system.get(own).cloned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Twelve bytes that claim four billion faces: each claimed face was a parse that failed,
    /// 17 s of processor time in every typesetting child. Now a collection that claims more
    /// faces than its file can hold is not read, and one that holds more than 512 is read for
    /// its first 512; the listing says which, naming the file.
    #[test]
    fn a_collection_that_claims_more_faces_than_it_can_hold_is_named_and_left_out() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut ttc = b"ttcf".to_vec();
        ttc.extend_from_slice(&[0, 1, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF]);
        std::fs::write(dir.path().join("claims.ttc"), &ttc).expect("write");
        // Room for 600 offsets (all of them nothing): looked at for 512.
        let mut roomy = b"ttcf".to_vec();
        roomy.extend_from_slice(&[0, 1, 0, 0]);
        roomy.extend_from_slice(&600u32.to_be_bytes());
        roomy.extend_from_slice(&[0; 600 * 4]);
        std::fs::write(dir.path().join("roomy.ttc"), &roomy).expect("write");
        let listing = list_fonts(dir.path()).expect("listed");
        assert_eq!(listing.faces, 0);
        let said = |file: &str, what: &str| {
            listing
                .skipped
                .iter()
                .any(|s| s.contains(file) && s.contains(what))
        };
        assert!(
            said("claims.ttc", "4294967295 faces"),
            "{:?}",
            listing.skipped
        );
        assert!(said("claims.ttc", "damaged"), "{:?}", listing.skipped);
        assert!(said("roomy.ttc", "first 512"), "{:?}", listing.skipped);
    }

    /// Past the count of files, the listing stops and names the first file it left out.
    #[test]
    fn the_files_past_the_count_are_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        for i in 0..=MAX_FILES {
            std::fs::write(dir.path().join(format!("f{i:05}.ttf")), b"not a font").expect("write");
        }
        let listing = list_fonts(dir.path()).expect("listed");
        let past: Vec<&String> = listing
            .skipped
            .iter()
            .filter(|s| s.contains("only the first 2000"))
            .collect();
        assert_eq!(past.len(), 1, "{:?}", &listing.skipped[..3]);
        assert!(
            past[0].contains(&format!("f{MAX_FILES:05}.ttf")),
            "{past:?}"
        );
        // The files it did look at, none a font, are each named too.
        assert!(
            listing
                .skipped
                .iter()
                .any(|s| s.contains("f00000.ttf") && s.contains("no font")),
            "{:?}",
            &listing.skipped[..3]
        );
    }
}
