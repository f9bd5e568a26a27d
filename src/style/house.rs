//! A house style: a style file uploaded with the font files and ornament images it names
//! (`POST /api/v1/styles`, or `bindery convert --style FILE` with its files beside it). It is
//! read and checked whole before any of it is kept, so that a style that would make a book fail
//! (a font that is not there, a face whose licence forbids embedding it, an ornament that is
//! text drawn as a picture) is refused with the reason, and one that is kept always works.
//!
//! A book styled with it carries copies of the files it uses among its own resources, under
//! [`resource_id`]: the book's later steps, a restyle and a removed house style never change
//! what a revision was made with.

use std::collections::BTreeSet;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::fonts::{Face, Families};
use super::{Style, StyleError, StyleName};

/// A style file's size, at most: the built-in ones are under 1 KB.
pub const MAX_SOURCE_BYTES: usize = 64 * 1024;
/// Files uploaded with a style, at most: two families of four faces, and ornaments.
pub const MAX_FILES: usize = 12;
/// A font file's size, at most. A family's face for books is 50 to 600 KB; a pan-script face
/// with every weight is what this refuses, since every EPUB and every reader would carry it.
pub const MAX_FONT_BYTES: usize = 4 * 1024 * 1024;
/// An ornament's file size and its sides in pixels, at most: a fleuron, not an illustration.
pub const MAX_IMAGE_BYTES: usize = 256 * 1024;
pub const MAX_IMAGE_SIDE: u32 = 1200;

/// What a file is to the style.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Font,
    Image,
}

/// A file of a house style: its name, as the style names it, and its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    pub name: String,
    pub kind: Kind,
    pub bytes: Bytes,
}

impl File {
    /// Its content's SHA-256, in hex: where the store keeps it.
    pub fn sha256(&self) -> String {
        hex::encode(Sha256::digest(&self.bytes))
    }

    /// Its media type, as the EPUB's manifest and the web serve it.
    pub fn media_type(&self) -> &'static str {
        media_type(&self.name)
    }
}

/// A file's media type, by its name's ending (which [`read`] checked against its bytes).
pub fn media_type(name: &str) -> &'static str {
    match extension(name).as_deref() {
        Some("otf") => "font/otf",
        Some("ttf") => "font/ttf",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        _ => "application/octet-stream",
    }
}

/// A house style, read and checked.
#[derive(Debug, Clone)]
pub struct House {
    pub name: StyleName,
    /// The file as written, for people to read and start from.
    pub source: String,
    pub style: Style,
    pub files: Vec<File>,
}

/// Where among a book's resources its house style's files are.
const PREFIX: &str = "style/";

/// Whether a book's resource (by id) is its house style's file.
pub fn is_style_file(id: &str) -> bool {
    id.starts_with(PREFIX)
}

/// The id a style's file has among a book's resources (`style/leaf.svg`).
pub fn resource_id(file: &str) -> String {
    format!("{PREFIX}{file}")
}

/// Reads a house style called `name` from its file (`source`) and the files uploaded with it,
/// checking all of it. The error names the file, the key and its line, and what to do.
pub fn read(name: &str, source: &[u8], files: Vec<(String, Bytes)>) -> Result<House, StyleError> {
    let name = StyleName::parse(name).map_err(plain)?;
    if super::builtin::get(name.as_str()).is_some() {
        return Err(plain(format!(
            "{name} is a built-in style's name: give the house style a name of its own \
             (for example house-{name})"
        )));
    }
    if source.len() > MAX_SOURCE_BYTES {
        return Err(plain(format!(
            "the style file is {} KB; a style file is at most {} KB",
            source.len() / 1024,
            MAX_SOURCE_BYTES / 1024
        )));
    }
    let source = String::from_utf8(source.to_vec())
        .map_err(|_| plain("the style file is not UTF-8 text: save it as UTF-8 TOML".to_owned()))?;
    let style = Style::parse(&source)?;
    if files.len() > MAX_FILES {
        return Err(plain(format!(
            "{} files came with the style; a style takes at most {MAX_FILES} (its font faces \
             and ornament images)",
            files.len()
        )));
    }
    let mut seen = BTreeSet::new();
    let mut own = Families::default();
    let mut checked = Vec::with_capacity(files.len());
    for (file_name, bytes) in files {
        check_name(&file_name)?;
        if !seen.insert(file_name.clone()) {
            return Err(plain(format!(
                "{file_name} came twice: send each file once"
            )));
        }
        let kind = match extension(&file_name).as_deref() {
            Some("ttf" | "otf") => {
                let face = font(&file_name, bytes.clone())?;
                if Families::bundled().has(&face.family) {
                    return Err(plain(format!(
                        "{file_name} is {}, which Bindery bundles already: name it in the \
                         style without uploading it",
                        face.family
                    )));
                }
                own.add(face);
                Kind::Font
            }
            Some("svg" | "png") => Kind::Image,
            _ => unreachable!("check_name allows these endings alone"),
        };
        let bytes = match kind {
            Kind::Image => image(&file_name, &bytes)?,
            Kind::Font => bytes,
        };
        checked.push(File {
            name: file_name,
            kind,
            bytes,
        });
    }
    let images: Vec<&str> = checked
        .iter()
        .filter(|f| f.kind == Kind::Image)
        .map(|f| f.name.as_str())
        .collect();
    style.check_files(&source, &own, &images)?;
    let used: BTreeSet<&str> = style.families().into_iter().collect();
    for file in &checked {
        let unused = match file.kind {
            Kind::Font => own
                .by_file(&file.name)
                .is_some_and(|face| !used.contains(face.family.as_str())),
            Kind::Image => style.scene_break.image.as_deref() != Some(file.name.as_str()),
        };
        if unused {
            return Err(plain(format!(
                "{} is not used by the style: name it in the style (`font` in [body] or \
                 [chapter], `image` in [scene_break]) or leave it out",
                file.name
            )));
        }
    }
    check_faces(&style, &own)?;
    Ok(House {
        name,
        source,
        style,
        files: checked,
    })
}

/// The faces a style sets its own families in must be there: the body's regular and italic
/// (a book's emphasis), and the titles' in the style and weight the style sets them. Print
/// draws no face that is missing (it would set emphasis upright), so one is refused, naming
/// the faces there are.
fn check_faces(style: &Style, own: &Families) -> Result<(), StyleError> {
    let c = &style.chapter;
    let body = [(false, false, "regular"), (true, false, "italic")];
    let title = [(
        c.title_style == super::FontStyle::Italic,
        c.title_weight == super::Weight::Bold,
        "title",
    )];
    let wanted = [
        (style.body.font.as_str(), &body[..]),
        (style.title_font(), &title[..]),
    ];
    for (family, needs) in wanted {
        let faces = own.faces(family);
        if faces.is_empty() {
            continue;
        }
        for &(italic, bold, what) in needs {
            if faces.iter().any(|f| f.italic == italic && f.bold == bold) {
                continue;
            }
            let files: Vec<&str> = faces.iter().map(|f| f.file.as_str()).collect();
            let face = match (italic, bold) {
                (false, false) => "regular (upright, not bold)",
                (true, false) => "italic",
                (false, true) => "bold",
                (true, true) => "bold italic",
            };
            let why = if what == "title" {
                "the style sets its titles in it"
            } else if italic {
                "a book's emphasis is set in it"
            } else {
                "the text is set in it"
            };
            return Err(plain(format!(
                "the font {family:?} has no {face} face among its files ({}): upload it too, \
                 since {why}",
                files.join(", ")
            )));
        }
    }
    Ok(())
}

/// A file name a style may name: a plain name with one of the endings Bindery reads.
fn check_name(name: &str) -> Result<(), StyleError> {
    let plain_name = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
        && !name.starts_with('.');
    if !plain_name {
        return Err(plain(format!(
            "{:?} is not a file name a style can use: 1 to 64 letters, digits, dots, hyphens \
             and underscores",
            name.chars().take(64).collect::<String>()
        )));
    }
    match extension(name).as_deref() {
        Some("ttf" | "otf" | "svg" | "png") => Ok(()),
        Some("woff" | "woff2") => Err(plain(format!(
            "{name}: a web font cannot be printed; upload the family's .ttf or .otf files"
        ))),
        Some("ttc" | "otc") => Err(plain(format!(
            "{name} is a font collection: upload each face as its own .ttf or .otf file"
        ))),
        _ => Err(plain(format!(
            "{name}: a style takes font files (.ttf, .otf) and ornament images (.svg, .png)"
        ))),
    }
}

fn extension(name: &str) -> Option<String> {
    name.rsplit_once('.')
        .map(|(_, ext)| ext.to_ascii_lowercase())
}

/// Reads a font file as Typst and the EPUB will: its family, whether italic and bold, and
/// whether its licence lets it be embedded.
pub fn font(name: &str, bytes: Bytes) -> Result<Face, StyleError> {
    if bytes.len() > MAX_FONT_BYTES {
        return Err(plain(format!(
            "{name} is {:.1} MB; a font file for books is at most {} MB (upload a subset \
             for the scripts your books use)",
            bytes.len() as f64 / 1_048_576.0,
            MAX_FONT_BYTES / 1_048_576
        )));
    }
    let Some(info) = typst::text::FontInfo::new(&bytes, 0) else {
        return Err(plain(format!(
            "{name} is not a font Bindery can read: upload the family's TrueType (.ttf) or \
             OpenType (.otf) files"
        )));
    };
    let Ok(face) = ttf_parser::Face::parse(&bytes, 0) else {
        return Err(plain(format!("{name} is not a font Bindery can read")));
    };
    // The EPUB and the reader carry the file, the PDF a subset of it: a face whose licence
    // says "restricted" forbids both (OpenType's fsType).
    if face.permissions() == Some(ttf_parser::Permissions::Restricted)
        || !face.is_subsetting_allowed()
        || !face.is_outline_embedding_allowed()
    {
        return Err(plain(format!(
            "{name} ({}) says its licence does not allow embedding it in documents, and every \
             edition embeds its fonts: choose a font under an open licence, such as the SIL \
             Open Font License",
            info.family
        )));
    }
    Ok(Face {
        family: info.family.clone(),
        file: name.to_owned(),
        italic: info.variant.style != typst::text::FontStyle::Normal,
        bold: info.variant.weight >= typst::text::FontWeight::SEMIBOLD,
        bytes,
    })
}

/// Checks an ornament image and gives the bytes a book carries: an SVG rewritten by usvg (no
/// script, nothing outside it, paths only), a PNG as it came.
fn image(name: &str, bytes: &[u8]) -> Result<Bytes, StyleError> {
    if bytes.len() > MAX_IMAGE_BYTES {
        return Err(plain(format!(
            "{name} is {} KB; an ornament is at most {} KB",
            bytes.len() / 1024,
            MAX_IMAGE_BYTES / 1024
        )));
    }
    let too_big = |w: f32, h: f32| {
        plain(format!(
            "{name} is {w:.0}×{h:.0} pixels; an ornament is at most {MAX_IMAGE_SIDE} on a side \
             (it is printed about a line high)"
        ))
    };
    if name.to_ascii_lowercase().ends_with(".svg") {
        let tree = crate::svg::parse(bytes)
            .map_err(|e| plain(format!("{name} is not an SVG image Bindery can read: {e}")))?;
        if crate::svg::holds_text(&tree) {
            return Err(plain(format!(
                "{name} holds text: an ornament is a picture, and words drawn in one are \
                 hidden from readers who listen and from search (Ace refuses them). Put \
                 words in the book, or use a glyph ornament (`ornament` in [scene_break])"
            )));
        }
        let size = tree.size();
        if size.width() > MAX_IMAGE_SIDE as f32 || size.height() > MAX_IMAGE_SIDE as f32 {
            return Err(too_big(size.width(), size.height()));
        }
        let clean = tree.to_string(&resvg::usvg::WriteOptions::default());
        return Ok(Bytes::from(clean.into_bytes()));
    }
    if !bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        return Err(plain(format!(
            "{name} is not a PNG image: its bytes say otherwise"
        )));
    }
    let (w, h) =
        image::ImageReader::with_format(std::io::Cursor::new(bytes), image::ImageFormat::Png)
            .into_dimensions()
            .map_err(|e| plain(format!("{name} is not a PNG image Bindery can read: {e}")))?;
    if w > MAX_IMAGE_SIDE || h > MAX_IMAGE_SIDE {
        return Err(too_big(w as f32, h as f32));
    }
    Ok(Bytes::copy_from_slice(bytes))
}

/// An error with no line: it is about a file, not a key.
fn plain(message: String) -> StyleError {
    StyleError {
        line: None,
        message,
    }
}

/// The families a book may use: the bundled ones, and its house style's own ([`own_faces`]).
pub fn families(resources: &std::collections::BTreeMap<String, Vec<u8>>) -> Families {
    let mut families = Families::bundled().clone();
    for face in own_faces(resources) {
        families.add(face);
    }
    families
}

/// A book's house style's fonts, among its `resources` (under [`resource_id`]; a
/// manuscript's images have plain names), in the order of their names.
pub fn own_faces(resources: &std::collections::BTreeMap<String, Vec<u8>>) -> Vec<Face> {
    resources
        .range(PREFIX.to_owned()..)
        .map_while(|(id, bytes)| Some((id.strip_prefix(PREFIX)?, bytes)))
        .filter(|(file, _)| matches!(extension(file).as_deref(), Some("ttf" | "otf")))
        .filter_map(|(file, bytes)| font(file, Bytes::copy_from_slice(bytes)).ok())
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
