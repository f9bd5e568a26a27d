//! Reading manuscripts: sniffing the format from the bytes, enforcing limits, and turning
//! Markdown, DOCX, OpenDocument, EPUB, HTML or plain text into the one
//! [`Document`](crate::document::Document) model.
//!
//! Everything here is pure (bytes in, model out) so the pipeline's jobs and `bindery convert`
//! share it, and so a hostile file can only ever produce an [`InputError`].

pub(crate) mod archive;
mod docx;
pub mod encoding;
mod epub;
mod error;
#[doc(hidden)]
mod html;
pub mod image;
mod limits;
mod look;
pub(crate) mod markdown;
pub mod naming;
mod odt;
mod text;
pub(crate) mod tidy;
mod web_page;
pub(crate) mod xml;

use serde::{Deserialize, Serialize};

use crate::document::Parsed;

pub use error::InputError;
pub use limits::{Limits, Meter};

/// A supported manuscript format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    Markdown,
    Docx,
    Text,
    /// OpenDocument text: a `.odt` zip, or the flat `.fodt` XML.
    Odt,
    /// An EPUB 2 or 3 ebook, read back into a manuscript.
    Epub,
    /// One HTML file, or a zip of a web page with its images.
    Html,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Markdown => "markdown",
            Format::Docx => "docx",
            Format::Text => "text",
            Format::Odt => "odt",
            Format::Epub => "epub",
            Format::Html => "html",
        }
    }

    /// Whether the reader works from the upload's bytes (a zip, or markup that says its own
    /// encoding) rather than from text decoded when it was ingested.
    pub fn reads_bytes(self) -> bool {
        !matches!(self, Format::Markdown | Format::Text)
    }

    pub fn parse(s: &str) -> Option<Format> {
        match s.to_ascii_lowercase().as_str() {
            "markdown" | "md" => Some(Format::Markdown),
            "docx" | "word" => Some(Format::Docx),
            "text" | "txt" | "plain" => Some(Format::Text),
            "odt" | "fodt" | "opendocument" => Some(Format::Odt),
            "epub" => Some(Format::Epub),
            "html" | "htm" | "xhtml" | "web" => Some(Format::Html),
            _ => None,
        }
    }
}

/// Decides the format from the content alone: an author's `notes.txt` may well be Markdown.
/// What the file's name claims is checked against it in [`ingest`] (see [`naming`]).
pub fn sniff(bytes: &[u8]) -> Result<Format, InputError> {
    if bytes.is_empty() {
        return Err(InputError::Empty);
    }
    if let Some(detected) = foreign_format(bytes) {
        return Err(InputError::Unsupported {
            detected: detected.to_owned(),
        });
    }
    if bytes.starts_with(b"PK\x03\x04") || bytes.starts_with(b"PK\x05\x06") {
        return zip_format(bytes);
    }
    let (text, _) = encoding::decode(bytes)?;
    let head = markup_start(&text);
    if head.starts_with("<office:document") && text[..text.len().min(8192)].contains(ODT_MIME) {
        return Ok(Format::Odt);
    }
    if starts_with_ignore_case(head, "<!doctype html") || starts_with_ignore_case(head, "<html") {
        return Ok(Format::Html);
    }
    Ok(if markdown::looks_like_markdown(&text) {
        Format::Markdown
    } else {
        Format::Text
    })
}

/// Formats people upload by mistake, named so the error can say what the file is.
fn foreign_format(bytes: &[u8]) -> Option<&'static str> {
    let starts = |magic: &[u8]| bytes.starts_with(magic);
    if starts(b"%PDF") {
        Some("a PDF")
    } else if starts(b"{\\rtf") {
        Some("an RTF document (save it as .docx)")
    } else if starts(&[0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1]) {
        Some("a Word 97–2003 .doc file (save it as .docx)")
    } else if starts(b"\x89PNG") || starts(&[0xFF, 0xD8, 0xFF]) || starts(b"GIF8") {
        Some("an image")
    } else if starts(&[0x1F, 0x8B]) {
        Some("a gzip archive")
    } else if starts(b"7z\xBC\xAF") || starts(b"Rar!") {
        Some("a compressed archive")
    } else if bytes.len() > 60 && starts(b"PK\x03\x04") && bytes[30..].starts_with(b"mimetype") {
        let rest = &bytes[38..bytes.len().min(120)];
        let odf = b"application/vnd.oasis.opendocument.";
        if rest.starts_with(odf) && !rest[odf.len()..].starts_with(b"text") {
            Some("an OpenDocument spreadsheet, presentation or drawing, not a text document")
        } else {
            None
        }
    } else {
        None
    }
}

const ODT_MIME: &str = "application/vnd.oasis.opendocument.text";

/// Which zip-based manuscript an archive is, from what it holds: its `mimetype` entry
/// (which EPUB and OpenDocument put first), or else the parts each format cannot do without.
/// An archive that cannot be opened is left to the Word reader, which says what is wrong
/// with it; one that holds none of them is [`InputError::NoManuscriptInZip`].
fn zip_format(bytes: &[u8]) -> Result<Format, InputError> {
    let Ok(archive) = archive::Archive::open(bytes, &Limits::default()) else {
        return Ok(Format::Docx);
    };
    let has = |name: &str| archive.contains(name);
    if has("mimetype") || has("META-INF/container.xml") {
        // The mimetype's content is read from the local header, where both formats store
        // it uncompressed; an archive with it elsewhere is judged by its parts below.
        let declared = bytes
            .get(38..bytes.len().min(120))
            .filter(|_| bytes.get(30..38) == Some(b"mimetype"))
            .unwrap_or_default();
        if declared.starts_with(b"application/epub+zip") || has("META-INF/container.xml") {
            return Ok(Format::Epub);
        }
        if declared.starts_with(ODT_MIME.as_bytes()) {
            return Ok(Format::Odt);
        }
    }
    if has("[Content_Types].xml") || has("word/document.xml") {
        return Ok(Format::Docx);
    }
    if has("content.xml") && has("META-INF/manifest.xml") {
        return Ok(Format::Odt);
    }
    let web = archive.names().iter().any(|name| {
        let lower = name.to_ascii_lowercase();
        lower.ends_with(".html") || lower.ends_with(".htm") || lower.ends_with(".xhtml")
    });
    if web {
        Ok(Format::Html)
    } else {
        Err(InputError::NoManuscriptInZip)
    }
}

/// Where markup begins: past a byte-order mark, white space, an XML declaration and
/// comments.
fn markup_start(text: &str) -> &str {
    let mut rest = text.trim_start_matches('\u{feff}').trim_start();
    loop {
        if let Some(after) = rest.strip_prefix("<?xml") {
            rest = after.split_once("?>").map_or("", |(_, r)| r).trim_start();
        } else if let Some(after) = rest.strip_prefix("<!--") {
            rest = after.split_once("-->").map_or("", |(_, r)| r).trim_start();
        } else {
            return rest;
        }
    }
}

fn starts_with_ignore_case(text: &str, prefix: &str) -> bool {
    text.len() >= prefix.len()
        && text.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
}

/// How to read a manuscript.
#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    /// Overrides sniffing when the user names the format.
    pub format: Option<Format>,
    /// The upload's file name: what it claims is held against the content (see [`naming`]).
    pub file_name: Option<String>,
    pub limits: Limits,
}

/// A manuscript that passed the first checks: its format is known, it is within the limits,
/// and a text format has been decoded to UTF-8.
#[derive(Debug, Clone)]
pub struct Ingested {
    pub format: Format,
    /// The decoded text of Markdown and plain text; `None` for the formats read from the
    /// upload's bytes ([`Format::reads_bytes`]).
    pub text: Option<String>,
    /// The encoding the text was decoded from (`UTF-8`, `UTF-16LE`, `windows-1252`…).
    pub encoding: Option<String>,
}

/// Sniffs, enforces the size limit, and decodes text. Cheap: no parsing.
pub fn ingest(bytes: &[u8], options: &ReadOptions) -> Result<Ingested, InputError> {
    let limits = &options.limits;
    if bytes.is_empty() {
        return Err(InputError::Empty);
    }
    if bytes.len() as u64 > limits.max_manuscript_bytes {
        return Err(InputError::TooLarge {
            size: bytes.len() as u64,
            limit: limits.max_manuscript_bytes,
        });
    }
    let format = match (options.format, options.file_name.as_deref()) {
        (Some(format), _) => format,
        (None, Some(name)) => naming::check(name, sniff(bytes), bytes)?,
        (None, None) => sniff(bytes)?,
    };
    if format.reads_bytes() {
        return Ok(Ingested {
            format,
            text: None,
            encoding: None,
        });
    }
    let (text, encoding) = encoding::decode(bytes)?;
    if !text.chars().any(char::is_alphanumeric) {
        return Err(InputError::NoText);
    }
    Ok(Ingested {
        format,
        text: Some(text),
        encoding: Some(encoding.to_owned()),
    })
}

/// Reads an ingested manuscript into the model. `original` is the upload, needed for DOCX.
/// The chapters are cut, but metadata is only what the manuscript itself says; the
/// pipeline fills the rest.
pub fn parse(ingested: &Ingested, original: &[u8], limits: &Limits) -> Result<Parsed, InputError> {
    let mut parsed = match (ingested.format, &ingested.text) {
        (Format::Docx, _) => docx::read(original, limits)?,
        (Format::Odt, _) => odt::read(original, limits)?,
        (Format::Epub, _) => epub::read(original, limits)?,
        (Format::Html, _) => web_page::read(original, limits)?,
        (Format::Markdown, Some(text)) => markdown::read(text, limits)?,
        (Format::Text, Some(text)) => text::read(text, limits)?,
        (_, None) => {
            let (text, _) = encoding::decode(original)?;
            return parse(
                &Ingested {
                    text: Some(text),
                    ..ingested.clone()
                },
                original,
                limits,
            );
        }
    };
    if let Some(encoding) = ingested.encoding.as_deref().filter(|e| *e != "UTF-8") {
        parsed.warnings.push(crate::report::Warning::new(
            "encoding_converted",
            format!("The text was decoded from {encoding} and converted to UTF-8."),
        ));
    }
    let has_text = parsed.document.chapters.iter().any(|c| {
        crate::document::plain_text(&c.blocks)
            .chars()
            .any(char::is_alphanumeric)
    });
    if !has_text {
        return Err(InputError::NoText);
    }
    limits::check_chapters(&parsed.document.chapters, limits)?;
    Ok(parsed)
}

/// About how much memory reading this manuscript takes, in bytes, for admitting the reading
/// within a worker's budget: the upload, the inflated parts of a DOCX (each read whole, then
/// parsed) or the decoded text, and the model built from them.
pub fn reading_cost(ingested: &Ingested, upload: &[u8]) -> u64 {
    const BASE: u64 = 8 * 1024 * 1024;
    let size = upload.len() as u64;
    let body = match (&ingested.text, ingested.format) {
        (_, Format::Docx | Format::Odt | Format::Epub | Format::Html) => {
            // A flat file (`.fodt`, `.html`) declares nothing: it is its own size.
            archive::declared_size(upload).max(size).saturating_mul(3)
        }
        (Some(text), _) => (text.len() as u64).saturating_mul(5),
        (None, _) => size.saturating_mul(5),
    };
    BASE.saturating_add(size).saturating_add(body)
}

/// [`ingest`] then [`parse`].
pub fn read(bytes: &[u8], options: &ReadOptions) -> Result<(Ingested, Parsed), InputError> {
    let ingested = ingest(bytes, options)?;
    let parsed = parse(&ingested, bytes, &options.limits)?;
    Ok((ingested, parsed))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(path: &str) -> Vec<u8> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        std::fs::read(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    #[test]
    fn the_content_says_which_of_the_formats_a_file_is() {
        for (path, format) in [
            ("docx/notes.docx", Format::Docx),
            ("odt/notes.odt", Format::Odt),
            ("odt/images.fodt", Format::Odt),
            ("epub/features-pandoc.epub", Format::Epub),
            ("epub/love-among-the-chickens.epub", Format::Epub),
            ("html/features-pandoc.html", Format::Html),
            ("html/gdocs-web-page.zip", Format::Html),
            ("markdown/torture.md", Format::Markdown),
        ] {
            assert_eq!(sniff(&fixture(path)), Ok(format), "{path}");
        }
        assert_eq!(
            sniff(b"<?xml version=\"1.0\"?>\n<!-- saved -->\n<!DOCTYPE html><html><body><p>Hi</p>"),
            Ok(Format::Html)
        );
        // Markdown that opens with an HTML block is still Markdown.
        assert_eq!(
            sniff(b"<div align=\"center\">A</div>\n\n# Title\n\nText with *emphasis* and a [link](https://a.b)."),
            Ok(Format::Markdown)
        );
    }

    #[test]
    fn a_zip_of_nothing_bindery_reads_and_an_opendocument_spreadsheet_are_named() {
        let mut zip = std::io::Cursor::new(Vec::new());
        {
            use std::io::Write;
            let mut w = zip::ZipWriter::new(&mut zip);
            w.start_file("photo.png", zip::write::SimpleFileOptions::default())
                .expect("entry");
            w.write_all(b"not much").expect("write");
            w.finish().expect("zip");
        }
        assert_eq!(sniff(zip.get_ref()), Err(InputError::NoManuscriptInZip));
        let mut sheet = b"PK\x03\x04".to_vec();
        sheet.extend([0; 26]);
        sheet.extend(b"mimetypeapplication/vnd.oasis.opendocument.spreadsheet");
        sheet.extend([0; 40]);
        let Err(InputError::Unsupported { detected }) = sniff(&sheet) else {
            panic!("a spreadsheet was taken for a manuscript");
        };
        assert!(detected.contains("spreadsheet"), "{detected}");
    }

    #[test]
    fn a_file_named_for_one_format_is_read_as_the_one_it_is() {
        let docx = fixture("docx/notes.docx");
        assert_eq!(
            naming::check("notes.odt", sniff(&docx), &docx),
            Ok(Format::Docx)
        );
        assert!(naming::warning("notes.odt", Format::Docx).is_some());
        let odt = fixture("odt/notes.odt");
        assert_eq!(
            naming::check("notes.epub", sniff(&odt), &odt),
            Ok(Format::Odt)
        );
        let page = fixture("html/gdocs-web-page.zip");
        assert_eq!(
            naming::check("page.zip", sniff(&page), &page),
            Ok(Format::Html)
        );
        assert_eq!(naming::warning("page.zip", Format::Html), None);
        assert_eq!(
            naming::check("page.zip", Err(InputError::NoManuscriptInZip), b"PK"),
            Err(InputError::NoPage)
        );
        assert_eq!(
            naming::check("novel.docx", Err(InputError::NoManuscriptInZip), b"PK"),
            Err(InputError::NotDocx)
        );
        // A web page where a Word document should be is still the sign-in page it was.
        let signin =
            b"<!DOCTYPE html><html><head><title>Sign in</title></head><body></body></html>";
        assert!(matches!(
            naming::check("novel.docx", sniff(signin), signin),
            Err(InputError::FormatMismatch { .. })
        ));
        assert_eq!(
            naming::check("novel.html", sniff(signin), signin),
            Ok(Format::Html)
        );
    }
}
