//! The EPUB 3 package: OPF, navigation, cover, title and copyright pages, chapters, images
//! and stylesheet, zipped deterministically (`mimetype` first and stored, fixed timestamps,
//! stable order).

use std::collections::BTreeMap;

use super::Book;

/// Builds the EPUB. `chapters[i]` is [`super::xhtml::render_chapter`]`(book, i, Epub).body`;
/// `resources` holds image bytes by image id, and the cover under its file name.
pub fn package(
    _book: &Book,
    _chapters: &[String],
    _resources: &BTreeMap<String, Vec<u8>>,
) -> anyhow::Result<Vec<u8>> {
    anyhow::bail!("EPUB writer not built yet")
}
