//! The pass over a converter's MathML before it reaches a book.
//!
//! math-core writes MathML Core, which browsers render; EPUBCheck validates MathML 3 and the
//! web reader's Content-Security-Policy (`style-src 'self'`) blocks inline styles. So:
//! - `displaystyle` and `scriptlevel` where MathML 3 does not allow them (`mfrac`, `mrow`,
//!   `scriptlevel` on `mtable`) move onto a wrapping `<mstyle>`, which means the same;
//! - each `style` declaration the converter uses for a layout (a column aligned right in
//!   `aligned`, the rules of an `array`, a numbered equation's full width) becomes one of
//!   [`CLASSES`], which the book's stylesheet and the reader's define; any other (a colour, a
//!   size, a negative space) is dropped, and the equation stays legible without it;
//! - HTML inside `<mtext>` (`\textbf` gives `<b>`) is unwrapped to its text;
//! - any other element that is not MathML presentation markup is dropped with what it holds,
//!   so the output holds only [`super::ELEMENTS`] whatever a converter writes.

use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};

use super::{ELEMENTS, NAMESPACE, escape_into};

/// Style declarations (as [`declaration`] writes them) and the class each becomes;
/// [`stylesheet`](super::stylesheet) defines the classes from this table.
pub const CLASSES: &[(&str, &str)] = &[
    ("text-align: right", "math-right"),
    ("justify-items: end", "math-right"),
    ("text-align: left", "math-left"),
    ("justify-items: start", "math-left"),
    ("text-align: center", "math-center"),
    ("justify-items: center", "math-center"),
    ("padding-right: 0", "math-pad-right-0"),
    ("padding-left: 0", "math-pad-left-0"),
    ("padding-top: 0.1667em", "math-pad-top"),
    ("width: 100%", "math-full"),
    ("width: 50%", "math-half"),
    ("width: 7.5%", "math-narrow"),
    ("border-top: 0.05em solid currentcolor", "math-rule-top"),
    ("border-top: 0.05em dashed currentcolor", "math-dash-top"),
    ("border-left: 0.05em solid currentcolor", "math-rule-left"),
    ("border-left: 0.05em dashed currentcolor", "math-dash-left"),
    ("border-right: 0.05em solid currentcolor", "math-rule-right"),
    (
        "border-right: 0.05em dashed currentcolor",
        "math-dash-right",
    ),
    (
        "border-bottom: 0.05em solid currentcolor",
        "math-rule-bottom",
    ),
    (
        "border-bottom: 0.05em dashed currentcolor",
        "math-dash-bottom",
    ),
];

/// One declaration of a `style` attribute, spaced one way: `prop: value`.
fn declaration(text: &str) -> Option<String> {
    let (property, value) = text.split_once(':')?;
    let value = value.split_whitespace().collect::<Vec<_>>().join(" ");
    Some(format!("{}: {value}", property.trim().to_ascii_lowercase()))
}

/// Whether MathML 3 allows `attribute` on `element` where MathML Core allows it anywhere.
fn style_attribute_allowed(element: &str, attribute: &str) -> bool {
    match attribute {
        "displaystyle" => matches!(element, "math" | "mstyle" | "mtable"),
        "scriptlevel" => element == "mstyle",
        _ => true,
    }
}

struct Open {
    written: bool,
    wrapped: bool,
    /// A token element, whose content is text (and where HTML is unwrapped).
    token: bool,
}

const TOKENS: &[&str] = &["mi", "mn", "mo", "mtext", "ms", "annotation"];

/// Cleans one `<math>` element (see the module's comment). `None` when it is not well-formed
/// XML with a `<math>` root, which the caller treats as a failed conversion.
pub fn clean(mathml: &str) -> Option<String> {
    let mut reader = Reader::from_str(mathml);
    reader.config_mut().expand_empty_elements = true;
    reader.config_mut().check_end_names = true;
    let mut out = String::with_capacity(mathml.len() + 64);
    let mut open: Vec<Open> = Vec::new();
    let mut seen_root = false;
    // Depth inside an element being dropped whole.
    let mut dropping = 0u32;
    loop {
        let event = reader.read_event().ok()?;
        if dropping > 0 {
            match event {
                Event::Start(_) => dropping += 1,
                Event::End(_) => dropping -= 1,
                Event::Eof => return None,
                _ => {}
            }
            continue;
        }
        match event {
            Event::Start(e) => {
                let name = e.local_name().into_inner().to_owned();
                if open.is_empty() {
                    if seen_root || name != "math" {
                        return None;
                    }
                    seen_root = true;
                }
                let in_token = open.last().is_some_and(|o| o.token);
                if !ELEMENTS.contains(&name.as_str()) {
                    if in_token {
                        open.push(Open {
                            written: false,
                            wrapped: false,
                            token: true,
                        });
                    } else {
                        dropping = 1;
                    }
                    continue;
                }
                let wrapped = start(&mut out, &name, &e)?;
                open.push(Open {
                    written: true,
                    wrapped,
                    token: in_token || TOKENS.contains(&name.as_str()),
                });
            }
            Event::End(e) => {
                let top = open.pop()?;
                if top.written {
                    out.push_str("</");
                    out.push_str(e.local_name().into_inner());
                    out.push('>');
                }
                if top.wrapped {
                    out.push_str("</mstyle>");
                }
            }
            Event::Text(t) if !open.is_empty() => escape_into(&mut out, &t.xml10_content()),
            Event::GeneralRef(r) => {
                let c = match r.resolve_char_ref().ok()? {
                    Some(c) => c.to_string(),
                    None => quick_xml::escape::resolve_predefined_entity(&r)?.to_owned(),
                };
                escape_into(&mut out, &c);
            }
            Event::CData(t) => escape_into(&mut out, &t.xml10_content()),
            Event::Eof => break,
            Event::DocType(_) => return None,
            _ => {}
        }
    }
    (seen_root && open.is_empty()).then_some(out)
}

/// Writes the start tag of a MathML element (and an `<mstyle>` before it when attributes had
/// to move there); returns whether it wrote that `<mstyle>`.
fn start(out: &mut String, name: &str, e: &BytesStart) -> Option<bool> {
    let mut moved: Vec<(String, String)> = Vec::new();
    let mut kept: Vec<(String, String)> = Vec::new();
    let mut classes: Vec<&str> = Vec::new();
    for attr in e.attributes() {
        let attr = attr.ok()?;
        let key = attr.key.as_ref().to_owned();
        let value = attr
            .normalized_value(quick_xml::XmlVersion::Implicit1_0)
            .ok()?
            .into_owned();
        if key == "xmlns" || key.starts_with("xmlns:") || key == "class" {
            continue;
        }
        if key == "style" {
            for text in value.split(';') {
                let Some(declaration) = declaration(text) else {
                    continue;
                };
                if let Some((_, class)) = CLASSES.iter().find(|(d, _)| *d == declaration)
                    && !classes.contains(class)
                {
                    classes.push(class);
                }
            }
            continue;
        }
        if !style_attribute_allowed(name, &key) {
            moved.push((key, value));
            continue;
        }
        kept.push((key, value));
    }
    let wrapped = !moved.is_empty();
    if wrapped {
        out.push_str("<mstyle");
        attributes(out, &moved);
        out.push('>');
    }
    out.push('<');
    out.push_str(name);
    if name == "math" {
        out.push_str(" xmlns=\"");
        out.push_str(NAMESPACE);
        out.push('"');
    }
    attributes(out, &kept);
    if !classes.is_empty() {
        out.push_str(" class=\"");
        out.push_str(&classes.join(" "));
        out.push('"');
    }
    out.push('>');
    Some(wrapped)
}

fn attributes(out: &mut String, attributes: &[(String, String)]) {
    for (key, value) in attributes {
        out.push(' ');
        out.push_str(key);
        out.push_str("=\"");
        escape_into(out, value);
        out.push('"');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displaystyle_and_scriptlevel_move_onto_an_mstyle_where_mathml_3_forbids_them() {
        let out = clean(r#"<math display="block"><mfrac displaystyle="true"><mn>1</mn><mn>2</mn></mfrac><mtable displaystyle="true" scriptlevel="0"><mtr><mtd><mn>3</mn></mtd></mtr></mtable></math>"#)
            .expect("well-formed");
        assert_eq!(
            out,
            r#"<math xmlns="http://www.w3.org/1998/Math/MathML" display="block"><mstyle displaystyle="true"><mfrac><mn>1</mn><mn>2</mn></mfrac></mstyle><mstyle scriptlevel="0"><mtable displaystyle="true"><mtr><mtd><mn>3</mn></mtd></mtr></mtable></mstyle></math>"#
        );
    }

    #[test]
    fn inline_styles_become_classes_or_go() {
        let out = clean(r#"<math><mtable><mtr><mtd style="text-align: right;justify-items: end;padding-right: 0;"><mi>x</mi></mtd><mtd style="color:#ff0000;"><mspace style="margin-left:-0.1667em;"/></mtd></mtr></mtable></math>"#)
            .expect("well-formed");
        assert!(!out.contains("style="), "{out}");
        assert!(
            out.contains(r#"<mtd class="math-right math-pad-right-0">"#),
            "{out}"
        );
        assert!(out.contains("<mtd><mspace></mspace></mtd>"), "{out}");
    }

    #[test]
    fn html_inside_mtext_keeps_its_text_and_other_elements_go() {
        let out = clean(r#"<math><mtext><b>bold</b> and <span class="x">sans</span></mtext><script>alert(1)</script></math>"#)
            .expect("well-formed");
        assert_eq!(
            out,
            r#"<math xmlns="http://www.w3.org/1998/Math/MathML"><mtext>bold and sans</mtext></math>"#
        );
    }

    #[test]
    fn what_is_not_one_math_element_is_refused() {
        assert_eq!(clean("<math><mi>x</math>"), None);
        assert_eq!(clean("<mrow/>"), None);
        assert_eq!(clean("<math/><math/>"), None);
    }
}
