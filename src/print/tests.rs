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
        &Default::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(edition.pdf.starts_with(b"%PDF-"));
    assert_eq!(edition.folios.len(), edition.pages as usize);
    // The copyright page, the title page's verso (half title, blank, title, copyright), is
    // named where the catalog lists destinations.
    let pdf = lopdf::Document::load_mem(&edition.pdf).expect("the interior reads");
    let names = pdf
        .catalog()
        .and_then(|c| c.get_deref(b"Names", &pdf))
        .and_then(lopdf::Object::as_dict)
        .and_then(|n| n.get_deref(b"Dests", &pdf))
        .and_then(lopdf::Object::as_dict)
        .and_then(|d| d.get(b"Names"))
        .and_then(lopdf::Object::as_array)
        .expect("a tree of destinations");
    let name = names.first().and_then(|n| n.as_str().ok());
    assert_eq!(name, Some(COPYRIGHT_DESTINATION.as_bytes()));
    let page = names
        .get(1)
        .and_then(|d| d.as_array().ok())
        .and_then(|d| d.first())
        .and_then(|p| p.as_reference().ok());
    assert_eq!(page, pdf.get_pages().get(&4).copied());
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
        &Default::default(),
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
        &Default::default(),
    )
    .expect_err("too many words");
    assert_eq!(e.code(), "print_too_many_words");
    assert!(e.to_string().contains("500001 words"), "{e}");
}

/// Quotes, lists and a mix of them, each nested as deep as the readers let the model go
/// (40): the print edition sets them, what is deeper than it indents at its deepest, and
/// says so once (issue #40: 39 levels of quotes failed the print edition with Typst's
/// "maximum show rule depth exceeded", quoting the generated source).
#[test]
fn nesting_as_deep_as_the_model_holds_prints_and_says_it_was_flattened() {
    fn paragraph(text: &str) -> Block {
        Block::Paragraph {
            align: Align::Default,
            content: vec![Inline::Text(text.to_owned())],
        }
    }
    let mut quotes = paragraph("The innermost quote.");
    let mut lists = paragraph("The innermost item.");
    let mut mixed = paragraph("The innermost of both.");
    for depth in 0..40 {
        quotes = Block::BlockQuote(vec![paragraph(&format!("Quote {depth}.")), quotes]);
        lists = Block::List {
            kind: crate::document::ListKind::Bullet,
            start: 1,
            items: vec![vec![paragraph(&format!("Item {depth}.")), lists]],
        };
        mixed = if depth % 2 == 0 {
            Block::BlockQuote(vec![mixed])
        } else {
            Block::List {
                kind: crate::document::ListKind::Decimal,
                start: 1,
                items: vec![vec![mixed]],
            }
        };
    }
    let mut deep = chapter("Deep", "Nested below.");
    deep.blocks.extend([quotes, lists, mixed]);
    let document = Document {
        chapters: vec![deep],
        ..Default::default()
    };
    let edition = typeset(
        &document,
        &BTreeMap::new(),
        &fixture::metadata(),
        &PrintOptions::default(),
        &Default::default(),
    )
    .unwrap_or_else(|e| panic!("{e}: {:?}", e.detail()));
    let flattened: Vec<&str> = edition
        .warnings
        .iter()
        .filter(|w| w.code == "print_nesting_flattened")
        .map(|w| w.message.as_str())
        .collect();
    assert_eq!(flattened.len(), 1, "{:?}", edition.warnings);
    assert!(flattened[0].contains("8"), "{flattened:?}");
    // Every text block of the chapter is still where the page starts say.
    let text = text_blocks(&document.chapters[0]);
    for start in &edition.page_starts {
        assert!(start.at.block < text.len(), "{start:?}");
    }
}

/// What Typst says of source it refuses quotes the generated source: the operator's, never
/// the author's message.
#[test]
fn a_typesetting_failure_tells_the_author_no_generated_source() {
    let e = PrintError::Typeset("unknown variable (at `#bindery-quote[#par[#\"x\"]]`)".into());
    let said = e.to_string();
    assert!(
        !said.contains('#') && !said.contains("bindery-quote"),
        "{said}"
    );
    assert!(said.contains("operator"), "{said}");
    assert_eq!(
        e.detail(),
        Some("unknown variable (at `#bindery-quote[#par[#\"x\"]]`)")
    );
}

/// A book of `chapters` chapters of about 3,000 words each, each with letters, a footnote and
/// an italic word of its own, so that every piece prints glyphs the others do not.
fn long_book(chapters: usize) -> Document {
    let accents = ["é", "ß", "Æ", "ø", "ñ", "ç", "ğ", "ł"];
    let mut notes = Vec::new();
    let chapters = (0..chapters)
        .map(|c| {
            let mut blocks = vec![Block::Heading {
                level: 1,
                id: None,
                content: vec![Inline::Text(format!("Chapter {}", c + 1))],
            }];
            for p in 0..60 {
                let words: String = (0..50)
                    .map(|w| match (p * 50 + w) % 7 {
                        0 => format!("{}word", accents[c % accents.len()]),
                        3 => "the".to_owned(),
                        _ => format!("text{}", (p + w) % 13),
                    })
                    .collect::<Vec<_>>()
                    .join(" ");
                let mut content = vec![
                    Inline::Text(format!("{words} ")),
                    Inline::Emphasis(vec![Inline::Text(format!("italic{c}"))]),
                    Inline::Text(".".to_owned()),
                ];
                if p == 3 {
                    let id = format!("n{c}");
                    content.push(Inline::NoteRef(id.clone()));
                    notes.push(crate::document::Note {
                        id,
                        kind: crate::document::NoteKind::Footnote,
                        blocks: vec![Block::Paragraph {
                            align: Align::Default,
                            content: vec![Inline::Text(format!("A note of chapter {}.", c + 1))],
                        }],
                    });
                }
                blocks.push(Block::Paragraph {
                    align: Align::Default,
                    content,
                });
            }
            Chapter {
                title: format!("Chapter {}", c + 1),
                blocks,
                ..Default::default()
            }
        })
        .collect();
    Document {
        chapters,
        notes,
        ..Default::default()
    }
}

/// The print edition is the same bytes whatever order its pieces are measured and set in,
/// embeds each face once however many pieces it was typeset in, and is within a quarter of
/// the size of the same book typeset as one piece, with the same pages.
#[test]
fn pieces_in_any_order_make_the_same_book_with_each_face_once() {
    let document = long_book(8);
    let metadata = fixture::metadata();
    let options = PrintOptions::default();
    let resources = BTreeMap::new();
    let style = crate::style::Style::default();
    let book = Book {
        document: &document,
        resources: &resources,
        metadata: &metadata,
        options: &options,
        style: &style,
    };
    let edition = typeset(&document, &resources, &metadata, &options, &style).expect("typeset");
    assert!(edition.pieces >= 3, "{} pieces", edition.pieces);

    // By hand, last piece first.
    let plan = pieces::plan(book).expect("plan");
    let backwards: Vec<usize> = (0..plan.pieces()).rev().collect();
    let mut gutter = plan.gutter;
    let mut round = 1;
    let layout = loop {
        let mut measured: Vec<Option<Measured>> = vec![None; plan.pieces()];
        for &k in &backwards {
            measured[k] = Some(pieces::measure(book, &plan, k, gutter).expect("measure"));
        }
        let measured: Vec<Measured> = measured.into_iter().map(Option::unwrap).collect();
        match pieces::paginate(&plan, &measured, round).expect("paginate") {
            Paginated::Again { gutter: wanted } => {
                gutter = wanted;
                round += 1;
            }
            Paginated::Settled(layout) => break layout,
        }
    };
    let mut set: Vec<Option<SetPiece>> = vec![None; plan.pieces()];
    for &k in &backwards {
        set[k] = Some(pieces::set(book, &plan, &layout, k, None).expect("set"));
    }
    let (pdfs, infos): (Vec<Vec<u8>>, Vec<SetInfo>) = set
        .into_iter()
        .map(|s| {
            let s = s.expect("set");
            (s.pdf, s.info)
        })
        .unzip();
    let by_hand = assemble(book, &plan, &layout, &pdfs, infos).expect("assemble");
    assert!(by_hand.pdf == edition.pdf, "the order changed the bytes");

    // Each face once.
    let pdf = lopdf::Document::load_mem(&edition.pdf).expect("a PDF");
    let mut faces: Vec<String> = pdf
        .objects
        .values()
        .filter_map(|o| o.as_dict().ok())
        .filter(|d| d.get(b"Type").and_then(lopdf::Object::as_name).ok() == Some(b"FontDescriptor"))
        .filter_map(|d| d.get(b"FontName").and_then(lopdf::Object::as_name).ok())
        .map(|n| {
            String::from_utf8_lossy(n)
                .split_once('+')
                .map(|(_, f)| f.to_owned())
                .unwrap_or_default()
        })
        .collect();
    let all = faces.len();
    faces.sort();
    faces.dedup();
    assert_eq!(all, faces.len(), "a face embedded twice: {faces:?}");
    assert!(faces.iter().any(|f| f.contains("Italic")), "{faces:?}");

    // One piece of everything: the same pages, and a file not a quarter smaller.
    let whole = pieces::plan_with(book, u64::MAX).expect("plan");
    assert_eq!(whole.pieces(), 2, "the front matter and the rest");
    let measured: Vec<Measured> = (0..2)
        .map(|k| pieces::measure(book, &whole, k, layout.gutter).expect("measure"))
        .collect();
    let Paginated::Settled(one) = pieces::paginate(&whole, &measured, 2).expect("paginate") else {
        panic!("the gutter moved");
    };
    let set: Vec<SetPiece> = (0..2)
        .map(|k| pieces::set(book, &whole, &one, k, None).expect("set"))
        .collect();
    let (pdfs, infos): (Vec<Vec<u8>>, Vec<SetInfo>) =
        set.into_iter().map(|s| (s.pdf, s.info)).unzip();
    let single = assemble(book, &whole, &one, &pdfs, infos).expect("assemble");
    assert_eq!(single.folios, edition.folios);
    assert_eq!(single.page_starts, edition.page_starts);
    let ratio = edition.pdf.len() as f64 / single.pdf.len() as f64;
    assert!(
        ratio <= 1.25,
        "{} pieces make a file {ratio:.2} times one piece's",
        edition.pieces
    );
}

/// The first measure's gutter is a guess at the page count; a guess on the wrong side of a
/// gutter step costs a second measure of the whole book. It is calibrated on the corpus novel
/// (153 pages at 51k words, 319 at 107k in the default style) and follows the style's type: a
/// large-print book takes about twice the pages.
#[test]
fn the_page_guess_follows_the_corpus_novel_and_the_style_type() {
    let plain = crate::style::Style::default();
    let large = crate::style::builtin::get("large-print").expect("large-print");
    let guess = |words, style| pieces::estimate_pages(words, super::Trim::In6x9, style);
    assert!(
        (150..=156).contains(&guess(50_772, &plain)),
        "{}",
        guess(50_772, &plain)
    );
    assert!(
        (314..=324).contains(&guess(106_607, &plain)),
        "{}",
        guess(106_607, &plain)
    );
    let ratio = f64::from(guess(50_772, &large)) / f64::from(guess(50_772, &plain));
    assert!(
        (1.9..=2.8).contains(&ratio),
        "large print guesses {ratio:.2}× the pages"
    );
}
