//! The whole Typst source of a print edition: the page setup, the front matter (half title,
//! title page, copyright page, contents), and the chapters, each opening on a right-hand page.
//!
//! Nothing here asks Typst where things fell (no `query`, no `outline`, no counters): on long
//! books those lookups cost more than the typesetting. What depends on the pages instead comes
//! in as plain data from the previous pass ([`PageData`]): the contents' page numbers, each
//! page's folio, and which pages carry a running head.

use std::fmt::Write as _;

use crate::document::{Block, Division, Document};
use crate::ebook::BookMetadata;
use crate::ebook::metadata::bounds::shortened;
use crate::labels::Key;
use crate::language::Direction;
use crate::paperback::Edition;
use crate::style::Style;

use super::markup::{Emitter, Literal, Room, typst_language};
use super::strings::literal;
use super::trim::PageGeometry;

/// Labels Typst carries from the source to the pages, read back after each pass.
pub(crate) const CHAPTER_LABEL: &str = "bindery-chapter";
pub(crate) const CONTENTS_LABEL: &str = "bindery-contents";
/// Marks the copyright page (the title page's verso), which the interior names as a
/// destination ([`super::COPYRIGHT_DESTINATION`]).
pub(crate) const COPYRIGHT_LABEL: &str = "bindery-copyright";

/// What one pass learnt of the pages, for the next to print.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct PageData {
    /// One letter a physical page: `h` running head and folio, `f` folio only, `n` neither.
    pub styles: String,
    /// Each physical page's folio (`iii`, `12`).
    pub folios: Vec<String>,
    /// The folio of each contents entry's first page.
    pub contents: Vec<String>,
    /// Each physical page's chapter, as a running head names it (`""` before the first), when
    /// the style's running heads name chapters ([`running_titles`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub heads: Vec<String>,
}

/// What the running heads call each chapter, when the style's heads name chapters
/// (`running_head` `chapter`): the line under a heading that only numbers it, else the heading
/// as written; none for a chapter without a heading. Empty for a style whose heads do not.
pub(crate) fn running_titles(
    document: &Document,
    metadata: &BookMetadata,
    style: &Style,
) -> Vec<String> {
    use crate::style::HeadContent;
    let head = &style.running_head;
    if head.verso != HeadContent::Chapter && head.recto != HeadContent::Chapter {
        return Vec::new();
    }
    let labels = metadata.labels();
    document
        .chapters
        .iter()
        .enumerate()
        .map(|(i, chapter)| {
            let Some(Block::Heading { content, .. }) = chapter.blocks.first() else {
                return String::new();
            };
            let replaced = crate::style::opening::head(
                style,
                &metadata.language,
                &labels,
                &document.chapters,
                i,
            )
            .replaces_title;
            let title = match crate::document::chapters::subtitle(chapter) {
                Some(subtitle) if replaced => subtitle,
                _ => crate::document::inline_text(content),
            };
            shortened(title.trim(), RUNNING_HEAD_CHARS)
        })
        .collect()
}

/// Where the book's chapters go.
pub(crate) struct Arrangement {
    /// Chapters before the contents (a dedication, an epigraph), with roman folios.
    pub before_contents: std::ops::Range<usize>,
    /// Chapters in the contents; the first of `body` is page 1.
    pub listed: std::ops::Range<usize>,
    /// The first chapter with arabic folios, if any.
    pub body: Option<usize>,
}

impl Arrangement {
    pub fn of(document: &Document) -> Arrangement {
        let chapters = &document.chapters;
        let lead = |from: usize, divisions: &[Division]| {
            from + chapters[from..]
                .iter()
                .take_while(|c| divisions.contains(&c.division))
                .count()
        };
        let before = lead(0, &[Division::Dedication, Division::Epigraph]);
        let roman = lead(before, &[Division::Foreword, Division::Preface]);
        Arrangement {
            before_contents: 0..before,
            listed: before..chapters.len(),
            body: (roman < chapters.len()).then_some(roman),
        }
    }
}

/// What a piece's source is written from.
#[derive(Clone, Copy)]
pub(crate) struct Text<'a> {
    pub document: &'a Document,
    pub resources: &'a std::collections::BTreeMap<String, Vec<u8>>,
    pub metadata: &'a BookMetadata,
    pub style: &'a Style,
}

/// The generated source and where the book's text sits in it.
pub(crate) struct Generated {
    pub source: String,
    pub literals: Vec<Literal>,
    pub warnings: Vec<crate::report::Warning>,
}

/// A piece of the book, typeset on its own: the front matter (the title pages, what goes
/// before the contents, and the contents), or a run of chapters from the contents. Every piece
/// opens on a recto, as a chapter does, so its pages do not depend on those before it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Piece {
    pub front: bool,
    pub chapters: std::ops::Range<usize>,
}

/// The source of one piece, laid out bare: no running heads or folios, so that an empty page
/// can be told from a full one, and so that the body is the same layout whatever the folios
/// ([`margins`] sets those apart). Without `pages` (the measure) the contents' numbers are
/// placeholders; with it (setting the piece for print), its `contents` are the numbers.
pub(crate) fn generate(
    book: Text<'_>,
    geometry: PageGeometry,
    piece: &Piece,
    pages: Option<&PageData>,
    fonts: &str,
) -> Generated {
    let Text {
        document,
        resources,
        metadata,
        style,
    } = book;
    let (text_width, text_height) = geometry.text_block();
    let mut e = Emitter::new(
        document,
        resources,
        Room {
            width: text_width,
            height: text_height * 0.6,
        },
        style,
        metadata,
    );
    e.raw(&preamble(metadata, geometry, None, fonts, style));
    let arrangement = Arrangement::of(document);
    if piece.front {
        e.raw(&front_matter(metadata));
    }
    e.raw(&super::style::paragraphs(style));
    for i in piece.chapters.clone() {
        open_chapter(&mut e, i);
        e.chapter(i, &document.chapters[i]);
    }
    if piece.front && !arrangement.listed.is_empty() {
        e.raw(&contents(document, metadata, &arrangement, pages));
    }
    Generated {
        source: e.out,
        literals: e.literals,
        warnings: e.warnings,
    }
}

/// The source of a style's preview (`crate::style::preview`): the title pages, then the
/// excerpt's opening chapter as the book sets it, then its passage with a scene break on a page
/// of its own, run on as the middle of a chapter. With `pages`, its running heads and folios.
pub(crate) fn preview(
    text: Text<'_>,
    geometry: PageGeometry,
    fonts: &str,
    pages: Option<&PageData>,
    opening: Option<usize>,
    scene: Option<usize>,
) -> String {
    let (text_width, text_height) = geometry.text_block();
    let mut e = Emitter::new(
        text.document,
        text.resources,
        Room {
            width: text_width,
            height: text_height * 0.6,
        },
        text.style,
        text.metadata,
    );
    e.raw(&preamble(text.metadata, geometry, pages, fonts, text.style));
    e.raw(&front_matter(text.metadata));
    e.raw(&super::style::paragraphs(text.style));
    if let Some(i) = opening {
        open_chapter(&mut e, i);
        e.chapter(i, &text.document.chapters[i]);
    }
    if let Some(i) = scene {
        e.raw(&format!(
            "#pagebreak(weak: true)\n#metadata({i})<{CHAPTER_LABEL}>\n"
        ));
        e.passage(i, &text.document.chapters[i]);
    }
    e.out
}

/// The margins of a piece's `pages.styles.len()` pages alone: each page's running head and
/// folio as `pages` says, on pages of the same setup with nothing in their text block. They
/// are laid over the bare pages' own (`pieces::set`).
pub(crate) fn margins(
    metadata: &BookMetadata,
    g: PageGeometry,
    fonts: &str,
    pages: &PageData,
    style: &Style,
) -> String {
    let mut out = preamble(metadata, g, Some(pages), fonts, style);
    let count = pages.styles.chars().count();
    for _ in 1..count {
        out.push_str("#pagebreak()\n");
    }
    out
}

/// What a running head and a folio can print, set as they are: the union of glyphs the
/// pieces share ([`super::glyphs`]) takes them from this, since the pass that measures the
/// pieces prints neither.
pub(crate) fn furniture(
    metadata: &BookMetadata,
    g: PageGeometry,
    fonts: &str,
    style: &Style,
    heads: &[String],
) -> String {
    let mut out = preamble(metadata, g, None, fonts, style);
    let title = literal(&shortened(&metadata.title, RUNNING_HEAD_CHARS));
    let author = literal(&shortened(&authors(metadata), RUNNING_HEAD_CHARS));
    // The chapters' titles, when the heads name them: one line of all of them.
    let chapters = literal(&heads.join(" "));
    let _ = write!(
        out,
        r#"#[
  #set text(size: 0.8em, tracking: 0.04em, hyphenate: false)
  #smallcaps({title})

  #smallcaps({author})

  #smallcaps({chapters})

  #upper({title})

  #upper({author})

  #upper({chapters})

  #{title}

  #{author}

  #{chapters}
]

#text(size: 0.85em, "0123456789 ivxlcdm")

#"0123456789 ivxlcdm."
"#
    );
    out
}

fn open_chapter(e: &mut Emitter<'_>, index: usize) {
    e.raw(&format!(
        "#pagebreak(to: \"odd\", weak: true)\n#metadata({index})<{CHAPTER_LABEL}>\n"
    ));
}

/// The authors, joined in the book's language.
fn authors(metadata: &BookMetadata) -> String {
    metadata.labels().join(&metadata.authors)
}

/// The most characters of a running head: a line of small capitals across the narrowest
/// trim's text block.
const RUNNING_HEAD_CHARS: usize = 48;

/// Everything of the book that prints: its chapters and notes, and the metadata the front
/// matter and the running heads show. Its scripts choose the fonts.
pub(crate) fn book_text(document: &Document, metadata: &BookMetadata) -> String {
    let mut text = String::new();
    for chapter in &document.chapters {
        text.push_str(&chapter.title);
        text.push_str(&crate::document::plain_text(&chapter.blocks));
    }
    for note in &document.notes {
        text.push_str(&crate::document::plain_text(&note.blocks));
    }
    text.push_str(&metadata_text(metadata));
    text
}

/// The metadata a printed page or cover may show.
pub(crate) fn metadata_text(metadata: &BookMetadata) -> String {
    let mut text = metadata.title.clone();
    for value in metadata
        .subtitle
        .iter()
        .chain(&metadata.authors)
        .chain(&metadata.publisher)
        .chain(&metadata.rights)
        .chain(&metadata.blurb)
        .chain(&metadata.description)
        .chain(metadata.labels.values())
    {
        text.push(' ');
        text.push_str(value);
    }
    text
}

/// The body text's font list, as Typst source: Bindery's own serif faces, then the system's
/// faces for the scripts of `text` (the forms of `language` first), then the operator's, and
/// DejaVu Sans Mono for symbols alone. Typst is not let fall back to a face of its choosing
/// (`fallback: false` beside it): a letter none of these draws is missing, and said so, rather
/// than set in a monospaced code font.
pub(crate) fn body_fonts(needs: &super::fonts::FontNeeds, language: &str) -> String {
    let mut families: Vec<String> = vec!["Libertinus Serif".into(), "New Computer Modern".into()];
    for script in needs.scripts() {
        families.extend(script.families_for(language).into_iter().map(str::to_owned));
    }
    families.extend(super::fonts::operator_families());
    let mut list: String = families
        .iter()
        .map(|f| format!("{}, ", literal(f)))
        .collect();
    list.push_str(r#"(name: "DejaVu Sans Mono", covers: regex("[^\p{L}\p{M}]"))"#);
    list
}

/// The PDF's own title and authors (`#set document`), which the interior and the cover both
/// carry: a printer's queue and a reader's viewer list files by them.
pub(crate) fn document_set(metadata: &BookMetadata) -> String {
    let authors: String = metadata
        .authors
        .iter()
        .map(|a| format!("{},", literal(a)))
        .collect();
    format!(
        "#set document(title: {}, author: ({authors}))\n",
        literal(&metadata.title)
    )
}

fn preamble(
    metadata: &BookMetadata,
    g: PageGeometry,
    pages: Option<&PageData>,
    fonts: &str,
    style: &Style,
) -> String {
    let (width, height) = g.media();
    let (inside, outside, top, bottom) = g.margins();
    let (_, text_height) = g.text_block();
    // The running heads are a line each: a long title or list of authors is shortened there.
    let title = literal(&shortened(&metadata.title, RUNNING_HEAD_CHARS));
    let author = literal(&shortened(&authors(metadata), RUNNING_HEAD_CHARS));
    let (lang, region) = typst_language(&metadata.language).unwrap_or(("en".into(), None));
    let region = region.map_or_else(|| "none".to_owned(), |r| format!("\"{r}\""));
    let size = super::trim::font_size(g.trim);
    // A right-to-left book is bound on the right: its recto pages have their inside margin
    // there. Typst sets the text's direction from `lang` itself.
    let binding = match Direction::of(&metadata.language) {
        Direction::LeftToRight => "left",
        Direction::RightToLeft => "right",
    };
    let sink = text_height * style.chapter.sink.0;
    let size = style.body.size.map_or(size, |points| points.0);
    let body_fonts = format!("{}, {fonts}", literal(&style.body.font));
    let title_fonts = format!("{}, {fonts}", literal(style.title_font()));
    let leading = super::style::leading(style);
    let justify = style.paragraph.justify;
    let mut out = document_set(metadata);
    let _ = write!(
        out,
        r#"#set page(
  width: {width:.4}in, height: {height:.4}in, binding: {binding},
  margin: (inside: {inside:.4}in, outside: {outside:.4}in, top: {top:.4}in, bottom: {bottom:.4}in),
  // The running head and the folio sit as far from the trim whatever the bleed.
  header-ascent: 12pt, footer-descent: 12pt,
)
#set text(font: ({body_fonts}), fallback: false, size: {size}pt, lang: "{lang}", region: {region}, hyphenate: true, costs: (widow: 100%, orphan: 100%))
#set par(justify: {justify}, leading: {leading}, spacing: {leading}, first-line-indent: 0pt)
#show raw: set text(font: "DejaVu Sans Mono", size: 0.8em)
#let bindery-code(text) = block(width: 100%, inset: (left: 1em, y: 0.3em), raw(text, block: true))
#let bindery-dash(n) = box(text(tracking: -0.05em, "\u{{2014}}" * n))
#let bindery-mono(body) = text(font: "DejaVu Sans Mono", size: 0.85em, body)
#let bindery-figure(image, caption) = block(breakable: false, width: 100%, above: 1.2em, below: 1.2em, {{
  align(center, image)
  if caption != none {{ v(0.4em); align(center, text(size: 0.9em, caption)) }}
}})
#let bindery-table-caption(body) = block(above: 1em, below: 0.5em, sticky: true, width: 100%, align(center, text(size: 0.9em, body)))
#let bindery-table(columns, ..cells) = block(above: 0.8em, below: 1.2em, {{
  set text(size: 0.85em)
  set par(justify: false, first-line-indent: 0pt)
  table(columns: (1fr,) * columns, inset: 4pt, stroke: 0.4pt, ..cells)
}})
"#,
    );
    out.push_str(&super::style::definitions(&super::style::Setup {
        style,
        title_fonts: &title_fonts,
        sink,
    }));
    if let Some(pages) = pages {
        let folios: String = pages.folios.iter().map(|f| format!("\"{f}\",")).collect();
        let heads: String = pages
            .heads
            .iter()
            .map(|h| format!("{},", literal(h)))
            .collect();
        let _ = writeln!(
            out,
            "#let bindery-styles = \"{styles}\"\n#let bindery-folios = ({folios})\n#let bindery-heads = ({heads})",
            styles = pages.styles,
        );
        out.push_str(&super::style::margins(style, &title, &author));
    }
    out
}

fn front_matter(m: &BookMetadata) -> String {
    let title = literal(&m.title);
    let mut out = format!(
        "#v(1.5in)\n#align(center, text(font: bindery-title-font, size: 1.5em, hyphenate: false, {title}))\n#pagebreak(to: \"odd\")\n#v(1.2in)\n#align(center, text(font: bindery-title-font, size: 2.2em, hyphenate: false, {title}))\n"
    );
    if let Some(subtitle) = &m.subtitle {
        let _ = writeln!(
            out,
            "#v(0.2in)\n#align(center, text(size: 1.2em, style: \"italic\", hyphenate: false, {}))",
            literal(subtitle)
        );
    }
    if !m.authors.is_empty() {
        let _ = writeln!(
            out,
            "#v(0.6in)\n#align(center, text(size: 1.3em, hyphenate: false, {}))",
            literal(&authors(m))
        );
    }
    if let Some(publisher) = &m.publisher {
        let _ = writeln!(
            out,
            "#v(1fr)\n#align(center, text(size: 0.9em, {}))",
            literal(publisher)
        );
    }
    // The copyright page: what the metadata says, at the foot of the title page's verso.
    let year = m
        .date
        .as_deref()
        .and_then(|d| d.get(..4))
        .filter(|y| y.bytes().all(|b| b.is_ascii_digit()));
    let labels = m.labels();
    let mut lines = vec![m.title.clone()];
    if let Some(subtitle) = &m.subtitle {
        lines[0] = format!("{}: {subtitle}", m.title);
    }
    match (&m.rights, year) {
        (Some(rights), _) => lines.push(rights.clone()),
        (None, Some(year)) if !m.authors.is_empty() => lines.push(labels.fill(
            Key::CopyrightYear,
            &[("year", year), ("authors", &authors(m))],
        )),
        _ if !m.authors.is_empty() => lines.push(format!("© {}", authors(m))),
        _ => {}
    }
    // Every edition's ISBN, named as publishers print them ("ISBN 978… (hardcover)"); a book
    // of one ISBN prints it bare, as the paperback's or, lacking one, the ebook's.
    let isbns = m.isbns();
    if isbns.len() > 1 {
        for (edition, isbn) in isbns {
            let name = match edition {
                Some(Edition::Paperback) => Key::EditionPaperback,
                Some(Edition::Hardcover) => Key::EditionHardcover,
                Some(Edition::LargePrint) => Key::EditionLargePrint,
                None => Key::EditionEbook,
            };
            lines.push(format!("ISBN {isbn} ({})", labels.get(name)));
        }
    } else if let Some(isbn) = m.print_isbn.as_ref().or(m.isbn.as_ref()) {
        lines.push(format!("ISBN {isbn}"));
    }
    if let Some(publisher) = &m.publisher {
        lines.push(labels.fill(Key::PublishedBy, &[("publisher", publisher)]));
    }
    if let (Some(date), None) = (&m.date, &m.rights) {
        lines.push(labels.fill(Key::FirstPublished, &[("date", date)]));
    }
    lines.push(labels.get(Key::TypesetWithBindery).to_owned());
    let _ = write!(
        out,
        "#pagebreak()\n#metadata(none)<{COPYRIGHT_LABEL}>\n#v(1fr)\n#[\n#set text(size: 0.8em)\n#set par(justify: false, spacing: 0.9em)\n"
    );
    for line in lines {
        let _ = write!(out, "#{}\n\n", literal(&line));
    }
    out.push_str("]\n");
    out
}

fn contents(
    document: &Document,
    metadata: &BookMetadata,
    arrangement: &Arrangement,
    pages: Option<&PageData>,
) -> String {
    let heading = literal(metadata.labels().get(Key::Contents));
    let mut out = format!(
        "#pagebreak(to: \"odd\", weak: true)\n#metadata(none)<{CONTENTS_LABEL}>\n#[\n#set par(justify: false, first-line-indent: 0pt, spacing: 0.75em, hanging-indent: 1em)\n#v(0.8in)\n#align(center, text(size: 1.4em, {heading}))\n#v(0.3in)\n"
    );
    for (n, i) in arrangement.listed.clone().enumerate() {
        let chapter = &document.chapters[i];
        let title = if chapter.title.trim().is_empty() {
            format!("{}", i + 1)
        } else {
            chapter.title.clone()
        };
        let folio = pages
            .and_then(|p| p.contents.get(n))
            .map_or("000", String::as_str);
        let _ = write!(out, "#{}", literal(&title));
        // "I  A Letter with a Postscript": a number alone tells a reader nothing.
        if let Some(subtitle) = crate::document::chapters::subtitle(chapter) {
            let _ = write!(out, "#h(0.8em)#{}", literal(&subtitle));
        }
        let _ = write!(
            out,
            "#box(width: 1fr, repeat(h(0.25em) + \".\" + h(0.25em)))#{}\n\n",
            literal(folio)
        );
    }
    out.push_str("]\n");
    out
}
