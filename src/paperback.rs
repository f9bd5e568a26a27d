//! What a paperback can be made to, as an author names it: the trim sizes print-on-demand
//! services take, and the papers (which decide the spine's width). The book's metadata holds
//! them (`trim`, `paper`); the print edition lays its pages out on them.

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

    /// Inches of spine a page adds (KDP's figures).
    pub fn inches_per_page(self) -> f64 {
        match self {
            Paper::White => 0.002252,
            Paper::Cream => 0.0025,
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
