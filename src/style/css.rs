//! A style as CSS, for the EPUB (after `stylesheet.css`, which holds what every style
//! shares) and for the web reader (its chapters, under `.chapter`, after `reader.css`).
//! Sizes are in ems, so the reading system's text size, and the reader's, still rule.

use std::fmt::Write as _;

use super::fonts::Face;
use super::{BreakMark, Case, Opening, Position, Separation, Style, Weight, decimal};

/// Which stylesheet is being written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sheet {
    /// The EPUB's, beside `stylesheet.css` in `css/`; its fonts in `fonts/`.
    Epub,
    /// The web reader's, at the site's root, its fonts in `fonts/`; chapters are `.chapter`.
    Reader,
}

impl Sheet {
    fn scope(self) -> &'static str {
        match self {
            Sheet::Epub => "",
            Sheet::Reader => ".chapter ",
        }
    }

    fn font_url(self, file: &str) -> String {
        match self {
            Sheet::Epub => format!("../fonts/{file}"),
            Sheet::Reader => format!("fonts/{file}"),
        }
    }

    /// Where a house style's image (an ornament) is, from the stylesheet: [`ORNAMENTS`].
    fn image_url(self, file: &str) -> String {
        match self {
            Sheet::Epub => format!("../{ORNAMENTS}{file}"),
            Sheet::Reader => format!("{ORNAMENTS}{file}"),
        }
    }
}

/// The folder a house style's ornament images are in, in the EPUB (beside `css/`) and in the
/// reader's site alike.
pub const ORNAMENTS: &str = "ornaments/";

impl Sheet {}

/// The style's rules. `faces` are the font files the book carries (none when the style does
/// not embed its fonts), each named as the files are.
pub fn stylesheet(style: &Style, sheet: Sheet, faces: &[Face]) -> String {
    let s = sheet.scope();
    let mut out = format!("/* Book style: {} */\n", comment(&style.title));
    for face in faces {
        let _ = writeln!(
            out,
            "@font-face {{ font-family: \"{}\"; src: url(\"{}\"); font-weight: {}; font-style: {}; }}",
            face.family,
            sheet.font_url(&face.file),
            if face.bold { "bold" } else { "normal" },
            if face.italic { "italic" } else { "normal" },
        );
    }
    let accent = match (sheet, style.colors.accent) {
        (_, None) => "inherit".to_owned(),
        (Sheet::Epub, Some(color)) => color.hex(),
        // The reader's dark theme sets the accent to its own (`reader.css`).
        (Sheet::Reader, Some(_)) => "var(--style-accent)".to_owned(),
    };
    if let (Sheet::Reader, Some(color)) = (sheet, style.colors.accent) {
        let _ = writeln!(
            out,
            ":root {{ --style-accent: {}; }}\n:root[data-theme=\"dark\"] {{ --style-accent: var(--text); }}\n@media (prefers-color-scheme: dark) {{ :root:not([data-theme=\"light\"]) {{ --style-accent: var(--text); }} }}",
            color.hex()
        );
    }

    let body = match sheet {
        Sheet::Epub => "body".to_owned(),
        Sheet::Reader => ".chapter".to_owned(),
    };
    let _ = writeln!(
        out,
        "{body} {{ font-family: {}; }}",
        super::fonts::css_stack(&style.body.font)
    );

    // Paragraphs.
    let p = &style.paragraph;
    let _ = writeln!(
        out,
        "{s}p {{ text-align: {}; }}",
        if p.justify { "justify" } else { "left" }
    );
    match p.separation {
        Separation::Indent => {
            let _ = writeln!(
                out,
                "{s}p {{ margin: 0; text-indent: {}em; }}\n{s}p.first {{ text-indent: 0; }}",
                decimal(p.indent.0)
            );
        }
        Separation::Space => {
            let _ = writeln!(out, "{s}p {{ margin: 0 0 0.8em 0; text-indent: 0; }}");
        }
    }
    let _ = writeln!(
        out,
        "{s}.lead-in {{ font-variant: small-caps; letter-spacing: 0.04em; }}"
    );
    if p.opening == Opening::DropCap {
        let lines = f64::from(p.drop_cap_lines.0);
        // Without initial-letter, a floated letter about as tall as the lines it spans.
        let size = lines * 1.15 + 0.2;
        let _ = writeln!(
            out,
            "{s}p.opening::first-letter {{ float: left; font-size: {}em; line-height: 0.85; margin: 0.06em 0.08em 0 0; color: {accent}; }}\n\
             @supports (initial-letter: 2) or (-webkit-initial-letter: 2) {{ {s}p.opening::first-letter {{ float: none; font-size: 1em; line-height: inherit; margin: 0 0.1em 0 0; -webkit-initial-letter: {lines}; initial-letter: {lines}; }} }}",
            decimal(size),
            lines = p.drop_cap_lines.0,
        );
    }

    // The chapter's head.
    let c = &style.chapter;
    let align = c.align.name();
    let margin_top = decimal(c.sink.0 / 0.22 * 3.0);
    let _ = writeln!(
        out,
        "{s}h1 {{ font-family: {}; font-size: {}em; font-style: {}; font-weight: {}; text-align: {align}; margin: {margin_top}em 0 1.5em 0; }}",
        super::fonts::css_stack(style.title_font()),
        decimal(c.title_size.0),
        c.title_style.name(),
        weight(c.title_weight),
    );
    let _ = writeln!(
        out,
        "{s}.chapter-title {{ display: block;{} }}",
        case(c.title_case)
    );
    let _ = writeln!(
        out,
        "{s}p.chapter-subtitle {{ text-align: {align}; text-indent: 0; font-style: italic; font-size: 1.2em; margin: -0.75em 0 1.5em 0; }}"
    );
    let _ = writeln!(
        out,
        "{s}.chapter-number {{ display: block; font-size: {}em; margin-bottom: 0.4em; color: {accent}; }}",
        decimal(c.number_size.0 / c.title_size.0)
    );
    if let Some(ornament) = &c.ornament {
        let pseudo = match c.ornament_position {
            Position::Above => "before",
            Position::Below => "after",
        };
        let _ = writeln!(
            out,
            "{s}h1::{pseudo} {{ content: \"{}\"; display: block; font-size: 0.7em; font-style: normal; margin: 0.4em 0; color: {accent}; }}",
            css_string(&ornament.0)
        );
    }

    // Scene breaks.
    match style.scene_break.mark() {
        BreakMark::Glyph(ornament) => {
            let _ = writeln!(
                out,
                "{s}hr.scene-break::after {{ content: \"{}\"; display: inline-block; line-height: 1.5em; color: {accent}; }}",
                css_string(&ornament.0)
            );
        }
        BreakMark::Image(file) => {
            // Drawn, not said: a thematic break whose picture is decoration.
            let _ = writeln!(
                out,
                "{s}hr.scene-break::after {{ content: \"\"; display: inline-block; width: 4em; height: 1.5em; vertical-align: middle; background: url(\"{}\") center / contain no-repeat; }}",
                sheet.image_url(file)
            );
            if sheet == Sheet::Reader {
                // A dark ornament on the dark theme would vanish: it turns light with it.
                let _ = writeln!(
                    out,
                    ":root[data-theme=\"dark\"] {s}hr.scene-break::after {{ filter: invert(1); }}\n@media (prefers-color-scheme: dark) {{ :root:not([data-theme=\"light\"]) {s}hr.scene-break::after {{ filter: invert(1); }} }}"
                );
            }
        }
        BreakMark::Space => {
            let _ = writeln!(out, "{s}hr.scene-break::after {{ content: none; }}");
        }
    }

    // Quotations, verse, epigraphs, notes.
    let q = &style.block_quote;
    let _ = writeln!(
        out,
        "{s}blockquote {{ margin: 1em {indent}em; font-size: {}em; font-style: {}; }}",
        decimal(q.size.0),
        q.style.name(),
        indent = decimal(q.indent.0),
    );
    let v = &style.verse;
    let _ = writeln!(
        out,
        "{s}p.verse {{ text-align: left; text-indent: 0; margin-left: {}em; font-style: {}; }}",
        decimal(v.indent.0),
        v.style.name()
    );
    let e = &style.epigraph;
    let _ = writeln!(
        out,
        "{s}section.dedication p, {s}section.epigraph p {{ text-align: {}; text-indent: 0; font-style: {}; }}",
        e.align.name(),
        e.style.name(),
    );
    let f = &style.footnote;
    let _ = writeln!(
        out,
        "{s}aside.footnote, {s}div.note, {s}div.footnotes {{ font-size: {}em; }}",
        decimal(f.size.0)
    );
    if !f.rule {
        let _ = writeln!(out, "{s}div.footnotes {{ border-top: 0; }}");
    }
    out
}

fn weight(w: Weight) -> &'static str {
    match w {
        Weight::Regular => "normal",
        Weight::Bold => "bold",
    }
}

fn case(c: Case) -> &'static str {
    match c {
        Case::AsWritten => "",
        Case::Upper => " text-transform: uppercase; letter-spacing: 0.06em;",
        Case::SmallCaps => " font-variant: small-caps; letter-spacing: 0.04em;",
    }
}

/// A CSS string's content: the ornament's characters are checked to need no escape but
/// these ([`super::Glyph`] refuses quotes and backslashes).
fn css_string(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii() {
                c.to_string()
            } else {
                format!("\\{:x} ", u32::from(c))
            }
        })
        .collect()
}

/// A title for a CSS comment: nothing that could close it.
fn comment(s: &str) -> String {
    s.replace("*/", "* /")
}
