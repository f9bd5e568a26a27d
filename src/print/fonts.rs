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

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::Context;
use typst::foundations::Bytes;
use typst::text::{Font, FontBook, FontInfo};
use typst::utils::LazyHash;

/// Files under `FONTS_DIR` looked at, at most, and how deep: a mistaken `/` costs seconds,
/// not minutes.
const MAX_FILES: usize = 2_000;
const MAX_DEPTH: usize = 6;

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

/// Lists the fonts under `dir` (`.ttf`, `.otf`, `.ttc`, `.otc`, in it and its folders) for
/// every book this process typesets from now on, and says how many faces it found. Call it
/// once, before the first book; a second call changes nothing.
pub fn use_fonts_from(dir: &Path) -> anyhow::Result<usize> {
    let mut files = Vec::new();
    collect(dir, 0, &mut files)
        .with_context(|| format!("listing the fonts in {}", dir.display()))?;
    files.sort();
    let mut faces = Vec::new();
    for path in files {
        let Ok(data) = std::fs::read(&path) else {
            continue;
        };
        for (index, info) in FontInfo::iter(&data).enumerate() {
            let Ok(index) = u32::try_from(index) else {
                break;
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
    }
    let count = faces.len();
    let _ = OPERATORS.set(faces);
    Ok(count)
}

fn collect(dir: &Path, depth: usize, files: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        if files.len() >= MAX_FILES {
            return Ok(());
        }
        let path = entry?.path();
        if path.is_dir() {
            if depth < MAX_DEPTH {
                // A folder that cannot be read is skipped, not the whole directory.
                let _ = collect(&path, depth + 1, files);
            }
        } else if is_font(&path) {
            files.push(path);
        }
    }
    Ok(())
}

fn is_font(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()).is_some_and(|e| {
        matches!(
            e.to_ascii_lowercase().as_str(),
            "ttf" | "otf" | "ttc" | "otc"
        )
    })
}

/// Every font a book may use: the built-in ones first, then the operator's.
pub(crate) struct Fonts {
    pub book: LazyHash<FontBook>,
    builtin: Vec<Font>,
}

impl Fonts {
    /// Face `index` of [`Fonts::book`].
    pub fn get(&self, index: usize) -> Option<Font> {
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
pub(crate) fn fonts() -> &'static Fonts {
    static FONTS: OnceLock<Fonts> = OnceLock::new();
    FONTS.get_or_init(|| {
        let builtin: Vec<Font> = typst_assets::fonts()
            .flat_map(|data| Font::iter(Bytes::new(data)))
            .collect();
        let mut book = FontBook::from_fonts(&builtin);
        for (info, _) in OPERATORS.get().into_iter().flatten() {
            book.push(info.clone());
        }
        Fonts {
            book: LazyHash::new(book),
            builtin,
        }
    })
}
