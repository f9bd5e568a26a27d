//! TeX mathematics in Markdown, by pandoc's rules (its manual, "Extension:
//! tex_math_dollars"), on top of pulldown-cmark's `ENABLE_MATH`:
//! - `$…$` inline and `$$…$$` display; the opening `$` has a non-space character right after
//!   it and the closing one a non-space character right before it (pulldown-cmark checks
//!   these), and the closing `$` is not followed by a digit (checked here: pulldown-cmark
//!   alone takes `$x$1` as math), so `$5 and $10` stays text;
//! - `\(…\)` inline and `\[…\]` display (pandoc's `tex_math_single_backslash`, and what
//!   LaTeX writes). pulldown-cmark reads `\(` as an escaped parenthesis, so before parsing
//!   they are found in the source, outside code, and rewritten to delimiters it knows, byte
//!   for byte the same length so that every offset still points into the author's text:
//!   `\[x\]` becomes `$$x$$`, `\(x\)` becomes `${x}$` (the braces come off again here).

use std::borrow::Cow;
use std::ops::Range;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

use crate::document::{Inline, Math};
use crate::math::{TexConverter, TexError};
use crate::report::Warning;

/// The source with `\(…\)` and `\[…\]` outside code rewritten (see the module's comment).
pub fn rewrite_delimiters(text: &str, options: Options) -> Cow<'_, str> {
    if !text.contains("\\(") && !text.contains("\\[") {
        return Cow::Borrowed(text);
    }
    let code = code_ranges(text, options);
    let bytes = text.as_bytes();
    let mut out = bytes.to_vec();
    let mut changed = false;
    // Where the last search for each closer gave up: an opener before it has no closer
    // either (it would search the same text), so a paragraph of openers costs one scan.
    let mut hopeless = [0usize; 2];
    let mut i = 0;
    while i + 1 < bytes.len() {
        if let Some(r) = in_code(&code, i) {
            i = r.end;
            continue;
        }
        if bytes[i] != b'\\' {
            i += 1;
            continue;
        }
        let close: &[u8] = match bytes[i + 1] {
            b'(' => b"\\)",
            b'[' => b"\\]",
            // `\\` is an escaped backslash: what follows it is not a delimiter.
            _ => {
                i += 2;
                continue;
            }
        };
        let inline = bytes[i + 1] == b'(';
        let kind = usize::from(inline);
        if i < hopeless[kind] {
            i += 2;
            continue;
        }
        let end = match closing(bytes, i + 2, close, &code) {
            Ok(end) => end,
            Err(stopped) => {
                hopeless[kind] = stopped;
                i += 2;
                continue;
            }
        };
        let (open, shut): (&[u8], &[u8]) = if inline {
            (b"${", b"}$")
        } else {
            (b"$$", b"$$")
        };
        out[i..i + 2].copy_from_slice(open);
        out[end..end + 2].copy_from_slice(shut);
        changed = true;
        i = end + 2;
    }
    if !changed {
        return Cow::Borrowed(text);
    }
    // Only ASCII bytes were replaced by ASCII bytes.
    Cow::Owned(String::from_utf8(out).unwrap_or_else(|_| text.to_owned()))
}

/// Where the closing delimiter of a `\\(` or `\\[` opened before `from` is: in the same
/// paragraph (no blank line), outside code, not itself escaped. Else where the search stopped.
fn closing(bytes: &[u8], from: usize, close: &[u8], code: &[Range<usize>]) -> Result<usize, usize> {
    let mut j = from;
    while j + 1 < bytes.len() {
        if bytes[j] == b'\n' && blank_line_follows(&bytes[j + 1..]) {
            return Err(j);
        }
        if in_code(code, j).is_some() {
            return Err(j);
        }
        if bytes[j] == b'\\' {
            if bytes[j..].starts_with(close) {
                return if j > from { Ok(j) } else { Err(j) };
            }
            j += 2;
            continue;
        }
        j += 1;
    }
    Err(bytes.len())
}

/// The code range `pos` is in (`code` is sorted and its ranges do not overlap).
fn in_code(code: &[Range<usize>], pos: usize) -> Option<&Range<usize>> {
    let k = code.partition_point(|r| r.end <= pos);
    code.get(k).filter(|r| r.contains(&pos))
}

fn blank_line_follows(rest: &[u8]) -> bool {
    let line = rest.split(|&b| b == b'\n').next().unwrap_or_default();
    line.iter().all(u8::is_ascii_whitespace)
}

/// Byte ranges of code spans and code blocks, as pulldown-cmark reads them.
fn code_ranges(text: &str, options: Options) -> Vec<Range<usize>> {
    let mut ranges = Vec::new();
    let mut block: Option<usize> = None;
    for (event, range) in Parser::new_ext(text, options).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(_) | Tag::HtmlBlock) => block = Some(range.start),
            Event::End(TagEnd::CodeBlock | TagEnd::HtmlBlock) => {
                if let Some(start) = block.take() {
                    ranges.push(start..range.end);
                }
            }
            Event::Code(_) | Event::InlineHtml(_) | Event::Html(_) => ranges.push(range),
            _ => {}
        }
    }
    ranges.sort_by_key(|r| r.start);
    ranges
}

/// The book's TeX converter and where in the source it is, for warnings that name a line.
pub struct Maths {
    converter: TexConverter,
    /// Line of `counted`, the last offset lines were counted up to (offsets only grow).
    line: usize,
    counted: usize,
    pub warnings: Vec<Warning>,
}

impl Maths {
    pub fn new() -> Self {
        Maths {
            converter: TexConverter::new(),
            line: 1,
            counted: 0,
            warnings: Vec::new(),
        }
    }

    /// The inline for a math event at `range` of `source` (the text pulldown-cmark parsed):
    /// text when pandoc's digit rule says it is not math, else the equation, converted or
    /// kept as TeX with a warning.
    pub fn inline(
        &mut self,
        source: &str,
        original: &str,
        range: Range<usize>,
        tex: &str,
        display: bool,
    ) -> Inline {
        let from_backslash = original[range.start..].starts_with('\\');
        if !display
            && !from_backslash
            && source[range.end..].starts_with(|c: char| c.is_ascii_digit())
        {
            return Inline::Text(original[range].to_owned());
        }
        let tex = if from_backslash && !display {
            // `\(x\)` was rewritten `${x}$`: the braces are not the author's.
            tex.strip_prefix('{')
                .and_then(|t| t.strip_suffix('}'))
                .unwrap_or(tex)
        } else {
            tex
        }
        .trim();
        let mathml = match self.converter.convert(tex, display) {
            // Only macro definitions: they hold for the rest of the book and show nothing.
            Ok(None) => return Inline::Text(String::new()),
            Ok(Some(mathml)) => Some(mathml),
            Err(error) => {
                let line = self.line_of(source, range.start);
                self.warnings
                    .push(not_converted(tex, &error).at(format!("line {line}")));
                None
            }
        };
        Inline::Math(Math {
            display,
            tex: Some(tex.to_owned()),
            mathml,
        })
    }

    /// Once the book is read: references to equations labelled later in it are filled in,
    /// and a reference to a label no equation has is reported.
    pub fn resolve(
        &mut self,
        blocks: &mut [crate::document::Block],
        notes: &mut [crate::document::Note],
    ) {
        let mut missing: Vec<String> = Vec::new();
        let converter = &self.converter;
        let mut fix = |inlines: &mut Vec<Inline>| {
            for inline in inlines.iter_mut() {
                if let Inline::Math(Math {
                    mathml: Some(mathml),
                    ..
                }) = inline
                {
                    let (resolved, unknown) = converter.resolve(mathml);
                    *mathml = resolved;
                    missing.extend(unknown);
                }
            }
        };
        crate::manuscript::tidy::visit_inlines(blocks, &mut fix);
        for note in notes.iter_mut() {
            crate::manuscript::tidy::visit_inlines(&mut note.blocks, &mut fix);
        }
        missing.sort();
        missing.dedup();
        for key in missing {
            self.warnings.push(Warning::new(
                "math_reference_missing",
                format!("An equation refers to \\label{{{key}}}, which no equation of the book has; it shows as “??”. Add the label to the equation meant, or correct the reference."),
            ));
        }
    }

    fn line_of(&mut self, source: &str, offset: usize) -> usize {
        if offset >= self.counted {
            self.line += source[self.counted..offset].matches('\n').count();
            self.counted = offset;
        }
        self.line
    }
}

/// The report's word on an equation left as TeX: which one, and why.
pub fn not_converted(tex: &str, error: &TexError) -> Warning {
    let whole = tex.split_whitespace().collect::<Vec<_>>().join(" ");
    let shown: String = whole.chars().take(80).collect();
    let more = if shown.len() < whole.len() { "…" } else { "" };
    Warning::new(
        "math_not_converted",
        format!(
            "The equation “{shown}{more}” could not be converted to MathML ({error}), so it is shown as TeX code. Check its TeX."
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> Options {
        Options::ENABLE_MATH
    }

    #[test]
    fn backslash_delimiters_are_rewritten_to_the_same_length_outside_code() {
        let text = r"A \(x^2\) and \[y\] but `\(code\)` and \\(not\\).";
        let out = rewrite_delimiters(text, options());
        assert_eq!(out, r"A ${x^2}$ and $$y$$ but `\(code\)` and \\(not\\).");
        assert_eq!(out.len(), text.len());
    }

    #[test]
    fn a_paragraph_of_openers_is_scanned_once() {
        let text = "\\(".repeat(200_000);
        let started = std::time::Instant::now();
        assert_eq!(rewrite_delimiters(&text, options()), text);
        // One search per opener would be 200,000 scans of the whole paragraph; one scan is
        // milliseconds (a generous bound for a debug build on a loaded machine).
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }

    #[test]
    fn a_delimiter_is_not_closed_across_a_blank_line_or_left_open() {
        let text = "\\(a\n\nb\\) and \\(c";
        assert_eq!(rewrite_delimiters(text, options()), text);
    }
}
