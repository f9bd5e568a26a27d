//! Holding a manuscript to its bounds (`Limits`, which the configuration declares, since every
//! one is a variable an operator can move) while it is read.

use super::InputError;

pub use crate::config::Limits;

/// What a reader has put into the document model so far. Readers report as they go, so a
/// manuscript that would grow past the limits is stopped while it is read, before the memory
/// is spent (a 1 MB DOCX can inflate to 32 million words).
#[derive(Debug)]
pub struct Meter {
    max_words: u64,
    max_elements: u64,
    words: u64,
    elements: u64,
}

impl Meter {
    pub fn new(limits: &Limits) -> Meter {
        Meter {
            max_words: limits.max_words,
            max_elements: limits.max_elements,
            words: 0,
            elements: 0,
        }
    }

    /// Text added to the model: its words count against the book's limit, and each piece is
    /// an element. A word split between two pieces counts twice; the limits are far enough
    /// from any real book for that not to matter.
    pub fn text(&mut self, text: &str) -> Result<(), InputError> {
        self.words += word_count(text);
        if self.words > self.max_words {
            return Err(InputError::TooManyWords {
                limit: self.max_words,
            });
        }
        self.element()
    }

    /// Any other node of the model: a paragraph, a formatting span, a break, an anchor.
    pub fn element(&mut self) -> Result<(), InputError> {
        self.elements += 1;
        if self.elements > self.max_elements {
            return Err(InputError::TooManyElements {
                limit: self.max_elements,
            });
        }
        Ok(())
    }
}

/// Words as their readers count them ([`crate::document::Words`]).
pub fn word_count(text: &str) -> u64 {
    crate::document::Words::of(text).words
}

/// Refuses a book of more chapters than the limit, and a chapter longer than its limit,
/// naming it so the author knows where to cut.
pub fn check_chapters(
    chapters: &[crate::document::Chapter],
    limits: &Limits,
) -> Result<(), InputError> {
    let count = chapters.len() as u64;
    if count > limits.max_chapters {
        return Err(InputError::TooManyChapters {
            chapters: count,
            limit: limits.max_chapters,
        });
    }
    for (i, chapter) in chapters.iter().enumerate() {
        let words = word_count(&crate::document::plain_text(&chapter.blocks));
        if words > limits.max_chapter_words {
            return Err(InputError::ChapterTooLong {
                chapter: i + 1,
                title: chapter.title.clone(),
                words,
                limit: limits.max_chapter_words,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Limits {
        Limits {
            max_words: 5,
            max_elements: 4,
            ..Limits::default()
        }
    }

    #[test]
    fn the_meter_stops_at_the_word_limit_not_after() {
        let mut meter = Meter::new(&small());
        meter.text("one two three").unwrap();
        meter.text("four five").unwrap();
        assert_eq!(
            meter.text("six"),
            Err(InputError::TooManyWords { limit: 5 })
        );
    }

    #[test]
    fn the_meter_counts_elements_without_words() {
        let mut meter = Meter::new(&small());
        for _ in 0..4 {
            meter.element().unwrap();
        }
        assert_eq!(
            meter.element(),
            Err(InputError::TooManyElements { limit: 4 })
        );
    }

    #[test]
    fn default_limits_fit_the_longest_real_books() {
        // Proust's In Search of Lost Time is about 1.3 million words; Artamène, among the
        // longest novels printed, about 2.1 million.
        let limits = Limits::default();
        assert!(limits.max_words >= 2_100_000);
        assert!(limits.max_chapter_words >= 200_000);
    }
}

#[cfg(test)]
mod readers {
    use crate::manuscript::{Format, InputError, Limits, ReadOptions, read};

    fn read_with(text: &str, format: Format, limits: Limits) -> Result<(), InputError> {
        read(
            text.as_bytes(),
            &ReadOptions {
                format: Some(format),
                file_name: None,
                limits,
            },
        )
        .map(|_| ())
    }

    #[test]
    fn markdown_formatting_counts_against_the_element_limit() {
        let text = "*a* ".repeat(20_000);
        let limits = Limits {
            max_elements: 10_000,
            ..Limits::default()
        };
        assert_eq!(
            read_with(&text, Format::Markdown, limits),
            Err(InputError::TooManyElements { limit: 10_000 })
        );
        assert_eq!(
            read_with(&text, Format::Markdown, Limits::default()),
            Ok(())
        );
    }

    #[test]
    fn every_format_stops_at_the_word_limit() {
        let text = "word ".repeat(10_001);
        let limits = Limits {
            max_words: 10_000,
            ..Limits::default()
        };
        for format in [Format::Markdown, Format::Text] {
            assert_eq!(
                read_with(&text, format, limits),
                Err(InputError::TooManyWords { limit: 10_000 }),
                "{format:?}"
            );
        }
    }

    #[test]
    fn a_chapter_over_the_limit_is_named() {
        let text = format!(
            "# Short\n\n{}\n\n# The Long One\n\n{}\n",
            "word ".repeat(10),
            "word ".repeat(200)
        );
        let limits = Limits {
            max_chapter_words: 100,
            ..Limits::default()
        };
        let error = read_with(&text, Format::Markdown, limits).expect_err("refused");
        assert!(
            matches!(error, InputError::ChapterTooLong { chapter: 2, .. }),
            "{error:?}"
        );
        assert!(error.to_string().contains("The Long One"), "{error}");
        assert_eq!(error.code(), "too_large");
    }

    #[test]
    fn a_book_of_more_chapters_than_the_limit_is_refused_with_what_to_do() {
        let chapters: String = (1..=11)
            .map(|i| format!("# Chapter {i}\n\nWords.\n\n"))
            .collect();
        let limits = Limits {
            max_chapters: 10,
            ..Limits::default()
        };
        let error = read_with(&chapters, Format::Markdown, limits).expect_err("refused");
        assert_eq!(
            error,
            InputError::TooManyChapters {
                chapters: 11,
                limit: 10
            }
        );
        assert!(
            error.to_string().contains("Split it into volumes"),
            "{error}"
        );
        assert_eq!(error.code(), "too_large");
        let ten: String = (1..=10)
            .map(|i| format!("# Chapter {i}\n\nWords.\n\n"))
            .collect();
        assert!(read_with(&ten, Format::Markdown, limits).is_ok());
    }
}
