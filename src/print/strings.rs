//! Typst string literals: the one way the manuscript's text enters the generated source
//! (`markup`, `equations`, the template and the cover all write it so).

use std::fmt::Write as _;

/// A Typst string literal holding `s` verbatim: `\` and `"` escaped, control characters and
/// the line and paragraph separators as `\u{…}` so that the literal stays on one line.
pub(crate) fn literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    push_literal(&mut out, s);
    out
}

pub(crate) fn push_literal(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c if c.is_control() || c == '\u{2028}' || c == '\u{2029}' => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_escape_only_what_strings_need() {
        assert_eq!(literal(r#"a "b" \c"#), r#""a \"b\" \\c""#);
        assert_eq!(
            literal("#read(\"/etc/passwd\")"),
            r##""#read(\"/etc/passwd\")""##
        );
        assert_eq!(literal("x\u{2028}y\u{7}"), r#""x\u{2028}y\u{7}""#);
    }
}
