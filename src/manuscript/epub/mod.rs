//! EPUB 2 and 3 read back into a manuscript, so that a book made elsewhere (by another tool,
//! Project Gutenberg or Standard Ebooks) can be restyled, printed and given a page list.
//!
//! The spine's documents are read in order by [`super::html`], each with its stylesheets
//! and with ids kept apart per document; the navigation document (or EPUB 2's NCX) titles
//! documents that have no heading of their own; the package gives the metadata and the
//! cover. The tool's own title page, copyright page and contents are recognised and left
//! out, since Bindery makes its own. A book locked with DRM is refused.

mod navigation;
mod package;

use std::collections::HashMap;

use html5gum::{DefaultEmitter, Token, Tokenizer};

use super::archive::Archive;
use super::html::{self, Head, Looks, Page, START};
use super::markdown::builder::LeafKind;
use super::{InputError, Limits, encoding};
use crate::document::{Block, Division, Document, Parsed, chapters};
use crate::report::Warning;
use navigation::Navigation;
use package::Package;

/// The kinds of documents a tool generates that Bindery makes itself, as `epub:type`, guide
/// and landmark types name them.
const GENERATED: &[(&str, &str)] = &[
    ("titlepage", "title page"),
    ("title-page", "title page"),
    ("halftitlepage", "half-title page"),
    ("copyright-page", "copyright page"),
    ("toc", "table of contents"),
    ("cover", "cover page"),
    ("imprint", "imprint page"),
];

pub fn read(bytes: &[u8], limits: &Limits) -> Result<Parsed, InputError> {
    let mut archive = Archive::open(bytes, limits)?;
    package::check_drm(&mut archive)?;
    let opf = package::rootfile(&mut archive)?;
    let package = package::read(&mut archive, &opf)?;
    let navigation = navigation_of(&mut archive, &package)?;

    let mut documents = Vec::new();
    for (n, (idref, _linear)) in package.spine.iter().enumerate() {
        let Some(item) = package.items.get(idref) else {
            continue;
        };
        if !matches!(
            item.media_type.as_str(),
            "application/xhtml+xml" | "text/html" | "application/x-dtbook+xml" | ""
        ) {
            continue;
        }
        documents.push((item.clone(), format!("d{}-", n + 1)));
    }
    let prefixes: HashMap<String, String> = documents
        .iter()
        .map(|(item, prefix)| (item.path.to_lowercase(), prefix.clone()))
        .collect();

    // Pictures go to the pages' resources; stylesheets stay here, read as each page asks.
    let (mut files, mut stylesheets) = (HashMap::new(), HashMap::new());
    for item in package.items.values() {
        let picture = item.media_type.starts_with("image/");
        if (picture || item.media_type == "text/css")
            && let Some(bytes) = archive.read(&item.path)?
        {
            let kept = if picture {
                &mut files
            } else {
                &mut stylesheets
            };
            kept.insert(item.path.to_lowercase(), bytes);
        }
    }
    let cover = package.cover().and_then(|item| {
        let name = item
            .path
            .rsplit('/')
            .next()
            .unwrap_or(&item.path)
            .to_owned();
        files
            .get(&item.path.to_lowercase())
            .map(|b| (name, b.clone()))
    });

    let mut pages = Vec::new();
    for (item, prefix) in documents {
        let Some(bytes) = archive.read(&item.path)? else {
            continue;
        };
        let (text, _) = encoding::decode(&bytes)?;
        let scan = Scan::of(&text);
        pages.push((item, prefix, text, scan));
    }
    if pages.is_empty() {
        return Err(InputError::BadEpub {
            detail: "its spine lists no XHTML documents".into(),
        });
    }
    let shallowest = pages
        .iter()
        .filter_map(|(_, _, _, s)| s.heading)
        .min()
        .unwrap_or(1);
    let cover_path = package.cover().map(|i| i.path.to_lowercase());

    let mut left_out: Vec<&'static str> = Vec::new();
    let mut sheets_cache: HashMap<Vec<String>, Looks> = HashMap::new();
    let mut seen_text = false;
    let read = html::pages(limits, files, |b| {
        let mut kinds = Vec::new();
        for (n, (item, prefix, text, scan)) in pages.iter().enumerate() {
            let path = item.path.to_lowercase();
            let place = Place {
                seen_text,
                // A guess never leaves out the last page that has text: the book is there.
                more_text: pages[n + 1..].iter().any(|(_, _, _, s)| s.text),
                cover: cover_path.as_deref(),
            };
            if let Some(what) = generated(item, &path, scan, &package, &navigation, &place) {
                left_out.push(what);
                continue;
            }
            seen_text |= scan.text;
            let head = Head::read(text);
            let base = match item.path.rsplit_once('/') {
                Some((dir, _)) => format!("{dir}/"),
                None => String::new(),
            };
            let mut hrefs: Vec<String> = head
                .stylesheets
                .iter()
                .filter_map(|h| super::markdown::resources::resolve(&base, h))
                .collect();
            hrefs.extend(head.styles.iter().cloned());
            let looks = sheets_cache.entry(hrefs.clone()).or_insert_with(|| {
                let sheets: Vec<String> = hrefs
                    .iter()
                    .map(|h| match stylesheets.get(h) {
                        Some(bytes) => String::from_utf8_lossy(bytes).into_owned(),
                        // An inline `<style>`'s own text.
                        None => h.clone(),
                    })
                    .collect();
                Looks::parse(&sheets)
            });
            let mut page = Page::new(looks, &prefixes);
            page.prefix = prefix.clone();
            page.mark(format!("{prefix}{START}"));
            b.res.base = base;
            if scan.heading.is_none()
                && let Some(title) = navigation.title_of(&path).filter(|t| !t.is_empty())
            {
                b.open_leaf(LeafKind::Heading {
                    level: shallowest,
                    id: None,
                })?;
                page.flush(b)?;
                b.text(title)?;
                b.close_leaf()?;
            }
            html::page(text, b, &mut page)?;
            kinds.append(&mut page.note_kinds);
        }
        Ok(kinds)
    })?;

    let mut metadata = package.metadata;
    let mut warnings = read.warnings;
    if !left_out.is_empty() {
        left_out.dedup();
        warnings.push(Warning::new(
            "epub_front_matter_left_out",
            format!(
                "The EPUB's own {} {} left out: Bindery makes its own from the book's metadata.",
                list(&left_out),
                if left_out.len() == 1 { "was" } else { "were" }
            ),
        ));
    }
    let mut chapters = chapters::split(read.blocks, &mut metadata, &mut warnings);
    // A "Notes" chapter whose notes became the book's notes has only its heading left.
    chapters.retain(|c| {
        !(c.division == Division::Endnotes
            && c.blocks.iter().all(|b| matches!(b, Block::Heading { .. })))
    });
    Ok(Parsed {
        document: Document {
            metadata,
            chapters,
            notes: read.notes,
            images: read.images,
        },
        resources: read.resources,
        warnings,
        cover,
    })
}

fn navigation_of(archive: &mut Archive, package: &Package) -> Result<Navigation, InputError> {
    if let Some(nav) = package.item_with("nav")
        && let Some(bytes) = archive.read(&nav.path)?
    {
        let (text, _) = encoding::decode(&bytes)?;
        return Ok(Navigation::read_nav(&text, &nav.path));
    }
    let ncx = package
        .ncx
        .as_ref()
        .and_then(|id| package.items.get(id))
        .or_else(|| {
            package
                .items
                .values()
                .find(|i| i.media_type == "application/x-dtbncx+xml")
        });
    if let Some(ncx) = ncx
        && let Some(text) = archive.read_text(&ncx.path)?
    {
        // A broken NCX costs the documents their titles, not the book.
        return Ok(Navigation::read_ncx(&text, &ncx.path).unwrap_or_default());
    }
    Ok(Navigation::default())
}

/// What a document is, from one quick look: the `epub:type` of its body and outer sections,
/// its shallowest heading, whether it has text, and the images it shows.
#[derive(Debug, Default)]
struct Scan {
    types: Vec<String>,
    heading: Option<u8>,
    text: bool,
    images: Vec<String>,
    /// Its words, and the first few hundred characters of its text, lower-cased.
    words: usize,
    sample: String,
}

impl Scan {
    fn of(html: &str) -> Scan {
        let mut scan = Scan::default();
        let mut emitter = DefaultEmitter::default();
        emitter.naively_switch_states(true);
        let mut in_body = false;
        let mut skipping: Option<String> = None;
        for token in Tokenizer::new_with_emitter(html, emitter) {
            let Ok(token) = token;
            match token {
                Token::StartTag(tag) => {
                    let name = String::from_utf8_lossy(&tag.name).to_ascii_lowercase();
                    let attr = |key: &str| html::attribute(&tag, key);
                    match name.as_str() {
                        "body" => in_body = true,
                        "script" | "style" | "title" => skipping = Some(name.clone()),
                        "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                            let level = name.as_bytes()[1] - b'0';
                            scan.heading = Some(scan.heading.map_or(level, |h| h.min(level)));
                        }
                        "img" | "image" => {
                            if let Some(src) = attr("src")
                                .or_else(|| attr("xlink:href"))
                                .or_else(|| attr("href"))
                            {
                                scan.images.push(src);
                            }
                        }
                        _ => {}
                    }
                    if (name == "body" || name == "section" || name == "div")
                        && !scan.text
                        && let Some(types) = attr("epub:type")
                    {
                        scan.types
                            .extend(types.split_whitespace().map(str::to_owned));
                    }
                }
                Token::EndTag(tag) => {
                    let name = String::from_utf8_lossy(&tag.name).to_ascii_lowercase();
                    if skipping.as_deref() == Some(name.as_str()) {
                        skipping = None;
                    }
                }
                Token::String(s) => {
                    if in_body && skipping.is_none() {
                        let text = String::from_utf8_lossy(&s);
                        scan.text |= text.chars().any(char::is_alphanumeric);
                        scan.words += text.split_whitespace().count();
                        if scan.sample.len() < 600 {
                            scan.sample.push(' ');
                            scan.sample.push_str(&text.to_lowercase());
                        }
                    }
                }
                Token::Comment(_) | Token::Doctype(_) | Token::Error(_) => {}
            }
        }
        scan
    }
}

/// Where a document stands in the spine, for the guesses of [`generated`].
struct Place<'a> {
    /// Whether a page with text came before it.
    seen_text: bool,
    /// Whether a page with text comes after it.
    more_text: bool,
    /// The cover image's path.
    cover: Option<&'a str>,
}

/// Why a document is the tool's own, if it is: what the book declares (its guide, its
/// landmarks, the document's `epub:type`), or else a guess from what the page holds.
fn generated(
    item: &package::Item,
    path: &str,
    scan: &Scan,
    package: &Package,
    navigation: &Navigation,
    place: &Place,
) -> Option<&'static str> {
    if item.properties.iter().any(|p| p == "nav") {
        return Some("table of contents");
    }
    let named = |kind: &str| GENERATED.iter().find(|(k, _)| *k == kind).map(|(_, w)| *w);
    let declared = package
        .guide
        .iter()
        .chain(navigation.landmarks.iter())
        .filter(|(_, p)| p == path)
        .find_map(|(kind, _)| named(kind));
    if let Some(what) = declared.or_else(|| scan.types.iter().find_map(|t| named(t))) {
        return Some(what);
    }
    // Before the text begins, a short page that names the book is its title page, and one
    // that states its rights its copyright page (EPUB 2 tools mark neither).
    if !place.more_text {
        return None;
    }
    let seen_text = place.seen_text;
    let sample = scan.sample.split_whitespace().collect::<Vec<_>>().join(" ");
    if !seen_text && scan.words < 80 {
        let title = package.metadata.title.as_deref().map(|t| {
            t.to_lowercase()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        });
        if title.is_some_and(|t| !t.is_empty() && sample.contains(&t)) {
            return Some("title page");
        }
    }
    let rights = ["©", "copyright", "all rights reserved", "isbn"]
        .iter()
        .filter(|s| sample.contains(*s))
        .count();
    if !seen_text && scan.words < 250 && rights >= 2 {
        return Some("copyright page");
    }
    // A page with an image and no text, before the text begins or showing the cover.
    let shows_cover = place.cover.is_some_and(|cover| {
        let file = cover.rsplit('/').next().unwrap_or(cover);
        scan.images
            .iter()
            .any(|src| src.to_lowercase().ends_with(file))
    });
    (!scan.text && !scan.images.is_empty() && (!seen_text || shows_cover)).then_some("cover page")
}

/// "title page, copyright page and table of contents".
fn list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}
