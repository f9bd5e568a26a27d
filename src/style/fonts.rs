//! The typefaces styles may name: those bundled with Bindery (`fonts/`, each with its
//! licence, all under the SIL Open Font License without reserved names, subset to Latin,
//! Greek and Cyrillic by `scripts/subset-fonts`), Libertinus Serif from Typst's own assets,
//! and a house style's own files.
//!
//! What a family lacks (a script, an ornament) the print edition takes from the fonts after
//! it in the list (`print::template::body_fonts`): Libertinus Serif, then the system's faces
//! for the book's scripts. The ebooks name fallbacks in CSS ([`css_stack`]).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use bytes::Bytes;

/// The default style's typeface, which Typst brings.
pub const DEFAULT_FAMILY: &str = "Libertinus Serif";

/// One face of a family: its file, and whether it is italic or bold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Face {
    pub family: String,
    /// Its file name, as the EPUB and the reader carry it (`EBGaramond-Regular.ttf`).
    pub file: String,
    pub italic: bool,
    pub bold: bool,
    pub bytes: Bytes,
}

impl Face {
    /// The file's media type, as the EPUB's manifest declares it.
    pub fn media_type(&self) -> &'static str {
        if self.file.ends_with(".otf") {
            "font/otf"
        } else {
            "font/ttf"
        }
    }
}

macro_rules! bundled {
    ($(($family:literal, $folder:literal, $file:literal, $italic:literal, $bold:literal)),* $(,)?) => {
        &[$(($family, $file, $italic, $bold, include_bytes!(concat!("../../fonts/", $folder, "/", $file)) as &[u8]),)*]
    };
}

/// The bundled faces: family, file, italic, bold, bytes.
type Bundled = (&'static str, &'static str, bool, bool, &'static [u8]);

const BUNDLED: &[Bundled] = bundled![
    (
        "EB Garamond",
        "EBGaramond",
        "EBGaramond-Regular.ttf",
        false,
        false
    ),
    (
        "EB Garamond",
        "EBGaramond",
        "EBGaramond-Italic.ttf",
        true,
        false
    ),
    (
        "EB Garamond",
        "EBGaramond",
        "EBGaramond-Bold.ttf",
        false,
        true
    ),
    (
        "EB Garamond",
        "EBGaramond",
        "EBGaramond-BoldItalic.ttf",
        true,
        true
    ),
    (
        "Crimson Pro",
        "CrimsonPro",
        "CrimsonPro-Regular.ttf",
        false,
        false
    ),
    (
        "Crimson Pro",
        "CrimsonPro",
        "CrimsonPro-Italic.ttf",
        true,
        false
    ),
    (
        "Crimson Pro",
        "CrimsonPro",
        "CrimsonPro-Bold.ttf",
        false,
        true
    ),
    (
        "Crimson Pro",
        "CrimsonPro",
        "CrimsonPro-BoldItalic.ttf",
        true,
        true
    ),
    ("Cinzel", "Cinzel", "Cinzel-Regular.ttf", false, false),
    ("Cinzel", "Cinzel", "Cinzel-Bold.ttf", false, true),
    ("Inter", "Inter", "Inter-Regular.otf", false, false),
    ("Inter", "Inter", "Inter-Italic.otf", true, false),
    ("Inter", "Inter", "Inter-Bold.otf", false, true),
    ("Inter", "Inter", "Inter-BoldItalic.otf", true, true),
];

/// What a family falls back to in CSS, after itself: faces of its kind a reading system
/// may have, then the generic family.
fn css_fallback(family: &str) -> &'static str {
    match family {
        "EB Garamond" => {
            "Garamond, \"Adobe Garamond Pro\", \"Palatino Linotype\", Palatino, Georgia, serif"
        }
        "Crimson Pro" | "Libertinus Serif" => {
            "Georgia, \"Palatino Linotype\", Palatino, \"Book Antiqua\", \"Times New Roman\", serif"
        }
        "Cinzel" => "\"Trajan Pro\", Georgia, serif",
        "Inter" => "\"Helvetica Neue\", Helvetica, Arial, \"Noto Sans\", sans-serif",
        _ => "serif",
    }
}

/// `family` as a CSS font stack.
pub fn css_stack(family: &str) -> String {
    format!("\"{family}\", {}", css_fallback(family))
}

/// The faces of families, by family.
#[derive(Debug, Clone, Default)]
pub struct Families {
    faces: BTreeMap<String, Vec<Face>>,
}

impl Families {
    /// The bundled families, Libertinus Serif among them.
    pub fn bundled() -> &'static Families {
        static BUNDLED_FAMILIES: OnceLock<Families> = OnceLock::new();
        BUNDLED_FAMILIES.get_or_init(|| {
            let mut families = Families::default();
            for &(family, file, italic, bold, bytes) in BUNDLED {
                families.add(Face {
                    family: family.to_owned(),
                    file: file.to_owned(),
                    italic,
                    bold,
                    bytes: Bytes::from_static(bytes),
                });
            }
            for face in libertinus() {
                families.add(face);
            }
            families
        })
    }

    pub fn add(&mut self, face: Face) {
        self.faces
            .entry(face.family.clone())
            .or_default()
            .push(face);
    }

    pub fn has(&self, family: &str) -> bool {
        self.faces.contains_key(family)
    }

    pub fn names(&self) -> Vec<&str> {
        self.faces.keys().map(String::as_str).collect()
    }

    /// The face whose file is called `file` (`EBGaramond-Regular.ttf`).
    pub fn by_file(&self, file: &str) -> Option<&Face> {
        self.faces.values().flatten().find(|face| face.file == file)
    }

    /// The faces of `family`.
    pub fn faces(&self, family: &str) -> &[Face] {
        self.faces.get(family).map_or(&[], Vec::as_slice)
    }
}

/// The raw bytes of every bundled face, for the print edition's font book.
pub fn bundled_files() -> impl Iterator<Item = &'static [u8]> {
    BUNDLED.iter().map(|&(_, _, _, _, bytes)| bytes)
}

/// Libertinus Serif's regular, italic, bold and bold italic, from Typst's assets.
fn libertinus() -> Vec<Face> {
    const FILES: [(&str, bool, bool); 4] = [
        ("LibertinusSerif-Regular.otf", false, false),
        ("LibertinusSerif-Italic.otf", true, false),
        ("LibertinusSerif-Bold.otf", false, true),
        ("LibertinusSerif-BoldItalic.otf", true, true),
    ];
    let mut faces = Vec::new();
    for data in typst_assets::fonts() {
        let Ok(face) = ttf_parser::Face::parse(data, 0) else {
            continue;
        };
        let name = |id: u16| {
            face.names()
                .into_iter()
                .find(|n| n.name_id == id && n.is_unicode())
                .and_then(|n| n.to_string())
        };
        if name(ttf_parser::name_id::FAMILY).as_deref() != Some(DEFAULT_FAMILY) {
            continue;
        }
        let sub = name(ttf_parser::name_id::SUBFAMILY).unwrap_or_default();
        let (italic, bold) = (sub.contains("Italic"), sub.starts_with("Bold"));
        if let Some((file, _, _)) = FILES.iter().find(|f| f.1 == italic && f.2 == bold)
            && !faces.iter().any(|f: &Face| f.file == *file)
        {
            faces.push(Face {
                family: DEFAULT_FAMILY.to_owned(),
                file: (*file).to_owned(),
                italic,
                bold,
                bytes: Bytes::from_static(data),
            });
        }
    }
    faces
}

/// The faces of `style`'s families that a book carries when the style embeds them: the
/// regular and italic always, the bold ones only when the book sets bold.
pub fn embedded(style: &super::Style, families: &Families, bold: bool) -> Vec<Face> {
    if !style.body.embed {
        return Vec::new();
    }
    let mut out: Vec<Face> = Vec::new();
    for family in style.families() {
        for face in families.faces(family) {
            // Titles set bold need their bold face.
            let wanted = !face.bold
                || bold
                || (family == style.title_font()
                    && style.chapter.title_weight == super::Weight::Bold);
            if wanted && !out.iter().any(|f| f.file == face.file) {
                out.push(face.clone());
            }
        }
    }
    out
}
