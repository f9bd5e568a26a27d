//! A book's language: BCP 47 tags as a manuscript, an upload or the operator's
//! `DEFAULT_LANGUAGE` give them, normalised once, so that the configuration and the ebook agree
//! on what a valid tag is.

/// The language of a book that names none, unless the operator sets `DEFAULT_LANGUAGE`.
pub const DEFAULT_LANGUAGE: &str = "en";

/// The longest tag a book may have, in characters. RFC 5646 asks that tags of up to 35 be
/// kept whole (section 4.4.1); private-use and extension subtags can run longer, and every
/// page of a book carries its tag (a 63 KB tag on 1,000 chapters was 65 MB of files), so the
/// bound is above any tag a book uses, and no higher.
pub const MAX_TAG_CHARS: usize = 64;

/// A valid BCP 47 tag of at most [`MAX_TAG_CHARS`], or `None`. Accepts POSIX-style
/// `en_US.UTF-8` by converting it.
pub fn normalize(tag: &str) -> Option<String> {
    if tag.trim().chars().count() > MAX_TAG_CHARS {
        return None;
    }
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

/// Which way a language's script runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    LeftToRight,
    RightToLeft,
}

impl Direction {
    /// The tag's direction: its script subtag decides when it has one (`pa-Arab` is right to
    /// left, `ku-Latn` is not), else its language. The one list of right-to-left languages.
    pub fn of(tag: &str) -> Direction {
        let lower = tag.trim().to_ascii_lowercase();
        let mut subtags = lower.split('-');
        let primary = subtags.next().unwrap_or("");
        let rtl = match subtags.find(|s| s.len() == 4 && s.bytes().all(|b| b.is_ascii_alphabetic()))
        {
            Some(script) => matches!(
                script,
                "arab" | "hebr" | "thaa" | "syrc" | "nkoo" | "adlm" | "rohg" | "mand" | "samr"
            ),
            None => matches!(
                primary,
                "ar" | "arc"
                    | "ckb"
                    | "dv"
                    | "fa"
                    | "he"
                    | "iw"
                    | "ks"
                    | "ku"
                    | "ps"
                    | "sd"
                    | "syr"
                    | "ug"
                    | "ur"
                    | "yi"
            ),
        };
        if rtl {
            Direction::RightToLeft
        } else {
            Direction::LeftToRight
        }
    }

    /// The value of HTML's `dir` and of the OPF's `page-progression-direction`.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::LeftToRight => "ltr",
            Direction::RightToLeft => "rtl",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn right_to_left_languages_are_recognised() {
        for tag in [
            "ar", "he", "fa-IR", "ur", "ps", "yi", "dv", "ckb", "pa-Arab", "iw",
        ] {
            assert_eq!(Direction::of(tag), Direction::RightToLeft, "{tag}");
        }
        for tag in [
            "en", "ja", "zh-Hant", "ku-Latn", "az-Latn", "ar-Latn", "uz-Cyrl", "el",
        ] {
            assert_eq!(Direction::of(tag), Direction::LeftToRight, "{tag}");
        }
        assert_eq!(Direction::of("ar").as_str(), "rtl");
    }
}
