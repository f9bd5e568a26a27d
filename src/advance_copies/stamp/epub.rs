//! The EPUB stamped: the zip written again in its own order, the copyright page and the
//! package document inflated, stamped and deflated as the book's writer writes its entries
//! (`ebook::epub::entry_options`), every other entry copied as it was stored (its compressed
//! bytes, CRC and sizes), never inflated. `mimetype` stays first and stored, as it was.

use std::io::{Cursor, Read};

use zip::result::ZipError;
use zip::{CompressionMethod, ZipArchive, ZipWriter};

use super::{Stamp, StampError, page};
use crate::ebook::epub::{COPYRIGHT_PAGE, PACKAGE_DOCUMENT, entry_options};
use crate::ebook::xhtml::escape::escaped;

/// Most bytes either changed entry may inflate to: far over what Bindery writes (the package
/// document of a book of a thousand chapters is about 150 KB), so that a hostile zip cannot
/// make the stamp inflate gigabytes.
const MAX_ENTRY_BYTES: u64 = 16 << 20;

/// The package metadata's identifier for the link.
const IDENTIFIER_ID: &str = "advance-copy";

pub(super) fn stamp(original: &[u8], stamp: &Stamp) -> Result<Vec<u8>, StampError> {
    let mut archive = ZipArchive::new(Cursor::new(original)).map_err(not_an_epub)?;
    first_is_mimetype(&mut archive)?;
    let mut out = ZipWriter::new(Cursor::new(Vec::with_capacity(original.len() + 4096)));
    let (mut package, mut copyright) = (false, false);
    for index in 0..archive.len() {
        let entry = archive.by_index_raw(index).map_err(not_an_epub)?;
        let file = which(entry.name_raw());
        let compress = entry.compression() != CompressionMethod::Stored;
        drop(entry);
        let (file, stamped) = match file {
            Some(PACKAGE_DOCUMENT) => {
                package = true;
                let opf = text(&mut archive, index, PACKAGE_DOCUMENT)?;
                (PACKAGE_DOCUMENT, package_document(&opf, stamp)?)
            }
            Some(file) => {
                copyright = true;
                let xhtml = text(&mut archive, index, file)?;
                (file, page::stamp(&xhtml, &stamp.paragraph(true), file)?)
            }
            None => {
                let entry = archive.by_index_raw(index).map_err(not_an_epub)?;
                out.raw_copy_file(entry).map_err(written)?;
                continue;
            }
        };
        out.start_file(file, entry_options(compress))
            .map_err(written)?;
        std::io::Write::write_all(&mut out, stamped.as_bytes())
            .map_err(|e| StampError::Unexpected(e.into()))?;
    }
    if !package {
        return Err(StampError::MissingEntry(PACKAGE_DOCUMENT));
    }
    if !copyright {
        return Err(StampError::MissingEntry(COPYRIGHT_PAGE));
    }
    Ok(out.finish().map_err(written)?.into_inner())
}

/// Which of the entries the stamp changes `name` is, if it is one.
fn which(name: &[u8]) -> Option<&'static str> {
    [PACKAGE_DOCUMENT, COPYRIGHT_PAGE]
        .into_iter()
        .find(|file| file.as_bytes() == name)
}

fn not_an_epub(e: ZipError) -> StampError {
    StampError::NotAnEpub(e.to_string())
}

fn written(e: ZipError) -> StampError {
    StampError::Unexpected(anyhow::Error::new(e).context("writing the stamped EPUB"))
}

/// OCF's rule, which the copy keeps: the first entry is `mimetype`, stored, saying what the
/// zip is.
fn first_is_mimetype(archive: &mut ZipArchive<Cursor<&[u8]>>) -> Result<(), StampError> {
    let wrong = || StampError::NotAnEpub("its first entry is not a stored mimetype".into());
    let mut first = archive.by_index(0).map_err(not_an_epub)?;
    if first.name_raw() != b"mimetype" || first.compression() != CompressionMethod::Stored {
        return Err(wrong());
    }
    let mut kind = Vec::new();
    (&mut first)
        .take(64)
        .read_to_end(&mut kind)
        .map_err(|e| StampError::NotAnEpub(e.to_string()))?;
    if kind != b"application/epub+zip" {
        return Err(wrong());
    }
    Ok(())
}

/// Entry `index` (the file `file`) inflated, as text.
fn text(
    archive: &mut ZipArchive<Cursor<&[u8]>>,
    index: usize,
    file: &'static str,
) -> Result<String, StampError> {
    let entry = archive.by_index(index).map_err(not_an_epub)?;
    if entry.size() > MAX_ENTRY_BYTES {
        return Err(StampError::EntryTooLarge(file));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(entry.size()).unwrap_or(0));
    // The declared size is the zip's word; the read is bounded whatever it says.
    entry
        .take(MAX_ENTRY_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| StampError::NotAnEpub(format!("{file}: {e}")))?;
    if bytes.len() as u64 > MAX_ENTRY_BYTES {
        return Err(StampError::EntryTooLarge(file));
    }
    String::from_utf8(bytes).map_err(|_| StampError::NotText(file))
}

/// The package document with the link's identifier as one more `dc:identifier` (the book's
/// own stays the unique identifier), at the end of its metadata.
fn package_document(opf: &str, stamp: &Stamp) -> Result<String, StampError> {
    if opf.contains(&format!(" id=\"{IDENTIFIER_ID}\"")) {
        return Err(StampError::AlreadyStamped(PACKAGE_DOCUMENT));
    }
    let end = opf
        .find("  </metadata>")
        .ok_or(StampError::NoMetadata(PACKAGE_DOCUMENT))?;
    let line = format!(
        "    <dc:identifier id=\"{IDENTIFIER_ID}\">{}</dc:identifier>\n",
        escaped(stamp.identifier())
    );
    let mut out = String::with_capacity(opf.len() + line.len());
    out.push_str(&opf[..end]);
    out.push_str(&line);
    out.push_str(&opf[end..]);
    Ok(out)
}
