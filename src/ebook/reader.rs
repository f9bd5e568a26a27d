//! The web reader: a static site per book (contents, one page per chapter, themes, font
//! size, remembered position), with a Web App Manifest and a service worker so that after
//! one visit it reads offline and installs to a home screen.

use std::collections::BTreeMap;

use super::Book;

/// Builds the site: `(path, bytes)` pairs, paths relative to the reader's root.
pub fn build(
    _book: &Book,
    _chapters: &[String],
    _resources: &BTreeMap<String, Vec<u8>>,
) -> anyhow::Result<Vec<(String, Vec<u8>)>> {
    anyhow::bail!("web reader not built yet")
}
