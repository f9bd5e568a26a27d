//! The entry points of the fuzz targets in `fuzz/`, one per reader (the manuscript's, and the
//! cover's, which is the ebook's). They live here, not in
//! the targets, so the corpus replay below runs every saved input through exactly the code
//! the fuzzer ran, and a change to the pipeline's call path changes both at once.
//!
//! Each takes arbitrary bytes and must return (`Ok` or `Err`): a panic, a hang or runaway
//! memory on any input is a bug in a reader.

use crate::document::Metadata;
use crate::ebook::cover;
use crate::manuscript::image::{probe, upright};
use crate::manuscript::{Format, InputError, Limits, ReadOptions, read, sniff};

/// The operator's limits, with inflation capped lower: a deflated entry grows about 1000
/// times, so under the default 512 MiB an input of a few hundred KiB may legitimately take
/// seconds and gigabytes. That is the limit working, not a bug, and would only slow the
/// fuzzer and trip its memory limit; the bound itself has its own tests.
fn fuzz_limits() -> Limits {
    Limits {
        max_inflated_bytes: 8 * 1024 * 1024,
        ..Limits::default()
    }
}

/// Images capped at one megapixel for the same reason: decoding and scaling a permitted
/// 50-megapixel picture is slow by design. One megapixel still reaches the cover's scaling
/// path (wider than 1600 or taller than 2560).
fn image_limits() -> Limits {
    Limits {
        max_image_pixels: 1024 * 1024,
        ..fuzz_limits()
    }
}

fn read_as(data: &[u8], format: Option<Format>, limits: Limits) -> Result<(), InputError> {
    read(
        data,
        &ReadOptions {
            format,
            file_name: None,
            limits,
        },
    )
    .map(drop)
}

/// A Word document, as when the user names the format (no sniffing, so any bytes reach the
/// zip reader).
pub fn docx(data: &[u8]) -> Result<(), InputError> {
    read_as(data, Some(Format::Docx), fuzz_limits())
}

/// The parts a Word document's XML readers see, in the order [`docx_parts`] takes them.
pub const DOCX_PARTS: [&str; 8] = [
    "_rels/.rels",
    "word/document.xml",
    "word/_rels/document.xml.rels",
    "word/styles.xml",
    "word/numbering.xml",
    "word/footnotes.xml",
    "word/endnotes.xml",
    "docProps/core.xml",
];

/// A Word document whose parts are the input split at NUL bytes (which XML never holds),
/// zipped without compression. The zip crate checks every entry's CRC, so nearly every
/// mutation of a real archive dies there; this target is how the fuzzer reaches the XML
/// readers behind it. [`docx`] fuzzes the container itself.
pub fn docx_parts(data: &[u8]) -> Result<(), InputError> {
    read_as(&zip_parts(data), Some(Format::Docx), fuzz_limits())
}

/// The archive [`docx_parts`] reads: empty pieces are parts the document does not have.
pub fn zip_parts(data: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    use zip::write::{SimpleFileOptions, ZipWriter};
    let mut zip = ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let stored = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for (name, part) in DOCX_PARTS.iter().zip(data.split(|&b| b == 0)) {
        if part.is_empty() {
            continue;
        }
        // Writing to memory cannot fail.
        let _ = zip.start_file(*name, stored);
        let _ = zip.write_all(part);
    }
    zip.finish().map(|c| c.into_inner()).unwrap_or_default()
}

/// OpenDocument as when the user names the format: a zip, or the flat XML of a `.fodt`.
pub fn odt(data: &[u8]) -> Result<(), InputError> {
    read_as(data, Some(Format::Odt), fuzz_limits())
}

/// An EPUB: its container, package, navigation and pages.
pub fn epub(data: &[u8]) -> Result<(), InputError> {
    read_as(data, Some(Format::Epub), fuzz_limits())
}

/// A web page, alone or zipped with its pictures and stylesheets.
pub fn html(data: &[u8]) -> Result<(), InputError> {
    read_as(data, Some(Format::Html), fuzz_limits())
}

/// Markdown, front matter included, through decoding as uploads are.
pub fn markdown(data: &[u8]) -> Result<(), InputError> {
    read_as(data, Some(Format::Markdown), fuzz_limits())
}

/// The YAML front-matter parser alone, so the fuzzer spends its time in YAML rather than
/// in finding the `---` lines.
pub fn front_matter(data: &[u8]) -> Result<(), InputError> {
    let Ok(yaml) = std::str::from_utf8(data) else {
        return Ok(());
    };
    crate::manuscript::markdown::front_matter::parse(yaml, &mut Metadata::default())
}

/// Sniffing and decoding as an upload with no named format, then the plain-text reader
/// even when the sniff chose another one, so it sees every input.
pub fn text(data: &[u8]) -> Result<(), InputError> {
    let sniffed = read_as(data, None, fuzz_limits());
    if sniff(data).is_ok_and(|f| f == Format::Text) {
        return sniffed;
    }
    read_as(data, Some(Format::Text), fuzz_limits())
}

/// An uploaded cover, and for the formats a cover may not be (GIF, WebP) the checks an
/// image inside a manuscript gets.
pub fn image(data: &[u8]) -> Result<(), InputError> {
    let limits = image_limits();
    match cover::prepare("cover", data, &limits) {
        Err(InputError::CoverFormat { .. }) => {
            let info = probe("image", data, &limits)?;
            upright("image", data.to_vec(), info).map(drop)
        }
        prepared => prepared.map(drop),
    }
}

/// A target's entry point.
pub type Entry = fn(&[u8]) -> Result<(), InputError>;

/// Every target with its entry point, for the replay test and anything that loops over them.
pub const TARGETS: [(&str, Entry); 9] = [
    ("docx", docx),
    ("docx_parts", docx_parts),
    ("odt", odt),
    ("epub", epub),
    ("html", html),
    ("markdown", markdown),
    ("front_matter", front_matter),
    ("text", text),
    ("image", image),
];

#[cfg(test)]
mod tests;
