//! Plain text of the model: for word counts, search, and the tests that check no text is lost.

use super::{Block, Document, Inline};

/// The text of a block list, one line per paragraph-like block.
pub fn plain_text(blocks: &[Block]) -> String {
    let mut out = String::new();
    for block in blocks {
        push_block(&mut out, block);
    }
    out
}

/// Words of the whole book: chapters and notes, counted as [`Words`] counts them.
pub fn word_count(document: &Document) -> u64 {
    words_of(document).words
}

/// The words of the whole book, and how many of them are Chinese or Japanese characters.
pub fn words_of(document: &Document) -> Words {
    let mut words = Words::default();
    let mut buf = String::new();
    let mut count = |blocks: &[Block]| {
        buf.clear();
        for block in blocks {
            push_block(&mut buf, block);
        }
        words.add(&buf);
    };
    for chapter in &document.chapters {
        count(&chapter.blocks);
    }
    for note in &document.notes {
        count(&note.blocks);
    }
    words
}

/// Words as their readers count them. Text between spaces is a word, as in most scripts
/// (Korean too, which spaces its words); Chinese and Japanese do not space words, and their
/// readers (and word processors) count each character of Han, hiragana or katakana as one, and
/// the run of other letters beside them as another, the punctuation among them as none. Thai,
/// Lao, Khmer and Myanmar space phrases, not words: their words are found by ICU's word
/// segmenter, as word processors find them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Words {
    pub words: u64,
    /// Of `words`, the Chinese and Japanese characters.
    pub ideographs: u64,
}

impl Words {
    /// The words of `text`.
    pub fn of(text: &str) -> Words {
        let mut words = Words::default();
        words.add(text);
        words
    }

    fn add(&mut self, text: &str) {
        for token in text.split_whitespace() {
            // Below U+0800 (one and two bytes of UTF-8: Latin, Greek, Cyrillic, Hebrew,
            // Arabic…) every script spaces its words: a token is one word, read without
            // decoding it. Words are counted as a book is read and again when it is made, so
            // this is most of the time it takes.
            if token.bytes().all(|b| b < 0xE0) {
                self.words += 1;
                continue;
            }
            let (mut unspaced, mut ideographs) = (false, false);
            for c in token.chars().filter(|&c| u32::from(c) >= 0x0E00) {
                unspaced |= is_unspaced(c);
                ideographs |= is_ideograph(c);
            }
            if unspaced {
                self.words += unspaced_words(token);
                continue;
            }
            if !ideographs {
                self.words += 1;
                continue;
            }
            // Each ideograph, and each run of other characters beside them that holds a letter
            // or a digit (`Tokyo` in `東京はTokyo`); punctuation (`。`, `「`) is none.
            let mut run_counts = false;
            for c in token.chars() {
                if is_ideograph(c) {
                    self.words += 1 + u64::from(run_counts);
                    self.ideographs += 1;
                    run_counts = false;
                } else {
                    run_counts |= c.is_alphanumeric();
                }
            }
            self.words += u64::from(run_counts);
        }
    }
}

/// Thai, Lao, Myanmar (and its extensions) and Khmer (and its symbols): scripts written without
/// spaces between words.
fn is_unspaced(c: char) -> bool {
    matches!(u32::from(c),
        0x0E00..=0x0EFF | 0x1000..=0x109F | 0xA9E0..=0xA9FF | 0xAA60..=0xAA7F
        | 0x1780..=0x17FF | 0x19E0..=0x19FF)
}

/// The words of a run of unspaced text (with whatever else it holds): the segments ICU's LSTM
/// word segmenter finds that hold letters or digits.
fn unspaced_words(token: &str) -> u64 {
    static SEGMENTER: std::sync::LazyLock<icu_segmenter::WordSegmenter> =
        std::sync::LazyLock::new(icu_segmenter::WordSegmenter::new_lstm);
    let mut segments = SEGMENTER.segment_str(token);
    let mut words = 0;
    while segments.next().is_some() {
        words += u64::from(segments.is_word_like());
    }
    words
}

/// Han (the unified ideographs, their extensions and compatibility forms), hiragana and
/// katakana (half-width too).
fn is_ideograph(c: char) -> bool {
    matches!(u32::from(c),
        0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x3134F
        | 0x3041..=0x309F | 0x30A0..=0x30FF | 0x31F0..=0x31FF | 0xFF66..=0xFF9D)
}

fn push_block(out: &mut String, block: &Block) {
    match block {
        Block::Heading { content, .. } | Block::Paragraph { content, .. } => {
            push_inlines(out, content);
            out.push('\n');
        }
        Block::BlockQuote(blocks) => blocks.iter().for_each(|b| push_block(out, b)),
        Block::List { items, .. } => items.iter().flatten().for_each(|b| push_block(out, b)),
        Block::DefinitionList(items) => {
            for item in items {
                push_inlines(out, &item.term);
                out.push('\n');
                item.definitions
                    .iter()
                    .flatten()
                    .for_each(|b| push_block(out, b));
            }
        }
        Block::CodeBlock { text, .. } => {
            out.push_str(text);
            out.push('\n');
        }
        Block::Table(table) => {
            push_inlines(out, &table.caption);
            out.push('\n');
            for row in table.head.iter().chain(&table.body) {
                for cell in &row.cells {
                    cell.blocks.iter().for_each(|b| push_block(out, b));
                }
            }
        }
        Block::Figure { caption, .. } => {
            push_inlines(out, caption);
            out.push('\n');
        }
        Block::SceneBreak | Block::PageBreak => {}
    }
}

/// Appends the text of `inlines` (alt text of images is not text of the book).
pub fn push_inlines(out: &mut String, inlines: &[Inline]) {
    for inline in inlines {
        match inline {
            Inline::Text(t) | Inline::Code(t) => out.push_str(t),
            Inline::LineBreak => out.push('\n'),
            Inline::Math(math) => out.push_str(&math.text()),
            container => {
                if let Some(children) = container.children() {
                    push_inlines(out, children);
                }
            }
        }
    }
}

/// The plain text of some inlines.
pub fn inline_text(inlines: &[Inline]) -> String {
    let mut out = String::new();
    push_inlines(&mut out, inlines);
    out
}

#[cfg(test)]
mod words_tests {
    use super::Words;

    #[test]
    fn chinese_and_japanese_count_characters_and_other_scripts_count_spaced_words() {
        assert_eq!(Words::of("A gentleman called, sir.").words, 4);
        // Korean spaces its words.
        assert_eq!(Words::of("그는 차를 마셨다.").words, 3);
        let chinese = Words::of("山城下了整整一个星期的雨。");
        assert_eq!((chinese.words, chinese.ideographs), (12, 12));
        // Kana and kanji each count; the Latin run beside them is one more; punctuation none.
        let japanese = Words::of("「東京タワー」はTokyo Towerです。");
        assert_eq!((japanese.words, japanese.ideographs), (10, 8));
        assert_eq!(Words::of("東京。、「」——").words, 2);
        assert_eq!(Words::of("Dear Bill — yours").words, 4, "as before");
    }

    #[test]
    fn thai_lao_khmer_and_myanmar_count_words_not_the_phrases_between_spaces() {
        // "Every two weeks": three words, no space between them.
        assert_eq!(Words::of("ทุกสองสัปดาห์").words, 3);
        // Two phrases of several words each; the full stop is no word.
        let thai = Words::of("ฉันรักภาษาไทย เธอชอบกินข้าว.");
        assert!(thai.words >= 6, "{thai:?}");
        for (language, text) in [
            ("Lao", "ພາສາລາວເປັນພາສາທີ່ສວຍງາມ"),
            ("Khmer", "ខ្ញុំចូលចិត្តភាសាខ្មែរណាស់"),
            ("Myanmar", "မြန်မာဘာသာစကားသည်လှပသည်"),
        ] {
            let words = Words::of(text).words;
            assert!(words >= 3, "{language}: {words} words in {text}");
        }
        assert_eq!(Words::of("ทุกสองสัปดาห์ and Bangkok").words, 5);
    }
}
