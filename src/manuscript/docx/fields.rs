//! What a field and a symbol show: the link a `HYPERLINK` or cross-reference field displays
//! as, and the character of a `w:sym` (a Symbol-font code mapped to Unicode).

use crate::document::LinkTarget;

/// The link a field displays as: `HYPERLINK "url"`, `HYPERLINK \l "bookmark"`, or a
/// cross-reference with `\h`.
pub(super) fn field_link(instruction: &str) -> Option<LinkTarget> {
    let tokens = field_tokens(instruction);
    let mut tokens = tokens.iter().map(String::as_str);
    match tokens.next()?.to_ascii_uppercase().as_str() {
        "HYPERLINK" => {
            let mut url = None;
            let mut anchor = None;
            let mut rest = tokens.peekable();
            while let Some(t) = rest.next() {
                match t {
                    "\\l" => anchor = rest.next().map(str::to_owned),
                    s if s.starts_with('\\') => {
                        // Switches with an argument (`\o "tip"`, `\t frame`).
                        if matches!(s, "\\o" | "\\t" | "\\m") {
                            rest.next();
                        }
                    }
                    s if url.is_none() => url = Some(s.to_owned()),
                    _ => {}
                }
            }
            match (url, anchor) {
                (Some(u), Some(a)) => Some(LinkTarget::External(format!("{u}#{a}"))),
                (Some(u), None) => Some(LinkTarget::External(u)),
                (None, Some(a)) => Some(LinkTarget::Internal(a)),
                (None, None) => None,
            }
        }
        "REF" | "NOTEREF" | "PAGEREF" => {
            let bookmark = tokens.next()?.to_owned();
            tokens
                .any(|t| t == "\\h")
                .then_some(LinkTarget::Internal(bookmark))
        }
        _ => None,
    }
}

/// Splits a field instruction into words, honouring double quotes.
fn field_tokens(instruction: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    let mut any = false;
    for c in instruction.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                any = true;
            }
            c if c.is_whitespace() && !quoted => {
                if any || !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
                any = false;
            }
            c => current.push(c),
        }
    }
    if any || !current.is_empty() {
        out.push(current);
    }
    out
}

/// The character a `w:sym` shows. Symbol-font codes map to Unicode; other fonts' private
/// codes are kept as found.
pub(super) fn symbol(font: Option<&str>, code: Option<&str>) -> Option<char> {
    let code = u32::from_str_radix(code?, 16).ok()?;
    let low = if (0xF000..=0xF0FF).contains(&code) {
        code - 0xF000
    } else {
        code
    };
    if font.is_some_and(|f| f.eq_ignore_ascii_case("symbol")) && low < 0x100 {
        const GREEK_UPPER: &str = "ΑΒΧΔΕΦΓΗΙϑΚΛΜΝΟΠΘΡΣΤΥςΩΞΨΖ";
        const GREEK_LOWER: &str = "αβχδεφγηιϕκλμνοπθρστυϖωξψζ";
        let mapped = match low {
            0x41..=0x5A => GREEK_UPPER.chars().nth((low - 0x41) as usize),
            0x61..=0x7A => GREEK_LOWER.chars().nth((low - 0x61) as usize),
            0xA3 => Some('≤'),
            0xA5 => Some('∞'),
            0xAC => Some('←'),
            0xAE => Some('→'),
            0xB0 => Some('°'),
            0xB1 => Some('±'),
            0xB3 => Some('≥'),
            0xB4 => Some('×'),
            0xB7 => Some('•'),
            0xB8 => Some('÷'),
            0xB9 => Some('≠'),
            0xD2 | 0xE2 => Some('®'),
            0xD3 | 0xE3 => Some('©'),
            0xD4 | 0xE4 => Some('™'),
            0x20..=0x7E => char::from_u32(low),
            _ => None,
        };
        if mapped.is_some() {
            return mapped;
        }
    }
    char::from_u32(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hyperlink_fields_become_links() {
        assert_eq!(
            field_link(r#" HYPERLINK "https://example.com/a b" \o "tip" "#),
            Some(LinkTarget::External("https://example.com/a b".into()))
        );
        assert_eq!(
            field_link(r#"HYPERLINK \l "_Toc123""#),
            Some(LinkTarget::Internal("_Toc123".into()))
        );
        assert_eq!(
            field_link(r#" REF _Ref1 \h "#),
            Some(LinkTarget::Internal("_Ref1".into()))
        );
        assert_eq!(field_link(" PAGE "), None);
    }

    #[test]
    fn symbol_font_characters_map_to_unicode() {
        assert_eq!(symbol(Some("Symbol"), Some("F061")), Some('α'));
        assert_eq!(symbol(Some("Symbol"), Some("F0B7")), Some('•'));
        assert_eq!(symbol(Some("Arial"), Some("2014")), Some('—'));
    }
}
