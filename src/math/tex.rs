//! TeX → MathML with `math-core` 0.7 (MIT), the converter chosen by the spike of issue 27 for
//! accuracy, typed errors and escaping (0.8 and later need a newer Rust than Bindery pins).
//!
//! math-core recurses with no depth limit, and a stack overflow aborts the process where no
//! `catch_unwind` reaches, so an expression is measured before it is converted: nested deeper
//! than [`MAX_DEPTH`] or longer than [`MAX_TEX_LEN`], it is refused as not convertible. What
//! passes converts on a thread of its own with a stack sized for the longest expression
//! allowed, whatever thread the reader runs on.

use math_core::{LatexToMathML, MathCoreConfig, MathDisplay, PrettyPrint};

use super::clean;
use super::constructs::Equations;
use super::macros::Macros;

/// Deepest nesting of groups (`{`, `\left`, `\begin`) converted; real mathematics rarely
/// passes 10.
pub const MAX_DEPTH: usize = 100;

/// Longest expression converted, in bytes (a page of dense TeX is about 5,000).
pub const MAX_TEX_LEN: usize = 20_000;

/// Stack for a conversion: math-core needs about 3 KiB a level in a release build, and an
/// expression of [`MAX_TEX_LEN`] bytes cannot nest more than a few thousand levels without
/// braces (`\sqrt\sqrt…`).
const STACK: usize = 32 << 20;

/// Why an expression stayed TeX.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TexError {
    #[error("it nests more than {MAX_DEPTH} levels deep")]
    TooDeep,
    #[error("it is longer than {MAX_TEX_LEN} bytes")]
    TooLong,
    #[error("it is empty")]
    Empty,
    /// math-core's message, with the character position it names.
    #[error("{0}")]
    Invalid(String),
    /// A macro of the author's that cannot be expanded (a bomb, a missing argument).
    #[error("{0}")]
    Macro(String),
}

/// One book's converter: macros the author defines hold for the rest of the book, equation
/// numbers (`\tag`, numbered environments) count through it, and labels are resolved across
/// it; a new book starts again.
pub struct TexConverter {
    inner: LatexToMathML,
    macros: Macros,
    equations: Equations,
}

impl Default for TexConverter {
    fn default() -> Self {
        Self::new()
    }
}

impl TexConverter {
    pub fn new() -> Self {
        let config = MathCoreConfig {
            // math-core 0.7 writes `\ldots` as three full stops, which a screen reader reads
            // as "dot dot dot"; pandoc and KaTeX write the one character.
            macros: vec![("ldots".into(), "…".into()), ("dots".into(), "…".into())],
            pretty_print: PrettyPrint::Never,
            xml_namespace: true,
            annotation: true,
            ..MathCoreConfig::default()
        };
        // The macros above are fixed and parse (a unit test converts both).
        let inner = LatexToMathML::new(config).unwrap_or_default();
        TexConverter {
            inner,
            macros: Macros::default(),
            equations: Equations::default(),
        }
    }

    /// `tex` as one cleaned `<math>` element (see [`super::clean`]), its source kept as a
    /// `<semantics>` annotation; `display` for a block equation. `None` for an expression that
    /// only defines macros, which shows nothing.
    ///
    /// The author's macros are expanded first (within a bound, so a macro bomb fails this
    /// expression alone), then the constructs math-core lacks are rewritten, and the limits
    /// are held against what math-core will read.
    pub fn convert(&mut self, tex: &str, display: bool) -> Result<Option<String>, TexError> {
        if tex.trim().is_empty() {
            return Err(TexError::Empty);
        }
        if tex.len() > MAX_TEX_LEN {
            return Err(TexError::TooLong);
        }
        let rest = self
            .macros
            .take_definitions(tex)
            .map_err(|e| TexError::Macro(e.to_string()))?;
        if rest.trim().is_empty() {
            return Ok(None);
        }
        let expanded = self
            .macros
            .expand(&rest)
            .map_err(|e| TexError::Macro(e.to_string()))?;
        let rewritten = self
            .equations
            .rewrite(&expanded, display)
            .map_err(|e| TexError::Invalid(e.to_string()))?;
        if rewritten.len() > MAX_TEX_LEN {
            return Err(TexError::TooLong);
        }
        if depth(&rewritten) > MAX_DEPTH {
            return Err(TexError::TooDeep);
        }
        let mode = if display {
            MathDisplay::Block
        } else {
            MathDisplay::Inline
        };
        let inner = &mut self.inner;
        let source = rewritten.as_str();
        let result = std::thread::scope(|scope| {
            std::thread::Builder::new()
                .name("tex".into())
                .stack_size(STACK)
                .spawn_scoped(scope, || {
                    inner.convert_with_global_state(source, mode).map_err(|e| {
                        let mut message = String::new();
                        e.to_message(&mut message, source);
                        let message = message.trim_end_matches('.');
                        // "12: Unknown command …" → "at character 12: unknown command …"
                        TexError::Invalid(format!("at character {message}"))
                    })
                })
                .map(|handle| handle.join())
        });
        let mathml = match result {
            Ok(Ok(converted)) => converted?.mathml,
            // No thread to be had, or a panic inside math-core: the expression stays TeX.
            Ok(Err(_)) => return Err(TexError::Invalid("the converter failed on it".into())),
            Err(e) => return Err(TexError::Invalid(format!("no thread to convert it: {e}"))),
        };
        let finished = self.equations.finish(&mathml, tex);
        clean(&finished)
            .map(Some)
            .ok_or_else(|| TexError::Invalid("the converter wrote invalid MathML".into()))
    }

    /// Fills in references to labels that came later in the book than the reference
    /// (`\eqref{key}` before `\label{key}`), once every expression has been converted. The
    /// keys no expression defines are returned, and show as `??`.
    pub fn resolve(&self, mathml: &str) -> (String, Vec<String>) {
        self.equations.resolve_refs(mathml)
    }
}

/// How deep groups nest: braces (not `\{`), `\left`…`\right` and `\begin`…`\end`.
fn depth(tex: &str) -> usize {
    let bytes = tex.as_bytes();
    let (mut depth, mut deepest) = (0usize, 0usize);
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => {
                let name: &[u8] = {
                    let start = i + 1;
                    let end = start
                        + bytes[start..]
                            .iter()
                            .take_while(|b| b.is_ascii_alphabetic())
                            .count();
                    &bytes[start..end]
                };
                match name {
                    b"left" | b"begin" => depth += 1,
                    b"right" | b"end" => depth = depth.saturating_sub(1),
                    _ => {}
                }
                // A control symbol (`\{`) is one character after the backslash.
                i += 1 + name.len().max(1);
                deepest = deepest.max(depth);
                continue;
            }
            b'{' => depth += 1,
            b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        deepest = deepest.max(depth);
        i += 1;
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_expression_becomes_mathml_with_its_tex_kept() {
        let mathml = TexConverter::new()
            .convert(r"\frac{a}{b} < \sqrt{2}", false)
            .expect("converts")
            .expect("an equation");
        assert!(
            mathml.starts_with(r#"<math xmlns="http://www.w3.org/1998/Math/MathML""#),
            "{mathml}"
        );
        assert!(mathml.contains("<mfrac>"), "{mathml}");
        assert!(
            mathml.contains(
                r#"<annotation encoding="application/x-tex">\frac{a}{b} &lt; \sqrt{2}</annotation>"#
            ),
            "{mathml}"
        );
        assert_eq!(super::super::text_content(&mathml), "ab<2");
    }

    #[test]
    fn an_ellipsis_is_one_character() {
        let mut c = TexConverter::new();
        for tex in [r"1, \ldots, n", r"1, \dots, n"] {
            let mathml = c
                .convert(tex, false)
                .expect("converts")
                .expect("an equation");
            assert!(
                super::super::text_content(&mathml).contains('…'),
                "{mathml}"
            );
        }
    }

    #[test]
    fn a_block_equation_is_displayed() {
        let mathml = TexConverter::new()
            .convert("x^2", true)
            .expect("converts")
            .expect("an equation");
        assert!(mathml.contains(r#"display="block""#), "{mathml}");
    }

    #[test]
    fn malformed_tex_is_an_error_naming_the_problem() {
        let mut c = TexConverter::new();
        let Err(TexError::Invalid(message)) = c.convert(r"\frac{a}{b", false) else {
            panic!("expected an error");
        };
        assert!(message.starts_with("at character"), "{message}");
        assert!(matches!(
            c.convert(r"\foo{x}", false),
            Err(TexError::Invalid(_))
        ));
        assert_eq!(c.convert("  ", false), Err(TexError::Empty));
    }

    #[test]
    fn nesting_bombs_are_refused_before_the_converter_sees_them() {
        let mut c = TexConverter::new();
        for bomb in [
            "{".repeat(5000) + "x" + &"}".repeat(5000),
            r"\frac{".repeat(800) + "1" + &"}{2}".repeat(800),
            r"\left(".repeat(1000) + "x" + &r"\right)".repeat(1000),
        ] {
            assert_eq!(c.convert(&bomb, false), Err(TexError::TooDeep));
        }
        assert_eq!(
            c.convert(&"x+".repeat(MAX_TEX_LEN), false),
            Err(TexError::TooLong)
        );
        // Escaped braces are symbols, not groups.
        assert_eq!(depth(r"\{\{\{x\}\}\}"), 0);
        assert_eq!(depth(r"\left( \frac{a}{b} \right)"), 2);
    }

    #[test]
    fn unbraced_nesting_within_the_length_limit_converts_without_overflowing() {
        // `\sqrt\sqrt…x` nests without a single brace; the converter's thread has the stack.
        let tex = r"\sqrt".repeat(1000) + "x";
        let _ = TexConverter::new().convert(&tex, false);
    }

    #[test]
    fn equation_numbers_count_through_one_book() {
        let mut c = TexConverter::new();
        let first = c
            .convert(r"\begin{align} a &= b \end{align}", true)
            .expect("converts")
            .expect("an equation");
        let second = c
            .convert(r"\begin{align} c &= d \end{align}", true)
            .expect("converts")
            .expect("an equation");
        assert!(first.contains("(1)"), "{first}");
        assert!(second.contains("(2)"), "{second}");
        assert!(!second.contains(" style="), "{second}");
    }
}
