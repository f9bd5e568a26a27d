//! A book built by hand that uses every block, inline and division of the model, for the
//! writers' tests.

use std::collections::BTreeMap;
use std::io::Cursor;

use crate::document::{
    Align, Block, Cell, Chapter, Definition, Division, Document, Image, Inline, LinkTarget,
    ListKind, Note, NoteKind, Row, Table,
};
use crate::ebook::{Book, BookMetadata};

pub fn t(s: &str) -> Inline {
    Inline::Text(s.to_owned())
}

pub fn p(inlines: Vec<Inline>) -> Block {
    Block::Paragraph {
        align: Align::Default,
        content: inlines,
    }
}

pub fn h(level: u8, id: Option<&str>, text: &str) -> Block {
    Block::Heading {
        level,
        id: id.map(str::to_owned),
        content: vec![t(text)],
    }
}

fn chapter(title: &str, division: Division, blocks: Vec<Block>) -> Chapter {
    let mut all = Vec::new();
    if !title.is_empty() {
        all.push(h(1, None, title));
    }
    all.extend(blocks);
    Chapter {
        title: title.to_owned(),
        division,
        blocks: all,
    }
}

pub fn metadata() -> BookMetadata {
    BookMetadata {
        title: "Love & <Chickens>".into(),
        subtitle: Some("A Farce in \"Three\" Parts".into()),
        authors: vec!["P. G. Wodehouse".into(), "A. N. Other".into()],
        language: "en".into(),
        identifier: "urn:isbn:9780306406157".into(),
        isbn: Some("9780306406157".into()),
        publisher: Some("Herbert Jenkins".into()),
        date: Some("1906".into()),
        description: Some("Ukridge farms chickens; it goes badly.".into()),
        subjects: vec!["Fiction".into(), "Humor".into()],
        series: Some("Ukridge".into()),
        series_number: Some("1".into()),
        rights: Some("Public domain in the USA.".into()),
        modified: "2024-05-01T12:00:00Z".into(),
        revision: None,
        blurb: None,
        trim: Default::default(),
        paper: Default::default(),
        bleed: false,
        print_isbn: None,
        price: Default::default(),
        printer: Default::default(),
        editions: Default::default(),
        hardcover_isbn: None,
        hardcover_trim: None,
        large_print_isbn: None,
        large_print_trim: None,
        large_print_size: Default::default(),
        reference_edition: None,
        print_settings_refused: None,
        labels: Default::default(),
        style: "bindery".to_owned().try_into().unwrap(),
    }
}

fn cell(text: &str) -> Cell {
    Cell::new(vec![p(vec![t(text)])])
}

fn everything() -> Vec<Block> {
    let inline_kinds = vec![
        t("Plain, "),
        Inline::Emphasis(vec![t("emphasis")]),
        t(" "),
        Inline::Strong(vec![t("strong")]),
        t(" "),
        Inline::Underline(vec![t("underlined")]),
        t(" "),
        Inline::Strikethrough(vec![t("struck")]),
        t(" E=mc"),
        Inline::Superscript(vec![t("2")]),
        t(" H"),
        Inline::Subscript(vec![t("2")]),
        t("O "),
        Inline::SmallCaps(vec![t("Small Caps")]),
        t(" "),
        Inline::Code("let x = 1 < 2;".into()),
        Inline::LineBreak,
        t("after a break "),
        Inline::Image {
            image: "dot.png".into(),
            alt: "a red dot".into(),
        },
        Inline::Anchor("here".into()),
        t(" and "),
        Inline::Lang {
            lang: "fr".into(),
            content: vec![t("joie de vivre")],
        },
        t(" and "),
        Inline::Lang {
            lang: "not a tag!".into(),
            content: vec![t("gibberish")],
        },
        t("."),
        Inline::NoteRef("n1".into()),
    ];
    let links = vec![
        t("See "),
        Inline::Link {
            target: LinkTarget::Internal("later".into()),
            content: vec![t("the later anchor")],
        },
        t(", "),
        Inline::Link {
            target: LinkTarget::Internal("nowhere".into()),
            content: vec![t("a lost target")],
        },
        t(", "),
        Inline::Link {
            target: LinkTarget::External("https://example.com/a b?q=1&r=2".into()),
            content: vec![t("the web"), Inline::NoteRef("n2".into())],
        },
        t(", "),
        Inline::Link {
            target: LinkTarget::External("javascript:alert(1)".into()),
            content: vec![t("a trap")],
        },
        t(" and "),
        Inline::Link {
            target: LinkTarget::External("mailto:ukridge@example.com".into()),
            content: vec![t("mail")],
        },
        t(" and "),
        Inline::Link {
            target: LinkTarget::Internal("sub".into()),
            content: vec![t("a heading")],
        },
        t("."),
    ];
    vec![
        p(inline_kinds),
        p(links),
        Block::Paragraph {
            align: Align::Center,
            content: vec![t("Centred text.")],
        },
        h(2, Some("sub"), "A Subheading"),
        p(vec![
            t("Under the subheading."),
            Inline::NoteRef("n1".into()),
        ]),
        h(5, None, "A Skipped Level"),
        Block::BlockQuote(vec![
            p(vec![t("Quoted wisdom.")]),
            p(vec![t("More of it.")]),
        ]),
        Block::List {
            kind: ListKind::Bullet,
            start: 1,
            items: vec![
                vec![p(vec![t("bullet one")])],
                vec![p(vec![t("bullet two")])],
            ],
        },
        Block::List {
            kind: ListKind::Decimal,
            start: 3,
            items: vec![
                vec![p(vec![t("third")])],
                vec![
                    p(vec![t("fourth")]),
                    Block::List {
                        kind: ListKind::LowerRoman,
                        start: 1,
                        items: vec![vec![p(vec![t("nested roman")])]],
                    },
                ],
            ],
        },
        Block::List {
            kind: ListKind::UpperAlpha,
            start: 2,
            items: vec![vec![p(vec![t("bee")])]],
        },
        Block::List {
            kind: ListKind::LowerAlpha,
            start: 1,
            items: vec![vec![p(vec![t("ay")])]],
        },
        Block::List {
            kind: ListKind::UpperRoman,
            start: 4,
            items: vec![vec![p(vec![t("four")])]],
        },
        Block::DefinitionList(vec![
            Definition {
                term: vec![t("Orpington")],
                definitions: vec![vec![p(vec![t("A breed of chicken.")])]],
            },
            Definition {
                term: vec![t("Undefined")],
                definitions: vec![],
            },
        ]),
        Block::CodeBlock {
            language: Some("rust\"><script>".into()),
            text: "fn main() {\n    println!(\"<hi> & bye\");\n}".into(),
        },
        Block::Table(Table {
            caption: vec![t("Eggs per week")],
            head: vec![Row {
                cells: vec![cell("Hen"), cell("Mon"), cell("Tue")],
            }],
            body: vec![
                Row {
                    cells: vec![
                        Cell {
                            header: true,
                            rowspan: 2,
                            ..cell("Bertha")
                        },
                        Cell {
                            colspan: 2,
                            align: Align::Center,
                            ..cell("none at all")
                        },
                    ],
                },
                Row {
                    cells: vec![cell("1"), cell("2")],
                },
                Row { cells: vec![] },
            ],
        }),
        Block::Figure {
            image: "photo.jpg".into(),
            alt: "A hen on a fence".into(),
            caption: vec![t("Figure 1: "), Inline::Emphasis(vec![t("the hen")])],
        },
        Block::SceneBreak,
        p(vec![t("After the scene break.")]),
        p(vec![t("A second paragraph, indented.")]),
        Block::Figure {
            image: "dot.png".into(),
            alt: String::new(),
            caption: vec![],
        },
        Block::Figure {
            image: "ghost.png".into(),
            alt: "gone".into(),
            caption: vec![t("The caption of a missing picture.")],
        },
        Block::PageBreak,
        p(vec![t("After the page break.")]),
        p(vec![]),
        h(2, None, ""),
    ]
}

/// A book with every block, inline and division, notes (referenced, referenced twice, from
/// inside a link, from inside a note, and never), and links across chapters.
pub fn book() -> Book {
    use Division::*;
    let para = |s: &str| p(vec![t(s)]);
    let chapters = vec![
        chapter("Dedication", Dedication, vec![para("To my hens.")]),
        chapter("", Epigraph, vec![para("Cluck, said the hen.")]),
        chapter("Foreword", Foreword, vec![para("A foreword.")]),
        chapter("Preface", Preface, vec![para("A preface.")]),
        chapter("Introduction", Introduction, vec![para("An introduction.")]),
        chapter("Prologue", Prologue, vec![para("A prologue.")]),
        chapter("Part One", Part, vec![]),
        chapter("Chapter One: Everything", Chapter, everything()),
        chapter(
            "",
            Chapter,
            vec![p(vec![
                t("An untitled chapter with the "),
                Inline::Anchor("later".into()),
                t("later anchor"),
                Inline::NoteRef("n3".into()),
                t(" and a "),
                Inline::Link {
                    target: LinkTarget::Internal("n1".into()),
                    content: vec![t("link to a note")],
                },
                t(" and "),
                Inline::Link {
                    target: LinkTarget::Internal("here".into()),
                    content: vec![t("back")],
                },
                t("."),
            ])],
        ),
        chapter("Epilogue", Epilogue, vec![para("An epilogue.")]),
        chapter("Afterword", Afterword, vec![para("An afterword.")]),
        chapter("Acknowledgments", Acknowledgments, vec![para("Thanks.")]),
        chapter("Appendix A", Appendix, vec![para("An appendix.")]),
        chapter(
            "Glossary",
            Glossary,
            vec![Block::DefinitionList(vec![Definition {
                term: vec![t("Hen")],
                definitions: vec![vec![para("A chicken.")]],
            }])],
        ),
        chapter(
            "Bibliography",
            Bibliography,
            vec![para("Wodehouse, P. G. (1906).")],
        ),
        chapter("Notes", Endnotes, vec![para("Notes follow.")]),
    ];
    let note = |id: &str, blocks: Vec<Block>| Note {
        id: id.into(),
        kind: NoteKind::Footnote,
        blocks,
    };
    let notes = vec![
        note(
            "n1",
            vec![
                p(vec![
                    t("The first note"),
                    Inline::NoteRef("n4".into()),
                    t("."),
                ]),
                para("Its second paragraph."),
            ],
        ),
        note("n2", vec![para("Referenced from inside a link.")]),
        note(
            "n3",
            vec![Block::BlockQuote(vec![para(
                "A note that starts with a quote.",
            )])],
        ),
        note("n4", vec![para("A note referenced from a note.")]),
        Note {
            id: "orphan".into(),
            kind: NoteKind::Endnote,
            blocks: vec![para("A note nothing references.")],
        },
        note("n1", vec![para("A note whose id is taken.")]),
    ];
    let image = |id: &str, media_type: &str| Image {
        id: id.into(),
        media_type: media_type.into(),
        width: 20,
        height: 10,
    };
    Book {
        metadata: metadata(),
        document: Document {
            metadata: Default::default(),
            chapters,
            notes,
            images: vec![
                image("dot.png", "image/png"),
                image("photo.jpg", "image/jpeg"),
            ],
        },
        cover: None,
        print: None,
        style: Default::default(),
        style_files: Vec::new(),
    }
}

/// Bytes of the fixture's images.
pub fn resources() -> BTreeMap<String, Vec<u8>> {
    let picture = image::RgbImage::from_fn(20, 10, |x, y| {
        image::Rgb([(x * 12) as u8, (y * 25) as u8, 90])
    });
    let mut png = Vec::new();
    let mut jpeg = Vec::new();
    let dynamic = image::DynamicImage::ImageRgb8(picture);
    dynamic
        .write_to(&mut Cursor::new(&mut png), image::ImageFormat::Png)
        .expect("test setup");
    dynamic
        .write_to(&mut Cursor::new(&mut jpeg), image::ImageFormat::Jpeg)
        .expect("test setup");
    BTreeMap::from([("dot.png".to_owned(), png), ("photo.jpg".to_owned(), jpeg)])
}

/// Panics unless `xml` is a well-formed XML document.
pub fn assert_well_formed(xml: &str) {
    let mut reader = quick_xml::Reader::from_str(xml);
    reader.config_mut().check_end_names = true;
    let mut depth = 0i32;
    loop {
        match reader.read_event() {
            Ok(quick_xml::events::Event::Start(_)) => depth += 1,
            Ok(quick_xml::events::Event::End(_)) => depth -= 1,
            Ok(quick_xml::events::Event::Eof) => break,
            Ok(_) => {}
            Err(e) => panic!("not well-formed: {e}\n{xml}"),
        }
    }
    assert_eq!(depth, 0, "unclosed elements in\n{xml}");
}
