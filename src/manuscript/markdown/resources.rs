//! What links and images in a manuscript may point at. A book is self-contained: it can
//! link to the web, but it cannot fetch anything, so images must travel inside the file
//! (`data:` URIs) and links to the author's other local files have nowhere to go.

use std::collections::{BTreeMap, HashMap};

use crate::document::{Image, LinkTarget};
use crate::manuscript::{InputError, Limits, Meter, image};
use crate::report::Warning;

/// Marks an internal target that came from a link to a local file (`notes.md#x`): it is
/// kept only if the fragment names a heading of this document. A NUL character never
/// survives parsing into a real URL, so the mark cannot collide with an author's id.
pub(crate) const LOCAL_MARK: char = '\0';

/// Images and warnings gathered while reading, shared by the Markdown and HTML paths.
pub(crate) struct Resources<'l> {
    limits: &'l Limits,
    pub images: Vec<Image>,
    pub bytes: BTreeMap<String, Vec<u8>>,
    pub warnings: Vec<Warning>,
    /// What the model holds so far, against the book's limits.
    pub meter: Meter,
    /// The same `data:` URI (or file) used twice is one image.
    seen: HashMap<String, String>,
    /// The files a web page or an EPUB carries beside its text, by lower-cased path inside
    /// the archive; empty for Markdown, whose images must be embedded.
    files: HashMap<String, Vec<u8>>,
    /// The directory of the page being read, inside the archive (`OEBPS/text/`), which its
    /// relative addresses start from.
    pub base: String,
}

impl<'l> Resources<'l> {
    pub fn new(limits: &'l Limits) -> Self {
        Resources {
            limits,
            images: Vec::new(),
            bytes: BTreeMap::new(),
            warnings: Vec::new(),
            meter: Meter::new(limits),
            seen: HashMap::new(),
            files: HashMap::new(),
            base: String::new(),
        }
    }

    /// Resources for a page whose images are files beside it (see [`Resources::files`]).
    pub fn with_files(limits: &'l Limits, files: HashMap<String, Vec<u8>>) -> Self {
        Resources {
            files,
            ..Resources::new(limits)
        }
    }

    /// The archive path a relative address of the current page names: `../images/a.png`
    /// from `OEBPS/text/` is `oebps/images/a.png` (lower-cased, as [`Resources::files`] is
    /// keyed). `None` for an address with a scheme or one that climbs out of the archive.
    pub fn resolve(&self, url: &str) -> Option<String> {
        resolve(&self.base, url)
    }

    pub fn warn(&mut self, code: &str, message: String) {
        self.warnings.push(Warning::new(code, message));
    }

    /// Where a link goes, or `None` when it must be dropped (its text is kept).
    pub fn link_target(&mut self, url: &str, email: bool) -> Option<LinkTarget> {
        let url = url.trim();
        if url.is_empty() {
            return None;
        }
        if email {
            return self.link_target(&format!("mailto:{url}"), false);
        }
        if let Some(fragment) = url.strip_prefix('#') {
            return (!fragment.is_empty()).then(|| LinkTarget::Internal(percent_decode(fragment)));
        }
        match scheme(url) {
            Some(s) if matches!(s.as_str(), "http" | "https" | "mailto") => {
                match url::Url::parse(url) {
                    Ok(parsed) => Some(LinkTarget::External(parsed.to_string())),
                    Err(e) => {
                        self.warn(
                        "link_dropped",
                        format!("The link to {url:?} is not a valid address ({e}), so its text was kept without the link."),
                    );
                        None
                    }
                }
            }
            Some(s) => {
                self.warn(
                    "link_dropped",
                    format!("A {s}: link was removed (only http, https and mailto links work in an ebook); its text was kept."),
                );
                None
            }
            // A relative link: another file of the author's, which the book does not contain.
            None => Some(LinkTarget::Internal(format!("{LOCAL_MARK}{url}"))),
        }
    }

    /// The id of an image, or `None` when it cannot be in the book (a warning says why and
    /// the caller keeps its alt text).
    pub fn image(&mut self, url: &str, alt: &str) -> Result<Option<String>, InputError> {
        let url = url.trim();
        if let Some(id) = self.seen.get(url) {
            return Ok(Some(id.clone()));
        }
        let shown = if alt.trim().is_empty() {
            String::new()
        } else {
            format!(" “{}”", alt.trim())
        };
        if let Some(data) = url.strip_prefix("data:") {
            return self.data_image(url, data, &shown).map(Some).or_else(|e| match e {
                DataError::Input(e) => Err(e),
                DataError::Unsupported(kind) => {
                    self.warn(
                        "image_missing",
                        format!("The image{shown} is embedded as {kind}, which is not a JPEG, PNG, GIF or WebP image; its description was kept as text."),
                    );
                    Ok(None)
                }
            });
        }
        if let Some(path) = self.resolve(url)
            && let Some(bytes) = self.files.get(&path).cloned()
        {
            return self.file_image(url, &path, bytes, &shown);
        }
        let short: String = url.chars().take(120).collect();
        if !self.files.is_empty() && scheme(url).is_none() {
            self.warn(
                "image_missing",
                format!("The image{shown} points to {short:?}, which the file does not contain; its description was kept as text."),
            );
            return Ok(None);
        }
        match scheme(url).as_deref() {
            Some("http" | "https") => self.warn(
                "image_remote",
                format!("The image{shown} is on the web ({short}); ebooks cannot load it, so its description was kept as text. Embed the image in the Markdown or use a Word document."),
            ),
            _ => self.warn(
                "image_missing",
                format!("The image{shown} points to the file {short:?}, which was not uploaded with the Markdown; its description was kept as text. Embed it as a data: URI or use a Word document."),
            ),
        }
        Ok(None)
    }

    fn data_image(&mut self, url: &str, data: &str, shown: &str) -> Result<String, DataError> {
        let (meta, payload) = data
            .split_once(',')
            .ok_or(DataError::Unsupported("a data: URI without data".into()))?;
        let meta = meta.to_ascii_lowercase();
        let mut parts = meta.split(';');
        let media = parts.next().unwrap_or("").trim().to_owned();
        if !matches!(
            media.as_str(),
            "image/png" | "image/jpeg" | "image/jpg" | "image/gif" | "image/webp"
        ) {
            return Err(DataError::Unsupported(if media.is_empty() {
                "untyped data".into()
            } else {
                media
            }));
        }
        if !parts.any(|p| p.trim() == "base64") {
            return Err(DataError::Unsupported(
                "a data: URI that is not base64".into(),
            ));
        }
        let name = format!("the embedded image{shown}");
        let bytes = base64_decode(payload).ok_or_else(|| {
            DataError::Input(InputError::BadImage {
                name: name.clone(),
                detail: "its base64 data is damaged".into(),
            })
        })?;
        self.register(url, &name, bytes).map_err(DataError::Input)
    }

    /// An image a document carries inside itself (a flat OpenDocument's `office:binary-data`),
    /// named for the warnings.
    pub fn embedded_image(
        &mut self,
        name: &str,
        bytes: Vec<u8>,
        alt: &str,
    ) -> Result<Option<String>, InputError> {
        let shown = if alt.trim().is_empty() {
            String::new()
        } else {
            format!(" “{}”", alt.trim())
        };
        let key = format!("embedded:{}", self.images.len());
        self.file_image(&key, name, bytes, &shown)
    }

    /// An image the page's archive carries: kept unless it is a format no e-reader shows.
    fn file_image(
        &mut self,
        url: &str,
        path: &str,
        bytes: Vec<u8>,
        shown: &str,
    ) -> Result<Option<String>, InputError> {
        if let Some(format) = image::is_known_unsupported(&bytes) {
            self.warn(
                "image_unsupported",
                format!("The image{shown} ({path}) is in {format} format, which e-readers cannot show; its description was kept as text."),
            );
            return Ok(None);
        }
        self.register(url, path, bytes).map(Some)
    }

    fn register(&mut self, url: &str, name: &str, bytes: Vec<u8>) -> Result<String, InputError> {
        let info = image::probe(name, &bytes, self.limits)?;
        let (info, bytes) = image::upright(name, bytes, info)?;
        let id = format!("image{}.{}", self.images.len() + 1, info.extension());
        self.images.push(Image {
            id: id.clone(),
            media_type: info.media_type().to_owned(),
            width: info.width,
            height: info.height,
        });
        self.bytes.insert(id.clone(), bytes);
        self.seen.insert(url.to_owned(), id.clone());
        Ok(id)
    }
}

/// The lower-cased archive path `url` names from the directory `base` (see
/// [`Resources::resolve`]).
pub(crate) fn resolve(base: &str, url: &str) -> Option<String> {
    if scheme(url).is_some() || url.starts_with('/') {
        return None;
    }
    let path = url.split(['#', '?']).next().unwrap_or("");
    join_path(base, &percent_decode(path)).map(|p| p.to_lowercase())
}

/// `relative` read from the directory `base` (which ends in `/`, or is empty), with `.` and
/// `..` settled; `None` if it climbs above the archive's root.
pub(crate) fn join_path(base: &str, relative: &str) -> Option<String> {
    let mut parts: Vec<&str> = base.split('/').filter(|p| !p.is_empty()).collect();
    for part in relative.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            part => parts.push(part),
        }
    }
    Some(parts.join("/"))
}

enum DataError {
    Input(InputError),
    Unsupported(String),
}

/// The URL's scheme, lower-cased, if it has one (`C:\…` and `a/b:c` do not).
fn scheme(url: &str) -> Option<String> {
    let (scheme, _) = url.split_once(':')?;
    let mut chars = scheme.chars();
    let valid = scheme.len() > 1
        && chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    valid.then(|| scheme.to_ascii_lowercase())
}

/// `%20` in a fragment means a space in the id it names.
pub(crate) fn percent_decode(s: &str) -> String {
    if !s.contains('%') {
        return s.to_owned();
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| s.to_owned())
}

/// Standard or URL-safe base64, padding optional, white space ignored (data URIs are often
/// wrapped). `None` if any other character appears or the length is impossible.
pub(super) fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let mut buffer = 0u32;
    let mut bits = 0u32;
    let mut padding = 0;
    for byte in text.bytes() {
        let value = match byte {
            b'A'..=b'Z' => byte - b'A',
            b'a'..=b'z' => byte - b'a' + 26,
            b'0'..=b'9' => byte - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b'=' => {
                padding += 1;
                continue;
            }
            b' ' | b'\t' | b'\n' | b'\r' => continue,
            _ => return None,
        };
        if padding > 0 {
            return None;
        }
        buffer = (buffer << 6) | u32::from(value);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
            buffer &= (1 << bits) - 1;
        }
    }
    // 6 leftover bits mean one stray character: not a whole byte.
    (bits < 6 && padding <= 2).then_some(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn base64_decodes_standard_wrapped_and_unpadded_text() {
        assert_eq!(
            base64_decode("SGVsbG8sIHdvcmxkIQ==").unwrap(),
            b"Hello, world!"
        );
        assert_eq!(
            base64_decode("SGVsbG8s\n IHdvcmxkIQ").unwrap(),
            b"Hello, world!"
        );
        assert_eq!(base64_decode("").unwrap(), b"");
        assert!(base64_decode("SGV*bG8").is_none());
        assert!(base64_decode("SGVsb").is_none());
    }

    #[test]
    fn links_are_classified_by_scheme() {
        let limits = Limits::default();
        let mut r = Resources::new(&limits);
        assert_eq!(
            r.link_target("https://example.com/a?b=1&c=2", false),
            Some(LinkTarget::External("https://example.com/a?b=1&c=2".into()))
        );
        assert_eq!(
            r.link_target("nobody@nowhere.net", true),
            Some(LinkTarget::External("mailto:nobody@nowhere.net".into()))
        );
        assert_eq!(
            r.link_target("#chapter%20one", false),
            Some(LinkTarget::Internal("chapter one".into()))
        );
        assert_eq!(r.link_target("javascript:alert(1)", false), None);
        assert_eq!(r.warnings[0].code, "link_dropped");
        assert_eq!(
            r.link_target("notes.md#x", false),
            Some(LinkTarget::Internal(format!("{LOCAL_MARK}notes.md#x")))
        );
    }
}
