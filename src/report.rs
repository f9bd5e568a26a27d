//! A book's report: what a person should know about its conversion: warnings, statistics,
//! and how long each step took.

use serde::{Deserialize, Serialize};

/// Something the conversion did that the author may want to check. Never fatal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Warning {
    /// Stable, machine-readable: `comment_dropped`, `text_box_flattened`, `chapters_guessed`…
    pub code: String,
    /// One sentence for a person: what happened and, where useful, what to do.
    pub message: String,
    /// Where in the source, when known (`word/document.xml`, `line 120`, `chapter 3`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
}

impl Warning {
    pub fn new(code: &str, message: impl Into<String>) -> Self {
        Warning {
            code: code.to_owned(),
            message: message.into(),
            location: None,
        }
    }

    pub fn at(mut self, location: impl Into<String>) -> Self {
        self.location = Some(location.into());
        self
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Statistics {
    pub words: u64,
    pub chapters: u64,
    pub images: u64,
    pub notes: u64,
    pub tables: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepTiming {
    pub step: String,
    pub millis: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The format the manuscript was read as (`markdown`, `docx`, `text`).
    pub format: String,
    /// For plain text: the encoding it was decoded from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoding: Option<String>,
    pub warnings: Vec<Warning>,
    pub statistics: Statistics,
    pub timings: Vec<StepTiming>,
    /// The book's metadata, each value with where it came from (the manuscript, the upload's
    /// fields, a default).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metadata: Vec<MetadataSource>,
    /// The print edition the ebooks' page list follows (the reference edition): what was
    /// made, or why it could not be (the ebooks publish anyway).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub print: Option<PrintReport>,
    /// Every print edition the book is made in, the reference edition first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub editions: Vec<PrintReport>,
}

/// What a person checks before sending the print edition to a printer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrintReport {
    /// Which edition this is (the paperback in a report made before editions).
    #[serde(default)]
    pub edition: crate::paperback::Edition,
    /// The trim size as asked for (`6x9`, `a5`).
    pub trim: String,
    /// `white` or `cream`, which decides the spine's width.
    pub paper: String,
    /// Whether the pages bleed 0.125 in past the trim on the outside edges.
    pub bleed: bool,
    /// Pages of the interior, blank ones included; absent when it could not be made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pages: Option<u32>,
    /// The inside margin, in inches, chosen from the page count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gutter_inches: Option<f64>,
    /// The spine's width on the print cover, in inches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spine_inches: Option<f64>,
    /// Why there is no print edition (`code` as the API's errors have it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<PrintFailure>,
    /// The edition checked against its printer's rules, when the book names a printer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub printer_check: Option<PrinterCheck>,
}

/// A print edition checked against the rules of the printer it goes to (`printers`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrinterCheck {
    /// `kdp`, `ingramspark` or `lulu`.
    pub printer: String,
    /// The printer as a person names it.
    pub name: String,
    /// No rule failed (advice does not fail a check).
    pub passed: bool,
    /// Every rule of the printer's, in the order its guide gives them.
    pub rules: Vec<RuleCheck>,
}

/// One of a printer's rules, checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleCheck {
    /// Stable, machine-readable: `trim`, `page_count`, `gutter`, `outside_margin`, `bleed`,
    /// `spine_text`, `spine_width`, `image_resolution`, `fonts_embedded`, `transparency`,
    /// `colour`, `pdf_standard`, `bookmarks`, `encryption`.
    pub rule: String,
    /// The rule, for a person (`Inside margin (gutter)`).
    pub label: String,
    pub verdict: Verdict,
    /// What the edition has (`400 pages, gutter 0.250 in`).
    pub found: String,
    /// What the printer asks for (`0.625 in at least, for 301 to 500 pages`).
    pub wanted: String,
    /// What to change, when the rule failed or the printer would rather have otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advice: Option<String>,
    /// Where the printer publishes the figure.
    pub source: String,
    /// Where the figure came from, when not from the printer's own page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// How an edition stands against one rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    /// The printer refuses the file, or prints it other than the author meant.
    Fail,
    /// The printer takes it, and recommends otherwise.
    Advice,
}

/// `message` as a sentence: its first letter a capital, and a full stop at its end (the print
/// edition's reasons are written to follow a colon).
pub fn sentence(message: &str) -> String {
    let mut chars = message.trim().chars();
    let mut out: String = chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default();
    if !out.ends_with(['.', '!', '?']) {
        out.push('.');
    }
    out
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrintFailure {
    pub code: String,
    pub message: String,
}

impl Report {
    pub fn warn(&mut self, warning: Warning) {
        // The same problem repeated on every page is one problem for a person.
        let seen = self
            .warnings
            .iter()
            .filter(|w| w.code == warning.code)
            .count();
        if seen < MAX_WARNINGS_PER_CODE {
            self.warnings.push(warning);
        } else if seen == MAX_WARNINGS_PER_CODE {
            self.warnings.push(Warning {
                code: warning.code.clone(),
                message: format!(
                    "More warnings like the above were left out (only the first {MAX_WARNINGS_PER_CODE} are listed)."
                ),
                location: None,
            });
        }
    }
}

const MAX_WARNINGS_PER_CODE: usize = 20;

/// One value of the book's metadata and where it came from (see `ebook::metadata::sources`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetadataSource {
    /// `title`, `subtitle`, `authors` (joined with `; `), `language`, `isbn`, `publisher`,
    /// `date`, `series`, `series_number`, `subjects` or `rights`.
    pub field: String,
    /// The value the book has.
    pub value: String,
    /// `manuscript`, `upload` (a field of the upload), `file_name` (a title made from it) or
    /// `default` (the service's `DEFAULT_LANGUAGE`, or "Untitled").
    pub source: String,
    /// What the manuscript said, when the book has something else.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manuscript: Option<String>,
}
