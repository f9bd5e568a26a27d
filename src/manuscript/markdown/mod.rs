//! Markdown manuscripts: CommonMark with tables, footnotes, strikethrough, smart punctuation,
//! heading ids, definition lists, super- and subscript, and YAML front matter.
//!
//! `pulldown-cmark` streams events; they drive a [`builder::Builder`] (shared with raw HTML,
//! see `html.rs`). After the tree is built, headings get ids and links are checked against
//! them, so a link either works in the book or is removed with its text kept.

pub(crate) mod builder;
pub(crate) mod front_matter;
pub(crate) mod ids;
mod math;
pub(crate) mod resources;

use pulldown_cmark::{Alignment, CodeBlockKind, Event, LinkType, Options, Parser, Tag, TagEnd};

use super::{InputError, Limits, html};
use crate::document::{Align, Block, Document, Inline, ListKind, Metadata, Parsed, chapters};
use crate::report::Warning;
use builder::{BlockKind, Builder, Flattened, InlineKind, LeafKind};
use math::Maths;
use resources::Resources;

/// Whether text uses Markdown syntax enough to be read as Markdown rather than plain text.
///
/// Prose has none of these line shapes, or only by accident (a line starting with `- ` in
/// dialogue, an asterisk for emphasis), so a few distinct signals are required, or one
/// that prose never has (front matter, a fence, a heading, a link).
pub fn looks_like_markdown(text: &str) -> bool {
    if text.starts_with("---\n") && text[4..].contains("\n---") {
        return true;
    }
    let mut score = 0u32;
    let mut lines = 0u32;
    for line in text.lines().take(5000) {
        lines += 1;
        let t = line.trim_start();
        let strong = t.starts_with("```")
            || atx_heading(t)
            || (t.starts_with('|') && t.ends_with('|') && t.len() > 2)
            || line.contains("](")
            || t.starts_with("[^")
            || (t.starts_with('[') && t.contains("]: "))
            || tex_math(line);
        let weak = t.starts_with("> ")
            || t.starts_with("* ")
            || t.starts_with("- ")
            || t.starts_with("+ ")
            || ordered_item(t)
            || line.contains("**")
            || line.contains("__")
            || (line.contains('`') && line.matches('`').count() >= 2)
            || emphasis(line);
        score += if strong { 3 } else { u32::from(weak) };
        if score >= 6 {
            return true;
        }
    }
    lines > 0 && score >= 3
}

/// TeX mathematics, which prose never has: a line opening `$$` or `\\[`, or a `$…$` or
/// `\\(…\\)` span (by pandoc's rules for dollars) holding a command, a script or a group.
/// Prices (`$5 and $10`) are not.
fn tex_math(line: &str) -> bool {
    let t = line.trim_start();
    if t.starts_with("$$") || t.starts_with("\\[") {
        return true;
    }
    let texy = |s: &str| s.contains(['\\', '^', '_', '{']);
    if let Some((_, after)) = line.split_once("\\(")
        && after
            .split_once("\\)")
            .is_some_and(|(inside, _)| texy(inside))
    {
        return true;
    }
    line.split('$')
        .skip(1)
        .step_by(2)
        .zip(line.split('$').skip(2).step_by(2))
        .any(|(inside, after)| {
            !inside.is_empty()
                && !inside.starts_with(' ')
                && !inside.ends_with(' ')
                && !after.starts_with(|c: char| c.is_ascii_digit())
                && texy(inside)
        })
}

fn atx_heading(t: &str) -> bool {
    let hashes = t.bytes().take_while(|&b| b == b'#').count();
    (1..=6).contains(&hashes) && t[hashes..].starts_with(' ') && !t[hashes..].trim().is_empty()
}

fn ordered_item(t: &str) -> bool {
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    (1..=3).contains(&digits) && t[digits..].starts_with(". ")
}

/// `*word*` or `_word_`: a single delimiter hugging a word on both sides.
fn emphasis(line: &str) -> bool {
    ['*', '_'].iter().any(|&d| {
        line.split(d).skip(1).step_by(2).any(|inner| {
            !inner.is_empty()
                && !inner.starts_with(' ')
                && !inner.ends_with(' ')
                && inner.len() < 80
        }) && line.matches(d).count() >= 2
    })
}

pub fn read(text: &str, limits: &Limits) -> Result<Parsed, InputError> {
    let mut metadata = Metadata::default();
    let body = pandoc_title_block(text, &mut metadata);
    let mut res = Resources::new(limits);
    let mut builder = Builder::new(&mut res);
    let mut state = Events::default();
    let mut maths = Maths::new();
    let options = options(body);
    let source = math::rewrite_delimiters(body, options);
    for (event, range) in Parser::new_ext(&source, options).into_offset_iter() {
        builder.offset = range.start;
        let event = match event {
            Event::InlineMath(tex) => {
                let inline = maths.inline(&source, body, range, &tex, false);
                state.math(inline, &mut builder)?;
                continue;
            }
            Event::DisplayMath(tex) => {
                let inline = maths.inline(&source, body, range, &tex, true);
                state.math(inline, &mut builder)?;
                continue;
            }
            event => event,
        };
        state.event(event, &mut builder, &mut metadata)?;
    }
    let flattened = builder.flattened;
    let (mut blocks, mut notes) = builder.finish()?;
    maths.resolve(&mut blocks, &mut notes);
    let mut warnings = std::mem::take(&mut res.warnings);
    warnings.append(&mut maths.warnings);
    if let Some(flattened) = flattened {
        warnings.push(nesting_flattened(text, body, flattened));
    }
    ids::resolve(&mut blocks, &mut notes, &mut warnings);
    let chapters = chapters::split(blocks, &mut metadata, &mut warnings);
    Ok(Parsed {
        document: Document {
            metadata,
            chapters,
            notes,
            images: res.images,
        },
        resources: res.bytes,
        warnings,
        cover: None,
    })
}

/// The report's word on input nested deeper than the model keeps.
fn nesting_flattened(text: &str, body: &str, flattened: Flattened) -> Warning {
    // `body` is the end of `text` (after any title block): count lines from the top.
    let before = &text[..text.len() - body.len()];
    let upto = &body[..flattened.offset.min(body.len())];
    let line = before.matches('\n').count() + upto.matches('\n').count() + 1;
    Warning::new(
        "nesting_flattened",
        format!(
            "Lists and quotes here nest {} levels deep; from level {} on they were flattened \
             into the level above, so that part keeps its text but loses its indentation.",
            flattened.deepest, flattened.from_level
        ),
    )
    .at(format!("line {line}"))
}

fn options(text: &str) -> Options {
    let mut options = Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_SMART_PUNCTUATION
        | Options::ENABLE_HEADING_ATTRIBUTES
        | Options::ENABLE_DEFINITION_LIST
        | Options::ENABLE_SUPERSCRIPT
        | Options::ENABLE_SUBSCRIPT
        | Options::ENABLE_MATH;
    // pulldown-cmark takes `---` … `---` anywhere as metadata; only a document that opens
    // with front matter gets the option, and later blocks are handled in `Events::event`.
    if text.starts_with("---") {
        options |= Options::ENABLE_YAML_STYLE_METADATA_BLOCKS;
    }
    options
}

/// pandoc's title block: up to three `%` lines (title, authors, date) at the very top.
fn pandoc_title_block<'t>(text: &'t str, metadata: &mut Metadata) -> &'t str {
    let mut rest = text;
    let mut fields = Vec::new();
    while fields.len() < 3
        && let Some(line) = rest.strip_prefix('%')
    {
        let (line, after) = line.split_once('\n').unwrap_or((line, ""));
        fields.push(line.trim().to_owned());
        rest = after;
    }
    let mut fields = fields.into_iter();
    if let Some(title) = fields.next().filter(|t| !t.is_empty()) {
        metadata.title = Some(title);
    }
    if let Some(authors) = fields.next() {
        metadata.authors.extend(
            authors
                .split(';')
                .map(str::trim)
                .filter(|a| !a.is_empty())
                .map(str::to_owned),
        );
    }
    if let Some(date) = fields.next().filter(|d| !d.is_empty()) {
        metadata.date = Some(date);
    }
    rest
}

/// State that spans events but is not part of the tree.
#[derive(Default)]
struct Events {
    /// Text of an open code block, HTML block or metadata block.
    raw: Option<Raw>,
    /// Whether anything but front matter was seen: metadata is only at the very top.
    started: bool,
}

enum Raw {
    Code(Option<String>, String),
    Html(String),
    Metadata(String),
}

impl Events {
    fn event(
        &mut self,
        event: Event,
        b: &mut Builder,
        metadata: &mut Metadata,
    ) -> Result<(), InputError> {
        if let Some(raw) = &mut self.raw {
            match (raw, &event) {
                (
                    Raw::Code(_, text) | Raw::Html(text) | Raw::Metadata(text),
                    Event::Text(t) | Event::Html(t),
                ) => {
                    text.push_str(t);
                    return Ok(());
                }
                (_, Event::End(_)) => return self.end_raw(b, metadata),
                _ => {}
            }
        }
        if !matches!(event, Event::Start(Tag::MetadataBlock(_))) {
            self.started = true;
        }
        match event {
            Event::Start(tag) => self.start(tag, b),
            Event::End(tag) => end(tag, b),
            Event::Text(text) => b.text(&text),
            Event::Code(code) => b.inline(Inline::Code(code.into_string())),
            // `read` turns math into equations before it gets here.
            Event::InlineMath(code) | Event::DisplayMath(code) => {
                b.inline(Inline::Code(code.into_string()))
            }
            Event::Html(html) => html::block(&html, b),
            Event::InlineHtml(html) => html::inline(&html, b),
            Event::FootnoteReference(label) => b.inline(Inline::NoteRef(label.into_string())),
            Event::SoftBreak => b.text(" "),
            Event::HardBreak => b.inline(Inline::LineBreak),
            Event::Rule => b.add_block(Block::SceneBreak),
            Event::TaskListMarker(done) => b.text(if done { "[x] " } else { "[ ] " }),
        }
    }

    /// An equation (see `math.rs`), where the text is.
    fn math(&mut self, inline: Inline, b: &mut Builder) -> Result<(), InputError> {
        self.started = true;
        match inline {
            Inline::Text(text) => b.text(&text),
            inline => b.inline(inline),
        }
    }

    fn start(&mut self, tag: Tag, b: &mut Builder) -> Result<(), InputError> {
        match tag {
            Tag::Paragraph => b.open_leaf(LeafKind::Paragraph),
            Tag::Heading { level, id, .. } => b.open_leaf(LeafKind::Heading {
                level: level as u8,
                id: id.map(|i| i.into_string()).filter(|i| !i.is_empty()),
            }),
            Tag::BlockQuote(_) => b.open_block(BlockKind::Quote, None),
            Tag::CodeBlock(kind) => {
                b.close_leaf()?;
                let language = match kind {
                    CodeBlockKind::Fenced(info) => info
                        .split_whitespace()
                        .next()
                        .map(|l| l.trim_matches(['{', '}', '.']).to_owned())
                        .filter(|l| !l.is_empty()),
                    CodeBlockKind::Indented => None,
                };
                self.raw = Some(Raw::Code(language, String::new()));
                Ok(())
            }
            Tag::HtmlBlock => {
                self.raw = Some(Raw::Html(String::new()));
                Ok(())
            }
            Tag::MetadataBlock(_) => {
                self.raw = Some(Raw::Metadata(String::new()));
                Ok(())
            }
            Tag::List(start) => b.open_block(
                BlockKind::List {
                    kind: if start.is_some() {
                        ListKind::Decimal
                    } else {
                        ListKind::Bullet
                    },
                    start: start.map_or(1, |s| u32::try_from(s).unwrap_or(u32::MAX)),
                    items: Vec::new(),
                },
                None,
            ),
            Tag::Item => b.open_block(BlockKind::Item, None),
            Tag::FootnoteDefinition(label) => {
                b.open_block(BlockKind::Note(label.into_string()), None)
            }
            Tag::DefinitionList => b.open_block(BlockKind::DefinitionList(Vec::new()), None),
            Tag::DefinitionListTitle => b.open_leaf(LeafKind::Term),
            Tag::DefinitionListDefinition => b.open_block(BlockKind::Definition, None),
            Tag::Table(aligns) => b.open_block(
                BlockKind::Table {
                    aligns: aligns.into_iter().map(align).collect(),
                    head: Vec::new(),
                    body: Vec::new(),
                    in_head: false,
                },
                None,
            ),
            Tag::TableHead => {
                b.set_table_head(true);
                b.open_block(BlockKind::Row(Vec::new()), None)
            }
            Tag::TableRow => b.open_block(BlockKind::Row(Vec::new()), None),
            Tag::TableCell => b.open_block(
                BlockKind::Cell {
                    header: false,
                    colspan: 1,
                    rowspan: 1,
                },
                None,
            ),
            Tag::Emphasis => b.open_inline(InlineKind::Emphasis, None),
            Tag::Strong => b.open_inline(InlineKind::Strong, None),
            Tag::Strikethrough => b.open_inline(InlineKind::Strikethrough, None),
            Tag::Superscript => b.open_inline(InlineKind::Superscript, None),
            Tag::Subscript => b.open_inline(InlineKind::Subscript, None),
            Tag::Link {
                link_type,
                dest_url,
                ..
            } => {
                let target = b.res.link_target(&dest_url, link_type == LinkType::Email);
                b.open_inline(InlineKind::Link(target), None)
            }
            Tag::Image {
                dest_url, title, ..
            } => b.open_inline(
                InlineKind::Image {
                    url: dest_url.into_string(),
                    title: title.into_string(),
                },
                None,
            ),
        }
    }

    fn end_raw(&mut self, b: &mut Builder, metadata: &mut Metadata) -> Result<(), InputError> {
        match self.raw.take() {
            Some(Raw::Code(language, mut text)) => {
                if text.ends_with('\n') {
                    text.pop();
                }
                b.add_block(Block::CodeBlock { language, text })
            }
            Some(Raw::Html(html)) => html::block(&html, b),
            Some(Raw::Metadata(yaml)) => {
                if !self.started {
                    self.started = true;
                    return front_matter::parse(&yaml, metadata);
                }
                // A later `---` … `---` pair is a rule and text, not metadata.
                b.add_block(Block::SceneBreak)?;
                for paragraph in yaml.split("\n\n").map(str::trim).filter(|p| !p.is_empty()) {
                    b.open_leaf(LeafKind::Paragraph)?;
                    b.text(&paragraph.split_whitespace().collect::<Vec<_>>().join(" "))?;
                    b.close_leaf()?;
                }
                Ok(())
            }
            None => Ok(()),
        }
    }
}

fn end(tag: TagEnd, b: &mut Builder) -> Result<(), InputError> {
    match tag {
        TagEnd::Paragraph | TagEnd::Heading(_) | TagEnd::DefinitionListTitle => b.close_leaf(),
        TagEnd::BlockQuote(_)
        | TagEnd::List(_)
        | TagEnd::Item
        | TagEnd::FootnoteDefinition
        | TagEnd::DefinitionList
        | TagEnd::DefinitionListDefinition
        | TagEnd::Table
        | TagEnd::TableRow
        | TagEnd::TableCell => b.close_block(),
        TagEnd::TableHead => {
            b.close_block()?;
            b.set_table_head(false);
            Ok(())
        }
        TagEnd::Emphasis
        | TagEnd::Strong
        | TagEnd::Strikethrough
        | TagEnd::Superscript
        | TagEnd::Subscript
        | TagEnd::Link
        | TagEnd::Image => b.close_inline(),
        // Raw blocks end in `Events::end_raw`.
        TagEnd::CodeBlock | TagEnd::HtmlBlock | TagEnd::MetadataBlock(_) => Ok(()),
    }
}

fn align(a: Alignment) -> Align {
    match a {
        Alignment::None => Align::Default,
        Alignment::Left => Align::Left,
        Alignment::Center => Align::Center,
        Alignment::Right => Align::Right,
    }
}

#[cfg(test)]
mod tests;
