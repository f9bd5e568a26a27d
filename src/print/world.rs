//! Typst's view of the world while it typesets one book: the generated source, the fonts
//! (`fonts.rs`: built into the binary, the operator's `FONTS_DIR`, and the system's faces for
//! the book's own scripts, `script_fonts.rs`), a fixed date, and the book's own images. Nothing else exists: any other
//! file, a package, the clock, is refused, so neither the template nor anything that slipped
//! past the emitter can read the machine or vary between runs.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, OnceLock, PoisonError};

use typst::diag::{FileError, FileResult};
use typst::foundations::{Bytes, Datetime};
use typst::syntax::{FileId, Source, VirtualPath};
use typst::text::{Font, FontBook};

use super::fonts::BookFonts;
use typst::utils::LazyHash;
use typst::{Library, LibraryExt, World};

/// Where the source names an image: `/images/ID`, ID being an `Image::id` of the document.
pub(crate) const IMAGES: &str = "/images/";

/// The standard library, built once: it holds no state of a book.
fn library() -> &'static LazyHash<Library> {
    static LIBRARY: OnceLock<LazyHash<Library>> = OnceLock::new();
    LIBRARY.get_or_init(|| LazyHash::new(Library::default()))
}

pub(crate) struct BookWorld<'a> {
    main: Source,
    images: &'a BTreeMap<String, Vec<u8>>,
    /// Each image as Typst is given it, once read: an SVG's text as outlines (`crate::svg`).
    given: Mutex<HashMap<String, Bytes>>,
    fonts: &'a BookFonts,
}

impl<'a> BookWorld<'a> {
    /// The world of `source`, a piece of a book whose faces are `fonts`: the same for every
    /// piece, so that a face has one index in all of them.
    pub fn new(
        source: String,
        images: &'a BTreeMap<String, Vec<u8>>,
        fonts: &'a BookFonts,
    ) -> Self {
        let id = FileId::new(None, VirtualPath::new("/main.typ"));
        BookWorld {
            main: Source::new(id, source),
            images,
            given: Mutex::default(),
            fonts,
        }
    }

    pub fn source(&self) -> &Source {
        &self.main
    }
}

impl World for BookWorld<'_> {
    fn library(&self) -> &LazyHash<Library> {
        library()
    }

    fn book(&self) -> &LazyHash<FontBook> {
        &self.fonts.book
    }

    fn main(&self) -> FileId {
        self.main.id()
    }

    fn source(&self, id: FileId) -> FileResult<Source> {
        if id == self.main.id() {
            Ok(self.main.clone())
        } else {
            Err(FileError::AccessDenied)
        }
    }

    fn file(&self, id: FileId) -> FileResult<Bytes> {
        if id.package().is_some() {
            return Err(FileError::AccessDenied);
        }
        let path = id.vpath().as_rooted_path().to_string_lossy();
        let Some((name, bytes)) = path
            .strip_prefix(IMAGES)
            .and_then(|name| self.images.get_key_value(name))
        else {
            return Err(FileError::AccessDenied);
        };
        let mut given = self.given.lock().unwrap_or_else(PoisonError::into_inner);
        let given = given.entry(name.clone()).or_insert_with(|| {
            Bytes::new(crate::svg::outlined(bytes).unwrap_or_else(|| bytes.clone()))
        });
        Ok(given.clone())
    }

    fn font(&self, index: usize) -> Option<Font> {
        self.fonts.get(index)
    }

    fn today(&self, _offset: Option<i64>) -> Option<Datetime> {
        // Never the clock: the same book gives the same bytes.
        Datetime::from_ymd(2026, 1, 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_books_images_are_files() {
        let images = BTreeMap::from([("a.png".to_owned(), vec![1, 2, 3])]);
        let fonts = BookFonts::for_needs(&Default::default(), &images);
        let world = BookWorld::new(String::new(), &images, &fonts);
        let file = |p: &str| world.file(FileId::new(None, VirtualPath::new(p)));
        assert_eq!(file("/images/a.png").map(|b| b.to_vec()), Ok(vec![1, 2, 3]));
        for denied in [
            "/images/b.png",
            "/etc/passwd",
            "/main.typ",
            "/images/../a.png",
        ] {
            assert_eq!(file(denied), Err(FileError::AccessDenied), "{denied}");
        }
        let other = FileId::new(None, VirtualPath::new("/other.typ"));
        assert!(World::source(&world, other).is_err());
    }
}
