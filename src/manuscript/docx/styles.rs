//! Styles (`styles.xml`) and the paragraph and run properties they share with direct
//! formatting. A style is known by what it *means* (a heading, a quotation, code): by its id
//! or name in several languages, or by the outline level Word gives headings, following
//! `basedOn` so that "My Chapter" based on "Heading 1" is a heading too.

use std::cell::RefCell;
use std::collections::HashMap;

use crate::document::Align;
use crate::manuscript::InputError;
use crate::manuscript::xml::{Ns, Xml};

/// Run formatting Bindery keeps, as bits.
pub mod fmt {
    pub const BOLD: u16 = 1;
    pub const ITALIC: u16 = 1 << 1;
    pub const UNDERLINE: u16 = 1 << 2;
    pub const STRIKE: u16 = 1 << 3;
    pub const SUPER: u16 = 1 << 4;
    pub const SUB: u16 = 1 << 5;
    pub const SMALL_CAPS: u16 = 1 << 6;
    pub const CODE: u16 = 1 << 7;
}

/// Run properties as layers: which bits a layer sets, and to what.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunProps {
    pub set: u16,
    pub val: u16,
}

impl RunProps {
    fn put(&mut self, bit: u16, on: bool) {
        self.set |= bit;
        if on {
            self.val |= bit;
        } else {
            self.val &= !bit;
        }
    }

    /// `self` with `top` applied over it.
    pub fn over(self, top: RunProps) -> RunProps {
        RunProps {
            set: self.set | top.set,
            val: (self.val & !top.set) | (top.val & top.set),
        }
    }

    pub fn bits(self) -> u16 {
        self.val & self.set
    }
}

/// A `w:rPr`: formatting, the character style, and whether the run (or, in a `w:pPr`, the
/// paragraph mark) is a tracked deletion.
#[derive(Debug, Clone, Default)]
pub struct RunPr {
    pub props: RunProps,
    pub style: Option<String>,
    pub deleted: bool,
    pub lang: Option<String>,
}

/// Reads a `w:rPr` whose start was just read.
pub fn read_rpr(x: &mut Xml) -> Result<RunPr, InputError> {
    let mut pr = RunPr::default();
    while let Some(tag) = x.child()? {
        if tag.ns == Ns::W {
            let on = tag.on();
            match tag.name() {
                "rStyle" => pr.style = tag.val().map(|v| v.into_owned()),
                "b" => pr.props.put(fmt::BOLD, on),
                "i" => pr.props.put(fmt::ITALIC, on),
                "u" => pr.props.put(fmt::UNDERLINE, on),
                "strike" | "dstrike" => pr.props.put(fmt::STRIKE, on),
                "smallCaps" => pr.props.put(fmt::SMALL_CAPS, on),
                "vertAlign" => {
                    let v = tag.val();
                    pr.props
                        .put(fmt::SUPER, v.as_deref() == Some("superscript"));
                    pr.props.put(fmt::SUB, v.as_deref() == Some("subscript"));
                }
                "del" | "moveFrom" => pr.deleted = true,
                "lang" => pr.lang = tag.val().map(|v| v.into_owned()),
                _ => {}
            }
        }
        // Children (an `rPrChange` holding the formatting before a tracked change) are
        // skipped with the property.
        x.skip()?;
    }
    Ok(pr)
}

/// A `w:pPr`.
#[derive(Debug, Clone, Default)]
pub struct ParaPr {
    pub style: Option<String>,
    /// `numPr`: a `numId` (`"0"` switches numbering off) and a level.
    pub num_id: Option<String>,
    pub ilvl: Option<u8>,
    pub outline: Option<u8>,
    pub align: Option<Align>,
    pub drop_cap: bool,
    pub page_break_before: bool,
    /// A `sectPr` here ends a section after this paragraph.
    pub section_break: bool,
    pub mark: RunPr,
}

/// Reads a `w:pPr` whose start was just read.
pub fn read_ppr(x: &mut Xml) -> Result<ParaPr, InputError> {
    let mut pr = ParaPr::default();
    while let Some(tag) = x.child()? {
        if tag.ns != Ns::W {
            x.skip()?;
            continue;
        }
        match tag.name() {
            "pStyle" => pr.style = tag.val().map(|v| v.into_owned()),
            "outlineLvl" => pr.outline = tag.val().and_then(|v| v.parse().ok()),
            "jc" => pr.align = tag.val().map(|v| align(&v)),
            "pageBreakBefore" => pr.page_break_before = tag.on(),
            "framePr" => {
                pr.drop_cap = matches!(tag.attr("dropCap").as_deref(), Some("drop" | "margin"))
            }
            "numPr" => {
                while let Some(t) = x.child()? {
                    match t.name() {
                        "numId" => pr.num_id = t.val().map(|v| v.into_owned()),
                        "ilvl" => pr.ilvl = t.val().and_then(|v| v.parse().ok()),
                        _ => {}
                    }
                    x.skip()?;
                }
                continue;
            }
            "sectPr" => {
                let mut continuous = false;
                while let Some(t) = x.child()? {
                    if t.name() == "type" && t.val().as_deref() == Some("continuous") {
                        continuous = true;
                    }
                    x.skip()?;
                }
                pr.section_break = !continuous;
                continue;
            }
            "rPr" => {
                pr.mark = read_rpr(x)?;
                continue;
            }
            _ => {}
        }
        x.skip()?;
    }
    Ok(pr)
}

fn align(v: &str) -> Align {
    match v {
        "center" => Align::Center,
        "right" | "end" => Align::Right,
        "both" | "distribute" | "mediumKashida" | "highKashida" | "lowKashida" => Align::Justify,
        _ => Align::Default,
    }
}

/// What a paragraph style means for the book.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Normal,
    /// Heading level 1–9.
    Heading(u8),
    Title,
    Subtitle,
    Author,
    Date,
    Quote,
    Code,
    DefinitionTerm,
    Definition,
    Caption,
}

impl Class {
    /// Whether the style's own run formatting is decoration (a bold heading style) rather
    /// than meaning (an italic "Poem" style).
    pub fn decorates(self) -> bool {
        self != Class::Normal
    }
}

/// A paragraph style with `basedOn` resolved.
#[derive(Debug, Clone)]
pub struct ParaStyle {
    pub class: Class,
    pub props: RunProps,
    pub num_id: Option<String>,
    pub ilvl: Option<u8>,
    pub align: Option<Align>,
}

/// A character style with `basedOn` resolved.
#[derive(Debug, Clone, Copy)]
pub struct CharStyle {
    pub props: RunProps,
}

#[derive(Debug, Default)]
struct Style {
    name: String,
    based_on: Option<String>,
    ppr: ParaPr,
    rpr: RunPr,
}

#[derive(Debug, Default)]
pub struct Styles {
    styles: HashMap<String, Style>,
    default_paragraph: Option<String>,
    /// The document's default language (`w:docDefaults`).
    pub language: Option<String>,
    para_cache: RefCell<HashMap<String, ParaStyle>>,
}

/// Longest `basedOn` chain followed: real templates stay under 10; a cycle stops here.
const MAX_CHAIN: usize = 16;

impl Styles {
    pub fn parse(text: &str, part: &str) -> Result<Styles, InputError> {
        let mut x = Xml::new(text, part);
        x.root()?;
        let mut styles = Styles::default();
        while let Some(tag) = x.child()? {
            match (tag.ns, tag.name()) {
                (Ns::W, "docDefaults") => {
                    styles.language = read_default_language(&mut x)?;
                    continue;
                }
                (Ns::W, "style") => {
                    let id = tag.attr("styleId").unwrap_or_default().into_owned();
                    let paragraph = tag.attr("type").as_deref() == Some("paragraph");
                    let character = tag.attr("type").as_deref() == Some("character");
                    let default = tag.attr("default").is_some_and(|d| d == "1" || d == "true");
                    if paragraph && default {
                        styles.default_paragraph = Some(id.clone());
                    }
                    let mut style = Style::default();
                    while let Some(t) = x.child()? {
                        match (t.ns, t.name()) {
                            (Ns::W, "name") => {
                                style.name = t.val().unwrap_or_default().into_owned()
                            }
                            (Ns::W, "basedOn") => style.based_on = t.val().map(|v| v.into_owned()),
                            (Ns::W, "pPr") => {
                                style.ppr = read_ppr(&mut x)?;
                                continue;
                            }
                            (Ns::W, "rPr") => {
                                style.rpr = read_rpr(&mut x)?;
                                continue;
                            }
                            _ => {}
                        }
                        x.skip()?;
                    }
                    if paragraph || character {
                        styles.styles.insert(id, style);
                    }
                    continue;
                }
                _ => {}
            }
            x.skip()?;
        }
        Ok(styles)
    }

    /// The chain of styles from `id` up through `basedOn`.
    fn chain(&self, id: &str) -> Vec<&Style> {
        let mut out = Vec::new();
        let mut next = Some(id);
        while let Some(id) = next
            && out.len() < MAX_CHAIN
        {
            let Some(style) = self.styles.get(id) else {
                break;
            };
            out.push(style);
            next = style.based_on.as_deref();
        }
        out
    }

    /// The paragraph style a paragraph uses (its own, or the default).
    pub fn paragraph(&self, id: Option<&str>) -> ParaStyle {
        let id = id.or(self.default_paragraph.as_deref()).unwrap_or("");
        if let Some(hit) = self.para_cache.borrow().get(id) {
            return hit.clone();
        }
        let chain = self.chain(id);
        let class = classify(id, &chain);
        let props = chain
            .iter()
            .rev()
            .fold(RunProps::default(), |acc, s| acc.over(s.rpr.props));
        let numbered = chain.iter().find(|s| s.ppr.num_id.is_some());
        let style = ParaStyle {
            class,
            props,
            num_id: numbered.and_then(|s| s.ppr.num_id.clone()),
            ilvl: numbered.and_then(|s| s.ppr.ilvl),
            align: chain.iter().find_map(|s| s.ppr.align),
        };
        self.para_cache
            .borrow_mut()
            .insert(id.to_owned(), style.clone());
        style
    }

    /// A character style's formatting; code styles add [`fmt::CODE`], and link styles add
    /// nothing (a link's underline and colour are how links look, not what the text means).
    pub fn character(&self, id: &str) -> CharStyle {
        let chain = self.chain(id);
        let key = |s: &str| normalise(s);
        let names = chain
            .iter()
            .map(|s| key(&s.name))
            .chain(std::iter::once(key(id)));
        let mut props = RunProps::default();
        for name in names {
            match name.as_str() {
                "verbatimchar" | "sourcecode" | "htmlcode" | "code" | "inlinecode" => {
                    props.put(fmt::CODE, true)
                }
                "hyperlink" | "internetlink" | "followedhyperlink" | "internetverknüpfung" => {
                    return CharStyle {
                        props: RunProps::default(),
                    };
                }
                _ => {}
            }
        }
        let styled = chain
            .iter()
            .rev()
            .fold(RunProps::default(), |acc, s| acc.over(s.rpr.props));
        CharStyle {
            props: styled.over(props),
        }
    }
}

fn read_default_language(x: &mut Xml) -> Result<Option<String>, InputError> {
    let mut lang = None;
    let mut open = 1u32;
    while open > 0 {
        match x.next()? {
            crate::manuscript::xml::Ev::Start(t) => {
                open += 1;
                if t.is(Ns::W, "lang") && lang.is_none() {
                    lang = t.val().map(|v| v.into_owned());
                }
            }
            crate::manuscript::xml::Ev::End => open -= 1,
            crate::manuscript::xml::Ev::Text(_) => {}
            crate::manuscript::xml::Ev::Eof => return Err(x.error("unexpected end")),
        }
    }
    Ok(lang)
}

/// Style names compared without case, spaces, hyphens or underscores.
pub fn normalise(name: &str) -> String {
    name.chars()
        .filter(|c| !matches!(c, ' ' | '-' | '_'))
        .flat_map(char::to_lowercase)
        .collect()
}

fn classify(id: &str, chain: &[&Style]) -> Class {
    for (i, style) in chain.iter().enumerate() {
        let own_id = if i == 0 { Some(id) } else { None };
        for name in own_id.into_iter().chain([style.name.as_str()]) {
            if let Some(class) = class_by_name(&normalise(name)) {
                return class;
            }
        }
        match style.ppr.outline {
            Some(level) if level < 9 => return Class::Heading(level + 1),
            Some(_) => return Class::Normal,
            None => {}
        }
    }
    Class::Normal
}

/// Heading style names in the languages Word and LibreOffice localise them to (Word
/// mangles non-ASCII letters out of style ids: "Überschrift 1" becomes `berschrift1`).
const HEADING_PREFIXES: &[&str] = &[
    "heading",
    "überschrift",
    "berschrift",
    "titre",
    "título",
    "titulo",
    "titolo",
    "kop",
    "rubrik",
    "overskrift",
    "otsikko",
    "nagłówek",
    "nagwek",
    "заголовок",
    "encabezado",
];

fn class_by_name(name: &str) -> Option<Class> {
    let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let (prefix, number) = name.split_at(name.len() - digits);
    if let Ok(level @ 1..=9) = number.parse::<u8>()
        && HEADING_PREFIXES.contains(&prefix)
    {
        return Some(Class::Heading(level));
    }
    Some(match name {
        "title" | "titel" | "titre" | "título" | "titulo" | "titolo" => Class::Title,
        "subtitle" | "untertitel" | "soustitre" | "subtítulo" | "subtitulo" | "sottotitolo" => {
            Class::Subtitle
        }
        "author" => Class::Author,
        "date" => Class::Date,
        "quote" | "intensequote" | "blocktext" | "blockquote" | "quotations" | "quotation"
        | "zitat" | "intensiveszitat" | "epigraph" => Class::Quote,
        "sourcecode" | "htmlpreformatted" | "preformattedtext" | "code" | "codeblock" => {
            Class::Code
        }
        "definitionterm" => Class::DefinitionTerm,
        "definition" => Class::Definition,
        "caption" | "imagecaption" | "tablecaption" | "figurecaption" | "beschriftung"
        | "légende" => Class::Caption,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const STYLES: &str = r#"<w:styles xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">
      <w:docDefaults><w:rPrDefault><w:rPr><w:lang w:val="de-DE"/></w:rPr></w:rPrDefault></w:docDefaults>
      <w:style w:type="paragraph" w:default="1" w:styleId="Standard"><w:name w:val="Normal"/></w:style>
      <w:style w:type="paragraph" w:styleId="berschrift1"><w:name w:val="Überschrift 1"/><w:basedOn w:val="Standard"/><w:rPr><w:b/></w:rPr></w:style>
      <w:style w:type="paragraph" w:styleId="Chapter"><w:name w:val="Chapter"/><w:basedOn w:val="berschrift1"/></w:style>
      <w:style w:type="paragraph" w:styleId="Kapitel"><w:name w:val="Kapitel"/><w:pPr><w:outlineLvl w:val="1"/></w:pPr></w:style>
      <w:style w:type="paragraph" w:styleId="TOCHeading"><w:name w:val="TOC Heading"/><w:basedOn w:val="berschrift1"/><w:pPr><w:outlineLvl w:val="9"/></w:pPr></w:style>
      <w:style w:type="paragraph" w:styleId="Loop"><w:name w:val="Loop"/><w:basedOn w:val="Loop"/></w:style>
      <w:style w:type="paragraph" w:styleId="Poem"><w:name w:val="Poem"/><w:rPr><w:i/></w:rPr></w:style>
      <w:style w:type="character" w:styleId="VerbatimChar"><w:name w:val="Verbatim Char"/></w:style>
      <w:style w:type="character" w:styleId="Strong2"><w:name w:val="Stark"/><w:rPr><w:b/></w:rPr></w:style>
    </w:styles>"#;

    #[test]
    fn headings_are_found_by_localised_name_by_inheritance_and_by_outline_level() {
        let s = Styles::parse(STYLES, "word/styles.xml").expect("test input");
        assert_eq!(s.paragraph(Some("berschrift1")).class, Class::Heading(1));
        assert_eq!(s.paragraph(Some("Chapter")).class, Class::Heading(1));
        assert_eq!(s.paragraph(Some("Kapitel")).class, Class::Heading(2));
        assert_eq!(s.paragraph(Some("TOCHeading")).class, Class::Normal);
        assert_eq!(s.paragraph(Some("Loop")).class, Class::Normal);
        assert_eq!(s.paragraph(None).class, Class::Normal);
        assert_eq!(s.language.as_deref(), Some("de-DE"));
    }

    #[test]
    fn formatting_comes_through_styles() {
        let s = Styles::parse(STYLES, "word/styles.xml").expect("test input");
        assert_eq!(s.paragraph(Some("Poem")).props.bits(), fmt::ITALIC);
        assert_eq!(s.character("VerbatimChar").props.bits(), fmt::CODE);
        assert_eq!(s.character("Strong2").props.bits(), fmt::BOLD);
        let direct = RunProps {
            set: fmt::BOLD,
            val: 0,
        };
        assert_eq!(s.character("Strong2").props.over(direct).bits(), 0);
    }
}
