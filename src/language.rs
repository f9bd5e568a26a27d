//! A book's language: BCP 47 tags as a manuscript, an upload or the operator's
//! `DEFAULT_LANGUAGE` give them, normalised once, so that the configuration and the ebook agree
//! on what a valid tag is.

/// The language of a book that names none, unless the operator sets `DEFAULT_LANGUAGE`.
pub const DEFAULT_LANGUAGE: &str = "en";

/// A valid BCP 47 tag, or `None`. Accepts POSIX-style `en_US.UTF-8` by converting it.
pub fn normalize(tag: &str) -> Option<String> {
    let tag = tag
        .split(['.', '@'])
        .next()
        .unwrap_or(tag)
        .replace('_', "-");
    if tag.eq_ignore_ascii_case("c") || tag.eq_ignore_ascii_case("posix") {
        return None;
    }
    let parsed = oxilangtag::LanguageTag::parse(tag.as_str()).ok()?;
    // A 5–8 letter primary subtag is reserved in BCP 47; reading systems would not know it.
    let primary = parsed.primary_language();
    if !(2..=3).contains(&primary.len()) {
        return None;
    }
    Some(parsed.as_str().to_owned())
}
