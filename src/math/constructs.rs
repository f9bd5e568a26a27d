//! The LaTeX constructs math-core 0.7 cannot convert, rewritten before it into TeX it can, and
//! where its MathML cannot say them, into a placeholder that [`Equations::finish`] turns into
//! the right MathML afterwards.
//!
//! What it promises (math-core handles the rest of amsmath natively, `\operatorname`,
//! `\cancel`, `\bcancel`, `\xcancel`, `\textrm`… included):
//! - `\mbox`, `\hbox`, `\textnormal`, `\textup`, `\textmd` become `\text`; `\textsl` and
//!   `\emph` become `\textit`, anywhere (`cases`, `aligned`, matrices); inside text only
//!   these and references are rewritten, as math-core reads text commands only there;
//! - `\ensuremath{x}` is `x`; `\substack{a\\b}` a `subarray` (an `mtable` in script style);
//! - `\boxed{x}` is `<menclose notation="box">`, `\sout{x}` `<menclose
//!   notation="horizontalstrike">` (math-core has neither notation: it draws `\bcancel` with a
//!   marker before it, and the post-pass swaps the notation);
//! - `multline*`, `split`, `flalign(*)`, `alignat(*)`, `alignedat` and `subequations` become
//!   the environments math-core has (`multline` unnumbered, `aligned`, `align(*)`); equation
//!   numbers stay math-core's, counted through the book;
//! - `\tag{n}` and `\tag*{n}` show `(n)` and `n`, whatever TeX `n` holds (math-core takes
//!   only plain ASCII there: the tag goes through as a placeholder, and its TeX is written
//!   as text, `$\ast$` as `∗`); in a display equation outside a numbered environment the
//!   expression is wrapped in one (`equation`, which a `\tag` overrides); inline, the tag is
//!   written after a quad, as there is no row to number;
//! - `\label{key}` is remembered with its equation's number (math-core's own, or the
//!   `\tag`); in a display equation without a number it wraps it in `equation`, since the
//!   author means to refer to it; inline without a `\tag` it is dropped;
//! - `\eqref{key}` shows `(n)` and `\ref{key}` `n`, resolved through the book: a reference
//!   to a label already read is filled in by [`Equations::finish`]; one to a label further on
//!   stays a marker, which [`Equations::resolve_refs`] fills in once the whole book has been
//!   converted (or shows as `??`, with the key reported, when no expression defines it).
//!
//! The placeholders are ASCII words fenced with `@@@`, because math-core drops private-use
//! characters from text and allows only ASCII in a `\tag`; an expression that contains `@@@`
//! itself is refused rather than misread. The post-pass only swaps attributes and text for
//! MathML 3 presentation elements (`menclose`, `mtext`), and writes the author's TeX back
//! into the `annotation` in place of the rewritten one.

use std::collections::HashMap;

/// Fences every placeholder; refused in the author's TeX.
const FENCE: &str = "@@@";
const BOX_MARK: &str = "@@@box@@@";
const STRIKE_MARK: &str = "@@@sout@@@";
/// A label's id as math-core writes it: letters and digits, which it does not percent-encode.
const LABEL_ID: &str = "binderylabel";
const REF_MARK: &str = "@@@ref";
const TAG_MARK: &str = "@@@tag";
const STRUCK: &str = r#"<menclose notation="downdiagonalstrike">"#;

/// Deepest nesting of rewritten arguments (`\boxed{\boxed{…}}`); Bindery refuses expressions
/// nested deeper than 100 anyway.
const MAX_DEPTH: usize = 100;

/// Why an expression could not be rewritten, worded for the author.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConstructError {
    #[error("\\{command} is missing its argument")]
    MissingArgument { command: String },
    #[error("an argument of \\{command} has no closing brace")]
    Unclosed { command: String },
    #[error("it contains “@@@”, which Bindery reserves")]
    Reserved,
    #[error("it nests more than {MAX_DEPTH} levels deep")]
    TooDeep,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RefKind {
    /// `\eqref`: `(n)`.
    Eq,
    /// `\ref`: `n`.
    Plain,
}

/// A book's equation labels and references.
#[derive(Debug, Clone, Default)]
pub struct Equations {
    /// Label key → its number as MathML text (escaped), `3` or `A` for a `\tag*{A}`.
    labels: HashMap<String, String>,
    /// The keys behind `binderylabel<n>` ids, by n.
    label_keys: Vec<String>,
    /// The references behind `@@@ref<n>@@@` markers, by n.
    refs: Vec<(RefKind, String)>,
    /// The tags behind `@@@tag<n>@@@` markers, by n: the text shown, and whether it is
    /// starred (shown without parentheses).
    tags: Vec<(String, bool)>,
}

/// What one expression's rewrite found.
#[derive(Default)]
struct Found {
    numbered_env: bool,
    tags: usize,
    labels: usize,
    /// Inline: the tag written (MathML text) and the labels that take it.
    inline_tag: Option<String>,
    inline_labels: Vec<String>,
    /// Inside a text command's argument.
    in_text: bool,
}

const TEXT_COMMANDS: &[&str] = &[
    "text",
    "textrm",
    "textit",
    "textbf",
    "textsf",
    "texttt",
    "textsc",
    "textnormal",
    "textup",
    "textmd",
    "textsl",
    "emph",
    "mbox",
    "hbox",
];

/// Environments in which math-core numbers rows and accepts `\tag` and `\label`.
const NUMBERED: &[&str] = &[
    "align",
    "align*",
    "gather",
    "gather*",
    "multline",
    "equation",
    "equation*",
];

impl Equations {
    /// `tex` (macros already expanded) as TeX math-core 0.7 converts; `display` for a block
    /// equation.
    pub fn rewrite(&mut self, tex: &str, display: bool) -> Result<String, ConstructError> {
        if tex.contains(FENCE) {
            return Err(ConstructError::Reserved);
        }
        let mut found = Found::default();
        let out = self.span(tex, display, &mut found, 0)?;
        if !display {
            if let Some(tag) = &found.inline_tag {
                for key in found.inline_labels {
                    self.labels.insert(key, tag.clone());
                }
            }
            return Ok(out);
        }
        if !found.numbered_env && (found.tags > 0 || found.labels > 0) {
            return Ok(format!(r"\begin{{equation}}{out}\end{{equation}}"));
        }
        Ok(out)
    }

    fn span(
        &mut self,
        tex: &str,
        display: bool,
        found: &mut Found,
        depth: usize,
    ) -> Result<String, ConstructError> {
        if depth > MAX_DEPTH {
            return Err(ConstructError::TooDeep);
        }
        let mut out = String::with_capacity(tex.len() + 16);
        let mut i = 0;
        while let Some(c) = tex[i..].chars().next() {
            match c {
                '%' => {
                    let end = tex[i..].find('\n').map_or(tex.len(), |n| i + n + 1);
                    out.push_str(&tex[i..end]);
                    i = end;
                }
                '\\' => {
                    let name = command_name(tex, i + 1);
                    if name.is_empty() {
                        // A control symbol (`\{`, `\\`): copied whole, so `\{` opens nothing.
                        let len = tex[i + 1..].chars().next().map_or(0, char::len_utf8);
                        out.push_str(&tex[i..i + 1 + len]);
                        i += 1 + len;
                        continue;
                    }
                    i += 1 + name.len();
                    i = self.command(tex, i, name, display, found, depth, &mut out)?;
                }
                _ => {
                    out.push(c);
                    i += c.len_utf8();
                }
            }
        }
        Ok(out)
    }

    /// Writes the command `\name` (read up to `i`) and what it takes; returns where the
    /// reading goes on.
    #[allow(clippy::too_many_arguments)]
    fn command(
        &mut self,
        tex: &str,
        i: usize,
        name: &str,
        display: bool,
        found: &mut Found,
        depth: usize,
        out: &mut String,
    ) -> Result<usize, ConstructError> {
        let arg = |i: usize| {
            argument(tex, i).map_err(|missing| {
                let command = name.to_owned();
                if missing {
                    ConstructError::MissingArgument { command }
                } else {
                    ConstructError::Unclosed { command }
                }
            })
        };
        match name {
            _ if TEXT_COMMANDS.contains(&name) => {
                // In text, math-core knows text commands only: what is rewritten there is
                // the text commands it lacks and references.
                let (content, end) = arg(i)?;
                let was_text = std::mem::replace(&mut found.in_text, true);
                let content = self.span(content, display, found, depth + 1);
                found.in_text = was_text;
                let content = content?;
                let renamed = match name {
                    "mbox" | "hbox" | "textnormal" | "textup" | "textmd" => "text",
                    "textsl" | "emph" => "textit",
                    other => other,
                };
                out.push('\\');
                out.push_str(renamed);
                out.push('{');
                out.push_str(&content);
                out.push('}');
                Ok(end)
            }
            _ if found.in_text && !matches!(name, "eqref" | "ref") => {
                out.push('\\');
                out.push_str(name);
                Ok(i)
            }
            "ensuremath" | "boxed" | "sout" | "substack" => {
                let (content, end) = arg(i)?;
                let inner = self.span(content, display, found, depth + 1)?;
                let (open, close) = match name {
                    "ensuremath" => ("{", "}"),
                    // BOX_MARK and STRIKE_MARK, spelled out to stay literals.
                    "boxed" => (r"{\text{@@@box@@@}\bcancel{", "}}"),
                    "sout" => (r"{\text{@@@sout@@@}\bcancel{", "}}"),
                    _ => (r"{\begin{subarray}{c}", r"\end{subarray}}"),
                };
                out.push_str(open);
                out.push_str(&inner);
                out.push_str(close);
                Ok(end)
            }
            "tag" => {
                let star = tex[i..].starts_with('*');
                let (content, end) = arg(i + usize::from(star))?;
                let shown = tag_text(content);
                found.tags += 1;
                // math-core reads only some ASCII in a `\tag` and shows it in parentheses;
                // the post-pass writes the tag itself in place of this placeholder.
                let placeholder = format!("{TAG_MARK}{}{FENCE}", self.tags.len());
                if display {
                    out.push_str(&format!(r"\tag{{{placeholder}}}"));
                } else {
                    out.push_str(&format!(r"\quad\text{{({placeholder})}}"));
                    found.inline_tag = Some(shown.clone());
                }
                self.tags.push((shown, star));
                Ok(end)
            }
            "label" => {
                let (content, end) = arg(i)?;
                let key = content.trim().to_owned();
                found.labels += 1;
                if display {
                    out.push_str(&format!(r"\label{{{LABEL_ID}{}}}", self.label_keys.len()));
                    self.label_keys.push(key);
                } else {
                    found.inline_labels.push(key);
                }
                Ok(end)
            }
            "eqref" | "ref" => {
                let (content, end) = arg(i)?;
                let kind = if name == "eqref" {
                    RefKind::Eq
                } else {
                    RefKind::Plain
                };
                let marker = format!("{REF_MARK}{}{FENCE}", self.refs.len());
                if found.in_text {
                    out.push_str(&marker);
                } else {
                    out.push_str(&format!(r"\text{{{marker}}}"));
                }
                self.refs.push((kind, content.trim().to_owned()));
                Ok(end)
            }
            "begin" | "end" => {
                let (env, mut end) = arg(i)?;
                let env = env.trim();
                let begin = name == "begin";
                let renamed = match env {
                    "split" => "aligned",
                    "flalign" | "alignat" | "xalignat" => "align",
                    "flalign*" | "alignat*" | "xalignat*" | "xxalignat" => "align*",
                    "alignedat" => "aligned",
                    "multline*" => "multline",
                    "subequations" => "",
                    other => other,
                };
                if begin
                    && matches!(
                        env,
                        "alignat"
                            | "alignat*"
                            | "xalignat"
                            | "xalignat*"
                            | "xxalignat"
                            | "alignedat"
                    )
                {
                    // The number of column pairs, which `align` finds for itself.
                    if let Ok((_, after)) = argument(tex, end) {
                        end = after;
                    }
                }
                if begin && NUMBERED.contains(&renamed) {
                    found.numbered_env = true;
                }
                if !renamed.is_empty() {
                    out.push('\\');
                    out.push_str(name);
                    out.push('{');
                    out.push_str(renamed);
                    out.push('}');
                    if begin && env == "multline*" {
                        // Suppresses the number multline gives its last row.
                        out.push_str(r"\nonumber ");
                    }
                }
                Ok(end)
            }
            _ => {
                out.push('\\');
                out.push_str(name);
                Ok(i)
            }
        }
    }

    /// The MathML math-core wrote for [`Equations::rewrite`]'s TeX, with the placeholders
    /// made MathML, the labels it numbered recorded, the references to labels read so far
    /// filled in, and `original` (the author's TeX) in the annotation.
    pub fn finish(&mut self, mathml: &str, original: &str) -> String {
        let mut out = swap_notation(mathml, BOX_MARK, "box");
        out = swap_notation(&out, STRIKE_MARK, "horizontalstrike");
        out = self.take_labels(&out);
        out = self.fill_tags(&out);
        out = self.fill_refs(&out, false).0;
        replace_annotation(&out, original)
    }

    /// The tags' placeholders, `(@@@tag<n>@@@)`, as the tags' text.
    fn fill_tags(&self, mathml: &str) -> String {
        let open = format!("({TAG_MARK}");
        let mut out = String::with_capacity(mathml.len());
        let mut rest = mathml;
        while let Some(at) = rest.find(&open) {
            out.push_str(&rest[..at]);
            let after = &rest[at + open.len()..];
            let digits = after.bytes().take_while(u8::is_ascii_digit).count();
            let closing = format!("{FENCE})");
            let tag = after[..digits]
                .parse::<usize>()
                .ok()
                .and_then(|n| self.tags.get(n))
                .filter(|_| after[digits..].starts_with(&closing));
            match tag {
                Some((text, true)) => out.push_str(text),
                Some((text, false)) => {
                    out.push('(');
                    out.push_str(text);
                    out.push(')');
                }
                None => {
                    out.push_str(&open);
                    rest = after;
                    continue;
                }
            }
            rest = &after[digits + closing.len()..];
        }
        out.push_str(rest);
        out
    }

    /// The text a row's number shows, `1` or a tag's placeholder, as the label takes it.
    fn number_text(&self, shown: &str) -> String {
        let tag = shown
            .strip_prefix(TAG_MARK)
            .and_then(|t| t.strip_suffix(FENCE))
            .and_then(|n| n.parse::<usize>().ok())
            .and_then(|n| self.tags.get(n));
        match tag {
            Some((text, _)) => text.clone(),
            None => shown.to_owned(),
        }
    }

    /// Records the number of each labelled row and drops math-core's id (made from an
    /// internal name, of no use to a reader).
    fn take_labels(&mut self, mathml: &str) -> String {
        let attribute = format!(r#" id="{LABEL_ID}"#);
        let mut out = String::with_capacity(mathml.len());
        let mut rest = mathml;
        while let Some(at) = rest.find(&attribute) {
            out.push_str(&rest[..at]);
            let after = &rest[at + attribute.len()..];
            let digits = after.bytes().take_while(u8::is_ascii_digit).count();
            let index: Option<usize> = after[..digits].parse().ok();
            rest = after.get(digits + 1..).unwrap_or_default();
            let tag = rest.find("<mtext>(").and_then(|open| {
                let text = &rest[open + "<mtext>(".len()..];
                let close = text.find(")</mtext>")?;
                Some(self.number_text(&text[..close]))
            });
            if let (Some(key), Some(tag)) = (index.and_then(|n| self.label_keys.get(n)), tag) {
                self.labels.insert(key.clone(), tag);
            }
        }
        out.push_str(rest);
        out
    }

    /// Fills in the reference markers in `text` whose labels are known; with `last`, the
    /// others become `??`. Returns the text and, with `last`, the keys no label defined.
    fn fill_refs(&self, text: &str, last: bool) -> (String, Vec<String>) {
        let mut missing = Vec::new();
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(at) = rest.find(REF_MARK) {
            out.push_str(&rest[..at]);
            let after = &rest[at + REF_MARK.len()..];
            let digits = after.bytes().take_while(u8::is_ascii_digit).count();
            let reference = after[..digits]
                .parse::<usize>()
                .ok()
                .and_then(|n| self.refs.get(n))
                .filter(|_| after[digits..].starts_with(FENCE));
            let Some((kind, key)) = reference else {
                // Not a marker of this book: left as it is.
                out.push_str(REF_MARK);
                rest = after;
                continue;
            };
            let marker_len = REF_MARK.len() + digits + FENCE.len();
            let number = match self.labels.get(key) {
                Some(number) => number.clone(),
                None if last => {
                    missing.push(key.clone());
                    "??".to_owned()
                }
                None => {
                    out.push_str(&rest[at..at + marker_len]);
                    rest = &rest[at + marker_len..];
                    continue;
                }
            };
            match kind {
                RefKind::Eq => {
                    out.push('(');
                    out.push_str(&number);
                    out.push(')');
                }
                RefKind::Plain => out.push_str(&number),
            }
            rest = &rest[at + marker_len..];
        }
        out.push_str(rest);
        (out, missing)
    }

    /// Fills in the references [`Equations::finish`] could not (to labels later in the book):
    /// call it on each converted equation once the whole book is read. A reference to a label
    /// no expression defined shows `??`; their keys come back for a warning.
    pub fn resolve_refs(&self, mathml: &str) -> (String, Vec<String>) {
        if !mathml.contains(REF_MARK) {
            return (mathml.to_owned(), Vec::new());
        }
        self.fill_refs(mathml, true)
    }

    /// Whether `mathml` still holds a reference for [`Equations::resolve_refs`].
    #[cfg(test)]
    pub fn has_unresolved(mathml: &str) -> bool {
        mathml.contains(REF_MARK)
    }

    /// The number a label was given, as MathML text.
    #[cfg(test)]
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels.get(key).map(String::as_str)
    }
}

/// The `\bcancel` after each `mark` (see [`Equations::rewrite`]) drawn with `notation`
/// instead: the marker goes, and so does the empty row math-core adds to draw the diagonal
/// with CSS.
fn swap_notation(mathml: &str, mark: &str, notation: &str) -> String {
    const HELPER: &str = r#"<mrow class="menclose-downdiagonalstrike"></mrow>"#;
    let opening = format!("<mtext>{mark}</mtext>{STRUCK}");
    let mut out = String::with_capacity(mathml.len());
    let mut rest = mathml;
    while let Some(at) = rest.find(&opening) {
        out.push_str(&rest[..at]);
        out.push_str(&format!(r#"<menclose notation="{notation}">"#));
        rest = &rest[at + opening.len()..];
        // The `</menclose>` that closes this one, past any nested in it.
        let mut depth = 0usize;
        let mut k = 0;
        let close = loop {
            let Some(next) = rest[k..].find("menclose") else {
                break None;
            };
            let tag = k + next;
            k = tag + "menclose".len();
            if rest[..tag].ends_with("</") {
                if depth == 0 {
                    break Some(tag - 2);
                }
                depth -= 1;
            } else if rest[..tag].ends_with('<') {
                depth += 1;
            }
        };
        if let Some(close) = close
            && rest[..close].ends_with(HELPER)
        {
            out.push_str(&rest[..close - HELPER.len()]);
            rest = &rest[close..];
        }
    }
    out.push_str(rest);
    out
}

/// A `\tag`'s TeX as text for an `mtext`, escaped: the math in tags is a symbol or two
/// (`\tag{$\ast$}`, `\tag{1a'}`), which become characters; other commands lose their backslash.
fn tag_text(tex: &str) -> String {
    const SYMBOLS: &[(&str, &str)] = &[
        ("ast", "∗"),
        ("star", "⋆"),
        ("dagger", "†"),
        ("ddagger", "‡"),
        ("prime", "′"),
        ("S", "§"),
        ("P", "¶"),
        ("natural", "♮"),
        ("sharp", "♯"),
        ("flat", "♭"),
        ("bullet", "•"),
        ("circ", "∘"),
    ];
    let mut text = String::new();
    let mut i = 0;
    while let Some(c) = tex[i..].chars().next() {
        i += c.len_utf8();
        match c {
            '$' | '{' | '}' => {}
            '\\' => {
                let name = command_name(tex, i);
                if name.is_empty() {
                    // `\{`, `\,`: the character, a space for the spacing ones.
                    if let Some(symbol) = tex[i..].chars().next() {
                        i += symbol.len_utf8();
                        text.push(if matches!(symbol, ',' | ';' | ':' | '!' | ' ') {
                            ' '
                        } else {
                            symbol
                        });
                    }
                    continue;
                }
                i += name.len();
                match SYMBOLS.iter().find(|(n, _)| *n == name) {
                    Some((_, symbol)) => text.push_str(symbol),
                    None => text.push_str(name),
                }
            }
            c => text.push(c),
        }
    }
    escape(text.trim())
}

/// `mathml` with the TeX annotation's text replaced by `original`.
fn replace_annotation(mathml: &str, original: &str) -> String {
    const OPEN: &str = r#"<annotation encoding="application/x-tex">"#;
    let Some(start) = mathml.rfind(OPEN).map(|s| s + OPEN.len()) else {
        return mathml.to_owned();
    };
    let Some(end) = mathml[start..].find("</annotation>").map(|e| start + e) else {
        return mathml.to_owned();
    };
    format!("{}{}{}", &mathml[..start], escape(original), &mathml[end..])
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    super::escape_into(&mut out, text);
    out
}

/// The letters of a control word starting at `at` (empty for a control symbol).
fn command_name(tex: &str, at: usize) -> &str {
    let rest = tex.get(at..).unwrap_or_default();
    let len = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
    &rest[..len]
}

/// A command's argument from `at`, as TeX reads it: a braced group (its content) or one token,
/// after white space. `Err(true)` when there is none, `Err(false)` when a group is not closed.
fn argument(tex: &str, at: usize) -> Result<(&str, usize), bool> {
    let rest = tex.get(at..).ok_or(true)?;
    let start = at + (rest.len() - rest.trim_start().len());
    let bytes = tex.as_bytes();
    match bytes.get(start) {
        None | Some(b'}') => Err(true),
        Some(b'{') => {
            let mut depth = 0usize;
            let mut j = start + 1;
            while let Some(&b) = bytes.get(j) {
                match b {
                    // `\{` and `\}` are symbols; the byte after a backslash is skipped (a
                    // multibyte character's continuation bytes are never braces).
                    b'\\' => j += 1,
                    b'%' => {
                        j = tex[j..].find('\n').map_or(tex.len(), |n| j + n);
                    }
                    b'{' => depth += 1,
                    b'}' if depth == 0 => return Ok((&tex[start + 1..j], j + 1)),
                    b'}' => depth -= 1,
                    _ => {}
                }
                j += 1;
            }
            Err(false)
        }
        Some(b'\\') => {
            let name = command_name(tex, start + 1);
            let len = if name.is_empty() {
                tex[start + 1..].chars().next().map_or(0, char::len_utf8)
            } else {
                name.len()
            };
            Ok((&tex[start..start + 1 + len], start + 1 + len))
        }
        Some(_) => {
            let len = tex[start..].chars().next().map_or(1, char::len_utf8);
            Ok((&tex[start..start + len], start + len))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use math_core::{LatexToMathML, MathCoreConfig, MathDisplay, PrettyPrint};

    use crate::math::ELEMENTS;

    /// One book: math-core as Bindery configures it, and its equations.
    struct Book {
        inner: LatexToMathML,
        equations: Equations,
    }

    impl Book {
        fn new() -> Self {
            let config = MathCoreConfig {
                macros: vec![("ldots".into(), "…".into()), ("dots".into(), "…".into())],
                pretty_print: PrettyPrint::Never,
                xml_namespace: true,
                annotation: true,
                ..MathCoreConfig::default()
            };
            Book {
                inner: LatexToMathML::new(config).expect("fixed macros"),
                equations: Equations::default(),
            }
        }

        fn convert(&mut self, tex: &str, display: bool) -> String {
            let rewritten = self.equations.rewrite(tex, display).expect("rewrites");
            let mode = if display {
                MathDisplay::Block
            } else {
                MathDisplay::Inline
            };
            let mathml = match self.inner.convert_with_global_state(&rewritten, mode) {
                Ok(converted) => converted.mathml,
                Err(e) => {
                    let mut message = String::new();
                    e.to_message(&mut message, &rewritten);
                    panic!("{tex} → {rewritten}: {message}");
                }
            };
            let out = self.equations.finish(&mathml, tex);
            for element in out.split('<').skip(1).filter_map(|t| {
                let t = t.trim_start_matches('/');
                t.split([' ', '>', '/']).next()
            }) {
                // HTML in `mtext` is math-core's styling of `\textbf` and kin, which
                // Bindery's `clean` unwraps to its text.
                let html = ["span", "b", "i"].contains(&element);
                assert!(ELEMENTS.contains(&element) || html, "<{element}> in {out}");
            }
            // Only references to labels further on may stay markers.
            assert!(
                !self.equations.resolve_refs(&out).0.contains(FENCE),
                "a placeholder is left in {out}"
            );
            assert!(
                out.contains(&format!(
                    r#"<annotation encoding="application/x-tex">{}</annotation>"#,
                    escape(tex)
                )),
                "{out}"
            );
            out
        }
    }

    fn one(tex: &str, display: bool) -> String {
        Book::new().convert(tex, display)
    }

    fn has(mathml: &str, parts: &[&str]) {
        for part in parts {
            assert!(mathml.contains(part), "{part} not in {mathml}");
        }
    }

    #[test]
    fn operatorname_is_math_cores_own() {
        has(
            &one(r"\operatorname{Tr} A", false),
            &[">Tr</mo>", "<mi>A</mi>"],
        );
        has(
            &one(r"\operatorname*{argmax}_x f", true),
            &["<munder>", ">argmax</mo>", "<mi>x</mi>"],
        );
    }

    #[test]
    fn text_commands_work_anywhere() {
        let cases = one(
            r"f(x)=\begin{cases} 1 & \text{if } x>0 \\ 0 & \mbox{otherwise} \end{cases}",
            true,
        );
        has(&cases, &["<mtext>if", "<mtext>otherwise</mtext>"]);
        let aligned = one(
            r"\begin{aligned} a &= b \hbox{ and} \\ c &= \textrm{d} \textit{e} \textbf{f} \end{aligned}",
            true,
        );
        has(&aligned, &["and</mtext>", ">d<", ">e<", ">f<"]);
        has(
            &one(
                r"\begin{pmatrix} \textnormal{a} & \emph{b} \end{pmatrix}",
                true,
            ),
            &["<mtext>a</mtext>", ">b<"],
        );
        // Inside text, text commands and references are rewritten.
        let mut book = Book::new();
        book.convert(r"x \tag{2} \label{two}", true);
        has(
            &book.convert(
                r"\text{as in \eqref{two}, \mbox{b} \textit{\hbox{c}}}",
                false,
            ),
            &["(2),", ">b<", ">c<"],
        );
    }

    #[test]
    fn boxed_is_a_box() {
        let boxed = one(r"\boxed{x+1} = y", false);
        has(
            &boxed,
            &[
                r#"<menclose notation="box">"#,
                "<mi>x</mi>",
                "<mn>1</mn>",
                "<mi>y</mi>",
            ],
        );
        assert!(!boxed.contains("diagonal"), "{boxed}");
        // One token as the argument, nested braces, escaped braces, a comment.
        has(
            &one(r"e^\boxed{\pi}", false),
            &[r#"<menclose notation="box"><mi>π</mi>"#],
        );
        has(
            &one("\\boxed{\\{a\\} + {b} % }\n}", true),
            &[r#"<menclose notation="box">"#, "<mi>a</mi>", "<mi>b</mi>"],
        );
    }

    #[test]
    fn strikes() {
        has(
            &one(r"\cancel{x}", false),
            &[r#"<menclose notation="updiagonalstrike"><mi>x"#],
        );
        has(
            &one(r"\bcancel{x}", false),
            &[r#"<menclose notation="downdiagonalstrike"><mi>x"#],
        );
        has(
            &one(r"\xcancel{x}", false),
            &[r#"<menclose notation="updiagonalstrike downdiagonalstrike"><mi>x"#],
        );
        has(
            &one(r"\sout{x}", false),
            &[r#"<menclose notation="horizontalstrike"><mi>x"#],
        );
    }

    #[test]
    fn substack_is_a_small_table() {
        has(
            &one(r"\sum_{\substack{0<i<m\\0<j<n}} P(i,j)", true),
            &[
                "<munder>",
                r#"<mtable displaystyle="false" scriptlevel="1">"#,
                "<mi>m</mi>",
                "<mi>n</mi>",
            ],
        );
    }

    #[test]
    fn ensuremath_is_its_argument() {
        has(
            &one(r"\ensuremath{x^2}", false),
            &["<msup><mi>x</mi><mn>2</mn></msup>"],
        );
    }

    #[test]
    fn tags_show_their_text() {
        let mut book = Book::new();
        has(
            &book.convert(r"x = 1 \tag{3.1}", true),
            &["<mtext>(3.1)</mtext>", "<mi>x</mi>"],
        );
        has(
            &book.convert(r"x = 2 \tag*{A}", true),
            &["<mtext>A</mtext>"],
        );
        has(
            &book.convert(r"x = 3 \tag{4}", false),
            &["<mtext>(4)</mtext>"],
        );
        has(
            &book.convert(r"x = 3 \tag*{B}", false),
            &["<mtext>B</mtext>"],
        );
        // Tags take no number from the count.
        has(
            &book.convert(r"\begin{equation} y \end{equation}", true),
            &["<mtext>(1)</mtext>"],
        );
    }

    #[test]
    fn labels_and_references_through_a_book() {
        let mut book = Book::new();
        let early = book.convert(r"\text{see } \eqref{sum} \text{ and } \ref{star}", false);
        assert!(Equations::has_unresolved(&early), "{early}");
        let sum = book.convert(
            r"\begin{align} a &= b \label{sum} \\ c &= d \end{align}",
            true,
        );
        has(&sum, &["<mtext>(1)</mtext>", "<mtext>(2)</mtext>"]);
        assert!(!sum.contains(" id="), "{sum}");
        // A label in a display equation with no number gives it one.
        has(
            &book.convert(r"E = mc^2 \label{energy}", true),
            &["<mtext>(3)</mtext>"],
        );
        book.convert(r"x \tag*{$\star$} \label{star}", true);
        book.convert(r"y \tag{7} \label{seven}", false);
        let later = book.convert(
            r"\eqref{sum}, \ref{energy}, \eqref{seven}, \ref{star}",
            false,
        );
        has(
            &later,
            &[
                "<mtext>(1)</mtext>",
                "<mtext>3</mtext>",
                "<mtext>(7)</mtext>",
            ],
        );
        assert_eq!(book.equations.label("sum"), Some("1"));
        let (resolved, missing) = book.equations.resolve_refs(&early);
        has(&resolved, &["<mtext>(1)</mtext>"]);
        assert!(!Equations::has_unresolved(&resolved), "{resolved}");
        has(&resolved, &["<mtext>⋆</mtext>"]);
        assert!(missing.is_empty(), "{missing:?}");
    }

    #[test]
    fn environments_math_core_lacks_become_ones_it_has() {
        let mut book = Book::new();
        let cases: &[(&str, &[&str])] = &[
            (
                r"\begin{align} a &= b \\ c &= d \end{align}",
                &["(1)", "(2)"],
            ),
            (
                r"\begin{align*} a &= b \\ c &= d \end{align*}",
                &["<mi>d</mi>"],
            ),
            (
                r"\begin{gather} a = b \\ c = d \end{gather}",
                &["(3)", "(4)"],
            ),
            (
                r"\begin{gather*} a = b \\ c = d \end{gather*}",
                &["<mi>d</mi>"],
            ),
            (
                r"\begin{multline} a + b \\ + c = d \end{multline}",
                &["(5)"],
            ),
            (
                r"\begin{multline*} a + b \\ + c = e \end{multline*}",
                &["<mi>e</mi>"],
            ),
            (r"\begin{equation} a = b \end{equation}", &["(6)"]),
            (r"\begin{equation*} a = f \end{equation*}", &["<mi>f</mi>"]),
            (
                r"\begin{equation} \begin{split} a &= b \\ &= g \end{split} \end{equation}",
                &["(7)", "<mi>g</mi>"],
            ),
            (
                r"\begin{flalign} a &= b & c &= h \end{flalign}",
                &["(8)", "<mi>h</mi>"],
            ),
            (r"\begin{flalign*} a &= k \end{flalign*}", &["<mi>k</mi>"]),
            (
                r"\begin{alignat}{2} a &= b &\quad c &= l \end{alignat}",
                &["(9)", "<mi>l</mi>"],
            ),
            (
                r"\begin{alignat*}{2} a &= m \end{alignat*}",
                &["<mi>m</mi>"],
            ),
            (
                r"\begin{subequations}\begin{align} n &= 1 \end{align}\end{subequations}",
                &["(10)", "<mi>n</mi>"],
            ),
            (
                r"\left(\begin{alignedat}{2} a &= p \end{alignedat}\right)",
                &["<mi>p</mi>"],
            ),
        ];
        for (tex, parts) in cases {
            let out = book.convert(tex, true);
            has(&out, parts);
        }
        // The starred ones are not numbered.
        let star = book.convert(r"\begin{multline*} q \\ r \end{multline*}", true);
        assert!(!star.contains("(11)"), "{star}");
        has(
            &book.convert(r"\begin{equation} s \end{equation}", true),
            &["(11)"],
        );
    }

    #[test]
    fn mistakes_are_named() {
        let mut equations = Equations::default();
        assert_eq!(
            equations.rewrite(r"\boxed", false),
            Err(ConstructError::MissingArgument {
                command: "boxed".into()
            })
        );
        assert_eq!(
            equations.rewrite(r"\substack{a\\b", false),
            Err(ConstructError::Unclosed {
                command: "substack".into()
            })
        );
        assert_eq!(
            equations.rewrite(r"\text{@@@ref0@@@}", false),
            Err(ConstructError::Reserved)
        );
        let deep = r"\boxed{".repeat(200) + "x" + &"}".repeat(200);
        assert_eq!(
            equations.rewrite(&deep, false),
            Err(ConstructError::TooDeep)
        );
        // Left alone, what it does not know.
        assert_eq!(
            equations.rewrite(r"\frac{a}{b} \% 100", false).as_deref(),
            Ok(r"\frac{a}{b} \% 100")
        );
    }
}
