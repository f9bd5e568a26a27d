use super::*;
use crate::document::positions::text_blocks;
use crate::document::{Align, Block, Chapter, Inline, inline_text};
use crate::ebook::xhtml::fixture;

#[test]
fn every_block_and_inline_of_the_model_prints() {
    let book = fixture::book();
    let edition = typeset(
        &book.document,
        &fixture::resources(),
        &book.metadata,
        &PrintOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(edition.pdf.starts_with(b"%PDF-"));
    assert_eq!(edition.folios.len(), edition.pages as usize);
    // Front matter in roman, the body from 1.
    assert_eq!(edition.folios[0], "i");
    assert!(edition.folios.contains(&"1".to_owned()));
    // Each page start is a real place in the chapter's text, in book order.
    assert!(!edition.page_starts.is_empty());
    for start in &edition.page_starts {
        let chapter = &book.document.chapters[start.at.chapter];
        let text = inline_text(text_blocks(chapter)[start.at.block]);
        assert!(
            start.at.offset < text.len() && text.is_char_boundary(start.at.offset),
            "{start:?} in {text:?}"
        );
    }
    assert!(edition.page_starts.windows(2).all(|w| w[0].at < w[1].at));
    // The 20-pixel photo scaled to the text block is far below 300 dpi.
    assert!(
        edition
            .warnings
            .iter()
            .any(|w| w.code == "print_image_low_resolution" && w.message.contains("photo.jpg")),
        "{:?}",
        edition.warnings
    );
}

fn chapter(title: &str, text: &str) -> Chapter {
    Chapter {
        title: title.to_owned(),
        blocks: vec![
            Block::Heading {
                level: 1,
                id: None,
                content: vec![Inline::Text(title.to_owned())],
            },
            Block::Paragraph {
                align: Align::Default,
                content: vec![Inline::Text(text.to_owned())],
            },
        ],
        ..Default::default()
    }
}

#[test]
fn a_book_over_828_pages_is_refused() {
    // Each chapter opens on a recto, so 420 short ones take 840 pages.
    let document = Document {
        chapters: (1..=420)
            .map(|n| chapter(&n.to_string(), "A line."))
            .collect(),
        ..Default::default()
    };
    let metadata = fixture::metadata();
    let e = typeset(
        &document,
        &BTreeMap::new(),
        &metadata,
        &PrintOptions::default(),
    )
    .expect_err("too long");
    assert_eq!(e.code(), "print_too_long");
    assert!(e.to_string().contains("828"), "{e}");
}

#[test]
fn a_book_longer_than_any_paperback_is_refused_before_layout() {
    let words = "word ".repeat(500_000);
    let document = Document {
        chapters: vec![chapter("One", &words)],
        ..Default::default()
    };
    let e = typeset(
        &document,
        &BTreeMap::new(),
        &fixture::metadata(),
        &PrintOptions::default(),
    )
    .expect_err("too many words");
    assert_eq!(e.code(), "print_too_many_words");
    assert!(e.to_string().contains("500001 words"), "{e}");
}
