//! What makes the site an installable, offline app: the Web App Manifest and the service
//! worker that pre-caches every file of the site.

use serde_json::json;
use sha2::{Digest, Sha256};

use super::pages::LIGHT_BAR;
use crate::ebook::BookMetadata;

/// The service worker's code; `__VERSION__`, `__FILES__` and `__DIGESTS__` are filled in per
/// build, `__STAMPED__` and `__STAMP_ID__` with [`STAMPED_PAGE`] and [`STAMP_ID`].
const SW_TEMPLATE: &str = include_str!("sw.js");

/// The one file of the site a server may personalise as it serves it: the contents page, whose
/// copyright section (`ebook::epub::COPYRIGHT_ID`) then ends with one line more, a paragraph
/// with the id [`STAMP_ID`] (an advance reader copy's, `advance_copies::stamp`). The service
/// worker checks that page's digest without that line, so a personal copy saves whole offline
/// and a page of another build is still refused.
pub const STAMPED_PAGE: &str = "index.html";
/// The `id` of the one paragraph a server may add to [`STAMPED_PAGE`]: written on a line of
/// its own, `<p id="advance-copy" …>…</p>`, with no line break inside.
pub const STAMP_ID: &str = "advance-copy";

/// Icon files and their pixel sizes, as the manifest lists them.
pub const ICONS: [(&str, u32); 2] = [("icon-192.png", 192), ("icon-512.png", 512)];
/// iOS ignores the manifest's icons and asks for this one.
pub const APPLE_TOUCH_ICON: (&str, u32) = ("apple-touch-icon.png", 180);

/// The service worker's path at the site root: its scope is the whole site.
pub const SERVICE_WORKER: &str = "sw.js";

/// `manifest.webmanifest`: paths relative to the manifest, so any prefix works.
pub fn manifest(metadata: &BookMetadata) -> anyhow::Result<Vec<u8>> {
    let icons: Vec<_> = ICONS
        .iter()
        .map(|(src, size)| {
            json!({
                "src": src,
                "sizes": format!("{size}x{size}"),
                "type": "image/png",
                "purpose": "any",
            })
        })
        .collect();
    let mut manifest = json!({
        "name": metadata.title,
        "short_name": short_name(&metadata.title),
        "lang": metadata.language,
        "start_url": "./index.html",
        "scope": "./",
        "display": "standalone",
        "theme_color": LIGHT_BAR,
        "background_color": LIGHT_BAR,
        "icons": icons,
    });
    if let (Some(description), Some(object)) = (&metadata.description, manifest.as_object_mut()) {
        object.insert("description".into(), json!(description));
    }
    // The name and description run the book's way; said only for right-to-left books, so
    // the others' manifests stay as they were.
    let direction = crate::language::Direction::of(&metadata.language);
    if let (crate::language::Direction::RightToLeft, Some(object)) =
        (direction, manifest.as_object_mut())
    {
        object.insert("dir".into(), json!(direction.as_str()));
    }
    let mut bytes = serde_json::to_vec_pretty(&manifest)?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// A home-screen label: launchers cut names past about 12 characters, so keep whole words
/// that fit, or cut the first word with an ellipsis.
fn short_name(title: &str) -> String {
    const MAX: usize = 12;
    if title.chars().count() <= MAX {
        return title.to_owned();
    }
    let mut name = String::new();
    for word in title.split_whitespace() {
        let joined = if name.is_empty() {
            word.to_owned()
        } else {
            format!("{name} {word}")
        };
        if joined.chars().count() > MAX {
            break;
        }
        name = joined;
    }
    if name.is_empty() {
        name = title.chars().take(MAX - 1).collect::<String>() + "\u{2026}";
    }
    name
}

/// `sw.js` for a site whose other files are `files` (`(path, bytes)`), listing every file
/// of the site, itself included, each other file's SHA-256 (so that it saves one build whole),
/// and a version that changes whenever any byte does.
pub fn service_worker(files: &[(String, Vec<u8>)]) -> anyhow::Result<Vec<u8>> {
    let mut hasher = Sha256::new();
    for (path, bytes) in files {
        // Lengths keep ("ab","c") and ("a","bc") apart.
        hasher.update((path.len() as u64).to_le_bytes());
        hasher.update(path.as_bytes());
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    }
    let version = hex::encode(&hasher.finalize()[..8]);
    let mut list: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
    list.push(SERVICE_WORKER);
    let list = serde_json::to_string_pretty(&list)?;
    let digests: serde_json::Map<String, serde_json::Value> = files
        .iter()
        .map(|(path, bytes)| (path.clone(), hex::encode(Sha256::digest(bytes)).into()))
        .collect();
    let digests = serde_json::to_string_pretty(&digests)?;
    // The constants first: the lists after them hold the site's file names.
    Ok(SW_TEMPLATE
        .replace("__STAMPED__", STAMPED_PAGE)
        .replace("__STAMP_ID__", STAMP_ID)
        .replace("__VERSION__", &version)
        .replace("__FILES__", &list)
        .replace("__DIGESTS__", &digests)
        .into_bytes())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests {
    use super::*;

    #[test]
    fn short_names_fit_a_home_screen() {
        assert_eq!(short_name("Dune"), "Dune");
        assert_eq!(short_name("The Left Hand of Darkness"), "The Left");
        assert_eq!(
            short_name("Supercalifragilistic Tales"),
            "Supercalifr\u{2026}"
        );
    }

    #[test]
    fn a_right_to_left_books_manifest_says_so() {
        let mut metadata = crate::ebook::xhtml::fixture::metadata();
        let dir = |metadata: &BookMetadata| {
            let manifest: serde_json::Value =
                serde_json::from_slice(&manifest(metadata).unwrap()).unwrap();
            manifest.get("dir").cloned()
        };
        assert_eq!(dir(&metadata), None);
        metadata.language = "fa".into();
        assert_eq!(dir(&metadata), Some(json!("rtl")));
    }

    #[test]
    fn any_changed_byte_changes_the_version() {
        let site = |body: &str| vec![("index.html".to_owned(), body.as_bytes().to_vec())];
        let version = |sw: Vec<u8>| {
            let sw = String::from_utf8(sw).unwrap();
            sw.lines()
                .find(|l| l.starts_with("const VERSION"))
                .unwrap()
                .to_owned()
        };
        let a = version(service_worker(&site("<p>a")).unwrap());
        assert_eq!(a, version(service_worker(&site("<p>a")).unwrap()));
        assert_ne!(a, version(service_worker(&site("<p>b")).unwrap()));
    }
}
