//! A book's pages in a style, for the author to choose by: its title page, its first
//! chapter's opening and a page with a scene break, set from an excerpt of the book
//! (`crate::style::preview`) and rendered to PNG here, in process. A few pages of text: they
//! cost a fraction of a second and a few megabytes, so the worker makes them itself.

use std::collections::BTreeMap;

use typst::layout::PagedDocument;

use super::fonts::{BookFonts, FontNeeds};
use super::template::{self, PageData, Text};
use super::trim::PageGeometry;
use super::world::BookWorld;
use super::{GUTTER_COMFORT, PrintError, PrintOptions, compile, pages};
use crate::ebook::Book;

/// The preview's pages, as PNG images.
#[derive(Debug, Clone)]
pub struct Previews {
    pub title: Vec<u8>,
    /// The first chapter's opening, when the book has a chapter of running text.
    pub opening: Option<Vec<u8>>,
    /// A page with a scene break, when the book has one.
    pub scene: Option<Vec<u8>>,
}

/// Pixels per point: a 6×9 in page is 648×972 pixels, sharp on a phone and small to send.
const PIXELS_PER_POINT: f32 = 1.5;

/// The gutter a preview is set with: a short book's, which the pages barely show.
const GUTTER: f64 = 0.375;

/// Typesets `book`, an excerpt of a book (`crate::style::preview::excerpt`) whose chapter
/// `opening` opens and chapter `scene` holds a scene break, in its style (`book.style`, whose
/// house style's files are `resources`), and
/// renders the three pages.
pub fn previews(
    book: &Book,
    resources: &BTreeMap<String, Vec<u8>>,
    opening: Option<usize>,
    scene: Option<usize>,
    options: &PrintOptions,
) -> Result<Previews, PrintError> {
    let text = Text {
        document: &book.document,
        resources,
        metadata: &book.metadata,
        style: &book.style,
    };
    let needs = FontNeeds::of(
        &template::book_text(&book.document, &book.metadata),
        crate::ebook::sets_bold(&book.document),
    );
    let faces = BookFonts::for_needs(&needs, resources);
    let fonts = template::body_fonts(&needs, &book.metadata.language);
    let geometry = PageGeometry {
        trim: options.trim,
        bleed: false,
        bleed_at_spine: false,
        gutter: GUTTER + GUTTER_COMFORT,
    };
    let set = |pages: Option<&PageData>| -> Result<PagedDocument, PrintError> {
        let source = template::preview(text, geometry, &fonts, pages, opening, scene);
        compile(&BookWorld::new(source, resources, &faces), &mut Vec::new())
    };
    // Laid out once to find the pages, then again with their running heads and folios.
    let bare = set(None)?;
    let survey = pages::survey(&bare);
    let starts: BTreeMap<usize, usize> = survey.chapters.iter().copied().collect();
    let opening_page = opening.and_then(|i| starts.get(&i).copied());
    let scene_page = scene.and_then(|i| starts.get(&i).copied());
    let body_from = opening_page.or(scene_page).unwrap_or(survey.pages + 1);
    let data = PageData {
        styles: (1..=survey.pages)
            .map(|p| match p {
                p if p < body_from => 'n',
                p if Some(p) == opening_page => 'f',
                _ => 'h',
            })
            .collect(),
        folios: (1..=survey.pages)
            .map(|p| {
                if p < body_from {
                    String::new()
                } else {
                    (p + 1 - body_from).to_string()
                }
            })
            .collect(),
        contents: Vec::new(),
        heads: pages::heads(
            &survey,
            &template::running_titles(&book.document, &book.metadata, &book.style),
        ),
    };
    let document = set(Some(&data))?;
    let png = |page: usize| -> Result<Vec<u8>, PrintError> {
        let page = document
            .pages
            .get(page - 1)
            .ok_or_else(|| PrintError::Typeset(format!("the preview has no page {page}")))?;
        typst_render::render(page, PIXELS_PER_POINT)
            .encode_png()
            .map_err(|e| PrintError::Typeset(format!("the preview's page as PNG: {e}")))
    };
    Ok(Previews {
        // The half title, its blank verso, then the title page.
        title: png(3)?,
        opening: opening_page.map(png).transpose()?,
        scene: scene_page.map(png).transpose()?,
    })
}
