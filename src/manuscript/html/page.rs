//! What a whole web page or EPUB document adds to HTML read inside Markdown: its stylesheet's
//! emphasis (Google Docs and calibre say *italic* with a class, not `<em>`), notes marked with
//! `epub:type` or ARIA roles, MathML kept as the book's mathematics, ids on any element, and
//! the title and subtitle paragraphs of a Google Docs page.

use std::collections::HashMap;

use html5gum::StartTag;
use simplecss::{AttributeOperator, DeclarationTokenizer, PseudoClass, StyleSheet};

use super::super::InputError;
use super::super::markdown::builder::{BlockKind, Builder, InlineKind};
use crate::document::{Inline, LinkTarget, Math, NoteKind};
use crate::manuscript::look::Look;

/// A page's settings, from its reader (the web page or the EPUB).
pub(crate) struct Page<'s> {
    css: &'s Looks,
    /// Prefixed to every id the page holds or names (EPUB documents reuse ids across files);
    /// empty for a single page.
    pub prefix: String,
    /// The prefix of each document of the book by lower-cased path, for links across files.
    pub documents: &'s HashMap<String, String>,
    /// Whether `<p class="title">` and `subtitle` are the book's (Google Docs writes them).
    pub title_classes: bool,
    pub title: Option<String>,
    pub subtitle: Option<String>,
    /// Each note read, with its kind.
    pub note_kinds: Vec<(String, NoteKind)>,
    /// Ids of block elements, waiting for the text they mark.
    pending: Vec<String>,
    math: Option<MathCapture>,
    capture: Option<Capture>,
    pub maths: usize,
    pub maths_dropped: usize,
    /// The look of the element whose start tag [`Page::start`] last read.
    look: Look,
}

struct MathCapture {
    xml: String,
    depth: usize,
    display: bool,
}

#[derive(Clone, Copy)]
enum Field {
    Title,
    Subtitle,
}

struct Capture {
    field: Field,
    text: String,
}

impl<'s> Page<'s> {
    pub fn new(css: &'s Looks, documents: &'s HashMap<String, String>) -> Self {
        Page {
            css,
            prefix: String::new(),
            documents,
            title_classes: false,
            title: None,
            subtitle: None,
            note_kinds: Vec::new(),
            pending: Vec::new(),
            math: None,
            capture: None,
            maths: 0,
            maths_dropped: 0,
            look: Look::default(),
        }
    }

    /// The model's id for an id the page uses.
    pub fn id(&self, id: &str) -> String {
        format!("{}{}", self.prefix, id)
    }

    /// Where a link of the page goes, when the page settles it: a fragment of this page,
    /// or another document of the book (at its start, or at a fragment of it). `None` for
    /// the web and files outside the book, which [`super::super::markdown`]'s rules decide.
    pub fn link(&self, href: &str, b: &Builder) -> Option<LinkTarget> {
        let href = href.trim();
        if let Some(fragment) = href.strip_prefix('#') {
            let fragment = crate::manuscript::markdown::resources::percent_decode(fragment);
            return (!fragment.is_empty()).then(|| LinkTarget::Internal(self.id(&fragment)));
        }
        let path = b.res.resolve(href)?;
        let prefix = self.documents.get(&path)?;
        let fragment = href
            .split_once('#')
            .map(|(_, f)| crate::manuscript::markdown::resources::percent_decode(f))
            .filter(|f| !f.is_empty())
            .unwrap_or_else(|| START.to_owned());
        Some(LinkTarget::Internal(format!("{prefix}{fragment}")))
    }

    /// The address a link really goes to: Google Docs sends every link of an exported page
    /// through its redirector (`https://www.google.com/url?q=…&sa=D…`).
    pub fn unwrap(href: &str) -> String {
        let redirector = ["https://www.google.com/url?", "http://www.google.com/url?"];
        if let Some(query) = redirector.iter().find_map(|r| href.trim().strip_prefix(r))
            && let Some((_, target)) =
                form_urlencoded::parse(query.as_bytes()).find(|(k, _)| k == "q")
            && (target.starts_with("http://")
                || target.starts_with("https://")
                || target.starts_with("mailto:"))
        {
            return target.into_owned();
        }
        href.to_owned()
    }

    /// Handles a start tag the page reads differently from HTML in Markdown; `true` when it
    /// is done with it.
    pub fn start(
        &mut self,
        name: &str,
        tag: &StartTag<()>,
        b: &mut Builder,
    ) -> Result<bool, InputError> {
        // Set again below for an element whose look `after_start` will open.
        self.look = Look::default();
        let attr = |key: &str| super::attribute(tag, key);
        if let Some(math) = &mut self.math {
            if name == "math" {
                math.depth += 1;
            }
            math.xml.push('<');
            math.xml.push_str(name);
            for (key, value) in &tag.attributes {
                let key = String::from_utf8_lossy(key);
                // Namespaced attributes and events have no place in the book's MathML.
                if key.contains(':') || key.starts_with("on") {
                    continue;
                }
                math.xml.push(' ');
                math.xml.push_str(&key);
                math.xml.push_str("=\"");
                crate::math::escape_into(&mut math.xml, &String::from_utf8_lossy(value));
                math.xml.push('"');
            }
            math.xml.push_str(if tag.self_closing { "/>" } else { ">" });
            if tag.self_closing && name == "math" {
                math.depth -= 1;
            }
            if math.depth == 0 {
                self.finish_math(b)?;
            }
            return Ok(true);
        }
        if let Some(capture) = &mut self.capture {
            if name == "br" {
                capture.text.push(' ');
            }
            return Ok(true);
        }
        if b.dropping() {
            return Ok(false);
        }
        if name == "head" {
            // What a page says of itself is read by [`super::Head`], not shown.
            b.open_inline(InlineKind::Omit, Some("head"))?;
            return Ok(true);
        }
        let types = attr("epub:type").unwrap_or_default();
        let types: Vec<&str> = types.split_whitespace().collect();
        let role = attr("role").unwrap_or_default();
        let void = tag.self_closing || super::VOID.contains(&name);
        let look = self
            .css
            .of(name, attr("class").as_deref(), attr("style").as_deref());

        // Kept for `after_start`, which opens its frames once the element is open.
        self.look = look;
        if look.hidden
            || attr("hidden").is_some()
            || types.contains(&"pagebreak")
            || role == "doc-pagebreak"
            || types.contains(&"backlink")
            || role == "doc-backlink"
        {
            // An unknown element's end tag would close nothing, so its content stays.
            if !void && let Some(name) = super::known(name) {
                b.open_inline(InlineKind::Omit, Some(name))?;
            }
            return Ok(true);
        }
        if name == "math" {
            self.flush_anchors(b)?;
            let display = attr("display").as_deref() == Some("block")
                || attr("mode").as_deref() == Some("display");
            self.math = Some(MathCapture {
                xml: format!(r#"<math xmlns="{}""#, crate::math::NAMESPACE),
                depth: usize::from(!void),
                display,
            });
            if let Some(math) = &mut self.math {
                math.xml.push_str(if void { "/>" } else { ">" });
            }
            if void {
                self.finish_math(b)?;
            }
            return Ok(true);
        }
        let note_ref = types.contains(&"noteref") || role == "doc-noteref";
        if name == "a"
            && note_ref
            && let Some(LinkTarget::Internal(target)) = attr("href").and_then(|h| self.link(&h, b))
        {
            self.flush_anchors(b)?;
            b.inline(Inline::NoteRef(target))?;
            if !void {
                b.open_inline(InlineKind::Omit, Some("a"))?;
            }
            return Ok(true);
        }
        let note_kind = if types.iter().any(|t| matches!(*t, "endnote" | "rearnote"))
            || role == "doc-endnote"
        {
            Some(NoteKind::Endnote)
        } else if types.iter().any(|t| matches!(*t, "footnote" | "note")) || role == "doc-footnote"
        {
            Some(NoteKind::Footnote)
        } else {
            None
        };
        if let (Some(kind), Some(id), Some(name)) = (note_kind, attr("id"), super::known(name))
            && !void
        {
            let id = self.id(&id);
            self.note_kinds.push((id.clone(), kind));
            b.open_block(BlockKind::Note(id), Some(name))?;
            return Ok(true);
        }
        // The list that only holds notes is not a list of the book's.
        if (types
            .iter()
            .any(|t| matches!(*t, "footnotes" | "endnotes" | "rearnotes"))
            || matches!(role.as_str(), "doc-endnotes" | "doc-footnotes"))
            && (name == "ol" || name == "ul")
        {
            return Ok(true);
        }
        if self.title_classes && name == "p" {
            let classes = attr("class").unwrap_or_default();
            let field = classes.split_whitespace().find_map(|c| match c {
                "title" => Some(Field::Title),
                "subtitle" => Some(Field::Subtitle),
                _ => None,
            });
            if let Some(field) = field {
                b.close_leaf()?;
                self.capture = Some(Capture {
                    field,
                    text: String::new(),
                });
                return Ok(true);
            }
        }
        if let Some(id) = attr("id").filter(|id| !id.is_empty())
            && !matches!(name, "a" | "span" | "h1" | "h2" | "h3" | "h4" | "h5" | "h6")
        {
            self.pending.push(self.id(&id));
        }
        Ok(false)
    }

    /// After the element's own frame is open: frames for what its classes and style say
    /// (italic, bold…), closed with it.
    pub fn after_start(
        &mut self,
        name: &'static str,
        tag: &StartTag<()>,
        b: &mut Builder,
    ) -> Result<(), InputError> {
        let look = std::mem::take(&mut self.look);
        let holds_text = super::INLINE.contains(&name)
            || matches!(
                name,
                "p" | "h1" | "h2" | "h3" | "h4" | "h5" | "h6" | "li" | "dt" | "dd" | "td" | "th"
            );
        if b.dropping() || tag.self_closing || !holds_text {
            return Ok(());
        }
        // Inside the element's own frame (or its paragraph), so they close with it.
        look.open(b, Some(LOOK))?;
        Ok(())
    }

    /// Handles an end tag; `true` when it is done with it.
    pub fn end(&mut self, name: &str, b: &mut Builder) -> Result<bool, InputError> {
        if let Some(math) = &mut self.math {
            math.xml.push_str("</");
            math.xml.push_str(name);
            math.xml.push('>');
            if name == "math" {
                math.depth -= 1;
                if math.depth == 0 {
                    self.finish_math(b)?;
                }
            }
            return Ok(true);
        }
        if let Some(capture) = self.capture.take_if(|_| name == "p") {
            let text = capture
                .text
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            if !text.is_empty() {
                match capture.field {
                    Field::Title if self.title.is_none() => self.title = Some(text),
                    Field::Subtitle if self.subtitle.is_none() => self.subtitle = Some(text),
                    // A second title paragraph is part of the text.
                    _ => {
                        b.open_leaf(super::super::markdown::builder::LeafKind::Paragraph)?;
                        b.text(&text)?;
                        b.close_leaf()?;
                    }
                }
            }
            return Ok(true);
        }
        if self.capture.is_some() {
            return Ok(true);
        }
        Ok(false)
    }

    /// Text, unless a capture takes it; ids waiting for text are placed before it.
    pub fn text(&mut self, text: &str, b: &mut Builder) -> Result<bool, InputError> {
        if let Some(math) = &mut self.math {
            crate::math::escape_into(&mut math.xml, text);
            return Ok(true);
        }
        if let Some(capture) = &mut self.capture {
            capture.text.push_str(text);
            return Ok(true);
        }
        if !text.trim().is_empty() {
            self.flush_anchors(b)?;
        }
        Ok(false)
    }

    /// Marks the next text with `id` (the start of a document, which links may name).
    pub fn mark(&mut self, id: String) {
        self.pending.push(id);
    }

    /// Places the ids waiting for text now (in a heading the reader adds itself).
    pub fn flush(&mut self, b: &mut Builder) -> Result<(), InputError> {
        self.flush_anchors(b)
    }

    fn flush_anchors(&mut self, b: &mut Builder) -> Result<(), InputError> {
        if b.dropping() {
            return Ok(());
        }
        for id in std::mem::take(&mut self.pending) {
            b.inline(Inline::Anchor(id))?;
        }
        Ok(())
    }

    /// A whole `<math>` read: the book's MathML if it cleans, its TeX annotation beside it.
    fn finish_math(&mut self, b: &mut Builder) -> Result<(), InputError> {
        let Some(math) = self.math.take() else {
            return Ok(());
        };
        let mathml = crate::math::clean(&math.xml);
        let tex = tex_annotation(&math.xml);
        self.maths += 1;
        match (mathml, tex) {
            (None, None) => {
                self.maths_dropped += 1;
                let text = crate::math::text_content(&math.xml);
                if !text.trim().is_empty() {
                    b.text(&text)?;
                }
                Ok(())
            }
            (mathml, tex) => b.inline(Inline::Math(Math {
                display: math.display,
                tex,
                mathml,
            })),
        }
    }
}

/// The name of the frames a look opens: no end tag has it, so only their element's end
/// closes them.
const LOOK: &str = "bindery:look";

/// The anchor id every document of an EPUB starts with, for links to the document itself.
pub(crate) const START: &str = "start";

/// The TeX a `<math>` carries in an `application/x-tex` annotation, if any.
fn tex_annotation(xml: &str) -> Option<String> {
    use quick_xml::Reader;
    use quick_xml::events::Event;
    let mut reader = Reader::from_str(xml);
    let mut inside = false;
    let mut tex = String::new();
    loop {
        match reader.read_event() {
            Ok(Event::Start(e)) if e.local_name().as_ref() == "annotation" => {
                inside = e.attributes().flatten().any(|a| {
                    a.key.local_name().as_ref() == "encoding"
                        && a.value.as_ref() == "application/x-tex"
                });
            }
            Ok(Event::End(e)) if e.local_name().as_ref() == "annotation" => {
                if inside {
                    let tex = tex.trim();
                    return (!tex.is_empty()).then(|| tex.to_owned());
                }
            }
            Ok(Event::Text(t)) if inside => tex.push_str(&t.xml10_content()),
            Ok(Event::GeneralRef(r)) if inside => {
                if let Ok(Some(c)) = r.resolve_char_ref() {
                    tex.push(c);
                } else if let Some(s) = quick_xml::escape::resolve_predefined_entity(&r) {
                    tex.push_str(s);
                }
            }
            Ok(Event::Eof) | Err(_) => return None,
            Ok(_) => {}
        }
    }
}

/// A CSS declaration's part in a [`Look`].
fn apply(look: &mut Look, name: &str, value: &str) {
    let value = value.trim().to_ascii_lowercase();
    match name {
        "font-style" => look.italic = Some(matches!(value.as_str(), "italic" | "oblique")),
        "font-weight" => {
            look.bold = Some(match value.as_str() {
                "bold" | "bolder" => true,
                v => v.parse::<u32>().is_ok_and(|w| w >= 600),
            });
        }
        "text-decoration" | "text-decoration-line" => {
            look.underline = Some(value.contains("underline"));
            look.strike = Some(value.contains("line-through"));
        }
        "font-variant" | "font-variant-caps" => {
            look.small_caps = Some(value.contains("small-caps"));
        }
        "vertical-align" => {
            look.raised = match value.as_str() {
                "super" => Some(true),
                "sub" => Some(false),
                _ => None,
            };
        }
        "display" => look.hidden = value == "none",
        "visibility" => look.hidden = value == "hidden",
        _ => {}
    }
}

/// The rules of a page's stylesheets that set a property the model keeps, in the order of
/// their specificity, and what each element's classes came to (a book has a few dozen
/// distinct class lists and tens of thousands of elements).
#[derive(Default)]
pub(crate) struct Looks {
    rules: Vec<(String, Look)>,
    cache: std::cell::RefCell<HashMap<(String, String), Look>>,
}

impl Looks {
    pub fn parse(sheets: &[String]) -> Looks {
        let mut rules: Vec<([u8; 3], usize, String, Look)> = Vec::new();
        for sheet in sheets {
            for rule in StyleSheet::parse(sheet).rules {
                let mut look = Look::default();
                for d in &rule.declarations {
                    apply(&mut look, d.name, d.value);
                }
                if !look.is_empty() {
                    // Selectors borrow their sheet: they are kept as text and parsed again
                    // for each distinct element, which the cache makes rare.
                    let order = rules.len();
                    rules.push((
                        rule.selector.specificity(),
                        order,
                        rule.selector.to_string(),
                        look,
                    ));
                }
            }
        }
        // A page's own styles are dozens of rules; past these bounds a stylesheet is not one
        // a person wrote, and matching it against every element would be the cost of the read.
        rules.truncate(MAX_RULES);
        rules.sort_by_key(|(specificity, order, _, _)| (*specificity, *order));
        Looks {
            rules: rules
                .into_iter()
                .map(|(_, _, selector, look)| (selector, look))
                .collect(),
            cache: Default::default(),
        }
    }

    /// What an element with these classes and this `style` attribute looks like.
    pub fn of(&self, name: &str, class: Option<&str>, style: Option<&str>) -> Look {
        let class = class.unwrap_or("");
        let mut look = if self.rules.is_empty() || class.is_empty() {
            Look::default()
        } else {
            let key = (name.to_owned(), class.to_owned());
            if let Some(look) = self.cache.borrow().get(&key) {
                *look
            } else if self.cache.borrow().len() >= MAX_CLASS_LISTS {
                Look::default()
            } else {
                let element = Element { name, class };
                let mut look = Look::default();
                for (selector, rule) in &self.rules {
                    if simplecss::Selector::parse(selector).is_some_and(|s| s.matches(&element)) {
                        look.over(rule);
                    }
                }
                self.cache.borrow_mut().insert(key, look);
                look
            }
        };
        if let Some(style) = style {
            for d in DeclarationTokenizer::from(style) {
                apply(&mut look, d.name, d.value);
            }
        }
        look
    }
}

/// The most rules of a page's stylesheets that are kept (the ones that set what the model
/// keeps), and the most distinct class lists matched against them.
const MAX_RULES: usize = 1_000;
const MAX_CLASS_LISTS: usize = 4_000;

/// An element as selectors see it: its name and classes, without parents or siblings (a
/// rule that needs them does not match).
#[derive(Clone, Copy)]
struct Element<'a> {
    name: &'a str,
    class: &'a str,
}

impl simplecss::Element for Element<'_> {
    fn parent_element(&self) -> Option<Self> {
        None
    }

    fn prev_sibling_element(&self) -> Option<Self> {
        None
    }

    fn has_local_name(&self, name: &str) -> bool {
        self.name.eq_ignore_ascii_case(name)
    }

    fn attribute_matches(&self, local_name: &str, operator: AttributeOperator<'_>) -> bool {
        local_name == "class" && operator.matches(self.class)
    }

    fn pseudo_class_matches(&self, _: PseudoClass<'_>) -> bool {
        false
    }
}
