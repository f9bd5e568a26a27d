//! What a file's name says it is, held against what its bytes are.
//!
//! A manuscript must be what its name says. The content decides how it is read (an author's
//! `notes.txt` may well be Markdown, and Markdown is plain text), but when the name claims one
//! kind of file and the bytes are another (a `notes.docx` that is plain text, a `.txt` that is
//! a Word document), the book never comes out as if all were well:
//!
//! - the content is a manuscript Bindery reads (a Word document, or text): it is read as what
//!   it really is, and the report carries a [`WARNING`] naming the mismatch;
//! - it is not (a web page saved in the document's place, binary data): the book fails with
//!   [`InputError::FormatMismatch`], which says what the file is instead.
//!
//! A format the uploader chose explicitly (the `format` field, `--format`) is not second-guessed.

use super::{Format, InputError};
use crate::report::Warning;

/// The report's warning code, and the failure's code, for a file that is not what its name says.
pub const WARNING: &str = "format_mismatch";

/// The kind of file an extension claims.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    Markdown,
    Text,
    Docx,
    Odt,
    Epub,
    Html,
    /// A `.zip`: Google Docs downloads a web page with its images as one.
    Zip,
    /// A format Bindery does not read, named for the messages ("a PDF").
    Other(&'static str),
}

impl Claim {
    /// The claim of `file_name`'s extension, if it makes one Bindery knows.
    pub fn of(file_name: &str) -> Option<Claim> {
        let base = file_name.rsplit(['/', '\\']).next().unwrap_or(file_name);
        let (stem, extension) = base.rsplit_once('.')?;
        if stem.is_empty() {
            return None;
        }
        Some(match extension.to_ascii_lowercase().as_str() {
            "md" | "markdown" | "mdown" | "mkd" => Claim::Markdown,
            "txt" | "text" => Claim::Text,
            "docx" | "docm" | "dotx" => Claim::Docx,
            "odt" | "fodt" | "ott" => Claim::Odt,
            "epub" => Claim::Epub,
            "html" | "htm" | "xhtml" => Claim::Html,
            "zip" => Claim::Zip,
            "doc" => Claim::Other("a Word 97–2003 document (.doc)"),
            "pdf" => Claim::Other("a PDF"),
            "rtf" => Claim::Other("an RTF document"),
            _ => return None,
        })
    }

    /// Whether content read as `format` is what this name says. Markdown is plain text, so
    /// the two text formats answer for each other.
    pub fn admits(self, format: Format) -> bool {
        match self {
            Claim::Markdown | Claim::Text => matches!(format, Format::Markdown | Format::Text),
            Claim::Docx => format == Format::Docx,
            Claim::Odt => format == Format::Odt,
            Claim::Epub => format == Format::Epub,
            Claim::Html | Claim::Zip => format == Format::Html,
            Claim::Other(_) => false,
        }
    }

    /// The claim in words, as in "named as {a Word document}".
    pub fn describe(self) -> &'static str {
        match self {
            Claim::Markdown => "a Markdown file",
            Claim::Text => "a plain-text file",
            Claim::Docx => "a Word document (.docx)",
            Claim::Odt => "an OpenDocument text (.odt)",
            Claim::Epub => "an EPUB",
            Claim::Html => "a web page (.html)",
            Claim::Zip => "a ZIP archive of a web page",
            Claim::Other(what) => what,
        }
    }
}

/// A format read from the content, in words.
fn content(format: Format) -> &'static str {
    match format {
        Format::Markdown => "Markdown text",
        Format::Text => "plain text",
        Format::Docx => "a Word document",
        Format::Odt => "an OpenDocument text",
        Format::Epub => "an EPUB",
        Format::Html => "a web page (HTML)",
    }
}

/// Checks what sniffing found against the name, before anything is read: `Ok(format)` to
/// read as it is (with [`warning`] in the report when the name says otherwise), or the error
/// that fails the book. `sniffed` is what [`super::sniff`] answered for `bytes`.
pub fn check(
    file_name: &str,
    sniffed: Result<Format, InputError>,
    bytes: &[u8],
) -> Result<Format, InputError> {
    let Some(claim) = Claim::of(file_name) else {
        return sniffed;
    };
    let mismatch = |found: &str, advice: &str| InputError::FormatMismatch {
        name: file_name.to_owned(),
        named: claim.describe().to_owned(),
        found: found.to_owned(),
        advice: advice.to_owned(),
    };
    match sniffed {
        Ok(format) if claim.admits(format) => Ok(format),
        // A document under another name (a Word document named `.odt`, an EPUB named
        // `.zip`) is still what it is: its bytes cannot be anything else.
        Ok(format @ (Format::Docx | Format::Odt | Format::Epub)) => Ok(format),
        Ok(Format::Html) if is_zip(bytes) => Ok(Format::Html),
        Ok(format) => {
            if is_web_page(bytes) {
                return Err(mismatch(
                    "a web page (HTML), perhaps a sign-in or download page saved in the manuscript's place",
                    "Download or export the manuscript again, check that it opens in your editor, and upload that file.",
                ));
            }
            Ok(format)
        }
        // Neither a ZIP archive nor text: a damaged file, or another format altogether.
        Err(InputError::Encoding { .. }) if claim == Claim::Docx => Err(mismatch(
            "neither a ZIP archive (as every .docx is) nor text, so it is damaged or another kind of file",
            "Open it in Word or LibreOffice, save it as .docx, and upload the new file.",
        )),
        // A zip of something else: what its name promised is missing.
        Err(InputError::NoManuscriptInZip) if claim == Claim::Docx => Err(InputError::NotDocx),
        Err(InputError::NoManuscriptInZip) if matches!(claim, Claim::Zip | Claim::Html) => {
            Err(InputError::NoPage)
        }
        Err(InputError::Encoding { .. })
            if matches!(claim, Claim::Odt | Claim::Epub | Claim::Zip) =>
        {
            Err(mismatch(
                "neither a ZIP archive (as every one is) nor text, so it is damaged or another kind of file",
                "Export or download it again from the program that made it, and upload the new file.",
            ))
        }
        Err(e) => Err(e),
    }
}

/// The report's warning for a manuscript read as `format` though its name says otherwise.
pub fn warning(file_name: &str, format: Format) -> Option<Warning> {
    let claim = Claim::of(file_name)?;
    if claim.admits(format) {
        return None;
    }
    Some(Warning::new(
        WARNING,
        format!(
            "“{file_name}” is named as {} but is {}, so it was read as {}. If this is not the \
             manuscript you meant, upload the right file.",
            claim.describe(),
            content(format),
            content(format),
        ),
    ))
}

fn is_zip(bytes: &[u8]) -> bool {
    bytes.starts_with(b"PK\x03\x04") || bytes.starts_with(b"PK\x05\x06")
}

/// An HTML page: what a browser saves when a download link led to a sign-in page.
fn is_web_page(bytes: &[u8]) -> bool {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let start = bytes.trim_ascii_start();
    let start = &start[..start.len().min(14)];
    start.eq_ignore_ascii_case(b"<!doctype html")
        || start[..start.len().min(5)].eq_ignore_ascii_case(b"<html")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extensions_claim_their_format_in_any_case() {
        assert_eq!(Claim::of("notes.docx"), Some(Claim::Docx));
        assert_eq!(Claim::of("C:\\Users\\a\\Novel.DOCX"), Some(Claim::Docx));
        assert_eq!(Claim::of("book.md"), Some(Claim::Markdown));
        assert_eq!(Claim::of("book.final.txt"), Some(Claim::Text));
        assert_eq!(Claim::of("book.pdf"), Some(Claim::Other("a PDF")));
        for none in ["manuscript", ".docx", "book.", "notes.docx.bak"] {
            assert_eq!(Claim::of(none), None, "{none}");
        }
    }

    #[test]
    fn text_named_as_a_word_document_is_read_as_text_with_a_warning() {
        assert_eq!(
            check("notes.docx", Ok(Format::Text), b"not a zip"),
            Ok(Format::Text)
        );
        let warning = warning("notes.docx", Format::Text).expect("a warning");
        assert_eq!(warning.code, "format_mismatch");
        assert!(
            warning
                .message
                .contains("“notes.docx” is named as a Word document (.docx) but is plain text"),
            "{}",
            warning.message
        );
    }

    #[test]
    fn a_word_document_under_a_text_name_is_read_as_a_word_document() {
        assert_eq!(
            check("novel.txt", Ok(Format::Docx), b"PK"),
            Ok(Format::Docx)
        );
        assert!(
            warning("novel.txt", Format::Docx)
                .expect("a warning")
                .message
                .contains("is a Word document")
        );
        assert_eq!(
            check("novel.doc", Ok(Format::Docx), b"PK"),
            Ok(Format::Docx)
        );
        assert!(warning("novel.doc", Format::Docx).is_some());
    }

    #[test]
    fn markdown_and_plain_text_answer_for_each_other() {
        for (name, format) in [
            ("a.txt", Format::Markdown),
            ("a.md", Format::Text),
            ("a.docx", Format::Docx),
            ("manuscript", Format::Text),
        ] {
            assert_eq!(check(name, Ok(format), b"x"), Ok(format), "{name}");
            assert_eq!(warning(name, format), None, "{name}");
        }
    }

    #[test]
    fn what_cannot_be_read_as_what_it_is_fails_with_the_mismatch() {
        let page = "<!DOCTYPE html>\n<html><head><title>Sign in</title>";
        let Err(error) = check("novel.docx", Ok(Format::Markdown), page.as_bytes()) else {
            panic!("a web page named .docx was accepted");
        };
        assert_eq!(error.code(), "format_mismatch");
        assert!(
            error
                .to_string()
                .starts_with("“novel.docx” is not a Word document (.docx), as its name says: it is a web page (HTML)"),
            "{error}"
        );
        let binary = InputError::Encoding {
            detail: "a NUL byte at offset 3".into(),
        };
        let Err(error) = check("novel.docx", Err(binary.clone()), b"\0\0\0") else {
            panic!("binary data named .docx was accepted");
        };
        assert_eq!(error.code(), "format_mismatch");
        assert!(
            error.to_string().contains("neither a ZIP archive"),
            "{error}"
        );
        // Under a text name, bad text is an encoding problem, as it always was.
        assert_eq!(
            check("novel.txt", Err(binary.clone()), b"\0\0\0"),
            Err(binary)
        );
    }
}
