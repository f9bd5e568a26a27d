//! What a paperback can be made to, as an author names it: the trim sizes print-on-demand
//! services take, the papers (which decide the spine's width), the binding, the price its
//! barcode carries and the printer it goes to. The book's metadata holds them (`trim`,
//! `paper`, `price`, `printer`); the print edition lays its pages out on them, to the
//! printer's rules (`printers`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A trim size: the finished page. Written as its name (`6x9`) wherever it is stored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Trim {
    /// 5 × 8 in.
    In5x8,
    /// 5.25 × 8 in.
    In5_25x8,
    /// 5.5 × 8.5 in.
    In5_5x8_5,
    /// 6 × 9 in, the commonest trade paperback.
    #[default]
    In6x9,
    /// A5, 148 × 210 mm.
    A5,
    /// Royal, 156 × 234 mm.
    Royal,
}

impl Trim {
    pub const ALL: [Trim; 6] = [
        Trim::In5x8,
        Trim::In5_25x8,
        Trim::In5_5x8_5,
        Trim::In6x9,
        Trim::A5,
        Trim::Royal,
    ];

    /// The name a user types (`6x9`, `a5`).
    pub fn name(self) -> &'static str {
        match self {
            Trim::In5x8 => "5x8",
            Trim::In5_25x8 => "5.25x8",
            Trim::In5_5x8_5 => "5.5x8.5",
            Trim::In6x9 => "6x9",
            Trim::A5 => "a5",
            Trim::Royal => "royal",
        }
    }

    /// The trim as a reader would name it (`6 × 9 in`, `A5`), for the ebook's page source.
    pub fn label(self) -> &'static str {
        match self {
            Trim::In5x8 => "5 × 8 in",
            Trim::In5_25x8 => "5.25 × 8 in",
            Trim::In5_5x8_5 => "5.5 × 8.5 in",
            Trim::In6x9 => "6 × 9 in",
            Trim::A5 => "A5",
            Trim::Royal => "Royal",
        }
    }

    /// Width and height in inches.
    pub fn inches(self) -> (f64, f64) {
        const MM: f64 = 1.0 / 25.4;
        match self {
            Trim::In5x8 => (5.0, 8.0),
            Trim::In5_25x8 => (5.25, 8.0),
            Trim::In5_5x8_5 => (5.5, 8.5),
            Trim::In6x9 => (6.0, 9.0),
            Trim::A5 => (148.0 * MM, 210.0 * MM),
            Trim::Royal => (156.0 * MM, 234.0 * MM),
        }
    }
}

impl fmt::Display for Trim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A trim size nobody prints.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown trim size {given:?}: choose one of 5x8, 5.25x8, 5.5x8.5, 6x9, a5, royal")]
pub struct UnknownTrim {
    pub given: String,
}

impl From<Trim> for String {
    fn from(trim: Trim) -> String {
        trim.name().to_owned()
    }
}

impl TryFrom<String> for Trim {
    type Error = UnknownTrim;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl FromStr for Trim {
    type Err = UnknownTrim;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted = s.trim().to_ascii_lowercase().replace(['×', ' '], "x");
        let wanted = wanted.trim_end_matches("in");
        Trim::ALL
            .into_iter()
            .find(|t| t.name() == wanted)
            .ok_or_else(|| UnknownTrim {
                given: s.to_owned(),
            })
    }
}

/// The paper, which sets the spine's width on the cover.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Paper {
    #[default]
    White,
    Cream,
}

impl Paper {
    pub const ALL: [Paper; 2] = [Paper::White, Paper::Cream];

    pub fn name(self) -> &'static str {
        match self {
            Paper::White => "white",
            Paper::Cream => "cream",
        }
    }
}

impl fmt::Display for Paper {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A paper nobody prints on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown paper {given:?}: choose white or cream")]
pub struct UnknownPaper {
    pub given: String,
}

impl FromStr for Paper {
    type Err = UnknownPaper;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "white" => Ok(Paper::White),
            "cream" => Ok(Paper::Cream),
            _ => Err(UnknownPaper {
                given: s.to_owned(),
            }),
        }
    }
}

/// The price the cover's barcode carries, as its five-digit add-on (EAN-5): a currency digit
/// and the price in hundredths, by the book trade's convention (BISG's "Machine-Readable
/// Coding Guidelines for the U.S. Book Industry"; Nielsen BookData in the UK): 5 for US
/// dollars, 6 Canadian, 3 Australian, 4 New Zealand, 0 pounds sterling; 90000 says there is no
/// suggested price. Without one (the default) the barcode has no add-on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Price(pub Option<String>);

impl Price {
    pub fn is_none(&self) -> bool {
        self.0.is_none()
    }
}

const CURRENCIES: [(&str, &str, char); 5] = [
    ("USD", "$", '5'),
    ("CAD", "C$", '6'),
    ("GBP", "£", '0'),
    ("AUD", "A$", '3'),
    ("NZD", "NZ$", '4'),
];

impl FromStr for Price {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let wrong = || {
            format!(
                "{s:?} is not a price the barcode can carry: write a currency (USD, CAD, GBP, \
                 AUD or NZD, or $ or £) and an amount under 100, such as `USD 14.99`; `none` \
                 for no suggested price; or the add-on's five digits (`51499`)"
            )
        };
        if s.eq_ignore_ascii_case("none") {
            return Ok(Price(Some("90000".to_owned())));
        }
        if s.len() == 5 && s.bytes().all(|b| b.is_ascii_digit()) {
            return Ok(Price(Some(s.to_owned())));
        }
        let upper = s.to_uppercase();
        // The longest sign first: `NZ$` before `$`.
        let mut signs: Vec<(&str, char)> = CURRENCIES
            .iter()
            .flat_map(|(code, sign, digit)| [(*code, *digit), (*sign, *digit)])
            .collect();
        signs.sort_by_key(|(sign, _)| std::cmp::Reverse(sign.len()));
        let (digit, amount) = signs
            .iter()
            .find_map(|(sign, digit)| upper.strip_prefix(sign).map(|rest| (*digit, rest.trim())))
            .ok_or_else(wrong)?;
        let (whole, cents) = match amount.split_once('.') {
            Some((whole, cents)) if cents.len() == 2 => (whole, cents),
            None => (amount, "00"),
            Some(_) => return Err(wrong()),
        };
        let digits_only = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
        if !digits_only(whole) || !digits_only(cents) {
            return Err(wrong());
        }
        let whole: u32 = whole.parse().map_err(|_| wrong())?;
        if whole >= 100 {
            return Err(format!(
                "{s:?} is 100 or more, which the add-on's four digits cannot hold: give its five \
                 digits yourself (for a US price over $99.98 that is 59999)"
            ));
        }
        Ok(Price(Some(format!("{digit}{whole:02}{cents}"))))
    }
}

/// `s` as names are compared: lower case, letters and digits only (`Amazon KDP` is `amazonkdp`,
/// `large-print` is `largeprint`).
fn folded(s: &str) -> String {
    s.trim()
        .to_ascii_lowercase()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect()
}

/// The printer an author sends the print edition to: the print edition is checked against its
/// rules (`printers`). `none` (the default) checks against none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Printer {
    #[default]
    None,
    /// Amazon's Kindle Direct Publishing.
    Kdp,
    IngramSpark,
    Lulu,
}

impl Printer {
    /// The printers there are rules for.
    pub const ALL: [Printer; 3] = [Printer::Kdp, Printer::IngramSpark, Printer::Lulu];

    pub fn is_none(&self) -> bool {
        *self == Printer::None
    }

    /// The printer as a person names it (`Amazon KDP`).
    pub fn label(self) -> &'static str {
        match self {
            Printer::None => "No printer",
            Printer::Kdp => "Amazon KDP",
            Printer::IngramSpark => "IngramSpark",
            Printer::Lulu => "Lulu",
        }
    }

    /// The name a user types (`kdp`).
    pub fn name(self) -> &'static str {
        match self {
            Printer::None => "none",
            Printer::Kdp => "kdp",
            Printer::IngramSpark => "ingramspark",
            Printer::Lulu => "lulu",
        }
    }
}

impl fmt::Display for Printer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Printer {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match folded(s).as_str() {
            "none" => Ok(Printer::None),
            "kdp" | "amazon" | "amazonkdp" | "kindledirectpublishing" => Ok(Printer::Kdp),
            "ingramspark" | "ingram" => Ok(Printer::IngramSpark),
            "lulu" => Ok(Printer::Lulu),
            _ => Err(format!(
                "{:?} is not a printer Bindery has rules for: choose kdp, ingramspark, lulu or \
                 none",
                s.trim()
            )),
        }
    }
}

/// How a print edition is bound.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Binding {
    /// Perfect bound, with a soft cover.
    #[default]
    Paperback,
    /// Case laminate: the cover printed and wrapped round boards.
    Hardcover,
}

impl Binding {
    pub fn name(self) -> &'static str {
        match self {
            Binding::Paperback => "paperback",
            Binding::Hardcover => "hardcover",
        }
    }
}

impl fmt::Display for Binding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A print edition of a book. The ebook is always made; these as the author lists them.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Edition {
    #[default]
    Paperback,
    /// Case laminate: its own trims, page limits and cover wrap.
    Hardcover,
    /// A paperback set in a larger body (16 pt or more), with its own pages and spine.
    LargePrint,
}

impl Edition {
    pub const ALL: [Edition; 3] = [Edition::Paperback, Edition::Hardcover, Edition::LargePrint];

    /// The name a user types, and the API's (`large_print`).
    pub fn name(self) -> &'static str {
        match self {
            Edition::Paperback => "paperback",
            Edition::Hardcover => "hardcover",
            Edition::LargePrint => "large_print",
        }
    }

    /// As a heading names it (`Large print`).
    pub fn heading(self) -> &'static str {
        match self {
            Edition::Paperback => "Paperback",
            Edition::Hardcover => "Hardcover",
            Edition::LargePrint => "Large print",
        }
    }

    /// As a person reads it (`large print`).
    pub fn label(self) -> &'static str {
        match self {
            Edition::Paperback => "paperback",
            Edition::Hardcover => "hardcover",
            Edition::LargePrint => "large print",
        }
    }

    pub fn binding(self) -> Binding {
        match self {
            Edition::Hardcover => Binding::Hardcover,
            Edition::Paperback | Edition::LargePrint => Binding::Paperback,
        }
    }
}

impl fmt::Display for Edition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Edition {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match folded(s).as_str() {
            "paperback" | "softcover" | "tradepaperback" => Ok(Edition::Paperback),
            "hardcover" | "hardback" | "caselaminate" => Ok(Edition::Hardcover),
            "largeprint" => Ok(Edition::LargePrint),
            _ => Err(format!(
                "{:?} is not an edition Bindery prints: choose paperback, hardcover or large \
                 print",
                s.trim()
            )),
        }
    }
}

/// The print editions a book is made in, in the order listed: `paperback, hardcover, large
/// print`, or `none` for the ebooks alone. By default, the paperback.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Editions(pub Vec<Edition>);

impl Default for Editions {
    fn default() -> Self {
        Editions(vec![Edition::Paperback])
    }
}

impl Editions {
    pub fn contains(&self, edition: Edition) -> bool {
        self.0.contains(&edition)
    }
}

impl FromStr for Editions {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        if s.trim().eq_ignore_ascii_case("none") {
            return Ok(Editions(Vec::new()));
        }
        let mut editions = Vec::new();
        for part in s.split([',', ';', '+']).flat_map(|p| p.split(" and ")) {
            if part.trim().is_empty() {
                continue;
            }
            let edition: Edition = part.parse()?;
            if editions.contains(&edition) {
                return Err(format!("{} is listed twice", edition.label()));
            }
            editions.push(edition);
        }
        if editions.is_empty() {
            return Err("list the editions: paperback, hardcover, large print, or none".into());
        }
        Ok(Editions(editions))
    }
}

/// The large-print edition's body size, in points: 16 at least (the large-print guidelines'
/// floor; the default), 24 at most.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct LargePrintSize(pub f64);

// A size is a number a person wrote, never NaN.
impl Eq for LargePrintSize {}

impl LargePrintSize {
    pub const LEAST: f64 = 16.0;
    pub const MOST: f64 = 24.0;
}

impl Default for LargePrintSize {
    fn default() -> Self {
        LargePrintSize(Self::LEAST)
    }
}

impl FromStr for LargePrintSize {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let points: f64 = s
            .trim()
            .trim_end_matches("pt")
            .trim()
            .parse()
            .map_err(|_| format!("{:?} is not a size in points, such as 16 or 18pt", s.trim()))?;
        if !(Self::LEAST..=Self::MOST).contains(&points) {
            return Err(format!(
                "{points} pt is not large print: give {} to {} points",
                Self::LEAST,
                Self::MOST
            ));
        }
        Ok(LargePrintSize(points))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_price_becomes_its_barcode_add_on() {
        for (given, code) in [
            ("USD 14.99", "51499"),
            ("$14.99", "51499"),
            ("usd 9", "50900"),
            ("CAD 19.95", "61995"),
            ("£8.99", "00899"),
            ("NZ$ 29.99", "42999"),
            ("A$24.95", "32495"),
            ("none", "90000"),
            ("59999", "59999"),
        ] {
            assert_eq!(
                given.parse::<Price>(),
                Ok(Price(Some(code.to_owned()))),
                "{given}"
            );
        }
        for wrong in ["EUR 10", "14.99", "USD 14.9", "USD 100", "$1,000", "5149"] {
            let said = wrong.parse::<Price>().expect_err(wrong);
            assert!(
                said.contains("USD 14.99") || said.contains("59999"),
                "{wrong}: {said}"
            );
        }
        assert_eq!(Price::default(), Price(None));
    }

    #[test]
    fn printers_are_named_as_authors_write_them() {
        for (given, printer) in [
            ("kdp", Printer::Kdp),
            ("Amazon KDP", Printer::Kdp),
            ("IngramSpark", Printer::IngramSpark),
            ("ingram-spark", Printer::IngramSpark),
            (" lulu ", Printer::Lulu),
            ("none", Printer::None),
        ] {
            assert_eq!(given.parse::<Printer>(), Ok(printer), "{given}");
        }
        for p in Printer::ALL {
            assert_eq!(p.name().parse::<Printer>(), Ok(p));
            assert_eq!(
                serde_json::to_string(&p).unwrap(),
                format!("\"{}\"", p.name())
            );
        }
        let said = "blurb".parse::<Printer>().unwrap_err();
        assert!(said.contains("kdp, ingramspark, lulu"), "{said}");
    }

    #[test]
    fn editions_are_listed_as_authors_write_them() {
        use Edition::*;
        for (given, editions) in [
            ("paperback", vec![Paperback]),
            (
                "Paperback, Hardcover and Large Print",
                vec![Paperback, Hardcover, LargePrint],
            ),
            ("hardback; large-print", vec![Hardcover, LargePrint]),
            ("none", vec![]),
        ] {
            assert_eq!(given.parse::<Editions>(), Ok(Editions(editions)), "{given}");
        }
        let twice = "paperback, paperback".parse::<Editions>().unwrap_err();
        assert!(twice.contains("twice"), "{twice}");
        let unknown = "paperback, audiobook".parse::<Editions>().unwrap_err();
        assert!(
            unknown.contains("\"audiobook\"") && unknown.contains("large print"),
            "{unknown}"
        );
        assert_eq!(Editions::default(), Editions(vec![Paperback]));
        assert_eq!("18pt".parse::<LargePrintSize>(), Ok(LargePrintSize(18.0)));
        let small = "12".parse::<LargePrintSize>().unwrap_err();
        assert!(small.contains("16 to 24"), "{small}");
    }
}
