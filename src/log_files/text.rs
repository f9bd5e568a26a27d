//! What a text log line may hold. Every value a text line carries (an event's message, its
//! fields, its spans' fields) can hold text from outside: a manuscript's title, a file name, a
//! client's header. A control character in it could erase the line on a terminal, print a
//! forged one, retitle the window, or turn the rest of the line around (bidirectional
//! overrides). `escape` is the one rule, applied where values are formatted: the text layers
//! (`logging::text`), the database's lines (`logbook::Line::text`) and `bindery logs`.
//!
//! JSON lines need none of this: JSON escapes what it must, and readers parse it.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether a character must not reach a terminal raw: the C0 and C1 controls (newline,
/// carriage return and escape among them), DEL, the Unicode line and paragraph separators,
/// and the marks and overrides that change the direction of text.
pub fn is_unsafe(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1f}'
        | '\u{7f}'..='\u{9f}'
        | '\u{61c}'
        | '\u{200e}' | '\u{200f}'
        | '\u{2028}' | '\u{2029}'
        | '\u{202a}'..='\u{202e}'
        | '\u{2066}'..='\u{2069}')
}

/// `text` with every unsafe character ([`is_unsafe`]) written as `\uXXXX`. That form is also a
/// JSON escape, so a JSON line escaped for a terminal stays the same JSON. Text without such
/// characters (almost every line) is returned as it is, without a copy.
pub fn escape(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_unsafe(c) {
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_separators_and_direction_marks_are_escaped_and_the_rest_kept() {
        let forged = "\u{1b}[1G\u{1b}[2Kweb[1] 2026-01-01 ERROR forged line";
        assert_eq!(
            escape(forged),
            "\\u001b[1G\\u001b[2Kweb[1] 2026-01-01 ERROR forged line"
        );
        assert_eq!(
            escape("a\nb\r\tc\u{7f}\u{85}\u{9b}"),
            "a\\u000ab\\u000d\\u0009c\\u007f\\u0085\\u009b"
        );
        assert_eq!(
            escape("x\u{2028}y\u{2029}\u{202e}evil\u{2066}\u{200f}\u{61c}"),
            "x\\u2028y\\u2029\\u202eevil\\u2066\\u200f\\u061c"
        );
        let kept = "Café — «Łódź» 東京 עברית العربية 🙂 \"q\" \\ ";
        assert!(matches!(escape(kept), Cow::Borrowed(_)));
        assert_eq!(escape(kept), kept);
    }

    #[test]
    fn an_escaped_json_line_is_the_same_json() {
        let raw = "{\"title\":\"a\u{2028}b\u{202e}c\"}";
        let escaped = escape(raw);
        let before: serde_json::Value = serde_json::from_str(raw).expect("json");
        let after: serde_json::Value = serde_json::from_str(&escaped).expect("still json");
        assert_eq!(before, after);
        assert!(!escaped.chars().any(is_unsafe));
    }
}
