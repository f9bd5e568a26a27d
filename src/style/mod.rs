//! Book styles: one plain file (TOML) decides how a book looks, and every edition follows it.
//! The EPUB's stylesheet and the web reader's ([`css`]) and the print edition's Typst template
//! ([`typst`]) are all written from the same [`Style`]; no design decision is written anywhere
//! else. The built-in styles are files in `styles/`, compiled in ([`builtin`]); a house style
//! is the same kind of file with its fonts beside it.
//!
//! A style file is read strictly: an unknown key, a value out of range or of the wrong kind is
//! refused with its line and what is allowed (serde with `deny_unknown_fields`, and values that
//! check themselves as they are read), so that a mistyped key never passes as the default.

pub mod builtin;
pub mod css;
pub mod fonts;
pub mod house;
pub mod numbers;
pub mod opening;
pub mod preview;
mod values;

use serde::{Deserialize, Serialize};

pub use values::{Color, Em, Glyph, Lines, Points, Share, Words, decimal};

/// The style a book gets when it names none: the look Bindery always had.
pub const DEFAULT: &str = "bindery";

/// A style's name: how a book, the command line and the API choose it (`classic`,
/// `house-noir`). Lowercase letters, digits and single hyphens, at most 40 characters.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct StyleName(String);

impl StyleName {
    pub fn parse(s: &str) -> Result<StyleName, String> {
        let s = s.trim().to_ascii_lowercase();
        let ok = !s.is_empty()
            && s.len() <= 40
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !s.starts_with('-')
            && !s.ends_with('-')
            && !s.contains("--");
        if ok {
            Ok(StyleName(s))
        } else {
            let shown: String = s.chars().take(40).collect();
            Err(format!(
                "{shown:?} is not a style name: use 1 to 40 lowercase letters, digits and single hyphens"
            ))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for StyleName {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        StyleName::parse(&s)
    }
}

impl From<StyleName> for String {
    fn from(name: StyleName) -> String {
        name.0
    }
}

impl std::fmt::Display for StyleName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A style, as its file says. Every section may be left out, and every key in it: what is
/// not said is the default style's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Style {
    /// What people see in the picker ("Classic Garamond").
    pub title: String,
    /// A line on what the style is for.
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub body: Body,
    #[serde(default)]
    pub paragraph: Paragraph,
    #[serde(default)]
    pub chapter: ChapterOpening,
    #[serde(default)]
    pub scene_break: SceneBreak,
    #[serde(default)]
    pub running_head: RunningHead,
    #[serde(default)]
    pub folio: Folio,
    #[serde(default)]
    pub block_quote: Quote,
    #[serde(default)]
    pub verse: Verse,
    #[serde(default)]
    pub epigraph: Epigraph,
    #[serde(default)]
    pub footnote: Footnote,
    #[serde(default)]
    pub colors: Colors,
}

/// The body text's typeface and, in print, its size and leading.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Body {
    /// A family among the bundled fonts ([`fonts`]) or the style's own font files; its
    /// regular, italic, bold and bold italic are used where it has them.
    pub font: String,
    /// The print size; without it, the trim's (10 to 11 pt).
    pub size: Option<Points>,
    /// Space added between printed lines, in ems of the body.
    pub leading: Em,
    /// Whether the EPUB carries the typeface's files (the web reader always does): without
    /// them a reading system shows its own.
    pub embed: bool,
}

impl Default for Body {
    fn default() -> Self {
        Body {
            font: fonts::DEFAULT_FAMILY.to_owned(),
            size: None,
            leading: Em(0.6),
            embed: false,
        }
    }
}

/// How paragraphs are told apart, and how the first of a chapter or a scene opens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Paragraph {
    pub separation: Separation,
    /// Lines set flush on both sides (`false`: ragged right, as large print asks).
    pub justify: bool,
    /// The first line's indent, for `separation = "indent"`.
    pub indent: Em,
    /// The chapter's first paragraph.
    pub opening: Opening,
    /// How many lines a drop cap spans.
    pub drop_cap_lines: Lines,
    /// Words set in small capitals at a small-caps opening, or after a drop cap (0: none).
    pub lead_in_words: Words,
    /// The first paragraph after a scene break.
    pub after_scene_break: AfterBreak,
}

impl Default for Paragraph {
    fn default() -> Self {
        Paragraph {
            separation: Separation::Indent,
            justify: true,
            indent: Em(1.2),
            opening: Opening::Plain,
            drop_cap_lines: Lines(3),
            lead_in_words: Words(0),
            after_scene_break: AfterBreak::Plain,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Separation {
    /// Each paragraph's first line indented, no space between (a novel).
    Indent,
    /// A line's space between paragraphs, none indented.
    Space,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Opening {
    /// Flush left, as any first paragraph.
    Plain,
    /// Its first words in small capitals.
    SmallCaps,
    /// A large first letter sunk into the first lines.
    DropCap,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AfterBreak {
    Plain,
    SmallCaps,
}

/// A chapter's first page: its number, its title, and an ornament.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ChapterOpening {
    /// How chapters are numbered; a heading that is only a number (`Chapter 3`, `III`) is
    /// replaced by this, another title gets it above.
    pub number: Numbering,
    /// Whether the number says what it numbers ("Chapter Three"), in the book's language.
    pub label: bool,
    /// The number's size, in ems of the body.
    pub number_size: Em,
    pub title_case: Case,
    /// The title's size, in ems of the body.
    pub title_size: Em,
    pub title_style: FontStyle,
    pub title_weight: Weight,
    pub align: Alignment,
    /// The titles' typeface; the body's when empty.
    pub font: String,
    /// How far down the page the opening starts, as a share of the page's text block.
    pub sink: Share,
    /// A glyph set above or below the title (`❦`), or none.
    pub ornament: Option<Glyph>,
    pub ornament_position: Position,
}

impl Default for ChapterOpening {
    fn default() -> Self {
        ChapterOpening {
            number: Numbering::None,
            label: false,
            number_size: Em(1.0),
            title_case: Case::AsWritten,
            title_size: Em(1.6),
            title_style: FontStyle::Normal,
            title_weight: Weight::Regular,
            align: Alignment::Center,
            font: String::new(),
            sink: Share(0.22),
            ornament: None,
            ornament_position: Position::Below,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Numbering {
    /// The heading as the manuscript wrote it.
    None,
    Arabic,
    Roman,
    /// In words, in the book's language where Bindery can spell them (English, French,
    /// Ukrainian); in figures elsewhere, with a warning.
    Words,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Case {
    AsWritten,
    Upper,
    SmallCaps,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FontStyle {
    Normal,
    Italic,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Weight {
    Regular,
    Bold,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Alignment {
    Left,
    Center,
    Right,
}

impl FontStyle {
    /// Its name in CSS and in Typst alike.
    pub fn name(self) -> &'static str {
        match self {
            FontStyle::Normal => "normal",
            FontStyle::Italic => "italic",
        }
    }
}

impl Alignment {
    /// Its name in CSS and in Typst alike.
    pub fn name(self) -> &'static str {
        match self {
            Alignment::Left => "left",
            Alignment::Center => "center",
            Alignment::Right => "right",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Position {
    Above,
    Below,
}

/// What marks a change of scene.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SceneBreak {
    pub kind: BreakKind,
    /// The glyphs of an ornament (`⁂`, `* * *`, `❧`).
    pub ornament: Glyph,
    /// An image shipped with a house style (`leaf.svg`), for `kind = "image"`.
    pub image: Option<String>,
}

impl Default for SceneBreak {
    fn default() -> Self {
        SceneBreak {
            kind: BreakKind::Ornament,
            ornament: Glyph("\u{2042}".into()),
            image: None,
        }
    }
}

/// What a scene break shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakMark<'a> {
    Glyph(&'a Glyph),
    /// The style's image of that file name.
    Image(&'a str),
    /// Space alone.
    Space,
}

impl SceneBreak {
    /// What the break shows.
    pub fn mark(&self) -> BreakMark<'_> {
        match (self.kind, &self.image) {
            (BreakKind::Ornament, _) => BreakMark::Glyph(&self.ornament),
            (BreakKind::Image, Some(file)) => BreakMark::Image(file),
            // Refused as the file is read ([`Style::parse`]).
            (BreakKind::Image, None) | (BreakKind::Space, _) => BreakMark::Space,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BreakKind {
    /// The ornament, centred.
    Ornament,
    /// The image `image` names, centred, about a line high: a house style's own ornament.
    Image,
    /// A blank line's space alone.
    Space,
}

/// The line at the head of a printed page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RunningHead {
    /// What a left-hand page shows.
    pub verso: HeadContent,
    /// What a right-hand page shows.
    pub recto: HeadContent,
    pub case: Case,
}

impl Default for RunningHead {
    fn default() -> Self {
        RunningHead {
            verso: HeadContent::Author,
            recto: HeadContent::Title,
            case: Case::SmallCaps,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HeadContent {
    Author,
    Title,
    /// The title of the chapter the page is in (the line under a heading that only numbers
    /// it, else the heading as written).
    Chapter,
    None,
}

/// The printed page number.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Folio {
    pub position: FolioPosition,
}

impl Default for Folio {
    fn default() -> Self {
        Folio {
            position: FolioPosition::BottomCenter,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FolioPosition {
    BottomCenter,
    BottomOutside,
    /// Beside the running head, at the page's outer edge.
    TopOutside,
}

/// A quotation set apart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Quote {
    /// Indent on both sides, in ems.
    pub indent: Em,
    /// Its size, in ems of the body.
    pub size: Em,
    pub style: FontStyle,
}

impl Default for Quote {
    fn default() -> Self {
        Quote {
            indent: Em(2.0),
            size: Em(0.95),
            style: FontStyle::Normal,
        }
    }
}

/// Lines broken by hand: a poem, a song, an address.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Verse {
    /// Indent from the left, in ems.
    pub indent: Em,
    pub style: FontStyle,
}

impl Default for Verse {
    fn default() -> Self {
        Verse {
            indent: Em(0.0),
            style: FontStyle::Normal,
        }
    }
}

/// A dedication or an epigraph, on its own page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Epigraph {
    pub style: FontStyle,
    pub align: Alignment,
}

impl Default for Epigraph {
    fn default() -> Self {
        Epigraph {
            style: FontStyle::Italic,
            align: Alignment::Center,
        }
    }
}

/// Notes at the foot of a printed page, and at a chapter's end in the ebooks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Footnote {
    /// Their size, in ems of the body.
    pub size: Em,
    /// A short rule above them.
    pub rule: bool,
}

impl Default for Footnote {
    fn default() -> Self {
        Footnote {
            size: Em(0.85),
            rule: true,
        }
    }
}

/// Colour beyond black: chapter numbers and ornaments. Text colours must read on white
/// paper and on a light screen (WCAG's 4.5:1 contrast); on the reader's dark theme the
/// accent gives way to the theme's own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Colors {
    /// The chapter number's and the ornaments' colour; the text's when not given.
    pub accent: Option<Color>,
}

/// Why a style file was refused: what is wrong, on which line, and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct StyleError {
    /// 1-based, when the problem has a place in the file.
    pub line: Option<usize>,
    pub message: String,
}

impl StyleError {
    fn at(source: &str, span: Option<std::ops::Range<usize>>, message: String) -> StyleError {
        let line = span.map(|s| source[..s.start.min(source.len())].matches('\n').count() + 1);
        let message = match line {
            Some(line) => format!("line {line}: {message}"),
            None => message,
        };
        StyleError { line, message }
    }
}

impl Default for Style {
    /// The default style ([`DEFAULT`]).
    fn default() -> Style {
        builtin::default_style()
    }
}

impl Style {
    /// Reads a style file. The fonts and images it names are not looked for here
    /// ([`Style::check_files`]).
    pub fn parse(source: &str) -> Result<Style, StyleError> {
        let style = toml::from_str::<Style>(source)
            .map_err(|e| StyleError::at(source, e.span(), e.message().trim_end().to_owned()))?;
        let b = &style.scene_break;
        if b.kind == BreakKind::Image && b.image.is_none() {
            return Err(StyleError::at(
                source,
                line_of_value(source, "kind", "image"),
                "a scene break of kind \"image\" needs `image`, the file name of the ornament \
                 uploaded with the style (an SVG or a PNG)"
                    .to_owned(),
            ));
        }
        Ok(style)
    }

    /// The typefaces the style names: the body's, then the titles' where it differs.
    pub fn families(&self) -> Vec<&str> {
        let mut families = vec![self.body.font.as_str()];
        if !self.chapter.font.is_empty() && self.chapter.font != self.body.font {
            families.push(self.chapter.font.as_str());
        }
        families
    }

    /// The titles' typeface.
    pub fn title_font(&self) -> &str {
        if self.chapter.font.is_empty() {
            &self.body.font
        } else {
            &self.chapter.font
        }
    }

    /// Refuses a style whose fonts are neither bundled nor in `own` (the house style's
    /// files, by family), or whose ornament image is not among `images` (the house style's
    /// image files), naming the key and its line in `source`.
    pub fn check_files(
        &self,
        source: &str,
        own: &fonts::Families,
        images: &[&str],
    ) -> Result<(), StyleError> {
        if let Some(file) = &self.scene_break.image
            && !images.contains(&file.as_str())
        {
            let span = line_of_value(source, "image", file);
            return Err(StyleError::at(
                source,
                span,
                format!(
                    "the ornament image {file:?} is not there: upload it with the style (an \
                     SVG or a PNG){}",
                    if images.is_empty() {
                        String::new()
                    } else {
                        format!("; the images uploaded are {}", images.join(", "))
                    }
                ),
            ));
        }
        for (key, family) in [("font", &self.body.font), ("font", &self.chapter.font)] {
            if family.is_empty() || own.has(family) || fonts::Families::bundled().has(family) {
                continue;
            }
            let span = line_of_value(source, key, family);
            return Err(StyleError::at(
                source,
                span,
                format!(
                    "the font {family:?} is not there: upload its files with the style, or \
                     choose one of the bundled families ({})",
                    fonts::Families::bundled().names().join(", ")
                ),
            ));
        }
        Ok(())
    }
}

/// Where `key = "value"` sits in `source`, for an error about a value only known to be wrong
/// after the file was read.
fn line_of_value(source: &str, key: &str, value: &str) -> Option<std::ops::Range<usize>> {
    let mut at = 0;
    for line in source.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed.strip_prefix(key)
            && rest.trim_start().starts_with('=')
            && rest.contains(value)
        {
            return Some(at..at + line.len());
        }
        at += line.len();
    }
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
