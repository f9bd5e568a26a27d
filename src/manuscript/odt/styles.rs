//! What an OpenDocument's styles mean for the text they style: paragraph styles by their
//! names up the inheritance chain (Title, Subtitle, Quotations, headings, code), character
//! properties (italic, bold, small capitals…), page breaks before a paragraph, and each list
//! style's kind of numbering at each level.
//!
//! LibreOffice names styles with spaces written `_20_` (`Heading_20_1`), and a document made
//! from Word keeps Word's names (`Quote`), so names are compared as a person reads them.

use std::collections::HashMap;

use crate::document::ListKind;
use crate::manuscript::InputError;
use crate::manuscript::look::Look;
use crate::manuscript::xml::{Ev, Ns, Tag, Xml};

/// A paragraph style's part in the book.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Title,
    Subtitle,
    /// The Author and Date paragraphs of a title page (Word's, and pandoc's).
    Author,
    Date,
    Quotation,
    Code,
    Caption,
    /// LibreOffice's horizontal line: a scene break.
    Rule,
    Heading(u8),
}

#[derive(Debug, Clone, Default)]
struct Style {
    parent: Option<String>,
    display: Option<String>,
    look: Look,
    outline: Option<u8>,
    break_before: bool,
}

/// Every style of the document, named and automatic (both kinds share one namespace per
/// family, and automatic ones only ever appear in the part that uses them).
#[derive(Debug, Default)]
pub struct Styles {
    paragraph: HashMap<String, Style>,
    text: HashMap<String, Style>,
    lists: HashMap<String, Vec<(u8, ListKind, u32)>>,
    /// The default paragraph style's language (`en-GB`).
    pub language: Option<String>,
}

impl Styles {
    /// Adds the styles of one part (`styles.xml`, `content.xml`, or a flat document).
    pub fn read(&mut self, text: &str, part: &str) -> Result<(), InputError> {
        let mut x = Xml::new(text, part);
        x.root()?;
        let mut open: Vec<Option<Owner>> = Vec::new();
        loop {
            match x.next()? {
                Ev::Start(tag) => {
                    // Styles come before the text, which is most of the part: it is left
                    // unread (a flat document's body is the whole book).
                    if tag.is(Ns::Office, "body") {
                        break;
                    }
                    let owner = self.start(&tag, open.iter().rev().flatten().next());
                    open.push(owner);
                }
                Ev::End => {
                    open.pop();
                }
                Ev::Text(_) => {}
                Ev::Eof => break,
            }
        }
        Ok(())
    }

    fn start(&mut self, tag: &Tag, owner: Option<&Owner>) -> Option<Owner> {
        let at = |key: &str| tag.attr(key).map(|v| v.into_owned());
        match (tag.ns, tag.name()) {
            (Ns::Style, "style") => {
                let name = at("name")?;
                let family = at("family").unwrap_or_default();
                let style = Style {
                    parent: at("parent-style-name"),
                    display: at("display-name"),
                    outline: at("default-outline-level").and_then(|l| l.parse().ok()),
                    ..Style::default()
                };
                let owner = match family.as_str() {
                    "paragraph" => Owner::Paragraph(name.clone()),
                    "text" => Owner::Text(name.clone()),
                    _ => return None,
                };
                match &owner {
                    Owner::Paragraph(n) => self.paragraph.insert(n.clone(), style),
                    Owner::Text(n) => self.text.insert(n.clone(), style),
                    _ => None,
                };
                Some(owner)
            }
            (Ns::Style, "default-style") if at("family").as_deref() == Some("paragraph") => {
                Some(Owner::Default)
            }
            (Ns::Style, "text-properties") => {
                let owner = owner?;
                if let Owner::Default = owner {
                    if let Some(language) = at("language").filter(|l| l != "zxx" && l != "none") {
                        self.language = Some(match at("country").filter(|c| c != "none") {
                            Some(country) => format!("{language}-{country}"),
                            None => language,
                        });
                    }
                    return None;
                }
                let style = self.style_mut(owner)?;
                let look = &mut style.look;
                if let Some(v) = at("font-style") {
                    look.italic = Some(matches!(v.as_str(), "italic" | "oblique"));
                }
                if let Some(v) = at("font-weight") {
                    look.bold = Some(v == "bold" || v.parse::<u32>().is_ok_and(|w| w >= 600));
                }
                if let Some(v) = at("text-underline-style") {
                    look.underline = Some(v != "none");
                }
                if let Some(v) = at("text-line-through-style") {
                    look.strike = Some(v != "none");
                }
                if let Some(v) = at("font-variant") {
                    look.small_caps = Some(v == "small-caps");
                }
                if let Some(v) = at("text-position") {
                    let first = v.split_whitespace().next().unwrap_or("");
                    look.raised = match first {
                        "super" => Some(true),
                        "sub" => Some(false),
                        p => p
                            .trim_end_matches('%')
                            .parse::<f32>()
                            .ok()
                            .filter(|p| *p != 0.0)
                            .map(|p| p > 0.0),
                    };
                }
                if at("display").as_deref() == Some("none") {
                    look.hidden = true;
                }
                None
            }
            (Ns::Style, "paragraph-properties") => {
                if let Some(owner @ Owner::Paragraph(_)) = owner
                    && matches!(at("break-before").as_deref(), Some("page"))
                    && let Some(style) = self.style_mut(owner)
                {
                    style.break_before = true;
                }
                None
            }
            (Ns::Text, "list-style") => {
                let name = at("name")?;
                self.lists.insert(name.clone(), Vec::new());
                Some(Owner::List(name))
            }
            (
                Ns::Text,
                "list-level-style-number" | "list-level-style-bullet" | "list-level-style-image",
            ) => {
                let Some(Owner::List(name)) = owner else {
                    return None;
                };
                let level = at("level").and_then(|l| l.parse().ok()).unwrap_or(1);
                let kind = if tag.name() == "list-level-style-number" {
                    match at("num-format").as_deref() {
                        Some("a") => ListKind::LowerAlpha,
                        Some("A") => ListKind::UpperAlpha,
                        Some("i") => ListKind::LowerRoman,
                        Some("I") => ListKind::UpperRoman,
                        // An empty format numbers nothing: a plain list.
                        Some("") => ListKind::Bullet,
                        _ => ListKind::Decimal,
                    }
                } else {
                    ListKind::Bullet
                };
                let start = at("start-value").and_then(|s| s.parse().ok()).unwrap_or(1);
                if let Some(levels) = self.lists.get_mut(name) {
                    levels.push((level, kind, start));
                }
                None
            }
            _ => None,
        }
    }

    fn style_mut(&mut self, owner: &Owner) -> Option<&mut Style> {
        match owner {
            Owner::Paragraph(n) => self.paragraph.get_mut(n),
            Owner::Text(n) => self.text.get_mut(n),
            _ => None,
        }
    }

    /// A style and its ancestors, nearest first (a loop in the chain ends it).
    fn chain<'a>(map: &'a HashMap<String, Style>, name: &str) -> Vec<(&'a str, &'a Style)> {
        let mut out: Vec<(&str, &Style)> = Vec::new();
        let mut next = Some(name);
        while let Some(n) = next {
            let Some((key, style)) = map.get_key_value(n) else {
                break;
            };
            if out.iter().any(|(k, _)| *k == key.as_str()) || out.len() > 32 {
                break;
            }
            out.push((key.as_str(), style));
            next = style.parent.as_deref();
        }
        out
    }

    pub fn paragraph_look(&self, name: &str) -> Look {
        merged(&Self::chain(&self.paragraph, name))
    }

    pub fn text_look(&self, name: &str) -> Look {
        merged(&Self::chain(&self.text, name))
    }

    /// Whether a character style marks code (`Source Text`, Word's `Verbatim Char`…).
    pub fn is_code(&self, name: &str) -> bool {
        Self::chain(&self.text, name).iter().any(|(key, style)| {
            matches!(
                readable(style.display.as_deref().unwrap_or(key)).as_str(),
                "source text"
                    | "verbatim char"
                    | "code"
                    | "html code"
                    | "source code"
                    | "inline code"
                    | "teletype"
            )
        })
    }

    /// What a paragraph style is for, by the first style up its chain that says.
    pub fn role(&self, name: &str) -> Option<Role> {
        for (key, style) in Self::chain(&self.paragraph, name) {
            let readable = readable(style.display.as_deref().unwrap_or(key));
            let role = match readable.as_str() {
                "title" => Some(Role::Title),
                "subtitle" => Some(Role::Subtitle),
                "author" => Some(Role::Author),
                "date" => Some(Role::Date),
                "quotations" | "quote" | "quotation" | "intense quote" | "block text" => {
                    Some(Role::Quotation)
                }
                "preformatted text" | "source code" | "code" | "html preformatted" => {
                    Some(Role::Code)
                }
                "horizontal line" => Some(Role::Rule),
                "caption" | "illustration" | "figure" | "table" | "drawing" => Some(Role::Caption),
                _ => style
                    .outline
                    .filter(|l| (1..=6).contains(l))
                    .map(Role::Heading),
            };
            if role.is_some() {
                return role;
            }
        }
        None
    }

    pub fn breaks_page(&self, name: &str) -> bool {
        Self::chain(&self.paragraph, name)
            .iter()
            .any(|(_, s)| s.break_before)
    }

    /// The kind and first number of a list style's level (1-based).
    pub fn list_level(&self, list: &str, level: u8) -> (ListKind, u32) {
        self.lists
            .get(list)
            .and_then(|levels| levels.iter().find(|(l, _, _)| *l == level))
            .map(|(_, kind, start)| (*kind, *start))
            .unwrap_or((ListKind::Bullet, 1))
    }
}

enum Owner {
    Paragraph(String),
    Text(String),
    Default,
    List(String),
}

fn merged(chain: &[(&str, &Style)]) -> Look {
    // The chain runs nearest first: the furthest ancestor is laid down first.
    let mut look = Look::default();
    for (_, style) in chain.iter().rev() {
        look.over(&style.look);
    }
    look
}

/// `Heading_20_1` as a person reads it: `heading 1`.
fn readable(name: &str) -> String {
    let mut out = String::new();
    let mut rest = name;
    while let Some(i) = rest.find('_') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        match after.get(..3).filter(|h| h.ends_with('_')) {
            Some(hex) if u8::from_str_radix(&hex[..2], 16).is_ok() => {
                let byte = u8::from_str_radix(&hex[..2], 16).unwrap_or(b' ');
                out.push(char::from(byte));
                rest = &after[3..];
            }
            _ => {
                out.push('_');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out.to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_read_as_people_read_them() {
        assert_eq!(readable("Heading_20_1"), "heading 1");
        assert_eq!(readable("Text_20_body"), "text body");
        assert_eq!(readable("my_style"), "my_style");
    }

    #[test]
    fn looks_and_roles_follow_the_chain() {
        let mut styles = Styles::default();
        styles
            .read(
                r#"<office:document-styles xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" xmlns:fo="urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"><office:styles>
                <style:default-style style:family="paragraph"><style:text-properties fo:language="fr" fo:country="CA"/></style:default-style>
                <style:style style:name="Quotations" style:family="paragraph"><style:text-properties fo:font-style="italic"/></style:style>
                <style:style style:name="P1" style:family="paragraph" style:parent-style-name="Quotations"><style:paragraph-properties fo:break-before="page"/></style:style>
                <style:style style:name="T1" style:family="text"><style:text-properties style:text-position="super 58%" fo:font-weight="bold"/></style:style>
                <text:list-style style:name="L1"><text:list-level-style-number text:level="1" style:num-format="i"/><text:list-level-style-bullet text:level="2"/></text:list-style>
                </office:styles></office:document-styles>"#,
                "styles.xml",
            )
            .expect("reads");
        assert_eq!(styles.language.as_deref(), Some("fr-CA"));
        assert_eq!(styles.role("P1"), Some(Role::Quotation));
        assert!(styles.breaks_page("P1"));
        assert_eq!(styles.paragraph_look("P1").italic, Some(true));
        let t1 = styles.text_look("T1");
        assert_eq!((t1.raised, t1.bold), (Some(true), Some(true)));
        assert_eq!(styles.list_level("L1", 1), (ListKind::LowerRoman, 1));
        assert_eq!(styles.list_level("L1", 2).0, ListKind::Bullet);
    }
}
