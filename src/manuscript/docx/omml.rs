//! Word equations (Office Math, `m:oMath` and `m:oMathPara`) as MathML.
//!
//! Written from ECMA-376 Part 1 §22.1 (Math), element by element, following the mapping of
//! scienceai/omml2mathml (Apache-2.0, a JavaScript port of Microsoft's OMML2MML stylesheet;
//! no code was copied) for what the standard leaves open: runs are cut into `mn`, `mo` and
//! `mi`, `m:nor` text is `mtext`, a delimiter's default separator is `|`, accents and group
//! characters default to U+0302 and U+23DF, a function name is followed by U+2061, combining
//! accents become their spacing characters. Where it departs from omml2mathml it follows
//! Word: n-ary limits default to under and over except for integrals (the document defaults
//! `naryLim` and `intLim` that a missing `limLoc` falls back to, as Word sets them;
//! omml2mathml puts every limit as scripts), and a linear fraction is written on the line
//! (`a/b`, where omml2mathml writes a bevelled `mfrac`, which MathML Core does not draw).
//!
//! What it makes is the MathML `crate::math` describes: the MathML namespace without a
//! prefix, MathML 3 presentation elements only, no `style`. Alignment in an equation array
//! (`&` in its runs) becomes columns, right and left in turn as in TeX's `aligned`, with the
//! classes the stylesheets define. An element it does not know keeps its text (as `mtext`)
//! and is reported. `m:scr`/`m:sty` become Unicode mathematical alphanumerics, which MathML
//! Core renders (it ignores `mathvariant` except `normal`).

use std::collections::BTreeSet;

use crate::document::Math;
use crate::manuscript::InputError;
use crate::manuscript::xml::{Ev, Ns, Tag, Xml};
use crate::math::{NAMESPACE, escape_into};

/// One OMML element: its local name, whether it is in the math namespace, its `m:val`, and
/// its children (the text of an `m:t` in `text`).
#[derive(Debug, Default)]
struct Node {
    name: String,
    math: bool,
    val: Option<String>,
    children: Vec<Node>,
    text: String,
}

impl Node {
    fn child(&self, name: &str) -> Option<&Node> {
        self.children.iter().find(|c| c.math && c.name == name)
    }

    fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Node> + 'a {
        self.children
            .iter()
            .filter(move |c| c.math && c.name == name)
    }

    /// The `m:val` of the property `prop` in the properties element `pr` (`fPr`/`type`);
    /// a property present without a value is on.
    fn prop(&self, pr: &str, prop: &str) -> Option<&str> {
        self.child(pr)?
            .child(prop)
            .map(|p| p.val.as_deref().unwrap_or("on"))
    }

    fn flag(&self, pr: &str, prop: &str) -> bool {
        matches!(self.prop(pr, prop), Some("1" | "on" | "true"))
    }

    fn text_content(&self, out: &mut String) {
        out.push_str(&self.text);
        for c in &self.children {
            c.text_content(out);
        }
    }
}

/// Reads the element whose start `tag` was just read (`m:oMath` or `m:oMathPara`) through
/// its end: one equation per `m:oMath`, displayed for `m:oMathPara`; and the names of the
/// elements it did not know.
pub fn read(x: &mut Xml, tag: &Tag) -> Result<(Vec<Math>, BTreeSet<String>), InputError> {
    let root = node(x, tag)?;
    let mut unknown = BTreeSet::new();
    let (display, equations): (bool, Vec<&Node>) = if root.name == "oMathPara" {
        (true, root.all("oMath").collect())
    } else {
        (false, vec![&root])
    };
    let maths = equations
        .into_iter()
        .map(|equation| {
            let mut w = Writer {
                out: String::new(),
                unknown: &mut unknown,
            };
            w.out.push_str("<math xmlns=\"");
            w.out.push_str(NAMESPACE);
            w.out.push('"');
            if display {
                w.out.push_str(" display=\"block\"");
            }
            w.out.push('>');
            w.arg(Some(equation));
            w.out.push_str("</math>");
            Math {
                display,
                tex: None,
                mathml: Some(w.out),
            }
        })
        .collect();
    Ok((maths, unknown))
}

/// The tree of the element whose start was just read. Depth is bounded by [`Xml`].
fn node(x: &mut Xml, tag: &Tag) -> Result<Node, InputError> {
    let mut n = Node {
        name: tag.name().to_owned(),
        math: tag.ns == Ns::M,
        val: tag.val().map(|v| v.into_owned()),
        ..Node::default()
    };
    let keeps_text = n.math && n.name == "t";
    loop {
        match x.next()? {
            Ev::Start(child) => {
                let child = node(x, &child)?;
                n.children.push(child);
            }
            Ev::Text(t) if keeps_text => n.text.push_str(&t),
            Ev::Text(_) => {}
            Ev::End => return Ok(n),
            Ev::Eof => return Err(x.error("unexpected end inside an equation")),
        }
    }
}

struct Writer<'u> {
    out: String,
    unknown: &'u mut BTreeSet<String>,
}

impl Writer<'_> {
    fn open(&mut self, tag: &str) {
        self.out.push('<');
        self.out.push_str(tag);
        self.out.push('>');
    }

    fn close(&mut self, tag: &str) {
        self.out.push_str("</");
        self.out.push_str(tag);
        self.out.push('>');
    }

    fn element(&mut self, tag: &str, attributes: &str, text: &str) {
        self.out.push('<');
        self.out.push_str(tag);
        self.out.push_str(attributes);
        self.out.push('>');
        escape_into(&mut self.out, text);
        self.close(tag);
    }

    fn mo(&mut self, text: &str, attributes: &str) {
        self.element("mo", attributes, text);
    }

    /// The content of an argument (`m:e`, `m:num`, `m:sub`…) as one `mrow`: MathML's
    /// scripts and fractions take exactly one element per argument.
    fn arg(&mut self, n: Option<&Node>) {
        self.open("mrow");
        if let Some(n) = n {
            self.children(n);
        }
        self.close("mrow");
    }

    fn children(&mut self, n: &Node) {
        for c in &n.children {
            self.node(c);
        }
    }

    fn node(&mut self, n: &Node) {
        if !n.math {
            // Word's run properties (`w:rPr`) and anything else of another vocabulary.
            return;
        }
        match n.name.as_str() {
            "r" => self.run(n),
            "f" => self.fraction(n),
            "sSup" => self.scripts("msup", n, &["e", "sup"]),
            "sSub" => self.scripts("msub", n, &["e", "sub"]),
            "sSubSup" => self.scripts("msubsup", n, &["e", "sub", "sup"]),
            "sPre" => {
                self.open("mmultiscripts");
                self.arg(n.child("e"));
                self.out.push_str("<mprescripts></mprescripts>");
                self.arg(n.child("sub"));
                self.arg(n.child("sup"));
                self.close("mmultiscripts");
            }
            "rad" => {
                let degree = n.child("deg").filter(|d| !d.children.is_empty());
                if n.flag("radPr", "degHide") || degree.is_none() {
                    self.open("msqrt");
                    self.arg(n.child("e"));
                    self.close("msqrt");
                } else {
                    self.open("mroot");
                    self.arg(n.child("e"));
                    self.arg(degree);
                    self.close("mroot");
                }
            }
            "nary" => self.nary(n),
            "d" => self.delimiters(n),
            "m" => {
                self.open("mtable");
                for row in n.all("mr") {
                    self.open("mtr");
                    for cell in row.all("e") {
                        self.open("mtd");
                        self.arg(Some(cell));
                        self.close("mtd");
                    }
                    self.close("mtr");
                }
                self.close("mtable");
            }
            "eqArr" => self.equation_array(n),
            "acc" => {
                let chr = n.prop("accPr", "chr").unwrap_or("\u{302}");
                self.out.push_str("<mover accent=\"true\">");
                self.arg(n.child("e"));
                self.mo(spacing_accent(chr), " stretchy=\"true\"");
                self.close("mover");
            }
            "bar" => {
                // ECMA-376 §22.1.2.7: the bar is at the bottom unless `pos` says top.
                if n.prop("barPr", "pos") == Some("top") {
                    self.out.push_str("<mover accent=\"true\">");
                    self.arg(n.child("e"));
                    self.mo("\u{203E}", " stretchy=\"true\"");
                    self.close("mover");
                } else {
                    self.out.push_str("<munder accentunder=\"true\">");
                    self.arg(n.child("e"));
                    self.mo("\u{332}", " stretchy=\"true\"");
                    self.close("munder");
                }
            }
            "groupChr" => {
                let top = n.prop("groupChrPr", "pos") == Some("top");
                let chr = n.prop("groupChrPr", "chr").unwrap_or("\u{23DF}");
                let tag = if top { "mover" } else { "munder" };
                self.open(tag);
                self.arg(n.child("e"));
                self.mo(chr, " stretchy=\"true\"");
                self.close(tag);
            }
            "func" => {
                self.open("mrow");
                self.arg(n.child("fName"));
                self.mo("\u{2061}", "");
                self.arg(n.child("e"));
                self.close("mrow");
            }
            "limLow" | "limUpp" => {
                let tag = if n.name == "limLow" {
                    "munder"
                } else {
                    "mover"
                };
                self.open(tag);
                self.arg(n.child("e"));
                self.arg(n.child("lim"));
                self.close(tag);
            }
            // A box only groups.
            "box" => self.arg(n.child("e")),
            // A border box is a frame, whole or in part, or strokes through its content:
            // `menclose` says which (MathML Core browsers show the content; EPUB 3 readers
            // with MathML 3 and the print edition draw it).
            "borderBox" => {
                let notation = border_notation(n);
                if notation.is_empty() {
                    self.arg(n.child("e"));
                } else {
                    self.out
                        .push_str(&format!("<menclose notation=\"{notation}\">"));
                    self.arg(n.child("e"));
                    self.close("menclose");
                }
            }
            "phant" => {
                if n.flag("phantPr", "show") {
                    self.arg(n.child("e"));
                } else {
                    self.open("mphantom");
                    self.arg(n.child("e"));
                    self.close("mphantom");
                }
            }
            // A break inside an equation, and alignment marks, have no MathML 3 presentation
            // that browsers honour; the equation goes on.
            "brk" | "aln" => {}
            "e" | "oMath" | "num" | "den" | "sub" | "sup" | "deg" | "lim" | "fName" => {
                self.arg(Some(n));
            }
            name if name.ends_with("Pr") => {}
            other => {
                self.unknown.insert(format!("m:{other}"));
                let mut text = String::new();
                n.text_content(&mut text);
                if !text.is_empty() {
                    self.element("mtext", "", &text);
                }
            }
        }
    }

    fn fraction(&mut self, n: &Node) {
        match n.prop("fPr", "type") {
            // Linear (`a/b`) and skewed fractions are written on one line.
            Some("lin" | "skw") => {
                self.open("mrow");
                self.arg(n.child("num"));
                self.mo("/", "");
                self.arg(n.child("den"));
                self.close("mrow");
            }
            kind => {
                let attributes = if kind == Some("noBar") {
                    " linethickness=\"0\""
                } else {
                    ""
                };
                self.out.push_str("<mfrac");
                self.out.push_str(attributes);
                self.out.push('>');
                self.arg(n.child("num"));
                self.arg(n.child("den"));
                self.close("mfrac");
            }
        }
    }

    fn scripts(&mut self, tag: &str, n: &Node, args: &[&str]) {
        self.open(tag);
        for arg in args {
            self.arg(n.child(arg));
        }
        self.close(tag);
    }

    /// `m:nary`: ∑, ∏, ∫… with its limits, then its operand.
    fn nary(&mut self, n: &Node) {
        let chr = n.prop("naryPr", "chr").unwrap_or("\u{222B}");
        let integral = chr
            .chars()
            .next()
            .is_some_and(|c| ('\u{222B}'..='\u{2233}').contains(&c));
        // §22.1.2.53: without `limLoc` the document's default applies, which Word sets to
        // sub/superscripts for integrals and under/over for the others.
        let under = match n.prop("naryPr", "limLoc") {
            Some("undOvr") => true,
            Some("subSup") => false,
            _ => !integral,
        };
        let sub = !n.flag("naryPr", "subHide");
        let sup = !n.flag("naryPr", "supHide");
        let tag = match (under, sub, sup) {
            (_, false, false) => None,
            (true, true, true) => Some("munderover"),
            (true, true, false) => Some("munder"),
            (true, false, true) => Some("mover"),
            (false, true, true) => Some("msubsup"),
            (false, true, false) => Some("msub"),
            (false, false, true) => Some("msup"),
        };
        self.open("mrow");
        if let Some(tag) = tag {
            self.open(tag);
        }
        self.mo(chr, " largeop=\"true\"");
        if sub {
            self.arg(n.child("sub"));
        }
        if sup {
            self.arg(n.child("sup"));
        }
        if let Some(tag) = tag {
            self.close(tag);
        }
        self.arg(n.child("e"));
        self.close("mrow");
    }

    /// `m:d`: its arguments between delimiters, separated by `sepChr`.
    fn delimiters(&mut self, n: &Node) {
        let begin = n.prop("dPr", "begChr").unwrap_or("(");
        let end = n.prop("dPr", "endChr").unwrap_or(")");
        let separator = n.prop("dPr", "sepChr").unwrap_or("|");
        self.open("mrow");
        if !begin.is_empty() {
            self.mo(begin, " fence=\"true\"");
        }
        for (i, e) in n.all("e").enumerate() {
            if i > 0 {
                self.mo(separator, " separator=\"true\"");
            }
            self.arg(Some(e));
        }
        if !end.is_empty() {
            self.mo(end, " fence=\"true\"");
        }
        self.close("mrow");
    }

    /// `m:eqArr`: one row per `m:e`, cut into columns at each `&` of its runs (§22.1.2.34).
    fn equation_array(&mut self, n: &Node) {
        self.open("mtable");
        for row in n.all("e") {
            let mut columns = vec![String::new()];
            for child in &row.children {
                let start = std::mem::take(&mut self.out);
                if child.math && child.name == "r" && child.flag("rPr", "aln") {
                    // `m:aln` marks its run as the row's alignment point.
                    columns.push(String::new());
                }
                if child.math && child.name == "r" {
                    let text = run_text(child);
                    let mut pieces = text.split('&').peekable();
                    while let Some(piece) = pieces.next() {
                        self.run_text(child, piece);
                        if pieces.peek().is_some() {
                            let done = std::mem::take(&mut self.out);
                            if let Some(last) = columns.last_mut() {
                                last.push_str(&done);
                            }
                            columns.push(String::new());
                        }
                    }
                } else {
                    self.node(child);
                }
                let done = std::mem::replace(&mut self.out, start);
                if let Some(last) = columns.last_mut() {
                    last.push_str(&done);
                }
            }
            self.open("mtr");
            for (i, column) in columns.iter().enumerate() {
                let class = if columns.len() == 1 {
                    "math-left"
                } else if i % 2 == 0 {
                    "math-right math-pad-right-0"
                } else {
                    "math-left math-pad-left-0"
                };
                self.out.push_str("<mtd class=\"");
                self.out.push_str(class);
                self.out.push_str("\"><mrow>");
                self.out.push_str(column);
                self.out.push_str("</mrow></mtd>");
            }
            self.close("mtr");
        }
        self.close("mtable");
    }

    /// `m:r`: its text cut into numbers, operators and identifiers.
    fn run(&mut self, n: &Node) {
        let text = run_text(n);
        self.run_text(n, &text);
    }

    fn run_text(&mut self, n: &Node, text: &str) {
        if text.is_empty() {
            return;
        }
        if n.flag("rPr", "nor") {
            // MathML trims a token's edge spaces; "if " before an identifier keeps its space.
            let trimmed = text.trim_matches(' ');
            let before = "\u{a0}".repeat(text.len() - text.trim_start_matches(' ').len());
            let after = "\u{a0}".repeat(text.len() - text.trim_end_matches(' ').len());
            self.element("mtext", "", &format!("{before}{trimmed}{after}"));
            return;
        }
        let style = Style::of(n);
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            if c.is_ascii_digit() {
                let mut number = String::from(style.apply(c));
                while let Some(&d) = chars.peek() {
                    if !(d.is_ascii_digit()
                        || d == '.' && chars.clone().nth(1).is_some_and(|e| e.is_ascii_digit()))
                    {
                        break;
                    }
                    number.push(style.apply(d));
                    chars.next();
                }
                self.element("mn", "", &number);
            } else if c.is_whitespace() {
                continue;
            } else if is_operator(c) {
                self.mo(&c.to_string(), "");
            } else if style.upright() && c.is_alphabetic() {
                // An upright word (`sin`, `lim`, a unit) is one identifier.
                let mut word = String::from(c);
                while let Some(&d) = chars.peek() {
                    if !d.is_alphabetic() {
                        break;
                    }
                    word.push(d);
                    chars.next();
                }
                let attributes = if word.chars().count() == 1 {
                    " mathvariant=\"normal\""
                } else {
                    ""
                };
                self.element("mi", attributes, &word);
            } else {
                self.element("mi", "", &style.apply(c).to_string());
            }
        }
    }
}

/// The `menclose` notation of a border box (ECMA-376 §22.1.2.12): its four sides unless some
/// are hidden, and the strokes it asks for.
fn border_notation(n: &Node) -> String {
    let mut notation = Vec::new();
    let sides = [
        ("hideTop", "top"),
        ("hideBot", "bottom"),
        ("hideLeft", "left"),
        ("hideRight", "right"),
    ];
    let shown: Vec<&str> = sides
        .iter()
        .filter(|(hide, _)| !n.flag("borderBoxPr", hide))
        .map(|(_, side)| *side)
        .collect();
    if shown.len() == 4 {
        notation.push("box");
    } else {
        notation.extend(shown);
    }
    for (strike, name) in [
        ("strikeH", "horizontalstrike"),
        ("strikeV", "verticalstrike"),
        ("strikeBLTR", "updiagonalstrike"),
        ("strikeTLBR", "downdiagonalstrike"),
    ] {
        if n.flag("borderBoxPr", strike) {
            notation.push(name);
        }
    }
    notation.join(" ")
}

fn run_text(n: &Node) -> String {
    n.all("t").map(|t| t.text.as_str()).collect()
}

/// Characters that are operators (`mo`): ASCII punctuation and the Unicode blocks of
/// mathematical operators, arrows and delimiters, less the symbols that are identifiers.
fn is_operator(c: char) -> bool {
    if "∂∅∆∇∞".contains(c) {
        return false;
    }
    "+-=<>()[]{}|/\\!,;:?'*~^_%&±×÷¬·′″‴…‖⟨⟩⌈⌉⌊⌋".contains(c)
        || matches!(c as u32,
            0x2190..=0x21FF // arrows
            | 0x2200..=0x22FF // mathematical operators
            | 0x27C0..=0x27FF // miscellaneous mathematical symbols A, supplemental arrows A
            | 0x2900..=0x2AFF // supplemental arrows B, miscellaneous symbols B, operators
        )
}

/// Word stores accents as combining characters (U+0302); MathML wants the spacing ones.
fn spacing_accent(chr: &str) -> &str {
    match chr {
        "\u{300}" => "`",
        "\u{301}" => "\u{B4}",
        "\u{302}" => "^",
        "\u{303}" => "~",
        "\u{304}" | "\u{305}" => "\u{AF}",
        "\u{306}" => "\u{2D8}",
        "\u{307}" => "\u{2D9}",
        "\u{308}" => "\u{A8}",
        "\u{30A}" => "\u{2DA}",
        "\u{30C}" => "\u{2C7}",
        "\u{20D6}" => "\u{2190}",
        "\u{20D7}" => "\u{2192}",
        "\u{20E1}" => "\u{2194}",
        other => other,
    }
}

/// A run's script (`m:scr`) and style (`m:sty`), as Unicode mathematical alphanumerics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Style {
    alphabet: Alphabet,
    bold: bool,
    /// `None`: the default (italic letters, which MathML gives a single-letter `mi`).
    italic: Option<bool>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Alphabet {
    Roman,
    Script,
    Fraktur,
    DoubleStruck,
    SansSerif,
    Monospace,
}

impl Style {
    fn of(n: &Node) -> Style {
        let alphabet = match n.prop("rPr", "scr") {
            Some("script") => Alphabet::Script,
            Some("fraktur") => Alphabet::Fraktur,
            Some("double-struck") => Alphabet::DoubleStruck,
            Some("sans-serif") => Alphabet::SansSerif,
            Some("monospace") => Alphabet::Monospace,
            _ => Alphabet::Roman,
        };
        let (bold, italic) = match n.prop("rPr", "sty") {
            Some("p") => (false, Some(false)),
            Some("b") => (true, Some(false)),
            Some("bi") => (true, Some(true)),
            Some("i") => (false, Some(true)),
            _ => (false, None),
        };
        Style {
            alphabet,
            bold,
            italic,
        }
    }

    /// Plain upright roman text (`m:sty="p"`): letters stay ASCII with `normal`.
    fn upright(&self) -> bool {
        self.alphabet == Alphabet::Roman && !self.bold && self.italic == Some(false)
    }

    fn apply(&self, c: char) -> char {
        let (base, digits) = match (self.alphabet, self.bold, self.italic.unwrap_or(true)) {
            (Alphabet::Roman, false, _) => return c,
            (Alphabet::Roman, true, false) => (0x1D400, Some(0x1D7CE)),
            (Alphabet::Roman, true, true) => (0x1D468, Some(0x1D7CE)),
            (Alphabet::Script, false, _) => (0x1D49C, None),
            (Alphabet::Script, true, _) => (0x1D4D0, None),
            (Alphabet::Fraktur, false, _) => (0x1D504, None),
            (Alphabet::Fraktur, true, _) => (0x1D56C, None),
            (Alphabet::DoubleStruck, _, _) => (0x1D538, Some(0x1D7D8)),
            (Alphabet::SansSerif, false, false) => (0x1D5A0, Some(0x1D7E2)),
            (Alphabet::SansSerif, true, false) => (0x1D5D4, Some(0x1D7EC)),
            (Alphabet::SansSerif, false, true) => (0x1D608, Some(0x1D7E2)),
            (Alphabet::SansSerif, true, true) => (0x1D63C, Some(0x1D7EC)),
            (Alphabet::Monospace, _, _) => (0x1D670, Some(0x1D7F6)),
        };
        if let Some(hole) = hole(self.alphabet, self.bold, c) {
            return hole;
        }
        let offset = match c {
            'A'..='Z' => c as u32 - 'A' as u32,
            'a'..='z' => c as u32 - 'a' as u32 + 26,
            '0'..='9' => {
                return digits
                    .and_then(|d| char::from_u32(d + (c as u32 - '0' as u32)))
                    .unwrap_or(c);
            }
            _ => return c,
        };
        char::from_u32(base + offset).unwrap_or(c)
    }
}

/// Letters Unicode had before the mathematical alphanumerics block, which leaves a hole
/// where they would be.
fn hole(alphabet: Alphabet, bold: bool, c: char) -> Option<char> {
    if bold {
        return None;
    }
    Some(match (alphabet, c) {
        (Alphabet::Script, 'B') => 'ℬ',
        (Alphabet::Script, 'E') => 'ℰ',
        (Alphabet::Script, 'F') => 'ℱ',
        (Alphabet::Script, 'H') => 'ℋ',
        (Alphabet::Script, 'I') => 'ℐ',
        (Alphabet::Script, 'L') => 'ℒ',
        (Alphabet::Script, 'M') => 'ℳ',
        (Alphabet::Script, 'R') => 'ℛ',
        (Alphabet::Script, 'e') => 'ℯ',
        (Alphabet::Script, 'g') => 'ℊ',
        (Alphabet::Script, 'o') => 'ℴ',
        (Alphabet::Fraktur, 'C') => 'ℭ',
        (Alphabet::Fraktur, 'H') => 'ℌ',
        (Alphabet::Fraktur, 'I') => 'ℑ',
        (Alphabet::Fraktur, 'R') => 'ℜ',
        (Alphabet::Fraktur, 'Z') => 'ℨ',
        (Alphabet::DoubleStruck, 'C') => 'ℂ',
        (Alphabet::DoubleStruck, 'H') => 'ℍ',
        (Alphabet::DoubleStruck, 'N') => 'ℕ',
        (Alphabet::DoubleStruck, 'P') => 'ℙ',
        (Alphabet::DoubleStruck, 'Q') => 'ℚ',
        (Alphabet::DoubleStruck, 'R') => 'ℝ',
        (Alphabet::DoubleStruck, 'Z') => 'ℤ',
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: &str = "http://schemas.openxmlformats.org/officeDocument/2006/math";

    /// The MathML of an `m:oMath` (or `m:oMathPara`) fragment, without the `<math>` tag, and
    /// the unknown elements.
    fn convert(fragment: &str) -> (Vec<String>, BTreeSet<String>) {
        let name = if fragment.starts_with("<m:oMathPara") {
            "<m:oMathPara"
        } else {
            "<m:oMath"
        };
        let xml = fragment.replacen(name, &format!("{name} xmlns:m=\"{M}\""), 1);
        let mut x = Xml::new(&xml, "word/document.xml");
        let root = x.root().expect("test input");
        let (maths, unknown) = read(&mut x, &root).expect("test input");
        let bodies = maths
            .into_iter()
            .map(|m| {
                let mathml = m.mathml.expect("converted");
                assert!(
                    crate::math::clean(&mathml).is_some(),
                    "well-formed: {mathml}"
                );
                let open = mathml.find('>').expect("tag") + 1;
                mathml[open..mathml.len() - "</math>".len()].to_owned()
            })
            .collect();
        (bodies, unknown)
    }

    fn one(fragment: &str) -> String {
        let (mut bodies, unknown) = convert(fragment);
        assert!(unknown.is_empty(), "{unknown:?}");
        assert_eq!(bodies.len(), 1);
        bodies.remove(0)
    }

    fn r(text: &str) -> String {
        format!("<m:r><m:t>{text}</m:t></m:r>")
    }

    #[test]
    fn runs_become_numbers_operators_and_identifiers() {
        assert_eq!(
            one(&format!("<m:oMath>{}</m:oMath>", r("2x+13.5=y"))),
            "<mrow><mn>2</mn><mi>x</mi><mo>+</mo><mn>13.5</mn><mo>=</mo><mi>y</mi></mrow>"
        );
        // Word's upright function names are one identifier; `m:nor` is text.
        assert_eq!(
            one(
                "<m:oMath><m:r><m:rPr><m:sty m:val=\"p\"/></m:rPr><m:t>sin</m:t></m:r><m:r><m:rPr><m:nor/></m:rPr><m:t>if x</m:t></m:r></m:oMath>"
            ),
            "<mrow><mi>sin</mi><mtext>if x</mtext></mrow>"
        );
        assert_eq!(
            one("<m:oMath><m:r><m:rPr><m:nor/></m:rPr><m:t>if </m:t></m:r></m:oMath>"),
            "<mrow><mtext>if\u{a0}</mtext></mrow>"
        );
    }

    #[test]
    fn fractions_scripts_and_radicals() {
        let frac = one(&format!(
            "<m:oMath><m:f><m:num>{}</m:num><m:den>{}</m:den></m:f></m:oMath>",
            r("a"),
            r("b")
        ));
        assert_eq!(
            frac,
            "<mrow><mfrac><mrow><mi>a</mi></mrow><mrow><mi>b</mi></mrow></mfrac></mrow>"
        );
        let linear = one(&format!(
            "<m:oMath><m:f><m:fPr><m:type m:val=\"lin\"/></m:fPr><m:num>{}</m:num><m:den>{}</m:den></m:f></m:oMath>",
            r("a"),
            r("b")
        ));
        assert!(linear.contains("<mo>/</mo>"), "{linear}");
        let scripts = one(&format!(
            "<m:oMath><m:sSubSup><m:e>{}</m:e><m:sub>{}</m:sub><m:sup>{}</m:sup></m:sSubSup><m:sPre><m:sub>{}</m:sub><m:sup>{}</m:sup><m:e>{}</m:e></m:sPre></m:oMath>",
            r("x"),
            r("i"),
            r("2"),
            r("1"),
            r("2"),
            r("C")
        ));
        assert!(scripts.contains("<msubsup><mrow><mi>x</mi></mrow><mrow><mi>i</mi></mrow><mrow><mn>2</mn></mrow></msubsup>"), "{scripts}");
        assert!(scripts.contains("<mmultiscripts><mrow><mi>C</mi></mrow><mprescripts></mprescripts><mrow><mn>1</mn></mrow><mrow><mn>2</mn></mrow></mmultiscripts>"), "{scripts}");
        let roots = one(&format!(
            "<m:oMath><m:rad><m:radPr><m:degHide m:val=\"1\"/></m:radPr><m:deg/><m:e>{}</m:e></m:rad><m:rad><m:deg>{}</m:deg><m:e>{}</m:e></m:rad></m:oMath>",
            r("2"),
            r("3"),
            r("x")
        ));
        assert!(
            roots.contains("<msqrt><mrow><mn>2</mn></mrow></msqrt>"),
            "{roots}"
        );
        assert!(
            roots.contains("<mroot><mrow><mi>x</mi></mrow><mrow><mn>3</mn></mrow></mroot>"),
            "{roots}"
        );
    }

    #[test]
    fn n_ary_operators_put_limits_by_words_defaults() {
        let sum = one(&format!(
            "<m:oMath><m:nary><m:naryPr><m:chr m:val=\"∑\"/></m:naryPr><m:sub>{}</m:sub><m:sup>{}</m:sup><m:e>{}</m:e></m:nary></m:oMath>",
            r("i=1"),
            r("n"),
            r("i")
        ));
        assert!(
            sum.contains("<munderover><mo largeop=\"true\">∑</mo>"),
            "{sum}"
        );
        let integral = one(&format!(
            "<m:oMath><m:nary><m:sub>{}</m:sub><m:sup>{}</m:sup><m:e>{}</m:e></m:nary></m:oMath>",
            r("0"),
            r("1"),
            r("f")
        ));
        assert!(
            integral.contains("<msubsup><mo largeop=\"true\">∫</mo>"),
            "{integral}"
        );
    }

    #[test]
    fn delimiters_matrices_and_equation_arrays() {
        let d = one(&format!(
            "<m:oMath><m:d><m:dPr><m:begChr m:val=\"[\"/><m:endChr m:val=\"]\"/></m:dPr><m:e>{}</m:e><m:e>{}</m:e></m:d></m:oMath>",
            r("a"),
            r("b")
        ));
        assert_eq!(
            d,
            "<mrow><mrow><mo fence=\"true\">[</mo><mrow><mi>a</mi></mrow><mo separator=\"true\">|</mo><mrow><mi>b</mi></mrow><mo fence=\"true\">]</mo></mrow></mrow>"
        );
        let m = one(&format!(
            "<m:oMath><m:m><m:mr><m:e>{}</m:e><m:e>{}</m:e></m:mr><m:mr><m:e>{}</m:e><m:e>{}</m:e></m:mr></m:m></m:oMath>",
            r("1"),
            r("0"),
            r("0"),
            r("1")
        ));
        assert_eq!(m.matches("<mtr>").count(), 2);
        assert_eq!(m.matches("<mtd>").count(), 4);
        let arr = one(&format!(
            "<m:oMath><m:eqArr><m:e>{}</m:e><m:e>{}</m:e></m:eqArr></m:oMath>",
            r("x&amp;=1"),
            r("y&amp;=2")
        ));
        assert_eq!(
            arr.matches("<mtd class=\"math-right math-pad-right-0\"><mrow><mi>")
                .count(),
            2,
            "{arr}"
        );
        assert!(
            arr.contains(
                "<mtd class=\"math-left math-pad-left-0\"><mrow><mo>=</mo><mn>1</mn></mrow></mtd>"
            ),
            "{arr}"
        );
        assert!(!arr.contains("&amp;"), "{arr}");
        // Word's other way to mark the point: `m:aln` on the run.
        let aln = one(&format!(
            "<m:oMath><m:eqArr><m:e>{}<m:r><m:rPr><m:aln/></m:rPr><m:t>=1</m:t></m:r></m:e></m:eqArr></m:oMath>",
            r("y+1")
        ));
        assert!(
            aln.contains(
                "<mtd class=\"math-left math-pad-left-0\"><mrow><mo>=</mo><mn>1</mn></mrow></mtd>"
            ),
            "{aln}"
        );
    }

    #[test]
    fn accents_bars_groups_limits_functions_and_boxes() {
        let all = one(&format!(
            concat!(
                "<m:oMath><m:acc><m:accPr><m:chr m:val=\"\u{302}\"/></m:accPr><m:e>{a}</m:e></m:acc>",
                "<m:bar><m:barPr><m:pos m:val=\"top\"/></m:barPr><m:e>{a}</m:e></m:bar>",
                "<m:groupChr><m:e>{a}</m:e></m:groupChr>",
                "<m:limLow><m:e>{lim}</m:e><m:lim>{a}</m:lim></m:limLow>",
                "<m:func><m:fName>{lim}</m:fName><m:e>{a}</m:e></m:func>",
                "<m:borderBox><m:e>{a}</m:e></m:borderBox></m:oMath>"
            ),
            a = r("a"),
            lim = "<m:r><m:rPr><m:sty m:val=\"p\"/></m:rPr><m:t>lim</m:t></m:r>"
        ));
        assert!(
            all.contains(
                "<mover accent=\"true\"><mrow><mi>a</mi></mrow><mo stretchy=\"true\">^</mo></mover>"
            ),
            "{all}"
        );
        assert!(all.contains("<mo stretchy=\"true\">\u{203E}</mo>"), "{all}");
        assert!(
            all.contains(
                "<munder><mrow><mi>a</mi></mrow><mo stretchy=\"true\">\u{23DF}</mo></munder>"
            ),
            "{all}"
        );
        assert!(
            all.contains("<munder><mrow><mi>lim</mi></mrow><mrow><mi>a</mi></mrow></munder>"),
            "{all}"
        );
        assert!(all.contains("<mo>\u{2061}</mo>"), "{all}");
        assert!(
            all.contains("<menclose notation=\"box\"><mrow><mi>a</mi></mrow></menclose>"),
            "{all}"
        );
        let partial = one(&format!(
            "<m:oMath><m:borderBox><m:borderBoxPr><m:hideTop/><m:hideBot m:val=\"1\"/><m:strikeBLTR/></m:borderBoxPr><m:e>{}</m:e></m:borderBox></m:oMath>",
            r("x")
        ));
        assert!(
            partial.contains("<menclose notation=\"left right updiagonalstrike\">"),
            "{partial}"
        );
    }

    /// The cases issue 47 found Word's equations losing: scripts inside scripts, pre-scripts
    /// on a scripted base, a group character above, and an accent over a group.
    #[test]
    fn nested_scripts_pre_scripts_group_characters_and_accents_on_groups() {
        let nested = one(&format!(
            "<m:oMath><m:sSubSup><m:e>{x}</m:e><m:sub><m:sSub><m:e>{i}</m:e><m:sub>{j}</m:sub></m:sSub></m:sub><m:sup><m:sSup><m:e>{k}</m:e><m:sup>{two}</m:sup></m:sSup></m:sup></m:sSubSup></m:oMath>",
            x = r("x"),
            i = r("i"),
            j = r("j"),
            k = r("k"),
            two = r("2")
        ));
        assert!(
            nested.contains("<msubsup><mrow><mi>x</mi></mrow><mrow><msub><mrow><mi>i</mi></mrow><mrow><mi>j</mi></mrow></msub></mrow><mrow><msup><mrow><mi>k</mi></mrow><mrow><mn>2</mn></mrow></msup></mrow></msubsup>"),
            "{nested}"
        );
        let pre = one(&format!(
            "<m:oMath><m:sPre><m:sub>{a}</m:sub><m:sup>{b}</m:sup><m:e><m:sSup><m:e>{x}</m:e><m:sup>{n}</m:sup></m:sSup></m:e></m:sPre></m:oMath>",
            a = r("a"),
            b = r("b"),
            x = r("X"),
            n = r("n")
        ));
        assert!(
            pre.contains("<mmultiscripts><mrow><msup><mrow><mi>X</mi></mrow><mrow><mi>n</mi></mrow></msup></mrow><mprescripts></mprescripts><mrow><mi>a</mi></mrow><mrow><mi>b</mi></mrow></mmultiscripts>"),
            "{pre}"
        );
        let brace = one(&format!(
            "<m:oMath><m:groupChr><m:groupChrPr><m:chr m:val=\"⏞\"/><m:pos m:val=\"top\"/></m:groupChrPr><m:e>{a}{plus}{b}</m:e></m:groupChr></m:oMath>",
            a = r("a"),
            plus = r("+"),
            b = r("b")
        ));
        assert!(
            brace.contains("<mover><mrow><mi>a</mi><mo>+</mo><mi>b</mi></mrow><mo stretchy=\"true\">\u{23DE}</mo></mover>"),
            "{brace}"
        );
        let vector = one(&format!(
            "<m:oMath><m:acc><m:accPr><m:chr m:val=\"⃗\"/></m:accPr><m:e>{ab}</m:e></m:acc></m:oMath>",
            ab = r("AB")
        ));
        assert!(
            vector.contains("<mover accent=\"true\"><mrow><mi>A</mi><mi>B</mi></mrow><mo stretchy=\"true\">\u{2192}</mo></mover>"),
            "{vector}"
        );
    }

    #[test]
    fn scripts_and_styles_become_mathematical_alphanumerics() {
        let ds = one(
            "<m:oMath><m:r><m:rPr><m:scr m:val=\"double-struck\"/><m:sty m:val=\"p\"/></m:rPr><m:t>RZA</m:t></m:r><m:r><m:rPr><m:sty m:val=\"b\"/></m:rPr><m:t>v</m:t></m:r><m:r><m:rPr><m:scr m:val=\"script\"/></m:rPr><m:t>L</m:t></m:r></m:oMath>",
        );
        assert!(ds.contains("<mi>ℝ</mi><mi>ℤ</mi><mi>𝔸</mi>"), "{ds}");
        assert!(ds.contains("<mi>𝐯</mi>"), "{ds}");
        assert!(ds.contains("<mi>ℒ</mi>"), "{ds}");
    }

    #[test]
    fn a_paragraph_of_equations_is_displayed_and_unknown_elements_keep_their_text() {
        let (bodies, unknown) = convert(&format!(
            "<m:oMathPara><m:oMath>{}</m:oMath><m:oMath><m:future><m:e>{}</m:e></m:future></m:oMath></m:oMathPara>",
            r("a"),
            r("kept")
        ));
        assert_eq!(bodies.len(), 2);
        assert_eq!(bodies[1], "<mrow><mtext>kept</mtext></mrow>");
        assert_eq!(unknown.into_iter().collect::<Vec<_>>(), ["m:future"]);
        let xml = format!(
            "<m:oMathPara xmlns:m=\"{M}\"><m:oMath>{}</m:oMath></m:oMathPara>",
            r("x")
        );
        let mut x = Xml::new(&xml, "p");
        let root = x.root().expect("test input");
        let (maths, _) = read(&mut x, &root).expect("test input");
        assert!(maths[0].display);
        assert!(maths[0].mathml.as_deref().is_some_and(|m| {
            m.starts_with("<math xmlns=\"http://www.w3.org/1998/Math/MathML\" display=\"block\">")
        }));
    }
}
