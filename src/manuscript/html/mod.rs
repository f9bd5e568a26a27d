//! HTML reduced to what the document model (and so EPUB) allows: raw HTML inside Markdown,
//! and whole pages (a web page, an EPUB's documents), which [`page`] reads further.
//!
//! HTML is never passed through: it is tokenized with `html5gum` (which decodes entities)
//! and an allowlist of elements is mapped onto the same [`Builder`] that Markdown drives.
//! Elements that execute or embed something (`script`, `iframe`, `svg`, forms…) are
//! dropped with their content; any other unknown tag is dropped and its text kept.

mod head;
pub(crate) mod notes;
mod page;

use html5gum::{DefaultEmitter, StartTag, Token, Tokenizer};

pub(crate) use head::Head;
pub(crate) use page::{Looks, Page, START};

use super::InputError;
use super::markdown::builder::{BlockKind, Builder, InlineKind, LeafKind};
use crate::document::{Block, Inline, ListKind};

/// An HTML block (a run of lines starting with a tag): block structure and text.
pub(super) fn block(html: &str, builder: &mut Builder) -> Result<(), InputError> {
    blocks(html, builder, None)
}

/// One inline HTML tag (or comment) inside Markdown text; its content arrives as Markdown
/// events between the start and end tags, so frames stay open on the builder.
pub(super) fn inline(html: &str, builder: &mut Builder) -> Result<(), InputError> {
    let mut state = State {
        block_mode: false,
        floor: builder.depth(),
        pre: None,
        page: None,
    };
    state.feed(html, builder)
}

/// What reading a book's pages made, its notes settled and its links checked.
pub(crate) struct Pages {
    pub blocks: Vec<Block>,
    pub notes: Vec<crate::document::Note>,
    pub images: Vec<crate::document::Image>,
    pub resources: std::collections::BTreeMap<String, Vec<u8>>,
    pub warnings: Vec<crate::report::Warning>,
}

/// Reads a book's pages with `read` (which calls [`page`] for each, and answers the kinds of
/// the notes it found), then settles what needs the whole book: notes linked both ways, ids,
/// links, and anchors nothing links to. `files` are the images beside the pages.
pub(crate) fn pages(
    limits: &super::Limits,
    files: std::collections::HashMap<String, Vec<u8>>,
    read: impl FnOnce(&mut Builder) -> Result<Vec<(String, crate::document::NoteKind)>, InputError>,
) -> Result<Pages, InputError> {
    let mut res = super::markdown::resources::Resources::with_files(limits, files);
    let mut builder = Builder::new(&mut res);
    let kinds = read(&mut builder)?;
    let flattened = builder.flattened;
    let (mut blocks, mut notes) = builder.finish()?;
    let mut warnings = std::mem::take(&mut res.warnings);
    if let Some(flattened) = flattened {
        warnings.push(crate::report::Warning::new(
            "nesting_flattened",
            format!(
                "Lists and quotes nest {} levels deep; from level {} on they were flattened \
                 into the level above, so that part keeps its text but loses its indentation.",
                flattened.deepest, flattened.from_level
            ),
        ));
    }
    notes::settle(&mut blocks, &mut notes, &kinds);
    super::markdown::ids::resolve(&mut blocks, &mut notes, &mut warnings);
    super::tidy::unused_anchors(&mut blocks, &mut notes);
    Ok(Pages {
        blocks,
        notes,
        images: res.images,
        resources: res.bytes,
        warnings,
    })
}

/// A whole page (one HTML or XHTML document): its body's blocks go onto the builder.
pub(crate) fn page(html: &str, builder: &mut Builder, page: &mut Page) -> Result<(), InputError> {
    blocks(html, builder, Some(page))
}

/// HTML read as blocks, which end with it, closed or not.
fn blocks(html: &str, builder: &mut Builder, page: Option<&mut Page>) -> Result<(), InputError> {
    let mut state = State {
        block_mode: true,
        floor: builder.depth(),
        pre: None,
        page,
    };
    builder.close_leaf()?;
    state.feed(html, builder)?;
    if let Some(text) = state.pre.take() {
        builder.add_block(code_block(text))?;
    }
    builder.close_leaf()?;
    while builder.depth() > state.floor {
        builder.close_block()?;
    }
    Ok(())
}

struct State<'p, 's> {
    /// Block tags build blocks (in an HTML block) or are transparent (inside a paragraph).
    block_mode: bool,
    /// The builder's depth when the HTML began: HTML never closes Markdown's containers.
    floor: usize,
    /// Text of an open `<pre>`.
    pre: Option<String>,
    /// Set for a whole page.
    page: Option<&'p mut Page<'s>>,
}

impl State<'_, '_> {
    fn feed(&mut self, html: &str, b: &mut Builder) -> Result<(), InputError> {
        let mut emitter = DefaultEmitter::default();
        // `<script>`, `<style>` and `<textarea>` hold raw text, not tags.
        emitter.naively_switch_states(true);
        for token in Tokenizer::new_with_emitter(html, emitter) {
            let Ok(token) = token;
            match token {
                Token::StartTag(tag) => self.start(&tag, b)?,
                Token::EndTag(tag) => self.end(&String::from_utf8_lossy(&tag.name), b)?,
                Token::String(text) => self.text(&String::from_utf8_lossy(&text), b)?,
                Token::Comment(_) | Token::Doctype(_) | Token::Error(_) => {}
            }
        }
        Ok(())
    }

    fn text(&mut self, text: &str, b: &mut Builder) -> Result<(), InputError> {
        if let Some(page) = self.page.as_deref_mut()
            && page.text(text, b)?
        {
            return Ok(());
        }
        if let Some(pre) = &mut self.pre {
            pre.push_str(text);
            return Ok(());
        }
        if !self.block_mode {
            return b.text(text);
        }
        // HTML collapses runs of white space (line breaks included) to one space.
        let mut collapsed = String::with_capacity(text.len());
        let mut space = false;
        for c in text.chars() {
            if c.is_whitespace() {
                space = true;
            } else {
                if space {
                    collapsed.push(' ');
                    space = false;
                }
                collapsed.push(c);
            }
        }
        if space {
            collapsed.push(' ');
        }
        b.text(&collapsed)
    }

    fn start(&mut self, tag: &StartTag<()>, b: &mut Builder) -> Result<(), InputError> {
        let name = String::from_utf8_lossy(&tag.name).to_ascii_lowercase();
        let attr = |key: &str| attribute(tag, key);
        if let Some(pre) = &mut self.pre {
            // Tags inside <pre> are markup of the code's text, not text.
            if name == "br" {
                pre.push('\n');
            }
            return Ok(());
        }
        if let Some(page) = self.page.as_deref_mut()
            && page.start(&name, tag, b)?
        {
            return Ok(());
        }
        self.open(&name, tag, &attr, b)?;
        if let (Some(page), Some(name)) = (self.page.as_deref_mut(), known(&name)) {
            page.after_start(name, tag, b)?;
        }
        // XHTML closes an empty element in its start tag (`<a id="p1"/>`); HTML ignores the
        // slash, which would leave it open to the end of the page.
        if self.page.is_some() && tag.self_closing && !VOID.contains(&name.as_str()) {
            self.end(&name, b)?;
        }
        Ok(())
    }

    fn open(
        &mut self,
        name: &str,
        tag: &StartTag<()>,
        attr: &dyn Fn(&str) -> Option<String>,
        b: &mut Builder,
    ) -> Result<(), InputError> {
        if b.dropping() {
            if let Some(name) = known(name)
                && !VOID.contains(&name)
                && !tag.self_closing
            {
                b.open_inline(InlineKind::Transparent, Some(name))?;
            }
            return Ok(());
        }
        let Some(name) = known(name) else {
            // Unknown element: its tag goes, its text stays (end tags of unknown elements
            // close nothing).
            return Ok(());
        };
        if DROPPED.contains(&name) {
            if !VOID.contains(&name) && !tag.self_closing {
                b.open_inline(InlineKind::Drop(name), Some(name))?;
            } else {
                b.res.warn(
                    "html_dropped",
                    format!("An HTML <{name}> element was removed; ebooks do not allow it."),
                );
            }
            return Ok(());
        }
        if let Some(kind) = inline_kind(name, &attr) {
            if let Some(id) = attr("id").filter(|id| !id.is_empty())
                && matches!(name, "a" | "span")
            {
                let id = match self.page.as_deref() {
                    Some(page) => page.id(&id),
                    None => id,
                };
                b.inline(Inline::Anchor(id))?;
            }
            let kind = match kind {
                InlineKind::Link(None) => match attr("href") {
                    Some(href) if self.page.is_some() => {
                        let href = Page::unwrap(&href);
                        InlineKind::Link(
                            match self.page.as_deref().and_then(|p| p.link(&href, b)) {
                                Some(target) => Some(target),
                                None => b.res.link_target(&href, false),
                            },
                        )
                    }
                    Some(href) => InlineKind::Link(b.res.link_target(&href, false)),
                    None => InlineKind::Transparent,
                },
                other => other,
            };
            return b.open_inline(kind, Some(name));
        }
        match name {
            "br" => return b.inline(Inline::LineBreak),
            "img" => {
                let url = attr("src").unwrap_or_default();
                let title = attr("title").unwrap_or_default();
                b.open_inline(InlineKind::Image { url, title }, Some("img"))?;
                b.text(&attr("alt").unwrap_or_default())?;
                b.close_html_inline("img")?;
                return Ok(());
            }
            _ => {}
        }
        if !self.block_mode {
            if !VOID.contains(&name) && !tag.self_closing {
                b.open_inline(InlineKind::Transparent, Some(name))?;
            }
            return Ok(());
        }
        self.start_block(name, attr, b)
    }

    fn start_block(
        &mut self,
        name: &'static str,
        attr: &dyn Fn(&str) -> Option<String>,
        b: &mut Builder,
    ) -> Result<(), InputError> {
        let html = Some(name);
        match name {
            "p" => b.open_leaf(LeafKind::Paragraph),
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                let level = name.as_bytes()[1] - b'0';
                let id = attr("id").filter(|id| !id.is_empty());
                let id = match (self.page.as_deref(), id) {
                    (Some(page), Some(id)) => Some(page.id(&id)),
                    (_, id) => id,
                };
                b.open_leaf(LeafKind::Heading { level, id })
            }
            "blockquote" => b.open_block(BlockKind::Quote, html),
            "ul" | "ol" => {
                let kind = match (name, attr("type").as_deref()) {
                    ("ul", _) => ListKind::Bullet,
                    (_, Some("a")) => ListKind::LowerAlpha,
                    (_, Some("A")) => ListKind::UpperAlpha,
                    (_, Some("i")) => ListKind::LowerRoman,
                    (_, Some("I")) => ListKind::UpperRoman,
                    _ => ListKind::Decimal,
                };
                let start = attr("start").and_then(|s| s.parse().ok()).unwrap_or(1);
                b.open_block(
                    BlockKind::List {
                        kind,
                        start,
                        items: Vec::new(),
                    },
                    html,
                )
            }
            "li" => {
                self.close_if_top(b, |k| matches!(k, BlockKind::Item), "li")?;
                b.open_block(BlockKind::Item, html)
            }
            "dl" => b.open_block(BlockKind::DefinitionList(Vec::new()), html),
            "dt" => {
                self.close_if_top(b, |k| matches!(k, BlockKind::Definition), "dd")?;
                b.open_leaf(LeafKind::Term)
            }
            "dd" => {
                self.close_if_top(b, |k| matches!(k, BlockKind::Definition), "dd")?;
                b.open_block(BlockKind::Definition, html)
            }
            "table" => b.open_block(
                BlockKind::Table {
                    aligns: Vec::new(),
                    head: Vec::new(),
                    body: Vec::new(),
                    in_head: false,
                },
                html,
            ),
            "thead" => {
                b.close_leaf()?;
                b.set_table_head(true);
                Ok(())
            }
            "tbody" | "tfoot" => {
                b.close_leaf()?;
                b.set_table_head(false);
                Ok(())
            }
            "tr" => {
                self.close_if_top(b, |k| matches!(k, BlockKind::Cell { .. }), "td")?;
                self.close_if_top(b, |k| matches!(k, BlockKind::Cell { .. }), "th")?;
                self.close_if_top(b, |k| matches!(k, BlockKind::Row(_)), "tr")?;
                b.open_block(BlockKind::Row(Vec::new()), html)
            }
            "td" | "th" => {
                self.close_if_top(b, |k| matches!(k, BlockKind::Cell { .. }), "td")?;
                self.close_if_top(b, |k| matches!(k, BlockKind::Cell { .. }), "th")?;
                if !b.in_block(|k| matches!(k, BlockKind::Row(_))) {
                    b.open_block(BlockKind::Row(Vec::new()), Some("tr"))?;
                }
                let span = |key: &str| {
                    attr(key)
                        .and_then(|s| s.parse::<u32>().ok())
                        .unwrap_or(1)
                        .clamp(1, 1000)
                };
                b.open_block(
                    BlockKind::Cell {
                        header: name == "th",
                        colspan: span("colspan"),
                        rowspan: span("rowspan"),
                    },
                    html,
                )
            }
            "pre" => {
                b.close_leaf()?;
                self.pre = Some(String::new());
                Ok(())
            }
            "hr" => b.add_block(Block::SceneBreak),
            // A figure's caption comes after its picture, closed by then; a table's may come
            // first, and then stays a paragraph before the table.
            "figcaption" => b.open_leaf(LeafKind::Caption),
            _ => match attr("lang").filter(|l| !l.is_empty()) {
                // A sectioning element (div, section, figure…) with a language.
                Some(lang) if BLOCK_CONTAINERS.contains(&name) => {
                    b.open_block(BlockKind::Lang(lang), html)
                }
                _ => b.close_leaf(),
            },
        }
    }

    fn close_if_top(
        &self,
        b: &mut Builder,
        test: impl Fn(&BlockKind) -> bool,
        name: &str,
    ) -> Result<(), InputError> {
        b.close_leaf()?;
        if b.in_block(test) {
            b.close_html_block(name, self.floor)?;
        }
        Ok(())
    }

    fn end(&mut self, name: &str, b: &mut Builder) -> Result<(), InputError> {
        let name = name.to_ascii_lowercase();
        if let Some(page) = self.page.as_deref_mut()
            && page.end(&name, b)?
        {
            return Ok(());
        }
        if self.pre.is_some() {
            if name == "pre"
                && let Some(text) = self.pre.take()
            {
                b.add_block(code_block(text))?;
            }
            return Ok(());
        }
        if b.close_html_inline(&name)? || !self.block_mode {
            return Ok(());
        }
        match name.as_str() {
            "p" | "h1" | "h2" | "h3" | "h4" | "h5" | "h6" | "dt" | "figcaption" => b.close_leaf(),
            "thead" => {
                b.close_leaf()?;
                b.close_html_block("tr", self.floor)?;
                b.set_table_head(false);
                Ok(())
            }
            _ => {
                if !b.close_html_block(&name, self.floor)? {
                    // A paragraph boundary anyway (`</div>`).
                    b.close_leaf()?;
                }
                Ok(())
            }
        }
    }
}

fn code_block(text: String) -> Block {
    // A newline right after <pre> is not content (HTML drops it too).
    let text = text
        .strip_prefix('\n')
        .unwrap_or(&text)
        .trim_end()
        .to_owned();
    Block::CodeBlock {
        language: None,
        text,
    }
}

/// A tag's attribute, its value trimmed.
pub(crate) fn attribute(tag: &StartTag<()>, key: &str) -> Option<String> {
    tag.attributes
        .get(key.as_bytes())
        .map(|v| String::from_utf8_lossy(v).trim().to_owned())
}

/// The element name as a `'static` string, if Bindery knows it.
pub(crate) fn known(name: &str) -> Option<&'static str> {
    INLINE
        .iter()
        .chain(DROPPED)
        .chain(BLOCK)
        .chain(VOID)
        .copied()
        .find(|k| *k == name)
}

pub(crate) const INLINE: &[&str] = &[
    "em", "i", "cite", "dfn", "var", "strong", "b", "u", "ins", "s", "del", "strike", "sup", "sub",
    "small", "code", "kbd", "samp", "tt", "a", "span", "abbr", "q", "mark", "font", "bdi", "bdo",
    "time", "label",
];
const DROPPED: &[&str] = &[
    "script", "style", "iframe", "object", "embed", "template", "noscript", "svg", "math", "form",
    "input", "button", "select", "option", "optgroup", "textarea", "canvas", "audio", "video",
    "applet", "frameset", "frame", "noframes", "head", "title", "meta", "link", "base", "param",
    "source", "track", "datalist", "output", "map", "area", "dialog",
];
const BLOCK: &[&str] = &[
    "p",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "blockquote",
    "ul",
    "ol",
    "li",
    "dl",
    "dt",
    "dd",
    "table",
    "thead",
    "tbody",
    "tfoot",
    "tr",
    "td",
    "th",
    "caption",
    "pre",
    "hr",
    "br",
    "img",
    "div",
    "section",
    "article",
    "aside",
    "header",
    "footer",
    "main",
    "nav",
    "figure",
    "figcaption",
    "center",
    "address",
    "details",
    "summary",
    "colgroup",
    "col",
    "wbr",
    "html",
    "body",
];
const BLOCK_CONTAINERS: &[&str] = &[
    "div",
    "section",
    "article",
    "aside",
    "header",
    "footer",
    "main",
    "nav",
    "figure",
    "center",
    "address",
    "details",
    "blockquote",
    "p",
];
pub(crate) const VOID: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
    "track", "wbr",
];
/// What an inline element becomes (`None` for elements that are not inline).
fn inline_kind(name: &str, attr: &dyn Fn(&str) -> Option<String>) -> Option<InlineKind> {
    let small_caps = || {
        attr("style").is_some_and(|s| {
            s.to_ascii_lowercase()
                .replace(' ', "")
                .contains("font-variant:small-caps")
        })
    };
    Some(match name {
        "em" | "i" | "cite" | "dfn" | "var" => InlineKind::Emphasis,
        "strong" | "b" => InlineKind::Strong,
        "u" | "ins" => InlineKind::Underline,
        "s" | "del" | "strike" => InlineKind::Strikethrough,
        "sup" => InlineKind::Superscript,
        "sub" => InlineKind::Subscript,
        "small" => InlineKind::SmallCaps,
        "code" | "kbd" | "samp" | "tt" => InlineKind::Code,
        "a" => InlineKind::Link(None),
        _ if INLINE.contains(&name) => match attr("lang").filter(|l| !l.is_empty()) {
            Some(lang) => InlineKind::Lang(lang),
            None if small_caps() => InlineKind::SmallCaps,
            None => InlineKind::Transparent,
        },
        _ => return None,
    })
}
