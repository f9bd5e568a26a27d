//! Equations for Typst's math layout, from the MathML the book already holds: one walk for
//! TeX and Word equations alike, since both became MathML as the manuscript was read
//! (`crate::math`, `manuscript::docx::omml`), and the walk only has to know the presentation
//! elements that module writes (`crate::math::ELEMENTS`).
//!
//! The equation is written as Typst *code* (`math.frac(…)`, `math.attach(…)`), never as math
//! markup: every character of the manuscript enters as a string literal (`[#"x"]`), so an
//! equation can no more run Typst than the text around it. Laid out in an equation, a one-letter
//! text is set italic and a longer one upright, as MathML's `mi` asks, and each operator gets
//! its spacing from its Unicode math class.

use std::fmt::Write as _;

use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};

use super::strings::literal;

/// Typst for `mathml` (one `<math>` element) as an equation, inline or displayed; `None` when
/// the MathML cannot be read, and the caller prints the equation's characters instead.
///
/// A displayed equation is an inline one in display style on a line of its own, centred: it
/// stands inside the paragraph the manuscript put it in, where Typst drops a block equation.
pub(crate) fn equation(mathml: &str, display: bool) -> Option<String> {
    let root = parse(mathml)?;
    let mut out = String::new();
    if display {
        out.push_str("#linebreak()#h(1fr)#math.equation(block: false, math.display(");
        body(&root, &mut out);
        out.push_str("))#h(1fr)#linebreak()");
    } else {
        out.push_str("#math.equation(block: false, ");
        body(&root, &mut out);
        out.push(')');
    }
    Some(out)
}

/// An element of the MathML, with what the walk reads of it.
#[derive(Debug, Default)]
struct Node {
    name: String,
    /// `mathvariant`, `accent`, `accentunder`, `linethickness`, `open`, `close`, `width`.
    attributes: Vec<(String, String)>,
    children: Vec<Node>,
    /// A token element's text (`mi`, `mn`, `mo`, `mtext`, `ms`).
    text: String,
}

impl Node {
    fn attribute(&self, name: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn child(&self, i: usize) -> Option<&Node> {
        self.children.get(i)
    }
}

/// How deep an equation Typst is given. Each level of MathML is two or three of Typst's
/// (a call, a content block), and Typst's parser and layout recurse on them; what the book's
/// MathML allows (`crate::math::MAX_DEPTH`, 100) is more than a real equation needs, and a
/// deeper one prints its characters.
const MAX_DEPTH: usize = 32;

fn parse(mathml: &str) -> Option<Node> {
    let mut reader = Reader::from_str(mathml);
    let mut stack: Vec<Node> = vec![Node::default()];
    loop {
        match reader.read_event().ok()? {
            Event::Start(e) => {
                if stack.len() > MAX_DEPTH {
                    return None;
                }
                stack.push(node(&e));
            }
            Event::Empty(e) => {
                let n = node(&e);
                stack.last_mut()?.children.push(n);
            }
            Event::End(_) => {
                let done = stack.pop()?;
                stack.last_mut()?.children.push(done);
            }
            Event::Text(t) => {
                let text = t.xml10_content();
                stack.last_mut()?.text.push_str(&text);
            }
            Event::GeneralRef(r) => {
                let c = match r.resolve_char_ref() {
                    Ok(Some(c)) => c.to_string(),
                    _ => quick_xml::escape::resolve_predefined_entity(&r)?.to_owned(),
                };
                stack.last_mut()?.text.push_str(&c);
            }
            Event::Eof => break,
            _ => {}
        }
    }
    let mut top = stack.pop()?;
    if !stack.is_empty() {
        return None;
    }
    let root = top.children.pop()?;
    (root.name == "math").then_some(root)
}

fn node(e: &BytesStart<'_>) -> Node {
    let name = e.local_name().as_ref().to_owned();
    let attributes = e
        .attributes()
        .flatten()
        .map(|a| {
            (
                a.key.local_name().as_ref().to_owned(),
                a.normalized_value(quick_xml::XmlVersion::Implicit1_0)
                    .map(|v| v.into_owned())
                    .unwrap_or_default(),
            )
        })
        .collect();
    Node {
        name,
        attributes,
        ..Node::default()
    }
}

/// Whether `node` is an `mo` holding one of `fences`.
fn fence(node: Option<&Node>, fences: &str) -> bool {
    node.is_some_and(|n| {
        n.name == "mo" && n.text.chars().count() == 1 && fences.contains(n.text.as_str())
    })
}

/// The children of `node` as one content expression: `[#a#b…]`. A row between fences (`(…)`,
/// `\left[ … \right]`, a brace before cases) is `math.lr`, whose fences grow to what they hold.
fn body(node: &Node, out: &mut String) {
    let (first, last) = (node.children.first(), node.children.last());
    let opens = fence(first, "([{|\u{2016}\u{27e8}\u{2308}\u{230a}");
    let closes = fence(last, ")]}|\u{2016}\u{27e9}\u{2309}\u{230b}");
    // A fence alone (cases' brace) only before or after one thing: in `|x| = {…}` the bar
    // opens no row.
    if node.name == "mrow"
        && node.children.len() >= 2
        && ((opens && closes) || ((opens || closes) && node.children.len() == 2))
    {
        out.push_str("math.lr(");
        row(node, out);
        out.push(')');
    } else {
        row(node, out);
    }
}

fn row(node: &Node, out: &mut String) {
    // `semantics` keeps its annotation (the TeX) beside the presentation: only the first child
    // is the equation.
    let children: &[Node] = if node.name == "semantics" {
        node.children.get(..1).unwrap_or_default()
    } else {
        &node.children
    };
    out.push('[');
    for child in children {
        out.push('#');
        expression(child, out);
    }
    out.push(']');
}

/// One element as a content expression.
fn expression(node: &Node, out: &mut String) {
    let arg = |i: usize, out: &mut String| match node.child(i) {
        Some(child) => expression(child, out),
        None => out.push_str("[]"),
    };
    match node.name.as_str() {
        "mi" | "mo" => {
            let wrap = match node.attribute("mathvariant") {
                Some("normal") if node.text.chars().count() == 1 => Some("math.upright"),
                Some("bold" | "bold-italic") => Some("math.bold"),
                // A name (`sin`, `max`, `lim`): upright, spaced as an operator.
                _ if node.text.chars().count() > 1 => Some("math.op"),
                _ => None,
            };
            token(&node.text, wrap, out);
        }
        "mn" | "mtext" => token(&node.text, None, out),
        "ms" => token(&format!("\"{}\"", node.text), None, out),
        "mspace" => out.push_str("h(0.25em)"),
        "mfrac" => {
            out.push_str("math.frac(");
            arg(0, out);
            out.push_str(", ");
            arg(1, out);
            out.push(')');
        }
        "msqrt" => {
            out.push_str("math.sqrt(");
            body(node, out);
            out.push(')');
        }
        "mroot" => {
            out.push_str("math.root(");
            arg(1, out);
            out.push_str(", ");
            arg(0, out);
            out.push(')');
        }
        "msub" | "msup" | "msubsup" => {
            out.push_str("math.attach(");
            arg(0, out);
            if node.name != "msup" {
                out.push_str(", b: ");
                arg(1, out);
            }
            if node.name != "msub" {
                out.push_str(", t: ");
                arg(if node.name == "msup" { 1 } else { 2 }, out);
            }
            out.push(')');
        }
        "munder" | "mover" | "munderover" => under_over(node, out),
        "mmultiscripts" => multiscripts(node, out),
        "mtable" => table(node, out),
        "mphantom" => {
            out.push_str("hide(");
            body(node, out);
            out.push(')');
        }
        "mfenced" => {
            let open = node.attribute("open").unwrap_or("(");
            let close = node.attribute("close").unwrap_or(")");
            out.push_str("math.lr([#");
            out.push_str(&literal(open));
            for (i, child) in node.children.iter().enumerate() {
                if i > 0 {
                    out.push('#');
                    out.push_str(&literal(","));
                }
                out.push('#');
                expression(child, out);
            }
            out.push('#');
            out.push_str(&literal(close));
            out.push_str("])");
        }
        "menclose" => enclosed(node, out),
        "none" | "mprescripts" | "annotation" | "annotation-xml" => out.push_str("[]"),
        // math, mrow, mstyle, mpadded, merror, semantics, mtd and what else holds children:
        // their content in a row.
        _ => body(node, out),
    }
}

/// `menclose`: a frame (`\boxed`, Word's border box) or strokes through the content
/// (`\cancel` and its kin, `\sout`); a notation Typst has no drawing for shows the content.
fn enclosed(node: &Node, out: &mut String) {
    let notation = node.attribute("notation").unwrap_or("longdiv");
    let has = |n: &str| notation.split_whitespace().any(|x| x == n);
    let up = has("updiagonalstrike");
    let down = has("downdiagonalstrike");
    let (open, close) = if up && down {
        ("math.cancel(cross: true, ", ")")
    } else if up {
        ("math.cancel(", ")")
    } else if down {
        ("math.cancel(inverted: true, ", ")")
    } else if has("horizontalstrike") {
        ("strike(", ")")
    } else if has("box") || has("roundedbox") || has("circle") {
        (
            "box(stroke: 0.5pt, inset: (x: 0.2em, y: 0.25em), baseline: 0.25em, ",
            ")",
        )
    } else {
        ("", "")
    };
    out.push_str(open);
    body(node, out);
    out.push_str(close);
}

/// A token's text as content, in `wrap` (a math style function) when given. One character is
/// a symbol, which math sets as it sets a letter it was written: a Latin or Greek letter in
/// italics, an operator or relation with its spacing. Longer text is set upright.
fn token(text: &str, wrap: Option<&str>, out: &mut String) {
    if let Some(wrap) = wrap {
        out.push_str(wrap);
        out.push('(');
    }
    out.push_str("[#");
    if text.chars().count() == 1 {
        out.push_str("symbol(");
        out.push_str(&literal(text));
        out.push(')');
    } else {
        out.push_str(&literal(text));
    }
    out.push(']');
    if wrap.is_some() {
        out.push(')');
    }
}

/// Characters that, over or under a base, are Typst's own decorations rather than limits.
fn decoration(node: &Node, over: bool) -> Option<&'static str> {
    if node.name != "mo" {
        return None;
    }
    match (node.text.as_str(), over) {
        ("\u{af}" | "\u{203e}" | "\u{2015}" | "_", true) => Some("math.overline"),
        ("\u{af}" | "\u{203e}" | "\u{2015}" | "_", false) => Some("math.underline"),
        ("\u{23de}", true) => Some("math.overbrace"),
        ("\u{23df}", false) => Some("math.underbrace"),
        ("\u{23b4}", true) => Some("math.overbracket"),
        ("\u{23b5}", false) => Some("math.underbracket"),
        _ => None,
    }
}

fn under_over(node: &Node, out: &mut String) {
    let (Some(base), Some(first)) = (node.child(0), node.child(1)) else {
        return body(node, out);
    };
    let over = node.name == "mover";
    // A bar or brace over or under the base is drawn to its width.
    if node.name != "munderover"
        && let Some(function) = decoration(first, over)
    {
        let _ = write!(out, "{function}(");
        expression(base, out);
        out.push(')');
        return;
    }
    // An accent over the base (a hat, a tilde, an arrow) sits on it.
    let one_operator = first.name == "mo" && first.text.chars().count() == 1;
    if over && one_operator && (node.attribute("accent") == Some("true") || is_accent(&first.text))
    {
        out.push_str("math.accent(");
        expression(base, out);
        out.push_str(", ");
        out.push_str(&literal(&first.text));
        out.push(')');
        return;
    }
    // Limits: set above and below the base, not beside it; an operator's (a sum, `max`) only
    // when displayed, as MathML's `movablelimits` has it, and beside it in a line of text.
    out.push_str("math.attach(math.limits(");
    expression(base, out);
    out.push_str(if movable_limits(base) {
        ", inline: false)"
    } else {
        ")"
    });
    match node.name.as_str() {
        "munder" => {
            out.push_str(", b: ");
            expression(first, out);
        }
        "mover" => {
            out.push_str(", t: ");
            expression(first, out);
        }
        _ => {
            out.push_str(", b: ");
            expression(first, out);
            if let Some(over) = node.child(2) {
                out.push_str(", t: ");
                expression(over, out);
            }
        }
    }
    out.push(')');
}

/// Whether `base` takes its limits above and below only when displayed: a large operator (a
/// sum, an integral) or a name (`max`, `lim`), not an arrow or a relation set over.
fn movable_limits(base: &Node) -> bool {
    base.name == "mo"
        && (base.text.chars().count() > 1
            || base.text.chars().all(|c| {
                matches!(c, '\u{2210}'..='\u{2211}' | '\u{220f}' | '\u{222b}'..='\u{2233}' | '\u{22c0}'..='\u{22c3}' | '\u{2a00}'..='\u{2a0c}')
            }))
}

/// The characters MathML converters put over a base as accents.
fn is_accent(text: &str) -> bool {
    matches!(
        text,
        "^" | "\u{2c6}"
            | "\u{302}"
            | "~"
            | "\u{2dc}"
            | "\u{303}"
            | "\u{2d9}"
            | "\u{307}"
            | "\u{a8}"
            | "\u{308}"
            | "\u{2192}"
            | "\u{20d7}"
            | "\u{b4}"
            | "\u{301}"
            | "`"
            | "\u{300}"
            | "\u{2d8}"
            | "\u{306}"
            | "\u{2c7}"
            | "\u{30c}"
    )
}

/// `mmultiscripts`: the base, then pairs of sub- and superscripts after it, then after
/// `mprescripts` the pairs before it. The first pair on each side is kept.
fn multiscripts(node: &Node, out: &mut String) {
    let Some(base) = node.child(0) else {
        return out.push_str("[]");
    };
    let rest = &node.children[1..];
    let split = rest
        .iter()
        .position(|n| n.name == "mprescripts")
        .unwrap_or(rest.len());
    let (post, pre) = (&rest[..split], rest.get(split + 1..).unwrap_or_default());
    out.push_str("math.attach(");
    expression(base, out);
    for (key, script) in [
        ("br", post.first()),
        ("tr", post.get(1)),
        ("bl", pre.first()),
        ("tl", pre.get(1)),
    ] {
        if let Some(script) = script.filter(|s| s.name != "none") {
            let _ = write!(out, ", {key}: ");
            expression(script, out);
        }
    }
    out.push(')');
}

/// `mtable` as a matrix with no delimiters (the MathML draws its own fences around it), each
/// row's label (`mlabeledtr`'s first cell) left out.
fn table(node: &Node, out: &mut String) {
    out.push_str("math.mat(delim: none");
    for row in &node.children {
        let cells = match row.name.as_str() {
            "mtr" => &row.children[..],
            "mlabeledtr" => row.children.get(1..).unwrap_or_default(),
            _ => continue,
        };
        out.push_str(", (");
        for cell in cells {
            expression(cell, out);
            out.push_str(", ");
        }
        out.push(')');
    }
    out.push(')');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typst(mathml: &str) -> String {
        equation(mathml, false).expect("readable MathML")
    }

    #[test]
    fn fractions_scripts_and_roots_become_typst_functions() {
        let m = r#"<math xmlns="http://www.w3.org/1998/Math/MathML"><semantics><mrow><mfrac><mi>a</mi><mn>2</mn></mfrac><mo>+</mo><msup><mi>x</mi><mn>2</mn></msup><mo>+</mo><mroot><mi>y</mi><mn>3</mn></mroot></mrow><annotation encoding="application/x-tex">\frac{a}{2}+x^2+\sqrt[3]{y}</annotation></semantics></math>"#;
        assert_eq!(
            typst(m),
            r##"#math.equation(block: false, [#[#[#math.frac([#symbol("a")], [#symbol("2")])#[#symbol("+")]#math.attach([#symbol("x")], t: [#symbol("2")])#[#symbol("+")]#math.root([#symbol("3")], [#symbol("y")])]]])"##
        );
    }

    #[test]
    fn the_manuscripts_characters_stay_strings() {
        let m = r##"<math><mi>#read("/etc/passwd")</mi><mtext>"]#panic()</mtext></math>"##;
        let out = typst(m);
        assert!(out.contains(r##"[#"#read(\"/etc/passwd\")"]"##), "{out}");
        assert!(out.contains(r##"[#"\"]#panic()"]"##), "{out}");
    }

    #[test]
    fn limits_accents_bars_and_matrices() {
        let sum = r#"<math display="block"><munderover><mo>∑</mo><mrow><mi>i</mi><mo>=</mo><mn>1</mn></mrow><mi>n</mi></munderover></math>"#;
        assert!(
            typst(sum).contains(r#"math.attach(math.limits([#symbol("∑")], inline: false), b: "#),
            "{}",
            typst(sum)
        );
        let hat = r#"<math><mover accent="true"><mi>x</mi><mo>^</mo></mover></math>"#;
        assert!(typst(hat).contains(r#"math.accent([#symbol("x")], "^")"#));
        let bar = r#"<math><mover><mi>z</mi><mo>¯</mo></mover></math>"#;
        assert!(typst(bar).contains(r#"math.overline([#symbol("z")])"#));
        let mat = r#"<math><mtable><mtr><mtd><mn>1</mn></mtd><mtd><mn>0</mn></mtd></mtr><mtr><mtd><mn>0</mn></mtd><mtd><mn>1</mn></mtd></mtr></mtable></math>"#;
        assert!(
            typst(mat).contains(
                r##"math.mat(delim: none, ([#[#symbol("1")]], [#[#symbol("0")]], ), ([#[#symbol("0")]], [#[#symbol("1")]], ))"##
            ),
            "{}",
            typst(mat)
        );
    }

    #[test]
    fn an_equation_nested_too_deep_prints_its_characters() {
        let deep = format!(
            "<math>{}<mi>x</mi>{}</math>",
            "<mrow>".repeat(MAX_DEPTH + 1),
            "</mrow>".repeat(MAX_DEPTH + 1)
        );
        assert_eq!(equation(&deep, false), None);
        let fine = format!(
            "<math>{}<mi>x</mi>{}</math>",
            "<mrow>".repeat(MAX_DEPTH - 2),
            "</mrow>".repeat(MAX_DEPTH - 2)
        );
        assert!(equation(&fine, false).is_some());
    }

    #[test]
    fn frames_and_strokes_are_drawn() {
        let boxed = typst(r#"<math><menclose notation="box"><mi>x</mi></menclose></math>"#);
        assert!(boxed.contains("box(stroke: 0.5pt"), "{boxed}");
        let cancel = typst(
            r#"<math><menclose notation="updiagonalstrike downdiagonalstrike"><mn>3</mn></menclose></math>"#,
        );
        assert!(cancel.contains("math.cancel(cross: true, "), "{cancel}");
        let struck =
            typst(r#"<math><menclose notation="horizontalstrike"><mi>y</mi></menclose></math>"#);
        assert!(struck.contains("strike("), "{struck}");
    }

    #[test]
    fn unreadable_mathml_is_none() {
        assert_eq!(equation("<math><mi>x</math>", false), None);
        assert_eq!(equation("<p>x</p>", false), None);
    }
}
