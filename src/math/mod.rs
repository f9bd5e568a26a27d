//! Mathematics as MathML: TeX converted to MathML (`tex`, after the author's macros are
//! expanded by `macros` and the constructs math-core lacks rewritten by `constructs`), the pass that makes a converter's
//! output fit EPUB and the web reader (`clean`), and what both the Word-equation reader and
//! the writers need of MathML (its namespace, escaping, its text).
//!
//! What this module hands out is one `<math>` element in the MathML namespace without a
//! prefix, using only MathML 3 presentation elements (plus `semantics` and `annotation`), no
//! `style` attribute (the reader's Content-Security-Policy blocks inline styles; the few
//! layouts a converter asked for are classes, styled by the book's stylesheet), and
//! `displaystyle`/`scriptlevel` only where EPUBCheck's MathML 3 schema allows them. Chromium
//! and Firefox render it natively (MathML Core).

mod clean;
mod constructs;
mod macros;
mod tex;

pub use clean::{CLASSES, clean};
pub use tex::{MAX_DEPTH, MAX_TEX_LEN, TexConverter, TexError};

/// The MathML namespace, which `<math>` declares as its default (EPUB forbids a prefix).
pub const NAMESPACE: &str = "http://www.w3.org/1998/Math/MathML";

/// The presentation elements (MathML 3, which EPUBCheck validates) that Bindery writes.
pub const ELEMENTS: &[&str] = &[
    "math",
    "semantics",
    "annotation",
    "mrow",
    "mi",
    "mn",
    "mo",
    "mtext",
    "mspace",
    "ms",
    "mfrac",
    "msqrt",
    "mroot",
    "mstyle",
    "merror",
    "mpadded",
    "mphantom",
    "mfenced",
    "menclose",
    "msub",
    "msup",
    "msubsup",
    "munder",
    "mover",
    "munderover",
    "mmultiscripts",
    "mprescripts",
    "none",
    "mtable",
    "mtr",
    "mlabeledtr",
    "mtd",
];

/// The rules for [`CLASSES`], which the book's and the reader's stylesheets end with.
pub fn stylesheet() -> String {
    let mut css = String::from("\n/* Layouts of equations (crate::math::CLASSES). */\n");
    let mut classes: Vec<&str> = CLASSES.iter().map(|(_, class)| *class).collect();
    classes.dedup();
    for class in classes {
        css.push_str("math .");
        css.push_str(class);
        css.push_str(" {");
        for (declaration, _) in CLASSES.iter().filter(|(_, c)| *c == class) {
            css.push(' ');
            css.push_str(declaration);
            css.push(';');
        }
        css.push_str(" }\n");
    }
    css
}

/// Escapes text for an XML element's content or a double-quoted attribute.
pub fn escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            // Characters XML 1.0 cannot carry at all.
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => {}
            c => out.push(c),
        }
    }
}

/// The text a reader sees of some MathML: the characters of its token elements, without the
/// annotations (the TeX source is not what the equation shows). Used for word counts and the
/// model's plain text; MathML that does not parse gives what text it has up to the fault.
pub fn text_content(mathml: &str) -> String {
    use quick_xml::Reader;
    use quick_xml::events::Event;
    let mut reader = Reader::from_str(mathml);
    let mut out = String::new();
    let mut in_annotation = 0u32;
    loop {
        match reader.read_event() {
            Ok(Event::Start(e)) => {
                if matches!(e.local_name().as_ref(), "annotation" | "annotation-xml") {
                    in_annotation += 1;
                }
            }
            Ok(Event::End(e)) => {
                if matches!(e.local_name().as_ref(), "annotation" | "annotation-xml") {
                    in_annotation = in_annotation.saturating_sub(1);
                }
            }
            Ok(Event::Text(t)) if in_annotation == 0 => {
                out.push_str(&t.xml10_content());
            }
            Ok(Event::GeneralRef(r)) if in_annotation == 0 => {
                if let Ok(Some(c)) = r.resolve_char_ref() {
                    out.push(c);
                } else if let Some(s) = quick_xml::escape::resolve_predefined_entity(&r) {
                    out.push_str(s);
                }
            }
            Ok(Event::Eof) | Err(_) => break,
            Ok(_) => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_content_skips_the_annotation_and_resolves_references() {
        let mathml = r#"<math xmlns="http://www.w3.org/1998/Math/MathML"><semantics><mrow><mi>a</mi><mo>&lt;</mo><mi>&#x3B2;</mi></mrow><annotation encoding="application/x-tex">a &lt; \beta</annotation></semantics></math>"#;
        assert_eq!(text_content(mathml), "a<β");
    }

    #[test]
    fn the_stylesheet_defines_every_class_with_its_declarations() {
        let css = stylesheet();
        assert!(
            css.contains("math .math-right { text-align: right; justify-items: end; }"),
            "{css}"
        );
        for (_, class) in CLASSES {
            assert!(css.contains(&format!(".{class} {{")), "{class}");
        }
    }

    #[test]
    fn escaping_keeps_markup_out_and_drops_what_xml_cannot_hold() {
        let mut out = String::new();
        escape_into(&mut out, "</math><b a=\"1\">&\u{1}");
        assert_eq!(out, "&lt;/math&gt;&lt;b a=&quot;1&quot;&gt;&amp;");
    }
}
