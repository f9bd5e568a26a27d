//! Why a manuscript cannot be converted. Each variant is a problem with the input that no
//! retry will fix; the message says what is wrong and what the author can do.

use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum InputError {
    #[error(
        "The manuscript is empty (0 bytes). Upload the file again; if it is still empty, save it again from your editor."
    )]
    Empty,
    #[error(
        "The manuscript is {size} bytes, over the limit of {limit} bytes (MAX_MANUSCRIPT_SIZE). Split it into volumes, or ask the operator to raise the limit."
    )]
    TooLarge { size: u64, limit: u64 },
    #[error(
        "The manuscript has no text to make a book from. Check that you chose the right file, then upload it again."
    )]
    NoText,
    #[error(
        "This file is not a supported manuscript: it looks like {detected}. Upload Markdown, a Word document (.docx) or plain text."
    )]
    Unsupported { detected: String },
    /// The file's name says one kind of file and its bytes are another that cannot be read
    /// (see `manuscript::naming`).
    #[error("“{name}” is not {named}, as its name says: it is {found}. {advice}")]
    FormatMismatch {
        name: String,
        named: String,
        found: String,
        advice: String,
    },
    #[error(
        "The text is not valid in any supported encoding (UTF-8, UTF-16, Windows-1252): {detail}. Save it as UTF-8 and upload it again."
    )]
    Encoding { detail: String },
    #[error(
        "The file is a damaged ZIP archive ({detail}), as a Word document, OpenDocument, EPUB or zipped web page is when it was not saved or downloaded whole. Open it in the program that made it, save or export it again, and upload the new file."
    )]
    CorruptZip { detail: String },
    #[error(
        "The file is a zip archive but not a Word document: it has no word/document.xml. Save the manuscript as .docx and upload it again."
    )]
    NotDocx,
    #[error(
        "The zip archive holds no web page (.html file). Upload the .html file itself, or the zip Google Docs makes with File › Download › Web page."
    )]
    NoPage,
    #[error(
        "The file is a ZIP archive, but it holds no manuscript Bindery reads: no Word document, OpenDocument text, EPUB or web page. Upload the manuscript itself."
    )]
    NoManuscriptInZip,
    #[error(
        "The EPUB cannot be read: {detail}. Export it again from the program that made it, and upload the new file."
    )]
    BadEpub { detail: String },
    #[error(
        "The EPUB is locked with DRM ({scheme}), so its text cannot be read. Upload the manuscript it was made from, or the EPUB as it was before a store locked it."
    )]
    EpubDrm { scheme: String },
    #[error(
        "The file is not a readable OpenDocument text: {detail}. Open it in LibreOffice, save it as .odt, and upload it again."
    )]
    NotOdt { detail: String },
    #[error(
        "The archive entry {entry} would inflate past {limit} bytes; the file looks like a zip bomb and was refused (MAX_INFLATED_SIZE). If it is a real manuscript, save it again from your editor with smaller images, or ask the operator to raise the limit."
    )]
    ZipBomb { entry: String, limit: u64 },
    #[error(
        "The archive has {entries} entries, over the limit of {limit} (MAX_ZIP_ENTRIES). Save the document again from your editor, or ask the operator to raise the limit."
    )]
    TooManyEntries { entries: usize, limit: usize },
    #[error(
        "The archive entry name {entry:?} points outside the document (absolute path or \"..\"); the file was refused. Save the document again from Word or LibreOffice and upload the new file."
    )]
    UnsafePath { entry: String },
    #[error(
        "{part} declares a DTD or entities, which Word documents never need; it was refused to prevent entity-expansion attacks. Save the document again from Word or LibreOffice and upload the new file."
    )]
    XmlDoctype { part: String },
    #[error("{part} is not well-formed XML ({detail}). Save the document again from your editor.")]
    Xml { part: String, detail: String },
    #[error("The image {name} is not a valid image ({detail}). Replace it with a JPEG or PNG.")]
    BadImage { name: String, detail: String },
    #[error(
        "The image {name} is {width}×{height} pixels, over the limit of {limit} pixels (MAX_IMAGE_PIXELS). Scale it down and upload it again."
    )]
    ImageTooLarge {
        name: String,
        width: u32,
        height: u32,
        limit: u64,
    },
    #[error(
        "The image {name} is {width}×{height} pixels and takes {} once decoded, more than the {} an image may take here (half of WORKER_MEMORY_BUDGET). Scale it down (a cover needs 1600×2560 at most), or save it with 8 bits a channel, and upload it again.",
        bytesize::ByteSize(*decoded),
        bytesize::ByteSize(*limit)
    )]
    ImageTooDeep {
        name: String,
        width: u32,
        height: u32,
        decoded: u64,
        limit: u64,
    },
    #[error(
        "The cover must be a JPEG or PNG image; {name} is {detected}. Save it as JPEG or PNG and upload the book again."
    )]
    CoverFormat { name: String, detected: String },
    #[error(
        "The front matter is not valid YAML ({detail}). Fix the block between the --- lines at the top of the file."
    )]
    FrontMatter { detail: String },
    #[error(
        "The manuscript has more than {limit} words (MAX_BOOK_WORDS), more than any one book; reading stopped there. Split it into volumes, or ask the operator to raise the limit."
    )]
    TooManyWords { limit: u64 },
    #[error(
        "The manuscript has more than {limit} paragraphs, text runs and formatting spans (MAX_BOOK_ELEMENTS), far more than its text needs; reading stopped there. Save it again from your editor (Word: File › Save As, .docx) to merge its runs, or split it into volumes."
    )]
    TooManyElements { limit: u64 },
    #[error(
        "Chapter {chapter}{} has {words} words, over the limit of {limit} for one chapter (MAX_CHAPTER_WORDS). Mark its chapters with headings (Heading 1 in Word, # in Markdown) so the book is split.",
        if title.is_empty() { String::new() } else { format!(" (“{title}”)") }
    )]
    ChapterTooLong {
        chapter: usize,
        title: String,
        words: u64,
        limit: u64,
    },
    #[error(
        "The manuscript has {chapters} chapters, more than the {limit} one book may have (MAX_CHAPTERS): each chapter is a file of the EPUB and a page of the web reader. Split it into volumes, or start chapters only at its main headings (Heading 1 in Word, # in Markdown)."
    )]
    TooManyChapters { chapters: u64, limit: u64 },
    #[error(
        "The {what} would be {}, more than the {} it may be (MAX_INFLATED_SIZE, the most Bindery reads from an archive, and writes into one). Split the book into volumes, or make its images smaller.",
        bytesize::ByteSize(*size),
        bytesize::ByteSize(*limit)
    )]
    PackageTooLarge {
        what: &'static str,
        size: u64,
        limit: u64,
    },
    #[error(
        "Converting this manuscript ({step}) needed more memory than the server allows one book (WORKER_MEMORY_BUDGET), and was stopped. Split it into volumes, make its images smaller, or ask the operator to raise the limit."
    )]
    OutOfMemory { step: String },
    #[error(
        "Converting this manuscript ({step}) took more than {seconds} s of processor time (STEP_CPU_LIMIT), and was stopped. Split it into volumes, or ask the operator to raise the limit."
    )]
    StepTooSlow { step: String, seconds: u64 },
    #[error(
        "The metadata value {key}={value:?} is not valid: {problem}. Correct it (in the form, or in the manuscript's front matter or properties) and upload again."
    )]
    Metadata {
        key: String,
        value: String,
        problem: String,
    },
}

impl InputError {
    /// A stable code for APIs and reports.
    pub fn code(&self) -> &'static str {
        match self {
            InputError::Empty => "empty_manuscript",
            InputError::TooLarge { .. } => "manuscript_too_large",
            InputError::NoText => "no_text",
            InputError::Unsupported { .. } => "unsupported_format",
            InputError::FormatMismatch { .. } => super::naming::WARNING,
            InputError::Encoding { .. } => "bad_encoding",
            InputError::CorruptZip { .. } => "corrupt_archive",
            InputError::NotDocx => "not_docx",
            InputError::NoPage => "no_web_page",
            InputError::NoManuscriptInZip => "no_manuscript_in_zip",
            InputError::BadEpub { .. } => "bad_epub",
            InputError::EpubDrm { .. } => "epub_drm",
            InputError::NotOdt { .. } => "not_odt",
            InputError::ZipBomb { .. } => "zip_bomb",
            InputError::TooManyEntries { .. } => "too_many_entries",
            InputError::UnsafePath { .. } => "unsafe_path",
            InputError::XmlDoctype { .. } => "xml_doctype",
            InputError::Xml { .. } => "bad_xml",
            InputError::BadImage { .. } => "bad_image",
            InputError::ImageTooLarge { .. } | InputError::ImageTooDeep { .. } => "image_too_large",
            InputError::CoverFormat { .. } => "cover_format",
            InputError::FrontMatter { .. } => "bad_front_matter",
            InputError::Metadata { .. } => "bad_metadata",
            InputError::TooManyWords { .. }
            | InputError::ChapterTooLong { .. }
            | InputError::TooManyChapters { .. }
            | InputError::PackageTooLarge { .. }
            | InputError::OutOfMemory { .. } => "too_large",
            InputError::TooManyElements { .. } | InputError::StepTooSlow { .. } => "too_complex",
        }
    }
}
