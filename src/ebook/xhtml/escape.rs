//! Text and attribute escaping for XML that is also HTML5: the five markup characters, and
//! code points XML forbids (control characters) or HTML5 calls parse errors (C1 controls,
//! noncharacters) are removed, since no reader could show them anyway.

/// Whether `c` may appear in a document that is both XML 1.0 and clean HTML5.
fn allowed(c: char) -> bool {
    match c {
        '\t' | '\n' => true,
        '\u{0}'..='\u{1F}' | '\u{7F}'..='\u{9F}' => false,
        '\u{FDD0}'..='\u{FDEF}' => false,
        c => (c as u32) & 0xFFFE != 0xFFFE,
    }
}

/// Appends `s` as element content.
pub fn text(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c if allowed(c) => out.push(c),
            _ => {}
        }
    }
}

/// Appends `s` as a double-quoted attribute value.
pub fn attr(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            // Attribute-value normalisation would turn these into spaces anyway.
            '\t' | '\n' => out.push(' '),
            c if allowed(c) => out.push(c),
            _ => {}
        }
    }
}

/// `s` escaped as element content.
pub fn escaped(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    text(&mut out, s);
    out
}

/// `s` escaped as an attribute value.
pub fn escaped_attr(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    attr(&mut out, s);
    out
}

/// Collapses runs of whitespace and drops characters no file may hold, for titles and
/// labels (a label that is only control characters becomes empty, and callers fall back).
pub fn collapse(s: &str) -> String {
    let kept: String = s.chars().filter(|&c| allowed(c)).collect();
    kept.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_and_forbidden_characters_never_reach_the_file() {
        assert_eq!(
            escaped("<script>a&b</script> ]]> \u{0}\u{8}\u{1B}\u{85}\u{FFFE}ok\u{1F600}"),
            "&lt;script&gt;a&amp;b&lt;/script&gt; ]]&gt; ok\u{1F600}"
        );
        assert_eq!(escaped_attr("say \"hi\"\n"), "say &quot;hi&quot; ");
    }
}
