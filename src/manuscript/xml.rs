//! A guarded pull parser over one XML part: namespace-resolved names (a part may spell the
//! WordprocessingML namespace `w:`, `ns0:` or anything else), no DTDs (an external one,
//! without declarations of its own, is passed over where a format's files commonly name
//! one, as EPUB 2's NCX does), no entities beyond the
//! five predefined ones and character references, and a bound on nesting depth so a hostile
//! part cannot exhaust the stack of the recursive readers above it.

use std::borrow::Cow;

use quick_xml::NsReader;
use quick_xml::XmlVersion;
use quick_xml::escape::resolve_predefined_entity;
use quick_xml::events::{BytesStart, Event};
use quick_xml::name::ResolveResult;

use crate::manuscript::InputError;

/// Deeper than any real document nests (a table in a text box in a table is about 20).
pub const MAX_DEPTH: u32 = 256;

/// The namespaces the reader understands; everything else is [`Ns::Other`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ns {
    /// WordprocessingML, transitional or strict.
    W,
    /// Office document relationships (`r:id`, `r:embed`).
    R,
    /// DrawingML word-processing drawing (`wp:inline`, `wp:docPr`).
    Wp,
    /// DrawingML main (`a:blip`).
    A,
    /// VML (`v:imagedata`, `v:textbox`).
    V,
    /// Markup compatibility (`mc:AlternateContent`).
    Mc,
    /// Office Math (`m:t`).
    M,
    /// Package relationships and content types.
    Package,
    /// Dublin Core and core properties.
    Meta,
    /// OpenDocument's vocabularies.
    Office,
    Text,
    Table,
    Draw,
    Style,
    /// XSL formatting properties, as OpenDocument uses them (`fo:font-style`).
    Fo,
    Xlink,
    /// OpenDocument's metadata (`meta:initial-creator`).
    OdfMeta,
    /// The EPUB package document and its container.
    Opf,
    Container,
    /// EPUB 2's table of contents.
    Ncx,
    Xhtml,
    /// EPUB's `epub:type`.
    Ops,
    MathMl,
    Other,
}

fn classify(uri: &str) -> Ns {
    match uri {
        "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
        | "http://purl.oclc.org/ooxml/wordprocessingml/main" => Ns::W,
        "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
        | "http://purl.oclc.org/ooxml/officeDocument/relationships" => Ns::R,
        "http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing"
        | "http://purl.oclc.org/ooxml/drawingml/wordprocessingDrawing" => Ns::Wp,
        "http://schemas.openxmlformats.org/drawingml/2006/main"
        | "http://purl.oclc.org/ooxml/drawingml/main" => Ns::A,
        "urn:schemas-microsoft-com:vml" => Ns::V,
        "http://schemas.openxmlformats.org/markup-compatibility/2006" => Ns::Mc,
        "http://schemas.openxmlformats.org/officeDocument/2006/math"
        | "http://purl.oclc.org/ooxml/officeDocument/math" => Ns::M,
        "http://schemas.openxmlformats.org/package/2006/relationships"
        | "http://schemas.openxmlformats.org/package/2006/content-types" => Ns::Package,
        "http://schemas.openxmlformats.org/package/2006/metadata/core-properties"
        | "http://purl.org/dc/elements/1.1/"
        | "http://purl.org/dc/terms/" => Ns::Meta,
        "urn:oasis:names:tc:opendocument:xmlns:office:1.0" => Ns::Office,
        "urn:oasis:names:tc:opendocument:xmlns:text:1.0" => Ns::Text,
        "urn:oasis:names:tc:opendocument:xmlns:table:1.0" => Ns::Table,
        "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" => Ns::Draw,
        "urn:oasis:names:tc:opendocument:xmlns:style:1.0" => Ns::Style,
        "urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0" => Ns::Fo,
        "http://www.w3.org/1999/xlink" => Ns::Xlink,
        "urn:oasis:names:tc:opendocument:xmlns:meta:1.0" => Ns::OdfMeta,
        "http://www.idpf.org/2007/opf" => Ns::Opf,
        "urn:oasis:names:tc:opendocument:xmlns:container" => Ns::Container,
        "http://www.daisy.org/z3986/2005/ncx/" => Ns::Ncx,
        "http://www.w3.org/1999/xhtml" => Ns::Xhtml,
        "http://www.idpf.org/2007/ops" => Ns::Ops,
        "http://www.w3.org/1998/Math/MathML" => Ns::MathMl,
        _ => Ns::Other,
    }
}

pub enum Ev<'a> {
    Start(Tag<'a>),
    /// The end of the element whose `Start` came last among those still open.
    End,
    Text(Cow<'a, str>),
    Eof,
}

/// A start tag whose attributes have been checked to be well-formed.
pub struct Tag<'a> {
    pub ns: Ns,
    start: BytesStart<'a>,
}

impl<'a> Tag<'a> {
    /// The local name (`p` for `w:p`).
    pub fn name(&self) -> &str {
        self.start.local_name().into_inner()
    }

    pub fn is(&self, ns: Ns, name: &str) -> bool {
        self.ns == ns && self.name() == name
    }

    /// An attribute by local name, whatever its prefix (WordprocessingML never gives one
    /// element two attributes with the same local name).
    pub fn attr(&self, name: &str) -> Option<Cow<'_, str>> {
        self.start
            .attributes()
            .flatten()
            .find(|a| {
                let (local, prefix) = a.key.decompose();
                local.into_inner() == name && prefix.is_none_or(|p| p.into_inner() != "xmlns")
            })
            .and_then(|a| a.normalized_value(XmlVersion::Implicit1_0).ok())
    }

    /// Every attribute by local name and value, namespace declarations left out.
    pub fn attributes(&self) -> Vec<(String, String)> {
        self.start
            .attributes()
            .flatten()
            .filter_map(|a| {
                let (local, prefix) = a.key.decompose();
                if prefix.is_some_and(|p| p.into_inner() == "xmlns")
                    || local.into_inner() == "xmlns"
                {
                    return None;
                }
                let value = a.normalized_value(XmlVersion::Implicit1_0).ok()?;
                Some((local.into_inner().to_owned(), value.into_owned()))
            })
            .collect()
    }

    /// `w:val`, the argument of most WordprocessingML properties.
    pub fn val(&self) -> Option<Cow<'_, str>> {
        self.attr("val")
    }

    /// A toggle property: present means on unless `w:val` says false.
    pub fn on(&self) -> bool {
        !matches!(self.val().as_deref(), Some("0" | "false" | "off" | "none"))
    }
}

pub struct Xml<'a> {
    reader: NsReader<&'a [u8]>,
    part: String,
    depth: u32,
    /// Whether a DOCTYPE that only names an external DTD is passed over.
    external_doctype: bool,
}

impl<'a> Xml<'a> {
    pub fn new(text: &'a str, part: &str) -> Self {
        let mut reader = NsReader::from_str(text);
        let config = reader.config_mut();
        config.expand_empty_elements = true;
        config.check_end_names = true;
        Xml {
            reader,
            part: part.to_owned(),
            depth: 0,
            external_doctype: false,
        }
    }

    /// A reader that passes over a DOCTYPE naming an external DTD (which it never fetches),
    /// and still refuses one that declares anything itself (`[`…`]`, where entities live).
    pub fn allowing_external_doctype(mut self) -> Self {
        self.external_doctype = true;
        self
    }

    pub fn error(&self, detail: impl Into<String>) -> InputError {
        InputError::Xml {
            part: self.part.clone(),
            detail: detail.into(),
        }
    }

    pub fn next(&mut self) -> Result<Ev<'a>, InputError> {
        loop {
            let (ns, event) = match self.reader.read_resolved_event() {
                Ok((ResolveResult::Bound(ns), event)) => (classify(ns.0), event),
                Ok((_, event)) => (Ns::Other, event),
                Err(e) => return Err(self.error(e.to_string())),
            };
            return Ok(match event {
                Event::Start(start) => {
                    self.depth += 1;
                    if self.depth > MAX_DEPTH {
                        return Err(self.error(format!("elements nested over {MAX_DEPTH} deep")));
                    }
                    self.check_attributes(&start)?;
                    Ev::Start(Tag { ns, start })
                }
                Event::End(_) => {
                    self.depth = self.depth.saturating_sub(1);
                    Ev::End
                }
                Event::Text(text) => Ev::Text(text.xml10_content()),
                Event::CData(text) => Ev::Text(text.xml10_content()),
                Event::GeneralRef(r) => {
                    let resolved = match r.resolve_char_ref() {
                        Ok(Some(c)) => Cow::Owned(c.to_string()),
                        Ok(None) => match resolve_predefined_entity(&r) {
                            Some(s) => Cow::Borrowed(s),
                            None => {
                                return Err(self.error(format!("undefined entity &{};", &*r)));
                            }
                        },
                        Err(e) => return Err(self.error(e.to_string())),
                    };
                    Ev::Text(resolved)
                }
                Event::DocType(doctype)
                    if self.external_doctype && !doctype.as_ref().contains('[') =>
                {
                    continue;
                }
                Event::DocType(_) => {
                    return Err(InputError::XmlDoctype {
                        part: self.part.clone(),
                    });
                }
                Event::Eof => {
                    if self.depth > 0 {
                        return Err(self.error("the part ends inside an element"));
                    }
                    Ev::Eof
                }
                Event::Empty(_) | Event::Comment(_) | Event::Decl(_) | Event::PI(_) => continue,
            });
        }
    }

    fn check_attributes(&self, start: &BytesStart) -> Result<(), InputError> {
        for attr in start.attributes() {
            let attr = attr.map_err(|e| self.error(e.to_string()))?;
            attr.normalized_value(XmlVersion::Implicit1_0)
                .map_err(|e| self.error(e.to_string()))?;
        }
        Ok(())
    }

    /// Skips the rest of the element whose `Start` was just read.
    pub fn skip(&mut self) -> Result<(), InputError> {
        let mut open = 1u32;
        while open > 0 {
            match self.next()? {
                Ev::Start(_) => open += 1,
                Ev::End => open -= 1,
                Ev::Text(_) => {}
                Ev::Eof => return Err(self.error("unexpected end")),
            }
        }
        Ok(())
    }

    /// All text inside the element whose `Start` was just read, through its end.
    pub fn text(&mut self) -> Result<String, InputError> {
        let mut out = String::new();
        let mut open = 1u32;
        while open > 0 {
            match self.next()? {
                Ev::Start(_) => open += 1,
                Ev::End => open -= 1,
                Ev::Text(t) => out.push_str(&t),
                Ev::Eof => return Err(self.error("unexpected end")),
            }
        }
        Ok(out)
    }

    /// The next child element of the current element, or `None` at its end. Text between
    /// children is ignored.
    pub fn child(&mut self) -> Result<Option<Tag<'a>>, InputError> {
        loop {
            match self.next()? {
                Ev::Start(tag) => return Ok(Some(tag)),
                Ev::End => return Ok(None),
                Ev::Text(_) => {}
                Ev::Eof => return Err(self.error("unexpected end")),
            }
        }
    }

    /// The root element.
    pub fn root(&mut self) -> Result<Tag<'a>, InputError> {
        loop {
            match self.next()? {
                Ev::Start(tag) => return Ok(tag),
                Ev::Eof => return Err(self.error("the part has no root element")),
                Ev::Text(_) | Ev::End => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_text(xml: &str) -> Result<String, InputError> {
        let mut x = Xml::new(xml, "word/document.xml");
        x.root()?;
        x.text()
    }

    #[test]
    fn any_prefix_of_the_wordprocessingml_namespace_is_recognised() {
        let mut x = Xml::new(
            r#"<ns0:document xmlns:ns0="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><ns0:p ns0:val="x"/></ns0:document>"#,
            "p",
        );
        assert!(x.root().expect("test input").is(Ns::W, "document"));
        let p = x.child().expect("test input").expect("test input");
        assert!(p.is(Ns::W, "p"));
        assert_eq!(p.val().as_deref(), Some("x"));
    }

    #[test]
    fn a_doctype_is_refused_before_any_entity_is_expanded() {
        let bomb = r#"<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;">]><a>&lol2;</a>"#;
        assert!(matches!(all_text(bomb), Err(InputError::XmlDoctype { .. })));
        let xxe = r#"<!DOCTYPE a [<!ENTITY x SYSTEM "file:///etc/passwd">]><a>&x;</a>"#;
        assert!(matches!(all_text(xxe), Err(InputError::XmlDoctype { .. })));
    }

    #[test]
    fn only_predefined_entities_and_character_references_are_resolved() {
        assert_eq!(
            all_text("<a>&amp;&#233;&#x263A;</a>").expect("test input"),
            "&é☺"
        );
        assert!(matches!(
            all_text("<a>&foo;</a>"),
            Err(InputError::Xml { .. })
        ));
    }

    #[test]
    fn malformed_xml_names_the_part() {
        let Err(InputError::Xml { part, .. }) = all_text("<a><b></a>") else {
            panic!("expected an XML error");
        };
        assert_eq!(part, "word/document.xml");
        assert!(all_text("<a>").is_err());
    }

    #[test]
    fn absurd_nesting_is_an_error_not_a_stack_overflow() {
        let deep = "<a>".repeat(10_000) + &"</a>".repeat(10_000);
        assert!(matches!(all_text(&deep), Err(InputError::Xml { .. })));
    }
}
