//! The values a style file holds, each checked as it is read: a value out of range fails the
//! reading of the file, and the error carries the value's line.

use serde::{Deserialize, Serialize};

/// A length in ems of the body text, from 0 to 4.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize, Deserialize)]
#[serde(try_from = "f64", into = "f64")]
pub struct Em(pub f64);

impl TryFrom<f64> for Em {
    type Error = String;
    fn try_from(v: f64) -> Result<Self, String> {
        if (0.0..=4.0).contains(&v) {
            Ok(Em(v))
        } else {
            Err(format!("{v} em is out of range: use 0 to 4"))
        }
    }
}

impl From<Em> for f64 {
    fn from(v: Em) -> f64 {
        v.0
    }
}

/// A print size in points, from 8 to 24.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize, Deserialize)]
#[serde(try_from = "f64", into = "f64")]
pub struct Points(pub f64);

impl TryFrom<f64> for Points {
    type Error = String;
    fn try_from(v: f64) -> Result<Self, String> {
        if (8.0..=24.0).contains(&v) {
            Ok(Points(v))
        } else {
            Err(format!("{v} pt is out of range: use 8 to 24"))
        }
    }
}

impl From<Points> for f64 {
    fn from(v: Points) -> f64 {
        v.0
    }
}

/// A share of the page's text block, from 0 to 0.5.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize, Deserialize)]
#[serde(try_from = "f64", into = "f64")]
pub struct Share(pub f64);

impl TryFrom<f64> for Share {
    type Error = String;
    fn try_from(v: f64) -> Result<Self, String> {
        if (0.0..=0.5).contains(&v) {
            Ok(Share(v))
        } else {
            Err(format!(
                "{v} is out of range: use 0 (the top of the page) to 0.5 (half way down)"
            ))
        }
    }
}

impl From<Share> for f64 {
    fn from(v: Share) -> f64 {
        v.0
    }
}

/// How many lines a drop cap spans: 2 to 5.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "i64", into = "i64")]
pub struct Lines(pub u8);

impl TryFrom<i64> for Lines {
    type Error = String;
    fn try_from(v: i64) -> Result<Self, String> {
        match u8::try_from(v) {
            Ok(n @ 2..=5) => Ok(Lines(n)),
            _ => Err(format!("{v} lines is out of range: use 2 to 5")),
        }
    }
}

impl From<Lines> for i64 {
    fn from(v: Lines) -> i64 {
        i64::from(v.0)
    }
}

/// How many words: 0 to 8.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "i64", into = "i64")]
pub struct Words(pub u8);

impl TryFrom<i64> for Words {
    type Error = String;
    fn try_from(v: i64) -> Result<Self, String> {
        match u8::try_from(v) {
            Ok(n @ 0..=8) => Ok(Words(n)),
            _ => Err(format!("{v} words is out of range: use 0 to 8")),
        }
    }
}

impl From<Words> for i64 {
    fn from(v: Words) -> i64 {
        i64::from(v.0)
    }
}

/// An ornament: one to eight printable characters (`❦`, `* * *`), set as text so that a
/// screen reader skips it and a reader's font size scales it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Glyph(pub String);

impl TryFrom<String> for Glyph {
    type Error = String;
    fn try_from(v: String) -> Result<Self, String> {
        let count = v.chars().count();
        let printable = v.chars().all(|c| {
            !c.is_control()
                && !matches!(c, '"' | '\\' | '<' | '>' | '&' | '\u{2028}' | '\u{2029}')
                && !('\u{202a}'..='\u{202e}').contains(&c)
                && !('\u{2066}'..='\u{2069}').contains(&c)
        });
        if (1..=8).contains(&count) && printable && !v.trim().is_empty() {
            Ok(Glyph(v))
        } else {
            Err(format!(
                "{v:?} is not an ornament: use 1 to 8 printable characters, without quotes, \
                 backslashes or angle brackets"
            ))
        }
    }
}

impl From<Glyph> for String {
    fn from(v: Glyph) -> String {
        v.0
    }
}

/// A colour for text, `#rrggbb`, dark enough to read on white: WCAG AA's 4.5:1 contrast,
/// which DAISY Ace checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Color(pub [u8; 3]);

/// WCAG's least contrast for body-size text.
pub const MIN_CONTRAST: f64 = 4.5;

impl Color {
    /// Its contrast with white, by WCAG 2's relative luminance.
    pub fn contrast_on_white(self) -> f64 {
        let channel = |c: u8| {
            let c = f64::from(c) / 255.0;
            if c <= 0.040_45 {
                c / 12.92
            } else {
                ((c + 0.055) / 1.055).powf(2.4)
            }
        };
        let [r, g, b] = self.0;
        let l = 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
        1.05 / (l + 0.05)
    }

    pub fn hex(self) -> String {
        let [r, g, b] = self.0;
        format!("#{r:02x}{g:02x}{b:02x}")
    }
}

impl TryFrom<String> for Color {
    type Error = String;
    fn try_from(v: String) -> Result<Self, String> {
        let digits = v.strip_prefix('#').unwrap_or("");
        let parsed =
            (digits.len() == 6 && digits.bytes().all(|b| b.is_ascii_hexdigit())).then(|| {
                let at = |i: usize| u8::from_str_radix(&digits[i..i + 2], 16).unwrap_or(0);
                Color([at(0), at(2), at(4)])
            });
        let Some(color) = parsed else {
            return Err(format!("{v:?} is not a colour: write it as #rrggbb"));
        };
        let contrast = color.contrast_on_white();
        if contrast < MIN_CONTRAST {
            return Err(format!(
                "{v} has a contrast of {contrast:.2}:1 on white, too little to read \
                 (accessibility needs at least {MIN_CONTRAST}:1): choose a darker colour"
            ));
        }
        Ok(color)
    }
}

impl From<Color> for String {
    fn from(v: Color) -> String {
        v.hex()
    }
}

/// A number as CSS and Typst both write it: at most three decimals, no trailing zeros.
pub fn decimal(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}
