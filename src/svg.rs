//! SVG as Bindery reads it itself: its text set in the faces the binary bundles (and the
//! system's faces for the scripts of the text that those lack), never the machine's other
//! fonts, so every server draws the same; and nothing outside the SVG read, whatever its
//! `<image href>` names.
//!
//! The store's JPEG of a generated cover is drawn from such a tree ([`parse`]). The print
//! edition hands Typst SVGs whose text is already outlines ([`outlined`]): Typst's fallback for
//! an SVG's text can spin forever on a character that one of its faces claims but does not
//! shape (a generated cover whose author was "⁓", U+2053, held a worker until the processor
//! limit ended it; typst#7178, typst#7279). usvg's own fallback never offers a face twice.

use std::sync::{Arc, OnceLock};

use resvg::usvg::{self, fontdb};

/// `svg` read into a tree, its text laid out in [`fonts_for`] its own text.
pub fn parse(svg: &[u8]) -> anyhow::Result<usvg::Tree> {
    parse_with(svg, fonts_for(&String::from_utf8_lossy(svg)))
}

/// [`parse`] with the faces given.
pub fn parse_with(svg: &[u8], fontdb: Arc<fontdb::Database>) -> anyhow::Result<usvg::Tree> {
    let options = usvg::Options {
        fontdb,
        image_href_resolver: usvg::ImageHrefResolver {
            resolve_data: usvg::ImageHrefResolver::default_data_resolver(),
            // The default reads any path on the machine: a manuscript's SVG must not.
            resolve_string: Box::new(|_, _| None),
        },
        ..usvg::Options::default()
    };
    Ok(usvg::Tree::from_data(svg, &options)?)
}

/// `svg` with its text turned into outlines, drawn as [`parse`] draws it; `None` when it holds
/// no text (or is not an SVG usvg reads), so that it is used as it is.
pub fn outlined(svg: &[u8]) -> Option<Vec<u8>> {
    const GZIP: [u8; 2] = [0x1f, 0x8b];
    // Most images are not SVG and most SVGs hold no text: neither is worth a parse.
    let maybe_text = svg.starts_with(&GZIP) || svg.windows(5).any(|w| w == b"<text");
    if !maybe_text {
        return None;
    }
    let tree = parse(svg).ok()?;
    holds_text(&tree).then(|| tree.to_string(&usvg::WriteOptions::default()).into_bytes())
}

/// Whether `tree` sets any text, an embedded SVG's included. (usvg 0.45's own
/// `Tree::has_text_nodes` answers `true` for every tree: its loop's fall-through returns
/// `true`.)
pub fn holds_text(tree: &usvg::Tree) -> bool {
    fn group(g: &usvg::Group) -> bool {
        g.children().iter().any(|node| {
            let mut text = matches!(node, usvg::Node::Text(_));
            if let usvg::Node::Image(image) = node
                && let usvg::ImageKind::SVG(inner) = image.kind()
            {
                text |= group(inner.root());
            }
            node.subroots(|sub| text |= group(sub));
            text
        })
    }
    group(tree.root())
}

/// The bundled fonts, and the system's faces for the scripts of `text` that they lack (a
/// Japanese title), which usvg falls back to for those characters.
pub fn fonts_for(text: &str) -> Arc<fontdb::Database> {
    // The cover's words are regular or italic: no bold faces.
    let files = crate::script_fonts::files(&crate::script_fonts::scripts_in(text), false);
    if files.is_empty() {
        return fonts();
    }
    let mut db = (*fonts()).clone();
    for file in files {
        db.load_font_source(fontdb::Source::Binary(Arc::new(file)));
    }
    Arc::new(db)
}

/// The bundled fonts, loaded once; `serif` (the generated cover's last choice) is Libertinus.
pub fn fonts() -> Arc<fontdb::Database> {
    static FONTS: OnceLock<Arc<fontdb::Database>> = OnceLock::new();
    FONTS
        .get_or_init(|| {
            let mut db = fontdb::Database::new();
            for font in typst_assets::fonts() {
                db.load_font_source(fontdb::Source::Binary(Arc::new(font)));
            }
            db.set_serif_family("Libertinus Serif");
            Arc::new(db)
        })
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<u8> {
        format!(
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="400" height="100"><text x="10" y="60" font-family="Georgia, serif" font-size="40">{text}</text></svg>"#
        )
        .into_bytes()
    }

    #[test]
    fn text_becomes_outlines_and_a_picture_without_text_is_left_alone() {
        let outlined = outlined(&words("A Title ⁓")).expect("outlined");
        let outlined = String::from_utf8(outlined).expect("UTF-8");
        assert!(!outlined.contains("<text"), "{outlined}");
        assert!(outlined.contains("<path"), "{outlined}");
        let picture = br#"<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"><rect width="4" height="4"/></svg>"#;
        assert_eq!(super::outlined(picture), None);
        let picture = parse(picture).expect("parsed");
        assert!(!holds_text(&picture));
        assert!(holds_text(&parse(&words("Hello")).expect("parsed")));
        assert_eq!(super::outlined(b"\x89PNG\r\n\x1a\n"), None);
    }

    /// An `<image>` naming a file on the machine draws nothing: the file is not read.
    #[test]
    fn an_image_naming_a_file_is_not_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let png = dir.path().join("secret.png");
        let mut bytes = Vec::new();
        image::RgbImage::from_pixel(2, 2, image::Rgb([255, 0, 0]))
            .write_to(
                &mut std::io::Cursor::new(&mut bytes),
                image::ImageFormat::Png,
            )
            .expect("png");
        std::fs::write(&png, bytes).expect("write");
        let svg = format!(
            r#"<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="4" height="4"><image width="4" height="4" xlink:href="{}"/></svg>"#,
            png.display()
        );
        // (usvg's own resolver would have read it.)
        let default = usvg::Tree::from_data(svg.as_bytes(), &usvg::Options::default());
        assert!(default.expect("parsed").root().has_children());
        let tree = parse(svg.as_bytes()).expect("parsed");
        assert!(
            !tree.root().has_children(),
            "the file's image was read into the tree"
        );
    }
}
